/* SPDX-License-Identifier: MIT */
/*
 * proto-client.c - client side: request encoding, response decoding
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "proto.h"
#include "proto-client.h"
#include "proto-private.h"

/* ---- encoding ---- */

static int buf_write_cb(void *data, const char *buf, size_t len)
{
	return proto__buf_append(data, buf, len) < 0 ? -1 : 0;
}

typedef struct Enc {
	msgpack_packer pk;
	int failed;
} Enc;

static void enc_str(Enc *e, const char *s)
{
	if (msgpack_pack_str_with_body(&e->pk, s, strlen(s)) != 0)
		e->failed = 1;
}

static void enc_bin(Enc *e, const void *p, size_t n)
{
	if (msgpack_pack_bin_with_body(&e->pk, p, n) != 0)
		e->failed = 1;
}

static void enc_kv_str(Enc *e, const char *k, const char *v)
{
	enc_str(e, k);
	enc_str(e, v);
}

static void enc_kv_bin(Enc *e, const char *k, const void *p, size_t n)
{
	enc_str(e, k);
	enc_bin(e, p, n);
}

static void enc_kv_true(Enc *e, const char *k)
{
	enc_str(e, k);
	if (msgpack_pack_true(&e->pk) != 0)
		e->failed = 1;
}

static void enc_map(Enc *e, size_t n)
{
	if (msgpack_pack_map(&e->pk, n) != 0)
		e->failed = 1;
}

static void enc_u64(Enc *e, uint64_t v)
{
	if (msgpack_pack_uint64(&e->pk, v) != 0)
		e->failed = 1;
}

/* "policy": only the rules that are set */
static void enc_policy(Enc *e, const ProtoKeyPolicy *p)
{
	size_t n = (p->ops ? 1 : 0) + (p->expires ? 1 : 0) + (p->n_uids ? 1 : 0) + (p->n_gids ? 1 : 0) +
	           (p->n_exes ? 1 : 0) + (p->max_signs ? 1 : 0) + (p->rate ? 1 : 0);

	enc_str(e, "policy");
	enc_map(e, n);
	if (p->ops) {
		enc_str(e, "ops");
		if (msgpack_pack_array(&e->pk, (p->ops & PROTO_OP_SIGN ? 1 : 0) + (p->ops & PROTO_OP_DH ? 1 : 0) +
		                                   (p->ops & PROTO_OP_AGE_UNWRAP ? 1 : 0)))
			e->failed = 1;
		if (p->ops & PROTO_OP_SIGN)
			enc_str(e, "sign");
		if (p->ops & PROTO_OP_DH)
			enc_str(e, "dh");
		if (p->ops & PROTO_OP_AGE_UNWRAP)
			enc_str(e, "age-unwrap");
	}
	if (p->expires) {
		enc_str(e, "expires");
		enc_u64(e, (uint64_t)p->expires);
	}
	if (p->n_uids) {
		enc_str(e, "uids");
		if (msgpack_pack_array(&e->pk, p->n_uids))
			e->failed = 1;
		for (size_t i = 0; i < p->n_uids; i++)
			enc_u64(e, p->uids[i]);
	}
	if (p->n_gids) {
		enc_str(e, "gids");
		if (msgpack_pack_array(&e->pk, p->n_gids))
			e->failed = 1;
		for (size_t i = 0; i < p->n_gids; i++)
			enc_u64(e, p->gids[i]);
	}
	if (p->n_exes) {
		enc_str(e, "exes");
		if (msgpack_pack_array(&e->pk, p->n_exes))
			e->failed = 1;
		for (size_t i = 0; i < p->n_exes; i++)
			enc_str(e, p->exes[i]);
	}
	if (p->max_signs) {
		enc_str(e, "max_signs");
		enc_u64(e, p->max_signs);
	}
	if (p->rate) {
		enc_str(e, "rate");
		enc_u64(e, p->rate);
	}
}

