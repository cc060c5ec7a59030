/* SPDX-License-Identifier: MIT */
/*
 * keyfile.c - the key file format
 *
 * Format 2, sealed (big-endian integers), 56 + n + p + 72 bytes:
 *   0   8  magic "SIGILKEY"
 *   8   1  version (2)
 *   9   1  type (0 ed25519, 1 x25519)
 *   10  1  flags (bit 0: exportable; other bits zero)
 *   11  1  label_len n (1..64)
 *   12  8  created (unix seconds, signed)
 *   20  32 public key
 *   52  2  policy_len p (0..KEYFILE_POLICY_MAX)
 *   54  1  header flags: bit 0, an owner field follows the policy (other bits zero;
 *          files written before owners existed have 0: sigild's uid owns them)
 *   55  1  reserved (zero)
 *   56  n  label (must equal the file name without ".key")
 *   56+n p policy (daemon/policy.c)
 *   then, with header flag bit 0: owner uid (4)
 *   then 72: nonce (24), XChaCha20-Poly1305 ciphertext of the seed (32),
 *            tag (16); the associated data is every byte before the nonce,
 *            so a changed header fails to open.
 *
 * Format 1, unsealed (read only, for migration): 20 + n + 32 bytes:
 *   magic, version 1, type, flags, label_len, created as above, then the
 *   label and the seed in plain form.
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
#include "seal.h"

#define KEYFILE_MAGIC "SIGILKEY"
#define KEYFILE_V1_HDR 20
#define KEYFILE_V2_HDR 56
#define KEYFILE_OWNER_LEN 4
#define KEYFILE_MAX (KEYFILE_V2_HDR + PROTO_LABEL_MAX + KEYFILE_POLICY_MAX + KEYFILE_OWNER_LEN + SEAL_BOX_LEN)

int keyfile_write_sealed(int dirfd, const KeyFileMeta *meta, const uint8_t mk[32], const uint8_t seed[32])
{
	uint8_t buf[KEYFILE_MAX];
	char name[PROTO_LABEL_MAX + 8];
	size_t llen = strlen(meta->label), n;
	uint64_t created = (uint64_t)meta->created;
	int r;

	if (llen < 1 || llen > PROTO_LABEL_MAX || meta->policy_len > KEYFILE_POLICY_MAX)
		return -EINVAL;
	memcpy(buf, KEYFILE_MAGIC, 8);
	buf[8] = 2;
	buf[9] = (uint8_t)meta->type;
	buf[10] = meta->exportable ? 1 : 0;
	buf[11] = (uint8_t)llen;
	for (int i = 0; i < 8; i++)
		buf[12 + i] = (uint8_t)(created >> (56 - 8 * i));
	memcpy(buf + 20, meta->public_key, 32);
	buf[52] = (uint8_t)(meta->policy_len >> 8);
	buf[53] = (uint8_t)meta->policy_len;
	buf[54] = meta->has_owner ? 1 : 0;
	buf[55] = 0;
	memcpy(buf + KEYFILE_V2_HDR, meta->label, llen);
	memcpy(buf + KEYFILE_V2_HDR + llen, meta->policy, meta->policy_len);
	n = KEYFILE_V2_HDR + llen + meta->policy_len;
	if (meta->has_owner) {
		for (int i = 0; i < 4; i++)
			buf[n + i] = (uint8_t)(meta->owner >> (24 - 8 * i));
		n += KEYFILE_OWNER_LEN;
	}
	seal_box(buf + n, mk, buf, n, seed);
	n += SEAL_BOX_LEN;

	snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, meta->label);
	r = seal_write_file(dirfd, name, buf, n);
	sigil_wipe(buf, sizeof(buf));
	return r;
}

static int parse_common(const uint8_t *buf, size_t llen, KeyFileMeta *meta)
{
	uint64_t created = 0;

	if (buf[9] > PROTO_KEY_X25519 || (buf[10] & ~1u))
		return KEYFILE_E_INVALID;
	if (llen < 1 || llen > PROTO_LABEL_MAX)
		return KEYFILE_E_INVALID;
	for (int i = 0; i < 8; i++)
		created = (created << 8) | buf[12 + i];
	meta->type = (ProtoKeyType)buf[9];
	meta->exportable = buf[10] & 1;
	meta->created = (int64_t)created;
	return 0;
}

int keyfile_read_sealed(int dirfd, const char *name, const uint8_t *mk, KeyFileMeta *meta, uint8_t seed[32])
{
	uint8_t buf[KEYFILE_MAX + 1];
	size_t n = 0, llen, plen = 0, olen = 0, hdr, nlen = strlen(name);
	const uint8_t *label;
	struct stat st;
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
	if (n < KEYFILE_V1_HDR + 1 + 32 || memcmp(buf, KEYFILE_MAGIC, 8) != 0)
		goto out;
	llen = buf[11];
	if (buf[8] == 1) {
		hdr = KEYFILE_V1_HDR;
		if (n != hdr + llen + 32)
			goto out;
	} else if (buf[8] == 2) {
		hdr = KEYFILE_V2_HDR;
		if (n < hdr)
			goto out;
		plen = (size_t)buf[52] << 8 | buf[53];
		olen = buf[54] & 1 ? KEYFILE_OWNER_LEN : 0;
		if ((buf[54] & ~1u) || buf[55] || plen > KEYFILE_POLICY_MAX || n != hdr + llen + plen + olen + SEAL_BOX_LEN)
			goto out;
	} else {
		goto out;
	}
	if (parse_common(buf, llen, meta))
		goto out;
	label = buf + hdr;
	if (!proto_label_valid((const char *)label, llen))
		goto out;
	/* the label inside must match the file name */
	if (nlen != llen + strlen(KEYFILE_SUFFIX) || memcmp(name, label, llen) != 0)
		goto out;
	memcpy(meta->label, label, llen);
	meta->label[llen] = '\0';
	meta->version = buf[8];
	meta->policy_len = plen;
	meta->has_owner = false;
	meta->owner = 0;
	if (buf[8] == 1) {
		memset(meta->public_key, 0, 32);
		memcpy(seed, label + llen, 32);
		r = 0;
		goto out;
	}
	memcpy(meta->public_key, buf + 20, 32);
	memcpy(meta->policy, label + llen, plen);
	meta->has_owner = olen != 0;
	for (size_t i = 0; i < olen; i++)
		meta->owner = meta->owner << 8 | label[llen + plen + i];
	r = 0;
	if (mk && seal_open(seed, mk, buf, hdr + llen + plen + olen, buf + hdr + llen + plen + olen) != 0)
		r = KEYFILE_E_AUTH;
