/* SPDX-License-Identifier: MIT */
/*
 * x25519.c - X25519 (RFC 7748 section 5): the Montgomery ladder over
 * GF(2^255 - 19), and the public key through the Edwards fixed base.
 *
 * The ladder and the fixed base are the backend's (backend.h: cpu.c's
 * choice), the public key's u included; the clamping and the all-zero
 * check are here.
 *
 * Timing: constant time in the scalar (the ladder walks all 255 bits; a bit
 * only drives fe_cswap masks) and in u. The all-zero check ORs every output
 * byte and computes the return value without a branch. The shared secret is
 * not declassified; the public key of sigil_x25519_public is.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "ct.h"

/* The ladder of the backend cpu.c chose. */
SIGIL_EXPORT int sigil_x25519(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32])
{
	const backend *be = backend_get();
	be->x25519(be, out, scalar, u);

	/* The shared secret stays secret. Only whether it is all zero (a
	 * small-order u, RFC 7748 section 6.1) becomes public: every byte is
	 * ORed, then the one-bit answer is declassified for the return value. */
	uint8_t acc = 0;
	for (int i = 0; i < 32; i++)
		acc |= out[i];
	uint64_t is_zero = ct_iszero_u64(acc) & 1;
	CT_DECLASSIFY(&is_zero, sizeof is_zero);
	return -(int)is_zero;
}

/* pk = u([a] 9) for the clamped a, computed on the Edwards curve by the
 * backend: [a]B = (x, y) maps to u = (1 + y) / (1 - y) = (Z + Y) / (Z -
 * Y). Constant time (the backend's fixed base and inversion). The clamped
 * a is never 0 mod L (2^254 <= a < 8L and 8 | a), so Z - Y != 0. */
SIGIL_EXPORT void sigil_x25519_public(uint8_t pk[32], const uint8_t scalar[32])
{
	uint8_t k[32];

	const backend *be = backend_get();
	memcpy(k, scalar, 32);
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;

	be->base_mont_u(be, pk, k);
	CT_DECLASSIFY(pk, 32);

	sigil_wipe(k, sizeof k);
}
