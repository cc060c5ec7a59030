/* SPDX-License-Identifier: MIT */
/*
 * test-agent.c - sigild's ssh-agent socket with the real OpenSSH tools
 * (ssh-add, ssh-keygen -Y sign/verify, ssh against an sshd started here on
 * 127.0.0.1), git commit -S with gpg.format=ssh, and a raw agent-protocol
 * client (framing, failures, extensions) whose signatures are checked with
 * libsodium.
 *
 * Environment: SIGILD = path of the built sigild (set by meson). A missing
 * tool (ssh-add, ssh-keygen, ssh, /usr/sbin/sshd, git) fails the test.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "harness.h"
#include <sodium.h>

static char dir[64];      /* the test's temporary directory */
static char agent_sock[128];
static char main_sock[128];
static char log_path[128];
static char conf_path[128];
static pid_t sigild_pid = -1;
static char out[65536];   /* output of the last run() */

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* run a shell command in dir with SSH_AUTH_SOCK set; its stdout+stderr go
 * to out. Return: the exit status (-1 if it did not exit normally). */
__attribute__((format(printf, 1, 2)))
static int run(const char *fmt, ...)
{
	char cmd[4096], full[4600], path[160];
	va_list ap;
	int st;
	FILE *f;
	size_t n;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	snprintf(path, sizeof(path), "%s/run.out", dir);
	snprintf(full, sizeof(full), "cd %s && (%s) >%s 2>&1 </dev/null", dir, cmd, path);
	st = system(full);
	out[0] = '\0';
	f = fopen(path, "r");
	if (f) {
		n = fread(out, 1, sizeof(out) - 1, f);
		out[n] = '\0';
		fclose(f);
	}
	/* a TAP diagnostic per line: a multi-line command (an inline python
	 * script) must not put bare lines into the TAP stream */
	for (char *line = cmd, *nl; line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		print_message("# %s %s\n", line == cmd ? "$" : " ", line);
	}
	print_message("# -> %d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void read_file(const char *name, char *buf, size_t n)
{
	char path[256];
	FILE *f;
	size_t k;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	k = fread(buf, 1, n - 1, f);
	buf[k] = '\0';
	fclose(f);
	while (k > 0 && (buf[k - 1] == '\n' || buf[k - 1] == '\r'))
		buf[--k] = '\0';
}

static void require_tool(const char *tool)
{
	if (run("command -v %s", tool) != 0)
		fail_msg("%s is missing: install openssh-client, openssh-server and git", tool);
}

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (strlen(path) >= sizeof(sa.sun_path)) {
		close(fd);
		return -1;
	}
	memcpy(sa.sun_path, path, strlen(path) + 1);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

static int setup_all(void **state)
{
	const char *sigild = getenv("SIGILD");

	(void)state;
	if (!sigild)
		fail_msg("SIGILD is not set");
	snprintf(dir, sizeof(dir), "/tmp/sigil-agent-XXXXXX");
	if (!mkdtemp(dir))
		fail_msg("mkdtemp: %s", strerror(errno));
	snprintf(agent_sock, sizeof(agent_sock), "%s/run/agent.sock", dir);
	snprintf(main_sock, sizeof(main_sock), "%s/run/sigild.sock", dir);
	snprintf(log_path, sizeof(log_path), "%s/sigild.log", dir);
	snprintf(conf_path, sizeof(conf_path), "%s/sigil.conf", dir);
	setenv("SSH_AUTH_SOCK", agent_sock, 1);
	/* the confirm program answers what the file "answer" says */
	{
		char path[160];
		FILE *f;

		snprintf(path, sizeof(path), "%s/confirm.sh", dir);
		f = fopen(path, "w");
		if (!f)
			fail_msg("cannot write %s", path);
		fprintf(f, "#!/bin/sh\necho \"$SSH_ASKPASS_PROMPT:$1\" >> %s/confirm.log\nexit $(cat %s/answer)\n", dir, dir);
		fclose(f);
		chmod(path, 0700);
		f = fopen(conf_path, "w");
		if (!f)
			fail_msg("cannot write %s", conf_path);
		fprintf(f, "ssh_agent_confirm_program = %s\nidle_timeout_s = 2\n", path);
		fclose(f);
	}
	/* the tools must not read the caller's ~/.ssh or ~/.gitconfig */
	setenv("HOME", dir, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	sigild_pid = fork();
	if (sigild_pid == 0) {
		char state_dir[128];
		int fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		snprintf(state_dir, sizeof(state_dir), "%s/state", dir);
		execl(sigild, sigild, "--socket", main_sock, "--ssh-agent-socket", agent_sock, "--state-dir", state_dir,
		      "--config", conf_path, "--workers", "2", "--foreground", (char *)NULL);
		_exit(127);
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000; usleep(10000)) {
		int fd = connect_unix(agent_sock), st;

		if (fd >= 0) {
			close(fd);
			return 0;
		}
		if (waitpid(sigild_pid, &st, WNOHANG) == sigild_pid)
			fail_msg("sigild exited during start-up; log in %s", log_path);
	}
	fail_msg("sigild's agent socket did not appear within 15 s");
	return -1;
}

static int teardown_all(void **state)
{
	int st = -1;

	(void)state;
	if (sigild_pid > 0) {
		kill(sigild_pid, SIGTERM);
		for (uint64_t t0 = now_ms(); now_ms() - t0 < 20000; usleep(10000))
			if (waitpid(sigild_pid, &st, WNOHANG) == sigild_pid)
				break;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			kill(sigild_pid, SIGKILL);
			fail_msg("sigild did not exit cleanly on SIGTERM");
		}
		/* it removes the agent socket it created */
		assert_int_equal(access(agent_sock, F_OK), -1);
	}
	run("rm -rf %s", dir);
	return 0;
}

/* a fresh ed25519 key file <name> (+ .pub) with comment <name> */
static void keygen(const char *name)
{
	assert_int_equal(run("rm -f %s %s.pub && ssh-keygen -q -t ed25519 -N '' -C %s -f %s", name, name, name, name), 0);
}

static void fingerprint(const char *name, char fp[128])
{
	assert_int_equal(run("ssh-keygen -l -f %s.pub | cut -d' ' -f2", name), 0);
	out[strcspn(out, "\n")] = '\0';
	assert_true(strlen(out) < 128);
	memcpy(fp, out, strlen(out) + 1);
	assert_true(strncmp(fp, "SHA256:", 7) == 0);
}

static void assert_empty(void)
{
	assert_int_equal(run("ssh-add -l"), 1);
	assert_non_null(strstr(out, "The agent has no identities."));
}

/* ---- the socket option ------------------------------------------------------ */

/* start a second sigild in dir/<name>/ with extra arguments; return its pid,
 * or -1 with *status set if it exited within 15 s of start-up */
static pid_t spawn_second(const char *name, const char *agent_arg, int *status)
{
	const char *sigild = getenv("SIGILD");
	char sock[160], state[160], logf[160];
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/%s/run/sigild.sock", dir, name);
	snprintf(state, sizeof(state), "%s/%s/state", dir, name);
	snprintf(logf, sizeof(logf), "%s/%s.log", dir, name);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int fd = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		if (agent_arg)
			execl(sigild, sigild, "--socket", sock, "--state-dir", state, "--foreground",
			      "--ssh-agent-socket", agent_arg, (char *)NULL);
		else
			execl(sigild, sigild, "--socket", sock, "--state-dir", state, "--foreground", (char *)NULL);
		_exit(127);
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000; usleep(10000)) {
		int fd = connect_unix(sock);

		if (fd >= 0) {
			close(fd);
			return pid;
		}
		if (waitpid(pid, status, WNOHANG) == pid)
			return -1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	fail_msg("the second sigild neither listened nor exited");
	return -1;
}

static void stop_second(pid_t pid)
{
	int st = -1;

	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_socket_option(void **state)
{
	char path[200];
	struct stat st;
	int status = 0;
	pid_t pid;

	(void)state;
	/* default: ssh-agent.sock next to the main socket, mode 0600, removed at exit */
	pid = spawn_second("second", NULL, &status);
	assert_true(pid > 0);
	snprintf(path, sizeof(path), "%s/second/run/ssh-agent.sock", dir);
	/* the agent socket is bound just after the main one */
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 10000 && lstat(path, &st) != 0;)
		usleep(10000);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISSOCK(st.st_mode));
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(run("SSH_AUTH_SOCK=%s ssh-add -l", path), 1);
	assert_non_null(strstr(out, "The agent has no identities."));
	stop_second(pid);
	assert_int_equal(lstat(path, &st), -1);
	/* none: no agent socket */
	pid = spawn_second("third", "none", &status);
	assert_true(pid > 0);
	usleep(500 * 1000);
	snprintf(path, sizeof(path), "%s/third/run/ssh-agent.sock", dir);
	assert_int_equal(lstat(path, &st), -1);
	stop_second(pid);
	/* an explicit path in use by a live agent: sigild refuses to start */
	pid = spawn_second("fourth", agent_sock, &status);
	/* it may answer on its main socket for a moment before it gives up */
	if (pid > 0)
		assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) != 0);
	/* and the first sigild's agent still answers */
	assert_int_equal(run("ssh-add -l"), 1);
}

