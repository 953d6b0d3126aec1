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
#include <sys/wait.h>
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
	dfd = lp_open_output_dir(sub, LP_OUTPUT_MODE);
	assert_true(dfd >= 0);

	/* a new file, then the same file again: truncated */
	fd = lp_open_output_file(dfd, "out", LP_OUTPUT_MODE);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "hello", 5), 5);
	close(fd);
	fd = lp_open_output_file(dfd, "out", LP_OUTPUT_MODE);
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
	assert_int_equal(lp_open_output_file(dfd, "link", LP_OUTPUT_MODE), -ELOOP);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);

	/* a hard link to another file is refused, not truncated */
	snprintf(path, sizeof(path), "%s/hard", sub);
	assert_int_equal(link(victim, path), 0);
	assert_int_equal(lp_open_output_file(dfd, "hard", LP_OUTPUT_MODE), -EINVAL);
	assert_int_equal(stat(victim, &st), 0);
	assert_int_equal(st.st_size, 4);

	/* a FIFO neither blocks nor is accepted */
	snprintf(path, sizeof(path), "%s/fifo", sub);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_true(lp_open_output_file(dfd, "fifo", LP_OUTPUT_MODE) < 0);
	close(dfd);

	/* a file where the directory should be */
	assert_int_equal(lp_open_output_dir(victim, LP_OUTPUT_MODE), -ENOTDIR);
}

/*
 * What lp_open_dir_made made, and only that, is removed again: the
 * directories it made, if empty, never the one that was there before it,
 * nor one with a file in it, nor one put in place of the first it made.
 */
