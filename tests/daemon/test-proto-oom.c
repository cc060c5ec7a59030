/* SPDX-License-Identifier: MIT */
/*
 * test-proto-oom.c - proto/ under allocation failure (STYLE.md section 5:
 * an OOM loop in the manner of libuv's test-loop-oom.c).
 *
 * malloc/calloc/free are wrapped at link time (-Wl,--wrap) for this
 * executable and the proto archive linked into it. Run n fails the n-th
 * allocation proto makes; every run must end in success or -ENOMEM (never a
 * crash or a wrong answer) and must free everything it allocated. The loop
 * ends at the first run in which no allocation failed.
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <msgpack.h>

#include "proto.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t size);
void __wrap_free(void *p);

#define MAX_LIVE 256

static bool tracking;
static long fail_at = -1, n_allocs;
static bool failed;
static void *live[MAX_LIVE];

static void *track(void *p)
{
	if (!p)
		return NULL;
	for (int i = 0; i < MAX_LIVE; i++)
		if (!live[i]) {
			live[i] = p;
			return p;
		}
	abort(); /* the test tracks at most MAX_LIVE blocks */
}

static bool inject(void)
{
	if (!tracking)
		return false;
	if (n_allocs++ == fail_at) {
		failed = true;
		return true;
	}
	return false;
}

void *__wrap_malloc(size_t n)
{
	if (inject())
		return NULL;
	return tracking ? track(__real_malloc(n)) : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t size)
{
	if (inject())
		return NULL;
	return tracking ? track(__real_calloc(n, size)) : __real_calloc(n, size);
}

void __wrap_free(void *p)
{
	for (int i = 0; p && i < MAX_LIVE; i++)
		if (live[i] == p)
			live[i] = NULL;
	__real_free(p);
}

static int n_live(void)
{
	int n = 0;

	for (int i = 0; i < MAX_LIVE; i++)
		n += live[i] != NULL;
	return n;
}

/* a stream of three requests, one with verify_batch items */
static msgpack_sbuffer stream;

static void str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void bin(msgpack_packer *pk, const char *k, const void *p, size_t n)
{
	str(pk, k);
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

static void build_stream(void)
{
	static uint8_t k[32], s[64], big[9000];
	msgpack_packer pk;

	msgpack_sbuffer_init(&stream);
	msgpack_packer_init(&pk, &stream, msgpack_sbuffer_write);
	/* [0, 1, "verify_batch", [{"items": [3 items]}]] */
	msgpack_pack_array(&pk, 4);
	msgpack_pack_int(&pk, 0);
	msgpack_pack_int(&pk, 1);
	str(&pk, "verify_batch");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 1);
	str(&pk, "items");
	msgpack_pack_array(&pk, 3);
	for (int i = 0; i < 3; i++) {
		msgpack_pack_map(&pk, 3);
		bin(&pk, "public_key", k, 32);
		bin(&pk, "message", "m", 1);
		bin(&pk, "signature", s, 64);
	}
	/* [0, 2, "sign", [{"key": "a", "message": 9000 bytes}]] */
	msgpack_pack_array(&pk, 4);
	msgpack_pack_int(&pk, 0);
	msgpack_pack_int(&pk, 2);
	str(&pk, "sign");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 2);
	str(&pk, "key");
	str(&pk, "a");
	bin(&pk, "message", big, sizeof(big));
	/* [0, 3, "status", [{}]] */
	msgpack_pack_array(&pk, 4);
	msgpack_pack_int(&pk, 0);
	msgpack_pack_int(&pk, 3);
	str(&pk, "status");
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, 0);
}

/* one run: Return 0 if everything succeeded, -ENOMEM if an allocation failed */
static int run(void)
{
	ProtoReader *r = NULL;
	ProtoBuf out = PROTO_BUF_NULL(out);
	const uint8_t *f;
	size_t len, frames = 0;
	int k, ret = 0;

	k = proto_reader_new(&r, 1 << 20);
	if (k < 0) {
		assert_int_equal(k, -ENOMEM);
		return -ENOMEM;
	}
	/* in pieces, to make the buffer grow */
	for (size_t off = 0; off < stream.size; off += 4000) {
		size_t n = stream.size - off < 4000 ? stream.size - off : 4000;

		k = proto_reader_feed(r, stream.data + off, n);
		if (k < 0) {
			assert_int_equal(k, -ENOMEM);
			ret = -ENOMEM;
			goto out;
		}
		assert_int_equal(k, 0);
		while ((k = proto_reader_next(r, &f, &len)) == PROTO_READER_FRAME) {
			ProtoRequest q;
			ProtoResponse resp;
			char err[PROTO_MESSAGE_MAX];
			bool has;
			int d = proto_request_decode(&q, &has, f, len, err);

			frames++;
			if (d < 0) {
				assert_int_equal(d, -ENOMEM);
				proto_request_deinit(&q);
				ret = -ENOMEM;
				continue;
			}
			assert_int_equal(d, 0);
			assert_true(has);
			if (q.method == PROTO_METHOD_VERIFY_BATCH)
				assert_int_equal(q.u.verify_batch.n_items, 3);
			memset(&resp, 0, sizeof(resp));
			resp.msgid = q.msgid;
			resp.has_msgid = true;
			resp.method = PROTO_METHOD_VERIFY;
			resp.u.verify.valid = true;
			d = proto_response_encode(&out, &resp);
			if (d < 0) {
				assert_int_equal(d, -ENOMEM);
				ret = -ENOMEM;
			}
			d = proto_error_encode(&out, true, q.msgid, PROTO_E_BUSY, "busy");
			if (d < 0) {
				assert_int_equal(d, -ENOMEM);
				ret = -ENOMEM;
			}
			proto_request_deinit(&q);
		}
		assert_int_equal(k, PROTO_READER_NONE);
	}
	assert_int_equal(frames, 3);
out:
	proto_buf_deinit(&out);
	proto_reader_free(r);
	return ret;
}

static void test_oom_loop(void **state)
{
	long n;

	build_stream();
	for (n = 0; n < 1000; n++) {
		int r;

		fail_at = n;
		n_allocs = 0;
		failed = false;
		tracking = true;
		r = run();
		tracking = false;
		assert_int_equal(n_live(), 0); /* no leak on any path */
		if (!failed) {
			assert_int_equal(r, 0);
			break;
		}
		assert_int_equal(r, -ENOMEM);
	}
	assert_true(n > 3); /* the loop did fail allocations on the way */
	assert_true(n < 1000);
	fprintf(stderr, "# proto succeeded once %ld allocations could succeed; every earlier failure was -ENOMEM\n", n);
	msgpack_sbuffer_destroy(&stream);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_oom_loop),
	};

	return cmocka_run_group_tests_name("proto-oom", tests, NULL, NULL);
}
