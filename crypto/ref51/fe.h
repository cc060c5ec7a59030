/* SPDX-License-Identifier: MIT */
/*
 * fe.h - arithmetic in GF(p), p = 2^255 - 19 (internal to libsigil-crypto).
 *
 * Representation (radix 2^51, "FieldElement51" in dalek's words): an element
 * is five unsigned 64-bit limbs v[0..4], value = sum v[i] * 2^(51*i) mod p.
 * Two struct types, as BoringSSL's 64-bit fiat code has:
 *
 *   fe        "tight": every limb < 2^52 (FE_TIGHT_BOUND). Output of
 *             fe_carry, mul, sq, frombytes and the constants. Operations
 *             produce much less (see each one), 2^52 leaves room.
 *   fe_loose  "loose": every limb < 2^54 (FE_LOOSE_BOUND). Output of
 *             fe_add, fe_sub, fe_neg (sums/differences before a carry).
 *             Accepted by the _l inputs of mul/sq and by fe_carry.
 *
 * A tight value is not unique: it may be >= p, and limbs may exceed 2^51.
 * fe_tobytes is the only canonical form; compare elements through it
 * (fe_equal, fe_iszero, fe_isnegative do).
 *
 * Aliasing: every function here allows its output to be the same object as
 * any of its inputs (fe_copy_lt: the same memory viewed as the other type).
 *
 * Timing: every function here is constant time (no branch, no memory index
 * and no loop bound depends on the value of an element).
 *
 * Bounds: in builds without NDEBUG every operation asserts the bounds of its
 * inputs and of its output with fe_bounds_ok_tight/fe_bounds_ok_loose.
 */
#ifndef SIGIL_FE_H
#define SIGIL_FE_H

#include <stdint.h>

#define FE_TIGHT_BOUND ((uint64_t)1 << 52)
#define FE_LOOSE_BOUND ((uint64_t)1 << 54)
#define FE_MASK51 (((uint64_t)1 << 51) - 1)

typedef struct fe {
	uint64_t v[5]; /* limbs < 2^52 */
} fe;

typedef struct fe_loose {
	uint64_t v[5]; /* limbs < 2^54 */
} fe_loose;

/* 1 if every limb of f is < 2^52 (resp. < 2^54), else 0. Constant time. */
int fe_bounds_ok_tight(const fe *f);
int fe_bounds_ok_loose(const fe_loose *f);

/* Leaf routines on raw limbs, the C twins of the future assembly
 * (crypto/asm, issue 10). h = f * g mod p, h = f^2 mod p.
 * Inputs: limbs < 2^54. Output: limbs < 2^51 except h[1] < 2^51 + 2^18.
 * h may alias f and/or g. Constant time. */
void fe_mul_generic(uint64_t h[5], const uint64_t f[5], const uint64_t g[5]);
void fe_sq_generic(uint64_t h[5], const uint64_t f[5]);

/* h = 0, h = 1. */
void fe_0(fe *h);
void fe_1(fe *h);
/* h = f (tight copy); h = f viewed as loose (tight -> loose, no change). */
void fe_copy(fe *h, const fe *f);
void fe_copy_lt(fe_loose *h, const fe *f);

/* h = the integer s[0..31] little-endian, bit 255 ignored (RFC 7748 /
 * RFC 8032 decoding). Values in [p, 2^255) are accepted and kept as they
 * are; they reduce lazily. Output limbs < 2^51. Constant time. */
void fe_frombytes(fe *h, const uint8_t s[32]);
/* s = h mod p, canonical (< p), 32 bytes little-endian, bit 255 zero.
 * Input tight. s may overlap nothing in h (different types). Constant time. */
void fe_tobytes(uint8_t s[32], const fe *h);

/* h = f + g. Inputs tight (< 2^52); output limbs < 2^53 (loose). */
void fe_add(fe_loose *h, const fe *f, const fe *g);
/* h = f - g, computed as f + 4p - g so that no limb goes negative.
 * Inputs tight; output limbs < 2^52 + 2^53 < 2^54 (loose). */
