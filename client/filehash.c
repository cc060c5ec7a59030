/* SPDX-License-Identifier: MIT */
/*
 * filehash.c - streaming digests of (large) files, with a progress bar
 *
 * Public data only: the files hashed here are what gets signed or verified.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include <sigil/crypto.h>

#include "filehash.h"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void progress(const char *name, uint64_t done, uint64_t total, bool final)
{
	char bar[41];
	unsigned pct = total ? (unsigned)(done * 100 / total) : 100;
	unsigned fill = pct * 40 / 100;

	memset(bar, '#', fill);
	memset(bar + fill, '.', 40 - fill);
	bar[40] = '\0';
	fprintf(stderr, "\r%s [%s] %3u%% %llu/%llu MiB", name, bar, pct,
	        (unsigned long long)(done >> 20), (unsigned long long)(total >> 20));
	if (final)
		fputc('\n', stderr);
	fflush(stderr);
}

int filehash_fd(int fd, unsigned which, FileHashes *out, const char *name)
{
	sigil_sha512_ctx s512;
	crypto_hash_sha256_state s256;
	crypto_generichash_state b2;
	struct stat st;
	uint8_t *buf;
	uint64_t total = 0, last = 0;
	bool bar = false;

	memset(out, 0, sizeof(*out));
	buf = malloc(FILEHASH_CHUNK);
	if (!buf)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		total = (uint64_t)st.st_size;
		bar = isatty(STDERR_FILENO) && total >= FILEHASH_PROGRESS_MIN;
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	}
	if (which & FILEHASH_SHA512)
		sigil_sha512_init(&s512);
	if (which & FILEHASH_SHA256)
		crypto_hash_sha256_init(&s256);
	if (which & FILEHASH_BLAKE2B)
		crypto_generichash_init(&b2, NULL, 0, 64);
	for (;;) {
		ssize_t n = read(fd, buf, FILEHASH_CHUNK);

		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		if (which & FILEHASH_SHA512)
			sigil_sha512_update(&s512, buf, (size_t)n);
		if (which & FILEHASH_SHA256)
			crypto_hash_sha256_update(&s256, buf, (size_t)n);
		if (which & FILEHASH_BLAKE2B)
			crypto_generichash_update(&b2, buf, (size_t)n);
		out->size += (uint64_t)n;
		if (bar && now_ms() - last >= 200) {
			last = now_ms();
			progress(name, out->size, total > out->size ? total : out->size, false);
		}
	}
	if (bar)
		progress(name, out->size, out->size, true);
	free(buf);
	if (which & FILEHASH_SHA512)
		sigil_sha512_final(&s512, out->sha512);
	if (which & FILEHASH_SHA256)
		crypto_hash_sha256_final(&s256, out->sha256);
	if (which & FILEHASH_BLAKE2B)
		crypto_generichash_final(&b2, out->blake2b, 64);
	return 0;
}

int filehash_slurp(int fd, size_t max, uint8_t **datap, size_t *lenp)
{
	size_t len = 0, cap = 0;
	uint8_t *data = NULL;
	struct stat st;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > max) {
		errno = EFBIG;
		return -1;
	}
	for (;;) {
		ssize_t n;

		if (len == cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			uint8_t *p;

			if (cap > max) {
				free(data);
				errno = EFBIG;
				return -1;
			}
			p = realloc(data, ncap);
			if (!p) {
				free(data);
				errno = ENOMEM;
				return -1;
			}
			data = p;
			cap = ncap;
		}
		n = read(fd, data + len, cap - len);
		if (n < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(data);
			errno = e;
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			free(data);
			errno = EFBIG;
			return -1;
		}
	}
	*datap = data;
	*lenp = len;
	return 0;
}
