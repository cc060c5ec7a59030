/* SPDX-License-Identifier: MIT */
/*
 * audit.c - the audit trail (loop thread only)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"

static char ring[AUDIT_RING][AUDIT_LINE_MAX];
static size_t ring_next, ring_count;
static int audit_fd = -1;
static bool to_stderr = true;

int audit_open_file(const char *path)
{
	int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return -errno;
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = fd;
	return 0;
}

void audit_close(void)
{
	if (audit_fd >= 0)
		close(audit_fd);
	audit_fd = -1;
}

void audit_set_stderr(bool on)
{
	to_stderr = on;
}

/* copy s into a field value: no spaces, quotes or control characters */
static void clean(char *out, size_t n, const char *s)
{
	size_t i = 0;

	for (; s && *s && i + 1 < n; s++)
		out[i++] = (*s <= ' ' || *s == '"' || *s == 0x7f) ? '_' : *s;
	out[i] = '\0';
	if (i == 0 && n > 1)
		out[0] = '-', out[1] = '\0';
}

void audit_event(uid_t uid, pid_t pid, const char *exe, const char *label, const char *fingerprint,
                 const char *op, const char *result, const char *why)
{
	char *line = ring[ring_next], ts[32], e[256], w[256];
	struct timespec now;
	struct tm tm;
	int n;

	clock_gettime(CLOCK_REALTIME, &now);
	gmtime_r(&now.tv_sec, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	clean(e, sizeof(e), exe);
	if (why) {
		size_t i = 0;

		for (; *why && i + 1 < sizeof(w); why++)
			w[i++] = (*why < ' ' || *why == '"') ? '\'' : *why;
		w[i] = '\0';
	}
	n = snprintf(line, AUDIT_LINE_MAX, "audit: time=%s uid=%u pid=%d exe=%s key=%s fp=%s op=%s result=%s%s%s%s",
	             ts, (unsigned)uid, (int)pid, e, label && *label ? label : "-",
	             fingerprint && *fingerprint ? fingerprint : "-", op, result, why ? " why=\"" : "",
	             why ? w : "", why ? "\"" : "");
	if (n < 0)
		return;
	ring_next = (ring_next + 1) % AUDIT_RING;
	if (ring_count < AUDIT_RING)
		ring_count++;
	if (to_stderr)
		log_info("%s", line);
	if (audit_fd >= 0) {
		char buf[AUDIT_LINE_MAX + 1];
		size_t len = strlen(line);

		memcpy(buf, line, len);
		buf[len++] = '\n';
		/* one write with O_APPEND: lines never interleave */
		if (write(audit_fd, buf, len) != (ssize_t)len)
			log_err("cannot append to the audit file: %s", strerror(errno));
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
