/* SPDX-License-Identifier: MIT */
/*
 * agent-bench.c - SIGN_REQUEST throughput of sigild's ssh-agent socket
 * against stock OpenSSH ssh-agent, in the same run, with 1 and 32
 * connections (issue 7). Not a test: it measures and prints.
 *
 * Usage: agent-bench [--sigild PATH] [--ssh-agent PATH] [--seconds S]
 *                    [--conns 1,32] [--workers N]
 * Both agents get the same Ed25519 key (ADD_IDENTITY); each connection
 * sends one 64-byte SIGN_REQUEST, waits for the answer, and repeats (as ssh
 * does). Signatures are checked with libsodium on the first round.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

static uint8_t pk[32], sk[64];
static atomic_bool stop_flag;
static atomic_ullong total;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		return -1;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static size_t put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return 4;
}

static size_t put_str(uint8_t *p, const void *s, size_t n)
{
	put_u32(p, (uint32_t)n);
	memcpy(p + 4, s, n);
	return 4 + n;
}

static int io_all(int fd, void *p, size_t n, bool wr)
{
	while (n > 0) {
		ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);

		if (k <= 0)
			return -1;
		p = (uint8_t *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

/* one request/answer; returns the answer length or -1 */
static ssize_t roundtrip(int fd, const uint8_t *req, size_t len, uint8_t *ans, size_t cap)
{
	uint8_t l[4];
	uint32_t n;

	if (io_all(fd, (void *)req, len, true) < 0 || io_all(fd, l, 4, false) < 0)
		return -1;
	n = (uint32_t)l[0] << 24 | (uint32_t)l[1] << 16 | (uint32_t)l[2] << 8 | l[3];
	if (n > cap || io_all(fd, ans, n, false) < 0)
		return -1;
	return n;
}

static int add_key(const char *sock)
{
	uint8_t m[512], a[64];
	size_t n = 4;
	int fd = connect_unix(sock);
	ssize_t k;

	if (fd < 0)
		return -1;
	m[n++] = 17;
	n += put_str(m + n, "ssh-ed25519", 11);
	n += put_str(m + n, pk, 32);
	n += put_str(m + n, sk, 64);
	n += put_str(m + n, "bench", 5);
	put_u32(m, (uint32_t)(n - 4));
	k = roundtrip(fd, m, n, a, sizeof(a));
	close(fd);
	sodium_memzero(m, sizeof(m));
	return k == 1 && a[0] == 6 ? 0 : -1;
}

static size_t sign_request(uint8_t *m, const uint8_t data[64])
{
	size_t n = 4;

	m[n++] = 13;
	n += put_u32(m + n, 51);
	n += put_str(m + n, "ssh-ed25519", 11);
	n += put_str(m + n, pk, 32);
	n += put_str(m + n, data, 64);
	n += put_u32(m + n, 0);
	put_u32(m, (uint32_t)(n - 4));
	return n;
}

typedef struct Worker {
	pthread_t t;
	const char *sock;
	int fd;
	int err;
} Worker;

static void *worker(void *arg)
{
	Worker *w = arg;
	uint8_t data[64], m[256], a[256];
	unsigned long long n = 0;
	size_t len;

	randombytes_buf(data, sizeof(data));
	len = sign_request(m, data);
	/* the first answer is checked */
	if (roundtrip(w->fd, m, len, a, sizeof(a)) != 88 || a[0] != 14 ||
	    crypto_sign_verify_detached(a + 24, data, 64, pk) != 0) {
		w->err = 1;
		return NULL;
	}
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		if (roundtrip(w->fd, m, len, a, sizeof(a)) != 88) {
			w->err = 1;
			break;
		}
		n++;
	}
	atomic_fetch_add(&total, n);
	return NULL;
}

/* signatures per second over `seconds` with `conns` connections */
static double measure(const char *sock, int conns, double seconds)
{
	Worker *w = calloc((size_t)conns, sizeof(*w));
	double t0, t1;
	int bad = 0;

	if (!w)
		return -1;
	for (int i = 0; i < conns; i++) {
		w[i].sock = sock;
		w[i].fd = connect_unix(sock);
		if (w[i].fd < 0) {
			fprintf(stderr, "agent-bench: cannot connect to %s\n", sock);
			exit(1);
		}
	}
	atomic_store(&stop_flag, false);
	atomic_store(&total, 0);
	t0 = now_s();
	for (int i = 0; i < conns; i++)
		pthread_create(&w[i].t, NULL, worker, &w[i]);
	usleep((useconds_t)(seconds * 1e6));
	atomic_store(&stop_flag, true);
	for (int i = 0; i < conns; i++) {
		pthread_join(w[i].t, NULL);
		bad |= w[i].err;
		close(w[i].fd);
	}
	t1 = now_s();
	free(w);
	if (bad) {
		fprintf(stderr, "agent-bench: a sign request on %s failed or gave a bad signature\n", sock);
		exit(1);
	}
	return (double)atomic_load(&total) / (t1 - t0);
}

