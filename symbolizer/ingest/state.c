// SPDX-License-Identifier: MIT
/*
 * Ingest of the record stream (ingest.h). Every hash the stream can steer
 * is seeded, so that no stream makes ingest quadratic; every table it grows
 * has a SYMB_MAX_* limit.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ingest.h"
#include "lowprof/clock.h"
#include "lowprof/grow.h"
#include "lowprof/hash.h"
#include "lowprof/shard.h"
#include "lowprof/log.h"
#include "lowprof/opts.h"
#include "jitdump.h"
#include "perfmap.h"

struct symb_map {
	uint64_t start, end, offset;
	uint32_t obj; /* index into the object table, or UINT32_MAX for anonymous */
};

struct symb_proc {
	uint32_t pid;
	uint32_t gen; /* maps_gen when its mappings last changed: keys its delta memo entries */
	bool used;
	bool has_maps;
	bool exited;   /* an exit record came, and no mappings since: dropped with the window */
	bool want_exe; /* exec'd: the first file its mmap events name is its executable */
	uint32_t exe;  /* its executable (labels), 0: unknown; a reference */
	struct symb_jit *jit; /* its JIT perf map (LPS_PERFMAP), or NULL */
	uint64_t jit_fed;     /* bytes of it fed to jit: its share of SYMB_MAX_JIT_BYTES */
	/* its jitdump file (LPS_JITDUMP): its own table, as a perf map's offset 0
	 * must not void it; jd_fed counts as jit_fed does */
	struct symb_jit *jd_jit;
	struct symb_jitdump *jd;
	uint64_t jd_fed;
	struct symb_map *maps; /* ascending by start, non-overlapping */
	uint32_t nmaps, cap_maps;
};

struct symb_agg_slot {
	uint32_t agg; /* index into aggs + 1; 0 = empty */
	uint32_t hash_hi;
};

struct symb_state {
	bool off_cpu;
	bool wait_meta;
	bool measure_lag; /* symb_state__measure_lag */
	/* symb_state__set_shard: shard of nshards (0: all); loss kept: see there */
	uint32_t shard, nshards;
	bool shard_capture;
	uint64_t seed;	     /* of every hash a stream can steer (no flooding) */
	uint64_t window_end; /* samples from then are the next window's; 0: none */
	uint64_t mem_budget; /* symb_objects__trim's, between windows */
	struct symb_meta meta;

	struct symb_objects *objs;	  /* owned */
	struct symb_ksyms *ksyms;	  /* owned */
	struct symb_labels *labels;	  /* owned */
	struct symb_jit_names *jit_names; /* owned: the window's JIT frames' names */

	struct symb_proc *procs; /* open-addressing hash by pid */
	uint32_t cap_procs;
	uint32_t *seen_pids; /* distinct pids that had samples (hash set) */
	uint32_t cap_seen;

	/*
	 * Aggregates in insertion order (all kinds), found through agg_index:
	 * an open-addressing hash of (index + 1, high bits of the hash), 0 =
	 * empty, so that a probe reads 8 bytes and a miss no aggregate.
	 */
	struct symb_agg *aggs;
	uint32_t cap_aggs;
	struct symb_agg_slot *agg_index;
	uint32_t cap_agg_index;
	uint32_t naggs_kind[SYMB_KIND__COUNT]; /* of n.stacks, per kind */
	struct symb_frame *frames;	       /* frame arena */
	size_t nframes, cap_frames;

	struct symb_counters n;

	/*
	 * the unwinder's delta lookups and frames by (pid, address), each
	 * valid while its process's gen holds; maps_gen counts changes
	 */
	struct symb_delta_memo *delta_memo;
	uint32_t maps_gen;
	/* the delta memo's second level, by (object, file offset): obj_memo_lookup */
	struct symb_obj_memo *obj_memo;
	/* what the perf maps of processes now gone had counted (symb_state__jit_stats) */
	struct symb_jit_stats jit_gone;
	uint64_t jit_bytes; /* perf map bytes the live processes' tables were fed */
	bool finished;	    /* symb_state__finish */
};

/* every need is bounded by a SYMB_MAX_* far below 2^31 */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	return lp_grow32(p, cap, need, elem, 16);
}

struct symb_state *symb_state__new(const struct symb_state_opts *opts)
{
	struct symb_objects_opts oo = {.sz = sizeof(oo)};
	struct symb_state *s;

	if (!opts || LP_OPTS_CHECK(opts, symb_state_opts, mem_budget)) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* an unpredictable seed only changes table layout, never output order */
	s->seed = lp_hash_seed(s);
	s->off_cpu = opts->off_cpu;
	s->wait_meta = opts->wait_meta;
	s->mem_budget = opts->mem_budget;
	oo.seed = lp_mix64(s->seed);
	oo.offline = opts->offline;
	oo.replay = opts->replay;
	oo.cache = opts->cache;
	oo.debug_dirs = opts->debug_dirs;
	oo.files_fd = opts->files_fd;
	s->objs = symb_objects__new(&oo);
	s->ksyms = symb_ksyms__new();
	s->labels = symb_labels__new(lp_mix64(s->seed + 1));
	s->jit_names = symb_jit_names__new(lp_mix64(s->seed + 2));
	if (!s->objs || !s->ksyms || !s->labels || !s->jit_names) {
		symb_state__free(s);
		errno = ENOMEM;
		return NULL;
	}
	return s;
}

void symb_state__free(struct symb_state *s)
{
	if (!s)
		return;
	symb_objects__free(s->objs);
	symb_ksyms__free(s->ksyms);
	symb_labels__free(s->labels);
	symb_jit_names__free(s->jit_names);
	for (uint32_t i = 0; i < s->cap_procs; i++) {
		free(s->procs[i].maps);
		symb_jit__free(s->procs[i].jit);
		symb_jit__free(s->procs[i].jd_jit);
		symb_jitdump__free(s->procs[i].jd);
	}
	free(s->procs);
	free(s->seen_pids);
	free(s->aggs);
	free(s->agg_index);
	free(s->frames);
	free(s->delta_memo);
	free(s->obj_memo);
	free(s);
}

void symb_state__finish(struct symb_state *s)
{
	free(s->frames);
	s->frames = NULL;
	s->nframes = s->cap_frames = 0;
	free(s->agg_index);
	s->agg_index = NULL;
	s->cap_agg_index = 0;
	free(s->delta_memo);
	s->delta_memo = NULL;
	free(s->obj_memo);
	s->obj_memo = NULL;
	symb_ksyms__release(s->ksyms);
	s->finished = true;
}

bool symb_state__finished(const struct symb_state *s)
{
	return s->finished;
}

void symb_state__set_files_fd(struct symb_state *s, int files_fd)
{
	symb_objects__set_files_fd(s->objs, files_fd);
}

void symb_state__wait_meta(struct symb_state *s)
{
	s->wait_meta = true;
}

void symb_state__set_shard(struct symb_state *s, uint32_t shard, uint32_t nshards, bool capture)
{
	s->shard = nshards > 1 ? shard : 0;
	s->nshards = nshards > 1 ? nshards : 0;
	s->shard_capture = capture;
}

uint32_t symb_state__shard(const struct symb_state *s, uint32_t *nshards)
{
	*nshards = s->nshards;
	return s->shard;
}

/* Whether pid's samples and JIT records are another shard's. */
static bool other_shard(struct symb_state *s, uint32_t pid)
{
	if (!s->nshards || lp_shard_of(pid, s->nshards) == s->shard)
		return false;
	s->n.other_shard++;
	return true;
}

/*
 * A loss record. A ring's is its own already (the collector splits them,
 * collector/shards.c's coll_loss_split); a capture holds the whole run's,
 * which are shard 0's: the other shards of a replay count none.
 */
