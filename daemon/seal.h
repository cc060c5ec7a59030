/* SPDX-License-Identifier: MIT */
/*
 * seal.h - the master key that seals key files at rest (docs/security.md)
 *
 * Sources, in order: systemd credentials ($CREDENTIALS_DIRECTORY/master-key),
 * --master-key-file FILE, a passphrase (Argon2id parameters, salt and a
 * check value in <state-dir>/passphrase.params; the daemon starts locked),
 * else a master key generated in <state-dir>/master.key. --ephemeral: no
 * files at all, keys live in memory only.
 *
 * Each key file is sealed with XChaCha20-Poly1305 under the master key with
 * a random 24-byte nonce; the caller passes the file header as associated
 * data.
 */
#ifndef SIGIL_DAEMON_SEAL_H
#define SIGIL_DAEMON_SEAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SEAL_KEY_LEN 32
#define SEAL_NONCE_LEN 24
#define SEAL_TAG_LEN 16
/* a sealed 32-byte seed: nonce, ciphertext, tag */
#define SEAL_BOX_LEN (SEAL_NONCE_LEN + 32 + SEAL_TAG_LEN)

#define SEAL_MASTER_FILE "master.key"
#define SEAL_PARAMS_FILE "passphrase.params"
#define SEAL_CREDENTIAL "master-key"

typedef enum SealSource {
	SEAL_SRC_CREDENTIAL,
	SEAL_SRC_FILE,
	SEAL_SRC_PASSPHRASE,
	SEAL_SRC_GENERATED,
	SEAL_SRC_EPHEMERAL,
} SealSource;

typedef struct SealOptions {
	const char *master_key_file;    /* --master-key-file */
	bool passphrase;                /* --passphrase: start locked, unlock supplies it */
	bool ephemeral;                 /* --ephemeral */
	unsigned long long pw_ops;      /* Argon2id opslimit for a new passphrase (0: INTERACTIVE) */
	size_t pw_mem;                  /* Argon2id memlimit in bytes (0: INTERACTIVE) */
} SealOptions;

typedef struct Seal {
	SealSource src;
	int statefd;                    /* the state directory (-1 when ephemeral) */
	char *path;                     /* credential or --master-key-file path */
	uint8_t *mk;                    /* secmem; NULL while locked */
	unsigned long long pw_ops;
	size_t pw_mem;
} Seal;

#define SEAL_NULL(_x) { .statefd = -1 }

enum {
	_SEAL_E_SUCCESS,
	SEAL_E_WRONG,      /* wrong passphrase (or a master key that opens nothing); message logged */
	SEAL_E_INVALID,    /* a master key file or parameter file is malformed; message logged */
	SEAL_E_NEED_PASSPHRASE, /* unlock without a passphrase in passphrase mode */
	SEAL_E_DENIED,     /* rekey: the new master key file is unusable (fsafe.c); details logged */
};

const char *seal_source_name(SealSource s);

/**
 * seal_setup() - choose the master key source and load the key, except in
 * passphrase mode (the seal then starts locked).
 * @statefd: the state directory, kept (not closed) by the Seal
 * Return: 0, SEAL_E_INVALID, or negative errno.
 */
int seal_setup(Seal *s, int statefd, const SealOptions *opt);
void seal_deinit(Seal *s);

/* wipe the master key (passphrase, file and credential sources: it is read
 * again by seal_unlock; generated and ephemeral keep theirs) */
void seal_lock(Seal *s);

/**
 * seal_unlock() - get the master key back. Passphrase mode: derive it with
 * Argon2id and check it against passphrase.params (created on the first
 * unlock). Other sources: read the source again; @pass is ignored.
 * Return: 0, SEAL_E_WRONG, SEAL_E_NEED_PASSPHRASE, SEAL_E_INVALID, or -errno.
 */
int seal_unlock(Seal *s, const uint8_t *pass, size_t pass_len);

/**
 * seal_new_passphrase() - derive a master key from a new passphrase with a
 * new salt. The new parameter file is written to passphrase.params.new
 * (fsync'd).
 * @mkp: receives the new key (free it with mk_free)
 */
int seal_new_passphrase(Seal *s, const uint8_t *pass, size_t pass_len, uint8_t **mkp);

