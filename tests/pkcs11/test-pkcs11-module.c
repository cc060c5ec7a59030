/* SPDX-License-Identifier: MIT */
/*
 * test-pkcs11-module.c - sigil-pkcs11.so loaded with dlopen, against the real sigild
 *
 * Every argument check (CKR_ARGUMENTS_BAD) and the two-call buffer
 * convention (CKR_BUFFER_TOO_SMALL) of the functions the module implements;
 * C_Initialize's arguments; signatures of every CKM_EDDSA mode and X25519
 * secrets checked with sigil's crypto core; session keys deleted at
 * C_CloseSession and C_Finalize; eight threads signing and listing at once;
 * a fork child that must C_Initialize again and leaves the parent's state
 * alone. Registered twice: as is, and under Valgrind (no error, no leak).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

#include "harness.h"
#include "pkcs11-v3.h"
#include "tc.h"

static TcDaemon daemon_;
static void *module;
static CK_FUNCTION_LIST *f;

#define CK(call) assert_int_equal((call), CKR_OK)
#define CKR(want, call) assert_int_equal((call), (want))

static sigil_client *conn(void)
{
	sigil_client *c = NULL;

	if (sigil_client_connect(&c, daemon_.sock, 10000) != SIGIL_EOK)
		fail_msg("connect: %s", sigil_client_errmsg(c));
	return c;
}

static int group_setup(void **state)
{
	const char *path = getenv("SIGIL_PKCS11");
	CK_RV (*get)(CK_FUNCTION_LIST_PTR_PTR);
	sigil_client *c;

	if (!path)
		fail_msg("SIGIL_PKCS11 is not set (run through meson test)");
	tc_daemon_start(&daemon_);
	setenv("SIGIL_SOCK", daemon_.sock, 1);
	module = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!module)
		fail_msg("dlopen %s: %s", path, dlerror());
	*(void **)&get = dlsym(module, "C_GetFunctionList");
	assert_non_null(get);
	CKR(CKR_ARGUMENTS_BAD, get(NULL));
	CK(get(&f));
	assert_int_equal(f->version.major, 2);
	c = conn();
	assert_int_equal(sigil_client_key_generate(c, NULL, SIGIL_KEY_ED25519, "ed", 0), SIGIL_EOK);
	assert_int_equal(sigil_client_key_generate(c, NULL, SIGIL_KEY_X25519, "x", 0), SIGIL_EOK);
	sigil_client_free(c);
	return 0;
}

static int group_teardown(void **state)
{
	if (module)
		dlclose(module);
	return tc_daemon_stop(&daemon_);
}

static CK_SESSION_HANDLE open_session(void)
{
	CK_SESSION_HANDLE s;

	CK(f->C_OpenSession(0, CKF_SERIAL_SESSION | CKF_RW_SESSION, NULL, NULL, &s));
	return s;
}

/* The one object of class klass with this label. */
static CK_OBJECT_HANDLE find(CK_SESSION_HANDLE s, const char *label, CK_OBJECT_CLASS klass)
{
	CK_ATTRIBUTE t[] = {
		{ CKA_LABEL, (void *)label, strlen(label) },
		{ CKA_CLASS, &klass, sizeof(klass) },
	};
	CK_OBJECT_HANDLE h[2];
	CK_ULONG n = 0;

	CK(f->C_FindObjectsInit(s, t, 2));
	CK(f->C_FindObjects(s, h, 2, &n));
	CK(f->C_FindObjectsFinal(s));
	assert_int_equal(n, 1);
	return h[0];
}

static void public_key(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE h, uint8_t pk[32])
{
	uint8_t point[34];
	CK_ATTRIBUTE a = { CKA_EC_POINT, point, sizeof(point) };

	CK(f->C_GetAttributeValue(s, h, &a, 1));
	assert_int_equal(a.ulValueLen, 34);
	assert_int_equal(point[0], 0x04);
	assert_int_equal(point[1], 32);
	memcpy(pk, point + 2, 32);
}

