/* SPDX-License-Identifier: MIT */
/*
 * sigil.c - the sigil command: keys, signatures and key exchange through
 * sigild, and local verification of SSHSIG, minisign, signify and raw
 * Ed25519 signatures
 *
 * Exit codes: 0 ok, 1 signature invalid, 2 usage (or unreadable/malformed
 * input), 3 daemon unreachable (connect, timeout, broken connection), 4
 * refused by the daemon (an error answer: not_found, locked, denied, ...).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

#include "age-cmd.h"
#include "cli.h"
#include "filehash.h"
#include "format.h"
#include "sshcert.h"

#define EXIT_VALID 0
#define EXIT_INVALID 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_REFUSED 4

/* Pure-mode signatures send the whole file; keep them well inside the
 * daemon's default frame limit (64 MiB). */
#define PURE_MAX (48u * 1024 * 1024)
/* secret key files are small; anything larger is not one */
#define IMPORT_MAX (64u * 1024)

typedef struct Opts {
	const char *socket;
	bool json;
	int timeout_ms;
	bool has_server_uid;
	int64_t server_uid; /* --server-uid: a server uid to trust besides root and ours */
} Opts;

static Opts opts;
static const char *prog = "sigil";

enum {
	OPT_JSON = 0x100,
	OPT_TIMEOUT,
	OPT_SERVER_UID,
	OPT_TYPE,
	OPT_EXPORTABLE,
	OPT_FORMAT,
	OPT_MODE,
	OPT_CONTEXT,
	OPT_POLICY,
	OPT_PRINCIPAL,
	OPT_PEER,
	OPT_PEER_FILE,
	OPT_PASSFILE,
	OPT_NEW_MASTER_KEY,
	OPT_ALLOW_OP,
	OPT_EXPIRES,
	OPT_ALLOW_UID,
	OPT_ALLOW_GID,
	OPT_ALLOW_EXE,
	OPT_MAX_SIGNS,
	OPT_RATE,
	OPT_KEY,
	OPT_PUBKEY,
};

#define COMMON_LONGOPTS                                            \
	{ "socket", required_argument, NULL, 's' },                \
	{ "json", no_argument, NULL, OPT_JSON },                   \
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },       \
	{ "server-uid", required_argument, NULL, OPT_SERVER_UID }, \
	{ "help", no_argument, NULL, 'h' }

#define COMMON_HELP                                                                   \
	"  -s, --socket PATH  sigild's socket (default: $SIGIL_SOCK, else\n"          \
	"                     $XDG_RUNTIME_DIR/sigil/sigild.sock, root: /run/sigil/sigild.sock)\n" \
	"      --json         machine-readable output on stdout\n"                    \
	"      --timeout MS   give up waiting for the daemon after MS ms (30000)\n"   \
	"      --server-uid UID  also trust a sigild running as UID (default:\n"    \
	"                     $SIGIL_SERVER_UID; root and your own uid always)\n"     \
	"  -h, --help         this help\n"

/* ---- output helpers ---- */

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c == '\n')
			fputs("\\n", stdout);
		else if (c == '\t')
			fputs("\\t", stdout);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_hex(const uint8_t *p, size_t n)
{
	char h[2 * 64 + 1];

	format_hex_encode(h, p, n);
	json_str(h);
}

/* --json: set once a JSON document was started on stdout; main() prints
 * an error document for failures that produced none. */
static bool json_written;
static char last_error[512];

static void json_open(void)
{
	json_written = true;
	putchar('{');
}

static void err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void err(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\n", last_error);
}

static int exit_for(sigil_error e)
{
	switch (e) {
	case SIGIL_EOK:
		return EXIT_VALID;
	case SIGIL_ECONNECT:
	case SIGIL_ETIMEOUT:
	case SIGIL_EIO:
	case SIGIL_EPROTO:
	case SIGIL_ENOMEM:
	case SIGIL_EUNTRUSTED: /* a server of another uid: not reached */
		return EXIT_UNREACHABLE;
	case SIGIL_EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_REFUSED;
	}
}

/* Reports a failed call and returns its exit code. */
static int fail(sigil_client *c, sigil_error e, const char *what)
{
	const char *msg = c ? sigil_client_errmsg(c) : "out of memory";

	if (opts.json) {
		json_open();
		fputs("\"error\":", stdout);
		json_str(sigil_client_strerror(e));
		fputs(",\"message\":", stdout);
		json_str(msg);
		fputs("}\n", stdout);
	}
	err("%s: %s (%s)", what, msg, sigil_client_strerror(e));
	return exit_for(e);
}

static int open_client(sigil_client **cp)
{
	sigil_error e = sigil_client_connect_uid(cp, opts.socket, opts.timeout_ms,
	                                         opts.has_server_uid ? opts.server_uid : -1);

	if (e) {
		int r = fail(*cp, e, "cannot reach sigild");

		sigil_client_free(*cp);
		*cp = NULL;
		return r;
	}
	return 0;
}

static int read_all_path(const char *path, size_t max, uint8_t **datap, size_t *lenp)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	int r, e;

	if (fd < 0)
		return -1;
	r = filehash_slurp(fd, max, datap, lenp);
	e = errno;
	if (fd != STDIN_FILENO)
		close(fd);
	errno = e;
	return r;
}

/* Reads a secret (key file, passphrase) into the caller's fixed buffer:
 * no realloc, so no stray copies are left in freed memory. Stops at EOF, or
 * at the first newline when one_line. Returns the length, or -1 (errno
 * EFBIG when it does not fit). */
static ssize_t read_secret_fd(int fd, uint8_t *buf, size_t cap, bool one_line)
{
	size_t len = 0;

	for (;;) {
		ssize_t n;

		if (len == cap) {
			errno = EFBIG;
			return -1;
		}
		n = read(fd, buf + len, one_line ? 1 : cap - len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (one_line && buf[len - 1] == '\n')
			break;
	}
	return (ssize_t)len;
}

static ssize_t read_secret_path(const char *path, uint8_t *buf, size_t cap)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int e;

	if (fd < 0)
		return -1;
	n = read_secret_fd(fd, buf, cap, false);
	e = errno;
	if (fd != STDIN_FILENO)
		close(fd);
	errno = e;
	return n;
}

/* Writes data to path atomically (temporary file + rename), or to stdout
 * for "-". */
static int write_out(const char *path, const void *data, size_t len)
{
	char *tmp = NULL, *dir = NULL, *d;
	const uint8_t *p = data;
	int fd, r = -1;

	if (strcmp(path, "-") == 0) {
		if (fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0)
			return -1;
		return 0;
	}
	dir = strdup(path);
	if (!dir)
		return -1;
	d = dirname(dir);
	if (asprintf(&tmp, "%s/.sigil-XXXXXX", d) < 0) {
		free(dir);
		return -1;
	}
	fd = mkstemp(tmp);
	if (fd < 0)
		goto out;
	(void)fchmod(fd, 0644);
	while (len) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			close(fd);
			unlink(tmp);
			goto out;
		}
		p += w;
		len -= (size_t)w;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		goto out;
	}
	r = 0;
out:
	free(tmp);
	free(dir);
	return r;
}

static const char *key_type_name(sigil_key_type t)
{
	return t == SIGIL_KEY_X25519 ? "x25519" : "ed25519";
}

static bool policy_empty(const sigil_key_policy *p)
{
	return !p || (!p->allow_sign && !p->allow_dh && !p->allow_age_unwrap && !p->expires && !p->n_uids &&
	              !p->n_gids && !p->n_exes && !p->max_signs && !p->rate);
}

/* the rules of a policy: JSON members, or "name=value" words */
static void print_policy(const sigil_key_policy *p)
{
	const char *sep = opts.json ? "," : " ";

	if (opts.json)
		fputs(",\"policy\":{\"ops\":[", stdout);
	else
		fputs("  policy: ops=", stdout);
	if (!p->allow_sign && !p->allow_dh && !p->allow_age_unwrap)
		fputs(opts.json ? "" : "(the type's)", stdout);
	else if (opts.json)
		printf("%s%s%s%s%s", p->allow_sign ? "\"sign\"" : "", p->allow_sign && p->allow_dh ? "," : "",
		       p->allow_dh ? "\"dh\"" : "", (p->allow_sign || p->allow_dh) && p->allow_age_unwrap ? "," : "",
		       p->allow_age_unwrap ? "\"age-unwrap\"" : "");
	else
		printf("%s%s%s%s%s", p->allow_sign ? "sign" : "", p->allow_sign && p->allow_dh ? "," : "",
		       p->allow_dh ? "dh" : "", (p->allow_sign || p->allow_dh) && p->allow_age_unwrap ? "," : "",
		       p->allow_age_unwrap ? "age-unwrap" : "");
	if (opts.json)
		putchar(']');
	if (p->expires) {
		if (opts.json) {
			printf(",\"expires\":%" PRId64, p->expires);
		} else {
			char when[32] = "?";
			time_t t = (time_t)p->expires;
			struct tm tm;

			if (gmtime_r(&t, &tm))
				strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
			printf(" expires=%s", when);
		}
	}
	for (int g = 0; g < 2; g++) {
		const uint32_t *ids = g ? p->gids : p->uids;
		size_t n = g ? p->n_gids : p->n_uids;

		if (!n)
			continue;
		printf(opts.json ? ",\"%s\":[" : " %s=", g ? "gids" : "uids");
		for (size_t i = 0; i < n; i++)
			printf("%s%u", i ? "," : "", (unsigned)ids[i]);
		if (opts.json)
			putchar(']');
	}
	if (p->n_exes) {
		fputs(opts.json ? ",\"exes\":[" : " exes=", stdout);
		for (size_t i = 0; i < p->n_exes; i++) {
			if (i)
				putchar(',');
			if (opts.json)
				json_str(p->exes[i]);
			else
				fputs(p->exes[i], stdout);
		}
		if (opts.json)
			putchar(']');
	}
	if (p->max_signs)
		printf(opts.json ? "%s\"max_signs\":%" PRIu64 : "%smax_signs=%" PRIu64, sep, p->max_signs);
	if (p->rate)
		printf(opts.json ? "%s\"rate\":%u" : "%srate=%u/min", sep, (unsigned)p->rate);
	fputs(opts.json ? "}" : "\n", stdout);
}

