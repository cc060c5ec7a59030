/* SPDX-License-Identifier: MIT */
/*
 * client.c - libsigil: blocking and pipelined calls to sigild
 *
 * One engine (client_run) does all the I/O: it encodes requests into an
 * output buffer, keeps up to `window` of them in flight, writes and reads
 * with poll() on a non-blocking socket so that neither side can block the
 * other, cuts the answers into frames with ProtoReader and hands each
 * decoded response to the caller's callback by its msgid. Single calls are
 * runs of one request.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "proto.h"
#include "proto-client.h"
#include "sigil/client.h"

#define SIGIL_PUBLIC __attribute__((visibility("default")))

_Static_assert((int)SIGIL_EBAD_REQUEST == (int)PROTO_E_BAD_REQUEST &&
               (int)SIGIL_EINTERNAL == (int)PROTO_E_INTERNAL &&
               (int)SIGIL_ENOT_FOUND == (int)PROTO_E_NOT_FOUND &&
               (int)SIGIL_ETOO_LARGE == (int)PROTO_E_TOO_LARGE,
               "sigil_error must mirror ProtoError");
_Static_assert(SIGIL_CLIENT_LABEL_MAX == PROTO_LABEL_MAX, "label limits differ");

#define CLIENT_READ_CHUNK (64 * 1024)
#define CLIENT_OUT_HIGH (1024 * 1024) /* stop encoding while this much is unsent */
#define CLIENT_DEFAULT_WINDOW 64

struct sigil_client {
	int fd;
	int timeout_ms;
	uint32_t next_msgid;
	bool broken;
	ProtoReader *reader;
	ProtoBuf out;
	size_t out_off;
	char errmsg[PROTO_MESSAGE_MAX + 64];
};

static sigil_error set_err(sigil_client *c, sigil_error e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->errmsg, sizeof(c->errmsg), fmt, ap);
	va_end(ap);
	if (e == SIGIL_ECONNECT || e == SIGIL_ETIMEOUT || e == SIGIL_EIO || e == SIGIL_EPROTO || e == SIGIL_EUNTRUSTED)
		c->broken = true;
	return e;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

SIGIL_PUBLIC const char *sigil_client_strerror(sigil_error e)
{
	switch (e) {
	case SIGIL_EOK:
		return "ok";
	case SIGIL_ECONNECT:
		return "connect_failed";
	case SIGIL_ETIMEOUT:
		return "timeout";
	case SIGIL_EIO:
		return "connection_lost";
	case SIGIL_EPROTO:
		return "protocol_error";
	case SIGIL_ENOMEM:
		return "out_of_memory";
	case SIGIL_EINVAL:
		return "invalid_argument";
	case SIGIL_EUNTRUSTED:
		return "untrusted_server";
	default:
		break;
	}
	if ((int)e > 0 && (int)e < _PROTO_E_N)
		return proto_error_name((ProtoError)e);
	return "unknown_error";
}

SIGIL_PUBLIC int sigil_client_socket_path(char *out, size_t out_len)
{
	const char *s = getenv("SIGIL_SOCK"), *xdg;
	int n;

	if (s && *s)
		n = snprintf(out, out_len, "%s", s);
	else if ((xdg = getenv("XDG_RUNTIME_DIR")) && *xdg)
		n = snprintf(out, out_len, "%s/%s/%s", xdg, PROTO_SOCKET_DIR, PROTO_SOCKET_NAME);
	else if (geteuid() == 0)
		n = snprintf(out, out_len, "%s", PROTO_SOCKET_ROOT);
	else
		return -1;
	return (n < 0 || (size_t)n >= out_len) ? -1 : 0;
}

SIGIL_PUBLIC void sigil_client_set_timeout(sigil_client *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : SIGIL_CLIENT_DEFAULT_TIMEOUT_MS;
}

SIGIL_PUBLIC const char *sigil_client_errmsg(const sigil_client *c)
{
	return c ? c->errmsg : "out of memory";
}

SIGIL_PUBLIC void sigil_client_free(sigil_client *c)
{
	if (!c)
		return;
	if (c->fd >= 0)
		close(c->fd);
	proto_reader_free(c->reader);
	proto_buf_deinit(&c->out);
	free(c);
}

static sigil_error connect_fd(sigil_client *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = now_ms() + c->timeout_ms;

	if (strlen(path) >= sizeof(sa.sun_path))
		return set_err(c, SIGIL_ECONNECT, "socket path too long: %s", path);
	memcpy(sa.sun_path, path, strlen(path) + 1);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (c->fd < 0)
		return set_err(c, SIGIL_ECONNECT, "socket: %s", strerror(errno));
	for (;;) {
		if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return SIGIL_EOK;
		if (errno == EINTR)
			continue;
		if (errno == EAGAIN && now_ms() < deadline) {
			/* listen backlog full: retry until the deadline */
			struct timespec ts = { 0, 10 * 1000 * 1000 };

			nanosleep(&ts, NULL);
			continue;
		}
		if (errno == EINPROGRESS) {
			struct pollfd p = { .fd = c->fd, .events = POLLOUT };
			int err = 0;
			socklen_t len = sizeof(err);
			int64_t left = deadline - now_ms();
			int r = poll(&p, 1, left > 0 ? (int)left : 0);

			if (r == 0)
				return set_err(c, SIGIL_ETIMEOUT, "connect to %s: timed out", path);
			if (r < 0 || getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
				return set_err(c, SIGIL_ECONNECT, "connect to %s: %s", path, strerror(errno));
			if (err)
				return set_err(c, SIGIL_ECONNECT, "connect to %s: %s", path, strerror(err));
			return SIGIL_EOK;
		}
		return set_err(c, SIGIL_ECONNECT, "connect to %s: %s", path, strerror(errno));
	}
}

/* Is uid the packaged system service's user ("sigil", User= of
 * sigild.service)? Only that account runs the system sigild. */
static bool is_service_user(uid_t uid)
{
	struct passwd pw, *res = NULL;
	char buf[1024];

	return getpwnam_r(PROTO_SERVICE_USER, &pw, buf, sizeof(buf), &res) == 0 && res && res->pw_uid == uid;
}

/* Is the server on c->fd one this client may talk to: root, our own uid,
 * the system service's user, or the uid named by server_uid (>= 0) or
 * SIGIL_SERVER_UID? Checked on connect, before anything is sent: a socket
 * path another user could have taken over must not receive seeds or
 * passphrases. */
static sigil_error check_server(sigil_client *c, const char *path, int64_t server_uid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	const char *env = getenv("SIGIL_SERVER_UID");
	int64_t named = server_uid;

	if (named < 0 && env && *env) {
		char *end;
		unsigned long long v;

		errno = 0;
		v = strtoull(env, &end, 10);
		if (errno || *end || env[0] == '-' || v >= (unsigned long long)(uid_t)-1)
			return set_err(c, SIGIL_EUNTRUSTED, "SIGIL_SERVER_UID=%s is not a uid", env);
		named = (int64_t)v;
	}
	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0 || len != sizeof(cred))
		return set_err(c, SIGIL_EUNTRUSTED, "cannot read the credentials of the server on %s: %s", path,
		               strerror(errno));
	if (cred.uid == 0 || cred.uid == geteuid() || (named >= 0 && (int64_t)cred.uid == named) ||
	    is_service_user(cred.uid))
		return SIGIL_EOK;
	return set_err(c, SIGIL_EUNTRUSTED,
	               "the server on %s runs as uid %u, not as root, this user (uid %u) or user " PROTO_SERVICE_USER
               ": nothing was sent to it; "
	               "if sigild runs as that uid, set SIGIL_SERVER_UID=%u (sigil --server-uid)",
	               path, (unsigned)cred.uid, (unsigned)geteuid(), (unsigned)cred.uid);
}

