/* SPDX-License-Identifier: MIT */
/*
 * fe64.c - the portable C twins of the fe64 assembly (mul, sq) and the
 * fe64 operations that have no assembly (codecs, the (p - 5) / 8 power,
 * the inversion on ref51/fe_inv.c's binary GCD). Contracts and
 * representation: fe64.h. The method of mul and sq is the one of
 * crypto/asm/gen/gen_fe64_amd64.py, step for step, so that both give the
 * same limbs (tests/asm compares them).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "fe64/fe64.h"
#include "ref51/fe.h"

typedef fe64_u128 u128;

/* Steps 2 and 3 of the method: t[0..7] (the 512-bit product) -> h.
 * s = (t0..t3) + 38 (t4..t7) = (s0..s3) + c 2^256 with c <= 38; then
 * s + 38 c carries out c' in {0, 1}; c' = 1 leaves s < 38 * 39, so
 * s0 + 38 c' does not carry. */
/* Step 2: s = (t0..t3) + 38 (t4..t7) in s[0..3], the carry c <= 38 returned. */
static inline uint64_t fe64_fold38(uint64_t s[4], const uint64_t t[8])
{
	u128 a = 0;
	for (int i = 0; i < 4; i++) {
		a = (a >> 64) + (u128)t[4 + i] * 38 + t[i];
		s[i] = (uint64_t)a;
	}
	return (uint64_t)(a >> 64);
}

static inline void fe64_reduce(uint64_t h[4], const uint64_t t[8])
{
	uint64_t s[4];
	uint64_t c = fe64_fold38(s, t); /* <= 38 */
	uint64_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3];
	u128 a = (u128)s0 + 38 * c;
	s0 = (uint64_t)a;
	a = (a >> 64) + s1;
	s1 = (uint64_t)a;
	a = (a >> 64) + s2;
	s2 = (uint64_t)a;
	a = (a >> 64) + s3;
	s3 = (uint64_t)a;
	c = (uint64_t)(a >> 64); /* c' */
	h[0] = s0 + 38 * c;
	h[1] = s1;
	h[2] = s2;
	h[3] = s3;
}

/* Step 3 of the ladder's lazy reduction (reduce255_tail of the generator):
 * from s and c < 2^18 (the carry above 2^256), with 2^255 = 19 (mod p):
 * k = 2 c + bit 255 of s, h = (s mod 2^255) + 19 k < 2^255 + 2^24, in one
 * pass (no carry out of s3 < 2^63). c <= 38 (a product) leaves
 * h < 2^255 + 1463 < FE64_LAZY_BOUND. */
static inline void fe64_reduce255_tail(uint64_t h[4], const uint64_t s[4], uint64_t c)
{
	uint64_t k = 2 * c + (s[3] >> 63);
	u128 a = (u128)s[0] + 19 * k;
	h[0] = (uint64_t)a;
	a = (a >> 64) + s[1];
	h[1] = (uint64_t)a;
	a = (a >> 64) + s[2];
	h[2] = (uint64_t)a;
	h[3] = (uint64_t)(a >> 64) + (s[3] & 0x7fffffffffffffff);
}

static inline void fe64_mul_wide(uint64_t t[8], const uint64_t f[4], const uint64_t g[4]);
static inline void fe64_sq_wide(uint64_t t[8], const uint64_t f[4]);

void fe64_mul_generic(uint64_t h[4], const uint64_t f[4], const uint64_t g[4])
{
	uint64_t t[8];
	fe64_mul_wide(t, f, g);
	fe64_reduce(h, t);
}

void fe64_sq_generic(uint64_t h[4], const uint64_t f[4])
{
	uint64_t t[8];
	fe64_sq_wide(t, f);
	fe64_reduce(h, t);
}

/* Schoolbook 4x4: t = sum f_i g_j 2^(64(i+j)), row by row. */
static inline void fe64_mul_wide(uint64_t t[8], const uint64_t f[4], const uint64_t g[4])
{
	memset(t, 0, 8 * sizeof t[0]);
	for (int i = 0; i < 4; i++) {
		u128 carry = 0;
		for (int j = 0; j < 4; j++) {
			carry += (u128)f[i] * g[j] + t[i + j];
			t[i + j] = (uint64_t)carry;
			carry >>= 64;
		}
		t[i + 4] = (uint64_t)carry;
	}
}

