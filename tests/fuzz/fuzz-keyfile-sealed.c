/* SPDX-License-Identifier: MIT */
/*
 * fuzz-keyfile-sealed.c - sealed key files (format 2, daemon/keyfile.c)
 *
 * Input: a flags byte, then either
 *  - (flags bit 0 clear) the bytes of a file "fuzz.key", or
 *  - (bit 0 set) the fields of a key (type, exportable, created, label
 *    length, policy length, 32-byte seed, 32-byte public key, policy) that
 *    keyfile_write_sealed seals under a fixed master key, then one byte of
 *    the written file is changed (position and XOR from the input; XOR 0
 *    keeps the file intact).
 * keyfile_read_sealed then reads it with the master key, with a different
 * master key, and header-only (mk NULL).
 *
 * Oracles: the result is 0, KEYFILE_E_INVALID, KEYFILE_E_AUTH or -errno;
 * on a refusal the seed is untouched, or all zero after KEYFILE_E_AUTH
 * (libsodium clears the output of a failed decryption): never
 * unauthenticated plaintext; an intact written file reads
 * back with the same header and seed; a changed byte is never accepted
 * with different contents (header bytes are authenticated as associated
 * data: accepted means identical meta and seed); under another master key
 * a format 2 file never opens; the header-only read of a file that opens
 * gives the same header.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "keyfile.h"
#include "log.h"

#include "fuzz.h"

static char dir[256];
static int dfd = -1;
static const uint8_t mk[32] = "sigil fuzz master key 0123456789";

static void cleanup(void)
{
	if (dfd >= 0)
		close(dfd);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct stat st;

	log_set_max_priority(LOG_PRIO_ERR - 1);
	snprintf(dir, sizeof(dir), "%s/sigil-fuzz-sealed.XXXXXX", stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(dir) != NULL);
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(dfd >= 0);
	atexit(cleanup);
	return 0;
}

/* untouched, or zeroed after a failed authentication */
static int no_plaintext(const uint8_t seed[32], const uint8_t marker[32], int r)
{
	static const uint8_t zero[32];

	return memcmp(seed, marker, 32) == 0 || (r == KEYFILE_E_AUTH && memcmp(seed, zero, 32) == 0);
}

static int same_meta(const KeyFileMeta *a, const KeyFileMeta *b)
{
	return a->type == b->type && strcmp(a->label, b->label) == 0 && a->exportable == b->exportable &&
	       a->created == b->created && memcmp(a->public_key, b->public_key, 32) == 0 &&
	       a->policy_len == b->policy_len && memcmp(a->policy, b->policy, a->policy_len) == 0;
}

static int read_all(const char *name, uint8_t *buf, size_t cap, size_t *lenp)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap);
	close(fd);
	if (n < 0)
		return -1;
	*lenp = (size_t)n;
	return 0;
}

static void write_file(const char *name, const uint8_t *p, size_t n)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n);
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static KeyFileMeta w, m, m2;
	FuzzIn in = { data, size };
	uint8_t flags = fuzz_u8(&in), seed[32], marker[32], wseed[32], other[32];
	char name[PROTO_LABEL_MAX + 16] = "fuzz" KEYFILE_SUFFIX;
	int constructed = flags & 1, changed = 0, r;

	if (constructed) {
		static uint8_t file[8192];
		size_t flen, llen, plen, pos;
		uint8_t x;

		memset(&w, 0, sizeof(w));
		w.type = (ProtoKeyType)(fuzz_u8(&in) & 1);
		w.exportable = fuzz_u8(&in) & 1;
		w.created = (int64_t)((uint64_t)fuzz_u8(&in) << 40 | (uint64_t)fuzz_u8(&in) << 8 | fuzz_u8(&in));
		llen = 1 + fuzz_u8(&in) % PROTO_LABEL_MAX;
		plen = fuzz_u8(&in) % 64;
		fuzz_bytes(&in, wseed, 32);
		fuzz_bytes(&in, w.public_key, 32);
		for (size_t i = 0; i < llen; i++)
			w.label[i] = "abcdefghijklmnopqrstuvwxyz0123456789._@+-ABCDEFGHIJKLMNOPQRSTUVWXYZ"[fuzz_u8(&in) % 67];
		w.label[llen] = '\0';
		/* the writer trusts its caller (the handler checks labels): give it
		 * valid ones only ("." and ".." are not) */
		if (!proto_label_valid(w.label, llen)) {
			llen = 1;
			memcpy(w.label, "k", 2);
		}
		fuzz_bytes(&in, w.policy, plen);
		w.policy_len = plen;
		pos = (size_t)fuzz_u8(&in) << 8 | fuzz_u8(&in);
		x = fuzz_u8(&in);
		snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, w.label);
		r = keyfile_write_sealed(dfd, &w, mk, wseed);
		FUZZ_CHECK(r == 0);
		FUZZ_CHECK(read_all(name, file, sizeof(file), &flen) == 0 && flen > 0);
		if (x) {
			file[pos % flen] ^= x;
			changed = 1;
			write_file(name, file, flen);
		}
	} else {
		write_file(name, in.p, in.n);
	}

	memset(marker, 0xa7, sizeof(marker));
	memcpy(seed, marker, 32);
	memset(&m, 0, sizeof(m));
	r = keyfile_read_sealed(dfd, name, mk, &m, seed);
	FUZZ_CHECK(r == 0 || r == KEYFILE_E_INVALID || r == KEYFILE_E_AUTH);
	if (r)
		FUZZ_CHECK(no_plaintext(seed, marker, r));
	if (constructed && !changed) {
		FUZZ_CHECK(r == 0 && m.version == 2);
		FUZZ_CHECK(same_meta(&m, &w) && memcmp(seed, wseed, 32) == 0);
	}
	if (constructed && changed && r == 0) {
		/* a changed byte may only be one the format ignores */
		FUZZ_CHECK(same_meta(&m, &w) && memcmp(seed, wseed, 32) == 0);
	}
	if (r == 0 && m.version == 2) {
		/* under another master key it must not open */
		memcpy(other, mk, 32);
		other[0] ^= 1;
		memcpy(seed, marker, 32);
		FUZZ_CHECK(keyfile_read_sealed(dfd, name, other, &m2, seed) == KEYFILE_E_AUTH);
		FUZZ_CHECK(no_plaintext(seed, marker, KEYFILE_E_AUTH));
		/* the header alone */
		memset(&m2, 0, sizeof(m2));
		FUZZ_CHECK(keyfile_read_sealed(dfd, name, NULL, &m2, seed) == 0);
		FUZZ_CHECK(same_meta(&m, &m2) && m2.version == 2);
	}
	sigil_wipe(seed, sizeof(seed));
	FUZZ_CHECK(unlinkat(dfd, name, 0) == 0);
	return 0;
}
