/* SPDX-License-Identifier: MIT */
/*
 * test-sha512.c - SHA-512 (FIPS 180-4): every NIST CAVP ShortMsg/LongMsg
 * vector, the Monte Carlo test, streaming with random chunking against the
 * one-shot function, every length 0..600 and random data against OpenSSL,
 * overlapping buffers, and the wipe of the context by final.
 *
 * Every block function this build has and this CPU runs (sha512.h: the
 * portable C one, and the AVX2+BMI2 one of amd64 builds) goes through the
 * NIST vectors and the Monte Carlo test, and is compared with the C twin
 * and libsodium on random lengths and random split points, with the C twin
 * on 0..40 blocks at every offset mod 64, and must read nothing beyond its
 * input; the dispatch must pick the AVX2 one exactly when the CPU has it.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <sodium.h>

#include <sigil/crypto.h>

#include "sha512.h"

/* the block functions under test: the portable one, then the AVX2 one and
 * the AVX-512VL one, each when the build has it and the CPU runs it */
struct impl {
	const char *name;
	sha512_blocks_fn *blocks;
};

static size_t impls(struct impl out[3])
{
	size_t n = 0;
	out[n++] = (struct impl){ "generic", sha512_blocks_generic };
	if (sha512_blocks_avx2_built() != NULL) {
		if (sha512_avx2_capable())
			out[n++] = (struct impl){ "avx2", sha512_blocks_avx2_built() };
		else
			print_message("# NOTE: this CPU lacks AVX2/BMI2: the AVX2 SHA-512 is not tested here\n");
	}
	if (sha512_blocks_avx512_built() != NULL) {
		if (sha512_avx512_capable())
			out[n++] = (struct impl){ "avx512", sha512_blocks_avx512_built() };
		else
			print_message("# NOTE: this CPU lacks AVX-512 F/VL: the AVX-512 SHA-512 is not tested here\n");
	}
	return n;
}

static void sha512_with(uint8_t out[64], const uint8_t *m, size_t n, sha512_blocks_fn *blocks)
{
	sigil_sha512_ctx c;
	sigil_sha512_init(&c);
	sha512_update_with(&c, m, n, blocks);
	sha512_final_with(&c, out, blocks);
}

static void openssl_sha512(uint8_t out[64], const uint8_t *m, size_t n)
{
	unsigned int len = 0;
	assert_int_equal(EVP_Digest(m, n, out, &len, EVP_sha512(), NULL), 1);
	assert_int_equal(len, 64);
}

/* SHA-512 through init/update/final with the given block function (NULL:
 * the public sigil_sha512_update/final), the message cut into random chunks */
static void chunked_sha512_with(uint8_t out[64], const uint8_t *m, size_t n, sha512_blocks_fn *blocks)
{
	sigil_sha512_ctx c;
	sigil_sha512_init(&c);
	size_t off = 0;
	while (off < n) {
		size_t k;
		switch (th_rand_below(4)) {
		case 0:
			k = 0;
			break;
		case 1:
			k = th_rand_below(8);
			break;
		case 2:
			k = 128 - (off % 128); /* finish the block exactly */
			break;
		default:
			k = th_rand_below(400);
			break;
		}
		if (k > n - off)
			k = n - off;
		if (blocks != NULL)
			sha512_update_with(&c, m + off, k, blocks);
		else
			sigil_sha512_update(&c, m + off, k);
		off += k;
	}
	if (blocks != NULL)
		sha512_final_with(&c, out, blocks);
	else
		sigil_sha512_final(&c, out);
}

static void chunked_sha512(uint8_t out[64], const uint8_t *m, size_t n)
{
	chunked_sha512_with(out, m, n, NULL);
}

