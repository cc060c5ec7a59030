/* SPDX-License-Identifier: MIT */
/*
 * wakeup-floor.c - what one depth-1 request costs a server that does no work
 * (issue 11): the kernel's share of sigild's CPU per request, measured apart.
 *
 * Usage: wakeup-floor [--connections N] [--seconds S] [--size BYTES] [--json]
 *
 * One server thread waits in epoll_wait on N Unix stream socket pairs and
 * answers each message of BYTES bytes (default 100, about a sign request)
 * with one of 100 bytes (about a sign answer), as sigild's loop does: one
 * read(2) and one write(2) per request, the write waking the client. N
 * client threads each send a message and block in read(2) for the answer
 * (depth 1). Reports requests/s and the server thread's CPU time per
 * request (CLOCK_THREAD_CPUTIME_ID): the floor under sigild's "daemon CPU
 * per request" at depth 1, with no decoding, crypto, audit or allocation.
 * Not a test: it measures and prints.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 1024

static atomic_bool stop_flag;
static size_t msg_size = 100;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "wakeup-floor: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* read exactly n bytes; false at EOF */
static bool read_full(int fd, uint8_t *p, size_t n)
{
	while (n > 0) {
		ssize_t r = read(fd, p, n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return false;
		p += r;
		n -= (size_t)r;
	}
	return true;
}

typedef struct client {
	pthread_t t;
	int fd;
	uint64_t done;
} client;

static void *client_main(void *arg)
{
	client *c = arg;
	uint8_t buf[4096] = { 0 };

	while (!atomic_load_explicit(&stop_flag, memory_order_relaxed)) {
		if (write(c->fd, buf, msg_size) != (ssize_t)msg_size)
			die("client write");
		if (!read_full(c->fd, buf, 100))
			die("client read");
		c->done++;
	}
	shutdown(c->fd, SHUT_WR);
	return NULL;
}

typedef struct server {
	pthread_t t;
	int ep;
	int nconns;
	uint64_t served;
	uint64_t cpu_ns;
} server;

static void *server_main(void *arg)
{
	server *s = arg;
	struct epoll_event ev[64];
	uint8_t buf[65536], answer[100] = { 0 };
	uint64_t cpu0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
	int n_open = s->nconns;

	while (n_open > 0) {
		int n = epoll_wait(s->ep, ev, 64, -1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			die("epoll_wait");
		for (int i = 0; i < n; i++) {
			int fd = ev[i].data.fd;
			ssize_t r = read(fd, buf, sizeof(buf));

			if (r <= 0) {
				epoll_ctl(s->ep, EPOLL_CTL_DEL, fd, NULL);
				n_open--;
				continue;
			}
			/* one answer per whole message received */
			for (ssize_t k = 0; k + (ssize_t)msg_size <= r; k += (ssize_t)msg_size) {
				if (write(fd, answer, sizeof(answer)) != (ssize_t)sizeof(answer))
					die("server write");
				s->served++;
			}
		}
	}
	s->cpu_ns = clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	return NULL;
}

int main(int argc, char **argv)
{
	int nconns = 1;
	double seconds = 2.0;
	bool json = false;
	server s = { 0 };
	client *cl;
	uint64_t t0, t1, total = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--connections") && i + 1 < argc)
			nconns = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--seconds") && i + 1 < argc)
			seconds = atof(argv[++i]);
		else if (!strcmp(argv[i], "--size") && i + 1 < argc)
			msg_size = (size_t)atol(argv[++i]);
		else if (!strcmp(argv[i], "--json"))
			json = true;
		else {
			fprintf(stderr, "usage: wakeup-floor [--connections N] [--seconds S] [--size BYTES] [--json]\n");
			return 2;
		}
	}
	if (nconns < 1 || nconns > MAX_CONNS || seconds <= 0 || msg_size < 1 || msg_size > 4096) {
		fprintf(stderr, "wakeup-floor: connections 1..%d, seconds > 0, size 1..4096\n", MAX_CONNS);
		return 2;
	}
	cl = calloc((size_t)nconns, sizeof(*cl));
	s.ep = epoll_create1(0);
	if (!cl || s.ep < 0)
		die("setup");
	s.nconns = nconns;
	for (int i = 0; i < nconns; i++) {
		int sv[2];
		struct epoll_event ev = { .events = EPOLLIN };

		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
			die("socketpair");
		ev.data.fd = sv[0];
		if (epoll_ctl(s.ep, EPOLL_CTL_ADD, sv[0], &ev) < 0)
			die("epoll_ctl");
		cl[i].fd = sv[1];
	}
	if (pthread_create(&s.t, NULL, server_main, &s))
		die("pthread_create");
	t0 = clock_ns(CLOCK_MONOTONIC);
	for (int i = 0; i < nconns; i++)
		if (pthread_create(&cl[i].t, NULL, client_main, &cl[i]))
			die("pthread_create");
	while (clock_ns(CLOCK_MONOTONIC) - t0 < (uint64_t)(seconds * 1e9))
		usleep(10000);
	atomic_store(&stop_flag, true);
	for (int i = 0; i < nconns; i++) {
		pthread_join(cl[i].t, NULL);
		total += cl[i].done;
	}
	t1 = clock_ns(CLOCK_MONOTONIC);
	pthread_join(s.t, NULL);
	if (s.served == 0) {
		fprintf(stderr, "wakeup-floor: no request was served\n");
		return 1;
	}
	if (json)
		printf("{\"connections\":%d,\"seconds\":%.3f,\"requests\":%llu,\"requests_per_s\":%.1f,"
		       "\"server_cpu_us_per_req\":%.3f}\n",
		       nconns, (double)(t1 - t0) / 1e9, (unsigned long long)total, (double)total * 1e9 / (double)(t1 - t0),
		       (double)s.cpu_ns / 1000.0 / (double)s.served);
	else
		printf("wakeup-floor: %d connection(s), depth 1: %llu requests in %.2f s = %.0f req/s; "
		       "server thread CPU %.2f us per request\n",
		       nconns, (unsigned long long)total, (double)(t1 - t0) / 1e9, (double)total * 1e9 / (double)(t1 - t0),
		       (double)s.cpu_ns / 1000.0 / (double)s.served);
	for (int i = 0; i < nconns; i++)
		close(cl[i].fd);
	free(cl);
	return 0;
}