SIGIL_PUBLIC sigil_error sigil_client_connect(sigil_client **clientp, const char *path,
                                              int timeout_ms)
{
	return sigil_client_connect_uid(clientp, path, timeout_ms, -1);
}

SIGIL_PUBLIC sigil_error sigil_client_connect_uid(sigil_client **clientp, const char *path,
                                                  int timeout_ms, int64_t server_uid)
{
	char def[sizeof(((struct sockaddr_un *)0)->sun_path) + 64];
	sigil_client *c;
	sigil_error e;

	*clientp = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return SIGIL_ENOMEM;
	c->fd = -1;
	c->next_msgid = 1;
	proto_buf_init(&c->out);
	sigil_client_set_timeout(c, timeout_ms);
	*clientp = c;
	if (proto_reader_new(&c->reader, PROTO_DEFAULT_MAX_FRAME) < 0) {
		sigil_client_free(c);
		*clientp = NULL;
		return SIGIL_ENOMEM;
	}
	if (!path) {
		if (sigil_client_socket_path(def, sizeof(def)) < 0)
			return set_err(c, SIGIL_ECONNECT,
			               "no socket path: set SIGIL_SOCK or XDG_RUNTIME_DIR");
		path = def;
	}
	e = connect_fd(c, path);
	if (!e)
		e = check_server(c, path, server_uid);
	if (e)
		return e;
	c->errmsg[0] = '\0';
	return SIGIL_EOK;
}

/* ---- the engine ---- */

typedef struct Run {
	/* fills *req for request i (msgid is set by the engine) */
	sigil_error (*build)(void *ud, size_t i, ProtoRequest *req);
	/* takes the decoded answer of request i; its error is in resp->error */
	void (*done)(void *ud, size_t i, const ProtoResponse *resp);
	void *ud;
	ProtoMethod method; /* the same method for every request of a run */
} Run;

/* Sends pending output without blocking. 0, or -1 with errno set. */
static int flush_some(sigil_client *c)
{
	while (c->out_off < c->out.len) {
		ssize_t w = send(c->fd, c->out.data + c->out_off, c->out.len - c->out_off,
		                 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK) {
				/* compact: the sent prefix must not grow without bound
				 * while the socket never drains completely */
				if (c->out_off >= CLIENT_OUT_HIGH) {
					size_t left = c->out.len - c->out_off;

					memmove(c->out.data, c->out.data + c->out_off, left);
					proto_wipe(c->out.data + left, c->out_off);
					c->out.len = left;
					c->out_off = 0;
				}
				return 0;
			}
			return -1;
		}
		c->out_off += (size_t)w;
	}
	/* all sent: reuse the buffer (wiped, requests may hold seeds) */
	if (c->out.len) {
		proto_wipe(c->out.data, c->out.len);
		c->out.len = 0;
		c->out_off = 0;
	}
	return 0;
}

static sigil_error handle_frame(sigil_client *c, const Run *run, const uint8_t *frame,
                                size_t len, uint32_t base, size_t sent, bool *answered,
                                size_t *ndone)
{
	char why[PROTO_MESSAGE_MAX];
	ProtoResponse resp;
	uint64_t msgid;
	bool has_msgid;
	size_t i;
	int r;

	if (proto_response_msgid(frame, len, &has_msgid, &msgid) != 0)
		return set_err(c, SIGIL_EPROTO, "malformed response from the daemon");
	if (!has_msgid) {
		/* An error about the connection itself (denied, busy, too_large,
		 * an unreadable frame): the daemon closes after it. The call
		 * fails with that code, and the connection is unusable. */
		sigil_error e = SIGIL_EPROTO;

		r = proto_response_decode(&resp, run->method, frame, len, why);
		if (r == 0 && resp.error)
			e = set_err(c, (sigil_error)resp.error, "%s: %s", proto_error_name(resp.error),
			            resp.message);
		else
			set_err(c, SIGIL_EPROTO, "daemon sent an error without msgid");
		c->broken = true;
		proto_response_deinit(&resp);
		return e;
	}
	if (msgid < base || msgid - base >= sent || answered[msgid - base])
		return set_err(c, SIGIL_EPROTO, "response with unexpected msgid %llu",
		               (unsigned long long)msgid);
	i = (size_t)(msgid - base);
	r = proto_response_decode(&resp, run->method, frame, len, why);
	if (r == -ENOMEM) {
		proto_response_deinit(&resp);
		return set_err(c, SIGIL_ENOMEM, "out of memory");
	}
	if (r != 0) {
		proto_response_deinit(&resp);
		return set_err(c, SIGIL_EPROTO, "%s", why);
	}
	answered[i] = true;
	(*ndone)++;
	run->done(run->ud, i, &resp);
	if (resp.error)
		set_err(c, (sigil_error)resp.error, "%s: %s", proto_error_name(resp.error),
		        resp.message);
	proto_response_deinit(&resp);
	return SIGIL_EOK;
}

