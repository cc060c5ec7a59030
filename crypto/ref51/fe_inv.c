/* SPDX-License-Identifier: MIT */
/*
 * fe_inv.c - inversion in GF(2^255 - 19) by a constant-time extended
 * binary GCD (Bernstein and Yang, "Fast constant-time gcd computation and
 * modular inversion", TCHES 2019, with the "half-delta" divstep), about
 * twice as fast as the Fermat power f^(p - 2), which the tests build from
 * fe_pow22523 and compare with (tests/asm/test-fe-inv.c). The library's
 * only inversion, for both backends.
 *
 * The state: f, g (the gcd pair, |f|, |g| <= p), d, e (coefficients with
 * d x = f, e x = g mod p), each a signed integer in five limbs of 62 bits
 * (limbs 0..3 in [0, 2^62), limb 4 signed). Start f = p, g = x mod p,
 * d = 0, e = 1, eta = 1 (eta = 2 delta, delta = 1/2). Then 10 rounds, each
 * of 59 divsteps worked out on the low 64 bits of f and g alone
 * (round59, which returns the 2x2 transition matrix scaled by 2^62),
 * then applied to the full f, g, d, e (fg_low, fg_high, update_de_rows;
 * all but fg_low during the next round's divsteps). 590 steps:
 * for inputs below 2^256 the half-delta divstep reaches g = 0 within 590
 * steps (the bound established for this variant by P. Wuille's analysis;
 * libsecp256k1's constant-time inversion also runs 10 x 59). Then f = +-1 (or f = p when x = 0) and
 * x^-1 = d f.
 *
 * One divstep, on (eta, f, g) with f odd:
 *   eta > 0 and g odd: (eta, f, g) <- (2 - eta, g, (g - f) / 2)
 *   g odd:             (eta, f, g) <- (eta + 2, f, (g + f) / 2)
 *   otherwise:         (eta, f, g) <- (eta + 2, f, g / 2)
 * The matrix (u v; q r) keeps 2^n (f_n, g_n) = (u f + v g, q f + r g) for
 * the round's starting f, g; |u| + |v| <= 2^n and |q| + |r| <= 2^n.
 *
 * Division by 2^62 of d and e: (u d + v e + m p) / 2^62 with m in
 * [0, 2^62) chosen so that the low 62 bits vanish (m = t / 19 mod 2^62,
 * t the low bits of u d + v e, since p = -19 mod 2^62). Each round adds at
 * most p to the larger of |d|, |e|, so after 10 rounds |d| < 11 p < 2^259:
 * no reduction is needed along the way.
 *
 * Constant time: the loop counts are constants; every decision of a divstep
 * is a mask (no branch, no memory index); the products are 64x64 -> 128-bit
 * multiplications.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "ref51/fe.h"

__extension__ typedef __int128 i128;
__extension__ typedef unsigned __int128 u128;

#define M62 (UINT64_MAX >> 2)

typedef struct s62 {
	int64_t v[5]; /* value = sum v[i] 2^(62 i) */
} s62;

/* p = 2^255 - 19 = (2^7 - 1) 2^248 + (2^62 - 19) + (2^62 - 1)(2^62 + 2^124 + 2^186) */
static const s62 s62_p = { { (int64_t)(M62 - 18), (int64_t)M62, (int64_t)M62, (int64_t)M62, 127 } };

/* 19^-1 mod 2^64 (19 * INV19 = 1 mod 2^64). */
#define INV19 ((uint64_t)0x86bca1af286bca1b)

/* n <= 19 divsteps on the low n bits of f and g, each packed in one word
 * with its row of the batch's transition matrix, so that one addition or
 * shift moves the value and both coefficients (the packing of s2n-bignum's
 * inversion, here with coefficients scaled to stay integers):
 *   F = f' + 2^(n+1) (U + 2^(n+2) V),  G = g' + 2^(n+1) (Q + 2^(n+2) R),
 * where after i steps f', g' are the step's f, g mod 2^(n-i) (as integers
 * of magnitude below 2^n: halving and adding such values stays below) and
 * (U, V; Q, R) is 2^(n-i) times round59's matrix of the i steps. The
 * halving of g halves Q and R exactly (both are multiples of 2^(n-i) >= 2
 * then), so the whole word G is shifted; |U| + |V|, |Q| + |R| <= 2^n, and
 * 2^(n+1) before a halving: every word stays below 2^(3n+5) <= 2^62.
 * At the end (U, V; Q, R) is the matrix of the n steps scaled by 2^n:
 * unpacked with the bias 2^n that makes f' + 2^n fit n + 1 bits, and the
 * middle field sign-extended from n + 2 bits. Constant time (masks,
 * shifts by the public n). */
