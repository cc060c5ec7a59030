/* SPDX-License-Identifier: MIT */
/*
 * sha512.c - SHA-512 per FIPS 180-4 (sections 4.1.3, 4.2.3, 5.1.2, 5.3.5,
 * 6.4), one shot and streaming.
 *
 * Static names carry the sha512_ prefix and the macros are #undef'd at the
 * end: the library is built as one translation unit (crypto/meson.build).
 *
 * Timing: every function here runs in time that depends on the message
 * length only (the lengths drive the loops; the bytes never drive a branch
 * or an index), so hashing secret data (seeds, nonce keys) is safe.
 */
#include <string.h>

#include "sigil/crypto.h"
#include "sha512.h"

/* FIPS 180-4 section 4.2.3: the first 64 bits of the fractional parts of
 * the cube roots of the first eighty primes. */
const uint64_t sha512_K[80] = {
	0x428a2f98d728ae22ULL, 0x7137449123ef65cdULL, 0xb5c0fbcfec4d3b2fULL, 0xe9b5dba58189dbbcULL,
	0x3956c25bf348b538ULL, 0x59f111f1b605d019ULL, 0x923f82a4af194f9bULL, 0xab1c5ed5da6d8118ULL,
	0xd807aa98a3030242ULL, 0x12835b0145706fbeULL, 0x243185be4ee4b28cULL, 0x550c7dc3d5ffb4e2ULL,
	0x72be5d74f27b896fULL, 0x80deb1fe3b1696b1ULL, 0x9bdc06a725c71235ULL, 0xc19bf174cf692694ULL,
	0xe49b69c19ef14ad2ULL, 0xefbe4786384f25e3ULL, 0x0fc19dc68b8cd5b5ULL, 0x240ca1cc77ac9c65ULL,
	0x2de92c6f592b0275ULL, 0x4a7484aa6ea6e483ULL, 0x5cb0a9dcbd41fbd4ULL, 0x76f988da831153b5ULL,
	0x983e5152ee66dfabULL, 0xa831c66d2db43210ULL, 0xb00327c898fb213fULL, 0xbf597fc7beef0ee4ULL,
	0xc6e00bf33da88fc2ULL, 0xd5a79147930aa725ULL, 0x06ca6351e003826fULL, 0x142929670a0e6e70ULL,
	0x27b70a8546d22ffcULL, 0x2e1b21385c26c926ULL, 0x4d2c6dfc5ac42aedULL, 0x53380d139d95b3dfULL,
	0x650a73548baf63deULL, 0x766a0abb3c77b2a8ULL, 0x81c2c92e47edaee6ULL, 0x92722c851482353bULL,
	0xa2bfe8a14cf10364ULL, 0xa81a664bbc423001ULL, 0xc24b8b70d0f89791ULL, 0xc76c51a30654be30ULL,
	0xd192e819d6ef5218ULL, 0xd69906245565a910ULL, 0xf40e35855771202aULL, 0x106aa07032bbd1b8ULL,
	0x19a4c116b8d2d0c8ULL, 0x1e376c085141ab53ULL, 0x2748774cdf8eeb99ULL, 0x34b0bcb5e19b48a8ULL,
	0x391c0cb3c5c95a63ULL, 0x4ed8aa4ae3418acbULL, 0x5b9cca4f7763e373ULL, 0x682e6ff3d6b2b8a3ULL,
	0x748f82ee5defb2fcULL, 0x78a5636f43172f60ULL, 0x84c87814a1f0ab72ULL, 0x8cc702081a6439ecULL,
	0x90befffa23631e28ULL, 0xa4506cebde82bde9ULL, 0xbef9a3f7b2c67915ULL, 0xc67178f2e372532bULL,
	0xca273eceea26619cULL, 0xd186b8c721c0c207ULL, 0xeada7dd6cde0eb1eULL, 0xf57d4f7fee6ed178ULL,
	0x06f067aa72176fbaULL, 0x0a637dc5a2c898a6ULL, 0x113f9804bef90daeULL, 0x1b710b35131c471bULL,
	0x28db77f523047d84ULL, 0x32caab7b40c72493ULL, 0x3c9ebe0a15c9bebcULL, 0x431d67c49c100d4cULL,
	0x4cc5d4becb3e42b6ULL, 0x597f299cfc657e2aULL, 0x5fcb6fab3ad6faecULL, 0x6c44198c4a475817ULL,
};

/* FIPS 180-4 section 5.3.5: the first 64 bits of the fractional parts of
 * the square roots of the first eight primes. */
