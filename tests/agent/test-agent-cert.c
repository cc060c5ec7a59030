/* SPDX-License-Identifier: MIT */
/*
 * test-agent-cert.c - the OpenSSH certificate parser of sigild's agent
 * socket (daemon/agent-cert.c): certificates made by ssh-keygen -s (an
 * Ed25519 CA and an RSA CA), certificates built here and signed with
 * libsodium, and each way of being malformed
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <sodium.h>

#include "agent-cert.h"

/* ssh-keygen -s ca -I vector-id -n alice,bob -V 20260101Z:20270101Z -z 9 key.pub
 * (OpenSSH 9.2; Ed25519 CA) and that key's public blob */
static const char cert_ed_b64[] = "AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAIGatwuoZRfsX6ky20HaQwoZYH2xqmYR8BsHQrpdB+2djAAAAIODxtbPPFJWKGO1fpz8pzYzDsi1UBbV5L467OGGMwONtAAAAAAAAAAkAAAABAAAACXZlY3Rvci1pZAAAABAAAAAFYWxpY2UAAAADYm9iAAAAAGlVuQAAAAAAazbsgAAAAAAAAACCAAAAFXBlcm1pdC1YMTEtZm9yd2FyZGluZwAAAAAAAAAXcGVybWl0LWFnZW50LWZvcndhcmRpbmcAAAAAAAAAFnBlcm1pdC1wb3J0LWZvcndhcmRpbmcAAAAAAAAACnBlcm1pdC1wdHkAAAAAAAAADnBlcm1pdC11c2VyLXJjAAAAAAAAAAAAAAAzAAAAC3NzaC1lZDI1NTE5AAAAIGgaqVYXUQ23tN73MNfg9bh3ZXEqipang5wnOg8PlbsUAAAAUwAAAAtzc2gtZWQyNTUxOQAAAEDS/8gZ3ErJbk8KOPri/jS/pjuwBHL41PkuhagciNvc3Fpb4iGMdyhhTGuLfuTLMozzCSoD7WLkLrDWjYtgs5cP";
static const char key_b64[] = "AAAAC3NzaC1lZDI1NTE5AAAAIODxtbPPFJWKGO1fpz8pzYzDsi1UBbV5L467OGGMwONt";
/* ssh-keygen -s rsa_ca -I rsa-ca -n alice key.pub (an RSA CA, the same key) */
static const char cert_rsa_b64[] = "AAAAIHNzaC1lZDI1NTE5LWNlcnQtdjAxQG9wZW5zc2guY29tAAAAIKShJCq1dG6BbSdhRhxl1eAQnJs1t5quymNM/N7aRCi4AAAAIODxtbPPFJWKGO1fpz8pzYzDsi1UBbV5L467OGGMwONtAAAAAAAAAAAAAAABAAAABnJzYS1jYQAAAAkAAAAFYWxpY2UAAAAAAAAAAP//////////AAAAAAAAAIIAAAAVcGVybWl0LVgxMS1mb3J3YXJkaW5nAAAAAAAAABdwZXJtaXQtYWdlbnQtZm9yd2FyZGluZwAAAAAAAAAWcGVybWl0LXBvcnQtZm9yd2FyZGluZwAAAAAAAAAKcGVybWl0LXB0eQAAAAAAAAAOcGVybWl0LXVzZXItcmMAAAAAAAAAAAAAAJcAAAAHc3NoLXJzYQAAAAMBAAEAAACBANtvm4e6PAxOBOCAIWlh8dQOlCRA+7xEieLI9qW6QEJ4zwLfZIqQavu3WK0I8O0bDHn6O/i8OeldEVVgMGs+a42XXLWUkzJE+mlC+o+1lLLufUJZNxSxEF9Fl1TKRc62iiRvoSIZYDsT9AuCm4r+nWZ19yaGHwBd6qRv+HJlgEmfAAAAlAAAAAxyc2Etc2hhMi01MTIAAACApypKyUzrabRuinPW6sb2I7evkLqOoUScCEmkRkRhaSYvz2dr1sdhhglBlzbA+rye7VyoWhhFEgihSSMGzxFk5/K8jZsz766HIg4+DGTXQoaS/gR3ld3ZYr7aZqYiWh+VpHQIhGgX9LQc0XrdfpdOaFmP3IV630UM9C9aOuZnx0I=";