/* Runs n requests with at most window in flight. Returns SIGIL_EOK when all
 * are answered, else the transport error (requests not answered are left
 * to the caller to mark). */
static sigil_error client_run(sigil_client *c, const Run *run, size_t n, size_t window)
{
	uint8_t buf[CLIENT_READ_CHUNK];
	size_t sent = 0, ndone = 0, buf_used = 0;
	int send_errno = 0;
	bool *answered;
	uint32_t base;
	int64_t deadline;
	sigil_error e = SIGIL_EOK;

	if (c->broken)
		return set_err(c, SIGIL_EIO, "connection unusable after an earlier error");
	if (n == 0)
		return SIGIL_EOK;
	if (window == 0)
		window = CLIENT_DEFAULT_WINDOW;
	if (n > UINT32_MAX / 2)
		return set_err(c, SIGIL_EINVAL, "too many requests");
	if ((uint64_t)c->next_msgid + n > UINT32_MAX)
		c->next_msgid = 1;
	base = c->next_msgid;
	c->next_msgid += (uint32_t)n;
	answered = calloc(n, sizeof(bool));
	if (!answered)
		return set_err(c, SIGIL_ENOMEM, "out of memory");
	c->errmsg[0] = '\0';
	deadline = now_ms() + c->timeout_ms;

	while (ndone < n) {
		struct pollfd p = { .fd = c->fd, .events = 0 };
		int64_t left;
		int r;

		/* encode while the window and the output buffer allow */
		while (send_errno == 0 && sent < n && sent - ndone < window &&
		       c->out.len - c->out_off < CLIENT_OUT_HIGH) {
			ProtoRequest req = PROTO_REQUEST_NULL(req);

			req.method = run->method;
			e = run->build(run->ud, sent, &req);
			if (e) {
				/* a local argument error: answer it locally */
				ProtoResponse resp = { .method = run->method, .error = PROTO_E_BAD_REQUEST };

				snprintf(resp.message, sizeof(resp.message), "%.*s",
				         (int)sizeof(resp.message) - 1, c->errmsg);
				answered[sent] = true;
				ndone++;
				sent++;
				run->done(run->ud, sent - 1, &resp);
				e = SIGIL_EOK;
				continue;
			}
			req.msgid = base + sent;
			r = proto_request_encode(&c->out, &req);
			if (r < 0) {
				e = set_err(c, r == -ENOMEM ? SIGIL_ENOMEM : SIGIL_EINVAL,
				            "cannot encode the request");
				goto out;
			}
			sent++;
		}
		if (ndone == n)
			break;
		if (send_errno == 0 && flush_some(c) < 0) {
			if (errno != EPIPE && errno != ECONNRESET) {
				e = set_err(c, SIGIL_EIO, "send: %s", strerror(errno));
				goto out;
			}
			/* the daemon closed its end: read what it said first (a
			 * denied or busy error comes just before the close) */
			send_errno = errno;
		}
		p.events = POLLIN;
		if (send_errno == 0 && c->out_off < c->out.len)
			p.events |= POLLOUT;
		left = deadline - now_ms();
		if (left <= 0) {
			e = set_err(c, SIGIL_ETIMEOUT, "no answer from the daemon within %d ms",
			            c->timeout_ms);
			goto out;
		}
		r = poll(&p, 1, (int)left);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			e = set_err(c, SIGIL_EIO, "poll: %s", strerror(errno));
			goto out;
		}
		if (r == 0)
			continue; /* the deadline check above reports it */
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t got = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
			const uint8_t *frame;
			size_t flen;

			if (got < 0) {
				if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
					continue;
				e = set_err(c, SIGIL_EIO, "recv: %s", strerror(errno));
				goto out;
			}
			if (got == 0) {
				e = set_err(c, SIGIL_EIO, "the daemon closed the connection%s%s",
				            send_errno ? ": " : "", send_errno ? strerror(send_errno) : "");
				goto out;
			}
			if ((size_t)got > buf_used)
				buf_used = (size_t)got;
			r = proto_reader_feed(c->reader, buf, (size_t)got);
			while (r == 0 && (r = proto_reader_next(c->reader, &frame, &flen)) == PROTO_READER_FRAME) {
				e = handle_frame(c, run, frame, flen, base, sent, answered, &ndone);
				if (e)
					goto out;
				r = 0;
			}
			if (r == -ENOMEM) {
				e = set_err(c, SIGIL_ENOMEM, "out of memory");
				goto out;
			}
			if (r != PROTO_READER_NONE) {
				e = set_err(c, SIGIL_EPROTO, "the daemon sent bytes that are not msgpack-rpc");
				goto out;
			}
			/* progress: the timeout bounds each wait, not the whole run */
			deadline = now_ms() + c->timeout_ms;
		}
	}
out:
	free(answered);
	/* answers may hold a shared secret (dh): wipe what recv() wrote */
	proto_wipe(buf, buf_used);
	return e;
}

/* ---- single calls ---- */

typedef struct One {
	sigil_client *c;
	const ProtoRequest *req;
	sigil_error error;
	void (*take)(void *out, const ProtoResponse *resp);
	void *out;
} One;

static sigil_error one_build(void *ud, size_t i, ProtoRequest *req)
{
	One *o = ud;
	ProtoMethod m = req->method;

	*req = *o->req;
	req->method = m;
	return SIGIL_EOK;
}

static void one_done(void *ud, size_t i, const ProtoResponse *resp)
{
	One *o = ud;

	o->error = (sigil_error)resp->error;
	if (!resp->error && o->take)
		o->take(o->out, resp);
}

static sigil_error call(sigil_client *c, const ProtoRequest *req,
                        void (*take)(void *out, const ProtoResponse *resp), void *out)
{
	One o = { c, req, SIGIL_EOK, take, out };
	Run run = { one_build, one_done, &o, req->method };
	sigil_error e;

	e = client_run(c, &run, 1, 1);
	if (e)
		return e;
	if (o.error == SIGIL_EOK)
		c->errmsg[0] = '\0';
	return o.error;
}

