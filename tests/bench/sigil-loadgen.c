/* SPDX-License-Identifier: MIT */
/*
 * sigil-loadgen.c - load generator for sigild (issue 11): throughput and
 * per-request latency over the daemon's socket, with N connections (one
 * thread each) and a pipelining depth D. Not a test: it measures and prints.
 *
 * Usage: sigil-loadgen [--socket PATH] [--connections N] [--depth D]
 *                      [--op sign|verify|dh|verify_batch|key.public] [--seconds S]
 *                      [--key LABEL] [--batch N] [--msg-size N] [--json]
 *        sigil-loadgen --ssh-agent --socket PATH [--connections N] ...
 *        sigil-loadgen --op inproc-sign|inproc-verify|inproc-dh [--seconds S]
 *
 * sign/dh use the key LABEL (created if missing: Ed25519 for sign and
 * verify, X25519 for dh). verify checks a signature the daemon made once.
 * verify_batch sends one verify_batch request of --batch items (distinct
 * messages) per request, policy zip215 (the batch equation; strict verifies
 * each item on its own). key.public asks for the key's public key: the
 * same round trip through the operations core with no crypto, the floor
 * under every other op's figure. --ssh-agent speaks the ssh-agent protocol to a
 * stock ssh-agent (or sigild's agent socket): SIGN_REQUEST with its first
 * Ed25519 identity, depth 1 (as ssh does). The inproc-* ops time the crypto
 * call sigild makes for one request, in this process, on one thread, and
 * report both wall time and the thread's CPU time per operation.
 *
 * Latency: depth 1 times each request from send to its answer. With depth
 * D > 1 each connection sends D pipelined requests (sigil_client_sign_many /
 * verify_many, window D) and waits for all D: every request of the round is
 * given the round's time, an upper bound of its own latency (libsigil does
 * not expose per-answer times). dh and verify_batch have no pipelined call
 * in libsigil: they run at depth 1.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

enum op { OP_SIGN, OP_VERIFY, OP_DH, OP_VERIFY_BATCH, OP_PUBLIC, OP_IN_SIGN, OP_IN_VERIFY, OP_IN_DH };
static const char *const op_names[] = { "sign", "verify", "dh", "verify_batch", "key.public",
	                                "inproc-sign", "inproc-verify", "inproc-dh" };

static struct {
	const char *socket;
	const char *key;
	enum op op;
	int conns;
	int depth;
	int batch;
	size_t msg_size;
	double seconds;
	bool json;
	bool ssh_agent;
} opt = { NULL, "loadgen", OP_SIGN, 1, 1, 64, 64, 5.0, false, false };

static atomic_bool stop_flag;
static pthread_barrier_t start_barrier;

/* public data every sigild thread shares (verify, verify_batch) */
static uint8_t v_pk[32];
static uint8_t *v_msgs; /* opt.batch messages of opt.msg_size bytes */
static uint8_t (*v_sigs)[64];
/* ssh-agent mode: the identity's key blob */
static uint8_t agent_blob[256];
static size_t agent_blob_len;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, const char *why)
{
	fprintf(stderr, "sigil-loadgen: %s: %s\n", what, why);
	exit(1);
}

/* latencies in ns, growing array */
typedef struct lat_vec {
	uint64_t *v;
	size_t n, cap;
} lat_vec;

static void lat_push(lat_vec *l, uint64_t ns, size_t times)
{
	if (l->n + times > l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 65536;

		while (cap < l->n + times)
			cap *= 2;
		l->v = realloc(l->v, cap * sizeof(*l->v));
		if (!l->v)
			die("latencies", "out of memory");
		l->cap = cap;
	}
	for (size_t i = 0; i < times; i++)
		l->v[l->n++] = ns;
}

typedef struct worker {
	pthread_t t;
	int id;
	lat_vec lat;
	uint64_t requests; /* answered requests */
	const char *err;   /* first failure, or NULL */
} worker;

/* ---------- sigild (libsigil) ---------- */

