/* SPDX-License-Identifier: MIT */
/*
 * seal.c - master key sources and the XChaCha20-Poly1305 box of a key file
 *
 * passphrase.params (big-endian), 114 bytes:
 *   0   8  magic "SIGILPWH"
 *   8   1  version (1)
 *   9   1  algorithm (2: Argon2id v1.3, crypto_pwhash_ALG_ARGON2ID13)
 *   10  8  opslimit
 *   18  8  memlimit (bytes)
 *   26  16 salt
 *   42  72 check: a box of 32 zero bytes under the derived key, with bytes
 *          0..41 as associated data. A wrong passphrase fails to open it,
 *          so nothing else is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "fsafe.h"
#include "log.h"
#include "seal.h"

#define PARAMS_MAGIC "SIGILPWH"
#define PARAMS_HDR 42
#define PARAMS_LEN (PARAMS_HDR + SEAL_BOX_LEN)

/* the master key lives in libsodium's guarded, mlock'd memory (not secmem,
 * whose count tracks the keys) */
uint8_t *mk_alloc(void)
{
	return sodium_malloc(SEAL_KEY_LEN);
}

uint8_t *mk_free(uint8_t *mk)
{
	if (mk)
		sodium_free(mk); /* wipes it */
	return NULL;
}

const char *seal_source_name(SealSource s)
{
	switch (s) {
	case SEAL_SRC_CREDENTIAL: return "systemd credential";
	case SEAL_SRC_FILE: return "master key file";
	case SEAL_SRC_PASSPHRASE: return "passphrase";
	case SEAL_SRC_GENERATED: return "generated master key";
	case SEAL_SRC_EPHEMERAL: return "ephemeral";
	}
	return "?";
}

void seal_box(uint8_t box[SEAL_BOX_LEN], const uint8_t mk[SEAL_KEY_LEN], const uint8_t *ad, size_t ad_len,
              const uint8_t seed[32])
{
	randombytes_buf(box, SEAL_NONCE_LEN);
	crypto_aead_xchacha20poly1305_ietf_encrypt(box + SEAL_NONCE_LEN, NULL, seed, 32, ad, ad_len, NULL, box, mk);
}

