/* SPDX-License-Identifier: MIT */
/*
 * test-libsigil.c - libsigil against the real sigild (started on a
 * temporary socket and state directory for the whole group): every call,
 * the RFC 8032 vectors through the daemon, error codes, the pipelined calls
 * and the transport errors.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sigil/client.h>
#include <sigil/crypto.h>

#include "harness.h"
#include "tc.h"

static TcDaemon daemon_;

/* RFC 8032 section 7.1 TEST 1, 7.2 "foo", 7.3 "TEST abc" (also in
 * vectors/rfc8032.json with their provenance) */
static const char rfc_t1_seed[] = "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char rfc_t1_pk[] = "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
static const char rfc_t1_sig[] = "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
                                 "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b";
static const char rfc_ctx_seed[] = "0305334e381af78f141cb666f6199f57bc3495335a256a95bd2a55bf546663f6";
static const char rfc_ctx_msg[] = "f726936d19c800494e3fdaff20b276a8";
static const char rfc_ctx_sig[] = "55a4cc2f70a54e04288c5f4cd1e45a7bb520b36292911876cada7323198dd87a"
                                  "8b36950b95130022907a7fb7c4e9b2d5f6cca685a587b4b21f4b888e4e7edb0d";
static const char rfc_ph_seed[] = "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42";
static const char rfc_ph_sig[] = "98a70222f0b8121aa9d30f813d683f809e462b469c7ff87639499bb94e6dae41"
                                 "31f85042463c2a355a2003d062adf5aaa10b8c61e636062aaad11c2a26083406";

static int group_setup(void **state)
{
	tc_daemon_start(&daemon_);
	return 0;
}

static int group_teardown(void **state)
{
	return tc_daemon_stop(&daemon_);
}

static sigil_client *conn(void)
{
	sigil_client *c = NULL;
	sigil_error e = sigil_client_connect(&c, daemon_.sock, 10000);

	if (e)
		fail_msg("connect: %s (%s)", sigil_client_strerror(e), sigil_client_errmsg(c));
	return c;
}

