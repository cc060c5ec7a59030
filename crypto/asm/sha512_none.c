/* SPDX-License-Identifier: MIT */
/*
 * sha512_none.c - SHA-512 in builds without the amd64 code (-Dasm=disabled,
 * or a CPU family crypto/asm has nothing for): no AVX2 block function, so
 * sigil_sha512* use the portable one (sha512.c).
 */
#include <stddef.h>

#include "sha512.h"

sha512_blocks_fn *sha512_blocks_avx2_built(void)
{
	return NULL;
}

int sha512_avx2_capable(void)
{
	return 0;
}

sha512_blocks_fn *sha512_blocks_avx512_built(void)
{
	return NULL;
}

int sha512_avx512_capable(void)
{
	return 0;
}
