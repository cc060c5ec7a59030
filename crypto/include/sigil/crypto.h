/* SPDX-License-Identifier: MIT */
/*
 * sigil/crypto.h - the public API of libsigil-crypto, sigil's constant-time
 * Curve25519 core (Ed25519 per RFC 8032, X25519 per RFC 7748, SHA-512 per
 * FIPS 180-4).
 *
 * Conventions (STYLE.md section 3):
 * - the caller allocates everything; outputs come first; sizes are in the
 *   prototypes; nothing here allocates memory or does I/O;
 * - checks return 0 (good) or -1 (bad), never OpenSSL's 1/0;
 * - every function works when its buffers overlap;
 * - timing: every function that takes a secret (seed, sk, scalar, expanded
 *   key) runs in time independent of it; verify functions run in variable
 *   time on public inputs only; the time of every function may depend on
 *   message and context lengths.
 *
 * A secret key `sk` is seed || public key (64 bytes), as in libsodium and Go.
 * Signing trusts the public-key half of sk: give it only an sk made by
 * sigil_ed25519_keypair_from_seed (or an expanded key, which stores the
 * public key it computed itself).
 */
#ifndef SIGIL_CRYPTO_H
#define SIGIL_CRYPTO_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(SIGIL_BUILDING_CRYPTO)
#define SIGIL_EXPORT __attribute__((visibility("default")))
#else
#define SIGIL_EXPORT
#endif

#define SIGIL_ED25519_SEED_LEN 32
#define SIGIL_ED25519_PUBLIC_KEY_LEN 32
#define SIGIL_ED25519_SECRET_KEY_LEN 64
#define SIGIL_ED25519_SIGNATURE_LEN 64
#define SIGIL_X25519_LEN 32
#define SIGIL_SHA512_LEN 64

/* Verify policies (DESIGN.md):
 * STRICT: exactly libsodium 1.0.18's crypto_sign_verify_detached decisions:
 *   S < L; A canonical and not of small order; R not of small order;
 *   cofactorless check by comparing the encoding of [S]B - [k]A with R.
 * ZIP215: S < L; A and R may be non-canonical and of small order;
 *   cofactored equation [8]([S]B - R - [k]A) = identity. Non-canonical
 *   means y >= p (reduced) and x = 0 with the sign bit set (ZIP 215,
 *   curve25519-dalek); k is hashed over the encodings as given. */
typedef enum {
	SIGIL_ED25519_STRICT = 0,
	SIGIL_ED25519_ZIP215 = 1,
} sigil_ed25519_policy;

typedef struct {
	const uint8_t *pk;  /* 32 bytes */
	const uint8_t *sig; /* 64 bytes */
	const uint8_t *m;
	size_t mlen;
} sigil_ed25519_item;

SIGIL_EXPORT void sigil_ed25519_keypair_from_seed(uint8_t pk[32], uint8_t sk[64], const uint8_t seed[32]);
SIGIL_EXPORT void sigil_ed25519_sign(uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t sk[64]);
/* 0 valid, -1 not */
SIGIL_EXPORT int sigil_ed25519_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                      const uint8_t pk[32], sigil_ed25519_policy policy);

/* RFC 8032 Ed25519ctx and Ed25519ph; ctxlen <= 255 (-1 otherwise).
 * Ed25519ctx requires 1 <= ctxlen (RFC 8032 section 5.1: "the context
 * SHOULD NOT be empty"); sigil refuses ctxlen == 0 with -1 for ctx. */
SIGIL_EXPORT int sigil_ed25519ctx_sign(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                       const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64]);
SIGIL_EXPORT int sigil_ed25519ctx_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                         const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                         sigil_ed25519_policy policy);
SIGIL_EXPORT int sigil_ed25519ph_sign(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                      const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64]);
SIGIL_EXPORT int sigil_ed25519ph_verify(const uint8_t sig[64], const uint8_t *m, size_t mlen,
                                        const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                        sigil_ed25519_policy policy);
/* the same, given SHA-512(m) already computed (a client streams a large file) */
SIGIL_EXPORT int sigil_ed25519ph_sign_prehashed(uint8_t sig[64], const uint8_t digest[64],
                                                const uint8_t *ctx, size_t ctxlen, const uint8_t sk[64]);
SIGIL_EXPORT int sigil_ed25519ph_verify_prehashed(const uint8_t sig[64], const uint8_t digest[64],
                                                  const uint8_t *ctx, size_t ctxlen, const uint8_t pk[32],
                                                  sigil_ed25519_policy policy);

