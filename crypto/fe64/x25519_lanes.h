/* SPDX-License-Identifier: MIT */
/*
 * x25519_lanes.h - the X25519 ladder four multiplications wide (internal to
 * libsigil-crypto): the contract of the AVX-512 IFMA routine
 * (crypto/asm/amd64/x25519_ifma.c) and of its portable C twin
 * (fe64/x25519_lanes.c), both written once in fe64/x25519_lanes_body.h.
 *
 * The representation: radix 2^51, five limbs, each limb a vector of four
 * 64-bit lanes, one field element per lane. A limb may reach 2^52 where a
 * multiplication reads it (VPMADD52LUQ/HUQ use the low 52 bits of their
 * multiplicands), which leaves one bit of room over the radix. The state
 * of the ladder is the vector (x2, z2, x3, z3); a step is three lane-wise
 * multiplications:
 *
 *   (A, B, C, D)     = (x2 + z2, x2 - z2, x3 + z3, x3 - z3)
 *   (AA, BB, CB, DA) = (A, B, C, D) (A, B, B, A)
 *   (AA, E, F, G)    = (AA, AA - BB, DA + CB, DA - CB)
 *   (x2', a24 E, x3', G^2) = (AA, E, F, G) (BB, a24, F, G)
 *   (x2', z2', x3', z3')   = (x2', E, x3', x1) (1, AA + a24 E, 1, G^2)
 *
 * with a24 = 121665 (RFC 7748 section 5), the conditional swap of the two
 * points a lane permutation under a mask.
 */
#ifndef SIGIL_X25519_LANES_H
#define SIGIL_X25519_LANES_H

#include <stdint.h>

#include "fe64/fe64.h"

/* The 255 steps of the RFC 7748 ladder for bits 254..0 of the clamped
 * scalar w (little-endian words), with the conditional swaps and the final
 * one: (x2 : z2) = w (x1 : 1) in Montgomery x-coordinates. x1 any value
 * below 2^256 (bit 255 is not read); x2 and z2 come out below 2^256.
 * Constant time in w and x1: straight-line code, the one loop's counter
 * public. */
typedef void x25519_lanes_fn(fe64 *x2, fe64 *z2, const fe64 *x1, const uint64_t w[4]);

/* The portable C twin (every build), bit for bit the IFMA routine's. */
void x25519_lanes_generic(fe64 *x2, fe64 *z2, const fe64 *x1, const uint64_t w[4]);

/* The IFMA routine, or NULL (no such code in the build, or the CPU or the
 * OS lacks AVX-512 F + VL + IFMA; Valgrind hides AVX-512). Defined by
 * crypto/asm/amd64/x25519_ifma.c or crypto/asm/x25519_ifma_none.c; asked
 * once, by cpu.c. */
x25519_lanes_fn *x25519_lanes_probe(void);

/* out = X25519(k, u) (RFC 7748, k clamped inside) with ladder: the
 * backend's x25519 when cpu.c found the IFMA routine (backend64.c; the
 * twin of x25519_ladder64 of fe64.h, which shares its clamping and its
 * division). */
void x25519_lanes64(uint8_t out[32], const uint8_t k[32], const uint8_t u[32],
                    x25519_lanes_fn *ladder);

#endif
