/* SPDX-License-Identifier: MIT */
/*
 * ge64.c - the C twins of the ge64 assembly, and the variable-base scalar
 * multiplication of verification (two points and B) on fe64 points
 * (ge64.h). The point
 * formulas are those of ge.c (ref10), step for step, in the order of the
 * generator (crypto/asm/gen/gen_fe64_amd64.py, gen_ge_all), so that the
 * twins give the same limbs.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"

#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "fe64/ge64.h"
#include "fe64/ge64_table.h"
#include "wnaf.h"

#define MUL fe64_mul_generic
#define SQ fe64_sq_generic

void ge64_p1p1_to_p2_generic(ge64_p2 *r, const ge64_p1p1 *p)
{
	MUL(r->X.v, p->X.v, p->T.v);
	MUL(r->Y.v, p->Y.v, p->Z.v);
	MUL(r->Z.v, p->Z.v, p->T.v);
}

void ge64_p1p1_to_p3_generic(ge64_p3 *r, const ge64_p1p1 *p)
{
	MUL(r->X.v, p->X.v, p->T.v);
	MUL(r->Y.v, p->Y.v, p->Z.v);
	MUL(r->Z.v, p->Z.v, p->T.v);
	MUL(r->T.v, p->X.v, p->Y.v);
}

void ge64_p2_dbl_generic(ge64_p1p1 *r, const ge64_p2 *p)
{
	fe64 a, b, c, xy;
	SQ(a.v, p->X.v);            /* a = X^2 */
	SQ(b.v, p->Y.v);            /* b = Y^2 */
	SQ(c.v, p->Z.v);
	fe64_add(&c, &c, &c);       /* c = 2 Z^2 */
	fe64_add(&xy, &p->X, &p->Y);
	SQ(xy.v, xy.v);             /* (X + Y)^2 */
	fe64_add(&r->Y, &b, &a);    /* b + a */
	fe64_sub(&r->Z, &b, &a);    /* b - a */
	fe64_sub(&r->X, &xy, &r->Y);
	fe64_sub(&r->T, &c, &r->Z);
}

/* (r.X, r.Y, r.Z, r.T) = (b - a, b + a, d +- c, d -+ c) */
static inline void ge64_finish(ge64_p1p1 *r, const fe64 *a, const fe64 *b, const fe64 *c,
                               const fe64 *d, int minus)
{
	fe64_sub(&r->X, b, a);
	fe64_add(&r->Y, b, a);
	if (minus) { /* a constant of the caller */
		fe64_sub(&r->Z, d, c);
		fe64_add(&r->T, d, c);
	} else {
		fe64_add(&r->Z, d, c);
		fe64_sub(&r->T, d, c);
	}
}

static inline void ge64_madd_any(ge64_p1p1 *r, const ge64_p3 *p, const fe64 *m1, const fe64 *m2,
                                 const fe64 *xy2d, int minus)
{
	fe64 ypx, ymx, a, b, c, d;
	fe64_add(&ypx, &p->Y, &p->X);
	fe64_sub(&ymx, &p->Y, &p->X);
	MUL(a.v, ymx.v, m1->v);
	MUL(b.v, ypx.v, m2->v);
	MUL(c.v, xy2d->v, p->T.v);
	fe64_add(&d, &p->Z, &p->Z);
	ge64_finish(r, &a, &b, &c, &d, minus);
}

void ge64_madd_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q)
{
	ge64_madd_any(r, p, &q->yminusx, &q->yplusx, &q->xy2d, 0);
}

void ge64_msub_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q)
{
	ge64_madd_any(r, p, &q->yplusx, &q->yminusx, &q->xy2d, 1);
}

static inline void ge64_add_any(ge64_p1p1 *r, const ge64_p3 *p, const fe64 *m1, const fe64 *m2,
                                const ge64_cached *q, int minus)
{
	fe64 ypx, ymx, a, b, c, d;
	fe64_add(&ypx, &p->Y, &p->X);
	fe64_sub(&ymx, &p->Y, &p->X);
	MUL(a.v, ymx.v, m1->v);
	MUL(b.v, ypx.v, m2->v);
	MUL(c.v, q->T2d.v, p->T.v);
	MUL(d.v, q->Z.v, p->Z.v);
	fe64_add(&d, &d, &d);
	ge64_finish(r, &a, &b, &c, &d, minus);
}

