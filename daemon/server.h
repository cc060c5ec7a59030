/* SPDX-License-Identifier: MIT */
/*
 * server.h - sigild's event loop objects: Server (listener, limits,
 * signals, systemd), Conn (one client connection), Request (one request
 * from decode to answer)
 *
 * Everything here runs on the libuv loop thread, except the work function
 * of a Request that runs on the libuv thread pool (verify_batch, generate,
 * import: only its Request and the Key it holds a reference to; unlock and
 * rekey: the keystore, which the loop thread leaves alone meanwhile,
 * handler.c). sign, dh and verify run on the loop thread (handler.c).
 *
 * Answers are appended to their connection's buffer and written once per
 * loop iteration (server_on_flush: a prepare handle before the loop polls,
 * a check handle after), after the audit lines of that iteration: one
 * write(2) per connection carries every answer of the iteration.
 */
#ifndef SIGIL_DAEMON_SERVER_H
#define SIGIL_DAEMON_SERVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <uv.h>

#include "config.h"
#include "keystore.h"
#include "proto.h"

typedef struct Server Server;
typedef struct Conn Conn;
typedef struct Request Request;
struct Agent;

/* request bytes on the worker pool: a connection takes no new frame while
 * its own exceed max_request_size, nor while the server's exceed
 * SERVER_INFLIGHT_BYTES_FACTOR * max_request_size */
#define SERVER_INFLIGHT_BYTES_FACTOR 4

/* stop reading a connection once this many response bytes wait to be
 * written. Answers are appended to one buffer per connection and written
 * with one uv_write at a time, so these bytes are the memory used. */
/* frames one connection may run per loop turn before the others get theirs
 * (the rest wait in its reader, and it stops reading meanwhile) */
#define CONN_FRAMES_PER_TURN 64
/* frames all connections together run in one phase of the loop (conn.c) */
#define SERVER_FRAMES_PER_PHASE 256
/* answers that may wait for the end of the iteration; with more, they are
 * written after the current connection's turn (conn.c) */
#define SERVER_FLUSH_EARLY 4

#define CONN_WRITE_HIGH (1u << 20)
#define CONN_WRITE_LOW (256u << 10)

struct Conn {
	uv_pipe_t pipe;
	uv_timer_t idle;       /* a started frame must complete in idle_timeout_s */
	Server *server;
	Conn *prev, *next;     /* server->conns */
	ProtoReader *reader;
	unsigned n_refs;       /* the open handles + each in-flight Request */
	unsigned n_handles;    /* pipe, idle timer: closed ones count down */
	uint64_t inflight;     /* requests on the thread pool */
	size_t inflight_bytes; /* their frame sizes */
	unsigned turn_requests;/* answered on the loop thread, not yet written (limits) */
	size_t turn_bytes;     /* their frame sizes (back-pressure like inflight_bytes) */
	size_t write_bytes;    /* answers not yet written: out.len + the write in progress */
	ProtoBuf out;          /* encoded answers waiting for the write in progress */
	struct Write *writing; /* the one uv_write in progress, or NULL */
	bool reading;
	bool closing;
	bool dirty;            /* on server->dirty: answers to write this iteration */
	bool resume;           /* waits for a turn on server->resume_head (holds a ref) */
	Conn *resume_next;
	Conn *dirty_next;
	bool close_after_write;/* a final error was queued */
	uid_t uid;
	pid_t pid;
	gid_t gid;             /* SO_PEERCRED */
	char exe[PROTO_POLICY_EXE_MAX]; /* /proc/PID/exe at connect time, "?" if unknown (policy, audit) */
};

struct Request {
	uv_work_t work;
	Conn *conn;
	uint8_t *frame;        /* owned copy of the request bytes (wiped) */
	size_t frame_len;
	ProtoRequest req;
	ProtoResponse resp;
	Key *key;              /* sign, dh: the key used; generate/import: the new key */
	bool *valid;           /* verify_batch */
	size_t cost;           /* memory held while in flight (counted in inflight_bytes) */
	int r;                 /* result of the work function */
	char why[PROTO_MESSAGE_MAX - 64]; /* rekey: what was wrong with the request */
	Request *parked_next;  /* server->parked */
	void *age;             /* key.import_wrapped: what the file held (age-ops.c) */
};

