/* SPDX-License-Identifier: MIT */
/*
 * fe.c - the "machine" operations of GF(2^255 - 19) in radix 2^51:
 * multiplication, squaring, carries, the byte codecs, cmov/cswap.
 * Operations built from these (invert, pow22523, sqrt_ratio) are in
 * fe_pow.c. Representation, bounds and contracts: fe.h.
 *
 * Every function is constant time: straight-line code or loops with fixed
 * bounds, selections by masks (ct.h), no table index from data.
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "ct.h"
#include "ref51/fe.h"

typedef unsigned __int128 u128;

/* Bound assertions (builds without NDEBUG). The bounds hold for every
 * input by the derivations noted on each operation, so the outcome of the
 * check reveals nothing about the value: it is declassified before assert
 * branches on it (ctgrind would otherwise report the branch). */
#ifdef NDEBUG
#define ASSERT_TIGHT(f) ((void)(f))
#define ASSERT_LOOSE(f) ((void)(f))
#else
#define ASSERT_BOUND(pred, f)                      \
	do {                                       \
		int ok_ = pred(f);                 \
		CT_DECLASSIFY(&ok_, sizeof ok_);   \
		assert(ok_);                       \
	} while (0)
#define ASSERT_TIGHT(f) ASSERT_BOUND(fe_bounds_ok_tight, f)
#define ASSERT_LOOSE(f) ASSERT_BOUND(fe_bounds_ok_loose, f)
#endif

/* 4p in radix 2^51: limb 0 = 4 * (2^51 - 19), limbs 1..4 = 4 * (2^51 - 1).
 * Each limb of 4p is >= 2^53 - 76 > 2^52 > any tight limb, so f + 4p - g
 * never goes negative limb-wise. */
#define FOUR_P0 ((uint64_t)0x1fffffffffffb4) /* 2^53 - 76 */
#define FOUR_PN ((uint64_t)0x1ffffffffffffc) /* 2^53 - 4 */

/* OR of the limbs, shifted: zero iff every limb is below the bound. */
int fe_bounds_ok_tight(const fe *f)
{
	uint64_t any = f->v[0] | f->v[1] | f->v[2] | f->v[3] | f->v[4];
	return (int)((any >> 52) == 0);
}

int fe_bounds_ok_loose(const fe_loose *f)
{
	uint64_t any = f->v[0] | f->v[1] | f->v[2] | f->v[3] | f->v[4];
	return (int)((any >> 54) == 0);
}

/* The final carry of mul and sq, on the five 128-bit column sums.
 * Precondition: r[i] < 2^115 (mul/sq of limbs < 2^54 give < 77 * 2^108
 * < 2^114.3). Output: h[i] < 2^51, except h[1] < 2^51 + 2^17. */
static inline void fe_carry_wide(uint64_t h[5], u128 r0, u128 r1, u128 r2, u128 r3, u128 r4)
{
	uint64_t h0, h1, h2, h3, h4;
	r1 += (uint64_t)(r0 >> 51);  /* r0 >> 51 < 2^64: r1 < 2^115 */
	h0 = (uint64_t)r0 & FE_MASK51; /* h0 < 2^51 */
	r2 += (uint64_t)(r1 >> 51);
	h1 = (uint64_t)r1 & FE_MASK51; /* h1 < 2^51 */
	r3 += (uint64_t)(r2 >> 51);
	h2 = (uint64_t)r2 & FE_MASK51; /* h2 < 2^51 */
	r4 += (uint64_t)(r3 >> 51);
	h3 = (uint64_t)r3 & FE_MASK51; /* h3 < 2^51 */
	uint64_t c = (uint64_t)(r4 >> 51); /* c < 2^64 */
	h4 = (uint64_t)r4 & FE_MASK51;      /* h4 < 2^51 */
	/* 2^255 = 19 mod p: fold c back into limb 0. */
	u128 t = (u128)c * 19 + h0;         /* t < 2^69 */
	h0 = (uint64_t)t & FE_MASK51;       /* h0 < 2^51 */
	h1 += (uint64_t)(t >> 51);          /* h1 < 2^51 + 2^18 */
	h[0] = h0;
	h[1] = h1;
	h[2] = h2;
	h[3] = h3;
	h[4] = h4;
}

/* h = f * g mod p. Schoolbook on 5 limbs; a product column i gathers
 * f_j g_k with j + k = i, plus 19 f_j g_k with j + k = i + 5 (2^255 = 19).
 * Inputs < 2^54: 19 g_k < 2^59, each column < (1 + 4*19) 2^108 < 2^115. */