static int encode_params(Enc *e, const ProtoRequest *req)
{
	const char *name, *mode, *policy;
	size_t n;

	switch (req->method) {
	case PROTO_METHOD_HELLO:
	case PROTO_METHOD_STATUS:
	case PROTO_METHOD_KEY_LIST:
		enc_map(e, 0);
		return 0;
	case PROTO_METHOD_KEY_GENERATE:
		name = proto_key_type_name(req->u.key_generate.type);
		if (!name)
			return -EINVAL;
		enc_map(e, 2 + (req->u.key_generate.exportable ? 1 : 0) + (req->u.key_generate.policy ? 1 : 0));
		enc_kv_str(e, "type", name);
		enc_kv_str(e, "label", req->u.key_generate.label);
		if (req->u.key_generate.exportable)
			enc_kv_true(e, "exportable");
		if (req->u.key_generate.policy)
			enc_policy(e, req->u.key_generate.policy);
		return 0;
	case PROTO_METHOD_KEY_IMPORT:
		name = proto_key_type_name(req->u.key_import.type);
		if (!name || !req->u.key_import.seed)
			return -EINVAL;
		enc_map(e, 3 + (req->u.key_import.exportable ? 1 : 0) + (req->u.key_import.policy ? 1 : 0));
		enc_kv_str(e, "type", name);
		enc_kv_str(e, "label", req->u.key_import.label);
		enc_kv_bin(e, "seed", req->u.key_import.seed, PROTO_KEY_LEN);
		if (req->u.key_import.exportable)
			enc_kv_true(e, "exportable");
		if (req->u.key_import.policy)
			enc_policy(e, req->u.key_import.policy);
		return 0;
	case PROTO_METHOD_KEY_PUBLIC:
		enc_map(e, 1);
		enc_kv_str(e, "label", req->u.key_public.label);
		return 0;
	case PROTO_METHOD_KEY_DELETE:
		enc_map(e, 1);
		enc_kv_str(e, "label", req->u.key_delete.label);
		return 0;
	case PROTO_METHOD_KEY_EXPORT:
		enc_map(e, 1);
		enc_kv_str(e, "label", req->u.key_export.label);
		return 0;
	case PROTO_METHOD_SIGN:
		mode = proto_mode_name(req->u.sign.mode);
		if (!mode || (req->u.sign.message.len && !req->u.sign.message.data))
			return -EINVAL;
		n = 2 + (req->u.sign.mode != PROTO_MODE_PURE) + (req->u.sign.context.len > 0) +
		    req->u.sign.prehashed;
		enc_map(e, n);
		enc_kv_str(e, "key", req->u.sign.label);
		enc_kv_bin(e, "message", req->u.sign.message.data, req->u.sign.message.len);
		if (req->u.sign.mode != PROTO_MODE_PURE)
			enc_kv_str(e, "mode", mode);
		if (req->u.sign.context.len)
			enc_kv_bin(e, "context", req->u.sign.context.data, req->u.sign.context.len);
		if (req->u.sign.prehashed)
			enc_kv_true(e, "prehashed");
		return 0;
	case PROTO_METHOD_VERIFY:
		mode = proto_mode_name(req->u.verify.mode);
		policy = proto_policy_name(req->u.verify.policy);
		if (!mode || !policy || !req->u.verify.public_key || !req->u.verify.signature ||
		    (req->u.verify.message.len && !req->u.verify.message.data))
			return -EINVAL;
		n = 3 + (req->u.verify.policy != PROTO_POLICY_STRICT) +
		    (req->u.verify.mode != PROTO_MODE_PURE) + (req->u.verify.context.len > 0) +
		    req->u.verify.prehashed;
		enc_map(e, n);
		enc_kv_bin(e, "public_key", req->u.verify.public_key, PROTO_KEY_LEN);
		enc_kv_bin(e, "message", req->u.verify.message.data, req->u.verify.message.len);
		enc_kv_bin(e, "signature", req->u.verify.signature, PROTO_SIG_LEN);
		if (req->u.verify.policy != PROTO_POLICY_STRICT)
			enc_kv_str(e, "policy", policy);
		if (req->u.verify.mode != PROTO_MODE_PURE)
			enc_kv_str(e, "mode", mode);
		if (req->u.verify.context.len)
			enc_kv_bin(e, "context", req->u.verify.context.data, req->u.verify.context.len);
		if (req->u.verify.prehashed)
			enc_kv_true(e, "prehashed");
		return 0;
	case PROTO_METHOD_VERIFY_BATCH:
		policy = proto_policy_name(req->u.verify_batch.policy);
		if (!policy || (req->u.verify_batch.n_items && !req->u.verify_batch.items))
			return -EINVAL;
		enc_map(e, 1 + (req->u.verify_batch.policy != PROTO_POLICY_STRICT));
		enc_str(e, "items");
		if (msgpack_pack_array(&e->pk, req->u.verify_batch.n_items) != 0)
			e->failed = 1;
		for (size_t i = 0; i < req->u.verify_batch.n_items && !e->failed; i++) {
			const ProtoVerifyItem *it = &req->u.verify_batch.items[i];

			if (!it->public_key || !it->signature || (it->message.len && !it->message.data))
				return -EINVAL;
			enc_map(e, 3);
			enc_kv_bin(e, "public_key", it->public_key, PROTO_KEY_LEN);
			enc_kv_bin(e, "message", it->message.data, it->message.len);
			enc_kv_bin(e, "signature", it->signature, PROTO_SIG_LEN);
		}
		if (req->u.verify_batch.policy != PROTO_POLICY_STRICT)
			enc_kv_str(e, "policy", policy);
		return 0;
	case PROTO_METHOD_DH:
		if (!req->u.dh.peer)
			return -EINVAL;
		enc_map(e, 2);
		enc_kv_str(e, "key", req->u.dh.label);
		enc_kv_bin(e, "peer", req->u.dh.peer, PROTO_KEY_LEN);
		return 0;
	case PROTO_METHOD_AGE_UNWRAP:
		if (!req->u.age_unwrap.share || !req->u.age_unwrap.body)
			return -EINVAL;
		enc_map(e, 3);
		enc_kv_str(e, "key", req->u.age_unwrap.label);
		enc_kv_bin(e, "share", req->u.age_unwrap.share, PROTO_KEY_LEN);
		enc_kv_bin(e, "body", req->u.age_unwrap.body, PROTO_AGE_BODY_LEN);
		return 0;
	case PROTO_METHOD_KEY_EXPORT_WRAPPED:
		enc_map(e, 2 + (req->u.key_export_wrapped.armor ? 1 : 0));
		enc_kv_str(e, "label", req->u.key_export_wrapped.label);
		enc_kv_str(e, "recipient", req->u.key_export_wrapped.recipient);
		if (req->u.key_export_wrapped.armor)
			enc_kv_true(e, "armor");
		return 0;
	case PROTO_METHOD_KEY_IMPORT_WRAPPED:
		if (req->u.key_import_wrapped.file.len && !req->u.key_import_wrapped.file.data)
			return -EINVAL;
		enc_map(e, 3);
		enc_kv_str(e, "label", req->u.key_import_wrapped.label);
		enc_kv_str(e, "key", req->u.key_import_wrapped.key);
		enc_kv_bin(e, "file", req->u.key_import_wrapped.file.data, req->u.key_import_wrapped.file.len);
		return 0;
	case PROTO_METHOD_AUDIT:
		enc_map(e, req->u.audit.limit ? 1 : 0);
		if (req->u.audit.limit) {
			enc_str(e, "limit");
			if (msgpack_pack_uint64(&e->pk, req->u.audit.limit) != 0)
				e->failed = 1;
		}
		return 0;
	case PROTO_METHOD_LOCK:
	case PROTO_METHOD_UNLOCK:
	case PROTO_METHOD_REKEY: {
		/* the three share one layout */
		bool has = req->u.lock.has_passphrase;
		ProtoBytes pp = req->u.lock.passphrase;
		const char *file = req->method == PROTO_METHOD_REKEY ? req->u.rekey.master_key_file : NULL;

		enc_map(e, (has ? 1 : 0) + (file ? 1 : 0));
		if (has) {
			enc_str(e, "passphrase");
			if (msgpack_pack_str_with_body(&e->pk, pp.data, pp.len) != 0)
				e->failed = 1;
		}
		if (file)
			enc_kv_str(e, "master_key_file", file);
		return 0;
	}
	case _PROTO_METHOD_N:
	case PROTO_METHOD_UNKNOWN:
		break;
	}
	return -EINVAL;
}

