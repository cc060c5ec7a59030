/* SPDX-License-Identifier: MIT */
/*
 * fuzz-rpc.c - msgpack-rpc requests through the daemon's own code
 *
 * The input is the byte stream a client sends on one connection. The
 * target runs sigild's objects, not a model of them: a Server with its
 * libuv loop and worker pool, a real Keystore in a state directory on
 * tmpfs (two keys, "ed" ed25519 and "x" x25519, so sign and dh reach the
 * crypto), and a Conn on one end of a socketpair, exactly as
 * server_on_connection makes it (conn_new, then conn_start). The bytes are
 * written to the other end in pieces, the client half-closes, and the loop
 * runs until sigild closes the connection. So the path is reader ->
 * proto_request_decode -> handler_dispatch -> worker -> encoder -> socket.
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

#include "fuzz.h"

static Server server;
static uv_loop_t *loop;
static char state_dir[256];

static void add_key(const char *label, ProtoKeyType type, uint8_t fill)
{
	uint8_t seed[32];
	Key *k = NULL;

	memset(seed, fill, sizeof(seed));
	FUZZ_CHECK(keystore_reserve(&server.keystore, label, type, false, &k) == 0);
	FUZZ_CHECK(keystore_materialize(&server.keystore, k, seed) == 0);
	keystore_commit(&server.keystore, k);
	key_unref(k);
}

static void cleanup(void)
{
	char cmd[300];

	/* the directory holds only what this process made */
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", state_dir);
	if (state_dir[0])
		(void)!system(cmd);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	Config config;
	struct stat st;

	log_set_max_priority(LOG_PRIO_ERR - 1); /* bad input is logged by design */
	FUZZ_CHECK(sodium_init() >= 0);
	FUZZ_CHECK(secmem_setup(true) == 0);
	setenv("UV_THREADPOOL_SIZE", "2", 1);
	signal(SIGPIPE, SIG_IGN);
	snprintf(state_dir, sizeof(state_dir), "%s/sigil-fuzz-rpc.XXXXXX",
	         stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(state_dir) != NULL);
	atexit(cleanup);

	config_init(&config);
	config.max_request_size = 8192;
	config.max_inflight_per_conn = 4;
	config.max_inflight_total = 16;
	config.workers = 2;
	loop = uv_default_loop();
	server.keystore = (Keystore)KEYSTORE_NULL(server.keystore);
	FUZZ_CHECK(keystore_open(&server.keystore, state_dir) == 0);
	FUZZ_CHECK(server_init(&server, loop, &config, NULL, 2) == 0);
	add_key("ed", PROTO_KEY_ED25519, 0x11);
	add_key("x", PROTO_KEY_X25519, 0x22);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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

static void restore_keys(void)
{
	Keystore *ks = &server.keystore;
	char label[PROTO_LABEL_MAX + 1];

	/* a lock the input left: open the keys again (the state directory's
	 * master key needs no passphrase) */
	if (ks->locked)
		FUZZ_CHECK(keystore_unlock(ks, NULL, 0) == 0);
	for (size_t i = 0; i < ks->n_keys;) {
		Key *k = ks->keys[i];

		if (strcmp(k->info.label, "ed") != 0 && strcmp(k->info.label, "x") != 0) {
			memcpy(label, k->info.label, sizeof(label));
			FUZZ_CHECK(keystore_delete(ks, label) == 0);
			i = 0;
			continue;
		}
		i++;
	}
	if (!keystore_find(ks, "ed"))
		add_key("ed", PROTO_KEY_ED25519, 0x11);
	if (!keystore_find(ks, "x"))
		add_key("x", PROTO_KEY_X25519, 0x22);
	server.locked = false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1 << 20];
	size_t out_len = 0, written = 0, piece = 1;
	int sv[2], eof = 0;
	uint64_t deadline;
	Conn *c;

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
	FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	FUZZ_CHECK(conn_new(&c, &server) == 0);
	FUZZ_CHECK(uv_pipe_open(&c->pipe, sv[0]) == 0);
	c->uid = getuid();
	c->pid = getpid();
	conn_start(c);

	deadline = now_ms() + 10000;
	while (!eof) {
		struct pollfd p[2] = {
			{ .fd = uv_backend_fd(loop), .events = POLLIN },
			{ .fd = sv[1], .events = POLLIN },
		};

		if (written < size) {
			/* pieces of 1, 2, 4, ... bytes: frames split at every place */
			size_t n = size - written < piece ? size - written : piece;
			ssize_t k = write(sv[1], data + written, n);

			if (k > 0) {
				written += (size_t)k;
				piece *= 2;
			} else if (k < 0 && errno == EPIPE) {
				written = size; /* sigild closed early (bad bytes) */
			}
			if (written == size)
				shutdown(sv[1], SHUT_WR);
		} else if (size == 0 && written == 0) {
			shutdown(sv[1], SHUT_WR);
			written = 1;
		}
		uv_run(loop, UV_RUN_NOWAIT);
		for (;;) {
			uint8_t tmp[4096];
			ssize_t k = read(sv[1], tmp, sizeof(tmp));

			if (k > 0) {
				FUZZ_CHECK(out_len + (size_t)k <= sizeof(out));
				memcpy(out + out_len, tmp, (size_t)k);
				out_len += (size_t)k;
				continue;
			}
			if (k == 0 || (k < 0 && errno == ECONNRESET))
				eof = 1;
			break;
		}
		if (eof)
			break;
		if (now_ms() > deadline) {
			fprintf(stderr, "sigild did not close the connection within 10 s of EOF "
			                "(%zu of %zu bytes written, %zu answered)\n", written, size, out_len);
			abort();
		}
		(void)poll(p, 2, written < size ? 0 : 20);
	}
	close(sv[1]);
	/* close callbacks, late completions */
	while (server.inflight > 0 && now_ms() < deadline) {
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_run(loop, UV_RUN_NOWAIT);

	{
		size_t n = check_responses(out, out_len);

		/* SIGIL_FUZZ_VERBOSE=1: what each input got (to inspect seeds) */
		if (getenv("SIGIL_FUZZ_VERBOSE"))
			fprintf(stderr, "fuzz-rpc: %zu input bytes, %zu responses (%zu bytes)\n", size, n, out_len);
	}
	FUZZ_CHECK(server.n_conns == 0 && server.conns == NULL);
	FUZZ_CHECK(server.inflight == 0 && server.inflight_bytes == 0);
	restore_keys();
	FUZZ_CHECK(secmem_count() == keystore_count(&server.keystore));
	return 0;
}
