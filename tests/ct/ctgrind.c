/* SPDX-License-Identifier: MIT */
/*
 * ctgrind.c - every function of libsigil-crypto that handles a secret, run
 * with its secrets marked undefined for Valgrind Memcheck (method in
 * ctgrind.h). Run by tests/ct/run-ctgrind.sh: Valgrind must report nothing.
 *
 * What is marked secret: seeds, secret keys sk (both halves: stricter than
 * needed), expanded keys (the whole struct), X25519 scalars, secret messages
 * given to SHA-512, the inputs of sigil_verify32 and sigil_wipe, and, by
 * calling internal functions directly, the nonce and the scalars mod L
 * (sc_*), the condition bits of fe_cmov/fe_cswap, the table index of the
 * fixed-base table lookup and the scalar of ge_scalarmult_base. Every output
 * buffer is marked undefined before the call too, so that reading an output
 * before writing it is reported. Results are declassified, then compared
 * with RFC 8032 / RFC 7748 / FIPS 180-4 values, so a case that computed
 * garbage fails even when Valgrind is silent.
 *
 * Public inputs stay public: messages, contexts, the peer's u, and all
 * inputs of the verify functions, which are called here on public data to
 * check that nothing they call was left marked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ctgrind.h"
#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "ref51/ref51.h"
#include "sc.h"
#include "sha512.h"

/* RFC 8032 section 7.1 TEST 1 (empty message) */
static const char *const t1_seed = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char *const t1_pk = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
static const char *const t1_sig = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065"
				  "224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
/* RFC 8032 section 7.2 Ed25519ctx, context "foo" */
static const char *const c_seed = "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6";
static const char *const c_msg = "f726936d19c800494e3fdaff20b276a8";
static const char *const c_sig = "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a"
				 "8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d";
/* RFC 8032 section 7.3 Ed25519ph, message "abc", empty context */
static const char *const p_seed = "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42";
static const char *const p_sig = "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae41"
				 "31f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406";
/* RFC 7748 section 5.2, first vector */
static const char *const x_scalar = "a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4";
static const char *const x_u = "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c";
static const char *const x_out = "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552";
/* RFC 7748 section 6.1: Alice's private key and public key */
static const char *const a_priv = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a";
static const char *const a_pub = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a";
/* FIPS 180-4 / NIST CAVP SHA-512("abc") */
static const char *const sha_abc = "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a"
				   "2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f";

/* the RFC 8032 TEST 1 key pair: sk = seed || pk, made by sigil itself */
static void t1_keys(uint8_t sk[64], uint8_t pk[32])
{
	uint8_t seed[32];

	ctg_unhex(seed, 32, t1_seed);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(pk, 32);
	ctg_public(sk, 64);
}

static int case_keypair(void)
{
	uint8_t seed[32], pk[32], sk[64], want_pk[32], want_sk[64];
	int bad = 0;

	ctg_unhex(seed, 32, t1_seed);
	ctg_unhex(want_pk, 32, t1_pk);
	memcpy(want_sk, seed, 32);
	memcpy(want_sk + 32, want_pk, 32);
	ctg_secret(seed, sizeof(seed));
	ctg_secret(pk, sizeof(pk));
	ctg_secret(sk, sizeof(sk));
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	bad |= ctg_expect_bytes("keypair pk", pk, want_pk, 32);
	bad |= ctg_expect_bytes("keypair sk", sk, want_sk, 64);
	return bad;
}

static int case_expand(void)
{
	uint8_t seed[32], want_pk[32];
	sigil_ed25519_expanded ek;

	ctg_unhex(seed, 32, t1_seed);
	ctg_unhex(want_pk, 32, t1_pk);
	ctg_secret(seed, sizeof(seed));
	ctg_secret(&ek, sizeof(ek));
	sigil_ed25519_expand(&ek, seed);
	return ctg_expect_bytes("expand pk", ek.pk, want_pk, 32);
}

static int case_sign(void)
{
	uint8_t sk[64], pk[32], sig[64], want[64];

	t1_keys(sk, pk);
	ctg_unhex(want, 64, t1_sig);
	ctg_secret(sk, sizeof(sk));
	ctg_secret(sig, sizeof(sig));
	sigil_ed25519_sign(sig, (const uint8_t *)"", 0, sk);
	return ctg_expect_bytes("sign", sig, want, 64);
}

static int case_sign_expanded(void)
{
	uint8_t seed[32], sig[64], want[64];
	sigil_ed25519_expanded ek;

	ctg_unhex(seed, 32, t1_seed);
	ctg_unhex(want, 64, t1_sig);
	sigil_ed25519_expand(&ek, seed);
	ctg_secret(&ek, sizeof(ek));
	ctg_secret(sig, sizeof(sig));
	sigil_ed25519_sign_expanded(sig, (const uint8_t *)"", 0, &ek);
	sigil_wipe(&ek, sizeof(ek));
	return ctg_expect_bytes("sign_expanded", sig, want, 64);
}

/* 10 signatures (a chunk of 8, then 2), each its own secret expanded key,
 * against single signs made before the keys were marked secret */
