/* SPDX-License-Identifier: MIT */
/*
 * test-format.c - the signature and key formats of the sigil command
 * (client/format.c), checked against the real tools without a daemon:
 * files made by ssh-keygen, minisign and signify-openbsd are parsed and
 * their signatures verified with sigil's crypto; files made by format.c
 * (signed locally with sigil_ed25519_sign) are accepted by those tools.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "format.h"
#include "harness.h"
#include "tc.h"

static char scratch[64];

static int setup(void **state)
{
	snprintf(scratch, sizeof(scratch), "/tmp/sigil-format-test-XXXXXX");
	if (!mkdtemp(scratch))
		return -1;
	return sodium_init() < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	TcResult r = tc_sh(NULL, NULL, "rm -rf '%s'", scratch);

	tc_result_free(&r);
	return 0;
}

static const char *sp(const char *name)
{
	static char buf[4][256];
	static int slot;
	char *b = buf[slot++ % 4];

	snprintf(b, 256, "%s/%s", scratch, name);
	return b;
}

/* ---- base64, hex ---- */

static void test_base64_rfc4648(void **state)
{
	/* RFC 4648 section 10 */
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const enc[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };

	for (size_t i = 0; i < 7; i++) {
		char out[16];
		uint8_t dec[16];
		size_t n;

		assert_int_equal(format_b64_len(strlen(plain[i])), strlen(enc[i]));
		format_b64_encode(out, (const uint8_t *)plain[i], strlen(plain[i]));
		assert_string_equal(out, enc[i]);
		assert_int_equal(format_b64_decode(dec, sizeof(dec), &n, enc[i], strlen(enc[i])), 0);
		assert_int_equal(n, strlen(plain[i]));
		assert_memory_equal(dec, plain[i], n);
	}
}

static void test_base64_rejects(void **state)
{
	static const char *const bad[] = {
		"Zg=",      /* short padding */
		"Zg",       /* missing padding */
		"Z",        /* one char */
		"Zh==",     /* non-zero trailing bits */
		"Zm9=",     /* non-zero trailing bits */
		"Zg==Zg==", /* data after padding */
		"Zm9v!",    /* bad character */
		"Zg===",    /* too much padding */
		"Zm-v",     /* URL alphabet */
	};
	uint8_t out[16];
	size_t n;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(format_b64_decode(out, sizeof(out), &n, bad[i], strlen(bad[i])), -1);
	/* capacity is enforced */
	assert_int_equal(format_b64_decode(out, 5, &n, "Zm9vYmFy", 8), -1);
	/* whitespace is skipped */
	assert_int_equal(format_b64_decode(out, sizeof(out), &n, "Zm9v\nYmFy\r\n", 11), 0);
	assert_int_equal(n, 6);
	assert_memory_equal(out, "foobar", 6);
}

static void test_base64_hex_roundtrip(void **state)
{
	for (size_t len = 0; len < 200; len++) {
		uint8_t in[200], dec[200];
		char b64[300], hex[401];
		size_t n;

		th_randbytes(in, len);
		format_b64_encode(b64, in, len);
		assert_int_equal(format_b64_decode(dec, sizeof(dec), &n, b64, strlen(b64)), 0);
		assert_int_equal(n, len);
		assert_memory_equal(dec, in, len);
		format_hex_encode(hex, in, len);
		assert_int_equal(strlen(hex), 2 * len);
		assert_int_equal(format_hex_decode(dec, len, hex, 2 * len), 0);
		assert_memory_equal(dec, in, len);
	}
	{
		uint8_t out[2] = { 0xaa, 0xbb };

		assert_int_equal(format_hex_decode(out, 2, "0g12", 4), -1);
		assert_int_equal(format_hex_decode(out, 2, "012", 3), -1);
		assert_int_equal(out[0], 0xaa); /* untouched on failure */
		assert_int_equal(format_hex_decode(out, 2, "A0fF", 4), 0);
		assert_int_equal(out[0], 0xa0);
		assert_int_equal(out[1], 0xff);
	}
}

