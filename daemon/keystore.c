/* SPDX-License-Identifier: MIT */
/*
 * keystore.c - keys in memory and on disk
 */
#include <dirent.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "keyfile.h"
#include "keystore.h"
#include "log.h"
#include "secmem.h"

void keystore_fingerprint(char out[PROTO_FINGERPRINT_MAX], ProtoKeyType type, const uint8_t pk[32])
{
	/* OpenSSH public key blob: string "ssh-ed25519", string pk */
	static const uint8_t prefix[] = { 0, 0, 0, 11, 's', 's', 'h', '-', 'e', 'd', '2', '5', '5', '1', '9', 0, 0, 0, 32 };
	uint8_t blob[sizeof(prefix) + 32], digest[crypto_hash_sha256_BYTES];

	if (type == PROTO_KEY_ED25519) {
		memcpy(blob, prefix, sizeof(prefix));
		memcpy(blob + sizeof(prefix), pk, 32);
		crypto_hash_sha256(digest, blob, sizeof(blob));
	} else {
		crypto_hash_sha256(digest, pk, 32);
	}
	memcpy(out, "SHA256:", 7);
	sodium_bin2base64(out + 7, PROTO_FINGERPRINT_MAX - 7, digest, sizeof(digest),
	                  sodium_base64_VARIANT_ORIGINAL_NO_PADDING);
}

Key *key_ref(Key *key)
{
	if (key)
		key->n_refs++;
	return key;
}

Key *key_unref(Key *key)
{
	if (!key)
		return NULL;
	if (--key->n_refs == 0) {
		key->secret = secmem_free(key->secret);
		if (key->cons_free)
			key->cons_free(key->cons);
		free(key);
	} else if (key->n_refs == 1 && key->wipe_pending && !key->pending) {
		/* locked while in use: only the store holds it now */
		key->secret = secmem_free(key->secret);
		key->wipe_pending = false;
	}
	return NULL;
}

/* mkdir -p with mode 0700 for the missing components */
static int mkdir_parents(const char *path)
{
	char buf[4096];
	size_t n = strlen(path);

	if (n == 0 || n >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, n + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0700) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int check_private_dir(int fd, const char *what)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISDIR(st.st_mode)) {
		log_err("%s is not a directory", what);
		return KEYSTORE_E_UNSAFE;
	}
	if (st.st_uid != geteuid()) {
		log_err("%s belongs to uid %u, not to sigild's uid %u", what, (unsigned)st.st_uid, (unsigned)geteuid());
		return KEYSTORE_E_UNSAFE;
	}
	if (st.st_mode & (S_IRGRP | S_IWGRP | S_IROTH | S_IWOTH)) {
		log_err("%s has mode %04o: group or others can read or write it; chmod 700 it",
		        what, (unsigned)(st.st_mode & 07777));
		return KEYSTORE_E_UNSAFE;
	}
	return 0;
}

static int keystore_add(Keystore *ks, Key *key)
{
	if (ks->n_keys == ks->cap) {
		size_t cap = ks->cap ? 2 * ks->cap : 16;
		Key **k = realloc(ks->keys, cap * sizeof(*k));

		if (!k)
			return -ENOMEM;
		ks->keys = k;
		ks->cap = cap;
	}
	ks->keys[ks->n_keys++] = key;
	return 0;
}

static void keystore_drop(Keystore *ks, Key *key)
{
	for (size_t i = 0; i < ks->n_keys; i++) {
		if (ks->keys[i] == key) {
			ks->keys[i] = ks->keys[--ks->n_keys];
			key->removed = true;
			key_unref(key);
			return;
		}
	}
}

/*
 * The sign count of a key with a max_signs rule survives restarts:
 * keys/<label>.uses holds it (8 bytes, big-endian) and the key's public key
 * (32 bytes, so a file left by a deleted key of the same label is not
 * taken). policy_check() calls uses_persist() with a new reservation
 * (policy.h) before it allows an operation past the last one: a write of
 * the count in place and fdatasync. At a clean stop the exact count is
 * written back. A missing or foreign file makes the key count as used up
 * (an error is logged): the count can only be too high, never too low.
 */
#define USES_SUFFIX ".uses"
#define USES_LEN 40

static void uses_name(char name[PROTO_LABEL_MAX + 8], const char *label)
{
	snprintf(name, PROTO_LABEL_MAX + 8, "%s" USES_SUFFIX, label);
}

