/* SPDX-License-Identifier: MIT */
/*
 * none.c - the assembly probe of builds without assembly (-Dasm=disabled,
 * or a CPU family crypto/asm has nothing for): no fe64 assembly, so
 * cpu.c chooses the portable backend (crypto/ref51/).
 */
#include <stddef.h>

#include "fe64/fe64.h"
#include "fe64/ge64.h"

int fe64_adx_capable(void)
{
	return 0;
}

const fe64_ops *fe64_ops_asm_probe(void)
{
	return NULL;
}

const ge64_ops *ge64_ops_asm_probe(void)
{
	return NULL;
}