/* ---- local keys for the tool interop ---- */

typedef struct Kp {
	uint8_t seed[32], pk[32], sk[64];
} Kp;

static void kp_random(Kp *k)
{
	th_randbytes(k->seed, 32);
	sigil_ed25519_keypair_from_seed(k->pk, k->sk, k->seed);
}

static const char msg_text[] = "sigil release artifact\n";

/* ---- SSHSIG ---- */

static void test_sshsig_layout(void **state)
{
	uint8_t digest[64], *sd;
	size_t n;

	memset(digest, 0x5a, sizeof(digest));
	sd = format_sshsig_signed_data(&n, "file", "sha512", digest, 64);
	assert_non_null(sd);
	/* "SSHSIG" string("file") string("") string("sha512") string(digest) */
	assert_int_equal(n, 6 + 4 + 4 + 4 + 0 + 4 + 6 + 4 + 64);
	assert_memory_equal(sd, "SSHSIG\0\0\0\4file\0\0\0\0\0\0\0\6sha512\0\0\0\100", 6 + 8 + 4 + 10 + 4);
	assert_memory_equal(sd + n - 64, digest, 64);
	free(sd);
	/* refused: empty namespace, wrong digest length, unknown hash */
	assert_null(format_sshsig_signed_data(&n, "", "sha512", digest, 64));
	assert_null(format_sshsig_signed_data(&n, "file", "sha512", digest, 32));
	assert_null(format_sshsig_signed_data(&n, "file", "md5", digest, 16));
}

static void test_sshsig_roundtrip(void **state)
{
	uint8_t pk[32], sig[64];
	FormatSshsig s;
	const char *why;
	char *a;

	th_randbytes(pk, 32);
	th_randbytes(sig, 64);
	a = format_sshsig_armor(pk, "release@example.org", "sha512", sig);
	assert_non_null(a);
	assert_true(strncmp(a, "-----BEGIN SSH SIGNATURE-----\n", 30) == 0);
	assert_non_null(strstr(a, "\n-----END SSH SIGNATURE-----\n"));
	assert_int_equal(format_sshsig_parse(&s, a, strlen(a), &why), 0);
	assert_memory_equal(s.pk, pk, 32);
	assert_memory_equal(s.sig, sig, 64);
	assert_string_equal(s.ns, "release@example.org");
	assert_string_equal(s.hashalg, "sha512");
	/* every line of the armor body is at most 70 characters */
	for (char *p = strchr(a, '\n') + 1; *p != '-'; p = strchr(p, '\n') + 1)
		assert_true(strchr(p, '\n') - p <= 70);
	/* truncations and corruptions are refused, never crash */
	for (size_t cut = 0; cut < strlen(a); cut += 7)
		(void)format_sshsig_parse(&s, a, cut, &why);
	a[40] = a[40] == 'A' ? 'B' : 'A';
	(void)format_sshsig_parse(&s, a, strlen(a), &why);
	free(a);
	assert_int_equal(format_sshsig_parse(&s, "hello", 5, &why), -1);
	assert_non_null(why);
}

