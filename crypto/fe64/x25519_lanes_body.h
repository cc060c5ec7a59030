/* SPDX-License-Identifier: MIT */
/*
 * x25519_lanes_body.h - the ladder of x25519_lanes.h, written once over a
 * four-lane vector of 64-bit integers; included (no include guard) by the
 * AVX-512 IFMA routine (crypto/asm/amd64/x25519_ifma.c, on __m256i) and by
 * its portable C twin (fe64/x25519_lanes.c, on a struct of four uint64_t),
 * which define first:
 *
 *   LN_V                the vector type; LN_F(name) the prefixed name of a
 *                       helper here; LN_INLINE a helper's attributes;
 *                       LN_ENTRY_ATTR, LN_ENTRY_NAME the routine's
 *   LN_ADD, LN_SUB, LN_AND, LN_XOR (a, b)   lane-wise, modulo 2^64
 *   LN_SRL, LN_SLL (a, n)                    shifts by a constant n
 *   LN_MLO, LN_MHI (acc, a, b)  acc + the low / high 52 bits of the
 *                       104-bit product of the low 52 bits of a and b
 *                       (VPMADD52LUQ / VPMADD52HUQ)
 *   LN_PERM(a, i0, i1, i2, i3)  lane j of the result is lane ij of a
 *   LN_ZPERM(k, a, i0, i1, i2, i3)  the same where bit j of the constant k
 *                       is set, else 0
 *   LN_PERMV(a, idx)    lane j of the result is lane (lane j of idx) of a,
 *                       idx's lanes < 4 (secret: VPERMQ with a register
 *                       index, no memory access; the C twin selects with
 *                       masks)
 *   LN_BLEND(k, a, b)   lane j from b if bit j of the constant k, else a
 *   LN_MADD, LN_MSUB (src, k, a, b)   lane j a + b (a - b) if bit j of the
 *                       constant k, else src's lane j
 *   LN_SET(x0, x1, x2, x3)   the vector with lane j = xj
 *   LN_LANE(a, j)       lane j (a constant) of a, as uint64_t
 *   LN_SCRUB()          optional: run last, clears what the routine's
 *                       own registers may still hold (the vector ones in
 *                       the AVX-512 build)
 *
 * and #undef's them all at its end.
 *
 * Bounds (radix 2^51, limbs l[0..4]): every multiplicand limb < 2^52.
 * Multiplication: L[k] (H[k]) the sums of the low (high) 52 bits of the
 * products a_i b_j, i + j = k, each < 5 2^52; the high half of a product
 * weighs 2^52 = 2 2^51, so the columns are L[k] + 2 H[k-1], and 2^255 = 19
 * (mod p) folds columns 5..9 into 0..4: r[k] = L[k] + 2 H[k-1] + 19 (L[k+5]
 * + 2 H[k+4]) < 2^56 + 19 2^56 < 2^61. Carry: one round in parallel, every
 * limb's bits from 51 up added to the next limb (the top limb's, times 19,
 * to l[0]): a vector of limbs below 2^63 comes out with l[0] < 2^51 + 19
 * 2^12 and the others < 2^51 + 2^12, all below 2^52 again. Addition: below
 * 2^53 before its carry; subtraction a - b as a + 4p - b (4p's limbs
 * 2^53 - 76 and 2^53 - 4, above every b < 2^52), below 2^54. The state
 * (x2, z2, x3, z3) is left as the last product made it (limbs < 2^61):
 * the next step's x - z is x + 2^11 p - z, below 2^63, and its one carry
 * brings A, B, C, D below 2^52.
 */

#define LN_M51 ((UINT64_C(1) << 51) - 1)
/* complete unrolling: constant limb indices, no loop branch but the ladder's */
#define LN_PRAGMA(x) _Pragma(#x)
#define LN_UNROLL(n) LN_PRAGMA(GCC unroll n)

typedef struct {
	LN_V l[5];
} LN_F(fe);

