/* SPDX-License-Identifier: MIT */
/*
 * agent.h - the ssh-agent socket's front-end: the OpenSSH agent protocol
 * (draft-miller-ssh-agent / PROTOCOL.agent) on a Stream, translated into
 * operations of the core (docs/ssh-agent.md)
 */
#ifndef SIGIL_DAEMON_AGENT_H
#define SIGIL_DAEMON_AGENT_H

#include "agent-upstream.h"
#include "ops.h"
#include "stream.h"

extern const StreamClass agent_class;

/* the front-end state of a new agent stream (its data), talking to @ops,
 * relaying through @upstream (NULL or no path: none; it outlives the
 * stream). Return: 0 or -ENOMEM */
int agent_stream_init(Stream *s, Ops *ops, AgentUpstreamConfig *upstream);
/* the agent protocol's framing (uint32 length, at most AGENT_MAX_MSG) */
int agent_framer(StreamFramer *fr);

#endif /* SIGIL_DAEMON_AGENT_H */