/* ---- ssh-add ---------------------------------------------------------------- */

/* generate a key on the main socket (msgpack-rpc with Python's msgpack)
 * with an optional policy (a Python dict literal); out: its public key in hex */
static void main_generate(const char *label, const char *policy)
{
	int st;

	st = run("/usr/bin/python3 -c '\n"
	                     "import socket, msgpack\n"
	                     "s = socket.socket(socket.AF_UNIX); s.connect(\"%s\")\n"
	                     "p = {\"label\": \"%s\", \"type\": \"ed25519\"}\n"
	                     "pol = %s\n"
	                     "if pol: p[\"policy\"] = pol\n"
	                     "s.sendall(msgpack.packb([0, 1, \"key.generate\", [p]], use_bin_type=True))\n"
	                     "u = msgpack.Unpacker(raw=False)\n"
	                     "while True:\n"
	                     "    u.feed(s.recv(65536))\n"
	                     "    for m in u:\n"
	                     "        assert m[2] is None, m[2]\n"
	                     "        print(m[3][\"key\"][\"public_key\"].hex()); raise SystemExit(0)\n"
	                     "'", main_sock, label, policy ? policy : "None");
	if (st != 0)
		print_message("# %s\n", out);
	assert_int_equal(st, 0);
}

/* keys generated on the main socket are offered when their policy lets
 * this peer sign, and not otherwise */
static void test_policy(void **state)
{
	(void)state;
	run("ssh-add -D");
	main_generate("pol-open", NULL);
	main_generate("pol-mine", "{\"uids\": [0]}");
	main_generate("pol-other", "{\"uids\": [4242]}");
	out[strcspn(out, "\n")] = '\0';
	assert_int_equal(strlen(out), 64);
	assert_int_equal(run("/usr/bin/python3 -c 'import base64, struct; k = bytes.fromhex(\"%s\"); "
	                     "b = struct.pack(\">I\", 11) + b\"ssh-ed25519\" + struct.pack(\">I\", 32) + k; "
	                     "print(\"ssh-ed25519\", base64.b64encode(b).decode())' > polother.pub", out), 0);
	main_generate("pol-dh", "{\"ops\": [\"dh\"]}");
	assert_int_equal(run("ssh-add -L"), 0);
	assert_non_null(strstr(out, " pol-open\n"));
	assert_non_null(strstr(out, " pol-mine\n"));
	assert_null(strstr(out, " pol-other"));
	assert_null(strstr(out, " pol-dh"));
	/* pol-open signs through the agent; pol-other is refused */
	assert_int_equal(run("ssh-add -L | grep ' pol-open$' > polopen.pub"), 0);
	assert_int_equal(run("echo d > pd && rm -f pd.sig && ssh-keygen -Y sign -f polopen.pub -U -n file pd"), 0);
	assert_int_equal(run("rm -f pd.sig"), 0);
	assert_int_not_equal(run("ssh-keygen -Y sign -f polother.pub -U -n file pd"), 0);
	/* -D removes what it was shown, not the keys it may not use */
	assert_int_equal(run("ssh-add -D"), 0);
	assert_empty();
	assert_int_equal(run("ls state/keys/ | grep -c '^pol-'"), 0);
	assert_int_equal(atoi(out), 2);
}

static void test_add_list_delete(void **state)
{
	char fp[128], pub[1024];

	(void)state;
	require_tool("ssh-add");
	require_tool("ssh-keygen");
	run("ssh-add -D");
	assert_empty();
	keygen("alice");
	fingerprint("alice", fp);
	assert_int_equal(run("ssh-add alice"), 0);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, fp));
	assert_non_null(strstr(out, " alice (ED25519)"));
	/* -L prints the public key as the .pub file has it */
	read_file("alice.pub", pub, sizeof(pub));
	assert_int_equal(run("ssh-add -L"), 0);
	assert_non_null(strstr(out, pub));
	/* the key is a sigil key now, with its file in the state directory */
	assert_int_equal(run("ls state/keys/ | grep -c '^alice'"), 0);
	/* -d removes it */
	assert_int_equal(run("ssh-add -d alice.pub"), 0);
	assert_empty();
	/* removing it again fails */
	assert_int_not_equal(run("ssh-add -d alice.pub"), 0);
}

static void test_remove_all(void **state)
{
	(void)state;
	keygen("k1");
	keygen("k2");
	assert_int_equal(run("ssh-add k1 k2"), 0);
	assert_int_equal(run("ssh-add -l | wc -l"), 0);
	assert_int_equal(atoi(out), 2);
	assert_int_equal(run("ssh-add -D"), 0);
	assert_empty();
}

static void test_add_twice_and_label_clash(void **state)
{
	(void)state;
	keygen("dup");
	assert_int_equal(run("ssh-add dup"), 0);
	assert_int_equal(run("ssh-add dup"), 0);
	assert_int_equal(run("ssh-add -l | wc -l"), 0);
	assert_int_equal(atoi(out), 1);
	/* another key with the same comment gets a label of its own */
	assert_int_equal(run("rm -f dup2 dup2.pub && ssh-keygen -q -t ed25519 -N '' -C dup -f dup2"), 0);
	assert_int_equal(run("ssh-add dup2"), 0);
	assert_int_equal(run("ssh-add -l | wc -l"), 0);
	assert_int_equal(atoi(out), 2);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, " ssh-"));
	assert_int_equal(run("ssh-add -D"), 0);
}

static void test_lifetime(void **state)
{
	(void)state;
	keygen("short");
	assert_int_equal(run("ssh-add -t 1 short"), 0);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, " short (ED25519)"));
	/* a constrained key is memory-only: no key file */
	assert_int_not_equal(run("ls state/keys/ | grep '^short'"), 0);
	usleep(2500 * 1000);
	assert_empty();
	/* and its key file is gone */
	assert_int_not_equal(run("ls state/keys/ | grep '^short'"), 0);
}

