// SPDX-License-Identifier: MIT
/*
 * JIT perf maps: the collector copies a process's /tmp/perf-NSPID.map into
 * the record stream (LPS_PERFMAP) and parses none of it; the symbolizer
 * does (symbolizer/jit/).
 *
 * The file is looked for when the process's mappings are read (and every
 * COLL_PERFMAP_LOOK_NS after, while it has none), in the process's
 * root (its mount namespace, /proc/PID/root) under the pid it sees itself
 * by, and only there: the path does not come from the process. It is used
 * only when it is a regular file owned by the process's effective uid,
 * reached without a symbolic link or a magic link (openat2 RESOLVE_IN_ROOT,
 * O_NOFOLLOW; the same rules as coll_file_open_at). The descriptor is kept
 * open: each drain sends the bytes the file grew by (an fstat per file),
 * in chunks of LPS_MAX_PERFMAP_CHUNK, before the samples are drained, so a
 * sample finds in the stream the symbols that existed when it was taken. A
 * file that shrinks, or is replaced by another at its path (seen at the
 * next maps read), is sent again from offset 0. At most PERFMAP_MAX_BYTES
 * per process are sent; the rest is counted.
 *
 * jitdump files (jit-PID.dump, perf's format, written by node --perf-prof,
 * Java's libperf-jvmti, .NET) go the same way as LPS_JITDUMP records, with
 * the same checks, caps and re-reads: a runtime that writes one maps it
 * executable for perf to find, so the collector learns its path from that
 * mapping (an mmap event, or the maps read: coll_jitdump_seen), a path in
 * the process's root whose last component must be jit-NSPID.dump. It is
 * opened at the next drain; one that cannot be is dropped until it is
 * mapped again.
 *
 * Where: the drain loop must never wait, and a file system served by a
 * daemon can make an open or a read wait for as long as the daemon wants.
 * Any user can mount FUSE over /tmp in a mount namespace of their own, or
 * over a file they own in /tmp with fusermount. So the path is walked one
 * component at a time and no mount is asked anything before its type is
 * found local (coll_open_local_in_root: tmpfs, the disk file systems, and
 * overlay in the collector's user namespace); a perf map or jitdump
 * elsewhere (FUSE, NFS, 9p) is not read, and counted. The mapped files'
 * opens, which can be anywhere, go through the broker's workers instead
 * (files.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector_int.h"
#include "lowprof/log.h"
#include "procfs.h"

#define PERFMAP_MAX_BYTES    (64ull << 20) /* sent per process and file */
#define PERFMAP_MAX_PER_CALL (4u << 20)	   /* sent per process and drain */
#define PERFMAP_STATUS_BYTES (64u << 10)

struct coll_perfmap {
	bool jitdump; /* a jitdump file (LPS_JITDUMP), not a perf map */
	char *path;   /* jitdump: its path in the process's root */
	int fd;	      /* jitdump: -1 until opened */
	dev_t dev;
	ino_t ino;
	uint64_t sent; /* bytes [0, sent) are in the stream */
	bool capped;   /* reached PERFMAP_MAX_BYTES: counted once */
};

static struct coll_perfmap_stats pm_stats, jd_stats;

void coll_perfmap_stats(struct coll_perfmap_stats *st)
{
	*st = pm_stats;
}

void coll_jitdump_stats(struct coll_perfmap_stats *st)
{
	*st = jd_stats;
}

static void file_free(struct coll_perfmap **f)
{
	if (!*f)
		return;
	if ((*f)->fd >= 0)
		close((*f)->fd);
	free((*f)->path);
	free(*f);
	*f = NULL;
}

void coll_perfmap_forget(struct coll_proc *p)
{
	file_free(&p->pm);
	file_free(&p->jd);
}

/* pid's NSpid and effective uid, from /proc/PID/status. */
static int proc_ids(uint32_t pid, uint32_t *nspid, uint32_t *euid)
{
	char path[32], *buf;
	size_t len;
	int err;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	err = coll_read_file(path, PERFMAP_STATUS_BYTES, &buf, &len);
	if (err)
		return err;
	err = coll_status_ids(buf, len, nspid, euid);
	free(buf);
	return err;
}

