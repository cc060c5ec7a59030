/* SPDX-License-Identifier: MIT */
/*
 * fuzz-proto-decode.c - the daemon's framing and request decoder
 *
 * Input: one byte choosing the read sizes, then a byte stream as a client
 * would send it. The stream goes through ProtoReader in pieces (as reads
 * arrive), with a 4 KiB frame limit so that too_large is reachable; every
 * frame goes to proto_request_decode.
 *
 * Oracles:
 * - each frame is exactly one msgpack object for msgpack-c's unpacker
 *   (same length), and frames follow each other with no gap;
 * - a request that decodes, encoded again by the client side
 *   (proto_request_encode) and decoded, is the same request;
 * - decoder errors come with a message; sanitizers catch the rest.
 */
#include <errno.h>
#include <msgpack.h>
#include <string.h>

#include "proto.h"
#include "proto-client.h"

#include "fuzz.h"

#define MAX_FRAME 4096

static int same_bytes(const ProtoBytes *a, const ProtoBytes *b)
{
	return a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
}

static void check_same(const ProtoRequest *a, const ProtoRequest *b)
{
	FUZZ_CHECK(a->msgid == b->msgid);
	FUZZ_CHECK(a->method == b->method);
	switch (a->method) {
	case PROTO_METHOD_KEY_GENERATE:
		FUZZ_CHECK(a->u.key_generate.type == b->u.key_generate.type);
		FUZZ_CHECK(strcmp(a->u.key_generate.label, b->u.key_generate.label) == 0);
		FUZZ_CHECK(a->u.key_generate.exportable == b->u.key_generate.exportable);
		break;
	case PROTO_METHOD_KEY_IMPORT:
		FUZZ_CHECK(a->u.key_import.type == b->u.key_import.type);
		FUZZ_CHECK(strcmp(a->u.key_import.label, b->u.key_import.label) == 0);
		FUZZ_CHECK(memcmp(a->u.key_import.seed, b->u.key_import.seed, 32) == 0);
		FUZZ_CHECK(a->u.key_import.exportable == b->u.key_import.exportable);
		break;
	case PROTO_METHOD_KEY_PUBLIC:
	case PROTO_METHOD_KEY_DELETE:
		FUZZ_CHECK(strcmp(a->u.key_public.label, b->u.key_public.label) == 0);
		break;
	case PROTO_METHOD_SIGN:
		FUZZ_CHECK(strcmp(a->u.sign.label, b->u.sign.label) == 0);
		FUZZ_CHECK(same_bytes(&a->u.sign.message, &b->u.sign.message));
		FUZZ_CHECK(a->u.sign.mode == b->u.sign.mode);
		FUZZ_CHECK(same_bytes(&a->u.sign.context, &b->u.sign.context));
		FUZZ_CHECK(a->u.sign.prehashed == b->u.sign.prehashed);
		break;
	case PROTO_METHOD_VERIFY:
		FUZZ_CHECK(memcmp(a->u.verify.public_key, b->u.verify.public_key, 32) == 0);
		FUZZ_CHECK(memcmp(a->u.verify.signature, b->u.verify.signature, 64) == 0);
		FUZZ_CHECK(same_bytes(&a->u.verify.message, &b->u.verify.message));
		FUZZ_CHECK(a->u.verify.policy == b->u.verify.policy);
		FUZZ_CHECK(a->u.verify.mode == b->u.verify.mode);
		FUZZ_CHECK(same_bytes(&a->u.verify.context, &b->u.verify.context));
		FUZZ_CHECK(a->u.verify.prehashed == b->u.verify.prehashed);
		break;
	case PROTO_METHOD_VERIFY_BATCH:
		FUZZ_CHECK(a->u.verify_batch.n_items == b->u.verify_batch.n_items);
		FUZZ_CHECK(a->u.verify_batch.policy == b->u.verify_batch.policy);
		for (size_t i = 0; i < a->u.verify_batch.n_items; i++) {
			const ProtoVerifyItem *x = &a->u.verify_batch.items[i], *y = &b->u.verify_batch.items[i];

			FUZZ_CHECK(memcmp(x->public_key, y->public_key, 32) == 0);
			FUZZ_CHECK(memcmp(x->signature, y->signature, 64) == 0);
			FUZZ_CHECK(same_bytes(&x->message, &y->message));
		}
		break;
	case PROTO_METHOD_DH:
		FUZZ_CHECK(strcmp(a->u.dh.label, b->u.dh.label) == 0);
		FUZZ_CHECK(memcmp(a->u.dh.peer, b->u.dh.peer, 32) == 0);
		break;
	case PROTO_METHOD_LOCK:
	case PROTO_METHOD_UNLOCK:
		FUZZ_CHECK(a->u.lock.has_passphrase == b->u.lock.has_passphrase);
		if (a->u.lock.has_passphrase)
			FUZZ_CHECK(same_bytes(&a->u.lock.passphrase, &b->u.lock.passphrase));
		break;
	default:
		break;
	}
}