static inline __attribute__((always_inline)) uint64_t divsteps_packed(uint64_t zeta, uint64_t f,
                                                                      uint64_t g, int n,
                                                                      int64_t m[4])
{
	const int a = n + 1, w = n + 2;
	const uint64_t low = ((uint64_t)1 << n) - 1;
	uint64_t F = (f & low) + ((uint64_t)1 << (n + a));     /* U = 2^n */
	uint64_t G = (g & low) + ((uint64_t)1 << (n + a + w)); /* R = 2^n */
	uint64_t Fh = F >> 1; /* F is odd (f is): F = 2 Fh + 1 */
	/* unrolled by 5 only: fully unrolled, gcc 12's straight-line
	 * schedule of these steps measured slower on Zen 4 (59 steps
	 * about 314 TSC ticks against 283) */
#pragma GCC unroll 5
	for (int i = 0; i < n; i++) {
		/* the step of round59's comment on whole words, with zeta
		 * = -(eta + 1) / 2: c1 = (eta > 0) = (zeta < 0), c2 = (g
		 * odd), s = c1 c2; g += (c1 ? -f : f) if c2; f = the old g
		 * if s; eta = (s ? -eta : eta) + 2, that is zeta = (s ?
		 * -zeta - 2 : zeta - 1); g /= 2. On halves: with G and F
		 * odd, (G + (c1 ? -F : F)) / 2 = (G >> 1) + A2, A2 = (c1 ?
		 * -Fh : Fh + 1) = (Fh ^ c1) + 1, so the sum is formed after
		 * the halving and the chain from G to G is four operations
		 * (and, negate, and, add; the shift beside them), against
		 * five before (about 4.8 cycles a step against 6.6 here, gcc
		 * 12 on Zen 4); the swap keeps Fh = G >> 1 (G odd then). */
		uint64_t c1 = (uint64_t)((int64_t)zeta >> 63);
		uint64_t c2 = ct_mask_u64(G & 1);
		uint64_t s = c1 & c2;
		uint64_t Gh = (uint64_t)((int64_t)G >> 1);
		uint64_t A2 = (Fh ^ c1) + 1;
		Fh ^= (Fh ^ Gh) & s;
		zeta = (zeta ^ s) - 1;
		G = Gh + (A2 & c2);
	}
	F = 2 * Fh + 1;
	uint64_t bias = (uint64_t)1 << n;
	int64_t rf = (int64_t)(F + bias) >> a, rg = (int64_t)(G + bias) >> a;
	m[0] = (int64_t)((uint64_t)rf << (64 - w)) >> (64 - w);
	m[1] = (rf - m[0]) >> w;
	m[2] = (int64_t)((uint64_t)rg << (64 - w)) >> (64 - w);
	m[3] = (rg - m[2]) >> w;
	return zeta;
}

/* t = (u, v; q, r) <- m t (2x2 matrices). */
static inline void mat_mul(int64_t t[4], const int64_t m[4])
{
	int64_t u = t[0], v = t[1], q = t[2], r = t[3];
	t[0] = m[0] * u + m[1] * q;
	t[1] = m[0] * v + m[1] * r;
	t[2] = m[2] * u + m[3] * q;
	t[3] = m[2] * v + m[3] * r;
}

/* One batch of n steps after the first k: f, g from the matrix t so far. */
static inline __attribute__((always_inline)) uint64_t divsteps_batch(uint64_t zeta, uint64_t f0,
                                                                     uint64_t g0, int k, int n,
                                                                     int64_t t[4])
{
	int64_t m[4];
	uint64_t f = (f0 * (uint64_t)t[0] + g0 * (uint64_t)t[1]) >> k;
	uint64_t g = (f0 * (uint64_t)t[2] + g0 * (uint64_t)t[3]) >> k;
	zeta = divsteps_packed(zeta, f, g, n, m);
	mat_mul(t, m);
	return zeta;
}

