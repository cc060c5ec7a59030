/* SPDX-License-Identifier: MIT */
/*
 * test-cli.c - the sigil command against the real sigild and the real
 * tools: every subcommand, the exit codes, signatures made by `sigil sign`
 * checked by ssh-keygen -Y verify, minisign -V, signify -V (and OpenSSL for
 * raw pure Ed25519), signatures made by those tools with an imported key
 * checked by `sigil verify`, tampered files refused everywhere.
 *
 * With the argument "big": a 1 GiB file is signed (sshsig, minisign, raw
 * Ed25519ph) and verified, and the peak RSS of the sigil process and of
 * sigild is printed and bounded.
 */
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "format.h"
#include "harness.h"
#include "tc.h"

static TcDaemon dmn;
static char work[600];
static char sigil[1100];

static int group_setup(void **state)
{
	snprintf(sigil, sizeof(sigil), "%s", tc_build_path("client/sigil"));
	tc_daemon_start(&dmn);
	snprintf(work, sizeof(work), "%s/work", dmn.dir);
	if (mkdir(work, 0700) < 0)
		return -1;
	return 0;
}

static int group_teardown(void **state)
{
	return tc_daemon_stop(&dmn);
}

/* runs a command in the work directory with SIGIL_SOCK set and $SIGIL the
 * sigil binary */
#define RUN(...) tc_sh(work, dmn.sock, "SIGIL='%s'; " __VA_ARGS__)
#define EXPECT(want, ...)                                   \
	do {                                                \
		TcResult r_ = RUN(__VA_ARGS__);             \
		tc_expect(&r_, (want));                     \
		tc_result_free(&r_);                        \
	} while (0)

static const char data_text[] = "release 1.2.3 of something important\n";

static void write_data(const char *name)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", work, name);
	tc_write_file(path, data_text, strlen(data_text));
}

static char *read_work(const char *name, size_t *lenp)
{
	char path[700];

	snprintf(path, sizeof(path), "%s/%s", work, name);
	return tc_read_file(path, lenp);
}

static void test_help_and_usage(void **state)
{
	static const char *const cmds[] = { "keygen", "import", "list", "pubkey", "delete", "sign",
		                            "verify", "dh", "lock", "unlock", "status" };
	TcResult r;

	r = RUN("\"$SIGIL\" --help", sigil);
	tc_expect(&r, 0);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		assert_non_null(strstr(r.out, cmds[i]));
	tc_result_free(&r);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		char want[64];

		r = RUN("\"$SIGIL\" %s --help", sigil, cmds[i]);
		tc_expect(&r, 0);
		snprintf(want, sizeof(want), "Usage: sigil %s", cmds[i]);
		assert_non_null(strstr(r.out, want));
		assert_non_null(strstr(r.out, "Exit codes"));
		tc_result_free(&r);
		r = RUN("\"$SIGIL\" help %s", sigil, cmds[i]);
		tc_expect(&r, 0);
		tc_result_free(&r);
	}
	EXPECT(2, "\"$SIGIL\"", sigil);
	EXPECT(2, "\"$SIGIL\" frobnicate", sigil);
	EXPECT(2, "\"$SIGIL\" sign data", sigil);               /* no --key */
	EXPECT(2, "\"$SIGIL\" sign --key k --format pgp data", sigil);
	EXPECT(2, "\"$SIGIL\" keygen", sigil);
	EXPECT(2, "\"$SIGIL\" keygen --type rsa k", sigil);
	EXPECT(2, "\"$SIGIL\" verify data", sigil);             /* no key */
	EXPECT(2, "\"$SIGIL\" list --bogus", sigil);
	EXPECT(2, "\"$SIGIL\" --timeout 0 list", sigil);
	r = RUN("\"$SIGIL\" --version", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "sigil "));
	tc_result_free(&r);
}

