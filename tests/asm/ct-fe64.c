/* SPDX-License-Identifier: MIT */
/*
 * ct-fe64.c - ctgrind for the fe64/ge64 code of issue 10: run under
 * Valgrind Memcheck in a -Dct_validation=true build, with the secrets
 * marked undefined (CT_SECRET), the fixed-base multiplication on fe64
 * points (ge64_scalarmult_base: recoding, table selection, point
 * routines, then ge_p3_tobytes with its binary-GCD inversion; and
 * ge64_base_encode / ge64_base_mont_u, which stay in radix 2^64 to the
 * bytes) and the fe64
 * X25519 ladder, each with the C twins and with the amd64 assembly forced
 * (Valgrind hides ADX from CPUID, so cpu.c would never choose it; VEX runs
 * MULX/ADCX/ADOX when the host has them), and the comb's table scan, C
 * twin and AVX2 (forced too; with both the assembly and AVX2 the comb
 * runs ge64_madd_scan_adx, the next row's scan woven into the step). Any secret-dependent branch or
 * address makes Valgrind exit 99. The results are checked against the
 * radix-2^51 code (what cpu.c chooses under Valgrind). The four-lane
 * X25519 ladder runs as its portable C twin (the same body as the AVX-512
 * IFMA routine, which Valgrind cannot run: tests/asm/check-ifma-ct.py reads
 * that one's object code), with both the scalar and u secret; and the IFMA
 * probe must answer NULL here (Valgrind hides AVX-512 from CPUID), so that
 * no ctgrind run of the library takes a path it cannot check. The eight-lane
 * fixed base of signing many at once (base_lanes_encode: the digits, the
 * lanes, Montgomery's trick over the eight Z, the encodings) runs the same
 * way, its lanes as the C twin of the IFMA routine (same body; the IFMA
 * object code is read by check-ifma-ct.py), eight secret scalars, with the
 * C twins' field and with the assembly's. TAP output.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <sigil/crypto.h>

#include "backend.h"
#include "ct.h"
#include "fe64/fe64.h"
#include "ref51/ge.h"
#include "ref51/ref51.h"
#include "fe64/ge64.h"
#include "fe64/msm.h"
#include "fe64/ge64_table.h"
#include "fe64/x25519_lanes.h"
#include "fe64/base_lanes.h"

static const fe64_ops adx_fe = { fe64_mul_adx, fe64_sq_adx, fe64_ladder_step_adx, fe64_sq_n_adx,
                                 "adx" };
static const ge64_ops adx_ge = {
	ge64_p1p1_to_p2_adx, ge64_p1p1_to_p3_adx, ge64_p2_dbl_adx, ge64_madd_adx,
	ge64_msub_adx,       ge64_add_adx,        ge64_sub_adx,    &adx_fe,
};

/* ADX on the host, from /proc/cpuinfo (CPUID under Valgrind hides it). */
static int host_has_adx(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "flags", 5) == 0)
			found = strstr(line, " adx") != NULL && strstr(line, " bmi2") != NULL;
	fclose(f);
	return found;
}

static int check_base(const ge64_ops *ops)
{
	int ok = 1;
	for (int n = 0; n < 4; n++) {
		uint8_t k[32], e1[32], e2[32];
		ge_p3 P, Q;
		for (int i = 0; i < 32; i++)
			k[i] = (uint8_t)(17 * n + 31 * i + 5);
		k[31] &= 127;
		ge_scalarmult_base(&Q, k); /* the reference, declassified */
		ge_p3_tobytes(e1, &Q);
		CT_SECRET(k, sizeof k);
		ge64_scalarmult_base_scan(&P, k, ops, cpu_fe64()->scan);
		ge_p3_tobytes(e2, &P);
		CT_DECLASSIFY(e2, sizeof e2);
		CT_DECLASSIFY(k, sizeof k);
		ok &= memcmp(e1, e2, 32) == 0;
	}
	return ok;
}

/* The fixed base in radix 2^64 to the end (ge64_base_encode,
 * ge64_base_mont_u: the comb, fe64_invert's binary GCD on words, the
 * products and encodings), secret scalar, against the portable backend's
 * table entries (radix 2^51). */
