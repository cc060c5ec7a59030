/* SPDX-License-Identifier: MIT */
/*
 * fuzz-ed25519-verify.c - Ed25519 verification against libsodium
 *
 * Input: flags (1 byte), 32 bytes A (a public key, or a seed when the
 * input asks for a real signature), 64 bytes sig, 2 tweak bytes, message.
 *
 * Oracles:
 * - STRICT accepts exactly what crypto_sign_verify_detached accepts
 *   (DESIGN.md), for pure Ed25519 and for Ed25519ph with an empty context
 *   (crypto_sign_ed25519ph_final_verify);
 * - STRICT accepting implies ZIP215 accepting;
 * - batch verification (ZIP215) gives each item the single answer;
 * - a signature made from a seed equals libsodium's, and verifies under
 *   both policies; Ed25519ctx/ph signatures of sigil verify.
 * Tweaks make the interesting inputs reachable: S + L, small-order R or A,
 * non-canonical encodings of R or A, one flipped bit.
 */
#include <sodium.h>
#include <string.h>

#include <sigil/crypto.h>

#include "fuzz.h"

/* L = 2^252 + 27742317777372353535851937790883648493, little-endian (RFC 8032) */
static const uint8_t L[32] = {
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
};

/* Encodings of points of small order: libsodium's blocklist in
 * ed25519_ref10.c (ge25519_has_small_order): 0, 1, the two order-8 y, p-1,
 * p, p+1. LLVMFuzzerInitialize checks with libsodium that each one is
 * refused as a public key, so a typo cannot pass unnoticed. */
static uint8_t small_order[7][32] = {
	{ 0 },
	{ 1 },
	{ 0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
	  0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05 },
	{ 0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
	  0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a },
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FUZZ_CHECK(sodium_init() >= 0);
	/* p-1, p, p+1: ec/ed/ee ff..ff 7f */
	for (int i = 4; i < 7; i++) {
		memset(small_order[i], 0xff, 32);
		small_order[i][0] = (uint8_t)(0xec + (i - 4));
		small_order[i][31] = 0x7f;
	}
	for (int i = 0; i < 7; i++) {
		uint8_t sig[64] = { 0 };

		/* libsodium refuses a small-order A before anything else */
		FUZZ_CHECK(crypto_sign_verify_detached(sig, NULL, 0, small_order[i]) != 0);
		FUZZ_CHECK(sigil_ed25519_verify(sig, NULL, 0, small_order[i], SIGIL_ED25519_STRICT) != 0);
	}
	return 0;
}

/* s += L (little-endian); 0, or -1 if the sum does not fit in 256 bits */
static int add_l(uint8_t s[32])
{
	uint8_t t[32];
	unsigned c = 0;

	for (int i = 0; i < 32; i++) {
		c += (unsigned)s[i] + L[i];
		t[i] = (uint8_t)c;
		c >>= 8;
	}
	if (c)
		return -1;
	memcpy(s, t, 32);
	return 0;
}

/* a non-canonical encoding y + p of a y < 19, with the given sign bit */
static void noncanonical(uint8_t e[32], uint8_t y, int sign)
{
	memset(e, 0xff, 32);
	e[0] = (uint8_t)(0xed + y % 19);
	e[31] = (uint8_t)(0x7f | (sign ? 0x80 : 0));
}

