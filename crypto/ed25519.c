/* SPDX-License-Identifier: MIT */
/*
 * ed25519.c - RFC 8032 Ed25519, Ed25519ctx and Ed25519ph: key expansion,
 * signing, verification under the two policies of DESIGN.md (STRICT and
 * ZIP215), and batch verification (ZIP215).
 *
 * Timing: key expansion and signing are constant time in the seed, the
 * expanded key and the nonce (fixed-base scalar multiplication, sc_*,
 * SHA-512); their time depends on the message and context lengths only.
 * Verification is variable time on public inputs only.
 *
 * The curve work is the backend's (backend.h: cpu.c's choice): the fixed
 * base, decoding A and R and the point equation of one verification, and
 * the point half of batch equations; the protocol (hashes, scalars
 * including verification's half-size ones, policies, encodings) is here.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "ct.h"
#include "ref51/ge.h"
#include "sc.h"

/* RFC 8032 section 5.1: dom2(x, y) = "SigEd25519 no Ed25519 collisions" ||
 * octet(x) || octet(OLEN(y)) || y, empty for pure Ed25519. */
typedef struct {
	int use;       /* 0: pure Ed25519 (no prefix) */
	uint8_t phflag; /* 0: Ed25519ctx, 1: Ed25519ph */
	const uint8_t *ctx;
	size_t ctxlen; /* <= 255 */
} dom2;

static const dom2 DOM_PURE = { 0, 0, NULL, 0 };

static void hash_dom2(sigil_sha512_ctx *c, const dom2 *d)
{
	static const char prefix[] = "SigEd25519 no Ed25519 collisions";
	uint8_t two[2];
	if (!d->use)
		return;
	two[0] = d->phflag;
	two[1] = (uint8_t)d->ctxlen;
	sigil_sha512_update(c, (const uint8_t *)prefix, sizeof prefix - 1);
	sigil_sha512_update(c, two, 2);
	if (d->ctxlen)
		sigil_sha512_update(c, d->ctx, d->ctxlen);
}

/* scalar = clamp(SHA-512(seed)[0..31]), prefix = SHA-512(seed)[32..63].
 * Constant time. */
static void expand_hash(sigil_ed25519_expanded *ek, const uint8_t seed[32])
{
	uint8_t h[64];
	sigil_sha512(h, seed, 32);
	h[0] &= 248;
	h[31] &= 127;
	h[31] |= 64;
	memcpy(ek->scalar, h, 32);
	memcpy(ek->prefix, h + 32, 32);
	sigil_wipe(h, sizeof h);
}

/* pk = encoding of [scalar]B. Constant time; the result is public. */
static void scalar_to_pk(uint8_t pk[32], const uint8_t scalar[32])
{
	const backend *be = backend_get();
	be->base_encode(be, pk, scalar);
	CT_DECLASSIFY(pk, 32);
}

SIGIL_EXPORT void sigil_ed25519_expand(sigil_ed25519_expanded *ek, const uint8_t seed[32])
{
	sigil_ed25519_expanded t;
	expand_hash(&t, seed); /* seed may lie inside *ek */
	scalar_to_pk(t.pk, t.scalar);
	memcpy(ek, &t, sizeof t);
	sigil_wipe(&t, sizeof t);
}

SIGIL_EXPORT void sigil_ed25519_keypair_from_seed(uint8_t pk[32], uint8_t sk[64], const uint8_t seed[32])
{
	sigil_ed25519_expanded t;
	uint8_t s[32];
	memcpy(s, seed, 32);
	expand_hash(&t, s);
	scalar_to_pk(t.pk, t.scalar);
	memmove(sk, s, 32);
	memmove(sk + 32, t.pk, 32);
	memmove(pk, t.pk, 32);
	sigil_wipe(&t, sizeof t);
	sigil_wipe(s, sizeof s);
}

/* sig = (R, S): r = SHA-512(dom2 || prefix || M) mod L, R = [r]B,
 * k = SHA-512(dom2 || R || pk || M) mod L, S = (r + k a) mod L.
 * M is read twice, sig written last, so sig may overlap M or ek.
 * Constant time in ek and r; time depends on mlen and ctxlen. */
/* r = the nonce of m under ek (secret) */
static void sign_nonce(uint8_t r[32], const dom2 *d, const uint8_t *m, size_t mlen,
                       const sigil_ed25519_expanded *ek)
{
	sigil_sha512_ctx c;
	uint8_t h[64];

	sigil_sha512_init(&c);
	hash_dom2(&c, d);
	sigil_sha512_update(&c, ek->prefix, 32);
	sigil_sha512_update(&c, m, mlen);
	sigil_sha512_final(&c, h);
	sc_reduce(r, h);
	sigil_wipe(&c, sizeof c);
	sigil_wipe(h, sizeof h);
}

