/* SPDX-License-Identifier: MIT */
/*
 * age-cmd.c - the sigil command's age parts (age-cmd.h, docs/age.md)
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "age-cmd.h"
#include "bech32.h"
#include "cli.h"

/* an age file moved with export --to holds one key: small */
#define WRAPPED_MAX (1u << 20)
#define IDENTITY_MAX 256

char *age_cmd_pubkey_text(const sigil_key_info *k, bool identity)
{
	char rcpt[128], id[IDENTITY_MAX], *text = NULL;

	if (bech32_encode(rcpt, sizeof(rcpt), AGE_HRP_RECIPIENT, k->public_key, 32, false) < 0)
		return NULL;
	if (!identity) {
		if (asprintf(&text, "%s\n", rcpt) < 0)
			return NULL;
		return text;
	}
	if (bech32_encode(id, sizeof(id), AGE_HRP_IDENTITY, (const uint8_t *)k->label, strlen(k->label), true) < 0)
		return NULL;
	if (asprintf(&text, "# sigil key %s (age-plugin-sigil asks sigild to unwrap)\n# recipient: %s\n%s\n", k->label,
	             rcpt, id) < 0)
		return NULL;
	return text;
}

int age_cmd_parse_secret(uint8_t seed[32], const uint8_t *text, size_t len, const char **whyp)
{
	const char *s = (const char *)text, *end = s + len, *key = NULL;
	size_t key_len = 0, n = 0;
	char hrp[BECH32_HRP_MAX + 1];
	uint8_t tmp[33];
	int r;

	while (s < end) {
		const char *nl = memchr(s, '\n', (size_t)(end - s));
		size_t l = nl ? (size_t)(nl - s) : (size_t)(end - s);

		if (l && s[l - 1] == '\r')
			l--;
		if (l && s[0] != '#') {
			if (key) {
				*whyp = "more than one key line (an age key file holds one AGE-SECRET-KEY-1... line)";
				return -1;
			}
			key = s;
			key_len = l;
		}
		s += (nl ? (size_t)(nl - s) + 1 : (size_t)(end - s));
	}
	if (!key || key_len < 16 || memcmp(key, "AGE-SECRET-KEY-1", 16) != 0) {
		*whyp = "no AGE-SECRET-KEY-1... line (an age-keygen key file)";
		return -1;
	}
	r = bech32_decode(hrp, tmp, sizeof(tmp), &n, key, key_len);
	if (r || strcmp(hrp, AGE_HRP_SECRET) || n != 32) {
		sodium_memzero(tmp, sizeof(tmp));
		*whyp = "the AGE-SECRET-KEY-1... line is not a valid key (checksum or length)";
		return -1;
	}
	memcpy(seed, tmp, 32);
	sodium_memzero(tmp, sizeof(tmp));
	return 0;
}

/* does argv hold option @name (as "--name", "--name=..." or a unique
 * prefix getopt would take)? Stops at "--". */
static bool has_opt(int argc, char **argv, const char *name)
{
	size_t nl = strlen(name);

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0)
			break;
		if (strncmp(a, "--", 2) == 0 && strncmp(a + 2, name, nl) == 0 && (a[2 + nl] == '\0' || a[2 + nl] == '='))
			return true;
	}
	return false;
}

bool age_cmd_is_export(int argc, char **argv)
{
	return has_opt(argc, argv, "to");
}

bool age_cmd_is_import_wrapped(int argc, char **argv)
{
	return has_opt(argc, argv, "wrapped");
}

enum { OPT_TO = 0x200, OPT_ARMOR, OPT_WRAPPED, OPT_KEY };

int age_cmd_export(int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_COMMON_LONGOPTS,
		{ "to", required_argument, NULL, OPT_TO },
		{ "armor", no_argument, NULL, OPT_ARMOR },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	const char *to = NULL, *out = "-";
	bool armor = false;
	uint8_t *file = NULL;
	size_t len = 0;
	sigil_client *cl;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:ho:a", lo, NULL)) != -1) {
		if (cli_common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_TO)
			to = optarg;
		if (c == OPT_ARMOR || c == 'a')
			armor = true;
		if (c == 'o')
			out = optarg;
	}
	if (argc - optind != 1 || !to)
		return cli_usage_error("export --to RECIPIENT takes one LABEL");
	if (strncmp(to, "age1", 4) != 0)
		return cli_usage_error("--to takes an age X25519 recipient (age1...): %s", to);
	if (cli_json())
		return cli_usage_error("--json does not apply to export --to (the output is an age file)");
	/* as age does: no binary on a terminal */
	if (!armor && strcmp(out, "-") == 0 && isatty(STDOUT_FILENO))
		return cli_usage_error("refusing to write a binary age file to a terminal: use --armor or -o FILE");
	if ((ex = cli_open_client(&cl)))
		return ex;
	e = sigil_client_key_export_wrapped(cl, &file, &len, argv[optind], to, armor);
	if (e) {
		ex = cli_fail(cl, e, "export");
	} else if (cli_write_out(out, file, len) < 0) {
		cli_err("cannot write %s: %s", out, strerror(errno));
		ex = CLI_EXIT_USAGE;
	}
	free(file);
	sigil_client_free(cl);
	return ex;
}

int age_cmd_import_wrapped(int argc, char **argv)
{
	static const struct option lo[] = {
		CLI_COMMON_LONGOPTS,
		{ "wrapped", no_argument, NULL, OPT_WRAPPED },
		{ "key", required_argument, NULL, OPT_KEY },
		{ 0 },
	};
	const char *key = NULL, *path = "-";
	uint8_t *file = NULL;
	size_t len = 0;
	sigil_client *cl;
	sigil_key_info k;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hk:", lo, NULL)) != -1) {
		if (cli_common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_KEY || c == 'k')
			key = optarg;
	}
	if (argc - optind < 1 || argc - optind > 2 || !key)
		return cli_usage_error("import --wrapped --key IDENTITY takes LABEL [FILE|-]");
	if (argc - optind == 2)
		path = argv[optind + 1];
	if (cli_read_all(path, WRAPPED_MAX, &file, &len) < 0) {
		cli_err("cannot read %s: %s", path, errno == EFBIG ? "larger than a wrapped key" : strerror(errno));
		return CLI_EXIT_USAGE;
	}
	if ((ex = cli_open_client(&cl))) {
		free(file);
		return ex;
	}
	e = sigil_client_key_import_wrapped(cl, &k, argv[optind], key, file, len);
	if (e)
		ex = cli_fail(cl, e, "import");
	else
		cli_print_one_key(&k);
	free(file);
	sigil_client_free(cl);
	return ex;
}
