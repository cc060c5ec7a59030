/* SPDX-License-Identifier: MIT */
/*
 * test-daemon.c - integration tests of sigild: start the real binary on a
 * temporary socket and state directory and talk to it with a small
 * msgpack-rpc client written here on msgpack-c (independent of proto/).
 *
 * Environment: SIGILD = path of the built sigild (set by meson).
 * Results are checked against libsodium (signatures, X25519) and the RFC
 * 8032 / RFC 7748 vectors (values copied from vectors/rfc8032.json and
 * vectors/rfc7748.json; see vectors/README.md for provenance).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include <msgpack.h>
#include <sodium.h>

/* ---- helpers ------------------------------------------------------------ */

static void hex(uint8_t *out, size_t n, const char *h)
{
	assert_int_equal(strlen(h), 2 * n);
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(h + 2 * i, "%2x", &v), 1);
		out[i] = (uint8_t)v;
	}
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- the daemon under test ----------------------------------------------- */

typedef struct Daemon {
	char dir[64];
	char sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char state[128];
	char config[128];
	char log[128];
	pid_t pid;
} Daemon;

static void daemon_write_config(Daemon *d, const char *text)
{
	FILE *f = fopen(d->config, "w");

	assert_non_null(f);
	fputs(text ? text : "", f);
	fclose(f);
}

static int try_connect(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* fork + exec sigild without waiting */
static pid_t daemon_exec(Daemon *d, const char *const *extra)
{
	const char *sigild = getenv("SIGILD");
	pid_t pid;

	assert_non_null(sigild);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[32];
		int n = 0, fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND, 0600);

		/* a failed test leaves cmocka's test function without daemon_stop():
		 * sigild must not outlive the test program */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		argv[n++] = sigild;
		argv[n++] = "--socket";
		argv[n++] = d->sock;
		argv[n++] = "--state-dir";
		argv[n++] = d->state;
		argv[n++] = "--config";
		argv[n++] = d->config;
		argv[n++] = "--workers";
		argv[n++] = "2";
		argv[n++] = "--foreground";
		for (int i = 0; extra && extra[i]; i++)
			argv[n++] = extra[i];
		argv[n] = NULL;
		execv(sigild, (char *const *)argv);
		_exit(127);
	}
	return pid;
}

/* sigild must fail to start: returns its exit status */
static int daemon_expect_failure(Daemon *d)
{
	pid_t pid = daemon_exec(d, NULL);
	int status;

	for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000;) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			assert_true(WIFEXITED(status));
			return WEXITSTATUS(status);
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("sigild kept running where it should have refused to start");
	return -1;
}

/* fork + exec sigild; returns the pid, or -1 if it exited (status in *statusp) */
static pid_t daemon_spawn(Daemon *d, const char *const *extra, int *statusp)
{
	pid_t pid = daemon_exec(d, extra);

	/* wait until it answers on the socket, or exits */
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000;) {
		int status, fd;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			*statusp = status;
			return -1;
		}
		fd = try_connect(d->sock);
		if (fd >= 0) {
			close(fd);
			return pid;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("sigild did not start listening within 15 s");
	return -1;
}

static void daemon_start(Daemon *d, const char *config)
{
	int status = 0;

	if (!d->dir[0]) {
		snprintf(d->dir, sizeof(d->dir), "/tmp/sigil-test-XXXXXX");
		assert_non_null(mkdtemp(d->dir));
		snprintf(d->sock, sizeof(d->sock), "%s/run/sigild.sock", d->dir);
		snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
		snprintf(d->config, sizeof(d->config), "%s/sigil.conf", d->dir);
		snprintf(d->log, sizeof(d->log), "%s/sigild.log", d->dir);
	}
	daemon_write_config(d, config);
	d->pid = daemon_spawn(d, NULL, &status);
	if (d->pid < 0)
		fail_msg("sigild exited during start-up (status %d); log in %s", status, d->log);
}

/* SIGTERM, and the exit status must be 0 */
static void daemon_stop(Daemon *d)
{
	int status = -1;

	if (d->pid <= 0)
		return;
	assert_int_equal(kill(d->pid, SIGTERM), 0);
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 20000;) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid)
			break;
		usleep(10000);
	}
	if (!WIFEXITED(status)) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
		fail_msg("sigild did not exit after SIGTERM");
	}
	d->pid = 0;
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void daemon_cleanup(Daemon *d)
{
	char cmd[200];

	if (d->pid > 0) {
		kill(d->pid, SIGKILL);
		waitpid(d->pid, NULL, 0);
		d->pid = 0;
	}
	if (d->dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
		if (system(cmd) != 0)
			fprintf(stderr, "# cannot remove %s\n", d->dir);
	}
	memset(d, 0, sizeof(*d));
}

static int log_count(const Daemon *d, const char *needle)
{
	FILE *f = fopen(d->log, "r");
	char line[2048];
	int n = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		n += strstr(line, needle) != NULL;
	fclose(f);
	return n;
}

/* send SIGHUP and wait until sigild has logged one more reload */
static void daemon_reload(Daemon *d)
{
	int before = log_count(d, "configuration reloaded");

	assert_int_equal(kill(d->pid, SIGHUP), 0);
	for (int i = 0; i < 1000; i++) {
		if (log_count(d, "configuration reloaded") > before)
			return;
		usleep(10000);
	}
	fail_msg("sigild did not reload its configuration after SIGHUP");
}

static bool log_contains(const Daemon *d, const char *needle)
{
	FILE *f = fopen(d->log, "r");
	char line[2048];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

/* ---- a msgpack-rpc client on msgpack-c ------------------------------------ */

typedef struct Param {
	const char *k;
	char t; /* s str, b bin, t bool, i int, a array of verify items, n nil */
	const char *s;
	const void *b;
	size_t n;
	int64_t i;
	const struct Item *items;
} Param;

typedef struct Item {
	const uint8_t *pk, *sig, *m;
	size_t mlen;
} Item;

#define PS(k, v) { (k), 's', (v), NULL, 0, 0, NULL }
#define PB(k, p, len) { (k), 'b', NULL, (p), (len), 0, NULL }
#define PT(k, v) { (k), 't', NULL, NULL, 0, (v), NULL }
#define PI(k, v) { (k), 'i', NULL, NULL, 0, (v), NULL }
#define PA(k, it, cnt) { (k), 'a', NULL, NULL, (cnt), 0, (it) }
#define PEND { NULL, 0, NULL, NULL, 0, 0, NULL }

typedef struct Client {
	int fd;
	msgpack_unpacker up;
	msgpack_unpacked res;
} Client;

static void client_open(Client *c, const Daemon *d)
{
	c->fd = try_connect(d->sock);
	assert_true(c->fd >= 0);
	assert_true(msgpack_unpacker_init(&c->up, 1 << 16));
	msgpack_unpacked_init(&c->res);
}

static void client_close(Client *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	msgpack_unpacked_destroy(&c->res);
	msgpack_unpacker_destroy(&c->up);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	msgpack_pack_str(pk, strlen(s));
	msgpack_pack_str_body(pk, s, strlen(s));
}

static void pack_bin(msgpack_packer *pk, const void *p, size_t n)
{
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

/* append [0, msgid, method, [{params}]] to sb */
static void pack_request(msgpack_sbuffer *sb, uint64_t msgid, const char *method, const Param *ps)
{
	msgpack_packer pk;
	size_t n = 0;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	while (ps && ps[n].k)
		n++;
	msgpack_pack_array(&pk, 4);
	msgpack_pack_int(&pk, 0);
	msgpack_pack_uint64(&pk, msgid);
	pack_str(&pk, method);
	msgpack_pack_array(&pk, 1);
	msgpack_pack_map(&pk, n);
	for (size_t i = 0; i < n; i++) {
		const Param *p = &ps[i];

		pack_str(&pk, p->k);
		switch (p->t) {
		case 's': pack_str(&pk, p->s); break;
		case 'b': pack_bin(&pk, p->b, p->n); break;
		case 't': p->i ? msgpack_pack_true(&pk) : msgpack_pack_false(&pk); break;
		case 'i': msgpack_pack_int64(&pk, p->i); break;
		case 'n': msgpack_pack_nil(&pk); break;
		case 'a':
			msgpack_pack_array(&pk, p->n);
			for (size_t j = 0; j < p->n; j++) {
				msgpack_pack_map(&pk, 3);
				pack_str(&pk, "public_key");
				pack_bin(&pk, p->items[j].pk, 32);
				pack_str(&pk, "message");
				pack_bin(&pk, p->items[j].m, p->items[j].mlen);
				pack_str(&pk, "signature");
				pack_bin(&pk, p->items[j].sig, 64);
			}
			break;
		default: fail_msg("bad param type");
		}
	}
}

static void send_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		assert_true(k > 0);
		b += k;
		n -= (size_t)k;
	}
}

