/* SPDX-License-Identifier: MIT */
/*
 * proto-encode.c - encode responses (server side)
 */
#include <errno.h>
#include <msgpack.h>
#include <string.h>

#include "proto.h"
#include "proto-private.h"

static int buf_write(void *data, const char *p, size_t n)
{
	return proto__buf_append(data, p, n) ? -1 : 0;
}

static int pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	return msgpack_pack_str(pk, n) || msgpack_pack_str_body(pk, s, n);
}

static int pack_bin(msgpack_packer *pk, const uint8_t *p, size_t n)
{
	return msgpack_pack_bin(pk, n) || msgpack_pack_bin_body(pk, p, n);
}

static int pack_policy(msgpack_packer *pk, const ProtoKeyPolicy *p)
{
	int ops = (p->ops & PROTO_OP_SIGN ? 1 : 0) + (p->ops & PROTO_OP_DH ? 1 : 0) +
	          (p->ops & PROTO_OP_AGE_UNWRAP ? 1 : 0);

	if (msgpack_pack_map(pk, 7) || pack_str(pk, "ops") || msgpack_pack_array(pk, (size_t)ops) ||
	    ((p->ops & PROTO_OP_SIGN) && pack_str(pk, "sign")) || ((p->ops & PROTO_OP_DH) && pack_str(pk, "dh")) ||
	    ((p->ops & PROTO_OP_AGE_UNWRAP) && pack_str(pk, "age-unwrap")) ||
	    pack_str(pk, "expires") || msgpack_pack_int64(pk, p->expires) ||
	    pack_str(pk, "uids") || msgpack_pack_array(pk, p->n_uids))
		return -1;
	for (size_t i = 0; i < p->n_uids; i++)
		if (msgpack_pack_uint32(pk, p->uids[i]))
			return -1;
	if (pack_str(pk, "gids") || msgpack_pack_array(pk, p->n_gids))
		return -1;
	for (size_t i = 0; i < p->n_gids; i++)
		if (msgpack_pack_uint32(pk, p->gids[i]))
			return -1;
	if (pack_str(pk, "exes") || msgpack_pack_array(pk, p->n_exes))
		return -1;
	for (size_t i = 0; i < p->n_exes; i++)
		if (pack_str(pk, p->exes[i]))
			return -1;
	return pack_str(pk, "max_signs") || msgpack_pack_uint64(pk, p->max_signs) ||
	       pack_str(pk, "rate") || msgpack_pack_uint32(pk, p->rate);
}

static int pack_key(msgpack_packer *pk, const ProtoKeyInfo *k)
{
	return msgpack_pack_map(pk, 6 + (k->policy != NULL) + k->has_owner) ||
	       pack_str(pk, "label") || pack_str(pk, k->label) ||
	       pack_str(pk, "type") || pack_str(pk, proto_key_type_name(k->type) ? proto_key_type_name(k->type) : "?") ||
	       pack_str(pk, "public_key") || pack_bin(pk, k->public_key, PROTO_KEY_LEN) ||
	       pack_str(pk, "fingerprint") || pack_str(pk, k->fingerprint) ||
	       pack_str(pk, "exportable") || (k->exportable ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) ||
	       pack_str(pk, "created") || msgpack_pack_int64(pk, k->created) ||
	       (k->policy && (pack_str(pk, "policy") || pack_policy(pk, k->policy))) ||
	       (k->has_owner && (pack_str(pk, "owner") || msgpack_pack_uint32(pk, k->owner)));
}

static int pack_msgid(msgpack_packer *pk, bool has, uint64_t msgid)
{
	return has ? msgpack_pack_uint64(pk, msgid) : msgpack_pack_nil(pk);
}

static int pack_error(msgpack_packer *pk, bool has_msgid, uint64_t msgid, ProtoError code, const char *message)
{
	const char *name = proto_error_name(code);

	if (!name || code == PROTO_OK)
		name = "internal";
	return msgpack_pack_array(pk, 4) || msgpack_pack_int(pk, 1) || pack_msgid(pk, has_msgid, msgid) ||
	       msgpack_pack_map(pk, 2) ||
	       pack_str(pk, "code") || pack_str(pk, name) ||
	       pack_str(pk, "message") || pack_str(pk, message ? message : "") ||
	       msgpack_pack_nil(pk);
}

