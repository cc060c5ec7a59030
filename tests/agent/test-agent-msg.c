/* SPDX-License-Identifier: MIT */
/*
 * test-agent-msg.c - the ssh-agent wire format helpers of sigild
 * (daemon/agent-msg.c): bounds checks on every truncation, blob and
 * signature parsing, the writer
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "agent-msg.h"

static const uint8_t pk[32] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
	                        17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };

static void test_writer_and_blob(void **state)
{
	AgentOut o = { 0 };
	uint8_t got[32];

	(void)state;
	agent_put_ed25519_blob(&o, pk);
	assert_false(o.oom);
	/* string(string "ssh-ed25519", string pk) = 4 + 51 bytes */
	assert_int_equal(o.len, 55);
	assert_memory_equal(o.data, "\0\0\0\x33\0\0\0\x0bssh-ed25519\0\0\0\x20", 23);
	assert_int_equal(agent_parse_ed25519_blob(o.data + 4, o.len - 4, got), 0);
	assert_memory_equal(got, pk, 32);
	/* every truncation and one trailing byte are refused */
	for (size_t n = 0; n < o.len - 4; n++)
		assert_int_equal(agent_parse_ed25519_blob(o.data + 4, n, got), -1);
	agent_put_u8(&o, 0);
	assert_int_equal(agent_parse_ed25519_blob(o.data + 4, o.len - 4, got), -1);
	agent_out_free(&o);
	assert_null(o.data);
}

static void test_wrong_type_and_length(void **state)
{
	AgentOut o = { 0 };
	uint8_t got[64];

	(void)state;
	agent_put_cstring(&o, "ssh-rsa");
	agent_put_string(&o, pk, 32);
	assert_int_equal(agent_parse_ed25519_blob(o.data, o.len, got), -1);
	agent_out_free(&o);
	agent_put_cstring(&o, "ssh-ed25519");
	agent_put_string(&o, pk, 31);
	assert_int_equal(agent_parse_ed25519_blob(o.data, o.len, got), -1);
	agent_out_free(&o);
	/* a signature blob needs 64 bytes */
	agent_put_cstring(&o, "ssh-ed25519");
	agent_put_string(&o, pk, 32);
	assert_int_equal(agent_parse_ed25519_sig(o.data, o.len, got), -1);
	agent_out_free(&o);
	{
		uint8_t sig[64];

		memset(sig, 0xab, sizeof(sig));
		agent_put_cstring(&o, "ssh-ed25519");
		agent_put_string(&o, sig, 64);
		assert_int_equal(agent_parse_ed25519_sig(o.data, o.len, got), 0);
		assert_memory_equal(got, sig, 64);
		agent_out_free(&o);
	}
}

static void test_reader_bounds(void **state)
{
	/* a string claiming 2^32-1 bytes, and reads past the end */
	static const uint8_t huge[] = { 0xff, 0xff, 0xff, 0xff, 'x' };
	AgentIn in = { huge, sizeof(huge), false };
	size_t len = 99;

	(void)state;
	assert_null(agent_get_string(&in, &len));
	assert_true(in.bad);
	assert_int_equal(len, 0);
	/* once bad, everything reads as 0 and stays bad */
	assert_int_equal(agent_get_u8(&in), 0);
	assert_int_equal(agent_get_u32(&in), 0);
	assert_true(in.bad);
	in = (AgentIn){ huge, 3, false };
	assert_int_equal(agent_get_u32(&in), 0);
	assert_true(in.bad);
	in = (AgentIn){ huge, 0, false };
	assert_int_equal(agent_get_u8(&in), 0);
	assert_true(in.bad);
	/* big-endian */
	in = (AgentIn){ (const uint8_t *)"\x01\x02\x03\x04\x05", 5, false };
	assert_int_equal(agent_get_u32(&in), 0x01020304u);
	assert_int_equal(agent_get_u8(&in), 5);
	assert_false(in.bad);
	assert_int_equal(in.n, 0);
}

static void test_string_is(void **state)
{
	(void)state;
	assert_true(agent_string_is((const uint8_t *)"query", 5, "query"));
	assert_false(agent_string_is((const uint8_t *)"query", 4, "query"));
	assert_false(agent_string_is((const uint8_t *)"queryx", 6, "query"));
	assert_false(agent_string_is(NULL, 0, ""));
}

static void test_writer_grows(void **state)
{
	AgentOut o = { 0 };
	uint8_t *big = malloc(300000);

	(void)state;
	assert_non_null(big);
	for (size_t i = 0; i < 300000; i++)
		big[i] = (uint8_t)(i * 7);
	agent_put_u8(&o, 14);
	agent_put_string(&o, big, 300000);
	assert_false(o.oom);
	assert_int_equal(o.len, 1 + 4 + 300000);
	assert_memory_equal(o.data + 5, big, 300000);
	agent_out_free(&o);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_writer_and_blob),
		cmocka_unit_test(test_wrong_type_and_length),
		cmocka_unit_test(test_reader_bounds),
		cmocka_unit_test(test_string_is),
		cmocka_unit_test(test_writer_grows),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