/* Run every Len/Msg/MD record of a CAVP .rsp file; returns the number of records. */
static int run_rsp(const char *relpath)
{
	FILE *f = th_vec_open(relpath);
	char *buf = NULL, *line;
	size_t cap = 0;
	long len = -1;
	uint8_t *msg = NULL;
	size_t msglen = 0;
	int count = 0;
	while ((line = th_vec_line(f, &buf, &cap)) != NULL) {
		if (line[0] == '[')
			continue;
		char *eq = strstr(line, " = ");
		assert_non_null(eq);
		*eq = '\0';
		const char *key = line, *val = eq + 3;
		if (strcmp(key, "Len") == 0) {
			len = strtol(val, NULL, 10);
			assert_true(len >= 0 && len % 8 == 0);
		} else if (strcmp(key, "Msg") == 0) {
			free(msg);
			msg = th_hex_decode_alloc(val, &msglen);
			assert_non_null(msg);
			if (len == 0)
				msglen = 0; /* "Msg = 00" stands for the empty message */
			assert_int_equal(msglen, (size_t)len / 8);
		} else if (strcmp(key, "MD") == 0) {
			assert_non_null(msg);
			uint8_t got[64];
			sigil_sha512(got, msg, msglen);
			th_assert_hex_eq(got, val, 64);
			chunked_sha512(got, msg, msglen);
			th_assert_hex_eq(got, val, 64);
			struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
			size_t nim = impls(im);
			for (size_t i = 0; i < nim; i++) {
				sha512_with(got, msg, msglen, im[i].blocks);
				th_assert_hex_eq(got, val, 64);
				chunked_sha512_with(got, msg, msglen, im[i].blocks);
				th_assert_hex_eq(got, val, 64);
			}
			count++;
			free(msg);
			msg = NULL;
			len = -1;
		} else {
			fail_msg("unexpected key '%s' in %s", key, relpath);
		}
	}
	free(msg);
	free(buf);
	fclose(f);
	return count;
}

static void test_short_msg(void **state)
{
	th_rng_reset("short");
	/* Len = 0, 8, ..., 1024: 129 records */
	assert_int_equal(run_rsp("sha512/SHA512ShortMsg.rsp"), 129);
}

static void test_long_msg(void **state)
{
	th_rng_reset("long");
	assert_int_equal(run_rsp("sha512/SHA512LongMsg.rsp"), 128);
}

/* CAVP SHA-2 Monte Carlo (SHAVS section 6.4): from Seed, 100 checkpoints of
 * 1000 iterations each, M_i = MD_{i-3} || MD_{i-2} || MD_{i-1}. */
static void monte(sha512_blocks_fn *blocks)
{
	FILE *f = th_vec_open("sha512/SHA512Monte.rsp");
	char *buf = NULL, *line;
	size_t cap = 0;
	uint8_t seed[64], md[3][64], m[192];
	int have_seed = 0, checkpoints = 0;
	while ((line = th_vec_line(f, &buf, &cap)) != NULL) {
		if (line[0] == '[')
			continue;
		char *eq = strstr(line, " = ");
		assert_non_null(eq);
		*eq = '\0';
		const char *key = line, *val = eq + 3;
		if (strcmp(key, "Seed") == 0) {
			assert_int_equal(th_hex_decode(seed, 64, val), 0);
			have_seed = 1;
		} else if (strcmp(key, "COUNT") == 0) {
			assert_true(have_seed);
			assert_int_equal(strtol(val, NULL, 10), checkpoints);
		} else if (strcmp(key, "MD") == 0) {
			memcpy(md[0], seed, 64);
			memcpy(md[1], seed, 64);
			memcpy(md[2], seed, 64);
			for (int i = 3; i < 1003; i++) {
				memcpy(m, md[0], 64);
				memcpy(m + 64, md[1], 64);
				memcpy(m + 128, md[2], 64);
				memmove(md[0], md[1], 64);
				memmove(md[1], md[2], 64);
				if (blocks != NULL)
					sha512_with(md[2], m, sizeof(m), blocks);
				else
					sigil_sha512(md[2], m, sizeof(m));
			}
			th_assert_hex_eq(md[2], val, 64);
			memcpy(seed, md[2], 64);
			checkpoints++;
		} else {
			fail_msg("unexpected key '%s' in SHA512Monte.rsp", key);
		}
	}
	free(buf);
	fclose(f);
	assert_int_equal(checkpoints, 100);
}

/* the public sigil_sha512, then every block function */
static void test_monte(void **state)
{
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	monte(NULL);
	for (size_t i = 0; i < nim; i++)
		monte(im[i].blocks);
}

/* Every length from 0 to 600 (block boundaries at 111/112, 127/128, 239/240,
 * 255/256 ...), one shot and chunked, against OpenSSL. */
static void test_lengths_vs_openssl(void **state)
{
	th_rng_reset("lengths");
	uint8_t m[600], want[64], got[64];
	th_randbytes(m, sizeof(m));
	for (size_t n = 0; n <= sizeof(m); n++) {
		openssl_sha512(want, m, n);
		sigil_sha512(got, m, n);
		th_assert_bytes_eq(got, want, 64);
		chunked_sha512(got, m, n);
		th_assert_bytes_eq(got, want, 64);
	}
}

