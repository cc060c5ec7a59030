/* SPDX-License-Identifier: MIT */
/*
 * server.c - the listening socket, peer checks, signals, systemd
 * notification and orderly shutdown
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
#include "secmem.h"
#include "server.h"

static void server_on_signal(uv_signal_t *h, int signum);
static void server_on_tick(uv_timer_t *t);

/* once per loop iteration, before and after the poll phase: the audit lines,
 * then the answers (conn_flush_all) */
static void server_on_flush_prepare(uv_prepare_t *h)
{
	Server *s = h->data;

	conn_flush_all(s);
	s->budget = SERVER_FRAMES_PER_PHASE; /* for the poll phase (conn.c) */
}

static void server_on_flush_check(uv_check_t *h)
{
	conn_flush_all(h->data);
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
		uint64_t before = s->requests;
		uint64_t spin_ns = spin_ok ? (uint64_t)s->config.busy_poll_us * 1000 : 0;
		bool spin = spin_ns && !s->shutting_down && uv_hrtime() < spin_until;

		if (!uv_run(s->loop, spin ? UV_RUN_NOWAIT : UV_RUN_ONCE))
			return;
		if (s->requests != before && spin_ns)
			spin_until = uv_hrtime() + spin_ns;
	}
}

int server_init(Server *s, uv_loop_t *loop, const Config *config, const char *config_path, unsigned workers)
{
	s->loop = loop;
	s->config = *config;
	s->config_path = config_path;
	s->workers = workers;
	s->start_ms = uv_now(loop);
	uv_signal_init(loop, &s->sig_term);
	uv_signal_init(loop, &s->sig_int);
	uv_signal_init(loop, &s->sig_hup);
	uv_timer_init(loop, &s->tick);
	uv_timer_init(loop, &s->shutdown_timer);
	uv_prepare_init(loop, &s->flush_prepare);
	uv_check_init(loop, &s->flush_check);
	uv_idle_init(loop, &s->resume);
	s->flush_prepare.data = s->flush_check.data = s->resume.data = s;
	s->budget = SERVER_FRAMES_PER_PHASE;
	uv_prepare_start(&s->flush_prepare, server_on_flush_prepare);
	audit_set_loop(loop);
	uv_check_start(&s->flush_check, server_on_flush_check);
	/* neither keeps the loop running on its own */
	uv_unref((uv_handle_t *)&s->flush_prepare);
	uv_unref((uv_handle_t *)&s->flush_check);
	s->sig_term.data = s->sig_int.data = s->sig_hup.data = s;
	s->tick.data = s->shutdown_timer.data = s;
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

static bool gid_allowed(const Server *s, gid_t gid)
{
	for (size_t i = 0; i < s->config.n_allow_gids; i++)
		if (s->config.allow_gids[i] == gid)
			return true;
	return false;
}

/*
 * Root, our own uid, allow_uids, and peers whose primary group or one of
 * whose supplementary groups (SO_PEERGROUPS, as of connect()) is in
 * allow_gids.
 */
bool server_peer_allowed(const Server *s, int fd, const struct ucred *cred)
{
	gid_t groups[256];
	socklen_t len = sizeof(groups);

	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	for (size_t i = 0; i < s->config.n_allow_uids; i++)
		if (s->config.allow_uids[i] == cred->uid)
			return true;
	if (s->config.n_allow_gids == 0)
		return false;
	if (gid_allowed(s, cred->gid))
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		log_debug("SO_PEERGROUPS failed: %s", strerror(errno));
		return false;
	}
	for (size_t i = 0; i < len / sizeof(gid_t); i++)
		if (gid_allowed(s, groups[i]))
			return true;
	return false;
}

