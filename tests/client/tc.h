/* SPDX-License-Identifier: MIT */
/*
 * tc.h - helpers of the client tests: a scratch directory, the real sigild
 * started on a temporary socket and state directory, and shell commands
 * run with their output captured (shown as TAP comments on failure).
 */
#ifndef SIGIL_TEST_CLIENT_TC_H
#define SIGIL_TEST_CLIENT_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

typedef struct TcDaemon {
	pid_t pid;
	char dir[256];     /* scratch directory (removed by tc_daemon_stop) */
	char sock[512];    /* socket path */
	char state[512];   /* state directory */
	char log[512];     /* sigild's stderr */
} TcDaemon;

/* $SIGIL_BUILD_ROOT/<rel>; fails the test when SIGIL_BUILD_ROOT is unset */
const char *tc_build_path(const char *rel);
/* Fails the test unless the program is found on PATH (a missing tool is a
 * failure, never a skip). */
void tc_need_tool(const char *name);

/* Starts sigild in a fresh scratch directory and waits until its socket
 * answers. Fails the test (printing the daemon log) if it does not start
 * within 20 s. */
void tc_daemon_start(TcDaemon *d);
/* The same with a sigil.conf holding config_text (passed with --config). */
void tc_daemon_start_config(TcDaemon *d, const char *config_text);
/* SIGTERM, wait, and remove the scratch directory. Returns -1 (after
 * printing the daemon log) if sigild had already exited, else 0. */
int tc_daemon_stop(TcDaemon *d);
/* sigild's peak resident set (VmHWM) in KiB, -1 if unknown */
long tc_daemon_hwm_kib(const TcDaemon *d);
/* Prints the daemon log as TAP comments. */
void tc_daemon_dump_log(const TcDaemon *d);

typedef struct TcResult {
	int status;        /* exit code, or 128 + signal */
	char *out;         /* stdout + stderr, NUL-terminated (malloc'd) */
	size_t out_len;
	long maxrss_kib;   /* peak RSS of the command's process tree */
} TcResult;

/* Runs `sh -c cmd` (printf-style) in dir, environment plus SIGIL_SOCK=sock
 * when sock is not NULL. Always returns; never fails the test itself. */
TcResult tc_sh(const char *dir, const char *sock, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void tc_result_free(TcResult *r);

/* Asserts the exit status of a command; prints its output on failure. */
#define tc_expect(r, want) tc__expect((r), (want), __FILE__, __LINE__)
void tc__expect(TcResult *r, int want, const char *file, int line);

/* writes/reads a whole file (fails the test on error) */
void tc_write_file(const char *path, const void *data, size_t len);
char *tc_read_file(const char *path, size_t *lenp);

#endif /* SIGIL_TEST_CLIENT_TC_H */
