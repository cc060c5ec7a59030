/* SPDX-License-Identifier: MIT */
/*
 * conn.c - one client connection: incremental reads, frames, ordered
 * writes, back-pressure and the idle timeout
 *
 * Back-pressure: when more than CONN_WRITE_HIGH bytes of responses wait to
 * be written (the client does not read), the connection stops reading and
 * stops taking frames from its buffer; it resumes below CONN_WRITE_LOW.
 * Memory per connection is thus bounded by the frame limit, the write
 * high-water mark and the in-flight limit.
 *
 * Answers are only appended here; conn_flush_all() writes them once per
 * loop iteration (server.h), after the audit lines they account for, or
 * between two connections' turns once SERVER_FLUSH_EARLY of them wait.
 * Fairness: one connection runs at most CONN_FRAMES_PER_TURN frames per
 * turn, and all connections together at most SERVER_FRAMES_PER_PHASE in
 * one phase of the loop (the idle phase, which runs the connections
 * waiting for a turn, and the poll phase, which runs the ones that have
 * new bytes: the budget is renewed before each). A connection out of turn
 * or budget stops reading and joins the server's FIFO of waiting
 * connections (s->resume_head), run by the idle handle in the next loop
 * iteration: under a backlog, a new client waits for about two phases'
 * worth of frames, not for the whole backlog.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "agent.h"
#include "audit.h"
#include "log.h"
#include "server.h"

typedef struct Write {
	uv_write_t req;
	Conn *conn;
	uint8_t *data;
	size_t len;
} Write;

static int conn_flush(Conn *c);
static void conn_on_resume(uv_idle_t *h);

/* Between two connections' turns (of either socket): once
 * SERVER_FLUSH_EARLY answers wait, write them (and their audit lines) now
 * rather than at the end of the iteration, so that their clients run on
 * the other CPU while this thread signs for the next connections. With 32
 * connections at depth 1 this raised sign throughput by about 14%
 * (docs/throughput.md); it costs one more log write per
 * SERVER_FLUSH_EARLY answers. */
void conn_flush_early(Server *s)
{
	if (s->turn_requests >= SERVER_FLUSH_EARLY)
		conn_flush_all(s);
}

/* answers to write at the end of this loop iteration */
static void conn_mark_dirty(Conn *c)
{
	Server *s = c->server;

	if (c->dirty)
		return;
	c->dirty = true;
	c->n_refs++;
	c->dirty_next = s->dirty;
	s->dirty = c;
}

/* one read buffer for all connections: reads are copied into the reader at
 * once, and the buffer is wiped after each read (it may hold a seed) */
static uint8_t read_buf[64 * 1024];

static void conn_handle_closed(uv_handle_t *h)
{
	Conn *c = h->data;

	if (--c->n_handles == 0)
		conn_unref(c);
}

void conn_unref(Conn *c)
{
	if (--c->n_refs > 0)
		return;
	c->reader = proto_reader_free(c->reader);
	proto_buf_deinit(&c->out);
	free(c);
}

int conn_new(Conn **connp, Server *s)
{
	Conn *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return error_origin(-ENOMEM);
	c->server = s;
	r = proto_reader_new(&c->reader, s->config.max_request_size);
	if (r < 0) {
		free(c);
		return error_origin(r);
	}
	r = uv_pipe_init(s->loop, &c->pipe, 0);
	if (r < 0) {
		proto_reader_free(c->reader);
		free(c);
		return error_origin(r);
	}
	uv_timer_init(s->loop, &c->idle);
	c->pipe.data = c;
	c->idle.data = c;
	c->n_handles = 2;
	c->n_refs = 1; /* dropped when both handles are closed */
	c->uid = (uid_t)-1;
	c->pid = 0;
	/* link */
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	*connp = c;
	return 0;
}

void conn_close(Conn *c)
{
	Server *s = c->server;

	if (c->closing)
		return;
	c->closing = true;
	uv_read_stop((uv_stream_t *)&c->pipe);
	uv_timer_stop(&c->idle);
	uv_close((uv_handle_t *)&c->pipe, conn_handle_closed);
	uv_close((uv_handle_t *)&c->idle, conn_handle_closed);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	s->n_conns--;
	log_debug("connection of uid %d pid %d closed", (int)c->uid, (int)c->pid);
	server_maybe_finish(s);
}

bool conn_idle(const Conn *c)
{
	return c->inflight == 0 && c->write_bytes == 0;
}

static void conn_on_write(uv_write_t *req, int status)
{
	Write *w = (Write *)req;
	Conn *c = w->conn;

	c->write_bytes -= w->len;
	c->writing = NULL;
	sigil_wipe(w->data, w->len);
	free(w->data);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		log_debug("write to uid %d pid %d failed: %s", (int)c->uid, (int)c->pid, uv_strerror(status));
		conn_close(c);
		return;
	}
	/* everything encoded meanwhile goes out in one write, with the
	 * iteration's other answers */
	if (c->out.len > 0)
		conn_mark_dirty(c);
	if (c->close_after_write && conn_idle(c)) {
		conn_close(c);
		return;
	}
	/* reading stopped for the backlog: resume once it has drained to the
	 * low-water mark (conn_process() stops again if anything else blocks) */
	if (!c->reading && !c->resume && c->write_bytes < CONN_WRITE_LOW)
		conn_process(c);
	if (c->server->shutting_down)
		server_maybe_finish(c->server);
}

