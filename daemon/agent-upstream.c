/* SPDX-License-Identifier: MIT */
/*
 * agent-upstream.c - the transport to an upstream ssh-agent (agent-upstream.h),
 * asynchronous on the libuv loop
 *
 * Each agent connection that needs the upstream gets its own connection
 * to it. Requests go out in order and the upstream answers in order (the
 * protocol has no ids), so a queue of requests, the oldest first, pairs
 * each answer with its request; each request's done() gets the answer, or
 * NULL when the upstream fails, times out, sends a bad frame, or the
 * agent connection closes. Request bytes (an add holds a private key) are
 * wiped as soon as they are written, answer bytes once read.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <sigil/crypto.h>

#include "agent-msg.h"
#include "agent-upstream.h"
#include "log.h"

/* requests waiting for the upstream on one connection: a client that
 * pipelines copies (LOCK, ...) to a slow upstream cannot grow the queue */
#define UP_MAX_QUEUED 64

typedef struct UpReq {
	struct UpReq *next;
	uint8_t *frame;       /* uint32 length + message; NULL once written */
	size_t frame_len;
	uint64_t timeout_ms;
	bool written;
	char what[40];        /* log lines: the request */
	AgentUpstreamDone done;
	void *ctx;
} UpReq;

typedef struct UpPipe {
	uv_pipe_t pipe;
	uv_connect_t connect;
	AgentUpstream *u;     /* NULL once detached (closing) */
} UpPipe;

typedef struct UpWrite {
	uv_write_t req;
	uint8_t *data;
	size_t len;
} UpWrite;

struct AgentUpstream {
	AgentUpstreamConfig *cfg;
	UpPipe *pipe;         /* NULL: not connected */
	bool open;            /* connected (else connecting) */
	uv_timer_t *timer;    /* the oldest request's deadline */
	UpReq *head, *tail;
	unsigned n_queued;    /* requests in head..tail (at most UP_MAX_QUEUED) */
	uint8_t *in;          /* answer bytes read, not yet a whole frame */
	size_t in_len, in_cap;
	bool warned;          /* "cannot reach" logged once per connection */
	bool broken;          /* a write failed: on_timeout fails the queue */
	unsigned depth;       /* inside a libuv callback of ours */
	bool freed;           /* agent_upstream_free() ran meanwhile: free on the way out */
};

static void up_free_now(AgentUpstream *u);

/* the callbacks answer requests, which lets the agent connection go on,
 * which may close it and free u: u stays until the callback returns */
static void up_enter(AgentUpstream *u)
{
	u->depth++;
}

/* false if u is gone */
static bool up_leave(AgentUpstream *u)
{
	if (--u->depth == 0 && u->freed) {
		up_free_now(u);
		return false;
	}
	return !u->freed;
}

/* ---- helpers ---- */

static void req_free(UpReq *r)
{
	if (r->frame) {
		sigil_wipe(r->frame, r->frame_len);
		free(r->frame);
	}
	free(r);
}

static void timer_closed(uv_handle_t *h)
{
	free(h);
}

static void pipe_closed(uv_handle_t *h)
{
	free(h->data);
}

static void up_detach(AgentUpstream *u)
{
	if (u->pipe) {
		u->pipe->u = NULL;
		uv_close((uv_handle_t *)&u->pipe->pipe, pipe_closed);
		u->pipe = NULL;
	}
	u->open = false;
	if (u->timer)
		uv_timer_stop(u->timer);
	if (u->in) {
		sigil_wipe(u->in, u->in_cap);
		free(u->in);
		u->in = NULL;
		u->in_len = u->in_cap = 0;
	}
}

/* one request is over: its done() (ans NULL: the upstream failed) */
static void req_finish(UpReq *r, const uint8_t *ans, size_t len)
{
	r->done(r->ctx, ans, len);
	req_free(r);
}

/* the upstream failed: every waiting request is answered without it */
static void up_fail_all(AgentUpstream *u)
{
	UpReq *list = u->head;

	u->head = u->tail = NULL;
	u->n_queued = 0;
	up_detach(u);
	while (list) {
		UpReq *r = list;

		list = r->next;
		req_finish(r, NULL, 0);
	}
}

static void on_timeout(uv_timer_t *t);

static void up_arm_timer(AgentUpstream *u)
{
	if (!u->timer)
		return;
	if (u->broken)
		return;
	if (u->head && u->open)
		uv_timer_start(u->timer, on_timeout, u->head->timeout_ms, 0);
	else
		uv_timer_stop(u->timer);
}

