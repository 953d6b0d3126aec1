// SPDX-License-Identifier: MIT
/*
 * coll_open_local_in_root (collector/files.c): the drain loop's open of a
 * JIT perf map asks nothing of a file system that is not local. Each test
 * runs in a child in a mount namespace of its own (its mounts private:
 * nothing reaches the host's), which mounts over its own /tmp: a tmpfs,
 * then a FUSE file system whose daemon never answers (this test holds
 * /dev/fuse and reads nothing from it, so every request waits, killably).
 * A call that asked it anything would wait until the child's alarm kills
 * it. Needs root (mounts, /dev/fuse): skipped otherwise, with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_int.h"

static bool mine(const struct stat *st, const void *arg)
{
	(void)arg;
	return S_ISREG(st->st_mode) && st->st_uid == geteuid();
}

/* Why these tests cannot run here, or NULL. */
static const char *cannot_run(void)
{
	if (geteuid() != 0)
		return "needs root (mount namespaces, /dev/fuse)";
	if (access("/dev/fuse", R_OK | W_OK))
		return "no /dev/fuse (modprobe fuse)";
	return NULL;
}

/* A FUSE file system on dir whose daemon (us) never answers: its fd. */
static int mount_dead_fuse(const char *dir)
{
	char opts[128];
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -1;
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fd);
	if (mount("lp-dead", dir, "fuse.lp-dead", MS_NOSUID | MS_NODEV, opts)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The mount id of path, from fdinfo (for the messages). */
static unsigned mnt_id(const char *path)
{
	char buf[512], fdinfo[64];
	unsigned id = 0;
	int fd = open(path, O_PATH | O_CLOEXEC), f;
	ssize_t n;

	snprintf(fdinfo, sizeof(fdinfo), "/proc/self/fdinfo/%d", fd);
	f = open(fdinfo, O_RDONLY | O_CLOEXEC);
	n = f >= 0 ? read(f, buf, sizeof(buf) - 1) : -1;
	if (n > 0) {
		buf[n] = '\0';
		if (strstr(buf, "mnt_id:"))
			sscanf(strstr(buf, "mnt_id:"), "mnt_id: %u", &id);
	}
	if (f >= 0)
		close(f);
	close(fd);
	return id;
}

/* In a child of its own mount namespace, with an alarm: its exit status (0: passed). */
static int in_child(int (*fn)(void))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		alarm(10);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL)) {
			perror("private mount namespace");
			_exit(2);
		}
		_exit(fn());
	}
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (WIFSIGNALED(status))
		fprintf(stderr, "child killed by signal %d (an alarm: it waited on FUSE)\n",
			WTERMSIG(status));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 100 + WTERMSIG(status);
}

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond);                 \
			return 1;                                                                  \
		}                                                                                  \
	} while (0)

static int perf_map_path(char *path, size_t cap)
{
	return snprintf(path, cap, "/tmp/perf-%d.map", getpid()) < (int)cap ? 0 : -1;
}

/*
 * The collector's own namespace (this child's): a perf map on a tmpfs /tmp
 * opens; the same /tmp made a dead FUSE file system after the first call
 * (the table of the namespace's mounts is then stale, and the new mount
 * may even have the old one's id) is -EREMOTE at once.
 */
static int own_namespace(void)
{
	char path[64];
	struct stat st;
	unsigned before, after;
	int fd, ffd;

	CHECK(!perf_map_path(path, sizeof(path)));
	CHECK(!mount("tmpfs", "/tmp", "tmpfs", 0, "size=1m"));
	fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && write(fd, "1000 10 f\n", 10) == 10);
	close(fd);
	fd = coll_open_local_in_root((uint32_t)getpid(), path, mine, NULL, &st);
	CHECK(fd >= 0 && st.st_size == 10);
	close(fd);
	/* a path through a symbolic link, or with .., is refused */
	CHECK(!symlink("/tmp", "/tmp/link"));
	CHECK(coll_open_local_in_root((uint32_t)getpid(), "/tmp/link/x", mine, NULL, &st) < 0);
	CHECK(coll_open_local_in_root((uint32_t)getpid(), "/tmp/../tmp/x", mine, NULL, &st) ==
	      -EINVAL);
	before = mnt_id("/tmp");
	CHECK(!umount2("/tmp", MNT_DETACH));
	ffd = mount_dead_fuse("/tmp");
	CHECK(ffd >= 0);
	after = mnt_id("/tmp"); /* an O_PATH open of the mount's root asks FUSE nothing */
	fprintf(stderr, "tmpfs /tmp was mount %u, the dead FUSE is mount %u\n", before, after);
	CHECK(coll_open_local_in_root((uint32_t)getpid(), path, mine, NULL, &st) == -EREMOTE);
	/* and again, the table now current */
	CHECK(coll_open_local_in_root((uint32_t)getpid(), path, mine, NULL, &st) == -EREMOTE);
	close(ffd);
	return 0;
}

/*
 * Another process's namespace, which the collector's table does not hold:
 * a grandchild in a namespace of its own with a dead FUSE /tmp, looked at
 * from the child (the collector's place).
 */
static int other_namespace(void)
{
	int pipefd[2], ffd, status;
	char path[64], c;
	struct stat st;
	pid_t pid;

	CHECK(!pipe(pipefd));
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    (ffd = mount_dead_fuse("/tmp")) < 0)
			_exit(3);
		(void)!write(pipefd[1], "m", 1);
		pause(); /* killed by the child */
		_exit(0);
	}
	close(pipefd[1]);
	CHECK(read(pipefd[0], &c, 1) == 1);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", pid);
	CHECK(coll_open_local_in_root((uint32_t)pid, path, mine, NULL, &st) == -EREMOTE);
	/* the same from its root down a longer path (a jitdump's) */
	CHECK(coll_open_local_in_root((uint32_t)pid, "/tmp/a/b/jit-1.dump", mine, NULL, &st) ==
	      -EREMOTE);
	/* and its root itself, on our (local) root file system: a lookup there is fine */
	CHECK(coll_open_local_in_root((uint32_t)pid, "/no-such-file-lowprof", mine, NULL, &st) ==
	      -ENOENT);
	kill(pid, SIGKILL);
	CHECK(waitpid(pid, &status, 0) == pid);
	return 0;
}

/* A test's body, run by run_in_child */
struct body {
	int (*fn)(void);
};

static const struct body own_ns = {own_namespace}, other_ns = {other_namespace};

/* Runs the body given as the test's state in_child, or skips saying why it cannot. */
static void run_in_child(void **state)
{
	const struct body *b = *state;
	const char *why = cannot_run();

	if (why) {
		fprintf(stderr, "skipped: %s\n", why);
		skip();
	}
	assert_int_equal(in_child(b->fn), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		{"own_namespace", run_in_child, NULL, NULL, (void *)&own_ns},
		{"other_namespace", run_in_child, NULL, NULL, (void *)&other_ns},
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
