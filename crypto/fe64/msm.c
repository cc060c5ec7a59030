/* SPDX-License-Identifier: MIT */
/*
 * msm.c - batch verification's point work on fe64 points (msm.h): ZIP215
 * decoding with the square roots of a whole batch computed together, and
 * the Straus multiscalar multiplication.
 *
 * Variable time throughout: public inputs only. Static names carry the msm_
 * prefix (the library is one translation unit).
 */
#include <stdint.h>
#include <string.h>

#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "fe64/ge64.h"
#include "fe64/ge64_table.h"
#include "fe64/msm.h"
#include "wnaf.h"

/* fe (radix 2^51) to fe64, through the canonical bytes. */
static void msm_fe64_from_fe(fe64 *r, const fe *f)
{
	uint8_t s[32];
	fe_tobytes(s, f);
	fe64_frombytes(r, s);
}

/* 1 if g = f mod p, f given as its canonical bytes fb. */
static int msm_fe64_equal_bytes(const uint8_t fb[32], const fe64 *g)
{
	uint8_t b[32];
	fe64_tobytes(b, g);
	return memcmp(fb, b, 32) == 0;
}

/* 1 if f = g mod p. */
static int msm_fe64_equal(const fe64 *f, const fe64 *g)
{
	uint8_t a[32];
	fe64_tobytes(a, f);
	return msm_fe64_equal_bytes(a, g);
}

static void msm_fe64_neg(fe64 *h, const fe64 *f)
{
	fe64 zero = { { 0, 0, 0, 0 } };
	fe64_sub(h, &zero, f);
}

void msm_p3_neg(ge64_p3 *p)
{
	msm_fe64_neg(&p->X, &p->X);
	msm_fe64_neg(&p->T, &p->T);
}

static void msm_p3_identity(ge64_p3 *p)
{
	memset(p, 0, sizeof *p);
	p->Y.v[0] = 1;
	p->Z.v[0] = 1;
}

void msm_sqrt_ratio_many_fe64(fe64 *r, fe64 *check, const fe64 *u, const fe64 *v, int n,
                              const ge64_ops *ops)
{
	const fe64_ops *fo = ops->fe;
	/* u v^3 in r[], u v^7 in check[]; the powers; then r and check */
	for (int j = 0; j < n; j++) {
		fe64 v3, v7;
		fo->sq(v3.v, v[j].v);
		fo->mul(v3.v, v3.v, v[j].v); /* v^3 */
		fo->sq(v7.v, v3.v);
		fo->mul(v7.v, v7.v, v[j].v); /* v^7 */
		fo->mul(r[j].v, u[j].v, v3.v);
		fo->mul(check[j].v, u[j].v, v7.v);
	}
	int i = 0;
	for (; i + 2 <= n; i += 2)
		fe64_pow22523_2(&check[i], &check[i], fo);
	if (i < n)
		fe64_pow22523(&check[i], &check[i], fo);
	for (int j = 0; j < n; j++) {
		fo->mul(r[j].v, r[j].v, check[j].v); /* u v^3 (u v^7)^((p-5)/8) */
		fo->sq(check[j].v, r[j].v);
		fo->mul(check[j].v, check[j].v, v[j].v); /* v r^2 */
	}
}

