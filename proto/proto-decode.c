/* SPDX-License-Identifier: MIT */
/*
 * proto-decode.c - decode a request frame into a typed ProtoRequest
 *
 * Every parameter is type-checked. Binary values must be msgpack bin,
 * names (labels, types, modes, policies) msgpack str, flags msgpack bool.
 * Unknown fields are ignored; a missing required field is a bad_request
 * that names it. The decoded request points into the frame (zero copy).
 */
#include <errno.h>
#include <msgpack.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto-private.h"

typedef struct Dec {
	char *errmsg;
} Dec;

__attribute__((format(printf, 2, 3)))
static int bad(Dec *d, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(d->errmsg, PROTO_MESSAGE_MAX, fmt, ap);
	va_end(ap);
	return PROTO_E_BAD_REQUEST;
}

static const msgpack_object *field(const msgpack_object *map, const char *name)
{
	size_t n = strlen(name);

	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object_kv *kv = &map->via.map.ptr[i];

		if (kv->key.type == MSGPACK_OBJECT_STR && kv->key.via.str.size == n &&
		    memcmp(kv->key.via.str.ptr, name, n) == 0)
			return &kv->val;
	}
	return NULL;
}

/* bin of exactly len bytes (len > 0) or at most max bytes (len == 0) */
static int get_bin(Dec *d, const msgpack_object *map, const char *name, bool required,
                   size_t len, size_t max, ProtoBytes *out, bool *presentp)
{
	const msgpack_object *o = field(map, name);

	if (presentp)
		*presentp = o != NULL;
	if (!o) {
		if (required)
			return bad(d, "missing field '%s'", name);
		*out = (ProtoBytes){ NULL, 0 };
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_BIN)
		return bad(d, "field '%s' must be bin", name);
	if (len && o->via.bin.size != len)
		return bad(d, "field '%s' must be %zu bytes, got %u", name, len, o->via.bin.size);
	if (!len && o->via.bin.size > max)
		return bad(d, "field '%s' must be at most %zu bytes, got %u", name, max, o->via.bin.size);
	out->data = (const uint8_t *)o->via.bin.ptr;
	out->len = o->via.bin.size;
	/* a zero-length bin may come with a NULL pointer: give a valid one */
	if (!out->data)
		out->data = (const uint8_t *)"";
	return 0;
}

static int get_bool(Dec *d, const msgpack_object *map, const char *name, bool *out)
{
	const msgpack_object *o = field(map, name);

	if (!o || o->type == MSGPACK_OBJECT_NIL) {
		*out = false;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return bad(d, "field '%s' must be a boolean", name);
	*out = o->via.boolean;
	return 0;
}

/* a str from a fixed set of names; def (>= 0) when absent, -1 if required */
static int get_enum(Dec *d, const msgpack_object *map, const char *name, int def,
                    int (*from)(const char *, size_t), const char *choices, int *out)
{
	const msgpack_object *o = field(map, name);
	int v;

	if (!o || o->type == MSGPACK_OBJECT_NIL) {
		if (def < 0)
			return bad(d, "missing field '%s'", name);
		*out = def;
		return 0;
	}
	if (o->type != MSGPACK_OBJECT_STR)
		return bad(d, "field '%s' must be a string (%s)", name, choices);
	v = from(o->via.str.ptr, o->via.str.size);
	if (v < 0)
		return bad(d, "field '%s' must be one of %s", name, choices);
	*out = v;
	return 0;
}

static int get_label(Dec *d, const msgpack_object *map, const char *name, char out[PROTO_LABEL_MAX + 1])
{
	const msgpack_object *o = field(map, name);

	if (!o)
		return bad(d, "missing field '%s'", name);
	if (o->type != MSGPACK_OBJECT_STR)
		return bad(d, "field '%s' must be a string", name);
	if (!proto_label_valid(o->via.str.ptr, o->via.str.size))
		return bad(d, "field '%s' must match [A-Za-z0-9._@+-]{1,64}", name);
	memcpy(out, o->via.str.ptr, o->via.str.size);
	out[o->via.str.size] = '\0';
	return 0;
}

static int key_type_from(const char *s, size_t n)
{
	return proto_key_type_from_name(s, n);
}

/* mode + context + prehashed, shared by sign and verify */
static int get_mode(Dec *d, const msgpack_object *p, ProtoSignMode *modep, ProtoBytes *ctxp,
                    bool *prehashedp, const ProtoBytes *message)
{
	int mode = PROTO_MODE_PURE, r;
	bool has_ctx;

	r = get_enum(d, p, "mode", PROTO_MODE_PURE, proto__mode_from_name, "pure, ctx, ph", &mode);
	if (r)
		return r;
	r = get_bin(d, p, "context", false, 0, PROTO_CONTEXT_MAX, ctxp, &has_ctx);
	if (r)
		return r;
	r = get_bool(d, p, "prehashed", prehashedp);
	if (r)
		return r;
	if (mode == PROTO_MODE_PURE && has_ctx)
		return bad(d, "field 'context' needs mode 'ctx' or 'ph'");
	if (mode == PROTO_MODE_CTX && ctxp->len == 0)
		return bad(d, "field 'context' must be 1 to 255 bytes in mode 'ctx'");
	if (*prehashedp && mode != PROTO_MODE_PH)
		return bad(d, "field 'prehashed' needs mode 'ph'");
	if (*prehashedp && message->len != PROTO_DIGEST_LEN)
		return bad(d, "field 'message' must be the 64-byte SHA-512 digest when prehashed");
	*modep = (ProtoSignMode)mode;
	return 0;
}

static int get_u64(Dec *d, const msgpack_object *o, const char *name, uint64_t max, uint64_t *out)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > max)
		return bad(d, "field '%s' must be an integer from 0 to %llu", name, (unsigned long long)max);
	*out = o->via.u64;
	return 0;
}