static int case_sign_expanded_many(void)
{
	enum { N = 10 };
	uint8_t seed[32], sig[N][64], want[N][64], msg[N][40];
	sigil_ed25519_expanded ek[N];
	const sigil_ed25519_expanded *ekp[N];
	const uint8_t *mp[N];
	size_t ml[N];
	int bad = 0;

	ctg_unhex(seed, 32, t1_seed);
	for (int i = 0; i < N; i++) {
		seed[0] = (uint8_t)i;
		sigil_ed25519_expand(&ek[i], seed);
		memset(msg[i], 'a' + i, sizeof msg[i]);
		ml[i] = (size_t)(4 * i);
		mp[i] = msg[i];
		ekp[i] = &ek[i];
		sigil_ed25519_sign_expanded(want[i], msg[i], ml[i], &ek[i]);
	}
	ctg_secret(ek, sizeof(ek));
	ctg_secret(sig, sizeof(sig));
	sigil_ed25519_sign_expanded_many(sig, mp, ml, ekp, N);
	sigil_wipe(ek, sizeof(ek));
	for (int i = 0; i < N; i++)
		bad |= ctg_expect_bytes("sign_expanded_many", sig[i], want[i], 64);
	return bad;
}

static int case_ctx_sign(void)
{
	uint8_t seed[32], pk[32], sk[64], m[16], sig[64], want[64];
	int r, bad = 0;

	ctg_unhex(seed, 32, c_seed);
	ctg_unhex(m, 16, c_msg);
	ctg_unhex(want, 64, c_sig);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(sk, sizeof(sk));
	ctg_secret(sk, sizeof(sk));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ctx_sign(sig, m, sizeof(m), (const uint8_t *)"foo", 3, sk);
	bad |= ctg_expect_int("ctx_sign return", r, 0);
	bad |= ctg_expect_bytes("ctx_sign", sig, want, 64);
	/* a refused context (ctxlen 256 > 255): -1, decided on public data */
	{
		uint8_t ctx[256];

		memset(ctx, 'c', sizeof(ctx));
		r = sigil_ed25519ctx_sign(sig, m, sizeof(m), ctx, sizeof(ctx), sk);
		bad |= ctg_expect_int("ctx_sign ctxlen 256", r, -1);
	}
	return bad;
}

static int case_ctx_sign_expanded(void)
{
	uint8_t seed[32], m[16], sig[64], want[64];
	sigil_ed25519_expanded ek;
	int r, bad = 0;

	ctg_unhex(seed, 32, c_seed);
	ctg_unhex(m, 16, c_msg);
	ctg_unhex(want, 64, c_sig);
	sigil_ed25519_expand(&ek, seed);
	ctg_secret(&ek, sizeof(ek));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ctx_sign_expanded(sig, m, sizeof(m), (const uint8_t *)"foo", 3, &ek);
	sigil_wipe(&ek, sizeof(ek));
	bad |= ctg_expect_int("ctx_sign_expanded return", r, 0);
	bad |= ctg_expect_bytes("ctx_sign_expanded", sig, want, 64);
	return bad;
}

static int case_ph_sign(void)
{
	uint8_t seed[32], pk[32], sk[64], sig[64], want[64];
	int r, bad = 0;

	ctg_unhex(seed, 32, p_seed);
	ctg_unhex(want, 64, p_sig);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(sk, sizeof(sk));
	ctg_secret(sk, sizeof(sk));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ph_sign(sig, (const uint8_t *)"abc", 3, NULL, 0, sk);
	bad |= ctg_expect_int("ph_sign return", r, 0);
	bad |= ctg_expect_bytes("ph_sign", sig, want, 64);
	return bad;
}

static int case_ph_sign_expanded(void)
{
	uint8_t seed[32], sig[64], want[64];
	sigil_ed25519_expanded ek;
	int r, bad = 0;

	ctg_unhex(seed, 32, p_seed);
	ctg_unhex(want, 64, p_sig);
	sigil_ed25519_expand(&ek, seed);
	ctg_secret(&ek, sizeof(ek));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ph_sign_expanded(sig, (const uint8_t *)"abc", 3, NULL, 0, &ek);
	sigil_wipe(&ek, sizeof(ek));
	bad |= ctg_expect_int("ph_sign_expanded return", r, 0);
	bad |= ctg_expect_bytes("ph_sign_expanded", sig, want, 64);
	return bad;
}

static int case_ph_sign_prehashed(void)
{
	uint8_t seed[32], pk[32], sk[64], digest[64], sig[64], want[64];
	int r, bad = 0;

	ctg_unhex(seed, 32, p_seed);
	ctg_unhex(want, 64, p_sig);
	ctg_unhex(digest, 64, sha_abc);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(sk, sizeof(sk));
	ctg_secret(sk, sizeof(sk));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ph_sign_prehashed(sig, digest, NULL, 0, sk);
	bad |= ctg_expect_int("ph_sign_prehashed return", r, 0);
	bad |= ctg_expect_bytes("ph_sign_prehashed", sig, want, 64);
	return bad;
}

static int case_ph_sign_prehashed_expanded(void)
{
	uint8_t seed[32], digest[64], sig[64], want[64];
	sigil_ed25519_expanded ek;
	int r, bad = 0;

	ctg_unhex(seed, 32, p_seed);
	ctg_unhex(want, 64, p_sig);
	ctg_unhex(digest, 64, sha_abc);
	sigil_ed25519_expand(&ek, seed);
	ctg_secret(&ek, sizeof(ek));
	ctg_secret(sig, sizeof(sig));
	r = sigil_ed25519ph_sign_prehashed_expanded(sig, digest, NULL, 0, &ek);
	sigil_wipe(&ek, sizeof(ek));
	bad |= ctg_expect_int("ph_sign_prehashed_expanded return", r, 0);
	bad |= ctg_expect_bytes("ph_sign_prehashed_expanded", sig, want, 64);
	return bad;
}