static void test_made_dirs(void **state)
{
	char path[160], file[200], moved[160], long_path[512];
	struct lp_made_dirs m;
	int dfd;

	/* nothing made: nothing to remove */
	dfd = lp_open_dir_made(dir, true, 0700, &m);
	assert_true(dfd >= 0);
	close(dfd);
	assert_int_equal(m.parent, -1);
	lp_made_dirs__remove(&m);
	assert_int_equal(access(dir, F_OK), 0);

	/* three made under dir: all three go, dir stays */
	snprintf(path, sizeof(path), "%s/m1/m2/m3", dir);
	dfd = lp_open_dir_made(path, true, 0700, &m);
	assert_true(dfd >= 0);
	close(dfd);
	assert_string_equal(m.rel, "m1/m2/m3");
	lp_made_dirs__remove(&m);
	assert_int_equal(m.parent, -1);
	snprintf(path, sizeof(path), "%s/m1", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(dir, F_OK), 0);

	/* one existed (m1): only those below it are the call's */
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/m1/m2/m3", dir);
	dfd = lp_open_dir_made(path, true, 0700, &m);
	assert_true(dfd >= 0);
	close(dfd);
	assert_string_equal(m.rel, "m2/m3");
	/* someone's file in m2: m3 goes, m2 and m1 stay */
	snprintf(file, sizeof(file), "%s/m1/m2/theirs", dir);
	close(open(file, O_WRONLY | O_CREAT, 0600));
	lp_made_dirs__remove(&m);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(access(file, F_OK), 0);
	assert_int_equal(unlink(file), 0);

	/* m2 made, then replaced by another empty directory: kept */
	snprintf(path, sizeof(path), "%s/m1/m2", dir);
	assert_int_equal(rmdir(path), 0);
	dfd = lp_open_dir_made(path, true, 0700, &m);
	assert_true(dfd >= 0);
	close(dfd);
	snprintf(moved, sizeof(moved), "%s/m1/moved", dir);
	assert_int_equal(rename(path, moved), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	lp_made_dirs__remove(&m);
	assert_int_equal(access(path, F_OK), 0);
	assert_int_equal(access(moved, F_OK), 0);

	/* a failed open makes nothing to remove (a file where a directory should be) */
	snprintf(file, sizeof(file), "%s/m1/afile", dir);
	close(open(file, O_WRONLY | O_CREAT, 0600));
	snprintf(path, sizeof(path), "%s/m1/afile/x", dir);
	assert_int_equal(lp_open_dir_made(path, true, 0700, &m), -ENOTDIR);
	assert_int_equal(m.parent, -1);
	/* nor one that fails below a directory it made: that one goes again */
	snprintf(long_path, sizeof(long_path), "%s/m1/new/%0300d", dir, 0);
	assert_int_equal(lp_open_dir_made(long_path, true, 0700, &m), -ENAMETOOLONG);
	assert_int_equal(m.parent, -1);
	snprintf(path, sizeof(path), "%s/m1/new", dir);
	assert_int_equal(access(path, F_OK), -1);
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	assert_int_equal(lstat(path, &st), 0);
	return st.st_mode & 07777;
}

/*
 * A symlink in any component of -o, however far up, is refused, and
 * nothing is made where it leads; the same for an output path's directory.
 */
static void test_output_dir_no_links(void **state)
{
	char target[128], link[128], path[256];
	int dfd, fd;

	snprintf(target, sizeof(target), "%s/elsewhere", dir);
	assert_int_equal(mkdir(target, 0700), 0);
	snprintf(link, sizeof(link), "%s/planted", dir);
	assert_int_equal(symlink(target, link), 0);

	snprintf(path, sizeof(path), "%s/planted/out", dir);
	assert_int_equal(lp_open_output_dir(path, LP_OUTPUT_MODE), -ELOOP);
	snprintf(path, sizeof(path), "%s/elsewhere/out", dir);
	assert_int_equal(access(path, F_OK), -1); /* nothing made behind the link */
	/* the link as the last component, and as the directory itself */
	assert_int_equal(lp_open_output_dir(link, LP_OUTPUT_MODE), -ELOOP);
	snprintf(path, sizeof(path), "%s/planted/", dir);
	assert_int_equal(lp_open_output_dir(path, LP_OUTPUT_MODE), -ELOOP);
	snprintf(path, sizeof(path), "%s/planted/x/y", dir);
	assert_int_equal(lp_open_dir_nofollow(path, false, 0700), -ELOOP);

	/* an output path: a link in its directory, a link as the file */
	snprintf(path, sizeof(path), "%s/planted/cap", dir);
	fd = lp_open_output_path(path, 0600, &dfd);
	assert_int_equal(fd, -ELOOP);
	assert_int_equal(dfd, -1);
	snprintf(path, sizeof(path), "%s/elsewhere/cap", dir);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(lp_open_output_path(link, 0600, NULL), -ELOOP);

	/* but the same directories by their real path are fine */
	snprintf(path, sizeof(path), "%s/elsewhere/cap", dir);
	fd = lp_open_output_path(path, 0600, &dfd);
	assert_true(fd >= 0 && dfd >= 0);
	assert_int_equal(faccessat(dfd, "cap", F_OK, AT_SYMLINK_NOFOLLOW), 0);
	close(fd);
	close(dfd);

	/* its directory is not made; names that are no file */
	snprintf(path, sizeof(path), "%s/missing/cap", dir);
	assert_int_equal(lp_open_output_path(path, 0600, NULL), -ENOENT);
	snprintf(path, sizeof(path), "%s/elsewhere/", dir);
	assert_int_equal(lp_open_output_path(path, 0600, NULL), -EISDIR);
	assert_int_equal(lp_open_output_path("..", 0600, NULL), -EISDIR);
	assert_int_equal(lp_open_output_path("", 0600, NULL), -EISDIR);
}

/* Files are 0600 and made directories 0700 unless asked, whatever the umask. */
static void test_output_modes(void **state)
{
	char path[256];
	mode_t old = umask(0);
	int dfd, fd;

	snprintf(path, sizeof(path), "%s/m1/m2", dir);
	dfd = lp_open_output_dir(path, LP_OUTPUT_MODE);
	assert_true(dfd >= 0);
	fd = lp_open_output_file(dfd, "f", LP_OUTPUT_MODE);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(path), 0700);
	snprintf(path, sizeof(path), "%s/m1", dir);
	assert_int_equal(mode_of(path), 0700);
	snprintf(path, sizeof(path), "%s/m1/m2/f", dir);
	assert_int_equal(mode_of(path), 0600);

	/* a file left by an older run with a wider mode is narrowed */
	assert_int_equal(chmod(path, 0644), 0);
	fd = lp_open_output_file(dfd, "f", LP_OUTPUT_MODE);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(mode_of(path), 0600);
	close(dfd);

	/* asked for: shared outputs; an existing directory is left as it is */
	umask(077);
	snprintf(path, sizeof(path), "%s/m1/m2/m3", dir);
	dfd = lp_open_output_dir(path, 0644);
	assert_true(dfd >= 0);
	fd = lp_open_output_file(dfd, "g", 0644);
	assert_true(fd >= 0);
	close(fd);
	close(dfd);
	assert_int_equal(mode_of(path), 0755);
	snprintf(path, sizeof(path), "%s/m1/m2", dir);
	assert_int_equal(mode_of(path), 0700);
	snprintf(path, sizeof(path), "%s/m1/m2/m3/g", dir);
	assert_int_equal(mode_of(path), 0644);
	umask(old);
}