static bool owned_regular(const struct stat *st, const void *arg)
{
	return S_ISREG(st->st_mode) && st->st_uid == *(const uint32_t *)arg;
}

/*
 * Opens pid's perf map for reading, checked (see the top of the file), into
 * *st too. Returns the descriptor or a negative errno (-ENOENT: none;
 * -ESTALE: not a regular file of the process's euid).
 */
static int perfmap_open(uint32_t pid, struct stat *st)
{
	uint32_t nspid, euid;
	char path[48];
	int err;

	err = proc_ids(pid, &nspid, &euid);
	if (err)
		return err;
	snprintf(path, sizeof(path), "/tmp/perf-%u.map", nspid);
	return coll_open_local_in_root(pid, path, owned_regular, &euid, st);
}

/*
 * Sends bytes [pm->sent, size) of the file, at most PERFMAP_MAX_PER_CALL
 * and up to PERFMAP_MAX_BYTES. pm->sent advances by what was emitted: a
 * chunk that could not be written is read and sent again next time.
 */
static int perfmap_send(struct coll_proc *p, struct coll_perfmap *pm, uint64_t now_ns,
			struct lps_enc *enc, int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	struct coll_perfmap_stats *stats = pm->jitdump ? &jd_stats : &pm_stats;
	static char chunk[LPS_MAX_PERFMAP_CHUNK];
	struct lps_perfmap rec;
	uint64_t size, budget = PERFMAP_MAX_PER_CALL;
	struct stat st;
	int err;

	if (fstat(pm->fd, &st))
		return -errno;
	size = (uint64_t)st.st_size;
	if (size < pm->sent) { /* rewritten shorter: from the start */
		pm->sent = 0;
		pm->capped = false;
	}
	if (size > PERFMAP_MAX_BYTES) {
		if (!pm->capped && pm->sent == PERFMAP_MAX_BYTES) {
			pm->capped = true;
			stats->capped_files++;
		}
		size = PERFMAP_MAX_BYTES;
	}
	while (pm->sent < size && budget) {
		size_t want = size - pm->sent;
		ssize_t n;

		if (want > sizeof(chunk))
			want = sizeof(chunk);
		n = pread(pm->fd, chunk, want, (off_t)pm->sent);
		if (n < 0)
			return errno == EINTR ? 0 : -errno;
		if (n == 0)
			break; /* truncated since the fstat: the next call starts over */
		lps_enc_reset(enc);
		rec = (struct lps_perfmap){.time_ns = now_ns,
					   .pid = p->pid,
					   .offset = pm->sent,
					   .data = {chunk, (uint32_t)n}};
		if (pm->jitdump)
			lps_enc_jitdump(enc, &rec);
		else
			lps_enc_perfmap(enc, &rec);
		err = emit(ctx, enc);
		if (err)
			return err;
		pm->sent += (uint64_t)n;
		stats->bytes += (uint64_t)n;
		stats->records++;
		budget = budget > (uint64_t)n ? budget - (uint64_t)n : 0;
	}
	return 0;
}

int coll_perfmap_refresh(struct coll_proc *p, uint64_t now_ns, struct lps_enc *enc,
			 int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	struct stat st;
	int fd;

	p->pm_looked_ns = now_ns;
	fd = perfmap_open(p->pid, &st);
	if (fd < 0) {
		if (fd == -EREMOTE && !p->pm) {
			pm_stats.remote += !p->pm_remote;
			p->pm_remote = true;
		} else if (fd != -ENOENT && fd != -ESRCH && !p->pm)
			pm_stats.refused++;
		/* gone from its path: what was sent stays valid; keep reading it */
		return p->pm ? perfmap_send(p, p->pm, now_ns, enc, emit, ctx) : 0;
	}
	if (p->pm && p->pm->dev == st.st_dev && p->pm->ino == st.st_ino) {
		close(fd);
	} else {
		struct coll_perfmap *pm = calloc(1, sizeof(*pm));

		if (!pm) {
			close(fd);
			return -ENOMEM;
		}
		file_free(&p->pm);
		*pm = (struct coll_perfmap){.fd = fd, .dev = st.st_dev, .ino = st.st_ino};
		p->pm = pm;
		pm_stats.files++;
	}
	return perfmap_send(p, p->pm, now_ns, enc, emit, ctx);
}

