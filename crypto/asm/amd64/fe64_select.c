/* SPDX-License-Identifier: MIT */
/*
 * fe64_select.c - which fe64 assembly this amd64 CPU runs (compiled only
 * when the build has the amd64 assembly; crypto/asm/none.c otherwise).
 * Asked by cpu.c once; CPUID is not cheap (it traps in some VMs).
 */
#include <stddef.h>

#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "x86_features.h"

static const fe64_ops fe64_ops_adx = {
	.mul = fe64_mul_adx,
	.sq = fe64_sq_adx,
	.ladder_step = fe64_ladder_step_adx,
	.sq_n = fe64_sq_n_adx,
	.name = "amd64_adx",
};

/* CPUID leaf 7, subleaf 0, EBX: bit 8 BMI2 (MULX), bit 19 ADX (ADCX,
 * ADOX). Neither needs OS support (general-purpose registers only). */
int fe64_adx_capable(void)
{
	return x86_cpu_has(X86_BMI2 | X86_ADX, 0);
}

const fe64_ops *fe64_ops_asm_probe(void)
{
	return fe64_adx_capable() ? &fe64_ops_adx : NULL;
}

static const ge64_ops ge64_ops_adx = {
	.p1p1_to_p2 = ge64_p1p1_to_p2_adx,
	.p1p1_to_p3 = ge64_p1p1_to_p3_adx,
	.p2_dbl = ge64_p2_dbl_adx,
	.madd = ge64_madd_adx,
	.msub = ge64_msub_adx,
	.add = ge64_add_adx,
	.sub = ge64_sub_adx,
	.fe = &fe64_ops_adx,
};

const ge64_ops *ge64_ops_asm_probe(void)
{
	return fe64_adx_capable() ? &ge64_ops_adx : NULL;
}
