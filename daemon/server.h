/* SPDX-License-Identifier: MIT */
/*
 * server.h - sigild's loop: the two listening sockets and the one accept
 * path (admission, per-uid connection caps), signals, timers, systemd
 * notification and orderly shutdown. It knows no protocol: a connection
 * becomes a Stream of the front-end of its socket (rpc.c or agent.c),
 * whose operations go to the core (ops.c).
 *
 * Once per loop iteration (a prepare handle before the loop polls, a check
 * handle after) the audit lines are written, then every stream's answers
 * (stream_hub_flush): an answer never leaves before its audit line.
 */
#ifndef SIGIL_DAEMON_SERVER_H
#define SIGIL_DAEMON_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "agent-upstream.h"
#include "config.h"
#include "keystore.h"
#include "ops.h"
#include "pool.h"
#include "stream.h"

/* connections of one uid (both sockets) */
typedef struct ServerUid {
	uid_t uid;
	unsigned n;
} ServerUid;

typedef struct Server {
	uv_loop_t *loop;
	uv_pipe_t listener;        /* the main socket */
	uv_pipe_t agent_listener;  /* the ssh-agent socket */
	bool listening, agent_listening;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick;           /* status, watchdog, auto-lock */
	uv_timer_t shutdown_timer;
	uv_timer_t pool_close;     /* frees the pool after the last job (not from its callbacks) */
	uv_prepare_t flush_prepare;
	uv_check_t flush_check;
	Config config;
	const char *config_path;   /* NULL: defaults only */
	Keystore keystore;
	Pool *pool;                /* the crypto workers */
	Ops ops;
	StreamHub hub;
	AgentUpstreamConfig upstream; /* ssh_agent_upstream at start (every agent connection's) */
	ServerUid *uids;
	size_t n_uids, cap_uids;
	unsigned workers;
	uint64_t watchdog_usec;
	bool shutting_down;
	bool closing_all;
	bool socket_activated;
	char *socket_path;         /* unlinked at exit when we created it */
	char *agent_path;          /* likewise */
	char status_line[256];
} Server;

enum {
	_SERVER_E_SUCCESS,
	SERVER_E_IN_USE,   /* something answers on the socket path */
	SERVER_E_BAD_PATH, /* the path exists and is not a socket, or its directory is unusable */
};

/* the keystore must be open (keystore_open_sealed on s->keystore); starts
 * @workers crypto worker threads. Return: 0 or negative errno */
int server_init(Server *s, uv_loop_t *loop, const Config *config, const char *config_path, unsigned workers);
/* listen on the fd given by systemd or bind socket_path. Return: 0, SERVER_E_* or -errno */
int server_listen(Server *s, const char *socket_path);
/* the ssh-agent socket at @path. Return: 0, SERVER_E_* or -errno */
int server_listen_agent(Server *s, const char *path);
/* the ssh-agent socket systemd passed (a listening socket). Return: 0 or -errno */
int server_listen_agent_fd(Server *s, int fd);
void server_deinit(Server *s);
/* run the loop until sigild stops, busy-polling briefly after answers (config busy_poll_us) */
void server_run(Server *s);
void server_notify_status(Server *s);
/* serve the connected socket @fd as if it had been accepted on the main
 * (or, @agent, the ssh-agent) socket: the same admission (the fuzz targets) */
void server_adopt(Server *s, int fd, bool agent);

#endif /* SIGIL_DAEMON_SERVER_H */
