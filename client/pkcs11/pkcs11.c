/* SPDX-License-Identifier: MIT */
/*
 * pkcs11.c - sigil-pkcs11.so, a PKCS #11 (Cryptoki 2.40 + 3.0 EdDSA) module on libsigil
 *
 * One slot with one token: the sigild that libsigil finds ($SIGIL_SOCK, as the
 * sigil command does). The token's objects are the keys the caller's uid may
 * see (key.list), each as a private-key and a public-key object, and the
 * secret keys that C_DeriveKey made in this process. The module holds no
 * secret of a sigild key: signing and X25519 happen in sigild. Derived secrets
 * live in this process (they are the caller's result) and are wiped when
 * their object goes.
 *
 * Locking: one mutex (g.lock) guards the module state (sessions, objects,
 * the pool of idle connections). It is never held across a call to sigild:
 * a call takes a connection out of the pool (or opens one), runs without the
 * lock, and puts it back, so threads sign in parallel on their own
 * connections. Fork: a pthread_atfork child handler marks the state as the
 * parent's; the child must call C_Initialize again, which drops that state
 * without touching sigild (the parent's session keys stay the parent's).
 * docs/pkcs11.md describes what maps to what.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

/* The C_* functions are the module's interface: declared visible. */
#pragma GCC visibility push(default)
#include "pkcs11-v3.h"
#pragma GCC visibility pop

#define SLOT_ID 0
#define SIG_LEN 64
#define MAX_MESSAGE (48u << 20) /* pure and ctx data kept for one request, as the sigil command */
#define POOL_MAX 8
#define LABEL_MAX SIGIL_CLIENT_LABEL_MAX

/* DER of the curves: the RFC 8410 OIDs, the PrintableStrings of PKCS #11 3.0
 * §2.3.5 and the older OIDs OpenSC and GnuPG use (1.3.6.1.4.1.11591.15.1,
 * 1.3.6.1.4.1.3029.1.5.1). The first of each list is what the module reports. */
static const uint8_t oid_ed25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x70 };
static const uint8_t oid_x25519[] = { 0x06, 0x03, 0x2b, 0x65, 0x6e };
static const uint8_t str_ed25519[] = { 0x13, 0x0c, 'e', 'd', 'w', 'a', 'r', 'd', 's', '2', '5', '5', '1', '9' };
static const uint8_t str_x25519[] = { 0x13, 0x0a, 'c', 'u', 'r', 'v', 'e', '2', '5', '5', '1', '9' };
static const uint8_t gpg_ed25519[] = { 0x06, 0x09, 0x2b, 0x06, 0x01, 0x04, 0x01, 0xda, 0x47, 0x0f, 0x01 };
static const uint8_t gpg_x25519[] = { 0x06, 0x0a, 0x2b, 0x06, 0x01, 0x04, 0x01, 0x97, 0x55, 0x01, 0x05, 0x01 };
/* OpenSC 0.23's pkcs11-tool --key-type EC:curve25519 sends this: the length
 * byte counts a NUL that is not there (its ec_curve_infos entry). */
static const uint8_t opensc_x25519[] = { 0x13, 0x0b, 'c', 'u', 'r', 'v', 'e', '2', '5', '5', '1', '9' };

typedef struct Object {
	CK_OBJECT_HANDLE handle;
	CK_OBJECT_CLASS klass;  /* CKO_PRIVATE_KEY, CKO_PUBLIC_KEY, CKO_SECRET_KEY */
	CK_KEY_TYPE key_type;   /* CKK_EC_EDWARDS, CKK_EC_MONTGOMERY, or the secret's */
	char label[LABEL_MAX + 1];
	size_t label_len;
	uint8_t id[LABEL_MAX];
	size_t id_len;
	uint8_t pk[32];
	bool exportable;
	CK_SESSION_HANDLE session; /* 0: a token object; else the session that made it */
	bool seen;
	/* CKO_SECRET_KEY only (secret: wiped with the object) */
	uint8_t value[32];
	size_t value_len;
	bool sensitive, extractable;
} Object;

typedef struct Op {
	bool active;
	bool ph;               /* Ed25519ph: hashed here, sent as SIGIL_SIGN_PREHASHED */
	bool update;           /* C_*Update was called */
	sigil_sign_mode mode;  /* PURE or CTX when !ph */
	char label[LABEL_MAX + 1];
	uint8_t pk[32];
	uint8_t ctx[255];
	size_t ctx_len;
	uint8_t *buf;          /* pure/ctx data of C_*Update */
	size_t len, cap;
	sigil_sha512_ctx sha;
} Op;

typedef struct Session {
	CK_SESSION_HANDLE handle;
	CK_FLAGS flags;
	bool find_active;
	CK_OBJECT_HANDLE *found;
	size_t n_found, pos;
	Op sign, verify;
} Session;

static struct {
	pthread_mutex_t lock;
	bool initialized;
	bool logged_in;
	Object *objs;
	size_t n_objs;
	Session *sessions;
	size_t n_sessions;
	CK_OBJECT_HANDLE next_object;
	CK_SESSION_HANDLE next_session;
	sigil_client *pool[POOL_MAX];
	size_t n_pool;
} g = { .lock = PTHREAD_MUTEX_INITIALIZER };

static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;

/* ---- helpers ---- */