static void feed_loss(struct symb_state *s, const struct lps_loss *l)
{
	s->n.have_loss = true;
	if (s->nshards && s->shard && s->shard_capture)
		memset(&s->n.loss, 0, sizeof(s->n.loss));
	else
		s->n.loss = *l;
}

int symb_state__note_build_id(struct symb_state *s, const struct lps_buildid *b)
{
	return symb_objects__note_build_id(s->objs, b);
}

void symb_state__set_notes_loader(struct symb_state *s, void (*fn)(void *ctx), void *ctx)
{
	symb_objects__set_notes_loader(s->objs, fn, ctx);
}

void symb_state__measure_lag(struct symb_state *s, bool on)
{
	s->measure_lag = on;
}

/* symb_state__measure_lag: a sample read now, time_ns old */
static void note_lag(struct symb_state *s, uint64_t time_ns)
{
	uint64_t now = lp_clock_ns(CLOCK_MONOTONIC);

	if (now > time_ns && now - time_ns > s->n.lag_peak_ns)
		s->n.lag_peak_ns = now - time_ns;
}

void symb_state__note_ring(struct symb_state *s, uint64_t peak, uint64_t size)
{
	s->n.ring_bytes = size;
	if (peak > s->n.ring_peak_bytes)
		s->n.ring_peak_bytes = peak;
}

const struct symb_counters *symb_state__counters(const struct symb_state *s)
{
	return &s->n;
}

const struct symb_meta *symb_state__meta(const struct symb_state *s)
{
	return &s->meta;
}

bool symb_state__off_cpu(const struct symb_state *s)
{
	return s->off_cpu;
}

const struct symb_agg *symb_state__aggs(const struct symb_state *s, uint32_t *n)
{
	*n = s->n.stacks;
	return s->aggs;
}

uint32_t symb_state__naggs_kind(const struct symb_state *s, enum symb_kind kind)
{
	return s->naggs_kind[kind];
}

const struct symb_frame *symb_state__frames(const struct symb_state *s)
{
	return s->frames;
}

struct symb_objects *symb_state__objects(struct symb_state *s)
{
	return s->objs;
}

struct symb_ksyms *symb_state__ksyms(struct symb_state *s)
{
	return s->ksyms;
}

const struct symb_objects_stats *symb_state__objects_stats(const struct symb_state *s)
{
	return symb_objects__stats(s->objs);
}

const struct symb_ksyms_stats *symb_state__ksyms_stats(const struct symb_state *s)
{
	return symb_ksyms__stats(s->ksyms);
}

const char *symb_state__exe(const struct symb_state *s, uint32_t exe)
{
	return symb_labels__exe(s->labels, exe);
}

const struct symb_cgroup *symb_state__cgroup(const struct symb_state *s, uint64_t id)
{
	return symb_labels__cgroup(s->labels, id);
}

void symb_state__labels_stats(const struct symb_state *s, struct symb_labels_stats *st)
{
	symb_labels__stats(s->labels, st);
}

const char *symb_state__jit_name(const struct symb_state *s, uint32_t id)
{
	return symb_jit_names__get(s->jit_names, id);
}

/* ---- processes ---------------------------------------------------------- */

static uint32_t pid_hash(const struct symb_state *s, uint32_t pid)
{
	return (uint32_t)lp_mix64(pid ^ s->seed);
}

static struct symb_proc *proc_slot(const struct symb_state *s, struct symb_proc *t, uint32_t cap,
				   uint32_t pid)
{
	for (uint32_t i = pid_hash(s, pid) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].used || t[i].pid == pid)
			return &t[i];
}

static struct symb_proc *proc_get(struct symb_state *s, uint32_t pid)
{
	struct symb_proc *p;

	if (!s->cap_procs)
		return NULL;
	p = proc_slot(s, s->procs, s->cap_procs, pid);
	return p->used ? p : NULL;
}

/*
 * p's mappings changed: what the delta memo holds for it no longer applies.
 * Every change takes a new generation, so no process returns to one its
 * entries were made under; when the count wraps, the memo is emptied and
 * every process starts again from generation 1.
 */
static void maps_changed(struct symb_state *s, struct symb_proc *p)
{
	if (s->maps_gen == UINT32_MAX) {
		free(s->delta_memo);
		s->delta_memo = NULL;
		for (uint32_t i = 0; i < s->cap_procs; i++)
			s->procs[i].gen = 1;
		s->maps_gen = 1;
	}
	p->gen = ++s->maps_gen;
}

/* Adds pid (not present): 0, -ENOSPC beyond SYMB_MAX_PROCS, or -ENOMEM. */
static int proc_add(struct symb_state *s, uint32_t pid, struct symb_proc **out)
{
	struct symb_proc *p;

	if (s->n.procs >= SYMB_MAX_PROCS)
		return -ENOSPC;
	if ((s->n.procs + 1) * 2 > s->cap_procs) {
		uint32_t ncap = s->cap_procs ? s->cap_procs * 2 : 256;
		struct symb_proc *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint32_t i = 0; i < s->cap_procs; i++)
			if (s->procs[i].used)
				*proc_slot(s, n, ncap, s->procs[i].pid) = s->procs[i];
		free(s->procs);
		s->procs = n;
		s->cap_procs = ncap;
	}
	p = proc_slot(s, s->procs, s->cap_procs, pid);
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->pid = pid;
	s->n.procs++;
	maps_changed(s, p); /* a pid seen before must not find the old process's entries */
	*out = p;
	return 0;
}

/*
 * pid's entry, added if new: 0, or 1 when the table is full (*over counts
 * it, and the record is skipped), or -ENOMEM.
 */
static int proc_want(struct symb_state *s, uint32_t pid, struct symb_proc **out, uint64_t *over)
{
	int err;

	*out = proc_get(s, pid);
	if (*out)
		return 0;
	err = proc_add(s, pid, out);
	if (err == -ENOSPC) {
		(*over)++;
		return 1;
	}
	return err;
}

/* Forgetting a process keeps its slot (no tombstones; SYMB_MAX_PROCS bounds them). */
static void proc_clear_maps(struct symb_state *s, struct symb_proc *p)
{
	maps_changed(s, p);
	for (uint32_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].obj != UINT32_MAX)
			symb_objects__unref(s->objs, p->maps[i].obj);
	s->n.maps -= p->nmaps;
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
	p->cap_maps = 0;
	p->has_maps = false;
}

static void jit_stats_add(struct symb_jit_stats *to, const struct symb_jit_stats *st)
{
	to->lines += st->lines;
	to->bad_lines += st->bad_lines;
	to->dropped += st->dropped;
	to->gap_bytes += st->gap_bytes;
	to->dup_bytes += st->dup_bytes;
	to->restarts += st->restarts;
}

/* The process's jitdump symbols are void; counted first. */
static void proc_clear_jitdump(struct symb_state *s, struct symb_proc *p)
{
	if (!p->jd_jit)
		return;
	jit_stats_add(&s->jit_gone, symb_jit__stats(p->jd_jit));
	symb_jit__free(p->jd_jit);
	symb_jitdump__free(p->jd);
	p->jd_jit = NULL;
	p->jd = NULL;
	s->jit_bytes -= p->jd_fed;
	p->jd_fed = 0;
}

/* The process's perf map symbols are void; counted first. */
static void proc_clear_perfmap(struct symb_state *s, struct symb_proc *p)
{
	if (!p->jit)
		return;
	jit_stats_add(&s->jit_gone, symb_jit__stats(p->jit));
	symb_jit__free(p->jit);
	p->jit = NULL;
	s->jit_bytes -= p->jit_fed;
	p->jit_fed = 0;
}

