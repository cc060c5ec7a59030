/* SPDX-License-Identifier: MIT */
/*
 * ge.c - edwards25519 points: add/double in extended coordinates (HWCD 2008,
 * a = -1), the RFC 8032 codec, small-order checks, fixed-base scalar
 * multiplication (constant time) and double/multi scalar multiplication
 * (variable time, for verification). Types and contracts: ge.h.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "ref51/fe.h"
#include "ref51/ge.h"
#include "ref51/ge_table.h"
#include "wnaf.h"

/* d = -121665/121666 mod p
 * = 37095705934669439343138083508754565189542113879843219016388785533085940283555 */
const fe ge_d = { { 0x34dca135978a3, 0x1a8283b156ebd, 0x5e7a26001c029, 0x739c663a03cbb,
                    0x52036cee2b6ff } };
/* 2d mod p */
const fe ge_d2 = { { 0x69b9426b2f159, 0x35050762add7a, 0x3cf44c0038052, 0x6738cc7407977,
                     0x2406d9dc56dff } };

void ge_p2_0(ge_p2 *h)
{
	fe_0(&h->X);
	fe_1(&h->Y);
	fe_1(&h->Z);
}

void ge_p3_0(ge_p3 *h)
{
	fe_0(&h->X);
	fe_1(&h->Y);
	fe_1(&h->Z);
	fe_0(&h->T);
}

void ge_precomp_0(ge_precomp *h)
{
	fe_1(&h->yplusx);
	fe_1(&h->yminusx);
	fe_0(&h->xy2d);
}

void ge_cached_0(ge_cached *h)
{
	fe one, zero;
	fe_1(&one);
	fe_0(&zero);
	fe_copy_lt(&h->YplusX, &one);
	fe_copy_lt(&h->YminusX, &one);
	fe_copy_lt(&h->Z, &one);
	fe_copy_lt(&h->T2d, &zero);
}

void ge_p3_to_p2(ge_p2 *r, const ge_p3 *p)
{
	fe_copy(&r->X, &p->X);
	fe_copy(&r->Y, &p->Y);
	fe_copy(&r->Z, &p->Z);
}

void ge_p3_to_cached(ge_cached *r, const ge_p3 *p)
{
	fe t;
	fe_add(&r->YplusX, &p->Y, &p->X);
	fe_sub(&r->YminusX, &p->Y, &p->X);
	fe_copy_lt(&r->Z, &p->Z);
	fe_mul_ttt(&t, &p->T, &ge_d2);
	fe_copy_lt(&r->T2d, &t);
}

/* (X:Y:Z:T) = (X T : Y Z : Z T : X Y) from the completed point. */
void ge_p1p1_to_p2(ge_p2 *r, const ge_p1p1 *p)
{
	fe_mul_tll(&r->X, &p->X, &p->T);
	fe_mul_tll(&r->Y, &p->Y, &p->Z);
	fe_mul_tll(&r->Z, &p->Z, &p->T);
}

void ge_p1p1_to_p3(ge_p3 *r, const ge_p1p1 *p)
{
	fe_mul_tll(&r->X, &p->X, &p->T);
	fe_mul_tll(&r->Y, &p->Y, &p->Z);
	fe_mul_tll(&r->Z, &p->Z, &p->T);
	fe_mul_tll(&r->T, &p->X, &p->Y);
}

/* dbl-2008-hwcd with a = -1, up to the sign of every coordinate:
 * A = X^2, B = Y^2, C = 2 Z^2; completed point
 * X = (X + Y)^2 - A - B, Y = B + A, Z = B - A, T = C - (B - A). */
void ge_p2_dbl(ge_p1p1 *r, const ge_p2 *p)
{
	fe a, b, c, xy, t, u;
	fe_loose l;

	fe_sq_tt(&a, &p->X);
	fe_sq_tt(&b, &p->Y);
	fe_sq2_tt(&c, &p->Z);
	fe_add(&l, &p->X, &p->Y);
	fe_sq_tl(&xy, &l);            /* (X + Y)^2 */
	fe_add(&r->Y, &b, &a);        /* B + A */
	fe_sub(&r->Z, &b, &a);        /* B - A */
	fe_carry(&t, &r->Y);
	fe_sub(&r->X, &xy, &t);       /* (X + Y)^2 - (A + B) */
	fe_carry(&u, &r->Z);
	fe_sub(&r->T, &c, &u);        /* C - (B - A) */
}

