/* SPDX-License-Identifier: MIT */
/*
 * sshcert.c - `sigil ssh-cert`: an OpenSSH user or host certificate,
 * built here and signed by a sigil Ed25519 key (the CA) through sigild
 *
 * The certificate (PROTOCOL.certkeys; draft-miller-ssh-cert) is
 *   string  "<type>-cert-v01@openssh.com"
 *   string  nonce (32 random bytes)
 *   ...     the subject key's fields (its public key blob after the type)
 *   uint64  serial, uint32 type (1 user, 2 host), string key id,
 *   string  principals (packed strings), uint64 valid after, uint64 valid
 *           before, string critical options, string extensions, string
 *           reserved, string CA public key blob
 *   string  signature: the CA's over every byte above
 * and the output file holds "<cert type> <base64> <comment>". The CA
 * signature is a pure Ed25519 `sign` of those bytes by sigild; nothing
 * secret passes through this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "format.h"
#include "sshcert.h"

#define SSHCERT_PUB_MAX (64u * 1024)   /* a public key file is small */
#define SSHCERT_MAX_OPTS 64
#define SSHCERT_TEXT_MAX 4096          /* key id, principals, option values */

enum { SSHCERT_USER = 1, SSHCERT_HOST = 2 };

const char sshcert_usage[] =
	"Usage: sigil ssh-cert --ca LABEL -I ID -n PRINCIPALS [-V VALIDITY] [--host]\n"
	"                      [-O OPTION]... [-z SERIAL] [-o OUT] KEY.pub\n"
	"Sign an OpenSSH certificate for the public key KEY.pub with the Ed25519 key LABEL\n"
	"as the certificate authority (as ssh-keygen -s, but the CA key stays in sigild);\n"
	"writes KEY-cert.pub. Trust the CA with `sigil pubkey LABEL` in sshd's\n"
	"TrustedUserCAKeys (user certificates) or a known_hosts @cert-authority line (host).\n"
	"  -k, --ca LABEL        the CA key (ed25519) in sigild\n"
	"  -I, --id ID           the key identity (logged by sshd)\n"
	"  -n, --principals P    comma-separated user names (host names with --host); required\n"
	"  -V, --validity V      +52w, FROM:TO (always, forever, [+-]1d2h, YYYYMMDD[HHMM[SS]][Z],\n"
	"                        0xHEX), default always:forever; a single time means from now\n"
	"      --host            a host certificate (default: a user certificate)\n"
	"  -O, --option OPTION   user certificates, as ssh-keygen -O: clear, force-command=CMD,\n"
	"                        source-address=CIDRS, verify-required, no-touch-required,\n"
	"                        no-/permit-X11-forwarding, -agent-forwarding, -port-forwarding,\n"
	"                        -pty, -user-rc, critical:NAME[=VALUE], extension:NAME[=VALUE]\n"
	"  -z, --serial N        serial number (default 0)\n"
	"  -o, --output FILE     where to write (default KEY-cert.pub; - for stdout)\n";

/* ---- a growing buffer of SSH wire data ---- */

typedef struct Wire {
	uint8_t *p;
	size_t len, cap;
	bool oom;
} Wire;