#define assert_ok(c, call)                                                                       \
	do {                                                                                     \
		sigil_error e_ = (call);                                                         \
		if (e_)                                                                          \
			fail_msg("%s: %s (%s)", #call, sigil_client_strerror(e_), sigil_client_errmsg(c)); \
	} while (0)

static void test_socket_path(void **state)
{
	char buf[256];
	char *old_sock = getenv("SIGIL_SOCK") ? strdup(getenv("SIGIL_SOCK")) : NULL;
	char *old_xdg = getenv("XDG_RUNTIME_DIR") ? strdup(getenv("XDG_RUNTIME_DIR")) : NULL;

	setenv("SIGIL_SOCK", "/tmp/x/y.sock", 1);
	assert_int_equal(sigil_client_socket_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/tmp/x/y.sock");
	unsetenv("SIGIL_SOCK");
	setenv("XDG_RUNTIME_DIR", "/run/user/4242", 1);
	assert_int_equal(sigil_client_socket_path(buf, sizeof(buf)), 0);
	assert_string_equal(buf, "/run/user/4242/sigil/sigild.sock");
	assert_int_equal(sigil_client_socket_path(buf, 10), -1); /* does not fit */
	unsetenv("XDG_RUNTIME_DIR");
	if (geteuid() == 0) {
		assert_int_equal(sigil_client_socket_path(buf, sizeof(buf)), 0);
		assert_string_equal(buf, "/run/sigil/sigild.sock");
	} else {
		assert_int_equal(sigil_client_socket_path(buf, sizeof(buf)), -1);
	}
	if (old_sock)
		setenv("SIGIL_SOCK", old_sock, 1);
	if (old_xdg)
		setenv("XDG_RUNTIME_DIR", old_xdg, 1);
	free(old_sock);
	free(old_xdg);
	/* $SIGIL_SOCK is used when no path is given */
	{
		sigil_client *c = NULL;
		sigil_hello h;

		setenv("SIGIL_SOCK", daemon_.sock, 1);
		assert_int_equal(sigil_client_connect(&c, NULL, 5000), SIGIL_EOK);
		assert_int_equal(sigil_client_hello(c, &h), SIGIL_EOK);
		sigil_client_free(c);
		unsetenv("SIGIL_SOCK");
	}
}

static void test_connect_errors(void **state)
{
	sigil_client *c = NULL;
	char path[300];
	sigil_error e;

	snprintf(path, sizeof(path), "%s/nothing-here.sock", daemon_.dir);
	e = sigil_client_connect(&c, path, 2000);
	assert_int_equal(e, SIGIL_ECONNECT);
	assert_non_null(c);
	assert_non_null(strstr(sigil_client_errmsg(c), "nothing-here.sock"));
	sigil_client_free(c);
	assert_string_equal(sigil_client_strerror(SIGIL_ENOT_FOUND), "not_found");
	assert_string_equal(sigil_client_strerror(SIGIL_EINVALID_KEY), "invalid_key");
	assert_string_equal(sigil_client_strerror(SIGIL_ECONNECT), "connect_failed");
}

/* A server that accepts and never answers: the call times out. */
static void test_timeout(void **state)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	sigil_client *c = NULL;
	sigil_hello h;
	int lfd;

	assert_true(strlen(daemon_.dir) + 13 < sizeof(sa.sun_path));
	memcpy(sa.sun_path, daemon_.dir, strlen(daemon_.dir));
	memcpy(sa.sun_path + strlen(daemon_.dir), "/silent.sock", 13);
	lfd = socket(AF_UNIX, SOCK_STREAM, 0);
	assert_true(lfd >= 0);
	assert_int_equal(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(lfd, 4), 0);
	assert_int_equal(sigil_client_connect(&c, sa.sun_path, 300), SIGIL_EOK);
	assert_int_equal(sigil_client_hello(c, &h), SIGIL_ETIMEOUT);
	/* the connection is unusable afterwards */
	assert_int_equal(sigil_client_hello(c, &h), SIGIL_EIO);
	sigil_client_free(c);
	close(lfd);
	unlink(sa.sun_path);
}

static void test_hello_status(void **state)
{
	sigil_client *c = conn();
	sigil_hello h;
	sigil_status s;

	assert_ok(c, sigil_client_hello(c, &h));
	assert_int_equal(h.protocol, 1);
	assert_true(strlen(h.server) > 0);
	assert_ok(c, sigil_client_status(c, &s));
	assert_false(s.locked);
	assert_true(s.connections >= 1);
	sigil_client_free(c);
}

static void test_keys(void **state)
{
	sigil_client *c = conn();
	sigil_key_info k, k2, *keys;
	uint8_t seed[32], pk[32], sk[64];
	size_t n;
	bool found_g = false, found_i = false;

	assert_ok(c, sigil_client_key_generate(c, &k, SIGIL_KEY_ED25519, "lib-gen", 0));
	assert_string_equal(k.label, "lib-gen");
	assert_int_equal(k.type, SIGIL_KEY_ED25519);
	assert_ok(c, sigil_client_key_public(c, &k2, "lib-gen"));
	assert_memory_equal(k.public_key, k2.public_key, 32);
	assert_int_equal(sigil_client_key_generate(c, NULL, SIGIL_KEY_ED25519, "lib-gen", 0), SIGIL_EEXISTS);
	assert_true(strlen(sigil_client_errmsg(c)) > 0);
	/* the connection lives on after an error answer */
	th_hex_decode(seed, 32, rfc_t1_seed);
	assert_ok(c, sigil_client_key_import(c, &k, SIGIL_KEY_ED25519, "lib-rfc1", seed, 0));
	th_assert_hex_eq(k.public_key, rfc_t1_pk, 32);
	/* an x25519 key: its public key is X25519(scalar, 9) */
	th_randbytes(seed, 32);
	assert_ok(c, sigil_client_key_import(c, &k, SIGIL_KEY_X25519, "lib-x", seed, 0));
	assert_int_equal(k.type, SIGIL_KEY_X25519);
	sigil_x25519_public(pk, seed);
	assert_memory_equal(k.public_key, pk, 32);
	(void)sk;

	assert_ok(c, sigil_client_key_list(c, &keys, &n));
	for (size_t i = 0; i < n; i++) {
		found_g |= strcmp(keys[i].label, "lib-gen") == 0;
		found_i |= strcmp(keys[i].label, "lib-rfc1") == 0 &&
		           memcmp(keys[i].public_key, k2.public_key, 32) != 0;
	}
	free(keys);
	assert_true(found_g);
	assert_true(found_i);

	/* bad labels are refused locally, unknown ones by the daemon */
	assert_int_equal(sigil_client_key_public(c, &k, "bad label"), SIGIL_EINVAL);
	assert_int_equal(sigil_client_key_public(c, &k, ""), SIGIL_EINVAL);
	assert_int_equal(sigil_client_key_public(c, &k, "no-such-key"), SIGIL_ENOT_FOUND);
	assert_ok(c, sigil_client_key_delete(c, "lib-gen"));
	assert_int_equal(sigil_client_key_public(c, &k, "lib-gen"), SIGIL_ENOT_FOUND);
	assert_int_equal(sigil_client_key_delete(c, "lib-gen"), SIGIL_ENOT_FOUND);
	sigil_client_free(c);
}

static void test_sign_modes(void **state)
{
	sigil_client *c = conn();
	uint8_t seed[32], msg[16], ctx[3], sig[64], digest[64], pk[32], sk[64];
	sigil_key_info k;
	int valid;

	/* pure: RFC 8032 TEST 1 (empty message) */
	th_hex_decode(seed, 32, rfc_t1_seed);
	(void)sigil_client_key_import(c, &k, SIGIL_KEY_ED25519, "lib-rfc1", seed, 0); /* may exist */
	assert_ok(c, sigil_client_sign(c, sig, "lib-rfc1", SIGIL_SIGN_PURE, (const uint8_t *)"", 0, NULL, 0));
	th_assert_hex_eq(sig, rfc_t1_sig, 64);
	assert_ok(c, sigil_client_key_public(c, &k, "lib-rfc1"));
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_PURE, (const uint8_t *)"", 0,
	                                 NULL, 0, SIGIL_POLICY_STRICT));
	assert_int_equal(valid, 1);
	sig[0] ^= 1;
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_PURE, (const uint8_t *)"", 0,
	                                 NULL, 0, SIGIL_POLICY_ZIP215));
	assert_int_equal(valid, 0);

	/* ctx: RFC 8032 7.2 "foo" */
	th_hex_decode(seed, 32, rfc_ctx_seed);
	th_hex_decode(msg, 16, rfc_ctx_msg);
	memcpy(ctx, "foo", 3);
	assert_ok(c, sigil_client_key_import(c, &k, SIGIL_KEY_ED25519, "lib-rfcctx", seed, 0));
	assert_ok(c, sigil_client_sign(c, sig, "lib-rfcctx", SIGIL_SIGN_CTX, msg, 16, ctx, 3));
	th_assert_hex_eq(sig, rfc_ctx_sig, 64);
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_CTX, msg, 16, ctx, 3,
	                                 SIGIL_POLICY_STRICT));
	assert_int_equal(valid, 1);
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_CTX, msg, 16,
	                                 (const uint8_t *)"bar", 3, SIGIL_POLICY_STRICT));
	assert_int_equal(valid, 0);
	/* ctx without a context is refused locally */
	assert_int_equal(sigil_client_sign(c, sig, "lib-rfcctx", SIGIL_SIGN_CTX, msg, 16, NULL, 0), SIGIL_EINVAL);

	/* ph: RFC 8032 7.3 "TEST abc", the daemon hashing and prehashed */
	th_hex_decode(seed, 32, rfc_ph_seed);
	assert_ok(c, sigil_client_key_import(c, &k, SIGIL_KEY_ED25519, "lib-rfcph", seed, 0));
	assert_ok(c, sigil_client_sign(c, sig, "lib-rfcph", SIGIL_SIGN_PH, (const uint8_t *)"abc", 3, NULL, 0));
	th_assert_hex_eq(sig, rfc_ph_sig, 64);
	sigil_sha512(digest, (const uint8_t *)"abc", 3);
	memset(sig, 0, 64);
	assert_ok(c, sigil_client_sign(c, sig, "lib-rfcph", SIGIL_SIGN_PREHASHED, digest, 64, NULL, 0));
	th_assert_hex_eq(sig, rfc_ph_sig, 64);
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_PREHASHED, digest, 64, NULL, 0,
	                                 SIGIL_POLICY_STRICT));
	assert_int_equal(valid, 1);
	assert_ok(c, sigil_client_verify(c, &valid, k.public_key, sig, SIGIL_SIGN_PH, (const uint8_t *)"abc", 3,
	                                 NULL, 0, SIGIL_POLICY_STRICT));
	assert_int_equal(valid, 1);
	assert_int_equal(sigil_client_sign(c, sig, "lib-rfcph", SIGIL_SIGN_PREHASHED, digest, 63, NULL, 0),
	                 SIGIL_EINVAL);
	/* a context with ph, checked against the local crypto */
	sigil_ed25519_keypair_from_seed(pk, sk, seed);
	{
		uint8_t want[64];

		assert_int_equal(sigil_ed25519ph_sign_prehashed(want, digest, (const uint8_t *)"ctx", 3, sk), 0);
		assert_ok(c, sigil_client_sign(c, sig, "lib-rfcph", SIGIL_SIGN_PREHASHED, digest, 64,
		                               (const uint8_t *)"ctx", 3));
		assert_memory_equal(sig, want, 64);
	}
	sigil_wipe(sk, 64);
	/* an x25519 key cannot sign */
	assert_int_equal(sigil_client_sign(c, sig, "lib-x", SIGIL_SIGN_PURE, msg, 16, NULL, 0), SIGIL_EWRONG_TYPE);
	sigil_client_free(c);
}

