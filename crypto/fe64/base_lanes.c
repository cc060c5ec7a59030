/* SPDX-License-Identifier: MIT */
/*
 * base_lanes.c - the fixed base for eight scalars at once (base_lanes.h):
 * the comb's digits, the encodings after the lanes (one inversion for the
 * eight Z), and the portable C twin of the AVX-512 IFMA routine:
 * fe64/base_lanes_body.h on a struct of eight uint64_t, VPMADD52LUQ/HUQ
 * from a 128-bit product, VPERMT2Q by masks over all sixteen lanes. The
 * twin is built in every build, for the tests and for ctgrind (cpu.c never
 * chooses it); bit for bit the IFMA routine's.
 */
#include <stdint.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "fe64/base_lanes.h"
#include "fe64/base_lanes_table.h"
#include "fe64/fe64.h"

_Static_assert(BL_ROWS == BASE_LANES_DIGITS && BL_W == 6 && BL_N == 32,
               "base_lanes_table.h is the comb of base_lanes.h");

void base_lanes_digits(uint64_t (*dig)[BASE_LANES], int lane, const uint8_t a[32])
{
	uint64_t w[4] = { 0 }, carry = 0;

	for (int i = 0; i < 32; i++)
		w[i / 8] |= (uint64_t)a[i] << (8 * (i % 8));
	/* unrolled: every position a constant */
	_Pragma("GCC unroll 43")
	for (int i = 0; i < BASE_LANES_DIGITS; i++) {
		unsigned bit = 6 * (unsigned)i, q = bit / 64, r = bit % 64;
		uint64_t v = w[q] >> r;
		if (r > 58 && q < 3) /* public position: the window spans two words */
			v |= w[q + 1] << (64 - r);
		v = (v & 63) + carry;  /* [0, 64] */
		carry = (v + 32) >> 6; /* 1 when v >= 32 */
		dig[i][lane] = v - (carry << 6);
	}
	sigil_wipe(w, sizeof w);
	sigil_wipe(&carry, sizeof carry);
}

/* Clears the stack below the caller's frame: what the lanes spilled there
 * (their secret state; frames of 1.6 to 3.6 KiB for the IFMA routine, up
 * to 7 KiB for the C twin with gcc 12 and clang 14), which no caller's
 * wipe reaches. Called right after the lanes, from the same frame. */
#define BL_BURN 8192
static __attribute__((noinline)) void bl_burn_stack(void)
{
	uint8_t b[BL_BURN];
	sigil_wipe(b, sizeof b);
}

/* s = the encoding of (X : Y : 1/zi) */
static void bl_encode_one(uint8_t s[32], const fe64 *X, const fe64 *Y, const fe64 *zi,
                          const fe64_ops *fe)
{
	fe64 x, y;
	fe->mul(x.v, X->v, zi->v);
	fe->mul(y.v, Y->v, zi->v);
	fe64_canonical(&x, &x);
	fe64_tobytes(s, &y);
	s[31] |= (uint8_t)((x.v[0] & 1) << 7);
	sigil_wipe(&x, sizeof x);
	sigil_wipe(&y, sizeof y);
}

void base_lanes_encode(uint8_t (*s)[32], const uint8_t (*a)[32], base_lanes_fn *lanes,
                       const fe64_ops *fe)
{
	_Alignas(64) uint64_t dig[BASE_LANES_DIGITS][BASE_LANES];
	_Alignas(64) uint64_t out[3][5][BASE_LANES];
	fe64 P[3][BASE_LANES], acc[BASE_LANES], inv, zi;
	uint64_t l[5];

	for (int j = 0; j < BASE_LANES; j++)
		base_lanes_digits(dig, j, a[j]);
	lanes(out, dig);
	bl_burn_stack();
	/* tight radix-2^51 limbs to radix 2^64 (below 2^256): the top limb's
	 * carry times 19 into l[0], one carry chain (l[0..3] < 2^51, l[4] <
	 * 2^51 + 2) */
	for (int c = 0; c < 3; c++) {
		for (int j = 0; j < BASE_LANES; j++) {
			for (int k = 0; k < 5; k++)
				l[k] = out[c][k][j];
			l[0] += 19 * (l[4] >> 51);
			l[4] &= (UINT64_C(1) << 51) - 1;
			for (int k = 0; k < 4; k++) {
				l[k + 1] += l[k] >> 51;
				l[k] &= (UINT64_C(1) << 51) - 1;
			}
			P[c][j].v[0] = l[0] | l[1] << 51;
			P[c][j].v[1] = l[1] >> 13 | l[2] << 38;
			P[c][j].v[2] = l[2] >> 26 | l[3] << 25;
			P[c][j].v[3] = l[3] >> 39 | l[4] << 12;
		}
	}
	/* Montgomery's trick: acc[j] = Z[0] ... Z[j], one inversion, then
	 * 1/Z[j] = acc[j - 1] / acc[j] from the top down (no Z is 0) */
	acc[0] = P[2][0];
	for (int j = 1; j < BASE_LANES; j++)
		fe->mul(acc[j].v, acc[j - 1].v, P[2][j].v);
	fe64_invert(&inv, &acc[BASE_LANES - 1]);
	for (int j = BASE_LANES - 1; j > 0; j--) {
		fe->mul(zi.v, inv.v, acc[j - 1].v);
		fe->mul(inv.v, inv.v, P[2][j].v);
		bl_encode_one(s[j], &P[0][j], &P[1][j], &zi, fe);
	}
	bl_encode_one(s[0], &P[0][0], &P[1][0], &inv, fe);

	sigil_wipe(dig, sizeof dig);
	sigil_wipe(out, sizeof out);
	sigil_wipe(P, sizeof P);
	sigil_wipe(acc, sizeof acc);
	sigil_wipe(&inv, sizeof inv);
	sigil_wipe(&zi, sizeof zi);
	sigil_wipe(l, sizeof l);
}

