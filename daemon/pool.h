/* SPDX-License-Identifier: MIT */
/*
 * pool.h - sigild's crypto worker threads: jobs in from the loop thread in
 * batches, results back to it in batches
 *
 * The pool knows nothing of requests, keys or protocols: a PoolJob is the
 * caller's memory (embed it in the object that holds the job's inputs and
 * outputs), run() computes on a worker thread and done() runs on the loop
 * thread afterwards, once.
 *
 * The loop thread queues jobs with pool_submit() (no lock, no system call)
 * and hands everything queued over with pool_kick(), once per loop
 * iteration: one lock and at most one thread wake-up per batch. An idle
 * worker spins for spin_us on the empty queue before it sleeps (at most
 * CPUs - 1 of them at a time; the others sleep at once), so that a
 * batch that follows soon costs no wake-up at all (waking a halted vCPU
 * costs 20-40 us on the VM sigild is measured on, docs/throughput.md). A
 * worker that takes a job and sees more queued wakes one more sleeper, so
 * the loop thread itself never pays more than one wake-up per batch.
 *
 * Finished jobs go on a lock-free list; the worker that finds it empty
 * writes the pool's eventfd once for the whole batch (watched by a
 * uv_poll_t: not uv_async_t, whose loop side spins on a preempted sender,
 * see pool.c), and the loop thread calls done() for each job in completion
 * order (pool_reap(), also run by the eventfd's callback).
 *
 * pool_split() queues a job in K parts: K workers (or fewer, one after the
 * other) each run one part; done() runs once, after the last part.
 *
 * Every function but run() is for the loop thread only.
 */
#ifndef SIGIL_DAEMON_POOL_H
#define SIGIL_DAEMON_POOL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

#include <sigil/crypto.h>

typedef struct Pool Pool;
typedef struct PoolJob PoolJob;

/* the parts a split job may have */
#define POOL_PARTS_MAX 1024u

struct PoolJob {
	PoolJob *next; /* the pool's from pool_submit() until done() is called */
	/* on a worker thread: part 0 .. n_parts - 1 of the job (0 of 1 unless
	 * split); the parts of one job may run at the same time */
	void (*run)(PoolJob *j, unsigned part, unsigned n_parts);
	/* on the loop thread, once, after every part: may free the job, and may
	 * submit and kick new jobs (but not during pool_free()) */
	void (*done)(PoolJob *j);
	/* a short job (a signature, a dh): when it is the only job of a
	 * pool_kick(), it runs on the loop thread there instead (see pool_kick) */
	bool here_if_alone;
	/* a short job with a run_many, small enough that up to POOL_TAKE_MANY
	 * of them run together on the loop thread: when a pool_kick() holds
	 * only such jobs (the same run_many, two to POOL_TAKE_MANY of them)
	 * and nothing else is pending, they run there, through one run_many
	 * call (see pool_kick) */
	bool here_in_group;
	/* optional, for short jobs of one part: a worker that takes several
	 * jobs with the same run_many at once calls it once with all of them
	 * (in queue order) instead of run() on each, so that they can be
	 * computed together (eight signatures in vector lanes); it must do
	 * for each job what run(job, 0, 1) does. A job alone, or run on the
	 * loop thread, still goes through run(). */
	void (*run_many)(PoolJob *const *jobs, unsigned n);
	/* private to pool.c */
	unsigned n_parts;
	unsigned next_part; /* the next part a worker takes (under the pool's lock) */
	atomic_uint parts_left;
};

/* the most short jobs a worker takes at once (one run_many call's n) */
#define POOL_TAKE_MAX 32u
/* a worker takes at least this many jobs that have a run_many when they
 * are queued, even beyond its share (eight lanes of AVX-512) */
#define POOL_TAKE_MANY 8u

#define POOL_JOB_INIT(run_fn, done_fn) { .run = (run_fn), .done = (done_fn) }

/**
 * pool_new() - start the worker threads.
 * @poolp: the new pool
 * @loop: the loop thread's loop (its poll handle returns the results)
 * @n_workers: threads; 0: one per CPU sigild may run on (sched_getaffinity)
 * @spin_us: how long an idle worker polls its queue before it sleeps; no
 *           polling on a machine with one CPU, whatever spin_us says
 *
 * Each worker has a stack of POOL_STACK_SIZE (sigil_ed25519_verify_batch
 * needs about 212 KiB).
 *
 * Return: 0, -ENOMEM, the -errno of eventfd, a negative UV_E* of
 * uv_poll_init/start, or the -errno of pthread_create (no thread is left
 * running then; the memory goes in the close callback of the poll handle,
 * when the loop runs next).
 */
int pool_new(Pool **poolp, uv_loop_t *loop, unsigned n_workers, unsigned spin_us);

/**
 * pool_free() - finish every job, call its done(), stop the workers.
 * @p: the pool, or NULL
 *
 * Jobs submitted and not yet kicked are kicked; the loop thread waits for
 * all of them (pthread_join of the workers once the queue is empty), then
 * calls their done() in completion order. The pool's memory is released by
 * the close callback of its poll handle: the caller runs the loop once
 * more (as at any shutdown of libuv handles). Not from a done() callback.
 */