/* valid[i] = 1 or 0 for each item; returns 0 if all are valid, -1 if not.
 * With SIGIL_ED25519_ZIP215 the batch equation is used, and valid[] equals
 * what sigil_ed25519_verify(..., SIGIL_ED25519_ZIP215) says of each item.
 * With SIGIL_ED25519_STRICT each item is verified on its own (no speedup;
 * DESIGN.md: batch verification uses the ZIP215 policy only). n == 0 is 0.
 * Any n: items are taken 64 at a time (256 at a time while 224 or more
 * are left). No heap; up to about 212 KiB of stack (gcc -fstack-usage),
 * so a thread calling it needs a stack of at least 256 KiB. */
SIGIL_EXPORT int sigil_ed25519_verify_batch(int *valid, const sigil_ed25519_item *items, size_t n,
                                            sigil_ed25519_policy policy);

/* An expanded signing key: what signing derives from the seed, computed once
 * (the daemon caches it in locked memory). scalar is the clamped secret
 * scalar a, prefix the nonce key (second half of SHA-512(seed)), pk the
 * public key [a]B computed from the scalar. All of it but pk is secret:
 * keep it in locked memory and wipe it with sigil_wipe(). */
typedef struct sigil_ed25519_expanded {
	uint8_t scalar[32];
	uint8_t prefix[32];
	uint8_t pk[32];
} sigil_ed25519_expanded;

SIGIL_EXPORT void sigil_ed25519_expand(sigil_ed25519_expanded *ek, const uint8_t seed[32]);
SIGIL_EXPORT void sigil_ed25519_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                              const sigil_ed25519_expanded *ek);
/* sig[i] = sigil_ed25519_sign_expanded(m[i], mlen[i], ek[i]) for i < n,
 * byte for byte, each item its own key and message (pure Ed25519): several
 * nonces' [r]B computed together (eight at a time in AVX-512 IFMA lanes
 * where the CPU has them), cheaper per signature than one by one. Constant
 * time in the keys and nonces; time depends on n and the lengths only.
 * sig[i] may overlap m[i] or ek[i] (read before sig[i] is written) but no
 * other item's. */
SIGIL_EXPORT void sigil_ed25519_sign_expanded_many(uint8_t (*sig)[64], const uint8_t *const *m,
                                                   const size_t *mlen,
                                                   const sigil_ed25519_expanded *const *ek,
                                                   size_t n);
SIGIL_EXPORT int sigil_ed25519ctx_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                                const uint8_t *ctx, size_t ctxlen,
                                                const sigil_ed25519_expanded *ek);
SIGIL_EXPORT int sigil_ed25519ph_sign_expanded(uint8_t sig[64], const uint8_t *m, size_t mlen,
                                               const uint8_t *ctx, size_t ctxlen,
                                               const sigil_ed25519_expanded *ek);
SIGIL_EXPORT int sigil_ed25519ph_sign_prehashed_expanded(uint8_t sig[64], const uint8_t digest[64],
                                                         const uint8_t *ctx, size_t ctxlen,
                                                         const sigil_ed25519_expanded *ek);

/* X25519 (RFC 7748): the scalar is clamped as it is read (the caller's bytes
 * are not changed); the top bit of u is ignored; non-canonical u (>= p) is
 * accepted and reduced. Returns -1 (and still writes out) when the result is
 * all zero (u of small order), 0 otherwise. */
SIGIL_EXPORT int sigil_x25519(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32]);
SIGIL_EXPORT void sigil_x25519_public(uint8_t pk[32], const uint8_t scalar[32]);

/* SHA-512 (FIPS 180-4). Time depends on the message length only. */
typedef struct sigil_sha512_ctx {
	uint64_t state[8];
	uint64_t count;   /* bytes absorbed so far */
	uint8_t buf[128]; /* not yet compressed: count % 128 bytes, or 128 (a
			   * full block kept for the final) when count is a
			   * non-zero multiple of 128 */
} sigil_sha512_ctx;

SIGIL_EXPORT void sigil_sha512(uint8_t out[64], const uint8_t *m, size_t mlen);
SIGIL_EXPORT void sigil_sha512_init(sigil_sha512_ctx *c);
SIGIL_EXPORT void sigil_sha512_update(sigil_sha512_ctx *c, const uint8_t *m, size_t mlen);
/* writes the digest and wipes the context */
SIGIL_EXPORT void sigil_sha512_final(sigil_sha512_ctx *c, uint8_t out[64]);

/* Wipe n bytes in a way the compiler may not remove. */
SIGIL_EXPORT void sigil_wipe(void *p, size_t n);
/* Constant-time comparison of 32 bytes: 0 if equal, -1 if not. */
SIGIL_EXPORT int sigil_verify32(const uint8_t a[32], const uint8_t b[32]);

/* The name of the curve backend chosen at run time ("generic": the
 * portable C; "amd64_adx", "arm64": the 4 x 64-bit assembly; see
 * crypto/README.md), for benchmarks and logs. */
SIGIL_EXPORT const char *sigil_crypto_impl(void);

#ifdef __cplusplus
}
#endif

#endif /* SIGIL_CRYPTO_H */