/* sign a long message with a secret key: the message length (public) is
 * the only thing the time may depend on */
static int case_sign_long_message(void)
{
	uint8_t sk[64], pk[32], sig[64], m[1000];
	int r;

	t1_keys(sk, pk);
	ctg_fill(m, sizeof(m), 7);
	ctg_secret(sk, sizeof(sk));
	ctg_secret(sig, sizeof(sig));
	sigil_ed25519_sign(sig, m, sizeof(m), sk);
	ctg_public(sig, sizeof(sig));
	r = sigil_ed25519_verify(sig, m, sizeof(m), pk, SIGIL_ED25519_STRICT);
	return ctg_expect_int("sign 1000-byte message then verify", r, 0);
}

static int case_x25519(void)
{
	uint8_t k[32], u[32], out[32], want[32];
	int r, bad = 0;

	ctg_unhex(k, 32, x_scalar);
	ctg_unhex(u, 32, x_u);
	ctg_unhex(want, 32, x_out);
	ctg_secret(k, sizeof(k));
	ctg_secret(out, sizeof(out));
	r = sigil_x25519(out, k, u);
	/* the shared secret is secret: only the public key and the verify
	 * result are declassification points (issue 3) */
	if (!ctg_still_secret(out, sizeof(out))) {
		printf("# sigil_x25519 declassified its output (the shared secret) inside the library\n");
		bad = 1;
	}
	bad |= ctg_expect_int("x25519 return", r, 0);
	bad |= ctg_expect_bytes("x25519", out, want, 32);
	return bad;
}

/* a small-order u: the all-zero result must be found without a branch on it */
static int case_x25519_small_order(void)
{
	uint8_t k[32], u[32] = { 0 }, out[32], zero[32] = { 0 };
	int r, bad = 0;

	ctg_unhex(k, 32, x_scalar);
	u[0] = 1; /* u = 1 has order 4 on Curve25519 (RFC 7748 small-order input) */
	ctg_secret(k, sizeof(k));
	ctg_secret(out, sizeof(out));
	r = sigil_x25519(out, k, u);
	bad |= ctg_expect_int("x25519 small-order u return", r, -1);
	bad |= ctg_expect_bytes("x25519 small-order u", out, zero, 32);
	return bad;
}

/* a secret peer value too (e.g. a DH result fed back): nothing may branch on u */
static int case_x25519_secret_u(void)
{
	uint8_t k[32], u[32], out[32], want[32];
	int r, bad = 0;

	ctg_unhex(k, 32, x_scalar);
	ctg_unhex(u, 32, x_u);
	ctg_unhex(want, 32, x_out);
	ctg_secret(k, sizeof(k));
	ctg_secret(u, sizeof(u));
	ctg_secret(out, sizeof(out));
	r = sigil_x25519(out, k, u);
	bad |= ctg_expect_int("x25519 (secret u) return", r, 0);
	bad |= ctg_expect_bytes("x25519 (secret u)", out, want, 32);
	return bad;
}

static int case_x25519_public(void)
{
	uint8_t k[32], pk[32], want[32];

	ctg_unhex(k, 32, a_priv);
	ctg_unhex(want, 32, a_pub);
	ctg_secret(k, sizeof(k));
	ctg_secret(pk, sizeof(pk));
	sigil_x25519_public(pk, k);
	return ctg_expect_bytes("x25519_public", pk, want, 32);
}

static int case_sha512(void)
{
	uint8_t m[3] = { 'a', 'b', 'c' }, out[64], want[64];

	ctg_unhex(want, 64, sha_abc);
	ctg_secret(m, sizeof(m));
	ctg_secret(out, sizeof(out));
	sigil_sha512(out, m, sizeof(m));
	return ctg_expect_bytes("sha512(secret \"abc\")", out, want, 64);
}

/* streaming, a secret 300-byte message in uneven chunks, and its first 128
 * bytes in pieces of 32, 32 and 64 (as signing hashes R || A || M: the full
 * block waits for the final, which compresses it with the padding block in
 * one call); then the one shot of the whole message, secret: time may
 * depend on the lengths only; the digests must equal the one-shot digests
 * of the message while public */
static int case_sha512_stream(void)
{
	uint8_t m[300], one[64], one128[64], out[64];
	sigil_sha512_ctx c;
	int bad = 0;

	ctg_fill(m, sizeof(m), 3);
	sigil_sha512(one, m, sizeof(m));
	sigil_sha512(one128, m, 128);
	ctg_public(one, sizeof(one));
	ctg_public(one128, sizeof(one128));
	ctg_secret(m, sizeof(m));
	ctg_secret(out, sizeof(out));
	sigil_sha512_init(&c);
	sigil_sha512_update(&c, m, 1);
	sigil_sha512_update(&c, m + 1, 126);
	sigil_sha512_update(&c, m + 127, 2);
	sigil_sha512_update(&c, m + 129, 171);
	sigil_sha512_final(&c, out);
	bad |= ctg_expect_bytes("sha512 streaming (secret)", out, one, 64);

	ctg_secret(out, sizeof(out));
	sigil_sha512_init(&c);
	sigil_sha512_update(&c, m, 32);
	sigil_sha512_update(&c, m + 32, 32);
	sigil_sha512_update(&c, m + 64, 64);
	sigil_sha512_final(&c, out);
	bad |= ctg_expect_bytes("sha512 streaming, block-aligned (secret)", out, one128, 64);

	ctg_secret(out, sizeof(out));
	sigil_sha512(out, m, sizeof(m));
	bad |= ctg_expect_bytes("sha512 one shot, 300 bytes (secret)", out, one, 64);
	return bad;
}

