/* SPDX-License-Identifier: MIT */
/*
 * bench.c - sigil's benchmark: sigil against libsodium and OpenSSL (EVP),
 * in one process, on the same inputs.
 *
 * Method (docs/performance.md):
 * - every operation is first checked: sigil's output must equal libsodium's
 *   and OpenSSL's (keys, signatures, shared secrets, digests), and verify
 *   must accept good and reject bad signatures; an operation that fails its
 *   check is not timed and the program exits 1;
 * - each implementation is warmed up, then calibrated so that one batch
 *   (many calls in a row) lasts about budget / (implementations * 31),
 *   clamped to 0.5 .. 2 ms (shorter batches are less often preempted);
 *   after each batch the size of the next one is rescaled so that batches
 *   stay near that length while the machine's speed wanders;
 * - batches are interleaved between the implementations, round after
 *   round, with the starting implementation rotating (A B C, B C A, C A B,
 *   ...), so that machine noise (other processes, frequency changes) falls
 *   on all of them alike;
 * - for each batch the time per operation is taken in ns (CLOCK_MONOTONIC),
 *   in TSC ticks (rdtsc, x86-64 only: reference cycles at the TSC's fixed
 *   rate, not core clock cycles), and in thread CPU time
 *   (CLOCK_THREAD_CPUTIME_ID, which stops while the thread is preempted:
 *   the useful figure on a shared machine);
 * - per implementation the median, p10, p90, min and max over the batches
 *   are reported, then sigil's median as a ratio to the best other median
 *   (and sigil's minimum over that implementation's minimum).
 * - the timed calls' return values are still checked; a failure during
 *   timing also makes the program exit 1.
 *
 * Usage: bench [--seconds N] [--op NAME] [--json] [--list]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <sodium.h>

#include "sigil/crypto.h"

#ifndef BENCH_CC
#define BENCH_CC "unknown"
#endif
#ifndef BENCH_BUILDTYPE
#define BENCH_BUILDTYPE "unknown"
#endif

#define NKEYS 64           /* distinct keys/messages, cycled through */
#define MSGLEN 64          /* signed message length */
#define BATCH 64           /* signatures per batch verification */
#define BIGLEN (1u << 20)  /* SHA-512 input: 1 MiB */
#define MAX_BATCHES 8192
#define ROUNDS_TARGET 31   /* batches per implementation the budget aims at, */
#define BATCH_NS_MAX 2000000u /* but a batch lasts 2 ms at most (more rounds, finer */
#define BATCH_NS_MIN 500000u  /* interleaving, fewer preempted batches), 0.5 ms at least */
#define MIN_ROUNDS 7
#define MAX_IMPLS 5

/* ------------------------------------------------------------------ */
/* Inputs shared by every implementation */

static struct {
	uint8_t seed[NKEYS][32];
	uint8_t pk[NKEYS][32];
	uint8_t sk[NKEYS][64];
	uint8_t msg[NKEYS][MSGLEN];
	uint8_t sig[NKEYS][64];    /* libsodium's signature of msg[i] under sk[i] */
	uint8_t xscalar[NKEYS][32];
	uint8_t xpeer[NKEYS][32];  /* a peer's X25519 public key, from libsodium */
	uint8_t xpub[NKEYS][32];   /* libsodium's X25519 public key of xscalar[i] */
	EVP_PKEY *ossl_sk[NKEYS];
	EVP_PKEY *ossl_pk[NKEYS];
	EVP_PKEY_CTX *ossl_dh[NKEYS]; /* derive context: xscalar[i] with xpeer[i] */
	EVP_MD_CTX *mdctx;
	sigil_ed25519_item items[BATCH];
	int valid[BATCH];
	uint8_t *big;
} B;

/* Failures seen by the timed calls (must stay 0) and a sink that keeps the
 * outputs observable. */
static unsigned long g_bad;
static volatile uint8_t g_sink;

static void sink(const uint8_t *p, size_t n)
{
	uint8_t x = 0;
	for (size_t i = 0; i < n; i++)
		x ^= p[i];
	g_sink ^= x;
}

/* splitmix64: deterministic inputs, so every run times the same data */
static uint64_t g_rng = 0x5167696c2d62656eULL;
static uint64_t rng_next(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void rng_fill(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(rng_next() >> 56);
}

static int setup(void)
{
	if (sodium_init() < 0) {
		fprintf(stderr, "bench: sodium_init failed\n");
		return -1;
	}
	B.big = malloc(BIGLEN);
	B.mdctx = EVP_MD_CTX_new();
	if (!B.big || !B.mdctx) {
		fprintf(stderr, "bench: out of memory\n");
		return -1;
	}
	rng_fill(B.big, BIGLEN);
	for (int i = 0; i < NKEYS; i++) {
		uint8_t peer_scalar[32];

		rng_fill(B.seed[i], 32);
		rng_fill(B.msg[i], MSGLEN);
		rng_fill(B.xscalar[i], 32);
		rng_fill(peer_scalar, 32);
		if (crypto_sign_seed_keypair(B.pk[i], B.sk[i], B.seed[i]) != 0 ||
		    crypto_sign_detached(B.sig[i], NULL, B.msg[i], MSGLEN, B.sk[i]) != 0 ||
		    crypto_scalarmult_base(B.xpeer[i], peer_scalar) != 0 ||
		    crypto_scalarmult_base(B.xpub[i], B.xscalar[i]) != 0) {
			fprintf(stderr, "bench: libsodium failed while making inputs\n");
			return -1;
		}

		B.ossl_sk[i] = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, B.seed[i], 32);
		B.ossl_pk[i] = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, B.pk[i], 32);
		EVP_PKEY *xk = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, B.xscalar[i], 32);
		EVP_PKEY *xp = EVP_PKEY_new_raw_public_key(EVP_PKEY_X25519, NULL, B.xpeer[i], 32);
		B.ossl_dh[i] = xk ? EVP_PKEY_CTX_new(xk, NULL) : NULL;
		if (!B.ossl_sk[i] || !B.ossl_pk[i] || !xk || !xp || !B.ossl_dh[i] ||
		    EVP_PKEY_derive_init(B.ossl_dh[i]) != 1 ||
		    EVP_PKEY_derive_set_peer(B.ossl_dh[i], xp) != 1) {
			fprintf(stderr, "bench: OpenSSL failed while making inputs\n");
			return -1;
		}
		EVP_PKEY_free(xk); /* the context holds its own references */
		EVP_PKEY_free(xp);
	}
	for (int i = 0; i < BATCH; i++) {
		B.items[i].pk = B.pk[i % NKEYS];
		B.items[i].sig = B.sig[i % NKEYS];
		B.items[i].m = B.msg[i % NKEYS];
		B.items[i].mlen = MSGLEN;
	}
	return 0;
}

