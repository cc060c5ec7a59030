/* SPDX-License-Identifier: MIT */
/*
 * proto.c - names on the wire, label syntax and output buffers
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "proto-private.h"

static const char *const error_names[_PROTO_E_N] = {
	[PROTO_OK] = "ok",
	[PROTO_E_BAD_REQUEST] = "bad_request",
	[PROTO_E_UNKNOWN_METHOD] = "unknown_method",
	[PROTO_E_NOT_FOUND] = "not_found",
	[PROTO_E_EXISTS] = "exists",
	[PROTO_E_WRONG_TYPE] = "wrong_type",
	[PROTO_E_LOCKED] = "locked",
	[PROTO_E_DENIED] = "denied",
	[PROTO_E_BUSY] = "busy",
	[PROTO_E_TOO_LARGE] = "too_large",
	[PROTO_E_INVALID_KEY] = "invalid_key",
	[PROTO_E_NO_MATCH] = "no_match",
	[PROTO_E_INTERNAL] = "internal",
};

static const char *const method_names[_PROTO_METHOD_N] = {
	[PROTO_METHOD_HELLO] = "hello",
	[PROTO_METHOD_STATUS] = "status",
	[PROTO_METHOD_KEY_GENERATE] = "key.generate",
	[PROTO_METHOD_KEY_IMPORT] = "key.import",
	[PROTO_METHOD_KEY_LIST] = "key.list",
	[PROTO_METHOD_KEY_PUBLIC] = "key.public",
	[PROTO_METHOD_KEY_DELETE] = "key.delete",
	[PROTO_METHOD_SIGN] = "sign",
	[PROTO_METHOD_VERIFY] = "verify",
	[PROTO_METHOD_VERIFY_BATCH] = "verify_batch",
	[PROTO_METHOD_DH] = "dh",
	[PROTO_METHOD_LOCK] = "lock",
	[PROTO_METHOD_UNLOCK] = "unlock",
	[PROTO_METHOD_REKEY] = "rekey",
	[PROTO_METHOD_AUDIT] = "audit",
	[PROTO_METHOD_KEY_EXPORT] = "key.export",
	[PROTO_METHOD_AGE_UNWRAP] = "age.unwrap",
	[PROTO_METHOD_KEY_EXPORT_WRAPPED] = "key.export_wrapped",
	[PROTO_METHOD_KEY_IMPORT_WRAPPED] = "key.import_wrapped",
};

static const char *const key_type_names[] = { "ed25519", "x25519" };
static const char *const mode_names[] = { "pure", "ctx", "ph" };
static const char *const policy_names[] = { "strict", "zip215" };

static int lookup(const char *const *names, size_t n_names, const char *s, size_t n)
{
	for (size_t i = 0; i < n_names; i++) {
		if (names[i] && strlen(names[i]) == n && memcmp(names[i], s, n) == 0)
			return (int)i;
	}
	return -1;
}

const char *proto_error_name(ProtoError e)
{
	return ((unsigned)e < _PROTO_E_N) ? error_names[e] : NULL;
}

const char *proto_method_name(ProtoMethod m)
{
	return ((unsigned)m < _PROTO_METHOD_N) ? method_names[m] : NULL;
}

const char *proto_key_type_name(ProtoKeyType t)
{
	return ((unsigned)t < 2) ? key_type_names[t] : NULL;
}

const char *proto_mode_name(ProtoSignMode m)
{
	return ((unsigned)m < 3) ? mode_names[m] : NULL;
}

const char *proto_policy_name(ProtoPolicy p)
{
	return ((unsigned)p < 2) ? policy_names[p] : NULL;
}

ProtoMethod proto_method_from_name(const char *s, size_t n)
{
	return (ProtoMethod)lookup(method_names, _PROTO_METHOD_N, s, n);
}

int proto_error_from_name(const char *s, size_t n)
{
	int r = lookup(error_names, _PROTO_E_N, s, n);

	return r > 0 ? r : -1; /* "ok" is not an error code on the wire */
}

int proto_key_type_from_name(const char *s, size_t n)
{
	return lookup(key_type_names, 2, s, n);
}

int proto__mode_from_name(const char *s, size_t n)
{
	return lookup(mode_names, 3, s, n);
}

int proto__policy_from_name(const char *s, size_t n)
{
	return lookup(policy_names, 2, s, n);
}

bool proto_label_valid(const char *s, size_t n)
{
	if (n < 1 || n > PROTO_LABEL_MAX)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))
			continue;
		if (c == '.' || c == '_' || c == '@' || c == '+' || c == '-')
			continue;
		return false;
	}
	/* "." and ".." would be path components */
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
		return false;
	return true;
}

/* Wipe memory the compiler may not elide (proto does not link the crypto
 * library; it is a leaf below the daemon): memset, then an empty asm that
 * takes the pointer and clobbers memory, so the stores must happen (as
 * sigil_wipe in crypto/util.c). A byte-at-a-time volatile loop did the same
 * ten times slower: wiping the 4 KiB frame-check reader twice per answer
 * was 14-19% of a libsigil client's CPU time (perf, sigil-loadgen). */
void proto_wipe(void *p, size_t n)
{
	if (n == 0)
		return;
	memset(p, 0, n);
	__asm__ __volatile__("" : : "r"(p) : "memory");
}

void proto_buf_init(ProtoBuf *b)
{
	*b = (ProtoBuf)PROTO_BUF_NULL(*b);
}

void proto_buf_deinit(ProtoBuf *b)
{
	if (b->data) {
		proto_wipe(b->data, b->cap);
		free(b->data);
	}
	proto_buf_init(b);
}

int proto_buf_append(ProtoBuf *b, const void *data, size_t n)
{
	return proto__buf_append(b, data, n);
}

uint8_t *proto_buf_steal(ProtoBuf *b, size_t *lenp)
{
	uint8_t *p = b->data;

	*lenp = b->len;
	proto_buf_init(b);
	return p;
}

int proto__buf_append(ProtoBuf *b, const void *data, size_t n)
{
	if (n > SIZE_MAX - b->len)
		return -ENOMEM;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		uint8_t *p;

		while (cap < b->len + n) {
			if (cap > SIZE_MAX / 2)
				return -ENOMEM;
			cap *= 2;
		}
		/* not realloc: the old copy is wiped before it is freed */
		p = malloc(cap);
		if (!p)
			return -ENOMEM;
		if (b->data) {
			memcpy(p, b->data, b->len);
			proto_wipe(b->data, b->cap);
			free(b->data);
		}
		b->data = p;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, n);
	b->len += n;
	return 0;
}
