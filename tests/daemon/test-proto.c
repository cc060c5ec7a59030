/* SPDX-License-Identifier: MIT */
/*
 * test-proto.c - unit tests of proto/ (server side): the frame reader, the
 * request decoder and the response encoder. Requests are built and
 * responses read back with msgpack-c directly, not with proto/.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <msgpack.h>

#include "proto.h"

/* ---- building requests --------------------------------------------------- */

typedef struct Req {
	msgpack_sbuffer sb;
	msgpack_packer pk;
} Req;

static void req_begin(Req *r, uint64_t msgid, const char *method, uint32_t n_params)
{
	msgpack_sbuffer_init(&r->sb);
	msgpack_packer_init(&r->pk, &r->sb, msgpack_sbuffer_write);
	msgpack_pack_array(&r->pk, 4);
	msgpack_pack_int(&r->pk, 0);
	msgpack_pack_uint64(&r->pk, msgid);
	msgpack_pack_str(&r->pk, strlen(method));
	msgpack_pack_str_body(&r->pk, method, strlen(method));
	msgpack_pack_array(&r->pk, 1);
	msgpack_pack_map(&r->pk, n_params);
}

static void str(Req *r, const char *s)
{
	msgpack_pack_str(&r->pk, strlen(s));
	msgpack_pack_str_body(&r->pk, s, strlen(s));
}

static void kv_str(Req *r, const char *k, const char *v)
{
	str(r, k);
	str(r, v);
}

static void kv_bin(Req *r, const char *k, const void *p, size_t n)
{
	str(r, k);
	msgpack_pack_bin(&r->pk, n);
	msgpack_pack_bin_body(&r->pk, p, n);
}

static void kv_bool(Req *r, const char *k, bool v)
{
	str(r, k);
	v ? msgpack_pack_true(&r->pk) : msgpack_pack_false(&r->pk);
}

static void kv_int(Req *r, const char *k, int64_t v)
{
	str(r, k);
	msgpack_pack_int64(&r->pk, v);
}

/* decode r; returns the code; errmsg and req filled */
static int decode(Req *r, ProtoRequest *req, bool *has, char errmsg[PROTO_MESSAGE_MAX])
{
	return proto_request_decode(req, has, (const uint8_t *)r->sb.data, r->sb.size, errmsg);
}

static void req_end(Req *r, ProtoRequest *req)
{
	proto_request_deinit(req);
	msgpack_sbuffer_destroy(&r->sb);
}

/* ---- reader -------------------------------------------------------------- */

static void test_reader_byte_by_byte(void **state)
{
	Req a, b, c;
	ProtoReader *rd;
	msgpack_sbuffer all;
	const uint8_t *f;
	size_t len, got = 0;
	const msgpack_sbuffer *want[3] = { &a.sb, &b.sb, &c.sb };
	static uint8_t big[70000];

	req_begin(&a, 1, "hello", 0);
	req_begin(&b, 2, "sign", 2);
	kv_str(&b, "key", "k");
	kv_bin(&b, "message", big, sizeof(big));
	req_begin(&c, 3, "status", 0);
	msgpack_sbuffer_init(&all);
	for (int i = 0; i < 3; i++)
		msgpack_sbuffer_write(&all, want[i]->data, want[i]->size);

	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	assert_false(proto_reader_partial(rd));
	for (size_t i = 0; i < all.size; i++) {
		int k;

		assert_int_equal(proto_reader_feed(rd, all.data + i, 1), 0);
		while ((k = proto_reader_next(rd, &f, &len)) == PROTO_READER_FRAME) {
			assert_true(got < 3);
			assert_int_equal(len, want[got]->size);
			assert_memory_equal(f, want[got]->data, len);
			got++;
		}
		assert_int_equal(k, PROTO_READER_NONE);
		if (i == 0)
			assert_true(proto_reader_partial(rd)); /* one byte of a frame */
	}
	assert_int_equal(got, 3);
	assert_false(proto_reader_partial(rd));
	/* the same stream in one piece */
	assert_int_equal(proto_reader_feed(rd, all.data, all.size), 0);
	for (got = 0; proto_reader_next(rd, &f, &len) == PROTO_READER_FRAME; got++)
		assert_memory_equal(f, want[got]->data, len);
	assert_int_equal(got, 3);
	proto_reader_free(rd);
	msgpack_sbuffer_destroy(&all);
	msgpack_sbuffer_destroy(&a.sb);
	msgpack_sbuffer_destroy(&b.sb);
	msgpack_sbuffer_destroy(&c.sb);
}

/* a long frame taken out of the reader (rpc.c keeps a 32 MiB verify so):
 * only when nothing follows it; the reader goes on empty and reads the
 * next frames as before */
