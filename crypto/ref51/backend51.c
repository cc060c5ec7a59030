/* SPDX-License-Identifier: MIT */
/*
 * backend51.c - the portable backend (backend.h's backend_ref51): the
 * Montgomery ladder on fe.h (radix 2^51), and ref51/ge.c's points for the
 * fixed base, decoding, verification and the batch equation. Nothing here
 * knows of another backend.
 *
 * Timing: the ladder is constant time in the scalar (it walks all 255 bits;
 * a bit only drives fe_cswap masks) and in u; the fixed base is
 * ge_scalarmult_base's. The rest is verification: public inputs.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "ct.h"
#include "ref51/fe.h"
#include "ref51/ge.h"
#include "ref51/ref51.h"

/* Bit t of the clamped scalar, read from the caller's bytes without
 * writing them: bits 0..2 cleared, bit 254 set, bit 255 cleared
 * (RFC 7748 decodeScalar25519). t is the public loop counter. */
static inline uint64_t ref51_scalar_bit(const uint8_t k[32], int t)
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
		uint64_t bit = ref51_scalar_bit(k, i);
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

static void ref51_x25519(const backend *be, uint8_t out[32], const uint8_t k[32],
                         const uint8_t u[32])
{
	(void)be;
	x25519_ladder51(out, k, u);
}

static void ref51_base_encode(const backend *be, uint8_t s[32], const uint8_t a[32])
{
	ge_p3 A;
	(void)be;
	ge_scalarmult_base(&A, a);
	ge_p3_tobytes(s, &A);
	sigil_wipe(&A, sizeof A);
}

/* no lanes here: one by one */
static void ref51_base_encode_many(const backend *be, uint8_t (*s)[32], const uint8_t (*a)[32],
                                   int n)
{
	for (int i = 0; i < n; i++)
		ref51_base_encode(be, s[i], a[i]);
}

/* [a]B = (x, y) maps to u = (1 + y) / (1 - y) = (Z + Y) / (Z - Y). */
static void ref51_base_mont_u(const backend *be, uint8_t u[32], const uint8_t a[32])
{
	ge_p3 A;
	fe n, dd;
	fe_loose l;

	(void)be;
	ge_scalarmult_base(&A, a);
	fe_add(&l, &A.Z, &A.Y);
	fe_carry(&n, &l);     /* Z + Y */
	fe_sub(&l, &A.Z, &A.Y);
	fe_carry(&dd, &l);    /* Z - Y */
	fe_invert_safegcd(&dd, &dd);
	fe_mul_ttt(&n, &n, &dd);
	fe_tobytes(u, &n);

	sigil_wipe(&A, sizeof A);
	sigil_wipe(&n, sizeof n);
	sigil_wipe(&dd, sizeof dd);
	sigil_wipe(&l, sizeof l);
}

static int ref51_verify_vartime(const backend *be, const uint8_t *const enc[2],
                                const uint8_t (*a)[32], const int neg[2], const uint8_t b[32],
                                int zip215)
{
	/* A, R and 2^128 B with a[0], a[1] and b div 2^128; B with b mod
	 * 2^128: a chain as long as the longest (about 128 bits for
	 * verification's half-size scalars) */
	ge_p3 P[3], r;
	uint8_t s[3][32], lo[32] = { 0 };
	(void)be;
	for (int i = 0; i < 2; i++) {
		if ((zip215 ? ge_frombytes_zip215(&P[i], enc[i]) : ge_frombytes(&P[i], enc[i])) != 0)
			return -1;
		if (neg[i])
			ge_p3_neg(&P[i], &P[i]);
		memcpy(s[i], a[i], 32);
	}
	ge_p3_b128(&P[2]);
	memset(s[2], 0, 32);
	memcpy(s[2], b + 16, 16);
	memcpy(lo, b, 16);
	ge_multi_scalarmult_vartime(&r, (const uint8_t (*)[32])s, P, 3, lo);
	return zip215 ? ge_is_small_order(&r) : ge_p3_is_identity(&r);
}

/* The batch equation: every term's point negated in place (idx[t] >= t,
 * strictly increasing), then the sum by ge_multi_scalarmult_vartime over
 * chunks of GE_MSM_MAX points (b B in the first), added up. About 100 KiB
 * of stack here and 50 KiB in ge_multi_scalarmult_vartime. */
static int ref51_batch_vartime(const backend *be, int *ok, const uint8_t *const *enc, int n,
                               backend_terms_fn *terms, void *arg)
{
	static const uint8_t zero[32];
	ge_p3 P[BACKEND_BATCH_MAX], acc, part;
	int idx[BACKEND_BATCH_MAX];
	uint8_t scal[BACKEND_BATCH_MAX][32], b[32] = { 0 };

	(void)be;
	ge_p3_0(&acc);
	if (n < 0 || n > BACKEND_BATCH_MAX)
		return 0; /* the caller's bug; never reached from ed25519.c */
	for (int i = 0; i < n; i++) {
		ok[i] = ge_frombytes_zip215(&P[i], enc[i]) == 0;
		if (!ok[i])
			ge_p3_0(&P[i]);
	}
	int nt = terms(arg, ok, idx, scal, b);
	if (nt <= 0 || nt > n)
		return 0;
	for (int t = 0; t < nt; t++)
		ge_p3_neg(&P[t], &P[idx[t]]);
	for (int off = 0; off < nt; off += GE_MSM_MAX) {
		int m = nt - off < GE_MSM_MAX ? nt - off : GE_MSM_MAX;
		ge_multi_scalarmult_vartime(&part, (const uint8_t (*)[32])&scal[off], &P[off], m,
		                            off == 0 ? b : zero);
		if (off == 0)
			acc = part;
		else
			ge_p3_add(&acc, &acc, &part);
	}
	return ge_is_small_order(&acc);
}

const backend backend_ref51 = {
	.name = "generic",
	.impl = NULL,
	.x25519 = ref51_x25519,
	.base_encode = ref51_base_encode,
	.base_encode_many = ref51_base_encode_many,
	.base_mont_u = ref51_base_mont_u,
	.verify_vartime = ref51_verify_vartime,
	.batch_vartime = ref51_batch_vartime,
};
