// SPDX-License-Identifier: MIT
/*
 * From aggregated, normalized stacks to the symbolized profile model
 * (build.h): one location per distinct frame of a kind's stacks, names
 * resolved once per location.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "build.h"
#include "build_int.h"
#include "lowprof/shard.h"
#include "debuginfo.h"
#include "lowprof/hash.h"
#include "lowprof/text.h"

#define KERNEL_MAPPING_START 0xffff000000000000ull
/* inline depth kept per location (dwarf.c's own limit is 64) */
#define SYMB_MAX_INLINE 64

/* object i's slice is [(i + 1) * SPAN, (i + 2) * SPAN): below the kernel's */
_Static_assert((SYMB_MAX_OBJS + 2ull) * SYMB_OBJ_SPAN <= KERNEL_MAPPING_START,
	       "object slices overlap the kernel mapping");

struct loc_slot {
	struct symb_frame key;
	uint32_t loc; /* index + 1; 0 = empty */
};

struct symb_built {
	struct lpw_profile p;
	struct lpw_mapping *mappings;
	struct lpw_location *locations;
	struct lpw_stack *stacks;
	uint32_t *locs; /* all stacks' location lists */
	char **names;	/* owned strings, one per location */
	const char *comments[6];
	char *comment_buf[6];
	char title[320];
	uint32_t kernel_mapping;
	uint32_t jit_mapping;  /* "[jit]": the frames JIT perf maps name */
	uint32_t *obj_mapping; /* per object: its mapping, or LPW_NO_MAPPING */
	uint64_t seed;	       /* of frame_hash */
	struct symb_build_stats n;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- locations ---------------------------------------------------------- */

static uint32_t frame_hash(const struct symb_built *b, const struct symb_frame *f)
{
	return (uint32_t)lp_mix64(lp_mix64(b->seed ^ f->addr) ^ ((uint64_t)f->kind << 32 | f->obj));
}

/* A user frame whose offset can be placed in its object's slice. */
static bool user_frame_ok(const struct symb_frame *f)
{
	return f->kind == SYMB_F_USER && f->addr < SYMB_OBJ_SPAN;
}

static char *resolve_name(struct symb_state *s, const struct symb_frame *f, bool *resolved)
{
	const char *name = NULL;
	char *out = NULL;

	*resolved = false;
	switch (f->kind) {
	case SYMB_F_KERNEL:
		name = symb_ksyms__lookup(symb_state__ksyms(s), f->addr);
		if (name) {
			*resolved = true;
			return strdup(name);
		}
		return strdup("[unknown]");
	case SYMB_F_USER: {
		struct symb_objects *t = symb_state__objects(s);
		const struct symb_obj *o = symb_objects__get(t, f->obj);

		if (user_frame_ok(f))
			name = symb_objects__symbol(t, f->obj, f->addr);
		if (name) {
			*resolved = true;
			out = symb_demangle(name);
			return out ? out : strdup(name);
		}
		if (asprintf(&out, "%s+0x%" PRIx64, o->not_found ? o->path : base_name(o->path),
			     f->addr) < 0)
			return NULL;
		return out;
	}
	case SYMB_F_JIT:
		name = symb_state__jit_name(s, f->obj);
		if (name) {
			*resolved = true;
			return strdup(name);
		}
		return strdup("[unknown]");
	default:
		return strdup("[unknown]");
	}
}

/* Location tables: grown to hold one more; 0 or -ENOMEM. */
static int locations_grow(struct symb_built *b, uint32_t *loccap)
{
	void *nl = realloc(b->locations, 2 * (size_t)*loccap * sizeof(*b->locations));
	void *nn;

	if (!nl)
		return -ENOMEM;
	b->locations = nl;
	nn = realloc(b->names, 2 * (size_t)*loccap * sizeof(*b->names));
	if (!nn)
		return -ENOMEM;
	b->names = nn;
	*loccap *= 2;
	return 0;
}

static int slots_grow(const struct symb_built *b, struct loc_slot **slots, uint32_t *cap)
{
	uint32_t ncap = *cap * 2;
	struct loc_slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < *cap; i++) {
		if (!(*slots)[i].loc)
			continue;
		for (uint32_t j = frame_hash(b, &(*slots)[i].key) & (ncap - 1);;
		     j = (j + 1) & (ncap - 1))
			if (!n[j].loc) {
				n[j] = (*slots)[i];
				break;
			}
	}
	free(*slots);
	*slots = n;
	*cap = ncap;
	return 0;
}

/*
 * Source frames from DWARF, where the object has debug information: inline
 * frames and file:line. The strings stay owned by the object table, which
 * lives as long as the state (the built profile is freed first). 0 or
 * -ENOMEM.
 */
