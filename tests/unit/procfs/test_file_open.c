// SPDX-License-Identifier: MIT
/*
 * coll_file_open (collector/files.c), the collector's half of the file
 * channel, on this process: it opens the file a process maps executable
 * with the named device and inode, read-only, and nothing else: not a file
 * that is not mapped, not one mapped without exec, not whatever now sits at
 * a mapped path (device and inode decide); and coll_files_serve against a
 * hostile peer. Other users' processes and mount namespaces need root:
 * tests/e2e/files.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_int.h"
#include "lowprof/files.h"

static int open_st(const struct stat *st)
{
	return coll_file_open((uint32_t)getpid(), major(st->st_dev), minor(st->st_dev), st->st_ino);
}

static void test_own_exe(void **state)
{
	struct stat st, got;
	int fd;

	assert_int_equal(stat("/proc/self/exe", &st), 0);
	fd = open_st(&st);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &got), 0);
	assert_int_equal(got.st_ino, st.st_ino);
	assert_int_equal(got.st_dev, st.st_dev);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(write(fd, "x", 1), -1);
	close(fd);
}

static void test_not_mapped(void **state)
{
	struct stat st;

	/* a file this process has not mapped, by its real device and inode */
	assert_int_equal(stat("/etc/passwd", &st), 0);
	assert_int_equal(open_st(&st), -ENOENT);
	assert_int_equal(stat("/proc/self/exe", &st), 0);
	assert_int_equal(coll_file_open(0, major(st.st_dev), minor(st.st_dev), st.st_ino), -ESRCH);
	assert_int_equal(coll_file_open(0x3ffffffe, major(st.st_dev), minor(st.st_dev), st.st_ino),
			 -ENOENT);
	assert_int_equal(coll_file_open(0x40000000, 0, 0, 1), -ESRCH);
}

/* A file of our own in the working directory (the build tree, not noexec). */
static int make_file(const char *path, char fill)
{
	char buf[8192];
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	memset(buf, fill, sizeof(buf));
	assert_int_equal(write(fd, buf, sizeof(buf)), sizeof(buf));
	return fd;
}

static void test_mapped_file(void **state)
{
	const char *path = "test_file_open.bin", *fake = "test_file_open.bin (deleted)";
	struct stat st;
	void *p;
	int fd, got, other;

	fd = make_file(path, 'a');
	assert_int_equal(fstat(fd, &st), 0);
	/* mapped, but not executable: not something to symbolize */
	p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	assert_true(p != MAP_FAILED);
	assert_int_equal(open_st(&st), -ENOENT);
	munmap(p, 8192);
	p = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		unlink(path);
		skip(); /* a noexec working directory */
	}
	got = open_st(&st);
	assert_true(got >= 0);
	close(got);

	/*
	 * Deleted while mapped: maps shows "PATH (deleted)". A file created
	 * under exactly that name is not the mapped one (its inode differs).
	 */
	assert_int_equal(unlink(path), 0);
	other = make_file(fake, 'b');
	assert_int_equal(open_st(&st), -ESTALE);
	close(other);
	assert_int_equal(unlink(fake), 0);
	assert_int_equal(open_st(&st), -ENOENT);
	munmap(p, 8192);
	close(fd);
}

/* Sends a request with explicit credentials (uid: as root, any). */
static int send_req(int s, const void *req, size_t len, uid_t uid, int fd)
{
	struct iovec iov = {(void *)req, len};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf};
	struct ucred cr = {getpid(), uid, getgid()};
	struct cmsghdr *c;

	memset(&u, 0, sizeof(u));
	m.msg_controllen = CMSG_SPACE(sizeof(cr)) + (fd >= 0 ? CMSG_SPACE(sizeof(int)) : 0);
	c = CMSG_FIRSTHDR(&m);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_CREDENTIALS;
	c->cmsg_len = CMSG_LEN(sizeof(cr));
	memcpy(CMSG_DATA(c), &cr, sizeof(cr));
	if (fd >= 0) {
		c = CMSG_NXTHDR(&m, c);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(s, &m, 0) < 0 ? -errno : 0;
}

