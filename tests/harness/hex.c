/* SPDX-License-Identifier: MIT */
/* hex.c - hex encode/decode and byte-comparison assertions for the tests. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int decode(uint8_t *out, const char *hex, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(hex[2 * i]), lo = nibble(hex[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return -1;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

int th_hex_decode(uint8_t *out, size_t n, const char *hex)
{
	if (hex == NULL)
		return -1;
	if (strcmp(hex, "-") == 0)
		hex = "";
	if (strlen(hex) != 2 * n)
		return -1;
	return decode(out, hex, n);
}

uint8_t *th_hex_decode_alloc(const char *hex, size_t *n)
{
	if (hex == NULL)
		return NULL;
	if (strcmp(hex, "-") == 0)
		hex = "";
	size_t len = strlen(hex);
	if (len % 2)
		return NULL;
	uint8_t *out = malloc(len / 2 + 1); /* + 1: never malloc(0) */
	if (out == NULL)
		return NULL;
	if (decode(out, hex, len / 2) != 0) {
		free(out);
		return NULL;
	}
	*n = len / 2;
	return out;
}

void th_hex_encode(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

void th_hex_dump(const char *label, const uint8_t *in, size_t n)
{
	fprintf(stderr, "# %s: ", label);
	for (size_t i = 0; i < n; i++)
		fprintf(stderr, "%02x", in[i]);
	fprintf(stderr, "\n");
}

void th__assert_bytes_eq(const uint8_t *a, const uint8_t *b, size_t n, const char *an, const char *bn,
                         const char *file, int line)
{
	if (memcmp(a, b, n) == 0)
		return;
	size_t first = 0;
	while (a[first] == b[first])
		first++;
	print_error("%s != %s (%zu bytes, first difference at byte %zu; seed %llu)\n", an, bn, n, first,
	            (unsigned long long)th_rng_seed());
	th_hex_dump(an, a, n);
	th_hex_dump(bn, b, n);
	_fail(file, line);
}

void th__assert_hex_eq(const uint8_t *a, const char *hex, size_t n, const char *an, const char *file,
                       int line)
{
	uint8_t *want = malloc(n + 1);
	if (want == NULL || th_hex_decode(want, n, hex) != 0) {
		free(want);
		print_error("bad expected hex for %s (%zu bytes): %s\n", an, n, hex);
		_fail(file, line);
		return;
	}
	if (memcmp(a, want, n) != 0) {
		print_error("%s differs from the expected value\n", an);
		th_hex_dump(an, a, n);
		th_hex_dump("expected", want, n);
		free(want);
		_fail(file, line);
		return;
	}
	free(want);
}
