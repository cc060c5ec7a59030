/* SPDX-License-Identifier: MIT */
/*
 * sigil/client.h - libsigil, the C client library of the sigil daemon
 *
 * libsigil speaks sigild's msgpack-rpc protocol (docs/protocol.md) over its
 * Unix socket. Every call is blocking and bounded by the connection's
 * timeout (sigil_client_set_timeout); the pipelined calls
 * (sigil_client_sign_many, sigil_client_verify_many) keep many requests in
 * flight on one connection and match the answers by msgid.
 *
 * Errors: every call returns a sigil_error. SIGIL_EOK is 0; the codes from
 * SIGIL_EBAD_REQUEST to SIGIL_EINTERNAL are the daemon's protocol error codes
 * (docs/protocol.md), the ones from SIGIL_ECONNECT on are local. After an
 * error, sigil_client_errmsg() tells why (the daemon's message for protocol
 * errors). A transport error (SIGIL_ECONNECT, SIGIL_ETIMEOUT, SIGIL_EIO,
 * SIGIL_EPROTO) leaves the connection unusable: free it and connect again.
 * So does an error the daemon sends about the connection itself rather
 * than one request (msgid nil: denied, busy, too_large), which comes back
 * as that protocol code.
 *
 * Thread safety: a sigil_client is NOT internally locked. Use one
 * connection per thread, or serialise all calls on a connection with your
 * own lock. Different connections are independent and may be used from
 * different threads at the same time. The functions that take no
 * sigil_client (sigil_client_strerror, sigil_client_socket_path) are
 * thread-safe.
 *
 * Memory: the caller allocates every output, except the array returned by
 * sigil_client_key_list(), released with free(). Secrets that pass through
 * the library (seeds, shared secrets, passphrases) are wiped from its
 * buffers after use; wiping the caller's own copies is up to the caller.
 */
#ifndef SIGIL_CLIENT_H
#define SIGIL_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SIGIL_CLIENT_LABEL_MAX 64       /* labels match [A-Za-z0-9._@+-]{1,64} */
#define SIGIL_CLIENT_FINGERPRINT_MAX 64 /* "SHA256:..." with its NUL */
#define SIGIL_CLIENT_SERVER_MAX 64
#define SIGIL_CLIENT_DEFAULT_TIMEOUT_MS 30000

typedef enum sigil_error {
	SIGIL_EOK = 0,
	/* the daemon's error codes, in the order of docs/protocol.md */
	SIGIL_EBAD_REQUEST = 1, /* "bad_request" */
	SIGIL_EUNKNOWN_METHOD,  /* "unknown_method" */
	SIGIL_ENOT_FOUND,       /* "not_found" */
	SIGIL_EEXISTS,          /* "exists" */
	SIGIL_EWRONG_TYPE,      /* "wrong_type" */
	SIGIL_ELOCKED,          /* "locked" */
	SIGIL_EDENIED,          /* "denied" */
	SIGIL_EBUSY,            /* "busy" */
	SIGIL_ETOO_LARGE,       /* "too_large" */
	SIGIL_EINVALID_KEY,     /* "invalid_key" */
	SIGIL_EINTERNAL,        /* "internal" (also: an error code this library does not know) */
	SIGIL_ENO_MATCH,        /* "no_match": the age stanza or file is not for this key */
	/* local errors */
	SIGIL_ECONNECT = 100,   /* could not connect to the socket */
	SIGIL_ETIMEOUT,         /* no answer within the timeout */
	SIGIL_EIO,              /* the connection broke */
	SIGIL_EPROTO,           /* the daemon's answer is malformed */
	SIGIL_ENOMEM,           /* out of memory */
	SIGIL_EINVAL,           /* bad argument (label syntax, length, NULL pointer) */
	SIGIL_EUNTRUSTED,       /* the server runs as a uid this client does not trust (nothing was sent) */
} sigil_error;

typedef enum sigil_key_type {
	SIGIL_KEY_ED25519 = 0,
	SIGIL_KEY_X25519 = 1,
} sigil_key_type;

