/* SPDX-License-Identifier: MIT */
/*
 * stream.c - one connection type for both sockets (stream.h)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "log.h"
#include "stream.h"

typedef struct StreamWrite {
	uv_write_t req;
	Stream *stream;
	uint8_t *data;
	size_t len;
} StreamWrite;

static int stream_flush(Stream *s);
static void stream_on_resume(uv_idle_t *h);

/* one read buffer for all streams: reads are copied into the framer at
 * once, and the buffer is wiped after each read (it may hold a seed) */
static uint8_t read_buf[64 * 1024];

/* ---- the uint32-length framer ------------------------------------------------ */

typedef struct U32Framer {
	ProtoBuf buf;         /* bytes read; those before start are taken (wiped as consumed) */
	size_t start;
	size_t max;
} U32Framer;

/* drop consumed bytes (they may hold a private key: wiped) */
static void u32_compact(U32Framer *u)
{
	ProtoBuf *b = &u->buf;

	if (u->start == 0)
		return;
	memmove(b->data, b->data + u->start, b->len - u->start);
	sigil_wipe(b->data + (b->len - u->start), u->start);
	b->len -= u->start;
	u->start = 0;
}

static int u32_feed(void *f, const void *data, size_t n)
{
	U32Framer *u = f;

	u32_compact(u);
	return proto_buf_append(&u->buf, data, n); /* (grows wiping the old copy) */
}

static int u32_next(void *f, const uint8_t **framep, size_t *lenp)
{
	U32Framer *u = f;
	size_t avail = u->buf.len - u->start;
	const uint8_t *p;
	uint32_t len;

	if (u->start > 0) {
		/* the previous frame was handled: wipe it now */
		sigil_wipe(u->buf.data, u->start);
	}
	if (avail < 4)
		return STREAM_NONE; /* (the buffer may not exist yet) */
	p = u->buf.data + u->start;
	len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	if (len > u->max)
		return STREAM_E_TOO_LARGE;
	if (avail - 4 < len)
		return STREAM_NONE;
	*framep = p + 4;
	*lenp = len;
	u->start += 4 + (size_t)len;
	return STREAM_FRAME;
}

static bool u32_partial(const void *f)
{
	const U32Framer *u = f;

	return u->buf.len > u->start;
}

static size_t u32_buffered(const void *f)
{
	const U32Framer *u = f;

	return u->buf.len - u->start;
}

static void u32_free(void *f)
{
	U32Framer *u = f;

	if (!u)
		return;
	proto_buf_deinit(&u->buf); /* wipes */
	free(u);
}

int stream_framer_u32(StreamFramer *fr, size_t max)
{
	U32Framer *u = calloc(1, sizeof(*u));

	if (!u)
		return -ENOMEM;
	u->max = max;
	*fr = (StreamFramer){ u, u32_feed, u32_next, u32_partial, u32_buffered, u32_free };
	return 0;
}

/* ---- the hub ----------------------------------------------------------------- */

void stream_hub_init(StreamHub *h, uv_loop_t *loop, size_t max_frame, unsigned idle_timeout_s)
{
	memset(h, 0, sizeof(*h));
	h->loop = loop;
	h->max_frame = max_frame;
	h->idle_timeout_s = idle_timeout_s;
	h->budget = STREAM_FRAMES_PER_PHASE;
	uv_idle_init(loop, &h->resume);
	h->resume.data = h;
}

void stream_hub_set_max_frame(StreamHub *h, size_t max_frame)
{
	h->max_frame = max_frame;
}

void stream_hub_new_phase(StreamHub *h)
{
	h->budget = STREAM_FRAMES_PER_PHASE;
	h->turn_gen++;
}

/* Between two streams' turns: once STREAM_FLUSH_EARLY answers wait, write
 * them (and their audit lines) now rather than at the end of the
 * iteration, so that their clients run on the other CPU while this thread
 * works for the next streams (+14% sign throughput at 32 connections,
 * docs/throughput.md). */
