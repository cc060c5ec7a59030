/* SPDX-License-Identifier: MIT */
/*
 * sc.c - scalars modulo L = 2^252 + 27742317777372353535851937790883648493.
 *
 * Representation: inside this file a number is an array of unsigned 64-bit
 * limbs, little endian (x = sum x[i] * 2^(64 i)), every limb a full
 * 0 .. 2^64-1 (radix 2^64, products on unsigned __int128). Outputs of the
 * public functions are canonical: 0 <= out < L < 2^253.
 *
 * Reduction is Barrett's (Handbook of Applied Cryptography, algorithm
 * 14.42) with base b = 2^64 and k = 4 limbs (b^3 <= L < b^4), valid for
 * every input x < b^8 = 2^512. It needs mu = floor(b^8 / L); the quotient
 * estimate q3 is at most 2 below floor(x / L) (HAC fact 14.43), so the
 * remainder estimate is < 3L and two constant-time conditional subtractions
 * of L finish the job.
 *
 * Static names carry the sc_ prefix: the library is built as one
 * translation unit (crypto/meson.build, unity).
 *
 * Timing: constant time. The limb loops have fixed bounds; the conditional
 * subtractions select with masks (ct.h); the only multiplications are
 * 64x64->128 MUL, which is constant time on x86-64 and arm64.
 */
#include <string.h>

#include "sigil/crypto.h"
#include "ct.h"
#include "sc.h"

__extension__ typedef unsigned __int128 u128; /* GNU C; __extension__ keeps -Wpedantic quiet */
__extension__ typedef __int128 s128;

/* L (sc_L) in radix 2^64: 0x1000000000000000 0000000000000000 14def9dea2f79cd6
 * 5812631a5cf5d3ed (RFC 8032 section 5.1, "L"; decimal
 * 2^252 + 27742317777372353535851937790883648493). */
static const uint64_t sc_L[5] = {
	0x5812631a5cf5d3edULL, 0x14def9dea2f79cd6ULL, 0x0000000000000000ULL, 0x1000000000000000ULL, 0,
};

/* mu (sc_MU) = floor(2^512 / L), the Barrett constant for b = 2^64, k = 4 (HAC
 * 14.42 step 0). 260 bits: 0xf ffffffffffffffff ffffffffffffffeb
 * 2106215d086329a7 ed9ce5a30a2c131b. Computed with Python:
 *   L = 2**252 + 27742317777372353535851937790883648493; 2**512 // L
 * and cross-checked by the random tests against Python integers. */
static const uint64_t sc_MU[5] = {
	0xed9ce5a30a2c131bULL, 0x2106215d086329a7ULL, 0xffffffffffffffebULL, 0xffffffffffffffffULL,
	0x000000000000000fULL,
};

static inline uint64_t sc_load64_le(const uint8_t *p)
{
	uint64_t x = 0;
	for (int i = 7; i >= 0; i--)
		x = (x << 8) | p[i];
	return x;
}

static inline void sc_store64_le(uint8_t *p, uint64_t x)
{
	for (int i = 0; i < 8; i++) {
		p[i] = (uint8_t)x;
		x >>= 8;
	}
}

/* out[0 .. na+nb-1] = a * b (schoolbook). Each step computes
 * a[i]*b[j] + out[i+j] + carry <= (2^64-1)^2 + 2(2^64-1) = 2^128 - 1,
 * so the 128-bit accumulator never overflows. out must not alias a or b
 * (internal helper; callers pass distinct arrays). */
static void sc_mul_limbs(uint64_t *out, const uint64_t *a, int na, const uint64_t *b, int nb)
{
	for (int i = 0; i < na + nb; i++)
		out[i] = 0;
	for (int i = 0; i < na; i++) {
		uint64_t carry = 0;
		for (int j = 0; j < nb; j++) {
			u128 t = (u128)a[i] * b[j] + out[i + j] + carry;
			out[i + j] = (uint64_t)t;
			carry = (uint64_t)(t >> 64);
		}
		out[i + nb] = carry;
	}
}

/* r = r - L if r >= L, else r unchanged; r has 5 limbs. Constant time: the
 * subtraction is always done, its final borrow makes a mask, and a select
 * keeps one of the two. Precondition r < 2^320; postcondition: r is the
 * input minus L if that is >= 0. */
