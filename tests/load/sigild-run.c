/* SPDX-License-Identifier: MIT */
/*
 * sigild-run.c - start the real sigild and talk to it over raw sockets
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sigild-run.h"

static int tap_n, tap_failed;

void tap_ok(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d - ", ok ? "ok" : "not ok", ++tap_n);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		tap_failed++;
}

int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed || tap_n == 0 ? 1 : 0;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int sigild_setup(Sigild *d, const char *config_text)
{
	FILE *f;

	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/sigil-load.XXXXXX");
	if (!mkdtemp(d->dir))
		return -1;
	snprintf(d->sock, sizeof(d->sock), "%s/sigild.sock", d->dir);
	snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
	snprintf(d->config, sizeof(d->config), "%s/sigil.conf", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/sigild.log", d->dir);
	f = fopen(d->config, "w");
	if (!f)
		return -1;
	fputs(config_text ? config_text : "", f);
	fclose(f);
	d->pid = -1;
	return 0;
}

int sigild_connect(const Sigild *d)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (strlen(d->sock) >= sizeof(sa.sun_path)) {
		close(fd);
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(sa.sun_path, d->sock, strlen(d->sock) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

pid_t sigild_start(Sigild *d, const char *const *extra, int *statusp)
{
	const char *sigild = getenv("SIGILD");
	pid_t pid;

	if (!sigild) {
		fprintf(stderr, "SIGILD is not set (meson sets it)\n");
		return -1;
	}
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		const char *argv[32];
		int n = 0, fd = open(d->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		/* SIGILD_WRAPPER (e.g. tests/fuzz/sigild-valgrind.sh) runs sigild
		 * under a tool; meson does not set it, so it passes through */
		if (getenv("SIGILD_WRAPPER") && *getenv("SIGILD_WRAPPER"))
			argv[n++] = getenv("SIGILD_WRAPPER");
		argv[n++] = sigild;
		argv[n++] = "--socket";
		argv[n++] = d->sock;
		argv[n++] = "--state-dir";
		argv[n++] = d->state;
		argv[n++] = "--config";
		argv[n++] = d->config;
		argv[n++] = "--foreground";
		for (int i = 0; extra && extra[i] && n < 31; i++)
			argv[n++] = extra[i];
		argv[n] = NULL;
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 20000;) {
		int status, fd;

		if (waitpid(pid, &status, WNOHANG) == pid) {
			if (statusp)
				*statusp = status;
			d->pid = -1;
			return -1;
		}
		fd = sigild_connect(d);
		if (fd >= 0) {
			close(fd);
			d->pid = pid;
			return pid;
		}
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	d->pid = -1;
	return -1;
}

int sigild_stop(Sigild *d, int sig, int timeout_ms)
{
	int status;

	if (d->pid <= 0)
		return -1;
	kill(d->pid, sig);
	for (uint64_t t0 = now_ms(); now_ms() - t0 < (uint64_t)timeout_ms;) {
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = -1;
			return status;
		}
		usleep(5000);
	}
	kill(d->pid, SIGKILL);
	waitpid(d->pid, NULL, 0);
	d->pid = -1;
	return -1;
}

void sigild_cleanup(Sigild *d)
{
	char cmd[600];

	if (d->pid > 0)
		sigild_stop(d, SIGKILL, 5000);
	if (d->dir[0] && !getenv("SIGIL_KEEP_TMP")) {
		/* make a read-only test directory removable again */
		snprintf(cmd, sizeof(cmd), "chmod -R u+rwx '%s' 2>/dev/null; rm -rf -- '%s'", d->dir, d->dir);
		(void)!system(cmd);
	}
}

void sigild_show_log(const Sigild *d, int lines)
{
	char cmd[600];

	fflush(stdout);
	snprintf(cmd, sizeof(cmd), "tail -n %d '%s' | sed 's/^/# sigild: /'", lines, d->log);
	(void)!system(cmd);
}

bool sigild_log_contains(const Sigild *d, const char *needle)
{
	FILE *f = fopen(d->log, "r");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, needle) != NULL;
	fclose(f);
	return found;
}

int proc_fd_count(pid_t pid)
{
	char path[64];
	DIR *dir;
	struct dirent *e;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -1;
	while ((e = readdir(dir)))
		if (e->d_name[0] != '.')
			n++;
	closedir(dir);
	return n;
}

long proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t fl = strlen(field);
	FILE *f;
	long v = -1;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, field, fl) == 0 && line[fl] == ':') {
			v = strtol(line + fl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int raise_nofile(rlim_t n)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	if (rl.rlim_cur >= n)
		return 0;
	if (rl.rlim_max < n)
		rl.rlim_max = n; /* needs CAP_SYS_RESOURCE */
	rl.rlim_cur = n;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_bin(msgpack_packer *pk, const void *p, size_t n)
{
	msgpack_pack_bin(pk, n);
	msgpack_pack_bin_body(pk, p, n);
}

static void head(msgpack_packer *pk, uint64_t msgid, const char *method, size_t nparams)
{
	msgpack_pack_array(pk, 4);
	msgpack_pack_uint8(pk, 0);
	msgpack_pack_uint64(pk, msgid);
	pack_str(pk, method);
	msgpack_pack_array(pk, 1);
	msgpack_pack_map(pk, nparams);
}

void req_hello(msgpack_sbuffer *sb, uint64_t msgid)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, "hello", 0);
}