static const uint64_t sha512_H0[8] = {
	0x6a09e667f3bcc908ULL, 0xbb67ae8584caa73bULL, 0x3c6ef372fe94f82bULL, 0xa54ff53a5f1d36f1ULL,
	0x510e527fade682d1ULL, 0x9b05688c2b3e6c1fULL, 0x1f83d9abfb41bd6bULL, 0x5be0cd19137e2179ULL,
};

static inline uint64_t sha512_load64_be(const uint8_t *p)
{
	return ((uint64_t)p[0] << 56) | ((uint64_t)p[1] << 48) | ((uint64_t)p[2] << 40) |
	       ((uint64_t)p[3] << 32) | ((uint64_t)p[4] << 24) | ((uint64_t)p[5] << 16) |
	       ((uint64_t)p[6] << 8) | (uint64_t)p[7];
}

static inline void sha512_store64_be(uint8_t *p, uint64_t x)
{
	for (int i = 7; i >= 0; i--) {
		p[i] = (uint8_t)x;
		x >>= 8;
	}
}

static inline uint64_t sha512_rotr64(uint64_t x, unsigned n)
{
	return (x >> n) | (x << (64 - n));
}

/* FIPS 180-4 section 4.1.3 */
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (sha512_rotr64((x), 28) ^ sha512_rotr64((x), 34) ^ sha512_rotr64((x), 39))
#define BSIG1(x) (sha512_rotr64((x), 14) ^ sha512_rotr64((x), 18) ^ sha512_rotr64((x), 41))
#define SSIG0(x) (sha512_rotr64((x), 1) ^ sha512_rotr64((x), 8) ^ ((x) >> 7))
#define SSIG1(x) (sha512_rotr64((x), 19) ^ sha512_rotr64((x), 61) ^ ((x) >> 6))

/* One round of FIPS 180-4 6.4.2 step 3, with the eight working variables
 * renamed instead of shifted: the caller rotates the argument order, so
 * round t uses (a..h) = the variables as they stand after round t-1.
 *   T1 = h + S1(e) + Ch(e,f,g) + K_t + W_t;  T2 = S0(a) + Maj(a,b,c)
 *   d' = d + T1 (the new e);  h' = T1 + T2 (the new a) */
#define ROUND(a, b, c, d, e, f, g, h, k, w)                         \
	do {                                                        \
		uint64_t t1_ = (h) + BSIG1(e) + CH(e, f, g) + (k) + (w); \
		(d) += t1_;                                         \
		(h) = t1_ + BSIG0(a) + MAJ(a, b, c);                \
	} while (0)

/* W_t = s1(W_{t-2}) + W_{t-7} + s0(W_{t-15}) + W_{t-16}, in a 16-word ring
 * (W[i] holds W_t for t = i mod 16) */
#define EXPAND(i) \
	(W[(i) & 15] += SSIG1(W[((i) - 2) & 15]) + W[((i) - 7) & 15] + SSIG0(W[((i) - 15) & 15]))

/* 16 rounds t0 .. t0+15, fully unrolled; EXP(i) computes W_t first when
 * the rounds are past the first 16 (EXP is EXPAND or nothing) */
#define ROUNDS16(t0, EXP) \
	do { \
		EXP(0); ROUND(a, b, c, d, e, f, g, h, sha512_K[(t0) + 0], W[0]); \
		EXP(1); ROUND(h, a, b, c, d, e, f, g, sha512_K[(t0) + 1], W[1]); \
		EXP(2); ROUND(g, h, a, b, c, d, e, f, sha512_K[(t0) + 2], W[2]); \
		EXP(3); ROUND(f, g, h, a, b, c, d, e, sha512_K[(t0) + 3], W[3]); \
		EXP(4); ROUND(e, f, g, h, a, b, c, d, sha512_K[(t0) + 4], W[4]); \
		EXP(5); ROUND(d, e, f, g, h, a, b, c, sha512_K[(t0) + 5], W[5]); \
		EXP(6); ROUND(c, d, e, f, g, h, a, b, sha512_K[(t0) + 6], W[6]); \
		EXP(7); ROUND(b, c, d, e, f, g, h, a, sha512_K[(t0) + 7], W[7]); \
		EXP(8); ROUND(a, b, c, d, e, f, g, h, sha512_K[(t0) + 8], W[8]); \
		EXP(9); ROUND(h, a, b, c, d, e, f, g, sha512_K[(t0) + 9], W[9]); \
		EXP(10); ROUND(g, h, a, b, c, d, e, f, sha512_K[(t0) + 10], W[10]); \
		EXP(11); ROUND(f, g, h, a, b, c, d, e, sha512_K[(t0) + 11], W[11]); \
		EXP(12); ROUND(e, f, g, h, a, b, c, d, sha512_K[(t0) + 12], W[12]); \
		EXP(13); ROUND(d, e, f, g, h, a, b, c, sha512_K[(t0) + 13], W[13]); \
		EXP(14); ROUND(c, d, e, f, g, h, a, b, sha512_K[(t0) + 14], W[14]); \
		EXP(15); ROUND(b, c, d, e, f, g, h, a, sha512_K[(t0) + 15], W[15]); \
	} while (0)
