/* SPDX-License-Identifier: MIT */
/*
 * ops.c - the operations core (ops.h): permission, the one lock, policy
 * and agent constraints, scheduling, accounting and audit for both sockets
 *
 * The permission model (docs/security.md):
 * - admins: sigild's uid, root, admin_uids/admin_gids (Peer.admin);
 *   users: every other admitted peer;
 * - every key has an owner (the uid that created, imported or ssh-added it);
 * - anyone admitted: status (users: their own figures), verify,
 *   verify_batch, key.list/key.public/agent list of the keys it may use or
 *   owns (admins: all), creating keys (owned by the caller);
 * - sign, dh, export: the key's rules and constraints, for everybody;
 * - delete, re-ADD: the owner or an admin (on the agent socket only keys
 *   that connection may see; a forwarded connection never removes a key
 *   that has a key file);
 * - lock, unlock, rekey, audit: admins. One lock for both sockets; a
 *   failed unlock delays the next one (0.1 s per failure in a row, at most
 *   10 s).
 * Quota (max_signs, rate) is charged only when an operation is performed.
 *
 * The upstream agent (OP_AGENT_RELAY): used only by admitted peers, never
 * for an identity sigil holds (its own rules answer), nothing but the
 * copies while sigil is locked, the copies of lock, unlock and remove-all
 * only after sigil's own succeeded (so only admins lock the upstream).
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sigil/crypto.h>

#include "agent-cert.h"
#include "agefile.h"
#include "audit.h"
#include "bech32.h"
#include "log.h"
#include "ops.h"
#include "policy.h"

#define OPS_UNLOCK_DELAY_MS 100
#define OPS_UNLOCK_DELAY_MAX_MS 10000

/* what key.import_wrapped's file held, until the import ends (op->wrapped) */
typedef struct OpsWrapped {
	AgeKey key;                  /* seed: secret */
	ProtoKeyPolicy policy;
} OpsWrapped;

/* the constraints a key was ssh-added with (key->cons) */
typedef struct OpsCons {
	bool confirm;
	AgentRestrict *dest;
} OpsCons;

/* a lifetime constraint: deletes the key when it fires (the key by label
 * and public key: a timer does not keep a removed key's secret alive) */
typedef struct OpsTimer {
	uv_timer_t timer;
	Ops *ops;
	char label[PROTO_LABEL_MAX + 1];
	uint8_t pk[32];
	bool due;            /* fired while the keystore was held */
	struct OpsTimer *next;
} OpsTimer;

static void dispatch(Ops *o, Op *op, bool resumed);
static void settle(Ops *o);

static const char *const op_names[_OP_KIND_N] = {
	[OP_STATUS] = "status",       [OP_KEY_LIST] = "list",     [OP_KEY_PUBLIC] = "public",
	[OP_KEY_GENERATE] = "generate", [OP_KEY_IMPORT] = "import", [OP_KEY_DELETE] = "delete",
	[OP_KEY_EXPORT] = "export",   [OP_SIGN] = "sign",         [OP_VERIFY] = "verify",
	[OP_VERIFY_BATCH] = "verify_batch", [OP_DH] = "dh",       [OP_LOCK] = "lock",
	[OP_UNLOCK] = "unlock",       [OP_REKEY] = "rekey",       [OP_AUDIT] = "audit",
	[OP_AGE_UNWRAP] = "age-unwrap", [OP_KEY_EXPORT_WRAPPED] = "export-wrapped",
	/* opening the file is an unwrap; the import after it has its own line */
	[OP_KEY_IMPORT_WRAPPED] = "age-unwrap",
	[OP_AGENT_LIST] = "ssh-list", [OP_AGENT_SIGN] = "ssh-sign", [OP_AGENT_ADD] = "ssh-add",
	[OP_AGENT_REMOVE] = "ssh-remove", [OP_AGENT_REMOVE_ALL] = "ssh-remove",
	[OP_AGENT_RELAY] = "relay",
};

/* ---- results and audit ------------------------------------------------------ */

static const char *result_name(ProtoError e)
{
	switch (e) {
	case PROTO_OK: return "ok";
	case PROTO_E_DENIED: return "denied";
	case PROTO_E_LOCKED: return "locked";
	case PROTO_E_NOT_FOUND: return "not_found";
	case PROTO_E_EXISTS: return "exists";
	case PROTO_E_WRONG_TYPE: return "wrong_type";
	case PROTO_E_BUSY: return "busy";
	case PROTO_E_INVALID_KEY: return "invalid_key";
	case PROTO_E_NO_MATCH: return "no_match";
	case PROTO_E_BAD_REQUEST: return "bad_request";
	default: return "error";
	}
}

/*
 * Operations that change nothing and use no secret (status, key.list,
 * key.public, the agent's list, verify, verify_batch, reading the audit
 * trail) are audited only when refused: an audit line per verification would double the log's write
 * rate for no one's benefit. Every other operation gets one line, allowed
 * or refused.
 */
static bool audited(const Op *op)
{
	switch (op->kind) {
	case OP_STATUS:
	case OP_KEY_LIST:
	case OP_KEY_PUBLIC:
	case OP_AGENT_LIST:
	case OP_VERIFY:
	case OP_VERIFY_BATCH:
	case OP_AUDIT:
		return op->resp.error != PROTO_OK && op->resp.error != PROTO_E_NOT_FOUND;
	case OP_AGENT_REMOVE_ALL:
		return op->resp.error != PROTO_OK; /* each key removed has its line */
	case OP_AGENT_RELAY:
		/* relayed listings and queries read public data, as sigil's own
		 * listing: a line only when sigil refused the peer */
		if (op->up.kind == OPS_RELAY_LIST || op->up.kind == OPS_RELAY_QUERY)
			return !op->up.sent && op->resp.error == PROTO_E_DENIED;
		return true;
	default:
		return true;
	}
}

static void audit_op(const Op *op, const Key *key, const char *label, ProtoError e, const char *why)
{
	const Peer *p = op->peer;

	audit_event(p->uid, p->pid, p->exe, key ? key->info.label : label, key ? key->info.fingerprint : NULL,
	            op_names[op->kind], result_name(e), why);
}

static const char *const relay_results[] = {
	[OPS_RELAY_OK] = "ok", [OPS_RELAY_FAILED] = "failed", [OPS_RELAY_UNREACHABLE] = "unreachable",
};

/* a relayed op's line: op=relay, the key's fingerprint, the upstream's
 * result (or sigil's refusal), why= the request */
static void audit_relay(const Op *op, ProtoError e)
{
	const Peer *p = op->peer;
	char why[sizeof(op->up.what) + 2 + sizeof(op->resp.message)];

	if (op->up.sent)
		snprintf(why, sizeof(why), "%s", op->up.what);
	else
		snprintf(why, sizeof(why), "%s: %s", op->up.what, op->resp.message);
	audit_event(p->uid, p->pid, p->exe, NULL, op->up.fp, op_names[op->kind],
	            op->up.sent ? relay_results[op->up.result] : result_name(e), why);
}

/* the label an op names, for refusals before a key is found */
static const char *op_label(const Op *op)
{
	const ProtoRequest *q = op->q;

	switch (op->kind) {
	case OP_KEY_PUBLIC: return q->u.key_public.label;
	case OP_KEY_DELETE: return q->u.key_delete.label;
	case OP_KEY_EXPORT: return q->u.key_export.label;
	case OP_KEY_GENERATE: return q->u.key_generate.label;
	case OP_KEY_IMPORT: return q->u.key_import.label;
	case OP_SIGN: return q->u.sign.label;
	case OP_DH: return q->u.dh.label;
	case OP_AGE_UNWRAP: return q->u.age_unwrap.label;
	case OP_KEY_EXPORT_WRAPPED: return q->u.key_export_wrapped.label;
	case OP_KEY_IMPORT_WRAPPED: return q->u.key_import_wrapped.key; /* the key that opens it */
	default: return NULL;
	}
}

/* the reason on an ok line: where an exported key went (export --to) */
static const char *ok_reason(const Op *op)
{
	return op->kind == OP_KEY_EXPORT_WRAPPED ? op->q->u.key_export_wrapped.recipient : NULL;
}

static void uncount(Ops *o, Op *op)
{
	if (!op->counted)
		return;
	op->counted = false;
	o->inflight--;
	o->inflight_bytes -= op->cost;
	op->client->inflight--;
}

/*
 * finish() - set the result, audit it (ops.c's only audit call for a
 * result; removals of several keys audit each key with audit_op()), and
 * hand the op back. @code PROTO_OK leaves the result as the op filled it.
 */
static void finish(Ops *o, Op *op, ProtoError code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void finish(Ops *o, Op *op, ProtoError code, const char *fmt, ...)
{
	bool kept = op->counted;

	op->resp.error = code;
	op->resp.message[0] = '\0';
	if (code != PROTO_OK && fmt) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(op->resp.message, sizeof(op->resp.message), fmt, ap);
		va_end(ap);
	}
	if (audited(op) && op->kind == OP_AGENT_RELAY)
		audit_relay(op, code);
	else if (audited(op))
		audit_op(op, op->key, op_label(op), code, code == PROTO_OK ? ok_reason(op)
		         : op->why[0] ? op->why : op->resp.message[0] ? op->resp.message : NULL);
	uncount(o, op);
	o->requests++;
	op->done(op);
	if (kept)
		settle(o);
}

/* the core finishes @op later: its kept copy (counted in flight), or NULL
 * when none could be made (then @op is answered) */
static Op *defer(Ops *o, Op *op)
{
	Op *k;

	if (op->counted)
		return op; /* kept already (resumed from the parked list) */
	k = op->keep(op);
	if (!k) {
		if (op->key && op->key->pending)
			keystore_abort(o->ks, op->key);
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return NULL;
	}
	op->was_kept = k->was_kept = true;
	k->counted = true;
	o->inflight++;
	o->inflight_bytes += k->cost;
	k->client->inflight++;
	return k;
}

/* ---- who may -------------------------------------------------------------- */

static bool owns(const Peer *p, const Key *k)
{
	return k->info.owner == (uint32_t)p->uid;
}

/* may @p see @k at all (key.list, key.public, the agent's list)? Admins see
 * every key, users the keys their uid owns or may use */