/* Updates that end exactly at a block boundary (the context then keeps the
 * full block for the final, or compresses it when more input comes),
 * empty updates between them, as signing hashes R || A || M: every block
 * function against OpenSSL. */
static void test_block_aligned_updates(void **state)
{
	static const size_t pieces[][4] = {
		{ 128, 0, 0, 0 }, { 32, 32, 64, 0 }, { 128, 0, 128, 0 }, { 256, 0, 1, 0 },
		{ 100, 28, 0, 100 }, { 384, 0, 0, 0 }, { 32, 96, 128, 128 }, { 1, 127, 127, 1 },
	};
	th_rng_reset("aligned");
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	uint8_t m[600], want[64], got[64];
	th_randbytes(m, sizeof(m));
	for (size_t p = 0; p < sizeof(pieces) / sizeof(pieces[0]); p++) {
		size_t n = pieces[p][0] + pieces[p][1] + pieces[p][2] + pieces[p][3];
		openssl_sha512(want, m, n);
		for (size_t i = 0; i <= nim; i++) {
			sigil_sha512_ctx c;
			size_t off = 0;
			sigil_sha512_init(&c);
			for (int k = 0; k < 4; k++) {
				if (i < nim)
					sha512_update_with(&c, m + off, pieces[p][k], im[i].blocks);
				else
					sigil_sha512_update(&c, m + off, pieces[p][k]);
				off += pieces[p][k];
			}
			if (i < nim)
				sha512_final_with(&c, got, im[i].blocks);
			else
				sigil_sha512_final(&c, got);
			th_assert_bytes_eq(got, want, 64);
		}
	}
}

static void test_random_vs_openssl(void **state)
{
	th_rng_reset("random");
	size_t cap = 70000;
	uint8_t *m = malloc(cap), want[64], got[64];
	assert_non_null(m);
	for (int iter = 0; iter < 300; iter++) {
		size_t n = (iter % 10 == 0) ? th_rand_below(cap) : th_rand_below(2000);
		th_randbytes(m, n);
		openssl_sha512(want, m, n);
		sigil_sha512(got, m, n);
		th_assert_bytes_eq(got, want, 64);
		chunked_sha512(got, m, n);
		th_assert_bytes_eq(got, want, 64);
	}
	free(m);
}

/* One update call per byte: the slowest path through the partial-block buffer. */
static void test_bytewise(void **state)
{
	th_rng_reset("bytewise");
	uint8_t m[1000], want[64], got[64];
	th_randbytes(m, sizeof(m));
	sigil_sha512_ctx c;
	sigil_sha512_init(&c);
	for (size_t i = 0; i < sizeof(m); i++)
		sigil_sha512_update(&c, m + i, 1);
	sigil_sha512_final(&c, got);
	openssl_sha512(want, m, sizeof(m));
	th_assert_bytes_eq(got, want, 64);
}

/* The dispatch: the AVX-512VL block function when the build has it and the
 * CPU runs it, else the AVX2 one on the same terms, else the portable one.
 * Both are built together or not at all. */
static void test_dispatch(void **state)
{
	sha512_blocks_fn *avx2 = sha512_blocks_avx2_built();
	sha512_blocks_fn *avx512 = sha512_blocks_avx512_built();
	assert_true((avx2 == NULL) == (avx512 == NULL));
	if (avx512 != NULL && sha512_avx512_capable())
		assert_ptr_equal(sha512_blocks_chosen(), avx512);
	else if (avx2 != NULL && sha512_avx2_capable())
		assert_ptr_equal(sha512_blocks_chosen(), avx2);
	else
		assert_ptr_equal(sha512_blocks_chosen(), sha512_blocks_generic);
}

/* The block functions themselves against the C twin run one block at a
 * time: random states, 0..9 blocks (pairs and a lone last block), input at
 * every alignment mod 8, all-zero and all-one blocks. */
static void test_blocks_vs_generic(void **state)
{
	th_rng_reset("blocks");
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	uint8_t buf[10 * SHA512_BLOCK_LEN + 8];
	for (int iter = 0; iter < 400; iter++) {
		size_t nb = (size_t)th_rand_below(10), off = (size_t)(iter % 8);
		uint64_t start[8], ref[8], got[8];
		th_randbytes(buf, sizeof(buf));
		for (int i = 0; i < 8; i++)
			start[i] = th_rand64();
		if (iter % 50 == 0)
			memset(buf, iter % 100 == 0 ? 0xff : 0x00, sizeof(buf));
		memcpy(ref, start, sizeof(ref));
		for (size_t b = 0; b < nb; b++)
			sha512_blocks_generic(ref, buf + off + b * SHA512_BLOCK_LEN, 1);
		for (size_t i = 0; i < nim; i++) {
			memcpy(got, start, sizeof(got));
			im[i].blocks(got, buf + off, nb);
			assert_memory_equal(got, ref, sizeof(ref));
		}
	}
}

