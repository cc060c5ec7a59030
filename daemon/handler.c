/* SPDX-License-Identifier: MIT */
/*
 * handler.c - dispatch of decoded requests
 *
 * Cheap methods (hello, status, key.list, key.public, key.delete, lock)
 * and the short private-key and verify operations (sign, dh, verify: 9-35
 * us of CPU) are answered at once on the loop thread: handing a request of
 * that size to a pool thread and back costs more than the request (two
 * thread wake-ups; docs/throughput.md). They are decoded in place in the
 * connection's read buffer into a Request on the stack: no allocation or
 * copy here (msgpack-c's unpacker still takes a zone in proto_request_decode).
 * verify_batch, key.generate, key.import, unlock and rekey (Argon2id,
 * 0.1-0.5 s) run on the libuv thread pool, so nothing waits behind them
 * (but requests that need the keystore wait for unlock and rekey: park()).
 * conn.c bounds the frames one connection runs per loop turn, so a
 * pipelining client does not hold the others up either. Answers may leave
 * in any order; the msgid matches them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sigil/crypto.h>

#include "age-ops.h"
#include "audit.h"
#include "log.h"
#include "policy.h"
#include "server.h"
#include "version.h"

static bool handle(Conn *c, Request *rq, size_t len, bool may_park);
static void unpark(Server *s);

static const char *const features[] = {
	"ed25519", "x25519", "ed25519ctx", "ed25519ph", "ed25519ph-prehashed",
	"verify_batch", "zip215", "lock", "age",
};

/* release what rq holds and wipe it; rq itself is the caller's */
static void request_clear(Request *rq)
{
	proto_request_deinit(&rq->req);
	if (rq->frame) {
		sigil_wipe(rq->frame, rq->frame_len);
		free(rq->frame);
	}
	free(rq->valid);
	age_ops_clear(rq);
	key_unref(rq->key);
	sigil_wipe(rq, sizeof(*rq));
}

static void request_free(Request *rq)
{
	if (!rq)
		return;
	request_clear(rq);
	free(rq);
}