/* one key; pol: its policy, printed when it has rules (NULL: none) */
static void print_key(const sigil_key_info *k, bool first, const sigil_key_policy *pol)
{
	char hex[65];

	if (opts.json) {
		if (!first)
			putchar(',');
		json_open();
		fputs("\"label\":", stdout);
		json_str(k->label);
		fputs(",\"type\":", stdout);
		json_str(key_type_name(k->type));
		fputs(",\"public_key\":", stdout);
		json_hex(k->public_key, 32);
		fputs(",\"fingerprint\":", stdout);
		json_str(k->fingerprint);
		printf(",\"exportable\":%s,\"created\":%" PRId64, k->exportable ? "true" : "false", k->created);
		if (!policy_empty(pol))
			print_policy(pol);
		putchar('}');
		return;
	}
	format_hex_encode(hex, k->public_key, 32);
	printf("%-20s %-8s %s %s\n", k->label, key_type_name(k->type), hex,
	       k->fingerprint[0] ? k->fingerprint : "-");
	if (!policy_empty(pol))
		print_policy(pol);
}

/* ---- help ---- */

typedef struct Cmd {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *usage;
} Cmd;

static const Cmd *current;

static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s\nTry '%s %s --help'.\n", last_error, prog, current ? current->name : "");
	return EXIT_USAGE;
}

static int show_help(void)
{
	fputs(current->usage, stdout);
	fputs("\nCommon options:\n" COMMON_HELP, stdout);
	fputs("\nExit codes: 0 ok, 1 signature invalid, 2 usage or bad input,\n"
	      "3 daemon unreachable, 4 refused by the daemon.\n", stdout);
	return EXIT_VALID;
}

/* Handles the options every subcommand takes; 1 if handled. */
static int common_opt(int c, int *exitp)
{
	char *end;
	long v;

	switch (c) {
	case 's':
		opts.socket = optarg;
		return 1;
	case OPT_JSON:
		opts.json = true;
		return 1;
	case OPT_TIMEOUT:
		errno = 0;
		v = strtol(optarg, &end, 10);
		if (errno || *end || v <= 0 || v > 24L * 3600 * 1000) {
			*exitp = usage_error("bad --timeout: %s", optarg);
			return -1;
		}
		opts.timeout_ms = (int)v;
		return 1;
	case OPT_SERVER_UID:
		errno = 0;
		v = strtol(optarg, &end, 10);
		if (errno || *end || end == optarg || v < 0 || v >= 4294967295L) {
			*exitp = usage_error("bad --server-uid: %s", optarg);
			return -1;
		}
		opts.has_server_uid = true;
		opts.server_uid = v;
		return 1;
	case 'h':
		*exitp = show_help();
		return -1;
	case '?':
		*exitp = usage_error("bad option");
		return -1;
	default:
		return 0;
	}
}

/* ---- keygen, import, list, pubkey, delete ---- */

static int parse_key_type(const char *s, sigil_key_type *t)
{
	if (strcmp(s, "ed25519") == 0)
		*t = SIGIL_KEY_ED25519;
	else if (strcmp(s, "x25519") == 0)
		*t = SIGIL_KEY_X25519;
	else
		return -1;
	return 0;
}

static void print_one_key(const sigil_key_info *k)
{
	print_key(k, true, NULL);
	if (opts.json)
		putchar('\n');
}

#define POLICY_LONGOPTS                                                   \
	{ "allow-op", required_argument, NULL, OPT_ALLOW_OP },                 \
	{ "expires", required_argument, NULL, OPT_EXPIRES },                   \
	{ "allow-uid", required_argument, NULL, OPT_ALLOW_UID },               \
	{ "allow-gid", required_argument, NULL, OPT_ALLOW_GID },               \
	{ "allow-exe", required_argument, NULL, OPT_ALLOW_EXE },               \
	{ "max-signs", required_argument, NULL, OPT_MAX_SIGNS },               \
	{ "rate", required_argument, NULL, OPT_RATE }

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -1;
	*out = v;
	return 0;
}

/* one policy option into *p (*set becomes true). 0, 1 if c is not one, or
 * -1 (usage error printed) */
static int policy_opt(int c, sigil_key_policy *p, bool *set)
{
	uint64_t v;

	switch (c) {
	case OPT_ALLOW_OP:
		if (strcmp(optarg, "sign") == 0)
			p->allow_sign = 1;
		else if (strcmp(optarg, "dh") == 0)
			p->allow_dh = 1;
		else if (strcmp(optarg, "age-unwrap") == 0)
			p->allow_age_unwrap = 1;
		else
			return usage_error("bad --allow-op: %s (sign, dh or age-unwrap)", optarg), -1;
		break;
	case OPT_EXPIRES:
		/* +SECONDS from now, or a unix time */
		if (parse_u64(optarg[0] == '+' ? optarg + 1 : optarg, INT64_MAX / 2, &v) < 0 || v == 0)
			return usage_error("bad --expires: %s (unix time, or +SECONDS)", optarg), -1;
		p->expires = optarg[0] == '+' ? (int64_t)time(NULL) + (int64_t)v : (int64_t)v;
		break;
	case OPT_ALLOW_UID:
	case OPT_ALLOW_GID: {
		uint32_t *ids = c == OPT_ALLOW_UID ? p->uids : p->gids;
		size_t *n = c == OPT_ALLOW_UID ? &p->n_uids : &p->n_gids;

		if (parse_u64(optarg, UINT32_MAX - 1, &v) < 0 || *n >= SIGIL_POLICY_IDS_MAX)
			return usage_error("bad %s: %s (a number; at most %d)", c == OPT_ALLOW_UID ? "--allow-uid" : "--allow-gid",
			                   optarg, SIGIL_POLICY_IDS_MAX), -1;
		ids[(*n)++] = (uint32_t)v;
		break;
	}
	case OPT_ALLOW_EXE:
		if (optarg[0] != '/' || p->n_exes >= SIGIL_POLICY_EXES_MAX)
			return usage_error("bad --allow-exe: %s (an absolute path; at most %d)", optarg,
			                   SIGIL_POLICY_EXES_MAX), -1;
		p->exes[p->n_exes++] = optarg;
		break;
	case OPT_MAX_SIGNS:
		if (parse_u64(optarg, UINT64_MAX, &v) < 0 || v == 0)
			return usage_error("bad --max-signs: %s (a positive number)", optarg), -1;
		p->max_signs = v;
		break;
	case OPT_RATE:
		if (parse_u64(optarg, UINT32_MAX, &v) < 0 || v == 0)
			return usage_error("bad --rate: %s (operations per minute)", optarg), -1;
		p->rate = (uint32_t)v;
		break;
	default:
		return 1;
	}
	*set = true;
	return 0;
}

static int cmd_keygen(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "exportable", no_argument, NULL, OPT_EXPORTABLE },
		POLICY_LONGOPTS,
		{ 0 },
	};
	sigil_key_policy policy = { 0 };
	bool has_policy = false;
	sigil_key_type type = SIGIL_KEY_ED25519;
	bool exportable = false;
	sigil_client *cl;
	sigil_key_info k;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:h", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_TYPE && parse_key_type(optarg, &type) < 0)
			return usage_error("bad --type: %s (ed25519 or x25519)", optarg);
		if (c == OPT_EXPORTABLE)
			exportable = true;
		if (policy_opt(c, &policy, &has_policy) < 0)
			return EXIT_USAGE;
	}
	if (argc - optind != 1)
		return usage_error("keygen takes one LABEL");
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_key_generate_policy(cl, &k, type, argv[optind], exportable, has_policy ? &policy : NULL);
	if (e)
		ex = fail(cl, e, "keygen");
	else
		print_one_key(&k);
	sigil_client_free(cl);
	return ex;
}

static int parse_sk_format(const char *s, FormatSkKind *k)
{
	static const struct { const char *n; FormatSkKind k; } t[] = {
		{ "auto", FORMAT_SK_AUTO },       { "hex", FORMAT_SK_HEX },
		{ "raw", FORMAT_SK_RAW },         { "openssh", FORMAT_SK_OPENSSH },
		{ "minisign", FORMAT_SK_MINISIGN }, { "signify", FORMAT_SK_SIGNIFY },
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (strcmp(s, t[i].n) == 0) {
			*k = t[i].k;
			return 0;
		}
	}
	return -1;
}

