/* SPDX-License-Identifier: MIT */
/*
 * rng.c - the tests' seeded RNG (xoshiro256** seeded by splitmix64; Blackman
 * and Vigna) and generators of edge values: the 51/52-bit "weird limbs" of
 * edwards25519's field tests and a table of weird 32-byte integers.
 *
 * Not for cryptography: it only makes test inputs reproducible. The seed is
 * printed at start and again on failure; SIGIL_TEST_SEED=<n> repeats a run.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t seed;
static uint64_t s[4];
static int initialised;

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static void seed_state(uint64_t x)
{
	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&x);
}

void th_rng_init(void)
{
	const char *env = getenv("SIGIL_TEST_SEED");
	if (env != NULL && *env != '\0') {
		char *end;
		seed = strtoull(env, &end, 0);
		if (*end != '\0') {
			fprintf(stderr, "# SIGIL_TEST_SEED=%s is not a number\n", env);
			exit(2);
		}
	} else {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t x = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
		seed = splitmix64(&x);
	}
	fprintf(stderr, "# random seed %llu (SIGIL_TEST_SEED=%llu repeats this run)\n",
	        (unsigned long long)seed, (unsigned long long)seed);
	seed_state(seed);
	initialised = 1;
}

void th_rng_reset(const char *tag)
{
	if (!initialised)
		th_rng_init();
	uint64_t x = seed;
	/* FNV-1a of the tag, so each test gets its own stream from one seed */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const char *p = tag; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ULL;
	seed_state(x ^ h);
}

uint64_t th_rng_seed(void)
{
	return seed;
}

