/* SPDX-License-Identifier: MIT */
/*
 * ge.h - points of edwards25519 (internal to libsigil-crypto), in the ref10
 * vocabulary shared by libsodium, BoringSSL and Monocypher.
 *
 * The curve: -x^2 + y^2 = 1 + d x^2 y^2 over GF(2^255 - 19),
 * d = -121665/121666; B is the RFC 8032 base point (y = 4/5, x even);
 * L = 2^252 + 27742317777372353535851937790883648493 is the order of B.
 *
 * Coordinate systems (HWCD 2008, "Twisted Edwards curves revisited"):
 *   ge_p2      projective (X:Y:Z), x = X/Z, y = Y/Z
 *   ge_p3      extended (X:Y:Z:T), additionally XY = ZT
 *   ge_p1p1    completed ((X:Z), (Y:T)): x = X/Z, y = Y/T; the result of
 *              add/dbl before the final multiplications; loose limbs
 *   ge_precomp affine (y+x, y-x, 2dxy), for the fixed-base tables
 *   ge_cached  (Y+X, Y-X, Z, 2dT) of a ge_p3, for repeated additions
 *
 * Aliasing: where output and input have the same type, they may be the
 * same object.
 *
 * Timing: everything is constant time except the functions whose names end
 * in _vartime, which take public inputs only. Decoding (ge_frombytes*) runs
 * in constant time but its result (0/-1) is of course visible.
 */
#ifndef SIGIL_GE_H
#define SIGIL_GE_H

#include <stdint.h>

#include "ref51/fe.h"

typedef struct ge_p2 {
	fe X, Y, Z;
} ge_p2;

typedef struct ge_p3 {
	fe X, Y, Z, T;
} ge_p3;

typedef struct ge_p1p1 {
	fe_loose X, Y, Z, T;
} ge_p1p1;

typedef struct ge_precomp {
	fe yplusx, yminusx, xy2d;
} ge_precomp;

typedef struct ge_cached {
	fe_loose YplusX, YminusX, Z, T2d;
} ge_cached;

/* Curve constants (tight, canonical limbs): d, 2d. sqrt(-1) is fe_sqrtm1. */
extern const fe ge_d;
extern const fe ge_d2;

/* The identity in each representation. */
void ge_p2_0(ge_p2 *h);
void ge_p3_0(ge_p3 *h);
void ge_precomp_0(ge_precomp *h);
void ge_cached_0(ge_cached *h);

/* Conversions. */
void ge_p3_to_p2(ge_p2 *r, const ge_p3 *p);
void ge_p3_to_cached(ge_cached *r, const ge_p3 *p);
void ge_p1p1_to_p2(ge_p2 *r, const ge_p1p1 *p);
void ge_p1p1_to_p3(ge_p3 *r, const ge_p1p1 *p);

/* r = 2p. */
void ge_p2_dbl(ge_p1p1 *r, const ge_p2 *p);
void ge_p3_dbl(ge_p1p1 *r, const ge_p3 *p);
/* r = p + q, r = p - q (complete formulas: valid for every input pair,
 * including p = q and the identity). */
void ge_add(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q);
void ge_sub(ge_p1p1 *r, const ge_p3 *p, const ge_cached *q);
void ge_madd(ge_p1p1 *r, const ge_p3 *p, const ge_precomp *q);
void ge_msub(ge_p1p1 *r, const ge_p3 *p, const ge_precomp *q);
/* Conveniences on ge_p3: r = p + q, r = p - q, r = 2p, r = -p, r = 8p. */
void ge_p3_add(ge_p3 *r, const ge_p3 *p, const ge_p3 *q);
void ge_p3_sub(ge_p3 *r, const ge_p3 *p, const ge_p3 *q);
void ge_p3_dbl_p3(ge_p3 *r, const ge_p3 *p);
void ge_p3_neg(ge_p3 *r, const ge_p3 *p);
void ge_mul_by_cofactor(ge_p3 *r, const ge_p3 *p);

