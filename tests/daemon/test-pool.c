/* SPDX-License-Identifier: MIT */
/*
 * test-pool.c - sigild's crypto worker pool (daemon/pool.c) driven by a real
 * libuv loop: storms of jobs, split jobs, shutdown with jobs queued, one
 * and many workers, and verify_batch in parts against one call
 *
 * Assertions run on the loop thread only (cmocka is not thread-safe): a
 * job's run() records what it saw, its done() checks it. CI also runs this
 * under ThreadSanitizer (-Db_sanitize=thread).
 */
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "pool.h"

#include <sigil/crypto.h>

/* ---- a storm of jobs from the loop ------------------------------------ */

typedef struct StormJob {
	PoolJob job;
	struct Storm *storm;
	unsigned id;
	unsigned n_parts;
	atomic_uint part_runs[8]; /* runs of each part */
	pthread_t worker;         /* the worker that ran it (jobs in one part) */
	uint64_t finish_ticket;   /* per worker: its count of parts run before this one */
	atomic_bool on_loop;      /* a run() on the loop thread (wrong) */
	uint64_t work;            /* something for run() to compute */
	uint64_t result;
} StormJob;

typedef struct Storm {
	Pool *pool;
	uv_loop_t loop;
	uv_idle_t idle;
	uv_check_t check;     /* reap: also collect from a check handle (a polling loop) */
	bool reap;
	pthread_t loop_thread;
	StormJob *jobs;
	unsigned n_jobs, submitted, finished;
	unsigned max_batch;   /* jobs submitted per loop iteration: 1 .. max_batch */
	bool split;           /* some jobs in 2 .. 8 parts */
	unsigned *order;      /* done() order: job ids */
	unsigned *done_calls;
	bool bad_thread;      /* done() off the loop thread */
} Storm;

static _Thread_local uint64_t tl_runs; /* parts run by this worker */

static void storm_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	StormJob *s = (StormJob *)j;
	uint64_t x = s->id;

	for (uint64_t i = 0; i < s->work; i++) /* a little work, so jobs overlap */
		x = x * 6364136223846793005u + 1442695040888963407u;
	if (part < 8 && n_parts == s->n_parts)
		atomic_fetch_add(&s->part_runs[part], 1);
	if (pthread_equal(pthread_self(), s->storm->loop_thread))
		atomic_store(&s->on_loop, true);
	if (n_parts == 1) { /* the parts of a split job run at once: no shared plain writes */
		s->worker = pthread_self();
		s->finish_ticket = tl_runs;
		s->result = x;
	}
	tl_runs++;
}

static void storm_done(PoolJob *j)
{
	StormJob *s = (StormJob *)j;
	Storm *st = s->storm;

	if (!pthread_equal(pthread_self(), st->loop_thread))
		st->bad_thread = true;
	st->order[st->finished++] = s->id;
	st->done_calls[s->id]++;
}

static void storm_on_idle(uv_idle_t *h)
{
	Storm *st = h->data;

	unsigned n = 1 + (unsigned)th_rand_below(st->max_batch);
	for (unsigned i = 0; i < n && st->submitted < st->n_jobs; i++) {
		StormJob *s = &st->jobs[st->submitted++];

		if (st->split && th_rand_below(4) == 0) {
			s->n_parts = 2 + (unsigned)th_rand_below(7);
			pool_split(st->pool, &s->job, s->n_parts);
		} else {
			s->n_parts = 1;
			pool_submit(st->pool, &s->job);
		}
	}
	pool_kick(st->pool);
	if (st->submitted == st->n_jobs)
		uv_idle_stop(h);
}

static void storm_on_check(uv_check_t *h)
{
	Storm *st = h->data;

	pool_reap(st->pool);
}

static void storm(unsigned n_workers, unsigned spin_us, unsigned n_jobs, unsigned max_batch, bool split)
{
	Storm st = { .n_jobs = n_jobs, .max_batch = max_batch, .split = split,
		     .reap = th_rand_below(2) == 0 };

	st.jobs = calloc(n_jobs, sizeof *st.jobs);
	st.order = calloc(n_jobs, sizeof *st.order);
	st.done_calls = calloc(n_jobs, sizeof *st.done_calls);
	assert_non_null(st.jobs);
	assert_non_null(st.order);
	assert_non_null(st.done_calls);
	st.loop_thread = pthread_self();
	assert_int_equal(uv_loop_init(&st.loop), 0);
	assert_int_equal(pool_new(&st.pool, &st.loop, n_workers, spin_us), 0);
	if (n_workers)
		assert_int_equal(pool_workers(st.pool), n_workers);
	for (unsigned i = 0; i < n_jobs; i++) {
		st.jobs[i].job = (PoolJob)POOL_JOB_INIT(storm_run, storm_done);
		st.jobs[i].storm = &st;
		st.jobs[i].id = i;
		st.jobs[i].work = th_rand_below(4) == 0 ? th_rand_below(20000) : 0;
	}
	uv_idle_init(&st.loop, &st.idle);
	st.idle.data = &st;
	uv_idle_start(&st.idle, storm_on_idle);
	uv_check_init(&st.loop, &st.check);
	st.check.data = &st;
	if (st.reap) {
		uv_check_start(&st.check, storm_on_check);
		uv_unref((uv_handle_t *)&st.check);
	}

	/* the pool holds the loop while jobs are pending, and only then */
	assert_int_equal(uv_run(&st.loop, UV_RUN_DEFAULT), 0);

	assert_int_equal(st.submitted, n_jobs);
	assert_int_equal(st.finished, n_jobs);
	assert_int_equal(pool_pending(st.pool), 0);
	assert_false(st.bad_thread);
	for (unsigned i = 0; i < n_jobs; i++) {
		StormJob *s = &st.jobs[i];

		assert_int_equal(st.done_calls[i], 1);
		assert_false(atomic_load(&s->on_loop));
		for (unsigned k = 0; k < 8; k++)
			assert_int_equal(atomic_load(&s->part_runs[k]), k < s->n_parts ? 1 : 0);
	}
	/* completion order: the jobs one worker finished reach done() in the
	 * order it finished them; with one worker that is the submit order */
	for (unsigned a = 0; a < n_jobs; a++) {
		StormJob *x = &st.jobs[st.order[a]];

		if (x->n_parts != 1)
			continue;
		for (unsigned b = a + 1; b < n_jobs && b < a + 64; b++) {
			StormJob *y = &st.jobs[st.order[b]];

			if (y->n_parts == 1 && pthread_equal(x->worker, y->worker))
				assert_true(x->finish_ticket < y->finish_ticket);
		}
	}
	if (pool_workers(st.pool) == 1)
		for (unsigned i = 0; i < n_jobs; i++)
			assert_int_equal(st.order[i], i);

	pool_free(st.pool);
	uv_close((uv_handle_t *)&st.idle, NULL);
	uv_close((uv_handle_t *)&st.check, NULL);
	assert_int_equal(uv_run(&st.loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&st.loop), 0);
	free(st.jobs);
	free(st.order);
	free(st.done_calls);
}