void fe_mul_generic(uint64_t h[5], const uint64_t f[5], const uint64_t g[5])
{
	uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
	uint64_t g0 = g[0], g1 = g[1], g2 = g[2], g3 = g[3], g4 = g[4];
	uint64_t g1_19 = g1 * 19, g2_19 = g2 * 19, g3_19 = g3 * 19, g4_19 = g4 * 19;

	u128 r0 = (u128)f0 * g0 + (u128)f1 * g4_19 + (u128)f2 * g3_19 + (u128)f3 * g2_19 +
	          (u128)f4 * g1_19;
	u128 r1 = (u128)f0 * g1 + (u128)f1 * g0 + (u128)f2 * g4_19 + (u128)f3 * g3_19 +
	          (u128)f4 * g2_19;
	u128 r2 = (u128)f0 * g2 + (u128)f1 * g1 + (u128)f2 * g0 + (u128)f3 * g4_19 +
	          (u128)f4 * g3_19;
	u128 r3 = (u128)f0 * g3 + (u128)f1 * g2 + (u128)f2 * g1 + (u128)f3 * g0 +
	          (u128)f4 * g4_19;
	u128 r4 = (u128)f0 * g4 + (u128)f1 * g3 + (u128)f2 * g2 + (u128)f3 * g1 +
	          (u128)f4 * g0;
	fe_carry_wide(h, r0, r1, r2, r3, r4);
}

/* h = f^2 mod p: the products f_j f_k (j != k) appear twice. Inputs < 2^54:
 * 38 f_k < 2^60, each column < 77 * 2^108 < 2^115. */
void fe_sq_generic(uint64_t h[5], const uint64_t f[5])
{
	uint64_t f0 = f[0], f1 = f[1], f2 = f[2], f3 = f[3], f4 = f[4];
	uint64_t f0_2 = f0 * 2, f1_2 = f1 * 2;
	uint64_t f1_38 = f1 * 38, f2_38 = f2 * 38, f3_38 = f3 * 38;
	uint64_t f3_19 = f3 * 19, f4_19 = f4 * 19;

	u128 r0 = (u128)f0 * f0 + (u128)f1_38 * f4 + (u128)f2_38 * f3;
	u128 r1 = (u128)f0_2 * f1 + (u128)f2_38 * f4 + (u128)f3_19 * f3;
	u128 r2 = (u128)f0_2 * f2 + (u128)f1 * f1 + (u128)f3_38 * f4;
	u128 r3 = (u128)f0_2 * f3 + (u128)f1_2 * f2 + (u128)f4_19 * f4;
	u128 r4 = (u128)f0_2 * f4 + (u128)f1_2 * f3 + (u128)f2 * f2;
	fe_carry_wide(h, r0, r1, r2, r3, r4);
}

void fe_0(fe *h)
{
	memset(h, 0, sizeof *h);
}

void fe_1(fe *h)
{
	memset(h, 0, sizeof *h);
	h->v[0] = 1;
}

void fe_copy(fe *h, const fe *f)
{
	memmove(h, f, sizeof *h);
}

void fe_copy_lt(fe_loose *h, const fe *f)
{
	ASSERT_TIGHT(f);
	memmove(h->v, f->v, sizeof h->v);
}

static inline uint64_t fe_load64_le(const uint8_t *s)
{
	uint64_t r = 0;
	for (int i = 7; i >= 0; i--)
		r = (r << 8) | s[i];
	return r;
}

/* Bits 51 i .. 51 i + 50 of s: limb i starts at byte 51i/8, bit 51i%8.
 * The last limb takes bits 204..254, bit 255 is dropped. */
void fe_frombytes(fe *h, const uint8_t s[32])
{
	uint64_t l0 = fe_load64_le(s) & FE_MASK51;            /* bits 0..50 */
	uint64_t l1 = (fe_load64_le(s + 6) >> 3) & FE_MASK51;  /* bits 51..101 */
	uint64_t l2 = (fe_load64_le(s + 12) >> 6) & FE_MASK51; /* bits 102..152 */
	uint64_t l3 = (fe_load64_le(s + 19) >> 1) & FE_MASK51; /* bits 153..203 */
	uint64_t l4 = (fe_load64_le(s + 24) >> 12) & FE_MASK51; /* bits 204..254 */
	h->v[0] = l0;
	h->v[1] = l1;
	h->v[2] = l2;
	h->v[3] = l3;
	h->v[4] = l4;
}

