/* SPDX-License-Identifier: MIT */
/*
 * base_lanes_body.h - the eight-lane comb of base_lanes.h, written once over
 * a vector of eight 64-bit integers; included (no include guard) by the
 * AVX-512 IFMA routine (crypto/asm/amd64/base_ifma.c, on __m512i) and by its
 * portable C twin (fe64/base_lanes.c, on a struct of eight uint64_t), after
 * fe64/base_lanes_table.h, which define first:
 *
 *   BL_V                the vector type; BL_F(name) the prefixed name of a
 *                       helper here; BL_INLINE a helper's attributes;
 *                       BL_ENTRY_ATTR, BL_ENTRY_NAME the routine's
 *   BL_ADD, BL_SUB, BL_AND, BL_XOR (a, b)   lane-wise, modulo 2^64
 *   BL_SRL, BL_SLL (a, n)   shifts by a constant n
 *   BL_SIGN(a)          all ones in the lanes whose bit 63 is set, else 0
 *   BL_MLO, BL_MHI (acc, a, b)  acc + the low / high 52 bits of the
 *                       104-bit product of the low 52 bits of a and b
 *                       (VPMADD52LUQ / VPMADD52HUQ)
 *   BL_PERM2(a, idx, b) lane j = lane (idx_j mod 8) of a if bit 3 of idx_j
 *                       is clear, of b if set (VPERMT2Q: idx secret, in a
 *                       register; the C twin selects with masks)
 *   BL_SEL(m, a, b)     lane j from b where m's lane j is all ones, from a
 *                       where it is 0 (VPTERNLOGQ)
 *   BL_SET1(x)          every lane x
 *   BL_LOAD(p), BL_STORE(p, v)   eight uint64_t at p (64-byte aligned;
 *                       public addresses only)
 *   BL_SCRUB()          optional: run last, clears the vector registers
 *
 * and #undef's them all at its end.
 *
 * Bounds (radix 2^51, limbs l[0..4]): a multiplicand's limbs are below
 * 2^52. Multiplication: L[k] (H[k]) the sums of the low (high) 52 bits of
 * the products a_i b_j with i + j = k, each below 5 2^52; the high half
 * weighs 2^52 = 2 2^51, and 2^255 = 19 (mod p) folds columns 5..8 into
 * 0..4: every column below 2^52 (5 + 10 + 19 15) < 2^61. One carry round in
 * parallel (bits 51 and up of every limb into the next, the top one's
 * times 19 into l[0]) takes limbs below 2^63 to "tight" limbs: l[0] < 2^51
 * + 19 2^12, the others < 2^51 + 2^12. A sum of two tight values or a
 * difference a + 4p - b (4p's limbs 2^53 - 76, 2^53 - 4, above a tight b)
 * is carried once to be tight again. The madd's products A, B and C are
 * left uncarried (below 2^61): A + B and 2 Z + C are below 2^62, and their
 * differences take 2^11 p (limbs 2^62 - 19 2^11, 2^62 - 2^11, above any b
 * below 2^61), below 2^63; one carry each. The table's entries are
 * canonical (below 2^51), the negated 2dxy is 2p - v (below 2^52).
 */

#define BL_M51 ((UINT64_C(1) << 51) - 1)
#define BL_PRAGMA(x) _Pragma(#x)
#define BL_UNROLL(n) BL_PRAGMA(GCC unroll n)

typedef struct {
	BL_V l[5];
} BL_F(fe);

/* 19 a (a < 2^59) */
BL_INLINE BL_V BL_F(times19)(BL_V a)
{
	return BL_ADD(BL_ADD(a, BL_SLL(a, 1)), BL_SLL(a, 4));
}

