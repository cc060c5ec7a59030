/* SPDX-License-Identifier: MIT */
/*
 * test-ops.c - unit tests of daemon/ops.c: an Ops on a real Keystore in a
 * temporary state directory, on a real libuv loop and worker pool, with
 * Peers built by hand and Ops submitted directly (no socket, no front-end)
 *
 * Peers: ADMIN (admin), ALICE and BOB (admitted users), EVE (not
 * admitted). Keys: "alice" (owner ALICE, no rules), "alice-only" (owner
 * ALICE, policy uids=[ALICE]), "bob" (owner BOB), "quota" (owner ALICE,
 * max_signs 1).
 */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>
#include <sodium.h>
#include <uv.h>

#include <sigil/crypto.h>

#include "audit.h"
#include "config.h"
#include "keystore.h"
#include "log.h"
#include "ops.h"
#include "pool.h"
#include "secmem.h"

#define ALICE 41001u
#define BOB 41002u
#define EVE 41003u

static uv_loop_t *loop;
static Config config;
static Keystore ks;
static Ops ops;
static Pool *pool;
static uv_prepare_t kick; /* the pool's hand-over, twice per iteration (as server.c) */
static uv_check_t kick_check;
static uint64_t unwritten_total;
static char state_dir[256];
static Peer admin_peer, alice, bob, eve;
static OpsClient client;

/* an Op with its own request storage (what keep() copies) */
typedef struct TOp {
	Op op;
	ProtoRequest q;
	unsigned id;
} TOp;

#define MAX_DONE 64
static unsigned done_ids[MAX_DONE];
static ProtoError done_err[MAX_DONE];
static size_t done_n_keys[MAX_DONE];
static bool done_has[MAX_DONE];
static char done_labels[MAX_DONE][8][PROTO_LABEL_MAX + 1];
static size_t n_done;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void t_done(Op *op)
{
	TOp *t = op->owner;

	assert_true(n_done < MAX_DONE);
	done_ids[n_done] = t->id;
	done_err[n_done] = op->resp.error;
	if (op->kind == OP_KEY_LIST && op->resp.error == PROTO_OK) {
		size_t n = op->resp.u.key_list.n_keys;

		done_n_keys[n_done] = n;
		for (size_t i = 0; i < n && i < 8; i++)
			memcpy(done_labels[n_done][i], op->resp.u.key_list.keys[i].label, PROTO_LABEL_MAX + 1);
	}
	assert_false(done_has[t->id]); /* exactly once */
	done_has[t->id] = true;
	n_done++;
	ops_op_deinit(op);
	if (op->was_kept) /* the kept copy (t_keep's) */
		free(t);
}

static Op *t_keep(Op *op)
{
	TOp *t = op->owner, *k = malloc(sizeof(*k));

	if (!k)
		return NULL;
	*k = *t;
	k->op = *op;
	k->op.q = &k->q;
	k->op.owner = k;
	return &k->op;
}

/* a fresh op of @kind from @peer, numbered @id (its done() is recorded) */
static TOp *op_new(TOp *t, unsigned id, OpKind kind, const Peer *peer)
{
	memset(t, 0, sizeof(*t));
	t->id = id;
	t->op.kind = kind;
	t->op.peer = peer;
	t->op.client = &client;
	t->op.q = &t->q;
	t->op.done = t_done;
	t->op.keep = t_keep;
	t->op.owner = t;
	return t;
}

/* submit; the answer if it came at once, else -1 */
static int submit(TOp *t)
{
	size_t before = n_done;
	bool kept;

	done_has[t->id] = false;
	kept = ops_submit(&ops, &t->op);
	if (!kept) {
		assert_int_equal(n_done, before + 1);
		return (int)done_err[before];
	}
	return n_done > before ? (int)done_err[before] : -1;
}

/* run the loop until op @id is answered (10 s at most); its error */
static int wait_for(unsigned id)
{
	uint64_t deadline = now_ms() + 10000;

	/* (a lone short job runs in pool_kick: before the loop blocks) */
	while (pool_kick(pool), !done_has[id] && now_ms() < deadline)
		uv_run(loop, UV_RUN_ONCE);
	assert_true(done_has[id]);
	for (size_t i = 0; i < n_done; i++)
		if (done_ids[i] == id)
			return (int)done_err[i];
	return -1;
}

static int run_op(unsigned id, OpKind kind, const Peer *peer, void (*fill)(ProtoRequest *q))
{
	TOp t;
	int r;

	op_new(&t, id, kind, peer);
	if (fill)
		fill(&t.q);
	r = submit(&t);
	if (r < 0)
		r = wait_for(id);
	return r;
}