static void teardown(void)
{
	for (int i = 0; i < NKEYS; i++) {
		EVP_PKEY_free(B.ossl_sk[i]);
		EVP_PKEY_free(B.ossl_pk[i]);
		EVP_PKEY_CTX_free(B.ossl_dh[i]);
	}
	EVP_MD_CTX_free(B.mdctx);
	free(B.big);
}

/* ------------------------------------------------------------------ */
/* One call of each operation, per implementation. Each returns 0 on
 * success; the output goes to out. */

static int ossl_sign1(uint8_t sig[64], int i)
{
	size_t siglen = 64;
	/* OpenSSL 3.0 refuses to re-initialise a context used by a one-shot
	 * EVP_DigestSign unless it is reset first */
	EVP_MD_CTX_reset(B.mdctx);
	if (EVP_DigestSignInit(B.mdctx, NULL, NULL, NULL, B.ossl_sk[i]) != 1 ||
	    EVP_DigestSign(B.mdctx, sig, &siglen, B.msg[i], MSGLEN) != 1 || siglen != 64)
		return -1;
	return 0;
}

static int ossl_verify1(const uint8_t sig[64], const uint8_t *m, size_t mlen, int i)
{
	EVP_MD_CTX_reset(B.mdctx);
	if (EVP_DigestVerifyInit(B.mdctx, NULL, NULL, NULL, B.ossl_pk[i]) != 1)
		return -1;
	return EVP_DigestVerify(B.mdctx, sig, 64, m, mlen) == 1 ? 0 : -1;
}

/* keypair from seed; OpenSSL: build the key object from the raw seed
 * (this computes the public key) and read the public key out */
static int ossl_keypair1(uint8_t pk[32], const uint8_t seed[32])
{
	size_t len = 32;
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	int r = (k && EVP_PKEY_get_raw_public_key(k, pk, &len) == 1 && len == 32) ? 0 : -1;
	EVP_PKEY_free(k);
	return r;
}

static int ossl_x25519_public1(uint8_t pk[32], const uint8_t scalar[32])
{
	size_t len = 32;
	EVP_PKEY *k = EVP_PKEY_new_raw_private_key(EVP_PKEY_X25519, NULL, scalar, 32);
	int r = (k && EVP_PKEY_get_raw_public_key(k, pk, &len) == 1 && len == 32) ? 0 : -1;
	EVP_PKEY_free(k);
	return r;
}

static int ossl_x25519_1(uint8_t out[32], int i)
{
	size_t len = 32;
	return (EVP_PKEY_derive(B.ossl_dh[i], out, &len) == 1 && len == 32) ? 0 : -1;
}