static void test_unreachable(void **state)
{
	TcResult r;

	EXPECT(3, "\"$SIGIL\" -s /nonexistent/sigild.sock status", sigil);
	EXPECT(3, "SIGIL_SOCK=/nonexistent/sock \"$SIGIL\" list", sigil);
	EXPECT(3, "\"$SIGIL\" keygen --socket=/nonexistent/sock k", sigil);
	r = RUN("\"$SIGIL\" --json -s /nonexistent/sock status", sigil);
	tc_expect(&r, 3);
	assert_non_null(strstr(r.out, "\"error\":\"connect_failed\""));
	tc_result_free(&r);
	/* a server that accepts and never answers: --timeout gives up, exit 3 */
	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		char path[700];
		int lfd = socket(AF_UNIX, SOCK_STREAM, 0);

		snprintf(path, sizeof(path), "%s/silent.sock", work);
		assert_true(lfd >= 0 && strlen(path) < sizeof(sa.sun_path));
		memcpy(sa.sun_path, path, strlen(path) + 1);
		assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		assert_int_equal(listen(lfd, 4), 0);
		r = RUN("\"$SIGIL\" --timeout 300 -s silent.sock status", sigil);
		tc_expect(&r, 3);
		assert_non_null(strstr(r.out, "timeout"));
		tc_result_free(&r);
		close(lfd);
		unlink(path);
	}
}

/* Every --json output is one valid JSON document (checked by Python's json). */
static void test_json_valid(void **state)
{
	static const char *const cmds[] = {
		"keygen json-k",
		"keygen --type x25519 json-x",
		"list",
		"status",
		"pubkey json-k",
		"pubkey --format minisign json-k",
		"sign --key json-k --format minisign -t 'tab\there \"quoted\" back\\\\slash' jdata",
		"verify --key json-k jdata jdata.minisig",
		"sign --key json-k jdata",
		"verify --key json-k jdata",
		"dh --key json-x 0900000000000000000000000000000000000000000000000000000000000000",
		"pubkey no-such-key",
		"verify --key json-k no-such-file",     /* exit 2: error document */
		"sign --key json-k --format pgp jdata",  /* usage error: error document */
		"--timeout 0 status",
		"delete json-k",
	};

	tc_need_tool("/usr/bin/python3");
	write_data("jdata");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		TcResult r = RUN("\"$SIGIL\" --json %s > out.json 2>/dev/null; "
		                 "/usr/bin/python3 -c 'import json,sys; json.load(open(\"out.json\"))' && cat out.json",
		                 sigil, cmds[i]);

		if (r.status != 0)
			printf("# sigil --json %s\n", cmds[i]);
		tc_expect(&r, 0);
		tc_result_free(&r);
	}
	{
		TcResult r = RUN("\"$SIGIL\" --json verify --key json-x no-such-file", sigil);

		tc_expect(&r, 2);
		assert_non_null(strstr(r.out, "{\"error\":\"usage\",\"message\":\"cannot read signature"));
		assert_non_null(strstr(r.out, "\"exit\":2}"));
		tc_result_free(&r);
	}
}

static void test_keys_roundtrip(void **state)
{
	TcResult r;

	r = RUN("\"$SIGIL\" --json keygen cli-k1", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "\"label\":\"cli-k1\""));
	assert_non_null(strstr(r.out, "\"type\":\"ed25519\""));
	tc_result_free(&r);
	EXPECT(4, "\"$SIGIL\" keygen cli-k1", sigil); /* exists */
	EXPECT(2, "\"$SIGIL\" keygen 'bad label'", sigil);
	r = RUN("\"$SIGIL\" list", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "cli-k1"));
	tc_result_free(&r);
	r = RUN("\"$SIGIL\" list --json", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "{\"keys\":["));
	tc_result_free(&r);
	r = RUN("\"$SIGIL\" pubkey cli-k1", sigil);
	tc_expect(&r, 0);
	assert_true(strncmp(r.out, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI", 37) == 0);
	assert_non_null(strstr(r.out, " sigil:cli-k1\n"));
	tc_result_free(&r);
	/* every export format describes the same key */
	{
		static const char *const fmts[] = { "openssh", "allowed-signers", "minisign", "signify",
			                            "hex", "base64", "raw" };
		uint8_t first[32];

		for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
			FormatPubkey p;
			const char *why;
			char *text;
			size_t len;

			EXPECT(0, "\"$SIGIL\" pubkey --format %s -o k1.%s cli-k1", sigil, fmts[i], fmts[i]);
			{
				char name[64];

				snprintf(name, sizeof(name), "k1.%s", fmts[i]);
				text = read_work(name, &len);
			}
			if (format_pubkey_parse(&p, (uint8_t *)text, len, NULL, &why) < 0)
				fail_msg("pubkey --format %s: %s", fmts[i], why);
			if (i == 0)
				memcpy(first, p.pk, 32);
			else
				assert_memory_equal(p.pk, first, 32);
			free(text);
		}
	}
	EXPECT(2, "\"$SIGIL\" pubkey --format pgp cli-k1", sigil);
	EXPECT(4, "\"$SIGIL\" pubkey no-such-key", sigil);
	EXPECT(0, "\"$SIGIL\" delete cli-k1", sigil);
	EXPECT(4, "\"$SIGIL\" delete cli-k1", sigil);
	EXPECT(4, "\"$SIGIL\" pubkey cli-k1", sigil);
}