static void test_persist(void **state)
{
	(void)state;
	/* a key with a key file cannot take constraints it would lose at restart */
	keygen("kept");
	assert_int_equal(run("ssh-add kept"), 0);
	assert_int_equal(run("ls state/keys/ | grep -c '^kept'"), 0);
	assert_int_not_equal(run("ssh-add -t 60 kept"), 0);
	assert_int_equal(run("ssh-add -D"), 0);
	/* ssh_agent_persist = no: keys live in memory only */
	assert_int_equal(run("cp sigil.conf sigil.conf.saved && echo 'ssh_agent_persist = no' >> sigil.conf && "
	                     "kill -HUP %d && sleep 0.5", (int)sigild_pid), 0);
	keygen("volatile");
	assert_int_equal(run("ssh-add volatile"), 0);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, " volatile (ED25519)"));
	assert_int_not_equal(run("ls state/keys/ | grep '^volatile'"), 0);
	/* and then it can take constraints */
	assert_int_equal(run("ssh-add -t 60 volatile"), 0);
	assert_int_equal(run("ssh-add -d volatile.pub"), 0);
	assert_empty();
	assert_int_equal(run("mv sigil.conf.saved sigil.conf && kill -HUP %d && sleep 0.5", (int)sigild_pid), 0);
}

static void test_confirm(void **state)
{
	(void)state;
	keygen("conf");
	assert_int_equal(run("echo 0 > answer && rm -f confirm.log"), 0);
	assert_int_equal(run("ssh-add -c conf"), 0);
	/* the program is asked before each use; exit 0 allows it */
	assert_int_equal(run("echo data > cdata && rm -f cdata.sig && ssh-keygen -Y sign -f conf.pub -U -n file cdata"), 0);
	assert_int_equal(run("cat confirm.log"), 0);
	assert_non_null(strstr(out, "confirm:Allow use of key conf (SHA256:"));
	assert_int_equal(run("echo 1 > answer && rm -f cdata.sig"), 0);
	assert_int_not_equal(run("ssh-keygen -Y sign -f conf.pub -U -n file cdata"), 0);
	assert_int_equal(run("wc -l < confirm.log"), 0);
	assert_int_equal(atoi(out), 2);
	/* without a program (configuration reloaded on SIGHUP) the constraint
	 * is refused, and the key added with it is not used */
	assert_int_equal(run("cp sigil.conf sigil.conf.saved && : > sigil.conf && kill -HUP %d && sleep 0.5",
	                     (int)sigild_pid), 0);
	keygen("conf2");
	assert_int_not_equal(run("ssh-add -c conf2"), 0);
	assert_int_equal(run("echo 0 > answer"), 0);
	assert_int_not_equal(run("ssh-keygen -Y sign -f conf.pub -U -n file cdata"), 0);
	assert_int_equal(run("mv sigil.conf.saved sigil.conf && kill -HUP %d && sleep 0.5", (int)sigild_pid), 0);
	assert_int_equal(run("ssh-add -D"), 0);
	assert_empty();
}

static void test_not_ed25519_refused(void **state)
{
	(void)state;
	assert_int_equal(run("rm -f ec ec.pub && ssh-keygen -q -t ecdsa -N '' -f ec"), 0);
	assert_int_not_equal(run("ssh-add ec"), 0);
	assert_empty();
}

static void test_lock_unlock(void **state)
{
	(void)state;
	keygen("locked");
	assert_int_equal(run("ssh-add locked"), 0);
	assert_int_equal(run("printf '#!/bin/sh\\necho hunter2\\n' > pass.sh && printf '#!/bin/sh\\necho wrong\\n' > bad.sh "
	                     "&& chmod 700 pass.sh bad.sh"), 0);
#define ASKPASS(script) "DISPLAY=:0 SSH_ASKPASS_REQUIRE=force SSH_ASKPASS=./" script " "
	assert_int_equal(run(ASKPASS("pass.sh") "ssh-add -x"), 0);
	/* locked: no identities shown, no signatures, no second lock */
	assert_empty();
	assert_int_equal(run("echo data > data.txt"), 0);
	assert_int_not_equal(run("ssh-keygen -Y sign -f locked.pub -U -n file data.txt"), 0);
	assert_int_not_equal(run(ASKPASS("pass.sh") "ssh-add -x"), 0);
	/* the wrong passphrase does not unlock */
	assert_int_not_equal(run(ASKPASS("bad.sh") "ssh-add -X"), 0);
	assert_empty();
	assert_int_equal(run(ASKPASS("pass.sh") "ssh-add -X"), 0);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, " locked (ED25519)"));
	assert_int_not_equal(run(ASKPASS("pass.sh") "ssh-add -X"), 0);
#undef ASKPASS
	assert_int_equal(run("ssh-add -D"), 0);
}

/* ---- ssh-keygen -Y and git ------------------------------------------------ */

static void test_sshsig(void **state)
{
	(void)state;
	keygen("signer");
	assert_int_equal(run("ssh-add signer && rm -f signer"), 0);
	assert_int_equal(run("head -c 100000 /dev/urandom > blob && rm -f blob.sig"), 0);
	assert_int_equal(run("ssh-keygen -Y sign -f signer.pub -U -n file blob"), 0);
	assert_int_equal(run("echo \"me $(cat signer.pub)\" > allowed"), 0);
	assert_int_equal(run("ssh-keygen -Y verify -f allowed -I me -n file -s blob.sig < blob"), 0);
	assert_non_null(strstr(out, "Good \"file\" signature for me"));
	/* a changed file does not verify */
	assert_int_equal(run("cp blob blob2 && echo x >> blob2"), 0);
	assert_int_not_equal(run("ssh-keygen -Y verify -f allowed -I me -n file -s blob.sig < blob2"), 0);
	assert_int_equal(run("ssh-add -D"), 0);
}

static void test_git_commit_signing(void **state)
{
	(void)state;
	require_tool("git");
	keygen("gitkey");
	assert_int_equal(run("ssh-add gitkey && rm -f gitkey"), 0);
	assert_int_equal(run("echo \"t@example.org $(cat gitkey.pub)\" > git-allowed"), 0);
	assert_int_equal(run("rm -rf repo && git init -q repo && cd repo && "
	                     "git config user.name T && git config user.email t@example.org && "
	                     "git config gpg.format ssh && "
	                     "git config user.signingkey \"key::$(cat ../gitkey.pub)\" && "
	                     "git config gpg.ssh.allowedSignersFile ../git-allowed && "
	                     "echo hi > f && git add f && git commit -q -S -m signed"), 0);
	assert_int_equal(run("cd repo && git verify-commit HEAD"), 0);
	assert_non_null(strstr(out, "Good \"git\" signature"));
	assert_int_equal(run("cd repo && git cat-file commit HEAD | grep -c 'BEGIN SSH SIGNATURE'"), 0);
	/* without the key in the agent, signing fails */
	assert_int_equal(run("ssh-add -D"), 0);
	assert_int_not_equal(run("cd repo && echo again >> f && git commit -q -a -S -m unsigned"), 0);
}

/* ---- ssh to an sshd on 127.0.0.1 ---------------------------------------------- */

static int free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

