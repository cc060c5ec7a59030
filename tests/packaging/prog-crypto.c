/* SPDX-License-Identifier: MIT */
/*
 * prog-crypto.c - a program built against the installed sigil-crypto.pc:
 * RFC 8032 section 7.1 TEST 1 (Ed25519, empty message) and RFC 7748
 * section 6.1 (X25519 Diffie-Hellman) through the public API only.
 * Exit 0 when every answer matches the RFCs.
 */
#include <stdio.h>
#include <string.h>

#include <sigil/crypto.h>

static int unhex(unsigned char *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		if (sscanf(hex + 2 * i, "%2x", &v) != 1)
			return -1;
		out[i] = (unsigned char)v;
	}
	return 0;
}

static int check(const char *what, const unsigned char *got, const char *want_hex, size_t n)
{
	unsigned char want[64];

	if (unhex(want, want_hex, n) < 0 || memcmp(got, want, n) != 0) {
		printf("FAIL %s\n", what);
		return 1;
	}
	printf("ok %s\n", what);
	return 0;
}

int main(void)
{
	unsigned char seed[32], pk[32], sk[64], sig[64];
	unsigned char a[32], b[32], apub[32], bpub[32], k1[32], k2[32];
	int bad = 0;

	/* RFC 8032 7.1 TEST 1 */
	unhex(seed, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", 32);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	bad += check("ed25519 public key", pk,
	             "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", 32);
	sigil_ed25519_sign(sig, (const unsigned char *)"", 0, sk);
	bad += check("ed25519 signature", sig,
	             "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555"
	             "fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b", 64);
	if (sigil_ed25519_verify(sig, (const unsigned char *)"", 0, pk, SIGIL_ED25519_STRICT) != 0) {
		printf("FAIL ed25519 verify\n");
		bad++;
	}
	sig[0] ^= 1;
	if (sigil_ed25519_verify(sig, (const unsigned char *)"", 0, pk, SIGIL_ED25519_STRICT) != -1) {
		printf("FAIL ed25519 verify accepts a bad signature\n");
		bad++;
	}

	/* RFC 7748 6.1 */
	unhex(a, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", 32);
	unhex(b, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", 32);
	sigil_x25519_public(apub, a);
	sigil_x25519_public(bpub, b);
	bad += check("x25519 alice public", apub,
	             "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", 32);
	bad += check("x25519 bob public", bpub,
	             "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f", 32);
	if (sigil_x25519(k1, a, bpub) != 0 || sigil_x25519(k2, b, apub) != 0) {
		printf("FAIL x25519 returned -1\n");
		bad++;
	}
	bad += check("x25519 shared (alice)", k1,
	             "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", 32);
	bad += check("x25519 shared (bob)", k2,
	             "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", 32);
	sigil_wipe(sk, sizeof(sk));
	return bad ? 1 : 0;
}
