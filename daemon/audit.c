/* SPDX-License-Identifier: MIT */
/*
 * audit.c - the audit trail (loop thread only)
 *
 * Lines go to stderr through log_info() (stderr is fully buffered once
 * the server listens, server.c) and to the audit file through a memory
 * buffer. audit_flush() writes both; the server calls it once per loop
 * iteration, before it writes the answers of that iteration (conn.c:
 * conn_flush_all), and at exit. The file gets one write(2) per flush, so
 * an answer never leaves before the audit line of its operation is in the
 * file: sigild's crash (or kill -9) loses at most the lines of operations
 * whose answers had not been written. fdatasync(2) runs on the libuv pool
 * (uv_fs_fdatasync), one at a time, again at once if lines were written
 * meanwhile (group commit): a crash of the machine loses at most the lines
 * written since the last fdatasync completed, a few milliseconds. (An
 * fdatasync on the loop thread before the answers, tried first, took 4 ms
 * per loop iteration on the test VM's ext4: 328 signs/s at 1 connection,
 * and every client waited for the disk.) Without a loop (audit_set_loop
 * not called) and at exit the fdatasync is synchronous. Only the loop
 * thread writes either buffer, and the file buffer is cut after whole
 * lines only, so lines stay whole and never interleave.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "fsafe.h"
#include "log.h"

/* pending bytes that force a flush at once instead of at the end of the
 * loop iteration */
#define AUDIT_PENDING_MAX (64u << 10)

typedef struct Pending {
	char data[AUDIT_PENDING_MAX + AUDIT_LINE_MAX + 8];
	size_t len;
} Pending;

static char ring[AUDIT_RING][AUDIT_LINE_MAX];
static size_t ring_next, ring_count;
static int audit_fd = -1;
static bool to_stderr = true;
static Pending out_file;
static uv_loop_t *sync_loop;   /* fdatasync on its pool; NULL: synchronous */
static uv_fs_t sync_req;
static bool sync_running, sync_again;

void audit_set_loop(uv_loop_t *loop)
{
	sync_loop = loop;
}

static void audit_sync_start(void);

static void audit_synced(uv_fs_t *req)
{
	ssize_t r = req->result;

	uv_fs_req_cleanup(req);
	sync_running = false;
	if (r < 0 && r != UV_EINVAL)
		log_err("cannot fdatasync the audit file: %s", uv_strerror((int)r));
	if (sync_again)
		audit_sync_start();
}

static void audit_sync_start(void)
{
	sync_again = false;
	if (audit_fd < 0)
		return;
	if (sync_loop && uv_fs_fdatasync(sync_loop, &sync_req, audit_fd, audit_synced) == 0) {
		sync_running = true;
		return;
	}
	if (fdatasync(audit_fd) < 0 && errno != EINVAL)
		log_err("cannot fdatasync the audit file: %s", strerror(errno));
}

int audit_open_file(const char *path, char *why, size_t why_len)
{
	int fd, r;

	/* created 0600; an existing one must be a regular file of ours (or
	 * root's) that group and others cannot write (fsafe.c) */
	r = fsafe_open(&fd, AT_FDCWD, path, O_WRONLY | O_APPEND, FSAFE_CREATE, why, why_len);
	if (r)
		return r;
	audit_flush();
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = fd;
	return 0;
}

void audit_close(void)
{
	audit_flush_sync();
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
}

void audit_set_stderr(bool on)
{
	audit_flush();
	to_stderr = on;
}

/* write p whole (one write(2) unless the kernel takes less). Return: 0 or
 * -errno (the rest is dropped: a failing file must not grow memory
 * without bound) */
static int write_lines(int fd, Pending *p)
{
	size_t off = 0;
	int r = 0;

	while (off < p->len) {
		ssize_t w = write(fd, p->data + off, p->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)w;
	}
	p->len = 0;
	return r;
}

void audit_flush(void)
{
	int r;

	fflush(stderr);
	if (out_file.len > 0) {
		if (audit_fd < 0) {
			out_file.len = 0;
			return;
		}
		r = write_lines(audit_fd, &out_file);
		if (r < 0)
			log_err("cannot append to the audit file: %s", strerror(-r));
		if (sync_running)
			sync_again = true;
		else
			audit_sync_start();
	}
}

