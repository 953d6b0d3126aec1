// SPDX-License-Identifier: MIT
/*
 * The spool (spool.h): the writer process and the symbolizer's side of it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/spoolname.h"
#include "sandbox.h"
#include "spool.h"

#define SPOOL_MAGIC 0x6c70736cu /* "lpsl" */
/* a name: "offcpu-" + 16 for the time + "-" + 20 digits + ".s16of16" + ".pb.gz" */
#define SPOOL_NAME_MAX 72
/* files a budget pass looks at; a spool of more is trimmed over passes */
#define SPOOL_MAX_SCAN 65536

static const char *const kinds[] = {"cpu", "offcpu"};
/* the kind of symb_spool__put_metrics: one file, replaced, outside the budget */
#define KIND_METRICS 2u

/* symbolizer -> writer: a window's file is ready in the memory file */
struct spool_msg {
	uint32_t magic;
	uint32_t kind; /* index into kinds */
	uint64_t seq;
	int64_t start_real_ns;
	uint64_t len; /* bytes of the memory file, from 0 */
};

/* writer -> symbolizer, first: the number after the spool's highest window */
struct spool_hello {
	uint64_t next_seq;
};

/* writer -> symbolizer, after each window */
struct spool_ack {
	int32_t err; /* 0 or a negative errno */
	uint32_t pad;
	uint64_t removed, removed_bytes;
	uint64_t removed_full; /* of removed: for a full disk (make_room) */
};

struct symb_spool {
	int sock;  /* SOCK_SEQPACKET to the writer */
	int memfd; /* shared with the writer */
	pid_t writer;
	bool writer_gone;  /* the socket to it failed: no window can be written again */
	int put_err;	   /* the last window's error (said once until one is written) */
	uint64_t next_seq; /* after the spool's highest */
	uint32_t shard, nshards;
	char label[32]; /* symb_spool__shard_label */
	struct symb_spool_stats n;
};

/* ---- the writer ----------------------------------------------------------- */

struct spool_file {
	char name[SPOOL_NAME_MAX];
	const char *when; /* the time and sequence part of name: the sort key */
	uint64_t size;
};

/*
 * "cpu-20261125T215000Z-000012.pb.gz" for kind 0, window 12 of that time;
 * shard 0 of 2 adds ".s1of2" before ".pb.gz" and names its metrics file
 * "metrics-s1of2.prom" (lowprof/spoolname.h).
 */
static void spool_name(char *out, uint32_t kind, uint64_t seq, int64_t start_real_ns,
		       uint32_t shard, uint32_t nshards)
{
	time_t t = (time_t)(start_real_ns > 0 ? start_real_ns / 1000000000 : 0);
	char when[32] = "19700101T000000Z", sh[16] = "";
	struct tm tm;

	if (nshards > 1)
		snprintf(sh, sizeof(sh), LP_SPOOL_SHARD_FMT, shard + 1, nshards);
	if (kind == KIND_METRICS) {
		if (nshards > 1)
			snprintf(out, SPOOL_NAME_MAX, "metrics-%s.prom", sh + 1);
		else
			snprintf(out, SPOOL_NAME_MAX, "%s", SYMB_SPOOL_METRICS);
		return;
	}
	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(out, SPOOL_NAME_MAX, "%s-%s-%06" PRIu64 "%s.pb.gz", kinds[kind], when, seq, sh);
}

/* The time part of a spool file's name, or NULL when name is not one. */
static const char *spool_when(const char *name)
{
	size_t n = strlen(name);

	if (n < 7 || strcmp(name + n - 6, ".pb.gz"))
		return NULL;
	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		size_t l = strlen(kinds[k]);

		if (!strncmp(name, kinds[k], l) && name[l] == '-')
			return name + l + 1;
	}
	return NULL;
}

static int copy_out(int memfd, int fd, uint64_t len)
{
	char buf[65536];

	for (uint64_t off = 0; off < len;) {
		size_t want = len - off < sizeof(buf) ? (size_t)(len - off) : sizeof(buf);
		ssize_t r = pread(memfd, buf, want, (off_t)off);

		if (r <= 0)
			return r < 0 ? -errno : -EIO;
		if (lp_write_all(fd, buf, (size_t)r))
			return -errno;
		off += (uint64_t)r;
	}
	return fdatasync(fd) ? -errno : 0;
}