static int run_op_t(TOp *t)
{
	int r = submit(t);

	return r < 0 ? wait_for(t->id) : r;
}

static const uint8_t message[] = "a message to sign";

static void fill_sign_alice(ProtoRequest *q)
{
	snprintf(q->u.sign.label, sizeof(q->u.sign.label), "alice");
	q->u.sign.message = (ProtoBytes){ message, sizeof(message) };
}

static void fill_sign_quota(ProtoRequest *q)
{
	snprintf(q->u.sign.label, sizeof(q->u.sign.label), "quota");
	q->u.sign.message = (ProtoBytes){ message, sizeof(message) };
}

static void fill_audit(ProtoRequest *q)
{
	q->u.audit.limit = 10;
}

static void add_key(const char *label, uint32_t owner, uint8_t fill, const ProtoKeyPolicy *policy)
{
	uint8_t seed[32];
	Key *k = NULL;

	memset(seed, fill, sizeof(seed));
	assert_int_equal(keystore_reserve(&ks, label, PROTO_KEY_ED25519, false, owner, false, &k), 0);
	if (policy) {
		k->policy = *policy;
		k->info.policy = &k->policy;
	}
	assert_int_equal(keystore_materialize(&ks, k, seed), 0);
	keystore_commit(&ks, k);
	key_unref(k);
	sodium_memzero(seed, sizeof(seed));
}

static Peer make_peer(uid_t uid, bool admitted, bool admin)
{
	Peer p = PEER_NULL(p);

	p.uid = uid;
	p.gid = (gid_t)uid;
	p.pid = getpid();
	p.admitted = admitted;
	p.admin = admin;
	p.exe = (char *)"/usr/bin/test-ops";
	return p;
}

static void on_kick(uv_prepare_t *h)
{
	(void)h;
	pool_kick(pool);
}

static void on_kick_check(uv_check_t *h)
{
	(void)h;
	pool_kick(pool);
}