static sigil_error check_label(sigil_client *c, const char *label)
{
	if (!label || !proto_label_valid(label, strlen(label)))
		return set_err(c, SIGIL_EINVAL, "bad label \"%s\": use 1 to 64 of [A-Za-z0-9._@+-]",
		               label ? label : "(null)");
	return SIGIL_EOK;
}

static void key_from_proto(sigil_key_info *k, const ProtoKeyInfo *p)
{
	memset(k, 0, sizeof(*k));
	memcpy(k->label, p->label, sizeof(k->label));
	k->type = p->type == PROTO_KEY_X25519 ? SIGIL_KEY_X25519 : SIGIL_KEY_ED25519;
	memcpy(k->public_key, p->public_key, 32);
	memcpy(k->fingerprint, p->fingerprint, sizeof(k->fingerprint));
	k->exportable = p->exportable;
	k->created = p->created;
}

static void take_hello(void *out, const ProtoResponse *r)
{
	sigil_hello *h = out;

	h->protocol = r->u.hello.protocol;
	snprintf(h->server, sizeof(h->server), "%s", r->u.hello.server ? r->u.hello.server : "");
}

SIGIL_PUBLIC sigil_error sigil_client_hello(sigil_client *c, sigil_hello *out)
{
	ProtoRequest req = { .method = PROTO_METHOD_HELLO };

	if (!out)
		return set_err(c, SIGIL_EINVAL, "NULL output");
	return call(c, &req, take_hello, out);
}

static void take_status(void *out, const ProtoResponse *r)
{
	sigil_status *s = out;

	s->keys = r->u.status.keys;
	s->locked = r->u.status.locked;
	s->connections = r->u.status.connections;
	s->inflight = r->u.status.inflight;
	s->uptime_s = r->u.status.uptime_s;
	s->requests = r->u.status.requests;
	s->workers = r->u.status.workers;
}

SIGIL_PUBLIC sigil_error sigil_client_status(sigil_client *c, sigil_status *out)
{
	ProtoRequest req = { .method = PROTO_METHOD_STATUS };

	if (!out)
		return set_err(c, SIGIL_EINVAL, "NULL output");
	return call(c, &req, take_status, out);
}

static void take_key(void *out, const ProtoResponse *r)
{
	if (out)
		key_from_proto(out, &r->u.key);
}

static int key_type_ok(sigil_key_type t)
{
	return t == SIGIL_KEY_ED25519 || t == SIGIL_KEY_X25519;
}

SIGIL_PUBLIC sigil_error sigil_client_key_generate(sigil_client *c, sigil_key_info *out,
                                                   sigil_key_type type, const char *label,
                                                   int exportable)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_GENERATE };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!key_type_ok(type))
		return set_err(c, SIGIL_EINVAL, "bad key type");
	req.u.key_generate.type = (ProtoKeyType)type;
	memcpy(req.u.key_generate.label, label, strlen(label) + 1);
	req.u.key_generate.exportable = exportable != 0;
	return call(c, &req, take_key, out);
}

SIGIL_PUBLIC sigil_error sigil_client_key_import(sigil_client *c, sigil_key_info *out,
                                                 sigil_key_type type, const char *label,
                                                 const uint8_t seed[32], int exportable)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_IMPORT };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!key_type_ok(type) || !seed)
		return set_err(c, SIGIL_EINVAL, "bad key type or NULL seed");
	req.u.key_import.type = (ProtoKeyType)type;
	memcpy(req.u.key_import.label, label, strlen(label) + 1);
	req.u.key_import.seed = seed;
	req.u.key_import.exportable = exportable != 0;
	return call(c, &req, take_key, out);
}

static sigil_error to_proto_policy(sigil_client *c, ProtoKeyPolicy *p, const sigil_key_policy *in)
{
	memset(p, 0, sizeof(*p));
	if (in->n_uids > PROTO_POLICY_IDS_MAX || in->n_gids > PROTO_POLICY_IDS_MAX ||
	    in->n_exes > PROTO_POLICY_EXES_MAX || in->expires < 0)
		return set_err(c, SIGIL_EINVAL, "policy: too many ids or paths, or a negative expiry");
	p->set = true;
	p->ops = (in->allow_sign ? PROTO_OP_SIGN : 0) | (in->allow_dh ? PROTO_OP_DH : 0) |
	         (in->allow_age_unwrap ? PROTO_OP_AGE_UNWRAP : 0);
	p->expires = in->expires;
	memcpy(p->uids, in->uids, in->n_uids * sizeof(uint32_t));
	p->n_uids = in->n_uids;
	memcpy(p->gids, in->gids, in->n_gids * sizeof(uint32_t));
	p->n_gids = in->n_gids;
	for (size_t i = 0; i < in->n_exes; i++) {
		if (!in->exes[i] || in->exes[i][0] != '/' || strlen(in->exes[i]) >= PROTO_POLICY_EXE_MAX)
			return set_err(c, SIGIL_EINVAL, "policy: executables must be absolute paths under %d bytes",
			               PROTO_POLICY_EXE_MAX);
		memcpy(p->exes[i], in->exes[i], strlen(in->exes[i]) + 1);
	}
	p->n_exes = in->n_exes;
	p->max_signs = in->max_signs;
	p->rate = in->rate;
	return SIGIL_EOK;
}

SIGIL_PUBLIC sigil_error sigil_client_key_generate_policy(sigil_client *c, sigil_key_info *out,
                                                          sigil_key_type type, const char *label,
                                                          int exportable, const sigil_key_policy *policy)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_GENERATE };
	ProtoKeyPolicy pol;
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!key_type_ok(type))
		return set_err(c, SIGIL_EINVAL, "bad key type");
	if (policy && (e = to_proto_policy(c, &pol, policy)))
		return e;
	req.u.key_generate.type = (ProtoKeyType)type;
	memcpy(req.u.key_generate.label, label, strlen(label) + 1);
	req.u.key_generate.exportable = exportable != 0;
	req.u.key_generate.policy = policy ? &pol : NULL;
	return call(c, &req, take_key, out);
}

