/* SPDX-License-Identifier: MIT */
/*
 * agent-msg.h - the ssh-agent wire format (draft-miller-ssh-agent, OpenSSH
 * PROTOCOL.agent): bounds-checked readers and a growing writer of SSH
 * strings, and the message numbers sigild's agent socket speaks
 *
 * Pure code with no state: the parser never reads past its input and
 * reports malformed data by setting AgentIn.bad.
 */
#ifndef SIGIL_DAEMON_AGENT_MSG_H
#define SIGIL_DAEMON_AGENT_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AGENT_MAX_MSG (256u * 1024) /* as OpenSSH: larger frames close the connection */

enum {
	AGENT_FAILURE = 5,
	AGENT_SUCCESS = 6,
	AGENTC_REQUEST_IDENTITIES = 11,
	AGENT_IDENTITIES_ANSWER = 12,
	AGENTC_SIGN_REQUEST = 13,
	AGENT_SIGN_RESPONSE = 14,
	AGENTC_ADD_IDENTITY = 17,
	AGENTC_REMOVE_IDENTITY = 18,
	AGENTC_REMOVE_ALL_IDENTITIES = 19,
	AGENTC_LOCK = 22,
	AGENTC_UNLOCK = 23,
	AGENTC_ADD_ID_CONSTRAINED = 25,
	AGENTC_EXTENSION = 27,
	AGENT_EXTENSION_FAILURE = 28,
	AGENT_EXTENSION_RESPONSE = 29,
};

enum {
	AGENT_CONSTRAIN_LIFETIME = 1,
	AGENT_CONSTRAIN_CONFIRM = 2,
	AGENT_CONSTRAIN_EXTENSION = 255,
};

typedef struct AgentIn {
	const uint8_t *p;
	size_t n;
	bool bad; /* a read went past the end or a value was malformed */
} AgentIn;

uint8_t agent_get_u8(AgentIn *in);
uint32_t agent_get_u32(AgentIn *in);
/* an SSH string: points into the input; len 0 and bad set on error */
const uint8_t *agent_get_string(AgentIn *in, size_t *len);
/* true if s/len equals the NUL-terminated name */
bool agent_string_is(const uint8_t *s, size_t len, const char *name);

/*
 * agent_parse_ed25519_blob() - the public key of an OpenSSH public key blob
 * (string "ssh-ed25519", string pk[32], nothing after).
 * Return: 0, or -1 if the blob is not exactly that.
 */
int agent_parse_ed25519_blob(const uint8_t *blob, size_t len, uint8_t pk[32]);

/*
 * agent_parse_ed25519_sig() - the signature of an SSH signature blob
 * (string "ssh-ed25519", string sig[64], nothing after). Return: 0 or -1.
 */
int agent_parse_ed25519_sig(const uint8_t *blob, size_t len, uint8_t sig[64]);

typedef struct AgentOut {
	uint8_t *data;
	size_t len, cap;
	bool oom;
} AgentOut;

void agent_put_u8(AgentOut *o, uint8_t v);
void agent_put_u32(AgentOut *o, uint32_t v);
void agent_put_string(AgentOut *o, const void *s, size_t len);
void agent_put_cstring(AgentOut *o, const char *s);
/* bytes as they are (already encoded fields) */
void agent_put_raw(AgentOut *o, const void *s, size_t len);
/* the 39-byte public key blob of pk */
void agent_put_ed25519_blob(AgentOut *o, const uint8_t pk[32]);
/* wipe and free */
void agent_out_free(AgentOut *o);

#endif /* SIGIL_DAEMON_AGENT_MSG_H */
