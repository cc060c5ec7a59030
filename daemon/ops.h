/* SPDX-License-Identifier: MIT */
/*
 * ops.h - the operations core: the one place that says yes or no
 *
 * Every request from either socket becomes an Op (peer, what, which key,
 * arguments) and goes through ops_submit(), which decides, in this order:
 *   1. may this peer do this kind of operation at all (admins: lock,
 *      unlock, rekey, audit; owners and admins: delete, re-ADD);
 *   2. is the keystore free (unlock and rekey own it while they run on the
 *      pool: the op is parked until they end) and unlocked;
 *   3. does the key's policy and its agent constraints admit it (uids,
 *      gids, exes, ops, expiry, max_signs, rate; confirm, lifetime,
 *      destination);
 * then schedules it (at once, or on the worker pool), accounts for it
 * (the in-flight limits; key jobs that lock/unlock/rekey wait for),
 * charges the key's quota when the operation is performed, writes its
 * audit line and hands the result back through op->done().
 *
 * The upstream agent (OP_AGENT_RELAY): an agent connection with one lends
 * its ops a relay() (agent.c, the transport agent-upstream.c). The core
 * decides what goes there (a SIGN_REQUEST or REMOVE_IDENTITY for an
 * identity sigil does not hold, a listing while unlocked; the front-end's
 * ADD of a key type sigil cannot hold, extensions, and the copies of lock,
 * unlock, remove-all and session-bind after sigil's own), keeps the op
 * while the upstream answers (ops_relay_done) and writes its one audit
 * line (op=relay) with the upstream's result.
 *
 * Front-ends (rpc.c, agent.c) only translate: bytes -> Op, Op -> bytes.
 * This module knows no wire format and no connection: it sees a Peer, an
 * OpsClient (a connection's counters) and, for the ssh-agent socket, the
 * connection's AgentSession.
 *
 * Threading: everything here runs on the loop thread; the jobs it puts on
 * the pool touch only their Op and its key (generate, import, ssh-add,
 * verify_batch) or the keystore that the core holds for them (unlock,
 * rekey: every other keystore operation is parked meanwhile, lifetime
 * expiries included).
 */
#ifndef SIGIL_DAEMON_OPS_H
#define SIGIL_DAEMON_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "agent-restrict.h"
#include "config.h"
#include "keystore.h"
#include "peer.h"
#include "pool.h"
#include "proto.h"

typedef struct Ops Ops;
typedef struct Op Op;

typedef enum OpKind {
	OP_STATUS,
	OP_KEY_LIST,
	OP_KEY_PUBLIC,
	OP_KEY_GENERATE,
	OP_KEY_IMPORT,
	OP_KEY_DELETE,
	OP_KEY_EXPORT,
	OP_SIGN,
	OP_VERIFY,
	OP_VERIFY_BATCH,
	OP_DH,
	OP_LOCK,
	OP_UNLOCK,
	OP_REKEY,
	OP_AUDIT,
	/* age (docs/age.md): an X25519 stanza opened with a key (audited
	 * age-unwrap, the key's ops rule); a key written into an age file;
	 * an age file opened with a key, then imported as a key.import */
	OP_AGE_UNWRAP,
	OP_KEY_EXPORT_WRAPPED,
	OP_KEY_IMPORT_WRAPPED,
	/* the ssh-agent socket's: keys by public key (op->pk), the
	 * connection's session binds (op->session) apply */
	OP_AGENT_LIST,
	OP_AGENT_SIGN,
	OP_AGENT_ADD,
	OP_AGENT_REMOVE,
	OP_AGENT_REMOVE_ALL,
	/* a request for the upstream agent: op->up says what, op->relay()
	 * sends it (OP_AGENT_LIST, _SIGN and _REMOVE become one when sigil
	 * does not hold the identity) */
	OP_AGENT_RELAY,
	_OP_KIND_N,
} OpKind;

/* what a relayed request is */
typedef enum OpsRelayKind {
	OPS_RELAY_NONE,
	OPS_RELAY_LIST,      /* REQUEST_IDENTITIES: sigil's identities (the result), then the upstream's */
	OPS_RELAY_QUERY,     /* extension query: sigil's names, then the upstream's */
	OPS_RELAY_SIGN,      /* SIGN_REQUEST for an identity sigil does not hold */
	OPS_RELAY_ADD,       /* ADD of a key type sigil cannot hold (the front-end's) */
	OPS_RELAY_REMOVE,    /* REMOVE_IDENTITY of an identity sigil does not hold */
	OPS_RELAY_EXTENSION, /* an extension sigil does not know (the front-end's) */
	OPS_RELAY_COPY,      /* lock, unlock, remove-all, session-bind after sigil's own: sigil answered */
} OpsRelayKind;