static int uses_persist(void *ctx, const PolicyUse *use, uint64_t signs)
{
	Keystore *ks = ctx;
	const Key *key = (const Key *)((const char *)use - offsetof(Key, use));
	char name[PROTO_LABEL_MAX + 8];
	uint8_t buf[8];
	int fd, r = 0;

	uses_name(name, key->info.label);
	for (int i = 0; i < 8; i++)
		buf[i] = (uint8_t)(signs >> (56 - 8 * i));
	fd = openat(ks->dirfd, name, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (pwrite(fd, buf, sizeof(buf), 0) != (ssize_t)sizeof(buf))
		r = errno ? -errno : -EIO;
	else if (fdatasync(fd) < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		log_err("cannot record the sign count of key '%s' in keys/%s: %s; the key is refused until it can",
		        key->info.label, name, strerror(-r));
	return r;
}

static void uses_attach(Keystore *ks, Key *key)
{
	if (ks->dirfd < 0 || !key->policy.set || !key->policy.max_signs)
		return;
	key->use.persist = uses_persist;
	key->use.ctx = ks;
	key->use.self = &key->use;
}

/* a new key with a max_signs rule: its count file, 0 (worker thread) */
static int uses_create(Keystore *ks, const Key *key)
{
	char name[PROTO_LABEL_MAX + 8];
	uint8_t buf[USES_LEN] = { 0 };

	if (ks->dirfd < 0 || !key->policy.set || !key->policy.max_signs)
		return 0;
	uses_name(name, key->info.label);
	memcpy(buf + 8, key->info.public_key, 32);
	return seal_write_file(ks->dirfd, name, buf, sizeof(buf));
}

/* the count of a key read from disk (loop thread) */
static void uses_load(Keystore *ks, Key *key)
{
	char name[PROTO_LABEL_MAX + 8];
	uint8_t buf[USES_LEN + 1];
	ssize_t n = -1;
	int fd;

	if (ks->dirfd < 0 || !key->policy.set || !key->policy.max_signs)
		return;
	uses_name(name, key->info.label);
	fd = openat(ks->dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd >= 0) {
		n = pread(fd, buf, sizeof(buf), 0);
		close(fd);
	}
	if (n == USES_LEN && memcmp(buf + 8, key->info.public_key, 32) == 0) {
		/* a reservation left by a crash counts as used */
		key->use.signs = 0;
		for (int i = 0; i < 8; i++)
			key->use.signs = (key->use.signs << 8) | buf[i];
	} else {
		log_err("key '%s' has a max_signs rule and keys/%s is %s: its uses are unknown, so it counts as used "
		        "up", key->info.label, name, fd < 0 ? "missing" : "not its count file");
		key->use.signs = key->policy.max_signs;
	}
	key->use.reserved = key->use.signs;
	uses_attach(ks, key);
}

/* a clean stop: give back what was reserved and not used */
static void uses_settle(Keystore *ks)
{
	for (size_t i = 0; i < ks->n_keys; i++) {
		Key *key = ks->keys[i];

		if (key->use.persist && key->use.reserved > key->use.signs &&
		    uses_persist(ks, &key->use, key->use.signs) == 0)
			key->use.reserved = key->use.signs;
	}
}

/* public key, expanded key, fingerprint from secret->seed */
static void key_derive(Key *key)
{
	KeySecret *s = key->secret;

	if (key->info.type == PROTO_KEY_ED25519) {
		sigil_ed25519_expand(&s->ed, s->seed);
		memcpy(key->info.public_key, s->ed.pk, 32);
	} else {
		sigil_x25519_public(key->info.public_key, s->seed);
	}
	keystore_fingerprint(key->info.fingerprint, key->info.type, key->info.public_key);
}

/* fill in meta for the key file */
static void key_meta(const Key *key, KeyFileMeta *meta)
{
	memset(meta, 0, sizeof(*meta));
	meta->type = key->info.type;
	memcpy(meta->label, key->info.label, sizeof(meta->label));
	meta->exportable = key->info.exportable;
	meta->created = key->info.created;
	memcpy(meta->public_key, key->info.public_key, 32);
	meta->policy_len = (size_t)policy_encode(meta->policy, sizeof(meta->policy), &key->policy);
	meta->has_owner = true;
	meta->owner = key->info.owner;
}

/*
 * key_open() - open the key file of @key with the master key (loop thread).
 * Format 1 files are sealed on the way. Return: 0, KEYFILE_E_* (message
 * logged), or negative errno.
 */
static int key_open(Keystore *ks, Key *key, const char *name)
{
	KeyFileMeta meta;
	uint8_t pk[32];
	int r;

	if (!key->secret) {
		key->secret = secmem_alloc(sizeof(KeySecret));
		if (!key->secret)
			return -ENOMEM;
	}
	r = keyfile_read_sealed(ks->dirfd, name, ks->seal.mk, &meta, key->secret->seed);
	if (r == KEYFILE_E_AUTH)
		log_err("refusing keys/%s: it does not open under the master key (%s): the file was changed, "
		        "or it was sealed under another master key", name, seal_source_name(ks->seal.src));
	else if (r > 0)
		log_err("refusing keys/%s: not a valid key file", name);
	else if (r < 0)
		log_err("refusing keys/%s: %s", name, strerror(-r));
	if (r == 0) {
		ProtoKeyPolicy pol;

		if (policy_decode(&pol, meta.policy, meta.policy_len) < 0 ||
		    memcmp(&pol, &key->policy, sizeof(pol)) != 0)
			r = KEYFILE_E_INVALID;
	}
	if (r == 0 && (meta.type != key->info.type || strcmp(meta.label, key->info.label) != 0 ||
	               meta.created != key->info.created || meta.exportable != key->info.exportable ||
	               (meta.has_owner ? meta.owner : (uint32_t)geteuid()) != key->info.owner)) {
		log_err("refusing keys/%s: its header changed since it was loaded", name);
		r = KEYFILE_E_INVALID;
	}
	if (r) {
		key->secret = secmem_free(key->secret);
		return r;
	}
	memcpy(pk, key->info.public_key, 32);
	key_derive(key);
	if (meta.version == 2 && sodium_memcmp(pk, key->info.public_key, 32) != 0) {
		log_err("refusing keys/%s: its seed does not give the public key in its header", name);
		key->secret = secmem_free(key->secret);
		return KEYFILE_E_INVALID;
	}
	if (meta.version == 1) {
		key_meta(key, &meta);
		r = keyfile_write_sealed(ks->dirfd, &meta, ks->seal.mk, key->secret->seed);
		if (r < 0)
			log_err("cannot seal keys/%s (format 1, unsealed): %s; it stays unsealed", name, strerror(-r));
		else
			log_warn("sealed keys/%s: it was in format 1 (seed in plain form on disk), now format 2 "
			         "under the %s", name, seal_source_name(ks->seal.src));
	}
	return 0;
}

/*
 * reseal_dir() - re-seal under @to every key file in keys/ that opens under
 * @from (format 2). *failedp: how many opened but could not be written.
 * Return: how many were re-sealed, or -ENOMEM.
 */
static long reseal_dir(Keystore *ks, const uint8_t *from, const uint8_t *to, size_t *failedp)
{
	uint8_t *seed = secmem_alloc(32);
	long moved = 0;
	DIR *d;
	struct dirent *de;
	int fd = dup(ks->dirfd);

	*failedp = 0;
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!seed || !d) {
		if (fd >= 0 && !d)
			close(fd);
		secmem_free(seed);
		return -ENOMEM;
	}
	rewinddir(d); /* the dup shares its offset with dirfd */
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		KeyFileMeta meta;

		if (l <= 4 || strcmp(de->d_name + l - 4, KEYFILE_SUFFIX) != 0)
			continue; /* temporaries end in .key.tmp */
		if (keyfile_read_sealed(ks->dirfd, de->d_name, from, &meta, seed) != 0 || meta.version != 2)
			continue; /* under @to already, or refused later with a message */
		if (keyfile_write_sealed(ks->dirfd, &meta, to, seed) == 0)
			moved++;
		else
			(*failedp)++;
	}
	closedir(d);
	secmem_free(seed);
	return moved;
}

