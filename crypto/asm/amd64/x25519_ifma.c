/* SPDX-License-Identifier: MIT */
/*
 * x25519_ifma.c - the X25519 ladder of x25519_lanes.h with AVX-512 IFMA on
 * 256-bit vectors (F + VL + IFMA), in C with intrinsics: the body of
 * fe64/x25519_lanes_body.h on __m256i (one lane per field element of the
 * step's four multiplications); built only when crypto/ has the amd64 code
 * (crypto/asm/x25519_ifma_none.c otherwise), and its CPUID probe.
 *
 * Constant time: x25519_ifma_ladder is straight-line but for its one
 * public loop; tests/asm/check-ifma-ct.sh reads its object code (Valgrind
 * 3.19 cannot run AVX-512, and hides it from CPUID, so the probe answers
 * NULL under ctgrind and the library takes the ADX ladder there).
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "fe64/fe64.h"
#include "fe64/x25519_lanes.h"
#include "x86_features.h"

#define XI_TARGET __attribute__((target("avx512f,avx512vl,avx512ifma")))

/* declared here only: the probe hands it out; hidden, as the assembly */
__attribute__((visibility("hidden"))) void x25519_ifma_ladder(fe64 *x2, fe64 *z2, const fe64 *x1,
                                                              const uint64_t w[4]);

#define LN_V __m256i
#define LN_F(name) xifma_##name
#define LN_INLINE static inline __attribute__((always_inline)) XI_TARGET
#define LN_ENTRY_ATTR __attribute__((noinline)) XI_TARGET
#define LN_ENTRY_NAME x25519_ifma_ladder
#define LN_ADD(a, b) _mm256_add_epi64(a, b)
#define LN_SUB(a, b) _mm256_sub_epi64(a, b)
#define LN_AND(a, b) _mm256_and_si256(a, b)
#define LN_XOR(a, b) _mm256_xor_si256(a, b)
#define LN_SRL(a, n) _mm256_srli_epi64(a, n)
#define LN_SLL(a, n) _mm256_slli_epi64(a, n)
#define LN_MLO(acc, a, b) _mm256_madd52lo_epu64(acc, a, b)
#define LN_MHI(acc, a, b) _mm256_madd52hi_epu64(acc, a, b)
#define LN_PERM(a, i0, i1, i2, i3) _mm256_permute4x64_epi64(a, (i0) | (i1) << 2 | (i2) << 4 | (i3) << 6)
#define LN_ZPERM(k, a, i0, i1, i2, i3) \
	_mm256_maskz_permutex_epi64((__mmask8)(k), a, (i0) | (i1) << 2 | (i2) << 4 | (i3) << 6)
#define LN_PERMV(a, idx) _mm256_permutexvar_epi64(idx, a)
#define LN_BLEND(k, a, b) _mm256_mask_blend_epi64((__mmask8)(k), a, b)
#define LN_MADD(src, k, a, b) _mm256_mask_add_epi64(src, (__mmask8)(k), a, b)
#define LN_MSUB(src, k, a, b) _mm256_mask_sub_epi64(src, (__mmask8)(k), a, b)
#define LN_SET(x0, x1, x2, x3) \
	_mm256_set_epi64x((long long)(x3), (long long)(x2), (long long)(x1), (long long)(x0))
#define LN_LANE(a, j) ((uint64_t)_mm256_extract_epi64(a, j))
/* The ladder's state (secret) is in vector registers to the end: all 32
 * cleared before return, as the SHA-512 assembly does with VZEROALL
 * (ymm16..31 are beyond VZEROALL's reach); a later spill of the vector
 * state (a signal frame, the lazy binder's XSAVE) then holds zeros. */
#define LN_SCRUB() X86_VECTOR_SCRUB()

#include "fe64/x25519_lanes_body.h"


x25519_lanes_fn *x25519_lanes_probe(void)
{
	if (x86_cpu_has(X86_AVX512F | X86_AVX512VL | X86_AVX512IFMA, X86_XCR0_ZMM))
		return x25519_ifma_ladder;
	return NULL;
}

#undef XI_TARGET