static void test_ssh_login(void **state)
{
	char conf[256], cmd[512];
	pid_t sshd;
	int port = free_port(), st;
	bool up = false;

	(void)state;
	require_tool("ssh");
	if (access("/usr/sbin/sshd", X_OK) != 0)
		fail_msg("/usr/sbin/sshd is missing: install openssh-server");
	if (geteuid() != 0)
		fail_msg("the sshd test runs as root (as in CI): sshd must switch to the logged-in user");
	mkdir("/run/sshd", 0755);
	keygen("login");
	assert_int_equal(run("rm -f hostkey hostkey.pub && ssh-keygen -q -t ed25519 -N '' -f hostkey"), 0);
	assert_int_equal(run("cp login.pub authorized && chmod 600 authorized"), 0);
	snprintf(conf, sizeof(conf), "%s/sshd_config", dir);
	{
		FILE *f = fopen(conf, "w");

		assert_non_null(f);
		fprintf(f,
		        "Port %d\nListenAddress 127.0.0.1\nHostKey %s/hostkey\nPidFile none\n"
		        "AuthorizedKeysFile %s/authorized\nStrictModes no\nUsePAM no\nPermitRootLogin yes\n"
		        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nPubkeyAuthentication yes\n"
		        "AllowUsers root\n",
		        port, dir, dir);
		fclose(f);
	}
	assert_int_equal(run("/usr/sbin/sshd -t -f %s", conf), 0);
	sshd = fork();
	assert_true(sshd >= 0);
	if (sshd == 0) {
		char logf[160];

		snprintf(logf, sizeof(logf), "%s/sshd.log", dir);
		execl("/usr/sbin/sshd", "/usr/sbin/sshd", "-D", "-e", "-f", conf, "-E", logf, (char *)NULL);
		_exit(127);
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 10000 && !up; usleep(20000)) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
		                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		up = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
		close(fd);
	}
	if (!up) {
		kill(sshd, SIGTERM);
		waitpid(sshd, NULL, 0);
		fail_msg("sshd did not listen on 127.0.0.1:%d", port);
	}
	snprintf(cmd, sizeof(cmd),
	         "ssh -F /dev/null -p %d -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "
	         "-o BatchMode=yes -o PasswordAuthentication=no -o IdentityFile=none -o IdentityAgent=%s "
	         "root@127.0.0.1",
	         port, agent_sock);
	/* the key only in sigild: the private key file is moved away */
	assert_int_equal(run("ssh-add -D && ssh-add login && mv login login.saved"), 0);
	st = run("%s 'echo logged-in-as-$(id -un)'", cmd);
	if (st != 0)
		run("cat sshd.log; tail -20 sigild.log");
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "logged-in-as-root"));
	/* and without it in the agent, the login fails */
	assert_int_equal(run("ssh-add -D"), 0);
	assert_int_not_equal(run("%s true", cmd), 0);

	/* restrict-destination-v00@openssh.com (ssh-add -h): the key works
	 * towards the host whose key is named, on a connection that ssh bound
	 * to that host (session-bind@openssh.com) ... */
	assert_int_equal(run("mv login.saved login && echo \"sigiltest $(cat hostkey.pub)\" > kh"), 0);
	assert_int_equal(run("ssh-add -H kh -h sigiltest login"), 0);
	assert_int_equal(run("ssh-add -l"), 0);
	assert_non_null(strstr(out, " login (ED25519)"));
	st = run("%s 'echo restricted-ok'", cmd);
	if (st != 0)
		run("cat sshd.log; tail -20 sigild.log");
	assert_int_equal(st, 0);
	assert_non_null(strstr(out, "restricted-ok"));
	/* ... but signs nothing on an unbound connection (ssh-keygen -Y) */
	assert_int_equal(run("echo data > rd.txt && rm -f rd.txt.sig"), 0);
	assert_int_not_equal(run("ssh-keygen -Y sign -f login.pub -U -n file rd.txt"), 0);
	/* a key restricted to another host's key does not log in here */
	assert_int_equal(run("ssh-add -D && rm -f other other.pub && ssh-keygen -q -t ed25519 -N '' -f other && "
	                     "echo \"otherhost $(cat other.pub)\" > kh2"), 0);
	assert_int_equal(run("ssh-add -H kh2 -h otherhost login"), 0);
	assert_int_not_equal(run("%s true", cmd), 0);
	/* and a user pattern that does not match refuses too */
	assert_int_equal(run("ssh-add -D && ssh-add -H kh -h 'nobody@sigiltest' login"), 0);
	assert_int_not_equal(run("%s true", cmd), 0);
	assert_int_equal(run("ssh-add -D && ssh-add -H kh -h 'ro*@sigiltest' login"), 0);
	assert_int_equal(run("%s true", cmd), 0);
	assert_int_equal(run("ssh-add -D"), 0);
	kill(sshd, SIGTERM);
	waitpid(sshd, NULL, 0);
}

/* ---- the raw protocol ------------------------------------------------------ */

typedef struct Buf {
	uint8_t d[4096];
	size_t n;
} Buf;

static void put_u32(Buf *b, uint32_t v)
{
	b->d[b->n++] = (uint8_t)(v >> 24);
	b->d[b->n++] = (uint8_t)(v >> 16);
	b->d[b->n++] = (uint8_t)(v >> 8);
	b->d[b->n++] = (uint8_t)v;
}

static void put_str(Buf *b, const void *s, size_t n)
{
	put_u32(b, (uint32_t)n);
	memcpy(b->d + b->n, s, n);
	b->n += n;
}

static void put_blob(Buf *b, const uint8_t pk[32])
{
	put_u32(b, 51);
	put_str(b, "ssh-ed25519", 11);
	put_str(b, pk, 32);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void write_all(int fd, const void *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		assert_true(k > 0);
		p = (const uint8_t *)p + k;
		n -= (size_t)k;
	}
}

/* send one message (the type is b->d[0]) */
static void send_msg(int fd, const Buf *b)
{
	uint8_t len[4] = { (uint8_t)(b->n >> 24), (uint8_t)(b->n >> 16), (uint8_t)(b->n >> 8), (uint8_t)b->n };

	write_all(fd, len, 4);
	write_all(fd, b->d, b->n);
}