static void test_reader_detach(void **state)
{
	Req a, b, c;
	ProtoReader *rd;
	const uint8_t *f;
	uint8_t *base = NULL, *frame;
	size_t len, used = 0;
	static uint8_t big[300000];

	(void)state;
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	req_begin(&a, 1, "verify", 1);
	kv_bin(&a, "message", big, sizeof(big));
	req_begin(&b, 2, "status", 0);
	req_begin(&c, 3, "hello", 0);
	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	/* b, then a in pieces after it in the buffer */
	assert_int_equal(proto_reader_feed(rd, b.sb.data, b.sb.size), 0);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_int_equal(len, b.sb.size);
	for (size_t off = 0; off < a.sb.size; off += 65536) {
		size_t n = a.sb.size - off < 65536 ? a.sb.size - off : 65536;

		assert_int_equal(proto_reader_feed(rd, a.sb.data + off, n), 0);
		if (off + n < a.sb.size)
			assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_NONE);
	}
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_int_equal(len, a.sb.size);
	frame = proto_reader_detach(rd, f, len, &base, &used);
	assert_ptr_equal(frame, f);
	assert_non_null(base);
	assert_true(frame >= base && frame + len == base + used);
	assert_memory_equal(frame, a.sb.data, len);
	assert_false(proto_reader_partial(rd));
	assert_int_equal(proto_reader_buffered(rd), 0);
	/* the reader goes on */
	assert_int_equal(proto_reader_feed(rd, c.sb.data, c.sb.size), 0);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_int_equal(len, c.sb.size);
	assert_memory_equal(f, c.sb.data, len);
	/* not when more bytes are buffered after the frame */
	assert_int_equal(proto_reader_feed(rd, a.sb.data, a.sb.size), 0);
	assert_int_equal(proto_reader_feed(rd, c.sb.data, 2), 0);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_null(proto_reader_detach(rd, f, len, &base, &used));
	assert_ptr_equal(base + used, frame + a.sb.size); /* (left as they were) */
	assert_memory_equal(frame, a.sb.data, a.sb.size); /* the taken buffer is untouched */
	free(base);
	proto_reader_free(rd);
	msgpack_sbuffer_destroy(&a.sb);
	msgpack_sbuffer_destroy(&b.sb);
	msgpack_sbuffer_destroy(&c.sb);
}

static void test_reader_too_large(void **state)
{
	/* [0, 42, "sign", [{"message": bin32 of 1 GiB ... */
	static const uint8_t head[] = {
		0x94, 0x00, 0x2a, 0xa4, 's', 'i', 'g', 'n', 0x91, 0x81,
		0xa7, 'm', 'e', 's', 's', 'a', 'g', 'e', 0xc6, 0x40, 0x00, 0x00, 0x00,
	};
	ProtoReader *rd;
	uint64_t msgid = 0;
	const uint8_t *f;
	size_t len;

	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	/* refused as soon as the header is in, before any body byte */
	assert_int_equal(proto_reader_feed(rd, head, sizeof(head) - 1), 0);
	assert_int_equal(proto_reader_feed(rd, head + sizeof(head) - 1, 1), PROTO_READER_E_TOO_LARGE);
	assert_int_equal(proto_reader_msgid(rd, &msgid), 0);
	assert_int_equal(msgid, 42);
	/* sticky */
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_E_TOO_LARGE);
	assert_int_equal(proto_reader_feed(rd, "x", 1), PROTO_READER_E_TOO_LARGE);
	proto_reader_free(rd);

	/* an array announcing more elements than bytes allowed */
	{
		static const uint8_t arr[] = { 0x94, 0x00, 0xcd, 0x01, 0x00, 0xdd, 0x00, 0x10, 0x00, 0x00 };

		assert_int_equal(proto_reader_new(&rd, 4096), 0);
		assert_int_equal(proto_reader_feed(rd, arr, sizeof(arr)), PROTO_READER_E_TOO_LARGE);
		assert_int_equal(proto_reader_msgid(rd, &msgid), 0);
		assert_int_equal(msgid, 256);
		proto_reader_free(rd);
	}
	/* exactly at the limit is fine, one byte over is not */
	{
		Req r;

		req_begin(&r, 7, "hello", 0);
		assert_int_equal(proto_reader_new(&rd, r.sb.size), 0);
		assert_int_equal(proto_reader_feed(rd, r.sb.data, r.sb.size), 0);
		assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
		proto_reader_free(rd);
		assert_int_equal(proto_reader_new(&rd, r.sb.size - 1), 0);
		assert_int_equal(proto_reader_feed(rd, r.sb.data, r.sb.size), PROTO_READER_E_TOO_LARGE);
		proto_reader_free(rd);
		msgpack_sbuffer_destroy(&r.sb);
	}
}

