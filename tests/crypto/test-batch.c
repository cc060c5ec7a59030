/* SPDX-License-Identifier: MIT */
/*
 * test-batch.c - the point work of batch verification (crypto/msm.c):
 * - the many-lane square-root candidates (AVX-512 IFMA, crypto/asm/amd64/
 *   msm_ifma.c) against their C twin and fe_pow22523, on random and
 *   extreme inputs
 *   (0, 1, p - 1, p, p + 1, 2^255 - 1, 2^256 - 1, all-ones limbs, ...),
 *   and the dispatch: a CPU with AVX-512 IFMA in a build with the amd64
 *   code must get the IFMA routine;
 * - msm_decode_zip215_vartime against ge_frombytes_zip215 (valid keys,
 *   random bytes, non-canonical y, small order, x = 0 with the sign bit),
 *   for every batch length around the lane groups;
 * - msm_straus_vartime against sums of ge_multi_scalarmult_vartime, for n
 *   around the sizes the code treats apart (0, 1, a lane group, MSM_MAX),
 *   with 128-bit, 256-bit, zero and extreme scalars, duplicate points,
 *   small-order points and the identity, with the IFMA lanes (where the
 *   CPU has them) and with one accumulator;
 * - msm_pippenger_vartime the same way, for n up to MSM_PIP_MAX, with
 *   1, L - 1, 2^128 - 1 scalars and points with Z != 1;
 * - the IFMA lanes' Straus (msm_ifma.c: its odd-multiple tables and
 *   steps) against its C twin lane by lane, and the lanes' schedule
 *   (msm_lanes_schedule) against the reference sum;
 * - msm_is_small_order_vartime against ge_is_small_order.
 * Batch verification as a whole (against single verification) is tested in
 * test-ed25519.c.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "backend.h"
#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"
#include "fe64/ge64_table.h"
#include "sc.h"

/* 1 if the CPU and the OS run AVX-512 F + IFMA (asked here, not of the
 * library, so that a broken probe is seen). */
static int cpu_has_ifma(void)
{
#if defined(__x86_64__)
	unsigned int a, b, c, d;
	uint32_t lo, hi;
	if (__get_cpuid_max(0, NULL) < 7)
		return 0;
	__cpuid(1, a, b, c, d);
	if (((c >> 27) & 1) == 0)
		return 0;
	__asm__ volatile(".byte 0x0f, 0x01, 0xd0" : "=a"(lo), "=d"(hi) : "c"(0));
	if ((lo & 0xe6) != 0xe6)
		return 0;
	__cpuid_count(7, 0, a, b, c, d);
	return ((b >> 16) & 1) && ((b >> 21) & 1);
#else
	return 0;
#endif
}

/* An IFMA routine cpu.c found: there iff the build has the amd64 code (and
 * the CPU ADX: fe64_ops_asm_probe answers) and the CPU IFMA; never without
 * IFMA. */
static void expect_ifma_probe(const void *fn)
{
	if (fe64_ops_asm_probe() != NULL && cpu_has_ifma())
		assert_non_null(fn);
	if (!cpu_has_ifma())
		assert_null(fn);
}

static void rand_fe64(fe64 *f)
{
	uint8_t s[32];
	switch (th_rand_below(4)) {
	case 0:
		th_rand_weird32(s);
		break;
	case 1: /* a limb pattern: each limb 0, 1, all ones or random */
		for (int k = 0; k < 4; k++) {
			uint64_t v[4] = { 0, 1, ~(uint64_t)0, th_rand64() };
			f->v[k] = v[th_rand_below(4)];
		}
		return;
	default:
		th_randbytes(s, 32);
		break;
	}
	for (int k = 0; k < 4; k++) {
		uint64_t w = 0;
		for (int j = 0; j < 8; j++)
			w |= (uint64_t)s[8 * k + j] << (8 * j);
		f->v[k] = w;
	}
}

static void assert_fe64_same(const fe64 *a, const fe64 *b, const char *what, int i)
{
	uint8_t x[32], y[32];
	fe64_tobytes(x, a);
	fe64_tobytes(y, b);
	if (memcmp(x, y, 32) != 0) {
		th_hex_dump("got", x, 32);
		th_hex_dump("want", y, 32);
		fail_msg("%s: element %d differs", what, i);
	}
}

