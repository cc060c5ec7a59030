/* SPDX-License-Identifier: MIT */
/*
 * agent-restrict.c - destination constraints and session binds (pure)
 */
#include <stdlib.h>
#include <string.h>

#include <sigil/crypto.h>

#include "agent-cert.h"
#include "agent-msg.h"
#include "agent-restrict.h"

#define AGENT_MAX_DESTS 256
#define AGENT_MAX_HOP_KEYS 256

static void agent_hop_free(AgentHop *h)
{
	free(h->user);
	free(h->host);
	for (size_t i = 0; i < h->n_keys; i++)
		free(h->keys[i]);
	free(h->keys);
	free(h->key_lens);
}

AgentRestrict *agent_restrict_free(AgentRestrict *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->n_dests; i++) {
		agent_hop_free(&r->dests[i].from);
		agent_hop_free(&r->dests[i].to);
	}
	free(r->dests);
	free(r);
	return NULL;
}

static char *agent_strdup_or_null(const uint8_t *s, size_t n)
{
	if (n == 0 || memchr(s, '\0', n))
		return NULL;
	return strndup((const char *)s, n);
}

/* string user, string host, string reserved, (string key, bool is_ca)*; -1 if malformed */
static int agent_parse_hop(const uint8_t *p, size_t n, AgentHop *h)
{
	AgentIn in = { p, n, false };
	const uint8_t *user, *host;
	size_t ul, hl, rl;

	user = agent_get_string(&in, &ul);
	host = agent_get_string(&in, &hl);
	(void)agent_get_string(&in, &rl);
	if (in.bad || ul > 1024 || hl > 1024 || (ul && memchr(user, '\0', ul)) || (hl && memchr(host, '\0', hl)))
		return -1;
	if ((ul && !(h->user = agent_strdup_or_null(user, ul))) || (hl && !(h->host = agent_strdup_or_null(host, hl))))
		return -1;
	while (in.n > 0) {
		const uint8_t *k;
		size_t kl;
		uint8_t is_ca, *copy;

		k = agent_get_string(&in, &kl);
		is_ca = agent_get_u8(&in);
		if (in.bad || kl == 0 || is_ca > 1 || h->n_keys >= AGENT_MAX_HOP_KEYS)
			return -1;
		if (is_ca)
			continue; /* certificates are not supported: a CA never matches */
		if (!(h->n_keys & (h->n_keys + 1)) || h->n_keys == 0) {
			size_t cap = h->n_keys ? 2 * (h->n_keys + 1) : 4;
			uint8_t **keys = realloc(h->keys, cap * sizeof(*keys));
			size_t *lens;

			if (!keys)
				return -1;
			h->keys = keys;
			lens = realloc(h->key_lens, cap * sizeof(*lens));
			if (!lens)
				return -1;
			h->key_lens = lens;
		}
		copy = malloc(kl);
		if (!copy)
			return -1;
		memcpy(copy, k, kl);
		h->keys[h->n_keys] = copy;
		h->key_lens[h->n_keys++] = kl;
	}
	return 0;
}

/* the payload of the constraint: (string (string from, string to, string reserved))* */
AgentRestrict *agent_restrict_parse(const uint8_t *p, size_t n)
{
	AgentRestrict *r = calloc(1, sizeof(*r));
	AgentIn in = { p, n, false };

	if (!r)
		return NULL;
	while (in.n > 0) {
		const uint8_t *c, *from, *to;
		size_t cl, fl, tl, rl;
		AgentIn cin;
		AgentDest *d, *dests;

		c = agent_get_string(&in, &cl);
		if (in.bad || r->n_dests >= AGENT_MAX_DESTS)
			return agent_restrict_free(r);
		cin = (AgentIn){ c, cl, false };
		from = agent_get_string(&cin, &fl);
		to = agent_get_string(&cin, &tl);
		(void)agent_get_string(&cin, &rl);
		if (cin.bad || cin.n != 0)
			return agent_restrict_free(r);
		dests = realloc(r->dests, (r->n_dests + 1) * sizeof(*dests));
		if (!dests)
			return agent_restrict_free(r);
		r->dests = dests;
		d = &r->dests[r->n_dests++];
		memset(d, 0, sizeof(*d));
		if (agent_parse_hop(from, fl, &d->from) < 0 || agent_parse_hop(to, tl, &d->to) < 0)
			return agent_restrict_free(r);
		/* as OpenSSH: no user on the from-hop; a from-host needs keys and
		 * no from-host takes none; the to-hop needs a host and keys */
		if (d->from.user || (d->from.host && d->from.n_keys == 0) || (!d->from.host && d->from.n_keys) ||
		    !d->to.host || d->to.n_keys == 0)
			return agent_restrict_free(r);
	}
	if (r->n_dests == 0)
		return agent_restrict_free(r);
	return r;
}