/* f^2 = 2 sum_{i<j} f_i f_j 2^(64(i+j)) + sum f_i^2 2^(128 i). */
static inline void fe64_sq_wide(uint64_t t[8], const uint64_t f[4])
{
	memset(t, 0, 8 * sizeof t[0]);
	/* cross products */
	for (int i = 0; i < 3; i++) {
		u128 carry = 0;
		for (int j = i + 1; j < 4; j++) {
			carry += (u128)f[i] * f[j] + t[i + j];
			t[i + j] = (uint64_t)carry;
			carry >>= 64;
		}
		t[i + 4] = (uint64_t)carry;
	}
	/* doubled: t7 takes the bit shifted out of t6 */
	t[7] = t[6] >> 63;
	for (int k = 6; k > 0; k--)
		t[k] = (t[k] << 1) | (t[k - 1] >> 63);
	/* t1 got t0 >> 63 = 0: t0 is 0 so far */
	/* plus the squares */
	u128 carry = 0;
	for (int i = 0; i < 4; i++) {
		u128 sq = (u128)f[i] * f[i];
		carry += (u128)t[2 * i] + (uint64_t)sq;
		t[2 * i] = (uint64_t)carry;
		carry >>= 64;
		carry += (u128)t[2 * i + 1] + (uint64_t)(sq >> 64);
		t[2 * i + 1] = (uint64_t)carry;
		carry >>= 64;
	}
}

/* The offsets the assembly uses (LADDER_FIELDS of the generator). */
_Static_assert(offsetof(fe64_ladder, x1) == 0 && offsetof(fe64_ladder, x2) == 32 &&
                       offsetof(fe64_ladder, z2) == 64 && offsetof(fe64_ladder, x3) == 96 &&
                       offsetof(fe64_ladder, z3) == 128 && offsetof(fe64_ladder, a) == 160 &&
                       offsetof(fe64_ladder, b) == 192 && offsetof(fe64_ladder, c) == 224 &&
                       offsetof(fe64_ladder, d) == 256 && offsetof(fe64_ladder, aa) == 288 &&
                       offsetof(fe64_ladder, bb) == 320 && offsetof(fe64_ladder, e) == 352 &&
                       offsetof(fe64_ladder, da) == 384 && offsetof(fe64_ladder, cb) == 416 &&
                       offsetof(fe64_ladder, t) == 448 && sizeof(fe64_ladder) == 480,
               "fe64_ladder layout differs from crypto/asm/gen/gen_fe64_amd64.py");

void fe64_ladder_step_generic(fe64_ladder *st)
{
	fe64_add(&st->a, &st->x2, &st->z2);           /* A = x2 + z2 */
	fe64_sub(&st->b, &st->x2, &st->z2);           /* B = x2 - z2 */
	fe64_add(&st->c, &st->x3, &st->z3);           /* C = x3 + z3 */
	fe64_sub(&st->d, &st->x3, &st->z3);           /* D = x3 - z3 */
	fe64_sq_generic(st->aa.v, st->a.v);           /* AA = A^2 */
	fe64_sq_generic(st->bb.v, st->b.v);           /* BB = B^2 */
	fe64_mul_generic(st->da.v, st->d.v, st->a.v); /* DA = D A */
	fe64_mul_generic(st->cb.v, st->c.v, st->b.v); /* CB = C B */
	fe64_sub(&st->e, &st->aa, &st->bb);           /* E = AA - BB */
	fe64_add(&st->t, &st->da, &st->cb);
	fe64_sq_generic(st->x3.v, st->t.v);           /* x3 = (DA + CB)^2 */
	fe64_sub(&st->t, &st->da, &st->cb);
	fe64_sq_generic(st->t.v, st->t.v);
	fe64_mul_generic(st->z3.v, st->t.v, st->x1.v); /* z3 = x1 (DA - CB)^2 */
	fe64_mul_generic(st->x2.v, st->aa.v, st->bb.v); /* x2 = AA BB */
	fe64_mul121666(&st->t, &st->e);
	fe64_add(&st->t, &st->bb, &st->t);            /* BB + 121666 E */
	fe64_mul_generic(st->z2.v, st->t.v, st->e.v); /* z2 = E (AA + a24 E) */
}

/* The lazy reduction of fe64_ladder_bits_* (fe64.h): products and squares
 * below FE64_LAZY_BOUND, sums and differences of them with one fold. */
static inline void fe64_mul_lazy(fe64 *h, const fe64 *f, const fe64 *g)
{
	uint64_t t[8], s[4];
	fe64_mul_wide(t, f->v, g->v);
	uint64_t c = fe64_fold38(s, t);
	fe64_reduce255_tail(h->v, s, c);
}