static void test_sshsig_from_ssh_keygen(void **state)
{
	FormatSshsig s;
	FormatPubkey p;
	uint8_t seed[32], pk[32], sk[64], digest[64], *sd;
	const char *why;
	char *text;
	size_t len, sdlen;
	TcResult r;

	tc_need_tool("ssh-keygen");
	tc_write_file(sp("msg"), msg_text, strlen(msg_text));
	r = tc_sh(scratch, NULL, "rm -f k k.pub && ssh-keygen -q -t ed25519 -N '' -C test -f k && "
	                         "ssh-keygen -Y sign -f k -n file msg");
	tc_expect(&r, 0);
	tc_result_free(&r);

	/* the public key file */
	text = tc_read_file(sp("k.pub"), &len);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)text, len, NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_OPENSSH);
	free(text);
	/* the private key file gives the seed of that public key */
	text = tc_read_file(sp("k"), &len);
	assert_int_equal(format_seed_parse(seed, FORMAT_SK_AUTO, (uint8_t *)text, len, &why), 0);
	free(text);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	assert_memory_equal(pk, p.pk, 32);
	/* the signature verifies with sigil's crypto */
	text = tc_read_file(sp("msg.sig"), &len);
	assert_int_equal(format_sshsig_parse(&s, text, len, &why), 0);
	free(text);
	assert_memory_equal(s.pk, p.pk, 32);
	assert_string_equal(s.ns, "file");
	sigil_sha512(digest, (const uint8_t *)msg_text, strlen(msg_text));
	sd = format_sshsig_signed_data(&sdlen, s.ns, s.hashalg, digest, 64);
	assert_non_null(sd);
	assert_int_equal(sigil_ed25519_verify(s.sig, sd, sdlen, p.pk, SIGIL_ED25519_STRICT), 0);
	sd[sdlen - 1] ^= 1;
	assert_int_equal(sigil_ed25519_verify(s.sig, sd, sdlen, p.pk, SIGIL_ED25519_STRICT), -1);
	free(sd);
	sigil_wipe(seed, 32);
	sigil_wipe(sk, 64);
}

static void test_sshsig_to_ssh_keygen(void **state)
{
	uint8_t digest[64], sig[64], *sd;
	char *armor, *allowed;
	size_t sdlen;
	TcResult r;
	Kp k;

	tc_need_tool("ssh-keygen");
	kp_random(&k);
	tc_write_file(sp("msg2"), msg_text, strlen(msg_text));
	sigil_sha512(digest, (const uint8_t *)msg_text, strlen(msg_text));
	sd = format_sshsig_signed_data(&sdlen, "file", "sha512", digest, 64);
	assert_non_null(sd);
	sigil_ed25519_sign(sig, sd, sdlen, k.sk);
	free(sd);
	armor = format_sshsig_armor(k.pk, "file", "sha512", sig);
	allowed = format_allowed_signers("rel@example.org", "file", k.pk);
	assert_non_null(armor);
	assert_non_null(allowed);
	tc_write_file(sp("msg2.sig"), armor, strlen(armor));
	tc_write_file(sp("allowed"), allowed, strlen(allowed));
	r = tc_sh(scratch, NULL, "ssh-keygen -Y verify -f allowed -I rel@example.org -n file -s msg2.sig < msg2");
	tc_expect(&r, 0);
	tc_result_free(&r);
	/* wrong namespace and tampered file fail */
	r = tc_sh(scratch, NULL, "ssh-keygen -Y verify -f allowed -I rel@example.org -n git -s msg2.sig < msg2");
	assert_int_not_equal(r.status, 0);
	tc_result_free(&r);
	r = tc_sh(scratch, NULL, "printf x >> msg2 && ssh-keygen -Y verify -f allowed -I rel@example.org -n file -s msg2.sig < msg2");
	assert_int_not_equal(r.status, 0);
	tc_result_free(&r);
	free(armor);
	free(allowed);
	sigil_wipe(&k, sizeof(k));
}

/* ---- minisign ---- */

