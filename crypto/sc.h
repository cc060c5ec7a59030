/* SPDX-License-Identifier: MIT */
/*
 * sc.h - integers modulo the order of the Ed25519 base point,
 *   L = 2^252 + 27742317777372353535851937790883648493 (RFC 8032 section 5.1).
 *
 * A scalar is 32 bytes, little endian. Every function but sc_half_vartime
 * (at the end):
 * - accepts ANY byte string of its input length (not only values < L),
 * - writes a fully reduced result (0 <= out < L),
 * - allows out to alias any input,
 * - runs in constant time (no branch, index or loop bound depends on the
 *   values), and wipes its secret temporaries.
 */
#ifndef SIGIL_SC_H
#define SIGIL_SC_H

#include <stdint.h>

/* out = in mod L, in a 512-bit little-endian integer (e.g. SHA-512 output) */
void sc_reduce(uint8_t out[32], const uint8_t in[64]);
/* out = (a*b + c) mod L, a, b, c any 256-bit integers */
void sc_muladd(uint8_t out[32], const uint8_t a[32], const uint8_t b[32], const uint8_t c[32]);
/* 1 if s < L, else 0 (constant time; s may be public or secret) */
int sc_is_canonical(const uint8_t s[32]);
/* out = a*b mod L */
void sc_mul(uint8_t out[32], const uint8_t a[32], const uint8_t b[32]);
/* out = (a + b) mod L */
void sc_add(uint8_t out[32], const uint8_t a[32], const uint8_t b[32]);
/* out = -a mod L (0 maps to 0) */
void sc_neg(uint8_t out[32], const uint8_t a[32]);

/* The half-size scalars of a verification (Pornin, "Optimized Lattice
 * Basis Reduction In Dimension 2, and Fast Schnorr and EdDSA Signature
 * Verification", 2020): for any 256-bit k, integers c0 >= 0 and c1 odd,
 * |c1| < L, with c0 = k c1 (mod 8L), found by the extended Euclidean
 * algorithm on (8L, k) stopped halfway: both about 128 bits. Writes c0 and
 * |c1| (little-endian, < 2^256) and returns 1 when c1 < 0, else 0.
 * VARIABLE TIME (the exception to the rule above): public k only. */
int sc_half_vartime(uint8_t c0[32], uint8_t c1[32], const uint8_t k[32]);

#endif /* SIGIL_SC_H */
