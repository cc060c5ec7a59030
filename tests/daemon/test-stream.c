/* SPDX-License-Identifier: MIT */
/*
 * test-stream.c - unit tests of daemon/stream.c: a Stream over a socketpair
 * on a real libuv loop, without sigild
 *
 * The test's own StreamClass echoes every frame (uint32 length framing,
 * stream_framer_u32) and records the order in which frames reach it; the
 * loop flushes answers in its prepare and check phases, as server.c does.
 * The other end of each socketpair is a plain non-blocking fd that the test
 * writes to and reads from.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <uv.h>

#include "config.h"
#include "log.h"
#include "stream.h"

#define MAX_FRAME (256u << 10)
#define MAX_LOG 4096

static uv_loop_t *loop;
static StreamHub hub;
static uv_prepare_t flush_prepare;
static uv_check_t flush_check;
static Config config;

/* what the echo class saw */
typedef struct Seen {
	Stream *s;
	uint32_t tag;     /* the frame's first 4 bytes (0 if shorter) */
	size_t write_bytes; /* s->write_bytes when the frame came */
} Seen;

static Seen seen[MAX_LOG * 4];
static size_t n_seen;
static unsigned n_fail, n_closed, n_freed;
static int last_fail;
static bool frame_while_held;

/* hold mode: a frame tagged HOLD_TAG is answered later, from a timer */
#define HOLD_TAG 0x484f4c44u
static uv_timer_t hold_timer;
static Stream *held_stream;
static uint8_t held_frame[64];
static size_t held_len;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void echo_answer(Stream *s, const uint8_t *frame, size_t len)
{
	ProtoBuf *out = stream_out(s);
	uint8_t hdr[4];

	put_be32(hdr, (uint32_t)len);
	assert_int_equal(proto_buf_append(out, hdr, 4), 0);
	if (len)
		assert_int_equal(proto_buf_append(out, frame, len), 0);
	stream_answered(s, 4 + len);
}

static void echo_frame(Stream *s, uint8_t *frame, size_t len)
{
	uint32_t tag = len >= 4 ? get_be32(frame) : 0;

	if (s->hold)
		frame_while_held = true;
	assert_true(n_seen < sizeof(seen) / sizeof(seen[0]));
	seen[n_seen++] = (Seen){ s, tag, s->write_bytes };
	if (tag == HOLD_TAG) {
		assert_true(len <= sizeof(held_frame));
		memcpy(held_frame, frame, len);
		held_len = len;
		held_stream = s;
		stream_ref(s);
		stream_hold(s);
		return;
	}
	echo_answer(s, frame, len);
}

static void echo_fail(Stream *s, int err)
{
	static const uint8_t msg[] = "FAIL";

	n_fail++;
	last_fail = err;
	echo_answer(s, msg, 4);
}

static void echo_closed(Stream *s)
{
	(void)s;
	n_closed++;
}

static void echo_freed(Stream *s)
{
	(void)s;
	n_freed++;
}

static const StreamClass echo_class = {
	.name = "test: ",
	.frame = echo_frame,
	.fail = echo_fail,
	.closed = echo_closed,
	.freed = echo_freed,
};

static void on_hold_timer(uv_timer_t *t)
{
	Stream *s = held_stream;

	(void)t;
	held_stream = NULL;
	echo_answer(s, held_frame, held_len);
	stream_release(s);
	stream_unref(s);
}

static void on_flush_prepare(uv_prepare_t *h)
{
	(void)h;
	stream_hub_flush(&hub);
	stream_hub_new_phase(&hub);
}

static void on_flush_check(uv_check_t *h)
{
	(void)h;
	stream_hub_flush(&hub);
}

static int setup(void **state)
{
	(void)state;
	loop = uv_default_loop();
	config_init(&config);
	config.max_request_size = MAX_FRAME;
	config.idle_timeout_s = 1;
	stream_hub_init(&hub, loop, MAX_FRAME, 1);
	uv_prepare_init(loop, &flush_prepare);
	uv_check_init(loop, &flush_check);
	uv_prepare_start(&flush_prepare, on_flush_prepare);
	uv_check_start(&flush_check, on_flush_check);
	uv_timer_init(loop, &hold_timer);
	n_seen = 0;
	n_fail = n_closed = n_freed = 0;
	last_fail = 0;
	frame_while_held = false;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	stream_hub_close(&hub);
	uv_close((uv_handle_t *)&flush_prepare, NULL);
	uv_close((uv_handle_t *)&flush_check, NULL);
	uv_close((uv_handle_t *)&hold_timer, NULL);
	while (uv_run(loop, UV_RUN_NOWAIT) != 0)
		;
	assert_int_equal(n_freed, n_closed);
	return 0;
}

/* a stream on one end of a socketpair; the other end (returned in *peer)
 * non-blocking */