static void test_minisign_from_tool(void **state)
{
	FormatMinisign m;
	FormatPubkey p;
	uint8_t seed[32], pk[32], sk[64], h[64], *gm;
	const char *why;
	char *text;
	size_t len, tl;
	TcResult r;

	tc_need_tool("minisign");
	tc_write_file(sp("msg3"), msg_text, strlen(msg_text));
	r = tc_sh(scratch, NULL, "rm -f m.pub m.key && minisign -G -W -p m.pub -s m.key && "
	                         "minisign -S -s m.key -m msg3 -t 'release 1.0'");
	tc_expect(&r, 0);
	tc_result_free(&r);
	text = tc_read_file(sp("m.pub"), &len);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)text, len, NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_KEYNUM);
	assert_true(p.has_keynum);
	free(text);
	text = tc_read_file(sp("m.key"), &len);
	assert_int_equal(format_seed_parse(seed, FORMAT_SK_MINISIGN, (uint8_t *)text, len, &why), 0);
	free(text);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	assert_memory_equal(pk, p.pk, 32);
	text = tc_read_file(sp("msg3.minisig"), &len);
	assert_int_equal(format_minisign_parse(&m, text, len, &why), 0);
	free(text);
	assert_true(m.prehashed);
	assert_memory_equal(m.keynum, p.keynum, 8);
	assert_string_equal(m.trusted_comment, "release 1.0");
	crypto_generichash(h, 64, (const uint8_t *)msg_text, strlen(msg_text), NULL, 0);
	assert_int_equal(sigil_ed25519_verify(m.sig, h, 64, p.pk, SIGIL_ED25519_STRICT), 0);
	tl = strlen(m.trusted_comment);
	gm = malloc(64 + tl);
	assert_non_null(gm);
	memcpy(gm, m.sig, 64);
	memcpy(gm + 64, m.trusted_comment, tl);
	assert_int_equal(sigil_ed25519_verify(m.global_sig, gm, 64 + tl, p.pk, SIGIL_ED25519_STRICT), 0);
	free(gm);
	sigil_wipe(seed, 32);
	sigil_wipe(sk, 64);
}

static void test_minisign_to_tool(void **state)
{
	static const char tc[] = "timestamp:1700000000\tfile:msg4\thashed";
	uint8_t h[64], sig[64], gsig[64], keynum[8], gm[64 + sizeof(tc) - 1];
	FormatMinisign m;
	const char *why;
	char *pub, *file;
	TcResult r;
	Kp k;

	tc_need_tool("minisign");
	kp_random(&k);
	format_keynum(keynum, k.pk);
	crypto_generichash(h, 64, (const uint8_t *)msg_text, strlen(msg_text), NULL, 0);
	sigil_ed25519_sign(sig, h, 64, k.sk);
	memcpy(gm, sig, 64);
	memcpy(gm + 64, tc, sizeof(tc) - 1);
	sigil_ed25519_sign(gsig, gm, sizeof(gm), k.sk);
	pub = format_minisign_pubkey(k.pk);
	file = format_minisign_sig(keynum, sig, "signature from sigil", tc, gsig);
	assert_non_null(pub);
	assert_non_null(file);
	assert_int_equal(format_minisign_parse(&m, file, strlen(file), &why), 0);
	assert_string_equal(m.trusted_comment, tc);
	tc_write_file(sp("msg4"), msg_text, strlen(msg_text));
	tc_write_file(sp("msg4.minisig"), file, strlen(file));
	tc_write_file(sp("s.pub"), pub, strlen(pub));
	r = tc_sh(scratch, NULL, "minisign -V -p s.pub -m msg4");
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "file:msg4"));
	tc_result_free(&r);
	/* a changed trusted comment breaks the global signature */
	file[strstr(file, "timestamp:") - file + 10] = '2';
	tc_write_file(sp("msg4.minisig"), file, strlen(file));
	r = tc_sh(scratch, NULL, "minisign -V -p s.pub -m msg4");
	assert_int_not_equal(r.status, 0);
	tc_result_free(&r);
	free(pub);
	free(file);
	sigil_wipe(&k, sizeof(k));
}

/* The trusted comment is verified as the exact bytes of its line: a NUL
 * (which would cut the C string that is verified and shown) and a CR left
 * after the line end are refused by the parser, and the encoders refuse to
 * write a CR or LF in any comment (regressions in tests/fuzz/regressions/
 * minisign/trusted-comment-with-nul and trusted-comment-trailing-cr). */