static void test_storm_one_worker(void **state)
{
	(void)state;
	th_rng_reset("storm one worker");
	storm(1, 50, 20000, 40, false);
	storm(1, 0, 5000, 40, false);
}

static void test_storm_two_workers(void **state)
{
	(void)state;
	th_rng_reset("storm two workers");
	storm(2, 50, 20000, 40, false);
	storm(2, 0, 20000, 3, false);
}

static void test_storm_many_workers(void **state)
{
	(void)state;
	th_rng_reset("storm many workers");
	storm(16, 20, 20000, 100, false);
	storm(7, 0, 10000, 100, false);
}

static void test_storm_split(void **state)
{
	(void)state;
	th_rng_reset("storm split");
	storm(1, 0, 3000, 20, true);
	storm(3, 50, 10000, 20, true);
	storm(8, 0, 10000, 20, true);
}

/* n_workers = 0: one per CPU this process may run on */
static void test_workers_default(void **state)
{
	cpu_set_t set;
	uv_loop_t loop;
	Pool *p;

	(void)state;
	assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 0, 50), 0);
	assert_int_equal(pool_workers(p), (unsigned)CPU_COUNT(&set));
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	storm(0, 50, 2000, 10, true);
}

/* on one CPU: one worker by default, no polling, and everything works */
static void test_one_cpu(void **state)
{
	cpu_set_t all, one;
	uv_loop_t loop;
	Pool *p;

	(void)state;
	th_rng_reset("one cpu");
	assert_int_equal(sched_getaffinity(0, sizeof all, &all), 0);
	CPU_ZERO(&one);
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, &all)) {
			CPU_SET(c, &one);
			break;
		}
	assert_int_equal(sched_setaffinity(0, sizeof one, &one), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 0, 50), 0);
	assert_int_equal(pool_workers(p), 1);
	assert_int_equal(pool_spin_us(p), 0);
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	storm(0, 50, 3000, 20, true);
	storm(3, 50, 3000, 20, true);
	assert_int_equal(sched_setaffinity(0, sizeof all, &all), 0);
	if (CPU_COUNT(&all) > 1) { /* and polling is back with more CPUs */
		assert_int_equal(uv_loop_init(&loop), 0);
		assert_int_equal(pool_new(&p, &loop, 2, 50), 0);
		assert_int_equal(pool_spin_us(p), 50);
		pool_free(p);
		assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
		assert_int_equal(uv_loop_close(&loop), 0);
	}
}

/* ---- split parts run at the same time --------------------------------- */

typedef struct BarrierJob {
	PoolJob job;
	pthread_barrier_t barrier;
	atomic_uint parts;
	bool finished;
} BarrierJob;

/* every part waits for all the others: this returns only when the pool ran
 * the parts on n_parts workers at once (else the test hangs and meson's
 * timeout fails it) */
static void barrier_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	BarrierJob *b = (BarrierJob *)j;

	(void)part;
	(void)n_parts;
	pthread_barrier_wait(&b->barrier);
	atomic_fetch_add(&b->parts, 1);
}

static void barrier_done(PoolJob *j)
{
	((BarrierJob *)j)->finished = true;
}

static void test_split_parallel(void **state)
{
	static const unsigned workers[] = { 2, 4, 9 };

	(void)state;
	for (size_t w = 0; w < sizeof workers / sizeof workers[0]; w++) {
		for (int spin = 0; spin < 2; spin++) {
			BarrierJob b = { .job = POOL_JOB_INIT(barrier_run, barrier_done) };
			uv_loop_t loop;
			Pool *p;

			assert_int_equal(pthread_barrier_init(&b.barrier, NULL, workers[w]), 0);
			assert_int_equal(uv_loop_init(&loop), 0);
			assert_int_equal(pool_new(&p, &loop, workers[w], spin ? 50 : 0), 0);
			pool_split(p, &b.job, workers[w]);
			assert_int_equal(pool_pending(p), 1);
			pool_kick(p);
			assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
			assert_true(b.finished);
			assert_int_equal(atomic_load(&b.parts), workers[w]);
			assert_int_equal(pool_pending(p), 0);
			pool_free(p);
			assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
			assert_int_equal(uv_loop_close(&loop), 0);
			pthread_barrier_destroy(&b.barrier);
		}
	}
}