static void test_verify_batch(void **state)
{
	enum { N = 40 };
	sigil_client *c = conn();
	uint8_t seeds[N][32], pks[N][32], sk[64], sigs[N][64], msgs[N][24];
	sigil_verify_item items[N];
	int valid[N];

	for (int i = 0; i < N; i++) {
		th_randbytes(seeds[i], 32);
		th_randbytes(msgs[i], sizeof(msgs[i]));
		sigil_ed25519_keypair_from_seed(pks[i], sk, seeds[i]);
		sigil_ed25519_sign(sigs[i], msgs[i], sizeof(msgs[i]), sk);
		items[i] = (sigil_verify_item){ pks[i], sigs[i], msgs[i], sizeof(msgs[i]) };
	}
	sigil_wipe(sk, 64);
	assert_ok(c, sigil_client_verify_batch(c, valid, items, N, SIGIL_POLICY_ZIP215));
	for (int i = 0; i < N; i++)
		assert_int_equal(valid[i], 1);
	sigs[7][5] ^= 0x40;
	msgs[23][0] ^= 1;
	assert_ok(c, sigil_client_verify_batch(c, valid, items, N, SIGIL_POLICY_STRICT));
	for (int i = 0; i < N; i++)
		assert_int_equal(valid[i], i == 7 || i == 23 ? 0 : 1);
	sigil_client_free(c);
}

