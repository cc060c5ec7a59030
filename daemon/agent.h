/* SPDX-License-Identifier: MIT */
/*
 * agent.h - sigild's ssh-agent socket: the OpenSSH agent protocol
 * (draft-miller-ssh-agent / PROTOCOL.agent) for sigil's Ed25519 keys
 *
 * Runs on the loop thread; signatures and key imports go to the worker
 * pool like the main socket's. One request per connection is in progress
 * at a time, so answers leave in request order (docs/ssh-agent.md).
 */
#ifndef SIGIL_DAEMON_AGENT_H
#define SIGIL_DAEMON_AGENT_H

#include "server.h"

typedef struct Agent Agent;

/*
 * agent_listen() - bind @path (mode 0600 in a 0700 directory, a stale
 * socket replaced, a live one refused) and serve the agent protocol with
 * @s's keystore, lock and peer rules. Sets s->agent.
 * Return: 0, SERVER_E_IN_USE, SERVER_E_BAD_PATH or negative errno.
 */
int agent_listen(Server *s, const char *path);
/* stop listening, close every agent connection and lifetime timer */
void agent_close(Agent *a);
/* after the loop ended: unlink the socket, free; NULL is a no-op */
void agent_free(Agent *a);

#endif /* SIGIL_DAEMON_AGENT_H */
