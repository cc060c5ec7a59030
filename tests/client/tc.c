/* SPDX-License-Identifier: MIT */
/* tc.c - scratch directories, the real sigild, captured shell commands. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "tc.h"

const char *tc_build_path(const char *rel)
{
	static char buf[4][1024];
	static int slot;
	const char *root = getenv("SIGIL_BUILD_ROOT");
	char *b = buf[slot++ % 4];

	if (!root)
		fail_msg("SIGIL_BUILD_ROOT is not set (run through meson test)");
	snprintf(b, 1024, "%s/%s", root, rel);
	return b;
}

void tc_need_tool(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	if (system(cmd) != 0)
		fail_msg("required tool %s is not installed", name);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tc_daemon_dump_log(const TcDaemon *d)
{
	FILE *f = fopen(d->log, "r");
	char line[1024];

	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		printf("# sigild: %s%s", line, strchr(line, '\n') ? "" : "\n");
	fclose(f);
}

static bool socket_answers(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	bool ok;

	if (fd < 0)
		return false;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return false;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

void tc_daemon_start(TcDaemon *d)
{
	tc_daemon_start_config(d, NULL);
}

void tc_daemon_start_config(TcDaemon *d, const char *config_text)
{
	const char *sigild = tc_build_path("daemon/sigild");
	char conf[512];
	int64_t deadline;
	int logfd;

	memset(d, 0, sizeof(*d));
	snprintf(d->dir, sizeof(d->dir), "/tmp/sigil-client-test-XXXXXX");
	if (!mkdtemp(d->dir))
		fail_msg("mkdtemp: %s", strerror(errno));
	snprintf(d->sock, sizeof(d->sock), "%s/sigild.sock", d->dir);
	snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
	snprintf(d->log, sizeof(d->log), "%s/sigild.log", d->dir);
	if (mkdir(d->state, 0700) < 0)
		fail_msg("mkdir %s: %s", d->state, strerror(errno));
	snprintf(conf, sizeof(conf), "%s/sigil.conf", d->dir);
	if (config_text)
		tc_write_file(conf, config_text, strlen(config_text));
	if (access(sigild, X_OK) < 0)
		fail_msg("%s is not built", sigild);
	logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (logfd < 0)
		fail_msg("open %s: %s", d->log, strerror(errno));
	d->pid = fork();
	if (d->pid < 0)
		fail_msg("fork: %s", strerror(errno));
	if (d->pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		dup2(devnull, 0);
		dup2(logfd, 1);
		dup2(logfd, 2);
		if (config_text)
			execl(sigild, "sigild", "--socket", d->sock, "--state-dir", d->state, "--foreground",
			      "--allow-unlocked-memory", "--workers", "2", "--config", conf, (char *)NULL);
		else
			execl(sigild, "sigild", "--socket", d->sock, "--state-dir", d->state, "--foreground",
			      "--allow-unlocked-memory", "--workers", "2", (char *)NULL);
		_exit(127);
	}
	close(logfd);
	deadline = now_ms() + 20000;
	while (!socket_answers(d->sock)) {
		int st;

		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			d->pid = 0;
			tc_daemon_dump_log(d);
			fail_msg("sigild exited during start-up (status %d)", st);
		}
		if (now_ms() > deadline) {
			tc_daemon_dump_log(d);
			tc_daemon_stop(d);
			fail_msg("sigild did not answer on %s within 20 s", d->sock);
		}
		usleep(20 * 1000);
	}
}

long tc_daemon_hwm_kib(const TcDaemon *d)
{
	char path[64], line[256];
	long kib = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)d->pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

int tc_daemon_stop(TcDaemon *d)
{
	int ret = 0;

	if (d->pid > 0) {
		int st;

		if (waitpid(d->pid, &st, WNOHANG) == d->pid) {
			/* it died under the tests: show why */
			printf("# sigild exited before the end of the tests (status 0x%x); its log:\n", st);
			tc_daemon_dump_log(d);
			d->pid = 0;
			ret = -1;
		}
	}
	if (d->pid > 0) {
		int st;
		int64_t deadline = now_ms() + 10000;

		kill(d->pid, SIGTERM);
		while (waitpid(d->pid, &st, WNOHANG) == 0) {
			if (now_ms() > deadline) {
				kill(d->pid, SIGKILL);
				waitpid(d->pid, &st, 0);
				break;
			}
			usleep(10 * 1000);
		}
		d->pid = 0;
	}
	if (d->dir[0]) {
		char cmd[512];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d->dir);
		if (system(cmd) != 0)
			printf("# could not remove %s\n", d->dir);
		d->dir[0] = '\0';
	}
	return ret;
}

TcResult tc_sh(const char *dir, const char *sock, const char *fmt, ...)
{
	TcResult r = { .status = -1 };
	char *cmd, outpath[] = "/tmp/sigil-tc-out-XXXXXX";
	struct rusage ru;
	va_list ap;
	pid_t pid;
	int st, fd;

	va_start(ap, fmt);
	if (vasprintf(&cmd, fmt, ap) < 0)
		cmd = NULL;
	va_end(ap);
	if (!cmd)
		return r;
	fd = mkstemp(outpath);
	if (fd < 0) {
		free(cmd);
		return r;
	}
	unlink(outpath);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);

		if (dir && chdir(dir) < 0)
			_exit(126);
		if (sock)
			setenv("SIGIL_SOCK", sock, 1);
		dup2(devnull, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid > 0 && wait4(pid, &st, 0, &ru) == pid) {
		r.status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		r.maxrss_kib = ru.ru_maxrss;
	}
	{
		off_t len = lseek(fd, 0, SEEK_END);

		r.out = malloc((size_t)(len > 0 ? len : 0) + 1);
		if (r.out) {
			ssize_t got = len > 0 ? pread(fd, r.out, (size_t)len, 0) : 0;

			r.out_len = got > 0 ? (size_t)got : 0;
			r.out[r.out_len] = '\0';
		}
	}
	close(fd);
	free(cmd);
	return r;
}

void tc_result_free(TcResult *r)
{
	free(r->out);
	r->out = NULL;
}

static void print_output(const TcResult *r)
{
	const char *p = r->out ? r->out : "";

	while (*p) {
		const char *nl = strchr(p, '\n');
		int n = nl ? (int)(nl - p) : (int)strlen(p);

		printf("#   | %.*s\n", n, p);
		p += n + (nl ? 1 : 0);
	}
}

void tc__expect(TcResult *r, int want, const char *file, int line)
{
	if (r->status != want) {
		printf("# command exited %d, expected %d; its output:\n", r->status, want);
		print_output(r);
		_fail(file, line);
	}
}

void tc_write_file(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0)
		fail_msg("cannot write %s: %s", path, strerror(errno));
}

char *tc_read_file(const char *path, size_t *lenp)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t len = 0, cap = 0, n;

	if (!f)
		fail_msg("cannot read %s: %s", path, strerror(errno));
	do {
		if (len + 4096 + 1 > cap) {
			cap = (len + 4096 + 1) * 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + len, 1, 4096, f);
		len += n;
	} while (n > 0);
	fclose(f);
	buf[len] = '\0';
	if (lenp)
		*lenp = len;
	return buf;
}
