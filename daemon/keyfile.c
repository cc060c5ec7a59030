/* SPDX-License-Identifier: MIT */
/*
 * keyfile.c - the key file format, version 1 (unsealed)
 *
 * Layout (big-endian integers), exactly 20 + label_len + 32 bytes:
 *   0   8  magic "SIGILKEY"
 *   8   1  version (1)
 *   9   1  type (0 ed25519, 1 x25519)
 *   10  1  flags (bit 0: exportable; other bits zero)
 *   11  1  label_len (1..64)
 *   12  8  created (unix seconds, signed)
 *   20  n  label (must equal the file name without ".key")
 *   20+n 32 seed (secret)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "keyfile.h"
#include "log.h"

#define KEYFILE_MAGIC "SIGILKEY"
#define KEYFILE_VERSION 1
#define KEYFILE_HDR 20
#define KEYFILE_MAX (KEYFILE_HDR + PROTO_LABEL_MAX + 32)

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

int keyfile_write(int dirfd, const KeyFileMeta *meta, const uint8_t seed[32])
{
	uint8_t buf[KEYFILE_MAX];
	char tmp[PROTO_LABEL_MAX + 16], name[PROTO_LABEL_MAX + 8];
	size_t llen = strlen(meta->label), n;
	uint64_t created = (uint64_t)meta->created;
	int fd, r;

	if (llen < 1 || llen > PROTO_LABEL_MAX)
		return -EINVAL;
	memcpy(buf, KEYFILE_MAGIC, 8);
	buf[8] = KEYFILE_VERSION;
	buf[9] = (uint8_t)meta->type;
	buf[10] = meta->exportable ? 1 : 0;
	buf[11] = (uint8_t)llen;
	for (int i = 0; i < 8; i++)
		buf[12 + i] = (uint8_t)(created >> (56 - 8 * i));
	memcpy(buf + KEYFILE_HDR, meta->label, llen);
	memcpy(buf + KEYFILE_HDR + llen, seed, 32);
	n = KEYFILE_HDR + llen + 32;

	snprintf(tmp, sizeof(tmp), KEYFILE_TMP_PREFIX "%s" KEYFILE_TMP_SUFFIX, meta->label);
	snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, meta->label);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	r = write_all(fd, buf, n);
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
		goto out;
	}
	if (fsync(dirfd) < 0)
		r = -errno;
out:
	sigil_wipe(buf, sizeof(buf));
	return r;
}

int keyfile_read(int dirfd, const char *name, KeyFileMeta *meta, uint8_t seed[32])
{
	uint8_t buf[KEYFILE_MAX + 1];
	size_t n = 0, llen, nlen = strlen(name);
	struct stat st;
	uint64_t created = 0;
	int fd, r = 0;

	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return KEYFILE_E_INVALID;
	}
	while (n < sizeof(buf)) {
		ssize_t k = read(fd, buf + n, sizeof(buf) - n);

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
	if (r)
		goto out;
	r = KEYFILE_E_INVALID;
	if (n < KEYFILE_HDR + 1 + 32 || memcmp(buf, KEYFILE_MAGIC, 8) != 0 || buf[8] != KEYFILE_VERSION)
		goto out;
	if (buf[9] > PROTO_KEY_X25519 || (buf[10] & ~1u))
		goto out;
	llen = buf[11];
	if (llen < 1 || llen > PROTO_LABEL_MAX || n != KEYFILE_HDR + llen + 32)
		goto out;
	if (!proto_label_valid((const char *)buf + KEYFILE_HDR, llen))
		goto out;
	/* the label inside must match the file name */
	if (nlen != llen + strlen(KEYFILE_SUFFIX) || memcmp(name, buf + KEYFILE_HDR, llen) != 0)
		goto out;
	for (int i = 0; i < 8; i++)
		created = (created << 8) | buf[12 + i];
	meta->type = (ProtoKeyType)buf[9];
	meta->exportable = buf[10] & 1;
	meta->created = (int64_t)created;
	memcpy(meta->label, buf + KEYFILE_HDR, llen);
	meta->label[llen] = '\0';
	memcpy(seed, buf + KEYFILE_HDR + llen, 32);
	r = 0;
out:
	sigil_wipe(buf, sizeof(buf));
	return r;
}

int keyfile_remove(int dirfd, const char *label)
{
	char name[PROTO_LABEL_MAX + 8];

	snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, label);
	if (unlinkat(dirfd, name, 0) < 0)
		return -errno;
	if (fsync(dirfd) < 0)
		return -errno;
	return 0;
}