/* how the upstream's part ended */
typedef enum OpsRelayResult {
	OPS_RELAY_OK,          /* it answered (not FAILURE) */
	OPS_RELAY_FAILED,      /* it answered FAILURE */
	OPS_RELAY_UNREACHABLE, /* no answer: down, timed out, a bad frame, or the connection
	                        * closed; also a listing's answer that came after sigil locked
	                        * (the front-end then leaves the upstream's answer out) */
} OpsRelayResult;

typedef struct OpsRelay {
	OpsRelayKind kind;           /* set by the front-end for its kinds, by the core for the others */
	char what[40];               /* the request in the audit line: "sign", "add ssh-rsa", "lock" */
	/* the core's */
	char fp[PROTO_FINGERPRINT_MAX]; /* the key's SHA256 fingerprint, "" if none */
	bool sent;                   /* handed to op->relay() */
	OpsRelayResult result;
} OpsRelay;

/* a connection's share of the in-flight limits (the front-end's) */
typedef struct OpsClient {
	unsigned inflight;   /* ops of this connection that the core holds (kept) */
	unsigned unwritten;  /* answered, not yet written (the front-end counts these) */
} OpsClient;

/* what an ssh-add brings (OP_AGENT_ADD): moved into the key when it is taken */
typedef struct OpsAgentAdd {
	uint8_t seed[32];            /* secret: wiped by ops_op_deinit() */
	char comment[PROTO_LABEL_MAX + 1]; /* the label to try first ("" if unusable) */
	uint32_t lifetime;           /* seconds; 0: none */
	bool confirm;
	AgentRestrict *dest;         /* destination constraints, or NULL (owned) */
	uint8_t *cert_comment;       /* a certificate's (op->cert) comment (owned) */
	size_t cert_comment_len;
} OpsAgentAdd;

/* a certificate in an agent list's result (points into the core's store,
 * valid during done()) */
typedef struct OpsCertInfo {
	const uint8_t *blob;
	size_t blob_len;
	const uint8_t *comment;
	size_t comment_len;
} OpsCertInfo;

struct Op {
	/* set by the front-end */
	OpKind kind;
	const Peer *peer;
	OpsClient *client;
	const AgentSession *session; /* the agent socket's; NULL on the main socket */
	ProtoRequest *q;             /* the arguments (the agent front-end fills one too) */
	uint8_t pk[32];              /* agent kinds: the key's public key */
	OpsAgentAdd add;             /* OP_AGENT_ADD */
	/*
	 * relay() - the connection's upstream agent (NULL: none) takes @op (a
	 * kept copy) and answers it later through ops_relay_done(), never from
	 * inside relay(). Return: 0, or -1 when it cannot be sent now (the
	 * core then ends @op as unreachable).
	 */
	int (*relay)(Op *op);
	OpsRelay up;                 /* OP_AGENT_RELAY */
	/* agent kinds: an OpenSSH certificate blob (owned; NULL: none). ADD:
	 * the certificate to keep with key op->pk; SIGN, REMOVE: the identity
	 * named by its certificate (op->pk unset) */
	uint8_t *cert;
	size_t cert_len;
	/*
	 * done() - the result is in op->resp (resp.error, resp.message,
	 * resp.u). Called exactly once, on the loop thread: before
	 * ops_submit() returns, or later for an op the core kept. The
	 * front-end then calls ops_op_deinit(op) (and frees a kept copy).
	 */
	void (*done)(Op *op);
	/*
	 * keep() - the core must finish @op later: return a copy that lives
	 * until its done() (a struct copy of *op whose q and input pointers
	 * point into the copy's own storage), or NULL when out of memory.
	 */
	Op *(*keep)(Op *op);
	void *owner;                 /* the front-end's */
	/* the result */
	ProtoResponse resp;
	/* the core's own */
	Ops *ops;
	bool was_kept;               /* a copy was kept (ops_submit's answer) */
	Key *key;
	bool *valid;                 /* verify_batch */
	ProtoKeyInfo *list;          /* key.list, agent list */
	OpsCertInfo *certs;          /* agent list: the certificates after the keys */
	size_t n_certs;
	uint8_t *file;               /* key.export_wrapped: the age file (wiped, freed) */
	size_t file_len;
	struct OpsWrapped *wrapped;  /* key.import_wrapped: what the file held (secret: wiped, freed) */
	int r;
	size_t cost;
	bool counted;                /* in the in-flight figures */
	bool keystore_job;           /* unlock/rekey: holds the keystore */
	bool key_job;                /* generate/import/ssh-add on the pool */
	Op *next;                    /* parked / gated */
	char why[PROTO_MESSAGE_MAX - 64];
	PoolVerifyBatch batch;       /* the job on the worker pool (batch.job for every kind) */
	sigil_ed25519_item *items;   /* verify_batch */
	int *ivalid;
};

