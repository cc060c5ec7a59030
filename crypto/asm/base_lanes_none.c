/* SPDX-License-Identifier: MIT */
/*
 * base_lanes_none.c - the probe of base_lanes.h for builds without the
 * amd64 code (crypto/asm/amd64/base_ifma.c otherwise): there are no IFMA
 * lanes, so a batch of signatures takes the fixed base one at a time.
 */
#include <stddef.h>

#include "fe64/base_lanes.h"

base_lanes_fn *base_lanes_probe(void)
{
	return NULL;
}
