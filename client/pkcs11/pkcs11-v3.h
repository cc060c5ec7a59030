/* SPDX-License-Identifier: MIT */
/*
 * pkcs11-v3.h - the PKCS #11 3.0 names that p11-kit's pkcs11.h (2.40) lacks
 *
 * p11-kit 0.24's pkcs11.h already has CKK_EC_EDWARDS, CKM_EC_EDWARDS_KEY_PAIR_GEN
 * and CKM_EDDSA. The rest comes from "PKCS #11 Cryptographic Token Interface
 * Current Mechanisms Specification Version 3.0" (OASIS Standard, 15 June
 * 2020, pkcs11-curr-v3.0-os), section 2.3 (Elliptic Curve), and the values
 * from the header files that belong to it (pkcs11t.h).
 */
#ifndef SIGIL_PKCS11_V3_H
#define SIGIL_PKCS11_V3_H

#include <p11-kit/pkcs11.h>

/* §2.3.7-2.3.8, "Montgomery Elliptic curve public/private key objects" */
#ifndef CKK_EC_MONTGOMERY
#define CKK_EC_MONTGOMERY (0x41UL)
#endif

/* §2.3.11, "Montgomery Elliptic curve key pair generation" */
#ifndef CKM_EC_MONTGOMERY_KEY_PAIR_GEN
#define CKM_EC_MONTGOMERY_KEY_PAIR_GEN (0x1056UL)
#endif

/* §2.3.16, "EC mechanism parameters": CK_EDDSA_PARAMS, the optional
 * parameter of CKM_EDDSA (§2.3.14): no parameter is Ed25519; phFlag false
 * with a context is Ed25519ctx; phFlag true is Ed25519ph (context optional). */
typedef struct CK_EDDSA_PARAMS {
	CK_BBOOL phFlag;
	CK_ULONG ulContextDataLen;
	CK_BYTE_PTR pContextData;
} CK_EDDSA_PARAMS;
typedef CK_EDDSA_PARAMS *CK_EDDSA_PARAMS_PTR;

#endif /* SIGIL_PKCS11_V3_H */