SIGIL_PUBLIC sigil_error sigil_client_key_import_policy(sigil_client *c, sigil_key_info *out,
                                                        sigil_key_type type, const char *label,
                                                        const uint8_t seed[32], int exportable,
                                                        const sigil_key_policy *policy)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_IMPORT };
	ProtoKeyPolicy pol;
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!key_type_ok(type) || !seed)
		return set_err(c, SIGIL_EINVAL, "bad key type or NULL seed");
	if (policy && (e = to_proto_policy(c, &pol, policy)))
		return e;
	req.u.key_import.type = (ProtoKeyType)type;
	memcpy(req.u.key_import.label, label, strlen(label) + 1);
	req.u.key_import.seed = seed;
	req.u.key_import.exportable = exportable != 0;
	req.u.key_import.policy = policy ? &pol : NULL;
	return call(c, &req, take_key, out);
}

typedef struct KeyList {
	sigil_key_info *keys;
	size_t n;
	bool nomem;
} KeyList;

static void take_key_list(void *out, const ProtoResponse *r)
{
	KeyList *l = out;

	if (r->u.key_list.n_keys == 0)
		return;
	l->keys = calloc(r->u.key_list.n_keys, sizeof(sigil_key_info));
	if (!l->keys) {
		l->nomem = true;
		return;
	}
	for (size_t i = 0; i < r->u.key_list.n_keys; i++)
		key_from_proto(&l->keys[i], &r->u.key_list.keys[i]);
	l->n = r->u.key_list.n_keys;
}

SIGIL_PUBLIC sigil_error sigil_client_key_list(sigil_client *c, sigil_key_info **keysp, size_t *np)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_LIST };
	KeyList l = { NULL, 0, false };
	sigil_error e;

	*keysp = NULL;
	*np = 0;
	e = call(c, &req, take_key_list, &l);
	if (e == SIGIL_EOK && l.nomem)
		return set_err(c, SIGIL_ENOMEM, "out of memory");
	if (e) {
		free(l.keys);
		return e;
	}
	*keysp = l.keys;
	*np = l.n;
	return SIGIL_EOK;
}

typedef struct KeyPolicyList {
	KeyList l;
	sigil_key_policy *policies; /* one block: n policies, then the exes strings */
} KeyPolicyList;

/* the libsigil form of a key's policy; its exes point into *strp */
static void policy_from_proto(sigil_key_policy *p, const ProtoKeyPolicy *in, char **strp)
{
	memset(p, 0, sizeof(*p));
	if (!in || !in->set)
		return;
	p->allow_sign = (in->ops & PROTO_OP_SIGN) != 0;
	p->allow_dh = (in->ops & PROTO_OP_DH) != 0;
	p->allow_age_unwrap = (in->ops & PROTO_OP_AGE_UNWRAP) != 0;
	p->expires = in->expires;
	p->n_uids = in->n_uids < SIGIL_POLICY_IDS_MAX ? in->n_uids : SIGIL_POLICY_IDS_MAX;
	memcpy(p->uids, in->uids, p->n_uids * sizeof(p->uids[0]));
	p->n_gids = in->n_gids < SIGIL_POLICY_IDS_MAX ? in->n_gids : SIGIL_POLICY_IDS_MAX;
	memcpy(p->gids, in->gids, p->n_gids * sizeof(p->gids[0]));
	p->n_exes = in->n_exes < SIGIL_POLICY_EXES_MAX ? in->n_exes : SIGIL_POLICY_EXES_MAX;
	for (size_t i = 0; i < p->n_exes; i++) {
		size_t l = strlen(in->exes[i]) + 1;

		memcpy(*strp, in->exes[i], l);
		p->exes[i] = *strp;
		*strp += l;
	}
	p->max_signs = in->max_signs;
	p->rate = in->rate;
}

static void take_key_policy_list(void *out, const ProtoResponse *r)
{
	KeyPolicyList *pl = out;
	size_t n = r->u.key_list.n_keys, strs = 0;
	char *str;

	take_key_list(&pl->l, r);
	if (pl->l.nomem || n == 0)
		return;
	for (size_t i = 0; i < n; i++) {
		const ProtoKeyPolicy *p = r->u.key_list.keys[i].policy;

		for (size_t j = 0; p && j < p->n_exes; j++)
			strs += strlen(p->exes[j]) + 1;
	}
	pl->policies = calloc(1, n * sizeof(sigil_key_policy) + strs);
	if (!pl->policies) {
		pl->l.nomem = true;
		return;
	}
	str = (char *)(pl->policies + n);
	for (size_t i = 0; i < n; i++)
		policy_from_proto(&pl->policies[i], r->u.key_list.keys[i].policy, &str);
}

SIGIL_PUBLIC sigil_error sigil_client_key_list_policies(sigil_client *c, sigil_key_info **keysp,
                                                        sigil_key_policy **policiesp, size_t *np)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_LIST };
	KeyPolicyList pl = { { NULL, 0, false }, NULL };
	sigil_error e;

	*keysp = NULL;
	*policiesp = NULL;
	*np = 0;
	e = call(c, &req, take_key_policy_list, &pl);
	if (e == SIGIL_EOK && pl.l.nomem)
		e = set_err(c, SIGIL_ENOMEM, "out of memory");
	if (e) {
		free(pl.l.keys);
		free(pl.policies);
		return e;
	}
	*keysp = pl.l.keys;
	*policiesp = pl.policies;
	*np = pl.l.n;
	return SIGIL_EOK;
}

SIGIL_PUBLIC sigil_error sigil_client_key_public(sigil_client *c, sigil_key_info *out,
                                                 const char *label)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_PUBLIC };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	memcpy(req.u.key_public.label, label, strlen(label) + 1);
	return call(c, &req, take_key, out);
}

SIGIL_PUBLIC sigil_error sigil_client_key_delete(sigil_client *c, const char *label)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_DELETE };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	memcpy(req.u.key_delete.label, label, strlen(label) + 1);
	return call(c, &req, NULL, NULL);
}

