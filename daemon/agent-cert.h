/* SPDX-License-Identifier: MIT */
/*
 * agent-cert.h - OpenSSH certificates on the agent socket: the parser
 * (PROTOCOL.certkeys, draft-miller-ssh-cert) and the certificates sigild
 * keeps with its Ed25519 keys
 *
 * agent_cert_parse() and agent_cert_is_type() are pure code (agent-cert.c,
 * unit-tested on their own). AgentCerts (agent-certs.c) holds the
 * certificates added with ssh-add, by the public key they certify, in
 * memory and, for a key that has a key file, in <state>/ssh-certs/<hex of
 * the public key> (the blobs and comments as SSH strings).
 */
#ifndef SIGIL_DAEMON_AGENT_CERT_H
#define SIGIL_DAEMON_AGENT_CERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "agent-msg.h"

#define AGENT_CERT_ED25519 "ssh-ed25519-cert-v01@openssh.com"
#define AGENT_CERT_MAX 16 /* certificates per key */

typedef struct AgentCertInfo {
	uint8_t pk[32];         /* the certified Ed25519 key */
	uint32_t type;          /* 1 user, 2 host */
	const uint8_t *key_id;  /* into the blob */
	size_t key_id_len;
	uint64_t valid_after, valid_before;
	bool ca_ed25519;        /* the CA is an Ed25519 key (its signature was verified) */
} AgentCertInfo;

/* true if name is an OpenSSH certificate type ("...-cert-v01@openssh.com") */
bool agent_cert_is_type(const uint8_t *name, size_t len);

/*
 * agent_cert_parse() - an ssh-ed25519-cert-v01@openssh.com blob: every
 * field present and well formed, nothing after the signature, type 1 or 2,
 * a CA key that is not itself a certificate, and, when the CA is Ed25519,
 * its signature over the certificate valid (strict RFC 8032). Other CA
 * types (RSA, ECDSA) are not checked here: sshd checks every certificate.
 * Variable time: public data only.
 * Return: 0 (*out filled), or -1 (*out untouched).
 */
int agent_cert_parse(const uint8_t *blob, size_t len, AgentCertInfo *out);

/*
 * agent_cert_key_of() - the Ed25519 key a public key blob names: a plain
 * ssh-ed25519 blob, or an Ed25519 certificate (parsed as above) whose
 * subject it is; *is_cert says which. Return: 0 or -1.
 */
int agent_cert_key_of(const uint8_t *blob, size_t len, uint8_t pk[32], bool *is_cert);

typedef struct AgentCerts AgentCerts;

/* the certificates kept under statefd's ssh-certs/ (statefd -1: memory only), loaded now */
AgentCerts *agent_certs_new(int statefd);
void agent_certs_free(AgentCerts *ac);

/*
 * agent_certs_add() - keep certificate @blob (parsed, and checked to
 * certify @pk, by the caller: ops.c) with key @pk, persisted when @persist
 * (its key has a key file); the same certificate again only takes the new
 * comment. Shows a hidden plain identity of @pk again.
 * Return: 0, -ENOMEM, or -ENOSPC (AGENT_CERT_MAX certificates of @pk).
 */
int agent_certs_add(AgentCerts *ac, const uint8_t pk[32], const uint8_t *blob, size_t blob_len,
                    const uint8_t *comment, size_t comment_len, bool persist);

/* a plain add of key @pk: its plain identity shows again */
void agent_certs_unhide(AgentCerts *ac, const uint8_t pk[32]);

/* key @pk was deleted: its certificates go (memory and file) */
void agent_certs_forget(AgentCerts *ac, const uint8_t pk[32]);

/*
 * agent_certs_resolve() - the key a SIGN_REQUEST's blob names: a plain
 * ssh-ed25519 blob (unless that identity was removed while certificates
 * of its key stayed) or a certificate sigild holds. Return: 0 or -1.
 */
int agent_certs_resolve(const AgentCerts *ac, const uint8_t *blob, size_t len, uint8_t pk[32]);

/* the plain identity of pk was removed but its certificates stay */
bool agent_certs_hidden(const AgentCerts *ac, const uint8_t pk[32]);

/* a kept certificate, pointing into the store (valid until it changes) */
typedef struct AgentCertRef {
	const uint8_t *pk;
	const uint8_t *blob;
	size_t blob_len;
	const uint8_t *comment;
	size_t comment_len;
} AgentCertRef;

/*
 * agent_certs_list() - the kept certificates whose key @listed admits, in
 * the order added: the first @max into @out (NULL: only counted).
 * Return: how many @listed admits.
 */
size_t agent_certs_list(const AgentCerts *ac, AgentCertRef *out, size_t max,
                        bool (*listed)(void *ctx, const uint8_t pk[32]), void *ctx);

/* how many certificates are kept, of every key */
size_t agent_certs_count(const AgentCerts *ac);

enum {
	AGENT_CERTS_NOT_MINE = 0, /* a plain key without certificates: remove it as before */
	AGENT_CERTS_REMOVED,      /* answered: the certificate (or the plain identity) is gone */
	AGENT_CERTS_DELETE_KEY,   /* the last certificate of a hidden key went: delete key *pk */
	AGENT_CERTS_NOT_FOUND,    /* a certificate sigild does not hold */
};

/*
 * agent_certs_remove() - REMOVE_IDENTITY as OpenSSH's agent: a certificate
 * blob removes that certificate only; a plain key blob whose key has
 * certificates removes the plain identity only (the key stays for them).
 * Return: one of AGENT_CERTS_*, *pk set for AGENT_CERTS_DELETE_KEY.
 */
int agent_certs_remove(AgentCerts *ac, const uint8_t *blob, size_t len, uint8_t pk[32]);

#endif /* SIGIL_DAEMON_AGENT_CERT_H */
