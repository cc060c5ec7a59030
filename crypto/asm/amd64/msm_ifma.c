/* SPDX-License-Identifier: MIT */
/*
 * msm_ifma.c - batch verification's square roots and Straus sum
 * (msm.h) with AVX-512 IFMA, in C with intrinsics (built only when crypto/
 * has the amd64 code; crypto/asm/msm_ifma_none.c otherwise), and their
 * CPUID probes. The Straus sum's C twin is msm_straus_lanes_generic (msm.c).
 *
 * Each 512-bit register holds one limb of eight field elements (one per
 * 64-bit lane); an element is five limbs of 52 bits, value sum l[i] 2^(52 i)
 * < 2^260, every limb < 2^52 (VPMADD52LUQ/HUQ read the low 52 bits of their
 * multiplicands and add the low or the high 52 bits of the 104-bit
 * product). MSMI_G registers per limb (8 MSMI_G elements) go through the
 * same power chain together, which keeps the multipliers busy while one
 * group waits on its carries.
 *
 * Multiplication: the ten product columns c[k] = sum_{i+j=k} lo(a_i b_j)
 * + sum_{i+j=k-1} hi(a_i b_j), each < 10 2^52 < 2^56. Reduction, with
 * 2^260 = 2^5 2^255 = 32 19 = 608 (mod p):
 *  1. c[k] += 608 c[k+5] (k < 5) without carrying c[k+5] first: with l its
 *     low 52 bits (what VPMADD52 reads) and h the rest (< 2^4), lo(608 l)
 *     goes to c[k], hi(608 l) and 608 h to c[k+1]; for k = 4 those land
 *     at 2^260 and 2^520 and are folded into c0 times 608 and 608^2:
 *     every c[k] < 2^57;
 *  2. the bits of c4 from 47 up (2^255 and above, < 2^10) are folded times
 *     19 into c0, then one carry chain c0 -> c4 leaves c0..c3 < 2^52 and
 *     c4 < 2^47 + 2^7.
 * Squaring: the cross products a_i a_j (i < j) once, doubled, plus the
 * squares a_i^2 (2 a_j would not fit the 52-bit multiplicand).
 *
 * Variable time is allowed (public inputs) but the code has no branch on
 * data anyway. Static names carry the msmi_ prefix and the macros are
 * #undef'd at the end: the library is built as one translation unit.
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fe64/fe64.h"
#include "fe64/msm.h"
#include "x86_features.h"

#define MSMI_TARGET __attribute__((target("avx512f,avx512ifma")))
#define MSMI_INLINE static inline __attribute__((always_inline)) MSMI_TARGET
#define MSMI_G (MSM_POW_LANES / 8)

typedef struct msmi_fe {
	__m512i l[5];
} msmi_fe;

MSMI_INLINE __m512i msmi_lo(__m512i acc, __m512i a, __m512i b)
{
	return _mm512_madd52lo_epu64(acc, a, b);
}

MSMI_INLINE __m512i msmi_hi(__m512i acc, __m512i a, __m512i b)
{
	return _mm512_madd52hi_epu64(acc, a, b);
}

/* r = the columns c[0..9] reduced (steps 1 and 2 above) */
MSMI_INLINE void msmi_reduce(msmi_fe *r, __m512i c[10])
{
	const __m512i m52 = _mm512_set1_epi64((int64_t)0xfffffffffffff);
	const __m512i m47 = _mm512_set1_epi64((int64_t)0x7fffffffffff);
	const __m512i k608 = _mm512_set1_epi64(608);
	const __m512i k19 = _mm512_set1_epi64(19);
	const __m512i zero = _mm512_setzero_si512();
	const __m512i k608608 = _mm512_set1_epi64(608 * 608);
	__m512i top, t;

	/* 1 */
	for (int k = 0; k < 4; k++) {
		c[k] = msmi_lo(c[k], c[k + 5], k608);
		c[k + 1] = msmi_hi(c[k + 1], c[k + 5], k608);
		c[k + 1] = msmi_lo(c[k + 1], _mm512_srli_epi64(c[k + 5], 52), k608);
	}
	c[4] = msmi_lo(c[4], c[9], k608);
	top = msmi_hi(zero, c[9], k608);             /* < 2^10, at 2^260 */
	c[0] = msmi_lo(c[0], top, k608);
	c[0] = msmi_lo(c[0], _mm512_srli_epi64(c[9], 52), k608608); /* < 2^4, at 2^520 */
	/* 2 */
	t = _mm512_srli_epi64(c[4], 47);
	c[4] = _mm512_and_si512(c[4], m47);
	c[0] = msmi_lo(c[0], t, k19);
	for (int k = 0; k < 4; k++) {
		c[k + 1] = _mm512_add_epi64(c[k + 1], _mm512_srli_epi64(c[k], 52));
		c[k] = _mm512_and_si512(c[k], m52);
	}
	for (int k = 0; k < 5; k++)
		r->l[k] = c[k];
}

