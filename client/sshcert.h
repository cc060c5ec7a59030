/* SPDX-License-Identifier: MIT */
/*
 * sshcert.h - `sigil ssh-cert`: OpenSSH certificates (PROTOCOL.certkeys,
 * draft-miller-ssh-cert) signed by a sigil Ed25519 key as the CA
 *
 * The certificate is built here; sigild only signs its bytes (a plain pure
 * Ed25519 `sign` over the main socket), so the CA key never leaves sigild.
 */
#ifndef SIGIL_CLIENT_SSHCERT_H
#define SIGIL_CLIENT_SSHCERT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sigil/client.h>

/*
 * What the sigil command lends the subcommand: its common options (-s,
 * --json, --timeout, --help), connection and error reporting, so that
 * `sigil ssh-cert` behaves as every other subcommand.
 */
typedef struct SshcertCli {
	/* 1 if c was a common option, -1 to stop with *exitp, 0 otherwise */
	int (*common_opt)(int c, int *exitp);
	int (*open_client)(sigil_client **cp);
	int (*fail)(sigil_client *c, sigil_error e, const char *what);
	int (*usage_error)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	void (*err)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
	/* atomic write of a file (- is stdout) */
	int (*write_out)(const char *path, const void *data, size_t len);
	int opt_json, opt_timeout; /* the getopt values of --json and --timeout */
	const bool *json;          /* --json was given: one JSON document on stdout */
	void (*json_open)(void);
	void (*json_str)(const char *s);
} SshcertCli;

extern const char sshcert_usage[];

/* sigil ssh-cert ARGS: the exit status (0, 2 usage or bad input, 3, 4) */
int sshcert_run(const SshcertCli *cli, int argc, char **argv);

/*
 * sshcert_parse_validity() - ssh-keygen's -V: "+52w", "FROM:TO" with
 * FROM = always | [+-]TIME | YYYYMMDD[HHMM[SS]][Z] | 0xHEX and TO = forever
 * | the same forms. A single time that is not relative means "from now".
 * Absolute times are local time unless they end in Z (UTC), as ssh-keygen.
 * Return: 0, or -1 (*fromp, *top untouched) if malformed or empty.
 */
int sshcert_parse_validity(const char *spec, int64_t now, uint64_t *fromp, uint64_t *top);

#endif /* SIGIL_CLIENT_SSHCERT_H */
