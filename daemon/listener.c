/* SPDX-License-Identifier: MIT */
/*
 * listener.c - sigild's listening sockets: checked directories, bind,
 * live and stale sockets, socket activation by name
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "listener.h"
#include "log.h"

#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/* the rules of listener.h on an open directory */
static int listener_dir_check(int dirfd, const char *path, const char *what)
{
	uid_t me = geteuid();
	struct stat st;

	if (fstat(dirfd, &st) < 0) {
		log_err("cannot stat the %s %s: %s", what, path, strerror(errno));
		return -errno;
	}
	if (!S_ISDIR(st.st_mode)) {
		log_err("the %s %s is not a directory", what, path);
		return LISTENER_E_UNSAFE;
	}
	if (st.st_uid != me && st.st_uid != 0) {
		log_err("the %s %s belongs to uid %u, not to sigild's uid %u or root: its owner could replace the "
		        "sockets in it; remove it (rm -r %s) or give it to sigild (chown %u %s)", what, path,
		        (unsigned)st.st_uid, (unsigned)me, path, (unsigned)me, path);
		return LISTENER_E_UNSAFE;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		log_err("the %s %s has mode %04o: group or others can replace the sockets in it (chmod go-w %s)", what,
		        path, (unsigned)(st.st_mode & 07777), path);
		return LISTENER_E_UNSAFE;
	}
	return 0;
}

/* the directories above @path (its parent resolved, and the parent's
 * parents): each owned by root or us, and writable by group or others only
 * with the sticky bit (/tmp): no one else can rename the directory away and
 * put another in its place. Before anything is made there. */
static int listener_parents_check(const char *path, const char *what)
{
	uid_t me = geteuid();
	char parent[PATH_MAX], *real, *slash;
	int r = 0;

	snprintf(parent, sizeof(parent), "%s", path);
	while ((slash = strrchr(parent, '/')) != NULL && slash != parent && slash[1] == '\0')
		*slash = '\0'; /* "dir/" */
	slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		slash[1] = '\0';
	else
		*slash = '\0';
	real = realpath(parent, NULL);
	if (!real) {
		r = -errno;
		log_err("cannot resolve the directory above the %s %s: %s", what, path, strerror(errno));
		return r;
	}
	for (;;) {
		struct stat st;

		if (stat(real, &st) < 0) {
			r = -errno;
			log_err("cannot check %s above the %s %s: %s", real, what, path, strerror(errno));
			break;
		}
		if ((st.st_uid != me && st.st_uid != 0) ||
		    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
			log_err("the %s %s is inside %s, which %s: another user could rename it and put their own in "
			        "its place; use a directory whose parents only root or sigild's uid can change", what,
			        path, real, st.st_uid != me && st.st_uid != 0 ? "belongs to another uid" :
			        "group or others can write (no sticky bit)");
			r = LISTENER_E_UNSAFE;
			break;
		}
		slash = strrchr(real, '/');
		if (!slash || (slash == real && slash[1] == '\0'))
			break;
		if (slash == real)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	free(real);
	return r;
}

int listener_dir_open(int *dirfdp, const char *path, const char *what, gid_t group)
{
	mode_t mode = group != (gid_t)-1 ? 0750 : 0700;
	bool made = false;
	int fd, r;

	*dirfdp = -1;
	r = listener_parents_check(path, what);
	if (r)
		return r;
	if (mkdir(path, mode) == 0)
		made = true;
	else if (errno != EEXIST) {
		r = -errno;
		log_err("cannot create the %s %s: %s", what, path, strerror(errno));
		return r;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		struct stat st;

		r = -errno;
		if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)) {
			log_err("the %s %s is a symbolic link: sigild does not follow it (another user may control its "
			        "target); use the directory's own path", what, path);
			return LISTENER_E_UNSAFE;
		}
		if (r == -ENOTDIR) {
			log_err("the %s %s is not a directory", what, path);
			return LISTENER_E_UNSAFE;
		}
		log_err("cannot open the %s %s: %s", what, path, strerror(-r));
		return r;
	}
	if (made) {
		/* mkdir applied the umask; the group, if any, before anyone can use it */
		if ((group != (gid_t)-1 && fchown(fd, (uid_t)-1, group) < 0) || fchmod(fd, mode) < 0) {
			r = -errno;
			log_err("cannot set up the %s %s: %s", what, path, strerror(errno));
			close(fd);
			return r;
		}
	}
	r = listener_dir_check(fd, path, what);
	if (r) {
		close(fd);
		return r;
	}
	*dirfdp = fd;
	return 0;
}

/*
 * Bind (@bind_it) or connect @sock to @name in the open directory @dirfd:
 * through /proc/self/fd/DIRFD/NAME, or without /proc from inside the
 * directory (fchdir there and back; sigild has no other thread while it
 * binds). Either way the directory that was checked, whatever its path
 * resolves to now. Return: 0 or -errno.
 */
static int listener_at(int sock, int dirfd, const char *name, bool bind_it)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	bool proc = access("/proc/self/fd", X_OK) == 0;
	int n, r, cwd = -1;

	if (proc)
		n = snprintf(sa.sun_path, sizeof(sa.sun_path), "/proc/self/fd/%d/%s", dirfd, name);
	else
		n = snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", name);
	if (n < 0 || (size_t)n >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	if (!proc) {
		cwd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (cwd < 0)
			return -errno;
		if (fchdir(dirfd) < 0) {
			r = -errno;
			close(cwd);
			return r;
		}
	}
	r = bind_it ? bind(sock, (struct sockaddr *)&sa, sizeof(sa)) : connect(sock, (struct sockaddr *)&sa, sizeof(sa));
	r = r < 0 ? -errno : 0;
	if (!proc) {
		if (fchdir(cwd) < 0 && r == 0)
			r = -errno;
		close(cwd);
	}
	return r;
}