void msm_sqrt_ratio_many_vartime(fe64 *r, fe64 *check, const fe64 *u, const fe64 *v, int n,
                                 const fe64_impl *im)
{
	msm_sqrt_ratio_lanes_fn *xn = im->sqrt_lanes;
	int i = 0;
	if (xn != NULL) {
		for (; i + MSM_POW_LANES <= n; i += MSM_POW_LANES)
			xn(&r[i], &check[i], &u[i], &v[i]);
		if (i < n && n - i >= 3) {
			/* a short last group: padded with 1 */
			fe64 iu[MSM_POW_LANES], iv[MSM_POW_LANES], or[MSM_POW_LANES], oc[MSM_POW_LANES];
			memset(iu, 0, sizeof iu);
			for (int j = 0; j < MSM_POW_LANES; j++)
				iu[j].v[0] = 1;
			memcpy(iv, iu, sizeof iv);
			memcpy(iu, &u[i], (size_t)(n - i) * sizeof *u);
			memcpy(iv, &v[i], (size_t)(n - i) * sizeof *v);
			xn(or, oc, iu, iv);
			memcpy(&r[i], or, (size_t)(n - i) * sizeof *r);
			memcpy(&check[i], oc, (size_t)(n - i) * sizeof *check);
			i = n;
		}
	}
	msm_sqrt_ratio_many_fe64(&r[i], &check[i], &u[i], &v[i], n - i, im->ge);
}

/* The ZIP215 decoding of ge.c's ge_decode (allow_neg_zero = 1) and
 * fe_sqrt_ratio, on fe64, in three passes: u and v of every encoding; all
 * the square-root candidates r and v r^2 (msm_sqrt_ratio_many_vartime);
 * then the roots. */
void msm_decode_zip215_vartime(ge64_p3 *P, int *ok, const uint8_t *const *s, int n,
                               const fe64_impl *im)
{
	const fe64_ops *fo = im->fe;
	fe64 d, sqrtm1, one = { { 1, 0, 0, 0 } };
	msm_fe64_from_fe(&d, &ge_d);
	msm_fe64_from_fe(&sqrtm1, &fe_sqrtm1);

	for (int b = 0; b < n; b += 32) {
		int cnt = n - b < 32 ? n - b : 32;
		fe64 u[32], v[32], rr[32], cc[32];
		for (int j = 0; j < cnt; j++) {
			ge64_p3 *p = &P[b + j];
			fe64 yy;
			fe64_frombytes(&p->Y, s[b + j]); /* y, bit 255 ignored */
			fo->sq(yy.v, p->Y.v);
			fe64_sub(&u[j], &yy, &one);        /* u = y^2 - 1 */
			fo->mul(v[j].v, yy.v, d.v);
			fe64_add(&v[j], &v[j], &one);      /* v = d y^2 + 1 */
		}
		msm_sqrt_ratio_many_vartime(rr, cc, u, v, cnt, im);
		for (int j = 0; j < cnt; j++) {
			ge64_p3 *p = &P[b + j];
			fe64 r = rr[j], negu, negui, x;
			const fe64 check = cc[j];
			uint8_t rb[32];
			msm_fe64_neg(&negu, &u[j]);
			fo->mul(negui.v, negu.v, sqrtm1.v);
			uint8_t cb[32];
			fe64_tobytes(cb, &check); /* once for the three comparisons */
			int correct = msm_fe64_equal_bytes(cb, &u[j]);
			int flipped = msm_fe64_equal_bytes(cb, &negu);
			int flipped_i = msm_fe64_equal_bytes(cb, &negui);
			if (!(correct | flipped)) { /* u/v is not a square */
				ok[b + j] = 0;
				msm_p3_identity(p);
				continue;
			}
			if (flipped | flipped_i)
				fo->mul(r.v, r.v, sqrtm1.v);
			fe64_tobytes(rb, &r);
			x = r;
			if (rb[0] & 1) /* |r|: the even root */
				msm_fe64_neg(&x, &r);
			if (s[b + j][31] >> 7) /* x = 0 with the sign bit: accepted (ZIP215) */
				msm_fe64_neg(&x, &x);
			ok[b + j] = 1;
			p->X = x;
			memset(&p->Z, 0, sizeof p->Z);
			p->Z.v[0] = 1;
			fo->mul(p->T.v, x.v, p->Y.v);
		}
	}
}

/* The lanes of the items (msm_lanes_schedule) with k of them kept for the
 * short items, and the steps that takes: the items in the order given,
 * each to the lane whose steps (doublings up to its top position, then one
 * per digit) it makes fewest. */