uint64_t th_rand64(void)
{
	if (!initialised)
		th_rng_init();
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

uint64_t th_rand_below(uint64_t n)
{
	/* rejection sampling: uniform, no modulo bias */
	uint64_t lim = UINT64_MAX - UINT64_MAX % n;
	uint64_t r;
	do
		r = th_rand64();
	while (r >= lim);
	return r % n;
}

void th_randbytes(uint8_t *out, size_t n)
{
	while (n > 0) {
		uint64_t r = th_rand64();
		size_t k = n < 8 ? n : 8;
		memcpy(out, &r, k);
		out += k;
		n -= k;
	}
}

/* edwards25519 field_test.go weirdLimbs51 / weirdLimbs52: values near the
 * limb bounds, repeated so that they come up often. */
static const uint64_t weird51[] = {
	0, 0, 0, 0,
	1,
	19 - 1,
	19,
	0x2aaaaaaaaaaaaULL,
	0x5555555555555ULL,
	(1ULL << 51) - 20,
	(1ULL << 51) - 19,
	(1ULL << 51) - 1, (1ULL << 51) - 1,
	(1ULL << 51) - 1, (1ULL << 51) - 1,
};

static const uint64_t weird52[] = {
	0, 0, 0, 0, 0, 0,
	1,
	19 - 1,
	19,
	0x2aaaaaaaaaaaaULL,
	0x5555555555555ULL,
	(1ULL << 51) - 20,
	(1ULL << 51) - 19,
	(1ULL << 51) - 1, (1ULL << 51) - 1,
	(1ULL << 51) - 1, (1ULL << 51) - 1,
	(1ULL << 51) - 1, (1ULL << 51) - 1,
	1ULL << 51,
	(1ULL << 51) + 1,
	(1ULL << 52) - 19,
	(1ULL << 52) - 1,
};

void th_weird_limbs51(uint64_t l[5])
{
	for (int i = 0; i < 5; i++)
		l[i] = weird51[th_rand_below(sizeof(weird51) / sizeof(weird51[0]))];
}

void th_weird_limbs52(uint64_t l[5])
{
	for (int i = 0; i < 5; i++)
		l[i] = weird52[th_rand_below(sizeof(weird52) / sizeof(weird52[0]))];
}

void th_rand_limbs(uint64_t l[5], int bits)
{
	if (th_rand64() & 1) {
		if (bits >= 52)
			th_weird_limbs52(l);
		else
			th_weird_limbs51(l);
		return;
	}
	for (int i = 0; i < 5; i++)
		l[i] = th_rand64() & ((1ULL << bits) - 1);
}

/* Little-endian; p = 2^255 - 19, L = 2^252 + 27742317777372353535851937790883648493.
 * Computed with Python int.to_bytes(32, 'little'). */
static const struct {
	const char *name;
	const char *hex;
} weird32[] = {
	{ "0", "0000000000000000000000000000000000000000000000000000000000000000" },
	{ "1", "0100000000000000000000000000000000000000000000000000000000000000" },
	{ "2", "0200000000000000000000000000000000000000000000000000000000000000" },
	{ "9", "0900000000000000000000000000000000000000000000000000000000000000" },
	{ "19", "1300000000000000000000000000000000000000000000000000000000000000" },
	{ "2^51-1", "ffffffffffff0700000000000000000000000000000000000000000000000000" },
	{ "2^51", "0000000000000800000000000000000000000000000000000000000000000000" },
	{ "2^52-1", "ffffffffffff0f00000000000000000000000000000000000000000000000000" },
	{ "2^64-1", "ffffffffffffffff000000000000000000000000000000000000000000000000" },
	{ "2^64", "0000000000000000010000000000000000000000000000000000000000000000" },
	{ "2^128", "0000000000000000000000000000000001000000000000000000000000000000" },
	{ "2^252-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff0f" },
	{ "2^252", "0000000000000000000000000000000000000000000000000000000000000010" },
	{ "L-1", "ecd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010" },
	{ "L", "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010" },
	{ "L+1", "eed3f55c1a631258d69cf7a2def9de1400000000000000000000000000000010" },
	{ "2L-1", "d9a7ebb934c624b0ac39ef45bdf3bd2900000000000000000000000000000020" },
	{ "2L", "daa7ebb934c624b0ac39ef45bdf3bd2900000000000000000000000000000020" },
	{ "8L-1", "679faee7d21893c0b2e6bc17f5cef7a600000000000000000000000000000080" },
	{ "8L", "689faee7d21893c0b2e6bc17f5cef7a600000000000000000000000000000080" },
	{ "2^253-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff1f" },
	{ "p-19", "daffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "p-2", "ebffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "p-1", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "p", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "p+1", "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "p+2", "efffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "2^255-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
	{ "2^255", "0000000000000000000000000000000000000000000000000000000000000080" },
	{ "2^255+1", "0100000000000000000000000000000000000000000000000000000000000080" },
	{ "2^255+18", "1200000000000000000000000000000000000000000000000000000000000080" },
	{ "2p-1", "d9ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2p", "daffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2p+1", "dbffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2^255+L", "edd3f55c1a631258d69cf7a2def9de1400000000000000000000000000000090" },
	{ "2^256-20", "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2^256-19", "edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2^256-2", "feffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "2^256-1", "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff" },
	{ "0x55..55", "5555555555555555555555555555555555555555555555555555555555555555" },
	{ "0xaa..aa", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" },
	{ "0x7fff..ff00", "00ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
};

size_t th_weird32_count(void)
{
	return sizeof(weird32) / sizeof(weird32[0]);
}

void th_weird32(uint8_t out[32], size_t i)
{
	assert_true(i < th_weird32_count());
	assert_int_equal(th_hex_decode(out, 32, weird32[i].hex), 0);
}

const char *th_weird32_name(size_t i)
{
	return i < th_weird32_count() ? weird32[i].name : "?";
}

/* out += d (mod 2^256), d a small signed value */
static void add_small(uint8_t out[32], int d)
{
	if (d >= 0) {
		unsigned c = (unsigned)d;
		for (int i = 0; i < 32 && c; i++) {
			c += out[i];
			out[i] = (uint8_t)c;
			c >>= 8;
		}
	} else {
		unsigned b = (unsigned)-d;
		for (int i = 0; i < 32 && b; i++) {
			unsigned v = out[i];
			out[i] = (uint8_t)(v - b);
			b = (v < b) ? (b - v + 255) / 256 : 0;
		}
	}
}

void th_rand_weird32(uint8_t out[32])
{
	switch (th_rand_below(5)) {
	case 0:
		th_weird32(out, th_rand_below(th_weird32_count()));
		break;
	case 1:
		th_weird32(out, th_rand_below(th_weird32_count()));
		add_small(out, (int)th_rand_below(65) - 32);
		break;
	case 2:
		for (int i = 0; i < 32; i++)
			out[i] = (th_rand64() & 1) ? 0xff : 0x00;
		break;
	default:
		th_randbytes(out, 32);
		break;
	}
}
