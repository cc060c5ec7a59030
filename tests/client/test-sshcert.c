/* SPDX-License-Identifier: MIT */
/*
 * test-sshcert.c - the validity intervals of `sigil ssh-cert -V`
 * (client/sshcert.c), ssh-keygen's forms: relative, absolute in UTC,
 * always/forever, hex, and each malformed or empty interval
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "sshcert.h"

#define NOW INT64_C(1780000000) /* 2026-05-28T20:26:40Z */

static void check(const char *spec, uint64_t from, uint64_t to)
{
	uint64_t f = 1, t = 1;

	if (sshcert_parse_validity(spec, NOW, &f, &t) != 0)
		fail_msg("%s refused", spec);
	if (f != from || t != to)
		fail_msg("%s: %llu:%llu, expected %llu:%llu", spec, (unsigned long long)f, (unsigned long long)t,
		         (unsigned long long)from, (unsigned long long)to);
}

static void refuse(const char *spec)
{
	uint64_t f = 7, t = 9;

	if (sshcert_parse_validity(spec, NOW, &f, &t) == 0)
		fail_msg("%s accepted", spec);
	/* untouched on failure */
	assert_true(f == 7 && t == 9);
}

static void test_forms(void **state)
{
	(void)state;
	/* +TIME: from a minute early (rounded down), as ssh-keygen */
	check("+1h", (uint64_t)(NOW - 59) / 60 * 60, NOW + 3600);
	check("+52w", (uint64_t)(NOW - 59) / 60 * 60, NOW + 52 * 604800);
	check("+1w2d3h4m5s", (uint64_t)(NOW - 59) / 60 * 60, NOW + 604800 + 2 * 86400 + 3 * 3600 + 4 * 60 + 5);
	check("always:forever", 0, UINT64_MAX);
	check("-1d:+1w", NOW - 86400, NOW + 604800);
	check("20260101Z:20270101Z", 1767225600, 1798761600);
	check("202601010930Z:20260101093010Z", 1767259800, 1767259810);
	check("0x10:0x20", 16, 32);
	check("always:+90", 0, NOW + 90);
	/* a single absolute time: from now until then */
	check("20270101Z", NOW, 1798761600);
	check("forever", NOW, UINT64_MAX);
}

static void test_refused(void **state)
{
	(void)state;
	refuse("");
	refuse(":");
	refuse("always");
	refuse("+");
	refuse("+1x");
	refuse("+-1");
	refuse("1h");
	refuse("2026010Z");
	refuse("20261301Z");
	refuse("20260132Z");
	refuse("20260101256Z");
	refuse("forever:always");
	refuse("always:");
	refuse(":forever");
	refuse("20270101Z:20260101Z"); /* empty */
	refuse("0x20:0x10");
	refuse("0x:0x10");
	refuse("+1h:+1h");
	refuse("-1d:-2d");
	refuse("+99999999999999999999w");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forms),
		cmocka_unit_test(test_refused),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