/* The square-root candidates r = u v^3 (u v^7)^((p-5)/8) and v r^2: the
 * IFMA lanes against their C twin msm_sqrt_ratio_many_fe64, and the C twin
 * against the same steps on ref51's fe (fe_pow22523) */
static void test_sqrt_lanes(void **state)
{
	(void)state;
	th_rng_reset("batch-sqrt");
	const ge64_ops *ops = cpu_fe64()->ge;
	msm_sqrt_ratio_lanes_fn *xn = cpu_fe64()->sqrt_lanes;
	/* with IFMA (and the amd64 code), batch verification must use it */
	expect_ifma_probe((const void *)xn);

	enum { N = 3 * MSM_POW_LANES + 5 };
	fe64 u[N], v[N], r[N], c[N], wr[N], wc[N];
	for (int rep = 0; rep < 200; rep++) {
		for (int i = 0; i < N; i++) {
			rand_fe64(&u[i]);
			rand_fe64(&v[i]);
		}
		if (rep < 2) /* the extremes, in order, as u then as v */
			for (size_t i = 0; i < th_weird32_count() && i < N; i++) {
				uint8_t s[32];
				th_weird32(s, i);
				memcpy((rep ? v : u)[i].v, s, 32); /* little-endian host */
			}
		msm_sqrt_ratio_many_fe64(wr, wc, u, v, N, ops);
		/* every length, so the padded last group is covered */
		int n = rep % 2 ? N : (int)th_rand_below(N + 1);
		msm_sqrt_ratio_many_vartime(r, c, u, v, n, cpu_fe64());
		for (int i = 0; i < n; i++) {
			assert_fe64_same(&r[i], &wr[i], "msm_sqrt_ratio_many_vartime r", i);
			assert_fe64_same(&c[i], &wc[i], "msm_sqrt_ratio_many_vartime v r^2", i);
		}
		if (xn != NULL) {
			xn(r, c, u, v);
			for (int i = 0; i < MSM_POW_LANES; i++) {
				assert_fe64_same(&r[i], &wr[i], "IFMA lanes r", i);
				assert_fe64_same(&c[i], &wc[i], "IFMA lanes v r^2", i);
			}
		}
		/* the C twin against the same steps on ref51's fe (radix 2^51) */
		for (int i = 0; i < 4; i++) {
			uint8_t b[32];
			fe fu, fv, f3, f7, fr, fc;
			fe64_tobytes(b, &u[i]);
			fe_frombytes(&fu, b);
			fe64_tobytes(b, &v[i]);
			fe_frombytes(&fv, b);
			fe_sq_tt(&f3, &fv);
			fe_mul_ttt(&f3, &f3, &fv);
			fe_sq_tt(&f7, &f3);
			fe_mul_ttt(&f7, &f7, &fv);
			fe_mul_ttt(&f7, &f7, &fu);
			fe_mul_ttt(&f3, &f3, &fu);
			fe_pow22523(&fr, &f7);
			fe_mul_ttt(&fr, &fr, &f3);
			fe_sq_tt(&fc, &fr);
			fe_mul_ttt(&fc, &fc, &fv);
			fe64 g;
			fe_tobytes(b, &fr);
			fe64_frombytes(&g, b);
			assert_fe64_same(&wr[i], &g, "C twin r against fe_pow22523", i);
			fe_tobytes(b, &fc);
			fe64_frombytes(&g, b);
			assert_fe64_same(&wc[i], &g, "C twin v r^2 against fe_pow22523", i);
		}
	}
}

