/* SPDX-License-Identifier: MIT */
/*
 * audit.h - one line per private-key operation and key change
 *
 *   audit: time=<UTC ISO 8601> uid=<n> pid=<n> exe=<path> key=<label>
 *          fp=<fingerprint> op=<sign|dh|generate|import|delete|lock|unlock>
 *          result=<ok|denied|locked|not_found|error> [why="<text>"]
 *
 * on one line, to stderr (the journal under systemd) and, with
 * --audit-file, appended to that file (O_APPEND). Lines are buffered and
 * written by audit_flush(), once per loop iteration before that
 * iteration's answers; the file gets one write per flush and fdatasync
 * on the loop's pool, one at a time (group commit; audit.c says what a
 * crash can lose). The last AUDIT_RING lines are kept in memory for the "audit"
 * method (`sigil audit`). Never a message, a seed, or a passphrase.
 */
#ifndef SIGIL_DAEMON_AUDIT_H
#define SIGIL_DAEMON_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <uv.h>

#define AUDIT_RING 1024
#define AUDIT_LINE_MAX 768

/*
 * audit_open_file() - open (create, mode 0600) the append-only file: not a
 * symlink, a regular file owned by sigild's uid or root that group and
 * others cannot write (fsafe.c); @why says what is wrong otherwise.
 * Return: 0, FSAFE_E_UNSAFE or -errno.
 */
int audit_open_file(const char *path, char *why, size_t why_len);
void audit_close(void);
/* stderr on (default) or off */
void audit_set_stderr(bool on);

/* write the buffered lines (stderr, and the file; its fdatasync follows
 * on @loop's pool, audit_set_loop) */
void audit_flush(void);
/* the same, and fdatasync now (exit) */
void audit_flush_sync(void);
/* run fdatasync on this loop's pool (NULL: synchronously in audit_flush) */
void audit_set_loop(uv_loop_t *loop);

void audit_event(uid_t uid, pid_t pid, const char *exe, const char *label, const char *fingerprint,
                 const char *op, const char *result, const char *why);

/* the last @max lines, oldest first, into @lines (pointers into the ring,
 * valid until the next audit_event). Return: the count. */
size_t audit_recent(const char **lines, size_t max);

#endif /* SIGIL_DAEMON_AUDIT_H */
