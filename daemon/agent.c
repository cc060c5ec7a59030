/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the ssh-agent socket: connections, framing, dispatch of
 * agent requests onto sigil's keystore, lifetimes and session binds
 *
 * Framing as OpenSSH: uint32 length, then the message; more than
 * AGENT_MAX_MSG bytes closes the connection. Anything not understood gets
 * SSH_AGENT_FAILURE and the connection lives on.
 *
 * Signatures run inline on the loop thread, as the main socket's (issue
 * 11, docs/throughput.md): a sign request is checked, signed, audited and
 * answered while its frame is handled. Only a key with the confirm
 * constraint (the confirm program runs as a child process, then the
 * signature on the worker pool) and ssh-add (file I/O) leave the loop
 * thread; the connection takes no further frame meanwhile, so answers stay
 * in request order (the protocol has no ids).
 *
 * Answers are appended to the connection's buffer and written by
 * agent_flush_all(), which conn_flush_all() calls after audit_flush(): an
 * answer never leaves before its audit line, and one write carries every
 * answer a connection got in that loop iteration. Fairness as conn.c's: a
 * connection runs at most AGENT_FRAMES_PER_TURN frames per turn (and takes
 * from the server's per-phase budget); the rest wait, with reading stopped,
 * for a turn from the agent's idle handle in the next loop iteration.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "agent-msg.h"
#include "agent.h"
#include "audit.h"
#include "keyfile.h"
#include "listener.h"
#include "log.h"
#include "policy.h"

#define AGENT_MAX_BINDS 16 /* session-bind@openssh.com per connection, as OpenSSH */
/* frames one agent connection may run per turn (as the main socket's) */
#define AGENT_FRAMES_PER_TURN CONN_FRAMES_PER_TURN

typedef struct AgentConn AgentConn;
typedef struct AgentTimer AgentTimer;

struct AgentTimer {
	uv_timer_t timer;
	Agent *agent;
	AgentTimer *next;
	char label[PROTO_LABEL_MAX + 1];
	uint8_t pk[32];
};

typedef struct AgentBind {
	uint8_t hostkey[32];
	uint8_t sid[64];
	size_t sid_len;
	bool forwarding;
} AgentBind;

/* restrict-destination-v00@openssh.com: one hop of a constraint. Host
 * keys are kept as public key blobs; only Ed25519 ones can ever match a
 * session bind (certificate authorities never do). */
typedef struct AgentHop {
	char *user;           /* NULL: any user */
	char *host;           /* NULL: the from-hop is this machine */
	uint8_t **keys;
	size_t *key_lens;
	size_t n_keys;
} AgentHop;

typedef struct AgentDest {
	AgentHop from, to;
} AgentDest;

/* the destination constraints of one key, by public key */
typedef struct AgentRestrict {
	struct AgentRestrict *next;
	uint8_t pk[32];
	AgentDest *dests;
	size_t n_dests;
	bool confirm;         /* ask ssh_agent_confirm_program before each use */
} AgentRestrict;

struct AgentConn {
	uv_pipe_t pipe;
	uv_timer_t idle;      /* a started message must complete in idle_timeout_s */
	Agent *agent;
	AgentConn *prev, *next;
	uint8_t *in;          /* bytes read, not yet handled (wiped as consumed) */
	size_t in_len, in_cap;
	unsigned n_refs;      /* the pipe, the idle timer, the job in flight, the dirty and resume lists */
	bool busy;            /* a job is on the worker pool, or the confirm program runs */
	size_t write_bytes;   /* answers not yet written: out.len + the write in progress
	                       * (back-pressure at CONN_WRITE_HIGH) */
	AgentOut out;         /* framed answers waiting for agent_flush_all() */
	struct AgentWrite *writing; /* the one uv_write in progress, or NULL */
	unsigned pending;     /* answers since the last flush (max_inflight_per_conn) */
	bool dirty;           /* on agent->dirty */
	bool resume;          /* on agent->resume_head, waiting for a turn */
	AgentConn *dirty_next, *resume_next;
	bool reading;
	bool closing;
	bool eof;             /* the client half-closed: answer its whole frames, then close */
	uid_t uid;
	gid_t gid;
	pid_t pid;
	char exe[PROTO_POLICY_EXE_MAX]; /* /proc/PID/exe at connect time (policy, audit) */
	AgentBind binds[AGENT_MAX_BINDS];
	size_t n_binds;
	bool bind_failed;     /* a session-bind was refused: constrained keys are off */
};

struct Agent {
	Server *server;
	uv_pipe_t listener;
	bool listening;
	bool closed;
	char *path;
	AgentConn *conns;
	unsigned n_conns;
	AgentTimer *timers;
	AgentRestrict *restricts;
	bool has_lock;        /* the agent's LOCK set server->locked with this passphrase */
	AgentConn *dirty;     /* connections with answers to write (each holds a ref) */
	AgentConn *resume_head, *resume_tail; /* waiting for a turn, oldest first (each holds a ref) */
	uv_idle_t resume;     /* runs them (agent_on_resume) */
	bool resume_init;
	uint8_t lock_salt[16];
	uint8_t lock_hash[32];
};

typedef enum JobKind { JOB_SIGN, JOB_ADD } JobKind;

typedef struct AgentJob {
	uv_work_t work;
	AgentConn *conn;
	JobKind kind;
	Key *key;
	uint8_t *msg;          /* sign: the data to sign */
	size_t msg_len;
	uint8_t sig[64];
	uint8_t seed[32];      /* add: the seed (wiped) */
	uint8_t pk[32];        /* add: the claimed public key */
	uint32_t lifetime;     /* add: seconds, 0 = none */
	AgentRestrict *restrict_;/* add: destination constraints, or NULL */
	int r;
} AgentJob;

static uint8_t agent_read_buf[64 * 1024];

static void agent_conn_process(AgentConn *c);
static void agent_restrict_set(Agent *a, const uint8_t pk[32], AgentRestrict *r);

/* ---- replies ------------------------------------------------------------ */

typedef struct AgentWrite {
	uv_write_t req;
	uint8_t *data;
	size_t len;
} AgentWrite;

static void agent_conn_close(AgentConn *c);
static void agent_conn_unref(AgentConn *c);

/* answers to write at the next flush (the list holds a reference) */
static void agent_mark_dirty(AgentConn *c)
{
	Agent *a = c->agent;

	if (c->dirty)
		return;
	c->dirty = true;
	c->n_refs++;
	c->dirty_next = a->dirty;
	a->dirty = c;
}

static void agent_on_resume(uv_idle_t *h);

/* to the end of the FIFO of connections waiting for a turn */
static void agent_wait_turn(AgentConn *c)
{
	Agent *a = c->agent;

	if (c->resume || !a->resume_init)
		return;
	c->resume = true;
	c->n_refs++;
	c->resume_next = NULL;
	if (a->resume_head)
		a->resume_tail->resume_next = c;
	else
		a->resume_head = c;
	a->resume_tail = c;
	uv_idle_start(&a->resume, agent_on_resume);
}

static void agent_on_write(uv_write_t *req, int status)
{
	AgentWrite *w = (AgentWrite *)req;
	AgentConn *c = req->handle->data;

	c->write_bytes -= w->len;
	c->writing = NULL;
	sigil_wipe(w->data, w->len);
	free(w->data);
	free(w);
	if (c->closing)
		return;
	if (status < 0) {
		agent_conn_close(c);
		return;
	}
	/* answers appended meanwhile go out with the next flush */
	if (c->out.len > 0)
		agent_mark_dirty(c);
	if (!c->reading && !c->busy && !c->resume && c->write_bytes < CONN_WRITE_LOW)
		agent_conn_process(c); /* a client that did not read has caught up */
}

/* hand the waiting answers to the socket: uv_try_write first, the rest to
 * one uv_write (one in progress at a time). Return: 0 or negative errno */
static int agent_conn_flush(AgentConn *c)
{
	AgentWrite *w;
	uv_buf_t buf;
	int r;

	if (c->writing || c->out.len == 0)
		return 0;
	buf = uv_buf_init((char *)c->out.data, (unsigned)c->out.len);
	r = uv_try_write((uv_stream_t *)&c->pipe, &buf, 1);
	if (r < 0 && r != UV_EAGAIN)
		return r;
	if (r > 0) {
		size_t n = (size_t)r;

		c->write_bytes -= n;
		memmove(c->out.data, c->out.data + n, c->out.len - n);
		sigil_wipe(c->out.data + (c->out.len - n), n);
		c->out.len -= n;
		if (c->out.len == 0)
			return 0;
	}
	w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->data = c->out.data;
	w->len = c->out.len;
	c->out = (AgentOut){ 0 };
	buf = uv_buf_init((char *)w->data, (unsigned)w->len);
	r = uv_write(&w->req, (uv_stream_t *)&c->pipe, &buf, 1, agent_on_write);
	if (r < 0) {
		c->write_bytes -= w->len;
		sigil_wipe(w->data, w->len);
		free(w->data);
		free(w);
		return r;
	}
	c->writing = w;
	return 0;
}

void agent_flush_all(Agent *a)
{
	AgentConn *list;

	if (!a)
		return;
	list = a->dirty;
	a->dirty = NULL;
	while (list) {
		AgentConn *c = list;
		int r;

		list = c->dirty_next;
		c->dirty_next = NULL;
		c->dirty = false;
		c->pending = 0;
		if (!c->closing) {
			r = agent_conn_flush(c);
			if (r < 0) {
				log_warn("ssh-agent: cannot write to uid %d pid %d (%s); closing the connection",
				         (int)c->uid, (int)c->pid, uv_strerror(r));
				agent_conn_close(c);
			} else if (!c->reading && !c->busy && c->write_bytes < CONN_WRITE_LOW) {
				/* stopped for its limits: it runs again in its turn
				 * (never from here, which may run inside a turn) */
				agent_wait_turn(c);
			}
		}
		agent_conn_unref(c);
	}
}

/* append o's bytes as one framed message (o is consumed); written by the
 * next agent_flush_all(), after the audit lines of this iteration */
static void agent_send(AgentConn *c, AgentOut *o)
{
	Server *s = c->agent->server;
	size_t n = o->len;

	if (c->closing || o->oom) {
		if (o->oom && !c->closing)
			agent_conn_close(c);
		agent_out_free(o);
		return;
	}
	/* the protocol's framing is a string's: a uint32 length, the bytes */
	agent_put_string(&c->out, o->data, n);
	agent_out_free(o);
	if (c->out.oom) {
		agent_conn_close(c);
		return;
	}
	c->write_bytes += n + 4;
	c->pending++;
	s->turn_requests++; /* answered, not yet written (admission, early flush: conn.c) */
	s->requests++;
	agent_mark_dirty(c);
}

static void agent_send_byte(AgentConn *c, uint8_t code)
{
	AgentOut o = { 0 };

	agent_put_u8(&o, code);
	agent_send(c, &o);
}

static void agent_fail(AgentConn *c)
{
	agent_send_byte(c, AGENT_FAILURE);
}

/* ---- keys ----------------------------------------------------------------- */

/* the keys the agent shows: committed Ed25519 keys */
static bool agent_key_visible(const Key *k)
{
	return !k->pending && !k->removed && k->info.type == PROTO_KEY_ED25519;
}

static Key *agent_find_pk(Agent *a, const uint8_t pk[32])
{
	Keystore *ks = &a->server->keystore;

	for (size_t i = 0; i < ks->n_keys; i++) {
		Key *k = ks->keys[i];

		/* public data: memcmp is fine */
		if (agent_key_visible(k) && memcmp(k->info.public_key, pk, 32) == 0)
			return k;
	}
	return NULL;
}

static void agent_audit(const AgentConn *c, const Key *k, const char *op, const char *result, const char *why)
{
	audit_event(c->uid, c->pid, c->exe, k ? k->info.label : NULL, k ? k->info.fingerprint : NULL, op, result, why);
}

/*
 * May this peer sign with k under the key's policy (docs/security.md)?
 * @count: count the use (a signature) or only look (listing).
 */
static bool agent_policy_ok(const AgentConn *c, Key *k, bool count, char *why, size_t why_len)
{
	PolicyPeer peer = { .uid = c->uid, .gid = c->gid, .pid = c->pid, .exe = c->exe };
	Server *s = c->agent->server;
	PolicyUse scratch = k->use;
	bool ok = policy_check(&k->policy, count ? &k->use : &scratch, PROTO_OP_SIGN, &peer, (int64_t)time(NULL),
	                       uv_now(s->loop), why, why_len);

	/* a signature allowed through this socket is a use of the keys like
	 * the main socket's: it postpones auto-lock (server.c) */
	if (ok && count)
		s->last_key_use_ms = uv_now(s->loop);
	return ok;
}

static void agent_timer_closed(uv_handle_t *h)
{
	free(h->data);
}

static void agent_timer_unlink(Agent *a, AgentTimer *t)
{
	for (AgentTimer **p = &a->timers; *p; p = &(*p)->next) {
		if (*p == t) {
			*p = t->next;
			break;
		}
	}
	uv_close((uv_handle_t *)&t->timer, agent_timer_closed);
}

/* drop the lifetime timer of a key (removed or re-added) */
static void agent_timer_cancel(Agent *a, const uint8_t pk[32])
{
	for (AgentTimer *t = a->timers, *next; t; t = next) {
		next = t->next;
		if (memcmp(t->pk, pk, 32) == 0)
			agent_timer_unlink(a, t);
	}
}

static void agent_on_lifetime(uv_timer_t *h)
{
	AgentTimer *t = h->data;
	Agent *a = t->agent;
	Key *k = keystore_find(&a->server->keystore, t->label);

	if (k && memcmp(k->info.public_key, t->pk, 32) == 0) {
		int r = keystore_delete(&a->server->keystore, t->label);

		if (r) {
			log_err("ssh-agent: cannot remove expired key '%s' (%d)", t->label, r);
		} else {
			agent_restrict_set(a, t->pk, NULL);
			log_info("ssh-agent: key '%s' expired (lifetime constraint)", t->label);
		}
	}
	agent_timer_unlink(a, t);
}

static int agent_timer_add(Agent *a, const char *label, const uint8_t pk[32], uint32_t seconds)
{
	AgentTimer *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	agent_timer_cancel(a, pk);
	t->agent = a;
	snprintf(t->label, sizeof(t->label), "%s", label);
	memcpy(t->pk, pk, 32);
	uv_timer_init(a->server->loop, &t->timer);
	t->timer.data = t;
	uv_timer_start(&t->timer, agent_on_lifetime, (uint64_t)seconds * 1000, 0);
	t->next = a->timers;
	a->timers = t;
	return 0;
}

static int agent_delete_key(Agent *a, Key *k)
{
	char label[PROTO_LABEL_MAX + 1];
	uint8_t pk[32];
	int r;

	memcpy(label, k->info.label, sizeof(label));
	memcpy(pk, k->info.public_key, 32);
	r = keystore_delete(&a->server->keystore, label);
	if (r) {
		log_err("ssh-agent: cannot delete key '%s' (%d)", label, r);
		return r;
	}
	agent_timer_cancel(a, pk);
	agent_restrict_set(a, pk, NULL);
	log_info("ssh-agent: deleted key '%s'", label);
	return 0;
}

/* ---- destination constraints (restrict-destination-v00@openssh.com) ---------- */

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

static AgentRestrict *agent_restrict_free(AgentRestrict *r)
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
static AgentRestrict *agent_parse_restrict(const uint8_t *p, size_t n)
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

static AgentRestrict **agent_restrict_slot(Agent *a, const uint8_t pk[32])
{
	AgentRestrict **p;

	for (p = &a->restricts; *p; p = &(*p)->next)
		if (memcmp((*p)->pk, pk, 32) == 0)
			break;
	return p;
}

static AgentRestrict *agent_restrict_find(Agent *a, const uint8_t pk[32])
{
	return *agent_restrict_slot(a, pk);
}

/* drop a key's constraints; then set r (NULL: none) */
static void agent_restrict_set(Agent *a, const uint8_t pk[32], AgentRestrict *r)
{
	AgentRestrict **p = agent_restrict_slot(a, pk), *old = *p;

	if (old) {
		*p = old->next;
		agent_restrict_free(old);
	}
	if (r) {
		memcpy(r->pk, pk, 32);
		r->next = a->restricts;
		a->restricts = r;
	}
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
static bool agent_permitted(const AgentConn *c, const AgentRestrict *r, const char *user)
{
	if (!r || r->n_dests == 0)
		return true;
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
	bool hostbound;

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
	if (in.bad || !agent_string_is(alg, al, "ssh-ed25519") || agent_parse_ed25519_blob(key, kl, kpk) < 0 ||
	    memcmp(kpk, pk, 32) != 0)
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

/* ---- jobs on the worker pool -------------------------------------------- */

static void agent_job_free(AgentJob *j)
{
	if (j->msg) {
		sigil_wipe(j->msg, j->msg_len);
		free(j->msg);
	}
	key_unref(j->key);
	agent_restrict_free(j->restrict_);
	sigil_wipe(j, sizeof(*j));
	free(j);
}

static void agent_conn_unref(AgentConn *c)
{
	if (--c->n_refs > 0)
		return;
	if (c->in) {
		sigil_wipe(c->in, c->in_cap);
		free(c->in);
	}
	agent_out_free(&c->out);
	free(c);
}

static void agent_job_run(uv_work_t *w)
{
	AgentJob *j = w->data;
	Server *s = j->conn->agent->server;

	if (j->kind == JOB_SIGN) {
		sigil_ed25519_sign_expanded(j->sig, j->msg, j->msg_len, &j->key->secret->ed);
		j->r = 0;
		return;
	}
	/* add: the seed must give the public key the client sent */
	{
		sigil_ed25519_expanded ek;

		sigil_ed25519_expand(&ek, j->seed);
		j->r = memcmp(ek.pk, j->pk, 32) == 0 ? 0 : -EINVAL;
		sigil_wipe(&ek, sizeof(ek));
	}
	if (j->r == 0)
		j->r = keystore_materialize(&s->keystore, j->key, j->seed);
	sigil_wipe(j->seed, sizeof(j->seed));
}

static void agent_job_done(uv_work_t *w, int status)
{
	AgentJob *j = w->data;
	AgentConn *c = j->conn;
	Agent *a = c->agent;
	Server *s = a->server;

	s->inflight--;
	c->busy = false;
	if (j->kind == JOB_SIGN) {
		agent_audit(c, j->key, "ssh-sign", status == 0 && j->r == 0 ? "ok" : "error", NULL);
		if (status == 0 && j->r == 0) {
			AgentOut o = { 0 };

			agent_put_u8(&o, AGENT_SIGN_RESPONSE);
			agent_put_u32(&o, 4 + 11 + 4 + 64);
			agent_put_cstring(&o, "ssh-ed25519");
			agent_put_string(&o, j->sig, 64);
			agent_send(c, &o);
		} else {
			agent_fail(c);
		}
	} else {
		if (status == 0 && j->r == 0) {
			bool memory_only = !s->config.ssh_agent_persist || j->lifetime || j->restrict_;
			int rr = 0;

			keystore_commit(&s->keystore, j->key);
			agent_restrict_set(a, j->pk, j->restrict_);
			j->restrict_ = NULL;
			/* memory-only: the key file goes at once (a constrained key must
			 * never come back without its constraints after a restart) */
			if (memory_only && s->keystore.dirfd >= 0) {
				rr = keyfile_remove(s->keystore.dirfd, j->key->info.label);
				if (rr == -ENOENT)
					rr = 0;
			}
			agent_audit(c, j->key, "ssh-add", "ok", memory_only ? "memory only" : NULL);
			log_info("ssh-agent: added key '%s' (%s) for uid %d%s", j->key->info.label,
			         j->key->info.fingerprint, (int)c->uid, memory_only ? ", in memory only" : "");
			if (rr < 0) {
				log_err("ssh-agent: cannot remove the key file of memory-only key '%s': %s",
				        j->key->info.label, strerror(-rr));
				agent_delete_key(a, j->key);
				agent_fail(c);
			} else if (j->lifetime && agent_timer_add(a, j->key->info.label, j->pk, j->lifetime) < 0) {
				/* a key that cannot expire must not stay */
				agent_delete_key(a, j->key);
				agent_fail(c);
			} else {
				agent_send_byte(c, AGENT_SUCCESS);
			}
		} else {
			if (j->r == -EINVAL)
				log_info("ssh-agent: refused a key whose private part does not match its public key");
			else
				log_err("ssh-agent: cannot store key '%s': %s", j->key->info.label,
				        strerror(j->r < 0 ? -j->r : EIO));
			keystore_abort(&s->keystore, j->key);
			agent_fail(c);
		}
	}
	agent_job_free(j);
	if (!c->closing)
		agent_conn_process(c);
	agent_conn_unref(c);
	server_maybe_finish(s);
}

static void agent_queue(AgentConn *c, AgentJob *j)
{
	Server *s = c->agent->server;

	if (s->inflight >= s->config.max_inflight_total) {
		if (j->kind == JOB_ADD)
			keystore_abort(&s->keystore, j->key);
		agent_job_free(j);
		agent_fail(c);
		return;
	}
	j->conn = c;
	j->work.data = j;
	if (uv_queue_work(s->loop, &j->work, agent_job_run, agent_job_done) < 0) {
		if (j->kind == JOB_ADD)
			keystore_abort(&s->keystore, j->key);
		agent_job_free(j);
		agent_fail(c);
		return;
	}
	s->inflight++;
	c->busy = true;
	c->n_refs++;
}

/* ---- confirm constraint: ask ssh_agent_confirm_program ------------------------ */

typedef struct AgentConfirm {
	uv_process_t proc;
	AgentConn *conn;
	AgentJob *job;
} AgentConfirm;

extern char **environ;

static void agent_confirm_closed(uv_handle_t *h)
{
	free(h->data);
}

static void agent_confirm_exit(uv_process_t *p, int64_t status, int sig)
{
	AgentConfirm *cf = p->data;
	AgentConn *c = cf->conn;
	AgentJob *j = cf->job;
	Server *s = c->agent->server;

	s->inflight--;
	c->busy = false;
	uv_close((uv_handle_t *)p, agent_confirm_closed);
	if (c->closing) {
		agent_job_free(j);
	} else if (status == 0 && sig == 0 && !s->locked && !j->key->removed && j->key->secret) {
		log_info("ssh-agent: use of key '%s' confirmed for uid %d pid %d", j->key->info.label, (int)c->uid,
		         (int)c->pid);
		agent_queue(c, j);
	} else {
		log_info("ssh-agent: use of key '%s' not confirmed for uid %d pid %d", j->key->info.label, (int)c->uid,
		         (int)c->pid);
		agent_job_free(j);
		agent_fail(c);
	}
	if (!c->closing && !c->busy)
		agent_conn_process(c);
	agent_conn_unref(c);
	server_maybe_finish(s);
}

/* run the confirm program; the job is queued if it exits 0 */
static void agent_confirm(AgentConn *c, AgentJob *j)
{
	Server *s = c->agent->server;
	const char *prog = s->config.ssh_agent_confirm_program;
	uv_process_options_t o = { 0 };
	AgentConfirm *cf;
	char question[512], exe[256];
	char *args[3], **env = NULL;
	size_t n_env = 0;
	ssize_t n;
	int r;

	if (!prog[0]) {
		/* the program was removed from the configuration since the key was added */
		log_info("ssh-agent: key '%s' needs confirmation but no ssh_agent_confirm_program is configured",
		         j->key->info.label);
		agent_job_free(j);
		agent_fail(c);
		return;
	}
	snprintf(question, sizeof(question), "/proc/%d/exe", (int)c->pid);
	n = readlink(question, exe, sizeof(exe) - 1);
	if (n < 0)
		n = snprintf(exe, sizeof(exe), "?");
	exe[n] = '\0';
	snprintf(question, sizeof(question), "Allow use of key %s (%s) by uid %d pid %d (%s)?", j->key->info.label,
	         j->key->info.fingerprint, (int)c->uid, (int)c->pid, exe);
	while (environ[n_env])
		n_env++;
	cf = calloc(1, sizeof(*cf));
	env = calloc(n_env + 2, sizeof(*env));
	if (!cf || !env) {
		free(cf);
		free(env);
		agent_job_free(j);
		agent_fail(c);
		return;
	}
	for (size_t i = 0, k = 0; i < n_env; i++)
		if (strncmp(environ[i], "SSH_ASKPASS_PROMPT=", 19) != 0)
			env[k++] = environ[i];
	for (n_env = 0; env[n_env]; n_env++)
		;
	env[n_env] = (char *)"SSH_ASKPASS_PROMPT=confirm";
	args[0] = (char *)prog;
	args[1] = question;
	args[2] = NULL;
	o.file = prog;
	o.args = args;
	o.env = env;
	o.exit_cb = agent_confirm_exit;
	cf->conn = c;
	cf->job = j;
	cf->proc.data = cf;
	r = uv_spawn(s->loop, &cf->proc, &o);
	free(env);
	if (r < 0) {
		log_err("ssh-agent: cannot run %s: %s", prog, uv_strerror(r));
		uv_close((uv_handle_t *)&cf->proc, agent_confirm_closed);
		agent_job_free(j);
		agent_fail(c);
		return;
	}
	s->inflight++;
	c->busy = true;
	c->n_refs++;
}

/* ---- requests ------------------------------------------------------------- */

/* the keys REQUEST_IDENTITIES shows this connection: Ed25519, allowed to
 * sign for this peer by their policy, permitted by destination constraints */
static bool agent_listed(const AgentConn *c, Key *k)
{
	char why[128];

	return agent_key_visible(k) && agent_policy_ok(c, k, false, why, sizeof(why)) &&
	       agent_permitted(c, agent_restrict_find(c->agent, k->info.public_key), NULL);
}

static void agent_identities(AgentConn *c)
{
	Agent *a = c->agent;
	Keystore *ks = &a->server->keystore;
	AgentOut o = { 0 };
	uint32_t n = 0;

	if (!a->server->locked)
		for (size_t i = 0; i < ks->n_keys; i++)
			n += agent_listed(c, ks->keys[i]);
	agent_put_u8(&o, AGENT_IDENTITIES_ANSWER);
	agent_put_u32(&o, n);
	for (size_t i = 0; n && i < ks->n_keys; i++) {
		const Key *k = ks->keys[i];

		if (!agent_listed(c, ks->keys[i]))
			continue;
		agent_put_ed25519_blob(&o, k->info.public_key);
		agent_put_cstring(&o, k->info.label);
	}
	agent_send(c, &o);
}

static void agent_sign(AgentConn *c, AgentIn *in)
{
	Agent *a = c->agent;
	const uint8_t *blob, *data;
	size_t blob_len, data_len;
	uint32_t flags;
	uint8_t pk[32];
	const AgentRestrict *r;
	AgentJob *j;
	Key *k;

	blob = agent_get_string(in, &blob_len);
	data = agent_get_string(in, &data_len);
	flags = agent_get_u32(in);
	if (in->bad || in->n != 0 || agent_parse_ed25519_blob(blob, blob_len, pk) < 0) {
		agent_fail(c);
		return;
	}
	if (flags != 0) {
		log_debug("ssh-agent: sign request with flags %u refused (Ed25519 takes 0)", (unsigned)flags);
		agent_fail(c);
		return;
	}
	k = agent_find_pk(a, pk);
	if (a->server->locked || a->server->keystore.locked || (k && !k->secret)) {
		agent_audit(c, k, "ssh-sign", "locked", NULL);
		agent_fail(c);
		return;
	}
	if (!k) {
		agent_audit(c, NULL, "ssh-sign", "not_found", NULL);
		agent_fail(c);
		return;
	}
	r = agent_restrict_find(a, pk);
	if (r && r->n_dests) {
		const uint8_t *sid;
		size_t sid_len;
		char user[256];
		uint8_t hk[32];
		bool has_hk;
		const AgentBind *last = c->n_binds ? &c->binds[c->n_binds - 1] : NULL;

		/* as OpenSSH: a destination-constrained key signs only a userauth
		 * request of the most recently bound session, for a permitted hop */
		if (!last || agent_parse_userauth(data, data_len, pk, &sid, &sid_len, user, hk, &has_hk) < 0 ||
		    !agent_permitted(c, r, user) || sid_len != last->sid_len || memcmp(sid, last->sid, sid_len) != 0 ||
		    (c->n_binds > 1 && !has_hk) || (has_hk && memcmp(hk, last->hostkey, 32) != 0)) {
			log_info("ssh-agent: refused a signature by destination-constrained key '%s' for uid %d pid %d",
			         k->info.label, (int)c->uid, (int)c->pid);
			agent_audit(c, k, "ssh-sign", "denied", "destination constraint");
			agent_fail(c);
			return;
		}
	}
	/* the in-flight limit of the whole server, as the main socket's
	 * admission: requests on the pool plus answers not yet written */
	if (a->server->inflight + a->server->turn_requests >= a->server->config.max_inflight_total) {
		log_info("ssh-agent: sign request of uid %d pid %d refused: too many requests in flight (max %u)",
		         (int)c->uid, (int)c->pid, a->server->config.max_inflight_total);
		agent_fail(c);
		return;
	}
	{
		char why[PROTO_MESSAGE_MAX];

		if (!agent_policy_ok(c, k, true, why, sizeof(why))) {
			log_info("ssh-agent: key '%s' refused for uid %d pid %d: %s", k->info.label, (int)c->uid,
			         (int)c->pid, why);
			agent_audit(c, k, "ssh-sign", "denied", why);
			agent_fail(c);
			return;
		}
	}
	if (!r || !r->confirm) {
		/* on the loop thread: sign, audit, answer (written after the
		 * audit line by agent_flush_all) */
		AgentOut o = { 0 };
		uint8_t sig[64];

		sigil_ed25519_sign_expanded(sig, data, data_len, &k->secret->ed);
		agent_audit(c, k, "ssh-sign", "ok", NULL);
		agent_put_u8(&o, AGENT_SIGN_RESPONSE);
		agent_put_u32(&o, 4 + 11 + 4 + 64);
		agent_put_cstring(&o, "ssh-ed25519");
		agent_put_string(&o, sig, 64);
		agent_send(c, &o);
		return;
	}
	/* confirm constraint: ask the confirm program, then sign on the pool */
	j = calloc(1, sizeof(*j));
	if (j)
		j->msg = malloc(data_len ? data_len : 1);
	if (!j || !j->msg) {
		free(j);
		agent_fail(c);
		return;
	}
	memcpy(j->msg, data, data_len);
	j->msg_len = data_len;
	j->kind = JOB_SIGN;
	j->key = key_ref(k);
	agent_confirm(c, j);
}

/* a label for an added key: its comment if that is a free valid label,
 * else "ssh-" and the first 8 bytes of the public key in hex */
static bool agent_pick_label(Agent *a, const uint8_t *comment, size_t len, const uint8_t pk[32],
                             char out[PROTO_LABEL_MAX + 1])
{
	if (len > 0 && len <= PROTO_LABEL_MAX && proto_label_valid((const char *)comment, len)) {
		memcpy(out, comment, len);
		out[len] = '\0';
		if (!keystore_find(&a->server->keystore, out))
			return true;
	}
	memcpy(out, "ssh-", 4);
	sodium_bin2hex(out + 4, PROTO_LABEL_MAX + 1 - 4, pk, 8);
	return !keystore_find(&a->server->keystore, out);
}

static void agent_add(AgentConn *c, AgentIn *in, bool constrained)
{
	Agent *a = c->agent;
	Server *s = a->server;
	const uint8_t *type, *pkp, *sk, *comment;
	size_t type_len, pk_len, sk_len, comment_len;
	uint32_t lifetime = 0;
	AgentRestrict *restrict_ = NULL;
	bool confirm = false;
	char label[PROTO_LABEL_MAX + 1];
	AgentJob *j;
	Key *k;
	int r;

	type = agent_get_string(in, &type_len);
	if (in->bad || !agent_string_is(type, type_len, "ssh-ed25519")) {
		log_info("ssh-agent: refused to add a key that is not ssh-ed25519");
		agent_fail(c);
		return;
	}
	pkp = agent_get_string(in, &pk_len);
	sk = agent_get_string(in, &sk_len);
	comment = agent_get_string(in, &comment_len);
	if (in->bad || pk_len != 32 || sk_len != 64 || memcmp(sk + 32, pkp, 32) != 0) {
		agent_fail(c);
		return;
	}
	while (constrained && !in->bad && in->n > 0) {
		uint8_t ct = agent_get_u8(in);

		if (ct == AGENT_CONSTRAIN_LIFETIME) {
			lifetime = agent_get_u32(in);
			if (lifetime == 0)
				in->bad = true;
		} else if (ct == AGENT_CONSTRAIN_CONFIRM) {
			if (!s->config.ssh_agent_confirm_program[0]) {
				log_info("ssh-agent: refused a key with the confirm constraint: "
				         "no ssh_agent_confirm_program is configured");
				agent_restrict_free(restrict_);
				agent_fail(c);
				return;
			}
			confirm = true;
		} else {
			size_t nl = 0, pl;
			const uint8_t *name = ct == AGENT_CONSTRAIN_EXTENSION ? agent_get_string(in, &nl) : NULL;

			if (agent_string_is(name, nl, "restrict-destination-v00@openssh.com") && !restrict_) {
				const uint8_t *payload = agent_get_string(in, &pl);

				if (!in->bad && !(restrict_ = agent_parse_restrict(payload, pl))) {
					log_info("ssh-agent: refused a key with a malformed destination constraint");
					agent_fail(c);
					return;
				}
				continue;
			}
			if (name)
				log_info("ssh-agent: refused a key with the unsupported constraint %.*s",
				         (int)(nl > 64 ? 64 : nl), (const char *)name);
			else
				log_info("ssh-agent: refused a key with unknown constraint %u", (unsigned)ct);
			agent_restrict_free(restrict_);
			agent_fail(c);
			return;
		}
	}
	if (!in->bad && confirm && !restrict_)
		restrict_ = calloc(1, sizeof(*restrict_));
	if (in->bad || in->n != 0 || s->locked || (confirm && !restrict_)) {
		agent_restrict_free(restrict_);
		agent_fail(c);
		return;
	}
	if (confirm)
		restrict_->confirm = true;
	k = agent_find_pk(a, pkp);
	if (k && (lifetime || restrict_) && s->keystore.dirfd >= 0) {
		char name[PROTO_LABEL_MAX + sizeof(KEYFILE_SUFFIX)];

		snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, k->info.label);
		if (faccessat(s->keystore.dirfd, name, F_OK, 0) == 0) {
			/* its constraints would be lost at the next start */
			log_info("ssh-agent: refused constraints on key '%s', which has a key file: delete it first",
			         k->info.label);
			agent_restrict_free(restrict_);
			agent_fail(c);
			return;
		}
	}
	if (k) {
		/* as OpenSSH: adding a key again replaces its constraints */
		if (lifetime)
			r = agent_timer_add(a, k->info.label, pkp, lifetime);
		else {
			agent_timer_cancel(a, pkp);
			r = 0;
		}
		if (r < 0) {
			agent_restrict_free(restrict_);
			agent_fail(c);
			return;
		}
		agent_restrict_set(a, pkp, restrict_);
		agent_send_byte(c, AGENT_SUCCESS);
		return;
	}
	if (!agent_pick_label(a, comment, comment_len, pkp, label)) {
		agent_restrict_free(restrict_);
		agent_fail(c);
		return;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		agent_restrict_free(restrict_);
		agent_fail(c);
		return;
	}
	r = keystore_reserve(&s->keystore, label, PROTO_KEY_ED25519, false, &j->key);
	if (r) {
		free(j);
		agent_restrict_free(restrict_);
		agent_fail(c);
		return;
	}
	j->kind = JOB_ADD;
	j->restrict_ = restrict_;
	memcpy(j->seed, sk, 32);
	memcpy(j->pk, pkp, 32);
	j->lifetime = lifetime;
	agent_queue(c, j);
}

static void agent_remove(AgentConn *c, AgentIn *in)
{
	const uint8_t *blob;
	size_t len;
	uint8_t pk[32];
	Key *k;

	blob = agent_get_string(in, &len);
	if (in->bad || in->n != 0 || agent_parse_ed25519_blob(blob, len, pk) < 0 || c->agent->server->locked) {
		agent_fail(c);
		return;
	}
	k = agent_find_pk(c->agent, pk);
	agent_send_byte(c, k && agent_delete_key(c->agent, k) == 0 ? AGENT_SUCCESS : AGENT_FAILURE);
}

static void agent_remove_all(AgentConn *c)
{
	Agent *a = c->agent;
	Keystore *ks = &a->server->keystore;
	bool ok = true;

	if (a->server->locked) {
		agent_fail(c);
		return;
	}
	for (size_t i = ks->n_keys; i-- > 0;) {
		if (i >= ks->n_keys || !agent_listed(c, ks->keys[i]))
			continue;
		if (agent_delete_key(a, ks->keys[i]) != 0)
			ok = false;
	}
	agent_send_byte(c, ok ? AGENT_SUCCESS : AGENT_FAILURE);
}

static void agent_lock_hash(const Agent *a, const uint8_t *pass, size_t len, uint8_t out[32])
{
	crypto_generichash_state st;

	crypto_generichash_init(&st, a->lock_salt, sizeof(a->lock_salt), 32);
	crypto_generichash_update(&st, pass, len);
	crypto_generichash_final(&st, out, 32);
	sigil_wipe(&st, sizeof(st));
}

static void agent_lock(AgentConn *c, AgentIn *in, bool lock)
{
	Agent *a = c->agent;
	Server *s = a->server;
	const uint8_t *pass;
	size_t len;
	uint8_t h[32];
	int r;

	pass = agent_get_string(in, &len);
	if (in->bad || in->n != 0) {
		agent_fail(c);
		return;
	}
	if (lock) {
		if (s->locked) {
			agent_fail(c);
			return;
		}
		randombytes_buf(a->lock_salt, sizeof(a->lock_salt));
		agent_lock_hash(a, pass, len, a->lock_hash);
		a->has_lock = true;
		/* as the main socket's lock: decrypted keys are wiped */
		keystore_lock(&s->keystore);
		s->locked = true;
		log_info("ssh-agent: locked by uid %d pid %d", (int)c->uid, (int)c->pid);
		agent_send_byte(c, AGENT_SUCCESS);
		return;
	}
	/* unlock: a lock taken here needs its passphrase; then the keys are
	 * opened again as the main socket's unlock does (with this passphrase
	 * when they are sealed under one) */
	if (!s->locked) {
		agent_fail(c);
		return;
	}
	if (a->has_lock) {
		agent_lock_hash(a, pass, len, h);
		if (sigil_verify32(h, a->lock_hash) != 0) {
			sigil_wipe(h, sizeof(h));
			log_info("ssh-agent: wrong unlock passphrase from uid %d pid %d", (int)c->uid, (int)c->pid);
			agent_fail(c);
			return;
		}
		sigil_wipe(h, sizeof(h));
	}
	r = keystore_unlock(&s->keystore, pass, len);
	if (r) {
		log_warn("ssh-agent: unlock for uid %d pid %d failed (%d): wrong passphrase for the sealed keys?",
		         (int)c->uid, (int)c->pid, r);
		agent_fail(c);
		return;
	}
	sigil_wipe(a->lock_hash, sizeof(a->lock_hash));
	a->has_lock = false;
	s->locked = false;
	log_info("ssh-agent: unlocked by uid %d pid %d", (int)c->uid, (int)c->pid);
	agent_send_byte(c, AGENT_SUCCESS);
}

/* session-bind@openssh.com: string hostkey, string session id, string
 * signature, bool forwarding. Recorded when the host key's signature over
 * the session id verifies (Ed25519 host keys only). */
static void agent_session_bind(AgentConn *c, AgentIn *in)
{
	const uint8_t *hk, *sid, *sig;
	size_t hk_len, sid_len, sig_len;
	uint8_t pk[32], s[64];
	bool fwd;

	hk = agent_get_string(in, &hk_len);
	sid = agent_get_string(in, &sid_len);
	sig = agent_get_string(in, &sig_len);
	fwd = agent_get_u8(in) != 0;
	if (in->bad || in->n != 0 || sid_len == 0 || sid_len > sizeof(c->binds[0].sid) || agent_parse_ed25519_blob(hk, hk_len, pk) < 0 ||
	    agent_parse_ed25519_sig(sig, sig_len, s) < 0 ||
	    sigil_ed25519_verify(s, sid, sid_len, pk, SIGIL_ED25519_STRICT) != 0) {
		c->bind_failed = true;
		agent_fail(c);
		return;
	}
	/* as OpenSSH: nothing may be bound after a binding for authentication */
	if (c->n_binds >= AGENT_MAX_BINDS || (c->n_binds > 0 && !c->binds[c->n_binds - 1].forwarding)) {
		c->bind_failed = true;
		agent_fail(c);
		return;
	}
	memcpy(c->binds[c->n_binds].sid, sid, sid_len);
	c->binds[c->n_binds].sid_len = sid_len;
	memcpy(c->binds[c->n_binds].hostkey, pk, 32);
	c->binds[c->n_binds].forwarding = fwd;
	c->n_binds++;
	agent_send_byte(c, AGENT_SUCCESS);
}

static void agent_extension(AgentConn *c, AgentIn *in)
{
	const uint8_t *name;
	size_t len;

	name = agent_get_string(in, &len);
	if (in->bad) {
		agent_fail(c);
		return;
	}
	if (agent_string_is(name, len, "query") && in->n == 0) {
		AgentOut o = { 0 };

		agent_put_u8(&o, AGENT_EXTENSION_RESPONSE);
		agent_put_cstring(&o, "query");
		agent_put_cstring(&o, "query");
		agent_put_cstring(&o, "session-bind@openssh.com");
		agent_send(c, &o);
	} else if (agent_string_is(name, len, "session-bind@openssh.com")) {
		agent_session_bind(c, in);
	} else {
		agent_fail(c);
	}
}

static void agent_dispatch(AgentConn *c, const uint8_t *msg, size_t len)
{
	AgentIn in = { msg, len, false };
	uint8_t type = agent_get_u8(&in);

	if (in.bad) {
		agent_fail(c);
		return;
	}
	/* an unlock or rekey runs on the pool and owns the keystore
	 * (handler.c: park()): nothing here may read or change it meanwhile */
	if (c->agent->server->ks_busy && type != AGENTC_EXTENSION) {
		agent_fail(c);
		return;
	}
	switch (type) {
	case AGENTC_REQUEST_IDENTITIES:
		if (in.n != 0)
			agent_fail(c);
		else
			agent_identities(c);
		break;
	case AGENTC_SIGN_REQUEST:
		agent_sign(c, &in);
		break;
	case AGENTC_ADD_IDENTITY:
		agent_add(c, &in, false);
		break;
	case AGENTC_ADD_ID_CONSTRAINED:
		agent_add(c, &in, true);
		break;
	case AGENTC_REMOVE_IDENTITY:
		agent_remove(c, &in);
		break;
	case AGENTC_REMOVE_ALL_IDENTITIES:
		if (in.n != 0)
			agent_fail(c);
		else
			agent_remove_all(c);
		break;
	case AGENTC_LOCK:
		agent_lock(c, &in, true);
		break;
	case AGENTC_UNLOCK:
		agent_lock(c, &in, false);
		break;
	case AGENTC_EXTENSION:
		agent_extension(c, &in);
		break;
	default:
		agent_fail(c);
		break;
	}
}

/* ---- connections ---------------------------------------------------------- */

static void agent_conn_closed(uv_handle_t *h)
{
	agent_conn_unref(h->data);
}

static void agent_conn_close(AgentConn *c)
{
	Agent *a = c->agent;

	if (c->closing)
		return;
	c->closing = true;
	uv_close((uv_handle_t *)&c->pipe, agent_conn_closed);
	uv_close((uv_handle_t *)&c->idle, agent_conn_closed);
	if (c->prev)
		c->prev->next = c->next;
	else
		a->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	c->prev = c->next = NULL;
	a->n_conns--;
}

static void agent_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
	(void)h;
	(void)suggested;
	*buf = uv_buf_init((char *)agent_read_buf, sizeof(agent_read_buf));
}

static void agent_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
	AgentConn *c = stream->data;

	if (nread == 0)
		return;
	if (nread < 0) {
		if (nread != UV_EOF) {
			agent_conn_close(c);
			return;
		}
		/* EOF: the client may have half-closed after its requests */
		uv_read_stop(stream);
		c->reading = false;
		c->eof = true;
		agent_conn_process(c);
		conn_flush_early(c->agent->server);
		return;
	}
	if (c->in_len + (size_t)nread > c->in_cap) {
		size_t cap = c->in_cap ? c->in_cap : 4096;
		uint8_t *p;

		while (cap < c->in_len + (size_t)nread)
			cap *= 2;
		p = malloc(cap);
		if (!p) {
			sigil_wipe(buf->base, (size_t)nread);
			agent_conn_close(c);
			return;
		}
		if (c->in_len)
			memcpy(p, c->in, c->in_len);
		if (c->in) {
			sigil_wipe(c->in, c->in_cap);
			free(c->in);
		}
		c->in = p;
		c->in_cap = cap;
	}
	memcpy(c->in + c->in_len, buf->base, (size_t)nread);
	c->in_len += (size_t)nread;
	sigil_wipe(buf->base, (size_t)nread);
	agent_conn_process(c);
	conn_flush_early(c->agent->server);
}

