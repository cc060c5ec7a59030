/* SPDX-License-Identifier: MIT */
/*
 * test-agefile.c - the age file format of sigild (daemon/agefile.c) and
 * the Bech32 codec (client/bech32.c), against files made by the real
 * age/age-keygen 1.1.1 (vectors/age/, README.md there) and round trips
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "agefile.h"
#include "bech32.h"

static uint8_t *slurp(const char *name, size_t *lenp)
{
	const char *dir = getenv("SIGIL_VECTORS");
	char path[4096];
	uint8_t *d;
	long n;
	FILE *f;

	assert_non_null(dir);
	snprintf(path, sizeof(path), "%s/age/%s", dir, name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open %s", path);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n >= 0);
	rewind(f);
	d = malloc((size_t)n + 1);
	assert_non_null(d);
	assert_int_equal(fread(d, 1, (size_t)n, f), (size_t)n);
	d[n] = 0;
	fclose(f);
	*lenp = (size_t)n;
	return d;
}

/* the scalar and the recipient that age-keygen wrote in @name */
static void load_key(const char *name, uint8_t scalar[32], char recipient[128])
{
	size_t len, n = 0;
	char *t = (char *)slurp(name, &len), *sk = strstr(t, "AGE-SECRET-KEY-1"), *pk = strstr(t, "age1");
	char hrp[BECH32_HRP_MAX + 1];

	assert_non_null(sk);
	assert_non_null(pk);
	assert_int_equal(bech32_decode(hrp, scalar, 32, &n, sk, strcspn(sk, "\n")), 0);
	assert_string_equal(hrp, "age-secret-key-");
	assert_int_equal(n, 32);
	snprintf(recipient, 128, "%.*s", (int)strcspn(pk, "\n"), pk);
	free(t);
}

static void expect_plain(const char *file, const char *plain_file)
{
	uint8_t scalar[32];
	char rcpt[128];
	size_t fl, pl;
	uint8_t *f = slurp(file, &fl), *p = slurp(plain_file, &pl);
	AgeBuf pt = AGEBUF_NULL(pt);

	load_key("key.txt", scalar, rcpt);
	assert_int_equal(agefile_decrypt(&pt, scalar, f, fl), 0);
	assert_int_equal(pt.len, pl);
	if (pl)
		assert_memory_equal(pt.data, p, pl);
	agefile_buf_deinit(&pt);
	free(f);
	free(p);
}

static void test_age_files(void **state)
{
	(void)state;
	expect_plain("hello.age", "hello.txt");
	expect_plain("hello.age.asc", "hello.txt");
	expect_plain("multi.age", "hello.txt");
	expect_plain("empty.age", "empty.txt");
	expect_plain("chunk.age", "chunk.bin");
	expect_plain("chunk1.age", "chunk1.bin");
}

static int decrypt_with(const char *key, const uint8_t *f, size_t fl)
{
	uint8_t scalar[32];
	char rcpt[128];
	AgeBuf pt = AGEBUF_NULL(pt);
	int r;

	load_key(key, scalar, rcpt);
	r = agefile_decrypt(&pt, scalar, f, fl);
	if (r)
		assert_int_equal(pt.len, 0);
	agefile_buf_deinit(&pt);
	return r;
}

static void test_refusals(void **state)
{
	size_t fl;
	uint8_t *f;

	(void)state;
	f = slurp("other.age", &fl);
	assert_int_equal(decrypt_with("key.txt", f, fl), -ENOENT);
	assert_int_equal(decrypt_with("other.txt", f, fl), 0);
	free(f);
	f = slurp("scrypt.age", &fl);
	assert_int_equal(decrypt_with("key.txt", f, fl), -ENOENT);
	free(f);

	f = slurp("chunk1.age", &fl);
	/* every truncation in the payload fails authentication */
	for (size_t cut = 1; cut < 65536 + 40; cut += 997)
		assert_int_equal(decrypt_with("key.txt", f, fl - cut), -EBADMSG);
	/* one flipped bit in the payload, in the nonce, in the MAC */
	f[fl - 1] ^= 1;
	assert_int_equal(decrypt_with("key.txt", f, fl), -EBADMSG);
	f[fl - 1] ^= 1;
	{
		uint8_t *mac = (uint8_t *)strstr((char *)f, "--- ") + 4;
		uint8_t *nonce = (uint8_t *)strchr((char *)mac, '\n') + 1;

		nonce[3] ^= 0x40;
		assert_int_equal(decrypt_with("key.txt", f, fl), -EBADMSG);
		nonce[3] ^= 0x40;
		/* a different base64 letter of the MAC (A <-> B keep it canonical) */
		mac[0] = mac[0] == 'A' ? 'B' : 'A';
		assert_int_equal(decrypt_with("key.txt", f, fl), -EBADMSG);
	}
	/* truncated in the header */
	assert_int_equal(decrypt_with("key.txt", f, 60), -EINVAL);
	assert_int_equal(decrypt_with("key.txt", f, 0), -EINVAL);
	assert_int_equal(decrypt_with("key.txt", (const uint8_t *)"age-encryption.org/v2\n", 22), -EINVAL);
	free(f);

	/* a broken armor */
	f = slurp("hello.age.asc", &fl);
	f[40] = '*';
	assert_int_equal(decrypt_with("key.txt", f, fl), -EINVAL);
	free(f);
}

