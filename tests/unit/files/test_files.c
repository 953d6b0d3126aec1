// SPDX-License-Identifier: MIT
/*
 * Output files opened by privileged processes (no symlinks, no hard links,
 * no FIFOs), fd passing, and the sealed ring memfd that nobody can truncate.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowprof/files.h"
#include "lowprof/ring.h"

static char dir[64];

static int setup(void **state)
{
	strcpy(dir, "/tmp/lowprof-files.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void test_output_dir_and_files(void **state)
{
	char sub[128], victim[128], path[160];
	struct stat st;
	int dfd, fd;

	snprintf(sub, sizeof(sub), "%s/a/b/c", dir);
	dfd = lp_open_output_dir(sub);
	assert_true(dfd >= 0);

	/* a new file, then the same file again: truncated */
	fd = lp_open_output_file(dfd, "out");
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	fd = lp_open_output_file(dfd, "out");
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(st.st_size, 0);
	close(fd);

	/* a symlink planted at the output name is refused, its target untouched */
	snprintf(victim, sizeof(victim), "%s/victim", dir);
	fd = open(victim, O_WRONLY | O_CREAT, 0600);
	assert_int_equal(write(fd, "keep", 4), 4);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", sub);
	assert_int_equal(symlink(victim, path), 0);
	assert_int_equal(lp_open_output_file(dfd, "link"), -ELOOP);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);

	/* a hard link to another file is refused, not truncated */
	snprintf(path, sizeof(path), "%s/hard", sub);
	assert_int_equal(link(victim, path), 0);
	assert_int_equal(lp_open_output_file(dfd, "hard"), -EINVAL);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);

	/* a FIFO neither blocks nor is accepted */
	snprintf(path, sizeof(path), "%s/fifo", sub);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_true(lp_open_output_file(dfd, "fifo") < 0);
	close(dfd);

	/* a file where the directory should be */
	assert_int_equal(lp_open_output_dir(victim), -ENOTDIR);
}

static void test_fd_passing(void **state)
{
	int sv[2], fd, got;
	char buf[8] = {0};

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	fd = open("/proc/self/stat", O_RDONLY);
	assert_true(fd >= 0);
	assert_int_equal(lp_send_fd(sv[0], fd), 0);
	got = lp_recv_fd(sv[1]);
	assert_true(got >= 0 && got != fd);
	assert_true(fcntl(got, F_GETFD) & FD_CLOEXEC);
	assert_true(read(got, buf, 1) == 1);
	close(got);
	close(fd);
	/* a plain byte carries no fd */
	assert_int_equal(write(sv[0], "x", 1), 1);
	assert_int_equal(lp_recv_fd(sv[1]), -EBADMSG);
	close(sv[0]);
	assert_int_equal(lp_recv_fd(sv[1]), -EPIPE);
	close(sv[1]);
}

static void test_sealed_ring(void **state)
{
	int fd = lp_ring_create_memfd(1 << 16), plain;
	struct lp_ring *r;
	size_t size;
	void *mem;

	assert_true(fd >= 0);
	assert_int_equal(lp_ring_check_sealed(fd), 0);
	/* the consumer's writable fd cannot shrink or grow it */
	assert_int_equal(ftruncate(fd, 0), -1);
	assert_int_equal(errno, EPERM);
	assert_int_equal(ftruncate(fd, 1 << 30), -1);
	assert_int_equal(errno, EPERM);
	mem = lp_ring_map_fd(fd, &size);
	assert_non_null(mem);
	assert_int_equal(size, lp_ring_mem_size(1 << 16));
	r = lp_ring__consumer(mem, size);
	assert_non_null(r); /* formatted */
	lp_ring__free(r);
	close(fd);

	assert_int_equal(lp_ring_create_memfd(12345), -EINVAL);
	plain = memfd_create("plain", 0);
	assert_true(plain >= 0);
	assert_int_equal(lp_ring_check_sealed(plain), -EPERM);
	close(plain);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_dir_and_files),
		cmocka_unit_test(test_fd_passing),
		cmocka_unit_test(test_sealed_ring),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
