/* SPDX-License-Identifier: MIT */
/*
 * faults.c - sigild under faults: crashes, full disks, fd and memory-lock
 * limits, a read-only state directory, signals under load
 *
 * Usage: faults SCENARIO   (SIGILD = path of sigild; run as root)
 *   kill9-writes  5 rounds: 8 clients import keys while sigild is killed
 *                 with SIGKILL at a varying moment; after a restart every
 *                 acknowledged key is there with its public key and signs,
 *                 every *.key file loaded, no temporary file left
 *   enospc        state directory on a 64 KiB tmpfs: key.generate until the
 *                 disk is full gives a clear error, nothing half-written
 *                 stays, earlier keys still sign, deleting one makes room
 *   emfile        sigild with RLIMIT_NOFILE 32 and 60 clients: the excess
 *                 is refused, sigild lives, answers once clients leave, and
 *                 its fd count returns to the start
 *   mlock         RLIMIT_MEMLOCK 0 without CAP_IPC_LOCK: sigild refuses to
 *                 start naming RLIMIT_MEMLOCK; with --allow-unlocked-memory
 *                 it runs
 *   readonly      the state directory remounted read-only: keys load and
 *                 sign; key.generate and key.delete fail with an error naming
 *                 the cause; the key list is unchanged
 *   sigterm-load  SIGTERM while 50 clients pipeline 40 signs each: every
 *                 answer is correct (a signature or "busy"), no msgid twice,
 *                 every connection is closed by sigild, exit status 0
 *   sighup-load   SIGHUP (a changed config, then a broken one) while clients
 *                 sign: every request answered correctly, no connection lost
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sigild-run.h"

static const char *base_config =
	"# tests/faults\n"
	"workers = 2\n"
	"idle_timeout_s = 5\n"
	"shutdown_timeout_s = 10\n";

static uint8_t probe_pk[32];

/* ---- small client helpers ---- */

/* one request, one answer; r is freed by the caller when 0 is returned */
static int call(const Sigild *d, msgpack_sbuffer *sb, Resp *r, RespReader *rr)
{
	return rpc_call(d, sb, r, rr, 15000);
}

static void call_done(Resp *r, RespReader *rr)
{
	resp_free(r);
	resp_reader_deinit(rr);
	close(rr->fd);
}

