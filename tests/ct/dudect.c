/* SPDX-License-Identifier: MIT */
/*
 * dudect.c - a statistical timing test of sigil's secret-handling code,
 * after Reparaz, Balasch and Verbauwhede, "Dude, is my code constant time?"
 * (DATE 2017). Written here from the paper's description.
 *
 * For each target, inputs are drawn from two classes, chosen at random per
 * measurement: class 0 = one fixed secret, class 1 = a fresh random secret.
 * Each call is timed (rdtsc on x86-64, CLOCK_MONOTONIC_RAW elsewhere). Welch's
 * t statistic compares the two classes' timing distributions, as in dudect:
 *   - test 0 on all measurements,
 *   - tests 1..NPCT on the measurements below a cropping threshold, the
 *     thresholds being percentiles 1 - 0.5^(10 (i+1) / NPCT) of the first
 *     batch (cropping removes the long upper tail that interrupts cause),
 *   - test NPCT+1, a second-order test on (x - mean)^2.
 * The statistic reported is max |t| over the tests that have at least
 * MIN_SAMPLES samples. |t| > 10: the timing depends on the class (leak);
 * |t| < 4.5 after many measurements: no leak found at that resolution.
 *
 * A control target (an early-exit comparison, fixed = the whole reference,
 * random = differs at once) must reach |t| far above 10 in the same run;
 * otherwise the measurement is broken and the run fails.
 *
 * Usage: dudect [--seconds S] [--target NAME]... [--batch N] [--seed X]
 *   default 300 s in total, split equally between the targets.
 * Exit: 0 = control leaks and no target does; 1 = a target shows |t| > 10;
 *   2 = the control did not show |t| > 10 (the test proves nothing);
 *   3 = usage or setup error; 4 = a target got too few measurements
 *   (< MIN_SAMPLES after the warm-up batch): give it more --seconds.
 * Not a CI test: it measures the machine (see tests/ct/run-dudect.sh).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <sigil/crypto.h>

#include "sc.h"

#define NPCT 100
#define NTESTS (NPCT + 2)
#define MIN_SAMPLES 10000
#define T_LEAK 10.0

/* ---- random numbers: xoshiro256** seeded from getrandom ---- */

static uint64_t rng_s[4];

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(void)
{
	uint64_t r = rotl(rng_s[1] * 5, 7) * 9, t = rng_s[1] << 17;

	rng_s[2] ^= rng_s[0];
	rng_s[3] ^= rng_s[1];
	rng_s[1] ^= rng_s[2];
	rng_s[0] ^= rng_s[3];
	rng_s[2] ^= t;
	rng_s[3] = rotl(rng_s[3], 45);
	return r;
}

static void rng_seed(uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		rng_s[i] = z ^ (z >> 31);
	}
}

static void rng_bytes(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (i % 8 == 0) {
			uint64_t r = rng_next();

			for (size_t j = 0; j < 8 && i + j < n; j++)
				p[i + j] = (uint8_t)(r >> (8 * j));
		}
	}
}

/* ---- the clock ---- */

static inline uint64_t ticks(void)
{
#if defined(__x86_64__)
	uint32_t lo, hi;

	/* lfence: earlier instructions have completed before rdtsc reads */
	__asm__ volatile("lfence\n\trdtsc" : "=a"(lo), "=d"(hi) : : "memory");
	return ((uint64_t)hi << 32) | lo;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* ---- targets ---- */

#define INPUT_MAX 160

typedef struct {
	const char *name;
	const char *what;
	size_t len;                                  /* bytes of one input */
	void (*make)(uint8_t *in, int cls);           /* outside the timing */
	void (*run)(const uint8_t *in);               /* timed */
} target;

static volatile uint8_t sink;

static void x25519_make(uint8_t *in, int cls)
{
	if (cls == 0)
		memset(in, 0, 32);
	else
		rng_bytes(in, 32);
}

static void x25519_run(const uint8_t *in)
{
	static const uint8_t u[32] = { 9 };
	uint8_t out[32];

	(void)sigil_x25519(out, in, u);
	sink ^= out[0];
}

/* input: sk (64) = seed || pk; pk computed here, outside the timing */
static void sign_make(uint8_t *in, int cls)
{
	uint8_t seed[32], pk[32];

	if (cls == 0)
		memset(seed, 0, 32);
	else
		rng_bytes(seed, 32);
	sigil_ed25519_keypair_from_seed(pk, in, seed);
}

static void sign_run(const uint8_t *in)
{
	static const uint8_t m[32] = "dudect: a fixed 32-byte message";
	uint8_t sig[64];

	sigil_ed25519_sign(sig, m, sizeof(m), in);
	sink ^= sig[0];
}

static void sc_reduce_make(uint8_t *in, int cls)
{
	if (cls == 0)
		memset(in, 0, 64);
	else
		rng_bytes(in, 64);
}

static void sc_reduce_run(const uint8_t *in)
{
	uint8_t out[32];

	sc_reduce(out, in);
	sink ^= out[0];
}

static void sc_muladd_make(uint8_t *in, int cls)
{
	if (cls == 0)
		memset(in, 0, 96);
	else
		rng_bytes(in, 96);
}

static void sc_muladd_run(const uint8_t *in)
{
	uint8_t out[32];

	sc_muladd(out, in, in + 32, in + 64);
	sink ^= out[0];
}

/* the control: the secret is compared with a reference, memcmp-style */
static uint8_t control_ref[INPUT_MAX];

__attribute__((noinline)) static int leaky_equal(const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (a[i] != b[i])
			return 0;
	}
	return 1;
}

