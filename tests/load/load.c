/* SPDX-License-Identifier: MIT */
/*
 * load.c - load and abuse of the real sigild on a local Unix socket
 *
 * Usage: load SCENARIO   (SIGILD = path of sigild; meson sets it)
 *   concurrent  1,000 connections at once, each pipelining 5 sign requests;
 *               every signature is checked with libsodium
 *   churn       10,000 connections opened and closed in a loop (every
 *               100th says hello first and checks the answer)
 *   slowloris   50 connections sending a request one byte a second; the
 *               daemon (idle_timeout_s = 2) must close each within 5 s
 *   huge-frame  a frame header announcing 1 GiB: too_large, at once,
 *               without the body being read (RSS does not grow)
 *   random      200 connections of 4 KiB random bytes each (seeded)
 *   never-read  20 connections pipelining 4 MiB of requests and never
 *               reading: back-pressure must bound the daemon's memory
 *   disconnect  200 connections sending 20 signs each and closing at once,
 *               with the requests in flight
 *   unlock      a second sigild under a passphrase (Argon2id at libsodium's
 *               interactive cost): while one connection's unlock runs,
 *               another's hello and verify are answered before it (they
 *               are not stuck behind the key derivation), and its sign,
 *               sent while locked, waits and succeeds after the unlock
 * Every scenario checks, with its own daemon: a well-behaved client (hello
 * + sign, signature checked) gets correct answers during and after the
 * abuse; the daemon's fd count returns to its count before (within 15 s);
 * its peak RSS (VmHWM) stays under SIGIL_LOAD_MAX_RSS_MB (default 256;
 * 1024 when SIGIL_SANITIZE, passed by meson from b_sanitize, names a
 * sanitizer: ASan keeps up to 256 MiB of freed memory in quarantine)
 * and is printed; it is alive at the end and exits 0 on SIGTERM.
 * Counts and times are bounded: each scenario takes seconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigild-run.h"

static const char *config_text =
	"# tests/load\n"
	"max_connections = 1100\n"
	"idle_timeout_s = 2\n"
	"workers = 2\n"
	"max_request_size = 1048576\n";

static Sigild d;
static uint8_t probe_pk[32];

static int wait_fds(int want, int timeout_ms)
{
	int n = -1;

	for (uint64_t t0 = now_ms(); now_ms() - t0 < (uint64_t)timeout_ms;) {
		n = proc_fd_count(d.pid);
		if (n <= want)
			return n;
		usleep(20000);
	}
	return n;
}

static int connect_many(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		fds[i] = sigild_connect(&d);
		if (fds[i] < 0) {
			printf("# connection %d failed: %s\n", i, strerror(errno));
			for (int j = 0; j < i; j++)
				close(fds[j]);
			return -1;
		}
	}
	return 0;
}

/* Is sigild built with a sanitizer? meson passes get_option('b_sanitize')
 * as SIGIL_SANITIZE (tests/fuzz/meson.build). */
static bool sanitized(void)
{
	const char *san = getenv("SIGIL_SANITIZE");

	return san && *san && strcmp(san, "none") != 0;
}

/* ---- 1,000 concurrent connections pipelining signs ---- */
#define CONC_N 1000
#define CONC_K 5

static void conc_msg(char *out, size_t cap, uint64_t msgid)
{
	snprintf(out, cap, "load message %llu", (unsigned long long)msgid);
}