/* sig = (R, S) from the nonce r and R = r B (encoded; declassified here) */
static void sign_finish(uint8_t sig[64], const dom2 *d, uint8_t R[32], const uint8_t r[32],
                        const uint8_t *m, size_t mlen, const sigil_ed25519_expanded *ek)
{
	sigil_sha512_ctx c;
	uint8_t h[64], k[32], S[32];

	CT_DECLASSIFY(R, 32); /* R is half of the signature: public */

	sigil_sha512_init(&c);
	hash_dom2(&c, d);
	sigil_sha512_update(&c, R, 32);
	sigil_sha512_update(&c, ek->pk, 32);
	sigil_sha512_update(&c, m, mlen);
	sigil_sha512_final(&c, h);
	sc_reduce(k, h);

	sc_muladd(S, k, ek->scalar, r);
	CT_DECLASSIFY(S, 32); /* S is the other half: public */

	memmove(sig, R, 32);
	memmove(sig + 32, S, 32);

	sigil_wipe(&c, sizeof c);
	sigil_wipe(h, sizeof h);
	sigil_wipe(k, sizeof k);
}

static void sign_core(uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                      const sigil_ed25519_expanded *ek)
{
	uint8_t r[32], R[32];
	const backend *be = backend_get();

	sign_nonce(r, d, m, mlen, ek);
	be->base_encode(be, R, r);
	sign_finish(sig, d, R, r, m, mlen, ek);
	sigil_wipe(r, sizeof r);
}

/* An expanded key from sk = seed || pk, trusting the pk half (crypto.h). */
static void expand_sk(sigil_ed25519_expanded *ek, const uint8_t sk[64])
{
	expand_hash(ek, sk);
	memcpy(ek->pk, sk + 32, 32);
}

SIGIL_EXPORT void sigil_ed25519_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                              const sigil_ed25519_expanded *ek)
{
	sign_core(sig, &DOM_PURE, m, mlen, ek);
}

/* BACKEND_BASE_MANY at a time: the nonces, their R together
 * (base_encode_many: in lanes where the backend has them), the rest one by
 * one; the last chunk as long as what is left. */
SIGIL_EXPORT void sigil_ed25519_sign_expanded_many(uint8_t (*sig)[64], const uint8_t *const *m,
                                                   const size_t *mlen,
                                                   const sigil_ed25519_expanded *const *ek,
                                                   size_t n)
{
	uint8_t r[BACKEND_BASE_MANY][32], R[BACKEND_BASE_MANY][32];
	const backend *be = backend_get();

	for (size_t i = 0; i < n; i += BACKEND_BASE_MANY) {
		int cnt = n - i < BACKEND_BASE_MANY ? (int)(n - i) : BACKEND_BASE_MANY;
		for (int j = 0; j < cnt; j++)
			sign_nonce(r[j], &DOM_PURE, m[i + j], mlen[i + j], ek[i + j]);
		be->base_encode_many(be, R, (const uint8_t (*)[32])r, cnt);
		for (int j = 0; j < cnt; j++)
			sign_finish(sig[i + j], &DOM_PURE, R[j], r[j], m[i + j], mlen[i + j], ek[i + j]);
	}
	sigil_wipe(r, sizeof r);
}

SIGIL_EXPORT int sigil_ed25519ctx_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                                const uint8_t *ctx, size_t ctxlen,
                                                const sigil_ed25519_expanded *ek)
{
	if (ctxlen == 0 || ctxlen > 255 || ctx == NULL)
		return -1;
	dom2 d = { 1, 0, ctx, ctxlen };
	sign_core(sig, &d, m, mlen, ek);
	return 0;
}

SIGIL_EXPORT int sigil_ed25519ph_sign_prehashed_expanded(uint8_t sig[64], const uint8_t digest[64],
                                                         const uint8_t *ctx, size_t ctxlen,
                                                         const sigil_ed25519_expanded *ek)
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0))
		return -1;
	uint8_t dg[64];
	memcpy(dg, digest, 64); /* digest may overlap sig */
	dom2 d = { 1, 1, ctx, ctxlen };
	sign_core(sig, &d, dg, 64, ek);
	return 0;
}