/* the encodings the decoder must agree on */
static void rand_encoding(uint8_t s[32])
{
	uint8_t sk[64], seed[32];
	switch (th_rand_below(6)) {
	case 0:
	case 1: /* a public key */
		th_randbytes(seed, 32);
		sigil_ed25519_keypair_from_seed(s, sk, seed);
		break;
	case 2: /* non-canonical: y + p for y < 19 */
		memset(s, 0xff, 32);
		s[0] = (uint8_t)(0xed + th_rand_below(19));
		s[31] = 0x7f;
		break;
	case 3: /* extreme y (0, 1, p - 1, p, p + 1, ...: small order or not on the curve) */
		th_weird32(s, th_rand_below(th_weird32_count()));
		break;
	default:
		th_randbytes(s, 32);
		break;
	}
	if (th_rand_below(4) == 0)
		s[31] ^= 0x80; /* the other sign (x = 0 with the sign bit among them) */
}

static void check_decode(const uint8_t (*enc)[32], int n)
{
	const uint8_t *ptr[MSM_MAX];
	ge64_p3 P[MSM_MAX];
	int ok[MSM_MAX];
	for (int i = 0; i < n; i++) {
		ptr[i] = enc[i];
		ok[i] = -7;
	}
	msm_decode_zip215_vartime(P, ok, ptr, n, cpu_fe64());
	for (int i = 0; i < n; i++) {
		ge_p3 Q;
		int want = ge_frombytes_zip215(&Q, enc[i]) == 0;
		if (ok[i] != want) {
			th_hex_dump("encoding", enc[i], 32);
			fail_msg("decode %d of %d: ok %d, ge_frombytes_zip215 says %d", i, n, ok[i], want);
		}
		if (!want)
			continue;
		/* the same affine point (Z = 1 in both), and T = X Y */
		uint8_t a[32], b[32];
		fe64 one = { { 1, 0, 0, 0 } }, xy;
		assert_fe64_same(&P[i].Z, &one, "decoded Z", i);
		fe64_tobytes(a, &P[i].X);
		fe_tobytes(b, &Q.X);
		assert_memory_equal(a, b, 32);
		fe64_tobytes(a, &P[i].Y);
		fe_tobytes(b, &Q.Y);
		assert_memory_equal(a, b, 32);
		fe64_mul_generic(xy.v, P[i].X.v, P[i].Y.v);
		assert_fe64_same(&P[i].T, &xy, "decoded T", i);
	}
}

static void test_decode(void **state)
{
	(void)state;
	th_rng_reset("batch-decode");
	static uint8_t enc[MSM_MAX][32];
	/* every extreme value, both signs */
	int n = 0;
	for (size_t i = 0; i < th_weird32_count(); i++)
		for (int sgn = 0; sgn < 2; sgn++) {
			th_weird32(enc[n], i);
			enc[n][31] = (uint8_t)((enc[n][31] & 0x7f) | (sgn << 7));
			if (++n == MSM_MAX) {
				check_decode((const uint8_t (*)[32])enc, n);
				n = 0;
			}
		}
	check_decode((const uint8_t (*)[32])enc, n);
	/* x = 0 with the sign bit: y = 1 and y = p - 1 (order 1 and 2) */
	memset(enc[0], 0, 32);
	enc[0][0] = 1;
	enc[0][31] = 0x80;
	memset(enc[1], 0xff, 32);
	enc[1][0] = 0xec; /* p - 1 = 2^255 - 20, sign bit set */
	check_decode((const uint8_t (*)[32])enc, 2);
	/* non-canonical y: y + p for y = 0 .. 18 (order 4 at y = 0 +p, ...) */
	for (int y = 0; y < 19; y++) {
		memset(enc[y], 0xff, 32);
		enc[y][0] = (uint8_t)(0xed + y);
		enc[y][31] = 0x7f | (uint8_t)((y & 1) << 7);
	}
	check_decode((const uint8_t (*)[32])enc, 19);
	/* every length from 0 to 2 lane groups + 3, and MSM_MAX */
	for (int len = 0; len <= 2 * MSM_POW_LANES + 3; len++)
		for (int rep = 0; rep < 3; rep++) {
			for (int i = 0; i < len; i++)
				rand_encoding(enc[i]);
			check_decode((const uint8_t (*)[32])enc, len);
		}
	for (int rep = 0; rep < 20; rep++) {
		for (int i = 0; i < MSM_MAX; i++)
			rand_encoding(enc[i]);
		check_decode((const uint8_t (*)[32])enc, MSM_MAX);
	}
}

