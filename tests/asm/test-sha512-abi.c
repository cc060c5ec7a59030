/* SPDX-License-Identifier: MIT */
/*
 * test-sha512-abi.c - the SHA-512 assembly keeps the SysV amd64 ABI: the
 * callee-saved registers and rsp come back unchanged (sha512-abi.S sets
 * them to known values around the call), for every path of its control
 * flow (0 to 9 blocks: no block, a lone block, pairs, pairs then a lone
 * block), and the result still equals the C twin's: the AVX2 block
 * function, and the AVX-512VL one when the CPU runs it.
 */
#include "harness.h"

#include <string.h>

#include "sha512.h"

unsigned abi_check_call(sha512_blocks_fn *fn, uint64_t state[8], const uint8_t *in, size_t nblocks);

static void check_abi(sha512_blocks_fn *fn)
{
	uint8_t buf[9 * SHA512_BLOCK_LEN];
	uint64_t st[8], ref[8];

	for (size_t nb = 0; nb <= 9; nb++) {
		th_randbytes(buf, sizeof(buf));
		for (int i = 0; i < 8; i++)
			st[i] = th_rand64();
		memcpy(ref, st, sizeof(ref));
		sha512_blocks_generic(ref, buf, nb);
		assert_int_equal(abi_check_call(fn, st, buf, nb), 0);
		assert_memory_equal(st, ref, sizeof(ref));
	}
}

static void test_callee_saved(void **state)
{
	sha512_blocks_fn *avx2 = sha512_blocks_avx2_built();

	th_rng_reset("abi");
	assert_non_null(avx2);
	/* a build with the assembly on a CPU without it would fault: fail,
	 * never skip */
	assert_true(sha512_avx2_capable());
	check_abi(avx2);
}

static void test_callee_saved_avx512(void **state)
{
	sha512_blocks_fn *avx512 = sha512_blocks_avx512_built();

	th_rng_reset("abi512");
	assert_non_null(avx512);
	if (!sha512_avx512_capable()) {
		print_message("# NOTE: this CPU lacks AVX-512 F/VL: the AVX-512 SHA-512 is not checked here\n");
		return;
	}
	check_abi(avx512);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_callee_saved),
		cmocka_unit_test(test_callee_saved_avx512),
	};
	return th_run(tests);
}