void stream_hub_flush_early(StreamHub *h)
{
	if (h->unwritten >= STREAM_FLUSH_EARLY)
		stream_hub_flush(h);
}

/* answers to write at the end of this loop iteration */
static void stream_mark_dirty(Stream *s)
{
	StreamHub *h = s->hub;

	if (s->dirty)
		return;
	s->dirty = true;
	s->n_refs++;
	s->dirty_next = h->dirty;
	h->dirty = s;
}

void stream_hub_flush(StreamHub *h)
{
	Stream *list = h->dirty;

	/* the log and audit lines of these answers go first: an answer
	 * never leaves before its audit line */
	if (h->before_flush)
		h->before_flush(h->ctx);
	h->dirty = NULL;
	h->unwritten = 0;
	while (list) {
		Stream *s = list;

		list = s->dirty_next;
		s->dirty_next = NULL;
		s->dirty = false;
		s->client.unwritten = 0;
		s->turn_bytes = 0;
		if (!s->closing) {
			if (stream_flush(s) < 0) {
				log_warn("%scannot write to uid %d pid %d; closing the connection", s->cls->name,
				         (int)s->peer.uid, (int)s->peer.pid);
				stream_close(s);
			} else if (!s->reading && !s->resume && s->write_bytes < STREAM_WRITE_LOW) {
				/* reading stopped for the backlog (or it is closing
				 * once answered): go on */
				stream_process(s);
			}
		}
		stream_unref(s);
	}
}

bool stream_hub_idle(const StreamHub *h)
{
	for (const Stream *s = h->streams; s; s = s->next)
		if (!stream_idle(s))
			return false;
	return true;
}

void stream_hub_settled(StreamHub *h)
{
	if (!h->held_blocked || h->shutting_down || h->held_bytes >= STREAM_HELD_FACTOR * h->max_frame)
		return;
	h->held_blocked = false;
	for (Stream *s = h->streams, *next; s; s = next) {
		next = s->next;
		stream_process(s);
	}
}

void stream_hub_shutdown(StreamHub *h)
{
	h->shutting_down = true;
	for (Stream *s = h->streams, *next; s; s = next) {
		next = s->next;
		stream_process(s);
	}
}

void stream_hub_close(StreamHub *h)
{
	stream_hub_flush(h); /* what can still be written */
	while (h->streams)
		stream_close(h->streams);
	stream_hub_flush(h); /* drop the closed streams' dirty references */
	while (h->resume_head) {
		Stream *s = h->resume_head;

		h->resume_head = s->resume_next;
		s->resume_next = NULL;
		s->resume = false;
		stream_unref(s);
	}
	h->resume_tail = NULL;
	uv_idle_stop(&h->resume);
	if (!uv_is_closing((uv_handle_t *)&h->resume))
		uv_close((uv_handle_t *)&h->resume, NULL);
}

/* ---- a stream ---------------------------------------------------------------- */

static void stream_handle_closed(uv_handle_t *hd)
{
	Stream *s = hd->data;

	if (--s->n_handles == 0)
		stream_unref(s);
}

void stream_ref(Stream *s)
{
	s->n_refs++;
}

void stream_unref(Stream *s)
{
	if (--s->n_refs > 0)
		return;
	if (s->framer.free)
		s->framer.free(s->framer.f);
	proto_buf_deinit(&s->out);
	peer_deinit(&s->peer);
	if (s->cls->freed)
		s->cls->freed(s);
	sigil_wipe(s, sizeof(*s));
	free(s);
}

