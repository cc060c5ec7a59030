/* SPDX-License-Identifier: MIT */
/*
 * age-ops.c - sigild's age methods (age-ops.h)
 *
 * age.unwrap is an operation of its own, "age-unwrap" in the audit trail
 * and in a key's ops rule: sigild runs the X25519, the HKDF and the
 * ChaCha20-Poly1305 open, so the shared secret never leaves it and the
 * client learns the 16-byte file key of the one file it asked about
 * (docs/age.md). key.export_wrapped and key.import_wrapped move a key as a
 * standard age file (agefile.c) without its seed reaching either client.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "age-ops.h"
#include "agefile.h"
#include "audit.h"
#include "bech32.h"
#include "log.h"
#include "policy.h"

/* what key.import_wrapped decrypted, until the import ends */
typedef struct AgeImport {
	AgeKey key;                 /* seed: secret */
	ProtoKeyPolicy policy;
} AgeImport;

static void reply(Conn *c, Request *rq, ProtoError code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void reply(Conn *c, Request *rq, ProtoError code, const char *fmt, ...)
{
	char msg[PROTO_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	conn_send_error(c, true, rq->req.msgid, code, msg);
}

static void audit(const Conn *c, const Key *key, const char *label, const char *op, const char *result,
                  const char *why)
{
	audit_event(c->uid, c->pid, c->exe, key ? key->info.label : label, key ? key->info.fingerprint : NULL, op,
	            result, why);
}

/* the key for an unwrap (age.unwrap, opening a key.import_wrapped file):
 * what dh checks, with op age-unwrap. NULL: answered */
static Key *unwrap_key(Conn *c, Request *rq, const char *label)
{
	Server *s = c->server;
	PolicyPeer peer = { .uid = c->uid, .gid = c->gid, .pid = c->pid, .exe = c->exe };
	char why[PROTO_MESSAGE_MAX - 64];
	Key *key = keystore_find(&s->keystore, label);

	if (s->locked || s->keystore.locked) {
		audit(c, key, label, "age-unwrap", "locked", NULL);
		reply(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return NULL;
	}
	if (!key) {
		audit(c, NULL, label, "age-unwrap", "not_found", NULL);
		reply(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", label);
		return NULL;
	}
	if (!key->secret) {
		audit(c, key, label, "age-unwrap", "locked", NULL);
		reply(c, rq, PROTO_E_LOCKED, "key '%s' is not open: unlock sigild first", label);
		return NULL;
	}
	if (key->info.type != PROTO_KEY_X25519) {
		audit(c, key, label, "age-unwrap", "wrong_type", NULL);
		reply(c, rq, PROTO_E_WRONG_TYPE, "key '%s' is %s; age needs an x25519 key", label,
		      proto_key_type_name(key->info.type));
		return NULL;
	}
	if (!policy_check(&key->policy, &key->use, PROTO_OP_AGE_UNWRAP, &peer, (int64_t)time(NULL), uv_now(s->loop),
	                  why, sizeof(why))) {
		audit(c, key, label, "age-unwrap", "denied", why);
		reply(c, rq, PROTO_E_DENIED, "key '%s': %s", label, why);
		return NULL;
	}
	s->last_key_use_ms = uv_now(s->loop);
	return key;
}

void age_ops_unwrap(Conn *c, Request *rq)
{
	const ProtoRequest *q = &rq->req;
	Key *key = unwrap_key(c, rq, q->u.age_unwrap.label);
	int r;

	if (!key)
		return;
	r = agefile_x25519_unwrap(rq->resp.u.age_unwrap.file_key, key->secret->seed, q->u.age_unwrap.share,
	                          q->u.age_unwrap.body, PROTO_AGE_BODY_LEN);
	if (r == -EDOM) {
		audit(c, key, NULL, "age-unwrap", "error", "small-order share");
		reply(c, rq, PROTO_E_INVALID_KEY, "the stanza's share has small order (the shared secret would be zero)");
	} else if (r) {
		/* the tag: the stanza was made for another key (or altered) */
		audit(c, key, NULL, "age-unwrap", "no_match", NULL);
		reply(c, rq, PROTO_E_NO_MATCH, "the stanza does not open with key '%s' (not for this identity)",
		      key->info.label);
	} else {
		audit(c, key, NULL, "age-unwrap", "ok", NULL);
		conn_send_response(c, &rq->resp);
	}
	sodium_memzero(rq->resp.u.age_unwrap.file_key, sizeof(rq->resp.u.age_unwrap.file_key));
	c->turn_requests++;
	c->server->turn_requests++;
}

void age_ops_export_wrapped(Conn *c, Request *rq)
{
	const ProtoRequest *q = &rq->req;
	const char *label = q->u.key_export_wrapped.label, *rcpt = q->u.key_export_wrapped.recipient;
	Server *s = c->server;
	Key *key = keystore_find(&s->keystore, label);
	PolicyPeer peer = { .uid = c->uid, .gid = c->gid, .pid = c->pid, .exe = c->exe };
	char why[PROTO_MESSAGE_MAX - 64], hrp[BECH32_HRP_MAX + 1];
	uint8_t pk[AGEFILE_KEY_LEN + 1];
	AgeBuf pt = AGEBUF_NULL(pt), file = AGEBUF_NULL(file);
	AgeKey *k = NULL;
	size_t n = 0;
	int r;

	if (bech32_decode(hrp, pk, sizeof(pk), &n, rcpt, strlen(rcpt)) || strcmp(hrp, "age") || n != AGEFILE_KEY_LEN) {
		audit(c, key, label, "export-wrapped", "bad_request", "recipient");
		reply(c, rq, PROTO_E_BAD_REQUEST, "field 'recipient' is not an age X25519 recipient (age1...)");
		return;
	}
	if (!key) {
		audit(c, NULL, label, "export-wrapped", "not_found", NULL);
		reply(c, rq, PROTO_E_NOT_FOUND, "no key labelled '%s'", label);
		return;
	}
	if (s->locked || s->keystore.locked || !key->secret) {
		audit(c, key, label, "export-wrapped", "locked", NULL);
		reply(c, rq, PROTO_E_LOCKED, "sigild is locked: unlock it first");
		return;
	}
	if (!key->info.exportable) {
		audit(c, key, label, "export-wrapped", "denied", "rule exportable");
		reply(c, rq, PROTO_E_DENIED, "key '%s': rule exportable: the key is not exportable", label);
		return;
	}
	if (!policy_check(&key->policy, &key->use, 0, &peer, (int64_t)time(NULL), uv_now(s->loop), why, sizeof(why))) {
		audit(c, key, label, "export-wrapped", "denied", why);
		reply(c, rq, PROTO_E_DENIED, "key '%s': %s", label, why);
		return;
	}
	k = calloc(1, sizeof(*k));
	if (!k) {
		reply(c, rq, PROTO_E_INTERNAL, "out of memory");
		return;
	}
	k->type = (uint8_t)key->info.type;
	k->exportable = key->info.exportable;
	memcpy(k->label, key->info.label, sizeof(k->label));
	memcpy(k->seed, key->secret->seed, sizeof(k->seed));
	r = policy_encode(k->policy, sizeof(k->policy), &key->policy);
	if (r >= 0) {
		k->policy_len = (size_t)r;
		r = agefile_key_encode(&pt, k);
	}
	if (!r)
		r = agefile_encrypt(&file, pk, pt.data, pt.len, q->u.key_export_wrapped.armor);
	sodium_memzero(k, sizeof(*k));
	free(k);
	agefile_buf_deinit(&pt);
	if (r == -EINVAL) {
		audit(c, key, label, "export-wrapped", "error", "small-order recipient");
		reply(c, rq, PROTO_E_INVALID_KEY, "the recipient has small order");
	} else if (r) {
		audit(c, key, label, "export-wrapped", "error", strerror(-r));
		reply(c, rq, PROTO_E_INTERNAL, "cannot make the age file: %s", strerror(-r));
	} else {
		audit(c, key, label, "export-wrapped", "ok", rcpt);
		rq->resp.u.key_export_wrapped.file = (ProtoBytes){ file.data, file.len };
		conn_send_response(c, &rq->resp);
	}
	agefile_buf_deinit(&file);
}

int age_ops_import_wrapped(Conn *c, Request *rq)
{
	ProtoRequest *q = &rq->req;
	char label[PROTO_LABEL_MAX + 1], with[PROTO_LABEL_MAX + 1];
	AgeBuf pt = AGEBUF_NULL(pt);
	AgeImport *im;
	Key *key;
	int r;

	memcpy(label, q->u.key_import_wrapped.label, sizeof(label));
	memcpy(with, q->u.key_import_wrapped.key, sizeof(with));
	key = unwrap_key(c, rq, with);
	if (!key)
		return -1;
	im = calloc(1, sizeof(*im));
	if (!im) {
		reply(c, rq, PROTO_E_INTERNAL, "out of memory");
		return -1;
	}
	r = agefile_decrypt(&pt, key->secret->seed, q->u.key_import_wrapped.file.data, q->u.key_import_wrapped.file.len);
	if (!r && (agefile_key_decode(&im->key, pt.data, pt.len) || im->key.type > PROTO_KEY_X25519 ||
	           policy_decode(&im->policy, im->key.policy, im->key.policy_len)))
		r = -EPROTO;
	agefile_buf_deinit(&pt);
	if (r) {
		const char *why = r == -ENOENT ? "the file is not for this key"
		                  : r == -EBADMSG ? "the file was altered or truncated"
		                  : r == -EPROTO  ? "the file holds no sigil key"
		                  : r == -ENOMEM  ? "out of memory"
		                                  : "not an age file";

		audit(c, key, NULL, "age-unwrap", r == -ENOENT ? "no_match" : "error", why);
		reply(c, rq, r == -ENOMEM ? PROTO_E_INTERNAL : r == -ENOENT ? PROTO_E_NO_MATCH : PROTO_E_INVALID_KEY,
		      "cannot open the age file with key '%s': %s", with, why);
		sodium_memzero(im, sizeof(*im));
		free(im);
		return -1;
	}
	audit(c, key, NULL, "age-unwrap", "ok", label);
	rq->age = im;
	/* now a key.import of what the file holds, under the caller's label */
	q->method = PROTO_METHOD_KEY_IMPORT;
	memset(&q->u.key_import, 0, sizeof(q->u.key_import));
	q->u.key_import.type = (ProtoKeyType)im->key.type;
	memcpy(q->u.key_import.label, label, sizeof(label));
	q->u.key_import.seed = im->key.seed;
	q->u.key_import.exportable = im->key.exportable;
	q->u.key_import.policy = im->policy.set ? &im->policy : NULL;
	return 0;
}

void age_ops_clear(Request *rq)
{
	if (rq->age) {
		sodium_memzero(rq->age, sizeof(AgeImport));
		free(rq->age);
		rq->age = NULL;
	}
}
