/* SPDX-License-Identifier: MIT */
/*
 * alias.c - aliasing checkers (STYLE.md section 3: every fe_/sc_/ge_
 * function allows out to alias any input; edwards25519 fe_alias_test.go).
 * Each checker computes f with separate buffers, then again with the output
 * buffer aliasing each input in turn, and compares the outputs byte by byte.
 * The inputs are also checked to be left unchanged by the separate call.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

static void *dup_or_fail(const void *p, size_t size)
{
	void *q = malloc(size);
	assert_non_null(q);
	memcpy(q, p, size);
	return q;
}

static void expect_same(const void *got, const void *want, size_t size, const char *name, const char *how,
                        const char *file, int line)
{
	if (memcmp(got, want, size) == 0)
		return;
	print_error("%s: aliasing %s changes the result (seed %llu)\n", name, how,
	            (unsigned long long)th_rng_seed());
	th_hex_dump("aliased", got, size);
	th_hex_dump("separate", want, size);
	_fail(file, line);
}

void th__check_alias1(th_op1 f, size_t size, const void *a, const char *name, const char *file, int line)
{
	uint8_t *a0 = dup_or_fail(a, size), *out = malloc(size), *x = dup_or_fail(a, size);
	assert_non_null(out);
	memset(out, 0xa5, size);
	f(out, a0);
	expect_same(a0, a, size, name, "(none: the input was modified)", file, line);
	f(x, x);
	expect_same(x, out, size, name, "out == a", file, line);
	free(a0);
	free(out);
	free(x);
}

void th__check_alias2(th_op2 f, size_t size, const void *a, const void *b, const char *name,
                      const char *file, int line)
{
	uint8_t *a0 = dup_or_fail(a, size), *b0 = dup_or_fail(b, size), *out = malloc(size);
	assert_non_null(out);
	memset(out, 0xa5, size);
	f(out, a0, b0);
	expect_same(a0, a, size, name, "(none: input a was modified)", file, line);
	expect_same(b0, b, size, name, "(none: input b was modified)", file, line);

	uint8_t *x = dup_or_fail(a, size);
	f(x, x, b0);
	expect_same(x, out, size, name, "out == a", file, line);
	memcpy(x, b, size);
	f(x, a0, x);
	expect_same(x, out, size, name, "out == b", file, line);

	/* a == b: compare against f(out, a, a) with separate buffers */
	uint8_t *a1 = dup_or_fail(a, size), *out2 = malloc(size);
	assert_non_null(out2);
	f(out2, a0, a1);
	f(x, a0, a0);
	expect_same(x, out2, size, name, "a == b", file, line);
	memcpy(x, a, size);
	f(x, x, x);
	expect_same(x, out2, size, name, "out == a == b", file, line);
	free(a0);
	free(a1);
	free(b0);
	free(out);
	free(out2);
	free(x);
}

void th__check_alias3(th_op3 f, size_t size, const void *a, const void *b, const void *c, const char *name,
                      const char *file, int line)
{
	uint8_t *a0 = dup_or_fail(a, size), *b0 = dup_or_fail(b, size), *c0 = dup_or_fail(c, size);
	uint8_t *out = malloc(size);
	assert_non_null(out);
	memset(out, 0xa5, size);
	f(out, a0, b0, c0);
	expect_same(a0, a, size, name, "(none: input a was modified)", file, line);
	expect_same(b0, b, size, name, "(none: input b was modified)", file, line);
	expect_same(c0, c, size, name, "(none: input c was modified)", file, line);

	uint8_t *x = dup_or_fail(a, size);
	f(x, x, b0, c0);
	expect_same(x, out, size, name, "out == a", file, line);
	memcpy(x, b, size);
	f(x, a0, x, c0);
	expect_same(x, out, size, name, "out == b", file, line);
	memcpy(x, c, size);
	f(x, a0, b0, x);
	expect_same(x, out, size, name, "out == c", file, line);

	/* all the same buffer, against separate copies of a */
	uint8_t *a1 = dup_or_fail(a, size), *a2 = dup_or_fail(a, size), *out2 = malloc(size);
	assert_non_null(out2);
	f(out2, a0, a1, a2);
	memcpy(x, a, size);
	f(x, x, x, x);
	expect_same(x, out2, size, name, "out == a == b == c", file, line);
	free(a0);
	free(a1);
	free(a2);
	free(b0);
	free(c0);
	free(out);
	free(out2);
	free(x);
}