int proto_request_encode(ProtoBuf *out, const ProtoRequest *req)
{
	const char *method = proto_method_name(req->method);
	size_t old = out->len;
	Enc e = { .failed = 0 };
	int r;

	if (!method)
		return -EINVAL;
	msgpack_packer_init(&e.pk, out, buf_write_cb);
	if (msgpack_pack_array(&e.pk, 4) != 0 || msgpack_pack_uint8(&e.pk, 0) != 0 ||
	    msgpack_pack_uint64(&e.pk, req->msgid) != 0)
		e.failed = 1;
	enc_str(&e, method);
	if (msgpack_pack_array(&e.pk, 1) != 0)
		e.failed = 1;
	r = encode_params(&e, req);
	if (r == 0 && e.failed)
		r = -ENOMEM;
	if (r < 0) {
		/* drop the partial frame; it may hold a seed */
		if (out->len > old)
			proto_wipe(out->data + old, out->len - old);
		out->len = old;
	}
	return r;
}

/* ---- decoding ---- */

/* Storage owned by a decoded response. */
typedef struct RespPriv {
	ProtoKeyInfo *keys;
	ProtoKeyPolicy *policies; /* the keys' policies, one slot per key */
	bool *valid;
	char *server;
	char **features;
	size_t n_features;
	uint8_t *file; /* key.export_wrapped */
} RespPriv;