#define NOEXPAND(i) ((void)0)

/* state <- compress(state, block) for nblocks blocks (FIPS 180-4 6.4.2).
 * The message schedule is kept as a 16-word ring (W[t mod 16]), the same
 * recurrence as the 80-word array of the standard; after 8 rounds the
 * variable names are back in place; the rounds are unrolled by 16. Time
 * depends on nblocks only. The schedule derives from the message, which
 * may be secret: it is wiped before return. */
void sha512_blocks_generic(uint64_t state[8], const uint8_t *in, size_t nblocks)
{
	uint64_t W[16];
	uint64_t a, b, c, d, e, f, g, h;

	for (; nblocks > 0; nblocks--, in += SHA512_BLOCK_LEN) {
		for (int t = 0; t < 16; t++)
			W[t] = sha512_load64_be(in + 8 * t);

		a = state[0];
		b = state[1];
		c = state[2];
		d = state[3];
		e = state[4];
		f = state[5];
		g = state[6];
		h = state[7];

		ROUNDS16(0, NOEXPAND);
		for (int t = 16; t < 80; t += 16)
			ROUNDS16(t, EXPAND);

		state[0] += a;
		state[1] += b;
		state[2] += c;
		state[3] += d;
		state[4] += e;
		state[5] += f;
		state[6] += g;
		state[7] += h;
	}

	/* The working variables live in registers, which C cannot wipe; the
	 * schedule is in memory. The state is the caller's to wipe
	 * (sigil_sha512_final does). */
	sigil_wipe(W, sizeof(W));
}

SIGIL_EXPORT void sigil_sha512_init(sigil_sha512_ctx *c)
{
	memcpy(c->state, sha512_H0, sizeof(sha512_H0));
	c->count = 0;
	memset(c->buf, 0, sizeof(c->buf));
}

/* The bytes of c->buf not yet compressed: count % 128, except that a full
 * block stays there (128, when count is a non-zero multiple of 128) until
 * more input comes or the final: the final then compresses it together
 * with the padding block, as one call of two blocks, which the block
 * functions that work on pairs of blocks run faster than two calls of one
 * (signing hashes R || A || M, 128 bytes for a 64-byte message). */
static size_t sha512_buffered(const sigil_sha512_ctx *c)
{
	return c->count == 0 ? 0 : (size_t)((c->count - 1) % SHA512_BLOCK_LEN) + 1;
}

/* Absorb mlen bytes with the block function blocks. m may be NULL when
 * mlen is 0. Time depends on mlen and on c->count (both public). */
void sha512_update_with(sigil_sha512_ctx *c, const uint8_t *m, size_t mlen, sha512_blocks_fn *blocks)
{
	size_t used = sha512_buffered(c);

	if (mlen == 0)
		return;
	c->count += (uint64_t)mlen;

	/* a full block kept for the final: more input came, compress it */
	if (used == SHA512_BLOCK_LEN) {
		blocks(c->state, c->buf, 1);
		used = 0;
	}

	/* top up a partial block; compress it only if input follows */
	if (used > 0) {
		size_t take = SHA512_BLOCK_LEN - used;
		if (take > mlen)
			take = mlen;
		memcpy(c->buf + used, m, take);
		m += take;
		mlen -= take;
		if (mlen == 0)
			return;
		blocks(c->state, c->buf, 1);
	}

	/* whole blocks straight from the input, keeping 1 to 128 bytes */
	if (mlen > SHA512_BLOCK_LEN) {
		size_t nblocks = (mlen - 1) / SHA512_BLOCK_LEN;
		blocks(c->state, m, nblocks);
		m += nblocks * SHA512_BLOCK_LEN;
		mlen -= nblocks * SHA512_BLOCK_LEN;
	}
	memcpy(c->buf, m, mlen);
}