static void test_initialize(void **state)
{
	CK_C_INITIALIZE_ARGS a;
	CK_SESSION_HANDLE s;
	CK_INFO info;

	CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_GetInfo(&info));
	CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, &s));
	CKR(CKR_CRYPTOKI_NOT_INITIALIZED, f->C_Finalize(NULL));
	memset(&a, 0, sizeof(a));
	a.pReserved = &a;
	CKR(CKR_ARGUMENTS_BAD, f->C_Initialize(&a));
	memset(&a, 0, sizeof(a));
	a.CreateMutex = (CK_CREATEMUTEX)1;
	CKR(CKR_ARGUMENTS_BAD, f->C_Initialize(&a));
	a.DestroyMutex = (CK_DESTROYMUTEX)1;
	a.LockMutex = (CK_LOCKMUTEX)1;
	a.UnlockMutex = (CK_UNLOCKMUTEX)1;
	CKR(CKR_CANT_LOCK, f->C_Initialize(&a));
	a.flags = CKF_OS_LOCKING_OK;
	CK(f->C_Initialize(&a));
	CKR(CKR_CRYPTOKI_ALREADY_INITIALIZED, f->C_Initialize(NULL));
	CKR(CKR_ARGUMENTS_BAD, f->C_GetInfo(NULL));
	CK(f->C_GetInfo(&info));
	assert_int_equal(info.cryptokiVersion.major, 2);
	assert_memory_equal(info.manufacturerID, "sigil ", 6);
	CKR(CKR_ARGUMENTS_BAD, f->C_Finalize(&a));
	CK(f->C_Finalize(NULL));
	memset(&a, 0, sizeof(a));
	a.flags = CKF_OS_LOCKING_OK;
	CK(f->C_Initialize(&a));
	CK(f->C_Finalize(NULL));
}

/* Slot, token, mechanism and session calls: NULL arguments, the two-call
 * convention, wrong handles. */
static void test_arguments_and_buffers(void **state)
{
	CK_SLOT_ID slots[2];
	CK_ULONG n;
	CK_MECHANISM_TYPE mechs[8];
	CK_MECHANISM_INFO mi;
	CK_SLOT_INFO si;
	CK_TOKEN_INFO ti;
	CK_SESSION_INFO ssi;
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE h[4];
	uint8_t buf[64];

	CK(f->C_Initialize(NULL));
	CKR(CKR_ARGUMENTS_BAD, f->C_GetSlotList(CK_TRUE, NULL, NULL));
	CK(f->C_GetSlotList(CK_TRUE, NULL, &n));
	assert_int_equal(n, 1);
	n = 0;
	CKR(CKR_BUFFER_TOO_SMALL, f->C_GetSlotList(CK_TRUE, slots, &n));
	assert_int_equal(n, 1);
	n = 2;
	CK(f->C_GetSlotList(CK_FALSE, slots, &n));
	assert_int_equal(n, 1);
	assert_int_equal(slots[0], 0);
	CKR(CKR_ARGUMENTS_BAD, f->C_GetSlotInfo(0, NULL));
	CKR(CKR_SLOT_ID_INVALID, f->C_GetSlotInfo(7, &si));
	CK(f->C_GetSlotInfo(0, &si));
	assert_true(si.flags & CKF_TOKEN_PRESENT);
	CKR(CKR_ARGUMENTS_BAD, f->C_GetTokenInfo(0, NULL));
	CKR(CKR_SLOT_ID_INVALID, f->C_GetTokenInfo(7, &ti));
	CK(f->C_GetTokenInfo(0, &ti));
	assert_memory_equal(ti.label, "sigil   ", 8);
	assert_false(ti.flags & CKF_LOGIN_REQUIRED);
	CKR(CKR_ARGUMENTS_BAD, f->C_GetMechanismList(0, NULL, NULL));
	CK(f->C_GetMechanismList(0, NULL, &n));
	assert_int_equal(n, 4);
	n = 3;
	CKR(CKR_BUFFER_TOO_SMALL, f->C_GetMechanismList(0, mechs, &n));
	assert_int_equal(n, 4);
	n = 8;
	CK(f->C_GetMechanismList(0, mechs, &n));
	assert_int_equal(mechs[0], CKM_EDDSA);
	CKR(CKR_ARGUMENTS_BAD, f->C_GetMechanismInfo(0, CKM_EDDSA, NULL));
	CKR(CKR_MECHANISM_INVALID, f->C_GetMechanismInfo(0, CKM_SHA256, &mi));
	CK(f->C_GetMechanismInfo(0, CKM_ECDH1_DERIVE, &mi));
	assert_int_equal(mi.flags, CKF_DERIVE);

	CKR(CKR_ARGUMENTS_BAD, f->C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, NULL));
	CKR(CKR_SESSION_PARALLEL_NOT_SUPPORTED, f->C_OpenSession(0, 0, NULL, NULL, &s));
	CKR(CKR_SLOT_ID_INVALID, f->C_OpenSession(9, CKF_SERIAL_SESSION, NULL, NULL, &s));
	s = open_session();
	CKR(CKR_ARGUMENTS_BAD, f->C_GetSessionInfo(s, NULL));
	CK(f->C_GetSessionInfo(s, &ssi));
	assert_int_equal(ssi.state, CKS_RW_PUBLIC_SESSION);
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_GetSessionInfo(s + 100, &ssi));
	CKR(CKR_ARGUMENTS_BAD, f->C_Login(s, CKU_USER, NULL, 0));
	CKR(CKR_ARGUMENTS_BAD, f->C_GenerateRandom(s, NULL, 8));
	CK(f->C_GenerateRandom(s, NULL, 0));
	CK(f->C_GenerateRandom(s, buf, sizeof(buf)));

	/* find */
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_FindObjects(s, h, 4, &n));
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_FindObjectsFinal(s));
	CKR(CKR_ARGUMENTS_BAD, f->C_FindObjectsInit(s, NULL, 1));
	CK(f->C_FindObjectsInit(s, NULL, 0));
	CKR(CKR_OPERATION_ACTIVE, f->C_FindObjectsInit(s, NULL, 0));
	CKR(CKR_ARGUMENTS_BAD, f->C_FindObjects(s, h, 4, NULL));
	CKR(CKR_ARGUMENTS_BAD, f->C_FindObjects(s, NULL, 4, &n));
	CK(f->C_FindObjects(s, h, 1, &n));
	assert_int_equal(n, 1);
	CK(f->C_FindObjects(s, h + 1, 3, &n));
	assert_true(n >= 3);
	CK(f->C_FindObjectsFinal(s));
	CK(f->C_CloseSession(s));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_CloseSession(s));
	CK(f->C_Finalize(NULL));
}