static int msm_lanes_deal(int *lane, const int *order, int m, const int *nd, const int *itop,
                          int maxtop, int k)
{
	int top[MSM_LANES], load[MSM_LANES], steps = 0;
	for (int l = 0; l < MSM_LANES; l++) {
		top[l] = 0;
		load[l] = 0;
	}
	for (int o = 0; o < m; o++) {
		int i = order[o], best = -1, bc = 0;
		if (nd[i] == 0) {
			lane[i] = 0;
			continue;
		}
		/* 64 positions below the longest: a batch coefficient's */
		for (int l = itop[i] + 64 <= maxtop ? 0 : k; l < MSM_LANES; l++) {
			int c = (top[l] > itop[i] ? top[l] : itop[i]) + load[l] + nd[i];
			if (best < 0 || c < bc) {
				best = l;
				bc = c;
			}
		}
		lane[i] = best;
		if (itop[i] > top[best])
			top[best] = itop[i];
		load[best] += nd[i];
		if (bc > steps)
			steps = bc;
	}
	return steps;
}

int msm_lanes_schedule(msm_op (*sched)[MSM_LANES], const uint8_t (*a)[32], int n,
                       const uint8_t b[32])
{
	/* item i < n: a_i P_i; item n: b B (table point MSM_MAX) */
	uint16_t pos[MSM_MAX + 1][WNAF_DIGITS];
	signed char dig[MSM_MAX + 1][WNAF_DIGITS];
	int nd[MSM_MAX + 1], itop[MSM_MAX + 1], lane[MSM_MAX + 1], order[MSM_MAX + 1];
	int maxtop = 0, m = n + 1;
	int fill[MSM_LANES][WNAF_LEN + 1];

	for (int i = 0; i < m; i++) {
		nd[i] = wnaf_vartime(pos[i], dig[i], i < n ? a[i] : b, 5);
		itop[i] = nd[i] > 0 ? pos[i][nd[i] - 1] : 0;
		if (itop[i] > maxtop)
			maxtop = itop[i];
	}
	/* the order: by the steps an item takes alone (top + digits), most first */
	{
		enum { KEYS = WNAF_LEN + WNAF_DIGITS };
		int first[KEYS + 1], o = 0;
		memset(first, 0, sizeof first);
		for (int i = 0; i < m; i++)
			first[itop[i] + nd[i]]++;
		for (int c = KEYS; c >= 0; c--) {
			int t = first[c];
			first[c] = o;
			o += t;
		}
		for (int i = 0; i < m; i++)
			order[first[itop[i] + nd[i]]++] = i;
	}
	/* k lanes kept for the short items (the 128-bit coefficients of the
	 * R_i need 128 doublings, not 253): the best k of 0 to 3 */
	int steps = -1;
	for (int k = 0; k < 4; k++) {
		int try[MSM_MAX + 1];
		int st = msm_lanes_deal(try, order, m, nd, itop, maxtop, k);
		if (steps < 0 || st < steps) {
			steps = st;
			memcpy(lane, try, (size_t)m * sizeof *lane);
		}
	}
	/* lane l's steps, counted from the last back: its digits from position
	 * 0 up, a doubling after each position below its top, then (before
	 * its first step) doublings of the identity. So a digit at position p
	 * with j digits of its lane below p (or at p, written before it) is
	 * step j + p from the end, and every other step a doubling: fill[l][p]
	 * counts lane l's digits below p (a counting sort's prefix sums), and
	 * the digits go straight to their steps. */
	memset(fill, 0, sizeof fill);
	for (int i = 0; i < m; i++)
		for (int k = 0; k < nd[i]; k++)
			fill[lane[i]][pos[i][k] + 1]++;
	for (int l = 0; l < MSM_LANES; l++)
		for (int p = 0; p < WNAF_LEN; p++)
			fill[l][p + 1] += fill[l][p];
	for (int st = 0; st < steps; st++)
		for (int l = 0; l < MSM_LANES; l++)
			sched[st][l] = MSM_OP_DBL;
	for (int i = 0; i < m; i++) {
		int l = lane[i], *f = fill[l];
		int pt = i < n ? i : MSM_MAX;
		for (int k = 0; k < nd[i]; k++) {
			int d = dig[i][k], t = d > 0 ? d : -d, p = pos[i][k];
			sched[steps - 1 - f[p]++ - p][l] = (msm_op)(2 * MSM_LT_ENTRY(pt, t / 2) + (d < 0));
		}
	}
	return steps;
}

