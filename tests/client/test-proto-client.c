/* SPDX-License-Identifier: MIT */
/*
 * test-proto-client.c - the client side of proto/ against the server side:
 * every request encoded by proto_request_encode() decodes with
 * proto_request_decode() to the same fields, every response encoded by
 * proto_response_encode() decodes with proto_response_decode() to the same
 * result; malformed and truncated responses are refused without crashing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "proto.h"
#include "proto-client.h"

/* encode, cut with ProtoReader, decode on the server side */
static void roundtrip_request(const ProtoRequest *in, ProtoRequest *out, ProtoBuf *buf,
                              ProtoReader **readerp)
{
	char why[PROTO_MESSAGE_MAX];
	const uint8_t *frame;
	size_t flen;
	bool has_msgid;
	int r;

	proto_buf_init(buf);
	assert_int_equal(proto_request_encode(buf, in), 0);
	assert_int_equal(proto_reader_new(readerp, PROTO_DEFAULT_MAX_FRAME), 0);
	assert_int_equal(proto_reader_feed(*readerp, buf->data, buf->len), 0);
	assert_int_equal(proto_reader_next(*readerp, &frame, &flen), PROTO_READER_FRAME);
	assert_int_equal(flen, buf->len);
	*out = (ProtoRequest)PROTO_REQUEST_NULL(*out);
	r = proto_request_decode(out, &has_msgid, frame, flen, why);
	if (r)
		fail_msg("proto_request_decode: %d (%s)", r, why);
	assert_true(has_msgid);
	assert_int_equal(out->msgid, in->msgid);
	assert_int_equal(out->method, in->method);
}

static void done_request(ProtoRequest *out, ProtoBuf *buf, ProtoReader *reader)
{
	proto_request_deinit(out);
	proto_reader_free(reader);
	proto_buf_deinit(buf);
}