/* ---- a long job holds up no other ------------------------------------- */

typedef struct HolJob {
	PoolJob job;
	atomic_bool *gate;     /* the long job waits until the loop opens it */
	unsigned *short_done;  /* the short jobs' done() count */
	unsigned n_short;
	bool long_done;
} HolJob;

static void hol_long_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	HolJob *h = (HolJob *)j;

	(void)part;
	(void)n_parts;
	while (!atomic_load(h->gate))
		sched_yield();
}

static void hol_long_done(PoolJob *j)
{
	((HolJob *)j)->long_done = true;
}

static void hol_short_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	(void)j;
	(void)part;
	(void)n_parts;
}

static void hol_short_done(PoolJob *j)
{
	HolJob *h = (HolJob *)j;

	assert_false(atomic_load(h->gate)); /* before the long job was let go */
	if (++*h->short_done == h->n_short)
		atomic_store(h->gate, true);
}

/* a job that runs until every job queued after it is done (a 32 MiB
 * verify): with another worker free they all finish meanwhile; a pool
 * that queued some of them behind the long one would hang here (meson's
 * timeout fails it) */
static void test_long_job_holds_up_none(void **state)
{
	enum { N = 500 };
	static const unsigned workers[] = { 2, 3 };

	(void)state;
	for (size_t w = 0; w < sizeof workers / sizeof workers[0]; w++) {
		for (int spin = 0; spin < 2; spin++) {
			atomic_bool gate = false;
			unsigned short_done = 0;
			HolJob big = { .job = POOL_JOB_INIT(hol_long_run, hol_long_done), .gate = &gate };
			HolJob *small = calloc(N, sizeof *small);
			uv_loop_t loop;
			Pool *p;

			assert_non_null(small);
			assert_int_equal(uv_loop_init(&loop), 0);
			assert_int_equal(pool_new(&p, &loop, workers[w], spin ? 50 : 0), 0);
			pool_submit(p, &big.job);
			pool_kick(p);
			for (unsigned i = 0; i < N; i++) {
				small[i] = (HolJob){ .job = POOL_JOB_INIT(hol_short_run, hol_short_done),
					             .gate = &gate, .short_done = &short_done, .n_short = N };
				pool_submit(p, &small[i].job);
				if (i % 10 == 9)
					pool_kick(p);
			}
			pool_kick(p);
			assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
			assert_int_equal(short_done, N);
			assert_true(big.long_done);
			pool_free(p);
			assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
			assert_int_equal(uv_loop_close(&loop), 0);
			free(small);
		}
	}
}

/* ---- shutdown with jobs queued ---------------------------------------- */

typedef struct SlowJob {
	PoolJob job;
	uint8_t in[3][64], out[3][64]; /* one pair per part: the parts run at once */
	atomic_uint runs;
	unsigned dones;
} SlowJob;

static void slow_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	SlowJob *s = (SlowJob *)j;

	(void)n_parts;
	for (int i = 0; i < 50; i++) {
		sigil_sha512(s->out[part], s->in[part], sizeof s->in[part]);
		memcpy(s->in[part], s->out[part], sizeof s->in[part]);
	}
	atomic_fetch_add(&s->runs, 1);
}

static void slow_done(PoolJob *j)
{
	((SlowJob *)j)->dones++;
}

static void test_free_with_jobs_queued(void **state)
{
	static const unsigned workers[] = { 1, 2, 5 };
	enum { N = 3000 };

	(void)state;
	th_rng_reset("free with jobs queued");
	for (size_t w = 0; w < sizeof workers / sizeof workers[0]; w++) {
		SlowJob *jobs = calloc(N, sizeof *jobs);
		uv_loop_t loop;
		Pool *p;

		assert_non_null(jobs);
		assert_int_equal(uv_loop_init(&loop), 0);
		assert_int_equal(pool_new(&p, &loop, workers[w], w == 1 ? 0 : 50), 0);
		for (unsigned i = 0; i < N; i++) {
			jobs[i].job = (PoolJob)POOL_JOB_INIT(slow_run, slow_done);
			th_randbytes(jobs[i].in[0], sizeof jobs[i].in);
			if (i % 7 == 0)
				pool_split(p, &jobs[i].job, 3);
			else
				pool_submit(p, &jobs[i].job);
			if (i == N / 2)
				pool_kick(p); /* half handed over, half only submitted */
		}
		assert_int_equal(pool_pending(p), N);
		pool_free(p); /* without running the loop: every job runs and is done */
		for (unsigned i = 0; i < N; i++) {
			assert_int_equal(atomic_load(&jobs[i].runs), i % 7 == 0 ? 3 : 1);
			assert_int_equal(jobs[i].dones, 1);
		}
		assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
		assert_int_equal(uv_loop_close(&loop), 0);
		free(jobs);
	}
}

/* an idle pool does not hold the loop, and frees cleanly at once */
static void test_idle_pool(void **state)
{
	uv_loop_t loop;
	Pool *p;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 3, 50), 0);
	assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0);
	assert_int_equal(pool_reap(p), 0);
	pool_kick(p);
	pool_free(p);
	pool_free(NULL);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- done() submits the next job: a chain, each on its own turn ------- */