static void fe64_from_fe_t(fe64 *r, const fe *f)
{
	uint8_t s[32];
	fe_tobytes(s, f);
	fe64_frombytes(r, s);
}

static void p3_to_ge64(ge64_p3 *r, const ge_p3 *p)
{
	fe64_from_fe_t(&r->X, &p->X);
	fe64_from_fe_t(&r->Y, &p->Y);
	fe64_from_fe_t(&r->Z, &p->Z);
	fe64_from_fe_t(&r->T, &p->T);
}

static void ge64_to_bytes(uint8_t s[32], const ge64_p3 *p)
{
	ge_p3 q;
	uint8_t b[32];
	fe64_tobytes(b, &p->X);
	fe_frombytes(&q.X, b);
	fe64_tobytes(b, &p->Y);
	fe_frombytes(&q.Y, b);
	fe64_tobytes(b, &p->Z);
	fe_frombytes(&q.Z, b);
	fe64_tobytes(b, &p->T);
	fe_frombytes(&q.T, b);
	ge_p3_tobytes(s, &q);
}

/* sum a_i P_i + b B by ge.c, GE_MSM_MAX points at a time */
static void reference_msm(uint8_t out[32], const uint8_t (*a)[32], const ge_p3 *P, int n,
                          const uint8_t b[32])
{
	ge_p3 acc, part;
	ge_cached c;
	ge_p1p1 t;
	uint8_t zero[32] = { 0 };
	ge_multi_scalarmult_vartime(&acc, a, P, n < GE_MSM_MAX ? n : GE_MSM_MAX, b);
	for (int i = GE_MSM_MAX; i < n; i += GE_MSM_MAX) {
		int m = n - i < GE_MSM_MAX ? n - i : GE_MSM_MAX;
		ge_multi_scalarmult_vartime(&part, a + i, P + i, m, zero);
		ge_p3_to_cached(&c, &part);
		ge_add(&t, &acc, &c);
		ge_p1p1_to_p3(&acc, &t);
	}
	ge_p3_tobytes(out, &acc);
}

static void rand_scalar(uint8_t s[32])
{
	memset(s, 0, 32);
	switch (th_rand_below(6)) {
	case 0: /* a batch coefficient */
		th_randbytes(s, 16);
		break;
	case 1:
		th_rand_weird32(s);
		break;
	case 2: /* zero */
		break;
	case 3: /* 2^256 - 1 */
		memset(s, 0xff, 32);
		break;
	default:
		th_randbytes(s, 32);
		break;
	}
}

static void rand_point(ge_p3 *P, const ge_p3 *pool, int npool)
{
	uint8_t s[32];
	uint64_t kind = th_rand_below(8);
	if (kind == 2 && npool == 0)
		kind = 3; /* nothing to duplicate yet */
	switch (kind) {
	case 0: /* the identity */
		ge_p3_0(P);
		break;
	case 1: /* y = 0: order 4, or another small-order y from the extremes */
		do
			th_weird32(s, th_rand_below(th_weird32_count()));
		while (ge_frombytes_zip215(P, s) != 0);
		break;
	case 2: /* a duplicate of one of the npool points before it */
		*P = pool[th_rand_below((uint64_t)npool)];
		break;
	default: {
		uint8_t sk[64], seed[32];
		th_randbytes(seed, 32);
		sigil_ed25519_keypair_from_seed(s, sk, seed);
		assert_int_equal(ge_frombytes_zip215(P, s), 0);
		break;
	}
	}
}

/* msm_straus_vartime on cpu.c's parts (the IFMA lanes where the CPU has
 * them) and without lanes (one accumulator) */