static sigil_client *connect_sigild(void)
{
	sigil_client *c = NULL;
	sigil_error e = sigil_client_connect(&c, opt.socket, 10000);

	if (e != SIGIL_EOK) {
		fprintf(stderr, "sigil-loadgen: connect %s: %s\n", opt.socket ? opt.socket : "(default)",
		        c ? sigil_client_errmsg(c) : sigil_client_strerror(e));
		exit(1);
	}
	return c;
}

/* makes sure the key exists with the type the op needs; fills v_* for verify */
static void prepare_sigild(void)
{
	sigil_client *c = connect_sigild();
	sigil_key_type want = opt.op == OP_DH ? SIGIL_KEY_X25519 : SIGIL_KEY_ED25519;
	sigil_key_info ki;
	sigil_error e = sigil_client_key_public(c, &ki, opt.key);

	if (e == SIGIL_ENOT_FOUND)
		e = sigil_client_key_generate(c, &ki, want, opt.key, 0);
	if (e != SIGIL_EOK)
		die(opt.key, sigil_client_errmsg(c));
	if (ki.type != want)
		die(opt.key, want == SIGIL_KEY_X25519 ? "dh needs an X25519 key (use another --key)"
		                                       : "sign/verify need an Ed25519 key (use another --key)");
	memcpy(v_pk, ki.public_key, 32);
	if (opt.op == OP_VERIFY || opt.op == OP_VERIFY_BATCH) {
		int n = opt.op == OP_VERIFY ? 1 : opt.batch;

		v_msgs = malloc((size_t)n * opt.msg_size + 1);
		v_sigs = malloc((size_t)n * 64);
		if (!v_msgs || !v_sigs)
			die("prepare", "out of memory");
		for (int i = 0; i < n; i++) {
			uint8_t *m = v_msgs + (size_t)i * opt.msg_size;

			for (size_t j = 0; j < opt.msg_size; j++)
				m[j] = (uint8_t)(i * 131 + j * 7 + 1);
			e = sigil_client_sign(c, v_sigs[i], opt.key, SIGIL_SIGN_PURE, m, opt.msg_size, NULL, 0);
			if (e != SIGIL_EOK)
				die("sign (preparing verify)", sigil_client_errmsg(c));
			if (sigil_ed25519_verify(v_sigs[i], m, opt.msg_size, v_pk, SIGIL_ED25519_STRICT) != 0)
				die("sign (preparing verify)", "the daemon's signature does not verify");
		}
	}
	sigil_client_free(c);
}

