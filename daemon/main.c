/* SPDX-License-Identifier: MIT */
/*
 * main.c - sigild: command line, defaults, process hardening, start-up
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>
#include <fcntl.h>

#include "config.h"
#include "audit.h"
#include "keystore.h"
#include "listener.h"
#include "log.h"
#include "secmem.h"
#include "server.h"
#include "version.h"

static void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ __attribute__((cleanup(freep)))

static void usage(FILE *f)
{
	fprintf(f,
	        "Usage: sigild [OPTIONS]\n"
	        "Hold Ed25519 and X25519 keys in locked memory and answer sign, verify and dh\n"
	        "requests (msgpack-rpc) on a Unix socket.\n"
	        "\n"
	        "  --socket PATH            listening socket (default below)\n"
	        "  --ssh-agent-socket PATH  ssh-agent protocol socket (default: ssh-agent.sock\n"
	        "                           next to the socket; \"none\" turns it off)\n"
	        "  --ssh-agent-upstream SOCK  another ssh-agent for the keys sigild does not hold\n"
	        "                           (RSA, ECDSA, sk-*; config ssh_agent_upstream)\n"
	        "  --state-dir DIR          key storage directory (default below)\n"
	        "  --config FILE            configuration file (key = value; see sigil.conf.example);\n"
	        "                           the options below from --master-key-file to --auto-lock\n"
	        "                           have config keys too (master_key_file, passphrase, ...)\n"
	        "  --workers N              worker threads (default: config 'workers', else CPUs)\n"
	        "  --foreground             do not detach (implied under systemd)\n"
	        "  --allow-unlocked-memory  start even if mlock fails (secrets may be swapped)\n"
	        "  --master-key-file FILE   master key sealing the key files (32 bytes or 64 hex)\n"
	        "  --passphrase             seal under a passphrase: start locked, `sigil unlock`\n"
	        "  --pwhash-ops N           Argon2id opslimit for a new passphrase (default 2)\n"
	        "  --pwhash-mem KIB         Argon2id memlimit in KiB (default 65536)\n"
	        "  --ephemeral              keep keys in memory only (nothing on disk)\n"
	        "  --audit-file FILE        also append the audit trail to FILE (mode 0600)\n"
	        "  --auto-lock N[s|m]       lock after N minutes (or seconds) without sign/dh\n"
	        "  --verbose                log debug messages\n"
	        "  --help                   show this help\n"
	        "  --version                show the version\n"
	        "\n"
	        "Defaults:\n"
	        "  socket:    $RUNTIME_DIRECTORY/sigild.sock under systemd, else\n"
	        "             $XDG_RUNTIME_DIR/sigil/sigild.sock, else (root) /run/sigil/sigild.sock\n"
	        "  state dir: $STATE_DIRECTORY under systemd, else $XDG_STATE_HOME/sigil, else\n"
	        "             (root) /var/lib/sigil, else $HOME/.local/state/sigil\n"
	        "The socket is mode 0600 (0660 with socket_group) in a 0700 directory; the\n"
	        "state directory must not be readable or writable by group or others.\n"
	        "Master key: $CREDENTIALS_DIRECTORY/master-key, else --master-key-file, else\n"
	        "--passphrase (or an existing passphrase.params), else <state dir>/master.key\n"
	        "(generated; then only file permissions protect the keys: docs/security.md).\n");
}

/* the first entry of a colon-separated systemd directory list */
static char *first_dir(const char *list)
{
	const char *colon = strchr(list, ':');

	return strndup(list, colon ? (size_t)(colon - list) : strlen(list));
}

static char *join(const char *a, const char *b)
{
	char *p;

	if (asprintf(&p, "%s/%s", a, b) < 0)
		return NULL;
	return p;
}

static char *default_socket(void)
{
	const char *e;

	if ((e = getenv("RUNTIME_DIRECTORY")) && *e) {
		char *d = first_dir(e), *p = d ? join(d, PROTO_SOCKET_NAME) : NULL;

		free(d);
		return p;
	}
	if ((e = getenv("XDG_RUNTIME_DIR")) && *e)
		return join(e, PROTO_SOCKET_DIR "/" PROTO_SOCKET_NAME);
	if (geteuid() == 0)
		return strdup(PROTO_SOCKET_ROOT);
	return NULL;
}

static char *default_state_dir(void)
{
	const char *e;

	if ((e = getenv("STATE_DIRECTORY")) && *e)
		return first_dir(e);
	if ((e = getenv("XDG_STATE_HOME")) && *e)
		return join(e, "sigil");
	if (geteuid() == 0)
		return strdup("/var/lib/sigil");
	if ((e = getenv("HOME")) && *e)
		return join(e, ".local/state/sigil");
	return NULL;
}

