/* SPDX-License-Identifier: MIT */
/*
 * sc.c - scalars modulo L = 2^252 + 27742317777372353535851937790883648493.
 *
 * Representation: inside this file a number is an array of unsigned 64-bit
 * limbs, little endian (x = sum x[i] * 2^(64 i)), every limb a full
 * 0 .. 2^64-1 (radix 2^64, products on unsigned __int128). Outputs of the
 * public functions are canonical: 0 <= out < L < 2^253.
 *
 * Reduction is Barrett's (Handbook of Applied Cryptography, algorithm
 * 14.42) with base b = 2^64 and k = 4 limbs (b^3 <= L < b^4), valid for
 * every input x < b^8 = 2^512. It needs mu = floor(b^8 / L); the quotient
 * estimate q3 is at most 2 below floor(x / L) (HAC fact 14.43), so the
 * remainder estimate is < 3L and two constant-time conditional subtractions
 * of L finish the job.
 *
 * Static names carry the sc_ prefix: the library is built as one
 * translation unit (crypto/meson.build, unity).
 *
 * Timing: constant time. The limb loops have fixed bounds; the conditional
 * subtractions select with masks (ct.h); the only multiplications are
 * 64x64->128 MUL, which is constant time on x86-64 and arm64.
 */
#include <string.h>

#include "sigil/crypto.h"
#include "ct.h"
#include "sc.h"

__extension__ typedef unsigned __int128 u128; /* GNU C; __extension__ keeps -Wpedantic quiet */

/* L (sc_L) in radix 2^64: 0x1000000000000000 0000000000000000 14def9dea2f79cd6
 * 5812631a5cf5d3ed (RFC 8032 section 5.1, "L"; decimal
 * 2^252 + 27742317777372353535851937790883648493). */
static const uint64_t sc_L[5] = {
	0x5812631a5cf5d3edULL, 0x14def9dea2f79cd6ULL, 0x0000000000000000ULL, 0x1000000000000000ULL, 0,
};

/* mu (sc_MU) = floor(2^512 / L), the Barrett constant for b = 2^64, k = 4 (HAC
 * 14.42 step 0). 260 bits: 0xf ffffffffffffffff ffffffffffffffeb
 * 2106215d086329a7 ed9ce5a30a2c131b. Computed with Python:
 *   L = 2**252 + 27742317777372353535851937790883648493; 2**512 // L
 * and cross-checked by the random tests against Python integers. */
static const uint64_t sc_MU[5] = {
	0xed9ce5a30a2c131bULL, 0x2106215d086329a7ULL, 0xffffffffffffffebULL, 0xffffffffffffffffULL,
	0x000000000000000fULL,
};

static inline uint64_t sc_load64_le(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--)
		x = (x << 8) | p[i];
	return x;
}

static inline void sc_store64_le(uint8_t *p, uint64_t x)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)x;
		x >>= 8;
	}
}

/* out[0 .. na+nb-1] = a * b (schoolbook). Each step computes
 * a[i]*b[j] + out[i+j] + carry <= (2^64-1)^2 + 2(2^64-1) = 2^128 - 1,
 * so the 128-bit accumulator never overflows. out must not alias a or b
 * (internal helper; callers pass distinct arrays). */
static void sc_mul_limbs(uint64_t *out, const uint64_t *a, int na, const uint64_t *b, int nb)
{
	for (int i = 0; i < na + nb; i++)
		out[i] = 0;
	for (int i = 0; i < na; i++) {
		uint64_t carry = 0;
		for (int j = 0; j < nb; j++) {
			u128 t = (u128)a[i] * b[j] + out[i + j] + carry;
			out[i + j] = (uint64_t)t;
			carry = (uint64_t)(t >> 64);
		}
		out[i + nb] = carry;
	}
}

/* r = r - L if r >= L, else r unchanged; r has 5 limbs. Constant time: the
 * subtraction is always done, its final borrow makes a mask, and a select
 * keeps one of the two. Precondition r < 2^320; postcondition: r is the
 * input minus L if that is >= 0. */