typedef struct ChainJob {
	PoolJob job;
	Pool *pool;
	unsigned left;
	unsigned runs;
	unsigned value;
	uintptr_t sp0;   /* the first done()'s stack position */
	size_t max_deep; /* how much deeper a later done() ran */
} ChainJob;

static void chain_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	ChainJob *c = (ChainJob *)j;

	(void)part;
	(void)n_parts;
	c->value = c->value * 3 + 1; /* written by a worker, read by the next */
	c->runs++;
}

static void chain_done(PoolJob *j)
{
	ChainJob *c = (ChainJob *)j;
	char here;
	uintptr_t sp = (uintptr_t)&here;

	if (!c->sp0)
		c->sp0 = sp;
	if (sp < c->sp0 && c->sp0 - sp > c->max_deep)
		c->max_deep = c->sp0 - sp;
	if (c->left-- == 0)
		return;
	pool_submit(c->pool, &c->job);
	pool_kick(c->pool);
}

static void test_chain(void **state)
{
	uv_loop_t loop;

	(void)state;
	for (int spin = 0; spin < 2; spin++) {
		ChainJob c = { .job = POOL_JOB_INIT(chain_run, chain_done), .left = 2999 };
		unsigned want = 0;

		assert_int_equal(uv_loop_init(&loop), 0);
		assert_int_equal(pool_new(&c.pool, &loop, 2, spin ? 50 : 0), 0);
		pool_submit(c.pool, &c.job);
		pool_kick(c.pool);
		assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
		for (int i = 0; i < 3000; i++)
			want = want * 3 + 1;
		assert_int_equal(c.runs, 3000);
		assert_int_equal(c.value, want);
		pool_free(c.pool);
		assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
		assert_int_equal(uv_loop_close(&loop), 0);
	}
}

/* ---- a lone short job runs in pool_kick(), on the loop thread --------- */

typedef struct HereJob {
	PoolJob job;
	pthread_t ran_on;
	bool done;
} HereJob;

static void here_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	(void)part;
	(void)n_parts;
	((HereJob *)j)->ran_on = pthread_self();
}

static void here_done(PoolJob *j)
{
	((HereJob *)j)->done = true;
}

static void test_lone_job_runs_here(void **state)
{
	uv_loop_t loop;
	Pool *p;
	HereJob a = { .job = POOL_JOB_INIT(here_run, here_done) }, b = a, c = a;

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 2, 0), 0);
	/* alone and marked: run and done before pool_kick() returns */
	a.job.here_if_alone = true;
	pool_submit(p, &a.job);
	assert_true(pool_unkicked(p));
	pool_kick(p);
	assert_false(pool_unkicked(p));
	assert_true(a.done);
	assert_true(pthread_equal(a.ran_on, pthread_self()));
	/* two marked jobs: both to the workers */
	a.done = false;
	b.job.here_if_alone = true;
	pool_submit(p, &a.job);
	pool_submit(p, &b.job);
	pool_kick(p);
	while (!a.done || !b.done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_false(pthread_equal(a.ran_on, pthread_self()));
	assert_false(pthread_equal(b.ran_on, pthread_self()));
	/* alone but not marked (a long job): to a worker */
	pool_submit(p, &c.job);
	pool_kick(p);
	assert_false(c.done);
	while (!c.done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_false(pthread_equal(c.ran_on, pthread_self()));
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* a chain of lone short jobs, each submitted and kicked by the done() of
 * the one before: all run in the first pool_kick(), one after the other
 * (no nesting: 3,000 deep would be 3,000 stack frames) */
static void test_chain_here(void **state)
{
	uv_loop_t loop;
	ChainJob c = { .job = POOL_JOB_INIT(chain_run, chain_done), .left = 2999 };
	unsigned want = 0;

	(void)state;
	c.job.here_if_alone = true;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&c.pool, &loop, 2, 0), 0);
	pool_submit(c.pool, &c.job);
	pool_kick(c.pool);
	for (int i = 0; i < 3000; i++)
		want = want * 3 + 1;
	assert_int_equal(c.runs, 3000);
	assert_int_equal(c.value, want);
	assert_true(c.max_deep < 4096);
	assert_false(pool_unkicked(c.pool));
	pool_free(c.pool);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- short jobs run together (run_many) -------------------------------- */

typedef struct ManyJob {
	PoolJob job;
	unsigned id;
	atomic_uint runs;      /* run() calls */
	atomic_uint many_runs; /* times it came in a run_many() call */
	unsigned group;        /* its run_many() call's n (0: none) */
	bool in_order;         /* its run_many() call had its jobs in queue order */
	bool done;
} ManyJob;

static void many_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	(void)part;
	(void)n_parts;
	atomic_fetch_add(&((ManyJob *)j)->runs, 1);
}

static void many_run_many(PoolJob *const *jobs, unsigned n)
{
	bool order = true;

	for (unsigned i = 1; i < n; i++)
		order = order && ((ManyJob *)jobs[i - 1])->id < ((ManyJob *)jobs[i])->id;
	for (unsigned i = 0; i < n; i++) {
		ManyJob *m = (ManyJob *)jobs[i];

		atomic_fetch_add(&m->many_runs, 1);
		m->group = n;
		m->in_order = order;
	}
}

static void many_run_other(PoolJob *const *jobs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		atomic_fetch_add(&((ManyJob *)jobs[i])->many_runs, 100); /* (never grouped with many_run_many's) */
}