static int cmd_import(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "type", required_argument, NULL, OPT_TYPE },
		{ "exportable", no_argument, NULL, OPT_EXPORTABLE },
		{ "format", required_argument, NULL, OPT_FORMAT },
		POLICY_LONGOPTS,
		{ 0 },
	};
	sigil_key_policy policy = { 0 };
	bool has_policy = false;
	sigil_key_type type = SIGIL_KEY_ED25519;
	FormatSkKind kind = FORMAT_SK_AUTO;
	bool exportable = false;
	const char *path = "-", *why;
	uint8_t *data = NULL, seed[32];
	size_t len = 0;
	ssize_t n;
	sigil_client *cl;
	sigil_key_info k;
	sigil_error e;
	int c, ex = 0, r;
	bool age = false; /* --format age: an age-keygen key (age-cmd.c) */

	if (age_cmd_is_import_wrapped(argc, argv))
		return age_cmd_import_wrapped(argc, argv);
	while ((c = getopt_long(argc, argv, "s:h", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_TYPE && parse_key_type(optarg, &type) < 0)
			return usage_error("bad --type: %s (ed25519 or x25519)", optarg);
		if (c == OPT_EXPORTABLE)
			exportable = true;
		if (c == OPT_FORMAT && strcmp(optarg, "age") == 0)
			age = true, type = SIGIL_KEY_X25519;
		else if (c == OPT_FORMAT && parse_sk_format(optarg, &kind) < 0)
			return usage_error("bad --format: %s", optarg);
		if (policy_opt(c, &policy, &has_policy) < 0)
			return EXIT_USAGE;
	}
	if (argc - optind < 1 || argc - optind > 2)
		return usage_error("import takes LABEL [FILE]");
	if (argc - optind == 2)
		path = argv[optind + 1];
	if (type == SIGIL_KEY_X25519 && kind != FORMAT_SK_AUTO && kind != FORMAT_SK_HEX &&
	    kind != FORMAT_SK_RAW)
		return usage_error("x25519 keys are imported from a hex or raw 32-byte scalar");
	data = sodium_malloc(IMPORT_MAX); /* guarded, wiped on sodium_free */
	if (!data) {
		err("out of memory");
		return EXIT_USAGE;
	}
	n = read_secret_path(path, data, IMPORT_MAX);
	if (n < 0) {
		err("cannot read %s: %s", path, errno == EFBIG ? "larger than a key file" : strerror(errno));
		sodium_free(data);
		return EXIT_USAGE;
	}
	len = (size_t)n;
	if (age && type != SIGIL_KEY_X25519)
		r = -1, why = "--format age imports x25519 keys";
	else if (age)
		r = age_cmd_parse_secret(seed, data, len, &why);
	else
		r = format_seed_parse(seed, type == SIGIL_KEY_X25519 && kind == FORMAT_SK_AUTO
		                                ? (len == 32 ? FORMAT_SK_RAW : FORMAT_SK_HEX)
		                                : kind,
		                      data, len, &why);
	sodium_free(data);
	if (r < 0) {
		err("%s: %s", path, why);
		return EXIT_USAGE;
	}
	if ((ex = open_client(&cl))) {
		sigil_wipe(seed, sizeof(seed));
		return ex;
	}
	e = sigil_client_key_import_policy(cl, &k, type, argv[optind], seed, exportable,
	                                   has_policy ? &policy : NULL);
	sigil_wipe(seed, sizeof(seed));
	if (e)
		ex = fail(cl, e, "import");
	else
		print_one_key(&k);
	sigil_client_free(cl);
	return ex;
}

/* A command with only the common options and nargs operands: returns -1 to
 * go on, otherwise the exit status (usage, --help, a bad option). */
static int common_only(int argc, char **argv, int nargs, const char *usage)
{
	static const struct option lo[] = { COMMON_LONGOPTS, { 0 } };
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:h", lo, NULL)) != -1)
		if (common_opt(c, &ex) < 0)
			return ex;
	if (argc - optind != nargs)
		return usage_error("%s", usage);
	return -1;
}

static int cmd_list(int argc, char **argv)
{
	sigil_key_info *keys;
	sigil_key_policy *pols;
	sigil_client *cl;
	sigil_error e;
	size_t n;
	int ex = common_only(argc, argv, 0, "list takes no arguments");

	if (ex >= 0)
		return ex;
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_key_list_policies(cl, &keys, &pols, &n);
	if (e) {
		ex = fail(cl, e, "list");
	} else {
		if (opts.json) {
			json_open();
			fputs("\"keys\":[", stdout);
		}
		for (size_t i = 0; i < n; i++)
			print_key(&keys[i], i == 0, &pols[i]);
		if (opts.json)
			fputs("]}\n", stdout);
		free(keys);
		free(pols);
	}
	sigil_client_free(cl);
	return ex;
}

static int cmd_pubkey(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "principal", required_argument, NULL, OPT_PRINCIPAL },
		{ "namespace", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	const char *fmt = "openssh", *principal = NULL, *ns = NULL, *out = "-";
	char *text = NULL, hex[65], comment[128];
	sigil_client *cl;
	sigil_key_info k;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hn:o:", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_FORMAT)
			fmt = optarg;
		if (c == OPT_PRINCIPAL)
			principal = optarg;
		if (c == 'n')
			ns = optarg;
		if (c == 'o')
			out = optarg;
	}
	if (argc - optind != 1)
		return usage_error("pubkey takes one LABEL");
	if (strcmp(fmt, "openssh") && strcmp(fmt, "allowed-signers") && strcmp(fmt, "minisign") &&
	    strcmp(fmt, "signify") && strcmp(fmt, "raw") && strcmp(fmt, "hex") && strcmp(fmt, "base64") &&
	    strcmp(fmt, "age") && strcmp(fmt, "age-identity"))
		return usage_error("bad --format: %s", fmt);
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_key_public(cl, &k, argv[optind]);
	if (e) {
		ex = fail(cl, e, "pubkey");
		sigil_client_free(cl);
		return ex;
	}
	sigil_client_free(cl);
	if (k.type != SIGIL_KEY_X25519 && strncmp(fmt, "age", 3) == 0) {
		err("%s is an ed25519 key: --format %s needs an x25519 key", k.label, fmt);
		return EXIT_USAGE;
	}
	if (k.type != SIGIL_KEY_ED25519 && strcmp(fmt, "raw") && strcmp(fmt, "hex") && strcmp(fmt, "base64") &&
	    strncmp(fmt, "age", 3)) {
		err("%s is an x25519 key: only --format raw, hex, base64, age or age-identity apply", k.label);
		return EXIT_USAGE;
	}
	snprintf(comment, sizeof(comment), "sigil:%s", k.label);
	if (strncmp(fmt, "age", 3) == 0) {
		text = age_cmd_pubkey_text(&k, strcmp(fmt, "age-identity") == 0);
	} else if (strcmp(fmt, "openssh") == 0) {
		text = format_openssh_pubkey(k.public_key, comment);
	} else if (strcmp(fmt, "allowed-signers") == 0) {
		text = format_allowed_signers(principal ? principal : k.label, ns, k.public_key);
	} else if (strcmp(fmt, "minisign") == 0) {
		text = format_minisign_pubkey(k.public_key);
	} else if (strcmp(fmt, "signify") == 0) {
		snprintf(comment, sizeof(comment), "sigil %s public key", k.label);
		text = format_signify_pubkey(k.public_key, comment);
	} else if (strcmp(fmt, "hex") == 0) {
		format_hex_encode(hex, k.public_key, 32);
		if (asprintf(&text, "%s\n", hex) < 0)
			text = NULL;
	} else if (strcmp(fmt, "base64") == 0) {
		char b[45];

		format_b64_encode(b, k.public_key, 32);
		if (asprintf(&text, "%s\n", b) < 0)
			text = NULL;
	} else { /* raw */
		if (opts.json) {
			err("--json does not apply to --format raw");
			return EXIT_USAGE;
		}
		if (write_out(out, k.public_key, 32) < 0) {
			err("cannot write %s: %s", out, strerror(errno));
			return EXIT_USAGE;
		}
		return EXIT_VALID;
	}
	if (!text) {
		err("out of memory");
		return EXIT_USAGE;
	}
	if (opts.json) {
		json_open();
		fputs("\"label\":", stdout);
		json_str(k.label);
		fputs(",\"format\":", stdout);
		json_str(fmt);
		fputs(",\"public_key\":", stdout);
		json_hex(k.public_key, 32);
		fputs(",\"text\":", stdout);
		json_str(text);
		fputs("}\n", stdout);
	} else if (write_out(out, text, strlen(text)) < 0) {
		err("cannot write %s: %s", out, strerror(errno));
		ex = EXIT_USAGE;
	}
	free(text);
	return ex;
}

static int cmd_delete(int argc, char **argv)
{
	sigil_client *cl;
	sigil_error e;
	int ex = common_only(argc, argv, 1, "delete takes one LABEL");

	if (ex >= 0)
		return ex;
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_key_delete(cl, argv[optind]);
	if (e)
		ex = fail(cl, e, "delete");
	else if (opts.json) {
		json_open();
		printf("\"deleted\":true}\n");
	}
	sigil_client_free(cl);
	return ex;
}

/* ---- sign ---- */

typedef enum SigFormat {
	SIG_AUTO,
	SIG_SSHSIG,
	SIG_MINISIGN,
	SIG_SIGNIFY,
	SIG_RAW,
	SIG_HEX,
	SIG_BASE64,
} SigFormat;

static const char *const sig_format_names[] = { "auto", "sshsig", "minisign", "signify",
	                                         "raw", "hex", "base64" };

static int parse_sig_format(const char *s, SigFormat *f)
{
	for (size_t i = 0; i < sizeof(sig_format_names) / sizeof(sig_format_names[0]); i++) {
		if (strcmp(s, sig_format_names[i]) == 0) {
			*f = (SigFormat)i;
			return 0;
		}
	}
	return -1;
}

static int parse_mode(const char *s, sigil_sign_mode *m)
{
	if (strcmp(s, "pure") == 0)
		*m = SIGIL_SIGN_PURE;
	else if (strcmp(s, "ctx") == 0)
		*m = SIGIL_SIGN_CTX;
	else if (strcmp(s, "ph") == 0)
		*m = SIGIL_SIGN_PH;
	else
		return -1;
	return 0;
}

static int open_input(const char *path)
{
	int fd = strcmp(path, "-") == 0 ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		err("cannot open %s: %s", path, strerror(errno));
	return fd;
}

