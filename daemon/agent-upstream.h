/* SPDX-License-Identifier: MIT */
/*
 * agent-upstream.h - the transport to another ssh-agent behind sigild's
 * agent socket, for the identities sigil does not hold (RSA, ECDSA, sk-*
 * keys, their certificates, any key of that agent)
 *
 * A transport only: it connects, frames, queues and times out; it decides
 * nothing. What is relayed, for whom, and its audit line are the
 * operations core's (ops.c, OP_AGENT_RELAY); the agent front-end (agent.c)
 * hands it the messages and merges the answers.
 *
 * One connection to the upstream agent per agent connection (session
 * binds are per connection), opened at its first relayed message, on the
 * libuv loop: nothing here blocks. A request waits for the upstream's
 * answer at most the timeout it is sent with (AGENT_UPSTREAM_LIST_MS for
 * listings, the extension query and the copies of lock, unlock,
 * remove-all and session-bind; AGENT_UPSTREAM_OP_MS for signatures, adds
 * and removals: the upstream may ask its user to confirm). An upstream
 * that did not answer in time is left out of every agent connection
 * without an open upstream connection for AGENT_UPSTREAM_RETRY_MS; one
 * that is down (no socket, refused, closed) is tried again at the next
 * message.
 */
#ifndef SIGIL_DAEMON_AGENT_UPSTREAM_H
#define SIGIL_DAEMON_AGENT_UPSTREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#define AGENT_UPSTREAM_LIST_MS 1000
#define AGENT_UPSTREAM_OP_MS 30000
#define AGENT_UPSTREAM_RETRY_MS 30000
#define AGENT_UPSTREAM_PATH_MAX 108 /* sun_path */

typedef struct AgentUpstream AgentUpstream;

/* the upstream of every agent connection (the server's) */
typedef struct AgentUpstreamConfig {
	uv_loop_t *loop;
	char path[AGENT_UPSTREAM_PATH_MAX]; /* the upstream agent's socket; "": none */
	uint64_t down_until;               /* loop time before which no upstream connection is opened */
} AgentUpstreamConfig;

/*
 * the answer to one request: @answer (its message, type byte first, @len
 * bytes; valid during the call) or NULL when there is none (the upstream
 * is down, did not answer in time, sent garbage, or the agent connection
 * closed). Never called from inside agent_upstream_send().
 */
typedef void (*AgentUpstreamDone)(void *ctx, const uint8_t *answer, size_t len);

/* a transport for one agent connection. Return: NULL when out of memory */
AgentUpstream *agent_upstream_new(AgentUpstreamConfig *cfg);

/*
 * agent_upstream_send() - queue the agent message @msg (type byte first,
 * copied; the copy is wiped once written) for the upstream; @what names it
 * in log lines. @done gets its answer later, in request order.
 * Return: 0, or -1 when it is not tried now (the upstream timed out less
 * than AGENT_UPSTREAM_RETRY_MS ago, too many requests wait, out of
 * memory): then @done is never called.
 */
int agent_upstream_send(AgentUpstream *u, const uint8_t *msg, size_t len, uint64_t timeout_ms, const char *what,
                        AgentUpstreamDone done, void *ctx);

/* true if the socket at @path is sigild's own agent socket: the one at
 * @bound, or (@bound NULL: socket activation) the one bound to @listen_fd
 * (sigild would relay to itself, each connection opening another) */
bool agent_upstream_is_self(const char *path, const char *bound, int listen_fd);

/* the agent connection closes: requests still waiting get done(NULL), the
 * upstream connection is closed. NULL is a no-op */
void agent_upstream_free(AgentUpstream *u);

#endif /* SIGIL_DAEMON_AGENT_UPSTREAM_H */
