/* SPDX-License-Identifier: MIT */
/*
 * bech32.h - Bech32 (BIP 173) as age uses it: no 90-character limit
 *
 * age recipients ("age1..."), age secret keys ("AGE-SECRET-KEY-1...") and
 * plugin identities ("AGE-PLUGIN-SIGIL-1...") are Bech32 strings of 8-bit
 * data. Used by age-plugin-sigil, the sigil command and sigild (which
 * reads the recipient of key.export_wrapped). The mapping of characters
 * and the checksum use no table index and no branch on the data, since
 * secret keys pass through here.
 */
#ifndef SIGIL_CLIENT_BECH32_H
#define SIGIL_CLIENT_BECH32_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define BECH32_HRP_MAX 83

/**
 * bech32_encode() - @hrp "1" data checksum, NUL-terminated in @out.
 * @hrp:   lowercase; the output is all uppercase when @upper
 * Return: the length written, or -1 when @out is too small or @hrp is
 * empty or not printable ASCII.
 */
int bech32_encode(char *out, size_t out_cap, const char *hrp, const uint8_t *data, size_t len, bool upper);

/**
 * bech32_decode() - the hrp (lowercased, NUL-terminated) and the 8-bit data.
 * Accepts all-lowercase or all-uppercase strings only; rejects padding bits
 * that are not zero. @data is written only on success.
 * Return: 0 or -1.
 */
int bech32_decode(char hrp[BECH32_HRP_MAX + 1], uint8_t *data, size_t data_cap, size_t *lenp, const char *s,
                  size_t slen);

#endif /* SIGIL_CLIENT_BECH32_H */
