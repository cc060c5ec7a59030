/* SPDX-License-Identifier: MIT */
/*
 * test-fe.c - GF(2^255 - 19) in radix 2^51 (crypto/fe.h), property and
 * oracle tests on random and "weird" limbs (edwards25519 field_test.go
 * style), with OpenSSL's BIGNUM as the reference for every value:
 * mul/sq/add/sub/neg/carry/mul121666 against BN, distributivity,
 * a * a^-1 = 1, invert(0) = 0, pow22523, every sqrt_ratio case, the byte
 * codecs (values >= p, bit 255 set; tobytes canonical), cmov/cswap/cneg
 * with 0 and 1, and the documented limb bounds after every operation.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>

#include "ref51/fe.h"

enum { TRIALS = 20000 };

static BIGNUM *P;
static BN_CTX *bctx;

static int setup(void **state)
{
	bctx = BN_CTX_new();
	P = BN_new();
	if (bctx == NULL || P == NULL)
		return -1;
	/* p = 2^255 - 19 */
	if (!BN_set_bit(P, 255) || !BN_sub_word(P, 19))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	BN_free(P);
	BN_CTX_free(bctx);
	return 0;
}

/* ---- conversions to the oracle ------------------------------------------- */

/* the integer sum l[i] 2^(51 i), reduced mod p, computed without fe code */
static BIGNUM *bn_of_limbs(const uint64_t l[5])
{
	BIGNUM *r = BN_new(), *t = BN_new();
	assert_non_null(r);
	assert_non_null(t);
	BN_zero(r);
	for (int i = 4; i >= 0; i--) {
		assert_int_equal(BN_lshift(r, r, 51), 1);
		assert_int_equal(BN_set_word(t, l[i]), 1);
		assert_int_equal(BN_add(r, r, t), 1);
	}
	assert_int_equal(BN_nnmod(r, r, P, bctx), 1);
	BN_free(t);
	return r;
}

static BIGNUM *bn_of(const fe *f)
{
	return bn_of_limbs(f->v);
}

static BIGNUM *bn_of_loose(const fe_loose *f)
{
	return bn_of_limbs(f->v);
}

/* fail unless a == b (both reduced) */
#define assert_bn_eq(a, b, what) assert_bn_eq_((a), (b), (what), __FILE__, __LINE__)
static void assert_bn_eq_(const BIGNUM *a, const BIGNUM *b, const char *what, const char *file, int line)
{
	if (BN_cmp(a, b) == 0)
		return;
	char *x = BN_bn2hex(a), *y = BN_bn2hex(b);
	print_error("%s: got %s, want %s (seed %llu)\n", what, x, y, (unsigned long long)th_rng_seed());
	OPENSSL_free(x);
	OPENSSL_free(y);
	_fail(file, line);
}

/* every limb < bound */
#define assert_limbs_below(l, bound, what) assert_limbs_below_((l), (bound), (what), __FILE__, __LINE__)
static void assert_limbs_below_(const uint64_t l[5], uint64_t bound, const char *what, const char *file, int line)
{
	for (int i = 0; i < 5; i++)
		if (l[i] >= bound) {
			print_error("%s: limb %d = 0x%llx >= bound 0x%llx\n", what, i, (unsigned long long)l[i],
			            (unsigned long long)bound);
			_fail(file, line);
		}
}

/* the documented output bound of the operation, and the type's invariant */
static void check_tight(const fe *f, uint64_t bound, const char *what)
{
	assert_limbs_below(f->v, bound, what);
	assert_int_equal(fe_bounds_ok_tight(f), 1);
}

static void check_loose(const fe_loose *f, uint64_t bound, const char *what)
{
	assert_limbs_below(f->v, bound, what);
	assert_int_equal(fe_bounds_ok_loose(f), 1);
}

/* ---- generators ------------------------------------------------------------- */

/* a tight element: limbs < 2^52, weird or random */
static void rand_tight(fe *f)
{
	th_rand_limbs(f->v, 52);
	if (th_rand_below(4) == 0) /* canonical-looking values too */
		th_rand_limbs(f->v, 51);
}

/* a loose element: limbs < 2^54 */
static void rand_loose(fe_loose *f)
{
	static const uint64_t edge[] = { 0, 1, 19, (1ULL << 51) - 1, 1ULL << 52, (1ULL << 53) + 1,
		                         (1ULL << 54) - 19, (1ULL << 54) - 1 };
	switch (th_rand_below(3)) {
	case 0:
		th_rand_limbs(f->v, 52);
		break;
	case 1:
		for (int i = 0; i < 5; i++)
			f->v[i] = edge[th_rand_below(sizeof(edge) / sizeof(edge[0]))];
		break;
	default:
		for (int i = 0; i < 5; i++)
			f->v[i] = th_rand64() & ((1ULL << 54) - 1);
		break;
	}
}