static int ossl_sha512_1(uint8_t out[64], const uint8_t *m, size_t mlen)
{
	unsigned int len = 64;
	return (EVP_Digest(m, mlen, out, &len, EVP_sha512(), NULL) == 1 && len == 64) ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* Timed runners: n calls in a row, cycling through the NKEYS inputs. */

typedef void (*runner_fn)(uint64_t n);

static void run_keypair_sigil(uint64_t n)
{
	uint8_t pk[32], sk[64];
	for (uint64_t j = 0; j < n; j++)
		sigil_ed25519_keypair_from_seed(pk, sk, B.seed[j % NKEYS]);
	sink(pk, 32);
}

static void run_keypair_sodium(uint64_t n)
{
	uint8_t pk[32], sk[64];
	for (uint64_t j = 0; j < n; j++)
		g_bad += crypto_sign_seed_keypair(pk, sk, B.seed[j % NKEYS]) != 0;
	sink(pk, 32);
}

static void run_keypair_ossl(uint64_t n)
{
	uint8_t pk[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += ossl_keypair1(pk, B.seed[j % NKEYS]) != 0;
	sink(pk, 32);
}

static void run_sign_sigil(uint64_t n)
{
	uint8_t sig[64];
	for (uint64_t j = 0; j < n; j++)
		sigil_ed25519_sign(sig, B.msg[j % NKEYS], MSGLEN, B.sk[j % NKEYS]);
	sink(sig, 64);
}

/* sign_x8: the expanded keys (check_sign_x8 fills them; checks run first) */
static sigil_ed25519_expanded bench_ek[NKEYS];
static const sigil_ed25519_expanded *bench_ekp[NKEYS];
static const uint8_t *bench_msgp[NKEYS];
static size_t bench_mlen[NKEYS];

/* one "call" signs 8 (keys and messages i .. i + 7 of the cycle) */
static void run_sign_x8_sigil(uint64_t n)
{
	uint8_t sig[8][64];
	for (uint64_t j = 0; j < n; j++) {
		size_t i = (size_t)(8 * j) % NKEYS;
		sigil_ed25519_sign_expanded_many(sig, bench_msgp + i, bench_mlen + i, bench_ekp + i, 8);
	}
	sink(sig[7], 64);
}

static void run_sign_expanded_sigil(uint64_t n)
{
	uint8_t sig[64];
	for (uint64_t j = 0; j < n; j++)
		sigil_ed25519_sign_expanded(sig, B.msg[j % NKEYS], MSGLEN, &bench_ek[j % NKEYS]);
	sink(sig, 64);
}

static void run_sign_sodium(uint64_t n)
{
	uint8_t sig[64];
	for (uint64_t j = 0; j < n; j++)
		g_bad += crypto_sign_detached(sig, NULL, B.msg[j % NKEYS], MSGLEN, B.sk[j % NKEYS]) != 0;
	sink(sig, 64);
}

static void run_sign_ossl(uint64_t n)
{
	uint8_t sig[64];
	for (uint64_t j = 0; j < n; j++)
		g_bad += ossl_sign1(sig, (int)(j % NKEYS)) != 0;
	sink(sig, 64);
}

static void run_verify_sigil(uint64_t n)
{
	for (uint64_t j = 0; j < n; j++) {
		size_t i = j % NKEYS;
		g_bad += sigil_ed25519_verify(B.sig[i], B.msg[i], MSGLEN, B.pk[i], SIGIL_ED25519_STRICT) != 0;
	}
}

static void run_verify_zip215_sigil(uint64_t n)
{
	for (uint64_t j = 0; j < n; j++) {
		size_t i = j % NKEYS;
		g_bad += sigil_ed25519_verify(B.sig[i], B.msg[i], MSGLEN, B.pk[i], SIGIL_ED25519_ZIP215) != 0;
	}
}

static void run_verify_sodium(uint64_t n)
{
	for (uint64_t j = 0; j < n; j++) {
		size_t i = j % NKEYS;
		g_bad += crypto_sign_verify_detached(B.sig[i], B.msg[i], MSGLEN, B.pk[i]) != 0;
	}
}

static void run_verify_ossl(uint64_t n)
{
	for (uint64_t j = 0; j < n; j++) {
		int i = (int)(j % NKEYS);
		g_bad += ossl_verify1(B.sig[i], B.msg[i], MSGLEN, i) != 0;
	}
}

/* one "call" is a whole batch of BATCH signatures */
static void run_batch_sigil(uint64_t n)
{
	for (uint64_t j = 0; j < n; j++)
		g_bad += sigil_ed25519_verify_batch(B.valid, B.items, BATCH, SIGIL_ED25519_ZIP215) != 0;
}

static void run_x25519_sigil(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += sigil_x25519(out, B.xscalar[j % NKEYS], B.xpeer[j % NKEYS]) != 0;
	sink(out, 32);
}

static void run_x25519_sodium(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += crypto_scalarmult(out, B.xscalar[j % NKEYS], B.xpeer[j % NKEYS]) != 0;
	sink(out, 32);
}

static void run_x25519_ossl(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += ossl_x25519_1(out, (int)(j % NKEYS)) != 0;
	sink(out, 32);
}

static void run_x25519_base_sigil(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		sigil_x25519_public(out, B.xscalar[j % NKEYS]);
	sink(out, 32);
}

static void run_x25519_base_sodium(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += crypto_scalarmult_base(out, B.xscalar[j % NKEYS]) != 0;
	sink(out, 32);
}

static void run_x25519_base_ossl(uint64_t n)
{
	uint8_t out[32];
	for (uint64_t j = 0; j < n; j++)
		g_bad += ossl_x25519_public1(out, B.xscalar[j % NKEYS]) != 0;
	sink(out, 32);
}

static void run_sha512_sigil(uint64_t n)
{
	uint8_t out[64];
	for (uint64_t j = 0; j < n; j++)
		sigil_sha512(out, B.big, BIGLEN);
	sink(out, 64);
}

static void run_sha512_sodium(uint64_t n)
{
	uint8_t out[64];
	for (uint64_t j = 0; j < n; j++)
		g_bad += crypto_hash_sha512(out, B.big, BIGLEN) != 0;
	sink(out, 64);
}

static void run_sha512_ossl(uint64_t n)
{
	uint8_t out[64];
	for (uint64_t j = 0; j < n; j++)
		g_bad += ossl_sha512_1(out, B.big, BIGLEN) != 0;
	sink(out, 64);
}

/* ------------------------------------------------------------------ */
/* Checks: run before any timing of the operation. Each prints what is
 * wrong and returns -1, or returns 0. */

static int fail(const char *op, const char *what, int i)
{
	fprintf(stderr, "bench: CHECK FAILED [%s] %s (input %d); not timing it\n", op, what, i);
	return -1;
}

static int check_keypair(void)
{
	for (int i = 0; i < NKEYS; i++) {
		uint8_t pk[32], sk[64], opk[32];
		sigil_ed25519_keypair_from_seed(pk, sk, B.seed[i]);
		if (memcmp(pk, B.pk[i], 32) != 0)
			return fail("keypair", "sigil public key != libsodium's", i);
		if (memcmp(sk, B.sk[i], 64) != 0)
			return fail("keypair", "sigil secret key != libsodium's (seed || pk)", i);
		if (ossl_keypair1(opk, B.seed[i]) != 0 || memcmp(opk, pk, 32) != 0)
			return fail("keypair", "OpenSSL public key != sigil's", i);
	}
	return 0;
}

static int check_sign(void)
{
	for (int i = 0; i < NKEYS; i++) {
		uint8_t sig[64], osig[64];
		sigil_ed25519_sign(sig, B.msg[i], MSGLEN, B.sk[i]);
		if (memcmp(sig, B.sig[i], 64) != 0)
			return fail("sign", "sigil signature != libsodium's", i);
		if (ossl_sign1(osig, i) != 0 || memcmp(osig, sig, 64) != 0)
			return fail("sign", "OpenSSL signature != sigil's", i);
	}
	return 0;
}

static int check_sign_x8(void)
{
	uint8_t sig[NKEYS][64];
	for (int i = 0; i < NKEYS; i++) {
		sigil_ed25519_expand(&bench_ek[i], B.seed[i]);
		bench_ekp[i] = &bench_ek[i];
		bench_msgp[i] = B.msg[i];
		bench_mlen[i] = MSGLEN;
	}
	_Static_assert(NKEYS % 8 == 0, "sign_x8 takes the keys 8 by 8");
	sigil_ed25519_sign_expanded_many(sig, bench_msgp, bench_mlen, bench_ekp, NKEYS);
	for (int i = 0; i < NKEYS; i++)
		if (memcmp(sig[i], B.sig[i], 64) != 0)
			return fail("sign_x8", "sigil signature (8 at a time) != libsodium's", i);
	return 0;
}

/* good signatures accepted by all, a flipped bit in sig, message or key
 * rejected by all */
static int check_verify_policy(const char *op, sigil_ed25519_policy policy)
{
	for (int i = 0; i < NKEYS; i++) {
		uint8_t sig[64], m[MSGLEN];
		memcpy(sig, B.sig[i], 64);
		memcpy(m, B.msg[i], MSGLEN);
		if (sigil_ed25519_verify(sig, m, MSGLEN, B.pk[i], policy) != 0)
			return fail(op, "sigil rejects a good signature", i);
		if (crypto_sign_verify_detached(sig, m, MSGLEN, B.pk[i]) != 0)
			return fail(op, "libsodium rejects a good signature", i);
		if (ossl_verify1(sig, m, MSGLEN, i) != 0)
			return fail(op, "OpenSSL rejects a good signature", i);
		sig[i % 64] ^= (uint8_t)(1u << (i % 8));
		if (sigil_ed25519_verify(sig, m, MSGLEN, B.pk[i], policy) != -1)
			return fail(op, "sigil accepts a corrupted signature", i);
		if (crypto_sign_verify_detached(sig, m, MSGLEN, B.pk[i]) == 0 || ossl_verify1(sig, m, MSGLEN, i) == 0)
			return fail(op, "libsodium or OpenSSL accepts a corrupted signature", i);
		sig[i % 64] ^= (uint8_t)(1u << (i % 8));
		m[(i * 7) % MSGLEN] ^= 0x20;
		if (sigil_ed25519_verify(sig, m, MSGLEN, B.pk[i], policy) != -1)
			return fail(op, "sigil accepts a changed message", i);
	}
	return 0;
}

static int check_verify(void)
{
	return check_verify_policy("verify", SIGIL_ED25519_STRICT);
}

static int check_batch(void)
{
	uint8_t bad_sig[64];
	int valid[BATCH];

	/* the single verifications timed beside the batch */
	if (check_verify_policy("verify_batch", SIGIL_ED25519_STRICT) != 0 ||
	    check_verify_policy("verify_batch", SIGIL_ED25519_ZIP215) != 0)
		return -1;

	for (int i = 0; i < BATCH; i++)
		valid[i] = -7;
	if (sigil_ed25519_verify_batch(valid, B.items, BATCH, SIGIL_ED25519_ZIP215) != 0)
		return fail("verify_batch", "sigil rejects a batch of good signatures", 0);
	for (int i = 0; i < BATCH; i++)
		if (valid[i] != 1)
			return fail("verify_batch", "valid[i] != 1 for a good signature", i);

	/* one corrupted signature: the batch fails and exactly that item is 0 */
	int k = BATCH / 3;
	memcpy(bad_sig, B.sig[k % NKEYS], 64);
	bad_sig[5] ^= 0x01;
	const uint8_t *saved = B.items[k].sig;
	B.items[k].sig = bad_sig;
	int r = sigil_ed25519_verify_batch(valid, B.items, BATCH, SIGIL_ED25519_ZIP215);
	B.items[k].sig = saved;
	if (r != -1)
		return fail("verify_batch", "sigil accepts a batch with a corrupted signature", k);
	for (int i = 0; i < BATCH; i++)
		if (valid[i] != (i != k))
			return fail("verify_batch", "valid[] wrong with one corrupted signature", i);
	return 0;
}

static int check_x25519(void)
{
	for (int i = 0; i < NKEYS; i++) {
		uint8_t a[32], b[32], c[32];
		int ra = sigil_x25519(a, B.xscalar[i], B.xpeer[i]);
		if (ra != 0)
			return fail("x25519", "sigil_x25519 returned an error", i);
		if (crypto_scalarmult(b, B.xscalar[i], B.xpeer[i]) != 0 || memcmp(a, b, 32) != 0)
			return fail("x25519", "sigil shared secret != libsodium's", i);
		if (ossl_x25519_1(c, i) != 0 || memcmp(a, c, 32) != 0)
			return fail("x25519", "OpenSSL shared secret != sigil's", i);
	}
	return 0;
}

static int check_x25519_base(void)
{
	for (int i = 0; i < NKEYS; i++) {
		uint8_t a[32], c[32];
		sigil_x25519_public(a, B.xscalar[i]);
		if (memcmp(a, B.xpub[i], 32) != 0)
			return fail("x25519_base", "sigil public key != libsodium's", i);
		if (ossl_x25519_public1(c, B.xscalar[i]) != 0 || memcmp(a, c, 32) != 0)
			return fail("x25519_base", "OpenSSL public key != sigil's", i);
	}
	return 0;
}

static int check_sha512(void)
{
	uint8_t a[64], b[64], c[64];
	sigil_sha512(a, B.big, BIGLEN);
	if (crypto_hash_sha512(b, B.big, BIGLEN) != 0 || memcmp(a, b, 64) != 0)
		return fail("sha512_1mib", "sigil digest != libsodium's", 0);
	if (ossl_sha512_1(c, B.big, BIGLEN) != 0 || memcmp(a, c, 64) != 0)
		return fail("sha512_1mib", "OpenSSL digest != sigil's", 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Operations table */

typedef struct {
	const char *name;
	runner_fn fn;
	double ops_per_call; /* operations done by one runner iteration */
	int sigil;           /* 1 for sigil's own (never the "best other") */
} Impl;

/* impls[0] is the sigil implementation the ratios are about */
typedef struct {
	const char *name;
	const char *what;
	int (*check)(void);
	Impl impls[MAX_IMPLS];
} Op;

#define SIGIL(name, fn) { name, fn, 1, 1 }
#define OTHER(name, fn) { name, fn, 1, 0 }
static const Op ops[] = {
	{ "keypair", "Ed25519 keypair from a 32-byte seed", check_keypair,
	  { SIGIL("sigil", run_keypair_sigil), OTHER("libsodium", run_keypair_sodium),
	    OTHER("openssl", run_keypair_ossl) } },
	{ "sign", "Ed25519 sign, 64-byte message", check_sign,
	  { SIGIL("sigil", run_sign_sigil), OTHER("libsodium", run_sign_sodium), OTHER("openssl", run_sign_ossl) } },
	/* eight signatures at once (IFMA lanes for their R), time per
	 * signature, interleaved with single signs */
	{ "sign_x8",
	  "Ed25519 sign of 8 at once (sign_expanded_many), 64-byte messages, time per signature, "
	  "against single signs",
	  check_sign_x8,
	  { { "sigil", run_sign_x8_sigil, 8, 1 }, SIGIL("sigil-expanded", run_sign_expanded_sigil),
	    SIGIL("sigil-sign", run_sign_sigil), OTHER("libsodium", run_sign_sodium) } },
	{ "verify", "Ed25519 verify, 64-byte message (sigil: STRICT policy)", check_verify,
	  { SIGIL("sigil", run_verify_sigil), OTHER("libsodium", run_verify_sodium),
	    OTHER("openssl", run_verify_ossl) } },
	/* batch verification interleaved with single verifications, so that
	 * its ratios to them are measured under the same noise */
	{ "verify_batch",
	  "Ed25519 batch verify (ZIP215) of 64 signatures, time per signature, against single verifies",
	  check_batch,
	  { { "sigil", run_batch_sigil, BATCH, 1 }, SIGIL("sigil-strict", run_verify_sigil),
	    SIGIL("sigil-zip215", run_verify_zip215_sigil), OTHER("libsodium", run_verify_sodium),
	    OTHER("openssl", run_verify_ossl) } },
	{ "x25519", "X25519, variable base point", check_x25519,
	  { SIGIL("sigil", run_x25519_sigil), OTHER("libsodium", run_x25519_sodium),
	    OTHER("openssl", run_x25519_ossl) } },
	{ "x25519_base", "X25519 public key (base point)", check_x25519_base,
	  { SIGIL("sigil", run_x25519_base_sigil), OTHER("libsodium", run_x25519_base_sodium),
	    OTHER("openssl", run_x25519_base_ossl) } },
	{ "sha512_1mib", "SHA-512 of 1 MiB", check_sha512,
	  { SIGIL("sigil", run_sha512_sigil), OTHER("libsodium", run_sha512_sodium),
	    OTHER("openssl", run_sha512_ossl) } },
};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

/* ------------------------------------------------------------------ */
/* Timing */

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* CPU time of this thread: unlike the wall clock it stops while the thread
 * is preempted, so it shows what a batch cost on a machine shared with
 * other work (cache and sibling-thread interference still count) */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* TSC ticks (reference cycles), fenced so that the batch does not leak
 * across the reads; 0 where there is no TSC */
static uint64_t ticks(void)
{
#if defined(__x86_64__)
	_mm_lfence();
	uint64_t t = __rdtsc();
	_mm_lfence();
	return t;
#else
	return 0;
#endif
}

static int have_ticks(void)
{
#if defined(__x86_64__)
	return 1;
#else
	return 0;
#endif
}

/* TSC ticks per ns, measured over a 20 ms busy wait (0 without a TSC) */
static double tsc_ghz(void)
{
	if (!have_ticks())
		return 0;
	uint64_t c0 = ticks(), t0 = now_ns(), t1;
	do
		t1 = now_ns();
	while (t1 - t0 < 20000000);
	return (double)(ticks() - c0) / (double)(t1 - t0);
}

static double g_tsc_ghz;

typedef struct {
	double med, p10, p90, min, max;
} Stats;

typedef struct {
	uint64_t iters;       /* runner iterations in the next batch */
	uint64_t total;       /* runner iterations timed, all batches */
	size_t nb;            /* batches done */
	double ns[MAX_BATCHES];
	double cyc[MAX_BATCHES];
	double cpu[MAX_BATCHES];
	Stats sns, scyc, scpu;
} Result;

typedef struct {
	int ran;      /* 1 if timed, 0 if skipped, -1 if the check failed */
	size_t nimpl;
	Result r[MAX_IMPLS];
	double seconds;
} OpResult;

static OpResult results[NOPS];

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* nearest-rank percentile of sorted v[0..n-1] */
static double pct(const double *v, size_t n, double p)
{
	size_t k = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);
	return v[k < n ? k : n - 1];
}

static Stats stats(const double *v, size_t n)
{
	Stats s;
	double *t = malloc(n * sizeof(double));
	if (!t) {
		fprintf(stderr, "bench: out of memory\n");
		exit(1);
	}
	memcpy(t, v, n * sizeof(double));
	qsort(t, n, sizeof(double), cmp_double);
	s.min = t[0];
	s.max = t[n - 1];
	s.p10 = pct(t, n, 10);
	s.p90 = pct(t, n, 90);
	s.med = n % 2 ? t[n / 2] : (t[n / 2 - 1] + t[n / 2]) / 2;
	free(t);
	return s;
}

/* time of n runner iterations, in ns */
static uint64_t time_run(runner_fn fn, uint64_t n)
{
	uint64_t t0 = now_ns();
	fn(n);
	return now_ns() - t0;
}

/* Choose iterations per batch so that a batch lasts about target_ns:
 * double n until a run lasts at least min(target, max(target/8, 0.25 ms)),
 * then time that n twice more and scale by the fastest of the three runs,
 * so that one preemption (the machine is shared) cannot shrink the batches
 * to a few calls. */
static uint64_t calibrate(runner_fn fn, uint64_t target_ns)
{
	uint64_t n = 1, t;
	uint64_t floor_ns = target_ns / 8 > 250000 ? target_ns / 8 : 250000;

	if (floor_ns > target_ns)
		floor_ns = target_ns;
	for (;;) {
		t = time_run(fn, n);
		if (t >= floor_ns || n >= (1ull << 40))
			break;
		n *= 2;
	}
	for (int k = 0; k < 2; k++) {
		uint64_t t2 = time_run(fn, n);
		if (t2 < t)
			t = t2;
	}
	if (t == 0)
		t = 1;
	double scaled = (double)n * (double)target_ns / (double)t;
	return scaled < 1 ? 1 : (uint64_t)scaled;
}

static void bench_op(size_t oi, double seconds)
{
	const Op *op = &ops[oi];
	OpResult *res = &results[oi];
	size_t nimpl = 0;

	while (nimpl < MAX_IMPLS && op->impls[nimpl].name)
		nimpl++;
	res->nimpl = nimpl;
	res->seconds = seconds;

	uint64_t budget_ns = (uint64_t)(seconds * 1e9);
	uint64_t target_ns = budget_ns / (nimpl * ROUNDS_TARGET);
	if (target_ns > BATCH_NS_MAX)
		target_ns = BATCH_NS_MAX;
	if (target_ns < BATCH_NS_MIN)
		target_ns = BATCH_NS_MIN;

	/* warm-up (caches, tables, branch predictors, CPU frequency): a few
	 * calls, then calibrate (which runs more) */
	for (size_t k = 0; k < nimpl; k++) {
		time_run(op->impls[k].fn, 4);
		res->r[k].iters = calibrate(op->impls[k].fn, target_ns);
		res->r[k].nb = 0;
		res->r[k].total = 0;
	}

	uint64_t start = now_ns();
	for (size_t round = 0; round < MAX_BATCHES; round++) {
		if (round >= MIN_ROUNDS && now_ns() - start >= budget_ns)
			break;
		for (size_t s = 0; s < nimpl; s++) {
			size_t k = (round + s) % nimpl; /* rotate the starting implementation */
			Result *r = &res->r[k];
			uint64_t u0 = cpu_ns();
			uint64_t c0 = ticks();
			uint64_t t0 = now_ns();
			op->impls[k].fn(r->iters);
			uint64_t t1 = now_ns();
			uint64_t c1 = ticks();
			uint64_t u1 = cpu_ns();
			double nops = (double)r->iters * op->impls[k].ops_per_call;
			r->ns[r->nb] = (double)(t1 - t0) / nops;
			r->cyc[r->nb] = (double)(c1 - c0) / nops;
			r->cpu[r->nb] = (double)(u1 - u0) / nops;
			r->nb++;
			r->total += r->iters;
			/* keep every batch near target_ns although the machine's
			 * speed wanders: rescale the next batch by this one (at
			 * most x2 or /2 a step). The next size depends only on
			 * past batches, so it does not bias this measurement. */
			double f = (double)target_ns / (double)(t1 - t0 ? t1 - t0 : 1);
			f = f > 2 ? 2 : f < 0.5 ? 0.5 : f;
			double next = (double)r->iters * f;
			r->iters = next < 1 ? 1 : (uint64_t)(next + 0.5);
		}
	}
	for (size_t k = 0; k < nimpl; k++) {
		res->r[k].sns = stats(res->r[k].ns, res->r[k].nb);
		res->r[k].scyc = stats(res->r[k].cyc, res->r[k].nb);
		res->r[k].scpu = stats(res->r[k].cpu, res->r[k].nb);
	}
	res->ran = 1;
}

/* ------------------------------------------------------------------ */
/* Reporting */

static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];

	snprintf(buf, len, "unknown");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Model", 5) == 0) {
			char *p = strchr(line, ':');
			if (p) {
				p++;
				while (*p == ' ' || *p == '\t')
					p++;
				p[strcspn(p, "\n")] = 0;
				snprintf(buf, len, "%s", p);
				break;
			}
		}
	}
	fclose(f);
}

