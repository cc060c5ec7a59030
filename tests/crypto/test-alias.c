/* SPDX-License-Identifier: MIT */
/*
 * test-alias.c - every fe_/sc_/ge_ function with its output aliasing each
 * of its inputs (STYLE.md section 3; edwards25519 fe_alias_test.go and
 * scalar_alias_test.go). Each operation runs with separate buffers, then
 * with out == a, out == b, (out == c), a == b and all-the-same, on random
 * and edge inputs; the outputs must be the same bytes. Operations whose
 * output and input types differ are checked through a union where fe.h
 * allows it (fe and fe_loose share memory), and ge only where ge.h does
 * (same type).
 */
#include "harness.h"

#include <string.h>

#include "ref51/fe.h"
#include "ref51/ge.h"
#include "sc.h"

enum { REPS = 500 };

/* ---- fe ---- */

static void rand_tight(fe *f)
{
	th_rand_limbs(f->v, 52);
}

static void rand_loose(fe_loose *f)
{
	if (th_rand64() & 1) {
		th_rand_limbs(f->v, 52);
	} else {
		for (int i = 0; i < 5; i++)
			f->v[i] = th_rand64() & ((1ULL << 54) - 1);
	}
}

static void op_mul_ttt(void *o, const void *a, const void *b) { fe_mul_ttt(o, a, b); }
static void op_mul_tll(void *o, const void *a, const void *b) { fe_mul_tll(o, a, b); }
static void op_sq_tt(void *o, const void *a) { fe_sq_tt(o, a); }
static void op_sq_tl(void *o, const void *a) { fe_sq_tl(o, a); }
static void op_sq2_tt(void *o, const void *a) { fe_sq2_tt(o, a); }
static void op_mul121666(void *o, const void *a) { fe_mul121666(o, a); }
static void op_invert(void *o, const void *a) { fe_invert_safegcd(o, a); }
static void op_pow22523(void *o, const void *a) { fe_pow22523(o, a); }
static void op_abs(void *o, const void *a) { fe_abs(o, a); }
static void op_copy(void *o, const void *a) { fe_copy(o, a); }
static void op_carry(void *o, const void *a) { fe_carry(o, a); }
static void op_mul_gen(void *o, const void *a, const void *b) { fe_mul_generic(o, a, b); }
static void op_sq_gen(void *o, const void *a) { fe_sq_generic(o, a); }
static void op_sqrt_ratio(void *o, const void *a, const void *b) { fe_sqrt_ratio(o, a, b); }

/* fe and fe_loose are the same memory layout; fe.h lets an output of one
 * type be the same memory as an input of the other */
typedef union {
	fe t;
	fe_loose l;
} fe_any;