/* The process's JIT symbols are void (exec, exit); counted first. */
static void proc_clear_jit(struct symb_state *s, struct symb_proc *p)
{
	proc_clear_perfmap(s, p);
	proc_clear_jitdump(s, p);
}

/* Notes a pid that had samples: 0, -ENOSPC beyond SYMB_MAX_PROCS, or -ENOMEM. */
static int note_pid_seen(struct symb_state *s, uint32_t pid)
{
	uint32_t key = pid + 1; /* 0 marks an empty slot; pid 2^32-1 shares pid 0's key */

	if (!key)
		key = 1;
	for (uint32_t j = s->cap_seen ? pid_hash(s, key) & (s->cap_seen - 1) : 0; s->cap_seen;
	     j = (j + 1) & (s->cap_seen - 1)) {
		if (s->seen_pids[j] == key)
			return 0;
		if (!s->seen_pids[j])
			break;
	}
	if (s->n.pids_seen >= SYMB_MAX_PROCS)
		return -ENOSPC;
	if ((s->n.pids_seen + 1) * 2 > s->cap_seen) {
		uint32_t ncap = s->cap_seen ? s->cap_seen * 2 : 256;
		uint32_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return -ENOMEM;
		for (uint32_t i = 0; i < s->cap_seen; i++) {
			uint32_t k = s->seen_pids[i];

			if (!k)
				continue;
			for (uint32_t j = pid_hash(s, k) & (ncap - 1);; j = (j + 1) & (ncap - 1))
				if (!n[j]) {
					n[j] = k;
					break;
				}
		}
		free(s->seen_pids);
		s->seen_pids = n;
		s->cap_seen = ncap;
	}
	for (uint32_t j = pid_hash(s, key) & (s->cap_seen - 1);; j = (j + 1) & (s->cap_seen - 1))
		if (!s->seen_pids[j]) {
			s->seen_pids[j] = key;
			s->n.pids_seen++;
			return 0;
		}
}

/* ---- mappings ----------------------------------------------------------- */

/* A mapping of a file (not "[vdso]", "[stack]" or anonymous memory). */
static bool is_file_mapping(const struct lps_mapping *m)
{
	return m->path.len && m->path.ptr[0] == '/' && m->inode &&
	       !memchr(m->path.ptr, '\0', m->path.len);
}

/*
 * The vDSO of a 64-bit process, which the stream's image (LPS_VDSO) is: a
 * 32-bit process's (ia32 or x32) is another image, and like all of its
 * address space below 4 GiB; a 64-bit process's is mapped far above.
 */
static bool is_vdso64(const struct lps_mapping *m)
{
	return m->path.len == 6 && !memcmp(m->path.ptr, "[vdso]", 6) && m->start >= 1ull << 32;
}

/* Adds one mapping at the end of p's: 0, or -ENOMEM. Drops and counts the rest. */
static int proc_add_map(struct symb_state *s, struct symb_proc *p, const struct lps_mapping *m)
{
	struct symb_map *sm;
	int err;

	if (m->end <= m->start || !(m->prot & LPS_PROT_X))
		return 0;
	/* ascending and non-overlapping, so that lookups can bisect */
	if (p->nmaps && m->start < p->maps[p->nmaps - 1].end) {
		s->n.bad_mappings++;
		return 0;
	}
	if (p->nmaps >= SYMB_MAX_MAPS_PER_PROC || s->n.maps >= SYMB_MAX_MAPS) {
		s->n.over_limit_mappings++;
		return 0;
	}
	if (grow((void **)&p->maps, &p->cap_maps, p->nmaps + 1, sizeof(*p->maps)))
		return -ENOMEM;
	sm = &p->maps[p->nmaps];
	sm->start = m->start;
	sm->end = m->end;
	sm->offset = m->offset;
	sm->obj = UINT32_MAX;
	if (is_file_mapping(m)) {
		err = symb_objects__intern(s->objs, m, p->pid, &sm->obj);
		if (err == -ENOSPC)
			s->n.over_limit_mappings++; /* kept, as anonymous memory */
		else if (err)
			return err;
	} else if (is_vdso64(m) && symb_objects__vdso(s->objs, m->end - m->start, &sm->obj) == 0) {
		sm->offset = 0; /* the mapping's start is the image's first byte */
	}
	p->nmaps++;
	s->n.maps++;
	return 0;
}

/*
 * A process's mappings may span several records: the first (append false)
 * replaces what was known, the following ones (append true) add entries in
 * ascending order. An append for a process without maps starts them.
 */
static int feed_maps(struct symb_state *s, struct lps_maps *rec)
{
	struct symb_proc *p = proc_get(s, rec->pid);
	struct lps_mapping m;
	int r, err;

	if (!p) {
		err = proc_add(s, rec->pid, &p);
		if (err == -ENOSPC) {
			s->n.over_limit_mappings += rec->count;
			return 0;
		}
		if (err)
			return err;
	}
	if (!rec->append)
		proc_clear_maps(s, p); /* a new generation with the old maps gone */
	else
		maps_changed(s, p);
	p->has_maps = true;
	p->exited = false; /* a pid used again */
	while ((r = lps_maps_next(rec, &m)) == 1) {
		err = proc_add_map(s, p, &m);
		if (err)
			return err;
	}
	return r < 0 ? r : 0;
}

/*
 * 1.6 mmap: one executable mapping as the process made it. Like the
 * kernel, it replaces what the process had mapped in its range: older
 * mappings there are cut (a split one holds its object twice) or dropped.
 */
static int feed_mmap(struct symb_state *s, const struct lps_mmap *rec)
{
	const struct lps_mapping *m = &rec->map;
	struct symb_map nm = {m->start, m->end, m->offset, UINT32_MAX}, *out;
	struct symb_proc *p;
	uint32_t k = 0;
	bool inserted = false;
	int err;

	if (m->end <= m->start || !(m->prot & LPS_PROT_X))
		return 0;
	err = proc_want(s, rec->pid, &p, &s->n.over_limit_mappings);
	if (err)
		return err < 0 ? err : 0;
	if (p->nmaps + 2 > SYMB_MAX_MAPS_PER_PROC || s->n.maps + 2 > SYMB_MAX_MAPS) {
		s->n.over_limit_mappings++;
		return 0;
	}
	out = malloc(((size_t)p->nmaps + 2) * sizeof(*out));
	if (!out)
		return -ENOMEM;
	if (is_file_mapping(m)) {
		err = symb_objects__intern(s->objs, m, p->pid, &nm.obj);
		if (err == -ENOSPC) {
			s->n.over_limit_mappings++; /* kept, as anonymous memory */
		} else if (err) {
			free(out);
			return err;
		}
		if (p->want_exe) {
			symb_labels__exe_put(s->labels, p->exe);
			p->exe = symb_labels__exe_get(s->labels, m->path.ptr, m->path.len);
			p->want_exe = false;
		}
	}
	for (uint32_t i = 0; i < p->nmaps; i++) {
		struct symb_map o = p->maps[i];
		bool kept = false;

		if (o.end <= nm.start) {
			out[k++] = o;
			continue;
		}
		if (o.start >= nm.end) {
			if (!inserted)
				out[k++] = nm, inserted = true;
			out[k++] = o;
			continue;
		}
		if (o.start < nm.start) { /* its head stays */
			out[k] = o;
			out[k++].end = nm.start;
			kept = true;
		}
		if (!inserted)
			out[k++] = nm, inserted = true;
		if (o.end > nm.end) { /* and its tail */
			out[k] = o;
			out[k].offset += nm.end - o.start;
			out[k++].start = nm.end;
			if (kept && o.obj != UINT32_MAX)
				symb_objects__ref(s->objs, o.obj);
			kept = true;
		}
		if (!kept && o.obj != UINT32_MAX)
			symb_objects__unref(s->objs, o.obj);
	}
	if (!inserted)
		out[k++] = nm;
	s->n.maps += k;
	s->n.maps -= p->nmaps;
	free(p->maps);
	p->maps = out;
	p->nmaps = p->cap_maps = k;
	p->has_maps = true;
	p->exited = false;
	maps_changed(s, p);
	return 0;
}