static void close_input(int fd)
{
	if (fd != STDIN_FILENO)
		close(fd);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* Streams the file through the digests in which. 0 or exit code. */
static int hash_input(const char *path, unsigned which, FileHashes *h)
{
	int fd = open_input(path);

	if (fd < 0)
		return EXIT_USAGE;
	if (filehash_fd(fd, which, h, base_name(path)) < 0) {
		err("cannot read %s: %s", path, strerror(errno));
		close_input(fd);
		return EXIT_USAGE;
	}
	close_input(fd);
	return 0;
}

/* Reads the whole file (pure Ed25519 needs it twice). 0 or exit code. */
static int slurp_input(const char *path, uint8_t **datap, size_t *lenp, const char *why)
{
	int fd = open_input(path), e;

	if (fd < 0)
		return EXIT_USAGE;
	if (filehash_slurp(fd, PURE_MAX, datap, lenp) < 0) {
		e = errno;
		if (e == EFBIG)
			err("%s: larger than %u MiB; %s", path, PURE_MAX >> 20, why);
		else
			err("cannot read %s: %s", path, strerror(e));
		close_input(fd);
		return EXIT_USAGE;
	}
	close_input(fd);
	return 0;
}

static int cmd_sign(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "key", required_argument, NULL, 'k' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "namespace", required_argument, NULL, 'n' },
		{ "output", required_argument, NULL, 'o' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "context", required_argument, NULL, OPT_CONTEXT },
		{ "trusted-comment", required_argument, NULL, 't' },
		{ "comment", required_argument, NULL, 'c' },
		{ 0 },
	};
	const char *label = NULL, *ns = "file", *out = NULL, *ctx = "", *tcomment = NULL,
		   *ucomment = NULL, *file;
	SigFormat fmt = SIG_SSHSIG;
	sigil_sign_mode mode = SIGIL_SIGN_PH;
	bool mode_set = false;
	char *text = NULL, *outpath = NULL, *tc = NULL, comment[160];
	uint8_t sig[64], gsig[64], keynum[8], *data = NULL, *sd = NULL;
	size_t len = 0, sdlen, textlen = 0;
	sigil_client *cl = NULL;
	sigil_key_info k;
	FileHashes h;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hk:n:o:t:c:", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		switch (c) {
		case 'k':
			label = optarg;
			break;
		case OPT_FORMAT:
			if (parse_sig_format(optarg, &fmt) < 0 || fmt == SIG_AUTO)
				return usage_error("bad --format: %s", optarg);
			break;
		case 'n':
			ns = optarg;
			break;
		case 'o':
			out = optarg;
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &mode) < 0)
				return usage_error("bad --mode: %s (pure, ctx or ph)", optarg);
			mode_set = true;
			break;
		case OPT_CONTEXT:
			ctx = optarg;
			break;
		case 't':
			tcomment = optarg;
			break;
		case 'c':
			ucomment = optarg;
			break;
		}
	}
	if (!label)
		return usage_error("sign needs --key NAME");
	if (argc - optind != 1)
		return usage_error("sign takes one FILE (- for stdin)");
	file = argv[optind];
	if (mode_set && fmt != SIG_RAW && fmt != SIG_HEX && fmt != SIG_BASE64)
		return usage_error("--mode applies to --format raw, hex and base64 only");
	if (*ctx && (fmt != SIG_RAW && fmt != SIG_HEX && fmt != SIG_BASE64))
		return usage_error("--context applies to --format raw, hex and base64 only");
	if (strlen(ctx) > 255 || (mode == SIGIL_SIGN_CTX && !*ctx) || (mode == SIGIL_SIGN_PURE && *ctx))
		return usage_error("--context: 1..255 bytes with --mode ctx, 0..255 with ph, none with pure");
	if (fmt == SIG_SSHSIG && (!*ns || strlen(ns) > FORMAT_SSHSIG_NS_MAX))
		return usage_error("bad --namespace");
	if (tcomment && (strpbrk(tcomment, "\r\n") || strlen(tcomment) > FORMAT_COMMENT_MAX))
		return usage_error("bad --trusted-comment (one line without CR, at most %d bytes)", FORMAT_COMMENT_MAX);
	if (ucomment && (strpbrk(ucomment, "\r\n") || strlen(ucomment) > 128))
		return usage_error("bad --comment (one line without CR, at most 128 bytes)");
	if (out)
		outpath = strdup(out);
	else if (strcmp(file, "-") == 0)
		outpath = strdup("-");
	else if (asprintf(&outpath, "%s%s", file, fmt == SIG_MINISIGN ? ".minisig" : ".sig") < 0)
		outpath = NULL;
	if (!outpath) {
		err("out of memory");
		return EXIT_USAGE;
	}

	if ((ex = open_client(&cl)))
		goto done;
	e = sigil_client_key_public(cl, &k, label);
	if (e) {
		ex = fail(cl, e, "sign");
		goto done;
	}
	if (k.type != SIGIL_KEY_ED25519) {
		err("%s is not an ed25519 key", label);
		ex = EXIT_REFUSED;
		goto done;
	}
	format_keynum(keynum, k.public_key);

	switch (fmt) {
	case SIG_SSHSIG:
		if ((ex = hash_input(file, FILEHASH_SHA512, &h)))
			goto done;
		sd = format_sshsig_signed_data(&sdlen, ns, "sha512", h.sha512, 64);
		if (!sd) {
			ex = usage_error("bad namespace");
			goto done;
		}
		e = sigil_client_sign(cl, sig, label, SIGIL_SIGN_PURE, sd, sdlen, NULL, 0);
		if (e) {
			ex = fail(cl, e, "sign");
			goto done;
		}
		text = format_sshsig_armor(k.public_key, ns, "sha512", sig);
		break;
	case SIG_MINISIGN: {
		uint8_t *gm;

		if ((ex = hash_input(file, FILEHASH_BLAKE2B, &h)))
			goto done;
		if (tcomment) {
			tc = strdup(tcomment);
		} else if (asprintf(&tc, "timestamp:%lld\tfile:%s\thashed", (long long)time(NULL),
		                    strcmp(file, "-") == 0 ? "stdin" : base_name(file)) < 0) {
			tc = NULL;
		}
		if (!tc) {
			err("out of memory");
			ex = EXIT_USAGE;
			goto done;
		}
		e = sigil_client_sign(cl, sig, label, SIGIL_SIGN_PURE, h.blake2b, 64, NULL, 0);
		if (e) {
			ex = fail(cl, e, "sign");
			goto done;
		}
		/* the global signature covers signature || trusted comment */
		gm = malloc(64 + strlen(tc));
		if (!gm) {
			err("out of memory");
			ex = EXIT_USAGE;
			goto done;
		}
		memcpy(gm, sig, 64);
		memcpy(gm + 64, tc, strlen(tc));
		e = sigil_client_sign(cl, gsig, label, SIGIL_SIGN_PURE, gm, 64 + strlen(tc), NULL, 0);
		free(gm);
		if (e) {
			ex = fail(cl, e, "sign");
			goto done;
		}
		text = format_minisign_sig(keynum, sig, ucomment ? ucomment : "signature from sigil secret key",
		                           tc, gsig);
		break;
	}
	case SIG_SIGNIFY:
		if ((ex = slurp_input(file, &data, &len, "signify signs the whole file; use --format sshsig or minisign")))
			goto done;
		e = sigil_client_sign(cl, sig, label, SIGIL_SIGN_PURE, data, len, NULL, 0);
		if (e) {
			ex = fail(cl, e, "sign");
			goto done;
		}
		snprintf(comment, sizeof(comment), "%s", ucomment ? ucomment : "");
		if (!ucomment)
			snprintf(comment, sizeof(comment), "verify with %s.pub", k.label);
		text = format_signify_sig(keynum, sig, comment);
		break;
	case SIG_RAW:
	case SIG_HEX:
	case SIG_BASE64:
		if (mode == SIGIL_SIGN_PH) {
			/* Ed25519ph: the client hashes, the daemon signs the digest */
			if ((ex = hash_input(file, FILEHASH_SHA512, &h)))
				goto done;
			e = sigil_client_sign(cl, sig, label, SIGIL_SIGN_PREHASHED, h.sha512, 64,
			                      (const uint8_t *)ctx, strlen(ctx));
		} else {
			if ((ex = slurp_input(file, &data, &len, "use --mode ph")))
				goto done;
			e = sigil_client_sign(cl, sig, label, mode, data, len, (const uint8_t *)ctx,
			                      strlen(ctx));
		}
		if (e) {
			ex = fail(cl, e, "sign");
			goto done;
		}
		if (fmt == SIG_RAW) {
			text = malloc(64);
			if (text) {
				memcpy(text, sig, 64);
				textlen = 64;
			}
		} else if (fmt == SIG_HEX) {
			text = malloc(130);
			if (text) {
				format_hex_encode(text, sig, 64);
				strcat(text, "\n");
			}
		} else {
			text = malloc(90);
			if (text) {
				format_b64_encode(text, sig, 64);
				strcat(text, "\n");
			}
		}
		break;
	case SIG_AUTO:
		break;
	}
	if (!text) {
		err("out of memory");
		ex = EXIT_USAGE;
		goto done;
	}
	if (!textlen)
		textlen = strlen(text);
	if (write_out(outpath, text, textlen) < 0) {
		err("cannot write %s: %s", outpath, strerror(errno));
		ex = EXIT_USAGE;
		goto done;
	}
	if (opts.json) {
		json_open();
		fputs("\"file\":", stdout);
		json_str(file);
		fputs(",\"format\":", stdout);
		json_str(sig_format_names[fmt]);
		fputs(",\"key\":", stdout);
		json_str(k.label);
		fputs(",\"public_key\":", stdout);
		json_hex(k.public_key, 32);
		fputs(",\"signature\":", stdout);
		json_hex(sig, 64);
		fputs(",\"output\":", stdout);
		json_str(outpath);
		fputs("}\n", stdout);
	}
done:
	sigil_client_free(cl);
	free(sd);
	free(data);
	free(text);
	free(tc);
	free(outpath);
	return ex;
}

/* ---- verify ---- */

