/* SPDX-License-Identifier: MIT */
/*
 * test-util.c - the small public helpers: sigil_verify32 (equal/unequal at
 * every byte and bit, overlapping buffers), sigil_wipe (exactly n bytes),
 * sigil_crypto_impl (a stable lowercase identifier).
 */
#include "harness.h"

#include <string.h>

#include <sigil/crypto.h>

static void test_verify32(void **state)
{
	th_rng_reset("verify32");
	uint8_t a[32], b[32];
	for (int i = 0; i < 100; i++) {
		th_rand_weird32(a);
		memcpy(b, a, 32);
		assert_int_equal(sigil_verify32(a, b), 0);
		assert_int_equal(sigil_verify32(a, a), 0); /* the same buffer */
		for (int byte = 0; byte < 32; byte++)
			for (int bit = 0; bit < 8; bit++) {
				b[byte] ^= (uint8_t)(1u << bit);
				assert_int_equal(sigil_verify32(a, b), -1);
				assert_int_equal(sigil_verify32(b, a), -1);
				b[byte] ^= (uint8_t)(1u << bit);
			}
		memset(b, 0xff, 32);
		memset(a, 0x00, 32);
		assert_int_equal(sigil_verify32(a, b), -1);
	}
	/* overlapping: a window compared with itself shifted */
	uint8_t buf[40];
	memset(buf, 0x42, sizeof(buf));
	assert_int_equal(sigil_verify32(buf, buf + 8), 0);
	buf[39] = 0;
	assert_int_equal(sigil_verify32(buf, buf + 8), -1);
}

static void test_wipe(void **state)
{
	uint8_t buf[300];
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n < 260; n += 37) {
			memset(buf, 0xa5, sizeof(buf));
			sigil_wipe(buf + off, n);
			for (size_t i = 0; i < sizeof(buf); i++) {
				uint8_t want = (i >= off && i < off + n) ? 0 : 0xa5;
				if (buf[i] != want)
					fail_msg("sigil_wipe(buf + %zu, %zu): byte %zu is 0x%02x", off, n, i, buf[i]);
			}
		}
	sigil_wipe(NULL, 0); /* n = 0 touches nothing */
}

static void test_impl_name(void **state)
{
	const char *name = sigil_crypto_impl();
	assert_non_null(name);
	/* a short lowercase identifier such as "generic" or "adx" */
	size_t len = strlen(name);
	assert_true(len > 0 && len < 32);
	for (size_t i = 0; i < len; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
			fail_msg("sigil_crypto_impl() = \"%s\": not a lowercase identifier", name);
	/* chosen once: the same answer every time */
	assert_ptr_equal(sigil_crypto_impl(), name);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_verify32),
		cmocka_unit_test(test_wipe),
		cmocka_unit_test(test_impl_name),
	};
	return th_run(tests);
}
