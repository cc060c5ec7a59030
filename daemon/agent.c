/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the ssh-agent front-end: OpenSSH's agent protocol
 * (draft-miller-ssh-agent / PROTOCOL.agent) translated into operations of
 * the core (ops.c) and their results back into agent messages
 *
 * Framing as OpenSSH: uint32 length, then the message (stream.c's u32
 * framer); more than AGENT_MAX_MSG bytes closes the connection. Anything
 * not understood gets SSH_AGENT_FAILURE and the connection lives on.
 *
 * The protocol has no request ids, so answers must stay in request order:
 * while the core keeps one of a connection's operations (ssh-add on the
 * pool, a confirm prompt, a parked request) the stream takes no further
 * frame (stream_hold). Nothing here decides: who may list, sign, add,
 * remove, lock or unlock is ops.c's; session binds are recorded here
 * (agent-restrict.c) and handed to the core with each operation.
 *
 * With an upstream agent (--ssh-agent-upstream), each operation carries
 * the message and a relay() that hands it to this connection's transport
 * (agent-upstream.c); the core decides whether it goes (OP_AGENT_RELAY).
 * Here: ADD of a key type sigil cannot hold and unknown extensions are
 * submitted as relays, the copies of lock, unlock, remove-all and
 * session-bind follow sigil's own answer, and the upstream's identities
 * and extension names are merged after sigil's.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "agent-cert.h"
#include "agent-msg.h"
#include "agent-restrict.h"
#include "agent-upstream.h"
#include "agent.h"
#include "log.h"

/* a connection's front-end state: what it has bound, its upstream */
typedef struct AgentConn {
	AgentSession session;
	Ops *ops;
	AgentUpstreamConfig *upcfg;  /* NULL or no path: no upstream agent */
	AgentUpstream *up;           /* the transport, made at the first relayed message */
	const uint8_t *frame;        /* the message being translated (during agent_frame) */
	size_t frame_len;
} AgentConn;

/* the extensions sigil answers "query" with */
static const char *const agent_extension_names[] = { "query", "session-bind@openssh.com", NULL };

/* one agent request as an operation of the core */
typedef struct AgentReq {
	Op op;
	ProtoRequest req;
	Stream *stream;
	uint8_t *data;        /* sign: the data (kept copies own theirs) */
	size_t data_len;
	uint8_t *msg;         /* with an upstream: the message for it (kept copies own theirs) */
	size_t msg_len;
	uint8_t *ans;         /* relayed: the upstream's answer (owned), or NULL */
	size_t ans_len;
	bool heap;
	bool held;            /* kept, and the stream takes no frame until it is answered */
} AgentReq;

#define AGENT_REQ(_op) ((AgentReq *)((char *)(_op) - offsetof(AgentReq, op)))

/* append one framed message (o is consumed); written after the audit lines */
static void agent_send(Stream *s, AgentOut *o)
{
	ProtoBuf *out = stream_out(s);
	uint8_t hdr[4] = { (uint8_t)(o->len >> 24), (uint8_t)(o->len >> 16), (uint8_t)(o->len >> 8), (uint8_t)o->len };

	if (s->closing || o->oom) {
		if (o->oom && !s->closing)
			stream_broken(s, "out of memory");
		agent_out_free(o);
		return;
	}
	if (proto_buf_append(out, hdr, 4) < 0 || proto_buf_append(out, o->data, o->len) < 0) {
		agent_out_free(o);
		stream_broken(s, "out of memory");
		return;
	}
	stream_answered(s, o->len + 4);
	agent_out_free(o);
}

static void agent_send_byte(Stream *s, uint8_t code)
{
	AgentOut o = { 0 };

	agent_put_u8(&o, code);
	agent_send(s, &o);
}

static bool agent_has_upstream(const AgentConn *ac)
{
	return ac->upcfg && ac->upcfg->path[0];
}

/* ---- the upstream's answers, merged after sigil's ------------------------------- */