static void harden(void)
{
	struct rlimit rl = { 0, 0 };

	/* no core dumps, no ptrace by other processes of the same uid */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		log_warn("PR_SET_DUMPABLE failed: %s", strerror(errno));
	if (setrlimit(RLIMIT_CORE, &rl) < 0)
		log_warn("setting RLIMIT_CORE to 0 failed: %s", strerror(errno));
	/* one fd per connection: use the hard limit */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
	/* A request of up to 64 MiB (a long verify) is read into a buffer of
	 * its size, which glibc would mmap and munmap each time: page faults
	 * on the loop thread and a munmap (TLB shootdowns on every CPU of the
	 * workers) that held a 1-connection signer for 7-12 ms beside back to
	 * back 32 MiB verifies, against 5 ms from the heap (docs/throughput.md,
	 * issue 18). Freed memory stays in the heap; every secret is wiped
	 * before it is freed. */
	mallopt(M_MMAP_THRESHOLD, 128 << 20);
	mallopt(M_TRIM_THRESHOLD, 128 << 20);
#endif
}

/*
 * Detach. Return: 0 in the child (which writes a byte to *notify_fdp once
 * listening), 1 in the parent once it knows the outcome (*exitp: 0 if the
 * child is listening, 1 if it failed), or negative errno.
 */
static int daemonize(int *notify_fdp, int *exitp)
{
	int p[2];
	pid_t pid;
	char c;

	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid > 0) {
		close(p[1]);
		*exitp = read(p[0], &c, 1) == 1 ? 0 : 1;
		close(p[0]);
		return 1;
	}
	close(p[0]);
	setsid();
	{
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			dup2(fd, STDOUT_FILENO);
			if (fd > STDERR_FILENO)
				close(fd);
		}
	}
	*notify_fdp = p[1];
	return 0;
}