static void test_status_lock_unlock(void **state)
{
	TcResult r;

	r = RUN("\"$SIGIL\" status --json", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "\"locked\":false"));
	assert_non_null(strstr(r.out, "\"protocol\":1"));
	tc_result_free(&r);
	r = RUN("\"$SIGIL\" status", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "locked:      no"));
	tc_result_free(&r);
	write_data("lockdata");
	EXPECT(0, "\"$SIGIL\" keygen cli-lock", sigil);
	EXPECT(0, "\"$SIGIL\" lock", sigil);
	r = RUN("\"$SIGIL\" status --json", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "\"locked\":true"));
	tc_result_free(&r);
	r = RUN("\"$SIGIL\" sign --key cli-lock lockdata", sigil);
	tc_expect(&r, 4);
	assert_non_null(strstr(r.out, "locked"));
	tc_result_free(&r);
	EXPECT(0, "printf 'a passphrase\\n' | \"$SIGIL\" unlock --passphrase-file -", sigil);
	EXPECT(0, "\"$SIGIL\" sign --key cli-lock lockdata", sigil);
	EXPECT(0, "\"$SIGIL\" lock && printf 'pw' > pw.txt && \"$SIGIL\" --json unlock --passphrase-file pw.txt", sigil);
	EXPECT(2, "\"$SIGIL\" unlock --passphrase-file no-such-file", sigil);
	EXPECT(2, "head -c 2000 /dev/zero | tr '\\0' x | \"$SIGIL\" unlock --passphrase-file -", sigil); /* too long */
	EXPECT(0, "\"$SIGIL\" unlock && \"$SIGIL\" sign --key cli-lock lockdata", sigil);
	/* a key file larger than any key file */
	EXPECT(2, "head -c 100000 /dev/zero | \"$SIGIL\" import too-big", sigil);
}

static void test_dh(void **state)
{
	uint8_t peer_sk[32], peer_pk[32], xpk[32], want[32];
	char peer_hex[65], want_hex[65], *text;
	size_t len;
	TcResult r;

	EXPECT(0, "\"$SIGIL\" keygen --type x25519 cli-x", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format raw -o x.raw cli-x", sigil);
	text = read_work("x.raw", &len);
	assert_int_equal(len, 32);
	memcpy(xpk, text, 32);
	free(text);
	th_randbytes(peer_sk, 32);
	sigil_x25519_public(peer_pk, peer_sk);
	assert_int_equal(sigil_x25519(want, peer_sk, xpk), 0);
	format_hex_encode(peer_hex, peer_pk, 32);
	format_hex_encode(want_hex, want, 32);
	r = RUN("\"$SIGIL\" dh --key cli-x %s", sigil, peer_hex);
	tc_expect(&r, 0);
	assert_true(strncmp(r.out, want_hex, 64) == 0);
	tc_result_free(&r);
	r = RUN("\"$SIGIL\" dh --json --key cli-x --peer %s", sigil, peer_hex);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, want_hex));
	tc_result_free(&r);
	/* the peer from a file */
	{
		char path[700];

		snprintf(path, sizeof(path), "%s/peer.hex", work);
		tc_write_file(path, peer_hex, 64);
		r = RUN("\"$SIGIL\" dh --key cli-x --peer-file peer.hex", sigil);
		tc_expect(&r, 0);
		assert_true(strncmp(r.out, want_hex, 64) == 0);
		tc_result_free(&r);
	}
	EXPECT(2, "\"$SIGIL\" dh --key cli-x --peer 1234", sigil);
	EXPECT(4, "\"$SIGIL\" dh --key no-such --peer %s", sigil, peer_hex);
	/* an x25519 key does not sign */
	write_data("xdata");
	EXPECT(4, "\"$SIGIL\" sign --key cli-x xdata", sigil);
	sigil_wipe(peer_sk, 32);
	sigil_wipe(want, 32);
}