/* sigil's identities of an agent list's result into @ids. Return: their number */
static uint32_t agent_put_identities(AgentOut *ids, const Op *op)
{
	const ProtoKeyInfo *keys = op->resp.u.key_list.keys;
	size_t n = op->resp.u.key_list.n_keys;

	for (size_t i = 0; i < n; i++) {
		agent_put_ed25519_blob(ids, keys[i].public_key);
		agent_put_cstring(ids, keys[i].label);
	}
	/* then the certificates of the listed keys, as OpenSSH's agent */
	for (size_t i = 0; i < op->n_certs; i++) {
		agent_put_string(ids, op->certs[i].blob, op->certs[i].blob_len);
		agent_put_string(ids, op->certs[i].comment, op->certs[i].comment_len);
	}
	return (uint32_t)(n + op->n_certs);
}

/* did sigil list this blob already (in @ids, @len bytes of its entries)? */
static bool agent_listed_blob(const uint8_t *ids, size_t len, const uint8_t *blob, size_t bl)
{
	AgentIn mine = { ids, len, false };

	while (!mine.bad && mine.n > 0) {
		size_t l, cl;
		const uint8_t *b = agent_get_string(&mine, &l);

		(void)agent_get_string(&mine, &cl);
		if (!mine.bad && l == bl && memcmp(b, blob, bl) == 0)
			return true;
	}
	return false;
}

/* IDENTITIES_ANSWER: sigil's identities, then the upstream's (@ans, or
 * NULL) that sigil does not list, within the protocol's frame limit */
static void agent_send_identities(Stream *s, const Op *op, const uint8_t *ans, size_t len)
{
	AgentOut ids = { 0 }, o = { 0 };
	uint32_t n = agent_put_identities(&ids, op);
	size_t own = ids.len;
	AgentIn in = { ans, len, false };

	if (ans && agent_get_u8(&in) == AGENT_IDENTITIES_ANSWER) {
		uint32_t m = agent_get_u32(&in);

		for (uint32_t i = 0; i < m && !in.bad; i++) {
			const uint8_t *blob, *comment;
			size_t bl, cl;

			blob = agent_get_string(&in, &bl);
			comment = agent_get_string(&in, &cl);
			if (in.bad)
				break;
			/* a key sigil lists already is listed once, as sigil's */
			if (agent_listed_blob(ids.data, own, blob, bl))
				continue;
			if (5 + ids.len + 8 + bl + cl > AGENT_MAX_MSG) {
				log_info("ssh-agent: the upstream agent's identities do not all fit in one answer");
				break;
			}
			agent_put_string(&ids, blob, bl);
			agent_put_string(&ids, comment, cl);
			n++;
		}
		if (in.bad)
			log_info("ssh-agent: the upstream agent's identities answer is malformed; using what parsed");
	}
	agent_put_u8(&o, AGENT_IDENTITIES_ANSWER);
	agent_put_u32(&o, n);
	agent_put_raw(&o, ids.data, ids.len);
	o.oom |= ids.oom;
	agent_out_free(&ids);
	agent_send(s, &o);
}

/* EXTENSION_RESPONSE to query: sigil's names, then the upstream's (@ans,
 * or NULL) that sigil does not name */
static void agent_send_query(Stream *s, const uint8_t *ans, size_t len)
{
	AgentOut o = { 0 };
	AgentIn in = { ans, len, false };
	const uint8_t *name;
	size_t nl;

	agent_put_u8(&o, AGENT_EXTENSION_RESPONSE);
	agent_put_cstring(&o, "query");
	for (const char *const *e = agent_extension_names; *e; e++)
		agent_put_cstring(&o, *e);
	if (ans && agent_get_u8(&in) == AGENT_EXTENSION_RESPONSE &&
	    (name = agent_get_string(&in, &nl), agent_string_is(name, nl, "query"))) {
		while (!in.bad && in.n > 0) {
			bool dup = false;

			name = agent_get_string(&in, &nl);
			if (in.bad)
				break;
			for (const char *const *e = agent_extension_names; *e; e++)
				dup |= agent_string_is(name, nl, *e);
			if (!dup)
				agent_put_string(&o, name, nl);
		}
	}
	agent_send(s, &o);
}

