/* SPDX-License-Identifier: MIT */
/*
 * sha512.h - internals of SHA-512 (FIPS 180-4) shared inside crypto/.
 * The public API (sigil_sha512*) is in sigil/crypto.h.
 *
 * Block functions: the portable C one (sha512.c) is always there; builds
 * with the amd64 code add an AVX2+BMI2 one and an AVX-512VL one (generated
 * assembly, crypto/asm/amd64/sha512_avx2.S, their probes in sha512_avx2.c;
 * crypto/asm/sha512_none.c in the others: meson chooses, no #ifdef). The
 * streaming functions take the block function as an argument, so that the
 * tests run every implementation through the same code; sigil_sha512_*
 * pass the one chosen at run time (sha512_blocks_chosen).
 */
#ifndef SIGIL_SHA512_H
#define SIGIL_SHA512_H

#include <stddef.h>
#include <stdint.h>

#include "sigil/crypto.h"

#define SHA512_BLOCK_LEN 128

/* FIPS 180-4 section 4.2.3 (defined in sha512.c) */
extern const uint64_t sha512_K[80];

/* Process nblocks whole 128-byte blocks at in into state (FIPS 180-4
 * section 6.4.2). Every implementation has this contract: time depends on
 * nblocks only; nblocks may be 0; no alignment needed. */
typedef void sha512_blocks_fn(uint64_t state[8], const uint8_t *in, size_t nblocks);

/* Portable C: the reference and the fallback. */
sha512_blocks_fn sha512_blocks_generic;

/* The AVX2+BMI2 block function if this build has it, whatever the CPU
 * (tests and ctgrind call it directly), else NULL. */
sha512_blocks_fn *sha512_blocks_avx2_built(void);

/* 1 if this build has the AVX2+BMI2 block function and this CPU and OS run
 * it (CPUID: AVX2, BMI1, BMI2, OSXSAVE; XGETBV: the OS saves XMM and YMM),
 * else 0. */
int sha512_avx2_capable(void);

/* The same for the AVX-512VL block function (the AVX2 one with its message
 * schedule in AVX-512VL: VPRORQ, VPTERNLOGQ): built in the same builds;
 * capable when the CPU has AVX2, BMI1, BMI2, AVX-512 F and VL and the OS
 * saves the AVX-512 state (XCR0: opmask, ZMM). */
sha512_blocks_fn *sha512_blocks_avx512_built(void);
int sha512_avx512_capable(void);

/* The block function sigil_sha512* use: the AVX-512VL one when capable,
 * else the AVX2 one when capable, else the portable one. Asked once
 * (CPUID), then cached. */
sha512_blocks_fn *sha512_blocks_chosen(void);

/* sigil_sha512_update / _final with an explicit block function (the same
 * contract otherwise). Every block function computes the same thing, so
 * the choice may even change between calls on one context. */
void sha512_update_with(sigil_sha512_ctx *c, const uint8_t *m, size_t mlen, sha512_blocks_fn *blocks);
void sha512_final_with(sigil_sha512_ctx *c, uint8_t out[64], sha512_blocks_fn *blocks);

#endif /* SIGIL_SHA512_H */
