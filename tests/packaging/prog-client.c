/* SPDX-License-Identifier: MIT */
/*
 * prog-client.c - a program built against the installed sigil.pc and
 * sigil-crypto.pc. Given the socket of a running sigild it imports the
 * RFC 8032 section 7.1 TEST 1 seed, has the daemon sign the empty message
 * and checks the RFC's signature, verifies it with libsigil-crypto, lists
 * and deletes the key. Exit 0 when all of it works.
 *
 *   prog-client SOCKET LABEL
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

static void unhex(unsigned char *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned v = 0;

		sscanf(hex + 2 * i, "%2x", &v);
		out[i] = (unsigned char)v;
	}
}

static int fail(sigil_client *c, const char *what, sigil_error e)
{
	printf("FAIL %s: %s (%s)\n", what, sigil_client_strerror(e), c ? sigil_client_errmsg(c) : "");
	sigil_client_free(c);
	return 1;
}

int main(int argc, char **argv)
{
	unsigned char seed[32], want_pk[32], want_sig[64], sig[64];
	sigil_client *c = NULL;
	sigil_key_info info, *keys = NULL;
	sigil_hello hello;
	size_t n = 0;
	int found = 0;
	sigil_error e;

	if (argc != 3) {
		fprintf(stderr, "usage: %s SOCKET LABEL\n", argv[0]);
		return 2;
	}
	unhex(seed, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", 32);
	unhex(want_pk, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", 32);
	unhex(want_sig, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555"
	                "fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b", 64);

	e = sigil_client_connect(&c, argv[1], 10000);
	if (e)
		return fail(c, "connect", e);
	e = sigil_client_hello(c, &hello);
	if (e)
		return fail(c, "hello", e);
	printf("ok hello: %s, protocol %llu\n", hello.server, (unsigned long long)hello.protocol);
	e = sigil_client_key_import(c, &info, SIGIL_KEY_ED25519, argv[2], seed, 0);
	if (e)
		return fail(c, "key.import", e);
	if (memcmp(info.public_key, want_pk, 32) != 0)
		return fail(c, "key.import public key differs from RFC 8032", SIGIL_EOK);
	e = sigil_client_sign(c, sig, argv[2], SIGIL_SIGN_PURE, (const uint8_t *)"", 0, NULL, 0);
	if (e)
		return fail(c, "sign", e);
	if (memcmp(sig, want_sig, 64) != 0)
		return fail(c, "signature differs from RFC 8032 TEST 1", SIGIL_EOK);
	printf("ok signature matches RFC 8032 TEST 1\n");
	if (sigil_ed25519_verify(sig, (const uint8_t *)"", 0, info.public_key, SIGIL_ED25519_STRICT) != 0)
		return fail(c, "libsigil-crypto rejects the daemon's signature", SIGIL_EOK);
	e = sigil_client_key_list(c, &keys, &n);
	if (e)
		return fail(c, "key.list", e);
	for (size_t i = 0; i < n; i++)
		found |= strcmp(keys[i].label, argv[2]) == 0;
	free(keys);
	if (!found)
		return fail(c, "key.list misses the imported key", SIGIL_EOK);
	e = sigil_client_key_delete(c, argv[2]);
	if (e)
		return fail(c, "key.delete", e);
	e = sigil_client_key_public(c, &info, argv[2]);
	if (e != SIGIL_ENOT_FOUND)
		return fail(c, "key.public after delete is not not_found", e);
	printf("ok import, sign, verify, list, delete\n");
	sigil_client_free(c);
	return 0;
}