/* what the admin must do after a rekey to another kind of master key */
static void rekey_advice(const Seal *s, SealSource configured)
{
	if (s->src == SEAL_SRC_FILE && configured != SEAL_SRC_FILE)
		log_warn("the keys are now sealed under the master key file %s: set master_key_file (or "
		         "--master-key-file, or the credential master-key) to it before the next start", s->path);
	else if (s->src == SEAL_SRC_FILE)
		log_warn("the keys are now sealed under the master key file %s: point master_key_file / "
		         "--master-key-file / LoadCredentialEncrypted= at it before the next start", s->path);
	else if (s->src == SEAL_SRC_PASSPHRASE && configured != SEAL_SRC_PASSPHRASE)
		log_warn("the keys are now sealed under a passphrase: drop master_key_file / --master-key-file and "
		         "the credential master-key before the next start; sigild then starts locked");
}

/*
 * rekey_recover() - settle a rekey that a crash interrupted (seal.h), with
 * the current master key unlocked, before any key is opened (loop thread);
 * without one, check the current key against master.check.
 * - rekey.pending opens under the current key (it is the old key O): if
 *   master.check opens under N the rekey was committed: re-seal the rest
 *   under N and finish it (roll forward; the seal takes N). If not: a new
 *   generated key rolls forward as well (nobody has to learn it); a new
 *   passphrase or key file rolls back (a rekey that was never acknowledged
 *   did not happen): files under N are re-sealed under O.
 * - it does not open, and master.check opens under the current key (it is
 *   N): the rekey was committed; tidy up.
 * - neither: the key is wrong. Nothing is touched; SEAL_E_WRONG with an
 *   error logged. (A record of an older sigild, format 1, without
 *   master.check: that sigild committed before it removed the record.)
 * Return: 0, SEAL_E_WRONG, SEAL_E_INVALID, or -errno.
 */
