/* SPDX-License-Identifier: MIT */
/*
 * config.c - parse sigild's configuration file
 *
 * Format: one `key = value` per line; blank lines and lines starting with
 * # are ignored; an unknown key or a bad value is an error naming the line.
 * Lists (allow_uids, allow_gids) are separated by commas or spaces and hold
 * numbers or user/group names.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "fsafe.h"
#include "proto.h"

void config_init(Config *c)
{
	memset(c, 0, sizeof(*c));
	c->workers = 0;
	c->max_request_size = PROTO_DEFAULT_MAX_FRAME;
	c->max_inflight_per_conn = 4096;
	c->max_inflight_total = 65536;
	c->max_connections = 1000;
	c->idle_timeout_s = 30;
	c->shutdown_timeout_s = 10;
	c->busy_poll_us = 50;
	c->ssh_agent_persist = true;
}

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

static int parse_u64(const char *s, unsigned long long min, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

static int parse_id(const char *s, bool group, unsigned *out)
{
	unsigned long long v;

	if (!parse_u64(s, 0, (unsigned)-2, &v)) {
		*out = (unsigned)v;
		return 0;
	}
	if (group) {
		struct group *g = getgrnam(s);

		if (!g)
			return -1;
		*out = g->gr_gid;
	} else {
		struct passwd *p = getpwnam(s);

		if (!p)
			return -1;
		*out = p->pw_uid;
	}
	return 0;
}

static int parse_ids(char *v, bool group, unsigned *ids, size_t *np)
{
	size_t n = 0;

	for (char *tok = strtok(v, ", \t"); tok; tok = strtok(NULL, ", \t")) {
		if (n >= CONFIG_MAX_IDS || parse_id(tok, group, &ids[n]) < 0)
			return -1;
		n++;
	}
	*np = n;
	return 0;
}

int config_parse_auto_lock(const char *s, unsigned long long *msp)
{
	char *end;
	unsigned long long v;

	if (strcmp(s, "0") == 0) {
		*msp = 0;
		return 0;
	}
	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || v < 1 || v > 100000 || (*end && strcmp(end, "s") && strcmp(end, "m")))
		return -1;
	*msp = v * (strcmp(end, "s") == 0 ? 1000ULL : 60000ULL);
	return 0;
}

int config_load(Config *out, const char *path, char *errmsg, size_t errmsg_len)
{
	Config c = *out;
	FILE *f;
	char line[4096];
	unsigned lineno = 0;
	int fd, r;

	/* a regular file of ours or root's that group and others cannot
	 * write, not a symlink (fsafe.c) */
	r = fsafe_open(&fd, AT_FDCWD, path, O_RDONLY, 0, errmsg, errmsg_len);
	if (r)
		return r < 0 ? r : -EPERM;
	f = fdopen(fd, "r");
	if (!f) {
		r = -errno;
		snprintf(errmsg, errmsg_len, "cannot open %s: %s", path, strerror(errno));
		close(fd);
		return r;
	}
	while (fgets(line, sizeof(line), f)) {
		char *s, *eq, *k, *v;
		unsigned long long n;

		lineno++;
		s = trim(line);
		if (!*s || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			snprintf(errmsg, errmsg_len, "%s:%u: expected key = value", path, lineno);
			r = CONFIG_E_INVALID;
			break;
		}
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
#define NUM(name, field, lo, hi)                                                   \
	if (strcmp(k, name) == 0) {                                                \
		if (parse_u64(v, lo, hi, &n) < 0) {                               \
			snprintf(errmsg, errmsg_len, "%s:%u: %s must be a number from %llu to %llu", \
			         path, lineno, name, (unsigned long long)(lo), (unsigned long long)(hi)); \
			r = CONFIG_E_INVALID;                                      \
			break;                                                     \
		}                                                                  \
		c.field = n;                                                       \
		continue;                                                          \
	}
		NUM("workers", workers, 0, 1024)
		NUM("max_request_size", max_request_size, 64, 1ull << 32)
		NUM("max_inflight_per_conn", max_inflight_per_conn, 1, 1u << 20)
		NUM("max_inflight_total", max_inflight_total, 1, 1u << 24)
		NUM("max_connections", max_connections, 1, 1u << 20)
		NUM("max_connections_per_uid", max_connections_per_uid, 1, 1u << 20)
		NUM("idle_timeout_s", idle_timeout_s, 1, 86400)
		NUM("shutdown_timeout_s", shutdown_timeout_s, 1, 3600)
		NUM("busy_poll_us", busy_poll_us, 0, 1000)
		NUM("pwhash_ops", pwhash_ops, 1, 1000)
		NUM("pwhash_mem_kib", pwhash_mem_kib, 8, 4ull << 20)
#undef NUM
		if (strcmp(k, "allow_uids") == 0 || strcmp(k, "allow_gids") == 0 || strcmp(k, "admin_uids") == 0 ||
		    strcmp(k, "admin_gids") == 0) {
			bool group = k[6] == 'g', admin = k[1] == 'd';
			unsigned *ids = admin ? (group ? (unsigned *)c.admin_gids : (unsigned *)c.admin_uids)
			                      : (group ? (unsigned *)c.allow_gids : (unsigned *)c.allow_uids);
			size_t *n = admin ? (group ? &c.n_admin_gids : &c.n_admin_uids)
			                  : (group ? &c.n_allow_gids : &c.n_allow_uids);

			if (parse_ids(v, group, ids, n) < 0) {
				snprintf(errmsg, errmsg_len, "%s:%u: %s: unknown %s or more than %d entries",
				         path, lineno, k, group ? "group" : "user", CONFIG_MAX_IDS);
				r = CONFIG_E_INVALID;
				break;
			}
			continue;
		}
		if (strcmp(k, "passphrase") == 0 || strcmp(k, "ephemeral") == 0) {
			if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0) {
				snprintf(errmsg, errmsg_len, "%s:%u: %s must be yes or no", path, lineno, k);
				r = CONFIG_E_INVALID;
				break;
			}
			*(k[0] == 'p' ? &c.passphrase : &c.ephemeral) = v[0] == 'y';
			continue;
		}
		if (strcmp(k, "master_key_file") == 0 || strcmp(k, "audit_file") == 0) {
			char *dst = k[0] == 'm' ? c.master_key_file : c.audit_file;

			if (*v && (v[0] != '/' || strlen(v) >= sizeof(c.audit_file))) {
				snprintf(errmsg, errmsg_len, "%s:%u: %s must be an absolute path shorter than %zu bytes",
				         path, lineno, k, sizeof(c.audit_file));
				r = CONFIG_E_INVALID;
				break;
			}
			memcpy(dst, v, strlen(v) + 1);
			continue;
		}
		if (strcmp(k, "auto_lock") == 0) {
			int ms = config_parse_auto_lock(v, &c.auto_lock_ms);

			if (ms < 0) {
				snprintf(errmsg, errmsg_len, "%s:%u: auto_lock takes N minutes, Nm or Ns (1 to 100000), "
				         "or 0 (never)", path, lineno);
				r = CONFIG_E_INVALID;
				break;
			}
			continue;
		}
		if (strcmp(k, "ssh_agent_persist") == 0) {
			/* added for the ssh-agent (issue 7) */
			if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0) {
				snprintf(errmsg, errmsg_len, "%s:%u: ssh_agent_persist must be yes or no", path, lineno);
				r = CONFIG_E_INVALID;
				break;
			}
			c.ssh_agent_persist = v[0] == 'y';
			continue;
		}
		if (strcmp(k, "ssh_agent_upstream") == 0) {
			/* issue 21: the keys sigil does not hold come from this agent */
			if (*v && (v[0] != '/' || strlen(v) >= sizeof(c.ssh_agent_upstream))) {
				snprintf(errmsg, errmsg_len, "%s:%u: ssh_agent_upstream must be an absolute socket path "
				         "shorter than %zu bytes", path, lineno, sizeof(c.ssh_agent_upstream));
				r = CONFIG_E_INVALID;
				break;
			}
			memcpy(c.ssh_agent_upstream, v, strlen(v) + 1);
			continue;
		}
		if (strcmp(k, "ssh_agent_confirm_program") == 0) {
			/* added for the ssh-agent (issue 7) */
			if (*v && (v[0] != '/' || strlen(v) >= sizeof(c.ssh_agent_confirm_program))) {
				snprintf(errmsg, errmsg_len, "%s:%u: ssh_agent_confirm_program must be an absolute path "
				         "shorter than %zu bytes", path, lineno, sizeof(c.ssh_agent_confirm_program));
				r = CONFIG_E_INVALID;
				break;
			}
			memcpy(c.ssh_agent_confirm_program, v, strlen(v) + 1);
			continue;
		}
		if (strcmp(k, "socket_group") == 0) {
			unsigned gid;

			if (!*v) {
				c.has_socket_group = false;
				continue;
			}
			if (parse_id(v, true, &gid) < 0) {
				snprintf(errmsg, errmsg_len, "%s:%u: socket_group: unknown group '%s'", path, lineno, v);
				r = CONFIG_E_INVALID;
				break;
			}
			c.has_socket_group = true;
			c.socket_group = gid;
			continue;
		}
		snprintf(errmsg, errmsg_len, "%s:%u: unknown key '%s'", path, lineno, k);
		r = CONFIG_E_INVALID;
		break;
	}
	if (!r && ferror(f)) {
		snprintf(errmsg, errmsg_len, "cannot read %s", path);
		r = -EIO;
	}
	fclose(f);
	if (!r)
		*out = c;
	return r;
}
