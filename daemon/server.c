/* SPDX-License-Identifier: MIT */
/*
 * server.c - the listening sockets and the one accept path, signals,
 * systemd notification and orderly shutdown
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "agent.h"
#include "audit.h"
#include "listener.h"
#include "log.h"
#include "rpc.h"
#include "secmem.h"
#include "server.h"

static void server_on_signal(uv_signal_t *h, int signum);
static void server_on_tick(uv_timer_t *t);
static void server_maybe_finish(Server *s);

/* the jobs of this iteration in one hand-over (a lone short one runs
 * here: pool_kick), then the audit lines and the answers; writing may
 * resume a connection whose frames submit more, which go too (nothing
 * else would wake the loop for them) */
static void server_kick_flush(Server *s)
{
	do {
		pool_kick(s->pool);
		stream_hub_flush(&s->hub);
	} while (pool_unkicked(s->pool));
}

/* once per loop iteration, before and after the poll phase */
static void server_on_flush_prepare(uv_prepare_t *h)
{
	Server *s = h->data;

	server_kick_flush(s);
	stream_hub_new_phase(&s->hub); /* for the poll phase */
	if (s->shutting_down)
		server_maybe_finish(s);
}

static void server_on_flush_check(uv_check_t *h)
{
	Server *s = h->data;

	server_kick_flush(s);
	if (s->shutting_down)
		server_maybe_finish(s);
}

static void server_before_flush(void *ctx)
{
	(void)ctx;
	audit_flush();
}

/* The loop. After an iteration that answered requests, sigild keeps
 * polling without blocking (uv_run NOWAIT: epoll_wait with a zero timeout)
 * for busy_poll_us, renewed by each answer, before it blocks again. A
 * thread that blocks between a client's requests must be woken for the
 * next one, and on a VM whose idle vCPU halts at once
 * (haltpoll.guest_halt_poll_ns=0 here) that wake-up alone costs 20-40 us,
 * more than a signature: polling briefly keeps the answer to a client that
 * sends again at once (ssh, git, a signing pipeline) from paying it. It
 * only runs while requests come, at most busy_poll_us after the last one,
 * and never with one CPU, where it would hold back the client it waits
 * for. docs/throughput.md has the figures. */
void server_run(Server *s)
{
	bool spin_ok = sysconf(_SC_NPROCESSORS_ONLN) > 1;
	uint64_t spin_until = 0; /* uv_hrtime: poll without blocking until then */

	for (;;) {
		uint64_t before = s->hub.requests;
		uint64_t spin_ns = spin_ok ? (uint64_t)s->config.busy_poll_us * 1000 : 0;
		bool spin = spin_ns && !s->shutting_down && uv_hrtime() < spin_until;

		if (!uv_run(s->loop, spin ? UV_RUN_NOWAIT : UV_RUN_ONCE))
			return;
		if (s->hub.requests != before && spin_ns)
			spin_until = uv_hrtime() + spin_ns;
	}
}

/* ---- connections of each uid ------------------------------------------- */

static ServerUid *uid_slot(Server *s, uid_t uid, bool add)
{
	for (size_t i = 0; i < s->n_uids; i++)
		if (s->uids[i].uid == uid)
			return &s->uids[i];
	if (!add)
		return NULL;
	if (s->n_uids == s->cap_uids) {
		size_t cap = s->cap_uids ? 2 * s->cap_uids : 16;
		ServerUid *u = realloc(s->uids, cap * sizeof(*u));

		if (!u)
			return NULL;
		s->uids = u;
		s->cap_uids = cap;
	}
	s->uids[s->n_uids] = (ServerUid){ .uid = uid };
	return &s->uids[s->n_uids++];
}

static unsigned per_uid_cap(const Config *c)
{
	unsigned n = c->max_connections_per_uid ? c->max_connections_per_uid : c->max_connections / 4;

	return n ? n : 1;
}

/* connections beyond this many are for admins only (their reserve) */
static unsigned user_cap(const Config *c)
{
	unsigned reserve = c->max_connections / 10 ? c->max_connections / 10 : 1;

	return c->max_connections > reserve ? c->max_connections - reserve : 1;
}

