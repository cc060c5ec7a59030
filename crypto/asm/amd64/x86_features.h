/* SPDX-License-Identifier: MIT */
/*
 * x86_features.h - the one CPUID/XGETBV question every amd64 probe asks
 * (internal to libsigil-crypto; each probe runs once, cached by its caller).
 */
#ifndef SIGIL_X86_FEATURES_H
#define SIGIL_X86_FEATURES_H

#include <cpuid.h>
#include <stdint.h>

/* CPUID leaf 7, subleaf 0, EBX bits */
#define X86_AVX2 (1u << 5)
#define X86_BMI2 (1u << 8)
#define X86_AVX512F (1u << 16)
#define X86_ADX (1u << 19)
#define X86_AVX512IFMA (1u << 21)
#define X86_AVX512VL (1u << 31)
/* XCR0 bits: the OS saves this register state */
#define X86_XCR0_YMM 0x06u    /* XMM, YMM */
#define X86_XCR0_ZMM 0xe6u    /* XMM, YMM, opmask, ZMM0-15 upper, ZMM16-31 */

/* 1 when leaf 7's EBX has every bit of @leaf7_ebx and, if @xcr0 is not 0,
 * the OS saves every state of @xcr0 (leaf 1 ECX bit 27 OSXSAVE: XGETBV is
 * usable; then XCR0). Else 0. GPR-only extensions (BMI2, ADX) pass 0. */
static inline int x86_cpu_has(uint32_t leaf7_ebx, uint32_t xcr0)
{
	unsigned int a, b, c, d;

	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	if (xcr0 != 0) {
		uint32_t lo, hi;

		__cpuid(1, a, b, c, d);
		if (((c >> 27) & 1) == 0)
			return 0;
		/* XGETBV with ECX = 0 (XCR0); the bytes need no -mxsave */
		__asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
		(void)hi;
		if ((lo & xcr0) != xcr0)
			return 0;
	}
	__cpuid_count(7, 0, a, b, c, d);
	(void)a;
	(void)c;
	(void)d;
	return (b & leaf7_ebx) == leaf7_ebx;
}

/* Clears all 32 vector registers (VZEROALL, then zmm16..31, beyond its
 * reach): run last by the AVX-512 routines whose state is secret, so that
 * a later spill of the vector state (a signal frame, the lazy binder's
 * XSAVE) holds zeros. */
#define X86_VECTOR_SCRUB()                                                                         \
	__asm__ volatile("vzeroall\n\t"                                                            \
	                 "vpxord %%ymm16, %%ymm16, %%ymm16\n\tvpxord %%ymm17, %%ymm17, %%ymm17\n\t"    \
	                 "vpxord %%ymm18, %%ymm18, %%ymm18\n\tvpxord %%ymm19, %%ymm19, %%ymm19\n\t"    \
	                 "vpxord %%ymm20, %%ymm20, %%ymm20\n\tvpxord %%ymm21, %%ymm21, %%ymm21\n\t"    \
	                 "vpxord %%ymm22, %%ymm22, %%ymm22\n\tvpxord %%ymm23, %%ymm23, %%ymm23\n\t"    \
	                 "vpxord %%ymm24, %%ymm24, %%ymm24\n\tvpxord %%ymm25, %%ymm25, %%ymm25\n\t"    \
	                 "vpxord %%ymm26, %%ymm26, %%ymm26\n\tvpxord %%ymm27, %%ymm27, %%ymm27\n\t"    \
	                 "vpxord %%ymm28, %%ymm28, %%ymm28\n\tvpxord %%ymm29, %%ymm29, %%ymm29\n\t"    \
	                 "vpxord %%ymm30, %%ymm30, %%ymm30\n\tvpxord %%ymm31, %%ymm31, %%ymm31"          \
	                 ::: "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8",   \
	                   "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15", "xmm16",       \
	                   "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23", "xmm24",      \
	                   "xmm25", "xmm26", "xmm27", "xmm28", "xmm29", "xmm30", "xmm31")

#endif
