/* SPDX-License-Identifier: MIT */
/*
 * sha512_avx2.c - the SHA-512 block function for amd64 CPUs with AVX2 and
 * BMI2, in C with intrinsics (built only when crypto/ has the amd64 code;
 * crypto/asm/sha512_none.c otherwise), and its CPUID probe.
 *
 * The technique (the one OpenSSL's sha512-x86_64 AVX2 path uses, written
 * here from FIPS 180-4 and the Intel intrinsics guide):
 *  - blocks go by pairs. The message schedule of both is computed at once
 *    in 256-bit registers: X[j] = { W_2j, W_2j+1 of block A | W_2j, W_2j+1
 *    of block B } (j = 0..39), so one vector step makes four words. The
 *    nearest word W_t needs is W_t-2, so both words of a step depend only
 *    on earlier steps. K_t is added there too and W_t + K_t goes to a
 *    stack array;
 *  - the scalar rounds run interleaved with the vector schedule (the
 *    vector units are otherwise idle): the first pair's schedule during
 *    its block A; after that, block B of each pair loads the next pair and
 *    computes the first half of its schedule, and the next block A the
 *    rest, so that no stretch of rounds carries all of it (measured: about
 *    3% faster with gcc 12 than the whole schedule in block A). Block B's
 *    rounds read W_t + K_t from the other lane. The rotations are BMI2
 *    RORX (three operands, no flags) and Ch uses ANDN (BMI1), which the
 *    compiler emits in a "bmi,bmi2" function;
 *  - a lone last block takes the same path with B = A, and only A's rounds.
 *
 * Timing: no branch and no address depends on the message; the loops
 * depend on nblocks only. The schedule array derives from the message and
 * is wiped before return.
 *
 * Static names carry the sha512v_ prefix and the macros are #undef'd at
 * the end: the library is built as one translation unit.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "sigil/crypto.h"
#include "sha512.h"
#include "x86_features.h"

#define SHA512V_TARGET __attribute__((target("avx2,bmi,bmi2")))

/* 64-bit rotate right: one RORX in a bmi2 function. n is 1..63. */
#define SHA512V_ROTR(x, n) (((x) >> (n)) | ((x) << (64 - (n))))

/* FIPS 180-4 section 4.1.3, the functions of the rounds. Ch and Maj in
 * forms with fewer dependent steps: Ch(e,f,g) = (e & f) + (~e & g) (AND
 * and ANDN in parallel; the two terms have no bit in common, so + is ^,
 * and the compiler can fold it into the additions of T1);
 * Maj(a,b,c) = ((a ^ b) & (b ^ c)) ^ b, where b ^ c is the previous
 * round's a ^ b (the compiler shares it). */
#define SHA512V_BSIG0(x) (SHA512V_ROTR((x), 28) ^ SHA512V_ROTR((x), 34) ^ SHA512V_ROTR((x), 39))
#define SHA512V_BSIG1(x) (SHA512V_ROTR((x), 14) ^ SHA512V_ROTR((x), 18) ^ SHA512V_ROTR((x), 41))
#define SHA512V_CH(x, y, z) (((x) & (y)) + (~(x) & (z)))
#define SHA512V_MAJ(x, y, z) ((((x) ^ (y)) & ((y) ^ (z))) ^ (y))

/* One round (FIPS 180-4 6.4.2 step 3) with the variables renamed rather
 * than moved, wk = W_t + K_t:
 *   T1 = h + S1(e) + Ch(e,f,g) + wk;  d' = d + T1;  h' = T1 + S0(a) + Maj(a,b,c) */
#define SHA512V_ROUND(a, b, c, d, e, f, g, h, wk)                                   \
	do {                                                                         \
		uint64_t t1_ = (h) + (wk);                                           \
		t1_ += SHA512V_CH(e, f, g);                                          \
		t1_ += SHA512V_BSIG1(e);                                             \
		(d) += t1_;                                                          \
		(h) = t1_ + SHA512V_BSIG0(a) + SHA512V_MAJ(a, b, c);                 \
	} while (0)

/* Rounds t and t+1 (t even) of one block; wk points at that block's
 * W_t + K_t, W_t+1 + K_t+1 (the two words of its lane). The eight
 * variables come back to their names after 8 rounds. */
#define SHA512V_R2_0(wk) SHA512V_ROUND(a, b, c, d, e, f, g, h, (wk)[0]); SHA512V_ROUND(h, a, b, c, d, e, f, g, (wk)[1])
#define SHA512V_R2_1(wk) SHA512V_ROUND(g, h, a, b, c, d, e, f, (wk)[0]); SHA512V_ROUND(f, g, h, a, b, c, d, e, (wk)[1])
#define SHA512V_R2_2(wk) SHA512V_ROUND(e, f, g, h, a, b, c, d, (wk)[0]); SHA512V_ROUND(d, e, f, g, h, a, b, c, (wk)[1])
#define SHA512V_R2_3(wk) SHA512V_ROUND(c, d, e, f, g, h, a, b, (wk)[0]); SHA512V_ROUND(b, c, d, e, f, g, h, a, (wk)[1])