/* what the server adds to a status answer (connections, requests, bytes) */
typedef void (*OpsStatusFn)(void *ctx, const Op *op, ProtoStatus *st, uint64_t *buffered_bytes);

struct Ops {
	uv_loop_t *loop;
	Keystore *ks;
	const Config *config;        /* the server's (reloaded on SIGHUP) */
	Pool *pool;                  /* sigild's crypto workers (pool.c) */
	unsigned workers;
	uint64_t start_ms;
	/* the one lock of both sockets */
	bool locked;
	bool has_lock_pass;          /* a lock with a passphrase: unlock must give it */
	uint8_t lock_salt[16];
	uint8_t lock_hash[32];
	unsigned unlock_failures;    /* in a row; each delays the next unlock */
	uint64_t unlock_gate_ms;     /* no unlock runs before this (uv_now) */
	uv_timer_t gate_timer;
	Op *gated_head, *gated_tail; /* unlocks waiting for the gate */
	uint64_t auto_lock_ms;       /* 0: never */
	uint64_t last_key_use_ms;
	/* the keystore held by a pool job, and who waits for it */
	bool ks_busy;
	unsigned key_jobs;
	Op *parked_head, *parked_tail;
	struct OpsTimer *timers;     /* lifetime constraints */
	struct AgentCerts *certs;    /* OpenSSH certificates of the keys (agent-certs.c) */
	bool expiry_due;             /* a lifetime ran out while the keystore was held */
	/* in flight: kept ops */
	uint64_t inflight;
	size_t inflight_bytes;
	const uint64_t *unwritten_total; /* the front-ends' answers not yet written */
	uint64_t requests;           /* answered */
	bool shutting_down;
	OpsStatusFn status;
	void *status_ctx;
	/* called after a kept op ended (limits may have moved) */
	void (*settled)(void *ctx);
	void *settled_ctx;
};

/* set up (handles on @loop); the keystore is opened by the caller; jobs
 * go to @pool (handed over by pool_kick(), once per loop iteration) */
void ops_init(Ops *o, uv_loop_t *loop, Keystore *ks, const Config *config, Pool *pool,
              const uint64_t *unwritten_total);

/* sign, verify and dh go to the pool; one of a shorter message than this
 * that is alone in its loop iteration runs in pool_kick() on the loop
 * thread (less than a hand-off's two wake-ups, docs/throughput.md); a
 * longer one always on a worker: hashing 32 MiB takes ~45 ms, which no
 * other connection should wait for */
#define OPS_LARGE_MESSAGE (64u * 1024)
/* signatures of messages up to this long may also run on the loop thread
 * together, up to eight of one loop iteration in lanes, while the workers
 * are idle (pool_kick: about 20 us for eight, under a hand-off's cost) */
#define OPS_GROUP_MESSAGE 1024u
/* close the timers (the loop then ends); parked ops are answered busy */
void ops_close(Ops *o);

/**
 * ops_submit() - decide and run @op (see the top of this file).
 * Return: false when op->done() has been called on @op itself; true when
 * the core kept a copy (op->keep()): @op is the front-end's again (and
 * may be discarded), the copy gets done() later (possibly already did).
 */
bool ops_submit(Ops *o, Op *op);

/**
 * ops_relay_done() - the upstream's part of relayed @op (the copy handed
 * to op->relay()) ended with @r: the core writes its audit line and calls
 * op->done() (possibly later: a listing reads sigil's keys, which an
 * unlock or rekey may hold).
 */
void ops_relay_done(Op *op, OpsRelayResult r);

/* release what the core attached to a finished op (key reference, lists,
 * the ssh-add seed and constraints) */
void ops_op_deinit(Op *op);

/* once a second: auto-lock */
void ops_tick(Ops *o);
/* sigild stops: parked and gated ops are answered busy */
void ops_shutdown(Ops *o);
/* for status lines and the shutdown timeout */
bool ops_keystore_held(const Ops *o);

#endif /* SIGIL_DAEMON_OPS_H */