static void test_request_roundtrip(void **state)
{
	uint8_t seed[32], pk[32], sig[64], msg[300], ctx[7], peer[32];
	ProtoVerifyItem items[3];
	ProtoRequest in, out;
	ProtoReader *reader;
	ProtoBuf buf;

	th_randbytes(seed, 32);
	th_randbytes(pk, 32);
	th_randbytes(sig, 64);
	th_randbytes(msg, sizeof(msg));
	th_randbytes(ctx, sizeof(ctx));
	th_randbytes(peer, 32);

	/* methods without params */
	for (ProtoMethod m = PROTO_METHOD_HELLO; m < _PROTO_METHOD_N; m++) {
		if (m != PROTO_METHOD_HELLO && m != PROTO_METHOD_STATUS && m != PROTO_METHOD_KEY_LIST)
			continue;
		in = (ProtoRequest){ .msgid = 7 + m, .method = m };
		roundtrip_request(&in, &out, &buf, &reader);
		done_request(&out, &buf, reader);
	}

	in = (ProtoRequest){ .msgid = 1, .method = PROTO_METHOD_KEY_GENERATE };
	in.u.key_generate.type = PROTO_KEY_X25519;
	strcpy(in.u.key_generate.label, "a.b-c@d+e_f");
	in.u.key_generate.exportable = true;
	roundtrip_request(&in, &out, &buf, &reader);
	assert_int_equal(out.u.key_generate.type, PROTO_KEY_X25519);
	assert_string_equal(out.u.key_generate.label, "a.b-c@d+e_f");
	assert_true(out.u.key_generate.exportable);
	done_request(&out, &buf, reader);

	in = (ProtoRequest){ .msgid = 2, .method = PROTO_METHOD_KEY_IMPORT };
	in.u.key_import.type = PROTO_KEY_ED25519;
	strcpy(in.u.key_import.label, "imp");
	in.u.key_import.seed = seed;
	roundtrip_request(&in, &out, &buf, &reader);
	assert_int_equal(out.u.key_import.type, PROTO_KEY_ED25519);
	assert_memory_equal(out.u.key_import.seed, seed, 32);
	assert_false(out.u.key_import.exportable);
	done_request(&out, &buf, reader);

	in = (ProtoRequest){ .msgid = 3, .method = PROTO_METHOD_KEY_DELETE };
	strcpy(in.u.key_delete.label, "gone");
	roundtrip_request(&in, &out, &buf, &reader);
	assert_string_equal(out.u.key_delete.label, "gone");
	done_request(&out, &buf, reader);

	in = (ProtoRequest){ .msgid = 4, .method = PROTO_METHOD_KEY_PUBLIC };
	strcpy(in.u.key_public.label, "pub");
	roundtrip_request(&in, &out, &buf, &reader);
	assert_string_equal(out.u.key_public.label, "pub");
	done_request(&out, &buf, reader);

	/* sign in each mode, with and without context, prehashed */
	for (int mode = PROTO_MODE_PURE; mode <= PROTO_MODE_PH; mode++) {
		for (int pre = 0; pre < 2; pre++) {
			if (pre && mode != PROTO_MODE_PH)
				continue;
			in = (ProtoRequest){ .msgid = 0xfffffff0u + (unsigned)mode, .method = PROTO_METHOD_SIGN };
			strcpy(in.u.sign.label, "k");
			in.u.sign.mode = (ProtoSignMode)mode;
			in.u.sign.message = (ProtoBytes){ msg, pre ? 64 : sizeof(msg) };
			if (mode != PROTO_MODE_PURE)
				in.u.sign.context = (ProtoBytes){ ctx, sizeof(ctx) };
			in.u.sign.prehashed = pre;
			roundtrip_request(&in, &out, &buf, &reader);
			assert_string_equal(out.u.sign.label, "k");
			assert_int_equal(out.u.sign.mode, mode);
			assert_int_equal(out.u.sign.message.len, in.u.sign.message.len);
			assert_memory_equal(out.u.sign.message.data, msg, in.u.sign.message.len);
			assert_int_equal(out.u.sign.context.len, in.u.sign.context.len);
			if (in.u.sign.context.len)
				assert_memory_equal(out.u.sign.context.data, ctx, sizeof(ctx));
			assert_int_equal(out.u.sign.prehashed, pre);
			done_request(&out, &buf, reader);
		}
	}

	in = (ProtoRequest){ .msgid = 5, .method = PROTO_METHOD_VERIFY };
	in.u.verify.public_key = pk;
	in.u.verify.signature = sig;
	in.u.verify.message = (ProtoBytes){ msg, 64 };
	in.u.verify.policy = PROTO_POLICY_ZIP215;
	in.u.verify.mode = PROTO_MODE_PH;
	in.u.verify.context = (ProtoBytes){ ctx, 3 };
	in.u.verify.prehashed = true;
	roundtrip_request(&in, &out, &buf, &reader);
	assert_memory_equal(out.u.verify.public_key, pk, 32);
	assert_memory_equal(out.u.verify.signature, sig, 64);
	assert_int_equal(out.u.verify.policy, PROTO_POLICY_ZIP215);
	assert_int_equal(out.u.verify.mode, PROTO_MODE_PH);
	assert_int_equal(out.u.verify.context.len, 3);
	assert_true(out.u.verify.prehashed);
	done_request(&out, &buf, reader);

	for (int i = 0; i < 3; i++)
		items[i] = (ProtoVerifyItem){ pk, sig, { msg + i, (size_t)i * 10 } };
	in = (ProtoRequest){ .msgid = 6, .method = PROTO_METHOD_VERIFY_BATCH };
	in.u.verify_batch.items = items;
	in.u.verify_batch.n_items = 3;
	in.u.verify_batch.policy = PROTO_POLICY_ZIP215;
	roundtrip_request(&in, &out, &buf, &reader);
	assert_int_equal(out.u.verify_batch.n_items, 3);
	assert_int_equal(out.u.verify_batch.policy, PROTO_POLICY_ZIP215);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(out.u.verify_batch.items[i].message.len, (size_t)i * 10);
		assert_memory_equal(out.u.verify_batch.items[i].public_key, pk, 32);
	}
	done_request(&out, &buf, reader);

	in = (ProtoRequest){ .msgid = 8, .method = PROTO_METHOD_DH };
	strcpy(in.u.dh.label, "x");
	in.u.dh.peer = peer;
	roundtrip_request(&in, &out, &buf, &reader);
	assert_memory_equal(out.u.dh.peer, peer, 32);
	done_request(&out, &buf, reader);

	in = (ProtoRequest){ .msgid = 9, .method = PROTO_METHOD_UNLOCK };
	in.u.unlock.has_passphrase = true;
	in.u.unlock.passphrase = (ProtoBytes){ (const uint8_t *)"correct horse", 13 };
	roundtrip_request(&in, &out, &buf, &reader);
	assert_true(out.u.unlock.has_passphrase);
	assert_int_equal(out.u.unlock.passphrase.len, 13);
	done_request(&out, &buf, reader);

	/* unknown method and bad enum values are refused, buffer untouched */
	proto_buf_init(&buf);
	in = (ProtoRequest){ .msgid = 1, .method = PROTO_METHOD_UNKNOWN };
	assert_int_equal(proto_request_encode(&buf, &in), -EINVAL);
	in = (ProtoRequest){ .msgid = 1, .method = PROTO_METHOD_SIGN };
	strcpy(in.u.sign.label, "k");
	in.u.sign.mode = (ProtoSignMode)9;
	assert_int_equal(proto_request_encode(&buf, &in), -EINVAL);
	assert_int_equal(buf.len, 0);
	proto_buf_deinit(&buf);
}

