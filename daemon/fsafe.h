/* SPDX-License-Identifier: MIT */
/*
 * fsafe.h - open the files sigild reads or appends to, and check them
 *
 * A file that another local user could have made, replaced or written
 * (master key file, new master key file on rekey, audit file, config file,
 * credentials) is opened O_NOFOLLOW|O_NONBLOCK|O_CLOEXEC and checked with
 * fstat: a regular file, owned by sigild's uid or root, not writable by
 * group or others (not readable by them either for key material). A FIFO
 * or a device is refused before it is opened, so it can neither block
 * sigild nor be read.
 */
#ifndef SIGIL_DAEMON_FSAFE_H
#define SIGIL_DAEMON_FSAFE_H

#include <stddef.h>

enum {
	_FSAFE_E_SUCCESS,
	FSAFE_E_UNSAFE, /* the path is a symlink, not a regular file, of another uid or open to others */
};

/* fsafe_open() flags */
#define FSAFE_SECRET 1u /* key material: no group/other read either */
#define FSAFE_CREATE 2u /* create it (mode 0600) if it does not exist */

/**
 * fsafe_open() - open @path (relative to @dirfd, or AT_FDCWD) and check it
 * @fdp: the open file descriptor on success
 * @dirfd: directory @path is relative to
 * @path: the file
 * @oflags: O_RDONLY, or O_WRONLY|O_APPEND
 * @flags: FSAFE_SECRET, FSAFE_CREATE
 * @why: on failure, what is wrong: the path, the fault and the command that
 *       fixes it (for sigild's log and start-up errors; not for a peer)
 * @why_len: its size
 *
 * Return: 0, FSAFE_E_UNSAFE, or negative errno (the open failed).
 */
int fsafe_open(int *fdp, int dirfd, const char *path, int oflags, unsigned flags, char *why, size_t why_len);

#endif /* SIGIL_DAEMON_FSAFE_H */
