/* SPDX-License-Identifier: MIT */
/*
 * test-sc.c - scalars mod L (crypto/sc.h) against OpenSSL's BIGNUM as the
 * oracle: sc_reduce, sc_muladd, sc_mul, sc_add, sc_neg on edge values (0, 1,
 * L-1, L, 2^256-1, 2^512-1, ...) and random ones; sc_is_canonical at the
 * edges; sc_half_vartime's congruence, parity and sizes. (Aliasing:
 * test-alias.c.)
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>

#include "sc.h"

static BIGNUM *bn_L;
static BN_CTX *bn_ctx;

static int setup(void **state)
{
	bn_ctx = BN_CTX_new();
	bn_L = NULL;
	/* L = 2^252 + 27742317777372353535851937790883648493 (RFC 8032 5.1) */
	if (bn_ctx == NULL || BN_dec2bn(&bn_L, "7237005577332262213973186563042994240857116359379907606001950938285454250989") == 0)
		return -1;
	return 0;
}

static int teardown(void **state)
{
	BN_free(bn_L);
	BN_CTX_free(bn_ctx);
	return 0;
}

static BIGNUM *bn_from(const uint8_t *le, size_t n)
{
	BIGNUM *b = BN_lebin2bn(le, (int)n, NULL);
	assert_non_null(b);
	return b;
}

static void bn_to32(uint8_t out[32], const BIGNUM *b)
{
	assert_int_equal(BN_bn2lebinpad(b, out, 32), 32);
}

/* want = in mod L */
static void ref_reduce(uint8_t want[32], const uint8_t *in, size_t n)
{
	BIGNUM *x = bn_from(in, n), *r = BN_new();
	assert_non_null(r);
	assert_int_equal(BN_nnmod(r, x, bn_L, bn_ctx), 1);
	bn_to32(want, r);
	BN_free(x);
	BN_free(r);
}

/* want = (a*b + c) mod L */
static void ref_muladd(uint8_t want[32], const uint8_t a[32], const uint8_t b[32], const uint8_t c[32])
{
	BIGNUM *x = bn_from(a, 32), *y = bn_from(b, 32), *z = bn_from(c, 32), *r = BN_new();
	assert_non_null(r);
	assert_int_equal(BN_mul(r, x, y, bn_ctx), 1);
	assert_int_equal(BN_add(r, r, z), 1);
	assert_int_equal(BN_nnmod(r, r, bn_L, bn_ctx), 1);
	bn_to32(want, r);
	BN_free(x);
	BN_free(y);
	BN_free(z);
	BN_free(r);
}

static void ref_mul(uint8_t want[32], const uint8_t a[32], const uint8_t b[32])
{
	uint8_t zero[32] = { 0 };
	ref_muladd(want, a, b, zero);
}

static void ref_add(uint8_t want[32], const uint8_t a[32], const uint8_t b[32])
{
	uint8_t one[32] = { 1 };
	ref_muladd(want, a, one, b);
}

static void ref_neg(uint8_t want[32], const uint8_t a[32])
{
	BIGNUM *x = bn_from(a, 32), *r = BN_new();
	assert_non_null(r);
	assert_int_equal(BN_nnmod(r, x, bn_L, bn_ctx), 1);
	assert_int_equal(BN_mod_sub(r, bn_L, r, bn_L, bn_ctx), 1); /* (L - x) mod L */
	bn_to32(want, r);
	BN_free(x);
	BN_free(r);
}

static int ref_is_canonical(const uint8_t s[32])
{
	BIGNUM *x = bn_from(s, 32);
	int r = BN_cmp(x, bn_L) < 0;
	BN_free(x);
	return r;
}

/* 64-byte edge values: each half from the weird table, plus 2^512-1 */
static void weird64(uint8_t out[64], size_t i, size_t j)
{
	th_weird32(out, i);
	th_weird32(out + 32, j);
}

static void check_reduce(const uint8_t in[64])
{
	uint8_t got[32], want[32];
	memset(got, 0x5a, 32);
	sc_reduce(got, in);
	ref_reduce(want, in, 64);
	if (memcmp(got, want, 32) != 0) {
		th_hex_dump("in", in, 64);
		th_assert_bytes_eq(got, want, 32);
	}
	assert_int_equal(sc_is_canonical(got), 1);
}

