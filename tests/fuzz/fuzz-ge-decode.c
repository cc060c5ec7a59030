/* SPDX-License-Identifier: MIT */
/*
 * fuzz-ge-decode.c - point decoding against two other paths
 *
 * Input: any bytes, taken 32 at a time (the last chunk zero-padded).
 *
 * Path 1, a reference written here on OpenSSL's BIGNUM (RFC 8032 section
 * 5.1.3 done with generic modular arithmetic): y = s mod 2^255, reduced
 * mod p; x^2 = (y^2 - 1) / (d y^2 + 1); no square root: invalid; x = 0
 * with the sign bit set: invalid (ZIP 215: valid, x = 0); else the root of
 * the right parity. ge_frombytes/ge_frombytes_zip215 must agree on
 * validity and, re-encoded, give the canonical encoding of (x, y mod p).
 * A failed decode must leave its output untouched.
 *
 * Path 2, libsodium: crypto_core_ed25519_is_valid_point(s) must equal
 * "canonical, decodes, not small order, [L]P = identity" computed with
 * ge_is_canonical, ge_frombytes, ge_has_small_order and
 * ge_double_scalarmult_vartime.
 *
 * Also: ge_has_small_order(s) (a blocklist on the encoding) equals
 * "decodes under ZIP 215 and [8]P = identity" (ge_is_small_order), and
 * ge_is_canonical(s) equals y < p.
 */
#include <openssl/bn.h>
#include <sodium.h>
#include <string.h>

#include "ref51/ge.h"

#include "fuzz.h"

static BIGNUM *P, *D;
static BN_CTX *bctx;

static const uint8_t L_le[32] = {
	0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x10,
};

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	BIGNUM *num, *den;

	FUZZ_CHECK(sodium_init() >= 0);
	bctx = BN_CTX_new();
	P = BN_new();
	D = BN_new();
	num = BN_new();
	den = BN_new();
	FUZZ_CHECK(bctx && P && D && num && den);
	/* p = 2^255 - 19; d = -121665 / 121666 mod p (RFC 8032 section 5.1) */
	FUZZ_CHECK(BN_set_bit(P, 255) && BN_sub_word(P, 19));
	FUZZ_CHECK(BN_set_word(num, 121665) && BN_sub(num, P, num));
	FUZZ_CHECK(BN_set_word(den, 121666) && BN_mod_inverse(den, den, P, bctx));
	FUZZ_CHECK(BN_mod_mul(D, num, den, P, bctx));
	BN_free(num);
	BN_free(den);
	return 0;
}

/* little-endian 32 bytes <-> BIGNUM */
static void bn_from_le(BIGNUM *r, const uint8_t s[32])
{
	FUZZ_CHECK(BN_lebin2bn(s, 32, r));
}

/* The reference decoder. Return: 0 valid (enc = canonical re-encoding),
 * -1 invalid. zip215: accept x = 0 with the sign bit. */
static int ref_decode(uint8_t enc[32], const uint8_t s[32], int zip215, int *canonicalp)
{
	uint8_t t[32];
	BIGNUM *y, *y2, *u, *v, *x2, *x;
	int sign = s[31] >> 7, r = -1;

	BN_CTX_start(bctx);
	y = BN_CTX_get(bctx);
	y2 = BN_CTX_get(bctx);
	u = BN_CTX_get(bctx);
	v = BN_CTX_get(bctx);
	x2 = BN_CTX_get(bctx);
	x = BN_CTX_get(bctx);
	FUZZ_CHECK(x != NULL);
	memcpy(t, s, 32);
	t[31] &= 0x7f;
	bn_from_le(y, t);
	*canonicalp = BN_cmp(y, P) < 0;
	FUZZ_CHECK(BN_nnmod(y, y, P, bctx));
	FUZZ_CHECK(BN_mod_sqr(y2, y, P, bctx));
	FUZZ_CHECK(BN_mod_sub(u, y2, BN_value_one(), P, bctx));
	FUZZ_CHECK(BN_mod_mul(v, D, y2, P, bctx));
	FUZZ_CHECK(BN_mod_add(v, v, BN_value_one(), P, bctx));
	FUZZ_CHECK(BN_mod_inverse(v, v, P, bctx)); /* d y^2 + 1 != 0: d is not a square */
	FUZZ_CHECK(BN_mod_mul(x2, u, v, P, bctx));
	if (BN_is_zero(x2)) {
		BN_zero(x);
		if (sign && !zip215)
			goto out;
	} else {
		if (BN_kronecker(x2, P, bctx) != 1)
			goto out;
		FUZZ_CHECK(BN_mod_sqrt(x, x2, P, bctx));
		if (BN_is_odd(x) != sign)
			FUZZ_CHECK(BN_sub(x, P, x));
	}
	FUZZ_CHECK(BN_bn2lebinpad(y, enc, 32) == 32);
	enc[31] |= (uint8_t)(BN_is_odd(x) << 7);
	r = 0;
out:
	BN_CTX_end(bctx);
	return r;
}

static void one(const uint8_t s[32])
{
	uint8_t ref[32], ref_zip[32], enc[32];
	int canonical, rs, rz, ss, sz;
	ge_p3 h, hz, marker;
	ge_p2 lp;
	uint8_t zero[32] = { 0 };

	rs = ref_decode(ref, s, 0, &canonical);
	rz = ref_decode(ref_zip, s, 1, &canonical);
	memset(&marker, 0xa5, sizeof(marker));
	h = marker;
	hz = marker;
	ss = ge_frombytes(&h, s);
	sz = ge_frombytes_zip215(&hz, s);
	FUZZ_CHECK(ss == rs);
	FUZZ_CHECK(sz == rz);
	FUZZ_CHECK(ge_is_canonical(s) == canonical);
	if (ss == 0) {
		ge_p3_tobytes(enc, &h);
		FUZZ_CHECK(memcmp(enc, ref, 32) == 0);
	} else {
		FUZZ_CHECK(memcmp(&h, &marker, sizeof(h)) == 0);
	}
	if (sz == 0) {
		ge_p3 again;

		ge_p3_tobytes(enc, &hz);
		FUZZ_CHECK(memcmp(enc, ref_zip, 32) == 0);
		/* a canonical re-encoding decodes to the same point */
		FUZZ_CHECK(ge_frombytes_zip215(&again, enc) == 0);
		FUZZ_CHECK(ge_p3_equal(&again, &hz) == 1);
		FUZZ_CHECK(ge_has_small_order(s) == ge_is_small_order(&hz));
	} else {
		FUZZ_CHECK(memcmp(&hz, &marker, sizeof(hz)) == 0);
		FUZZ_CHECK(ge_has_small_order(s) == 0);
	}

	/* libsodium's full public-key check */
	{
		int ours = 0;

		if (ss == 0 && canonical && !ge_has_small_order(s)) {
			/* [L]P: identity iff P is in the prime-order subgroup */
			ge_double_scalarmult_vartime(&lp, L_le, &h, zero);
			ge_tobytes(enc, &lp);
			ours = enc[0] == 1 && memcmp(enc + 1, zero, 31) == 0;
		}
		FUZZ_CHECK(crypto_core_ed25519_is_valid_point(s) == ours);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	for (size_t off = 0; off < size || off == 0; off += 32) {
		uint8_t s[32] = { 0 };
		size_t n = size - off < 32 ? size - off : 32;

		if (size)
			memcpy(s, data + off, n);
		one(s);
		if (size == 0)
			break;
	}
	return 0;
}