static int get_ids(Dec *d, const msgpack_object *pol, const char *name, uint32_t *ids, size_t *np)
{
	const msgpack_object *o = field(pol, name);
	uint64_t v = 0;

	*np = 0;
	if (!o || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size > PROTO_POLICY_IDS_MAX)
		return bad(d, "field 'policy.%s' must be an array of at most %d ids", name, PROTO_POLICY_IDS_MAX);
	for (uint32_t i = 0; i < o->via.array.size; i++) {
		if (o->via.array.ptr[i].type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.array.ptr[i].via.u64 >= UINT32_MAX)
			return bad(d, "field 'policy.%s' must hold ids from 0 to %u", name, UINT32_MAX - 1);
		v = o->via.array.ptr[i].via.u64;
		ids[(*np)++] = (uint32_t)v;
	}
	return 0;
}

/* "policy": see ProtoKeyPolicy; *polp is NULL when absent, else in req->priv */
static int get_policy(Dec *d, ProtoRequest *req, const msgpack_object *p, const ProtoKeyPolicy **polp)
{
	const msgpack_object *o = field(p, "policy"), *f;
	ProtoKeyPolicy *pol;
	uint64_t v = 0;
	int r;

	*polp = NULL;
	if (!o || o->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (o->type != MSGPACK_OBJECT_MAP)
		return bad(d, "field 'policy' must be a map");
	pol = calloc(1, sizeof(*pol));
	if (!pol)
		return -ENOMEM;
	req->priv = pol;
	*polp = pol;
	pol->set = true;
	f = field(o, "ops");
	if (f && f->type != MSGPACK_OBJECT_NIL) {
		if (f->type != MSGPACK_OBJECT_ARRAY || f->via.array.size == 0)
			return bad(d, "field 'policy.ops' must be a non-empty array of \"sign\", \"dh\", \"age-unwrap\"");
		for (uint32_t i = 0; i < f->via.array.size; i++) {
			const msgpack_object *e = &f->via.array.ptr[i];

			if (e->type == MSGPACK_OBJECT_STR && e->via.str.size == 4 && memcmp(e->via.str.ptr, "sign", 4) == 0)
				pol->ops |= PROTO_OP_SIGN;
			else if (e->type == MSGPACK_OBJECT_STR && e->via.str.size == 2 && memcmp(e->via.str.ptr, "dh", 2) == 0)
				pol->ops |= PROTO_OP_DH;
			else if (e->type == MSGPACK_OBJECT_STR && e->via.str.size == 10 &&
			         memcmp(e->via.str.ptr, "age-unwrap", 10) == 0)
				pol->ops |= PROTO_OP_AGE_UNWRAP;
			else
				return bad(d, "field 'policy.ops' must hold \"sign\", \"dh\" or \"age-unwrap\"");
		}
	}
	f = field(o, "expires");
	if (f && f->type != MSGPACK_OBJECT_NIL) {
		if (get_u64(d, f, "policy.expires", INT64_MAX, &v))
			return PROTO_E_BAD_REQUEST;
		pol->expires = (int64_t)v;
	}
	r = get_ids(d, o, "uids", pol->uids, &pol->n_uids);
	if (!r)
		r = get_ids(d, o, "gids", pol->gids, &pol->n_gids);
	if (r)
		return r;
	f = field(o, "exes");
	if (f && f->type != MSGPACK_OBJECT_NIL) {
		if (f->type != MSGPACK_OBJECT_ARRAY || f->via.array.size > PROTO_POLICY_EXES_MAX)
			return bad(d, "field 'policy.exes' must be an array of at most %d paths", PROTO_POLICY_EXES_MAX);
		for (uint32_t i = 0; i < f->via.array.size; i++) {
			const msgpack_object *e = &f->via.array.ptr[i];

			if (e->type != MSGPACK_OBJECT_STR || e->via.str.size < 2 || e->via.str.size >= PROTO_POLICY_EXE_MAX ||
			    e->via.str.ptr[0] != '/' || memchr(e->via.str.ptr, '\0', e->via.str.size))
				return bad(d, "field 'policy.exes' must hold absolute paths under %d bytes",
				           PROTO_POLICY_EXE_MAX);
			memcpy(pol->exes[i], e->via.str.ptr, e->via.str.size);
			pol->exes[i][e->via.str.size] = '\0';
			pol->n_exes++;
		}
	}
	f = field(o, "max_signs");
	if (f && f->type != MSGPACK_OBJECT_NIL && get_u64(d, f, "policy.max_signs", UINT64_MAX, &pol->max_signs))
		return PROTO_E_BAD_REQUEST;
	f = field(o, "rate");
	if (f && f->type != MSGPACK_OBJECT_NIL) {
		if (get_u64(d, f, "policy.rate", UINT32_MAX, &v))
			return PROTO_E_BAD_REQUEST;
		pol->rate = (uint32_t)v;
	}
	return 0;
}

static int decode_params(Dec *d, ProtoRequest *req, const msgpack_object *p)
{
	int r, v = 0;

	switch (req->method) {
	case PROTO_METHOD_HELLO:
	case PROTO_METHOD_STATUS:
	case PROTO_METHOD_KEY_LIST:
		return 0;
	case PROTO_METHOD_KEY_GENERATE:
		r = get_enum(d, p, "type", -1, key_type_from, "ed25519, x25519", &v);
		if (r)
			return r;
		req->u.key_generate.type = (ProtoKeyType)v;
		r = get_label(d, p, "label", req->u.key_generate.label);
		if (r)
			return r;
		r = get_policy(d, req, p, &req->u.key_generate.policy);
		if (r)
			return r;
		return get_bool(d, p, "exportable", &req->u.key_generate.exportable);
	case PROTO_METHOD_KEY_IMPORT: {
		ProtoBytes seed;

		r = get_enum(d, p, "type", -1, key_type_from, "ed25519, x25519", &v);
		if (r)
			return r;
		req->u.key_import.type = (ProtoKeyType)v;
		r = get_label(d, p, "label", req->u.key_import.label);
		if (r)
			return r;
		r = get_bin(d, p, "seed", true, PROTO_KEY_LEN, 0, &seed, NULL);
		if (r)
			return r;
		req->u.key_import.seed = seed.data;
		r = get_policy(d, req, p, &req->u.key_import.policy);
		if (r)
			return r;
		return get_bool(d, p, "exportable", &req->u.key_import.exportable);
	}
	case PROTO_METHOD_KEY_PUBLIC:
		return get_label(d, p, "label", req->u.key_public.label);
	case PROTO_METHOD_KEY_DELETE:
		return get_label(d, p, "label", req->u.key_delete.label);
	case PROTO_METHOD_KEY_EXPORT:
		return get_label(d, p, "label", req->u.key_export.label);
	case PROTO_METHOD_SIGN:
		r = get_label(d, p, "key", req->u.sign.label);
		if (r)
			return r;
		r = get_bin(d, p, "message", true, 0, SIZE_MAX, &req->u.sign.message, NULL);
		if (r)
			return r;
		return get_mode(d, p, &req->u.sign.mode, &req->u.sign.context, &req->u.sign.prehashed,
		                &req->u.sign.message);
	case PROTO_METHOD_VERIFY: {
		ProtoBytes pk, sig;

		r = get_bin(d, p, "public_key", true, PROTO_KEY_LEN, 0, &pk, NULL);
		if (r)
			return r;
		r = get_bin(d, p, "message", true, 0, SIZE_MAX, &req->u.verify.message, NULL);
		if (r)
			return r;
		r = get_bin(d, p, "signature", true, PROTO_SIG_LEN, 0, &sig, NULL);
		if (r)
			return r;
		req->u.verify.public_key = pk.data;
		req->u.verify.signature = sig.data;
		r = get_enum(d, p, "policy", PROTO_POLICY_STRICT, proto__policy_from_name, "strict, zip215", &v);
		if (r)
			return r;
		req->u.verify.policy = (ProtoPolicy)v;
		return get_mode(d, p, &req->u.verify.mode, &req->u.verify.context,
		                &req->u.verify.prehashed, &req->u.verify.message);
	}
	case PROTO_METHOD_VERIFY_BATCH: {
		const msgpack_object *items = field(p, "items");
		ProtoVerifyItem *out;

		if (!items)
			return bad(d, "missing field 'items'");
		if (items->type != MSGPACK_OBJECT_ARRAY)
			return bad(d, "field 'items' must be an array");
		r = get_enum(d, p, "policy", PROTO_POLICY_STRICT, proto__policy_from_name, "strict, zip215", &v);
		if (r)
			return r;
		req->u.verify_batch.policy = (ProtoPolicy)v;
		out = calloc(items->via.array.size ? items->via.array.size : 1, sizeof(*out));
		if (!out)
			return -ENOMEM;
		req->priv = out;
		for (uint32_t i = 0; i < items->via.array.size; i++) {
			const msgpack_object *it = &items->via.array.ptr[i];
			ProtoBytes pk, sig;

			if (it->type != MSGPACK_OBJECT_MAP)
				return bad(d, "field 'items[%u]' must be a map", i);
			r = get_bin(d, it, "public_key", true, PROTO_KEY_LEN, 0, &pk, NULL);
			if (!r)
				r = get_bin(d, it, "message", true, 0, SIZE_MAX, &out[i].message, NULL);
			if (!r)
				r = get_bin(d, it, "signature", true, PROTO_SIG_LEN, 0, &sig, NULL);
			if (r) {
				/* prefix the field name with the item index */
				char tmp[PROTO_MESSAGE_MAX];

				memcpy(tmp, d->errmsg, sizeof(tmp));
				return bad(d, "items[%u]: %.200s", i, tmp);
			}
			out[i].public_key = pk.data;
			out[i].signature = sig.data;
		}
		req->u.verify_batch.items = out;
		req->u.verify_batch.n_items = items->via.array.size;
		return 0;
	}
	case PROTO_METHOD_DH: {
		ProtoBytes peer;

		r = get_label(d, p, "key", req->u.dh.label);
		if (r)
			return r;
		r = get_bin(d, p, "peer", true, PROTO_KEY_LEN, 0, &peer, NULL);
		if (r)
			return r;
		req->u.dh.peer = peer.data;
		return 0;
	}
	case PROTO_METHOD_AGE_UNWRAP: {
		ProtoBytes share, body;

		r = get_label(d, p, "key", req->u.age_unwrap.label);
		if (!r)
			r = get_bin(d, p, "share", true, PROTO_KEY_LEN, 0, &share, NULL);
		if (!r)
			r = get_bin(d, p, "body", true, PROTO_AGE_BODY_LEN, 0, &body, NULL);
		if (r)
			return r;
		req->u.age_unwrap.share = share.data;
		req->u.age_unwrap.body = body.data;
		return 0;
	}
	case PROTO_METHOD_KEY_EXPORT_WRAPPED: {
		const msgpack_object *o = field(p, "recipient");

		r = get_label(d, p, "label", req->u.key_export_wrapped.label);
		if (r)
			return r;
		if (!o)
			return bad(d, "missing field 'recipient'");
		if (o->type != MSGPACK_OBJECT_STR || o->via.str.size == 0 || o->via.str.size > PROTO_AGE_RECIPIENT_MAX ||
		    memchr(o->via.str.ptr, '\0', o->via.str.size))
			return bad(d, "field 'recipient' must be an age recipient (age1...)");
		memcpy(req->u.key_export_wrapped.recipient, o->via.str.ptr, o->via.str.size);
		req->u.key_export_wrapped.recipient[o->via.str.size] = '\0';
		return get_bool(d, p, "armor", &req->u.key_export_wrapped.armor);
	}
	case PROTO_METHOD_KEY_IMPORT_WRAPPED:
		r = get_label(d, p, "label", req->u.key_import_wrapped.label);
		if (!r)
			r = get_label(d, p, "key", req->u.key_import_wrapped.key);
		if (!r)
			r = get_bin(d, p, "file", true, 0, SIZE_MAX, &req->u.key_import_wrapped.file, NULL);
		return r;
	case PROTO_METHOD_AUDIT: {
		const msgpack_object *o = field(p, "limit");

		req->u.audit.limit = 100;
		if (!o || o->type == MSGPACK_OBJECT_NIL)
			return 0;
		if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 < 1)
			return bad(d, "field 'limit' must be a positive integer");
		req->u.audit.limit = o->via.u64;
		return 0;
	}
	case PROTO_METHOD_LOCK:
	case PROTO_METHOD_UNLOCK:
	case PROTO_METHOD_REKEY: {
		const msgpack_object *o = field(p, "passphrase");

		/* lock, unlock and rekey share one layout */
		req->u.lock.has_passphrase = false;
		req->u.lock.master_key_file = NULL;
		if (req->method == PROTO_METHOD_REKEY) {
			const msgpack_object *f = field(p, "master_key_file");

			if (f && f->type != MSGPACK_OBJECT_NIL) {
				char *path;

				if (f->type != MSGPACK_OBJECT_STR || f->via.str.size < 2 ||
				    f->via.str.size >= PROTO_PATH_MAX || f->via.str.ptr[0] != '/' ||
				    memchr(f->via.str.ptr, '\0', f->via.str.size))
					return bad(d, "field 'master_key_file' must be an absolute path under %d bytes",
					           PROTO_PATH_MAX);
				path = strndup(f->via.str.ptr, f->via.str.size);
				if (!path)
					return -ENOMEM;
				req->priv = path;
				req->u.rekey.master_key_file = path;
			}
		}
		if (!o || o->type == MSGPACK_OBJECT_NIL)
			return 0;
		if (o->type != MSGPACK_OBJECT_STR && o->type != MSGPACK_OBJECT_BIN)
			return bad(d, "field 'passphrase' must be a string or bin");
		if (o->via.str.size > PROTO_PASSPHRASE_MAX)
			return bad(d, "field 'passphrase' must be at most %d bytes", PROTO_PASSPHRASE_MAX);
		req->u.lock.has_passphrase = true;
		req->u.lock.passphrase.data = (const uint8_t *)(o->via.str.ptr ? o->via.str.ptr : "");
		req->u.lock.passphrase.len = o->via.str.size;
		return 0;
	}
	default:
		return bad(d, "internal: no decoder");
	}
}