typedef struct VerifyArgs {
	const char *file;
	const char *sigpath;
	SigFormat fmt;
	const char *ns;
	const char *ctx;
	sigil_sign_mode mode;
	sigil_ed25519_policy policy;
	FormatPubkey pub;
	const char *keyname; /* for messages */
	char detail[FORMAT_COMMENT_MAX + 64];
} VerifyArgs;

static bool looks_hex(const uint8_t *d, size_t n)
{
	while (n && (d[n - 1] == '\n' || d[n - 1] == '\r'))
		n--;
	if (n != 128)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr("0123456789abcdefABCDEF", d[i]) || d[i] == 0)
			return false;
	return true;
}

static SigFormat detect_format(const uint8_t *d, size_t n)
{
	if (memmem(d, n, "-----BEGIN SSH SIGNATURE-----", 29))
		return SIG_SSHSIG;
	if (n > 19 && memcmp(d, "untrusted comment: ", 19) == 0)
		return memmem(d, n, "\ntrusted comment: ", 18) ? SIG_MINISIGN : SIG_SIGNIFY;
	if (looks_hex(d, n))
		return SIG_HEX;
	if (n == 64)
		return SIG_RAW;
	return SIG_BASE64;
}

/* Returns EXIT_VALID, EXIT_INVALID or EXIT_USAGE (with a message). */
static int verify_one(VerifyArgs *a, const uint8_t *sigdata, size_t siglen)
{
	const char *why = NULL;
	FileHashes h;
	uint8_t *data = NULL;
	size_t len;
	int ex;

	if (a->fmt == SIG_AUTO)
		a->fmt = detect_format(sigdata, siglen);
	switch (a->fmt) {
	case SIG_SSHSIG: {
		FormatSshsig s;
		uint8_t *sd;
		size_t sdlen;
		int ok;

		if (format_sshsig_parse(&s, (const char *)sigdata, siglen, &why) < 0) {
			snprintf(a->detail, sizeof(a->detail), "%s", why);
			return EXIT_INVALID;
		}
		if (memcmp(s.pk, a->pub.pk, 32) != 0) {
			snprintf(a->detail, sizeof(a->detail), "signed by a different key");
			return EXIT_INVALID;
		}
		if (strcmp(s.ns, a->ns) != 0) {
			snprintf(a->detail, sizeof(a->detail), "namespace is \"%s\", expected \"%s\"", s.ns, a->ns);
			return EXIT_INVALID;
		}
		if ((ex = hash_input(a->file, strcmp(s.hashalg, "sha256") == 0 ? FILEHASH_SHA256 : FILEHASH_SHA512, &h)))
			return ex;
		if (strcmp(s.hashalg, "sha256") == 0)
			sd = format_sshsig_signed_data(&sdlen, s.ns, "sha256", h.sha256, 32);
		else
			sd = format_sshsig_signed_data(&sdlen, s.ns, "sha512", h.sha512, 64);
		if (!sd) {
			err("out of memory");
			return EXIT_USAGE;
		}
		ok = sigil_ed25519_verify(s.sig, sd, sdlen, a->pub.pk, a->policy) == 0;
		free(sd);
		snprintf(a->detail, sizeof(a->detail), "sshsig, namespace \"%s\", %s", s.ns, s.hashalg);
		return ok ? EXIT_VALID : EXIT_INVALID;
	}
	case SIG_MINISIGN: {
		FormatMinisign m;
		uint8_t *gm;
		int ok;

		if (format_minisign_parse(&m, (const char *)sigdata, siglen, &why) < 0) {
			snprintf(a->detail, sizeof(a->detail), "%s", why);
			return EXIT_INVALID;
		}
		if (a->pub.has_keynum && memcmp(m.keynum, a->pub.keynum, 8) != 0) {
			snprintf(a->detail, sizeof(a->detail), "signature key id differs from the public key's");
			return EXIT_INVALID;
		}
		if (m.prehashed) {
			if ((ex = hash_input(a->file, FILEHASH_BLAKE2B, &h)))
				return ex;
			ok = sigil_ed25519_verify(m.sig, h.blake2b, 64, a->pub.pk, a->policy) == 0;
		} else {
			if ((ex = slurp_input(a->file, &data, &len, "legacy minisign signatures need the whole file")))
				return ex;
			ok = sigil_ed25519_verify(m.sig, data, len, a->pub.pk, a->policy) == 0;
			free(data);
		}
		if (!ok) {
			snprintf(a->detail, sizeof(a->detail), "minisign signature does not match");
			return EXIT_INVALID;
		}
		gm = malloc(64 + strlen(m.trusted_comment));
		if (!gm) {
			err("out of memory");
			return EXIT_USAGE;
		}
		memcpy(gm, m.sig, 64);
		memcpy(gm + 64, m.trusted_comment, strlen(m.trusted_comment));
		ok = sigil_ed25519_verify(m.global_sig, gm, 64 + strlen(m.trusted_comment), a->pub.pk,
		                          a->policy) == 0;
		free(gm);
		if (!ok) {
			snprintf(a->detail, sizeof(a->detail), "minisign trusted comment signature does not match");
			return EXIT_INVALID;
		}
		snprintf(a->detail, sizeof(a->detail), "minisign, trusted comment: %s", m.trusted_comment);
		return EXIT_VALID;
	}
	case SIG_SIGNIFY: {
		FormatSignify s;
		int ok;

		if (format_signify_parse(&s, (const char *)sigdata, siglen, &why) < 0) {
			snprintf(a->detail, sizeof(a->detail), "%s", why);
			return EXIT_INVALID;
		}
		if (a->pub.has_keynum && memcmp(s.keynum, a->pub.keynum, 8) != 0) {
			snprintf(a->detail, sizeof(a->detail), "signature key number differs from the public key's");
			return EXIT_INVALID;
		}
		if ((ex = slurp_input(a->file, &data, &len, "signify signatures cover the whole file")))
			return ex;
		ok = sigil_ed25519_verify(s.sig, data, len, a->pub.pk, a->policy) == 0;
		free(data);
		snprintf(a->detail, sizeof(a->detail), "signify");
		return ok ? EXIT_VALID : EXIT_INVALID;
	}
	case SIG_RAW:
	case SIG_HEX:
	case SIG_BASE64: {
		uint8_t sig[64];
		size_t n = siglen, sl;
		const uint8_t *ctx = (const uint8_t *)a->ctx;
		size_t ctxlen = strlen(a->ctx);
		int ok = 0;

		while (a->fmt != SIG_RAW && n && (sigdata[n - 1] == '\n' || sigdata[n - 1] == '\r' ||
		                                  sigdata[n - 1] == ' '))
			n--;
		if ((a->fmt == SIG_RAW && (n != 64 || (memcpy(sig, sigdata, 64), 0))) ||
		    (a->fmt == SIG_HEX && format_hex_decode(sig, 64, (const char *)sigdata, n) < 0) ||
		    (a->fmt == SIG_BASE64 &&
		     (format_b64_decode(sig, 64, &sl, (const char *)sigdata, n) < 0 || sl != 64))) {
			snprintf(a->detail, sizeof(a->detail), "not a %s Ed25519 signature",
			         sig_format_names[a->fmt]);
			return EXIT_INVALID;
		}
		if (a->mode == SIGIL_SIGN_PH) {
			if ((ex = hash_input(a->file, FILEHASH_SHA512, &h)))
				return ex;
			ok = sigil_ed25519ph_verify_prehashed(sig, h.sha512, ctx, ctxlen, a->pub.pk, a->policy) == 0;
		} else {
			if ((ex = slurp_input(a->file, &data, &len, "use --mode ph")))
				return ex;
			if (a->mode == SIGIL_SIGN_CTX)
				ok = sigil_ed25519ctx_verify(sig, data, len, ctx, ctxlen, a->pub.pk, a->policy) == 0;
			else
				ok = sigil_ed25519_verify(sig, data, len, a->pub.pk, a->policy) == 0;
			free(data);
		}
		snprintf(a->detail, sizeof(a->detail), "%s, Ed25519%s", sig_format_names[a->fmt],
		         a->mode == SIGIL_SIGN_PH ? "ph" : a->mode == SIGIL_SIGN_CTX ? "ctx" : "");
		return ok ? EXIT_VALID : EXIT_INVALID;
	}
	case SIG_AUTO:
		break;
	}
	return EXIT_USAGE;
}

