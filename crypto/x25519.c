/* SPDX-License-Identifier: MIT */
/*
 * x25519.c - X25519 (RFC 7748 section 5): the Montgomery ladder over
 * GF(2^255 - 19), and the public key through the Edwards fixed base.
 *
 * Two ladders compute the same function: x25519_ladder64 on fe64
 * (fe64.h; radix 2^64, multiplied by the amd64 MULX/ADX assembly) where
 * cpu.c found assembly this CPU runs, x25519_ladder51 on fe.h otherwise.
 *
 * Timing: constant time in the scalar (the ladder walks all 255 bits; a bit
 * only drives fe_cswap masks) and in u. The all-zero check ORs every output
 * byte and computes the return value without a branch. The shared secret is
 * not declassified; the public key of sigil_x25519_public is.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "ref51/fe.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"

/* Bit t of the clamped scalar, read from the caller's bytes without
 * writing them: bits 0..2 cleared, bit 254 set, bit 255 cleared
 * (RFC 7748 decodeScalar25519). t is the public loop counter. */
static inline uint64_t scalar_bit(const uint8_t k[32], int t)
{
	if (t == 254)
		return 1;
	if (t < 3)
		return 0;
	return (uint64_t)((k[t >> 3] >> (t & 7)) & 1);
}

/* The radix-2^51 ladder (fe.h): the portable path. */
void x25519_ladder51(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32])
{
	uint8_t k[32];
	fe x1, x2, z2, x3, z3, aa, bb, e, da, cb, t;
	fe_loose l1, la, lb, lc, ld;
	uint64_t swap = 0;

	/* Copies first: out may overlap scalar or u. */
	memcpy(k, scalar, 32);
	fe_frombytes(&x1, u); /* bit 255 of u ignored; u >= p accepted */

	fe_1(&x2);
	fe_0(&z2);
	fe_copy(&x3, &x1);
	fe_1(&z3);

	for (int i = 254; i >= 0; i--) {
		uint64_t bit = scalar_bit(k, i);
		swap ^= bit;
		fe_cswap(&x2, &x3, swap);
		fe_cswap(&z2, &z3, swap);
		swap = bit;

		fe_add(&la, &x2, &z2);    /* A = x2 + z2 */
		fe_sq_tl(&aa, &la);       /* AA = A^2 */
		fe_sub(&lb, &x2, &z2);    /* B = x2 - z2 */
		fe_sq_tl(&bb, &lb);       /* BB = B^2 */
		fe_sub(&l1, &aa, &bb);
		fe_carry(&e, &l1);        /* E = AA - BB */
		fe_add(&lc, &x3, &z3);    /* C = x3 + z3 */
		fe_sub(&ld, &x3, &z3);    /* D = x3 - z3 */
		fe_mul_tll(&da, &ld, &la); /* DA = D A */
		fe_mul_tll(&cb, &lc, &lb); /* CB = C B */
		fe_add(&l1, &da, &cb);
		fe_sq_tl(&x3, &l1);       /* x3 = (DA + CB)^2 */
		fe_sub(&l1, &da, &cb);
		fe_sq_tl(&t, &l1);
		fe_mul_ttt(&z3, &t, &x1); /* z3 = x1 (DA - CB)^2 */
		fe_mul_ttt(&x2, &aa, &bb); /* x2 = AA BB */
		fe_mul121666(&t, &e);
		fe_add(&l1, &bb, &t);     /* BB + 121666 E = AA + 121665 E */
		fe_mul_tlt(&z2, &l1, &e); /* z2 = E (AA + a24 E) */
	}
	fe_cswap(&x2, &x3, swap);
	fe_cswap(&z2, &z3, swap);

	fe_invert_safegcd(&z2, &z2);
	fe_mul_ttt(&x2, &x2, &z2);
	fe_tobytes(out, &x2);

	sigil_wipe(k, sizeof k);
	sigil_wipe(&x1, sizeof x1);
	sigil_wipe(&x2, sizeof x2);
	sigil_wipe(&z2, sizeof z2);
	sigil_wipe(&x3, sizeof x3);
	sigil_wipe(&z3, sizeof z3);
	sigil_wipe(&aa, sizeof aa);
	sigil_wipe(&bb, sizeof bb);
	sigil_wipe(&e, sizeof e);
	sigil_wipe(&da, sizeof da);
	sigil_wipe(&cb, sizeof cb);
	sigil_wipe(&t, sizeof t);
	sigil_wipe(&l1, sizeof l1);
	sigil_wipe(&la, sizeof la);
	sigil_wipe(&lb, sizeof lb);
	sigil_wipe(&lc, sizeof lc);
	sigil_wipe(&ld, sizeof ld);
	sigil_wipe(&swap, sizeof swap);
}

/* Builds without the amd64 assembly define neither routine: weak references
 * (null there), compared with or called only when ops is the assembly's table,
 * which such builds never have. */
#pragma weak fe64_ladder_step_adx
#pragma weak fe64_ladder_bits_adx

/* fe64_ladder_bits_generic with any ops's ladder step. */
static uint64_t x25519_bits_ops(fe64_ladder *st, uint64_t w, uint64_t n, uint64_t swap,
                                const fe64_ops *ops)
{
	for (uint64_t i = 0; i < n; i++) {
		uint64_t bit = w >> 63;
		w <<= 1;
		uint64_t mask = ct_mask_u64(swap ^ bit);
		fe64_cswap(&st->x2, &st->x3, mask);
		fe64_cswap(&st->z2, &st->z3, mask);
		swap = bit;
		ops->ladder_step(st);
	}
	return swap;
}