static inline void fe64_sq_lazy(fe64 *h, const fe64 *f)
{
	uint64_t t[8], s[4];
	fe64_sq_wide(t, f->v);
	uint64_t c = fe64_fold38(s, t);
	fe64_reduce255_tail(h->v, s, c);
}

/* h = f + g, f and g < FE64_LAZY_BOUND: (s, c) = f + g, h = s + 38 c, which
 * does not carry (c = 1 leaves s < 2 FE64_LAZY_BOUND - 2^256 = 2^12);
 * h < 2^256. */
static inline void fe64_add_lazy(fe64 *h, const fe64 *f, const fe64 *g)
{
	u128 a = 0;
	uint64_t s[4];
	for (int i = 0; i < 4; i++) {
		a = (a >> 64) + f->v[i] + g->v[i];
		s[i] = (uint64_t)a;
	}
	a = (u128)s[0] + 38 * (uint64_t)(a >> 64);
	for (int i = 0; i < 4; i++) {
		h->v[i] = (uint64_t)a;
		a = (a >> 64) + (i < 3 ? s[i + 1] : 0);
	}
}

/* h = f - g, f < 2^256, g < FE64_LAZY_BOUND: (s, b) = f - g with the borrow
 * b, h = s - 38 b, which does not borrow (b = 1 leaves
 * s > 2^256 - FE64_LAZY_BOUND > 38); h < 2^256. */
static inline void fe64_sub_lazy(fe64 *h, const fe64 *f, const fe64 *g)
{
	u128 a = 0;
	uint64_t s[4];
	for (int i = 0; i < 4; i++) {
		a = (u128)f->v[i] - g->v[i] - (uint64_t)((a >> 64) & 1);
		s[i] = (uint64_t)a;
	}
	a = (u128)s[0] - 38 * (uint64_t)((a >> 64) & 1);
	for (int i = 0; i < 4; i++) {
		h->v[i] = (uint64_t)a;
		a = (i < 3 ? (u128)s[i + 1] : 0) - (uint64_t)((a >> 64) & 1);
	}
}

/* h = BB + 121666 E (mod p), mul121666_add_body of the generator:
 * (s, c) = 121666 E + BB with c < 2^18, then fe64_reduce255_tail:
 * h < 2^255 + 2^24 (a factor of z2 only). */
static inline void fe64_mul121666_add_lazy(fe64 *h, const fe64 *e, const fe64 *bb)
{
	u128 a = 0;
	uint64_t s[4];
	for (int i = 0; i < 4; i++) {
		a = (a >> 64) + (u128)e->v[i] * 121666 + bb->v[i];
		s[i] = (uint64_t)a;
	}
	fe64_reduce255_tail(h->v, s, (uint64_t)(a >> 64));
}

/* The step of fe64_ladder_bits_*: fe64_ladder_step_generic's with the lazy
 * reduction; x2, z2, x3, z3 < FE64_LAZY_BOUND in and out. */
static void fe64_ladder_step_lazy(fe64_ladder *st)
{
	fe64_add_lazy(&st->a, &st->x2, &st->z2);         /* A = x2 + z2 */
	fe64_sub_lazy(&st->b, &st->x2, &st->z2);         /* B = x2 - z2 */
	fe64_add_lazy(&st->c, &st->x3, &st->z3);         /* C = x3 + z3 */
	fe64_sub_lazy(&st->d, &st->x3, &st->z3);         /* D = x3 - z3 */
	fe64_sq_lazy(&st->aa, &st->a);                   /* AA = A^2 */
	fe64_sq_lazy(&st->bb, &st->b);                   /* BB = B^2 */
	fe64_mul_lazy(&st->da, &st->d, &st->a);          /* DA = D A */
	fe64_mul_lazy(&st->cb, &st->c, &st->b);          /* CB = C B */
	fe64_sub_lazy(&st->e, &st->aa, &st->bb);         /* E = AA - BB */
	fe64_mul121666_add_lazy(&st->t, &st->e, &st->bb); /* BB + 121666 E */
	fe64_mul_lazy(&st->z2, &st->t, &st->e);          /* z2 = E (BB + 121666 E) */
	fe64_mul_lazy(&st->x2, &st->aa, &st->bb);        /* x2 = AA BB */
	fe64_add_lazy(&st->t, &st->da, &st->cb);
	fe64_sq_lazy(&st->x3, &st->t);                   /* x3 = (DA + CB)^2 */
	fe64_sub_lazy(&st->t, &st->da, &st->cb);
	fe64_sq_lazy(&st->t, &st->t);
	fe64_mul_lazy(&st->z3, &st->t, &st->x1);         /* z3 = x1 (DA - CB)^2 */
}