static void roundtrip_response(const ProtoResponse *in, ProtoResponse *out)
{
	char why[PROTO_MESSAGE_MAX];
	ProtoBuf buf = PROTO_BUF_NULL(buf);
	bool has_msgid;
	uint64_t msgid;
	int r;

	assert_int_equal(proto_response_encode(&buf, in), 0);
	assert_int_equal(proto_response_msgid(buf.data, buf.len, &has_msgid, &msgid), 0);
	assert_true(has_msgid);
	assert_int_equal(msgid, in->msgid);
	r = proto_response_decode(out, in->method, buf.data, buf.len, why);
	if (r)
		fail_msg("proto_response_decode: %d (%s)", r, why);
	assert_int_equal(out->msgid, in->msgid);
	assert_int_equal(out->error, in->error);
	/* every truncation is refused */
	for (size_t cut = 0; cut < buf.len; cut++) {
		ProtoResponse t;

		assert_int_not_equal(proto_response_decode(&t, in->method, buf.data, cut, why), 0);
		proto_response_deinit(&t);
	}
	proto_buf_deinit(&buf);
}

static void test_response_roundtrip(void **state)
{
	static const char *const features[] = { "ed25519", "x25519", "pipelining" };
	ProtoKeyInfo keys[2] = { 0 };
	bool valid[4] = { true, false, true, true };
	ProtoResponse in, out;

	in = (ProtoResponse){ .msgid = 11, .has_msgid = true, .method = PROTO_METHOD_HELLO };
	in.u.hello.protocol = 1;
	in.u.hello.server = "sigild 0.1.0";
	in.u.hello.features = features;
	in.u.hello.n_features = 3;
	roundtrip_response(&in, &out);
	assert_int_equal(out.u.hello.protocol, 1);
	assert_string_equal(out.u.hello.server, "sigild 0.1.0");
	assert_int_equal(out.u.hello.n_features, 3);
	assert_string_equal(out.u.hello.features[2], "pipelining");
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 12, .has_msgid = true, .method = PROTO_METHOD_STATUS };
	in.u.status = (ProtoStatus){ .keys = 3, .locked = true, .connections = 4, .inflight = 5,
		                      .uptime_s = 6, .requests = 7, .workers = 8 };
	roundtrip_response(&in, &out);
	assert_int_equal(out.u.status.keys, 3);
	assert_true(out.u.status.locked);
	assert_int_equal(out.u.status.uptime_s, 6);
	assert_int_equal(out.u.status.workers, 8);
	proto_response_deinit(&out);

	strcpy(keys[0].label, "one");
	keys[0].type = PROTO_KEY_ED25519;
	th_randbytes(keys[0].public_key, 32);
	strcpy(keys[0].fingerprint, "SHA256:abc");
	keys[0].created = 1700000000;
	strcpy(keys[1].label, "two");
	keys[1].type = PROTO_KEY_X25519;
	keys[1].exportable = true;
	in = (ProtoResponse){ .msgid = 13, .has_msgid = true, .method = PROTO_METHOD_KEY_LIST };
	in.u.key_list.keys = keys;
	in.u.key_list.n_keys = 2;
	roundtrip_response(&in, &out);
	assert_int_equal(out.u.key_list.n_keys, 2);
	assert_string_equal(out.u.key_list.keys[0].label, "one");
	assert_memory_equal(out.u.key_list.keys[0].public_key, keys[0].public_key, 32);
	assert_string_equal(out.u.key_list.keys[0].fingerprint, "SHA256:abc");
	assert_int_equal(out.u.key_list.keys[0].created, 1700000000);
	assert_int_equal(out.u.key_list.keys[1].type, PROTO_KEY_X25519);
	assert_true(out.u.key_list.keys[1].exportable);
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 14, .has_msgid = true, .method = PROTO_METHOD_KEY_PUBLIC };
	in.u.key = keys[0];
	roundtrip_response(&in, &out);
	assert_string_equal(out.u.key.label, "one");
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 15, .has_msgid = true, .method = PROTO_METHOD_SIGN };
	th_randbytes(in.u.sign.signature, 64);
	roundtrip_response(&in, &out);
	assert_memory_equal(out.u.sign.signature, in.u.sign.signature, 64);
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 16, .has_msgid = true, .method = PROTO_METHOD_VERIFY_BATCH };
	in.u.verify_batch.valid = valid;
	in.u.verify_batch.n = 4;
	roundtrip_response(&in, &out);
	assert_int_equal(out.u.verify_batch.n, 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(out.u.verify_batch.valid[i], valid[i]);
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 17, .has_msgid = true, .method = PROTO_METHOD_DH };
	th_randbytes(in.u.dh.shared_secret, 32);
	roundtrip_response(&in, &out);
	assert_memory_equal(out.u.dh.shared_secret, in.u.dh.shared_secret, 32);
	proto_response_deinit(&out);

	in = (ProtoResponse){ .msgid = 18, .has_msgid = true, .method = PROTO_METHOD_KEY_DELETE };
	roundtrip_response(&in, &out);
	proto_response_deinit(&out);

	/* every error code travels */
	for (int e = PROTO_E_BAD_REQUEST; e < _PROTO_E_N; e++) {
		in = (ProtoResponse){ .msgid = 100 + (unsigned)e, .has_msgid = true, .method = PROTO_METHOD_SIGN,
			              .error = (ProtoError)e };
		snprintf(in.message, sizeof(in.message), "why %d", e);
		roundtrip_response(&in, &out);
		assert_int_equal(out.error, e);
		assert_string_equal(out.message, in.message);
		proto_response_deinit(&out);
	}
}