struct Server {
	uv_loop_t *loop;
	uv_pipe_t listener;
	uv_signal_t sig_term, sig_int, sig_hup;
	uv_timer_t tick;       /* status + watchdog */
	uv_timer_t shutdown_timer;
	uv_prepare_t flush_prepare; /* server_on_flush before the loop polls */
	uv_check_t flush_check;     /* and after */
	uv_idle_t resume;      /* connections that used up their turn (conn.c) */
	Conn *dirty;           /* connections with answers to write (each holds a ref) */
	Conn *resume_head, *resume_tail; /* waiting for a turn, oldest first (each holds a ref) */
	unsigned budget;       /* frames left in this phase of the loop (conn.c) */
	Config config;
	const char *config_path; /* NULL: defaults only */
	Keystore keystore;
	Conn *conns;
	uint64_t n_conns;
	uint64_t inflight;
	size_t inflight_bytes;
	uint64_t turn_requests;/* the connections' turn_requests */
	bool ks_busy;          /* unlock or rekey runs on the pool (handler.c) */
	unsigned key_jobs;     /* key.generate/key.import on the pool */
	Request *parked;       /* requests waiting for the keystore, oldest first */
	Request *parked_tail;
	bool total_blocked;    /* a connection waits for inflight_bytes to drop */
	uint64_t requests;
	uint64_t start_ms;
	unsigned workers;
	uint64_t watchdog_usec;
	bool locked;
	uint64_t auto_lock_ms;  /* lock after this long without a private-key operation; 0: never */
	uint64_t last_key_use_ms; /* uv_now of the last sign/dh allowed, or of the unlock */
	bool shutting_down;
	bool closing_all;      /* server_close_all() is running */
	bool listening;
	bool socket_activated;
	char *socket_path;     /* unlinked at exit when we created it */
	struct Agent *agent;   /* the ssh-agent socket (agent.c), or NULL */
	char status_line[256];
};

/* server.c */
int server_init(Server *s, uv_loop_t *loop, const Config *config, const char *config_path,
                unsigned workers);
/* listen on the fd given by systemd or bind socket_path. Return: 0, SERVER_E_* or -errno */
int server_listen(Server *s, const char *socket_path);
void server_deinit(Server *s);
/* run the loop until sigild stops, busy-polling briefly after answers (config busy_poll_us) */
void server_run(Server *s);
void server_conn_gone(Server *s, Conn *c);
void server_maybe_finish(Server *s);
void server_notify_status(Server *s);
/* the peer rule of both sockets: root, our uid, allow_uids, allow_gids */
bool server_peer_allowed(const Server *s, int fd, const struct ucred *cred);

enum {
	_SERVER_E_SUCCESS,
	SERVER_E_IN_USE,   /* a live sigild answers on the socket path */
	SERVER_E_BAD_PATH, /* the path exists and is not a socket, or its directory is unusable */
};

/* conn.c */
int conn_new(Conn **connp, Server *s);
void conn_start(Conn *c);
void conn_close(Conn *c);
void conn_unref(Conn *c);
/* queue a response; frees nothing of resp. Return: 0 or -ENOMEM (then the connection is closed) */
int conn_send_response(Conn *c, const ProtoResponse *resp);
int conn_send_error(Conn *c, bool has_msgid, uint64_t msgid, ProtoError code, const char *message);
/* resume reading and processing after writes drained or limits changed */
void conn_process(Conn *c);
bool conn_idle(const Conn *c);
/* write the audit lines, then every dirty connection's answers */
void conn_flush_all(Server *s);
/* conn_flush_all() once SERVER_FLUSH_EARLY answers wait (between turns) */
void conn_flush_early(Server *s);
/* at exit: flush, then drop the references the dirty and waiting lists hold */
void conn_release_all(Server *s);


/* handler.c */
void handler_dispatch(Conn *c, const uint8_t *frame, size_t len);

#endif /* SIGIL_DAEMON_SERVER_H */