/* A file another user made at an output's name is not written into. */
static void test_output_other_owner(void **state)
{
	char path[256];
	struct stat st;
	int dfd;

	if (geteuid() != 0) {
		print_message("not root: no file of another user can be made here\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/theirs", dir);
	dfd = lp_open_output_dir(dir, LP_OUTPUT_MODE);
	assert_true(dfd >= 0);
	assert_int_equal(close(open(path, O_WRONLY | O_CREAT, 0666)), 0);
	assert_int_equal(chown(path, 65534, 65534), 0);
	assert_int_equal(chmod(path, 0644), 0);
	assert_int_equal(truncate(path, 3), 0);
	assert_int_equal(lp_open_output_file(dfd, "theirs", LP_OUTPUT_MODE), -EPERM);
	/* neither truncated nor made private: theirs, untouched */
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 3);
	assert_int_equal(st.st_mode & 0777, 0644);
	close(dfd);
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

/* Messages with a payload, several fds and the sender's credentials. */
static void test_msg_passing(void **state)
{
	int sv[2], fds[3], got[2], n, one = 1;
	struct ucred cred;
	char buf[16];

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(setsockopt(sv[1], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	for (int i = 0; i < 3; i++) {
		fds[i] = open("/proc/self/stat", O_RDONLY);
		assert_true(fds[i] >= 0);
	}
	assert_int_equal(lp_send_msg(sv[0], "req", 3, fds, 2), 0);
	assert_int_equal(lp_recv_msg(sv[1], buf, sizeof(buf), got, 2, &n, 0, &cred), 3);
	assert_int_equal(n, 2);
	assert_memory_equal(buf, "req", 3);
	assert_int_equal(cred.pid, getpid());
	assert_int_equal(cred.uid, geteuid());
	close(got[0]);
	close(got[1]);
	/* three fds where one is wanted: the rest are closed, not leaked */
	assert_int_equal(lp_send_msg(sv[0], "x", 1, fds, 3), 0);
	assert_int_equal(lp_recv_msg(sv[1], buf, sizeof(buf), got, 1, &n, 0, NULL), 1);
	assert_int_equal(n, 1);
	close(got[0]);
	/* a message longer than the buffer is refused, its fds closed */
	assert_int_equal(lp_send_msg(sv[0], "0123456789abcdefXYZ", 19, fds, 1), 0);
	assert_int_equal(lp_recv_msg(sv[1], buf, sizeof(buf), got, 1, &n, 0, NULL), -EBADMSG);
	assert_int_equal(n, 0);
	/* nothing waiting */
	assert_int_equal(lp_recv_msg(sv[1], buf, sizeof(buf), got, 1, &n, MSG_DONTWAIT, NULL),
			 -EAGAIN);
	assert_int_equal(lp_send_msg(sv[0], NULL, 0, fds, LP_MAX_SEND_FDS + 1), -EINVAL);
	for (int i = 0; i < 3; i++)
		close(fds[i]);
	close(sv[0]);
	assert_int_equal(lp_recv_msg(sv[1], buf, sizeof(buf), got, 1, &n, 0, NULL), -EPIPE);
	close(sv[1]);
}

static void test_sealed_ring(void **state)
{
	int fds[2], plain, rd, rw;
	struct lp_ring *p, *c;
	size_t psize, csize;
	const void *data;
	uint32_t len;
	uint8_t *pmem, *cmem;
	struct lp_ring_stats st;

	assert_int_equal(lp_ring_create_memfds(1 << 16, fds), 0);
	for (int i = 0; i < 2; i++) {
		struct stat sb;

		assert_int_equal(lp_ring_check_sealed(fds[i]), 0);
		/* no one can shrink or grow either object */
		assert_int_equal(ftruncate(fds[i], 0), -1);
		assert_int_equal(errno, EPERM);
		assert_int_equal(ftruncate(fds[i], 1 << 30), -1);
		assert_int_equal(errno, EPERM);
		assert_int_equal(fstat(fds[i], &sb), 0);
		assert_int_equal(sb.st_mode & 07777, 0600);
	}
	/* the producer's view, then the seal against any later writer */
	pmem = lp_ring_map_fds(fds[LP_RING_FD_DATA], fds[LP_RING_FD_CONS], true, &psize);
	assert_non_null(pmem);
	assert_int_equal(psize, lp_ring_mem_size(1 << 16));
	p = lp_ring__producer(pmem, psize);
	assert_non_null(p); /* formatted */
	assert_int_equal(lp_ring_seal_writes(fds[LP_RING_FD_DATA]), 0);
	assert_int_equal(lp_ring_seal_writes(fds[LP_RING_FD_DATA]), 0); /* again: still fine */

	/* the consumer's view, through a read-only descriptor */
	rd = lp_ring_reader_fd(fds[LP_RING_FD_DATA]);
	assert_true(rd >= 0);
	assert_int_equal(fcntl(rd, F_GETFL) & O_ACCMODE, O_RDONLY);
	cmem = lp_ring_map_fds(rd, fds[LP_RING_FD_CONS], false, &csize);
	assert_non_null(cmem);
	assert_int_equal(csize, psize);
	c = lp_ring__consumer(cmem, csize);
	assert_non_null(c);

	assert_int_equal(lp_ring__write(p, "hello", 5), 0);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_memory_equal(data, "hello", 5);
	lp_ring__consume(c);
	lp_ring__stats(p, &st);
	assert_int_equal(st.cons_pos, st.prod_pos); /* through the consumer page */

	/* nothing the consumer holds writes the header or the data area */
	assert_int_equal(mprotect(cmem + LP_RING_CONS_SIZE, csize - LP_RING_CONS_SIZE,
				  PROT_READ | PROT_WRITE),
			 -1);
	assert_int_equal(errno, EACCES);
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rd, 0) == MAP_FAILED);
	assert_int_equal(errno, EACCES);
	assert_int_equal(write(rd, "x", 1), -1);
	assert_int_equal(errno, EBADF);
	/* a writable descriptor opened again (root here; DAC stops other users) */
	{
		char self[32];

		snprintf(self, sizeof(self), "/proc/self/fd/%d", rd);
		rw = open(self, O_RDWR);
	}
	assert_true(rw >= 0);
	assert_true(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0) == MAP_FAILED);
	assert_int_equal(errno, EPERM);
	assert_int_equal(pwrite(rw, "x", 1, 0), -1);
	assert_int_equal(errno, EPERM);
	close(rw);
	/* the producer's own mapping predates the seal: it still writes */
	assert_int_equal(lp_ring__write(p, "again", 5), 0);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_memory_equal(data, "again", 5);

	lp_ring__free(c);
	lp_ring__free(p);
	munmap(cmem, csize);
	munmap(pmem, psize);
	close(rd);
	for (int i = 0; i < 2; i++)
		close(fds[i]);

	assert_int_equal(lp_ring_create_memfds(12345, fds), -EINVAL);
	assert_int_equal(fds[0], -1);
	plain = memfd_create("plain", 0);
	assert_true(plain >= 0);
	assert_int_equal(lp_ring_check_sealed(plain), -EPERM);
	/* too small to be a ring */
	assert_null(lp_ring_map_fds(plain, plain, false, &csize));
	assert_int_equal(errno, EINVAL);
	close(plain);
}

