/* SPDX-License-Identifier: MIT */
/*
 * x25519_lanes.c - the portable C twin of the AVX-512 IFMA ladder
 * (x25519_lanes.h): fe64/x25519_lanes_body.h on a struct of four uint64_t,
 * VPMADD52LUQ/HUQ computed from 26-bit halves. Built in every build, for
 * the tests (cpu.c never chooses it); bit for bit the IFMA routine's.
 */
#include <stdint.h>

#include "fe64/fe64.h"
#include "fe64/x25519_lanes.h"

typedef struct {
	uint64_t v[4];
} xlg_v;

#define XLG_M52 ((UINT64_C(1) << 52) - 1)
#define XLG_M26 ((UINT64_C(1) << 26) - 1)
#define XLG_LANES(expr)                 \
	do {                            \
		for (int j = 0; j < 4; j++) \
			r.v[j] = (expr);  \
	} while (0)

static inline xlg_v xlg_add(xlg_v a, xlg_v b) { xlg_v r; XLG_LANES(a.v[j] + b.v[j]); return r; }
static inline xlg_v xlg_sub(xlg_v a, xlg_v b) { xlg_v r; XLG_LANES(a.v[j] - b.v[j]); return r; }
static inline xlg_v xlg_and(xlg_v a, xlg_v b) { xlg_v r; XLG_LANES(a.v[j] & b.v[j]); return r; }
static inline xlg_v xlg_xor(xlg_v a, xlg_v b) { xlg_v r; XLG_LANES(a.v[j] ^ b.v[j]); return r; }
static inline xlg_v xlg_srl(xlg_v a, int n) { xlg_v r; XLG_LANES(a.v[j] >> n); return r; }
static inline xlg_v xlg_sll(xlg_v a, int n) { xlg_v r; XLG_LANES(a.v[j] << n); return r; }

/* the 104-bit product of the low 52 bits of a and b: low and high 52 bits */
static inline void xlg_mul52(uint64_t *lo, uint64_t *hi, uint64_t a, uint64_t b)
{
	uint64_t a0 = a & XLG_M26, a1 = (a >> 26) & XLG_M26;
	uint64_t b0 = b & XLG_M26, b1 = (b >> 26) & XLG_M26;
	uint64_t mid = a1 * b0 + a0 * b1;                /* < 2^53 */
	uint64_t low = a0 * b0 + ((mid & XLG_M26) << 26); /* < 2^53 */
	*lo = low & XLG_M52;
	*hi = a1 * b1 + (mid >> 26) + (low >> 52);
}

/* acc + the low (hi = 0) or high (hi = 1, public) 52 bits, lane by lane */
static inline xlg_v xlg_madd52(xlg_v acc, xlg_v a, xlg_v b, int hi)
{
	for (int j = 0; j < 4; j++) {
		uint64_t l, h;
		xlg_mul52(&l, &h, a.v[j], b.v[j]);
		acc.v[j] += hi ? h : l;
	}
	return acc;
}

static inline xlg_v xlg_perm(xlg_v a, int i0, int i1, int i2, int i3)
{
	xlg_v r = {{a.v[i0], a.v[i1], a.v[i2], a.v[i3]}};
	return r;
}

/* lane j: (bit j of k) ? b : a, without a branch on the lanes */
static inline xlg_v xlg_blend(unsigned k, xlg_v a, xlg_v b)
{
	xlg_v r;
	XLG_LANES(a.v[j] ^ ((a.v[j] ^ b.v[j]) & (0 - (uint64_t)((k >> j) & 1))));
	return r;
}

/* lane j = lane idx.v[j] (secret, < 4) of a, by masks: no memory index */
static inline xlg_v xlg_permv(xlg_v a, xlg_v idx)
{
	xlg_v r;
	for (int j = 0; j < 4; j++) {
		r.v[j] = 0;
		for (uint64_t i = 0; i < 4; i++)
			r.v[j] |= a.v[i] & (0 - (uint64_t)(((idx.v[j] ^ i) | (0 - (idx.v[j] ^ i))) >> 63 ^ 1));
	}
	return r;
}

static inline xlg_v xlg_set(uint64_t x0, uint64_t x1, uint64_t x2, uint64_t x3)
{
	xlg_v r = {{x0, x1, x2, x3}};
	return r;
}

#define LN_V xlg_v
#define LN_F(name) xlg_##name
#define LN_INLINE static inline
#define LN_ENTRY_ATTR
#define LN_ENTRY_NAME x25519_lanes_generic
#define LN_ADD(a, b) xlg_add(a, b)
#define LN_SUB(a, b) xlg_sub(a, b)
#define LN_AND(a, b) xlg_and(a, b)
#define LN_XOR(a, b) xlg_xor(a, b)
#define LN_SRL(a, n) xlg_srl(a, n)
#define LN_SLL(a, n) xlg_sll(a, n)
#define LN_MLO(acc, a, b) xlg_madd52(acc, a, b, 0)
#define LN_MHI(acc, a, b) xlg_madd52(acc, a, b, 1)
#define LN_PERM(a, i0, i1, i2, i3) xlg_perm(a, i0, i1, i2, i3)
#define LN_ZPERM(k, a, i0, i1, i2, i3) xlg_blend(k, xlg_set(0, 0, 0, 0), xlg_perm(a, i0, i1, i2, i3))
#define LN_PERMV(a, idx) xlg_permv(a, idx)
#define LN_BLEND(k, a, b) xlg_blend(k, a, b)
#define LN_MADD(src, k, a, b) xlg_blend(k, src, xlg_add(a, b))
#define LN_MSUB(src, k, a, b) xlg_blend(k, src, xlg_sub(a, b))
#define LN_SET(x0, x1, x2, x3) xlg_set(x0, x1, x2, x3)
#define LN_LANE(a, j) ((a).v[j])

#include "fe64/x25519_lanes_body.h"

#undef XLG_M52
#undef XLG_M26
#undef XLG_LANES