/* Longer runs against the C twin: 0..40 blocks in one call (pairs, a lone
 * last block, several passes of the assembly's pair loop), the input at
 * every offset 0..63 from a 64-byte boundary, random states. */
static void test_blocks_long_vs_generic(void **state)
{
	th_rng_reset("blocks-long");
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	enum { MAXB = 40 };
	uint8_t *raw = malloc(MAXB * SHA512_BLOCK_LEN + 128);
	assert_non_null(raw);
	uint8_t *base = raw + (64 - ((uintptr_t)raw & 63)); /* 64-byte aligned */
	for (int iter = 0; iter < 200; iter++) {
		size_t nb = iter < 41 ? (size_t)iter : (size_t)th_rand_below(MAXB + 1);
		size_t off = (size_t)(iter % 64);
		uint64_t start[8], ref[8], got[8];
		th_randbytes(base + off, nb * SHA512_BLOCK_LEN);
		for (int i = 0; i < 8; i++)
			start[i] = th_rand64();
		memcpy(ref, start, sizeof(ref));
		sha512_blocks_generic(ref, base + off, nb);
		for (size_t i = 0; i < nim; i++) {
			memcpy(got, start, sizeof(got));
			im[i].blocks(got, base + off, nb);
			assert_memory_equal(got, ref, sizeof(ref));
		}
	}
	free(raw);
}

/* The block functions read exactly nblocks * 128 bytes: the input ends at
 * a page that cannot be read (an over-read faults), starts one page before
 * it (an under-read would fault too, on the page below, which is also
 * inaccessible); the input is not written (the pages are read-only). */