static void test_attributes(void **state)
{
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE priv, pub;
	uint8_t v1[64], v2[4], pk[32];
	CK_BBOOL sens = CK_FALSE;
	CK_ATTRIBUTE t[4];
	sigil_key_info info;
	sigil_client *c = conn();

	assert_int_equal(sigil_client_key_public(c, &info, "ed"), SIGIL_EOK);
	sigil_client_free(c);
	CK(f->C_Initialize(NULL));
	s = open_session();
	priv = find(s, "ed", CKO_PRIVATE_KEY);
	pub = find(s, "ed", CKO_PUBLIC_KEY);
	CKR(CKR_OBJECT_HANDLE_INVALID, f->C_GetAttributeValue(s, 12345, t, 0));
	CKR(CKR_ARGUMENTS_BAD, f->C_GetAttributeValue(s, priv, NULL, 1));
	/* sizes first, then the values */
	t[0] = (CK_ATTRIBUTE){ CKA_EC_POINT, NULL, 0 };
	t[1] = (CK_ATTRIBUTE){ CKA_LABEL, NULL, 0 };
	CK(f->C_GetAttributeValue(s, pub, t, 2));
	assert_int_equal(t[0].ulValueLen, 34);
	assert_int_equal(t[1].ulValueLen, 2);
	/* too small: CK_UNAVAILABLE_INFORMATION and CKR_BUFFER_TOO_SMALL, the
	 * other attributes still filled */
	t[0] = (CK_ATTRIBUTE){ CKA_EC_POINT, v2, sizeof(v2) };
	t[1] = (CK_ATTRIBUTE){ CKA_LABEL, v1, sizeof(v1) };
	CKR(CKR_BUFFER_TOO_SMALL, f->C_GetAttributeValue(s, pub, t, 2));
	assert_int_equal(t[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
	assert_int_equal(t[1].ulValueLen, 2);
	assert_memory_equal(v1, "ed", 2);
	/* a private key's value is sensitive; unknown types are invalid */
	t[0] = (CK_ATTRIBUTE){ CKA_VALUE, v1, sizeof(v1) };
	t[1] = (CK_ATTRIBUTE){ CKA_SENSITIVE, &sens, sizeof(sens) };
	CKR(CKR_ATTRIBUTE_SENSITIVE, f->C_GetAttributeValue(s, priv, t, 2));
	assert_int_equal(t[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
	assert_int_equal(sens, CK_TRUE);
	t[0] = (CK_ATTRIBUTE){ CKA_MODULUS, v1, sizeof(v1) };
	CKR(CKR_ATTRIBUTE_TYPE_INVALID, f->C_GetAttributeValue(s, pub, t, 1));
	assert_int_equal(t[0].ulValueLen, CK_UNAVAILABLE_INFORMATION);
	public_key(s, pub, pk);
	assert_memory_equal(pk, info.public_key, 32);
	CK(f->C_CloseSession(s));
	CK(f->C_Finalize(NULL));
}

static void sign_one(CK_SESSION_HANDLE s, CK_OBJECT_HANDLE k, CK_MECHANISM *m, const uint8_t *msg,
                     size_t len, uint8_t sig[64])
{
	CK_ULONG n;

	CK(f->C_SignInit(s, m, k));
	n = 64;
	CK(f->C_Sign(s, (CK_BYTE_PTR)msg, len, sig, &n));
	assert_int_equal(n, 64);
}

static void test_sign(void **state)
{
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE k, pub;
	CK_MECHANISM m = { CKM_EDDSA, NULL, 0 };
	uint8_t pk[32], sig[64], msg[300], big[65];
	CK_ULONG n;
	CK_EDDSA_PARAMS ctx = { CK_FALSE, 3, (CK_BYTE_PTR) "foo" };
	CK_EDDSA_PARAMS ph = { CK_TRUE, 0, NULL };
	CK_MECHANISM mctx = { CKM_EDDSA, &ctx, sizeof(ctx) }, mph = { CKM_EDDSA, &ph, sizeof(ph) };

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (uint8_t)(i * 7);
	CK(f->C_Initialize(NULL));
	s = open_session();
	k = find(s, "ed", CKO_PRIVATE_KEY);
	pub = find(s, "ed", CKO_PUBLIC_KEY);
	public_key(s, pub, pk);

	CKR(CKR_ARGUMENTS_BAD, f->C_SignInit(s, NULL, k));
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_Sign(s, msg, 1, sig, &n));
	CK(f->C_SignInit(s, &m, k));
	/* length query, too small, then the signature; the operation lasts until then */
	CK(f->C_Sign(s, msg, 10, NULL, &n));
	assert_int_equal(n, 64);
	n = 63;
	CKR(CKR_BUFFER_TOO_SMALL, f->C_Sign(s, msg, 10, sig, &n));
	assert_int_equal(n, 64);
	n = 64;
	CK(f->C_Sign(s, msg, 10, sig, &n));
	assert_int_equal(sigil_ed25519_verify(sig, msg, 10, pk, SIGIL_ED25519_STRICT), 0);
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_Sign(s, msg, 10, sig, &n));
	/* a NULL length or data ends the operation */
	CK(f->C_SignInit(s, &m, k));
	CKR(CKR_ARGUMENTS_BAD, f->C_Sign(s, msg, 10, sig, NULL));
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_Sign(s, msg, 10, sig, &n));
	CK(f->C_SignInit(s, &m, k));
	CKR(CKR_ARGUMENTS_BAD, f->C_Sign(s, NULL, 10, sig, &n));
	/* an empty message */
	sign_one(s, k, &m, NULL, 0, sig);
	assert_int_equal(sigil_ed25519_verify(sig, (const uint8_t *)"", 0, pk, SIGIL_ED25519_STRICT), 0);
	/* Ed25519ctx and Ed25519ph (single and multi-part) against the crypto core */
	sign_one(s, k, &mctx, msg, sizeof(msg), sig);
	assert_int_equal(sigil_ed25519ctx_verify(sig, msg, sizeof(msg), (const uint8_t *)"foo", 3, pk,
	                                         SIGIL_ED25519_STRICT), 0);
	sign_one(s, k, &mph, msg, sizeof(msg), sig);
	assert_int_equal(sigil_ed25519ph_verify(sig, msg, sizeof(msg), NULL, 0, pk, SIGIL_ED25519_STRICT), 0);
	CK(f->C_SignInit(s, &mph, k));
	CKR(CKR_ARGUMENTS_BAD, f->C_SignUpdate(s, NULL, 3));
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_SignFinal(s, sig, &n));
	CK(f->C_SignInit(s, &mph, k));
	for (size_t i = 0; i < sizeof(msg); i += 100)
		CK(f->C_SignUpdate(s, msg + i, 100));
	CK(f->C_SignFinal(s, NULL, &n));
	assert_int_equal(n, 64);
	n = 1;
	CKR(CKR_BUFFER_TOO_SMALL, f->C_SignFinal(s, sig, &n));
	CKR(CKR_ARGUMENTS_BAD, f->C_SignFinal(s, sig, NULL));
	CK(f->C_SignInit(s, &mph, k));
	for (size_t i = 0; i < sizeof(msg); i += 100)
		CK(f->C_SignUpdate(s, msg + i, 100));
	n = 64;
	CK(f->C_SignFinal(s, sig, &n));
	assert_int_equal(sigil_ed25519ph_verify(sig, msg, sizeof(msg), NULL, 0, pk, SIGIL_ED25519_STRICT), 0);
	/* verify: good, bad, wrong length, NULL signature */
	CK(f->C_VerifyInit(s, &m, pub));
	sign_one(s, k, &m, msg, 50, sig);
	CK(f->C_Verify(s, msg, 50, sig, 64));
	CK(f->C_VerifyInit(s, &m, pub));
	sig[5] ^= 1;
	CKR(CKR_SIGNATURE_INVALID, f->C_Verify(s, msg, 50, sig, 64));
	CK(f->C_VerifyInit(s, &m, pub));
	CKR(CKR_SIGNATURE_LEN_RANGE, f->C_Verify(s, msg, 50, sig, 65));
	CK(f->C_VerifyInit(s, &m, pub));
	CKR(CKR_ARGUMENTS_BAD, f->C_Verify(s, msg, 50, NULL, 64));
	CKR(CKR_OPERATION_NOT_INITIALIZED, f->C_Verify(s, msg, 50, sig, 64));
	CK(f->C_VerifyInit(s, &mph, pub));
	CKR(CKR_ARGUMENTS_BAD, f->C_VerifyFinal(s, NULL, 64));
	CKR(CKR_ARGUMENTS_BAD, f->C_VerifyInit(s, NULL, pub));
	/* a bad parameter */
	big[0] = 0;
	m.pParameter = big;
	m.ulParameterLen = sizeof(big);
	CKR(CKR_MECHANISM_PARAM_INVALID, f->C_SignInit(s, &m, k));
	CK(f->C_CloseSession(s));
	CK(f->C_Finalize(NULL));
}

