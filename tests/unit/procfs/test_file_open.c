// SPDX-License-Identifier: MIT
/*
 * coll_file_open (collector/files.c), the collector's half of the file
 * channel, on this process: it opens the file a process maps executable
 * with the named device and inode, read-only, and nothing else: not a file
 * that is not mapped, not one mapped without exec, not whatever now sits at
 * a mapped path (device and inode decide); and the broker (coll_broker__*)
 * against a hostile peer, the -p filter, and opens that hang. Other users' processes and mount namespaces need root:
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
#include <poll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_int.h"
#include "lowprof/clock.h"
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

/*
 * A deleted file mapped at p: opened through /proc/self/map_files where
 * this process may (CAP_CHECKPOINT_RESTORE or CAP_SYS_ADMIN), else -EPERM.
 */
static void expect_deleted(const struct stat *st, void *p, size_t len)
{
	char link[64];
	struct stat got;
	int may, fd;

	snprintf(link, sizeof(link), "/proc/self/map_files/%lx-%lx", (unsigned long)p,
		 (unsigned long)p + len);
	may = open(link, O_PATH | O_CLOEXEC);
	fd = open_st(st);
	if (may < 0) {
		assert_int_equal(fd, -EPERM);
		return;
	}
	close(may);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &got), 0);
	assert_int_equal(got.st_ino, st->st_ino);
	assert_int_equal(got.st_dev, st->st_dev);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
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
	 * under exactly that name is not the mapped one (its inode differs);
	 * the mapped one is still reached through the mapping itself.
	 */
	assert_int_equal(unlink(path), 0);
	other = make_file(fake, 'b');
	expect_deleted(&st, p, 8192);
	close(other);
	assert_int_equal(unlink(fake), 0);
	expect_deleted(&st, p, 8192);
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

/* Waits up to 3 s for a reply, ticking b (which answers what its workers found). */
static int32_t get_rep_b(int s, uint32_t id, int *fd, struct coll_broker *b)
{
	struct lp_file_rep r;
	int nfds = 0;

	*fd = -1;
	for (int i = 0; i < 300; i++) {
		struct pollfd p = {s, POLLIN, 0};

		if (b)
			coll_broker__tick(b, lp_clock_ns(CLOCK_MONOTONIC));
		if (poll(&p, 1, 10) == 1)
			break;
	}
	assert_int_equal(lp_recv_msg(s, &r, sizeof(r), fd, 1, &nfds, MSG_DONTWAIT, NULL),
			 sizeof(r));
	assert_int_equal(r.magic, LP_FILE_REP_MAGIC);
	assert_int_equal(r.id, id);
	assert_int_equal(nfds, r.err == 0);
	return r.err;
}