/* the first chunk of a request's zone: the objects of a sign, verify or
 * dh request (an array of 4 and a map of a few pairs) fit in it */
#define PROTO_ZONE_FIRST 512

int proto_request_decode(ProtoRequest *req, bool *has_msgidp, const uint8_t *frame, size_t len,
                         char errmsg[PROTO_MESSAGE_MAX])
{
	msgpack_zone zone;
	msgpack_object obj;
	const msgpack_object *root, *a;
	const msgpack_object *params;
	static const msgpack_object empty_map = { .type = MSGPACK_OBJECT_MAP };
	Dec d = { .errmsg = errmsg };
	size_t off = 0;
	int r;

	memset(req, 0, sizeof(*req));
	req->method = PROTO_METHOD_UNKNOWN;
	*has_msgidp = false;
	errmsg[0] = '\0';

	/* the objects of a request in a zone of its own whose first chunk is
	 * small (msgpack_unpack_next's default zone is an 8 KiB allocation,
	 * outside glibc's per-thread cache: two of them per request were
	 * 3-4% of the loop thread under load); larger requests grow it */
	if (!msgpack_zone_init(&zone, PROTO_ZONE_FIRST))
		return -ENOMEM;
	r = msgpack_unpack((const char *)frame, len, &off, &zone, &obj);
	if (r == MSGPACK_UNPACK_NOMEM_ERROR) {
		r = -ENOMEM;
		goto out;
	}
	if (r != MSGPACK_UNPACK_SUCCESS || off != len) {
		r = bad(&d, "not a msgpack object");
		goto out;
	}
	root = &obj;
	if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size < 3) {
		r = bad(&d, "a request is [0, msgid, method, [params]]");
		goto out;
	}
	a = root->via.array.ptr;
	if (a[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		req->msgid = a[1].via.u64;
		*has_msgidp = true;
	}
	if (root->via.array.size != 4 || a[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || a[0].via.u64 != 0) {
		r = bad(&d, "a request is [0, msgid, method, [params]]");
		goto out;
	}
	if (!*has_msgidp) {
		r = bad(&d, "msgid must be an unsigned integer");
		goto out;
	}
	if (a[2].type != MSGPACK_OBJECT_STR) {
		r = bad(&d, "method must be a string");
		goto out;
	}
	req->method = proto_method_from_name(a[2].via.str.ptr, a[2].via.str.size);
	if (req->method == PROTO_METHOD_UNKNOWN) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "unknown method '%.*s'",
		         (int)(a[2].via.str.size > 64 ? 64 : a[2].via.str.size), a[2].via.str.ptr);
		r = PROTO_E_UNKNOWN_METHOD;
		goto out;
	}
	/* params: [map] per DESIGN.md; [] is accepted as an empty map */
	if (a[3].type != MSGPACK_OBJECT_ARRAY || a[3].via.array.size > 1) {
		r = bad(&d, "params must be an array holding one map");
		goto out;
	}
	if (a[3].via.array.size == 0) {
		params = &empty_map;
	} else {
		params = &a[3].via.array.ptr[0];
		if (params->type != MSGPACK_OBJECT_MAP) {
			r = bad(&d, "params must be an array holding one map");
			goto out;
		}
	}
	r = decode_params(&d, req, params);