static const msgpack_object *map_get(const msgpack_object *map, const char *key)
{
	size_t kl = strlen(key);

	if (map->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < map->via.map.size; i++) {
		const msgpack_object *k = &map->via.map.ptr[i].key;

		if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == kl &&
		    memcmp(k->via.str.ptr, key, kl) == 0)
			return &map->via.map.ptr[i].val;
	}
	return NULL;
}

static int get_bin(const msgpack_object *map, const char *key, uint8_t *out, size_t len)
{
	const msgpack_object *v = map_get(map, key);

	if (!v || v->type != MSGPACK_OBJECT_BIN || v->via.bin.size != len)
		return -1;
	memcpy(out, v->via.bin.ptr, len);
	return 0;
}

static int get_str(const msgpack_object *map, const char *key, char *out, size_t cap)
{
	const msgpack_object *v = map_get(map, key);

	if (!v || v->type != MSGPACK_OBJECT_STR || v->via.str.size >= cap ||
	    memchr(v->via.str.ptr, 0, v->via.str.size))
		return -1;
	memcpy(out, v->via.str.ptr, v->via.str.size);
	out[v->via.str.size] = '\0';
	return 0;
}

static int get_bool(const msgpack_object *map, const char *key, bool *out)
{
	const msgpack_object *v = map_get(map, key);

	if (!v || v->type != MSGPACK_OBJECT_BOOLEAN)
		return -1;
	*out = v->via.boolean;
	return 0;
}

static int get_u64(const msgpack_object *map, const char *key, uint64_t *out)
{
	const msgpack_object *v = map_get(map, key);

	if (!v || v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return -1;
	*out = v->via.u64;
	return 0;
}

static int get_i64(const msgpack_object *map, const char *key, int64_t *out)
{
	const msgpack_object *v = map_get(map, key);

	if (!v)
		return -1;
	if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX)
		*out = (int64_t)v->via.u64;
	else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*out = v->via.i64;
	else
		return -1;
	return 0;
}

/* an array of at most max ids into ids; -1 if malformed */
static int get_ids(const msgpack_object *v, uint32_t *ids, size_t *np, size_t max)
{
	if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > max)
		return -1;
	for (uint32_t i = 0; i < v->via.array.size; i++) {
		const msgpack_object *e = &v->via.array.ptr[i];

		if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER || e->via.u64 > UINT32_MAX)
			return -1;
		ids[i] = (uint32_t)e->via.u64;
	}
	*np = v->via.array.size;
	return 0;
}