/* the answer to a relayed op: the upstream's (merged after sigil's for a
 * listing and the query), FAILURE without one; a copy has none (sigil
 * answered) */
static void agent_send_relayed(Stream *s, const AgentReq *ar)
{
	const Op *op = &ar->op;
	const uint8_t *ans = op->up.sent && op->up.result != OPS_RELAY_UNREACHABLE ? ar->ans : NULL;

	switch (op->up.kind) {
	case OPS_RELAY_COPY:
		if (!ans || ans[0] != AGENT_SUCCESS)
			log_info("ssh-agent: the upstream agent %s %s", ans ? "refused" : "did not answer", op->up.what);
		break;
	case OPS_RELAY_LIST:
		if (op->resp.error == PROTO_OK)
			agent_send_identities(s, op, ans, ar->ans_len);
		else
			agent_send_byte(s, AGENT_FAILURE);
		break;
	case OPS_RELAY_QUERY:
		agent_send_query(s, ans, ar->ans_len);
		break;
	default:
		if (ans) {
			AgentOut o = { 0 };

			agent_put_raw(&o, ans, ar->ans_len);
			agent_send(s, &o);
		} else {
			agent_send_byte(s, AGENT_FAILURE);
		}
		break;
	}
}

static void agent_submit(Stream *s, AgentReq *ar, OpKind kind);

/* the copy of lock, unlock, remove-all or session-bind (@msg) for the
 * upstream, after sigil's own answer */
static void agent_copy(Stream *s, const char *what, const uint8_t *msg, size_t len)
{
	AgentReq ar = { 0 };

	if (s->closing || !agent_has_upstream(s->data))
		return;
	ar.op.up.kind = OPS_RELAY_COPY;
	snprintf(ar.op.up.what, sizeof(ar.op.up.what), "%s", what);
	ar.msg = (uint8_t *)msg;
	ar.msg_len = len;
	agent_submit(s, &ar, OP_AGENT_RELAY);
}

/* the copy of an agent LOCK or UNLOCK that sigil allowed */
static void agent_copy_lock(Stream *s, const Op *op)
{
	AgentOut c = { 0 };
	const ProtoBytes *pass = &op->q->u.lock.passphrase; /* (unlock's too) */

	if (s->closing || !agent_has_upstream(s->data))
		return;
	agent_put_u8(&c, op->kind == OP_LOCK ? AGENTC_LOCK : AGENTC_UNLOCK);
	agent_put_string(&c, pass->data, pass->len);
	if (!c.oom)
		agent_copy(s, op->kind == OP_LOCK ? "lock" : "unlock", c.data, c.len);
	agent_out_free(&c); /* (wiped: the passphrase) */
}

/* ---- operations --------------------------------------------------------------- */