static void test_roundtrip(void **state)
{
	static const size_t sizes[] = { 0, 1, 47, 48, 65535, 65536, 65537, 3 * 65536 };
	uint8_t scalar[32], pk[32];
	char rcpt[128];

	(void)state;
	load_key("key.txt", scalar, rcpt);
	sigil_x25519_public(pk, scalar);
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
		for (int armor = 0; armor < 2; armor++) {
			uint8_t *m = malloc(sizes[i] + 1);
			AgeBuf f = AGEBUF_NULL(f), pt = AGEBUF_NULL(pt);

			assert_non_null(m);
			randombytes_buf(m, sizes[i]);
			assert_int_equal(agefile_encrypt(&f, pk, m, sizes[i], armor), 0);
			if (armor)
				assert_memory_equal(f.data, AGEFILE_ARMOR_BEGIN "\n", strlen(AGEFILE_ARMOR_BEGIN) + 1);
			else
				assert_memory_equal(f.data, "age-encryption.org/v1\n-> X25519 ", 32);
			assert_int_equal(agefile_decrypt(&pt, scalar, f.data, f.len), 0);
			assert_int_equal(pt.len, sizes[i]);
			if (sizes[i])
				assert_memory_equal(pt.data, m, sizes[i]);
			agefile_buf_deinit(&f);
			agefile_buf_deinit(&pt);
			free(m);
		}
	/* a small-order recipient is refused */
	{
		AgeBuf f = AGEBUF_NULL(f);
		uint8_t zero[32] = { 0 };

		assert_int_equal(agefile_encrypt(&f, zero, (const uint8_t *)"x", 1, false), -EINVAL);
		agefile_buf_deinit(&f);
	}
}

static void test_unwrap(void **state)
{
	uint8_t scalar[32], fk[16], share[32] = { 0 }, body[32] = { 0 };
	char rcpt[128];

	(void)state;
	load_key("key.txt", scalar, rcpt);
	memset(fk, 0xaa, sizeof(fk));
	/* share 0 (small order): the shared secret is zero */
	assert_int_equal(agefile_x25519_unwrap(fk, scalar, share, body, 32), -EDOM);
	share[0] = 9;
	assert_int_equal(agefile_x25519_unwrap(fk, scalar, share, body, 32), -EBADMSG);
	assert_int_equal(agefile_x25519_unwrap(fk, scalar, share, body, 31), -EINVAL);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(fk[i], 0xaa); /* untouched on failure */
}

