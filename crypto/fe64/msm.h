/* SPDX-License-Identifier: MIT */
/*
 * msm.h - the multiscalar multiplication and the point decoding of batch
 * verification (internal to libsigil-crypto), on fe64 points (ge64.h), and
 * the parts of the 4 x 64-bit backend cpu.c chooses (fe64_impl).
 *
 * Everything here is variable time: public data only (signatures, public
 * keys, challenges, batch coefficients). Nothing allocates: the work space
 * is on the stack (msm_straus_vartime: 175 KiB at MSM_MAX with one
 * accumulator, 171 KiB in all with the IFMA lanes: the schedule 23 KiB,
 * then the lanes' table and its making 148 KiB; about 190 bytes per
 * point of msm_pippenger_vartime, 96 KiB at MSM_PIP_MAX; gcc -fstack-usage,
 * x86-64). sigil_ed25519_verify_batch peaks near 200 KiB either way
 * (ed25519.c).
 */
#ifndef SIGIL_MSM_H
#define SIGIL_MSM_H

#include <stdint.h>

#include "fe64/fe64.h"
#include "fe64/ge64.h"
#include "fe64/base_lanes.h"
#include "fe64/x25519_lanes.h"
#include "wnaf.h"

/* Points per msm_straus_vartime call: 64 signatures (R and A) share one
 * chain of doublings. */
#define MSM_MAX 128

/* The IFMA probe: a routine computing MSM_POW_LANES square-root
 * candidates at once (fe_sqrt_ratio's, for u = u[i], v = v[i]):
 * r[i] = u v^3 (u v^7)^((p - 5) / 8) and check[i] = v r[i]^2, or NULL (no
 * such code in the build, or the CPU or the OS lacks AVX-512 F + IFMA).
 * Defined by crypto/asm/amd64/msm_ifma.c or crypto/asm/msm_ifma_none.c;
 * asked once, by cpu.c. */
#define MSM_POW_LANES 16
typedef void msm_sqrt_ratio_lanes_fn(fe64 r[MSM_POW_LANES], fe64 check[MSM_POW_LANES],
                                     const fe64 u[MSM_POW_LANES], const fe64 v[MSM_POW_LANES]);
msm_sqrt_ratio_lanes_fn *msm_sqrt_ratio_lanes_probe(void);

/* Straus in MSM_LANES lanes (AVX-512 IFMA: one 64-bit lane of a zmm per
 * accumulator): the points are dealt to the lanes (each lane sums its own
 * subset, and the lanes' sums are added at the end), and every lane runs
 * the same number of steps, a step being a doubling or an addition of one
 * odd multiple, from a schedule msm_lanes_schedule makes (msm.c):
 * sched[s][l] is MSM_OP_DBL (double lane l's accumulator) or
 * 2 e + neg: add (neg = 0) or subtract (neg = 1) entry e of the table,
 * e = MSM_LT_ENTRY(i, j) for (2j + 1) P_i, j < 8, i < MSM_MAX, or for
 * (2j + 1) B with i = MSM_MAX (ge64_bi8[j]). A lane with fewer steps than
 * the others starts with doublings of the identity. */
#define MSM_LANES 8
#define MSM_OP_DBL (-1)
#define MSM_LT_ENTRY(i, j) ((j) * (MSM_MAX + 1) + (i))
#define MSM_LT_ENTRIES (8 * (MSM_MAX + 1))
/* Steps at most: 256 doublings, and a lane's digits (the points are dealt
 * longest first to the lane with the fewest digits: at most the mean
 * plus one point's, WNAF_DIGITS each). */
#define MSM_STEPS_MAX (256 + (MSM_MAX + 1) * WNAF_DIGITS / MSM_LANES + WNAF_DIGITS)
typedef int16_t msm_op;

/* The schedule of r = sum_{i<n} a_i P_i + b B (0 <= n <= MSM_MAX), width-5
 * NAF digits for every scalar, B's too; returns the number of steps (0 when
 * every scalar is zero). */
int msm_lanes_schedule(msm_op (*sched)[MSM_LANES], const uint8_t (*a)[32], int n,
                       const uint8_t b[32]);

/* acc[l] = lane l's sum: the schedule's steps run from the identity, on the
 * tables of P[0..n) (odd multiples made here) and bt (the first 8 of
 * ge64_bi8), 2d given as d2. The IFMA routine (msm_ifma.c) and its C twin
 * msm_straus_lanes_generic give the same points (as group elements). */
typedef void msm_straus_lanes_fn(ge64_p3 acc[MSM_LANES], const ge64_p3 *P, int n,
                                 const ge64_precomp bt[8], const msm_op (*sched)[MSM_LANES],
                                 int steps, const fe64 *d2);
