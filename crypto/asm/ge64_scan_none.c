/* SPDX-License-Identifier: MIT */
/*
 * ge64_scan_none.c - the scan probe of builds without the amd64 assembly:
 * no AVX2 scan, ge64_scalarmult_base scans with ge64_scan_generic.
 */
#include <stddef.h>

#include "fe64/ge64.h"

ge64_scan_fn *ge64_scan_asm_probe(void)
{
	return NULL;
}

void ge64_scan_asm_scrub(void)
{
}