out:
	sigil_wipe(buf, sizeof(buf));
	return r;
}

int keyfile_read(int dirfd, const char *name, KeyFileMeta *meta, uint8_t seed[32])
{
	KeyFileMeta m;
	uint8_t s[32];
	/* a dummy key: a format 2 file is refused below whatever it gives */
	static const uint8_t no_key[32];
	int r = keyfile_read_sealed(dirfd, name, no_key, &m, s);

	if (r == 0 && m.version != 1)
		r = KEYFILE_E_INVALID;
	else if (r == KEYFILE_E_AUTH)
		r = KEYFILE_E_INVALID;
	if (r == 0) {
		*meta = m;
		memcpy(seed, s, 32);
	}
	sigil_wipe(s, sizeof(s));
	return r;
}

int keyfile_write(int dirfd, const KeyFileMeta *meta, const uint8_t seed[32])
{
	uint8_t buf[KEYFILE_V1_HDR + PROTO_LABEL_MAX + 32];
	char name[PROTO_LABEL_MAX + 8];
	size_t llen = strlen(meta->label);
	uint64_t created = (uint64_t)meta->created;
	int r;

	if (llen < 1 || llen > PROTO_LABEL_MAX)
		return -EINVAL;
	memcpy(buf, KEYFILE_MAGIC, 8);
	buf[8] = 1;
	buf[9] = (uint8_t)meta->type;
	buf[10] = meta->exportable ? 1 : 0;
	buf[11] = (uint8_t)llen;
	for (int i = 0; i < 8; i++)
		buf[12 + i] = (uint8_t)(created >> (56 - 8 * i));
	memcpy(buf + KEYFILE_V1_HDR, meta->label, llen);
	memcpy(buf + KEYFILE_V1_HDR + llen, seed, 32);
	snprintf(name, sizeof(name), "%s" KEYFILE_SUFFIX, meta->label);
	r = seal_write_file(dirfd, name, buf, KEYFILE_V1_HDR + llen + 32);
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