static int rekey_recover(Keystore *ks)
{
	Seal *s = &ks->seal;
	SealSource configured = s->src;
	SealRekey rk;
	SealPending st;
	size_t failed = 0;
	long moved;
	int r, c;

	r = seal_rekey_pending(s, &rk, &st);
	if (r)
		return r;
	if (st == SEAL_PENDING_NONE)
		return seal_check(s);
	if (st != SEAL_PENDING_OPEN) {
		SealRekey done = { 0 };

		c = seal_rekey_committed(s, s->mk, &done);
		if (c < 0)
			return c;
		if (c == 0) {
			r = seal_check(s);
			if (r)
				return r;
			if (st == SEAL_PENDING_FOREIGN) {
				log_err("an interrupted rekey (%s) is not finished and this master key (%s) is not its old "
				        "one: start or unlock sigild with the old master key or passphrase, which rolls "
				        "the rekey back; nothing was changed", SEAL_REKEY_FILE, seal_source_name(s->src));
				return SEAL_E_WRONG;
			}
		}
		/* (the current key is N: nothing to re-seal) */
		r = c ? seal_rekey_finish(s, &done, false) : (unlinkat(ks->statefd, SEAL_REKEY_FILE, 0) < 0 ? -errno : 0);
		seal_rekey_free(&done);
		if (r < 0)
			return r;
		log_info("removed %s: the rekey it records was committed", SEAL_REKEY_FILE);
		return 0;
	}
	c = seal_rekey_committed(s, rk.n, NULL);
	if (c < 0) {
		seal_rekey_free(&rk);
		return c;
	}
	if (c || rk.to == SEAL_SRC_GENERATED) {
		moved = reseal_dir(ks, s->mk, rk.n, &failed);
		if (moved < 0) {
			seal_rekey_free(&rk);
			return (int)moved;
		}
		r = c ? seal_rekey_finish(s, &rk, true) : seal_rekey_commit(s, &rk);
		if (r < 0) {
			seal_rekey_free(&rk);
			log_err("cannot finish the interrupted rekey: %s", strerror(-r));
			return r;
		}
		log_warn("finished an interrupted rekey: %ld key files re-sealed under the new master key (%s)", moved,
		         seal_source_name(s->src));
		rekey_advice(s, configured);
		return 0;
	}
	moved = reseal_dir(ks, rk.n, s->mk, &failed);
	if (moved < 0 || failed) {
		seal_rekey_free(&rk);
		if (moved < 0)
			return (int)moved;
		log_err("cannot roll back the interrupted rekey: %zu key files stay under the new master key; %s "
		        "records it", failed, SEAL_REKEY_FILE);
		return 0;
	}
	seal_rekey_abort(s, &rk);
	log_warn("rolled back an interrupted rekey: %ld key files re-sealed under the old master key (%s)", moved,
	         seal_source_name(s->src));
	return seal_check(s);
}

