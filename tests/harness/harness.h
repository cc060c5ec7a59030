/* SPDX-License-Identifier: MIT */
/*
 * harness.h - the test harness linked into every sigil test executable
 * (STYLE.md section 5, after PipeWire's pwtest_lib): hex helpers, a reader
 * for the line files in vectors/, a seeded RNG with edge-value generators,
 * and aliasing checkers.
 *
 * It includes <cmocka.h> with the headers cmocka needs before it. Harness
 * checks report failures through cmocka, so a failed check fails the
 * running test and names the file and line. Tests print nothing on stdout
 * (cmocka writes TAP there); diagnostics go to stderr.
 */
#ifndef SIGIL_TEST_HARNESS_H
#define SIGIL_TEST_HARNESS_H

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <cmocka.h>

/* ---- hex -------------------------------------------------------------- */

/* Decode hex (upper or lower case) into exactly n bytes; "-" means empty. 0 or -1. */
int th_hex_decode(uint8_t *out, size_t n, const char *hex);
/* Decode hex of any even length into a malloc'd buffer (length in *n; "-" = empty). NULL on bad hex. */
uint8_t *th_hex_decode_alloc(const char *hex, size_t *n);
/* Write 2n lowercase hex digits and a NUL into out (2n+1 bytes). */
void th_hex_encode(char *out, const uint8_t *in, size_t n);
/* Print "label: <hex>" to stderr (diagnostics only). */
void th_hex_dump(const char *label, const uint8_t *in, size_t n);

/* Fail the current test with both values in hex if a and b differ in their n bytes. */
#define th_assert_bytes_eq(a, b, n) \
	th__assert_bytes_eq((const uint8_t *)(a), (const uint8_t *)(b), (n), #a, #b, __FILE__, __LINE__)
void th__assert_bytes_eq(const uint8_t *a, const uint8_t *b, size_t n, const char *an, const char *bn,
                         const char *file, int line);

/* Fail the current test unless a equals the bytes that hex decodes to. */
#define th_assert_hex_eq(a, hex, n) \
	th__assert_hex_eq((const uint8_t *)(a), (hex), (n), #a, __FILE__, __LINE__)
void th__assert_hex_eq(const uint8_t *a, const char *hex, size_t n, const char *an, const char *file,
                       int line);

/* ---- vector files ----------------------------------------------------- */

/* Open $SIGIL_VECTORS/relpath; fails the test loudly if the variable is unset or the file missing. */
FILE *th_vec_open(const char *relpath);
/* Next non-blank, non-'#' line with surrounding whitespace (and CR) removed; NULL at end of file.
 * The returned string lives in *buf (realloc'd as needed; free it when done). */
char *th_vec_line(FILE *f, char **buf, size_t *cap);
/* Split line in place at each sep; up to max fields; returns the number of fields found. */
int th_split(char *line, char sep, char **fields, int max);
/* An "x25519 K U OUT" line of converted/rfc7748.txt, split into its nf
 * fields: the three 32-byte values (asserts the shape). */
void th_vec_x25519(char **fields, int nf, uint8_t k[32], uint8_t u[32], uint8_t out[32]);
/* Read a whole file under $SIGIL_VECTORS into a malloc'd NUL-terminated buffer; fails the test if missing. */
char *th_vec_slurp(const char *relpath, size_t *len);

/* ---- RNG -------------------------------------------------------------- */

/* Seed from $SIGIL_TEST_SEED (decimal or 0x hex) or from the clock, and print the seed to stderr. */
void th_rng_init(void);
/* Restart the stream from the seed mixed with tag (call at the start of a test so tests are independent). */
void th_rng_reset(const char *tag);
/* The seed in use. */
uint64_t th_rng_seed(void);
/* 64 random bits (xoshiro256**, seeded by splitmix64). */
uint64_t th_rand64(void);
/* A uniform value in [0, n) (n > 0). */
uint64_t th_rand_below(uint64_t n);
/* Fill n bytes with random bits. */
void th_randbytes(uint8_t *out, size_t n);
/* Five limbs from edwards25519's weirdLimbs51 set (each < 2^51, near 0, 19, 2^51). */
void th_weird_limbs51(uint64_t l[5]);
/* Five limbs from the weirdLimbs52 set (each < 2^52: adds 2^51, 2^51+1, 2^52-19, 2^52-1). */
void th_weird_limbs52(uint64_t l[5]);
/* Five limbs below 2^bits (bits 51 or 52): half the time weird limbs, else random. */
void th_rand_limbs(uint64_t l[5], int bits);
/* The number of entries in the table of weird 32-byte little-endian values. */
size_t th_weird32_count(void);
/* Entry i of that table (0, 1, p-1, p, p+1, 2^255-1, L-1, L, 2^256-1, ...); name it with th_weird32_name. */
void th_weird32(uint8_t out[32], size_t i);
/* A name for entry i ("p+1", "L-1", ...). */
const char *th_weird32_name(size_t i);
/* A random 32-byte value: a weird one, a weird one +- small, bytes of 0x00/0xff, or uniform. */
void th_rand_weird32(uint8_t out[32]);

/* ---- aliasing --------------------------------------------------------- */

/* f(out, a) on objects of `size` bytes. */
typedef void (*th_op1)(void *out, const void *a);
/* f(out, a, b). */
typedef void (*th_op2)(void *out, const void *a, const void *b);
/* f(out, a, b, c). */
typedef void (*th_op3)(void *out, const void *a, const void *b, const void *c);

/* Fail unless f(a, a) (out aliasing the input) writes what f(out, a) writes. */
#define th_check_alias1(f, size, a) th__check_alias1((f), (size), (a), #f, __FILE__, __LINE__)
void th__check_alias1(th_op1 f, size_t size, const void *a, const char *name, const char *file, int line);
/* Fail unless out==a, out==b, a==b and out==a==b give the same result as separate buffers. */
#define th_check_alias2(f, size, a, b) th__check_alias2((f), (size), (a), (b), #f, __FILE__, __LINE__)
void th__check_alias2(th_op2 f, size_t size, const void *a, const void *b, const char *name,
                      const char *file, int line);
/* The same for three inputs (out aliasing each input, and all four the same buffer). */
#define th_check_alias3(f, size, a, b, c) th__check_alias3((f), (size), (a), (b), (c), #f, __FILE__, __LINE__)
void th__check_alias3(th_op3 f, size_t size, const void *a, const void *b, const void *c, const char *name,
                      const char *file, int line);

/* ---- processes -------------------------------------------------------- */

/* From /proc/PID/stat: the state letter (R, S, T, ...) and utime + stime in
 * clock ticks; either pointer may be NULL. 0, or -1 if unreadable. */
int th_proc_stat(int pid, char *state, long long *cpu_ticks);

/* ---- running ---------------------------------------------------------- */

/* th_rng_init(), run the group, and on failure print the seed that reproduces it. */
#define th_run(tests) th__run(#tests, (tests), sizeof(tests) / sizeof((tests)[0]), NULL, NULL)
/* The same with group setup and teardown functions (cmocka's CMFixtureFunction). */
#define th_run_fixture(tests, setup, teardown) \
	th__run(#tests, (tests), sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))
int th__run(const char *name, const struct CMUnitTest *tests, size_t n, CMFixtureFunction setup,
            CMFixtureFunction teardown);

#endif /* SIGIL_TEST_HARNESS_H */
