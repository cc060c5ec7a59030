/* SPDX-License-Identifier: MIT */
/*
 * policy.c - per-key policy
 *
 * Key file form (big-endian), version 1:
 *   1 version (1), 1 ops, 8 expires, 8 max_signs, 4 rate,
 *   1 n_uids, 4 each, 1 n_gids, 4 each, 1 n_exes, then each: 2 length, path
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"

static void put(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

int policy_encode(uint8_t *out, size_t cap, const ProtoKeyPolicy *p)
{
	size_t n = 0, need;

	if (!p->set)
		return 0;
	need = 1 + 1 + 8 + 8 + 4 + 1 + 4 * p->n_uids + 1 + 4 * p->n_gids + 1;
	for (size_t i = 0; i < p->n_exes; i++)
		need += 2 + strlen(p->exes[i]);
	if (need > cap)
		return -ENOSPC;
	out[n++] = 1;
	out[n++] = (uint8_t)p->ops;
	put(out + n, (uint64_t)p->expires, 8), n += 8;
	put(out + n, p->max_signs, 8), n += 8;
	put(out + n, p->rate, 4), n += 4;
	out[n++] = (uint8_t)p->n_uids;
	for (size_t i = 0; i < p->n_uids; i++)
		put(out + n, p->uids[i], 4), n += 4;
	out[n++] = (uint8_t)p->n_gids;
	for (size_t i = 0; i < p->n_gids; i++)
		put(out + n, p->gids[i], 4), n += 4;
	out[n++] = (uint8_t)p->n_exes;
	for (size_t i = 0; i < p->n_exes; i++) {
		size_t l = strlen(p->exes[i]);

		put(out + n, l, 2), n += 2;
		memcpy(out + n, p->exes[i], l), n += l;
	}
	return (int)n;
}

int policy_decode(ProtoKeyPolicy *p, const uint8_t *in, size_t len)
{
	size_t n = 0;

	memset(p, 0, sizeof(*p));
	if (len == 0)
		return 0;
	if (len < 23 || in[0] != 1 || (in[1] & ~PROTO_OPS_ALL))
		return -EINVAL;
	p->set = true;
	p->ops = in[1];
	p->expires = (int64_t)get(in + 2, 8);
	p->max_signs = get(in + 10, 8);
	p->rate = (uint32_t)get(in + 18, 4);
	if (p->expires < 0)
		return -EINVAL;
	n = 22;
	p->n_uids = in[n++];
	if (p->n_uids > PROTO_POLICY_IDS_MAX || len < n + 4 * p->n_uids + 1)
		return -EINVAL;
	for (size_t i = 0; i < p->n_uids; i++)
		p->uids[i] = (uint32_t)get(in + n, 4), n += 4;
	p->n_gids = in[n++];
	if (p->n_gids > PROTO_POLICY_IDS_MAX || len < n + 4 * p->n_gids + 1)
		return -EINVAL;
	for (size_t i = 0; i < p->n_gids; i++)
		p->gids[i] = (uint32_t)get(in + n, 4), n += 4;
	p->n_exes = in[n++];
	if (p->n_exes > PROTO_POLICY_EXES_MAX)
		return -EINVAL;
	for (size_t i = 0; i < p->n_exes; i++) {
		size_t l;

		if (len < n + 2)
			return -EINVAL;
		l = (size_t)get(in + n, 2), n += 2;
		if (l < 2 || l >= PROTO_POLICY_EXE_MAX || len < n + l || in[n] != '/' || memchr(in + n, '\0', l))
			return -EINVAL;
		memcpy(p->exes[i], in + n, l);
		p->exes[i][l] = '\0';
		n += l;
	}
	return n == len ? 0 : -EINVAL;
}

/* the supplementary groups of pid include gid? (from /proc/PID/status) */
static bool pid_in_group(pid_t pid, uint32_t gid)
{
	char path[64], line[4096];
	bool found = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		char *p, *end;

		if (strncmp(line, "Groups:", 7) != 0)
			continue;
		for (p = line + 7;; p = end) {
			unsigned long g = strtoul(p, &end, 10);

			if (end == p)
				break;
			if (g == gid)
				found = true;
		}
		break;
	}
	fclose(f);
	return found;
}

