/* SPDX-License-Identifier: MIT */
/*
 * keyfile.h - one file per key in the state directory
 *
 * This module is the only one that knows the on-disk format, so that
 * sealing at rest (issue 6) can replace it.
 */
#ifndef SIGIL_DAEMON_KEYFILE_H
#define SIGIL_DAEMON_KEYFILE_H

#include <stdbool.h>
#include <stdint.h>

#include "proto.h"

#define KEYFILE_SUFFIX ".key"

typedef struct KeyFileMeta {
	ProtoKeyType type;
	char label[PROTO_LABEL_MAX + 1];
	bool exportable;
	int64_t created;
} KeyFileMeta;

enum {
	_KEYFILE_E_SUCCESS,
	KEYFILE_E_INVALID, /* not a key file of a version we read */
};

/**
 * keyfile_write() - write <label>.key atomically: temporary file, fsync,
 * rename, fsync of the directory. Mode 0600.
 * @dirfd: the keys directory
 * @seed:  32 secret bytes
 * Return: 0 or negative errno.
 */
int keyfile_write(int dirfd, const KeyFileMeta *meta, const uint8_t seed[32]);

/**
 * keyfile_read() - read and check one key file.
 * @name:  file name inside @dirfd
 * @seed:  receives the 32 secret bytes (pass locked memory)
 * Return: 0, KEYFILE_E_INVALID, or negative errno.
 */
int keyfile_read(int dirfd, const char *name, KeyFileMeta *meta, uint8_t seed[32]);

/* remove <label>.key and fsync the directory. Return: 0 or negative errno */
int keyfile_remove(int dirfd, const char *label);

/* the temporary name used while writing (tests use it to force a failure) */
#define KEYFILE_TMP_PREFIX "."
#define KEYFILE_TMP_SUFFIX ".key.tmp"

#endif /* SIGIL_DAEMON_KEYFILE_H */