/* one block function, called directly, with the message AND the chaining
 * state secret: 1 to 5 blocks in one call each (every path: lone block,
 * pairs with and without a next pair), then 700 bytes in uneven chunks
 * through the streaming code; the results must equal the portable
 * function's, computed before anything was marked */
static int sha512_blocks_case(const char *what, sha512_blocks_fn *blocks)
{
	uint8_t m[700], want[64], out[64];
	uint64_t st[8], st_want[8];
	sigil_sha512_ctx c;
	int bad = 0;

	ctg_fill(m, sizeof(m), 5);
	ctg_fill((uint8_t *)st, sizeof(st), 6);
	memcpy(st_want, st, sizeof(st));
	for (size_t nb = 1; nb <= 5; nb++)
		sha512_blocks_generic(st_want, m, nb);
	sigil_sha512_init(&c);
	sha512_update_with(&c, m, sizeof(m), sha512_blocks_generic);
	sha512_final_with(&c, want, sha512_blocks_generic);

	ctg_secret(m, sizeof(m));
	ctg_secret(st, sizeof(st));
	for (size_t nb = 1; nb <= 5; nb++)
		blocks(st, m, nb);
	ctg_public(st, sizeof(st));
	bad |= ctg_expect_bytes(what, (const uint8_t *)st, (const uint8_t *)st_want, sizeof(st));

	ctg_secret(out, sizeof(out));
	sigil_sha512_init(&c);
	sha512_update_with(&c, m, 1, blocks);
	sha512_update_with(&c, m + 1, 300, blocks);
	sha512_update_with(&c, m + 301, 399, blocks);
	sha512_final_with(&c, out, blocks);
	bad |= ctg_expect_bytes(what, out, want, 64);
	return bad;
}

static int case_sha512_blocks_generic(void)
{
	return sha512_blocks_case("sha512 blocks (portable C, secret message and state)", sha512_blocks_generic);
}

/* the AVX2+BMI2 block function (generated assembly, sha512_avx2.S), called
 * directly (whatever the dispatch chose, and whatever CPUID under Valgrind
 * says): run-ctgrind.sh tells whether the host CPU has AVX2, BMI1 and BMI2.
 * Its AVX-512VL twin in the same file, sha512_blocks_avx512, is not run
 * here: Valgrind 3.19 cannot decode AVX-512 (EVEX) instructions, it stops
 * the program with SIGILL (its CPUID hides AVX-512, so the dispatch picks
 * this function under Valgrind). tests/asm/check-sha512-asm.sh checks
 * instead that the two functions are the same instructions and jumps
 * outside their vector message schedule, and that the AVX-512 schedule
 * uses only fixed-time vector instructions on constant addresses. */
static int case_sha512_blocks_avx2(void)
{
	sha512_blocks_fn *avx2 = sha512_blocks_avx2_built();
	const char *host = getenv("SIGIL_CTGRIND_HOST_AVX2");

	if (avx2 == NULL) {
		printf("# this build has no AVX2 SHA-512 (-Dasm=disabled or no amd64): nothing to check\n");
		return 0;
	}
	if (host == NULL) {
		printf("# SIGIL_CTGRIND_HOST_AVX2 unset: run through run-ctgrind.sh\n");
		return 1;
	}
	if (host[0] != '1') {
		printf("# NOTE: the host CPU lacks AVX2/BMI1/BMI2: the AVX2 SHA-512 is NOT checked on this machine\n");
		return 0;
	}
	if (!sha512_avx2_capable())
		printf("# CPUID under Valgrind hides AVX2/BMI1/BMI2; the host has them: run directly\n");
	return sha512_blocks_case("sha512 blocks (AVX2+BMI2 assembly, secret message and state)", avx2);
}

static int case_verify32(void)
{
	uint8_t a[32], b[32];
	int r, bad = 0;

	ctg_fill(a, sizeof(a), 5);
	memcpy(b, a, sizeof(b));
	ctg_secret(a, sizeof(a));
	ctg_secret(b, sizeof(b));
	r = sigil_verify32(a, b);
	bad |= ctg_expect_int("verify32 equal", r, 0);
	b[31] ^= 0x80;
	r = sigil_verify32(a, b);
	bad |= ctg_expect_int("verify32 differ in last byte", r, -1);
	b[31] ^= 0x80;
	b[0] ^= 1;
	r = sigil_verify32(a, b);
	bad |= ctg_expect_int("verify32 differ in first byte", r, -1);
	return bad;
}

static int case_wipe(void)
{
	uint8_t s[77], zero[77] = { 0 };

	ctg_fill(s, sizeof(s), 9);
	ctg_secret(s, sizeof(s));
	sigil_wipe(s, sizeof(s));
	/* no declassify: wiped bytes must be defined zeros by themselves */
	return memcmp(s, zero, sizeof(s)) != 0;
}