static void test_straus(void **state)
{
	(void)state;
	th_rng_reset("batch-straus");
	const ge64_ops *ops = cpu_fe64()->ge;
	fe64_impl nolanes = *cpu_fe64();
	nolanes.straus_lanes = NULL;
	const fe64_impl *impls[2] = { cpu_fe64(), &nolanes };
	static uint8_t a[MSM_MAX][32];
	static ge_p3 P[MSM_MAX];
	static ge64_p3 P64[MSM_MAX];
	static const int sizes[] = { 0, 1, 2, 3, 15, 16, 17, 32, 33, 63, 64, 65, 127, MSM_MAX };
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		int n = sizes[si];
		for (int rep = 0; rep < (n > 64 ? 3 : 8); rep++) {
			uint8_t b[32], got[32], want[32];
			ge64_p3 R;
			for (int i = 0; i < n; i++) {
				rand_scalar(a[i]);
				rand_point(&P[i], P, i);
				if (i == 0 && th_rand_below(2))
					ge_p3_0(&P[0]);
				p3_to_ge64(&P64[i], &P[i]);
			}
			rand_scalar(b);
			const fe64_impl *im = impls[rep & 1];
			msm_straus_vartime(&R, (const uint8_t (*)[32])a, P64, n, b, im);
			ge64_to_bytes(got, &R);
			reference_msm(want, (const uint8_t (*)[32])a, P, n, b);
			if (memcmp(got, want, 32) != 0)
				fail_msg("msm_straus_vartime (%s), n = %d, rep %d: wrong sum",
				         im->straus_lanes != NULL ? "lanes" : "one accumulator", n, rep);
			/* [8] of the result: small order iff ge.c says so */
			ge_p3 Q;
			assert_int_equal(ge_frombytes_zip215(&Q, want), 0);
			assert_int_equal(msm_is_small_order_vartime(&R, ops), ge_is_small_order(&Q));
		}
	}
}

/* msm_pippenger_vartime against the same sums, for n around the chunk
 * sizes of batch verification (128, 256, 512 points) and the small ones;
 * the scalars of rand_scalar (128-bit, 256-bit, 0, 2^256 - 1, extremes),
 * plus 1, L - 1 and all-ones 128-bit ones; the points of rand_point, some
 * given with Z != 1 (every coordinate times a random lambda). */
static void test_pippenger(void **state)
{
	(void)state;
	th_rng_reset("batch-pippenger");
	const ge64_ops *ops = cpu_fe64()->ge;
	static uint8_t a[MSM_PIP_MAX][32];
	static ge_p3 P[MSM_PIP_MAX];
	static ge64_p3 P64[MSM_PIP_MAX];
	static const uint8_t lm1[32] = { 0xec, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58,
	                                 0xd6, 0x9c, 0xf7, 0xa2, 0xde, 0xf9, 0xde, 0x14,
	                                 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10 };
	static const int sizes[] = { 0, 1, 2, 3, 17, 64, 127, 128, 129, 255, 256, 257, 511, MSM_PIP_MAX };
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		int n = sizes[si];
		for (int rep = 0; rep < (n > 128 ? 2 : 6); rep++) {
			uint8_t b[32], got[32], want[32];
			ge64_p3 R;
			for (int i = 0; i < n; i++) {
				rand_scalar(a[i]);
				switch (th_rand_below(8)) {
				case 0: /* 1 */
					memset(a[i], 0, 32);
					a[i][0] = 1;
					break;
				case 1: /* L - 1 */
					memcpy(a[i], lm1, 32);
					break;
				case 2: /* 2^128 - 1 */
					memset(a[i], 0xff, 16);
					memset(a[i] + 16, 0, 16);
					break;
				default:
					break;
				}
				rand_point(&P[i], P, i);
				p3_to_ge64(&P64[i], &P[i]);
				if (th_rand_below(8) == 0) { /* Z != 1 */
					uint8_t ls[32];
					fe64 l;
					th_randbytes(ls, 32);
					ls[0] |= 2;
					ls[31] &= 0x3f; /* nonzero mod p */
					fe64_frombytes(&l, ls);
					ops->fe->mul(P64[i].X.v, P64[i].X.v, l.v);
					ops->fe->mul(P64[i].Y.v, P64[i].Y.v, l.v);
					ops->fe->mul(P64[i].Z.v, P64[i].Z.v, l.v);
					ops->fe->mul(P64[i].T.v, P64[i].T.v, l.v);
				}
			}
			rand_scalar(b);
			if (rep == 1)
				memcpy(b, lm1, 32);
			msm_pippenger_vartime(&R, (const uint8_t (*)[32])a, P64, n, b, ops);
			ge64_to_bytes(got, &R);
			reference_msm(want, (const uint8_t (*)[32])a, P, n, b);
			if (memcmp(got, want, 32) != 0)
				fail_msg("msm_pippenger_vartime, n = %d, rep %d: wrong sum", n, rep);
			ge_p3 Q;
			assert_int_equal(ge_frombytes_zip215(&Q, want), 0);
			assert_int_equal(msm_is_small_order_vartime(&R, ops), ge_is_small_order(&Q));
		}
	}
	/* every scalar zero, b zero: the identity */
	uint8_t zero[32] = { 0 }, got[32], id[32] = { 1 };
	ge64_p3 R;
	memset(a, 0, 32 * 300);
	msm_pippenger_vartime(&R, (const uint8_t (*)[32])a, P64, 300, zero, ops);
	ge64_to_bytes(got, &R);
	assert_memory_equal(got, id, 32);
}

