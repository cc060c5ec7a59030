/* SPDX-License-Identifier: MIT */
/*
 * plugin.c - age-plugin-sigil's identity-v1 state machine (plugin.h)
 *
 * age sends every stanza of the file's header to every plugin identity.
 * X25519 stanzas do not name their recipient: each is tried with each
 * sigil identity (age.unwrap); sigild answers no_match for one made for
 * another key, having learnt only that, and the plugin says nothing about
 * that file (age then reports "no identity matched any of the
 * recipients"). Errors follow the spec: a malformed identity is an
 * "error identity" and nothing is unwrapped; a malformed X25519 stanza (or
 * one with a small-order share) an "error stanza" and nothing of that file
 * is unwrapped; a key sigild refuses (denied, locked, not_found,
 * wrong_type) an "error identity"; sigild unreachable an "error internal".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "agefile.h"
#include "bech32.h"
#include "plugin.h"

#define HRP "age-plugin-sigil-"

void plugin_deinit(Plugin *p)
{
	if (p->stanzas) {
		sodium_memzero(p->stanzas, p->n_stanzas * sizeof(*p->stanzas));
		free(p->stanzas);
	}
	*p = (Plugin)PLUGIN_NULL(*p);
}

static void add_identity(Plugin *p, const AgeStanza *s)
{
	PluginIdentity *id;
	char hrp[BECH32_HRP_MAX + 1];
	uint8_t data[SIGIL_CLIENT_LABEL_MAX + 1];
	size_t n = 0;

	if (p->n_ids == PLUGIN_IDENTITIES_MAX) {
		p->internal = "too many identities";
		return;
	}
	id = &p->ids[p->n_ids++];
	memset(id, 0, sizeof(*id));
	if (s->n_args != 2 || bech32_decode(hrp, data, SIGIL_CLIENT_LABEL_MAX, &n, s->args[1], strlen(s->args[1])) ||
	    strcmp(hrp, HRP) || n == 0)
		return;
	/* a label: [A-Za-z0-9._@+-]{1,64} */
	for (size_t i = 0; i < n; i++)
		if (!((data[i] >= 'a' && data[i] <= 'z') || (data[i] >= 'A' && data[i] <= 'Z') ||
		      (data[i] >= '0' && data[i] <= '9') || strchr("._@+-", data[i])) || data[i] == 0)
			return;
	memcpy(id->label, data, n);
	id->label[n] = '\0';
	id->valid = true;
}

/* a FILE_INDEX: decimal digits, no sign, no leading zero */
static int parse_index(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s || (s[0] == '0' && s[1]))
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static void add_stanza(Plugin *p, const AgeStanza *s)
{
	PluginStanza *st, *grown;
	uint64_t file = 0;
	size_t shl = 0;

	if (s->n_args < 3 || parse_index(s->args[1], &file)) {
		p->internal = "malformed recipient-stanza command";
		return;
	}
	if (p->n_stanzas && file < p->stanzas[p->n_stanzas - 1].file) {
		p->internal = "file indices of recipient-stanza go down";
		return;
	}
	if (p->n_stanzas == PLUGIN_STANZAS_MAX) {
		p->internal = "too many stanzas";
		return;
	}
	/* no realloc: the array holds no secret, but stays simple to wipe */
	grown = calloc(p->n_stanzas + 1, sizeof(*grown));
	if (!grown) {
		p->internal = "out of memory";
		return;
	}
	if (p->n_stanzas)
		memcpy(grown, p->stanzas, p->n_stanzas * sizeof(*grown));
	free(p->stanzas);
	p->stanzas = grown;
	st = &p->stanzas[p->n_stanzas];
	st->file = file;
	st->index = p->n_stanzas && p->stanzas[p->n_stanzas - 1].file == file ? p->stanzas[p->n_stanzas - 1].index + 1 : 0;
	p->n_stanzas++;
	if (strcmp(s->args[2], "X25519") != 0)
		return; /* another type: ignored */
	st->x25519 = true;
	{
		uint8_t share[33];

		st->valid = s->n_args == 4 &&
		            agefile_b64_decode(share, sizeof(share), &shl, s->args[3], strlen(s->args[3])) == 0 &&
		            shl == 32 && s->body_len == 32;
		if (st->valid) {
			memcpy(st->share, share, 32);
			memcpy(st->body, s->body, 32);
		}
	}
}

int plugin_phase1_feed(Plugin *p, const uint8_t *in, size_t len, size_t *usedp)
{
	size_t pos = 0;
	int r = 0;

	while (!p->done) {
		AgeStanza s;
		size_t used = 0;

		r = agefile_stanza_parse(&s, in + pos, len - pos, &used);
		if (r == -EAGAIN) {
			r = 0;
			break;
		}
		if (r)
			break;
		pos += used;
		if (strcmp(s.args[0], "add-identity") == 0)
			add_identity(p, &s);
		else if (strcmp(s.args[0], "recipient-stanza") == 0)
			add_stanza(p, &s);
		else if (strcmp(s.args[0], "done") == 0)
			p->done = true;
		/* anything else: a command of a later version, or grease */
		agefile_stanza_deinit(&s);
	}
	*usedp = pos;
	if (r)
		return r;
	return p->done ? 1 : 0;
}