/* The shard whose files a writer makes (0 of 1: the whole run). */
struct spool_shard {
	uint32_t shard, nshards;
};

/* Writes the window m describes to its name, through a temporary one. */
static int write_window(int dirfd, int memfd, const struct spool_msg *m,
			const struct spool_shard *sh, char *name)
{
	char tmp[SPOOL_NAME_MAX + 8];
	struct stat st;
	int fd, err;

	if (fstat(memfd, &st) || (uint64_t)st.st_size < m->len || m->len > SYMB_SPOOL_MAX_FILE)
		return -EINVAL;
	spool_name(name, m->kind, m->seq, m->start_real_ns, sh->shard, sh->nshards);
	snprintf(tmp, sizeof(tmp), ".tmp-%s", name);
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	err = copy_out(memfd, fd, m->len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && renameat(dirfd, tmp, dirfd, name))
		err = -errno;
	if (err)
		unlinkat(dirfd, tmp, 0);
	return err;
}

static int cmp_when(const void *a, const void *b)
{
	const struct spool_file *x = a, *y = b;
	int c = strcmp(x->when, y->when);

	return c ? c : strcmp(x->name, y->name);
}

/*
 * The spool's files (ours by name, regular), oldest first; *n of them and
 * their bytes in *total. Temporary files a killed writer left are removed.
 */