static uint8_t *b64(const char *s, size_t *lenp)
{
	size_t cap = strlen(s);
	uint8_t *out = malloc(cap);

	assert_non_null(out);
	assert_int_equal(sodium_base642bin(out, cap, s, strlen(s), NULL, lenp, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
	return out;
}

static void test_ssh_keygen_ed25519_ca(void **state)
{
	size_t cl, kl;
	uint8_t *cert = b64(cert_ed_b64, &cl), *key = b64(key_b64, &kl), pk[32], got[32];
	AgentCertInfo ci;
	bool is_cert;

	(void)state;
	assert_int_equal(agent_parse_ed25519_blob(key, kl, pk), 0);
	assert_int_equal(agent_cert_parse(cert, cl, &ci), 0);
	assert_memory_equal(ci.pk, pk, 32);
	assert_int_equal(ci.type, 1);
	assert_true(ci.ca_ed25519);
	assert_int_equal(ci.key_id_len, 9);
	assert_memory_equal(ci.key_id, "vector-id", 9);
	assert_true(ci.valid_after == 1767225600u && ci.valid_before == 1798761600u);
	assert_int_equal(agent_cert_key_of(cert, cl, got, &is_cert), 0);
	assert_true(is_cert);
	assert_memory_equal(got, pk, 32);
	assert_int_equal(agent_cert_key_of(key, kl, got, &is_cert), 0);
	assert_false(is_cert);
	assert_memory_equal(got, pk, 32);
	/* every truncation, a trailing byte and each flipped byte are refused
	 * (a flip in a length, a field or the signed part breaks the parse or
	 * the CA's signature) */
	for (size_t n = 0; n < cl; n++)
		assert_int_equal(agent_cert_parse(cert, n, &ci), -1);
	{
		uint8_t *longer = malloc(cl + 1);

		assert_non_null(longer);
		memcpy(longer, cert, cl);
		longer[cl] = 0;
		assert_int_equal(agent_cert_parse(longer, cl + 1, &ci), -1);
		free(longer);
	}
	for (size_t i = 0; i < cl; i++) {
		cert[i] ^= 0x01;
		if (agent_cert_parse(cert, cl, &ci) == 0)
			fail_msg("byte %zu of %zu flipped: accepted", i, cl);
		assert_int_equal(agent_cert_key_of(cert, cl, got, &is_cert), -1);
		cert[i] ^= 0x01;
	}
	free(cert);
	free(key);
}

static void test_ssh_keygen_rsa_ca(void **state)
{
	size_t cl, kl;
	uint8_t *cert = b64(cert_rsa_b64, &cl), *key = b64(key_b64, &kl), pk[32];
	AgentCertInfo ci;

	(void)state;
	assert_int_equal(agent_parse_ed25519_blob(key, kl, pk), 0);
	/* the RSA signature is not checked here (sshd does), the rest is */
	assert_int_equal(agent_cert_parse(cert, cl, &ci), 0);
	assert_false(ci.ca_ed25519);
	assert_memory_equal(ci.pk, pk, 32);
	assert_int_equal(agent_cert_parse(cert, cl - 1, &ci), -1);
	free(cert);
	free(key);
}

/* a certificate built field by field, signed with libsodium */
typedef struct Build {
	const char *type;
	uint32_t cert_type;
	const char *ca_type;   /* NULL: the Ed25519 CA */
	bool bad_sig;
	bool bad_options;
} Build;

static size_t build(uint8_t *out, const Build *b, const uint8_t pk[32], const uint8_t ca_sk[64])
{
	AgentOut o = { 0 }, ca = { 0 }, opts = { 0 }, sig = { 0 };
	uint8_t nonce[32] = { 7 }, s[64];
	size_t n;

	agent_put_cstring(&o, b->type);
	agent_put_string(&o, nonce, 32);
	agent_put_string(&o, pk, 32);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, 5); /* serial 5 */
	agent_put_u32(&o, b->cert_type);
	agent_put_cstring(&o, "built");
	agent_put_string(&o, "\0\0\0\x04root", 8);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, 0xffffffff);
	agent_put_u32(&o, 0xffffffff);
	agent_put_cstring(&opts, "force-command");
	if (b->bad_options)
		agent_put_u32(&opts, 100); /* a data string longer than the rest */
	else
		agent_put_string(&opts, "\0\0\0\x04true", 8);
	agent_put_string(&o, opts.data, opts.len);
	agent_put_string(&o, NULL, 0); /* extensions */
	agent_put_string(&o, NULL, 0); /* reserved */
	if (b->ca_type) {
		agent_put_cstring(&ca, b->ca_type);
		agent_put_string(&ca, ca_sk + 32, 32);
	} else {
		agent_put_ed25519_blob(&ca, ca_sk + 32);
		/* agent_put_ed25519_blob wrote the outer length too: take it as is */
		agent_put_raw(&o, ca.data, ca.len);
		agent_out_free(&ca);
	}
	if (b->ca_type) {
		agent_put_string(&o, ca.data, ca.len);
		agent_out_free(&ca);
	}
	crypto_sign_ed25519_detached(s, NULL, o.data, o.len, ca_sk);
	if (b->bad_sig)
		s[10] ^= 0x80;
	agent_put_cstring(&sig, "ssh-ed25519");
	agent_put_string(&sig, s, 64);
	agent_put_string(&o, sig.data, sig.len);
	assert_false(o.oom);
	n = o.len;
	memcpy(out, o.data, n);
	agent_out_free(&o);
	agent_out_free(&opts);
	agent_out_free(&sig);
	return n;
}