/*
 * May this (admitted) peer have one more connection? Everyone within
 * max_connections; a user also within its uid's cap and outside the
 * admins' reserve, so that one uid's idle connections never lock out
 * another uid or an admin. Counts it when yes.
 */
static bool uid_admit(Server *s, const Stream *st, char *why, size_t why_len)
{
	const Config *c = &s->config;
	uint64_t total = s->hub.n_streams; /* this one included */
	ServerUid *u;

	if (total > c->max_connections) {
		snprintf(why, why_len, "too many connections (max_connections %u)", c->max_connections);
		return false;
	}
	u = uid_slot(s, st->peer.uid, true);
	if (!u) {
		snprintf(why, why_len, "out of memory");
		return false;
	}
	if (!st->peer.admin) {
		if (u->n >= per_uid_cap(c)) {
			snprintf(why, why_len, "too many connections of uid %u (max_connections_per_uid %u)",
			         (unsigned)st->peer.uid, per_uid_cap(c));
			return false;
		}
		if (total > user_cap(c)) {
			snprintf(why, why_len, "too many connections (the rest are kept for admins)");
			return false;
		}
	}
	u->n++;
	return true;
}

static void server_stream_closed(void *ctx, Stream *st)
{
	Server *s = ctx;
	ServerUid *u;

	if (!st->counted)
		return;
	st->counted = false;
	u = uid_slot(s, st->peer.uid, false);
	if (u && u->n > 0 && --u->n == 0)
		*u = s->uids[--s->n_uids];
	server_maybe_finish(s);
}

static void server_accept(Server *s, uv_stream_t *listener, int fd, bool agent)
{
	const char *name = agent ? "ssh-agent: " : "";
	StreamFramer fr;
	Stream *st;
	char why[128];
	int r;

	r = agent ? agent_framer(&fr) : rpc_framer(&fr, s->config.max_request_size);
	if (r < 0) {
		log_warn("%scannot accept a connection: %s", name, strerror(-r));
		return;
	}
	r = stream_new(&st, &s->hub, listener, fd, agent ? &agent_class : &rpc_class, &fr, &s->config);
	if (r < 0)
		return;
	if (!st->peer.admitted) {
		log_warn("%srefused connection from uid %u gid %u pid %d (%s): not allowed", name, (unsigned)st->peer.uid,
		         (unsigned)st->peer.gid, (int)st->peer.pid, st->peer.exe);
		if (agent)
			stream_close(st);
		else
			rpc_refuse(st, PROTO_E_DENIED, "this user may not use sigild (allow_uids/allow_gids)");
		return;
	}
	if (s->shutting_down || !uid_admit(s, st, why, sizeof(why))) {
		if (s->shutting_down)
			snprintf(why, sizeof(why), "sigild is stopping");
		log_warn("%srefused connection from uid %u pid %d: %s", name, (unsigned)st->peer.uid, (int)st->peer.pid,
		         why);
		if (agent)
			stream_close(st);
		else
			rpc_refuse(st, PROTO_E_BUSY, why);
		return;
	}
	st->counted = true;
	if (agent ? agent_stream_init(st, &s->ops, &s->upstream) < 0 : (st->data = &s->ops, 0)) {
		stream_close(st);
		return;
	}
	log_debug("%sconnection from uid %u pid %d", name, (unsigned)st->peer.uid, (int)st->peer.pid);
	stream_start(st);
}

static void server_on_connection(uv_stream_t *listener, int status)
{
	Server *s = listener->data;

	if (status < 0) {
		log_warn("accept failed: %s", uv_strerror(status));
		return;
	}
	server_accept(s, listener, -1, listener == (uv_stream_t *)&s->agent_listener);
}

void server_adopt(Server *s, int fd, bool agent)
{
	server_accept(s, NULL, fd, agent);
}

/* the server's share of a status answer: connections, bytes */
static void server_status(void *ctx, const Op *op, ProtoStatus *st, uint64_t *buffered)
{
	Server *s = ctx;

	if (op->peer->admin) {
		st->connections = s->hub.n_streams;
		for (const Stream *c = s->hub.streams; c; c = c->next)
			*buffered += c->write_bytes + c->framer.buffered(c->framer.f);
		*buffered += s->hub.held_bytes;
	} else {
		const ServerUid *u = uid_slot(s, op->peer->uid, false);

		st->connections = u ? u->n : 0;
	}
}