static void test_reduce(void **state)
{
	th_rng_reset("reduce");
	size_t n = th_weird32_count();
	uint8_t in[64];
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++) {
			weird64(in, i, j);
			check_reduce(in);
		}
	memset(in, 0xff, 64); /* 2^512 - 1 */
	check_reduce(in);
	memset(in, 0, 64);
	check_reduce(in);
	/* L * 2^k for every k that fits, and L^2 - 1, L^2, L^2 + 1 */
	BIGNUM *x = BN_dup(bn_L);
	assert_non_null(x);
	for (int k = 0; k < 260; k++) {
		assert_int_equal(BN_bn2lebinpad(x, in, 64), 64);
		check_reduce(in);
		assert_int_equal(BN_lshift1(x, x), 1);
	}
	assert_int_equal(BN_sqr(x, bn_L, bn_ctx), 1);
	for (int d = -1; d <= 1; d++) {
		BIGNUM *y = BN_dup(x);
		assert_non_null(y);
		if (d < 0)
			assert_int_equal(BN_sub_word(y, 1), 1);
		if (d > 0)
			assert_int_equal(BN_add_word(y, 1), 1);
		assert_int_equal(BN_bn2lebinpad(y, in, 64), 64);
		check_reduce(in);
		BN_free(y);
	}
	BN_free(x);
	for (int i = 0; i < 20000; i++) {
		if (i % 2) {
			th_randbytes(in, 64);
		} else {
			th_rand_weird32(in);
			th_rand_weird32(in + 32);
		}
		check_reduce(in);
	}
}

static void check_muladd(const uint8_t a[32], const uint8_t b[32], const uint8_t c[32])
{
	uint8_t got[32], want[32];
	memset(got, 0x5a, 32);
	sc_muladd(got, a, b, c);
	ref_muladd(want, a, b, c);
	if (memcmp(got, want, 32) != 0) {
		th_hex_dump("a", a, 32);
		th_hex_dump("b", b, 32);
		th_hex_dump("c", c, 32);
		th_assert_bytes_eq(got, want, 32);
	}
}

static void test_muladd(void **state)
{
	th_rng_reset("muladd");
	size_t n = th_weird32_count();
	uint8_t a[32], b[32], c[32];
	/* every triple of edge values */
	for (size_t i = 0; i < n; i++)
		for (size_t j = 0; j < n; j++)
			for (size_t k = 0; k < n; k++) {
				th_weird32(a, i);
				th_weird32(b, j);
				th_weird32(c, k);
				check_muladd(a, b, c);
			}
	for (int i = 0; i < 20000; i++) {
		if (i % 2) {
			th_randbytes(a, 32);
			th_randbytes(b, 32);
			th_randbytes(c, 32);
		} else {
			th_rand_weird32(a);
			th_rand_weird32(b);
			th_rand_weird32(c);
		}
		check_muladd(a, b, c);
	}
}

static void test_mul_add_neg(void **state)
{
	th_rng_reset("mul-add-neg");
	size_t n = th_weird32_count();
	uint8_t a[32], b[32], got[32], want[32];
	for (int i = 0; i < 20000 + (int)(n * n); i++) {
		if (i < (int)(n * n)) {
			th_weird32(a, (size_t)i / n);
			th_weird32(b, (size_t)i % n);
		} else if (i % 2) {
			th_randbytes(a, 32);
			th_randbytes(b, 32);
		} else {
			th_rand_weird32(a);
			th_rand_weird32(b);
		}
		sc_mul(got, a, b);
		ref_mul(want, a, b);
		th_assert_bytes_eq(got, want, 32);
		sc_add(got, a, b);
		ref_add(want, a, b);
		th_assert_bytes_eq(got, want, 32);
		sc_neg(got, a);
		ref_neg(want, a);
		th_assert_bytes_eq(got, want, 32);
		/* a + (-a) = 0 */
		uint8_t zero[32] = { 0 };
		sc_add(got, a, got);
		th_assert_bytes_eq(got, zero, 32);
	}
}