/* key info field "policy" (proto.h ProtoKeyPolicy); -1 if malformed */
static int decode_policy(ProtoKeyPolicy *p, const msgpack_object *o)
{
	const msgpack_object *v;

	memset(p, 0, sizeof(*p));
	if (o->type != MSGPACK_OBJECT_MAP)
		return -1;
	p->set = true;
	if ((v = map_get(o, "ops"))) {
		if (v->type != MSGPACK_OBJECT_ARRAY)
			return -1;
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			const msgpack_object *e = &v->via.array.ptr[i];

			if (e->type != MSGPACK_OBJECT_STR)
				return -1;
			if (e->via.str.size == 4 && memcmp(e->via.str.ptr, "sign", 4) == 0)
				p->ops |= PROTO_OP_SIGN;
			else if (e->via.str.size == 2 && memcmp(e->via.str.ptr, "dh", 2) == 0)
				p->ops |= PROTO_OP_DH;
			else if (e->via.str.size == 10 && memcmp(e->via.str.ptr, "age-unwrap", 10) == 0)
				p->ops |= PROTO_OP_AGE_UNWRAP;
			else
				return -1;
		}
	}
	if (map_get(o, "expires") && (get_i64(o, "expires", &p->expires) < 0 || p->expires < 0))
		return -1;
	if ((v = map_get(o, "uids")) && get_ids(v, p->uids, &p->n_uids, PROTO_POLICY_IDS_MAX) < 0)
		return -1;
	if ((v = map_get(o, "gids")) && get_ids(v, p->gids, &p->n_gids, PROTO_POLICY_IDS_MAX) < 0)
		return -1;
	if ((v = map_get(o, "exes"))) {
		if (v->type != MSGPACK_OBJECT_ARRAY || v->via.array.size > PROTO_POLICY_EXES_MAX)
			return -1;
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			const msgpack_object *e = &v->via.array.ptr[i];

			if (e->type != MSGPACK_OBJECT_STR || e->via.str.size >= PROTO_POLICY_EXE_MAX ||
			    memchr(e->via.str.ptr, '\0', e->via.str.size))
				return -1;
			memcpy(p->exes[i], e->via.str.ptr, e->via.str.size);
			p->exes[i][e->via.str.size] = '\0';
		}
		p->n_exes = v->via.array.size;
	}
	if ((v = map_get(o, "max_signs"))) {
		if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
			return -1;
		p->max_signs = v->via.u64;
	}
	if ((v = map_get(o, "rate"))) {
		if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER || v->via.u64 > UINT32_MAX)
			return -1;
		p->rate = (uint32_t)v->via.u64;
	}
	return 0;
}

/* @pol: where the key's policy goes (k->policy then points to it) */
static int decode_key(ProtoKeyInfo *k, ProtoKeyPolicy *pol, const msgpack_object *o, char *errmsg)
{
	const msgpack_object *pv;

	char type[16];
	int t;

	memset(k, 0, sizeof(*k));
	if (o->type != MSGPACK_OBJECT_MAP) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key is not a map");
		return PROTO_E_BAD_REQUEST;
	}
	if (get_str(o, "label", k->label, sizeof(k->label)) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.label");
		return PROTO_E_BAD_REQUEST;
	}
	if (get_str(o, "type", type, sizeof(type)) < 0 ||
	    (t = proto_key_type_from_name(type, strlen(type))) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.type");
		return PROTO_E_BAD_REQUEST;
	}
	k->type = (ProtoKeyType)t;
	if (get_bin(o, "public_key", k->public_key, PROTO_KEY_LEN) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.public_key");
		return PROTO_E_BAD_REQUEST;
	}
	/* optional fields */
	if (map_get(o, "fingerprint") &&
	    get_str(o, "fingerprint", k->fingerprint, sizeof(k->fingerprint)) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.fingerprint");
		return PROTO_E_BAD_REQUEST;
	}
	if (map_get(o, "exportable") && get_bool(o, "exportable", &k->exportable) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.exportable");
		return PROTO_E_BAD_REQUEST;
	}
	if (map_get(o, "created") && get_i64(o, "created", &k->created) < 0) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.created");
		return PROTO_E_BAD_REQUEST;
	}
	if (map_get(o, "owner")) {
		int64_t owner;

		if (get_i64(o, "owner", &owner) < 0 || owner < 0 || owner > UINT32_MAX) {
			snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.owner");
			return PROTO_E_BAD_REQUEST;
		}
		k->has_owner = true;
		k->owner = (uint32_t)owner;
	}
	if ((pv = map_get(o, "policy")) && pv->type != MSGPACK_OBJECT_NIL) {
		if (decode_policy(pol, pv) < 0) {
			snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: key.policy");
			return PROTO_E_BAD_REQUEST;
		}
		k->policy = pol;
	}
	return 0;
}

/* An array of strings (hello's features, audit's lines) into priv->features
 * and priv->n_features, NULL-terminated. Returns 0, -ENOMEM or
 * PROTO_E_BAD_REQUEST with errmsg naming field. */