/* a kept operation ended: streams waiting for held bytes, shutdown */
static void server_settled(void *ctx)
{
	Server *s = ctx;

	stream_hub_settled(&s->hub);
	server_maybe_finish(s);
}

int server_init(Server *s, uv_loop_t *loop, const Config *config, const char *config_path, unsigned workers)
{
	int r;

	s->loop = loop;
	s->config = *config;
	s->config_path = config_path;
	s->workers = workers;
	/* workers poll briefly before they sleep only where that can pay
	 * (pool.c: never on one CPU); 0 until a quiet machine shows it helps
	 * (docs/throughput.md, "Worker pool hand-off") */
	r = pool_new(&s->pool, loop, workers, 0);
	if (r < 0)
		return r;
	stream_hub_init(&s->hub, loop, s->config.max_request_size, s->config.idle_timeout_s);
	s->hub.before_flush = server_before_flush;
	s->hub.closed = server_stream_closed;
	s->hub.ctx = s;
	ops_init(&s->ops, loop, &s->keystore, &s->config, s->pool, &s->hub.unwritten);
	/* the upstream agent: the one named at start (a SIGHUP keeps it) */
	s->upstream.loop = loop;
	snprintf(s->upstream.path, sizeof(s->upstream.path), "%s", s->config.ssh_agent_upstream);
	s->ops.locked = s->keystore.locked; /* passphrase: starts locked */
	s->ops.status = server_status;
	s->ops.status_ctx = s;
	s->ops.settled = server_settled;
	s->ops.settled_ctx = s;
	uv_signal_init(loop, &s->sig_term);
	uv_signal_init(loop, &s->sig_int);
	uv_signal_init(loop, &s->sig_hup);
	uv_timer_init(loop, &s->tick);
	uv_timer_init(loop, &s->shutdown_timer);
	uv_timer_init(loop, &s->pool_close);
	uv_prepare_init(loop, &s->flush_prepare);
	uv_check_init(loop, &s->flush_check);
	s->flush_prepare.data = s->flush_check.data = s;
	uv_prepare_start(&s->flush_prepare, server_on_flush_prepare);
	audit_set_loop(loop);
	uv_check_start(&s->flush_check, server_on_flush_check);
	/* neither keeps the loop running on its own */
	uv_unref((uv_handle_t *)&s->flush_prepare);
	uv_unref((uv_handle_t *)&s->flush_check);
	s->sig_term.data = s->sig_int.data = s->sig_hup.data = s;
	s->tick.data = s->shutdown_timer.data = s->pool_close.data = s;
	uv_signal_start(&s->sig_term, server_on_signal, SIGTERM);
	uv_signal_start(&s->sig_int, server_on_signal, SIGINT);
	uv_signal_start(&s->sig_hup, server_on_signal, SIGHUP);
	if (sd_watchdog_enabled(0, &s->watchdog_usec) <= 0)
		s->watchdog_usec = 0;
	{
		uint64_t period = 1000;

		if (s->watchdog_usec && s->watchdog_usec / 2000 < period)
			period = s->watchdog_usec / 2000 ? s->watchdog_usec / 2000 : 1;
		uv_timer_start(&s->tick, server_on_tick, period, period);
	}
	return 0;
}

/* bind @path in its checked directory (listener.c); @pathp: the path to
 * unlink at exit */
static int bind_socket(Server *s, const char *path, int *fdp, char **pathp)
{
	int r = listener_bind(fdp, path, s->config.has_socket_group ? s->config.socket_group : (gid_t)-1);

	if (r)
		return r == LISTENER_E_IN_USE ? SERVER_E_IN_USE : r > 0 ? SERVER_E_BAD_PATH : r;
	*pathp = strdup(path);
	if (!*pathp) {
		close(*fdp);
		unlink(path);
		return -ENOMEM;
	}
	return 0;
}

