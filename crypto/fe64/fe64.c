/* SPDX-License-Identifier: MIT */
/*
 * fe64.c - the portable C twins of the fe64 assembly (mul, sq) and the
 * fe64 operations that have no assembly (codecs, the (p - 5) / 8 power). Contracts and
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

typedef fe64_u128 u128;

/* Steps 2 and 3 of the method: t[0..7] (the 512-bit product) -> h.
 * s = (t0..t3) + 38 (t4..t7) = (s0..s3) + c 2^256 with c <= 38; then
 * s + 38 c carries out c' in {0, 1}; c' = 1 leaves s < 38 * 39, so
 * s0 + 38 c' does not carry. */
static inline void fe64_reduce(uint64_t h[4], const uint64_t t[8])
{
	u128 a = (u128)t[4] * 38 + t[0];
	uint64_t s0 = (uint64_t)a;
	a = (a >> 64) + (u128)t[5] * 38 + t[1];
	uint64_t s1 = (uint64_t)a;
	a = (a >> 64) + (u128)t[6] * 38 + t[2];
	uint64_t s2 = (uint64_t)a;
	a = (a >> 64) + (u128)t[7] * 38 + t[3];
	uint64_t s3 = (uint64_t)a;
	uint64_t c = (uint64_t)(a >> 64); /* <= 38 */
	a = (u128)s0 + 38 * c;
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

/* Schoolbook 4x4: t = sum f_i g_j 2^(64(i+j)), row by row. */
void fe64_mul_generic(uint64_t h[4], const uint64_t f[4], const uint64_t g[4])
{
	uint64_t t[8] = { 0 };
	for (int i = 0; i < 4; i++) {
		u128 carry = 0;
		for (int j = 0; j < 4; j++) {
			carry += (u128)f[i] * g[j] + t[i + j];
			t[i + j] = (uint64_t)carry;
			carry >>= 64;
		}
		t[i + 4] = (uint64_t)carry;
	}
	fe64_reduce(h, t);
}

/* f^2 = 2 sum_{i<j} f_i f_j 2^(64(i+j)) + sum f_i^2 2^(128 i). */
void fe64_sq_generic(uint64_t h[4], const uint64_t f[4])
{
	uint64_t t[8] = { 0 };
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
	fe64_reduce(h, t);
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

/* h = 121666 aa - 121665 bb (mod p), the a24_body of the generator:
 * X = 121666 aa, Y = 121665 bb (five limbs, tops < 2^17), D = X + 2^18 p - Y
 * with 0 < D < 2^274 (Y < 2^17 2^256 - 2^17 38 = 2^18 p), then
 * D = (d0..d3) + 38 d4 and the carry fold of fe64_mul121666. */
static inline void fe64_a24(fe64 *h, const fe64 *aa, const fe64 *bb)
{
	/* 2^18 p = 2^17 (2^256 - 38), five limbs */
	static const uint64_t k[5] = { 0xffffffffffb40000, UINT64_MAX, UINT64_MAX, UINT64_MAX,
	                               131071 };
	uint64_t x[5], y[5];
	u128 a = 0, b = 0;
	for (int i = 0; i < 4; i++) {
		a += (u128)aa->v[i] * 121666;
		x[i] = (uint64_t)a;
		a >>= 64;
		b += (u128)bb->v[i] * 121665;
		y[i] = (uint64_t)b;
		b >>= 64;
	}
	x[4] = (uint64_t)a;
	y[4] = (uint64_t)b;
	/* d = x + k - y, limb by limb with the carry c in {-1, 0, 1} */
	uint64_t d[5];
	__int128 c = 0;
	for (int i = 0; i < 5; i++) {
		c += (__int128)x[i] + k[i] - y[i];
		d[i] = (uint64_t)c;
		c >>= 64; /* arithmetic shift */
	}
	a = (u128)d[0] + (u128)d[4] * 38; /* d4 < 2^18 */
	uint64_t h0 = (uint64_t)a;
	a = (a >> 64) + d[1];
	uint64_t h1 = (uint64_t)a;
	a = (a >> 64) + d[2];
	uint64_t h2 = (uint64_t)a;
	a = (a >> 64) + d[3];
	uint64_t h3 = (uint64_t)a;
	uint64_t cc = (uint64_t)(a >> 64);
	h->v[0] = h0 + 38 * cc;
	h->v[1] = h1;
	h->v[2] = h2;
	h->v[3] = h3;
}

/* The step of fe64_ladder_bits_*: fe64_ladder_step_generic's, but with
 * t = BB + 121666 E computed from AA and BB (fe64_a24), as the assembly. */
static void fe64_ladder_step_a24(fe64_ladder *st)
{
	fe64_add(&st->a, &st->x2, &st->z2);             /* A = x2 + z2 */
	fe64_sub(&st->b, &st->x2, &st->z2);             /* B = x2 - z2 */
	fe64_add(&st->c, &st->x3, &st->z3);             /* C = x3 + z3 */
	fe64_sub(&st->d, &st->x3, &st->z3);             /* D = x3 - z3 */
	fe64_sq_generic(st->aa.v, st->a.v);             /* AA = A^2 */
	fe64_sq_generic(st->bb.v, st->b.v);             /* BB = B^2 */
	fe64_mul_generic(st->da.v, st->d.v, st->a.v);   /* DA = D A */
	fe64_mul_generic(st->cb.v, st->c.v, st->b.v);   /* CB = C B */
	fe64_sub(&st->e, &st->aa, &st->bb);             /* E = AA - BB */
	fe64_a24(&st->t, &st->aa, &st->bb);             /* BB + 121666 E */
	fe64_mul_generic(st->z2.v, st->t.v, st->e.v);   /* z2 = E (AA + a24 E) */
	fe64_mul_generic(st->x2.v, st->aa.v, st->bb.v); /* x2 = AA BB */
	fe64_add(&st->t, &st->da, &st->cb);
	fe64_sq_generic(st->x3.v, st->t.v);             /* x3 = (DA + CB)^2 */
	fe64_sub(&st->t, &st->da, &st->cb);
	fe64_sq_generic(st->t.v, st->t.v);
	fe64_mul_generic(st->z3.v, st->t.v, st->x1.v);  /* z3 = x1 (DA - CB)^2 */
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
		fe64_ladder_step_a24(st);
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
void fe64_tobytes(uint8_t s[32], const fe64 *h)
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

	uint64_t r[4];
	r[0] = ct_select_u64(ge, w0, v0);
	r[1] = ct_select_u64(ge, w1, v1);
	r[2] = ct_select_u64(ge, w2, v2);
	r[3] = ct_select_u64(ge, w3, v3);
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 8; j++)
			s[8 * i + j] = (uint8_t)(r[i] >> (8 * j));
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
