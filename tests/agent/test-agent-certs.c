/* SPDX-License-Identifier: MIT */
/*
 * test-agent-certs.c - the certificates sigild keeps with its keys
 * (daemon/agent-certs.c): keeping them with a key (ops.c checks them
 * first), listing, resolving sign requests, removal as OpenSSH's agent
 * (certificate alone, plain identity alone, then the key), persistence in
 * <state>/ssh-certs/ only for keys with a key file, loading it again, and
 * a damaged file
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <sodium.h>

#include "agent-cert.h"

static char dir[] = "/tmp/sigil-test-certs-XXXXXX";
static int statefd = -1, keydirfd = -1;
static uint8_t pk[32], sk[64], other_pk[32], other_sk[64], ca_sk[64];

/* an Ed25519 certificate of key by the CA (serial tells certificates apart) */
static size_t make_cert(uint8_t *out, const uint8_t key[32], uint32_t serial)
{
	AgentOut o = { 0 }, ca = { 0 }, sig = { 0 };
	uint8_t nonce[32] = { 3 }, s[64];
	size_t n;

	agent_put_cstring(&o, AGENT_CERT_ED25519);
	agent_put_string(&o, nonce, 32);
	agent_put_string(&o, key, 32);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, serial);
	agent_put_u32(&o, 1);
	agent_put_cstring(&o, "id");
	agent_put_string(&o, NULL, 0);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, 0);
	agent_put_u32(&o, 0xffffffff);
	agent_put_u32(&o, 0xffffffff);
	agent_put_string(&o, NULL, 0);
	agent_put_string(&o, NULL, 0);
	agent_put_string(&o, NULL, 0);
	agent_put_ed25519_blob(&ca, ca_sk + 32);
	agent_put_raw(&o, ca.data, ca.len);
	crypto_sign_ed25519_detached(s, NULL, o.data, o.len, ca_sk);
	agent_put_cstring(&sig, "ssh-ed25519");
	agent_put_string(&sig, s, 64);
	agent_put_string(&o, sig.data, sig.len);
	assert_false(o.oom);
	n = o.len;
	memcpy(out, o.data, n);
	agent_out_free(&o);
	agent_out_free(&ca);
	agent_out_free(&sig);
	return n;
}

static int add(AgentCerts *ac, const uint8_t key[32], const uint8_t *cert, size_t cert_len, bool persist)
{
	return agent_certs_add(ac, key, cert, cert_len, (const uint8_t *)"comment", 7, persist);
}

static bool listed_all(void *ctx, const uint8_t key[32])
{
	(void)ctx;
	(void)key;
	return true;
}

static uint32_t count_listed(const AgentCerts *ac)
{
	AgentCertRef refs[4];
	size_t n = agent_certs_list(ac, refs, 4, listed_all, NULL);

	/* the refs point at the certificates' own bytes */
	for (size_t i = 0; i < n && i < 4; i++)
		assert_true(refs[i].blob_len > 32 && refs[i].comment_len == 7);
	assert_int_equal(agent_certs_list(ac, NULL, 0, listed_all, NULL), n);
	return (uint32_t)n;
}

static void blob_of(uint8_t out[51], const uint8_t key[32])
{
	AgentOut o = { 0 };

	agent_put_ed25519_blob(&o, key);
	memcpy(out, o.data + 4, 51);
	agent_out_free(&o);
}

static int setup(void **state)
{
	(void)state;
	assert_non_null(mkdtemp(dir));
	statefd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(statefd >= 0);
	assert_int_equal(mkdirat(statefd, "keys", 0700), 0);
	keydirfd = openat(statefd, "keys", O_RDONLY | O_DIRECTORY);
	assert_true(keydirfd >= 0);
	crypto_sign_ed25519_keypair(pk, sk);
	crypto_sign_ed25519_keypair(other_pk, other_sk);
	{
		uint8_t ca_pk[32];

		crypto_sign_ed25519_keypair(ca_pk, ca_sk);
	}
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	close(keydirfd);
	close(statefd);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	assert_int_equal(system(cmd), 0);
	return 0;
}

