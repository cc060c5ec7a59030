/* SPDX-License-Identifier: MIT */
/*
 * agent.h - sigild's ssh-agent socket: the OpenSSH agent protocol
 * (draft-miller-ssh-agent / PROTOCOL.agent) for sigil's Ed25519 keys
 *
 * Runs on the loop thread: signatures inline like the main socket's;
 * key imports, and signatures by keys with the confirm constraint, on the
 * worker pool (one at a time per connection). Answers stay in request
 * order and are written by agent_flush_all() after their audit lines
 * (docs/ssh-agent.md).
 */
#ifndef SIGIL_DAEMON_AGENT_H
#define SIGIL_DAEMON_AGENT_H

#include "server.h"

typedef struct Agent Agent;

/*
 * agent_listen() - bind @path (mode 0600 in a 0700 directory checked by
 * listener.c, a stale socket of ours replaced, a live one refused) and
 * serve the agent protocol with @s's keystore, lock and peer rules. Sets
 * s->agent.
 * Return: 0, SERVER_E_IN_USE, SERVER_E_BAD_PATH or negative errno.
 */
int agent_listen(Server *s, const char *path);
/*
 * agent_listen_fd() - serve the agent protocol on @fd, a listening Unix
 * socket (socket activation: listener_activated()); it is closed with the
 * Agent. Sets s->agent.
 * Return: 0 or negative errno.
 */
int agent_listen_fd(Server *s, int fd);
/* write the agent connections' waiting answers (one write each); called by
 * conn_flush_all() after audit_flush(). NULL is a no-op */
void agent_flush_all(Agent *a);
/* stop listening, close every agent connection and lifetime timer */
void agent_close(Agent *a);
/* after the loop ended: unlink the socket, free; NULL is a no-op */
void agent_free(Agent *a);

#endif /* SIGIL_DAEMON_AGENT_H */
