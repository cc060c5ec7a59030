/* SPDX-License-Identifier: MIT */
/*
 * stream.h - one connection type for both sockets: framed input, the
 * per-turn budget and turn queue, ordered output (an answer never leaves
 * before its audit line), back-pressure, the idle timer and half-close
 *
 * A Stream knows no protocol: its framer cuts the input into frames and
 * its class's frame() callback (a front-end: rpc.c, agent.c) turns each
 * into operations and appends the answers (stream_put + stream_answered).
 * Answers are only appended; stream_hub_flush() writes every dirty
 * stream's bytes once per loop iteration, after the hub's before_flush()
 * (the audit lines), or between two streams' turns once
 * STREAM_FLUSH_EARLY answers wait.
 *
 * Fairness: a stream runs at most STREAM_FRAMES_PER_TURN frames per turn,
 * and all streams together at most STREAM_FRAMES_PER_PHASE in one phase of
 * the loop; a stream out of turn or budget stops reading and joins the
 * hub's FIFO of waiting streams, run by the hub's idle handle in the next
 * loop iteration.
 *
 * Back-pressure: a stream takes no frame while more than STREAM_WRITE_HIGH
 * answer bytes wait to be written (it resumes below STREAM_WRITE_LOW),
 * while its held bytes (operations the core keeps) and this turn's frames
 * exceed the hub's max_frame, while the hub's held bytes exceed
 * STREAM_HELD_FACTOR * max_frame, or while its front-end holds it
 * (stream_hold: the ssh-agent socket answers in order).
 *
 * Everything runs on the loop thread.
 */
#ifndef SIGIL_DAEMON_STREAM_H
#define SIGIL_DAEMON_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "ops.h"
#include "peer.h"
#include "proto.h"

#define STREAM_FRAMES_PER_TURN 64
#define STREAM_FRAMES_PER_PHASE 256
#define STREAM_FLUSH_EARLY 4
#define STREAM_WRITE_HIGH (1u << 20)
#define STREAM_WRITE_LOW (256u << 10)
#define STREAM_HELD_FACTOR 4

typedef struct Stream Stream;
typedef struct StreamHub StreamHub;

/* what a framer's next() and feed() return (the values of ProtoReader's) */
enum {
	STREAM_FRAME = PROTO_READER_FRAME,
	STREAM_NONE = PROTO_READER_NONE,
};

/* cuts the input into frames: ProtoReader (msgpack) or the uint32-length
 * framer below. feed: 0, negative errno, or a positive error (then the
 * stream's fail() is told and it closes once its answers are written) */
typedef struct StreamFramer {
	void *f;
	int (*feed)(void *f, const void *data, size_t n);
	int (*next)(void *f, const uint8_t **framep, size_t *lenp);
	bool (*partial)(const void *f);
	size_t (*buffered)(const void *f);
	void (*free)(void *f);
} StreamFramer;

/* a uint32 big-endian length, then that many bytes (the ssh-agent
 * protocol's framing); a length over @max is STREAM_E_TOO_LARGE */
enum { STREAM_E_TOO_LARGE = 1000 };
int stream_framer_u32(StreamFramer *fr, size_t max);

/* the front-end of a stream */
typedef struct StreamClass {
	const char *name;                        /* for log lines: "" or "ssh-agent: " */
	void (*frame)(Stream *s, uint8_t *frame, size_t len); /* one frame (writable: may be wiped) */
	void (*fail)(Stream *s, int err);        /* a framing error: answer it (the stream then closes) */
	void (*closed)(Stream *s);               /* the stream is closing: drop front-end state */
	void (*freed)(Stream *s);                /* the last reference went: free front-end memory */
} StreamClass;

struct StreamHub {
	uv_loop_t *loop;
	uv_idle_t resume;     /* streams that used up their turn */
	Stream *streams;      /* every open stream of both sockets */
	uint64_t n_streams;
	Stream *dirty;        /* answers to write (each holds a ref) */
	Stream *resume_head, *resume_tail; /* waiting for a turn, oldest first (each holds a ref) */
	unsigned budget;      /* frames left in this phase */
	uint64_t turn_gen;    /* a new phase or round of turns: each stream's count starts again */
	uint64_t unwritten;   /* answers appended, not yet written (all streams) */
	size_t held_bytes;    /* what the core keeps for all streams */
	bool held_blocked;    /* a stream waits for held_bytes to drop */
	size_t max_frame;     /* max_request_size */
	unsigned idle_timeout_s;
	bool shutting_down;
	uint64_t requests;    /* answers appended since start */
	void (*before_flush)(void *ctx); /* the audit lines go first */
	void (*closed)(void *ctx, Stream *s); /* a stream is closing (the server's per-uid counts) */
	void *ctx;
};

