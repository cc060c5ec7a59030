/* SPDX-License-Identifier: MIT */
/*
 * fe_pow.c - field operations built from the machine operations of fe.c:
 * the (p-5)/8 power by a fixed addition chain, and SqrtRatio. (Inversion
 * is fe_inv.c's binary GCD; the tests build the Fermat power they compare
 * it with from fe_pow22523.)
 *
 * All constant time: the chains are fixed, every loop count is a constant,
 * selections are masked (fe_cmov). Inputs and outputs tight; outputs may
 * alias inputs (every function works on locals and writes at the end).
 */
#include <stdint.h>

#include <sigil/crypto.h>

#include "ct.h"
#include "ref51/fe.h"

/* sqrt(-1) = 2^((p-1)/4) mod p
 * = 19681161376707505956807079304988542015446066515923890162744021073123829784752 */
const fe fe_sqrtm1 = { { 0x61b274a0ea0b0, 0x0d5a5fc8f189d, 0x7ef5e9cbd0c60, 0x78595a6804c9e,
                         0x2b8324804fc1d } };

/* h = f^(2^n), n >= 1; n is a constant of the caller (public). */
static void fe_sq_n(fe *h, const fe *f, int n)
{
	fe_sq_tt(h, f);
	for (int i = 1; i < n; i++)
		fe_sq_tt(h, h);
}

/* The head of the chain: out = z^(2^250 - 1), z11 = z^11. */
static void fe_pow_2_250_1(fe *out, fe *z11, const fe *z)
{
	fe z2, z9, z2_5_0, z2_10_0, z2_20_0, z2_50_0, z2_100_0, t;

	fe_sq_tt(&z2, z);                /* 2 */
	fe_sq_n(&t, &z2, 2);             /* 8 */
	fe_mul_ttt(&z9, &t, z);          /* 9 */
	fe_mul_ttt(z11, &z9, &z2);       /* 11 */
	fe_sq_tt(&t, z11);               /* 22 */
	fe_mul_ttt(&z2_5_0, &t, &z9);    /* 31 = 2^5 - 2^0 */
	fe_sq_n(&t, &z2_5_0, 5);         /* 2^10 - 2^5 */
	fe_mul_ttt(&z2_10_0, &t, &z2_5_0); /* 2^10 - 2^0 */
	fe_sq_n(&t, &z2_10_0, 10);       /* 2^20 - 2^10 */
	fe_mul_ttt(&z2_20_0, &t, &z2_10_0); /* 2^20 - 2^0 */
	fe_sq_n(&t, &z2_20_0, 20);       /* 2^40 - 2^20 */
	fe_mul_ttt(&t, &t, &z2_20_0);    /* 2^40 - 2^0 */
	fe_sq_n(&t, &t, 10);             /* 2^50 - 2^10 */
	fe_mul_ttt(&z2_50_0, &t, &z2_10_0); /* 2^50 - 2^0 */
	fe_sq_n(&t, &z2_50_0, 50);       /* 2^100 - 2^50 */
	fe_mul_ttt(&z2_100_0, &t, &z2_50_0); /* 2^100 - 2^0 */
	fe_sq_n(&t, &z2_100_0, 100);     /* 2^200 - 2^100 */
	fe_mul_ttt(&t, &t, &z2_100_0);   /* 2^200 - 2^0 */
	fe_sq_n(&t, &t, 50);             /* 2^250 - 2^50 */
	fe_mul_ttt(out, &t, &z2_50_0);   /* 2^250 - 2^0 */

	/* powers of a secret (the ladder's z, a point's Z) */
	sigil_wipe(&z2, sizeof z2);
	sigil_wipe(&z9, sizeof z9);
	sigil_wipe(&z2_5_0, sizeof z2_5_0);
	sigil_wipe(&z2_10_0, sizeof z2_10_0);
	sigil_wipe(&z2_20_0, sizeof z2_20_0);
	sigil_wipe(&z2_50_0, sizeof z2_50_0);
	sigil_wipe(&z2_100_0, sizeof z2_100_0);
	sigil_wipe(&t, sizeof t);
}

/* h = f^((p-5)/8) = f^(2^252 - 3). */
void fe_pow22523(fe *h, const fe *f)
{
	fe t, z11, z;

	fe_copy(&z, f);
	fe_pow_2_250_1(&t, &z11, &z); /* 2^250 - 1 */
	fe_sq_n(&t, &t, 2);           /* 2^252 - 4 */
	fe_mul_ttt(h, &t, &z);        /* 2^252 - 3 */
	sigil_wipe(&t, sizeof t);
	sigil_wipe(&z11, sizeof z11);
	sigil_wipe(&z, sizeof z);
}

/* r = (u v^3) (u v^7)^((p-5)/8) is a square root of u/v when u/v is a
 * square and v r^2 = u; when v r^2 = -u, r sqrt(-1) is; when
 * v r^2 = -u sqrt(-1), u/v is not a square and r sqrt(-1) is a square root
 * of sqrt(-1) u/v. (RFC 8032 section 5.1.3 step 3, edwards25519 SqrtRatio.) */
int fe_sqrt_ratio(fe *r, const fe *u, const fe *v)
{
	fe uu, vv, v2, v3, v7, uv3, uv7, t, check, rr, rprime, neg_u, neg_u_i;
	fe_loose l;

	fe_copy(&uu, u);
	fe_copy(&vv, v);

	fe_sq_tt(&v2, &vv);           /* v^2 */
	fe_mul_ttt(&v3, &v2, &vv);    /* v^3 */
	fe_sq_tt(&v7, &v3);           /* v^6 */
	fe_mul_ttt(&v7, &v7, &vv);    /* v^7 */
	fe_mul_ttt(&uv3, &uu, &v3);   /* u v^3 */
	fe_mul_ttt(&uv7, &uu, &v7);   /* u v^7 */
	fe_pow22523(&t, &uv7);        /* (u v^7)^((p-5)/8) */
	fe_mul_ttt(&rr, &uv3, &t);    /* r */

	fe_sq_tt(&check, &rr);
	fe_mul_ttt(&check, &check, &vv); /* v r^2 */

	fe_neg(&l, &uu);
	fe_carry(&neg_u, &l);                          /* -u */
	fe_mul_ttt(&neg_u_i, &neg_u, &fe_sqrtm1);      /* -u sqrt(-1) */

	int correct = fe_equal(&check, &uu);
	int flipped = fe_equal(&check, &neg_u);
	int flipped_i = fe_equal(&check, &neg_u_i);

	fe_mul_ttt(&rprime, &rr, &fe_sqrtm1);
	fe_cmov(&rr, &rprime, (uint64_t)(flipped | flipped_i));
	fe_abs(r, &rr);
	return correct | flipped;
}
