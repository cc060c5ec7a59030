/* SPDX-License-Identifier: MIT */
/*
 * test-fe64.c - the fe64 assembly (crypto/asm/amd64/fe64_adx.S) against its
 * C twins (crypto/fe64.c), limb for limb, on random and extreme inputs; the
 * C twins against the independent radix-2^51 field of fe.h; and the two
 * X25519 ladders (fe64 with either implementation, fe.h) against each other.
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

#include "ct.h"
#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "ref51/ref51.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"
#include "fe64/ge64_table.h"

static uint64_t rng_state;

static uint64_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return rng_state = x;
}

/* "Weird limbs": values that stress the carries and the reductions. */
static const uint64_t extreme_limbs[] = {
	0, 1, 2, 19, 37, 38, 39, 0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffed,
	0xffffffffffffffec, 0xfffffffffffffffe, 0xffffffffffffffff, 0x00000000ffffffff,
	0xffffffff00000000,
};
#define N_EXTREME (sizeof extreme_limbs / sizeof extreme_limbs[0])

/* A random element: mostly uniform limbs, sometimes extreme limbs, so that
 * values near 0, p, 2p, 2^255 and 2^256 - 1 come up often. */
static void rnd_fe64(uint64_t f[4])
{
	uint64_t mode = rnd() % 4;
	for (int i = 0; i < 4; i++) {
		if (mode == 0)
			f[i] = rnd();
		else if (mode == 1)
			f[i] = extreme_limbs[rnd() % N_EXTREME];
		else
			f[i] = (rnd() & 1) ? rnd() : extreme_limbs[rnd() % N_EXTREME];
	}
}

/* Special whole values: 0, 1, p - 1, p, p + 1, 2p - 1, 2p, 2^255 - 1,
 * 2^255, 2^256 - 38, 2^256 - 1. */
