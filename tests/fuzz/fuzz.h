/* SPDX-License-Identifier: MIT */
/*
 * fuzz.h - what every fuzz target shares
 *
 * Each target defines LLVMFuzzerTestOneInput (and may define
 * LLVMFuzzerInitialize). Built with -Dfuzz=true and CC=clang, a target is a
 * libFuzzer binary (-fsanitize=fuzzer,address,undefined); in every other
 * build the same file is linked with replay.c, a main() that runs the
 * target on the committed corpus and regression inputs, so those inputs are
 * replayed by every CI configuration (gcc, ASan, Valgrind).
 *
 * FUZZ_CHECK is the oracle: a failed check prints where and aborts, which
 * libFuzzer reports as a crash and saves the input.
 */
#ifndef SIGIL_TESTS_FUZZ_H
#define SIGIL_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

#define FUZZ_CHECK(cond)                                                                     \
	do {                                                                                     \
		if (!(cond)) {                                                                       \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);        \
			abort();                                                                         \
		}                                                                                    \
	} while (0)

/*
 * fuzz_skip_known() - true when the environment asks to step around bugs
 * that are known and reported (SIGIL_FUZZ_SKIP_KNOWN=1, set by run-fuzz.sh
 * while fuzzing), so that the fuzzer keeps looking for new ones. Replaying
 * tests/fuzz/regressions never sets it: a known bug stays a failing test
 * until it is fixed. Each use names its regression input.
 */
static inline int fuzz_skip_known(void)
{
	const char *e = getenv("SIGIL_FUZZ_SKIP_KNOWN");

	return e && e[0] == '1';
}

/* The input read as a little stream of fields: reading past the end gives
 * zeros, so every input is usable. */
typedef struct FuzzIn {
	const uint8_t *p;
	size_t n;
} FuzzIn;

static inline uint8_t fuzz_u8(FuzzIn *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static inline void fuzz_bytes(FuzzIn *in, uint8_t *out, size_t n)
{
	for (size_t i = 0; i < n; i++)
		out[i] = fuzz_u8(in);
}

#endif /* SIGIL_TESTS_FUZZ_H */
