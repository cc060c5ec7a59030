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
#include <unistd.h>

#include <sigil/crypto.h>

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

/* a master key file: 32 raw bytes, or 64 hex digits and an optional newline */
static int load_key_file(Seal *s, int dirfd, const char *path)
{
	uint8_t buf[80];
	size_t n = 0, bin_len = 0;
	int r;

	r = read_small(dirfd, path, buf, sizeof(buf), &n);
	if (r < 0) {
		log_err("cannot read the master key %s: %s", path, strerror(-r));
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
	case SEAL_SRC_FILE:
		return load_key_file(s, AT_FDCWD, s->path);
	case SEAL_SRC_GENERATED:
		return load_key_file(s, s->statefd, SEAL_MASTER_FILE);
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

int seal_unlock(Seal *s, const uint8_t *pass, size_t pass_len)
{
	uint8_t params[PARAMS_LEN + 1], check[32];
	unsigned long long ops = 0;
	size_t n = 0, mem = 0;
	uint8_t *mk;
	int r;

	if (s->mk)
		return 0;
	if (s->src != SEAL_SRC_PASSPHRASE)
		return load_source(s);
	if (!pass)
		return SEAL_E_NEED_PASSPHRASE;
	r = read_small(s->statefd, SEAL_PARAMS_FILE, params, sizeof(params), &n);
	if (r == -ENOENT) {
		/* first unlock: this passphrase becomes the passphrase */
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
	if (r < 0) {
		log_err("cannot read %s: %s", SEAL_PARAMS_FILE, strerror(-r));
		return r;
	}
	if (n != PARAMS_LEN || memcmp(params, PARAMS_MAGIC, 8) != 0 || params[8] != 1 ||
	    params[9] != crypto_pwhash_ALG_ARGON2ID13) {
		log_err("%s is not a passphrase parameter file of version 1", SEAL_PARAMS_FILE);
		return SEAL_E_INVALID;
	}
	for (int i = 0; i < 8; i++) {
		ops = (ops << 8) | params[10 + i];
		mem = (mem << 8) | params[18 + i];
	}
	if (ops < crypto_pwhash_OPSLIMIT_MIN || ops > crypto_pwhash_OPSLIMIT_MAX ||
	    mem < crypto_pwhash_MEMLIMIT_MIN || mem > ((size_t)4 << 30)) {
		log_err("%s has Argon2id limits out of range", SEAL_PARAMS_FILE);
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
	s->mk = mk;
	return 0;
}

static const uint8_t rekey_ad[] = "SIGILREKEY1";

int seal_rekey_begin(Seal *s, const uint8_t *pass, size_t pass_len, uint8_t **np)
{
	uint8_t box[SEAL_BOX_LEN], *n = NULL;
	int r;

	if (!s->mk)
		return SEAL_E_WRONG;
	if (s->src == SEAL_SRC_PASSPHRASE) {
		if (!pass)
			return SEAL_E_NEED_PASSPHRASE;
		r = seal_new_passphrase(s, pass, pass_len, &n);
		if (r < 0)
			return r;
	} else if (s->src == SEAL_SRC_GENERATED) {
		n = mk_alloc();
		if (!n)
			return -ENOMEM;
		randombytes_buf(n, SEAL_KEY_LEN);
	} else {
		return -EOPNOTSUPP;
	}
	seal_box(box, s->mk, rekey_ad, sizeof(rekey_ad), n);
	r = seal_write_file(s->statefd, SEAL_REKEY_FILE, box, sizeof(box));
	if (r < 0) {
		mk_free(n);
		unlinkat(s->statefd, SEAL_PARAMS_FILE ".new", 0);
		return r;
	}
	*np = n;
	return 0;
}

int seal_rekey_commit(Seal *s, uint8_t *n)
{
	int r = 0;

	if (s->src == SEAL_SRC_PASSPHRASE) {
		if (renameat(s->statefd, SEAL_PARAMS_FILE ".new", s->statefd, SEAL_PARAMS_FILE) < 0 && errno != ENOENT)
			r = -errno;
		else if (fsync(s->statefd) < 0)
			r = -errno;
	} else {
		r = seal_write_file(s->statefd, SEAL_MASTER_FILE, n, SEAL_KEY_LEN);
	}
	if (r < 0)
		return r;
	mk_free(s->mk);
	s->mk = n;
	if (unlinkat(s->statefd, SEAL_REKEY_FILE, 0) < 0 && errno != ENOENT)
		return -errno;
	if (fsync(s->statefd) < 0)
		return -errno;
	return 0;
}

int seal_rekey_pending(Seal *s, uint8_t **np)
{
	uint8_t box[SEAL_BOX_LEN + 1], *n;
	size_t len = 0;
	int r;

	*np = NULL;
	if (s->statefd < 0 || !s->mk)
		return 0;
	r = read_small(s->statefd, SEAL_REKEY_FILE, box, sizeof(box), &len);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	if (len != SEAL_BOX_LEN)
		return SEAL_E_WRONG;
	n = mk_alloc();
	if (!n)
		return -ENOMEM;
	if (seal_open(n, s->mk, rekey_ad, sizeof(rekey_ad), box) != 0) {
		mk_free(n);
		return SEAL_E_WRONG;
	}
	*np = n;
	return 0;
}
