/* SPDX-License-Identifier: MIT */
/*
 * test-x25519-lanes.c - the X25519 ladder four multiplications wide
 * (crypto/fe64/x25519_lanes.h): the AVX-512 IFMA routine against its
 * portable C twin, x2 and z2 limb for limb, and both through
 * x25519_lanes64 against the two other ladders (x25519_ladder51 of ref51,
 * x25519_ladder64 on fe64), on random and edge inputs: every u of the
 * harness's weird table (0, 1, p - 1, p, p + 1, 2^255 - 1, 2^256 - 1, ...:
 * u >= p, bit 255 set), values near them, two points of order 8, scalars
 * all zeros and all ones; the RFC 7748 vectors of sections
 * 5.2 and 6.1 and the iterated vector (1 and 1,000 rounds) with each; and
 * that cpu.c takes the IFMA routine exactly when its probe offers it and
 * the fe64 assembly runs. Built in every build (the twin is portable); the
 * limb-for-limb comparison needs AVX-512 F + VL + IFMA and is left out of
 * the plan without them (cmocka reports a skip as "not ok").
 *
 * Random inputs come from the harness's generator (SIGIL_TEST_SEED, printed
 * so that a failure can be replayed).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "fe64/fe64.h"
#include "fe64/msm.h"
#include "fe64/x25519_lanes.h"
#include "ref51/ref51.h"

/* two u of order 8 (tests/crypto/test-x25519.c's small-order list) */
static const char *const order8[] = {
	"e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
	"5f9c95bca3508c24b1d0b1559c83ef5b04445cc4581c8e86d8224eddd09f1157",
};

/* Case n's u: every entry of the harness's weird table (0, 1, p - 1, p,
 * p + 1, 2^255 - 1, 2^256 - 1, ...) in turn, the order-8 points, or a
 * random value (weird ones, near them, or uniform). */
static void case_u(uint8_t u[32], int n)
{
	size_t nw = th_weird32_count();
	if (n % 2 == 1 && (size_t)(n / 2) < nw)
		th_weird32(u, (size_t)(n / 2));
	else if (n % 8 == 2)
		assert_int_equal(th_hex_decode(u, 32, order8[(n / 8) % 2]), 0);
	else
		th_rand_weird32(u);
}

/* the routines under test: the twin, and the IFMA routine when it runs */
static x25519_lanes_fn *fns[2];
static const char *fn_names[2] = { "C twin", "IFMA" };
static int n_fns;

static void setup(void)
{
	fns[0] = x25519_lanes_generic;
	fns[1] = x25519_lanes_probe();
	n_fns = fns[1] != NULL ? 2 : 1;
	if (fns[1] == NULL)
		printf("# the IFMA routine is not available here (no AVX-512 F + VL + IFMA, "
		       "no amd64 code, or Valgrind): the C twin only\n");
}

static void test_choice(void **state)
{
	(void)state;
	/* cpu.c takes the probe's routine exactly when the fe64 assembly runs */
	const fe64_impl *im = cpu_fe64();
	if (fe64_ops_asm() != NULL)
		assert_ptr_equal(im->x25519, x25519_lanes_probe());
	else
		assert_null(im->x25519);
}

/* Limb for limb: the IFMA routine and its twin on random and edge x1 and
 * scalars (not clamped: every bit below 255 is a step). */
static void test_ifma_vs_twin(void **state)
{
	(void)state;
	assert_non_null(fns[1]);
	for (int n = 0; n < 600; n++) {
		fe64 x1, a2, b2, az, bz;
		uint64_t w[4];
		uint8_t u[32];
		case_u(u, n);
		for (int i = 0; i < 4; i++) {
			x1.v[i] = 0;
			for (int j = 7; j >= 0; j--)
				x1.v[i] = x1.v[i] << 8 | u[8 * i + j];
			w[i] = th_rand64();
		}
		if (n % 5 == 2)
			memset(w, n % 2 ? 0xff : 0, sizeof w);
		x25519_lanes_generic(&a2, &az, &x1, w);
		fns[1](&b2, &bz, &x1, w);
		if (memcmp(&a2, &b2, sizeof a2) != 0 || memcmp(&az, &bz, sizeof az) != 0)
			fail_msg("case %d: IFMA and twin differ (x1 %016llx..%016llx)", n,
			         (unsigned long long)x1.v[3], (unsigned long long)x1.v[0]);
	}
}

