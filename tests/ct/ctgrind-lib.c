/* SPDX-License-Identifier: MIT */
/* ctgrind-lib.c - the RUN-table runner and helpers of tests/ct (see ctgrind.h). */
#include "ctgrind.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <valgrind/memcheck.h>

void ctg_secret(const void *p, size_t n)
{
	CT_SECRET(p, n);
}

void ctg_public(const void *p, size_t n)
{
	CT_DECLASSIFY(p, n);
}

int ctg_still_secret(const void *p, size_t n)
{
	uint8_t vbits[256];
	int r;

	if (!RUNNING_ON_VALGRIND)
		return 1;
	if (n > sizeof(vbits))
		return 0;
	/* vbits: one bit per data bit, 1 = undefined (secret) */
	r = VALGRIND_GET_VBITS(p, vbits, n);
	if (r != 1) {
		printf("# ctg_still_secret: VALGRIND_GET_VBITS returned %d\n", r);
		return 0;
	}
	for (size_t i = 0; i < n; i++) {
		if (vbits[i] == 0)
			return 0;
	}
	return 1;
}

int ctg_expect_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n)
{
	/* declassify a copy: the caller's buffer keeps its state */
	uint8_t tmp[256];

	if (n > sizeof(tmp)) {
		printf("# %s: ctg_expect_bytes called with n = %zu > %zu\n", what, n, sizeof(tmp));
		return 1;
	}
	memcpy(tmp, got, n);
	CT_DECLASSIFY(tmp, n);
	if (memcmp(tmp, want, n) == 0)
		return 0;
	printf("# %s: wrong result\n#   got  ", what);
	for (size_t i = 0; i < n; i++)
		printf("%02x", tmp[i]);
	printf("\n#   want ");
	for (size_t i = 0; i < n; i++)
		printf("%02x", want[i]);
	printf("\n");
	return 1;
}

int ctg_expect_int(const char *what, int got, int want)
{
	int v = got;

	CT_DECLASSIFY(&v, sizeof(v));
	if (v == want)
		return 0;
	printf("# %s: got %d, want %d\n", what, v, want);
	return 1;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

void ctg_unhex(uint8_t *out, size_t n, const char *hex)
{
	if (strlen(hex) != 2 * n) {
		fprintf(stderr, "ctg_unhex: want %zu hex digits, got %zu\n", 2 * n, strlen(hex));
		abort();
	}
	for (size_t i = 0; i < n; i++) {
		int hi = hexval(hex[2 * i]), lo = hexval(hex[2 * i + 1]);
		if (hi < 0 || lo < 0) {
			fprintf(stderr, "ctg_unhex: bad hex digit in \"%s\"\n", hex);
			abort();
		}
		out[i] = (uint8_t)(hi << 4 | lo);
	}
}

void ctg_fill(uint8_t *p, size_t n, uint64_t seed)
{
	uint64_t x = seed;

	for (size_t i = 0; i < n; i++) {
		uint64_t z;

		x += 0x9e3779b97f4a7c15ULL;
		z = x;
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		p[i] = (uint8_t)(z ^ (z >> 31));
	}
}

int ctg_run(const char *title, const ctg_case *cases, size_t n, int argc, char **argv)
{
	int native = 0, bad = 0, nfilter = 0;
	size_t ran = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--native") == 0)
			native = 1;
		else if (argv[i][0] == '-') {
			printf("# usage: %s [--native] [CASE-SUBSTRING]...\n", argv[0]);
			return 2;
		} else
			nfilter++;
	}
	if (!RUNNING_ON_VALGRIND && !native) {
		printf("# %s: not running under Valgrind; a run without it proves nothing.\n"
		       "# Use tests/ct/run-ctgrind.sh (or pass --native to check results only).\n",
		       title);
		return 1;
	}
	printf("# %s: %zu cases%s\n", title, n, native ? " (native: results only)" : "");
#if !defined(NDEBUG)
	printf("# note: built without NDEBUG (bound assertions on); CI runs release builds too\n");
#endif
	for (size_t i = 0; i < n; i++) {
		int r, match = nfilter == 0;

		for (int k = 1; k < argc && !match; k++)
			match = argv[k][0] != '-' && strstr(cases[i].name, argv[k]) != NULL;
		if (!match)
			continue;
		printf("# case %-40s expect: %s\n", cases[i].name, cases[i].expect);
		r = cases[i].fn();
		ran++;
		if (r != 0) {
			printf("# case %s: RESULT WRONG\n", cases[i].name);
			bad = 1;
		}
	}
	if (ran == 0) {
		printf("# %s: no case matched\n", title);
		return 1;
	}
	printf("# %s: %zu of %zu cases run%s: %s\n", title, ran, n, nfilter ? " (filtered)" : "",
	       bad ? "SOME RESULTS WRONG" : "all results right");
	return bad;
}