static int listen_fd(Server *s, uv_pipe_t *p, int fd, bool *listeningp)
{
	int r = uv_pipe_init(s->loop, p, 0);

	if (r < 0)
		return error_origin(r);
	p->data = s;
	r = uv_pipe_open(p, fd);
	if (r == 0)
		r = uv_listen((uv_stream_t *)p, SOMAXCONN, server_on_connection);
	if (r < 0) {
		uv_close((uv_handle_t *)p, NULL);
		return error_origin(r);
	}
	*listeningp = true;
	return 0;
}

int server_listen(Server *s, const char *socket_path)
{
	int fd, agent_fd, r;

	/* the sockets systemd passed, by name (listener.c) */
	r = listener_activated(&fd, &agent_fd);
	if (r)
		return SERVER_E_BAD_PATH;
	if (fd >= 0) {
		s->socket_activated = true;
		log_info("using the socket passed by systemd");
	} else {
		r = bind_socket(s, socket_path, &fd, &s->socket_path);
		if (r)
			return r;
	}
	r = listen_fd(s, &s->listener, fd, &s->listening);
	if (r < 0)
		return r;
	/* from here on the log (and the audit lines in it) is written once per
	 * loop iteration by audit_flush(), not one write(2) a line; nothing is
	 * pending when this switches (stderr was unbuffered) */
	{
		static char log_buf[64 * 1024];

		fflush(stderr);
		setvbuf(stderr, log_buf, _IOFBF, sizeof(log_buf));
	}
	return 0;
}

/* an upstream agent that is this very socket would relay to itself, each
 * connection opening another: none then */
static void check_upstream(Server *s, const char *agent_path, int agent_fd)
{
	if (s->upstream.path[0] && agent_upstream_is_self(s->upstream.path, agent_path, agent_fd)) {
		log_err("ssh-agent: ssh_agent_upstream %s is this agent socket: no upstream agent", s->upstream.path);
		s->upstream.path[0] = '\0';
	} else if (s->upstream.path[0]) {
		log_info("ssh-agent: the identities sigil does not hold come from the upstream agent %s",
		         s->upstream.path);
	}
}

int server_listen_agent(Server *s, const char *path)
{
	int fd, r;

	r = bind_socket(s, path, &fd, &s->agent_path);
	if (r)
		return r;
	check_upstream(s, path, fd);
	return listen_fd(s, &s->agent_listener, fd, &s->agent_listening);
}

int server_listen_agent_fd(Server *s, int fd)
{
	check_upstream(s, NULL, fd);
	return listen_fd(s, &s->agent_listener, fd, &s->agent_listening);
}

void server_notify_status(Server *s)
{
	char line[256];

	if (ops_keystore_held(&s->ops)) /* unlock or rekey owns the keystore: the next tick */
		return;
	snprintf(line, sizeof(line), "STATUS=%zu keys, %llu connections, %llu in flight, %llu requests%s",
	         keystore_count(&s->keystore), (unsigned long long)s->hub.n_streams,
	         (unsigned long long)s->ops.inflight, (unsigned long long)s->hub.requests,
	         s->ops.locked ? ", locked" : "");
	if (strcmp(line, s->status_line) != 0) {
		memcpy(s->status_line, line, sizeof(line));
		sd_notify(0, line);
	}
}

