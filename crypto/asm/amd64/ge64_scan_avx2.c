/* SPDX-License-Identifier: MIT */
/*
 * ge64_scan_avx2.c - the constant-time table scan of the fixed-base comb
 * (ge64_scan_fn, ge64.h) with AVX2, and its probe (compiled only when the
 * build has the amd64 assembly; crypto/asm/ge64_scan_none.c otherwise).
 *
 * C with AVX2 intrinsics, not assembly: one function carries
 * target("avx2"), so the rest of the unity build stays baseline x86-64.
 * The C twin is ge64_scan_generic (ge64.c); tests/asm/test-fe64.c compares
 * them on every index, ctgrind (tests/asm/ct-fe64.c) runs this one with a
 * secret index (Valgrind runs AVX2).
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "ct.h"
#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "x86_features.h"

/* A ge64_precomp is three fe64 of 32 bytes, one YMM register each:
 * (yplusx, yminusx, xy2d). The entry of rank |b| - 1 is ORed in under an
 * all-ones lane mask (VPCMPEQQ of the broadcast |b| and the broadcast
 * rank + 1), every other entry under a zero mask: every entry is loaded
 * whole, the loop count n is public, there is no branch on b. The result
 * stays in registers (lanes extracted, no store and reload) for the
 * identity and ge64_precomp_cneg, the ending the C twin shares. */
__attribute__((target("avx2"))) void ge64_scan_avx2(ge64_precomp *t, const ge64_precomp *row,
                                                     uint64_t n, int64_t b)
{
	uint64_t ub = (uint64_t)b;
	uint64_t mneg = ct_mask_u64(ub >> 63);
	uint64_t babs = (ub ^ mneg) - mneg;
	const __m256i want = _mm256_set1_epi64x((long long)babs);
	const __m256i one = _mm256_set1_epi64x(1);
	__m256i rank = one;
	__m256i vp = _mm256_setzero_si256(), vm = vp, vd = vp;
	for (uint64_t j = 0; j < n; j++) {
		const __m256i *e = (const __m256i *)(const void *)&row[j];
		__m256i hit = _mm256_cmpeq_epi64(rank, want);
		vp = _mm256_blendv_epi8(vp, _mm256_loadu_si256(e), hit);
		vm = _mm256_blendv_epi8(vm, _mm256_loadu_si256(e + 1), hit);
		vd = _mm256_blendv_epi8(vd, _mm256_loadu_si256(e + 2), hit);
		rank = _mm256_add_epi64(rank, one);
	}
	uint64_t p[4], m[4];
	fe64 d;
	p[0] = (uint64_t)_mm256_extract_epi64(vp, 0);
	p[1] = (uint64_t)_mm256_extract_epi64(vp, 1);
	p[2] = (uint64_t)_mm256_extract_epi64(vp, 2);
	p[3] = (uint64_t)_mm256_extract_epi64(vp, 3);
	m[0] = (uint64_t)_mm256_extract_epi64(vm, 0);
	m[1] = (uint64_t)_mm256_extract_epi64(vm, 1);
	m[2] = (uint64_t)_mm256_extract_epi64(vm, 2);
	m[3] = (uint64_t)_mm256_extract_epi64(vm, 3);
	d.v[0] = (uint64_t)_mm256_extract_epi64(vd, 0);
	d.v[1] = (uint64_t)_mm256_extract_epi64(vd, 1);
	d.v[2] = (uint64_t)_mm256_extract_epi64(vd, 2);
	d.v[3] = (uint64_t)_mm256_extract_epi64(vd, 3);
	uint64_t id = ct_iszero_u64(babs) & 1;
	p[0] |= id;
	m[0] |= id;
	ge64_precomp_cneg(t, p, m, &d, mneg);
}

/* AVX2 needs the CPU and the OS, which must save the YMM state
 * (x86_features.h). */
static int ge64_avx2_capable(void)
{
	return x86_cpu_has(X86_AVX2, X86_XCR0_YMM);
}

/* Only after ge64_scan_avx2 ran (so the CPU has AVX). */
__attribute__((target("avx"))) void ge64_scan_asm_scrub(void)
{
	_mm256_zeroall();
}

ge64_scan_fn *ge64_scan_asm_probe(void)
{
	return ge64_avx2_capable() ? ge64_scan_avx2 : NULL;
}