/* verify runs in variable time on PUBLIC data: called with public inputs
 * only; Valgrind must still report nothing (nothing it calls was marked) */
static int case_verify_public(void)
{
	uint8_t sk[64], pk[32], sig[64];
	int bad = 0;

	t1_keys(sk, pk);
	ctg_unhex(sig, 64, t1_sig);
	bad |= ctg_expect_int("verify strict (good)", sigil_ed25519_verify(sig, (const uint8_t *)"", 0, pk, SIGIL_ED25519_STRICT), 0);
	bad |= ctg_expect_int("verify zip215 (good)", sigil_ed25519_verify(sig, (const uint8_t *)"", 0, pk, SIGIL_ED25519_ZIP215), 0);
	sig[5] ^= 1;
	bad |= ctg_expect_int("verify strict (bad)", sigil_ed25519_verify(sig, (const uint8_t *)"", 0, pk, SIGIL_ED25519_STRICT), -1);
	bad |= ctg_expect_int("verify zip215 (bad)", sigil_ed25519_verify(sig, (const uint8_t *)"", 0, pk, SIGIL_ED25519_ZIP215), -1);
	return bad;
}

static int case_verify_ctx_ph_public(void)
{
	uint8_t seed[32], pk[32], sk[64], m[16], sig[64], digest[64];
	int bad = 0;

	ctg_unhex(seed, 32, c_seed);
	ctg_unhex(m, 16, c_msg);
	ctg_unhex(sig, 64, c_sig);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(pk, sizeof(pk));
	bad |= ctg_expect_int("ctx_verify", sigil_ed25519ctx_verify(sig, m, sizeof(m), (const uint8_t *)"foo", 3, pk, SIGIL_ED25519_STRICT), 0);
	bad |= ctg_expect_int("ctx_verify wrong ctx", sigil_ed25519ctx_verify(sig, m, sizeof(m), (const uint8_t *)"bar", 3, pk, SIGIL_ED25519_STRICT), -1);

	ctg_unhex(seed, 32, p_seed);
	ctg_unhex(sig, 64, p_sig);
	ctg_unhex(digest, 64, sha_abc);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	ctg_public(pk, sizeof(pk));
	bad |= ctg_expect_int("ph_verify", sigil_ed25519ph_verify(sig, (const uint8_t *)"abc", 3, NULL, 0, pk, SIGIL_ED25519_ZIP215), 0);
	bad |= ctg_expect_int("ph_verify_prehashed", sigil_ed25519ph_verify_prehashed(sig, digest, NULL, 0, pk, SIGIL_ED25519_STRICT), 0);
	return bad;
}

static int case_verify_batch_public(void)
{
	enum { N = 4 };
	uint8_t seed[N][32], pk[N][32], sk[N][64], m[N][20], sig[N][64];
	sigil_ed25519_item items[N];
	int valid[N], r, bad = 0;

	for (int i = 0; i < N; i++) {
		ctg_fill(seed[i], 32, 100 + (uint64_t)i);
		ctg_fill(m[i], 20, 200 + (uint64_t)i);
		sigil_ed25519_keypair_from_seed(pk[i], sk[i], seed[i]);
		sigil_ed25519_sign(sig[i], m[i], 20, sk[i]);
		ctg_public(pk[i], 32);
		ctg_public(sig[i], 64);
		items[i] = (sigil_ed25519_item){ pk[i], sig[i], m[i], 20 };
	}
	r = sigil_ed25519_verify_batch(valid, items, N, SIGIL_ED25519_ZIP215);
	bad |= ctg_expect_int("verify_batch all good", r, 0);
	for (int i = 0; i < N; i++)
		bad |= ctg_expect_int("verify_batch valid[i]", valid[i], 1);
	sig[2][40] ^= 4;
	r = sigil_ed25519_verify_batch(valid, items, N, SIGIL_ED25519_ZIP215);
	bad |= ctg_expect_int("verify_batch one bad", r, -1);
	bad |= ctg_expect_int("verify_batch valid[2]", valid[2], 0);
	bad |= ctg_expect_int("verify_batch valid[3]", valid[3], 1);
	return bad;
}

/* ---- internal functions, called directly (crypto/fe.h, ge.h, sc.h) ---- */

/* values computed with Python integers (a*b+c mod L etc.), inputs random */
static const char *const sc_in64 = "fe63c0c224ed9e23ad0785954f0668f7f58d9a0ec33d11554477c6e044eb6659"
				   "d942b0fc8429a84c0e802017b08cc4b93086f1a9013fc9d6dc134dbc6d543ca8";
static const char *const sc_in64_mod_l = "da22973a081417d4f5dcfad4f2b94c11a3cbec945ad72653b15c72042c618b0f";
static const char *const sc_a = "055c2ddf236096a316a4dbcdfc70e9acadad5e2be1c4e24f1de75fe256326300";
static const char *const sc_b = "188199a99f04c6348a8e4219980e6ce6d9c271be65242da6cdbaf9d940c8193c";
static const char *const sc_c = "ab3ca7577bb4a6f57d5c1ba1f537f1e7e24bbcfde2a1a86011bad243c134f012";
static const char *const sc_abc = "1075a1253a5918b6efd3444f93635ee7de81b07091f3f18a642990ab95abc809";
static const char *const sc_ab = "520cf02ad9078418481421517c254c14fc35f472ae51492a536fbd67d476d806";
static const char *const sc_apb = "5661e571743b25d01d5c37fef891b8548770d0e946e90ff6eaa159bc97fa7c0c";
static const char *const sc_nega = "e877c87df6027cb4bff81bd5e188f5675252a1d41e3b1db0e218a01da9cd9c0f";
static const char *const sc_lm1 = "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010";