static void agent_done(Op *op)
{
	AgentReq *ar = AGENT_REQ(op);
	Stream *s = ar->stream;
	size_t cost = op->cost;
	bool ok = op->resp.error == PROTO_OK;
	bool held = ar->held;

	switch (op->kind) {
	case OP_AGENT_LIST: {
		AgentOut o = { 0 }, ids = { 0 };
		uint32_t n;

		if (!ok) {
			agent_send_byte(s, AGENT_FAILURE);
			break;
		}
		n = agent_put_identities(&ids, op);
		agent_put_u8(&o, AGENT_IDENTITIES_ANSWER);
		agent_put_u32(&o, n);
		agent_put_raw(&o, ids.data, ids.len);
		o.oom |= ids.oom;
		agent_out_free(&ids);
		agent_send(s, &o);
		break;
	}
	case OP_AGENT_RELAY:
		agent_send_relayed(s, ar);
		break;
	case OP_AGENT_SIGN:
		if (ok) {
			AgentOut o = { 0 };

			agent_put_u8(&o, AGENT_SIGN_RESPONSE);
			agent_put_u32(&o, 4 + 11 + 4 + 64);
			agent_put_cstring(&o, "ssh-ed25519");
			agent_put_string(&o, op->resp.u.sign.signature, 64);
			agent_send(s, &o);
		} else {
			agent_send_byte(s, AGENT_FAILURE);
		}
		break;
	default:
		agent_send_byte(s, ok ? AGENT_SUCCESS : AGENT_FAILURE);
		/* sigil's own part allowed and done: then the upstream's copy */
		if (ok && (op->kind == OP_LOCK || op->kind == OP_UNLOCK))
			agent_copy_lock(s, op);
		else if (ok && op->kind == OP_AGENT_REMOVE_ALL)
			agent_copy(s, "remove-all", (const uint8_t[]){ AGENTC_REMOVE_ALL_IDENTITIES }, 1);
		break;
	}
	if (!ok)
		log_debug("ssh-agent: uid %d pid %d: %s", (int)s->peer.uid, (int)s->peer.pid, op->resp.message);
	ops_op_deinit(op);
	if (!ar->heap)
		return;
	if (ar->data) {
		sigil_wipe(ar->data, ar->data_len);
		free(ar->data);
	}
	if (ar->msg) {
		sigil_wipe(ar->msg, ar->msg_len);
		free(ar->msg);
	}
	if (ar->ans) {
		sigil_wipe(ar->ans, ar->ans_len);
		free(ar->ans);
	}
	proto_request_deinit(&ar->req);
	sigil_wipe(ar, sizeof(*ar));
	free(ar);
	if (held)
		stream_release(s);  /* the next frame in order */
	stream_op_ended(s, cost);
}

/* the transport's answer to a relayed op (agent_relay) */
static void agent_relay_answered(void *ctx, const uint8_t *ans, size_t len)
{
	AgentReq *ar = ctx;
	OpsRelayResult r = OPS_RELAY_UNREACHABLE;

	/* (a copy: a listing may wait for the keystore before it is merged) */
	if (ans && (ar->ans = malloc(len))) {
		memcpy(ar->ans, ans, len);
		ar->ans_len = len;
		r = ans[0] == AGENT_FAILURE ? OPS_RELAY_FAILED : OPS_RELAY_OK;
	}
	ops_relay_done(&ar->op, r);
}

/* Op.relay: the core sends @op (kept) to this connection's upstream agent */
static int agent_relay(Op *op)
{
	AgentReq *ar = AGENT_REQ(op);
	Stream *s = ar->stream;
	AgentConn *ac = s->data;
	OpsRelayKind k = op->up.kind;
	uint64_t timeout = k == OPS_RELAY_LIST || k == OPS_RELAY_QUERY || k == OPS_RELAY_COPY ? AGENT_UPSTREAM_LIST_MS
	                                                                                       : AGENT_UPSTREAM_OP_MS;
	int r;

	if (s->closing || !ar->heap || !ar->msg)
		return -1;
	if (!ac->up && !(ac->up = agent_upstream_new(ac->upcfg)))
		return -1;
	r = agent_upstream_send(ac->up, ar->msg, ar->msg_len, timeout, op->up.what, agent_relay_answered, ar);
	/* the transport has its own copy (an add's private key: wiped once written) */
	sigil_wipe(ar->msg, ar->msg_len);
	free(ar->msg);
	ar->msg = NULL;
	return r;
}

/* the core keeps the op: a copy with its own data, and the connection
 * takes no frame until it is answered */