static void *sigild_worker(void *arg)
{
	worker *w = arg;
	sigil_client *c = connect_sigild();
	size_t d = (size_t)opt.depth, ms = opt.msg_size;
	uint8_t *msg = calloc(d, ms + 1);
	sigil_sign_request *sr = calloc(d, sizeof(*sr));
	sigil_verify_request *vr = calloc(d, sizeof(*vr));
	sigil_verify_item *items = calloc((size_t)opt.batch, sizeof(*items));
	int *valid = calloc((size_t)opt.batch, sizeof(*valid));
	uint64_t seq = 0;

	if (!msg || !sr || !vr || !items || !valid)
		die("worker", "out of memory");
	for (size_t i = 0; i < d; i++) {
		sr[i] = (sigil_sign_request){ .label = opt.key, .mode = SIGIL_SIGN_PURE,
			                      .message = msg + i * ms, .message_len = ms };
		vr[i] = (sigil_verify_request){ .public_key = v_pk, .signature = v_sigs ? v_sigs[0] : NULL,
			                        .mode = SIGIL_SIGN_PURE, .message = v_msgs, .message_len = ms,
			                        .policy = SIGIL_POLICY_STRICT };
	}
	for (int i = 0; i < opt.batch && v_sigs; i++)
		items[i] = (sigil_verify_item){ v_pk, v_sigs[i], v_msgs + (size_t)i * ms, ms };
	pthread_barrier_wait(&start_barrier);
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		uint64_t t0, t1;
		sigil_error e = SIGIL_EOK;
		size_t done = 1;

		/* distinct messages for sign: thread id and a counter */
		for (size_t i = 0; i < d && ms >= 16; i++) {
			uint64_t v = seq++;

			memcpy(msg + i * ms, &w->id, sizeof(w->id));
			memcpy(msg + i * ms + 8, &v, 8);
		}
		t0 = now_ns();
		switch (opt.op) {
		case OP_SIGN:
			if (d == 1) {
				e = sigil_client_sign(c, sr[0].signature, opt.key, SIGIL_SIGN_PURE, msg, ms, NULL, 0);
			} else {
				e = sigil_client_sign_many(c, sr, d, d);
				for (size_t i = 0; i < d && e == SIGIL_EOK; i++)
					e = sr[i].error;
				done = d;
			}
			break;
		case OP_VERIFY:
			if (d == 1) {
				int ok = 0;

				e = sigil_client_verify(c, &ok, v_pk, v_sigs[0], SIGIL_SIGN_PURE, v_msgs, ms, NULL, 0,
				                        SIGIL_POLICY_STRICT);
				if (e == SIGIL_EOK && ok != 1)
					w->err = "verify answered invalid for a valid signature";
			} else {
				e = sigil_client_verify_many(c, vr, d, d);
				for (size_t i = 0; i < d && e == SIGIL_EOK; i++) {
					e = vr[i].error;
					if (vr[i].valid != 1)
						w->err = "verify answered invalid for a valid signature";
				}
				done = d;
			}
			break;
		case OP_DH: {
			uint8_t shared[32];

			e = sigil_client_dh(c, shared, opt.key, v_pk); /* its own public key: a valid point */
			sigil_wipe(shared, sizeof(shared));
			break;
		}
		case OP_PUBLIC: {
			sigil_key_info ki;

			e = sigil_client_key_public(c, &ki, opt.key);
			if (e == SIGIL_EOK && memcmp(ki.public_key, v_pk, 32) != 0)
				w->err = "key.public answered another public key";
			break;
		}
		case OP_VERIFY_BATCH:
			e = sigil_client_verify_batch(c, valid, items, (size_t)opt.batch, SIGIL_POLICY_ZIP215);
			for (int i = 0; i < opt.batch && e == SIGIL_EOK; i++)
				if (valid[i] != 1)
					w->err = "verify_batch answered invalid for a valid signature";
			break;
		default:
			break;
		}
		t1 = now_ns();
		if (e != SIGIL_EOK && !w->err)
			w->err = sigil_client_errmsg(c)[0] ? strdup(sigil_client_errmsg(c)) : sigil_client_strerror(e);
		if (w->err)
			break;
		lat_push(&w->lat, t1 - t0, done);
		w->requests += done;
	}
	sigil_client_free(c);
	free(msg);
	free(sr);
	free(vr);
	free(items);
	free(valid);
	return NULL;
}