static int case_sc_reduce(void)
{
	uint8_t in[64], out[32], want[32];

	ctg_unhex(in, 64, sc_in64);
	ctg_unhex(want, 32, sc_in64_mod_l);
	ctg_secret(in, sizeof(in));
	ctg_secret(out, sizeof(out));
	sc_reduce(out, in);
	return ctg_expect_bytes("sc_reduce", out, want, 32);
}

static int case_sc_muladd(void)
{
	uint8_t a[32], b[32], c[32], out[32], want[32];

	ctg_unhex(a, 32, sc_a);
	ctg_unhex(b, 32, sc_b);
	ctg_unhex(c, 32, sc_c);
	ctg_unhex(want, 32, sc_abc);
	ctg_secret(a, 32);
	ctg_secret(b, 32);
	ctg_secret(c, 32);
	ctg_secret(out, 32);
	sc_muladd(out, a, b, c);
	return ctg_expect_bytes("sc_muladd", out, want, 32);
}

static int case_sc_mul_add_neg(void)
{
	uint8_t a[32], b[32], out[32], want[32];
	int bad = 0;

	ctg_unhex(a, 32, sc_a);
	ctg_unhex(b, 32, sc_b);
	ctg_secret(a, 32);
	ctg_secret(b, 32);
	ctg_secret(out, 32);
	sc_mul(out, a, b);
	ctg_unhex(want, 32, sc_ab);
	bad |= ctg_expect_bytes("sc_mul", out, want, 32);
	ctg_secret(out, 32);
	sc_add(out, a, b);
	ctg_unhex(want, 32, sc_apb);
	bad |= ctg_expect_bytes("sc_add", out, want, 32);
	ctg_secret(out, 32);
	sc_neg(out, a);
	ctg_unhex(want, 32, sc_nega);
	bad |= ctg_expect_bytes("sc_neg", out, want, 32);
	return bad;
}

static int case_sc_is_canonical(void)
{
	uint8_t s[32];
	int bad = 0;

	ctg_unhex(s, 32, sc_lm1); /* L - 1 */
	ctg_secret(s, 32);
	bad |= ctg_expect_int("sc_is_canonical(L-1)", sc_is_canonical(s), 1);
	ctg_unhex(s, 32, sc_lm1);
	s[0]++; /* L */
	ctg_secret(s, 32);
	bad |= ctg_expect_int("sc_is_canonical(L)", sc_is_canonical(s), 0);
	return bad;
}

/* the expected value of a field element, as canonical bytes */
static int expect_fe(const char *what, const fe *f, const fe *want)
{
	uint8_t got[32], w[32];
	fe t = *f;

	ctg_public(&t, sizeof(t));
	fe_tobytes(got, &t);
	fe_tobytes(w, want);
	return ctg_expect_bytes(what, got, w, 32);
}

static void fe_from_seed(fe *f, uint64_t seed)
{
	uint8_t s[32];

	ctg_fill(s, 32, seed);
	fe_frombytes(f, s);
}

static int case_fe_cmov_cswap(void)
{
	fe f0, g0, f, g;
	uint64_t bit;
	int bad = 0;

	fe_from_seed(&f0, 21);
	fe_from_seed(&g0, 22);
	for (uint64_t b = 0; b <= 1; b++) {
		f = f0;
		g = g0;
		bit = b;
		ctg_secret(&f, sizeof(f));
		ctg_secret(&g, sizeof(g));
		ctg_secret(&bit, sizeof(bit));
		fe_cmov(&f, &g, bit);
		bad |= expect_fe("fe_cmov", &f, b ? &g0 : &f0);

		f = f0;
		g = g0;
		ctg_secret(&f, sizeof(f));
		ctg_secret(&g, sizeof(g));
		ctg_secret(&bit, sizeof(bit));
		fe_cswap(&f, &g, bit);
		bad |= expect_fe("fe_cswap f", &f, b ? &g0 : &f0);
		bad |= expect_fe("fe_cswap g", &g, b ? &f0 : &g0);

		f = f0;
		ctg_secret(&f, sizeof(f));
		ctg_secret(&bit, sizeof(bit));
		fe_cneg(&f, bit);
		{
			fe_loose nl;
			fe n;

			fe_neg(&nl, &f0);
			fe_carry(&n, &nl);
			bad |= expect_fe("fe_cneg", &f, b ? &n : &f0);
		}
	}
	return bad;
}