static Stream *open_stream(int *peer, size_t max)
{
	StreamFramer fr;
	Stream *s = NULL;
	int sv[2];

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(fcntl(sv[1], F_SETFL, O_NONBLOCK), 0);
	assert_int_equal(stream_framer_u32(&fr, max), 0);
	assert_int_equal(stream_new(&s, &hub, NULL, sv[0], &echo_class, &fr, &config), 0);
	assert_true(s->peer.admitted);
	stream_start(s);
	*peer = sv[1];
	return s;
}

/* run the loop without blocking for @ms milliseconds */
static void pump(unsigned ms)
{
	uint64_t end = now_ms() + ms;

	do {
		uv_run(loop, UV_RUN_NOWAIT);
		(void)poll(NULL, 0, 1);
	} while (now_ms() < end);
}

static void write_all(int fd, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t deadline = now_ms() + 10000;

	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k > 0) {
			p += k;
			n -= (size_t)k;
			continue;
		}
		assert_true(k < 0 && errno == EAGAIN);
		assert_true(now_ms() < deadline);
		uv_run(loop, UV_RUN_NOWAIT);
	}
}

static size_t frame_make(uint8_t *buf, uint32_t tag, size_t len)
{
	put_be32(buf, (uint32_t)len);
	if (len >= 4)
		put_be32(buf + 4, tag);
	for (size_t i = 4; i < len; i++)
		buf[4 + i] = (uint8_t)(tag + i);
	return 4 + len;
}

/* read what the stream sent until @want bytes or EOF (10 s at most);
 * *eof tells which */
static size_t read_answers(int fd, uint8_t *buf, size_t cap, size_t want, bool *eof)
{
	size_t got = 0;
	uint64_t deadline = now_ms() + 10000;

	*eof = false;
	while (got < want && now_ms() < deadline) {
		ssize_t k = read(fd, buf + got, cap - got);

		if (k > 0) {
			got += (size_t)k;
			continue;
		}
		if (k == 0 || (k < 0 && errno == ECONNRESET)) {
			*eof = true;
			break;
		}
		assert_true(errno == EAGAIN);
		uv_run(loop, UV_RUN_NOWAIT);
		(void)poll(NULL, 0, 1);
	}
	return got;
}

/* check that buf holds the echoes of frames tagged first..first+n-1 of
 * length len each */
static void check_echoes(const uint8_t *buf, size_t got, uint32_t first, unsigned n, size_t len)
{
	uint8_t want[4 + 4096];

	assert_true(len <= 4096);
	assert_int_equal(got, (size_t)n * (4 + len));
	for (unsigned i = 0; i < n; i++) {
		size_t m = frame_make(want, first + i, len);

		assert_memory_equal(buf + (size_t)i * m, want, m);
	}
}

/* ---- tests ------------------------------------------------------------------- */

static void test_partial_frames(void **state)
{
	uint8_t f[4 + 100], out[256];
	size_t n = frame_make(f, 7, 100), got;
	bool eof;
	int fd;
	Stream *s = open_stream(&fd, MAX_FRAME);

	(void)state;
	for (size_t i = 0; i < n; i++) {
		write_all(fd, f + i, 1);
		pump(1);
		/* no frame before its last byte */
		assert_int_equal(n_seen, i + 1 == n ? 1 : 0);
	}
	got = read_answers(fd, out, sizeof(out), n, &eof);
	assert_false(eof);
	check_echoes(out, got, 7, 1, 100);
	assert_ptr_equal(seen[0].s, s);
	close(fd);
	pump(20);
	assert_int_equal(n_closed, 1);
}

static void test_several_frames_one_write(void **state)
{
	uint8_t in[10 * (4 + 32)], out[sizeof(in)];
	size_t n = 0, got;
	bool eof;
	int fd;

	(void)state;
	(void)open_stream(&fd, MAX_FRAME);
	for (uint32_t i = 0; i < 10; i++)
		n += frame_make(in + n, 100 + i, 32);
	write_all(fd, in, n);
	got = read_answers(fd, out, sizeof(out), n, &eof);
	assert_false(eof);
	check_echoes(out, got, 100, 10, 32);
	for (size_t i = 0; i < 10; i++)
		assert_int_equal(seen[i].tag, 100 + i);
	close(fd);
	pump(20);
}

static void test_frame_too_large(void **state)
{
	uint8_t in[64], out[256];
	size_t n, got;
	bool eof;
	int fd;

	(void)state;
	(void)open_stream(&fd, 1024);
	n = frame_make(in, 5, 16);
	put_be32(in + n, 1025); /* over the max: its body never comes */
	n += 4;
	write_all(fd, in, n);
	got = read_answers(fd, out, sizeof(out), sizeof(out), &eof);
	/* the good frame's echo, then the fail answer, then EOF */
	assert_true(eof);
	assert_int_equal(got, (4 + 16) + (4 + 4));
	check_echoes(out, 4 + 16, 5, 1, 16);
	assert_int_equal(get_be32(out + 20), 4);
	assert_memory_equal(out + 24, "FAIL", 4);
	assert_int_equal(n_fail, 1);
	assert_int_equal(last_fail, STREAM_E_TOO_LARGE);
	assert_int_equal(n_seen, 1);
	close(fd);
	pump(20);
	assert_int_equal(n_closed, 1);
}