void ge_p3_dbl(ge_p1p1 *r, const ge_p3 *p)
{
	ge_p2 q;
	ge_p3_to_p2(&q, p);
	ge_p2_dbl(r, &q);
}

/* add-2008-hwcd-3 with k = 2d (q cached):
 * A = (Y1 - X1)(Y2 - X2), B = (Y1 + X1)(Y2 + X2), C = T1 2d T2, D = 2 Z1 Z2;
 * completed point X = B - A, Y = B + A, Z = D + C, T = D - C. */
void ge_add(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q)
{
	fe a, b, c, d, zz;
	fe_loose ypx, ymx, l;

	fe_add(&ypx, &p->Y, &p->X);
	fe_sub(&ymx, &p->Y, &p->X);
	fe_mul_tll(&a, &ymx, &q->YminusX);
	fe_mul_tll(&b, &ypx, &q->YplusX);
	fe_mul_tlt(&c, &q->T2d, &p->T);
	fe_mul_tlt(&zz, &q->Z, &p->Z);
	fe_add(&l, &zz, &zz);
	fe_carry(&d, &l);
	fe_sub(&r->X, &b, &a);
	fe_add(&r->Y, &b, &a);
	fe_add(&r->Z, &d, &c);
	fe_sub(&r->T, &d, &c);
}

/* p - q: q's (Y+X, Y-X) swap roles and C changes sign. */
void ge_sub(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q)
{
	fe a, b, c, d, zz;
	fe_loose ypx, ymx, l;

	fe_add(&ypx, &p->Y, &p->X);
	fe_sub(&ymx, &p->Y, &p->X);
	fe_mul_tll(&a, &ymx, &q->YplusX);
	fe_mul_tll(&b, &ypx, &q->YminusX);
	fe_mul_tlt(&c, &q->T2d, &p->T);
	fe_mul_tlt(&zz, &q->Z, &p->Z);
	fe_add(&l, &zz, &zz);
	fe_carry(&d, &l);
	fe_sub(&r->X, &b, &a);
	fe_add(&r->Y, &b, &a);
	fe_sub(&r->Z, &d, &c);
	fe_add(&r->T, &d, &c);
}

/* Mixed addition, q affine (Z2 = 1): D = 2 Z1. */
void ge_madd(ge_p1p1 *r, const ge_p3 *p, const ge_precomp *q)
{
	fe a, b, c, d;
	fe_loose ypx, ymx, l;

	fe_add(&ypx, &p->Y, &p->X);
	fe_sub(&ymx, &p->Y, &p->X);
	fe_mul_tlt(&a, &ymx, &q->yminusx);
	fe_mul_tlt(&b, &ypx, &q->yplusx);
	fe_mul_ttt(&c, &q->xy2d, &p->T);
	fe_add(&l, &p->Z, &p->Z);
	fe_carry(&d, &l);
	fe_sub(&r->X, &b, &a);
	fe_add(&r->Y, &b, &a);
	fe_add(&r->Z, &d, &c);
	fe_sub(&r->T, &d, &c);
}

void ge_msub(ge_p1p1 *r, const ge_p3 *p, const ge_precomp *q)
{
	fe a, b, c, d;
	fe_loose ypx, ymx, l;

	fe_add(&ypx, &p->Y, &p->X);
	fe_sub(&ymx, &p->Y, &p->X);
	fe_mul_tlt(&a, &ymx, &q->yplusx);
	fe_mul_tlt(&b, &ypx, &q->yminusx);
	fe_mul_ttt(&c, &q->xy2d, &p->T);
	fe_add(&l, &p->Z, &p->Z);
	fe_carry(&d, &l);
	fe_sub(&r->X, &b, &a);
	fe_add(&r->Y, &b, &a);
	fe_sub(&r->Z, &d, &c);
	fe_add(&r->T, &d, &c);
}

