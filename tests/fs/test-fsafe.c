/* SPDX-License-Identifier: MIT */
/*
 * test-fsafe.c - the pieces of issue 17 where they are: fsafe_open() on
 * each kind of file (daemon/fsafe.c) and log_escape() on control
 * characters, terminal sequences and UTF-8 (daemon/log.c)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "fsafe.h"
#include "log.h"

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-fsafe-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static const char *path_of(const char *name)
{
	static char p[4][128]; /* two may be in use at once (symlink) */
	static unsigned i;

	i = (i + 1) % 4;
	snprintf(p[i], sizeof(p[i]), "%s/%s", dir, name);
	return p[i];
}

static void make_file(const char *name, mode_t mode)
{
	int fd = open(path_of(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "0123456789abcdef0123456789abcdef", 32), 32);
	close(fd);
	assert_int_equal(chmod(path_of(name), mode), 0);
}

/* fsafe_open(name) must fail with r and a message holding want */
static void refused(const char *name, unsigned flags, int r, const char *want)
{
	char why[512] = "";
	int fd = 7;

	assert_int_equal(fsafe_open(&fd, AT_FDCWD, path_of(name), O_RDONLY, flags, why, sizeof(why)), r);
	assert_int_equal(fd, -1);
	if (!strstr(why, want))
		fail_msg("\"%s\" not in \"%s\"", want, why);
}

static void test_fsafe_kinds(void **state)
{
	char why[512];
	int fd;

	(void)state;
	make_file("good", 0600);
	assert_int_equal(fsafe_open(&fd, AT_FDCWD, path_of("good"), O_RDONLY, FSAFE_SECRET, why, sizeof(why)), 0);
	assert_true(fd >= 0);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	/* 0644: fine for a config file, not for key material */
	make_file("public", 0644);
	assert_int_equal(fsafe_open(&fd, AT_FDCWD, path_of("public"), O_RDONLY, 0, why, sizeof(why)), 0);
	close(fd);
	refused("public", FSAFE_SECRET, FSAFE_E_UNSAFE, "mode 0644: group or others can read or write it");
	make_file("gw", 0620);
	refused("gw", 0, FSAFE_E_UNSAFE, "mode 0620: group or others can write it (chmod go-w");
	assert_int_equal(symlink(path_of("good"), path_of("link")), 0);
	refused("link", FSAFE_SECRET, FSAFE_E_UNSAFE, "is a symbolic link");
	assert_int_equal(mkfifo(path_of("fifo"), 0600), 0);
	refused("fifo", FSAFE_SECRET, FSAFE_E_UNSAFE, "is not a regular file (a FIFO)");
	assert_int_equal(mkdir(path_of("dir"), 0700), 0);
	refused("dir", 0, FSAFE_E_UNSAFE, "(a directory)");
	refused("missing", 0, -ENOENT, "cannot open");
	if (geteuid() == 0) {
		make_file("nobody", 0600);
		assert_int_equal(chown(path_of("nobody"), 65534, 65534), 0);
		refused("nobody", FSAFE_SECRET, FSAFE_E_UNSAFE, "belongs to uid 65534");
	}
	assert_int_equal(fsafe_open(&fd, AT_FDCWD, "/dev/zero", O_RDONLY, FSAFE_SECRET, why, sizeof(why)),
	                 FSAFE_E_UNSAFE);
	assert_non_null(strstr(why, "a character device"));
}

static void test_fsafe_create(void **state)
{
	char why[512];
	struct stat st;
	mode_t old = umask(0);
	int fd;

	(void)state;
	assert_int_equal(fsafe_open(&fd, AT_FDCWD, path_of("new"), O_WRONLY | O_APPEND, FSAFE_CREATE, why,
	                            sizeof(why)), 0);
	umask(old);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	close(fd);
	/* a dangling symlink is not followed to create its target */
	assert_int_equal(symlink(path_of("target"), path_of("dangling")), 0);
	refused("dangling", FSAFE_CREATE, FSAFE_E_UNSAFE, "symbolic link");
	assert_int_equal(access(path_of("target"), F_OK), -1);
}

