/* SPDX-License-Identifier: MIT */
/*
 * ct.h - constant-time primitives. Nowhere else in crypto/ may define masks
 * (STYLE.md section 6).
 *
 * A "mask" is all-ones or zero. Masks are made from data by arithmetic only
 * and passed through ct_barrier_u64() so that the compiler cannot prove the
 * value is a 0/1 boolean and turn a select back into a branch. (2026-11:
 * gcc 12 and clang 14 at -O2/-O3 keep the selects below branch-free with the
 * barrier; ctgrind in tests/ct checks every caller on both compilers.)
 *
 * CT_SECRET(p, n) marks n bytes at p as secret; CT_DECLASSIFY(p, n) marks
 * them public again. With -Dct_validation=true they become Valgrind
 * Memcheck client requests (ctgrind: a branch or an address that depends on
 * "undefined" bytes is reported); otherwise they compile to nothing.
 */
#ifndef SIGIL_CT_H
#define SIGIL_CT_H

#include <stddef.h>
#include <stdint.h>

#if defined(SIGIL_CT_VALIDATION)
#include <valgrind/memcheck.h>
#define CT_SECRET(p, n) ((void)VALGRIND_MAKE_MEM_UNDEFINED((p), (n)))
#define CT_DECLASSIFY(p, n) ((void)VALGRIND_MAKE_MEM_DEFINED((p), (n)))
#else
#define CT_SECRET(p, n) ((void)(p), (void)(n))
#define CT_DECLASSIFY(p, n) ((void)(p), (void)(n))
#endif

/* An optimisation barrier: returns a unchanged, but the compiler no longer
 * knows anything about its value (BoringSSL value_barrier_w). */
static inline uint64_t ct_barrier_u64(uint64_t a)
{
	__asm__("" : "+r"(a) : :);
	return a;
}

static inline uint32_t ct_barrier_u32(uint32_t a)
{
	__asm__("" : "+r"(a) : :);
	return a;
}

/* bit in {0, 1} -> mask (0 -> 0, 1 -> all ones) */
static inline uint64_t ct_mask_u64(uint64_t bit)
{
	return 0 - ct_barrier_u64(bit);
}

/* 1 if a != 0, else 0 */
static inline uint64_t ct_nonzero_u64(uint64_t a)
{
	return ct_barrier_u64((a | (0 - a)) >> 63);
}

/* mask: all ones if a == b */
static inline uint64_t ct_eq_u64(uint64_t a, uint64_t b)
{
	return ct_mask_u64(ct_nonzero_u64(a ^ b) ^ 1);
}

/* mask: all ones if a == 0 */
static inline uint64_t ct_iszero_u64(uint64_t a)
{
	return ct_mask_u64(ct_nonzero_u64(a) ^ 1);
}

/* mask: all ones if a < b (unsigned) (BoringSSL constant_time_lt_w) */
static inline uint64_t ct_lt_u64(uint64_t a, uint64_t b)
{
	return ct_mask_u64((a ^ ((a ^ b) | ((a - b) ^ a))) >> 63);
}

/* mask ? a : b */
static inline uint64_t ct_select_u64(uint64_t mask, uint64_t a, uint64_t b)
{
	return (mask & a) | (~mask & b);
}

/* Constant-time byte comparison: 0 if the n bytes are equal, 1 if not.
 * Time depends on n only. */
static inline uint64_t ct_neq_bytes(const uint8_t *a, const uint8_t *b, size_t n)
{
	uint64_t d = 0;
	for (size_t i = 0; i < n; i++)
		d |= (uint64_t)(a[i] ^ b[i]);
	return ct_nonzero_u64(d);
}

/* Conditionally copy n bytes: dst = mask ? src : dst. mask is all ones or
 * zero. volatile keeps the compiler from "optimising" the loop into a
 * branch on mask (Monocypher's note on its fe_ccopy). */
static inline void ct_cmov_bytes(uint8_t *dst, const uint8_t *src, size_t n, uint64_t mask)
{
	volatile uint8_t m8 = (uint8_t)mask;
	uint8_t m = m8;
	for (size_t i = 0; i < n; i++)
		dst[i] ^= (uint8_t)(m & (dst[i] ^ src[i]));
}

#endif /* SIGIL_CT_H */