void fe_sub(fe_loose *h, const fe *f, const fe *g);
/* h = -f = 4p - f. Input tight; output limbs < 2^53 (loose). */
void fe_neg(fe_loose *h, const fe *f);
/* h = f, carried: loose (< 2^54) -> tight, output limbs < 2^51 + 2^8
 * (limb 0 < 2^51 + 19*2^3). */
void fe_carry(fe *h, const fe_loose *f);

/* h = f * g mod p. The letters name the bounds of h, f, g: t tight, l loose.
 * Output limbs < 2^51 + 2^18. */
void fe_mul_ttt(fe *h, const fe *f, const fe *g);
void fe_mul_tlt(fe *h, const fe_loose *f, const fe *g);
void fe_mul_tll(fe *h, const fe_loose *f, const fe_loose *g);
/* h = f^2 mod p (limbs < 2^51 + 2^18); h = 2 f^2 mod p (limbs < 2^51 + 2^8). */
void fe_sq_tt(fe *h, const fe *f);
void fe_sq_tl(fe *h, const fe_loose *f);
void fe_sq2_tt(fe *h, const fe *f);
/* h = 121666 * f mod p (the (A+2)/4 of RFC 7748's ladder, in the
 * BB + a24*E form). Input tight; output limbs < 2^51 + 2^18. */
void fe_mul121666(fe *h, const fe *f);

/* f = bit ? g : f; bit is 0 or 1. Constant time (masked xor). */
void fe_cmov(fe *f, const fe *g, uint64_t bit);
/* (f, g) = bit ? (g, f) : (f, g); bit is 0 or 1. Constant time. f and g
 * must be different objects. */
void fe_cswap(fe *f, fe *g, uint64_t bit);
/* f = bit ? -f : f (tight in, tight out). Constant time. */
void fe_cneg(fe *f, uint64_t bit);
/* f = |f|: the one of f, -f whose canonical encoding is even. */
void fe_abs(fe *h, const fe *f);

/* 1 if (f mod p) is odd ("negative" in RFC 8032's sense), else 0. */
int fe_isnegative(const fe *f);
/* 1 if f = 0 mod p, else 0. */
int fe_iszero(const fe *f);
/* 1 if f = g mod p, else 0. */
int fe_equal(const fe *f, const fe *g);

/* sqrt(-1) = 2^((p-1)/4) mod p, the even root (canonical limbs). */
extern const fe fe_sqrtm1;

/* fe_pow.c: built from the operations above. Inputs tight, outputs tight,
 * aliasing allowed, constant time (fixed addition chains). */

/* fe_inv.c: h = 1/f mod p (0 maps to 0) = f^(p-2), by a constant-time
 * binary GCD (about twice as fast as the Fermat power). Input tight;
 * output tight (limb 0 < 2^51 + 19 * 2^5, others < 2^51); aliasing
 * allowed. */
void fe_invert_safegcd(fe *h, const fe *f);
/* The same inversion in radix 2^64 (for crypto/fe64, which stays in that
 * radix to the end): x[0..3] little-endian words of a canonical value
 * (0 <= x < p); h = 1/x mod p (0 maps to 0) as four words, below 2^255 +
 * 19 * 2^5 (not canonical). h may alias x. Constant time. */
void fe_invert_safegcd_u64(uint64_t h[4], const uint64_t x[4]);
/* h = f^((p-5)/8) = f^(2^252 - 3). */
void fe_pow22523(fe *h, const fe *f);
/* edwards25519 SqrtRatio: if u/v is a square, r = the non-negative square
 * root of u/v and the result is 1; otherwise r = the non-negative square
 * root of sqrt(-1)*u/v and the result is 0. u = 0 gives r = 0 and 1;
 * v = 0 with u != 0 gives r = 0 and 0. r may alias u or v. */
int fe_sqrt_ratio(fe *r, const fe *u, const fe *v);

#endif /* SIGIL_FE_H */
