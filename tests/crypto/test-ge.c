/* SPDX-License-Identifier: MIT */
/*
 * test-ge.c - edwards25519 points (crypto/ge.h): decode/encode round trips
 * (canonical, non-canonical, off-curve, x = 0 with the sign bit), the curve
 * equation on decoded and computed points, scalarmult_base against
 * libsodium and against the double- and multi-scalar multiplications,
 * add/sub/dbl/neg/cofactor consistency (and against libsodium's point
 * addition), small-order detection, the fixed-base table lookup for
 * every row and every digit, and the fe64 comb (ge64.h: its scans on every
 * row and digit, the C twin against the AVX2 one, and ge64_scalarmult_base
 * with the C point routines against libsodium).
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "fe64/ge64.h"
#include "fe64/ge64_table.h"
#include "sc.h"

static const uint8_t identity_enc[32] = { 1 };

/* the 14 small-order encodings (see test-ed25519.c for how they were computed) */
static const char *small_order[14] = {
	"0100000000000000000000000000000000000000000000000000000000000000",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"0000000000000000000000000000000000000000000000000000000000000000",
	"0000000000000000000000000000000000000000000000000000000000000080",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc05",
	"26e8958fc2b227b045c3f489f2ef98f0d5dfac05d3c63339b13802886d53fc85",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac037a",
	"c7176a703d4dd84fba3c0b760d10670f2a2053fa2c39ccc64ec7fd7792ac03fa",
	/* non-canonical: x = 0 with the sign bit (3), y = p, y = p + 1 */
	"0100000000000000000000000000000000000000000000000000000000000080",
	"ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
	"edffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
	"eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f",
};

static void enc3(uint8_t s[32], const ge_p3 *p)
{
	ge_p3_tobytes(s, p);
}

/* a random scalar below L */
static void rand_scalar(uint8_t a[32])
{
	uint8_t wide[64];
	th_randbytes(wide, 64);
	sc_reduce(a, wide);
}

/* P = [a]B for a random a */
static void rand_point(ge_p3 *P, uint8_t a[32])
{
	rand_scalar(a);
	ge_scalarmult_base(P, a);
}

/* the curve equation in extended coordinates: (-X^2 + Y^2) Z^2 = Z^4 + d X^2 Y^2 and XY = ZT */
static int on_curve(const ge_p3 *p)
{
	fe x2, y2, z2, z4, lhs, rhs, t, xy, zt;
	fe_loose l;
	fe_sq_tt(&x2, &p->X);
	fe_sq_tt(&y2, &p->Y);
	fe_sq_tt(&z2, &p->Z);
	fe_sq_tt(&z4, &z2);
	fe_sub(&l, &y2, &x2);
	fe_mul_tlt(&lhs, &l, &z2);
	fe_mul_ttt(&t, &x2, &y2);
	fe_mul_ttt(&t, &t, &ge_d);
	fe_add(&l, &z4, &t);
	fe_carry(&rhs, &l);
	fe_mul_ttt(&xy, &p->X, &p->Y);
	fe_mul_ttt(&zt, &p->Z, &p->T);
	return fe_equal(&lhs, &rhs) & fe_equal(&xy, &zt) & !fe_iszero(&p->Z);
}

static void p1p1_to_bytes(uint8_t s[32], const ge_p1p1 *r)
{
	ge_p3 p;
	ge_p1p1_to_p3(&p, r);
	assert_true(on_curve(&p));
	enc3(s, &p);
}

/* ---- tests ------------------------------------------------------------------ */

static void test_base_vs_sodium(void **state)
{
	th_rng_reset("ge-base");
	assert_true(sodium_init() >= 0);
	for (int i = 0; i < 2000; i++) {
		uint8_t a[32], got[32], want[32];
		if (i < (int)th_weird32_count()) {
			th_weird32(a, (size_t)i);
		} else if (i % 2) {
			rand_scalar(a);
		} else {
			th_randbytes(a, 32);
		}
		a[31] &= 0x7f; /* ge_scalarmult_base: a[31] <= 127 */
		ge_p3 P;
		ge_scalarmult_base(&P, a);
		assert_true(on_curve(&P));
		enc3(got, &P);
		if (crypto_scalarmult_ed25519_base_noclamp(want, a) != 0) {
			/* libsodium refuses a = 0 mod L (the identity) */
			th_assert_bytes_eq(got, identity_enc, 32);
			continue;
		}
		th_assert_bytes_eq(got, want, 32);
	}
	/* B itself (RFC 8032: y = 4/5) */
	uint8_t one[32] = { 1 }, enc[32];
	ge_p3 P;
	ge_scalarmult_base(&P, one);
	enc3(enc, &P);
	th_assert_hex_eq(enc, "5866666666666666666666666666666666666666666666666666666666666666", 32);
}