static int cmd_verify(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "key", required_argument, NULL, 'k' },
		{ "pubkey", required_argument, NULL, 'p' },
		{ "signature", required_argument, NULL, 'x' },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "namespace", required_argument, NULL, 'n' },
		{ "principal", required_argument, NULL, 'I' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "context", required_argument, NULL, OPT_CONTEXT },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ 0 },
	};
	VerifyArgs a = { .fmt = SIG_AUTO, .ns = "file", .ctx = "", .mode = SIGIL_SIGN_PH,
		         .policy = SIGIL_ED25519_STRICT };
	const char *label = NULL, *pubpath = NULL, *principal = NULL, *why;
	char *sigpath = NULL;
	uint8_t *sigdata = NULL, *pubdata = NULL;
	size_t siglen, publen;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hk:p:x:n:I:", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		switch (c) {
		case 'k':
			label = optarg;
			break;
		case 'p':
			pubpath = optarg;
			break;
		case 'x':
			a.sigpath = optarg;
			break;
		case OPT_FORMAT:
			if (parse_sig_format(optarg, &a.fmt) < 0)
				return usage_error("bad --format: %s", optarg);
			break;
		case 'n':
			a.ns = optarg;
			break;
		case 'I':
			principal = optarg;
			break;
		case OPT_MODE:
			if (parse_mode(optarg, &a.mode) < 0)
				return usage_error("bad --mode: %s (pure, ctx or ph)", optarg);
			break;
		case OPT_CONTEXT:
			a.ctx = optarg;
			break;
		case OPT_POLICY:
			if (strcmp(optarg, "strict") == 0)
				a.policy = SIGIL_ED25519_STRICT;
			else if (strcmp(optarg, "zip215") == 0)
				a.policy = SIGIL_ED25519_ZIP215;
			else
				return usage_error("bad --policy: %s (strict or zip215)", optarg);
			break;
		}
	}
	if (argc - optind < 1 || argc - optind > 2)
		return usage_error("verify takes FILE [SIGNATURE]");
	if (argc - optind == 2) {
		if (a.sigpath)
			return usage_error("give the signature once: -x or SIGNATURE");
		a.sigpath = argv[optind + 1];
	}
	if (!!label == !!pubpath)
		return usage_error("verify needs exactly one of --key NAME or --pubkey FILE");
	if (strlen(a.ctx) > 255)
		return usage_error("--context is at most 255 bytes");
	a.file = argv[optind];
	if (a.sigpath) {
		sigpath = strdup(a.sigpath);
	} else if (strcmp(a.file, "-") == 0) {
		return usage_error("with FILE -, give the signature with -x");
	} else {
		bool mini = a.fmt == SIG_MINISIGN;

		if (a.fmt == SIG_AUTO) {
			char *s;
			struct stat st;

			if (asprintf(&s, "%s.sig", a.file) >= 0) {
				mini = stat(s, &st) < 0;
				free(s);
			}
		}
		if (asprintf(&sigpath, "%s%s", a.file, mini ? ".minisig" : ".sig") < 0)
			sigpath = NULL;
	}
	if (!sigpath) {
		err("out of memory");
		return EXIT_USAGE;
	}
	if (read_all_path(sigpath, 1024 * 1024, &sigdata, &siglen) < 0) {
		err("cannot read signature %s: %s", sigpath, strerror(errno));
		free(sigpath);
		return EXIT_USAGE;
	}
	if (label) {
		sigil_client *cl;
		sigil_key_info k;
		sigil_error e;

		if ((ex = open_client(&cl)))
			goto done;
		e = sigil_client_key_public(cl, &k, label);
		if (e) {
			ex = fail(cl, e, "verify");
			sigil_client_free(cl);
			goto done;
		}
		sigil_client_free(cl);
		memset(&a.pub, 0, sizeof(a.pub));
		memcpy(a.pub.pk, k.public_key, 32);
		/* No key number check: a key imported from minisign or signify
		 * signs there under that tool's random key number, and sigil's
		 * own files carry a derived one. The signature check decides. */
		a.pub.has_keynum = 0;
		a.keyname = label;
	} else {
		if (read_all_path(pubpath, 1024 * 1024, &pubdata, &publen) < 0) {
			err("cannot read public key %s: %s", pubpath, strerror(errno));
			ex = EXIT_USAGE;
			goto done;
		}
		if (format_pubkey_parse(&a.pub, pubdata, publen, principal, &why) < 0) {
			err("%s: %s", pubpath, why);
			ex = EXIT_USAGE;
			goto done;
		}
		a.keyname = pubpath;
	}
	ex = verify_one(&a, sigdata, siglen);
	if (ex == EXIT_VALID || ex == EXIT_INVALID) {
		if (opts.json) {
			json_open();
			fputs("\"file\":", stdout);
			json_str(a.file);
			fputs(",\"signature\":", stdout);
			json_str(sigpath);
			fputs(",\"format\":", stdout);
			json_str(sig_format_names[a.fmt]);
			fputs(",\"public_key\":", stdout);
			json_hex(a.pub.pk, 32);
			printf(",\"valid\":%s,\"detail\":", ex == EXIT_VALID ? "true" : "false");
			json_str(a.detail);
			fputs("}\n", stdout);
		} else if (ex == EXIT_VALID) {
			printf("Good signature on %s by %s (%s)\n", a.file, a.keyname, a.detail);
		} else {
			fprintf(stderr, "%s: BAD signature on %s (%s)\n", prog, a.file,
			        a.detail[0] ? a.detail : "Ed25519 verification failed");
		}
	}
done:
	free(sigpath);
	free(sigdata);
	free(pubdata);
	return ex;
}

/* ---- dh, lock, unlock, status ---- */

static int cmd_dh(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "key", required_argument, NULL, 'k' },
		{ "peer", required_argument, NULL, OPT_PEER },
		{ "peer-file", required_argument, NULL, OPT_PEER_FILE },
		{ 0 },
	};
	const char *label = NULL, *peer = NULL, *peerfile = NULL, *why;
	uint8_t peerpk[32], shared[32], *data = NULL;
	char hex[65];
	size_t len;
	sigil_client *cl;
	sigil_error e;
	FormatPubkey p;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hk:", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == 'k')
			label = optarg;
		if (c == OPT_PEER)
			peer = optarg;
		if (c == OPT_PEER_FILE)
			peerfile = optarg;
	}
	if (argc - optind == 1 && !peer && !peerfile) {
		/* positional PEER: hex digits, or a file holding the key */
		if (strlen(argv[optind]) == 64 && format_hex_decode(peerpk, 32, argv[optind], 64) == 0)
			peer = argv[optind];
		else
			peerfile = argv[optind];
	} else if (argc != optind) {
		return usage_error("dh takes at most one PEER");
	}
	if (!label || !!peer == !!peerfile)
		return usage_error("dh needs --key NAME and one of --peer HEX, --peer-file FILE or PEER");
	if (peer) {
		if (format_hex_decode(peerpk, 32, peer, strlen(peer)) < 0)
			return usage_error("--peer is 64 hex digits");
	} else {
		if (read_all_path(peerfile, 4096, &data, &len) < 0) {
			err("cannot read %s: %s", peerfile, strerror(errno));
			return EXIT_USAGE;
		}
		if (format_pubkey_parse(&p, data, len, NULL, &why) < 0 || p.kind > FORMAT_PK_BASE64) {
			err("%s: not a raw, hex or base64 X25519 public key", peerfile);
			free(data);
			return EXIT_USAGE;
		}
		free(data);
		memcpy(peerpk, p.pk, 32);
	}
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_dh(cl, shared, label, peerpk);
	if (e) {
		ex = fail(cl, e, "dh");
	} else {
		/* the secret: libsodium's constant-time encoder, not a table lookup */
		sodium_bin2hex(hex, sizeof(hex), shared, 32);
		if (opts.json) {
			json_open();
			printf("\"shared_secret\":\"%s\"}\n", hex);
		} else
			printf("%s\n", hex);
		sigil_wipe(hex, sizeof(hex));
	}
	sigil_wipe(shared, sizeof(shared));
	sigil_client_free(cl);
	return ex;
}

/* Reads one line of passphrase from path ("-" stdin), or asks on the
 * terminal without echo when path is NULL. The result is in locked,
 * guarded memory (sodium_malloc); release it with sodium_free. */
static char *read_passphrase(const char *path)
{
	const size_t cap = 1024 + 2; /* PROTO_PASSPHRASE_MAX + newline + NUL */
	struct termios old, noecho;
	bool tty = false;
	ssize_t n;
	char *pass;
	int fd;

	if (path && strcmp(path, "-") != 0)
		fd = open(path, O_RDONLY | O_CLOEXEC);
	else if (path)
		fd = STDIN_FILENO;
	else
		fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return NULL;
	pass = sodium_malloc(cap);
	if (!pass) {
		if (fd != STDIN_FILENO)
			close(fd);
		return NULL;
	}
	if (!path && tcgetattr(fd, &old) == 0) {
		noecho = old;
		noecho.c_lflag &= ~(tcflag_t)ECHO;
		tty = tcsetattr(fd, TCSAFLUSH, &noecho) == 0;
		(void)!write(fd, "Passphrase: ", 12);
	}
	n = read_secret_fd(fd, (uint8_t *)pass, cap - 1, true);
	if (tty) {
		(void)tcsetattr(fd, TCSAFLUSH, &old);
		(void)!write(fd, "\n", 1);
	}
	if (fd != STDIN_FILENO)
		close(fd);
	if (n < 0) {
		sodium_free(pass);
		return NULL;
	}
	while (n && (pass[n - 1] == '\n' || pass[n - 1] == '\r'))
		n--;
	pass[n] = '\0';
	return pass;
}

/* Options of lock, unlock and rekey: the common ones, --passphrase-file and
 * --ask, no operands. Returns -1 to go on, with *pass the passphrase read
 * (sodium_malloc'd) or NULL when neither option was given; otherwise the
 * exit status. what names the passphrase in the error message. */
static int passphrase_opts(int argc, char **argv, const char *cmd, const char *what, char **pass,
                           const char **keyfile)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "passphrase-file", required_argument, NULL, OPT_PASSFILE },
		{ "ask", no_argument, NULL, 'a' },
		{ "new-master-key-file", required_argument, NULL, OPT_NEW_MASTER_KEY },
		{ 0 },
	};
	const char *passfile = NULL;
	bool ask = false;
	int c, ex = 0;

	*pass = NULL;
	while ((c = getopt_long(argc, argv, "s:ha", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == OPT_PASSFILE)
			passfile = optarg;
		if (c == 'a')
			ask = true;
		if (c == OPT_NEW_MASTER_KEY) {
			if (!keyfile)
				return usage_error("%s has no option --new-master-key-file", cmd);
			*keyfile = optarg;
		}
	}
	if (argc != optind)
		return usage_error("%s takes no arguments", cmd);
	if (keyfile && *keyfile && (passfile || ask))
		return usage_error("give a new passphrase or --new-master-key-file, not both");
	if (passfile || ask) {
		*pass = read_passphrase(passfile);
		if (!*pass) {
			err("cannot read the %s", what);
			return EXIT_USAGE;
		}
	}
	return -1;
}

