/* SPDX-License-Identifier: MIT */
/*
 * log.h - one line per event on stderr with sd-daemon priority prefixes
 *
 * Never pass a secret to these functions.
 */
#ifndef SIGIL_DAEMON_LOG_H
#define SIGIL_DAEMON_LOG_H

#include <stddef.h>

#define LOG_PRIO_ERR 3
#define LOG_PRIO_WARNING 4
#define LOG_PRIO_INFO 6
#define LOG_PRIO_DEBUG 7

__attribute__((format(printf, 2, 3)))
void log_emit(int prio, const char *fmt, ...);
/* a line already made (len bytes, no newline needed): the same output as
 * log_emit(prio, "%s", line) without formatting it again */
void log_emit_line(int prio, const char *line, size_t len);
/* log_escape() flags */
#define LOG_ESCAPE_NL_SPACE 1u /* a newline or carriage return becomes a space */
#define LOG_ESCAPE_FIELD 2u    /* also escape space, '"' and '\\' (audit field values) */
/**
 * log_escape() - copy @len bytes of @s (a string a peer may have chosen) to
 * @out with control characters, DEL and bytes that are not printable UTF-8
 * (invalid sequences, C1 controls) escaped as \xNN: one line stays one line
 * and no terminal sequence passes through
 * @out: always NUL-terminated; cut at a whole character or escape
 * @out_len: its size
 * @s: the input, @len bytes (NULs included are escaped)
 * @len: its length
 * @flags: LOG_ESCAPE_*
 *
 * Return: the length written to @out.
 */
size_t log_escape(char *out, size_t out_len, const char *s, size_t len, unsigned flags);
/* messages with a priority above max are dropped (default: info) */
void log_set_max_priority(int max);

#define log_err(...) log_emit(LOG_PRIO_ERR, __VA_ARGS__)
#define log_warn(...) log_emit(LOG_PRIO_WARNING, __VA_ARGS__)
#define log_info(...) log_emit(LOG_PRIO_INFO, __VA_ARGS__)
#define log_debug(...) log_emit(LOG_PRIO_DEBUG, __VA_ARGS__)

/*
 * error_origin() - note where a negative errno first appeared and return it
 * (dbus-broker util/error.h). error_trace() adds a line to the trail of an
 * error passed up. Both log at debug priority only and pass r through; a
 * non-negative r passes silently.
 */
int error_origin_impl(int r, const char *file, int line, const char *func);
#define error_origin(r) error_origin_impl((r), __FILE__, __LINE__, __func__)
#define error_trace(r) error_origin_impl((r), __FILE__, __LINE__, __func__)

#endif /* SIGIL_DAEMON_LOG_H */