static void pad_copy(CK_UTF8CHAR *dst, size_t n, const char *src)
{
	size_t l = strlen(src);

	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

static bool label_valid(const char *s, size_t n)
{
	if (n == 0 || n > LABEL_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._@+-", c)))
			return false;
	}
	return true;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* CKA_ID: the first 16 bytes of the SHA-256 in sigild's fingerprint
 * ("SHA256:" + unpadded base64; public data). Without one: the first 16
 * bytes of the public key. */
static void key_id(uint8_t id[16], const sigil_key_info *k)
{
	const char *p = k->fingerprint;
	uint32_t acc = 0;
	int bits = 0;
	size_t n = 0;

	if (strncmp(p, "SHA256:", 7) != 0) {
		memcpy(id, k->public_key, 16);
		return;
	}
	for (p += 7; *p && n < 16; p++) {
		int v = b64val(*p);
		if (v < 0)
			break;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			id[n++] = (uint8_t)(acc >> bits);
		}
	}
	if (n < 16)
		memcpy(id, k->public_key, 16);
}

static bool is_transport(sigil_error e)
{
	return e == SIGIL_ECONNECT || e == SIGIL_ETIMEOUT || e == SIGIL_EIO || e == SIGIL_EPROTO ||
	       e == SIGIL_EDENIED || e == SIGIL_EBUSY || e == SIGIL_ETOO_LARGE;
}

/* libsigil's error as a CK_RV; denied_rv is what `denied` means for this call. */
static CK_RV rv_from(sigil_error e, CK_RV denied_rv)
{
	switch (e) {
	case SIGIL_EOK: return CKR_OK;
	case SIGIL_ECONNECT: return CKR_TOKEN_NOT_PRESENT;
	case SIGIL_EIO: return CKR_DEVICE_REMOVED;
	case SIGIL_ETIMEOUT:
	case SIGIL_EPROTO: return CKR_DEVICE_ERROR;
	case SIGIL_ENOMEM: return CKR_HOST_MEMORY;
	case SIGIL_EINVAL: return CKR_ARGUMENTS_BAD;
	case SIGIL_ENOT_FOUND: return CKR_KEY_HANDLE_INVALID;
	case SIGIL_ELOCKED: return CKR_USER_NOT_LOGGED_IN;
	case SIGIL_EDENIED: return denied_rv;
	case SIGIL_ETOO_LARGE: return CKR_DATA_LEN_RANGE;
	case SIGIL_EWRONG_TYPE: return CKR_KEY_TYPE_INCONSISTENT;
	case SIGIL_EEXISTS: return CKR_ATTRIBUTE_VALUE_INVALID;
	case SIGIL_EINVALID_KEY: return CKR_MECHANISM_PARAM_INVALID;
	case SIGIL_EBUSY:
	case SIGIL_EBAD_REQUEST:
	case SIGIL_EUNKNOWN_METHOD: return CKR_FUNCTION_FAILED;
	default: return CKR_DEVICE_ERROR;
	}
}

/* ---- connections: a pool of idle ones, used without the lock ---- */

static CK_RV conn_get(sigil_client **cp)
{
	sigil_client *c = NULL;
	sigil_error e;

	pthread_mutex_lock(&g.lock);
	if (g.n_pool)
		c = g.pool[--g.n_pool];
	pthread_mutex_unlock(&g.lock);
	if (c) {
		*cp = c;
		return CKR_OK;
	}
	e = sigil_client_connect(&c, NULL, 0);
	if (e != SIGIL_EOK) {
		sigil_client_free(c);
		return e == SIGIL_ENOMEM ? CKR_HOST_MEMORY : CKR_TOKEN_NOT_PRESENT;
	}
	*cp = c;
	return CKR_OK;
}

/* Back to the pool, or freed after an error that ends the connection. */
static void conn_put(sigil_client *c, sigil_error e)
{
	if (!c)
		return;
	if (!is_transport(e)) {
		pthread_mutex_lock(&g.lock);
		if (g.initialized && g.n_pool < POOL_MAX) {
			g.pool[g.n_pool++] = c;
			c = NULL;
		}
		pthread_mutex_unlock(&g.lock);
	}
	sigil_client_free(c);
}

/* ---- state (g.lock held) ---- */

static Session *session_find(CK_SESSION_HANDLE h)
{
	for (size_t i = 0; i < g.n_sessions; i++)
		if (g.sessions[i].handle == h)
			return &g.sessions[i];
	return NULL;
}

static Object *object_find(CK_OBJECT_HANDLE h)
{
	for (size_t i = 0; i < g.n_objs; i++)
		if (g.objs[i].handle == h)
			return &g.objs[i];
	return NULL;
}

static Object *object_add(void)
{
	Object *o;

	if (g.n_objs % 16 == 0) {
		/* not realloc: the table holds derived secrets, wiped before free */
		Object *n = malloc((g.n_objs + 16) * sizeof(*n));
		if (!n)
			return NULL;
		if (g.objs) {
			memcpy(n, g.objs, g.n_objs * sizeof(*n));
			sigil_wipe(g.objs, g.n_objs * sizeof(*n));
			free(g.objs);
		}
		g.objs = n;
	}
	o = &g.objs[g.n_objs++];
	memset(o, 0, sizeof(*o));
	o->handle = g.next_object++;
	return o;
}

static void object_remove(Object *o)
{
	size_t i = (size_t)(o - g.objs);

	memmove(o, o + 1, (g.n_objs - i - 1) * sizeof(*o));
	g.n_objs--;
	sigil_wipe(&g.objs[g.n_objs], sizeof(*o)); /* the slot left behind */
}

static void op_reset(Op *op)
{
	if (op->buf) {
		sigil_wipe(op->buf, op->cap);
		free(op->buf);
	}
	sigil_wipe(op, sizeof(*op));
}

static void session_clear(Session *s)
{
	free(s->found);
	op_reset(&s->sign);
	op_reset(&s->verify);
}

/* Adds the key pair objects of k (a token key unless session is set). */
static CK_RV keypair_add(const sigil_key_info *k, CK_SESSION_HANDLE session, CK_OBJECT_HANDLE *privp,
                         CK_OBJECT_HANDLE *pubp)
{
	CK_OBJECT_CLASS classes[2] = { CKO_PRIVATE_KEY, CKO_PUBLIC_KEY };

	for (int i = 0; i < 2; i++) {
		Object *o = object_add();
		if (!o)
			return CKR_HOST_MEMORY;
		o->klass = classes[i];
		o->key_type = k->type == SIGIL_KEY_ED25519 ? CKK_EC_EDWARDS : CKK_EC_MONTGOMERY;
		o->label_len = strlen(k->label);
		memcpy(o->label, k->label, o->label_len + 1);
		key_id(o->id, k);
		o->id_len = 16;
		memcpy(o->pk, k->public_key, 32);
		o->exportable = k->exportable != 0;
		o->session = session;
		o->seen = true;
		if (i == 0 && privp)
			*privp = o->handle;
		if (i == 1 && pubp)
			*pubp = o->handle;
	}
	return CKR_OK;
}

/* The token's key objects from key.list: keys seen before keep their
 * handles, keys gone lose theirs. */
static CK_RV objects_refresh(void)
{
	sigil_client *c;
	sigil_key_info *keys = NULL;
	size_t n = 0;
	sigil_error e;
	CK_RV rv = conn_get(&c);

	if (rv != CKR_OK)
		return rv;
	e = sigil_client_key_list(c, &keys, &n);
	conn_put(c, e);
	if (e != SIGIL_EOK)
		return rv_from(e, CKR_FUNCTION_REJECTED);
	pthread_mutex_lock(&g.lock);
	for (size_t i = 0; i < g.n_objs; i++)
		if (g.objs[i].klass != CKO_SECRET_KEY)
			g.objs[i].seen = false;
	for (size_t k = 0; k < n && rv == CKR_OK; k++) {
		bool found = false;
		for (size_t i = 0; i < g.n_objs; i++) {
			Object *o = &g.objs[i];
			if (o->klass != CKO_SECRET_KEY && strcmp(o->label, keys[k].label) == 0 &&
			    memcmp(o->pk, keys[k].public_key, 32) == 0) {
				o->seen = true;
				found = true;
			}
		}
		if (!found)
			rv = keypair_add(&keys[k], 0, NULL, NULL);
	}
	for (size_t i = g.n_objs; i-- > 0;)
		if (!g.objs[i].seen)
			object_remove(&g.objs[i]);
	pthread_mutex_unlock(&g.lock);
	free(keys);
	return rv;
}

/* Deletes the labels in sigild (session keys), then frees the list. */
static void labels_delete(char (*labels)[LABEL_MAX + 1], size_t n)
{
	sigil_client *c = NULL;
	sigil_error e = SIGIL_EOK;

	if (n && conn_get(&c) == CKR_OK) {
		for (size_t i = 0; i < n && !is_transport(e); i++)
			e = sigil_client_key_delete(c, labels[i]);
		conn_put(c, e);
	}
	free(labels);
}

/* Takes the objects that belong to session h (0: all session objects) out
 * of the table; returns the labels of its sigild keys in *labelsp. */
static size_t session_objects_take(CK_SESSION_HANDLE h, char (**labelsp)[LABEL_MAX + 1])
{
	char (*labels)[LABEL_MAX + 1] = NULL;
	size_t n = 0;

	labels = malloc((g.n_objs + 1) * sizeof(*labels));
	for (size_t i = g.n_objs; i-- > 0;) {
		Object *o = &g.objs[i];
		if (!o->session || (h && o->session != h))
			continue;
		if (o->klass == CKO_PRIVATE_KEY && labels)
			memcpy(labels[n++], o->label, sizeof(labels[0]));
		object_remove(o);
	}
	*labelsp = labels;
	return n;
}

static void state_free(void)
{
	for (size_t i = 0; i < g.n_sessions; i++)
		session_clear(&g.sessions[i]);
	free(g.sessions);
	g.sessions = NULL;
	g.n_sessions = 0;
	if (g.objs)
		sigil_wipe(g.objs, g.n_objs * sizeof(*g.objs));
	free(g.objs);
	g.objs = NULL;
	g.n_objs = 0;
	for (size_t i = 0; i < g.n_pool; i++)
		sigil_client_free(g.pool[i]);
	g.n_pool = 0;
	g.logged_in = false;
}

/* In a child after fork(): the state is the parent's. The lock may have
 * been held by another thread of the parent: a new one. */
static void atfork_child(void)
{
	pthread_mutex_init(&g.lock, NULL);
	if (g.initialized) {
		g.initialized = false;
		/* the child's C_Initialize drops the parent's state (state_free)
		 * and deletes nothing in sigild */
		for (size_t i = 0; i < g.n_objs; i++)
			g.objs[i].session = 0;
	}
}

static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

/* Locks and finds the session; on success the lock is held. */
static CK_RV session_lock(CK_SESSION_HANDLE h, Session **sp)
{
	pthread_mutex_lock(&g.lock);
	if (!g.initialized) {
		pthread_mutex_unlock(&g.lock);
		return CKR_CRYPTOKI_NOT_INITIALIZED;
	}
	*sp = session_find(h);
	if (!*sp) {
		pthread_mutex_unlock(&g.lock);
		return CKR_SESSION_HANDLE_INVALID;
	}
	return CKR_OK;
}

static CK_RV check_init(void)
{
	bool ok;

	pthread_mutex_lock(&g.lock);
	ok = g.initialized;
	pthread_mutex_unlock(&g.lock);
	return ok ? CKR_OK : CKR_CRYPTOKI_NOT_INITIALIZED;
}

/* ---- attributes ---- */

static CK_BBOOL bb(bool v)
{
	return v ? CK_TRUE : CK_FALSE;
}

/* The value of attribute t of o in vp and lenp (scratch holds small values). */
static CK_RV attr_get(const Object *o, CK_ATTRIBUTE_TYPE t, uint8_t scratch[40], const void **vp,
                      CK_ULONG *lenp)
{
	bool priv = o->klass == CKO_PRIVATE_KEY, pub = o->klass == CKO_PUBLIC_KEY;
	bool secret = o->klass == CKO_SECRET_KEY, ed = o->key_type == CKK_EC_EDWARDS;
	bool x = !secret && o->key_type == CKK_EC_MONTGOMERY;
	CK_BBOOL b;
	CK_ULONG u;

	switch (t) {
	case CKA_CLASS: u = o->klass; goto ulong;
	case CKA_KEY_TYPE: u = o->key_type; goto ulong;
	case CKA_LABEL: *vp = o->label; *lenp = o->label_len; return CKR_OK;
	case CKA_ID: *vp = o->id; *lenp = o->id_len; return CKR_OK;
	case CKA_TOKEN: b = bb(!o->session); goto bbool;
	case CKA_PRIVATE: b = CK_FALSE; goto bbool;
	case CKA_MODIFIABLE: b = CK_FALSE; goto bbool;
	case CKA_COPYABLE: b = CK_FALSE; goto bbool;
	case CKA_DESTROYABLE: b = CK_TRUE; goto bbool;
	case CKA_LOCAL: b = CK_FALSE; goto bbool;
	case CKA_KEY_GEN_MECHANISM: u = CK_UNAVAILABLE_INFORMATION; goto ulong;
	case CKA_START_DATE:
	case CKA_END_DATE: *vp = scratch; *lenp = 0; return CKR_OK;
	case CKA_DERIVE: b = bb(priv && x); goto bbool;
	case CKA_SUBJECT:
		if (secret)
			break;
		*vp = scratch;
		*lenp = 0;
		return CKR_OK;
	case CKA_EC_PARAMS:
		if (secret)
			break;
		*vp = ed ? oid_ed25519 : oid_x25519;
		*lenp = ed ? sizeof(oid_ed25519) : sizeof(oid_x25519);
		return CKR_OK;
	case CKA_EC_POINT:
		if (secret)
			break;
		scratch[0] = 0x04;
		scratch[1] = 32;
		memcpy(scratch + 2, o->pk, 32);
		*vp = scratch;
		*lenp = 34;
		return CKR_OK;
	case CKA_SIGN: b = bb(priv && ed); goto bbool;
	case CKA_VERIFY: b = bb(pub && ed); goto bbool;
	case CKA_ENCRYPT:
	case CKA_WRAP:
	case CKA_VERIFY_RECOVER:
		if (priv)
			break;
		b = CK_FALSE;
		goto bbool;
	case CKA_DECRYPT:
	case CKA_UNWRAP:
	case CKA_SIGN_RECOVER:
		if (pub)
			break;
		b = CK_FALSE;
		goto bbool;
	case CKA_TRUSTED:
		if (priv)
			break;
		b = CK_FALSE;
		goto bbool;
	case CKA_SENSITIVE:
	case CKA_ALWAYS_SENSITIVE:
		if (pub)
			break;
		b = bb(priv || o->sensitive);
		goto bbool;
	case CKA_EXTRACTABLE:
		if (pub)
			break;
		b = bb(secret && o->extractable);
		goto bbool;
	case CKA_NEVER_EXTRACTABLE:
		if (pub)
			break;
		b = bb(priv ? !o->exportable : !o->extractable);
		goto bbool;
	case CKA_ALWAYS_AUTHENTICATE:
	case CKA_WRAP_WITH_TRUSTED:
		if (pub)
			break;
		b = CK_FALSE;
		goto bbool;
	case CKA_VALUE:
		if (pub)
			break;
		if (priv || o->sensitive || !o->extractable)
			return CKR_ATTRIBUTE_SENSITIVE;
		*vp = o->value;
		*lenp = o->value_len;
		return CKR_OK;
	case CKA_VALUE_LEN:
		if (!secret)
			break;
		u = o->value_len;
		goto ulong;
	default:
		break;
	}
	return CKR_ATTRIBUTE_TYPE_INVALID;
ulong:
	memcpy(scratch, &u, sizeof(u));
	*vp = scratch;
	*lenp = sizeof(u);
	return CKR_OK;
bbool:
	scratch[0] = b;
	*vp = scratch;
	*lenp = 1;
	return CKR_OK;
}

static bool curve_is(const void *v, CK_ULONG n, bool ed)
{
	static const struct {
		const uint8_t *der;
		size_t len;
		bool ed;
	} curves[] = {
		{ oid_ed25519, sizeof(oid_ed25519), true },   { str_ed25519, sizeof(str_ed25519), true },
		{ gpg_ed25519, sizeof(gpg_ed25519), true },   { oid_x25519, sizeof(oid_x25519), false },
		{ str_x25519, sizeof(str_x25519), false },    { gpg_x25519, sizeof(gpg_x25519), false },
		{ opensc_x25519, sizeof(opensc_x25519), false },
	};

	for (size_t i = 0; i < sizeof(curves) / sizeof(curves[0]); i++)
		if (v && curves[i].ed == ed && n == curves[i].len && memcmp(v, curves[i].der, n) == 0)
			return true;
	return false;
}

static bool object_matches(const Object *o, const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
	for (CK_ULONG i = 0; i < n; i++) {
		uint8_t scratch[40];
		const void *v;
		CK_ULONG len;

		if (tmpl[i].type == CKA_EC_PARAMS && o->klass != CKO_SECRET_KEY) {
			if (!curve_is(tmpl[i].pValue, tmpl[i].ulValueLen, o->key_type == CKK_EC_EDWARDS))
				return false;
			continue;
		}
		if (attr_get(o, tmpl[i].type, scratch, &v, &len) != CKR_OK)
			return false;
		if (len != tmpl[i].ulValueLen || (len && memcmp(v, tmpl[i].pValue, len) != 0))
			return false;
	}
	return true;
}

/* ---- general purpose ---- */

CK_RV C_Initialize(CK_VOID_PTR pInitArgs)
{
	CK_C_INITIALIZE_ARGS *a = pInitArgs;

	if (a) {
		bool some = a->CreateMutex || a->DestroyMutex || a->LockMutex || a->UnlockMutex;
		bool all = a->CreateMutex && a->DestroyMutex && a->LockMutex && a->UnlockMutex;
		if (a->pReserved || (some && !all))
			return CKR_ARGUMENTS_BAD;
		/* the application's mutexes are not used: only OS locking */
		if (all && !(a->flags & CKF_OS_LOCKING_OK))
			return CKR_CANT_LOCK;
	}
	pthread_once(&atfork_once, atfork_register);
	pthread_mutex_lock(&g.lock);
	if (g.initialized) {
		pthread_mutex_unlock(&g.lock);
		return CKR_CRYPTOKI_ALREADY_INITIALIZED;
	}
	state_free(); /* a forked child's copy of the parent's state */
	g.initialized = true;
	g.next_object = 1;
	g.next_session = 1;
	pthread_mutex_unlock(&g.lock);
	return CKR_OK;
}

CK_RV C_Finalize(CK_VOID_PTR pReserved)
{
	char (*labels)[LABEL_MAX + 1];
	size_t n;

	if (pReserved)
		return CKR_ARGUMENTS_BAD;
	pthread_mutex_lock(&g.lock);
	if (!g.initialized) {
		pthread_mutex_unlock(&g.lock);
		return CKR_CRYPTOKI_NOT_INITIALIZED;
	}
	n = session_objects_take(0, &labels);
	pthread_mutex_unlock(&g.lock);
	labels_delete(labels, n);
	pthread_mutex_lock(&g.lock);
	g.initialized = false;
	state_free();
	pthread_mutex_unlock(&g.lock);
	return CKR_OK;
}

CK_RV C_GetInfo(CK_INFO_PTR pInfo)
{
	CK_RV rv = check_init();

	if (rv != CKR_OK)
		return rv;
	if (!pInfo)
		return CKR_ARGUMENTS_BAD;
	memset(pInfo, 0, sizeof(*pInfo));
	pInfo->cryptokiVersion.major = 2;
	pInfo->cryptokiVersion.minor = 40;
	pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "sigil");
	pad_copy(pInfo->libraryDescription, sizeof(pInfo->libraryDescription), "sigil PKCS#11 module");
	pInfo->libraryVersion.major = 0;
	pInfo->libraryVersion.minor = 1;
	return CKR_OK;
}