/* ---------- ssh-agent protocol ---------- */

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen(path) >= sizeof(sa.sun_path))
		die(path, "cannot make a socket for it");
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die(path, strerror(errno));
	return fd;
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static int io_all(int fd, void *p, size_t n, bool wr)
{
	while (n > 0) {
		ssize_t k = wr ? write(fd, p, n) : read(fd, p, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		p = (uint8_t *)p + k;
		n -= (size_t)k;
	}
	return 0;
}

/* one message out, one answer in; returns the answer's length or -1 */
static long agent_roundtrip(int fd, const uint8_t *req, size_t len, uint8_t *ans, size_t cap)
{
	uint8_t l[4];
	uint32_t n;

	if (io_all(fd, (void *)req, len, true) < 0 || io_all(fd, l, 4, false) < 0)
		return -1;
	n = get_u32(l);
	if (n == 0 || n > cap || io_all(fd, ans, n, false) < 0)
		return -1;
	return (long)n;
}

/* REQUEST_IDENTITIES: the first ssh-ed25519 identity's blob */
static void prepare_agent(void)
{
	static uint8_t ans[1 << 16];
	const uint8_t req[5] = { 0, 0, 0, 1, 11 };
	int fd = connect_unix(opt.socket);
	long n = agent_roundtrip(fd, req, sizeof(req), ans, sizeof(ans));
	size_t off = 5;
	uint32_t nkeys;

	if (n < 5 || ans[0] != 12)
		die(opt.socket, "no IDENTITIES_ANSWER to REQUEST_IDENTITIES");
	nkeys = get_u32(ans + 1);
	for (uint32_t k = 0; k < nkeys; k++) {
		uint32_t bl, cl;

		if (off + 4 > (size_t)n || (bl = get_u32(ans + off)) > (size_t)n - off - 4)
			break;
		if (off + 8 + bl > (size_t)n || (cl = get_u32(ans + off + 4 + bl)) > (size_t)n - off - 8 - bl)
			break;
		if (bl == 51 && bl <= sizeof(agent_blob) && !memcmp(ans + off + 4, "\0\0\0\x0bssh-ed25519", 15)) {
			memcpy(agent_blob, ans + off + 4, bl);
			agent_blob_len = bl;
			memcpy(v_pk, agent_blob + 19, 32);
			break;
		}
		off += 8 + bl + cl;
	}
	close(fd);
	if (!agent_blob_len)
		die(opt.socket, "the agent holds no ssh-ed25519 identity (ssh-add one)");
}

static void *agent_worker(void *arg)
{
	worker *w = arg;
	int fd = connect_unix(opt.socket);
	size_t ms = opt.msg_size, len = 0;
	uint8_t *req = malloc(4 + 1 + 4 + agent_blob_len + 4 + ms + 4), ans[512];
	uint8_t *data;
	uint64_t seq = 0;

	if (!req)
		die("worker", "out of memory");
	req[4] = 13; /* SSH_AGENTC_SIGN_REQUEST */
	put_u32(req + 5, (uint32_t)agent_blob_len);
	memcpy(req + 9, agent_blob, agent_blob_len);
	len = 9 + agent_blob_len;
	put_u32(req + len, (uint32_t)ms);
	data = req + len + 4;
	memset(data, 0x5a, ms);
	len += 4 + ms;
	put_u32(req + len, 0); /* flags */
	len += 4;
	put_u32(req, (uint32_t)(len - 4));
	pthread_barrier_wait(&start_barrier);
	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		uint64_t t0, t1;
		long n;

		if (ms >= 16) {
			memcpy(data, &w->id, sizeof(w->id));
			memcpy(data + 8, &seq, 8);
			seq++;
		}
		t0 = now_ns();
		n = agent_roundtrip(fd, req, len, ans, sizeof(ans));
		t1 = now_ns();
		/* SIGN_RESPONSE: 14, string(string "ssh-ed25519", string sig[64]) = 88 bytes */
		if (n != 88 || ans[0] != 14) {
			w->err = "SIGN_REQUEST failed (no 88-byte SIGN_RESPONSE)";
			break;
		}
		if (w->requests == 0 && sigil_ed25519_verify(ans + 24, data, ms, v_pk, SIGIL_ED25519_STRICT) != 0) {
			w->err = "the agent's signature does not verify";
			break;
		}
		lat_push(&w->lat, t1 - t0, 1);
		w->requests++;
	}
	close(fd);
	free(req);
	return NULL;
}

/* ---------- in-process crypto ---------- */

