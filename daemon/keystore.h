/* SPDX-License-Identifier: MIT */
/*
 * keystore.h - the keys sigild holds: public data in ordinary memory,
 * secrets in secmem, one key file each in <state-dir>/keys/
 *
 * Threading: the Keystore and the Key list belong to the loop thread.
 * keystore_materialize() runs on a worker thread on a pending Key that no
 * other thread touches until it is committed. Key references are taken and
 * dropped on the loop thread only.
 */
#ifndef SIGIL_DAEMON_KEYSTORE_H
#define SIGIL_DAEMON_KEYSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sigil/crypto.h>

#include "policy.h"
#include "proto.h"
#include "seal.h"

/*
 * API changes for sealing at rest (issue 6), all compatible:
 * - KeySecret gained mk[] (a copy of the master key while a pending key is
 *   being materialized; zero otherwise).
 * - Key gained wipe_pending (locked while in use: the secret is wiped when
 *   the last in-flight reference is dropped, see key_unref()).
 * - Keystore gained seal, statefd, locked; keystore_open() uses the default
 *   master key sources, keystore_open_sealed() takes SealOptions.
 * - New: keystore_lock(), keystore_unlock(), KEYSTORE_E_LOCKED (from
 *   keystore_reserve() while locked), KEYSTORE_E_WRONG.
 * - Key gained policy and use (policy counters); info.policy points to
 *   key->policy when the key has one (set both on a pending key before
 *   keystore_materialize(); stored in the authenticated header of the key
 *   file).
 * - keystore_rekey() takes a new master key file and an error message
 *   buffer (rekey from and to every source).
 * - New: keystore_rekey() (crash-safe re-seal under a new master key; an
 *   interrupted one is settled inside keystore_open*() and keystore_unlock()).
 * - A Key's secret is NULL while the store is locked: check key->secret
 *   (or ks->locked) before a private-key operation.
 */

/* lives in secmem */
typedef struct KeySecret {
	uint8_t seed[32];              /* ed25519 seed, or the x25519 scalar */
	sigil_ed25519_expanded ed;     /* ed25519 only: the cached expanded key */
	uint8_t mk[SEAL_KEY_LEN];      /* pending keys: the master key to seal with */
} KeySecret;

typedef struct Key {
	unsigned n_refs;
	bool pending;       /* being generated/imported: label reserved, invisible */
	bool removed;       /* no longer in the store (deleted) */
	ProtoKeyInfo info;
	ProtoKeyPolicy policy; /* .set false: no policy (info.policy NULL) */
	PolicyUse use;      /* policy counters (loop thread) */
	bool wipe_pending;  /* locked while in use: wipe the secret at the last unref */
	bool memory_only;   /* never written to keys/ (ssh-added with constraints, or
	                     * ssh_agent_persist off): gone at lock, rekey and restart */
	KeySecret *secret;  /* NULL until materialized, and while locked */
	void *cons;         /* the operations core's constraints of the key (ops.c), or NULL */
	void (*cons_free)(void *cons); /* called with cons when the key is freed */
} Key;

typedef struct Keystore {
	int dirfd;          /* <state-dir>/keys (-1 when ephemeral) */
	int statefd;        /* <state-dir> (-1 when ephemeral) */
	Seal seal;          /* the master key */
	bool locked;        /* secrets wiped; private-key operations refused */
	Key **keys;
	size_t n_keys;
	size_t cap;
} Keystore;

#define KEYSTORE_NULL(_x) { .dirfd = -1, .statefd = -1, .seal = SEAL_NULL((_x).seal) }

enum {
	_KEYSTORE_E_SUCCESS,
	KEYSTORE_E_EXISTS,    /* a key (or a pending one) has this label */
	KEYSTORE_E_NOT_FOUND, /* no such key */
	KEYSTORE_E_UNSAFE,    /* the state directory is open to others; message logged */
	KEYSTORE_E_IN_USE,    /* another sigild holds the state directory; message logged */
	KEYSTORE_E_LOCKED,    /* the store is locked */
	KEYSTORE_E_WRONG,     /* unlock: wrong passphrase or master key; nothing changed */
	KEYSTORE_E_NEED_PASSPHRASE, /* unlock: the keys are sealed under a passphrase */
	KEYSTORE_E_INVALID,   /* a master key or parameter file is malformed; message logged */
	KEYSTORE_E_DENIED,    /* rekey: the new master key file may not be used (why says so) */
};

