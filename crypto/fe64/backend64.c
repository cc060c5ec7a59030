/* SPDX-License-Identifier: MIT */
/*
 * backend64.c - the 4 x 64-bit backend (backend.h's backend_fe64): the
 * X25519 ladder on fe64, the comb of ge64.c for the fixed base, and fe64
 * points for decoding, verification and the batch equation (msm.c), each
 * with the parts cpu.c chose (the fe64_impl in be->impl: the assembly and
 * its scans and lanes; tests hand it the C twins).
 *
 * What it takes from the portable backend below it (ref51/): the points
 * handed across the table (ge_p3, ge_p2, converted through bytes) and the
 * binary-GCD inversion of ref51/fe_inv.c, faster than a power chain in
 * either radix.
 */
#include <stdint.h>
#include <string.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "ct.h"
#include "fe64/base_lanes.h"
#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"
#include "ref51/fe.h"
#include "ref51/ge.h"

_Static_assert(BACKEND_BATCH_SMALL == MSM_MAX, "a small batch is one Straus call");
_Static_assert(BACKEND_BATCH_MAX == MSM_PIP_MAX, "a batch is one Pippenger call");

/* Builds without the amd64 assembly define neither routine: weak references
 * (null there), compared with or called only when ops is the assembly's table,
 * which such builds never have. */
#pragma weak fe64_ladder_step_adx
#pragma weak fe64_ladder_bits_adx

/* fe64_ladder_bits_generic with any ops's ladder step. */
static uint64_t b64_bits_ops(fe64_ladder *st, uint64_t w, uint64_t n, uint64_t swap,
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

/* RFC 7748 decodeScalar25519: the clamped scalar as little-endian words */
static void b64_clamp(uint64_t w[4], const uint8_t scalar[32])
{
	uint8_t k[32];

	memcpy(k, scalar, 32);
	k[0] &= 248;
	k[31] &= 127;
	k[31] |= 64;
	for (int i = 0; i < 4; i++) {
		w[i] = 0;
		for (int j = 7; j >= 0; j--)
			w[i] = (w[i] << 8) | k[8 * i + j];
	}
	sigil_wipe(k, sizeof k);
}

/* out = x2 / z2, in radix 2^51: the binary-GCD inversion of fe_inv.c is
 * faster than a Fermat power in either radix. */
static void b64_x25519_finish(uint8_t out[32], const fe64 *x2, const fe64 *z2)
{
	uint8_t bx[32], bz[32];
	fe x, z;

	fe64_tobytes(bx, x2);
	fe64_tobytes(bz, z2);
	fe_frombytes(&x, bx);
	fe_frombytes(&z, bz);
	fe_invert_safegcd(&z, &z);
	fe_mul_ttt(&x, &x, &z);
	fe_tobytes(out, &x);
	sigil_wipe(bx, sizeof bx);
	sigil_wipe(bz, sizeof bz);
	sigil_wipe(&x, sizeof x);
	sigil_wipe(&z, sizeof z);
}

/* The X25519 ladder on fe64 (radix 2^64, values < 2^256): the steps with
 * ops (the assembly, or its C twins for tests), the final division in
 * ref51's fe.h.
 * With the assembly's table, fe64_ladder_bits_adx runs 64 steps per call
 * (63 for the top word) with the swaps in registers; with the C twins'
 * table, its twin fe64_ladder_bits_generic; any other table step by step. */
void x25519_ladder64(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32],
                     const fe64_ops *ops)
{
	fe64_ladder st;
	uint64_t swap = 0, mask;
	uint64_t w[4];

	b64_clamp(w, scalar);
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
			swap = b64_bits_ops(&st, word, n, swap, ops);
	}
	mask = ct_mask_u64(swap);
	fe64_cswap(&st.x2, &st.x3, mask);
	fe64_cswap(&st.z2, &st.z3, mask);
	b64_x25519_finish(out, &st.x2, &st.z2);

	sigil_wipe(w, sizeof w);
	sigil_wipe(&st, sizeof st);
	sigil_wipe(&swap, sizeof swap);
	sigil_wipe(&mask, sizeof mask);
}

