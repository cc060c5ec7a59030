/* SPDX-License-Identifier: MIT */
/*
 * pool-bench.c - the hand-off cost of sigild's crypto worker pool
 * (daemon/pool.c) against libuv's uv_queue_work and against running the
 * job on the loop thread, per job, beside a 6.5-8 us Ed25519 sign
 *
 * Not a test (speed is never asserted). One process, one libuv loop
 * thread that submits and collects, as sigild's would. Configurations:
 * - via: the pool with workers that spin (spin_us, default 50; with and
 *   without sched_yield between polls) or sleep at once (0), uv_queue_work (UV_THREADPOOL_SIZE = workers), or inline
 *   (the job runs on the loop thread: what sigild does today for sign);
 * - the loop blocks between wake-ups (uv_run ONCE) or polls (uv_run
 *   NOWAIT, as sigild's busy_poll_us does while requests come);
 * - window W: W jobs are submitted, and the next W when all are done;
 *   with the pool, one pool_kick per window ("batched") or one after each
 *   job ("unbatched"); W = 1 is a round trip (a depth-1 client);
 * - or 32 jobs kept in flight: each one done is resubmitted at once, and
 *   the pool kicked once per loop iteration (a check handle): the steady
 *   state of a loaded daemon;
 * - job: empty, or one sigil_ed25519_sign_expanded of 64 bytes.
 * Every configuration runs for --ms (default 200) per round; the rounds
 * (--rounds, default 7) interleave all configurations, the order rotating
 * each round. Per configuration: wall ns per job, the loop thread's CPU ns
 * per job (CLOCK_THREAD_CPUTIME_ID) and the process's CPU ns per job
 * (getrusage: workers included, spinning too), as the median [min .. max]
 * of the rounds.
 *
 * Usage: pool-bench [--rounds R] [--ms MS] [--workers N] [--spin-us US]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include <sigil/crypto.h>

#include "pool.h"

#define WINDOW_MAX 64
#define ROUNDS_MAX 64

typedef enum { VIA_POOL_SPIN, VIA_POOL_SLEEP, VIA_UV, VIA_INLINE, VIA_POOL_SPIN_NOYIELD } Via;

typedef struct Cfg {
	const char *name;
	Via via;
	bool loop_poll;
	bool sign;
	unsigned window;
	bool kick_each;
	bool pipeline; /* keep window jobs in flight: each done one is resubmitted */
	double wall[ROUNDS_MAX], loop_cpu[ROUNDS_MAX], proc_cpu[ROUNDS_MAX];
} Cfg;

typedef struct Bench Bench;

typedef struct BJob {
	PoolJob job;
	uv_work_t work;
	Bench *b;
	uint8_t sig[64];
} BJob;

struct Bench {
	uv_loop_t loop;
	uv_check_t check; /* pipeline: one pool_kick per loop iteration */
	Pool *pool_spin, *pool_sleep, *pool_noyield;
	const Cfg *cfg;
	BJob jobs[WINDOW_MAX];
	unsigned outstanding;
	uint64_t n_done;
	uint64_t deadline_ns;
	bool stop;
};

static sigil_ed25519_expanded bench_key;
static uint8_t bench_msg[64];