static void test_dh(void **state)
{
	sigil_client *c = conn();
	uint8_t scalar[32], peer_sk[32], peer_pk[32], shared[32], want[32], zero[32] = { 0 };
	sigil_key_info k;

	th_randbytes(scalar, 32);
	th_randbytes(peer_sk, 32);
	sigil_x25519_public(peer_pk, peer_sk);
	assert_ok(c, sigil_client_key_import(c, &k, SIGIL_KEY_X25519, "lib-dh", scalar, 0));
	assert_ok(c, sigil_client_dh(c, shared, "lib-dh", peer_pk));
	assert_int_equal(sigil_x25519(want, peer_sk, k.public_key), 0);
	assert_memory_equal(shared, want, 32);
	/* a small-order peer gives an all-zero secret: refused */
	assert_int_not_equal(sigil_client_dh(c, shared, "lib-dh", zero), SIGIL_EOK);
	/* an ed25519 key cannot do dh */
	assert_int_equal(sigil_client_dh(c, shared, "lib-rfc1", peer_pk), SIGIL_EWRONG_TYPE);
	sigil_wipe(scalar, 32);
	sigil_wipe(peer_sk, 32);
	sigil_wipe(shared, 32);
	sigil_wipe(want, 32);
	sigil_client_free(c);
}