void ge64_add_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q)
{
	ge64_add_any(r, p, &q->YminusX, &q->YplusX, q, 0);
}

void ge64_sub_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q)
{
	ge64_add_any(r, p, &q->YplusX, &q->YminusX, q, 1);
}

const ge64_ops ge64_ops_generic = {
	.p1p1_to_p2 = ge64_p1p1_to_p2_generic,
	.p1p1_to_p3 = ge64_p1p1_to_p3_generic,
	.p2_dbl = ge64_p2_dbl_generic,
	.madd = ge64_madd_generic,
	.msub = ge64_msub_generic,
	.add = ge64_add_generic,
	.sub = ge64_sub_generic,
	.fe = &fe64_ops_generic,
};

static void fe_to_fe64(fe64 *r, const fe *f)
{
	uint8_t s[32];
	fe_tobytes(s, f);
	fe64_frombytes(r, s);
	sigil_wipe(s, sizeof s);
}

static void fe64_to_fe(fe *r, const fe64 *f)
{
	uint8_t s[32];
	fe64_tobytes(s, f);
	fe_frombytes(r, s);
	sigil_wipe(s, sizeof s); /* may be a secret coordinate */
}

/* 2d in radix 2^64 (ge_d2 of ge.c). */
static void ge64_d2(fe64 *r)
{
	fe_to_fe64(r, &ge_d2);
}

void ge64_p3_to_cached(ge64_cached *r, const ge64_p3 *p, const fe64 *d2, const ge64_ops *ops)
{
	fe64_add(&r->YplusX, &p->Y, &p->X);
	fe64_sub(&r->YminusX, &p->Y, &p->X);
	r->Z = p->Z;
	ops->fe->mul(r->T2d.v, p->T.v, d2->v);
}

/* The odd multiples of wnaf.c on ge64_p3 / ge64_cached: ctx is a
 * ge64_wnaf_ctx. */
typedef struct ge64_wnaf_ctx {
	const ge64_ops *ops;
	const fe64 *d2;
} ge64_wnaf_ctx;

static void ge64_wnaf_dbl(void *r, const void *p, const void *ctx)
{
	const ge64_wnaf_ctx *c = ctx;
	const ge64_p3 *P = p;
	ge64_p2 q = { P->X, P->Y, P->Z };
	ge64_p1p1 t;
	c->ops->p2_dbl(&t, &q);
	c->ops->p1p1_to_p3(r, &t);
}

static void ge64_wnaf_add(void *r, const void *p, const void *q, const void *ctx)
{
	const ge64_wnaf_ctx *c = ctx;
	ge64_p1p1 t;
	c->ops->add(&t, p, q);
	c->ops->p1p1_to_p3(r, &t);
}

static void ge64_wnaf_to_cached(void *r, const void *p, const void *ctx)
{
	const ge64_wnaf_ctx *c = ctx;
	ge64_p3_to_cached(r, p, c->d2, c->ops);
}

static const wnaf_point_ops ge64_wnaf_ops = {
	.p3_size = sizeof(ge64_p3),
	.cached_size = sizeof(ge64_cached),
	.dbl = ge64_wnaf_dbl,
	.add = ge64_wnaf_add,
	.to_cached = ge64_wnaf_to_cached,
};

void ge64_odd_multiples_vartime(ge64_cached out[8], const ge64_p3 *p, const fe64 *d2,
                                const ge64_ops *ops)
{
	ge64_wnaf_ctx c = { ops, d2 };
	wnaf_odd_multiples_vartime(out, p, 8, &ge64_wnaf_ops, &c);
}

/* The chain of ge64_triple_scalarmult_vartime: digit i of every NAF
 * added to t (p1p1, doubled from the accumulator), u the p3 scratch. */
static void ge64_triple_digits(ge64_p1p1 *t, ge64_p3 *u, signed char (*naf)[WNAF_LEN], int i,
                               ge64_cached (*tab)[8], const ge64_ops *ops)
{
	static const ge64_precomp *const fixed[2] = { ge64_bi8, ge64_bi8_hi };
	for (int k = 0; k < 4; k++) {
		int dg = naf[k][i], j = (dg > 0 ? dg : -dg) / 2;
		if (dg == 0)
			continue;
		ops->p1p1_to_p3(u, t);
		if (k < 2)
			(dg > 0 ? ops->add : ops->sub)(t, u, &tab[k][j]);
		else
			(dg > 0 ? ops->madd : ops->msub)(t, u, &fixed[k - 2][j]);
	}
}