static void inproc(void)
{
	uint8_t seed[32], sig[64], msg[4096], out[32], pk[32];
	sigil_ed25519_expanded ek;
	uint64_t n = 0, t0, t1, c0, c1, deadline;
	size_t ms = opt.msg_size;
	volatile uint8_t sink = 0;

	for (int i = 0; i < 32; i++)
		seed[i] = (uint8_t)(i * 29 + 3);
	memset(msg, 0x5a, ms);
	sigil_ed25519_expand(&ek, seed);
	sigil_ed25519_sign_expanded(sig, msg, ms, &ek);
	sigil_x25519_public(pk, seed);
	if (sigil_ed25519_verify(sig, msg, ms, ek.pk, SIGIL_ED25519_STRICT) != 0)
		die("inproc", "own signature does not verify");
	c0 = cpu_ns();
	t0 = now_ns();
	deadline = t0 + (uint64_t)(opt.seconds * 1e9);
	do {
		for (int k = 0; k < 64; k++) {
			switch (opt.op) {
			case OP_IN_SIGN:
				msg[0] = (uint8_t)n; /* a new message each time (verify keeps its valid one) */
				sigil_ed25519_sign_expanded(sig, msg, ms, &ek);
				sink ^= sig[0];
				break;
			case OP_IN_VERIFY:
				sink ^= (uint8_t)sigil_ed25519_verify(sig, msg, ms, ek.pk, SIGIL_ED25519_STRICT);
				break;
			default:
				if (sigil_x25519(out, seed, pk) != 0)
					die("inproc", "x25519 failed");
				sink ^= out[0];
				break;
			}
			n++;
		}
		t1 = now_ns();
	} while (t1 < deadline);
	c1 = cpu_ns();
	sigil_wipe(&ek, sizeof(ek));
	sigil_wipe(seed, sizeof(seed));
	sigil_wipe(out, sizeof(out));
	(void)sink;
	if (opt.json)
		printf("{\"op\":\"%s\",\"impl\":\"%s\",\"ops\":%" PRIu64 ",\"seconds\":%.3f,\"ns_per_op\":%.1f,"
		       "\"cpu_ns_per_op\":%.1f,\"ops_per_s\":%.1f}\n",
		       op_names[opt.op], sigil_crypto_impl(), n, (double)(t1 - t0) / 1e9, (double)(t1 - t0) / (double)n,
		       (double)(c1 - c0) / (double)n, (double)n * 1e9 / (double)(t1 - t0));
	else
		printf("%s (%s): %" PRIu64 " in %.2f s: %.1f ns/op wall, %.1f ns/op CPU, %.0f op/s (one thread)\n",
		       op_names[opt.op], sigil_crypto_impl(), n, (double)(t1 - t0) / 1e9, (double)(t1 - t0) / (double)n,
		       (double)(c1 - c0) / (double)n, (double)n * 1e9 / (double)(t1 - t0));
}