static int32_t get_rep(int s, uint32_t id, int *fd)
{
	struct lp_file_rep r;
	int nfds = 0;

	*fd = -1;
	assert_int_equal(lp_recv_msg(s, &r, sizeof(r), fd, 1, &nfds, MSG_DONTWAIT, NULL),
			 sizeof(r));
	assert_int_equal(r.magic, LP_FILE_REP_MAGIC);
	assert_int_equal(r.id, id);
	assert_int_equal(nfds, r.err == 0);
	return r.err;
}

/* The collector's side of the channel against a hostile peer. */
static void test_serve(void **state)
{
	struct coll_files_stats st = {0};
	struct stat exe;
	struct lp_file_req q;
	int sv[2], one = 1, fd, before;
	uid_t me = getuid();

	assert_int_equal(stat("/proc/self/exe", &exe), 0);
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	q = (struct lp_file_req){.magic = LP_FILE_REQ_MAGIC,
				 .id = 7,
				 .pid = (uint32_t)getpid(),
				 .dev_major = major(exe.st_dev),
				 .dev_minor = minor(exe.st_dev),
				 .inode = exe.st_ino};

	/* nothing waiting */
	assert_int_equal(coll_files_serve(sv[0], me, 16, &st), 0);
	/* a good request: the file, read-only */
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_files_serve(sv[0], me, 16, &st), 1);
	assert_int_equal(get_rep(sv[1], 7, &fd), 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	assert_int_equal(st.sent, 1);

	/* malformed: short, long, bad magic, non-zero padding; none answered */
	assert_int_equal(send_req(sv[1], &q, sizeof(q) - 1, me, -1), 0);
	q.magic ^= 1;
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	q.magic ^= 1;
	q.zero = 1;
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	q.zero = 0;
	{
		char big[sizeof(q) + 8] = {0};

		memcpy(big, &q, sizeof(q));
		assert_int_equal(send_req(sv[1], big, sizeof(big), me, -1), 0);
	}
	/* a descriptor sent along is closed, not kept */
	before = open("/dev/null", O_RDONLY);
	assert_true(before >= 0);
	assert_int_equal(send_req(sv[1], &q, sizeof(q) - 2, me, before), 0);
	close(before);
	assert_int_equal(coll_files_serve(sv[0], me, 16, &st), 5);
	assert_int_equal(st.refused, 5);
	assert_int_equal(recv(sv[1], &q, sizeof(q), MSG_DONTWAIT), -1); /* no replies */
	assert_int_equal(errno, EAGAIN);
	fd = open("/dev/null", O_RDONLY); /* the one sent along was closed: reused */
	assert_int_equal(fd, before);
	close(fd);

	/* a file no process maps */
	q.id = 8;
	q.inode ^= 0x5a5a;
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_files_serve(sv[0], me, 16, &st), 1);
	assert_int_equal(get_rep(sv[1], 8, &fd), -ENOENT);
	q.inode ^= 0x5a5a;

	/* at most max requests per call */
	for (uint32_t i = 0; i < 3; i++) {
		q.id = 100 + i;
		assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	}
	assert_int_equal(coll_files_serve(sv[0], me, 2, &st), 2);
	assert_int_equal(coll_files_serve(sv[0], me, 2, &st), 1);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(get_rep(sv[1], 100 + i, &fd), 0);
		close(fd);
	}

	/* another uid (root can claim one): refused with EPERM */
	if (geteuid() == 0) {
		q.id = 9;
		assert_int_equal(send_req(sv[1], &q, sizeof(q), 12345, -1), 0);
		assert_int_equal(coll_files_serve(sv[0], 54321, 16, &st), 1);
		assert_int_equal(get_rep(sv[1], 9, &fd), -EPERM);
	}
	close(sv[1]);
	assert_int_equal(coll_files_serve(sv[0], me, 16, &st), -EPIPE);
	close(sv[0]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_exe),
		cmocka_unit_test(test_not_mapped),
		cmocka_unit_test(test_mapped_file),
		cmocka_unit_test(test_serve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