/* r = any limbs below 2^63 made a valid input (step 2 alone) */
MSMI_INLINE void msmi_norm(msmi_fe *r, __m512i c[5])
{
	const __m512i m52 = _mm512_set1_epi64((int64_t)0xfffffffffffff);
	const __m512i m47 = _mm512_set1_epi64((int64_t)0x7fffffffffff);
	const __m512i k19 = _mm512_set1_epi64(19);
	__m512i t = _mm512_srli_epi64(c[4], 47);
	c[4] = _mm512_and_si512(c[4], m47);
	c[0] = msmi_lo(c[0], t, k19);
	for (int k = 0; k < 4; k++) {
		c[k + 1] = _mm512_add_epi64(c[k + 1], _mm512_srli_epi64(c[k], 52));
		c[k] = _mm512_and_si512(c[k], m52);
	}
	for (int k = 0; k < 5; k++)
		r->l[k] = c[k];
}

/* r = a + b */
MSMI_INLINE void msmi_add(msmi_fe *r, const msmi_fe *a, const msmi_fe *b)
{
	__m512i c[5];
	for (int k = 0; k < 5; k++)
		c[k] = _mm512_add_epi64(a->l[k], b->l[k]);
	msmi_norm(r, c);
}

/* r = a - b + 4p (4p in limbs: 2^54 - 76, 2^54 - 4 (three times),
 * 2^49 - 4; each above the limb of b it meets, so no limb goes negative) */
MSMI_INLINE void msmi_sub(msmi_fe *r, const msmi_fe *a, const msmi_fe *b)
{
	static const int64_t p4[5] = { (1LL << 54) - 76, (1LL << 54) - 4, (1LL << 54) - 4,
		                       (1LL << 54) - 4, (1LL << 49) - 4 };
	__m512i c[5];
	for (int k = 0; k < 5; k++)
		c[k] = _mm512_sub_epi64(_mm512_add_epi64(a->l[k], _mm512_set1_epi64(p4[k])), b->l[k]);
	msmi_norm(r, c);
}

/* r = a b, one group (r may alias a or b) */
MSMI_INLINE void msmi_mul1(msmi_fe *r, const msmi_fe *a, const msmi_fe *b)
{
	__m512i c[10];
	for (int k = 0; k < 10; k++)
		c[k] = _mm512_setzero_si512();
	for (int i = 0; i < 5; i++)
		for (int j = 0; j < 5; j++) {
			c[i + j] = msmi_lo(c[i + j], a->l[i], b->l[j]);
			c[i + j + 1] = msmi_hi(c[i + j + 1], a->l[i], b->l[j]);
		}
	msmi_reduce(r, c);
}

/* r = a b, MSMI_G groups */
MSMI_INLINE void msmi_mul(msmi_fe r[MSMI_G], const msmi_fe a[MSMI_G], const msmi_fe b[MSMI_G])
{
	for (int g = 0; g < MSMI_G; g++)
		msmi_mul1(&r[g], &a[g], &b[g]);
}

/* r = a^2, MSMI_G groups */
MSMI_INLINE void msmi_sq(msmi_fe r[MSMI_G], const msmi_fe a[MSMI_G])
{
	for (int g = 0; g < MSMI_G; g++) {
		__m512i c[10];
		for (int k = 0; k < 10; k++)
			c[k] = _mm512_setzero_si512();
		for (int i = 0; i < 5; i++)
			for (int j = i + 1; j < 5; j++) {
				c[i + j] = msmi_lo(c[i + j], a[g].l[i], a[g].l[j]);
				c[i + j + 1] = msmi_hi(c[i + j + 1], a[g].l[i], a[g].l[j]);
			}
		for (int k = 1; k < 10; k++)
			c[k] = _mm512_add_epi64(c[k], c[k]);
		for (int i = 0; i < 5; i++) {
			c[2 * i] = msmi_lo(c[2 * i], a[g].l[i], a[g].l[i]);
			c[2 * i + 1] = msmi_hi(c[2 * i + 1], a[g].l[i], a[g].l[i]);
		}
		msmi_reduce(&r[g], c);
	}
}