static void test_minisign_comment_bytes(void **state)
{
	uint8_t keynum[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, sig[64], gsig[64];
	FormatMinisign m;
	const char *why;
	char *file, *p;
	size_t len;

	(void)state;
	memset(sig, 0x5a, sizeof(sig));
	memset(gsig, 0xa5, sizeof(gsig));
	file = format_minisign_sig(keynum, sig, "u", "abcdef", gsig);
	assert_non_null(file);
	len = strlen(file);
	p = strstr(file, "abcdef");
	assert_non_null(p);
	/* the file as written parses back, CRLF line ends too */
	assert_int_equal(format_minisign_parse(&m, file, len, &why), 0);
	assert_string_equal(m.trusted_comment, "abcdef");
	/* a NUL inside the comment: refused, not cut to "abc" */
	p[3] = '\0';
	assert_int_equal(format_minisign_parse(&m, file, len, &why), -1);
	assert_non_null(why);
	assert_non_null(strstr(why, "NUL"));
	/* "abcde\r" + "\r\n": one CR ends the line, the other is refused */
	p[3] = 'd';
	p[5] = '\r';
	{
		char *crlf;

		assert_true(asprintf(&crlf, "%.*s\r\n%s", (int)(p + 6 - file), file, p + 7) > 0);
		assert_int_equal(format_minisign_parse(&m, crlf, strlen(crlf), &why), -1);
		assert_non_null(why);
		free(crlf);
		p[5] = 'f';
		assert_true(asprintf(&crlf, "%.*s\r\n%s", (int)(p + 6 - file), file, p + 7) > 0);
		assert_int_equal(format_minisign_parse(&m, crlf, strlen(crlf), &why), 0);
		assert_string_equal(m.trusted_comment, "abcdef");
		free(crlf);
	}
	free(file);
	/* the encoders do not write a comment they could not read back */
	assert_null(format_minisign_sig(keynum, sig, "u", "ends in CR\r", gsig));
	assert_null(format_minisign_sig(keynum, sig, "u", "two\nlines", gsig));
	assert_null(format_minisign_sig(keynum, sig, "u\r", "t", gsig));
	assert_null(format_minisign_sig(keynum, sig, "u\nv", "t", gsig));
	assert_null(format_signify_sig(keynum, sig, "c\r"));
	assert_null(format_signify_pubkey(sig, "two\nlines"));
}

/* ---- signify ---- */

static void test_signify_both_ways(void **state)
{
	FormatSignify s;
	FormatPubkey p;
	uint8_t seed[32], pk[32], sk[64], sig[64], keynum[8];
	const char *why;
	char *text, *pub, *file;
	size_t len;
	TcResult r;
	Kp k;

	tc_need_tool("signify-openbsd");
	tc_write_file(sp("msg5"), msg_text, strlen(msg_text));
	/* from the tool */
	r = tc_sh(scratch, NULL, "rm -f f.pub f.sec && signify-openbsd -G -n -p f.pub -s f.sec && "
	                         "signify-openbsd -S -s f.sec -m msg5 -x msg5.sig");
	tc_expect(&r, 0);
	tc_result_free(&r);
	text = tc_read_file(sp("f.pub"), &len);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)text, len, NULL, &why), 0);
	free(text);
	text = tc_read_file(sp("f.sec"), &len);
	assert_int_equal(format_seed_parse(seed, FORMAT_SK_SIGNIFY, (uint8_t *)text, len, &why), 0);
	free(text);
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	assert_memory_equal(pk, p.pk, 32);
	text = tc_read_file(sp("msg5.sig"), &len);
	assert_int_equal(format_signify_parse(&s, text, len, &why), 0);
	free(text);
	assert_memory_equal(s.keynum, p.keynum, 8);
	assert_int_equal(sigil_ed25519_verify(s.sig, (const uint8_t *)msg_text, strlen(msg_text), p.pk,
	                                      SIGIL_ED25519_STRICT), 0);

	/* to the tool */
	kp_random(&k);
	format_keynum(keynum, k.pk);
	sigil_ed25519_sign(sig, (const uint8_t *)msg_text, strlen(msg_text), k.sk);
	pub = format_signify_pubkey(k.pk, "sigil test public key");
	file = format_signify_sig(keynum, sig, "verify with g.pub");
	tc_write_file(sp("g.pub"), pub, strlen(pub));
	tc_write_file(sp("msg5.sig"), file, strlen(file));
	r = tc_sh(scratch, NULL, "signify-openbsd -V -p g.pub -x msg5.sig -m msg5");
	tc_expect(&r, 0);
	tc_result_free(&r);
	r = tc_sh(scratch, NULL, "printf x >> msg5 && signify-openbsd -V -p g.pub -x msg5.sig -m msg5");
	assert_int_not_equal(r.status, 0);
	tc_result_free(&r);
	free(pub);
	free(file);
	sigil_wipe(seed, 32);
	sigil_wipe(sk, 64);
	sigil_wipe(&k, sizeof(k));
}