void x25519_lanes64(uint8_t out[32], const uint8_t scalar[32], const uint8_t u[32],
                    x25519_lanes_fn *ladder)
{
	fe64 x1, x2, z2;
	uint64_t w[4];

	b64_clamp(w, scalar);
	fe64_frombytes(&x1, u); /* bit 255 of u ignored; u >= p accepted */
	ladder(&x2, &z2, &x1, w);
	b64_x25519_finish(out, &x2, &z2);

	sigil_wipe(w, sizeof w);
	sigil_wipe(&x1, sizeof x1);
	sigil_wipe(&x2, sizeof x2);
	sigil_wipe(&z2, sizeof z2);
}

static const fe64_impl *b64_impl(const backend *be)
{
	return be->impl;
}

static void b64_x25519(const backend *be, uint8_t out[32], const uint8_t k[32], const uint8_t u[32])
{
	const fe64_impl *im = b64_impl(be);

	if (im->x25519 != NULL)
		x25519_lanes64(out, k, u, im->x25519);
	else
		x25519_ladder64(out, k, u, im->fe);
}

/* The fixed base on fe64 to the end (comb, inversion, encoding): no
 * conversion to radix 2^51. */
static void b64_base_encode(const backend *be, uint8_t s[32], const uint8_t a[32])
{
	const fe64_impl *im = b64_impl(be);
	ge64_base_encode(s, a, im->ge, im->scan);
}

/* With the IFMA lanes: eight at a time, a short batch padded with zero
 * scalars (public) from B64_LANES_MIN on; below that, or without lanes,
 * one by one. The lanes cost about as much for 2 scalars as 2 single
 * calls, clearly less from 3 on (docs/performance.md, "signlanes"). */
#define B64_LANES_MIN 3
_Static_assert(BACKEND_BASE_MANY == BASE_LANES, "a batch fills the lanes");

static void b64_base_encode_many(const backend *be, uint8_t (*s)[32], const uint8_t (*a)[32], int n)
{
	const fe64_impl *im = b64_impl(be);

	if (im->base_lanes == NULL || n < B64_LANES_MIN) {
		for (int i = 0; i < n; i++)
			ge64_base_encode(s[i], a[i], im->ge, im->scan);
		return;
	}
	uint8_t sa[BASE_LANES][32] = { { 0 } }, ss[BASE_LANES][32];
	for (int i = 0; i < n; i++)
		memcpy(sa[i], a[i], 32);
	base_lanes_encode(ss, (const uint8_t (*)[32])sa, im->base_lanes, im->fe);
	for (int i = 0; i < n; i++)
		memcpy(s[i], ss[i], 32);
	sigil_wipe(sa, sizeof sa);
	sigil_wipe(ss, sizeof ss);
}

static void b64_base_mont_u(const backend *be, uint8_t u[32], const uint8_t a[32])
{
	const fe64_impl *im = b64_impl(be);
	ge64_base_mont_u(u, a, im->ge, im->scan);
}

/* A and R decoded by msm.c's ZIP215 decoding (the two square roots
 * together); STRICT (ge_frombytes) also refuses x = 0 with the sign bit
 * set. Then the sum on fe64 points with b split in halves over B and
 * 2^128 B (ge64_triple_scalarmult_vartime), and the identity (X = 0, Y =
 * Z) or small order tested on it. */
static int b64_verify_vartime(const backend *be, const uint8_t *const enc[2],
                              const uint8_t (*a)[32], const int neg[2], const uint8_t b[32],
                              int zip215)
{
	static const uint8_t zero[32];
	const fe64_impl *im = b64_impl(be);
	ge64_p3 P[2], r;
	int ok[2];
	uint8_t x[32], y[32];

	msm_decode_zip215_vartime(P, ok, enc, 2, im);
	for (int i = 0; i < 2; i++) {
		if (!ok[i])
			return -1;
		if (!zip215 && (enc[i][31] >> 7)) {
			fe64_tobytes(x, &P[i].X);
			if (memcmp(x, zero, 32) == 0)
				return -1;
		}
		if (neg[i])
			msm_p3_neg(&P[i]);
	}
	ge64_triple_scalarmult_vartime(&r, a[0], &P[0], a[1], &P[1], b, im->ge);
	if (zip215)
		return msm_is_small_order_vartime(&r, im->ge);
	fe64_tobytes(x, &r.X);
	if (memcmp(x, zero, 32) != 0)
		return 0;
	fe64_tobytes(x, &r.Y);
	fe64_tobytes(y, &r.Z);
	return memcmp(x, y, 32) == 0;
}