static void wire_put(Wire *w, const void *d, size_t n)
{
	if (w->oom)
		return;
	if (n > w->cap - w->len) {
		size_t cap = w->cap ? w->cap : 256;
		uint8_t *p;

		while (cap - w->len < n) {
			if (cap > SIZE_MAX / 2) {
				w->oom = true;
				return;
			}
			cap *= 2;
		}
		p = realloc(w->p, cap);
		if (!p) {
			w->oom = true;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	if (n)
		memcpy(w->p + w->len, d, n);
	w->len += n;
}

static void wire_put_u32(Wire *w, uint32_t v)
{
	uint8_t b[4] = { (uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v };

	wire_put(w, b, 4);
}

static void wire_put_u64(Wire *w, uint64_t v)
{
	wire_put_u32(w, (uint32_t)(v >> 32));
	wire_put_u32(w, (uint32_t)v);
}

static void wire_put_string(Wire *w, const void *d, size_t n)
{
	if (n > UINT32_MAX) {
		w->oom = true;
		return;
	}
	wire_put_u32(w, (uint32_t)n);
	wire_put(w, d, n);
}

static void wire_put_cstring(Wire *w, const char *s)
{
	wire_put_string(w, s, strlen(s));
}

/* ---- the subject's public key file ---- */

/* the certificate type of each key type OpenSSH certifies */
static const struct {
	const char *key, *cert;
} sshcert_types[] = {
	{ "ssh-ed25519", "ssh-ed25519-cert-v01@openssh.com" },
	{ "ssh-rsa", "ssh-rsa-cert-v01@openssh.com" },
	{ "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp256-cert-v01@openssh.com" },
	{ "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp384-cert-v01@openssh.com" },
	{ "ecdsa-sha2-nistp521", "ecdsa-sha2-nistp521-cert-v01@openssh.com" },
	{ "sk-ssh-ed25519@openssh.com", "sk-ssh-ed25519-cert-v01@openssh.com" },
	{ "sk-ecdsa-sha2-nistp256@openssh.com", "sk-ecdsa-sha2-nistp256-cert-v01@openssh.com" },
};

typedef struct Subject {
	const char *cert_type;
	uint8_t *blob;        /* the public key blob */
	size_t blob_len;
	size_t fields;        /* offset of the key's fields (after the type string) */
	char comment[1024];
} Subject;

static int read_small_file(const char *path, char **textp, const char **whyp)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;
	size_t len = 0;

	if (fd < 0) {
		*whyp = strerror(errno);
		return -1;
	}
	buf = malloc(SSHCERT_PUB_MAX + 1);
	if (!buf) {
		close(fd);
		*whyp = "out of memory";
		return -1;
	}
	for (;;) {
		ssize_t n = read(fd, buf + len, SSHCERT_PUB_MAX + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*whyp = strerror(errno);
			goto bad;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > SSHCERT_PUB_MAX) {
			*whyp = "too large for a public key file";
			goto bad;
		}
	}
	close(fd);
	buf[len] = '\0';
	*textp = buf;
	return 0;
bad:
	close(fd);
	free(buf);
	return -1;
}

/* "TYPE BASE64 [COMMENT]": the first line that is not blank or a comment */
static int subject_parse(Subject *s, const char *text, const char **whyp)
{
	const char *line = text, *p, *b64, *b64_end, *c;
	size_t type_len, n;

	for (;;) {
		while (*line == ' ' || *line == '\t' || *line == '\r' || *line == '\n')
			line++;
		if (*line != '#')
			break;
		line += strcspn(line, "\n");
	}
	if (!*line) {
		*whyp = "no public key in the file";
		return -1;
	}
	type_len = strcspn(line, " \t\r\n");
	s->cert_type = NULL;
	for (size_t i = 0; i < sizeof(sshcert_types) / sizeof(sshcert_types[0]); i++)
		if (strlen(sshcert_types[i].key) == type_len && memcmp(sshcert_types[i].key, line, type_len) == 0)
			s->cert_type = sshcert_types[i].cert;
	if (!s->cert_type) {
		*whyp = strstr(line, "-cert-v01@openssh.com") && strstr(line, "-cert-v01@openssh.com") < line + type_len
			? "that is a certificate already: give the plain public key"
			: "not an OpenSSH public key type that can be certified";
		return -1;
	}
	p = line + type_len;
	while (*p == ' ' || *p == '\t')
		p++;
	b64 = p;
	b64_end = b64 + strcspn(b64, " \t\r\n");
	if (b64_end == b64) {
		*whyp = "no key data after the key type";
		return -1;
	}
	s->blob = malloc((size_t)(b64_end - b64));
	if (!s->blob || format_b64_decode(s->blob, (size_t)(b64_end - b64), &s->blob_len, b64,
	                                  (size_t)(b64_end - b64)) < 0) {
		*whyp = "the key data is not base64";
		return -1;
	}
	/* the blob must start with the same type name */
	if (s->blob_len < 4) {
		*whyp = "the key data is truncated";
		return -1;
	}
	n = ((size_t)s->blob[0] << 24) | ((size_t)s->blob[1] << 16) | ((size_t)s->blob[2] << 8) | s->blob[3];
	if (n != type_len || s->blob_len - 4 < n || memcmp(s->blob + 4, line, type_len) != 0) {
		*whyp = "the key data's type is not the key type of the line";
		return -1;
	}
	s->fields = 4 + n;
	if (s->fields == s->blob_len) {
		*whyp = "the key data has no key";
		return -1;
	}
	c = b64_end;
	while (*c == ' ' || *c == '\t')
		c++;
	n = strcspn(c, "\r\n");
	while (n && (c[n - 1] == ' ' || c[n - 1] == '\t'))
		n--;
	if (n >= sizeof(s->comment))
		n = sizeof(s->comment) - 1;
	memcpy(s->comment, c, n);
	s->comment[n] = '\0';
	return 0;
}

/* ---- validity ---- */

/* ssh's time format: 90, 30s, 10m, 2h, 1d, 1w, and sums like 1w2d (seconds) */
static int parse_duration(const char *s, int64_t *secp)
{
	int64_t total = 0;

	if (!*s)
		return -1;
	while (*s) {
		char *end;
		long long v;
		int64_t mul;

		if (*s < '0' || *s > '9')
			return -1;
		errno = 0;
		v = strtoll(s, &end, 10);
		if (errno || v < 0)
			return -1;
		switch (*end) {
		case '\0':
			mul = 1;
			break;
		case 's': case 'S': mul = 1; end++; break;
		case 'm': case 'M': mul = 60; end++; break;
		case 'h': case 'H': mul = 3600; end++; break;
		case 'd': case 'D': mul = 86400; end++; break;
		case 'w': case 'W': mul = 604800; end++; break;
		default:
			return -1;
		}
		if (v > (INT64_MAX - total) / mul)
			return -1;
		total += v * mul;
		s = end;
	}
	*secp = total;
	return 0;
}

/* YYYYMMDD, YYYYMMDDHHMM or YYYYMMDDHHMMSS, then an optional Z (UTC) */
static int parse_absolute(const char *s, uint64_t *tp)
{
	size_t n = strlen(s);
	bool utc = n && (s[n - 1] == 'Z' || s[n - 1] == 'z');
	struct tm tm = { 0 };
	int v[6] = { 0, 0, 0, 0, 0, 0 };
	time_t t;

	if (utc)
		n--;
	if (n != 8 && n != 12 && n != 14)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return -1;
	v[0] = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
	for (size_t i = 1; i < n / 2 - 1; i++)
		v[i] = (s[2 + 2 * i] - '0') * 10 + (s[3 + 2 * i] - '0');
	if (v[1] < 1 || v[1] > 12 || v[2] < 1 || v[2] > 31 || v[3] > 23 || v[4] > 59 || v[5] > 60)
		return -1;
	tm.tm_year = v[0] - 1900;
	tm.tm_mon = v[1] - 1;
	tm.tm_mday = v[2];
	tm.tm_hour = v[3];
	tm.tm_min = v[4];
	tm.tm_sec = v[5];
	tm.tm_isdst = -1;
	t = utc ? timegm(&tm) : mktime(&tm);
	if (t == (time_t)-1 || t < 0)
		return -1;
	*tp = (uint64_t)t;
	return 0;
}

static int parse_time(const char *s, int64_t now, bool from, uint64_t *tp)
{
	int64_t d;

	if (*s == '+' || *s == '-') {
		if (parse_duration(s + 1, &d) < 0)
			return -1;
		if (*s == '+')
			*tp = d > INT64_MAX - now ? UINT64_MAX : (uint64_t)(now + d);
		else
			*tp = d > now ? 0 : (uint64_t)(now - d);
		return 0;
	}
	if (strcmp(s, from ? "always" : "forever") == 0) {
		*tp = from ? 0 : UINT64_MAX;
		return 0;
	}
	if (strncmp(s, "0x", 2) == 0) {
		char *end;
		unsigned long long v;

		if (!s[2])
			return -1;
		errno = 0;
		v = strtoull(s + 2, &end, 16);
		if (errno || *end || s[2] == '-' || s[2] == '+')
			return -1;
		*tp = v;
		return 0;
	}
	return parse_absolute(s, tp);
}

int sshcert_parse_validity(const char *spec, int64_t now, uint64_t *fromp, uint64_t *top)
{
	char buf[128], *colon;
	uint64_t from, to;

	if (strlen(spec) >= sizeof(buf))
		return -1;
	snprintf(buf, sizeof(buf), "%s", spec);
	colon = strchr(buf, ':');
	if (!colon) {
		/* one time: valid from now (a minute early for skewed clocks when
		 * relative, as ssh-keygen) until then */
		if (strcmp(buf, "always") == 0 || parse_time(buf, now, false, &to) < 0)
			return -1;
		from = buf[0] == '+' ? (uint64_t)((now - 59) / 60 * 60) : (uint64_t)now;
	} else {
		*colon = '\0';
		if (!buf[0] || !colon[1] || parse_time(buf, now, true, &from) < 0 ||
		    parse_time(colon + 1, now, false, &to) < 0)
			return -1;
	}
	if (to <= from)
		return -1;
	*fromp = from;
	*top = to;
	return 0;
}

/* ---- options ---- */

enum {
	FLAG_X11 = 1 << 0,
	FLAG_AGENT = 1 << 1,
	FLAG_PORT = 1 << 2,
	FLAG_PTY = 1 << 3,
	FLAG_USER_RC = 1 << 4,
	FLAG_DEFAULT = FLAG_X11 | FLAG_AGENT | FLAG_PORT | FLAG_PTY | FLAG_USER_RC,
};

/* the extensions ssh-keygen grants by default, and -O no-X / permit-X */
static const struct {
	const char *ext; /* "permit-" and the name of the -O flag */
	unsigned flag;
} sshcert_flags[] = {
	{ "permit-X11-forwarding", FLAG_X11 },
	{ "permit-agent-forwarding", FLAG_AGENT },
	{ "permit-port-forwarding", FLAG_PORT },
	{ "permit-pty", FLAG_PTY },
	{ "permit-user-rc", FLAG_USER_RC },
};

typedef struct CertOpt {
	char *name;
	char *value;   /* NULL: a flag (empty data) */
	bool critical;
} CertOpt;

typedef struct CertOpts {
	unsigned flags;
	CertOpt opt[SSHCERT_MAX_OPTS];
	size_t n;
} CertOpts;

static int opts_set(CertOpts *o, const char *name, size_t name_len, const char *value, bool critical)
{
	for (size_t i = 0; i < o->n; i++) {
		if (strlen(o->opt[i].name) == name_len && memcmp(o->opt[i].name, name, name_len) == 0 &&
		    o->opt[i].critical == critical) {
			/* as ssh-keygen: a second value replaces the first */
			free(o->opt[i].value);
			o->opt[i].value = value ? strdup(value) : NULL;
			return value && !o->opt[i].value ? -1 : 0;
		}
	}
	if (o->n == SSHCERT_MAX_OPTS)
		return -1;
	o->opt[o->n].name = strndup(name, name_len);
	o->opt[o->n].value = value ? strdup(value) : NULL;
	o->opt[o->n].critical = critical;
	if (!o->opt[o->n].name || (value && !o->opt[o->n].value))
		return -1;
	o->n++;
	return 0;
}

/* one -O argument. 0, or -1 with *whyp */
static int opts_add(CertOpts *o, const char *arg, const char **whyp)
{
	const char *eq, *name;
	bool crit;

	*whyp = "bad option";
	if (strlen(arg) > SSHCERT_TEXT_MAX) {
		*whyp = "option too long";
		return -1;
	}
	if (strcasecmp(arg, "clear") == 0) {
		o->flags = 0;
		return 0;
	}
	for (size_t i = 0; i < sizeof(sshcert_flags) / sizeof(sshcert_flags[0]); i++) {
		const char *name = sshcert_flags[i].ext + 7;

		if (strncasecmp(arg, "no-", 3) == 0 && strcasecmp(arg + 3, name) == 0) {
			o->flags &= ~sshcert_flags[i].flag;
			return 0;
		}
		if (strcasecmp(arg, sshcert_flags[i].ext) == 0) {
			o->flags |= sshcert_flags[i].flag;
			return 0;
		}
	}
	if (strncasecmp(arg, "force-command=", 14) == 0 && arg[14])
		return opts_set(o, "force-command", 13, arg + 14, true);
	if (strncasecmp(arg, "source-address=", 15) == 0 && arg[15])
		return opts_set(o, "source-address", 14, arg + 15, true);
	if (strcasecmp(arg, "verify-required") == 0)
		return opts_set(o, "verify-required", 15, NULL, true);
	if (strcasecmp(arg, "no-touch-required") == 0)
		return opts_set(o, "no-touch-required", 17, NULL, false);
	if (strncasecmp(arg, "critical:", 9) == 0) {
		crit = true;
		name = arg + 9;
	} else if (strncasecmp(arg, "extension:", 10) == 0) {
		crit = false;
		name = arg + 10;
	} else {
		*whyp = "unknown option";
		return -1;
	}
	eq = strchr(name, '=');
	if ((eq ? (size_t)(eq - name) : strlen(name)) == 0) {
		*whyp = "an option needs a name";
		return -1;
	}
	return opts_set(o, name, eq ? (size_t)(eq - name) : strlen(name), eq ? eq + 1 : NULL, crit);
}

static void opts_free(CertOpts *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->opt[i].name);
		free(o->opt[i].value);
	}
	o->n = 0;
}