/* ---- public keys ---- */

static void test_pubkey_kinds(void **state)
{
	uint8_t pk[32];
	char hex[65], b64[45], *text;
	FormatPubkey p;
	const char *why;

	th_randbytes(pk, 32);
	assert_int_equal(format_pubkey_parse(&p, pk, 32, NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_RAW);
	assert_memory_equal(p.pk, pk, 32);
	format_hex_encode(hex, pk, 32);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)hex, 64, NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_HEX);
	assert_memory_equal(p.pk, pk, 32);
	format_b64_encode(b64, pk, 32);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)b64, strlen(b64), NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_BASE64);
	assert_memory_equal(p.pk, pk, 32);

	text = format_openssh_pubkey(pk, "sigil:rel");
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)text, strlen(text), NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_OPENSSH);
	assert_memory_equal(p.pk, pk, 32);
	free(text);
	text = format_minisign_pubkey(pk);
	assert_int_equal(format_pubkey_parse(&p, (uint8_t *)text, strlen(text), NULL, &why), 0);
	assert_int_equal(p.kind, FORMAT_PK_KEYNUM);
	assert_memory_equal(p.pk, pk, 32);
	{
		uint8_t kn[8];

		format_keynum(kn, pk);
		assert_memory_equal(p.keynum, kn, 8);
	}
	free(text);

	/* allowed_signers: the principal picks the line */
	{
		uint8_t pk2[32];
		char *l1, *l2, *both;

		th_randbytes(pk2, 32);
		l1 = format_allowed_signers("alice@example.org,ci", NULL, pk);
		l2 = format_allowed_signers("bob", "file", pk2);
		assert_int_not_equal(asprintf(&both, "# comment\n%s\n%s", l1, l2), -1);
		assert_int_equal(format_pubkey_parse(&p, (uint8_t *)both, strlen(both), "bob", &why), 0);
		assert_memory_equal(p.pk, pk2, 32);
		assert_int_equal(format_pubkey_parse(&p, (uint8_t *)both, strlen(both), "ci", &why), 0);
		assert_memory_equal(p.pk, pk, 32);
		assert_int_equal(format_pubkey_parse(&p, (uint8_t *)both, strlen(both), "carol", &why), -1);
		free(l1);
		free(l2);
		free(both);
	}
	assert_int_equal(format_pubkey_parse(&p, (const uint8_t *)"nonsense", 8, NULL, &why), -1);
	assert_int_equal(format_pubkey_parse(&p, (const uint8_t *)"untrusted comment: x\nAAAA\n", 26, NULL, &why), -1);
}