typedef enum sigil_sign_mode {
	SIGIL_SIGN_PURE = 0,      /* Ed25519 over the message */
	SIGIL_SIGN_CTX = 1,       /* Ed25519ctx, context 1..255 bytes */
	SIGIL_SIGN_PH = 2,        /* Ed25519ph over the message (hashed by the daemon) */
	SIGIL_SIGN_PREHASHED = 3, /* Ed25519ph; the message is its 64-byte SHA-512 */
} sigil_sign_mode;

typedef enum sigil_verify_policy {
	SIGIL_POLICY_STRICT = 0,
	SIGIL_POLICY_ZIP215 = 1,
} sigil_verify_policy;

typedef struct sigil_key_info {
	char label[SIGIL_CLIENT_LABEL_MAX + 1];
	sigil_key_type type;
	uint8_t public_key[32];
	char fingerprint[SIGIL_CLIENT_FINGERPRINT_MAX]; /* "" if the daemon sent none */
	int exportable;
	int64_t created; /* unix time; 0 if the daemon sent none */
} sigil_key_info;

typedef struct sigil_status {
	uint64_t keys;
	int locked;
	uint64_t connections;
	uint64_t inflight;
	uint64_t uptime_s;
	uint64_t requests;
	uint64_t workers;
} sigil_status;

typedef struct sigil_hello {
	uint64_t protocol;
	char server[SIGIL_CLIENT_SERVER_MAX]; /* truncated if longer */
} sigil_hello;

typedef struct sigil_client sigil_client;

/* The socket path a client uses when given none: $SIGIL_SOCK if set, else
 * $XDG_RUNTIME_DIR/sigil/sigild.sock, else for root /run/sigil/sigild.sock
 * (sigild's defaults). Writes it to out. Returns 0, or -1 if it does not fit
 * or no default exists (non-root without XDG_RUNTIME_DIR). */
int sigil_client_socket_path(char *out, size_t out_len);

/* Connects to path (NULL: sigil_client_socket_path()) within timeout_ms
 * (<= 0: SIGIL_CLIENT_DEFAULT_TIMEOUT_MS, also used for later calls).
 * On error *clientp is NULL, except that errors other than SIGIL_ENOMEM
 * still return a client that holds the message (free it). */
sigil_error sigil_client_connect(sigil_client **clientp, const char *path, int timeout_ms);
/* As sigil_client_connect, and trusts a server running as server_uid
 * (< 0: none). Every connect reads the server's SO_PEERCRED before it sends
 * anything and fails with SIGIL_EUNTRUSTED unless the server runs as root,
 * as this process's uid, as the system user "sigil" (the packaged system
 * service's), as server_uid, or (server_uid < 0) as the uid in
 * $SIGIL_SERVER_UID: another user who took over the socket path gets
 * nothing. */
sigil_error sigil_client_connect_uid(sigil_client **clientp, const char *path, int timeout_ms,
                                     int64_t server_uid);
void sigil_client_free(sigil_client *c);
/* Timeout of each later call, in milliseconds (<= 0: the default). */
void sigil_client_set_timeout(sigil_client *c, int timeout_ms);
/* The message of the last error on this connection ("" after success). */
const char *sigil_client_errmsg(const sigil_client *c);
/* The name of an error: the wire code ("not_found") for protocol errors. */
const char *sigil_client_strerror(sigil_error e);

sigil_error sigil_client_hello(sigil_client *c, sigil_hello *out);
sigil_error sigil_client_status(sigil_client *c, sigil_status *out);

/* out may be NULL when the caller does not need the key's description. */
sigil_error sigil_client_key_generate(sigil_client *c, sigil_key_info *out, sigil_key_type type,
                                      const char *label, int exportable);
sigil_error sigil_client_key_import(sigil_client *c, sigil_key_info *out, sigil_key_type type,
                                    const char *label, const uint8_t seed[32], int exportable);