void req_status(msgpack_sbuffer *sb, uint64_t msgid)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, "status", 0);
}

void req_sign(msgpack_sbuffer *sb, uint64_t msgid, const char *label, const void *msg, size_t len)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, "sign", 2);
	pack_str(&pk, "key");
	pack_str(&pk, label);
	pack_str(&pk, "message");
	pack_bin(&pk, msg, len);
}

void req_verify(msgpack_sbuffer *sb, uint64_t msgid, const uint8_t pkey[32], const uint8_t sig[64],
                const void *msg, size_t len)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, "verify", 3);
	pack_str(&pk, "public_key");
	pack_bin(&pk, pkey, 32);
	pack_str(&pk, "signature");
	pack_bin(&pk, sig, 64);
	pack_str(&pk, "message");
	pack_bin(&pk, msg, len);
}

void req_unlock(msgpack_sbuffer *sb, uint64_t msgid, const char *passphrase)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, "unlock", passphrase ? 1 : 0);
	if (passphrase) {
		pack_str(&pk, "passphrase");
		pack_str(&pk, passphrase);
	}
}

void req_key(msgpack_sbuffer *sb, uint64_t msgid, const char *method, const char *label)
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, method, label ? 1 : 0);
	if (label) {
		pack_str(&pk, "label");
		pack_str(&pk, label);
	}
}

void req_new_key(msgpack_sbuffer *sb, uint64_t msgid, const char *type, const char *label,
                 const uint8_t seed[32])
{
	msgpack_packer pk;

	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	head(&pk, msgid, seed ? "key.import" : "key.generate", seed ? 3 : 2);
	pack_str(&pk, "type");
	pack_str(&pk, type);
	pack_str(&pk, "label");
	pack_str(&pk, label);
	if (seed) {
		pack_str(&pk, "seed");
		pack_bin(&pk, seed, 32);
	}
}