/* The RFC 8032 encoding: canonical y, bit 255 = sign (parity) of x. */
void ge_p3_tobytes(uint8_t s[32], const ge_p3 *h);
void ge_tobytes(uint8_t s[32], const ge_p2 *h);

/* Decode s (RFC 8032 section 5.1.3). Returns 0 and sets h, or returns -1
 * (not on the curve) and leaves h untouched. Accepted: y >= p (the 19
 * non-canonical values y + p < 2^255), reduced mod p. Refused: y for which
 * no x exists, and x = 0 with the sign bit set (step 4). */
int ge_frombytes(ge_p3 *h, const uint8_t s[32]);
/* The same, but x = 0 with the sign bit set is accepted (and decodes to the
 * point with x = 0), as ZIP 215 and curve25519-dalek's decompression do. */
int ge_frombytes_zip215(ge_p3 *h, const uint8_t s[32]);

/* 1 if s is the canonical encoding of its y (the 255-bit y is < p), else 0.
 * The sign bit is not examined (as libsodium's ge25519_is_canonical).
 * Constant time. */
int ge_is_canonical(const uint8_t s[32]);
/* 1 if s encodes (possibly non-canonically, either sign bit) a point of
 * order 1, 2, 4 or 8, else 0. Decided on the encoding alone, like
 * libsodium's ge25519_has_small_order blocklist: y in {0, 1, p-1, p, p+1,
 * y8, p-y8}, y8 the y of the points of order 8. Constant time. */
int ge_has_small_order(const uint8_t s[32]);
/* 1 if [8]p is the identity, else 0. Constant time. */
int ge_is_small_order(const ge_p3 *p);
/* 1 if p is the identity (X = 0 and Y = Z), else 0. Constant time. */
int ge_p3_is_identity(const ge_p3 *p);
/* 1 if p and q are the same point (X1 Z2 = X2 Z1 and Y1 Z2 = Y2 Z1). */
int ge_p3_equal(const ge_p3 *p, const ge_p3 *q);

/* h = a B. a[31] <= 127 (any clamped or reduced scalar). Constant time:
 * signed radix-16 windows over the table of ge_table.h, every entry read
 * for every window (ge_precomp_select). (The 4 x 64-bit backend has its
 * own comb: fe64/ge64.h.) */
void ge_scalarmult_base(ge_p3 *h, const uint8_t a[32]);
/* t = the entry b of table row pos, for b in [-8, 8] (0 gives the
 * identity): reads all 8 entries; constant time in b. */
void ge_precomp_select(ge_precomp *t, int pos, signed char b);

/* r = a A + b B, a and b any 256-bit integers (little-endian).
 * Variable time (non-adjacent forms: width 5 for A, whose 8 odd multiples
 * are computed per call; width 8 for B, whose 64 odd multiples are the
 * table ge_bi8): public inputs only (verification). */
void ge_double_scalarmult_vartime(ge_p2 *r, const uint8_t a[32], const ge_p3 *A,
                                  const uint8_t b[32]);
/* r = sum_{i<n} a_i P_i + b B (Straus: one chain of doublings, width-5 NAF
 * of every a_i, width-8 NAF of b over ge_bi8); 0 <= n <= GE_MSM_MAX. Uses
 * about 1.5 KiB of stack per point (its odd multiples and digits; about
 * 50 KiB at n = GE_MSM_MAX), nothing on the heap. The batch equation of
 * this backend (ref51/backend51.c) sums it over chunks of GE_MSM_MAX
 * points; tests/crypto/test-batch.c and tests/asm check the 4 x 64-bit
 * backend's msm.c and ge64.c against it.
 * Variable time: public inputs only. */
#define GE_MSM_MAX 32
void ge_multi_scalarmult_vartime(ge_p3 *r, const uint8_t (*a)[32], const ge_p3 *P, int n,
                                 const uint8_t b[32]);
/* h = 2^128 B (ge_table.h's ge_b128): verification splits B's scalar
 * into halves over B and this point (ref51/backend51.c). */
void ge_p3_b128(ge_p3 *h);

#endif /* SIGIL_GE_H */