/* read one reply into r; return its length, -1 on EOF */
static ssize_t recv_msg(int fd, uint8_t *r, size_t cap)
{
	uint8_t len[4];
	size_t got = 0, n;

	while (got < 4) {
		ssize_t k = read(fd, len + got, 4 - got);

		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	n = get_u32(len);
	assert_true(n <= cap);
	for (got = 0; got < n;) {
		ssize_t k = read(fd, r + got, n - got);

		if (k <= 0)
			return -1;
		got += (size_t)k;
	}
	return (ssize_t)n;
}

static uint8_t reply[300000];

static void test_raw_protocol(void **state)
{
	uint8_t pk[32], sk[64], seed[32], bad_sk[64];
	int fd = connect_unix(agent_sock);
	Buf b;
	ssize_t n;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(sodium_init() >= 0, 1);
	randombytes_buf(seed, sizeof(seed));
	crypto_sign_seed_keypair(pk, sk, seed);

	/* unknown type: FAILURE, and the connection lives on */
	b.n = 0;
	b.d[b.n++] = 200;
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* empty message: FAILURE */
	b.n = 0;
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* truncated add: FAILURE */
	b.n = 0;
	b.d[b.n++] = 17;
	put_str(&b, "ssh-ed25519", 11);
	put_u32(&b, 32);
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* add with a private key that does not match the public one: FAILURE */
	memcpy(bad_sk, sk, 64);
	bad_sk[0] ^= 1;
	b.n = 0;
	b.d[b.n++] = 17;
	put_str(&b, "ssh-ed25519", 11);
	put_str(&b, pk, 32);
	put_str(&b, bad_sk, 64);
	put_str(&b, "raw-bad", 7);
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* the right one: SUCCESS */
	b.n = 0;
	b.d[b.n++] = 17;
	put_str(&b, "ssh-ed25519", 11);
	put_str(&b, pk, 32);
	put_str(&b, sk, 64);
	put_str(&b, "raw", 3);
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 6);
	/* malformed restrict-destination constraints are refused (an empty
	 * list, a to-hop without host keys), and so is an unknown constraint */
	for (int k = 0; k < 3; k++) {
		Buf hop = { .n = 0 }, con = { .n = 0 }, list = { .n = 0 };

		b.n = 0;
		b.d[b.n++] = 25;
		put_str(&b, "ssh-ed25519", 11);
		put_str(&b, pk, 32);
		put_str(&b, sk, 64);
		put_str(&b, "raw-c", 5);
		if (k == 2) {
			b.d[b.n++] = 200;
		} else {
			b.d[b.n++] = 255;
			put_str(&b, "restrict-destination-v00@openssh.com", 36);
			if (k == 1) {
				/* from: empty hop; to: host "h" and no keys */
				put_str(&hop, "", 0);
				put_str(&hop, "", 0);
				put_str(&hop, "", 0);
				put_str(&con, hop.d, hop.n);
				hop.n = 0;
				put_str(&hop, "", 0);
				put_str(&hop, "h", 1);
				put_str(&hop, "", 0);
				put_str(&con, hop.d, hop.n);
				put_str(&con, "", 0);
				put_str(&list, con.d, con.n);
			}
			put_str(&b, list.d, list.n);
		}
		send_msg(fd, &b);
		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
		assert_int_equal(reply[0], 5);
	}
	/* identities: one, ours, comment = label */
	b.n = 0;
	b.d[b.n++] = 11;
	send_msg(fd, &b);
	n = recv_msg(fd, reply, sizeof(reply));
	assert_int_equal(n, 1 + 4 + 4 + 51 + 4 + 3);
	assert_int_equal(reply[0], 12);
	assert_int_equal(get_u32(reply + 1), 1);
	assert_memory_equal(reply + 9 + 19, pk, 32);
	assert_memory_equal(reply + 9 + 51 + 4, "raw", 3);
	/* sign: a valid Ed25519 signature over the data */
	for (int round = 0; round < 3; round++) {
		static const char data[] = "data to be signed by sigild's agent";

		b.n = 0;
		b.d[b.n++] = 13;
		put_blob(&b, pk);
		put_str(&b, data, sizeof(data) - 1);
		put_u32(&b, 0);
		send_msg(fd, &b);
		n = recv_msg(fd, reply, sizeof(reply));
		assert_int_equal(n, 1 + 4 + 4 + 11 + 4 + 64);
		assert_int_equal(reply[0], 14);
		assert_int_equal(get_u32(reply + 1), 83);
		assert_memory_equal(reply + 9, "ssh-ed25519", 11);
		assert_int_equal(crypto_sign_verify_detached(reply + 24, (const uint8_t *)data, sizeof(data) - 1, pk), 0);
	}
	/* flags other than 0 (RSA SHA-2 bits): FAILURE */
	b.n = 0;
	b.d[b.n++] = 13;
	put_blob(&b, pk);
	put_str(&b, "x", 1);
	put_u32(&b, 2);
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* a key the agent does not hold: FAILURE */
	{
		uint8_t other[32];

		memcpy(other, pk, 32);
		other[5] ^= 0x40;
		b.n = 0;
		b.d[b.n++] = 13;
		put_blob(&b, other);
		put_str(&b, "x", 1);
		put_u32(&b, 0);
		send_msg(fd, &b);
		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
		assert_int_equal(reply[0], 5);
	}
	/* query extension: lists session-bind@openssh.com */
	b.n = 0;
	b.d[b.n++] = 27;
	put_str(&b, "query", 5);
	send_msg(fd, &b);
	n = recv_msg(fd, reply, sizeof(reply));
	assert_true(n > 1);
	assert_int_equal(reply[0], 29);
	assert_non_null(memmem(reply, (size_t)n, "session-bind@openssh.com", 24));
	/* unknown extension: FAILURE */
	b.n = 0;
	b.d[b.n++] = 27;
	put_str(&b, "nope@example.org", 16);
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 5);
	/* session-bind with a valid host signature: SUCCESS; a bad one: FAILURE */
	{
		uint8_t hpk[32], hsk[64], sid[32], sig[64];

		crypto_sign_keypair(hpk, hsk);
		randombytes_buf(sid, sizeof(sid));
		crypto_sign_detached(sig, NULL, sid, sizeof(sid), hsk);
		for (int good = 1; good >= 0; good--) {
			b.n = 0;
			b.d[b.n++] = 27;
			put_str(&b, "session-bind@openssh.com", 24);
			put_blob(&b, hpk);
			put_str(&b, sid, sizeof(sid));
			put_u32(&b, 83);
			put_str(&b, "ssh-ed25519", 11);
			if (!good)
				sig[10] ^= 1;
			put_str(&b, sig, 64);
			b.d[b.n++] = 0;
			send_msg(fd, &b);
			assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
			assert_int_equal(reply[0], good ? 6 : 5);
		}
	}
	/* pipelined requests: answers in order */
	{
		Buf all = { .n = 0 };
		Buf one;

		for (int i = 0; i < 20; i++) {
			one.n = 0;
			if (i % 2) {
				one.d[one.n++] = 11;
			} else {
				one.d[one.n++] = 13;
				put_blob(&one, pk);
				put_str(&one, "p", 1);
				put_u32(&one, 0);
			}
			put_u32(&all, (uint32_t)one.n);
			memcpy(all.d + all.n, one.d, one.n);
			all.n += one.n;
		}
		write_all(fd, all.d, all.n);
		for (int i = 0; i < 20; i++) {
			n = recv_msg(fd, reply, sizeof(reply));
			assert_true(n > 0);
			assert_int_equal(reply[0], i % 2 ? 12 : 14);
		}
	}
	/* remove it: SUCCESS; again: FAILURE */
	for (int i = 0; i < 2; i++) {
		b.n = 0;
		b.d[b.n++] = 18;
		put_blob(&b, pk);
		send_msg(fd, &b);
		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
		assert_int_equal(reply[0], i == 0 ? 6 : 5);
	}
	/* more than 256 KiB: the connection is closed */
	{
		uint8_t len[4] = { 0, 4, 0, 1 };

		write_all(fd, len, 4);
		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), -1);
	}
	close(fd);
	/* the daemon still serves */
	assert_int_equal(run("ssh-add -l"), 1);
}