void ge64_triple_scalarmult_vartime(ge64_p3 *r, const uint8_t a0[32], const ge64_p3 *P0,
                                    const uint8_t a1[32], const ge64_p3 *P1, const uint8_t b[32],
                                    const ge64_ops *ops)
{
	/* naf[0], naf[1]: a0, a1 (width 5); naf[2], naf[3]: b mod 2^128 and
	 * b div 2^128 (width 8) */
	signed char naf[4][WNAF_LEN];
	uint8_t half[32] = { 0 };
	ge64_cached tab[2][8];
	const ge64_p3 *P[2] = { P0, P1 };
	const uint8_t *a[2] = { a0, a1 };
	ge64_p1p1 t;
	ge64_p3 u;
	ge64_p2 acc;
	fe64 d2;
	int i;

	ge64_d2(&d2);
	for (int k = 0; k < 2; k++) {
		wnaf_dense_vartime(naf[k], a[k], 5);
		ge64_odd_multiples_vartime(tab[k], P[k], &d2, ops);
	}
	memcpy(half, b, 16);
	wnaf_dense_vartime(naf[2], half, 8);
	memcpy(half, b + 16, 16);
	wnaf_dense_vartime(naf[3], half, 8);

	memset(&acc, 0, sizeof acc); /* the identity (0 : 1 : 1) */
	acc.Y.v[0] = 1;
	acc.Z.v[0] = 1;
	for (i = WNAF_LEN - 1; i > 0; i--)
		if (naf[0][i] | naf[1][i] | naf[2][i] | naf[3][i])
			break;
	for (; i > 0; i--) {
		ops->p2_dbl(&t, &acc);
		ge64_triple_digits(&t, &u, naf, i, tab, ops);
		ops->p1p1_to_p2(&acc, &t);
	}
	ops->p2_dbl(&t, &acc);
	ge64_triple_digits(&t, &u, naf, 0, tab, ops);
	ops->p1p1_to_p3(r, &t);
}

void ge64_scan_generic(ge64_precomp *t, const ge64_precomp *row, uint64_t n, int64_t b)
{
	uint64_t ub = (uint64_t)b;
	uint64_t mneg = ct_mask_u64(ub >> 63);           /* all ones if b < 0 */
	uint64_t babs = (ub ^ mneg) - mneg;               /* |b| */
	uint64_t p[4] = { 0 }, m[4] = { 0 };
	fe64 d = { { 0 } };

	for (uint64_t j = 0; j < n; j++) {
		uint64_t hit = ct_eq_u64(babs, j + 1);
		for (int k = 0; k < 4; k++) {
			p[k] |= hit & row[j].yplusx.v[k];
			m[k] |= hit & row[j].yminusx.v[k];
			d.v[k] |= hit & row[j].xy2d.v[k];
		}
	}
	uint64_t one = ct_iszero_u64(babs) & 1;
	p[0] |= one;
	m[0] |= one;
	ge64_precomp_cneg(t, p, m, &d, mneg);
}

/* e[i] in [-2^(W-1), 2^(W-1)) (the last in [0, 2^(W-1)]) with a = sum e[i]
 * 2^(W i): window i is bits W i .. W i + W - 1 of a, in [0, 2^W); adding
 * the carry gives [0, 2^W]; d >= 2^(W-1) becomes d - 2^W and carries 1.
 * The last window (bits from W (DIGITS - 1) up to 254, DIGITS = ceil(256 /
 * W)) holds at most 255 - W (DIGITS - 1) <= W - 1 bits: with the carry it
 * stays <= 2^(W-1), the last entry of a row, and is not recoded. Byte and
 * bit positions are public; the values only go through arithmetic. */
_Static_assert(GE64_COMB_W >= 2 && GE64_COMB_W <= 9, "a window spans at most two bytes");
_Static_assert(GE64_COMB_W * GE64_COMB_DIGITS >= 256, "the last digit fits a row");
_Static_assert(GE64_COMB_PASSES * GE64_COMB_ROWS >= GE64_COMB_DIGITS, "every digit has a row");