int stream_new(Stream **sp, StreamHub *h, uv_stream_t *listener, int fd, const StreamClass *cls,
               StreamFramer *framer, const Config *config)
{
	Stream *s = calloc(1, sizeof(*s));
	uv_os_fd_t ufd = fd;
	int r;

	if (!s) {
		framer->free(framer->f);
		return -ENOMEM;
	}
	s->hub = h;
	s->cls = cls;
	s->framer = *framer;
	s->peer = (Peer)PEER_NULL(s->peer);
	uv_pipe_init(h->loop, &s->pipe, 0);
	uv_timer_init(h->loop, &s->idle);
	s->pipe.data = s;
	s->idle.data = s;
	s->n_handles = 2;
	s->n_refs = 1; /* dropped when both handles are closed */
	s->next = h->streams;
	if (h->streams)
		h->streams->prev = s;
	h->streams = s;
	h->n_streams++;
	r = listener ? uv_accept(listener, (uv_stream_t *)&s->pipe) : uv_pipe_open(&s->pipe, fd);
	if (r == 0)
		r = uv_fileno((uv_handle_t *)&s->pipe, &ufd);
	if (r == 0)
		r = peer_init(&s->peer, ufd, config);
	if (r < 0) {
		log_warn("%scannot accept a connection: %s", cls->name, strerror(-r));
		s->closing = false;
		stream_close(s);
		return r;
	}
	*sp = s;
	return 0;
}

void stream_close(Stream *s)
{
	StreamHub *h = s->hub;

	if (s->closing)
		return;
	s->closing = true;
	uv_read_stop((uv_stream_t *)&s->pipe);
	uv_timer_stop(&s->idle);
	uv_close((uv_handle_t *)&s->pipe, stream_handle_closed);
	uv_close((uv_handle_t *)&s->idle, stream_handle_closed);
	if (s->prev)
		s->prev->next = s->next;
	else
		h->streams = s->next;
	if (s->next)
		s->next->prev = s->prev;
	s->prev = s->next = NULL;
	h->n_streams--;
	log_debug("%sconnection of uid %d pid %d closed", s->cls->name, (int)s->peer.uid, (int)s->peer.pid);
	if (s->cls->closed)
		s->cls->closed(s);
	if (h->closed)
		h->closed(h->ctx, s);
}

bool stream_idle(const Stream *s)
{
	return s->client.inflight == 0 && s->write_bytes == 0 && s->hold == 0;
}

static void stream_on_write(uv_write_t *req, int status)
{
	StreamWrite *w = (StreamWrite *)req;
	Stream *s = w->stream;

	s->write_bytes -= w->len;
	s->writing = NULL;
	sigil_wipe(w->data, w->len);
	free(w->data);
	free(w);
	if (s->closing) {
		stream_unref(s);
		return;
	}
	if (status < 0) {
		log_debug("%swrite to uid %d pid %d failed: %s", s->cls->name, (int)s->peer.uid, (int)s->peer.pid,
		          uv_strerror(status));
		stream_close(s);
		stream_unref(s);
		return;
	}
	/* everything appended meanwhile goes out in one write, with the
	 * iteration's other answers */
	if (s->out.len > 0)
		stream_mark_dirty(s);
	else if (!s->reading && !s->resume && s->write_bytes < STREAM_WRITE_LOW)
		stream_process(s); /* caught up (or closes, once nothing is left) */
	stream_unref(s);
}

/* hand the pending answers to the socket: at once when it takes them
 * (uv_try_write: no write request, no copy), else the rest to libuv (one
 * write in progress at a time) */