static bool may_see(const Ops *o, const Peer *p, const Key *k)
{
	char why[8];
	PolicyPeer pp = { .uid = p->uid, .gid = p->gid, .pid = p->pid, .exe = p->exe };

	if (k->pending || k->removed)
		return false;
	if (p->admin || owns(p, k))
		return true;
	return policy_check(&k->policy, &k->use, 0, &pp, (int64_t)time(NULL), uv_now(o->loop), why, sizeof(why));
}

static bool may_manage(const Peer *p, const Key *k)
{
	return p->admin || owns(p, k);
}

static bool is_locked(const Ops *o)
{
	return o->locked || o->ks->locked;
}

/* in-flight limits: requests the core holds plus answers not yet written */
static bool admit(Ops *o, Op *op)
{
	const Config *c = o->config;

	if (op->client->inflight + op->client->unwritten >= c->max_inflight_per_conn) {
		finish(o, op, PROTO_E_BUSY, "too many requests in flight on this connection (max %u)",
		       c->max_inflight_per_conn);
		return false;
	}
	if (o->inflight + *o->unwritten_total >= c->max_inflight_total) {
		finish(o, op, PROTO_E_BUSY, "too many requests in flight (max %u)", c->max_inflight_total);
		return false;
	}
	return true;
}

/* ---- keys' constraints and lifetimes -------------------------------------- */

static void cons_free(void *p)
{
	OpsCons *c = p;

	if (!c)
		return;
	agent_restrict_free(c->dest);
	free(c);
}

static const OpsCons *cons_of(const Key *k)
{
	return k->cons_free == cons_free ? k->cons : NULL;
}

static void timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static bool timer_is_for(const OpsTimer *t, const Key *k)
{
	return strcmp(t->label, k->info.label) == 0 && memcmp(t->pk, k->info.public_key, 32) == 0;
}

static void timer_drop(Ops *o, OpsTimer *t)
{
	for (OpsTimer **p = &o->timers; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	uv_close((uv_handle_t *)&t->timer, timer_closed);
}

static void timer_cancel(Ops *o, const Key *k)
{
	for (OpsTimer *t = o->timers, *next; t; t = next) {
		next = t->next;
		if (timer_is_for(t, k))
			timer_drop(o, t);
	}
}

/* remove a key (and its file): every removal goes through here */
static int key_remove(Ops *o, Key *k)
{
	char label[PROTO_LABEL_MAX + 1];
	uint8_t pk[32];
	int r;

	memcpy(label, k->info.label, sizeof(label));
	memcpy(pk, k->info.public_key, 32);
	/* the keystore's reference may be the last one (a lifetime expiry
	 * holds none): @k must outlive timer_cancel() */
	key_ref(k);
	r = keystore_delete(o->ks, label);
	if (r) {
		log_err("cannot delete key '%s': %s", label, r < 0 ? strerror(-r) : "not found");
		key_unref(k);
		return r;
	}
	timer_cancel(o, k);
	key_unref(k);
	/* its certificates (memory and ssh-certs/) go with it */
	agent_certs_forget(o->certs, pk);
	log_info("deleted key '%s'", label);
	return 0;
}

static void expire(Ops *o, OpsTimer *t)
{
	Key *k = keystore_find(o->ks, t->label);

	if (k && timer_is_for(t, k)) {
		audit_event(geteuid(), getpid(), "sigild", k->info.label, k->info.fingerprint, "ssh-remove", "ok",
		            "lifetime constraint");
		log_info("ssh-agent: key '%s' expired (lifetime constraint)", k->info.label);
		key_remove(o, k); /* drops t */
	} else {
		timer_drop(o, t);
	}
}

static void on_lifetime(uv_timer_t *h)
{
	OpsTimer *t = h->data;
	Ops *o = t->ops;

	if (o->ks_busy || o->key_jobs) {
		/* the keystore is held by a pool job: after it (settle) */
		t->due = true;
		o->expiry_due = true;
		return;
	}
	expire(o, t);
}

static void expire_due(Ops *o)
{
	if (!o->expiry_due || o->ks_busy || o->key_jobs)
		return;
	o->expiry_due = false;
	for (OpsTimer *t = o->timers, *next; t; t = next) {
		next = t->next;
		if (t->due)
			expire(o, t);
	}
}

static int timer_add(Ops *o, Key *k, uint32_t seconds)
{
	OpsTimer *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	timer_cancel(o, k);
	t->ops = o;
	memcpy(t->label, k->info.label, sizeof(t->label));
	memcpy(t->pk, k->info.public_key, 32);
	uv_timer_init(o->loop, &t->timer);
	t->timer.data = t;
	uv_timer_start(&t->timer, on_lifetime, (uint64_t)seconds * 1000, 0);
	t->next = o->timers;
	o->timers = t;
	return 0;
}

/* give a key the constraints of an ssh-add (moved out of @a). Return: 0 or -ENOMEM */
static int cons_set(Ops *o, Key *k, OpsAgentAdd *a)
{
	OpsCons *c = NULL;

	if (a->confirm || a->dest) {
		c = calloc(1, sizeof(*c));
		if (!c)
			return -ENOMEM;
		c->confirm = a->confirm;
		c->dest = a->dest;
		a->dest = NULL;
	}
	if (a->lifetime && timer_add(o, k, a->lifetime) < 0) {
		cons_free(c);
		return -ENOMEM;
	}
	if (!a->lifetime)
		timer_cancel(o, k);
	if (k->cons_free)
		k->cons_free(k->cons);
	k->cons = c;
	k->cons_free = c ? cons_free : NULL;
	return 0;
}

/* ---- the pool ------------------------------------------------------------- */

static sigil_ed25519_policy policy_of(ProtoPolicy p)
{
	return p == PROTO_POLICY_ZIP215 ? SIGIL_ED25519_ZIP215 : SIGIL_ED25519_STRICT;
}

static int sign_now(Op *op);
static bool verify_now(const Op *op);

/* a sign's or an agent sign's mode (the agent signs pure Ed25519 only) */
static ProtoSignMode sign_mode(const Op *op)
{
	return op->kind == OP_AGENT_SIGN ? PROTO_MODE_PURE : op->q->u.sign.mode;
}

/* on a worker: touches only the op, its key, and (unlock, rekey) the
 * keystore the core holds for it */
static void job_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	Op *op = (Op *)((char *)j - offsetof(Op, batch.job));
	Ops *o = op->ops;
	ProtoRequest *q = op->q;

	(void)part;
	(void)n_parts;
	op->r = 0;
	switch (op->kind) {
	case OP_SIGN:
	case OP_AGENT_SIGN:
		op->r = sign_now(op);
		break;
	case OP_VERIFY:
		op->resp.u.verify.valid = verify_now(op);
		break;
	case OP_DH:
		op->r = sigil_x25519(op->resp.u.dh.shared_secret, op->key->secret->seed, q->u.dh.peer);
		break;
	case OP_AGE_UNWRAP:
		op->r = agefile_x25519_unwrap(op->resp.u.age_unwrap.file_key, op->key->secret->seed,
		                              q->u.age_unwrap.share, q->u.age_unwrap.body, PROTO_AGE_BODY_LEN);
		if (op->r)
			sigil_wipe(op->resp.u.age_unwrap.file_key, sizeof(op->resp.u.age_unwrap.file_key));
		break;
	case OP_KEY_GENERATE:
		op->r = keystore_materialize(o->ks, op->key, NULL);
		break;
	case OP_KEY_IMPORT:
		op->r = keystore_materialize(o->ks, op->key, q->u.key_import.seed);
		break;
	case OP_AGENT_ADD: {
		sigil_ed25519_expanded ek;

		/* the private half must give the public key the client sent */
		sigil_ed25519_expand(&ek, op->add.seed);
		op->r = sodium_memcmp(ek.pk, op->pk, 32) == 0 ? 0 : -EINVAL;
		sigil_wipe(&ek, sizeof(ek));
		if (op->r == 0)
			op->r = keystore_materialize(o->ks, op->key, op->add.seed);
		sigil_wipe(op->add.seed, sizeof(op->add.seed));
		break;
	}
	case OP_UNLOCK: {
		bool has = q->u.unlock.has_passphrase;

		op->r = keystore_unlock(o->ks, has ? q->u.unlock.passphrase.data : NULL,
		                        has ? q->u.unlock.passphrase.len : 0);
		break;
	}
	case OP_REKEY: {
		bool has = q->u.rekey.has_passphrase;

		op->why[0] = '\0';
		op->r = keystore_rekey(o->ks, has ? q->u.rekey.passphrase.data : NULL, has ? q->u.rekey.passphrase.len : 0,
		                       q->u.rekey.master_key_file, op->why, sizeof(op->why));
		break;
	}
	default:
		op->r = -EINVAL;
		break;
	}
}

/* a pure Ed25519 signature (sign, or the agent's sign): the kind a
 * worker computes several of together */
static bool sign_pure(const Op *op)
{
	return (op->kind == OP_SIGN || op->kind == OP_AGENT_SIGN) && sign_mode(op) == PROTO_MODE_PURE;
}

/* on a worker: sign jobs it took together (pool.h, run_many): the pure
 * ones in one call, which computes them side by side where the CPU can,
 * the others as job_run would */
static void job_run_many(PoolJob *const *jobs, unsigned n)
{
	const uint8_t *m[POOL_TAKE_MAX];
	size_t mlen[POOL_TAKE_MAX];
	const sigil_ed25519_expanded *ek[POOL_TAKE_MAX];
	uint8_t sig[POOL_TAKE_MAX][64];
	Op *pure[POOL_TAKE_MAX];
	unsigned k = 0;

	if (n > POOL_TAKE_MAX) { /* (the pool gives at most that many) */
		job_run_many(jobs + POOL_TAKE_MAX, n - POOL_TAKE_MAX);
		n = POOL_TAKE_MAX;
	}
	for (unsigned i = 0; i < n; i++) {
		Op *op = (Op *)((char *)jobs[i] - offsetof(Op, batch.job));

		if (!sign_pure(op)) {
			job_run(jobs[i], 0, 1);
			continue;
		}
		pure[k] = op;
		m[k] = op->q->u.sign.message.data;
		mlen[k] = op->q->u.sign.message.len;
		ek[k] = &op->key->secret->ed;
		k++;
	}
	if (k)
		sigil_ed25519_sign_expanded_many(sig, m, mlen, ek, k);
	for (unsigned i = 0; i < k; i++) {
		memcpy(pure[i]->resp.u.sign.signature, sig[i], 64); /* (public) */
		pure[i]->r = 0;
	}
}

