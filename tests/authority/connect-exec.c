// SPDX-License-Identifier: MIT
/*
 * connect-exec.c - connect to a Unix socket, then exec another program on it
 *
 * Usage: connect-exec [--hello] SOCKET PROGRAM [ARG...]
 *
 * Connects to SOCKET, moves the connection to fd 3 and execs PROGRAM with
 * its arguments, which inherits the connection: the peer that connected
 * is this program, the one that talks is PROGRAM (issue 16, defect 10:
 * the `exes` rule). With --hello it first asks sigild `hello` over the
 * connection and reads the answer, so that sigild has accepted the
 * connection (and read the peer's executable) before the exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* [0, 1, "hello", [{}]] in msgpack */
static const unsigned char hello[] = { 0x94, 0x00, 0x01, 0xa5, 'h', 'e', 'l', 'l', 'o', 0x91, 0x80 };

int main(int argc, char **argv)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int say_hello = argc > 1 && strcmp(argv[1], "--hello") == 0;
	char **rest = argv + 1 + say_hello;
	int fd;

	if (argc - 1 - say_hello < 2) {
		fprintf(stderr, "usage: connect-exec [--hello] SOCKET PROGRAM [ARG...]\n");
		return 2;
	}
	if (strlen(rest[0]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "connect-exec: socket path too long\n");
		return 2;
	}
	memcpy(sa.sun_path, rest[0], strlen(rest[0]) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		fprintf(stderr, "connect-exec: %s: %s\n", rest[0], strerror(errno));
		return 1;
	}
	if (say_hello) {
		unsigned char buf[4096];

		if (write(fd, hello, sizeof(hello)) != (ssize_t)sizeof(hello) || read(fd, buf, sizeof(buf)) <= 0) {
			fprintf(stderr, "connect-exec: hello: %s\n", strerror(errno));
			return 1;
		}
	}
	/* dup2 clears FD_CLOEXEC on the copy; fd 3 itself keeps it unless cleared */
	if (fd == 3 ? fcntl(fd, F_SETFD, 0) < 0 : dup2(fd, 3) < 0) {
		fprintf(stderr, "connect-exec: fd 3: %s\n", strerror(errno));
		return 1;
	}
	execv(rest[1], rest + 1);
	fprintf(stderr, "connect-exec: %s: %s\n", rest[1], strerror(errno));
	return 127;
}