static const uint64_t special[][4] = {
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
#define N_SPECIAL (sizeof special / sizeof special[0])

static void print_fe64(const char *what, const uint64_t f[4])
{
	print_message("%s = %016llx %016llx %016llx %016llx (limbs 3..0)\n", what,
	              (unsigned long long)f[3], (unsigned long long)f[2], (unsigned long long)f[1],
	              (unsigned long long)f[0]);
}

/* The comparisons with the assembly need a CPU with BMI2 and ADX. Without
 * them (or under Valgrind, which hides ADX) those tests are reported as
 * skipped, with the reason, in the TAP output; the C twins are still
 * tested against fe.h and the ladders against each other. */
static void require_adx(void)
{
	if (!fe64_adx_capable()) {
		print_message("# SKIP: this CPU (or Valgrind) shows no BMI2/ADX; the assembly cannot run\n");
		skip();
	}
}

static void check_mul(const uint64_t f[4], const uint64_t g[4])
{
	uint64_t h1[4], h2[4];
	fe64_mul_generic(h1, f, g);
	fe64_mul_adx(h2, f, g);
	if (memcmp(h1, h2, sizeof h1) != 0) {
		print_fe64("f", f);
		print_fe64("g", g);
		print_fe64("generic", h1);
		print_fe64("adx", h2);
		fail_msg("fe64_mul_adx != fe64_mul_generic");
	}
}

static void check_sq(const uint64_t f[4])
{
	uint64_t h1[4], h2[4], h3[4];
	fe64_sq_generic(h1, f);
	fe64_sq_adx(h2, f);
	fe64_mul_generic(h3, f, f);
	if (memcmp(h1, h2, sizeof h1) != 0 || memcmp(h1, h3, sizeof h1) != 0) {
		print_fe64("f", f);
		print_fe64("sq generic", h1);
		print_fe64("sq adx", h2);
		print_fe64("mul generic f f", h3);
		fail_msg("fe64 squarings disagree");
	}
}

static void test_mul_sq_extreme(void **state)
{
	(void)state;
	require_adx();
	uint64_t f[4], g[4];
	for (size_t i = 0; i < N_SPECIAL; i++) {
		check_sq(special[i]);
		for (size_t j = 0; j < N_SPECIAL; j++)
			check_mul(special[i], special[j]);
	}
	/* every limb from the extreme set, each position */
	for (size_t a = 0; a < N_EXTREME; a++)
		for (size_t b = 0; b < N_EXTREME; b++)
			for (int pos = 0; pos < 4; pos++) {
				for (int i = 0; i < 4; i++) {
					f[i] = extreme_limbs[(a + (size_t)i) % N_EXTREME];
					g[i] = extreme_limbs[b];
				}
				f[pos] = extreme_limbs[b];
				check_mul(f, g);
				check_sq(f);
				check_sq(g);
			}
}

static void test_mul_sq_random(void **state)
{
	(void)state;
	require_adx();
	uint64_t f[4], g[4], h[4];
	for (int n = 0; n < 200000; n++) {
		rnd_fe64(f);
		rnd_fe64(g);
		check_mul(f, g);
		check_sq(f);
	}
	/* fe64_sq_n_adx: n squarings, also in place */
	for (int n = 0; n < 2000; n++) {
		uint64_t k = 1 + (uint64_t)(n % 7) + (n % 100 == 0 ? 93 : 0);
		rnd_fe64(f);
		memcpy(g, f, sizeof g);
		for (uint64_t i = 0; i < k; i++)
			fe64_sq_generic(g, g);
		fe64_sq_n_adx(h, f, k);
		assert_memory_equal(h, g, sizeof h);
		fe64_sq_n_adx(f, f, k);
		assert_memory_equal(f, g, sizeof f);
	}
	/* aliasing: h = f, the output over an input */
	for (int n = 0; n < 1000; n++) {
		rnd_fe64(f);
		rnd_fe64(g);
		fe64_mul_generic(h, f, g);
		fe64_mul_adx(f, f, g);
		assert_memory_equal(h, f, sizeof h);
		fe64_mul_generic(h, f, g);
		fe64_mul_adx(g, f, g);
		assert_memory_equal(h, g, sizeof h);
		fe64_sq_generic(h, f);
		fe64_sq_adx(f, f);
		assert_memory_equal(h, f, sizeof h);
	}
}

/* The C twins against fe.h: reduce both to canonical bytes. */
static void to_fe51(fe *r, const uint64_t f[4])
{
	uint8_t s[32];
	fe64 t;
	memcpy(t.v, f, sizeof t.v);
	fe64_tobytes(s, &t);
	fe_frombytes(r, s);
}

static void assert_same_value(const fe64 *a, const fe *b, const char *what)
{
	uint8_t s1[32], s2[32];
	fe64_tobytes(s1, a);
	fe_tobytes(s2, b);
	if (memcmp(s1, s2, 32) != 0)
		fail_msg("%s: fe64 and fe.h disagree", what);
	/* canonical: below p (bit 255 clear, and the 51-bit code agrees) */
	assert_int_equal(s1[31] >> 7, 0);
}

static void test_generic_vs_fe51(void **state)
{
	(void)state;
	for (int n = 0; n < 50000; n++) {
		fe64 f, g, h;
		fe a, b, c;
		fe_loose l;
		if (n < (int)(N_SPECIAL * N_SPECIAL)) {
			memcpy(f.v, special[n / (int)N_SPECIAL], 32);
			memcpy(g.v, special[n % (int)N_SPECIAL], 32);
		} else {
			rnd_fe64(f.v);
			rnd_fe64(g.v);
		}
		to_fe51(&a, f.v);
		to_fe51(&b, g.v);

		fe64_mul_generic(h.v, f.v, g.v);
		fe_mul_ttt(&c, &a, &b);
		assert_same_value(&h, &c, "mul");
		fe64_sq_generic(h.v, f.v);
		fe_sq_tt(&c, &a);
		assert_same_value(&h, &c, "sq");
		fe64_add(&h, &f, &g);
		fe_add(&l, &a, &b);
		fe_carry(&c, &l);
		assert_same_value(&h, &c, "add");
		fe64_sub(&h, &f, &g);
		fe_sub(&l, &a, &b);
		fe_carry(&c, &l);
		assert_same_value(&h, &c, "sub");
		fe64_mul121666(&h, &f);
		fe_mul121666(&c, &a);
		assert_same_value(&h, &c, "mul121666");
		if (n % 64 == 0) {
			fe64_pow22523(&h, &f, &fe64_ops_generic);
			fe_pow22523(&c, &a);
			assert_same_value(&h, &c, "pow22523 generic");
			if (fe64_ops_asm() != NULL) { /* cpu.c's choice */
				fe64_pow22523(&h, &f, fe64_ops_asm());
				assert_same_value(&h, &c, "pow22523 adx");
			}
		}
	}
}

static void test_ladder_step(void **state)
{
	(void)state;
	require_adx();
	fe64_ladder s1, s2;
	for (int n = 0; n < 20000; n++) {
		fe64 *fields = &s1.x1;
		for (int i = 0; i < 15; i++) {
			if (n < 200)
				memcpy(fields[i].v, special[rnd() % N_SPECIAL], 32);
			else
				rnd_fe64(fields[i].v);
		}
		s2 = s1;
		fe64_ladder_step_generic(&s1);
		fe64_ladder_step_adx(&s2);
		if (memcmp(&s1, &s2, sizeof s1) != 0) {
			for (int i = 0; i < 15; i++)
				if (memcmp(&(&s1.x1)[i], &(&s2.x1)[i], 32) != 0)
					print_message("# field %d differs\n", i);
			fail_msg("fe64_ladder_step_adx != fe64_ladder_step_generic (n = %d)", n);
		}
	}
}

/* Values below FE64_LAZY_BOUND = 2^255 + 2^11, the ladder's bound on x2,
 * z2, x3, z3 (fe64.h): the special values below it, the largest values
 * below it and below 2^255 + 1463 (a product's bound), values just above
 * 2^255, and random values with bit 255 cleared. */
static void rnd_lazy(uint64_t f[4])
{
	static const uint64_t top[][4] = {
		{ 0x7ff, 0, 0, 0x8000000000000000 },
		{ 1462, 0, 0, 0x8000000000000000 },
		{ 38, 0, 0, 0x8000000000000000 },
	};
	uint64_t mode = rnd() % 4;
	if (mode == 0) {
		memcpy(f, top[rnd() % 3], 32);
	} else if (mode == 1) {
		const uint64_t *v = special[rnd() % N_SPECIAL];
		memcpy(f, v[3] >> 63 ? top[0] : v, 32); /* the specials >= 2^255: the bound's edge */
	} else {
		rnd_fe64(f);
		f[3] &= 0x7fffffffffffffff;
	}
}

/* A ladder state for fe64_ladder_bits_*: x1 and the temporaries any value
 * below 2^256, x2, z2, x3, z3 below FE64_LAZY_BOUND. */
static void rnd_ladder_state(fe64_ladder *st, int use_special)
{
	fe64 *fields = &st->x1;
	for (int i = 0; i < 15; i++) {
		if (i >= 1 && i <= 4)
			rnd_lazy(fields[i].v);
		else if (use_special)
			memcpy(fields[i].v, special[rnd() % N_SPECIAL], 32);
		else
			rnd_fe64(fields[i].v);
	}
}

/* Case n of the fe64_ladder_bits_* tests: the state, the word (random or
 * extreme: all ones, 0, alternating bits), the count (1..64 in turn) and
 * the incoming swap. */
static void ladder_bits_case(int n, fe64_ladder *st, uint64_t *w, uint64_t *count, uint64_t *swap)
{
	static const uint64_t words[] = { 0, UINT64_MAX, 0xaaaaaaaaaaaaaaaa, 0x5555555555555555,
	                                  0x8000000000000000, 1 };
	rnd_ladder_state(st, n < 300);
	*w = n % 3 == 0 ? words[rnd() % (sizeof words / sizeof words[0])] : rnd();
	*count = 1 + (uint64_t)n % 64;
	*swap = rnd() & 1;
}

/* The lazy reduction of fe64_ladder_bits_generic against the fully reduced
 * step: fe64_ladder_step_generic after the same swaps, step by step, on
 * states at and near the bound. x2, z2, x3, z3 must be congruent (equal
 * canonical bytes), below FE64_LAZY_BOUND, and the swaps owed equal. C
 * code only: runs on a CPU without ADX (or under Valgrind) too. */
static void test_ladder_bits_lazy(void **state)
{
	(void)state;
	fe64_ladder s1, s2;
	for (int n = 0; n < 3000; n++) {
		uint64_t w, count, swap;
		ladder_bits_case(n, &s1, &w, &count, &swap);
		s2 = s1;
		uint64_t swap2 = swap;
		uint64_t r1 = fe64_ladder_bits_generic(&s1, w, count, swap);
		for (uint64_t i = 0; i < count; i++) {
			uint64_t bit = (w << i) >> 63;
			uint64_t mask = ct_mask_u64(swap2 ^ bit);
			fe64_cswap(&s2.x2, &s2.x3, mask);
			fe64_cswap(&s2.z2, &s2.z3, mask);
			swap2 = bit;
			fe64_ladder_step_generic(&s2);
		}
		assert_int_equal(r1, swap2);
		for (int i = 1; i <= 4; i++) {
			const uint64_t *f = (&s1.x1)[i].v;
			uint8_t b1[32], b2[32];
			fe64_tobytes(b1, &(&s1.x1)[i]);
			fe64_tobytes(b2, &(&s2.x1)[i]);
			/* below 2^255 + 2^11: top limb 2^63 at most, then 2^11 */
			int below = f[3] < 0x8000000000000000 ||
			            (f[3] == 0x8000000000000000 && f[2] == 0 && f[1] == 0 && f[0] < 0x800);
			if (memcmp(b1, b2, 32) != 0 || !below) {
				print_fe64("lazy", f);
				fail_msg("fe64_ladder_bits_generic field %d: %s (n = %d, count %llu)", i,
				         below ? "not congruent to the reduced step" : "above the bound", n,
				         (unsigned long long)count);
			}
		}
	}
}

/* fe64_ladder_bits_adx (the whole loop in assembly) against
 * fe64_ladder_bits_generic: x1, x2, z2, x3, z3 limb for limb and the swap
 * owed, for every count 1..64, random and extreme words (all ones, 0,
 * alternating bits) and both incoming swaps, on random and special states
 * (x2, z2, x3, z3 below FE64_LAZY_BOUND, the functions' contract). */
static void test_ladder_bits(void **state)
{
	(void)state;
	require_adx();
	fe64_ladder s1, s2;
	for (int n = 0; n < 3000; n++) {
		uint64_t w, count, swap;
		ladder_bits_case(n, &s1, &w, &count, &swap);
		s2 = s1;
		uint64_t r1 = fe64_ladder_bits_generic(&s1, w, count, swap);
		uint64_t r2 = fe64_ladder_bits_adx(&s2, w, count, swap);
		/* x1, x2, z2, x3, z3: the first five fields */
		if (r1 != r2 || memcmp(&s1, &s2, 5 * sizeof(fe64)) != 0) {
			for (int i = 0; i < 5; i++)
				if (memcmp(&(&s1.x1)[i], &(&s2.x1)[i], 32) != 0)
					print_message("# field %d differs\n", i);
			fail_msg("fe64_ladder_bits_adx != fe64_ladder_bits_generic (n = %d, count %llu, "
			         "swap %llu: returned %llu, %llu)",
			         n, (unsigned long long)count, (unsigned long long)swap,
			         (unsigned long long)r1, (unsigned long long)r2);
		}
	}
}

static void test_ladders(void **state)
{
	(void)state;
	/* cpu.c takes the assembly exactly when the CPU runs it */
	const fe64_ops *adx = fe64_ops_asm();
	assert_int_equal(adx != NULL, fe64_adx_capable());
	if (adx != NULL)
		assert_ptr_equal(adx->ladder_step, fe64_ladder_step_adx);
	for (int n = 0; n < 2000; n++) {
		uint8_t k[32], u[32], o1[32], o2[32], o3[32];
		for (int i = 0; i < 32; i += 8) {
			uint64_t a = rnd(), b = rnd();
			for (int j = 0; j < 8; j++) {
				k[i + j] = (uint8_t)(a >> (8 * j));
				u[i + j] = (uint8_t)(b >> (8 * j));
			}
		}
		if (n % 8 == 1) /* u >= p, high bit set */
			memcpy(u, special[n % N_SPECIAL], 32);
		x25519_ladder51(o1, k, u);
		x25519_ladder64(o2, k, u, &fe64_ops_generic);
		assert_memory_equal(o1, o2, 32);
		if (adx != NULL) {
			x25519_ladder64(o3, k, u, adx);
			assert_memory_equal(o1, o3, 32);
		}
	}
}

/* Each ge64 point routine, assembly against C twin, on random and extreme
 * coordinates (the formulas are valid for any field elements: the limbs
 * must agree whether or not the coordinates form a point). */
static void test_ge64_routines(void **state)
{
	(void)state;
	require_adx();
	for (int n = 0; n < 20000; n++) {
		uint64_t in[3][16];
		for (int k = 0; k < 3; k++)
			for (int i = 0; i < 16; i += 4) {
				if (n < 500)
					memcpy(&in[k][i], special[rnd() % N_SPECIAL], 32);
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
		ge64_p1p1_to_p2_adx(&t2, &p1p1);
		assert_memory_equal(&t1, &t2, sizeof t1);
		ge64_p1p1_to_p3_generic(&s1, &p1p1);
		ge64_p1p1_to_p3_adx(&s2, &p1p1);
		assert_memory_equal(&s1, &s2, sizeof s1);
		ge64_p2_dbl_generic(&r1, &p2);
		ge64_p2_dbl_adx(&r2, &p2);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_madd_generic(&r1, &p3, &pre);
		ge64_madd_adx(&r2, &p3, &pre);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_msub_generic(&r1, &p3, &pre);
		ge64_msub_adx(&r2, &p3, &pre);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_add_generic(&r1, &p3, &cac);
		ge64_add_adx(&r2, &p3, &cac);
		assert_memory_equal(&r1, &r2, sizeof r1);
		ge64_sub_generic(&r1, &p3, &cac);
		ge64_sub_adx(&r2, &p3, &cac);
		assert_memory_equal(&r1, &r2, sizeof r1);
	}
}

/* ge64_madd_scan_adx (the comb's step with the next scan woven in) against
 * its C twin: h and tnext limb for limb, on random and special points, t
 * and rows (a row of any 256-bit values: the scan and the negation of xy2d
 * take any), for every digit b in [-32, 32] in turn. */
static void test_ge64_madd_scan(void **state)
{
	(void)state;
	require_adx();
	if (ge64_scan_asm_probe() == NULL)
		skip(); /* no AVX2 */
	static ge64_precomp row[GE64_COMB_N];
	for (int n = 0; n < 4000; n++) {
		ge64_p3 h1, h2;
		ge64_precomp t, t1, t2;
		uint64_t *w[2] = { h1.X.v, t.yplusx.v };
		size_t len[2] = { sizeof h1 / 8, sizeof t / 8 };
		for (int k = 0; k < 2; k++)
			for (size_t i = 0; i < len[k]; i += 4) {
				if (n < 200)
					memcpy(&w[k][i], special[rnd() % N_SPECIAL], 32);
				else
					rnd_fe64(&w[k][i]);
			}
		if (n % 8 == 0)
			for (int j = 0; j < GE64_COMB_N; j++) {
				rnd_fe64(row[j].yplusx.v);
				rnd_fe64(row[j].yminusx.v);
				if (j % 5 == 0)
					memcpy(row[j].xy2d.v, special[rnd() % N_SPECIAL], 32);
				else
					rnd_fe64(row[j].xy2d.v);
			}
		int64_t b = n % (2 * GE64_COMB_N + 1) - GE64_COMB_N;
		h2 = h1;
		memset(&t1, 0x55, sizeof t1);
		memset(&t2, 0xaa, sizeof t2);
		ge64_madd_scan_generic(&h1, row, &t, b, &t1);
		ge64_madd_scan_adx(&h2, row, &t, b, &t2);
		assert_memory_equal(&h1, &h2, sizeof h1);
		assert_memory_equal(&t1, &t2, sizeof t1);
		ge64_precomp want;
		ge64_scan_generic(&want, row, GE64_COMB_N, b);
		assert_memory_equal(&t1, &want, sizeof want);
	}
}

/* u = (Z + Y) / (Z - Y) of P in radix 2^51 (0 for the identity). */
static void ref_mont_u(uint8_t u[32], const ge_p3 *P)
{
	fe n, d;
	fe_loose l;
	fe_add(&l, &P->Z, &P->Y);
	fe_carry(&n, &l);
	fe_sub(&l, &P->Z, &P->Y);
	fe_carry(&d, &l);
	fe_invert_safegcd(&d, &d);
	fe_mul_ttt(&n, &n, &d);
	fe_tobytes(u, &n);
}

/* fe64_invert (the binary GCD on radix-2^64 words) against
 * fe_invert_safegcd in radix 2^51, on the special values (0, p, 2p and
 * 2^256 - 1 among them: inputs above p are reduced first) and random ones;
 * and f (1/f) = 1 for f != 0 mod p. */
static void test_fe64_invert(void **state)
{
	(void)state;
	for (int n = 0; n < 20000; n++) {
		fe64 f, h, c, one;
		uint8_t s[32], e1[32], e2[32];
		if (n < (int)N_SPECIAL)
			memcpy(f.v, special[n], sizeof f.v);
		else
			rnd_fe64(f.v);
		fe64_tobytes(s, &f);
		fe r;
		fe_frombytes(&r, s);
		fe_invert_safegcd(&r, &r);
		fe_tobytes(e1, &r);
		h = f;
		fe64_invert(&h, &h); /* aliased */
		fe64_tobytes(e2, &h);
		assert_memory_equal(e1, e2, 32);
		fe64_mul_generic(c.v, h.v, f.v);
		fe64_canonical(&c, &c);
		fe64_canonical(&one, &f);
		uint64_t z = one.v[0] | one.v[1] | one.v[2] | one.v[3];
		assert_true(c.v[0] == (z != 0) && c.v[1] == 0 && c.v[2] == 0 && c.v[3] == 0);
	}
}

/* ge64_scalarmult_base (C twins and assembly) against double-and-add in
 * radix 2^51 (ge_p3_add of ge.c) from B, on random and extreme scalars;
 * ge64_base_encode and ge64_base_mont_u against ge_p3_tobytes and the
 * radix-2^51 u of the same point. */
static void test_ge64_scalarmult_base(void **state)
{
	(void)state;
	const ge64_ops *adx = ge64_ops_asm();
	uint8_t one[32] = { 1 };
	ge_p3 B;
	ge64_scalarmult_base_scan(&B, one, &ge64_ops_generic, cpu_fe64()->scan);
	for (int n = 0; n < 200; n++) {
		uint8_t k[32], e1[32], e2[32], e3[32];
		for (int i = 0; i < 32; i++)
			k[i] = (uint8_t)rnd();
		k[31] &= 127;
		if (n == 0)
			memset(k, 0, 32);
		if (n == 1)
			memset(k, 0x88, 32), k[31] = 0x7f; /* digits at the recoding edges */
		if (n == 2)
			memset(k, 0xff, 31), k[31] = 0x7f;
		ge_p3 acc, r2, r3;
		ge_p1p1 t;
		ge_p3_0(&acc);
		for (int bit = 254; bit >= 0; bit--) {
			ge_p3_dbl(&t, &acc);
			ge_p1p1_to_p3(&acc, &t);
			if ((k[bit / 8] >> (bit % 8)) & 1)
				ge_p3_add(&acc, &acc, &B);
		}
		ge_p3_tobytes(e1, &acc);
		ge64_scalarmult_base_scan(&r2, k, &ge64_ops_generic, cpu_fe64()->scan);
		ge_p3_tobytes(e2, &r2);
		assert_memory_equal(e1, e2, 32);
		/* the encoding and the Montgomery u in radix 2^64 to the end */
		uint8_t u1[32], u2[32];
		ref_mont_u(u1, &acc);
		ge64_base_encode(e2, k, &ge64_ops_generic, cpu_fe64()->scan);
		assert_memory_equal(e1, e2, 32);
		ge64_base_mont_u(u2, k, &ge64_ops_generic, cpu_fe64()->scan);
		assert_memory_equal(u1, u2, 32);
		if (adx != NULL) {
			ge64_scalarmult_base_scan(&r3, k, adx, cpu_fe64()->scan);
			ge_p3_tobytes(e3, &r3);
			assert_memory_equal(e1, e3, 32);
			ge64_base_encode(e3, k, adx, ge64_scan_generic);
			assert_memory_equal(e1, e3, 32);
			ge64_base_mont_u(u2, k, adx, cpu_fe64()->scan);
			assert_memory_equal(u1, u2, 32);
		}
	}
	/* B itself: the RFC 8032 encoding of the base point (y = 4/5) */
	static const uint8_t benc[32] = { 0x58, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		                          0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		                          0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66,
		                          0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66, 0x66 };
	uint8_t eb[32];
	ge_p3_tobytes(eb, &B);
	assert_memory_equal(eb, benc, 32);
}

/* [k]P by double-and-add in radix 2^51 (the reference of the tests below) */
static void ref_mul(ge_p3 *r, const uint8_t k[32], const ge_p3 *P)
{
	ge_p1p1 t;
	ge_p3_0(r);
	for (int bit = 255; bit >= 0; bit--) {
		ge_p3_dbl(&t, r);
		ge_p1p1_to_p3(r, &t);
		if ((k[bit / 8] >> (bit % 8)) & 1)
			ge_p3_add(r, r, P);
	}
}

/* ge_p3 <-> ge64_p3 through the canonical bytes of each coordinate */
static void p3_to64(ge64_p3 *r, const ge_p3 *p)
{
	const fe *in[4] = { &p->X, &p->Y, &p->Z, &p->T };
	fe64 *out[4] = { &r->X, &r->Y, &r->Z, &r->T };
	uint8_t s[32];
	for (int i = 0; i < 4; i++) {
		fe_tobytes(s, in[i]);
		fe64_frombytes(out[i], s);
	}
}

static void p3_from64(ge_p3 *r, const ge64_p3 *p)
{
	const fe64 *in[4] = { &p->X, &p->Y, &p->Z, &p->T };
	fe *out[4] = { &r->X, &r->Y, &r->Z, &r->T };
	uint8_t s[32];
	for (int i = 0; i < 4; i++) {
		fe64_tobytes(s, in[i]);
		fe_frombytes(out[i], s);
	}
}

/* ge64_triple_scalarmult_vartime (C twins and assembly) against
 * double-and-add in radix 2^51: a0 P0 + a1 P1 + b B on points made by the
 * comb (one with a point of order 8 added, as ZIP215 lets through), with
 * random 256-bit scalars, half-size ones (verification's), zero and all
 * ones; the encodings must agree. */
static void test_ge64_triple_scalarmult(void **state)
{
	(void)state;
	const ge64_ops *adx = ge64_ops_asm();
	assert_int_equal(adx != NULL, fe64_adx_capable());
	/* a point of order 8 (its y: vectors/ and ge.c's blocklist) */
	static const uint8_t t8[32] = {
		0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05,
	};
	uint8_t one[32] = { 1 };
	ge_p3 B, T8;
	ge64_scalarmult_base_scan(&B, one, &ge64_ops_generic, cpu_fe64()->scan);
	assert_int_equal(ge_frombytes(&T8, t8), 0);
	for (int n = 0; n < 200; n++) {
		uint8_t k[2][32], a[2][32], b[32], e1[32], e2[32];
		ge_p3 P[2], ref, part, r;
		ge64_p3 P64[2], r64;
		for (int j = 0; j < 2; j++)
			for (int i = 0; i < 32; i++) {
				k[j][i] = (uint8_t)rnd();
				a[j][i] = (uint8_t)rnd();
			}
		for (int i = 0; i < 32; i++)
			b[i] = (uint8_t)rnd();
		if (n % 4 == 1) /* half-size, as verification's */
			for (int j = 0; j < 2; j++)
				memset(a[j] + 16 + n % 3, 0, 16 - (size_t)(n % 3));
		if (n % 10 == 2)
			memset(a[0], 0xff, 32);
		if (n % 10 == 3)
			memset(a[1], 0, 32);
		if (n % 10 == 4)
			memset(b, 0, 32);
		if (n % 10 == 5)
			memset(b + 16, 0, 16);
		if (n % 10 == 6)
			memset(b, 0, 16);
		ref_mul(&ref, b, &B);
		for (int j = 0; j < 2; j++) {
			k[j][31] &= 127;
			ge64_scalarmult_base_scan(&P[j], k[j], &ge64_ops_generic, cpu_fe64()->scan);
			if (j == 1 && n % 2 == 0)
				ge_p3_add(&P[j], &P[j], &T8);
			ref_mul(&part, a[j], &P[j]);
			ge_p3_add(&ref, &ref, &part);
			p3_to64(&P64[j], &P[j]);
		}
		ge_p3_tobytes(e1, &ref);
		ge64_triple_scalarmult_vartime(&r64, a[0], &P64[0], a[1], &P64[1], b, &ge64_ops_generic);
		p3_from64(&r, &r64);
		ge_p3_tobytes(e2, &r);
		assert_memory_equal(e1, e2, 32);
		if (adx != NULL) {
			ge64_triple_scalarmult_vartime(&r64, a[0], &P64[0], a[1], &P64[1], b, adx);
			p3_from64(&r, &r64);
			ge_p3_tobytes(e2, &r);
			assert_memory_equal(e1, e2, 32);
		}
	}
}

/* ge_multi_scalarmult_vartime (ref51's, the sum of its batch equation)
 * against double-and-add, on points made by the C twins' comb. */
static void test_ge_multi_scalarmult(void **state)
{
	(void)state;
	static uint8_t a[GE_MSM_MAX][32];
	static ge_p3 P[GE_MSM_MAX];
	uint8_t one[32] = { 1 }, b[32];
	ge_p3 B;
	ge64_scalarmult_base_scan(&B, one, &ge64_ops_generic, cpu_fe64()->scan);
	for (int round = 0; round < 6; round++) {
		int n = round == 0 ? 0 : round == 1 ? 1 : round == 2 ? GE_MSM_MAX : (int)(rnd() % GE_MSM_MAX);
		ge_p3 ref, part, r2;
		uint8_t e1[32], e2[32];
		for (int i = 0; i < 32; i++)
			b[i] = (uint8_t)rnd();
		ref_mul(&ref, b, &B);
		for (int j = 0; j < n; j++) {
			uint8_t k[32];
			for (int i = 0; i < 32; i++) {
				k[i] = (uint8_t)rnd();
				a[j][i] = (uint8_t)rnd();
			}
			k[31] &= 127;
			ge64_scalarmult_base_scan(&P[j], k, &ge64_ops_generic, cpu_fe64()->scan);
			ref_mul(&part, a[j], &P[j]);
			ge_p3_add(&ref, &ref, &part);
		}
		ge_p3_tobytes(e1, &ref);
		ge_multi_scalarmult_vartime(&r2, (const uint8_t(*)[32])a, P, n, b);
		ge_p3_tobytes(e2, &r2);
		assert_memory_equal(e1, e2, 32);
	}
}

/* fe64_pow22523 (C twins and assembly): the same limbs, and h^8 f^4 = 1
 * (h = f^((p-5)/8), so h^8 = f^(p-5) = f^-4) for f != 0 mod p; checked
 * with the radix-2^51 field. fe64_pow22523_2 (both tables): the same limbs
 * for each of its two inputs, here f and the previous f. */
static void test_fe64_pow22523(void **state)
{
	(void)state;
	const fe64_ops *adx = fe64_ops_asm();
	fe64 prev = { { 2, 0, 0, 0 } }, hprev;
	fe64_pow22523(&hprev, &prev, &fe64_ops_generic);
	for (int n = 0; n < 300; n++) {
		fe64 f, h1, h2, two[2], htwo[2];
		if (n < (int)N_SPECIAL)
			memcpy(f.v, special[n], 32);
		else
			rnd_fe64(f.v);
		fe64_pow22523(&h1, &f, &fe64_ops_generic);
		two[0] = f;
		two[1] = prev;
		fe64_pow22523_2(htwo, two, &fe64_ops_generic);
		assert_memory_equal(&htwo[0], &h1, sizeof h1);
		assert_memory_equal(&htwo[1], &hprev, sizeof h1);
		if (adx != NULL) {
			fe64_pow22523(&h2, &f, adx);
			assert_memory_equal(&h1, &h2, sizeof h1);
			fe64_pow22523_2(htwo, two, adx);
			assert_memory_equal(&htwo[0], &h1, sizeof h1);
			assert_memory_equal(&htwo[1], &hprev, sizeof h1);
		}
		prev = f;
		hprev = h1;
		fe a, b, c;
		uint8_t s[32], one[32] = { 1 }, zero[32] = { 0 };
		to_fe51(&a, h1.v);
		to_fe51(&b, f.v);
		fe_sq_tt(&c, &a);
		fe_sq_tt(&c, &c);
		fe_sq_tt(&c, &c);  /* h^8 */
		fe_sq_tt(&a, &b);
		fe_sq_tt(&a, &a);  /* f^4 */
		fe_mul_ttt(&c, &c, &a);
		fe_tobytes(s, &c);
		uint8_t sf[32];
		fe_tobytes(sf, &b);
		if (memcmp(sf, zero, 32) != 0)
			assert_memory_equal(s, one, 32);
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
		cmocka_unit_test(test_mul_sq_extreme),
		cmocka_unit_test(test_mul_sq_random),
		cmocka_unit_test(test_generic_vs_fe51),
		cmocka_unit_test(test_ladder_step),
		cmocka_unit_test(test_ladder_bits_lazy),
		cmocka_unit_test(test_ladder_bits),
		cmocka_unit_test(test_ladders),
		cmocka_unit_test(test_ge64_routines),
		cmocka_unit_test(test_ge64_madd_scan),
		cmocka_unit_test(test_ge64_triple_scalarmult),
		cmocka_unit_test(test_ge64_scalarmult_base),
		cmocka_unit_test(test_fe64_invert),
		cmocka_unit_test(test_ge_multi_scalarmult),
		cmocka_unit_test(test_fe64_pow22523),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
