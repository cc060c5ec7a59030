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
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "ref51/ge.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"
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
	ge_p3 A;
	ge_scalarmult_base(&A, scalar);
	ge_p3_tobytes(pk, &A);
	CT_DECLASSIFY(pk, 32);
	sigil_wipe(&A, sizeof A);
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
static void sign_core(uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                      const sigil_ed25519_expanded *ek)
{
	sigil_sha512_ctx c;
	uint8_t h[64], r[32], k[32], R[32], S[32];
	ge_p3 Rp;

	sigil_sha512_init(&c);
	hash_dom2(&c, d);
	sigil_sha512_update(&c, ek->prefix, 32);
	sigil_sha512_update(&c, m, mlen);
	sigil_sha512_final(&c, h);
	sc_reduce(r, h); /* the nonce: secret */

	ge_scalarmult_base(&Rp, r);
	ge_p3_tobytes(R, &Rp);
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
	sigil_wipe(r, sizeof r);
	sigil_wipe(k, sizeof k);
	sigil_wipe(&Rp, sizeof Rp);
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

/* STRICT: libsodium 1.0.18 crypto_sign_verify_detached's decisions
 * (crypto_sign/ed25519/ref10/open.c): S < L; R not of small order (by its
 * encoding); A canonical, not of small order, and on the curve; then the
 * canonical encoding of [S]B - [k]A must equal the 32 bytes of R (so a
 * non-canonical R never verifies). Variable time, public inputs. */
static int verify_strict(const uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                         const uint8_t pk[32])
{
	ge_p3 A;
	ge_p2 Q;
	uint8_t k[32], rcheck[32];

	if (!sc_is_canonical(sig + 32))
		return -1;
	if (ge_has_small_order(sig))
		return -1;
	if (!ge_is_canonical(pk) || ge_has_small_order(pk))
		return -1;
	if (ge_frombytes(&A, pk) != 0)
		return -1;
	ge_p3_neg(&A, &A);
	challenge(k, d, sig, pk, m, mlen);
	ge_double_scalarmult_vartime(&Q, k, &A, sig + 32); /* [S]B - [k]A */
	ge_tobytes(rcheck, &Q);
	return sigil_verify32(rcheck, sig);
}

/* ZIP215 (https://zips.z.cash/zip-0215): S < L; A and R decoded with
 * non-canonical y (and x = 0 with the sign bit) accepted, small order
 * allowed; k hashed over the encodings as given; cofactored equation
 * [8]([S]B - [k]A) = [8]R. Variable time, public inputs. */
static int verify_zip215(const uint8_t sig[64], const dom2 *d, const uint8_t *m, size_t mlen,
                         const uint8_t pk[32])
{
	ge_p3 A, R, R8;
	ge_p2 Q;
	ge_p1p1 t;
	fe a, b;
	uint8_t k[32];

	if (!sc_is_canonical(sig + 32))
		return -1;
	if (ge_frombytes_zip215(&A, pk) != 0 || ge_frombytes_zip215(&R, sig) != 0)
		return -1;
	ge_p3_neg(&A, &A);
	challenge(k, d, sig, pk, m, mlen);
	ge_double_scalarmult_vartime(&Q, k, &A, sig + 32); /* [S]B - [k]A */
	for (int i = 0; i < 3; i++) {
		ge_p2_dbl(&t, &Q);
		ge_p1p1_to_p2(&Q, &t);
	}
	ge_mul_by_cofactor(&R8, &R);
	/* (X1:Y1:Z1) = (X2:Y2:Z2) iff X1 Z2 = X2 Z1 and Y1 Z2 = Y2 Z1 */
	fe_mul_ttt(&a, &Q.X, &R8.Z);
	fe_mul_ttt(&b, &R8.X, &Q.Z);
	int eq = fe_equal(&a, &b);
	fe_mul_ttt(&a, &Q.Y, &R8.Z);
	fe_mul_ttt(&b, &R8.Y, &Q.Z);
	eq &= fe_equal(&a, &b);
	return eq ? 0 : -1;
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
 * one msm_straus_vartime call of MSM_MAX points, with one chain of
 * doublings), after chunks of BATCH_BIG items (one msm_pippenger_vartime
 * call each) while at least BATCH_BIG_MIN items are left. An item whose S is not < L, or whose A or R does not decode,
 * is invalid and left out. For the rest, with 128-bit coefficients z_i,
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
#define BATCH_CHUNK (MSM_MAX / 2)
/* Chunks of BATCH_BIG items while at least BATCH_BIG_MIN are left, each
 * one msm_pippenger_vartime call (measured faster per item than Straus
 * chunks from about 200 items; docs/performance.md); the rest in chunks of
 * BATCH_CHUNK. */
#define BATCH_BIG (MSM_PIP_MAX / 2)
#define BATCH_BIG_MIN 224

static void le64(uint8_t out[8], uint64_t v)
{
	for (int i = 0; i < 8; i++)
		out[i] = (uint8_t)(v >> (8 * i));
}

/* The work space of batch_chunk for up to cap items (2 cap points). */
typedef struct batch_ws {
	const uint8_t **enc;
	int *ok;
	ge64_p3 *pts;
	uint8_t (*k)[32], (*scal)[32];
	const uint8_t **akey; /* the distinct keys, and their points' index */
	int *apos;
	int big; /* the multiplication: 1 Pippenger, 0 Straus */
} batch_ws;

/* Items base .. base + cnt - 1 (cnt <= BATCH_CHUNK, or <= BATCH_BIG with
 * the Pippenger work space); 1 if all are valid. */
static int batch_chunk(int *valid, const sigil_ed25519_item *items, size_t n, size_t base,
                       size_t cnt, const ge64_ops *ops, const batch_ws *ws)
{
	static const char label[] = "sigil ed25519 batch v2";
	const uint8_t **enc = ws->enc;
	int *ok = ws->ok;
	ge64_p3 *pts = ws->pts;
	uint8_t (*k)[32] = ws->k, (*scal)[32] = ws->scal, bsum[32] = { 0 };
	uint8_t seed[64], h[64], idx[72];
	sigil_sha512_ctx c;
	int ne = 0, np = 0;
	const uint8_t **akey = ws->akey;
	int *apos = ws->apos, na = 0;
	/* the items that reach the equation: S < L, then A and R decoded */
	for (size_t j = 0; j < cnt; j++) {
		const sigil_ed25519_item *it = &items[base + j];
		valid[base + j] = 0;
		if (it->pk == NULL || it->sig == NULL || (it->m == NULL && it->mlen != 0))
			continue;
		if (!sc_is_canonical(it->sig + 32))
			continue;
		valid[base + j] = 1; /* provisionally */
		enc[ne++] = it->pk;
		enc[ne++] = it->sig;
	}
	msm_decode_zip215_vartime(pts, ok, enc, ne, ops);

	sigil_sha512_init(&c);
	sigil_sha512_update(&c, (const uint8_t *)label, sizeof label - 1);
	le64(idx, (uint64_t)n);
	le64(idx + 8, (uint64_t)base);
	sigil_sha512_update(&c, idx, 16);
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

	memcpy(idx, seed, 64);
	e = 0;
	for (size_t j = 0; j < cnt; j++) {
		const sigil_ed25519_item *it = &items[base + j];
		uint8_t z[32] = { 0 };
		if (j % 4 == 0) {
			le64(idx + 64, (uint64_t)(j / 4));
			sigil_sha512(h, idx, sizeof idx);
		}
		if (it->pk == NULL || it->sig == NULL || (it->m == NULL && it->mlen != 0) ||
		    !sc_is_canonical(it->sig + 32))
			continue; /* not decoded */
		if (valid[base + j]) {
			memcpy(z, h + 16 * (j % 4), 16);
			sc_muladd(bsum, z, it->sig + 32, bsum); /* sum z_i S_i */
			/* A key already in the equation (the same 32 bytes) takes
			 * z_i k_i into its scalar: one point less. */
			int q;
			for (q = 0; q < na; q++)
				if (memcmp(akey[q], it->pk, 32) == 0)
					break;
			if (q < na) {
				sc_muladd(scal[apos[q]], z, k[j], scal[apos[q]]);
			} else {
				/* in place: np <= e, A before R (pts[e], pts[e + 1]) */
				akey[na] = it->pk;
				apos[na++] = np;
				pts[np] = pts[e];
				msm_p3_neg(&pts[np]);
				sc_mul(scal[np], z, k[j]);       /* z_i k_i (-A_i) */
				np++;
			}
			pts[np] = pts[e + 1];
			msm_p3_neg(&pts[np]);
			memcpy(scal[np], z, 32);                 /* z_i (-R_i) */
			np++;
		}
		e += 2;
	}
	if (np == 0)
		return 0; /* no item reached the equation: all invalid */

	ge64_p3 P;
	if (ws->big)
		msm_pippenger_vartime(&P, (const uint8_t (*)[32])scal, pts, np, bsum, ops);
	else
		msm_straus_vartime(&P, (const uint8_t (*)[32])scal, pts, np, bsum, ops);
	int all = 1;
	if (!msm_is_small_order_vartime(&P, ops)) {
		/* some item is bad: decide each on its own */
		for (size_t j = 0; j < cnt; j++) {
			size_t i = base + j;
			if (valid[i])
				valid[i] = verify_zip215(items[i].sig, &DOM_PURE, items[i].m, items[i].mlen,
				                         items[i].pk) == 0;
		}
	}
	for (size_t j = 0; j < cnt; j++)
		all &= valid[base + j];
	return all;
}

/* One chunk of at most BATCH_CHUNK items (Straus), or of at most
 * BATCH_BIG (Pippenger): separate frames, so that the stack holds one of
 * the two work spaces and one of the two multiplications (gcc
 * -fstack-usage, x86-64: 25 KiB + Straus 175 KiB + its IFMA tables 12 KiB,
 * or 99 KiB + Pippenger 96 KiB + decoding 10 KiB; about 210 KiB at most). */
__attribute__((noinline)) static int batch_chunk_small(int *valid, const sigil_ed25519_item *items,
                                                      size_t n, size_t base, size_t cnt,
                                                      const ge64_ops *ops)
{
	const uint8_t *enc[2 * BATCH_CHUNK], *akey[BATCH_CHUNK];
	int ok[2 * BATCH_CHUNK], apos[BATCH_CHUNK];
	ge64_p3 pts[2 * BATCH_CHUNK];
	uint8_t k[BATCH_CHUNK][32], scal[2 * BATCH_CHUNK][32];
	batch_ws ws = { enc, ok, pts, k, scal, akey, apos, 0 };
	return batch_chunk(valid, items, n, base, cnt, ops, &ws);
}

__attribute__((noinline)) static int batch_chunk_big(int *valid, const sigil_ed25519_item *items,
                                                    size_t n, size_t base, size_t cnt,
                                                    const ge64_ops *ops)
{
	const uint8_t *enc[2 * BATCH_BIG], *akey[BATCH_BIG];
	int ok[2 * BATCH_BIG], apos[BATCH_BIG];
	ge64_p3 pts[2 * BATCH_BIG];
	uint8_t k[BATCH_BIG][32], scal[2 * BATCH_BIG][32];
	batch_ws ws = { enc, ok, pts, k, scal, akey, apos, 1 };
	return batch_chunk(valid, items, n, base, cnt, ops, &ws);
}

static int batch_zip215(int *valid, const sigil_ed25519_item *items, size_t n)
{
	const ge64_ops *ops = msm_ops();
	int all = 1;
	size_t base = 0;
	/* chunks of BATCH_BIG while at least BATCH_BIG_MIN items are left */
	while (n - base >= BATCH_BIG_MIN) {
		size_t cnt = n - base < BATCH_BIG ? n - base : BATCH_BIG;
		all &= batch_chunk_big(valid, items, n, base, cnt, ops);
		base += cnt;
	}
	for (; base < n; base += BATCH_CHUNK) {
		size_t cnt = n - base < BATCH_CHUNK ? n - base : BATCH_CHUNK;
		all &= batch_chunk_small(valid, items, n, base, cnt, ops);
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
