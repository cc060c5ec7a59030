/* SPDX-License-Identifier: MIT */
/*
 * peer.h - who is on the other end of a connection: SO_PEERCRED, the
 * executable, and the two questions of the permission model (is the peer
 * admitted at all; is it an admin)
 *
 * Both sockets make a Peer at accept (listener side) and hand it to the
 * operations core with every operation; nothing else reads credentials.
 */
#ifndef SIGIL_DAEMON_PEER_H
#define SIGIL_DAEMON_PEER_H

#include <stdbool.h>
#include <sys/types.h>

#include "config.h"

typedef struct Peer {
	uid_t uid;
	gid_t gid;
	pid_t pid;
	bool admitted;   /* root, our uid, allow_uids/allow_gids */
	bool admin;      /* root, our uid, admin_uids/admin_gids */
	char *exe;       /* /proc/PID/exe at accept, in full ("?" if unknown); heap */
} Peer;

#define PEER_NULL(_x) { .uid = (uid_t)-1, .gid = (gid_t)-1 }

/**
 * peer_init() - read the credentials of the connected socket @fd and decide
 * admitted/admin under @config (supplementary groups from SO_PEERGROUPS).
 * Return: 0 or negative errno (the credentials could not be read).
 */
int peer_init(Peer *p, int fd, const Config *config);
void peer_deinit(Peer *p);

/**
 * peer_exe() - /proc/@pid/exe now, in full, into a new string ("?" when it
 * cannot be read). Return: the string (free() it), or NULL when out of memory.
 */
char *peer_exe(pid_t pid);

#endif /* SIGIL_DAEMON_PEER_H */