/* hand-made malformed responses */
static void test_response_malformed(void **state)
{
	static const struct {
		const char *hex;
		ProtoMethod method;
		int want; /* 0 = decodes, else PROTO_E_BAD_REQUEST */
		int error;
	} cases[] = {
		/* [1, 1, nil, {}] for key.delete: fine */
		{ "940101c080", PROTO_METHOD_KEY_DELETE, 0, 0 },
		/* a request, not a response */
		{ "940001c080", PROTO_METHOD_KEY_DELETE, PROTO_E_BAD_REQUEST, 0 },
		/* three elements */
		{ "930101c0", PROTO_METHOD_KEY_DELETE, PROTO_E_BAD_REQUEST, 0 },
		/* sign result without signature */
		{ "940101c080", PROTO_METHOD_SIGN, PROTO_E_BAD_REQUEST, 0 },
		/* sign result with a 3-byte signature */
		{ "940101c081a97369676e6174757265c403010203", PROTO_METHOD_SIGN, PROTO_E_BAD_REQUEST, 0 },
		/* verify: valid is a string */
		{ "940101c081a576616c6964a3796573", PROTO_METHOD_VERIFY, PROTO_E_BAD_REQUEST, 0 },
		/* error map without code */
		{ "940101" "81a76d657373616765a178" "c0", PROTO_METHOD_SIGN, PROTO_E_BAD_REQUEST, 0 },
		/* unknown error code: internal, the name kept */
		{ "940101" "82a4636f6465a3666f6fa76d657373616765a178" "c0", PROTO_METHOD_SIGN, 0,
		  PROTO_E_INTERNAL },
		/* error code "locked" */
		{ "940101" "81a4636f6465a66c6f636b6564" "c0", PROTO_METHOD_SIGN, 0, PROTO_E_LOCKED },
		/* msgid is a string */
		{ "9401a131c080", PROTO_METHOD_KEY_DELETE, PROTO_E_BAD_REQUEST, 0 },
		/* trailing byte */
		{ "940101c08000", PROTO_METHOD_KEY_DELETE, PROTO_E_BAD_REQUEST, 0 },
	};
	char why[PROTO_MESSAGE_MAX];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t n;
		uint8_t *f = th_hex_decode_alloc(cases[i].hex, &n);
		ProtoResponse out;
		int r;

		assert_non_null(f);
		r = proto_response_decode(&out, cases[i].method, f, n, why);
		if (r != cases[i].want)
			fail_msg("case %zu: got %d, want %d (%s)", i, r, cases[i].want, why);
		if (r == 0)
			assert_int_equal(out.error, cases[i].error);
		if (cases[i].error == PROTO_E_INTERNAL)
			assert_non_null(strstr(out.message, "foo"));
		proto_response_deinit(&out);
		free(f);
	}
	/* random bytes never crash the decoder */
	for (int i = 0; i < 20000; i++) {
		uint8_t junk[64];
		size_t n = th_rand_below(sizeof(junk) + 1);
		ProtoResponse out;
		bool has;
		uint64_t id;

		th_randbytes(junk, n);
		if (n)
			junk[0] = 0x94; /* mostly look like a 4-array */
		(void)proto_response_msgid(junk, n, &has, &id);
		(void)proto_response_decode(&out, (ProtoMethod)(i % _PROTO_METHOD_N), junk, n, why);
		proto_response_deinit(&out);
	}
}

