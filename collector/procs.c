// SPDX-License-Identifier: MIT
/*
 * The collector's table of processes it has described to the symbolizer:
 * pid -> executable address ranges, so that a sample whose instruction
 * pointer falls outside every known range (a dlopen, a JIT) triggers a
 * re-read of /proc/PID/maps, rate-limited per process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector_int.h"
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
		if (t->slots[i].used)
			free(t->slots[i].ranges);
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

/*
 * Reads /proc/PID/maps and emits its executable mappings as one or more
 * LPS_MAPS records (the first replaces, the others append; each stays well
 * under LPS_MAX_RECORD), through emit(ctx, enc). p's ranges are replaced
 * only when every record was emitted, so a dropped record is sent again.
 * Returns 0 or a negative errno.
 */
int coll_read_maps(struct coll_proc *p, uint64_t now_ns, struct lps_enc *enc,
		   int (*emit)(void *ctx, struct lps_enc *enc), void *ctx)
{
	struct coll_range *ranges = NULL;
	struct lps_mapping *maps = NULL, m;
	const char *cur, *end;
	uint32_t count = 0, i, first;
	char path[64], *buf;
	size_t len;
	int err = 0, r;

	/* rate-limits retries too: a failed read is not retried for a second */
	p->maps_ns = now_ns;
	snprintf(path, sizeof(path), "/proc/%u/maps", p->pid);
	err = coll_read_file(path, MAPS_MAX_BYTES, &buf, &len);
	if (err)
		return err;
	for (cur = buf, end = buf + len; (r = coll_maps_next(&cur, end, &m)) != 0;)
		if (r == 1 && (m.prot & LPS_PROT_X))
			count++;
	maps = calloc(count ? count : 1, sizeof(*maps));
	ranges = calloc(count ? count : 1, sizeof(*ranges));
	if (!maps || !ranges) {
		err = -ENOMEM;
		goto out;
	}
	for (cur = buf, i = 0; i < count && (r = coll_maps_next(&cur, end, &m)) != 0;) {
		if (r != 1 || !(m.prot & LPS_PROT_X))
			continue;
		maps[i] = m;
		ranges[i].start = m.start;
		ranges[i].end = m.end;
		i++;
	}
	count = i;
	/* chunks by encoded size: a mapping costs at most its path + 64 bytes */
	first = 0;
	do {
		size_t bytes = 64;
		uint32_t n = 0;

		while (first + n < count &&
		       bytes + maps[first + n].path.len + 64 <= MAPS_CHUNK_BYTES)
			bytes += maps[first + n++].path.len + 64;
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
	free(ranges);
	free(maps);
	free(buf);
	return err;
}