/* the peer does not read: the stream takes no frame while STREAM_WRITE_HIGH
 * answer bytes wait, and takes the next one only below STREAM_WRITE_LOW */
static void test_back_pressure(void **state)
{
	enum { LEN = 32u << 10, N = 96 }; /* 3 MiB of answers */
	uint8_t *in = malloc((size_t)N * (4 + LEN)), *out = malloc((size_t)N * (4 + LEN));
	size_t n = 0, off = 0, got = 0, stalled_at;
	bool stopped = false;
	uint64_t deadline;
	int fd;
	Stream *s = open_stream(&fd, MAX_FRAME);

	(void)state;
	assert_non_null(in);
	assert_non_null(out);
	for (uint32_t i = 0; i < N; i++)
		n += frame_make(in + n, i, LEN);
	/* write what the socket takes, never read */
	deadline = now_ms() + 10000;
	while (now_ms() < deadline) {
		ssize_t k = off < n ? write(fd, in + off, n - off) : 0;

		if (k > 0)
			off += (size_t)k;
		uv_run(loop, UV_RUN_NOWAIT);
		(void)poll(NULL, 0, 1);
		if (!s->reading && s->write_bytes >= STREAM_WRITE_HIGH && n_seen > 0) {
			stopped = true;
			break;
		}
	}
	assert_true(stopped);
	stalled_at = n_seen;
	assert_true(stalled_at < N);
	/* it stays stopped while the peer does not read */
	pump(200);
	assert_int_equal(n_seen, stalled_at);
	assert_false(s->reading);
	for (size_t i = 0; i < n_seen; i++)
		assert_true(seen[i].write_bytes < STREAM_WRITE_HIGH);
	/* now read everything (and write the rest) */
	deadline = now_ms() + 20000;
	while (got < n && now_ms() < deadline) {
		ssize_t k;

		if (off < n) {
			k = write(fd, in + off, n - off);
			if (k > 0)
				off += (size_t)k;
		}
		k = read(fd, out + got, n - got);
		if (k > 0)
			got += (size_t)k;
		uv_run(loop, UV_RUN_NOWAIT);
	}
	assert_int_equal(got, n);
	assert_memory_equal(out, in, n);
	assert_int_equal(n_seen, N);
	/* the first frame taken after the stop came below the low water mark */
	assert_true(seen[stalled_at].write_bytes < STREAM_WRITE_LOW);
	for (size_t i = 0; i < n_seen; i++)
		assert_true(seen[i].write_bytes < STREAM_WRITE_HIGH);
	free(in);
	free(out);
	close(fd);
	pump(20);
}

static void test_half_close(void **state)
{
	enum { N = 200 }; /* more than one turn */
	uint8_t in[N * (4 + 8)], out[sizeof(in) + 64];
	size_t n = 0, got;
	bool eof;
	int fd;

	(void)state;
	(void)open_stream(&fd, MAX_FRAME);
	for (uint32_t i = 0; i < N; i++)
		n += frame_make(in + n, 1000 + i, 8);
	write_all(fd, in, n);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	got = read_answers(fd, out, sizeof(out), sizeof(out), &eof);
	assert_true(eof);
	check_echoes(out, got, 1000, N, 8);
	pump(20);
	assert_int_equal(n_closed, 1);
	close(fd);
}

/* a stream half-closed in the middle of a frame: its whole frames are
 * answered, the rest dropped, then it closes */
static void test_half_close_partial(void **state)
{
	uint8_t in[3 * (4 + 8)], out[256];
	size_t n = 0, got;
	bool eof;
	int fd;

	(void)state;
	(void)open_stream(&fd, MAX_FRAME);
	for (uint32_t i = 0; i < 3; i++)
		n += frame_make(in + n, 50 + i, 8);
	write_all(fd, in, n - 3);
	assert_int_equal(shutdown(fd, SHUT_WR), 0);
	got = read_answers(fd, out, sizeof(out), sizeof(out), &eof);
	assert_true(eof);
	check_echoes(out, got, 50, 2, 8);
	close(fd);
	pump(20);
}

static ssize_t index_of(Stream *s, uint32_t tag)
{
	for (size_t i = 0; i < n_seen; i++)
		if (seen[i].s == s && seen[i].tag == tag)
			return (ssize_t)i;
	return -1;
}