void msm_straus_lanes_generic(ge64_p3 acc[MSM_LANES], const ge64_p3 *P, int n,
                              const ge64_precomp bt[8], const msm_op (*sched)[MSM_LANES],
                              int steps, const fe64 *d2, const ge64_ops *ops)
{
	ge64_cached tab[MSM_MAX + 1][8];
	for (int i = 0; i < n; i++)
		ge64_odd_multiples_vartime(tab[i], &P[i], d2, ops);
	for (int j = 0; j < 8; j++) {
		tab[MSM_MAX][j].YplusX = bt[j].yplusx;
		tab[MSM_MAX][j].YminusX = bt[j].yminusx;
		memset(&tab[MSM_MAX][j].Z, 0, sizeof(fe64));
		tab[MSM_MAX][j].Z.v[0] = 1;
		tab[MSM_MAX][j].T2d = bt[j].xy2d;
	}
	for (int l = 0; l < MSM_LANES; l++) {
		ge64_p1p1 t;
		msm_p3_identity(&acc[l]);
		for (int s = 0; s < steps; s++) {
			int op = sched[s][l];
			if (op == MSM_OP_DBL) {
				ge64_p2 q = { acc[l].X, acc[l].Y, acc[l].Z };
				ops->p2_dbl(&t, &q);
			} else {
				int e = op >> 1;
				const ge64_cached *c = &tab[e % (MSM_MAX + 1)][e / (MSM_MAX + 1)];
				if (op & 1)
					ops->sub(&t, &acc[l], c);
				else
					ops->add(&t, &acc[l], c);
			}
			ops->p1p1_to_p3(&acc[l], &t);
		}
	}
}

/* acc += q, both p3 */
static void msm_p3_add(ge64_p3 *acc, const ge64_p3 *q, const fe64 *d2, const ge64_ops *ops)
{
	ge64_cached c;
	ge64_p1p1 t;
	ge64_p3_to_cached(&c, q, d2, ops);
	ops->add(&t, acc, &c);
	ops->p1p1_to_p3(acc, &t);
}

/* msm_straus_vartime with im->straus_lanes: the schedule, the lanes, the
 * sum of the lanes' sums (its own frame: the lanes' tables are on the
 * stack of the lanes routine, not beside the C tables) */
__attribute__((noinline)) static void msm_straus_lanes(ge64_p3 *r, const uint8_t (*a)[32],
                                                     const ge64_p3 *P, int n,
                                                     const uint8_t b[32], const fe64 *d2,
                                                     const fe64_impl *im)
{
	msm_op sched[MSM_STEPS_MAX][MSM_LANES];
	ge64_p3 acc[MSM_LANES];
	int steps = msm_lanes_schedule(sched, a, n, b);
	im->straus_lanes(acc, P, n, ge64_bi8, (const msm_op (*)[MSM_LANES])sched, steps, d2);
	*r = acc[0];
	for (int l = 1; l < MSM_LANES; l++)
		msm_p3_add(r, &acc[l], d2, im->ge);
}

/* msm_straus_vartime without lanes: one accumulator, every point's digits
 * at their position after the shared doubling */
