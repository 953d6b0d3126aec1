// SPDX-License-Identifier: MIT
/*
 * Handing the symbolizer the files processes have mapped (the file
 * channel, lowprof/files.h). The symbolizer, unprivileged, cannot open
 * binaries only their owner can read, nor reach files in another mount
 * namespace; the collector can (CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE) and
 * opens them read-only on its behalf.
 *
 * What a request can make the collector open: only a file that the named
 * process has mapped executable right now, found by device and inode in
 * that process's /proc/PID/maps. The path comes from the kernel's maps,
 * is resolved inside the process's own root (RESOLVE_IN_ROOT: its
 * symlinks cannot lead out of it); a file deleted or replaced since it was
 * mapped is opened from the process instead (/proc/PID/exe, or
 * /proc/PID/map_files/START-END of that mapping). The file opened must be
 * a regular file with that device and inode, or nothing is sent. The
 * collector reads none of the file's bytes. With -p, only files of those
 * processes.
 *
 * Who does it: the broker (below) takes requests in the drain loop, which
 * must never wait, and has worker processes do the maps reads and opens,
 * which can wait as long as a file system hangs.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "collector_int.h"
#include "lowprof/clock.h"
#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/text.h"
#include "procfs.h"

#define MAPS_MAX_BYTES (64u << 20)

static bool is_file(const struct stat *st, uint32_t major, uint32_t minor, uint64_t inode)
{
	return S_ISREG(st->st_mode) && st->st_ino == inode && st->st_dev == makedev(major, minor);
}

int coll_mapped_path(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode,
		     struct coll_mapped *out)
{
	char maps[32];
	const char *cur, *end;
	struct lps_mapping m;
	size_t len;
	char *buf;
	int err, r;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	err = coll_read_file(maps, MAPS_MAX_BYTES, &buf, &len);
	if (err)
		return err;
	err = -ENOENT;
	cur = buf;
	end = buf + len;
	while ((r = coll_maps_next(&cur, end, &m)) != 0) {
		if (r < 0 || !(m.prot & LPS_PROT_X) || m.inode != inode || m.dev_major != major ||
		    m.dev_minor != minor || !m.path.len || m.path.ptr[0] != '/')
			continue;
		if (m.path.len >= sizeof(out->path) || memchr(m.path.ptr, '\0', m.path.len)) {
			err = -ENAMETOOLONG;
			continue;
		}
		memcpy(out->path, m.path.ptr, m.path.len);
		out->path[m.path.len] = '\0';
		out->start = m.start;
		out->end = m.end;
		err = 0;
		break;
	}
	free(buf);
	return err;
}

/*
 * pfd (O_PATH, closed here) reopened read-only if ok(its stat, arg): the
 * inode found, opened for reading, no device or FIFO open. An fd or -errno.
 */
static int reopen_if(int pfd, bool (*ok)(const struct stat *st, const void *arg), const void *arg,
		     struct stat *st)
{
	struct stat st2;
	int fd;