/* r = a^(2^n), n >= 1 */
MSMI_INLINE void msmi_sq_n(msmi_fe r[MSMI_G], const msmi_fe a[MSMI_G], int n)
{
	msmi_sq(r, a);
	for (int i = 1; i < n; i++)
		msmi_sq(r, r);
}

/* 8 fe64 (any value < 2^256) to five 52-bit limbs (the top one < 2^48) */
static MSMI_TARGET void msmi_load1(msmi_fe *r, const fe64 *f)
{
	const uint64_t m = 0xfffffffffffff;
	uint64_t l[5][8];
	for (int e = 0; e < 8; e++) {
		const uint64_t *v = f[e].v;
		l[0][e] = v[0] & m;
		l[1][e] = ((v[0] >> 52) | (v[1] << 12)) & m;
		l[2][e] = ((v[1] >> 40) | (v[2] << 24)) & m;
		l[3][e] = ((v[2] >> 28) | (v[3] << 36)) & m;
		l[4][e] = v[3] >> 16;
	}
	for (int k = 0; k < 5; k++)
		r->l[k] = _mm512_loadu_si512((const void *)l[k]);
}

/* the same, MSMI_G groups */
static MSMI_TARGET void msmi_load(msmi_fe r[MSMI_G], const fe64 *f)
{
	for (int g = 0; g < MSMI_G; g++)
		msmi_load1(&r[g], &f[8 * g]);
}

/* five limbs (< 2^52 each) to fe64: the value < 2^260, its bits from 256
 * folded times 38 (2^256 = 38 mod p), then a carry out folded once more */
static MSMI_TARGET void msmi_store1(fe64 *h, const msmi_fe *a)
{
	uint64_t l[5][8];
	for (int k = 0; k < 5; k++)
		_mm512_storeu_si512((void *)l[k], a->l[k]);
	for (int e = 0; e < 8; e++) {
		uint64_t w0 = l[0][e] | (l[1][e] << 52);
		uint64_t w1 = (l[1][e] >> 12) | (l[2][e] << 40);
		uint64_t w2 = (l[2][e] >> 24) | (l[3][e] << 28);
		uint64_t w3 = (l[3][e] >> 36) | (l[4][e] << 16);
		uint64_t w4 = l[4][e] >> 48;
		fe64_u128 t = (fe64_u128)w0 + 38 * w4;
		w0 = (uint64_t)t;
		t = (t >> 64) + w1;
		w1 = (uint64_t)t;
		t = (t >> 64) + w2;
		w2 = (uint64_t)t;
		t = (t >> 64) + w3;
		w3 = (uint64_t)t;
		w0 += 38 * (uint64_t)(t >> 64); /* then w0 < 38 + 38: no carry */
		h[e].v[0] = w0;
		h[e].v[1] = w1;
		h[e].v[2] = w2;
		h[e].v[3] = w3;
	}
}

/* the same, MSMI_G groups */
static MSMI_TARGET void msmi_store(fe64 *h, const msmi_fe a[MSMI_G])
{
	for (int g = 0; g < MSMI_G; g++)
		msmi_store1(&h[8 * g], &a[g]);
}

/* t = z^((p - 5) / 8) = z^(2^252 - 3): the chain of fe64.c's
 * fe64_pow22523 (2^250 - 1, two squarings, times z). */