/*
 * 1.6 fork: a new process, with its parent's mappings as they are (the
 * kernel makes no mmap events for what a child inherits).
 */
static int feed_fork(struct symb_state *s, const struct lps_fork *rec)
{
	struct symb_proc *p = proc_get(s, rec->pid), *parent;
	int err;

	if (p) {
		proc_clear_maps(s, p); /* the pid of a process gone */
	} else {
		err = proc_add(s, rec->pid, &p);
		if (err == -ENOSPC) {
			s->n.over_limit_mappings++;
			return 0;
		}
		if (err)
			return err;
	}
	symb_labels__exe_put(s->labels, p->exe);
	p->exe = 0;
	p->exited = false;
	p->want_exe = false;
	parent = proc_get(s, rec->ppid); /* after the add, which may move slots */
	if (!parent || parent == p)
		return 0;
	p->exe = symb_labels__exe_ref(s->labels, parent->exe);
	if (!parent->nmaps)
		return 0;
	if (s->n.maps + parent->nmaps > SYMB_MAX_MAPS) {
		s->n.over_limit_mappings += parent->nmaps;
		return 0;
	}
	p->maps = malloc((size_t)parent->nmaps * sizeof(*p->maps));
	if (!p->maps)
		return -ENOMEM;
	memcpy(p->maps, parent->maps, (size_t)parent->nmaps * sizeof(*p->maps));
	p->nmaps = p->cap_maps = parent->nmaps;
	for (uint32_t i = 0; i < p->nmaps; i++)
		if (p->maps[i].obj != UINT32_MAX)
			symb_objects__ref(s->objs, p->maps[i].obj);
	s->n.maps += p->nmaps;
	p->has_maps = true;
	maps_changed(s, p);
	return 0;
}

static const struct symb_map *map_find(const struct symb_proc *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* ---- samples ------------------------------------------------------------ */

/* What, besides its frames, keys an aggregate. */
struct agg_key {
	uint32_t kind, pid, exe;
	uint64_t cgroup;
	const char *comm;
};

static uint64_t hash_stack(const struct symb_state *s, const struct agg_key *k,
			   const struct symb_frame *f, uint32_t n)
{
	uint64_t h = lp_hash_bytes(lp_mix64(s->seed ^ ((uint64_t)k->kind << 32 | k->pid) ^
					    lp_mix64(k->cgroup ^ ((uint64_t)k->exe << 40))),
				   k->comm, strlen(k->comm));

	/*
	 * Each frame is mixed on its own (the mixes of a stack's frames run in
	 * parallel) and chained with one multiply: two mixes in the chain per
	 * frame were a tenth of a sample's cost.
	 */
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ lp_mix64(f[i].addr ^ s->seed) ^ ((uint64_t)f[i].kind << 32 | f[i].obj)) *
		    0x9e3779b97f4a7c15ull;
	return lp_mix64(h);
}

static bool agg_matches(const struct symb_state *s, const struct symb_agg *a, uint64_t h,
			const struct agg_key *k, const struct symb_frame *f, uint32_t n)
{
	return a->hash == h && a->kind == k->kind && a->pid == k->pid && a->nframes == n &&
	       a->cgroup == k->cgroup && a->exe == k->exe && strcmp(a->comm, k->comm) == 0 &&
	       memcmp(&s->frames[a->first], f, n * sizeof(*f)) == 0;
}

/* The index, doubled: 0 or -ENOMEM. */
static int agg_index_grow(struct symb_state *s)
{
	uint32_t ncap = s->cap_agg_index ? s->cap_agg_index * 2 : 1024;
	struct symb_agg_slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->n.stacks; i++)
		for (uint32_t j = (uint32_t)s->aggs[i].hash & (ncap - 1);; j = (j + 1) & (ncap - 1))
			if (!n[j].agg) {
				n[j] = (struct symb_agg_slot){i + 1,
							      (uint32_t)(s->aggs[i].hash >> 32)};
				break;
			}
	free(s->agg_index);
	s->agg_index = n;
	s->cap_agg_index = ncap;
	return 0;
}

/* The stack's index slot: its aggregate's, or the empty slot where it belongs. */
static struct symb_agg_slot *agg_slot(struct symb_state *s, uint64_t h, const struct agg_key *k,
				      const struct symb_frame *f, uint32_t n)
{
	uint32_t hi = (uint32_t)(h >> 32);

	for (uint32_t j = (uint32_t)h & (s->cap_agg_index - 1);;
	     j = (j + 1) & (s->cap_agg_index - 1)) {
		struct symb_agg_slot *e = &s->agg_index[j];

		if (!e->agg ||
		    (e->hash_hi == hi && agg_matches(s, &s->aggs[e->agg - 1], h, k, f, n)))
			return e;
	}
}

/*
 * Counts one sample of a stack of a kind (< SYMB_KIND__COUNT): 0, -ENOSPC
 * beyond the stack limits (shared by all kinds), or -ENOMEM.
 */
static int aggregate(struct symb_state *s, const struct agg_key *k, const struct symb_frame *f,
		     uint32_t n, uint64_t weight)
{
	uint64_t h = hash_stack(s, k, f, n);
	struct symb_agg_slot *e = s->cap_agg_index ? agg_slot(s, h, k, f, n) : NULL;
	struct symb_agg *a;
	size_t clen;

	if (e && e->agg) {
		a = &s->aggs[e->agg - 1];
		a->count++;
		a->weight += weight;
		return 0;
	}
	if (s->n.stacks >= SYMB_MAX_STACKS || n > SYMB_MAX_FRAMES - s->nframes)
		return -ENOSPC;
	if ((s->n.stacks + 1) * 2 > s->cap_agg_index) {
		if (agg_index_grow(s))
			return -ENOMEM;
		e = agg_slot(s, h, k, f, n);
	}
	if (grow((void **)&s->aggs, &s->cap_aggs, s->n.stacks + 1, sizeof(*s->aggs)))
		return -ENOMEM;
	if (lp_grow((void **)&s->frames, &s->cap_frames, s->nframes + n, sizeof(*s->frames), 4096,
		    SIZE_MAX))
		return -ENOMEM;
	memcpy(&s->frames[s->nframes], f, n * sizeof(*f));
	a = &s->aggs[s->n.stacks];
	a->hash = h;
	a->kind = k->kind;
	a->pid = k->pid;
	a->cgroup = k->cgroup;
	a->exe = k->exe;
	clen = strnlen(k->comm, sizeof(a->comm) - 1);
	memcpy(a->comm, k->comm, clen);
	a->comm[clen] = '\0';
	a->nframes = n;
	a->first = (uint32_t)s->nframes; /* < SYMB_MAX_FRAMES */
	a->seq = s->naggs_kind[k->kind]++;
	a->count = 1;
	a->weight = weight;
	s->nframes += n;
	*e = (struct symb_agg_slot){++s->n.stacks, (uint32_t)(h >> 32)};
	return 0;
}

/* What user_frame counts besides the frame it returns. */
enum frame_note {
	FRAME_OK = 0,
	FRAME_UNMAPPED = 1,
	FRAME_BAD_OFFSET = 2,
};

