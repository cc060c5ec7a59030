/* SPDX-License-Identifier: MIT */
/*
 * fuzz-rpc.c - msgpack-rpc requests through the daemon's own code
 *
 * The input is the byte stream a client sends on one connection. The
 * target runs sigild's objects, not a model of them: a Server with its
 * libuv loop and worker pool, a real Keystore in a state directory on
 * tmpfs (two keys, "ed" ed25519 and "x" x25519, so sign and dh reach the
 * crypto), and a Stream on one end of a socketpair, through the
 * accept path's own admission (server_adopt). The bytes are
 * written to the other end in pieces, the client half-closes, and the loop
 * runs until sigild closes the connection. So the path is reader ->
 * proto_request_decode -> rpc.c -> ops.c -> worker -> encoder -> socket.
 *
 * Limits are small so their paths are reachable: 8 KiB frames, 4 requests
 * in flight per connection, 16 in total.
 *
 * Oracles:
 * - the daemon closes the connection within 10 s of the client's EOF (a
 *   hang is a bug: nothing may wait forever on a half-closed client);
 * - everything it sends is a sequence of complete msgpack-rpc responses
 *   [1, msgid|nil, nil|{code, message}, result] with a known error code;
 * - afterwards no connection, request or byte is accounted in flight, and
 *   secure memory holds exactly one allocation per key (no leaked secret).
 * Keys the input created are deleted and "ed"/"x" restored between inputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "keystore.h"
#include "log.h"
#include "secmem.h"
#include "server.h"

#include "fuzz-daemon.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_daemon_init("rpc");
	return 0;
}

static int is_str(const msgpack_object *o, const char *s)
{
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
	       memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

/* every byte sigild sent is part of a well-formed response */
static size_t check_responses(const uint8_t *out, size_t n)
{
	msgpack_unpacked u;
	size_t off = 0, count = 0;
	int r;

	msgpack_unpacked_init(&u);
	while (off < n) {
		const msgpack_object *a;

		r = msgpack_unpack_next(&u, (const char *)out, n, &off);
		FUZZ_CHECK(r == MSGPACK_UNPACK_SUCCESS);
		FUZZ_CHECK(u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == 4);
		a = u.data.via.array.ptr;
		FUZZ_CHECK(a[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER && a[0].via.u64 == 1);
		FUZZ_CHECK(a[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER || a[1].type == MSGPACK_OBJECT_NIL);
		if (a[2].type == MSGPACK_OBJECT_NIL) {
			FUZZ_CHECK(a[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER);
			FUZZ_CHECK(a[3].type == MSGPACK_OBJECT_MAP);
		} else {
			const msgpack_object_map *m = &a[2].via.map;
			int have_code = 0, have_msg = 0;

			FUZZ_CHECK(a[2].type == MSGPACK_OBJECT_MAP);
			for (uint32_t i = 0; i < m->size; i++) {
				const msgpack_object *k = &m->ptr[i].key, *v = &m->ptr[i].val;

				if (is_str(k, "code")) {
					FUZZ_CHECK(v->type == MSGPACK_OBJECT_STR);
					FUZZ_CHECK(proto_error_from_name(v->via.str.ptr, v->via.str.size) > 0);
					have_code = 1;
				} else if (is_str(k, "message")) {
					FUZZ_CHECK(v->type == MSGPACK_OBJECT_STR);
					have_msg = 1;
				}
			}
			FUZZ_CHECK(have_code && have_msg);
		}
		count++;
	}
	msgpack_unpacked_destroy(&u);
	return count;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1 << 20];
	size_t out_len;
	int sv[2];

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	server_adopt(&server, sv[0], false);

	out_len = fuzz_daemon_exchange(sv[1], data, size, out, sizeof(out), "sigild");

	{
		size_t n = check_responses(out, out_len);

		/* SIGIL_FUZZ_VERBOSE=1: what each input got (to inspect seeds) */
		if (getenv("SIGIL_FUZZ_VERBOSE"))
			fprintf(stderr, "fuzz-rpc: %zu input bytes, %zu responses (%zu bytes)\n", size, n, out_len);
	}
	FUZZ_CHECK(server.hub.n_streams == 0 && server.hub.streams == NULL);
	FUZZ_CHECK(server.ops.inflight == 0 && server.ops.inflight_bytes == 0 && server.hub.held_bytes == 0);
	restore_keys();
	FUZZ_CHECK(secmem_count() == keystore_count(&server.keystore));
	return 0;
}