static long ncpus(void)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[512];
	long n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "processor", 9) == 0)
			n++;
	fclose(f);
	return n;
}

/* the 1-minute load average, to record how busy the machine was */
static double loadavg(void)
{
	FILE *f = fopen("/proc/loadavg", "r");
	double l = -1;

	if (f) {
		if (fscanf(f, "%lf", &l) != 1)
			l = -1;
		fclose(f);
	}
	return l;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", (unsigned char)*s);
		else
			putchar(*s);
	}
	putchar('"');
}

static const char *opt_op;

static int op_selected(size_t oi)
{
	return !opt_op || strcmp(opt_op, ops[oi].name) == 0;
}

enum { BY_WALL_MEDIAN, BY_WALL_MIN, BY_CPU_MEDIAN };

static double stat_of(const Result *r, int by)
{
	return by == BY_WALL_MEDIAN ? r->sns.med : by == BY_WALL_MIN ? r->sns.min : r->scpu.med;
}

/* index of the best (lowest by the given statistic) implementation that is
 * not sigil's, or -1 */
static int best_other(size_t oi, int by)
{
	const OpResult *res = &results[oi];
	int best = -1;
	for (size_t k = 1; k < res->nimpl; k++)
		if (!ops[oi].impls[k].sigil && (best < 0 || stat_of(&res->r[k], by) < stat_of(&res->r[best], by)))
			best = (int)k;
	return best;
}