/* a client that hangs up mid-message does not disturb others */
static void test_partial_and_hangup(void **state)
{
	int fd = connect_unix(agent_sock), fd2 = connect_unix(agent_sock);
	uint8_t part[6] = { 0, 0, 0, 1, 11, 0 };
	Buf b = { .n = 0 };

	(void)state;
	assert_true(fd >= 0 && fd2 >= 0);
	/* one byte at a time */
	for (int i = 0; i < 5; i++) {
		write_all(fd2, part + i, 1);
		usleep(1000);
	}
	assert_true(recv_msg(fd2, reply, sizeof(reply)) > 0);
	assert_int_equal(reply[0], 12);
	write_all(fd, part, 3);
	close(fd);
	/* a message left incomplete for idle_timeout_s (2 s here) closes the
	 * connection; a slow but complete one a moment ago did not */
	fd = connect_unix(agent_sock);
	assert_true(fd >= 0);
	write_all(fd, part, 2);
	{
		uint64_t t0 = now_ms();

		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), -1);
		assert_true(now_ms() - t0 >= 1500);
		assert_true(now_ms() - t0 < 10000);
	}
	close(fd);
	b.d[b.n++] = 11;
	send_msg(fd2, &b);
	assert_true(recv_msg(fd2, reply, sizeof(reply)) > 0);
	assert_int_equal(reply[0], 12);
	close(fd2);
}

static long rss_kb(pid_t pid)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmRSS: %ld", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* a client that sends 300000 requests and reads nothing for a while: sigild
 * stops reading it instead of queueing answers without bound */
static void test_backpressure(void **state)
{
	enum { N = 300000 };
	int fd = connect_unix(agent_sock);
	static uint8_t rd[1 << 16];
	size_t n = 0, have = 0;
	long before, during;
	pid_t writer;
	int st;

	(void)state;
	assert_true(fd >= 0);
	for (int i = 0; i < 6; i++) {
		char name[16];

		snprintf(name, sizeof(name), "bp%d", i);
		keygen(name);
		assert_int_equal(run("ssh-add %s", name), 0);
	}
	before = rss_kb(sigild_pid);
	writer = fork();
	assert_true(writer >= 0);
	if (writer == 0) {
		static const uint8_t req[5] = { 0, 0, 0, 1, 11 };
		static uint8_t all[5 * 4096];

		for (size_t i = 0; i < sizeof(all); i += 5)
			memcpy(all + i, req, 5);
		for (int i = 0; i < N / 4096; i++)
			if (write(fd, all, sizeof(all)) != (ssize_t)sizeof(all))
				_exit(1);
		if (write(fd, all, 5 * (N % 4096)) != 5 * (N % 4096))
			_exit(1);
		_exit(0);
	}
	usleep(2000 * 1000);
	during = rss_kb(sigild_pid);
	print_message("# sigild RSS %ld kB before, %ld kB with %d answers unread\n", before, during, N);
	/* each answer is about 440 bytes: 130 MB if they were all queued */
	assert_true(during - before < 32 * 1024);
	/* all answers arrive, in order */
	while (n < N) {
		ssize_t k = read(fd, rd + have, sizeof(rd) - have);
		size_t off = 0;

		assert_true(k > 0);
		have += (size_t)k;
		while (have - off >= 5) {
			uint32_t len = get_u32(rd + off);

			if (have - off < 4 + (size_t)len)
				break;
			assert_int_equal(rd[off + 4], 12);
			off += 4 + len;
			n++;
		}
		memmove(rd, rd + off, have - off);
		have -= off;
	}
	assert_int_equal(waitpid(writer, &st, 0), writer);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	close(fd);
	assert_int_equal(run("ssh-add -D"), 0);
}

/* ---- signing on the loop thread: pipelines, confirm, unlock ------------------ */

/* add (pk, sk) over fd with the raw protocol, with the confirm constraint if
 * asked; assert SUCCESS */
static void raw_add(int fd, const uint8_t pk[32], const uint8_t sk[64], const char *comment, bool confirm)
{
	Buf b = { .n = 0 };

	b.d[b.n++] = confirm ? 25 : 17;
	put_str(&b, "ssh-ed25519", 11);
	put_str(&b, pk, 32);
	put_str(&b, sk, 64);
	put_str(&b, comment, strlen(comment));
	if (confirm)
		b.d[b.n++] = 2; /* SSH_AGENT_CONSTRAIN_CONFIRM */
	send_msg(fd, &b);
	assert_int_equal(recv_msg(fd, reply, sizeof(reply)), 1);
	assert_int_equal(reply[0], 6);
}

/* append one framed SIGN_REQUEST for pk over msg to all */
static void put_sign_request(uint8_t *all, size_t *n, size_t cap, const uint8_t pk[32], const char *msg)
{
	Buf one = { .n = 0 };

	one.d[one.n++] = 13;
	put_blob(&one, pk);
	put_str(&one, msg, strlen(msg));
	put_u32(&one, 0);
	assert_true(*n + 4 + one.n <= cap);
	all[*n + 0] = (uint8_t)(one.n >> 24);
	all[*n + 1] = (uint8_t)(one.n >> 16);
	all[*n + 2] = (uint8_t)(one.n >> 8);
	all[*n + 3] = (uint8_t)one.n;
	memcpy(all + *n + 4, one.d, one.n);
	*n += 4 + one.n;
}

/* the reply in reply[0..n) is a SIGN_RESPONSE with a valid signature of msg by pk */
static bool sign_reply_valid(ssize_t n, const uint8_t pk[32], const char *msg)
{
	return n == 1 + 4 + 4 + 11 + 4 + 64 && reply[0] == 14 && get_u32(reply + 1) == 83 &&
	       memcmp(reply + 9, "ssh-ed25519", 11) == 0 && get_u32(reply + 20) == 64 &&
	       crypto_sign_verify_detached(reply + 24, (const uint8_t *)msg, strlen(msg), pk) == 0;
}

/* 500 sign requests in one write: 500 valid signatures, in request order
 * (each message differs, so a signature verifies only in its place) */
static void test_pipelined_signs(void **state)
{
	enum { N = 500 };
	static uint8_t all[N * 128];
	uint8_t pk[32], sk[64];
	size_t n = 0;
	int fd = connect_unix(agent_sock), good = 0;

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(sodium_init() >= 0, 1);
	crypto_sign_keypair(pk, sk);
	raw_add(fd, pk, sk, "pipe", false);
	for (int i = 0; i < N; i++) {
		char msg[64];

		snprintf(msg, sizeof(msg), "pipelined request %d", i);
		put_sign_request(all, &n, sizeof(all), pk, msg);
	}
	write_all(fd, all, n);
	for (int i = 0; i < N; i++) {
		char msg[64];
		ssize_t k = recv_msg(fd, reply, sizeof(reply));

		snprintf(msg, sizeof(msg), "pipelined request %d", i);
		if (sign_reply_valid(k, pk, msg))
			good++;
		else
			print_message("# answer %d: %zd bytes, type %d: not a valid signature of its request\n", i, k,
			              k > 0 ? reply[0] : -1);
	}
	assert_int_equal(good, N);
	close(fd);
	/* a few requests, then the client half-closes at once: every answer
	 * still comes, then sigild closes */
	for (int m = 1; m <= 3; m++) {
		fd = connect_unix(agent_sock);
		assert_true(fd >= 0);
		n = 0;
		for (int i = 0; i < m; i++) {
			char msg[64];

			snprintf(msg, sizeof(msg), "half-closed request %d", i);
			put_sign_request(all, &n, sizeof(all), pk, msg);
		}
		write_all(fd, all, n);
		assert_int_equal(shutdown(fd, SHUT_WR), 0);
		good = 0;
		for (int i = 0; i < m; i++) {
			char msg[64];
			ssize_t k = recv_msg(fd, reply, sizeof(reply));

			snprintf(msg, sizeof(msg), "half-closed request %d", i);
			good += sign_reply_valid(k, pk, msg);
		}
		assert_int_equal(good, m);
		assert_int_equal(recv_msg(fd, reply, sizeof(reply)), -1);
		close(fd);
	}
	fd = -1;
	sodium_memzero(sk, sizeof(sk));
	assert_int_equal(run("ssh-add -D"), 0);
}