static CK_FUNCTION_LIST function_list;

CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ppFunctionList)
{
	if (!ppFunctionList)
		return CKR_ARGUMENTS_BAD;
	*ppFunctionList = &function_list;
	return CKR_OK;
}

/* ---- slot and token ---- */

/* Whether sigild answers (a connection from the pool, or a new one). */
static bool token_present(void)
{
	sigil_client *c;

	if (conn_get(&c) != CKR_OK)
		return false;
	conn_put(c, SIGIL_EOK);
	return true;
}

CK_RV C_GetSlotList(CK_BBOOL tokenPresent, CK_SLOT_ID_PTR pSlotList, CK_ULONG_PTR pulCount)
{
	CK_RV rv = check_init();
	CK_ULONG n;

	if (rv != CKR_OK)
		return rv;
	if (!pulCount)
		return CKR_ARGUMENTS_BAD;
	n = tokenPresent && !token_present() ? 0 : 1;
	if (!pSlotList) {
		*pulCount = n;
		return CKR_OK;
	}
	if (*pulCount < n) {
		*pulCount = n;
		return CKR_BUFFER_TOO_SMALL;
	}
	if (n)
		pSlotList[0] = SLOT_ID;
	*pulCount = n;
	return CKR_OK;
}

CK_RV C_GetSlotInfo(CK_SLOT_ID slotID, CK_SLOT_INFO_PTR pInfo)
{
	CK_RV rv = check_init();
	char path[256];

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	if (!pInfo)
		return CKR_ARGUMENTS_BAD;
	memset(pInfo, 0, sizeof(*pInfo));
	if (sigil_client_socket_path(path, sizeof(path)) != 0)
		strcpy(path, "(no socket)");
	pad_copy(pInfo->slotDescription, sizeof(pInfo->slotDescription), path);
	pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "sigil");
	pInfo->flags = CKF_REMOVABLE_DEVICE | (token_present() ? CKF_TOKEN_PRESENT : 0);
	pInfo->hardwareVersion.major = 0;
	pInfo->firmwareVersion.minor = 1;
	return CKR_OK;
}