static pid_t spawn(const char *const *argv, const char *logf)
{
	pid_t pid = fork();

	if (pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return pid;
}

static void wait_socket(const char *sock, pid_t pid)
{
	for (int i = 0; i < 1500; i++) {
		int fd = connect_unix(sock);

		if (fd >= 0) {
			close(fd);
			return;
		}
		if (waitpid(pid, NULL, WNOHANG) == pid)
			break;
		usleep(10000);
	}
	fprintf(stderr, "agent-bench: %s did not come up\n", sock);
	exit(1);
}

int main(int argc, char **argv)
{
	const char *sigild = getenv("SIGILD"), *ssh_agent = "/usr/bin/ssh-agent", *workers = NULL;
	char conns_arg[64] = "1,32", dir[64] = "/tmp/sigil-agent-bench-XXXXXX";
	char s_sock[128], a_sock[128], main_sock[128], state[128], logf[128], cmd[256];
	double seconds = 3;
	pid_t p_sigild, p_agent;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--sigild") && i + 1 < argc)
			sigild = argv[++i];
		else if (!strcmp(argv[i], "--ssh-agent") && i + 1 < argc)
			ssh_agent = argv[++i];
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--conns") && i + 1 < argc)
			snprintf(conns_arg, sizeof(conns_arg), "%s", argv[++i]);
		else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
			workers = argv[++i];
		else {
			fprintf(stderr, "usage: agent-bench [--sigild PATH] [--ssh-agent PATH] [--seconds S] "
			                "[--conns 1,32] [--workers N]\n");
			return 2;
		}
	}
	if (!sigild || seconds <= 0 || sodium_init() < 0) {
		fprintf(stderr, "agent-bench: pass --sigild PATH (or set SIGILD)\n");
		return 2;
	}
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(s_sock, sizeof(s_sock), "%s/sigil-agent.sock", dir);
	snprintf(a_sock, sizeof(a_sock), "%s/ssh-agent.sock", dir);
	snprintf(main_sock, sizeof(main_sock), "%s/sigild.sock", dir);
	snprintf(state, sizeof(state), "%s/state", dir);
	snprintf(logf, sizeof(logf), "%s/log", dir);
	{
		const char *av[] = { sigild, "--socket", main_sock, "--ssh-agent-socket", s_sock, "--state-dir", state,
		                     "--foreground", workers ? "--workers" : NULL, workers, NULL };

		p_sigild = spawn(av, logf);
	}
	{
		const char *av[] = { ssh_agent, "-D", "-a", a_sock, NULL };

		p_agent = spawn(av, logf);
	}
	wait_socket(s_sock, p_sigild);
	wait_socket(a_sock, p_agent);
	crypto_sign_keypair(pk, sk);
	if (add_key(s_sock) < 0 || add_key(a_sock) < 0) {
		fprintf(stderr, "agent-bench: adding the key failed\n");
		return 1;
	}
	sodium_memzero(sk, sizeof(sk));
	printf("# SIGN_REQUEST (64-byte data, Ed25519), %.1f s per cell, %ld CPUs\n", seconds,
	       sysconf(_SC_NPROCESSORS_ONLN));
	printf("%-12s %12s %14s %14s %8s\n", "connections", "", "ssh-agent/s", "sigild/s", "ratio");
	for (char *save = NULL, *tok = strtok_r(conns_arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int n = atoi(tok);
		double a, s;

		if (n < 1 || n > 1024)
			continue;
		a = measure(a_sock, n, seconds);
		s = measure(s_sock, n, seconds);
		printf("%-12d %12s %14.0f %14.0f %7.2fx\n", n, "", a, s, s / a);
		fflush(stdout);
	}
	kill(p_sigild, SIGTERM);
	kill(p_agent, SIGTERM);
	waitpid(p_sigild, NULL, 0);
	waitpid(p_agent, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : 1;
}