/* A light carry: l_i < 2^64 in, then l_0 < 2^51 + 19 * 2^13,
 * l_i < 2^51 + 2^13 (i >= 1) out. Value unchanged mod p. */
static inline void fe_carry_limbs(uint64_t l[5])
{
	uint64_t c0 = l[0] >> 51, c1 = l[1] >> 51, c2 = l[2] >> 51, c3 = l[3] >> 51,
	         c4 = l[4] >> 51;                /* c_i < 2^13 */
	l[0] = (l[0] & FE_MASK51) + c4 * 19;     /* < 2^51 + 19 * 2^13 */
	l[1] = (l[1] & FE_MASK51) + c0;          /* < 2^51 + 2^13 */
	l[2] = (l[2] & FE_MASK51) + c1;
	l[3] = (l[3] & FE_MASK51) + c2;
	l[4] = (l[4] & FE_MASK51) + c3;
}

/* Canonical encoding. After a light carry the top limb is < 2^51 + 2^13,
 * so v < 2^255 + 2^218 < 2p. q = floor((v + 19) / 2^255), computed by the
 * carry chain of v + 19, is 1 iff v >= p. Then v - q p = v + 19 q - q 2^255:
 * add 19 q, carry, and drop bit 255; the result is in [0, p). */
void fe_tobytes(uint8_t s[32], const fe *h)
{
	ASSERT_TIGHT(h);
	uint64_t l[5];
	memcpy(l, h->v, sizeof l);
	fe_carry_limbs(l);

	uint64_t q = (l[0] + 19) >> 51; /* the carry chain of v + 19 */
	q = (l[1] + q) >> 51;
	q = (l[2] + q) >> 51;
	q = (l[3] + q) >> 51;
	q = (l[4] + q) >> 51; /* q in {0, 1}: 1 iff v >= p */

	l[0] += 19 * q;
	l[1] += l[0] >> 51; /* carries < 2^2 */
	l[0] &= FE_MASK51;
	l[2] += l[1] >> 51;
	l[1] &= FE_MASK51;
	l[3] += l[2] >> 51;
	l[2] &= FE_MASK51;
	l[4] += l[3] >> 51;
	l[3] &= FE_MASK51;
	l[4] &= FE_MASK51; /* drops q 2^255 */

	/* Pack 5 x 51 bits into 4 x 64 bits, little-endian bytes. */
	uint64_t w[4];
	w[0] = l[0] | (l[1] << 51);
	w[1] = (l[1] >> 13) | (l[2] << 38);
	w[2] = (l[2] >> 26) | (l[3] << 25);
	w[3] = (l[3] >> 39) | (l[4] << 12);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			s[8 * i + j] = (uint8_t)(w[i] >> (8 * j));
}

void fe_add(fe_loose *h, const fe *f, const fe *g)
{
	ASSERT_TIGHT(f);
	ASSERT_TIGHT(g);
	for (int i = 0; i < 5; i++)
		h->v[i] = f->v[i] + g->v[i]; /* < 2^53 */
	ASSERT_LOOSE(h);
}

void fe_sub(fe_loose *h, const fe *f, const fe *g)
{
	ASSERT_TIGHT(f);
	ASSERT_TIGHT(g);
	uint64_t g0 = g->v[0], g1 = g->v[1], g2 = g->v[2], g3 = g->v[3], g4 = g->v[4];
	h->v[0] = (f->v[0] + FOUR_P0) - g0; /* < 2^52 + 2^53 */
	h->v[1] = (f->v[1] + FOUR_PN) - g1;
	h->v[2] = (f->v[2] + FOUR_PN) - g2;
	h->v[3] = (f->v[3] + FOUR_PN) - g3;
	h->v[4] = (f->v[4] + FOUR_PN) - g4;
	ASSERT_LOOSE(h);
}

void fe_neg(fe_loose *h, const fe *f)
{
	ASSERT_TIGHT(f);
	h->v[0] = FOUR_P0 - f->v[0]; /* < 2^53 */
	h->v[1] = FOUR_PN - f->v[1];
	h->v[2] = FOUR_PN - f->v[2];
	h->v[3] = FOUR_PN - f->v[3];
	h->v[4] = FOUR_PN - f->v[4];
	ASSERT_LOOSE(h);
}