static int add_lines(struct symb_state *s, struct lpw_location *l, const struct symb_frame *f)
{
	struct symb_srcline src[SYMB_MAX_INLINE];
	struct lpw_line *lines;
	int n;

	n = symb_objects__lines(symb_state__objects(s), f->obj, f->addr, src, SYMB_MAX_INLINE);
	if (n <= 0)
		return 0;
	lines = calloc((size_t)n, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		lines[i] = (struct lpw_line){src[i].function, src[i].file, src[i].line};
	l->lines = lines;
	l->nlines = (uint32_t)n;
	/* the containing function, as DWARF names it */
	l->function = lines[n - 1].function;
	l->resolved = true;
	return 0;
}

static int location_init(struct symb_state *s, struct symb_built *b, uint32_t nloc,
			 const struct symb_frame *f)
{
	struct lpw_location *l = &b->locations[nloc];
	bool resolved = false;

	memset(l, 0, sizeof(*l));
	l->mapping = LPW_NO_MAPPING;
	if (!f) {
		b->names[nloc] = strdup("[too many frames]");
	} else {
		b->names[nloc] = resolve_name(s, f, &resolved);
		l->address = f->addr;
		l->kernel = f->kind == SYMB_F_KERNEL;
		if (f->kind == SYMB_F_KERNEL) {
			/*
			 * relative to the kernel's text base (ingest.h): the
			 * mapping's start stands for the base; an address
			 * below the base (none on x86-64) shows as the start
			 */
			l->mapping = b->kernel_mapping;
			l->address = f->addr <= UINT64_MAX - KERNEL_MAPPING_START
					     ? KERNEL_MAPPING_START + f->addr
					     : KERNEL_MAPPING_START;
		} else if (f->kind == SYMB_F_JIT) {
			/* the JIT code's address, within the [jit] mapping's slice */
			l->mapping = b->jit_mapping;
			l->address =
				b->mappings[l->mapping].start + (f->addr & (SYMB_OBJ_SPAN - 1));
		} else if (user_frame_ok(f)) {
			l->mapping = b->obj_mapping[f->obj];
			l->address = b->mappings[l->mapping].start + f->addr;
		} else if (f->kind == SYMB_F_USER) {
			b->n.bad_offsets++; /* ingest never makes these */
		}
		if (resolved && l->mapping != LPW_NO_MAPPING)
			b->mappings[l->mapping].has_functions = true;
	}
	if (!b->names[nloc])
		return -ENOMEM;
	l->function = b->names[nloc];
	l->resolved = resolved;
	if (f && user_frame_ok(f))
		return add_lines(s, l, f);
	return 0;
}

/*
 * One location per distinct frame of the kind's stacks (aggs, in their
 * order), in first-seen order (deterministic for a given stream). Beyond
 * SYMB_MAX_LOCATIONS distinct frames, the rest share one "[too many frames]"
 * location and are counted. b->locs gets every stack's location list, one
 * after the other.
 */
static int build_locations(struct symb_state *s, struct symb_built *b,
			   const struct symb_agg *const *aggs, uint32_t naggs, size_t nframes,
			   uint32_t *nloc_out)
{
	const struct symb_frame *frames = symb_state__frames(s);
	uint32_t cap = 1024, nloc = 0, loccap = 256, overflow = UINT32_MAX;
	struct loc_slot *slots;
	size_t pos = 0;
	int err = 0;

	slots = calloc(cap, sizeof(*slots));
	b->locations = calloc(loccap, sizeof(*b->locations));
	b->names = calloc(loccap, sizeof(*b->names));
	b->locs = calloc(nframes ? nframes : 1, sizeof(*b->locs));
	if (!slots || !b->locations || !b->names || !b->locs) {
		err = -ENOMEM;
		goto out;
	}
	for (uint32_t a = 0; a < naggs; a++) {
		for (uint32_t k = 0; k < aggs[a]->nframes; k++, pos++) {
			const struct symb_frame *f = &frames[aggs[a]->first + k];
			uint32_t j = frame_hash(b, f) & (cap - 1);

			for (;; j = (j + 1) & (cap - 1)) {
				if (!slots[j].loc || memcmp(&slots[j].key, f, sizeof(*f)) == 0)
					break;
			}
			if (slots[j].loc) {
				b->locs[pos] = slots[j].loc - 1;
				continue;
			}
			if (nloc >= SYMB_MAX_LOCATIONS) {
				b->n.over_limit_frames++;
				if (overflow == UINT32_MAX) {
					if (nloc == loccap && (err = locations_grow(b, &loccap)))
						goto out;
					if ((err = location_init(s, b, nloc, NULL)))
						goto out;
					overflow = nloc++;
				}
				b->locs[pos] = overflow;
				continue;
			}
			if (nloc == loccap && (err = locations_grow(b, &loccap)))
				goto out;
			if ((err = location_init(s, b, nloc, f)))
				goto out;
			b->locs[pos] = nloc++;
			slots[j].key = *f;
			slots[j].loc = nloc;
			if ((nloc + 1) * 2 > cap && (err = slots_grow(b, &slots, &cap)))
				goto out;
		}
	}
out:
	/* the free function frees nloc names, even on error */
	*nloc_out = nloc;
	free(slots);
	return err;
}

/*
 * The objects the kind's stacks use (used[i] for object i): their user
 * frames' objects; *jit: whether they have JIT frames.
 */
static uint8_t *used_objects(const struct symb_state *s, const struct symb_agg *const *aggs,
			     uint32_t naggs, uint32_t nobjs, bool *jit)
{
	const struct symb_frame *frames = symb_state__frames(s);
	uint8_t *used = calloc(nobjs ? nobjs : 1, 1);

	if (!used)
		return NULL;
	for (uint32_t a = 0; a < naggs; a++)
		for (uint32_t k = 0; k < aggs[a]->nframes; k++) {
			const struct symb_frame *f = &frames[aggs[a]->first + k];

			if (f->kind == SYMB_F_USER)
				used[f->obj] = 1;
			else if (f->kind == SYMB_F_JIT)
				*jit = true;
		}
	return used;
}

/* The mappings of the objects the kind's stacks use, in object order. */
static int build_mappings(struct symb_state *s, struct symb_built *b,
			  const struct symb_agg *const *aggs, uint32_t naggs, uint32_t *nmap_out)
{
	struct symb_objects *t = symb_state__objects(s);
	uint32_t nobjs = symb_objects__stats(t)->slots, n = 0;
	bool jit = false;
	uint8_t *used = used_objects(s, aggs, naggs, nobjs, &jit);

	b->mappings = calloc(nobjs + 2, sizeof(*b->mappings));
	b->obj_mapping = calloc(nobjs ? nobjs : 1, sizeof(*b->obj_mapping));
	if (!used || !b->mappings || !b->obj_mapping) {
		free(used);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nobjs; i++) {
		struct lpw_mapping *m = &b->mappings[n];
		const struct symb_obj *o;

		b->obj_mapping[i] = LPW_NO_MAPPING;
		if (!used[i])
			continue;
		o = symb_objects__load(t, i);
		m->path = o->path;
		m->build_id = o->build_id[0] ? o->build_id : NULL;
		m->start = (uint64_t)(n + 1) * SYMB_OBJ_SPAN; /* n < SYMB_MAX_OBJS */
		m->limit = m->start + SYMB_OBJ_SPAN;
		m->file_offset = 0;
		b->obj_mapping[i] = n++;
	}
	free(used);
	/* the slice after the objects' (n <= SYMB_MAX_OBJS: below the kernel's) */
	b->jit_mapping = LPW_NO_MAPPING;
	if (jit) {
		b->jit_mapping = n;
		b->mappings[n].path = "[jit]";
		b->mappings[n].start = (uint64_t)(n + 1) * SYMB_OBJ_SPAN;
		b->mappings[n].limit = b->mappings[n].start + SYMB_OBJ_SPAN;
		b->mappings[n].has_functions = true;
		n++;
	}
	b->kernel_mapping = n;
	b->mappings[n].path = "[kernel.kallsyms]";
	b->mappings[n].start = KERNEL_MAPPING_START;
	b->mappings[n].limit = UINT64_MAX;
	*nmap_out = n + 1;
	return 0;
}

/*
 * The aggregates of one kind in their insertion order (the order of
 * symb_state__aggs), and their frame count. NULL with -ENOMEM in *err.
 */
static const struct symb_agg **kind_aggs(const struct symb_state *s, enum symb_kind kind,
					 size_t *nframes, int *err)
{
	uint32_t n = symb_state__naggs_kind(s, kind), nall;
	const struct symb_agg *all = symb_state__aggs(s, &nall);
	const struct symb_agg **v = calloc(n ? n : 1, sizeof(*v));

	*nframes = 0;
	*err = v ? 0 : -ENOMEM;
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < nall; i++) {
		const struct symb_agg *a = &all[i];

		if (a->kind != kind || a->seq >= n)
			continue;
		v[a->seq] = a;
		*nframes += a->nframes;
	}
	return v;
}

