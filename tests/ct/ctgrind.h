/* SPDX-License-Identifier: MIT */
/*
 * ctgrind.h - the harness shared by tests/ct/ctgrind.c and
 * tests/ct/ctgrind-control.c.
 *
 * Method (Adam Langley's ctgrind, as used by BoringSSL's CONSTTIME_SECRET and
 * Monocypher's tests/ctgrind.c): every secret input, and every output buffer,
 * is marked "undefined" for Valgrind Memcheck with CT_SECRET before the call.
 * Memcheck then reports every conditional jump, and every memory address,
 * computed from those bytes. Results are CT_DECLASSIFY'd before the test
 * compares them, so the comparison itself is not reported.
 *
 * Each executable is a table of cases (Monocypher's RUN table): a name, the
 * function, and the expected Memcheck verdict written down next to it. The
 * table runner prints one "# case: verdict" line per case and checks every
 * result; tests/ct/run-ctgrind.sh runs the executable under Valgrind and
 * decides pass/fail from Valgrind's report and the exit status.
 */
#ifndef SIGIL_TESTS_CTGRIND_H
#define SIGIL_TESTS_CTGRIND_H

#include <stddef.h>
#include <stdint.h>

#include "ct.h"

#if !defined(SIGIL_CT_VALIDATION)
#error "tests/ct needs -Dct_validation=true (CT_SECRET must be a Valgrind client request)"
#endif

/* one row of the RUN table; fn returns 0 when its results are right */
typedef struct {
	const char *name;
	int (*fn)(void);
	const char *expect; /* what Memcheck must say about this call */
} ctg_case;

/* Run every case. Refuses to run outside Valgrind (a run without it would
 * prove nothing) unless argv has --native. Returns the process exit code:
 * 0 when every case's results were right, 1 otherwise. */
int ctg_run(const char *title, const ctg_case *cases, size_t n, int argc, char **argv);

/* mark n bytes secret / public (wrappers so that call sites read plainly) */
void ctg_secret(const void *p, size_t n);
void ctg_public(const void *p, size_t n);

/* 0 if the n bytes at got equal want; else prints both (after declassifying
 * got) and returns 1. The comparison is done on declassified data. */
int ctg_expect_bytes(const char *what, const uint8_t *got, const uint8_t *want, size_t n);
/* the same for an int result */
int ctg_expect_int(const char *what, int got, int want);

/* 1 if every one of the n bytes at p is still (at least partly) marked
 * secret, 0 if some byte was declassified, e.g. by the library. Checks that
 * a secret result (a DH shared secret) is not declassified inside the
 * library, where ctgrind would then miss a leak of it by a caller. Outside
 * Valgrind (--native) it returns 1. */
int ctg_still_secret(const void *p, size_t n);

/* hex (lowercase, no spaces) -> bytes; aborts on malformed input */
void ctg_unhex(uint8_t *out, size_t n, const char *hex);

/* deterministic filler (splitmix64) for test inputs that need no vector */
void ctg_fill(uint8_t *p, size_t n, uint64_t seed);

#endif /* SIGIL_TESTS_CTGRIND_H */