static void job_done(PoolJob *j);
static void age_unwrapped(Ops *o, Op *op);

/* put @op (kept) on the pool: verify_batch split over the workers (the
 * same answer as one call for every input), the rest as one job */
static void job_queue(Ops *o, Op *op)
{
	op->batch.job = (PoolJob)POOL_JOB_INIT(job_run, job_done);
	if (op->kind == OP_VERIFY_BATCH) {
		const ProtoRequest *q = op->q;
		size_t n = q->u.verify_batch.n_items;

		op->items = calloc(n ? n : 1, sizeof(*op->items));
		op->ivalid = calloc(n ? n : 1, sizeof(*op->ivalid));
		if (!op->items || !op->ivalid) {
			finish(o, op, PROTO_E_INTERNAL, "out of memory");
			return;
		}
		for (size_t i = 0; i < n; i++) {
			const ProtoVerifyItem *it = &q->u.verify_batch.items[i];

			op->items[i] = (sigil_ed25519_item){ it->public_key, it->signature, it->message.data,
			                                     it->message.len };
		}
		op->batch.valid = op->ivalid;
		op->batch.items = op->items;
		op->batch.n = n;
		op->batch.policy = policy_of(q->u.verify_batch.policy);
		pool_verify_batch(o->pool, &op->batch);
		return;
	}
	if (op->kind == OP_SIGN || op->kind == OP_AGENT_SIGN) {
		op->batch.job.here_if_alone = op->q->u.sign.message.len < OPS_LARGE_MESSAGE;
		op->batch.job.here_in_group = op->q->u.sign.message.len <= OPS_GROUP_MESSAGE;
		if (op->batch.job.here_if_alone)
			op->batch.job.run_many = job_run_many;
	} else if (op->kind == OP_VERIFY)
		op->batch.job.here_if_alone = op->q->u.verify.message.len < OPS_LARGE_MESSAGE;
	else if (op->kind == OP_DH || op->kind == OP_AGE_UNWRAP)
		op->batch.job.here_if_alone = true;
	pool_submit(o->pool, &op->batch.job);
	if (op->kind == OP_UNLOCK || op->kind == OP_REKEY) {
		o->ks_busy = true;
		op->keystore_job = true;
	} else if (op->kind != OP_VERIFY) {
		/* generate, import, ssh-add, and a long signature: lock,
		 * unlock and rekey wait for them */
		o->key_jobs++;
		op->key_job = true;
	}
}

/* keep @op (its copy) and put it on the pool */
static void to_pool(Ops *o, Op *op)
{
	op = defer(o, op);
	if (op)
		job_queue(o, op);
}

static void unlock_done(Ops *o, Op *op);
static void rekey_done(Ops *o, Op *op);
static void add_done(Ops *o, Op *op);

static void new_key_done(Ops *o, Op *op)
{
	if (op->r) {
		log_err("cannot store key '%s': %s", op->key->info.label, strerror(-op->r));
		keystore_abort(o->ks, op->key);
		finish(o, op, PROTO_E_INTERNAL, "cannot store the key: %s", strerror(-op->r));
		return;
	}
	keystore_commit(o->ks, op->key);
	log_info("%s key '%s' (%s, %s) for uid %u", op->kind == OP_KEY_GENERATE ? "generated" : "imported",
	         op->key->info.label, proto_key_type_name(op->key->info.type), op->key->info.fingerprint,
	         (unsigned)op->key->info.owner);
	op->resp.u.key = op->key->info;
	finish(o, op, PROTO_OK, NULL);
}

static void job_done(PoolJob *j)
{
	Op *op = (Op *)((char *)j - offsetof(Op, batch.job));
	Ops *o = op->ops;

	if (op->keystore_job) {
		o->ks_busy = false;
		op->keystore_job = false;
	}
	if (op->key_job) {
		o->key_jobs--;
		op->key_job = false;
	}
	switch (op->kind) {
	case OP_VERIFY_BATCH:
		for (size_t i = 0; i < op->batch.n; i++)
			op->valid[i] = op->ivalid[i] == 1;
		finish(o, op, PROTO_OK, NULL);
		break;
	case OP_VERIFY:
		finish(o, op, PROTO_OK, NULL);
		break;
	case OP_DH:
		if (op->r)
			finish(o, op, PROTO_E_INVALID_KEY, "peer public key has small order (the shared secret would be zero)");
		else
			finish(o, op, PROTO_OK, NULL);
		break;
	case OP_SIGN:
	case OP_AGENT_SIGN:
		if (op->r)
			finish(o, op, PROTO_E_INTERNAL, "signing failed");
		else
			finish(o, op, PROTO_OK, NULL);
		break;
	case OP_AGE_UNWRAP:
		age_unwrapped(o, op);
		break;
	case OP_KEY_GENERATE:
	case OP_KEY_IMPORT:
		new_key_done(o, op);
		break;
	case OP_AGENT_ADD:
		add_done(o, op);
		break;
	case OP_UNLOCK:
		unlock_done(o, op);
		break;
	case OP_REKEY:
		rekey_done(o, op);
		break;
	default:
		finish(o, op, PROTO_E_INTERNAL, "no handler");
		break;
	}
}

/* ---- parking: the keystore is held by unlock or rekey ------------------------ */

static bool touches_keystore(OpKind k)
{
	return k != OP_VERIFY && k != OP_VERIFY_BATCH && k != OP_AUDIT;
}

/* these also wait for key jobs on the pool (which seal with the master
 * key they replace or wipe) */
static bool exclusive(OpKind k)
{
	return k == OP_UNLOCK || k == OP_REKEY || k == OP_LOCK;
}

/* @resumed: taken off the parked list by settle(), which keeps their
 * order (the ones still parked behind it do not hold it back) */
static bool must_wait(const Ops *o, OpKind k, bool resumed)
{
	if (!touches_keystore(k))
		return false;
	return o->ks_busy || (!resumed && o->parked_head) || (exclusive(k) && o->key_jobs > 0);
}

static void park(Ops *o, Op *op)
{
	op = defer(o, op);
	if (!op)
		return;
	op->next = NULL;
	if (o->parked_head)
		o->parked_tail->next = op;
	else
		o->parked_head = op;
	o->parked_tail = op;
}

/* a kept op ended: expiries that waited, then the parked ops in order */
static void settle(Ops *o)
{
	expire_due(o);
	while (o->parked_head && !o->ks_busy) {
		Op *op = o->parked_head;

		if (exclusive(op->kind) && o->key_jobs > 0)
			break;
		o->parked_head = op->next;
		op->next = NULL;
		if (o->shutting_down)
			finish(o, op, PROTO_E_BUSY, "sigild is shutting down");
		else
			dispatch(o, op, true);
	}
	if (o->settled)
		o->settled(o->settled_ctx);
}

/* ---- confirm constraint: ask ssh_agent_confirm_program --------------------- */

typedef struct OpsConfirm {
	uv_process_t proc;
	Ops *ops;
	Op *op;
} OpsConfirm;

extern char **environ;

static void use_key(Ops *o, Op *op, bool confirmed);

static void confirm_closed(uv_handle_t *h)
{
	free(h->data);
}

static void confirm_exit(uv_process_t *p, int64_t status, int sig)
{
	OpsConfirm *cf = p->data;
	Ops *o = cf->ops;
	Op *op = cf->op;
	Key *k = op->key;

	uv_close((uv_handle_t *)p, confirm_closed);
	if (status == 0 && sig == 0) {
		log_info("use of key '%s' confirmed for uid %d pid %d", k->info.label, (int)op->peer->uid,
		         (int)op->peer->pid);
		use_key(o, op, true);
	} else {
		log_info("use of key '%s' not confirmed for uid %d pid %d", k->info.label, (int)op->peer->uid,
		         (int)op->peer->pid);
		finish(o, op, PROTO_E_DENIED, "key '%s': constraint confirm: the use was not confirmed", k->info.label);
	}
}

