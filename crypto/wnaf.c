/* SPDX-License-Identifier: MIT */
/*
 * wnaf.c - the width-w NAF recoder and the odd multiples (wnaf.h).
 * Variable time: public inputs only. Static names carry the wnaf_ prefix
 * (the library is one translation unit).
 */
#include <assert.h>
#include <stdint.h>
#include <string.h>

#include "wnaf.h"

/* At the lowest set bit i of what is left of a, the w bits from i give the
 * odd digit d in (-2^(w-1), 2^(w-1)); subtracting d 2^i clears those w
 * bits (and, for d < 0, carries 1 into bit i + w); the next w - 1 digits
 * are zero. */
int wnaf_vartime(uint16_t pos[WNAF_DIGITS], signed char dig[WNAF_DIGITS], const uint8_t a[32],
                 int w)
{
	uint64_t k[5] = { 0 };
	const uint64_t mask = ((uint64_t)1 << w) - 1;
	int nd = 0;

	assert(w >= 5 && w <= 8);
	for (int i = 0; i < 32; i++)
		k[i / 8] |= (uint64_t)a[i] << (8 * (i % 8));
	for (int i = 0; i < WNAF_LEN;) {
		int word = i >> 6, sh = i & 63;
		uint64_t cur = k[word] >> sh;
		if (cur == 0) {
			i = (word + 1) * 64;
			continue;
		}
		if ((cur & 1) == 0) {
			i += __builtin_ctzll(cur);
			continue;
		}
		uint64_t win = cur;
		int spill = sh + w > 64 && word < 4; /* the window crosses into k[word + 1] */
		if (spill)
			win |= k[word + 1] << (64 - sh);
		win &= mask;
		int dgt = (int)win;
		if (dgt >= (1 << (w - 1)))
			dgt -= 1 << w;
		pos[nd] = (uint16_t)i;
		dig[nd] = (signed char)dgt;
		nd++;
		/* k -= dgt 2^i: clear the window, and for dgt < 0 add 2^(i + w) */
		k[word] &= ~(mask << sh);
		if (spill)
			k[word + 1] &= ~(mask >> (64 - sh));
		if (dgt < 0) {
			uint64_t add = (uint64_t)1 << ((i + w) & 63);
			for (int j = (i + w) >> 6; j < 5; j++) {
				k[j] += add;
				if (k[j] != 0)
					break;
				add = 1;
			}
		}
		i += w;
	}
	return nd;
}

void wnaf_dense_vartime(signed char naf[WNAF_LEN], const uint8_t a[32], int w)
{
	uint16_t pos[WNAF_DIGITS];
	signed char dig[WNAF_DIGITS];
	int nd = wnaf_vartime(pos, dig, a, w);
	memset(naf, 0, WNAF_LEN);
	for (int k = 0; k < nd; k++)
		naf[pos[k]] = dig[k];
}

/* p, 2p once; then 3p, 5p, ... by adding 2p. */
void wnaf_odd_multiples_vartime(void *out, const void *p, int n, const wnaf_point_ops *ops,
                                const void *ctx)
{
	/* the backends' points are arrays of uint64_t limbs */
	uint64_t cur[WNAF_P3_MAX / 8], two[WNAF_P3_MAX / 8], c2[WNAF_P3_MAX / 8];
	unsigned char *o = out;

	assert(ops->p3_size <= WNAF_P3_MAX && ops->cached_size <= WNAF_P3_MAX);
	ops->to_cached(o, p, ctx);
	if (n == 1)
		return;
	ops->dbl(two, p, ctx);
	ops->to_cached(c2, two, ctx);
	memcpy(cur, p, ops->p3_size);
	for (int j = 1; j < n; j++) {
		ops->add(cur, cur, c2, ctx);
		ops->to_cached(o + (size_t)j * ops->cached_size, cur, ctx);
	}
}