static int cmd_lock_unlock(int argc, char **argv, bool lock)
{
	char *pass;
	sigil_client *cl;
	sigil_error e;
	int ex = passphrase_opts(argc, argv, lock ? "lock" : "unlock", "passphrase", &pass, NULL);

	if (ex >= 0)
		return ex;
	ex = 0;
	if ((ex = open_client(&cl)))
		goto out;
	e = lock ? sigil_client_lock(cl, pass) : sigil_client_unlock(cl, pass);
	if (e)
		ex = fail(cl, e, lock ? "lock" : "unlock");
	else if (opts.json) {
		json_open();
		printf("\"locked\":%s}\n", lock ? "true" : "false");
	}
	sigil_client_free(cl);
out:
	if (pass)
		sodium_free(pass); /* wipes */
	return ex;
}

static int cmd_rekey(int argc, char **argv)
{
	char *pass;
	uint64_t n = 0;
	sigil_client *cl;
	sigil_error e;
	const char *keyfile = NULL;
	char *abs = NULL;
	int ex = passphrase_opts(argc, argv, "rekey", "new passphrase", &pass, &keyfile);

	if (ex >= 0)
		return ex;
	ex = 0;
	if (keyfile) {
		/* sigild reads it: an absolute path */
		abs = realpath(keyfile, NULL);
		if (!abs) {
			err("cannot use the new master key file %s: %s", keyfile, strerror(errno));
			ex = EXIT_USAGE;
			goto out;
		}
	}
	if ((ex = open_client(&cl)))
		goto out;
	e = abs ? sigil_client_rekey_file(cl, abs, &n) : sigil_client_rekey(cl, pass, &n);
	if (e)
		ex = fail(cl, e, "rekey");
	else if (opts.json) {
		json_open();
		printf("\"rekeyed\":%" PRIu64 "}\n", n);
	}
	else
		printf("%" PRIu64 " keys re-sealed under the new master key%s%s%s\n", n,
		       abs ? " in " : pass ? " (the new passphrase)" : "", abs ? abs : "",
		       abs ? "\nPoint sigild at it (master_key_file, --master-key-file or the credential master-key)"
		             " before its next start" : "");
	sigil_client_free(cl);
out:
	free(abs);
	if (pass)
		sodium_free(pass); /* wipes */
	return ex;
}

static int cmd_export(int argc, char **argv)
{
	uint8_t seed[32];
	char hex[65];
	sigil_client *cl;
	sigil_error e;
	int ex;

	if (age_cmd_is_export(argc, argv))
		return age_cmd_export(argc, argv);
	ex = common_only(argc, argv, 1, "export takes one LABEL");
	if (ex >= 0)
		return ex;
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_key_export(cl, seed, argv[optind]);
	if (e) {
		ex = fail(cl, e, "export");
	} else {
		static const char digits[] = "0123456789abcdef";

		for (int i = 0; i < 32; i++) {
			hex[2 * i] = digits[seed[i] >> 4];
			hex[2 * i + 1] = digits[seed[i] & 15];
		}
		hex[64] = '\0';
		if (opts.json) {
			json_open();
			printf("\"seed\":\"%s\"}\n", hex);
		} else
			printf("%s\n", hex);
		fflush(stdout);
	}
	sigil_wipe(seed, sizeof(seed));
	sigil_wipe(hex, sizeof(hex));
	sigil_client_free(cl);
	return ex;
}

static int cmd_audit(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "lines", required_argument, NULL, 'n' },
		{ 0 },
	};
	uint64_t limit = 100;
	char **lines = NULL;
	size_t n = 0;
	sigil_client *cl;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hn:", lo, NULL)) != -1) {
		if (common_opt(c, &ex) < 0)
			return ex;
		if (c == 'n' && (parse_u64(optarg, 1u << 20, &limit) < 0 || limit == 0))
			return usage_error("bad --lines: %s", optarg);
	}
	if (argc != optind)
		return usage_error("audit takes no arguments");
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_audit(cl, (size_t)limit, &lines, &n);
	if (e) {
		ex = fail(cl, e, "audit");
	} else {
		if (opts.json) {
			json_open();
			fputs("\"lines\":[", stdout);
			for (size_t i = 0; i < n; i++) {
				if (i)
					putchar(',');
				json_str(lines[i]);
			}
			fputs("]}\n", stdout);
		} else {
			for (size_t i = 0; i < n; i++)
				printf("%s\n", lines[i]);
		}
		sigil_client_strv_free(lines);
	}
	sigil_client_free(cl);
	return ex;
}

static int cmd_lock(int argc, char **argv)
{
	return cmd_lock_unlock(argc, argv, true);
}

static int cmd_unlock(int argc, char **argv)
{
	return cmd_lock_unlock(argc, argv, false);
}

static int cmd_status(int argc, char **argv)
{
	sigil_client *cl;
	sigil_hello hi;
	sigil_status st;
	sigil_error e;
	int ex = common_only(argc, argv, 0, "status takes no arguments");

	if (ex >= 0)
		return ex;
	if ((ex = open_client(&cl)))
		return ex;
	e = sigil_client_hello(cl, &hi);
	if (!e)
		e = sigil_client_status(cl, &st);
	if (e) {
		ex = fail(cl, e, "status");
	} else if (opts.json) {
		json_open();
		fputs("\"server\":", stdout);
		json_str(hi.server);
		printf(",\"protocol\":%" PRIu64 ",\"keys\":%" PRIu64 ",\"locked\":%s,\"connections\":%" PRIu64
		       ",\"inflight\":%" PRIu64 ",\"uptime_s\":%" PRIu64 ",\"requests\":%" PRIu64
		       ",\"workers\":%" PRIu64 "}\n",
		       hi.protocol, st.keys, st.locked ? "true" : "false", st.connections, st.inflight,
		       st.uptime_s, st.requests, st.workers);
	} else {
		printf("server:      %s (protocol %" PRIu64 ")\n", hi.server, hi.protocol);
		printf("keys:        %" PRIu64 "\n", st.keys);
		printf("locked:      %s\n", st.locked ? "yes" : "no");
		printf("connections: %" PRIu64 "\n", st.connections);
		printf("inflight:    %" PRIu64 "\n", st.inflight);
		printf("requests:    %" PRIu64 "\n", st.requests);
		printf("workers:     %" PRIu64 "\n", st.workers);
		printf("uptime:      %" PRIu64 " s\n", st.uptime_s);
	}
	sigil_client_free(cl);
	return ex;
}

/* ---- for the command files (cli.h) ---- */

_Static_assert(OPT_JSON == CLI_OPT_JSON && OPT_TIMEOUT == CLI_OPT_TIMEOUT, "cli.h's option values");

int cli_common_opt(int c, int *exitp)
{
	return common_opt(c, exitp);
}