/* X25519 through x25519_lanes64 against the two other ladders. */
static void test_vs_ladders(void **state)
{
	(void)state;
	for (int n = 0; n < 400; n++) {
		uint8_t k[32], u[32], o51[32], o64[32], o[32];
		th_randbytes(k, sizeof k);
		case_u(u, n);
		if (n % 7 == 3)
			memset(k, n % 2 ? 0xff : 0, sizeof k);
		x25519_ladder51(o51, k, u);
		x25519_ladder64(o64, k, u, &fe64_ops_generic);
		assert_memory_equal(o51, o64, 32);
		for (int f = 0; f < n_fns; f++) {
			x25519_lanes64(o, k, u, fns[f]);
			if (memcmp(o, o51, 32) != 0)
				fail_msg("case %d: %s differs from x25519_ladder51", n, fn_names[f]);
		}
	}
}

static void test_rfc7748(void **state)
{
	(void)state;
	FILE *fp = th_vec_open("converted/rfc7748.txt");
	char *buf = NULL, *line, *fld[8];
	size_t cap = 0;
	int n52 = 0, n61 = 0, nit = 0;
	while ((line = th_vec_line(fp, &buf, &cap)) != NULL) {
		int nf = th_split(line, ' ', fld, 8);
		for (int f = 0; f < n_fns; f++) {
			uint8_t k[32], u[32], out[32], want[32];
			if (strcmp(fld[0], "x25519") == 0) {
				th_vec_x25519(fld, nf, k, u, want);
				x25519_lanes64(out, k, u, fns[f]);
				th_assert_bytes_eq(out, want, 32);
				n52 += f == 0;
			} else if (strcmp(fld[0], "dh") == 0) {
				uint8_t ap[32], aP[32], bp[32], bP[32], sh[32], nine[32] = { 9 };
				assert_int_equal(nf, 6);
				assert_int_equal(th_hex_decode(ap, 32, fld[1]), 0);
				assert_int_equal(th_hex_decode(aP, 32, fld[2]), 0);
				assert_int_equal(th_hex_decode(bp, 32, fld[3]), 0);
				assert_int_equal(th_hex_decode(bP, 32, fld[4]), 0);
				assert_int_equal(th_hex_decode(sh, 32, fld[5]), 0);
				x25519_lanes64(out, ap, nine, fns[f]);
				th_assert_bytes_eq(out, aP, 32);
				x25519_lanes64(out, bp, nine, fns[f]);
				th_assert_bytes_eq(out, bP, 32);
				x25519_lanes64(out, ap, bP, fns[f]);
				th_assert_bytes_eq(out, sh, 32);
				x25519_lanes64(out, bp, aP, fns[f]);
				th_assert_bytes_eq(out, sh, 32);
				n61 += f == 0;
			} else {
				/* iterated: k = u = 9; (k, u) = (X25519(k, u), k) */
				assert_string_equal(fld[0], "iterated");
				assert_int_equal(nf, 5);
				unsigned long rounds = strtoul(fld[1], NULL, 10);
				if (rounds > 1000)
					continue;
				assert_int_equal(th_hex_decode(k, 32, fld[2]), 0);
				assert_int_equal(th_hex_decode(u, 32, fld[3]), 0);
				for (unsigned long i = 0; i < rounds; i++) {
					x25519_lanes64(out, k, u, fns[f]);
					memcpy(u, k, 32);
					memcpy(k, out, 32);
				}
				th_assert_hex_eq(k, fld[4], 32);
				nit += f == 0;
			}
		}
	}
	free(buf);
	fclose(fp);
	assert_int_equal(n52, 2);
	assert_int_equal(n61, 1);
	assert_int_equal(nit, 2); /* 1 and 1,000 rounds */
}

int main(void)
{
	th_rng_init();

	setup();
	const struct CMUnitTest twin[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_vs_ladders),
		cmocka_unit_test(test_rfc7748),
	};
	const struct CMUnitTest all[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_vs_ladders),
		cmocka_unit_test(test_rfc7748),
		cmocka_unit_test(test_ifma_vs_twin),
	};
	if (fns[1] == NULL)
		return cmocka_run_group_tests(twin, NULL, NULL);
	return cmocka_run_group_tests(all, NULL, NULL);
}