static void many_done(PoolJob *j)
{
	((ManyJob *)j)->done = true;
}

/* jobs that share a run_many and are taken together run through one call,
 * in queue order, at most POOL_TAKE_MAX at a time; the others (no
 * run_many, another run_many, split, alone) through run(); each job
 * exactly once */
static void test_run_many(void **state)
{
	enum { N = 80 };
	uv_loop_t loop;
	Pool *p;
	ManyJob *jobs = calloc(N, sizeof(*jobs));
	unsigned grouped = 0, max_group = 0;

	(void)state;
	assert_non_null(jobs);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 1, 0), 0);
	for (unsigned i = 0; i < N; i++) {
		jobs[i].job = (PoolJob)POOL_JOB_INIT(many_run, many_done);
		jobs[i].id = i;
		jobs[i].job.here_if_alone = true;
		if (i % 5 != 4) /* every fifth job has none */
			jobs[i].job.run_many = i == 70 ? many_run_other : many_run_many;
		pool_submit(p, &jobs[i].job);
	}
	pool_kick(p); /* one batch: the worker sees all N queued */
	for (;;) {
		unsigned done = 0;

		for (unsigned i = 0; i < N; i++)
			done += jobs[i].done;
		if (done == N)
			break;
		uv_run(&loop, UV_RUN_ONCE);
	}
	for (unsigned i = 0; i < N; i++) {
		unsigned runs = atomic_load(&jobs[i].runs), many = atomic_load(&jobs[i].many_runs);

		assert_int_equal(runs + (many ? 1 : 0), 1); /* exactly once, one way */
		if (i % 5 == 4 || i == 70) {
			assert_int_equal(many, 0); /* no run_many, or alone with its own */
			continue;
		}
		if (many) {
			assert_int_equal(many, 1);
			assert_true(jobs[i].in_order);
			assert_true(jobs[i].group >= 2 && jobs[i].group <= POOL_TAKE_MAX);
			grouped++;
			if (jobs[i].group > max_group)
				max_group = jobs[i].group;
		}
	}
	/* 63 jobs with many_run_many, taken 32 at a time: most of them grouped */
	assert_true(grouped >= 48);
	assert_true(max_group >= 16);
	/* a lone job with run_many runs here through run() */
	ManyJob lone = { .job = POOL_JOB_INIT(many_run, many_done) };
	lone.job.here_if_alone = true;
	lone.job.run_many = many_run_many;
	pool_submit(p, &lone.job);
	pool_kick(p);
	assert_true(lone.done);
	assert_int_equal(atomic_load(&lone.runs), 1);
	assert_int_equal(atomic_load(&lone.many_runs), 0);
	/* nor beside a pending job of another kind (a long one on a worker) */
	ManyJob other = { .job = POOL_JOB_INIT(many_run, many_done) };
	lone.done = false;
	atomic_store(&lone.runs, 0);
	pool_submit(p, &other.job); /* (not short: to a worker) */
	pool_kick(p);
	pool_submit(p, &lone.job);
	pool_kick(p);
	assert_true(lone.done);
	assert_int_equal(atomic_load(&lone.runs), 1);
	while (!other.done)
		uv_run(&loop, UV_RUN_ONCE);
	/* but not while another job with a run_many is pending on the
	 * workers: then it goes to them, to be computed with the next ones */
	ManyJob busy = { .job = POOL_JOB_INIT(many_run, many_done) };
	busy.job.run_many = many_run_many; /* (not short: to a worker) */
	lone.done = false;
	atomic_store(&lone.runs, 0);
	pool_submit(p, &busy.job);
	pool_kick(p);
	pool_submit(p, &lone.job);
	pool_kick(p);
	assert_false(lone.done);
	while (!lone.done || !busy.done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_int_equal(atomic_load(&lone.runs) + atomic_load(&lone.many_runs), 1);
	pool_free(p);
	/* two workers, POOL_TAKE_MANY such jobs in one kick: one worker takes
	 * them all (beyond its share of half) into one call */
	assert_int_equal(pool_new(&p, &loop, 2, 0), 0);
	memset(jobs, 0, N * sizeof(*jobs));
	for (unsigned i = 0; i < POOL_TAKE_MANY; i++) {
		jobs[i].job = (PoolJob)POOL_JOB_INIT(many_run, many_done);
		jobs[i].id = i;
		jobs[i].job.here_if_alone = true;
		jobs[i].job.run_many = many_run_many;
		pool_submit(p, &jobs[i].job);
	}
	pool_kick(p);
	for (unsigned i = 0; i < POOL_TAKE_MANY; i++)
		while (!jobs[i].done)
			uv_run(&loop, UV_RUN_ONCE);
	for (unsigned i = 0; i < POOL_TAKE_MANY; i++) {
		assert_int_equal(atomic_load(&jobs[i].runs), 0);
		assert_int_equal(atomic_load(&jobs[i].many_runs), 1);
		assert_int_equal(jobs[i].group, POOL_TAKE_MANY);
	}
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	free(jobs);
}

/* a kick of 2 .. POOL_TAKE_MANY jobs, all here_in_group with one
 * run_many, while nothing else is pending, runs on the loop thread through
 * one run_many call, before pool_kick() returns; any other kick goes to
 * the workers */
static void group_make(ManyJob *jobs, unsigned n, unsigned first_id)
{
	for (unsigned i = 0; i < n; i++) {
		jobs[i] = (ManyJob){ .job = POOL_JOB_INIT(many_run, many_done), .id = first_id + i };
		jobs[i].job.here_if_alone = true;
		jobs[i].job.here_in_group = true;
		jobs[i].job.run_many = many_run_many;
	}
}