/* sigil (impls[0]) over the best other by the given statistic */
static double ratio_best(size_t oi, int by)
{
	int b = best_other(oi, by);
	return stat_of(&results[oi].r[0], by) / stat_of(&results[oi].r[b], by);
}

static size_t op_index(const char *name)
{
	for (size_t i = 0; i < NOPS; i++)
		if (strcmp(ops[i].name, name) == 0)
			return i;
	return NOPS;
}

static void print_text(double seconds)
{
	printf("\nsigil bench: %g s budget; batches interleaved between implementations; load average now %.2f\n",
	       seconds, loadavg());
	printf("time per operation: wall clock, median over batches [p10 .. p90] (min .. max);\n"
	       "cpu = thread CPU time (excludes preemption), median [p10 .. p90]; batches x calls per batch\n");
	if (have_ticks())
		printf("cycles: rdtsc ticks, i.e. REFERENCE cycles at the TSC's fixed rate (%.3f GHz here), not core clock cycles\n",
		       g_tsc_ghz);
	for (size_t oi = 0; oi < NOPS; oi++) {
		const OpResult *res = &results[oi];
		if (res->ran != 1)
			continue;
		printf("\n%s: %s\n", ops[oi].name, ops[oi].what);
		for (size_t k = 0; k < res->nimpl; k++) {
			const Result *r = &res->r[k];
			printf("  %-12s %12.0f ns [%10.0f .. %10.0f] (%10.0f .. %10.0f)", ops[oi].impls[k].name,
			       r->sns.med, r->sns.p10, r->sns.p90, r->sns.min, r->sns.max);
			if (have_ticks())
				printf("  %10.0f cyc [%10.0f .. %10.0f]", r->scyc.med, r->scyc.p10, r->scyc.p90);
			printf("  cpu %10.0f ns [%10.0f .. %10.0f]", r->scpu.med, r->scpu.p10, r->scpu.p90);
			printf("  %zu x %.0f\n", r->nb, (double)r->total / (double)r->nb);
		}
		if (strcmp(ops[oi].name, "sha512_1mib") == 0)
			for (size_t k = 0; k < res->nimpl; k++)
				printf("  %-12s %8.1f MiB/s (wall median), %.1f MiB/s (cpu median)\n",
				       ops[oi].impls[k].name, 1e9 / res->r[k].sns.med, 1e9 / res->r[k].scpu.med);
	}

	printf("\nsigil / best other (below 1.00: sigil is faster), each by: wall median; wall minimum; cpu median\n");
	for (size_t oi = 0; oi < NOPS; oi++) {
		const OpResult *res = &results[oi];
		if (res->ran != 1 || best_other(oi, BY_WALL_MEDIAN) < 0)
			continue;
		printf("  %-14s %6.2f; %.2f; %.2f  (best other by cpu median: %s)\n", ops[oi].name,
		       ratio_best(oi, BY_WALL_MEDIAN), ratio_best(oi, BY_WALL_MIN), ratio_best(oi, BY_CPU_MEDIAN),
		       ops[oi].impls[best_other(oi, BY_CPU_MEDIAN)].name);
	}
	size_t ib = op_index("verify_batch");
	if (results[ib].ran == 1) {
		const OpResult *res = &results[ib];
		printf("batch verify, per signature (%d per batch), over single verification (wall median; wall min; cpu median):\n",
		       BATCH);
		for (size_t k = 1; k < res->nimpl; k++)
			printf("  vs %-12s %6.2f; %.2f; %.2f\n", ops[ib].impls[k].name,
			       res->r[0].sns.med / res->r[k].sns.med, res->r[0].sns.min / res->r[k].sns.min,
			       res->r[0].scpu.med / res->r[k].scpu.med);
	}
}