CK_RV C_GetTokenInfo(CK_SLOT_ID slotID, CK_TOKEN_INFO_PTR pInfo)
{
	CK_RV rv = check_init();
	sigil_client *c;
	sigil_status st;
	sigil_error e;
	char path[256] = "", serial[17];
	uint64_t h = 14695981039346656037ull; /* FNV-1a of the socket path */

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	if (!pInfo)
		return CKR_ARGUMENTS_BAD;
	rv = conn_get(&c);
	if (rv != CKR_OK)
		return rv;
	e = sigil_client_status(c, &st);
	conn_put(c, e);
	if (e != SIGIL_EOK)
		return e == SIGIL_EIO ? CKR_TOKEN_NOT_PRESENT : rv_from(e, CKR_FUNCTION_FAILED);
	memset(pInfo, 0, sizeof(*pInfo));
	pad_copy(pInfo->label, sizeof(pInfo->label), "sigil");
	pad_copy(pInfo->manufacturerID, sizeof(pInfo->manufacturerID), "sigil");
	pad_copy(pInfo->model, sizeof(pInfo->model), "sigild");
	sigil_client_socket_path(path, sizeof(path));
	for (const char *p = path; *p; p++)
		h = (h ^ (uint8_t)*p) * 1099511628211ull;
	for (int i = 0; i < 16; i++)
		serial[i] = "0123456789abcdef"[(h >> (60 - 4 * i)) & 15];
	serial[16] = 0;
	pad_copy(pInfo->serialNumber, sizeof(pInfo->serialNumber), serial);
	pInfo->flags = CKF_RNG | CKF_TOKEN_INITIALIZED | CKF_USER_PIN_INITIALIZED |
	               (st.locked ? CKF_LOGIN_REQUIRED : 0);
	pInfo->ulMaxSessionCount = CK_EFFECTIVELY_INFINITE;
	pInfo->ulMaxRwSessionCount = CK_EFFECTIVELY_INFINITE;
	pthread_mutex_lock(&g.lock);
	pInfo->ulSessionCount = g.n_sessions;
	pInfo->ulRwSessionCount = 0;
	for (size_t i = 0; i < g.n_sessions; i++)
		if (g.sessions[i].flags & CKF_RW_SESSION)
			pInfo->ulRwSessionCount++;
	pthread_mutex_unlock(&g.lock);
	pInfo->ulMaxPinLen = 1024;
	pInfo->ulMinPinLen = 1;
	pInfo->ulTotalPublicMemory = CK_UNAVAILABLE_INFORMATION;
	pInfo->ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
	pInfo->ulTotalPrivateMemory = CK_UNAVAILABLE_INFORMATION;
	pInfo->ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
	pInfo->firmwareVersion.minor = 1;
	return CKR_OK;
}

static const struct {
	CK_MECHANISM_TYPE type;
	CK_FLAGS flags;
} mechanisms[] = {
	{ CKM_EDDSA, CKF_SIGN | CKF_VERIFY },
	{ CKM_EC_EDWARDS_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR },
	{ CKM_EC_MONTGOMERY_KEY_PAIR_GEN, CKF_GENERATE_KEY_PAIR },
	{ CKM_ECDH1_DERIVE, CKF_DERIVE },
};
#define N_MECHANISMS (sizeof(mechanisms) / sizeof(mechanisms[0]))

CK_RV C_GetMechanismList(CK_SLOT_ID slotID, CK_MECHANISM_TYPE_PTR pMechanismList, CK_ULONG_PTR pulCount)
{
	CK_RV rv = check_init();

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	if (!pulCount)
		return CKR_ARGUMENTS_BAD;
	if (!pMechanismList) {
		*pulCount = N_MECHANISMS;
		return CKR_OK;
	}
	if (*pulCount < N_MECHANISMS) {
		*pulCount = N_MECHANISMS;
		return CKR_BUFFER_TOO_SMALL;
	}
	for (size_t i = 0; i < N_MECHANISMS; i++)
		pMechanismList[i] = mechanisms[i].type;
	*pulCount = N_MECHANISMS;
	return CKR_OK;
}

CK_RV C_GetMechanismInfo(CK_SLOT_ID slotID, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR pInfo)
{
	CK_RV rv = check_init();

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	if (!pInfo)
		return CKR_ARGUMENTS_BAD;
	for (size_t i = 0; i < N_MECHANISMS; i++) {
		if (mechanisms[i].type == type) {
			pInfo->ulMinKeySize = 255;
			pInfo->ulMaxKeySize = 255;
			pInfo->flags = mechanisms[i].flags;
			return CKR_OK;
		}
	}
	return CKR_MECHANISM_INVALID;
}

CK_RV C_InitToken(CK_SLOT_ID slotID, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen, CK_UTF8CHAR_PTR pLabel)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_InitPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_SetPIN(CK_SESSION_HANDLE hSession, CK_UTF8CHAR_PTR pOldPin, CK_ULONG ulOldLen, CK_UTF8CHAR_PTR pNewPin,
               CK_ULONG ulNewLen)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_WaitForSlotEvent(CK_FLAGS flags, CK_SLOT_ID_PTR pSlot, CK_VOID_PTR pReserved)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

/* ---- sessions ---- */

CK_RV C_OpenSession(CK_SLOT_ID slotID, CK_FLAGS flags, CK_VOID_PTR pApplication, CK_NOTIFY Notify,
                    CK_SESSION_HANDLE_PTR phSession)
{
	CK_RV rv = check_init();
	Session *s;

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	if (!phSession)
		return CKR_ARGUMENTS_BAD;
	if (!(flags & CKF_SERIAL_SESSION))
		return CKR_SESSION_PARALLEL_NOT_SUPPORTED;
	if (!token_present())
		return CKR_TOKEN_NOT_PRESENT;
	pthread_mutex_lock(&g.lock);
	if (!g.initialized) {
		pthread_mutex_unlock(&g.lock);
		return CKR_CRYPTOKI_NOT_INITIALIZED;
	}
	if (g.n_sessions % 16 == 0) {
		Session *n = realloc(g.sessions, (g.n_sessions + 16) * sizeof(*n));
		if (!n) {
			pthread_mutex_unlock(&g.lock);
			return CKR_HOST_MEMORY;
		}
		g.sessions = n;
	}
	s = &g.sessions[g.n_sessions++];
	memset(s, 0, sizeof(*s));
	s->handle = g.next_session++;
	s->flags = flags & (CKF_SERIAL_SESSION | CKF_RW_SESSION);
	*phSession = s->handle;
	pthread_mutex_unlock(&g.lock);
	return CKR_OK;
}

CK_RV C_CloseSession(CK_SESSION_HANDLE hSession)
{
	Session *s;
	char (*labels)[LABEL_MAX + 1];
	size_t n;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	session_clear(s);
	memmove(s, s + 1, (g.n_sessions - (size_t)(s - g.sessions) - 1) * sizeof(*s));
	g.n_sessions--;
	if (!g.n_sessions)
		g.logged_in = false;
	n = session_objects_take(hSession, &labels);
	pthread_mutex_unlock(&g.lock);
	labels_delete(labels, n);
	return CKR_OK;
}

CK_RV C_CloseAllSessions(CK_SLOT_ID slotID)
{
	CK_RV rv = check_init();

	if (rv != CKR_OK)
		return rv;
	if (slotID != SLOT_ID)
		return CKR_SLOT_ID_INVALID;
	for (;;) {
		CK_SESSION_HANDLE h;
		pthread_mutex_lock(&g.lock);
		if (!g.n_sessions) {
			pthread_mutex_unlock(&g.lock);
			return CKR_OK;
		}
		h = g.sessions[0].handle;
		pthread_mutex_unlock(&g.lock);
		C_CloseSession(h);
	}
}

CK_RV C_GetSessionInfo(CK_SESSION_HANDLE hSession, CK_SESSION_INFO_PTR pInfo)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (pInfo) {
		bool rw = s->flags & CKF_RW_SESSION;
		pInfo->slotID = SLOT_ID;
		pInfo->flags = s->flags;
		pInfo->ulDeviceError = 0;
		pInfo->state = g.logged_in ? (rw ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS)
		                           : (rw ? CKS_RW_PUBLIC_SESSION : CKS_RO_PUBLIC_SESSION);
	}
	pthread_mutex_unlock(&g.lock);
	return pInfo ? CKR_OK : CKR_ARGUMENTS_BAD;
}

CK_RV C_GetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState, CK_ULONG_PTR pulOperationStateLen)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_SetOperationState(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pOperationState, CK_ULONG ulOperationStateLen,
                          CK_OBJECT_HANDLE hEncryptionKey, CK_OBJECT_HANDLE hAuthenticationKey)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

/* C_Login(CKU_USER) unlocks sigild with the PIN as its passphrase (sigild
 * checks it even when unlocked). Logout changes nothing in sigild. */
CK_RV C_Login(CK_SESSION_HANDLE hSession, CK_USER_TYPE userType, CK_UTF8CHAR_PTR pPin, CK_ULONG ulPinLen)
{
	Session *s;
	sigil_client *c;
	sigil_error e;
	char *pin;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (userType != CKU_USER) {
		pthread_mutex_unlock(&g.lock);
		return CKR_USER_TYPE_INVALID; /* CKU_SO, CKU_CONTEXT_SPECIFIC: sigild has neither */
	}
	if (g.logged_in) {
		pthread_mutex_unlock(&g.lock);
		return CKR_USER_ALREADY_LOGGED_IN;
	}
	pthread_mutex_unlock(&g.lock);
	if (!pPin || ulPinLen == 0 || ulPinLen > 1024)
		return pPin || ulPinLen ? CKR_PIN_LEN_RANGE : CKR_ARGUMENTS_BAD;
	if (memchr(pPin, 0, ulPinLen))
		return CKR_PIN_INCORRECT;
	pin = malloc(ulPinLen + 1);
	if (!pin)
		return CKR_HOST_MEMORY;
	memcpy(pin, pPin, ulPinLen);
	pin[ulPinLen] = 0;
	rv = conn_get(&c);
	if (rv == CKR_OK) {
		e = sigil_client_unlock(c, pin);
		conn_put(c, e);
		rv = rv_from(e, CKR_PIN_INCORRECT);
	}
	sigil_wipe(pin, ulPinLen + 1);
	free(pin);
	if (rv == CKR_OK) {
		pthread_mutex_lock(&g.lock);
		g.logged_in = true;
		pthread_mutex_unlock(&g.lock);
	}
	return rv;
}