/* one parallel carry round: limbs below 2^63 in, tight out */
BL_INLINE void BL_F(carry)(BL_F(fe) *r)
{
	const BL_V m = BL_SET1(BL_M51);
	BL_V c[5];

	BL_UNROLL(5)
	for (int k = 0; k < 5; k++)
		c[k] = BL_SRL(r->l[k], 51);
	r->l[0] = BL_ADD(BL_AND(r->l[0], m), BL_F(times19)(c[4]));
	BL_UNROLL(4)
	for (int k = 1; k < 5; k++)
		r->l[k] = BL_ADD(BL_AND(r->l[k], m), c[k - 1]);
}

/* r = a b, limbs below 2^61 (not carried); r may alias a or b */
BL_INLINE void BL_F(mul_loose)(BL_F(fe) *r, const BL_F(fe) *a, const BL_F(fe) *b)
{
	const BL_V z = BL_SET1(0);
	BL_V L[9], H[9];

	BL_UNROLL(9)
	for (int k = 0; k < 9; k++) {
		L[k] = z;
		H[k] = z;
	}
	BL_UNROLL(5)
	for (int i = 0; i < 5; i++) {
		BL_UNROLL(5)
		for (int j = 0; j < 5; j++) {
			L[i + j] = BL_MLO(L[i + j], a->l[i], b->l[j]);
			H[i + j] = BL_MHI(H[i + j], a->l[i], b->l[j]);
		}
	}
	/* column k: L[k] + 2 H[k - 1]; columns 5..9 times 19 into 0..4 */
	BL_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		BL_V lo = k == 0 ? L[0] : BL_ADD(L[k], BL_SLL(H[k - 1], 1));
		BL_V up = k == 4 ? BL_SLL(H[8], 1) : BL_ADD(L[k + 5], BL_SLL(H[k + 4], 1));
		r->l[k] = BL_ADD(lo, BL_F(times19)(up));
	}
}

/* r = a b, tight; r may alias a or b */
BL_INLINE void BL_F(mul)(BL_F(fe) *r, const BL_F(fe) *a, const BL_F(fe) *b)
{
	BL_F(mul_loose)(r, a, b);
	BL_F(carry)(r);
}

/* r = a + b (sub = 0), a + 4p - b (sub = 1: b tight) or a + 2^11 p - b
 * (sub = 2: b below 2^61), tight (a constant); a + b and the sum with p
 * below 2^63 */
BL_INLINE void BL_F(addsub)(BL_F(fe) *r, const BL_F(fe) *a, const BL_F(fe) *b, int sub)
{
	BL_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		if (sub) {
			int sh = sub == 1 ? 2 : 11;
			BL_V pm = BL_SET1(((k == 0 ? (UINT64_C(1) << 51) - 19 : (UINT64_C(1) << 51) - 1)) << sh);
			r->l[k] = BL_SUB(BL_ADD(a->l[k], pm), b->l[k]);
		} else {
			r->l[k] = BL_ADD(a->l[k], b->l[k]);
		}
	}
	BL_F(carry)(r);
}

