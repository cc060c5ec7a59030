/* SPDX-License-Identifier: MIT */
/*
 * fuzz-proto-decode.c - libFuzzer target for the server side of proto/:
 * the frame reader (fed in chunks whose sizes come from the input) and the
 * request decoder on every frame it returns, then an error response for
 * each. Built with -Dfuzz=true (clang, -fsanitize=fuzzer,address,undefined).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ProtoReader *r;
	size_t off = 0;
	unsigned chunk;

	if (size < 1)
		return 0;
	/* first byte: chunk size 1..256; the rest: the stream */
	chunk = (unsigned)data[0] + 1;
	data++;
	size--;
	if (proto_reader_new(&r, 1 << 16) < 0)
		return 0;
	while (off < size) {
		size_t n = size - off < chunk ? size - off : chunk;
		int k = proto_reader_feed(r, data + off, n);
		const uint8_t *f;
		size_t len;

		off += n;
		if (k)
			break;
		while ((k = proto_reader_next(r, &f, &len)) == PROTO_READER_FRAME) {
			ProtoRequest q;
			ProtoBuf b = PROTO_BUF_NULL(b);
			char err[PROTO_MESSAGE_MAX];
			bool has;
			int d = proto_request_decode(&q, &has, f, len, err);

			if (d > 0)
				(void)proto_error_encode(&b, has, q.msgid, (ProtoError)d, err);
			else if (d == 0 && q.method == PROTO_METHOD_VERIFY_BATCH)
				for (size_t i = 0; i < q.u.verify_batch.n_items; i++)
					if (q.u.verify_batch.items[i].public_key[0] == 0x42 &&
					    q.u.verify_batch.items[i].signature[63] == 0x42)
						b.len += 0; /* touch every pointer the decoder returned */
			proto_buf_deinit(&b);
			proto_request_deinit(&q);
		}
		if (k != PROTO_READER_NONE)
			break;
	}
	{
		uint64_t msgid;

		(void)proto_reader_msgid(r, &msgid);
	}
	proto_reader_free(r);
	return 0;
}