int seal_open(uint8_t seed[32], const uint8_t mk[SEAL_KEY_LEN], const uint8_t *ad, size_t ad_len,
              const uint8_t box[SEAL_BOX_LEN])
{
	if (crypto_aead_xchacha20poly1305_ietf_decrypt(seed, NULL, NULL, box + SEAL_NONCE_LEN,
	                                               32 + SEAL_TAG_LEN, ad, ad_len, box, mk) != 0) {
		sigil_wipe(seed, 32);
		return -1;
	}
	return 0;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

int seal_write_file(int dirfd, const char *name, const uint8_t *data, size_t len)
{
	char tmp[512];
	int fd, r;

	if ((size_t)snprintf(tmp, sizeof(tmp), ".%s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	r = write_all(fd, data, len);
	if (!r && fchmod(fd, 0600) < 0)
		r = -errno;
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && renameat(dirfd, tmp, dirfd, name) < 0)
		r = -errno;
	if (r) {
		unlinkat(dirfd, tmp, 0);
		return r;
	}
	if (fsync(dirfd) < 0)
		return -errno;
	return 0;
}

/* read at most cap bytes of a small file; the count in *lenp; 0 or -errno */
static int read_small(int dirfd, const char *path, uint8_t *buf, size_t cap, size_t *lenp)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	int r = 0;

	if (fd < 0)
		return -errno;
	while (n < cap) {
		ssize_t k = read(fd, buf + n, cap - n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (k == 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	*lenp = n;
	return r;
}

/* read at most cap bytes from fd; the count in *lenp; 0 or -errno */
static int read_fd(int fd, uint8_t *buf, size_t cap, size_t *lenp)
{
	size_t n = 0;

	while (n < cap) {
		ssize_t k = read(fd, buf + n, cap - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	*lenp = n;
	return 0;
}

/* open and read a master key file: a regular file, not a symlink, of ours
 * or root's, that group and others cannot write, nor read with
 * FSAFE_SECRET in @flags (fsafe.c).
 * Return: 0, SEAL_E_INVALID (@why says why) or -errno (@why too) */
static int read_key_file(int dirfd, const char *path, unsigned flags, uint8_t *buf, size_t cap, size_t *lenp,
                         char *why, size_t why_len)
{
	int fd, r;

	r = fsafe_open(&fd, dirfd, path, O_RDONLY, flags, why, why_len);
	if (r)
		return r > 0 ? SEAL_E_INVALID : r;
	r = read_fd(fd, buf, cap, lenp);
	if (r < 0)
		snprintf(why, why_len, "cannot read %s: %s", path, strerror(-r));
	close(fd);
	return r;
}

/* a master key file: 32 raw bytes, or 64 hex digits and an optional newline */
static int load_key_file(Seal *s, int dirfd, const char *path, unsigned flags)
{
	uint8_t buf[80];
	size_t n = 0, bin_len = 0;
	char why[512];
	int r;

	r = read_key_file(dirfd, path, flags, buf, sizeof(buf), &n, why, sizeof(why));
	if (r) {
		log_err("cannot use the master key: %s", why);
		goto out;
	}
	r = SEAL_E_INVALID;
	if (!s->mk)
		s->mk = mk_alloc();
	if (!s->mk) {
		r = -ENOMEM;
		goto out;
	}
	if (n == SEAL_KEY_LEN) {
		memcpy(s->mk, buf, SEAL_KEY_LEN);
		r = 0;
	} else if ((n == 64 || (n == 65 && buf[64] == '\n')) &&
	           sodium_hex2bin(s->mk, SEAL_KEY_LEN, (const char *)buf, 64, NULL, &bin_len, NULL) == 0 &&
	           bin_len == SEAL_KEY_LEN) {
		r = 0;
	} else {
		log_err("the master key %s is not 32 bytes nor 64 hex digits", path);
		s->mk = mk_free(s->mk);
	}
out:
	sigil_wipe(buf, sizeof(buf));
	return r;
}

static int load_source(Seal *s)
{
	switch (s->src) {
	case SEAL_SRC_CREDENTIAL:
		/* systemd gives the service user read access to a credential by an
		 * ACL, whose mask shows as group read (0440); the directory is
		 * systemd's, private to the service: no group/other write only */
		return load_key_file(s, AT_FDCWD, s->path, 0);
	case SEAL_SRC_FILE:
		return load_key_file(s, AT_FDCWD, s->path, FSAFE_SECRET);
	case SEAL_SRC_GENERATED:
		return load_key_file(s, s->statefd, SEAL_MASTER_FILE, FSAFE_SECRET);
	default:
		return 0;
	}
}

static int generate_master(Seal *s)
{
	int r;

	s->mk = mk_alloc();
	if (!s->mk)
		return -ENOMEM;
	randombytes_buf(s->mk, SEAL_KEY_LEN);
	r = seal_write_file(s->statefd, SEAL_MASTER_FILE, s->mk, SEAL_KEY_LEN);
	if (r < 0) {
		log_err("cannot write the master key %s: %s", SEAL_MASTER_FILE, strerror(-r));
		s->mk = mk_free(s->mk);
	}
	return r;
}

int seal_setup(Seal *s, int statefd, const SealOptions *opt)
{
	const char *cred = getenv("CREDENTIALS_DIRECTORY");
	struct stat st;
	int r;

	if (sodium_init() < 0) /* idempotent; sigild calls it first, tests may not */
		return -ENOSYS;
	s->statefd = statefd;
	s->pw_ops = opt->pw_ops ? opt->pw_ops : crypto_pwhash_OPSLIMIT_INTERACTIVE;
	s->pw_mem = opt->pw_mem ? opt->pw_mem : crypto_pwhash_MEMLIMIT_INTERACTIVE;
	if (s->pw_ops < crypto_pwhash_OPSLIMIT_MIN || s->pw_mem < crypto_pwhash_MEMLIMIT_MIN) {
		log_err("Argon2id limits too low (minimum opslimit %llu, memlimit %zu bytes)",
		        (unsigned long long)crypto_pwhash_OPSLIMIT_MIN, (size_t)crypto_pwhash_MEMLIMIT_MIN);
		return SEAL_E_INVALID;
	}
	if (opt->ephemeral) {
		s->src = SEAL_SRC_EPHEMERAL;
		log_warn("--ephemeral: keys live in memory only and are lost when sigild stops");
		return 0;
	}
	if (cred && *cred) {
		char p[4096];

		snprintf(p, sizeof(p), "%s/%s", cred, SEAL_CREDENTIAL);
		if (access(p, F_OK) == 0) {
			s->src = SEAL_SRC_CREDENTIAL;
			s->path = strdup(p);
			if (!s->path)
				return -ENOMEM;
			return load_source(s);
		}
	}
	if (opt->master_key_file) {
		s->src = SEAL_SRC_FILE;
		s->path = strdup(opt->master_key_file);
		if (!s->path)
			return -ENOMEM;
		return load_source(s);
	}
	if (opt->passphrase || fstatat(statefd, SEAL_PARAMS_FILE, &st, 0) == 0) {
		s->src = SEAL_SRC_PASSPHRASE;
		log_info("keys are sealed under a passphrase: sigild starts locked; `sigil unlock` supplies it");
		return 0;
	}
	s->src = SEAL_SRC_GENERATED;
	if (fstatat(statefd, SEAL_MASTER_FILE, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 077)) {
			log_err("%s is not a regular file of ours with mode 0600", SEAL_MASTER_FILE);
			return SEAL_E_INVALID;
		}
		r = load_source(s);
	} else {
		r = seal_check_missing_key(s);
		if (r)
			return r;
		r = generate_master(s);
		if (r == 0)
			log_info("generated a master key in the state directory (%s)", SEAL_MASTER_FILE);
	}
	if (r == 0)
		log_warn("the master key is stored next to the keys (%s): at-rest protection is only file "
		         "permissions; use LoadCredentialEncrypted=master-key, --master-key-file or --passphrase",
		         SEAL_MASTER_FILE);
	return r;
}

void seal_deinit(Seal *s)
{
	s->mk = mk_free(s->mk);
	free(s->path);
	s->path = NULL;
}

void seal_lock(Seal *s)
{
	if (s->src == SEAL_SRC_PASSPHRASE || s->src == SEAL_SRC_FILE || s->src == SEAL_SRC_CREDENTIAL)
		s->mk = mk_free(s->mk);
}

static void params_header(uint8_t h[PARAMS_HDR], unsigned long long ops, size_t mem, const uint8_t salt[16])
{
	memcpy(h, PARAMS_MAGIC, 8);
	h[8] = 1;
	h[9] = (uint8_t)crypto_pwhash_ALG_ARGON2ID13;
	for (int i = 0; i < 8; i++) {
		h[10 + i] = (uint8_t)((uint64_t)ops >> (56 - 8 * i));
		h[18 + i] = (uint8_t)((uint64_t)mem >> (56 - 8 * i));
	}
	memcpy(h + 26, salt, 16);
}

static int derive(uint8_t mk[SEAL_KEY_LEN], const uint8_t *pass, size_t pass_len, unsigned long long ops,
                  size_t mem, const uint8_t salt[16])
{
	if (crypto_pwhash(mk, SEAL_KEY_LEN, (const char *)pass, pass_len, salt, ops, mem,
	                  crypto_pwhash_ALG_ARGON2ID13) != 0)
		return -ENOMEM; /* libsodium's only failure here: the memory limit */
	return 0;
}

int seal_new_passphrase(Seal *s, const uint8_t *pass, size_t pass_len, uint8_t **mkp)
{
	uint8_t params[PARAMS_LEN], salt[16], zero[32] = { 0 };
	uint8_t *mk = mk_alloc();
	int r;

	if (!mk)
		return -ENOMEM;
	randombytes_buf(salt, sizeof(salt));
	params_header(params, s->pw_ops, s->pw_mem, salt);
	r = derive(mk, pass, pass_len, s->pw_ops, s->pw_mem, salt);
	if (r == 0) {
		seal_box(params + PARAMS_HDR, mk, params, PARAMS_HDR, zero);
		r = seal_write_file(s->statefd, SEAL_PARAMS_FILE ".new", params, sizeof(params));
	}
	if (r < 0) {
		mk_free(mk);
		return r;
	}
	*mkp = mk;
	return 0;
}

/* derive the key of a passphrase parameter file and check it: 0 (*mkp),
 * SEAL_E_WRONG, SEAL_E_INVALID (message logged), or -errno (-ENOENT quietly) */
static int try_params(Seal *s, const char *name, const uint8_t *pass, size_t pass_len, uint8_t **mkp)
{
	uint8_t params[PARAMS_LEN + 1], check[32];
	unsigned long long ops = 0;
	size_t n = 0, mem = 0;
	uint8_t *mk;
	int r;

	r = read_small(s->statefd, name, params, sizeof(params), &n);
	if (r == -ENOENT)
		return r;
	if (r < 0) {
		log_err("cannot read %s: %s", name, strerror(-r));
		return r;
	}
	if (n != PARAMS_LEN || memcmp(params, PARAMS_MAGIC, 8) != 0 || params[8] != 1 ||
	    params[9] != crypto_pwhash_ALG_ARGON2ID13) {
		log_err("%s is not a passphrase parameter file of version 1", name);
		return SEAL_E_INVALID;
	}
	for (int i = 0; i < 8; i++) {
		ops = (ops << 8) | params[10 + i];
		mem = (mem << 8) | params[18 + i];
	}
	if (ops < crypto_pwhash_OPSLIMIT_MIN || ops > crypto_pwhash_OPSLIMIT_MAX ||
	    mem < crypto_pwhash_MEMLIMIT_MIN || mem > ((size_t)4 << 30)) {
		log_err("%s has Argon2id limits out of range", name);
		return SEAL_E_INVALID;
	}
	mk = mk_alloc();
	if (!mk)
		return -ENOMEM;
	r = derive(mk, pass, pass_len, ops, mem, params + 26);
	if (r == 0 && seal_open(check, mk, params, PARAMS_HDR, params + PARAMS_HDR) != 0)
		r = SEAL_E_WRONG;
	sigil_wipe(check, sizeof(check));
	if (r) {
		mk_free(mk);
		return r;
	}
	*mkp = mk;
	return 0;
}

int seal_unlock(Seal *s, const uint8_t *pass, size_t pass_len)
{
	uint8_t *mk = NULL;
	int r;

	if (s->mk)
		return 0;
	if (s->src != SEAL_SRC_PASSPHRASE)
		return load_source(s);
	if (!pass)
		return SEAL_E_NEED_PASSPHRASE;
	r = try_params(s, SEAL_PARAMS_FILE, pass, pass_len, &mk);
	if (r == -ENOENT) {
		/* first unlock: this passphrase becomes the passphrase, unless a
		 * rekey moved the keys to another master key */
		r = seal_check_missing_key(s);
		if (r)
			return r;
		r = seal_new_passphrase(s, pass, pass_len, &mk);
		if (r < 0)
			return r;
		if (renameat(s->statefd, SEAL_PARAMS_FILE ".new", s->statefd, SEAL_PARAMS_FILE) < 0 ||
		    fsync(s->statefd) < 0) {
			r = -errno;
			mk_free(mk);
			return r;
		}
		log_info("passphrase set: Argon2id opslimit %llu, memlimit %zu bytes, new salt in %s", s->pw_ops,
		         s->pw_mem, SEAL_PARAMS_FILE);
		s->mk = mk;
		return 0;
	}
	if (r == SEAL_E_WRONG) {
		/* the new passphrase of a rekey that a crash interrupted (the
		 * recovery then decides whether it was committed) */
		int r2 = try_params(s, SEAL_PARAMS_FILE ".new", pass, pass_len, &mk);

		if (r2 == 0)
			r = 0;
	}
	if (r)
		return r;
	s->mk = mk;
	return 0;
}

/*
 * rekey.pending, format 1 (older sigild): exactly a box of N under O with
 * "SIGILREKEY1\0" as associated data; the target is the current source.
 * Format 2: "SIGILRK2", 1 target (SealSource), 2 path length, path (FILE
 * target: the new key's file), then the box of N under O with every byte
 * before it as associated data.
 *
 * master.check (written by each rekey at its commit point, see seal.h):
 * "SIGILMKC", 1 version (1), 1 kind (SealSource of the target), 8 unix
 * time, 2 path length, path, then a box of 32 zero bytes under the master
 * key with every byte before it as associated data.
 */
static const uint8_t rekey_ad[] = "SIGILREKEY1";
#define PENDING_MAGIC "SIGILRK2"
#define CHECK_MAGIC "SIGILMKC"
#define REC_PATH_MAX 4096
#define REC_MAX (8 + 2 + 8 + 2 + REC_PATH_MAX + SEAL_BOX_LEN)

void seal_rekey_free(SealRekey *rk)
{
	rk->n = mk_free(rk->n);
	free(rk->path);
	rk->path = NULL;
}

static void put_be(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * (n - 1 - i)));
}

static uint64_t get_be(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

/* master.check: its fields, and whether @key opens it. 0 (*opensp set),
 * -ENOENT, SEAL_E_INVALID (malformed) or -errno */
typedef struct SealCheck {
	SealSource kind;
	int64_t time;
	char path[REC_PATH_MAX + 1];
} SealCheck;

static int check_read(Seal *s, const uint8_t *key, SealCheck *ck, bool *opensp)
{
	uint8_t *buf = malloc(REC_MAX + 1), zero[32];
	size_t n = 0, plen;
	int r;

	if (!buf)
		return -ENOMEM;
	r = read_small(s->statefd, SEAL_CHECK_FILE, buf, REC_MAX + 1, &n);
	if (r < 0)
		goto out;
	r = SEAL_E_INVALID;
	if (n < 20 + SEAL_BOX_LEN || memcmp(buf, CHECK_MAGIC, 8) != 0 || buf[8] != 1)
		goto out;
	plen = (size_t)get_be(buf + 18, 2);
	if (plen > REC_PATH_MAX || n != 20 + plen + SEAL_BOX_LEN || memchr(buf + 20, '\0', plen))
		goto out;
	ck->kind = (SealSource)buf[9];
	ck->time = (int64_t)get_be(buf + 10, 8);
	memcpy(ck->path, buf + 20, plen);
	ck->path[plen] = '\0';
	*opensp = key && seal_open(zero, key, buf, 20 + plen, buf + 20 + plen) == 0;
	sigil_wipe(zero, sizeof(zero));
	r = 0;
out:
	free(buf);
	return r;
}

static int check_write(Seal *s, const uint8_t *key, SealSource kind, const char *path)
{
	size_t plen = path ? strlen(path) : 0;
	uint8_t *buf, zero[32] = { 0 };
	int r;

	if (plen > REC_PATH_MAX)
		return -ENAMETOOLONG;
	buf = malloc(20 + plen + SEAL_BOX_LEN);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, CHECK_MAGIC, 8);
	buf[8] = 1;
	buf[9] = (uint8_t)kind;
	put_be(buf + 10, (uint64_t)time(NULL), 8);
	put_be(buf + 18, plen, 2);
	if (plen)
		memcpy(buf + 20, path, plen);
	seal_box(buf + 20 + plen, key, buf, 20 + plen, zero);
	r = seal_write_file(s->statefd, SEAL_CHECK_FILE, buf, 20 + plen + SEAL_BOX_LEN);
	free(buf);
	return r;
}

static const char *kind_advice(SealSource k)
{
	switch (k) {
	case SEAL_SRC_FILE: return "a new master key file";
	case SEAL_SRC_PASSPHRASE: return "a new passphrase";
	case SEAL_SRC_GENERATED: return "a new generated master key (master.key)";
	default: return "another master key";
	}
}

/* the error that names the problem when the current key is not the one of
 * master.check */
static void check_mismatch(Seal *s, const SealCheck *ck)
{
	char when[32] = "?";
	time_t t = (time_t)ck->time;
	struct tm tm;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	log_err("the master key from the %s%s%s is not the one the keys are sealed under: a rekey at %s re-sealed "
	        "them under %s%s%s. Point sigild at that key (%s; docs/security.md); nothing was changed",
	        seal_source_name(s->src), s->path ? " " : "", s->path ? s->path : "", when, kind_advice(ck->kind),
	        ck->path[0] ? " " : "", ck->path,
	        ck->kind == SEAL_SRC_FILE ? "master_key_file / --master-key-file, or the credential "
	                                    "master-key of LoadCredentialEncrypted="
	        : ck->kind == SEAL_SRC_PASSPHRASE ? "drop master_key_file / --master-key-file and the credential; "
	                                            "`sigil unlock` with the new passphrase"
	                                          : "drop master_key_file / --master-key-file and the credential");
}

int seal_check(Seal *s)
{
	SealCheck ck;
	bool opens = false;
	int r;

	if (s->statefd < 0 || !s->mk)
		return 0;
	r = check_read(s, s->mk, &ck, &opens);
	if (r == -ENOENT)
		return 0;
	if (r == SEAL_E_INVALID) {
		log_err("%s is malformed", SEAL_CHECK_FILE);
		return SEAL_E_INVALID;
	}
	if (r < 0)
		return r;
	if (!opens) {
		check_mismatch(s, &ck);
		return SEAL_E_WRONG;
	}
	return 0;
}

int seal_check_missing_key(Seal *s)
{
	SealCheck ck;
	bool opens = false;
	int r = check_read(s, NULL, &ck, &opens);

	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (r == 0)
		check_mismatch(s, &ck);
	return SEAL_E_WRONG;
}

/* what the caller of a rekey learns about a new master key file sigild
 * may not use: the same whatever is wrong (the path last: a long one is
 * cut, not the rest) */
static int new_key_denied(const char *path, char *why, size_t why_len)
{
	snprintf(why, why_len, "cannot use the new master key file (it must be a regular file of sigild's uid or "
	         "root, mode 0600, 32 bytes or 64 hex digits; sigild's log says why): %s", path);
	return SEAL_E_DENIED;
}

/* the key in a master key file that a rekey is to move to. Whatever is
 * wrong with the file, the caller gets one message (no oracle for the
 * existence, type, owner, mode or size of a path it may not read itself);
 * the log says what. */
static int read_new_key_file(const char *path, uint8_t *n, char *why, size_t why_len)
{
	uint8_t buf[80];
	size_t len = 0, bin_len = 0;
	char detail[512];
	int r;

	if (path[0] != '/') {
		snprintf(why, why_len, "the new master key file must be an absolute path");
		return SEAL_E_INVALID;
	}
	r = read_key_file(AT_FDCWD, path, FSAFE_SECRET, buf, sizeof(buf), &len, detail, sizeof(detail));
	if (r == 0) {
		if (len == SEAL_KEY_LEN)
			memcpy(n, buf, SEAL_KEY_LEN);
		else if (!((len == 64 || (len == 65 && buf[64] == '\n')) &&
		           sodium_hex2bin(n, SEAL_KEY_LEN, (const char *)buf, 64, NULL, &bin_len, NULL) == 0 &&
		           bin_len == SEAL_KEY_LEN)) {
			snprintf(detail, sizeof(detail), "%s is not 32 bytes nor 64 hex digits", path);
			r = SEAL_E_INVALID;
		}
	}
	sigil_wipe(buf, sizeof(buf));
	if (r) {
		log_warn("rekey: the new master key file cannot be used: %s", detail);
		return new_key_denied(path, why, why_len);
	}
	return 0;
}

int seal_rekey_begin(Seal *s, const uint8_t *pass, size_t pass_len, const char *new_key_file, SealRekey *rk,
                     char *why, size_t why_len)
{
	size_t plen;
	uint8_t *rec;
	int r;

	memset(rk, 0, sizeof(*rk));
	if (!s->mk)
		return SEAL_E_WRONG;
	if (s->src == SEAL_SRC_EPHEMERAL) {
		snprintf(why, why_len, "--ephemeral: there is no master key to change");
		return SEAL_E_INVALID;
	}
	if (pass && new_key_file) {
		snprintf(why, why_len, "give a new passphrase or a new master key file, not both");
		return SEAL_E_INVALID;
	}
	if (new_key_file) {
		rk->to = SEAL_SRC_FILE;
		rk->path = strdup(new_key_file);
		rk->n = mk_alloc();
		if (!rk->path || !rk->n) {
			seal_rekey_free(rk);
			return -ENOMEM;
		}
		r = read_new_key_file(new_key_file, rk->n, why, why_len);
		if (r == 0 && sodium_memcmp(rk->n, s->mk, SEAL_KEY_LEN) == 0) {
			log_warn("rekey: the new master key file %s holds the current master key", new_key_file);
			r = new_key_denied(new_key_file, why, why_len);
		}
		if (r) {
			seal_rekey_free(rk);
			return r;
		}
	} else if (pass) {
		rk->to = SEAL_SRC_PASSPHRASE;
		r = seal_new_passphrase(s, pass, pass_len, &rk->n);
		if (r < 0)
			return r;
	} else if (s->src == SEAL_SRC_PASSPHRASE) {
		return SEAL_E_NEED_PASSPHRASE;
	} else if (s->src == SEAL_SRC_GENERATED) {
		rk->to = SEAL_SRC_GENERATED;
		rk->n = mk_alloc();
		if (!rk->n)
			return -ENOMEM;
		randombytes_buf(rk->n, SEAL_KEY_LEN);
	} else {
		snprintf(why, why_len, "the master key comes from the %s: give a new master key file "
		         "(sigil rekey --new-master-key-file FILE) or a new passphrase", seal_source_name(s->src));
		return SEAL_E_INVALID;
	}
	plen = rk->path ? strlen(rk->path) : 0;
	rec = plen <= REC_PATH_MAX ? malloc(11 + plen + SEAL_BOX_LEN) : NULL;
	if (!rec) {
		seal_rekey_abort(s, rk);
		return plen > REC_PATH_MAX ? -ENAMETOOLONG : -ENOMEM;
	}
	memcpy(rec, PENDING_MAGIC, 8);
	rec[8] = (uint8_t)rk->to;
	put_be(rec + 9, plen, 2);
	if (plen)
		memcpy(rec + 11, rk->path, plen);
	seal_box(rec + 11 + plen, s->mk, rec, 11 + plen, rk->n);
	r = seal_write_file(s->statefd, SEAL_REKEY_FILE, rec, 11 + plen + SEAL_BOX_LEN);
	free(rec);
	if (r < 0) {
		seal_rekey_abort(s, rk);
		return r;
	}
	return 0;
}

void seal_rekey_abort(Seal *s, SealRekey *rk)
{
	unlinkat(s->statefd, SEAL_PARAMS_FILE ".new", 0);
	unlinkat(s->statefd, SEAL_REKEY_FILE, 0);
	(void)fsync(s->statefd);
	seal_rekey_free(rk);
}

static int unlink_opt(int dirfd, const char *name)
{
	return unlinkat(dirfd, name, 0) < 0 && errno != ENOENT ? -errno : 0;
}

/* the seal takes N, the target source and its path; frees *rk */
static void rekey_adopt(Seal *s, SealRekey *rk)
{
	mk_free(s->mk);
	s->mk = rk->n;
	rk->n = NULL;
	if (rk->to == SEAL_SRC_FILE) {
		free(s->path);
		s->path = rk->path;
		rk->path = NULL;
	}
	s->src = rk->to;
	seal_rekey_free(rk);
}

int seal_rekey_finish(Seal *s, SealRekey *rk, bool adopt)
{
	int r = 0;

	switch (rk->to) {
	case SEAL_SRC_GENERATED:
		if (rk->n) /* (else master.key already holds it) */
			r = seal_write_file(s->statefd, SEAL_MASTER_FILE, rk->n, SEAL_KEY_LEN);
		break;
	case SEAL_SRC_PASSPHRASE:
		if (renameat(s->statefd, SEAL_PARAMS_FILE ".new", s->statefd, SEAL_PARAMS_FILE) < 0 && errno != ENOENT)
			r = -errno;
		if (!r)
			r = unlink_opt(s->statefd, SEAL_MASTER_FILE);
		break;
	case SEAL_SRC_FILE:
		r = unlink_opt(s->statefd, SEAL_PARAMS_FILE);
		if (!r)
			r = unlink_opt(s->statefd, SEAL_PARAMS_FILE ".new");
		if (!r)
			r = unlink_opt(s->statefd, SEAL_MASTER_FILE);
		break;
	default:
		r = -EINVAL;
	}
	if (!r)
		r = unlink_opt(s->statefd, SEAL_REKEY_FILE);
	if (!r && fsync(s->statefd) < 0)
		r = -errno;
	if (r < 0)
		return r;
	if (adopt)
		rekey_adopt(s, rk);
	seal_rekey_free(rk);
	return 0;
}

int seal_rekey_commit(Seal *s, SealRekey *rk)
{
	int r = check_write(s, rk->n, rk->to, rk->path);

	if (r < 0)
		return r; /* not committed: the caller rolls back */
	r = seal_rekey_finish(s, rk, true);
	if (r < 0) {
		/* committed all the same: N is the master key now, and the
		 * next start (or unlock) finishes what is left */
		log_err("the rekey is committed, but tidying the state directory failed: %s; %s stays and the next "
		        "start finishes it", strerror(-r), SEAL_REKEY_FILE);
		rekey_adopt(s, rk);
	}
	return 0;
}

int seal_rekey_pending(Seal *s, SealRekey *rk, SealPending *state)
{
	uint8_t *rec;
	size_t len = 0, plen;
	int r;

	memset(rk, 0, sizeof(*rk));
	*state = SEAL_PENDING_NONE;
	if (s->statefd < 0 || !s->mk)
		return 0;
	rec = malloc(REC_MAX + 1);
	if (!rec)
		return -ENOMEM;
	r = read_small(s->statefd, SEAL_REKEY_FILE, rec, REC_MAX + 1, &len);
	if (r == -ENOENT) {
		free(rec);
		return 0;
	}
	if (r < 0)
		goto out;
	rk->n = mk_alloc();
	if (!rk->n) {
		r = -ENOMEM;
		goto out;
	}
	*state = SEAL_PENDING_FOREIGN;
	if (len == SEAL_BOX_LEN) {
		/* format 1: the target is the current source */
		rk->to = s->src;
		*state = SEAL_PENDING_FOREIGN_V1;
		if (seal_open(rk->n, s->mk, rekey_ad, sizeof(rekey_ad), rec) == 0)
			*state = SEAL_PENDING_OPEN;
	} else if (len >= 11 + SEAL_BOX_LEN && memcmp(rec, PENDING_MAGIC, 8) == 0 &&
	           (plen = (size_t)get_be(rec + 9, 2)) <= REC_PATH_MAX && len == 11 + plen + SEAL_BOX_LEN &&
	           !memchr(rec + 11, '\0', plen) &&
	           seal_open(rk->n, s->mk, rec, 11 + plen, rec + 11 + plen) == 0) {
		rk->to = (SealSource)rec[8];
		if (plen) {
			rk->path = strndup((const char *)rec + 11, plen);
			if (!rk->path)
				r = -ENOMEM;
		}
		*state = SEAL_PENDING_OPEN;
	}
	if (*state == SEAL_PENDING_OPEN && rk->to != SEAL_SRC_GENERATED && rk->to != SEAL_SRC_PASSPHRASE &&
	    rk->to != SEAL_SRC_FILE)
		r = SEAL_E_INVALID; /* authenticated, so not junk: a newer sigild's */
out:
	free(rec);
	if (r || *state != SEAL_PENDING_OPEN)
		seal_rekey_free(rk);
	return r;
}

int seal_rekey_committed(Seal *s, const uint8_t *key, SealRekey *rk)
{
	SealCheck ck;
	bool opens = false;
	int r = check_read(s, key, &ck, &opens);

	if (r == -ENOENT)
		return 0;
	if (r < 0 || r == SEAL_E_INVALID)
		return r < 0 ? r : 0;
	if (!opens)
		return 0;
	if (rk) {
		rk->to = ck.kind;
		free(rk->path);
		rk->path = ck.path[0] ? strdup(ck.path) : NULL;
	}
	return 1;
}