static MSMI_TARGET void msmi_pow22523(msmi_fe t[MSMI_G], const msmi_fe z[MSMI_G])
{
	msmi_fe z2[MSMI_G], z9[MSMI_G], z11[MSMI_G];
	msmi_fe a5[MSMI_G], a10[MSMI_G], a20[MSMI_G], a50[MSMI_G], a100[MSMI_G];

	msmi_sq(z2, z);            /* 2 */
	msmi_sq_n(t, z2, 2);       /* 8 */
	msmi_mul(z9, t, z);        /* 9 */
	msmi_mul(z11, z9, z2);     /* 11 */
	msmi_sq(t, z11);           /* 22 */
	msmi_mul(a5, t, z9);       /* 2^5 - 2^0 */
	msmi_sq_n(t, a5, 5);       /* 2^10 - 2^5 */
	msmi_mul(a10, t, a5);      /* 2^10 - 2^0 */
	msmi_sq_n(t, a10, 10);     /* 2^20 - 2^10 */
	msmi_mul(a20, t, a10);     /* 2^20 - 2^0 */
	msmi_sq_n(t, a20, 20);     /* 2^40 - 2^20 */
	msmi_mul(t, t, a20);       /* 2^40 - 2^0 */
	msmi_sq_n(t, t, 10);       /* 2^50 - 2^10 */
	msmi_mul(a50, t, a10);     /* 2^50 - 2^0 */
	msmi_sq_n(t, a50, 50);     /* 2^100 - 2^50 */
	msmi_mul(a100, t, a50);    /* 2^100 - 2^0 */
	msmi_sq_n(t, a100, 100);   /* 2^200 - 2^100 */
	msmi_mul(t, t, a100);      /* 2^200 - 2^0 */
	msmi_sq_n(t, t, 50);       /* 2^250 - 2^50 */
	msmi_mul(t, t, a50);       /* 2^250 - 2^0 */
	msmi_sq_n(t, t, 2);        /* 2^252 - 4 */
	msmi_mul(t, t, z);         /* 2^252 - 3 */
}

/* msm.h's msm_sqrt_ratio_lanes_fn: msm_sqrt_ratio_many_fe64's steps (msm.c) */
static MSMI_TARGET void msmi_sqrt_ratio(fe64 r[MSM_POW_LANES], fe64 check[MSM_POW_LANES],
                                        const fe64 u[MSM_POW_LANES], const fe64 v[MSM_POW_LANES])
{
	msmi_fe U[MSMI_G], V[MSMI_G], v3[MSMI_G], t[MSMI_G], w[MSMI_G];

	msmi_load(U, u);
	msmi_load(V, v);
	msmi_sq(t, V);
	msmi_mul(v3, t, V);        /* v^3 */
	msmi_sq(t, v3);
	msmi_mul(t, t, V);         /* v^7 */
	msmi_mul(t, t, U);         /* u v^7 */
	msmi_mul(v3, v3, U);       /* u v^3 */
	msmi_pow22523(w, t);
	msmi_mul(w, w, v3);        /* r */
	msmi_store(r, w);
	msmi_sq(t, w);
	msmi_mul(t, t, V);         /* v r^2 */
	msmi_store(check, t);
}

/* lanes of MSM_POW_LANES fe64 at src[i] + off (bytes) */
static MSMI_TARGET void msmi_gather(msmi_fe r[MSMI_G], const ge64_p3 *P, size_t off)
{
	fe64 f[MSM_POW_LANES];
	for (int i = 0; i < MSM_POW_LANES; i++)
		memcpy(&f[i], (const uint8_t *)&P[i] + off, sizeof(fe64));
	msmi_load(r, f);
}

/* an extended point (X : Y : Z : T), MSMI_G groups */
typedef struct msmi_pt {
	msmi_fe X[MSMI_G], Y[MSMI_G], Z[MSMI_G], T[MSMI_G];
} msmi_pt;

/* The lanes' table (msm.h): row 4 c + k holds word k of coordinate c
 * (Y + X, Y - X, Z, 2d T) of every entry, packed by msmi_pack: an element
 * is only ever a multiplicand, of which VPMADD52 reads the low 52 bits,
 * so word k is limb k with, above bit 52, bits 12 k to 12 k + 11 of limb 4
 * (< 2^48). 16 words instead of 20: 132 KiB at MSM_MAX, and four gathers
 * fewer per step. */
typedef uint64_t msmi_lt[16][MSM_LT_ENTRIES];

MSMI_INLINE void msmi_pack(__m512i w[4], const msmi_fe *a)
{
	for (int k = 0; k < 4; k++)
		w[k] = _mm512_or_si512(a->l[k], _mm512_slli_epi64(_mm512_srli_epi64(a->l[4], 12 * k), 52));
}

/* a multiplicand from its packed words (limbs 0 to 3 keep limb 4's bits
 * above 52, which VPMADD52 does not read) */
MSMI_INLINE void msmi_unpack(msmi_fe *r, const __m512i w[4])
{
	/* a | (b & c) */
#define MSMI_OR_AND 0xf8
	__m512i t = _mm512_srli_epi64(w[0], 52);
	for (int k = 1; k < 4; k++)
		t = _mm512_ternarylogic_epi64(t, _mm512_srli_epi64(w[k], 52 - 12 * k),
		                              _mm512_set1_epi64((int64_t)0xfff << (12 * k)), MSMI_OR_AND);
#undef MSMI_OR_AND
	for (int k = 0; k < 4; k++)
		r->l[k] = w[k];
	r->l[4] = t;
}