CK_RV C_Logout(CK_SESSION_HANDLE hSession)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	rv = g.logged_in ? CKR_OK : CKR_USER_NOT_LOGGED_IN;
	g.logged_in = false;
	pthread_mutex_unlock(&g.lock);
	return rv;
}

/* ---- objects ---- */

CK_RV C_CreateObject(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount,
                     CK_OBJECT_HANDLE_PTR phObject)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_CopyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,
                   CK_ULONG ulCount, CK_OBJECT_HANDLE_PTR phNewObject)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

/* A token key is deleted in sigild (with both its objects); a session
 * secret only here. */
CK_RV C_DestroyObject(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject)
{
	Session *s;
	Object *o;
	char label[LABEL_MAX + 1];
	uint8_t pk[32];
	sigil_client *c;
	sigil_error e;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	o = object_find(hObject);
	if (!o) {
		pthread_mutex_unlock(&g.lock);
		return CKR_OBJECT_HANDLE_INVALID;
	}
	if (o->klass == CKO_SECRET_KEY) {
		object_remove(o);
		pthread_mutex_unlock(&g.lock);
		return CKR_OK;
	}
	if (!o->session && !(s->flags & CKF_RW_SESSION)) {
		pthread_mutex_unlock(&g.lock);
		return CKR_SESSION_READ_ONLY;
	}
	memcpy(label, o->label, sizeof(label));
	memcpy(pk, o->pk, 32);
	pthread_mutex_unlock(&g.lock);
	rv = conn_get(&c);
	if (rv != CKR_OK)
		return rv;
	e = sigil_client_key_delete(c, label);
	conn_put(c, e);
	/* not_found: gone already; its objects go too */
	if (e != SIGIL_EOK && e != SIGIL_ENOT_FOUND)
		return rv_from(e, CKR_ACTION_PROHIBITED);
	pthread_mutex_lock(&g.lock);
	for (size_t i = g.n_objs; i-- > 0;)
		if (g.objs[i].klass != CKO_SECRET_KEY && strcmp(g.objs[i].label, label) == 0 &&
		    memcmp(g.objs[i].pk, pk, 32) == 0)
			object_remove(&g.objs[i]);
	pthread_mutex_unlock(&g.lock);
	return e == SIGIL_ENOT_FOUND ? CKR_OBJECT_HANDLE_INVALID : CKR_OK;
}

CK_RV C_GetObjectSize(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ULONG_PTR pulSize)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	rv = object_find(hObject) ? CKR_OK : CKR_OBJECT_HANDLE_INVALID;
	pthread_mutex_unlock(&g.lock);
	if (rv == CKR_OK && !pulSize)
		return CKR_ARGUMENTS_BAD;
	if (rv == CKR_OK)
		*pulSize = CK_UNAVAILABLE_INFORMATION;
	return rv;
}

CK_RV C_GetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,
                          CK_ULONG ulCount)
{
	Session *s;
	Object *o;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	o = object_find(hObject);
	if (!o || (!pTemplate && ulCount)) {
		pthread_mutex_unlock(&g.lock);
		return o ? CKR_ARGUMENTS_BAD : CKR_OBJECT_HANDLE_INVALID;
	}
	for (CK_ULONG i = 0; i < ulCount; i++) {
		uint8_t scratch[40];
		const void *v;
		CK_ULONG len;
		CK_RV r = attr_get(o, pTemplate[i].type, scratch, &v, &len);

		if (r != CKR_OK) {
			pTemplate[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
			rv = r;
		} else if (!pTemplate[i].pValue) {
			pTemplate[i].ulValueLen = len;
		} else if (pTemplate[i].ulValueLen < len) {
			pTemplate[i].ulValueLen = CK_UNAVAILABLE_INFORMATION;
			rv = CKR_BUFFER_TOO_SMALL;
		} else {
			memcpy(pTemplate[i].pValue, v, len);
			pTemplate[i].ulValueLen = len;
		}
		sigil_wipe(scratch, sizeof(scratch));
	}
	pthread_mutex_unlock(&g.lock);
	return rv;
}

CK_RV C_SetAttributeValue(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE hObject, CK_ATTRIBUTE_PTR pTemplate,
                          CK_ULONG ulCount)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

CK_RV C_FindObjectsInit(CK_SESSION_HANDLE hSession, CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulCount)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (s->find_active)
		rv = CKR_OPERATION_ACTIVE;
	else if (!pTemplate && ulCount)
		rv = CKR_ARGUMENTS_BAD;
	pthread_mutex_unlock(&g.lock);
	if (rv != CKR_OK)
		return rv;
	rv = objects_refresh();
	if (rv != CKR_OK)
		return rv;
	rv = session_lock(hSession, &s);
	if (rv != CKR_OK)
		return rv;
	free(s->found);
	s->found = malloc((g.n_objs + 1) * sizeof(*s->found));
	s->n_found = s->pos = 0;
	if (!s->found) {
		pthread_mutex_unlock(&g.lock);
		return CKR_HOST_MEMORY;
	}
	for (size_t i = 0; i < g.n_objs; i++)
		if (object_matches(&g.objs[i], pTemplate, ulCount))
			s->found[s->n_found++] = g.objs[i].handle;
	s->find_active = true;
	pthread_mutex_unlock(&g.lock);
	return CKR_OK;
}

CK_RV C_FindObjects(CK_SESSION_HANDLE hSession, CK_OBJECT_HANDLE_PTR phObject, CK_ULONG ulMaxObjectCount,
                    CK_ULONG_PTR pulObjectCount)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->find_active) {
		rv = CKR_OPERATION_NOT_INITIALIZED;
	} else if (!pulObjectCount || (!phObject && ulMaxObjectCount)) {
		rv = CKR_ARGUMENTS_BAD;
	} else {
		CK_ULONG n = 0;
		while (n < ulMaxObjectCount && s->pos < s->n_found)
			phObject[n++] = s->found[s->pos++];
		*pulObjectCount = n;
	}
	pthread_mutex_unlock(&g.lock);
	return rv;
}

CK_RV C_FindObjectsFinal(CK_SESSION_HANDLE hSession)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->find_active)
		rv = CKR_OPERATION_NOT_INITIALIZED;
	free(s->found);
	s->found = NULL;
	s->find_active = false;
	pthread_mutex_unlock(&g.lock);
	return rv;
}

/* ---- what the module does not do ---- */

#define NOT_SUPPORTED(name, params) \
	CK_RV name params              \
	{                              \
		return CKR_FUNCTION_NOT_SUPPORTED; \
	}

NOT_SUPPORTED(C_EncryptInit, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k))
NOT_SUPPORTED(C_Encrypt, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG dl, CK_BYTE_PTR e, CK_ULONG_PTR el))
NOT_SUPPORTED(C_EncryptUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG dl, CK_BYTE_PTR e, CK_ULONG_PTR el))
NOT_SUPPORTED(C_EncryptFinal, (CK_SESSION_HANDLE h, CK_BYTE_PTR e, CK_ULONG_PTR el))
NOT_SUPPORTED(C_DecryptInit, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k))
NOT_SUPPORTED(C_Decrypt, (CK_SESSION_HANDLE h, CK_BYTE_PTR e, CK_ULONG el, CK_BYTE_PTR d, CK_ULONG_PTR dl))
NOT_SUPPORTED(C_DecryptUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR e, CK_ULONG el, CK_BYTE_PTR d, CK_ULONG_PTR dl))
NOT_SUPPORTED(C_DecryptFinal, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG_PTR dl))
NOT_SUPPORTED(C_DigestInit, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m))
NOT_SUPPORTED(C_Digest, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG dl, CK_BYTE_PTR o, CK_ULONG_PTR ol))
NOT_SUPPORTED(C_DigestUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG dl))
NOT_SUPPORTED(C_DigestKey, (CK_SESSION_HANDLE h, CK_OBJECT_HANDLE k))
NOT_SUPPORTED(C_DigestFinal, (CK_SESSION_HANDLE h, CK_BYTE_PTR o, CK_ULONG_PTR ol))
NOT_SUPPORTED(C_SignRecoverInit, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k))
NOT_SUPPORTED(C_SignRecover, (CK_SESSION_HANDLE h, CK_BYTE_PTR d, CK_ULONG dl, CK_BYTE_PTR s, CK_ULONG_PTR sl))
NOT_SUPPORTED(C_VerifyRecoverInit, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE k))
NOT_SUPPORTED(C_VerifyRecover, (CK_SESSION_HANDLE h, CK_BYTE_PTR s, CK_ULONG sl, CK_BYTE_PTR d, CK_ULONG_PTR dl))
NOT_SUPPORTED(C_DigestEncryptUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR p, CK_ULONG pl, CK_BYTE_PTR e, CK_ULONG_PTR el))
NOT_SUPPORTED(C_DecryptDigestUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR e, CK_ULONG el, CK_BYTE_PTR p, CK_ULONG_PTR pl))
NOT_SUPPORTED(C_SignEncryptUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR p, CK_ULONG pl, CK_BYTE_PTR e, CK_ULONG_PTR el))
NOT_SUPPORTED(C_DecryptVerifyUpdate, (CK_SESSION_HANDLE h, CK_BYTE_PTR e, CK_ULONG el, CK_BYTE_PTR p, CK_ULONG_PTR pl))
NOT_SUPPORTED(C_GenerateKey, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_ATTRIBUTE_PTR t, CK_ULONG n, CK_OBJECT_HANDLE_PTR k))
NOT_SUPPORTED(C_WrapKey, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE w, CK_OBJECT_HANDLE k,
                          CK_BYTE_PTR o, CK_ULONG_PTR ol))