/* The last one or two blocks: the used bytes at tail, then the padding of
 * FIPS 180-4 section 5.1.2 (0x80, zeros, the message length in bits as a
 * 128-bit big-endian integer), compressed in one call. The byte count is
 * kept in 64 bits, so the bit length is count * 8 as a 128-bit number:
 * high word count >> 61, low word count << 3. used <= 2 * 128 - 17; time
 * depends on used only. */
static void sha512_last(uint64_t state[8], const uint8_t *tail, size_t used, uint64_t count,
			sha512_blocks_fn *blocks)
{
	uint8_t last[2 * SHA512_BLOCK_LEN];
	size_t n = used + 17 <= SHA512_BLOCK_LEN ? 1 : 2;

	if (used > 0) /* tail may be NULL when used is 0 */
		memcpy(last, tail, used);
	last[used] = 0x80;
	memset(last + used + 1, 0, n * SHA512_BLOCK_LEN - 16 - (used + 1));
	sha512_store64_be(last + n * SHA512_BLOCK_LEN - 16, count >> 61);
	sha512_store64_be(last + n * SHA512_BLOCK_LEN - 8, count << 3);
	blocks(state, last, n);
	sigil_wipe(last, n * SHA512_BLOCK_LEN);
}

/* The digest: the state words big-endian. */
static void sha512_digest(uint8_t out[64], const uint64_t state[8])
{
	for (int i = 0; i < 8; i++)
		sha512_store64_be(out + 8 * i, state[i]);
}

/* Pad, write the digest, wipe c. out may overlap anything the caller
 * hashed: it is written last. */
void sha512_final_with(sigil_sha512_ctx *c, uint8_t out[64], sha512_blocks_fn *blocks)
{
	uint8_t digest[64];

	sha512_last(c->state, c->buf, sha512_buffered(c), c->count, blocks);
	sha512_digest(digest, c->state);
	sigil_wipe(c, sizeof(*c));
	memcpy(out, digest, sizeof(digest));
	sigil_wipe(digest, sizeof(digest));
}

/* The block function, chosen once: CPUID is not cheap (it traps in some
 * VMs). The probe is idempotent, so two threads racing through the first
 * call store the same pointer; the atomics make that race defined. */
static sha512_blocks_fn *sha512_blocks_cached;

sha512_blocks_fn *sha512_blocks_chosen(void)
{
	sha512_blocks_fn *fn = __atomic_load_n(&sha512_blocks_cached, __ATOMIC_ACQUIRE);
	if (fn == NULL) {
		fn = sha512_avx512_capable() ? sha512_blocks_avx512_built() : NULL;
		if (fn == NULL && sha512_avx2_capable())
			fn = sha512_blocks_avx2_built();
		if (fn == NULL)
			fn = sha512_blocks_generic;
		__atomic_store_n(&sha512_blocks_cached, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

SIGIL_EXPORT void sigil_sha512_update(sigil_sha512_ctx *c, const uint8_t *m, size_t mlen)
{
	sha512_update_with(c, m, mlen, sha512_blocks_chosen());
}

SIGIL_EXPORT void sigil_sha512_final(sigil_sha512_ctx *c, uint8_t out[64])
{
	sha512_final_with(c, out, sha512_blocks_chosen());
}

/* One shot, without a context: the whole blocks of m straight from it,
 * except those that the last call takes (the message's last one or two
 * padded blocks: the tail of m, copied, and the padding), so that a
 * message of up to 239 bytes is one call (a pair of blocks when it takes
 * two). out may overlap m: it is written last. Time depends on mlen only. */
SIGIL_EXPORT void sigil_sha512(uint8_t out[64], const uint8_t *m, size_t mlen)
{
	sha512_blocks_fn *blocks = sha512_blocks_chosen();
	uint64_t state[8];
	size_t total = (mlen + 17 + SHA512_BLOCK_LEN - 1) / SHA512_BLOCK_LEN;
	size_t direct = total > 2 ? total - 2 : 0;

	memcpy(state, sha512_H0, sizeof(state));
	if (direct > 0) {
		blocks(state, m, direct);
		m += direct * SHA512_BLOCK_LEN;
	}
	sha512_last(state, m, mlen - direct * SHA512_BLOCK_LEN, (uint64_t)mlen, blocks);
	/* m is read; out is the caller's, not the state: write it straight */
	sha512_digest(out, state);
	sigil_wipe(state, sizeof(state));
}

/* The library is built as one translation unit (crypto/meson.build, unity):
 * keep this file's macros out of the files included after it. */
#undef CH
#undef MAJ
#undef BSIG0
#undef BSIG1
#undef SSIG0
#undef SSIG1
#undef ROUND
#undef EXPAND
#undef ROUNDS16
#undef NOEXPAND