uint64_t policy_reserve_block(uint64_t max_signs)
{
	uint64_t b = max_signs / 64;

	return b < 1 ? 1 : b;
}

bool policy_check(const ProtoKeyPolicy *p, const PolicyUse *use, unsigned op, const PolicyPeer *peer, int64_t now_s,
                  uint64_t now_ms, char *why, size_t why_len)
{
	if (!p->set)
		return true;
	/* (key.export, op 0, is not counted) */
	if (op && p->ops && !(p->ops & op)) {
		snprintf(why, why_len, "rule ops: the key allows only %s%s%s%s%s", p->ops & PROTO_OP_SIGN ? "sign" : "",
		         (p->ops & PROTO_OP_SIGN) && (p->ops & ~PROTO_OP_SIGN) ? ", " : "", p->ops & PROTO_OP_DH ? "dh" : "",
		         (p->ops & PROTO_OP_DH) && (p->ops & PROTO_OP_AGE_UNWRAP) ? ", " : "",
		         p->ops & PROTO_OP_AGE_UNWRAP ? "age-unwrap" : "");
		return false;
	}
	if (p->expires && now_s >= p->expires) {
		snprintf(why, why_len, "rule expires: the key expired at %lld (unix time)", (long long)p->expires);
		return false;
	}
	if (p->n_uids || p->n_gids) {
		bool ok = false;

		for (size_t i = 0; i < p->n_uids && !ok; i++)
			ok = p->uids[i] == (uint32_t)peer->uid;
		for (size_t i = 0; i < p->n_gids && !ok; i++)
			ok = p->gids[i] == (uint32_t)peer->gid || pid_in_group(peer->pid, p->gids[i]);
		if (!ok) {
			snprintf(why, why_len, "rule %s: uid %u gid %u may not use the key",
			         p->n_uids && p->n_gids ? "uids/gids" : p->n_uids ? "uids" : "gids",
			         (unsigned)peer->uid, (unsigned)peer->gid);
			return false;
		}
	}
	if (p->n_exes) {
		bool ok = false;

		/* the whole path (the peer's is never cut short: peer.c) */
		for (size_t i = 0; i < p->n_exes && !ok; i++)
			ok = strcmp(p->exes[i], peer->exe) == 0;
		if (!ok) {
			snprintf(why, why_len, "rule exes: executable %s may not use the key", peer->exe);
			return false;
		}
	}
	if (!op)
		return true;
	if (p->max_signs && use->signs >= p->max_signs) {
		snprintf(why, why_len, "rule max_signs: the key was used %llu times, its limit",
		         (unsigned long long)use->signs);
		return false;
	}
	if (p->rate && now_ms - use->window_ms < 60000 && use->window_count >= p->rate) {
		snprintf(why, why_len, "rule rate: more than %u operations a minute", p->rate);
		return false;
	}
	return true;
}

bool policy_charge(const ProtoKeyPolicy *p, PolicyUse *use, uint64_t now_ms, char *why, size_t why_len)
{
	if (!p->set)
		return true;
	if (p->max_signs && use->signs >= p->max_signs) {
		snprintf(why, why_len, "rule max_signs: the key was used %llu times, its limit",
		         (unsigned long long)use->signs);
		return false;
	}
	if (p->rate) {
		if (now_ms - use->window_ms >= 60000 || use->window_count == 0) {
			use->window_ms = now_ms;
			use->window_count = 0;
		}
		if (use->window_count >= p->rate) {
			snprintf(why, why_len, "rule rate: more than %u operations a minute", p->rate);
			return false;
		}
	}
	if (p->max_signs && use->persist && use->self == use && use->signs + 1 > use->reserved) {
		/* durable before the signature leaves: docs/security.md */
		uint64_t to = use->signs + policy_reserve_block(p->max_signs);
		int r;

		if (to > p->max_signs)
			to = p->max_signs;
		r = use->persist(use->ctx, use, to);
		if (r < 0) {
			snprintf(why, why_len, "rule max_signs: cannot record the use count (%s)", strerror(-r));
			return false;
		}
		use->reserved = to;
	}
	if (p->rate)
		use->window_count++;
	use->signs++;
	return true;
}