static void ge64_comb_digits(signed char e[GE64_COMB_DIGITS], const uint8_t a[32])
{
	const unsigned w = GE64_COMB_W, wmask = (1u << GE64_COMB_W) - 1;
	unsigned carry = 0;
	for (int i = 0; i < GE64_COMB_DIGITS; i++) {
		unsigned bit = w * (unsigned)i, v = 0;
		for (unsigned k = 0; k < 2 && bit / 8 + k < 32; k++)
			v |= (unsigned)a[bit / 8 + k] << (8 * k);
		v = ((v >> (bit % 8)) & wmask) + carry;
		if (i == GE64_COMB_DIGITS - 1) { /* public position */
			e[i] = (signed char)v;
			break;
		}
		carry = (v + (1u << (w - 1))) >> w;                /* 0 or 1 */
		e[i] = (signed char)((int)v - (int)(carry << w)); /* [-2^(W-1), 2^(W-1)) */
	}
}

/* a = sum e[i] 2^(W i) and ge64_comb[i][j - 1] = j 2^(W i) B: a B = sum
 * e[i] 2^(W i) B, each term one entry of row i, DIGITS - 1 mixed additions
 * after the first term. One pass (GE64_COMB_PASSES = 1): no doubling. The
 * top digit comes first: it is below 2^(255 - W (DIGITS - 1)) + 1
 * (a[31] <= 127), so its scan reads only GE64_COMB_TOP_N entries, and it
 * becomes the start point (ge64_precomp_to_p3); then row 0's scan (the
 * one other scan not woven into an addition), and the rows upward. */
#define GE64_COMB_TOP_N (1 << (255 - GE64_COMB_W * (GE64_COMB_DIGITS - 1)))
_Static_assert(GE64_COMB_PASSES == 1, "the comb has one pass");
_Static_assert(GE64_COMB_TOP_N <= GE64_COMB_N, "the top digit fits its row");

/* Builds without the amd64 assembly define none of these: weak references
 * (null there), compared with only; ge64_madd_scan_adx is called only when
 * the other two are what ops and scan hold, which such builds never have. */
#pragma weak ge64_madd_adx
#pragma weak ge64_scan_avx2
#pragma weak ge64_madd_scan_adx

_Static_assert(GE64_COMB_N == 64, "ge64_madd_scan_adx scans rows of 64 entries");

void ge64_madd_scan_generic(ge64_p3 *h, const ge64_precomp *row, const ge64_precomp *t, int64_t b,
                            ge64_precomp *tnext)
{
	ge64_p1p1 r;
	ge64_madd_generic(&r, h, t);
	ge64_scan_generic(tnext, row, GE64_COMB_N, b);
	ge64_p1p1_to_p3_generic(h, &r);
	sigil_wipe(&r, sizeof r);
}

/* 1/d in radix 2^64 (d = -121665/121666, RFC 8032 5.1), canonical:
 * T = 2xy of a comb entry from its 2dxy (ge64_precomp_to_p3). */
static const fe64 ge64_dinv = { { 0x25e0f276cdc9f843, 0x0b5dd6984279542e, 0x2b162114cdb9cf66,
                                  0x40907ed214d5ce43 } };

/* h = the entry t (y + x, y - x, 2dxy) as a p3 point with Z = 2: (2x, 2y,
 * 2, 2xy), the first addition of the comb to the identity replaced by two
 * subtractions and one product. */
static void ge64_precomp_to_p3(ge64_p3 *h, const ge64_precomp *t, const fe64_ops *fe)
{
	fe64_sub(&h->X, &t->yplusx, &t->yminusx);
	fe64_add(&h->Y, &t->yplusx, &t->yminusx);
	memset(&h->Z, 0, sizeof h->Z);
	h->Z.v[0] = 2;
	fe->mul(h->T.v, t->xy2d.v, ge64_dinv.v);
}

/* r = a B as the p1p1 result of the comb's last addition (the callers
 * convert only what they need: ge64_scalarmult_base_p3, ge64_base_encode,
 * ge64_base_mont_u). The first pass starts from its first entry
 * (ge64_precomp_to_p3), not from the identity. */