void pool_free(Pool *p);

/* whether a polling worker calls sched_yield() between its polls (default
 * false). Meant for a thread woken onto the poller's CPU (the loop, by the
 * worker's eventfd write); measured (pool-bench, docs/throughput.md) it
 * helps a loop that blocks a little and ruins a loop that polls too: CFS
 * then runs the polling loop for a whole slice (3-4 ms a job) while the
 * job waits. Kept for that A/B; sigild should leave it off. */
void pool_set_spin_yield(Pool *p, bool yield);

/* the number of worker threads */
unsigned pool_workers(const Pool *p);

/* how long an idle worker polls, in us: spin_us, or 0 on one CPU */
unsigned pool_spin_us(const Pool *p);

/* jobs submitted whose done() has not run yet (the loop thread's count) */
size_t pool_pending(const Pool *p);

/**
 * pool_submit() - queue a job on the loop thread; a worker gets it at the
 * next pool_kick().
 * @p: the pool
 * @j: the job, with run and done set; the pool's until done() is called
 *
 * No lock, no allocation, no system call.
 */
void pool_submit(Pool *p, PoolJob *j);

/**
 * pool_split() - queue a job in parts, like pool_submit().
 * @p: the pool
 * @j: the job
 * @n_parts: 1 .. POOL_PARTS_MAX: run(j, part, n_parts) is called once for
 *           each part, by whichever workers are free (at the same time on
 *           different workers); done(j) once, after the last
 */
void pool_split(Pool *p, PoolJob *j, unsigned n_parts);

/**
 * pool_kick() - hand every submitted job over to the workers.
 * @p: the pool
 *
 * One lock and at most one futex wake-up (none when a worker is polling
 * its queue), whatever the number of jobs: call it once per loop
 * iteration, after the iteration's requests were read.
 *
 * A batch of one job marked here_if_alone (and not split) is run on the
 * calling thread instead, and its done() called before pool_kick()
 * returns: a lone short job costs less than the two thread wake-ups of a
 * round trip through a worker (about 34 us of CPU on sigild's 2-vCPU VM,
 * docs/throughput.md), and it delays nobody's answer by more than itself.
 * So does a batch of two to POOL_TAKE_MANY jobs that are all
 * here_in_group with one run_many, when no other job is pending (the
 * workers are idle): they run here through one run_many call (eight
 * small signatures in lanes, about 20 us), and their done() are called in
 * order. Any other batch goes to the workers, on every core.
 */
void pool_kick(Pool *p);

/* jobs were submitted since the last pool_kick() */
bool pool_unkicked(const Pool *p);

/**
 * pool_reap() - call done() for each job finished so far, in completion
 * order.
 * @p: the pool
 *
 * The eventfd's callback does this; a loop that is awake anyway (busy
 * polling) may call it too, for example from a check handle.
 *
 * Return: the number of done() callbacks made.
 */
size_t pool_reap(Pool *p);

/* the worker threads' stack size */
#define POOL_STACK_SIZE (4u << 20)

/*
 * sigil_ed25519_verify_batch over the pool: the items in parts of at least
 * POOL_BATCH_PART_MIN (a multiple of it, but the last), one part a worker.
 * valid[] and the result are those of one sigil_ed25519_verify_batch call
 * on the same arguments, for every input (each item's valid[] is that of
 * sigil_ed25519_verify with the policy; the result is 0 iff all are 1).
 */
#define POOL_BATCH_PART_MIN 64u

typedef struct PoolVerifyBatch {
	PoolJob job; /* done: the caller's; run: pool_verify_batch() sets it */
	int *valid;
	const sigil_ed25519_item *items;
	size_t n;
	sigil_ed25519_policy policy;
	/* private to pool.c */
	atomic_int failed;
} PoolVerifyBatch;

/**
 * pool_verify_batch_parts() - the number of parts pool_verify_batch()
 * splits @n items into for @n_workers workers.
 * @n: the items
 * @n_workers: the workers
 *
 * Return: 1 .. min(n_workers, n / POOL_BATCH_PART_MIN), 1 when n is small.
 */
unsigned pool_verify_batch_parts(size_t n, unsigned n_workers);

/**
 * pool_verify_batch_range() - the items of one part.
 * @n: the items
 * @part: the part, 0 .. n_parts - 1
 * @n_parts: the parts
 * @startp: its first item
 * Return: its number of items.
 */
size_t pool_verify_batch_range(size_t n, unsigned part, unsigned n_parts, size_t *startp);

/**
 * pool_verify_batch() - submit a verify_batch split over the workers.
 * @p: the pool
 * @b: valid, items, n, policy and job.done set by the caller; the arrays
 *     are the caller's until job.done is called
 *
 * The caller kicks as for any job; job.done(&b->job) gets the answer with
 * pool_verify_batch_result().
 */
void pool_verify_batch(Pool *p, PoolVerifyBatch *b);

/* after job.done: 0 if every item is valid, -1 if not (as the one call) */
int pool_verify_batch_result(const PoolVerifyBatch *b);

#endif /* SIGIL_DAEMON_POOL_H */
