/* SPDX-License-Identifier: MIT */
/*
 * test-fe-inv.c - fe_invert_safegcd (crypto/ref51/fe_inv.c, the binary-GCD
 * inversion the library uses) against the Fermat power f^(p - 2) (built
 * here on fe_pow22523): the same canonical value for random and extreme tight inputs,
 * f * (1/f) = 1 for f != 0 mod p, 0 -> 0, tight output, aliasing.
 * Random inputs from a xorshift seeded by SIGIL_TEST_SEED (default 1).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ref51/fe.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Tight limbs (< 2^52) that stress the reduction: 0, 1, 2^51 - 19 - 1,
 * 2^51 - 19, 2^51 - 1, 2^51, 2^52 - 1. */
static const uint64_t weird[] = { 0, 1, 2, 19, 0x7ffffffffffec, 0x7ffffffffffed,
	                          0x7ffffffffffee, 0x7ffffffffffff, 0x8000000000000,
	                          0xfffffffffffff };
#define N_WEIRD (sizeof weird / sizeof weird[0])

/* The Fermat inversion, the reference: f^(p - 2) = f^(2^255 - 21) =
 * (f^(2^252 - 3))^8 f^3 (0 maps to 0). */
static void fermat_invert(fe *h, const fe *f)
{
	fe t, f3;
	fe_pow22523(&t, f);
	fe_sq_tt(&t, &t);
	fe_sq_tt(&t, &t);
	fe_sq_tt(&t, &t);
	fe_sq_tt(&f3, f);
	fe_mul_ttt(&f3, &f3, f);
	fe_mul_ttt(h, &t, &f3);
}

static void check_one(const fe *f)
{
	fe a, b, one, prod;
	uint8_t sa[32], sb[32], s1[32], sf[32];

	fermat_invert(&a, f);
	fe_invert_safegcd(&b, f);
	assert_true(fe_bounds_ok_tight(&b));
	fe_tobytes(sa, &a);
	fe_tobytes(sb, &b);
	if (memcmp(sa, sb, 32) != 0) {
		print_message("# f = %013llx %013llx %013llx %013llx %013llx\n",
		              (unsigned long long)f->v[4], (unsigned long long)f->v[3],
		              (unsigned long long)f->v[2], (unsigned long long)f->v[1],
		              (unsigned long long)f->v[0]);
		fail_msg("fe_invert_safegcd != the Fermat inversion");
	}
	/* f (1/f) = 1 unless f = 0 mod p (then 1/f = 0) */
	fe_tobytes(sf, f);
	fe_mul_ttt(&prod, f, &b);
	fe_tobytes(s1, &prod);
	fe_1(&one);
	uint8_t sone[32], zero[32] = { 0 };
	fe_tobytes(sone, &one);
	if (memcmp(sf, zero, 32) == 0)
		assert_memory_equal(sb, zero, 32);
	else
		assert_memory_equal(s1, sone, 32);
	/* aliasing */
	fe c = *f;
	fe_invert_safegcd(&c, &c);
	assert_memory_equal(&c, &b, sizeof c);
}

static void test_extreme(void **state)
{
	(void)state;
	fe f;
	/* every combination of a weird limb in one place and another elsewhere */
	for (size_t a = 0; a < N_WEIRD; a++)
		for (size_t b = 0; b < N_WEIRD; b++)
			for (int pos = 0; pos < 5; pos++) {
				for (int i = 0; i < 5; i++)
					f.v[i] = weird[a];
				f.v[pos] = weird[b];
				check_one(&f);
			}
	/* p, p + 1, p - 1, 2^255 - 1 + (tight limbs above 2^51) */
	const fe special[] = {
		{ { 0x7ffffffffffed, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff } },
		{ { 0x7ffffffffffee, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff } },
		{ { 0x7ffffffffffec, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff, 0x7ffffffffffff } },
		{ { 0xfffffffffffff, 0xfffffffffffff, 0xfffffffffffff, 0xfffffffffffff, 0xfffffffffffff } },
	};
	for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
		check_one(&special[i]);
	/* powers of two and their neighbours (long runs of equal divsteps) */
	for (int k = 0; k < 255; k++) {
		memset(&f, 0, sizeof f);
		f.v[k / 51] = (uint64_t)1 << (k % 51);
		check_one(&f);
		f.v[0] += 1;
		check_one(&f);
	}
}

static void test_random(void **state)
{
	(void)state;
	fe f;
	for (int n = 0; n < 100000; n++) {
		for (int i = 0; i < 5; i++)
			f.v[i] = rnd() >> 12; /* < 2^52 */
		if (n % 3 == 0)
			for (int i = 0; i < 5; i++)
				f.v[i] &= FE_MASK51;
		check_one(&f);
	}
}

int main(void)
{
	const char *seed = getenv("SIGIL_TEST_SEED");
	rng_state = seed != NULL ? strtoull(seed, NULL, 0) : 1;
	if (rng_state == 0)
		rng_state = 1;
	printf("# SIGIL_TEST_SEED=%llu\n", (unsigned long long)rng_state);

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_extreme),
		cmocka_unit_test(test_random),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