static void ge64_comb_p1p1(ge64_p1p1 *r, const uint8_t a[32], const ge64_ops *ops,
                           ge64_scan_fn *scan)
{
	signed char e[GE64_COMB_DIGITS];
	ge64_p3 H;
	ge64_precomp t[2];
	const int top = GE64_COMB_DIGITS - 1;
	/* the assembly's step with the next row's scan woven in, when ops and
	 * scan are the assembly's (a public choice of cpu.c) */
	int woven = ge64_madd_adx != NULL && ops->madd == ge64_madd_adx && scan == ge64_scan_avx2;

	ge64_comb_digits(e, a);

	scan(&t[0], ge64_comb[top], GE64_COMB_TOP_N, e[top]);
	ge64_precomp_to_p3(&H, &t[0], ops->fe);
	scan(&t[0], ge64_comb[0], GE64_COMB_N, e[0]);
	for (int i = 0, k = 0; i < top; i++, k ^= 1) {
		if (i + 1 < top) {
			if (woven) {
				ge64_madd_scan_adx(&H, ge64_comb[i + 1], &t[k], e[i + 1], &t[k ^ 1]);
				continue;
			}
			ops->madd(r, &H, &t[k]);
			scan(&t[k ^ 1], ge64_comb[i + 1], GE64_COMB_N, e[i + 1]);
			ops->p1p1_to_p3(&H, r);
		} else {
			ops->madd(r, &H, &t[k]); /* the result, left in p1p1 */
		}
	}

	if (scan == ge64_scan_avx2)
		ge64_scan_asm_scrub(); /* the vector registers: the last selected entry */
	sigil_wipe(e, sizeof e);
	sigil_wipe(&H, sizeof H);
	sigil_wipe(t, sizeof t);
}

void ge64_scalarmult_base_p3(ge64_p3 *h, const uint8_t a[32], const ge64_ops *ops,
                             ge64_scan_fn *scan)
{
	ge64_p1p1 r;
	ge64_comb_p1p1(&r, a, ops, scan);
	ops->p1p1_to_p3(h, &r);
	sigil_wipe(&r, sizeof r);
}

void ge64_scalarmult_base_scan(ge_p3 *h, const uint8_t a[32], const ge64_ops *ops,
                               ge64_scan_fn *scan)
{
	ge64_p3 H;
	ge64_scalarmult_base_p3(&H, a, ops, scan);
	fe64_to_fe(&h->X, &H.X);
	fe64_to_fe(&h->Y, &H.Y);
	fe64_to_fe(&h->Z, &H.Z);
	fe64_to_fe(&h->T, &H.T);
	sigil_wipe(&H, sizeof H);
}

void ge64_base_encode(uint8_t s[32], const uint8_t a[32], const ge64_ops *ops, ge64_scan_fn *scan)
{
	ge64_p1p1 r;
	ge64_p2 H;
	fe64 zi, x, y;

	ge64_comb_p1p1(&r, a, ops, scan);
	ops->p1p1_to_p2(&H, &r); /* T is not needed */
	fe64_invert(&zi, &H.Z);
	ops->fe->mul(x.v, H.X.v, zi.v);
	ops->fe->mul(y.v, H.Y.v, zi.v);
	fe64_canonical(&x, &x);
	fe64_tobytes(s, &y); /* y < p < 2^255: bit 255 is free */
	s[31] |= (uint8_t)((x.v[0] & 1) << 7);

	sigil_wipe(&r, sizeof r);
	sigil_wipe(&H, sizeof H);
	sigil_wipe(&zi, sizeof zi);
	sigil_wipe(&x, sizeof x);
	sigil_wipe(&y, sizeof y);
}

/* From the p1p1 (X, Y, Z, T) of the last addition, whose p2 is (X T, Y Z,
 * Z T): u = (Z T + Y Z) / (Z T - Y Z) = (T + Y) / (T - Y), no product
 * before the inversion. */
void ge64_base_mont_u(uint8_t u[32], const uint8_t a[32], const ge64_ops *ops, ge64_scan_fn *scan)
{
	ge64_p1p1 r;
	fe64 n, dd;

	ge64_comb_p1p1(&r, a, ops, scan);
	fe64_add(&n, &r.T, &r.Y);  /* T + Y */
	fe64_sub(&dd, &r.T, &r.Y); /* T - Y */
	fe64_invert(&dd, &dd);
	ops->fe->mul(n.v, n.v, dd.v);
	fe64_tobytes(u, &n);

	sigil_wipe(&r, sizeof r);
	sigil_wipe(&n, sizeof n);
	sigil_wipe(&dd, sizeof dd);
}
