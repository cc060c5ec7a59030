/* SPDX-License-Identifier: MIT */
/*
 * log.c - stderr logging with sd-daemon priority prefixes
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

static int log_max = LOG_PRIO_INFO;

void log_set_max_priority(int max)
{
	log_max = max;
}

/* the length of the UTF-8 sequence at p (at most n bytes) if it is valid,
 * not overlong, not a surrogate and not a C1 control (U+0080..U+009F, which
 * terminals take as CSI, OSC, ...); 0 otherwise */
static size_t utf8_ok(const unsigned char *p, size_t n)
{
	uint32_t cp;
	size_t len, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return len;
}

/* c is printable ASCII that log_escape() copies as it is */
static inline bool plain(unsigned char c, unsigned flags)
{
	return c >= 0x20 && c < 0x7f && !((flags & LOG_ESCAPE_FIELD) && (c == ' ' || c == '"' || c == '\\'));
}

/* the length of the run of plain() characters at p (n bytes); without
 * LOG_ESCAPE_FIELD eight bytes at a time while none is below 0x20 or at
 * or above 0x7f (the tests may find such a byte where there is none, never
 * the other way: the byte loop then decides) */
static size_t plain_run(const unsigned char *p, size_t n, unsigned flags)
{
	const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
	size_t i = 0;

	if (!(flags & LOG_ESCAPE_FIELD)) {
		for (; n - i >= 8; i += 8) {
			uint64_t x;

			memcpy(&x, p + i, 8);
			if ((((x - 0x20 * ones) & ~x) | (x + ones) | x) & highs)
				break;
		}
	}
	while (i < n && plain(p[i], flags))
		i++;
	return i;
}

size_t log_escape(char *out, size_t out_len, const char *s, size_t len, unsigned flags)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s, *end = p + len;
	size_t o = 0;

	if (out_len == 0)
		return 0;
	while (p < end) {
		unsigned char c = *p;
		size_t n = 1;
		bool esc;

		/* a run of printable ASCII that needs no escape goes in one
		 * copy (audit lines are nearly all such runs: this loop is on
		 * the loop thread once or twice per request) */
		if (plain(c, flags)) {
			n = plain_run(p, (size_t)(end - p), flags);
			if (n > out_len - 1 - o)
				n = out_len - 1 - o;
			memcpy(out + o, p, n);
			o += n;
			p += n;
			if (p < end && o + 1 >= out_len)
				break;
			continue;
		}

		if (c >= 0x80) {
			n = utf8_ok(p, (size_t)(end - p));
			esc = n == 0;
			if (esc)
				n = 1;
		} else {
			esc = !plain(c, flags);
		}
		if ((flags & LOG_ESCAPE_NL_SPACE) && (c == '\n' || c == '\r')) {
			if (o + 1 >= out_len)
				break;
			out[o++] = ' ';
		} else if (esc) {
			if (o + 4 >= out_len)
				break;
			out[o++] = '\\', out[o++] = 'x', out[o++] = hex[c >> 4], out[o++] = hex[c & 15];
		} else {
			if (o + n >= out_len)
				break;
			memcpy(out + o, p, n);
			o += n;
		}
		p += n;
	}
	out[o] = '\0';
	return o;
}

void log_emit_line(int prio, const char *line, size_t len)
{
	/* "<p>", the line escaped (at most 4 bytes for each of 1024), "\n" */
	char out[3 + 1024 * 4 + 1];
	size_t n;

	if (prio > log_max)
		return;
	/* one event, one line: newlines inside a message become spaces, other
	 * control characters and bytes that are not printable
	 * UTF-8 are escaped (\xNN): no terminal sequence passes */
	if (len > 1024)
		len = 1024;
	out[0] = '<', out[1] = (char)('0' + (prio & 7)), out[2] = '>';
	n = 3 + log_escape(out + 3, sizeof(out) - 3, line, len, LOG_ESCAPE_NL_SPACE);
	out[n++] = '\n'; /* (over log_escape's NUL, which has room) */
	fwrite(out, 1, n, stderr); /* one call: one lock of stderr */
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
