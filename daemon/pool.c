/* SPDX-License-Identifier: MIT */
/*
 * pool.c - sigild's crypto worker threads (pool.h)
 *
 * One queue, taken by every worker: a mutex and a condition variable, with
 * the counts of workers that poll (n_spinning) and that sleep (n_sleeping)
 * kept under the mutex. At most CPUs - 1 idle workers poll at a time (the
 * others sleep at once): pollers that outnumber the free CPUs take the CPU
 * the loop thread needs to collect their results (measured: pool-bench,
 * docs/throughput.md). The loop thread appends a whole batch under one
 * lock (pool_kick) and signals the condition variable only when no worker
 * polls; a polling worker sees the batch through the atomic `queued` count
 * and takes the mutex. A worker always looks at the queue under the mutex
 * before it sleeps, so no batch is left queued with every worker asleep.
 * One queue rather than one per worker: a long job (a 32 MiB verify) holds
 * up no other job while another worker is free, and the split parts go to
 * whichever workers are idle.
 *
 * Results: a lock-free stack of finished jobs (push by CAS, the loop thread
 * takes it all by exchange and reverses it into completion order). The
 * worker whose push finds the stack empty writes the pool's eventfd, which
 * the loop watches (uv_poll_t); the others' jobs ride along. Not
 * uv_async_t: libuv 1.44's loop spins (997 pauses, then sched_yield) on an
 * async handle whose sender is between its two steps, and on 2 vCPUs a
 * preempted worker made that spin 7% of sigild's CPU under load (perf,
 * docs/throughput.md). The loop reads the eventfd before it takes the
 * stack, so a push after the take writes it again. Every hand-over
 * between threads is an atomic operation or the mutex.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

struct Pool {
	uv_loop_t *loop;
	uv_poll_t async;       /* efd readable: a batch of finished jobs (pool_reap) */
	int efd;               /* eventfd: written by the worker that starts a batch */
	/* the loop thread's */
	PoolJob *pend_head, *pend_tail; /* submitted, not yet kicked */
	unsigned pend_parts;
	size_t pending;        /* submitted, done() not yet called */
	size_t pending_many;   /* of them, jobs with a run_many */
	bool referenced;       /* async is ref'd: jobs are pending */
	bool freeing;          /* in pool_free() */
	bool kicking;          /* pool_kick() runs a lone job here */
	/* shared: under lock */
	pthread_mutex_t lock;
	pthread_cond_t wake;
	PoolJob *head, *tail;  /* queued; a split job stays until its last part is taken */
	unsigned n_spinning;   /* idle workers polling `queued` */
	unsigned n_sleeping;   /* idle workers waiting on `wake` */
	/* shared: atomics */
	atomic_uint queued;    /* parts not yet taken (written under lock) */
	atomic_bool stopping;  /* pool_free(): exit once the queue is empty */
	_Atomic(PoolJob *) finished; /* stack of finished jobs, newest first */
	/* set at creation */
	uint64_t spin_ns;
	unsigned max_spinning; /* CPUs - 1: a poller never takes the loop thread's CPU */
	atomic_bool spin_yield; /* sched_yield() between polls (pool_set_spin_yield) */
	unsigned n_workers;
	unsigned n_started;
	pthread_t *threads;
};

/* Block every signal on this thread (the old mask in *old). A signal
 * handled on a thread that computes makes the kernel save the thread's
 * registers, vector registers included, in a frame on its stack, where
 * they stay after the handler returns: the registers of a signature hold
 * its secrets. So the workers never take signals (the loop thread takes
 * sigild's: libuv's handlers), and the loop thread blocks them while it
 * runs a job itself (pool_run_here). */
static void pool_signals_off(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, old);
}

