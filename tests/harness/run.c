/* SPDX-License-Identifier: MIT */
/* run.c - run a cmocka group with the harness RNG seeded; name the seed on failure. */
#include "harness.h"

int th__run(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
            CMFixtureFunction teardown)
{
	th_rng_init();
	int failed = _cmocka_run_group_tests(name, tests, n, setup, teardown);
	if (failed)
		fprintf(stderr, "# %d test(s) failed; random seed was %llu: rerun with SIGIL_TEST_SEED=%llu\n",
		        failed, (unsigned long long)th_rng_seed(), (unsigned long long)th_rng_seed());
	return failed ? 1 : 0;
}