/* The IFMA lanes' Straus against its C twin, lane by lane (the same sums as
 * group elements), on the schedules of random scalars (msm_lanes_schedule)
 * and on made-up ones: every entry added and subtracted, runs of doublings,
 * the identity and small-order points among the P_i; and the schedule's
 * lanes summed against the reference sum. */
static void test_straus_lanes(void **state)
{
	(void)state;
	th_rng_reset("batch-straus-lanes");
	const ge64_ops *ops = cpu_fe64()->ge;
	msm_straus_lanes_fn *sl = cpu_fe64()->straus_lanes;
	expect_ifma_probe((const void *)sl);
	fe64 d2;
	fe64_from_fe_t(&d2, &ge_d2);
	static uint8_t a[MSM_MAX][32];
	static ge_p3 P[MSM_MAX];
	static ge64_p3 P64[MSM_MAX];
	static msm_op sched[MSM_STEPS_MAX][MSM_LANES];
	static const int sizes[] = { 0, 1, 7, 8, 9, 16, 17, 64, 100, MSM_MAX };
	for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
		int n = sizes[si];
		for (int rep = 0; rep < 4; rep++) {
			uint8_t b[32], got[32], want[32];
			ge64_p3 lg[MSM_LANES], lw[MSM_LANES];
			for (int i = 0; i < n; i++) {
				rand_scalar(a[i]);
				rand_point(&P[i], P, i);
				p3_to_ge64(&P64[i], &P[i]);
				if (th_rand_below(3) == 0) {
					/* the same point with X or Y + p (still < 2^256):
					 * extreme limbs for the tables' conversion */
					static const fe64 p64 = { { 0xffffffffffffffed, ~(uint64_t)0, ~(uint64_t)0,
						                    0x7fffffffffffffff } };
					fe64 *c = th_rand_below(2) ? &P64[i].X : &P64[i].Y;
					if (c->v[3] < 0x7fffffffffffffff)
						fe64_add(c, c, &p64);
				}
			}
			rand_scalar(b);
			int steps;
			if (rep < 2) {
				steps = msm_lanes_schedule(sched, (const uint8_t (*)[32])a, n, b);
				assert_true(steps >= 0 && steps <= MSM_STEPS_MAX);
			} else {
				/* made up: each lane walks the entries (of its own
				 * points and B's) with both signs, a doubling after
				 * every few */
				steps = 200 + (int)th_rand_below(100);
				for (int st = 0; st < steps; st++)
					for (int l = 0; l < MSM_LANES; l++) {
						int i = n > 0 ? (st + 3 * l) % (n + 1) : 0;
						if (i == n)
							i = MSM_MAX;
						int op = 2 * MSM_LT_ENTRY(i, (st + l) % 8) + ((st >> 3) & 1);
						sched[st][l] = th_rand_below(4) == 0 ? MSM_OP_DBL : (msm_op)op;
					}
			}
			msm_straus_lanes_generic(lw, P64, n, ge64_bi8, (const msm_op (*)[MSM_LANES])sched,
			                         steps, &d2, ops);
			if (rep < 2) {
				/* the lanes' sums add up to the sum */
				ge64_p3 S = lw[0];
				for (int l = 1; l < MSM_LANES; l++) {
					ge64_cached c;
					ge64_p1p1 t;
					ge64_p3_to_cached(&c, &lw[l], &d2, ops);
					ops->add(&t, &S, &c);
					ops->p1p1_to_p3(&S, &t);
				}
				ge64_to_bytes(got, &S);
				reference_msm(want, (const uint8_t (*)[32])a, P, n, b);
				if (memcmp(got, want, 32) != 0)
					fail_msg("msm_lanes_schedule, n = %d, rep %d: the lanes' sums are wrong", n, rep);
			}
			if (sl == NULL)
				continue;
			sl(lg, P64, n, ge64_bi8, (const msm_op (*)[MSM_LANES])sched, steps, &d2);
			for (int l = 0; l < MSM_LANES; l++) {
				ge64_to_bytes(got, &lg[l]);
				ge64_to_bytes(want, &lw[l]);
				if (memcmp(got, want, 32) != 0)
					fail_msg("IFMA lanes, n = %d, rep %d: lane %d differs from the C twin", n, rep, l);
			}
		}
	}
	if (sl == NULL)
		print_message("# no IFMA lanes here (build or CPU): the C twin checked against the reference only\n");
}