static void print_json(const char *cpu, double seconds)
{
	printf("{\n  \"sigil_impl\": ");
	json_str(sigil_crypto_impl());
	printf(",\n  \"cpu\": ");
	json_str(cpu);
	printf(",\n  \"ncpus\": %ld,\n  \"compiler\": ", ncpus());
	json_str(BENCH_CC);
	printf(",\n  \"buildtype\": ");
	json_str(BENCH_BUILDTYPE);
#ifdef NDEBUG
	printf(",\n  \"assertions\": false");
#else
	printf(",\n  \"assertions\": true");
#endif
	printf(",\n  \"libsodium\": ");
	json_str(sodium_version_string());
	printf(",\n  \"openssl\": ");
	json_str(OpenSSL_version(OPENSSL_VERSION));
	printf(",\n  \"seconds\": %g,\n  \"cycles_are\": \"%s\",\n  \"tsc_ghz\": %.4f,\n  \"ops\": {", seconds,
	       have_ticks() ? "rdtsc reference cycles" : "none", g_tsc_ghz);
	int first = 1;
	for (size_t oi = 0; oi < NOPS; oi++) {
		const OpResult *res = &results[oi];
		if (res->ran == 0)
			continue;
		printf("%s\n    \"%s\": {\"ok\": %s", first ? "" : ",", ops[oi].name, res->ran == 1 ? "true" : "false");
		first = 0;
		if (res->ran == 1) {
			printf(", \"impls\": {");
			for (size_t k = 0; k < res->nimpl; k++) {
				const Result *r = &res->r[k];
				printf("%s\n      \"%s\": {\"batches\": %zu, \"calls\": %llu, "
				       "\"ns\": {\"median\": %.1f, \"p10\": %.1f, \"p90\": %.1f, \"min\": %.1f, \"max\": %.1f}, "
				       "\"cycles\": {\"median\": %.1f, \"p10\": %.1f, \"p90\": %.1f}, "
				       "\"cpu_ns\": {\"median\": %.1f, \"p10\": %.1f, \"p90\": %.1f, \"min\": %.1f}}",
				       k ? "," : "", ops[oi].impls[k].name, r->nb, (unsigned long long)r->total,
				       r->sns.med, r->sns.p10, r->sns.p90, r->sns.min, r->sns.max,
				       r->scyc.med, r->scyc.p10, r->scyc.p90,
				       r->scpu.med, r->scpu.p10, r->scpu.p90, r->scpu.min);
			}
			printf("}");
			int b = best_other(oi, BY_WALL_MEDIAN);
			if (b >= 0)
				printf(", \"ratio_vs_best_other\": %.4f, \"best_other\": \"%s\", "
				       "\"min_ratio_vs_best_other\": %.4f, \"cpu_ratio_vs_best_other\": %.4f, "
				       "\"best_other_by_cpu\": \"%s\"",
				       ratio_best(oi, BY_WALL_MEDIAN), ops[oi].impls[b].name, ratio_best(oi, BY_WALL_MIN),
				       ratio_best(oi, BY_CPU_MEDIAN), ops[oi].impls[best_other(oi, BY_CPU_MEDIAN)].name);
		}
		printf("}");
	}
	printf("\n  }");
	size_t ib = op_index("verify_batch");
	if (results[ib].ran == 1) {
		const OpResult *res = &results[ib];
		printf(",\n  \"batch_ratio\": {");
		for (size_t k = 1; k < res->nimpl; k++)
			printf("%s\"vs_%s\": %.4f, \"cpu_vs_%s\": %.4f", k > 1 ? ", " : "", ops[ib].impls[k].name,
			       res->r[0].sns.med / res->r[k].sns.med, ops[ib].impls[k].name,
			       res->r[0].scpu.med / res->r[k].scpu.med);
		printf("}");
	}
	printf(",\n  \"loadavg_1min_at_end\": %.2f,\n  \"failures_during_timing\": %lu\n}\n", loadavg(), g_bad);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench [--seconds N] [--op NAME] [--json] [--list]\n"
	           "  --seconds N  total time budget in seconds (default 10)\n"
	           "  --op NAME    run one operation only (see --list)\n"
	           "  --json       machine-readable output on stdout\n");
}

