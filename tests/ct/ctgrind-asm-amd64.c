/* SPDX-License-Identifier: MIT */
/*
 * ctgrind-asm-amd64.c - the amd64 assembly's ops table, forced (built only
 * when crypto/ has the amd64 assembly; ctgrind-asm-none.c otherwise).
 *
 * Valgrind 3.19 hides ADX from CPUID, so under Valgrind cpu.c always picks
 * the C ladder and ctgrind would never see the assembly. VEX does execute
 * MULX/ADCX/ADOX, so the test calls the assembly directly, bypassing the
 * CPUID dispatch. run-ctgrind.sh says (SIGIL_CTGRIND_HOST_ADX) whether the
 * host CPU really has BMI2 and ADX, which CPUID under Valgrind cannot.
 */
#include "ctgrind.h"
#include "fe64/fe64.h"

const fe64_ops *ctg_asm_ops(void);

const fe64_ops *ctg_asm_ops(void)
{
	static const fe64_ops adx = { fe64_mul_adx, fe64_sq_adx, fe64_ladder_step_adx, fe64_sq_n_adx,
	                              "adx (forced)" };

	return &adx;
}