SIGIL_EXPORT int sigil_ed25519ph_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                               const uint8_t *ctx, size_t ctxlen,
                                               const sigil_ed25519_expanded *ek)
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0))
		return -1;
	uint8_t dg[64];
	sigil_sha512(dg, m, mlen);
	return sigil_ed25519ph_sign_prehashed_expanded(sig, dg, ctx, ctxlen, ek);
}

SIGIL_EXPORT void sigil_ed25519_sign(uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t sk[64])
{
	sigil_ed25519_expanded ek;
	expand_sk(&ek, sk);
	sigil_ed25519_sign_expanded(sig, m, mlen, &ek);
	sigil_wipe(&ek, sizeof ek);
}

SIGIL_EXPORT int sigil_ed25519ctx_sign(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                       const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64])
{
	if (ctxlen == 0 || ctxlen > 255 || ctx == NULL)
		return -1;
	sigil_ed25519_expanded ek;
	expand_sk(&ek, sk);
	int r = sigil_ed25519ctx_sign_expanded(sig, m, mlen, ctx, ctxlen, &ek);
	sigil_wipe(&ek, sizeof ek);
	return r;
}

SIGIL_EXPORT int sigil_ed25519ph_sign(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                      const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64])
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0))
		return -1;
	sigil_ed25519_expanded ek;
	expand_sk(&ek, sk);
	int r = sigil_ed25519ph_sign_expanded(sig, m, mlen, ctx, ctxlen, &ek);
	sigil_wipe(&ek, sizeof ek);
	return r;
}

SIGIL_EXPORT int sigil_ed25519ph_sign_prehashed(uint8_t sig[64], const uint8_t digest[64],
                                                const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64])
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0))
		return -1;
	sigil_ed25519_expanded ek;
	expand_sk(&ek, sk);
	int r = sigil_ed25519ph_sign_prehashed_expanded(sig, digest, ctx, ctxlen, &ek);
	sigil_wipe(&ek, sizeof ek);
	return r;
}

/* k = SHA-512(dom2 || R || A || M) mod L, over the encodings as given. */
static void challenge(uint8_t k[32], const dom2 *d, const uint8_t R[32], const uint8_t A[32],
                      const uint8_t *m, size_t mlen)
{
	sigil_sha512_ctx c;
	uint8_t h[64];
	sigil_sha512_init(&c);
	hash_dom2(&c, d);
	sigil_sha512_update(&c, R, 32);
	sigil_sha512_update(&c, A, 32);
	sigil_sha512_update(&c, m, mlen);
	sigil_sha512_final(&c, h);
	sc_reduce(k, h);
}

/* The point equation of both policies, D = [S]B - [k]A - R = identity
 * (zip215 = 0) or of small order (zip215 = 1), on the backend: with
 * sc_half_vartime's c0 = k c1 (mod 8L), c1 odd and |c1| < L, both about
 * 128 bits,
 *   c1 D = [c1 S mod L]B - [c0]A - [c1]R
 * exactly (B has order L; the order of A divides 8L), and since gcd(c1,
 * 8L) = 1, c1 D is the identity (or of small order) exactly when D is:
 * one chain of about 128 doublings instead of 253, R decoded instead of
 * [S]B - [k]A encoded (an inversion), and no field inversion at all.
 * 0 if it holds, -1 if not or if A or R does not decode. */
static int verify_equation(const uint8_t sig[64], const uint8_t pk[32], const uint8_t k[32],
                           int zip215)
{
	const uint8_t *enc[2] = { pk, sig };
	uint8_t a[2][32], b[32];
	const backend *be = backend_get();

	int c1neg = sc_half_vartime(a[0], a[1], k);
	sc_mul(b, a[1], sig + 32);
	if (c1neg)
		sc_neg(b, b);
	/* - [c0]A, and -[c1]R as -[|c1|]R (c1 > 0) or [|c1|]R (c1 < 0) */
	const int neg[2] = { 1, !c1neg };
	return be->verify_vartime(be, enc, (const uint8_t (*)[32])a, neg, b, zip215) == 1 ? 0 : -1;
}

/* STRICT: libsodium 1.0.18 crypto_sign_verify_detached's decisions
 * (crypto_sign/ed25519/ref10/open.c): S < L; R not of small order (by its
 * encoding); A canonical, not of small order, and on the curve; then the
 * canonical encoding of [S]B - [k]A must equal the 32 bytes of R, that is:
 * R canonical, on the curve (x = 0 with the sign bit refused: such R are
 * of small order anyway), and [S]B - [k]A = R as points. Variable time,
 * public inputs. */