/* The state of safegcd_core between rounds: f, g, d, e, the last round's
 * matrix t (scaled by 2^62), and update_fg's carries between its two
 * halves. */
typedef struct safegcd_state {
	s62 f, g, d, e;
	int64_t t[4];
	i128 cf, cg;
} safegcd_state;

/* (f, g) <- ((u f + v g) / 2^62, (q f + r g) / 2^62), divisions exact, in
 * two halves: fg_low gives limbs 0 and 1 (all the next round's divsteps
 * read), fg_high limbs 2 to 4, run during the next round's divsteps. In
 * place: each writes limb i - 1 after it has read limb i. */
/* limbs lo .. hi - 1 of the products into the carries st->cf, st->cg,
 * each limb's low 62 bits written one limb down */
static inline __attribute__((always_inline)) void fg_limbs(safegcd_state *st, int lo, int hi)
{
	int64_t u = st->t[0], v = st->t[1], q = st->t[2], r = st->t[3];
	s62 *f = &st->f, *g = &st->g;
	i128 cf = st->cf, cg = st->cg;

	for (int i = lo; i < hi; i++) {
		cf += (i128)u * f->v[i] + (i128)v * g->v[i];
		cg += (i128)q * f->v[i] + (i128)r * g->v[i];
		f->v[i - 1] = (int64_t)((uint64_t)cf & M62);
		g->v[i - 1] = (int64_t)((uint64_t)cg & M62);
		cf >>= 62;
		cg >>= 62;
	}
	st->cf = cf;
	st->cg = cg;
}

static void fg_low(safegcd_state *st)
{
	int64_t u = st->t[0], v = st->t[1], q = st->t[2], r = st->t[3];
	const s62 *f = &st->f, *g = &st->g;

	st->cf = ((i128)u * f->v[0] + (i128)v * g->v[0]) >> 62; /* the low 62 bits are zero */
	st->cg = ((i128)q * f->v[0] + (i128)r * g->v[0]) >> 62;
	fg_limbs(st, 1, 3);
}

static void fg_high(safegcd_state *st)
{
	fg_limbs(st, 3, 5);
	st->f.v[4] = (int64_t)st->cf;
	st->g.v[4] = (int64_t)st->cg;
}

/* (d, e) <- ((u d + v e + md p) / 2^62, (q d + r e + me p) / 2^62), with
 * md, me in [0, 2^62) making the divisions exact: p = 2^255 - 19 = -19 +
 * 2^7 2^(4 * 62), so m p adds -19 m to limb 0 and 2^7 m to limb 4 (six
 * products fewer than p's full limbs). rows = 1: d only (e is left as it
 * is: the last round). */
static inline __attribute__((always_inline)) void update_de_rows(s62 *d, s62 *e,
                                                                 const int64_t t[4], int rows)
{
	int64_t u = t[0], v = t[1], q = t[2], r = t[3];
	uint64_t td = (uint64_t)u * (uint64_t)d->v[0] + (uint64_t)v * (uint64_t)e->v[0];
	uint64_t te = (uint64_t)q * (uint64_t)d->v[0] + (uint64_t)r * (uint64_t)e->v[0];
	int64_t md = (int64_t)((td * INV19) & M62); /* td + md p = 0 mod 2^62 */
	int64_t me = (int64_t)((te * INV19) & M62);
	i128 cd = (i128)u * d->v[0] + (i128)v * e->v[0] - (i128)19 * md;
	i128 ce = (i128)q * d->v[0] + (i128)r * e->v[0] - (i128)19 * me;
	cd >>= 62; /* the low 62 bits are zero */
	ce >>= 62;
	for (int i = 1; i < 5; i++) {
		cd += (i128)u * d->v[i] + (i128)v * e->v[i];
		if (rows == 2)
			ce += (i128)q * d->v[i] + (i128)r * e->v[i];
		if (i == 4) {
			cd += (i128)md << 7;
			ce += (i128)me << 7;
		}
		d->v[i - 1] = (int64_t)((uint64_t)cd & M62);
		if (rows == 2)
			e->v[i - 1] = (int64_t)((uint64_t)ce & M62);
		cd >>= 62;
		ce >>= 62;
	}
	d->v[4] = (int64_t)cd;
	if (rows == 2)
		e->v[4] = (int64_t)ce;
}