static void no_reply(int s)
{
	char buf[64];

	assert_int_equal(recv(s, buf, sizeof(buf), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
}

static int channel(int sv[2])
{
	int one = 1;

	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(setsockopt(sv[0], SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)), 0);
	return fcntl(sv[0], F_SETFL, O_NONBLOCK);
}

static struct lp_file_req exe_req(uint32_t id)
{
	struct stat exe;

	assert_int_equal(stat("/proc/self/exe", &exe), 0);
	return (struct lp_file_req){.magic = LP_FILE_REQ_MAGIC,
				    .id = id,
				    .pid = (uint32_t)getpid(),
				    .dev_major = major(exe.st_dev),
				    .dev_minor = minor(exe.st_dev),
				    .inode = exe.st_ino};
}

/* The collector's side of the channel against a hostile peer. */
static void test_serve(void **state)
{
	uid_t me = getuid();
	struct coll_broker_opts bo = {.owner = me};
	struct coll_files_stats st;
	struct coll_broker *b;
	struct lp_file_req q = exe_req(7);
	int sv[2], fd, before;

	assert_int_equal(channel(sv), 0);
	b = coll_broker__new(&bo);
	assert_non_null(b);

	/* nothing waiting */
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 0);
	/* a good request: the file, read-only */
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 1);
	assert_int_equal(get_rep_b(sv[1], 7, &fd, b), 0);
	assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
	close(fd);
	coll_broker__stats(b, &st);
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
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 5);
	coll_broker__stats(b, &st);
	assert_int_equal(st.refused, 5);
	no_reply(sv[1]);
	fd = open("/dev/null", O_RDONLY); /* the one sent along was closed: reused */
	assert_int_equal(fd, before);
	close(fd);

	/* a file no process maps */
	q.id = 8;
	q.inode ^= 0x5a5a;
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 1);
	assert_int_equal(get_rep_b(sv[1], 8, &fd, b), -ENOENT);
	q.inode ^= 0x5a5a;

	/* at most max requests per call */
	for (uint32_t i = 0; i < 3; i++) {
		q.id = 100 + i;
		assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	}
	assert_int_equal(coll_broker__serve(b, sv[0], 2), 2);
	assert_int_equal(coll_broker__serve(b, sv[0], 2), 1);
	for (uint32_t i = 0; i < 3; i++) {
		assert_int_equal(get_rep_b(sv[1], 100 + i, &fd, b), 0);
		close(fd);
	}

	/* another uid (root can claim one): refused with EPERM */
	if (geteuid() == 0) {
		struct coll_broker_opts other = {.owner = 54321};
		struct coll_broker *b2 = coll_broker__new(&other);

		q.id = 9;
		assert_int_equal(send_req(sv[1], &q, sizeof(q), 12345, -1), 0);
		assert_int_equal(coll_broker__serve(b2, sv[0], 16), 1);
		assert_int_equal(get_rep_b(sv[1], 9, &fd, b2), -EPERM);
		coll_broker__free(b2);
	}
	close(sv[1]);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), -EPIPE);
	coll_broker__free(b);
	close(sv[0]);
}

/* -p: a request for any other process is refused, and counted. */
static void test_serve_pid_filter(void **state)
{
	uid_t me = getuid();
	pid_t pids[2] = {1, getpid()};
	struct coll_broker_opts bo = {.owner = me, .pids = pids, .npids = 1};
	struct coll_files_stats st;
	struct coll_broker *b;
	struct lp_file_req q = exe_req(21);
	int sv[2], fd;

	assert_int_equal(channel(sv), 0);
	b = coll_broker__new(&bo);
	assert_non_null(b);
	/* we are not pid 1: refused, though the file is mapped and ours */
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 1);
	assert_int_equal(get_rep_b(sv[1], 21, &fd, b), -EPERM);
	coll_broker__stats(b, &st);
	assert_int_equal(st.refused_pid, 1);
	assert_int_equal(st.sent, 0);
	coll_broker__free(b);

	/* with us in -p: served */
	bo.npids = 2;
	b = coll_broker__new(&bo);
	q.id = 22;
	assert_int_equal(send_req(sv[1], &q, sizeof(q), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 1);
	assert_int_equal(get_rep_b(sv[1], 22, &fd, b), 0);
	close(fd);
	coll_broker__stats(b, &st);
	assert_int_equal(st.refused_pid, 0);
	assert_int_equal(st.sent, 1);
	coll_broker__free(b);
	close(sv[0]);
	close(sv[1]);
}

/*
 * Steps that hang, as they do on a hung file system: inodes HANG.. get a
 * path from the maps step and hang in the open (the lookup waits for the
 * server); inodes HANG_MAPS.. hang in the maps read (the process's mmap
 * lock is held by a fault on such a file). They run in the broker's worker
 * processes, which keep no descriptor of ours: each waits for a byte on
 * the FIFO at hang_fifo, which the test writes to let them go.
 */
#define HANG	  0x4a4e47ull
#define HANG_MAPS 0x4d4150ull
static char hang_fifo[64];

static void wait_release(void)
{
	int fd = open(hang_fifo, O_RDONLY | O_CLOEXEC);
	char c;

	while (fd >= 0 && read(fd, &c, 1) < 0 && errno == EINTR)
		;
	if (fd >= 0)
		close(fd);
}

