/* SPDX-License-Identifier: MIT */
/*
 * fuzz-agent.c - ssh-agent requests through sigild's agent socket
 *
 * The input is the byte stream an ssh-agent client sends on one
 * connection (uint32 length, type, body; draft-miller-ssh-agent). As in
 * fuzz-rpc.c the target runs sigild's own objects: a Server with its loop
 * and worker pool, a real Keystore on tmpfs with "ed" (ed25519) and "x"
 * (x25519), and the agent socket of daemon/agent.c (agent_listen on a
 * path in the state directory). Each input is one real connection to that
 * socket: the bytes are written in pieces, the client half-closes, and the
 * loop runs until sigild closes the connection.
 *
 * Oracles:
 * - sigild closes the connection within 10 s of the client's EOF;
 * - everything it sends is a sequence of complete agent messages (length
 *   <= AGENT_MAX_MSG, type FAILURE, SUCCESS, IDENTITIES_ANSWER,
 *   SIGN_RESPONSE, EXTENSION_FAILURE or EXTENSION_RESPONSE);
 * - a SIGN_RESPONSE carries an ssh-ed25519 signature blob;
 * - afterwards nothing is in flight and secure memory holds one allocation
 *   per key. Keys the input added are deleted and "ed"/"x" restored, the
 *   server unlocked. (An agent lock set by AGENTC_LOCK outlives an input.)
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "agent-msg.h"
#include "config.h"
#include "keystore.h"
#include "log.h"
#include "secmem.h"
#include "server.h"

#include "fuzz.h"

static Server server;
static uv_loop_t *loop;
static char state_dir[256];
static char agent_path[320];

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
	snprintf(state_dir, sizeof(state_dir), "%s/sigil-fuzz-agent.XXXXXX",
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
	snprintf(agent_path, sizeof(agent_path), "%s/run/agent.sock", state_dir);
	FUZZ_CHECK(agent_listen(&server, agent_path) == 0);
	return 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* every byte sigild sent is part of a well-formed agent message */
static size_t check_responses(const uint8_t *out, size_t n)
{
	size_t off = 0, count = 0;

	while (off < n) {
		uint32_t len;
		uint8_t type;

		FUZZ_CHECK(n - off >= 5);
		len = be32(out + off);
		FUZZ_CHECK(len >= 1 && len <= AGENT_MAX_MSG && len <= n - off - 4);
		type = out[off + 4];
		FUZZ_CHECK(type == AGENT_FAILURE || type == AGENT_SUCCESS || type == AGENT_IDENTITIES_ANSWER ||
		           type == AGENT_SIGN_RESPONSE || type == AGENT_EXTENSION_FAILURE ||
		           type == AGENT_EXTENSION_RESPONSE);
		if (type == AGENT_SIGN_RESPONSE) {
			AgentIn in = { out + off + 5, len - 1, false };
			size_t bl;
			const uint8_t *blob = agent_get_string(&in, &bl);
			uint8_t sig[64];

			FUZZ_CHECK(!in.bad && in.n == 0);
			FUZZ_CHECK(agent_parse_ed25519_sig(blob, bl, sig) == 0);
		}
		off += 4 + (size_t)len;
		count++;
	}
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
	int sv[2] = { -1, -1 }, eof = 0;
	uint64_t deadline;

	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		sv[1] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		FUZZ_CHECK(sv[1] >= 0);
		memcpy(sa.sun_path, agent_path, strlen(agent_path) + 1);
		FUZZ_CHECK(connect(sv[1], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	}

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
			fprintf(stderr, "sigild's agent did not close the connection within 10 s of EOF "
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
			fprintf(stderr, "fuzz-agent: %zu input bytes, %zu responses (%zu bytes)\n", size, n, out_len);
	}
	FUZZ_CHECK(server.n_conns == 0 && server.conns == NULL);
	restore_keys();
	/* an agent job may still hold a deleted key for a moment */
	for (uint64_t t0 = now_ms(); secmem_count() != keystore_count(&server.keystore) && now_ms() - t0 < 2000;) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	FUZZ_CHECK(secmem_count() == keystore_count(&server.keystore));
	return 0;
}
