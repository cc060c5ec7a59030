/* SPDX-License-Identifier: MIT */
/* ctgrind-asm-none.c - this build has no assembly (-Dasm=disabled, or no
 * assembly for the target): there is none to check. */
#include "ctgrind.h"
#include "fe64/fe64.h"

const fe64_ops *ctg_asm_ops(void);

const fe64_ops *ctg_asm_ops(void)
{
	return NULL;
}