/* ---- out of memory ----
 * The test links with -Wl,--wrap for malloc, calloc, realloc, strndup and
 * free, so every allocation proto/ makes can be refused: with a budget of k
 * allocations, each call must fail with -ENOMEM (and leak nothing) until k
 * is large enough, then succeed. */
void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strndup(const char *s, size_t n);
void __wrap_free(void *p);

static long alloc_budget = -1; /* -1: unlimited */
static long alloc_live;

static int take_budget(void)
{
	if (alloc_budget == 0)
		return -1;
	if (alloc_budget > 0)
		alloc_budget--;
	return 0;
}

void *__wrap_malloc(size_t n)
{
	void *p = take_budget() < 0 ? NULL : __real_malloc(n);

	alloc_live += p != NULL;
	return p;
}

void *__wrap_calloc(size_t n, size_t m)
{
	void *p = take_budget() < 0 ? NULL : __real_calloc(n, m);

	alloc_live += p != NULL;
	return p;
}

void *__wrap_realloc(void *p, size_t n)
{
	void *q;

	if (take_budget() < 0)
		return NULL;
	q = __real_realloc(p, n);
	if (!p)
		alloc_live += q != NULL;
	return q;
}

char *__wrap_strndup(const char *s, size_t n)
{
	size_t l = strnlen(s, n);
	char *p = __wrap_malloc(l + 1);

	if (p) {
		memcpy(p, s, l);
		p[l] = '\0';
	}
	return p;
}