static void group_kick(Pool *p, ManyJob *jobs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		pool_submit(p, &jobs[i].job);
	pool_kick(p);
}

/* none of them ran in the kick: the workers run them (done() comes from
 * the loop's pool_reap) */
static void group_on_workers(uv_loop_t *loop, ManyJob *jobs, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		assert_false(jobs[i].done);
	for (unsigned i = 0; i < n; i++)
		while (!jobs[i].done)
			uv_run(loop, UV_RUN_ONCE);
}

static void test_group_here(void **state)
{
	enum { N = POOL_TAKE_MANY + 1 };
	uv_loop_t loop;
	Pool *p;
	ManyJob jobs[N], other = { .job = POOL_JOB_INIT(many_run, many_done) };

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 2, 0), 0);
	/* 2 .. POOL_TAKE_MANY of them: here, in one call, in order */
	for (unsigned n = 2; n <= POOL_TAKE_MANY; n++) {
		group_make(jobs, n, 0);
		group_kick(p, jobs, n);
		assert_false(pool_unkicked(p));
		for (unsigned i = 0; i < n; i++) {
			assert_true(jobs[i].done);
			assert_int_equal(atomic_load(&jobs[i].runs), 0);
			assert_int_equal(atomic_load(&jobs[i].many_runs), 1);
			assert_int_equal(jobs[i].group, n);
			assert_true(jobs[i].in_order);
		}
	}
	/* one alone: the lone rule, through run() */
	group_make(jobs, 1, 0);
	group_kick(p, jobs, 1);
	assert_true(jobs[0].done);
	assert_int_equal(atomic_load(&jobs[0].runs), 1);
	/* one more than POOL_TAKE_MANY: to the workers */
	group_make(jobs, N, 0);
	group_kick(p, jobs, N);
	group_on_workers(&loop, jobs, N);
	/* one of them not here_in_group (a longer message): to the workers */
	group_make(jobs, 4, 0);
	jobs[2].job.here_in_group = false;
	group_kick(p, jobs, 4);
	group_on_workers(&loop, jobs, 4);
	/* two run_many functions: to the workers */
	group_make(jobs, 4, 0);
	jobs[3].job.run_many = many_run_other;
	group_kick(p, jobs, 4);
	group_on_workers(&loop, jobs, 4);
	/* another job pending (its done() not yet called, as on a busy
	 * worker): to the workers */
	pool_submit(p, &other.job);
	pool_kick(p);
	group_make(jobs, 3, 0);
	group_kick(p, jobs, 3);
	group_on_workers(&loop, jobs, 3);
	while (!other.done)
		uv_run(&loop, UV_RUN_ONCE);
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- no signal lands on a thread while it computes ------------------- */

/* A signal handled on a thread that is computing would have the kernel
 * save that thread's registers (the vector ones included, by XSAVE) in a
 * frame on its stack, where they stay after the handler returns: secrets
 * in registers must not get there. So every signal is blocked on the
 * workers, and on the loop thread while pool_kick() runs a job there. */
typedef struct MaskJob {
	PoolJob job;
	bool all_blocked;
	bool done;
} MaskJob;

static bool all_signals_blocked(void)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM,
		                    SIGTERM, SIGCHLD, SIGCONT, SIGTSTP, SIGWINCH, SIGPROF };
	sigset_t cur;

	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &cur), 0);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		if (!sigismember(&cur, sigs[i]))
			return false;
	for (int s = SIGRTMIN; s <= SIGRTMAX; s++)
		if (!sigismember(&cur, s))
			return false;
	return true;
}

static void mask_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	(void)part;
	(void)n_parts;
	((MaskJob *)j)->all_blocked = all_signals_blocked();
}

static void mask_run_many(PoolJob *const *jobs, unsigned n)
{
	bool b = all_signals_blocked();

	for (unsigned i = 0; i < n; i++)
		((MaskJob *)jobs[i])->all_blocked = b;
}

static void mask_done(PoolJob *j)
{
	((MaskJob *)j)->done = true;
}

static void test_signals_blocked(void **state)
{
	uv_loop_t loop;
	Pool *p;
	MaskJob jobs[4];
	sigset_t none, before, after;

	(void)state;
	/* the loop thread's own mask: nothing blocked */
	sigemptyset(&none);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &none, &before), 0);
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 2, 0), 0);
	/* on a worker (not short) */
	jobs[0] = (MaskJob){ .job = POOL_JOB_INIT(mask_run, mask_done) };
	pool_submit(p, &jobs[0].job);
	pool_kick(p);
	while (!jobs[0].done)
		uv_run(&loop, UV_RUN_ONCE);
	assert_true(jobs[0].all_blocked);
	/* alone and short: on this thread, in pool_kick */
	jobs[0] = (MaskJob){ .job = POOL_JOB_INIT(mask_run, mask_done) };
	jobs[0].job.here_if_alone = true;
	pool_submit(p, &jobs[0].job);
	pool_kick(p);
	assert_true(jobs[0].done);
	assert_true(jobs[0].all_blocked);
	/* a group here, through run_many */
	for (int i = 0; i < 4; i++) {
		jobs[i] = (MaskJob){ .job = POOL_JOB_INIT(mask_run, mask_done) };
		jobs[i].job.here_if_alone = jobs[i].job.here_in_group = true;
		jobs[i].job.run_many = mask_run_many;
		pool_submit(p, &jobs[i].job);
	}
	pool_kick(p);
	for (int i = 0; i < 4; i++) {
		assert_true(jobs[i].done);
		assert_true(jobs[i].all_blocked);
	}
	/* and the loop thread's mask is its own again */
	assert_int_equal(pthread_sigmask(SIG_BLOCK, NULL, &after), 0);
	assert_false(sigismember(&after, SIGTERM));
	assert_false(sigismember(&after, SIGUSR1));
	assert_false(sigismember(&after, SIGHUP));
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	assert_int_equal(pthread_sigmask(SIG_SETMASK, &before, NULL), 0);
}