static int stream_flush(Stream *s)
{
	StreamWrite *w;
	uv_buf_t buf;
	int r;

	if (s->writing || s->out.len == 0)
		return 0;
	buf = uv_buf_init((char *)s->out.data, (unsigned)s->out.len);
	r = uv_try_write((uv_stream_t *)&s->pipe, &buf, 1);
	if (r < 0 && r != UV_EAGAIN)
		return r;
	if (r > 0) {
		size_t n = (size_t)r;

		s->write_bytes -= n;
		memmove(s->out.data, s->out.data + n, s->out.len - n);
		sigil_wipe(s->out.data + (s->out.len - n), n);
		s->out.len -= n;
		if (s->out.len == 0)
			return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->stream = s;
	w->data = proto_buf_steal(&s->out, &w->len);
	buf = uv_buf_init((char *)w->data, (unsigned)w->len);
	r = uv_write(&w->req, (uv_stream_t *)&s->pipe, &buf, 1, stream_on_write);
	if (r < 0) {
		s->write_bytes -= w->len;
		sigil_wipe(w->data, w->len);
		free(w->data);
		free(w);
		return r;
	}
	s->writing = w;
	s->n_refs++; /* the write's */
	return 0;
}

ProtoBuf *stream_out(Stream *s)
{
	return &s->out;
}

void stream_answered(Stream *s, size_t n)
{
	if (s->closing)
		return;
	s->write_bytes += n;
	s->client.unwritten++;
	s->hub->unwritten++;
	s->hub->requests++;
	stream_mark_dirty(s);
}

void stream_broken(Stream *s, const char *why)
{
	log_warn("%scannot answer uid %d pid %d: %s; closing the connection", s->cls->name, (int)s->peer.uid,
	         (int)s->peer.pid, why);
	stream_close(s);
}

void stream_close_after_write(Stream *s)
{
	s->close_after_write = true;
	if (s->reading) {
		uv_read_stop((uv_stream_t *)&s->pipe);
		s->reading = false;
	}
	uv_timer_stop(&s->idle);
	if (stream_idle(s) && !s->dirty)
		stream_close(s);
}

void stream_op_kept(Stream *s, size_t bytes)
{
	s->n_refs++;
	s->held_bytes += bytes;
	s->hub->held_bytes += bytes;
}

void stream_op_ended(Stream *s, size_t bytes)
{
	StreamHub *h = s->hub;

	s->held_bytes -= bytes;
	h->held_bytes -= bytes;
	if (!s->closing)
		stream_process(s); /* it may have waited for its requests in flight */
	stream_unref(s);
}

void stream_hold(Stream *s)
{
	s->hold++;
}

void stream_release(Stream *s)
{
	s->hold--;
	if (!s->closing)
		stream_process(s);
}

static void stream_fail(Stream *s, int k)
{
	if (k < 0) {
		log_warn("%sout of memory reading from uid %d pid %d; closing", s->cls->name, (int)s->peer.uid,
		         (int)s->peer.pid);
		stream_close(s);
		return;
	}
	if (s->cls->fail)
		s->cls->fail(s, k);
	if (!s->closing)
		stream_close_after_write(s);
}

static void stream_on_idle(uv_timer_t *t)
{
	Stream *s = t->data;

	log_info("%sclosing connection of uid %d pid %d: request incomplete after %us", s->cls->name, (int)s->peer.uid,
	         (int)s->peer.pid, s->hub->idle_timeout_s);
	stream_close(s);
}

static void stream_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)read_buf, sizeof(read_buf));
}

static void stream_on_read(uv_stream_t *us, ssize_t nread, const uv_buf_t *buf)
{
	Stream *s = us->data;
	int k;

	if (nread == 0)
		return;
	if (nread < 0) {
		uv_read_stop(us);
		s->reading = false;
		uv_timer_stop(&s->idle);
		if (nread != UV_EOF) {
			stream_close(s);
			return;
		}
		/* EOF: the client may have half-closed after its requests:
		 * answer its whole frames, then close */
		s->eof = true;
		stream_process(s);
		stream_hub_flush_early(s->hub);
		return;
	}
	k = s->framer.feed(s->framer.f, buf->base, (size_t)nread);
	sigil_wipe(buf->base, (size_t)nread);
	if (k) {
		stream_fail(s, k);
		return;
	}
	stream_process(s);
	stream_hub_flush_early(s->hub);
}

/* may this stream take another frame now? (back-pressure, not errors) */
static bool stream_may_take(Stream *s)
{
	StreamHub *h = s->hub;

	if (s->hold || s->write_bytes >= STREAM_WRITE_HIGH)
		return false;
	if (s->held_bytes + s->turn_bytes >= h->max_frame)
		return false;
	if (h->held_bytes >= STREAM_HELD_FACTOR * h->max_frame) {
		h->held_blocked = true;
		return false;
	}
	return true;
}