/* 19 a (a < 2^59) */
LN_INLINE LN_V LN_F(times19)(LN_V a)
{
	return LN_ADD(LN_ADD(a, LN_SLL(a, 1)), LN_SLL(a, 4));
}

LN_INLINE void LN_F(carry)(LN_F(fe) *r)
{
	const LN_V m = LN_SET(LN_M51, LN_M51, LN_M51, LN_M51);
	LN_V c0 = LN_SRL(r->l[0], 51), c1 = LN_SRL(r->l[1], 51), c2 = LN_SRL(r->l[2], 51);
	LN_V c3 = LN_SRL(r->l[3], 51), c4 = LN_SRL(r->l[4], 51);

	r->l[0] = LN_ADD(LN_AND(r->l[0], m), LN_F(times19)(c4));
	r->l[1] = LN_ADD(LN_AND(r->l[1], m), c0);
	r->l[2] = LN_ADD(LN_AND(r->l[2], m), c1);
	r->l[3] = LN_ADD(LN_AND(r->l[3], m), c2);
	r->l[4] = LN_ADD(LN_AND(r->l[4], m), c3);
}

/* r = a b + c lane by lane (c's limbs < 2^52), limbs < 2^61 (not
 * carried); r may alias a or b */
LN_INLINE void LN_F(muladd)(LN_F(fe) *r, const LN_F(fe) *a, const LN_F(fe) *b, const LN_F(fe) *c)
{
	const LN_V z = LN_SET(0, 0, 0, 0);
	LN_V L[9], H[9];

	LN_UNROLL(9)
	for (int k = 0; k < 9; k++) {
		L[k] = k < 5 ? c->l[k] : z;
		H[k] = z;
	}
#define LN_P(i, j)                                                      \
	do {                                                            \
		L[(i) + (j)] = LN_MLO(L[(i) + (j)], a->l[i], b->l[j]);  \
		H[(i) + (j)] = LN_MHI(H[(i) + (j)], a->l[i], b->l[j]);  \
	} while (0)
	LN_P(0, 0); LN_P(0, 1); LN_P(0, 2); LN_P(0, 3); LN_P(0, 4);
	LN_P(1, 0); LN_P(1, 1); LN_P(1, 2); LN_P(1, 3); LN_P(1, 4);
	LN_P(2, 0); LN_P(2, 1); LN_P(2, 2); LN_P(2, 3); LN_P(2, 4);
	LN_P(3, 0); LN_P(3, 1); LN_P(3, 2); LN_P(3, 3); LN_P(3, 4);
	LN_P(4, 0); LN_P(4, 1); LN_P(4, 2); LN_P(4, 3); LN_P(4, 4);
#undef LN_P
	r->l[0] = LN_ADD(L[0], LN_F(times19)(LN_ADD(L[5], LN_SLL(H[4], 1))));
	r->l[1] = LN_ADD(LN_ADD(L[1], LN_SLL(H[0], 1)),
	                 LN_F(times19)(LN_ADD(L[6], LN_SLL(H[5], 1))));
	r->l[2] = LN_ADD(LN_ADD(L[2], LN_SLL(H[1], 1)),
	                 LN_F(times19)(LN_ADD(L[7], LN_SLL(H[6], 1))));
	r->l[3] = LN_ADD(LN_ADD(L[3], LN_SLL(H[2], 1)),
	                 LN_F(times19)(LN_ADD(L[8], LN_SLL(H[7], 1))));
	r->l[4] = LN_ADD(LN_ADD(L[4], LN_SLL(H[3], 1)), LN_F(times19)(LN_SLL(H[8], 1)));
}

LN_INLINE void LN_F(mul)(LN_F(fe) *r, const LN_F(fe) *a, const LN_F(fe) *b)
{
	LN_F(fe) zero;

	LN_UNROLL(5)
	for (int k = 0; k < 5; k++)
		zero.l[k] = LN_SET(0, 0, 0, 0);
	LN_F(muladd)(r, a, b, &zero);
}