static void test_reader_invalid(void **state)
{
	ProtoReader *rd;
	uint8_t deep[PROTO_MAX_DEPTH + 2];
	const uint8_t *f;
	size_t len;
	uint64_t msgid;

	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	assert_int_equal(proto_reader_feed(rd, "\xc1", 1), PROTO_READER_E_INVALID);
	assert_int_equal(proto_reader_msgid(rd, &msgid), -1);
	proto_reader_free(rd);

	/* PROTO_MAX_DEPTH nested arrays are fine, one more is not */
	memset(deep, 0x91, sizeof(deep));
	deep[PROTO_MAX_DEPTH] = 0xc0;
	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	assert_int_equal(proto_reader_feed(rd, deep, PROTO_MAX_DEPTH + 1), 0);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_int_equal(len, PROTO_MAX_DEPTH + 1);
	proto_reader_free(rd);
	deep[PROTO_MAX_DEPTH] = 0x91;
	deep[PROTO_MAX_DEPTH + 1] = 0xc0;
	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	assert_int_equal(proto_reader_feed(rd, deep, PROTO_MAX_DEPTH + 2), PROTO_READER_E_INVALID);
	proto_reader_free(rd);

	/* an error in a later frame is found by next() */
	assert_int_equal(proto_reader_new(&rd, 1 << 20), 0);
	assert_int_equal(proto_reader_feed(rd, "\xc0\xc1", 2), 0);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_FRAME);
	assert_int_equal(proto_reader_next(rd, &f, &len), PROTO_READER_E_INVALID);
	proto_reader_free(rd);
}

static void test_reader_object_limit(void **state)
{
	size_t n = PROTO_MAX_OBJECTS_PER_FRAME + 1;
	uint8_t *buf = malloc(5 + n);
	ProtoReader *rd;

	assert_non_null(buf);
	buf[0] = 0xdd; /* array32 of n nils */
	buf[1] = (uint8_t)(n >> 24);
	buf[2] = (uint8_t)(n >> 16);
	buf[3] = (uint8_t)(n >> 8);
	buf[4] = (uint8_t)n;
	memset(buf + 5, 0xc0, n);
	assert_int_equal(proto_reader_new(&rd, 64u << 20), 0);
	assert_int_equal(proto_reader_feed(rd, buf, 5 + n), PROTO_READER_E_TOO_LARGE);
	proto_reader_free(rd);
	free(buf);
}

/* ---- decoder ------------------------------------------------------------- */

static void test_decode_methods(void **state)
{
	Req r;
	ProtoRequest q;
	bool has;
	char err[PROTO_MESSAGE_MAX];
	uint8_t k32[32], s64[64];

	memset(k32, 0x11, sizeof(k32));
	memset(s64, 0x22, sizeof(s64));

	req_begin(&r, 5, "hello", 0);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_true(has);
	assert_int_equal(q.msgid, 5);
	assert_int_equal(q.method, PROTO_METHOD_HELLO);
	req_end(&r, &q);

	req_begin(&r, 6, "key.generate", 3);
	kv_str(&r, "type", "x25519");
	kv_str(&r, "label", "a.b_c@d+e-f");
	kv_bool(&r, "exportable", true);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.method, PROTO_METHOD_KEY_GENERATE);
	assert_int_equal(q.u.key_generate.type, PROTO_KEY_X25519);
	assert_string_equal(q.u.key_generate.label, "a.b_c@d+e-f");
	assert_true(q.u.key_generate.exportable);
	req_end(&r, &q);

	req_begin(&r, 7, "key.import", 3);
	kv_str(&r, "type", "ed25519");
	kv_str(&r, "label", "imp");
	kv_bin(&r, "seed", k32, 32);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.u.key_import.type, PROTO_KEY_ED25519);
	assert_memory_equal(q.u.key_import.seed, k32, 32);
	assert_false(q.u.key_import.exportable);
	req_end(&r, &q);

	/* the age methods */
	req_begin(&r, 7, "age.unwrap", 3);
	kv_str(&r, "key", "host");
	kv_bin(&r, "share", k32, 32);
	kv_bin(&r, "body", s64, 32);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.method, PROTO_METHOD_AGE_UNWRAP);
	assert_string_equal(q.u.age_unwrap.label, "host");
	assert_memory_equal(q.u.age_unwrap.share, k32, 32);
	assert_memory_equal(q.u.age_unwrap.body, s64, 32);
	req_end(&r, &q);
	req_begin(&r, 7, "key.export_wrapped", 3);
	kv_str(&r, "label", "release");
	kv_str(&r, "recipient", "age1xyz");
	kv_bool(&r, "armor", true);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.method, PROTO_METHOD_KEY_EXPORT_WRAPPED);
	assert_string_equal(q.u.key_export_wrapped.recipient, "age1xyz");
	assert_true(q.u.key_export_wrapped.armor);
	req_end(&r, &q);
	req_begin(&r, 7, "key.import_wrapped", 3);
	kv_str(&r, "label", "release");
	kv_str(&r, "key", "host");
	kv_bin(&r, "file", s64, 64);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.method, PROTO_METHOD_KEY_IMPORT_WRAPPED);
	assert_string_equal(q.u.key_import_wrapped.label, "release");
	assert_string_equal(q.u.key_import_wrapped.key, "host");
	assert_int_equal(q.u.key_import_wrapped.file.len, 64);
	req_end(&r, &q);

	req_begin(&r, 8, "sign", 5);
	kv_str(&r, "key", "imp");
	kv_bin(&r, "message", s64, 64);
	kv_str(&r, "mode", "ph");
	kv_bin(&r, "context", "ctx", 3);
	kv_bool(&r, "prehashed", true);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_string_equal(q.u.sign.label, "imp");
	assert_int_equal(q.u.sign.mode, PROTO_MODE_PH);
	assert_int_equal(q.u.sign.message.len, 64);
	assert_int_equal(q.u.sign.context.len, 3);
	assert_true(q.u.sign.prehashed);
	req_end(&r, &q);

	req_begin(&r, 9, "verify", 4);
	kv_bin(&r, "public_key", k32, 32);
	kv_bin(&r, "message", "", 0);
	kv_bin(&r, "signature", s64, 64);
	kv_str(&r, "policy", "zip215");
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.u.verify.policy, PROTO_POLICY_ZIP215);
	assert_int_equal(q.u.verify.mode, PROTO_MODE_PURE);
	assert_int_equal(q.u.verify.message.len, 0);
	assert_non_null(q.u.verify.message.data);
	assert_memory_equal(q.u.verify.signature, s64, 64);
	req_end(&r, &q);

	req_begin(&r, 10, "verify_batch", 1);
	str(&r, "items");
	msgpack_pack_array(&r.pk, 2);
	for (int i = 0; i < 2; i++) {
		msgpack_pack_map(&r.pk, 3);
		kv_bin(&r, "public_key", k32, 32);
		kv_bin(&r, "message", "mm", 1 + (size_t)i);
		kv_bin(&r, "signature", s64, 64);
	}
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.u.verify_batch.n_items, 2);
	assert_int_equal(q.u.verify_batch.items[1].message.len, 2);
	assert_int_equal(q.u.verify_batch.policy, PROTO_POLICY_STRICT);
	req_end(&r, &q);

	req_begin(&r, 11, "dh", 2);
	kv_str(&r, "key", "x");
	kv_bin(&r, "peer", k32, 32);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_memory_equal(q.u.dh.peer, k32, 32);
	req_end(&r, &q);

	req_begin(&r, 12, "unlock", 1);
	kv_str(&r, "passphrase", "secret");
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_true(q.u.unlock.has_passphrase);
	assert_int_equal(q.u.unlock.passphrase.len, 6);
	req_end(&r, &q);
}