void __wrap_free(void *p)
{
	alloc_live -= p != NULL;
	__real_free(p);
}

static void test_oom(void **state)
{
	static const char *const features[] = { "a", "bb", "ccc" };
	uint8_t seed[32] = { 1 }, msg[4000] = { 2 };
	ProtoKeyInfo keys[3] = { 0 };
	ProtoBuf enc = PROTO_BUF_NULL(enc), rbuf = PROTO_BUF_NULL(rbuf);
	ProtoRequest req;
	ProtoResponse in, out;
	char why[PROTO_MESSAGE_MAX];
	long base = alloc_live;
	int k, r;

	/* requests: a seed (wiped buffer) and a large message (buffer growth) */
	for (int m = 0; m < 2; m++) {
		if (m == 0) {
			req = (ProtoRequest){ .msgid = 1, .method = PROTO_METHOD_KEY_IMPORT };
			strcpy(req.u.key_import.label, "k");
			req.u.key_import.seed = seed;
		} else {
			req = (ProtoRequest){ .msgid = 2, .method = PROTO_METHOD_SIGN };
			strcpy(req.u.sign.label, "k");
			req.u.sign.message = (ProtoBytes){ msg, sizeof(msg) };
		}
		for (k = 0;; k++) {
			alloc_budget = k;
			r = proto_request_encode(&enc, &req);
			alloc_budget = -1;
			if (r == 0)
				break;
			assert_int_equal(r, -ENOMEM);
			assert_int_equal(enc.len, 0);
			assert_true(k < 100);
		}
		printf("# request %d encodes with %d allocations\n", m, k);
		proto_buf_deinit(&enc);
		assert_int_equal(alloc_live, base);
	}

	/* responses with allocated results: hello (strings), key.list (array) */
	strcpy(keys[0].label, "one");
	strcpy(keys[1].label, "two");
	strcpy(keys[2].label, "three");
	for (int m = 0; m < 2; m++) {
		in = (ProtoResponse){ .msgid = 5, .has_msgid = true };
		if (m == 0) {
			in.method = PROTO_METHOD_HELLO;
			in.u.hello.protocol = 1;
			in.u.hello.server = "sigild";
			in.u.hello.features = features;
			in.u.hello.n_features = 3;
		} else {
			in.method = PROTO_METHOD_KEY_LIST;
			in.u.key_list.keys = keys;
			in.u.key_list.n_keys = 3;
		}
		assert_int_equal(proto_response_encode(&rbuf, &in), 0);
		for (k = 0;; k++) {
			alloc_budget = k;
			r = proto_response_decode(&out, in.method, rbuf.data, rbuf.len, why);
			alloc_budget = -1;
			proto_response_deinit(&out);
			assert_int_equal(alloc_live, base + 1); /* rbuf only: nothing leaked */
			if (r == 0)
				break;
			assert_int_equal(r, -ENOMEM);
			assert_true(k < 100);
		}
		printf("# response %d decodes with %d allocations\n", m, k);
		proto_buf_deinit(&rbuf);
		assert_int_equal(alloc_live, base);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_roundtrip),
		cmocka_unit_test(test_response_roundtrip),
		cmocka_unit_test(test_response_malformed),
		cmocka_unit_test(test_oom),
	};

	return th_run(tests);
}
