/* SPDX-License-Identifier: MIT */
/*
 * rpc.c - the msgpack-rpc front-end: a frame -> a decoded request -> an
 * operation of the core (ops.c) -> the encoded answer
 *
 * Nothing here decides anything: permission, the lock, policy, limits and
 * audit are ops.c's. A request is decoded in place in the connection's
 * read buffer into a Request on the stack; when the core keeps the
 * operation (the pool, a parked request, a confirm prompt), rpc_keep()
 * makes a heap copy with its own copy of the frame (inside the copy for
 * a short frame), the decoding moved to it (proto_request_rebase), or
 * decoded again for the methods that function does not know.
 * Answers may leave in any order; the msgid matches them. A frame that
 * carried a secret (key.import's seed, a passphrase) is wiped in the read
 * buffer as soon as it has been handled.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "log.h"
#include "ops.h"
#include "rpc.h"
#include "version.h"

static const char *const features[] = {
	"ed25519", "x25519", "ed25519ctx", "ed25519ph", "ed25519ph-prehashed",
	"verify_batch", "zip215", "lock", "owners", "age",
};

typedef struct Request {
	Op op;
	ProtoRequest req;
	Stream *conn;
	uint8_t *frame;       /* heap copies: the owned frame (wiped) */
	size_t frame_len;
	uint8_t *frame_base;  /* or the reader's buffer, taken with it (frame is inside) */
	bool heap;
} Request;

/* a kept frame at least this long takes the reader's buffer instead of a
 * copy (a 32 MiB verify: no 32 MiB copy and wipe on the loop thread) */
#define RPC_DETACH_MIN (64u * 1024)

/* A kept request: a short frame (a sign, verify or dh of a short message)
 * is copied into the request itself. */
#define RPC_SMALL_FRAME 256

typedef struct Kept {
	Request rq;
	struct Kept *next_spare;
	uint8_t small[RPC_SMALL_FRAME];
} Kept;

static OpKind kind_of(ProtoMethod m)
{
	switch (m) {
	case PROTO_METHOD_STATUS: return OP_STATUS;
	case PROTO_METHOD_KEY_GENERATE: return OP_KEY_GENERATE;
	case PROTO_METHOD_KEY_IMPORT: return OP_KEY_IMPORT;
	case PROTO_METHOD_KEY_LIST: return OP_KEY_LIST;
	case PROTO_METHOD_KEY_PUBLIC: return OP_KEY_PUBLIC;
	case PROTO_METHOD_KEY_DELETE: return OP_KEY_DELETE;
	case PROTO_METHOD_KEY_EXPORT: return OP_KEY_EXPORT;
	case PROTO_METHOD_SIGN: return OP_SIGN;
	case PROTO_METHOD_VERIFY: return OP_VERIFY;
	case PROTO_METHOD_VERIFY_BATCH: return OP_VERIFY_BATCH;
	case PROTO_METHOD_DH: return OP_DH;
	case PROTO_METHOD_LOCK: return OP_LOCK;
	case PROTO_METHOD_UNLOCK: return OP_UNLOCK;
	case PROTO_METHOD_REKEY: return OP_REKEY;
	case PROTO_METHOD_AUDIT: return OP_AUDIT;
	case PROTO_METHOD_AGE_UNWRAP: return OP_AGE_UNWRAP;
	case PROTO_METHOD_KEY_EXPORT_WRAPPED: return OP_KEY_EXPORT_WRAPPED;
	case PROTO_METHOD_KEY_IMPORT_WRAPPED: return OP_KEY_IMPORT_WRAPPED;
	default: return _OP_KIND_N;
	}
}

/* methods whose frame holds a secret */
static bool carries_secret(ProtoMethod m)
{
	return m == PROTO_METHOD_KEY_IMPORT || m == PROTO_METHOD_UNLOCK || m == PROTO_METHOD_REKEY ||
	       m == PROTO_METHOD_LOCK;
}

/* methods whose frame holds nothing but public data (keys, signatures,
 * messages to verify): not wiped, which for a 32 MiB message would hold
 * the loop thread for milliseconds */
static bool all_public(ProtoMethod m)
{
	return m == PROTO_METHOD_VERIFY || m == PROTO_METHOD_VERIFY_BATCH;
}