static void test_pipelined(void **state)
{
	enum { N = 1000 };
	sigil_client *c = conn();
	sigil_sign_request *s = calloc(N, sizeof(*s));
	sigil_verify_request *v = calloc(N, sizeof(*v));
	uint8_t (*msgs)[32] = calloc(N, 32);
	sigil_key_info k;

	assert_non_null(s);
	assert_non_null(v);
	assert_non_null(msgs);
	assert_ok(c, sigil_client_key_generate(c, &k, SIGIL_KEY_ED25519, "lib-pipe", 0));
	for (int i = 0; i < N; i++) {
		th_randbytes(msgs[i], 32);
		s[i] = (sigil_sign_request){ .label = "lib-pipe", .mode = SIGIL_SIGN_PURE,
			                     .message = msgs[i], .message_len = 32 };
	}
	/* one bad request in the middle is refused locally, the rest go on */
	s[500].label = "bad label";
	s[501].label = "no-such-key";
	assert_ok(c, sigil_client_sign_many(c, s, N, 64));
	for (int i = 0; i < N; i++) {
		if (i == 500) {
			assert_int_equal(s[i].error, SIGIL_EINVAL);
			continue;
		}
		if (i == 501) {
			assert_int_equal(s[i].error, SIGIL_ENOT_FOUND);
			continue;
		}
		assert_int_equal(s[i].error, SIGIL_EOK);
		assert_int_equal(sigil_ed25519_verify(s[i].signature, msgs[i], 32, k.public_key,
		                                      SIGIL_ED25519_STRICT), 0);
	}
	for (int i = 0; i < N; i++)
		v[i] = (sigil_verify_request){ .public_key = k.public_key, .signature = s[i].signature,
			                       .mode = SIGIL_SIGN_PURE, .message = msgs[i], .message_len = 32 };
	msgs[10][0] ^= 1;
	assert_ok(c, sigil_client_verify_many(c, v, N, 0));
	for (int i = 0; i < N; i++) {
		assert_int_equal(v[i].error, SIGIL_EOK);
		assert_int_equal(v[i].valid, i == 10 || i == 500 || i == 501 ? 0 : 1);
	}
	/* the connection still answers single calls */
	{
		sigil_hello h;

		assert_ok(c, sigil_client_hello(c, &h));
	}
	free(s);
	free(v);
	free(msgs);
	sigil_client_free(c);
}

/* Large messages, a wide window: many MiB in flight in both directions, sent
 * in pieces (the output is capped at 1 MiB unsent), answers read meanwhile. */
static void test_pipelined_large(void **state)
{
	enum { N = 300, LEN = 200 * 1024 };
	sigil_client *c = conn();
	sigil_sign_request *s = calloc(N, sizeof(*s));
	uint8_t *msg = malloc(LEN);
	sigil_key_info k;

	assert_non_null(s);
	assert_non_null(msg);
	th_randbytes(msg, LEN);
	assert_ok(c, sigil_client_key_generate(c, &k, SIGIL_KEY_ED25519, "lib-pipe-large", 0));
	for (int i = 0; i < N; i++)
		s[i] = (sigil_sign_request){ .label = "lib-pipe-large", .mode = i % 2 ? SIGIL_SIGN_PH : SIGIL_SIGN_PURE,
			                     .message = msg, .message_len = LEN - (size_t)i };
	assert_ok(c, sigil_client_sign_many(c, s, N, 256));
	for (int i = 0; i < N; i++) {
		assert_int_equal(s[i].error, SIGIL_EOK);
		if (i % 2)
			assert_int_equal(sigil_ed25519ph_verify(s[i].signature, msg, LEN - (size_t)i, NULL, 0,
			                                        k.public_key, SIGIL_ED25519_STRICT), 0);
		else
			assert_int_equal(sigil_ed25519_verify(s[i].signature, msg, LEN - (size_t)i, k.public_key,
			                                      SIGIL_ED25519_STRICT), 0);
	}
	free(s);
	free(msg);
	sigil_client_free(c);
}