int main(int argc, char **argv)
{
	enum { OPT_SOCKET = 256, OPT_AGENT_SOCKET, OPT_STATE, OPT_CONFIG, OPT_WORKERS, OPT_FOREGROUND, OPT_UNLOCKED,
	       OPT_VERBOSE, OPT_HELP, OPT_VERSION, OPT_MASTER_KEY_FILE, OPT_PASSPHRASE, OPT_EPHEMERAL,
	       OPT_PWHASH_OPS, OPT_PWHASH_MEM, OPT_AUDIT_FILE, OPT_AUTO_LOCK, OPT_AGENT_UPSTREAM };
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, OPT_SOCKET },
		{ "ssh-agent-socket", required_argument, NULL, OPT_AGENT_SOCKET },
		{ "ssh-agent-upstream", required_argument, NULL, OPT_AGENT_UPSTREAM },
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "foreground", no_argument, NULL, OPT_FOREGROUND },
		{ "allow-unlocked-memory", no_argument, NULL, OPT_UNLOCKED },
		{ "verbose", no_argument, NULL, OPT_VERBOSE },
		{ "master-key-file", required_argument, NULL, OPT_MASTER_KEY_FILE },
		{ "passphrase", no_argument, NULL, OPT_PASSPHRASE },
		{ "ephemeral", no_argument, NULL, OPT_EPHEMERAL },
		{ "audit-file", required_argument, NULL, OPT_AUDIT_FILE },
		{ "auto-lock", required_argument, NULL, OPT_AUTO_LOCK },
		{ "pwhash-ops", required_argument, NULL, OPT_PWHASH_OPS },
		{ "pwhash-mem", required_argument, NULL, OPT_PWHASH_MEM },
		{ "help", no_argument, NULL, OPT_HELP },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ 0 },
	};
	_cleanup_free_ char *socket_path = NULL;
	_cleanup_free_ char *agent_path = NULL;
	_cleanup_free_ char *state_dir = NULL;
	_cleanup_free_ char *config_path = NULL;
	bool foreground = false, allow_unlocked = false;
	long workers_arg = -1;
	unsigned workers;
	int notify_fd = -1, opt, r;
	Config config;
	SealOptions seal_opt = { 0 };
	const char *audit_path = NULL;
	const char *agent_upstream = NULL;
	uint64_t auto_lock_ms = 0;
	bool auto_lock_set = false;
	static Server server;
	char err[512];

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case OPT_SOCKET: free(socket_path); socket_path = strdup(optarg); break;
		case OPT_AGENT_SOCKET: free(agent_path); agent_path = strdup(optarg); break;
		case OPT_AGENT_UPSTREAM: agent_upstream = optarg; break;
		case OPT_STATE: free(state_dir); state_dir = strdup(optarg); break;
		case OPT_CONFIG: free(config_path); config_path = strdup(optarg); break;
		case OPT_WORKERS: {
			char *end;

			errno = 0;
			workers_arg = strtol(optarg, &end, 10);
			if (errno || *end || workers_arg < 1 || workers_arg > 1024) {
				fprintf(stderr, "sigild: --workers takes a number from 1 to 1024\n");
				return 2;
			}
			break;
		}
		case OPT_FOREGROUND: foreground = true; break;
		case OPT_UNLOCKED: allow_unlocked = true; break;
		case OPT_VERBOSE: log_set_max_priority(LOG_PRIO_DEBUG); break;
		case OPT_MASTER_KEY_FILE: seal_opt.master_key_file = optarg; break;
		case OPT_PASSPHRASE: seal_opt.passphrase = true; break;
		case OPT_EPHEMERAL: seal_opt.ephemeral = true; break;
		case OPT_AUDIT_FILE: audit_path = optarg; break;
		case OPT_AUTO_LOCK: {
			unsigned long long v = 0;

			if (config_parse_auto_lock(optarg, &v) < 0 || v == 0) {
				fprintf(stderr, "sigild: --auto-lock takes N minutes, Nm or Ns (1 to 100000)\n");
				return 2;
			}
			auto_lock_ms = v;
			auto_lock_set = true;
			break;
		}
		case OPT_PWHASH_OPS:
		case OPT_PWHASH_MEM: {
			char *end;
			unsigned long long v;

			errno = 0;
			v = strtoull(optarg, &end, 10);
			if (errno || *end || v < 1 || v > (opt == OPT_PWHASH_OPS ? 1000ULL : 4ULL << 20)) {
				fprintf(stderr, "sigild: --%s takes a number from 1 to %s\n",
				        opt == OPT_PWHASH_OPS ? "pwhash-ops" : "pwhash-mem",
				        opt == OPT_PWHASH_OPS ? "1000" : "4194304 (KiB)");
				return 2;
			}
			if (opt == OPT_PWHASH_OPS)
				seal_opt.pw_ops = v;
			else
				seal_opt.pw_mem = (size_t)v << 10;
			break;
		}
		case OPT_HELP: usage(stdout); return 0;
		case OPT_VERSION: printf("sigild %s\n", SIGIL_VERSION); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "sigild: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		return 2;
	}

	harden();
	if (sodium_init() < 0) {
		log_err("libsodium failed to initialise");
		return 1;
	}
	config_init(&config);
	if (config_path) {
		r = config_load(&config, config_path, err, sizeof(err));
		if (r) {
			log_err("%s", err);
			return 1;
		}
	}
	/* the at-rest settings of the configuration file, unless given on the
	 * command line */
	if (!seal_opt.master_key_file && config.master_key_file[0])
		seal_opt.master_key_file = config.master_key_file;
	seal_opt.passphrase = seal_opt.passphrase || config.passphrase;
	seal_opt.ephemeral = seal_opt.ephemeral || config.ephemeral;
	if (!seal_opt.pw_ops)
		seal_opt.pw_ops = config.pwhash_ops;
	if (!seal_opt.pw_mem)
		seal_opt.pw_mem = (size_t)config.pwhash_mem_kib << 10;
	if (!audit_path && config.audit_file[0])
		audit_path = config.audit_file;
	if (!auto_lock_set)
		auto_lock_ms = config.auto_lock_ms;
	if (agent_upstream) {
		if (agent_upstream[0] != '/' || strlen(agent_upstream) >= sizeof(config.ssh_agent_upstream)) {
			log_err("--ssh-agent-upstream takes an absolute socket path shorter than %zu bytes",
			        sizeof(config.ssh_agent_upstream));
			return 2;
		}
		snprintf(config.ssh_agent_upstream, sizeof(config.ssh_agent_upstream), "%s", agent_upstream);
	}
	if (!socket_path)
		socket_path = default_socket();
	if (!socket_path) {
		log_err("no socket path: XDG_RUNTIME_DIR is not set; pass --socket PATH");
		return 1;
	}
	if (!state_dir)
		state_dir = default_state_dir();
	if (!state_dir) {
		log_err("no state directory: XDG_STATE_HOME and HOME are not set; pass --state-dir DIR");
		return 1;
	}
	workers = workers_arg > 0 ? (unsigned)workers_arg : config.workers;
	if (workers == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		workers = n > 0 ? (unsigned)n : 1;
	}
	{
		char n[16];

		/* the crypto runs on sigild's own workers (pool.c); libuv's
		 * pool only syncs the audit file: one thread */
		snprintf(n, sizeof(n), "%u", 1u);
		setenv("UV_THREADPOOL_SIZE", n, 1);
	}
	config.workers = workers;

	/* under systemd, never fork */
	if (getenv("NOTIFY_SOCKET") || getenv("LISTEN_FDS") || getenv("INVOCATION_ID"))
		foreground = true;
	if (!foreground) {
		int parent_exit = 1;

		r = daemonize(&notify_fd, &parent_exit);
		if (r < 0) {
			log_err("cannot detach: %s", strerror(-r));
			return 1;
		}
		if (r > 0)
			return parent_exit;
	}

	/* after fork: memory locks are not inherited */
	r = secmem_setup(allow_unlocked);
	if (r < 0) {
		log_err("cannot lock memory (mlock: %s): raise RLIMIT_MEMLOCK (ulimit -l, LimitMEMLOCK=) "
		        "or pass --allow-unlocked-memory", strerror(-r));
		return 1;
	}

	if (audit_path) {
		r = audit_open_file(audit_path, err, sizeof(err));
		if (r) {
			log_err("cannot use the audit file: %s", err);
			return 1;
		}
	}
	server.keystore = (Keystore)KEYSTORE_NULL(server.keystore);
	r = keystore_open_sealed(&server.keystore, state_dir, &seal_opt);
	if (r) {
		if (r < 0)
			log_err("cannot open the keystore in %s: %s", state_dir, strerror(-r));
		else if (r == KEYSTORE_E_INVALID)
			log_err("not starting: the master key source is unusable (above)");
		else
			log_err("refusing to use state directory %s", state_dir);
		return 1;
	}
	r = server_init(&server, uv_default_loop(), &config, config_path, workers);
	if (r < 0) {
		log_err("cannot start: %s", strerror(-r));
		return 1;
	}
	server.ops.auto_lock_ms = auto_lock_ms;
	r = server_listen(&server, socket_path);
	if (r) {
		if (r < 0)
			log_err("cannot listen on %s: %s", socket_path, strerror(-r));
		server_deinit(&server);
		return 1;
	}
	/* the ssh-agent socket (docs/ssh-agent.md): the one systemd passed
	 * (FileDescriptorName=ssh-agent), else --ssh-agent-socket, else
	 * ssh-agent.sock next to the socket. Whichever path, it must be usable:
	 * a squatted or unsafe one stops the start (listener.c) */
	{
		int main_fd, agent_fd;

		(void)listener_activated(&main_fd, &agent_fd); /* read by server_listen() */
		if (agent_fd >= 0) {
			r = server_listen_agent_fd(&server, agent_fd);
			if (r < 0) {
				log_err("cannot serve the ssh-agent socket systemd passed: %s", strerror(-r));
				server_deinit(&server);
				return 1;
			}
			log_info("ssh-agent socket passed by systemd");
		} else if (!agent_path || strcmp(agent_path, "none") != 0) {
			if (!agent_path) {
				const char *slash = strrchr(socket_path, '/');

				if (asprintf(&agent_path, "%.*s%s", slash ? (int)(slash - socket_path + 1) : 0, socket_path,
				             "ssh-agent.sock") < 0)
					agent_path = NULL;
			}
			r = agent_path ? server_listen_agent(&server, agent_path) : -ENOMEM;
			if (r) {
				if (r < 0)
					log_err("cannot listen on %s: %s", agent_path ? agent_path : "the ssh-agent socket",
					        strerror(-r));
				log_err("no ssh-agent socket: not starting (--ssh-agent-socket none turns it off)");
				server_deinit(&server);
				return 1;
			}
			log_info("ssh-agent socket on %s", agent_path);
		}
	}
	log_info("sigild %s listening on %s, state in %s, %zu keys, %u workers, crypto %s, master key: %s%s",
	         SIGIL_VERSION, server.socket_activated ? "(systemd socket)" : socket_path, state_dir,
	         keystore_count(&server.keystore), workers, sigil_crypto_impl(),
	         seal_source_name(server.keystore.seal.src), server.ops.locked ? " (locked)" : "");
	sd_notify(0, "READY=1");
	server_notify_status(&server);
	if (notify_fd >= 0) {
		(void)!write(notify_fd, "1", 1);
		close(notify_fd);
	}

	server_run(&server);

	server_deinit(&server);
	r = uv_loop_close(server.loop);
	if (r < 0)
		log_debug("loop closed with handles open: %s", uv_strerror(r));
	log_info("stopped");
	return 0;
}