static void frame(const uint8_t *f, size_t len)
{
	ProtoRequest req = PROTO_REQUEST_NULL(req);
	char err[PROTO_MESSAGE_MAX];
	bool has_msgid = false;
	int r;

	/* msgpack-c agrees that this is one whole object */
	{
		msgpack_unpacked u;
		size_t off = 0;

		msgpack_unpacked_init(&u);
		r = msgpack_unpack_next(&u, (const char *)f, len, &off);
		FUZZ_CHECK(r == MSGPACK_UNPACK_SUCCESS || r == MSGPACK_UNPACK_NOMEM_ERROR);
		if (r == MSGPACK_UNPACK_SUCCESS)
			FUZZ_CHECK(off == len);
		msgpack_unpacked_destroy(&u);
	}

	err[0] = '\0';
	r = proto_request_decode(&req, &has_msgid, f, len, err);
	FUZZ_CHECK(r == 0 || r == -ENOMEM || r == PROTO_E_BAD_REQUEST || r == PROTO_E_UNKNOWN_METHOD);
	if (r > 0)
		FUZZ_CHECK(err[0] != '\0' && memchr(err, '\0', sizeof(err)) != NULL);
	if (r == 0) {
		ProtoBuf b = PROTO_BUF_NULL(b);
		ProtoRequest again = PROTO_REQUEST_NULL(again);
		bool has2;

		FUZZ_CHECK(has_msgid);
		FUZZ_CHECK(req.method >= 0 && req.method < _PROTO_METHOD_N);
		r = proto_request_encode(&b, &req);
		FUZZ_CHECK(r == 0 || r == -ENOMEM);
		if (r == 0) {
			r = proto_request_decode(&again, &has2, b.data, b.len, err);
			FUZZ_CHECK(r == 0 || r == -ENOMEM);
			if (r == 0)
				check_same(&req, &again);
		}
		proto_request_deinit(&again);
		proto_buf_deinit(&b);
	}
	proto_request_deinit(&req);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProtoReader *rd = NULL;
	uint8_t step;
	size_t off = 1, piece = 1;
	int k = 0;

	if (size < 1)
		return 0;
	step = data[0];
	FUZZ_CHECK(proto_reader_new(&rd, MAX_FRAME) == 0);
	while (off < size && k == 0) {
		size_t n;

		/* piece sizes: 1, 2, 3, ... (step odd) or all at once */
		n = (step & 1) ? piece++ : size - off;
		if (n > size - off)
			n = size - off;
		k = proto_reader_feed(rd, data + off, n);
		off += n;
		while (k == 0) {
			const uint8_t *f;
			size_t len;

			k = proto_reader_next(rd, &f, &len);
			if (k == PROTO_READER_NONE) {
				k = 0;
				break;
			}
			if (k != PROTO_READER_FRAME)
				break;
			FUZZ_CHECK(len > 0 && len <= MAX_FRAME);
			frame(f, len);
			k = 0;
		}
	}
	FUZZ_CHECK(k == 0 || k == -ENOMEM || k == PROTO_READER_E_INVALID || k == PROTO_READER_E_TOO_LARGE);
	if (k > 0) {
		uint64_t msgid;

		/* the reader is dead: the same error again */
		FUZZ_CHECK(proto_reader_feed(rd, "\x90", 1) == k);
		(void)proto_reader_msgid(rd, &msgid);
	}
	proto_reader_free(rd);
	return 0;
}