/*
 * The frame of user address a in mapping m (NULL: a is in none). File
 * offsets of SYMB_OBJ_SPAN or more cannot be real (and would leave the
 * object's slice of the profile's address space): such frames stay raw
 * addresses without an object.
 */
static struct symb_frame map_frame(const struct symb_map *m, uint64_t a, enum frame_note *note)
{
	*note = FRAME_OK;
	if (!m) {
		*note = FRAME_UNMAPPED;
		return (struct symb_frame){SYMB_F_UNKNOWN, 0, a};
	}
	if (m->obj == UINT32_MAX)
		return (struct symb_frame){SYMB_F_ANON, 0, a};
	if (m->offset >= SYMB_OBJ_SPAN || a - m->start >= SYMB_OBJ_SPAN - m->offset) {
		*note = FRAME_BAD_OFFSET;
		return (struct symb_frame){SYMB_F_UNKNOWN, 0, a};
	}
	return (struct symb_frame){SYMB_F_USER, m->obj, a - m->start + m->offset};
}

static void count_note(enum frame_note note, uint64_t *unmapped, uint64_t *bad_offsets)
{
	if (note == FRAME_UNMAPPED)
		++*unmapped;
	else if (note == FRAME_BAD_OFFSET)
		++*bad_offsets;
}

/* The frame of user address a in p's mappings. */
static struct symb_frame user_frame(const struct symb_proc *p, uint64_t a, uint64_t *unmapped,
				    uint64_t *bad_offsets)
{
	enum frame_note note;
	struct symb_frame f = map_frame(p ? map_find(p, a) : NULL, a, &note);

	count_note(note, unmapped, bad_offsets);
	return f;
}

/*
 * What one walk looked up: for the address of each lookup (the k-th lookup
 * is for the k-th frame the walk emits), the frame it names, so that a
 * frame whose address was looked up is not searched for in the mappings a
 * second time.
 */
struct unwind_ctx {
	struct symb_state *s;
	const struct symb_proc *p;
	uint32_t pid;
	uint32_t nlook;
	uint64_t look_addr[LPS_MAX_FRAMES];
	struct symb_frame look_frame[LPS_MAX_FRAMES];
	uint8_t look_note[LPS_MAX_FRAMES];
};

/*
 * lookup_delta's answers, direct-mapped by (pid, address): hot code is
 * unwound through the same return addresses sample after sample, and each
 * lookup costs a mapping search, a segment search and a search of the
 * object's table. An entry holds while its process's mappings are those it
 * was made under (its gen; generations start at 1: a zeroed entry never
 * matches). It keeps the frame of its address as well.
 */
#define DELTA_MEMO_BITS	 13
#define DELTA_MEMO_SLOTS (1u << DELTA_MEMO_BITS)

struct symb_delta_memo {
	uint64_t addr;
	uint32_t pid;
	uint32_t gen;
	uint64_t file_delta; /* a user frame's file offset: addr + file_delta */
	uint32_t obj;	     /* a user frame's object */
	/* what the unwinder reads of the row (not its pc) */
	int32_t cfa_off;
	int16_t bp_off;
	uint8_t kind;
	uint8_t found;	    /* enum symb_lookup */
	uint8_t frame_kind; /* SYMB_F_USER, _ANON or _UNKNOWN */
	uint8_t note;	    /* enum frame_note */
};

/*
 * The delta memo's second level: an object's answer for a file offset,
 * whichever process asked. Processes that start again and again (a shell
 * loop's gzip, sort, cat) each miss the first level, keyed by pid, on every
 * return address of their first samples; here they find what the last one
 * looked up, without the search of the object's table. An entry holds while
 * its object's index names the same file with the same tables: the memo goes
 * when a window start sweeps or trims objects, or the vDSO image changes.
 * Direct-mapped; slot 0 of a zeroed memo is no entry (obj + 1 is kept).
 */
#define OBJ_MEMO_BITS  13
#define OBJ_MEMO_SLOTS (1u << OBJ_MEMO_BITS)

struct symb_obj_memo {
	uint64_t off;
	uint32_t obj1; /* object index + 1; 0: empty */
	int32_t cfa_off;
	int16_t bp_off;
	uint8_t kind;
	uint8_t found; /* SYMB_LOOKUP_FOUND or _NO_CFI */
};

/* Object obj's delta row at file offset off: SYMB_LOOKUP_FOUND or _NO_CFI. */
static enum symb_lookup obj_delta(struct symb_state *s, uint32_t obj, uint64_t off,
				  struct symb_delta *row)
{
	const struct symb_obj *o = symb_objects__load(s->objs, obj);
	const struct symb_delta *d;
	uint64_t vaddr;

	if (!o->have_deltas || !o->elf || symb_elf__offset_to_vaddr(o->elf, off, &vaddr))
		return SYMB_LOOKUP_NO_CFI;
	d = symb_deltas__find(&o->deltas, vaddr);
	if (!d || d->kind == SYMB_CFA_NONE)
		return SYMB_LOOKUP_NO_CFI;
	*row = *d;
	return SYMB_LOOKUP_FOUND;
}

/*
 * obj_delta through the memo; the row as the memo keeps it (no pc, as
 * memo_row), whether it came from the memo or not.
 */
static enum symb_lookup obj_memo_lookup(struct symb_state *s, uint32_t obj, uint64_t off,
					struct symb_delta *row)
{
	struct symb_obj_memo *e;
	enum symb_lookup found;

	if (!s->obj_memo)
		s->obj_memo = calloc(OBJ_MEMO_SLOTS, sizeof(*s->obj_memo));
	if (!s->obj_memo)
		return obj_delta(s, obj, off, row);
	e = &s->obj_memo[((s->seed ^ off ^ (uint64_t)obj << 40) * 0xc2b2ae3d27d4eb4full) >>
			 (64 - OBJ_MEMO_BITS)];
	if (e->obj1 != obj + 1 || e->off != off) {
		struct symb_delta d = {0};

		found = obj_delta(s, obj, off, &d);
		*e = (struct symb_obj_memo){
			.off = off,
			.obj1 = obj + 1,
			.cfa_off = d.cfa_off,
			.bp_off = d.bp_off,
			.kind = d.kind,
			.found = (uint8_t)found,
		};
	}
	if (e->found == SYMB_LOOKUP_FOUND)
		*row = (struct symb_delta){
			.cfa_off = e->cfa_off, .bp_off = e->bp_off, .kind = e->kind};
	return (enum symb_lookup)e->found;
}

/*
 * The unwinder's view of a process: runtime address -> its object's delta
 * row. *frame gets the frame of addr.
 */
static enum symb_lookup lookup_delta_uncached(struct unwind_ctx *u, uint64_t addr,
					      struct symb_delta *row, struct symb_frame *frame,
					      enum frame_note *note)
{
	const struct symb_map *m = u->p ? map_find(u->p, addr) : NULL;

	*frame = map_frame(m, addr, note);
	if (!m)
		return SYMB_LOOKUP_UNMAPPED;
	if (m->obj == UINT32_MAX)
		return SYMB_LOOKUP_NO_CFI; /* anonymous (JIT), or [vdso] without its image */
	return obj_memo_lookup(u->s, m->obj, addr - m->start + m->offset, row);
}

/*
 * The row as the memo keeps it, so that an answer is the same whether it
 * came from the memo or not: the row's pc is not kept (steps do not use it).
 */
static void memo_row(const struct symb_delta_memo *m, struct symb_delta *row)
{
	*row = (struct symb_delta){.cfa_off = m->cfa_off, .bp_off = m->bp_off, .kind = m->kind};
}

