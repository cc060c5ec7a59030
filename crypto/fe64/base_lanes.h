/* SPDX-License-Identifier: MIT */
/*
 * base_lanes.h - the fixed-base multiplication a B for eight independent
 * secret scalars at once (internal to libsigil-crypto): the contract of the
 * AVX-512 IFMA routine (crypto/asm/amd64/base_ifma.c) and of its portable C
 * twin (fe64/base_lanes.c), both written once in fe64/base_lanes_body.h.
 *
 * One 64-bit lane per scalar: field elements in radix 2^51, five limbs,
 * each limb one vector of eight lanes (a limb may reach 2^52 where a
 * multiplication reads it: VPMADD52LUQ/HUQ use the low 52 bits). The comb:
 * signed radix-2^BL_W digits e[i] in [-2^(BL_W-1), 2^(BL_W-1)], one row of
 * base_lanes_table.h per digit, so that a B = sum_i e[i] 2^(BL_W i) B is
 * BL_ROWS mixed additions (ref10's madd, then p1p1 to p3) and no doubling.
 * A row's entry for a lane is chosen by VPERMT2Q from the lane's digit (an
 * index in a register: every entry of the row is loaded, no address
 * depends on a digit), then the identity or the negation by masks.
 */
#ifndef SIGIL_BASE_LANES_H
#define SIGIL_BASE_LANES_H

#include <stdint.h>

#include "fe64/fe64.h"

#define BASE_LANES 8

/* The comb's digits of eight scalars, lane by lane: dig[i][l] is digit i of
 * lane l's scalar (a two's complement int64); base_lanes_table.h's rows. */
#define BASE_LANES_DIGITS 43

/* dig[i][lane], i < BASE_LANES_DIGITS: the signed radix-2^6 digits of a
 * (a[31] <= 127), each in [-32, 32), the last in [0, 16]: a = sum_i dig[i]
 * 2^(6 i). Constant time in a. */
void base_lanes_digits(uint64_t (*dig)[BASE_LANES], int lane, const uint8_t a[32]);

/* (X : Y : Z) = the point sum_i dig[i][l] 2^(6 i) B in lane l <
 * BASE_LANES, each digit in [-32, 32]: out[c][k][l] is radix-2^51 limb k
 * of coordinate c (X, Y, Z) of lane l, each limb below 2^51 + 2^17 (not
 * reduced; out 64-byte aligned). Constant time in dig: straight-line code
 * but its one loop over the rows (public). */
typedef void base_lanes_fn(uint64_t (*out)[5][BASE_LANES], const uint64_t (*dig)[BASE_LANES]);

/* The portable C twin (every build), bit for bit the IFMA routine's. */
void base_lanes_generic(uint64_t (*out)[5][BASE_LANES], const uint64_t (*dig)[BASE_LANES]);

/* The IFMA routine, or NULL (no such code in the build, or the CPU or the
 * OS lacks AVX-512 F + IFMA; Valgrind hides AVX-512). Defined by
 * crypto/asm/amd64/base_ifma.c or crypto/asm/base_lanes_none.c; asked
 * once, by cpu.c. */
base_lanes_fn *base_lanes_probe(void);

/* s[l] = the encoding of a[l] B (RFC 8032 5.1.2), a[l][31] <= 127, for l <
 * BASE_LANES: the digits, the lanes (lanes), then one inversion for the
 * eight Z (Montgomery's trick, with fe's mul and fe64_invert) and the
 * encodings. Constant time in a; s is the caller's to declassify. */
void base_lanes_encode(uint8_t (*s)[32], const uint8_t (*a)[32], base_lanes_fn *lanes,
                       const fe64_ops *fe);

#endif
