/* SPDX-License-Identifier: MIT */
/*
 * log.c - stderr logging with sd-daemon priority prefixes
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static int log_max = LOG_PRIO_INFO;

void log_set_max_priority(int max)
{
	log_max = max;
}

void log_emit_line(int prio, const char *line, size_t len)
{
	const char *p = line, *end = line + len;
	char pre[3] = { '<', (char)('0' + (prio & 7)), '>' };

	if (prio > log_max)
		return;
	fwrite(pre, 1, sizeof(pre), stderr);
	/* one event, one line: newlines inside a message become spaces */
	while (p < end) {
		const char *nl = p;

		while (nl < end && *nl != '\n' && *nl != '\r')
			nl++;
		fwrite(p, 1, (size_t)(nl - p), stderr);
		if (nl < end)
			fputc(' ', stderr), nl++;
		p = nl;
	}
	fputc('\n', stderr);
}

void log_emit(int prio, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	if (prio > log_max)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	log_emit_line(prio, line, strlen(line));
}

int error_origin_impl(int r, const char *file, int line, const char *func)
{
	if (r < 0)
		log_debug("error %d (%s) at %s:%d %s()", r, strerror(-r), file, line, func);
	return r;
}
