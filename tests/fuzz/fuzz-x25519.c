/* SPDX-License-Identifier: MIT */
/*
 * fuzz-x25519.c - X25519 against libsodium
 *
 * Input: 32-byte scalar, 32-byte u (zero-padded when short); any further
 * bytes are a second u for a Diffie-Hellman round trip.
 *
 * Oracles: sigil_x25519 returns what crypto_scalarmult returns (-1 for an
 * all-zero result) and, on success, the same 32 bytes; sigil_x25519_public
 * equals crypto_scalarmult_base; out may alias the scalar or u; and
 * x(a, x(b, 9)) = x(b, x(a, 9)).
 */
#include <sodium.h>
#include <string.h>

#include <sigil/crypto.h>

#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	FUZZ_CHECK(sodium_init() >= 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FuzzIn in = { data, size };
	uint8_t k[32], u[32], b[32], out[32], ref[32], buf[32];
	int r, rr;

	fuzz_bytes(&in, k, 32);
	fuzz_bytes(&in, u, 32);
	fuzz_bytes(&in, b, 32);

	r = sigil_x25519(out, k, u);
	rr = crypto_scalarmult(ref, k, u) == 0 ? 0 : -1;
	FUZZ_CHECK(r == 0 || r == -1);
	FUZZ_CHECK(r == rr);
	if (r == 0)
		FUZZ_CHECK(memcmp(out, ref, 32) == 0);
	else
		FUZZ_CHECK(sodium_is_zero(out, 32));

	/* aliasing: out = u, out = scalar */
	memcpy(buf, u, 32);
	FUZZ_CHECK(sigil_x25519(buf, k, buf) == r);
	FUZZ_CHECK(memcmp(buf, out, 32) == 0);
	memcpy(buf, k, 32);
	FUZZ_CHECK(sigil_x25519(buf, buf, u) == r);
	FUZZ_CHECK(memcmp(buf, out, 32) == 0);

	/* public keys and a shared secret */
	{
		uint8_t pa[32], pb[32], sa[32], sb[32];

		sigil_x25519_public(pa, k);
		FUZZ_CHECK(crypto_scalarmult_base(ref, k) == 0);
		FUZZ_CHECK(memcmp(pa, ref, 32) == 0);
		sigil_x25519_public(pb, b);
		FUZZ_CHECK(sigil_x25519(sa, k, pb) == 0);
		FUZZ_CHECK(sigil_x25519(sb, b, pa) == 0);
		FUZZ_CHECK(memcmp(sa, sb, 32) == 0);
	}
	return 0;
}
