// SPDX-License-Identifier: MIT
/*
 * The collector's table of processes it has described to the symbolizer:
 * pid -> executable address ranges, so that a sample whose instruction
 * pointer falls outside every known range (a dlopen, a JIT) triggers a
 * re-read of /proc/PID/maps, rate-limited per process.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "collector_int.h"
#include "lowprof/log.h"
#include "procfs.h"

#define PROCS_MIN_CAP	 256
#define MAPS_MAX_BYTES	 (64u << 20)
#define MAPS_CHUNK_BYTES (512u << 10)

static uint32_t hash_pid(uint32_t pid)
{
	return pid * 2654435761u;
}

static struct coll_proc *procs_slot(struct coll_procs *t, uint32_t pid)
{
	uint32_t mask = t->cap - 1;

	for (uint32_t i = hash_pid(pid) & mask;; i = (i + 1) & mask) {
		struct coll_proc *p = &t->slots[i];

		if (!p->used || p->pid == pid)
			return p;
	}
}

static int procs_grow(struct coll_procs *t)
{
	struct coll_procs n = {.cap = t->cap ? t->cap * 2 : PROCS_MIN_CAP};

	n.slots = calloc(n.cap, sizeof(*n.slots));
	if (!n.slots)
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++) {
		if (t->slots[i].used) {
			*procs_slot(&n, t->slots[i].pid) = t->slots[i];
			n.count++;
		}
	}
	free(t->slots);
	*t = n;
	return 0;
}

struct coll_proc *coll_procs_find(struct coll_procs *t, uint32_t pid)
{
	struct coll_proc *p;

	if (!t->cap)
		return NULL;
	p = procs_slot(t, pid);
	return p->used ? p : NULL;
}

struct coll_proc *coll_procs_add(struct coll_procs *t, uint32_t pid)
{
	struct coll_proc *p;

	/* keep the load factor under 1/2 so probes stay short */
	if ((t->count + 1) * 2 > t->cap && procs_grow(t))
		return NULL;
	p = procs_slot(t, pid);
	if (!p->used) {
		memset(p, 0, sizeof(*p));
		p->used = true;
		p->pid = pid;
		t->count++;
	}
	return p;
}

/* Backward-shift deletion keeps linear probing correct without tombstones. */
void coll_procs_del(struct coll_procs *t, uint32_t pid)
{
	uint32_t mask = t->cap - 1, i, j;
	struct coll_proc *p = coll_procs_find(t, pid);

	if (!p)
		return;
	free(p->ranges);
	coll_perfmap_forget(p);
	i = (uint32_t)(p - t->slots);
	t->slots[i].used = false;
	t->count--;
	for (j = (i + 1) & mask; t->slots[j].used; j = (j + 1) & mask) {
		uint32_t home = hash_pid(t->slots[j].pid) & mask;

		/* move j back to i if i lies cyclically in [home, j) */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			t->slots[j].used = false;
			i = j;
		}
	}
}

void coll_procs_free(struct coll_procs *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].used) {
			free(t->slots[i].ranges);
			coll_perfmap_forget(&t->slots[i]);
		}
	free(t->slots);
	memset(t, 0, sizeof(*t));
}