/* ---- tests ---------------------------------------------------------------------- */

static void test_bounds_predicates(void **state)
{
	fe f;
	fe_loose g;
	memset(&f, 0, sizeof(f));
	memset(&g, 0, sizeof(g));
	assert_int_equal(fe_bounds_ok_tight(&f), 1);
	assert_int_equal(fe_bounds_ok_loose(&g), 1);
	for (int i = 0; i < 5; i++) {
		memset(&f, 0, sizeof(f));
		f.v[i] = FE_TIGHT_BOUND - 1;
		assert_int_equal(fe_bounds_ok_tight(&f), 1);
		f.v[i] = FE_TIGHT_BOUND;
		assert_int_equal(fe_bounds_ok_tight(&f), 0);
		f.v[i] = UINT64_MAX;
		assert_int_equal(fe_bounds_ok_tight(&f), 0);
		memset(&g, 0, sizeof(g));
		g.v[i] = FE_LOOSE_BOUND - 1;
		assert_int_equal(fe_bounds_ok_loose(&g), 1);
		g.v[i] = FE_LOOSE_BOUND;
		assert_int_equal(fe_bounds_ok_loose(&g), 0);
	}
}

static void test_arith_vs_bignum(void **state)
{
	th_rng_reset("fe-arith");
	BIGNUM *w = BN_new(), *k = BN_new();
	assert_non_null(w);
	assert_non_null(k);
	assert_int_equal(BN_set_word(k, 121666), 1);
	for (int i = 0; i < TRIALS; i++) {
		fe f, g, h;
		fe_loose fl, gl, hl;
		rand_tight(&f);
		rand_tight(&g);
		rand_loose(&fl);
		rand_loose(&gl);
		BIGNUM *F = bn_of(&f), *G = bn_of(&g), *FL = bn_of_loose(&fl), *GL = bn_of_loose(&gl), *H;

		fe_mul_ttt(&h, &f, &g);
		check_tight(&h, (1ULL << 51) + (1ULL << 17), "fe_mul_ttt");
		assert_int_equal(BN_mod_mul(w, F, G, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_mul_ttt");
		BN_free(H);

		fe_mul_tlt(&h, &fl, &g);
		check_tight(&h, (1ULL << 51) + (1ULL << 17), "fe_mul_tlt");
		assert_int_equal(BN_mod_mul(w, FL, G, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_mul_tlt");
		BN_free(H);

		fe_mul_tll(&h, &fl, &gl);
		check_tight(&h, (1ULL << 51) + (1ULL << 17), "fe_mul_tll");
		assert_int_equal(BN_mod_mul(w, FL, GL, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_mul_tll");
		BN_free(H);

		fe_sq_tt(&h, &f);
		check_tight(&h, (1ULL << 51) + (1ULL << 17), "fe_sq_tt");
		assert_int_equal(BN_mod_sqr(w, F, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_sq_tt");
		BN_free(H);

		fe_sq_tl(&h, &fl);
		check_tight(&h, (1ULL << 51) + (1ULL << 17), "fe_sq_tl");
		assert_int_equal(BN_mod_sqr(w, FL, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_sq_tl");
		BN_free(H);

		fe_sq2_tt(&h, &f);
		check_tight(&h, (1ULL << 51) + (1ULL << 8), "fe_sq2_tt");
		assert_int_equal(BN_mod_sqr(w, F, P, bctx), 1);
		assert_int_equal(BN_mod_add(w, w, w, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_sq2_tt");
		BN_free(H);

		fe_mul121666(&h, &f);
		check_tight(&h, (1ULL << 51) + (1ULL << 18), "fe_mul121666");
		assert_int_equal(BN_mod_mul(w, F, k, P, bctx), 1);
		H = bn_of(&h);
		assert_bn_eq(H, w, "fe_mul121666");
		BN_free(H);

		fe_add(&hl, &f, &g);
		check_loose(&hl, 1ULL << 53, "fe_add");
		assert_int_equal(BN_mod_add(w, F, G, P, bctx), 1);
		H = bn_of_loose(&hl);
		assert_bn_eq(H, w, "fe_add");
		BN_free(H);

		fe_sub(&hl, &f, &g);
		check_loose(&hl, (1ULL << 52) + (1ULL << 53), "fe_sub");
		assert_int_equal(BN_mod_sub(w, F, G, P, bctx), 1);
		H = bn_of_loose(&hl);
		assert_bn_eq(H, w, "fe_sub");
		BN_free(H);

		fe_neg(&hl, &f);
		check_loose(&hl, 1ULL << 53, "fe_neg");
		assert_int_equal(BN_mod_sub(w, P, F, P, bctx), 1);
		H = bn_of_loose(&hl);
		assert_bn_eq(H, w, "fe_neg");
		BN_free(H);

		fe_carry(&h, &fl);
		check_tight(&h, (1ULL << 51) + (1ULL << 8), "fe_carry");
		H = bn_of(&h);
		assert_bn_eq(H, FL, "fe_carry");
		BN_free(H);

		/* generic limb routines: inputs < 2^54, h[1] < 2^51 + 2^17, others < 2^51 */
		uint64_t lh[5];
		fe_mul_generic(lh, fl.v, gl.v);
		assert_limbs_below(lh, (1ULL << 51) + (1ULL << 17), "fe_mul_generic");
		for (int j = 0; j < 5; j++)
			if (j != 1)
				assert_true(lh[j] < (1ULL << 51));
		assert_int_equal(BN_mod_mul(w, FL, GL, P, bctx), 1);
		H = bn_of_limbs(lh);
		assert_bn_eq(H, w, "fe_mul_generic");
		BN_free(H);
		fe_sq_generic(lh, fl.v);
		assert_limbs_below(lh, (1ULL << 51) + (1ULL << 17), "fe_sq_generic");
		for (int j = 0; j < 5; j++)
			if (j != 1)
				assert_true(lh[j] < (1ULL << 51));
		assert_int_equal(BN_mod_sqr(w, FL, P, bctx), 1);
		H = bn_of_limbs(lh);
		assert_bn_eq(H, w, "fe_sq_generic");
		BN_free(H);

		BN_free(F);
		BN_free(G);
		BN_free(FL);
		BN_free(GL);
	}
	BN_free(w);
	BN_free(k);
}

static void encode(uint8_t s[32], const fe *f)
{
	fe_tobytes(s, f);
}

/* f * (g + h) = f*g + f*h, (f + g)^2 = f^2 + 2fg + g^2, f - f = 0 */
static void test_identities(void **state)
{
	th_rng_reset("fe-identities");
	for (int i = 0; i < TRIALS; i++) {
		fe f, g, h, x, y, z;
		fe_loose s;
		uint8_t a[32], b[32];
		rand_tight(&f);
		rand_tight(&g);
		rand_tight(&h);
		fe_add(&s, &g, &h);
		fe_mul_tlt(&x, &s, &f);
		fe_mul_ttt(&y, &f, &g);
		fe_mul_ttt(&z, &f, &h);
		fe_add(&s, &y, &z);
		fe_carry(&y, &s);
		encode(a, &x);
		encode(b, &y);
		th_assert_bytes_eq(a, b, 32);

		fe_add(&s, &f, &g);
		fe_sq_tl(&x, &s);
		fe_sq_tt(&y, &f);
		fe_sq_tt(&z, &g);
		fe_add(&s, &y, &z);
		fe_carry(&y, &s);
		fe_mul_ttt(&z, &f, &g);
		fe_add(&s, &z, &z);
		fe_carry(&z, &s);
		fe_add(&s, &y, &z);
		fe_carry(&y, &s);
		encode(a, &x);
		encode(b, &y);
		th_assert_bytes_eq(a, b, 32);

		fe_sub(&s, &f, &f);
		fe_carry(&x, &s);
		assert_int_equal(fe_iszero(&x), 1);
		/* sq2 = 2 sq; neg(neg f) = f */
		fe_sq2_tt(&x, &f);
		fe_sq_tt(&y, &f);
		fe_add(&s, &y, &y);
		fe_carry(&y, &s);
		assert_int_equal(fe_equal(&x, &y), 1);
		fe_neg(&s, &f);
		fe_carry(&x, &s);
		fe_neg(&s, &x);
		fe_carry(&x, &s);
		assert_int_equal(fe_equal(&x, &f), 1);
	}
}

static void test_invert(void **state)
{
	th_rng_reset("fe-invert");
	fe f, g, h, one;
	fe_1(&one);
	for (int i = 0; i < 2000; i++) {
		rand_tight(&f);
		fe_invert_safegcd(&g, &f);
		check_tight(&g, FE_TIGHT_BOUND, "fe_invert_safegcd");
		fe_mul_ttt(&h, &f, &g);
		if (fe_iszero(&f))
			assert_int_equal(fe_iszero(&g), 1);
		else
			assert_int_equal(fe_equal(&h, &one), 1);
	}
	/* invert(0) = 0, for 0 and for p, 2p written in limbs */
	fe_0(&f);
	fe_invert_safegcd(&g, &f);
	assert_int_equal(fe_iszero(&g), 1);
	uint8_t pbytes[32];
	memset(pbytes, 0xff, 32);
	pbytes[0] = 0xed;
	pbytes[31] = 0x7f;
	fe_frombytes(&f, pbytes);
	assert_int_equal(fe_iszero(&f), 1);
	fe_invert_safegcd(&g, &f);
	assert_int_equal(fe_iszero(&g), 1);
	f.v[0] = 2 * ((1ULL << 51) - 19);
	for (int j = 1; j < 5; j++)
		f.v[j] = 2 * ((1ULL << 51) - 1); /* 2p, limbs < 2^52 */
	assert_int_equal(fe_iszero(&f), 1);
	fe_invert_safegcd(&g, &f);
	assert_int_equal(fe_iszero(&g), 1);
	/* invert(1) = 1, invert(-1) = -1 */
	fe_invert_safegcd(&g, &one);
	assert_int_equal(fe_equal(&g, &one), 1);
}

static void test_pow22523(void **state)
{
	th_rng_reset("fe-pow22523");
	BIGNUM *e = BN_new(), *w = BN_new();
	assert_non_null(e);
	assert_non_null(w);
	assert_int_equal(BN_set_bit(e, 252), 1);
	assert_int_equal(BN_sub_word(e, 3), 1); /* (p - 5) / 8 = 2^252 - 3 */
	for (int i = 0; i < 500; i++) {
		fe f, g;
		rand_tight(&f);
		fe_pow22523(&g, &f);
		check_tight(&g, FE_TIGHT_BOUND, "fe_pow22523");
		BIGNUM *F = bn_of(&f), *G = bn_of(&g);
		assert_int_equal(BN_mod_exp(w, F, e, P, bctx), 1);
		assert_bn_eq(G, w, "fe_pow22523");
		BN_free(F);
		BN_free(G);
	}
	BN_free(e);
	BN_free(w);
}

static void test_sqrtm1(void **state)
{
	fe x, one;
	fe_loose s;
	fe_sq_tt(&x, &fe_sqrtm1);
	fe_1(&one);
	fe_add(&s, &x, &one);
	fe_carry(&x, &s);
	assert_int_equal(fe_iszero(&x), 1); /* sqrt(-1)^2 + 1 = 0 */
	assert_int_equal(fe_isnegative(&fe_sqrtm1), 0);
}

/* 1 if a is a square mod p (Euler's criterion; 0 counts as a square) */
static int bn_is_square(const BIGNUM *a)
{
	if (BN_is_zero(a))
		return 1;
	BIGNUM *e = BN_new(), *w = BN_new();
	assert_non_null(e);
	assert_non_null(w);
	assert_int_equal(BN_rshift1(e, P), 1); /* (p - 1) / 2 */
	assert_int_equal(BN_mod_exp(w, a, e, P, bctx), 1);
	int r = BN_is_one(w);
	BN_free(e);
	BN_free(w);
	return r;
}

static void check_sqrt_ratio(const fe *u, const fe *v)
{
	fe r, x, want;
	BIGNUM *U = bn_of(u), *V = bn_of(v), *Q = BN_new();
	assert_non_null(Q);
	memset(&r, 0x33, sizeof(r));
	int ret = fe_sqrt_ratio(&r, u, v);
	check_tight(&r, FE_TIGHT_BOUND, "fe_sqrt_ratio");
	assert_int_equal(fe_isnegative(&r), 0); /* the non-negative root */
	if (BN_is_zero(U)) {
		assert_int_equal(ret, 1);
		assert_int_equal(fe_iszero(&r), 1);
	} else if (BN_is_zero(V)) {
		assert_int_equal(ret, 0);
		assert_int_equal(fe_iszero(&r), 1);
	} else {
		assert_non_null(BN_mod_inverse(Q, V, P, bctx));
		assert_int_equal(BN_mod_mul(Q, Q, U, P, bctx), 1);
		int sq = bn_is_square(Q);
		assert_int_equal(ret, sq);
		/* r^2 v = u if square, else sqrt(-1) u */
		fe_sq_tt(&x, &r);
		fe_mul_ttt(&x, &x, v);
		if (sq)
			fe_copy(&want, u);
		else
			fe_mul_ttt(&want, &fe_sqrtm1, u);
		assert_int_equal(fe_equal(&x, &want), 1);
	}
	BN_free(U);
	BN_free(V);
	BN_free(Q);
}

static void test_sqrt_ratio(void **state)
{
	th_rng_reset("fe-sqrt-ratio");
	fe u, v, zero, one;
	fe_0(&zero);
	fe_1(&one);
	/* the special cases */
	check_sqrt_ratio(&zero, &zero);
	check_sqrt_ratio(&zero, &one);
	check_sqrt_ratio(&one, &zero);
	check_sqrt_ratio(&one, &one);
	fe_loose nl;
	fe_neg(&nl, &one); /* -1: u/v = -1 is a square (p = 1 mod 4) */
	fe_carry(&u, &nl);
	check_sqrt_ratio(&u, &one);
	fe_copy(&u, &fe_sqrtm1);
	check_sqrt_ratio(&u, &one); /* sqrt(-1) is not a square */
	int squares = 0;
	for (int i = 0; i < 2000; i++) {
		rand_tight(&u);
		rand_tight(&v);
		if (i % 3 == 0) {
			/* u = w^2 v: a square ratio for sure */
			fe w;
			rand_tight(&w);
			fe_sq_tt(&w, &w);
			fe_mul_ttt(&u, &w, &v);
		}
		check_sqrt_ratio(&u, &v);
		fe r;
		squares += fe_sqrt_ratio(&r, &u, &v);
	}
	assert_true(squares > 800 && squares < 1800);
}

static void test_bytes_round_trip(void **state)
{
	th_rng_reset("fe-bytes");
	BIGNUM *two255 = BN_new();
	assert_non_null(two255);
	assert_int_equal(BN_set_bit(two255, 255), 1);
	size_t nweird = th_weird32_count();
	for (int i = 0; i < TRIALS; i++) {
		uint8_t s[32], t[32], u[32];
		if (i < (int)nweird)
			th_weird32(s, (size_t)i);
		else
			th_rand_weird32(s);
		fe f;
		fe_frombytes(&f, s);
		check_tight(&f, 1ULL << 51, "fe_frombytes");
		fe_tobytes(t, &f);
		/* want = (s mod 2^255) mod p */
		BIGNUM *S = BN_lebin2bn(s, 32, NULL), *T = BN_lebin2bn(t, 32, NULL);
		assert_non_null(S);
		assert_non_null(T);
		assert_int_equal(BN_nnmod(S, S, two255, bctx), 1);
		assert_int_equal(BN_nnmod(S, S, P, bctx), 1);
		assert_bn_eq(T, S, "tobytes(frombytes(s))");
		assert_true(BN_cmp(T, P) < 0); /* canonical */
		assert_int_equal(t[31] >> 7, 0);
		/* canonical bytes come back unchanged */
		fe_frombytes(&f, t);
		fe_tobytes(u, &f);
		th_assert_bytes_eq(u, t, 32);
		BN_free(S);
		BN_free(T);
	}
	/* tobytes of non-canonical tight limbs (up to 2^52 - 1 per limb) */
	for (int i = 0; i < TRIALS; i++) {
		fe f;
		uint8_t t[32];
		th_rand_limbs(f.v, 52);
		fe_tobytes(t, &f);
		BIGNUM *T = BN_lebin2bn(t, 32, NULL), *F = bn_of(&f);
		assert_non_null(T);
		assert_bn_eq(T, F, "tobytes(limbs)");
		assert_true(BN_cmp(T, P) < 0);
		BN_free(T);
		BN_free(F);
	}
	BN_free(two255);
}

static void test_predicates(void **state)
{
	th_rng_reset("fe-predicates");
	for (int i = 0; i < TRIALS; i++) {
		fe f, g;
		rand_tight(&f);
		BIGNUM *F = bn_of(&f);
		assert_int_equal(fe_iszero(&f), BN_is_zero(F));
		assert_int_equal(fe_isnegative(&f), BN_is_odd(F));
		/* equal: to itself plus p, limb by limb, where that stays tight */
		static const uint64_t plimb[5] = { (1ULL << 51) - 19, (1ULL << 51) - 1, (1ULL << 51) - 1,
			                           (1ULL << 51) - 1, (1ULL << 51) - 1 };
		g = f;
		int fits = 1;
		for (int j = 0; j < 5; j++)
			fits &= f.v[j] + plimb[j] < FE_TIGHT_BOUND;
		if (fits)
			for (int j = 0; j < 5; j++)
				g.v[j] = f.v[j] + plimb[j];
		assert_int_equal(fe_equal(&f, &g), 1);
		rand_tight(&g);
		BIGNUM *G = bn_of(&g);
		assert_int_equal(fe_equal(&f, &g), BN_cmp(F, G) == 0);
		/* abs: even, and = +-f */
		fe a;
		fe_abs(&a, &f);
		check_tight(&a, FE_TIGHT_BOUND, "fe_abs");
		assert_int_equal(fe_isnegative(&a), 0);
		BIGNUM *A = bn_of(&a), *N = BN_new();
		assert_non_null(N);
		assert_int_equal(BN_mod_sub(N, P, F, P, bctx), 1);
		assert_true(BN_cmp(A, F) == 0 || BN_cmp(A, N) == 0);
		BN_free(F);
		BN_free(G);
		BN_free(A);
		BN_free(N);
	}
	fe z;
	fe_0(&z);
	assert_int_equal(fe_iszero(&z), 1);
	assert_int_equal(fe_isnegative(&z), 0);
	fe_1(&z);
	assert_int_equal(fe_iszero(&z), 0);
	assert_int_equal(fe_isnegative(&z), 1);
}

/* fe_iszero looks at every byte of the encoding: 2^k for each k < 255 is
 * nonzero, in particular 2^248 (bytes 0..30 zero, byte 31 = 1), whose only
 * set bit is in the last byte; p itself (not reduced by frombytes) is zero. */
static void test_iszero_every_byte(void **state)
{
	for (int k = 0; k < 255; k++) {
		uint8_t s[32] = { 0 };
		fe f;
		s[k / 8] = (uint8_t)(1u << (k % 8));
		fe_frombytes(&f, s);
		if (fe_iszero(&f) != 0)
			fail_msg("fe_iszero(2^%d) = %d", k, fe_iszero(&f));
	}
	uint8_t s[32] = { 0 };
	fe f;
	s[31] = 1; /* 2^248 */
	fe_frombytes(&f, s);
	assert_int_equal(fe_iszero(&f), 0);
	memset(s, 0xff, 32);
	s[0] = 0xed;
	s[31] = 0x7f; /* p */
	fe_frombytes(&f, s);
	assert_int_equal(fe_iszero(&f), 1);
}

static void test_cmov_cswap_cneg(void **state)
{
	th_rng_reset("fe-cmov");
	for (int i = 0; i < 1000; i++) {
		fe f, g, f0, g0, x;
		rand_tight(&f0);
		rand_tight(&g0);
		f = f0;
		fe_cmov(&f, &g0, 0);
		th_assert_bytes_eq(&f, &f0, sizeof(fe));
		fe_cmov(&f, &g0, 1);
		th_assert_bytes_eq(&f, &g0, sizeof(fe));

		f = f0;
		g = g0;
		fe_cswap(&f, &g, 0);
		th_assert_bytes_eq(&f, &f0, sizeof(fe));
		th_assert_bytes_eq(&g, &g0, sizeof(fe));
		fe_cswap(&f, &g, 1);
		th_assert_bytes_eq(&f, &g0, sizeof(fe));
		th_assert_bytes_eq(&g, &f0, sizeof(fe));

		f = f0;
		fe_cneg(&f, 0);
		assert_int_equal(fe_equal(&f, &f0), 1);
		check_tight(&f, FE_TIGHT_BOUND, "fe_cneg(0)");
		fe_cneg(&f, 1);
		check_tight(&f, FE_TIGHT_BOUND, "fe_cneg(1)");
		fe_loose s;
		fe_add(&s, &f, &f0);
		fe_carry(&x, &s);
		assert_int_equal(fe_iszero(&x), 1);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounds_predicates),
		cmocka_unit_test(test_arith_vs_bignum),
		cmocka_unit_test(test_identities),
		cmocka_unit_test(test_invert),
		cmocka_unit_test(test_pow22523),
		cmocka_unit_test(test_sqrtm1),
		cmocka_unit_test(test_sqrt_ratio),
		cmocka_unit_test(test_bytes_round_trip),
		cmocka_unit_test(test_predicates),
		cmocka_unit_test(test_iszero_every_byte),
		cmocka_unit_test(test_cmov_cswap_cneg),
	};
	return th_run_fixture(tests, setup, teardown);
}
