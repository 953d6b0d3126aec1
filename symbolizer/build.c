// SPDX-License-Identifier: MIT
/*
 * From aggregated, normalized stacks to the symbolized profile model: one
 * location per distinct frame, names resolved once per location (ELF
 * symbols for user frames, the kernel snapshot for kernel frames), and the
 * end-of-run summary.
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

#include "lowprof/log.h"
#include "symb_int.h"

#define OBJ_SPAN	     (1ull << 44) /* each object's slice of pprof's address space */
#define KERNEL_MAPPING_START 0xffff000000000000ull

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

/* ---- opening binaries --------------------------------------------------- */

/*
 * Opens an object's file and checks it is the one that was mapped (device
 * and inode), so a binary replaced since it was mapped is never used to name
 * the old one's frames. Falls back to the mapping process's root, which
 * reaches files in other mount namespaces when we are allowed to.
 */
static struct symb_elf *open_obj(const struct symb_obj *o)
{
	char alt[4200];
	const char *paths[2] = {o->path, alt};
	int err = ENOENT;

	snprintf(alt, sizeof(alt), "/proc/%u/root%s", o->pid, o->path);
	for (int i = 0; i < 2; i++) {
		struct symb_elf *e;
		struct stat st;
		int fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);

		if (fd < 0) {
			err = errno;
			continue;
		}
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_ino != o->inode ||
		    (o->dev_major &&
		     (major(st.st_dev) != o->dev_major || minor(st.st_dev) != o->dev_minor))) {
			close(fd);
			err = ESTALE;
			continue;
		}
		e = symb_elf__open_fd(fd);
		err = errno;
		close(fd);
		if (e)
			return e;
	}
	lp_debug("symbols: %s: %s", o->path,
		 err == ESTALE ? "not the file that was mapped" : strerror(err));
	return NULL;
}

static void load_obj(struct symb_obj *o)
{
	uint8_t id[64];
	size_t n;

	if (o->loaded)
		return;
	o->loaded = true;
	o->elf = open_obj(o);
	if (!o->elf)
		return;
	n = symb_elf__build_id(o->elf, id, sizeof(id));
	if (n > 40) /* GNU build-ids are 20 bytes; the field holds 40 */
		n = 40;
	for (size_t i = 0; i < n; i++)
		snprintf(o->build_id + 2 * i, 3, "%02x", id[i]);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* ---- locations ---------------------------------------------------------- */

static uint64_t frame_hash(const struct symb_frame *f)
{
	uint64_t h = f->addr * 0x9e3779b97f4a7c15ull;

	return h ^ ((uint64_t)f->kind << 60) ^ ((uint64_t)f->obj * 0xc2b2ae3d27d4eb4full);
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

		load_obj(o);
		if (o->elf && symb_elf__offset_to_vaddr(o->elf, f->addr, &vaddr) == 0)
			name = symb_elf__symbolize(o->elf, vaddr, NULL);
		if (name) {
			*resolved = true;
			return strdup(name);
		}
		if (asprintf(&out, "%s+0x%" PRIx64, base_name(o->path), f->addr) < 0)
			return NULL;
		return out;
	}
	default:
		return strdup("[unknown]");
	}
}

