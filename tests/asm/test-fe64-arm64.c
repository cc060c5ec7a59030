/* SPDX-License-Identifier: MIT */
/*
 * test-fe64-arm64.c - the AArch64 assembly (crypto/asm/arm64/fe64_arm64.S)
 * against its C twins (crypto/fe64.c, crypto/ge64.c), limb for limb, on
 * random and extreme inputs; the X25519 ladder and the inversion through
 * the arm64 table against the radix-2^51 code; and that the library really
 * runs the arm64 assembly (sigil_crypto_impl() is "arm64", cpu.c's tables
 * are the arm64 ones), so that the rest of the crypto suite exercises it.
 * Built only in builds with the arm64 assembly (natively or cross, run under
 * qemu-user by scripts/ci-arm64.sh).
 *
 * Random inputs come from a xorshift generator seeded by SIGIL_TEST_SEED
 * (default 1), printed so that a failure can be replayed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <sigil/crypto.h>

#include "asm/arm64/fe64_arm64.h"
#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "ref51/ref51.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* Limbs that stress the carries and the reductions. */
static const uint64_t edge_limbs[] = {
	0, 1, 2, 19, 37, 38, 39, 121665, 121666, 0x7fffffffffffffff, 0x8000000000000000,
	0xffffffffffffffed, 0xffffffffffffffec, 0xfffffffffffffffe, 0xffffffffffffffff,
	0x00000000ffffffff, 0xffffffff00000000,
};
#define N_EDGE (sizeof edge_limbs / sizeof edge_limbs[0])

/* Whole values: 0, 1, p - 1, p, p + 1, 2p - 1, 2p, 2^255 - 1, 2^255,
 * 2^256 - 38, 2^256 - 1. */
static const uint64_t edge_values[][4] = {
	{ 0, 0, 0, 0 },
	{ 1, 0, 0, 0 },
	{ 0xffffffffffffffec, 0xffffffffffffffff, 0xffffffffffffffff, 0x7fffffffffffffff },
	{ 0xffffffffffffffed, 0xffffffffffffffff, 0xffffffffffffffff, 0x7fffffffffffffff },
	{ 0xffffffffffffffee, 0xffffffffffffffff, 0xffffffffffffffff, 0x7fffffffffffffff },
	{ 0xffffffffffffffd9, 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff },
	{ 0xffffffffffffffda, 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff },
	{ 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff, 0x7fffffffffffffff },
	{ 0, 0, 0, 0x8000000000000000 },
	{ 0xffffffffffffffda, 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff },
	{ 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff, 0xffffffffffffffff },
};
#define N_VALUES (sizeof edge_values / sizeof edge_values[0])

/* Uniform limbs, edge limbs, or a mix of both. */
static void rnd_fe64(uint64_t f[4])
{
	uint64_t mode = rnd() % 4;
	for (int i = 0; i < 4; i++) {
		if (mode == 0)
			f[i] = rnd();
		else if (mode == 1)
			f[i] = edge_limbs[rnd() % N_EDGE];
		else
			f[i] = (rnd() & 1) ? rnd() : edge_limbs[rnd() % N_EDGE];
	}
}

static void show(const char *what, const uint64_t f[4])
{
	print_message("# %s = %016llx %016llx %016llx %016llx (limbs 3..0)\n", what,
	              (unsigned long long)f[3], (unsigned long long)f[2], (unsigned long long)f[1],
	              (unsigned long long)f[0]);
}

static void check_mul(const uint64_t f[4], const uint64_t g[4])
{
	uint64_t want[4], got[4];
	fe64_mul_generic(want, f, g);
	fe64_mul_arm64(got, f, g);
	if (memcmp(want, got, sizeof want) != 0) {
		show("f", f);
		show("g", g);
		show("generic", want);
		show("arm64", got);
		fail_msg("fe64_mul_arm64 != fe64_mul_generic");
	}
}

static void check_sq(const uint64_t f[4])
{
	uint64_t want[4], got[4], n1[4];
	fe64_sq_generic(want, f);
	fe64_sq_arm64(got, f);
	fe64_sq_n_arm64(n1, f, 1);
	if (memcmp(want, got, sizeof want) != 0 || memcmp(want, n1, sizeof want) != 0) {
		show("f", f);
		show("generic", want);
		show("arm64", got);
		show("sq_n(1)", n1);
		fail_msg("fe64_sq_arm64 or fe64_sq_n_arm64(1) != fe64_sq_generic");
	}
}

/* The library runs the arm64 assembly: otherwise the crypto suite of this
 * build would test the C code only. */
static void test_impl_is_arm64(void **state)
{
	(void)state;
	assert_string_equal(sigil_crypto_impl(), "arm64");
	assert_ptr_equal(fe64_ops_asm(), &fe64_ops_arm64);
	assert_ptr_equal(ge64_ops_asm(), &ge64_ops_arm64);
	assert_ptr_equal(fe64_ops_asm()->sq_n, fe64_sq_n_arm64);
	assert_ptr_equal(fe64_ops_arm64.ladder_step, fe64_ladder_step_arm64);
	assert_ptr_equal(ge64_ops_arm64.fe, &fe64_ops_arm64);
	assert_int_equal(fe64_adx_capable(), 0);
}