static void client_send(Client *c, uint64_t msgid, const char *method, const Param *ps)
{
	msgpack_sbuffer sb;

	msgpack_sbuffer_init(&sb);
	pack_request(&sb, msgid, method, ps);
	send_all(c->fd, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
}

/* next response (valid until the next call), or NULL at EOF / timeout */
static const msgpack_object *client_recv_timeout(Client *c, int timeout_ms)
{
	for (;;) {
		msgpack_unpack_return r = msgpack_unpacker_next(&c->up, &c->res);
		struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
		ssize_t k;

		if (r == MSGPACK_UNPACK_SUCCESS)
			return &c->res.data;
		assert_int_not_equal(r, MSGPACK_UNPACK_PARSE_ERROR);
		if (poll(&pfd, 1, timeout_ms) <= 0)
			return NULL;
		if (!msgpack_unpacker_reserve_buffer(&c->up, 1 << 16))
			fail_msg("out of memory");
		k = recv(c->fd, msgpack_unpacker_buffer(&c->up), 1 << 16, 0);
		if (k <= 0)
			return NULL;
		msgpack_unpacker_buffer_consumed(&c->up, (size_t)k);
	}
}

static const msgpack_object *client_recv(Client *c)
{
	const msgpack_object *o = client_recv_timeout(c, 20000);

	assert_non_null(o);
	/* shape: [1, msgid, error, result] */
	assert_int_equal(o->type, MSGPACK_OBJECT_ARRAY);
	assert_int_equal(o->via.array.size, 4);
	assert_int_equal(o->via.array.ptr[0].via.u64, 1);
	return o;
}

static bool obj_is_str(const msgpack_object *o, const char *s)
{
	return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
	       memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static const msgpack_object *map_get(const msgpack_object *m, const char *k)
{
	if (!m || m->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < m->via.map.size; i++)
		if (obj_is_str(&m->via.map.ptr[i].key, k))
			return &m->via.map.ptr[i].val;
	return NULL;
}

static uint64_t resp_msgid(const msgpack_object *r)
{
	assert_int_equal(r->via.array.ptr[1].type, MSGPACK_OBJECT_POSITIVE_INTEGER);
	return r->via.array.ptr[1].via.u64;
}

/* the error code of a response, or NULL for success */
static char *resp_error(const msgpack_object *r)
{
	static char code[64];
	const msgpack_object *e = &r->via.array.ptr[2], *c;

	if (e->type == MSGPACK_OBJECT_NIL)
		return NULL;
	assert_int_equal(e->type, MSGPACK_OBJECT_MAP);
	c = map_get(e, "code");
	assert_non_null(c);
	assert_int_equal(c->type, MSGPACK_OBJECT_STR);
	assert_non_null(map_get(e, "message"));
	snprintf(code, sizeof(code), "%.*s", (int)c->via.str.size, c->via.str.ptr);
	return code;
}

static const msgpack_object *resp_result(const msgpack_object *r)
{
	const char *e = resp_error(r);

	if (e) {
		const msgpack_object *m = map_get(&r->via.array.ptr[2], "message");

		fail_msg("unexpected error %s: %.*s", e, (int)m->via.str.size, m->via.str.ptr);
	}
	assert_int_equal(r->via.array.ptr[3].type, MSGPACK_OBJECT_MAP);
	return &r->via.array.ptr[3];
}

/* a bin field of exactly n bytes copied to out */
static void get_bin(const msgpack_object *m, const char *k, uint8_t *out, size_t n)
{
	const msgpack_object *o = map_get(m, k);

	assert_non_null(o);
	assert_int_equal(o->type, MSGPACK_OBJECT_BIN);
	assert_int_equal(o->via.bin.size, n);
	memcpy(out, o->via.bin.ptr, n);
}

static uint64_t next_msgid = 1000;

/* one call; returns the whole response */
static const msgpack_object *call(Client *c, const char *method, const Param *ps)
{
	uint64_t id = next_msgid++;
	const msgpack_object *r;

	client_send(c, id, method, ps);
	r = client_recv(c);
	assert_int_equal(resp_msgid(r), id);
	return r;
}

static const msgpack_object *call_ok(Client *c, const char *method, const Param *ps)
{
	return resp_result(call(c, method, ps));
}

static void call_expect_error(Client *c, const char *method, const Param *ps, const char *code)
{
	const msgpack_object *r = call(c, method, ps);
	const char *e = resp_error(r);

	if (!e || strcmp(e, code) != 0)
		fail_msg("%s: expected error %s, got %s", method, code, e ? e : "success");
	assert_int_equal(r->via.array.ptr[3].type, MSGPACK_OBJECT_NIL);
}

/* generate a key; returns its public key */
static void gen_key(Client *c, const char *type, const char *label, uint8_t pk[32])
{
	const Param p[] = { PS("type", type), PS("label", label), PEND };
	const msgpack_object *res = call_ok(c, "key.generate", p), *key = map_get(res, "key");

	assert_true(obj_is_str(map_get(key, "label"), label));
	assert_true(obj_is_str(map_get(key, "type"), type));
	get_bin(key, "public_key", pk, 32);
}

static void import_key(Client *c, const char *type, const char *label, const uint8_t seed[32], uint8_t pk[32])
{
	const Param p[] = { PS("type", type), PS("label", label), PB("seed", seed, 32), PEND };
	const msgpack_object *res = call_ok(c, "key.import", p);

	get_bin(map_get(res, "key"), "public_key", pk, 32);
}

static void sign(Client *c, const char *label, const void *m, size_t mlen, uint8_t sig[64])
{
	const Param p[] = { PS("key", label), PB("message", m, mlen), PEND };

	get_bin(call_ok(c, "sign", p), "signature", sig, 64);
}

/* ---- the shared daemon for most tests --------------------------------------- */

static Daemon shared;

static int setup_shared(void **state)
{
	daemon_start(&shared, "# defaults\n");
	return 0;
}

static int teardown_shared(void **state)
{
	daemon_stop(&shared);
	daemon_cleanup(&shared);
	return 0;
}

/* ---- tests ------------------------------------------------------------------ */

static void test_version(void **state)
{
	char cmd[512], out[128] = "";
	FILE *p;

	snprintf(cmd, sizeof(cmd), "'%s' --version", getenv("SIGILD"));
	p = popen(cmd, "r");
	assert_non_null(p);
	assert_non_null(fgets(out, sizeof(out), p));
	assert_int_equal(pclose(p), 0);
	assert_true(strncmp(out, "sigild ", 7) == 0);
	assert_true(strlen(out) > 8);
	snprintf(cmd, sizeof(cmd), "'%s' --help | grep -q /run/sigil/sigild.sock", getenv("SIGILD"));
	assert_int_equal(system(cmd), 0);
}

static void test_hello_status(void **state)
{
	Client c;
	const msgpack_object *r, *f;

	client_open(&c, &shared);
	r = call_ok(&c, "hello", NULL);
	assert_int_equal(map_get(r, "protocol")->via.u64, 1);
	f = map_get(r, "server");
	assert_non_null(f);
	assert_true(f->type == MSGPACK_OBJECT_STR && f->via.str.size > 7 && memcmp(f->via.str.ptr, "sigild ", 7) == 0);
	f = map_get(r, "features");
	assert_true(f && f->type == MSGPACK_OBJECT_ARRAY && f->via.array.size >= 2);

	r = call_ok(&c, "status", NULL);
	assert_int_equal(map_get(r, "locked")->type, MSGPACK_OBJECT_BOOLEAN);
	assert_false(map_get(r, "locked")->via.boolean);
	assert_true(map_get(r, "connections")->via.u64 >= 1);
	assert_int_equal(map_get(r, "workers")->via.u64, 2);
	assert_non_null(map_get(r, "keys"));
	assert_non_null(map_get(r, "inflight"));
	assert_non_null(map_get(r, "uptime_s"));
	/* params may also be an empty array */
	{
		msgpack_sbuffer sb;
		msgpack_packer pk;

		msgpack_sbuffer_init(&sb);
		msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
		msgpack_pack_array(&pk, 4);
		msgpack_pack_int(&pk, 0);
		msgpack_pack_int(&pk, 77);
		pack_str(&pk, "hello");
		msgpack_pack_array(&pk, 0);
		send_all(c.fd, sb.data, sb.size);
		msgpack_sbuffer_destroy(&sb);
		r = client_recv(&c);
		assert_int_equal(resp_msgid(r), 77);
		assert_null(resp_error(r));
	}
	client_close(&c);
}

static void test_key_lifecycle(void **state)
{
	Client c;
	uint8_t pk[32], pk2[32], blob[51], digest[32];
	char fp[80], b64[64];
	const msgpack_object *r, *keys, *key;
	bool found = false;

	client_open(&c, &shared);
	gen_key(&c, "ed25519", "life.cycle@test+1", pk);
	/* key.public returns the same key, with the ssh-keygen fingerprint */
	{
		const Param p[] = { PS("label", "life.cycle@test+1"), PEND };

		key = map_get(call_ok(&c, "key.public", p), "key");
		get_bin(key, "public_key", pk2, 32);
		assert_memory_equal(pk, pk2, 32);
		memcpy(blob, "\0\0\0\x0bssh-ed25519\0\0\0\x20", 19);
		memcpy(blob + 19, pk, 32);
		crypto_hash_sha256(digest, blob, sizeof(blob));
		sodium_bin2base64(b64, sizeof(b64), digest, 32, sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
		snprintf(fp, sizeof(fp), "SHA256:%s", b64);
		assert_true(obj_is_str(map_get(key, "fingerprint"), fp));
		assert_int_equal(map_get(key, "exportable")->via.boolean, false);
		assert_non_null(map_get(key, "created"));
	}
	/* key.list has it */
	r = call_ok(&c, "key.list", NULL);
	keys = map_get(r, "keys");
	assert_int_equal(keys->type, MSGPACK_OBJECT_ARRAY);
	for (uint32_t i = 0; i < keys->via.array.size; i++)
		if (obj_is_str(map_get(&keys->via.array.ptr[i], "label"), "life.cycle@test+1"))
			found = true;
	assert_true(found);
	/* exists */
	{
		const Param p[] = { PS("type", "x25519"), PS("label", "life.cycle@test+1"), PEND };

		call_expect_error(&c, "key.generate", p, "exists");
	}
	/* exportable flag round trip */
	{
		const Param p[] = { PS("type", "x25519"), PS("label", "exp"), PT("exportable", 1), PEND };

		key = map_get(call_ok(&c, "key.generate", p), "key");
		assert_true(map_get(key, "exportable")->via.boolean);
	}
	/* delete; then not_found everywhere */
	{
		const Param p[] = { PS("label", "life.cycle@test+1"), PEND };
		const Param ps[] = { PS("key", "life.cycle@test+1"), PB("message", "x", 1), PEND };
		char path[256];
		struct stat st;

		r = call_ok(&c, "key.delete", p);
		assert_int_equal(r->via.map.size, 0);
		snprintf(path, sizeof(path), "%s/keys/life.cycle@test+1.key", shared.state);
		assert_int_equal(stat(path, &st), -1);
		call_expect_error(&c, "key.public", p, "not_found");
		call_expect_error(&c, "key.delete", p, "not_found");
		call_expect_error(&c, "sign", ps, "not_found");
	}
	{
		const Param p[] = { PS("label", "exp"), PEND };

		call_ok(&c, "key.delete", p);
	}
	client_close(&c);
}

/* RFC 8032 7.1 TEST 1 and TEST 2, 7.2 "foo", 7.3 TEST abc */
static void test_sign_rfc8032(void **state)
{
	Client c;
	uint8_t seed[32], pk[32], want_pk[32], sig[64], want[64], m[16], ctx[3];

	client_open(&c, &shared);
	hex(seed, 32, "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60");
	hex(want_pk, 32, "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a");
	import_key(&c, "ed25519", "rfc1", seed, pk);
	assert_memory_equal(pk, want_pk, 32);
	sign(&c, "rfc1", "", 0, sig);
	hex(want, 64, "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b");
	assert_memory_equal(sig, want, 64);

	hex(seed, 32, "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb");
	import_key(&c, "ed25519", "rfc2", seed, pk);
	sign(&c, "rfc2", "\x72", 1, sig);
	hex(want, 64, "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00");
	assert_memory_equal(sig, want, 64);
	/* and libsodium accepts a signature over a longer message */
	{
		static const char msg[] = "the daemon signs, libsodium checks";

		sign(&c, "rfc2", msg, sizeof(msg) - 1, sig);
		assert_int_equal(crypto_sign_verify_detached(sig, (const uint8_t *)msg, sizeof(msg) - 1, pk), 0);
	}

	/* Ed25519ctx, RFC 8032 7.2 "foo" */
	hex(seed, 32, "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6");
	import_key(&c, "ed25519", "rfcctx", seed, pk);
	hex(m, 16, "f726936d19c800494e3fdaff20b276a8");
	hex(ctx, 3, "666f6f");
	{
		const Param p[] = { PS("key", "rfcctx"), PB("message", m, 16), PS("mode", "ctx"), PB("context", ctx, 3), PEND };

		get_bin(call_ok(&c, "sign", p), "signature", sig, 64);
		hex(want, 64, "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d");
		assert_memory_equal(sig, want, 64);
	}
	{
		const Param p[] = { PB("public_key", pk, 32), PB("message", m, 16), PB("signature", sig, 64),
		                    PS("mode", "ctx"), PB("context", ctx, 3), PEND };
		const Param p2[] = { PB("public_key", pk, 32), PB("message", m, 16), PB("signature", sig, 64),
		                     PS("mode", "ctx"), PB("context", "bar", 3), PEND };

		assert_true(map_get(call_ok(&c, "verify", p), "valid")->via.boolean);
		assert_false(map_get(call_ok(&c, "verify", p2), "valid")->via.boolean);
	}

	/* Ed25519ph, RFC 8032 7.3 TEST abc: whole message, and prehashed */
	hex(seed, 32, "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42");
	import_key(&c, "ed25519", "rfcph", seed, pk);
	hex(want, 64, "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae4131f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406");
	{
		const Param p[] = { PS("key", "rfcph"), PB("message", "abc", 3), PS("mode", "ph"), PEND };
		uint8_t digest[64];

		get_bin(call_ok(&c, "sign", p), "signature", sig, 64);
		assert_memory_equal(sig, want, 64);
		crypto_hash_sha512(digest, (const uint8_t *)"abc", 3);
		{
			const Param q[] = { PS("key", "rfcph"), PB("message", digest, 64), PS("mode", "ph"),
			                    PT("prehashed", 1), PEND };
			const Param v[] = { PB("public_key", pk, 32), PB("message", digest, 64), PB("signature", want, 64),
			                    PS("mode", "ph"), PT("prehashed", 1), PEND };
			const Param v2[] = { PB("public_key", pk, 32), PB("message", "abc", 3), PB("signature", want, 64),
			                     PS("mode", "ph"), PEND };

			get_bin(call_ok(&c, "sign", q), "signature", sig, 64);
			assert_memory_equal(sig, want, 64);
			assert_true(map_get(call_ok(&c, "verify", v), "valid")->via.boolean);
			assert_true(map_get(call_ok(&c, "verify", v2), "valid")->via.boolean);
		}
	}
	for (const char *const *l = (const char *const[]){ "rfc1", "rfc2", "rfcctx", "rfcph", NULL }; *l; l++) {
		const Param p[] = { PS("label", *l), PEND };

		call_ok(&c, "key.delete", p);
	}
	client_close(&c);
}

static void test_verify(void **state)
{
	Client c;
	uint8_t pk[32], sk[64], sig[64];
	static const uint8_t msg[] = "verify me";

	client_open(&c, &shared);
	crypto_sign_keypair(pk, sk);
	crypto_sign_detached(sig, NULL, msg, sizeof(msg), sk);
	{
		const Param p[] = { PB("public_key", pk, 32), PB("message", msg, sizeof(msg)), PB("signature", sig, 64), PEND };
		const Param z[] = { PB("public_key", pk, 32), PB("message", msg, sizeof(msg)), PB("signature", sig, 64),
		                    PS("policy", "zip215"), PEND };

		assert_true(map_get(call_ok(&c, "verify", p), "valid")->via.boolean);
		assert_true(map_get(call_ok(&c, "verify", z), "valid")->via.boolean);
	}
	sig[10] ^= 1;
	{
		const Param p[] = { PB("public_key", pk, 32), PB("message", msg, sizeof(msg)), PB("signature", sig, 64), PEND };
		const msgpack_object *v = map_get(call_ok(&c, "verify", p), "valid");

		assert_int_equal(v->type, MSGPACK_OBJECT_BOOLEAN);
		assert_false(v->via.boolean);
	}
	client_close(&c);
}

static void test_verify_batch(void **state)
{
	enum { N = 16 };
	Client c;
	uint8_t pk[N][32], sk[64], sig[N][64], m[N][20];
	Item items[N];
	const msgpack_object *v;

	client_open(&c, &shared);
	for (int i = 0; i < N; i++) {
		crypto_sign_keypair(pk[i], sk);
		randombytes_buf(m[i], sizeof(m[i]));
		crypto_sign_detached(sig[i], NULL, m[i], sizeof(m[i]), sk);
		items[i] = (Item){ pk[i], sig[i], m[i], sizeof(m[i]) };
	}
	sig[5][0] ^= 0x40;
	m[11][3] ^= 1;
	for (int pol = 0; pol < 2; pol++) {
		const Param p[] = { PA("items", items, N), PS("policy", pol ? "zip215" : "strict"), PEND };

		v = map_get(call_ok(&c, "verify_batch", p), "valid");
		assert_int_equal(v->type, MSGPACK_OBJECT_ARRAY);
		assert_int_equal(v->via.array.size, N);
		for (int i = 0; i < N; i++) {
			assert_int_equal(v->via.array.ptr[i].type, MSGPACK_OBJECT_BOOLEAN);
			assert_int_equal(v->via.array.ptr[i].via.boolean, i != 5 && i != 11);
		}
	}
	{
		const Param p[] = { PA("items", items, 0), PEND };

		v = map_get(call_ok(&c, "verify_batch", p), "valid");
		assert_int_equal(v->via.array.size, 0);
	}
	client_close(&c);
}

/* RFC 7748 6.1 and random keys checked with libsodium */
static void test_dh(void **state)
{
	Client c;
	uint8_t a_priv[32], a_pub[32], b_pub[32], want[32], pk[32], out[32], peer_sk[32], peer_pk[32], check[32];

	client_open(&c, &shared);
	hex(a_priv, 32, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
	hex(a_pub, 32, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
	hex(b_pub, 32, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
	hex(want, 32, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
	import_key(&c, "x25519", "alice", a_priv, pk);
	assert_memory_equal(pk, a_pub, 32);
	{
		const Param p[] = { PS("key", "alice"), PB("peer", b_pub, 32), PEND };

		get_bin(call_ok(&c, "dh", p), "shared_secret", out, 32);
		assert_memory_equal(out, want, 32);
	}
	gen_key(&c, "x25519", "dh-random", pk);
	randombytes_buf(peer_sk, 32);
	crypto_scalarmult_base(peer_pk, peer_sk);
	{
		const Param p[] = { PS("key", "dh-random"), PB("peer", peer_pk, 32), PEND };

		get_bin(call_ok(&c, "dh", p), "shared_secret", out, 32);
		assert_int_equal(crypto_scalarmult(check, peer_sk, pk), 0);
		assert_memory_equal(out, check, 32);
	}
	/* a small-order peer: invalid_key */
	{
		uint8_t zero[32] = { 0 };
		const Param p[] = { PS("key", "dh-random"), PB("peer", zero, 32), PEND };

		call_expect_error(&c, "dh", p, "invalid_key");
	}
	/* wrong types both ways */
	{
		uint8_t edpk[32];
		const Param p[] = { PS("key", "dh-random"), PB("message", "m", 1), PEND };
		const Param q[] = { PS("key", "dh-ed"), PB("peer", peer_pk, 32), PEND };

		gen_key(&c, "ed25519", "dh-ed", edpk);
		call_expect_error(&c, "sign", p, "wrong_type");
		call_expect_error(&c, "dh", q, "wrong_type");
	}
	for (const char *const *l = (const char *const[]){ "alice", "dh-random", "dh-ed", NULL }; *l; l++) {
		const Param p[] = { PS("label", *l), PEND };

		call_ok(&c, "key.delete", p);
	}
	client_close(&c);
}

static void test_lock(void **state)
{
	Client c;
	uint8_t pk[32], sig[64];
	const Param s[] = { PS("key", "lk"), PB("message", "m", 1), PEND };
	const Param d[] = { PS("key", "lkx"), PB("peer", pk, 32), PEND };

	client_open(&c, &shared);
	gen_key(&c, "ed25519", "lk", pk);
	gen_key(&c, "x25519", "lkx", pk);
	call_ok(&c, "lock", NULL);
	assert_true(map_get(call_ok(&c, "status", NULL), "locked")->via.boolean);
	call_expect_error(&c, "sign", s, "locked");
	call_expect_error(&c, "dh", d, "locked");
	/* public operations still work */
	{
		const Param p[] = { PS("label", "lk"), PEND };

		call_ok(&c, "key.public", p);
	}
	{
		const Param p[] = { PS("passphrase", "anything"), PEND };

		call_ok(&c, "unlock", p);
	}
	assert_false(map_get(call_ok(&c, "status", NULL), "locked")->via.boolean);
	sign(&c, "lk", "m", 1, sig);
	{
		const Param p[] = { PS("label", "lk"), PEND };
		const Param q[] = { PS("label", "lkx"), PEND };

		call_ok(&c, "key.delete", p);
		call_ok(&c, "key.delete", q);
	}
	client_close(&c);
}

static void send_raw(Client *c, const void *p, size_t n)
{
	send_all(c->fd, p, n);
}

static void test_bad_requests(void **state)
{
	Client c;
	uint8_t b31[31] = { 0 }, b32[32] = { 0 }, b64[64] = { 0 };
	const msgpack_object *r;

	client_open(&c, &shared);
	{
		const Param p[] = { PS("label", "x"), PEND };

		call_expect_error(&c, "key.generate", p, "bad_request"); /* missing type */
		call_expect_error(&c, "no.such.method", NULL, "unknown_method");
	}
	{
		const Param p[] = { PS("type", "rsa"), PS("label", "x"), PEND };

		call_expect_error(&c, "key.generate", p, "bad_request");
	}
	{
		const Param p[] = { PS("type", "ed25519"), PI("label", 5), PEND };

		call_expect_error(&c, "key.generate", p, "bad_request");
	}
	{
		const Param p[] = { PS("type", "ed25519"), PS("label", "../etc/passwd"), PEND };

		call_expect_error(&c, "key.generate", p, "bad_request");
	}
	{
		const Param p[] = { PS("type", "ed25519"), PS("label", "s"), PB("seed", b31, 31), PEND };

		call_expect_error(&c, "key.import", p, "bad_request");
	}
	{
		/* message as str instead of bin */
		const Param p[] = { PB("public_key", b32, 32), PS("message", "m"), PB("signature", b64, 64), PEND };

		call_expect_error(&c, "verify", p, "bad_request");
	}
	{
		const Param p[] = { PB("public_key", b31, 31), PB("message", "m", 1), PB("signature", b64, 64), PEND };

		call_expect_error(&c, "verify", p, "bad_request");
	}
	{
		const Param p[] = { PS("key", "k"), PB("message", "m", 1), PS("mode", "ctx"), PEND };

		call_expect_error(&c, "sign", p, "bad_request"); /* ctx needs a context */
	}
	{
		const Param p[] = { PS("key", "k"), PB("peer", b31, 31), PEND };

		call_expect_error(&c, "dh", p, "bad_request");
	}
	/* unknown fields are ignored */
	{
		const Param p[] = { PS("whatever", "x"), PI("n", 3), PEND };

		call_ok(&c, "hello", p);
	}
	/* the error message names the missing field */
	{
		const Param p[] = { PS("key", "k"), PEND };
		const msgpack_object *m;

		r = call(&c, "sign", p);
		assert_string_equal(resp_error(r), "bad_request");
		m = map_get(&r->via.array.ptr[2], "message");
		assert_non_null(memmem(m->via.str.ptr, m->via.str.size, "message", 7));
	}
	/* valid msgpack, not a request: error, connection lives */
	{
		static const uint8_t notreq[] = { 0x93, 0x01, 0x02, 0x03 }; /* [1,2,3] */

		send_raw(&c, notreq, sizeof(notreq));
		r = client_recv(&c);
		assert_string_equal(resp_error(r), "bad_request");
		call_ok(&c, "hello", NULL);
	}
	client_close(&c);

	/* bytes that are not msgpack: an error, then the connection is closed */
	client_open(&c, &shared);
	{
		static const uint8_t junk[] = { 0xc1, 0xc1, 0xc1 };

		send_raw(&c, junk, sizeof(junk));
		r = client_recv(&c);
		assert_string_equal(resp_error(r), "bad_request");
		assert_int_equal(r->via.array.ptr[1].type, MSGPACK_OBJECT_NIL);
		assert_null(client_recv_timeout(&c, 5000)); /* EOF */
	}
	client_close(&c);
}

/* the key file can't be written: internal */
static void test_internal_error(void **state)
{
	Client c;
	char path[256];
	const Param p[] = { PS("type", "ed25519"), PS("label", "blocked"), PEND };
	const Param q[] = { PS("label", "blocked"), PEND };

	snprintf(path, sizeof(path), "%s/keys/.blocked.key.tmp", shared.state);
	assert_int_equal(mkdir(path, 0700), 0);
	client_open(&c, &shared);
	call_expect_error(&c, "key.generate", p, "internal");
	/* the label is free again, and nothing half-made is visible */
	call_expect_error(&c, "key.public", q, "not_found");
	assert_int_equal(rmdir(path), 0);
	call_ok(&c, "key.generate", p);
	call_ok(&c, "key.delete", q);
	client_close(&c);
}

/* 1,000 requests in flight on one connection, each answered once */
static void test_pipelining(void **state)
{
	enum { N = 1000 };
	Client c;
	uint8_t pk[32];
	msgpack_sbuffer sb;
	static bool seen[N];
	static uint8_t msgs[N][8];
	uint64_t base = 500000;
	int sign_ok = 0, verify_ok = 0;

	client_open(&c, &shared);
	gen_key(&c, "ed25519", "pipe", pk);
	msgpack_sbuffer_init(&sb);
	memset(seen, 0, sizeof(seen));
	for (int i = 0; i < N; i++) {
		memcpy(msgs[i], &i, sizeof(i));
		memcpy(msgs[i] + 4, "pipe", 4);
		if (i % 3 == 0) {
			const Param p[] = { PS("key", "pipe"), PB("message", msgs[i], 8), PEND };

			pack_request(&sb, base + i, "sign", p);
		} else if (i % 3 == 1) {
			uint8_t sig[64] = { 0 };
			const Param p[] = { PB("public_key", pk, 32), PB("message", msgs[i], 8), PB("signature", sig, 64), PEND };

			pack_request(&sb, base + i, "verify", p);
		} else {
			pack_request(&sb, base + i, "status", NULL);
		}
	}
	/* all of them in one go */
	send_all(c.fd, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	for (int k = 0; k < N; k++) {
		const msgpack_object *r = client_recv(&c);
		uint64_t id = resp_msgid(r);
		int i;

		assert_true(id >= base && id < base + N);
		i = (int)(id - base);
		assert_false(seen[i]);
		seen[i] = true;
		if (i % 3 == 0) {
			uint8_t sig[64];

			get_bin(resp_result(r), "signature", sig, 64);
			assert_int_equal(crypto_sign_verify_detached(sig, msgs[i], 8, pk), 0);
			sign_ok++;
		} else if (i % 3 == 1) {
			assert_false(map_get(resp_result(r), "valid")->via.boolean);
			verify_ok++;
		} else {
			assert_non_null(map_get(resp_result(r), "keys"));
		}
	}
	assert_int_equal(sign_ok, 334);
	assert_int_equal(verify_ok, 333);
	/* nothing more arrives */
	assert_null(client_recv_timeout(&c, 200));
	{
		const Param p[] = { PS("label", "pipe"), PEND };

		call_ok(&c, "key.delete", p);
	}
	client_close(&c);
}

/* a long pipeline whose answers exceed the write high-water mark, from a
 * client that writes and reads at the same time: sigild pauses reading
 * while the backlog is high and must resume once the client has read it */
static void test_pipeline_backpressure(void **state)
{
	enum { N = 30000 };
	Client c;
	msgpack_sbuffer sb;
	size_t off = 0;
	int got = 0;
	uint64_t t0 = now_ms();

	client_open(&c, &shared);
	msgpack_sbuffer_init(&sb);
	for (int i = 0; i < N; i++)
		pack_request(&sb, (uint64_t)i, "hello", NULL); /* ~150-byte answers: 4.5 MB */
	fcntl(c.fd, F_SETFL, fcntl(c.fd, F_GETFL) | O_NONBLOCK);
	while (got < N) {
		struct pollfd pfd = { .fd = c.fd, .events = POLLIN | (off < sb.size ? POLLOUT : 0) };

		if (now_ms() - t0 > 30000)
			fail_msg("stalled after %d of %d answers (%zu of %zu bytes sent)", got, N, off, sb.size);
		if (poll(&pfd, 1, 1000) <= 0)
			continue;
		if (pfd.revents & POLLOUT) {
			ssize_t k = send(c.fd, sb.data + off, sb.size - off, MSG_NOSIGNAL);

			if (k > 0)
				off += (size_t)k;
		}
		if (pfd.revents & POLLIN) {
			ssize_t k;

			assert_true(msgpack_unpacker_reserve_buffer(&c.up, 1 << 16));
			k = recv(c.fd, msgpack_unpacker_buffer(&c.up), 1 << 16, 0);
			assert_true(k > 0 || (k < 0 && errno == EAGAIN));
			if (k > 0)
				msgpack_unpacker_buffer_consumed(&c.up, (size_t)k);
			while (msgpack_unpacker_next(&c.up, &c.res) == MSGPACK_UNPACK_SUCCESS) {
				assert_int_equal(c.res.data.via.array.ptr[2].type, MSGPACK_OBJECT_NIL);
				got++;
			}
		}
	}
	assert_int_equal(off, sb.size);
	msgpack_sbuffer_destroy(&sb);
	fprintf(stderr, "# %d pipelined hellos answered in %llu ms\n", N, (unsigned long long)(now_ms() - t0));
	client_close(&c);
}

/* many connections at once, interleaved */
static void test_many_connections(void **state)
{
	enum { NC = 64, NR = 10 };
	static Client cs[NC];
	uint8_t pk[32];

	client_open(&cs[0], &shared);
	gen_key(&cs[0], "ed25519", "many", pk);
	for (int i = 1; i < NC; i++)
		client_open(&cs[i], &shared);
	for (int j = 0; j < NR; j++)
		for (int i = 0; i < NC; i++) {
			uint32_t m = (uint32_t)(i * 1000 + j);
			const Param p[] = { PS("key", "many"), PB("message", &m, 4), PEND };

			client_send(&cs[i], (uint64_t)j, "sign", p);
		}
	for (int i = 0; i < NC; i++) {
		bool seen[NR] = { false };

		for (int j = 0; j < NR; j++) {
			const msgpack_object *r = client_recv(&cs[i]);
			uint64_t id = resp_msgid(r);
			uint32_t m;
			uint8_t sig[64];

			assert_true(id < NR);
			assert_false(seen[id]);
			seen[id] = true;
			m = (uint32_t)(i * 1000 + (int)id);
			get_bin(resp_result(r), "signature", sig, 64);
			assert_int_equal(crypto_sign_verify_detached(sig, (uint8_t *)&m, 4, pk), 0);
		}
	}
	assert_true(map_get(call_ok(&cs[0], "status", NULL), "connections")->via.u64 >= NC);
	{
		const Param p[] = { PS("label", "many"), PEND };

		call_ok(&cs[0], "key.delete", p);
	}
	for (int i = 0; i < NC; i++)
		client_close(&cs[i]);
}

/* signatures the workers compute together (several keys, modes and
 * lengths pipelined on several connections: pure ones in lanes, ctx and
 * ph beside them in the same chunks) are byte for byte the ones each
 * request gets alone (Ed25519 is deterministic), each to its own request */
static void test_signs_together(void **state)
{
	enum { NC = 4, NR = 96, NK = 3 };
	static Client cs[NC];
	static uint8_t want[NC][NR][64];
	static uint8_t msg[NC][NR][300];
	static const char *const keys[NK] = { "tog0", "tog1", "tog2" };
	uint8_t pk[32];

	(void)state;
	for (int i = 0; i < NC; i++)
		client_open(&cs[i], &shared);
	for (int k = 0; k < NK; k++)
		gen_key(&cs[0], "ed25519", keys[k], pk);
	/* request (i, j): key j % NK; mode pure but every 4th ctx, every 7th
	 * ph; a message of (i * NR + j) * 7 % 300 bytes (0 included) */
#define TOG_PARAMS(i, j)                                                                                  \
	const char *mode = (j) % 4 == 3 ? "ctx" : (j) % 7 == 6 ? "ph" : "pure";                           \
	bool pure = strcmp(mode, "pure") == 0;                                                            \
	const Param p[] = { PS("key", keys[(j) % NK]), PB("message", msg[i][j], (size_t)(((i) * NR + (j)) * 7 % 300)), \
	                    PS("mode", mode), pure ? (Param)PEND : (Param)PB("context", "tog", 3), PEND }
	for (int i = 0; i < NC; i++)
		for (int j = 0; j < NR; j++) {
			for (size_t b = 0; b < sizeof(msg[i][j]); b++)
				msg[i][j][b] = (uint8_t)(i * 31 + j * 7 + b);
			TOG_PARAMS(i, j);
			/* alone: one request in flight on the whole daemon */
			get_bin(call_ok(&cs[0], "sign", p), "signature", want[i][j], 64);
		}
	for (int i = 0; i < NC; i++)
		for (int j = 0; j < NR; j++) {
			TOG_PARAMS(i, j);
			client_send(&cs[i], (uint64_t)j, "sign", p);
		}
#undef TOG_PARAMS
	for (int i = 0; i < NC; i++) {
		bool seen[NR] = { false };

		for (int j = 0; j < NR; j++) {
			const msgpack_object *r = client_recv(&cs[i]);
			uint64_t id = resp_msgid(r);
			uint8_t sig[64];

			assert_true(id < NR);
			assert_false(seen[id]);
			seen[id] = true;
			get_bin(resp_result(r), "signature", sig, 64);
			assert_memory_equal(sig, want[i][id], 64);
		}
	}
	for (int k = 0; k < NK; k++) {
		const Param p[] = { PS("label", keys[k]), PEND };

		call_ok(&cs[0], "key.delete", p);
	}
	for (int i = 0; i < NC; i++)
		client_close(&cs[i]);
}

/* a client that never reads does not stop others; memory stays bounded */
static long rss_kib(pid_t pid)
{
	char path[64], line[256];
	FILE *f;
	long kib = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static void test_never_reading_client(void **state)
{
	Client slow, c;
	msgpack_sbuffer sb;
	size_t sent = 0;
	long before, after;
	uint64_t n0;
	int flags;

	client_open(&c, &shared);
	n0 = map_get(call_ok(&c, "status", NULL), "connections")->via.u64;
	before = rss_kib(shared.pid);
	client_open(&slow, &shared);
	flags = fcntl(slow.fd, F_GETFL);
	fcntl(slow.fd, F_SETFL, flags | O_NONBLOCK);
	/* a block of 4,096 status requests: ~2 MB of answers per 70 kB sent */
	msgpack_sbuffer_init(&sb);
	for (int i = 0; i < 4096; i++)
		pack_request(&sb, (uint64_t)i, "status", NULL);
	/* push until the daemon stops reading (the socket stays full) */
	for (uint64_t t0 = now_ms(), last = now_ms(); now_ms() - t0 < 8000 && now_ms() - last < 1500;) {
		size_t off = 0;

		while (off < sb.size) {
			ssize_t k = send(slow.fd, sb.data + off, sb.size - off, MSG_NOSIGNAL);

			if (k > 0) {
				off += (size_t)k;
				sent += (size_t)k;
				last = now_ms();
				continue;
			}
			if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
				usleep(20000);
				if (now_ms() - last >= 1500)
					break;
				continue;
			}
			fail_msg("send: %s", strerror(errno));
		}
	}
	msgpack_sbuffer_destroy(&sb);
	fprintf(stderr, "# never-reading client pushed %zu bytes before the daemon stopped reading\n", sent);
	/* the others are still served, promptly */
	for (int i = 0; i < 20; i++) {
		uint64_t t = now_ms();

		call_ok(&c, "status", NULL);
		assert_true(now_ms() - t < 2000);
	}
	after = rss_kib(shared.pid);
	{
		uint64_t buffered = map_get(call_ok(&c, "status", NULL), "buffered_bytes")->via.u64;
		/* meson passes get_option('b_sanitize') (tests/daemon/meson.build):
		 * a sanitizer runtime (static or shared) quarantines freed memory
		 * and keeps shadow memory, which the RSS bound allows for */
		const char *san = getenv("SIGIL_SANITIZE");
		bool sanitized;

		assert_non_null(san);
		sanitized = *san && strcmp(san, "none") != 0;
		fprintf(stderr, "# sigild RSS %ld KiB before, %ld KiB with the blocked client; %llu bytes buffered%s\n",
		        before, after, (unsigned long long)buffered,
		        sanitized ? " (sanitized build: freed memory is quarantined)" : "");
		/* what sigild holds for the blocked client: at most the write
		 * high-water mark (1 MiB) plus one read of answers, and a read
		 * buffer; far below what was pushed */
		assert_true(buffered < 4u << 20);
		assert_true(after - before < (sanitized ? 512 : 16) * 1024);
	}
	client_close(&slow);
	/* the daemon notices and frees the connection */
	for (int i = 0; i < 100; i++) {
		if (map_get(call_ok(&c, "status", NULL), "connections")->via.u64 == n0)
			break;
		usleep(20000);
	}
	if (map_get(call_ok(&c, "status", NULL), "connections")->via.u64 != n0) {
		char cmd[256];

		snprintf(cmd, sizeof(cmd), "tail -n 30 '%s' >&2", shared.log);
		(void)!system(cmd);
		fail_msg("the closed never-reading connection is still open in sigild");
	}
	client_close(&c);
}

/* keys survive a restart; files and directories are private */
static void test_restart(void **state)
{
	Daemon d = { 0 };
	Client c;
	uint8_t pk_e[32], pk_x[32], pk[32], sig[64];
	char path[256];
	struct stat st;

	daemon_start(&d, NULL);
	client_open(&c, &d);
	gen_key(&c, "ed25519", "keep-e", pk_e);
	gen_key(&c, "x25519", "keep-x", pk_x);
	gen_key(&c, "ed25519", ".dot", pk); /* a label may start with a dot */
	client_close(&c);
	/* a temporary file left by an interrupted write is removed at start */
	snprintf(path, sizeof(path), "%s/keys/.crashed.key.tmp", d.state);
	{
		FILE *f = fopen(path, "w");

		assert_non_null(f);
		fclose(f);
	}
	snprintf(path, sizeof(path), "%s/keys/keep-e.key", d.state);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	snprintf(path, sizeof(path), "%s/keys", d.state);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(d.state, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0700);
	assert_int_equal(stat(d.sock, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	daemon_stop(&d);
	/* the socket file is removed at exit */
	assert_int_equal(stat(d.sock, &st), -1);

	daemon_start(&d, NULL);
	client_open(&c, &d);
	assert_int_equal(map_get(call_ok(&c, "status", NULL), "keys")->via.u64, 3);
	assert_true(log_contains(&d, "removed stale temporary file keys/.crashed.key.tmp"));
	{
		const Param p[] = { PS("label", ".dot"), PEND };

		call_ok(&c, "key.public", p);
	}
	{
		const Param p[] = { PS("label", "keep-e"), PEND };
		const Param q[] = { PS("label", "keep-x"), PEND };

		get_bin(map_get(call_ok(&c, "key.public", p), "key"), "public_key", pk, 32);
		assert_memory_equal(pk, pk_e, 32);
		get_bin(map_get(call_ok(&c, "key.public", q), "key"), "public_key", pk, 32);
		assert_memory_equal(pk, pk_x, 32);
	}
	sign(&c, "keep-e", "after restart", 13, sig);
	assert_int_equal(crypto_sign_verify_detached(sig, (const uint8_t *)"after restart", 13, pk_e), 0);
	client_close(&c);

	/* a crash leaves a stale socket: the next start replaces it */
	kill(d.pid, SIGKILL);
	waitpid(d.pid, NULL, 0);
	d.pid = 0;
	assert_int_equal(stat(d.sock, &st), 0);
	daemon_start(&d, NULL);
	assert_true(log_contains(&d, "stale socket"));

	/* a live one is refused with a clear message (for a second sigild
	 * with its own state directory) */
	{
		char state[sizeof(d.state)];

		memcpy(state, d.state, sizeof(state));
		snprintf(d.state, sizeof(d.state), "%s/state2", d.dir);
		assert_int_equal(daemon_expect_failure(&d), 1);
		assert_true(log_contains(&d, "another sigild is listening"));
		memcpy(d.state, state, sizeof(state));
	}
	/* so is a second sigild on another socket but the same state directory */
	{
		char sock[sizeof(d.sock)];

		memcpy(sock, d.sock, sizeof(sock));
		snprintf(d.sock, sizeof(d.sock), "%s/run/other.sock", d.dir);
		assert_int_equal(daemon_expect_failure(&d), 1);
		assert_true(log_contains(&d, "another sigild uses the state directory"));
		memcpy(d.sock, sock, sizeof(sock));
	}
	daemon_stop(&d);

	/* a state directory others can read is refused */
	assert_int_equal(chmod(d.state, 0755), 0);
	assert_int_equal(daemon_expect_failure(&d), 1);
	assert_true(log_contains(&d, "group or others can read or write"));
	daemon_cleanup(&d);
}

/* SIGTERM with requests in flight: each gets an answer, exit status 0 */
static void test_sigterm_inflight(void **state)
{
	enum { N = 60, ITEMS = 64 };
	Daemon d = { 0 };
	Client c;
	static uint8_t pk[ITEMS][32], sig[ITEMS][64], m[ITEMS][32];
	static Item items[ITEMS];
	uint8_t sk[64];
	msgpack_sbuffer sb;
	bool seen[N + 1] = { false };
	int answered = 0, ok = 0, status = -1;
	unsigned long long inflight = 0;

	for (int i = 0; i < ITEMS; i++) {
		crypto_sign_keypair(pk[i], sk);
		randombytes_buf(m[i], 32);
		crypto_sign_detached(sig[i], NULL, m[i], 32, sk);
		items[i] = (Item){ pk[i], sig[i], m[i], 32 };
	}
	daemon_start(&d, NULL);
	client_open(&c, &d);
	msgpack_sbuffer_init(&sb);
	for (int i = 0; i < N; i++) {
		const Param p[] = { PA("items", items, ITEMS), PEND };

		pack_request(&sb, (uint64_t)i, "verify_batch", p);
	}
	/* a cheap request last: once it is answered, the daemon has read and
	 * dispatched every request before it */
	pack_request(&sb, N, "status", NULL);
	send_all(c.fd, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	for (;;) {
		const msgpack_object *r = client_recv(&c);
		uint64_t id = resp_msgid(r);

		assert_true(id <= N);
		assert_false(seen[id]);
		seen[id] = true;
		answered++;
		if (id == N)
			break;
		ok += resp_error(r) == NULL;
	}
	assert_int_equal(kill(d.pid, SIGTERM), 0);
	for (;;) {
		const msgpack_object *r = client_recv_timeout(&c, 20000);
		uint64_t id;

		if (!r)
			break;
		id = resp_msgid(r);
		assert_true(id < N);
		assert_false(seen[id]);
		seen[id] = true;
		answered++;
		if (!resp_error(r)) {
			const msgpack_object *v = map_get(resp_result(r), "valid");

			assert_int_equal(v->via.array.size, ITEMS);
			for (int i = 0; i < ITEMS; i++)
				assert_true(v->via.array.ptr[i].via.boolean);
			ok++;
		} else {
			assert_string_equal(resp_error(r), "busy");
		}
	}
	waitpid(d.pid, &status, 0);
	d.pid = 0;
	{
		FILE *f = fopen(d.log, "r");
		char line[512];

		assert_non_null(f);
		while (fgets(line, sizeof(line), f)) {
			char *p = strstr(line, "SIGTERM: stopping; ");

			if (p)
				inflight = strtoull(p + strlen("SIGTERM: stopping; "), NULL, 10);
		}
		fclose(f);
	}
	fprintf(stderr, "# SIGTERM with %llu requests in flight: %d answers (%d results) to %d requests\n",
	        inflight, answered, ok, N + 1);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(inflight > 0);
	/* every request was answered exactly once */
	assert_int_equal(answered, N + 1);
	client_close(&c);
	daemon_cleanup(&d);
}

/* SIGTERM when answers cannot be delivered: sigild still exits 0 after
 * shutdown_timeout_s */
static void test_shutdown_timeout(void **state)
{
	Daemon d = { 0 };
	Client slow;
	msgpack_sbuffer sb;
	uint64_t t0;
	int status = -1;

	daemon_start(&d, "shutdown_timeout_s = 1\n");
	client_open(&slow, &d);
	fcntl(slow.fd, F_SETFL, fcntl(slow.fd, F_GETFL) | O_NONBLOCK);
	msgpack_sbuffer_init(&sb);
	for (int i = 0; i < 4096; i++)
		pack_request(&sb, (uint64_t)i, "status", NULL);
	/* fill until the daemon stops reading */
	for (uint64_t last = now_ms(); now_ms() - last < 1000;) {
		ssize_t k = send(slow.fd, sb.data, sb.size, MSG_NOSIGNAL);

		if (k > 0)
			last = now_ms();
		else
			usleep(20000);
	}
	msgpack_sbuffer_destroy(&sb);
	t0 = now_ms();
	assert_int_equal(kill(d.pid, SIGTERM), 0);
	while (waitpid(d.pid, &status, WNOHANG) != d.pid) {
		if (now_ms() - t0 > 10000) {
			client_close(&slow);
			daemon_cleanup(&d); /* kills it */
			fail_msg("sigild did not exit 10 s after SIGTERM with shutdown_timeout_s = 1");
		}
		usleep(10000);
	}
	d.pid = 0;
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_true(now_ms() - t0 >= 900);
	assert_true(log_contains(&d, "exiting anyway"));
	client_close(&slow);
	daemon_cleanup(&d);
}

/* wait until the daemon has noticed closed connections */
static void wait_connections(Client *c, uint64_t n)
{
	for (int i = 0; i < 250; i++) {
		if (map_get(call_ok(c, "status", NULL), "connections")->via.u64 <= n)
			return;
		usleep(20000);
	}
	fail_msg("connections did not drop to %llu", (unsigned long long)n);
}

/* limits: too_large, busy (per connection and max_connections), idle timeout */
static void test_limits(void **state)
{
	Daemon d = { 0 };
	Client c, cs[3], extra;
	const msgpack_object *r;
	uint8_t pk[32];

	daemon_start(&d, "max_request_size = 4096\nmax_inflight_per_conn = 2\nmax_connections = 3\n"
	                 "idle_timeout_s = 1\n");
	client_open(&c, &d);
	gen_key(&c, "ed25519", "lim", pk);
	/* busy: 40 pipelined signs with 2 allowed in flight */
	{
		msgpack_sbuffer sb;
		int busy = 0, done = 0;

		msgpack_sbuffer_init(&sb);
		for (int i = 0; i < 40; i++) {
			const Param p[] = { PS("key", "lim"), PB("message", "busy", 4), PEND };

			pack_request(&sb, (uint64_t)i, "sign", p);
		}
		send_all(c.fd, sb.data, sb.size);
		msgpack_sbuffer_destroy(&sb);
		for (int i = 0; i < 40; i++) {
			const char *e;

			r = client_recv(&c);
			e = resp_error(r);
			if (e) {
				assert_string_equal(e, "busy");
				busy++;
			} else {
				done++;
			}
		}
		fprintf(stderr, "# 40 pipelined signs, max_inflight_per_conn 2: %d done, %d busy\n", done, busy);
		assert_true(busy > 0);
		assert_true(done >= 2);
	}
	/* big requests are flow-controlled instead: a connection takes no new
	 * frame while its requests in flight hold max_request_size bytes, so
	 * 30 pipelined 3.9 kB signs all succeed where 40 small ones got busy */
	{
		msgpack_sbuffer sb;
		static uint8_t big[3900];

		msgpack_sbuffer_init(&sb);
		for (int i = 0; i < 30; i++) {
			const Param p[] = { PS("key", "lim"), PB("message", big, sizeof(big)), PEND };

			big[0] = (uint8_t)i;
			pack_request(&sb, (uint64_t)i, "sign", p);
		}
		send_all(c.fd, sb.data, sb.size);
		msgpack_sbuffer_destroy(&sb);
		for (int i = 0; i < 30; i++) {
			uint8_t sig[64];
			uint64_t id;

			r = client_recv(&c);
			id = resp_msgid(r);
			big[0] = (uint8_t)id;
			get_bin(resp_result(r), "signature", sig, 64);
			assert_int_equal(crypto_sign_verify_detached(sig, big, sizeof(big), pk), 0);
		}
	}
	/* max_connections = 3: c + 2 more, the 4th gets busy and is closed */
	client_open(&cs[0], &d);
	client_open(&cs[1], &d);
	call_ok(&cs[0], "hello", NULL);
	call_ok(&cs[1], "hello", NULL);
	client_open(&extra, &d);
	r = client_recv(&extra);
	assert_string_equal(resp_error(r), "busy");
	assert_int_equal(r->via.array.ptr[1].type, MSGPACK_OBJECT_NIL);
	assert_null(client_recv_timeout(&extra, 5000));
	client_close(&extra);
	client_close(&cs[0]);
	client_close(&cs[1]);
	wait_connections(&c, 1);

	/* too_large, with the body never sent: a 1 GiB bin header */
	client_open(&cs[2], &d);
	{
		static const uint8_t head[] = {
			0x94, 0x00, 0x2a, 0xa4, 's', 'i', 'g', 'n', 0x91, 0x82,
			0xa3, 'k', 'e', 'y', 0xa3, 'l', 'i', 'm',
			0xa7, 'm', 'e', 's', 's', 'a', 'g', 'e', 0xc6, 0x40, 0x00, 0x00, 0x00,
		};

		send_raw(&cs[2], head, sizeof(head));
		r = client_recv(&cs[2]);
		assert_string_equal(resp_error(r), "too_large");
		assert_int_equal(resp_msgid(r), 42);
		assert_null(client_recv_timeout(&cs[2], 5000));
	}
	client_close(&cs[2]);
	wait_connections(&c, 1);
	/* too_large for a whole frame just over the limit */
	client_open(&cs[2], &d);
	{
		static uint8_t big[5000];
		const Param p[] = { PS("key", "lim"), PB("message", big, sizeof(big)), PEND };

		client_send(&cs[2], 43, "sign", p);
		r = client_recv(&cs[2]);
		assert_string_equal(resp_error(r), "too_large");
		assert_null(client_recv_timeout(&cs[2], 5000));
	}
	client_close(&cs[2]);
	wait_connections(&c, 1);
	/* a frame just under the limit is fine */
	{
		static uint8_t ok[3900];
		const Param p[] = { PS("key", "lim"), PB("message", ok, sizeof(ok)), PEND };

		call_ok(&c, "sign", p);
	}

	/* idle timeout: half a frame is dropped after idle_timeout_s; an idle
	 * connection between frames is kept */
	client_open(&cs[2], &d);
	{
		static const uint8_t half[] = { 0x94, 0x00, 0x01, 0xa5, 'h', 'e' };
		uint64_t t0 = now_ms();

		send_raw(&cs[2], half, sizeof(half));
		assert_null(client_recv_timeout(&cs[2], 6000));
		assert_true(now_ms() - t0 >= 900);
		assert_true(now_ms() - t0 < 6000);
	}
	client_close(&cs[2]);
	call_ok(&c, "hello", NULL); /* c was idle for > 1 s between frames */
	assert_true(log_contains(&d, "request incomplete after 1s"));
	client_close(&c);
	daemon_stop(&d);
	daemon_cleanup(&d);
}

/* the sample configuration is valid; a bad file stops sigild with its line */
static void test_config(void **state)
{
	Daemon d = { 0 };
	char path[512], *text;
	const char *src = getenv("SIGIL_SOURCE_ROOT");
	FILE *f;
	long n;
	Client c;

	assert_non_null(src);
	snprintf(path, sizeof(path), "%s/packaging/sigil.conf.example", src);
	f = fopen(path, "r");
	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	text = calloc(1, (size_t)n + 1);
	assert_non_null(text);
	assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	daemon_start(&d, text);
	free(text);
	client_open(&c, &d);
	assert_int_equal(map_get(call_ok(&c, "status", NULL), "workers")->via.u64, 2);
	client_close(&c);
	daemon_stop(&d);

	daemon_write_config(&d, "workers = 2\nmax_connections = lots\n");
	assert_int_equal(daemon_expect_failure(&d), 1);
	assert_true(log_contains(&d, "sigil.conf:2: max_connections must be a number"));
	daemon_write_config(&d, "# comment\n\nfrobnicate = 1\n");
	assert_int_equal(daemon_expect_failure(&d), 1);
	assert_true(log_contains(&d, "sigil.conf:3: unknown key 'frobnicate'"));
	daemon_cleanup(&d);
}

/* CPU time (utime + stime, clock ticks) of a process */
static long long proc_cpu_ticks(pid_t pid)
{
	long long t = -1;

	assert_int_equal(th_proc_stat((int)pid, NULL, &t), 0);
	return t;
}

/* busy_poll_us: answers come with it at its largest and with it off, it
 * stops after the last answer (an idle sigild uses no CPU), and values out
 * of range are refused */
static void test_busy_poll(void **state)
{
	static const char *const confs[] = { "busy_poll_us = 1000\n", "busy_poll_us = 0\n" };
	long hz = sysconf(_SC_CLK_TCK);

	for (size_t k = 0; k < 2; k++) {
		Daemon d = { 0 };
		Client c;
		uint8_t pk[32], sig[64];
		long long t0, t1;

		daemon_start(&d, confs[k]);
		client_open(&c, &d);
		gen_key(&c, "ed25519", "bp", pk);
		for (int i = 0; i < 200; i++) {
			const Param p[] = { PS("key", "bp"), PB("message", (const uint8_t *)&i, sizeof(i)), PEND };

			get_bin(call_ok(&c, "sign", p), "signature", sig, 64);
			assert_int_equal(crypto_sign_verify_detached(sig, (const uint8_t *)&i, sizeof(i), pk), 0);
		}
		/* the connection stays open and quiet: sigild must go to sleep */
		usleep(50 * 1000);
		t0 = proc_cpu_ticks(d.pid);
		usleep(1000 * 1000);
		t1 = proc_cpu_ticks(d.pid);
		if (t1 - t0 > hz / 20)
			fail_msg("%s: sigild used %lld ticks (of %ld a second) in a quiet second", confs[k], t1 - t0, hz);
		client_close(&c);
		daemon_stop(&d);
		daemon_cleanup(&d);
	}
	{
		Daemon d = { 0 };

		daemon_start(&d, "busy_poll_us = 0\n");
		daemon_stop(&d);
		daemon_write_config(&d, "busy_poll_us = 1001\n");
		assert_int_equal(daemon_expect_failure(&d), 1);
		assert_true(log_contains(&d, "sigil.conf:1: busy_poll_us must be a number from 0 to 1000"));
		daemon_cleanup(&d);
	}
}

/* a peer that is not allowed: refused and logged; allowed after a reload */
static int peer_hello(const char *sock, gid_t supp, char *code, size_t code_len)
{
	pid_t pid;
	int p[2], status;
	ssize_t n;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		msgpack_unpacker up;
		msgpack_unpacked res;
		char buf[4096], out[64] = "none";
		ssize_t k;
		int fd;

		close(p[0]);
		if (setgroups(supp ? 1 : 0, &supp) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", sock);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
			snprintf(out, sizeof(out), "connect:%d", errno);
			(void)!write(p[1], out, strlen(out));
			_exit(0);
		}
		{
			/* [0, 9, "hello", [{}]] */
			static const uint8_t req[] = { 0x94, 0x00, 0x09, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x91, 0x80 };

			(void)!send(fd, req, sizeof(req), MSG_NOSIGNAL);
		}
		msgpack_unpacker_init(&up, 4096);
		msgpack_unpacked_init(&res);
		while ((k = recv(fd, buf, sizeof(buf), 0)) > 0) {
			msgpack_unpacker_reserve_buffer(&up, (size_t)k);
			memcpy(msgpack_unpacker_buffer(&up), buf, (size_t)k);
			msgpack_unpacker_buffer_consumed(&up, (size_t)k);
			if (msgpack_unpacker_next(&up, &res) == MSGPACK_UNPACK_SUCCESS) {
				const msgpack_object *e = &res.data.via.array.ptr[2];

				if (e->type == MSGPACK_OBJECT_NIL) {
					snprintf(out, sizeof(out), "ok");
				} else {
					const msgpack_object *cd = map_get(e, "code");

					snprintf(out, sizeof(out), "%.*s", (int)cd->via.str.size, cd->via.str.ptr);
				}
				break;
			}
		}
		(void)!write(p[1], out, strlen(out));
		_exit(0);
	}
	close(p[1]);
	n = read(p[0], code, code_len - 1);
	close(p[0]);
	code[n > 0 ? n : 0] = '\0';
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_denied_peer(void **state)
{
	Daemon d = { 0 };
	char code[64], rundir[200], text[256];
	struct stat st;

	if (geteuid() != 0)
		fail_msg("this test must run as root (it switches to uid 65534 for the refused peer)");
	daemon_start(&d, "socket_group = 65534\n");
	/* the socket is 0660 group 65534, in a directory the group may enter */
	assert_int_equal(stat(d.sock, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0660);
	assert_int_equal(st.st_gid, 65534);
	snprintf(rundir, sizeof(rundir), "%s/run", d.dir);
	assert_int_equal(stat(rundir, &st), 0);
	assert_int_equal(st.st_gid, 65534);
	assert_int_equal(chmod(d.dir, 0711), 0);

	assert_int_equal(peer_hello(d.sock, 0, code, sizeof(code)), 0);
	assert_string_equal(code, "denied");
	snprintf(text, sizeof(text), "refused connection from uid 65534");
	assert_true(log_contains(&d, text));
	assert_true(log_contains(&d, "pid "));

	/* allow_uids, applied by SIGHUP */
	daemon_write_config(&d, "socket_group = 65534\nallow_uids = 65534\n");
	daemon_reload(&d);
	assert_int_equal(peer_hello(d.sock, 0, code, sizeof(code)), 0);
	assert_string_equal(code, "ok");
	/* allow_gids: the primary group, or a supplementary one */
	daemon_write_config(&d, "socket_group = 65534\nallow_gids = 65534\n");
	daemon_reload(&d);
	assert_int_equal(peer_hello(d.sock, 0, code, sizeof(code)), 0);
	assert_string_equal(code, "ok");
	daemon_write_config(&d, "socket_group = 65534\nallow_gids = 4242\n");
	daemon_reload(&d);
	assert_int_equal(peer_hello(d.sock, 0, code, sizeof(code)), 0);
	assert_string_equal(code, "denied");
	assert_int_equal(peer_hello(d.sock, 4242, code, sizeof(code)), 0);
	assert_string_equal(code, "ok");
	daemon_stop(&d);
	daemon_cleanup(&d);
}

int main(void)
{
	const struct CMUnitTest shared_tests[] = {
		cmocka_unit_test(test_hello_status),
		cmocka_unit_test(test_key_lifecycle),
		cmocka_unit_test(test_sign_rfc8032),
		cmocka_unit_test(test_verify),
		cmocka_unit_test(test_verify_batch),
		cmocka_unit_test(test_dh),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_bad_requests),
		cmocka_unit_test(test_internal_error),
		cmocka_unit_test(test_pipelining),
		cmocka_unit_test(test_signs_together),
		cmocka_unit_test(test_pipeline_backpressure),
		cmocka_unit_test(test_many_connections),
		cmocka_unit_test(test_never_reading_client),
		/* these start their own sigild */
		cmocka_unit_test(test_version),
		cmocka_unit_test(test_restart),
		cmocka_unit_test(test_sigterm_inflight),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_config),
		cmocka_unit_test(test_busy_poll),
		cmocka_unit_test(test_shutdown_timeout),
		cmocka_unit_test(test_denied_peer),
	};
	int r;

	if (sodium_init() < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* run a subset while debugging: SIGIL_TEST_FILTER=test_limits */
	if (getenv("SIGIL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("SIGIL_TEST_FILTER"));
	r = cmocka_run_group_tests_name("sigild", shared_tests, setup_shared, teardown_shared);
	return r;
}
