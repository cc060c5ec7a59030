/* SPDX-License-Identifier: MIT */
/*
 * test-x25519.c - X25519 (RFC 7748): the section 5.2 and 6.1 vectors, the
 * iterated vector (1 and 1,000 rounds here; 1,000,000 with the argument
 * "slow", registered in suite 'slow'), every Wycheproof x25519 case, and a
 * differential test against libsodium and OpenSSL on random and edge inputs.
 *
 * Wycheproof "acceptable" cases (twist points, non-canonical u, small-order
 * u, ...): sigil's choice is to compute them like any other input (RFC 7748
 * section 5: the top bit is ignored and u >= p is reduced), so every case,
 * valid or acceptable, must produce exactly the file's "shared" value. The
 * return value is -1 exactly when that value is all zero (crypto.h), which
 * the file flags "ZeroSharedSecret"; the test checks both the bytes and the
 * return value, and that -1 goes with the flag.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>
#include <sodium.h>

#include <sigil/crypto.h>

static const uint8_t zero32[32];

static int is_zero32(const uint8_t b[32])
{
	return memcmp(b, zero32, 32) == 0;
}

/* ---- RFC 7748 --------------------------------------------------------- */

static void test_rfc7748_vectors(void **state)
{
	FILE *f = th_vec_open("converted/rfc7748.txt");
	char *buf = NULL, *line, *fld[8];
	size_t cap = 0;
	int n52 = 0, n61 = 0;
	while ((line = th_vec_line(f, &buf, &cap)) != NULL) {
		int nf = th_split(line, ' ', fld, 8);
		uint8_t k[32], u[32], out[32], want[32];
		if (strcmp(fld[0], "x25519") == 0) {
			th_vec_x25519(fld, nf, k, u, want);
			uint8_t k0[32];
			memcpy(k0, k, 32);
			assert_int_equal(sigil_x25519(out, k, u), 0);
			th_assert_bytes_eq(out, want, 32);
			th_assert_bytes_eq(k, k0, 32); /* clamped as read, not in place */
			n52++;
		} else if (strcmp(fld[0], "dh") == 0) {
			assert_int_equal(nf, 6);
			uint8_t apriv[32], apub[32], bpriv[32], bpub[32], shared[32], nine[32] = { 9 };
			assert_int_equal(th_hex_decode(apriv, 32, fld[1]), 0);
			assert_int_equal(th_hex_decode(apub, 32, fld[2]), 0);
			assert_int_equal(th_hex_decode(bpriv, 32, fld[3]), 0);
			assert_int_equal(th_hex_decode(bpub, 32, fld[4]), 0);
			assert_int_equal(th_hex_decode(shared, 32, fld[5]), 0);
			sigil_x25519_public(out, apriv);
			th_assert_bytes_eq(out, apub, 32);
			sigil_x25519_public(out, bpriv);
			th_assert_bytes_eq(out, bpub, 32);
			assert_int_equal(sigil_x25519(out, apriv, nine), 0);
			th_assert_bytes_eq(out, apub, 32);
			assert_int_equal(sigil_x25519(out, apriv, bpub), 0);
			th_assert_bytes_eq(out, shared, 32);
			assert_int_equal(sigil_x25519(out, bpriv, apub), 0);
			th_assert_bytes_eq(out, shared, 32);
			n61++;
		} else {
			assert_string_equal(fld[0], "iterated"); /* run by the iterated tests */
		}
	}
	free(buf);
	fclose(f);
	assert_int_equal(n52, 2);
	assert_int_equal(n61, 1);
}

