// SPDX-License-Identifier: MIT
/*
 * From aggregated, normalized stacks to the symbolized profile model: one
 * location per distinct frame, names resolved once per location (ELF
 * symbols for user frames, the kernel snapshot for kernel frames), and the
 * end-of-run summary.
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

#include "dwarf.h"
#include "lowprof/log.h"
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
	struct symb_profile p;
	struct symb_mapping *mappings;
	struct symb_location *locations;
	struct symb_stack *stacks;
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
		if (asprintf(&out, "%s+0x%" PRIx64, base_name(o->path), f->addr) < 0)
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

/* Fills location nloc for frame f: 0 or -ENOMEM. */
/*
 * Source frames from DWARF, where the object has debug information: inline
 * frames and file:line. The strings stay owned by the object's DWARF, which
 * lives as long as the state (the built profile is freed first). 0 or
 * -ENOMEM.
 */
static int add_lines(struct symb_state *s, struct symb_location *l, const struct symb_frame *f)
{
	struct symb_srcline src[SYMB_MAX_INLINE];
	struct symb_obj *o = &s->objs[f->obj];
	struct symb_line *lines;
	uint64_t vaddr;
	int n;

	if (!o->dwarf || !o->elf || symb_elf__offset_to_vaddr(o->elf, f->addr, &vaddr))
		return 0;
	n = symb_dwarf__lookup(o->dwarf, vaddr, src, SYMB_MAX_INLINE);
	if (n <= 0)
		return 0;
	lines = calloc((size_t)n, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (int i = 0; i < n; i++)
		lines[i] = (struct symb_line){src[i].function, src[i].file, src[i].line};
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
	struct symb_location *l = &b->locations[nloc];
	bool resolved = false;

	memset(l, 0, sizeof(*l));
	l->mapping = SYMB_NO_MAPPING;
	if (!f) {
		b->names[nloc] = strdup("[too many frames]");
	} else {
		b->names[nloc] = resolve_name(s, f, &resolved);
		l->address = f->addr;
		l->kernel = f->kind == SYMB_F_KERNEL;
		if (f->kind == SYMB_F_KERNEL) {
			l->mapping = b->kernel_mapping;
		} else if (user_frame_ok(f)) {
			l->mapping = s->objs[f->obj].mapping;
			l->address = b->mappings[l->mapping].start + f->addr;
		} else if (f->kind == SYMB_F_USER) {
			s->n.bad_offsets++; /* state.c never makes these */
		}
		if (resolved && l->mapping != SYMB_NO_MAPPING)
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
 * One location per distinct frame, in first-seen order (deterministic for a
 * given stream). Beyond SYMB_MAX_LOCATIONS distinct frames, the rest share
 * one "[too many frames]" location and are counted.
 */
static int build_locations(struct symb_state *s, struct symb_built *b, uint32_t *nloc_out)
{
	uint32_t cap = 1024, nloc = 0, loccap = 256, overflow = UINT32_MAX;
	struct loc_slot *slots;
	int err = 0;

	slots = calloc(cap, sizeof(*slots));
	b->locations = calloc(loccap, sizeof(*b->locations));
	b->names = calloc(loccap, sizeof(*b->names));
	b->locs = calloc(s->nframes ? s->nframes : 1, sizeof(*b->locs));
	if (!slots || !b->locations || !b->names || !b->locs) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < s->nframes; i++) {
		const struct symb_frame *f = &s->frames[i];
		uint32_t j = frame_hash(s, f) & (cap - 1);

		for (;; j = (j + 1) & (cap - 1)) {
			if (!slots[j].loc || memcmp(&slots[j].key, f, sizeof(*f)) == 0)
				break;
		}
		if (slots[j].loc) {
			b->locs[i] = slots[j].loc - 1;
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
			b->locs[i] = overflow;
			continue;
		}
		if (nloc == loccap && (err = locations_grow(b, &loccap)))
			goto out;
		if ((err = location_init(s, b, nloc, f)))
			goto out;
		b->locs[i] = nloc++;
		slots[j].key = *f;
		slots[j].loc = nloc;
		if ((nloc + 1) * 2 > cap && (err = slots_grow(s, &slots, &cap)))
			goto out;
	}
out:
	/* the free function frees nloc names, even on error */
	*nloc_out = nloc;
	free(slots);
	return err;
}

static int build_mappings(struct symb_state *s, struct symb_built *b, uint32_t *nmap_out)
{
	uint32_t n = 0;

	b->mappings = calloc(s->nobjs + 1, sizeof(*b->mappings));
	if (!b->mappings)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct symb_obj *o = &s->objs[i];
		struct symb_mapping *m = &b->mappings[n];

		o->mapping = SYMB_NO_MAPPING;
		if (!o->used)
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

struct symb_built *symb_build(struct symb_state *s)
{
	struct symb_built *b = calloc(1, sizeof(*b));
	uint32_t nmap = 0, nloc = 0, k = 0;
	int err;

	if (!b)
		return NULL;
	err = build_mappings(s, b, &nmap);
	if (!err)
		err = build_locations(s, b, &nloc);
	b->p.nlocations = nloc; /* names to free, even on error */
	if (!err) {
		b->stacks = calloc(s->naggs ? s->naggs : 1, sizeof(*b->stacks));
		if (!b->stacks)
			err = -ENOMEM;
	}
	if (err) {
		symb_built_free(b);
		errno = -err;
		return NULL;
	}
	/*
	 * Frames are stored kernel leaf .. kernel root, user leaf .. user
	 * root: already leaf first, as the model wants. Stacks keep their
	 * first-seen order, whatever the table's (seeded) layout.
	 */
	for (uint32_t i = 0; i < s->cap_aggs; i++) {
		const struct symb_agg *a = &s->aggs[i];
		struct symb_stack *st;

		if (!a->count)
			continue;
		st = &b->stacks[a->seq];
		k++;
		st->pid = a->pid;
		st->comm = a->comm;
		st->locs = &b->locs[a->first];
		st->nlocs = a->nframes;
		st->values[0] = (int64_t)a->count;
		st->values[1] = (int64_t)a->weight;
	}
	b->p.mappings = b->mappings;
	b->p.nmappings = nmap;
	b->p.locations = b->locations;
	b->p.stacks = b->stacks;
	b->p.nstacks = k;
	b->p.value_types[0] = (struct symb_value_type){"samples", "count"};
	b->p.value_types[1] = (struct symb_value_type){"cpu", "nanoseconds"};
	b->p.period_type = (struct symb_value_type){"cpu", "nanoseconds"};
	b->p.period = s->freq_hz ? 1000000000 / s->freq_hz : 0;
	b->p.folded_value = 0;
	b->p.time_nanos = (int64_t)s->start_real_ns;
	b->p.duration_nanos = (int64_t)((s->end_ns > s->start_mono_ns ? s->end_ns : s->last_ns) -
					(s->start_mono_ns ? s->start_mono_ns : s->first_ns));
	if (b->p.duration_nanos < 0)
		b->p.duration_nanos = 0;
	snprintf(b->title, sizeof(b->title), "lowprof cpu: %s (%s)",
		 s->hostname[0] ? s->hostname : "host", s->kernel_release);
	b->p.title = b->title;
	if (asprintf(&b->comment_buf[0], "lowprof: %u Hz, %u CPUs, kernel %s", s->freq_hz, s->ncpus,
		     s->kernel_release) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[0];
	if (s->n.have_loss &&
	    asprintf(&b->comment_buf[1],
		     "lost: %" PRIu64 " bpf ring full, %" PRIu64 " shm ring full, %" PRIu64
		     " stack errors, %" PRIu64 " malformed records",
		     s->n.loss.bpf_ringbuf_full, s->n.loss.shm_dropped, s->n.loss.bpf_stack_errors,
		     s->n.bad_records) >= 0)
		b->comments[b->p.ncomments++] = b->comment_buf[1];
	b->p.comments = b->comments;
	return b;
}

const struct symb_profile *symb_built_profile(const struct symb_built *b)
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

/* Length of the well-formed, printable UTF-8 character at s (s[0] >= 0x80), or 0. */
static size_t utf8_char_len(const unsigned char *s)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, lo = c == 0xc2 ? 0xa0 : 0x80; /* U+0080..U+009F: C1 controls */
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0; /* continuation byte, overlong lead (c0, c1) or > U+10FFFF */
	/* a NUL fails these tests: nothing past the string's end is read */
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	/* U+2028..U+202E (line/paragraph separators, bidi embeddings) */
	if (c == 0xe2 && s[1] == 0x80 && s[2] >= 0xa8 && s[2] <= 0xae)
		return 0;
	/* U+2066..U+2069 (bidi isolates) */
	if (c == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
		return 0;
	return n;
}

char *symb_sanitize_name(char *dst, size_t cap, const char *name)
{
	const unsigned char *s = (const unsigned char *)name;
	size_t o = 0, max = cap - 4;

	if (cap < 4) {
		if (cap)
			dst[0] = '\0';
		return dst;
	}
	if (max > SYMB_NAME_PRINT_MAX)
		max = SYMB_NAME_PRINT_MAX;
	while (*s) {
		size_t n = *s < 0x80 ? 1 : utf8_char_len(s);

		if (o + (n ? n : 1) > max) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (!n || (n == 1 && (*s < 0x20 || *s == 0x7f))) {
			dst[o++] = '?';
			s++;
			continue;
		}
		memcpy(dst + o, s, n);
		o += n;
		s += n;
	}
	dst[o] = '\0';
	return dst;
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
	      l->bad_consumer_pos || l->bpf_task_lost || c->bad_mappings || c->bad_offsets ||
	      c->over_limit_mappings || c->over_limit_samples || c->over_limit_ksyms ||
	      c->over_limit_frames))
		return;
	dprintf(fd,
		"  other losses    %" PRIu64 " stack errors, %" PRIu64
		" malformed records, %" PRIu64 " unknown records, %" PRIu64
		" unreadable /proc/PID/maps, %" PRIu64 " exec/exit events, %" PRIu64
		" invalid ring positions",
		l->bpf_stack_errors, c->bad_records, c->unknown_records, l->maps_errors,
		l->bpf_task_lost, l->bad_consumer_pos);
	print_extra(fd, c->bad_mappings, "overlapping mappings");
	print_extra(fd, c->bad_offsets, "frames at impossible file offsets");
	print_extra(fd, c->over_limit_mappings, "mappings over limits");
	print_extra(fd, c->over_limit_samples, "samples over limits");
	print_extra(fd, c->over_limit_ksyms, "kernel symbols over limits");
	print_extra(fd, c->over_limit_frames, "frames over limits");
	dprintf(fd, "\n");
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

	if (!c->parsed_symbols && !c->parsed_deltas && !c->cache_hits && !c->unreadable_objs)
		return;
	dprintf(fd,
		"  binaries        loaded in %.1f ms: %" PRIu64 " tables from the cache, %" PRIu64
		" parsed (%" PRIu64 " symbol, %" PRIu64 " stack-delta), %" PRIu64 " stored",
		c->load_ns / 1e6, c->cache_hits, c->parsed_symbols + c->parsed_deltas,
		c->parsed_symbols, c->parsed_deltas, c->cache_stored);
	print_extra(fd, c->cache_bad, "bad cache rows");
	print_extra(fd, c->unreadable_objs, "unreadable");
	dprintf(fd, "%s\n", s->cache ? "" : " (no cache)");
}

void symb_print_summary(const struct symb_state *s, const struct symb_built *b, int fd)
{
	const struct symb_profile *p = b ? &b->p : NULL;
	double secs = p ? p->duration_nanos / 1e9 : 0;
	struct fn_total *fns = NULL;
	uint32_t *fn_of_loc = NULL;
	size_t nfns = 0;
	const struct lps_loss *l = &s->n.loss;

	dprintf(fd, "\nlowprof summary\n");
	dprintf(fd, "  duration        %.2f s\n", secs);
	dprintf(fd, "  samples         %" PRIu64 " (%.3f s of CPU)\n", s->n.samples,
		s->n.weight_ns / 1e9);
	dprintf(fd, "  processes seen  %u\n", s->nseen);
	dprintf(fd,
		"  samples lost    %" PRIu64 " (BPF ring full %" PRIu64
		", shared ring full %" PRIu64 ")\n",
		l->bpf_ringbuf_full + l->shm_dropped, l->bpf_ringbuf_full, l->shm_dropped);
	print_other_losses(s, fd);
	if (s->n.unmapped_frames)
		dprintf(fd, "  unmapped frames %" PRIu64 " (shown as [unknown])\n",
			s->n.unmapped_frames);
	print_unwinding(s, fd);
	print_objects(s, fd);
	if (!s->n.have_loss)
		dprintf(fd, "  note: no loss counters received (collector stopped early?)\n");
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
		const struct symb_stack *st = &p->stacks[i];
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