struct Stream {
	uv_pipe_t pipe;
	uv_timer_t idle;      /* a started frame must complete in idle_timeout_s */
	StreamHub *hub;
	const StreamClass *cls;
	void *data;           /* the front-end's */
	StreamFramer framer;
	Peer peer;
	OpsClient client;     /* the core's counters of this connection */
	Stream *prev, *next;  /* hub->streams */
	unsigned n_refs;      /* the open handles, kept ops, the dirty and resume lists */
	unsigned n_handles;
	unsigned hold;        /* the front-end holds frames back while > 0 */
	size_t held_bytes;    /* what the core keeps of this stream's requests */
	size_t turn_bytes;    /* frames answered this iteration (back-pressure) */
	uint64_t turn_gen;    /* the hub's turn_gen when turn_frames was last reset */
	unsigned turn_frames; /* frames taken in this turn, across stream_process() calls
	                       * (a held stream takes one a call: an agent client's signs) */
	size_t write_bytes;   /* answers not yet written: out.len + the write in progress */
	ProtoBuf out;
	struct StreamWrite *writing;
	bool reading;
	bool closing;
	bool dirty;
	bool resume;
	bool eof;             /* the client half-closed: its whole frames are answered, then close */
	bool close_after_write;
	bool in_process;
	bool counted;         /* in the server's per-uid counts */
	Stream *resume_next, *dirty_next;
};

void stream_hub_init(StreamHub *h, uv_loop_t *loop, size_t max_frame, unsigned idle_timeout_s);
/* write the before_flush lines, then every dirty stream's answers */
void stream_hub_flush(StreamHub *h);
/* stream_hub_flush() once STREAM_FLUSH_EARLY answers wait (between turns) */
void stream_hub_flush_early(StreamHub *h);
/* a new budget for the next phase of the loop */
void stream_hub_new_phase(StreamHub *h);
/* at exit: close every stream, flush, drop the lists' references, close the idle handle */
void stream_hub_close(StreamHub *h);
/* stop taking frames everywhere; streams with nothing left close */
void stream_hub_shutdown(StreamHub *h);
/* every stream idle (nothing held or unwritten)? */
bool stream_hub_idle(const StreamHub *h);
/* held bytes dropped: streams that waited for them run again */
void stream_hub_settled(StreamHub *h);
void stream_hub_set_max_frame(StreamHub *h, size_t max_frame);

/**
 * stream_new() - a stream for a connection on @listener (accepted), or for
 * the connected socket @fd when @listener is NULL; its Peer read
 * (peer_init) under @config. Takes the framer. The caller checks the peer
 * (admission, limits) and then calls stream_start() or refuses it.
 * Return: 0 or negative errno (nothing to free).
 */
int stream_new(Stream **sp, StreamHub *h, uv_stream_t *listener, int fd, const StreamClass *cls,
               StreamFramer *framer, const Config *config);
void stream_start(Stream *s);
void stream_close(Stream *s);
void stream_ref(Stream *s);
void stream_unref(Stream *s);
/* nothing held, nothing waiting to be written */
bool stream_idle(const Stream *s);

/* append answer bytes (the front-end's encoding) to the stream's output */
ProtoBuf *stream_out(Stream *s);
/* @n bytes were appended to stream_out(s) as one answer: written with this
 * iteration's others. Return: 0 */
void stream_answered(Stream *s, size_t n);
/* an answer could not be encoded (out of memory): close */
void stream_broken(Stream *s, const char *why);
/* answer, then close once written (a refused peer, a framing error) */
void stream_close_after_write(Stream *s);

/* the core kept one of this stream's operations (@bytes held) / it ended */
void stream_op_kept(Stream *s, size_t bytes);
void stream_op_ended(Stream *s, size_t bytes);
/* the front-end holds frames back (hold) / lets them go again */
void stream_hold(Stream *s);
void stream_release(Stream *s);
/* take frames now if it may (after anything that lifted a limit) */
void stream_process(Stream *s);

#endif /* SIGIL_DAEMON_STREAM_H */