static void test_mul_sq_edges(void **state)
{
	(void)state;
	uint64_t f[4], g[4];
	for (size_t i = 0; i < N_VALUES; i++) {
		check_sq(edge_values[i]);
		for (size_t j = 0; j < N_VALUES; j++)
			check_mul(edge_values[i], edge_values[j]);
	}
	for (size_t a = 0; a < N_EDGE; a++)
		for (size_t b = 0; b < N_EDGE; b++)
			for (int pos = 0; pos < 4; pos++) {
				for (int i = 0; i < 4; i++) {
					f[i] = edge_limbs[(a + (size_t)i) % N_EDGE];
					g[i] = edge_limbs[b];
				}
				f[pos] = edge_limbs[b];
				check_mul(f, g);
				check_mul(g, f);
				check_sq(f);
				check_sq(g);
			}
}

static void test_mul_sq_random(void **state)
{
	(void)state;
	uint64_t f[4], g[4], h[4], want[4];
	for (int n = 0; n < 100000; n++) {
		rnd_fe64(f);
		rnd_fe64(g);
		check_mul(f, g);
		check_sq(f);
	}
	/* h = f^(2^k), also in place; k up to 100 */
	for (int n = 0; n < 1000; n++) {
		uint64_t k = 1 + (uint64_t)(n % 9) + (n % 100 == 0 ? 91 : 0);
		rnd_fe64(f);
		memcpy(want, f, sizeof want);
		for (uint64_t i = 0; i < k; i++)
			fe64_sq_generic(want, want);
		fe64_sq_n_arm64(h, f, k);
		assert_memory_equal(h, want, sizeof h);
		fe64_sq_n_arm64(f, f, k);
		assert_memory_equal(f, want, sizeof f);
	}
	/* the output over an input */
	for (int n = 0; n < 1000; n++) {
		rnd_fe64(f);
		rnd_fe64(g);
		fe64_mul_generic(want, f, g);
		fe64_mul_arm64(f, f, g);
		assert_memory_equal(want, f, sizeof want);
		fe64_mul_generic(want, f, g);
		fe64_mul_arm64(g, f, g);
		assert_memory_equal(want, g, sizeof want);
		fe64_mul_generic(want, g, g);
		fe64_mul_arm64(g, g, g);
		assert_memory_equal(want, g, sizeof want);
		fe64_sq_generic(want, f);
		fe64_sq_arm64(f, f);
		assert_memory_equal(want, f, sizeof want);
	}
}

static void test_ladder_step(void **state)
{
	(void)state;
	fe64_ladder s1, s2;
	for (int n = 0; n < 10000; n++) {
		fe64 *fields = &s1.x1;
		for (int i = 0; i < 15; i++) {
			if (n < 300)
				memcpy(fields[i].v, edge_values[rnd() % N_VALUES], 32);
			else
				rnd_fe64(fields[i].v);
		}
		s2 = s1;
		fe64_ladder_step_generic(&s1);
		fe64_ladder_step_arm64(&s2);
		if (memcmp(&s1, &s2, sizeof s1) != 0) {
			for (int i = 0; i < 15; i++)
				if (memcmp(&(&s1.x1)[i], &(&s2.x1)[i], 32) != 0)
					print_message("# field %d differs\n", i);
			fail_msg("fe64_ladder_step_arm64 != fe64_ladder_step_generic (n = %d)", n);
		}
	}
}

/* Canonical bytes of both representations must agree. */
static void same_value(const fe64 *a, const fe *b, const char *what)
{
	uint8_t s1[32], s2[32];
	fe64_tobytes(s1, a);
	fe_tobytes(s2, b);
	if (memcmp(s1, s2, 32) != 0)
		fail_msg("%s: fe64 (arm64) and fe.h disagree", what);
}

/* The X25519 ladder and the (p - 5) / 8 power through the arm64 table
 * against the radix-2^51 code, the power chain against the C twins'. */