static void test_fe(void **state)
{
	th_rng_reset("alias-fe");
	for (int i = 0; i < REPS; i++) {
		fe f, g;
		fe_loose fl, gl;
		rand_tight(&f);
		rand_tight(&g);
		rand_loose(&fl);
		rand_loose(&gl);
		th_check_alias2(op_mul_ttt, sizeof(fe), &f, &g);
		th_check_alias2(op_mul_tll, sizeof(fe), &fl, &gl);
		th_check_alias1(op_sq_tt, sizeof(fe), &f);
		th_check_alias1(op_sq_tl, sizeof(fe), &fl);
		th_check_alias1(op_sq2_tt, sizeof(fe), &f);
		th_check_alias1(op_mul121666, sizeof(fe), &f);
		th_check_alias1(op_abs, sizeof(fe), &f);
		th_check_alias1(op_copy, sizeof(fe), &f);
		th_check_alias1(op_carry, sizeof(fe), &fl);
		th_check_alias2(op_mul_gen, sizeof(fe), fl.v, gl.v);
		th_check_alias1(op_sq_gen, sizeof(fe), fl.v);
		th_check_alias2(op_sqrt_ratio, sizeof(fe), &f, &g);
		if (i % 10 == 0) {
			th_check_alias1(op_invert, sizeof(fe), &f);
			th_check_alias1(op_pow22523, sizeof(fe), &f);
		}

		/* mixed types through the union */
		fe_any m;
		fe h;
		fe_loose s;
		fe_mul_tlt(&h, &fl, &g);
		m.l = fl;
		fe_mul_tlt(&m.t, &m.l, &g); /* out == f */
		th_assert_bytes_eq(&m.t, &h, sizeof(fe));
		m.t = g;
		fe_mul_tlt(&m.t, &fl, &m.t); /* out == g */
		th_assert_bytes_eq(&m.t, &h, sizeof(fe));
		fe_add(&s, &f, &g);
		m.t = f;
		fe_add(&m.l, &m.t, &g);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		m.t = g;
		fe_add(&m.l, &f, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		fe_add(&s, &f, &f);
		m.t = f;
		fe_add(&m.l, &m.t, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		fe_sub(&s, &f, &g);
		m.t = f;
		fe_sub(&m.l, &m.t, &g);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		m.t = g;
		fe_sub(&m.l, &f, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		fe_sub(&s, &f, &f);
		m.t = f;
		fe_sub(&m.l, &m.t, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		fe_neg(&s, &f);
		m.t = f;
		fe_neg(&m.l, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));
		fe_carry(&h, &fl);
		m.l = fl;
		fe_carry(&m.t, &m.l);
		th_assert_bytes_eq(&m.t, &h, sizeof(fe));
		fe_copy_lt(&s, &f);
		m.t = f;
		fe_copy_lt(&m.l, &m.t);
		th_assert_bytes_eq(&m.l, &s, sizeof(fe));

		/* in-place by contract: cmov with itself, cneg, cswap of a copy */
		fe x = f, x0 = f;
		fe_cmov(&x, &x, 1);
		th_assert_bytes_eq(&x, &x0, sizeof(fe));
		fe_cmov(&x, &x, 0);
		th_assert_bytes_eq(&x, &x0, sizeof(fe));
		fe y = f;
		fe_cneg(&y, 1);
		fe_neg(&s, &f);
		fe_carry(&h, &s);
		assert_int_equal(fe_equal(&y, &h), 1);
	}
}

/* ---- sc ---- */

static void op_muladd(void *o, const void *a, const void *b, const void *c) { sc_muladd(o, a, b, c); }
static void op_scmul(void *o, const void *a, const void *b) { sc_mul(o, a, b); }
static void op_scadd(void *o, const void *a, const void *b) { sc_add(o, a, b); }
static void op_scneg(void *o, const void *a) { sc_neg(o, a); }

static void test_sc(void **state)
{
	th_rng_reset("alias-sc");
	for (int i = 0; i < REPS; i++) {
		uint8_t a[32], b[32], c[32];
		th_rand_weird32(a);
		th_rand_weird32(b);
		th_rand_weird32(c);
		th_check_alias3(op_muladd, 32, a, b, c);
		th_check_alias2(op_scmul, 32, a, b);
		th_check_alias2(op_scadd, 32, a, b);
		th_check_alias1(op_scneg, 32, a);
		/* sc_reduce: out is the first half of its own 64-byte input */
		uint8_t in[64], want[32];
		th_rand_weird32(in);
		th_rand_weird32(in + 32);
		sc_reduce(want, in);
		sc_reduce(in, in);
		th_assert_bytes_eq(in, want, 32);
	}
}

/* ---- ge (same-type outputs and inputs) ---- */

static void op_p3_add(void *o, const void *a, const void *b) { ge_p3_add(o, a, b); }
static void op_p3_sub(void *o, const void *a, const void *b) { ge_p3_sub(o, a, b); }
static void op_p3_dbl(void *o, const void *a) { ge_p3_dbl_p3(o, a); }
static void op_p3_neg(void *o, const void *a) { ge_p3_neg(o, a); }
static void op_cofactor(void *o, const void *a) { ge_mul_by_cofactor(o, a); }

static void rand_point(ge_p3 *P)
{
	uint8_t wide[64], a[32];
	th_randbytes(wide, 64);
	sc_reduce(a, wide);
	ge_scalarmult_base(P, a);
}

static void test_ge(void **state)
{
	th_rng_reset("alias-ge");
	for (int i = 0; i < REPS / 5; i++) {
		ge_p3 P, Q;
		rand_point(&P);
		rand_point(&Q);
		th_check_alias2(op_p3_add, sizeof(ge_p3), &P, &Q);
		th_check_alias2(op_p3_sub, sizeof(ge_p3), &P, &Q);
		th_check_alias1(op_p3_dbl, sizeof(ge_p3), &P);
		th_check_alias1(op_p3_neg, sizeof(ge_p3), &P);
		th_check_alias1(op_cofactor, sizeof(ge_p3), &P);
	}
	/* multi-scalar: the result may be one of the input points */
	ge_p3 pts[4], pts2[4], r;
	uint8_t a[4][32], b[32];
	for (int i = 0; i < 4; i++) {
		rand_point(&pts[i]);
		th_randbytes(a[i], 32);
	}
	th_randbytes(b, 32);
	memcpy(pts2, pts, sizeof(pts));
	ge_multi_scalarmult_vartime(&r, (const uint8_t(*)[32])a, pts, 4, b);
	ge_multi_scalarmult_vartime(&pts2[0], (const uint8_t(*)[32])a, pts2, 4, b);
	uint8_t e1[32], e2[32];
	ge_p3_tobytes(e1, &r);
	ge_p3_tobytes(e2, &pts2[0]);
	th_assert_bytes_eq(e2, e1, 32);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fe),
		cmocka_unit_test(test_sc),
		cmocka_unit_test(test_ge),
	};
	return th_run(tests);
}