/* [a]A + [b]B with A = [x]B equals [a x + b]B, for any 256-bit a and b */
static void test_double_scalarmult(void **state)
{
	th_rng_reset("ge-double");
	for (int i = 0; i < 500; i++) {
		uint8_t x[32], a[32], b[32], ab[32], got[32], want[32];
		ge_p3 A, W;
		ge_p2 r;
		rand_point(&A, x);
		if (i % 4 == 0) {
			th_rand_weird32(a);
			th_rand_weird32(b);
		} else {
			th_randbytes(a, 32);
			th_randbytes(b, 32);
		}
		if (i == 1)
			memset(a, 0, 32);
		if (i == 2)
			memset(b, 0, 32);
		ge_double_scalarmult_vartime(&r, a, &A, b);
		ge_tobytes(got, &r);
		sc_muladd(ab, a, x, b);
		ge_scalarmult_base(&W, ab);
		enc3(want, &W);
		th_assert_bytes_eq(got, want, 32);
	}
	/* A = identity: only [b]B remains */
	uint8_t b[32], got[32], want[32];
	ge_p3 I, W;
	ge_p2 r;
	ge_p3_0(&I);
	rand_scalar(b);
	uint8_t a[32];
	th_randbytes(a, 32);
	ge_double_scalarmult_vartime(&r, a, &I, b);
	ge_tobytes(got, &r);
	ge_scalarmult_base(&W, b);
	enc3(want, &W);
	th_assert_bytes_eq(got, want, 32);
}

static void test_multi_scalarmult(void **state)
{
	th_rng_reset("ge-multi");
	static ge_p3 P[GE_MSM_MAX];
	static uint8_t a[GE_MSM_MAX][32], x[GE_MSM_MAX][32];
	for (int n = 0; n <= GE_MSM_MAX; n++) {
		uint8_t b[32], sum[32], got[32], want[32];
		rand_scalar(b);
		memcpy(sum, b, 32);
		for (int i = 0; i < n; i++) {
			rand_point(&P[i], x[i]);
			if (n % 3 == 0)
				th_rand_weird32(a[i]);
			else
				th_randbytes(a[i], 32);
			sc_muladd(sum, a[i], x[i], sum);
		}
		ge_p3 R, W;
		ge_multi_scalarmult_vartime(&R, (const uint8_t(*)[32])a, P, n, b);
		assert_true(on_curve(&R));
		enc3(got, &R);
		ge_scalarmult_base(&W, sum);
		enc3(want, &W);
		th_assert_bytes_eq(got, want, 32);
	}
}

static void test_decode_round_trip(void **state)
{
	th_rng_reset("ge-decode");
	int decoded = 0;
	for (int i = 0; i < 3000; i++) {
		uint8_t s[32], t[32], x[32];
		ge_p3 P, Q;
		if (i % 2) {
			rand_point(&P, x);
			enc3(s, &P);
		} else {
			th_randbytes(s, 32);
		}
		memset(&Q, 0x5a, sizeof(Q));
		ge_p3 Q0 = Q;
		int r = ge_frombytes(&Q, s);
		int rz = ge_frombytes_zip215(&P, s);
		assert_int_equal(r, rz); /* they differ only on x = 0 with the sign bit */
		if (r != 0) {
			assert_int_equal(r, -1);
			assert_true(i % 2 == 0); /* a computed point always decodes */
			th_assert_bytes_eq(&Q, &Q0, sizeof(Q)); /* untouched on failure */
			continue;
		}
		decoded++;
		assert_true(on_curve(&Q));
		enc3(t, &Q);
		if (ge_is_canonical(s))
			th_assert_bytes_eq(t, s, 32);
		assert_int_equal(ge_p3_equal(&P, &Q), 1);
	}
	assert_true(decoded > 1700 && decoded < 2800); /* 1500 computed + about half of 1500 random */
}

