/* SPDX-License-Identifier: MIT */
/* vectors.c - read the line files under $SIGIL_VECTORS (vectors/README.md). */
#include "harness.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static char *vec_path(const char *relpath)
{
	const char *dir = getenv("SIGIL_VECTORS");
	if (dir == NULL || *dir == '\0') {
		print_error("SIGIL_VECTORS is not set: run the tests with meson test "
		            "(or export SIGIL_VECTORS=<source>/vectors)\n");
		fail();
	}
	size_t len = strlen(dir) + strlen(relpath) + 2;
	char *path = malloc(len);
	assert_non_null(path);
	snprintf(path, len, "%s/%s", dir, relpath);
	return path;
}

FILE *th_vec_open(const char *relpath)
{
	char *path = vec_path(relpath);
	FILE *f = fopen(path, "r");
	if (f == NULL) {
		print_error("cannot open vector file %s: %s\n", path, strerror(errno));
		free(path);
		fail();
	}
	free(path);
	return f;
}

char *th_vec_line(FILE *f, char **buf, size_t *cap)
{
	for (;;) {
		ssize_t r = getline(buf, cap, f);
		if (r < 0) {
			assert_false(ferror(f));
			return NULL;
		}
		char *s = *buf;
		while (*s && isspace((unsigned char)*s))
			s++;
		size_t len = strlen(s);
		while (len > 0 && isspace((unsigned char)s[len - 1]))
			s[--len] = '\0';
		if (len == 0 || s[0] == '#')
			continue;
		return s;
	}
}

int th_split(char *line, char sep, char **fields, int max)
{
	int n = 0;
	char *s = line;
	while (n < max) {
		fields[n++] = s;
		char *p = strchr(s, sep);
		if (p == NULL)
			return n;
		*p = '\0';
		s = p + 1;
	}
	return n + 1; /* more fields than max: the caller sees n > max */
}

char *th_vec_slurp(const char *relpath, size_t *len)
{
	FILE *f = th_vec_open(relpath);
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	assert_non_null(buf);
	for (;;) {
		if (cap - n < 4096) {
			cap *= 2;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		size_t r = fread(buf + n, 1, cap - n - 1, f);
		n += r;
		if (r == 0)
			break;
	}
	assert_false(ferror(f));
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

void th_vec_x25519(char **fields, int nf, uint8_t k[32], uint8_t u[32], uint8_t out[32])
{
	assert_int_equal(nf, 4);
	assert_int_equal(th_hex_decode(k, 32, fields[1]), 0);
	assert_int_equal(th_hex_decode(u, 32, fields[2]), 0);
	assert_int_equal(th_hex_decode(out, 32, fields[3]), 0);
}
