/* SPDX-License-Identifier: MIT */
/*
 * peer.c - credentials of a connected peer and its standing
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "peer.h"

char *peer_exe(pid_t pid)
{
	char link[64];
	char *buf = malloc(PATH_MAX + 1);
	ssize_t n;

	if (!buf)
		return NULL;
	snprintf(link, sizeof(link), "/proc/%d/exe", (int)pid);
	/* PATH_MAX bytes is the kernel's limit for the link's target; a
	 * result that fills the buffer is treated as unknown, never cut */
	n = pid > 0 ? readlink(link, buf, PATH_MAX + 1) : -1;
	if (n < 0 || n > PATH_MAX)
		n = snprintf(buf, PATH_MAX + 1, "?");
	buf[n] = '\0';
	return buf;
}

static bool id_in(const unsigned *ids, size_t n, unsigned id)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* the peer's primary group or one of its groups (as of connect) in ids */
static bool groups_in(int fd, gid_t gid, const gid_t *ids, size_t n)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (n == 0)
		return false;
	if (id_in((const unsigned *)ids, n, gid))
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		log_debug("SO_PEERGROUPS failed: %s", strerror(errno));
		return false;
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (id_in((const unsigned *)ids, n, groups[i]))
			return true;
	return false;
}

int peer_init(Peer *p, int fd, const Config *config)
{
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cred);
	bool self;

	*p = (Peer)PEER_NULL(*p);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	p->uid = cred.uid;
	p->gid = cred.gid;
	p->pid = cred.pid;
	p->exe = peer_exe(cred.pid);
	if (!p->exe)
		return -ENOMEM;
	self = cred.uid == 0 || cred.uid == geteuid();
	p->admin = self || id_in((const unsigned *)config->admin_uids, config->n_admin_uids, cred.uid) ||
	           groups_in(fd, cred.gid, config->admin_gids, config->n_admin_gids);
	p->admitted = p->admin || id_in((const unsigned *)config->allow_uids, config->n_allow_uids, cred.uid) ||
	              groups_in(fd, cred.gid, config->allow_gids, config->n_allow_gids);
	return 0;
}

void peer_deinit(Peer *p)
{
	free(p->exe);
	p->exe = NULL;
}
