/* SPDX-License-Identifier: MIT */
/*
 * ge64.h - edwards25519 points on fe64 (radix 2^64, fe64.h): the fixed-base
 * comb, the scalar multiplication of verification and the points of
 * msm.h, in the 4 x 64-bit backend (internal to libsigil-crypto).
 *
 * The same coordinate systems and formulas as ge.h (ref10), operation for
 * operation; every coordinate is any value below 2^256. Each point
 * operation comes as a C twin (_generic, ge64.c, on fe64_*_generic) and an
 * assembly routine (_adx, generated with the field code into
 * crypto/asm/amd64/fe64_adx.S; _arm64, into crypto/asm/arm64/fe64_arm64.S)
 * that give the same limbs; a ge64_ops table names one set, chosen once by
 * cpu.c.
 *
 * Aliasing: r must not be the same object as p (the conversions and the
 * additions write r before they have read all of p). Timing: constant
 * time; ge64_triple_scalarmult_vartime is not (public inputs only).
 */
#ifndef SIGIL_GE64_H
#define SIGIL_GE64_H

#include <stdint.h>

#include "fe64/fe64.h"
#include "ref51/ge.h"

typedef struct ge64_p2 {
	fe64 X, Y, Z;
} ge64_p2;

typedef struct ge64_p3 {
	fe64 X, Y, Z, T;
} ge64_p3;

typedef struct ge64_p1p1 {
	fe64 X, Y, Z, T;
} ge64_p1p1;

typedef struct ge64_precomp {
	fe64 yplusx, yminusx, xy2d;
} ge64_precomp;

typedef struct ge64_cached {
	fe64 YplusX, YminusX, Z, T2d;
} ge64_cached;