static void test_memory_only(void **state)
{
	AgentCerts *ac = agent_certs_new(-1);
	uint8_t cert[1024], got[32], plain[51];
	size_t cl = make_cert(cert, pk, 1);

	(void)state;
	assert_non_null(ac);
	assert_int_equal(count_listed(ac), 0);
	assert_int_equal(agent_certs_resolve(ac, cert, cl, got), -1);
	assert_int_equal(add(ac, pk, cert, cl, false), 0);
	assert_int_equal(count_listed(ac), 1);
	assert_int_equal(agent_certs_resolve(ac, cert, cl, got), 0);
	assert_memory_equal(got, pk, 32);
	blob_of(plain, pk);
	assert_int_equal(agent_certs_resolve(ac, plain, 51, got), 0);
	/* the same certificate again is one certificate */
	assert_int_equal(add(ac, pk, cert, cl, false), 0);
	assert_int_equal(count_listed(ac), 1);
	/* the certificate alone goes; then it is not found */
	assert_int_equal(agent_certs_remove(ac, cert, cl, got), AGENT_CERTS_REMOVED);
	assert_int_equal(count_listed(ac), 0);
	assert_int_equal(agent_certs_remove(ac, cert, cl, got), AGENT_CERTS_NOT_FOUND);
	/* a plain key without certificates is ops.c's to remove */
	assert_int_equal(agent_certs_remove(ac, plain, 51, got), AGENT_CERTS_NOT_MINE);
	agent_certs_free(ac);
}

static void test_limit(void **state)
{
	AgentCerts *ac = agent_certs_new(-1);
	uint8_t cert[1024];
	size_t cl;

	(void)state;
	for (uint32_t i = 0; i < AGENT_CERT_MAX; i++) {
		cl = make_cert(cert, pk, 100 + i);
		assert_int_equal(add(ac, pk, cert, cl, false), 0);
	}
	cl = make_cert(cert, pk, 99);
	assert_int_equal(add(ac, pk, cert, cl, false), -ENOSPC);
	/* another key has its own share */
	cl = make_cert(cert, other_pk, 99);
	assert_int_equal(add(ac, other_pk, cert, cl, false), 0);
	assert_int_equal(agent_certs_count(ac), AGENT_CERT_MAX + 1);
	agent_certs_forget(ac, pk);
	assert_int_equal(agent_certs_count(ac), 1);
	agent_certs_free(ac);
}

static void test_remove_as_openssh(void **state)
{
	AgentCerts *ac = agent_certs_new(-1);
	uint8_t c1[1024], c2[1024], got[32], plain[51];
	size_t l1 = make_cert(c1, pk, 1), l2 = make_cert(c2, pk, 2);

	(void)state;
	blob_of(plain, pk);
	assert_int_equal(add(ac, pk, c1, l1, false), 0);
	assert_int_equal(add(ac, pk, c2, l2, false), 0);
	assert_int_equal(count_listed(ac), 2);
	/* the plain identity alone: hidden, it signs nothing; the certificates stay */
	assert_int_equal(agent_certs_remove(ac, plain, 51, got), AGENT_CERTS_REMOVED);
	assert_true(agent_certs_hidden(ac, pk));
	assert_int_equal(agent_certs_resolve(ac, plain, 51, got), -1);
	assert_int_equal(agent_certs_resolve(ac, c1, l1, got), 0);
	assert_int_equal(agent_certs_remove(ac, plain, 51, got), AGENT_CERTS_NOT_FOUND);
	/* one certificate goes, then the last, which deletes the key */
	assert_int_equal(agent_certs_remove(ac, c1, l1, got), AGENT_CERTS_REMOVED);
	memset(got, 0, 32);
	assert_int_equal(agent_certs_remove(ac, c2, l2, got), AGENT_CERTS_DELETE_KEY);
	assert_memory_equal(got, pk, 32);
	assert_false(agent_certs_hidden(ac, pk));
	assert_int_equal(count_listed(ac), 0);
	/* a plain re-add shows a hidden identity again */
	assert_int_equal(add(ac, pk, c1, l1, false), 0);
	assert_int_equal(agent_certs_remove(ac, plain, 51, got), AGENT_CERTS_REMOVED);
	assert_true(agent_certs_hidden(ac, pk));
	agent_certs_unhide(ac, pk);
	assert_false(agent_certs_hidden(ac, pk));
	/* forgetting the key takes its certificates */
	agent_certs_forget(ac, pk);
	assert_int_equal(count_listed(ac), 0);
	agent_certs_free(ac);
}