/* The C twin's vector: eight lanes */
typedef struct {
	uint64_t v[BASE_LANES];
} blg_v;

#define BLG_M52 ((UINT64_C(1) << 52) - 1)
#define BLG_MAP(expr)                                   \
	do {                                            \
		for (int j = 0; j < BASE_LANES; j++)    \
			r.v[j] = (expr);                \
	} while (0)

static inline blg_v blg_add(blg_v a, blg_v b) { blg_v r; BLG_MAP(a.v[j] + b.v[j]); return r; }
static inline blg_v blg_sub(blg_v a, blg_v b) { blg_v r; BLG_MAP(a.v[j] - b.v[j]); return r; }
static inline blg_v blg_and(blg_v a, blg_v b) { blg_v r; BLG_MAP(a.v[j] & b.v[j]); return r; }
static inline blg_v blg_xor(blg_v a, blg_v b) { blg_v r; BLG_MAP(a.v[j] ^ b.v[j]); return r; }
static inline blg_v blg_srl(blg_v a, int n) { blg_v r; BLG_MAP(a.v[j] >> n); return r; }
static inline blg_v blg_sll(blg_v a, int n) { blg_v r; BLG_MAP(a.v[j] << n); return r; }
/* Masks pass through ct_barrier_u64: a compiler that sees a value is 0
 * or all ones may turn "m & x" into a branch or a conditional load (clang
 * -O2/-O3 did, on the secret digits' signs: ctgrind caught it) */
static inline blg_v blg_sign(blg_v a) { blg_v r; BLG_MAP(ct_mask_u64(a.v[j] >> 63)); return r; }
static inline blg_v blg_set1(uint64_t x) { blg_v r; BLG_MAP(x); return r; }
static inline blg_v blg_sel(blg_v m, blg_v a, blg_v b) { blg_v r; BLG_MAP(a.v[j] ^ (ct_barrier_u64(m.v[j]) & (a.v[j] ^ b.v[j]))); return r; }

/* acc + the low (hi = 0) or high (hi = 1, public) 52 bits of the product of
 * the low 52 bits of a and b, lane by lane */
static inline blg_v blg_madd52(blg_v acc, blg_v a, blg_v b, int hi)
{
	blg_v r;
	for (int j = 0; j < BASE_LANES; j++) {
		fe64_u128 p = (fe64_u128)(a.v[j] & BLG_M52) * (b.v[j] & BLG_M52);
		r.v[j] = acc.v[j] + (hi ? (uint64_t)(p >> 52) : (uint64_t)p & BLG_M52);
	}
	return r;
}

/* lane j = lane idx_j mod 16 of (a, b): every lane read, chosen by masks */
static inline blg_v blg_perm2(blg_v a, blg_v idx, blg_v b)
{
	blg_v r;
	for (int j = 0; j < BASE_LANES; j++) {
		uint64_t x = 0;
		for (uint64_t i = 0; i < 2 * BASE_LANES; i++) {
			uint64_t d = (idx.v[j] & 15) ^ i;
			uint64_t m = ct_barrier_u64(((d | (0 - d)) >> 63) - 1); /* all ones when d = 0 */
			x |= m & (i < BASE_LANES ? a.v[i] : b.v[i - BASE_LANES]);
		}
		r.v[j] = x;
	}
	return r;
}

static inline blg_v blg_load(const uint64_t *p)
{
	blg_v r;
	BLG_MAP(p[j]);
	return r;
}

static inline void blg_store(uint64_t *p, blg_v a)
{
	for (int j = 0; j < BASE_LANES; j++)
		p[j] = a.v[j];
}

#define BL_V blg_v
#define BL_F(name) blg_##name
#define BL_INLINE static inline
#define BL_ENTRY_ATTR
#define BL_ENTRY_NAME base_lanes_generic
#define BL_ADD(a, b) blg_add(a, b)
#define BL_SUB(a, b) blg_sub(a, b)
#define BL_AND(a, b) blg_and(a, b)
#define BL_XOR(a, b) blg_xor(a, b)
#define BL_SRL(a, n) blg_srl(a, n)
#define BL_SLL(a, n) blg_sll(a, n)
#define BL_SIGN(a) blg_sign(a)
#define BL_MLO(acc, a, b) blg_madd52(acc, a, b, 0)
#define BL_MHI(acc, a, b) blg_madd52(acc, a, b, 1)
#define BL_PERM2(a, idx, b) blg_perm2(a, idx, b)
#define BL_SEL(m, a, b) blg_sel(m, a, b)
#define BL_SET1(x) blg_set1(x)
#define BL_LOAD(p) blg_load(p)
#define BL_STORE(p, v) blg_store(p, v)

#include "fe64/base_lanes_body.h"

#undef BLG_M52
#undef BLG_MAP
#undef BL_BURN