const char *symb_fmt_ns(char *buf, size_t cap, uint64_t ns)
{
	return lpw_fmt_ns(buf, cap, ns);
}

const char *symb_offcpu_settings(const struct symb_meta *meta, char *buf, size_t cap)
{
	char mode[sizeof(meta->offcpu.mode) + 4], a[32], b[32];
	const char *m = meta->offcpu.mode;

	if (!m[0]) {
		snprintf(buf, cap, "settings not reported");
		return buf;
	}
	lp_sanitize_name(mode, sizeof(mode), m);
	if (strcmp(m, "time") == 0)
		snprintf(buf, cap, "mode time, period %s, minimum %s",
			 symb_fmt_ns(a, sizeof(a), meta->offcpu.period_ns),
			 symb_fmt_ns(b, sizeof(b), meta->offcpu.min_ns));
	else if (strcmp(m, "event") == 0)
		snprintf(buf, cap, "mode event, rate %g, minimum %s", meta->offcpu.rate,
			 symb_fmt_ns(b, sizeof(b), meta->offcpu.min_ns));
	else
		snprintf(buf, cap, "mode %s, rate %g, period %s, minimum %s", mode,
			 meta->offcpu.rate, symb_fmt_ns(a, sizeof(a), meta->offcpu.period_ns),
			 symb_fmt_ns(b, sizeof(b), meta->offcpu.min_ns));
	return buf;
}