/* Whether the path's last component is jit-N.dump, N decimal: N in *n. */
static bool jitdump_name(const char *path, size_t len, uint32_t *n)
{
	const char *base = path + len;
	uint64_t v = 0;
	size_t digits = 0;

	while (base > path && base[-1] != '/')
		base--;
	len -= (size_t)(base - path);
	if (len < 10 || memcmp(base, "jit-", 4) || memcmp(base + len - 5, ".dump", 5))
		return false;
	for (const char *d = base + 4; d < base + len - 5; d++, digits++) {
		if (*d < '0' || *d > '9' || digits == 10)
			return false;
		v = v * 10 + (uint64_t)(*d - '0');
	}
	if (!digits || v > UINT32_MAX)
		return false;
	*n = (uint32_t)v;
	return true;
}

void coll_jitdump_seen(struct coll_proc *p, const char *path, size_t len)
{
	struct coll_perfmap *jd;
	uint32_t n;

	if (!len || len >= PATH_MAX || memchr(path, '\0', len) || !jitdump_name(path, len, &n))
		return;
	if (p->jd && strlen(p->jd->path) == len && !memcmp(p->jd->path, path, len))
		return; /* mapped again: the file is the one it has */
	jd = calloc(1, sizeof(*jd));
	if (!jd || !(jd->path = strndup(path, len))) {
		free(jd);
		return;
	}
	jd->jitdump = true;
	jd->fd = -1;
	file_free(&p->jd);
	p->jd = jd;
}

/*
 * Opens p's jitdump at its path, checked as a perf map is, when the name's
 * pid is the one the process sees itself by. 0, or a negative errno (then
 * the caller drops it).
 */
static int jitdump_open(struct coll_proc *p)
{
	uint32_t nspid, euid, n;
	struct stat st;
	int err, fd;

	err = proc_ids(p->pid, &nspid, &euid);
	if (err)
		return err;
	if (!jitdump_name(p->jd->path, strlen(p->jd->path), &n) || n != nspid)
		return -ESTALE;
	fd = coll_open_local_in_root(p->pid, p->jd->path, owned_regular, &euid, &st);
	if (fd < 0)
		return fd;
	p->jd->fd = fd;
	p->jd->dev = st.st_dev;
	p->jd->ino = st.st_ino;
	jd_stats.files++;
	return 0;
}

static int jitdump_poll(struct coll_proc *p, uint64_t now_ns, struct lps_enc *enc,
			int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	if (p->jd->fd < 0) {
		int err = jitdump_open(p);

		if (err) {
			if (err == -EREMOTE) {
				jd_stats.remote += !p->jd_remote;
				p->jd_remote = true;
			} else if (err != -ENOENT && err != -ESRCH)
				jd_stats.refused++;
			file_free(&p->jd);
			return 0;
		}
	}
	return perfmap_send(p, p->jd, now_ns, enc, emit, ctx);
}

int coll_perfmaps_poll(struct coll_procs *t, uint64_t now_ns, struct lps_enc *enc,
		       int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	int first_err = 0;

	for (uint32_t i = 0; i < t->cap; i++) {
		struct coll_proc *p = &t->slots[i];
		int err;

		if (!p->used)
			continue;
		if (p->jd) {
			err = jitdump_poll(p, now_ns, enc, emit, ctx);
			if (err && !first_err)
				first_err = err;
		}
		if (p->pm)
			err = perfmap_send(p, p->pm, now_ns, enc, emit, ctx);
		else if (p->maps_ns && now_ns - p->pm_looked_ns >= COLL_PERFMAP_LOOK_NS)
			err = coll_perfmap_refresh(p, now_ns, enc, emit, ctx);
		else
			continue;
		if (err && !first_err)
			first_err = err;
	}
	return first_err;
}