static void on_timeout(uv_timer_t *t)
{
	AgentUpstream *u = t->data;

	if (u->broken) {
		u->broken = false;
		log_info("ssh-agent: cannot write to the upstream agent %s", u->cfg->path);
		up_enter(u);
		up_fail_all(u);
		(void)up_leave(u);
		return;
	}
	log_warn("ssh-agent: the upstream agent %s did not answer %s within %llu ms: its keys are left out of "
	         "new upstream connections for %u s", u->cfg->path, u->head ? u->head->what : "a request",
	         (unsigned long long)(u->head ? u->head->timeout_ms : 0), AGENT_UPSTREAM_RETRY_MS / 1000);
	u->cfg->down_until = uv_now(u->cfg->loop) + AGENT_UPSTREAM_RETRY_MS;
	up_enter(u);
	up_fail_all(u);
	(void)up_leave(u);
}

static void on_write(uv_write_t *req, int status)
{
	UpWrite *w = (UpWrite *)req;

	(void)status; /* a failed write shows as a read error or EOF */
	sigil_wipe(w->data, w->len);
	free(w->data);
	free(w);
}

static int up_write(AgentUpstream *u, UpReq *r)
{
	UpWrite *w = calloc(1, sizeof(*w));
	uv_buf_t b;

	if (!w)
		return -ENOMEM;
	/* the write owns the bytes from here */
	w->data = r->frame;
	w->len = r->frame_len;
	r->frame = NULL;
	r->written = true;
	b = uv_buf_init((char *)w->data, (unsigned)w->len);
	if (uv_write(&w->req, (uv_stream_t *)&u->pipe->pipe, &b, 1, on_write) < 0) {
		sigil_wipe(w->data, w->len);
		free(w->data);
		free(w);
		return -EIO;
	}
	return 0;
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	UpPipe *p = h->data;
	AgentUpstream *u = p->u;

	(void)suggested;
	buf->base = NULL;
	buf->len = 0;
	if (!u)
		return;
	if (u->in_cap - u->in_len < 16384) {
		size_t cap = u->in_cap ? u->in_cap * 2 : 65536;
		uint8_t *n;

		if (cap > 2 * (AGENT_MAX_MSG + 4))
			cap = 2 * (AGENT_MAX_MSG + 4);
		if (cap <= u->in_len)
			return;
		n = malloc(cap);
		if (!n)
			return;
		if (u->in) {
			memcpy(n, u->in, u->in_len);
			sigil_wipe(u->in, u->in_cap);
			free(u->in);
		}
		u->in = n;
		u->in_cap = cap;
	}
	buf->base = (char *)u->in + u->in_len;
	buf->len = u->in_cap - u->in_len;
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
	UpPipe *p = s->data;
	AgentUpstream *u = p->u;
	size_t off = 0;

	(void)buf;
	if (!u || nread == 0)
		return;
	up_enter(u);
	if (nread < 0) {
		if (u->head)
			log_info("ssh-agent: the upstream agent %s closed the connection (%s)", u->cfg->path,
			         uv_strerror((int)nread));
		up_fail_all(u);
		(void)up_leave(u);
		return;
	}
	u->in_len += (size_t)nread;
	while (u->in_len - off >= 4) {
		const uint8_t *f = u->in + off;
		size_t n = (size_t)f[0] << 24 | (size_t)f[1] << 16 | (size_t)f[2] << 8 | f[3];
		UpReq *r;

		if (n == 0 || n > AGENT_MAX_MSG || !u->head) {
			log_warn("ssh-agent: the upstream agent %s sent %s: leaving it", u->cfg->path,
			         !u->head ? "an answer nobody asked for" : "a bad frame");
			up_fail_all(u);
			(void)up_leave(u);
			return;
		}
		if (u->in_len - off - 4 < n)
			break;
		r = u->head;
		u->head = r->next;
		if (!u->head)
			u->tail = NULL;
		u->n_queued--;
		req_finish(r, f + 4, n);
		/* req_finish may have let the connection go on, which may have
		 * queued more, failed everything or closed the connection */
		if (u->freed || !u->in || u->pipe != p) {
			(void)up_leave(u);
			return;
		}
		off += 4 + n;
	}
	if (off) {
		memmove(u->in, u->in + off, u->in_len - off);
		u->in_len -= off;
	}
	up_arm_timer(u);
	(void)up_leave(u);
}