/* The same ladder on fe64 (radix 2^64, values < 2^256): the steps with ops
 * (the assembly, or its C twins for tests), the final division in fe.h.
 * With the assembly's table, fe64_ladder_bits_adx runs 64 steps per call
 * (63 for the top word) with the swaps in registers; with the C twins'
 * table, its twin fe64_ladder_bits_generic; any other table step by step. */
void x25519_ladder64(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32],
                     const fe64_ops *ops)
{
	uint8_t k[32];
	fe64_ladder st;
	uint64_t swap = 0, mask;
	uint64_t w[4];

	memcpy(k, scalar, 32);
	k[0] &= 248; /* RFC 7748 decodeScalar25519 */
	k[31] &= 127;
	k[31] |= 64;
	for (int i = 0; i < 4; i++) {
		w[i] = 0;
		for (int j = 7; j >= 0; j--)
			w[i] = (w[i] << 8) | k[8 * i + j];
	}
	memset(&st, 0, sizeof st);
	fe64_frombytes(&st.x1, u); /* bit 255 of u ignored; u >= p accepted */
	st.x2.v[0] = 1;            /* (x2 : z2) = (1 : 0) */
	st.x3 = st.x1;             /* (x3 : z3) = (u : 1) */
	st.z3.v[0] = 1;

	/* bits 254..0: bit 62 of w[3] first (shifted to the top), then the
	 * 64 bits of w[2], w[1], w[0] */
	for (int i = 3; i >= 0; i--) {
		uint64_t word = i == 3 ? w[3] << 1 : w[i];
		uint64_t n = i == 3 ? 63 : 64;
		if (ops->ladder_step == fe64_ladder_step_adx)
			swap = fe64_ladder_bits_adx(&st, word, n, swap);
		else if (ops->ladder_step == fe64_ladder_step_generic)
			swap = fe64_ladder_bits_generic(&st, word, n, swap);
		else
			swap = x25519_bits_ops(&st, word, n, swap, ops);
	}
	mask = ct_mask_u64(swap);
	fe64_cswap(&st.x2, &st.x3, mask);
	fe64_cswap(&st.z2, &st.z3, mask);

	/* u = x2 / z2, in radix 2^51: the binary-GCD inversion of fe_inv.c
	 * is faster than a Fermat power in either radix. */
	uint8_t bx[32], bz[32];
	fe x, z;
	fe64_tobytes(bx, &st.x2);
	fe64_tobytes(bz, &st.z2);
	fe_frombytes(&x, bx);
	fe_frombytes(&z, bz);
	fe_invert_safegcd(&z, &z);
	fe_mul_ttt(&x, &x, &z);
	fe_tobytes(out, &x);

	sigil_wipe(k, sizeof k);
	sigil_wipe(w, sizeof w);
	sigil_wipe(&st, sizeof st);
	sigil_wipe(bx, sizeof bx);
	sigil_wipe(bz, sizeof bz);
	sigil_wipe(&x, sizeof x);
	sigil_wipe(&z, sizeof z);
	sigil_wipe(&swap, sizeof swap);
	sigil_wipe(&mask, sizeof mask);
}

/* The fe64 assembly when cpu.c found one this CPU runs, else the radix-2^51
 * ladder. */
SIGIL_EXPORT int sigil_x25519(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32])
{
	const fe64_ops *ops = fe64_ops_asm();
	if (ops != NULL)
		x25519_ladder64(out, scalar, u, ops);
	else
		x25519_ladder51(out, scalar, u);

	/* The shared secret stays secret. Only whether it is all zero (a
	 * small-order u, RFC 7748 section 6.1) becomes public: every byte is
	 * ORed, then the one-bit answer is declassified for the return value. */
	uint8_t acc = 0;
	for (int i = 0; i < 32; i++)
		acc |= out[i];
	uint64_t is_zero = ct_iszero_u64(acc) & 1;
	CT_DECLASSIFY(&is_zero, sizeof is_zero);
	return -(int)is_zero;
}

/* pk = u([a] 9) for the clamped a, computed on the Edwards curve:
 * [a]B = (x, y) maps to u = (1 + y) / (1 - y) = (Z + Y) / (Z - Y).
 * Constant time (ge_scalarmult_base, fe_invert_safegcd). The clamped a is
 * never 0 mod L (2^254 <= a < 8L and 8 | a), so Z - Y != 0. */
SIGIL_EXPORT void sigil_x25519_public(uint8_t pk[32], const uint8_t scalar[32])
{
	uint8_t k[32];
	ge_p3 A;
	fe n, dd;
	fe_loose l;

	memcpy(k, scalar, 32);
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;

	ge_scalarmult_base(&A, k);
	fe_add(&l, &A.Z, &A.Y);
	fe_carry(&n, &l);     /* Z + Y */
	fe_sub(&l, &A.Z, &A.Y);
	fe_carry(&dd, &l);    /* Z - Y */
	fe_invert_safegcd(&dd, &dd);
	fe_mul_ttt(&n, &n, &dd);
	fe_tobytes(pk, &n);
	CT_DECLASSIFY(pk, 32);

	sigil_wipe(k, sizeof k);
	sigil_wipe(&A, sizeof A);
	sigil_wipe(&n, sizeof n);
	sigil_wipe(&dd, sizeof dd);
	sigil_wipe(&l, sizeof l);
}
