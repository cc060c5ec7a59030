/* SPDX-License-Identifier: MIT */
/*
 * util.c - wiping and constant-time comparison for the public API.
 */
#include <string.h>

#include "sigil/crypto.h"
#include "ct.h"

/* Write zeros over n bytes at p in a way the compiler may not remove.
 * memset does the work (word-wide stores: the byte-wise volatile loop this
 * replaced cost 8.8% of a signature, docs/throughput.md); the empty asm that
 * takes p and clobbers "memory" afterwards tells the compiler the zeros may
 * be read, so it cannot treat the memset as a dead store, even after
 * inlining with LTO (the technique of glibc's explicit_bzero). 2026-11:
 * checked with gcc 12 and clang 14 at -O3 (tests/crypto/test-util.c checks
 * the exact range is zeroed). Timing: depends on n only. */
SIGIL_EXPORT void sigil_wipe(void *p, size_t n)
{
	if (n == 0)
		return;
	memset(p, 0, n);
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

/* 0 if the 32 bytes at a and b are equal, -1 if not. Constant time: every
 * byte is read, the differences are OR-ed together, and the result is
 * turned into 0/-1 by arithmetic (ct_neq_bytes), with no early exit. */
SIGIL_EXPORT int sigil_verify32(const uint8_t a[32], const uint8_t b[32])
{
	return -(int)ct_neq_bytes(a, b, 32);
}