/* run the confirm program for @op (kept); use_key() again when it exits 0 */
static void confirm(Ops *o, Op *op)
{
	const char *prog = o->config->ssh_agent_confirm_program;
	Key *k = op->key;
	uv_process_options_t opt = { 0 };
	OpsConfirm *cf;
	char question[512];
	char *args[3], **env;
	size_t n_env = 0, m = 0;
	int r;

	if (!prog[0]) {
		finish(o, op, PROTO_E_DENIED,
		       "key '%s': constraint confirm: no ssh_agent_confirm_program is configured", k->info.label);
		return;
	}
	op = defer(o, op);
	if (!op)
		return;
	snprintf(question, sizeof(question), "Allow use of key %s (%s) by uid %d pid %d (%s)?", k->info.label,
	         k->info.fingerprint, (int)op->peer->uid, (int)op->peer->pid, op->peer->exe);
	while (environ[n_env])
		n_env++;
	cf = calloc(1, sizeof(*cf));
	env = calloc(n_env + 2, sizeof(*env));
	if (!cf || !env) {
		free(cf);
		free(env);
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	for (size_t i = 0; i < n_env; i++)
		if (strncmp(environ[i], "SSH_ASKPASS_PROMPT=", 19) != 0)
			env[m++] = environ[i];
	env[m] = (char *)"SSH_ASKPASS_PROMPT=confirm";
	args[0] = (char *)prog;
	args[1] = question;
	args[2] = NULL;
	opt.file = prog;
	opt.args = args;
	opt.env = env;
	opt.exit_cb = confirm_exit;
	cf->ops = o;
	cf->op = op;
	cf->proc.data = cf;
	r = uv_spawn(o->loop, &cf->proc, &opt);
	free(env);
	if (r < 0) {
		log_err("cannot run %s: %s", prog, uv_strerror(r));
		uv_close((uv_handle_t *)&cf->proc, confirm_closed);
		finish(o, op, PROTO_E_DENIED, "key '%s': constraint confirm: the confirm program could not run",
		       k->info.label);
	}
}

/* ---- private-key operations: sign, dh (both sockets) ------------------------ */

static Key *find_pk(Ops *o, const uint8_t pk[32])
{
	for (size_t i = 0; i < o->ks->n_keys; i++) {
		Key *k = o->ks->keys[i];

		/* public data: memcmp is fine */
		if (!k->pending && !k->removed && k->info.type == PROTO_KEY_ED25519 &&
		    memcmp(k->info.public_key, pk, 32) == 0)
			return k;
	}
	return NULL;
}

/* the key an op names, or NULL (op answered). @hide: a key the peer may
 * not see is not found (key.public); for a use or a delete of the key its
 * rules answer instead (denied, naming the rule) */
static Key *op_key(Ops *o, Op *op, bool hide)
{
	const char *label = op_label(op);
	Key *k = label ? keystore_find(o->ks, label) : find_pk(o, op->pk);

	if (!k || (hide && !may_see(o, op->peer, k))) {
		if (label)
			finish(o, op, PROTO_E_NOT_FOUND, "no key labelled '%s'", label);
		else
			finish(o, op, PROTO_E_NOT_FOUND, "no such key");
		return NULL;
	}
	return k;
}

/* the exes rule is checked against the executable at accept and, for a
 * key that has the rule, the executable now (a process that execs after
 * connecting is not the one that connected). Not a boundary against code
 * running as the same uid (docs/security.md). */
static bool exe_unchanged(const Op *op, char *why, size_t why_len)
{
	char *now;
	bool same;

	if (!op->key->policy.set || !op->key->policy.n_exes)
		return true;
	now = peer_exe(op->peer->pid);
	same = now && strcmp(now, op->peer->exe) == 0;
	if (!same)
		snprintf(why, why_len, "rule exes: the peer's executable changed since it connected");
	free(now);
	return same;
}

/* ---- age (docs/age.md) ---------------------------------------------------------- */

/* age.unwrap's answer, once a worker (job_run; or pool_kick, alone) opened
 * the X25519 stanza with the key: sigild runs X25519, HKDF and the AEAD,
 * and the shared secret stays in sigild */
static void age_unwrapped(Ops *o, Op *op)
{
	if (op->r == -EDOM) {
		snprintf(op->why, sizeof(op->why), "small-order share");
		finish(o, op, PROTO_E_INVALID_KEY, "the stanza's share has small order (the shared secret would be zero)");
	} else if (op->r) {
		/* the tag: the stanza was made for another key (or altered);
		 * job_run wiped the file key */
		finish(o, op, PROTO_E_NO_MATCH, "the stanza does not open with key '%s' (not for this identity)",
		       op->key->info.label);
	} else {
		finish(o, op, PROTO_OK, NULL);
	}
}

/* the recipient of key.export_wrapped. Return: false when it is not an
 * age X25519 recipient (@pk: its public key otherwise) */
static bool age_recipient(const char *rcpt, uint8_t pk[AGEFILE_KEY_LEN + 1])
{
	char hrp[BECH32_HRP_MAX + 1];
	size_t n = 0;

	return bech32_decode(hrp, pk, AGEFILE_KEY_LEN + 1, &n, rcpt, strlen(rcpt)) == 0 && strcmp(hrp, "age") == 0 &&
	       n == AGEFILE_KEY_LEN;
}

/* key.export_wrapped, admitted: the key (type, label, seed, policy) in an
 * age file for the recipient; the seed never leaves sigild in clear */
static void export_wrapped(Ops *o, Op *op)
{
	const ProtoRequest *q = op->q;
	Key *key = op->key;
	uint8_t pk[AGEFILE_KEY_LEN + 1];
	AgeBuf pt = AGEBUF_NULL(pt), file = AGEBUF_NULL(file);
	AgeKey *k;
	int r;

	if (!age_recipient(q->u.key_export_wrapped.recipient, pk)) {
		finish(o, op, PROTO_E_BAD_REQUEST, "field 'recipient' is not an age X25519 recipient (age1...)");
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	k->type = (uint8_t)key->info.type;
	k->exportable = key->info.exportable;
	memcpy(k->label, key->info.label, sizeof(k->label));
	memcpy(k->seed, key->secret->seed, sizeof(k->seed));
	r = policy_encode(k->policy, sizeof(k->policy), &key->policy);
	if (r >= 0) {
		k->policy_len = (size_t)r;
		r = agefile_key_encode(&pt, k);
	}
	if (!r)
		r = agefile_encrypt(&file, pk, pt.data, pt.len, q->u.key_export_wrapped.armor);
	sodium_memzero(k, sizeof(*k));
	free(k);
	agefile_buf_deinit(&pt);
	if (r == -EINVAL) {
		snprintf(op->why, sizeof(op->why), "small-order recipient");
		finish(o, op, PROTO_E_INVALID_KEY, "the recipient has small order");
	} else if (r) {
		finish(o, op, PROTO_E_INTERNAL, "cannot make the age file: %s", strerror(-r));
	} else {
		/* the op owns the file until ops_op_deinit() */
		op->file = file.data;
		op->file_len = file.cap;
		op->resp.u.key_export_wrapped.file = (ProtoBytes){ file.data, file.len };
		finish(o, op, PROTO_OK, NULL);
	}
}

static void new_key(Ops *o, Op *op);

/*
 * key.import_wrapped: the file is opened with the X25519 key it names (an
 * unwrap under that key's rules, audited age-unwrap), then the op becomes
 * a key.import of the key the file held, owned by the caller.
 */
static void do_import_wrapped(Ops *o, Op *op)
{
	PolicyPeer pp = { .uid = op->peer->uid, .gid = op->peer->gid, .pid = op->peer->pid, .exe = op->peer->exe };
	char why[PROTO_MESSAGE_MAX - 80], label[PROTO_LABEL_MAX + 1];
	AgeBuf pt = AGEBUF_NULL(pt);
	ProtoRequest *q;
	OpsWrapped *w;
	Key *k;
	int r;

	if (is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return;
	}
	k = op_key(o, op, false);
	if (!k)
		return;
	op->key = key_ref(k);
	if (!k->secret) {
		finish(o, op, PROTO_E_LOCKED, "key '%s' is not open: unlock sigild first", k->info.label);
		return;
	}
	if (k->info.type != PROTO_KEY_X25519) {
		finish(o, op, PROTO_E_WRONG_TYPE, "key '%s' is %s; age needs an x25519 key", k->info.label,
		       proto_key_type_name(k->info.type));
		return;
	}
	if (!policy_check(&k->policy, &k->use, PROTO_OP_AGE_UNWRAP, &pp, (int64_t)time(NULL), uv_now(o->loop), why,
	                  sizeof(why)) ||
	    !exe_unchanged(op, why, sizeof(why))) {
		snprintf(op->why, sizeof(op->why), "%s", why);
		finish(o, op, PROTO_E_DENIED, "key '%s': %s", k->info.label, why);
		return;
	}
	if (!op->counted && !admit(o, op))
		return;
	/* the kept copy decoded its own frame: only the copy is rewritten */
	op = defer(o, op);
	if (!op)
		return;
	q = op->q;
	if (!policy_charge(&k->policy, &k->use, uv_now(o->loop), why, sizeof(why))) {
		snprintf(op->why, sizeof(op->why), "%s", why);
		finish(o, op, PROTO_E_DENIED, "key '%s': %s", k->info.label, why);
		return;
	}
	o->last_key_use_ms = uv_now(o->loop);
	w = calloc(1, sizeof(*w));
	if (!w) {
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	op->wrapped = w;
	r = agefile_decrypt(&pt, k->secret->seed, q->u.key_import_wrapped.file.data, q->u.key_import_wrapped.file.len);
	if (!r && (agefile_key_decode(&w->key, pt.data, pt.len) || w->key.type > PROTO_KEY_X25519 ||
	           policy_decode(&w->policy, w->key.policy, w->key.policy_len)))
		r = -EPROTO;
	agefile_buf_deinit(&pt);
	if (r) {
		const char *what = r == -ENOENT ? "the file is not for this key"
		                   : r == -EBADMSG ? "the file was altered or truncated"
		                   : r == -EPROTO  ? "the file holds no sigil key"
		                   : r == -ENOMEM  ? "out of memory"
		                                   : "not an age file";

		snprintf(op->why, sizeof(op->why), "%s", what);
		finish(o, op, r == -ENOMEM ? PROTO_E_INTERNAL : r == -ENOENT ? PROTO_E_NO_MATCH : PROTO_E_INVALID_KEY,
		       "cannot open the age file with key '%s': %s", k->info.label, what);
		return;
	}
	memcpy(label, q->u.key_import_wrapped.label, sizeof(label));
	audit_op(op, k, NULL, PROTO_OK, label);
	op->key = key_unref(op->key);
	/* now a key.import of what the file holds, under the caller's label */
	op->kind = OP_KEY_IMPORT;
	q->method = PROTO_METHOD_KEY_IMPORT;
	memset(&q->u.key_import, 0, sizeof(q->u.key_import));
	q->u.key_import.type = (ProtoKeyType)w->key.type;
	memcpy(q->u.key_import.label, label, sizeof(label));
	q->u.key_import.seed = w->key.seed;
	q->u.key_import.exportable = w->key.exportable;
	q->u.key_import.policy = w->policy.set ? &w->policy : NULL;
	new_key(o, op);
}

/* sign, dh, export and the agent's sign: the key's rules and constraints,
 * then (@confirmed or no confirm constraint) the operation */
static void use_key(Ops *o, Op *op, bool confirmed)
{
	Key *k = op->key;
	const OpsCons *c = cons_of(k);
	bool agent = op->kind == OP_AGENT_SIGN;
	bool export = op->kind == OP_KEY_EXPORT || op->kind == OP_KEY_EXPORT_WRAPPED;
	unsigned pop = op->kind == OP_DH ? PROTO_OP_DH : op->kind == OP_AGE_UNWRAP ? PROTO_OP_AGE_UNWRAP
	               : export ? 0 : PROTO_OP_SIGN;
	PolicyPeer pp = { .uid = op->peer->uid, .gid = op->peer->gid, .pid = op->peer->pid, .exe = op->peer->exe };
	char why[PROTO_MESSAGE_MAX - 80];

	/* the state may have changed while the confirm program ran */
	if (is_locked(o) || !k->secret) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return;
	}
	if (k->removed) {
		finish(o, op, PROTO_E_NOT_FOUND, "no key labelled '%s'", k->info.label);
		return;
	}
	if (!policy_check(&k->policy, &k->use, pop, &pp, (int64_t)time(NULL), uv_now(o->loop), why, sizeof(why)) ||
	    !exe_unchanged(op, why, sizeof(why))) {
		snprintf(op->why, sizeof(op->why), "%s", why);
		finish(o, op, PROTO_E_DENIED, "key '%s': %s", k->info.label, why);
		return;
	}
	if (c && c->dest) {
		/* a destination-constrained key serves only the agent sessions
		 * it was added for */
		if (!agent) {
			finish(o, op, PROTO_E_DENIED, "key '%s': constraint destination: it signs only through the "
			       "ssh-agent socket, for the hosts it was added for", k->info.label);
			return;
		}
		if (!agent_restrict_signs(op->session, c->dest, k->info.public_key, op->q->u.sign.message.data,
		                          op->q->u.sign.message.len)) {
			log_info("ssh-agent: refused a signature by destination-constrained key '%s' for uid %d pid %d",
			         k->info.label, (int)op->peer->uid, (int)op->peer->pid);
			finish(o, op, PROTO_E_DENIED, "key '%s': constraint destination", k->info.label);
			return;
		}
	}
	if (export) {
		if (!k->info.exportable) {
			snprintf(op->why, sizeof(op->why), "rule exportable");
			finish(o, op, PROTO_E_DENIED, "key '%s': rule exportable: the key is not exportable", k->info.label);
			return;
		}
		if (op->kind == OP_KEY_EXPORT_WRAPPED) {
			export_wrapped(o, op);
			return;
		}
		memcpy(op->resp.u.key_export.seed, k->secret->seed, PROTO_KEY_LEN);
		finish(o, op, PROTO_OK, NULL);
		return;
	}
	if (c && c->confirm && !confirmed) {
		confirm(o, op);
		return;
	}
	if (!op->counted && !admit(o, op))
		return;
	/* performed now: the quota is charged now, and only now */
	if (!policy_charge(&k->policy, &k->use, uv_now(o->loop), why, sizeof(why))) {
		snprintf(op->why, sizeof(op->why), "%s", why);
		finish(o, op, PROTO_E_DENIED, "key '%s': %s", k->info.label, why);
		return;
	}
	o->last_key_use_ms = uv_now(o->loop);
	/* sign, dh and age.unwrap: on the pool (the key's reference and the
	 * key job keep its secret alive and lock waiting); alone in its loop
	 * iteration, a short one runs in place (pool_kick) */
	to_pool(o, op);
}

/* the signature of an allowed sign or agent sign (loop thread or worker) */
static int sign_now(Op *op)
{
	const sigil_ed25519_expanded *ek = &op->key->secret->ed;
	const ProtoBytes *m = &op->q->u.sign.message, *ctx = &op->q->u.sign.context;
	uint8_t *sig = op->resp.u.sign.signature;

	switch (sign_mode(op)) {
	case PROTO_MODE_PURE:
		sigil_ed25519_sign_expanded(sig, m->data, m->len, ek);
		return 0;
	case PROTO_MODE_CTX:
		return sigil_ed25519ctx_sign_expanded(sig, m->data, m->len, ctx->data, ctx->len, ek);
	case PROTO_MODE_PH:
		if (op->q->u.sign.prehashed)
			return sigil_ed25519ph_sign_prehashed_expanded(sig, m->data, ctx->data, ctx->len, ek);
		return sigil_ed25519ph_sign_expanded(sig, m->data, m->len, ctx->data, ctx->len, ek);
	}
	return -1;
}

/* loop thread or worker: public data only */
static bool verify_now(const Op *op)
{
	const ProtoRequest *q = op->q;
	const ProtoBytes *m = &q->u.verify.message, *ctx = &q->u.verify.context;
	sigil_ed25519_policy pol = policy_of(q->u.verify.policy);
	int v = -1;

	switch (q->u.verify.mode) {
	case PROTO_MODE_PURE:
		v = sigil_ed25519_verify(q->u.verify.signature, m->data, m->len, q->u.verify.public_key, pol);
		break;
	case PROTO_MODE_CTX:
		v = sigil_ed25519ctx_verify(q->u.verify.signature, m->data, m->len, ctx->data, ctx->len,
		                            q->u.verify.public_key, pol);
		break;
	case PROTO_MODE_PH:
		if (q->u.verify.prehashed)
			v = sigil_ed25519ph_verify_prehashed(q->u.verify.signature, m->data, ctx->data, ctx->len,
			                                     q->u.verify.public_key, pol);
		else
			v = sigil_ed25519ph_verify(q->u.verify.signature, m->data, m->len, ctx->data, ctx->len,
			                           q->u.verify.public_key, pol);
		break;
	}
	return v == 0;
}

static void do_key_use(Ops *o, Op *op, ProtoKeyType want)
{
	Key *k;

	if (is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return;
	}
	k = op_key(o, op, false);
	if (!k)
		return;
	op->key = key_ref(k);
	if (!k->secret) {
		finish(o, op, PROTO_E_LOCKED, "key '%s' is not open: unlock sigild first", k->info.label);
		return;
	}
	if (op->kind != OP_KEY_EXPORT && op->kind != OP_KEY_EXPORT_WRAPPED && k->info.type != want) {
		finish(o, op, PROTO_E_WRONG_TYPE, "key '%s' is %s; %s needs an %s key", k->info.label,
		       proto_key_type_name(k->info.type), op->kind == OP_DH ? "dh" : op->kind == OP_AGE_UNWRAP ? "age" : "sign",
		       proto_key_type_name(want));
		return;
	}
	use_key(o, op, false);
}

/* ---- reading: status, lists ----------------------------------------------------- */

static void do_status(Ops *o, Op *op)
{
	ProtoStatus *st = &op->resp.u.status;
	size_t n = 0;

	for (size_t i = 0; i < o->ks->n_keys; i++)
		n += may_see(o, op->peer, o->ks->keys[i]);
	*st = (ProtoStatus){
		.keys = n,
		.locked = is_locked(o),
		.inflight = op->peer->admin ? o->inflight : op->client->inflight,
		.uptime_s = (uv_now(o->loop) - o->start_ms) / 1000,
		.workers = o->workers,
		.requests = op->peer->admin ? o->requests : 0,
	};
	op->resp.status_buffered_bytes = op->peer->admin ? o->inflight_bytes : 0;
	if (o->status)
		o->status(o->status_ctx, op, st, &op->resp.status_buffered_bytes);
	finish(o, op, PROTO_OK, NULL);
}

/* the agent's list: Ed25519 keys this connection may see, whose policy lets
 * this peer sign, and whose destination constraints permit this session */
static bool agent_lists(Ops *o, const Op *op, const Key *k)
{
	PolicyPeer pp = { .uid = op->peer->uid, .gid = op->peer->gid, .pid = op->peer->pid, .exe = op->peer->exe };
	const OpsCons *c = cons_of(k);
	char why[8];

	return k->info.type == PROTO_KEY_ED25519 && may_see(o, op->peer, k) &&
	       policy_check(&k->policy, &k->use, PROTO_OP_SIGN, &pp, (int64_t)time(NULL), uv_now(o->loop), why,
	                    sizeof(why)) &&
	       agent_restrict_lists(op->session, c ? c->dest : NULL);
}

/* agent_certs_list(): a certificate is listed while its key is */
typedef struct ListCtx {
	Ops *o;
	const Op *op;
} ListCtx;

static bool cert_listed(void *ctx, const uint8_t pk[32])
{
	ListCtx *lc = ctx;
	Key *k = find_pk(lc->o, pk);

	return k && agent_lists(lc->o, lc->op, k);
}

/* the agent list's certificates (after the keys), as OpenSSH's agent */
static int list_certs(Ops *o, Op *op)
{
	ListCtx lc = { o, op };
	AgentCertRef *refs;
	size_t n;

	if (is_locked(o))
		return 0;
	n = agent_certs_list(o->certs, NULL, 0, cert_listed, &lc);
	if (!n)
		return 0;
	refs = calloc(n, sizeof(*refs));
	op->certs = calloc(n, sizeof(*op->certs));
	if (!refs || !op->certs) {
		free(refs);
		return -ENOMEM;
	}
	n = agent_certs_list(o->certs, refs, n, cert_listed, &lc);
	for (size_t i = 0; i < n; i++)
		op->certs[i] = (OpsCertInfo){ refs[i].blob, refs[i].blob_len, refs[i].comment, refs[i].comment_len };
	op->n_certs = n;
	free(refs);
	return 0;
}

/* the keys @op's peer sees into its result: key.list's, or (@agent) the
 * agent list's with the certificates after them. Return: 0 or -ENOMEM */
static int list_keys(Ops *o, Op *op, bool agent)
{
	Keystore *ks = o->ks;
	size_t n = 0;

	op->list = calloc(ks->n_keys ? ks->n_keys : 1, sizeof(*op->list));
	if (!op->list)
		return -ENOMEM;
	for (size_t i = 0; i < ks->n_keys; i++) {
		Key *k = ks->keys[i];

		/* (a plain identity removed while its certificates stay is not listed) */
		if (agent ? !is_locked(o) && agent_lists(o, op, k) && !agent_certs_hidden(o->certs, k->info.public_key)
		          : may_see(o, op->peer, k))
			op->list[n++] = k->info;
	}
	if (agent && list_certs(o, op) < 0)
		return -ENOMEM;
	op->resp.u.key_list.keys = op->list;
	op->resp.u.key_list.n_keys = n;
	return 0;
}

static void relay(Ops *o, Op *op, OpsRelayKind kind, const char *what);

static void do_list(Ops *o, Op *op)
{
	bool agent = op->kind == OP_AGENT_LIST;

	if (agent && op->relay && !is_locked(o)) {
		/* with the upstream's: sigil's part is read when it answered */
		relay(o, op, OPS_RELAY_LIST, "identities");
		return;
	}
	if (list_keys(o, op, agent) < 0)
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
	else
		finish(o, op, PROTO_OK, NULL);
}

/* ---- changing keys ------------------------------------------------------------ */

/* generate, import (admitted): the label reserved, the key made on the pool */
static void new_key(Ops *o, Op *op)
{
	ProtoRequest *q = op->q;
	bool gen = op->kind == OP_KEY_GENERATE;
	const char *label = gen ? q->u.key_generate.label : q->u.key_import.label;
	const ProtoKeyPolicy *policy = gen ? q->u.key_generate.policy : q->u.key_import.policy;
	Key *key = NULL;
	int r;

	r = keystore_reserve(o->ks, label, gen ? q->u.key_generate.type : q->u.key_import.type,
	                     gen ? q->u.key_generate.exportable : q->u.key_import.exportable, (uint32_t)op->peer->uid,
	                     false, &key);
	if (r == KEYSTORE_E_EXISTS) {
		finish(o, op, PROTO_E_EXISTS, "a key labelled '%s' exists", label);
		return;
	}
	if (r == KEYSTORE_E_LOCKED) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: unlock it first (new keys are sealed)");
		return;
	}
	if (r) {
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	if (policy) { /* pending: stored by keystore_materialize() */
		key->policy = *policy;
		key->info.policy = &key->policy;
	}
	op->key = key;
	to_pool(o, op);
}

static void do_new_key(Ops *o, Op *op)
{
	if (!admit(o, op))
		return;
	new_key(o, op);
}

static void do_delete(Ops *o, Op *op)
{
	/* (its label is no secret: key.import of it says exists) */
	Key *k = op_key(o, op, false);
	int r;

	if (!k)
		return;
	op->key = key_ref(k);
	if (!may_manage(op->peer, k)) {
		finish(o, op, PROTO_E_DENIED, "key '%s' belongs to uid %u: only its owner or an admin may delete it",
		       k->info.label, (unsigned)k->info.owner);
		return;
	}
	r = key_remove(o, k);
	if (r)
		finish(o, op, PROTO_E_INTERNAL, "cannot remove the key file: %s", r < 0 ? strerror(-r) : "not found");
	else
		finish(o, op, PROTO_OK, NULL);
}

/* a free label for an ssh-added key: its comment if that is a free valid
 * label, else "ssh-" and the first 8 bytes of the public key in hex */
static bool pick_label(Ops *o, const OpsAgentAdd *a, const uint8_t pk[32], char out[PROTO_LABEL_MAX + 1])
{
	if (a->comment[0]) {
		memcpy(out, a->comment, sizeof(a->comment));
		if (!keystore_find(o->ks, out))
			return true;
	}
	memcpy(out, "ssh-", 4);
	sodium_bin2hex(out + 4, PROTO_LABEL_MAX + 1 - 4, pk, 8);
	return !keystore_find(o->ks, out);
}

/* an ssh-add succeeded: its certificate is kept with the key (persisted
 * where the key is: with a key file); a plain add shows a plain identity
 * removed while its certificates stayed again */
static void keep_cert(Ops *o, Op *op, const Key *k)
{
	int r;

	if (!op->cert) {
		agent_certs_unhide(o->certs, k->info.public_key);
		return;
	}
	r = agent_certs_add(o->certs, k->info.public_key, op->cert, op->cert_len, op->add.cert_comment,
	                    op->add.cert_comment_len, !k->memory_only);
	if (r < 0)
		log_warn("ssh-agent: cannot keep a certificate of key '%s': %s", k->info.label, strerror(-r));
	else
		log_info("ssh-agent: added a certificate of key '%s'%s", k->info.label,
		         k->memory_only ? ", in memory only" : "");
}

/* the certificate an ssh-add brings: well formed, its CA signature valid,
 * certifying the very key it comes with */
static bool cert_admitted(Ops *o, Op *op)
{
	AgentCertInfo ci;

	if (!op->cert)
		return true;
	if (agent_cert_parse(op->cert, op->cert_len, &ci) < 0) {
		finish(o, op, PROTO_E_INVALID_KEY, "a malformed certificate (or its CA signature does not verify)");
		return false;
	}
	if (memcmp(ci.pk, op->pk, 32) != 0) {
		finish(o, op, PROTO_E_INVALID_KEY, "the certificate does not certify the key sent with it");
		return false;
	}
	return true;
}

static bool has_constraints(const OpsAgentAdd *a)
{
	return a->lifetime || a->confirm || a->dest;
}

/* ssh-add of a key sigild has: the owner or an admin, from a connection
 * that may see it, with the private half of that very key; its
 * constraints are then replaced (as OpenSSH) */
static void readd(Ops *o, Op *op, Key *k)
{
	sigil_ed25519_expanded ek;
	bool same;

	op->key = key_ref(k);
	if (!may_manage(op->peer, k) || !agent_lists(o, op, k)) {
		finish(o, op, PROTO_E_DENIED, "key '%s' may not be added again by this peer or connection", k->info.label);
		return;
	}
	/* (inline: one fixed-base multiplication, ~6 us) */
	sigil_ed25519_expand(&ek, op->add.seed);
	same = sodium_memcmp(ek.pk, k->info.public_key, 32) == 0;
	sigil_wipe(&ek, sizeof(ek));
	if (!same) {
		finish(o, op, PROTO_E_INVALID_KEY, "the private half does not give the public key of '%s'", k->info.label);
		return;
	}
	if (!k->memory_only && has_constraints(&op->add)) {
		/* its constraints would be lost at the next start */
		finish(o, op, PROTO_E_DENIED, "key '%s' has a key file: constraints need a memory-only key "
		       "(delete it first)", k->info.label);
		return;
	}
	if (cons_set(o, k, &op->add) < 0) {
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	keep_cert(o, op, k);
	finish(o, op, PROTO_OK, NULL);
}

static void do_agent_add(Ops *o, Op *op)
{
	OpsAgentAdd *a = &op->add;
	char label[PROTO_LABEL_MAX + 1];
	bool memory_only;
	Key *k;
	int r;

	if (is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked");
		return;
	}
	if (a->confirm && !o->config->ssh_agent_confirm_program[0]) {
		finish(o, op, PROTO_E_DENIED, "constraint confirm: no ssh_agent_confirm_program is configured");
		return;
	}
	if (!cert_admitted(o, op))
		return;
	k = find_pk(o, op->pk);
	if (k) {
		readd(o, op, k);
		return;
	}
	if (!pick_label(o, a, op->pk, label)) {
		finish(o, op, PROTO_E_EXISTS, "no free label for the key");
		return;
	}
	memory_only = !o->config->ssh_agent_persist || has_constraints(a);
	if (!admit(o, op))
		return;
	r = keystore_reserve(o->ks, label, PROTO_KEY_ED25519, false, (uint32_t)op->peer->uid, memory_only, &k);
	if (r) {
		finish(o, op, r == KEYSTORE_E_LOCKED ? PROTO_E_LOCKED : r == KEYSTORE_E_EXISTS ? PROTO_E_EXISTS
		                                                                              : PROTO_E_INTERNAL,
		       "cannot add the key");
		return;
	}
	op->key = k;
	to_pool(o, op);
}

static void add_done(Ops *o, Op *op)
{
	Key *k = op->key;

	if (op->r) {
		if (op->r == -EINVAL)
			log_info("ssh-agent: refused a key whose private part does not match its public key");
		else
			log_err("ssh-agent: cannot store key '%s': %s", k->info.label, strerror(-op->r));
		keystore_abort(o->ks, k);
		finish(o, op, op->r == -EINVAL ? PROTO_E_INVALID_KEY : PROTO_E_INTERNAL,
		       op->r == -EINVAL ? "the private half does not give the public key" : "cannot store the key");
		return;
	}
	keystore_commit(o->ks, k);
	if (cons_set(o, k, &op->add) < 0) {
		/* a key that cannot keep its constraints must not stay */
		key_remove(o, k);
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	log_info("ssh-agent: added key '%s' (%s) for uid %d%s", k->info.label, k->info.fingerprint, (int)op->peer->uid,
	         k->memory_only ? ", in memory only" : "");
	keep_cert(o, op, k);
	finish(o, op, PROTO_OK, NULL);
}

/* did the requests of @s come through a forwarded agent (a session bound
 * for forwarding)? */
static bool forwarded(const AgentSession *s)
{
	for (size_t i = 0; s && i < s->n_binds; i++)
		if (s->binds[i].forwarding)
			return true;
	return false;
}

/* may this agent connection remove @k? (audit: one line per key) */
static bool agent_may_remove(Ops *o, const Op *op, const Key *k, const char **why)
{
	if (!agent_lists(o, op, k)) {
		*why = "not visible to this connection";
		return false;
	}
	if (!may_manage(op->peer, k)) {
		*why = "only its owner or an admin may remove it";
		return false;
	}
	if (!k->memory_only && forwarded(op->session)) {
		*why = "a key with a key file is not removed through a forwarded agent";
		return false;
	}
	return true;
}

/* the 51-byte ssh-ed25519 public key blob of @pk */
static void plain_blob(const uint8_t pk[32], uint8_t out[51])
{
	static const char type[] = "ssh-ed25519";

	out[0] = out[1] = out[2] = 0;
	out[3] = 11;
	memcpy(out + 4, type, 11);
	out[15] = out[16] = out[17] = 0;
	out[18] = 32;
	memcpy(out + 19, pk, 32);
}

/* ---- the upstream agent (OP_AGENT_RELAY) ----------------------------------- */

/* does sigild hold the identity an agent op names (a key, or a
 * certificate of one)? Then its own rules answer, never the upstream */
static bool holds(Ops *o, const Op *op)
{
	uint8_t pk[32];
	bool is_cert;

	if (!op->cert)
		return find_pk(o, op->pk) != NULL;
	return agent_cert_key_of(op->cert, op->cert_len, pk, &is_cert) == 0 && find_pk(o, pk) != NULL;
}

/* ssh-keygen -l's fingerprint of a public key blob */
static void blob_fingerprint(char out[PROTO_FINGERPRINT_MAX], const uint8_t *blob, size_t len)
{
	uint8_t digest[crypto_hash_sha256_BYTES];

	crypto_hash_sha256(digest, blob, len);
	memcpy(out, "SHA256:", 7);
	sodium_bin2base64(out + 7, PROTO_FINGERPRINT_MAX - 7, digest, sizeof(digest),
	                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

/* the answers that the connection waits for (not a copy, not a listing):
 * in the in-flight limits like sigil's own */
static bool relay_waited(OpsRelayKind k)
{
	return k == OPS_RELAY_SIGN || k == OPS_RELAY_ADD || k == OPS_RELAY_REMOVE || k == OPS_RELAY_EXTENSION;
}

/* the upstream's part is over (and sigil's keystore free): the result */
static void relay_end(Ops *o, Op *op)
{
	if (op->up.kind == OPS_RELAY_LIST) {
		/* sigil's identities first, as they are now; locked meanwhile:
		 * the upstream's are left out too */
		if (is_locked(o))
			op->up.result = OPS_RELAY_UNREACHABLE;
		if (list_keys(o, op, true) < 0)
			finish(o, op, PROTO_E_INTERNAL, "out of memory");
		else
			finish(o, op, PROTO_OK, NULL);
		return;
	}
	if (op->up.result == OPS_RELAY_UNREACHABLE && op->up.kind != OPS_RELAY_QUERY && op->up.kind != OPS_RELAY_COPY)
		finish(o, op, PROTO_E_BUSY, "the upstream agent did not answer");
	else
		finish(o, op, PROTO_OK, NULL); /* its answer is the answer */
}

/*
 * relay() - @op goes to the upstream agent (@kind and @what: what it
 * became; OPS_RELAY_NONE: the front-end's kind). The peer is admitted
 * (dispatch); sigil is not locked, except for a copy (sigil answered from
 * its own state); an answer the connection waits for is within the
 * in-flight limits. The op is kept until ops_relay_done().
 */
static void relay(Ops *o, Op *op, OpsRelayKind kind, const char *what)
{
	op->kind = OP_AGENT_RELAY;
	if (kind != OPS_RELAY_NONE) {
		op->up.kind = kind;
		snprintf(op->up.what, sizeof(op->up.what), "%s", what);
	}
	if (!op->relay || op->up.kind == OPS_RELAY_NONE) {
		finish(o, op, PROTO_E_BAD_REQUEST, "no upstream agent");
		return;
	}
	if (op->up.kind != OPS_RELAY_COPY && is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: nothing but copies goes to the upstream agent");
		return;
	}
	if (relay_waited(op->up.kind) && !op->counted && !admit(o, op))
		return;
	op = defer(o, op);
	if (!op)
		return;
	op->up.sent = true;
	if (op->relay(op) < 0) {
		op->up.result = OPS_RELAY_UNREACHABLE;
		relay_end(o, op);
	}
}

/* a sign or remove of an identity sigil does not hold: the upstream's */
static void relay_key(Ops *o, Op *op, OpsRelayKind kind, const char *what)
{
	uint8_t blob[51];

	if (op->cert) {
		blob_fingerprint(op->up.fp, op->cert, op->cert_len);
	} else {
		plain_blob(op->pk, blob);
		blob_fingerprint(op->up.fp, blob, sizeof(blob));
	}
	relay(o, op, kind, what);
}

void ops_relay_done(Op *op, OpsRelayResult r)
{
	Ops *o = op->ops;

	op->up.result = r;
	if (op->up.kind == OPS_RELAY_LIST && o->ks_busy) {
		/* an unlock or rekey holds the keystore: after it (dispatch) */
		park(o, op);
		return;
	}
	relay_end(o, op);
}

static void do_agent_remove(Ops *o, Op *op)
{
	const char *why = NULL;
	uint8_t blob[51];
	bool is_cert = false;
	Key *k;

	if (op->relay && !holds(o, op)) {
		relay_key(o, op, OPS_RELAY_REMOVE, "remove");
		return;
	}
	if (is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked");
		return;
	}
	/* a certificate names its key (whether sigild holds it is below) */
	if (op->cert && agent_cert_key_of(op->cert, op->cert_len, op->pk, &is_cert) < 0) {
		finish(o, op, PROTO_E_NOT_FOUND, "no such key");
		return;
	}
	k = find_pk(o, op->pk);
	if (!k || !agent_lists(o, op, k)) {
		finish(o, op, PROTO_E_NOT_FOUND, "no such key");
		return;
	}
	op->key = key_ref(k);
	if (!agent_may_remove(o, op, k, &why)) {
		finish(o, op, PROTO_E_DENIED, "key '%s': %s", k->info.label, why);
		return;
	}
	/* as OpenSSH's agent: a certificate removes that certificate only; the
	 * plain key of a key with certificates removes the plain identity
	 * only; the last certificate of such a key removes the key */
	if (!op->cert)
		plain_blob(op->pk, blob);
	switch (agent_certs_remove(o->certs, op->cert ? op->cert : blob, op->cert ? op->cert_len : sizeof(blob),
	                           op->pk)) {
	case AGENT_CERTS_REMOVED:
		finish(o, op, PROTO_OK, NULL);
		return;
	case AGENT_CERTS_NOT_FOUND:
		finish(o, op, PROTO_E_NOT_FOUND, "no such identity");
		return;
	default: /* the key itself */
		break;
	}
	if (key_remove(o, k))
		finish(o, op, PROTO_E_INTERNAL, "cannot remove the key");
	else
		finish(o, op, PROTO_OK, NULL);
}

static void do_agent_remove_all(Ops *o, Op *op)
{
	Keystore *ks = o->ks;
	bool ok = true;

	if (is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "sigild is locked");
		return;
	}
	for (size_t i = ks->n_keys; i-- > 0;) {
		Key *k = i < ks->n_keys ? ks->keys[i] : NULL;
		const char *why = NULL;

		if (!k || !agent_lists(o, op, k))
			continue;
		if (!agent_may_remove(o, op, k, &why)) {
			audit_op(op, k, NULL, PROTO_E_DENIED, why);
			continue;
		}
		audit_op(op, k, NULL, PROTO_OK, NULL);
		if (key_remove(o, k))
			ok = false;
	}
	if (ok)
		finish(o, op, PROTO_OK, NULL);
	else
		finish(o, op, PROTO_E_INTERNAL, "cannot remove every key");
}

/* ---- the one lock ----------------------------------------------------------- */

static void lock_hash(const Ops *o, const uint8_t *pass, size_t len, uint8_t out[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, o->lock_salt, sizeof(o->lock_salt), 32);
	crypto_generichash_update(&st, pass, len);
	crypto_generichash_final(&st, out, 32);
	sigil_wipe(&st, sizeof(st));
}

static void dropped_at_lock(void *ctx, const Key *k)
{
	Ops *o = ctx;

	timer_cancel(o, k);
	agent_certs_forget(o->certs, k->info.public_key);
	audit_event(geteuid(), getpid(), "sigild", k->info.label, k->info.fingerprint, "delete", "ok",
	            "memory-only key dropped at lock");
}

static void lock_now(Ops *o, const char *who)
{
	if (!o->locked)
		log_info("locked by %s: decrypted keys wiped", who);
	keystore_lock(o->ks, dropped_at_lock, o);
	o->locked = true;
}

static void do_lock(Ops *o, Op *op)
{
	const ProtoRequest *q = op->q;
	char who[64];

	if (op->session && is_locked(o)) {
		finish(o, op, PROTO_E_LOCKED, "already locked");
		return;
	}
	if (q->u.lock.has_passphrase && !o->has_lock_pass) {
		randombytes_buf(o->lock_salt, sizeof(o->lock_salt));
		lock_hash(o, q->u.lock.passphrase.data, q->u.lock.passphrase.len, o->lock_hash);
		o->has_lock_pass = true;
	}
	snprintf(who, sizeof(who), "uid %d pid %d", (int)op->peer->uid, (int)op->peer->pid);
	lock_now(o, who);
	finish(o, op, PROTO_OK, NULL);
}

static void unlock_failed(Ops *o)
{
	uint64_t delay;

	if (o->unlock_failures < 1000)
		o->unlock_failures++;
	delay = (uint64_t)o->unlock_failures * OPS_UNLOCK_DELAY_MS;
	if (delay > OPS_UNLOCK_DELAY_MAX_MS)
		delay = OPS_UNLOCK_DELAY_MAX_MS;
	o->unlock_gate_ms = uv_now(o->loop) + delay;
}

static void on_gate(uv_timer_t *t)
{
	Ops *o = t->data;
	Op *list = o->gated_head;

	o->gated_head = o->gated_tail = NULL;
	while (list) {
		Op *op = list;

		list = op->next;
		op->next = NULL;
		if (o->shutting_down)
			finish(o, op, PROTO_E_BUSY, "sigild is shutting down");
		else
			dispatch(o, op, false);
	}
}

static void do_unlock(Ops *o, Op *op)
{
	const ProtoRequest *q = op->q;
	uint64_t now = uv_now(o->loop);

	if (op->session && !is_locked(o)) {
		finish(o, op, PROTO_E_DENIED, "not locked");
		return;
	}
	if (now < o->unlock_gate_ms) {
		/* a failed unlock delays the next one, from either socket */
		op = defer(o, op);
		if (!op)
			return;
		op->next = NULL;
		if (o->gated_head)
			o->gated_tail->next = op;
		else
			o->gated_head = op;
		o->gated_tail = op;
		uv_timer_start(&o->gate_timer, on_gate, o->unlock_gate_ms - now, 0);
		return;
	}
	if (o->has_lock_pass) {
		uint8_t h[32];
		bool ok = q->u.unlock.has_passphrase;

		if (ok) {
			lock_hash(o, q->u.unlock.passphrase.data, q->u.unlock.passphrase.len, h);
			ok = sigil_verify32(h, o->lock_hash) == 0;
			sigil_wipe(h, sizeof(h));
		}
		if (!ok) {
			unlock_failed(o);
			log_warn("unlock refused (wrong lock passphrase) for uid %d pid %d", (int)op->peer->uid,
			         (int)op->peer->pid);
			finish(o, op, PROTO_E_DENIED, "wrong passphrase: still locked (it was locked with a passphrase)");
			return;
		}
	}
	/* Argon2id (0.1-0.5 s) and key files: on the pool, the keystore held */
	to_pool(o, op);
}

static void unlock_done(Ops *o, Op *op)
{
	int r = op->r;

	if (r == KEYSTORE_E_WRONG) {
		unlock_failed(o);
		log_warn("unlock refused (wrong passphrase or master key) for uid %d pid %d", (int)op->peer->uid,
		         (int)op->peer->pid);
		finish(o, op, PROTO_E_DENIED, "wrong passphrase or master key: still locked");
	} else if (r == KEYSTORE_E_NEED_PASSPHRASE) {
		finish(o, op, PROTO_E_DENIED, "the keys are sealed under a passphrase: give it");
	} else if (r) {
		finish(o, op, PROTO_E_INTERNAL, "cannot read the master key (%s): see sigild's log",
		       r < 0 ? strerror(-r) : "malformed");
	} else {
		if (o->locked)
			log_info("unlocked by uid %d pid %d", (int)op->peer->uid, (int)op->peer->pid);
		o->locked = false;
		o->has_lock_pass = false;
		sigil_wipe(o->lock_hash, sizeof(o->lock_hash));
		o->unlock_failures = 0;
		o->unlock_gate_ms = 0;
		o->last_key_use_ms = uv_now(o->loop); /* the auto-lock clock restarts */
		finish(o, op, PROTO_OK, NULL);
	}
}

static void rekey_done(Ops *o, Op *op)
{
	int r = op->r;

	if (r == KEYSTORE_E_LOCKED)
		finish(o, op, PROTO_E_LOCKED, "sigild is locked: unlock it first");
	else if (r == KEYSTORE_E_NEED_PASSPHRASE)
		finish(o, op, PROTO_E_BAD_REQUEST, "the keys are sealed under a passphrase: give the new one "
		       "(or a new master key file)");
	else if (r == -EBUSY)
		finish(o, op, PROTO_E_BUSY, "a key is being generated; try again");
	else if (r == KEYSTORE_E_INVALID)
		finish(o, op, PROTO_E_BAD_REQUEST, "%s", op->why);
	else if (r == KEYSTORE_E_DENIED)
		finish(o, op, PROTO_E_DENIED, "%s", op->why);
	else if (r)
		finish(o, op, PROTO_E_INTERNAL, "rekey failed (the old master key stays): %s",
		       r < 0 ? strerror(-r) : "invalid");
	else {
		op->resp.u.rekey.keys = keystore_count(o->ks);
		finish(o, op, PROTO_OK, NULL);
	}
}

static void do_audit(Ops *o, Op *op)
{
	const ProtoRequest *q = op->q;
	size_t max = q->u.audit.limit < AUDIT_RING ? (size_t)q->u.audit.limit : AUDIT_RING;
	const char **lines = calloc(max ? max : 1, sizeof(*lines));

	if (!lines) {
		finish(o, op, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	op->resp.u.audit.n = audit_recent(lines, max);
	op->resp.u.audit.lines = lines;
	op->list = (ProtoKeyInfo *)(void *)lines; /* freed by ops_op_deinit */
	finish(o, op, PROTO_OK, NULL);
}

/* ---- the one function that decides ------------------------------------------ */

static bool admin_only(OpKind k)
{
	return k == OP_LOCK || k == OP_UNLOCK || k == OP_REKEY || k == OP_AUDIT;
}

static void dispatch(Ops *o, Op *op, bool resumed)
{
	if (!op->peer->admitted) {
		finish(o, op, PROTO_E_DENIED, "this user may not use sigild");
		return;
	}
	if (admin_only(op->kind) && !op->peer->admin) {
		finish(o, op, PROTO_E_DENIED, "%s is for admins (root, sigild's uid, admin_uids, admin_gids)",
		       op_names[op->kind]);
		return;
	}
	if (must_wait(o, op->kind, resumed)) {
		park(o, op);
		return;
	}
	switch (op->kind) {
	case OP_STATUS:
		do_status(o, op);
		break;
	case OP_KEY_LIST:
	case OP_AGENT_LIST:
		do_list(o, op);
		break;
	case OP_KEY_PUBLIC: {
		Key *k = op_key(o, op, true);

		if (k) {
			op->resp.u.key = k->info;
			finish(o, op, PROTO_OK, NULL);
		}
		break;
	}
	case OP_KEY_GENERATE:
	case OP_KEY_IMPORT:
		do_new_key(o, op);
		break;
	case OP_KEY_DELETE:
		do_delete(o, op);
		break;
	case OP_AGENT_SIGN:
		if (op->relay && !holds(o, op)) {
			relay_key(o, op, OPS_RELAY_SIGN, "sign");
			break;
		}
		/* a certificate sigild holds signs with its key; a plain identity
		 * removed while its certificates stay signs nothing */
		if (op->cert ? agent_certs_resolve(o->certs, op->cert, op->cert_len, op->pk) < 0
		             : agent_certs_hidden(o->certs, op->pk)) {
			finish(o, op, PROTO_E_NOT_FOUND, "no such key");
			break;
		}
		do_key_use(o, op, PROTO_KEY_ED25519);
		break;
	case OP_KEY_EXPORT:
	case OP_SIGN:
		do_key_use(o, op, PROTO_KEY_ED25519);
		break;
	case OP_DH:
	case OP_AGE_UNWRAP:
		do_key_use(o, op, PROTO_KEY_X25519);
		break;
	case OP_KEY_EXPORT_WRAPPED: {
		uint8_t pk[AGEFILE_KEY_LEN + 1];

		if (!age_recipient(op->q->u.key_export_wrapped.recipient, pk)) {
			snprintf(op->why, sizeof(op->why), "recipient");
			finish(o, op, PROTO_E_BAD_REQUEST, "field 'recipient' is not an age X25519 recipient (age1...)");
			break;
		}
		do_key_use(o, op, PROTO_KEY_ED25519); /* (any type: not checked for exports) */
		break;
	}
	case OP_KEY_IMPORT_WRAPPED:
		do_import_wrapped(o, op);
		break;
	case OP_VERIFY:
		if (!admit(o, op))
			break;
		to_pool(o, op);
		break;
	case OP_VERIFY_BATCH: {
		size_t n = op->q->u.verify_batch.n_items;

		if (!admit(o, op))
			break;
		op->valid = calloc(n ? n : 1, sizeof(bool));
		if (!op->valid) {
			finish(o, op, PROTO_E_INTERNAL, "out of memory");
			break;
		}
		op->resp.u.verify_batch.valid = op->valid;
		op->resp.u.verify_batch.n = n;
		to_pool(o, op);
		break;
	}
	case OP_LOCK:
		do_lock(o, op);
		break;
	case OP_UNLOCK:
		do_unlock(o, op);
		break;
	case OP_REKEY:
		to_pool(o, op);
		break;
	case OP_AUDIT:
		do_audit(o, op);
		break;
	case OP_AGENT_ADD:
		do_agent_add(o, op);
		break;
	case OP_AGENT_REMOVE:
		do_agent_remove(o, op);
		break;
	case OP_AGENT_REMOVE_ALL:
		do_agent_remove_all(o, op);
		break;
	case OP_AGENT_RELAY:
		if (op->up.sent)
			relay_end(o, op); /* answered while the keystore was held (parked) */
		else
			relay(o, op, OPS_RELAY_NONE, NULL);
		break;
	default:
		finish(o, op, PROTO_E_UNKNOWN_METHOD, "unknown operation");
		break;
	}
}

bool ops_submit(Ops *o, Op *op)
{
	op->ops = o;
	op->resp.error = PROTO_OK;
	op->was_kept = op->counted = false;
	op->key = NULL;
	op->valid = NULL;
	op->items = NULL;
	op->ivalid = NULL;
	op->list = NULL;
	op->file = NULL;
	op->wrapped = NULL;
	op->next = NULL;
	op->keystore_job = op->key_job = false;
	op->why[0] = '\0';
	op->up.sent = false;
	op->up.fp[0] = '\0';
	dispatch(o, op, false);
	return op->was_kept;
}

void ops_op_deinit(Op *op)
{
	op->key = key_unref(op->key);
	free(op->valid);
	op->valid = NULL;
	free(op->items);
	op->items = NULL;
	free(op->ivalid);
	op->ivalid = NULL;
	free(op->list);
	op->list = NULL;
	free(op->certs);
	op->certs = NULL;
	op->n_certs = 0;
	free(op->cert);
	op->cert = NULL;
	free(op->add.cert_comment);
	op->add.cert_comment = NULL;
	if (op->file) {
		sodium_memzero(op->file, op->file_len);
		free(op->file);
		op->file = NULL;
	}
	if (op->wrapped) {
		sodium_memzero(op->wrapped, sizeof(*op->wrapped));
		free(op->wrapped);
		op->wrapped = NULL;
	}
	op->add.dest = agent_restrict_free(op->add.dest);
	sigil_wipe(op->add.seed, sizeof(op->add.seed));
	if (op->kind == OP_DH)
		sigil_wipe(op->resp.u.dh.shared_secret, sizeof(op->resp.u.dh.shared_secret));
	else if (op->kind == OP_KEY_EXPORT)
		sigil_wipe(op->resp.u.key_export.seed, sizeof(op->resp.u.key_export.seed));
	else if (op->kind == OP_AGE_UNWRAP)
		sigil_wipe(op->resp.u.age_unwrap.file_key, sizeof(op->resp.u.age_unwrap.file_key));
}

void ops_init(Ops *o, uv_loop_t *loop, Keystore *ks, const Config *config, Pool *pool,
              const uint64_t *unwritten_total)
{
	memset(o, 0, sizeof(*o));
	o->loop = loop;
	o->ks = ks;
	o->config = config;
	o->pool = pool;
	o->workers = pool_workers(pool);
	o->unwritten_total = unwritten_total;
	o->start_ms = uv_now(loop);
	o->last_key_use_ms = o->start_ms;
	/* (NULL when out of memory: no certificates are kept) */
	o->certs = agent_certs_new(ks->statefd);
	uv_timer_init(loop, &o->gate_timer);
	o->gate_timer.data = o;
}

void ops_tick(Ops *o)
{
	if (o->auto_lock_ms && !o->locked && !o->ks_busy && !o->key_jobs && o->ks->dirfd >= 0 &&
	    uv_now(o->loop) - o->last_key_use_ms >= o->auto_lock_ms) {
		lock_now(o, "auto-lock");
		log_info("auto-lock: no key used for %llu s", (unsigned long long)(o->auto_lock_ms / 1000));
		audit_event(geteuid(), getpid(), "sigild", NULL, NULL, "lock", "ok", "auto-lock");
	}
}

bool ops_keystore_held(const Ops *o)
{
	return o->ks_busy;
}

void ops_shutdown(Ops *o)
{
	o->shutting_down = true;
	if (o->gated_head) {
		uv_timer_stop(&o->gate_timer);
		on_gate(&o->gate_timer); /* answered busy */
	}
	if (!o->ks_busy)
		settle(o); /* the parked ones, answered busy */
}

void ops_close(Ops *o)
{
	agent_certs_free(o->certs);
	o->certs = NULL;
	while (o->timers)
		timer_drop(o, o->timers);
	if (!uv_is_closing((uv_handle_t *)&o->gate_timer))
		uv_close((uv_handle_t *)&o->gate_timer, NULL);
}