__attribute__((noinline)) static void msm_straus_c(ge64_p3 *r, const uint8_t (*a)[32],
                                                 const ge64_p3 *P, int n, const uint8_t b[32],
                                                 const fe64 *d2p, const fe64_impl *im)
{
	const ge64_ops *ops = im->ge;
	uint16_t pos[MSM_MAX][WNAF_DIGITS], bpos[WNAF_DIGITS];
	signed char dig[MSM_MAX][WNAF_DIGITS], bdig[WNAF_DIGITS], bnaf[WNAF_LEN];
	int nd[MSM_MAX], start[258];
	/* the nonzero digits of the a_i sorted by position: point, digit */
	uint8_t ej[MSM_MAX * WNAF_DIGITS];
	signed char ed[MSM_MAX * WNAF_DIGITS];
	ge64_cached tab[MSM_MAX][8];
	const fe64 d2 = *d2p;
	ge64_p1p1 t;
	ge64_p3 u;
	ge64_p2 acc;
	int top = -1;

	memset(bnaf, 0, sizeof bnaf);
	int nb = wnaf_vartime(bpos, bdig, b, 8);
	for (int k = 0; k < nb; k++)
		bnaf[bpos[k]] = bdig[k];
	if (nb > 0)
		top = bpos[nb - 1];
	memset(start, 0, sizeof start);
	for (int j = 0; j < n; j++) {
		nd[j] = wnaf_vartime(pos[j], dig[j], a[j], 5);
		if (nd[j] == 0)
			continue;
		if (pos[j][nd[j] - 1] > top)
			top = pos[j][nd[j] - 1];
		for (int k = 0; k < nd[j]; k++)
			start[pos[j][k] + 1]++;
		ge64_odd_multiples_vartime(tab[j], &P[j], &d2, ops);
	}
	for (int i = 0; i < 257; i++)
		start[i + 1] += start[i];
	{
		int fill[257];
		memcpy(fill, start, sizeof fill);
		for (int j = 0; j < n; j++)
			for (int k = 0; k < nd[j]; k++) {
				int e = fill[pos[j][k]]++;
				ej[e] = (uint8_t)j;
				ed[e] = dig[j][k];
			}
	}

	/* The accumulator is u (p3) or, when pending, t (p1p1) not yet
	 * converted: to p2 (3 multiplications) when a doubling comes next, to
	 * p3 (4) when an addition does. */
	msm_p3_identity(&u);
	int pending = 0;
	for (int i = top; i >= 0; i--) {
		if (i != top) {
			if (pending) {
				ops->p1p1_to_p2(&acc, &t);
			} else {
				acc.X = u.X;
				acc.Y = u.Y;
				acc.Z = u.Z;
			}
			ops->p2_dbl(&t, &acc);
			pending = 1;
		}
		for (int e = start[i]; e < start[i + 1]; e++) {
			int dg = ed[e];
			if (pending)
				ops->p1p1_to_p3(&u, &t);
			if (dg > 0)
				ops->add(&t, &u, &tab[ej[e]][dg / 2]);
			else
				ops->sub(&t, &u, &tab[ej[e]][(-dg) / 2]);
			pending = 1;
		}
		if (bnaf[i] != 0) {
			if (pending)
				ops->p1p1_to_p3(&u, &t);
			if (bnaf[i] > 0)
				ops->madd(&t, &u, &ge64_bi8[bnaf[i] / 2]);
			else
				ops->msub(&t, &u, &ge64_bi8[(-bnaf[i]) / 2]);
			pending = 1;
		}
	}
	if (pending)
		ops->p1p1_to_p3(&u, &t);
	*r = u;
}

void msm_straus_vartime(ge64_p3 *r, const uint8_t (*a)[32], const ge64_p3 *P, int n,
                        const uint8_t b[32], const fe64_impl *im)
{
	fe64 d2;
	if (n < 0)
		n = 0;
	if (n > MSM_MAX)
		n = MSM_MAX; /* the caller's bug; never reached from ed25519.c */
	msm_fe64_from_fe(&d2, &ge_d2);
	if (im->straus_lanes != NULL)
		msm_straus_lanes(r, a, P, n, b, &d2, im);
	else
		msm_straus_c(r, a, P, n, b, &d2, im);
}