/* Fills the sign part of a request; argument errors are SIGIL_EINVAL. */
static sigil_error fill_sign(sigil_client *c, ProtoRequest *req, const char *label,
                             sigil_sign_mode mode, const uint8_t *msg, size_t msg_len,
                             const uint8_t *ctx, size_t ctx_len)
{
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if ((msg_len && !msg) || (ctx_len && !ctx) || ctx_len > PROTO_CONTEXT_MAX)
		return set_err(c, SIGIL_EINVAL, "bad message or context");
	req->method = PROTO_METHOD_SIGN;
	memcpy(req->u.sign.label, label, strlen(label) + 1);
	req->u.sign.message = (ProtoBytes){ msg, msg_len };
	req->u.sign.context = (ProtoBytes){ ctx, ctx_len };
	switch (mode) {
	case SIGIL_SIGN_PURE:
		if (ctx_len)
			return set_err(c, SIGIL_EINVAL, "pure Ed25519 takes no context");
		req->u.sign.mode = PROTO_MODE_PURE;
		break;
	case SIGIL_SIGN_CTX:
		if (!ctx_len)
			return set_err(c, SIGIL_EINVAL, "Ed25519ctx needs a context of 1 to 255 bytes");
		req->u.sign.mode = PROTO_MODE_CTX;
		break;
	case SIGIL_SIGN_PH:
		req->u.sign.mode = PROTO_MODE_PH;
		break;
	case SIGIL_SIGN_PREHASHED:
		if (msg_len != PROTO_DIGEST_LEN)
			return set_err(c, SIGIL_EINVAL, "a prehashed message is a 64-byte SHA-512 digest");
		req->u.sign.mode = PROTO_MODE_PH;
		req->u.sign.prehashed = true;
		break;
	default:
		return set_err(c, SIGIL_EINVAL, "bad sign mode");
	}
	return SIGIL_EOK;
}

static sigil_error fill_verify(sigil_client *c, ProtoRequest *req, const uint8_t *pk,
                               const uint8_t *sig, sigil_sign_mode mode, const uint8_t *msg,
                               size_t msg_len, const uint8_t *ctx, size_t ctx_len,
                               sigil_verify_policy policy)
{
	ProtoRequest s = { .method = PROTO_METHOD_SIGN };
	sigil_error e;

	if (!pk || !sig)
		return set_err(c, SIGIL_EINVAL, "NULL public key or signature");
	if (policy != SIGIL_POLICY_STRICT && policy != SIGIL_POLICY_ZIP215)
		return set_err(c, SIGIL_EINVAL, "bad policy");
	/* the same argument rules as sign (label aside) */
	e = fill_sign(c, &s, "x", mode, msg, msg_len, ctx, ctx_len);
	if (e)
		return e;
	req->method = PROTO_METHOD_VERIFY;
	req->u.verify.public_key = pk;
	req->u.verify.signature = sig;
	req->u.verify.message = s.u.sign.message;
	req->u.verify.context = s.u.sign.context;
	req->u.verify.mode = s.u.sign.mode;
	req->u.verify.prehashed = s.u.sign.prehashed;
	req->u.verify.policy = policy == SIGIL_POLICY_ZIP215 ? PROTO_POLICY_ZIP215 : PROTO_POLICY_STRICT;
	return SIGIL_EOK;
}

static void take_sig(void *out, const ProtoResponse *r)
{
	memcpy(out, r->u.sign.signature, 64);
}

SIGIL_PUBLIC sigil_error sigil_client_sign(sigil_client *c, uint8_t sig[64], const char *label,
                                           sigil_sign_mode mode, const uint8_t *msg,
                                           size_t msg_len, const uint8_t *ctx, size_t ctx_len)
{
	ProtoRequest req = { .method = PROTO_METHOD_SIGN };
	sigil_error e = fill_sign(c, &req, label, mode, msg, msg_len, ctx, ctx_len);

	if (e)
		return e;
	if (!sig)
		return set_err(c, SIGIL_EINVAL, "NULL output");
	return call(c, &req, take_sig, sig);
}

static void take_valid(void *out, const ProtoResponse *r)
{
	*(int *)out = r->u.verify.valid ? 1 : 0;
}

SIGIL_PUBLIC sigil_error sigil_client_verify(sigil_client *c, int *validp, const uint8_t pk[32],
                                             const uint8_t sig[64], sigil_sign_mode mode,
                                             const uint8_t *msg, size_t msg_len,
                                             const uint8_t *ctx, size_t ctx_len,
                                             sigil_verify_policy policy)
{
	ProtoRequest req = { .method = PROTO_METHOD_VERIFY };
	sigil_error e = fill_verify(c, &req, pk, sig, mode, msg, msg_len, ctx, ctx_len, policy);

	if (e)
		return e;
	if (!validp)
		return set_err(c, SIGIL_EINVAL, "NULL output");
	*validp = 0;
	return call(c, &req, take_valid, validp);
}

typedef struct Batch {
	int *valid;
	size_t n;
	bool short_answer;
} Batch;

static void take_batch(void *out, const ProtoResponse *r)
{
	Batch *b = out;

	if (r->u.verify_batch.n != b->n) {
		b->short_answer = true;
		return;
	}
	for (size_t i = 0; i < b->n; i++)
		b->valid[i] = r->u.verify_batch.valid[i] ? 1 : 0;
}

SIGIL_PUBLIC sigil_error sigil_client_verify_batch(sigil_client *c, int *valid,
                                                   const sigil_verify_item *items, size_t n,
                                                   sigil_verify_policy policy)
{
	ProtoRequest req = { .method = PROTO_METHOD_VERIFY_BATCH };
	ProtoVerifyItem *pi;
	Batch b = { valid, n, false };
	sigil_error e;

	if ((n && (!items || !valid)) || (policy != SIGIL_POLICY_STRICT && policy != SIGIL_POLICY_ZIP215))
		return set_err(c, SIGIL_EINVAL, "bad verify_batch arguments");
	pi = calloc(n ? n : 1, sizeof(*pi));
	if (!pi)
		return set_err(c, SIGIL_ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		if (!items[i].public_key || !items[i].signature ||
		    (items[i].message_len && !items[i].message)) {
			free(pi);
			return set_err(c, SIGIL_EINVAL, "item %zu: NULL field", i);
		}
		pi[i].public_key = items[i].public_key;
		pi[i].signature = items[i].signature;
		pi[i].message = (ProtoBytes){ items[i].message, items[i].message_len };
		valid[i] = 0;
	}
	req.u.verify_batch.items = pi;
	req.u.verify_batch.n_items = n;
	req.u.verify_batch.policy = policy == SIGIL_POLICY_ZIP215 ? PROTO_POLICY_ZIP215 : PROTO_POLICY_STRICT;
	e = call(c, &req, take_batch, &b);
	free(pi);
	if (e == SIGIL_EOK && b.short_answer)
		return set_err(c, SIGIL_EPROTO, "verify_batch answered a different number of items");
	return e;
}