/* The iterated test of section 5.2: k = u = 9; (k, u) = (X25519(k, u), k). */
static void run_iterated(unsigned long want_n)
{
	FILE *f = th_vec_open("converted/rfc7748.txt");
	char *buf = NULL, *line, *fld[8];
	size_t cap = 0;
	int found = 0;
	while ((line = th_vec_line(f, &buf, &cap)) != NULL) {
		int nf = th_split(line, ' ', fld, 8);
		if (strcmp(fld[0], "iterated") != 0 || strtoul(fld[1], NULL, 10) != want_n)
			continue;
		assert_int_equal(nf, 5);
		uint8_t k[32], u[32], out[32];
		assert_int_equal(th_hex_decode(k, 32, fld[2]), 0);
		assert_int_equal(th_hex_decode(u, 32, fld[3]), 0);
		for (unsigned long i = 0; i < want_n; i++) {
			assert_int_equal(sigil_x25519(out, k, u), 0);
			memcpy(u, k, 32);
			memcpy(k, out, 32);
		}
		th_assert_hex_eq(k, fld[4], 32);
		found++;
	}
	free(buf);
	fclose(f);
	assert_int_equal(found, 1);
}

static void test_iterated_1(void **state)
{
	run_iterated(1);
}

static void test_iterated_1000(void **state)
{
	run_iterated(1000);
}

static void test_iterated_1000000(void **state)
{
	run_iterated(1000000);
}

/* ---- Wycheproof ------------------------------------------------------- */

static void test_wycheproof(void **state)
{
	FILE *f = th_vec_open("converted/wycheproof-x25519.txt");
	char *buf = NULL, *line, *fld[8];
	size_t cap = 0;
	int total = 0, zero = 0, acceptable = 0;
	while ((line = th_vec_line(f, &buf, &cap)) != NULL) {
		assert_int_equal(th_split(line, ' ', fld, 8), 6);
		const char *tc = fld[0], *result = fld[1], *flags = fld[5];
		uint8_t k[32], u[32], want[32], out[32];
		assert_int_equal(th_hex_decode(k, 32, fld[2]), 0);
		assert_int_equal(th_hex_decode(u, 32, fld[3]), 0);
		assert_int_equal(th_hex_decode(want, 32, fld[4]), 0);
		/* the file has only valid and acceptable cases; both must compute */
		if (strcmp(result, "valid") != 0 && strcmp(result, "acceptable") != 0)
			fail_msg("tcId %s: unexpected result '%s'", tc, result);
		if (strcmp(result, "acceptable") == 0)
			acceptable++;
		memset(out, 0x55, 32);
		int r = sigil_x25519(out, k, u);
		if (memcmp(out, want, 32) != 0) {
			print_error("Wycheproof x25519 tcId %s (%s, %s): wrong shared value\n", tc, result, flags);
			th_assert_bytes_eq(out, want, 32);
		}
		int want_r = is_zero32(want) ? -1 : 0;
		if (r != want_r)
			fail_msg("Wycheproof x25519 tcId %s (%s, %s): returned %d, want %d", tc, result, flags, r,
			         want_r);
		if (is_zero32(want)) {
			assert_non_null(strstr(flags, "ZeroSharedSecret"));
			zero++;
		}
		total++;
	}
	free(buf);
	fclose(f);
	assert_int_equal(total, 518);
	assert_int_equal(acceptable, 254);
	assert_true(zero > 0);
}

/* ---- differential: libsodium, OpenSSL ---------------------------------- */

/* X25519 through OpenSSL's EVP interface; -1 if derive refuses (all-zero result). */
static int openssl_x25519(uint8_t out[32], const uint8_t k[32], const uint8_t u[32])
{
	EVP_PKEY *priv = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, k, 32);
	EVP_PKEY *peer = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, u, 32);
	assert_non_null(priv);
	assert_non_null(peer);
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(priv, NULL);
	assert_non_null(ctx);
	assert_int_equal(EVP_PKEY_derive_init(ctx), 1);
	int r = -1;
	size_t len = 32;
	if (EVP_PKEY_derive_set_peer(ctx, peer) == 1 && EVP_PKEY_derive(ctx, out, &len) == 1) {
		assert_int_equal(len, 32);
		r = 0;
	}
	EVP_PKEY_CTX_free(ctx);
	EVP_PKEY_free(priv);
	EVP_PKEY_free(peer);
	return r;
}