static void sc_cond_sub_L(uint64_t r[5])
{
	uint64_t t[5];
	uint64_t borrow = 0;

	for (int i = 0; i < 5; i++) {
		u128 d = (u128)r[i] - sc_L[i] - borrow;
		t[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1; /* 1 if this limb borrowed */
	}
	/* borrow == 1 <=> r < L: keep r; otherwise take t */
	uint64_t keep = ct_mask_u64(borrow);
	for (int i = 0; i < 5; i++)
		r[i] = ct_select_u64(keep, r[i], t[i]);
	sigil_wipe(t, sizeof(t));
}

/* r = x mod L for x < 2^512 given as 8 limbs; r is 5 limbs with r[4] == 0
 * and r < L on return. HAC algorithm 14.42, b = 2^64, k = 4:
 *   q1 = floor(x / b^3)            (5 limbs, < 2^320)
 *   q2 = q1 * mu                   (10 limbs, < 2^580)
 *   q3 = floor(q2 / b^5)           (5 limbs; q3 <= x / L < 2^260)
 *   r  = (x mod b^5) - (q3 * L mod b^5)   mod b^5
 * Then 0 <= x - q3*L < 3L < b^5, so the mod-b^5 difference is the true
 * remainder estimate, and at most two subtractions of L remain. */
static void sc_barrett_reduce(uint64_t r[5], const uint64_t x[8])
{
	uint64_t q2[10];
	uint64_t q3L[9];
	uint64_t borrow = 0;

	sc_mul_limbs(q2, x + 3, 5, sc_MU, 5);
	/* q3 = q2[5..9]; only q3*L mod b^5 is needed: the low 5 limbs */
	sc_mul_limbs(q3L, q2 + 5, 5, sc_L, 4);

	for (int i = 0; i < 5; i++) {
		u128 d = (u128)x[i] - q3L[i] - borrow;
		r[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	/* the final borrow is dropped: arithmetic mod b^5 (HAC step 3) */

	sc_cond_sub_L(r); /* r < 3L  ->  r < 2L */
	sc_cond_sub_L(r); /* r < 2L  ->  r < L  */

	sigil_wipe(q2, sizeof(q2));
	sigil_wipe(q3L, sizeof(q3L));
}

static void sc_store_scalar(uint8_t out[32], const uint64_t r[5])
{
	/* r < L < 2^253, so r[4] == 0 and four limbs hold it */
	for (int i = 0; i < 4; i++)
		sc_store64_le(out + 8 * i, r[i]);
}

/* out = in mod L; in is any 512-bit little-endian integer.
 * Alias: out may overlap in (all of in is loaded first). Constant time. */
void sc_reduce(uint8_t out[32], const uint8_t in[64])
{
	uint64_t x[8], r[5];

	for (int i = 0; i < 8; i++)
		x[i] = sc_load64_le(in + 8 * i);
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = (a*b + c) mod L; a, b, c any 256-bit little-endian integers.
 * Bound: a*b + c <= (2^256-1)^2 + 2^256-1 = 2^512 - 2^256 < 2^512, so the
 * sum fits the 8 limbs that barrett_reduce takes.
 * Alias: out may overlap a, b or c (all inputs are loaded first).
 * Constant time. */
void sc_muladd(uint8_t out[32], const uint8_t a[32], const uint8_t b[32], const uint8_t c[32])
{
	uint64_t al[4], bl[4], x[8], r[5];
	uint64_t carry = 0;

	for (int i = 0; i < 4; i++) {
		al[i] = sc_load64_le(a + 8 * i);
		bl[i] = sc_load64_le(b + 8 * i);
	}
	sc_mul_limbs(x, al, 4, bl, 4);
	for (int i = 0; i < 8; i++) {
		/* add c (limbs 0..3), then ripple the carry through limbs 4..7;
		 * by the bound above nothing carries out of limb 7 */
		u128 t = (u128)x[i] + (i < 4 ? sc_load64_le(c + 8 * i) : 0) + carry;
		x[i] = (uint64_t)t;
		carry = (uint64_t)(t >> 64);
	}
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);

	sigil_wipe(al, sizeof(al));
	sigil_wipe(bl, sizeof(bl));
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = a*b mod L (sc_muladd with c = 0). Alias: any. Constant time. */
void sc_mul(uint8_t out[32], const uint8_t a[32], const uint8_t b[32])
{
	static const uint8_t zero[32];

	sc_muladd(out, a, b, zero);
}

/* out = (a + b) mod L; a, b any 256-bit integers, so a + b < 2^257 (5
 * limbs; limbs 5..7 of the Barrett input are zero).
 * Alias: any (inputs loaded first). Constant time. */
void sc_add(uint8_t out[32], const uint8_t a[32], const uint8_t b[32])
{
	uint64_t x[8], r[5];
	uint64_t carry = 0;

	for (int i = 0; i < 4; i++) {
		u128 t = (u128)sc_load64_le(a + 8 * i) + sc_load64_le(b + 8 * i) + carry;
		x[i] = (uint64_t)t;
		carry = (uint64_t)(t >> 64);
	}
	x[4] = carry; /* 0 or 1 */
	x[5] = x[6] = x[7] = 0;
	sc_barrett_reduce(r, x);
	sc_store_scalar(out, r);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
}

/* out = -a mod L = (L - (a mod L)) mod L; a any 256-bit integer.
 * With r = a mod L in [0, L), t = L - r is in [1, L] (no borrow), and one
 * conditional subtraction maps t = L (from a = 0 mod L) to 0.
 * Alias: any. Constant time. */
void sc_neg(uint8_t out[32], const uint8_t a[32])
{
	uint64_t x[8], r[5], t[5];
	uint64_t borrow = 0;

	for (int i = 0; i < 4; i++)
		x[i] = sc_load64_le(a + 8 * i);
	x[4] = x[5] = x[6] = x[7] = 0;
	sc_barrett_reduce(r, x);
	for (int i = 0; i < 5; i++) {
		u128 d = (u128)sc_L[i] - r[i] - borrow;
		t[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	sc_cond_sub_L(t);
	sc_store_scalar(out, t);
	sigil_wipe(x, sizeof(x));
	sigil_wipe(r, sizeof(r));
	sigil_wipe(t, sizeof(t));
}

/* 1 if s < L (s is the canonical encoding of a scalar), else 0.
 * Computes s - L over all four limbs and returns the final borrow: no
 * early exit, so constant time. */
int sc_is_canonical(const uint8_t s[32])
{
	uint64_t borrow = 0;

	for (int i = 0; i < 4; i++) {
		u128 d = (u128)sc_load64_le(s + 8 * i) - sc_L[i] - borrow;
		borrow = (uint64_t)(d >> 64) & 1;
	}
	return (int)ct_barrier_u64(borrow);
}

/* The half-size scalars of verification (sc_half_vartime): the extended
 * Euclidean algorithm on (8L, k), stopped halfway. Its remainders r_j and
 * cofactors t_j keep r_j = t_j k (mod 8L), with r_0 = 8L, t_0 = 0, r_1 =
 * k, t_1 = 1, r_{j+1} = r_{j-1} - q_j r_j, t_{j+1} = t_{j-1} - q_j t_j;
 * the t_j alternate in sign (t_j > 0 for odd j), so |t_{j+1}| = |t_{j-1}|
 * + q_j |t_j|, and |t_j| <= 8L / r_{j-1}. Stopping at the first r_j <
 * 2^128 gives r_j and |t_j| both below about 2^128 (8L < 2^256).
 * Consecutive t_j are coprime: when t_j is even, t_{j-1} and t_{j+1} are
 * odd, and the smaller pair of the two is taken.
 *
 * 8L in radix 2^64 (sc_L8): sc_L shifted left by 3. */
static const uint64_t sc_L8[4] = {
	0xc09318d2e7ae9f68ULL, 0xa6f7cef517bce6b2ULL, 0x0000000000000000ULL, 0x8000000000000000ULL,
};

/* a as a double (relative error below 2^-51). */
static double sc_half_dbl(const uint64_t a[4])
{
	return ((double)a[3] * 0x1p64 + (double)a[2]) * 0x1p128 + ((double)a[1] * 0x1p64 + (double)a[0]);
}

/* -1, 0 or 1 as a < b, a = b, a > b */
static int sc_half_cmp(const uint64_t a[4], const uint64_t b[4])
{
	for (int i = 3; i >= 0; i--)
		if (a[i] != b[i])
			return a[i] < b[i] ? -1 : 1;
	return 0;
}

static int sc_half_bits(const uint64_t a[4])
{
	for (int i = 3; i >= 0; i--)
		if (a[i] != 0)
			return 64 * i + 64 - __builtin_clzll(a[i]);
	return 0;
}

/* a -= q b (q b <= a) */
static void sc_half_submul(uint64_t a[4], const uint64_t b[4], uint64_t q)
{
	uint64_t hi = 0, borrow = 0;
	for (int i = 0; i < 4; i++) {
		u128 p = (u128)b[i] * q + hi;
		hi = (uint64_t)(p >> 64);
		u128 d = (u128)a[i] - (uint64_t)p - borrow;
		a[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 127);
	}
}

/* a += q b (the sum below 2^256) */
static void sc_half_addmul(uint64_t a[4], const uint64_t b[4], uint64_t q)
{
	uint64_t hi = 0;
	for (int i = 0; i < 4; i++) {
		u128 p = (u128)b[i] * q + hi + a[i];
		a[i] = (uint64_t)p;
		hi = (uint64_t)(p >> 64);
	}
}

/* out = a 2^e (the bits shifted out are 0), 0 <= e < 256 */
static void sc_half_shl(uint64_t out[4], const uint64_t a[4], int e)
{
	int w = e / 64, b = e % 64;
	for (int i = 3; i >= 0; i--) {
		uint64_t v = i - w >= 0 ? a[i - w] << b : 0;
		if (b != 0 && i - w - 1 >= 0)
			v |= a[i - w - 1] >> (64 - b);
		out[i] = v;
	}
}

/* One step, r_a >= r_b > 0: r_a = r_a mod r_b, t_a += (r_a div r_b) t_b.
 * The quotient in parts from the doubles' ratio, each part at most what
 * is left of it (the ratio scaled down by 2^-40 against their errors), at
 * least 1; a part above 2^62 as q 2^e, q < 2^62. */
static void sc_half_step(uint64_t ra[4], uint64_t ta[4], const uint64_t rb[4], const uint64_t tb[4])
{
	double db = sc_half_dbl(rb);
	while (sc_half_cmp(ra, rb) >= 0) {
		double f = sc_half_dbl(ra) / db * (1.0 - 0x1p-40);
		if (f < 2.0) {
			sc_half_submul(ra, rb, 1);
			sc_half_addmul(ta, tb, 1);
		} else if (f < 0x1p62) {
			sc_half_submul(ra, rb, (uint64_t)f);
			sc_half_addmul(ta, tb, (uint64_t)f);
		} else {
			int e = 0;
			while (f >= 0x1p62) {
				f *= 0.5;
				e++;
			}
			uint64_t rs[4], ts[4];
			sc_half_shl(rs, rb, e);
			sc_half_shl(ts, tb, e);
			sc_half_submul(ra, rs, (uint64_t)f);
			sc_half_addmul(ta, ts, (uint64_t)f);
		}
	}
}

/* out = p x - q y (>= 0: a remainder of sc_half_lehmer's matrix) */
static void sc_half_lin(uint64_t out[4], const uint64_t x[4], uint64_t p, const uint64_t y[4],
                        uint64_t q)
{
	uint64_t hx = 0, hy = 0, borrow = 0;
	for (int i = 0; i < 4; i++) {
		u128 a = (u128)x[i] * p + hx, b = (u128)y[i] * q + hy;
		hx = (uint64_t)(a >> 64);
		hy = (uint64_t)(b >> 64);
		u128 d = (u128)(uint64_t)a - (uint64_t)b - borrow;
		out[i] = (uint64_t)d;
		borrow = (uint64_t)(d >> 127);
	}
}

/* Lehmer's steps (Knuth, TAOCP vol. 2, 4.5.2, algorithm L) on the top 62
 * bits of r0 >= r1 >= 2^128, taken only while the quotient is certain
 * (the two bounds agree) and the divisor certainly >= 2^128 (its true
 * value differs from 2^s y by less than 2^s max(|C|, |D|)); then the
 * cofactor matrix applied to r and t. Returns the number of steps (0:
 * none was certain). */
static int sc_half_lehmer(uint64_t r0[4], uint64_t t0[4], uint64_t r1[4], uint64_t t1[4])
{
	int s = sc_half_bits(r0) - 62;
	if (s < 0)
		s = 0;
	int64_t x, y, A = 1, B = 0, C = 0, D = 1;
	{
		int w = s / 64, b = s % 64;
		uint64_t lo0 = r0[w] >> b, lo1 = r1[w] >> b;
		if (b != 0 && w < 3) {
			lo0 |= r0[w + 1] << (64 - b);
			lo1 |= r1[w + 1] << (64 - b);
		}
		x = (int64_t)(lo0 & (((uint64_t)1 << 62) - 1));
		y = (int64_t)(lo1 & (((uint64_t)1 << 62) - 1));
	}
	int64_t need = s >= 128 ? 1 : 128 - s >= 61 ? INT64_MAX / 4 : (int64_t)1 << (128 - s);
	int n = 0;
	for (;;) {
		int64_t mx = C < 0 ? -C : C, md = D < 0 ? -D : D;
		if (md > mx)
			mx = md;
		if (y - mx < need || y + C <= 0 || y + D <= 0)
			break;
		int64_t q = (x + A) / (y + C);
		int64_t u = x + B, v = y + D; /* q must be u / v too */
		if ((s128)q * v > u || (s128)(q + 1) * v <= u)
			break;
		int64_t T = A - q * C;
		A = C;
		C = T;
		T = B - q * D;
		B = D;
		D = T;
		T = x - q * y;
		x = y;
		y = T;
		n++;
	}
	if (n == 0)
		return 0;
	/* (r0, r1) = (A r0 + B r1, C r0 + D r1): after an even number of
	 * steps A, D >= 0 and B, C <= 0, after an odd one the other way;
	 * |t| = |A| |t0| + |B| |t1|, |C| |t0| + |D| |t1| */
	uint64_t a = (uint64_t)(A < 0 ? -A : A), b = (uint64_t)(B < 0 ? -B : B);
	uint64_t c = (uint64_t)(C < 0 ? -C : C), d = (uint64_t)(D < 0 ? -D : D);
	uint64_t n0[4], n1[4], u0[4] = { 0 }, u1[4] = { 0 };
	if (n % 2 == 0) {
		sc_half_lin(n0, r0, a, r1, b);
		sc_half_lin(n1, r1, d, r0, c);
	} else {
		sc_half_lin(n0, r1, b, r0, a);
		sc_half_lin(n1, r0, c, r1, d);
	}
	sc_half_addmul(u0, t0, a);
	sc_half_addmul(u0, t1, b);
	sc_half_addmul(u1, t0, c);
	sc_half_addmul(u1, t1, d);
	memcpy(r0, n0, sizeof n0);
	memcpy(r1, n1, sizeof n1);
	memcpy(t0, u0, sizeof u0);
	memcpy(t1, u1, sizeof u1);
	return n;
}

static void sc_half_store(uint8_t out[32], const uint64_t a[4])
{
	for (int i = 0; i < 4; i++)
		sc_store64_le(out + 8 * i, a[i]);
}

int sc_half_vartime(uint8_t c0[32], uint8_t c1[32], const uint8_t k[32])
{
	uint64_t r0[4], t0[4] = { 0, 0, 0, 0 }, r1[4], t1[4] = { 1, 0, 0, 0 }, x[4] = { 0, 0, 0, 0 };
	int j = 1; /* r1 = r_j */

	memcpy(r0, sc_L8, sizeof r0);
	for (int i = 0; i < 4; i++)
		r1[i] = sc_load64_le(k + 8 * i);
	if (sc_half_cmp(r1, r0) >= 0)
		sc_half_step(r1, x, r0, t0); /* k mod 8L (t0 = 0: x unchanged) */
	while (r1[2] | r1[3]) {
		int n = sc_half_lehmer(r0, t0, r1, t1);
		if (n > 0) {
			j += n;
			continue;
		}
		sc_half_step(r0, t0, r1, t1);
		for (int i = 0; i < 4; i++) {
			x[i] = r0[i];
			r0[i] = r1[i];
			r1[i] = x[i];
			x[i] = t0[i];
			t0[i] = t1[i];
			t1[i] = x[i];
		}
		j++;
	}
	if (!(t1[0] & 1)) {
		/* t_j even (j >= 2): r_{j-1}, t_{j-1} (r0, t0) or r_{j+1},
		 * t_{j+1}, whichever is shorter, both odd; t_{j+1} only when r_j
		 * != 0 (k = 0 mod L gives r_j = 0) and below 2^250 (then below
		 * L) */
		uint64_t r2[4], t2[4];
		memcpy(r2, r0, sizeof r2);
		memcpy(t2, t0, sizeof t2);
		int b2 = 256;
		if (sc_half_bits(r1) != 0) {
			sc_half_step(r2, t2, r1, t1);
			b2 = sc_half_bits(r2) > sc_half_bits(t2) ? sc_half_bits(r2) : sc_half_bits(t2);
		}
		int b0 = sc_half_bits(r0) > sc_half_bits(t0) ? sc_half_bits(r0) : sc_half_bits(t0);
		if (b2 < b0 && sc_half_bits(t2) < 250) {
			memcpy(r1, r2, sizeof r1);
			memcpy(t1, t2, sizeof t1);
		} else {
			memcpy(r1, r0, sizeof r1);
			memcpy(t1, t0, sizeof t1);
		}
		j++; /* j - 1 and j + 1: the same sign */
	}
	sc_half_store(c0, r1);
	sc_half_store(c1, t1);
	return j % 2 == 0; /* t_j < 0 for even j */
}