/* The vector schedule. Shifts by constants only (AVX2 has no 64-bit
 * rotate: ROTR(x, n) = (x >> n) ^ (x << (64 - n)), the halves disjoint).
 *   s0(x) = ROTR(x, 1) ^ ROTR(x, 8) ^ (x >> 7)   (ROTR 8 is a byte shuffle)
 *   s1(x) = ROTR(x, 19) ^ ROTR(x, 61) ^ (x >> 6) */
SHA512V_TARGET static inline __m256i sha512v_ssig0(__m256i x, __m256i rot8)
{
	__m256i r = _mm256_xor_si256(_mm256_srli_epi64(x, 1), _mm256_slli_epi64(x, 63));
	r = _mm256_xor_si256(r, _mm256_srli_epi64(x, 7));
	return _mm256_xor_si256(r, _mm256_shuffle_epi8(x, rot8));
}

SHA512V_TARGET static inline __m256i sha512v_ssig1(__m256i x)
{
	__m256i r = _mm256_xor_si256(_mm256_srli_epi64(x, 19), _mm256_slli_epi64(x, 45));
	r = _mm256_xor_si256(r, _mm256_srli_epi64(x, 61));
	r = _mm256_xor_si256(r, _mm256_slli_epi64(x, 3));
	return _mm256_xor_si256(r, _mm256_srli_epi64(x, 6));
}

/* { K_2j, K_2j+1 } in both lanes */
SHA512V_TARGET static inline __m256i sha512v_kpair(int j)
{
	return _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(sha512_K + 2 * j)));
}

/* X[j] from X[j-8] .. X[j-1] (ring x[0..7], x[j % 8]), for 8 <= j < 40:
 *   W_t = s1(W_t-2) + W_t-7 + s0(W_t-15) + W_t-16 for t = 2j, 2j+1:
 *   { W_t-16, W_t-15 } = X[j-8];  { W_t-15, W_t-14 } = X[j-8]:X[j-7] shifted
 *   by one word (VPALIGNR works within each 128-bit lane, i.e. within each
 *   block);  { W_t-7, W_t-6 } = X[j-4]:X[j-3] shifted by one word;
 *   { W_t-2, W_t-1 } = X[j-1].
 * Then wk[j] = X[j] + { K_2j, K_2j+1 | K_2j, K_2j+1 }. */
#define SHA512V_SCHED(dst, j)                                                             \
	do {                                                                           \
		__m256i w15_ = _mm256_alignr_epi8(x[((j) - 7) & 7], x[((j) - 8) & 7], 8); \
		__m256i w7_ = _mm256_alignr_epi8(x[((j) - 3) & 7], x[((j) - 4) & 7], 8);  \
		__m256i n_ = _mm256_add_epi64(x[((j) - 8) & 7], w7_);                   \
		n_ = _mm256_add_epi64(n_, sha512v_ssig0(w15_, rot8));                  \
		n_ = _mm256_add_epi64(n_, sha512v_ssig1(x[((j) - 1) & 7]));            \
		x[(j) & 7] = n_;                                                       \
		_mm256_store_si256((__m256i *)((dst) + 4 * (j)),                     \
		                   _mm256_add_epi64(n_, sha512v_kpair(j)));            \
	} while (0)