/* ---------- main ---------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const lat_vec *l, double p)
{
	size_t i;

	if (l->n == 0)
		return 0;
	i = (size_t)(p * (double)(l->n - 1) + 0.5);
	return (double)l->v[i] / 1000.0;
}

static long parse_num(const char *s, const char *name, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "sigil-loadgen: %s wants an integer in [%ld, %ld], not \"%s\"\n", name, lo, hi, s);
		exit(2);
	}
	return v;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: sigil-loadgen [--socket PATH] [--connections N] [--depth D]\n"
	           "                     [--op sign|verify|dh|verify_batch|key.public|\n"
	           "                      inproc-sign|inproc-verify|inproc-dh]\n"
	           "                     [--seconds S] [--key LABEL] [--batch N] [--msg-size N] [--json]\n"
	           "                     [--ssh-agent]\n");
}

int main(int argc, char **argv)
{
	worker *w;
	lat_vec all = { 0 };
	uint64_t total = 0, t0, t1;
	double el;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		bool used = true;

		if (!strcmp(a, "--json")) {
			opt.json = true;
			continue;
		} else if (!strcmp(a, "--ssh-agent")) {
			opt.ssh_agent = true;
			continue;
		} else if (!strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		}
		if (!v) {
			usage(stderr);
			return 2;
		}
		if (!strcmp(a, "--socket"))
			opt.socket = v;
		else if (!strcmp(a, "--key"))
			opt.key = v;
		else if (!strcmp(a, "--connections"))
			opt.conns = (int)parse_num(v, a, 1, 4096);
		else if (!strcmp(a, "--depth"))
			opt.depth = (int)parse_num(v, a, 1, 4096);
		else if (!strcmp(a, "--batch"))
			opt.batch = (int)parse_num(v, a, 1, 4096);
		else if (!strcmp(a, "--msg-size"))
			opt.msg_size = (size_t)parse_num(v, a, 16, 48L << 20);
		else if (!strcmp(a, "--seconds")) {
			char *end;

			opt.seconds = strtod(v, &end);
			if (end == v || *end || !(opt.seconds > 0 && opt.seconds <= 3600))
				die("--seconds", "wants a number in (0, 3600]");
		} else if (!strcmp(a, "--op")) {
			size_t k;

			for (k = 0; k < sizeof(op_names) / sizeof(op_names[0]); k++)
				if (!strcmp(v, op_names[k]))
					break;
			if (k == sizeof(op_names) / sizeof(op_names[0]))
				die("--op", "unknown operation");
			opt.op = (enum op)k;
		} else
			used = false;
		if (!used) {
			usage(stderr);
			return 2;
		}
		i++;
	}
	if (opt.op >= OP_IN_SIGN) {
		if (opt.msg_size > 4096)
			die("--msg-size", "in-process operations take at most 4096 bytes");
		inproc();
		return 0;
	}
	if (opt.ssh_agent) {
		if (opt.msg_size > 4096)
			die("--msg-size", "the ssh-agent measurement takes at most 4096 bytes");
		if (!opt.socket)
			die("--ssh-agent", "needs --socket");
		if (opt.op != OP_SIGN || opt.depth != 1)
			die("--ssh-agent", "measures sign at depth 1 only");
		prepare_agent();
	} else {
		if ((opt.op == OP_DH || opt.op == OP_VERIFY_BATCH || opt.op == OP_PUBLIC) && opt.depth != 1)
			die("--depth", "dh, verify_batch and key.public run at depth 1 (libsigil has no pipelined call for them)");
		prepare_sigild();
	}

	w = calloc((size_t)opt.conns, sizeof(*w));
	if (!w || pthread_barrier_init(&start_barrier, NULL, (unsigned)opt.conns + 1))
		die("start", "out of memory");
	for (int i = 0; i < opt.conns; i++) {
		w[i].id = i;
		if (pthread_create(&w[i].t, NULL, opt.ssh_agent ? agent_worker : sigild_worker, &w[i]))
			die("start", "pthread_create failed");
	}
	pthread_barrier_wait(&start_barrier);
	t0 = now_ns();
	{
		struct timespec ts = { (time_t)opt.seconds, (long)((opt.seconds - (double)(time_t)opt.seconds) * 1e9) };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	atomic_store(&stop_flag, true);
	for (int i = 0; i < opt.conns; i++)
		pthread_join(w[i].t, NULL);
	t1 = now_ns();
	el = (double)(t1 - t0) / 1e9;
	for (int i = 0; i < opt.conns; i++) {
		if (w[i].err)
			die(opt.ssh_agent ? "ssh-agent" : op_names[opt.op], w[i].err);
		total += w[i].requests;
		for (size_t k = 0; k < w[i].lat.n; k++)
			lat_push(&all, w[i].lat.v[k], 1);
		free(w[i].lat.v);
	}
	if (total == 0)
		die("run", "no request was answered");
	qsort(all.v, all.n, sizeof(*all.v), cmp_u64);
	{
		double rps = (double)total / el;
		int items = opt.op == OP_VERIFY_BATCH ? opt.batch : 1;
		const char *target = opt.ssh_agent ? "ssh-agent" : "sigild";

		if (opt.json)
			printf("{\"target\":\"%s\",\"op\":\"%s\",\"connections\":%d,\"depth\":%d,\"batch\":%d,"
			       "\"seconds\":%.3f,\"requests\":%" PRIu64 ",\"requests_per_s\":%.1f,\"items_per_s\":%.1f,"
			       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
			       "\"msg_size\":%zu}\n",
			       target, op_names[opt.op], opt.conns, opt.depth, items, el, total, rps, rps * items,
			       pct_us(&all, 0.5), pct_us(&all, 0.9), pct_us(&all, 0.99), pct_us(&all, 0.999),
			       pct_us(&all, 1.0), opt.msg_size);
		else
			printf("%s %s: %d connection(s), depth %d, %d item(s)/request: %" PRIu64
			       " requests in %.2f s = %.0f req/s, %.0f items/s; "
			       "latency p50 %.1f us, p90 %.1f us, p99 %.1f us, p99.9 %.1f us\n",
			       target, op_names[opt.op], opt.conns, opt.depth, items, total, el, rps, rps * items,
			       pct_us(&all, 0.5), pct_us(&all, 0.9), pct_us(&all, 0.99), pct_us(&all, 0.999));
	}
	free(all.v);
	free(w);
	return 0;
}