static bool agent_hop_has_key(const AgentHop *h, const uint8_t pk[32])
{
	static const uint8_t prefix[] = { 0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5', '5', '1', '9', 0, 0, 0, 32 };

	for (size_t i = 0; i < h->n_keys; i++)
		if (h->key_lens[i] == sizeof(prefix) + 32 && memcmp(h->keys[i], prefix, sizeof(prefix)) == 0 &&
		    memcmp(h->keys[i] + sizeof(prefix), pk, 32) == 0)
			return true;
	return false;
}

/* glob with * and ? (OpenSSH match_pattern without lists) */
static bool agent_glob(const char *pat, const char *s)
{
	for (;;) {
		if (*pat == '\0')
			return *s == '\0';
		if (*pat == '*') {
			for (const char *t = s;; t++) {
				if (agent_glob(pat + 1, t))
					return true;
				if (*t == '\0')
					return false;
			}
		}
		if (*s == '\0' || (*pat != '?' && *pat != *s))
			return false;
		pat++;
		s++;
	}
}

/* may the key go from `from` (NULL: this machine) to `to` (NULL: anywhere) as user? */
static bool agent_dest_allows(const AgentRestrict *r, const uint8_t *from, const uint8_t *to, const char *user)
{
	for (size_t i = 0; i < r->n_dests; i++) {
		const AgentDest *d = &r->dests[i];

		if (from ? !d->from.host || !agent_hop_has_key(&d->from, from) : d->from.host != NULL)
			continue;
		if (to && !agent_hop_has_key(&d->to, to))
			continue;
		if (user && d->to.user && !agent_glob(d->to.user, user))
			continue;
		return true;
	}
	return false;
}

/* OpenSSH's identity_permitted(): may this connection use a key with these
 * constraints, for a signature as `user` (NULL: listing)? */
static bool agent_permitted(const AgentSession *c, const AgentRestrict *r, const char *user)
{
	if (!r || r->n_dests == 0)
		return true;
	if (!c)
		return false; /* no session at all (the main socket): never */
	if (c->bind_failed)
		return false;
	if (c->n_binds == 0)
		return true; /* local use */
	for (size_t i = 0; i < c->n_binds; i++) {
		const AgentBind *b = &c->binds[i];
		const uint8_t *from = i ? c->binds[i - 1].hostkey : NULL;
		const char *test_user = NULL;

		if (i == c->n_binds - 1) {
			test_user = user;
			if (b->forwarding && user)
				return false; /* signing on a forwarding hop */
		} else if (!b->forwarding) {
			return false; /* forwarding through a binding for authentication */
		}
		if (!agent_dest_allows(r, from, b->hostkey, test_user))
			return false;
	}
	/* listing through a forwarded agent: only keys usable beyond this host */
	if (!user && c->binds[c->n_binds - 1].forwarding &&
	    !agent_dest_allows(r, c->binds[c->n_binds - 1].hostkey, NULL, NULL))
		return false;
	return true;
}

/*
 * A userauth request as ssh signs it: string session id, byte 50, string
 * user, string "ssh-connection", string "publickey" or
 * "publickey-hostbound-v00@openssh.com", bool TRUE, string algorithm,
 * string key, [string host key]. Return: 0 (user NUL-terminated in
 * user_out, *hostkey_set if a host key was in it) or -1.
 */
static int agent_parse_userauth(const uint8_t *p, size_t n, const uint8_t pk[32], const uint8_t **sid,
                                size_t *sid_len, char user_out[256], uint8_t hostkey[32], bool *hostkey_set)
{
	AgentIn in = { p, n, false };
	const uint8_t *user, *svc, *meth, *alg, *key, *hk;
	size_t ul, sl, ml, al, kl, hl;
	uint8_t kpk[32];
	bool hostbound, is_cert;

	*sid = agent_get_string(&in, sid_len);
	if (agent_get_u8(&in) != 50)
		return -1;
	user = agent_get_string(&in, &ul);
	svc = agent_get_string(&in, &sl);
	meth = agent_get_string(&in, &ml);
	if (in.bad || ul == 0 || ul > 255 || memchr(user, '\0', ul) || !agent_string_is(svc, sl, "ssh-connection"))
		return -1;
	hostbound = agent_string_is(meth, ml, "publickey-hostbound-v00@openssh.com");
	if (!hostbound && !agent_string_is(meth, ml, "publickey"))
		return -1;
	if (agent_get_u8(&in) != 1)
		return -1;
	alg = agent_get_string(&in, &al);
	key = agent_get_string(&in, &kl);
	/* the key, or a certificate of it (ssh-add's -cert.pub) */
	if (in.bad || agent_cert_key_of(key, kl, kpk, &is_cert) < 0 ||
	    !agent_string_is(alg, al, is_cert ? AGENT_CERT_ED25519 : "ssh-ed25519") || memcmp(kpk, pk, 32) != 0)
		return -1;
	*hostkey_set = false;
	if (hostbound) {
		hk = agent_get_string(&in, &hl);
		if (in.bad || agent_parse_ed25519_blob(hk, hl, hostkey) < 0)
			return -1;
		*hostkey_set = true;
	}
	if (in.bad || in.n != 0)
		return -1;
	memcpy(user_out, user, ul);
	user_out[ul] = '\0';
	return 0;
}

int agent_session_bind(AgentSession *c, const uint8_t *p, size_t n)
{
	AgentIn in = { p, n, false };
	const uint8_t *hk, *sid, *sig;
	size_t hk_len, sid_len, sig_len;
	uint8_t pk[32], s[64];
	bool fwd;

	hk = agent_get_string(&in, &hk_len);
	sid = agent_get_string(&in, &sid_len);
	sig = agent_get_string(&in, &sig_len);
	fwd = agent_get_u8(&in) != 0;
	if (in.bad || in.n != 0 || sid_len == 0 || sid_len > sizeof(c->binds[0].sid) ||
	    agent_parse_ed25519_blob(hk, hk_len, pk) < 0 || agent_parse_ed25519_sig(sig, sig_len, s) < 0 ||
	    sigil_ed25519_verify(s, sid, sid_len, pk, SIGIL_ED25519_STRICT) != 0) {
		c->bind_failed = true;
		return -1;
	}
	/* as OpenSSH: nothing may be bound after a binding for authentication */
	if (c->n_binds >= AGENT_MAX_BINDS || (c->n_binds > 0 && !c->binds[c->n_binds - 1].forwarding)) {
		c->bind_failed = true;
		return -1;
	}
	memcpy(c->binds[c->n_binds].sid, sid, sid_len);
	c->binds[c->n_binds].sid_len = sid_len;
	memcpy(c->binds[c->n_binds].hostkey, pk, 32);
	c->binds[c->n_binds].forwarding = fwd;
	c->n_binds++;
	return 0;
}

bool agent_restrict_lists(const AgentSession *s, const AgentRestrict *r)
{
	return agent_permitted(s, r, NULL);
}

bool agent_restrict_signs(const AgentSession *s, const AgentRestrict *r, const uint8_t pk[32], const uint8_t *data,
                          size_t len)
{
	const AgentBind *last;
	const uint8_t *sid;
	size_t sid_len;
	char user[256];
	uint8_t hk[32];
	bool has_hk;

	if (!r || r->n_dests == 0)
		return true;
	last = s && s->n_binds ? &s->binds[s->n_binds - 1] : NULL;
	/* as OpenSSH: a destination-constrained key signs only a userauth
	 * request of the most recently bound session, for a permitted hop */
	if (!last || agent_parse_userauth(data, len, pk, &sid, &sid_len, user, hk, &has_hk) < 0 ||
	    !agent_permitted(s, r, user) || sid_len != last->sid_len || memcmp(sid, last->sid, sid_len) != 0 ||
	    (s->n_binds > 1 && !has_hk) || (has_hk && memcmp(hk, last->hostkey, 32) != 0))
		return false;
	return true;
}
