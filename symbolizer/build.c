// SPDX-License-Identifier: MIT
/*
 * From aggregated, normalized stacks to the symbolized profile model, one
 * profile per sample kind (on-CPU, off-CPU): one location per distinct frame
 * of its stacks, names resolved once per location (ELF symbols for user
 * frames, the kernel snapshot for kernel frames), and the end-of-run
 * summary.
 *
 * Objects are opened by objects.c; names printed to a terminal are
 * sanitized here.
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

#include "cache.h"
#include "debuginfo.h"
#include "lowprof/log.h"
#include "lowprof/text.h"
#include "symb_int.h"

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
	const char *comments[4];
	char *comment_buf[4];
	char title[320];
	uint32_t kernel_mapping;
};

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- locations ---------------------------------------------------------- */

static uint32_t frame_hash(const struct symb_state *s, const struct symb_frame *f)
{
	return (uint32_t)symb_mix64(symb_mix64(s->seed ^ f->addr) ^
				    ((uint64_t)f->kind << 32 | f->obj));
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
		name = symb_ksym_lookup(s, f->addr);
		if (name) {
			*resolved = true;
			return strdup(name);
		}
		return strdup("[unknown]");
	case SYMB_F_USER: {
		struct symb_obj *o = &s->objs[f->obj];
		uint64_t vaddr;

		if (user_frame_ok(f)) {
			symb_obj_load(s, o);
			if (o->elf && symb_elf__offset_to_vaddr(o->elf, f->addr, &vaddr) == 0)
				name = symb_elf__symbolize(o->elf, vaddr, NULL);
		}
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

static int slots_grow(const struct symb_state *s, struct loc_slot **slots, uint32_t *cap)
{
	uint32_t ncap = *cap * 2;
	struct loc_slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < *cap; i++) {
		if (!(*slots)[i].loc)
			continue;
		for (uint32_t j = frame_hash(s, &(*slots)[i].key) & (ncap - 1);;
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
 * The cache key of an object's DWARF results is the one objects.c gave its
 * tables: the content identity of the binary, and of the debug file whose
 * DWARF it is ("c:<B>" or "c:<B>+<D>", cache.h). libdw reads only a file
 * of that identity (objects.c's dwarf_start), else nothing learnt is
 * stored. Objects with no key keep their results for this run only.
 */

/*
 * Before an object's first DWARF lookup: the results earlier runs stored,
 * so that the addresses they cover need no libdw (which inflates and
 * indexes the whole debug file when it starts).
 */
static void lines_load(struct symb_state *s, struct symb_obj *o)
{
	uint8_t *blob = NULL;
	size_t len = 0;
	int err;

	o->lines_loaded = true;
	if (!s->cache || !o->key ||
	    symb_cache__get(s->cache, o->key, SYMB_CACHE_LINES, SYMB_DWARF_LINES_BLOB_VERSION,
			    &blob, &len))
		return;
	err = symb_dwarf__load_lines(o->dwarf, blob, len);
	free(blob);
	if (err == -EBADMSG)
		s->n.cache_bad++; /* replaced by this run's results */
	else if (!err)
		s->n.lines_cache_hits++;
}

/*
 * After a profile's lookups: the DWARF results of objects that learned
 * addresses, stored for the next run (all of an object's results, those
 * it loaded included); and how many objects started libdw.
 */
static void lines_store(struct symb_state *s)
{
	uint8_t *blob;
	size_t len;

	s->n.dwarf_started = 0;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct symb_obj *o = &s->objs[i];

		if (!o->dwarf)
			continue;
		s->n.dwarf_started += symb_dwarf__opened(o->dwarf);
		if (!s->cache || !o->key || !symb_dwarf__lines_changed(o->dwarf) ||
		    symb_dwarf__encode_lines(o->dwarf, &blob, &len))
			continue;
		if (symb_cache__put(s->cache, o->key, SYMB_CACHE_LINES,
				    SYMB_DWARF_LINES_BLOB_VERSION, blob, len) == 0)
			s->n.lines_stored++;
		free(blob);
	}
}

/*
 * Source frames from DWARF, where the object has debug information: inline
 * frames and file:line. The strings stay owned by the object's DWARF, which
 * lives as long as the state (the built profile is freed first). 0 or
 * -ENOMEM.
 */
static int add_lines(struct symb_state *s, struct lpw_location *l, const struct symb_frame *f)
{
	struct symb_srcline src[SYMB_MAX_INLINE];
	struct symb_obj *o = &s->objs[f->obj];
	struct lpw_line *lines;
	uint64_t vaddr;
	int n;

	if (!o->dwarf || !o->elf || symb_elf__offset_to_vaddr(o->elf, f->addr, &vaddr))
		return 0;
	if (!o->lines_loaded)
		lines_load(s, o);
	n = symb_dwarf__lookup(o->dwarf, vaddr, src, SYMB_MAX_INLINE);
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
			 * relative to the kernel's text base (state.c): the
			 * mapping's start stands for the base; an address
			 * below the base (none on x86-64) shows as the start
			 */
			l->mapping = b->kernel_mapping;
			l->address = f->addr <= UINT64_MAX - KERNEL_MAPPING_START
					     ? KERNEL_MAPPING_START + f->addr
					     : KERNEL_MAPPING_START;
		} else if (user_frame_ok(f)) {
			l->mapping = s->objs[f->obj].mapping;
			l->address = b->mappings[l->mapping].start + f->addr;
		} else if (f->kind == SYMB_F_USER) {
			s->n.bad_offsets++; /* state.c never makes these */
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
			const struct symb_frame *f = &s->frames[aggs[a]->first + k];
			uint32_t j = frame_hash(s, f) & (cap - 1);

			for (;; j = (j + 1) & (cap - 1)) {
				if (!slots[j].loc || memcmp(&slots[j].key, f, sizeof(*f)) == 0)
					break;
			}
			if (slots[j].loc) {
				b->locs[pos] = slots[j].loc - 1;
				continue;
			}
			if (nloc >= SYMB_MAX_LOCATIONS) {
				s->n.over_limit_frames++;
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
			if ((nloc + 1) * 2 > cap && (err = slots_grow(s, &slots, &cap)))
				goto out;
		}
	}
out:
	/* the free function frees nloc names, even on error */
	*nloc_out = nloc;
	free(slots);
	return err;
}

/* The mappings of the objects the kind's stacks use. */
static int build_mappings(struct symb_state *s, struct symb_built *b, enum symb_kind kind,
			  uint32_t *nmap_out)
{
	uint32_t n = 0;

	b->mappings = calloc(s->nobjs + 1, sizeof(*b->mappings));
	if (!b->mappings)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct symb_obj *o = &s->objs[i];
		struct lpw_mapping *m = &b->mappings[n];

		o->mapping = LPW_NO_MAPPING;
		if (!(o->used_kinds & 1u << kind))
			continue;
		symb_obj_load(s, o);
		m->path = o->path;
		m->build_id = o->build_id[0] ? o->build_id : NULL;
		m->start = (uint64_t)(n + 1) * SYMB_OBJ_SPAN; /* n < SYMB_MAX_OBJS */
		m->limit = m->start + SYMB_OBJ_SPAN;
		m->file_offset = 0;
		o->mapping = n++;
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
 * s->aggs), and their frame count. NULL with -ENOMEM in *err.
 */
static const struct symb_agg **kind_aggs(const struct symb_state *s, enum symb_kind kind,
					 size_t *nframes, int *err)
{
	uint32_t n = s->naggs_kind[kind];
	const struct symb_agg **v = calloc(n ? n : 1, sizeof(*v));

	*nframes = 0;
	*err = v ? 0 : -ENOMEM;
	if (!v)
		return NULL;
	for (uint32_t i = 0; i < s->naggs; i++) {
		const struct symb_agg *a = &s->aggs[i];

		if (a->kind != kind || a->seq >= n)
			continue;
		v[a->seq] = a;
		*nframes += a->nframes;
	}
	return v;
}

/* x ns as "1.23 s", "4.56 ms", "7.89 us" or "12 ns". Returns buf. */
static const char *fmt_ns(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, cap, "%.2f ms", ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, cap, "%.2f us", ns / 1e3);
	else
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	return buf;
}

/*
 * The collector's off-CPU settings as "mode time, period 1.00 ms, minimum
 * 10.00 us", or "settings not reported" (a stream before schema 1.2). The
 * mode comes from the stream: it is printed as sanitized.
 */
static const char *offcpu_settings(const struct symb_state *s, char *buf, size_t cap)
{
	char mode[sizeof(s->offcpu_meta.mode) + 4], a[32], b[32];
	const char *m = s->offcpu_meta.mode;

	if (!m[0]) {
		snprintf(buf, cap, "settings not reported");
		return buf;
	}
	symb_sanitize_name(mode, sizeof(mode), m);
	if (strcmp(m, "time") == 0)
		snprintf(buf, cap, "mode time, period %s, minimum %s",
			 fmt_ns(a, sizeof(a), s->offcpu_meta.period_ns),
			 fmt_ns(b, sizeof(b), s->offcpu_meta.min_ns));
	else if (strcmp(m, "event") == 0)
		snprintf(buf, cap, "mode event, rate %g, minimum %s", s->offcpu_meta.rate,
			 fmt_ns(b, sizeof(b), s->offcpu_meta.min_ns));
	else
		snprintf(buf, cap, "mode %s, rate %g, period %s, minimum %s", mode,
			 s->offcpu_meta.rate, fmt_ns(a, sizeof(a), s->offcpu_meta.period_ns),
			 fmt_ns(b, sizeof(b), s->offcpu_meta.min_ns));
	return buf;
}

/* Value types, period, title and comments of the profile of a kind. */
static void describe(const struct symb_state *s, struct symb_built *b, enum symb_kind kind)
{
	const char *host = s->hostname[0] ? s->hostname : "host";
	const struct lps_loss *l = &s->n.loss;
	char set[160];

	b->p.value_types[0] = (struct lpw_value_type){"samples", "count"};
	if (kind == SYMB_KIND_OFFCPU) {
		b->p.value_types[1] = (struct lpw_value_type){"off_cpu", "nanoseconds"};
		b->p.period_type = (struct lpw_value_type){"off_cpu", "nanoseconds"};
		/* time mode: a block of the period or longer is always sampled */
		b->p.period = strcmp(s->offcpu_meta.mode, "time") == 0 &&
					      s->offcpu_meta.period_ns <= INT64_MAX
				      ? (int64_t)s->offcpu_meta.period_ns
				      : 0;
		/* blocked time, not sample counts: samples stand for different times */
		b->p.folded_value = 1;
		snprintf(b->title, sizeof(b->title), "lowprof off-cpu: %s (%s)", host,
			 s->kernel_release);
		if (asprintf(&b->comment_buf[0], "lowprof: off-CPU time, %s, %u CPUs, kernel %s",
			     offcpu_settings(s, set, sizeof(set)), s->ncpus,
			     s->kernel_release) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[0];
		if (s->n.have_loss &&
		    asprintf(&b->comment_buf[1],
			     "off-CPU: %" PRIu64 " switches seen, %" PRIu64 " sampled, %" PRIu64
			     " shorter than the minimum, %" PRIu64 " lost",
			     l->off_cpu_switches, l->off_cpu_sampled, l->off_cpu_short,
			     l->off_cpu_lost) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[1];
	} else {
		b->p.value_types[1] = (struct lpw_value_type){"cpu", "nanoseconds"};
		b->p.period_type = (struct lpw_value_type){"cpu", "nanoseconds"};
		b->p.period = s->freq_hz ? 1000000000 / s->freq_hz : 0;
		b->p.folded_value = 0;
		snprintf(b->title, sizeof(b->title), "lowprof cpu: %s (%s)", host,
			 s->kernel_release);
		if (asprintf(&b->comment_buf[0], "lowprof: %u Hz, %u CPUs, kernel %s", s->freq_hz,
			     s->ncpus, s->kernel_release) >= 0)
			b->comments[b->p.ncomments++] = b->comment_buf[0];
	}
	if (s->n.have_loss &&
	    asprintf(&b->comment_buf[2],
		     "lost: %" PRIu64 " bpf ring full, %" PRIu64 " shm ring full, %" PRIu64
		     " stack errors, %" PRIu64 " malformed records",
		     l->bpf_ringbuf_full, l->shm_dropped, l->bpf_stack_errors,
		     s->n.bad_records) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[2];
	b->p.title = b->title;
	b->p.comments = b->comments;
}

struct symb_built *symb_build(struct symb_state *s, enum symb_kind kind)
{
	struct symb_built *b = calloc(1, sizeof(*b));
	const struct symb_agg **aggs = NULL;
	uint32_t nmap = 0, nloc = 0, naggs;
	size_t nframes = 0, off = 0;
	int err;

	if (!b)
		return NULL;
	if (kind >= SYMB_KIND__COUNT) {
		free(b);
		errno = EINVAL;
		return NULL;
	}
	naggs = s->naggs_kind[kind];
	aggs = kind_aggs(s, kind, &nframes, &err);
	if (!err)
		err = build_mappings(s, b, kind, &nmap);
	if (!err)
		err = build_locations(s, b, aggs, naggs, nframes, &nloc);
	b->p.nlocations = nloc; /* names to free, even on error */
	lines_store(s);
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

		st->pid = a->pid;
		st->comm = a->comm;
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
	b->p.time_nanos = (int64_t)s->start_real_ns;
	b->p.duration_nanos = (int64_t)((s->end_ns > s->start_mono_ns ? s->end_ns : s->last_ns) -
					(s->start_mono_ns ? s->start_mono_ns : s->first_ns));
	if (b->p.duration_nanos < 0)
		b->p.duration_nanos = 0;
	describe(s, b, kind);
	return b;
}

const struct lpw_profile *symb_built_profile(const struct symb_built *b)
{
	return &b->p;
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
	free(b->locations);
	free(b->stacks);
	free(b->locs);
	for (int i = 0; i < 4; i++)
		free(b->comment_buf[i]);
	free(b);
}

/* ---- summary ------------------------------------------------------------ */

struct fn_total {
	const char *name;
	bool kernel;
	uint64_t self, total;
	uint64_t stamp; /* last stack that counted it in total */
};

static int cmp_str(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->kernel - (int)y->kernel;
}

static int cmp_self(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return cmp_str(a, b);
}

static int cmp_total(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return cmp_str(a, b);
}

char *symb_sanitize_name(char *dst, size_t cap, const char *name)
{
	return lp_sanitize(dst, cap < SYMB_NAME_PRINT_MAX + 4 ? cap : SYMB_NAME_PRINT_MAX + 4, name,
			   strlen(name));
}

static void print_top(int fd, const char *what, struct fn_total *f, size_t n, uint64_t all,
		      bool self)
{
	char name[SYMB_NAME_PRINT_MAX + 4];

	dprintf(fd, "Top functions by %s:\n", what);
	for (size_t i = 0; i < n && i < 10; i++) {
		uint64_t v = self ? f[i].self : f[i].total;

		if (!v)
			break;
		dprintf(fd, "  %6.2f%%  %8" PRIu64 "  %s%s\n", all ? 100.0 * v / all : 0.0, v,
			symb_sanitize_name(name, sizeof(name), f[i].name),
			f[i].kernel ? " [k]" : "");
	}
}

/* ", N what" when N is not 0: the optional parts of the "other losses" line. */
static void print_extra(int fd, uint64_t n, const char *what)
{
	if (n)
		dprintf(fd, ", %" PRIu64 " %s", n, what);
}

static void print_other_losses(const struct symb_state *s, int fd)
{
	const struct symb_counters *c = &s->n;
	const struct lps_loss *l = &c->loss;

	if (!(l->bpf_stack_errors || c->bad_records || c->unknown_records || l->maps_errors ||
	      l->bad_consumer_pos || l->bpf_task_lost || l->kstacks_hidden || c->bad_mappings ||
	      c->bad_offsets || c->over_limit_mappings || c->over_limit_samples ||
	      c->over_limit_ksyms || c->over_limit_frames || c->unknown_kinds))
		return;
	dprintf(fd,
		"  other losses    %" PRIu64 " stack errors, %" PRIu64
		" malformed records, %" PRIu64 " unknown records, %" PRIu64
		" unreadable /proc/PID/maps, %" PRIu64 " exec/exit events, %" PRIu64
		" invalid ring positions",
		l->bpf_stack_errors, c->bad_records, c->unknown_records, l->maps_errors,
		l->bpf_task_lost, l->bad_consumer_pos);
	print_extra(fd, l->kstacks_hidden, "kernel stacks left out (kernel addresses hidden)");
	print_extra(fd, c->bad_mappings, "overlapping mappings");
	print_extra(fd, c->bad_offsets, "frames at impossible file offsets");
	print_extra(fd, c->over_limit_mappings, "mappings over limits");
	print_extra(fd, c->over_limit_samples, "samples over limits");
	print_extra(fd, c->over_limit_ksyms, "kernel symbols over limits");
	print_extra(fd, c->over_limit_frames, "frames over limits");
	print_extra(fd, c->unknown_kinds, "samples of unknown kinds");
	dprintf(fd, "\n");
}

/*
 * What the collector did where the kernel lacked a feature (meta fallbacks),
 * once each, and how many stack copies took the fail-closed bounds.
 */
static void print_fallbacks(const struct symb_state *s, int fd)
{
	const struct lps_loss *l = &s->n.loss;
	char name[LPS_MAX_FALLBACK_NAME + 4];

	for (uint32_t i = 0; i < s->nfallbacks; i++) {
		const char *text = lps_fallback_text(
			(struct lps_str){s->fallbacks[i], (uint32_t)strlen(s->fallbacks[i])});

		dprintf(fd, "  fallback        %s\n",
			text ? text : symb_sanitize_name(name, sizeof(name), s->fallbacks[i]));
	}
	if (l->ustack_fp_fallback)
		dprintf(fd,
			"  stack copies    %" PRIu64
			" not made (no stack top known above the stack "
			"pointer): frame-pointer walks instead\n",
			l->ustack_fp_fallback);
}

/* How user stacks were unwound, and why walks ended before the outermost frame. */
static void print_unwinding(const struct symb_state *s, int fd)
{
	const struct symb_counters *c = &s->n;
	uint64_t early = c->unwound - c->unwind_stops[SYMB_STOP_END];

	if (!c->unwound)
		return;
	dprintf(fd,
		"  user stacks     %" PRIu64 " unwound, %" PRIu64
		" to the outermost frame (%.1f%%)",
		c->unwound, c->unwind_stops[SYMB_STOP_END],
		100.0 * (double)c->unwind_stops[SYMB_STOP_END] / (double)c->unwound);
	if (c->unwind_fp_frames)
		dprintf(fd, ", %" PRIu64 " frames by frame pointers", c->unwind_fp_frames);
	dprintf(fd, "\n");
	if (!early)
		return;
	dprintf(fd, "  ended early     ");
	for (int r = 0, first = 1; r < SYMB_STOP__COUNT; r++) {
		if (r == SYMB_STOP_END || !c->unwind_stops[r])
			continue;
		dprintf(fd, "%s%s %" PRIu64, first ? "" : ", ", symb_unwind_stop_name(r),
			c->unwind_stops[r]);
		first = 0;
	}
	dprintf(fd, "\n");
}

/* Where symbols and stack deltas came from: the files or the cache. */
static void print_objects(const struct symb_state *s, int fd)
{
	const struct symb_counters *c = &s->n;

	if (!c->parsed_symbols && !c->parsed_deltas && !c->cache_hits && !c->unreadable_objs &&
	    !c->mismatched_objs)
		return;
	dprintf(fd,
		"  binaries        loaded in %.1f ms: %" PRIu64 " tables from the cache, %" PRIu64
		" parsed (%" PRIu64 " symbol, %" PRIu64 " stack-delta), %" PRIu64 " stored",
		c->load_ns / 1e6, c->cache_hits, c->parsed_symbols + c->parsed_deltas,
		c->parsed_symbols, c->parsed_deltas, c->cache_stored);
	print_extra(fd, c->cache_bad, "bad cache rows");
	print_extra(fd, c->unreadable_objs, "unreadable");
	print_extra(fd, c->mismatched_objs, "not found by build-id");
	dprintf(fd, "%s\n", s->cache ? "" : " (no cache)");
	if (c->lines_cache_hits || c->lines_stored || c->dwarf_started)
		dprintf(fd,
			"  source lines    DWARF results of %" PRIu64
			" binaries from the cache, %" PRIu64 " stored; DWARF read from %" PRIu64
			" files\n",
			c->lines_cache_hits, c->lines_stored, c->dwarf_started);
}

/* Top functions of the on-CPU profile, by self and by total samples. */
static void print_top_functions(const struct symb_state *s, const struct lpw_profile *p, int fd)
{
	struct fn_total *fns = NULL;
	uint32_t *fn_of_loc = NULL;
	size_t nfns = 0;

	if (!p || !p->nstacks || !s->n.samples)
		return;

	/* functions by name: map each location to one entry */
	fns = calloc(p->nlocations, sizeof(*fns));
	fn_of_loc = calloc(p->nlocations, sizeof(*fn_of_loc));
	if (!fns || !fn_of_loc)
		goto out;
	{
		struct fn_total *sorted = calloc(p->nlocations, sizeof(*sorted));

		if (!sorted)
			goto out;
		for (size_t i = 0; i < p->nlocations; i++) {
			sorted[i].name = p->locations[i].function;
			sorted[i].kernel = p->locations[i].kernel;
			sorted[i].self = i; /* remember the location while sorting */
		}
		qsort(sorted, p->nlocations, sizeof(*sorted), cmp_str);
		for (size_t i = 0; i < p->nlocations; i++) {
			if (!nfns || cmp_str(&fns[nfns - 1], &sorted[i]))
				fns[nfns++] = (struct fn_total){sorted[i].name, sorted[i].kernel};
			fn_of_loc[sorted[i].self] = (uint32_t)(nfns - 1);
		}
		free(sorted);
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		uint64_t v = (uint64_t)st->values[0];

		if (!st->nlocs)
			continue;
		fns[fn_of_loc[st->locs[0]]].self += v;
		for (uint32_t j = 0; j < st->nlocs; j++) {
			struct fn_total *f = &fns[fn_of_loc[st->locs[j]]];

			if (f->stamp != i + 1) {
				f->total += v;
				f->stamp = i + 1;
			}
		}
	}
	qsort(fns, nfns, sizeof(*fns), cmp_self);
	print_top(fd, "self", fns, nfns, s->n.samples, true);
	qsort(fns, nfns, sizeof(*fns), cmp_total);
	print_top(fd, "total", fns, nfns, s->n.samples, false);
out:
	free(fns);
	free(fn_of_loc);
}

/* ---- off-CPU summary ---------------------------------------------------- */

/* User frames shown per blocking stack (the innermost ones). */
#define BLOCK_USER_FRAMES 3
#define BLOCK_TOP	  5

/*
 * A blocking stack as the summary shows it: the process name, the innermost
 * user frames and the kernel function it blocked in. Stacks that look the
 * same (other pids, other call sites in the same functions) are merged.
 */
struct block_total {
	const char *comm;
	const char *user[BLOCK_USER_FRAMES]; /* innermost first; NULL past nuser */
	uint32_t nuser;
	const char *kernel; /* NULL: no kernel frames */
	uint64_t ns;
};

/*
 * Kernel frames of the switch itself (the scheduler, the tracepoint, the BPF
 * program) say nothing about why a thread blocked: the first frame below
 * them does (futex_wait_queue, ep_poll, pipe_read, do_nanosleep...).
 */
static bool is_switch_frame(const char *name)
{
	static const char *const prefixes[] = {
		"finish_task_switch", "__switch_to", "context_switch", "__traceiter_", "trace_",
		"perf_trace_",	      "bpf_",	     "__bpf_",
	};

	if (strstr(name, "schedule"))
		return true; /* __schedule, schedule_timeout, io_schedule... */
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static void block_of(const struct lpw_profile *p, const struct lpw_stack *st,
		     struct block_total *out)
{
	uint32_t j = 0;

	memset(out, 0, sizeof(*out));
	out->comm = st->comm;
	out->ns = st->values[1] > 0 ? (uint64_t)st->values[1] : 0;
	for (; j < st->nlocs && p->locations[st->locs[j]].kernel; j++)
		if (!out->kernel && !is_switch_frame(p->locations[st->locs[j]].function))
			out->kernel = p->locations[st->locs[j]].function;
	if (!out->kernel && j)
		out->kernel = p->locations[st->locs[0]].function; /* only switch frames */
	for (; j < st->nlocs && out->nuser < BLOCK_USER_FRAMES; j++)
		out->user[out->nuser++] = p->locations[st->locs[j]].function;
}

static int cmp_opt_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int cmp_block_key(const void *a, const void *b)
{
	const struct block_total *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	if (!c)
		c = cmp_opt_str(x->kernel, y->kernel);
	if (!c && x->nuser != y->nuser)
		c = x->nuser < y->nuser ? -1 : 1;
	for (uint32_t i = 0; !c && i < x->nuser; i++)
		c = strcmp(x->user[i], y->user[i]);
	return c;
}

static int cmp_block_ns(const void *a, const void *b)
{
	const struct block_total *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return cmp_block_key(a, b);
}

/* "  12.34%  1.23 s  comm: outer > inner > leaf > blocked_in [k]" */
static void print_block(int fd, const struct block_total *t, uint64_t all)
{
	char name[SYMB_NAME_PRINT_MAX + 4], ns[32];

	dprintf(fd, "  %6.2f%%  %10s  %s:", all ? 100.0 * (double)t->ns / (double)all : 0.0,
		fmt_ns(ns, sizeof(ns), t->ns), symb_sanitize_name(name, sizeof(name), t->comm));
	for (uint32_t i = t->nuser; i-- > 0;)
		dprintf(fd, " %s%s", symb_sanitize_name(name, sizeof(name), t->user[i]),
			i || t->kernel ? " >" : "");
	if (t->kernel)
		dprintf(fd, " %s [k]", symb_sanitize_name(name, sizeof(name), t->kernel));
	dprintf(fd, "\n");
}

/* The stacks that were blocked longest (merged as block_total says). */
static void print_top_blocking(const struct symb_state *s, const struct lpw_profile *p, int fd)
{
	struct block_total *t;
	size_t n = 0;

	if (!p || !p->nstacks || !s->n.offcpu_ns)
		return;
	t = calloc(p->nstacks, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < p->nstacks; i++) {
		block_of(p, &p->stacks[i], &t[i]);
	}
	qsort(t, p->nstacks, sizeof(*t), cmp_block_key);
	for (size_t i = 0; i < p->nstacks; i++) {
		if (n && cmp_block_key(&t[n - 1], &t[i]) == 0)
			t[n - 1].ns += t[i].ns;
		else
			t[n++] = t[i];
	}
	qsort(t, n, sizeof(*t), cmp_block_ns);
	dprintf(fd, "Top blocking stacks by off-CPU time:\n");
	for (size_t i = 0; i < n && i < BLOCK_TOP && t[i].ns; i++)
		print_block(fd, &t[i], s->n.offcpu_ns);
	free(t);
}

/* Off-CPU time, settings and counters; or the samples ignored without --off-cpu. */
static void print_offcpu(const struct symb_state *s, int fd)
{
	const struct lps_loss *l = &s->n.loss;
	char set[160], ns[32];

	if (!s->off_cpu) {
		if (s->n.offcpu_ignored)
			dprintf(fd,
				"  off-CPU samples %" PRIu64
				" ignored (the symbolizer was not started with --off-cpu)\n",
				s->n.offcpu_ignored);
		return;
	}
	dprintf(fd, "  off-CPU         %s in %" PRIu64 " samples (%s)\n",
		fmt_ns(ns, sizeof(ns), s->n.offcpu_ns), s->n.offcpu_samples,
		offcpu_settings(s, set, sizeof(set)));
	if (s->n.have_loss)
		dprintf(fd,
			"  off-CPU blocks  %" PRIu64 " switches seen, %" PRIu64 " sampled, %" PRIu64
			" shorter than the minimum, %" PRIu64 " lost\n",
			l->off_cpu_switches, l->off_cpu_sampled, l->off_cpu_short, l->off_cpu_lost);
	if (s->have_meta && !s->offcpu_meta.on && !s->n.offcpu_samples)
		dprintf(fd, "  note: the collector did not record off-CPU samples\n");
}

void symb_print_summary(const struct symb_state *s, const struct symb_built *cpu,
			const struct symb_built *offcpu, int fd)
{
	const struct lpw_profile *p = cpu ? &cpu->p : offcpu ? &offcpu->p : NULL;
	double secs = p ? p->duration_nanos / 1e9 : 0;
	const struct lps_loss *l = &s->n.loss;

	dprintf(fd, "\nlowprof summary\n");
	dprintf(fd, "  duration        %.2f s\n", secs);
	dprintf(fd, "  samples         %" PRIu64 " (%.3f s of CPU)\n", s->n.samples,
		s->n.weight_ns / 1e9);
	print_offcpu(s, fd);
	dprintf(fd, "  processes seen  %u\n", s->nseen);
	dprintf(fd,
		"  samples lost    %" PRIu64 " (BPF ring full %" PRIu64
		", shared ring full %" PRIu64 ")\n",
		l->bpf_ringbuf_full + l->shm_dropped, l->bpf_ringbuf_full, l->shm_dropped);
	print_other_losses(s, fd);
	print_fallbacks(s, fd);
	if (s->n.unmapped_frames)
		dprintf(fd, "  unmapped frames %" PRIu64 " (shown as [unknown])\n",
			s->n.unmapped_frames);
	print_unwinding(s, fd);
	print_objects(s, fd);
	if (s->bpf_mem_bytes)
		dprintf(fd, "  BPF memory      %.1f MiB\n", s->bpf_mem_bytes / 1048576.0);
	if (!s->n.have_loss)
		dprintf(fd, "  note: no loss counters received (collector stopped early?)\n");
	print_top_functions(s, cpu ? &cpu->p : NULL, fd);
	if (s->off_cpu)
		print_top_blocking(s, offcpu ? &offcpu->p : NULL, fd);
}
