/* SPDX-License-Identifier: MIT */
/*
 * msm_ifma_none.c - the IFMA probe of msm.h for builds without the amd64
 * code (crypto/asm/amd64/msm_ifma.c otherwise): there is no many-lane power
 * routine, so batch verification computes its square roots one by one.
 */
#include <stddef.h>

#include "fe64/msm.h"

msm_pow22523_lanes_fn *msm_pow22523_lanes_probe(void)
{
	return NULL;
}

msm_odd_multiples_lanes_fn *msm_odd_multiples_lanes_probe(void)
{
	return NULL;
}

msm_straus_lanes_fn *msm_straus_lanes_probe(void)
{
	return NULL;
}
