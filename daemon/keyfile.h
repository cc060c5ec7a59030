/* SPDX-License-Identifier: MIT */
/*
 * keyfile.h - one file per key in the state directory
 *
 * This module is the only one that knows the on-disk format. Format 2 is
 * sealed (XChaCha20-Poly1305 under the master key, header as associated
 * data); format 1 (unsealed) is still read so that keystore.c can migrate
 * such files (seal them) on load.
 */
#ifndef SIGIL_DAEMON_KEYFILE_H
#define SIGIL_DAEMON_KEYFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define KEYFILE_SUFFIX ".key"
#define KEYFILE_POLICY_MAX 2048

typedef struct KeyFileMeta {
	ProtoKeyType type;
	char label[PROTO_LABEL_MAX + 1];
	bool exportable;
	int64_t created;
	uint8_t public_key[32];          /* format 2 only (format 1: zero) */
	uint8_t policy[KEYFILE_POLICY_MAX]; /* policy.c's encoding, opaque here */
	size_t policy_len;
	bool has_owner;                  /* format 2 with the owner field; else the owner is sigild's uid */
	uint32_t owner;                  /* the uid that created, imported or ssh-added the key */
	unsigned version;                /* the format read: 1 (unsealed) or 2 */
} KeyFileMeta;

enum {
	_KEYFILE_E_SUCCESS,
	KEYFILE_E_INVALID, /* not a key file of a version we read */
	KEYFILE_E_AUTH,    /* sealed, and does not open under this master key
	                    * (another master key, or the file was changed) */
};

/**
 * keyfile_write_sealed() - seal and write <label>.key atomically: temporary
 * file, fsync, rename, fsync of the directory. Mode 0600. Format 2.
 * @dirfd: the keys directory
 * @meta:  header; public_key and policy are stored, version is ignored
 * @mk:    the 32-byte master key
 * @seed:  32 secret bytes
 * Return: 0 or negative errno.
 */
int keyfile_write_sealed(int dirfd, const KeyFileMeta *meta, const uint8_t mk[32], const uint8_t seed[32]);

/**
 * keyfile_read_sealed() - read and check one key file of either format.
 * @name:  file name inside @dirfd
 * @mk:    the master key, or NULL to read the header only (format 2: @seed
 *         is then left alone)
 * @seed:  receives the 32 secret bytes (pass locked memory); a format 1
 *         file always fills it (meta->version tells which format it was)
 * Return: 0, KEYFILE_E_INVALID, KEYFILE_E_AUTH, or negative errno.
 */
int keyfile_read_sealed(int dirfd, const char *name, const uint8_t *mk, KeyFileMeta *meta, uint8_t seed[32]);

/*
 * Format 1 (unsealed), for migration: keyfile_read() reads only format 1
 * (a format 2 file is KEYFILE_E_INVALID to it) and keyfile_write() writes
 * format 1. sigild itself never writes format 1; the migration tests and
 * the key file fuzz target (tests/fuzz/fuzz-keyfile.c) use these.
 * Return: 0, KEYFILE_E_INVALID, or negative errno.
 */
int keyfile_read(int dirfd, const char *name, KeyFileMeta *meta, uint8_t seed[32]);
int keyfile_write(int dirfd, const KeyFileMeta *meta, const uint8_t seed[32]);

/* remove <label>.key and fsync the directory. Return: 0 or negative errno */
int keyfile_remove(int dirfd, const char *label);

/* the temporary name used while writing (tests use it to force a failure) */
#define KEYFILE_TMP_PREFIX "."
#define KEYFILE_TMP_SUFFIX ".key.tmp"

#endif /* SIGIL_DAEMON_KEYFILE_H */