BL_ENTRY_ATTR void BL_ENTRY_NAME(uint64_t (*out)[5][BASE_LANES], const uint64_t (*dig)[BASE_LANES])
{
	BL_F(fe) hx, hy, hz, ht, yp, ym, xy, a, b, c, e, f, g, h;
	const BL_V one = BL_SET1(1), zero = BL_SET1(0);

	/* h = the identity (0 : 1 : 1 : 0) */
	BL_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		hx.l[k] = zero;
		hy.l[k] = k == 0 ? one : zero;
		hz.l[k] = hy.l[k];
		ht.l[k] = zero;
	}

	/* the one loop: a row per digit, never unrolled (public counter) */
	BL_UNROLL(1)
	for (int i = 0; i < BASE_LANES_DIGITS; i++) {
		/* the lanes' digits d: n = all ones where d < 0; id = |d| - 1
		 * (-1 for d = 0: z = all ones there); bit 4 of id chooses the
		 * upper 16 entries */
		BL_V d = BL_LOAD(dig[i]);
		BL_V n = BL_SIGN(d);
		BL_V id = BL_SUB(BL_SUB(BL_XOR(d, n), n), one);
		BL_V z = BL_SIGN(id);
		BL_V up = BL_SIGN(BL_SLL(id, 59));
		BL_F(fe) *sel[3] = { &yp, &ym, &xy };

		BL_UNROLL(3)
		for (int co = 0; co < 3; co++) {
			BL_UNROLL(5)
			for (int k = 0; k < 5; k++) {
				const uint64_t *t = bl_comb[i][co][k];
				BL_V lo = BL_PERM2(BL_LOAD(t), id, BL_LOAD(t + 8));
				BL_V hi = BL_PERM2(BL_LOAD(t + 16), id, BL_LOAD(t + 24));
				/* d = 0: the identity (1, 1, 0) */
				BL_V idv = co < 2 && k == 0 ? one : zero;
				sel[co]->l[k] = BL_SEL(z, BL_SEL(up, lo, hi), idv);
			}
		}
		/* d < 0: (y - x, y + x, -2dxy), -2dxy as 2p - 2dxy */
		BL_UNROLL(5)
		for (int k = 0; k < 5; k++) {
			BL_V p2 = BL_SET1(k == 0 ? (UINT64_C(1) << 52) - 38 : (UINT64_C(1) << 52) - 2);
			BL_V s = BL_SEL(n, yp.l[k], ym.l[k]);
			ym.l[k] = BL_SEL(n, ym.l[k], yp.l[k]);
			yp.l[k] = s;
			xy.l[k] = BL_SEL(n, xy.l[k], BL_SUB(p2, xy.l[k]));
		}

		/* ref10's madd: A = (Y + X)(y + x), B = (Y - X)(y - x), C =
		 * 2dxy T, D = 2 Z; then (E, H, G, F) = (A - B, A + B, D + C,
		 * D - C) and the p3 sum (E F, H G, G F, E H) */
		BL_F(addsub)(&a, &hy, &hx, 0);
		BL_F(mul_loose)(&a, &a, &yp);
		BL_F(addsub)(&b, &hy, &hx, 1);
		BL_F(mul_loose)(&b, &b, &ym);
		BL_F(mul_loose)(&c, &xy, &ht);
		BL_UNROLL(5)
		for (int k = 0; k < 5; k++)
			e.l[k] = BL_ADD(hz.l[k], hz.l[k]); /* D, below 2^53 */
		/* A, B and C not carried (below 2^61): the differences take 2^11 p */
		BL_F(addsub)(&g, &e, &c, 0);
		BL_F(addsub)(&f, &e, &c, 2);
		BL_F(addsub)(&e, &a, &b, 2);
		BL_F(addsub)(&h, &a, &b, 0);
		BL_F(mul)(&hx, &e, &f);
		BL_F(mul)(&hy, &h, &g);
		BL_F(mul)(&hz, &g, &f);
		BL_F(mul)(&ht, &e, &h);
	}

	BL_UNROLL(5)
	for (int k = 0; k < 5; k++) {
		BL_STORE(out[0][k], hx.l[k]);
		BL_STORE(out[1][k], hy.l[k]);
		BL_STORE(out[2][k], hz.l[k]);
	}
#ifdef BL_SCRUB
	BL_SCRUB();
#endif
}

#undef BL_M51
#undef BL_PRAGMA
#undef BL_UNROLL
#undef BL_V
#undef BL_F
#undef BL_INLINE
#undef BL_ENTRY_ATTR
#undef BL_ENTRY_NAME
#undef BL_ADD
#undef BL_SUB
#undef BL_AND
#undef BL_XOR
#undef BL_SRL
#undef BL_SLL
#undef BL_SIGN
#undef BL_MLO
#undef BL_MHI
#undef BL_PERM2
#undef BL_SEL
#undef BL_SET1
#undef BL_LOAD
#undef BL_STORE
#undef BL_SCRUB