static void agent_on_idle(uv_timer_t *t)
{
	AgentConn *c = t->data;

	log_info("ssh-agent: closing connection of uid %d pid %d: message incomplete after %us", (int)c->uid,
	         (int)c->pid, c->agent->server->config.idle_timeout_s);
	agent_conn_close(c);
}

/* handle whole frames until one goes to the worker pool or the turn is
 * over (AGENT_FRAMES_PER_TURN, the server's budget, max_inflight_per_conn
 * answers not yet written); read more only when nothing is in progress */
static void agent_conn_process(AgentConn *c)
{
	Server *s = c->agent->server;
	size_t off = 0;
	unsigned n = 0;
	bool turn_over = false;

	if (c->resume)
		return; /* it waits for its turn (agent_on_resume) */
	while (!c->closing && !c->busy && c->write_bytes < CONN_WRITE_HIGH && c->in_len - off >= 4) {
		const uint8_t *p = c->in + off;
		uint32_t len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];

		if (len > AGENT_MAX_MSG) {
			log_info("ssh-agent: uid %d pid %d sent a message of %u bytes (max %u); closing", (int)c->uid,
			         (int)c->pid, (unsigned)len, AGENT_MAX_MSG);
			agent_conn_close(c);
			break;
		}
		if (c->in_len - off - 4 < len)
			break;
		if (n >= AGENT_FRAMES_PER_TURN || s->budget == 0 || c->pending >= s->config.max_inflight_per_conn) {
			turn_over = true;
			break;
		}
		agent_dispatch(c, p + 4, len);
		off += 4 + (size_t)len;
		n++;
		if (s->budget)
			s->budget--;
	}
	if (off) {
		/* consumed bytes may hold a private key */
		memmove(c->in, c->in + off, c->in_len - off);
		sigil_wipe(c->in + (c->in_len - off), off);
		c->in_len -= off;
		/* progress: the next partial message gets a full idle timeout */
		uv_timer_stop(&c->idle);
	}
	if (c->closing)
		return;
	if (c->eof) {
		/* no more bytes will come: its remaining whole frames in later
		 * turns, then close once every answer is written */
		uv_timer_stop(&c->idle);
		if (turn_over && !s->shutting_down)
			agent_wait_turn(c);
		else if (!c->busy && c->write_bytes == 0)
			agent_conn_close(c);
		return;
	}
	if (turn_over || c->busy || c->write_bytes >= CONN_WRITE_HIGH || s->shutting_down) {
		if (c->reading) {
			uv_read_stop((uv_stream_t *)&c->pipe);
			c->reading = false;
		}
		if (turn_over && !s->shutting_down) {
			/* the others run first; the rest of its frames wait */
			uv_timer_stop(&c->idle);
			agent_wait_turn(c);
			return;
		}
	} else if (!c->reading) {
		if (uv_read_start((uv_stream_t *)&c->pipe, agent_alloc, agent_on_read) < 0) {
			agent_conn_close(c);
			return;
		}
		c->reading = true;
	}
	/* a partial message while reading: it must complete in time */
	if (c->reading && c->in_len > 0) {
		if (!uv_is_active((uv_handle_t *)&c->idle))
			uv_timer_start(&c->idle, agent_on_idle, (uint64_t)c->agent->server->config.idle_timeout_s * 1000, 0);
	} else {
		uv_timer_stop(&c->idle);
	}
}