static int case_fe_ops(void)
{
	uint8_t s[32], out[32];
	fe f, g, h, one;
	int r, bad = 0;

	ctg_fill(s, 32, 31);
	s[31] |= 0x80; /* bit 255 set: ignored */
	ctg_secret(s, 32);
	ctg_secret(&f, sizeof(f));
	fe_frombytes(&f, s);
	ctg_secret(&g, sizeof(g));
	fe_invert_safegcd(&g, &f);
	fe_mul_ttt(&h, &f, &g);
	fe_1(&one);
	bad |= expect_fe("fe_invert_safegcd: f * f^-1 = 1", &h, &one);
	ctg_secret(out, 32);
	fe_tobytes(out, &f);
	s[31] &= 0x7f;
	ctg_public(s, 32);
	/* s (< 2^255) may be >= p only with negligible probability; it is not */
	bad |= ctg_expect_bytes("fe_frombytes/fe_tobytes", out, s, 32);
	r = fe_iszero(&f);
	bad |= ctg_expect_int("fe_iszero", r, 0);
	r = fe_equal(&f, &f);
	bad |= ctg_expect_int("fe_equal", r, 1);
	r = fe_isnegative(&f);
	bad |= ctg_expect_int("fe_isnegative", r, s[0] & 1);
	/* sqrt_ratio(f^2, 1) = |f|, result 1 */
	{
		fe sq, root, abs;

		fe_sq_tt(&sq, &f);
		r = fe_sqrt_ratio(&root, &sq, &one);
		bad |= ctg_expect_int("fe_sqrt_ratio(f^2, 1)", r, 1);
		fe_abs(&abs, &f);
		ctg_public(&abs, sizeof(abs));
		bad |= expect_fe("fe_sqrt_ratio root = |f|", &root, &abs);
	}
	return bad;
}

/* the fixed-base table lookup, for every digit b in [-8, 8] */
static int case_ge_precomp_select(void)
{
	int bad = 0;
	ge_precomp want[17];

	for (int b = -8; b <= 8; b++) {
		signed char sb = (signed char)b;

		ge_precomp_select(&want[b + 8], 0, sb);
	}
	ctg_public(want, sizeof(want));
	for (int pos = 0; pos < 32; pos += 31) {
		for (int b = -8; b <= 8; b++) {
			ge_precomp t, w;
			signed char sb = (signed char)b;
			uint8_t g[96], e[96];

			ge_precomp_select(&w, pos, sb);
			ctg_public(&w, sizeof(w));
			ctg_secret(&sb, sizeof(sb));
			ctg_secret(&t, sizeof(t));
			ge_precomp_select(&t, pos, sb);
			ctg_public(&t, sizeof(t));
			fe_tobytes(g, &t.yplusx);
			fe_tobytes(g + 32, &t.yminusx);
			fe_tobytes(g + 64, &t.xy2d);
			fe_tobytes(e, &w.yplusx);
			fe_tobytes(e + 32, &w.yminusx);
			fe_tobytes(e + 64, &w.xy2d);
			bad |= ctg_expect_bytes("ge_precomp_select (secret digit)", g, e, 96);
		}
	}
	/* digits b and -b differ (negation), and 0 is the identity */
	{
		ge_precomp id;
		uint8_t a[32], z[32];

		ge_precomp_0(&id);
		fe_tobytes(a, &want[8].xy2d);
		fe_tobytes(z, &id.xy2d);
		bad |= ctg_expect_bytes("ge_precomp_select(0) = identity", a, z, 32);
		fe_tobytes(a, &want[8 + 1].yplusx);
		fe_tobytes(z, &want[8 - 1].yminusx);
		bad |= ctg_expect_bytes("select(-1) = -select(1)", a, z, 32);
	}
	return bad;
}

static int case_ge_scalarmult_base(void)
{
	uint8_t seed[32], want[32], enc[32];
	sigil_ed25519_expanded ek;
	ge_p3 h;

	ctg_unhex(seed, 32, t1_seed);
	ctg_unhex(want, 32, t1_pk);
	sigil_ed25519_expand(&ek, seed);
	ctg_secret(ek.scalar, 32);
	ctg_secret(&h, sizeof(h));
	ge_scalarmult_base(&h, ek.scalar);
	ctg_secret(enc, 32);
	ge_p3_tobytes(enc, &h);
	sigil_wipe(&ek, sizeof(ek));
	return ctg_expect_bytes("ge_scalarmult_base(a) = A (RFC 8032 TEST 1)", enc, want, 32);
}

/* Decoding runs on public data, and its 0/-1 result is public by contract
 * (ge.h), so ge_frombytes itself is run on a public encoding; the checks
 * that return a mask/int and that ge.h declares constant time are run on a
 * secret one. */
static int case_ge_checks(void)
{
	uint8_t pk[32], enc[32];
	ge_p3 h;
	int r, bad = 0;

	ctg_unhex(pk, 32, t1_pk);
	r = ge_frombytes(&h, pk);
	bad |= ctg_expect_int("ge_frombytes", r, 0);
	ge_p3_tobytes(enc, &h);
	bad |= ctg_expect_bytes("ge_frombytes/ge_p3_tobytes", enc, pk, 32);
	ctg_secret(pk, 32);
	ctg_secret(&h, sizeof(h));
	bad |= ctg_expect_int("ge_is_canonical", ge_is_canonical(pk), 1);
	bad |= ctg_expect_int("ge_has_small_order", ge_has_small_order(pk), 0);
	bad |= ctg_expect_int("ge_is_small_order", ge_is_small_order(&h), 0);
	return bad;
}