NOT_SUPPORTED(C_UnwrapKey, (CK_SESSION_HANDLE h, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE u, CK_BYTE_PTR w,
                            CK_ULONG wl, CK_ATTRIBUTE_PTR t, CK_ULONG n, CK_OBJECT_HANDLE_PTR k))

CK_RV C_SeedRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSeed, CK_ULONG ulSeedLen)
{
	return CKR_RANDOM_SEED_NOT_SUPPORTED;
}

CK_RV C_GetFunctionStatus(CK_SESSION_HANDLE hSession)
{
	return CKR_FUNCTION_NOT_PARALLEL;
}

CK_RV C_CancelFunction(CK_SESSION_HANDLE hSession)
{
	return CKR_FUNCTION_NOT_PARALLEL;
}

/* ---- sign and verify (CKM_EDDSA) ---- */

/* Starts op for mechanism m on key hKey (of class klass, Ed25519). Lock held. */
static CK_RV op_init(Op *op, CK_MECHANISM_PTR m, CK_OBJECT_HANDLE hKey, bool sign)
{
	Object *o;
	const CK_EDDSA_PARAMS *p = NULL;

	if (!m)
		return CKR_ARGUMENTS_BAD;
	if (op->active)
		return CKR_OPERATION_ACTIVE;
	if (m->mechanism != CKM_EDDSA)
		return CKR_MECHANISM_INVALID;
	if (m->pParameter || m->ulParameterLen) {
		if (!m->pParameter || m->ulParameterLen != sizeof(CK_EDDSA_PARAMS))
			return CKR_MECHANISM_PARAM_INVALID;
		p = m->pParameter;
		if (p->ulContextDataLen > 255 || (p->ulContextDataLen && !p->pContextData))
			return CKR_MECHANISM_PARAM_INVALID;
		/* Ed25519ctx needs a context (RFC 8032 §5.1: not with an empty one) */
		if (!p->phFlag && p->ulContextDataLen == 0)
			return CKR_MECHANISM_PARAM_INVALID;
	}
	o = object_find(hKey);
	if (!o)
		return CKR_KEY_HANDLE_INVALID;
	if (o->klass == CKO_SECRET_KEY || (sign && o->klass != CKO_PRIVATE_KEY))
		return CKR_KEY_TYPE_INCONSISTENT;
	if (o->key_type != CKK_EC_EDWARDS)
		return sign ? CKR_KEY_FUNCTION_NOT_PERMITTED : CKR_KEY_TYPE_INCONSISTENT;
	op_reset(op);
	op->active = true;
	memcpy(op->label, o->label, sizeof(op->label));
	memcpy(op->pk, o->pk, 32);
	op->mode = SIGIL_SIGN_PURE;
	if (p) {
		op->ph = p->phFlag != CK_FALSE;
		op->mode = op->ph ? SIGIL_SIGN_PREHASHED : SIGIL_SIGN_CTX;
		op->ctx_len = p->ulContextDataLen;
		if (op->ctx_len)
			memcpy(op->ctx, p->pContextData, op->ctx_len);
	}
	if (op->ph)
		sigil_sha512_init(&op->sha);
	return CKR_OK;
}

/* Adds a part: hashed (ph) or kept (pure, ctx). Lock held. */
static CK_RV op_update(Op *op, const uint8_t *part, CK_ULONG len)
{
	op->update = true;
	if (op->ph) {
		sigil_sha512_update(&op->sha, part, len);
		return CKR_OK;
	}
	if (len > MAX_MESSAGE - op->len)
		return CKR_DATA_LEN_RANGE;
	if (op->len + len > op->cap) {
		size_t cap = op->cap ? op->cap : 4096;
		uint8_t *n;
		while (cap < op->len + len)
			cap *= 2;
		n = malloc(cap);
		if (!n)
			return CKR_HOST_MEMORY;
		if (op->buf) {
			memcpy(n, op->buf, op->len);
			sigil_wipe(op->buf, op->cap);
			free(op->buf);
		}
		op->buf = n;
		op->cap = cap;
	}
	if (len)
		memcpy(op->buf + op->len, part, len);
	op->len += len;
	return CKR_OK;
}

/* What goes to sigild, copied out of the session (the lock is then
 * released for the call). */
typedef struct Request {
	char label[LABEL_MAX + 1];
	uint8_t pk[32];
	sigil_sign_mode mode;
	uint8_t ctx[255];
	size_t ctx_len;
	uint8_t digest[64];
	const uint8_t *msg;
	size_t msg_len;
	uint8_t *owned; /* the session's buffer, taken over */
} Request;

/* Ends op into rq: data is the single-part message (NULL after updates). */
static void op_finish(Op *op, Request *rq, const uint8_t *data, CK_ULONG len)
{
	memcpy(rq->label, op->label, sizeof(rq->label));
	memcpy(rq->pk, op->pk, 32);
	rq->mode = op->mode;
	rq->ctx_len = op->ctx_len;
	memcpy(rq->ctx, op->ctx, op->ctx_len);
	rq->owned = NULL;
	if (op->ph) {
		if (data)
			sigil_sha512_update(&op->sha, data, len);
		sigil_sha512_final(&op->sha, rq->digest);
		rq->msg = rq->digest;
		rq->msg_len = 64;
	} else if (op->update) {
		rq->owned = op->buf;
		rq->msg = op->buf ? op->buf : rq->digest;
		rq->msg_len = op->len;
		op->buf = NULL;
		op->cap = 0;
	} else {
		rq->msg = data ? data : rq->digest;
		rq->msg_len = len;
	}
	op_reset(op);
}

static void request_free(Request *rq)
{
	free(rq->owned);
	sigil_wipe(rq->digest, sizeof(rq->digest));
}

static CK_RV sign_request(Request *rq, CK_BYTE_PTR sig)
{
	sigil_client *c;
	sigil_error e;
	CK_RV rv = conn_get(&c);

	if (rv == CKR_OK) {
		e = sigil_client_sign(c, sig, rq->label, rq->mode, rq->msg, rq->msg_len, rq->ctx, rq->ctx_len);
		conn_put(c, e);
		rv = e == SIGIL_EOK ? CKR_OK : rv_from(e, CKR_KEY_FUNCTION_NOT_PERMITTED);
	}
	request_free(rq);
	return rv;
}

CK_RV C_SignInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	rv = op_init(&s->sign, pMechanism, hKey, true);
	pthread_mutex_unlock(&g.lock);
	return rv;
}

/* The two-call convention: with pSignature NULL or *pulSignatureLen too
 * small, the length is told and the operation stays active. */
static CK_RV sig_len_check(Op *op, CK_BYTE_PTR sig, CK_ULONG_PTR lenp, bool *donep)
{
	*donep = true;
	if (!lenp) {
		op_reset(op);
		return CKR_ARGUMENTS_BAD;
	}
	if (!sig) {
		*lenp = SIG_LEN;
		return CKR_OK;
	}
	if (*lenp < SIG_LEN) {
		*lenp = SIG_LEN;
		return CKR_BUFFER_TOO_SMALL;
	}
	*donep = false;
	return CKR_OK;
}

CK_RV C_Sign(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pSignature,
             CK_ULONG_PTR pulSignatureLen)
{
	Session *s;
	Request rq;
	bool done;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->sign.active || s->sign.update) {
		pthread_mutex_unlock(&g.lock);
		return CKR_OPERATION_NOT_INITIALIZED;
	}
	if (!pData && ulDataLen) {
		op_reset(&s->sign);
		pthread_mutex_unlock(&g.lock);
		return CKR_ARGUMENTS_BAD;
	}
	if (!s->sign.ph && ulDataLen > MAX_MESSAGE) {
		op_reset(&s->sign);
		pthread_mutex_unlock(&g.lock);
		return CKR_DATA_LEN_RANGE;
	}
	rv = sig_len_check(&s->sign, pSignature, pulSignatureLen, &done);
	if (done) {
		pthread_mutex_unlock(&g.lock);
		return rv;
	}
	op_finish(&s->sign, &rq, pData, ulDataLen);
	pthread_mutex_unlock(&g.lock);
	rv = sign_request(&rq, pSignature);
	if (rv == CKR_OK)
		*pulSignatureLen = SIG_LEN;
	return rv;
}

/* C_SignUpdate and C_VerifyUpdate: a part of the data of the session's
 * sign (@verify false) or verify operation */
static CK_RV session_update(CK_SESSION_HANDLE hSession, bool verify, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
	Session *s;
	Op *op;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	op = verify ? &s->verify : &s->sign;
	if (!op->active)
		rv = CKR_OPERATION_NOT_INITIALIZED;
	else if (!pPart && ulPartLen)
		rv = CKR_ARGUMENTS_BAD;
	else
		rv = op_update(op, pPart, ulPartLen);
	if (rv != CKR_OK && rv != CKR_OPERATION_NOT_INITIALIZED)
		op_reset(op);
	pthread_mutex_unlock(&g.lock);
	return rv;
}

CK_RV C_SignUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
	return session_update(hSession, false, pPart, ulPartLen);
}