static void take_dh(void *out, const ProtoResponse *r)
{
	memcpy(out, r->u.dh.shared_secret, 32);
}

static void take_seed(void *out, const ProtoResponse *r)
{
	memcpy(out, r->u.key_export.seed, 32);
}

SIGIL_PUBLIC sigil_error sigil_client_key_export(sigil_client *c, uint8_t seed[32], const char *label)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_EXPORT };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!seed)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	memcpy(req.u.key_export.label, label, strlen(label) + 1);
	return call(c, &req, take_seed, seed);
}

SIGIL_PUBLIC sigil_error sigil_client_dh(sigil_client *c, uint8_t shared[32], const char *label,
                                         const uint8_t peer[32])
{
	ProtoRequest req = { .method = PROTO_METHOD_DH };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!shared || !peer)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	memcpy(req.u.dh.label, label, strlen(label) + 1);
	req.u.dh.peer = peer;
	return call(c, &req, take_dh, shared);
}

static sigil_error lock_unlock(sigil_client *c, ProtoMethod m, const char *passphrase)
{
	ProtoRequest req = { .method = m };
	ProtoBytes pp = { (const uint8_t *)passphrase, passphrase ? strlen(passphrase) : 0 };

	if (pp.len > PROTO_PASSPHRASE_MAX)
		return set_err(c, SIGIL_EINVAL, "passphrase longer than %d bytes", PROTO_PASSPHRASE_MAX);
	if (m == PROTO_METHOD_LOCK) {
		req.u.lock.has_passphrase = passphrase != NULL;
		req.u.lock.passphrase = pp;
	} else {
		req.u.unlock.has_passphrase = passphrase != NULL;
		req.u.unlock.passphrase = pp;
	}
	return call(c, &req, NULL, NULL);
}

SIGIL_PUBLIC sigil_error sigil_client_lock(sigil_client *c, const char *passphrase)
{
	return lock_unlock(c, PROTO_METHOD_LOCK, passphrase);
}

SIGIL_PUBLIC sigil_error sigil_client_unlock(sigil_client *c, const char *passphrase)
{
	return lock_unlock(c, PROTO_METHOD_UNLOCK, passphrase);
}

static void take_rekey(void *out, const ProtoResponse *r)
{
	if (out)
		*(uint64_t *)out = r->u.rekey.keys;
}

SIGIL_PUBLIC sigil_error sigil_client_rekey(sigil_client *c, const char *new_passphrase, uint64_t *keysp)
{
	ProtoRequest req = { .method = PROTO_METHOD_REKEY };
	ProtoBytes pp = { (const uint8_t *)new_passphrase, new_passphrase ? strlen(new_passphrase) : 0 };

	if (pp.len > PROTO_PASSPHRASE_MAX)
		return set_err(c, SIGIL_EINVAL, "passphrase longer than %d bytes", PROTO_PASSPHRASE_MAX);
	req.u.rekey.has_passphrase = new_passphrase != NULL;
	req.u.rekey.passphrase = pp;
	return call(c, &req, take_rekey, keysp);
}

SIGIL_PUBLIC sigil_error sigil_client_rekey_file(sigil_client *c, const char *new_master_key_file, uint64_t *keysp)
{
	ProtoRequest req = { .method = PROTO_METHOD_REKEY };

	if (!new_master_key_file || new_master_key_file[0] != '/' || strlen(new_master_key_file) >= PROTO_PATH_MAX)
		return set_err(c, SIGIL_EINVAL, "the new master key file must be an absolute path under %d bytes",
		               PROTO_PATH_MAX);
	req.u.rekey.master_key_file = new_master_key_file;
	return call(c, &req, take_rekey, keysp);
}

typedef struct AuditOut {
	char **lines;
	size_t n;
	bool nomem;
} AuditOut;

static void take_audit(void *out, const ProtoResponse *r)
{
	AuditOut *a = out;

	a->lines = calloc(r->u.audit.n + 1, sizeof(char *));
	if (!a->lines) {
		a->nomem = true;
		return;
	}
	for (size_t i = 0; i < r->u.audit.n; i++) {
		a->lines[i] = strdup(r->u.audit.lines[i]);
		if (!a->lines[i]) {
			a->nomem = true;
			return;
		}
		a->n++;
	}
}