/* pipelined requests for a plain key and a key with the confirm constraint
 * (whose signatures wait for the confirm program): answers in request
 * order, with the program saying yes, then no */
static void test_pipelined_confirm_mix(void **state)
{
	enum { N = 24 };
	static uint8_t all[N * 128];
	uint8_t ppk[32], psk[64], cpk[32], csk[64];
	int fd = connect_unix(agent_sock);

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(sodium_init() >= 0, 1);
	crypto_sign_keypair(ppk, psk);
	crypto_sign_keypair(cpk, csk);
	raw_add(fd, ppk, psk, "mix-plain", false);
	raw_add(fd, cpk, csk, "mix-confirm", true);
	for (int yes = 1; yes >= 0; yes--) {
		size_t n = 0;
		int good = 0;

		assert_int_equal(run("echo %d > answer && rm -f confirm.log", yes ? 0 : 1), 0);
		/* plain, plain, confirm, identities, ... */
		for (int i = 0; i < N; i++) {
			char msg[64];

			snprintf(msg, sizeof(msg), "mixed %d request %d", yes, i);
			if (i % 4 == 3) {
				uint8_t id[5] = { 0, 0, 0, 1, 11 };

				assert_true(n + 5 <= sizeof(all));
				memcpy(all + n, id, 5);
				n += 5;
			} else {
				put_sign_request(all, &n, sizeof(all), i % 4 == 2 ? cpk : ppk, msg);
			}
		}
		write_all(fd, all, n);
		for (int i = 0; i < N; i++) {
			char msg[64];
			ssize_t k = recv_msg(fd, reply, sizeof(reply));
			bool ok;

			snprintf(msg, sizeof(msg), "mixed %d request %d", yes, i);
			if (i % 4 == 3)
				ok = k > 5 && reply[0] == 12 && get_u32(reply + 1) == 2;
			else if (i % 4 == 2 && !yes)
				ok = k == 1 && reply[0] == 5;
			else
				ok = sign_reply_valid(k, i % 4 == 2 ? cpk : ppk, msg);
			if (!ok)
				print_message("# confirm %s, answer %d: %zd bytes, type %d: not the answer to its request\n",
				              yes ? "yes" : "no", i, k, k > 0 ? reply[0] : -1);
			good += ok;
		}
		assert_int_equal(good, N);
		/* the program was asked once per confirm-key request */
		assert_int_equal(run("wc -l < confirm.log"), 0);
		assert_int_equal(atoi(out), N / 4);
	}
	sodium_memzero(psk, sizeof(psk));
	sodium_memzero(csk, sizeof(csk));
	close(fd);
	assert_int_equal(run("ssh-add -D"), 0);
}

/* fairness: one client's pipeline does not hold the loop. With sigild
 * stopped, client A queues 900 sign requests (one read's worth) and then
 * client B one; once sigild runs again, B's signature comes after at most
 * one phase's budget of A's (256 requests: four turns of 64), not after all
 * 900, as the audit lines show. */
static void test_pipeline_fairness(void **state)
{
	enum { N = 900 };
	static uint8_t all[N * 80];
	uint8_t apk[32], ask[64], bpk[32], bsk[64], one[128];
	size_t n = 0, m = 0;
	int a = connect_unix(agent_sock), b = connect_unix(agent_sock), before;

	(void)state;
	assert_true(a >= 0 && b >= 0);
	assert_int_equal(sodium_init() >= 0, 1);
	crypto_sign_keypair(apk, ask);
	crypto_sign_keypair(bpk, bsk);
	raw_add(a, apk, ask, "fairA", false);
	raw_add(b, bpk, bsk, "fairB", false);
	for (int i = 0; i < N; i++)
		put_sign_request(all, &n, sizeof(all), apk, "a");
	assert_true(n <= 64 * 1024); /* sigild reads 64 KiB at a time */
	put_sign_request(one, &m, sizeof(one), bpk, "b");
	assert_int_equal(kill(sigild_pid, SIGSTOP), 0);
	for (uint64_t t0 = now_ms();; usleep(1000)) {
		char st = '?';

		assert_int_equal(th_proc_stat((int)sigild_pid, &st, NULL), 0);
		if (st == 'T')
			break; /* stopped */
		assert_true(now_ms() - t0 < 10000);
	}
	write_all(a, all, n);
	write_all(b, one, m);
	assert_int_equal(kill(sigild_pid, SIGCONT), 0);
	assert_true(sign_reply_valid(recv_msg(b, reply, sizeof(reply)), bpk, "b"));
	for (int i = 0; i < N; i++)
		assert_true(sign_reply_valid(recv_msg(a, reply, sizeof(reply)), apk, "a"));
	/* A's signatures audited before B's */
	assert_int_equal(run("awk '/ key=fairA .*op=ssh-sign result=ok/ { a++ } "
	                     "/ key=fairB .*op=ssh-sign result=ok/ { print a + 0; exit }' %s", log_path), 0);
	before = atoi(out);
	print_message("# %d of client A's %d signatures came before client B's\n", before, N);
	assert_true(out[0] >= '0' && out[0] <= '9');
	assert_true(before <= 256);
	sodium_memzero(ask, sizeof(ask));
	sodium_memzero(bsk, sizeof(bsk));
	close(a);
	close(b);
	assert_int_equal(run("ssh-add -D"), 0);
}

/* one msgpack-rpc call on the main socket, hand-encoded: [0, id, method,
 * [{"passphrase": pass}]] or [0, id, method, [{}]]; send only */
static void main_call(int fd, uint8_t id, const char *method, const char *pass)
{
	uint8_t m[128];
	size_t n = 0;

	assert_true(id < 128 && strlen(method) < 32 && (!pass || strlen(pass) < 32));
	m[n++] = 0x94;
	m[n++] = 0;
	m[n++] = id;
	m[n++] = (uint8_t)(0xa0 | strlen(method));
	memcpy(m + n, method, strlen(method));
	n += strlen(method);
	m[n++] = 0x91;
	if (pass) {
		m[n++] = 0x81;
		m[n++] = 0xa0 | 10;
		memcpy(m + n, "passphrase", 10);
		n += 10;
		m[n++] = (uint8_t)(0xa0 | strlen(pass));
		memcpy(m + n, pass, strlen(pass));
		n += strlen(pass);
	} else {
		m[n++] = 0x80;
	}
	write_all(fd, m, n);
}

/* the answer to main_call: [1, id, nil, {}] (no error, empty result) */
static void main_expect_ok(int fd, uint8_t id)
{
	uint8_t r[5], want[5] = { 0x94, 1, id, 0xc0, 0x80 };
	size_t got = 0;

	while (got < sizeof(r)) {
		ssize_t k = read(fd, r + got, sizeof(r) - got);

		assert_true(k > 0);
		got += (size_t)k;
	}
	assert_memory_equal(r, want, sizeof(want));
}

static bool readable_now(int fd)
{
	fd_set fds;
	struct timeval tv = { 0, 0 };

	FD_ZERO(&fds);
	FD_SET(fd, &fds);
	return select(fd + 1, &fds, NULL, NULL, &tv) == 1;
}

/* Start a sigild of its own under dir/NAME with both sockets and the
 * options in opts (NULL-terminated, at most 4), its log in dir/NAME.log;
 * connect to its main socket (*mfd, if mfd) and its agent socket (*afd).
 * Returns its pid. */