static uint64_t now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t proc_cpu_ns(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
	       ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static void bjob_compute(BJob *j, bool sign)
{
	if (sign)
		sigil_ed25519_sign_expanded(j->sig, bench_msg, sizeof bench_msg, &bench_key);
	else
		j->sig[0]++;
}

static void window_start(Bench *b);

static Pool *bench_pool(const Bench *b)
{
	const Cfg *c = b->cfg;

	return c->via == VIA_POOL_SPIN ? b->pool_spin : c->via == VIA_POOL_SLEEP ? b->pool_sleep : b->pool_noyield;
}

static void bench_work_cb(uv_work_t *w);
static void bench_after_cb(uv_work_t *w, int status);

static void bjob_finished(BJob *j)
{
	Bench *b = j->b;

	b->n_done++;
	if (b->cfg->pipeline && now_ns(CLOCK_MONOTONIC) < b->deadline_ns) {
		if (b->cfg->via == VIA_UV) {
			if (uv_queue_work(&b->loop, &j->work, bench_work_cb, bench_after_cb) < 0)
				abort();
		} else {
			pool_submit(bench_pool(b), &j->job); /* kicked by the check handle */
		}
		return;
	}
	if (--b->outstanding == 0) {
		if (b->cfg->pipeline)
			b->stop = true;
		else
			window_start(b);
	}
}

static void bench_on_check(uv_check_t *h)
{
	Bench *b = h->data;

	if (b->cfg && b->cfg->pipeline && b->cfg->via != VIA_UV)
		pool_kick(bench_pool(b));
}

static void pool_run_cb(PoolJob *pj, unsigned part, unsigned n_parts)
{
	BJob *j = (BJob *)pj;

	(void)part;
	(void)n_parts;
	bjob_compute(j, j->b->cfg->sign);
}

static void pool_done_cb(PoolJob *pj)
{
	bjob_finished((BJob *)pj);
}

static void bench_work_cb(uv_work_t *w)
{
	BJob *j = w->data;

	bjob_compute(j, j->b->cfg->sign);
}

static void bench_after_cb(uv_work_t *w, int status)
{
	(void)status;
	bjob_finished(w->data);
}

static void window_start(Bench *b)
{
	const Cfg *c = b->cfg;
	Pool *p = bench_pool(b);

	if (now_ns(CLOCK_MONOTONIC) >= b->deadline_ns) {
		b->stop = true;
		return;
	}
	b->outstanding = c->window;
	for (unsigned i = 0; i < c->window; i++) {
		BJob *j = &b->jobs[i];

		if (c->via == VIA_UV) {
			if (uv_queue_work(&b->loop, &j->work, bench_work_cb, bench_after_cb) < 0)
				abort();
			continue;
		}
		pool_submit(p, &j->job);
		if (c->kick_each)
			pool_kick(p);
	}
	if (c->via != VIA_UV && !c->kick_each)
		pool_kick(p);
}

static void run_cfg(Bench *b, Cfg *c, unsigned round, unsigned ms)
{
	uint64_t t0 = now_ns(CLOCK_MONOTONIC), l0 = now_ns(CLOCK_THREAD_CPUTIME_ID), p0 = proc_cpu_ns();

	b->cfg = c;
	b->n_done = 0;
	b->stop = false;
	b->deadline_ns = t0 + (uint64_t)ms * 1000000u;
	if (c->via == VIA_INLINE) {
		while (now_ns(CLOCK_MONOTONIC) < b->deadline_ns) {
			for (unsigned i = 0; i < c->window; i++)
				bjob_compute(&b->jobs[i], c->sign);
			b->n_done += c->window;
		}
	} else {
		window_start(b);
		while (!b->stop)
			uv_run(&b->loop, c->loop_poll ? UV_RUN_NOWAIT : UV_RUN_ONCE);
	}
	uint64_t t1 = now_ns(CLOCK_MONOTONIC), l1 = now_ns(CLOCK_THREAD_CPUTIME_ID), p1 = proc_cpu_ns();
	c->wall[round] = (double)(t1 - t0) / (double)b->n_done;
	c->loop_cpu[round] = (double)(l1 - l0) / (double)b->n_done;
	c->proc_cpu[round] = (double)(p1 - p0) / (double)b->n_done;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void summary(const double *v, unsigned n, double *med, double *lo, double *hi)
{
	double s[ROUNDS_MAX];

	memcpy(s, v, n * sizeof *v);
	qsort(s, n, sizeof *s, cmp_double);
	*med = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	*lo = s[0];
	*hi = s[n - 1];
}

static void print_fig(const double *v, unsigned n)
{
	double med, lo, hi;

	summary(v, n, &med, &lo, &hi);
	printf(" %.2f [%.2f .. %.2f] |", med / 1000, lo / 1000, hi / 1000);
}

/* ---- verify_batch of BATCH_N signatures: split, against one worker ---- */

#define BATCH_N 4096

typedef struct BatchBench {
	PoolVerifyBatch vb;
	bool done;
} BatchBench;

static sigil_ed25519_item batch_items[BATCH_N];
static int batch_valid[BATCH_N];

static void batch_make(void)
{
	static uint8_t pk[8][32], sig[BATCH_N][64], msg[BATCH_N][64];
	uint8_t sk[8][64], seed[32] = { 0 };

	for (int k = 0; k < 8; k++) {
		seed[0] = (uint8_t)(k + 10);
		sigil_ed25519_keypair_from_seed(pk[k], sk[k], seed);
	}
	for (unsigned i = 0; i < BATCH_N; i++) {
		memset(msg[i], (int)i, sizeof msg[i]);
		msg[i][0] = (uint8_t)(i >> 8);
		sigil_ed25519_sign(sig[i], msg[i], sizeof msg[i], sk[i % 8]);
		batch_items[i] = (sigil_ed25519_item){ pk[i % 8], sig[i], msg[i], sizeof msg[i] };
	}
	sigil_wipe(sk, sizeof sk);
}

static void batch_done(PoolJob *j)
{
	((BatchBench *)j)->done = true;
}

/* wall ns of one verify_batch of BATCH_N through p (the loop waits) */
static double batch_once(uv_loop_t *loop, Pool *p)
{
	BatchBench bb = { .vb = { .job = POOL_JOB_INIT(NULL, batch_done), .valid = batch_valid,
		                  .items = batch_items, .n = BATCH_N, .policy = SIGIL_ED25519_ZIP215 } };
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);

	pool_verify_batch(p, &bb.vb);
	pool_kick(p);
	while (!bb.done)
		uv_run(loop, UV_RUN_ONCE);
	if (pool_verify_batch_result(&bb.vb) != 0) {
		fprintf(stderr, "pool-bench: verify_batch failed on valid signatures\n");
		exit(1);
	}
	return (double)(now_ns(CLOCK_MONOTONIC) - t0);
}

/* the machine's CPU ticks from /proc/stat: all, and idle + iowait */
static int machine_ticks(unsigned long long *total, unsigned long long *idle)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");

	if (f == NULL)
		return -1;
	int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
	               &v[5], &v[6], &v[7]);
	fclose(f);
	if (n < 5)
		return -1;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*idle = v[3] + v[4];
	return 0;
}