uint64_t fe64_ladder_bits_generic(fe64_ladder *st, uint64_t w, uint64_t n, uint64_t swap)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t bit = w >> 63;
		w <<= 1;
		uint64_t mask = ct_mask_u64(swap ^ bit);
		fe64_cswap(&st->x2, &st->x3, mask);
		fe64_cswap(&st->z2, &st->z3, mask);
		swap = bit;
		fe64_ladder_step_lazy(st);
	}
	return swap;
}

const fe64_ops fe64_ops_generic = {
	.mul = fe64_mul_generic,
	.sq = fe64_sq_generic,
	.ladder_step = fe64_ladder_step_generic,
	.sq_n = NULL,
	.name = "generic",
};

static inline uint64_t fe64_load64_le(const uint8_t *s)
{
	uint64_t r = 0;
	for (int i = 7; i >= 0; i--)
		r = (r << 8) | s[i];
	return r;
}

void fe64_frombytes(fe64 *h, const uint8_t s[32])
{
	h->v[0] = fe64_load64_le(s);
	h->v[1] = fe64_load64_le(s + 8);
	h->v[2] = fe64_load64_le(s + 16);
	h->v[3] = fe64_load64_le(s + 24) & 0x7fffffffffffffff; /* bit 255 ignored */
}

/* v < 2^256. First v = (v mod 2^255) + 19 (v >> 255) < 2^255 + 19 < 2p.
 * Then v >= p iff v + 19 >= 2^255; in that case the answer is v + 19 -
 * 2^255 = v - p, taken by mask. */
void fe64_canonical(fe64 *r, const fe64 *h)
{
	uint64_t v0 = h->v[0], v1 = h->v[1], v2 = h->v[2], v3 = h->v[3];
	uint64_t top = v3 >> 63;
	v3 &= 0x7fffffffffffffff;
	u128 a = (u128)v0 + 19 * top;
	v0 = (uint64_t)a;
	a = (a >> 64) + v1;
	v1 = (uint64_t)a;
	a = (a >> 64) + v2;
	v2 = (uint64_t)a;
	v3 += (uint64_t)(a >> 64); /* < 2^63 + 1: no overflow */

	a = (u128)v0 + 19;
	uint64_t w0 = (uint64_t)a;
	a = (a >> 64) + v1;
	uint64_t w1 = (uint64_t)a;
	a = (a >> 64) + v2;
	uint64_t w2 = (uint64_t)a;
	uint64_t w3 = v3 + (uint64_t)(a >> 64);
	uint64_t ge = ct_mask_u64(w3 >> 63); /* all ones iff v >= p */
	w3 &= 0x7fffffffffffffff;

	r->v[0] = ct_select_u64(ge, w0, v0);
	r->v[1] = ct_select_u64(ge, w1, v1);
	r->v[2] = ct_select_u64(ge, w2, v2);
	r->v[3] = ct_select_u64(ge, w3, v3);
}

void fe64_tobytes(uint8_t s[32], const fe64 *h)
{
	fe64 r;
	fe64_canonical(&r, h);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			s[8 * i + j] = (uint8_t)(r.v[i] >> (8 * j));
}

void fe64_invert(fe64 *h, const fe64 *f)
{
	fe64 x;
	fe64_canonical(&x, f);
	fe_invert_safegcd_u64(h->v, x.v);
	sigil_wipe(&x, sizeof x);
}

/* FE64_POW_WAYS chains at most in lockstep (fe64_pow22523_2). */
#define FE64_POW_WAYS 2

/* h[j] = f[j]^(2^n), j < k, n >= 1 a constant of the caller: one chain
 * through ops->sq_n when there is one; k > 1 chains square by square in
 * turn, so that the core overlaps their latencies (one squaring of each
 * per round). */
static void fe64_sq_n(fe64 *h, const fe64 *f, int k, int n, const fe64_ops *ops)
{
	if (k == 1 && ops->sq_n != NULL) {
		ops->sq_n(h->v, f->v, (uint64_t)n);
		return;
	}
	for (int j = 0; j < k; j++)
		ops->sq(h[j].v, f[j].v);
	for (int i = 1; i < n; i++)
		for (int j = 0; j < k; j++)
			ops->sq(h[j].v, h[j].v);
}