/* one command and age's answer; -1 when age is gone */
static int say(const PluginIpc *ipc, const char *const *args, size_t n, const char *msg)
{
	char cmd[64];

	if (ipc->send(ipc->ctx, args, n, (const uint8_t *)msg, msg ? strlen(msg) : 0) < 0)
		return -1;
	return ipc->recv(ipc->ctx, cmd, sizeof(cmd));
}

static int error_identity(const PluginIpc *ipc, size_t i, const char *msg)
{
	char idx[32];
	const char *args[3] = { "error", "identity", idx };

	snprintf(idx, sizeof(idx), "%zu", i);
	return say(ipc, args, 3, msg);
}

static int error_stanza(const PluginIpc *ipc, const PluginStanza *st, const char *msg)
{
	char f[32], s[32];
	const char *args[4] = { "error", "stanza", f, s };

	snprintf(f, sizeof(f), "%llu", (unsigned long long)st->file);
	snprintf(s, sizeof(s), "%zu", st->index);
	return say(ipc, args, 4, msg);
}

static int error_internal(const PluginIpc *ipc, const char *msg)
{
	const char *args[2] = { "error", "internal" };

	return say(ipc, args, 2, msg);
}

static int send_done(const PluginIpc *ipc)
{
	const char *args[1] = { "done" };

	return ipc->send(ipc->ctx, args, 1, NULL, 0);
}

/* the stanzas of one file: [*start, *end) */
static bool next_file(const Plugin *p, size_t *start, size_t *end)
{
	if (*end >= p->n_stanzas)
		return false;
	*start = *end;
	while (*end < p->n_stanzas && p->stanzas[*end].file == p->stanzas[*start].file)
		(*end)++;
	return true;
}

int plugin_phase2(Plugin *p, const PluginIpc *ipc, PluginConnect connect)
{
	sigil_client *cl = NULL;
	size_t start = 0, end = 0;
	bool bad_id = false;
	char msg[512];
	int r = 0;

	if (p->internal) {
		r = error_internal(ipc, p->internal);
		goto out;
	}
	/* unknown or invalid identities: report them all, unwrap nothing */
	for (size_t i = 0; i < p->n_ids && r == 0; i++) {
		if (!p->ids[i].valid) {
			bad_id = true;
			r = error_identity(ipc, i, "not an age-plugin-sigil identity (AGE-PLUGIN-SIGIL-1... of a key label)");
		}
	}
	if (bad_id || r)
		goto out;
	while (r == 0 && next_file(p, &start, &end)) {
		bool bad = false, found = false;

		/* a malformed X25519 stanza: report it, unwrap nothing of this file */
		for (size_t k = start; k < end && r == 0; k++) {
			if (p->stanzas[k].x25519 && !p->stanzas[k].valid) {
				bad = true;
				r = error_stanza(ipc, &p->stanzas[k],
				                 "malformed X25519 stanza (one 32-byte share, a 32-byte body)");
			}
		}
		for (size_t k = start; k < end && r == 0 && !bad && !found; k++) {
			PluginStanza *st = &p->stanzas[k];

			if (!st->x25519)
				continue;
			for (size_t i = 0; i < p->n_ids && r == 0 && !bad && !found; i++) {
				PluginIdentity *id = &p->ids[i];
				uint8_t fk[16];
				sigil_error e;

				if (id->dead)
					continue;
				if (!cl) {
					e = connect(&cl);
					if (e) {
						snprintf(msg, sizeof(msg), "cannot reach sigild: %s (%s)",
						         cl ? sigil_client_errmsg(cl) : "out of memory", sigil_client_strerror(e));
						sigil_client_free(cl);
						cl = NULL;
						r = error_internal(ipc, msg);
						goto out;
					}
				}
				e = sigil_client_age_unwrap(cl, fk, id->label, st->share, st->body);
				if (e == SIGIL_EOK) {
					char f[32];
					const char *args[2] = { "file-key", f };
					char cmd[64];

					snprintf(f, sizeof(f), "%llu", (unsigned long long)st->file);
					r = ipc->send(ipc->ctx, args, 2, fk, sizeof(fk));
					sodium_memzero(fk, sizeof(fk));
					if (r == 0)
						r = ipc->recv(ipc->ctx, cmd, sizeof(cmd));
					found = true;
				} else if (e == SIGIL_ENO_MATCH) {
					continue; /* made for another key */
				} else if (e == SIGIL_EINVALID_KEY) {
					bad = true;
					r = error_stanza(ipc, st, "the X25519 stanza's share has small order");
				} else if (e == SIGIL_EDENIED || e == SIGIL_ELOCKED || e == SIGIL_ENOT_FOUND ||
				           e == SIGIL_EWRONG_TYPE) {
					id->dead = true;
					snprintf(msg, sizeof(msg), "sigild refused key '%s': %s (%s)", id->label,
					         sigil_client_errmsg(cl), sigil_client_strerror(e));
					r = error_identity(ipc, i, msg);
				} else {
					snprintf(msg, sizeof(msg), "sigild: %s (%s)", sigil_client_errmsg(cl),
					         sigil_client_strerror(e));
					r = error_internal(ipc, msg);
					goto out;
				}
			}
		}
	}
out:
	sigil_client_free(cl);
	if (r)
		return -1;
	return send_done(ipc) < 0 ? -1 : 0;
}
