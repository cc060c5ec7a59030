/* SPDX-License-Identifier: MIT */
/*
 * ctgrind-control.c - the control for tests/ct: deliberately leaky functions
 * run through the same harness (ctgrind.h) as the real checks. The test
 * "ctgrind control" EXPECTS Valgrind to report ctl_leak_branch (a branch on a
 * secret byte: memcmp-style early exit) and ctl_leak_index (a load from a
 * table at a secret index), and expects it NOT to report ctl_clean (the same
 * comparison done with ct_neq_bytes). If the harness ever stops seeing
 * leaks (e.g. CT_SECRET compiled to nothing, Valgrind not run, the report
 * not parsed), this test fails, so "ctgrind" cannot pass vacuously.
 *
 * The leaky functions are noinline and written so that gcc and clang at -O3
 * can't turn them into branch-free code (an early return out of a loop; a
 * table load), so the control holds on every CI build.
 */
#include <stdio.h>
#include <string.h>

#include "ctgrind.h"

/* a public table; reading it at a secret index leaks the index via the cache */
static volatile uint8_t ctl_table[256];

/* 1 if the n bytes are equal; exits at the first difference (LEAKY) */
__attribute__((noinline)) static int ctl_leak_branch(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return 0;
	}
	return 1;
}

/* table[secret] (LEAKY: the address depends on the secret) */
__attribute__((noinline)) static uint8_t ctl_leak_index(const uint8_t *secret)
{
	return ctl_table[secret[0]];
}

/* 1 if the n bytes are equal; constant time (CLEAN) */
__attribute__((noinline)) static int ctl_clean(const uint8_t *a, const uint8_t *b, size_t n)
{
	return (int)(ct_neq_bytes(a, b, n) ^ 1);
}

static int case_leak_branch(void)
{
	uint8_t secret[32], guess[32];
	int r;

	ctg_fill(secret, sizeof(secret), 1);
	memcpy(guess, secret, sizeof(guess));
	guess[31] ^= 1;
	ctg_secret(secret, sizeof(secret));
	r = ctl_leak_branch(secret, guess, sizeof(secret));
	return ctg_expect_int("ctl_leak_branch", r, 0);
}

static int case_leak_index(void)
{
	uint8_t secret[1] = { 0x5a };
	uint8_t r;

	for (size_t i = 0; i < 256; i++)
		ctl_table[i] = (uint8_t)(i ^ 0xff);
	ctg_secret(secret, sizeof(secret));
	r = ctl_leak_index(secret);
	ctg_public(&r, sizeof(r));
	return ctg_expect_int("ctl_leak_index", r, 0x5a ^ 0xff);
}

static int case_clean(void)
{
	uint8_t secret[32], guess[32];
	int r;

	ctg_fill(secret, sizeof(secret), 2);
	memcpy(guess, secret, sizeof(guess));
	ctg_secret(secret, sizeof(secret));
	r = ctl_clean(secret, guess, sizeof(secret));
	return ctg_expect_int("ctl_clean", r, 1);
}

static const ctg_case cases[] = {
	{ "ctl_leak_branch", case_leak_branch, "REPORTED: conditional jump on a secret byte" },
	{ "ctl_leak_index", case_leak_index, "REPORTED: load at a secret-dependent address" },
	{ "ctl_clean", case_clean, "clean (constant-time compare)" },
};

int main(int argc, char **argv)
{
	return ctg_run("ctgrind-control", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