/* does something accept connections on @name? 1 yes, 0 no (stale), -errno.
 * Sends nothing: connect and close. */
static int listener_live(int dirfd, const char *name)
{
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	r = listener_at(fd, dirfd, name, false);
	close(fd);
	/* EAGAIN: a full backlog is a live listener */
	return r == 0 || r == -EAGAIN || r == -EINPROGRESS ? 1 : r == -ECONNREFUSED ? 0 : r;
}

int listener_bind(int *fdp, const char *path, gid_t group)
{
	char dir[SUN_PATH_MAX];
	const char *name;
	struct stat st;
	char *slash;
	mode_t old;
	int dirfd, fd, r;

	*fdp = -1;
	if (strlen(path) >= SUN_PATH_MAX) {
		log_err("socket path %s is longer than %zu bytes", path, SUN_PATH_MAX - 1);
		return LISTENER_E_UNSAFE;
	}
	memcpy(dir, path, strlen(path) + 1);
	slash = strrchr(dir, '/');
	if (!slash) {
		name = path;
		snprintf(dir, sizeof(dir), ".");
	} else {
		name = path + (slash - dir) + 1;
		if (slash == dir)
			slash[1] = '\0';
		else
			*slash = '\0';
	}
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0) {
		log_err("socket path %s names no file", path);
		return LISTENER_E_UNSAFE;
	}
	r = listener_dir_open(&dirfd, dir, "socket directory", group);
	if (r)
		return r;
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISSOCK(st.st_mode)) {
			log_err("%s exists and is not a socket; refusing to replace it", path);
			r = LISTENER_E_UNSAFE;
			goto out;
		}
		r = listener_live(dirfd, name);
		if (r > 0) {
			log_err("another sigild is listening on %s, or another program (the socket belongs to uid %u): "
			        "sigild never replaces a live socket; stop it or choose another path", path,
			        (unsigned)st.st_uid);
			r = LISTENER_E_IN_USE;
			goto out;
		}
		if (r < 0) {
			log_err("cannot check the socket %s: %s", path, strerror(-r));
			r = LISTENER_E_UNSAFE;
			goto out;
		}
		if (st.st_uid != geteuid()) {
			log_err("the stale socket %s belongs to uid %u, not to sigild's uid %u: sigild replaces only "
			        "its own; remove it (rm %s)", path, (unsigned)st.st_uid, (unsigned)geteuid(), path);
			r = LISTENER_E_UNSAFE;
			goto out;
		}
		log_info("replacing stale socket %s", path);
		if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT) {
			r = -errno;
			log_err("cannot remove stale socket %s: %s", path, strerror(errno));
			goto out;
		}
	} else if (errno != ENOENT) {
		r = -errno;
		log_err("cannot check %s: %s", path, strerror(errno));
		goto out;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = error_origin(-errno);
		goto out;
	}
	/* the mode comes from the umask at bind: no moment with a wider one */
	old = umask(group != (gid_t)-1 ? 0117 : 0177);
	r = listener_at(fd, dirfd, name, true);
	umask(old);
	if (r < 0) {
		log_err("cannot bind %s: %s", path, strerror(-r));
		close(fd);
		goto out;
	}
	if (group != (gid_t)-1 && fchownat(dirfd, name, (uid_t)-1, group, AT_SYMLINK_NOFOLLOW) < 0) {
		r = -errno;
		log_err("cannot give the socket %s to group %u: %s", path, (unsigned)group, strerror(errno));
		goto fail;
	}
	if (listen(fd, SOMAXCONN) < 0) {
		r = error_origin(-errno);
		log_err("cannot listen on %s: %s", path, strerror(-r));
		goto fail;
	}
	*fdp = fd;
	r = 0;
	goto out;
fail:
	close(fd);
	unlinkat(dirfd, name, 0);
out:
	close(dirfd);
	return r;
}

static bool activated_read;
static int activated_main = -1, activated_agent = -1, activated_r;

static int listener_read_activated(void)
{
	char **names = NULL;
	int n = sd_listen_fds_with_names(1, &names), r = 0;

	if (n < 0) {
		log_err("cannot read the sockets systemd passed: %s", strerror(-n));
		return LISTENER_E_UNSAFE;
	}
	for (int i = 0; i < n && r == 0; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		const char *name = names && names[i] ? names[i] : "unknown";
		int *slot = NULL;

		/* "sigild.socket": systemd's name for a unit without FileDescriptorName= */
		if (strcmp(name, "sigild") == 0 || strcmp(name, "sigild.socket") == 0 ||
		    (n == 1 && strcmp(name, "unknown") == 0))
			slot = &activated_main;
		else if (strcmp(name, "ssh-agent") == 0)
			slot = &activated_agent;
		if (!slot) {
			log_err("systemd passed a socket named \"%s\": sigild takes \"sigild\" (the main socket) and "
			        "\"ssh-agent\" (FileDescriptorName=)", name);
			r = LISTENER_E_UNSAFE;
		} else if (*slot >= 0) {
			log_err("systemd passed two sockets named \"%s\"", name);
			r = LISTENER_E_UNSAFE;
		} else if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
			log_err("the socket \"%s\" systemd passed is not a listening Unix stream socket", name);
			r = LISTENER_E_UNSAFE;
		} else {
			*slot = fd;
		}
	}
	if (names) {
		for (int i = 0; i < n; i++)
			free(names[i]);
		free(names);
	}
	return r;
}

int listener_activated(int *mainp, int *agentp)
{
	if (!activated_read) {
		activated_read = true;
		activated_r = listener_read_activated();
	}
	*mainp = activated_r ? -1 : activated_main;
	*agentp = activated_r ? -1 : activated_agent;
	return activated_r;
}
