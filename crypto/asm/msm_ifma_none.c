/* SPDX-License-Identifier: MIT */
/*
 * msm_ifma_none.c - the IFMA probes of msm.h for builds without the amd64
 * code (crypto/asm/amd64/msm_ifma.c otherwise): there are no many-lane
 * routines, so batch verification computes its square roots one by one
 * (two by two) and its Straus sum with one accumulator.
 */
#include <stddef.h>

#include "fe64/msm.h"

msm_sqrt_ratio_lanes_fn *msm_sqrt_ratio_lanes_probe(void)
{
	return NULL;
}

msm_straus_lanes_fn *msm_straus_lanes_probe(void)
{
	return NULL;
}