/* one input against both oracles; returns sigil's result */
static int diff_one(const uint8_t k[32], const uint8_t u[32])
{
	uint8_t got[32], so[32], os[32];
	memset(so, 0xaa, 32);
	memset(os, 0xbb, 32);
	int r = sigil_x25519(got, k, u);
	int rs = crypto_scalarmult(so, k, u);
	int ro = openssl_x25519(os, k, u);
	if (rs == 0) {
		th_assert_bytes_eq(got, so, 32);
		assert_int_equal(r, 0);
	} else {
		/* libsodium refuses small-order u (its blocklist) and all-zero
		 * results; the true result is then all zero */
		if (r != -1 || !is_zero32(got)) {
			th_hex_dump("k", k, 32);
			th_hex_dump("u", u, 32);
			th_hex_dump("sigil", got, 32);
			fail_msg("libsodium refused this input; sigil returned %d", r);
		}
	}
	if (ro == 0) {
		th_assert_bytes_eq(got, os, 32);
		assert_int_equal(r, 0);
	} else {
		assert_int_equal(r, -1);
		assert_true(is_zero32(got));
	}
	return r;
}

static void test_differential(void **state)
{
	th_rng_reset("x25519-diff");
	assert_true(sodium_init() >= 0);
	int noncanon = 0, topbit = 0;
	for (int i = 0; i < 10000; i++) {
		uint8_t k[32], u[32];
		th_randbytes(k, 32);
		switch (i % 4) {
		case 0:
			th_rand_weird32(u);
			break;
		case 1:
			/* u in [p, 2^255): p + (0..18), then maybe bit 255 */
			memset(u, 0xff, 32);
			u[31] = 0x7f;
			u[0] = (uint8_t)(0xed + th_rand_below(19));
			if (th_rand64() & 1)
				u[31] |= 0x80;
			break;
		default:
			th_randbytes(u, 32);
			break;
		}
		if (i % 7 == 0)
			th_rand_weird32(k);
		/* count u >= p (mod 2^255) and u with bit 255 set */
		uint8_t low[32];
		memcpy(low, u, 32);
		low[31] &= 0x7f;
		int ge_p = low[31] == 0x7f && low[0] >= 0xed;
		for (int j = 1; j < 31 && ge_p; j++)
			ge_p = low[j] == 0xff;
		noncanon += ge_p;
		topbit += u[31] >> 7;
		diff_one(k, u);
	}
	assert_true(noncanon >= 1000);
	assert_true(topbit >= 1000);
}

/* The edge table for both the scalar and u, every pair. */
static void test_edge_pairs(void **state)
{
	assert_true(sodium_init() >= 0);
	size_t n = th_weird32_count();
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			uint8_t k[32], u[32];
			th_weird32(k, i);
			th_weird32(u, j);
			diff_one(k, u);
		}
}

/* ---- properties -------------------------------------------------------- */

static void test_public_is_x25519_of_9(void **state)
{
	th_rng_reset("public");
	assert_true(sodium_init() >= 0);
	const uint8_t nine[32] = { 9 };
	for (int i = 0; i < 500; i++) {
		uint8_t k[32], a[32], b[32], c[32];
		if (i < (int)th_weird32_count())
			th_weird32(k, (size_t)i);
		else
			th_randbytes(k, 32);
		sigil_x25519_public(a, k);
		assert_int_equal(sigil_x25519(b, k, nine), 0);
		th_assert_bytes_eq(a, b, 32);
		assert_int_equal(crypto_scalarmult_base(c, k), 0);
		th_assert_bytes_eq(a, c, 32);
	}
}