static void sc_cond_sub_L(uint64_t r[5])
{
	uint64_t t[5];
	uint64_t borrow = 0;

	for (int i = 0; i < 5; i++) {
		u128 d = (u128)r[i] - sc_L[i] - borrow;
		t[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1; /* 1 if this limb borrowed */
	}
	/* borrow == 1 <=> r < L: keep r; otherwise take t */
	uint64_t keep = ct_mask_u64(borrow);
	for (int i = 0; i < 5; i++)
		r[i] = ct_select_u64(keep, r[i], t[i]);
	sigil_wipe(t, sizeof(t));
}

/* r = x mod L for x < 2^512 given as 8 limbs; r is 5 limbs with r[4] == 0
 * and r < L on return. HAC algorithm 14.42, b = 2^64, k = 4:
 *   q1 = floor(x / b^3)            (5 limbs, < 2^320)
 *   q2 = q1 * mu                   (10 limbs, < 2^580)
 *   q3 = floor(q2 / b^5)           (5 limbs; q3 <= x / L < 2^260)
 *   r  = (x mod b^5) - (q3 * L mod b^5)   mod b^5
 * Then 0 <= x - q3*L < 3L < b^5, so the mod-b^5 difference is the true
 * remainder estimate, and at most two subtractions of L remain. */
static void sc_barrett_reduce(uint64_t r[5], const uint64_t x[8])
{
	uint64_t q2[10];
	uint64_t q3L[9];
	uint64_t borrow = 0;

	sc_mul_limbs(q2, x + 3, 5, sc_MU, 5);
	/* q3 = q2[5..9]; only q3*L mod b^5 is needed: the low 5 limbs */
	sc_mul_limbs(q3L, q2 + 5, 5, sc_L, 4);

	for (int i = 0; i < 5; i++) {
		u128 d = (u128)x[i] - q3L[i] - borrow;
		r[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	/* the final borrow is dropped: arithmetic mod b^5 (HAC step 3) */

	sc_cond_sub_L(r); /* r < 3L  ->  r < 2L */
	sc_cond_sub_L(r); /* r < 2L  ->  r < L  */

	sigil_wipe(q2, sizeof(q2));
	sigil_wipe(q3L, sizeof(q3L));
}

static void sc_store_scalar(uint8_t out[32], const uint64_t r[5])
{
	/* r < L < 2^253, so r[4] == 0 and four limbs hold it */
	for (int i = 0; i < 4; i++)
		sc_store64_le(out + 8 * i, r[i]);
}

/* out = in mod L; in is any 512-bit little-endian integer.
 * Alias: out may overlap in (all of in is loaded first). Constant time. */
void sc_reduce(uint8_t out[32], const uint8_t in[64])
{
	uint64_t x[8], r[5];

	for (int i = 0; i < 8; i++)
		x[i] = sc_load64_le(in + 8 * i);
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = (a*b + c) mod L; a, b, c any 256-bit little-endian integers.
 * Bound: a*b + c <= (2^256-1)^2 + 2^256-1 = 2^512 - 2^256 < 2^512, so the
 * sum fits the 8 limbs that barrett_reduce takes.
 * Alias: out may overlap a, b or c (all inputs are loaded first).
 * Constant time. */
void sc_muladd(uint8_t out[32], const uint8_t a[32], const uint8_t b[32], const uint8_t c[32])
{
	uint64_t al[4], bl[4], x[8], r[5];
	uint64_t carry = 0;

	for (int i = 0; i < 4; i++) {
		al[i] = sc_load64_le(a + 8 * i);
		bl[i] = sc_load64_le(b + 8 * i);
	}
	sc_mul_limbs(x, al, 4, bl, 4);
	for (int i = 0; i < 8; i++) {
		/* add c (limbs 0..3), then ripple the carry through limbs 4..7;
		 * by the bound above nothing carries out of limb 7 */
		u128 t = (u128)x[i] + (i < 4 ? sc_load64_le(c + 8 * i) : 0) + carry;
		x[i] = (uint64_t)t;
		carry = (uint64_t)(t >> 64);
	}
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);

	sigil_wipe(al, sizeof(al));
	sigil_wipe(bl, sizeof(bl));
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = a*b mod L (sc_muladd with c = 0). Alias: any. Constant time. */
void sc_mul(uint8_t out[32], const uint8_t a[32], const uint8_t b[32])
{
	static const uint8_t zero[32];

	sc_muladd(out, a, b, zero);
}

/* out = (a + b) mod L; a, b any 256-bit integers, so a + b < 2^257 (5
 * limbs; limbs 5..7 of the Barrett input are zero).
 * Alias: any (inputs loaded first). Constant time. */
void sc_add(uint8_t out[32], const uint8_t a[32], const uint8_t b[32])
{
	uint64_t x[8], r[5];
	uint64_t carry = 0;

	for (int i = 0; i < 4; i++) {
		u128 t = (u128)sc_load64_le(a + 8 * i) + sc_load64_le(b + 8 * i) + carry;
		x[i] = (uint64_t)t;
		carry = (uint64_t)(t >> 64);
	}
	x[4] = carry; /* 0 or 1 */
	x[5] = x[6] = x[7] = 0;
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = -a mod L = (L - (a mod L)) mod L; a any 256-bit integer.
 * With r = a mod L in [0, L), t = L - r is in [1, L] (no borrow), and one
 * conditional subtraction maps t = L (from a = 0 mod L) to 0.
 * Alias: any. Constant time. */
void sc_neg(uint8_t out[32], const uint8_t a[32])
{
	uint64_t x[8], r[5], t[5];
	uint64_t borrow = 0;

	for (int i = 0; i < 4; i++)
		x[i] = sc_load64_le(a + 8 * i);
	x[4] = x[5] = x[6] = x[7] = 0;
	sc_barrett_reduce(r, x);
	for (int i = 0; i < 5; i++) {
		u128 d = (u128)sc_L[i] - r[i] - borrow;
		t[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	sc_cond_sub_L(t);
	sc_store_scalar(out, t);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
	sigil_wipe(t, sizeof(t));
}

/* 1 if s < L (s is the canonical encoding of a scalar), else 0.
 * Computes s - L over all four limbs and returns the final borrow: no
 * early exit, so constant time. */
int sc_is_canonical(const uint8_t s[32])
{
	uint64_t borrow = 0;

	for (int i = 0; i < 4; i++) {
		u128 d = (u128)sc_load64_le(s + 8 * i) - sc_L[i] - borrow;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	return (int)ct_barrier_u64(borrow);
}