/* A per-key policy (docs/security.md); zero fields are rules not set. */
#define SIGIL_POLICY_IDS_MAX 16
#define SIGIL_POLICY_EXES_MAX 4
typedef struct sigil_key_policy {
	int allow_sign;          /* allow_sign and allow_dh both 0: the type's own operation */
	int allow_dh;
	int64_t expires;         /* unix time; 0: never */
	uint32_t uids[SIGIL_POLICY_IDS_MAX];
	size_t n_uids;
	uint32_t gids[SIGIL_POLICY_IDS_MAX];
	size_t n_gids;
	const char *exes[SIGIL_POLICY_EXES_MAX]; /* absolute paths */
	size_t n_exes;
	uint64_t max_signs;      /* 0: no limit */
	uint32_t rate;           /* operations per minute; 0: no limit */
	/* op age-unwrap (age.unwrap; docs/age.md), not implied by allow_dh.
	 * Added in what was tail padding: the struct's size is unchanged on
	 * LP64 (client.c checks), so the SIGIL_0 ABI holds there. */
	int allow_age_unwrap;
} sigil_key_policy;

/* key_generate/key_import with a policy (NULL: none) */
sigil_error sigil_client_key_generate_policy(sigil_client *c, sigil_key_info *out, sigil_key_type type,
                                             const char *label, int exportable,
                                             const sigil_key_policy *policy);
sigil_error sigil_client_key_import_policy(sigil_client *c, sigil_key_info *out, sigil_key_type type,
                                           const char *label, const uint8_t seed[32], int exportable,
                                           const sigil_key_policy *policy);

/* *keysp is a malloc'd array of *np keys (NULL when there are none). */
sigil_error sigil_client_key_list(sigil_client *c, sigil_key_info **keysp, size_t *np);
/* The same, and each key's policy (set at generate/import): *policiesp is
 * one malloc'd block of *np policies (free it with free(); its exes point
 * into it); a key without a policy has an all-zero one. */
sigil_error sigil_client_key_list_policies(sigil_client *c, sigil_key_info **keysp,
                                           sigil_key_policy **policiesp, size_t *np);
sigil_error sigil_client_key_public(sigil_client *c, sigil_key_info *out, const char *label);
sigil_error sigil_client_key_delete(sigil_client *c, const char *label);
/* The seed of an exportable key (secret: wipe it after use). Refused with
 * SIGIL_EDENIED unless the key was made exportable and its policy admits
 * this peer. */
sigil_error sigil_client_key_export(sigil_client *c, uint8_t seed[32], const char *label);

/* Signs with the key named label. For SIGIL_SIGN_PREHASHED msg is the
 * SHA-512 digest of the message (msg_len 64). ctx may be NULL when
 * ctx_len is 0. */
sigil_error sigil_client_sign(sigil_client *c, uint8_t sig[64], const char *label,
                              sigil_sign_mode mode, const uint8_t *msg, size_t msg_len,
                              const uint8_t *ctx, size_t ctx_len);
/* Asks the daemon to verify; *validp is 1 or 0. */
sigil_error sigil_client_verify(sigil_client *c, int *validp, const uint8_t pk[32],
                                const uint8_t sig[64], sigil_sign_mode mode,
                                const uint8_t *msg, size_t msg_len, const uint8_t *ctx,
                                size_t ctx_len, sigil_verify_policy policy);

typedef struct sigil_verify_item {
	const uint8_t *public_key; /* 32 bytes */
	const uint8_t *signature;  /* 64 bytes */
	const uint8_t *message;
	size_t message_len;
} sigil_verify_item;

/* One verify_batch request (pure Ed25519): valid[i] is 1 or 0 for each item. */
sigil_error sigil_client_verify_batch(sigil_client *c, int *valid, const sigil_verify_item *items,
                                      size_t n, sigil_verify_policy policy);

/* X25519 with the key named label; shared is secret (wipe it after use). */
sigil_error sigil_client_dh(sigil_client *c, uint8_t shared[32], const char *label,
                            const uint8_t peer[32]);