static struct spool_file *scan(int dirfd, size_t *n, uint64_t *total, bool clean_tmp)
{
	struct spool_file *v = calloc(SPOOL_MAX_SCAN, sizeof(*v));
	int dfd = dup(dirfd);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	*n = 0;
	*total = 0;
	if (!v || !d) {
		if (dfd >= 0 && !d)
			close(dfd);
		free(v);
		return NULL;
	}
	rewinddir(d);
	while ((e = readdir(d)) && *n < SPOOL_MAX_SCAN) {
		struct stat st;

		if (clean_tmp && !strncmp(e->d_name, ".tmp-", 5)) {
			unlinkat(dirfd, e->d_name, 0);
			continue;
		}
		if (!spool_when(e->d_name) || strlen(e->d_name) >= SPOOL_NAME_MAX ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		memcpy(v[*n].name, e->d_name, strlen(e->d_name) + 1);
		v[*n].size = (uint64_t)st.st_size;
		*total += (uint64_t)st.st_size;
		(*n)++;
	}
	closedir(d);
	for (size_t i = 0; i < *n; i++)
		v[i].when = spool_when(v[i].name);
	qsort(v, *n, sizeof(*v), cmp_when);
	return v;
}

/*
 * Removes the oldest files while the spool holds more than max; never keep.
 * The budget is the spool's: every shard's writer counts every window file
 * and removes the oldest overall, whoever wrote it. One another writer
 * removed first is gone from the total, not counted here.
 */
static void trim(int dirfd, uint64_t max, const char *keep, struct spool_ack *a)
{
	uint64_t total;
	size_t n;
	struct spool_file *v = scan(dirfd, &n, &total, false);

	for (size_t i = 0; v && i < n && total > max; i++) {
		if (!strcmp(v[i].name, keep))
			continue;
		if (unlinkat(dirfd, v[i].name, 0)) {
			if (errno == ENOENT)
				total -= v[i].size;
			continue;
		}
		total -= v[i].size;
		a->removed++;
		a->removed_bytes += v[i].size;
	}
	free(v);
}

/* Oldest windows removed for one window on a full disk, at most */
#define SPOOL_FULL_TRIES 8

/*
 * The disk (or the user's quota) is full before the budget is: the oldest
 * window gives way, as it would to the budget. Whether one was removed.
 */
static bool make_room(int dirfd, struct spool_ack *a)
{
	uint64_t total;
	size_t n;
	struct spool_file *v = scan(dirfd, &n, &total, false);
	bool done = false;

	for (size_t i = 0; v && i < n && !done; i++) {
		if (unlinkat(dirfd, v[i].name, 0))
			continue;
		a->removed++;
		a->removed_bytes += v[i].size;
		a->removed_full++;
		done = true;
	}
	free(v);
	return done;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every descriptor above stderr but keep[0..2]: the writer holds no other. */
static void close_others(int keep0, int keep1, int keep2)
{
	int keep[3] = {keep0, keep1, keep2};
	unsigned int from = 3;

	qsort(keep, 3, sizeof(keep[0]), cmp_int);
	for (int i = 0; i < 3; i++) {
		if ((unsigned int)keep[i] > from)
			close_range(from, (unsigned int)keep[i] - 1, 0);
		from = (unsigned int)keep[i] + 1;
	}
	close_range(from, ~0u, 0);
}

static void writer_main(int sock, int memfd, int dirfd, uint64_t max, pid_t parent, bool sandbox,
			const struct spool_shard *sh)
{
	struct spool_hello hello = {0};
	struct spool_file *v;
	struct spool_msg m;
	uint64_t total;
	size_t n;

	/* the symbolizer writes the last window on SIGINT/SIGTERM: outlive them */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	/* the ring, the cache, the file channel: none of the writer's business */
	close_others(sock, memfd, dirfd);
	if (sandbox && symb_sandbox_enter_spool(dirfd))
		_exit(1);
	v = scan(dirfd, &n, &total, true);
	for (size_t i = 0; v && i < n; i++) {
		const char *dash = strrchr(v[i].when, '-');
		uint64_t seq = dash ? strtoull(dash + 1, NULL, 10) : 0;

		if (seq + 1 > hello.next_seq && seq < UINT64_MAX)
			hello.next_seq = seq + 1;
	}
	free(v);
	/* the first answer: the sequence number after the spool's highest */
	if (send(sock, &hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello))
		_exit(1);
	for (;;) {
		struct spool_ack a = {0};
		char name[SPOOL_NAME_MAX];
		ssize_t r = recv(sock, &m, sizeof(m), 0);

		if (r == 0)
			_exit(0);
		if (r != sizeof(m) || m.magic != SPOOL_MAGIC ||
		    (m.kind >= sizeof(kinds) / sizeof(kinds[0]) && m.kind != KIND_METRICS))
			_exit(1);
		a.err = write_window(dirfd, memfd, &m, sh, name);
		for (int i = 0; i < SPOOL_FULL_TRIES && m.kind != KIND_METRICS &&
				(a.err == -ENOSPC || a.err == -EDQUOT) && make_room(dirfd, &a);
		     i++)
			a.err = write_window(dirfd, memfd, &m, sh, name);
		if (!a.err && m.kind != KIND_METRICS)
			trim(dirfd, max, name, &a);
		if (send(sock, &a, sizeof(a), MSG_NOSIGNAL) != sizeof(a))
			_exit(1);
	}
}

/* ---- the symbolizer's side ------------------------------------------------ */

static int open_dir(const char *dir)
{
	int fd;

	if (mkdir(dir, 0700) && errno != EEXIST) {
		lp_err("spool %s: %m", dir);
		return -errno;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int err = -errno;

		lp_err("spool %s: %s%s", dir, strerror(-err),
		       err == -ELOOP || err == -ENOTDIR ? " (not a directory, or a symlink)" : "");
		return err;
	}
	if (faccessat(fd, ".", W_OK | X_OK, AT_EACCESS)) {
		int err = -errno;

		lp_err("spool %s: this user cannot write there: %s", dir, strerror(-err));
		close(fd);
		return err;
	}
	return fd;
}

/*
 * One writer of a spool at a time, as lowprof run's own lock (flock on the
 * directory, cli/record.c): two would number their windows alike and
 * remove each other's for the budget. Exclusive, but shared among the
 * shards of a run (they write one spool by design). Through lock_fd, an
 * inherited descriptor of dir (lowprof run's, which holds it already for
 * all its symbolizers), or else through dirfd, which the writer keeps for
 * its life: the lock goes when the writer does. A holder that is just
 * ending (a restarted symbolizer's predecessor) gets SPOOL_LOCK_WAIT_MS.
 * 0, or a negative errno (said why).
 */
#define SPOOL_LOCK_WAIT_MS 1000

static int lock_spool(const char *dir, int dirfd, int lock_fd, bool shard)
{
	int fd = lock_fd >= 0 ? lock_fd : dirfd;
	/* lowprof run's descriptor holds its exclusive lock: never made shared */
	int how = (shard && lock_fd < 0 ? LOCK_SH : LOCK_EX) | LOCK_NB;
	struct stat a, b;

	if (lock_fd >= 0 && (fstat(lock_fd, &a) || fstat(dirfd, &b) || a.st_dev != b.st_dev ||
			     a.st_ino != b.st_ino)) {
		lp_err("spool %s: --spool-lock-fd %d is not this directory", dir, lock_fd);
		return -EINVAL;
	}
	for (int waited = 0; flock(fd, how); waited += 50) {
		int err = -errno;

		if (err != -EWOULDBLOCK) {
			lp_err("spool %s: locking it: %s", dir, strerror(-err));
			return err;
		}
		if (waited >= SPOOL_LOCK_WAIT_MS) {
			lp_err("spool %s: another lowprof run or lowprof-symbolizer is writing "
			       "to it (it holds the lock on the directory); give each its own "
			       "spool",
			       dir);
			return -EBUSY;
		}
		usleep(50 * 1000);
	}
	return 0;
}

int symb_spool__open(const char *dir, uint64_t max_bytes, bool sandbox, uint32_t shard,
		     uint32_t nshards, int lock_fd, struct symb_spool **out)
{
	const struct spool_shard sh = {nshards > 1 ? shard : 0, nshards > 1 ? nshards : 1};
	struct symb_spool *sp = calloc(1, sizeof(*sp));
	int sv[2] = {-1, -1}, dirfd = -1, err = 0;
	struct spool_hello hello;
	pid_t self = getpid();

	*out = NULL;
	if (!sp)
		return -ENOMEM;
	sp->sock = sp->memfd = -1;
	dirfd = open_dir(dir);
	if (dirfd < 0) {
		free(sp);
		return dirfd;
	}
	err = lock_spool(dir, dirfd, lock_fd, sh.nshards > 1);
	if (err)
		goto fail;
	sp->memfd = memfd_create("lowprof-window", MFD_CLOEXEC);
	if (sp->memfd < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		lp_err("spool: %s", strerror(-err));
		goto fail;
	}
	sp->writer = fork();
	if (sp->writer < 0) {
		err = -errno;
		lp_err("spool: starting its writer: %s", strerror(-err));
		goto fail;
	}
	if (sp->writer == 0) {
		close(sv[0]);
		writer_main(sv[1], sp->memfd, dirfd,
			    max_bytes ? max_bytes : SYMB_SPOOL_DEFAULT_BYTES, self, sandbox, &sh);
	}
	close(sv[1]);
	close(dirfd);
	sp->sock = sv[0];
	if (recv(sp->sock, &hello, sizeof(hello), 0) != sizeof(hello)) {
		lp_err("spool %s: its writer did not start", dir);
		close(sp->sock);
		close(sp->memfd);
		free(sp);
		return -EIO;
	}
	sp->next_seq = hello.next_seq;
	sp->shard = sh.shard;
	sp->nshards = sh.nshards;
	if (sh.nshards > 1)
		snprintf(sp->label, sizeof(sp->label), "shard=\"%uof%u\"", sh.shard + 1,
			 sh.nshards);
	*out = sp;
	return 0;
fail:
	if (sv[0] >= 0) {
		close(sv[0]);
		close(sv[1]);
	}
	if (sp->memfd >= 0)
		close(sp->memfd);
	close(dirfd);
	free(sp);
	return err;
}

uint64_t symb_spool__next_seq(const struct symb_spool *sp)
{
	return sp->next_seq;
}

void symb_spool__first_window(struct symb_spool *sp, uint64_t window_ns, uint64_t now_mono,
			      int64_t now_real, struct symb_spool_window *w)
{
	uint64_t into;

	w->seq = sp->next_seq;
	w->start_mono = now_mono;
	w->start_real = now_real;
	if (sp->nshards <= 1 || !window_ns || now_real <= 0)
		return;
	/* the window of the real clock's time now: the same for every shard */
	into = (uint64_t)now_real % window_ns;
	if (into > now_mono)
		into = 0; /* booted within a window: not aligned (never with W < uptime) */
	w->seq = (uint64_t)now_real / window_ns;
	w->start_real = now_real - (int64_t)into;
	w->start_mono = now_mono - into;
	sp->next_seq = w->seq;
}

int symb_spool__fd(const struct symb_spool *sp)
{
	return sp->memfd;
}

/* sendmsg/recvmsg: the calls the symbolizer's sandbox allows for sockets */
static int xfer(int sock, void *buf, size_t len, bool out)
{
	struct iovec iov = {buf, len};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t r;

	do
		r = out ? sendmsg(sock, &mh, MSG_NOSIGNAL) : recvmsg(sock, &mh, 0);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return -errno;
	return (size_t)r == len ? 0 : -EPIPE;
}

/*
 * Hands the memory file's bytes to the writer as m (its kind and window
 * set; at most max bytes) and waits for its answer (*a); the memory file
 * is emptied for the next, whatever became of this one. 0 or -errno.
 */
static int hand_over(struct symb_spool *sp, struct spool_msg *m, uint64_t max, struct spool_ack *a)
{
	struct stat st;
	int err;

	err = fstat(sp->memfd, &st) ? -errno : 0;
	m->len = err ? 0 : (uint64_t)st.st_size;
	if (!err && m->len > max)
		err = -EFBIG;
	if (!err)
		err = xfer(sp->sock, m, sizeof(*m), true);
	if (!err)
		err = xfer(sp->sock, a, sizeof(*a), false);
	if (err && !sp->writer_gone && m->len <= max) {
		sp->writer_gone = true;
		lp_err("spool: the writer process is gone (%s): no window can be written any "
		       "more",
		       strerror(-err));
	}
	if (!err)
		err = a->err;
	if (ftruncate(sp->memfd, 0) || lseek(sp->memfd, 0, SEEK_SET) < 0)
		err = err ? err : -errno;
	return err;
}

int symb_spool__put(struct symb_spool *sp, const char *kind, uint64_t seq, int64_t start_real_ns)
{
	struct spool_msg m = {.magic = SPOOL_MAGIC, .seq = seq, .start_real_ns = start_real_ns};
	struct spool_ack a;
	int err;

	m.kind = strcmp(kind, "offcpu") == 0;
	err = hand_over(sp, &m, SYMB_SPOOL_MAX_FILE, &a);
	if (err) {
		sp->n.failed++;
		/* a full disk fails every window for hours: one line per cause */
		if (!sp->writer_gone && err != sp->put_err)
			lp_err("spool: %s window %" PRIu64 " not written: %s (said once until "
			       "windows are written again)",
			       kind, seq, strerror(-err));
		sp->put_err = err;
		return err;
	}
	if (a.removed_full && !sp->n.removed_full)
		lp_warn("spool: the disk is full before the spool's budget: the oldest windows "
			"give way to new ones (said once; counted in the summary)");
	if (sp->put_err)
		lp_info("spool: windows are written again, from %s window %" PRIu64, kind, seq);
	sp->put_err = 0;
	sp->n.windows++;
	sp->n.bytes += m.len;
	sp->n.removed += a.removed;
	sp->n.removed_bytes += a.removed_bytes;
	sp->n.removed_full += a.removed_full;
	if (a.removed)
		lp_debug("spool: %" PRIu64 " oldest files removed (%" PRIu64
			 " bytes) for the budget",
			 a.removed, a.removed_bytes);
	return 0;
}

int symb_spool__put_metrics(struct symb_spool *sp)
{
	struct spool_msg m = {.magic = SPOOL_MAGIC, .kind = KIND_METRICS};
	struct spool_ack a;
	int err = hand_over(sp, &m, SYMB_SPOOL_METRICS_MAX, &a);

	if (err)
		lp_debug("spool: the metrics file not written: %s", strerror(-err));
	return err;
}

bool symb_spool__writer_gone(const struct symb_spool *sp)
{
	return sp->writer_gone;
}

const char *symb_spool__shard_label(const struct symb_spool *sp)
{
	return sp->label;
}

const struct symb_spool_stats *symb_spool__stats(const struct symb_spool *sp)
{
	return &sp->n;
}

void symb_spool__close(struct symb_spool *sp)
{
	if (!sp)
		return;
	/* the writer sees the end and exits (its parent's death would kill it too) */
	close(sp->sock);
	close(sp->memfd);
	free(sp);
}
