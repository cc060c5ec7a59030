/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - the run-time choice of the field implementation. Today there is
 * only the portable C one (fe_mul_generic/fe_sq_generic in fe.c); the
 * amd64/arm64 cores of issue 10 will be chosen here, once, by cpuid.
 */
#include <sigil/crypto.h>

SIGIL_EXPORT const char *sigil_crypto_impl(void)
{
	return "generic";
}