/* passphrase may be NULL (none sent). */
sigil_error sigil_client_lock(sigil_client *c, const char *passphrase);
sigil_error sigil_client_unlock(sigil_client *c, const char *passphrase);
/* Re-seals every key under a new master key: the new passphrase (from any
 * source; sigild then starts locked) or NULL (a new generated master key,
 * when the current one is generated). *keysp (may be NULL): how many. */
sigil_error sigil_client_rekey(sigil_client *c, const char *new_passphrase, uint64_t *keysp);
/* Re-seals every key under the master key in new_master_key_file (an
 * absolute path that sigild reads: 32 bytes or 64 hex digits, mode 0600),
 * from any master key source. Point sigild's configuration at that key
 * before its next start (docs/security.md). */
sigil_error sigil_client_rekey_file(sigil_client *c, const char *new_master_key_file, uint64_t *keysp);
/* The last limit (0: 100) audit lines, oldest first: *linesp is a malloc'd
 * NULL-terminated array of malloc'd strings; free it with
 * sigil_client_strv_free(). */
sigil_error sigil_client_audit(sigil_client *c, size_t limit, char ***linesp, size_t *np);
void sigil_client_strv_free(char **v);

/* Pipelined requests. Each element is one sign or verify request and gets
 * its own answer (error, and signature or valid). The call sends up to
 * `window` requests before it waits for answers (0: 64), keeps the window
 * full as answers come back in any order, and returns when all n are
 * answered. The return value is SIGIL_EOK when every request got an answer
 * (check each element's error), or the transport error that stopped it
 * (elements not answered then hold that error too). A window larger than
 * the daemon's max_inflight_per_conn (4096 by default) gets SIGIL_EBUSY
 * answers for the excess. A request with bad arguments is answered locally
 * with SIGIL_EINVAL and does not stop the others. */
typedef struct sigil_sign_request {
	const char *label;
	sigil_sign_mode mode;
	const uint8_t *message;
	size_t message_len;
	const uint8_t *context;
	size_t context_len;
	/* outputs */
	sigil_error error;
	uint8_t signature[64];
} sigil_sign_request;

typedef struct sigil_verify_request {
	const uint8_t *public_key; /* 32 bytes */
	const uint8_t *signature;  /* 64 bytes */
	sigil_sign_mode mode;
	const uint8_t *message;
	size_t message_len;
	const uint8_t *context;
	size_t context_len;
	sigil_verify_policy policy;
	/* outputs */
	sigil_error error;
	int valid;
} sigil_verify_request;

sigil_error sigil_client_sign_many(sigil_client *c, sigil_sign_request *reqs, size_t n,
                                   size_t window);
sigil_error sigil_client_verify_many(sigil_client *c, sigil_verify_request *reqs, size_t n,
                                     size_t window);

/* ---- age (docs/age.md) ---- */

/* age.unwrap: opens one age X25519 stanza (its 32-byte share and 32-byte
 * body) with the X25519 key named label, in sigild: *file_key is the
 * stanza's 16-byte file key (secret: wipe it after use). SIGIL_ENO_MATCH
 * when the stanza is not for this key (its tag), SIGIL_EINVALID_KEY when its
 * share has small order; SIGIL_EDENIED when the key's policy refuses. */
sigil_error sigil_client_age_unwrap(sigil_client *c, uint8_t file_key[16], const char *label,
                                    const uint8_t share[32], const uint8_t body[32]);
/* key.export_wrapped: the key as a complete age file for recipient
 * ("age1..."), armored when armor; *filep is malloc'd (free it). Refused
 * like sigil_client_key_export. The seed never reaches the client. */
sigil_error sigil_client_key_export_wrapped(sigil_client *c, uint8_t **filep, size_t *lenp, const char *label,
                                            const char *recipient, int armor);
/* key.import_wrapped: sigild opens the age file with its X25519 key
 * key_label and imports the key it holds under label. out may be NULL. */
sigil_error sigil_client_key_import_wrapped(sigil_client *c, sigil_key_info *out, const char *label,
                                            const char *key_label, const uint8_t *file, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* SIGIL_CLIENT_H */