bool coll_proc_covers(const struct coll_proc *p, uint64_t ip)
{
	uint32_t lo = 0, hi = p->nranges;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (ip < p->ranges[mid].start)
			hi = mid;
		else if (ip >= p->ranges[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}

/* Ranges kept per process at most: the maps read's bound (SYMB side keeps its own) */
#define COLL_MAX_RANGES 65536

int coll_proc_add_range(struct coll_proc *p, uint64_t start, uint64_t end)
{
	uint32_t lo = 0, hi, n;
	struct coll_range *r;

	if (end <= start)
		return 0;
	/* first range that ends at or after start: it and those after may merge */
	for (hi = p->nranges; lo < hi;) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (p->ranges[mid].end < start)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (hi = lo; hi < p->nranges && p->ranges[hi].start <= end; hi++) {
		start = start < p->ranges[hi].start ? start : p->ranges[hi].start;
		end = end > p->ranges[hi].end ? end : p->ranges[hi].end;
	}
	/* [lo, hi) become one range */
	n = p->nranges - (hi - lo) + 1;
	if (hi == lo) {
		if (p->nranges >= COLL_MAX_RANGES)
			return -ENOSPC;
		r = realloc(p->ranges, (size_t)n * sizeof(*r));
		if (!r)
			return -ENOMEM;
		p->ranges = r;
		memmove(&r[lo + 1], &r[lo], (size_t)(p->nranges - lo) * sizeof(*r));
	} else {
		memmove(&p->ranges[lo + 1], &p->ranges[hi],
			(size_t)(p->nranges - hi) * sizeof(*p->ranges));
	}
	p->ranges[lo] = (struct coll_range){start, end};
	p->nranges = n;
	return 0;
}

uint32_t coll_prot_bits(uint32_t prot, uint32_t flags)
{
	return (prot & PROT_READ ? LPS_PROT_R : 0) | (prot & PROT_WRITE ? LPS_PROT_W : 0) |
	       (prot & PROT_EXEC ? LPS_PROT_X : 0) | (flags & MAP_PRIVATE ? LPS_PROT_P : 0);
}

/*
 * Build-ids of mapped files, without parsing ELF. The collector never reads
 * a file a profiled process controls; instead it asks the kernel, with the
 * PROCMAP_QUERY ioctl on the /proc/PID/maps it has just read: the kernel
 * parses the file's GNU build-id note (from the page cache, the file it
 * mapped) and copies out at most LPS_MAX_BUILD_ID bytes. One ioctl per
 * executable file mapping per maps read, at most: a file mapped several
 * times is asked about once. The answer is used only if it still describes
 * the mapping that was read (same range, inode and device); the maps may
 * have changed in between. Kernels before 6.11 lack the ioctl: then
 * build-ids stay empty for the whole run. Files on file systems without a
 * block device are not asked about (may_ask_build_id).
 */
static bool procmap_query_missing;

void coll_procs_no_build_ids(void)
{
	procmap_query_missing = true;
}

/* Open-addressing table (dev, inode) -> index of the mapping that holds the
 * file's answer, sized for count entries at load factor 1/2. */
struct file_ids {
	uint32_t *slot; /* mapping index + 1; 0 = empty */
	uint32_t mask;
};

static int file_ids_init(struct file_ids *t, uint32_t count)
{
	uint32_t cap = 16;

	while (cap < 2 * count)
		cap *= 2;
	t->slot = calloc(cap, sizeof(*t->slot));
	t->mask = cap - 1;
	return t->slot ? 0 : -ENOMEM;
}

static bool same_file(const struct lps_mapping *a, const struct lps_mapping *b)
{
	return a->inode == b->inode && a->dev_major == b->dev_major && a->dev_minor == b->dev_minor;
}

/* The slot for maps[i]'s file: empty, or holding an earlier mapping of it. */
static uint32_t *file_ids_slot(struct file_ids *t, const struct lps_mapping *maps, uint32_t i)
{
	const struct lps_mapping *m = &maps[i];
	uint64_t h = (m->inode ^ ((uint64_t)m->dev_major << 40) ^ ((uint64_t)m->dev_minor << 20)) *
		     0x9e3779b97f4a7c15ull;

	for (uint32_t s = (uint32_t)(h >> 32) & t->mask;; s = (s + 1) & t->mask)
		if (!t->slot[s] || same_file(&maps[t->slot[s] - 1], m))
			return &t->slot[s];
}

static bool has_file(const struct lps_mapping *m)
{
	return m->inode != 0 && m->path.len && m->path.ptr[0] != '[';
}

/*
 * Whether the kernel may be asked for m's build-id here, in the drain
 * loop: it reads the note from the file, through its file system, and a
 * read on NFS, CIFS, FUSE or 9p whose server hangs waits as long, deaf to
 * anything but SIGKILL (a whole-host run once stalled 12 s, 23,906 samples
 * lost). Those file systems have anonymous device numbers (major 0), as do
 * overlayfs, btrfs and tmpfs, which cannot be told apart from them without
 * touching the file: only files of block devices are asked about. The
 * others' build-ids come from the symbolizer, which reads them from the
 * file it opened (or the collector's broker, whose workers may hang) and
 * notes them for the capture (note_buildid), as on kernels without
 * PROCMAP_QUERY.
 */
static bool may_ask_build_id(const struct lps_mapping *m)
{
	return m->dev_major != 0;
}

/*
 * Fills maps[i].build_id (pointing into ids, LPS_MAX_BUILD_ID bytes per
 * mapping) for the file mappings of maps[0..count), through maps_fd. Best
 * effort: a build-id that cannot be learned stays empty.
 */
static int query_build_ids(int maps_fd, struct lps_mapping *maps, uint32_t count, uint8_t *ids)
{
	struct file_ids t;
	int err;

	if (procmap_query_missing)
		return 0;
	err = file_ids_init(&t, count);
	if (err)
		return err;
	for (uint32_t i = 0; i < count; i++) {
		uint8_t *id = ids + (size_t)i * LPS_MAX_BUILD_ID;
		uint32_t *slot;
		int n;

		if (!has_file(&maps[i]) || !may_ask_build_id(&maps[i]))
			continue;
		slot = file_ids_slot(&t, maps, i);
		if (*slot) {
			maps[i].build_id = maps[*slot - 1].build_id;
			continue;
		}
		n = coll_maps_build_id(maps_fd, &maps[i], id);
		if (n == -EOPNOTSUPP) {
			lp_info("maps: no PROCMAP_QUERY in this kernel (Linux < 6.11): mappings "
				"are sent without build-ids");
			procmap_query_missing = true;
			break;
		}
		if (n == -ESRCH)
			break; /* the process's memory is gone: every query fails */
		if (n < 0)
			continue; /* this mapping changed or went: a later one may answer */
		maps[i].build_id = (struct lps_str){(const char *)id, (uint32_t)n};
		*slot = i + 1;
	}
	free(t.slot);
	return 0;
}

/*
 * Bound on a mapping's encoded size: its path and build-id, plus 64 bytes for
 * the msgpack headers and fixed fields (57 at most).
 */
static size_t mapping_bytes(const struct lps_mapping *m)
{
	return (size_t)m->path.len + m->build_id.len + 64;
}

/*
 * The process's executable (LPS_PROC), before its mappings: the target of
 * /proc/PID/exe, empty when the kernel gives none (gone, a kernel thread).
 */
static int emit_proc(uint32_t pid, const char *dir, uint64_t now_ns, struct lps_enc *enc,
		     int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	char path[96], exe[LPS_MAX_PATH];
	struct lps_proc r = {.time_ns = now_ns, .pid = pid, .exe = {exe, 0}};
	ssize_t n;

	snprintf(path, sizeof(path), "%s/exe", dir);
	n = readlink(path, exe, sizeof(exe));
	if (n > 0 && n < (ssize_t)sizeof(exe))
		r.exe.len = (uint32_t)n;
	lps_enc_reset(enc);
	lps_enc_proc(enc, &r);
	return emit(ctx, enc);
}

/*
 * Reads /proc/PID/maps (through thread tid when it is not the leader:
 * a leader that ended its own thread early leaves an empty maps file, its
 * threads a full one) and emits its executable mappings as one or more
 * LPS_MAPS records (the first replaces, the others append; each stays well
 * under LPS_MAX_RECORD), through emit(ctx, enc), with the build-ids the
 * kernel knows (query_build_ids). p's ranges are replaced only when every
 * record was emitted, so a dropped record is sent again.
 * Returns 0 or a negative errno.
 */
/*
 * A thread of pid other than its leader, 0 if none: where to read the maps
 * of a process whose leader ended its own thread.
 */
static uint32_t other_thread(uint32_t pid)
{
	char path[64];
	struct dirent *d;
	uint32_t tid = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%u/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!tid && (d = readdir(dir))) {
		char *e;
		unsigned long v = strtoul(d->d_name, &e, 10);

		if (d->d_name[0] >= '1' && d->d_name[0] <= '9' && !*e && v != pid &&
		    v <= UINT32_MAX)
			tid = (uint32_t)v;
	}
	closedir(dir);
	return tid;
}

int coll_read_maps(struct coll_proc *p, uint32_t tid, uint64_t now_ns, struct lps_enc *enc,
		   int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	struct coll_range *ranges = NULL;
	struct lps_mapping *maps = NULL, m;
	const char *cur, *end;
	uint32_t count = 0, i, first;
	uint8_t *ids = NULL;
	char dir[64], path[96], *buf = NULL;
	size_t len;
	int fd, err = 0, r;

	/* rate-limits retries too: a failed read is not retried for a second */
	p->maps_ns = now_ns;
	if (tid && tid != p->pid)
		snprintf(dir, sizeof(dir), "/proc/%u/task/%u", p->pid, tid);
	else
		snprintf(dir, sizeof(dir), "/proc/%u", p->pid);
	snprintf(path, sizeof(path), "%s/maps", dir);
	/* one open: the build-id queries go to the same file as the read */
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = coll_read_fd(fd, MAPS_MAX_BYTES, &buf, &len);
	if (err)
		goto out;
	for (cur = buf, end = buf + len; (r = coll_maps_next(&cur, end, &m)) != 0;)
		if (r == 1 && (m.prot & LPS_PROT_X))
			count++;
	if (!count && (!tid || tid == p->pid) && (tid = other_thread(p->pid)) != 0) {
		/*
		 * the leader's maps are empty once it has ended (its sample may
		 * be older than that): another thread's are not
		 */
		close(fd);
		free(buf);
		return coll_read_maps(p, tid, now_ns, enc, emit, ctx);
	}
	maps = calloc(count ? count : 1, sizeof(*maps));
	ranges = calloc(count ? count : 1, sizeof(*ranges));
	ids = calloc(count ? count : 1, LPS_MAX_BUILD_ID);
	if (!maps || !ranges || !ids) {
		err = -ENOMEM;
		goto out;
	}
	for (cur = buf, i = 0; i < count && (r = coll_maps_next(&cur, end, &m)) != 0;) {
		if (r != 1 || !(m.prot & LPS_PROT_X))
			continue;
		maps[i] = m;
		coll_jitdump_seen(p, m.path.ptr, m.path.len); /* perf's marker mapping */
		ranges[i].start = m.start;
		ranges[i].end = m.end;
		i++;
	}
	count = i;
	err = query_build_ids(fd, maps, count, ids);
	if (err)
		goto out;
	err = emit_proc(p->pid, dir, now_ns, enc, emit, ctx);
	if (err)
		goto out;
	/* chunks by encoded size (mapping_bytes) */
	first = 0;
	do {
		size_t bytes = 64;
		uint32_t n = 0;

		while (first + n < count &&
		       bytes + mapping_bytes(&maps[first + n]) <= MAPS_CHUNK_BYTES)
			bytes += mapping_bytes(&maps[first + n++]);
		if (!n && first < count)
			n = 1; /* one path is at most LPS_MAX_PATH: always fits a record */
		lps_enc_reset(enc);
		lps_enc_maps_begin(enc, now_ns, p->pid, first > 0, n);
		for (uint32_t j = 0; j < n; j++)
			lps_enc_mapping(enc, &maps[first + j]);
		err = emit(ctx, enc);
		if (err)
			goto out;
		first += n;
	} while (first < count);
	free(p->ranges);
	p->ranges = ranges;
	p->nranges = count;
	ranges = NULL;
out:
	close(fd);
	free(ids);
	free(ranges);
	free(maps);
	free(buf);
	return err;
}