int keystore_rekey(Keystore *ks, const uint8_t *pass, size_t pass_len, const char *new_key_file, char *why,
                   size_t why_len)
{
	SealSource from = ks->seal.src;
	SealRekey rk;
	size_t done = 0;
	int r;

	if (why_len)
		why[0] = '\0';
	if (ks->locked || !ks->seal.mk)
		return KEYSTORE_E_LOCKED;
	for (size_t i = 0; i < ks->n_keys; i++)
		if (ks->keys[i]->pending)
			return -EBUSY;
	r = seal_rekey_begin(&ks->seal, pass, pass_len, new_key_file, &rk, why, why_len);
	if (r == SEAL_E_NEED_PASSPHRASE)
		return KEYSTORE_E_NEED_PASSPHRASE;
	if (r == SEAL_E_INVALID)
		return KEYSTORE_E_INVALID;
	if (r == SEAL_E_DENIED)
		return KEYSTORE_E_DENIED;
	if (r == SEAL_E_WRONG)
		return KEYSTORE_E_LOCKED;
	if (r)
		return r;
	for (; done < ks->n_keys; done++) {
		Key *key = ks->keys[done];
		KeyFileMeta meta;

		if (!key->secret || key->memory_only)
			continue; /* memory-only keys never get a key file */
		key_meta(key, &meta);
		r = keyfile_write_sealed(ks->dirfd, &meta, rk.n, key->secret->seed);
		if (r < 0)
			break;
	}
	if (r == 0)
		r = seal_rekey_commit(&ks->seal, &rk);
	if (r < 0) {
		/* not committed: back to the old key, re-seal what moved, drop the record */
		bool all_back = true;

		for (size_t i = 0; i < done && i < ks->n_keys; i++) {
			Key *key = ks->keys[i];
			KeyFileMeta meta;

			if (!key->secret || key->memory_only)
				continue;
			key_meta(key, &meta);
			if (keyfile_write_sealed(ks->dirfd, &meta, ks->seal.mk, key->secret->seed) < 0 && (all_back = false))
				log_err("rekey rollback: keys/%s.key stays under the new key; %s records it",
				        key->info.label, SEAL_REKEY_FILE);
		}
		if (all_back)
			seal_rekey_abort(&ks->seal, &rk);
		else
			seal_rekey_free(&rk);
		log_err("rekey failed: %s; the old master key stays", strerror(-r));
		return r;
	}
	log_info("rekey: %zu keys re-sealed under a new %s%s%s", ks->n_keys, seal_source_name(ks->seal.src),
	         ks->seal.src == SEAL_SRC_FILE ? " " : "", ks->seal.src == SEAL_SRC_FILE ? ks->seal.path : "");
	rekey_advice(&ks->seal, from);
	return 0;
}

