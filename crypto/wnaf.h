/* SPDX-License-Identifier: MIT */
/*
 * wnaf.h - the width-w non-adjacent form of a 256-bit integer, and the
 * odd multiples of a point it indexes: the one recoder and the one table
 * routine of both backends' variable-time scalar multiplications (internal
 * to libsigil-crypto; below ref51/ and fe64/, knowing neither).
 *
 * Variable time: public scalars and points only (verification).
 */
#ifndef SIGIL_WNAF_H
#define SIGIL_WNAF_H

#include <stddef.h>
#include <stdint.h>

/* The nonzero digits of a width-w NAF (w >= 5) of a 256-bit integer: odd,
 * in (-2^(w-1), 2^(w-1)), with at least w - 1 zeros after each, so at
 * most WNAF_DIGITS of them; positions up to 256 (the top one absorbs the
 * carry). */
#define WNAF_DIGITS 64
#define WNAF_LEN 257

/* a = sum dig[k] 2^pos[k], k < the return value, positions increasing,
 * 5 <= w <= 8; a little-endian. Zero runs are skipped a word at a time or
 * by counting trailing zeros. */
int wnaf_vartime(uint16_t pos[WNAF_DIGITS], signed char dig[WNAF_DIGITS], const uint8_t a[32],
                 int w);
/* The same digits in place: a = sum naf[i] 2^i, naf[i] zero or one of
 * the digits above. */
void wnaf_dense_vartime(signed char naf[WNAF_LEN], const uint8_t a[32], int w);

/* The point arithmetic wnaf_odd_multiples_vartime needs, on a backend's
 * own types (ge_p3 and ge_cached of ref51/ge.h; ge64_p3 and ge64_cached of
 * fe64/ge64.h), whose sizes it is given. ctx: the backend's (its ops). */
typedef struct wnaf_point_ops {
	size_t p3_size, cached_size;
	/* r = 2 p (r may be p) */
	void (*dbl)(void *r, const void *p, const void *ctx);
	/* r = p + q, q cached (r may be p) */
	void (*add)(void *r, const void *p, const void *q, const void *ctx);
	/* r = p in cached form */
	void (*to_cached)(void *r, const void *p, const void *ctx);
} wnaf_point_ops;

/* out[j] = (2j + 1) p in cached form, j < n (n >= 1): the table a digit d
 * of a NAF indexes as out[|d| / 2]. p3_size at most WNAF_P3_MAX. */
#define WNAF_P3_MAX 160
void wnaf_odd_multiples_vartime(void *out, const void *p, int n, const wnaf_point_ops *ops,
                                const void *ctx);

#endif /* SIGIL_WNAF_H */