static void test_small_order(void **state)
{
	(void)state;
	th_rng_reset("batch-small-order");
	const ge64_ops *ops = cpu_fe64()->ge;
	int seen_small = 0, seen_big = 0;
	for (size_t i = 0; i < th_weird32_count(); i++)
		for (int sgn = 0; sgn < 2; sgn++) {
			uint8_t s[32];
			ge_p3 Q;
			ge64_p3 P;
			th_weird32(s, i);
			s[31] = (uint8_t)((s[31] & 0x7f) | (sgn << 7));
			if (ge_frombytes_zip215(&Q, s) != 0)
				continue;
			p3_to_ge64(&P, &Q);
			int want = ge_is_small_order(&Q);
			seen_small += want;
			seen_big += !want;
			assert_int_equal(msm_is_small_order_vartime(&P, ops), want);
			msm_p3_neg(&P);
			assert_int_equal(msm_is_small_order_vartime(&P, ops), want);
		}
	assert_true(seen_small > 0);
	ge_p3 Q;
	ge64_p3 P;
	ge_p3_0(&Q);
	p3_to_ge64(&P, &Q);
	assert_int_equal(msm_is_small_order_vartime(&P, ops), 1);
	uint8_t sk[64], seed[32] = { 1 }, pk[32];
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	assert_int_equal(ge_frombytes_zip215(&Q, pk), 0);
	p3_to_ge64(&P, &Q);
	assert_int_equal(msm_is_small_order_vartime(&P, ops), 0);
	(void)seen_big;
}

/* cpu.c's one choice: the portable backend (crypto/ref51/) exactly when
 * there is no field assembly to run (always in a build without assembly,
 * SIGIL_TEST_HAVE_ASM 0), and then batch verification runs ref51's code;
 * otherwise the 4 x 64-bit backend on cpu.c's fe64_impl. */
static void test_backend_choice(void **state)
{
	(void)state;
	const backend *be = backend_get();
	assert_ptr_equal(backend_get(), be);
#if SIGIL_TEST_HAVE_ASM == 0
	assert_null(fe64_ops_asm_probe());
	assert_null(fe64_ops_asm());
#endif
	if (fe64_ops_asm() == NULL) {
		assert_ptr_equal(be, &backend_ref51);
		assert_ptr_equal(be->batch_vartime, backend_ref51.batch_vartime);
		assert_ptr_equal(be->x25519, backend_ref51.x25519);
		assert_null(ge64_ops_asm());
		assert_string_equal(sigil_crypto_impl(), "generic");
	} else {
		assert_ptr_equal(be->impl, cpu_fe64());
		assert_ptr_equal(be->batch_vartime, backend_fe64.batch_vartime);
		assert_ptr_equal(be->x25519, backend_fe64.x25519);
		assert_ptr_equal(cpu_fe64()->fe, fe64_ops_asm());
		assert_ptr_equal(cpu_fe64()->ge, ge64_ops_asm());
		assert_ptr_equal(cpu_fe64()->ge->fe, fe64_ops_asm());
		assert_string_equal(sigil_crypto_impl(), fe64_ops_asm()->name);
	}
}