static enum symb_lookup memo_lookup(struct unwind_ctx *u, uint64_t addr, struct symb_delta *row,
				    struct symb_frame *frame, enum frame_note *note)
{
	struct symb_state *s = u->s;
	struct symb_delta_memo *m;
	enum symb_lookup found;

	if (!s->delta_memo && u->p) {
		/* written before it is read: one fault a page, not a read fault and a copy */
		s->delta_memo = malloc(DELTA_MEMO_SLOTS * sizeof(*s->delta_memo));
		if (s->delta_memo)
			memset(s->delta_memo, 0, DELTA_MEMO_SLOTS * sizeof(*s->delta_memo));
	}
	if (!s->delta_memo || !u->p)
		return lookup_delta_uncached(u, addr, row, frame, note);
	/*
	 * A multiplicative hash, its top bits: the slot is on the walk's
	 * critical path (the next address is read from the stack at the CFA
	 * this lookup gives), and a direct-mapped memo only misses on a clash.
	 */
	m = &s->delta_memo[((s->seed ^ addr ^ (uint64_t)u->pid << 40) * 0x9e3779b97f4a7c15ull) >>
			   (64 - DELTA_MEMO_BITS)];
	if (m->gen == u->p->gen && m->addr == addr && m->pid == u->pid) {
		if (m->found == SYMB_LOOKUP_FOUND)
			memo_row(m, row);
		*frame = (struct symb_frame){m->frame_kind, m->obj,
					     m->frame_kind == SYMB_F_USER ? addr + m->file_delta
									  : addr};
		*note = (enum frame_note)m->note;
		return (enum symb_lookup)m->found;
	}
	found = lookup_delta_uncached(u, addr, row, frame, note);
	*m = (struct symb_delta_memo){
		.addr = addr,
		.pid = u->pid,
		.gen = u->p->gen,
		.file_delta = frame->addr - addr,
		.obj = frame->obj,
		.found = (uint8_t)found,
		.frame_kind = (uint8_t)frame->kind,
		.note = (uint8_t)*note,
	};
	if (found == SYMB_LOOKUP_FOUND) {
		m->cfa_off = row->cfa_off;
		m->bp_off = row->bp_off;
		m->kind = row->kind;
		memo_row(m, row);
	}
	return found;
}

static enum symb_lookup lookup_delta(void *ctx, uint64_t addr, struct symb_delta *row)
{
	struct unwind_ctx *u = ctx;
	struct symb_frame frame;
	enum frame_note note;
	enum symb_lookup found = memo_lookup(u, addr, row, &frame, &note);

	if (u->nlook < LPS_MAX_FRAMES) {
		u->look_addr[u->nlook] = addr;
		u->look_frame[u->nlook] = frame;
		u->look_note[u->nlook] = (uint8_t)note;
		u->nlook++;
	}
	return found;
}

/*
 * User frames of a sample that carries registers and a stack copy instead
 * of a frame-pointer walk: unwound here, with each object's stack deltas.
 * Returns the number of frames written to f.
 */
static uint32_t unwind_user(struct symb_state *s, const struct symb_proc *p,
			    const struct lps_sample *smp, struct symb_frame *f, uint64_t *unmapped,
			    uint64_t *bad_offsets)
{
	struct symb_uframe uf[LPS_MAX_FRAMES];
	struct symb_unwind_regs regs = {smp->ip, smp->sp, smp->bp};
	struct symb_unwind_stack st = {smp->stack_copy, smp->stack_copy_len, smp->sp};
	struct unwind_ctx u;
	struct symb_unwind_result res;

	u.s = s;
	u.p = p;
	u.pid = smp->pid;
	u.nlook = 0;
	symb_unwind(&regs, &st, lookup_delta, &u, uf, LPS_MAX_FRAMES, &res);
	s->n.unwound++;
	s->n.unwind_stops[res.stop < SYMB_STOP__COUNT ? res.stop : SYMB_STOP_BAD_CFA]++;
	s->n.unwind_fp_frames += res.fp_frames;
	for (uint32_t i = 0; i < res.n; i++) {
		/*
		 * Return addresses are named at pc - 1, inside the call; so is
		 * the user ip of a sample taken in a system call (it points
		 * after the syscall instruction).
		 */
		uint64_t a = uf[i].pc;

		if (!uf[i].exact || (i == 0 && smp->nkstack))
			a -= 1;
		if (i < u.nlook && u.look_addr[i] == a) {
			f[i] = u.look_frame[i];
			count_note((enum frame_note)u.look_note[i], unmapped, bad_offsets);
		} else {
			f[i] = user_frame(p, a, unmapped, bad_offsets);
		}
	}
	return res.n;
}

/*
 * Frames in no file (anonymous executable memory, or no mapping at all)
 * that p's perf map names become JIT frames: the name's id, and the
 * symbol's start as the address, so that every sample in one compiled
 * function shares its frame. Looked up at ingest: the perf map of the
 * sample's moment, not of the window's end (a JIT reuses code memory).
 */
static void name_jit_frames(struct symb_state *s, const struct symb_proc *p, struct symb_frame *f,
			    uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const char *name;
		uint32_t len, id;
		uint64_t start;
		int err;

		if (f[i].kind != SYMB_F_ANON && f[i].kind != SYMB_F_UNKNOWN)
			continue;
		if ((!p->jit || symb_jit__lookup(p->jit, f[i].addr, &name, &len, &start) != 1) &&
		    (!p->jd_jit ||
		     symb_jit__lookup(p->jd_jit, f[i].addr, &name, &len, &start) != 1))
			continue;
		err = symb_jit_names__intern(s->jit_names, name, len, &id);
		if (err) {
			s->n.jit_names_dropped++; /* the frame stays an address */
			continue;
		}
		f[i] = (struct symb_frame){SYMB_F_JIT, id, start};
		s->n.jit_frames++;
	}
}

/* Bytes of p's perf map file (LPS_PERFMAP). */
static int feed_perfmap(struct symb_state *s, const struct lps_perfmap *r)
{
	struct symb_proc *p;
	int err = proc_want(s, r->pid, &p, &s->n.over_limit_samples);

	if (err)
		return err < 0 ? err : 0;
	if (r->offset == 0)
		proc_clear_perfmap(s, p); /* the file from its start: the old table goes */
	if (!p->jit) {
		p->jit = symb_jit__new();
		if (!p->jit)
			return -ENOMEM;
	}
	p->exited = false;
	/* the chunk is left out whole: the table counts the gap it leaves */
	if (s->jit_bytes + r->data.len > SYMB_MAX_JIT_BYTES) {
		s->n.jit_over_limit++;
		return 0;
	}
	p->jit_fed += r->data.len;
	s->jit_bytes += r->data.len;
	return symb_jit__feed(p->jit, r->offset, r->data.ptr, r->data.len);
}

/*
 * Bytes of p's jitdump file (LPS_JITDUMP): its JIT_CODE_LOAD records into
 * its own table (the lookup tries the perf map's first).
 */
static int feed_jitdump(struct symb_state *s, const struct lps_perfmap *r)
{
	struct symb_proc *p;
	int err = proc_want(s, r->pid, &p, &s->n.over_limit_samples);

	if (err)
		return err < 0 ? err : 0;
	if (r->offset == 0)
		proc_clear_jitdump(s, p); /* the file from its start: the old table goes */
	if (!p->jd_jit) {
		p->jd_jit = symb_jit__new();
		p->jd = symb_jitdump__new();
		if (!p->jd_jit || !p->jd) {
			symb_jit__free(p->jd_jit);
			symb_jitdump__free(p->jd);
			p->jd_jit = NULL;
			p->jd = NULL;
			return -ENOMEM;
		}
	}
	p->exited = false;
	if (s->jit_bytes + r->data.len > SYMB_MAX_JIT_BYTES) {
		s->n.jit_over_limit++;
		return 0;
	}
	p->jd_fed += r->data.len;
	s->jit_bytes += r->data.len;
	return symb_jitdump__feed(p->jd, p->jd_jit, r->offset, r->data.ptr, r->data.len);
}