CK_RV C_SignFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG_PTR pulSignatureLen)
{
	Session *s;
	Request rq;
	bool done;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->sign.active) {
		pthread_mutex_unlock(&g.lock);
		return CKR_OPERATION_NOT_INITIALIZED;
	}
	rv = sig_len_check(&s->sign, pSignature, pulSignatureLen, &done);
	if (done) {
		pthread_mutex_unlock(&g.lock);
		return rv;
	}
	s->sign.update = true;
	op_finish(&s->sign, &rq, NULL, 0);
	pthread_mutex_unlock(&g.lock);
	rv = sign_request(&rq, pSignature);
	if (rv == CKR_OK)
		*pulSignatureLen = SIG_LEN;
	return rv;
}

static CK_RV verify_request(Request *rq, const uint8_t *sig, CK_ULONG sig_len)
{
	sigil_client *c;
	sigil_error e;
	int valid = 0;
	CK_RV rv = CKR_SIGNATURE_LEN_RANGE;

	if (sig_len == SIG_LEN)
		rv = conn_get(&c);
	if (rv == CKR_OK) {
		e = sigil_client_verify(c, &valid, rq->pk, sig, rq->mode, rq->msg, rq->msg_len, rq->ctx,
		                        rq->ctx_len, SIGIL_POLICY_STRICT);
		conn_put(c, e);
		rv = e != SIGIL_EOK ? rv_from(e, CKR_FUNCTION_REJECTED) : valid ? CKR_OK : CKR_SIGNATURE_INVALID;
	}
	request_free(rq);
	return rv;
}

CK_RV C_VerifyInit(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hKey)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	rv = op_init(&s->verify, pMechanism, hKey, false);
	pthread_mutex_unlock(&g.lock);
	return rv;
}

CK_RV C_Verify(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pData, CK_ULONG ulDataLen, CK_BYTE_PTR pSignature,
               CK_ULONG ulSignatureLen)
{
	Session *s;
	Request rq;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->verify.active || s->verify.update) {
		pthread_mutex_unlock(&g.lock);
		return CKR_OPERATION_NOT_INITIALIZED;
	}
	if ((!pData && ulDataLen) || !pSignature) {
		op_reset(&s->verify);
		pthread_mutex_unlock(&g.lock);
		return CKR_ARGUMENTS_BAD;
	}
	if (!s->verify.ph && ulDataLen > MAX_MESSAGE) {
		op_reset(&s->verify);
		pthread_mutex_unlock(&g.lock);
		return CKR_DATA_LEN_RANGE;
	}
	op_finish(&s->verify, &rq, pData, ulDataLen);
	pthread_mutex_unlock(&g.lock);
	return verify_request(&rq, pSignature, ulSignatureLen);
}

CK_RV C_VerifyUpdate(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pPart, CK_ULONG ulPartLen)
{
	return session_update(hSession, true, pPart, ulPartLen);
}

CK_RV C_VerifyFinal(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pSignature, CK_ULONG ulSignatureLen)
{
	Session *s;
	Request rq;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->verify.active) {
		pthread_mutex_unlock(&g.lock);
		return CKR_OPERATION_NOT_INITIALIZED;
	}
	if (!pSignature) {
		op_reset(&s->verify);
		pthread_mutex_unlock(&g.lock);
		return CKR_ARGUMENTS_BAD;
	}
	s->verify.update = true;
	op_finish(&s->verify, &rq, NULL, 0);
	pthread_mutex_unlock(&g.lock);
	return verify_request(&rq, pSignature, ulSignatureLen);
}

/* ---- key pairs ---- */

/* A CK_BBOOL attribute's value, or -1 if it is malformed. */
static int attr_bool(const CK_ATTRIBUTE *a)
{
	if (!a->pValue || a->ulValueLen != sizeof(CK_BBOOL))
		return -1;
	return *(const CK_BBOOL *)a->pValue != CK_FALSE;
}

static int attr_ulong(const CK_ATTRIBUTE *a, CK_ULONG *out)
{
	if (!a->pValue || a->ulValueLen != sizeof(CK_ULONG))
		return -1;
	memcpy(out, a->pValue, sizeof(*out));
	return 0;
}

typedef struct KeyTemplate {
	char label[LABEL_MAX + 1];
	bool has_label;
	int token; /* -1: not given */
} KeyTemplate;

