/* SPDX-License-Identifier: MIT */
/*
 * fuzz-agent.c - ssh-agent requests through sigild's agent socket
 *
 * The input is the byte stream an ssh-agent client sends on one
 * connection (uint32 length, type, body; draft-miller-ssh-agent). As in
 * fuzz-rpc.c the target runs sigild's own objects: a Server with its loop
 * and worker pool, a real Keystore on tmpfs with "ed" (ed25519) and "x"
 * (x25519), and the agent socket of daemon/agent.c (server_listen_agent on a
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

#include "fuzz-daemon.h"

static char agent_path[320];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_daemon_init("agent");
	snprintf(agent_path, sizeof(agent_path), "%s/run/agent.sock", state_dir);
	FUZZ_CHECK(server_listen_agent(&server, agent_path) == 0);
	return 0;
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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t out[1 << 20];
	size_t out_len;
	int sv[2] = { -1, -1 };

	{
		struct sockaddr_un sa = { .sun_family = AF_UNIX };

		sv[1] = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		FUZZ_CHECK(sv[1] >= 0);
		memcpy(sa.sun_path, agent_path, strlen(agent_path) + 1);
		FUZZ_CHECK(connect(sv[1], (struct sockaddr *)&sa, sizeof(sa)) == 0);
		FUZZ_CHECK(fcntl(sv[1], F_SETFL, O_NONBLOCK) == 0);
	}

	out_len = fuzz_daemon_exchange(sv[1], data, size, out, sizeof(out), "sigild's agent");

	{
		size_t n = check_responses(out, out_len);

		/* SIGIL_FUZZ_VERBOSE=1: what each input got (to inspect seeds) */
		if (getenv("SIGIL_FUZZ_VERBOSE"))
			fprintf(stderr, "fuzz-agent: %zu input bytes, %zu responses (%zu bytes)\n", size, n, out_len);
	}
	FUZZ_CHECK(server.hub.n_streams == 0 && server.hub.streams == NULL);
	restore_keys();
	/* an agent job may still hold a deleted key for a moment */
	for (uint64_t t0 = now_ms(); secmem_count() != keystore_count(&server.keystore) && now_ms() - t0 < 2000;) {
		uv_run(loop, UV_RUN_NOWAIT);
		usleep(1000);
	}
	FUZZ_CHECK(secmem_count() == keystore_count(&server.keystore));
	return 0;
}