/* Each thread its own connection (the documented rule). */
static void test_lock_unlock(void **state)
{
	sigil_client *c = conn();
	uint8_t sig[64];
	sigil_status st;
	sigil_error e;

	e = sigil_client_lock(c, NULL);
	if (e)
		fail_msg("lock: %s (%s)", sigil_client_strerror(e), sigil_client_errmsg(c));
	assert_ok(c, sigil_client_status(c, &st));
	assert_true(st.locked);
	assert_int_equal(sigil_client_sign(c, sig, "lib-rfc1", SIGIL_SIGN_PURE, (const uint8_t *)"x", 1, NULL, 0),
	                 SIGIL_ELOCKED);
	assert_ok(c, sigil_client_unlock(c, NULL));
	assert_ok(c, sigil_client_status(c, &st));
	assert_false(st.locked);
	assert_ok(c, sigil_client_sign(c, sig, "lib-rfc1", SIGIL_SIGN_PURE, (const uint8_t *)"x", 1, NULL, 0));
	sigil_client_free(c);
}

/* The daemon going away mid-connection is a transport error. */
static void test_daemon_gone(void **state)
{
	TcDaemon d;
	sigil_client *c = NULL;
	sigil_hello h;
	sigil_error e;

	tc_daemon_start(&d);
	assert_int_equal(sigil_client_connect(&c, d.sock, 5000), SIGIL_EOK);
	assert_int_equal(sigil_client_hello(c, &h), SIGIL_EOK);
	kill(d.pid, SIGKILL);
	e = sigil_client_hello(c, &h);
	assert_true(e == SIGIL_EIO || e == SIGIL_ETIMEOUT);
	sigil_client_free(c);
	waitpid(d.pid, NULL, 0); /* killed on purpose: not an early death */
	d.pid = 0;
	(void)tc_daemon_stop(&d);
}

/* Errors about the connection itself (msgid nil) come back as their code:
 * busy when max_connections is reached, too_large for a frame over
 * max_request_size; the connection is unusable after them. */
/* Connects and says hello until the daemon has a free connection slot
 * (5 s at most). */
static sigil_client *connect_when_free(const char *sock)
{
	for (int i = 0;; i++) {
		sigil_client *c = NULL;
		sigil_hello h;
		sigil_error e;

		assert_int_equal(sigil_client_connect(&c, sock, 5000), SIGIL_EOK);
		e = sigil_client_hello(c, &h);
		if (e == SIGIL_EOK)
			return c;
		sigil_client_free(c);
		if (e != SIGIL_EBUSY || i == 50)
			fail_msg("no connection accepted within 5 s: %s", sigil_client_strerror(e));
		usleep(100 * 1000);
	}
}

static void test_connection_errors(void **state)
{
	TcDaemon d;
	sigil_client *c1 = NULL, *c2 = NULL, *c3 = NULL;
	sigil_hello h;
	uint8_t sig[64], *big;
	sigil_error e;

	tc_daemon_start_config(&d, "max_connections = 1\nmax_request_size = 65536\n");
	/* the start-up probe's connection may still count for a moment */
	c1 = connect_when_free(d.sock);
	assert_int_equal(sigil_client_connect(&c2, d.sock, 5000), SIGIL_EOK);
	e = sigil_client_hello(c2, &h);
	if (e != SIGIL_EBUSY)
		fail_msg("second connection: %s (%s)", sigil_client_strerror(e), sigil_client_errmsg(c2));
	assert_int_equal(sigil_client_hello(c2, &h), SIGIL_EIO); /* unusable now */
	sigil_client_free(c2);
	/* a request over max_request_size */
	big = calloc(1, 100000);
	assert_non_null(big);
	assert_int_equal(sigil_client_key_generate(c1, NULL, SIGIL_KEY_ED25519, "big", 0), SIGIL_EOK);
	e = sigil_client_sign(c1, sig, "big", SIGIL_SIGN_PURE, big, 100000, NULL, 0);
	if (e != SIGIL_ETOO_LARGE)
		fail_msg("oversized sign: %s (%s)", sigil_client_strerror(e), sigil_client_errmsg(c1));
	free(big);
	sigil_client_free(c1);
	/* once the daemon has seen both connections close, it serves a new one */
	c3 = connect_when_free(d.sock);
	sigil_client_free(c3);
	assert_int_equal(tc_daemon_stop(&d), 0);
}

