/* SPDX-License-Identifier: MIT */
/*
 * backend.h - the one table of curve implementations (internal to
 * libsigil-crypto), in the manner of libsodium's
 * implementation->mult(q, n, p) and lib25519's architectures.
 *
 * cpu.c chooses the table once (backend_get); ed25519.c and x25519.c, the
 * protocol files, are its only callers. Two backends fill it:
 *
 *   backend_ref51  crypto/ref51/: the portable C (5 x 51-bit limbs, ref10
 *                  points); every build has it, and -Dasm=disabled runs
 *                  nothing else.
 *   backend_fe64   crypto/fe64/: 4 x 64-bit limbs on the assembly of
 *                  crypto/asm (amd64 MULX/ADX, arm64), with AVX2 table
 *                  scans and AVX-512 IFMA lanes where the CPU has them;
 *                  chosen when the build has assembly the CPU runs. Its
 *                  impl is cpu.c's fe64_impl (fe64/msm.h).
 *
 * The points handed across are ref51's (ref51/ge.h): the common currency
 * of both backends; the protocol files encode, negate and compare them
 * with ref51's operations, which every backend shares. The fixed base
 * (keys, signatures' R) hands bytes across instead.
 *
 * Every op takes the table itself first (be), so that a backend finds its
 * own choices in be->impl.
 */
#ifndef SIGIL_BACKEND_H
#define SIGIL_BACKEND_H

#include <stdint.h>

#include "ref51/ge.h"

/* Encodings per batch_vartime call (two per signature: A and R); calls of
 * at most BACKEND_BATCH_SMALL take a backend's small-batch method (the
 * 4 x 64-bit backend: Straus; above it, Pippenger). */
#define BACKEND_BATCH_MAX 512
#define BACKEND_BATCH_SMALL 128
/* Scalars per base_encode_many call (signatures signed together). */
#define BACKEND_BASE_MANY 8

/* The protocol half of one batch equation (ed25519.c), called by
 * batch_vartime once the encodings are decoded: given ok[i] (1 when enc[i]
 * decoded), it writes the terms of
 *   sum_t scal[t] (-P[idx[t]]) + b B
 * (idx[] strictly increasing, each below n; scal[t] and b any 256-bit
 * integers, little-endian) and returns their number (0: no equation). */
typedef int backend_terms_fn(void *arg, const int *ok, int *idx, uint8_t (*scal)[32],
                             uint8_t b[32]);

typedef struct backend backend;
struct backend {
	const char *name;  /* sigil_crypto_impl()'s answer */
	const void *impl;  /* the backend's own choices (NULL for ref51) */

	/* out = X25519(k, u), RFC 7748 (k clamped inside), no all-zero
	 * check. Constant time in k and u. out may overlap k or u. */
	void (*x25519)(const backend *be, uint8_t out[32], const uint8_t k[32], const uint8_t u[32]);
	/* s = the encoding of a B (RFC 8032 5.1.2), a[31] <= 127 (any
	 * clamped or reduced scalar). Constant time in a; s is not
	 * declassified. */
	void (*base_encode)(const backend *be, uint8_t s[32], const uint8_t a[32]);
	/* s[i] = base_encode's s for a[i], i < n, 1 <= n <= BACKEND_BASE_MANY:
	 * several secret scalars at once (in lanes where the backend has
	 * them, else one by one). Constant time in the a[i]. */
	void (*base_encode_many)(const backend *be, uint8_t (*s)[32], const uint8_t (*a)[32], int n);
	/* u = the Montgomery u = (1 + y) / (1 - y) of a B (RFC 7748's
	 * public key), a clamped (so a B has y != 1). Constant time in a; u
	 * is not declassified. The fixed base ends in an encoding so that a
	 * backend keeps its own radix to the end. */
	void (*base_mont_u)(const backend *be, uint8_t u[32], const uint8_t a[32]);
	/* The point half of one verification: decodes A = enc[0] and R =
	 * enc[1] (zip215 = 0: ge_frombytes's decisions; 1:
	 * ge_frombytes_zip215's) and returns 1 when
	 *   b B + (-1)^neg[0] a[0] A + (-1)^neg[1] a[1] R
	 * is the identity (zip215 = 0) or of small order (its [8] is the
	 * identity: zip215 = 1), 0 when it is not, -1 when A or R does not
	 * decode. a[0], a[1] and b any 256-bit integers (little-endian). Public
	 * inputs. */
	int (*verify_vartime)(const backend *be, const uint8_t *const enc[2], const uint8_t (*a)[32],
	                      const int neg[2], const uint8_t b[32], int zip215);
	/* The point half of a batch equation: decodes the n <=
	 * BACKEND_BATCH_MAX encodings enc[i] with ZIP215's rules into ok[i],
	 * asks terms(arg, ...) for the equation, and returns 1 when
	 * [8](sum_t scal[t] (-P[idx[t]]) + b B) is the identity, else 0 (0
	 * too when terms gives none). Public inputs. */
	int (*batch_vartime)(const backend *be, int *ok, const uint8_t *const *enc, int n,
	                     backend_terms_fn *terms, void *arg);
};

/* The table cpu.c chose (probed at first use, then fixed). */
const backend *backend_get(void);

/* crypto/ref51/backend51.c */
extern const backend backend_ref51;
/* crypto/fe64/backend64.c: impl is NULL here; cpu.c uses a copy with its
 * fe64_impl. */
extern const backend backend_fe64;

#endif /* SIGIL_BACKEND_H */