/* hand the pending answers to the socket: at once when it takes them
 * (uv_try_write: no write request, no copy, no poll registration; the
 * buffer is wiped and kept for the next answers), else the rest to libuv
 * (one write in progress at a time). A connection waiting to close or to
 * resume reading is handled by the callers (work_done, conn_process). */
static int conn_flush(Conn *c)
{
	Write *w;
	uv_buf_t buf;
	int r;

	if (c->writing || c->out.len == 0)
		return 0;
	buf = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
	r = uv_try_write((uv_stream_t *)&c->pipe, &buf, 1);
	if (r < 0 && r != UV_EAGAIN)
		return error_origin(r);
	if (r > 0) {
		size_t n = (size_t)r;

		c->write_bytes -= n;
		memmove(c->out.data, c->out.data + n, c->out.len - n);
		sigil_wipe(c->out.data + (c->out.len - n), n);
		c->out.len -= n;
		if (c->out.len == 0)
			return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->conn = c;
	w->data = proto_buf_steal(&c->out, &w->len);
	buf = uv_buf_init((char *)w->data, (unsigned)w->len);
	r = uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, conn_on_write);
	if (r < 0) {
		c->write_bytes -= w->len;
		sigil_wipe(w->data, w->len);
		free(w->data);
		free(w);
		return error_origin(r);
	}
	c->writing = w;
	return 0;
}

void conn_flush_all(Server *s)
{
	Conn *list = s->dirty;

	/* the log and audit lines (and the audit file's fdatasync) of these
	 * answers go first: an answer never leaves before its audit line */
	audit_flush();
	s->dirty = NULL;
	s->turn_requests = 0;
	agent_flush_all(s->agent); /* the ssh-agent socket's answers (agent.c) */
	while (list) {
		Conn *c = list;

		list = c->dirty_next;
		c->dirty_next = NULL;
		c->dirty = false;
		c->turn_requests = 0;
		c->turn_bytes = 0;
		if (!c->closing) {
			if (conn_flush(c) < 0) {
				log_warn("cannot write to uid %d pid %d; closing the connection", (int)c->uid, (int)c->pid);
				conn_close(c);
			} else if (c->close_after_write && conn_idle(c)) {
				conn_close(c);
			} else if (!c->reading && !c->resume && c->write_bytes < CONN_WRITE_LOW) {
				/* reading stopped for the backlog: resume */
				conn_process(c);
			}
		}
		conn_unref(c);
	}
	if (s->shutting_down)
		server_maybe_finish(s);
}

int conn_send_response(Conn *c, const ProtoResponse *resp)
{
	size_t len0 = c->out.len;
	int r;

	if (c->closing)
		return 0;
	r = proto_response_encode(&c->out, resp);
	if (!r) {
		c->write_bytes += c->out.len - len0;
		c->server->requests++;
		conn_mark_dirty(c);
	}
	if (r < 0) {
		log_warn("cannot answer uid %d pid %d: %s; closing the connection", (int)c->uid, (int)c->pid,
		         strerror(-r));
		conn_close(c);
	}
	return r;
}

int conn_send_error(Conn *c, bool has_msgid, uint64_t msgid, ProtoError code, const char *message)
{
	ProtoResponse resp = { .msgid = msgid, .has_msgid = has_msgid, .error = code };

	snprintf(resp.message, sizeof(resp.message), "%s", message ? message : "");
	return conn_send_response(c, &resp);
}

/* a frame could not be read: answer once, then close */
static void conn_fail(Conn *c, int k)
{
	uint64_t msgid = 0;
	bool has = proto_reader_msgid(c->reader, &msgid) == 0;
	char msg[PROTO_MESSAGE_MAX];

	if (k == PROTO_READER_E_TOO_LARGE) {
		snprintf(msg, sizeof(msg), "request larger than max_request_size (%zu bytes) or with too many objects",
		         c->server->config.max_request_size);
		log_info("uid %d pid %d sent a request over the size limit; closing", (int)c->uid, (int)c->pid);
		conn_send_error(c, has, msgid, PROTO_E_TOO_LARGE, msg);
	} else {
		log_info("uid %d pid %d sent bytes that are not msgpack; closing", (int)c->uid, (int)c->pid);
		conn_send_error(c, has, msgid, PROTO_E_BAD_REQUEST, "bytes that are not msgpack, or nested too deep");
	}
	c->close_after_write = true;
	uv_read_stop((uv_stream_t *)&c->pipe);
	c->reading = false;
	uv_timer_stop(&c->idle);
	if (conn_idle(c))
		conn_close(c);
}

