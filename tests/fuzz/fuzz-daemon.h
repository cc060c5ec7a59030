/* SPDX-License-Identifier: MIT */
/*
 * fuzz-daemon.h - sigild's own objects for the targets that talk to it
 *
 * Shared by fuzz-rpc.c and fuzz-agent.c (one includer per binary): the
 * target's one Server with its libuv loop and worker pool, a real Keystore
 * in a state directory on tmpfs with "ed" (ed25519) and "x" (x25519), and
 * the exchange of one input over one connection to it.
 */
#ifndef SIGIL_TESTS_FUZZ_DAEMON_H
#define SIGIL_TESTS_FUZZ_DAEMON_H

#include <errno.h>
#include <poll.h>
#include <signal.h>
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
	FUZZ_CHECK(keystore_reserve(&server.keystore, label, type, false, (uint32_t)getuid(), false, &k) == 0);
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

/* LLVMFuzzerInitialize's part: secure memory, the state directory
 * <tmpfs>/sigil-fuzz-<name>.XXXXXX (removed at exit), small limits so their
 * paths are reachable (8 KiB frames, 4 requests in flight per connection,
 * 16 in total), the server and its two keys. */
static void fuzz_daemon_init(const char *name)
{
	Config config;
	struct stat st;

	log_set_max_priority(LOG_PRIO_ERR - 1); /* bad input is logged by design */
	FUZZ_CHECK(sodium_init() >= 0);
	FUZZ_CHECK(secmem_setup(true) == 0);
	setenv("UV_THREADPOOL_SIZE", "2", 1);
	signal(SIGPIPE, SIG_IGN);
	snprintf(state_dir, sizeof(state_dir), "%s/sigil-fuzz-%s.XXXXXX",
	         stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp", name);
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
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
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
	server.ops.locked = false;
	server.ops.has_lock_pass = false;
	server.ops.unlock_failures = 0;
	server.ops.unlock_gate_ms = 0;
}

/* One input over one connection, fd (non-blocking, sigild at the other
 * end): the bytes are written in pieces of 1, 2, 4, ... bytes, the client
 * half-closes, and the loop runs until sigild (named who in the error)
 * closes the connection, which must happen within 10 s. Everything sigild
 * sent lands in out (cap bytes); returns its length. Closes fd and lets
 * close callbacks and late completions run. */
static size_t fuzz_daemon_exchange(int fd, const uint8_t *data, size_t size, uint8_t *out,
                                   size_t cap, const char *who)
{
	size_t out_len = 0, written = 0, piece = 1;
	int eof = 0;
	uint64_t deadline;

	deadline = now_ms() + 10000;
	while (!eof) {
		struct pollfd p[2] = {
			{ .fd = uv_backend_fd(loop), .events = POLLIN },
			{ .fd = fd, .events = POLLIN },
		};

		if (written < size) {
			/* pieces of 1, 2, 4, ... bytes: frames split at every place */
			size_t n = size - written < piece ? size - written : piece;
			ssize_t k = write(fd, data + written, n);

			if (k > 0) {
				written += (size_t)k;
				piece *= 2;
			} else if (k < 0 && errno == EPIPE) {
				written = size; /* sigild closed early (bad bytes) */
			}
			if (written == size)
				shutdown(fd, SHUT_WR);
		} else if (size == 0 && written == 0) {
			shutdown(fd, SHUT_WR);
			written = 1;
		}
		uv_run(loop, UV_RUN_NOWAIT);
		for (;;) {
			uint8_t tmp[4096];
			ssize_t k = read(fd, tmp, sizeof(tmp));

			if (k > 0) {
				FUZZ_CHECK(out_len + (size_t)k <= cap);
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
			fprintf(stderr, "%s did not close the connection within 10 s of EOF "
			                "(%zu of %zu bytes written, %zu answered)\n", who, written, size, out_len);
			abort();
		}
		(void)poll(p, 2, written < size ? 0 : 20);
	}
	close(fd);
	/* close callbacks, late completions */
	while (server.ops.inflight > 0 && now_ms() < deadline) {
		uv_run(loop, UV_RUN_ONCE);
	}
	uv_run(loop, UV_RUN_NOWAIT);

	return out_len;
}

#endif /* SIGIL_TESTS_FUZZ_DAEMON_H */