static void test_derive_and_keygen(void **state)
{
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE k, pub, priv, secret;
	uint8_t pk[32], peer_sk[32], peer_pk[32], want[32], got[32];
	CK_ECDH1_DERIVE_PARAMS p = { CKD_NULL, 0, NULL, 32, peer_pk };
	CK_MECHANISM m = { CKM_ECDH1_DERIVE, &p, sizeof(p) };
	CK_MECHANISM gen = { CKM_EC_EDWARDS_KEY_PAIR_GEN, NULL, 0 };
	CK_BBOOL no = CK_FALSE, yes = CK_TRUE;
	CK_ATTRIBUTE tmpl[] = { { CKA_SENSITIVE, &no, 1 }, { CKA_EXTRACTABLE, &yes, 1 } };
	CK_ATTRIBUTE eph[] = { { CKA_TOKEN, &no, 1 }, { CKA_LABEL, "eph1", 4 } };
	CK_ATTRIBUTE eph2[] = { { CKA_TOKEN, &no, 1 }, { CKA_LABEL, "eph2", 4 } };
	CK_ATTRIBUTE v = { CKA_VALUE, got, sizeof(got) };
	sigil_client *c = conn();

	for (int i = 0; i < 32; i++)
		peer_sk[i] = (uint8_t)(i * 13 + 1);
	sigil_x25519_public(peer_pk, peer_sk);
	CK(f->C_Initialize(NULL));
	s = open_session();
	k = find(s, "x", CKO_PRIVATE_KEY);
	public_key(s, find(s, "x", CKO_PUBLIC_KEY), pk);
	assert_int_equal(sigil_x25519(want, peer_sk, pk), 0);
	CKR(CKR_ARGUMENTS_BAD, f->C_DeriveKey(s, NULL, k, tmpl, 2, &secret));
	CKR(CKR_ARGUMENTS_BAD, f->C_DeriveKey(s, &m, k, tmpl, 2, NULL));
	CKR(CKR_ARGUMENTS_BAD, f->C_DeriveKey(s, &m, k, NULL, 2, &secret));
	CK(f->C_DeriveKey(s, &m, k, tmpl, 2, &secret));
	CK(f->C_GetAttributeValue(s, secret, &v, 1));
	assert_int_equal(v.ulValueLen, 32);
	assert_memory_equal(got, want, 32);
	v.ulValueLen = 31;
	CKR(CKR_BUFFER_TOO_SMALL, f->C_GetAttributeValue(s, secret, &v, 1));
	CK(f->C_DestroyObject(s, secret));
	CKR(CKR_OBJECT_HANDLE_INVALID, f->C_DestroyObject(s, secret));
	/* one secret left for C_CloseSession to wipe and free */
	CK(f->C_DeriveKey(s, &m, k, NULL, 0, &secret));

	CKR(CKR_ARGUMENTS_BAD, f->C_GenerateKeyPair(s, NULL, NULL, 0, NULL, 0, &pub, &priv));
	CKR(CKR_ARGUMENTS_BAD, f->C_GenerateKeyPair(s, &gen, NULL, 0, NULL, 0, NULL, &priv));
	CKR(CKR_ARGUMENTS_BAD, f->C_GenerateKeyPair(s, &gen, NULL, 1, NULL, 0, &pub, &priv));
	/* session keys: deleted at C_CloseSession and at C_Finalize */
	CK(f->C_GenerateKeyPair(s, &gen, eph, 2, NULL, 0, &pub, &priv));
	assert_int_equal(sigil_client_key_public(c, NULL, "eph1"), SIGIL_EOK);
	CK(f->C_CloseSession(s));
	assert_int_equal(sigil_client_key_public(c, NULL, "eph1"), SIGIL_ENOT_FOUND);
	s = open_session();
	CK(f->C_GenerateKeyPair(s, &gen, eph2, 2, NULL, 0, &pub, &priv));
	assert_int_equal(sigil_client_key_public(c, NULL, "eph2"), SIGIL_EOK);
	CK(f->C_Finalize(NULL));
	assert_int_equal(sigil_client_key_public(c, NULL, "eph2"), SIGIL_ENOT_FOUND);
	sigil_client_free(c);
}