static void control_make(uint8_t *in, int cls)
{
	if (cls == 0)
		memcpy(in, control_ref, INPUT_MAX);
	else
		rng_bytes(in, INPUT_MAX);
}

static void control_run(const uint8_t *in)
{
	sink ^= (uint8_t)leaky_equal(in, control_ref, INPUT_MAX);
}

static const target targets[] = {
	{ "x25519", "sigil_x25519, scalar fixed (0) vs random, u = 9", 32, x25519_make, x25519_run },
	{ "ed25519_sign", "sigil_ed25519_sign, seed fixed (0) vs random, message fixed", 64, sign_make, sign_run },
	{ "sc_reduce", "sc_reduce, 512-bit input fixed (0) vs random", 64, sc_reduce_make, sc_reduce_run },
	{ "sc_muladd", "sc_muladd, a, b, c fixed (0) vs random", 96, sc_muladd_make, sc_muladd_run },
	{ "control", "CONTROL: early-exit compare, equal vs random (must leak)", INPUT_MAX, control_make, control_run },
};
#define NTARGETS (sizeof(targets) / sizeof(targets[0]))

/* ---- Welch's t-test, online (Welford) ---- */

typedef struct {
	double mean[2], m2[2], n[2];
} ttest;

static void tt_push(ttest *t, double x, int cls)
{
	double d;

	t->n[cls] += 1;
	d = x - t->mean[cls];
	t->mean[cls] += d / t->n[cls];
	t->m2[cls] += d * (x - t->mean[cls]);
}