static int feed_sample(struct symb_state *s, const struct lps_sample *smp)
{
	struct symb_frame f[2 * LPS_MAX_FRAMES];
	char comm[LPS_COMM_LEN + 1];
	const struct symb_proc *p = proc_get(s, smp->pid);
	uint64_t unmapped = 0, bad_offsets = 0;
	uint32_t n = 0;
	int err;

	/* a kind newer than this reader has its own meaning of weight: not mixed in */
	if (smp->kind >= SYMB_KIND__COUNT) {
		s->n.unknown_kinds++;
		return 0;
	}
	if (smp->kind == SYMB_KIND_OFFCPU && !s->off_cpu) {
		s->n.offcpu_ignored++;
		return 0;
	}
	/* comm is bounded by the decoder; NULs inside would cut it short */
	memcpy(comm, smp->comm.ptr, smp->comm.len);
	comm[smp->comm.len] = '\0';
	if (!comm[0])
		snprintf(comm, sizeof(comm), "[pid %u]", smp->pid % 100000000u);

	/*
	 * Every frame but the interrupted instruction is a return address;
	 * addr - 1 lies inside the call, so it names the caller's function
	 * even when the call is the last instruction of that function.
	 */
	for (uint32_t i = 0; i < smp->nkstack; i++) {
		uint64_t a = lps_frame(smp->kstack, i);

		a = symb_ksyms__relative(s->ksyms, a);
		f[n++] = (struct symb_frame){SYMB_F_KERNEL, 0, i && a ? a - 1 : a};
	}
	if (smp->ip && !smp->nustack)
		n += unwind_user(s, p, smp, &f[n], &unmapped, &bad_offsets);
	for (uint32_t i = 0; i < smp->nustack; i++) {
		uint64_t a = lps_frame(smp->ustack, i);

		if (i || smp->nkstack)
			a -= 1;
		f[n++] = user_frame(p, a, &unmapped, &bad_offsets);
	}
	if (p && (p->jit || p->jd_jit))
		name_jit_frames(s, p, &f[smp->nkstack], n - smp->nkstack);
	err = note_pid_seen(s, smp->pid);
	if (!err) {
		struct agg_key k = {smp->kind, smp->pid, p ? p->exe : 0, smp->cgroup_id, comm};

		err = aggregate(s, &k, f, n, smp->weight);
	}
	if (err == -ENOSPC) {
		s->n.over_limit_samples++;
		return 0;
	}
	if (err)
		return err;
	if ((smp->nustack || smp->ip) && (!p || !p->has_maps))
		s->n.no_maps_samples++;
	s->n.unmapped_frames += unmapped;
	s->n.bad_offsets += bad_offsets;
	if (smp->kind == SYMB_KIND_OFFCPU) {
		s->n.offcpu_samples++;
		s->n.offcpu_ns += smp->weight;
	} else {
		s->n.samples++;
		s->n.weight_ns += smp->weight;
		if (s->measure_lag && !(s->n.samples & 63))
			note_lag(s, smp->time_ns);
	}
	if (!s->meta.first_ns || smp->time_ns < s->meta.first_ns)
		s->meta.first_ns = smp->time_ns;
	if (smp->time_ns > s->meta.last_ns)
		s->meta.last_ns = smp->time_ns;
	return 0;
}

/* What a process runs: its executable, for the labels. */
static int feed_proc(struct symb_state *s, const struct lps_proc *r)
{
	struct symb_proc *p;
	uint32_t exe;
	int err = proc_want(s, r->pid, &p, &s->n.over_limit_samples);

	if (err)
		return err < 0 ? err : 0;
	exe = symb_labels__exe_get(s->labels, r->exe.ptr, r->exe.len);
	symb_labels__exe_put(s->labels, p->exe);
	p->exe = exe;
	p->exited = false;
	return 0;
}

/*
 * The vDSO image [vdso] mappings use from now on (objects.h). A new image
 * after another (not seen from one collector) makes the delta memo's rows
 * of the old one stale: the memo starts again. Without room for it
 * (-ENOSPC), [vdso] frames stay as they were without an image.
 */
static int feed_vdso(struct symb_state *s, const struct lps_vdso *v)
{
	int err = symb_objects__set_vdso(s->objs, v->image.ptr, v->image.len);

	if (err == 1) {
		free(s->delta_memo);
		s->delta_memo = NULL;
		free(s->obj_memo);
		s->obj_memo = NULL;
	}
	return err == -ENOMEM ? err : 0;
}

static void copy_str(char *dst, size_t cap, struct lps_str src)
{
	size_t n = src.len < cap - 1 ? src.len : cap - 1;

	if (n) /* an absent field (older stream) may have no pointer */
		memcpy(dst, src.ptr, n);
	dst[n] = '\0';
}

/*
 * What the meta says about kernel addresses (relative to _text since 1.4)
 * and the collector's fallbacks. A new meta (a restarted symbolizer, a
 * second snapshot) starts over.
 */
static void feed_meta_kernel(struct symb_state *s, const struct lps_meta *m)
{
	struct lps_str f;

	symb_ksyms__start(s->ksyms, m->kernel_base.len > 0);
	s->meta.nfallbacks = 0;
	for (uint32_t i = 0; i < m->nfallbacks && i < LPS_MAX_FALLBACKS; i++) {
		if (lps_meta_fallback(m, i, &f))
			break;
		copy_str(s->meta.fallbacks[s->meta.nfallbacks++], LPS_MAX_FALLBACK_NAME + 1, f);
	}
}

/* The run's metadata; a new meta record (a restarted collector) replaces it. */
static void feed_meta(struct symb_state *s, const struct lps_meta *m)
{
	/* the same run's meta again (sent for a restarted symbolizer) is not a new collector */
	if (s->meta.have_meta && m->start_mono_ns != s->meta.start_mono_ns)
		s->n.restarts++;
	s->meta.have_meta = true;
	s->meta.freq_hz = m->freq_hz;
	s->meta.ncpus = m->ncpus_online;
	s->meta.start_mono_ns = m->start_mono_ns;
	s->meta.start_real_ns = m->start_real_ns;
	copy_str(s->meta.hostname, sizeof(s->meta.hostname), m->hostname);
	copy_str(s->meta.kernel_release, sizeof(s->meta.kernel_release), m->kernel_release);
	s->meta.bpf_mem_bytes = m->bpf_mem_bytes;
	s->meta.offcpu.on = m->off_cpu;
	copy_str(s->meta.offcpu.mode, sizeof(s->meta.offcpu.mode), m->off_cpu_mode);
	s->meta.offcpu.rate = m->off_cpu_rate;
	s->meta.offcpu.min_ns = m->off_cpu_min_ns;
	s->meta.offcpu.period_ns = m->off_cpu_period_ns;
	feed_meta_kernel(s, m);
}

/*
 * Whether buf is a sample of another shard's process, skipped (and counted)
 * by its pid alone: a replay's every shard reads the whole capture, and
 * decoding the stacks of the samples it does not keep cost each shard as
 * much as those it keeps. Not before the metadata of a resumed run (those
 * count as skipped_resume) nor with windows (a sample past the window's end
 * starts the next one, whoever's it is). A malformed sample is then counted
 * by its own shard alone, as -j 1 counts it once.
 */