int msm_is_small_order_vartime(const ge64_p3 *p, const ge64_ops *ops)
{
	ge64_p2 q = { p->X, p->Y, p->Z };
	ge64_p1p1 t;
	fe64 zero = { { 0, 0, 0, 0 } };
	for (int i = 0; i < 3; i++) {
		ops->p2_dbl(&t, &q);
		ops->p1p1_to_p2(&q, &t);
	}
	/* the identity: X = 0 and Y = Z */
	return msm_fe64_equal(&q.X, &zero) && msm_fe64_equal(&q.Y, &q.Z);
}

/* Pippenger (msm_pippenger_vartime). Signed digits of width c: digit j of
 * a is in [-2^(c-1), 2^(c-1)) after the carry of digit j - 1, so c <=
 * MSM_PIP_CMAX keeps it in a signed char; a 256-bit a and its last carry
 * take at most ceil(256 / c) + 1 <= MSM_PIP_WIN windows. */
#define MSM_PIP_CMIN 5
#define MSM_PIP_CMAX 7
#define MSM_PIP_WIN (256 / MSM_PIP_CMIN + 2)

/* Bits of a 256-bit little-endian a (0 for a = 0). */
static int msm_bitlen(const uint8_t a[32])
{
	for (int i = 31; i >= 0; i--)
		if (a[i] != 0)
			return 8 * i + 32 - __builtin_clz((unsigned)a[i]);
	return 0;
}

/* Bits [pos, pos + c) of a (c <= 8; bits past 255 are 0). */
static unsigned msm_bits(const uint8_t a[32], int pos, int c)
{
	unsigned v = 0;
	int i = pos >> 3;
	for (int k = 0; k < 3 && i + k < 32; k++)
		v |= (unsigned)a[i + k] << (8 * k);
	return (v >> (pos & 7)) & ((1u << c) - 1);
}

/* The signed digits of a in width c; returns the number of windows up to
 * the last nonzero digit (0 for a = 0). */
static int msm_pip_digits(signed char *dig, const uint8_t a[32], int bits, int c)
{
	int carry = 0, top = 0;
	const int half = 1 << (c - 1);
	for (int j = 0; j * c < bits + c; j++) { /* the last window: the carry */
		int v = (int)msm_bits(a, j * c, c) + carry;
		carry = v >= half;
		v -= carry << c;
		dig[j] = (signed char)v;
		if (v != 0)
			top = j + 1;
	}
	return top;
}

/* A p3 point as a precomp one (Z made 1 first when it is not). */
static void msm_p3_to_precomp(ge64_precomp *r, const ge64_p3 *p, const fe64 *d2,
                              const ge64_ops *ops)
{
	fe64 x = p->X, y = p->Y, t;
	uint8_t z[32];
	fe64_tobytes(z, &p->Z);
	static const uint8_t one[32] = { 1 };
	if (memcmp(z, one, 32) != 0) {
		fe64 zi;
		fe64_invert(&zi, &p->Z);
		ops->fe->mul(x.v, p->X.v, zi.v);
		ops->fe->mul(y.v, p->Y.v, zi.v);
	}
	fe64_add(&r->yplusx, &y, &x);
	fe64_sub(&r->yminusx, &y, &x);
	ops->fe->mul(t.v, x.v, y.v);
	ops->fe->mul(r->xy2d.v, t.v, d2->v);
}