static void request_clear(Request *rq)
{
	ProtoMethod m = rq->req.method;

	proto_request_deinit(&rq->req);
	if (rq->frame_base) {
		/* the reader's buffer: earlier frames before this one */
		sigil_wipe(rq->frame_base, (size_t)(rq->frame - rq->frame_base));
		if (!all_public(m))
			sigil_wipe(rq->frame, rq->frame_len);
		free(rq->frame_base);
	} else if (rq->frame) {
		sigil_wipe(rq->frame, rq->frame_len);
		if (!rq->heap || rq->frame != ((Kept *)rq)->small)
			free(rq->frame);
	}
	sigil_wipe(rq, sizeof(*rq));
}

/* Kept requests for reuse, wiped (the loop thread's own, like everything
 * here): a Kept is a few KiB, past glibc's per-thread cache, and a kept
 * request per pipelined sign made malloc and free 2-3% of the loop
 * thread's time under load. */
#define RPC_SPARE_MAX 64
static Kept *spare;
static unsigned n_spare;

static Kept *kept_new(void)
{
	Kept *k = spare;

	if (!k)
		return calloc(1, sizeof(*k));
	spare = k->next_spare;
	n_spare--;
	k->next_spare = NULL;
	return k; /* zeroed by kept_free's request_clear */
}

/* clears k (its frame and decoding wiped and freed, the request zeroed)
 * and keeps it for reuse, or frees it */
static void kept_free(Kept *k)
{
	request_clear(&k->rq);
	if (n_spare >= RPC_SPARE_MAX) {
		free(k);
		return;
	}
	k->next_spare = spare;
	spare = k;
	n_spare++;
}

static void send_response(Stream *c, const ProtoResponse *resp)
{
	ProtoBuf *out = stream_out(c);
	size_t len0 = out->len;
	int r;

	if (c->closing)
		return;
	r = proto_response_encode(out, resp);
	if (r < 0)
		stream_broken(c, strerror(-r));
	else
		stream_answered(c, out->len - len0);
}

static void send_error(Stream *c, bool has_msgid, uint64_t msgid, ProtoError code, const char *message)
{
	ProtoResponse resp = { .msgid = msgid, .has_msgid = has_msgid, .error = code };

	snprintf(resp.message, sizeof(resp.message), "%s", message ? message : "");
	send_response(c, &resp);
}

void rpc_refuse(Stream *s, ProtoError code, const char *message)
{
	send_error(s, false, 0, code, message);
	stream_close_after_write(s);
}

/* the answer of a finished operation */
static void rpc_done(Op *op)
{
	Request *rq = (Request *)((char *)op - offsetof(Request, op));
	Stream *c = rq->conn;
	size_t cost = op->cost;

	op->resp.msgid = rq->req.msgid;
	op->resp.has_msgid = true;
	op->resp.method = rq->req.method;
	if (op->resp.error != PROTO_OK)
		send_error(c, true, rq->req.msgid, op->resp.error, op->resp.message);
	else
		send_response(c, &op->resp);
	ops_op_deinit(op);
	if (!rq->heap)
		return; /* the stack request: rpc_dispatch() clears it */
	kept_free((Kept *)rq);
	stream_op_ended(c, cost);
}

/* a heap copy of a stack request that the core keeps */
static Op *rpc_keep(Op *op)
{
	Request *rq = (Request *)((char *)op - offsetof(Request, op));
	Kept *k = kept_new();
	Request *h = k ? &k->rq : NULL;
	char err[PROTO_MESSAGE_MAX];
	bool has_msgid;
	size_t used; /* (the frame ends them: request_clear wipes what is before it) */

	if (!h)
		return NULL;
	h->heap = true;
	if (rq->frame_len >= RPC_DETACH_MIN && !carries_secret(rq->req.method)) /* (rpc_frame wipes those) */
		h->frame = proto_reader_detach(rq->conn->framer.f, rq->frame, rq->frame_len, &h->frame_base, &used);
	if (!h->frame) {
		h->frame = rq->frame_len <= sizeof(k->small) ? k->small : malloc(rq->frame_len);
		if (!h->frame) {
			kept_free(k);
			return NULL;
		}
		memcpy(h->frame, rq->frame, rq->frame_len);
	}
	h->frame_len = rq->frame_len;
	/* the stack request's decoding, moved to the copy; or, for a method
	 * proto_request_rebase() does not know, decoded again (decoded once
	 * already: only memory can fail) */
	h->req = rq->req;
	if (proto_request_rebase(&h->req, rq->frame, h->frame, h->frame_len) != 0) {
		memset(&h->req, 0, sizeof(h->req));
		if (proto_request_decode(&h->req, &has_msgid, h->frame, h->frame_len, err) != 0) {
			kept_free(k);
			return NULL;
		}
	} else {
		rq->req.priv = NULL; /* (verify_batch's items: the copy's now) */
	}
	h->op = rq->op;
	h->op.q = &h->req;
	h->conn = rq->conn;
	stream_op_kept(h->conn, h->op.cost);
	return &h->op;
}