static int verify_strict(const uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                         const uint8_t pk[32])
{
	uint8_t k[32];

	if (!sc_is_canonical(sig + 32))
		return -1;
	if (!ge_is_canonical(sig) || ge_has_small_order(sig))
		return -1;
	if (!ge_is_canonical(pk) || ge_has_small_order(pk))
		return -1;
	challenge(k, d, sig, pk, m, mlen);
	return verify_equation(sig, pk, k, 0);
}

/* ZIP215 (https://zips.z.cash/zip-0215): S < L; A and R decoded with
 * non-canonical y (and x = 0 with the sign bit) accepted, small order
 * allowed; k hashed over the encodings as given; cofactored equation
 * [8]([S]B - [k]A) = [8]R. Variable time, public inputs. */
static int verify_zip215(const uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                         const uint8_t pk[32])
{
	uint8_t k[32];

	if (!sc_is_canonical(sig + 32))
		return -1;
	challenge(k, d, sig, pk, m, mlen);
	return verify_equation(sig, pk, k, 1);
}

static int verify_core(const uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                       const uint8_t pk[32], sigil_ed25519_policy policy)
{
	if (sig == NULL || pk == NULL || (m == NULL && mlen != 0))
		return -1;
	switch (policy) {
	case SIGIL_ED25519_STRICT:
		return verify_strict(sig, d, m, mlen, pk);
	case SIGIL_ED25519_ZIP215:
		return verify_zip215(sig, d, m, mlen, pk);
	}
	return -1; /* unknown policy */
}

SIGIL_EXPORT int sigil_ed25519_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                      const uint8_t pk[32], sigil_ed25519_policy policy)
{
	return verify_core(sig, &DOM_PURE, m, mlen, pk, policy);
}

SIGIL_EXPORT int sigil_ed25519ctx_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                         const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                         sigil_ed25519_policy policy)
{
	if (ctxlen == 0 || ctxlen > 255 || ctx == NULL)
		return -1;
	dom2 d = { 1, 0, ctx, ctxlen };
	return verify_core(sig, &d, m, mlen, pk, policy);
}

SIGIL_EXPORT int sigil_ed25519ph_verify_prehashed(const uint8_t sig[64], const uint8_t digest[64],
                                                  const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                                  sigil_ed25519_policy policy)
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0) || digest == NULL)
		return -1;
	dom2 d = { 1, 1, ctx, ctxlen };
	return verify_core(sig, &d, digest, 64, pk, policy);
}

SIGIL_EXPORT int sigil_ed25519ph_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                        const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                        sigil_ed25519_policy policy)
{
	if (ctxlen > 255 || (ctx == NULL && ctxlen != 0) || (m == NULL && mlen != 0))
		return -1;
	uint8_t dg[64];
	sigil_sha512(dg, m, mlen);
	return sigil_ed25519ph_verify_prehashed(sig, dg, ctx, ctxlen, pk, policy);
}

/* Batch verification (ZIP215).
 *
 * Items are taken in chunks of BATCH_CHUNK (two points each: a chunk is
 * one backend batch_vartime call of BACKEND_BATCH_SMALL encodings, with
 * one chain of doublings), after chunks of BATCH_BIG items (BACKEND_BATCH_MAX
 * encodings: the 4 x 64-bit backend's Pippenger) while at least
 * BATCH_BIG_MIN items are left. An item whose S is not < L, or whose A or
 * R does not decode, is invalid and left out. For the rest, with 128-bit
 * coefficients z_i,
 *   [8]( [sum z_i S_i] B - sum [z_i] R_i - sum [z_i k_i] A_i ) = identity
 * holds if every item satisfies its own cofactored equation, and fails
 * with probability about 2^-128 otherwise. When it fails, each item of the
 * chunk is verified on its own, so valid[] always equals what
 * sigil_ed25519_verify(..., SIGIL_ED25519_ZIP215) says of each item.
 *
 * The z_i are derived deterministically (crypto/ does no I/O and has no
 * RNG), per chunk: seed = SHA-512("sigil ed25519 batch v2" || n (8 bytes
 * LE) || index of the chunk's first item (8 bytes LE) || for every item of
 * the chunk that reaches the equation: pk || sig || k), k = the item's
 * challenge SHA-512(R || A || M) mod L (it binds M); the z of the j-th
 * item of the chunk (counting every item) is bytes 16 (j mod 4) .. 16 (j
 * mod 4) + 15 of SHA-512(seed || j / 4 (8 bytes LE)). Items with the same
 * public key (the same 32 bytes) share its point in the equation: their
 * z_i k_i are summed mod L. A signer cannot
 * choose its signatures after seeing the z_i, since every z_i depends on
 * every signature of the equation it enters. */