/* Two rounds, then a schedule step: the unit of the interleaving. */
#define SHA512V_R2(k, src, dst, j) \
	do { SHA512V_R2_##k(src); SHA512V_SCHED(dst, j); } while (0)

/* Rounds 16g .. 16g+15 of the block in lane `lane` (0: A, 2: B) of wk
 * array src, with eight schedule steps j0 .. j0+7 into dst, one every two
 * rounds (j0 a multiple of 8: the ring index of each step is constant). */
#define SHA512V_GROUP_SCHED8(g, lane, src, dst, j0)                                      \
	do {                                                                             \
		SHA512V_R2(0, (src) + 4 * (8 * (g) + 0) + (lane), dst, (j0) + 0);       \
		SHA512V_R2(1, (src) + 4 * (8 * (g) + 1) + (lane), dst, (j0) + 1);       \
		SHA512V_R2(2, (src) + 4 * (8 * (g) + 2) + (lane), dst, (j0) + 2);       \
		SHA512V_R2(3, (src) + 4 * (8 * (g) + 3) + (lane), dst, (j0) + 3);       \
		SHA512V_R2(0, (src) + 4 * (8 * (g) + 4) + (lane), dst, (j0) + 4);       \
		SHA512V_R2(1, (src) + 4 * (8 * (g) + 5) + (lane), dst, (j0) + 5);       \
		SHA512V_R2(2, (src) + 4 * (8 * (g) + 6) + (lane), dst, (j0) + 6);       \
		SHA512V_R2(3, (src) + 4 * (8 * (g) + 7) + (lane), dst, (j0) + 7);       \
	} while (0)

/* The same with four steps, one every four rounds (j0 a multiple of 4;
 * groups go by two so that the ring indices stay constant). */
#define SHA512V_GROUP_SCHED4(g, lane, src, dst, j0)                                      \
	do {                                                                             \
		SHA512V_R2_0((src) + 4 * (8 * (g) + 0) + (lane));                        \
		SHA512V_R2(1, (src) + 4 * (8 * (g) + 1) + (lane), dst, (j0) + 0);       \
		SHA512V_R2_2((src) + 4 * (8 * (g) + 2) + (lane));                        \
		SHA512V_R2(3, (src) + 4 * (8 * (g) + 3) + (lane), dst, (j0) + 1);       \
		SHA512V_R2_0((src) + 4 * (8 * (g) + 4) + (lane));                        \
		SHA512V_R2(1, (src) + 4 * (8 * (g) + 5) + (lane), dst, (j0) + 2);       \
		SHA512V_R2_2((src) + 4 * (8 * (g) + 6) + (lane));                        \
		SHA512V_R2(3, (src) + 4 * (8 * (g) + 7) + (lane), dst, (j0) + 3);       \
	} while (0)

/* Rounds 16g .. 16g+15 alone. */
#define SHA512V_GROUP(g, lane, src)                                          \
	do {                                                                 \
		SHA512V_R2_0((src) + 4 * (8 * (g) + 0) + (lane));            \
		SHA512V_R2_1((src) + 4 * (8 * (g) + 1) + (lane));            \
		SHA512V_R2_2((src) + 4 * (8 * (g) + 2) + (lane));            \
		SHA512V_R2_3((src) + 4 * (8 * (g) + 3) + (lane));            \
		SHA512V_R2_0((src) + 4 * (8 * (g) + 4) + (lane));            \
		SHA512V_R2_1((src) + 4 * (8 * (g) + 5) + (lane));            \
		SHA512V_R2_2((src) + 4 * (8 * (g) + 6) + (lane));            \
		SHA512V_R2_3((src) + 4 * (8 * (g) + 7) + (lane));            \
	} while (0)

/* X[0..7] of the pair (ina, inb) into the ring, W + K into dst. */
#define SHA512V_LOAD(dst, ina, inb)                                                                         \
	do {                                                                                                \
		for (int j_ = 0; j_ < 8; j_++) {                                                            \
			__m128i lo_ = _mm_loadu_si128((const __m128i *)((ina) + 16 * j_));                 \
			__m128i hi_ = _mm_loadu_si128((const __m128i *)((inb) + 16 * j_));                 \
			x[j_] = _mm256_shuffle_epi8(                                                       \
				_mm256_inserti128_si256(_mm256_castsi128_si256(lo_), hi_, 1), bswap);      \
			_mm256_store_si256((__m256i *)((dst) + 4 * j_), _mm256_add_epi64(x[j_], sha512v_kpair(j_))); \
		}                                                                                           \
	} while (0)

#define SHA512V_STATE_IN() \
	do { a = state[0]; b = state[1]; c = state[2]; d = state[3]; \
	     e = state[4]; f = state[5]; g = state[6]; h = state[7]; } while (0)
#define SHA512V_STATE_OUT() \
	do { state[0] += a; state[1] += b; state[2] += c; state[3] += d; \
	     state[4] += e; state[5] += f; state[6] += g; state[7] += h; } while (0)

/* state <- compress(state, block) for nblocks blocks, two at a time.
 * The schedule work is spread over all the rounds: the first pair's
 * schedule runs during its block A (steps 8..39, one every two rounds);
 * afterwards block B of each pair loads the next pair and computes its
 * steps 8..23 (one every four rounds of groups 0..3), so that the next
 * block A computes only steps 24..39. The W + K arrays alternate. */
/* Aligned to 64 bytes: the code (about 18 KiB, more than the micro-op
 * cache holds) is fetched and decoded on every pass, and its speed depends
 * on where it starts within a 64-byte line: 16-byte alignment left it to
 * the linker, and the same object ran 1 MiB at 390 or 415 TSC cycles per
 * block depending on the program it was linked into (Zen 4, gcc 12);
 * aligned, 390 in every program tried. */
SHA512V_TARGET __attribute__((aligned(64))) static void sha512_blocks_avx2(uint64_t state[8], const uint8_t *in,
                                                                          size_t nblocks)
{
	/* wk[p][4j .. 4j+3] = X[j] + K: W + K of words 2j, 2j+1 of block A,
	 * then of block B, for the pair in flight (cur) and the next (nxt) */
	_Alignas(32) uint64_t wk[2][4 * 40];
	uint64_t *cur = wk[0], *nxt = wk[1];
	/* byte order: reverse the bytes of each 64-bit word (big-endian words) */
	const __m256i bswap = _mm256_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8,
	                                       7, 6, 5, 4, 3, 2, 1, 0, 15, 14, 13, 12, 11, 10, 9, 8);
	/* ROTR 8 of each 64-bit word: byte i of the result is byte i+1 (mod 8) */
	const __m256i rot8 = _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8,
	                                      1, 2, 3, 4, 5, 6, 7, 0, 9, 10, 11, 12, 13, 14, 15, 8);
	__m256i x[8];
	uint64_t a, b, c, d, e, f, g, h;
	int scheduled = 0; /* 1: steps 0..23 of this pair are in cur and x */

	while (nblocks > 0) {
		/* a lone last block: B = A, and B's rounds are not run */
		const uint8_t *inb = nblocks >= 2 ? in + SHA512_BLOCK_LEN : in;

		/* block A */
		SHA512V_STATE_IN();
		if (!scheduled) {
			SHA512V_LOAD(cur, in, inb);
			for (int grp = 0; grp < 4; grp++)
				SHA512V_GROUP_SCHED8(grp, 0, cur, cur, 8 * grp + 8);
		} else {
			for (int grp = 0; grp < 4; grp += 2) {
				SHA512V_GROUP_SCHED4(grp, 0, cur, cur, 4 * grp + 24);
				SHA512V_GROUP_SCHED4(grp + 1, 0, cur, cur, 4 * grp + 28);
			}
		}
		SHA512V_GROUP(4, 0, cur);
		SHA512V_STATE_OUT();
		if (nblocks < 2)
			break;

		/* block B, with the next pair's first steps when there is one */
		SHA512V_STATE_IN();
		if (nblocks > 2) {
			const uint8_t *na = in + 2 * SHA512_BLOCK_LEN;
			const uint8_t *nb = nblocks >= 4 ? na + SHA512_BLOCK_LEN : na;
			SHA512V_LOAD(nxt, na, nb);
			for (int grp = 0; grp < 4; grp += 2) {
				SHA512V_GROUP_SCHED4(grp, 2, cur, nxt, 4 * grp + 8);
				SHA512V_GROUP_SCHED4(grp + 1, 2, cur, nxt, 4 * grp + 12);
			}
			SHA512V_GROUP(4, 2, cur);
			scheduled = 1;
		} else {
			for (int grp = 0; grp < 5; grp++)
				SHA512V_GROUP(grp, 2, cur);
		}
		SHA512V_STATE_OUT();

		uint64_t *t = cur;
		cur = nxt;
		nxt = t;
		in += 2 * SHA512_BLOCK_LEN;
		nblocks -= 2;
	}

	/* W + K derives from the message; the vector registers are the
	 * compiler's (VZEROUPPER on return clears their upper halves). All of
	 * wk, used or not: wiping half for 1 or 2 blocks (the length chosen
	 * from nblocks) made the 1 MiB case 12 % slower with clang 14, and 4 %
	 * with gcc 12 in one of the two forms tried (register allocation). */
	sigil_wipe(wk, sizeof(wk));
}

sha512_blocks_fn *sha512_blocks_avx2_built(void)
{
	return sha512_blocks_avx2;
}

/* AVX2 and BMI2 in the CPU, and the OS saves the YMM state
 * (x86_features.h). */
int sha512_avx2_capable(void)
{
	return x86_cpu_has(X86_AVX2 | X86_BMI2, X86_XCR0_YMM);
}

/* the library is one translation unit (crypto/meson.build, unity) */
#undef SHA512V_TARGET
#undef SHA512V_ROTR
#undef SHA512V_BSIG0
#undef SHA512V_BSIG1
#undef SHA512V_CH
#undef SHA512V_MAJ
#undef SHA512V_ROUND
#undef SHA512V_R2_0
#undef SHA512V_R2_1
#undef SHA512V_R2_2
#undef SHA512V_R2_3
#undef SHA512V_SCHED
#undef SHA512V_GROUP_SCHED8
#undef SHA512V_GROUP_SCHED4
#undef SHA512V_R2
#undef SHA512V_LOAD
#undef SHA512V_STATE_IN
#undef SHA512V_STATE_OUT
#undef SHA512V_GROUP