typedef struct ge64_ops {
	void (*p1p1_to_p2)(ge64_p2 *r, const ge64_p1p1 *p);
	void (*p1p1_to_p3)(ge64_p3 *r, const ge64_p1p1 *p);
	void (*p2_dbl)(ge64_p1p1 *r, const ge64_p2 *p);
	void (*madd)(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
	void (*msub)(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
	void (*add)(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);
	void (*sub)(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);
	const fe64_ops *fe; /* the field multiplication of the same set */
} ge64_ops;

void ge64_p1p1_to_p2_generic(ge64_p2 *r, const ge64_p1p1 *p);
void ge64_p1p1_to_p3_generic(ge64_p3 *r, const ge64_p1p1 *p);
void ge64_p2_dbl_generic(ge64_p1p1 *r, const ge64_p2 *p);
void ge64_madd_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
void ge64_msub_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
void ge64_add_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);
void ge64_sub_generic(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);

/* The assembly (amd64, BMI2 + ADX): only when fe64_adx_capable(). */
void ge64_p1p1_to_p2_adx(ge64_p2 *r, const ge64_p1p1 *p);
void ge64_p1p1_to_p3_adx(ge64_p3 *r, const ge64_p1p1 *p);
void ge64_p2_dbl_adx(ge64_p1p1 *r, const ge64_p2 *p);
void ge64_madd_adx(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
void ge64_msub_adx(ge64_p1p1 *r, const ge64_p3 *p, const ge64_precomp *q);
void ge64_add_adx(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);
void ge64_sub_adx(ge64_p1p1 *r, const ge64_p3 *p, const ge64_cached *q);

extern const ge64_ops ge64_ops_generic;
/* The probe's answer (crypto/asm/<arch>/fe64_select.c or asm/none.c):
 * NULL when there is no assembly to run. Asked once, by cpu.c. */
const ge64_ops *ge64_ops_asm_probe(void);

/* r = p in cached form (Y + X, Y - X, Z, 2d T), 2d given as d2. */
void ge64_p3_to_cached(ge64_cached *r, const ge64_p3 *p, const fe64 *d2, const ge64_ops *ops);
/* out[j] = (2j + 1) p, j < 8 (wnaf.c's odd multiples on ge64 points):
 * the table of a width-5 NAF. Variable time: public points. */
void ge64_odd_multiples_vartime(ge64_cached out[8], const ge64_p3 *p, const fe64 *d2,
                                const ge64_ops *ops);

/* r = a0 P0 + a1 P1 + b B, a0, a1 and b any 256-bit integers
 * (little-endian): one chain of doublings over width-5 NAFs of a0 and a1
 * (the 8 odd multiples of P0 and P1, computed per call) and width-8 NAFs
 * of b mod 2^128 over ge64_bi8 and of b div 2^128 over ge64_bi8_hi
 * (2^128 B): the chain is as long as the longest of the four, about 128
 * for verification's half-size scalars (ed25519.c). Variable time: public
 * inputs only. */
void ge64_triple_scalarmult_vartime(ge64_p3 *r, const uint8_t a0[32], const ge64_p3 *P0,
                                    const uint8_t a1[32], const ge64_p3 *P1, const uint8_t b[32],
                                    const ge64_ops *ops);

/* t = row[|b| - 1] for 1 <= |b| <= n, negated if b < 0, the identity (1,
 * 1, 0) if b = 0. Reads all n entries whole whatever b; constant time in b
 * (n and row are public). The C twin and the AVX2 routine give the same
 * bytes: both end in ge64_precomp_cneg. */
typedef void ge64_scan_fn(ge64_precomp *t, const ge64_precomp *row, uint64_t n, int64_t b);
void ge64_scan_generic(ge64_precomp *t, const ge64_precomp *row, uint64_t n, int64_t b);
/* amd64 with AVX2 (crypto/asm/amd64/ge64_scan_avx2.c): only when
 * ge64_scan_asm_probe() returned it. */
void ge64_scan_avx2(ge64_precomp *t, const ge64_precomp *row, uint64_t n, int64_t b);
/* ge64_scan_avx2 when the build has it and the CPU and OS run AVX2 (CPUID,
 * XGETBV), else NULL (crypto/asm/ge64_scan_none.c). Asks CPUID each call
 * (cpu.c asks once). */
ge64_scan_fn *ge64_scan_asm_probe(void);
/* Clears the vector registers (VZEROALL) after a comb that scanned with
 * ge64_scan_avx2: the last entry it selected names a secret digit
 * (crypto/asm/amd64/ge64_scan_avx2.c; a no-op in crypto/asm/ge64_scan_none.c). */
void ge64_scan_asm_scrub(void);

/* h = a B (a[31] <= 127), the point arithmetic done with ops and the row
 * scans with scan: a comb over ge64_comb (ge64_table.h) with signed
 * radix-2^GE64_COMB_W digits, one pass: the top digit's entry (a short
 * scan) taken as the start point (Z = 2), then GE64_COMB_DIGITS - 1 mixed
 * additions; with the assembly and the AVX2 scan, each addition but the
 * last is ge64_madd_scan_adx with the next row's scan. Constant time:
 * every entry of a row (of the top row, every entry its digit can name)
 * is read (scan), selections by mask. */
void ge64_scalarmult_base_p3(ge64_p3 *h, const uint8_t a[32], const ge64_ops *ops,
                             ge64_scan_fn *scan);
/* The same, h converted to radix 2^51 (through bytes): what tests/asm
 * compares with ref51's points; the library encodes in radix 2^64
 * (ge64_base_encode, ge64_base_mont_u). */
void ge64_scalarmult_base_scan(ge_p3 *h, const uint8_t a[32], const ge64_ops *ops,
                               ge64_scan_fn *scan);
/* s = the encoding of a B (RFC 8032 5.1.2: y with the sign of x in bit
 * 255), in radix 2^64 to the end: the comb, one fe64_invert, two products,
 * fe64_tobytes. Constant time in a (s is the caller's to declassify). */
void ge64_base_encode(uint8_t s[32], const uint8_t a[32], const ge64_ops *ops, ge64_scan_fn *scan);
/* u = (Z + Y) / (Z - Y) of a B, canonical little-endian: the Montgomery u
 * of RFC 7748 (X25519's public key for a clamped a, where Z - Y != 0).
 * Constant time in a. */
void ge64_base_mont_u(uint8_t u[32], const uint8_t a[32], const ge64_ops *ops, ge64_scan_fn *scan);
/* The comb's step with the next scan: h = h + t (madd, then p1p1_to_p3),
 * tnext = the scan of row (GE64_COMB_N entries) for b, as
 * ge64_scan_generic; tnext must not be t. The assembly (BMI2, ADX and
 * AVX2: the scan's vector instructions woven between the multiplications)
 * gives the same limbs as the C twin; ge64_scalarmult_base_p3 takes it when
 * ops->madd is ge64_madd_adx and scan is ge64_scan_avx2. Constant time. */
void ge64_madd_scan_generic(ge64_p3 *h, const ge64_precomp *row, const ge64_precomp *t, int64_t b,
                            ge64_precomp *tnext);
void ge64_madd_scan_adx(ge64_p3 *h, const ge64_precomp *row, const ge64_precomp *t, int64_t b,
                        ge64_precomp *tnext);

/* The end of a scan: t = (p, m, d), or its negation (m, p, -d) = (y - x,
 * y + x, -2dxy) when mneg is all ones (mneg all ones or zero; -d is
 * fe64_sub(0, d)). Constant time. */
static inline void ge64_precomp_cneg(ge64_precomp *t, const uint64_t p[4], const uint64_t m[4],
                                     const fe64 *d, uint64_t mneg)
{
	fe64 zero = { { 0 } }, nd;
	fe64_sub(&nd, &zero, d);
	for (int k = 0; k < 4; k++) {
		uint64_t x = mneg & (p[k] ^ m[k]);
		t->yplusx.v[k] = p[k] ^ x;
		t->yminusx.v[k] = m[k] ^ x;
		t->xy2d.v[k] = d->v[k] ^ (mneg & (d->v[k] ^ nd.v[k]));
	}
}

#endif /* SIGIL_GE64_H */