static int opt_cmp(const void *a, const void *b)
{
	return strcmp(((const CertOpt *)a)->name, ((const CertOpt *)b)->name);
}

/* the critical options or extensions, sorted by name as the format wants:
 * name, then a string holding the value as a string (or empty for a flag) */
static void opts_put(Wire *w, CertOpts *o, bool critical)
{
	CertOpt list[SSHCERT_MAX_OPTS + 5];
	size_t n = 0;
	Wire body = { 0 };

	if (!critical)
		for (size_t i = 0; i < sizeof(sshcert_flags) / sizeof(sshcert_flags[0]); i++)
			if (o->flags & sshcert_flags[i].flag)
				list[n++] = (CertOpt){ (char *)sshcert_flags[i].ext, NULL, false };
	for (size_t i = 0; i < o->n; i++)
		if (o->opt[i].critical == critical) {
			bool dup = false;

			/* extension:permit-pty and the flag name the same extension */
			for (size_t j = 0; j < n; j++)
				dup |= strcmp(list[j].name, o->opt[i].name) == 0;
			if (!dup)
				list[n++] = o->opt[i];
		}
	qsort(list, n, sizeof(list[0]), opt_cmp);
	for (size_t i = 0; i < n; i++) {
		wire_put_cstring(&body, list[i].name);
		if (list[i].value) {
			Wire v = { 0 };

			wire_put_cstring(&v, list[i].value);
			wire_put_string(&body, v.p, v.len);
			body.oom |= v.oom;
			free(v.p);
		} else {
			wire_put_string(&body, NULL, 0);
		}
	}
	wire_put_string(w, body.p, body.len);
	w->oom |= body.oom;
	free(body.p);
}

