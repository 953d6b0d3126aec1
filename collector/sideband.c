// SPDX-License-Identifier: MIT
/*
 * Side-band events (sideband.h). Reader protocol of each CPU's buffer (the
 * kernel's perf ring): load data_head with acquire; records lie between
 * data_tail and data_head, each starting with its perf_event_header, and
 * may wrap at the end of the data area (copy_out handles that); store the
 * new data_tail with release once they are copied out. The records of all
 * CPUs are copied into one arena first and handed over sorted by time: a
 * process's exec and the mappings that follow it can be on two CPUs.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sideband.h"

/* the sample_id every record ends with: PERF_SAMPLE_TID | PERF_SAMPLE_TIME */
struct sb_id {
	uint32_t pid, tid;
	uint64_t time;
};

/* PERF_RECORD_MMAP2 without PERF_RECORD_MISC_MMAP_BUILD_ID, up to the file name */
struct sb_mmap2 {
	struct perf_event_header h;
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t maj, min;
	uint64_t ino, ino_generation;
	uint32_t prot, flags;
};

struct sb_fork {
	struct perf_event_header h;
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct sb_lost {
	struct perf_event_header h;
	uint64_t id, lost;
};

struct sb_comm {
	struct perf_event_header h;
	uint32_t pid, tid;
};

struct sb_ix {
	uint64_t time;
	uint32_t off, seq;
};

struct coll_sideband {
	int *fds;
	uint8_t **bufs; /* the control page, then the data */
	int n;
	size_t page, data_size;
	uint64_t lost;
	bool no_ksymbol;   /* the kernel refused ksymbol events (before 5.1) */
	uint64_t ksymbols; /* PERF_RECORD_KSYMBOL records read */
	/*
	 * drains that found a buffer all but full: the kernel may have lost
	 * records there that its LOST record tells only at that CPU's next
	 * event (for coll_sideband__ksymbols; not counted as lost)
	 */
	uint64_t near_full;
	int asked;	/* CPUs events were asked for; n may be fewer (went offline) */
	uint8_t *arena; /* the records of one drain, 8-byte aligned each */
	size_t arena_len, arena_cap;
	struct sb_ix *ix;
	size_t nix, cap_ix;
};

static int perf_event_open(struct perf_event_attr *a, int cpu)
{
	return (int)syscall(SYS_perf_event_open, a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

struct coll_sideband *coll_sideband__new(const uint32_t *cpus, int ncpus, uint32_t bytes_per_cpu,
					 int epfd)
{
	struct coll_sideband *sb = calloc(1, sizeof(*sb));
	int err;

	if (!sb)
		return NULL;
	sb->page = (size_t)sysconf(_SC_PAGESIZE);
	sb->data_size = bytes_per_cpu;
	if (ncpus <= 0 || sb->data_size < sb->page || (sb->data_size & (sb->data_size - 1))) {
		err = EINVAL;
		goto err_out;
	}
	sb->asked = ncpus;
	sb->fds = calloc((size_t)ncpus, sizeof(*sb->fds));
	sb->bufs = calloc((size_t)ncpus, sizeof(*sb->bufs));
	if (!sb->fds || !sb->bufs) {
		err = ENOMEM;
		goto err_out;
	}
	for (int i = 0; i < ncpus; i++) {
		struct perf_event_attr a = {
			.type = PERF_TYPE_SOFTWARE,
			.size = sizeof(a),
			.config = PERF_COUNT_SW_DUMMY,
			.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME,
			.mmap = 1,
			.mmap2 = 1,
			.comm = 1,
			.comm_exec = 1,
			.task = 1,
			.ksymbol = !sb->no_ksymbol,
			.sample_id_all = 1,
			.use_clockid = 1,
			.clockid = CLOCK_MONOTONIC,
			.watermark = 1,
			.wakeup_watermark = (uint32_t)(sb->data_size / 2),
		};
		int fd = perf_event_open(&a, (int)cpus[i]);
		void *m;

		if (fd < 0 && errno == EINVAL && !sb->no_ksymbol && !sb->n) {
			sb->no_ksymbol = true; /* the other events matter more: without it */
			i--;
			continue;
		}
		if (fd < 0) {
			if (errno == ENODEV) /* went offline since it was listed */
				continue;
			err = errno;
			goto err_out;
		}
		m = mmap(NULL, sb->page + sb->data_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			err = errno;
			close(fd);
			goto err_out;
		}
		sb->fds[sb->n] = fd;
		sb->bufs[sb->n++] = m;
		if (epfd >= 0) {
			struct epoll_event ev = {.events = EPOLLIN | EPOLLET};

			/* without it the drain interval alone bounds the wait */
			(void)epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
		}
	}
	return sb;
err_out:
	coll_sideband__free(sb);
	errno = err;
	return NULL;
}

/* Copies len bytes at ring position pos out of a data area that may wrap. */
static void copy_out(void *dst, const uint8_t *data, size_t size, uint64_t pos, size_t len)
{
	size_t at = (size_t)(pos & (size - 1)), first = size - at < len ? size - at : len;

	memcpy(dst, data + at, first);
	memcpy((uint8_t *)dst + first, data, len - first);
}

static bool wanted(const struct perf_event_header *h)
{
	return h->type == PERF_RECORD_MMAP2 || h->type == PERF_RECORD_FORK ||
	       (h->type == PERF_RECORD_COMM && (h->misc & PERF_RECORD_MISC_COMM_EXEC));
}

/* Room for one more record of need bytes: 0 or -ENOMEM. */
static int reserve(struct coll_sideband *sb, size_t need)
{
	if (sb->arena_len + need > sb->arena_cap) {
		size_t ncap = sb->arena_cap ? sb->arena_cap * 2 : 64u << 10;
		uint8_t *a;

		while (ncap < sb->arena_len + need)
			ncap *= 2;
		if (ncap > UINT32_MAX || !(a = realloc(sb->arena, ncap)))
			return -ENOMEM;
		sb->arena = a;
		sb->arena_cap = ncap;
	}
	if (sb->nix == sb->cap_ix) {
		size_t ncap = sb->cap_ix ? sb->cap_ix * 2 : 1024;
		struct sb_ix *x = realloc(sb->ix, ncap * sizeof(*x));

		if (!x)
			return -ENOMEM;
		sb->ix = x;
		sb->cap_ix = ncap;
	}
	return 0;
}

/*
 * A CPU's buffer holding head - tail is all but full (less than a page
 * free): the kernel may have lost records that its LOST record tells only
 * at that CPU's next event.
 */
static bool near_full(const struct coll_sideband *sb, uint64_t head, uint64_t tail)
{
	return head - tail + sb->page >= sb->data_size;
}

/* What a walk of one CPU's buffer counts (walk_cpu). */
struct sb_walk {
	uint64_t lost;	   /* told by LOST records, and records that cannot be */
	uint64_t ksymbols; /* PERF_RECORD_KSYMBOL records */
	bool near_full;	   /* the buffer was all but full */
};

/* A record the walk hands on: its header and its position in the data area. */
typedef void (*sb_record_fn)(void *ctx, const struct perf_event_header *h, const uint8_t *data,
			     uint64_t pos);

/*
 * Walks one CPU's records from its tail to its head, counting into *w the
 * LOST and KSYMBOL records, a buffer all but full, and a record whose size
 * cannot be (it ends the walk at the head); every other record goes to fn
 * when there is one. Returns where the walk ended: the new tail for the
 * drain (read_cpu), which consumes; coll_sideband__ksymbols only peeks.
 */
static uint64_t walk_cpu(const struct coll_sideband *sb, const uint8_t *base, struct sb_walk *w,
			 sb_record_fn fn, void *ctx)
{
	const struct perf_event_mmap_page *mp = (const struct perf_event_mmap_page *)base;
	const uint8_t *data = base + sb->page;
	uint64_t head = __atomic_load_n(&mp->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = mp->data_tail;

	w->near_full = near_full(sb, head, tail);
	while (head - tail >= sizeof(struct perf_event_header)) {
		struct perf_event_header h;

		copy_out(&h, data, sb->data_size, tail, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - tail) {
			w->lost++; /* cannot happen with the kernel's records */
			return head;
		}
		if (h.type == PERF_RECORD_LOST && h.size >= sizeof(struct sb_lost)) {
			struct sb_lost l;

			copy_out(&l, data, sb->data_size, tail, sizeof(l));
			w->lost += l.lost;
		} else if (h.type == PERF_RECORD_KSYMBOL) {
			w->ksymbols++;
		} else if (fn) {
			fn(ctx, &h, data, tail);
		}
		tail += h.size;
	}
	return tail;
}

/* The drain's copy of one CPU's records (read_cpu). */
struct sb_read {
	struct coll_sideband *sb;
	uint32_t *seq;
	int err;
};

/* Copies a wanted record into the arena; once out of memory, the rest are lost. */
static void keep_record(void *ctx, const struct perf_event_header *h, const uint8_t *data,
			uint64_t pos)
{
	struct sb_read *r = ctx;
	struct coll_sideband *sb = r->sb;
	size_t need = (h->size + 7u) & ~7u;
	struct sb_id id;
	uint8_t *rec;

	if (!wanted(h))
		return;
	if (r->err || h->size < sizeof(*h) + sizeof(struct sb_id)) {
		sb->lost++;
		return;
	}
	if (reserve(sb, need)) {
		r->err = -ENOMEM;
		sb->lost++;
		return;
	}
	rec = sb->arena + sb->arena_len;
	copy_out(rec, data, sb->data_size, pos, h->size);
	memcpy(&id, rec + h->size - sizeof(id), sizeof(id));
	sb->ix[sb->nix++] = (struct sb_ix){id.time, (uint32_t)sb->arena_len, (*r->seq)++};
	sb->arena_len += need;
}

/* Copies one CPU's new records into the arena. -ENOMEM: the rest are lost. */
static int read_cpu(struct coll_sideband *sb, uint8_t *base, uint32_t *seq)
{
	struct perf_event_mmap_page *mp = (struct perf_event_mmap_page *)base;
	struct sb_read r = {sb, seq, 0};
	struct sb_walk w = {0};
	uint64_t tail = walk_cpu(sb, base, &w, keep_record, &r);

	sb->lost += w.lost;
	sb->ksymbols += w.ksymbols;
	sb->near_full += w.near_full;
	__atomic_store_n(&mp->data_tail, tail, __ATOMIC_RELEASE);
	return r.err;
}

static int by_time(const void *a, const void *b)
{
	const struct sb_ix *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The event of one copied record; false when it is not one (a short record). */
static bool decode(const uint8_t *rec, struct coll_sb_event *ev, uint64_t time)
{
	struct perf_event_header h;
	size_t body;

	memcpy(&h, rec, sizeof(h));
	body = h.size - sizeof(struct sb_id); /* the sample_id is not the record's */
	*ev = (struct coll_sb_event){.time_ns = time};
	switch (h.type) {
	case PERF_RECORD_MMAP2: {
		struct sb_mmap2 m;

		if (body < sizeof(m))
			return false;
		memcpy(&m, rec, sizeof(m));
		ev->kind = COLL_SB_MMAP;
		ev->pid = m.pid;
		ev->start = m.addr;
		ev->len = m.len;
		ev->pgoff = m.pgoff;
		ev->major = m.maj;
		ev->minor = m.min;
		ev->inode = m.ino;
		ev->prot = m.prot;
		ev->flags = m.flags;
		ev->path = (const char *)rec + sizeof(m);
		ev->path_len = (uint32_t)strnlen(ev->path, body - sizeof(m));
		return ev->path_len < body - sizeof(m); /* NUL-terminated */
	}
	case PERF_RECORD_COMM: {
		struct sb_comm c;

		if (body < sizeof(c))
			return false;
		memcpy(&c, rec, sizeof(c));
		ev->kind = COLL_SB_EXEC;
		ev->pid = c.pid;
		ev->comm = (const char *)rec + sizeof(c);
		ev->comm_len = (uint32_t)strnlen(ev->comm, body - sizeof(c));
		return ev->comm_len < body - sizeof(c);
	}
	case PERF_RECORD_FORK: {
		struct sb_fork f;

		if (body < sizeof(f))
			return false;
		memcpy(&f, rec, sizeof(f));
		if (f.pid == f.ppid)
			return false; /* a thread */
		ev->kind = COLL_SB_FORK;
		ev->pid = f.pid;
		ev->ppid = f.ppid;
		return true;
	}
	default:
		return false;
	}
}

int coll_sideband__drain(struct coll_sideband *sb, coll_sb_fn fn, void *ctx)
{
	uint32_t seq = 0;
	int err = 0, n = 0;

	sb->arena_len = 0;
	sb->nix = 0;
	for (int i = 0; i < sb->n; i++)
		if (read_cpu(sb, sb->bufs[i], &seq))
			err = -ENOMEM;
	if (sb->nix > 1)
		qsort(sb->ix, sb->nix, sizeof(*sb->ix), by_time);
	for (size_t i = 0; i < sb->nix; i++) {
		struct coll_sb_event ev;

		if (!decode(sb->arena + sb->ix[i].off, &ev, sb->ix[i].time))
			continue;
		fn(ctx, &ev);
		n++;
	}
	return err ? err : n;
}

bool coll_sideband__ksymbols(const struct coll_sideband *sb, uint64_t *ksymbols, uint64_t *lost)
{
	*ksymbols = sb ? sb->ksymbols : 0;
	*lost = coll_sideband__maybe_lost(sb);
	/* a CPU without its event (offline when asked) would change unseen */
	if (!sb || sb->n < sb->asked)
		return false;
	/* and those still in the buffers, walked without consuming them */
	for (int i = 0; i < sb->n; i++) {
		struct sb_walk w = {0};

		walk_cpu(sb, sb->bufs[i], &w, NULL, NULL);
		/* a buffer all but full: a loss the kernel has not told yet */
		*lost += w.lost + w.near_full;
		*ksymbols += w.ksymbols;
	}
	return !sb->no_ksymbol;
}

uint64_t coll_sideband__lost(const struct coll_sideband *sb)
{
	return sb ? sb->lost : 0;
}

uint64_t coll_sideband__maybe_lost(const struct coll_sideband *sb)
{
	return sb ? sb->lost + sb->near_full : 0;
}

uint64_t coll_sideband__bytes(const struct coll_sideband *sb)
{
	return sb ? (uint64_t)sb->n * (sb->page + sb->data_size) : 0;
}

void coll_sideband__free(struct coll_sideband *sb)
{
	if (!sb)
		return;
	for (int i = 0; i < sb->n; i++) {
		munmap(sb->bufs[i], sb->page + sb->data_size);
		close(sb->fds[i]);
	}
	free(sb->fds);
	free(sb->bufs);
	free(sb->arena);
	free(sb->ix);
	free(sb);
}
