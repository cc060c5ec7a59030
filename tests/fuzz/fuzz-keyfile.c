/* SPDX-License-Identifier: MIT */
/*
 * fuzz-keyfile.c - the key file parser (daemon/keyfile.c, format version 1)
 * and the keystore loading it
 *
 * Input: one byte choosing the file name, then the file's content. The
 * name is the label found in the content (when it is a valid label) plus
 * ".key", or a fixed "fuzz.key"; the file goes into keys/ of a state
 * directory on tmpfs (/dev/shm when it exists).
 *
 * Oracles:
 * - keyfile_read returns 0, KEYFILE_E_INVALID or -errno, and leaves the
 *   seed untouched when it refuses;
 * - a file it accepts is canonical: keyfile_write of what it read gives
 *   back the same bytes;
 * - keystore_open, the daemon's loader, holds one key exactly when
 *   keyfile_read accepted the file, with the label, type and public key of
 *   the seed (sealed key files, issue 6, will get their own target).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sigil/crypto.h>

#include "keyfile.h"
#include "keystore.h"
#include "log.h"
#include "secmem.h"

#include "fuzz.h"

static char state_dir[256];
static int keys_fd = -1;

/* Remove every file sigild's keystore left in dir (keys, master.key, locks). */
static void remove_files(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[600];

	if (!d)
		return;
	while ((e = readdir(d))) {
		if (e->d_type != DT_REG && e->d_type != DT_LNK)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
}

static void cleanup(void)
{
	char path[300];

	if (keys_fd >= 0)
		close(keys_fd);
	snprintf(path, sizeof(path), "%s/keys", state_dir);
	remove_files(path);
	rmdir(path);
	remove_files(state_dir);
	rmdir(state_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[300];
	struct stat st;

	log_set_max_priority(LOG_PRIO_ERR - 1); /* the parser's warnings are expected */
	FUZZ_CHECK(secmem_setup(true) == 0);
	snprintf(state_dir, sizeof(state_dir), "%s/sigil-fuzz-keyfile.XXXXXX",
	         stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp");
	FUZZ_CHECK(mkdtemp(state_dir) != NULL);
	snprintf(path, sizeof(path), "%s/keys", state_dir);
	FUZZ_CHECK(mkdir(path, 0700) == 0);
	keys_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	FUZZ_CHECK(keys_fd >= 0);
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char name[PROTO_LABEL_MAX + 16] = "fuzz" KEYFILE_SUFFIX;
	const uint8_t *content;
	size_t len;
	uint8_t seed[32], marker[32];
	KeyFileMeta meta;
	int fd, r;

	if (size < 1)
		return 0;
	content = data + 1;
	len = size - 1;
	if ((data[0] & 1) && len > 12 && content[11] >= 1 && content[11] <= PROTO_LABEL_MAX &&
	    len >= 20u + content[11] && proto_label_valid((const char *)content + 20, content[11])) {
		memcpy(name, content + 20, content[11]);
		memcpy(name + content[11], KEYFILE_SUFFIX, sizeof(KEYFILE_SUFFIX));
	}

	fd = openat(keys_fd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(len == 0 || write(fd, content, len) == (ssize_t)len);
	close(fd);

	memset(marker, 0x5a, sizeof(marker));
	memcpy(seed, marker, sizeof(seed));
	r = keyfile_read(keys_fd, name, &meta, seed);
	FUZZ_CHECK(r == 0 || r == KEYFILE_E_INVALID || r < 0);
	FUZZ_CHECK(r >= 0); /* a regular file we just wrote must be readable */
	if (r)
		FUZZ_CHECK(memcmp(seed, marker, sizeof(seed)) == 0);

	if (r == 0) {
		uint8_t back[256];
		ssize_t n;

		FUZZ_CHECK(strlen(meta.label) + strlen(KEYFILE_SUFFIX) == strlen(name));
		FUZZ_CHECK(keyfile_write(keys_fd, &meta, seed) == 0);
		fd = openat(keys_fd, name, O_RDONLY | O_CLOEXEC);
		FUZZ_CHECK(fd >= 0);
		n = read(fd, back, sizeof(back));
		close(fd);
		FUZZ_CHECK(n == (ssize_t)len && memcmp(back, content, len) == 0);
	}

	/* the daemon's loader over the same directory (labels starting with
	 * '.' were once skipped by it: regressions/keyfile/label-starting-with-dot) */
	{
		Keystore ks = KEYSTORE_NULL(ks);

		FUZZ_CHECK(keystore_open(&ks, state_dir) == 0);
		FUZZ_CHECK(keystore_count(&ks) == (r == 0 ? 1u : 0u));
		if (r == 0) {
			Key *k = keystore_find(&ks, meta.label);
			uint8_t pk[32];

			FUZZ_CHECK(k != NULL);
			FUZZ_CHECK(k->info.type == meta.type);
			FUZZ_CHECK(k->info.exportable == meta.exportable);
			FUZZ_CHECK(k->info.created == meta.created);
			if (meta.type == PROTO_KEY_ED25519) {
				sigil_ed25519_expanded ek;

				sigil_ed25519_expand(&ek, seed);
				memcpy(pk, ek.pk, 32);
				sigil_wipe(&ek, sizeof(ek));
			} else {
				sigil_x25519_public(pk, seed);
			}
			FUZZ_CHECK(memcmp(pk, k->info.public_key, 32) == 0);
		}
		keystore_close(&ks);
	}
	sigil_wipe(seed, sizeof(seed));
	FUZZ_CHECK(unlinkat(keys_fd, name, 0) == 0);
	return 0;
}