static unsigned pool_cpus(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static uint64_t pool_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void pool_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

/* a worker: a job's last part is done; the loop thread hears of it */
static void pool_finish(Pool *p, PoolJob *j)
{
	if (atomic_fetch_sub_explicit(&j->parts_left, 1, memory_order_acq_rel) != 1)
		return;
	PoolJob *top = atomic_load_explicit(&p->finished, memory_order_relaxed);
	do {
		j->next = top;
	} while (!atomic_compare_exchange_weak_explicit(&p->finished, &top, j, memory_order_release,
	                                                memory_order_relaxed));
	if (top == NULL) { /* the first of a batch: one wake of the loop */
		uint64_t one = 1;
		ssize_t w;

		do
			w = write(p->efd, &one, sizeof one);
		while (w < 0 && errno == EINTR);
		/* (EAGAIN: the counter is full, so the loop is woken anyway) */
	}
}

/* under lock: take the next part of the head job; wake one more idle
 * worker when more is queued and none polls */
static PoolJob *pool_take(Pool *p, unsigned *partp)
{
	PoolJob *j = p->head;

	*partp = j->next_part++;
	if (j->next_part == j->n_parts) {
		p->head = j->next;
		if (p->head == NULL)
			p->tail = NULL;
	}
	unsigned left = atomic_load_explicit(&p->queued, memory_order_relaxed) - 1;
	atomic_store_explicit(&p->queued, left, memory_order_relaxed);
	if (left && p->n_spinning == 0 && p->n_sleeping)
		pthread_cond_signal(&p->wake);
	return j;
}

/* an idle worker, without the lock: poll until something is queued, the
 * pool stops, or spin_ns has passed */
static void pool_spin(Pool *p)
{
	uint64_t until = pool_now_ns() + p->spin_ns;

	for (;;) {
		for (int i = 0; i < 64; i++) {
			if (atomic_load_explicit(&p->queued, memory_order_relaxed) ||
			    atomic_load_explicit(&p->stopping, memory_order_relaxed))
				return;
			pool_cpu_relax();
		}
		if (pool_now_ns() >= until)
			return;
		if (atomic_load_explicit(&p->spin_yield, memory_order_relaxed))
			sched_yield(); /* a thread woken onto this CPU runs first */
	}
}

/* a worker: run the jobs it took; those of one part that share a
 * run_many, two or more of them, through one run_many call (in queue
 * order), the others one by one */
static void pool_run_chunk(PoolJob *const *chunk, const unsigned *part, unsigned n)
{
	PoolJob *many[POOL_TAKE_MAX];
	bool done[POOL_TAKE_MAX] = { false };

	for (unsigned i = 0; i < n; i++) {
		void (*fn)(PoolJob *const *, unsigned) = chunk[i]->run_many;
		unsigned k = 0;

		if (done[i] || !fn || chunk[i]->n_parts != 1)
			continue;
		for (unsigned j = i; j < n; j++)
			if (!done[j] && chunk[j]->run_many == fn && chunk[j]->n_parts == 1) {
				many[k++] = chunk[j];
				done[j] = true;
			}
		if (k < 2)
			done[i] = false; /* alone with its run_many: through run() */
		else
			fn(many, k);
	}
	for (unsigned i = 0; i < n; i++)
		if (!done[i])
			chunk[i]->run(chunk[i], part[i], chunk[i]->n_parts);
}

static void *pool_worker(void *arg)
{
	Pool *p = arg;

	pthread_mutex_lock(&p->lock);
	for (;;) {
		if (p->head) {
			/* short jobs a few at a time (this worker's share of the
			 * queue, at most POOL_TAKE_MAX): one lock per chunk */
			PoolJob *chunk[POOL_TAKE_MAX];
			unsigned part[POOL_TAKE_MAX], n = 0;
			unsigned share = (atomic_load_explicit(&p->queued, memory_order_relaxed) + p->n_workers - 1) /
			                 p->n_workers;

			/* jobs computed together (run_many: eight signatures in
			 * lanes cost about three single ones) are worth taking
			 * eight at a time even when the other workers get none */
			if (p->head->run_many && share < POOL_TAKE_MANY) {
				unsigned q = atomic_load_explicit(&p->queued, memory_order_relaxed);

				share = q < POOL_TAKE_MANY ? q : POOL_TAKE_MANY;
			}
			if (share > POOL_TAKE_MAX)
				share = POOL_TAKE_MAX;
			do
				chunk[n] = pool_take(p, &part[n]);
			while (++n < share && chunk[n - 1]->here_if_alone && p->head && p->head->here_if_alone &&
			       p->head->n_parts == 1);
			pthread_mutex_unlock(&p->lock);
			pool_run_chunk(chunk, part, n);
			/* then the results together: one wake of the loop */
			for (unsigned i = 0; i < n; i++)
				pool_finish(p, chunk[i]);
			pthread_mutex_lock(&p->lock);
			continue;
		}
		if (atomic_load_explicit(&p->stopping, memory_order_relaxed))
			break;
		if (p->spin_ns && p->n_spinning < p->max_spinning) {
			p->n_spinning++;
			pthread_mutex_unlock(&p->lock);
			pool_spin(p);
			pthread_mutex_lock(&p->lock);
			p->n_spinning--;
			if (p->head || atomic_load_explicit(&p->stopping, memory_order_relaxed))
				continue;
		}
		p->n_sleeping++;
		pthread_cond_wait(&p->wake, &p->lock);
		p->n_sleeping--;
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static void pool_on_async(uv_poll_t *h, int status, int events)
{
	Pool *p = h->data;
	uint64_t n;

	(void)status;
	(void)events;
	/* read first: a push after pool_reap's take writes it again */
	while (read(p->efd, &n, sizeof n) < 0 && errno == EINTR)
		;
	pool_reap(p);
}

static void pool_release(Pool *p)
{
	if (p->efd >= 0)
		close(p->efd);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p->threads);
	free(p);
}

static void pool_on_close(uv_handle_t *h)
{
	pool_release(h->data);
}

/* stop and join the workers that were started (the queue is empty or
 * every job in it is finished by them first) */
static void pool_join(Pool *p)
{
	pthread_mutex_lock(&p->lock);
	atomic_store_explicit(&p->stopping, true, memory_order_relaxed);
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->lock);
	for (unsigned i = 0; i < p->n_started; i++)
		pthread_join(p->threads[i], NULL);
	p->n_started = 0;
}

int pool_new(Pool **poolp, uv_loop_t *loop, unsigned n_workers, unsigned spin_us)
{
	pthread_attr_t attr;
	Pool *p;
	int r;

	unsigned cpus = pool_cpus();
	if (n_workers == 0)
		n_workers = cpus;
	p = calloc(1, sizeof *p);
	if (p == NULL)
		return -ENOMEM;
	p->threads = calloc(n_workers, sizeof *p->threads);
	if (p->threads == NULL) {
		free(p);
		return -ENOMEM;
	}
	p->loop = loop;
	p->n_workers = n_workers;
	p->spin_ns = cpus > 1 ? (uint64_t)spin_us * 1000 : 0;
	p->max_spinning = cpus - 1;
	atomic_init(&p->queued, 0);
	atomic_init(&p->stopping, false);
	atomic_init(&p->spin_yield, false);
	atomic_init(&p->finished, NULL);
	r = pthread_mutex_init(&p->lock, NULL);
	if (r) {
		free(p->threads);
		free(p);
		return -r;
	}
	r = pthread_cond_init(&p->wake, NULL);
	if (r) {
		pthread_mutex_destroy(&p->lock);
		free(p->threads);
		free(p);
		return -r;
	}
	p->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (p->efd < 0) {
		r = -errno;
		p->efd = -1;
		pool_release(p);
		return r;
	}
	r = uv_poll_init(loop, &p->async, p->efd);
	if (r < 0) {
		pool_release(p);
		return r;
	}
	p->async.data = p;
	r = uv_poll_start(&p->async, UV_READABLE, pool_on_async);
	if (r < 0) {
		uv_close((uv_handle_t *)&p->async, pool_on_close);
		return r;
	}
	uv_unref((uv_handle_t *)&p->async); /* held only while jobs are pending */

	r = -pthread_attr_init(&attr);
	if (r == 0)
		r = -pthread_attr_setstacksize(&attr, POOL_STACK_SIZE);
	/* the workers start with every signal blocked (they inherit this
	 * thread's mask): see pool_signals_off */
	sigset_t old;
	pool_signals_off(&old);
	for (unsigned i = 0; r == 0 && i < n_workers; i++) {
		r = -pthread_create(&p->threads[i], &attr, pool_worker, p);
		if (r == 0)
			p->n_started++;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (r) {
		pool_join(p);
		uv_close((uv_handle_t *)&p->async, pool_on_close);
		return r;
	}
	*poolp = p;
	return 0;
}

void pool_free(Pool *p)
{
	if (p == NULL)
		return;
	assert(!p->freeing);
	pool_kick(p);
	p->freeing = true;
	pool_join(p);
	pool_reap(p);
	assert(p->pending == 0);
	uv_close((uv_handle_t *)&p->async, pool_on_close);
}

void pool_set_spin_yield(Pool *p, bool yield)
{
	atomic_store_explicit(&p->spin_yield, yield, memory_order_relaxed);
}

unsigned pool_workers(const Pool *p)
{
	return p->n_workers;
}

unsigned pool_spin_us(const Pool *p)
{
	return (unsigned)(p->spin_ns / 1000);
}

size_t pool_pending(const Pool *p)
{
	return p->pending;
}

void pool_split(Pool *p, PoolJob *j, unsigned n_parts)
{
	assert(!p->freeing);
	assert(j->run && j->done);
	assert(n_parts >= 1 && n_parts <= POOL_PARTS_MAX);
	j->next = NULL;
	j->n_parts = n_parts;
	j->next_part = 0;
	atomic_store_explicit(&j->parts_left, n_parts, memory_order_relaxed);
	if (p->pend_tail)
		p->pend_tail->next = j;
	else
		p->pend_head = j;
	p->pend_tail = j;
	p->pend_parts += n_parts;
	p->pending_many += j->run_many != NULL;
	if (p->pending++ == 0 && !p->referenced) {
		uv_ref((uv_handle_t *)&p->async);
		p->referenced = true;
	}
}

void pool_submit(Pool *p, PoolJob *j)
{
	pool_split(p, j, 1);
}

/* on the loop thread: @j's parts all ran; off the pool's counts, then
 * its done() (which may free it, submit, kick) */
static void pool_retire(Pool *p, PoolJob *j)
{
	j->next = NULL;
	p->pending--;
	p->pending_many -= j->run_many != NULL;
	j->done(j);
}

/* no job pending any more: the eventfd's handle stops holding the loop */
static void pool_unref_if_idle(Pool *p)
{
	if (p->pending == 0 && p->referenced) {
		uv_unref((uv_handle_t *)&p->async);
		p->referenced = false;
	}
}

/* the short jobs of a kick, on the loop thread (pool_kick): one through
 * run(), two or more (with one run_many) through run_many; no longer on
 * the pending list */
static void pool_run_here(Pool *p, PoolJob *const *jobs, unsigned n)
{
	sigset_t old;

	for (unsigned i = 0; i < n; i++)
		atomic_store_explicit(&jobs[i]->parts_left, 0, memory_order_relaxed);
	pool_signals_off(&old);
	if (n == 1)
		jobs[0]->run(jobs[0], 0, 1);
	else
		jobs[0]->run_many(jobs, n);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	for (unsigned i = 0; i < n; i++)
		pool_retire(p, jobs[i]);
	pool_unref_if_idle(p);
}

/* the pending list to the workers' queue: one lock, at most one wake-up */
static void pool_hand_over(Pool *p)
{
	pthread_mutex_lock(&p->lock);
	if (p->tail)
		p->tail->next = p->pend_head;
	else
		p->head = p->pend_head;
	p->tail = p->pend_tail;
	atomic_store_explicit(&p->queued,
	                      atomic_load_explicit(&p->queued, memory_order_relaxed) + p->pend_parts,
	                      memory_order_relaxed);
	if (p->n_spinning == 0 && p->n_sleeping)
		pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	p->pend_head = p->pend_tail = NULL;
	p->pend_parts = 0;
}

/* may the lone job of a kick run here? A short one, and if the workers
 * compute its kind together (run_many), only when no other such job is
 * pending: while they work on some, it goes to them to be computed with
 * the next ones (cheaper together). Other pending jobs (a long verify on
 * a worker) do not hold it back: it would wait for a CPU that the busy
 * worker and the loop thread hold (measured: the worst sign latency
 * beside 32 MiB verifies went from 4.7 to 8.5 ms when it did). */
static bool pool_short(const Pool *p, const PoolJob *j)
{
	return j->here_if_alone && j->n_parts == 1 && !p->freeing && (!j->run_many || p->pending_many == 1);
}

/* may the jobs of a kick, two or more, run here together? All
 * here_in_group with one run_many, at most POOL_TAKE_MANY, and nothing
 * else pending: the workers are idle, so handing them over would cost
 * two wake-ups for work that takes about as long (measured: depth-1
 * signing at 4 and 8 connections, docs/throughput.md). Their number, or 0. */
static unsigned pool_group(const Pool *p, PoolJob **jobs)
{
	void (*fn)(PoolJob *const *, unsigned) = p->pend_head->run_many;
	unsigned n = 0;

	if (!fn || p->freeing)
		return 0;
	for (PoolJob *j = p->pend_head; j; j = j->next) {
		if (n == POOL_TAKE_MANY || !j->here_in_group || j->run_many != fn || j->n_parts != 1)
			return 0;
		jobs[n++] = j;
	}
	return n >= 2 && p->pending == n ? n : 0;
}

void pool_kick(Pool *p)
{
	/* a short job runs here when it is alone (measured: also running the
	 * first of a batch here while the workers take the rest gave 32 x 16
	 * signs 0.86x the throughput, docs/throughput.md); its done() may
	 * submit more (a resumed request) and kick: this kick hands those
	 * over too, without nesting */
	if (p->kicking)
		return;
	p->kicking = true;
	while (p->pend_head) {
		PoolJob *mine[POOL_TAKE_MANY];
		unsigned n = 0;

		if (p->pend_head == p->pend_tail && pool_short(p, p->pend_head))
			mine[n++] = p->pend_head;
		else
			n = pool_group(p, mine);
		if (n == 0) {
			pool_hand_over(p);
			break;
		}
		p->pend_head = p->pend_tail = NULL;
		p->pend_parts = 0;
		pool_run_here(p, mine, n);
	}
	p->kicking = false;
}

bool pool_unkicked(const Pool *p)
{
	return p->pend_head != NULL;
}

size_t pool_reap(Pool *p)
{
	PoolJob *j = atomic_exchange_explicit(&p->finished, NULL, memory_order_acquire);
	PoolJob *order = NULL;
	size_t n = 0;

	while (j) { /* newest first: reverse into completion order */
		PoolJob *next = j->next;
		j->next = order;
		order = j;
		j = next;
	}
	while (order) {
		PoolJob *next = order->next;

		pool_retire(p, order);
		n++;
		order = next;
	}
	pool_unref_if_idle(p);
	return n;
}

/* ---- verify_batch in parts ------------------------------------------- */

unsigned pool_verify_batch_parts(size_t n, unsigned n_workers)
{
	size_t k = n / POOL_BATCH_PART_MIN;

	if (k > n_workers)
		k = n_workers;
	if (k > POOL_PARTS_MAX)
		k = POOL_PARTS_MAX;
	return k ? (unsigned)k : 1;
}

/* Part i covers the units (POOL_BATCH_PART_MIN items; the last may be
 * short) U i / k .. U (i + 1) / k - 1 of the U units: every part starts on
 * a unit boundary and, with k <= n / POOL_BATCH_PART_MIN, holds at least
 * POOL_BATCH_PART_MIN items (a short last unit never stands alone: the last
 * part has at least two units then). */
size_t pool_verify_batch_range(size_t n, unsigned part, unsigned n_parts, size_t *startp)
{
	size_t units = (n + POOL_BATCH_PART_MIN - 1) / POOL_BATCH_PART_MIN;
	size_t a = units * part / n_parts * POOL_BATCH_PART_MIN;
	size_t b = units * (part + 1) / n_parts * POOL_BATCH_PART_MIN;

	if (b > n)
		b = n;
	*startp = a;
	return b - a;
}

static void pool_verify_batch_run(PoolJob *j, unsigned part, unsigned n_parts)
{
	PoolVerifyBatch *b = (PoolVerifyBatch *)j;
	size_t start, cnt;

	if (n_parts == 1) {
		start = 0;
		cnt = b->n; /* also n == 0 and NULL arrays: exactly the one call */
	} else {
		cnt = pool_verify_batch_range(b->n, part, n_parts, &start);
	}
	int r = sigil_ed25519_verify_batch(b->valid ? b->valid + start : NULL,
	                                   b->items ? b->items + start : NULL, cnt, b->policy);
	if (r)
		atomic_store_explicit(&b->failed, 1, memory_order_relaxed);
}

void pool_verify_batch(Pool *p, PoolVerifyBatch *b)
{
	unsigned k = 1;

	if (b->valid && b->items)
		k = pool_verify_batch_parts(b->n, p->n_workers);
	atomic_init(&b->failed, 0);
	b->job.run = pool_verify_batch_run;
	pool_split(p, &b->job, k);
}

int pool_verify_batch_result(const PoolVerifyBatch *b)
{
	return atomic_load_explicit(&b->failed, memory_order_relaxed) ? -1 : 0;
}
