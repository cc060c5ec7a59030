/* SPDX-License-Identifier: MIT */
/*
 * cpu.c - the one run-time choice of the curve implementation (backend.h),
 * made once, at first use. The build brings its probes (meson chooses the
 * files, no #ifdef): crypto/asm/<arch>/fe64_select.c or asm/none.c for the
 * fe64 field and point assembly, asm/amd64/ge64_scan_avx2.c or
 * asm/ge64_scan_none.c for the comb's table scan, asm/amd64/msm_ifma.c or
 * asm/msm_ifma_none.c for batch verification's IFMA lanes,
 * asm/amd64/x25519_ifma.c or asm/x25519_ifma_none.c for the X25519 ladder
 * with IFMA; the amd64 probes ask CPUID (BMI2 + ADX; AVX2; AVX-512 F +
 * IFMA, and VL for the ladder, with the OS's XGETBV), the arm64 one needs no question (base A64).
 *
 * The choice: the 4 x 64-bit backend (crypto/fe64/) with those parts when
 * the field assembly runs here (amd64 with ADX, every arm64), else the
 * portable backend (crypto/ref51/): always with -Dasm=disabled, and where
 * the CPU lacks ADX (or Valgrind hides it).
 *
 * Thread safety: the first caller fills the tables (a compare-and-swap
 * elects it; the others wait for its release store), so the tables are
 * written once and read only after.
 */
#include <stddef.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"

static fe64_impl cpu_fe64_impl;
static backend cpu_fe64_backend;
static const backend *cpu_chosen;
static const fe64_ops *cpu_fe64_asm;
static const ge64_ops *cpu_ge64_asm;
static int cpu_state; /* 0 not probed, 1 probing, 2 done */

static void cpu_probe(void)
{
	const fe64_ops *fe = fe64_ops_asm_probe();
	const ge64_ops *ge = ge64_ops_asm_probe();
	ge64_scan_fn *scan = ge64_scan_asm_probe();

	cpu_fe64_asm = fe;
	cpu_ge64_asm = fe != NULL ? ge : NULL;
	cpu_fe64_impl.fe = cpu_ge64_asm != NULL ? fe : &fe64_ops_generic;
	cpu_fe64_impl.ge = cpu_ge64_asm != NULL ? ge : &ge64_ops_generic;
	cpu_fe64_impl.scan = scan != NULL ? scan : ge64_scan_generic;
	cpu_fe64_impl.sqrt_lanes = msm_sqrt_ratio_lanes_probe();
	cpu_fe64_impl.straus_lanes = msm_straus_lanes_probe();
	/* the IFMA ladder only beside the fe64 assembly: the backend is ref51's
	 * otherwise (no ADX, or Valgrind) */
	cpu_fe64_impl.x25519 = cpu_ge64_asm != NULL ? x25519_lanes_probe() : NULL;
	cpu_fe64_impl.base_lanes = cpu_ge64_asm != NULL ? base_lanes_probe() : NULL;

	if (cpu_ge64_asm != NULL) {
		cpu_fe64_backend = backend_fe64;
		cpu_fe64_backend.name = fe->name;
		cpu_fe64_backend.impl = &cpu_fe64_impl;
		cpu_chosen = &cpu_fe64_backend;
	} else {
		cpu_chosen = &backend_ref51;
	}
}

static void cpu_once(void)
{
	int s = __atomic_load_n(&cpu_state, __ATOMIC_ACQUIRE);
	if (s == 2)
		return;
	int expect = 0;
	if (__atomic_compare_exchange_n(&cpu_state, &expect, 1, 0, __ATOMIC_ACQUIRE,
	                                __ATOMIC_ACQUIRE)) {
		cpu_probe();
		__atomic_store_n(&cpu_state, 2, __ATOMIC_RELEASE);
		return;
	}
	/* another thread is probing: a few CPUID instructions */
	while (__atomic_load_n(&cpu_state, __ATOMIC_ACQUIRE) != 2)
		;
}

const backend *backend_get(void)
{
	cpu_once();
	return cpu_chosen;
}

const fe64_impl *cpu_fe64(void)
{
	cpu_once();
	return &cpu_fe64_impl;
}

const fe64_ops *fe64_ops_asm(void)
{
	cpu_once();
	return cpu_fe64_asm;
}

const ge64_ops *ge64_ops_asm(void)
{
	cpu_once();
	return cpu_ge64_asm;
}

SIGIL_EXPORT const char *sigil_crypto_impl(void)
{
	return backend_get()->name;
}