/* h[j] = f[j] g[j], j < k */
static void fe64_mul_k(fe64 *h, const fe64 *f, const fe64 *g, int k, const fe64_ops *ops)
{
	for (int j = 0; j < k; j++)
		ops->mul(h[j].v, f[j].v, g[j].v);
}

/* h[j] = f[j]^((p - 5) / 8) = f[j]^(2^252 - 3), j < k <= FE64_POW_WAYS:
 * ref51/fe_pow.c's chain on fe64, z^(2^250 - 1), 2 squarings, times z;
 * the k chains in lockstep. h may alias f. */
static void fe64_pow22523_k(fe64 *h, const fe64 *f, int k, const fe64_ops *ops)
{
	fe64 z[FE64_POW_WAYS], z2[FE64_POW_WAYS], z9[FE64_POW_WAYS], z11[FE64_POW_WAYS];
	fe64 z2_5_0[FE64_POW_WAYS], z2_10_0[FE64_POW_WAYS], z2_20_0[FE64_POW_WAYS];
	fe64 z2_50_0[FE64_POW_WAYS], z2_100_0[FE64_POW_WAYS], t[FE64_POW_WAYS];

	memcpy(z, f, (size_t)k * sizeof *f);
	fe64_sq_n(z2, z, k, 1, ops);                 /* 2 */
	fe64_sq_n(t, z2, k, 2, ops);                 /* 8 */
	fe64_mul_k(z9, t, z, k, ops);                /* 9 */
	fe64_mul_k(z11, z9, z2, k, ops);             /* 11 */
	fe64_sq_n(t, z11, k, 1, ops);                /* 22 */
	fe64_mul_k(z2_5_0, t, z9, k, ops);           /* 2^5 - 2^0 */
	fe64_sq_n(t, z2_5_0, k, 5, ops);             /* 2^10 - 2^5 */
	fe64_mul_k(z2_10_0, t, z2_5_0, k, ops);      /* 2^10 - 2^0 */
	fe64_sq_n(t, z2_10_0, k, 10, ops);           /* 2^20 - 2^10 */
	fe64_mul_k(z2_20_0, t, z2_10_0, k, ops);     /* 2^20 - 2^0 */
	fe64_sq_n(t, z2_20_0, k, 20, ops);           /* 2^40 - 2^20 */
	fe64_mul_k(t, t, z2_20_0, k, ops);           /* 2^40 - 2^0 */
	fe64_sq_n(t, t, k, 10, ops);                 /* 2^50 - 2^10 */
	fe64_mul_k(z2_50_0, t, z2_10_0, k, ops);     /* 2^50 - 2^0 */
	fe64_sq_n(t, z2_50_0, k, 50, ops);           /* 2^100 - 2^50 */
	fe64_mul_k(z2_100_0, t, z2_50_0, k, ops);    /* 2^100 - 2^0 */
	fe64_sq_n(t, z2_100_0, k, 100, ops);         /* 2^200 - 2^100 */
	fe64_mul_k(t, t, z2_100_0, k, ops);          /* 2^200 - 2^0 */
	fe64_sq_n(t, t, k, 50, ops);                 /* 2^250 - 2^50 */
	fe64_mul_k(t, t, z2_50_0, k, ops);           /* 2^250 - 2^0 */
	fe64_sq_n(t, t, k, 2, ops);                  /* 2^252 - 4 */
	fe64_mul_k(h, t, z, k, ops);                 /* 2^252 - 3 */

	/* powers of a possible secret */
	sigil_wipe(z, sizeof z);
	sigil_wipe(z2, sizeof z2);
	sigil_wipe(z9, sizeof z9);
	sigil_wipe(z11, sizeof z11);
	sigil_wipe(z2_5_0, sizeof z2_5_0);
	sigil_wipe(z2_10_0, sizeof z2_10_0);
	sigil_wipe(z2_20_0, sizeof z2_20_0);
	sigil_wipe(z2_50_0, sizeof z2_50_0);
	sigil_wipe(z2_100_0, sizeof z2_100_0);
	sigil_wipe(t, sizeof t);
}

void fe64_pow22523(fe64 *h, const fe64 *f, const fe64_ops *ops)
{
	fe64_pow22523_k(h, f, 1, ops);
}

void fe64_pow22523_2(fe64 h[2], const fe64 f[2], const fe64_ops *ops)
{
	fe64_pow22523_k(h, f, 2, ops);
}
