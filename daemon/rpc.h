/* SPDX-License-Identifier: MIT */
/*
 * rpc.h - the msgpack-rpc front-end of the main socket (docs/protocol.md):
 * frames -> operations of the core -> answers
 */
#ifndef SIGIL_DAEMON_RPC_H
#define SIGIL_DAEMON_RPC_H

#include "ops.h"
#include "stream.h"

/* the main socket's stream class; a stream's data is the Ops it talks to */
extern const StreamClass rpc_class;

/* a framer for msgpack-rpc frames (ProtoReader) of at most @max_frame bytes */
int rpc_framer(StreamFramer *fr, size_t max_frame);
/* after a reload: the new frame limit for an open stream */
void rpc_set_max_frame(Stream *s, size_t max_frame);

/* an answer with no request behind it (a refused connection): code and
 * message, msgid nil, then close once written */
void rpc_refuse(Stream *s, ProtoError code, const char *message);

#endif /* SIGIL_DAEMON_RPC_H */