static int decode_strings(RespPriv *priv, const msgpack_object *v, const char *field,
                          char *errmsg)
{
	if (v->type != MSGPACK_OBJECT_ARRAY)
		goto bad;
	priv->features = calloc(v->via.array.size + 1, sizeof(char *));
	if (!priv->features)
		return -ENOMEM;
	for (uint32_t i = 0; i < v->via.array.size; i++) {
		const msgpack_object *f = &v->via.array.ptr[i];

		if (f->type != MSGPACK_OBJECT_STR)
			goto bad;
		priv->features[i] = strndup(f->via.str.ptr, f->via.str.size);
		if (!priv->features[i])
			return -ENOMEM;
		priv->n_features++;
	}
	return 0;
bad:
	snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: %s", field);
	return PROTO_E_BAD_REQUEST;
}

static int decode_result(ProtoResponse *resp, RespPriv *priv, const msgpack_object *res,
                         char *errmsg)
{
	const msgpack_object *v;

#define BAD(field)                                                                      \
	do {                                                                            \
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: %s", field);   \
		return PROTO_E_BAD_REQUEST;                                             \
	} while (0)

	if (res->type != MSGPACK_OBJECT_MAP)
		BAD("result is not a map");
	switch (resp->method) {
	case PROTO_METHOD_HELLO:
		if (get_u64(res, "protocol", &resp->u.hello.protocol) < 0)
			BAD("protocol");
		v = map_get(res, "server");
		if (!v || v->type != MSGPACK_OBJECT_STR)
			BAD("server");
		priv->server = strndup(v->via.str.ptr, v->via.str.size);
		if (!priv->server)
			return -ENOMEM;
		resp->u.hello.server = priv->server;
		v = map_get(res, "features");
		if (v) {
			int r = decode_strings(priv, v, "features", errmsg);

			if (r)
				return r;
			resp->u.hello.features = (const char *const *)priv->features;
			resp->u.hello.n_features = priv->n_features;
		}
		return 0;
	case PROTO_METHOD_STATUS: {
		ProtoStatus *s = &resp->u.status;

		if (get_u64(res, "keys", &s->keys) < 0)
			BAD("keys");
		if (get_bool(res, "locked", &s->locked) < 0)
			BAD("locked");
		/* the rest is informative: absent means 0 */
		(void)get_u64(res, "connections", &s->connections);
		(void)get_u64(res, "inflight", &s->inflight);
		(void)get_u64(res, "uptime_s", &s->uptime_s);
		(void)get_u64(res, "requests", &s->requests);
		(void)get_u64(res, "workers", &s->workers);
		return 0;
	}
	case PROTO_METHOD_KEY_GENERATE:
	case PROTO_METHOD_KEY_IMPORT:
	case PROTO_METHOD_KEY_IMPORT_WRAPPED:
	case PROTO_METHOD_KEY_PUBLIC:
		v = map_get(res, "key");
		if (!v)
			BAD("key");
		priv->policies = calloc(1, sizeof(ProtoKeyPolicy));
		if (!priv->policies)
			return -ENOMEM;
		return decode_key(&resp->u.key, priv->policies, v, errmsg);
	case PROTO_METHOD_KEY_LIST:
		v = map_get(res, "keys");
		if (!v || v->type != MSGPACK_OBJECT_ARRAY)
			BAD("keys");
		priv->keys = calloc(v->via.array.size ? v->via.array.size : 1, sizeof(ProtoKeyInfo));
		priv->policies = calloc(v->via.array.size ? v->via.array.size : 1, sizeof(ProtoKeyPolicy));
		if (!priv->keys || !priv->policies)
			return -ENOMEM;
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			int r = decode_key(&priv->keys[i], &priv->policies[i], &v->via.array.ptr[i], errmsg);

			if (r)
				return r;
		}
		resp->u.key_list.keys = priv->keys;
		resp->u.key_list.n_keys = v->via.array.size;
		return 0;
	case PROTO_METHOD_KEY_DELETE:
	case PROTO_METHOD_LOCK:
	case PROTO_METHOD_UNLOCK:
		return 0;
	case PROTO_METHOD_SIGN:
		if (get_bin(res, "signature", resp->u.sign.signature, PROTO_SIG_LEN) < 0)
			BAD("signature");
		return 0;
	case PROTO_METHOD_VERIFY:
		if (get_bool(res, "valid", &resp->u.verify.valid) < 0)
			BAD("valid");
		return 0;
	case PROTO_METHOD_VERIFY_BATCH:
		v = map_get(res, "valid");
		if (!v || v->type != MSGPACK_OBJECT_ARRAY)
			BAD("valid");
		priv->valid = calloc(v->via.array.size ? v->via.array.size : 1, sizeof(bool));
		if (!priv->valid)
			return -ENOMEM;
		for (uint32_t i = 0; i < v->via.array.size; i++) {
			if (v->via.array.ptr[i].type != MSGPACK_OBJECT_BOOLEAN)
				BAD("valid");
			priv->valid[i] = v->via.array.ptr[i].via.boolean;
		}
		resp->u.verify_batch.valid = priv->valid;
		resp->u.verify_batch.n = v->via.array.size;
		return 0;
	case PROTO_METHOD_DH:
		if (get_bin(res, "shared_secret", resp->u.dh.shared_secret, PROTO_KEY_LEN) < 0)
			BAD("shared_secret");
		return 0;
	case PROTO_METHOD_KEY_EXPORT:
		if (get_bin(res, "seed", resp->u.key_export.seed, PROTO_KEY_LEN) < 0)
			BAD("seed");
		return 0;
	case PROTO_METHOD_REKEY:
		if (get_u64(res, "keys", &resp->u.rekey.keys) < 0)
			BAD("keys");
		return 0;
	case PROTO_METHOD_AGE_UNWRAP:
		if (get_bin(res, "file_key", resp->u.age_unwrap.file_key, PROTO_AGE_FILE_KEY_LEN) < 0)
			BAD("file_key");
		return 0;
	case PROTO_METHOD_KEY_EXPORT_WRAPPED:
		v = map_get(res, "file");
		if (!v || v->type != MSGPACK_OBJECT_BIN)
			BAD("file");
		priv->file = malloc(v->via.bin.size ? v->via.bin.size : 1);
		if (!priv->file)
			return -ENOMEM;
		memcpy(priv->file, v->via.bin.ptr, v->via.bin.size);
		resp->u.key_export_wrapped.file = (ProtoBytes){ priv->file, v->via.bin.size };
		return 0;
	case PROTO_METHOD_AUDIT:
		/* the lines use the storage of hello's features */
		v = map_get(res, "lines");
		if (!v)
			BAD("lines");
		{
			int r = decode_strings(priv, v, "lines", errmsg);

			if (r)
				return r;
		}
		resp->u.audit.lines = (const char *const *)priv->features;
		resp->u.audit.n = priv->n_features;
		return 0;
	case _PROTO_METHOD_N:
	case PROTO_METHOD_UNKNOWN:
		break;
	}
	BAD("unknown method");
#undef BAD
}