static int check_base_bytes(const ge64_ops *ops, ge64_scan_fn *scan)
{
	int ok = 1;
	for (int n = 0; n < 3; n++) {
		uint8_t k[32], e1[32], e2[32], u1[32], u2[32];
		for (int i = 0; i < 32; i++)
			k[i] = (uint8_t)(23 * n + 19 * i + 7);
		k[0] &= 248;
		k[31] &= 127;
		k[31] |= 64;
		backend_ref51.base_encode(&backend_ref51, e1, k);
		backend_ref51.base_mont_u(&backend_ref51, u1, k);
		CT_DECLASSIFY(e1, sizeof e1);
		CT_DECLASSIFY(u1, sizeof u1);
		CT_SECRET(k, sizeof k);
		ge64_base_encode(e2, k, ops, scan);
		ge64_base_mont_u(u2, k, ops, scan);
		CT_DECLASSIFY(e2, sizeof e2);
		CT_DECLASSIFY(u2, sizeof u2);
		CT_DECLASSIFY(k, sizeof k);
		ok &= memcmp(e1, e2, 32) == 0 && memcmp(u1, u2, 32) == 0;
	}
	return ok;
}

/* The comb's scan on its own, then the whole fixed-base multiplication
 * with that scan (ge64_scalarmult_base_scan): the digit b and the scalar
 * secret; the results against the radix-2^51 code and the C twin. */
static int check_scan(ge64_scan_fn *scan, const ge64_ops *ops)
{
	int ok = 1;
	for (int b = -GE64_COMB_N; b <= GE64_COMB_N; b += 3) {
		ge64_precomp t, want;
		int64_t sb = b;
		ge64_scan_generic(&want, ge64_comb[1], GE64_COMB_N, sb);
		CT_SECRET(&sb, sizeof sb);
		scan(&t, ge64_comb[1], GE64_COMB_N, sb);
		CT_DECLASSIFY(&t, sizeof t);
		ok &= memcmp(&t, &want, sizeof t) == 0;
	}
	for (int n = 0; n < 3; n++) {
		uint8_t k[32], e1[32], e2[32];
		ge_p3 P, Q;
		for (int i = 0; i < 32; i++)
			k[i] = (uint8_t)(29 * n + 13 * i + 3);
		k[31] &= 127;
		ge_scalarmult_base(&Q, k);
		ge_p3_tobytes(e1, &Q);
		CT_SECRET(k, sizeof k);
		ge64_scalarmult_base_scan(&P, k, ops, scan);
		ge_p3_tobytes(e2, &P);
		CT_DECLASSIFY(e2, sizeof e2);
		CT_DECLASSIFY(k, sizeof k);
		ok &= memcmp(e1, e2, 32) == 0;
	}
	return ok;
}

/* AVX2 on the host, from /proc/cpuinfo (as for ADX: the test does not rely
 * on what CPUID says under Valgrind). */
static int host_has_avx2(void)
{
	char line[4096];
	int found = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (f == NULL)
		return 0;
	while (!found && fgets(line, sizeof line, f) != NULL)
		if (strncmp(line, "flags", 5) == 0)
			found = strstr(line, " avx2") != NULL;
	fclose(f);
	return found;
}

/* x25519_ladder64 with ops, or (lanes not NULL) x25519_lanes64 with
 * lanes, the four-lane ladder, whose u is secret too (the whole ladder
 * state derives from it) */
static int check_ladder(const fe64_ops *ops, x25519_lanes_fn *lanes)
{
	int ok = 1;
	for (int n = 0; n < 2; n++) {
		uint8_t k[32], u[32], o1[32], o2[32];
		for (int i = 0; i < 32; i++) {
			k[i] = (uint8_t)(13 * n + 7 * i + 1);
			u[i] = (uint8_t)(3 * n + 11 * i + 9);
		}
		x25519_ladder51(o1, k, u);
		CT_SECRET(k, sizeof k);
		if (lanes != NULL) {
			CT_SECRET(u, sizeof u);
			x25519_lanes64(o2, k, u, lanes);
			CT_DECLASSIFY(u, sizeof u);
		} else {
			x25519_ladder64(o2, k, u, ops);
		}
		CT_DECLASSIFY(o2, sizeof o2);
		CT_DECLASSIFY(k, sizeof k);
		ok &= memcmp(o1, o2, 32) == 0;
	}
	return ok;
}