static Op *agent_keep(Op *op)
{
	AgentReq *ar = AGENT_REQ(op), *h = calloc(1, sizeof(*h));

	if (!h)
		return NULL;
	*h = *ar;
	h->heap = true;
	h->op.q = &h->req;
	/* the message only while the core may still relay it (an op whose
	 * key sigild found is its own: a signature on the workers) */
	h->msg = NULL;
	if (ar->msg && !op->key) {
		h->msg = malloc(ar->msg_len ? ar->msg_len : 1);
		if (!h->msg) {
			free(h);
			return NULL;
		}
		memcpy(h->msg, ar->msg, ar->msg_len);
	}
	if (ar->data) {
		h->data = malloc(ar->data_len ? ar->data_len : 1);
		if (!h->data) {
			if (h->msg) {
				sigil_wipe(h->msg, h->msg_len);
				free(h->msg);
			}
			free(h);
			return NULL;
		}
		memcpy(h->data, ar->data, ar->data_len);
		if (h->op.kind == OP_UNLOCK || h->op.kind == OP_LOCK)
			h->req.u.lock.passphrase = (ProtoBytes){ h->data, h->data_len }; /* (unlock's too) */
		else
			h->req.u.sign.message = (ProtoBytes){ h->data, h->data_len };
	}
	/* the ssh-add seed, constraints and certificate moved into the copy */
	sigil_wipe(ar->op.add.seed, sizeof(ar->op.add.seed));
	ar->op.add.dest = NULL;
	ar->op.cert = NULL;
	ar->op.add.cert_comment = NULL;
	/* a copy for the upstream is not waited for: sigil answered */
	if (!(h->op.kind == OP_AGENT_RELAY && h->op.up.kind == OPS_RELAY_COPY)) {
		stream_hold(h->stream);
		h->held = true;
	}
	stream_op_kept(h->stream, h->op.cost);
	return &h->op;
}

static void agent_submit(Stream *s, AgentReq *ar, OpKind kind)
{
	AgentConn *ac = s->data;

	ar->stream = s;
	ar->op.kind = kind;
	ar->op.peer = &s->peer;
	ar->op.client = &s->client;
	ar->op.session = &ac->session;
	ar->op.q = &ar->req;
	ar->op.done = agent_done;
	ar->op.keep = agent_keep;
	if (agent_has_upstream(ac)) {
		/* the message goes with the op: the core may relay it */
		ar->op.relay = agent_relay;
		if (!ar->msg && ac->frame &&
		    (kind == OP_AGENT_LIST || kind == OP_AGENT_SIGN || kind == OP_AGENT_REMOVE || kind == OP_AGENT_RELAY)) {
			ar->msg = (uint8_t *)ac->frame;
			ar->msg_len = ac->frame_len;
		}
	}
	ar->op.cost = sizeof(*ar) + ar->data_len + ar->msg_len;
	ar->req.method = PROTO_METHOD_UNKNOWN;
	ops_submit(ac->ops, &ar->op);
	/* the original (kept or answered) */
	sigil_wipe(ar->op.add.seed, sizeof(ar->op.add.seed));
	ar->op.add.dest = agent_restrict_free(ar->op.add.dest);
	free(ar->op.cert);
	ar->op.cert = NULL;
	free(ar->op.add.cert_comment);
	ar->op.add.cert_comment = NULL;
}

/* a copy of bytes of the request (a certificate, its comment) */
static uint8_t *agent_dup(const uint8_t *p, size_t n)
{
	uint8_t *d = malloc(n ? n : 1);

	if (d && n)
		memcpy(d, p, n);
	return d;
}

/* the identity a request names: a plain ssh-ed25519 blob (op->pk) or
 * another blob, a certificate that ops.c resolves (op->cert).
 * Return: 0 or -1 (out of memory) */
static int agent_identity(Op *op, const uint8_t *blob, size_t len)
{
	if (agent_parse_ed25519_blob(blob, len, op->pk) == 0)
		return 0;
	op->cert = agent_dup(blob, len);
	op->cert_len = len;
	return op->cert ? 0 : -1;
}

/* ---- requests ------------------------------------------------------------------ */