/**
 * keystore_open() - create or check the state directory and load its keys.
 * The directory (and keys/ inside) is created with mode 0700; an existing
 * one must belong to us and not be readable or writable by group or others.
 * Files that are not valid key files are skipped with a warning. The keys
 * directory is locked (flock) for as long as the store is open.
 * Return: 0, KEYSTORE_E_UNSAFE, KEYSTORE_E_IN_USE, or negative errno.
 */
int keystore_open(Keystore *ks, const char *state_dir);
/* the same with the master key options (seal.h). Passphrase mode starts
 * locked: key.list works from the (authenticated at unlock) headers. */
int keystore_open_sealed(Keystore *ks, const char *state_dir, const SealOptions *opt);

/**
 * keystore_lock() - wipe every decrypted key (in-flight ones when their
 * operation ends) and the master key where it can be read again. Memory-only
 * keys cannot be opened again: they are dropped (each is returned through
 * @dropped, if not NULL, before it goes, for the caller's audit).
 */
void keystore_lock(Keystore *ks, void (*dropped)(void *ctx, const Key *key), void *ctx);

/**
 * keystore_unlock() - get the master key back and open every key file.
 * Keys whose file no longer opens (changed on disk) are dropped with an
 * error logged. If no key opens, the master key is taken to be wrong.
 * Return: 0, KEYSTORE_E_WRONG, KEYSTORE_E_NEED_PASSPHRASE, KEYSTORE_E_INVALID,
 * or negative errno.
 */
int keystore_unlock(Keystore *ks, const uint8_t *pass, size_t pass_len);

/**
 * keystore_rekey() - re-seal every key under a new master key: the key in
 * @new_key_file (an absolute path; from any source), a new passphrase
 * @pass (from any source), or with neither a new random key (generated
 * master key only). The seal then uses the new key and its source (the
 * admin points the configuration at it: docs/security.md). Crash-safe
 * (seal.h). Unlocked, and no key being generated.
 * Return: 0, KEYSTORE_E_LOCKED, KEYSTORE_E_NEED_PASSPHRASE,
 * KEYSTORE_E_INVALID (a bad request: @why says what), KEYSTORE_E_DENIED
 * (a new master key file sigild may not use: @why), -EBUSY (a key is
 * being generated), or negative errno (nothing changed).
 */
int keystore_rekey(Keystore *ks, const uint8_t *pass, size_t pass_len, const char *new_key_file, char *why,
                   size_t why_len);
/* drops every key (secrets wiped once unreferenced) and closes the directory */
void keystore_close(Keystore *ks);

/* a committed key, or NULL (pending keys are not found) */
Key *keystore_find(Keystore *ks, const char *label);
size_t keystore_count(const Keystore *ks);

/**
 * keystore_reserve() - add a pending key holding @label.
 * @owner:       the uid the key belongs to (stored in its key file)
 * @memory_only: never write a key file for it
 * @keyp: the new key, with one reference for the caller
 * Return: 0, KEYSTORE_E_EXISTS (also when an unopened key file has this
 * label), KEYSTORE_E_LOCKED, or -ENOMEM.
 */
int keystore_reserve(Keystore *ks, const char *label, ProtoKeyType type, bool exportable, uint32_t owner,
                     bool memory_only, Key **keyp);

/**
 * keystore_materialize() - fill a pending key: random seed (when @seed is
 * NULL) or the given one, the public key, the expanded key, the fingerprint,
 * and write its key file. Safe on a worker thread. Constant time in the seed.
 * Return: 0 or negative errno (-ENOMEM for secure memory, I/O errors).
 */
int keystore_materialize(Keystore *ks, Key *key, const uint8_t *seed);

/* make a pending key visible (after materialize succeeded) */
void keystore_commit(Keystore *ks, Key *key);
/* drop a pending key (after materialize failed) */
void keystore_abort(Keystore *ks, Key *key);

/**
 * keystore_delete() - remove a key and its file. In-flight operations that
 * hold a reference finish; the secret is wiped when the last one is dropped.
 * Return: 0, KEYSTORE_E_NOT_FOUND, or negative errno (file removal failed;
 * the key stays).
 */
int keystore_delete(Keystore *ks, const char *label);

Key *key_ref(Key *key);
Key *key_unref(Key *key);

/* "SHA256:<base64 without padding>" as ssh-keygen -l prints it */
void keystore_fingerprint(char out[PROTO_FINGERPRINT_MAX], ProtoKeyType type, const uint8_t pk[32]);

#endif /* SIGIL_DAEMON_KEYSTORE_H */