static int build_locations(struct symb_state *s, struct symb_built *b, uint32_t *nloc_out)
{
	uint32_t cap = 1024, nloc = 0, loccap = 256;
	struct loc_slot *slots;
	int err = 0;

	while (cap < s->nframes * 2)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	b->locations = calloc(loccap, sizeof(*b->locations));
	b->names = calloc(loccap, sizeof(*b->names));
	b->locs = calloc(s->nframes ? s->nframes : 1, sizeof(*b->locs));
	if (!slots || !b->locations || !b->names || !b->locs) {
		err = -ENOMEM;
		goto out;
	}
	/* aggregates in table order are deterministic for a given stream */
	for (size_t i = 0; i < s->nframes; i++) {
		const struct symb_frame *f = &s->frames[i];
		uint32_t j = (uint32_t)frame_hash(f) & (cap - 1);

		for (;; j = (j + 1) & (cap - 1)) {
			if (!slots[j].loc || memcmp(&slots[j].key, f, sizeof(*f)) == 0)
				break;
		}
		if (!slots[j].loc) {
			struct symb_location *l;
			bool resolved;

			if (nloc == loccap) {
				void *nl =
					realloc(b->locations, 2 * loccap * sizeof(*b->locations));
				void *nn = nl ? realloc(b->names, 2 * loccap * sizeof(*b->names))
					      : NULL;

				if (nl)
					b->locations = nl;
				if (!nl || !nn) {
					err = -ENOMEM;
					goto out;
				}
				b->names = nn;
				loccap *= 2;
			}
			l = &b->locations[nloc];
			memset(l, 0, sizeof(*l));
			b->names[nloc] = resolve_name(s, f, &resolved);
			if (!b->names[nloc]) {
				err = -ENOMEM;
				goto out;
			}
			l->function = b->names[nloc];
			l->resolved = resolved;
			l->kernel = f->kind == SYMB_F_KERNEL;
			l->mapping = SYMB_NO_MAPPING;
			l->address = f->addr;
			if (f->kind == SYMB_F_KERNEL) {
				l->mapping = b->kernel_mapping;
			} else if (f->kind == SYMB_F_USER) {
				struct symb_obj *o = &s->objs[f->obj];

				l->mapping = o->mapping;
				l->address = b->mappings[o->mapping].start + f->addr;
				if (resolved)
					b->mappings[o->mapping].has_functions = true;
			}
			if (resolved && l->mapping != SYMB_NO_MAPPING && l->kernel)
				b->mappings[l->mapping].has_functions = true;
			slots[j].key = *f;
			slots[j].loc = ++nloc;
		}
		b->locs[i] = slots[j].loc - 1;
	}
	*nloc_out = nloc;
out:
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
		load_obj(o);
		m->path = o->path;
		m->build_id = o->build_id[0] ? o->build_id : NULL;
		m->start = (uint64_t)(n + 1) * OBJ_SPAN;
		m->limit = m->start + OBJ_SPAN;
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
	 * root: already leaf first, as the model wants.
	 */
	for (uint32_t i = 0; i < s->cap_aggs; i++) {
		const struct symb_agg *a = &s->aggs[i];
		struct symb_stack *st;

		if (!a->count)
			continue;
		st = &b->stacks[k++];
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
	b->p.nlocations = nloc;
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

static void print_top(int fd, const char *what, struct fn_total *f, size_t n, uint64_t all,
		      bool self)
{
	dprintf(fd, "Top functions by %s:\n", what);
	for (size_t i = 0; i < n && i < 10; i++) {
		uint64_t v = self ? f[i].self : f[i].total;

		if (!v)
			break;
		dprintf(fd, "  %6.2f%%  %8" PRIu64 "  %s%s\n", all ? 100.0 * v / all : 0.0, v,
			f[i].name, f[i].kernel ? " [k]" : "");
	}
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
	if (l->bpf_stack_errors || s->n.bad_records || s->n.unknown_records || l->maps_errors ||
	    l->bad_consumer_pos || l->bpf_task_lost)
		dprintf(fd,
			"  other losses    %" PRIu64 " stack errors, %" PRIu64
			" malformed records, %" PRIu64 " unknown records, %" PRIu64
			" unreadable /proc/PID/maps, %" PRIu64 " exec/exit events\n",
			l->bpf_stack_errors, s->n.bad_records, s->n.unknown_records, l->maps_errors,
			l->bpf_task_lost);
	if (s->n.unmapped_frames)
		dprintf(fd, "  unmapped frames %" PRIu64 " (shown as [unknown])\n",
			s->n.unmapped_frames);
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
