/* SPDX-License-Identifier: MIT */
/*
 * agent-restrict.h - OpenSSH's destination constraints
 * (restrict-destination-v00@openssh.com) and session binds
 * (session-bind@openssh.com): parsing, and the one question they answer,
 * "may this connection use this key here?" (OpenSSH's identity_permitted)
 *
 * Pure code: no libuv, no keystore. The agent front-end records a
 * connection's session binds in an AgentSession; the operations core keeps
 * each key's AgentRestrict with the key and asks these functions.
 */
#ifndef SIGIL_DAEMON_AGENT_RESTRICT_H
#define SIGIL_DAEMON_AGENT_RESTRICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_MAX_BINDS 16 /* session-bind@openssh.com per connection, as OpenSSH */

typedef struct AgentBind {
	uint8_t hostkey[32];
	uint8_t sid[64];
	size_t sid_len;
	bool forwarding;
} AgentBind;

/* what a connection has bound (in order) */
typedef struct AgentSession {
	AgentBind binds[AGENT_MAX_BINDS];
	size_t n_binds;
	bool bind_failed;     /* a session-bind was refused: constrained keys are off */
} AgentSession;

/* one hop of a constraint; host keys as public key blobs (only Ed25519
 * ones can ever match a session bind; certificate authorities never do) */
typedef struct AgentHop {
	char *user;           /* NULL: any user */
	char *host;           /* NULL: the from-hop is this machine */
	uint8_t **keys;
	size_t *key_lens;
	size_t n_keys;
} AgentHop;

typedef struct AgentDest {
	AgentHop from, to;
} AgentDest;

/* the destination constraints of one key */
typedef struct AgentRestrict {
	AgentDest *dests;
	size_t n_dests;
} AgentRestrict;

/* parse the constraint's payload. Return: the constraints, or NULL if
 * malformed (or out of memory) */
AgentRestrict *agent_restrict_parse(const uint8_t *p, size_t n);
/* NULL is a no-op. Return: NULL */
AgentRestrict *agent_restrict_free(AgentRestrict *r);

/**
 * agent_session_bind() - the body of a session-bind@openssh.com request
 * (string hostkey, string session id, string signature, bool forwarding):
 * recorded in @s when the host key's signature over the session id
 * verifies (Ed25519 host keys only) and the bind may follow the earlier
 * ones. Any failure marks the session failed. Variable time (public data).
 * Return: 0 or -1.
 */
int agent_session_bind(AgentSession *s, const uint8_t *p, size_t n);

/* may a key with constraints @r (NULL: none) be listed to @s? */
bool agent_restrict_lists(const AgentSession *s, const AgentRestrict *r);

/**
 * agent_restrict_signs() - may a key (public key @pk) with constraints @r
 * sign @data for session @s? A destination-constrained key signs only a
 * userauth request of the most recently bound session, as a user and to a
 * host its constraints permit (as OpenSSH). Keys without constraints sign
 * anything.
 */
bool agent_restrict_signs(const AgentSession *s, const AgentRestrict *r, const uint8_t pk[32], const uint8_t *data,
                          size_t len);

#endif /* SIGIL_DAEMON_AGENT_RESTRICT_H */