/* to the end of the hub's FIFO of streams waiting for a turn */
static void stream_wait_turn(Stream *s)
{
	StreamHub *h = s->hub;

	if (s->resume)
		return;
	s->resume = true;
	s->n_refs++;
	s->resume_next = NULL;
	if (h->resume_head)
		h->resume_tail->resume_next = s;
	else
		h->resume_head = s;
	h->resume_tail = s;
	uv_idle_start(&h->resume, stream_on_resume);
}

static void stop_reading(Stream *s)
{
	if (s->reading) {
		uv_read_stop((uv_stream_t *)&s->pipe);
		s->reading = false;
	}
}

void stream_process(Stream *s)
{
	StreamHub *h = s->hub;

	if (s->resume || s->in_process || s->closing)
		return; /* it waits for its turn, or is running already */
	s->in_process = true;
	if (s->turn_gen != h->turn_gen) {
		s->turn_gen = h->turn_gen;
		s->turn_frames = 0;
	}
	while (!s->closing && !s->close_after_write && !h->shutting_down && stream_may_take(s)) {
		const uint8_t *frame;
		size_t len;
		int k;

		/* (counted across calls: a stream held for each frame, released
		 * from pool_kick, must not take a whole phase alone) */
		if ((s->turn_frames >= STREAM_FRAMES_PER_TURN || h->budget == 0) && s->framer.partial(s->framer.f)) {
			/* its turn is over: the others run first */
			stop_reading(s);
			uv_timer_stop(&s->idle);
			s->in_process = false;
			stream_wait_turn(s);
			return;
		}
		k = s->framer.next(s->framer.f, &frame, &len);
		if (k == STREAM_NONE)
			break;
		if (k != STREAM_FRAME) {
			s->in_process = false;
			stream_fail(s, k);
			return;
		}
		s->turn_bytes += len;
		s->turn_frames++;
		s->cls->frame(s, (uint8_t *)frame, len);
		if (h->budget)
			h->budget--;
	}
	s->in_process = false;
	if (s->closing)
		return;
	if (s->close_after_write || s->eof || h->shutting_down) {
		/* no more frames will be read: close once everything is answered
		 * (a half-closed stream answers its whole frames first: it waits
		 * while a limit holds them back) */
		stop_reading(s);
		uv_timer_stop(&s->idle);
		if (s->eof && !s->close_after_write && !h->shutting_down && !stream_may_take(s))
			return;
		if (stream_idle(s))
			stream_close(s);
		return;
	}
	if (!stream_may_take(s)) {
		stop_reading(s);
		uv_timer_stop(&s->idle);
		return;
	}
	if (!s->reading) {
		int r = uv_read_start((uv_stream_t *)&s->pipe, stream_alloc, stream_on_read);

		if (r < 0) {
			log_warn("%scannot read from uid %d pid %d: %s", s->cls->name, (int)s->peer.uid, (int)s->peer.pid,
			         uv_strerror(r));
			stream_close(s);
			return;
		}
		s->reading = true;
	}
	if (s->framer.partial(s->framer.f)) {
		if (!uv_is_active((uv_handle_t *)&s->idle))
			uv_timer_start(&s->idle, stream_on_idle, (uint64_t)h->idle_timeout_s * 1000, 0);
	} else {
		uv_timer_stop(&s->idle);
	}
}

/* the hub's idle handle: the streams waiting for a turn, in order, with a
 * new budget (one that runs out of it joins the end again; while the
 * handle is active the loop polls without blocking) */
static void stream_on_resume(uv_idle_t *hd)
{
	StreamHub *h = hd->data;
	Stream *list = h->resume_head;

	uv_idle_stop(hd);
	h->resume_head = h->resume_tail = NULL;
	h->budget = STREAM_FRAMES_PER_PHASE;
	h->turn_gen++; /* a new round of turns */
	while (list) {
		Stream *s = list;

		list = s->resume_next;
		s->resume_next = NULL;
		s->resume = false;
		if (!s->closing) {
			stream_process(s);
			stream_hub_flush_early(h);
		}
		stream_unref(s);
	}
}

void stream_start(Stream *s)
{
	stream_process(s);
}
