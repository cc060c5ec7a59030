/* SPDX-License-Identifier: MIT */
/*
 * cli.h - what the sigil command (sigil.c) lends its command files
 * (age-cmd.c): the common options, error reporting with the command's exit
 * codes, the connection, file input and output, --json output
 */
#ifndef SIGIL_CLIENT_CLI_H
#define SIGIL_CLIENT_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sigil/client.h>

#define CLI_EXIT_VALID 0
#define CLI_EXIT_USAGE 2
#define CLI_EXIT_REFUSED 4

/* the values of sigil.c's OPT_JSON and OPT_TIMEOUT (checked there) */
#define CLI_OPT_JSON 0x100
#define CLI_OPT_TIMEOUT 0x101
#define CLI_COMMON_LONGOPTS                                        \
	{ "socket", required_argument, NULL, 's' },                \
	{ "json", no_argument, NULL, CLI_OPT_JSON },               \
	{ "timeout", required_argument, NULL, CLI_OPT_TIMEOUT },   \
	{ "help", no_argument, NULL, 'h' }

/* an option every command takes: 1 handled, 0 not one, -1 stop (*exitp) */
int cli_common_opt(int c, int *exitp);
int cli_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void cli_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* reports a failed call; returns its exit code */
int cli_fail(sigil_client *c, sigil_error e, const char *what);
/* 0, or the exit code (reported) */
int cli_open_client(sigil_client **cp);
bool cli_json(void);
void cli_json_open(void);
void cli_json_str(const char *s);
void cli_print_one_key(const sigil_key_info *k);
/* FILE or - (stdin), at most max bytes: 0 or -1 (errno) */
int cli_read_all(const char *path, size_t max, uint8_t **datap, size_t *lenp);
/* a secret into the caller's buffer: the length or -1 (errno) */
long cli_read_secret(const char *path, uint8_t *buf, size_t cap);
/* atomically to path, or stdout for "-": 0 or -1 (errno) */
int cli_write_out(const char *path, const void *data, size_t len);

#endif /* SIGIL_CLIENT_CLI_H */