static void escaped(const char *in, size_t len, unsigned flags, const char *want)
{
	char out[256];
	size_t n = log_escape(out, sizeof(out), in, len, flags);

	assert_int_equal(n, strlen(out));
	assert_string_equal(out, want);
}

static void test_log_escape(void **state)
{
	char small[8];

	(void)state;
	escaped("plain /usr/bin/ssh", 18, 0, "plain /usr/bin/ssh");
	/* OSC title, BEL, CSI clear, newline, DEL, NUL */
	escaped("a\x1b]0;t\x07" "b\x1b[2Jc\nd\x7f" "e", 17, 0, "a\\x1b]0;t\\x07b\\x1b[2Jc\\x0ad\\x7fe");
	escaped("a\nb\rc", 5, LOG_ESCAPE_NL_SPACE, "a b c");
	escaped("a\0b", 3, 0, "a\\x00b");
	/* valid UTF-8 passes; C1 controls (U+009B CSI) and invalid bytes do not */
	escaped("caf\xc3\xa9", 5, 0, "caf\xc3\xa9");
	escaped("\xc2\x9b" "1m", 4, 0, "\\xc2\\x9b1m");
	escaped("\x9b" "1m", 3, 0, "\\x9b1m");
	escaped("\xe2\x82", 2, 0, "\\xe2\\x82");
	escaped("\xc0\xaf", 2, 0, "\\xc0\\xaf"); /* overlong '/' */
	escaped("\xed\xa0\x80", 3, 0, "\\xed\\xa0\\x80"); /* surrogate */
	/* field values: spaces, quotes and backslashes too */
	escaped("/tmp/a b\"c\\d", 12, LOG_ESCAPE_FIELD, "/tmp/a\\x20b\\x22c\\x5cd");
	/* cut at a whole escape, always terminated */
	assert_int_equal(log_escape(small, sizeof(small), "ab\x1b\x1b", 4, 0), 6);
	assert_string_equal(small, "ab\\x1b");
	assert_int_equal(log_escape(small, 1, "abc", 3, 0), 0);
	assert_string_equal(small, "");
	/* cut inside a run of plain characters, and right after one */
	assert_int_equal(log_escape(small, sizeof(small), "abcdefghij", 10, 0), 7);
	assert_string_equal(small, "abcdefg");
	assert_int_equal(log_escape(small, sizeof(small), "abcdefg\x1b", 8, 0), 7);
	assert_string_equal(small, "abcdefg");
	assert_int_equal(log_escape(small, sizeof(small), "abc\x1b" "d", 5, 0), 7);
	assert_string_equal(small, "abc\\x1b");
	escaped("x y", 3, LOG_ESCAPE_FIELD | LOG_ESCAPE_NL_SPACE, "x\\x20y");
	/* long runs (taken eight bytes at a time) with each kind of stop at
	 * each position of a word */
	for (size_t at = 0; at < 24; at++) {
		static const char stops[] = { '\x1f', '\x7f', '\x00', '\n', '\x9b', '\xff' };
		for (size_t k = 0; k < sizeof(stops); k++) {
			char in[32], want[64];
			memset(in, '~', sizeof(in));
			in[at] = stops[k];
			snprintf(want, sizeof(want), "%.*s\\x%02x%.*s", (int)at, in, (unsigned char)stops[k],
			         (int)(sizeof(in) - at - 1), in + at + 1);
			escaped(in, sizeof(in), 0, want);
		}
		char in[33];
		memset(in, ' ', sizeof(in) - 1);
		in[at] = '\xc3', in[at + 1] = '\xa9'; /* UTF-8 passes */
		in[32] = '\0';
		escaped(in, 32, 0, in);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fsafe_kinds),
		cmocka_unit_test(test_fsafe_create),
		cmocka_unit_test(test_log_escape),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