/* The sign of the last round's f = (u f + v g) / 2^62, which is +1 or -1
 * when x != 0 (any sign does when x = 0: d = 0): its limb 0 (1, or 2^62 - 1
 * for -1) from limbs 0 and 1 of f and g alone. All ones if f < 0. */
static uint64_t last_f_sign(const s62 *f, const s62 *g, const int64_t t[4])
{
	i128 c = (i128)t[0] * f->v[0] + (i128)t[1] * g->v[0];
	c >>= 62;
	c += (i128)t[0] * f->v[1] + (i128)t[1] * g->v[1];
	return ct_mask_u64(((uint64_t)c >> 1) & 1);
}

/* One round: 59 divsteps on the low 64 bits of f and g (f odd), as four
 * packed batches (15, 15, 15, 14 steps: divsteps_packed), the low bits of
 * f and g for the next batch from the matrix so far ((u f + v g) / 2^k,
 * whose low 64 - k >= 49 bits are exact); st->t <- 8 (u, v, q, r): the
 * matrix scaled by 2^62, as fg_low, fg_high and update_de_rows divide
 * (u f + v g is a multiple of 2^59, so 8 (u f + v g) / 2^62 is the
 * 59-step value). Returns the new zeta = -(eta + 1) / 2. Bit 0 of g at
 * step i depends only on the low i + 1 bits of the starting f and g.
 *
 * lagged: the previous round's update (fg_high, then d and e) is still
 * owed, and is done here between the batches, with st->t still the
 * previous matrix: the divsteps are one chain of dependent operations
 * that leaves the multiplier and most ALU slots free, and the update's
 * products run beside it (program order places them in the same window
 * of the out-of-order core; after the whole round they waited for it).
 *
 * One divstep, on (eta, f, g) with the matrix (u v; q r) of the steps so
 * far (2^i (f_i, g_i) = (u f + v g, q f + r g)):
 *   c1: eta > 0; c2: g odd; s: both (the swapping case)
 *   if g odd: g += -f or f (by c1), (q, r) += -(u, v) or (u, v)
 *   if s: f += g - f = the old g, (u, v) = the old (q, r), eta = -eta
 *   eta += 2; g /= 2 (even now), (u, v) *= 2
 * (divsteps_packed halves Q and R instead of doubling U and V). */
static uint64_t round59(uint64_t zeta, safegcd_state *st, int lagged)
{
	uint64_t f = (uint64_t)st->f.v[0] | ((uint64_t)st->f.v[1] << 62);
	uint64_t g = (uint64_t)st->g.v[0] | ((uint64_t)st->g.v[1] << 62);
	int64_t m[4], t[4];
	zeta = divsteps_packed(zeta, f, g, 15, m);
	memcpy(t, m, sizeof m);
	if (lagged) /* public: every round but the first */
		fg_high(st);
	zeta = divsteps_batch(zeta, f, g, 15, 15, t);
	if (lagged)
		update_de_rows(&st->d, &st->e, st->t, 2);
	zeta = divsteps_batch(zeta, f, g, 30, 15, t);
	zeta = divsteps_batch(zeta, f, g, 45, 14, t);
	for (int i = 0; i < 4; i++)
		st->t[i] = t[i] * 8;
	sigil_wipe(m, sizeof m);
	sigil_wipe(t, sizeof t);
	return zeta;
}

/* r = the integer w[0..3] (radix 2^64, below 2^256) in radix 2^62. */
static void s62_from_words(s62 *r, const uint64_t w[4])
{
	r->v[0] = (int64_t)(w[0] & M62);
	r->v[1] = (int64_t)(((w[0] >> 62) | (w[1] << 2)) & M62);
	r->v[2] = (int64_t)(((w[1] >> 60) | (w[2] << 4)) & M62);
	r->v[3] = (int64_t)(((w[2] >> 58) | (w[3] << 6)) & M62);
	r->v[4] = (int64_t)(w[3] >> 56);
}

/* x^-1 = w + 2^255 top (mod p) for 0 <= x < p (x = 0 gives 0), with
 * w[3] < 2^63 and top < 2^5. */