/* The batch equation on the work space P, idx, scal of at least n entries:
 * decoding (the square roots together, in IFMA lanes where there are),
 * the terms, their points negated in place (idx[t] >= t, strictly
 * increasing), then Straus up to MSM_MAX terms, Pippenger above. */
static int b64_batch_core(const fe64_impl *im, int *ok, const uint8_t *const *enc, int n,
                          backend_terms_fn *terms, void *arg, ge64_p3 *P, int *idx,
                          uint8_t (*scal)[32])
{
	uint8_t b[32] = { 0 };
	ge64_p3 R;

	msm_decode_zip215_vartime(P, ok, enc, n, im);
	int nt = terms(arg, ok, idx, scal, b);
	if (nt <= 0 || nt > n)
		return 0;
	for (int t = 0; t < nt; t++) {
		P[t] = P[idx[t]];
		msm_p3_neg(&P[t]);
	}
	if (nt > MSM_MAX)
		msm_pippenger_vartime(&R, (const uint8_t (*)[32])scal, P, nt, b, im->ge);
	else
		msm_straus_vartime(&R, (const uint8_t (*)[32])scal, P, nt, b, im);
	return msm_is_small_order_vartime(&R, im->ge);
}

/* Separate frames, so that the stack holds the work space of one size and
 * one of the two multiplications (gcc -fstack-usage, x86-64: 21 KiB
 * + Straus 175 KiB, or 171 KiB in the IFMA lanes, or 84 KiB + Pippenger
 * 96 KiB + decoding 10 KiB: msm.h). */
__attribute__((noinline)) static int b64_batch_small(const fe64_impl *im, int *ok,
                                                    const uint8_t *const *enc, int n,
                                                    backend_terms_fn *terms, void *arg)
{
	ge64_p3 P[BACKEND_BATCH_SMALL];
	int idx[BACKEND_BATCH_SMALL];
	uint8_t scal[BACKEND_BATCH_SMALL][32];
	return b64_batch_core(im, ok, enc, n, terms, arg, P, idx, scal);
}

__attribute__((noinline)) static int b64_batch_big(const fe64_impl *im, int *ok,
                                                  const uint8_t *const *enc, int n,
                                                  backend_terms_fn *terms, void *arg)
{
	ge64_p3 P[BACKEND_BATCH_MAX];
	int idx[BACKEND_BATCH_MAX];
	uint8_t scal[BACKEND_BATCH_MAX][32];
	return b64_batch_core(im, ok, enc, n, terms, arg, P, idx, scal);
}

static int b64_batch_vartime(const backend *be, int *ok, const uint8_t *const *enc, int n,
                             backend_terms_fn *terms, void *arg)
{
	if (n < 0 || n > BACKEND_BATCH_MAX)
		return 0; /* the caller's bug; never reached from ed25519.c */
	if (n <= BACKEND_BATCH_SMALL)
		return b64_batch_small(b64_impl(be), ok, enc, n, terms, arg);
	return b64_batch_big(b64_impl(be), ok, enc, n, terms, arg);
}

const backend backend_fe64 = {
	.name = NULL, /* cpu.c's copy: its impl's fe->name */
	.impl = NULL,
	.x25519 = b64_x25519,
	.base_encode = b64_base_encode,
	.base_encode_many = b64_base_encode_many,
	.base_mont_u = b64_base_mont_u,
	.verify_vartime = b64_verify_vartime,
	.batch_vartime = b64_batch_vartime,
};