/* base_lanes_encode with the C twin of the IFMA lanes and fe's field, eight
 * secret scalars (one of them 0), against ref51's fixed base */
static int check_base_lanes(const fe64_ops *fe)
{
	int ok = 1;
	for (int n = 0; n < 2; n++) {
		uint8_t a[BASE_LANES][32], s[BASE_LANES][32], want[BASE_LANES][32];
		for (int l = 0; l < BASE_LANES; l++) {
			ge_p3 P;
			for (int i = 0; i < 32; i++)
				a[l][i] = (uint8_t)(l == 3 ? 0 : 29 * n + 17 * l + 5 * i + 3);
			a[l][31] &= 127;
			ge_scalarmult_base(&P, a[l]);
			ge_p3_tobytes(want[l], &P);
		}
		CT_SECRET(a, sizeof a);
		base_lanes_encode(s, (const uint8_t (*)[32])a, base_lanes_generic, fe);
		CT_DECLASSIFY(s, sizeof s);
		CT_DECLASSIFY(a, sizeof a);
		ok &= memcmp(s, want, sizeof s) == 0;
	}
	return ok;
}

int main(void)
{
	int adx = host_has_adx();
	int failed = 0;
	printf("1..13\n");
#define REPORT(i, ok, what)                                         \
	do {                                                        \
		int ok_ = (ok);                                     \
		failed |= !ok_;                                     \
		printf("%s %d - %s\n", ok_ ? "ok" : "not ok", i, what); \
	} while (0)
	REPORT(1, check_base(&ge64_ops_generic), "ge64_scalarmult_base, C twins, secret scalar");
	REPORT(2, check_ladder(&fe64_ops_generic, NULL), "x25519_ladder64, C twins, secret scalar");
	if (adx) {
		REPORT(3, check_base(&adx_ge), "ge64_scalarmult_base, assembly forced, secret scalar");
		REPORT(4, check_ladder(&adx_fe, NULL), "x25519_ladder64, assembly forced, secret scalar");
	} else {
		printf("ok 3 # SKIP the host has no BMI2/ADX\n");
		printf("ok 4 # SKIP the host has no BMI2/ADX\n");
	}
	REPORT(5, check_scan(ge64_scan_generic, &ge64_ops_generic),
	       "ge64_scan_generic and ge64_scalarmult_base_scan with it, secret digit and scalar");
	if (host_has_avx2())
		REPORT(6, check_scan(ge64_scan_avx2, adx ? &adx_ge : &ge64_ops_generic),
		       "ge64_scan_avx2 forced and ge64_scalarmult_base_scan with it, secret digit and scalar");
	else
		printf("ok 6 # SKIP the host has no AVX2\n");
	REPORT(7, check_base_bytes(&ge64_ops_generic, ge64_scan_generic),
	       "ge64_base_encode and ge64_base_mont_u, C twins, secret scalar");
	if (adx && host_has_avx2())
		REPORT(8, check_base_bytes(&adx_ge, ge64_scan_avx2),
		       "ge64_base_encode and ge64_base_mont_u, assembly and AVX2 forced, secret scalar");
	else
		printf("ok 8 # SKIP the host has no BMI2/ADX or no AVX2\n");
	REPORT(9, check_ladder(NULL, x25519_lanes_generic), "x25519_lanes64 with the C twin of the IFMA ladder, secret scalar and u");
	REPORT(10, x25519_lanes_probe() == NULL && cpu_fe64()->x25519 == NULL,
	       "under Valgrind the IFMA probe answers NULL and cpu.c does not take the IFMA ladder");
	REPORT(11, check_base_lanes(&fe64_ops_generic),
	       "base_lanes_encode, C twin of the IFMA lanes and C field, eight secret scalars");
	if (adx)
		REPORT(12, check_base_lanes(&adx_fe),
		       "base_lanes_encode, C twin of the IFMA lanes and the field assembly forced, eight secret scalars");
	else
		printf("ok 12 # SKIP the host has no BMI2/ADX\n");
	REPORT(13, base_lanes_probe() == NULL && cpu_fe64()->base_lanes == NULL,
	       "under Valgrind the IFMA lanes' probe answers NULL and cpu.c does not take them");
	return failed;
}