/* Lets n hung steps go: a byte each. */
static void release(int n)
{
	int fd = open(hang_fifo, O_RDWR | O_CLOEXEC);

	assert_true(fd >= 0);
	for (int i = 0; i < n; i++)
		assert_int_equal(write(fd, "x", 1), 1);
	usleep(100000); /* the readers take their byte before the FIFO's last writer goes */
	close(fd);
}

static int hanging_maps(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode,
			struct coll_mapped *out)
{
	if (inode >= HANG_MAPS && inode < HANG_MAPS + 16) {
		wait_release();
		return -EIO;
	}
	if (inode >= HANG && inode < HANG + 16) {
		snprintf(out->path, sizeof(out->path), "/hung/file");
		return 0;
	}
	return coll_mapped_path(pid, major, minor, inode, out);
}

static int hanging_open(uint32_t pid, const struct coll_mapped *m, uint32_t major, uint32_t minor,
			uint64_t inode)
{
	if (inode >= HANG && inode < HANG + 16) {
		wait_release();
		return -EIO;
	}
	return coll_file_open_at(pid, m, major, minor, inode);
}

static int sv_test[2];

static uint64_t ms_since(uint64_t t0)
{
	return (lp_clock_ns(CLOCK_MONOTONIC) - t0) / 1000000;
}

/* Sends q, has b take it, and returns the reply's error (the fd closed). */
static int32_t ask(struct coll_broker *b, int sv[2], struct lp_file_req *q, uint32_t id)
{
	uint64_t t0 = lp_clock_ns(CLOCK_MONOTONIC);
	int fd;
	int32_t err;

	q->id = id;
	assert_int_equal(send_req(sv[1], q, sizeof(*q), getuid(), -1), 0);
	assert_int_equal(coll_broker__serve(b, sv[0], 16), 1);
	assert_true(ms_since(t0) < 90); /* never waits for a worker (the timeout is 100) */
	err = get_rep_b(sv[1], id, &fd, b);
	if (fd >= 0)
		close(fd);
	return err;
}

/*
 * Requests that hang are answered -ETIMEDOUT after the timeout, and the
 * requests after them are served by a new worker, up to max_stuck stuck
 * workers; a request where a stuck worker waits (its device when stuck
 * opening, its process when stuck reading maps) is -EBUSY at once, and so
 * is everything once max_stuck workers are stuck. Workers that return
 * answer no one and serve again. Nothing here blocks the caller. The
 * workers are processes, as in the collector; the hanging steps are this
 * test's (the opts' hooks), in them.
 */