int main(int argc, char **argv)
{
	double seconds = 10;
	int json = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
			char *end;
			errno = 0;
			seconds = strtod(argv[++i], &end);
			if (errno || *end || !(seconds > 0) || seconds > 86400) {
				fprintf(stderr, "bench: --seconds wants a number in (0, 86400], got '%s'\n", argv[i]);
				return 2;
			}
		} else if (strcmp(argv[i], "--op") == 0 && i + 1 < argc) {
			opt_op = argv[++i];
			if (op_index(opt_op) == NOPS) {
				fprintf(stderr, "bench: unknown operation '%s' (see --list)\n", opt_op);
				return 2;
			}
		} else if (strcmp(argv[i], "--json") == 0) {
			json = 1;
		} else if (strcmp(argv[i], "--list") == 0) {
			for (size_t k = 0; k < NOPS; k++)
				printf("%-14s %s\n", ops[k].name, ops[k].what);
			return 0;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			return 0;
		} else {
			usage(stderr);
			return 2;
		}
	}

	char cpu[256];
	cpu_model(cpu, sizeof(cpu));
	if (!json) {
		printf("sigil_crypto_impl: %s\n", sigil_crypto_impl());
		printf("cpu: %s (%ld logical CPUs)\n", cpu, ncpus());
		printf("compiler: %s; buildtype: %s\n", BENCH_CC, BENCH_BUILDTYPE);
		printf("libsodium %s; %s\n", sodium_version_string(), OpenSSL_version(OPENSSL_VERSION));
		printf("load average at start: %.2f\n", loadavg());
#ifndef NDEBUG
		/* b_ndebug=if-release is project-wide: NDEBUG here means NDEBUG
		 * in crypto/, whose bound assertions are on otherwise */
		printf("WARNING: assertions are on (not a release build): sigil's figures include its bound checks\n");
#endif
		fflush(stdout);
	}
	if (setup() != 0)
		return 1;
	g_tsc_ghz = tsc_ghz();

	/* checks first: an operation whose check fails is not timed */
	size_t nsel = 0, nok = 0;
	int failed = 0;
	for (size_t oi = 0; oi < NOPS; oi++) {
		if (!op_selected(oi))
			continue;
		nsel++;
		if (ops[oi].check() != 0) {
			results[oi].ran = -1;
			failed = 1;
		} else {
			nok++;
		}
	}

	for (size_t oi = 0; oi < NOPS; oi++) {
		if (!op_selected(oi) || results[oi].ran == -1)
			continue;
		bench_op(oi, seconds / (double)nsel);
		if (!json) {
			fprintf(stderr, ".");
			fflush(stderr);
		}
	}
	if (!json)
		fprintf(stderr, "\n");

	if (json)
		print_json(cpu, seconds);
	else
		print_text(seconds);

	if (g_bad) {
		fprintf(stderr, "bench: %lu calls failed DURING timing; the figures are not valid\n", g_bad);
		failed = 1;
	}
	if (failed)
		fprintf(stderr, "bench: %zu of %zu operations passed their checks\n", nok, nsel);
	teardown();
	return failed ? 1 : 0;
}