/* ---- verify_batch in parts -------------------------------------------- */

/* the parts of n items: contiguous, cover 0 .. n, at least
 * POOL_BATCH_PART_MIN items each, unit-aligned starts, at most n_workers */
static void test_batch_ranges(void **state)
{
	(void)state;
	for (size_t n = 0; n < 3000; n++) {
		for (unsigned w = 1; w <= 17; w++) {
			unsigned k = pool_verify_batch_parts(n, w);
			size_t next = 0;

			assert_true(k >= 1 && k <= w);
			if (n < 2 * POOL_BATCH_PART_MIN)
				assert_int_equal(k, 1);
			else
				assert_int_equal(k, w < n / POOL_BATCH_PART_MIN ? w : n / POOL_BATCH_PART_MIN);
			for (unsigned i = 0; i < k; i++) {
				size_t start, cnt = pool_verify_batch_range(n, i, k, &start);

				assert_int_equal(start, next);
				assert_int_equal(start % POOL_BATCH_PART_MIN, 0);
				if (k > 1)
					assert_true(cnt >= POOL_BATCH_PART_MIN);
				next = start + cnt;
			}
			assert_int_equal(next, n);
		}
	}
}

enum { BATCH_MAX = 4200 };

typedef struct BatchSet {
	uint8_t (*pk)[32], (*sig)[64], (*msg)[48];
	uint8_t bad_s[64]; /* S = L: not canonical */
	sigil_ed25519_item *items;
	int *want, *got;
} BatchSet;

typedef struct BatchRun {
	PoolVerifyBatch b;
	bool done;
} BatchRun;

static void batch_done(PoolJob *j)
{
	((BatchRun *)j)->done = true;
}

/* n signed messages under a few keys, of which about `bad` in 1000 are
 * corrupted in one of several ways */
static void batch_make(BatchSet *s, size_t n, unsigned bad)
{
	static const uint8_t L[32] = { 0xed, 0xd3, 0xf5, 0x5c, 0x1a, 0x63, 0x12, 0x58, 0xd6, 0x9c, 0xf7,
		                       0xa2, 0xde, 0xf9, 0xde, 0x14, 0,    0,    0,    0,    0,    0,
		                       0,    0,    0,    0,    0,    0,    0,    0,    0,    0x10 };
	uint8_t seeds[5][32], pks[5][32], sks[5][64];

	for (int k = 0; k < 5; k++) {
		th_randbytes(seeds[k], 32);
		sigil_ed25519_keypair_from_seed(pks[k], sks[k], seeds[k]);
	}
	for (size_t i = 0; i < n; i++) {
		int k = (int)th_rand_below(5);
		size_t mlen = th_rand_below(49);

		th_randbytes(s->msg[i], sizeof s->msg[i]);
		memcpy(s->pk[i], pks[k], 32);
		sigil_ed25519_sign(s->sig[i], s->msg[i], mlen, sks[k]);
		s->items[i] = (sigil_ed25519_item){ s->pk[i], s->sig[i], s->msg[i], mlen };
		if (th_rand_below(1000) >= bad)
			continue;
		switch (th_rand_below(6)) {
		case 0: s->sig[i][th_rand_below(32)] ^= (uint8_t)(1u << th_rand_below(8)); break; /* R */
		case 1: s->sig[i][32 + th_rand_below(31)] ^= (uint8_t)(1u << th_rand_below(8)); break; /* S */
		case 2: memcpy(s->sig[i] + 32, L, 32); break; /* S = L */
		case 3: s->pk[i][th_rand_below(32)] ^= (uint8_t)(1u << th_rand_below(8)); break;
		case 4:
			if (mlen)
				s->msg[i][th_rand_below(mlen)] ^= 1;
			else
				s->items[i].mlen = 1;
			break;
		default: s->items[i].pk = NULL; break;
		}
	}
	sigil_wipe(sks, sizeof sks);
	sigil_wipe(seeds, sizeof seeds);
}

/* one call against the pool's parts, with 1 .. 5 workers */
static void batch_compare(BatchSet *s, size_t n, sigil_ed25519_policy policy, Pool **pools, unsigned n_pools,
                          uv_loop_t *loop)
{
	memset(s->want, 0x55, BATCH_MAX * sizeof *s->want);
	int want_r = sigil_ed25519_verify_batch(s->want, s->items, n, policy);

	for (unsigned w = 0; w < n_pools; w++) {
		BatchRun run = { .b = { .job = POOL_JOB_INIT(NULL, batch_done), .valid = s->got,
			                .items = s->items, .n = n, .policy = policy } };

		memset(s->got, 0x55, BATCH_MAX * sizeof *s->got);
		pool_verify_batch(pools[w], &run.b);
		pool_kick(pools[w]);
		assert_int_equal(uv_run(loop, UV_RUN_DEFAULT), 0);
		assert_true(run.done);
		assert_int_equal(pool_verify_batch_result(&run.b), want_r);
		assert_memory_equal(s->got, s->want, BATCH_MAX * sizeof *s->got); /* untouched past n too */
	}
}

