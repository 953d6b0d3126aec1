// SPDX-License-Identifier: MIT
/*
 * lp-filereq SOCKET PID:PATH...: a symbolizer that only asks for files.
 * Connects to a collector's --ring SOCKET, takes the ring (and reads it,
 * discarding the records), then for each PID:PATH asks on the file channel
 * for the file PID maps from PATH's device and inode, as the symbolizer
 * does, and prints
 * one line per request: "PID PATH ok" when a descriptor of that very file
 * came back, "PID PATH error -N (message)" for a refusal, "PID PATH no
 * answer" after 5 s. For tests/e2e/broker.sh.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include "lowprof/files.h"
#include "lowprof/ring.h"

static struct lp_ring *ring;

static uint64_t nread;

/* Reads what the collector wrote, so that it never waits for ring space. */
static void drain(void)
{
	const void *data;
	uint32_t len;

	while (ring && lp_ring__read(ring, &data, &len) == 0)
		nread++;
}

static int connect_ring(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int s, fds[2], nfds = 0;
	size_t size;
	void *mem;
	char how;

	if (strlen(path) >= sizeof(a.sun_path))
		return -1;
	strcpy(a.sun_path, path);
	for (int i = 0; i < 100; i++) {
		s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (s >= 0 && connect(s, (struct sockaddr *)&a, sizeof(a)) == 0)
			break;
		if (s >= 0)
			close(s);
		s = -1;
		usleep(100000);
	}
	if (s < 0 || lp_recv_msg(s, &how, 1, fds, 2, &nfds, 0, NULL) != 1 || nfds != 2)
		return -1;
	mem = lp_ring_map_fds(fds[0], fds[1], false, &size);
	ring = mem ? lp_ring__consumer(mem, size) : NULL;
	close(fds[0]);
	close(fds[1]);
	return ring ? s : -1;
}

/* The reply to id: its err, with *fd set when it carries one; 1: none came. */
static int ask(int s, uint32_t id, uint32_t pid, const struct stat *st, int *fd)
{
	struct lp_file_req q = {.magic = LP_FILE_REQ_MAGIC,
				.id = id,
				.pid = pid,
				.dev_major = major(st->st_dev),
				.dev_minor = minor(st->st_dev),
				.inode = st->st_ino};
	struct pollfd p = {s, POLLIN, 0};

	*fd = -1;
	if (lp_send_msg(s, &q, sizeof(q), NULL, 0))
		return 1;
	for (int waited = 0; waited < 5000; waited += 20) {
		struct lp_file_rep r;
		int got[1], n = 0;

		drain();
		if (poll(&p, 1, 20) != 1)
			continue;
		if (lp_recv_msg(s, &r, sizeof(r), got, 1, &n, 0, NULL) != sizeof(r))
			return 1;
		if (r.magic != LP_FILE_REP_MAGIC || r.id != id) {
			if (n)
				close(got[0]);
			continue;
		}
		if (n)
			*fd = got[0];
		return r.err;
	}
	return 1;
}

int main(int argc, char **argv)
{
	int s;

	if (argc < 3) {
		fprintf(stderr, "usage: lp-filereq SOCKET PID:PATH...\n");
		return 2;
	}
	s = connect_ring(argv[1]);
	if (s < 0) {
		fprintf(stderr, "lp-filereq: no ring from %s\n", argv[1]);
		return 1;
	}
	/*
	 * as the symbolizer, ask only once the collector has written: it may
	 * not take credentials on the channel before (the hand-off sets
	 * SO_PASSCRED after sending the ring)
	 */
	for (int i = 0; i < 500 && !nread; i++) {
		drain();
		usleep(10000);
	}
	for (int i = 2; i < argc; i++) {
		char *path = strchr(argv[i], ':');
		struct stat st, got;
		uint32_t pid;
		int fd, err;

		if (!path || stat(path + 1, &st))
			return 2;
		pid = (uint32_t)strtoul(argv[i], NULL, 10);
		err = ask(s, (uint32_t)i, pid, &st, &fd);
		if (err == 1)
			printf("%u %s no answer\n", pid, path + 1);
		else if (err)
			printf("%u %s error %d (%s)\n", pid, path + 1, err, strerror(-err));
		else
			printf("%u %s %s\n", pid, path + 1,
			       fd >= 0 && !fstat(fd, &got) && got.st_ino == st.st_ino &&
					       got.st_dev == st.st_dev
				       ? "ok"
				       : "wrong file");
		if (fd >= 0)
			close(fd);
		fflush(stdout);
	}
	close(s);
	return 0;
}