static void scenario_concurrent(void)
{
	static int fds[CONC_N];
	static RespReader rr[CONC_N];
	static int got[CONC_N];
	int bad = 0, done = 0, errors = 0;
	uint64_t t0;

	if (connect_many(fds, CONC_N) < 0) {
		tap_ok(false, "open %d connections", CONC_N);
		return;
	}
	tap_ok(true, "open %d connections", CONC_N);
	t0 = now_ms();
	for (int i = 0; i < CONC_N; i++) {
		msgpack_sbuffer sb;
		char msg[64];

		msgpack_sbuffer_init(&sb);
		for (int j = 0; j < CONC_K; j++) {
			uint64_t id = (uint64_t)i * CONC_K + (uint64_t)j;

			conc_msg(msg, sizeof(msg), id);
			req_sign(&sb, id, "probe", msg, strlen(msg));
		}
		if (write_all(fds[i], sb.data, sb.size) < 0)
			bad++;
		msgpack_sbuffer_destroy(&sb);
		resp_reader_init(&rr[i], fds[i]);
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
	}
	/* mid-load: the well-behaved client */
	tap_ok(probe(&d, probe_pk) == 0, "a well-behaved client is answered correctly during the load");
	while (done < CONC_N && now_ms() - t0 < 120000) {
		static struct pollfd pf[CONC_N];
		int np = 0;
		static int idx[CONC_N];

		for (int i = 0; i < CONC_N; i++)
			if (got[i] < CONC_K && !rr[i].eof) {
				pf[np] = (struct pollfd){ .fd = fds[i], .events = POLLIN };
				idx[np++] = i;
			}
		if (np == 0)
			break;
		if (poll(pf, (nfds_t)np, 1000) <= 0)
			continue;
		for (int k = 0; k < np; k++) {
			int i = idx[k];
			uint8_t buf[8192];
			ssize_t n;
			Resp r;

			if (!(pf[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = recv(fds[i], buf, sizeof(buf), 0);
			if (n <= 0) {
				rr[i].eof = true;
				bad++;
				continue;
			}
			resp_feed(&rr[i], buf, (size_t)n);
			while (resp_buffered(&rr[i], &r) == 1) {
				const uint8_t *sig;
				size_t sl;
				char msg[64];

				if (r.code[0]) {
					errors++;
					if (errors < 5)
						printf("# error %s: %s\n", r.code, r.message);
				} else {
					conc_msg(msg, sizeof(msg), r.msgid);
					if (r.msgid / CONC_K != (uint64_t)i || !resp_get_bin(&r, "signature", &sig, &sl) ||
					    sl != 64 || crypto_sign_verify_detached(sig, (uint8_t *)msg, strlen(msg), probe_pk) != 0)
						bad++;
				}
				resp_free(&r);
				if (++got[i] == CONC_K)
					done++;
			}
		}
	}
	printf("# %d connections x %d signs: %d complete in %llu ms, %d errors, %d wrong\n", CONC_N, CONC_K,
	       done, (unsigned long long)(now_ms() - t0), errors, bad);
	tap_ok(done == CONC_N && errors == 0 && bad == 0,
	       "all %d signatures answered and valid", CONC_N * CONC_K);
	for (int i = 0; i < CONC_N; i++) {
		resp_reader_deinit(&rr[i]);
		close(fds[i]);
	}
}

/* ---- 10,000 connections opened and closed ---- */
static void scenario_churn(void)
{
	int failed = 0, hellos = 0;
	uint64_t t0 = now_ms();

	for (int i = 0; i < 10000; i++) {
		int fd = sigild_connect(&d);

		if (fd < 0) {
			failed++;
			continue;
		}
		if (i % 100 == 0) {
			msgpack_sbuffer sb;
			RespReader rr;
			Resp r;

			msgpack_sbuffer_init(&sb);
			req_hello(&sb, (uint64_t)i);
			resp_reader_init(&rr, fd);
			if (write_all(fd, sb.data, sb.size) == 0 && resp_next(&rr, &r, 5000) == 1) {
				if (!r.code[0] && r.msgid == (uint64_t)i)
					hellos++;
				resp_free(&r);
			}
			resp_reader_deinit(&rr);
			msgpack_sbuffer_destroy(&sb);
		}
		close(fd);
	}
	printf("# 10000 connect/close in %llu ms, %d failed, %d/100 hellos answered\n",
	       (unsigned long long)(now_ms() - t0), failed, hellos);
	tap_ok(failed == 0, "10000 connections accepted");
	tap_ok(hellos == 100, "every 100th connection's hello answered");
}

/* ---- slowloris ---- */
#define SLOW_N 50

static void scenario_slowloris(void)
{
	int fds[SLOW_N], closed_at[SLOW_N];
	msgpack_sbuffer sb;
	uint64_t t0;
	int probes_ok = 0, probes = 0, closed = 0, late = 0;

	msgpack_sbuffer_init(&sb);
	req_sign(&sb, 7, "probe", "slow", 4);
	if (connect_many(fds, SLOW_N) < 0) {
		tap_ok(false, "open %d slow connections", SLOW_N);
		msgpack_sbuffer_destroy(&sb);
		return;
	}
	for (int i = 0; i < SLOW_N; i++)
		closed_at[i] = -1;
	t0 = now_ms();
	/* one byte a second, for up to 6 s (the frame is longer than that) */
	for (size_t b = 0; b < 6 && b < sb.size; b++) {
		for (int i = 0; i < SLOW_N; i++) {
			if (closed_at[i] >= 0)
				continue;
			if (send(fds[i], sb.data + b, 1, MSG_NOSIGNAL) < 0) {
				closed_at[i] = (int)(now_ms() - t0);
				closed++;
			}
		}
		probes++;
		probes_ok += probe(&d, probe_pk) == 0;
		/* wait a second, noticing closes */
		for (uint64_t w = now_ms(); now_ms() - w < 1000;) {
			for (int i = 0; i < SLOW_N; i++) {
				char c;

				if (closed_at[i] >= 0)
					continue;
				ssize_t n = recv(fds[i], &c, 1, MSG_DONTWAIT);

				if (n == 0 || (n < 0 && errno != EAGAIN)) {
					closed_at[i] = (int)(now_ms() - t0);
					closed++;
				}
			}
			usleep(50000);
		}
	}
	for (int i = 0; i < SLOW_N; i++) {
		if (closed_at[i] < 0 || closed_at[i] > 5000)
			late++;
		close(fds[i]);
	}
	printf("# slowloris: %d/%d closed by sigild, %d late or never (limit 5 s; idle_timeout_s = 2)\n", closed,
	       SLOW_N, late);
	tap_ok(late == 0, "sigild closed every slowloris connection within 5 s");
	tap_ok(probes_ok == probes, "well-behaved client answered during slowloris (%d/%d)", probes_ok, probes);
	msgpack_sbuffer_destroy(&sb);
}

/* ---- 1 GiB frame ---- */
static void scenario_huge_frame(void)
{
	/* [0, 99, "sign", [{"message": bin32 of 2^30 bytes ... */
	static const uint8_t hdr[] = { 0x94, 0x00, 0x63, 0xa4, 's', 'i', 'g', 'n', 0x91, 0x81, 0xa7,
	                               'm', 'e', 's', 's', 'a', 'g', 'e', 0xc6, 0x40, 0x00, 0x00, 0x00 };
	long rss0 = proc_status_kb(d.pid, "VmRSS"), rss1;
	int fd = sigild_connect(&d);
	RespReader rr;
	Resp r;
	uint64_t t0 = now_ms();
	int k;

	if (fd < 0 || write_all(fd, hdr, sizeof(hdr)) < 0) {
		tap_ok(false, "send a 1 GiB frame header");
		if (fd >= 0)
			close(fd);
		return;
	}
	resp_reader_init(&rr, fd);
	k = resp_next(&rr, &r, 5000);
	tap_ok(k == 1 && strcmp(r.code, "too_large") == 0 && r.has_msgid && r.msgid == 99,
	       "1 GiB frame: too_large for msgid 99 after %llu ms", (unsigned long long)(now_ms() - t0));
	if (k == 1)
		resp_free(&r);
	k = resp_next(&rr, &r, 5000);
	tap_ok(k == 0, "then sigild closes the connection");
	if (k == 1)
		resp_free(&r);
	resp_reader_deinit(&rr);
	close(fd);
	rss1 = proc_status_kb(d.pid, "VmRSS");
	printf("# VmRSS before %ld kB, after %ld kB\n", rss0, rss1);
	tap_ok(rss1 >= 0 && rss1 - rss0 < 16 * 1024, "RSS grew by less than 16 MiB");
}

/* ---- random bytes ---- */
static void scenario_random(void)
{
	uint8_t buf[4096];
	uint32_t x = 0x5167u;
	int answered = 0, closed = 0;

	for (int c = 0; c < 200; c++) {
		int fd = sigild_connect(&d);
		RespReader rr;
		Resp r;
		int k;

		if (fd < 0)
			continue;
		for (size_t i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			buf[i] = (uint8_t)x;
		}
		(void)write_all(fd, buf, sizeof(buf));
		shutdown(fd, SHUT_WR);
		resp_reader_init(&rr, fd);
		/* whatever comes back must be well-formed responses, then EOF */
		while ((k = resp_next(&rr, &r, 5000)) == 1) {
			answered++;
			resp_free(&r);
		}
		if (k == 0)
			closed++;
		resp_reader_deinit(&rr);
		close(fd);
	}
	printf("# random: 200 connections, %d responses, %d closed cleanly by sigild\n", answered, closed);
	tap_ok(closed == 200, "every random-bytes connection got well-formed responses, then was closed");
}

/* ---- clients that never read ---- */
#define NR_N 20

static void scenario_never_read(void)
{
	int fds[NR_N];
	size_t sent[NR_N] = { 0 };
	msgpack_sbuffer sb;
	uint8_t sig[64] = { 0 };
	int probes_ok = 0, probes = 0;
	uint64_t t0;

	/* verify requests: cheap answers, 12 bytes each, many of them */
	msgpack_sbuffer_init(&sb);
	for (int j = 0; j < 20000; j++)
		req_verify(&sb, (uint64_t)j, probe_pk, sig, "x", 1);
	if (connect_many(fds, NR_N) < 0) {
		tap_ok(false, "open %d connections", NR_N);
		msgpack_sbuffer_destroy(&sb);
		return;
	}
	for (int i = 0; i < NR_N; i++)
		fcntl(fds[i], F_SETFL, O_NONBLOCK);
	t0 = now_ms();
	/* push 4 MiB each (or until the socket stays full for 10 s) */
	while (now_ms() - t0 < 10000) {
		int more = 0;

		for (int i = 0; i < NR_N; i++) {
			size_t off = sent[i] % sb.size;
			ssize_t n;

			if (sent[i] >= (4u << 20))
				continue;
			more = 1;
			n = send(fds[i], sb.data + off, sb.size - off, MSG_NOSIGNAL);
			if (n > 0)
				sent[i] += (size_t)n;
		}
		if (!more)
			break;
		if ((now_ms() - t0) % 2000 < 50) {
			probes++;
			probes_ok += probe(&d, probe_pk) == 0;
		}
		usleep(20000);
	}
	probes++;
	probes_ok += probe(&d, probe_pk) == 0;
	{
		size_t total = 0;
		long hwm = proc_status_kb(d.pid, "VmHWM");

		for (int i = 0; i < NR_N; i++)
			total += sent[i];
		printf("# never-read: %d clients wrote %zu KiB in all (sockets full, sigild stopped reading); VmHWM %ld kB\n",
		       NR_N, total / 1024, hwm);
	}
	tap_ok(probes_ok == probes, "well-behaved client answered while %d clients never read (%d/%d)", NR_N,
	       probes_ok, probes);
	/* docs/protocol.md and daemon/conn.c: per connection, memory is bounded
	 * by the frame limit (1 MiB here), the write high-water mark
	 * CONN_WRITE_HIGH (1 MiB) and requests in flight (together at most
	 * 4 x max_request_size): 20 x 2 MiB + 4 MiB, plus 20 MiB for the rest
	 * of the daemon = 64 MiB (SIGIL_LOAD_RSS_SLACK_MB adds to it; 512 by
	 * default in a sanitizer build, for ASan's quarantine of freed memory) */
	{
		const char *slack = getenv("SIGIL_LOAD_RSS_SLACK_MB");
		long bound = (20L * 2 + 4 + 20 + (slack ? atol(slack) : sanitized() ? 512 : 0)) * 1024;
		long hwm = proc_status_kb(d.pid, "VmHWM");

		tap_ok(hwm > 0 && hwm < bound, "never-read clients: peak RSS %ld kB within the documented bound %ld kB",
		       hwm, bound);
	}
	for (int i = 0; i < NR_N; i++)
		close(fds[i]);
	msgpack_sbuffer_destroy(&sb);
}

/* ---- disconnect with requests in flight ---- */
static void scenario_disconnect(void)
{
	int failed = 0;

	for (int c = 0; c < 200; c++) {
		int fd = sigild_connect(&d);
		msgpack_sbuffer sb;

		if (fd < 0) {
			failed++;
			continue;
		}
		msgpack_sbuffer_init(&sb);
		for (int j = 0; j < 20; j++)
			req_sign(&sb, (uint64_t)j, "probe", "in flight", 9);
		if (write_all(fd, sb.data, sb.size) < 0)
			failed++;
		close(fd); /* at once: the answers have nowhere to go */
		msgpack_sbuffer_destroy(&sb);
	}
	tap_ok(failed == 0, "200 clients sent 20 signs each and vanished");
	tap_ok(probe(&d, probe_pk) == 0, "well-behaved client answered afterwards");
}

/* the answer with msgid @id on @rr within timeout_ms, its arrival time in
 * *at. Return: 0 (error code in r->code), or -1 */
static int wait_answer(RespReader *rr, Resp *r, uint64_t id, int timeout_ms, uint64_t *at)
{
	int k = resp_next(rr, r, timeout_ms);

	*at = now_ms();
	if (k != 1)
		return -1;
	if (!r->has_msgid || r->msgid != id) {
		resp_free(r);
		return -1;
	}
	return 0;
}

static void scenario_unlock(void)
{
	static const char *const extra[] = { "--passphrase", NULL };
	static const uint8_t seed[32] = { 7, 7, 7 };
	Sigild p = { 0 };
	msgpack_sbuffer sa, sb;
	RespReader ra, rb;
	Resp r;
	uint8_t pk[32], sk[64], sig[64];
	const char msg[] = "signed during an unlock";
	uint64_t t0, t_hello = 0, t_verify = 0, t_unlock = 0, t_sign = 0;
	int a = -1, b = -1, status = 0, ok_hello = -1, ok_verify = -1, ok_unlock = -1, ok_sign = -1;
	bool sign_valid = false;

	crypto_sign_seed_keypair(pk, sk, seed);
	crypto_sign_detached(sig, NULL, (const uint8_t *)msg, sizeof(msg) - 1, sk);
	sodium_memzero(sk, sizeof(sk));
	if (sigild_setup(&p, config_text) < 0 || sigild_start(&p, extra, &status) < 0) {
		tap_ok(false, "sigild --passphrase starts");
		sigild_cleanup(&p);
		return;
	}
	a = sigild_connect(&p);
	b = sigild_connect(&p);
	resp_reader_init(&ra, a);
	resp_reader_init(&rb, b);
	msgpack_sbuffer_init(&sa);
	msgpack_sbuffer_init(&sb);
	/* the first unlock sets the passphrase; a key under it; lock */
	req_unlock(&sa, 1, "load unlock");
	req_new_key(&sa, 2, "ed25519", "k", seed);
	req_key(&sa, 3, "lock", NULL);
	if (a >= 0 && b >= 0 && write_all(a, sa.data, sa.size) == 0) {
		int good = 0;

		/* answers in any order (the import runs on the pool) */
		for (int i = 0; i < 3 && resp_next(&ra, &r, 20000) == 1; i++) {
			good += !r.code[0] && r.has_msgid && r.msgid >= 1 && r.msgid <= 3;
			if (r.code[0])
				printf("# msgid %llu: %s: %s\n", (unsigned long long)r.msgid, r.code, r.message);
			resp_free(&r);
		}
		tap_ok(good == 3, "passphrase set, key imported, locked (%d of 3 answers ok)", good);
	} else {
		tap_ok(false, "connected to sigild --passphrase");
	}
	msgpack_sbuffer_clear(&sa);
	/* unlock on a; right after, hello, verify and sign on b */
	req_unlock(&sa, 10, "load unlock");
	req_hello(&sb, 20);
	req_verify(&sb, 21, pk, sig, msg, sizeof(msg) - 1);
	req_sign(&sb, 22, "k", msg, sizeof(msg) - 1);
	t0 = now_ms();
	if (write_all(a, sa.data, sa.size) == 0 && (usleep(2000), write_all(b, sb.data, sb.size)) == 0) {
		if (wait_answer(&rb, &r, 20, 20000, &t_hello) == 0) {
			ok_hello = r.code[0] ? 0 : 1;
			resp_free(&r);
		}
		if (wait_answer(&rb, &r, 21, 20000, &t_verify) == 0) {
			const msgpack_object *v = resp_get(&r, "valid");

			ok_verify = !r.code[0] && v && v->type == MSGPACK_OBJECT_BOOLEAN && v->via.boolean;
			resp_free(&r);
		}
		if (wait_answer(&ra, &r, 10, 20000, &t_unlock) == 0) {
			ok_unlock = r.code[0] ? 0 : 1;
			resp_free(&r);
		}
		if (wait_answer(&rb, &r, 22, 20000, &t_sign) == 0) {
			const uint8_t *sp;
			size_t n;

			ok_sign = r.code[0] ? 0 : 1;
			sign_valid = ok_sign && resp_get_bin(&r, "signature", &sp, &n) && n == 64 && memcmp(sp, sig, 64) == 0;
			if (!ok_sign)
				printf("# sign during unlock: %s: %s\n", r.code, r.message);
			resp_free(&r);
		}
	}
	printf("# unlock answered after %llu ms; hello after %llu ms, verify after %llu ms, the parked sign after %llu ms\n",
	       (unsigned long long)(t_unlock - t0), (unsigned long long)(t_hello - t0),
	       (unsigned long long)(t_verify - t0), (unsigned long long)(t_sign - t0));
	tap_ok(ok_unlock == 1, "unlock with the passphrase succeeds");
	tap_ok(ok_hello == 1 && ok_verify == 1, "hello and verify on another connection answered (valid)");
	tap_ok(t_hello < t_unlock && t_verify < t_unlock,
	       "hello and verify answered before the unlock (Argon2id is not on the loop thread)");
	tap_ok(ok_sign == 1 && sign_valid && t_sign >= t_unlock,
	       "a sign sent during the unlock waits for it and then succeeds with the right signature");
	/* SIGTERM while an unlock runs and a sign waits for it: both are
	 * answered (the unlock's result, busy or the signature for the sign),
	 * then sigild exits 0 */
	msgpack_sbuffer_clear(&sa);
	msgpack_sbuffer_clear(&sb);
	req_key(&sa, 30, "lock", NULL);
	req_unlock(&sa, 31, "load unlock");
	req_sign(&sb, 40, "k", msg, sizeof(msg) - 1);
	ok_unlock = ok_sign = -1;
	if (write_all(a, sa.data, sa.size) == 0 && (usleep(2000), write_all(b, sb.data, sb.size)) == 0) {
		usleep(2000);
		kill(p.pid, SIGTERM);
		for (int i = 0; i < 2 && wait_answer(&ra, &r, 30 + (uint64_t)i, 20000, &t0) == 0; i++) {
			ok_unlock = !r.code[0];
			resp_free(&r);
		}
		if (wait_answer(&rb, &r, 40, 20000, &t0) == 0) {
			ok_sign = !r.code[0] || strcmp(r.code, "busy") == 0;
			if (r.code[0])
				printf("# sign sent during the unlock, sigild stopping: %s: %s\n", r.code, r.message);
			resp_free(&r);
		}
	}
	tap_ok(ok_unlock == 1 && ok_sign == 1,
	       "SIGTERM during an unlock: the lock and unlock are answered, and the waiting sign (busy or signed)");
	/* it is stopping already: wait for it (signal 0; a second SIGTERM
	 * could land after it closed its signal handlers) */
	status = sigild_stop(&p, ok_unlock == -1 ? SIGTERM : 0, 15000);
	msgpack_sbuffer_destroy(&sa);
	msgpack_sbuffer_destroy(&sb);
	resp_reader_deinit(&ra);
	resp_reader_deinit(&rb);
	if (a >= 0)
		close(a);
	if (b >= 0)
		close(b);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	       "sigild --passphrase exits 0 on SIGTERM (status %d)", status);
	if (!(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0))
		sigild_show_log(&p, 60);
	sigild_cleanup(&p);
}

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "concurrent", scenario_concurrent },
	{ "churn", scenario_churn },
	{ "slowloris", scenario_slowloris },
	{ "huge-frame", scenario_huge_frame },
	{ "random", scenario_random },
	{ "never-read", scenario_never_read },
	{ "disconnect", scenario_disconnect },
	{ "unlock", scenario_unlock },
};