static void test_ladder_and_invert(void **state)
{
	(void)state;
	for (int n = 0; n < 500; n++) {
		uint8_t k[32], u[32], o1[32], o2[32];
		for (int i = 0; i < 32; i++) {
			k[i] = (uint8_t)rnd();
			u[i] = (uint8_t)rnd();
		}
		if (n % 8 == 1) /* u >= p, top bit set */
			memcpy(u, edge_values[n % N_VALUES], 32);
		x25519_ladder51(o1, k, u);
		x25519_ladder64(o2, k, u, &fe64_ops_arm64);
		assert_memory_equal(o1, o2, 32);
	}
	for (int n = 0; n < 300; n++) {
		fe64 f, h;
		fe a, c;
		uint8_t s[32];
		if (n < (int)N_VALUES)
			memcpy(f.v, edge_values[n], 32);
		else
			rnd_fe64(f.v);
		fe64_tobytes(s, &f);
		fe_frombytes(&a, s);
		fe_pow22523(&c, &a);
		fe64_pow22523(&h, &f, &fe64_ops_arm64);
		same_value(&h, &c, "pow22523");
		/* and the same limbs as the chain on the C twins */
		fe64 g;
		fe64_pow22523(&h, &f, &fe64_ops_arm64);
		fe64_pow22523(&g, &f, &fe64_ops_generic);
		uint8_t s2[32];
		fe64_tobytes(s, &h);
		fe64_tobytes(s2, &g);
		assert_memory_equal(s, s2, 32);
	}
}

/* Each ge64 point routine against its C twin on random and edge
 * coordinates (the formulas hold for any field elements, points or not). */
static void test_ge64_routines(void **state)
{
	(void)state;
	for (int n = 0; n < 10000; n++) {
		uint64_t in[3][16];
		for (int k = 0; k < 3; k++)
			for (int i = 0; i < 16; i += 4) {
				if (n < 500)
					memcpy(&in[k][i], edge_values[rnd() % N_VALUES], 32);
				else
					rnd_fe64(&in[k][i]);
			}
		ge64_p1p1 p1p1, r1, r2;
		ge64_p3 p3, s1, s2;
		ge64_p2 p2, t1, t2;
		ge64_precomp pre;
		ge64_cached cac;
		memcpy(&p1p1, in[0], sizeof p1p1);
		memcpy(&p3, in[1], sizeof p3);
		memcpy(&p2, in[1], sizeof p2);
		memcpy(&pre, in[2], sizeof pre);
		memcpy(&cac, in[2], sizeof cac);

		ge64_p1p1_to_p2_generic(&t1, &p1p1);
		ge64_p1p1_to_p2_arm64(&t2, &p1p1);
		assert_memory_equal(&t1, &t2, sizeof t1);
		ge64_p1p1_to_p3_generic(&s1, &p1p1);
		ge64_p1p1_to_p3_arm64(&s2, &p1p1);
		assert_memory_equal(&s1, &s2, sizeof s1);
		ge64_p2_dbl_generic(&r1, &p2);
		ge64_p2_dbl_arm64(&r2, &p2);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_madd_generic(&r1, &p3, &pre);
		ge64_madd_arm64(&r2, &p3, &pre);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_msub_generic(&r1, &p3, &pre);
		ge64_msub_arm64(&r2, &p3, &pre);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_add_generic(&r1, &p3, &cac);
		ge64_add_arm64(&r2, &p3, &cac);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_sub_generic(&r1, &p3, &cac);
		ge64_sub_arm64(&r2, &p3, &cac);
		assert_memory_equal(&r1, &r2, sizeof r1);
	}
}

/* Verification's scalar multiplication (ge64_triple_scalarmult_vartime)
 * through the arm64 table against the C twins' table: the same limbs. */
static void test_ge64_triple_scalarmult(void **state)
{
	(void)state;
	for (int n = 0; n < 100; n++) {
		uint8_t k[2][32], a[2][32], b[32], e1[32];
		ge64_p3 P[2], r1, r2;
		for (int j = 0; j < 2; j++) {
			for (int i = 0; i < 32; i++) {
				k[j][i] = (uint8_t)rnd();
				a[j][i] = (uint8_t)rnd();
			}
			k[j][31] &= 127;
			ge_p3 Q;
			ge_scalarmult_base(&Q, k[j]);
			ge_p3_tobytes(e1, &Q);
			int ok;
			const uint8_t *enc = e1;
			msm_decode_zip215_vartime(&P[j], &ok, &enc, 1, cpu_fe64());
			assert_int_equal(ok, 1);
		}
		for (int i = 0; i < 32; i++)
			b[i] = (uint8_t)rnd();
		if (n % 10 == 0)
			memset(a[0], 0xff, 32);
		if (n % 10 == 1)
			memset(b, 0, 32);
		if (n % 4 == 2)
			memset(a[1] + 16, 0, 16);
		ge64_triple_scalarmult_vartime(&r1, a[0], &P[0], a[1], &P[1], b, &ge64_ops_generic);
		ge64_triple_scalarmult_vartime(&r2, a[0], &P[0], a[1], &P[1], b, &ge64_ops_arm64);
		assert_memory_equal(&r1, &r2, sizeof r1);
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
		cmocka_unit_test(test_impl_is_arm64),
		cmocka_unit_test(test_mul_sq_edges),
		cmocka_unit_test(test_mul_sq_random),
		cmocka_unit_test(test_ladder_step),
		cmocka_unit_test(test_ladder_and_invert),
		cmocka_unit_test(test_ge64_routines),
		cmocka_unit_test(test_ge64_triple_scalarmult),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