/* Everything the module does not do answers CKR_FUNCTION_NOT_SUPPORTED (or
 * its own code), and every call on a session that does not exist answers
 * CKR_SESSION_HANDLE_INVALID: never a crash, never CKR_OK. */
static void test_unsupported_and_bad_handles(void **state)
{
	CK_SESSION_HANDLE s, bad = 0x7777;
	CK_MECHANISM m = { CKM_EDDSA, NULL, 0 };
	CK_BYTE b[64];
	CK_ULONG n = sizeof(b);
	CK_OBJECT_HANDLE h;
	CK_ATTRIBUTE a = { CKA_LABEL, b, sizeof(b) };

	CK(f->C_Initialize(NULL));
	s = open_session();
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_InitToken(0, b, 4, b));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_InitPIN(s, b, 4));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SetPIN(s, b, 4, b, 4));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_WaitForSlotEvent(0, NULL, NULL));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_GetOperationState(s, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SetOperationState(s, b, n, 0, 0));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_CreateObject(s, &a, 1, &h));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_CopyObject(s, 1, &a, 1, &h));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SetAttributeValue(s, 1, &a, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_EncryptInit(s, &m, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_Encrypt(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_EncryptUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_EncryptFinal(s, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DecryptInit(s, &m, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_Decrypt(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DecryptUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DecryptFinal(s, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DigestInit(s, &m));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_Digest(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DigestUpdate(s, b, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DigestKey(s, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DigestFinal(s, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SignRecoverInit(s, &m, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SignRecover(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_VerifyRecoverInit(s, &m, 1));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_VerifyRecover(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DigestEncryptUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DecryptDigestUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_SignEncryptUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_DecryptVerifyUpdate(s, b, 1, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_GenerateKey(s, &m, &a, 1, &h));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_WrapKey(s, &m, 1, 2, b, &n));
	CKR(CKR_FUNCTION_NOT_SUPPORTED, f->C_UnwrapKey(s, &m, 1, b, 1, &a, 1, &h));
	CKR(CKR_RANDOM_SEED_NOT_SUPPORTED, f->C_SeedRandom(s, b, 4));
	CKR(CKR_FUNCTION_NOT_PARALLEL, f->C_GetFunctionStatus(s));
	CKR(CKR_FUNCTION_NOT_PARALLEL, f->C_CancelFunction(s));

	CKR(CKR_SESSION_HANDLE_INVALID, f->C_SignInit(bad, &m, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_Sign(bad, b, 1, b, &n));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_SignUpdate(bad, b, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_SignFinal(bad, b, &n));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_VerifyInit(bad, &m, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_Verify(bad, b, 1, b, 64));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_VerifyUpdate(bad, b, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_VerifyFinal(bad, b, 64));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_FindObjectsInit(bad, NULL, 0));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_FindObjects(bad, &h, 1, &n));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_FindObjectsFinal(bad));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_GetAttributeValue(bad, 1, &a, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_GetObjectSize(bad, 1, &n));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_DestroyObject(bad, 1));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_Login(bad, CKU_USER, b, 4));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_Logout(bad));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_GenerateRandom(bad, b, 4));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_GenerateKeyPair(bad, &m, NULL, 0, NULL, 0, &h, &h));
	CKR(CKR_OBJECT_HANDLE_INVALID, f->C_GetObjectSize(s, 0x5555, &n));
	CKR(CKR_OBJECT_HANDLE_INVALID, f->C_DestroyObject(s, 0x5555));
	CKR(CKR_KEY_HANDLE_INVALID, f->C_SignInit(s, &m, 0x5555));
	CKR(CKR_KEY_HANDLE_INVALID, f->C_VerifyInit(s, &m, 0x5555));
	CKR(CKR_USER_NOT_LOGGED_IN, f->C_Logout(s));
	CK(f->C_CloseAllSessions(0));
	CKR(CKR_SESSION_HANDLE_INVALID, f->C_CloseSession(s));
	CKR(CKR_SLOT_ID_INVALID, f->C_CloseAllSessions(3));
	CK(f->C_Finalize(NULL));
}

#define N_THREADS 8
#define N_SIGNS 100

typedef struct ThreadArg {
	int id;
	int failures;
} ThreadArg;

static void *signer(void *p)
{
	ThreadArg *a = p;
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE k, pub;
	CK_MECHANISM m = { CKM_EDDSA, NULL, 0 };
	uint8_t msg[64], sig[64], pk[32];
	CK_ULONG n;
	CK_OBJECT_CLASS klass = CKO_PRIVATE_KEY;
	CK_ATTRIBUTE t[] = { { CKA_LABEL, "ed", 2 }, { CKA_CLASS, &klass, sizeof(klass) } };
	uint8_t point[34];
	CK_ATTRIBUTE pa = { CKA_EC_POINT, point, sizeof(point) };

	if (f->C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, &s) != CKR_OK) {
		a->failures++;
		return NULL;
	}
	for (int i = 0; i < N_SIGNS; i++) {
		/* every fourth round also lists the objects, as a new client would */
		if (i % 4 == 0 || i == 0) {
			if (f->C_FindObjectsInit(s, t, 2) != CKR_OK || f->C_FindObjects(s, &k, 1, &n) != CKR_OK ||
			    n != 1 || f->C_FindObjectsFinal(s) != CKR_OK) {
				a->failures++;
				continue;
			}
			klass = CKO_PUBLIC_KEY;
			if (f->C_FindObjectsInit(s, t, 2) != CKR_OK || f->C_FindObjects(s, &pub, 1, &n) != CKR_OK ||
			    n != 1 || f->C_FindObjectsFinal(s) != CKR_OK ||
			    f->C_GetAttributeValue(s, pub, &pa, 1) != CKR_OK)
				a->failures++;
			klass = CKO_PRIVATE_KEY;
			memcpy(pk, point + 2, 32);
		}
		memset(msg, a->id, sizeof(msg));
		memcpy(msg, &i, sizeof(i));
		n = sizeof(sig);
		if (f->C_SignInit(s, &m, k) != CKR_OK || f->C_Sign(s, msg, sizeof(msg), sig, &n) != CKR_OK ||
		    sigil_ed25519_verify(sig, msg, sizeof(msg), pk, SIGIL_ED25519_STRICT) != 0)
			a->failures++;
	}
	if (f->C_CloseSession(s) != CKR_OK)
		a->failures++;
	return NULL;
}

static void test_threads(void **state)
{
	pthread_t th[N_THREADS];
	ThreadArg args[N_THREADS];
	CK_C_INITIALIZE_ARGS ia = { .flags = CKF_OS_LOCKING_OK };

	CK(f->C_Initialize(&ia));
	for (int i = 0; i < N_THREADS; i++) {
		args[i] = (ThreadArg){ .id = i };
		assert_int_equal(pthread_create(&th[i], NULL, signer, &args[i]), 0);
	}
	for (int i = 0; i < N_THREADS; i++) {
		assert_int_equal(pthread_join(th[i], NULL), 0);
		assert_int_equal(args[i].failures, 0);
	}
	CK(f->C_Finalize(NULL));
}

/* The child of fork() gets CKR_CRYPTOKI_NOT_INITIALIZED until it calls
 * C_Initialize, then works on its own connections; its C_Finalize does
 * not delete the parent's session key, and the parent carries on. */
static void test_fork(void **state)
{
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE k, pub, priv;
	CK_MECHANISM m = { CKM_EDDSA, NULL, 0 };
	CK_MECHANISM gen = { CKM_EC_EDWARDS_KEY_PAIR_GEN, NULL, 0 };
	CK_BBOOL no = CK_FALSE;
	CK_ATTRIBUTE eph[] = { { CKA_TOKEN, &no, 1 }, { CKA_LABEL, "parent-eph", 10 } };
	uint8_t sig[64];
	CK_ULONG n = 64;
	int st;
	pid_t pid;
	sigil_client *c = conn();

	CK(f->C_Initialize(NULL));
	s = open_session();
	k = find(s, "ed", CKO_PRIVATE_KEY);
	CK(f->C_GenerateKeyPair(s, &gen, eph, 2, NULL, 0, &pub, &priv));
	sign_one(s, k, &m, (const uint8_t *)"parent", 6, sig);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		CK_SESSION_HANDLE cs;
		int bad = 0;

		bad |= f->C_SignInit(s, &m, k) != CKR_CRYPTOKI_NOT_INITIALIZED;
		bad |= f->C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, &cs) != CKR_CRYPTOKI_NOT_INITIALIZED;
		bad |= f->C_Finalize(NULL) != CKR_CRYPTOKI_NOT_INITIALIZED;
		bad |= f->C_Initialize(NULL) != CKR_OK;
		bad |= f->C_OpenSession(0, CKF_SERIAL_SESSION, NULL, NULL, &cs) != CKR_OK;
		bad |= f->C_SignInit(cs, &m, find(cs, "ed", CKO_PRIVATE_KEY)) != CKR_OK;
		bad |= f->C_Sign(cs, (CK_BYTE_PTR) "child", 5, sig, &n) != CKR_OK;
		bad |= f->C_Finalize(NULL) != CKR_OK;
		sigil_client_free(c);
		_exit(bad ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(sigil_client_key_public(c, NULL, "parent-eph"), SIGIL_EOK);
	sign_one(s, k, &m, (const uint8_t *)"parent again", 12, sig);
	sign_one(s, priv, &m, (const uint8_t *)"eph", 3, sig);
	CK(f->C_Finalize(NULL));
	assert_int_equal(sigil_client_key_public(c, NULL, "parent-eph"), SIGIL_ENOT_FOUND);
	sigil_client_free(c);
}

/* sigild gone: CKR_DEVICE_REMOVED or CKR_TOKEN_NOT_PRESENT, never a crash;
 * runs last (it stops the daemon; the teardown finds it stopped). */
static void test_daemon_gone(void **state)
{
	CK_SESSION_HANDLE s;
	CK_OBJECT_HANDLE k;
	CK_MECHANISM m = { CKM_EDDSA, NULL, 0 };
	uint8_t sig[64];
	CK_ULONG n = 64;
	CK_TOKEN_INFO ti;
	CK_RV rv;

	CK(f->C_Initialize(NULL));
	s = open_session();
	k = find(s, "ed", CKO_PRIVATE_KEY);
	tc_daemon_stop(&daemon_);
	CK(f->C_SignInit(s, &m, k));
	rv = f->C_Sign(s, (CK_BYTE_PTR) "m", 1, sig, &n);
	assert_true(rv == CKR_DEVICE_REMOVED || rv == CKR_TOKEN_NOT_PRESENT);
	CKR(CKR_TOKEN_NOT_PRESENT, f->C_GetTokenInfo(0, &ti));
	CKR(CKR_TOKEN_NOT_PRESENT, f->C_FindObjectsInit(s, NULL, 0));
	CK(f->C_GetSlotList(CK_TRUE, NULL, &n));
	assert_int_equal(n, 0);
	CK(f->C_CloseSession(s));
	CK(f->C_Finalize(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_initialize),
		cmocka_unit_test(test_arguments_and_buffers),
		cmocka_unit_test(test_attributes),
		cmocka_unit_test(test_sign),
		cmocka_unit_test(test_derive_and_keygen),
		cmocka_unit_test(test_unsupported_and_bad_handles),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_daemon_gone),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
