/* SPDX-License-Identifier: MIT */
/*
 * test-base-lanes.c - the fixed base eight scalars at a time
 * (crypto/fe64/base_lanes.h): the comb's digits against their scalars; the
 * AVX-512 IFMA routine against its portable C twin, limb for limb, on
 * random and edge digits (every lane 0, 32 or -32, mixed signs, random);
 * base_lanes_encode with each against ref51's fixed base (ge_scalarmult_base,
 * ge_p3_tobytes) on random and edge scalars (0, 1, L - 1, 2^255 - 1, the
 * harness's weird table with bit 255 cleared, ...); the backends'
 * base_encode_many for every n against base_encode; and that cpu.c takes
 * the IFMA routine exactly when its probe offers it and the fe64 assembly
 * runs. Built in every build (the twin is portable); the limb-for-limb
 * comparison needs AVX-512 F + IFMA and is left out of the plan without it.
 *
 * Random inputs come from the harness's generator (SIGIL_TEST_SEED, printed
 * so that a failure can be replayed).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "backend.h"
#include "fe64/base_lanes.h"
#include "fe64/fe64.h"
#include "fe64/msm.h"
#include "ref51/ref51.h"

static base_lanes_fn *fns[2];
static const char *fn_names[2] = { "C twin", "IFMA" };
static int n_fns;

static void setup(void)
{
	fns[0] = base_lanes_generic;
	fns[1] = base_lanes_probe();
	n_fns = fns[1] != NULL ? 2 : 1;
	if (fns[1] == NULL)
		printf("# the IFMA routine is not available here (no AVX-512 F + IFMA, no amd64 "
		       "code, or Valgrind): the C twin only\n");
}

static void test_choice(void **state)
{
	(void)state;
	const fe64_impl *im = cpu_fe64();
	if (fe64_ops_asm() != NULL)
		assert_ptr_equal(im->base_lanes, base_lanes_probe());
	else
		assert_null(im->base_lanes);
}

/* Case n's scalar (a[31] <= 127): the weird table in turn, 0, 1, L - 1,
 * 2^255 - 1, every window at its largest, or random. */
static void case_scalar(uint8_t a[32], int n)
{
	static const uint8_t lm1[32] = { 0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
		                         0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
		                         [31] = 0x10 };
	size_t nw = th_weird32_count();
	memset(a, 0, 32);
	if ((size_t)n < nw)
		th_weird32(a, (size_t)n);
	else if (n == (int)nw)
		; /* 0 */
	else if (n == (int)nw + 1)
		a[0] = 1;
	else if (n == (int)nw + 2)
		memcpy(a, lm1, 32);
	else if (n == (int)nw + 3)
		memset(a, 0xff, 32);
	else if (n == (int)nw + 4)
		for (int i = 0; i < 32; i++) /* windows of 31, 32 and 33 mixed */
			a[i] = (uint8_t)(i % 3 == 0 ? 0x20 : i % 3 == 1 ? 0x08 : 0x7e);
	else if (n % 3 == 0)
		th_rand_weird32(a);
	else
		th_randbytes(a, 32);
	a[31] &= 127;
}

/* the digits sum to the scalar: sum d[i] 2^(6 i) in 320-bit two's
 * complement, each digit in range */
static void test_digits(void **state)
{
	(void)state;
	for (int n = 0; n < 2000; n++) {
		uint8_t a[32], back[40] = { 0 };
		uint64_t dig[BASE_LANES_DIGITS][BASE_LANES], acc[5] = { 0 };
		case_scalar(a, n);
		int lane = n % BASE_LANES;
		base_lanes_digits(dig, lane, a);
		for (int i = 0; i < BASE_LANES_DIGITS; i++) {
			int64_t d = (int64_t)dig[i][lane];
			assert_true(d >= -32 && d <= 32);
			if (i < BASE_LANES_DIGITS - 1)
				assert_true(d < 32);
			else
				assert_true(d >= 0 && d <= 16);
			/* acc += d 2^(6 i), d sign-extended to 320 bits */
			uint64_t t[5] = { 0 }, ext = d < 0 ? ~UINT64_C(0) : 0;
			unsigned q = 6 * (unsigned)i / 64, r = 6 * (unsigned)i % 64;
			for (unsigned w = 0; w < 5; w++) {
				if (w < q)
					t[w] = 0;
				else if (w == q)
					t[w] = (uint64_t)d << r;
				else if (w == q + 1 && r != 0)
					t[w] = ((uint64_t)d >> (64 - r)) | (ext << r);
				else
					t[w] = ext;
			}
			unsigned __int128 c = 0;
			for (int w = 0; w < 5; w++) {
				c += (unsigned __int128)acc[w] + t[w];
				acc[w] = (uint64_t)c;
				c >>= 64;
			}
		}
		for (int i = 0; i < 40; i++)
			back[i] = (uint8_t)(acc[i / 8] >> (8 * (i % 8)));
		assert_memory_equal(back, a, 32);
		for (int i = 32; i < 40; i++)
			assert_int_equal(back[i], 0);
	}
}

