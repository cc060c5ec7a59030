/* SPDX-License-Identifier: MIT */
/*
 * fsafe.c - open the files sigild reads or appends to, and check them
 */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsafe.h"

static const char *fsafe_kind(mode_t m)
{
	if (S_ISFIFO(m))
		return "a FIFO";
	if (S_ISCHR(m))
		return "a character device";
	if (S_ISBLK(m))
		return "a block device";
	if (S_ISDIR(m))
		return "a directory";
	if (S_ISSOCK(m))
		return "a socket";
	return "not a regular file";
}

/* the rules of fsafe.h on @st; @why says what fails */
static int fsafe_check(const struct stat *st, const char *path, unsigned flags, char *why, size_t why_len)
{
	uid_t me = geteuid();
	mode_t bad = (flags & FSAFE_SECRET) ? (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH) : (S_IWGRP | S_IWOTH);

	if (S_ISLNK(st->st_mode)) {
		snprintf(why, why_len, "%s is a symbolic link: sigild does not follow links here; give the file's own path",
		         path);
		return FSAFE_E_UNSAFE;
	}
	if (!S_ISREG(st->st_mode)) {
		snprintf(why, why_len, "%s is not a regular file (%s)", path, fsafe_kind(st->st_mode));
		return FSAFE_E_UNSAFE;
	}
	if (st->st_uid != me && st->st_uid != 0) {
		snprintf(why, why_len, "%s belongs to uid %u, not to sigild's uid %u or root: its owner could change it "
		         "(chown %u %s)", path, (unsigned)st->st_uid, (unsigned)me, (unsigned)me, path);
		return FSAFE_E_UNSAFE;
	}
	if (st->st_mode & bad) {
		snprintf(why, why_len, "%s has mode %04o: group or others can %s it (chmod %s %s)", path,
		         (unsigned)(st->st_mode & 07777), (flags & FSAFE_SECRET) ? "read or write" : "write",
		         (flags & FSAFE_SECRET) ? "600" : "go-w", path);
		return FSAFE_E_UNSAFE;
	}
	return 0;
}

int fsafe_open(int *fdp, int dirfd, const char *path, int oflags, unsigned flags, char *why, size_t why_len)
{
	struct stat before, st;
	bool existed;
	int fd, r;

	*fdp = -1;
	/* first without opening: a FIFO or a device is never opened */
	existed = fstatat(dirfd, path, &before, AT_SYMLINK_NOFOLLOW) == 0;
	if (!existed && (errno != ENOENT || !(flags & FSAFE_CREATE))) {
		r = -errno;
		snprintf(why, why_len, "cannot open %s: %s", path, strerror(-r));
		return r;
	}
	if (existed) {
		r = fsafe_check(&before, path, flags, why, why_len);
		if (r)
			return r;
	}
	fd = openat(dirfd, path, oflags | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
	            ((flags & FSAFE_CREATE) ? O_CREAT : 0), 0600);
	if (fd < 0) {
		r = -errno;
		if (r == -ELOOP) {
			snprintf(why, why_len, "%s is a symbolic link: sigild does not follow links here; give the file's "
			         "own path", path);
			return FSAFE_E_UNSAFE;
		}
		snprintf(why, why_len, "cannot open %s: %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, why_len, "cannot stat %s: %s", path, strerror(-r));
		close(fd);
		return r;
	}
	r = fsafe_check(&st, path, flags, why, why_len);
	if (!r && existed && (st.st_dev != before.st_dev || st.st_ino != before.st_ino)) {
		snprintf(why, why_len, "%s was replaced while sigild opened it", path);
		r = FSAFE_E_UNSAFE;
	}
	if (r) {
		close(fd);
		return r;
	}
	*fdp = fd;
	return 0;
}