void audit_flush_sync(void)
{
	audit_flush();
	if (audit_fd >= 0 && fdatasync(audit_fd) < 0 && errno != EINVAL)
		log_err("cannot fdatasync the audit file: %s", strerror(errno));
	fflush(stderr);
}

/* copy s into a field value: spaces, quotes, backslashes, control
 * characters and bytes that are not printable UTF-8 escaped (\xNN) */
static void clean(char *out, size_t n, const char *s)
{
	size_t i = s ? log_escape(out, n, s, strlen(s), LOG_ESCAPE_FIELD) : 0;

	if (i == 0 && n > 1)
		out[0] = '-', out[1] = '\0';
}

static void pending_add(Pending *p, const char *line, size_t len)
{
	memcpy(p->data + p->len, line, len);
	p->data[p->len + len] = '\n';
	p->len += len + 1;
}

/* a line under construction in a buffer of AUDIT_LINE_MAX bytes */
typedef struct Line {
	char *p;
	size_t len;
} Line;

static void put(Line *l, const char *s, size_t n)
{
	if (n > AUDIT_LINE_MAX - 1 - l->len)
		n = AUDIT_LINE_MAX - 1 - l->len;
	memcpy(l->p + l->len, s, n);
	l->len += n;
}

static void put_str(Line *l, const char *s)
{
	put(l, s, strlen(s));
}

static void put_num(Line *l, long long v)
{
	char d[24];
	size_t i = sizeof(d);
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;

	do
		d[--i] = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		d[--i] = '-';
	put(l, d + i, sizeof(d) - i);
}

/* "YYYY-MM-DDTHH:MM:SSZ" of now, made once a second (audit lines come by
 * the thousand a second under load) */
static const char *utc_now(void)
{
	static char buf[32];
	static time_t made = (time_t)-1;
	struct timespec now;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &now);
	if (now.tv_sec != made) {
		gmtime_r(&now.tv_sec, &tm);
		if (strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
			snprintf(buf, sizeof(buf), "?");
		made = now.tv_sec;
	}
	return buf;
}

void audit_event(uid_t uid, pid_t pid, const char *exe, const char *label, const char *fingerprint,
                 const char *op, const char *result, const char *why)
{
	Line l = { ring[ring_next], 0 };
	char e[256], k[256], w[256];

	clean(e, sizeof(e), exe);
	/* the same line snprintf made before: audit: time=... uid=... pid=...
	 * exe=... key=... fp=... op=... result=...[ why="..."] */
	put_str(&l, "audit: time=");
	put_str(&l, utc_now());
	put_str(&l, " uid=");
	put_num(&l, (long long)(unsigned)uid);
	put_str(&l, " pid=");
	put_num(&l, (long long)(int)pid);
	put_str(&l, " exe=");
	put_str(&l, e);
	put_str(&l, " key=");
	clean(k, sizeof(k), label);
	put_str(&l, k);
	put_str(&l, " fp=");
	put_str(&l, fingerprint && *fingerprint ? fingerprint : "-");
	put_str(&l, " op=");
	put_str(&l, op);
	put_str(&l, " result=");
	put_str(&l, result);
	if (why) {
		/* control characters escaped (\xNN), a quote becomes ' */
		log_escape(w, sizeof(w), why, strlen(why), 0);
		for (char *q = w; *q; q++)
			if (*q == '"')
				*q = '\'';
		put_str(&l, " why=\"");
		put_str(&l, w);
		put_str(&l, "\"");
	}
	l.p[l.len] = '\0';
	ring_next = (ring_next + 1) % AUDIT_RING;
	if (ring_count < AUDIT_RING)
		ring_count++;
	if (to_stderr)
		log_emit_line(LOG_PRIO_INFO, l.p, l.len);
	if (audit_fd >= 0) {
		pending_add(&out_file, l.p, l.len);
		if (out_file.len >= AUDIT_PENDING_MAX)
			audit_flush();
	}
}

size_t audit_recent(const char **lines, size_t max)
{
	size_t n = ring_count < max ? ring_count : max;
	size_t start = (ring_next + AUDIT_RING - n) % AUDIT_RING;

	for (size_t i = 0; i < n; i++)
		lines[i] = ring[(start + i) % AUDIT_RING];
	return n;
}