/* limb for limb on digits in [-32, 32] */
static void test_ifma_vs_twin(void **state)
{
	(void)state;
	for (int n = 0; n < 400; n++) {
		_Alignas(64) uint64_t dig[BASE_LANES_DIGITS][BASE_LANES];
		_Alignas(64) uint64_t o0[3][5][BASE_LANES], o1[3][5][BASE_LANES];
		for (int i = 0; i < BASE_LANES_DIGITS; i++)
			for (int l = 0; l < BASE_LANES; l++) {
				int64_t d;
				switch (n % 6) {
				case 0: d = 0; break;
				case 1: d = 32; break;
				case 2: d = -32; break;
				case 3: d = (l + i) % 2 ? 32 : -32; break;
				case 4: d = (int64_t)th_rand_below(3) - 1; break;
				default: d = (int64_t)th_rand_below(65) - 32; break;
				}
				if (n % 6 == 0 && n > 0)
					d = (int64_t)((uint64_t)n >> (i % 8) & 1) * (l % 2 ? 1 : -1);
				dig[i][l] = (uint64_t)d;
			}
		fns[0](o0, (const uint64_t (*)[BASE_LANES])dig);
		fns[1](o1, (const uint64_t (*)[BASE_LANES])dig);
		assert_memory_equal(o0, o1, sizeof o0);
		for (int c = 0; c < 3; c++)
			for (int k = 0; k < 5; k++)
				for (int l = 0; l < BASE_LANES; l++)
					assert_true(o0[c][k][l] < (UINT64_C(1) << 51) + (UINT64_C(1) << 17));
	}
}

static void ref_encode(uint8_t s[32], const uint8_t a[32])
{
	ge_p3 P;
	ge_scalarmult_base(&P, a);
	ge_p3_tobytes(s, &P);
}

/* base_lanes_encode with each routine (and both field ops) against ref51 */
static void test_encode(void **state)
{
	(void)state;
	const fe64_ops *fes[2] = { &fe64_ops_generic, fe64_ops_asm() };
	for (int n = 0; n < 160; n++) {
		uint8_t a[BASE_LANES][32], s[BASE_LANES][32], want[BASE_LANES][32];
		for (int l = 0; l < BASE_LANES; l++) {
			case_scalar(a[l], (n * BASE_LANES + l) % 200);
			ref_encode(want[l], a[l]);
		}
		for (int f = 0; f < n_fns; f++)
			for (int o = 0; o < 2; o++) {
				if (fes[o] == NULL)
					continue;
				memset(s, 0, sizeof s);
				base_lanes_encode(s, (const uint8_t (*)[32])a, fns[f], fes[o]);
				if (memcmp(s, want, sizeof s) != 0)
					fail_msg("%s, case %d: base_lanes_encode differs from ref51", fn_names[f], n);
			}
	}
}

/* every backend's base_encode_many, n = 1 .. BACKEND_BASE_MANY, against its
 * base_encode */
static void test_many(void **state)
{
	(void)state;
	fe64_impl twins = *cpu_fe64();
	twins.fe = &fe64_ops_generic;
	twins.ge = &ge64_ops_generic;
	twins.scan = ge64_scan_generic;
	twins.base_lanes = base_lanes_generic;
	backend b64 = backend_fe64, b64c = backend_fe64;
	b64.impl = cpu_fe64();
	b64c.impl = &twins;
	const backend *tables[] = { &backend_ref51, &b64, &b64c, backend_get() };
	for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
		for (int n = 1; n <= BACKEND_BASE_MANY; n++)
			for (int rep = 0; rep < 3; rep++) {
				uint8_t a[BACKEND_BASE_MANY][32], s[BACKEND_BASE_MANY][32], w[32];
				for (int i = 0; i < n; i++)
					case_scalar(a[i], (int)th_rand_below(220));
				tables[t]->base_encode_many(tables[t], s, (const uint8_t (*)[32])a, n);
				for (int i = 0; i < n; i++) {
					tables[t]->base_encode(tables[t], w, a[i]);
					assert_memory_equal(s[i], w, 32);
					ref_encode(w, a[i]);
					assert_memory_equal(s[i], w, 32);
				}
			}
}

int main(void)
{
	th_rng_init();

	setup();
	const struct CMUnitTest twin[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_digits),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_many),
	};
	const struct CMUnitTest all[] = {
		cmocka_unit_test(test_choice),
		cmocka_unit_test(test_digits),
		cmocka_unit_test(test_ifma_vs_twin),
		cmocka_unit_test(test_encode),
		cmocka_unit_test(test_many),
	};
	if (fns[1] == NULL)
		return cmocka_run_group_tests(twin, NULL, NULL);
	return cmocka_run_group_tests(all, NULL, NULL);
}
