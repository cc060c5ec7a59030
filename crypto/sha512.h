/* SPDX-License-Identifier: MIT */
/*
 * sha512.h - internals of SHA-512 (FIPS 180-4) shared inside crypto/.
 * The public API (sigil_sha512*) is in sigil/crypto.h.
 */
#ifndef SIGIL_SHA512_H
#define SIGIL_SHA512_H

#include <stddef.h>
#include <stdint.h>

#define SHA512_BLOCK_LEN 128

/* Process nblocks whole 128-byte blocks at in into state (FIPS 180-4
 * section 6.4.2). Portable C. Time depends on nblocks only. */
void sha512_blocks_generic(uint64_t state[8], const uint8_t *in, size_t nblocks);

#endif /* SIGIL_SHA512_H */