int main(int argc, char **argv)
{
	const char *max_rss_env = getenv("SIGIL_LOAD_MAX_RSS_MB");
	long max_rss_kb = (max_rss_env ? atol(max_rss_env) : sanitized() ? 1024 : 256) * 1024;
	void (*run)(void) = NULL;
	int fds0, fds1, status = 0;
	long hwm;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(argv[1], scenarios[i].name) == 0)
			run = scenarios[i].run;
	if (!run) {
		fprintf(stderr, "usage: load concurrent|churn|slowloris|huge-frame|random|never-read|disconnect|unlock\n");
		return 2;
	}
	if (sodium_init() < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	/* 1,000 client sockets here, as many in sigild (it raises its soft limit to the hard one) */
	tap_ok(raise_nofile(4096) == 0, "RLIMIT_NOFILE raised to 4096 (root or a high hard limit needed)");
	if (sigild_setup(&d, config_text) < 0 || sigild_start(&d, NULL, &status) < 0) {
		tap_ok(false, "sigild starts");
		sigild_show_log(&d, 20);
		sigild_cleanup(&d);
		return tap_done();
	}
	tap_ok(probe_setup(&d, probe_pk) == 0, "key 'probe' imported");
	tap_ok(probe(&d, probe_pk) == 0, "well-behaved client answered before the load");
	/* the probe's connection may still be closing: the lowest count over 0.5 s */
	fds0 = proc_fd_count(d.pid);
	for (int i = 0; i < 10; i++) {
		int n = proc_fd_count(d.pid);

		if (n < fds0)
			fds0 = n;
		usleep(50000);
	}
	printf("# sigild pid %d: %d fds before\n", (int)d.pid, fds0);

	run();

	fds1 = wait_fds(fds0, 15000);
	hwm = proc_status_kb(d.pid, "VmHWM");
	printf("# %s: sigild fds before %d, after %d; peak RSS (VmHWM) %ld kB\n", argv[1], fds0, fds1, hwm);
	tap_ok(fds1 == fds0, "no fd leaked (%d before, %d after)", fds0, fds1);
	tap_ok(hwm > 0 && hwm < max_rss_kb, "peak RSS %ld kB < %ld kB", hwm, max_rss_kb);
	tap_ok(kill(d.pid, 0) == 0 && probe(&d, probe_pk) == 0, "sigild alive and answering at the end");
	status = sigild_stop(&d, SIGTERM, 15000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild exits 0 on SIGTERM");
	status = tap_done();
	if (status != 0)
		sigild_show_log(&d, 30);
	sigild_cleanup(&d);
	return status;
}
