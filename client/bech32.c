/* SPDX-License-Identifier: MIT */
/*
 * bech32.c - Bech32 (BIP 173) without the length limit, as age uses it
 */
#include <stdlib.h>
#include <string.h>

#include "bech32.h"

/* stores the compiler must keep (decoded secret keys pass through tmp) */
static void wipe(void *p, size_t n)
{
	volatile uint8_t *v = p;

	while (n--)
		*v++ = 0;
}

static const char charset[] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

/* 0 - 1 as an all-ones mask when a == b, 0 otherwise (no branch) */
static uint32_t eq_mask(uint32_t a, uint32_t b)
{
	uint32_t x = a ^ b;

	return (uint32_t)(((uint64_t)x - 1) >> 32);
}

static uint32_t polymod_step(uint32_t chk, uint32_t v)
{
	static const uint32_t gen[5] = { 0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd, 0x2a1462b3 };
	uint32_t b = chk >> 25;

	chk = ((chk & 0x1ffffff) << 5) ^ v;
	for (int i = 0; i < 5; i++)
		chk ^= gen[i] & (0u - ((b >> i) & 1));
	return chk;
}

static uint32_t hrp_polymod(const char *hrp, size_t n)
{
	uint32_t chk = 1;

	for (size_t i = 0; i < n; i++)
		chk = polymod_step(chk, (uint8_t)hrp[i] >> 5);
	chk = polymod_step(chk, 0);
	for (size_t i = 0; i < n; i++)
		chk = polymod_step(chk, (uint8_t)hrp[i] & 31);
	return chk;
}

/* the 5-bit value of c (lowercase), by a scan of the whole charset; 0xff if none */
static uint32_t char_value(uint8_t c)
{
	uint32_t v = 0, found = 0;

	for (uint32_t i = 0; i < 32; i++) {
		uint32_t m = eq_mask(c, (uint8_t)charset[i]);

		v |= i & m;
		found |= m;
	}
	return v | (~found & 0xff);
}

/* the charset character of v (0-31), by a scan */
static char value_char(uint32_t v)
{
	uint32_t c = 0;

	for (uint32_t i = 0; i < 32; i++)
		c |= (uint8_t)charset[i] & eq_mask(v, i);
	return (char)c;
}

int bech32_encode(char *out, size_t out_cap, const char *hrp, const uint8_t *data, size_t len, bool upper)
{
	size_t hl = strlen(hrp), n5 = (len * 8 + 4) / 5, total = hl + 1 + n5 + 6, o = 0;
	uint32_t chk, acc = 0;
	int bits = 0;

	if (hl == 0 || hl > BECH32_HRP_MAX || total + 1 > out_cap || total > (size_t)INT32_MAX)
		return -1;
	for (size_t i = 0; i < hl; i++)
		if (hrp[i] < 33 || hrp[i] > 126 || (hrp[i] >= 'A' && hrp[i] <= 'Z'))
			return -1;
	chk = hrp_polymod(hrp, hl);
	memcpy(out, hrp, hl);
	o = hl;
	out[o++] = '1';
	for (size_t i = 0; i < len; i++) {
		acc = (acc << 8) | data[i];
		bits += 8;
		while (bits >= 5) {
			uint32_t v = (acc >> (bits - 5)) & 31;

			bits -= 5;
			chk = polymod_step(chk, v);
			out[o++] = value_char(v);
		}
	}
	if (bits) {
		uint32_t v = (acc << (5 - bits)) & 31;

		chk = polymod_step(chk, v);
		out[o++] = value_char(v);
	}
	for (int i = 0; i < 6; i++)
		chk = polymod_step(chk, 0);
	chk ^= 1;
	for (int i = 0; i < 6; i++)
		out[o++] = value_char((chk >> (5 * (5 - i))) & 31);
	out[o] = '\0';
	if (upper)
		for (size_t i = 0; i < o; i++)
			if (out[i] >= 'a' && out[i] <= 'z')
				out[i] = (char)(out[i] - 'a' + 'A');
	acc = 0;
	return (int)o;
}

int bech32_decode(char hrp[BECH32_HRP_MAX + 1], uint8_t *data, size_t data_cap, size_t *lenp, const char *s,
                  size_t slen)
{
	bool lower = false, upper = false;
	size_t sep = 0, n5, n8, o = 0;
	uint32_t chk, acc = 0, bad = 0;
	char h[BECH32_HRP_MAX + 1];
	uint8_t *tmp;
	int bits = 0;

	for (size_t i = 0; i < slen; i++) {
		uint8_t c = (uint8_t)s[i];

		if (c < 33 || c > 126)
			return -1;
		lower |= c >= 'a' && c <= 'z';
		upper |= c >= 'A' && c <= 'Z';
		if (c == '1')
			sep = i; /* the last '1' (the data charset has none) */
	}
	if (lower && upper)
		return -1;
	if (sep == 0 || sep > BECH32_HRP_MAX || slen - sep - 1 < 6)
		return -1;
	for (size_t i = 0; i < sep; i++)
		h[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
	h[sep] = '\0';
	n5 = slen - sep - 1 - 6;
	n8 = n5 * 5 / 8;
	/* a padding of more than 4 bits is not canonical */
	if (n5 * 5 % 8 > 4 || n8 > data_cap)
		return -1;
	tmp = malloc(n8 ? n8 : 1);
	if (!tmp)
		return -1;
	chk = hrp_polymod(h, sep);
	for (size_t i = sep + 1; i < slen; i++) {
		uint8_t c = (uint8_t)s[i];
		uint32_t v;

		c = (uint8_t)(c | (0x20 & (0u - (uint32_t)(c >= 'A' && c <= 'Z'))));
		v = char_value(c);
		bad |= v >> 5;
		v &= 31;
		chk = polymod_step(chk, v);
		if (i < slen - 6) {
			acc = (acc << 5) | v;
			bits += 5;
			if (bits >= 8) {
				bits -= 8;
				tmp[o++] = (uint8_t)(acc >> bits);
			}
		}
	}
	bad |= acc & ((1u << bits) - 1); /* padding bits must be zero */
	if (bad || chk != 1) {
		wipe(tmp, n8 ? n8 : 1);
		free(tmp);
		return -1;
	}
	memcpy(data, tmp, n8);
	wipe(tmp, n8 ? n8 : 1);
	free(tmp);
	memcpy(hrp, h, sep + 1);
	*lenp = n8;
	return 0;
}