int cli_usage_error(const char *fmt, ...)
{
	char msg[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return usage_error("%s", msg);
}

void cli_err(const char *fmt, ...)
{
	char msg[sizeof(last_error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	err("%s", msg);
}

int cli_fail(sigil_client *c, sigil_error e, const char *what)
{
	return fail(c, e, what);
}

int cli_open_client(sigil_client **cp)
{
	return open_client(cp);
}

bool cli_json(void)
{
	return opts.json;
}

void cli_json_open(void)
{
	json_open();
}

void cli_json_str(const char *s)
{
	json_str(s);
}

void cli_print_one_key(const sigil_key_info *k)
{
	print_one_key(k);
}

int cli_read_all(const char *path, size_t max, uint8_t **datap, size_t *lenp)
{
	return read_all_path(path, max, datap, lenp);
}

long cli_read_secret(const char *path, uint8_t *buf, size_t cap)
{
	return (long)read_secret_path(path, buf, cap);
}

int cli_write_out(const char *path, const void *data, size_t len)
{
	return write_out(path, data, len);
}

/* ---- main ---- */

/* sigil ssh-cert: client/sshcert.c, with this command's options and errors */
static int cmd_ssh_cert(int argc, char **argv)
{
	const SshcertCli cli = { common_opt, open_client, fail, usage_error, err, write_out,
		                 OPT_JSON, OPT_TIMEOUT, &opts.json, json_open, json_str };

	return sshcert_run(&cli, argc, argv);
}

static const Cmd cmds[] = {
	{ "keygen", cmd_keygen,
	  "Usage: sigil keygen [--type ed25519|x25519] [--exportable] [POLICY] LABEL\n"
	  "Generate a key in sigild and print its label, type, public key (hex) and fingerprint.\n"
	  "POLICY (keygen and import; docs/security.md), each rule optional:\n"
	  "  --allow-op OP        operations allowed: sign, dh, age-unwrap (repeatable; dh does\n"
	  "                       not admit age-unwrap)\n"
	  "  --expires T          refuse the key after unix time T, or +SECONDS from now\n"
	  "  --allow-uid UID      peers with this uid (repeatable; uids or gids must match)\n"
	  "  --allow-gid GID      peers in this group (primary or supplementary; repeatable)\n"
	  "  --allow-exe PATH     peers running this executable (repeatable); not a boundary against\n"
	  "                       code of the same uid (exec, LD_PRELOAD); --allow-uid is the boundary\n"
	  "  --max-signs N        at most N operations (counted since sigild started)\n"
	  "  --rate N             at most N operations a minute\n" },
	{ "import", cmd_import,
	  "Usage: sigil import [--type ed25519|x25519] [--exportable] [POLICY (see keygen)]\n"
	  "                    [--format auto|hex|raw|openssh|minisign|signify|age] LABEL [FILE|-]\n"
	  "       sigil import --wrapped --key IDENTITY LABEL [FILE|-]\n"
	  "Import a 32-byte seed into sigild, read from FILE (default: stdin) as 64 hex\n"
	  "digits, 32 raw bytes, an unencrypted OpenSSH ed25519 private key (ssh-keygen -N ''),\n"
	  "minisign secret key (minisign -G -W) or signify secret key (signify -G -n).\n"
	  "x25519 keys take a hex or raw scalar, or with --format age an age-keygen key file\n"
	  "(AGE-SECRET-KEY-1...).\n"
	  "--wrapped: sigild opens the age file FILE (made by sigil export --to) with its x25519\n"
	  "key IDENTITY and imports the key it holds as LABEL; the seed never reaches this\n"
	  "command (docs/age.md).\n" },
	{ "list", cmd_list, "Usage: sigil list\nList the keys in sigild: label, type, public key, fingerprint, and below a key\n"
	  "with a policy its rules (ops, expires, uids, gids, exes, max_signs, rate).\n" },
	{ "pubkey", cmd_pubkey,
	  "Usage: sigil pubkey [--format FORMAT] [-o FILE] [--principal P] [-n NAMESPACE] LABEL\n"
	  "Export a public key. FORMAT is one of:\n"
	  "  openssh          ssh-ed25519 AAAA... sigil:LABEL (default)\n"
	  "  allowed-signers  a line for ssh-keygen -Y verify -f (principal: --principal or LABEL;\n"
	  "                   -n adds namespaces=\"NAMESPACE\")\n"
	  "  minisign         a minisign public key file (for minisign -V -p)\n"
	  "  signify          a signify public key file (for signify -V -p)\n"
	  "  raw, hex, base64 the 32 bytes\n"
	  "  age              x25519 keys: the age recipient (age1..., as age-keygen -y)\n"
	  "  age-identity     x25519 keys: an identity file for age -d -i (AGE-PLUGIN-SIGIL-1...;\n"
	  "                   age-plugin-sigil asks sigild to unwrap; no secret in it)\n" },
	{ "delete", cmd_delete, "Usage: sigil delete LABEL\nDelete a key from sigild.\n" },
	{ "sign", cmd_sign,
	  "Usage: sigil sign --key NAME [--format FORMAT] [-o OUTPUT] [options] FILE\n"
	  "Write a detached signature of FILE (- for stdin) to OUTPUT (default FILE.sig,\n"
	  "FILE.minisig for minisign; - for stdout). FORMAT is one of:\n"
	  "  sshsig    OpenSSH SSHSIG, armored (default); verify with\n"
	  "            ssh-keygen -Y verify -f allowed_signers -I LABEL -n NAMESPACE -s FILE.sig < FILE\n"
	  "  minisign  prehashed (BLAKE2b-512) minisign signature with a trusted comment;\n"
	  "            verify with minisign -V -p key.pub -m FILE\n"
	  "  signify   signify signature (signs the whole file, at most 48 MiB);\n"
	  "            verify with signify -V -p key.pub -x FILE.sig -m FILE\n"
	  "  raw, hex, base64  the 64-byte Ed25519 signature\n"
	  "Options:\n"
	  "  -k, --key NAME            the signing key's label\n"
	  "  -n, --namespace NS        SSHSIG namespace (default \"file\")\n"
	  "  -t, --trusted-comment T   minisign trusted comment (default timestamp and file name)\n"
	  "  -c, --comment C           untrusted comment (minisign, signify)\n"
	  "      --mode pure|ctx|ph    raw/hex/base64: Ed25519, Ed25519ctx or Ed25519ph (default ph:\n"
	  "                            the file is hashed here and only its SHA-512 goes to sigild)\n"
	  "      --context C           context string for ctx (1..255 bytes) and ph (0..255)\n"
	  "SSHSIG and minisign hash the file here (SHA-512, BLAKE2b-512) and send sigild only the\n"
	  "small data to sign, so files of any size are streamed in bounded memory.\n" },
	{ "verify", cmd_verify,
	  "Usage: sigil verify (--pubkey FILE | --key NAME) [--format FORMAT] [options]\n"
	  "                    FILE [SIGNATURE]\n"
	  "Check a detached signature of FILE locally (with sigil's crypto; sigild is asked only\n"
	  "for the public key when --key is given). Exit 0 if valid, 1 if not.\n"
	  "  -p, --pubkey FILE   public key: OpenSSH (.pub or allowed_signers), minisign, signify,\n"
	  "                      raw, hex or base64\n"
	  "  -k, --key NAME      take the public key of a key in sigild\n"
	  "  -x, --signature F   the signature, also given as SIGNATURE (default FILE.sig,\n"
	  "                      else FILE.minisig)\n"
	  "      --format F      auto (default), sshsig, minisign, signify, raw, hex, base64\n"
	  "  -n, --namespace NS  SSHSIG namespace that must match (default \"file\")\n"
	  "  -I, --principal P   pick the allowed_signers line of principal P\n"
	  "      --mode pure|ctx|ph, --context C   for raw/hex/base64 (default ph, as sign)\n"
	  "      --policy strict|zip215            Ed25519 verification rules (default strict)\n" },
	{ "dh", cmd_dh,
	  "Usage: sigil dh --key NAME (--peer HEX | --peer-file FILE | PEER)\n"
	  "X25519 with the x25519 key NAME and the peer's public key; prints the shared secret (hex).\n" },
	{ "lock", cmd_lock,
	  "Usage: sigil lock [--passphrase-file FILE|- | --ask]\n"
	  "Lock sigild: it wipes its unsealed keys and refuses key operations until unlocked.\n" },
	{ "unlock", cmd_unlock,
	  "Usage: sigil unlock [--passphrase-file FILE|- | --ask]\n"
	  "Unlock sigild, with the passphrase from FILE (- for stdin) or asked on the terminal.\n" },
	{ "rekey", cmd_rekey,
	  "Usage: sigil rekey [--passphrase-file FILE|- | --ask | --new-master-key-file FILE]\n"
	  "Re-seal every key under a new master key: a new passphrase (sigild then seals under a\n"
	  "passphrase and starts locked), the key in FILE (32 bytes or 64 hex digits, mode 0600;\n"
	  "sigild reads it), or with neither a new generated master key (when the current one is\n"
	  "generated). From any master key source. After a rekey to a file or a passphrase, point\n"
	  "sigild's configuration at it before the next start. Crash-safe: an interrupted rekey is\n"
	  "settled at the next start or unlock (docs/security.md).\n" },
	{ "export", cmd_export,
	  "Usage: sigil export LABEL\n"
	  "       sigil export --to RECIPIENT [--armor] [-o FILE] LABEL\n"
	  "Print the seed of an exportable key (hex; secret). Refused unless the key was made\n"
	  "with --exportable and its policy admits this user and program. Audited.\n"
	  "--to: sigild writes the key (type, label, seed, policy) as an age file for the age\n"
	  "recipient RECIPIENT (age1...; --armor: ASCII); the seed never reaches this command.\n"
	  "Import it on the other host with sigil import --wrapped (docs/age.md).\n" },
	{ "audit", cmd_audit,
	  "Usage: sigil audit [-n LINES]\n"
	  "Print sigild's last audit lines (default 100): time, peer uid, pid, executable, key,\n"
	  "fingerprint, operation and result of each private-key operation and key change.\n" },
	{ "status", cmd_status, "Usage: sigil status\nShow sigild's version and state.\n" },
	{ "ssh-cert", cmd_ssh_cert, sshcert_usage },
};

static void main_usage(FILE *f)
{
	fprintf(f, "Usage: %s [-s SOCKET] [--json] [--timeout MS] COMMAND [ARGS]\n\nCommands:\n", prog);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		fprintf(f, "  %s\n", cmds[i].name);
	fprintf(f, "\n'%s COMMAND --help' describes each command.\n"
	           "Exit codes: 0 ok, 1 signature invalid, 2 usage or bad input,\n"
	           "3 daemon unreachable, 4 refused by the daemon.\n", prog);
}

static int run_main(int argc, char **argv)
{
	static const struct option lo[] = {
		COMMON_LONGOPTS,
		{ "version", no_argument, NULL, 'V' },
		{ 0 },
	};
	int c, ex = 0;
	const char *name;

	if (sodium_init() < 0) {
		err("libsodium failed to initialise");
		return EXIT_USAGE;
	}
	while ((c = getopt_long(argc, argv, "+s:hV", lo, NULL)) != -1) {
		if (c == 'h') {
			main_usage(stdout);
			return EXIT_VALID;
		}
		if (c == 'V') {
			printf("sigil %s\n", SIGIL_CLIENT_VERSION);
			return EXIT_VALID;
		}
		if (c == '?') {
			snprintf(last_error, sizeof(last_error), "bad option");
			main_usage(stderr);
			return EXIT_USAGE;
		}
		if (common_opt(c, &ex) < 0)
			return ex;
	}
	if (optind >= argc) {
		snprintf(last_error, sizeof(last_error), "no command given");
		main_usage(stderr);
		return EXIT_USAGE;
	}
	name = argv[optind];
	if (strcmp(name, "help") == 0) {
		if (optind + 1 >= argc) {
			main_usage(stdout);
			return EXIT_VALID;
		}
		name = argv[optind + 1];
		for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
			if (strcmp(cmds[i].name, name) == 0) {
				current = &cmds[i];
				return show_help();
			}
		}
		err("unknown command: %s", name);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(cmds[i].name, name) == 0) {
			int sub_argc = argc - optind;
			char **sub_argv = argv + optind;

			current = &cmds[i];
			optind = 0; /* GNU getopt: full re-initialisation */
			return cmds[i].run(sub_argc, sub_argv);
		}
	}
	err("unknown command: %s", name);
	main_usage(stderr);
	return EXIT_USAGE;
}

int main(int argc, char **argv)
{
	int ex = run_main(argc, argv);

	/* --json: every failure leaves one JSON document on stdout */
	if (opts.json && ex != EXIT_VALID && !json_written) {
		static const char *const kinds[] = { "ok", "invalid_signature", "usage", "unreachable",
			                             "refused" };

		fputs("{\"error\":", stdout);
		json_str(ex >= 0 && ex <= 4 ? kinds[ex] : "error");
		fputs(",\"message\":", stdout);
		json_str(last_error);
		printf(",\"exit\":%d}\n", ex);
	}
	return ex;
}