out:
	msgpack_zone_destroy(&zone);
	return r;
}

/* p, if it points into the len bytes at from (or just past them: an empty
 * bin at the frame's end), to the same offset at to */
static void rebase(const uint8_t **p, uintptr_t from, const uint8_t *to, size_t len)
{
	uintptr_t a = (uintptr_t)*p;

	if (*p && a >= from && a - from <= len)
		*p = to + (a - from);
}

int proto_request_rebase(ProtoRequest *req, const uint8_t *from, const uint8_t *to, size_t len)
{
	uintptr_t f = (uintptr_t)from;

	if (req->priv && req->method != PROTO_METHOD_VERIFY_BATCH)
		return -1;
	switch (req->method) {
	case PROTO_METHOD_VERIFY_BATCH: {
		/* the items array is the decoder's (req->priv), not the frame's:
		 * its entries point into the frame */
		ProtoVerifyItem *it = req->priv;

		for (size_t i = 0; it && i < req->u.verify_batch.n_items; i++) {
			rebase(&it[i].public_key, f, to, len);
			rebase(&it[i].signature, f, to, len);
			rebase(&it[i].message.data, f, to, len);
		}
		return 0;
	}
	case PROTO_METHOD_SIGN:
		rebase(&req->u.sign.message.data, f, to, len);
		rebase(&req->u.sign.context.data, f, to, len);
		return 0;
	case PROTO_METHOD_VERIFY:
		rebase(&req->u.verify.public_key, f, to, len);
		rebase(&req->u.verify.signature, f, to, len);
		rebase(&req->u.verify.message.data, f, to, len);
		rebase(&req->u.verify.context.data, f, to, len);
		return 0;
	case PROTO_METHOD_DH:
		rebase(&req->u.dh.peer, f, to, len);
		return 0;
	case PROTO_METHOD_AGE_UNWRAP:
		rebase(&req->u.age_unwrap.share, f, to, len);
		rebase(&req->u.age_unwrap.body, f, to, len);
		return 0;
	case PROTO_METHOD_STATUS:
	case PROTO_METHOD_KEY_LIST:
	case PROTO_METHOD_KEY_PUBLIC:
	case PROTO_METHOD_KEY_DELETE:
	case PROTO_METHOD_KEY_EXPORT:
	case PROTO_METHOD_AUDIT:
		return 0; /* labels and numbers only */
	default:
		return -1;
	}
}

void proto_request_deinit(ProtoRequest *req)
{
	free(req->priv);
	req->priv = NULL;
}