/* (Y + X, Y - X, Z, 2d T) of p to the entries (i0 + ., j) of lt */
static MSMI_TARGET void msmi_put_cached(msmi_lt *lt, int i0, int j, const msmi_pt *p,
                                        const msmi_fe d2[MSMI_G])
{
	msmi_fe c[4][MSMI_G];
	for (int g = 0; g < MSMI_G; g++) {
		msmi_add(&c[0][g], &p->Y[g], &p->X[g]);
		msmi_sub(&c[1][g], &p->Y[g], &p->X[g]);
		c[2][g] = p->Z[g];
	}
	msmi_mul(c[3], p->T, d2);
	for (int q = 0; q < 4; q++)
		for (int g = 0; g < MSMI_G; g++) {
			__m512i w[4];
			msmi_pack(w, &c[q][g]);
			for (int k = 0; k < 4; k++)
				_mm512_storeu_si512((void *)&(*lt)[4 * q + k][MSM_LT_ENTRY(i0 + 8 * g, j)], w[k]);
		}
}

/* (2j + 1) P[i], j < 8, i < MSM_POW_LANES (ge.c's formulas: one doubling,
 * then seven additions of 2 P in extended coordinates), to the entries
 * (i0 + i, j) of lt. */
static MSMI_TARGET void msmi_odd_multiples(msmi_lt *lt, int i0, const ge64_p3 *P, const fe64 *d2in)
{
	msmi_pt p, q;
	msmi_fe d2[MSMI_G], a[MSMI_G], b[MSMI_G], c[MSMI_G], d[MSMI_G], e[MSMI_G];
	msmi_fe ypx2[MSMI_G], ymx2[MSMI_G], z2[MSMI_G], t2d2[MSMI_G];
	fe64 dd[MSM_POW_LANES];

	for (int i = 0; i < MSM_POW_LANES; i++)
		dd[i] = *d2in;
	msmi_load(d2, dd);
	msmi_gather(p.X, P, offsetof(ge64_p3, X));
	msmi_gather(p.Y, P, offsetof(ge64_p3, Y));
	msmi_gather(p.Z, P, offsetof(ge64_p3, Z));
	msmi_gather(p.T, P, offsetof(ge64_p3, T));
	msmi_put_cached(lt, i0, 0, &p, d2);

	/* q = 2 p: A = X^2, B = Y^2, C = 2 Z^2, D = (X + Y)^2;
	 * (X : Y : Z : T) = (D - B - A : B + A : B - A : C - B + A) in p1p1,
	 * then (X T, Y Z, Z T, X Y) */
	msmi_sq(a, p.X);
	msmi_sq(b, p.Y);
	msmi_sq(c, p.Z);
	for (int g = 0; g < MSMI_G; g++) {
		msmi_add(&c[g], &c[g], &c[g]);
		msmi_add(&d[g], &p.X[g], &p.Y[g]);
	}
	msmi_sq(d, d);
	for (int g = 0; g < MSMI_G; g++) {
		msmi_add(&e[g], &b[g], &a[g]);     /* Y' = B + A */
		msmi_sub(&b[g], &b[g], &a[g]);     /* Z' = B - A */
		msmi_sub(&a[g], &d[g], &e[g]);     /* X' = D - Y' */
		msmi_sub(&c[g], &c[g], &b[g]);     /* T' = C - Z' */
	}
	msmi_mul(q.X, a, c);
	msmi_mul(q.Y, e, b);
	msmi_mul(q.Z, b, c);
	msmi_mul(q.T, a, e);
	/* 2 p in cached form */
	for (int g = 0; g < MSMI_G; g++) {
		msmi_add(&ypx2[g], &q.Y[g], &q.X[g]);
		msmi_sub(&ymx2[g], &q.Y[g], &q.X[g]);
		msmi_add(&z2[g], &q.Z[g], &q.Z[g]); /* 2 Z2 */
	}
	msmi_mul(t2d2, q.T, d2);

	for (int j = 1; j < 8; j++) {
		/* p += 2 p: a = (Y - X)(Y2 - X2), b = (Y + X)(Y2 + X2), c = T 2d T2,
		 * d = Z 2 Z2; (b - a : b + a : d + c : d - c) in p1p1 */
		for (int g = 0; g < MSMI_G; g++) {
			msmi_sub(&a[g], &p.Y[g], &p.X[g]);
			msmi_add(&b[g], &p.Y[g], &p.X[g]);
		}
		msmi_mul(a, a, ymx2);
		msmi_mul(b, b, ypx2);
		msmi_mul(c, p.T, t2d2);
		msmi_mul(d, p.Z, z2);
		for (int g = 0; g < MSMI_G; g++) {
			msmi_sub(&e[g], &b[g], &a[g]); /* X' */
			msmi_add(&b[g], &b[g], &a[g]); /* Y' */
			msmi_add(&a[g], &d[g], &c[g]); /* Z' */
			msmi_sub(&d[g], &d[g], &c[g]); /* T' */
		}
		msmi_mul(p.X, e, d);
		msmi_mul(p.Y, b, a);
		msmi_mul(p.Z, a, d);
		msmi_mul(p.T, e, b);
		msmi_put_cached(lt, i0, j, &p, d2);
	}
}