void msm_pippenger_vartime(ge64_p3 *r, const uint8_t (*a)[32], const ge64_p3 *P, int n,
                           const uint8_t b[32], const ge64_ops *ops)
{
	/* the points and B (last) in precomp form, their digits and lengths */
	ge64_precomp pre[MSM_PIP_MAX + 1];
	signed char dig[MSM_PIP_MAX + 1][MSM_PIP_WIN];
	int bits[MSM_PIP_MAX + 1], nw[MSM_PIP_MAX + 1];
	ge64_p3 bucket[1 << (MSM_PIP_CMAX - 1)], sum, part, acc;
	uint8_t used[1 << (MSM_PIP_CMAX - 1)];
	fe64 d2;
	ge64_p1p1 t;

	if (n < 0)
		n = 0;
	if (n > MSM_PIP_MAX)
		n = MSM_PIP_MAX; /* the caller's bug; never reached from ed25519.c */
	msm_fe64_from_fe(&d2, &ge_d2);
	int m = 0; /* points with a nonzero scalar */
	const uint8_t *sc[MSM_PIP_MAX + 1];
	for (int i = 0; i <= n; i++) {
		const uint8_t *s = i < n ? a[i] : b;
		int bl = msm_bitlen(s);
		if (bl == 0)
			continue;
		if (i < n)
			msm_p3_to_precomp(&pre[m], &P[i], &d2, ops);
		else
			pre[m] = ge64_bi8[0]; /* B */
		sc[m] = s;
		bits[m++] = bl;
	}
	/* c: the least of (additions into buckets) + (bucket sums: two
	 * additions of p3 points per bucket per window), counted in field
	 * multiplications (11 and 13 per addition). */
	int c = MSM_PIP_CMIN;
	long best = -1;
	for (int cc = MSM_PIP_CMIN; cc <= MSM_PIP_CMAX; cc++) {
		long adds = 0;
		for (int i = 0; i < m; i++)
			adds += bits[i] / cc + 1;
		long cost = 11 * adds + 26L * ((256 + cc) / cc) * (1L << (cc - 1));
		if (best < 0 || cost < best) {
			best = cost;
			c = cc;
		}
	}
	int top = 0;
	for (int i = 0; i < m; i++) {
		nw[i] = msm_pip_digits(dig[i], sc[i], bits[i], c);
		if (nw[i] > top)
			top = nw[i];
	}

	/* windows from the top: acc = 2^c acc + sum_k k (bucket k) */
	const int nb = 1 << (c - 1);
	int have = 0;
	msm_p3_identity(&acc);
	for (int w = top - 1; w >= 0; w--) {
		if (have) {
			ge64_p2 q = { acc.X, acc.Y, acc.Z };
			for (int k = 0; k < c; k++) {
				ops->p2_dbl(&t, &q);
				if (k + 1 < c)
					ops->p1p1_to_p2(&q, &t);
			}
			ops->p1p1_to_p3(&acc, &t);
		}
		memset(used, 0, (size_t)nb);
		for (int i = 0; i < m; i++) {
			if (w >= nw[i])
				continue; /* a short scalar: no digit this high */
			int dg = dig[i][w];
			if (dg == 0)
				continue;
			int k = (dg > 0 ? dg : -dg) - 1;
			if (!used[k]) {
				msm_p3_identity(&bucket[k]);
				used[k] = 1;
			}
			if (dg > 0)
				ops->madd(&t, &bucket[k], &pre[i]);
			else
				ops->msub(&t, &bucket[k], &pre[i]);
			ops->p1p1_to_p3(&bucket[k], &t);
		}
		/* part = sum_k (k + 1) bucket[k]: running sums from the top */
		int sh = 0, ph = 0;
		for (int k = nb - 1; k >= 0; k--) {
			if (used[k]) {
				if (sh)
					msm_p3_add(&sum, &bucket[k], &d2, ops);
				else
					sum = bucket[k];
				sh = 1;
			}
			if (sh) {
				if (ph)
					msm_p3_add(&part, &sum, &d2, ops);
				else
					part = sum;
				ph = 1;
			}
		}
		if (ph) {
			if (have)
				msm_p3_add(&acc, &part, &d2, ops);
			else
				acc = part;
			have = 1;
		}
	}
	*r = acc;
}