static void test_blocks_no_overread(void **state)
{
	th_rng_reset("overread");
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	long pg = sysconf(_SC_PAGESIZE);
	assert_true(pg >= 4096);
	size_t page = (size_t)pg;
	/* guard | data (8 pages) | guard */
	uint8_t *map = mmap(NULL, 10 * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(map != MAP_FAILED);
	uint8_t *data = map + page;
	size_t cap = 8 * page;
	assert_int_equal(mprotect(data, cap, PROT_READ | PROT_WRITE), 0);
	th_randbytes(data, cap);
	assert_int_equal(mprotect(data, cap, PROT_READ), 0);
	for (size_t nb = 1; nb <= 9; nb++) {
		const uint8_t *at_end = data + cap - nb * SHA512_BLOCK_LEN;
		const uint8_t *at_start = data;
		uint64_t ref[8], got[8];
		for (int i = 0; i < 8; i++)
			ref[i] = th_rand64();
		memcpy(got, ref, sizeof(got));
		sha512_blocks_generic(ref, at_end, nb);
		for (size_t i = 0; i < nim; i++) {
			uint64_t st[8];
			memcpy(st, got, sizeof(st));
			im[i].blocks(st, at_end, nb);
			assert_memory_equal(st, ref, sizeof(ref));
			memcpy(st, got, sizeof(st));
			im[i].blocks(st, at_start, nb);
		}
	}
	assert_int_equal(munmap(map, 10 * page), 0);
}

/* Random lengths 1..4096 at random split points: every block function,
 * the public functions and libsodium agree. */
static void test_random_split_vs_sodium(void **state)
{
	th_rng_reset("split");
	assert_true(sodium_init() >= 0);
	struct impl im[3] = { { NULL, NULL }, { NULL, NULL }, { NULL, NULL } };
	size_t nim = impls(im);
	uint8_t m[4096], want[64], got[64];
	for (int iter = 0; iter < 1500; iter++) {
		size_t n = 1 + (size_t)th_rand_below(sizeof(m));
		th_randbytes(m, n);
		assert_int_equal(crypto_hash_sha512(want, m, n), 0);
		sigil_sha512(got, m, n);
		th_assert_bytes_eq(got, want, 64);
		for (size_t i = 0; i < nim; i++) {
			/* one or two random split points */
			size_t p1 = (size_t)th_rand_below(n + 1);
			size_t p2 = p1 + (size_t)th_rand_below(n - p1 + 1);
			sigil_sha512_ctx c;
			sigil_sha512_init(&c);
			sha512_update_with(&c, m, p1, im[i].blocks);
			sha512_update_with(&c, m + p1, p2 - p1, im[i].blocks);
			sha512_update_with(&c, m + p2, n - p2, im[i].blocks);
			sha512_final_with(&c, got, im[i].blocks);
			th_assert_bytes_eq(got, want, 64);
			chunked_sha512_with(got, m, n, im[i].blocks);
			th_assert_bytes_eq(got, want, 64);
		}
	}
}

/* "a" repeated 1,000,000 times (FIPS 180-2 appendix C.3). */
static void test_million_a(void **state)
{
	uint8_t block[1000], got[64];
	memset(block, 'a', sizeof(block));
	sigil_sha512_ctx c;
	sigil_sha512_init(&c);
	for (int i = 0; i < 1000; i++)
		sigil_sha512_update(&c, block, sizeof(block));
	sigil_sha512_final(&c, got);
	th_assert_hex_eq(got,
	                 "e718483d0ce769644e2e42c7bc15b4638e1f98b13b2044285632a803afa973eb"
	                 "de0ff244877ea60a4cb0432ce577c31beb009c5c2c49aa2e4eadb217ad8cc09b",
	                 64);
}

/* The output may overlap the input (crypto.h: every function works when its
 * buffers overlap). */
static void test_overlap(void **state)
{
	th_rng_reset("overlap");
	uint8_t m[300], want[64], buf[300];
	for (size_t n = 0; n <= 300; n += 23) {
		th_randbytes(m, n);
		openssl_sha512(want, m, n);
		memcpy(buf, m, n);
		sigil_sha512(buf, buf, n); /* out == m */
		th_assert_bytes_eq(buf, want, 64);
		if (n >= 64) {
			memcpy(buf, m, n);
			sigil_sha512(buf + n - 64, buf, n); /* out overlaps the tail of m */
			th_assert_bytes_eq(buf + n - 64, want, 64);
		}
	}
}

/* final wipes the context (crypto.h) */
static void test_final_wipes(void **state)
{
	sigil_sha512_ctx c, zero;
	uint8_t out[64];
	memset(&zero, 0, sizeof(zero));
	sigil_sha512_init(&c);
	sigil_sha512_update(&c, (const uint8_t *)"secret data", 11);
	sigil_sha512_final(&c, out);
	th_assert_bytes_eq(&c, &zero, sizeof(c));
}

/* Two contexts interleaved do not interfere; a context can be reused after init. */
static void test_independent_contexts(void **state)
{
	th_rng_reset("contexts");
	uint8_t a[500], b[700], wa[64], wb[64], ga[64], gb[64];
	th_randbytes(a, sizeof(a));
	th_randbytes(b, sizeof(b));
	openssl_sha512(wa, a, sizeof(a));
	openssl_sha512(wb, b, sizeof(b));
	sigil_sha512_ctx ca, cb;
	sigil_sha512_init(&ca);
	sigil_sha512_init(&cb);
	for (int i = 0; i < 5; i++) {
		sigil_sha512_update(&ca, a + 100 * i, 100);
		sigil_sha512_update(&cb, b + 140 * i, 140);
	}
	sigil_sha512_final(&ca, ga);
	sigil_sha512_final(&cb, gb);
	th_assert_bytes_eq(ga, wa, 64);
	th_assert_bytes_eq(gb, wb, 64);
	sigil_sha512_init(&ca);
	sigil_sha512_update(&ca, b, sizeof(b));
	sigil_sha512_final(&ca, ga);
	th_assert_bytes_eq(ga, wb, 64);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_short_msg),
		cmocka_unit_test(test_long_msg),
		cmocka_unit_test(test_monte),
		cmocka_unit_test(test_lengths_vs_openssl),
		cmocka_unit_test(test_block_aligned_updates),
		cmocka_unit_test(test_random_vs_openssl),
		cmocka_unit_test(test_bytewise),
		cmocka_unit_test(test_million_a),
		cmocka_unit_test(test_overlap),
		cmocka_unit_test(test_final_wipes),
		cmocka_unit_test(test_independent_contexts),
		cmocka_unit_test(test_dispatch),
		cmocka_unit_test(test_blocks_vs_generic),
		cmocka_unit_test(test_blocks_long_vs_generic),
		cmocka_unit_test(test_blocks_no_overread),
		cmocka_unit_test(test_random_split_vs_sodium),
	};
	return th_run(tests);
}