static void test_seed_formats(void **state)
{
	uint8_t seed[32], got[32];
	char hex[65];
	const char *why;
	TcResult r;
	char *text;
	size_t len;

	th_randbytes(seed, 32);
	format_hex_encode(hex, seed, 32);
	assert_int_equal(format_seed_parse(got, FORMAT_SK_AUTO, (uint8_t *)hex, 64, &why), 0);
	assert_memory_equal(got, seed, 32);
	assert_int_equal(format_seed_parse(got, FORMAT_SK_AUTO, seed, 32, &why), 0);
	assert_memory_equal(got, seed, 32);
	hex[5] = 'x';
	assert_int_equal(format_seed_parse(got, FORMAT_SK_HEX, (uint8_t *)hex, 64, &why), -1);

	/* an encrypted OpenSSH key is refused with a reason */
	tc_need_tool("ssh-keygen");
	r = tc_sh(scratch, NULL, "rm -f e e.pub && ssh-keygen -q -t ed25519 -N secret-passphrase -f e");
	tc_expect(&r, 0);
	tc_result_free(&r);
	text = tc_read_file(sp("e"), &len);
	assert_int_equal(format_seed_parse(got, FORMAT_SK_AUTO, (uint8_t *)text, len, &why), -1);
	assert_non_null(strstr(why, "encrypted"));
	free(text);
	/* an RSA key is refused */
	r = tc_sh(scratch, NULL, "rm -f rsa rsa.pub && ssh-keygen -q -t rsa -b 1024 -N '' -f rsa");
	tc_expect(&r, 0);
	tc_result_free(&r);
	text = tc_read_file(sp("rsa"), &len);
	assert_int_equal(format_seed_parse(got, FORMAT_SK_OPENSSH, (uint8_t *)text, len, &why), -1);
	free(text);
	assert_int_equal(format_seed_parse(got, FORMAT_SK_AUTO, (const uint8_t *)"junk", 4, &why), -1);
}

/* Random corruption of valid files: parsers must refuse or accept, never
 * crash or read out of bounds (run under valgrind or ASan to see it). */
static void test_parsers_survive_garbage(void **state)
{
	uint8_t pk[32], sig[64], kn[8];
	char *files[4];
	const char *why;

	th_randbytes(pk, 32);
	th_randbytes(sig, 64);
	format_keynum(kn, pk);
	files[0] = format_sshsig_armor(pk, "file", "sha512", sig);
	files[1] = format_minisign_sig(kn, sig, "u", "t", sig);
	files[2] = format_signify_sig(kn, sig, "c");
	files[3] = format_openssh_pubkey(pk, "c");
	for (int f = 0; f < 4; f++) {
		size_t len = strlen(files[f]);
		char *buf = malloc(len + 1);

		assert_non_null(buf);
		for (int i = 0; i < 2000; i++) {
			FormatSshsig s;
			FormatMinisign m;
			FormatSignify g;
			FormatPubkey p;
			uint8_t seed[32];
			size_t cut = th_rand_below(len + 1);

			memcpy(buf, files[f], len + 1);
			for (int j = 0; j < 3; j++)
				buf[th_rand_below(len)] = (char)th_rand64();
			(void)format_sshsig_parse(&s, buf, cut, &why);
			(void)format_minisign_parse(&m, buf, cut, &why);
			(void)format_signify_parse(&g, buf, cut, &why);
			(void)format_pubkey_parse(&p, (uint8_t *)buf, cut, NULL, &why);
			(void)format_seed_parse(seed, FORMAT_SK_AUTO, (uint8_t *)buf, cut, &why);
		}
		free(buf);
		free(files[f]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base64_rfc4648),
		cmocka_unit_test(test_base64_rejects),
		cmocka_unit_test(test_base64_hex_roundtrip),
		cmocka_unit_test(test_sshsig_layout),
		cmocka_unit_test(test_sshsig_roundtrip),
		cmocka_unit_test(test_sshsig_from_ssh_keygen),
		cmocka_unit_test(test_sshsig_to_ssh_keygen),
		cmocka_unit_test(test_minisign_from_tool),
		cmocka_unit_test(test_minisign_to_tool),
		cmocka_unit_test(test_minisign_comment_bytes),
		cmocka_unit_test(test_signify_both_ways),
		cmocka_unit_test(test_pubkey_kinds),
		cmocka_unit_test(test_seed_formats),
		cmocka_unit_test(test_parsers_survive_garbage),
	};

	return th_run_fixture(tests, setup, teardown);
}