static void test_stanza(void **state)
{
	const char *in = "-> X25519 abc\nAAAA\n-> next";
	const char *args[3] = { "recipient-stanza", "0", "X25519" };
	uint8_t body[100];
	AgeBuf b = AGEBUF_NULL(b);
	AgeStanza s;
	size_t used;

	(void)state;
	assert_int_equal(agefile_stanza_parse(&s, (const uint8_t *)in, strlen(in), &used), 0);
	assert_int_equal(used, 19);
	assert_int_equal(s.n_args, 2);
	assert_string_equal(s.args[0], "X25519");
	assert_string_equal(s.args[1], "abc");
	assert_int_equal(s.body_len, 3);
	agefile_stanza_deinit(&s);
	/* every prefix is incomplete, never an error */
	for (size_t n = 0; n < 19; n++)
		assert_int_equal(agefile_stanza_parse(&s, (const uint8_t *)in, n, &used), -EAGAIN);
	/* refused: non-canonical base64, padding, empty argument, CR, a long line, no prefix */
	static const char *const bad[] = { "-> a\nAAB\n", "-> a\nAA==\n", "-> a  b\n\n", "-> a\r\n\n",
		                           "-> \n\n", "--- abc\n", "x\n", "-> a\n\xff\n" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(agefile_stanza_parse(&s, (const uint8_t *)bad[i], strlen(bad[i]), &used), -EINVAL);
	/* a body of exactly 48 bytes ends with an empty line; written and read back */
	for (size_t n = 0; n < sizeof(body); n++) {
		for (size_t i = 0; i < n; i++)
			body[i] = (uint8_t)(i * 7 + n);
		b.len = 0;
		assert_int_equal(agefile_stanza_write(&b, args, 3, body, n), 0);
		if (n == 48)
			assert_memory_equal(b.data + b.len - 2, "\n\n", 2);
		assert_int_equal(agefile_stanza_parse(&s, b.data, b.len, &used), 0);
		assert_int_equal(used, b.len);
		assert_int_equal(s.n_args, 3);
		assert_int_equal(s.body_len, n);
		if (n)
			assert_memory_equal(s.body, body, n);
		agefile_stanza_deinit(&s);
	}
	assert_int_equal(agefile_stanza_write(&b, (const char *const[]){ "a b" }, 1, NULL, 0), -EINVAL);
	agefile_buf_deinit(&b);
}

static void test_key_payload(void **state)
{
	AgeKey k = { .type = 1, .exportable = true, .label = "release", .policy_len = 3 }, got;
	AgeBuf b = AGEBUF_NULL(b);

	(void)state;
	memset(k.seed, 0x5c, sizeof(k.seed));
	memcpy(k.policy, "\1\2\3", 3);
	assert_int_equal(agefile_key_encode(&b, &k), 0);
	assert_int_equal(b.len, 13 + 3 + 7 + 32 + 2 + 3);
	assert_int_equal(agefile_key_decode(&got, b.data, b.len), 0);
	assert_int_equal(got.type, 1);
	assert_true(got.exportable);
	assert_string_equal(got.label, "release");
	assert_memory_equal(got.seed, k.seed, 32);
	assert_int_equal(got.policy_len, 3);
	for (size_t n = 0; n < b.len; n++)
		assert_int_equal(agefile_key_decode(&got, b.data, n), -EINVAL);
	b.data[0] = 'S';
	assert_int_equal(agefile_key_decode(&got, b.data, b.len), -EINVAL);
	agefile_buf_deinit(&b);
}

static void test_bech32(void **state)
{
	uint8_t scalar[32], pk[32], back[64];
	char rcpt[128], out[256], hrp[BECH32_HRP_MAX + 1];
	size_t n;

	(void)state;
	load_key("key.txt", scalar, rcpt);
	sigil_x25519_public(pk, scalar);
	/* the recipient age-keygen printed */
	assert_true(bech32_encode(out, sizeof(out), "age", pk, 32, false) > 0);
	assert_string_equal(out, rcpt);
	assert_int_equal(bech32_decode(hrp, back, sizeof(back), &n, rcpt, strlen(rcpt)), 0);
	assert_string_equal(hrp, "age");
	assert_int_equal(n, 32);
	assert_memory_equal(back, pk, 32);
	/* the identity form of the plugin, and its decoding */
	assert_true(bech32_encode(out, sizeof(out), "age-plugin-sigil-", (const uint8_t *)"host", 4, true) > 0);
	assert_memory_equal(out, "AGE-PLUGIN-SIGIL-1", 18);
	assert_int_equal(bech32_decode(hrp, back, sizeof(back), &n, out, strlen(out)), 0);
	assert_string_equal(hrp, "age-plugin-sigil-");
	assert_int_equal(n, 4);
	assert_memory_equal(back, "host", 4);
	/* the checksum catches one changed character; mixed case is refused */
	out[20] = out[20] == 'Q' ? 'P' : 'Q';
	assert_int_equal(bech32_decode(hrp, back, sizeof(back), &n, out, strlen(out)), -1);
	rcpt[10] = (char)(rcpt[10] - 'a' + 'A');
	assert_int_equal(bech32_decode(hrp, back, sizeof(back), &n, rcpt, strlen(rcpt)), -1);
	assert_int_equal(bech32_encode(out, 10, "age", pk, 32, false), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_age_files),  cmocka_unit_test(test_refusals), cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_unwrap),     cmocka_unit_test(test_stanza),   cmocka_unit_test(test_key_payload),
		cmocka_unit_test(test_bech32),
	};

	if (sodium_init() < 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
