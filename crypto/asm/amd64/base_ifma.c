/* SPDX-License-Identifier: MIT */
/*
 * base_ifma.c - the eight-lane fixed base of base_lanes.h with AVX-512 IFMA
 * on 512-bit vectors (F + IFMA), in C with intrinsics: the body of
 * fe64/base_lanes_body.h on __m512i (one lane per scalar); built only when
 * crypto/ has the amd64 code (crypto/asm/base_lanes_none.c otherwise), and
 * its CPUID probe.
 *
 * Constant time: base_ifma_lanes is straight-line but for its one public
 * loop over the rows; a row's entries are all loaded (public addresses)
 * and VPERMT2Q picks each lane's from the digit in a register.
 * tests/asm/check-ifma-ct.py reads its object code (Valgrind 3.19 cannot
 * run AVX-512, and hides it from CPUID, so the probe answers NULL under
 * ctgrind, which runs the C twin).
 */
#include <immintrin.h>
#include <stddef.h>
#include <stdint.h>

#include "fe64/base_lanes.h"
#include "fe64/base_lanes_table.h"
#include "x86_features.h"

#define BI_TARGET __attribute__((target("avx512f,avx512ifma")))

/* declared here only: the probe hands it out; hidden, as the assembly */
__attribute__((visibility("hidden"))) void base_ifma_lanes(uint64_t (*out)[5][BASE_LANES],
                                                           const uint64_t (*dig)[BASE_LANES]);

#define BL_V __m512i
#define BL_F(name) bli_##name
#define BL_INLINE static inline __attribute__((always_inline)) BI_TARGET
#define BL_ENTRY_ATTR __attribute__((noinline)) BI_TARGET
#define BL_ENTRY_NAME base_ifma_lanes
#define BL_ADD(a, b) _mm512_add_epi64(a, b)
#define BL_SUB(a, b) _mm512_sub_epi64(a, b)
#define BL_AND(a, b) _mm512_and_si512(a, b)
#define BL_XOR(a, b) _mm512_xor_si512(a, b)
#define BL_SRL(a, n) _mm512_srli_epi64(a, n)
#define BL_SLL(a, n) _mm512_slli_epi64(a, n)
#define BL_SIGN(a) _mm512_srai_epi64(a, 63)
#define BL_MLO(acc, a, b) _mm512_madd52lo_epu64(acc, a, b)
#define BL_MHI(acc, a, b) _mm512_madd52hi_epu64(acc, a, b)
#define BL_PERM2(a, idx, b) _mm512_permutex2var_epi64(a, idx, b)
/* m ? b : a, bit by bit: VPTERNLOGQ's table 0xca */
#define BL_SEL(m, a, b) _mm512_ternarylogic_epi64(m, b, a, 0xca)
#define BL_SET1(x) _mm512_set1_epi64((long long)(x))
#define BL_LOAD(p) _mm512_load_si512((const void *)(p))
#define BL_STORE(p, v) _mm512_store_si512((void *)(p), v)
/* The lanes' state (secret) is in vector registers to the end: all 32
 * cleared before return (zmm16..31 are beyond VZEROALL's reach). */
#define BL_SCRUB() X86_VECTOR_SCRUB()

#include "fe64/base_lanes_body.h"

base_lanes_fn *base_lanes_probe(void)
{
	if (x86_cpu_has(X86_AVX512F | X86_AVX512IFMA, X86_XCR0_ZMM))
		return base_ifma_lanes;
	return NULL;
}

#undef BI_TARGET