static void on_connect(uv_connect_t *req, int status)
{
	UpPipe *p = req->data;
	AgentUpstream *u = p->u;

	if (!u)
		return;
	up_enter(u);
	if (status < 0) {
		if (!u->warned)
			log_info("ssh-agent: cannot reach the upstream agent %s: %s", u->cfg->path, uv_strerror(status));
		u->warned = true;
		up_fail_all(u);
		(void)up_leave(u);
		return;
	}
	u->open = true;
	u->warned = false;
	if (uv_read_start((uv_stream_t *)&p->pipe, on_alloc, on_read) < 0) {
		up_fail_all(u);
		(void)up_leave(u);
		return;
	}
	for (UpReq *r = u->head; r; r = r->next) {
		if (!r->written && up_write(u, r) < 0) {
			up_fail_all(u);
			(void)up_leave(u);
			return;
		}
	}
	up_arm_timer(u);
	(void)up_leave(u);
}

int agent_upstream_send(AgentUpstream *u, const uint8_t *msg, size_t len, uint64_t timeout_ms, const char *what,
                        AgentUpstreamDone done, void *ctx)
{
	UpReq *r;

	if (!u->pipe && uv_now(u->cfg->loop) < u->cfg->down_until)
		return -1;
	if (u->n_queued >= UP_MAX_QUEUED) {
		log_debug("ssh-agent: %u requests wait for the upstream agent: %s not relayed", u->n_queued, what);
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -1;
	r->frame = malloc(len + 4);
	if (!r->frame) {
		free(r);
		return -1;
	}
	r->frame[0] = (uint8_t)(len >> 24);
	r->frame[1] = (uint8_t)(len >> 16);
	r->frame[2] = (uint8_t)(len >> 8);
	r->frame[3] = (uint8_t)len;
	memcpy(r->frame + 4, msg, len);
	r->frame_len = len + 4;
	r->timeout_ms = timeout_ms;
	snprintf(r->what, sizeof(r->what), "%s", what);
	r->done = done;
	r->ctx = ctx;
	if (!u->pipe) {
		UpPipe *p = calloc(1, sizeof(*p));

		if (!p) {
			req_free(r);
			return -1;
		}
		p->u = u;
		uv_pipe_init(u->cfg->loop, &p->pipe, 0);
		p->pipe.data = p;
		p->connect.data = p;
		u->pipe = p;
		u->open = false;
		/* asynchronous: on_connect writes the queue */
		uv_pipe_connect(&p->connect, &p->pipe, u->cfg->path, on_connect);
	}
	if (u->tail)
		u->tail->next = r;
	else
		u->head = r;
	u->tail = r;
	u->n_queued++;
	if (u->open) {
		if (up_write(u, r) < 0) {
			/* never answered from inside this call: the timer fails
			 * the queue at once */
			u->broken = true;
			uv_timer_start(u->timer, on_timeout, 0, 0);
			return 0;
		}
		if (u->head == r)
			up_arm_timer(u);
	}
	return 0;
}

AgentUpstream *agent_upstream_new(AgentUpstreamConfig *cfg)
{
	AgentUpstream *u = calloc(1, sizeof(*u));

	if (!u)
		return NULL;
	u->timer = calloc(1, sizeof(*u->timer));
	if (!u->timer) {
		free(u);
		return NULL;
	}
	u->cfg = cfg;
	uv_timer_init(cfg->loop, u->timer);
	u->timer->data = u;
	return u;
}

static void up_free_now(AgentUpstream *u)
{
	uv_close((uv_handle_t *)u->timer, timer_closed);
	free(u);
}

bool agent_upstream_is_self(const char *path, const char *bound, int listen_fd)
{
	struct sockaddr_un sa;
	socklen_t len = sizeof(sa);
	struct stat a, b;

	/* the bound path's inode against the upstream path's (sigild binds
	 * through /proc/self/fd/DIR/NAME: its own sockets by the path it was
	 * given; systemd's by their address) */
	if (!bound) {
		if (getsockname(listen_fd, (struct sockaddr *)&sa, &len) < 0 || sa.sun_family != AF_UNIX ||
		    len <= offsetof(struct sockaddr_un, sun_path) || !sa.sun_path[0])
			return false;
		sa.sun_path[sizeof(sa.sun_path) - 1] = '\0';
		bound = sa.sun_path;
	}
	return stat(path, &a) == 0 && stat(bound, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

void agent_upstream_free(AgentUpstream *u)
{
	if (!u || u->freed)
		return;
	u->freed = true;
	up_enter(u);
	up_fail_all(u);
	(void)up_leave(u);
}
