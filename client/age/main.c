/* SPDX-License-Identifier: MIT */
/*
 * main.c - age-plugin-sigil: age's plugin for keys held by sigild
 *
 * age runs it as "age-plugin-sigil --age-plugin=identity-v1" for identities
 * AGE-PLUGIN-SIGIL-1... (sigil pubkey --format age-identity LABEL) and
 * talks to it over stdin/stdout (plugin.c). It finds sigild as the sigil
 * command does ($SIGIL_SOCK, else the default socket). It only decrypts:
 * files for a sigil key are made with age -r and the key's age1 recipient.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "agefile.h"
#include "plugin.h"

typedef struct Io {
	uint8_t *buf;
	size_t len, cap;
	bool eof;
} Io;

/* more bytes from stdin: 0, or -1 at EOF or on an error */
static int io_fill(Io *io)
{
	ssize_t n;

	if (io->eof)
		return -1;
	if (io->len == io->cap) {
		size_t cap = io->cap ? 2 * io->cap : 4096;
		uint8_t *b;

		if (cap > 64u << 20)
			return -1;
		b = malloc(cap);
		if (!b)
			return -1;
		if (io->len)
			memcpy(b, io->buf, io->len);
		if (io->buf) {
			sodium_memzero(io->buf, io->cap);
			free(io->buf);
		}
		io->buf = b;
		io->cap = cap;
	}
	do
		n = read(STDIN_FILENO, io->buf + io->len, io->cap - io->len);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		io->eof = true;
		return -1;
	}
	io->len += (size_t)n;
	return 0;
}

static void io_take(Io *io, size_t n)
{
	if (n == 0)
		return; /* io->buf may still be NULL */
	memmove(io->buf, io->buf + n, io->len - n);
	io->len -= n;
}

static int ipc_send(void *ctx, const char *const *args, size_t n_args, const uint8_t *body, size_t body_len)
{
	AgeBuf b = AGEBUF_NULL(b);
	int r;

	(void)ctx;
	r = agefile_stanza_write(&b, args, n_args, body, body_len);
	if (r == 0 && (fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0))
		r = -1;
	agefile_buf_deinit(&b);
	return r ? -1 : 0;
}

static int ipc_recv(void *ctx, char *cmd, size_t cap)
{
	Io *io = ctx;

	for (;;) {
		AgeStanza s;
		size_t used = 0;
		int r = agefile_stanza_parse(&s, io->buf ? io->buf : (const uint8_t *)"", io->len, &used);

		if (r == 0) {
			snprintf(cmd, cap, "%s", s.args[0]);
			agefile_stanza_deinit(&s);
			io_take(io, used);
			return 0;
		}
		if (r != -EAGAIN || io_fill(io) < 0)
			return -1;
	}
}

static sigil_error plugin_connect(sigil_client **cp)
{
	return sigil_client_connect(cp, NULL, 0);
}

static int identity_v1(void)
{
	Plugin p = PLUGIN_NULL(p);
	Io io = { NULL, 0, 0, false };
	PluginIpc ipc = { ipc_send, ipc_recv, &io };
	int r;

	for (;;) {
		size_t used = 0;

		r = plugin_phase1_feed(&p, io.buf ? io.buf : (const uint8_t *)"", io.len, &used);
		io_take(&io, used);
		if (r != 0)
			break;
		if (io_fill(&io) < 0) {
			r = -EPIPE;
			break;
		}
	}
	if (r == 1)
		r = plugin_phase2(&p, &ipc, plugin_connect);
	else
		fprintf(stderr, "age-plugin-sigil: %s\n",
		        r == -EPIPE ? "age closed the connection in phase 1" : "malformed input from age");
	plugin_deinit(&p);
	if (io.buf) {
		sodium_memzero(io.buf, io.cap);
		free(io.buf);
	}
	return r == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 1;
	/* age closes the pipes once it has what it needs (or after an error) */
	signal(SIGPIPE, SIG_IGN);
	if (argc == 2 && strcmp(argv[1], "--age-plugin=identity-v1") == 0)
		return identity_v1();
	if (argc == 2 && strncmp(argv[1], "--age-plugin=", 13) == 0) {
		if (strcmp(argv[1], "--age-plugin=recipient-v1") == 0)
			fprintf(stderr, "age-plugin-sigil: only decrypts; encrypt with age -r and the key's age1 "
			                "recipient (sigil pubkey --format age LABEL)\n");
		else
			fprintf(stderr, "age-plugin-sigil: unknown state machine %s\n", argv[1] + 13);
		return 1;
	}
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("age-plugin-sigil %s\n", SIGIL_CLIENT_VERSION);
		return 0;
	}
	fprintf(argc == 2 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
	        "Usage: age-plugin-sigil --age-plugin=identity-v1 (run by age)\n"
	        "age's plugin for x25519 keys held by sigild. Make an identity file with\n"
	        "  sigil pubkey --format age-identity LABEL > LABEL.txt\n"
	        "then decrypt with age -d -i LABEL.txt FILE. Encrypt with\n"
	        "  age -r $(sigil pubkey --format age LABEL) FILE\n");
	return argc == 2 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