static void server_on_connection(uv_stream_t *listener, int status)
{
	Server *s = listener->data;
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;
	Conn *c;
	int r;

	if (status < 0) {
		log_warn("accept failed: %s", uv_strerror(status));
		return;
	}
	r = conn_new(&c, s);
	if (r < 0) {
		log_warn("cannot accept a connection: %s", strerror(-r));
		return;
	}
	r = uv_accept(listener, (uv_stream_t *)&c->pipe);
	if (r < 0) {
		log_warn("accept failed: %s", uv_strerror(r));
		conn_close(c);
		return;
	}
	if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warn("cannot read the peer credentials of a connection; closing it");
		conn_close(c);
		return;
	}
	c->uid = cred.uid;
	c->pid = cred.pid;
	c->gid = cred.gid;
	{
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)cred.pid);
		n = readlink(link, c->exe, sizeof(c->exe) - 1);
		if (n < 0)
			n = snprintf(c->exe, sizeof(c->exe), "?");
		c->exe[n] = '\0';
	}
	if (!server_peer_allowed(s, fd, &cred)) {
		char link[64], exe[PATH_MAX];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)cred.pid);
		n = readlink(link, exe, sizeof(exe) - 1);
		if (n < 0)
			snprintf(exe, sizeof(exe), "?");
		else
			exe[n] = '\0';
		log_warn("refused connection from uid %u gid %u pid %d (%s): not allowed", (unsigned)cred.uid,
		         (unsigned)cred.gid, (int)cred.pid, exe);
		c->close_after_write = true;
		if (conn_send_error(c, false, 0, PROTO_E_DENIED, "this user may not use sigild (allow_uids/allow_gids)") >= 0 &&
		    conn_idle(c))
			conn_close(c);
		return;
	}
	if (s->n_conns > s->config.max_connections) {
		log_warn("refused connection from uid %u pid %d: max_connections (%u) reached", (unsigned)cred.uid,
		         (int)cred.pid, s->config.max_connections);
		c->close_after_write = true;
		if (conn_send_error(c, false, 0, PROTO_E_BUSY, "too many connections") >= 0 && conn_idle(c))
			conn_close(c);
		return;
	}
	log_debug("connection from uid %u pid %d", (unsigned)cred.uid, (int)cred.pid);
	conn_start(c);
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
		r = listener_bind(&fd, socket_path, s->config.has_socket_group ? s->config.socket_group : (gid_t)-1);
		if (r)
			return r == LISTENER_E_IN_USE ? SERVER_E_IN_USE : r > 0 ? SERVER_E_BAD_PATH : r;
		s->socket_path = strdup(socket_path);
		if (!s->socket_path) {
			close(fd);
			unlink(socket_path);
			return -ENOMEM;
		}
	}
	r = uv_pipe_init(s->loop, &s->listener, 0);
	if (r < 0)
		return error_origin(r);
	s->listener.data = s;
	r = uv_pipe_open(&s->listener, fd);
	if (r < 0) {
		uv_close((uv_handle_t *)&s->listener, NULL);
		return error_origin(r);
	}
	r = uv_listen((uv_stream_t *)&s->listener, SOMAXCONN, server_on_connection);
	if (r < 0) {
		uv_close((uv_handle_t *)&s->listener, NULL);
		return error_origin(r);
	}
	s->listening = true;
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

void server_notify_status(Server *s)
{
	char line[256];

	if (s->ks_busy) /* unlock or rekey owns the keystore (handler.c): the next tick */
		return;
	snprintf(line, sizeof(line), "STATUS=%zu keys, %llu connections, %llu in flight, %llu requests%s",
	         keystore_count(&s->keystore), (unsigned long long)s->n_conns, (unsigned long long)s->inflight,
	         (unsigned long long)s->requests, s->locked ? ", locked" : "");
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
	if (s->auto_lock_ms && !s->locked && !s->ks_busy && !s->key_jobs && s->keystore.dirfd >= 0 &&
	    uv_now(s->loop) - s->last_key_use_ms >= s->auto_lock_ms) {
		keystore_lock(&s->keystore);
		s->locked = true;
		log_info("auto-lock: no key used for %llu s; decrypted keys wiped",
		         (unsigned long long)(s->auto_lock_ms / 1000));
		audit_event(geteuid(), getpid(), "sigild", NULL, NULL, "lock", "ok", "auto-lock");
	}
	server_notify_status(s);
}

static void close_handle(uv_handle_t *h)
{
	if (!uv_is_closing(h))
		uv_close(h, NULL);
}

/* close every handle: the loop then ends */
static void server_close_all(Server *s)
{
	if (s->closing_all)
		return;
	s->closing_all = true;
	conn_flush_all(s); /* what can still be written */
	while (s->conns)
		conn_close(s->conns);
	conn_release_all(s); /* drop the closed connections' references */
	audit_flush_sync();
	agent_close(s->agent);
	if (s->listening) {
		close_handle((uv_handle_t *)&s->listener);
		s->listening = false;
	}
	close_handle((uv_handle_t *)&s->sig_term);
	close_handle((uv_handle_t *)&s->sig_int);
	close_handle((uv_handle_t *)&s->sig_hup);
	close_handle((uv_handle_t *)&s->tick);
	close_handle((uv_handle_t *)&s->shutdown_timer);
	close_handle((uv_handle_t *)&s->flush_prepare);
	close_handle((uv_handle_t *)&s->flush_check);
	close_handle((uv_handle_t *)&s->resume);
}

void server_maybe_finish(Server *s)
{
	if (!s->shutting_down || s->inflight > 0)
		return;
	for (Conn *c = s->conns; c; c = c->next)
		if (!conn_idle(c))
			return;
	server_close_all(s);
}

static void server_on_shutdown_timeout(uv_timer_t *t)
{
	Server *s = t->data;

	log_warn("%llu requests still running or answers unsent after shutdown_timeout_s=%u; exiting anyway",
	         (unsigned long long)s->inflight, s->config.shutdown_timeout_s);
	/* workers may still hold keys: wipe the secrets in place, then leave
	 * without unmapping memory they use */
	for (size_t i = 0; i < s->keystore.n_keys; i++)
		if (s->keystore.keys[i]->secret)
			sigil_wipe(s->keystore.keys[i]->secret, sizeof(KeySecret));
	if (s->socket_path)
		unlink(s->socket_path);
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
	log_info("%s: stopping; %llu requests in flight", why, (unsigned long long)s->inflight);
	sd_notify(0, "STOPPING=1");
	if (s->listening) {
		close_handle((uv_handle_t *)&s->listener);
		s->listening = false;
	}
	/* stop reading; close connections that have nothing left to send */
	for (Conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		conn_process(c);
	}
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
	for (Conn *conn = s->conns; conn; conn = conn->next)
		proto_reader_set_max_frame(conn->reader, c.max_request_size);
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
	free(s->socket_path);
	s->socket_path = NULL;
}
