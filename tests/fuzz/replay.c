/* SPDX-License-Identifier: MIT */
/*
 * replay.c - run a fuzz target on files without libFuzzer
 *
 * Usage: replay-<target> PATH...   (files, or directories of files)
 * Runs LLVMFuzzerTestOneInput on each file and prints a TAP line per path
 * argument. A failed oracle aborts, which fails the test. An empty
 * directory, or one that cannot be read, is a failure: a replay that
 * replays nothing must not pass.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	return 0;
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "# cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		if (n == cap) {
			uint8_t *nb;

			cap = cap ? 2 * cap : 4096;
			nb = realloc(buf, cap);
			if (!nb) {
				free(buf);
				fclose(f);
				return -1;
			}
			buf = nb;
		}
		size_t k = fread(buf + n, 1, cap - n, f);

		n += k;
		if (k == 0)
			break;
	}
	fclose(f);
	/* like libFuzzer: a copy of exactly n bytes, so ASan sees overreads */
	{
		uint8_t *exact = malloc(n ? n : 1);

		if (!exact) {
			free(buf);
			return -1;
		}
		memcpy(exact, buf, n);
		free(buf);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
	}
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Return: number of files run, or -1 */
static long run_path(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	long count = 0;

	if (stat(path, &st) < 0) {
		fprintf(stderr, "# %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return run_file(path) < 0 ? -1 : 1;
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char **nn;

		if (e->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		names[n] = malloc(strlen(path) + strlen(e->d_name) + 2);
		if (!names[n])
			break;
		sprintf(names[n], "%s/%s", path, e->d_name);
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (count >= 0 && run_file(names[i]) == 0)
			count++;
		else
			count = -1;
		free(names[i]);
	}
	free(names);
	return count;
}

int main(int argc, char **argv)
{
	int fails = 0;

	LLVMFuzzerInitialize(&argc, &argv);
	printf("1..%d\n", argc - 1);
	for (int i = 1; i < argc; i++) {
		long k = run_path(argv[i]);

		if (k <= 0) {
			printf("not ok %d - %s: %s\n", i, argv[i], k == 0 ? "no inputs" : "unreadable");
			fails++;
		} else {
			printf("ok %d - %s: %ld inputs replayed\n", i, argv[i], k);
		}
		fflush(stdout);
	}
	return fails ? 1 : 0;
}