static void loadavg(char *out, size_t n)
{
	FILE *f = fopen("/proc/loadavg", "r");

	out[0] = 0;
	if (f) {
		if (fgets(out, (int)n, f) == NULL)
			out[0] = 0;
		fclose(f);
	}
	out[strcspn(out, "\n")] = 0;
}

static Cfg cfgs[64];
static unsigned n_cfgs;

static void add_cfg(Via via, bool poll, bool sign, unsigned window, bool kick_each, bool pipeline)
{
	static const char *const vias[] = { "pool spin + yield", "pool sleep", "uv_queue_work", "inline",
		                            "pool spin, no yield" };
	static char names[64][96];
	Cfg *c = &cfgs[n_cfgs];

	snprintf(names[n_cfgs], sizeof names[0], "%s, %s, %s, %s %u%s", vias[via],
	         via == VIA_INLINE ? "-" : poll ? "loop polls" : "loop blocks", sign ? "sign" : "empty",
	         pipeline ? "in flight" : "window", window,
	         window > 1 && !pipeline && via != VIA_UV && via != VIA_INLINE ?
	                 (kick_each ? ", kick per job" : ", one kick") : "");
	*c = (Cfg){ .name = names[n_cfgs], .via = via, .loop_poll = poll, .sign = sign, .window = window,
		    .kick_each = kick_each, .pipeline = pipeline };
	n_cfgs++;
}

static void add(Via via, bool poll, bool sign, unsigned window, bool kick_each)
{
	add_cfg(via, poll, sign, window, kick_each, false);
}