static double tt_value(const ttest *t)
{
	double v0, v1, den;

	if (t->n[0] < 2 || t->n[1] < 2)
		return 0;
	v0 = t->m2[0] / (t->n[0] - 1);
	v1 = t->m2[1] / (t->n[1] - 1);
	den = sqrt(v0 / t->n[0] + v1 / t->n[1]);
	if (den == 0)
		return 0;
	return (t->mean[0] - t->mean[1]) / den;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

typedef struct {
	double max_t;
	int max_test;
	double n;
} result;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static result measure(const target *tg, double seconds, size_t batch)
{
	uint8_t *in = malloc(batch * INPUT_MAX);
	uint8_t *cls = malloc(batch);
	uint64_t *dt = malloc(batch * sizeof(uint64_t));
	uint64_t *sorted = malloc(batch * sizeof(uint64_t));
	uint64_t thr[NPCT];
	ttest tests[NTESTS];
	result res = { 0, -1, 0 };
	double t_end = now_s() + seconds;
	int first = 1;

	if (!in || !cls || !dt || !sorted) {
		fprintf(stderr, "dudect: out of memory\n");
		exit(3);
	}
	memset(tests, 0, sizeof(tests));
	while (first || now_s() < t_end) {
		for (size_t i = 0; i < batch; i++) {
			cls[i] = (uint8_t)(rng_next() & 1);
			tg->make(in + i * INPUT_MAX, cls[i]);
		}
		for (size_t i = 0; i < batch; i++) {
			uint64_t a = ticks();

			tg->run(in + i * INPUT_MAX);
			dt[i] = ticks() - a;
		}
		if (first) {
			/* the first batch sets the cropping thresholds and is discarded
			 * (warm-up: caches, frequency) */
			memcpy(sorted, dt, batch * sizeof(uint64_t));
			qsort(sorted, batch, sizeof(uint64_t), cmp_u64);
			for (int p = 0; p < NPCT; p++) {
				double q = 1 - pow(0.5, 10.0 * (p + 1) / NPCT);

				thr[p] = sorted[(size_t)(q * (double)batch)];
			}
			first = 0;
			continue;
		}
		for (size_t i = 0; i < batch; i++) {
			double x = (double)dt[i];

			tt_push(&tests[0], x, cls[i]);
			for (int p = 0; p < NPCT; p++) {
				if (dt[i] < thr[p])
					tt_push(&tests[1 + p], x, cls[i]);
			}
			/* second order: centred square, once the means have settled */
			if (tests[0].n[0] + tests[0].n[1] > MIN_SAMPLES) {
				double c = x - tests[0].mean[cls[i]];

				tt_push(&tests[NPCT + 1], c * c, cls[i]);
			}
		}
		res.n = tests[0].n[0] + tests[0].n[1];
	}
	for (int k = 0; k < NTESTS; k++) {
		double t;

		if (tests[k].n[0] + tests[k].n[1] < MIN_SAMPLES)
			continue;
		t = fabs(tt_value(&tests[k]));
		if (t > res.max_t) {
			res.max_t = t;
			res.max_test = k;
		}
	}
	free(in);
	free(cls);
	free(dt);
	free(sorted);
	return res;
}

static void usage(void)
{
	fprintf(stderr, "usage: dudect [--seconds S] [--target NAME]... [--batch N] [--seed X]\n  targets:");
	for (size_t i = 0; i < NTARGETS; i++)
		fprintf(stderr, " %s", targets[i].name);
	fprintf(stderr, "\n");
}

int main(int argc, char **argv)
{
	double seconds = 300;
	size_t batch = 10000;
	uint64_t seed = 0;
	int have_seed = 0, chosen[NTARGETS] = { 0 }, nchosen = 0, control_ok = 1, leak = 0, few = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
			seconds = strtod(argv[++i], NULL);
		} else if (strcmp(argv[i], "--batch") == 0 && i + 1 < argc) {
			batch = strtoul(argv[++i], NULL, 10);
		} else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
			seed = strtoull(argv[++i], NULL, 0);
			have_seed = 1;
		} else if (strcmp(argv[i], "--target") == 0 && i + 1 < argc) {
			const char *name = argv[++i];
			size_t k;

			for (k = 0; k < NTARGETS; k++) {
				if (strcmp(targets[k].name, name) == 0)
					break;
			}
			if (k == NTARGETS) {
				fprintf(stderr, "dudect: unknown target %s\n", name);
				usage();
				return 3;
			}
			if (!chosen[k])
				nchosen++;
			chosen[k] = 1;
		} else {
			usage();
			return 3;
		}
	}
	if (!(seconds > 0) || batch < 1000) {
		fprintf(stderr, "dudect: need --seconds > 0 and --batch >= 1000\n");
		return 3;
	}
	if (nchosen == 0) {
		for (size_t k = 0; k < NTARGETS; k++)
			chosen[k] = 1;
		nchosen = (int)NTARGETS;
	}
	if (!have_seed && getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) {
		fprintf(stderr, "dudect: getrandom: %s\n", strerror(errno));
		return 3;
	}
	rng_seed(seed);
	rng_bytes(control_ref, sizeof(control_ref));

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("dudect: %.0f s in total over %d targets, batch %zu, seed 0x%016llx, impl %s, clock %s\n",
	       seconds, nchosen, batch, (unsigned long long)seed, sigil_crypto_impl(),
#if defined(__x86_64__)
	       "rdtsc"
#else
	       "CLOCK_MONOTONIC_RAW ns"
#endif
	);
	printf("%-14s %12s %10s %6s  %s\n", "target", "measurements", "max|t|", "test", "verdict");
	for (size_t k = 0; k < NTARGETS; k++) {
		result r;
		const char *verdict;
		int is_control = strcmp(targets[k].name, "control") == 0;

		if (!chosen[k])
			continue;
		r = measure(&targets[k], seconds / nchosen, batch);
		if (r.max_test < 0) {
			verdict = "TOO FEW MEASUREMENTS: inconclusive (give it more --seconds)";
			few = 1;
			if (is_control)
				control_ok = 0;
		} else if (is_control) {
			verdict = r.max_t > T_LEAK ? "leak found, as planted (harness works)" : "CONTROL NOT DETECTED: run proves nothing";
			if (!(r.max_t > T_LEAK))
				control_ok = 0;
		} else if (r.max_t > T_LEAK) {
			verdict = "LEAK: timing depends on the secret class";
			leak = 1;
		} else if (r.max_t > 4.5) {
			verdict = "inconclusive (4.5 < |t| <= 10): rerun longer";
		} else {
			verdict = "no leak found";
		}
		printf("%-14s %12.0f %10.2f %6s  %s\n", targets[k].name, r.n, r.max_t,
		       r.max_test == 0 ? "raw" : r.max_test == NPCT + 1 ? "2nd" : r.max_test < 0 ? "-" : "crop",
		       verdict);
		printf("%-14s   (%s)\n", "", targets[k].what);
	}
	if (!chosen[NTARGETS - 1])
		printf("dudect: the control was not run; the verdicts above are not checked\n");
	if (!control_ok)
		return 2;
	if (leak)
		return 1;
	return few ? 4 : 0;
}