static int pack_result(msgpack_packer *pk, const ProtoResponse *r)
{
	switch (r->method) {
	case PROTO_METHOD_HELLO:
		if (msgpack_pack_map(pk, 3) ||
		    pack_str(pk, "protocol") || msgpack_pack_uint64(pk, r->u.hello.protocol) ||
		    pack_str(pk, "server") || pack_str(pk, r->u.hello.server ? r->u.hello.server : "") ||
		    pack_str(pk, "features") || msgpack_pack_array(pk, r->u.hello.n_features))
			return -1;
		for (size_t i = 0; i < r->u.hello.n_features; i++)
			if (pack_str(pk, r->u.hello.features[i]))
				return -1;
		return 0;
	case PROTO_METHOD_STATUS: {
		const ProtoStatus *s = &r->u.status;

		return msgpack_pack_map(pk, 8) ||
		       pack_str(pk, "keys") || msgpack_pack_uint64(pk, s->keys) ||
		       pack_str(pk, "locked") || (s->locked ? msgpack_pack_true(pk) : msgpack_pack_false(pk)) ||
		       pack_str(pk, "connections") || msgpack_pack_uint64(pk, s->connections) ||
		       pack_str(pk, "inflight") || msgpack_pack_uint64(pk, s->inflight) ||
		       pack_str(pk, "uptime_s") || msgpack_pack_uint64(pk, s->uptime_s) ||
		       pack_str(pk, "requests") || msgpack_pack_uint64(pk, s->requests) ||
		       pack_str(pk, "workers") || msgpack_pack_uint64(pk, s->workers) ||
		       pack_str(pk, "buffered_bytes") || msgpack_pack_uint64(pk, r->status_buffered_bytes);
	}
	case PROTO_METHOD_KEY_GENERATE:
	case PROTO_METHOD_KEY_IMPORT:
	case PROTO_METHOD_KEY_IMPORT_WRAPPED:
	case PROTO_METHOD_KEY_PUBLIC:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "key") || pack_key(pk, &r->u.key);
	case PROTO_METHOD_KEY_LIST:
		if (msgpack_pack_map(pk, 1) || pack_str(pk, "keys") || msgpack_pack_array(pk, r->u.key_list.n_keys))
			return -1;
		for (size_t i = 0; i < r->u.key_list.n_keys; i++)
			if (pack_key(pk, &r->u.key_list.keys[i]))
				return -1;
		return 0;
	case PROTO_METHOD_KEY_DELETE:
	case PROTO_METHOD_LOCK:
	case PROTO_METHOD_UNLOCK:
		return msgpack_pack_map(pk, 0);
	case PROTO_METHOD_SIGN:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "signature") ||
		       pack_bin(pk, r->u.sign.signature, PROTO_SIG_LEN);
	case PROTO_METHOD_VERIFY:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "valid") ||
		       (r->u.verify.valid ? msgpack_pack_true(pk) : msgpack_pack_false(pk));
	case PROTO_METHOD_VERIFY_BATCH:
		if (msgpack_pack_map(pk, 1) || pack_str(pk, "valid") || msgpack_pack_array(pk, r->u.verify_batch.n))
			return -1;
		for (size_t i = 0; i < r->u.verify_batch.n; i++)
			if (r->u.verify_batch.valid[i] ? msgpack_pack_true(pk) : msgpack_pack_false(pk))
				return -1;
		return 0;
	case PROTO_METHOD_DH:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "shared_secret") ||
		       pack_bin(pk, r->u.dh.shared_secret, PROTO_KEY_LEN);
	case PROTO_METHOD_KEY_EXPORT:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "seed") ||
		       pack_bin(pk, r->u.key_export.seed, PROTO_KEY_LEN);
	case PROTO_METHOD_REKEY:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "keys") || msgpack_pack_uint64(pk, r->u.rekey.keys);
	case PROTO_METHOD_AGE_UNWRAP:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "file_key") ||
		       pack_bin(pk, r->u.age_unwrap.file_key, PROTO_AGE_FILE_KEY_LEN);
	case PROTO_METHOD_KEY_EXPORT_WRAPPED:
		return msgpack_pack_map(pk, 1) || pack_str(pk, "file") ||
		       pack_bin(pk, r->u.key_export_wrapped.file.data, r->u.key_export_wrapped.file.len);
	case PROTO_METHOD_AUDIT:
		if (msgpack_pack_map(pk, 1) || pack_str(pk, "lines") || msgpack_pack_array(pk, r->u.audit.n))
			return -1;
		for (size_t i = 0; i < r->u.audit.n; i++)
			if (pack_str(pk, r->u.audit.lines[i]))
				return -1;
		return 0;
	default:
		return -1;
	}
}

int proto_response_encode(ProtoBuf *out, const ProtoResponse *resp)
{
	msgpack_packer pk;
	size_t len0 = out->len;
	int r;

	msgpack_packer_init(&pk, out, buf_write);
	if (resp->error != PROTO_OK)
		r = pack_error(&pk, resp->has_msgid, resp->msgid, resp->error, resp->message);
	else
		r = msgpack_pack_array(&pk, 4) || msgpack_pack_int(&pk, 1) ||
		    pack_msgid(&pk, resp->has_msgid, resp->msgid) || msgpack_pack_nil(&pk) ||
		    pack_result(&pk, resp);
	if (r) {
		if (out->data)
			proto_wipe(out->data + len0, out->len - len0);
		out->len = len0;
		return -ENOMEM;
	}
	return 0;
}

int proto_error_encode(ProtoBuf *out, bool has_msgid, uint64_t msgid, ProtoError code, const char *message)
{
	msgpack_packer pk;
	size_t len0 = out->len;

	msgpack_packer_init(&pk, out, buf_write);
	if (pack_error(&pk, has_msgid, msgid, code, message)) {
		out->len = len0;
		return -ENOMEM;
	}
	return 0;
}