static void test_serve_hang(void **state)
{
	struct coll_broker_opts bo = {.owner = getuid(),
				      .timeout_ms = 100,
				      .max_stuck = 2,
				      .maps = hanging_maps,
				      .open = hanging_open};
	struct lp_file_req q = exe_req(0), hang = q, other;
	struct coll_files_stats st;
	struct coll_broker *b;
	uint64_t t0;

	snprintf(hang_fifo, sizeof(hang_fifo), "/tmp/test_file_open.%d", (int)getpid());
	unlink(hang_fifo);
	assert_int_equal(mkfifo(hang_fifo, 0600), 0);
	assert_int_equal(channel(sv_test), 0);
	b = coll_broker__new(&bo);
	assert_non_null(b);
	hang.dev_major = 0;
	hang.dev_minor = 77;

	/* an open that hangs: -ETIMEDOUT after the timeout */
	hang.inode = HANG;
	t0 = lp_clock_ns(CLOCK_MONOTONIC);
	assert_int_equal(ask(b, sv_test, &hang, 31), -ETIMEDOUT);
	assert_true(ms_since(t0) >= 100);
	/* the next request of that process is served, by a new worker */
	assert_int_equal(ask(b, sv_test, &q, 32), 0);
	/* one on the device the stuck worker waits on: -EBUSY at once */
	hang.inode = HANG + 1;
	assert_int_equal(ask(b, sv_test, &hang, 33), -EBUSY);
	/* a maps read that hangs: a second worker stuck, on our process */
	hang.inode = HANG_MAPS;
	hang.dev_minor = 78;
	assert_int_equal(ask(b, sv_test, &hang, 34), -ETIMEDOUT);
	coll_broker__stats(b, &st);
	assert_int_equal(st.stuck, 2);
	assert_int_equal(st.timeouts, 2);
	/* max_stuck reached: everything is -EBUSY, whatever process or device */
	other = q;
	other.pid = 1;
	other.dev_minor ^= 1;
	assert_int_equal(ask(b, sv_test, &other, 35), -EBUSY);
	assert_int_equal(ask(b, sv_test, &q, 36), -EBUSY);
	coll_broker__stats(b, &st);
	assert_int_equal(st.busy, 3);
	assert_int_equal(st.stuck_peak, 2);

	/* the file systems come back: the workers return late, answering no one */
	release(2);
	for (int i = 0; i < 300; i++) {
		coll_broker__tick(b, lp_clock_ns(CLOCK_MONOTONIC));
		coll_broker__stats(b, &st);
		if (!st.stuck)
			break;
		usleep(10000);
	}
	assert_int_equal(st.stuck, 0);
	assert_int_equal(st.late, 2);
	no_reply(sv_test[1]);
	/* and the broker serves again */
	assert_int_equal(ask(b, sv_test, &q, 37), 0);

	/* freed with a worker stuck: returns at once; the worker is left to return */
	hang.inode = HANG;
	hang.dev_minor = 80;
	assert_int_equal(ask(b, sv_test, &hang, 38), -ETIMEDOUT);
	t0 = lp_clock_ns(CLOCK_MONOTONIC);
	coll_broker__free(b);
	assert_true(ms_since(t0) < 100);
	release(1);
	no_reply(sv_test[1]);
	close(sv_test[0]);
	close(sv_test[1]);
	unlink(hang_fifo);
}

/*
 * Several channels (a symbolizer per shard): each answer goes to the
 * channel its request came on, and one channel's detach forgets only its
 * own requests.
 */
static void test_serve_channels(void **state)
{
	uid_t me = getuid();
	struct coll_broker_opts bo = {.owner = me};
	struct coll_broker *b;
	struct lp_file_req qa = exe_req(31), qb = exe_req(32);
	int a[2], c[2], fd;

	(void)state;
	assert_int_equal(channel(a), 0);
	assert_int_equal(channel(c), 0);
	b = coll_broker__new(&bo);
	assert_non_null(b);
	/* one on each, answered on each */
	assert_int_equal(send_req(a[1], &qa, sizeof(qa), me, -1), 0);
	assert_int_equal(send_req(c[1], &qb, sizeof(qb), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, a[0], 16), 1);
	assert_int_equal(coll_broker__serve(b, c[0], 16), 1);
	assert_int_equal(get_rep_b(c[1], 32, &fd, b), 0);
	close(fd);
	assert_int_equal(get_rep_b(a[1], 31, &fd, b), 0);
	close(fd);
	/* a's channel closes with a request in flight: c's is still answered, a's never */
	qa.id = 33;
	qb.id = 34;
	assert_int_equal(send_req(a[1], &qa, sizeof(qa), me, -1), 0);
	assert_int_equal(send_req(c[1], &qb, sizeof(qb), me, -1), 0);
	assert_int_equal(coll_broker__serve(b, a[0], 16), 1);
	assert_int_equal(coll_broker__serve(b, c[0], 16), 1);
	coll_broker__detach(b, a[0]);
	assert_int_equal(get_rep_b(c[1], 34, &fd, b), 0);
	close(fd);
	for (int i = 0; i < 50; i++) {
		coll_broker__tick(b, lp_clock_ns(CLOCK_MONOTONIC));
		usleep(2000);
	}
	no_reply(a[1]);
	coll_broker__free(b);
	for (int i = 0; i < 2; i++) {
		close(a[i]);
		close(c[i]);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_own_exe),		 cmocka_unit_test(test_not_mapped),
		cmocka_unit_test(test_mapped_file),	 cmocka_unit_test(test_serve),
		cmocka_unit_test(test_serve_pid_filter), cmocka_unit_test(test_serve_hang),
		cmocka_unit_test(test_serve_channels),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