static int keystore_load(Keystore *ks)
{
	int fd = dup(ks->dirfd);
	DIR *d;
	struct dirent *de;
	size_t n_ok = 0, n_auth = 0;

	if (fd < 0)
		return error_origin(-errno);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return error_origin(-errno);
	}
	rewinddir(d); /* the dup shares its offset with dirfd: start over */
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name), sl = strlen(KEYFILE_SUFFIX);
		KeyFileMeta meta;
		uint8_t seed[32];
		Key *key;
		struct stat st;
		int r;

		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		/* a temporary file from an interrupted write (key files end in
		 * ".key", so a label may itself start with a dot) */
		if (de->d_name[0] == '.' && n > strlen(KEYFILE_TMP_SUFFIX) &&
		    strcmp(de->d_name + n - strlen(KEYFILE_TMP_SUFFIX), KEYFILE_TMP_SUFFIX) == 0) {
			if (unlinkat(ks->dirfd, de->d_name, 0) == 0)
				log_info("removed stale temporary file keys/%s", de->d_name);
			continue;
		}
		if (n > strlen(USES_SUFFIX) && strcmp(de->d_name + n - strlen(USES_SUFFIX), USES_SUFFIX) == 0)
			continue; /* a sign count (uses_load) */
		if (de->d_name[0] == '.' && n > 9 && strcmp(de->d_name + n - 9, USES_SUFFIX ".tmp") == 0) {
			if (unlinkat(ks->dirfd, de->d_name, 0) == 0)
				log_info("removed stale temporary file keys/%s", de->d_name);
			continue;
		}
		if (n <= sl || strcmp(de->d_name + n - sl, KEYFILE_SUFFIX) != 0) {
			log_warn("ignoring keys/%s: not a key file name", de->d_name);
			continue;
		}
		if (fstatat(ks->dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISREG(st.st_mode) ||
		    st.st_uid != geteuid() || (st.st_mode & 077)) {
			log_err("ignoring keys/%s: not a regular file of ours with mode 0600", de->d_name);
			continue;
		}
		/* the header only: key_open() checks it against the sealed part */
		r = keyfile_read_sealed(ks->dirfd, de->d_name, NULL, &meta, seed);
		sigil_wipe(seed, sizeof(seed));
		if (r) {
			if (r > 0)
				log_err("refusing keys/%s: not a valid key file", de->d_name);
			else
				log_err("refusing keys/%s: %s", de->d_name, strerror(-r));
			continue;
		}
		key = calloc(1, sizeof(*key));
		if (!key)
			goto nomem;
		key->n_refs = 1;
		memcpy(key->info.label, meta.label, sizeof(meta.label));
		key->info.type = meta.type;
		key->info.exportable = meta.exportable;
		key->info.created = meta.created;
		memcpy(key->info.public_key, meta.public_key, 32);
		key->info.has_owner = true;
		key->info.owner = meta.has_owner ? meta.owner : (uint32_t)geteuid();
		if (policy_decode(&key->policy, meta.policy, meta.policy_len) < 0) {
			log_err("refusing keys/%s: its policy is malformed", de->d_name);
			key_unref(key);
			continue;
		}
		key->info.policy = key->policy.set ? &key->policy : NULL;
		if (meta.version == 2)
			keystore_fingerprint(key->info.fingerprint, key->info.type, key->info.public_key);
		uses_load(ks, key);
		if (ks->seal.mk || meta.version == 1) {
			/* format 1 files open without a master key; they are
			 * sealed at the first unlock */
			const uint8_t *mk = ks->seal.mk;

			r = key_open(ks, key, de->d_name);
			if (r == -ENOMEM) {
				key_unref(key);
				goto nomem;
			}
			if (r) {
				n_auth += r == KEYFILE_E_AUTH;
				key_unref(key);
				continue;
			}
			if (!mk) /* locked: keep the public part only */
				key->secret = secmem_free(key->secret);
		}
		n_ok++;
		if (keystore_add(ks, key) < 0) {
			key_unref(key);
			goto nomem;
		}
	}
	closedir(d);
	if (n_auth > 0 && n_ok == 0)
		log_err("no key file opens under the master key (%s): is it the right one?",
		        seal_source_name(ks->seal.src));
	return 0;
nomem:
	closedir(d);
	log_err("out of memory (or secure memory: check RLIMIT_MEMLOCK) loading keys");
	return -ENOMEM;
}

int keystore_open(Keystore *ks, const char *state_dir)
{
	SealOptions opt = { 0 };

	return keystore_open_sealed(ks, state_dir, &opt);
}

int keystore_open_sealed(Keystore *ks, const char *state_dir, const SealOptions *opt)
{
	int fd, r;

	if (opt->ephemeral) {
		ks->dirfd = ks->statefd = -1;
		return seal_setup(&ks->seal, -1, opt);
	}

	r = mkdir_parents(state_dir);
	if (r < 0) {
		log_err("cannot create state directory %s: %s", state_dir, strerror(-r));
		return r;
	}
	fd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0 && (errno == ELOOP || errno == ENOTDIR)) {
		log_err("state directory %s is a symbolic link or not a directory: sigild does not follow links "
		        "there; use the directory's own path", state_dir);
		return KEYSTORE_E_UNSAFE;
	}
	if (fd < 0) {
		r = -errno;
		log_err("cannot open state directory %s: %s", state_dir, strerror(errno));
		return r;
	}
	r = check_private_dir(fd, state_dir);
	if (r) {
		close(fd);
		return r;
	}
	if (mkdirat(fd, "keys", 0700) < 0 && errno != EEXIST) {
		r = -errno;
		log_err("cannot create %s/keys: %s", state_dir, strerror(errno));
		close(fd);
		return r;
	}
	ks->dirfd = openat(fd, "keys", O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (ks->dirfd < 0) {
		r = -errno;
		log_err("cannot open %s/keys: %s", state_dir, strerror(errno));
		close(fd);
		return r;
	}
	ks->statefd = fd;
	r = check_private_dir(ks->dirfd, "the keys directory");
	if (!r && flock(ks->dirfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK) {
			log_err("another sigild uses the state directory %s", state_dir);
			r = KEYSTORE_E_IN_USE;
		} else {
			r = -errno;
		}
	}
	if (!r) {
		r = seal_setup(&ks->seal, ks->statefd, opt);
	}
	if (!r) {
		ks->locked = !ks->seal.mk;
		if (ks->seal.mk)
			r = rekey_recover(ks);
	}
	if (r == SEAL_E_INVALID)
		r = KEYSTORE_E_INVALID;
	else if (r == SEAL_E_WRONG)
		r = KEYSTORE_E_WRONG;
	if (!r)
		r = keystore_load(ks);
	if (r) {
		keystore_close(ks);
		return r;
	}
	return 0;
}

