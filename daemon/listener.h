/* SPDX-License-Identifier: MIT */
/*
 * listener.h - sigild's listening sockets: checked directories, sockets
 * bound relative to them, live and stale sockets, socket activation by name
 *
 * A directory sigild uses is created 0700 (0750 with a group), opened
 * O_DIRECTORY|O_NOFOLLOW and checked with fstat: owned by sigild's uid or
 * root, not writable by group or others, not a symlink. A socket is bound
 * relative to that open directory (no re-resolution of the path between the
 * check and the bind), with its mode set by the umask at bind time. A live
 * socket at the path is never removed; a stale one only when it is ours.
 * The directories above a socket directory must be root's or ours, and
 * writable by others only with the sticky bit, so that no one else can
 * rename it away.
 * Every refusal is logged with the path, what is wrong and the fix.
 */
#ifndef SIGIL_DAEMON_LISTENER_H
#define SIGIL_DAEMON_LISTENER_H

#include <stdbool.h>
#include <sys/types.h>

enum {
	_LISTENER_E_SUCCESS,
	LISTENER_E_UNSAFE, /* a directory or path another user controls, or not a socket; logged */
	LISTENER_E_IN_USE, /* something accepts connections on the path; logged */
};

/**
 * listener_dir_open() - open (and create if missing) a directory sigild trusts
 * @dirfdp: the open directory (O_DIRECTORY|O_CLOEXEC) on success
 * @path: the directory; only its last component is created
 * @what: what it is for the messages ("socket directory")
 * @group: (gid_t)-1, or the group a new directory gets (mode 0750, else 0700)
 *
 * Return: 0, LISTENER_E_UNSAFE, or negative errno (logged).
 */
int listener_dir_open(int *dirfdp, const char *path, const char *what, gid_t group);

/**
 * listener_bind() - bind and listen on the Unix socket @path
 * @fdp: the listening socket (non-blocking, close-on-exec) on success
 * @path: the socket; its directory is made or checked (listener_dir_open)
 * @group: (gid_t)-1: socket mode 0600; else mode 0660 and this group
 *
 * Return: 0, LISTENER_E_UNSAFE, LISTENER_E_IN_USE, or negative errno (logged).
 */
int listener_bind(int *fdp, const char *path, gid_t group);

/**
 * listener_activated() - the sockets systemd passed, by their names
 * (FileDescriptorName=): "sigild" or a single unnamed one is the main
 * socket, "ssh-agent" the agent socket. Reads the environment once; later
 * calls return the same fds.
 * @mainp: the main socket, or -1
 * @agentp: the agent socket, or -1
 *
 * Return: 0, or LISTENER_E_UNSAFE (an unknown name, or not a listening Unix
 * stream socket; logged).
 */
int listener_activated(int *mainp, int *agentp);

#endif /* SIGIL_DAEMON_LISTENER_H */
