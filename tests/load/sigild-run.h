/* SPDX-License-Identifier: MIT */
/*
 * sigild-run.h - start the real sigild and talk to it over raw sockets
 * (shared by tests/load and tests/faults)
 *
 * The client side here is msgpack-c directly, not proto/ or libsigil, so
 * the abuse tools can send anything. Results print as TAP.
 */
#ifndef SIGIL_TESTS_SIGILD_RUN_H
#define SIGIL_TESTS_SIGILD_RUN_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

typedef struct Sigild {
	char dir[256];
	char sock[320];
	char state[320];
	char config[320];
	char log[320];
	pid_t pid;
} Sigild;

/* TAP */
void tap_ok(bool ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tap_done(void); /* prints the plan; exit status: 0 if every test passed */
uint64_t now_ms(void);

/* a fresh directory (on /tmp), a config file with the given text */
int sigild_setup(Sigild *d, const char *config_text);
/* fork+exec $SIGILD --foreground with the paths of d and extra args; waits
 * until it answers. Return: pid, or -1 (exit status in *statusp if it exited) */
pid_t sigild_start(Sigild *d, const char *const *extra, int *statusp);
/* send sig, wait up to timeout_ms. Return: wait status, or -1 on timeout (then SIGKILLed) */
int sigild_stop(Sigild *d, int sig, int timeout_ms);
void sigild_cleanup(Sigild *d);
/* the last lines of the daemon log on stdout as TAP comments */
void sigild_show_log(const Sigild *d, int lines);
bool sigild_log_contains(const Sigild *d, const char *needle);

int sigild_connect(const Sigild *d); /* blocking fd, or -1 */
int proc_fd_count(pid_t pid);
long proc_status_kb(pid_t pid, const char *field); /* "VmHWM", "VmRSS"; -1 */
/* raise RLIMIT_NOFILE (soft and, as root, hard) to at least n. 0 or -1 */
int raise_nofile(rlim_t n);

/* requests: appended to sb */
void req_hello(msgpack_sbuffer *sb, uint64_t msgid);
void req_status(msgpack_sbuffer *sb, uint64_t msgid);
void req_sign(msgpack_sbuffer *sb, uint64_t msgid, const char *label, const void *msg, size_t len);
void req_verify(msgpack_sbuffer *sb, uint64_t msgid, const uint8_t pk[32], const uint8_t sig[64],
                const void *msg, size_t len);
/* a method with a label, or (label NULL) no parameters */
void req_key(msgpack_sbuffer *sb, uint64_t msgid, const char *method, const char *label);
/* unlock, with a passphrase (a string) or none (NULL) */
void req_unlock(msgpack_sbuffer *sb, uint64_t msgid, const char *passphrase);
/* key.generate when seed is NULL, else key.import */
void req_new_key(msgpack_sbuffer *sb, uint64_t msgid, const char *type, const char *label,
                 const uint8_t seed[32]);

int write_all(int fd, const void *p, size_t n); /* 0 or -errno */

/* One response read from a connection. */
typedef struct Resp {
	msgpack_unpacked u;
	bool has_msgid;
	uint64_t msgid;
	char code[32];       /* "" when no error */
	char message[256];
	const msgpack_object *result;
} Resp;

typedef struct RespReader {
	msgpack_unpacker up;
	int fd;
	bool eof;
} RespReader;

int resp_reader_init(RespReader *rr, int fd);
void resp_reader_deinit(RespReader *rr);
/* next response, waiting up to timeout_ms. Return: 1 got one (resp_free it),
 * 0 EOF, -1 timeout/error/malformed */
int resp_next(RespReader *rr, Resp *r, int timeout_ms);
/* only from what was already read (no waiting): 1, or 0 if none buffered */
int resp_buffered(RespReader *rr, Resp *r);
/* feed bytes read elsewhere (non-blocking clients). Return: 0, or -1 */
int resp_feed(RespReader *rr, const void *p, size_t n);
void resp_free(Resp *r);
/* result map lookups: NULL if absent or of another type */
const msgpack_object *resp_get(const Resp *r, const char *key);
bool resp_get_bin(const Resp *r, const char *key, const uint8_t **p, size_t *n);

/* one request / one answer on a new connection */
int rpc_call(const Sigild *d, const msgpack_sbuffer *req, Resp *r, RespReader *rr, int timeout_ms);

/* A well-behaved client: hello, then sign a fresh message with key
 * "probe" and check the signature against pk with libsodium.
 * Return: 0 if every answer was right. */
int probe(const Sigild *d, const uint8_t pk[32]);
/* key.import "probe" (fixed seed), fills pk. Return: 0 */
int probe_setup(const Sigild *d, uint8_t pk[32]);

#endif /* SIGIL_TESTS_SIGILD_RUN_H */