/* Loose limbs < 2^54: carries c_i < 2^3, limb 0 < 2^51 + 19 * 2^3,
 * others < 2^51 + 2^3. */
void fe_carry(fe *h, const fe_loose *f)
{
	ASSERT_LOOSE(f);
	uint64_t l[5];
	memcpy(l, f->v, sizeof l);
	fe_carry_limbs(l);
	memcpy(h->v, l, sizeof l);
	ASSERT_TIGHT(h);
}

void fe_mul_ttt(fe *h, const fe *f, const fe *g)
{
	ASSERT_TIGHT(f);
	ASSERT_TIGHT(g);
	fe_mul_generic(h->v, f->v, g->v);
	ASSERT_TIGHT(h);
}

void fe_mul_tlt(fe *h, const fe_loose *f, const fe *g)
{
	ASSERT_LOOSE(f);
	ASSERT_TIGHT(g);
	fe_mul_generic(h->v, f->v, g->v);
	ASSERT_TIGHT(h);
}

void fe_mul_tll(fe *h, const fe_loose *f, const fe_loose *g)
{
	ASSERT_LOOSE(f);
	ASSERT_LOOSE(g);
	fe_mul_generic(h->v, f->v, g->v);
	ASSERT_TIGHT(h);
}

void fe_sq_tt(fe *h, const fe *f)
{
	ASSERT_TIGHT(f);
	fe_sq_generic(h->v, f->v);
	ASSERT_TIGHT(h);
}

void fe_sq_tl(fe *h, const fe_loose *f)
{
	ASSERT_LOOSE(f);
	fe_sq_generic(h->v, f->v);
	ASSERT_TIGHT(h);
}

/* 2 f^2: square (limbs < 2^51 + 2^18), double (< 2^53), carry. */
void fe_sq2_tt(fe *h, const fe *f)
{
	ASSERT_TIGHT(f);
	uint64_t l[5];
	fe_sq_generic(l, f->v);
	for (int i = 0; i < 5; i++)
		l[i] <<= 1;
	fe_carry_limbs(l);
	memcpy(h->v, l, sizeof l);
	ASSERT_TIGHT(h);
}

/* f limbs < 2^52, 121666 < 2^17: products < 2^69 in 128 bits. */
void fe_mul121666(fe *h, const fe *f)
{
	ASSERT_TIGHT(f);
	u128 r0 = (u128)f->v[0] * 121666;
	u128 r1 = (u128)f->v[1] * 121666;
	u128 r2 = (u128)f->v[2] * 121666;
	u128 r3 = (u128)f->v[3] * 121666;
	u128 r4 = (u128)f->v[4] * 121666;
	fe_carry_wide(h->v, r0, r1, r2, r3, r4);
	ASSERT_TIGHT(h);
}

void fe_cmov(fe *f, const fe *g, uint64_t bit)
{
	uint64_t mask = ct_mask_u64(bit);
	for (int i = 0; i < 5; i++)
		f->v[i] ^= mask & (f->v[i] ^ g->v[i]);
}

void fe_cswap(fe *f, fe *g, uint64_t bit)
{
	uint64_t mask = ct_mask_u64(bit);
	for (int i = 0; i < 5; i++) {
		uint64_t x = mask & (f->v[i] ^ g->v[i]);
		f->v[i] ^= x;
		g->v[i] ^= x;
	}
}

void fe_cneg(fe *f, uint64_t bit)
{
	fe_loose nl;
	fe n;
	fe_neg(&nl, f);
	fe_carry(&n, &nl);
	fe_cmov(f, &n, bit);
}

void fe_abs(fe *h, const fe *f)
{
	fe t;
	fe_copy(&t, f);
	fe_cneg(&t, (uint64_t)fe_isnegative(&t));
	fe_copy(h, &t);
}

int fe_isnegative(const fe *f)
{
	uint8_t s[32];
	fe_tobytes(s, f);
	return s[0] & 1;
}

int fe_iszero(const fe *f)
{
	uint8_t s[32];
	uint8_t acc = 0;
	fe_tobytes(s, f);
	for (int i = 0; i < 32; i++)
		acc |= s[i];
	return (int)(ct_nonzero_u64(acc) ^ 1);
}

int fe_equal(const fe *f, const fe *g)
{
	uint8_t a[32], b[32];
	fe_tobytes(a, f);
	fe_tobytes(b, g);
	return (int)(ct_neq_bytes(a, b, 32) ^ 1);
}