static pid_t spawn_with_agent(const char *name, const char *const *opts, int *mfd, int *afd)
{
	const char *sigild = getenv("SIGILD");
	char sock[160], asock[160], state_dir[160], logf[160];
	int st;
	pid_t pid;

	snprintf(sock, sizeof(sock), "%s/%s/run/sigild.sock", dir, name);
	snprintf(asock, sizeof(asock), "%s/%s/run/agent.sock", dir, name);
	snprintf(state_dir, sizeof(state_dir), "%s/%s/state", dir, name);
	snprintf(logf, sizeof(logf), "%s/%s.log", dir, name);
	if (mfd)
		*mfd = -1;
	*afd = -1;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[16] = { sigild, "--socket", sock, "--ssh-agent-socket", asock, "--state-dir",
			                 state_dir, "--foreground" };
		int n = 8, fd = open(logf, O_WRONLY | O_CREAT | O_APPEND, 0600);

		if (fd >= 0) {
			dup2(fd, STDERR_FILENO);
			close(fd);
		}
		for (size_t i = 0; opts && opts[i] && n < 12; i++)
			argv[n++] = opts[i];
		argv[n] = NULL;
		execv(sigild, (char *const *)argv);
		_exit(127);
	}
	for (uint64_t t0 = now_ms(); now_ms() - t0 < 15000 && ((mfd && *mfd < 0) || *afd < 0); usleep(10000)) {
		if (mfd && *mfd < 0)
			*mfd = connect_unix(sock);
		if (*afd < 0)
			*afd = connect_unix(asock);
		if (waitpid(pid, &st, WNOHANG) == pid)
			fail_msg("the %s sigild exited during start-up; log in %s", name, logf);
	}
	if ((mfd && *mfd < 0) || *afd < 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		fail_msg("the %s sigild did not listen within 15 s", name);
	}
	return pid;
}

/* a sigild sealed under a passphrase: while an unlock runs on the pool
 * (Argon2id), the agent socket's sign waits for it (the core holds the
 * keystore for the unlock, for both sockets) and signs once it is done */
static void test_sign_during_unlock(void **state)
{
	/* Argon2id with 4 passes over 64 MiB: an unlock takes a while */
	static const char *const opts[] = { "--passphrase", "--pwhash-ops", "4", NULL };
	static const char msg[] = "signed through the agent during an unlock";
	uint8_t pk[32], sk[64], all[256];
	size_t n = 0;
	int mfd, afd;
	pid_t pid;
	ssize_t k;

	(void)state;
	assert_int_equal(sodium_init() >= 0, 1);
	pid = spawn_with_agent("sealed", opts, &mfd, &afd);
	/* the first unlock sets the passphrase; a key through the agent; lock */
	main_call(mfd, 1, "unlock", "agent test");
	main_expect_ok(mfd, 1);
	crypto_sign_keypair(pk, sk);
	raw_add(afd, pk, sk, "sealed", false);
	main_call(mfd, 2, "lock", NULL);
	main_expect_ok(mfd, 2);
	/* the unlock, and at once a sign and a listing on the agent socket:
	 * the unlock owns the keystore (ops.c), so both wait for it, as the
	 * main socket's requests do, and are answered once it is done */
	put_sign_request(all, &n, sizeof(all), pk, msg);
	all[n++] = 0;
	all[n++] = 0;
	all[n++] = 0;
	all[n++] = 1;
	all[n++] = 11;
	main_call(mfd, 3, "unlock", "agent test");
	usleep(2000);
	write_all(afd, all, n);
	/* nothing from the agent before the unlock's answer */
	if (readable_now(afd))
		fail_msg("the agent answered while the unlock still ran");
	main_expect_ok(mfd, 3);
	k = recv_msg(afd, reply, sizeof(reply));
	assert_true(sign_reply_valid(k, pk, msg));
	k = recv_msg(afd, reply, sizeof(reply));
	assert_true(k > 5 && reply[0] == 12 && get_u32(reply + 1) == 1);
	/* unlocked: the same request signs at once */
	write_all(afd, all, n);
	k = recv_msg(afd, reply, sizeof(reply));
	assert_true(sign_reply_valid(k, pk, msg));
	k = recv_msg(afd, reply, sizeof(reply));
	assert_true(k > 5 && reply[0] == 12 && get_u32(reply + 1) == 1);
	sodium_memzero(sk, sizeof(sk));
	close(afd);
	close(mfd);
	stop_second(pid);
}

/* signatures through the agent socket are uses of the keys: they postpone
 * auto-lock like the main socket's; without them it locks */
static void test_agent_sign_postpones_auto_lock(void **state)
{
	static const char *const opts[] = { "--auto-lock", "2s", NULL };
	static char log[65536];
	static const char msg[] = "signed to keep the keys unlocked";
	uint8_t pk[32], sk[64], all[256];
	size_t n = 0;
	int afd;
	pid_t pid;
	ssize_t k;
	uint64_t t0;

	(void)state;
	assert_int_equal(sodium_init() >= 0, 1);
	pid = spawn_with_agent("autolock", opts, NULL, &afd);
	crypto_sign_keypair(pk, sk);
	raw_add(afd, pk, sk, "autolock", false);
	put_sign_request(all, &n, sizeof(all), pk, msg);
	/* a signature every 0.4 s for 4 s, twice the auto-lock time: all sign */
	for (t0 = now_ms(); now_ms() - t0 < 4000; usleep(400 * 1000)) {
		write_all(afd, all, n);
		k = recv_msg(afd, reply, sizeof(reply));
		if (!sign_reply_valid(k, pk, msg))
			fail_msg("an agent sign %llu ms into a stream of signs failed: auto-lock was not postponed",
			         (unsigned long long)(now_ms() - t0));
	}
	/* quiet for longer than auto_lock: locked, and the agent refuses */
	usleep(3500 * 1000);
	write_all(afd, all, n);
	k = recv_msg(afd, reply, sizeof(reply));
	assert_int_equal(k, 1);
	assert_int_equal(reply[0], 5);
	read_file("autolock.log", log, sizeof(log));
	assert_non_null(strstr(log, "why=\"auto-lock\""));
	sodium_memzero(sk, sizeof(sk));
	close(afd);
	stop_second(pid);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_raw_protocol),
		cmocka_unit_test(test_partial_and_hangup),
		cmocka_unit_test(test_backpressure),
		cmocka_unit_test(test_pipelined_signs),
		cmocka_unit_test(test_pipelined_confirm_mix),
		cmocka_unit_test(test_pipeline_fairness),
		cmocka_unit_test(test_sign_during_unlock),
		cmocka_unit_test(test_agent_sign_postpones_auto_lock),
		cmocka_unit_test(test_socket_option),
		cmocka_unit_test(test_policy),
		cmocka_unit_test(test_add_list_delete),
		cmocka_unit_test(test_remove_all),
		cmocka_unit_test(test_add_twice_and_label_clash),
		cmocka_unit_test(test_lifetime),
		cmocka_unit_test(test_confirm),
		cmocka_unit_test(test_persist),
		cmocka_unit_test(test_not_ed25519_refused),
		cmocka_unit_test(test_lock_unlock),
		cmocka_unit_test(test_sshsig),
		cmocka_unit_test(test_git_commit_signing),
		cmocka_unit_test(test_ssh_login),
	};

	return cmocka_run_group_tests(tests, setup_all, teardown_all);
}