/*
 * Value types, period, title and comments of the profile of a kind; w: of
 * a window (its sequence number and its own losses), or NULL.
 */
static void describe(const struct symb_state *s, struct symb_built *b, enum symb_kind kind,
		     const struct symb_window *w)
{
	const struct symb_meta *m = symb_state__meta(s);
	const struct symb_counters *c = symb_state__counters(s);
	const char *host = m->hostname[0] ? m->hostname : "host";
	const struct lps_loss *l = w ? &w->loss : &c->loss;
	uint32_t nshards, shard = symb_state__shard(s, &nshards);
	char set[160];

	b->p.value_types[0] = (struct lpw_value_type){"samples", "count"};
	if (kind == SYMB_KIND_OFFCPU) {
		b->p.value_types[1] = (struct lpw_value_type){"off_cpu", "nanoseconds"};
		b->p.period_type = (struct lpw_value_type){"off_cpu", "nanoseconds"};
		/* time mode: a block of the period or longer is always sampled */
		b->p.period =
			strcmp(m->offcpu.mode, "time") == 0 && m->offcpu.period_ns <= INT64_MAX
				? (int64_t)m->offcpu.period_ns
				: 0;
		/* blocked time, not sample counts: samples stand for different times */
		b->p.folded_value = 1;
		snprintf(b->title, sizeof(b->title), "lowprof off-cpu: %s (%s)", host,
			 m->kernel_release);
		if (asprintf(&b->comment_buf[0], "lowprof: off-CPU time, %s, %u CPUs, kernel %s",
			     symb_offcpu_settings(m, set, sizeof(set)), m->ncpus,
			     m->kernel_release) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[0];
		if (c->have_loss &&
		    asprintf(&b->comment_buf[1],
			     "off-CPU: %" PRIu64 " switches seen, %" PRIu64 " sampled, %" PRIu64
			     " shorter than the minimum, %" PRIu64 " lost",
			     l->off_cpu_switches, l->off_cpu_sampled, l->off_cpu_short,
			     l->off_cpu_lost) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[1];
	} else {
		b->p.value_types[1] = (struct lpw_value_type){"cpu", "nanoseconds"};
		b->p.period_type = (struct lpw_value_type){"cpu", "nanoseconds"};
		b->p.period = m->freq_hz ? 1000000000 / m->freq_hz : 0;
		b->p.folded_value = 0;
		snprintf(b->title, sizeof(b->title), "lowprof cpu: %s (%s)", host,
			 m->kernel_release);
		if (asprintf(&b->comment_buf[0], "lowprof: %u Hz, %u CPUs, kernel %s", m->freq_hz,
			     m->ncpus, m->kernel_release) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[0];
	}
	if (c->have_loss &&
	    asprintf(&b->comment_buf[2],
		     "lost: %" PRIu64 " bpf ring full, %" PRIu64 " shm ring full, %" PRIu64
		     " stack errors, %" PRIu64 " malformed records",
		     l->bpf_ringbuf_full, l->shm_dropped, l->bpf_stack_errors, c->bad_records) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[2];
	if (w && asprintf(&b->comment_buf[3], "lowprof window %" PRIu64, w->seq) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[3];
	/* the shards of one run all see its collector's restarts: shard 0 says them */
	if (c->restarts && !shard &&
	    asprintf(&b->comment_buf[4],
		     "lowprof: the collector started again %" PRIu64
		     " times in this profile: what it did not sample meanwhile is missing",
		     c->restarts) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[4];
	/* pprof has no title: a shard's, for lowprof to give the merged profile */
	if (nshards && !w && asprintf(&b->comment_buf[5], "%s%s", LP_SHARD_TITLE, b->title) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[5];
	b->p.title = b->title;
	b->p.comments = b->comments;
}

struct symb_built *symb_build(struct symb_state *s, enum symb_kind kind)
{
	return symb_build_window(s, kind, NULL);
}

struct symb_built *symb_build_window(struct symb_state *s, enum symb_kind kind,
				     const struct symb_window *w)
{
	const struct symb_meta *m = symb_state__meta(s);
	struct symb_built *b = calloc(1, sizeof(*b));
	const struct symb_agg **aggs = NULL;
	uint32_t nmap = 0, nloc = 0, naggs;
	size_t nframes = 0, off = 0;
	int err;

	if (!b)
		return NULL;
	if (kind >= SYMB_KIND__COUNT || symb_state__finished(s)) {
		free(b);
		errno = EINVAL;
		return NULL;
	}
	/* a hash of frames this build alone steers: the layout only */
	b->seed = lp_mix64((uint64_t)(uintptr_t)b ^ (uint64_t)kind);
	naggs = symb_state__naggs_kind(s, kind);
	aggs = kind_aggs(s, kind, &nframes, &err);
	if (!err)
		err = build_mappings(s, b, aggs, naggs, &nmap);
	if (!err)
		err = build_locations(s, b, aggs, naggs, nframes, &nloc);
	b->p.nlocations = nloc; /* names to free, even on error */
	symb_objects__store_lines(symb_state__objects(s));
	if (!err) {
		b->stacks = calloc(naggs ? naggs : 1, sizeof(*b->stacks));
		if (!b->stacks)
			err = -ENOMEM;
	}
	if (err) {
		free(aggs);
		symb_built_free(b);
		errno = -err;
		return NULL;
	}
	/*
	 * Frames are stored kernel leaf .. kernel root, user leaf .. user
	 * root: already leaf first, as the model wants. Stacks keep their
	 * first-seen order; build_locations laid their location lists out in
	 * that order.
	 */
	for (uint32_t i = 0; i < naggs; i++) {
		const struct symb_agg *a = aggs[i];
		struct lpw_stack *st = &b->stacks[i];

		const struct symb_cgroup *cg = symb_state__cgroup(s, a->cgroup);

		st->pid = a->pid;
		st->comm = a->comm;
		st->exe = symb_state__exe(s, a->exe);
		if (cg) {
			st->cgroup = cg->path;
			st->container_id = cg->container_id;
			st->pod_uid = cg->pod_uid;
		}
		st->locs = &b->locs[off];
		st->nlocs = a->nframes;
		st->values[0] = (int64_t)a->count;
		st->values[1] = (int64_t)a->weight;
		off += a->nframes;
	}
	free(aggs);
	b->p.mappings = b->mappings;
	b->p.nmappings = nmap;
	b->p.locations = b->locations;
	b->p.stacks = b->stacks;
	b->p.nstacks = naggs;
	b->p.time_nanos = (int64_t)m->start_real_ns;
	b->p.duration_nanos = (int64_t)((m->end_ns > m->start_mono_ns ? m->end_ns : m->last_ns) -
					(m->start_mono_ns ? m->start_mono_ns : m->first_ns));
	if (w) {
		b->p.time_nanos = w->start_real_ns;
		b->p.duration_nanos = w->duration_ns;
	}
	if (b->p.duration_nanos < 0)
		b->p.duration_nanos = 0;
	describe(s, b, kind, w);
	return b;
}

const struct lpw_profile *symb_built_profile(const struct symb_built *b)
{
	return &b->p;
}

const struct symb_build_stats *symb_built_stats(const struct symb_built *b)
{
	return &b->n;
}

void symb_built_free(struct symb_built *b)
{
	if (!b)
		return;
	if (b->names)
		for (size_t i = 0; i < b->p.nlocations; i++)
			free(b->names[i]);
	if (b->locations)
		for (size_t i = 0; i < b->p.nlocations; i++)
			free((void *)b->locations[i].lines);
	free(b->names);
	free(b->mappings);
	free(b->obj_mapping);
	free(b->locations);
	free(b->stacks);
	free(b->locs);
	for (size_t i = 0; i < sizeof(b->comment_buf) / sizeof(b->comment_buf[0]); i++)
		free(b->comment_buf[i]);
	free(b);
}
