/* SPDX-License-Identifier: MIT */
/*
 * ge64.h - edwards25519 points on fe64 (radix 2^64, fe64.h), for the
 * variable-base double scalar multiplication of verification on amd64 with
 * ADX (internal to libsigil-crypto).
 *
 * The same coordinate systems and formulas as ge.h (ref10), operation for
 * operation; every coordinate is any value below 2^256. Each point
 * operation comes as a C twin (_generic, ge64.c, on fe64_*_generic) and an
 * assembly routine (_adx, generated with the field code into
 * crypto/asm/amd64/fe64_adx.S) that give the same limbs; the ge64_ops
 * table names the set in use, chosen once by cpu.c.
 *
 * Aliasing: r must not be the same object as p (the conversions and the
 * additions write r before they have read all of p). Timing: constant
 * time; ge64_double_scalarmult_vartime is not (public inputs only).
 */
#ifndef SIGIL_GE64_H
#define SIGIL_GE64_H

#include <stdint.h>

#include "fe64.h"
#include "ge.h"

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
/* The probe's answer (crypto/asm/amd64/fe64_select.c or asm/none.c), and
 * cpu.c's cached copy of it: NULL when there is no assembly to run. */
const ge64_ops *ge64_ops_asm_probe(void);
const ge64_ops *ge64_ops_asm(void);

/* r = a A + b B as ge_double_scalarmult_vartime (same digits, same
 * tables), the point arithmetic done with ops. */
void ge64_double_scalarmult_vartime(ge_p2 *r, const uint8_t a[32], const ge_p3 *A,
                                    const uint8_t b[32], const ge64_ops *ops);

/* r = sum a_i P_i + b B as ge_multi_scalarmult_vartime (0 <= n <=
 * GE_MSM_MAX; about 1 KiB of stack per point), with ops. */
void ge64_multi_scalarmult_vartime(ge_p3 *r, const uint8_t (*a)[32], const ge_p3 *P, int n,
                                   const uint8_t b[32], const ge64_ops *ops);
/* h = a B as ge_scalarmult_base (a[31] <= 127; the same signed radix-16
 * digits over the same table, ge64_base), the point arithmetic done with
 * ops. Constant time: every table entry of a row is read, selections by
 * mask. */
void ge64_scalarmult_base(ge_p3 *h, const uint8_t a[32], const ge64_ops *ops);
/* t = ge64_base[pos][|b| - 1], negated if b < 0, the identity if b = 0;
 * b in [-8, 8]. Reads all 8 entries; constant time in b. */
void ge64_precomp_select(ge64_precomp *t, int pos, signed char b);

#endif /* SIGIL_GE64_H */
