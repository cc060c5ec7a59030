/* SPDX-License-Identifier: MIT */
/*
 * x25519_ifma_none.c - the probe of x25519_lanes.h for builds without the
 * amd64 code (crypto/asm/amd64/x25519_ifma.c otherwise): there is no
 * IFMA ladder, so X25519 runs the backend's own.
 */
#include <stddef.h>

#include "fe64/x25519_lanes.h"

x25519_lanes_fn *x25519_lanes_probe(void)
{
	return NULL;
}