/* the agent's idle handle: the connections waiting for a turn, in order,
 * with a new budget (one that uses up its turn again joins the end) */
static void agent_on_resume(uv_idle_t *h)
{
	Agent *a = h->data;
	Server *s = a->server;
	AgentConn *list = a->resume_head;

	uv_idle_stop(h);
	a->resume_head = a->resume_tail = NULL;
	s->budget = SERVER_FRAMES_PER_PHASE;
	while (list) {
		AgentConn *c = list;

		list = c->resume_next;
		c->resume_next = NULL;
		c->resume = false;
		if (!c->closing) {
			agent_conn_process(c);
			conn_flush_early(s);
		}
		agent_conn_unref(c);
	}
}

static void agent_on_connection(uv_stream_t *listener, int status)
{
	Agent *a = listener->data;
	Server *s = a->server;
	struct ucred cred = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t len = sizeof(cred);
	uv_os_fd_t fd;
	AgentConn *c;

	if (status < 0) {
		log_warn("ssh-agent: accept failed: %s", uv_strerror(status));
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return;
	c->agent = a;
	c->n_refs = 2;
	uv_pipe_init(s->loop, &c->pipe, 0);
	uv_timer_init(s->loop, &c->idle);
	c->pipe.data = c;
	c->idle.data = c;
	c->next = a->conns;
	if (a->conns)
		a->conns->prev = c;
	a->conns = c;
	a->n_conns++;
	if (uv_accept(listener, (uv_stream_t *)&c->pipe) < 0 || uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
	    getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		agent_conn_close(c);
		return;
	}
	c->uid = cred.uid;
	c->gid = cred.gid;
	c->pid = cred.pid;
	{
		char link[64];
		ssize_t n;

		snprintf(link, sizeof(link), "/proc/%d/exe", (int)cred.pid);
		n = readlink(link, c->exe, sizeof(c->exe) - 1);
		if (n < 0)
			n = snprintf(c->exe, sizeof(c->exe), "?");
		c->exe[n] = '\0';
	}
	if (!server_peer_allowed(s, fd, &cred)) {
		log_warn("ssh-agent: refused connection from uid %u gid %u pid %d: not allowed", (unsigned)cred.uid,
		         (unsigned)cred.gid, (int)cred.pid);
		agent_conn_close(c);
		return;
	}
	if (a->n_conns > s->config.max_connections || s->shutting_down) {
		log_warn("ssh-agent: refused connection from uid %u pid %d: max_connections (%u) reached",
		         (unsigned)cred.uid, (int)cred.pid, s->config.max_connections);
		agent_conn_close(c);
		return;
	}
	agent_conn_process(c);
}

/* ---- the listener ------------------------------------------------------------ */

int agent_listen(Server *s, const char *path)
{
	gid_t group = s->config.has_socket_group ? s->config.socket_group : (gid_t)-1;
	int fd, r;

	/* as the main socket: 0600, or 0660 for socket_group (listener.c) */
	r = listener_bind(&fd, path, group);
	if (r)
		return r == LISTENER_E_IN_USE ? SERVER_E_IN_USE : r > 0 ? SERVER_E_BAD_PATH : r;
	r = agent_listen_fd(s, fd);
	if (r == 0) {
		s->agent->path = strdup(path);
		r = s->agent->path ? 0 : -ENOMEM;
	}
	if (r)
		unlink(path);
	return r;
}

int agent_listen_fd(Server *s, int fd)
{
	Agent *a = calloc(1, sizeof(*a));
	int r;

	if (!a) {
		close(fd);
		return -ENOMEM;
	}
	a->server = s;
	uv_pipe_init(s->loop, &a->listener, 0);
	a->listener.data = a;
	r = uv_pipe_open(&a->listener, fd);
	if (r == 0)
		r = uv_listen((uv_stream_t *)&a->listener, SOMAXCONN, agent_on_connection);
	if (r < 0) {
		uv_close((uv_handle_t *)&a->listener, NULL);
		/* the handle is freed with the Server's loop run; keep a for it */
		a->closed = true;
		s->agent = a;
		return r;
	}
	uv_idle_init(s->loop, &a->resume);
	a->resume.data = a;
	a->resume_init = true;
	a->listening = true;
	s->agent = a;
	return 0;
}

void agent_close(Agent *a)
{
	if (!a || a->closed)
		return;
	a->closed = true;
	if (a->listening) {
		uv_close((uv_handle_t *)&a->listener, NULL);
		a->listening = false;
	}
	while (a->conns)
		agent_conn_close(a->conns);
	while (a->timers)
		agent_timer_unlink(a, a->timers);
	/* the closed connections' places in the lists */
	while (a->dirty) {
		AgentConn *c = a->dirty;

		a->dirty = c->dirty_next;
		c->dirty_next = NULL;
		c->dirty = false;
		agent_conn_unref(c);
	}
	while (a->resume_head) {
		AgentConn *c = a->resume_head;

		a->resume_head = c->resume_next;
		c->resume_next = NULL;
		c->resume = false;
		agent_conn_unref(c);
	}
	a->resume_tail = NULL;
	if (a->resume_init) {
		uv_idle_stop(&a->resume);
		uv_close((uv_handle_t *)&a->resume, NULL);
	}
}

void agent_free(Agent *a)
{
	if (!a)
		return;
	if (a->path) {
		unlink(a->path);
		free(a->path);
	}
	while (a->restricts)
		agent_restrict_set(a, a->restricts->pk, NULL);
	sigil_wipe(a, sizeof(*a));
	free(a);
}