void ge_p3_add(ge_p3 *r, const ge_p3 *p, const ge_p3 *q)
{
	ge_cached c;
	ge_p1p1 t;
	ge_p3_to_cached(&c, q);
	ge_add(&t, p, &c);
	ge_p1p1_to_p3(r, &t);
}

void ge_p3_sub(ge_p3 *r, const ge_p3 *p, const ge_p3 *q)
{
	ge_cached c;
	ge_p1p1 t;
	ge_p3_to_cached(&c, q);
	ge_sub(&t, p, &c);
	ge_p1p1_to_p3(r, &t);
}

void ge_p3_dbl_p3(ge_p3 *r, const ge_p3 *p)
{
	ge_p1p1 t;
	ge_p3_dbl(&t, p);
	ge_p1p1_to_p3(r, &t);
}

/* -(X:Y:Z:T) = (-X:Y:Z:-T) */
void ge_p3_neg(ge_p3 *r, const ge_p3 *p)
{
	fe_loose l;
	fe_neg(&l, &p->X);
	fe_carry(&r->X, &l);
	fe_copy(&r->Y, &p->Y);
	fe_copy(&r->Z, &p->Z);
	fe_neg(&l, &p->T);
	fe_carry(&r->T, &l);
}

void ge_mul_by_cofactor(ge_p3 *r, const ge_p3 *p)
{
	ge_p1p1 t;
	ge_p2 q;
	ge_p3_to_p2(&q, p);
	ge_p2_dbl(&t, &q);
	ge_p1p1_to_p2(&q, &t);
	ge_p2_dbl(&t, &q);
	ge_p1p1_to_p2(&q, &t);
	ge_p2_dbl(&t, &q);
	ge_p1p1_to_p3(r, &t);
}

static void ge_encode(uint8_t s[32], const fe *X, const fe *Y, const fe *Z)
{
	fe recip, x, y;
	fe_invert_safegcd(&recip, Z);
	fe_mul_ttt(&x, X, &recip);
	fe_mul_ttt(&y, Y, &recip);
	fe_tobytes(s, &y);
	s[31] ^= (uint8_t)(fe_isnegative(&x) << 7);
}

void ge_p3_tobytes(uint8_t s[32], const ge_p3 *h)
{
	ge_encode(s, &h->X, &h->Y, &h->Z);
}

void ge_tobytes(uint8_t s[32], const ge_p2 *h)
{
	ge_encode(s, &h->X, &h->Y, &h->Z);
}

/* RFC 8032 5.1.3: y = s mod 2^255 (reduced lazily), x^2 = (y^2 - 1) /
 * (d y^2 + 1), the root whose parity is the sign bit. */
static int ge_decode(ge_p3 *h, const uint8_t s[32], int allow_neg_zero)
{
	fe x, y, yy, u, v, one;
	fe_loose l;

	fe_frombytes(&y, s);
	fe_1(&one);
	fe_sq_tt(&yy, &y);
	fe_sub(&l, &yy, &one);
	fe_carry(&u, &l);            /* u = y^2 - 1 */
	fe_mul_ttt(&v, &yy, &ge_d);
	fe_add(&l, &v, &one);
	fe_carry(&v, &l);            /* v = d y^2 + 1 (never 0: d is not a square) */

	int was_square = fe_sqrt_ratio(&x, &u, &v); /* x = |sqrt(u/v)| */
	int sign = s[31] >> 7;
	int neg_zero = fe_iszero(&x) & sign & (allow_neg_zero ^ 1);
	if ((was_square ^ 1) | neg_zero)
		return -1;
	fe_cneg(&x, (uint64_t)sign);

	fe_copy(&h->X, &x);
	fe_copy(&h->Y, &y);
	fe_1(&h->Z);
	fe_mul_ttt(&h->T, &x, &y);
	return 0;
}

int ge_frombytes(ge_p3 *h, const uint8_t s[32])
{
	return ge_decode(h, s, 0);
}