/* sign with label and check against pk: 0 if right */
static int sign_check(const Sigild *d, const char *label, const uint8_t pk[32])
{
	msgpack_sbuffer sb;
	RespReader rr;
	Resp r;
	int ret = -1;
	const uint8_t *sig;
	size_t n;

	msgpack_sbuffer_init(&sb);
	req_sign(&sb, 1, label, label, strlen(label));
	if (call(d, &sb, &r, &rr) == 0) {
		if (!r.code[0] && resp_get_bin(&r, "signature", &sig, &n) && n == 64 &&
		    crypto_sign_verify_detached(sig, (const uint8_t *)label, strlen(label), pk) == 0)
			ret = 0;
		call_done(&r, &rr);
	}
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

/* key.generate (seed NULL) or key.import; returns the error code ("" on
 * success) in code, and the public key */
static int new_key(const Sigild *d, const char *label, const uint8_t seed[32], char code[32], char *msg,
                   size_t msgcap, uint8_t pk[32])
{
	msgpack_sbuffer sb;
	RespReader rr;
	Resp r;
	int ret = -1;

	msgpack_sbuffer_init(&sb);
	req_new_key(&sb, 1, "ed25519", label, seed);
	if (call(d, &sb, &r, &rr) == 0) {
		snprintf(code, 32, "%s", r.code);
		if (msg)
			snprintf(msg, msgcap, "%s", r.message);
		if (!r.code[0]) {
			const msgpack_object *key = resp_get(&r, "key");
			const uint8_t *p;
			size_t n;

			if (key) {
				Resp sub = { .result = key };

				if (resp_get_bin(&sub, "public_key", &p, &n) && n == 32) {
					memcpy(pk, p, 32);
					ret = 0;
				}
			}
		} else {
			ret = 0;
		}
		call_done(&r, &rr);
	}
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

/* simple method with a label: key.delete, key.public. Fills code. */
static int label_call(const Sigild *d, const char *method, const char *label, char code[32], char *msg,
                      size_t msgcap)
{
	msgpack_sbuffer sb;
	RespReader rr;
	Resp r;
	int ret = -1;

	msgpack_sbuffer_init(&sb);
	req_key(&sb, 1, method, label);
	if (call(d, &sb, &r, &rr) == 0) {
		snprintf(code, 32, "%s", r.code);
		if (msg)
			snprintf(msg, msgcap, "%s", r.message);
		ret = 0;
		call_done(&r, &rr);
	}
	msgpack_sbuffer_destroy(&sb);
	return ret;
}

static long key_count(const Sigild *d)
{
	msgpack_sbuffer sb;
	RespReader rr;
	Resp r;
	long n = -1;

	msgpack_sbuffer_init(&sb);
	req_status(&sb, 1);
	if (call(d, &sb, &r, &rr) == 0) {
		const msgpack_object *k = resp_get(&r, "keys");

		if (k && k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			n = (long)k->via.u64;
		call_done(&r, &rr);
	}
	msgpack_sbuffer_destroy(&sb);
	return n;
}

/* files in <state>/keys: *.key count and temporaries */
static void scan_keys_dir(const Sigild *d, int *nkeysp, int *ntmpp)
{
	char path[400];
	DIR *dir;
	struct dirent *e;

	*nkeysp = *ntmpp = 0;
	snprintf(path, sizeof(path), "%s/keys", d->state);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		size_t n = strlen(e->d_name);

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if (e->d_name[0] == '.')
			(*ntmpp)++;
		else if (n > 4 && strcmp(e->d_name + n - 4, ".key") == 0)
			(*nkeysp)++;
	}
	closedir(dir);
}

static void seed_of(uint8_t seed[32], int round, int client, int i)
{
	memset(seed, 0, 32);
	snprintf((char *)seed, 32, "r%d c%d i%d", round, client, i);
}

/* ---- kill -9 during key writes ---- */
#define K9_CLIENTS 8
#define K9_MAX 400

static void scenario_kill9(void)
{
	Sigild d;
	int status;

	if (sigild_setup(&d, base_config) < 0) {
		tap_ok(false, "setup");
		return;
	}
	for (int round = 0; round < 5; round++) {
		int pipes[K9_CLIENTS][2];
		pid_t kids[K9_CLIENTS];
		static char acked[K9_CLIENTS][K9_MAX];
		int nacked = 0, missing = 0, wrong = 0, nkeys, ntmp, nkeys_crash, ntmp_crash;
		long loaded;

		if (sigild_start(&d, NULL, &status) < 0) {
			tap_ok(false, "round %d: sigild starts", round);
			sigild_show_log(&d, 20);
			break;
		}
		memset(acked, 0, sizeof(acked));
		/* clients in child processes, each reporting acknowledged indexes on a pipe */
		for (int c = 0; c < K9_CLIENTS; c++) {
			if (pipe(pipes[c]) < 0)
				abort();
			kids[c] = fork();
			if (kids[c] == 0) {
				close(pipes[c][0]);
				for (int i = 0; i < K9_MAX; i++) {
					uint8_t seed[32], pk[32];
					char label[64], code[32];

					seed_of(seed, round, c, i);
					snprintf(label, sizeof(label), "r%d-c%d-i%d", round, c, i);
					if (new_key(&d, label, seed, code, NULL, 0, pk) < 0 || code[0])
						break;
					/* acknowledged: report the index, two bytes in one
					 * write (atomic on a pipe) */
					unsigned char rec[2] = { (unsigned char)(i & 0xff), (unsigned char)(i >> 8) };

					if (write(pipes[c][1], rec, 2) != 2)
						break;
				}
				_exit(0);
			}
			close(pipes[c][1]);
		}
		/* the delay counts from the first acknowledgement, so that slow
		 * builds (Valgrind) are killed in the middle of writes too */
		for (uint64_t t0 = now_ms(); nacked == 0 && now_ms() - t0 < 30000;) {
			struct pollfd pf[K9_CLIENTS];

			for (int c = 0; c < K9_CLIENTS; c++)
				pf[c] = (struct pollfd){ .fd = pipes[c][0], .events = POLLIN };
			if (poll(pf, K9_CLIENTS, 100) > 0)
				for (int c = 0; c < K9_CLIENTS; c++) {
					unsigned char b[2];

					if ((pf[c].revents & POLLIN) && read(pipes[c][0], b, 2) == 2 &&
					    (b[0] | (b[1] << 8)) < K9_MAX) {
						acked[c][b[0] | (b[1] << 8)] = 1;
						nacked++;
					}
				}
		}
		usleep((useconds_t)(150000 + 170000 * round));
		kill(d.pid, SIGKILL);
		waitpid(d.pid, &status, 0);
		d.pid = -1;
		for (int c = 0; c < K9_CLIENTS; c++) {
			unsigned char b[2];

			while (read(pipes[c][0], b, 2) == 2) {
				int i = b[0] | (b[1] << 8);

				if (i < K9_MAX && !acked[c][i]) {
					acked[c][i] = 1;
					nacked++;
				}
			}
			close(pipes[c][0]);
			waitpid(kids[c], NULL, 0);
		}
		/* what the crash left: temporaries show a write was cut short */
		scan_keys_dir(&d, &nkeys_crash, &ntmp_crash);
		if (sigild_start(&d, NULL, &status) < 0) {
			tap_ok(false, "round %d: sigild restarts after SIGKILL", round);
			sigild_show_log(&d, 20);
			break;
		}
		for (int c = 0; c < K9_CLIENTS; c++)
			for (int i = 0; i < K9_MAX; i++) {
				uint8_t seed[32], pk[32], sk[64];
				char label[64];

				if (!acked[c][i])
					continue;
				seed_of(seed, round, c, i);
				crypto_sign_seed_keypair(pk, sk, seed);
				snprintf(label, sizeof(label), "r%d-c%d-i%d", round, c, i);
				if (sign_check(&d, label, pk) < 0) {
					if (missing + wrong < 5)
						printf("# key %s acknowledged but missing or wrong after restart\n", label);
					missing++;
				}
			}
		loaded = key_count(&d);
		scan_keys_dir(&d, &nkeys, &ntmp);
		printf("# round %d: SIGKILL %d ms after the first acknowledgement: %d keys acknowledged; the crash left %d key files and %d "
		       "temporaries; after restart %ld loaded, %d files, %d temporaries\n",
		       round, 150 + 170 * round, nacked, nkeys_crash, ntmp_crash, loaded, nkeys, ntmp);
		tap_ok(nacked > 0 && missing == 0 && wrong == 0,
		       "round %d: all %d acknowledged keys present and signing after SIGKILL + restart", round, nacked);
		tap_ok(loaded == nkeys && ntmp == 0,
		       "round %d: every key file loaded (%ld of %d), no temporary file left (%d)", round, loaded, nkeys,
		       ntmp);
		sigild_stop(&d, SIGTERM, 15000);
	}
	sigild_cleanup(&d);
}

/* ---- ENOSPC on a small tmpfs ---- */
static int mount_tmpfs(const char *path, const char *opts)
{
	if (mkdir(path, 0700) < 0 && errno != EEXIST)
		return -errno;
	if (mount("tmpfs", path, "tmpfs", 0, opts) < 0)
		return -errno;
	return 0;
}

static void scenario_enospc(void)
{
	Sigild d;
	int status, r, made = 0, nkeys, ntmp;
	char code[32] = "", msg[256] = "", label[64];
	uint8_t pks[200][32], pk[32];

	if (sigild_setup(&d, base_config) < 0) {
		tap_ok(false, "setup");
		return;
	}
	r = mount_tmpfs(d.state, "size=64k,mode=0700");
	tap_ok(r == 0, "mount a 64 KiB tmpfs on the state directory (%s)", r ? strerror(-r) : "ok");
	if (r) {
		sigild_cleanup(&d);
		return;
	}
	if (sigild_start(&d, NULL, &status) < 0) {
		tap_ok(false, "sigild starts");
		goto out;
	}
	for (int i = 0; i < 200; i++) {
		snprintf(label, sizeof(label), "k%03d", i);
		if (new_key(&d, label, NULL, code, msg, sizeof(msg), pk) < 0) {
			code[0] = '?';
			break;
		}
		if (code[0])
			break;
		memcpy(pks[made++], pk, 32);
	}
	printf("# %d keys fit; then: %s: %s\n", made, code, msg);
	tap_ok(made > 0 && strcmp(code, "internal") == 0 && strstr(msg, "No space left on device") != NULL,
	       "a full disk gives an 'internal' error naming ENOSPC after %d keys", made);
	scan_keys_dir(&d, &nkeys, &ntmp);
	tap_ok(key_count(&d) == made && nkeys == made && ntmp == 0,
	       "no half-written key: %d key files for %d keys, %d temporaries", nkeys, made, ntmp);
	{
		int bad = 0;

		for (int i = 0; i < made; i++) {
			snprintf(label, sizeof(label), "k%03d", i);
			bad += sign_check(&d, label, pks[i]) != 0;
		}
		tap_ok(bad == 0, "the %d keys made before the disk filled still sign", made);
	}
	tap_ok(label_call(&d, "key.delete", "k000", code, NULL, 0) == 0 && !code[0], "key.delete makes room");
	snprintf(label, sizeof(label), "after-delete");
	tap_ok(new_key(&d, label, NULL, code, msg, sizeof(msg), pk) == 0 && !code[0] && sign_check(&d, label, pk) == 0,
	       "then key.generate works again");
	status = sigild_stop(&d, SIGTERM, 15000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild alive to the end, exits 0");
	if (sigild_start(&d, NULL, &status) < 0 || key_count(&d) != made) {
		tap_ok(false, "after a restart the same %d keys load", made);
		sigild_show_log(&d, 10);
	} else {
		tap_ok(true, "after a restart the same %d keys load", made);
	}
	sigild_stop(&d, SIGTERM, 15000);
out:
	umount2(d.state, MNT_DETACH);
	sigild_cleanup(&d);
}

/* ---- EMFILE ---- */
static void scenario_emfile(void)
{
	Sigild d;
	int status, fds[60], fds0, fds1, opened = 0, refused = 0, answered = 0;
	const char *extra[] = { NULL };
	struct rlimit old, low = { 32, 32 };

	if (sigild_setup(&d, base_config) < 0) {
		tap_ok(false, "setup");
		return;
	}
	/* the child inherits the limit; sigild raises soft to hard, so lower both */
	getrlimit(RLIMIT_NOFILE, &old);
	setrlimit(RLIMIT_NOFILE, &low);
	if (sigild_start(&d, extra, &status) < 0) {
		setrlimit(RLIMIT_NOFILE, &old);
		tap_ok(false, "sigild starts with RLIMIT_NOFILE 32");
		sigild_show_log(&d, 20);
		sigild_cleanup(&d);
		return;
	}
	setrlimit(RLIMIT_NOFILE, &old);
	tap_ok(probe_setup(&d, probe_pk) == 0 && probe(&d, probe_pk) == 0, "sigild with RLIMIT_NOFILE 32 answers");
	usleep(200000);
	fds0 = proc_fd_count(d.pid);
	for (int i = 0; i < 60; i++) {
		fds[i] = sigild_connect(&d);
		if (fds[i] >= 0)
			opened++;
	}
	/* each client asks hello: served, or closed by sigild */
	for (int i = 0; i < 60; i++) {
		msgpack_sbuffer sb;
		RespReader rr;
		Resp r;
		int k;

		if (fds[i] < 0)
			continue;
		msgpack_sbuffer_init(&sb);
		req_hello(&sb, 1);
		resp_reader_init(&rr, fds[i]);
		if (write_all(fds[i], sb.data, sb.size) == 0 && (k = resp_next(&rr, &r, 3000)) == 1) {
			if (!r.code[0])
				answered++;
			else
				refused++;
			resp_free(&r);
		} else {
			refused++;
		}
		resp_reader_deinit(&rr);
		msgpack_sbuffer_destroy(&sb);
	}
	printf("# RLIMIT_NOFILE 32: %d of 60 connected, %d answered, %d refused or closed\n", opened, answered,
	       refused);
	tap_ok(answered > 0 && answered < 60 && answered + refused == opened,
	       "some clients served, the excess refused or closed, none left hanging");
	tap_ok(kill(d.pid, 0) == 0, "sigild alive at EMFILE");
	for (int i = 0; i < 60; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	{
		int ok = -1;

		for (uint64_t t0 = now_ms(); ok != 0 && now_ms() - t0 < 10000;) {
			ok = probe(&d, probe_pk);
			if (ok)
				usleep(100000);
		}
		tap_ok(ok == 0, "after the clients leave, sigild answers again");
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 10000; usleep(50000))
		if ((fds1 = proc_fd_count(d.pid)) <= fds0)
			break;
	fds1 = proc_fd_count(d.pid);
	tap_ok(fds1 == fds0, "no fd leaked (%d before, %d after)", fds0, fds1);
	status = sigild_stop(&d, SIGTERM, 15000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild exits 0 on SIGTERM");
	sigild_show_log(&d, 8);
	sigild_cleanup(&d);
}

/* ---- mlock failure ---- */
static pid_t mlock_helper = -1; /* the parent of sigild when it runs without CAP_IPC_LOCK */

static pid_t start_without_ipc_lock(Sigild *d, bool allow_unlocked, int *statusp)
{
	/* drop CAP_IPC_LOCK from the bounding set in a helper process, then
	 * exec sigild from there so the limit applies even to root */
	const char *extra[] = { allow_unlocked ? "--allow-unlocked-memory" : NULL, NULL };
	struct rlimit zero = { 0, 0 }, old;
	pid_t pid;

	getrlimit(RLIMIT_MEMLOCK, &old);
	if (prctl(PR_CAPBSET_READ, CAP_IPC_LOCK) == 1) {
		/* only in a child: fork a process that drops the capability and
		 * runs sigild_start (which forks again) */
		int p[2];

		if (pipe(p) < 0)
			return -1;
		pid = fork();
		if (pid == 0) {
			pid_t inner;
			int st = 0;

			close(p[0]);
			if (prctl(PR_CAPBSET_DROP, CAP_IPC_LOCK) < 0)
				_exit(3);
			{
				struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
				struct __user_cap_data_struct c[2];

				if (syscall(SYS_capget, &h, c) < 0)
					_exit(3);
				c[CAP_IPC_LOCK / 32].effective &= ~(1u << (CAP_IPC_LOCK % 32));
				c[CAP_IPC_LOCK / 32].permitted &= ~(1u << (CAP_IPC_LOCK % 32));
				c[CAP_IPC_LOCK / 32].inheritable &= ~(1u << (CAP_IPC_LOCK % 32));
				if (syscall(SYS_capset, &h, c) < 0)
					_exit(3);
			}
			setrlimit(RLIMIT_MEMLOCK, &zero);
			inner = sigild_start(d, extra, &st);
			/* tell the parent: pid (or -1) and status */
			(void)!write(p[1], &inner, sizeof(inner));
			(void)!write(p[1], &st, sizeof(st));
			close(p[1]);
			if (inner > 0) {
				/* stay until sigild exits and pass on its status */
				waitpid(inner, &st, 0);
				_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
			}
			_exit(0);
		}
		close(p[1]);
		{
			pid_t inner = -1;
			int st = 0;

			if (read(p[0], &inner, sizeof(inner)) != sizeof(inner) || read(p[0], &st, sizeof(st)) != sizeof(st))
				inner = -1;
			close(p[0]);
			*statusp = st;
			d->pid = inner;
			if (inner < 0)
				waitpid(pid, NULL, 0);
			else
				mlock_helper = pid;
			return inner;
		}
	}
	setrlimit(RLIMIT_MEMLOCK, &zero);
	pid = sigild_start(d, extra, statusp);
	setrlimit(RLIMIT_MEMLOCK, &old);
	return pid;
}

/* Is $SIGILD built with a sanitizer? Their runtimes replace mlock() with a
 * no-op that succeeds, so a refusal cannot happen there. */
static const char *sanitizer_of_sigild(void)
{
	static const char *const names[][2] = {
		{ "__asan_init", "AddressSanitizer" },
		{ "__tsan_init", "ThreadSanitizer" },
		{ "__msan_init", "MemorySanitizer" },
	};
	const char *path = getenv("SIGILD");
	FILE *f = path ? fopen(path, "rb") : NULL;
	char buf[1 << 16];
	const char *found = NULL;
	size_t keep = 0, n;

	if (!f)
		return NULL;
	while (!found && (n = fread(buf + keep, 1, sizeof(buf) - keep, f)) > 0) {
		n += keep;
		for (size_t i = 0; i < sizeof(names) / sizeof(names[0]) && !found; i++)
			if (memmem(buf, n, names[i][0], strlen(names[i][0])))
				found = names[i][1];
		keep = n < 32 ? n : 32; /* names across the block boundary */
		memmove(buf, buf + n - keep, keep);
	}
	fclose(f);
	return found;
}

static void scenario_mlock(void)
{
	Sigild d;
	int status = 0;
	pid_t pid;
	const char *san = sanitizer_of_sigild();

	if (san) {
		/* meson does not register this scenario in a b_sanitize build
		 * (tests/fuzz/meson.build): run by hand there, it fails, saying why */
		printf("not ok 1 - sigild is built with %s, whose runtime turns mlock() into a no-op: "
		       "a refusal cannot be observed\n", san);
		printf("1..1\n");
		exit(1);
	}
	if (sigild_setup(&d, base_config) < 0) {
		tap_ok(false, "setup");
		return;
	}
	pid = start_without_ipc_lock(&d, false, &status);
	tap_ok(pid < 0 && WIFEXITED(status) && WEXITSTATUS(status) != 0,
	       "RLIMIT_MEMLOCK 0, no CAP_IPC_LOCK: sigild refuses to start (exit %d)",
	       WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	tap_ok(sigild_log_contains(&d, "RLIMIT_MEMLOCK"), "its message names RLIMIT_MEMLOCK");
	sigild_show_log(&d, 3);
	if (pid > 0) {
		kill(pid, SIGKILL);
		d.pid = -1;
	}
	pid = start_without_ipc_lock(&d, true, &status);
	tap_ok(pid > 0, "with --allow-unlocked-memory it starts");
	if (pid > 0) {
		tap_ok(probe_setup(&d, probe_pk) == 0 && probe(&d, probe_pk) == 0, "and signs");
		tap_ok(sigild_log_contains(&d, "mlock") || sigild_log_contains(&d, "lock"),
		       "and warns that memory is not locked");
		if (mlock_helper > 0) {
			/* sigild is the helper's child: its status comes through the helper */
			kill(d.pid, SIGTERM);
			status = -1;
			for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000; usleep(10000))
				if (waitpid(mlock_helper, &status, WNOHANG) == mlock_helper)
					break;
			d.pid = -1;
		} else {
			status = sigild_stop(&d, SIGTERM, 15000);
		}
		tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "exits 0 on SIGTERM");
	}
	sigild_cleanup(&d);
}

/* ---- read-only state directory ---- */
static void scenario_readonly(void)
{
	Sigild d;
	int status, r;
	char code[32], msg[256];
	uint8_t pk[32], pk2[32];

	if (sigild_setup(&d, base_config) < 0) {
		tap_ok(false, "setup");
		return;
	}
	r = mount_tmpfs(d.state, "size=1m,mode=0700");
	tap_ok(r == 0, "mount a tmpfs on the state directory (%s)", r ? strerror(-r) : "ok");
	if (r) {
		sigild_cleanup(&d);
		return;
	}
	if (sigild_start(&d, NULL, &status) < 0 || new_key(&d, "before", NULL, code, NULL, 0, pk) < 0 || code[0]) {
		tap_ok(false, "a key made while writable");
		goto out;
	}
	sigild_stop(&d, SIGTERM, 15000);
	r = mount(NULL, d.state, NULL, MS_REMOUNT | MS_RDONLY, NULL);
	tap_ok(r == 0, "state directory remounted read-only (%s)", r ? strerror(errno) : "ok");
	if (sigild_start(&d, NULL, &status) < 0) {
		tap_ok(false, "sigild starts on a read-only state directory");
		sigild_show_log(&d, 10);
		goto out;
	}
	tap_ok(true, "sigild starts on a read-only state directory");
	tap_ok(sign_check(&d, "before", pk) == 0, "the existing key loads and signs");
	r = new_key(&d, "after", NULL, code, msg, sizeof(msg), pk2);
	printf("# key.generate: %s: %s\n", code, msg);
	tap_ok(r == 0 && strcmp(code, "internal") == 0 && strstr(msg, "Read-only file system") != NULL,
	       "key.generate fails with an error naming EROFS");
	r = label_call(&d, "key.delete", "before", code, msg, sizeof(msg));
	printf("# key.delete: %s: %s\n", code, msg);
	tap_ok(r == 0 && strcmp(code, "internal") == 0 && strstr(msg, "Read-only file system") != NULL,
	       "key.delete fails with an error naming EROFS");
	tap_ok(key_count(&d) == 1 && sign_check(&d, "before", pk) == 0, "the key list is unchanged, the key still signs");
	status = sigild_stop(&d, SIGTERM, 15000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild exits 0 on SIGTERM");
out:
	if (d.pid > 0)
		sigild_stop(&d, SIGKILL, 5000);
	umount2(d.state, MNT_DETACH);
	sigild_cleanup(&d);
}

/* ---- signals under load ---- */
#define SL_CONNS 50
#define SL_REQS 40

typedef struct LoadRun {
	int fds[SL_CONNS];
	RespReader rr[SL_CONNS];
	uint8_t seen[SL_CONNS][SL_REQS];
	int answers, sigs, busy, wrong, dup, eof;
} LoadRun;

static void sl_msg(char *out, size_t cap, int c, int j)
{
	snprintf(out, cap, "signal load c%d j%d", c, j);
}

static int load_send(const Sigild *d, LoadRun *L)
{
	memset(L, 0, sizeof(*L));
	for (int c = 0; c < SL_CONNS; c++) {
		msgpack_sbuffer sb;
		char msg[64];

		L->fds[c] = sigild_connect(d);
		if (L->fds[c] < 0)
			return -1;
		resp_reader_init(&L->rr[c], L->fds[c]);
		msgpack_sbuffer_init(&sb);
		for (int j = 0; j < SL_REQS; j++) {
			sl_msg(msg, sizeof(msg), c, j);
			req_sign(&sb, (uint64_t)j, "probe", msg, strlen(msg));
		}
		if (write_all(L->fds[c], sb.data, sb.size) < 0) {
			msgpack_sbuffer_destroy(&sb);
			return -1;
		}
		msgpack_sbuffer_destroy(&sb);
	}
	return 0;
}

/* read until every request is answered or the connection is closed */
static void load_collect(LoadRun *L, bool until_eof, int timeout_ms)
{
	uint64_t t0 = now_ms();

	for (int c = 0; c < SL_CONNS; c++) {
		int got = 0;

		for (;;) {
			Resp r;
			int left = timeout_ms - (int)(now_ms() - t0), k;

			if (!until_eof && got == SL_REQS)
				break;
			k = resp_next(&L->rr[c], &r, left > 0 ? left : 1);
			if (k == 0) {
				L->eof++;
				break;
			}
			if (k < 0) {
				L->wrong++;
				break;
			}
			got++;
			L->answers++;
			if (!r.has_msgid || r.msgid >= SL_REQS) {
				L->wrong++;
			} else if (L->seen[c][r.msgid]++) {
				L->dup++;
			} else if (!r.code[0]) {
				const uint8_t *sig;
				size_t n;
				char msg[64];

				sl_msg(msg, sizeof(msg), c, (int)r.msgid);
				if (resp_get_bin(&r, "signature", &sig, &n) && n == 64 &&
				    crypto_sign_verify_detached(sig, (uint8_t *)msg, strlen(msg), probe_pk) == 0)
					L->sigs++;
				else
					L->wrong++;
			} else if (strcmp(r.code, "busy") == 0) {
				L->busy++;
			} else {
				L->wrong++;
			}
			resp_free(&r);
		}
	}
}

static void load_close(LoadRun *L)
{
	for (int c = 0; c < SL_CONNS; c++) {
		resp_reader_deinit(&L->rr[c]);
		close(L->fds[c]);
	}
}

static void scenario_sigterm(void)
{
	static LoadRun L;
	Sigild d;
	int status;

	if (sigild_setup(&d, base_config) < 0 || sigild_start(&d, NULL, &status) < 0 ||
	    probe_setup(&d, probe_pk) != 0) {
		tap_ok(false, "sigild starts");
		sigild_cleanup(&d);
		return;
	}
	tap_ok(load_send(&d, &L) == 0, "%d clients pipelined %d signs each", SL_CONNS, SL_REQS);
	kill(d.pid, SIGTERM);
	load_collect(&L, true, 20000);
	status = sigild_stop(&d, 0, 15000); /* already signalled: wait */
	printf("# SIGTERM under load: %d answers (%d signatures, %d busy) to %d requests; %d duplicate, %d wrong; %d of %d connections closed by sigild\n",
	       L.answers, L.sigs, L.busy, SL_CONNS * SL_REQS, L.dup, L.wrong, L.eof, SL_CONNS);
	tap_ok(L.wrong == 0 && L.dup == 0, "every answer is a valid signature or 'busy', none twice");
	tap_ok(L.eof == SL_CONNS, "sigild closed every connection (no client left waiting)");
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild exits 0");
	sigild_show_log(&d, 4);
	load_close(&L);
	sigild_cleanup(&d);
}

static void scenario_sighup(void)
{
	static LoadRun L;
	Sigild d;
	int status;
	FILE *f;

	if (sigild_setup(&d, base_config) < 0 || sigild_start(&d, NULL, &status) < 0 ||
	    probe_setup(&d, probe_pk) != 0) {
		tap_ok(false, "sigild starts");
		sigild_cleanup(&d);
		return;
	}
	for (int round = 0; round < 3; round++) {
		tap_ok(load_send(&d, &L) == 0, "round %d: %d clients pipelined %d signs each", round, SL_CONNS, SL_REQS);
		/* a valid change, then a broken file, then valid again */
		f = fopen(d.config, "w");
		if (f) {
			fputs(base_config, f);
			if (round == 1)
				fputs("this is not a setting\n", f);
			else
				fprintf(f, "max_connections = %d\n", 500 + round);
			fclose(f);
		}
		kill(d.pid, SIGHUP);
		load_collect(&L, false, 30000);
		printf("# round %d: %d answers (%d signatures, %d busy), %d wrong, %d duplicate, %d closed\n", round,
		       L.answers, L.sigs, L.busy, L.wrong, L.dup, L.eof);
		tap_ok(L.sigs == SL_CONNS * SL_REQS && L.wrong == 0 && L.dup == 0 && L.eof == 0,
		       "round %d: SIGHUP under load: all %d requests signed correctly, no connection lost", round,
		       SL_CONNS * SL_REQS);
		load_close(&L);
	}
	tap_ok(sigild_log_contains(&d, "configuration reloaded"), "sigild logged the reloads");
	tap_ok(sigild_log_contains(&d, "keeping the old configuration"), "and kept the old one when the file was broken");
	status = sigild_stop(&d, SIGTERM, 15000);
	tap_ok(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0, "sigild exits 0 on SIGTERM");
	sigild_cleanup(&d);
}

static const struct {
	const char *name;
	void (*run)(void);
} scenarios[] = {
	{ "kill9-writes", scenario_kill9 },
	{ "enospc", scenario_enospc },
	{ "emfile", scenario_emfile },
	{ "mlock", scenario_mlock },
	{ "readonly", scenario_readonly },
	{ "sigterm-load", scenario_sigterm },
	{ "sighup-load", scenario_sighup },
};

int main(int argc, char **argv)
{
	void (*run)(void) = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; argc == 2 && i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
		if (strcmp(argv[1], scenarios[i].name) == 0)
			run = scenarios[i].run;
	if (!run) {
		fprintf(stderr, "usage: faults kill9-writes|enospc|emfile|mlock|readonly|sigterm-load|sighup-load\n");
		return 2;
	}
	if (sodium_init() < 0)
		return 1;
	signal(SIGPIPE, SIG_IGN);
	if (geteuid() != 0) {
		/* never a silent skip: these need root (mount, rlimits, capabilities) */
		tap_ok(false, "tests/faults must run as root (mount, RLIMIT_*, capability bounding set)");
		return tap_done();
	}
	raise_nofile(4096);
	run();
	return tap_done();
}
