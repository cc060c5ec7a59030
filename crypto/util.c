/* SPDX-License-Identifier: MIT */
/*
 * util.c - wiping and constant-time comparison for the public API.
 */
#include "sigil/crypto.h"
#include "ct.h"

/* Write zeros over n bytes at p in a way the compiler may not remove.
 * Writes through a volatile pointer may not be elided (C11 5.1.2.3p6), and
 * the empty asm with a "memory" clobber that takes p afterwards tells the
 * compiler the zeros may be read, so it cannot treat the stores as dead
 * even after inlining with LTO (Monocypher crypto_wipe; the barrier is the
 * technique of glibc's explicit_bzero). 2026-11: checked with gcc 12 and
 * clang 14 at -O3. Timing: depends on n only. */
SIGIL_EXPORT void sigil_wipe(void *p, size_t n)
{
	volatile uint8_t *v = (volatile uint8_t *)p;

	for (size_t i = 0; i < n; i++)
		v[i] = 0;
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

/* 0 if the 32 bytes at a and b are equal, -1 if not. Constant time: every
 * byte is read, the differences are OR-ed together, and the result is
 * turned into 0/-1 by arithmetic (ct_neq_bytes), with no early exit. */
SIGIL_EXPORT int sigil_verify32(const uint8_t a[32], const uint8_t b[32])
{
	return -(int)ct_neq_bytes(a, b, 32);
}
