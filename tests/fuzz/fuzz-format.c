/* SPDX-License-Identifier: MIT */
/*
 * fuzz-format.c - the sigil command's file parsers (client/format.c)
 *
 * Built once per parser, FUZZ_FORMAT selecting it:
 *   1 sshsig    format_sshsig_parse
 *   2 minisign  format_minisign_parse
 *   3 signify   format_signify_parse
 *   4 keys      format_pubkey_parse and format_seed_parse (the first byte
 *               picks the principal and the secret-key kind)
 *
 * Oracles: a parser returns 0 or -1, and -1 comes with a reason; the input
 * is read only within its length (the fuzzer's buffer is exact, so ASan
 * sees any over-read: the parsers take (text, len), not C strings);
 * whatever parses, written out again by the matching encoder, parses to
 * the same values; format_seed_parse leaves the seed untouched on failure.
 */
#include <string.h>

#include "format.h"

#include "fuzz.h"

#ifndef FUZZ_FORMAT
#error "define FUZZ_FORMAT"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *why = NULL;
	int r;

#if FUZZ_FORMAT == 1
	FormatSshsig a, b;

	r = format_sshsig_parse(&a, (const char *)data, size, &why);
	FUZZ_CHECK(r == 0 || (r == -1 && why != NULL));
	if (r == 0) {
		char *text = format_sshsig_armor(a.pk, a.ns, a.hashalg, a.sig);

		FUZZ_CHECK(text != NULL);
		FUZZ_CHECK(format_sshsig_parse(&b, text, strlen(text), &why) == 0);
		FUZZ_CHECK(memcmp(a.pk, b.pk, 32) == 0 && memcmp(a.sig, b.sig, 64) == 0);
		FUZZ_CHECK(strcmp(a.ns, b.ns) == 0 && strcmp(a.hashalg, b.hashalg) == 0);
		free(text);
	}
#elif FUZZ_FORMAT == 2
	FormatMinisign a, b;

	r = format_minisign_parse(&a, (const char *)data, size, &why);
	FUZZ_CHECK(r == 0 || (r == -1 && why != NULL));
	/* a parsed signature is written back unchanged (regressions/minisign:
	 * a NUL or a CR in the trusted comment is refused by the parser, the
	 * encoder refuses CR and LF) */
	if (r == 0 && a.prehashed) {
		/* the encoder writes the prehashed ("ED") form only */
		char *text = format_minisign_sig(a.keynum, a.sig, "fuzz", a.trusted_comment, a.global_sig);

		FUZZ_CHECK(text != NULL);
		FUZZ_CHECK(format_minisign_parse(&b, text, strlen(text), &why) == 0);
		FUZZ_CHECK(b.prehashed == 1);
		FUZZ_CHECK(memcmp(a.keynum, b.keynum, sizeof(a.keynum)) == 0);
		FUZZ_CHECK(memcmp(a.sig, b.sig, 64) == 0 && memcmp(a.global_sig, b.global_sig, 64) == 0);
		FUZZ_CHECK(strcmp(a.trusted_comment, b.trusted_comment) == 0);
		free(text);
	}
#elif FUZZ_FORMAT == 3
	FormatSignify a, b;

	r = format_signify_parse(&a, (const char *)data, size, &why);
	FUZZ_CHECK(r == 0 || (r == -1 && why != NULL));
	if (r == 0) {
		char *text = format_signify_sig(a.keynum, a.sig, "fuzz");

		FUZZ_CHECK(text != NULL);
		FUZZ_CHECK(format_signify_parse(&b, text, strlen(text), &why) == 0);
		FUZZ_CHECK(memcmp(a.keynum, b.keynum, sizeof(a.keynum)) == 0);
		FUZZ_CHECK(memcmp(a.sig, b.sig, 64) == 0);
		free(text);
	}
#elif FUZZ_FORMAT == 4
	FormatPubkey a, b;
	uint8_t seed[32], marker[32];
	FormatSkKind kind;

	if (size < 1)
		return 0;
	kind = (FormatSkKind)((data[0] >> 1) % (FORMAT_SK_SIGNIFY + 1));
	r = format_pubkey_parse(&a, data + 1, size - 1, (data[0] & 1) ? "fuzz@example" : NULL, &why);
	FUZZ_CHECK(r == 0 || (r == -1 && why != NULL));
	if (r == 0) {
		char *text = format_openssh_pubkey(a.pk, NULL);

		FUZZ_CHECK(text != NULL);
		FUZZ_CHECK(format_pubkey_parse(&b, (const uint8_t *)text, strlen(text), NULL, &why) == 0);
		FUZZ_CHECK(b.kind == FORMAT_PK_OPENSSH && memcmp(a.pk, b.pk, 32) == 0);
		free(text);
	}
	memset(marker, 0x3c, sizeof(marker));
	memcpy(seed, marker, sizeof(seed));
	why = NULL;
	r = format_seed_parse(seed, kind, data + 1, size - 1, &why);
	FUZZ_CHECK(r == 0 || (r == -1 && why != NULL));
	if (r != 0)
		FUZZ_CHECK(memcmp(seed, marker, sizeof(seed)) == 0);
#else
#error "FUZZ_FORMAT out of range"
#endif
	return 0;
}