/* Exchange lanes (0, 1) with (2, 3) where mask is all ones. */
LN_INLINE void LN_F(cswap)(LN_F(fe) *x, uint64_t mask)
{
	const LN_V m = LN_SET(mask, mask, mask, mask);
	LN_UNROLL(5)
	for (int k = 0; k < 5; k++)
		x->l[k] = LN_XOR(x->l[k], LN_AND(m, LN_XOR(x->l[k], LN_PERM(x->l[k], 2, 3, 0, 1))));
}

/* Limbs < 2^52 -> a value < 2^256 in radix 2^64. */
LN_INLINE void LN_F(pack)(fe64 *h, uint64_t l[5])
{
	uint64_t c;

	LN_UNROLL(2)
	for (int pass = 0; pass < 2; pass++) {
		LN_UNROLL(4)
		for (int k = 0; k < 4; k++) {
			c = l[k] >> 51;
			l[k] &= LN_M51;
			l[k + 1] += c;
		}
		if (pass == 0) {
			c = l[4] >> 51;
			l[4] &= LN_M51;
			l[0] += 19 * c;
		}
	}
	/* l[0..3] < 2^51, l[4] <= 2^51 */
	h->v[0] = l[0] | l[1] << 51;
	h->v[1] = l[1] >> 13 | l[2] << 38;
	h->v[2] = l[2] >> 26 | l[3] << 25;
	h->v[3] = l[3] >> 39 | l[4] << 12;
}