/*
 * Rekey (crash-safe; docs/security.md). The target: a new master key file
 * (FILE, from any source), a new passphrase (PASSPHRASE, from any source),
 * or a new random key (GENERATED, from a generated key only).
 * seal_rekey_begin() makes the new key N (a new passphrase:
 * passphrase.params.new) and records it in rekey.pending, sealed under the
 * current key O, with the target. The caller re-seals every key file under
 * N (each an atomic rename), then seal_rekey_commit() writes master.check
 * under N (the commit point: from then on N is the master key), puts N in
 * place (master.key, or passphrase.params; the old source's files in the
 * state directory are removed) and removes rekey.pending.
 * At any moment every key file opens under O or N. After a crash, with O:
 * seal_rekey_pending() gives N back (SEAL_PENDING_OPEN) and
 * seal_rekey_committed(N) says whether the commit point was passed (roll
 * forward with seal_rekey_finish()) or not (roll back, or forward for a
 * generated key); with N: the record does not open (SEAL_PENDING_FOREIGN)
 * but master.check does (seal_rekey_committed(current key)).
 * seal_check(): the current key against master.check (a completed rekey
 * to another key, and sigild given the old one: SEAL_E_WRONG with an error
 * logged that names the key to use).
 */
#define SEAL_REKEY_FILE "rekey.pending"
#define SEAL_CHECK_FILE "master.check"

typedef struct SealRekey {
	SealSource to;   /* SEAL_SRC_FILE, _PASSPHRASE or _GENERATED */
	char *path;      /* FILE: the new key's file (malloc'd) */
	uint8_t *n;      /* the new key (mk_alloc) */
} SealRekey;

typedef enum SealPending {
	SEAL_PENDING_NONE,    /* no rekey.pending */
	SEAL_PENDING_OPEN,    /* it opens under the current key: *rk filled */
	SEAL_PENDING_FOREIGN, /* it does not (the current key is N, or wrong) */
	SEAL_PENDING_FOREIGN_V1, /* the same, in the format of an older sigild */
} SealPending;

/* @pass: a new passphrase, or @new_key_file: an absolute path (neither: a
 * new generated key, generated source only). SEAL_E_INVALID with @why for
 * a bad request; SEAL_E_DENIED with @why (one message whatever is wrong)
 * for a new master key file sigild may not use; SEAL_E_NEED_PASSPHRASE; or
 * -errno. */
int seal_rekey_begin(Seal *s, const uint8_t *pass, size_t pass_len, const char *new_key_file, SealRekey *rk,
                     char *why, size_t why_len);
/* the commit point, then seal_rekey_finish(adopt); frees *rk on success */
int seal_rekey_commit(Seal *s, SealRekey *rk);
/* put N in place for rk->to and remove rekey.pending (idempotent); adopt:
 * the seal takes N, the target source and path. Frees *rk on success. */
int seal_rekey_finish(Seal *s, SealRekey *rk, bool adopt);
/* remove rekey.pending and passphrase.params.new; frees *rk */
void seal_rekey_abort(Seal *s, SealRekey *rk);
void seal_rekey_free(SealRekey *rk);
/* with the current key unlocked: 0 (*state), SEAL_E_INVALID or -errno */
int seal_rekey_pending(Seal *s, SealRekey *rk, SealPending *state);
/* does master.check open under @key? 1 (rk->to and rk->path set from it
 * when rk is not NULL), 0 (no, or no master.check), or -errno */
int seal_rekey_committed(Seal *s, const uint8_t *key, SealRekey *rk);
/* 0 (no master.check, or it opens under the current key), SEAL_E_WRONG
 * (error logged: which key to use), SEAL_E_INVALID, or -errno */
int seal_check(Seal *s);
/* there is no key where the source says (no master.key, no
 * passphrase.params): SEAL_E_WRONG naming the key of the last rekey if
 * master.check exists, else 0 (a first start) */
int seal_check_missing_key(Seal *s);

/* guarded locked memory for a master key (sodium_malloc); mk_free wipes
 * and frees, NULL is a no-op, returns NULL */
uint8_t *mk_alloc(void);
uint8_t *mk_free(uint8_t *mk);

/* seal 32 bytes: box = nonce || ciphertext || tag */
void seal_box(uint8_t box[SEAL_BOX_LEN], const uint8_t mk[SEAL_KEY_LEN], const uint8_t *ad, size_t ad_len,
              const uint8_t seed[32]);
/* open a box; 0, or -1 if it does not authenticate (wrong key, tampered) */
int seal_open(uint8_t seed[32], const uint8_t mk[SEAL_KEY_LEN], const uint8_t *ad, size_t ad_len,
              const uint8_t box[SEAL_BOX_LEN]);

/* write a file atomically in dirfd: tmp, fsync, rename, fsync dir. 0 or -errno */
int seal_write_file(int dirfd, const char *name, const uint8_t *data, size_t len);

#endif /* SIGIL_DAEMON_SEAL_H */
