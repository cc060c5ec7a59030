/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - the run-time choice of the field implementation, made once, at
 * first use. The build brings a probe (crypto/asm/<arch>/fe64_select.c, or
 * crypto/asm/none.c when it has no assembly: meson chooses, no #ifdef);
 * the probe asks CPUID. The choice concerns the X25519 ladder and the
 * double scalar multiplication of verification: the fe64/ge64 assembly
 * when the CPU runs it, else the portable radix-2^51 code.
 *
 * Thread safety: the probe is idempotent, so two threads racing through the
 * first use store the same pointer; the atomics make that race defined.
 */
#include <stddef.h>

#include <sigil/crypto.h>

#include "fe64/fe64.h"
#include "fe64/ge64.h"

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

/* The same for the ge64 point routines (NULL: not probed yet or none;
 * probed at most once per thread that sees NULL, idempotent). */
static const ge64_ops ge64_probe_none;
static const ge64_ops *ge64_chosen;

const ge64_ops *ge64_ops_asm(void)
{
	const ge64_ops *ops = __atomic_load_n(&ge64_chosen, __ATOMIC_ACQUIRE);
	if (ops == NULL) {
		ops = ge64_ops_asm_probe();
		if (ops == NULL)
			ops = &ge64_probe_none;
		__atomic_store_n(&ge64_chosen, ops, __ATOMIC_RELEASE);
	}
	return ops == &ge64_probe_none ? NULL : ops;
}

/* fe64_sq_n_adx or NULL: 0 not probed, 1 probed (fe64_sqn_fn valid). */
static fe64_sq_n_fn *fe64_sqn_fn;
static int fe64_sqn_state;

fe64_sq_n_fn *fe64_sq_n_asm(void)
{
	if (__atomic_load_n(&fe64_sqn_state, __ATOMIC_ACQUIRE) == 0) {
		__atomic_store_n(&fe64_sqn_fn, fe64_sq_n_asm_probe(), __ATOMIC_RELAXED);
		__atomic_store_n(&fe64_sqn_state, 1, __ATOMIC_RELEASE);
	}
	return __atomic_load_n(&fe64_sqn_fn, __ATOMIC_RELAXED);
}

SIGIL_EXPORT const char *sigil_crypto_impl(void)
{
	const fe64_ops *ops = fe64_ops_asm();
	return ops != NULL ? ops->name : "generic";
}