/* A batch equation for the tables' batch_vartime: term t is s_t (-P_t)
 * with P_t = [k_t] B given by its encoding, b = sum s_t k_t (+ 1 when
 * wrong), so that sum s_t (-P_t) + b B is the identity (resp. B). idx
 * takes every other encoding, so that the compaction is exercised. */
typedef struct eq_ctx {
	int n;
	const uint8_t (*s)[32], (*k)[32];
	int wrong, called;
} eq_ctx;

static int eq_terms(void *arg, const int *ok, int *idx, uint8_t (*scal)[32], uint8_t b[32])
{
	eq_ctx *c = arg;
	int nt = 0;
	c->called++;
	memset(b, 0, 32);
	for (int i = 0; i < c->n; i += 2) {
		assert_int_equal(ok[i], 1);
		idx[nt] = i;
		memcpy(scal[nt], c->s[i], 32);
		sc_muladd(b, c->s[i], c->k[i], b);
		nt++;
	}
	if (c->wrong) {
		uint8_t one[32] = { 1 };
		sc_add(b, b, one);
	}
	return nt;
}

/* Both tables' batch_vartime (ref51's; the 4 x 64-bit one with cpu.c's
 * parts and with the C twins) on the same equations, for n encodings
 * around the small/big and chunk boundaries: 1 when the equation holds,
 * 0 when b is off by one. */
static void test_backend_batch(void **state)
{
	(void)state;
	th_rng_reset("batch-backends");
	static uint8_t enc[BACKEND_BATCH_MAX][32], k[BACKEND_BATCH_MAX][32], s[BACKEND_BATCH_MAX][32];
	static const uint8_t *ptr[BACKEND_BATCH_MAX];
	static int ok[BACKEND_BATCH_MAX];
	for (int i = 0; i < BACKEND_BATCH_MAX; i++) {
		uint8_t h[64];
		ge_p3 P;
		th_randbytes(h, 64);
		sc_reduce(k[i], h);
		ge_scalarmult_base(&P, k[i]);
		ge_p3_tobytes(enc[i], &P);
		th_randbytes(s[i], 16); /* 128-bit coefficients, as in ed25519.c */
		memset(s[i] + 16, 0, 16);
		ptr[i] = enc[i];
	}
	fe64_impl twins = { &fe64_ops_generic, &ge64_ops_generic, ge64_scan_generic, NULL, NULL, NULL, NULL };
	backend b64 = backend_fe64, b64c = backend_fe64;
	b64.impl = cpu_fe64();
	b64c.impl = &twins;
	const backend *tables[] = { &backend_ref51, &b64, &b64c };
	static const int ns[] = { 1, 2, 64, 66, 128, 130, 400, BACKEND_BATCH_MAX };
	for (size_t ti = 0; ti < sizeof tables / sizeof tables[0]; ti++)
		for (size_t ni = 0; ni < sizeof ns / sizeof ns[0]; ni++) {
			const backend *be = tables[ti];
			int n = ns[ni];
			if (be == &b64c && n > 130)
				continue; /* the C twins are slow; Pippenger runs on cpu.c's parts */
			for (int wrong = 0; wrong < 2; wrong++) {
				eq_ctx c = { n, (const uint8_t (*)[32])s, (const uint8_t (*)[32])k, wrong, 0 };
				int r = be->batch_vartime(be, ok, ptr, n, eq_terms, &c);
				if (r != !wrong)
					fail_msg("table %zu, n = %d, wrong = %d: %d", ti, n, wrong, r);
				assert_int_equal(c.called, 1);
			}
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_backend_choice),
		cmocka_unit_test(test_backend_batch),
		cmocka_unit_test(test_sqrt_lanes),
		cmocka_unit_test(test_decode),
		cmocka_unit_test(test_straus),
		cmocka_unit_test(test_pippenger),
		cmocka_unit_test(test_straus_lanes),
		cmocka_unit_test(test_small_order),
	};
	return th_run(tests);
}
