/* SPDX-License-Identifier: MIT */
/*
 * fe64_select.c - the fe64 assembly of AArch64 builds (compiled only when
 * the build has crypto/asm/arm64/fe64_arm64.S; crypto/asm/none.c
 * otherwise). The routines use only the base A64 instruction set, which
 * every AArch64 CPU runs: no CPU check, the probe always answers with them
 * and sigil_crypto_impl() says "arm64".
 */
#include <stddef.h>

#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "asm/arm64/fe64_arm64.h"

const fe64_ops fe64_ops_arm64 = {
	.mul = fe64_mul_arm64,
	.sq = fe64_sq_arm64,
	.ladder_step = fe64_ladder_step_arm64,
	.sq_n = fe64_sq_n_arm64,
	.name = "arm64",
};

const ge64_ops ge64_ops_arm64 = {
	.p1p1_to_p2 = ge64_p1p1_to_p2_arm64,
	.p1p1_to_p3 = ge64_p1p1_to_p3_arm64,
	.p2_dbl = ge64_p2_dbl_arm64,
	.madd = ge64_madd_arm64,
	.msub = ge64_msub_arm64,
	.add = ge64_add_arm64,
	.sub = ge64_sub_arm64,
	.fe = &fe64_ops_arm64,
};

/* The amd64 routines (BMI2 + ADX) are not in this build. */
int fe64_adx_capable(void)
{
	return 0;
}

const fe64_ops *fe64_ops_asm_probe(void)
{
	return &fe64_ops_arm64;
}

const ge64_ops *ge64_ops_asm_probe(void)
{
	return &ge64_ops_arm64;
}
