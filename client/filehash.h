/* SPDX-License-Identifier: MIT */
/*
 * filehash.h - stream a file through the digests the signature formats need
 *
 * Files are read in 1 MiB chunks, so signing or verifying a file of any size
 * takes bounded memory. A progress bar goes to stderr when it is a terminal
 * and the file is large (FILEHASH_PROGRESS_MIN bytes or more).
 */
#ifndef SIGIL_CLIENT_FILEHASH_H
#define SIGIL_CLIENT_FILEHASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FILEHASH_CHUNK (1024 * 1024)
#define FILEHASH_PROGRESS_MIN (64ull * 1024 * 1024)

enum {
	FILEHASH_SHA512 = 1 << 0,  /* SSHSIG (sha512), Ed25519ph */
	FILEHASH_SHA256 = 1 << 1,  /* SSHSIG (sha256) */
	FILEHASH_BLAKE2B = 1 << 2, /* minisign "ED": BLAKE2b-512, no key */
};

typedef struct FileHashes {
	uint8_t sha512[64];
	uint8_t sha256[32];
	uint8_t blake2b[64];
	uint64_t size;
} FileHashes;

/* Hashes everything readable from fd with the digests in `which`.
 * name is for the progress bar. 0, or -1 with errno set. */
int filehash_fd(int fd, unsigned which, FileHashes *out, const char *name);

/* Reads the whole of fd into a malloc'd buffer, refusing more than max
 * bytes (errno EFBIG). 0 or -1 with errno set. */
int filehash_slurp(int fd, size_t max, uint8_t **datap, size_t *lenp);

#endif /* SIGIL_CLIENT_FILEHASH_H */