/* y + p for y < 19, on the curve or not, both signs */
static void test_decode_noncanonical(void **state)
{
	for (int y = 0; y < 19; y++)
		for (int sign = 0; sign < 2; sign++) {
			uint8_t nc[32], c[32] = { 0 }, e1[32], e2[32];
			memset(nc, 0xff, 32);
			nc[0] = (uint8_t)(0xed + y);
			nc[31] = (uint8_t)(0x7f | sign << 7);
			c[0] = (uint8_t)y;
			c[31] = (uint8_t)(sign << 7);
			assert_int_equal(ge_is_canonical(nc), 0);
			assert_int_equal(ge_is_canonical(c), 1);
			ge_p3 P, Q;
			int rc = ge_frombytes(&P, c), rn = ge_frombytes(&Q, nc);
			/* y + p decodes exactly when y does (and to the same point) */
			assert_int_equal(rc, rn);
			int rcz = ge_frombytes_zip215(&P, c), rnz = ge_frombytes_zip215(&Q, nc);
			assert_int_equal(rcz, rnz);
			if (rcz == 0) {
				enc3(e1, &P);
				enc3(e2, &Q);
				th_assert_bytes_eq(e1, e2, 32);
				assert_int_equal(ge_p3_equal(&P, &Q), 1);
			}
			/* y = 2 and 7 are off the curve (test-ed25519.c) */
			if (y == 2 || y == 7) {
				assert_int_equal(rn, -1);
				assert_int_equal(rnz, -1);
			}
		}
}

/* x = 0 with the sign bit: refused by ge_frombytes (RFC 8032 5.1.3 step 4),
 * accepted by ge_frombytes_zip215 (as ed25519-zebra does) */