#define BATCH_CHUNK (BACKEND_BATCH_SMALL / 2)
/* Chunks of BATCH_BIG items while at least BATCH_BIG_MIN are left
 * (measured faster per item than chunks of BATCH_CHUNK from about 200
 * items on the 4 x 64-bit backend; docs/performance.md); the rest in
 * chunks of BATCH_CHUNK. */
#define BATCH_BIG (BACKEND_BATCH_MAX / 2)
#define BATCH_BIG_MIN 224

static void le64(uint8_t out[8], uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

/* One chunk, items base .. base + cnt - 1, and its work space. */
typedef struct batch_ctx {
	int *valid;
	const sigil_ed25519_item *items;
	size_t n, base, cnt;
	uint8_t (*k)[32];      /* the challenges */
	const uint8_t **akey;  /* the distinct keys, and their terms' index */
	int *apos;
} batch_ctx;

/* An item that can reach the equation: its pointers, and S < L. */
static int batch_item_ok(const sigil_ed25519_item *it)
{
	return it->pk != NULL && it->sig != NULL && (it->m != NULL || it->mlen == 0) &&
	       sc_is_canonical(it->sig + 32);
}

/* The terms of the chunk's equation (backend_terms_fn), given which of
 * the encodings enc[2 e] = A, enc[2 e + 1] = R of the items that passed
 * batch_item_ok decoded: the challenges, the seed, the z_i, sum z_i S_i
 * into b, and one term per distinct key and one per R. */
static int batch_terms(void *arg, const int *ok, int *idx, uint8_t (*scal)[32], uint8_t b[32])
{
	static const char label[] = "sigil ed25519 batch v2";
	const batch_ctx *bc = arg;
	const sigil_ed25519_item *items = bc->items;
	int *valid = bc->valid;
	size_t base = bc->base, cnt = bc->cnt;
	uint8_t (*k)[32] = bc->k;
	uint8_t seed[64], h[64], idxb[72];
	sigil_sha512_ctx c;
	int np = 0, na = 0;

	memset(b, 0, 32);
	sigil_sha512_init(&c);
	sigil_sha512_update(&c, (const uint8_t *)label, sizeof label - 1);
	le64(idxb, (uint64_t)bc->n);
	le64(idxb + 8, (uint64_t)base);
	sigil_sha512_update(&c, idxb, 16);
	int e = 0;
	for (size_t j = 0; j < cnt; j++) {
		const sigil_ed25519_item *it = &items[base + j];
		if (!valid[base + j])
			continue;
		if (!ok[e] || !ok[e + 1]) {
			valid[base + j] = 0;
		} else {
			challenge(k[j], &DOM_PURE, it->sig, it->pk, it->m, it->mlen);
			sigil_sha512_update(&c, it->pk, 32);
			sigil_sha512_update(&c, it->sig, 64);
			sigil_sha512_update(&c, k[j], 32);
		}
		e += 2;
	}
	sigil_sha512_final(&c, seed);

	memcpy(idxb, seed, 64);
	e = 0;
	for (size_t j = 0; j < cnt; j++) {
		const sigil_ed25519_item *it = &items[base + j];
		uint8_t z[32] = { 0 };
		if (j % 4 == 0) {
			le64(idxb + 64, (uint64_t)(j / 4));
			sigil_sha512(h, idxb, sizeof idxb);
		}
		if (!batch_item_ok(it))
			continue; /* not decoded */
		if (valid[base + j]) {
			memcpy(z, h + 16 * (j % 4), 16);
			sc_muladd(b, z, it->sig + 32, b); /* sum z_i S_i */
			/* A key already in the equation (the same 32 bytes) takes
			 * z_i k_i into its scalar: one point less. */
			int q;
			for (q = 0; q < na; q++)
				if (memcmp(bc->akey[q], it->pk, 32) == 0)
					break;
			if (q < na) {
				sc_muladd(scal[bc->apos[q]], z, k[j], scal[bc->apos[q]]);
			} else {
				bc->akey[na] = it->pk;
				bc->apos[na++] = np;
				idx[np] = e;                   /* -A_i */
				sc_mul(scal[np], z, k[j]);     /* z_i k_i */
				np++;
			}
			idx[np] = e + 1;                       /* -R_i */
			memcpy(scal[np], z, 32);               /* z_i */
			np++;
		}
		e += 2;
	}
	return np;
}

/* Items base .. base + cnt - 1 (cnt at most the work space's: enc and ok
 * of 2 cnt, k, akey and apos of cnt); 1 if all are valid. */
static int batch_chunk(int *valid, const sigil_ed25519_item *items, size_t n, size_t base,
                       size_t cnt, const backend *be, const uint8_t **enc, int *ok,
                       uint8_t (*k)[32], const uint8_t **akey, int *apos)
{
	int ne = 0;

	/* the items that reach the equation: S < L, then A and R decoded */
	for (size_t j = 0; j < cnt; j++) {
		const sigil_ed25519_item *it = &items[base + j];
		valid[base + j] = batch_item_ok(it); /* provisionally */
		if (valid[base + j]) {
			enc[ne++] = it->pk;
			enc[ne++] = it->sig;
		}
	}
	batch_ctx bc = { valid, items, n, base, cnt, k, akey, apos };
	if (!be->batch_vartime(be, ok, enc, ne, batch_terms, &bc)) {
		/* some item is bad (or none reached the equation): decide each
		 * on its own */
		for (size_t j = 0; j < cnt; j++) {
			size_t i = base + j;
			if (valid[i])
				valid[i] = verify_zip215(items[i].sig, &DOM_PURE, items[i].m, items[i].mlen,
				                         items[i].pk) == 0;
		}
	}
	int all = 1;
	for (size_t j = 0; j < cnt; j++)
		all &= valid[base + j];
	return all;
}

/* A chunk of at most BATCH_CHUNK items, or of at most BATCH_BIG: separate
 * frames of the two sizes (about 5 and 18 KiB; gcc -fstack-usage, x86-64),
 * under the backend's own (the 4 x 64-bit one: 21 KiB + Straus 175 KiB,
 * or 171 KiB with the IFMA lanes, or 84 KiB + Pippenger 96 KiB + decoding
 * 10 KiB: fe64/msm.h). */
__attribute__((noinline)) static int batch_chunk_small(int *valid, const sigil_ed25519_item *items,
                                                      size_t n, size_t base, size_t cnt,
                                                      const backend *be)
{
	const uint8_t *enc[2 * BATCH_CHUNK], *akey[BATCH_CHUNK];
	int ok[2 * BATCH_CHUNK], apos[BATCH_CHUNK];
	uint8_t k[BATCH_CHUNK][32];
	return batch_chunk(valid, items, n, base, cnt, be, enc, ok, k, akey, apos);
}

__attribute__((noinline)) static int batch_chunk_big(int *valid, const sigil_ed25519_item *items,
                                                    size_t n, size_t base, size_t cnt,
                                                    const backend *be)
{
	const uint8_t *enc[2 * BATCH_BIG], *akey[BATCH_BIG];
	int ok[2 * BATCH_BIG], apos[BATCH_BIG];
	uint8_t k[BATCH_BIG][32];
	return batch_chunk(valid, items, n, base, cnt, be, enc, ok, k, akey, apos);
}

static int batch_zip215(int *valid, const sigil_ed25519_item *items, size_t n)
{
	const backend *be = backend_get();
	int all = 1;
	size_t base = 0;
	/* chunks of BATCH_BIG while at least BATCH_BIG_MIN items are left */
	while (n - base >= BATCH_BIG_MIN) {
		size_t cnt = n - base < BATCH_BIG ? n - base : BATCH_BIG;
		all &= batch_chunk_big(valid, items, n, base, cnt, be);
		base += cnt;
	}
	for (; base < n; base += BATCH_CHUNK) {
		size_t cnt = n - base < BATCH_CHUNK ? n - base : BATCH_CHUNK;
		all &= batch_chunk_small(valid, items, n, base, cnt, be);
	}
	return all ? 0 : -1;
}

SIGIL_EXPORT int sigil_ed25519_verify_batch(int *valid, const sigil_ed25519_item *items, size_t n,
                                            sigil_ed25519_policy policy)
{
	if (n == 0)
		return 0;
	if (valid == NULL || items == NULL)
		return -1;
	if (policy == SIGIL_ED25519_ZIP215)
		return batch_zip215(valid, items, n);

	int all = 1;
	for (size_t i = 0; i < n; i++) {
		valid[i] = sigil_ed25519_verify(items[i].sig, items[i].m, items[i].mlen, items[i].pk,
		                                policy) == 0;
		all &= valid[i];
	}
	return all ? 0 : -1;
}
