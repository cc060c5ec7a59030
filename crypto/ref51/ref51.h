/* SPDX-License-Identifier: MIT */
/*
 * ref51.h - the portable backend's own entry points beside fe.h and ge.h
 * (internal to libsigil-crypto; its table is backend_ref51 of backend.h).
 */
#ifndef SIGIL_REF51_H
#define SIGIL_REF51_H

#include <stdint.h>

/* out = X25519(k, u) per RFC 7748 (k clamped inside) on fe.h, no all-zero
 * check: the backend's x25519, and the reference the 4 x 64-bit ladder
 * (x25519_ladder64 of fe64/fe64.h) is tested against. Constant time. */
void x25519_ladder51(uint8_t out[32], const uint8_t k[32], const uint8_t u[32]);

#endif /* SIGIL_REF51_H */