msm_straus_lanes_fn *msm_straus_lanes_probe(void);
/* The C twin, lane by lane on ops (tests). */
void msm_straus_lanes_generic(ge64_p3 acc[MSM_LANES], const ge64_p3 *P, int n,
                              const ge64_precomp bt[8], const msm_op (*sched)[MSM_LANES],
                              int steps, const fe64 *d2, const ge64_ops *ops);

/* The 4 x 64-bit backend's choices, made once by cpu.c (cpu_fe64()): the
 * best of each part this build and CPU run, the C twins where there is no
 * assembly (NULL lanes: none). The backend's table (backend.h) carries it
 * as its impl. */
typedef struct fe64_impl {
	const fe64_ops *fe;
	const ge64_ops *ge; /* ge->fe == fe */
	ge64_scan_fn *scan;
	msm_sqrt_ratio_lanes_fn *sqrt_lanes;
	msm_straus_lanes_fn *straus_lanes; /* msm_straus_vartime in lanes, or NULL */
	x25519_lanes_fn *x25519; /* the IFMA ladder, or NULL: the fe ops' ladder */
	base_lanes_fn *base_lanes; /* the IFMA fixed base x8, or NULL: one at a time */
} fe64_impl;

/* cpu.c: its fe64_impl (never NULL; with assembly only when the build has
 * it and the CPU runs it), and, for tests, the field and point assembly it
 * found (NULL: none; then the backend is ref51's). */
const fe64_impl *cpu_fe64(void);
const fe64_ops *fe64_ops_asm(void);
const ge64_ops *ge64_ops_asm(void);

/* ZIP215 decoding (ge_frombytes_zip215's decisions: y taken mod p, x = 0
 * with the sign bit accepted) of n encodings s[i] into P[i]; ok[i] = 1 when
 * s[i] decodes, else 0 (P[i] is then the identity). The n square roots are
 * computed together (msm_sqrt_ratio_many_vartime). Any n >= 0. */
void msm_decode_zip215_vartime(ge64_p3 *P, int *ok, const uint8_t *const *s, int n,
                               const fe64_impl *im);

/* r[i] and check[i] of msm_sqrt_ratio_lanes_fn for u[i], v[i], i < n:
 * MSM_POW_LANES at a time with im->sqrt_lanes (AVX-512 IFMA) when there is
 * one, else with im->fe, the powers two by two (fe64_pow22523_2; a last odd
 * one by fe64_pow22523). r and check do not overlap u or v. */
void msm_sqrt_ratio_many_vartime(fe64 *r, fe64 *check, const fe64 *u, const fe64 *v, int n,
                                 const fe64_impl *im);
/* The same, never with IFMA: the C twin of the IFMA routine, and the
 * reference the tests compare with. */
void msm_sqrt_ratio_many_fe64(fe64 *r, fe64 *check, const fe64 *u, const fe64 *v, int n,
                              const ge64_ops *ops);

/* r = sum_{i<n} a_i P_i + b B, 0 <= n <= MSM_MAX, a_i and b any 256-bit
 * integers (little-endian). Straus: one chain of doublings, width-5 NAF of
 * every a_i over 8 odd multiples of P_i, width-8 NAF of b over ge64_bi8;
 * a short a_i (a 128-bit batch coefficient) has no digits above its length. */
void msm_straus_vartime(ge64_p3 *r, const uint8_t (*a)[32], const ge64_p3 *P, int n,
                        const uint8_t b[32], const fe64_impl *im);

/* Points per msm_pippenger_vartime call: 256 signatures. */
#define MSM_PIP_MAX 512

/* The same sum as msm_straus_vartime for 0 <= n <= MSM_PIP_MAX, by
 * Pippenger's buckets: signed digits of width c (5..7, chosen from the
 * scalars' lengths), one bucket per digit magnitude (p3), the points
 * added in precomp form (affine: a point whose Z is not 1 is normalised
 * first); a short a_i has no digits above its length. Faster than
 * msm_straus_vartime in chunks of MSM_MAX from about 256 points on
 * (docs/performance.md). */
void msm_pippenger_vartime(ge64_p3 *r, const uint8_t (*a)[32], const ge64_p3 *P, int n,
                           const uint8_t b[32], const ge64_ops *ops);

/* 1 if [8] p is the identity, else 0. */
int msm_is_small_order_vartime(const ge64_p3 *p, const ge64_ops *ops);

/* p = -p */
void msm_p3_neg(ge64_p3 *p);

#endif /* SIGIL_MSM_H */