static bool skip_other_shard(struct symb_state *s, const void *buf, size_t len)
{
	uint32_t pid;

	if (!s->nshards || s->wait_meta || s->window_end || lps_peek_sample_pid(buf, len, &pid))
		return false;
	return other_shard(s, pid);
}

int symb_state__feed(struct symb_state *s, const void *buf, size_t len)
{
	struct lps_record r;
	struct symb_proc *p;
	int err;

	if (s->finished)
		return -EINVAL;
	s->n.records++;
	if (skip_other_shard(s, buf, len))
		return 0;
	err = lps_decode(buf, len, &r);
	if (err == -ENOTSUP) {
		s->n.unknown_records++;
		return 0;
	}
	if (err == -EPROTO) {
		lp_err("stream: schema version %u.%u, this symbolizer reads %u.x", r.meta.major,
		       r.meta.minor, LPS_VERSION_MAJOR);
		return err;
	}
	if (err) {
		s->n.bad_records++;
		return 0;
	}
	if (s->wait_meta) {
		if (r.type != LPS_META) {
			s->n.skipped_resume++;
			return 0;
		}
		s->wait_meta = false;
	}
	switch (r.type) {
	case LPS_META:
		feed_meta(s, &r.meta);
		break;
	case LPS_SAMPLE:
		if (s->window_end && r.sample.time_ns >= s->window_end) {
			s->n.records--; /* fed again in the next window */
			return SYMB_FEED_NEXT_WINDOW;
		}
		if (other_shard(s, r.sample.pid))
			break;
		err = feed_sample(s, &r.sample);
		break;
	case LPS_MAPS:
		err = feed_maps(s, &r.maps);
		break;
	case LPS_EXEC:
		s->n.exec++;
		p = proc_get(s, r.exec.pid);
		if (p) {
			proc_clear_maps(s, p);
			proc_clear_jit(s, p);
			p->want_exe = true;
		}
		break;
	case LPS_MMAP:
		err = feed_mmap(s, &r.mmap);
		break;
	case LPS_FORK:
		err = feed_fork(s, &r.fork);
		break;
	case LPS_EXIT:
		s->n.exit++;
		p = proc_get(s, r.exit.pid);
		if (p) {
			proc_clear_maps(s, p);
			proc_clear_jit(s, p);
			p->exited = true;
		}
		break;
	case LPS_KSYMS:
		err = symb_ksyms__feed(s->ksyms, &r.ksyms);
		break;
	case LPS_CGROUP:
		err = symb_labels__cgroup_set(s->labels, r.cgroup.id, r.cgroup.path.ptr,
					      r.cgroup.path.len, r.cgroup.time_ns);
		if (err == -ENOSPC)
			err = 0; /* counted: its samples keep the id alone */
		break;
	case LPS_PROC:
		err = feed_proc(s, &r.proc);
		break;
	case LPS_PERFMAP:
		if (!other_shard(s, r.perfmap.pid))
			err = feed_perfmap(s, &r.perfmap);
		break;
	case LPS_JITDUMP:
		if (!other_shard(s, r.jitdump.pid))
			err = feed_jitdump(s, &r.jitdump);
		break;
	case LPS_VDSO:
		err = feed_vdso(s, &r.vdso);
		break;
	case LPS_LOSS:
		feed_loss(s, &r.loss);
		break;
	case LPS_END:
		s->meta.end_ns = r.end.time_ns;
		copy_str(s->meta.end_reason, sizeof(s->meta.end_reason), r.end.reason);
		break;
	}
	if (err == -EBADMSG) {
		s->n.bad_records++;
		err = 0;
	}
	return err;
}

/*
 * The processes table again, without those that exited (their slots are
 * otherwise kept, and a long run would fill SYMB_MAX_PROCS with the dead).
 * Their delta memo entries cannot match a process that takes the pid
 * later: it starts from a new generation. Without memory, the table stays.
 */
static void procs_compact(struct symb_state *s)
{
	uint32_t live = 0, ncap = 256;
	struct symb_proc *n;

	for (uint32_t i = 0; i < s->cap_procs; i++)
		live += s->procs[i].used && !s->procs[i].exited;
	if (live == s->n.procs)
		return;
	while ((live + 1) * 2 > ncap)
		ncap *= 2;
	n = calloc(ncap, sizeof(*n));
	if (!n)
		return;
	for (uint32_t i = 0; i < s->cap_procs; i++) {
		if (!s->procs[i].used)
			continue;
		if (s->procs[i].exited) {
			free(s->procs[i].maps); /* none: cleared at the exit */
			proc_clear_jit(s, &s->procs[i]);
			symb_labels__exe_put(s->labels, s->procs[i].exe);
		} else
			*proc_slot(s, n, ncap, s->procs[i].pid) = s->procs[i];
	}
	free(s->procs);
	s->procs = n;
	s->cap_procs = ncap;
	s->n.procs = live;
}

void symb_state__new_window(struct symb_state *s)
{
	struct symb_counters keep = s->n;
	uint64_t last_ns = s->meta.last_ns;
	uint32_t gone;

	/* the window's cgroups stay known for a while after their last sample */
	for (uint32_t i = 0; i < s->n.stacks; i++)
		symb_labels__cgroup_used(s->labels, s->aggs[i].cgroup, last_ns);

	memset(&s->n, 0, sizeof(s->n));
	/* what describes the tables and the stream, not the window's samples */
	s->n.records = keep.records;
	s->n.procs = keep.procs;
	s->n.maps = keep.maps;
	s->n.loss = keep.loss;
	s->n.have_loss = keep.have_loss;
	s->n.ring_bytes = keep.ring_bytes;
	s->n.exec = keep.exec;
	s->n.exit = keep.exit;
	s->n.skipped_resume = keep.skipped_resume;
	memset(s->naggs_kind, 0, sizeof(s->naggs_kind));
	if (s->agg_index)
		memset(s->agg_index, 0, (size_t)s->cap_agg_index * sizeof(*s->agg_index));
	s->nframes = 0;
	s->meta.first_ns = 0;
	s->meta.last_ns = 0;
	/* pids seen count per window: a set emptied, not freed */
	if (s->seen_pids)
		memset(s->seen_pids, 0, (size_t)s->cap_seen * sizeof(*s->seen_pids));
	/* no aggregated frame refers to a process or an object any more */
	procs_compact(s);
	symb_jit_names__clear(s->jit_names);
	/* a swept slot may take another object; a trimmed one loads again */
	gone = symb_objects__sweep(s->objs);
	symb_labels__sweep(s->labels, last_ns);
	gone += symb_objects__trim(s->objs, s->mem_budget);
	if (gone) {
		free(s->obj_memo);
		s->obj_memo = NULL;
	}
}

void symb_state__set_window_end(struct symb_state *s, uint64_t end_ns)
{
	s->window_end = end_ns;
}

void symb_state__jit_stats(const struct symb_state *s, struct symb_jit_stats *st)
{
	*st = s->jit_gone;
	for (uint32_t i = 0; i < s->cap_procs; i++)
		if (s->procs[i].used && s->procs[i].jit)
			jit_stats_add(st, symb_jit__stats(s->procs[i].jit));
	for (uint32_t i = 0; i < s->cap_procs; i++)
		if (s->procs[i].used && s->procs[i].jd_jit)
			jit_stats_add(st, symb_jit__stats(s->procs[i].jd_jit));
}

uint32_t symb_state__proc_nmaps(const struct symb_state *s, uint32_t pid)
{
	const struct symb_proc *p;

	if (!s->cap_procs)
		return 0;
	p = proc_slot(s, s->procs, s->cap_procs, pid);
	return p->used ? p->nmaps : 0;
}