void keystore_close(Keystore *ks)
{
	if (ks->dirfd >= 0)
		uses_settle(ks);
	while (ks->n_keys > 0)
		keystore_drop(ks, ks->keys[ks->n_keys - 1]);
	free(ks->keys);
	ks->keys = NULL;
	ks->cap = 0;
	seal_deinit(&ks->seal);
	if (ks->dirfd >= 0)
		close(ks->dirfd);
	ks->dirfd = -1;
	if (ks->statefd >= 0)
		close(ks->statefd);
	ks->statefd = -1;
}

static Key *find_any(Keystore *ks, const char *label)
{
	for (size_t i = 0; i < ks->n_keys; i++)
		if (strcmp(ks->keys[i]->info.label, label) == 0)
			return ks->keys[i];
	return NULL;
}

Key *keystore_find(Keystore *ks, const char *label)
{
	Key *k = find_any(ks, label);

	return (k && !k->pending) ? k : NULL;
}

size_t keystore_count(const Keystore *ks)
{
	size_t n = 0;

	for (size_t i = 0; i < ks->n_keys; i++)
		n += !ks->keys[i]->pending;
	return n;
}

int keystore_reserve(Keystore *ks, const char *label, ProtoKeyType type, bool exportable, uint32_t owner,
                     bool memory_only, Key **keyp)
{
	Key *key;

	if (find_any(ks, label))
		return KEYSTORE_E_EXISTS;
	if (ks->locked)
		return KEYSTORE_E_LOCKED;
	if (ks->dirfd >= 0) {
		/* a key file that did not open keeps its label */
		char name[PROTO_LABEL_MAX + 8];

		snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, label);
		if (faccessat(ks->dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0)
			return KEYSTORE_E_EXISTS;
	}
	key = calloc(1, sizeof(*key));
	if (!key)
		return -ENOMEM;
	key->secret = secmem_alloc(sizeof(KeySecret));
	if (!key->secret) {
		free(key);
		return -ENOMEM;
	}
	if (ks->seal.mk)
		memcpy(key->secret->mk, ks->seal.mk, SEAL_KEY_LEN);
	key->n_refs = 1; /* the store's */
	key->pending = true;
	snprintf(key->info.label, sizeof(key->info.label), "%s", label);
	key->info.type = type;
	key->info.exportable = exportable;
	key->info.created = (int64_t)time(NULL);
	key->info.has_owner = true;
	key->info.owner = owner;
	key->memory_only = memory_only || ks->dirfd < 0;
	if (keystore_add(ks, key) < 0) {
		secmem_free(key->secret);
		free(key);
		return -ENOMEM;
	}
	*keyp = key_ref(key);
	return 0;
}

int keystore_materialize(Keystore *ks, Key *key, const uint8_t *seed)
{
	KeyFileMeta meta;
	int r = 0;

	if (seed) {
		memcpy(key->secret->seed, seed, 32);
	} else {
		size_t got = 0;

		while (got < 32) {
			ssize_t k = getrandom(key->secret->seed + got, 32 - got, 0);

			if (k < 0) {
				if (errno == EINTR)
					continue;
				r = -errno;
				sigil_wipe(key->secret->mk, SEAL_KEY_LEN);
				return r;
			}
			got += (size_t)k;
		}
	}
	key_derive(key);
	if (ks->dirfd >= 0 && !key->memory_only) {
		/* the count file first: a key file never lacks it */
		r = uses_create(ks, key);
		key_meta(key, &meta);
		if (r == 0)
			r = keyfile_write_sealed(ks->dirfd, &meta, key->secret->mk, key->secret->seed);
	}
	sigil_wipe(key->secret->mk, SEAL_KEY_LEN);
	return r;
}