int ge_frombytes_zip215(ge_p3 *h, const uint8_t s[32])
{
	return ge_decode(h, s, 1);
}

/* y (bit 255 cleared) >= p iff bytes 1..30 are 0xff, byte 31 & 0x7f is 0x7f
 * and byte 0 >= 0xed. */
int ge_is_canonical(const uint8_t s[32])
{
	uint64_t top = (uint64_t)((s[31] & 0x7f) ^ 0x7f);
	for (int i = 1; i < 31; i++)
		top |= (uint64_t)(s[i] ^ 0xff);
	uint64_t top_all_ones = ct_iszero_u64(top);
	uint64_t low_ge = ~ct_lt_u64(s[0], 0xed); /* s[0] >= 0xed */
	return (int)((top_all_ones & low_ge & 1) ^ 1);
}

/* The encodings of y for the points of order 1, 2, 4 and 8, including the
 * non-canonical y + p that fit in 255 bits. y8 and p - y8 are the y of the
 * four points of order 8 (y8^2 = (-1 + sqrt(1 + d)) / d, whichever root
 * admits an x). Values from libsodium's ge25519_has_small_order list
 * (crypto_core/ed25519/ref10/ed25519_ref10.c), checked in tests by
 * multiplying each decoded point by 8. */
static const uint8_t small_order_y[7][32] = {
	/* 0 (order 4) */
	{ 0 },
	/* 1 (order 1) */
	{ 1 },
	/* y8 (order 8) */
	{ 0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
	  0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05 },
	/* p - y8 (order 8) */
	{ 0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
	  0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a },
	/* p - 1 (order 2) */
	{ 0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	/* p (= 0, order 4) */
	{ 0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	/* p + 1 (= 1, order 1) */
	{ 0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
	  0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
};

int ge_has_small_order(const uint8_t s[32])
{
	uint64_t found = 0;
	for (int k = 0; k < 7; k++) {
		uint64_t diff = (uint64_t)((s[31] & 0x7f) ^ small_order_y[k][31]);
		for (int i = 0; i < 31; i++)
			diff |= (uint64_t)(s[i] ^ small_order_y[k][i]);
		found |= ct_iszero_u64(diff);
	}
	return (int)(found & 1);
}

int ge_p3_is_identity(const ge_p3 *p)
{
	return fe_iszero(&p->X) & fe_equal(&p->Y, &p->Z);
}

int ge_is_small_order(const ge_p3 *p)
{
	ge_p3 q;
	ge_mul_by_cofactor(&q, p);
	return ge_p3_is_identity(&q);
}

int ge_p3_equal(const ge_p3 *p, const ge_p3 *q)
{
	fe a, b, c, d;
	fe_mul_ttt(&a, &p->X, &q->Z);
	fe_mul_ttt(&b, &q->X, &p->Z);
	fe_mul_ttt(&c, &p->Y, &q->Z);
	fe_mul_ttt(&d, &q->Y, &p->Z);
	return fe_equal(&a, &b) & fe_equal(&c, &d);
}

/* Constant-time: all 8 entries of row pos are read; b only feeds masks.
 * pos is a public loop position. */
void ge_precomp_select(ge_precomp *t, int pos, signed char b)
{
	uint64_t ub = (uint64_t)(int64_t)b;        /* sign-extended */
	uint64_t bneg = ub >> 63;                   /* 1 if b < 0 */
	uint64_t babs = ub - ((0 - bneg) & (ub << 1)); /* |b| */
	ge_precomp minus;
	fe_loose l;

	ge_precomp_0(t);
	for (int j = 0; j < 8; j++) {
		uint64_t hit = ct_eq_u64(babs, (uint64_t)(j + 1)) & 1;
		fe_cmov(&t->yplusx, &ge_base[pos][j].yplusx, hit);
		fe_cmov(&t->yminusx, &ge_base[pos][j].yminusx, hit);
		fe_cmov(&t->xy2d, &ge_base[pos][j].xy2d, hit);
	}
	/* -(y+x, y-x, 2dxy) = (y-x, y+x, -2dxy) */
	fe_copy(&minus.yplusx, &t->yminusx);
	fe_copy(&minus.yminusx, &t->yplusx);
	fe_neg(&l, &t->xy2d);
	fe_carry(&minus.xy2d, &l);
	fe_cmov(&t->yplusx, &minus.yplusx, bneg);
	fe_cmov(&t->yminusx, &minus.yminusx, bneg);
	fe_cmov(&t->xy2d, &minus.xy2d, bneg);
}

/* a = sum e[i] 16^i with e[i] in [-8, 8) (e[63] in [-8, 8]);
 * a B = sum_{i odd} e[i] 16^i B + sum_{i even} e[i] 16^i B
 *     = 16 (sum_{i odd} e[i] 256^((i-1)/2) B) + sum_{i even} e[i] 256^(i/2) B,
 * and e[i] 256^k B is one entry of row k of ge_base. */
void ge_scalarmult_base(ge_p3 *h, const uint8_t a[32])
{
	signed char e[64];
	signed char carry = 0;
	ge_p1p1 r;
	ge_p2 s;
	ge_precomp t;

#ifndef NDEBUG
	{
		/* The precondition holds by construction (clamped or reduced
		 * scalars); its outcome reveals nothing, so it is declassified
		 * before assert branches on it. */
		int ok = ct_lt_u64(a[31], 128) & 1;
		CT_DECLASSIFY(&ok, sizeof ok);
		assert(ok);
	}
#endif
	for (int i = 0; i < 32; i++) {
		e[2 * i] = (signed char)(a[i] & 15);
		e[2 * i + 1] = (signed char)((a[i] >> 4) & 15);
	}
	/* each e[i] in [0, 15] */
	for (int i = 0; i < 63; i++) {
		e[i] = (signed char)(e[i] + carry);           /* in [0, 16] */
		carry = (signed char)((e[i] + 8) >> 4);       /* 0 or 1 */
		e[i] = (signed char)(e[i] - (carry * 16));    /* in [-8, 7] */
	}
	e[63] = (signed char)(e[63] + carry); /* in [0, 8] since a[31] <= 127 */

	ge_p3_0(h);
	for (int i = 1; i < 64; i += 2) {
		ge_precomp_select(&t, i / 2, e[i]);
		ge_madd(&r, h, &t);
		ge_p1p1_to_p3(h, &r);
	}

	ge_p3_dbl(&r, h);
	ge_p1p1_to_p2(&s, &r);
	ge_p2_dbl(&r, &s);
	ge_p1p1_to_p2(&s, &r);
	ge_p2_dbl(&r, &s);
	ge_p1p1_to_p2(&s, &r);
	ge_p2_dbl(&r, &s);
	ge_p1p1_to_p3(h, &r);

	for (int i = 0; i < 64; i += 2) {
		ge_precomp_select(&t, i / 2, e[i]);
		ge_madd(&r, h, &t);
		ge_p1p1_to_p3(h, &r);
	}

	sigil_wipe(e, sizeof e);
	sigil_wipe(&r, sizeof r);
	sigil_wipe(&s, sizeof s);
	sigil_wipe(&t, sizeof t);
}

/* The odd multiples of wnaf.c on ge_p3 / ge_cached. */
static void ge_wnaf_dbl(void *r, const void *p, const void *ctx)
{
	(void)ctx;
	ge_p3_dbl_p3(r, p);
}

static void ge_wnaf_add(void *r, const void *p, const void *q, const void *ctx)
{
	ge_p1p1 t;
	(void)ctx;
	ge_add(&t, p, q);
	ge_p1p1_to_p3(r, &t);
}

static void ge_wnaf_to_cached(void *r, const void *p, const void *ctx)
{
	(void)ctx;
	ge_p3_to_cached(r, p);
}

static const wnaf_point_ops ge_wnaf_ops = {
	.p3_size = sizeof(ge_p3),
	.cached_size = sizeof(ge_cached),
	.dbl = ge_wnaf_dbl,
	.add = ge_wnaf_add,
	.to_cached = ge_wnaf_to_cached,
};

/* cached odd multiples A, 3A, ..., 15A: the table of a width-5 NAF */
static void ge_odd_multiples(ge_cached out[8], const ge_p3 *A)
{
	wnaf_odd_multiples_vartime(out, A, 8, &ge_wnaf_ops, NULL);
}

/* Width-5 NAF for the points known only at run time (8 odd multiples
 * computed per call), width 8 for B (64 odd multiples in ge_table.h's
 * ge_bi8): wnaf.c's recoder. */
void ge_double_scalarmult_vartime(ge_p2 *r, const uint8_t a[32], const ge_p3 *A,
                                  const uint8_t b[32])
{
	signed char anaf[WNAF_LEN], bnaf[WNAF_LEN];
	ge_cached ai[8];
	ge_p1p1 t;
	ge_p3 u;
	ge_p2 acc;
	int i;

	wnaf_dense_vartime(anaf, a, 5);
	wnaf_dense_vartime(bnaf, b, 8);
	ge_odd_multiples(ai, A);

	ge_p2_0(&acc);
	for (i = 256; i >= 0; i--)
		if (anaf[i] || bnaf[i])
			break;

	for (; i >= 0; i--) {
		ge_p2_dbl(&t, &acc);
		if (anaf[i] > 0) {
			ge_p1p1_to_p3(&u, &t);
			ge_add(&t, &u, &ai[anaf[i] / 2]);
		} else if (anaf[i] < 0) {
			ge_p1p1_to_p3(&u, &t);
			ge_sub(&t, &u, &ai[(-anaf[i]) / 2]);
		}
		if (bnaf[i] > 0) {
			ge_p1p1_to_p3(&u, &t);
			ge_madd(&t, &u, &ge_bi8[bnaf[i] / 2]);
		} else if (bnaf[i] < 0) {
			ge_p1p1_to_p3(&u, &t);
			ge_msub(&t, &u, &ge_bi8[(-bnaf[i]) / 2]);
		}
		ge_p1p1_to_p2(&acc, &t);
	}
	*r = acc;
}

void ge_p3_b128(ge_p3 *h)
{
	*h = ge_b128;
}

void ge_multi_scalarmult_vartime(ge_p3 *r, const uint8_t (*a)[32], const ge_p3 *P, int n,
                                 const uint8_t b[32])
{
	signed char naf[GE_MSM_MAX][WNAF_LEN], bnaf[WNAF_LEN];
	ge_cached pi[GE_MSM_MAX][8];
	ge_p1p1 t;
	ge_p3 u;
	ge_p2 acc;
	int i, j;

	assert(n >= 0 && n <= GE_MSM_MAX);
	for (j = 0; j < n; j++) {
		wnaf_dense_vartime(naf[j], a[j], 5);
		ge_odd_multiples(pi[j], &P[j]);
	}
	wnaf_dense_vartime(bnaf, b, 8);

	ge_p2_0(&acc);
	ge_p3_0(&u);
	for (i = 256; i >= 0; i--) {
		int any = bnaf[i] != 0;
		for (j = 0; j < n; j++)
			any |= naf[j][i] != 0;
		if (any)
			break;
	}
	for (; i >= 0; i--) {
		ge_p2_dbl(&t, &acc);
		ge_p1p1_to_p3(&u, &t);
		for (j = 0; j < n; j++) {
			signed char d = naf[j][i];
			if (d > 0) {
				ge_add(&t, &u, &pi[j][d / 2]);
				ge_p1p1_to_p3(&u, &t);
			} else if (d < 0) {
				ge_sub(&t, &u, &pi[j][(-d) / 2]);
				ge_p1p1_to_p3(&u, &t);
			}
		}
		if (bnaf[i] > 0) {
			ge_madd(&t, &u, &ge_bi8[bnaf[i] / 2]);
			ge_p1p1_to_p3(&u, &t);
		} else if (bnaf[i] < 0) {
			ge_msub(&t, &u, &ge_bi8[(-bnaf[i]) / 2]);
			ge_p1p1_to_p3(&u, &t);
		}
		ge_p3_to_p2(&acc, &u);
	}
	*r = u;
}