static void test_is_canonical(void **state)
{
	th_rng_reset("canonical");
	uint8_t s[32];
	for (size_t i = 0; i < th_weird32_count(); i++) {
		th_weird32(s, i);
		if (sc_is_canonical(s) != ref_is_canonical(s))
			fail_msg("sc_is_canonical(%s) = %d", th_weird32_name(i), sc_is_canonical(s));
	}
	/* L - k and L + k for small k, every byte position of L changed by +-1 */
	uint8_t L[32];
	bn_to32(L, bn_L);
	for (int pos = 0; pos < 32; pos++)
		for (int d = -1; d <= 1; d += 2) {
			memcpy(s, L, 32);
			s[pos] = (uint8_t)(s[pos] + d);
			assert_int_equal(sc_is_canonical(s), ref_is_canonical(s));
		}
	memcpy(s, L, 32);
	assert_int_equal(sc_is_canonical(s), 0);
	s[0]--;
	assert_int_equal(sc_is_canonical(s), 1); /* L - 1 */
	for (int i = 0; i < 20000; i++) {
		th_rand_weird32(s);
		if (i % 3 == 0) {
			memcpy(s, L, 32);
			s[th_rand_below(32)] ^= (uint8_t)th_rand64();
		}
		assert_int_equal(sc_is_canonical(s), ref_is_canonical(s));
	}
}

/* sc_half_vartime(c0, c1, k): c0 = k c1 (mod 8L) with the sign it
 * returns, c1 odd and 0 < |c1| < L, on edge values (k = L, -1, ...: the
 * congruence only) and random k, below L as verification's (there also the
 * half size: the longer of c0 and |c1| at most 140 bits, 127.7 on average
 * over 10^6 k; checked: at most 129 on average) and any 256-bit k. */
static void test_half(void **state)
{
	th_rng_reset("half");
	size_t nw = th_weird32_count();
	uint8_t k[32], c0[32], c1[32];
	BIGNUM *L8 = BN_new(), *lhs = BN_new(), *rhs = BN_new();
	assert_non_null(L8);
	assert_non_null(lhs);
	assert_non_null(rhs);
	assert_int_equal(BN_lshift(L8, bn_L, 3), 1);
	int maxbits = 0;
	long sumbits = 0, nsum = 0;
	for (int i = 0; i < 30000 + (int)nw; i++) {
		int sized = 0;
		if (i < (int)nw) {
			th_weird32(k, (size_t)i);
		} else if (i % 3 == 0) {
			th_randbytes(k, 32);
		} else {
			uint8_t h[64];
			th_randbytes(h, 64);
			sc_reduce(k, h);
			sized = i % 3 == 1;
			if (i % 3 == 2) { /* a short k: fewer steps, or none */
				size_t len = 1 + (size_t)th_rand_below(31);
				memset(k + len, 0, 32 - len);
			}
		}
		int neg = sc_half_vartime(c0, c1, k);
		BIGNUM *bk = bn_from(k, 32), *b0 = bn_from(c0, 32), *b1 = bn_from(c1, 32);
		assert_true(BN_is_odd(b1));
		assert_true(BN_cmp(b1, bn_L) < 0);
		if (sized) {
			int bits = BN_num_bits(b0) > BN_num_bits(b1) ? BN_num_bits(b0) : BN_num_bits(b1);
			if (bits > maxbits)
				maxbits = bits;
			sumbits += bits;
			nsum++;
		}
		if (neg)
			BN_set_negative(b1, 1);
		assert_int_equal(BN_mod_mul(lhs, bk, b1, L8, bn_ctx), 1); /* k c1 mod 8L */
		assert_int_equal(BN_nnmod(rhs, b0, L8, bn_ctx), 1);
		if (BN_cmp(lhs, rhs) != 0)
			fail_msg("sc_half_vartime: c0 != k c1 (mod 8L) at input %d", i);
		BN_free(bk);
		BN_free(b0);
		BN_free(b1);
	}
	assert_true(maxbits <= 140);
	assert_true(sumbits <= 129 * nsum);
	BN_free(L8);
	BN_free(lhs);
	BN_free(rhs);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_reduce),
		cmocka_unit_test(test_muladd),
		cmocka_unit_test(test_mul_add_neg),
		cmocka_unit_test(test_is_canonical),
		cmocka_unit_test(test_half),
	};
	return th_run_fixture(tests, setup, teardown);
}
