/* SPDX-License-Identifier: MIT */
/*
 * config.h - sigild's configuration file: `key = value` lines, # comments
 */
#ifndef SIGIL_DAEMON_CONFIG_H
#define SIGIL_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define CONFIG_MAX_IDS 64

typedef struct Config {
	unsigned workers;               /* 0: number of CPUs */
	uid_t allow_uids[CONFIG_MAX_IDS];
	size_t n_allow_uids;
	gid_t allow_gids[CONFIG_MAX_IDS];
	size_t n_allow_gids;
	uid_t admin_uids[CONFIG_MAX_IDS]; /* admins besides root and our uid (lock, rekey, audit, any key's owner rights) */
	size_t n_admin_uids;
	gid_t admin_gids[CONFIG_MAX_IDS];
	size_t n_admin_gids;
	bool has_socket_group;
	gid_t socket_group;
	size_t max_request_size;        /* bytes */
	unsigned max_inflight_per_conn;
	unsigned max_inflight_total;
	unsigned max_connections;
	unsigned max_connections_per_uid; /* 0: max_connections / 4 (at least 1); admins have a reserve beyond */
	unsigned idle_timeout_s;        /* to finish a frame once started */
	unsigned shutdown_timeout_s;
	unsigned busy_poll_us;          /* server_run(); 0: never */
	char ssh_agent_confirm_program[256]; /* absolute path; empty: confirm constraints refused */
	bool ssh_agent_persist;         /* keys added through the agent get a key file */
	char ssh_agent_upstream[108];   /* another agent's socket for the keys sigil does not hold; empty: none */
	/* keys at rest (docs/security.md); the command line options of the
	 * same names win over these */
	char master_key_file[4096];     /* empty: none */
	bool passphrase;                /* seal under a passphrase (start locked) */
	bool ephemeral;                 /* keys in memory only */
	unsigned long long pwhash_ops;  /* 0: the default */
	unsigned long long pwhash_mem_kib; /* 0: the default */
	char audit_file[4096];          /* empty: none */
	unsigned long long auto_lock_ms; /* 0: never */
} Config;

enum {
	_CONFIG_E_SUCCESS,
	CONFIG_E_INVALID, /* a line could not be parsed; errmsg says which */
};

/* "N" (minutes), "Nm" or "Ns", 1 to 100000, or "0" (never) into
 * milliseconds. Return: 0 or -1 */
int config_parse_auto_lock(const char *s, unsigned long long *msp);

/* the defaults (docs/protocol.md, packaging/sigil.conf.example) */
void config_init(Config *c);

/**
 * config_load() - read a configuration file over the values in @c
 * @c:      filled in only on success
 * @path:   the file
 * @errmsg: on CONFIG_E_INVALID or a negative return, what went wrong
 *
 * Return: 0, CONFIG_E_INVALID, or negative errno if the file can't be read
 * (-EPERM: a symlink, not a regular file, of another uid or writable by
 * group or others: fsafe.c).
 */
int config_load(Config *c, const char *path, char *errmsg, size_t errmsg_len);

#endif /* SIGIL_DAEMON_CONFIG_H */