/* Every byte arrives through short writes (a pipe drained as it fills); errors are errnos. */
static void test_write_all(void **state)
{
	static char buf[256 * 1024], got[sizeof(buf)];
	size_t have = 0;
	int p[2], full;
	pid_t pid;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		_exit(lp_write_all(p[1], buf, sizeof(buf)) == 0 ? 0 : 1);
	}
	close(p[1]);
	for (ssize_t n; (n = read(p[0], got + have, sizeof(got) - have)) > 0;)
		have += (size_t)n;
	close(p[0]);
	{
		int st;

		assert_int_equal(waitpid(pid, &st, 0), pid);
		assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	}
	assert_int_equal(have, sizeof(buf));
	assert_memory_equal(got, buf, sizeof(buf));

	assert_int_equal(lp_write_all(-1, buf, 1), -EBADF);
	full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (full >= 0) {
		assert_int_equal(lp_write_all(full, buf, 1), -ENOSPC);
		close(full);
	}
	assert_int_equal(lp_write_all(-1, buf, 0), 0);
}

/* at an offset, leaving the fd's own offset alone; a full device is -ENOSPC */
static void test_pwrite_all(void **state)
{
	static char buf[300 * 1000], got[sizeof(buf) + 10];
	char path[128];
	int fd, full;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 13 + 1);
	snprintf(path, sizeof(path), "%s/pwrite", dir);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "head", 4), 4);
	assert_int_equal(lp_pwrite_all(fd, buf, sizeof(buf), 10), 0);
	assert_int_equal(lseek(fd, 0, SEEK_CUR), 4);
	assert_int_equal(pread(fd, got, sizeof(got), 0), (ssize_t)sizeof(got));
	assert_memory_equal(got, "head\0\0\0\0\0\0", 10);
	assert_memory_equal(got + 10, buf, sizeof(buf));
	/* over what is there */
	assert_int_equal(lp_pwrite_all(fd, "XY", 2, 11), 0);
	assert_int_equal(pread(fd, got, 4, 10), 4);
	{
		const char want[4] = {buf[0], 'X', 'Y', buf[3]};

		assert_memory_equal(got, want, 4);
	}
	close(fd);

	assert_int_equal(lp_pwrite_all(-1, buf, 1, 0), -EBADF);
	assert_int_equal(lp_pwrite_all(-1, buf, 0, 0), 0);
	assert_int_equal(lp_pwrite_all(-1, buf, 1, UINT64_MAX), -EINVAL);
	full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (full >= 0) {
		assert_int_equal(lp_pwrite_all(full, buf, 1, 0), -ENOSPC);
		close(full);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_output_dir_and_files),
		cmocka_unit_test(test_output_dir_no_links),
		cmocka_unit_test(test_made_dirs),
		cmocka_unit_test(test_output_modes),
		cmocka_unit_test(test_output_other_owner),
		cmocka_unit_test(test_fd_passing),
		cmocka_unit_test(test_msg_passing),
		cmocka_unit_test(test_sealed_ring),
		cmocka_unit_test(test_write_all),
		cmocka_unit_test(test_pwrite_all),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