typedef void (*Builder)(Req *r);

static void b_missing_label(Req *r) { req_begin(r, 1, "key.public", 0); }
static void b_label_int(Req *r) { req_begin(r, 1, "key.public", 1); kv_int(r, "label", 3); }
static void b_label_slash(Req *r) { req_begin(r, 1, "key.public", 1); kv_str(r, "label", "a/b"); }
static void b_label_dotdot(Req *r) { req_begin(r, 1, "key.public", 1); kv_str(r, "label", ".."); }
static void b_label_long(Req *r)
{
	char l[66];

	memset(l, 'a', 65);
	l[65] = '\0';
	req_begin(r, 1, "key.public", 1);
	kv_str(r, "label", l);
}
static void b_type_bad(Req *r) { req_begin(r, 1, "key.generate", 2); kv_str(r, "type", "rsa"); kv_str(r, "label", "x"); }
static void b_seed_short(Req *r)
{
	req_begin(r, 1, "key.import", 3);
	kv_str(r, "type", "ed25519");
	kv_str(r, "label", "x");
	kv_bin(r, "seed", "0123456789012345678901234567890", 31);
}
static void b_msg_str(Req *r) { req_begin(r, 1, "sign", 2); kv_str(r, "key", "x"); kv_str(r, "message", "m"); }
static void b_ctx_missing(Req *r)
{
	req_begin(r, 1, "sign", 3);
	kv_str(r, "key", "x");
	kv_bin(r, "message", "m", 1);
	kv_str(r, "mode", "ctx");
}
static void b_ctx_pure(Req *r)
{
	req_begin(r, 1, "sign", 3);
	kv_str(r, "key", "x");
	kv_bin(r, "message", "m", 1);
	kv_bin(r, "context", "c", 1);
}
static void b_prehash_len(Req *r)
{
	req_begin(r, 1, "sign", 4);
	kv_str(r, "key", "x");
	kv_bin(r, "message", "m", 1);
	kv_str(r, "mode", "ph");
	kv_bool(r, "prehashed", true);
}
static void b_ctx_long(Req *r)
{
	static uint8_t c[256];

	req_begin(r, 1, "sign", 4);
	kv_str(r, "key", "x");
	kv_bin(r, "message", "m", 1);
	kv_str(r, "mode", "ph");
	kv_bin(r, "context", c, sizeof(c));
}
static void b_sig_short(Req *r)
{
	static uint8_t k[32], s[63];

	req_begin(r, 1, "verify", 3);
	kv_bin(r, "public_key", k, 32);
	kv_bin(r, "message", "m", 1);
	kv_bin(r, "signature", s, sizeof(s));
}
static void b_policy_bad(Req *r)
{
	static uint8_t k[32], s[64];

	req_begin(r, 1, "verify", 4);
	kv_bin(r, "public_key", k, 32);
	kv_bin(r, "message", "m", 1);
	kv_bin(r, "signature", s, sizeof(s));
	kv_str(r, "policy", "lenient");
}
static void b_items_not_array(Req *r) { req_begin(r, 1, "verify_batch", 1); kv_str(r, "items", "x"); }
static void b_item_bad(Req *r)
{
	req_begin(r, 1, "verify_batch", 1);
	str(r, "items");
	msgpack_pack_array(&r->pk, 1);
	msgpack_pack_map(&r->pk, 1);
	kv_bin(r, "message", "m", 1);
}
static void b_flag_int(Req *r) { req_begin(r, 1, "key.generate", 3); kv_str(r, "type", "x25519"); kv_str(r, "label", "x"); kv_int(r, "exportable", 1); }
static void b_peer_missing(Req *r) { req_begin(r, 1, "dh", 1); kv_str(r, "key", "x"); }
static void b_age_body_short(Req *r)
{
	static uint8_t z[32];

	req_begin(r, 1, "age.unwrap", 3);
	kv_str(r, "key", "x");
	kv_bin(r, "share", z, 32);
	kv_bin(r, "body", z, 31);
}
static void b_age_share_missing(Req *r)
{
	static uint8_t z[32];

	req_begin(r, 1, "age.unwrap", 2);
	kv_str(r, "key", "x");
	kv_bin(r, "body", z, 32);
}
static void b_recipient_bin(Req *r)
{
	req_begin(r, 1, "key.export_wrapped", 2);
	kv_str(r, "label", "x");
	kv_bin(r, "recipient", "age1", 4);
}
static void b_wrapped_file_str(Req *r)
{
	req_begin(r, 1, "key.import_wrapped", 3);
	kv_str(r, "label", "x");
	kv_str(r, "key", "host");
	kv_str(r, "file", "age-encryption.org/v1");
}
static void b_ops_bad(Req *r)
{
	req_begin(r, 1, "key.generate", 3);
	kv_str(r, "type", "x25519");
	kv_str(r, "label", "x");
	str(r, "policy");
	msgpack_pack_map(&r->pk, 1);
	str(r, "ops");
	msgpack_pack_array(&r->pk, 1);
	str(r, "age");
}