/* Checks one template of C_GenerateKeyPair for a key of class klass. */
static CK_RV keygen_template(KeyTemplate *kt, const CK_ATTRIBUTE *t, CK_ULONG n, CK_OBJECT_CLASS klass,
                             CK_KEY_TYPE kt_type)
{
	if (!t && n)
		return CKR_ARGUMENTS_BAD;
	for (CK_ULONG i = 0; i < n; i++) {
		const CK_ATTRIBUTE *a = &t[i];
		CK_ULONG u;
		int b;

		switch (a->type) {
		case CKA_CLASS:
			if (attr_ulong(a, &u) < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (u != klass)
				return CKR_TEMPLATE_INCONSISTENT;
			break;
		case CKA_KEY_TYPE:
			if (attr_ulong(a, &u) < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (u != kt_type)
				return CKR_TEMPLATE_INCONSISTENT;
			break;
		case CKA_EC_PARAMS:
			if (!curve_is(a->pValue, a->ulValueLen, kt_type == CKK_EC_EDWARDS))
				return CKR_CURVE_NOT_SUPPORTED;
			break;
		case CKA_LABEL:
			if (!a->pValue && a->ulValueLen)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (!label_valid(a->pValue, a->ulValueLen))
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (kt->has_label && (strlen(kt->label) != a->ulValueLen ||
			                      memcmp(kt->label, a->pValue, a->ulValueLen) != 0))
				return CKR_TEMPLATE_INCONSISTENT;
			memcpy(kt->label, a->pValue, a->ulValueLen);
			kt->label[a->ulValueLen] = 0;
			kt->has_label = true;
			break;
		case CKA_TOKEN:
			b = attr_bool(a);
			if (b < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (kt->token >= 0 && kt->token != b)
				return CKR_TEMPLATE_INCONSISTENT;
			kt->token = b;
			break;
		case CKA_SENSITIVE:
		case CKA_EXTRACTABLE:
			/* sigild's keys are sensitive and never extractable */
			b = attr_bool(a);
			if (b < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (klass == CKO_PRIVATE_KEY && b != (a->type == CKA_SENSITIVE))
				return CKR_TEMPLATE_INCONSISTENT;
			break;
		case CKA_SIGN:
		case CKA_VERIFY:
		case CKA_DERIVE:
			/* accepted and not kept: what a key can do follows from its
			 * type (pkcs11-tool asks CKA_DERIVE of every EC key pair) */
			if (attr_bool(a) < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			break;
		case CKA_VALUE:
		case CKA_EC_POINT:
			return CKR_TEMPLATE_INCONSISTENT;
		default:
			/* CKA_ID, CKA_PRIVATE, CKA_MODIFIABLE, CKA_SUBJECT, ...: accepted, not kept */
			break;
		}
	}
	return CKR_OK;
}

CK_RV C_GenerateKeyPair(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism,
                        CK_ATTRIBUTE_PTR pPublicKeyTemplate, CK_ULONG ulPublicKeyAttributeCount,
                        CK_ATTRIBUTE_PTR pPrivateKeyTemplate, CK_ULONG ulPrivateKeyAttributeCount,
                        CK_OBJECT_HANDLE_PTR phPublicKey, CK_OBJECT_HANDLE_PTR phPrivateKey)
{
	Session *s;
	KeyTemplate kt = { .token = -1 };
	CK_KEY_TYPE type;
	sigil_key_info info;
	sigil_client *c;
	sigil_error e;
	bool rw;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	rw = s->flags & CKF_RW_SESSION;
	pthread_mutex_unlock(&g.lock);
	if (!pMechanism || !phPublicKey || !phPrivateKey)
		return CKR_ARGUMENTS_BAD;
	if (pMechanism->mechanism == CKM_EC_EDWARDS_KEY_PAIR_GEN)
		type = CKK_EC_EDWARDS;
	else if (pMechanism->mechanism == CKM_EC_MONTGOMERY_KEY_PAIR_GEN)
		type = CKK_EC_MONTGOMERY;
	else
		return CKR_MECHANISM_INVALID;
	if (pMechanism->pParameter || pMechanism->ulParameterLen)
		return CKR_MECHANISM_PARAM_INVALID;
	rv = keygen_template(&kt, pPublicKeyTemplate, ulPublicKeyAttributeCount, CKO_PUBLIC_KEY, type);
	if (rv == CKR_OK)
		rv = keygen_template(&kt, pPrivateKeyTemplate, ulPrivateKeyAttributeCount, CKO_PRIVATE_KEY, type);
	if (rv != CKR_OK)
		return rv;
	if (kt.token != 0 && !rw)
		return CKR_SESSION_READ_ONLY;
	if (!kt.has_label) {
		uint8_t r[8];
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return CKR_FUNCTION_FAILED;
		strcpy(kt.label, kt.token == 0 ? "p11-session-" : "p11-");
		for (int i = 0; i < 8; i++) {
			size_t l = strlen(kt.label);
			kt.label[l] = "0123456789abcdef"[r[i] >> 4];
			kt.label[l + 1] = "0123456789abcdef"[r[i] & 15];
			kt.label[l + 2] = 0;
		}
	}
	rv = conn_get(&c);
	if (rv != CKR_OK)
		return rv;
	e = sigil_client_key_generate(c, &info, type == CKK_EC_EDWARDS ? SIGIL_KEY_ED25519 : SIGIL_KEY_X25519,
	                              kt.label, 0);
	conn_put(c, e);
	if (e != SIGIL_EOK)
		return e == SIGIL_EEXISTS ? CKR_ATTRIBUTE_VALUE_INVALID : rv_from(e, CKR_FUNCTION_REJECTED);
	pthread_mutex_lock(&g.lock);
	if (!g.initialized || !session_find(hSession)) {
		/* closed meanwhile: do not leave a session key behind */
		pthread_mutex_unlock(&g.lock);
		if (kt.token == 0 && conn_get(&c) == CKR_OK)
			conn_put(c, sigil_client_key_delete(c, kt.label));
		return CKR_SESSION_HANDLE_INVALID;
	}
	rv = keypair_add(&info, kt.token == 0 ? hSession : 0, phPrivateKey, phPublicKey);
	pthread_mutex_unlock(&g.lock);
	return rv;
}

/* ---- X25519 (CKM_ECDH1_DERIVE, CKD_NULL) ---- */

CK_RV C_DeriveKey(CK_SESSION_HANDLE hSession, CK_MECHANISM_PTR pMechanism, CK_OBJECT_HANDLE hBaseKey,
                  CK_ATTRIBUTE_PTR pTemplate, CK_ULONG ulAttributeCount, CK_OBJECT_HANDLE_PTR phKey)
{
	Session *s;
	Object *o;
	const CK_ECDH1_DERIVE_PARAMS *p;
	uint8_t peer[32], shared[32];
	char label[LABEL_MAX + 1];
	CK_KEY_TYPE key_type = CKK_GENERIC_SECRET;
	CK_ULONG value_len = 32;
	bool sensitive = true, extractable = false;
	const CK_ATTRIBUTE *lab = NULL, *id = NULL;
	sigil_client *c;
	sigil_error e;
	CK_RV rv;

	if (!pMechanism || !phKey || (!pTemplate && ulAttributeCount))
		return check_init() != CKR_OK ? CKR_CRYPTOKI_NOT_INITIALIZED : CKR_ARGUMENTS_BAD;
	if (pMechanism->mechanism != CKM_ECDH1_DERIVE)
		return check_init() != CKR_OK ? CKR_CRYPTOKI_NOT_INITIALIZED : CKR_MECHANISM_INVALID;
	p = pMechanism->pParameter;
	if (!p || pMechanism->ulParameterLen != sizeof(*p) || p->kdf != CKD_NULL || p->ulSharedDataLen ||
	    !p->pPublicData)
		return check_init() != CKR_OK ? CKR_CRYPTOKI_NOT_INITIALIZED : CKR_MECHANISM_PARAM_INVALID;
	/* the peer: 32 raw bytes or a DER octet string of them */
	if (p->ulPublicDataLen == 32)
		memcpy(peer, p->pPublicData, 32);
	else if (p->ulPublicDataLen == 34 && p->pPublicData[0] == 0x04 && p->pPublicData[1] == 32)
		memcpy(peer, p->pPublicData + 2, 32);
	else
		return check_init() != CKR_OK ? CKR_CRYPTOKI_NOT_INITIALIZED : CKR_MECHANISM_PARAM_INVALID;
	for (CK_ULONG i = 0; i < ulAttributeCount; i++) {
		const CK_ATTRIBUTE *a = &pTemplate[i];
		CK_ULONG u;
		int b;

		switch (a->type) {
		case CKA_CLASS:
			if (attr_ulong(a, &u) < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (u != CKO_SECRET_KEY)
				return CKR_TEMPLATE_INCONSISTENT;
			break;
		case CKA_KEY_TYPE:
			if (attr_ulong(a, &key_type) < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			break;
		case CKA_VALUE_LEN:
			if (attr_ulong(a, &value_len) < 0 || value_len == 0 || value_len > 32)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			break;
		case CKA_TOKEN:
			b = attr_bool(a);
			if (b < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (b) /* a derived secret is a session object of this process */
				return CKR_TEMPLATE_INCONSISTENT;
			break;
		case CKA_SENSITIVE:
		case CKA_EXTRACTABLE:
			b = attr_bool(a);
			if (b < 0)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			if (a->type == CKA_SENSITIVE)
				sensitive = b;
			else
				extractable = b;
			break;
		case CKA_LABEL:
			if ((!a->pValue && a->ulValueLen) || a->ulValueLen > LABEL_MAX)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			lab = a;
			break;
		case CKA_ID:
			if ((!a->pValue && a->ulValueLen) || a->ulValueLen > LABEL_MAX)
				return CKR_ATTRIBUTE_VALUE_INVALID;
			id = a;
			break;
		case CKA_VALUE:
			return CKR_TEMPLATE_INCONSISTENT;
		default:
			break;
		}
	}
	rv = session_lock(hSession, &s);
	if (rv != CKR_OK)
		return rv;
	o = object_find(hBaseKey);
	if (!o)
		rv = CKR_KEY_HANDLE_INVALID;
	else if (o->klass != CKO_PRIVATE_KEY || o->key_type != CKK_EC_MONTGOMERY)
		rv = CKR_KEY_TYPE_INCONSISTENT;
	else
		memcpy(label, o->label, sizeof(label));
	pthread_mutex_unlock(&g.lock);
	if (rv != CKR_OK)
		return rv;
	rv = conn_get(&c);
	if (rv != CKR_OK)
		return rv;
	e = sigil_client_dh(c, shared, label, peer);
	conn_put(c, e);
	if (e != SIGIL_EOK) {
		sigil_wipe(shared, sizeof(shared));
		return rv_from(e, CKR_KEY_FUNCTION_NOT_PERMITTED);
	}
	rv = session_lock(hSession, &s);
	if (rv == CKR_OK) {
		o = object_add();
		if (!o) {
			rv = CKR_HOST_MEMORY;
		} else {
			o->klass = CKO_SECRET_KEY;
			o->key_type = key_type;
			o->session = hSession;
			o->seen = true;
			o->sensitive = sensitive;
			o->extractable = extractable;
			memcpy(o->value, shared, value_len);
			o->value_len = value_len;
			if (lab) {
				memcpy(o->label, lab->pValue, lab->ulValueLen);
				o->label_len = lab->ulValueLen;
			}
			if (id) {
				memcpy(o->id, id->pValue, id->ulValueLen);
				o->id_len = id->ulValueLen;
			}
			*phKey = o->handle;
		}
		pthread_mutex_unlock(&g.lock);
	}
	sigil_wipe(shared, sizeof(shared));
	return rv;
}

CK_RV C_GenerateRandom(CK_SESSION_HANDLE hSession, CK_BYTE_PTR pRandomData, CK_ULONG ulRandomLen)
{
	Session *s;
	CK_RV rv = session_lock(hSession, &s);

	if (rv != CKR_OK)
		return rv;
	pthread_mutex_unlock(&g.lock);
	if (!pRandomData && ulRandomLen)
		return CKR_ARGUMENTS_BAD;
	for (CK_ULONG done = 0; done < ulRandomLen;) {
		ssize_t r = getrandom(pRandomData + done, ulRandomLen - done, 0);
		if (r < 0 && errno != EINTR)
			return CKR_FUNCTION_FAILED;
		if (r > 0)
			done += (CK_ULONG)r;
	}
	return CKR_OK;
}

static CK_FUNCTION_LIST function_list = {
	.version = { 2, 40 },
#define F(name) .name = name
	F(C_Initialize), F(C_Finalize), F(C_GetInfo), F(C_GetFunctionList), F(C_GetSlotList),
	F(C_GetSlotInfo), F(C_GetTokenInfo), F(C_GetMechanismList), F(C_GetMechanismInfo), F(C_InitToken),
	F(C_InitPIN), F(C_SetPIN), F(C_OpenSession), F(C_CloseSession), F(C_CloseAllSessions),
	F(C_GetSessionInfo), F(C_GetOperationState), F(C_SetOperationState), F(C_Login), F(C_Logout),
	F(C_CreateObject), F(C_CopyObject), F(C_DestroyObject), F(C_GetObjectSize), F(C_GetAttributeValue),
	F(C_SetAttributeValue), F(C_FindObjectsInit), F(C_FindObjects), F(C_FindObjectsFinal),
	F(C_EncryptInit), F(C_Encrypt), F(C_EncryptUpdate), F(C_EncryptFinal), F(C_DecryptInit),
	F(C_Decrypt), F(C_DecryptUpdate), F(C_DecryptFinal), F(C_DigestInit), F(C_Digest),
	F(C_DigestUpdate), F(C_DigestKey), F(C_DigestFinal), F(C_SignInit), F(C_Sign), F(C_SignUpdate),
	F(C_SignFinal), F(C_SignRecoverInit), F(C_SignRecover), F(C_VerifyInit), F(C_Verify),
	F(C_VerifyUpdate), F(C_VerifyFinal), F(C_VerifyRecoverInit), F(C_VerifyRecover),
	F(C_DigestEncryptUpdate), F(C_DecryptDigestUpdate), F(C_SignEncryptUpdate),
	F(C_DecryptVerifyUpdate), F(C_GenerateKey), F(C_GenerateKeyPair), F(C_WrapKey), F(C_UnwrapKey),
	F(C_DeriveKey), F(C_SeedRandom), F(C_GenerateRandom), F(C_GetFunctionStatus), F(C_CancelFunction),
	F(C_WaitForSlotEvent),
#undef F
};