/* The version script: libsigil exports sigil_client_* and nothing else. */
static void test_exports(void **state)
{
	TcResult r = tc_sh(NULL, NULL, "nm -D --defined-only '%s'", tc_build_path("client/libsigil.so"));
	int n = 0, connect_seen = 0, many_seen = 0;
	char *line, *save = NULL;

	tc_expect(&r, 0);
	for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char addr[32], type[4], name[256];

		if (sscanf(line, "%31s %3s %255s", addr, type, name) != 3)
			fail_msg("unexpected nm line: %s", line);
		if (strcmp(type, "A") == 0) /* the version node, SIGIL_0 */
			continue;
		if (!strstr(name, "@@SIGIL_0"))
			fail_msg("%s is not in the SIGIL_0 version node", name);
		*strstr(name, "@@") = '\0';
		if (strncmp(name, "sigil_client_", 13) != 0)
			fail_msg("libsigil exports %s (type %s)", name, type);
		connect_seen |= strcmp(name, "sigil_client_connect") == 0;
		many_seen |= strcmp(name, "sigil_client_verify_many") == 0;
		n++;
	}
	printf("# libsigil exports %d symbols\n", n);
	assert_true(connect_seen);
	assert_true(many_seen);
	assert_true(n >= 20);
	tc_result_free(&r);
}

/* One connection per thread, the documented rule: threads run at once. */
typedef struct ThreadArg {
	int id;
	int failures;
	uint8_t pk[32];
} ThreadArg;

static void *thread_main(void *p)
{
	ThreadArg *a = p;
	sigil_client *c = NULL;

	if (sigil_client_connect(&c, daemon_.sock, 10000)) {
		a->failures = 1000;
		sigil_client_free(c);
		return NULL;
	}
	for (int i = 0; i < 200; i++) {
		uint8_t msg[16], sig[64];

		memset(msg, a->id, sizeof(msg));
		memcpy(msg, &i, sizeof(i));
		if (sigil_client_sign(c, sig, "lib-threads", SIGIL_SIGN_PURE, msg, sizeof(msg), NULL, 0) ||
		    sigil_ed25519_verify(sig, msg, sizeof(msg), a->pk, SIGIL_ED25519_STRICT) != 0)
			a->failures++;
	}
	sigil_client_free(c);
	return NULL;
}

static void test_threads(void **state)
{
	enum { T = 4 };
	sigil_client *c = conn();
	pthread_t th[T];
	ThreadArg args[T];
	sigil_key_info k;

	assert_ok(c, sigil_client_key_generate(c, &k, SIGIL_KEY_ED25519, "lib-threads", 0));
	sigil_client_free(c);
	for (int i = 0; i < T; i++) {
		args[i] = (ThreadArg){ .id = i };
		memcpy(args[i].pk, k.public_key, 32);
		assert_int_equal(pthread_create(&th[i], NULL, thread_main, &args[i]), 0);
	}
	for (int i = 0; i < T; i++) {
		pthread_join(th[i], NULL);
		assert_int_equal(args[i].failures, 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_socket_path),
		cmocka_unit_test(test_connect_errors),
		cmocka_unit_test(test_timeout),
		cmocka_unit_test(test_hello_status),
		cmocka_unit_test(test_keys),
		cmocka_unit_test(test_sign_modes),
		cmocka_unit_test(test_verify_batch),
		cmocka_unit_test(test_dh),
		cmocka_unit_test(test_pipelined),
		cmocka_unit_test(test_pipelined_large),
		cmocka_unit_test(test_lock_unlock),
		cmocka_unit_test(test_daemon_gone),
		cmocka_unit_test(test_connection_errors),
		cmocka_unit_test(test_exports),
		cmocka_unit_test(test_threads),
	};

	signal(SIGPIPE, SIG_IGN);
	return th_run_fixture(tests, group_setup, group_teardown);
}