/* bit 255 of u is ignored; u + p (when < 2^255) equals u */
static void test_top_bit_and_reduction(void **state)
{
	th_rng_reset("topbit");
	for (int i = 0; i < 200; i++) {
		uint8_t k[32], u[32], a[32], b[32];
		th_randbytes(k, 32);
		th_randbytes(u, 32);
		u[31] &= 0x7f;
		int ra = sigil_x25519(a, k, u);
		u[31] |= 0x80;
		int rb = sigil_x25519(b, k, u);
		th_assert_bytes_eq(a, b, 32);
		assert_int_equal(ra, rb);
	}
	for (unsigned v = 0; v < 19; v++) {
		uint8_t k[32], u[32] = { 0 }, up[32], a[32], b[32];
		th_randbytes(k, 32);
		u[0] = (uint8_t)v;
		/* up = v + p = v + 2^255 - 19 */
		memset(up, 0xff, 32);
		up[31] = 0x7f;
		up[0] = (uint8_t)(0xed + v);
		int ra = sigil_x25519(a, k, u);
		int rb = sigil_x25519(b, k, up);
		th_assert_bytes_eq(a, b, 32);
		assert_int_equal(ra, rb);
	}
}

/* small-order u: 0, 1 (and their non-canonical forms) give all zero and -1 */
static void test_small_order_u(void **state)
{
	th_rng_reset("smallorder");
	/* u = 0, 1, p-1 (order 2), p, p+1 and the two order-8 u values
	 * (Wycheproof x25519 / libsodium blocklist), the last two also + p
	 * is >= 2^255 so only the canonical forms are used for them */
	static const char *small[] = {
		"0000000000000000000000000000000000000000000000000000000000000000",
		"0100000000000000000000000000000000000000000000000000000000000000",
		"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
		"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
		"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
	};
	for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++) {
		uint8_t u[32], k[32], out[32];
		assert_int_equal(th_hex_decode(u, 32, small[i]), 0);
		for (int j = 0; j < 20; j++) {
			th_randbytes(k, 32);
			memset(out, 0x77, 32);
			assert_int_equal(sigil_x25519(out, k, u), -1);
			assert_true(is_zero32(out));
			u[31] ^= 0x80; /* the top bit does not matter */
		}
	}
}

/* out may alias the scalar or u (crypto.h: buffers may overlap) */
static void test_aliasing(void **state)
{
	th_rng_reset("alias");
	for (int i = 0; i < 100; i++) {
		uint8_t k[32], u[32], want[32], x[32];
		th_randbytes(k, 32);
		th_randbytes(u, 32);
		int r = sigil_x25519(want, k, u);
		memcpy(x, k, 32);
		assert_int_equal(sigil_x25519(x, x, u), r);
		th_assert_bytes_eq(x, want, 32);
		memcpy(x, u, 32);
		assert_int_equal(sigil_x25519(x, k, x), r);
		th_assert_bytes_eq(x, want, 32);
		/* scalar == u == out */
		memcpy(x, k, 32);
		r = sigil_x25519(want, k, k);
		assert_int_equal(sigil_x25519(x, x, x), r);
		th_assert_bytes_eq(x, want, 32);
		/* public: pk == scalar */
		sigil_x25519_public(want, k);
		memcpy(x, k, 32);
		sigil_x25519_public(x, x);
		th_assert_bytes_eq(x, want, 32);
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rfc7748_vectors),
		cmocka_unit_test(test_iterated_1),
		cmocka_unit_test(test_iterated_1000),
		cmocka_unit_test(test_wycheproof),
		cmocka_unit_test(test_differential),
		cmocka_unit_test(test_edge_pairs),
		cmocka_unit_test(test_public_is_x25519_of_9),
		cmocka_unit_test(test_top_bit_and_reduction),
		cmocka_unit_test(test_small_order_u),
		cmocka_unit_test(test_aliasing),
	};
	const struct CMUnitTest slow_tests[] = {
		cmocka_unit_test(test_iterated_1000000),
	};
	if (argc == 2 && strcmp(argv[1], "slow") == 0)
		return th_run(slow_tests);
	if (argc != 1) {
		fprintf(stderr, "usage: %s [slow]\n", argv[0]);
		return 2;
	}
	return th_run(tests);
}