/* ---- the command ---- */

/* KEY.pub -> KEY-cert.pub (ssh-keygen's name); another name gets -cert.pub */
static char *cert_path(const char *pub)
{
	size_t n = strlen(pub);
	char *out;

	if (n > 4 && strcmp(pub + n - 4, ".pub") == 0)
		n -= 4;
	if (asprintf(&out, "%.*s-cert.pub", (int)n, pub) < 0)
		return NULL;
	return out;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

enum { OPT_HOST = 0x200 };

int sshcert_run(const SshcertCli *cli, int argc, char **argv)
{
	const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, cli->opt_json },
		{ "timeout", required_argument, NULL, cli->opt_timeout },
		{ "help", no_argument, NULL, 'h' },
		{ "ca", required_argument, NULL, 'k' },
		{ "id", required_argument, NULL, 'I' },
		{ "principals", required_argument, NULL, 'n' },
		{ "validity", required_argument, NULL, 'V' },
		{ "host", no_argument, NULL, OPT_HOST },
		{ "option", required_argument, NULL, 'O' },
		{ "serial", required_argument, NULL, 'z' },
		{ "output", required_argument, NULL, 'o' },
		{ 0 },
	};
	const char *ca = NULL, *id = NULL, *principals = NULL, *validity = NULL, *out = NULL, *why;
	CertOpts copts = { .flags = FLAG_DEFAULT };
	bool host = false, any_opt = false;
	uint64_t serial = 0, from = 0, to = UINT64_MAX;
	Subject subj = { 0 };
	Wire w = { 0 }, sigblob = { 0 }, pw = { 0 };
	char *text = NULL, *outpath = NULL, *b64 = NULL, *line = NULL;
	uint8_t nonce[32], sig[64];
	sigil_client *cl = NULL;
	sigil_key_info k;
	sigil_error e;
	int c, ex = 0;

	while ((c = getopt_long(argc, argv, "s:hk:I:n:V:O:z:o:", lo, NULL)) != -1) {
		if (cli->common_opt(c, &ex) < 0)
			goto done;
		switch (c) {
		case 'k': ca = optarg; break;
		case 'I': id = optarg; break;
		case 'n': principals = optarg; break;
		case 'V': validity = optarg; break;
		case 'o': out = optarg; break;
		case OPT_HOST: host = true; break;
		case 'O':
			any_opt = true;
			if (opts_add(&copts, optarg, &why) < 0) {
				ex = cli->usage_error("bad -O %s: %s", optarg, why);
				goto done;
			}
			break;
		case 'z': {
			char *end;

			errno = 0;
			serial = strtoull(optarg, &end, 10);
			if (errno || *end || !*optarg || *optarg == '-') {
				ex = cli->usage_error("bad --serial: %s", optarg);
				goto done;
			}
			break;
		}
		default:
			break;
		}
	}
	if (argc - optind != 1) {
		ex = cli->usage_error("ssh-cert takes one KEY.pub");
		goto done;
	}
	if (!ca || !id || !principals) {
		ex = cli->usage_error("ssh-cert needs --ca LABEL, -I ID and -n PRINCIPALS");
		goto done;
	}
	if (strlen(id) > SSHCERT_TEXT_MAX || !text_ok(id)) {
		ex = cli->usage_error("bad -I: at most %d printable characters", SSHCERT_TEXT_MAX);
		goto done;
	}
	if (strlen(principals) > SSHCERT_TEXT_MAX || !text_ok(principals) || !*principals) {
		ex = cli->usage_error("bad -n: comma-separated names");
		goto done;
	}
	if (*cli->json && out && strcmp(out, "-") == 0) {
		ex = cli->usage_error("--json and -o - would both write to stdout");
		goto done;
	}
	if (host && any_opt) {
		ex = cli->usage_error("-O applies to user certificates only");
		goto done;
	}
	if (validity && sshcert_parse_validity(validity, (int64_t)time(NULL), &from, &to) < 0) {
		ex = cli->usage_error("bad -V: %s (e.g. +52w, always:forever, 20260101:20270101, -1d:+4w)", validity);
		goto done;
	}
	if (read_small_file(argv[optind], &text, &why) < 0 || subject_parse(&subj, text, &why) < 0) {
		cli->err("%s: %s", argv[optind], why);
		ex = 2;
		goto done;
	}
	outpath = out ? strdup(out) : cert_path(argv[optind]);
	if (!outpath) {
		cli->err("out of memory");
		ex = 2;
		goto done;
	}

	if ((ex = cli->open_client(&cl)))
		goto done;
	e = sigil_client_key_public(cl, &k, ca);
	if (e) {
		ex = cli->fail(cl, e, "ssh-cert");
		goto done;
	}
	if (k.type != SIGIL_KEY_ED25519) {
		cli->err("%s is not an ed25519 key: it cannot sign certificates", k.label);
		ex = 2;
		goto done;
	}

	/* the certificate body */
	randombytes_buf(nonce, sizeof(nonce));
	wire_put_cstring(&w, subj.cert_type);
	wire_put_string(&w, nonce, sizeof(nonce));
	wire_put(&w, subj.blob + subj.fields, subj.blob_len - subj.fields);
	wire_put_u64(&w, serial);
	wire_put_u32(&w, host ? SSHCERT_HOST : SSHCERT_USER);
	wire_put_cstring(&w, id);
	for (const char *p = principals; *p;) {
		size_t n = strcspn(p, ",");

		if (n == 0) {
			ex = cli->usage_error("bad -n: an empty name");
			goto done;
		}
		wire_put_string(&pw, p, n);
		p += n;
		if (*p == ',')
			p++;
	}
	wire_put_string(&w, pw.p, pw.len);
	w.oom |= pw.oom;
	wire_put_u64(&w, from);
	wire_put_u64(&w, to);
	if (host)
		copts.flags = 0;
	opts_put(&w, &copts, true);
	opts_put(&w, &copts, false);
	wire_put_string(&w, NULL, 0); /* reserved */
	{
		Wire ca_blob = { 0 };

		wire_put_cstring(&ca_blob, "ssh-ed25519");
		wire_put_string(&ca_blob, k.public_key, 32);
		wire_put_string(&w, ca_blob.p, ca_blob.len);
		w.oom |= ca_blob.oom;
		free(ca_blob.p);
	}
	if (w.oom) {
		cli->err("out of memory");
		ex = 2;
		goto done;
	}
	e = sigil_client_sign(cl, sig, ca, SIGIL_SIGN_PURE, w.p, w.len, NULL, 0);
	if (e) {
		ex = cli->fail(cl, e, "ssh-cert");
		goto done;
	}
	/* a wrong signature must not leave as a certificate: check it here */
	if (crypto_sign_ed25519_verify_detached(sig, w.p, w.len, k.public_key) != 0) {
		cli->err("sigild's signature does not verify with %s's public key", k.label);
		ex = 4;
		goto done;
	}
	wire_put_cstring(&sigblob, "ssh-ed25519");
	wire_put_string(&sigblob, sig, 64);
	wire_put_string(&w, sigblob.p, sigblob.len);
	w.oom |= sigblob.oom;
	b64 = w.oom ? NULL : malloc(format_b64_len(w.len) + 1);
	if (!b64) {
		cli->err("out of memory");
		ex = 2;
		goto done;
	}
	format_b64_encode(b64, w.p, w.len);
	if (asprintf(&line, "%s %s%s%s\n", subj.cert_type, b64, subj.comment[0] ? " " : "", subj.comment) < 0) {
		line = NULL;
		cli->err("out of memory");
		ex = 2;
		goto done;
	}
	if (cli->write_out(outpath, line, strlen(line)) < 0) {
		cli->err("cannot write %s: %s", outpath, strerror(errno));
		ex = 2;
		goto done;
	}
	if (*cli->json) {
		cli->json_open();
		fputs("\"certificate\":", stdout);
		cli->json_str(outpath);
		fputs(",\"type\":", stdout);
		cli->json_str(subj.cert_type);
		fputs(",\"id\":", stdout);
		cli->json_str(id);
		printf(",\"serial\":%llu,\"valid_after\":%llu,\"valid_before\":%llu}\n", (unsigned long long)serial,
		       (unsigned long long)from, (unsigned long long)to);
	} else if (strcmp(outpath, "-") != 0)
		fprintf(stderr, "Signed %s certificate %s: id \"%s\" serial %llu for %s with CA %s\n",
		        host ? "host" : "user", outpath, id, (unsigned long long)serial, principals, k.label);
done:
	sigil_client_free(cl);
	opts_free(&copts);
	free(subj.blob);
	free(text);
	free(outpath);
	free(w.p);
	free(pw.p);
	free(sigblob.p);
	free(b64);
	free(line);
	return ex;
}