/* msgpack-c sizes its arrays and maps from their headers before it reads
 * the elements, so a header claiming 2^32 entries in a 10-byte buffer would
 * make it allocate gigabytes. ProtoReader checks that the frame is complete
 * and within PROTO_MAX_OBJECTS_PER_FRAME first, whoever cut the frame. */
static int frame_ok(const uint8_t *frame, size_t len)
{
	ProtoReader *reader;
	const uint8_t *f;
	size_t flen;
	int r;

	if (len == 0)
		return PROTO_E_BAD_REQUEST;
	r = proto_reader_new(&reader, len);
	if (r < 0)
		return r;
	r = proto_reader_feed(reader, frame, len);
	if (r == 0)
		r = proto_reader_next(reader, &f, &flen) == PROTO_READER_FRAME && flen == len &&
		            !proto_reader_partial(reader)
		        ? 0
		        : PROTO_E_BAD_REQUEST;
	else if (r != -ENOMEM)
		r = PROTO_E_BAD_REQUEST;
	proto_reader_free(reader);
	return r;
}

static int unpack_response(msgpack_unpacked *u, const uint8_t *frame, size_t len,
                           const msgpack_object **arrp)
{
	size_t off = 0;
	const msgpack_object *a;
	int r = frame_ok(frame, len);

	if (r)
		return r;

	if (msgpack_unpack_next(u, (const char *)frame, len, &off) != MSGPACK_UNPACK_SUCCESS ||
	    off != len)
		return PROTO_E_BAD_REQUEST;
	a = &u->data;
	if (a->type != MSGPACK_OBJECT_ARRAY || a->via.array.size != 4 ||
	    a->via.array.ptr[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
	    a->via.array.ptr[0].via.u64 != 1)
		return PROTO_E_BAD_REQUEST;
	*arrp = a;
	return 0;
}

int proto_response_msgid(const uint8_t *frame, size_t len, bool *has_msgidp, uint64_t *msgidp)
{
	msgpack_unpacked u;
	const msgpack_object *a, *id;
	int r;

	msgpack_unpacked_init(&u);
	r = unpack_response(&u, frame, len, &a);
	if (r == 0) {
		id = &a->via.array.ptr[1];
		if (id->type == MSGPACK_OBJECT_NIL) {
			*has_msgidp = false;
			*msgidp = 0;
		} else if (id->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
			*has_msgidp = true;
			*msgidp = id->via.u64;
		} else {
			r = PROTO_E_BAD_REQUEST;
		}
	}
	msgpack_unpacked_destroy(&u);
	return r;
}

int proto_response_decode(ProtoResponse *resp, ProtoMethod method, const uint8_t *frame,
                          size_t len, char errmsg[PROTO_MESSAGE_MAX])
{
	msgpack_unpacked u;
	const msgpack_object *a, *err, *res, *id;
	RespPriv *priv;
	int r;

	memset(resp, 0, sizeof(*resp));
	resp->method = method;
	errmsg[0] = '\0';
	priv = calloc(1, sizeof(*priv));
	if (!priv)
		return -ENOMEM;
	resp->priv = priv;
	msgpack_unpacked_init(&u);
	r = unpack_response(&u, frame, len, &a);
	if (r) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: not [1, msgid, error, result]");
		goto out;
	}
	id = &a->via.array.ptr[1];
	if (id->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
		resp->has_msgid = true;
		resp->msgid = id->via.u64;
	} else if (id->type != MSGPACK_OBJECT_NIL) {
		snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: msgid");
		r = PROTO_E_BAD_REQUEST;
		goto out;
	}
	err = &a->via.array.ptr[2];
	res = &a->via.array.ptr[3];
	if (err->type != MSGPACK_OBJECT_NIL) {
		const msgpack_object *code = map_get(err, "code"), *msg = map_get(err, "message");
		int c;

		if (!code || code->type != MSGPACK_OBJECT_STR) {
			snprintf(errmsg, PROTO_MESSAGE_MAX, "malformed response: error.code");
			r = PROTO_E_BAD_REQUEST;
			goto out;
		}
		c = proto_error_from_name(code->via.str.ptr, code->via.str.size);
		if (msg && msg->type == MSGPACK_OBJECT_STR) {
			size_t n = msg->via.str.size < PROTO_MESSAGE_MAX - 1 ? msg->via.str.size
			                                                     : PROTO_MESSAGE_MAX - 1;

			memcpy(resp->message, msg->via.str.ptr, n);
			resp->message[n] = '\0';
		}
		if (c < 0) {
			snprintf(resp->message, sizeof(resp->message), "unknown error code \"%.*s\"",
			         (int)(code->via.str.size > 64 ? 64 : code->via.str.size),
			         code->via.str.ptr);
			c = PROTO_E_INTERNAL;
		}
		resp->error = (ProtoError)c;
		r = 0;
		goto out;
	}
	r = decode_result(resp, priv, res, errmsg);
out:
	msgpack_unpacked_destroy(&u);
	return r;
}

void proto_response_deinit(ProtoResponse *resp)
{
	RespPriv *priv = resp->priv;

	if (priv) {
		free(priv->keys);
		free(priv->policies);
		free(priv->valid);
		free(priv->server);
		for (size_t i = 0; i < priv->n_features; i++)
			free(priv->features[i]);
		free(priv->features);
		free(priv->file);
		free(priv);
	}
	if (resp->method == PROTO_METHOD_DH)
		proto_wipe(resp->u.dh.shared_secret, sizeof(resp->u.dh.shared_secret));
	if (resp->method == PROTO_METHOD_KEY_EXPORT)
		proto_wipe(resp->u.key_export.seed, sizeof(resp->u.key_export.seed));
	if (resp->method == PROTO_METHOD_AGE_UNWRAP)
		proto_wipe(resp->u.age_unwrap.file_key, sizeof(resp->u.age_unwrap.file_key));
	resp->priv = NULL;
}