static void reply_error(Conn *c, Request *rq, ProtoError code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void reply_error(Conn *c, Request *rq, ProtoError code, const char *fmt, ...)
{
	char msg[PROTO_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conn_send_error(c, true, rq->req.msgid, code, msg);
}

/* the audit line of a private-key operation or key change (audit.h) */
static void audit_rq(const Conn *c, const Key *key, const char *label, const char *op, const char *result,
                     const char *why)
{
	audit_event(c->uid, c->pid, c->exe, key ? key->info.label : label, key ? key->info.fingerprint : NULL, op,
	            result, why);
}

static sigil_ed25519_policy policy_of(ProtoPolicy p)
{
	return p == PROTO_POLICY_ZIP215 ? SIGIL_ED25519_ZIP215 : SIGIL_ED25519_STRICT;
}

/* the operation itself, on the loop thread (sign, dh, verify) or a worker
 * thread (the others): touches only rq and its key (and, for generate and
 * import, the pending key's file) */
static void request_run(Request *rq)
{
	ProtoRequest *q = &rq->req;
	ProtoResponse *p = &rq->resp;
	Server *s = rq->conn->server;

	rq->r = 0;
	switch (q->method) {
	case PROTO_METHOD_SIGN: {
		const sigil_ed25519_expanded *ek = &rq->key->secret->ed;
		const ProtoBytes *m = &q->u.sign.message, *ctx = &q->u.sign.context;
		uint8_t sig[PROTO_SIG_LEN];

		switch (q->u.sign.mode) {
		case PROTO_MODE_PURE:
			sigil_ed25519_sign_expanded(sig, m->data, m->len, ek);
			break;
		case PROTO_MODE_CTX:
			rq->r = sigil_ed25519ctx_sign_expanded(sig, m->data, m->len, ctx->data, ctx->len, ek);
			break;
		case PROTO_MODE_PH:
			if (q->u.sign.prehashed)
				rq->r = sigil_ed25519ph_sign_prehashed_expanded(sig, m->data, ctx->data, ctx->len, ek);
			else
				rq->r = sigil_ed25519ph_sign_expanded(sig, m->data, m->len, ctx->data, ctx->len, ek);
			break;
		}
		memcpy(p->u.sign.signature, sig, sizeof(sig));
		break;
	}
	case PROTO_METHOD_VERIFY: {
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
				v = sigil_ed25519ph_verify_prehashed(q->u.verify.signature, m->data, ctx->data,
				                                     ctx->len, q->u.verify.public_key, pol);
			else
				v = sigil_ed25519ph_verify(q->u.verify.signature, m->data, m->len, ctx->data,
				                           ctx->len, q->u.verify.public_key, pol);
			break;
		}
		p->u.verify.valid = v == 0;
		break;
	}
	case PROTO_METHOD_VERIFY_BATCH: {
		size_t n = q->u.verify_batch.n_items;
		sigil_ed25519_item *items = calloc(n ? n : 1, sizeof(*items));
		int *valid = calloc(n ? n : 1, sizeof(*valid));

		if (!items || !valid) {
			free(items);
			free(valid);
			rq->r = -ENOMEM;
			break;
		}
		for (size_t i = 0; i < n; i++) {
			const ProtoVerifyItem *it = &q->u.verify_batch.items[i];

			items[i] = (sigil_ed25519_item){ it->public_key, it->signature, it->message.data, it->message.len };
		}
		sigil_ed25519_verify_batch(valid, items, n, policy_of(q->u.verify_batch.policy));
		for (size_t i = 0; i < n; i++)
			rq->valid[i] = valid[i] == 1;
		free(items);
		free(valid);
		break;
	}
	case PROTO_METHOD_DH:
		rq->r = sigil_x25519(p->u.dh.shared_secret, rq->key->secret->seed, q->u.dh.peer);
		break;
	case PROTO_METHOD_KEY_GENERATE:
		rq->r = keystore_materialize(&s->keystore, rq->key, NULL);
		break;
	case PROTO_METHOD_KEY_IMPORT:
		rq->r = keystore_materialize(&s->keystore, rq->key, q->u.key_import.seed);
		break;
	case PROTO_METHOD_UNLOCK: {
		bool has = q->u.unlock.has_passphrase;

		rq->r = keystore_unlock(&s->keystore, has ? q->u.unlock.passphrase.data : NULL,
		                        has ? q->u.unlock.passphrase.len : 0);
		break;
	}
	case PROTO_METHOD_REKEY: {
		bool has = q->u.rekey.has_passphrase;

		rq->why[0] = '\0';
		rq->r = keystore_rekey(&s->keystore, has ? q->u.rekey.passphrase.data : NULL,
		                       has ? q->u.rekey.passphrase.len : 0, q->u.rekey.master_key_file, rq->why,
		                       sizeof(rq->why));
		break;
	}
	default:
		rq->r = -EINVAL;
		break;
	}
}

static void work_run(uv_work_t *w)
{
	request_run(w->data);
}

/* audit and answer a request that ran (loop thread) */
static void request_answer(Conn *c, Request *rq)
{
	Server *s = c->server;
	ProtoRequest *q = &rq->req;

	switch (q->method) {
	case PROTO_METHOD_SIGN:
		audit_rq(c, rq->key, NULL, "sign", rq->r ? "error" : "ok", NULL);
		if (rq->r)
			reply_error(c, rq, PROTO_E_INTERNAL, "signing failed");
		else
			conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_DH:
		audit_rq(c, rq->key, NULL, "dh", rq->r ? "error" : "ok", rq->r ? "small-order peer key" : NULL);
		if (rq->r)
			reply_error(c, rq, PROTO_E_INVALID_KEY,
			            "peer public key has small order (the shared secret would be zero)");
		else
			conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_VERIFY:
		conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_VERIFY_BATCH:
		if (rq->r)
			reply_error(c, rq, PROTO_E_INTERNAL, "out of memory");
		else
			conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_KEY_GENERATE:
	case PROTO_METHOD_KEY_IMPORT:
		audit_rq(c, rq->key, NULL, q->method == PROTO_METHOD_KEY_GENERATE ? "generate" : "import",
		         rq->r ? "error" : "ok", rq->r ? strerror(-rq->r) : NULL);
		if (rq->r) {
			log_err("cannot store key '%s': %s", rq->key->info.label, strerror(-rq->r));
			keystore_abort(&s->keystore, rq->key);
			reply_error(c, rq, PROTO_E_INTERNAL, "cannot store the key: %s", strerror(-rq->r));
		} else {
			keystore_commit(&s->keystore, rq->key);
			log_info("%s key '%s' (%s, %s)", q->method == PROTO_METHOD_KEY_GENERATE ? "generated" : "imported",
			         rq->key->info.label, proto_key_type_name(rq->key->info.type), rq->key->info.fingerprint);
			rq->resp.u.key = rq->key->info;
			conn_send_response(c, &rq->resp);
		}
		break;
	case PROTO_METHOD_UNLOCK: {
		int r = rq->r;

		audit_rq(c, NULL, NULL, "unlock", r == 0 ? "ok" : r == KEYSTORE_E_WRONG ? "denied" : "error", NULL);
		if (r == KEYSTORE_E_WRONG) {
			log_warn("unlock refused (wrong passphrase or master key) for uid %d pid %d", (int)c->uid,
			         (int)c->pid);
			reply_error(c, rq, PROTO_E_DENIED, "wrong passphrase or master key: still locked");
		} else if (r == KEYSTORE_E_NEED_PASSPHRASE) {
			reply_error(c, rq, PROTO_E_DENIED, "the keys are sealed under a passphrase: give it");
		} else if (r) {
			reply_error(c, rq, PROTO_E_INTERNAL, "cannot read the master key (%s): see sigild's log",
			            r < 0 ? strerror(-r) : "malformed");
		} else {
			if (s->locked)
				log_info("unlocked by uid %d pid %d", (int)c->uid, (int)c->pid);
			s->locked = false;
			s->last_key_use_ms = uv_now(s->loop);
			conn_send_response(c, &rq->resp);
		}
		break;
	}
	case PROTO_METHOD_REKEY: {
		int r = rq->r;
		const char *why = rq->why;

		audit_rq(c, NULL, NULL, "rekey", r == 0 ? "ok" : "error",
		         r < 0 ? strerror(-r) : r == KEYSTORE_E_INVALID ? why : NULL);
		if (r == KEYSTORE_E_LOCKED)
			reply_error(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		else if (r == KEYSTORE_E_NEED_PASSPHRASE)
			reply_error(c, rq, PROTO_E_BAD_REQUEST, "the keys are sealed under a passphrase: give the new one "
			            "(or a new master key file)");
		else if (r == -EBUSY)
			reply_error(c, rq, PROTO_E_BUSY, "a key is being generated; try again");
		else if (r == KEYSTORE_E_INVALID)
			reply_error(c, rq, PROTO_E_BAD_REQUEST, "%s", why);
		else if (r)
			reply_error(c, rq, PROTO_E_INTERNAL, "rekey failed (the old master key stays): %s",
			            r < 0 ? strerror(-r) : "invalid");
		else {
			rq->resp.u.rekey.keys = keystore_count(&s->keystore);
			conn_send_response(c, &rq->resp);
		}
		break;
	}
	default:
		reply_error(c, rq, PROTO_E_INTERNAL, "no handler");
		break;
	}
}

/* back on the loop thread */
static void work_done(uv_work_t *w, int status)
{
	Request *rq = w->data;
	Conn *c = rq->conn;
	Server *s = c->server;
	ProtoRequest *q = &rq->req;
	ProtoMethod m = q->method;

	c->inflight--;
	s->inflight--;
	c->inflight_bytes -= rq->cost;
	s->inflight_bytes -= rq->cost;

	if (status == UV_ECANCELED) {
		if (q->method == PROTO_METHOD_KEY_GENERATE || q->method == PROTO_METHOD_KEY_IMPORT)
			keystore_abort(&s->keystore, rq->key);
		reply_error(c, rq, PROTO_E_BUSY, "sigild is shutting down");
	} else {
		request_answer(c, rq);
	}
	request_free(rq);
	if (m == PROTO_METHOD_UNLOCK || m == PROTO_METHOD_REKEY)
		s->ks_busy = false;
	if (m == PROTO_METHOD_KEY_GENERATE || m == PROTO_METHOD_KEY_IMPORT)
		s->key_jobs--;
	unpark(s);
	if (c->close_after_write && conn_idle(c))
		conn_close(c);
	else if (!c->closing)
		conn_process(c); /* it may have waited for its requests in flight */
	if (s->total_blocked && !s->shutting_down &&
	    s->inflight_bytes < SERVER_INFLIGHT_BYTES_FACTOR * s->config.max_request_size) {
		s->total_blocked = false;
		for (Conn *o = s->conns, *next; o; o = next) {
			next = o->next;
			conn_process(o);
		}
	}
	conn_unref(c);
	server_maybe_finish(s);
}

/* the in-flight limits: a request counts from the moment it is taken until
 * its answer is written, on the pool or answered at once (turn_requests:
 * answers of this loop iteration, conn_flush_all). Answers busy when one
 * is reached. */
static bool admit(Conn *c, Request *rq)
{
	Server *s = c->server;

	if (c->inflight + c->turn_requests >= s->config.max_inflight_per_conn) {
		reply_error(c, rq, PROTO_E_BUSY, "too many requests in flight on this connection (max %u)",
		            s->config.max_inflight_per_conn);
		return false;
	}
	if (s->inflight + s->turn_requests >= s->config.max_inflight_total) {
		reply_error(c, rq, PROTO_E_BUSY, "too many requests in flight (max %u)", s->config.max_inflight_total);
		return false;
	}
	return true;
}

/* sign, dh, verify: run and answer at once, on the loop thread */
static void run_now(Conn *c, Request *rq, size_t len)
{
	if (!admit(c, rq))
		return;
	request_run(rq);
	request_answer(c, rq);
	c->turn_requests++;
	c->turn_bytes += len;
	c->server->turn_requests++;
}

/* hand rq to the pool. Return: false when refused (answered, rq freed) */
static bool queue(Conn *c, Request *rq)
{
	Server *s = c->server;
	int r;

	if (!admit(c, rq))
		goto fail;
	rq->work.data = rq;
	r = uv_queue_work(s->loop, &rq->work, work_run, work_done);
	if (r < 0) {
		reply_error(c, rq, PROTO_E_INTERNAL, "cannot queue the request: %s", uv_strerror(r));
		goto fail;
	}
	/* what the request holds until it is answered */
	rq->cost = sizeof(*rq) + rq->frame_len;
	if (rq->req.method == PROTO_METHOD_VERIFY_BATCH)
		rq->cost += rq->req.u.verify_batch.n_items * (sizeof(ProtoVerifyItem) + sizeof(bool));
	c->inflight++;
	s->inflight++;
	c->inflight_bytes += rq->cost;
	s->inflight_bytes += rq->cost;
	c->n_refs++;
	if (rq->req.method == PROTO_METHOD_KEY_GENERATE || rq->req.method == PROTO_METHOD_KEY_IMPORT)
		s->key_jobs++;
	return true;
fail:
	if (rq->key && rq->key->pending)
		keystore_abort(&s->keystore, rq->key);
	request_free(rq);
	return false;
}

static void key_list(Conn *c, Request *rq)
{
	Keystore *ks = &c->server->keystore;
	ProtoKeyInfo *keys = calloc(ks->n_keys ? ks->n_keys : 1, sizeof(*keys));
	size_t n = 0;

	if (!keys) {
		reply_error(c, rq, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	for (size_t i = 0; i < ks->n_keys; i++)
		if (!ks->keys[i]->pending)
			keys[n++] = ks->keys[i]->info;
	rq->resp.u.key_list.keys = keys;
	rq->resp.u.key_list.n_keys = n;
	conn_send_response(c, &rq->resp);
	free(keys);
}

/* the key for sign/dh, with the checks shared by both */
static Key *private_key(Conn *c, Request *rq, const char *label, ProtoKeyType want)
{
	Server *s = c->server;
	bool sign = rq->req.method == PROTO_METHOD_SIGN;
	const char *op = sign ? "sign" : "dh";
	PolicyPeer peer = { .uid = c->uid, .gid = c->gid, .pid = c->pid, .exe = c->exe };
	char why[PROTO_MESSAGE_MAX - 64];
	Key *key;

	key = keystore_find(&s->keystore, label);
	if (s->locked || s->keystore.locked) {
		audit_rq(c, key, label, op, "locked", NULL);
		reply_error(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return NULL;
	}
	if (!key) {
		audit_rq(c, NULL, label, op, "not_found", NULL);
		reply_error(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", label);
		return NULL;
	}
	if (!key->secret) {
		audit_rq(c, key, label, op, "locked", NULL);
		reply_error(c, rq, PROTO_E_LOCKED, "key '%s' is not open: unlock sigild first", label);
		return NULL;
	}
	if (key->info.type != want) {
		audit_rq(c, key, label, op, "wrong_type", NULL);
		reply_error(c, rq, PROTO_E_WRONG_TYPE, "key '%s' is %s; %s needs an %s key", label,
		            proto_key_type_name(key->info.type), op, proto_key_type_name(want));
		return NULL;
	}
	if (!policy_check(&key->policy, &key->use, sign ? PROTO_OP_SIGN : PROTO_OP_DH, &peer,
	                  (int64_t)time(NULL), uv_now(s->loop), why, sizeof(why))) {
		audit_rq(c, key, label, op, "denied", why);
		reply_error(c, rq, PROTO_E_DENIED, "key '%s': %s", label, why);
		return NULL;
	}
	s->last_key_use_ms = uv_now(s->loop);
	return key_ref(key);
}

static void new_key(Conn *c, Request *rq, const char *label, ProtoKeyType type, bool exportable,
                    const ProtoKeyPolicy *policy)
{
	Key *key = NULL;
	const char *op = rq->req.method == PROTO_METHOD_KEY_GENERATE ? "generate" : "import";
	int r = keystore_reserve(&c->server->keystore, label, type, exportable, &key);

	if (r)
		audit_rq(c, NULL, label, op, r == KEYSTORE_E_EXISTS ? "exists" : r == KEYSTORE_E_LOCKED ? "locked" : "error",
		         NULL);
	if (r == KEYSTORE_E_EXISTS) {
		reply_error(c, rq, PROTO_E_EXISTS, "a key labelled '%s' exists", label);
		request_free(rq);
		return;
	}
	if (r == KEYSTORE_E_LOCKED) {
		reply_error(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first (new keys are sealed)");
		request_free(rq);
		return;
	}
	if (r) {
		reply_error(c, rq, PROTO_E_INTERNAL, "out of memory");
		request_free(rq);
		return;
	}
	if (policy) { /* pending: stored by keystore_materialize() */
		key->policy = *policy;
		key->info.policy = &key->policy;
	}
	rq->key = key;
	queue(c, rq);
}

/* methods that run on the thread pool: their Request lives on the heap with
 * its own copy of the frame */
static bool on_pool(ProtoMethod m)
{
	return m == PROTO_METHOD_VERIFY_BATCH || m == PROTO_METHOD_KEY_GENERATE || m == PROTO_METHOD_KEY_IMPORT ||
	       m == PROTO_METHOD_UNLOCK || m == PROTO_METHOD_REKEY || m == PROTO_METHOD_KEY_IMPORT_WRAPPED;
}

/* a heap Request for @frame, decoded again from its own copy (the reader's
 * buffer moves on). Return: NULL when out of memory (answered) */
static Request *request_heap(Conn *c, const uint8_t *frame, size_t len)
{
	Request *rq = calloc(1, sizeof(*rq));
	char err[PROTO_MESSAGE_MAX];
	bool has_msgid;

	if (rq)
		rq->frame = malloc(len ? len : 1);
	if (!rq || !rq->frame) {
		free(rq);
		conn_send_error(c, false, 0, PROTO_E_INTERNAL, "out of memory");
		return NULL;
	}
	memcpy(rq->frame, frame, len);
	rq->frame_len = len;
	rq->conn = c;
	if (proto_request_decode(&rq->req, &has_msgid, rq->frame, len, err) != 0) {
		/* decoded once already: only memory can fail */
		conn_send_error(c, has_msgid, rq->req.msgid, PROTO_E_INTERNAL, "out of memory");
		request_free(rq);
		return NULL;
	}
	return rq;
}

/*
 * The keystore while unlock or rekey runs on the pool (s->ks_busy): every
 * request that reads or changes it waits in s->parked, in arrival order.
 * unlock, rekey and lock also wait while a key is being generated or
 * imported (s->key_jobs). hello, verify, verify_batch and audit never
 * wait. A parked request counts as in flight (limits, shutdown); unpark()
 * runs them when the job ends.
 */
static bool touches_keystore(ProtoMethod m)
{
	return m != PROTO_METHOD_HELLO && m != PROTO_METHOD_VERIFY && m != PROTO_METHOD_VERIFY_BATCH &&
	       m != PROTO_METHOD_AUDIT;
}

/* these also wait for generate/import on the pool (which seal with the
 * master key that they replace or wipe) */
static bool exclusive(ProtoMethod m)
{
	return m == PROTO_METHOD_UNLOCK || m == PROTO_METHOD_REKEY || m == PROTO_METHOD_LOCK;
}

static bool must_wait(const Server *s, ProtoMethod m)
{
	if (!touches_keystore(m))
		return false;
	return s->ks_busy || s->parked || (exclusive(m) && s->key_jobs > 0);
}

static void park(Conn *c, Request *rq)
{
	Server *s = c->server;

	rq->parked_next = NULL;
	if (s->parked)
		s->parked_tail->parked_next = rq;
	else
		s->parked = rq;
	s->parked_tail = rq;
	rq->cost = sizeof(*rq) + rq->frame_len;
	c->inflight++;
	s->inflight++;
	c->inflight_bytes += rq->cost;
	s->inflight_bytes += rq->cost;
	c->n_refs++;
}

static void unpark(Server *s)
{
	while (s->parked && !s->ks_busy) {
		Request *rq = s->parked;
		Conn *c = rq->conn;

		if (exclusive(rq->req.method) && s->key_jobs > 0)
			break;
		s->parked = rq->parked_next;
		c->inflight--;
		s->inflight--;
		c->inflight_bytes -= rq->cost;
		s->inflight_bytes -= rq->cost;
		if (c->closing || s->shutting_down) {
			if (!c->closing)
				reply_error(c, rq, PROTO_E_BUSY, "sigild is shutting down");
			request_free(rq);
		} else if (!handle(c, rq, rq->frame_len, false)) {
			request_free(rq);
		}
		if (c->close_after_write && conn_idle(c))
			conn_close(c);
		else if (!c->closing)
			conn_process(c);
		conn_unref(c);
	}
}

/* run or answer one decoded request (@may_park: false for one unpark()
 * runs). Return: true when rq was taken (on the pool, parked, or freed),
 * false when the caller still holds it */
static bool handle(Conn *c, Request *rq, size_t len, bool may_park)
{
	Server *s = c->server;
	ProtoRequest *q = &rq->req;
	int r;

	if (may_park && must_wait(s, q->method)) {
		park(c, rq);
		return true;
	}
	rq->resp.msgid = q->msgid;
	rq->resp.has_msgid = true;
	rq->resp.method = q->method;
	rq->resp.error = PROTO_OK;

	switch (q->method) {
	case PROTO_METHOD_HELLO:
		rq->resp.u.hello.protocol = PROTO_VERSION;
		rq->resp.u.hello.server = "sigild " SIGIL_VERSION;
		rq->resp.u.hello.features = features;
		rq->resp.u.hello.n_features = sizeof(features) / sizeof(features[0]);
		conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_STATUS:
		rq->resp.u.status = (ProtoStatus){
			.keys = keystore_count(&s->keystore),
			.locked = s->locked,
			.connections = s->n_conns,
			.inflight = s->inflight,
			.uptime_s = (uv_now(s->loop) - s->start_ms) / 1000,
			.requests = s->requests,
			.workers = s->workers,
		};
		rq->resp.status_buffered_bytes = s->inflight_bytes;
		for (Conn *o = s->conns; o; o = o->next)
			rq->resp.status_buffered_bytes += o->write_bytes + proto_reader_buffered(o->reader);
		conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_KEY_LIST:
		key_list(c, rq);
		break;
	case PROTO_METHOD_KEY_PUBLIC: {
		Key *key = keystore_find(&s->keystore, q->u.key_public.label);

		if (!key) {
			reply_error(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", q->u.key_public.label);
			break;
		}
		rq->resp.u.key = key->info;
		conn_send_response(c, &rq->resp);
		break;
	}
	case PROTO_METHOD_KEY_DELETE: {
		Key *old = key_ref(keystore_find(&s->keystore, q->u.key_delete.label));

		r = keystore_delete(&s->keystore, q->u.key_delete.label);
		audit_rq(c, old, q->u.key_delete.label, "delete",
		         r == KEYSTORE_E_NOT_FOUND ? "not_found" : r ? "error" : "ok", r < 0 ? strerror(-r) : NULL);
		key_unref(old);
		if (r == KEYSTORE_E_NOT_FOUND) {
			reply_error(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", q->u.key_delete.label);
		} else if (r) {
			log_err("cannot delete key '%s': %s", q->u.key_delete.label, strerror(-r));
			reply_error(c, rq, PROTO_E_INTERNAL, "cannot remove the key file: %s", strerror(-r));
		} else {
			log_info("deleted key '%s'", q->u.key_delete.label);
			conn_send_response(c, &rq->resp);
		}
		break;
	}
	case PROTO_METHOD_LOCK:
		if (!s->locked)
			log_info("locked by uid %d pid %d: decrypted keys wiped", (int)c->uid, (int)c->pid);
		keystore_lock(&s->keystore);
		s->locked = true;
		audit_rq(c, NULL, NULL, "lock", "ok", NULL);
		conn_send_response(c, &rq->resp);
		break;
	case PROTO_METHOD_UNLOCK:
	case PROTO_METHOD_REKEY:
		/* Argon2id (0.1-0.5 s) and key files: on the pool, the keystore
		 * held (keystore requests wait for it, park()) */
		s->ks_busy = true;
		if (!queue(c, rq)) {
			s->ks_busy = false;
			unpark(s);
		}
		return true;
	case PROTO_METHOD_KEY_EXPORT: {
		const char *label = q->u.key_export.label;
		Key *key = keystore_find(&s->keystore, label);
		PolicyPeer peer = { .uid = c->uid, .gid = c->gid, .pid = c->pid, .exe = c->exe };
		char why[PROTO_MESSAGE_MAX - 64];

		if (!key) {
			audit_rq(c, NULL, label, "export", "not_found", NULL);
			reply_error(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", label);
		} else if (s->locked || s->keystore.locked || !key->secret) {
			audit_rq(c, key, label, "export", "locked", NULL);
			reply_error(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		} else if (!key->info.exportable) {
			audit_rq(c, key, label, "export", "denied", "rule exportable");
			reply_error(c, rq, PROTO_E_DENIED, "key '%s': rule exportable: the key is not exportable", label);
		} else if (!policy_check(&key->policy, &key->use, 0, &peer, (int64_t)time(NULL), uv_now(s->loop), why,
		                         sizeof(why))) {
			audit_rq(c, key, label, "export", "denied", why);
			reply_error(c, rq, PROTO_E_DENIED, "key '%s': %s", label, why);
		} else {
			audit_rq(c, key, label, "export", "ok", NULL);
			memcpy(rq->resp.u.key_export.seed, key->secret->seed, PROTO_KEY_LEN);
			conn_send_response(c, &rq->resp);
			sigil_wipe(rq->resp.u.key_export.seed, PROTO_KEY_LEN);
		}
		break;
	}
	case PROTO_METHOD_AUDIT: {
		size_t max = q->u.audit.limit < AUDIT_RING ? (size_t)q->u.audit.limit : AUDIT_RING;
		const char **lines = calloc(max, sizeof(*lines));

		if (!lines) {
			reply_error(c, rq, PROTO_E_INTERNAL, "out of memory");
			break;
		}
		rq->resp.u.audit.n = audit_recent(lines, max);
		rq->resp.u.audit.lines = lines;
		conn_send_response(c, &rq->resp);
		free(lines);
		break;
	}
	case PROTO_METHOD_SIGN:
		rq->key = private_key(c, rq, q->u.sign.label, PROTO_KEY_ED25519);
		if (rq->key)
			run_now(c, rq, len);
		break;
	case PROTO_METHOD_DH:
		rq->key = private_key(c, rq, q->u.dh.label, PROTO_KEY_X25519);
		if (rq->key)
			run_now(c, rq, len);
		break;
	case PROTO_METHOD_VERIFY:
		run_now(c, rq, len);
		break;
	case PROTO_METHOD_AGE_UNWRAP:
		age_ops_unwrap(c, rq);
		break;
	case PROTO_METHOD_KEY_EXPORT_WRAPPED:
		age_ops_export_wrapped(c, rq);
		break;
	case PROTO_METHOD_KEY_IMPORT_WRAPPED: /* then a key.import of what the file holds */
		if (age_ops_import_wrapped(c, rq))
			break;
		new_key(c, rq, q->u.key_import.label, q->u.key_import.type, q->u.key_import.exportable,
		        q->u.key_import.policy);
		return true;
	case PROTO_METHOD_VERIFY_BATCH:
		rq->valid = calloc(q->u.verify_batch.n_items ? q->u.verify_batch.n_items : 1, sizeof(bool));
		if (!rq->valid) {
			reply_error(c, rq, PROTO_E_INTERNAL, "out of memory");
			break;
		}
		rq->resp.u.verify_batch.valid = rq->valid;
		rq->resp.u.verify_batch.n = q->u.verify_batch.n_items;
		queue(c, rq);
		return true;
	case PROTO_METHOD_KEY_GENERATE:
		new_key(c, rq, q->u.key_generate.label, q->u.key_generate.type, q->u.key_generate.exportable,
		        q->u.key_generate.policy);
		return true;
	case PROTO_METHOD_KEY_IMPORT:
		new_key(c, rq, q->u.key_import.label, q->u.key_import.type, q->u.key_import.exportable,
		        q->u.key_import.policy);
		return true;
	default:
		reply_error(c, rq, PROTO_E_UNKNOWN_METHOD, "unknown method");
		break;
	}
	return false;
}

void handler_dispatch(Conn *c, const uint8_t *frame, size_t len)
{
	Request stack_rq = { .conn = c }, *rq = &stack_rq;
	ProtoRequest *q;
	char err[PROTO_MESSAGE_MAX];
	bool has_msgid;
	int r;

	/* decoded in place: the frame stays valid in the connection's reader
	 * until its next frame is taken, after this returns */
	q = &rq->req;
	r = proto_request_decode(q, &has_msgid, frame, len, err);
	if (r) {
		if (r < 0)
			conn_send_error(c, has_msgid, q->msgid, PROTO_E_INTERNAL, "out of memory");
		else
			conn_send_error(c, has_msgid, q->msgid, (ProtoError)r, err);
		request_clear(rq);
		return;
	}
	if (on_pool(q->method) || must_wait(c->server, q->method)) {
		request_clear(rq);
		rq = request_heap(c, frame, len);
		if (!rq)
			return;
		q = &rq->req;
	}
	if (handle(c, rq, len, true))
		return;
	if (rq == &stack_rq)
		request_clear(rq);
	else
		request_free(rq);
}