/* sigil sign -> ssh-keygen, minisign, signify, OpenSSL; tampering fails. */
static void test_sign_interop(void **state)
{
	tc_need_tool("ssh-keygen");
	tc_need_tool("minisign");
	tc_need_tool("signify-openbsd");
	tc_need_tool("openssl");
	EXPECT(0, "\"$SIGIL\" keygen rel", sigil);
	write_data("app.tar");

	/* SSHSIG, the default */
	EXPECT(0, "\"$SIGIL\" sign --key rel app.tar && test -s app.tar.sig", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format allowed-signers --principal ci@example.org -n file rel > allowed_signers", sigil);
	EXPECT(0, "ssh-keygen -Y verify -f allowed_signers -I ci@example.org -n file -s app.tar.sig < app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel --policy zip215 app.tar", sigil);
	EXPECT(2, "\"$SIGIL\" verify --key rel --policy lax app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey rel > rel.pub && \"$SIGIL\" verify --pubkey rel.pub app.tar app.tar.sig", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey allowed_signers -I ci@example.org app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -n git app.tar", sigil); /* wrong namespace */
	EXPECT(0, "\"$SIGIL\" sign --key rel -n git -o app.tar.gitsig app.tar", sigil);
	/* allowed_signers restricts the key to namespace "file": "git" is refused there */
	EXPECT(255, "ssh-keygen -Y verify -f allowed_signers -I ci@example.org -n git -s app.tar.gitsig < app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format allowed-signers --principal ci@example.org rel > allowed_any && "
	          "ssh-keygen -Y verify -f allowed_any -I ci@example.org -n git -s app.tar.gitsig < app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel -n git -x app.tar.gitsig app.tar", sigil);
	/* from stdin to stdout */
	EXPECT(0, "\"$SIGIL\" sign --key rel - < app.tar > stdin.sig && \"$SIGIL\" verify --key rel -x stdin.sig app.tar", sigil);

	/* minisign */
	EXPECT(0, "\"$SIGIL\" sign --key rel --format minisign -t 'release 1.2.3' app.tar && test -s app.tar.minisig", sigil);
	/* a CR in a comment could not be read back the same (minisign strips it) */
	EXPECT(2, "\"$SIGIL\" sign --key rel --format minisign -t \"$(printf 'r1\\r')\" -o cr.minisig app.tar", sigil);
	EXPECT(2, "\"$SIGIL\" sign --key rel --format minisign -c \"$(printf 'u\\rv')\" -o cr.minisig app.tar", sigil);
	EXPECT(1, "test -e cr.minisig", sigil);
	EXPECT(0, "\"$SIGIL\" sign --key rel --format minisign -t r1 -c uv -o cr.minisig app.tar && rm cr.minisig", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format minisign rel > rel.minisign.pub", sigil);
	{
		TcResult r = RUN("minisign -V -p rel.minisign.pub -m app.tar", sigil);

		tc_expect(&r, 0);
		assert_non_null(strstr(r.out, "release 1.2.3"));
		tc_result_free(&r);
	}
	EXPECT(0, "\"$SIGIL\" verify --key rel --format minisign app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey rel.minisign.pub -x app.tar.minisig app.tar", sigil);

	/* signify */
	EXPECT(0, "\"$SIGIL\" sign --key rel --format signify -o app.tar.signify app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format signify rel > rel.signify.pub", sigil);
	EXPECT(0, "signify-openbsd -V -p rel.signify.pub -x app.tar.signify -m app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey rel.signify.pub -x app.tar.signify app.tar", sigil);

	/* raw, hex, base64: Ed25519ph by default */
	EXPECT(0, "\"$SIGIL\" sign --key rel --format raw -o app.tar.raw app.tar && test $(wc -c < app.tar.raw) -eq 64", sigil);
	EXPECT(0, "\"$SIGIL\" sign --key rel --format hex -o app.tar.hex app.tar && test $(wc -c < app.tar.hex) -eq 129", sigil);
	EXPECT(0, "\"$SIGIL\" sign --key rel --format base64 -o app.tar.b64 app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel -x app.tar.raw app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel -x app.tar.hex app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel --format base64 -x app.tar.b64 app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel --mode pure -x app.tar.raw app.tar", sigil);
	{
		/* the raw ph signature, checked with the local crypto */
		uint8_t pk[32];
		char *sig, *pkraw;
		size_t len;

		EXPECT(0, "\"$SIGIL\" pubkey --format raw -o rel.raw rel", sigil);
		pkraw = read_work("rel.raw", &len);
		assert_int_equal(len, 32);
		memcpy(pk, pkraw, 32);
		sig = read_work("app.tar.raw", &len);
		assert_int_equal(sigil_ed25519ph_verify((uint8_t *)sig, (const uint8_t *)data_text,
		                                        strlen(data_text), NULL, 0, pk, SIGIL_ED25519_STRICT), 0);
		free(sig);
		free(pkraw);
	}
	/* pure Ed25519 raw and OpenSSL: DER SubjectPublicKeyInfo prefix of Ed25519 (RFC 8410) */
	EXPECT(0, "\"$SIGIL\" sign --key rel --format raw --mode pure -o app.tar.pure app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel --mode pure -x app.tar.pure app.tar", sigil);
	EXPECT(0, "{ printf '\\060\\052\\060\\005\\006\\003\\053\\145\\160\\003\\041\\000'; cat rel.raw; } > rel.der && "
	          "openssl pkeyutl -verify -pubin -keyform DER -inkey rel.der -rawin -in app.tar -sigfile app.tar.pure", sigil);
	/* ctx mode with a context */
	EXPECT(0, "\"$SIGIL\" sign --key rel --format hex --mode ctx --context v1 -o app.tar.ctx app.tar", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key rel --mode ctx --context v1 -x app.tar.ctx app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel --mode ctx --context v2 -x app.tar.ctx app.tar", sigil);
	EXPECT(2, "\"$SIGIL\" sign --key rel --format hex --mode ctx app.tar", sigil); /* no context */

	/* --json */
	{
		TcResult r = RUN("\"$SIGIL\" --json verify --key rel app.tar", sigil);

		tc_expect(&r, 0);
		assert_non_null(strstr(r.out, "\"valid\":true"));
		assert_non_null(strstr(r.out, "\"format\":\"sshsig\""));
		tc_result_free(&r);
		r = RUN("\"$SIGIL\" sign --json --key rel -o j.sig app.tar", sigil);
		tc_expect(&r, 0);
		assert_non_null(strstr(r.out, "\"output\":\"j.sig\""));
		tc_result_free(&r);
	}

	/* a signature by another key is refused */
	EXPECT(0, "\"$SIGIL\" keygen other", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key other app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key other -x app.tar.raw app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key other -x app.tar.minisig app.tar", sigil);

	/* tampered file: everyone refuses */
	EXPECT(0, "printf 'x' >> app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -x app.tar.minisig app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -x app.tar.signify app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -x app.tar.raw app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -x app.tar.hex app.tar", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel --mode pure -x app.tar.pure app.tar", sigil);
	{
		TcResult r = RUN("ssh-keygen -Y verify -f allowed_signers -I ci@example.org -n file -s app.tar.sig < app.tar", sigil);

		assert_int_not_equal(r.status, 0);
		tc_result_free(&r);
		r = RUN("minisign -V -p rel.minisign.pub -m app.tar", sigil);
		assert_int_not_equal(r.status, 0);
		tc_result_free(&r);
		r = RUN("signify-openbsd -V -p rel.signify.pub -x app.tar.signify -m app.tar", sigil);
		assert_int_not_equal(r.status, 0);
		tc_result_free(&r);
		r = RUN("openssl pkeyutl -verify -pubin -keyform DER -inkey rel.der -rawin -in app.tar -sigfile app.tar.pure", sigil);
		assert_int_not_equal(r.status, 0);
		tc_result_free(&r);
	}
	/* a corrupt or missing signature file */
	EXPECT(0, "head -c 20 app.tar.minisig > broken.minisig", sigil);
	EXPECT(1, "\"$SIGIL\" verify --key rel -x broken.minisig app.tar", sigil);
	EXPECT(2, "\"$SIGIL\" verify --key rel -x nothing.sig app.tar", sigil);
	EXPECT(2, "\"$SIGIL\" verify --pubkey nothing.pub app.tar", sigil);
}

/* Keys made by the tools, imported into sigild: the tools' signatures
 * verify with sigil verify, and sigil's signatures with the tools. */
static void test_tool_keys_imported(void **state)
{
	tc_need_tool("ssh-keygen");
	tc_need_tool("minisign");
	tc_need_tool("signify-openbsd");
	write_data("doc.txt");

	/* OpenSSH */
	EXPECT(0, "ssh-keygen -q -t ed25519 -N '' -C ci -f idk && \"$SIGIL\" import ssh-imp idk", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey ssh-imp | cut -d' ' -f1,2 > a && cut -d' ' -f1,2 idk.pub > b && cmp a b", sigil);
	EXPECT(0, "ssh-keygen -Y sign -f idk -n file doc.txt", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key ssh-imp doc.txt", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey idk.pub doc.txt", sigil);
	/* SSHSIG with SHA-256 (ssh-keygen -O hashalg=sha256) */
	EXPECT(0, "ssh-keygen -Y sign -f idk -n file -O hashalg=sha256 < doc.txt > doc.txt.sha256sig && "
	          "grep -q 'BEGIN SSH SIGNATURE' doc.txt.sha256sig", sigil);
	{
		TcResult r = RUN("\"$SIGIL\" verify --pubkey idk.pub -x doc.txt.sha256sig doc.txt", sigil);

		tc_expect(&r, 0);
		assert_non_null(strstr(r.out, "sha256"));
		tc_result_free(&r);
	}
	EXPECT(0, "\"$SIGIL\" sign --key ssh-imp -o doc.txt.sigil.sig doc.txt && "
	          "echo \"ci $(cat idk.pub)\" > allowed && "
	          "ssh-keygen -Y verify -f allowed -I ci -n file -s doc.txt.sigil.sig < doc.txt", sigil);
	/* an encrypted key is refused with exit 2 */
	EXPECT(0, "ssh-keygen -q -t ed25519 -N hunter2hunter2 -f enc", sigil);
	EXPECT(2, "\"$SIGIL\" import enc-imp enc", sigil);
	/* from stdin, as hex */
	EXPECT(0, "head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n' | \"$SIGIL\" import hex-imp", sigil);

	/* minisign: its own key id, its own public key file */
	EXPECT(0, "minisign -G -W -p mk.pub -s mk.key && \"$SIGIL\" import --format minisign mini-imp mk.key", sigil);
	EXPECT(0, "minisign -S -s mk.key -m doc.txt -t 'by minisign'", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey mk.pub doc.txt doc.txt.minisig", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key mini-imp -x doc.txt.minisig doc.txt", sigil);
	/* the legacy (non-prehashed) form, minisign -l */
	EXPECT(0, "minisign -S -l -s mk.key -m doc.txt -x doc.legacy.minisig && "
	          "sed -n 2p doc.legacy.minisig | base64 -d | head -c 2 | grep -q Ed", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey mk.pub -x doc.legacy.minisig doc.txt", sigil);
	EXPECT(0, "\"$SIGIL\" sign --key mini-imp --format minisign -o doc.sigil.minisig doc.txt && "
	          "\"$SIGIL\" pubkey --format minisign mini-imp > mini-imp.pub && "
	          "minisign -V -p mini-imp.pub -x doc.sigil.minisig -m doc.txt", sigil);
	/* minisign's public key with sigil's key id: refused by key id */
	EXPECT(1, "\"$SIGIL\" verify --pubkey mk.pub -x doc.sigil.minisig doc.txt", sigil);

	/* signify */
	EXPECT(0, "signify-openbsd -G -n -p fk.pub -s fk.sec && \"$SIGIL\" import --format signify sfy-imp fk.sec", sigil);
	EXPECT(0, "signify-openbsd -S -s fk.sec -m doc.txt -x doc.txt.signify", sigil);
	EXPECT(0, "\"$SIGIL\" verify --pubkey fk.pub -x doc.txt.signify doc.txt", sigil);
	EXPECT(0, "\"$SIGIL\" verify --key sfy-imp --format signify -x doc.txt.signify doc.txt", sigil);

	/* tampered: sigil verify refuses the tools' signatures */
	EXPECT(0, "printf 'x' >> doc.txt", sigil);
	EXPECT(1, "\"$SIGIL\" verify --pubkey idk.pub doc.txt", sigil);
	EXPECT(1, "\"$SIGIL\" verify --pubkey mk.pub doc.txt doc.txt.minisig", sigil);
	EXPECT(1, "\"$SIGIL\" verify --pubkey mk.pub -x doc.legacy.minisig doc.txt", sigil);
	EXPECT(1, "\"$SIGIL\" verify --pubkey idk.pub -x doc.txt.sha256sig doc.txt", sigil);
	EXPECT(1, "\"$SIGIL\" verify --pubkey fk.pub -x doc.txt.signify doc.txt", sigil);
}

/* The README's CI example, verbatim in spirit: start sigild (it detaches
 * once it listens), import the release seed from a CI secret, sign; users
 * verify with ssh-keygen. */
static void test_ci_two_lines(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct ucred cred;
	socklen_t len = sizeof(cred);
	char sock[700];
	int fd;

	tc_need_tool("ssh-keygen");
	write_data("app-1.0.tar.gz");
	snprintf(sock, sizeof(sock), "%s/ci.sock", work);
	EXPECT(0, "export RELEASE_SEED_HEX=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \\n') && "
	          "'%s' --socket \"$PWD/ci.sock\" --state-dir \"$PWD/ci-state\" --allow-unlocked-memory && export SIGIL_SOCK=\"$PWD/ci.sock\"\n"
	          "printf %%s \"$RELEASE_SEED_HEX\" | \"$SIGIL\" import release && \"$SIGIL\" sign --key release app-1.0.tar.gz\n"
	          "\"$SIGIL\" pubkey --format allowed-signers release > allowed_signers.ci && "
	          "ssh-keygen -Y verify -f allowed_signers.ci -I release -n file -s app-1.0.tar.gz.sig < app-1.0.tar.gz",
	       sigil, tc_build_path("daemon/sigild"));
	/* stop the detached daemon: its pid from the socket's peer credentials */
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_true(strlen(sock) < sizeof(sa.sun_path));
	memcpy(sa.sun_path, sock, strlen(sock) + 1);
	assert_int_equal(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len), 0);
	close(fd);
	assert_true(cred.pid > 1);
	assert_int_equal(kill(cred.pid, SIGTERM), 0);
}

/* A progress bar on stderr when it is a terminal and the file is large
 * (>= 64 MiB), none otherwise. script(1) gives the command a terminal. */
static void test_progress_bar(void **state)
{
	TcResult r;

	tc_need_tool("script");
	EXPECT(0, "\"$SIGIL\" keygen prog-key && truncate -s 80M p80.bin && truncate -s 1M p1.bin", sigil);
	r = RUN("script -qec '\"'\"$SIGIL\"'\" sign --key prog-key p80.bin' /dev/null", sigil);
	tc_expect(&r, 0);
	assert_non_null(strstr(r.out, "p80.bin ["));
	assert_non_null(strstr(r.out, "100% 80/80 MiB"));
	tc_result_free(&r);
	/* small file on a terminal: no bar */
	r = RUN("script -qec '\"'\"$SIGIL\"'\" sign --key prog-key p1.bin' /dev/null", sigil);
	tc_expect(&r, 0);
	assert_null(strstr(r.out, "MiB"));
	tc_result_free(&r);
	/* large file, stderr not a terminal: no bar */
	r = RUN("\"$SIGIL\" sign --key prog-key -o p80.sig2 p80.bin", sigil);
	tc_expect(&r, 0);
	assert_null(strstr(r.out, "MiB"));
	tc_result_free(&r);
	EXPECT(0, "\"$SIGIL\" verify --key prog-key p80.bin && rm -f p80.bin p1.bin", sigil);
}

/* ---- 1 GiB ---- */

/* The client holds a 1 MiB read buffer plus its libraries (about 3 MiB
 * measured); the daemon only ever sees a digest, so its peak must not grow
 * by more than a few MiB while 1 GiB is signed. Loose enough for sanitizer
 * builds, far below what holding even a fraction of the file would take. */
#define BIG_CLIENT_MAX_KIB (16 * 1024)
#define BIG_DAEMON_GROWTH_MAX_KIB (16 * 1024)

static void run_big(const char *what, const char *cmd, long *maxp)
{
	TcResult r = tc_sh(work, dmn.sock, "SIGIL='%s'; exec %s", sigil, cmd);

	printf("# %s: exit %d, max RSS %ld KiB\n", what, r.status, r.maxrss_kib);
	tc_expect(&r, 0);
	if (r.maxrss_kib > *maxp)
		*maxp = r.maxrss_kib;
	tc_result_free(&r);
}

static void test_big_file(void **state)
{
	long client_max = 0, daemon_before, daemon_after;
	char big[700];
	TcResult r;

	tc_need_tool("ssh-keygen");
	tc_need_tool("minisign");
	snprintf(big, sizeof(big), "%s/big.bin", work);
	/* sparse: a header, then a hole up to 1 GiB */
	r = tc_sh(work, NULL, "printf 'sigil big file test\\n' > big.bin && truncate -s 1G big.bin");
	tc_expect(&r, 0);
	tc_result_free(&r);
	EXPECT(0, "\"$SIGIL\" keygen big-key", sigil);
	EXPECT(0, "\"$SIGIL\" pubkey --format allowed-signers --principal big big-key > big.allowed && "
	          "\"$SIGIL\" pubkey --format minisign big-key > big.minisign.pub", sigil);
	daemon_before = tc_daemon_hwm_kib(&dmn);

	run_big("sigil sign --format sshsig (1 GiB)", "\"$SIGIL\" sign --key big-key big.bin", &client_max);
	run_big("sigil sign --format minisign (1 GiB)", "\"$SIGIL\" sign --key big-key --format minisign big.bin", &client_max);
	run_big("sigil sign --format raw, Ed25519ph (1 GiB)", "\"$SIGIL\" sign --key big-key --format raw -o big.bin.raw big.bin", &client_max);
	run_big("sigil verify sshsig (1 GiB)", "\"$SIGIL\" verify --key big-key big.bin", &client_max);
	run_big("sigil verify raw (1 GiB)", "\"$SIGIL\" verify --key big-key -x big.bin.raw big.bin", &client_max);
	EXPECT(0, "ssh-keygen -Y verify -f big.allowed -I big -n file -s big.bin.sig < big.bin", sigil);
	EXPECT(0, "minisign -V -p big.minisign.pub -m big.bin", sigil);
	/* signify needs the whole file in memory: refused for 1 GiB, with a hint */
	{
		r = RUN("\"$SIGIL\" sign --key big-key --format signify big.bin", sigil);
		tc_expect(&r, 2);
		assert_non_null(strstr(r.out, "sshsig or minisign"));
		tc_result_free(&r);
	}
	daemon_after = tc_daemon_hwm_kib(&dmn);
	printf("# sigild peak RSS (VmHWM): %ld KiB before, %ld KiB after signing 1 GiB\n", daemon_before,
	       daemon_after);
	printf("# sigil peak RSS over all runs: %ld KiB (bound %d KiB)\n", client_max, BIG_CLIENT_MAX_KIB);
	assert_true(client_max > 0);
	assert_true(client_max < BIG_CLIENT_MAX_KIB);
	assert_true(daemon_before > 0);
	assert_true(daemon_after > 0);
	assert_true(daemon_after - daemon_before < BIG_DAEMON_GROWTH_MAX_KIB);
	/* the file changes in the hole: everything refuses */
	r = tc_sh(work, NULL, "printf 'X' | dd of=big.bin bs=1 seek=536870912 conv=notrunc 2>/dev/null");
	tc_expect(&r, 0);
	tc_result_free(&r);
	EXPECT(1, "\"$SIGIL\" verify --key big-key big.bin", sigil);
	r = RUN("minisign -V -p big.minisign.pub -m big.bin", sigil);
	assert_int_not_equal(r.status, 0);
	tc_result_free(&r);
	unlink(big);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help_and_usage),
		cmocka_unit_test(test_unreachable),
		cmocka_unit_test(test_keys_roundtrip),
		cmocka_unit_test(test_json_valid),
		cmocka_unit_test(test_status_lock_unlock),
		cmocka_unit_test(test_dh),
		cmocka_unit_test(test_sign_interop),
		cmocka_unit_test(test_tool_keys_imported),
		cmocka_unit_test(test_ci_two_lines),
		cmocka_unit_test(test_progress_bar),
	};
	const struct CMUnitTest big_tests[] = {
		cmocka_unit_test(test_big_file),
	};

	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && strcmp(argv[1], "big") == 0)
		return th_run_fixture(big_tests, group_setup, group_teardown);
	return th_run_fixture(tests, group_setup, group_teardown);
}