int write_all(int fd, const void *p, size_t n)
{
	const uint8_t *b = p;

	while (n > 0) {
		ssize_t k = send(fd, b, n, MSG_NOSIGNAL);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				struct pollfd pf = { .fd = fd, .events = POLLOUT };

				poll(&pf, 1, 1000);
				continue;
			}
			return -errno;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

int resp_reader_init(RespReader *rr, int fd)
{
	rr->fd = fd;
	rr->eof = false;
	return msgpack_unpacker_init(&rr->up, 64 * 1024) ? 0 : -1;
}

void resp_reader_deinit(RespReader *rr)
{
	msgpack_unpacker_destroy(&rr->up);
}

static bool is_key(const msgpack_object *o, const char *s)
{
	return o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
	       memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static void copy_str(char *out, size_t cap, const msgpack_object *o)
{
	size_t n = o->via.str.size < cap - 1 ? o->via.str.size : cap - 1;

	memcpy(out, o->via.str.ptr, n);
	out[n] = '\0';
}

/* 1: a well-formed response in r; -1: malformed */
static int resp_parse(Resp *r)
{
	const msgpack_object *o = &r->u.data, *a;

	r->code[0] = r->message[0] = '\0';
	r->result = NULL;
	if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4)
		return -1;
	a = o->via.array.ptr;
	if (a[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || a[0].via.u64 != 1)
		return -1;
	r->has_msgid = a[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER;
	r->msgid = r->has_msgid ? a[1].via.u64 : 0;
	if (a[2].type == MSGPACK_OBJECT_MAP) {
		for (uint32_t i = 0; i < a[2].via.map.size; i++) {
			const msgpack_object_kv *kv = &a[2].via.map.ptr[i];

			if (is_key(&kv->key, "code") && kv->val.type == MSGPACK_OBJECT_STR)
				copy_str(r->code, sizeof(r->code), &kv->val);
			else if (is_key(&kv->key, "message") && kv->val.type == MSGPACK_OBJECT_STR)
				copy_str(r->message, sizeof(r->message), &kv->val);
		}
		if (!r->code[0])
			return -1;
	} else if (a[2].type != MSGPACK_OBJECT_NIL) {
		return -1;
	}
	r->result = &a[3];
	return 1;
}

int resp_buffered(RespReader *rr, Resp *r)
{
	msgpack_unpacked_init(&r->u);
	switch (msgpack_unpacker_next(&rr->up, &r->u)) {
	case MSGPACK_UNPACK_SUCCESS:
		if (resp_parse(r) == 1)
			return 1;
		msgpack_unpacked_destroy(&r->u);
		return -1;
	case MSGPACK_UNPACK_CONTINUE:
		msgpack_unpacked_destroy(&r->u);
		return 0;
	default:
		msgpack_unpacked_destroy(&r->u);
		return -1;
	}
}

int resp_feed(RespReader *rr, const void *p, size_t n)
{
	if (msgpack_unpacker_buffer_capacity(&rr->up) < n && !msgpack_unpacker_reserve_buffer(&rr->up, n))
		return -1;
	memcpy(msgpack_unpacker_buffer(&rr->up), p, n);
	msgpack_unpacker_buffer_consumed(&rr->up, n);
	return 0;
}

int resp_next(RespReader *rr, Resp *r, int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int k = resp_buffered(rr, r);
		uint8_t buf[65536];
		ssize_t n;

		if (k != 0)
			return k;
		if (rr->eof)
			return 0;
		{
			struct pollfd pf = { .fd = rr->fd, .events = POLLIN };
			int64_t left = (int64_t)(end - now_ms());

			if (left <= 0 || poll(&pf, 1, (int)left) <= 0)
				return -1;
		}
		n = recv(rr->fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno == ECONNRESET)) {
			rr->eof = true;
			continue;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				continue;
			return -1;
		}
		if (resp_feed(rr, buf, (size_t)n) < 0)
			return -1;
	}
}

void resp_free(Resp *r)
{
	msgpack_unpacked_destroy(&r->u);
}

const msgpack_object *resp_get(const Resp *r, const char *key)
{
	if (!r->result || r->result->type != MSGPACK_OBJECT_MAP)
		return NULL;
	for (uint32_t i = 0; i < r->result->via.map.size; i++)
		if (is_key(&r->result->via.map.ptr[i].key, key))
			return &r->result->via.map.ptr[i].val;
	return NULL;
}

bool resp_get_bin(const Resp *r, const char *key, const uint8_t **p, size_t *n)
{
	const msgpack_object *o = resp_get(r, key);

	if (!o || o->type != MSGPACK_OBJECT_BIN)
		return false;
	*p = (const uint8_t *)o->via.bin.ptr;
	*n = o->via.bin.size;
	return true;
}

int rpc_call(const Sigild *d, const msgpack_sbuffer *req, Resp *r, RespReader *rr, int timeout_ms)
{
	int fd = sigild_connect(d);

	if (fd < 0)
		return -1;
	if (resp_reader_init(rr, fd) < 0) {
		close(fd);
		return -1;
	}
	if (write_all(fd, req->data, req->size) < 0 || resp_next(rr, r, timeout_ms) != 1) {
		resp_reader_deinit(rr);
		close(fd);
		return -1;
	}
	return 0; /* caller: resp_free(r), resp_reader_deinit(rr), close(rr->fd) */
}

static const uint8_t probe_seed[32] = "sigil load probe seed 0123456789";

int probe_setup(const Sigild *d, uint8_t pk[32])
{
	msgpack_sbuffer sb;
	RespReader rr;
	Resp r;
	int ret = -1;
	uint8_t sk[64];

	crypto_sign_seed_keypair(pk, sk, probe_seed);
	sodium_memzero(sk, sizeof(sk));
	msgpack_sbuffer_init(&sb);
	req_new_key(&sb, 1, "ed25519", "probe", probe_seed);
	if (rpc_call(d, &sb, &r, &rr, 10000) == 0) {
		const uint8_t *p;
		size_t n;
		const msgpack_object *key = resp_get(&r, "key");

		if (!r.code[0] && key && key->type == MSGPACK_OBJECT_MAP) {
			Resp sub = { .result = key };

			if (resp_get_bin(&sub, "public_key", &p, &n) && n == 32 && memcmp(p, pk, 32) == 0)
				ret = 0;
		} else if (strcmp(r.code, "exists") == 0) {
			ret = 0;
		}
		resp_free(&r);
		resp_reader_deinit(&rr);
		close(rr.fd);
	}
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

int probe(const Sigild *d, const uint8_t pk[32])
{
	static unsigned counter;
	msgpack_sbuffer sb;
	char msg[64];
	RespReader rr;
	Resp r;
	int fd, ret = -1;

	fd = sigild_connect(d);
	if (fd < 0)
		return -1;
	resp_reader_init(&rr, fd);
	msgpack_sbuffer_init(&sb);
	snprintf(msg, sizeof(msg), "probe %u pid %d", ++counter, (int)getpid());
	req_hello(&sb, 1);
	req_sign(&sb, 2, "probe", msg, strlen(msg));
	if (write_all(fd, sb.data, sb.size) < 0)
		goto out;
	for (int i = 0; i < 2; i++) {
		if (resp_next(&rr, &r, 10000) != 1)
			goto out;
		if (r.code[0] || !r.has_msgid) {
			resp_free(&r);
			goto out;
		}
		if (r.msgid == 2) {
			const uint8_t *sig;
			size_t n;

			if (!resp_get_bin(&r, "signature", &sig, &n) || n != 64 ||
			    crypto_sign_verify_detached(sig, (const uint8_t *)msg, strlen(msg), pk) != 0) {
				resp_free(&r);
				goto out;
			}
		} else if (r.msgid != 1 || !resp_get(&r, "protocol")) {
			resp_free(&r);
			goto out;
		}
		resp_free(&r);
	}
	ret = 0;
out:
	msgpack_sbuffer_destroy(&sb);
	resp_reader_deinit(&rr);
	close(fd);
	return ret;
}