static void agent_sign(Stream *s, AgentIn *in)
{
	AgentReq ar = { 0 };
	const uint8_t *blob, *data;
	size_t blob_len, data_len;
	uint32_t flags;
	uint8_t pk[32];
	bool is_cert;

	blob = agent_get_string(in, &blob_len);
	data = agent_get_string(in, &data_len);
	flags = agent_get_u32(in);
	if (in->bad || in->n != 0 || agent_identity(&ar.op, blob, blob_len) < 0) {
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	/* flags choose an RSA signature's hash: sigil's Ed25519 keys take
	 * none, the upstream's keys may */
	if (flags != 0 && (!agent_has_upstream(s->data) || !ar.op.cert ||
	                   agent_cert_key_of(blob, blob_len, pk, &is_cert) == 0)) {
		free(ar.op.cert);
		log_debug("ssh-agent: sign request with flags %u refused (Ed25519 takes 0)", (unsigned)flags);
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	ar.data = (uint8_t *)data;
	ar.data_len = data_len;
	ar.req.u.sign.message = (ProtoBytes){ data, data_len };
	ar.req.u.sign.mode = PROTO_MODE_PURE;
	agent_submit(s, &ar, OP_AGENT_SIGN);
}

/* the constraints of an ADD_ID_CONSTRAINED into @a. Return: 0 or -1 (refused) */
static int agent_parse_constraints(AgentIn *in, OpsAgentAdd *a)
{
	while (!in->bad && in->n > 0) {
		uint8_t ct = agent_get_u8(in);

		if (ct == AGENT_CONSTRAIN_LIFETIME) {
			a->lifetime = agent_get_u32(in);
			if (a->lifetime == 0)
				return -1;
		} else if (ct == AGENT_CONSTRAIN_CONFIRM) {
			a->confirm = true;
		} else {
			size_t nl = 0, pl;
			const uint8_t *name = ct == AGENT_CONSTRAIN_EXTENSION ? agent_get_string(in, &nl) : NULL;

			if (agent_string_is(name, nl, "restrict-destination-v00@openssh.com") && !a->dest) {
				const uint8_t *payload = agent_get_string(in, &pl);

				if (in->bad || !(a->dest = agent_restrict_parse(payload, pl))) {
					log_info("ssh-agent: refused a key with a malformed destination constraint");
					return -1;
				}
				continue;
			}
			if (name)
				log_info("ssh-agent: refused a key with the unsupported constraint %.*s",
				         (int)(nl > 64 ? 64 : nl), (const char *)name);
			else
				log_info("ssh-agent: refused a key with unknown constraint %u", (unsigned)ct);
			return -1;
		}
	}
	return in->bad ? -1 : 0;
}

static void agent_add(Stream *s, AgentIn *in, bool constrained)
{
	AgentReq ar = { 0 };
	OpsAgentAdd *a = &ar.op.add;
	const uint8_t *type, *pkp, *sk, *comment;
	size_t type_len, pk_len, sk_len, comment_len, cert_len;

	type = agent_get_string(in, &type_len);
	if (!in->bad && agent_string_is(type, type_len, AGENT_CERT_ED25519)) {
		/* a certificate, then the key's fields as a plain add; ops.c
		 * checks that it certifies that key */
		const uint8_t *cert = agent_get_string(in, &cert_len);

		if (!in->bad && !(ar.op.cert = agent_dup(cert, cert_len))) {
			agent_send_byte(s, AGENT_FAILURE);
			return;
		}
		ar.op.cert_len = cert_len;
	} else if (!in->bad && !agent_string_is(type, type_len, "ssh-ed25519") && agent_has_upstream(s->data)) {
		/* a key type sigil cannot hold: the upstream's (ops.c decides) */
		AgentConn *ac = s->data;

		ar.op.up.kind = OPS_RELAY_ADD;
		snprintf(ar.op.up.what, sizeof(ar.op.up.what), "add %.*s", (int)(type_len > 32 ? 32 : type_len),
		         (const char *)type);
		ar.msg = (uint8_t *)ac->frame;
		ar.msg_len = ac->frame_len;
		agent_submit(s, &ar, OP_AGENT_RELAY);
		return;
	} else if (in->bad || !agent_string_is(type, type_len, "ssh-ed25519")) {
		if (!in->bad && agent_cert_is_type(type, type_len))
			log_info("ssh-agent: refused to add a %.*s certificate (Ed25519 certificates only)",
			         (int)(type_len > 64 ? 64 : type_len), (const char *)type);
		else
			log_info("ssh-agent: refused to add a key that is not ssh-ed25519");
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	pkp = agent_get_string(in, &pk_len);
	sk = agent_get_string(in, &sk_len);
	comment = agent_get_string(in, &comment_len);
	if (in->bad || pk_len != 32 || sk_len != 64 || memcmp(sk + 32, pkp, 32) != 0 ||
	    (constrained && agent_parse_constraints(in, a) < 0) || in->n != 0 ||
	    (ar.op.cert && !(a->cert_comment = agent_dup(comment, comment_len)))) {
		agent_restrict_free(a->dest);
		free(ar.op.cert);
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	a->cert_comment_len = comment_len;
	memcpy(ar.op.pk, pkp, 32);
	memcpy(a->seed, sk, 32);
	if (comment_len > 0 && comment_len <= PROTO_LABEL_MAX && proto_label_valid((const char *)comment, comment_len))
		memcpy(a->comment, comment, comment_len);
	agent_submit(s, &ar, OP_AGENT_ADD);
}

static void agent_by_key(Stream *s, AgentIn *in, OpKind kind)
{
	AgentReq ar = { 0 };
	const uint8_t *blob;
	size_t len;

	blob = agent_get_string(in, &len);
	if (in->bad || in->n != 0 || agent_identity(&ar.op, blob, len) < 0) {
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	agent_submit(s, &ar, kind);
}

static void agent_lock(Stream *s, AgentIn *in, bool lock)
{
	AgentReq ar = { 0 };
	const uint8_t *pass;
	size_t len;

	pass = agent_get_string(in, &len);
	if (in->bad || in->n != 0 || len > PROTO_PASSPHRASE_MAX) {
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	/* one lock for both sockets (ops.c): the agent's always has a passphrase */
	ar.req.u.lock.has_passphrase = true;
	ar.req.u.lock.passphrase = (ProtoBytes){ pass, len };
	/* (a kept copy, e.g. parked behind an unlock, points into its own data) */
	ar.data = (uint8_t *)pass;
	ar.data_len = len;
	agent_submit(s, &ar, lock ? OP_LOCK : OP_UNLOCK);
}

/* the message being translated as a relay of @kind (the core decides) */
static void agent_relay_new(Stream *s, OpsRelayKind kind, const char *what)
{
	AgentReq ar = { 0 };

	ar.op.up.kind = kind;
	snprintf(ar.op.up.what, sizeof(ar.op.up.what), "%s", what);
	agent_submit(s, &ar, OP_AGENT_RELAY);
}

static void agent_extension(Stream *s, AgentIn *in)
{
	AgentConn *ac = s->data;
	const uint8_t *name;
	size_t len;

	name = agent_get_string(in, &len);
	if (in->bad) {
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	if (agent_string_is(name, len, "query") && in->n == 0) {
		if (agent_has_upstream(ac))
			agent_relay_new(s, OPS_RELAY_QUERY, "query"); /* and the upstream's names */
		else
			agent_send_query(s, NULL, 0);
	} else if (agent_string_is(name, len, "session-bind@openssh.com")) {
		agent_send_byte(s, agent_session_bind(&ac->session, in->p, in->n) == 0 ? AGENT_SUCCESS : AGENT_FAILURE);
		/* the upstream's destination constraints need it too (even one
		 * sigil cannot verify: a bind only ever restricts) */
		agent_copy(s, "session-bind", ac->frame, ac->frame_len);
	} else if (agent_has_upstream(ac)) {
		char what[40];

		snprintf(what, sizeof(what), "extension %.*s", (int)(len > 24 ? 24 : len), (const char *)name);
		agent_relay_new(s, OPS_RELAY_EXTENSION, what);
	} else {
		agent_send_byte(s, AGENT_FAILURE);
	}
}

static void agent_frame(Stream *s, uint8_t *msg, size_t len)
{
	AgentConn *ac = s->data;
	AgentIn in = { msg, len, false };
	uint8_t type = agent_get_u8(&in);

	if (in.bad) {
		agent_send_byte(s, AGENT_FAILURE);
		return;
	}
	ac->frame = msg;
	ac->frame_len = len;
	switch (type) {
	case AGENTC_REQUEST_IDENTITIES:
		if (in.n != 0) {
			agent_send_byte(s, AGENT_FAILURE);
		} else {
			AgentReq ar = { 0 };

			agent_submit(s, &ar, OP_AGENT_LIST);
		}
		break;
	case AGENTC_SIGN_REQUEST:
		agent_sign(s, &in);
		break;
	case AGENTC_ADD_IDENTITY:
		agent_add(s, &in, false);
		break;
	case AGENTC_ADD_ID_CONSTRAINED:
		agent_add(s, &in, true);
		break;
	case AGENTC_REMOVE_IDENTITY:
		agent_by_key(s, &in, OP_AGENT_REMOVE);
		break;
	case AGENTC_REMOVE_ALL_IDENTITIES:
		if (in.n != 0) {
			agent_send_byte(s, AGENT_FAILURE);
		} else {
			AgentReq ar = { 0 };

			agent_submit(s, &ar, OP_AGENT_REMOVE_ALL);
		}
		break;
	case AGENTC_LOCK:
		agent_lock(s, &in, true);
		break;
	case AGENTC_UNLOCK:
		agent_lock(s, &in, false);
		break;
	case AGENTC_EXTENSION:
		agent_extension(s, &in);
		break;
	default:
		agent_send_byte(s, AGENT_FAILURE);
		break;
	}
	ac->frame = NULL;
	ac->frame_len = 0;
	/* the frame may hold a private key or a passphrase (stream.c wipes
	 * consumed bytes as well) */
	if (type == AGENTC_ADD_IDENTITY || type == AGENTC_ADD_ID_CONSTRAINED || type == AGENTC_LOCK ||
	    type == AGENTC_UNLOCK)
		sigil_wipe(msg, len);
}

static void agent_fail(Stream *s, int err)
{
	(void)err;
	log_info("ssh-agent: uid %d pid %d sent a message over %u bytes; closing", (int)s->peer.uid, (int)s->peer.pid,
	         AGENT_MAX_MSG);
}

/* the connection closes: what waits for the upstream ends now (unreachable) */
static void agent_closed(Stream *s)
{
	AgentConn *ac = s->data;

	if (ac) {
		agent_upstream_free(ac->up);
		ac->up = NULL;
	}
}

static void agent_freed(Stream *s)
{
	AgentConn *ac = s->data;

	if (ac) {
		agent_upstream_free(ac->up);
		sigil_wipe(ac, sizeof(*ac));
		free(ac);
	}
}

const StreamClass agent_class = {
	.name = "ssh-agent: ",
	.frame = agent_frame,
	.fail = agent_fail,
	.closed = agent_closed,
	.freed = agent_freed,
};

int agent_stream_init(Stream *s, Ops *ops, AgentUpstreamConfig *upstream)
{
	AgentConn *ac = calloc(1, sizeof(*ac));

	if (!ac)
		return -ENOMEM;
	ac->ops = ops;
	ac->upcfg = upstream;
	s->data = ac;
	return 0;
}

int agent_framer(StreamFramer *fr)
{
	return stream_framer_u32(fr, AGENT_MAX_MSG);
}