static void test_fairness(void **state)
{
	enum { N = STREAM_FRAMES_PER_TURN * 3 };
	uint8_t in[N * (4 + 8)], one[4 + 8], out[sizeof(in)];
	size_t n = 0, got;
	ssize_t ib, ilast;
	bool eof;
	int fa, fb;
	Stream *a = open_stream(&fa, MAX_FRAME), *b = open_stream(&fb, MAX_FRAME);

	(void)state;
	for (uint32_t i = 0; i < N; i++)
		n += frame_make(in + n, i, 8);
	frame_make(one, 0xb0b0, 8);
	/* both are waiting when the loop next polls */
	write_all(fa, in, n);
	write_all(fb, one, sizeof(one));
	got = read_answers(fa, out, sizeof(out), n, &eof);
	check_echoes(out, got, 0, N, 8);
	got = read_answers(fb, out, sizeof(out), sizeof(one), &eof);
	check_echoes(out, got, 0xb0b0, 1, 8);
	ib = index_of(b, 0xb0b0);
	ilast = index_of(a, N - 1);
	assert_true(ib >= 0);
	assert_true(ilast >= 0);
	assert_true(ib < ilast);
	/* b's frame came before a's second turn began (a's frames arrived in
	 * one read: it used up its turn with frames left) */
	assert_true(ib < index_of(a, STREAM_FRAMES_PER_TURN));
	close(fa);
	close(fb);
	pump(20);
	assert_int_equal(n_closed, 2);
}

/* idle_timeout_s is 1: a stream with a started frame is closed once it
 * passes (its earlier answers written first); one with nothing started
 * stays open */
static void test_idle_timeout(void **state)
{
	uint8_t in[4 + 8 + 3], out[64];
	size_t n, got;
	bool eof;
	int fa, fb;
	Stream *a = open_stream(&fa, MAX_FRAME), *b = open_stream(&fb, MAX_FRAME);

	(void)state;
	(void)a;
	n = frame_make(in, 9, 8);
	write_all(fb, in, n); /* b: one whole frame, nothing started */
	memcpy(in + n, "\0\0\0", 3);
	write_all(fa, in, n + 3); /* a: one whole frame and 3 bytes of a header */
	got = read_answers(fa, out, sizeof(out), sizeof(out), &eof);
	assert_true(eof);
	check_echoes(out, got, 9, 1, 8);
	assert_int_equal(n_closed, 1);
	got = read_answers(fb, out, sizeof(out), 12, &eof);
	check_echoes(out, got, 9, 1, 8);
	pump(1500);
	assert_int_equal(n_closed, 1);
	assert_false(b->closing);
	got = read(fb, out, sizeof(out));
	assert_true(got == (size_t)-1 && errno == EAGAIN);
	close(fa);
	close(fb);
	pump(20);
}

/* a front-end holding the stream (ssh-agent answers in order): no frame
 * reaches it while held, and the held frame's answer goes first */
static void test_hold_release(void **state)
{
	uint8_t in[4 * (4 + 8)], out[sizeof(in)];
	size_t n = 0, got;
	bool eof;
	int fd;

	(void)state;
	uv_timer_stop(&hold_timer);
	(void)open_stream(&fd, MAX_FRAME);
	n += frame_make(in + n, HOLD_TAG, 8);
	for (uint32_t i = 1; i < 4; i++)
		n += frame_make(in + n, i, 8);
	write_all(fd, in, n);
	/* frame 1 is held for 100 ms */
	for (uint64_t end = now_ms() + 2000; n_seen == 0 && now_ms() < end;)
		pump(1);
	assert_int_equal(n_seen, 1);
	uv_timer_start(&hold_timer, on_hold_timer, 100, 0);
	pump(50);
	assert_int_equal(n_seen, 1); /* still held */
	got = read(fd, out, sizeof(out));
	assert_true(got == (size_t)-1 && errno == EAGAIN);
	got = read_answers(fd, out, sizeof(out), n, &eof);
	assert_int_equal(got, n);
	assert_memory_equal(out, in, n); /* in order: the held one first */
	assert_int_equal(n_seen, 4);
	assert_false(frame_while_held);
	close(fd);
	pump(20);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_partial_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_several_frames_one_write, setup, teardown),
		cmocka_unit_test_setup_teardown(test_frame_too_large, setup, teardown),
		cmocka_unit_test_setup_teardown(test_back_pressure, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close, setup, teardown),
		cmocka_unit_test_setup_teardown(test_half_close_partial, setup, teardown),
		cmocka_unit_test_setup_teardown(test_fairness, setup, teardown),
		cmocka_unit_test_setup_teardown(test_idle_timeout, setup, teardown),
		cmocka_unit_test_setup_teardown(test_hold_release, setup, teardown),
	};

	signal(SIGPIPE, SIG_IGN);
	log_set_max_priority(LOG_PRIO_ERR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