static void safegcd_core(uint64_t w[4], uint64_t *top, const uint64_t x[4])
{
	safegcd_state st;
	uint64_t zeta = (uint64_t)-1; /* -(eta + 1) / 2, eta = 1 */

	st.f = s62_p;
	s62_from_words(&st.g, x);
	memset(&st.d, 0, sizeof st.d);
	memset(&st.e, 0, sizeof st.e);
	st.e.v[0] = 1;

	for (int i = 0; i < 10; i++) {
		zeta = round59(zeta, &st, i > 0);
		if (i < 9)
			fg_low(&st);
	}
	/* the tenth round's update: of f only its sign, of g and e nothing
	 * (the ninth's was done during the tenth round) */
	uint64_t neg = last_f_sign(&st.f, &st.g, st.t);
	update_de_rows(&st.d, &st.e, st.t, 1);
	s62 d = st.d;

	/* f = +-1 (x != 0) or f = +-p with d = 0 (x = 0): x^-1 = d sign(f).
	 * Negate d limb by limb when f < 0, add 16 p (|d| < 11 p), carry:
	 * then 0 < d < 27 p < 2^260, limbs 0..3 in [0, 2^62). */
	i128 c = 0;
	for (int i = 0; i < 5; i++) {
		c += (i128)(int64_t)(((uint64_t)d.v[i] ^ neg) - neg) + (i128)16 * s62_p.v[i];
		d.v[i] = i < 4 ? (int64_t)((uint64_t)c & M62) : (int64_t)c;
		c >>= 62;
	}

	/* d as 4 x 64 bits plus w4 on top; top = d >> 255 < 2^5 */
	u128 acc = (u128)(uint64_t)d.v[0] | ((u128)(uint64_t)d.v[1] << 62);
	w[0] = (uint64_t)acc;
	acc >>= 64;
	acc |= (u128)(uint64_t)d.v[2] << 60;
	w[1] = (uint64_t)acc;
	acc >>= 64;
	acc |= (u128)(uint64_t)d.v[3] << 58;
	w[2] = (uint64_t)acc;
	acc >>= 64;
	acc |= (u128)(uint64_t)d.v[4] << 56;
	w[3] = (uint64_t)acc;
	uint64_t w4 = (uint64_t)(acc >> 64);
	*top = (w[3] >> 63) | (w4 << 1);
	w[3] &= UINT64_MAX >> 1;

	sigil_wipe(&st, sizeof st);
	sigil_wipe(&d, sizeof d);
	sigil_wipe(&acc, sizeof acc);
	sigil_wipe(&c, sizeof c);
}

void fe_invert_safegcd(fe *h, const fe *z)
{
	uint8_t s[32];
	uint64_t x[4], w[4], top;

	fe_tobytes(s, z); /* x mod p, canonical: 0 <= x < p */
	for (int i = 0; i < 4; i++) {
		x[i] = 0;
		for (int j = 7; j >= 0; j--)
			x[i] = (x[i] << 8) | s[8 * i + j];
	}
	safegcd_core(w, &top, x);

	/* w + 19 top in radix 2^51 (tight: limb 0 < 2^51 + 19 * 2^5) */
	h->v[0] = (w[0] & FE_MASK51) + 19 * top;
	h->v[1] = ((w[0] >> 51) | (w[1] << 13)) & FE_MASK51;
	h->v[2] = ((w[1] >> 38) | (w[2] << 26)) & FE_MASK51;
	h->v[3] = ((w[2] >> 25) | (w[3] << 39)) & FE_MASK51;
	h->v[4] = (w[3] >> 12) & FE_MASK51;

	sigil_wipe(s, sizeof s);
	sigil_wipe(x, sizeof x);
	sigil_wipe(w, sizeof w);
	sigil_wipe(&top, sizeof top);
}

void fe_invert_safegcd_u64(uint64_t h[4], const uint64_t x[4])
{
	uint64_t w[4], top;
	safegcd_core(w, &top, x);
	/* w + 19 top < 2^255 + 19 * 2^5 < 2^256: the carry stops in w[3] */
	u128 c = (u128)w[0] + 19 * top;
	h[0] = (uint64_t)c;
	c = (c >> 64) + w[1];
	h[1] = (uint64_t)c;
	c = (c >> 64) + w[2];
	h[2] = (uint64_t)c;
	h[3] = w[3] + (uint64_t)(c >> 64);
	sigil_wipe(w, sizeof w);
	sigil_wipe(&top, sizeof top);
	sigil_wipe(&c, sizeof c);
}