static void test_built(void **state)
{
	uint8_t pk[32], sk[64], ca_pk[32], ca_sk[64], buf[1024];
	AgentCertInfo ci;
	size_t n;

	(void)state;
	crypto_sign_ed25519_keypair(pk, sk);
	crypto_sign_ed25519_keypair(ca_pk, ca_sk);
	n = build(buf, &(Build){ AGENT_CERT_ED25519, 2, NULL, false, false }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), 0);
	assert_int_equal(ci.type, 2);
	assert_memory_equal(ci.pk, pk, 32);
	assert_int_equal(ci.valid_before, UINT64_MAX);
	/* a CA signature that does not verify */
	n = build(buf, &(Build){ AGENT_CERT_ED25519, 1, NULL, true, false }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), -1);
	/* certificate type 3 */
	n = build(buf, &(Build){ AGENT_CERT_ED25519, 3, NULL, false, false }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), -1);
	/* a certificate as the CA ("chained") */
	n = build(buf, &(Build){ AGENT_CERT_ED25519, 1, AGENT_CERT_ED25519, false, false }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), -1);
	/* a critical option whose data runs past its section */
	n = build(buf, &(Build){ AGENT_CERT_ED25519, 1, NULL, false, true }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), -1);
	/* another certificate type (RSA's name on an Ed25519 body) */
	n = build(buf, &(Build){ "ssh-rsa-cert-v01@openssh.com", 1, NULL, false, false }, pk, ca_sk);
	assert_int_equal(agent_cert_parse(buf, n, &ci), -1);
}

static void test_is_type(void **state)
{
	(void)state;
	assert_true(agent_cert_is_type((const uint8_t *)AGENT_CERT_ED25519, strlen(AGENT_CERT_ED25519)));
	assert_true(agent_cert_is_type((const uint8_t *)"ssh-rsa-cert-v01@openssh.com", 28));
	assert_true(agent_cert_is_type((const uint8_t *)"sk-ssh-ed25519-cert-v01@openssh.com", 35));
	assert_false(agent_cert_is_type((const uint8_t *)"ssh-ed25519", 11));
	assert_false(agent_cert_is_type((const uint8_t *)"-cert-v01@openssh.com", 21));
	assert_false(agent_cert_is_type(NULL, 0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ssh_keygen_ed25519_ca),
		cmocka_unit_test(test_ssh_keygen_rsa_ca),
		cmocka_unit_test(test_built),
		cmocka_unit_test(test_is_type),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