static void server_on_tick(uv_timer_t *t)
{
	Server *s = t->data;

	if (s->watchdog_usec)
		sd_notify(0, "WATCHDOG=1");
	ops_tick(&s->ops);
	server_notify_status(s);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

static void close_listeners(Server *s)
{
	if (s->listening) {
		close_handle((uv_handle_t *)&s->listener);
		s->listening = false;
	}
	if (s->agent_listening) {
		close_handle((uv_handle_t *)&s->agent_listener);
		s->agent_listening = false;
	}
}

static void server_on_pool_close(uv_timer_t *t)
{
	Server *s = t->data;

	pool_free(s->pool); /* every job is done: the workers stop */
	s->pool = NULL;
	uv_close((uv_handle_t *)t, NULL);
}

/* close every handle: the loop then ends */
static void server_close_all(Server *s)
{
	if (s->closing_all)
		return;
	s->closing_all = true;
	stream_hub_close(&s->hub);
	audit_flush_sync();
	ops_close(&s->ops);
	close_listeners(s);
	close_handle((uv_handle_t *)&s->sig_term);
	close_handle((uv_handle_t *)&s->sig_int);
	close_handle((uv_handle_t *)&s->sig_hup);
	close_handle((uv_handle_t *)&s->tick);
	close_handle((uv_handle_t *)&s->shutdown_timer);
	close_handle((uv_handle_t *)&s->flush_prepare);
	close_handle((uv_handle_t *)&s->flush_check);
	/* (maybe from a job's done callback: the pool goes in a moment) */
	uv_timer_start(&s->pool_close, server_on_pool_close, 0, 0);
}

static void server_maybe_finish(Server *s)
{
	if (!s->shutting_down || s->closing_all || s->ops.inflight > 0 || !stream_hub_idle(&s->hub))
		return;
	server_close_all(s);
}

static void server_on_shutdown_timeout(uv_timer_t *t)
{
	Server *s = t->data;

	log_warn("%llu requests still running or answers unsent after shutdown_timeout_s=%u; exiting anyway",
	         (unsigned long long)s->ops.inflight, s->config.shutdown_timeout_s);
	/* workers may still hold keys: wipe the secrets in place, then leave
	 * without unmapping memory they use */
	for (size_t i = 0; i < s->keystore.n_keys; i++)
		if (s->keystore.keys[i]->secret)
			sigil_wipe(s->keystore.keys[i]->secret, sizeof(KeySecret));
	if (s->socket_path && !s->socket_activated)
		unlink(s->socket_path);
	if (s->agent_path)
		unlink(s->agent_path);
	audit_set_loop(NULL);
	audit_flush_sync();
	sd_notify(0, "STATUS=stopped (timeout)");
	_exit(0);
}

static void server_shutdown(Server *s, const char *why)
{
	if (s->shutting_down)
		return;
	s->shutting_down = true;
	log_info("%s: stopping; %llu requests in flight", why, (unsigned long long)s->ops.inflight);
	sd_notify(0, "STOPPING=1");
	close_listeners(s);
	ops_shutdown(&s->ops);
	/* stop reading; close streams that have nothing left to send */
	stream_hub_shutdown(&s->hub);
	uv_timer_start(&s->shutdown_timer, server_on_shutdown_timeout, (uint64_t)s->config.shutdown_timeout_s * 1000, 0);
	server_maybe_finish(s);
}

static void server_reload(Server *s)
{
	Config c;
	char err[512];
	int r;

	if (!s->config_path) {
		log_info("SIGHUP: no configuration file to reload");
		return;
	}
	config_init(&c);
	r = config_load(&c, s->config_path, err, sizeof(err));
	if (r) {
		log_err("SIGHUP: keeping the old configuration: %s", err);
		return;
	}
	if (c.workers != s->config.workers)
		log_warn("SIGHUP: 'workers' changes take effect at the next start");
	if (c.has_socket_group != s->config.has_socket_group || c.socket_group != s->config.socket_group)
		log_warn("SIGHUP: 'socket_group' changes take effect at the next start");
	c.workers = s->config.workers;
	c.has_socket_group = s->config.has_socket_group;
	c.socket_group = s->config.socket_group;
	s->config = c;
	stream_hub_set_max_frame(&s->hub, c.max_request_size);
	s->hub.idle_timeout_s = c.idle_timeout_s;
	for (Stream *st = s->hub.streams; st; st = st->next)
		if (st->cls == &rpc_class)
			rpc_set_max_frame(st, c.max_request_size);
	log_info("configuration reloaded from %s", s->config_path);
}

static void server_on_signal(uv_signal_t *h, int signum)
{
	Server *s = h->data;

	if (signum == SIGHUP)
		server_reload(s);
	else
		server_shutdown(s, signum == SIGTERM ? "SIGTERM" : "SIGINT");
}

void server_deinit(Server *s)
{
	audit_set_loop(NULL);
	audit_flush_sync();
	keystore_close(&s->keystore);
	if (s->socket_path && !s->socket_activated)
		unlink(s->socket_path);
	if (s->agent_path)
		unlink(s->agent_path);
	free(s->socket_path);
	free(s->agent_path);
	free(s->uids);
	s->socket_path = s->agent_path = NULL;
	s->uids = NULL;
}