	if (fstat(pfd, st) || !ok(st, arg)) {
		close(pfd);
		return -ESTALE;
	}
	fd = lp_reopen(pfd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	close(pfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st2) || st2.st_ino != st->st_ino || st2.st_dev != st->st_dev) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

/* pid's root directory, O_PATH, for an absolute path to be opened in: fd or -errno */
static int open_root(uint32_t pid, const char *path)
{
	char root[32];
	int fd;

	if (path[0] != '/')
		return -EINVAL;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	fd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int coll_open_in_root(uint32_t pid, const char *path,
		      bool (*ok)(const struct stat *st, const void *arg), const void *arg,
		      struct stat *st)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int rootfd = open_root(pid, path), pfd, err;

	if (rootfd < 0)
		return rootfd;
	pfd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (pfd < 0 && errno == ENOSYS) /* before 5.6: the check below still holds */
		pfd = openat(rootfd, path + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	err = pfd < 0 ? -errno : 0;
	close(rootfd);
	return err ? err : reopen_if(pfd, ok, arg, st);
}

/* ---- opening in the drain loop, on local file systems only -------------- */

#define WALK_MAX_DEPTH 16
#define MOUNTINFO_MAX  (4u << 20)
#define FDINFO_MAX     4096u

/*
 * File systems whose lookups and reads the kernel serves itself: no daemon
 * a user runs (FUSE, which any user can mount in a user namespace of their
 * own, or on a file they own with fusermount), and no server (NFS, CIFS,
 * 9p, virtiofs), can make them wait. overlay is one of them only when the
 * process shares the collector's user namespace: in a namespace of its own
 * a user can stack it on FUSE.
 */
static const char *const local_types[] = {"tmpfs", "ramfs",    "ext2",	   "ext3", "ext4",
					  "xfs",   "btrfs",    "f2fs",	   "jfs",  "reiserfs",
					  "zfs",   "bcachefs", "squashfs", "erofs"};

struct local_walk {
	uint32_t pid;
	int fd[WALK_MAX_DEPTH + 2]; /* every descriptor of the walk, open: their mounts pinned */
	uint32_t nfd;
	uint32_t ok[WALK_MAX_DEPTH + 2]; /* mount ids found local, each pinned by one of fd */
	uint32_t nok;
};

static bool same_userns(uint32_t pid)
{
	struct stat a, b;
	char path[40];

	snprintf(path, sizeof(path), "/proc/%u/ns/user", pid);
	return !stat(path, &a) && !stat("/proc/self/ns/user", &b) && a.st_ino == b.st_ino &&
	       a.st_dev == b.st_dev;
}

/* Whether a mount of type t, in pid's mount namespace (0: the collector's), is local. */
static bool type_local(struct lps_str t, uint32_t pid)
{
	for (size_t i = 0; i < sizeof(local_types) / sizeof(local_types[0]); i++)
		if (strlen(local_types[i]) == t.len && !memcmp(local_types[i], t.ptr, t.len))
			return true;
	return t.len == 7 && !memcmp(t.ptr, "overlay", 7) && (!pid || same_userns(pid));
}

/*
 * The collector's own mount namespace's mounts, each local or not, from
 * /proc/self/mountinfo, read again only when poll says its table changed:
 * most processes' roots and /tmp are mounts of it, and on a host of many
 * containers it has hundreds, whose text costs the kernel ~1.4 us each to
 * print. Every mount in it was made by root in the collector's user
 * namespace (a user's namespace's mounts never propagate back to it), so
 * overlay is local here. A mount id found in the table is that mount:
 * ids are not given again while a mount exists (ours is pinned by the
 * walk's descriptor), and a mount made since the read would have raised
 * the poll. fd -1: not opened yet; -2: cannot be (each look then reads the
 * process's mountinfo).
 */
struct own_mount {
	uint32_t id;
	bool local;
};
static struct {
	int fd;
	struct own_mount *m;
	size_t n;
} own = {.fd = -1};

static int own_cmp(const void *a, const void *b)
{
	uint32_t x = ((const struct own_mount *)a)->id, y = ((const struct own_mount *)b)->id;

	return x < y ? -1 : x > y;
}

/* own's table, current: 0, or -errno (then it is not to be used) */
static int own_refresh(void)
{
	struct pollfd pfd = {.events = POLLPRI};
	const char *cur, *end;
	struct own_mount *m;
	struct lps_str type;
	size_t len, n = 0;
	char *buf;
	int err;

	if (own.fd == -1) {
		own.fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
		if (own.fd < 0) {
			own.fd = -2;
			return -EBADF;
		}
	}
	if (own.fd < 0)
		return -EBADF;
	/* a change since the last poll reports (and forgets) it: read again after it */
	pfd.fd = own.fd;
	if (poll(&pfd, 1, 0) < 0)
		return -errno;
	if (own.m && !(pfd.revents & (POLLPRI | POLLERR)))
		return 0;
	free(own.m);
	own.m = NULL;
	own.n = 0;
	if (lseek(own.fd, 0, SEEK_SET) < 0)
		return -errno;
	err = coll_read_fd(own.fd, MOUNTINFO_MAX, &buf, &len);
	if (err)
		return err;
	/* at most one mount a line, and a line is at least "1 - t" */
	m = malloc((len / 5 + 1) * sizeof(*m));
	if (!m) {
		free(buf);
		return -ENOMEM;
	}
	cur = buf;
	end = buf + len;
	for (uint32_t id; n <= len / 5;) {
		int r = coll_mountinfo_next(&cur, end, &id, &type);

		if (!r)
			break;
		if (r > 0) /* a malformed line's mount is left out: not local */
			m[n++] = (struct own_mount){id, type_local(type, 0)};
	}
	free(buf);
	qsort(m, n, sizeof(*m), own_cmp);
	own.m = m;
	own.n = n;
	return 0;
}

/* Whether mount id is in own's (current) table: *local its verdict. */
static bool own_find(uint32_t id, bool *local)
{
	struct own_mount key = {.id = id}, *hit;

	if (own_refresh())
		return false;
	hit = bsearch(&key, own.m, own.n, sizeof(*own.m), own_cmp);
	if (hit)
		*local = hit->local;
	return hit;
}

/*
 * Keeps fd in the walk (closed with it) once its mount is one whose type
 * type_local accepts: 0, or -EREMOTE (closed) for any other, and for one
 * that cannot be told (fail closed). The mount is looked up in the
 * collector's own namespace's table (own), or else in the process's
 * mountinfo read after fd was opened: fd pins the mount, so its id cannot
 * have been given to another since.
 */
static int walk_keep(struct local_walk *w, int fd)
{
	char path[48], *buf = NULL;
	struct lps_str type;
	bool local;
	uint32_t id;
	size_t len;
	int err;

	w->fd[w->nfd++] = fd;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	err = coll_read_file(path, FDINFO_MAX, &buf, &len);
	if (!err)
		err = coll_fdinfo_mnt_id(buf, len, &id) ? -EREMOTE : 0;
	free(buf);
	if (err)
		return err;
	for (uint32_t i = 0; i < w->nok; i++)
		if (w->ok[i] == id)
			return 0;
	if (own_find(id, &local)) {
		if (!local)
			return -EREMOTE;
		w->ok[w->nok++] = id;
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/%u/mountinfo", w->pid);
	err = coll_read_file(path, MOUNTINFO_MAX, &buf, &len);
	if (err)
		return err == -EFBIG ? -EREMOTE : err;
	err = coll_mountinfo_type(buf, len, id, &type) || !type_local(type, w->pid) ? -EREMOTE : 0;
	free(buf);
	if (!err)
		w->ok[w->nok++] = id;
	return err;
}

int coll_open_local_in_root(uint32_t pid, const char *path,
			    bool (*ok)(const struct stat *st, const void *arg), const void *arg,
			    struct stat *st)
{
	struct local_walk w = {.pid = pid};
	const char *name = path;
	int fd = open_root(pid, path), err;

	if (fd < 0)
		return fd;
	err = walk_keep(&w, fd);
	while (!err) {
		char comp[NAME_MAX + 1];
		const char *end;
		size_t len;
		bool last;

		while (*name == '/')
			name++;
		end = strchrnul(name, '/');
		len = (size_t)(end - name);
		last = !*end;
		if (!len || len > NAME_MAX || (len == 1 && name[0] == '.') ||
		    (len == 2 && !memcmp(name, "..", 2)) || (!last && w.nfd > WALK_MAX_DEPTH)) {
			err = -EINVAL;
			break;
		}
		memcpy(comp, name, len);
		comp[len] = '\0';
		/*
		 * One component, in a directory on a local mount, not followed
		 * if a symbolic link; O_PATH: nothing of the file's is opened,
		 * so a mount crossed into is not asked anything before its type
		 * is checked.
		 */
		struct open_how how = {
			.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC | (last ? 0 : O_DIRECTORY),
			.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
		fd = (int)syscall(SYS_openat2, w.fd[w.nfd - 1], comp, &how, sizeof(how));
		if (fd < 0 && errno == ENOSYS) /* before 5.6: one component, O_NOFOLLOW */
			fd = openat(w.fd[w.nfd - 1], comp, (int)how.flags);
		if (fd < 0) {
			err = -errno;
			break;
		}
		err = walk_keep(&w, fd);
		if (!err && last) {
			/* reopen_if closes the O_PATH descriptor: out of the walk */
			w.nfd--;
			err = reopen_if(fd, ok, arg, st);
			fd = err;
			break;
		}
		name = end;
	}
	while (w.nfd)
		close(w.fd[--w.nfd]);
	return err < 0 ? err : fd;
}

struct file_id {
	uint32_t major, minor;
	uint64_t inode;
};

static bool is_that_file(const struct stat *st, const void *arg)
{
	const struct file_id *id = arg;

	return is_file(st, id->major, id->minor, id->inode);
}

/* The mapped file by its path, resolved inside the process's root. */
static int open_by_path(uint32_t pid, const char *path, uint32_t major, uint32_t minor,
			uint64_t inode)
{
	struct file_id id = {major, minor, inode};
	struct stat st;

	return coll_open_in_root(pid, path, is_that_file, &id, &st);
}

/* The mapped file through a /proc magic link of the process (exe, map_files/...). */
static int open_by_link(const char *link, uint32_t major, uint32_t minor, uint64_t inode)
{
	struct file_id id = {major, minor, inode};
	struct stat st;
	int pfd = open(link, O_PATH | O_CLOEXEC);

	return pfd < 0 ? -errno : reopen_if(pfd, is_that_file, &id, &st);
}

/*
 * A file deleted or replaced since it was mapped (an upgrade, a redeploy)
 * has no path any more; the kernel still reaches it from the process. As
 * its executable, /proc/PID/exe asks only what reading its maps asked (a
 * ptrace-mode read check: CAP_SYS_PTRACE). Any other mapped file only
 * through /proc/PID/map_files/START-END, which takes CAP_CHECKPOINT_RESTORE
 * (Linux 5.9+) or CAP_SYS_ADMIN in the initial user namespace besides
 * (fs/proc/base.c, proc_map_files_get_link); the collector keeps the first
 * when it was given it (caps.c), never the second.
 */
static int open_unreachable(uint32_t pid, const struct coll_mapped *m, uint32_t major,
			    uint32_t minor, uint64_t inode)
{
	static bool warned;
	char link[64], shown[LP_NAME_PRINT_MAX + 4];
	int fd;

	snprintf(link, sizeof(link), "/proc/%u/exe", pid);
	fd = open_by_link(link, major, minor, inode);
	if (fd >= 0)
		return fd;
	snprintf(link, sizeof(link), "/proc/%u/map_files/%llx-%llx", pid,
		 (unsigned long long)m->start, (unsigned long long)m->end);
	fd = open_by_link(link, major, minor, inode);
	if (fd != -EPERM && fd != -EACCES)
		return fd;
	if (!warned) {
		warned = true;
		lp_warn("files: pid %u's %s is deleted or replaced, and only "
			"/proc/PID/map_files still reaches it, which needs CAP_CHECKPOINT_RESTORE "
			"(Linux 5.9+; CAP_SYS_ADMIN before) that the collector was not given; "
			"frames in such files stay unsymbolized",
			pid, lp_sanitize_name(shown, sizeof(shown), m->path));
	}
	return -EPERM;
}

int coll_file_open_at(uint32_t pid, const struct coll_mapped *m, uint32_t major, uint32_t minor,
		      uint64_t inode)
{
	int fd = open_by_path(pid, m->path, major, minor, inode), err;

	if (fd >= 0 || fd == -EINVAL)
		return fd;
	err = open_unreachable(pid, m, major, minor, inode);
	/* not reachable from the process either: the path's reason */
	return err >= 0 || err == -EPERM ? err : fd;
}

int coll_file_open(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode)
{
	struct coll_mapped m;
	int err;

	if (pid == 0 || pid > 0x3fffffff)
		return -ESRCH;
	err = coll_mapped_path(pid, major, minor, inode, &m);
	return err ? err : coll_file_open_at(pid, &m, major, minor, inode);
}

/* ---- the broker ----------------------------------------------------------
 *
 * Requests are read and checked in the drain loop (a recvmsg each, never
 * blocking) and answered there, always: refusals at once, files when a
 * worker has opened them. The work that can block, the maps read and the
 * open, runs in a worker *process*: an open on a hung NFS server or FUSE
 * daemon waits in the kernel for as long as the server hangs, and once the
 * server has the request not even SIGKILL ends the wait. A thread stuck
 * there would keep the collector from ever exiting (a process exits when
 * its last thread does); a stuck child is left behind, and dies when it
 * returns (PR_SET_PDEATHSIG).
 *
 * A request not answered within the timeout is answered -ETIMEDOUT here
 * and its worker is given up on ("stuck"); a new worker serves the queue.
 * At most max_stuck workers are stuck at once; beyond that, and for any
 * request where a stuck worker waits (on its device when it is stuck
 * opening, on its process when stuck reading maps: that read waits for the
 * process's mmap lock, which a fault on a hung file holds), requests are
 * refused at once (-EBUSY). A stuck worker that returns answers no one
 * (its request was answered) and serves again, or leaves if another does.
 * Everything is counted. The queue holds BROKER_QUEUE requests and they
 * time out too. One broker serves every file channel (one per symbolizer
 * of a sharded run): each request is answered on the channel it came on.
 *
 * Workers are forked from the drain loop, after coll_drop_caps: they have
 * only the two capabilities the collector kept. They close every
 * descriptor but their socket (no BPF link, perf event or ring outlives
 * the collector in a stuck worker), restore default signal actions, and
 * die with the collector. One request at a time per worker: the request
 * goes down, a note when the maps are read, then the result with the
 * descriptor (SCM_RIGHTS) comes back.
 */
#define BROKER_QUEUE	  64
#define BROKER_TIMEOUT_MS 1000 /* under the symbolizer's wait (FILES_WAIT_MS, 2 s) */
#define BROKER_MAX_STUCK  4
#define BROKER_WORKERS	  (BROKER_MAX_STUCK + 1)
#define BROKER_REAP	  16 /* retired workers not yet exited, to reap */

struct breq {
	struct lp_file_req q;
	uint64_t t0; /* CLOCK_MONOTONIC ns when it was read: the timeout counts from here */
	int sock;    /* the channel it came on; -1 once that closed (coll_broker__detach) */
};

/* A worker's message up: a note (WMSG_OPENING, the maps were read) or the result. */
#define WMSG_OPENING 1
#define WMSG_RESULT  2

struct wmsg {
	uint32_t type;
	uint32_t id;
	int32_t err; /* WMSG_RESULT: 0 with a descriptor attached, or -errno */
	uint32_t zero;
};

struct bworker {
	pid_t pid; /* 0: a free slot */
	int sock;  /* our end */
	struct breq cur;
	bool busy;     /* cur was sent down */
	bool opening;  /* past cur's maps read, in the lookup and open */
	bool answered; /* cur was answered for it (timed out) */
	bool stuck;    /* given up on: counted in nstuck, not in nlive */
};

struct coll_broker {
	struct coll_broker_opts o;
	int epfd; /* readable when a worker has something to say */
	struct breq q[BROKER_QUEUE];
	uint32_t qhead, qlen;
	struct bworker w[BROKER_WORKERS];
	uint32_t nlive, nstuck;
	pid_t reap[BROKER_REAP];
	struct coll_files_stats st;
};

static void reply(int sock, uint32_t id, int err, int fd)
{
	struct lp_file_rep rep = {.magic = LP_FILE_REP_MAGIC, .id = id, .err = err};

	/* a peer that stopped reading only loses its own answers */
	if (lp_send_msg(sock, &rep, sizeof(rep), &fd, fd >= 0 ? 1 : 0))
		lp_debug("files: replying to request %u: %m", id);
}

/* The answer to r, on the channel it came on if that is still open. */
static void answer(const struct breq *r, int err, int fd)
{
	if (r->sock >= 0)
		reply(r->sock, r->q.id, err, fd);
}

/* ---- in the worker process ---- */

static int worker_say(uint32_t type, uint32_t id, int err, int fd)
{
	struct wmsg m = {.type = type, .id = id, .err = err};

	return lp_send_msg(3, &m, sizeof(m), &fd, fd >= 0 ? 1 : 0);
}

static __attribute__((noreturn)) void worker_main(int sock, pid_t parent,
						  const struct coll_broker_opts *o)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGPIPE, SIGCHLD};
	sigset_t none;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* nothing of the collector's but the socket: its links, events, rings */
	if ((sock != 3 && dup2(sock, 3) < 0) || close_range(4, ~0u, 0))
		_exit(1);
	for (;;) {
		struct lp_file_req q;
		struct coll_mapped m;
		int err, fd = -1;
		ssize_t n = recv(3, &q, sizeof(q), 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(q))
			_exit(0); /* the collector closed our socket, or is gone */
		if (q.pid == 0 || q.pid > 0x3fffffff) {
			err = -ESRCH;
		} else {
			err = o->maps(q.pid, q.dev_major, q.dev_minor, q.inode, &m);
			if (!err && !worker_say(WMSG_OPENING, q.id, 0, -1)) {
				fd = o->open(q.pid, &m, q.dev_major, q.dev_minor, q.inode);
				err = fd < 0 ? fd : 0;
			}
		}
		worker_say(WMSG_RESULT, q.id, err, fd);
		if (fd >= 0)
			close(fd);
	}
}

/* ---- in the collector ---- */

static uint64_t timeout_ns(const struct coll_broker *b)
{
	return (uint64_t)b->o.timeout_ms * 1000000ull;
}

static void reap_exited(struct coll_broker *b)
{
	for (int i = 0; i < BROKER_REAP; i++)
		if (b->reap[i] > 0 && waitpid(b->reap[i], NULL, WNOHANG) != 0)
			b->reap[i] = 0;
}

/* Closes w's socket (it then exits, or dies when it returns) and frees the slot. */
static void worker_retire(struct coll_broker *b, struct bworker *w)
{
	epoll_ctl(b->epfd, EPOLL_CTL_DEL, w->sock, NULL);
	close(w->sock);
	if (waitpid(w->pid, NULL, WNOHANG) == 0) {
		/* not gone yet: reaped later (a slot lost if all are taken: a zombie) */
		for (int i = 0; i < BROKER_REAP; i++) {
			if (b->reap[i] <= 0) {
				b->reap[i] = w->pid;
				break;
			}
		}
	}
	if (w->stuck)
		b->nstuck--;
	else
		b->nlive--;
	*w = (struct bworker){0};
}

/* A new live worker: 0 or -errno. */
static int worker_start(struct coll_broker *b)
{
	struct epoll_event ev = {.events = EPOLLIN};
	struct bworker *w = NULL;
	pid_t parent = getpid();
	int sv[2], err;

	for (int i = 0; i < BROKER_WORKERS && !w; i++)
		if (!b->w[i].pid)
			w = &b->w[i];
	if (!w)
		return -EAGAIN;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	w->pid = fork();
	if (w->pid == 0) {
		close(sv[0]);
		worker_main(sv[1], parent, &b->o);
	}
	err = w->pid < 0 ? -errno : 0;
	close(sv[1]);
	ev.data.fd = sv[0];
	if (!err &&
	    (fcntl(sv[0], F_SETFL, O_NONBLOCK) || epoll_ctl(b->epfd, EPOLL_CTL_ADD, sv[0], &ev)))
		err = -errno;
	if (err) {
		close(sv[0]);
		if (w->pid > 0) {
			kill(w->pid, SIGKILL);
			waitpid(w->pid, NULL, 0);
		}
		*w = (struct bworker){0};
		lp_debug("files: starting a worker: %s", strerror(-err));
		return err;
	}
	w->sock = sv[0];
	b->nlive++;
	return 0;
}

/* Hands queued requests to idle live workers. */
static void dispatch(struct coll_broker *b)
{
	for (int i = 0; i < BROKER_WORKERS && b->qlen; i++) {
		struct bworker *w = &b->w[i];
		struct breq *r = &b->q[b->qhead];

		if (!w->pid || w->busy || w->stuck)
			continue;
		if (send(w->sock, &r->q, sizeof(r->q), MSG_DONTWAIT | MSG_NOSIGNAL) !=
		    (ssize_t)sizeof(r->q)) {
			b->st.failed++;
			answer(r, -EIO, -1);
			worker_retire(b, w);
		} else {
			w->cur = *r;
			w->busy = true;
			w->opening = w->answered = false;
		}
		b->qhead = (b->qhead + 1) % BROKER_QUEUE;
		b->qlen--;
	}
}

/* What w sent up (it died: its request is answered -EIO, it is retired). */
static void worker_hear(struct coll_broker *b, struct bworker *w)
{
	for (;;) {
		struct wmsg m;
		int fd[1] = {-1}, nfds = 0;
		ssize_t n = lp_recv_msg(w->sock, &m, sizeof(m), fd, 1, &nfds, MSG_DONTWAIT, NULL);

		if (n == -EAGAIN || n == -EINTR)
			return;
		if (n != sizeof(m) || !w->busy || m.id != w->cur.q.id ||
		    (m.type == WMSG_RESULT && (m.err == 0) != (nfds == 1))) {
			/* gone, or talking nonsense: not ours to trust further */
			if (nfds)
				close(fd[0]);
			if (w->busy && !w->answered) {
				b->st.failed++;
				answer(&w->cur, -EIO, -1);
			}
			worker_retire(b, w);
			return;
		}
		if (m.type == WMSG_OPENING) {
			w->opening = true;
			continue;
		}
		if (w->answered) {
			b->st.late++; /* answered -ETIMEDOUT already */
		} else {
			if (nfds)
				b->st.sent++;
			else
				b->st.failed++;
			answer(&w->cur,
			       nfds			    ? 0
			       : m.err < 0 && m.err > -4096 ? m.err
							    : -EIO,
			       nfds ? fd[0] : -1);
		}
		if (nfds)
			close(fd[0]);
		w->busy = false;
		if (w->stuck) {
			w->stuck = false;
			b->nstuck--;
			b->nlive++;
		}
		/* one live worker is enough: a stuck one come back leaves */
		if (b->nlive > 1) {
			worker_retire(b, w);
			return;
		}
	}
}

struct coll_broker *coll_broker__new(const struct coll_broker_opts *opts)
{
	struct coll_broker *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->o = *opts;
	if (!b->o.timeout_ms)
		b->o.timeout_ms = BROKER_TIMEOUT_MS;
	if (!b->o.max_stuck || b->o.max_stuck > BROKER_MAX_STUCK)
		b->o.max_stuck = BROKER_MAX_STUCK;
	if (!b->o.maps)
		b->o.maps = coll_mapped_path;
	if (!b->o.open)
		b->o.open = coll_file_open_at;
	b->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (b->epfd < 0) {
		free(b);
		return NULL;
	}
	return b;
}

int coll_broker__fd(const struct coll_broker *b)
{
	return b ? b->epfd : -1;
}

bool coll_pid_profiled(const pid_t *pids, size_t npids, uint32_t pid)
{
	if (!npids)
		return true;
	for (size_t i = 0; i < npids; i++)
		if ((uint32_t)pids[i] == pid)
			return true;
	return false;
}

/*
 * A stuck worker waits where q would: on the file system of q's device
 * (stuck opening), or on q's process (stuck reading its maps).
 */
static bool near_stuck(const struct coll_broker *b, const struct lp_file_req *q)
{
	for (int i = 0; i < BROKER_WORKERS; i++) {
		const struct bworker *w = &b->w[i];

		if (!w->pid || !w->stuck)
			continue;
		if (w->opening ? w->cur.q.dev_major == q->dev_major &&
					 w->cur.q.dev_minor == q->dev_minor
			       : w->cur.q.pid == q->pid)
			return true;
	}
	return false;
}

/* Queues a checked request for a worker, or answers it. */
static void take(struct coll_broker *b, const struct lp_file_req *q, int sock, uint64_t now)
{
	struct breq r = {.q = *q, .t0 = now, .sock = sock};
	const char *why = NULL;

	if (!coll_pid_profiled(b->o.pids, b->o.npids, q->pid)) {
		b->st.refused_pid++;
		if (!b->st.warned_pid++)
			lp_warn("files: refusing a request for pid %u: not a process given with -p",
				q->pid);
		lp_debug("files: request %u for pid %u refused: not profiled", q->id, q->pid);
		answer(&r, -EPERM, -1);
		return;
	}
	if (b->qlen == BROKER_QUEUE)
		why = "the queue is full";
	else if (near_stuck(b, q))
		why = "a request on its process or device is stuck";
	else if (!b->nlive && (b->nstuck >= b->o.max_stuck || worker_start(b)))
		why = "every worker is stuck";
	if (why) {
		b->st.busy++;
		lp_debug("files: request %u (pid %u, %u:%u inode %llu) refused: %s", q->id, q->pid,
			 q->dev_major, q->dev_minor, (unsigned long long)q->inode, why);
		answer(&r, -EBUSY, -1);
		return;
	}
	b->q[(b->qhead + b->qlen++) % BROKER_QUEUE] = r;
	dispatch(b);
}

int coll_broker__serve(struct coll_broker *b, int sock, int max)
{
	int served = 0;

	while (served < max) {
		/* a request, or a build-id note (the larger) */
		union {
			struct lp_file_req q;
			struct lp_file_buildid note;
		} m;
		struct lp_file_req q;
		struct ucred cr;
		int none[1], nfds;
		ssize_t n = lp_recv_msg(sock, &m, sizeof(m), none, 0, &nfds, MSG_DONTWAIT, &cr);

		if (n == -EAGAIN || n == -EINTR)
			return served;
		if (n == -EPIPE || n == -ECONNRESET)
			return -EPIPE;
		served++;
		if (n == (ssize_t)sizeof(m.note) && m.note.magic == LP_FILE_BUILDID_MAGIC &&
		    m.note.len >= 1 && m.note.len <= sizeof(m.note.id) &&
		    (cr.uid == b->o.owner || cr.uid == 0)) {
			if (b->o.buildid)
				b->o.buildid(b->o.ctx, &m.note);
			continue;
		}
		q = m.q;
		if (n == -EBADMSG || (n >= 0 && (size_t)n != sizeof(q)) ||
		    (n >= 0 && (q.magic != LP_FILE_REQ_MAGIC || q.zero))) {
			b->st.refused++;
			if (!b->st.warned++)
				lp_warn("files: a malformed request on the file channel; ignored");
			continue;
		}
		if (n < 0)
			return (int)n;
		if (cr.uid != b->o.owner && cr.uid != 0) {
			b->st.refused++;
			if (!b->st.warned++)
				lp_warn("files: refusing a request from uid %u (pid %d): only uid "
					"%u may ask",
					cr.uid, cr.pid, b->o.owner);
			reply(sock, q.id, -EPERM, -1);
			continue;
		}
		take(b, &q, sock, lp_clock_ns(CLOCK_MONOTONIC));
	}
	return served;
}

/* Answers -ETIMEDOUT what is due at now and gives up on its worker. */
static void expire(struct coll_broker *b, uint64_t now)
{
	uint64_t to = timeout_ns(b);

	for (int i = 0; i < BROKER_WORKERS; i++) {
		struct bworker *w = &b->w[i];

		if (!w->pid || !w->busy || w->answered || now - w->cur.t0 < to)
			continue;
		b->st.timeouts++;
		w->answered = true;
		answer(&w->cur, -ETIMEDOUT, -1);
		w->stuck = true;
		b->nlive--;
		b->nstuck++;
		if (b->nstuck > b->st.stuck_peak)
			b->st.stuck_peak = b->nstuck;
		lp_warn("files: %s pid %u's file %u:%u inode %llu has not returned after %u ms "
			"(a hung file system?); answered with a timeout, %u of at most %u "
			"workers stuck",
			w->opening ? "opening" : "reading the maps for", w->cur.q.pid,
			w->cur.q.dev_major, w->cur.q.dev_minor, (unsigned long long)w->cur.q.inode,
			b->o.timeout_ms, b->nstuck, b->o.max_stuck);
	}
	/* waited too long in the queue: the same answer (it is FIFO) */
	while (b->qlen && now - b->q[b->qhead].t0 >= to) {
		b->st.timeouts++;
		answer(&b->q[b->qhead], -ETIMEDOUT, -1);
		b->qhead = (b->qhead + 1) % BROKER_QUEUE;
		b->qlen--;
	}
}

int coll_broker__tick(struct coll_broker *b, uint64_t now)
{
	uint64_t to = timeout_ns(b), next = UINT64_MAX;

	for (int i = 0; i < BROKER_WORKERS; i++)
		if (b->w[i].pid)
			worker_hear(b, &b->w[i]);
	expire(b, now);
	/* the worker that served the queue is stuck: another, if allowed */
	if (b->qlen && !b->nlive && b->nstuck < b->o.max_stuck)
		worker_start(b);
	dispatch(b);
	reap_exited(b);
	for (int i = 0; i < BROKER_WORKERS; i++) {
		const struct bworker *w = &b->w[i];

		if (w->pid && w->busy && !w->answered && w->cur.t0 + to < next)
			next = w->cur.t0 + to;
	}
	if (b->qlen && b->q[b->qhead].t0 + to < next)
		next = b->q[b->qhead].t0 + to;
	b->st.stuck = b->nstuck;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

void coll_broker__detach(struct coll_broker *b, int sock)
{
	uint32_t n = 0;

	/* nobody to answer: what it queued goes, what it has in flight answers no one */
	for (uint32_t i = 0; i < b->qlen; i++) {
		struct breq r = b->q[(b->qhead + i) % BROKER_QUEUE];

		if (r.sock != sock)
			b->q[(b->qhead + n++) % BROKER_QUEUE] = r;
	}
	b->qlen = n;
	for (int i = 0; i < BROKER_WORKERS; i++)
		if (b->w[i].pid && b->w[i].cur.sock == sock)
			b->w[i].cur.sock = -1;
}

void coll_broker__stats(const struct coll_broker *b, struct coll_files_stats *st)
{
	*st = b->st;
	st->stuck = b->nstuck;
}

void coll_broker__free(struct coll_broker *b)
{
	if (!b)
		return;
	/* idle workers exit on their socket's end; stuck ones die when they return */
	for (int i = 0; i < BROKER_WORKERS; i++)
		if (b->w[i].pid)
			worker_retire(b, &b->w[i]);
	reap_exited(b);
	close(b->epfd);
	free(b);
}