static void conn_on_idle(uv_timer_t *t)
{
	Conn *c = t->data;

	log_info("closing connection of uid %d pid %d: request incomplete after %us", (int)c->uid, (int)c->pid,
	         c->server->config.idle_timeout_s);
	conn_close(c);
}

static void conn_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	*buf = uv_buf_init((char *)read_buf, sizeof(read_buf));
}

static void conn_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	Conn *c = stream->data;
	int k;

	if (nread == 0)
		return;
	if (nread < 0) {
		/* EOF: the client may have half-closed after its requests;
		 * answer what is in flight, then close */
		uv_read_stop(stream);
		c->reading = false;
		uv_timer_stop(&c->idle);
		if (nread != UV_EOF || conn_idle(c))
			conn_close(c);
		else
			c->close_after_write = true;
		return;
	}
	k = proto_reader_feed(c->reader, buf->base, (size_t)nread);
	sigil_wipe(buf->base, (size_t)nread);
	if (k < 0) {
		log_warn("out of memory reading from uid %d pid %d; closing", (int)c->uid, (int)c->pid);
		conn_close(c);
		return;
	}
	if (k) {
		conn_fail(c, k);
		return;
	}
	conn_process(c);
	conn_flush_early(c->server);
}

/* may this connection take another frame now? (back-pressure, not errors) */
static bool conn_may_take(Conn *c)
{
	Server *s = c->server;

	if (c->write_bytes >= CONN_WRITE_HIGH)
		return false;
	if (c->inflight_bytes + c->turn_bytes >= s->config.max_request_size)
		return false;
	if (s->inflight_bytes >= SERVER_INFLIGHT_BYTES_FACTOR * s->config.max_request_size) {
		s->total_blocked = true;
		return false;
	}
	return true;
}

/* to the end of the server's FIFO of connections waiting for a turn */
static void conn_wait_turn(Conn *c)
{
	Server *s = c->server;

	if (c->resume)
		return;
	c->resume = true;
	c->n_refs++;
	c->resume_next = NULL;
	if (s->resume_head)
		s->resume_tail->resume_next = c;
	else
		s->resume_head = c;
	s->resume_tail = c;
	uv_idle_start(&s->resume, conn_on_resume);
}

void conn_process(Conn *c)
{
	Server *s = c->server;
	unsigned n = 0;

	if (c->resume)
		return; /* it waits for its turn (conn_on_resume) */

	while (!c->closing && !c->close_after_write && !s->shutting_down && conn_may_take(c)) {
		const uint8_t *frame;
		size_t len;
		int k;

		if ((n == CONN_FRAMES_PER_TURN || s->budget == 0) && proto_reader_partial(c->reader)) {
			/* its turn is over: the others run first */
			if (c->reading) {
				uv_read_stop((uv_stream_t *)&c->pipe);
				c->reading = false;
			}
			conn_wait_turn(c);
			return;
		}
		k = proto_reader_next(c->reader, &frame, &len);
		if (k == PROTO_READER_NONE)
			break;
		if (k != PROTO_READER_FRAME) {
			conn_fail(c, k);
			return;
		}
		handler_dispatch(c, frame, len);
		n++;
		s->budget--;
	}
	if (c->closing || c->close_after_write)
		return;
	if (s->shutting_down || !conn_may_take(c)) {
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->pipe);
			c->reading = false;
		}
		uv_timer_stop(&c->idle);
		return;
	}
	if (!c->reading) {
		int r = uv_read_start((uv_stream_t *)&c->pipe, conn_alloc, conn_on_read);

		if (r < 0) {
			log_warn("cannot read from uid %d pid %d: %s", (int)c->uid, (int)c->pid, uv_strerror(r));
			conn_close(c);
			return;
		}
		c->reading = true;
	}
	if (proto_reader_partial(c->reader)) {
		if (!uv_is_active((uv_handle_t *)&c->idle))
			uv_timer_start(&c->idle, conn_on_idle, (uint64_t)s->config.idle_timeout_s * 1000, 0);
	} else {
		uv_timer_stop(&c->idle);
	}
}

/* the server's idle handle: the connections waiting for a turn, in order,
 * with a new budget (one that runs out of it joins the end again; while
 * the handle is active the loop polls without blocking) */
static void conn_on_resume(uv_idle_t *h)
{
	Server *s = h->data;
	Conn *list = s->resume_head;

	uv_idle_stop(h);
	s->resume_head = s->resume_tail = NULL;
	s->budget = SERVER_FRAMES_PER_PHASE;
	while (list) {
		Conn *c = list;

		list = c->resume_next;
		c->resume_next = NULL;
		c->resume = false;
		if (!c->closing) {
			conn_process(c);
			conn_flush_early(s);
		}
		conn_unref(c);
	}
}

void conn_release_all(Server *s)
{
	conn_flush_all(s);
	while (s->resume_head) {
		Conn *c = s->resume_head;

		s->resume_head = c->resume_next;
		c->resume_next = NULL;
		c->resume = false;
		conn_unref(c);
	}
	s->resume_tail = NULL;
}

void conn_start(Conn *c)
{
	conn_process(c);
}
