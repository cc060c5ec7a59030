/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - the run-time choice of the field implementation, made once, at
 * first use. The build brings a probe (crypto/asm/<arch>/fe64_select.c, or
 * crypto/asm/none.c when it has no assembly: meson chooses, no #ifdef);
 * the probe asks CPUID. Today the choice concerns the X25519 ladder: the
 * fe64 assembly when the CPU runs it, else the portable radix-2^51 code.
 *
 * Thread safety: the probe is idempotent, so two threads racing through the
 * first use store the same pointer; the atomics make that race defined.
 */
#include <stddef.h>

#include <sigil/crypto.h>

#include "fe64.h"

/* &fe64_probe_none: probed, no assembly. NULL: not probed yet. */
static const fe64_ops fe64_probe_none = { NULL, NULL, NULL, "generic" };
static const fe64_ops *fe64_chosen;

const fe64_ops *fe64_ops_asm(void)
{
	const fe64_ops *ops = __atomic_load_n(&fe64_chosen, __ATOMIC_ACQUIRE);
	if (ops == NULL) {
		ops = fe64_ops_asm_probe();
		if (ops == NULL)
			ops = &fe64_probe_none;
		__atomic_store_n(&fe64_chosen, ops, __ATOMIC_RELEASE);
	}
	return ops == &fe64_probe_none ? NULL : ops;
}

SIGIL_EXPORT const char *sigil_crypto_impl(void)
{
	const fe64_ops *ops = fe64_ops_asm();
	return ops != NULL ? ops->name : "generic";
}