int main(int argc, char **argv)
{
	unsigned rounds = 7, ms = 200, workers = 0, spin_us = 50;
	Bench *b = calloc(1, sizeof *b);
	uint8_t seed[32] = { 1, 2, 3 };
	char env[32];

	for (int i = 1; i < argc; i++) {
		if (i + 1 < argc && strcmp(argv[i], "--rounds") == 0)
			rounds = (unsigned)atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--ms") == 0)
			ms = (unsigned)atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--workers") == 0)
			workers = (unsigned)atoi(argv[++i]);
		else if (i + 1 < argc && strcmp(argv[i], "--spin-us") == 0)
			spin_us = (unsigned)atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: pool-bench [--rounds R] [--ms MS] [--workers N] [--spin-us US]\n");
			return 2;
		}
	}
	if (b == NULL || rounds < 1 || rounds > ROUNDS_MAX || ms < 1)
		return 2;
	sigil_ed25519_expand(&bench_key, seed);
	if (uv_loop_init(&b->loop) < 0)
		return 1;
	uv_check_init(&b->loop, &b->check);
	b->check.data = b;
	uv_check_start(&b->check, bench_on_check);
	uv_unref((uv_handle_t *)&b->check);
	if (pool_new(&b->pool_spin, &b->loop, workers, spin_us) < 0 ||
	    pool_new(&b->pool_sleep, &b->loop, workers, 0) < 0 ||
	    pool_new(&b->pool_noyield, &b->loop, workers, spin_us) < 0)
		return 1;
	pool_set_spin_yield(b->pool_spin, true); /* "pool spin": with sched_yield */
	workers = pool_workers(b->pool_spin);
	snprintf(env, sizeof env, "%u", workers);
	setenv("UV_THREADPOOL_SIZE", env, 1); /* before libuv's pool starts */
	for (unsigned i = 0; i < WINDOW_MAX; i++) {
		b->jobs[i].job = (PoolJob)POOL_JOB_INIT(pool_run_cb, pool_done_cb);
		b->jobs[i].work.data = &b->jobs[i];
		b->jobs[i].b = b;
	}

	for (int sign = 1; sign >= 0; sign--) {
		add(VIA_INLINE, false, sign, 1, false);
		for (int poll = 0; poll < 2; poll++) {
			add(VIA_POOL_SPIN, poll, sign, 1, false);
			add(VIA_POOL_SPIN_NOYIELD, poll, sign, 1, false);
			add(VIA_POOL_SLEEP, poll, sign, 1, false);
			add(VIA_UV, poll, sign, 1, false);
		}
		for (int poll = 0; poll < 2; poll++) {
			add(VIA_POOL_SPIN, poll, sign, 16, false);
			add(VIA_POOL_SPIN, poll, sign, 16, true);
			add(VIA_POOL_SPIN_NOYIELD, poll, sign, 16, false);
			add(VIA_POOL_SLEEP, poll, sign, 16, false);
			add(VIA_UV, poll, sign, 16, false);
		}
		/* the steady state of a loaded daemon: 32 jobs always in flight,
		 * each done one resubmitted, one kick per loop iteration */
		for (int poll = 0; poll < 2; poll++) {
			add_cfg(VIA_POOL_SLEEP, poll, sign, 32, false, true);
			add_cfg(VIA_POOL_SPIN_NOYIELD, poll, sign, 32, false, true);
			add_cfg(VIA_UV, poll, sign, 32, false, true);
		}
	}

	unsigned long long tot0 = 0, idle0 = 0, tot1 = 0, idle1 = 0;
	char load0[64], load1[64];

	loadavg(load0, sizeof load0);
	machine_ticks(&tot0, &idle0);

	/* verify_batch: the pool's workers against a pool of one, interleaved */
	Pool *pool_one;
	double batch_n[ROUNDS_MAX], batch_1[ROUNDS_MAX], batch_ratio[ROUNDS_MAX];

	if (pool_new(&pool_one, &b->loop, 1, spin_us) < 0)
		return 1;
	batch_make();
	batch_once(&b->loop, b->pool_noyield);
	batch_once(&b->loop, pool_one);
	for (unsigned r = 0; r < rounds; r++) {
		double x = 0, y = 0;

		for (int i = 0; i < 3; i++) {
			x += batch_once(&b->loop, r % 2 ? b->pool_noyield : pool_one);
			y += batch_once(&b->loop, r % 2 ? pool_one : b->pool_noyield);
		}
		batch_n[r] = (r % 2 ? x : y) / 3;
		batch_1[r] = (r % 2 ? y : x) / 3;
		batch_ratio[r] = batch_n[r] / batch_1[r] * 1000; /* print_fig divides by 1000 */
	}

	/* warm up every configuration once (threads started, caches) */
	for (unsigned k = 0; k < n_cfgs; k++)
		run_cfg(b, &cfgs[k], 0, 20);
	for (unsigned r = 0; r < rounds; r++)
		for (unsigned k = 0; k < n_cfgs; k++)
			run_cfg(b, &cfgs[(k + r * 5) % n_cfgs], r, ms);

	machine_ticks(&tot1, &idle1);
	loadavg(load1, sizeof load1);
	printf("pool-bench: %u workers, spin_us %u, %u rounds of %u ms each, %ld CPUs online\n", workers,
	       spin_us, rounds, ms, sysconf(_SC_NPROCESSORS_ONLN));
	printf("machine during the run (/proc/stat): %.0f%% idle; load average before %s, after %s\n",
	       tot1 > tot0 ? 100.0 * (double)(idle1 - idle0) / (double)(tot1 - tot0) : -1.0, load0, load1);
	printf("us per job, median [min .. max] of the rounds\n\n");
	printf("| configuration | wall | loop thread CPU | process CPU |\n|---|---:|---:|---:|\n");
	for (unsigned k = 0; k < n_cfgs; k++) {
		printf("| %s |", cfgs[k].name);
		print_fig(cfgs[k].wall, rounds);
		print_fig(cfgs[k].loop_cpu, rounds);
		print_fig(cfgs[k].proc_cpu, rounds);
		printf("\n");
	}
	printf("\n| verify_batch of %u signatures (zip215), wall ms | %u workers | 1 worker | ratio |\n|---|---:|---:|---:|\n| median [min .. max] |",
	       BATCH_N, workers);
	for (unsigned r = 0; r < rounds; r++) {
		batch_n[r] /= 1000;
		batch_1[r] /= 1000;
	}
	print_fig(batch_n, rounds);
	print_fig(batch_1, rounds);
	print_fig(batch_ratio, rounds);
	printf("\n");
	pool_free(pool_one);
	pool_free(b->pool_spin);
	pool_free(b->pool_sleep);
	pool_free(b->pool_noyield);
	uv_close((uv_handle_t *)&b->check, NULL);
	uv_run(&b->loop, UV_RUN_DEFAULT);
	uv_loop_close(&b->loop);
	sigil_wipe(&bench_key, sizeof bench_key);
	free(b);
	return 0;
}