static void test_decode_errors(void **state)
{
	static const struct {
		Builder b;
		const char *needle;
	} cases[] = {
		{ b_missing_label, "missing field 'label'" },
		{ b_label_int, "'label' must be a string" },
		{ b_label_slash, "'label' must match" },
		{ b_label_dotdot, "'label' must match" },
		{ b_label_long, "'label' must match" },
		{ b_type_bad, "'type' must be one of" },
		{ b_seed_short, "'seed' must be 32 bytes" },
		{ b_msg_str, "'message' must be bin" },
		{ b_ctx_missing, "'context' must be 1 to 255" },
		{ b_ctx_pure, "'context' needs mode" },
		{ b_prehash_len, "64-byte SHA-512" },
		{ b_ctx_long, "'context' must be at most 255" },
		{ b_sig_short, "'signature' must be 64 bytes" },
		{ b_policy_bad, "'policy' must be one of" },
		{ b_items_not_array, "'items' must be an array" },
		{ b_item_bad, "items[0]: missing field 'public_key'" },
		{ b_flag_int, "'exportable' must be a boolean" },
		{ b_peer_missing, "missing field 'peer'" },
		{ b_age_body_short, "'body' must be 32 bytes" },
		{ b_age_share_missing, "missing field 'share'" },
		{ b_recipient_bin, "'recipient' must be an age recipient" },
		{ b_wrapped_file_str, "'file' must be bin" },
		{ b_ops_bad, "\"age-unwrap\"" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		Req r;
		ProtoRequest q;
		bool has;
		char err[PROTO_MESSAGE_MAX];

		cases[i].b(&r);
		assert_int_equal(decode(&r, &q, &has, err), PROTO_E_BAD_REQUEST);
		assert_true(has);
		assert_int_equal(q.msgid, 1);
		if (!strstr(err, cases[i].needle))
			fail_msg("case %zu: message '%s' lacks '%s'", i, err, cases[i].needle);
		req_end(&r, &q);
	}
}

static void test_decode_shape(void **state)
{
	ProtoRequest q;
	bool has;
	char err[PROTO_MESSAGE_MAX];
	/* [1, 2, 3] */
	static const uint8_t notreq[] = { 0x93, 0x01, 0x02, 0x03 };
	/* [0, 9, "nope", [{}]] */
	static const uint8_t unk[] = { 0x94, 0x00, 0x09, 0xa4, 'n', 'o', 'p', 'e', 0x91, 0x80 };
	/* [0, -1, "hello", [{}]] */
	static const uint8_t negid[] = { 0x94, 0x00, 0xff, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x91, 0x80 };
	/* [0, 3, "hello", {}] : params not an array */
	static const uint8_t parmap[] = { 0x94, 0x00, 0x03, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x80 };
	/* [0, 4, "hello", []] : no params map is fine */
	static const uint8_t noparams[] = { 0x94, 0x00, 0x04, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x90 };

	assert_int_equal(proto_request_decode(&q, &has, notreq, sizeof(notreq), err), PROTO_E_BAD_REQUEST);
	proto_request_deinit(&q);
	assert_int_equal(proto_request_decode(&q, &has, unk, sizeof(unk), err), PROTO_E_UNKNOWN_METHOD);
	assert_true(has);
	assert_int_equal(q.msgid, 9);
	assert_non_null(strstr(err, "nope"));
	proto_request_deinit(&q);
	assert_int_equal(proto_request_decode(&q, &has, negid, sizeof(negid), err), PROTO_E_BAD_REQUEST);
	assert_false(has);
	proto_request_deinit(&q);
	assert_int_equal(proto_request_decode(&q, &has, parmap, sizeof(parmap), err), PROTO_E_BAD_REQUEST);
	proto_request_deinit(&q);
	assert_int_equal(proto_request_decode(&q, &has, noparams, sizeof(noparams), err), 0);
	assert_int_equal(q.method, PROTO_METHOD_HELLO);
	proto_request_deinit(&q);
}

/* ---- encoder ------------------------------------------------------------- */

static const msgpack_object *unpack_one(msgpack_unpacked *u, const ProtoBuf *b)
{
	size_t off = 0;

	msgpack_unpacked_init(u);
	assert_int_equal(msgpack_unpack_next(u, (const char *)b->data, b->len, &off), MSGPACK_UNPACK_SUCCESS);
	assert_int_equal(off, b->len);
	assert_int_equal(u->data.type, MSGPACK_OBJECT_ARRAY);
	assert_int_equal(u->data.via.array.size, 4);
	assert_int_equal(u->data.via.array.ptr[0].via.u64, 1);
	return &u->data;
}

static const msgpack_object *get(const msgpack_object *m, const char *k)
{
	assert_int_equal(m->type, MSGPACK_OBJECT_MAP);
	for (uint32_t i = 0; i < m->via.map.size; i++)
		if (m->via.map.ptr[i].key.via.str.size == strlen(k) &&
		    memcmp(m->via.map.ptr[i].key.via.str.ptr, k, strlen(k)) == 0)
			return &m->via.map.ptr[i].val;
	fail_msg("no field %s", k);
	return NULL;
}

/* ---- moving a decoded request to a copy of its frame ---------------------- */

/* r decoded, its frame copied and the decoding rebased onto the copy, the
 * original frame scribbled over: the result must equal the decoding of the
 * copy, byte for byte (rpc.c keeps requests so) - or, for a method
 * proto_request_rebase() does not know, -1 with the request unchanged */
static void rebased(Req *r, bool known)
{
	ProtoRequest q, q2, before;
	bool has;
	char err[PROTO_MESSAGE_MAX];
	uint8_t *copy = malloc(r->sb.size);

	assert_non_null(copy);
	assert_int_equal(decode(r, &q, &has, err), 0);
	memcpy(copy, r->sb.data, r->sb.size);
	before = q;
	if (!known) {
		assert_int_equal(proto_request_rebase(&q, (const uint8_t *)r->sb.data, copy, r->sb.size), -1);
		assert_memory_equal(&q, &before, sizeof(q));
		req_end(r, &q);
		free(copy);
		return;
	}
	assert_int_equal(proto_request_rebase(&q, (const uint8_t *)r->sb.data, copy, r->sb.size), 0);
	memset(r->sb.data, 0xee, r->sb.size);
	assert_int_equal(proto_request_decode(&q2, &has, copy, r->sb.size, err), 0);
	assert_memory_equal(&q, &q2, sizeof(q));
	proto_request_deinit(&q2);
	req_end(r, &q);
	free(copy);
}

/* verify_batch: its items array (the decoder's) rebased in place, the
 * request then the same as a decoding of the copy, item by item */
static void rebased_batch(const uint8_t k32[32], const uint8_t s64[64], const uint8_t *msg)
{
	Req r;
	ProtoRequest q, q2;
	bool has;
	char err[PROTO_MESSAGE_MAX];
	uint8_t *copy;
	const void *items;

	req_begin(&r, 10, "verify_batch", 2);
	kv_str(&r, "policy", "zip215");
	str(&r, "items");
	msgpack_pack_array(&r.pk, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_map(&r.pk, 3);
		kv_bin(&r, "public_key", k32, 32);
		kv_bin(&r, "signature", s64, 64);
		kv_bin(&r, "message", msg, (size_t)(i * 40)); /* the first empty */
	}
	copy = malloc(r.sb.size);
	assert_non_null(copy);
	assert_int_equal(decode(&r, &q, &has, err), 0);
	assert_int_equal(q.u.verify_batch.n_items, 3);
	memcpy(copy, r.sb.data, r.sb.size);
	items = q.priv;
	assert_int_equal(proto_request_rebase(&q, (const uint8_t *)r.sb.data, copy, r.sb.size), 0);
	assert_ptr_equal(q.priv, items); /* the same array, its pointers moved */
	memset(r.sb.data, 0xee, r.sb.size);
	assert_int_equal(proto_request_decode(&q2, &has, copy, r.sb.size, err), 0);
	assert_int_equal(q.u.verify_batch.policy, q2.u.verify_batch.policy);
	assert_int_equal(q.u.verify_batch.n_items, q2.u.verify_batch.n_items);
	for (size_t i = 0; i < q.u.verify_batch.n_items; i++) {
		const ProtoVerifyItem *a = &q.u.verify_batch.items[i], *b = &q2.u.verify_batch.items[i];

		assert_ptr_equal(a->public_key, b->public_key);
		assert_ptr_equal(a->signature, b->signature);
		assert_int_equal(a->message.len, b->message.len);
		if (a->message.len)
			assert_ptr_equal(a->message.data, b->message.data);
		assert_memory_equal(a->public_key, k32, 32);
		assert_memory_equal(a->signature, s64, 64);
		assert_memory_equal(a->message.data, msg, a->message.len);
	}
	proto_request_deinit(&q2);
	req_end(&r, &q);
	free(copy);
}

static void test_rebase(void **state)
{
	Req r;
	uint8_t k32[32], s64[64], msg[200];

	(void)state;
	memset(k32, 0x11, sizeof(k32));
	memset(s64, 0x22, sizeof(s64));
	memset(msg, 0x33, sizeof(msg));

	req_begin(&r, 1, "sign", 4);
	kv_str(&r, "key", "k");
	kv_bin(&r, "message", msg, sizeof(msg));
	kv_str(&r, "mode", "ctx");
	kv_bin(&r, "context", s64, 7);
	rebased(&r, true);
	/* an empty message last in the frame (a pointer at the frame's end, or none) */
	req_begin(&r, 2, "sign", 2);
	kv_str(&r, "key", "k");
	kv_bin(&r, "message", msg, 0);
	rebased(&r, true);
	req_begin(&r, 3, "verify", 6);
	kv_bin(&r, "public_key", k32, 32);
	kv_bin(&r, "message", msg, 100);
	kv_bin(&r, "signature", s64, 64);
	kv_str(&r, "policy", "zip215");
	kv_str(&r, "mode", "ctx");
	kv_bin(&r, "context", s64, 3);
	rebased(&r, true);
	req_begin(&r, 4, "dh", 2);
	kv_str(&r, "key", "x");
	kv_bin(&r, "peer", k32, 32);
	rebased(&r, true);
	req_begin(&r, 5, "age.unwrap", 3);
	kv_str(&r, "key", "host");
	kv_bin(&r, "share", k32, 32);
	kv_bin(&r, "body", s64, 32);
	rebased(&r, true);
	req_begin(&r, 6, "key.public", 1);
	kv_str(&r, "label", "k");
	rebased(&r, true);
	req_begin(&r, 7, "audit", 1);
	kv_int(&r, "limit", 5);
	rebased(&r, true);
	/* not known: decoded again by the caller */
	req_begin(&r, 8, "key.import", 3);
	kv_str(&r, "type", "ed25519");
	kv_str(&r, "label", "imp");
	kv_bin(&r, "seed", k32, 32);
	rebased(&r, false);
	req_begin(&r, 9, "unlock", 1);
	kv_str(&r, "passphrase", "pw");
	rebased(&r, false);
	rebased_batch(k32, s64, msg);
}

static void test_encode(void **state)
{
	ProtoBuf b = PROTO_BUF_NULL(b);
	ProtoResponse resp = { .msgid = 77, .has_msgid = true, .method = PROTO_METHOD_SIGN };
	msgpack_unpacked u;
	const msgpack_object *o, *res;
	ProtoKeyInfo keys[2] = { { .label = "a", .type = PROTO_KEY_ED25519, .fingerprint = "SHA256:x", .created = 5 },
	                         { .label = "b", .type = PROTO_KEY_X25519, .fingerprint = "SHA256:y", .exportable = true } };
	bool valid[3] = { true, false, true };

	memset(resp.u.sign.signature, 0xab, 64);
	assert_int_equal(proto_response_encode(&b, &resp), 0);
	o = unpack_one(&u, &b);
	assert_int_equal(o->via.array.ptr[1].via.u64, 77);
	assert_int_equal(o->via.array.ptr[2].type, MSGPACK_OBJECT_NIL);
	res = get(&o->via.array.ptr[3], "signature");
	assert_int_equal(res->type, MSGPACK_OBJECT_BIN);
	assert_int_equal(res->via.bin.size, 64);
	assert_memory_equal(res->via.bin.ptr, resp.u.sign.signature, 64);
	msgpack_unpacked_destroy(&u);
	proto_buf_deinit(&b);

	resp = (ProtoResponse){ .msgid = 3, .has_msgid = true, .method = PROTO_METHOD_KEY_LIST };
	resp.u.key_list.keys = keys;
	resp.u.key_list.n_keys = 2;
	assert_int_equal(proto_response_encode(&b, &resp), 0);
	o = unpack_one(&u, &b);
	res = get(&o->via.array.ptr[3], "keys");
	assert_int_equal(res->via.array.size, 2);
	assert_int_equal(get(&res->via.array.ptr[1], "type")->via.str.size, 6);
	assert_memory_equal(get(&res->via.array.ptr[1], "type")->via.str.ptr, "x25519", 6);
	assert_true(get(&res->via.array.ptr[1], "exportable")->via.boolean);
	assert_int_equal(get(&res->via.array.ptr[0], "created")->via.i64, 5);
	assert_int_equal(get(&res->via.array.ptr[0], "public_key")->via.bin.size, 32);
	msgpack_unpacked_destroy(&u);
	proto_buf_deinit(&b);

	resp = (ProtoResponse){ .msgid = 4, .has_msgid = true, .method = PROTO_METHOD_VERIFY_BATCH };
	resp.u.verify_batch.valid = valid;
	resp.u.verify_batch.n = 3;
	assert_int_equal(proto_response_encode(&b, &resp), 0);
	o = unpack_one(&u, &b);
	res = get(&o->via.array.ptr[3], "valid");
	assert_int_equal(res->via.array.size, 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(res->via.array.ptr[i].via.boolean, valid[i]);
	msgpack_unpacked_destroy(&u);
	proto_buf_deinit(&b);

	/* errors: with and without msgid; several frames append */
	assert_int_equal(proto_error_encode(&b, false, 0, PROTO_E_DENIED, "go away"), 0);
	assert_int_equal(proto_error_encode(&b, true, 12, PROTO_E_TOO_LARGE, "big"), 0);
	{
		size_t off = 0;

		msgpack_unpacked_init(&u);
		assert_int_equal(msgpack_unpack_next(&u, (const char *)b.data, b.len, &off), MSGPACK_UNPACK_SUCCESS);
		o = &u.data;
		assert_int_equal(o->via.array.ptr[1].type, MSGPACK_OBJECT_NIL);
		assert_memory_equal(get(&o->via.array.ptr[2], "code")->via.str.ptr, "denied", 6);
		assert_int_equal(o->via.array.ptr[3].type, MSGPACK_OBJECT_NIL);
		assert_int_equal(msgpack_unpack_next(&u, (const char *)b.data, b.len, &off), MSGPACK_UNPACK_SUCCESS);
		o = &u.data;
		assert_int_equal(o->via.array.ptr[1].via.u64, 12);
		assert_memory_equal(get(&o->via.array.ptr[2], "code")->via.str.ptr, "too_large", 9);
		assert_int_equal(off, b.len);
		msgpack_unpacked_destroy(&u);
	}
	proto_buf_deinit(&b);
}

static void test_names(void **state)
{
	for (int m = 0; m < _PROTO_METHOD_N; m++) {
		const char *n = proto_method_name((ProtoMethod)m);

		assert_non_null(n);
		assert_int_equal(proto_method_from_name(n, strlen(n)), m);
	}
	for (int e = 1; e < _PROTO_E_N; e++) {
		const char *n = proto_error_name((ProtoError)e);

		assert_non_null(n);
		assert_int_equal(proto_error_from_name(n, strlen(n)), e);
	}
	assert_int_equal(proto_method_from_name("sig", 3), PROTO_METHOD_UNKNOWN);
	assert_int_equal(proto_error_from_name("ok", 2), -1);
	assert_null(proto_method_name(_PROTO_METHOD_N));
	assert_true(proto_label_valid("A-z.0_9@+", 9));
	assert_false(proto_label_valid("", 0));
	assert_false(proto_label_valid(".", 1));
	assert_false(proto_label_valid("a b", 3));
	assert_false(proto_label_valid("a\0b", 3));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reader_byte_by_byte),
		cmocka_unit_test(test_reader_detach),
		cmocka_unit_test(test_reader_too_large),
		cmocka_unit_test(test_reader_invalid),
		cmocka_unit_test(test_reader_object_limit),
		cmocka_unit_test(test_decode_methods),
		cmocka_unit_test(test_decode_errors),
		cmocka_unit_test(test_decode_shape),
		cmocka_unit_test(test_rebase),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_names),
	};

	return cmocka_run_group_tests_name("proto", tests, NULL, NULL);
}