LN_ENTRY_ATTR void LN_ENTRY_NAME(fe64 *x2, fe64 *z2, const fe64 *x1, const uint64_t w[4])
{
	uint64_t u[5], xs[5], zs[5];
	LN_F(fe) X, X1, B13, BIG13, A24, ONE, s, t, m;

	u[0] = x1->v[0] & LN_M51;
	u[1] = (x1->v[0] >> 51 | x1->v[1] << 13) & LN_M51;
	u[2] = (x1->v[1] >> 38 | x1->v[2] << 26) & LN_M51;
	u[3] = (x1->v[2] >> 25 | x1->v[3] << 39) & LN_M51;
	u[4] = (x1->v[3] >> 12) & LN_M51; /* bit 255 dropped */
	LN_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		uint64_t p4 = k == 0 ? (UINT64_C(1) << 53) - 76 : (UINT64_C(1) << 53) - 4;
		uint64_t big = k == 0 ? (UINT64_C(1) << 62) - (19 << 11) : (UINT64_C(1) << 62) - (1 << 11);
		uint64_t one = k == 0;
		X.l[k] = LN_SET(one, 0, u[k], one); /* (x2, z2, x3, z3) = (1, 0, u, 1) */
		X1.l[k] = LN_SET(0, 0, 0, u[k]);
		B13.l[k] = LN_SET(0, p4, 0, p4);
		BIG13.l[k] = LN_SET(0, big, 0, big); /* 2^11 p */
		A24.l[k] = LN_SET(0, k == 0 ? 121665 : 0, 0, 0);
		ONE.l[k] = LN_SET(one, 0, one, 0);
	}

	/* bits 254..0 of w, each in turn at the top of w3 */
	uint64_t w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3], swap = 0;
	w3 = w3 << 1 | w2 >> 63;
	w2 = w2 << 1 | w1 >> 63;
	w1 = w1 << 1 | w0 >> 63;
	w0 <<= 1;
	/* the one loop: 255 steps, never unrolled (public counter) */
	LN_UNROLL(1)
	for (int i = 0; i < 255; i++) {
		uint64_t bit = w3 >> 63;
		w3 = w3 << 1 | w2 >> 63;
		w2 = w2 << 1 | w1 >> 63;
		w1 = w1 << 1 | w0 >> 63;
		w0 <<= 1;
		/* the conditional swap of (x2, z2) and (x3, z3) is in the lane
		 * indices of stage 1's permutations (a register operand of
		 * VPERMQ: no address, no branch) */
		uint64_t s2 = (swap ^ bit) << 1;
		LN_V ip = LN_SET(s2, s2, 2 ^ s2, 2 ^ s2), iq = LN_SET(1 ^ s2, 1 ^ s2, 3 ^ s2, 3 ^ s2);
		swap = bit;

		/* (A, B, C, D) = (x2 + z2, x2 - z2, x3 + z3, x3 - z3): X is the
		 * last step's product, not carried (limbs < 2^61), so x - z is
		 * x + 2^11 p - z (limbs of 2^11 p: 2^62 - 19 2^11, 2^62 - 2^11),
		 * below 2^63; one carry for both */
		LN_UNROLL(5)
		for (int k = 0; k < 5; k++) {
			LN_V p = LN_ADD(LN_PERMV(X.l[k], ip), BIG13.l[k]);
			LN_V q = LN_PERMV(X.l[k], iq);
			s.l[k] = LN_MSUB(LN_ADD(p, q), 0xa, p, q);
		}
		LN_F(carry)(&s);
		/* (AA, BB, CB, DA) = (A, B, C, D) (A, B, B, A) */
		LN_UNROLL(5)
		for (int k = 0; k < 5; k++)
			t.l[k] = LN_PERM(s.l[k], 0, 1, 1, 0);
		LN_F(mul)(&m, &s, &t);
		LN_F(carry)(&m);
		/* (AA, E, F, G) = (AA, AA - BB, DA + CB, DA - CB); t's lane 0 is
		 * BB (carried) */
		LN_UNROLL(5)
		for (int k = 0; k < 5; k++) {
			LN_V p = LN_ADD(LN_PERM(m.l[k], 0, 0, 3, 3), B13.l[k]);
			LN_V q = LN_PERM(m.l[k], 1, 1, 2, 2);
			s.l[k] = LN_MSUB(LN_MADD(p, 0x4, p, q), 0xa, p, q);
			t.l[k] = q;
		}
		LN_F(carry)(&s);
		/* (x2', AA + a24 E, x3', G^2) = (AA, E, F, G) (BB, a24, F, G)
		 * + (0, AA, 0, 0) */
		LN_UNROLL(5)
		for (int k = 0; k < 5; k++) {
			t.l[k] = LN_BLEND(0x2, LN_BLEND(0x1, s.l[k], t.l[k]), A24.l[k]);
			m.l[k] = LN_ZPERM(0x2, s.l[k], 0, 0, 0, 0);
		}
		LN_F(muladd)(&m, &s, &t, &m);
		LN_F(carry)(&m);
		/* (x2', z2', x3', z3') = (x2', E, x3', x1) (1, AA + a24 E, 1, G^2) */
		LN_UNROLL(5)
		for (int k = 0; k < 5; k++) {
			t.l[k] = LN_BLEND(0x5, m.l[k], ONE.l[k]);
			m.l[k] = LN_BLEND(0x8, LN_BLEND(0x2, m.l[k], s.l[k]), X1.l[k]);
		}
		LN_F(mul)(&X, &m, &t);
	}
	LN_F(cswap)(&X, 0 - swap);
	LN_F(carry)(&X);

	LN_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		xs[k] = LN_LANE(X.l[k], 0);
		zs[k] = LN_LANE(X.l[k], 1);
	}
	LN_F(pack)(x2, xs);
	LN_F(pack)(z2, zs);
#ifdef LN_SCRUB
	LN_SCRUB();
#endif
}

#undef LN_M51
#undef LN_V
#undef LN_F
#undef LN_INLINE
#undef LN_ENTRY_ATTR
#undef LN_ENTRY_NAME
#undef LN_ADD
#undef LN_SUB
#undef LN_AND
#undef LN_XOR
#undef LN_SRL
#undef LN_SLL
#undef LN_MLO
#undef LN_MHI
#undef LN_PERM
#undef LN_ZPERM
#undef LN_PERMV
#undef LN_BLEND
#undef LN_MADD
#undef LN_MSUB
#undef LN_SET
#undef LN_LANE
#undef LN_PRAGMA
#undef LN_UNROLL
#undef LN_SCRUB