/* r = lane by lane a where bit l of m is 0, b where it is 1 */
MSMI_INLINE void msmi_blend(msmi_fe *r, __mmask8 m, const msmi_fe *a, const msmi_fe *b)
{
	for (int k = 0; k < 5; k++)
		r->l[k] = _mm512_mask_blend_epi64(m, a->l[k], b->l[k]);
}

/* msm.h's msm_straus_lanes_fn. Each step, in every lane: four products
 * m1..m4 of an addition (ge.c's ge_add: (Y - X)(Y2 - X2), (Y + X)(Y2 + X2),
 * T 2d T2, Z Z2) or of a doubling (ge_p2_dbl: X^2, Y^2, Z^2, (X + Y)^2),
 * then the p1p1 point
 *   addition: (m2 - m1, m2 + m1, 2 m4 + m3, 2 m4 - m3) (the last two
 *             exchanged to subtract)
 *   doubling: (m4 - (m2 + m1), m2 + m1, m2 - m1, 2 m3 - (m2 - m1))
 * and its four products to extended coordinates (X T, Y Z, Z T, X Y). */
static MSMI_TARGET void msmi_straus(ge64_p3 acc[MSM_LANES], const ge64_p3 *P, int n,
                                    const ge64_precomp bt[8], const msm_op (*sched)[MSM_LANES],
                                    int steps, const fe64 *d2)
{
	msmi_lt lt;
	const __m512i zero = _mm512_setzero_si512(), one = _mm512_set1_epi64(1);

	/* the tables, MSM_POW_LANES points at a time (the last group padded
	 * with the identity, within the MSM_MAX entries) */
	for (int i0 = 0; i0 < n; i0 += MSM_POW_LANES) {
		ge64_p3 pad[MSM_POW_LANES];
		const ge64_p3 *src = &P[i0];
		if (n - i0 < MSM_POW_LANES) {
			memset(pad, 0, sizeof pad);
			for (int i = 0; i < MSM_POW_LANES; i++)
				pad[i].Y.v[0] = pad[i].Z.v[0] = 1;
			memcpy(pad, src, (size_t)(n - i0) * sizeof *pad);
			src = pad;
		}
		msmi_odd_multiples(&lt, i0, src, d2);
	}
	/* B's: entry j in lane j (Z = 1) */
	{
		fe64 f[4][8];
		for (int j = 0; j < 8; j++) {
			f[0][j] = bt[j].yplusx;
			f[1][j] = bt[j].yminusx;
			memset(&f[2][j], 0, sizeof(fe64));
			f[2][j].v[0] = 1;
			f[3][j] = bt[j].xy2d;
		}
		for (int q = 0; q < 4; q++) {
			msmi_fe v;
			__m512i w[4];
			uint64_t l[8];
			msmi_load1(&v, f[q]);
			msmi_pack(w, &v);
			for (int k = 0; k < 4; k++) {
				_mm512_storeu_si512((void *)l, w[k]);
				for (int j = 0; j < 8; j++)
					lt[4 * q + k][MSM_LT_ENTRY(MSM_MAX, j)] = l[j];
			}
		}
	}

	msmi_fe X, Y, Z, T;
	for (int k = 0; k < 5; k++)
		X.l[k] = Y.l[k] = Z.l[k] = T.l[k] = zero;
	Y.l[0] = Z.l[0] = one;
	for (int s = 0; s < steps; s++) {
		__m512i op = _mm512_cvtepi16_epi64(_mm_loadu_si128((const __m128i *)sched[s]));
		__mmask8 md = _mm512_cmplt_epi64_mask(op, zero);
		__mmask8 mn = (__mmask8)(_mm512_test_epi64_mask(op, one) & ~md);
		/* a doubling lane reads B's first entry (always made), unused */
		__m512i idx = _mm512_mask_blend_epi64(md, _mm512_srai_epi64(op, 1),
		                                      _mm512_set1_epi64(MSM_LT_ENTRY(MSM_MAX, 0)));
		msmi_fe g[4], ypx, ymx, sxy, dyx, a1, b1, a2, b2, a3, b3, a4, b4, m1, m2, m3, m4;
		for (int q = 0; q < 4; q++) {
			__m512i w[4];
			for (int k = 0; k < 4; k++)
				w[k] = _mm512_i64gather_epi64(idx, (const void *)lt[4 * q + k], 8);
			msmi_unpack(&g[q], w);
		}
		msmi_blend(&ypx, mn, &g[0], &g[1]);
		msmi_blend(&ymx, mn, &g[1], &g[0]);
		msmi_add(&sxy, &Y, &X);
		msmi_sub(&dyx, &Y, &X);
		msmi_blend(&a1, md, &dyx, &X);
		msmi_blend(&b1, md, &ymx, &X);
		msmi_blend(&a2, md, &sxy, &Y);
		msmi_blend(&b2, md, &ypx, &Y);
		msmi_blend(&a3, md, &T, &Z);
		msmi_blend(&b3, md, &g[3], &Z);
		msmi_blend(&a4, md, &Z, &sxy);
		msmi_blend(&b4, md, &g[2], &sxy);
		msmi_mul1(&m1, &a1, &b1);
		msmi_mul1(&m2, &a2, &b2);
		msmi_mul1(&m3, &a3, &b3);
		msmi_mul1(&m4, &a4, &b4);
		msmi_fe yy, q, xp, xq, e, f, ee, u, w, x1, z1, t1, zz;
		msmi_add(&yy, &m2, &m1);
		msmi_sub(&q, &m2, &m1);
		msmi_blend(&xp, md, &m2, &m4);
		msmi_blend(&xq, md, &m1, &yy);
		msmi_sub(&x1, &xp, &xq);
		msmi_blend(&e, md, &m4, &m3);
		msmi_blend(&f, md, &m3, &q);
		for (int k = 0; k < 5; k++) /* < 2^53: u and w carry it */
			ee.l[k] = _mm512_add_epi64(e.l[k], e.l[k]);
		msmi_add(&u, &ee, &f);
		msmi_sub(&w, &ee, &f);
		msmi_blend(&t1, mn, &w, &u);
		msmi_blend(&zz, mn, &u, &w);
		msmi_blend(&z1, md, &zz, &q);
		msmi_mul1(&X, &x1, &t1);
		msmi_mul1(&Y, &yy, &z1);
		msmi_mul1(&Z, &z1, &t1);
		msmi_mul1(&T, &x1, &yy);
	}
	{
		fe64 f[4][8];
		msmi_store1(f[0], &X);
		msmi_store1(f[1], &Y);
		msmi_store1(f[2], &Z);
		msmi_store1(f[3], &T);
		for (int l = 0; l < MSM_LANES; l++) {
			acc[l].X = f[0][l];
			acc[l].Y = f[1][l];
			acc[l].Z = f[2][l];
			acc[l].T = f[3][l];
		}
	}
}

/* AVX512F and AVX512IFMA in the CPU, and the OS saves the whole AVX-512
 * state (x86_features.h). */
static int msmi_capable(void)
{
	return x86_cpu_has(X86_AVX512F | X86_AVX512IFMA, X86_XCR0_ZMM);
}

msm_sqrt_ratio_lanes_fn *msm_sqrt_ratio_lanes_probe(void)
{
	return msmi_capable() ? msmi_sqrt_ratio : NULL;
}

msm_straus_lanes_fn *msm_straus_lanes_probe(void)
{
	return msmi_capable() ? msmi_straus : NULL;
}

/* the library is one translation unit (crypto/meson.build, unity) */
#undef MSMI_TARGET
#undef MSMI_INLINE
#undef MSMI_G