static void test_decode_x0_sign(void **state)
{
	static const struct {
		const char *hex, *canon;
	} x0[] = {
		{ "0100000000000000000000000000000000000000000000000000000000000080",
		  "0100000000000000000000000000000000000000000000000000000000000000" },
		{ "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		  "ecffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff7f" },
		{ "eeffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
		  "0100000000000000000000000000000000000000000000000000000000000000" },
	};
	for (size_t i = 0; i < 3; i++) {
		uint8_t s[32], e[32];
		ge_p3 P;
		assert_int_equal(th_hex_decode(s, 32, x0[i].hex), 0);
		assert_int_equal(ge_frombytes(&P, s), -1);
		assert_int_equal(ge_frombytes_zip215(&P, s), 0);
		assert_true(on_curve(&P));
		enc3(e, &P);
		th_assert_hex_eq(e, x0[i].canon, 32);
	}
}

static void test_group_laws(void **state)
{
	th_rng_reset("ge-laws");
	assert_true(sodium_init() >= 0);
	for (int i = 0; i < 300; i++) {
		uint8_t x[32], y[32], ep[32], eq[32], got[32], want[32];
		ge_p3 P, Q, R, S, I;
		ge_p1p1 t;
		ge_p2 p2;
		ge_cached c;
		rand_point(&P, x);
		rand_point(&Q, y);
		enc3(ep, &P);
		enc3(eq, &Q);
		ge_p3_0(&I);

		/* P + Q against libsodium and against [x + y]B */
		ge_p3_add(&R, &P, &Q);
		assert_true(on_curve(&R));
		enc3(got, &R);
		assert_int_equal(crypto_core_ed25519_add(want, ep, eq), 0);
		th_assert_bytes_eq(got, want, 32);
		uint8_t s[32];
		sc_add(s, x, y);
		ge_scalarmult_base(&S, s);
		assert_int_equal(ge_p3_equal(&R, &S), 1);
		/* P - Q against libsodium; (P + Q) - Q = P */
		ge_p3_sub(&S, &P, &Q);
		enc3(got, &S);
		assert_int_equal(crypto_core_ed25519_sub(want, ep, eq), 0);
		th_assert_bytes_eq(got, want, 32);
		ge_p3_sub(&S, &R, &Q);
		assert_int_equal(ge_p3_equal(&S, &P), 1);
		/* the cached/precomp forms give the same sums */
		ge_p3_to_cached(&c, &Q);
		ge_add(&t, &P, &c);
		p1p1_to_bytes(got, &t);
		enc3(want, &R);
		th_assert_bytes_eq(got, want, 32);
		ge_sub(&t, &R, &c);
		p1p1_to_bytes(got, &t);
		th_assert_bytes_eq(got, ep, 32);
		/* 2P four ways: dbl_p3, add, p2 dbl, p3 dbl */
		ge_p3_dbl_p3(&S, &P);
		ge_p3_add(&R, &P, &P);
		assert_int_equal(ge_p3_equal(&S, &R), 1);
		ge_p3_to_p2(&p2, &P);
		ge_tobytes(got, &p2);
		th_assert_bytes_eq(got, ep, 32);
		ge_p2_dbl(&t, &p2);
		p1p1_to_bytes(got, &t);
		enc3(want, &S);
		th_assert_bytes_eq(got, want, 32);
		ge_p3_dbl(&t, &P);
		p1p1_to_bytes(got, &t);
		th_assert_bytes_eq(got, want, 32);
		ge_p1p1_to_p2(&p2, &t);
		ge_tobytes(got, &p2);
		th_assert_bytes_eq(got, want, 32);
		/* identity and negation */
		ge_p3_add(&R, &P, &I);
		assert_int_equal(ge_p3_equal(&R, &P), 1);
		ge_p3_sub(&R, &P, &P);
		assert_int_equal(ge_p3_is_identity(&R), 1);
		ge_p3_neg(&S, &P);
		ge_p3_add(&R, &P, &S);
		assert_int_equal(ge_p3_is_identity(&R), 1);
		assert_int_equal(ge_p3_is_identity(&P), 0);
		assert_int_equal(ge_p3_equal(&P, &Q), 0);
		/* [8]P = 2(2(2P)) */
		ge_mul_by_cofactor(&R, &P);
		ge_p3_dbl_p3(&S, &P);
		ge_p3_dbl_p3(&S, &S);
		ge_p3_dbl_p3(&S, &S);
		assert_int_equal(ge_p3_equal(&R, &S), 1);
		/* a decoded copy (Z = 1) equals the computed point (Z != 1) */
		assert_int_equal(ge_frombytes(&S, ep), 0);
		assert_int_equal(ge_p3_equal(&S, &P), 1);
	}
	/* the identity in every representation encodes as (0, 1) */
	ge_p3 I;
	ge_p2 I2;
	uint8_t e[32];
	ge_p3_0(&I);
	enc3(e, &I);
	th_assert_bytes_eq(e, identity_enc, 32);
	ge_p2_0(&I2);
	ge_tobytes(e, &I2);
	th_assert_bytes_eq(e, identity_enc, 32);
	assert_int_equal(ge_p3_is_identity(&I), 1);
	ge_cached ic;
	ge_cached_0(&ic);
	ge_p1p1 t;
	uint8_t x[32], ep[32];
	ge_p3 P;
	rand_point(&P, x);
	enc3(ep, &P);
	ge_add(&t, &P, &ic);
	p1p1_to_bytes(e, &t);
	th_assert_bytes_eq(e, ep, 32);
	ge_precomp ip;
	ge_precomp_0(&ip);
	ge_madd(&t, &P, &ip);
	p1p1_to_bytes(e, &t);
	th_assert_bytes_eq(e, ep, 32);
}

static void test_small_order(void **state)
{
	th_rng_reset("ge-small");
	assert_true(sodium_init() >= 0);
	for (size_t i = 0; i < 14; i++) {
		uint8_t s[32];
		ge_p3 T;
		assert_int_equal(th_hex_decode(s, 32, small_order[i]), 0);
		assert_int_equal(ge_has_small_order(s), 1);
		assert_int_equal(ge_frombytes_zip215(&T, s), 0);
		assert_int_equal(ge_is_small_order(&T), 1);
		ge_p3 E;
		ge_mul_by_cofactor(&E, &T);
		assert_int_equal(ge_p3_is_identity(&E), 1);
		/* agreement with libsodium's blocklist where it has an opinion:
		 * its is_valid_point refuses small order */
		assert_int_equal(crypto_core_ed25519_is_valid_point(s), 0);
	}
	for (int i = 0; i < 300; i++) {
		uint8_t x[32], s[32], m[32];
		ge_p3 P, T, M;
		rand_point(&P, x);
		enc3(s, &P);
		assert_int_equal(ge_has_small_order(s), 0);
		assert_int_equal(ge_is_small_order(&P), 0);
		/* mixed order: P + T is of neither kind */
		assert_int_equal(ge_frombytes(&T, (const uint8_t *)"\x26\xe8\x95\x8f\xc2\xb2\x27\xb0\x45\xc3\xf4\x89"
		                                                  "\xf2\xef\x98\xf0\xd5\xdf\xac\x05\xd3\xc6\x33\x39"
		                                                  "\xb1\x38\x02\x88\x6d\x53\xfc\x05"),
		                 0);
		ge_p3_add(&M, &P, &T);
		enc3(m, &M);
		assert_int_equal(ge_has_small_order(m), 0);
		assert_int_equal(ge_is_small_order(&M), 0);
	}
	ge_p3 I;
	ge_p3_0(&I);
	assert_int_equal(ge_is_small_order(&I), 1);
}

static void test_is_canonical(void **state)
{
	for (size_t i = 0; i < th_weird32_count(); i++) {
		uint8_t s[32];
		th_weird32(s, i);
		/* canonical iff the low 255 bits are < p = 2^255 - 19 */
		int want = !((s[31] & 0x7f) == 0x7f && s[0] >= 0xed);
		for (int j = 1; j < 31 && !want; j++)
			want = s[j] != 0xff;
		if (ge_is_canonical(s) != want)
			fail_msg("ge_is_canonical(%s) = %d", th_weird32_name(i), ge_is_canonical(s));
	}
	/* p - 2^(8 j) for every byte j in 1..31 (byte j of p minus 1) is < p:
	 * canonical, with either sign bit; every byte 1..31 is looked at. In
	 * particular p - 2^240 = ed, 29 x ff, fe, 7f. */
	for (int j = 1; j < 32; j++)
		for (int sign = 0; sign < 2; sign++) {
			uint8_t s[32];
			memset(s, 0xff, 32);
			s[0] = 0xed;
			s[31] = 0x7f;
			s[j]--;
			s[31] |= (uint8_t)(sign << 7);
			if (ge_is_canonical(s) != 1)
				fail_msg("ge_is_canonical(p - 2^%d, sign %d) = %d", 8 * j, sign, ge_is_canonical(s));
		}
	static const uint8_t p_minus_2_240[32] = {
		0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0x7f,
	};
	assert_int_equal(ge_is_canonical(p_minus_2_240), 1);
}

/* ge_precomp_select(pos, b) = [b 256^pos]B, every row, every b in [-8, 8] */
static void test_precomp_select(void **state)
{
	for (int pos = 0; pos < 32; pos++)
		for (int b = -8; b <= 8; b++) {
			ge_precomp t;
			ge_p3 I, W;
			ge_p1p1 r;
			uint8_t got[32], want[32], k[32] = { 0 };
			ge_precomp_select(&t, pos, (signed char)b);
			ge_p3_0(&I);
			ge_madd(&r, &I, &t);
			p1p1_to_bytes(got, &r);
			k[pos] = (uint8_t)(b < 0 ? -b : b); /* |b| 256^pos */
			ge_scalarmult_base(&W, k);
			if (b < 0)
				ge_p3_neg(&W, &W);
			enc3(want, &W);
			if (memcmp(got, want, 32) != 0) {
				print_error("ge_precomp_select(pos %d, b %d)\n", pos, b);
				th_assert_bytes_eq(got, want, 32);
			}
		}
}

/* ge64_precomp (radix 2^64) -> ge_precomp (radix 2^51), through bytes */
static void precomp64_to_51(ge_precomp *r, const ge64_precomp *t)
{
	uint8_t s[32];
	fe64_tobytes(s, &t->yplusx);
	fe_frombytes(&r->yplusx, s);
	fe64_tobytes(s, &t->yminusx);
	fe_frombytes(&r->yminusx, s);
	fe64_tobytes(s, &t->xy2d);
	fe_frombytes(&r->xy2d, s);
}

/* The comb's scans (the C twin and, when this build and CPU have it, the
 * AVX2 routine): every row, every digit b in [-N, N], the same bytes from
 * both, and the point is [b 2^(P W row)]B by libsodium (the identity for
 * b = 0). */
static void test_ge64_comb_scan(void **state)
{
	ge64_scan_fn *avx2 = ge64_scan_asm_probe();
	const int n = GE64_COMB_N;
	assert_true(sodium_init() >= 0);
	assert_int_equal(n, 1 << (GE64_COMB_W - 1));
	assert_int_equal(GE64_COMB_ROWS, (GE64_COMB_DIGITS + GE64_COMB_PASSES - 1) / GE64_COMB_PASSES);
	assert_true(GE64_COMB_W * GE64_COMB_DIGITS >= 256);
	print_message("# AVX2 scan %s\n", avx2 != NULL ? "tested" : "not in this build or CPU");
	for (int row = 0; row < GE64_COMB_ROWS; row++)
		for (int b = -n; b <= n; b++) {
			ge64_precomp t, t2;
			ge_precomp t51;
			ge_p3 I;
			ge_p1p1 r;
			uint8_t got[32], want[32], k[32] = { 0 };
			memset(&t, 0xa5, sizeof t); /* every byte must be written */
			ge64_scan_generic(&t, ge64_comb[row], (uint64_t)n, b);
			if (avx2 != NULL) {
				memset(&t2, 0x5a, sizeof t2);
				avx2(&t2, ge64_comb[row], (uint64_t)n, b);
				if (memcmp(&t, &t2, sizeof t) != 0) {
					print_error("ge64_scan_avx2(row %d, b %d)\n", row, b);
					th_assert_bytes_eq(&t2, &t, sizeof t);
				}
			}
			precomp64_to_51(&t51, &t);
			ge_p3_0(&I);
			ge_madd(&r, &I, &t51);
			p1p1_to_bytes(got, &r);
			/* k = |b| 2^(P W row) mod L (the last rows pass 2^255) */
			uint8_t wide[64] = { 0 };
			unsigned bit = (unsigned)(GE64_COMB_PASSES * GE64_COMB_W * row);
			unsigned v = (unsigned)(b < 0 ? -b : b) << (bit % 8);
			wide[bit / 8] = (uint8_t)v;
			wide[bit / 8 + 1] = (uint8_t)(v >> 8);
			sc_reduce(k, wide);
			if (b == 0) {
				memcpy(want, identity_enc, 32);
			} else {
				assert_int_equal(crypto_scalarmult_ed25519_base_noclamp(want, k), 0);
				if (b < 0)
					want[31] ^= 0x80; /* -P: x negated (x != 0 here) */
			}
			if (memcmp(got, want, 32) != 0) {
				print_error("ge64_scan_generic(row %d, b %d)\n", row, b);
				th_assert_bytes_eq(got, want, 32);
			}
		}
}

/* ge64_scalarmult_base with the C point routines, with each scan, against
 * libsodium: random scalars below L and below 2^255, the weird 32-byte
 * values, and scalars whose every W-bit window is the same value (2^(W-1)
 * and 2^(W-1) - 1: the recoding's carry edges; all ones). */
static void test_ge64_base_generic(void **state)
{
	ge64_scan_fn *scans[2] = { ge64_scan_generic, ge64_scan_asm_probe() };
	th_rng_reset("ge64-base");
	assert_true(sodium_init() >= 0);
	for (int i = 0; i < 400; i++) {
		uint8_t a[32] = { 0 }, got[32], want[32];
		int edge = i - (int)th_weird32_count();
		if (i < (int)th_weird32_count()) {
			th_weird32(a, (size_t)i);
		} else if (edge < 3) {
			unsigned win = edge == 0 ? 1u << (GE64_COMB_W - 1)
			               : edge == 1 ? (1u << (GE64_COMB_W - 1)) - 1
			                           : (1u << GE64_COMB_W) - 1;
			for (unsigned bit = 0; bit < 255; bit++)
				if ((win >> (bit % GE64_COMB_W)) & 1)
					a[bit / 8] |= (uint8_t)(1u << (bit % 8));
		} else if (i % 2) {
			rand_scalar(a);
		} else {
			th_randbytes(a, 32);
		}
		a[31] &= 0x7f;
		if (crypto_scalarmult_ed25519_base_noclamp(want, a) != 0)
			memcpy(want, identity_enc, 32);
		for (int s = 0; s < 2; s++) {
			if (scans[s] == NULL)
				continue;
			ge_p3 P;
			ge64_scalarmult_base_scan(&P, a, &ge64_ops_generic, scans[s]);
			assert_true(on_curve(&P));
			enc3(got, &P);
			if (memcmp(got, want, 32) != 0) {
				print_error("ge64_scalarmult_base_scan(case %d, scan %d)\n", i, s);
				th_assert_bytes_eq(got, want, 32);
			}
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base_vs_sodium),
		cmocka_unit_test(test_double_scalarmult),
		cmocka_unit_test(test_multi_scalarmult),
		cmocka_unit_test(test_decode_round_trip),
		cmocka_unit_test(test_decode_noncanonical),
		cmocka_unit_test(test_decode_x0_sign),
		cmocka_unit_test(test_group_laws),
		cmocka_unit_test(test_small_order),
		cmocka_unit_test(test_is_canonical),
		cmocka_unit_test(test_precomp_select),
		cmocka_unit_test(test_ge64_comb_scan),
		cmocka_unit_test(test_ge64_base_generic),
	};
	return th_run(tests);
}