static void rpc_frame(Stream *c, uint8_t *frame, size_t len)
{
	Ops *ops = c->data;
	Request rq = { .conn = c };
	ProtoRequest *q = &rq.req;
	char err[PROTO_MESSAGE_MAX];
	bool has_msgid;
	int r;

	/* decoded in place: the frame stays valid in the connection's reader
	 * until its next frame is taken, after this returns */
	r = proto_request_decode(q, &has_msgid, frame, len, err);
	if (r) {
		if (r < 0)
			send_error(c, has_msgid, q->msgid, PROTO_E_INTERNAL, "out of memory");
		else
			send_error(c, has_msgid, q->msgid, (ProtoError)r, err);
		proto_request_deinit(q);
		return;
	}
	if (q->method == PROTO_METHOD_HELLO) {
		/* the protocol's own greeting: nothing to decide */
		ProtoResponse resp = { .msgid = q->msgid, .has_msgid = true, .method = q->method };

		resp.u.hello.protocol = PROTO_VERSION;
		resp.u.hello.server = "sigild " SIGIL_VERSION;
		resp.u.hello.features = features;
		resp.u.hello.n_features = sizeof(features) / sizeof(features[0]);
		send_response(c, &resp);
		proto_request_deinit(q);
		return;
	}
	rq.op.kind = kind_of(q->method);
	if (rq.op.kind == _OP_KIND_N) {
		send_error(c, true, q->msgid, PROTO_E_UNKNOWN_METHOD, "unknown method");
		proto_request_deinit(q);
		return;
	}
	rq.frame = frame;
	rq.frame_len = len;
	rq.op.peer = &c->peer;
	rq.op.client = &c->client;
	rq.op.q = q;
	rq.op.done = rpc_done;
	rq.op.keep = rpc_keep;
	rq.op.cost = sizeof(Request) + len;
	ops_submit(ops, &rq.op);
	if (carries_secret(q->method))
		sigil_wipe(frame, len);
	rq.frame = NULL; /* the reader's */
	request_clear(&rq);
}

/* a frame could not be read: answer once (the stream then closes) */
static void rpc_fail(Stream *c, int k)
{
	ProtoReader *reader = c->framer.f;
	uint64_t msgid = 0;
	bool has = proto_reader_msgid(reader, &msgid) == 0;
	char msg[PROTO_MESSAGE_MAX];

	if (k == PROTO_READER_E_TOO_LARGE) {
		snprintf(msg, sizeof(msg), "request larger than max_request_size (%zu bytes) or with too many objects",
		         c->hub->max_frame);
		log_info("uid %d pid %d sent a request over the size limit; closing", (int)c->peer.uid, (int)c->peer.pid);
		send_error(c, has, msgid, PROTO_E_TOO_LARGE, msg);
	} else {
		log_info("uid %d pid %d sent bytes that are not msgpack; closing", (int)c->peer.uid, (int)c->peer.pid);
		send_error(c, has, msgid, PROTO_E_BAD_REQUEST, "bytes that are not msgpack, or nested too deep");
	}
}

const StreamClass rpc_class = {
	.name = "",
	.frame = rpc_frame,
	.fail = rpc_fail,
};

static int reader_feed(void *f, const void *data, size_t n)
{
	return proto_reader_feed(f, data, n);
}

static int reader_next(void *f, const uint8_t **framep, size_t *lenp)
{
	return proto_reader_next(f, framep, lenp);
}

static bool reader_partial(const void *f)
{
	return proto_reader_partial(f);
}

static size_t reader_buffered(const void *f)
{
	return proto_reader_buffered(f);
}

static void reader_free(void *f)
{
	proto_reader_free(f);
}

int rpc_framer(StreamFramer *fr, size_t max_frame)
{
	ProtoReader *r;
	int k = proto_reader_new(&r, max_frame);

	if (k < 0)
		return k;
	*fr = (StreamFramer){ r, reader_feed, reader_next, reader_partial, reader_buffered, reader_free };
	return 0;
}

void rpc_set_max_frame(Stream *s, size_t max_frame)
{
	proto_reader_set_max_frame(s->framer.f, max_frame);
}