static void test_persistence(void **state)
{
	AgentCerts *ac = agent_certs_new(statefd);
	uint8_t cert[1024], ocert[1024], got[32];
	size_t cl = make_cert(cert, pk, 5), ol = make_cert(ocert, other_pk, 6);
	char name[65], path[256];
	int fd;
	struct stat st;

	(void)state;
	/* pk has a key file, other_pk is memory-only */
	fd = openat(keydirfd, "persisted.key", O_WRONLY | O_CREAT, 0600);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(add(ac, pk, cert, cl, true), 0);
	assert_int_equal(add(ac, other_pk, ocert, ol, false), 0);
	assert_int_equal(count_listed(ac), 2);
	sodium_bin2hex(name, sizeof(name), pk, 32);
	snprintf(path, sizeof(path), "%s/ssh-certs/%s", dir, name);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	sodium_bin2hex(name, sizeof(name), other_pk, 32);
	snprintf(path, sizeof(path), "%s/ssh-certs/%s", dir, name);
	assert_int_equal(stat(path, &st), -1);
	agent_certs_free(ac);
	/* a restart: the persisted one only */
	ac = agent_certs_new(statefd);
	assert_int_equal(count_listed(ac), 1);
	assert_int_equal(agent_certs_resolve(ac, cert, cl, got), 0);
	assert_int_equal(agent_certs_resolve(ac, ocert, ol, got), -1);
	/* removing it removes the file */
	assert_int_equal(agent_certs_remove(ac, cert, cl, got), AGENT_CERTS_REMOVED);
	sodium_bin2hex(name, sizeof(name), pk, 32);
	snprintf(path, sizeof(path), "%s/ssh-certs/%s", dir, name);
	assert_int_equal(stat(path, &st), -1);
	agent_certs_free(ac);
	/* a damaged file, a file of the wrong key, a stray name: ignored */
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		assert_int_equal(fwrite("\0\0\0\x05garbage and more", 1, 20, f), 20);
		fclose(f);
		sodium_bin2hex(name, sizeof(name), other_pk, 32);
		snprintf(path, sizeof(path), "%s/ssh-certs/%s", dir, name);
		f = fopen(path, "w");
		assert_non_null(f);
		/* pk's certificate (string blob, string comment) in other_pk's file */
		{
			AgentOut o = { 0 };

			agent_put_string(&o, cert, cl);
			agent_put_string(&o, NULL, 0);
			assert_int_equal(fwrite(o.data, 1, o.len, f), o.len);
			agent_out_free(&o);
		}
		fclose(f);
		snprintf(path, sizeof(path), "%s/ssh-certs/not-hex", dir);
		f = fopen(path, "w");
		assert_non_null(f);
		fclose(f);
	}
	ac = agent_certs_new(statefd);
	assert_non_null(ac);
	assert_int_equal(count_listed(ac), 0);
	agent_certs_free(ac);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_memory_only),
		cmocka_unit_test(test_limit),
		cmocka_unit_test(test_remove_as_openssh),
		cmocka_unit_test(test_persistence),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, setup, teardown);
}