static int verify_ph_sodium(const uint8_t sig[64], const uint8_t *m, size_t mlen, const uint8_t pk[32])
{
	crypto_sign_ed25519ph_state st;

	crypto_sign_ed25519ph_init(&st);
	crypto_sign_ed25519ph_update(&st, m, mlen);
	return crypto_sign_ed25519ph_final_verify(&st, sig, pk) == 0 ? 0 : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FuzzIn in = { data, size };
	uint8_t flags = fuzz_u8(&in), a[32], sig[64], t0, t1, pk[32];
	const uint8_t *m;
	size_t mlen;
	int constructed = flags & 1, tweak = (flags >> 1) & 7;
	int strict, zip, sodium;

	fuzz_bytes(&in, a, 32);
	fuzz_bytes(&in, sig, 64);
	t0 = fuzz_u8(&in);
	t1 = fuzz_u8(&in);
	m = in.n ? in.p : (const uint8_t *)"";
	mlen = in.n;
	memcpy(pk, a, 32);

	if (constructed) {
		uint8_t sk[64], spk[32], ssk[64], ssig[64];

		crypto_sign_seed_keypair(pk, sk, a);
		sigil_ed25519_keypair_from_seed(spk, ssk, a);
		FUZZ_CHECK(memcmp(pk, spk, 32) == 0);
		FUZZ_CHECK(memcmp(sk, ssk, 64) == 0);
		crypto_sign_detached(sig, NULL, m, mlen, sk);
		sigil_ed25519_sign(ssig, m, mlen, ssk);
		FUZZ_CHECK(memcmp(sig, ssig, 64) == 0);
		if (tweak == 0) {
			uint8_t ctx[255], xsig[64];
			size_t ctxlen = t0;
			crypto_sign_ed25519ph_state st;

			for (size_t i = 0; i < ctxlen; i++)
				ctx[i] = (uint8_t)(t1 + i);
			FUZZ_CHECK(sigil_ed25519_verify(sig, m, mlen, pk, SIGIL_ED25519_STRICT) == 0);
			FUZZ_CHECK(sigil_ed25519_verify(sig, m, mlen, pk, SIGIL_ED25519_ZIP215) == 0);
			/* ctx needs 1..255 bytes */
			FUZZ_CHECK(sigil_ed25519ctx_sign(xsig, m, mlen, ctx, ctxlen, ssk) == (ctxlen ? 0 : -1));
			if (ctxlen) {
				FUZZ_CHECK(sigil_ed25519ctx_verify(xsig, m, mlen, ctx, ctxlen, pk, SIGIL_ED25519_STRICT) == 0);
				FUZZ_CHECK(sigil_ed25519ctx_verify(xsig, m, mlen, ctx, ctxlen - 1, pk, SIGIL_ED25519_STRICT) == -1);
			}
			FUZZ_CHECK(sigil_ed25519ph_sign(xsig, m, mlen, ctx, ctxlen, ssk) == 0);
			FUZZ_CHECK(sigil_ed25519ph_verify(xsig, m, mlen, ctx, ctxlen, pk, SIGIL_ED25519_ZIP215) == 0);
			if (ctxlen == 0) {
				crypto_sign_ed25519ph_init(&st);
				crypto_sign_ed25519ph_update(&st, m, mlen);
				crypto_sign_ed25519ph_final_create(&st, ssig, NULL, sk);
				FUZZ_CHECK(memcmp(xsig, ssig, 64) == 0);
			}
		}
		sodium_memzero(sk, sizeof(sk));
		sigil_wipe(ssk, sizeof(ssk));
	}

	switch (tweak) {
	case 1:
		sig[t0 % 64] ^= (uint8_t)(t1 | 1);
		break;
	case 2:
		(void)add_l(sig + 32);
		break;
	case 3:
		memcpy(sig, small_order[t0 % 7], 32);
		sig[31] ^= t1 & 0x80;
		break;
	case 4:
		memcpy(pk, small_order[t0 % 7], 32);
		pk[31] ^= t1 & 0x80;
		break;
	case 5:
		noncanonical(sig, t0, t1 & 1);
		break;
	case 6:
		noncanonical(pk, t0, t1 & 1);
		break;
	case 7:
		pk[31] ^= 0x80; /* the other x */
		break;
	default:
		break;
	}

	strict = sigil_ed25519_verify(sig, m, mlen, pk, SIGIL_ED25519_STRICT);
	zip = sigil_ed25519_verify(sig, m, mlen, pk, SIGIL_ED25519_ZIP215);
	sodium = crypto_sign_verify_detached(sig, m, mlen, pk) == 0 ? 0 : -1;
	FUZZ_CHECK(strict == 0 || strict == -1);
	FUZZ_CHECK(zip == 0 || zip == -1);
	FUZZ_CHECK(strict == sodium);
	if (strict == 0)
		FUZZ_CHECK(zip == 0);

	/* Ed25519ph, empty context, against libsodium */
	FUZZ_CHECK(sigil_ed25519ph_verify(sig, m, mlen, NULL, 0, pk, SIGIL_ED25519_STRICT) ==
	           verify_ph_sodium(sig, m, mlen, pk));

	/* batch: this item between two others; each answer is the single one */
	{
		uint8_t sig2[64], pk2[32];
		sigil_ed25519_item items[3] = {
			{ pk, sig, m, mlen },
			{ pk2, sig2, m, mlen },
			{ pk, sig, m, mlen / 2 },
		};
		int valid[3] = { -7, -7, -7 }, single[3], r;

		memcpy(pk2, pk, 32);
		memcpy(sig2, sig, 64);
		sig2[t1 % 64] ^= 1;
		r = sigil_ed25519_verify_batch(valid, items, 3, SIGIL_ED25519_ZIP215);
		for (int i = 0; i < 3; i++) {
			single[i] = sigil_ed25519_verify(items[i].sig, items[i].m, items[i].mlen, items[i].pk,
			                                 SIGIL_ED25519_ZIP215) == 0;
			FUZZ_CHECK(valid[i] == single[i]);
		}
		FUZZ_CHECK(r == ((single[0] && single[1] && single[2]) ? 0 : -1));
	}
	return 0;
}