SIGIL_PUBLIC void sigil_client_strv_free(char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

SIGIL_PUBLIC sigil_error sigil_client_audit(sigil_client *c, size_t limit, char ***linesp, size_t *np)
{
	ProtoRequest req = { .method = PROTO_METHOD_AUDIT };
	AuditOut a = { 0 };
	sigil_error e;

	if (!linesp || !np)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	req.u.audit.limit = limit ? limit : 100;
	e = call(c, &req, take_audit, &a);
	if (!e && a.nomem)
		e = set_err(c, SIGIL_ENOMEM, "out of memory");
	if (e) {
		sigil_client_strv_free(a.lines);
		return e;
	}
	*linesp = a.lines;
	*np = a.n;
	return SIGIL_EOK;
}

/* ---- pipelined calls ---- */

typedef struct Many {
	sigil_client *c;
	sigil_sign_request *sreqs;
	sigil_verify_request *vreqs;
} Many;

static sigil_error many_sign_build(void *ud, size_t i, ProtoRequest *req)
{
	Many *m = ud;
	sigil_sign_request *s = &m->sreqs[i];
	sigil_error e = fill_sign(m->c, req, s->label, s->mode, s->message, s->message_len,
	                          s->context, s->context_len);

	if (e)
		s->error = e;
	return e;
}

static void many_sign_done(void *ud, size_t i, const ProtoResponse *resp)
{
	Many *m = ud;
	sigil_sign_request *s = &m->sreqs[i];

	if (s->error == SIGIL_EINVAL)
		return; /* refused locally */
	s->error = (sigil_error)resp->error;
	if (!resp->error)
		memcpy(s->signature, resp->u.sign.signature, 64);
}

static sigil_error many_verify_build(void *ud, size_t i, ProtoRequest *req)
{
	Many *m = ud;
	sigil_verify_request *v = &m->vreqs[i];
	sigil_error e = fill_verify(m->c, req, v->public_key, v->signature, v->mode, v->message,
	                            v->message_len, v->context, v->context_len, v->policy);

	if (e)
		v->error = e;
	return e;
}

static void many_verify_done(void *ud, size_t i, const ProtoResponse *resp)
{
	Many *m = ud;
	sigil_verify_request *v = &m->vreqs[i];

	if (v->error == SIGIL_EINVAL)
		return;
	v->error = (sigil_error)resp->error;
	v->valid = !resp->error && resp->u.verify.valid ? 1 : 0;
}

/* Every request starts with error SIGIL_EIO as an "unanswered" sentinel;
 * after a transport error the unanswered ones get that error. */
static sigil_error *many_error(Many *m, size_t i)
{
	return m->sreqs ? &m->sreqs[i].error : &m->vreqs[i].error;
}

static sigil_error many_run(Many *m, const Run *run, size_t n, size_t window)
{
	sigil_error e;

	for (size_t i = 0; i < n; i++)
		*many_error(m, i) = SIGIL_EIO; /* until answered */
	e = client_run(m->c, run, n, window);
	if (e) {
		for (size_t i = 0; i < n; i++)
			if (*many_error(m, i) == SIGIL_EIO)
				*many_error(m, i) = e;
	}
	return e;
}

SIGIL_PUBLIC sigil_error sigil_client_sign_many(sigil_client *c, sigil_sign_request *reqs,
                                                size_t n, size_t window)
{
	Many m = { c, reqs, NULL };
	Run run = { many_sign_build, many_sign_done, &m, PROTO_METHOD_SIGN };

	if (n && !reqs)
		return set_err(c, SIGIL_EINVAL, "NULL requests");
	return many_run(&m, &run, n, window);
}

SIGIL_PUBLIC sigil_error sigil_client_verify_many(sigil_client *c, sigil_verify_request *reqs,
                                                  size_t n, size_t window)
{
	Many m = { c, NULL, reqs };
	Run run = { many_verify_build, many_verify_done, &m, PROTO_METHOD_VERIFY };

	if (n && !reqs)
		return set_err(c, SIGIL_EINVAL, "NULL requests");
	for (size_t i = 0; i < n; i++)
		reqs[i].valid = 0;
	return many_run(&m, &run, n, window);
}

/* ---- age (docs/age.md) ---- */

/* allow_age_unwrap took the tail padding of sigil_key_policy: same size and
 * offsets as before it on LP64 (docs/client.md) */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(sigil_key_policy) == 216 && offsetof(sigil_key_policy, allow_age_unwrap) == 212,
               "sigil_key_policy must keep its SIGIL_0 size");
#endif

static void take_file_key(void *out, const ProtoResponse *r)
{
	memcpy(out, r->u.age_unwrap.file_key, PROTO_AGE_FILE_KEY_LEN);
}

SIGIL_PUBLIC sigil_error sigil_client_age_unwrap(sigil_client *c, uint8_t file_key[16], const char *label,
                                                 const uint8_t share[32], const uint8_t body[32])
{
	ProtoRequest req = { .method = PROTO_METHOD_AGE_UNWRAP };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!file_key || !share || !body)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	memcpy(req.u.age_unwrap.label, label, strlen(label) + 1);
	req.u.age_unwrap.share = share;
	req.u.age_unwrap.body = body;
	return call(c, &req, take_file_key, file_key);
}

typedef struct WrappedFile {
	uint8_t *data;
	size_t len;
	bool nomem;
} WrappedFile;

static void take_file(void *out, const ProtoResponse *r)
{
	WrappedFile *f = out;
	size_t n = r->u.key_export_wrapped.file.len;

	f->data = malloc(n ? n : 1);
	if (!f->data) {
		f->nomem = true;
		return;
	}
	memcpy(f->data, r->u.key_export_wrapped.file.data, n);
	f->len = n;
}

SIGIL_PUBLIC sigil_error sigil_client_key_export_wrapped(sigil_client *c, uint8_t **filep, size_t *lenp,
                                                         const char *label, const char *recipient, int armor)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_EXPORT_WRAPPED };
	WrappedFile f = { NULL, 0, false };
	sigil_error e = check_label(c, label);

	if (e)
		return e;
	if (!filep || !lenp || !recipient)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	*filep = NULL;
	*lenp = 0;
	if (strlen(recipient) == 0 || strlen(recipient) > PROTO_AGE_RECIPIENT_MAX)
		return set_err(c, SIGIL_EINVAL, "not an age recipient: %.64s", recipient);
	memcpy(req.u.key_export_wrapped.label, label, strlen(label) + 1);
	memcpy(req.u.key_export_wrapped.recipient, recipient, strlen(recipient) + 1);
	req.u.key_export_wrapped.armor = armor != 0;
	e = call(c, &req, take_file, &f);
	if (e == SIGIL_EOK && f.nomem)
		return set_err(c, SIGIL_ENOMEM, "out of memory");
	if (e) {
		free(f.data);
		return e;
	}
	*filep = f.data;
	*lenp = f.len;
	return SIGIL_EOK;
}

SIGIL_PUBLIC sigil_error sigil_client_key_import_wrapped(sigil_client *c, sigil_key_info *out, const char *label,
                                                         const char *key_label, const uint8_t *file, size_t len)
{
	ProtoRequest req = { .method = PROTO_METHOD_KEY_IMPORT_WRAPPED };
	sigil_error e = check_label(c, label);

	if (!e)
		e = check_label(c, key_label);
	if (e)
		return e;
	if (!file && len)
		return set_err(c, SIGIL_EINVAL, "NULL argument");
	memcpy(req.u.key_import_wrapped.label, label, strlen(label) + 1);
	memcpy(req.u.key_import_wrapped.key, key_label, strlen(key_label) + 1);
	req.u.key_import_wrapped.file = (ProtoBytes){ file, len };
	return call(c, &req, take_key, out);
}