/* ---- the two X25519 ladders, called directly ----
 * sigil_x25519 runs one of them, chosen by CPUID: under Valgrind (which
 * hides ADX) always ladder51. These cases check each ladder whatever the
 * dispatch picks: ladder51 (fe.h), ladder64 with the C twins, and ladder64
 * with the amd64 assembly forced (ctgrind-asm-*.c). */
const fe64_ops *ctg_asm_ops(void);

static int x25519_ladder_case(const char *what, const fe64_ops *ops, int use51)
{
	uint8_t k[32], u[32], out[32], want[32];
	int bad = 0;

	ctg_unhex(k, 32, x_scalar);
	ctg_unhex(u, 32, x_u);
	ctg_unhex(want, 32, x_out);
	ctg_secret(k, sizeof(k));
	ctg_secret(out, sizeof(out));
	if (use51)
		x25519_ladder51(out, k, u);
	else
		x25519_ladder64(out, k, u, ops);
	if (!ctg_still_secret(out, sizeof(out))) {
		printf("# %s declassified the shared secret\n", what);
		bad = 1;
	}
	bad |= ctg_expect_bytes(what, out, want, 32);
	return bad;
}

static int case_x25519_ladder51(void)
{
	return x25519_ladder_case("x25519_ladder51", NULL, 1);
}

static int case_x25519_ladder64_generic(void)
{
	return x25519_ladder_case("x25519_ladder64 (C twins)", &fe64_ops_generic, 0);
}

static int case_x25519_ladder64_asm(void)
{
	const fe64_ops *ops = ctg_asm_ops();
	const char *host = getenv("SIGIL_CTGRIND_HOST_ADX");

	if (ops == NULL) {
		printf("# this build has no assembly (-Dasm=disabled or no amd64): nothing to check\n");
		return 0;
	}
	if (host == NULL) {
		printf("# SIGIL_CTGRIND_HOST_ADX unset: run through run-ctgrind.sh\n");
		return 1;
	}
	if (host[0] != '1') {
		printf("# NOTE: the host CPU lacks BMI2/ADX: the assembly ladder is NOT checked on this machine\n");
		return 0;
	}
	return x25519_ladder_case("x25519_ladder64 (amd64 MULX/ADX assembly, forced)", ops, 0);
}

#define RUN(f, expect) { #f, f, expect }

static const ctg_case cases[] = {
	RUN(case_keypair, "constant time (seed secret)"),
	RUN(case_expand, "constant time (seed secret)"),
	RUN(case_sign, "constant time (sk secret)"),
	RUN(case_sign_expanded, "constant time (expanded key secret)"),
	RUN(case_sign_expanded_many, "constant time (ten expanded keys secret)"),
	RUN(case_ctx_sign, "constant time (sk secret); ctxlen 256 refused"),
	RUN(case_ctx_sign_expanded, "constant time (expanded key secret)"),
	RUN(case_ph_sign, "constant time (sk secret)"),
	RUN(case_ph_sign_expanded, "constant time (expanded key secret)"),
	RUN(case_ph_sign_prehashed, "constant time (sk secret)"),
	RUN(case_ph_sign_prehashed_expanded, "constant time (expanded key secret)"),
	RUN(case_sign_long_message, "constant time (sk secret; time depends on mlen)"),
	RUN(case_x25519, "constant time (scalar secret)"),
	RUN(case_x25519_small_order, "constant time (scalar secret; zero check branch-free)"),
	RUN(case_x25519_secret_u, "constant time (scalar and u secret)"),
	RUN(case_x25519_ladder51, "constant time (scalar secret; the radix-2^51 ladder)"),
	RUN(case_x25519_ladder64_generic, "constant time (scalar secret; the fe64 ladder, C twins)"),
	RUN(case_x25519_ladder64_asm, "constant time (scalar secret; the fe64 ladder, amd64 assembly)"),
	RUN(case_x25519_public, "constant time (scalar secret)"),
	RUN(case_sha512, "constant time (message secret; time depends on mlen)"),
	RUN(case_sha512_stream, "constant time (message secret; time depends on lengths)"),
	RUN(case_sha512_blocks_generic, "constant time (message and state secret; portable block function)"),
	RUN(case_sha512_blocks_avx2, "constant time (message and state secret; AVX2+BMI2 assembly block function)"),
	RUN(case_verify32, "constant time (both inputs secret)"),
	RUN(case_wipe, "constant time (buffer secret)"),
	RUN(case_verify_public, "clean on public data (variable time allowed)"),
	RUN(case_verify_ctx_ph_public, "clean on public data (variable time allowed)"),
	RUN(case_verify_batch_public, "clean on public data (variable time allowed)"),
	RUN(case_sc_reduce, "constant time (512-bit input secret: the nonce hash)"),
	RUN(case_sc_muladd, "constant time (a, b, c secret: S = r + k a)"),
	RUN(case_sc_mul_add_neg, "constant time (inputs secret)"),
	RUN(case_sc_is_canonical, "constant time (input secret)"),
	RUN(case_fe_cmov_cswap, "constant time (elements and condition bit secret)"),
	RUN(case_fe_ops, "constant time (element secret)"),
	RUN(case_ge_precomp_select, "constant time (table digit secret)"),
	RUN(case_ge_scalarmult_base, "constant time (scalar secret)"),
	RUN(case_ge_checks, "constant time (ge.h claim: canonical/small-order checks on a secret encoding)"),
};

int main(int argc, char **argv)
{
	return ctg_run("ctgrind", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