static void test_verify_batch_split(void **state)
{
	static const size_t sizes[] = { 0, 1, 63, 64, 127, 128, 129, 191, 200, 255, 256, 257, 300, 447, 448, 700, 1000, 1025, 4096, 4100 };
	static const unsigned bads[] = { 0, 1, 30, 1000 };
	BatchSet s;
	uv_loop_t loop;
	Pool *pools[5];

	(void)state;
	th_rng_reset("verify batch split");
	s.pk = calloc(BATCH_MAX, sizeof *s.pk);
	s.sig = calloc(BATCH_MAX, sizeof *s.sig);
	s.msg = calloc(BATCH_MAX, sizeof *s.msg);
	s.items = calloc(BATCH_MAX, sizeof *s.items);
	s.want = calloc(BATCH_MAX, sizeof *s.want);
	s.got = calloc(BATCH_MAX, sizeof *s.got);
	assert_true(s.pk && s.sig && s.msg && s.items && s.want && s.got);
	assert_int_equal(uv_loop_init(&loop), 0);
	for (unsigned w = 0; w < 5; w++)
		assert_int_equal(pool_new(&pools[w], &loop, w + 1, w % 2 ? 50 : 0), 0);

	for (size_t z = 0; z < sizeof sizes / sizeof sizes[0]; z++) {
		for (size_t b = 0; b < sizeof bads / sizeof bads[0]; b++) {
			/* large batches with few bad items: every bad item sends its
			 * chunk item by item, slow (and slower under valgrind) */
			if (sizes[z] >= 1000 && bads[b] != 1)
				continue;
			batch_make(&s, sizes[z], bads[b]);
			batch_compare(&s, sizes[z], SIGIL_ED25519_ZIP215, pools, 5, &loop);
			if (sizes[z] <= 300)
				batch_compare(&s, sizes[z], SIGIL_ED25519_STRICT, pools, 5, &loop);
		}
	}
	/* one bad item in a large batch, in each part of a 4-way split */
	for (int pos = 0; pos < 4; pos++) {
		batch_make(&s, 4096, 0);
		s.sig[pos * 1024 + (int)th_rand_below(1024)][5] ^= 0x10;
		batch_compare(&s, 4096, SIGIL_ED25519_ZIP215, pools, 5, &loop);
	}
	for (unsigned w = 0; w < 5; w++)
		pool_free(pools[w]);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
	free(s.pk);
	free(s.sig);
	free(s.msg);
	free(s.items);
	free(s.want);
	free(s.got);
}

/* the one call's answers to NULL arrays and n == 0, through the pool */
static void test_verify_batch_edge(void **state)
{
	uv_loop_t loop;
	Pool *p;
	sigil_ed25519_item items[200] = { 0 };
	int valid[200];

	(void)state;
	assert_int_equal(uv_loop_init(&loop), 0);
	assert_int_equal(pool_new(&p, &loop, 3, 0), 0);
	struct {
		int *valid;
		const sigil_ed25519_item *items;
		size_t n;
	} cases[] = {
		{ NULL, items, 200 }, { valid, NULL, 200 }, { NULL, NULL, 0 }, { valid, items, 0 },
		{ valid, items, 200 }, /* all NULL pk: all invalid */
	};
	for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
		int want[200], got[200];
		int want_r;

		memset(valid, 0x55, sizeof valid);
		want_r = sigil_ed25519_verify_batch(cases[c].valid, cases[c].items, cases[c].n,
		                                    SIGIL_ED25519_ZIP215);
		memcpy(want, valid, sizeof want);
		memset(valid, 0x55, sizeof valid);

		BatchRun run = { .b = { .job = POOL_JOB_INIT(NULL, batch_done), .valid = cases[c].valid,
			                .items = cases[c].items, .n = cases[c].n,
			                .policy = SIGIL_ED25519_ZIP215 } };
		pool_verify_batch(p, &run.b);
		pool_kick(p);
		assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
		assert_true(run.done);
		memcpy(got, valid, sizeof got);
		assert_int_equal(pool_verify_batch_result(&run.b), want_r);
		assert_memory_equal(got, want, sizeof got);
	}
	pool_free(p);
	assert_int_equal(uv_run(&loop, UV_RUN_DEFAULT), 0);
	assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_storm_one_worker),
		cmocka_unit_test(test_storm_two_workers),
		cmocka_unit_test(test_storm_many_workers),
		cmocka_unit_test(test_storm_split),
		cmocka_unit_test(test_workers_default),
		cmocka_unit_test(test_one_cpu),
		cmocka_unit_test(test_split_parallel),
		cmocka_unit_test(test_long_job_holds_up_none),
		cmocka_unit_test(test_free_with_jobs_queued),
		cmocka_unit_test(test_idle_pool),
		cmocka_unit_test(test_chain),
		cmocka_unit_test(test_lone_job_runs_here),
		cmocka_unit_test(test_chain_here),
		cmocka_unit_test(test_run_many),
		cmocka_unit_test(test_group_here),
		cmocka_unit_test(test_signals_blocked),
		cmocka_unit_test(test_batch_ranges),
		cmocka_unit_test(test_verify_batch_split),
		cmocka_unit_test(test_verify_batch_edge),
	};

	return th_run(tests);
}