static int setup(void **state)
{
	ProtoKeyPolicy only = { .set = true, .uids = { ALICE }, .n_uids = 1 };
	ProtoKeyPolicy quota = { .set = true, .max_signs = 1 };
	struct stat st;

	(void)state;
	snprintf(state_dir, sizeof(state_dir), "%s/sigil-test-ops.XXXXXX",
	         stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	assert_non_null(mkdtemp(state_dir));
	config_init(&config);
	config.max_inflight_per_conn = 16;
	config.max_inflight_total = 64;
	loop = uv_default_loop();
	ks = (Keystore)KEYSTORE_NULL(ks);
	assert_int_equal(keystore_open(&ks, state_dir), 0);
	unwritten_total = 0;
	assert_int_equal(pool_new(&pool, loop, 2, 0), 0);
	uv_prepare_init(loop, &kick);
	uv_prepare_start(&kick, on_kick);
	uv_check_init(loop, &kick_check);
	uv_check_start(&kick_check, on_kick_check);
	ops_init(&ops, loop, &ks, &config, pool, &unwritten_total);
	admin_peer = make_peer(0, true, true);
	alice = make_peer(ALICE, true, false);
	bob = make_peer(BOB, true, false);
	eve = make_peer(EVE, false, false);
	client = (OpsClient){ 0 };
	add_key("alice", ALICE, 0x11, NULL);
	add_key("alice-only", ALICE, 0x22, &only);
	add_key("bob", BOB, 0x33, NULL);
	add_key("quota", ALICE, 0x44, &quota);
	n_done = 0;
	memset(done_has, 0, sizeof(done_has));
	return 0;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	/* nothing left in flight */
	while (pool_kick(pool), ops.inflight > 0)
		uv_run(loop, UV_RUN_ONCE);
	assert_int_equal(client.inflight, 0);
	pool_free(pool);
	uv_close((uv_handle_t *)&kick, NULL);
	uv_close((uv_handle_t *)&kick_check, NULL);
	ops_close(&ops);
	while (uv_run(loop, UV_RUN_NOWAIT) != 0)
		;
	keystore_close(&ks);
	snprintf(cmd, sizeof(cmd), "rm -rf -- '%s'", state_dir);
	(void)!system(cmd);
	return 0;
}

/* ---- tests ------------------------------------------------------------------- */

static void test_not_admitted(void **state)
{
	static const OpKind kinds[] = { OP_STATUS, OP_KEY_LIST, OP_SIGN, OP_KEY_DELETE, OP_LOCK, OP_AGENT_LIST };

	(void)state;
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		assert_int_equal(run_op(i, kinds[i], &eve, kinds[i] == OP_SIGN ? fill_sign_alice : NULL),
		                 PROTO_E_DENIED);
	assert_int_equal(run_op(10, OP_STATUS, &bob, NULL), PROTO_OK);
}

/* lock, unlock, rekey, audit: admins only */
static void test_admin_only(void **state)
{
	(void)state;
	assert_int_equal(run_op(1, OP_LOCK, &alice, NULL), PROTO_E_DENIED);
	assert_false(ops.locked);
	assert_int_equal(run_op(2, OP_AUDIT, &alice, fill_audit), PROTO_E_DENIED);
	assert_int_equal(run_op(3, OP_REKEY, &bob, NULL), PROTO_E_DENIED);
	assert_int_equal(run_op(4, OP_AUDIT, &admin_peer, fill_audit), PROTO_OK);
	assert_int_equal(run_op(5, OP_LOCK, &admin_peer, NULL), PROTO_OK);
	assert_true(ops.locked);
	assert_int_equal(run_op(6, OP_SIGN, &alice, fill_sign_alice), PROTO_E_LOCKED);
	assert_int_equal(run_op(7, OP_UNLOCK, &alice, NULL), PROTO_E_DENIED);
	assert_true(ops.locked);
	assert_int_equal(run_op(8, OP_UNLOCK, &admin_peer, NULL), PROTO_OK);
	assert_false(ops.locked);
	assert_int_equal(run_op(9, OP_SIGN, &alice, fill_sign_alice), PROTO_OK);
	assert_int_equal(run_op(10, OP_REKEY, &admin_peer, NULL), PROTO_OK);
	assert_int_equal(run_op(11, OP_SIGN, &alice, fill_sign_alice), PROTO_OK);
}

static void fill_delete_alice(ProtoRequest *q)
{
	snprintf(q->u.key_delete.label, sizeof(q->u.key_delete.label), "alice");
}

static void fill_delete_bob(ProtoRequest *q)
{
	snprintf(q->u.key_delete.label, sizeof(q->u.key_delete.label), "bob");
}

/* delete: the owner or an admin */
static void test_delete(void **state)
{
	(void)state;
	assert_int_equal(run_op(1, OP_KEY_DELETE, &bob, fill_delete_alice), PROTO_E_DENIED);
	assert_non_null(keystore_find(&ks, "alice"));
	assert_int_equal(run_op(2, OP_KEY_DELETE, &alice, fill_delete_bob), PROTO_E_DENIED);
	assert_non_null(keystore_find(&ks, "bob"));
	assert_int_equal(run_op(3, OP_KEY_DELETE, &alice, fill_delete_alice), PROTO_OK);
	assert_null(keystore_find(&ks, "alice"));
	assert_int_equal(run_op(4, OP_KEY_DELETE, &admin_peer, fill_delete_bob), PROTO_OK);
	assert_null(keystore_find(&ks, "bob"));
	assert_int_equal(run_op(5, OP_KEY_DELETE, &admin_peer, fill_delete_bob), PROTO_E_NOT_FOUND);
}

static bool listed(size_t i, const char *label)
{
	for (size_t j = 0; j < done_n_keys[i] && j < 8; j++)
		if (strcmp(done_labels[i][j], label) == 0)
			return true;
	return false;
}

/* key.list: users see the keys they may use or own; admins all */
static void test_list_filtered(void **state)
{
	(void)state;
	assert_int_equal(run_op(1, OP_KEY_LIST, &admin_peer, NULL), PROTO_OK);
	assert_int_equal(done_n_keys[0], 4);
	assert_int_equal(run_op(2, OP_KEY_LIST, &bob, NULL), PROTO_OK);
	assert_int_equal(done_n_keys[1], 3);
	assert_false(listed(1, "alice-only"));
	assert_true(listed(1, "bob"));
	assert_true(listed(1, "alice"));
	assert_int_equal(run_op(3, OP_KEY_LIST, &alice, NULL), PROTO_OK);
	assert_int_equal(done_n_keys[2], 4);
	assert_true(listed(2, "alice-only"));
}

/* the key's rules for everybody: alice-only refuses bob and the admin */
static void fill_sign_alice_only(ProtoRequest *q)
{
	snprintf(q->u.sign.label, sizeof(q->u.sign.label), "alice-only");
	q->u.sign.message = (ProtoBytes){ message, sizeof(message) };
}

static void test_sign_rules(void **state)
{
	(void)state;
	assert_int_equal(run_op(1, OP_SIGN, &alice, fill_sign_alice_only), PROTO_OK);
	assert_int_equal(run_op(2, OP_SIGN, &admin_peer, fill_sign_alice_only), PROTO_E_DENIED);
	/* bob does not see it at all: not_found or denied, never a signature */
	assert_int_not_equal(run_op(3, OP_SIGN, &bob, fill_sign_alice_only), PROTO_OK);
}

/* quota is charged only when performed: an admission busy does not spend
 * max_signs */
static void test_quota_not_spent_by_busy(void **state)
{
	(void)state;
	client.unwritten = config.max_inflight_per_conn; /* the connection is full */
	assert_int_equal(run_op(1, OP_SIGN, &alice, fill_sign_quota), PROTO_E_BUSY);
	assert_int_equal(run_op(2, OP_SIGN, &alice, fill_sign_quota), PROTO_E_BUSY);
	client.unwritten = 0;
	unwritten_total = config.max_inflight_total; /* every connection is full */
	assert_int_equal(run_op(3, OP_SIGN, &alice, fill_sign_quota), PROTO_E_BUSY);
	unwritten_total = 0;
	assert_int_equal(run_op(4, OP_SIGN, &alice, fill_sign_quota), PROTO_OK);
	assert_int_equal(run_op(5, OP_SIGN, &alice, fill_sign_quota), PROTO_E_DENIED);
}

static const uint8_t lock_pass[] = "correct horse";
static const uint8_t wrong_pass[] = "wrong horse";

static void fill_lock_pass(ProtoRequest *q)
{
	q->u.lock.has_passphrase = true;
	q->u.lock.passphrase = (ProtoBytes){ lock_pass, sizeof(lock_pass) - 1 };
}

static void fill_unlock_wrong(ProtoRequest *q)
{
	q->u.unlock.has_passphrase = true;
	q->u.unlock.passphrase = (ProtoBytes){ wrong_pass, sizeof(wrong_pass) - 1 };
}

/* failed unlocks in a row delay the next unlock (for everybody) */
static void test_unlock_delay(void **state)
{
	TOp t;
	uint64_t gate;

	(void)state;
	assert_int_equal(run_op(1, OP_LOCK, &admin_peer, fill_lock_pass), PROTO_OK);
	assert_true(ops.has_lock_pass);
	/* the lock passphrase is required */
	assert_int_equal(run_op(2, OP_UNLOCK, &admin_peer, NULL), PROTO_E_DENIED);
	assert_int_equal(ops.unlock_failures, 1);
	gate = ops.unlock_gate_ms;
	assert_true(gate > uv_now(loop));
	/* the next one waits for the gate: kept, not answered */
	op_new(&t, 3, OP_UNLOCK, &admin_peer);
	fill_unlock_wrong(&t.q);
	assert_int_equal(submit(&t), -1);
	assert_false(done_has[3]);
	assert_int_equal(wait_for(3), PROTO_E_DENIED);
	assert_true(uv_now(loop) >= gate);
	assert_int_equal(ops.unlock_failures, 2);
	/* the delay grows */
	assert_true(ops.unlock_gate_ms - uv_now(loop) > 100);
	assert_true(ops.locked);
	op_new(&t, 4, OP_UNLOCK, &admin_peer);
	fill_lock_pass(&t.q); /* same layout as unlock's */
	t.q.u.unlock = t.q.u.lock;
	assert_int_equal(submit(&t), -1);
	assert_int_equal(wait_for(4), PROTO_OK);
	assert_false(ops.locked);
	assert_int_equal(ops.unlock_failures, 0);
	assert_int_equal(run_op(5, OP_SIGN, &alice, fill_sign_alice), PROTO_OK);
}

static uint8_t import_seed[32];

static void fill_import(ProtoRequest *q, const char *label)
{
	q->u.key_import.type = PROTO_KEY_ED25519;
	snprintf(q->u.key_import.label, sizeof(q->u.key_import.label), "%s", label);
	q->u.key_import.seed = import_seed;
}

/* ops parked behind an unlock resume in their order, and every one is
 * answered (several pipelined: settle() once re-parked them for ever) */
static void test_parked_in_order(void **state)
{
	TOp t;
	unsigned id = 1;
	static const OpKind kinds[] = { OP_SIGN, OP_KEY_IMPORT, OP_KEY_LIST, OP_SIGN, OP_KEY_IMPORT,
	                                OP_STATUS, OP_LOCK, OP_UNLOCK, OP_SIGN };

	(void)state;
	memset(import_seed, 0x55, sizeof(import_seed));
	assert_int_equal(run_op(50, OP_LOCK, &admin_peer, NULL), PROTO_OK); /* (ids < MAX_DONE) */
	/* the unlock holds the keystore on the pool */
	op_new(&t, id++, OP_UNLOCK, &admin_peer);
	assert_int_equal(submit(&t), -1);
	assert_true(ops.ks_busy);
	for (unsigned i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		char label[16];

		op_new(&t, id, kinds[i], kinds[i] == OP_LOCK || kinds[i] == OP_UNLOCK ? &admin_peer : &alice);
		if (kinds[i] == OP_SIGN)
			fill_sign_alice(&t.q);
		if (kinds[i] == OP_KEY_IMPORT) {
			snprintf(label, sizeof(label), "imp%u", id);
			fill_import(&t.q, label);
		}
		assert_int_equal(submit(&t), -1); /* parked */
		id++;
	}
	assert_int_equal(n_done, 1);
	for (unsigned i = 1; i < id; i++)
		wait_for(i);
	/* every one answered, once; those answered at once (not jobs on the
	 * pool: the signs 2, 5, 10 and the imports 3, 6) in the order they
	 * came; the lock (8) after the signs and imports before it (it waits
	 * for key jobs) */
	assert_int_equal(n_done, 1 + (size_t)(id - 1));
	{
		unsigned last = 0;
		size_t pos[11] = { 0 };

		for (size_t i = 1; i < n_done; i++) {
			unsigned d = done_ids[i];

			assert_true(d >= 1 && d <= 10);
			pos[d] = i;
			if (d != 2 && d != 3 && d != 5 && d != 6 && d != 10) {
				assert_true(d > last);
				last = d;
			}
		}
		for (unsigned d = 1; d <= 10; d++)
			assert_true(pos[d] > 0);
		assert_true(pos[8] > pos[2] && pos[8] > pos[3] && pos[8] > pos[5] && pos[8] > pos[6]);
		assert_true(pos[10] > pos[9]); /* the sign after the second unlock */
	}
	for (size_t i = 1; i < n_done; i++)
		assert_int_equal(done_err[i], PROTO_OK);
	assert_non_null(keystore_find(&ks, "imp3"));
	assert_non_null(keystore_find(&ks, "imp6"));
	assert_null(ops.parked_head);
	assert_int_equal(ops.inflight, 0);
}

/* ---- the agent socket's rows ------------------------------------------------ */

static AgentSession session;

/* an OP_AGENT_* op from @peer for the key with seed @fill */
static TOp *agent_op(TOp *t, unsigned id, OpKind kind, const Peer *peer, uint8_t fill)
{
	uint8_t seed[32];
	sigil_ed25519_expanded ek;

	op_new(t, id, kind, peer);
	t->op.session = &session;
	memset(seed, fill, sizeof(seed));
	sigil_ed25519_expand(&ek, seed);
	memcpy(t->op.pk, ek.pk, 32);
	memcpy(t->op.add.seed, seed, 32);
	sodium_memzero(&ek, sizeof(ek));
	sodium_memzero(seed, sizeof(seed));
	return t;
}

static int run_agent(TOp *t)
{
	int r = submit(t);

	return r < 0 ? wait_for(t->id) : r;
}

/* ssh-add of a new key: owned by the caller; of an existing one: its owner
 * or an admin, with that very key's private half (constraints unchanged
 * otherwise); remove: its owner or an admin */
static void test_agent_add_remove(void **state)
{
	TOp t;
	Key *k;

	(void)state;
	memset(&session, 0, sizeof(session));
	agent_op(&t, 1, OP_AGENT_ADD, &alice, 0x66);
	snprintf(t.op.add.comment, sizeof(t.op.add.comment), "added");
	t.op.add.lifetime = 3600;
	assert_int_equal(run_agent(&t), PROTO_OK);
	k = keystore_find(&ks, "added");
	assert_non_null(k);
	assert_int_equal(k->info.owner, ALICE);
	assert_true(k->memory_only);
	/* bob may not re-add it (not even with its private half), nor remove it */
	agent_op(&t, 2, OP_AGENT_ADD, &bob, 0x66);
	assert_int_equal(run_agent(&t), PROTO_E_DENIED);
	agent_op(&t, 3, OP_AGENT_REMOVE, &bob, 0x66);
	assert_int_equal(run_agent(&t), PROTO_E_DENIED);
	assert_non_null(keystore_find(&ks, "added"));
	/* its owner, with another private half: invalid_key */
	agent_op(&t, 4, OP_AGENT_ADD, &alice, 0x66);
	memset(t.op.add.seed, 0x67, sizeof(t.op.add.seed));
	assert_int_equal(run_agent(&t), PROTO_E_INVALID_KEY);
	/* the admin, with the right one (no constraints: they are replaced) */
	agent_op(&t, 5, OP_AGENT_ADD, &admin_peer, 0x66);
	assert_int_equal(run_agent(&t), PROTO_OK);
	/* its owner removes it */
	agent_op(&t, 6, OP_AGENT_REMOVE, &alice, 0x66);
	assert_int_equal(run_agent(&t), PROTO_OK);
	assert_null(keystore_find(&ks, "added"));
	/* a key with a key file owned by alice: bob cannot remove it */
	agent_op(&t, 7, OP_AGENT_REMOVE, &bob, 0x11);
	assert_int_equal(run_agent(&t), PROTO_E_DENIED);
	assert_non_null(keystore_find(&ks, "alice"));
	/* remove-all by bob removes bob's own key only */
	agent_op(&t, 8, OP_AGENT_REMOVE_ALL, &bob, 0);
	assert_int_equal(run_agent(&t), PROTO_OK);
	assert_null(keystore_find(&ks, "bob"));
	assert_non_null(keystore_find(&ks, "alice"));
	assert_non_null(keystore_find(&ks, "quota"));
}

/* a lifetime constraint removes the key when it runs out (the key's last
 * reference is the keystore's: under Valgrind or a sanitizer, a read of
 * the freed key in the expiry is reported) */
static void test_agent_lifetime(void **state)
{
	TOp t;
	uint64_t deadline;

	(void)state;
	memset(&session, 0, sizeof(session));
	agent_op(&t, 1, OP_AGENT_ADD, &alice, 0x77);
	snprintf(t.op.add.comment, sizeof(t.op.add.comment), "short");
	t.op.add.lifetime = 1;
	assert_int_equal(run_agent(&t), PROTO_OK);
	assert_non_null(keystore_find(&ks, "short"));
	deadline = now_ms() + 10000;
	while (keystore_find(&ks, "short") && now_ms() < deadline)
		uv_run(loop, UV_RUN_ONCE);
	assert_null(keystore_find(&ks, "short"));
	assert_null(ops.timers);
}

/* key.import owned by the caller; a label is never rebound */
static void test_import_owner(void **state)
{
	TOp t;
	Key *k;

	(void)state;
	memset(import_seed, 0x88, sizeof(import_seed));
	op_new(&t, 1, OP_KEY_IMPORT, &bob);
	fill_import(&t.q, "bobs");
	assert_int_equal(submit(&t) < 0 ? wait_for(1) : PROTO_OK, PROTO_OK);
	k = keystore_find(&ks, "bobs");
	assert_non_null(k);
	assert_int_equal(k->info.owner, BOB);
	op_new(&t, 2, OP_KEY_IMPORT, &alice);
	fill_import(&t.q, "alice");
	assert_int_equal(run_op_t(&t), PROTO_E_EXISTS);
	op_new(&t, 3, OP_KEY_IMPORT, &admin_peer);
	fill_import(&t.q, "bobs");
	assert_int_equal(run_op_t(&t), PROTO_E_EXISTS);
}

/* status: users see their own figures only */
static void test_status_figures(void **state)
{
	TOp t;

	(void)state;
	ops.requests = 1234;
	op_new(&t, 1, OP_STATUS, &bob);
	assert_int_equal(submit(&t), PROTO_OK);
	assert_int_equal(t.op.resp.u.status.requests, 0);
	assert_int_equal(t.op.resp.u.status.keys, 3); /* not alice-only */
	op_new(&t, 2, OP_STATUS, &admin_peer);
	assert_int_equal(submit(&t), PROTO_OK);
	assert_true(t.op.resp.u.status.requests >= 1234);
	assert_int_equal(t.op.resp.u.status.keys, 4);
}

static void fill_public_alice_only(ProtoRequest *q)
{
	snprintf(q->u.key_public.label, sizeof(q->u.key_public.label), "alice-only");
}

/* key.public: a key the peer may not see is not found */
static void test_public_hidden(void **state)
{
	(void)state;
	assert_int_equal(run_op(1, OP_KEY_PUBLIC, &bob, fill_public_alice_only), PROTO_E_NOT_FOUND);
	assert_int_equal(run_op(2, OP_KEY_PUBLIC, &alice, fill_public_alice_only), PROTO_OK);
	assert_int_equal(run_op(3, OP_KEY_PUBLIC, &admin_peer, fill_public_alice_only), PROTO_OK);
}

static void fill_export_alice(ProtoRequest *q)
{
	snprintf(q->u.key_export.label, sizeof(q->u.key_export.label), "alice");
}

/* export: the key's rules for everybody (alice's key is not exportable) */
static void test_export_rules(void **state)
{
	TOp t;

	(void)state;
	assert_int_equal(run_op(1, OP_KEY_EXPORT, &alice, fill_export_alice), PROTO_E_DENIED);
	assert_int_equal(run_op(2, OP_KEY_EXPORT, &admin_peer, fill_export_alice), PROTO_E_DENIED);
	/* an exportable one, imported by bob: he gets the seed back */
	memset(import_seed, 0x99, sizeof(import_seed));
	op_new(&t, 3, OP_KEY_IMPORT, &bob);
	fill_import(&t.q, "bob-exp");
	t.q.u.key_import.exportable = true;
	assert_int_equal(run_op_t(&t), PROTO_OK);
	op_new(&t, 4, OP_KEY_EXPORT, &bob);
	snprintf(t.q.u.key_export.label, sizeof(t.q.u.key_export.label), "bob-exp");
	assert_int_equal(ops_submit(&ops, &t.op), false);
	assert_int_equal(t.op.resp.error, PROTO_OK);
	/* (ops_op_deinit wiped it in t_done) */
	assert_true(sodium_is_zero(t.op.resp.u.key_export.seed, 32));
}

/* ---- the upstream agent (OP_AGENT_RELAY) -------------------------------------- */

static Op *relayed[8];
static size_t n_relayed;
static int relay_returns; /* what t_relay answers: 0 (taken) or -1 */

/* the front-end's relay(): records the kept op; the test answers it */
static int t_relay(Op *op)
{
	if (relay_returns == 0) {
		assert_true(n_relayed < 8);
		relayed[n_relayed++] = op;
	}
	return relay_returns;
}

static TOp *relay_op(TOp *t, unsigned id, OpKind kind, const Peer *peer, uint8_t fill)
{
	agent_op(t, id, kind, peer, fill);
	t->op.relay = t_relay;
	t->q.u.sign.message = (ProtoBytes){ message, sizeof(message) };
	return t;
}

/* the newest audit line contains every one of the NULL-terminated strings */
static void assert_last_audit(const char *first, ...)
{
	const char *lines[1] = { NULL };
	va_list ap;

	assert_int_equal(audit_recent(lines, 1), 1);
	va_start(ap, first);
	for (const char *s = first; s; s = va_arg(ap, const char *)) {
		if (!strstr(lines[0], s))
			fail_msg("'%s' is not in the audit line: %s", s, lines[0]);
	}
	va_end(ap);
}

/* the core decides what goes upstream: never a key sigild holds, only for
 * admitted peers, nothing but copies while locked; one audit line
 * (op=relay) with the upstream's result when it ended */
static void test_relay(void **state)
{
	char fp[PROTO_FINGERPRINT_MAX], fpw[PROTO_FINGERPRINT_MAX + 4];
	TOp t;

	(void)state;
	memset(&session, 0, sizeof(session));
	n_relayed = 0;
	relay_returns = 0;
	/* keys sigild holds: its own rules answer, allowed or refused */
	relay_op(&t, 1, OP_AGENT_SIGN, &alice, 0x11);
	assert_int_equal(run_agent(&t), PROTO_OK);
	relay_op(&t, 2, OP_AGENT_SIGN, &bob, 0x22); /* alice-only */
	assert_int_equal(run_agent(&t), PROTO_E_DENIED);
	assert_int_equal(n_relayed, 0);
	/* a key it does not hold: kept and relayed; audited when answered */
	relay_op(&t, 3, OP_AGENT_SIGN, &bob, 0x77);
	assert_int_equal(submit(&t), -1);
	assert_int_equal(n_relayed, 1);
	assert_int_equal(relayed[0]->kind, OP_AGENT_RELAY);
	assert_int_equal(relayed[0]->up.kind, OPS_RELAY_SIGN);
	assert_int_equal(ops.inflight, 1);
	keystore_fingerprint(fp, PROTO_KEY_ED25519, relayed[0]->pk);
	snprintf(fpw, sizeof(fpw), "fp=%s ", fp);
	ops_relay_done(relayed[0], OPS_RELAY_OK);
	assert_true(done_has[3]);
	assert_int_equal(ops.inflight, 0);
	assert_last_audit("uid=41002 ", fpw, "op=relay result=ok", "why=\"sign\"", NULL);
	/* not admitted: nothing relayed */
	relay_op(&t, 4, OP_AGENT_SIGN, &eve, 0x77);
	assert_int_equal(run_agent(&t), PROTO_E_DENIED);
	assert_int_equal(n_relayed, 1);
	/* the upstream cannot take it: ended at once, unreachable */
	relay_returns = -1;
	relay_op(&t, 5, OP_AGENT_REMOVE, &bob, 0x78);
	assert_int_equal(run_agent(&t), PROTO_E_BUSY);
	assert_last_audit("op=relay result=unreachable", "why=\"remove\"", NULL);
	relay_returns = 0;
	/* a listing: kept, sigild's part read when the upstream answered */
	relay_op(&t, 6, OP_AGENT_LIST, &alice, 0);
	assert_int_equal(submit(&t), -1);
	assert_int_equal(n_relayed, 2);
	assert_int_equal(relayed[1]->up.kind, OPS_RELAY_LIST);
	ops_relay_done(relayed[1], OPS_RELAY_OK);
	assert_int_equal(wait_for(6), PROTO_OK);
	/* locked: nothing but copies; the copy's line has the upstream's result */
	assert_int_equal(run_op(7, OP_LOCK, &admin_peer, NULL), PROTO_OK);
	relay_op(&t, 8, OP_AGENT_SIGN, &bob, 0x77);
	assert_int_equal(run_agent(&t), PROTO_E_LOCKED);
	assert_last_audit("uid=41002 ", fpw, "op=relay result=locked", "why=\"sign: ", NULL);
	relay_op(&t, 9, OP_AGENT_RELAY, &alice, 0);
	t.op.up.kind = OPS_RELAY_ADD;
	snprintf(t.op.up.what, sizeof(t.op.up.what), "add ssh-rsa");
	assert_int_equal(run_agent(&t), PROTO_E_LOCKED);
	assert_int_equal(n_relayed, 2);
	relay_op(&t, 10, OP_AGENT_RELAY, &admin_peer, 0);
	t.op.up.kind = OPS_RELAY_COPY;
	snprintf(t.op.up.what, sizeof(t.op.up.what), "lock");
	assert_int_equal(submit(&t), -1);
	assert_int_equal(n_relayed, 3);
	ops_relay_done(relayed[2], OPS_RELAY_FAILED);
	assert_int_equal(wait_for(10), PROTO_OK);
	assert_last_audit("uid=0 ", "op=relay result=failed", "why=\"lock\"", NULL);
	assert_int_equal(run_op(11, OP_UNLOCK, &admin_peer, NULL), PROTO_OK);
}

/* the auto-lock clock restarts at unlock: no lock again at once */
static void test_auto_lock_restarts(void **state)
{
	uint64_t now = uv_now(loop);

	(void)state;
	ops.auto_lock_ms = 1000;
	ops.last_key_use_ms = now > 2000 ? now - 2000 : 0;
	assert_true(now - ops.last_key_use_ms >= ops.auto_lock_ms);
	ops_tick(&ops);
	assert_true(ops.locked); /* no key used for 2 s */
	assert_int_equal(run_op(1, OP_UNLOCK, &admin_peer, NULL), PROTO_OK);
	assert_false(ops.locked);
	ops_tick(&ops);
	assert_false(ops.locked);
	assert_int_equal(run_op(2, OP_SIGN, &alice, fill_sign_alice), PROTO_OK);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_not_admitted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_admin_only, setup, teardown),
		cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
		cmocka_unit_test_setup_teardown(test_list_filtered, setup, teardown),
		cmocka_unit_test_setup_teardown(test_sign_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_quota_not_spent_by_busy, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unlock_delay, setup, teardown),
		cmocka_unit_test_setup_teardown(test_parked_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_add_remove, setup, teardown),
		cmocka_unit_test_setup_teardown(test_agent_lifetime, setup, teardown),
		cmocka_unit_test_setup_teardown(test_import_owner, setup, teardown),
		cmocka_unit_test_setup_teardown(test_status_figures, setup, teardown),
		cmocka_unit_test_setup_teardown(test_public_hidden, setup, teardown),
		cmocka_unit_test_setup_teardown(test_export_rules, setup, teardown),
		cmocka_unit_test_setup_teardown(test_auto_lock_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(test_relay, setup, teardown),
	};

	log_set_max_priority(LOG_PRIO_ERR - 1);
	if (sodium_init() < 0)
		return 1;
	if (secmem_setup(true) != 0)
		return 1;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