void keystore_commit(Keystore *ks, Key *key)
{
	key->pending = false;
	uses_attach(ks, key);
	if (ks->locked) {
		/* locked while it was generated: sealed on disk, wiped here */
		if (key->n_refs == 1)
			key->secret = secmem_free(key->secret);
		else
			key->wipe_pending = true;
	}
}

void keystore_lock(Keystore *ks, void (*dropped)(void *ctx, const Key *key), void *ctx)
{
	for (size_t i = ks->n_keys; i-- > 0;) {
		Key *key = ks->keys[i];

		if (key->pending || !key->secret)
			continue;
		if (ks->dirfd < 0)
			continue; /* ephemeral: nothing to re-open them from */
		if (key->memory_only) {
			/* no file to open it from again: it goes (wiped at its last unref) */
			if (dropped)
				dropped(ctx, key);
			keystore_drop(ks, key);
			continue;
		}
		if (key->n_refs == 1)
			key->secret = secmem_free(key->secret);
		else
			key->wipe_pending = true;
	}
	seal_lock(&ks->seal);
	ks->locked = true;
}

int keystore_unlock(Keystore *ks, const uint8_t *pass, size_t pass_len)
{
	size_t n_ok = 0, n_auth = 0, n_closed = 0;
	int r;

	r = seal_unlock(&ks->seal, pass, pass_len);
	switch (r) {
	case 0: break;
	case SEAL_E_WRONG: return KEYSTORE_E_WRONG;
	case SEAL_E_NEED_PASSPHRASE: return KEYSTORE_E_NEED_PASSPHRASE;
	case SEAL_E_INVALID: return KEYSTORE_E_INVALID;
	default: return r;
	}
	r = rekey_recover(ks);
	if (r) {
		seal_lock(&ks->seal);
		return r == SEAL_E_WRONG ? KEYSTORE_E_WRONG : r == SEAL_E_INVALID ? KEYSTORE_E_INVALID : r;
	}
	for (size_t i = 0; i < ks->n_keys; i++) {
		Key *key = ks->keys[i];

		key->wipe_pending = false;
		if (!key->pending && !key->secret)
			n_closed++;
	}
	if (n_closed > 0) {
		/* first pass: does the master key open anything? */
		Key **failed = calloc(ks->n_keys, sizeof(*failed));
		size_t n_failed = 0;

		if (!failed) {
			seal_lock(&ks->seal);
			return -ENOMEM;
		}
		for (size_t i = 0; i < ks->n_keys; i++) {
			Key *key = ks->keys[i];
			char name[PROTO_LABEL_MAX + 8];

			if (key->pending || key->secret)
				continue;
			snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, key->info.label);
			r = key_open(ks, key, name);
			if (r == 0) {
				n_ok++;
				continue;
			}
			n_auth += r == KEYFILE_E_AUTH;
			failed[n_failed++] = key;
		}
		if (n_ok == 0 && n_auth == n_closed) {
			free(failed);
			seal_lock(&ks->seal);
			log_err("unlock refused: no key opens under this master key (%s)",
			        seal_source_name(ks->seal.src));
			return KEYSTORE_E_WRONG;
		}
		for (size_t i = 0; i < n_failed; i++)
			keystore_drop(ks, failed[i]);
		free(failed);
	}
	ks->locked = false;
	return 0;
}

void keystore_abort(Keystore *ks, Key *key)
{
	keystore_drop(ks, key);
}

int keystore_delete(Keystore *ks, const char *label)
{
	Key *key = keystore_find(ks, label);
	int r;

	if (!key)
		return KEYSTORE_E_NOT_FOUND;
	if (ks->dirfd >= 0) {
		char name[PROTO_LABEL_MAX + 8];

		r = keyfile_remove(ks->dirfd, label);
		if (r < 0 && r != -ENOENT)
			return error_origin(r);
		uses_name(name, label);
		if (unlinkat(ks->dirfd, name, 0) < 0 && errno != ENOENT)
			log_warn("cannot remove keys/%s: %s", name, strerror(errno));
	}
	keystore_drop(ks, key);
	return 0;
}
