// SPDX-License-Identifier: MIT
/*
 * The object table (objects.h): interned by (path, device, inode), indexed
 * by a hash seeded against flooding, bounded by SYMB_MAX_OBJS and
 * SYMB_MAX_OBJ_PATH_BYTES; and the build-ids a live symbolizer noted, which
 * objects without a kernel build-id take when they are added.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/grow.h"
#include "lowprof/hash.h"
#include "lowprof/opts.h"
#include "objects_int.h"

/* every need is bounded by a SYMB_MAX_* far below 2^31 */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	return lp_grow32(p, cap, need, elem, 16);
}

struct symb_objects *symb_objects__new(const struct symb_objects_opts *opts)
{
	struct symb_objects *t;

	if (!opts || LP_OPTS_CHECK(opts, symb_objects_opts, files_fd)) {
		errno = EINVAL;
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->seed = opts->seed;
	t->offline = opts->offline;
	t->replay = opts->replay;
	t->cache = opts->cache;
	t->n.cache = opts->cache != NULL;
	t->debug_dirs = opts->debug_dirs;
	t->have_files = opts->files_fd >= 0;
	t->files_fd = opts->files_fd;
	return t;
}

void symb_objects__free(struct symb_objects *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->nobjs; i++) {
		free(t->objs[i].path);
		free(t->objs[i].image);
		symb_obj_release(t, &t->objs[i]);
	}
	free(t->objs);
	free(t->obj_index);
	free(t->free_slots);
	free(t->noted_ids);
	free(t);
}

const struct symb_obj *symb_objects__get(const struct symb_objects *t, uint32_t idx)
{
	return &t->objs[idx];
}

const struct symb_obj *symb_objects__load(struct symb_objects *t, uint32_t idx)
{
	symb_obj_load(t, &t->objs[idx]);
	return &t->objs[idx];
}

const char *symb_objects__symbol(struct symb_objects *t, uint32_t idx, uint64_t off)
{
	const struct symb_obj *o = symb_objects__load(t, idx);
	uint64_t vaddr;

	if (!o->elf || symb_elf__offset_to_vaddr(o->elf, off, &vaddr))
		return NULL;
	return symb_elf__symbolize(o->elf, vaddr, NULL);
}

const struct symb_objects_stats *symb_objects__stats(const struct symb_objects *t)
{
	return &t->n;
}

/* ---- build-ids a live symbolizer noted (replay) ------------------------- */

int symb_objects__note_build_id(struct symb_objects *s, const struct lps_buildid *b)
{
	struct symb_noted_id *n;

	if (!b->build_id.len || b->build_id.len > LPS_MAX_BUILD_ID)
		return -EINVAL;
	if ((s->nnoted_ids + 1) * 2 > s->cap_noted_ids) {
		uint32_t cap = s->cap_noted_ids ? s->cap_noted_ids * 2 : 256;
		struct symb_noted_id *t;

		if (s->nnoted_ids >= SYMB_MAX_NOTED_IDS)
			return -ENOSPC;
		t = calloc(cap, sizeof(*t));
		if (!t)
			return -ENOMEM;
		for (uint32_t i = 0; i < s->cap_noted_ids; i++)
			if (s->noted_ids[i].len)
				*symb_noted_slot(t, cap, s->noted_ids[i].dev_major,
						 s->noted_ids[i].dev_minor, s->noted_ids[i].inode) =
					s->noted_ids[i];
		free(s->noted_ids);
		s->noted_ids = t;
		s->cap_noted_ids = cap;
	}
	n = symb_noted_slot(s->noted_ids, s->cap_noted_ids, b->dev_major, b->dev_minor, b->inode);
	if (!n->len)
		s->nnoted_ids++;
	n->inode = b->inode;
	n->dev_major = b->dev_major;
	n->dev_minor = b->dev_minor;
	n->len = b->build_id.len;
	memcpy(n->id, b->build_id.ptr, b->build_id.len);
	return 0;
}

/* The noted build-id of o's file, when the kernel gave it none. */
static void obj_take_noted_id(struct symb_objects *s, struct symb_obj *o)
{
	if (!o->want_id_len && !o->loaded)
		symb_obj_take_note(s, o);
}

void symb_objects__set_notes_loader(struct symb_objects *t, void (*fn)(void *ctx), void *ctx)
{
	t->load_notes = fn;
	t->notes_ctx = ctx;
}

/* ---- objects ------------------------------------------------------------ */

static uint64_t obj_hash(const struct symb_objects *s, const struct lps_mapping *m)
{
	uint64_t h = lp_mix64(s->seed ^ ((uint64_t)m->dev_major << 32 | m->dev_minor));

	h = lp_mix64(h ^ m->inode);
	return lp_hash_bytes(h, m->path.ptr, m->path.len);
}

static bool obj_matches(const struct symb_obj *o, uint64_t h, const struct lps_mapping *m)
{
	return o->hash == h && o->inode == m->inode && o->dev_major == m->dev_major &&
	       o->dev_minor == m->dev_minor && o->path_len == m->path.len &&
	       memcmp(o->path, m->path.ptr, m->path.len) == 0;
}

static int obj_index_grow(struct symb_objects *s)
{
	uint32_t ncap = s->cap_obj_index ? s->cap_obj_index * 2 : 256;
	uint32_t *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		if (!s->objs[i].path)
			continue; /* a free slot */
		for (uint32_t j = (uint32_t)s->objs[i].hash & (ncap - 1);; j = (j + 1) & (ncap - 1))
			if (!n[j]) {
				n[j] = i + 1;
				break;
			}
	}
	free(s->obj_index);
	s->obj_index = n;
	s->cap_obj_index = ncap;
	return 0;
}

int symb_objects__intern(struct symb_objects *s, const struct lps_mapping *m, uint32_t pid,
			 uint32_t *idx)
{
	uint64_t h = obj_hash(s, m);
	struct symb_obj *o;
	uint32_t j, slot;

	if ((s->nobjs + 1) * 2 > s->cap_obj_index && s->nobjs < SYMB_MAX_OBJS && obj_index_grow(s))
		return -ENOMEM;
	for (j = (uint32_t)h & (s->cap_obj_index - 1); s->obj_index[j];
	     j = (j + 1) & (s->cap_obj_index - 1)) {
		if (obj_matches(&s->objs[s->obj_index[j] - 1], h, m)) {
			o = &s->objs[s->obj_index[j] - 1];
			/* a later read may know the build-id an earlier one did not */
			if (!o->want_id_len && m->build_id.len &&
			    m->build_id.len <= LPS_MAX_BUILD_ID && !o->loaded) {
				memcpy(o->want_id, m->build_id.ptr, m->build_id.len);
				o->want_id_len = m->build_id.len;
			}
			*idx = s->obj_index[j] - 1;
			o->refs++;
			return 0;
		}
	}
	if ((!s->nfree && s->nobjs >= SYMB_MAX_OBJS) ||
	    s->obj_path_bytes + m->path.len > SYMB_MAX_OBJ_PATH_BYTES)
		return -ENOSPC;
	if (!s->nfree && grow((void **)&s->objs, &s->cap_objs, s->nobjs + 1, sizeof(*s->objs)))
		return -ENOMEM;
	slot = s->nfree ? s->free_slots[s->nfree - 1] : s->nobjs;
	o = &s->objs[slot];
	memset(o, 0, sizeof(*o));
	o->path = strndup(m->path.ptr, m->path.len);
	if (!o->path)
		return -ENOMEM;
	o->path_len = m->path.len;
	o->hash = h;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->inode = m->inode;
	o->pid = pid;
	if (m->build_id.len && m->build_id.len <= LPS_MAX_BUILD_ID) {
		memcpy(o->want_id, m->build_id.ptr, m->build_id.len);
		o->want_id_len = m->build_id.len;
	}
	o->refs = 1;
	obj_take_noted_id(s, o);
	s->obj_path_bytes += m->path.len;
	s->obj_index[j] = slot + 1;
	*idx = slot;
	if (s->nfree)
		s->nfree--;
	else
		s->nobjs++;
	s->n.objs++;
	s->n.slots = s->nobjs;
	return 0;
}

void symb_objects__set_files_fd(struct symb_objects *t, int files_fd)
{
	t->have_files = files_fd >= 0;
	t->files_fd = files_fd;
}

void symb_objects__unref(struct symb_objects *t, uint32_t idx)
{
	if (idx < t->nobjs && t->objs[idx].refs)
		t->objs[idx].refs--;
}

void symb_objects__ref(struct symb_objects *t, uint32_t idx)
{
	if (idx < t->nobjs)
		t->objs[idx].refs++;
}

/* The index again, of the objects left (no tombstones: it is rebuilt). */
static void obj_index_rebuild(struct symb_objects *s)
{
	memset(s->obj_index, 0, (size_t)s->cap_obj_index * sizeof(*s->obj_index));
	for (uint32_t i = 0; i < s->nobjs; i++) {
		if (!s->objs[i].path)
			continue;
		for (uint32_t j = (uint32_t)s->objs[i].hash & (s->cap_obj_index - 1);;
		     j = (j + 1) & (s->cap_obj_index - 1))
			if (!s->obj_index[j]) {
				s->obj_index[j] = i + 1;
				break;
			}
	}
}

uint32_t symb_objects__sweep(struct symb_objects *t)
{
	uint32_t n = 0;

	for (uint32_t i = 0; i < t->nobjs; i++) {
		struct symb_obj *o = &t->objs[i];

		if (!o->path || o->refs)
			continue;
		/* room for every slot: the array's length bounds the free list */
		if (grow((void **)&t->free_slots, &t->cap_free, t->nfree + 1,
			 sizeof(*t->free_slots)))
			break;
		t->obj_path_bytes -= o->path_len;
		free(o->path);
		free(o->image);
		symb_obj_release(t, o);
		memset(o, 0, sizeof(*o));
		t->free_slots[t->nfree++] = i;
		n++;
	}
	if (n) {
		obj_index_rebuild(t);
		t->n.objs -= n;
		t->n.swept += n;
	}
	return n;
}

/*
 * The process's heap in use, as malloc counts it (arenas and mmapped
 * chunks); where the allocator does not say (a sanitizer's), its private
 * resident memory (statm's resident less shared pages).
 */
static uint64_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();
	unsigned long size, resident, shared;
	FILE *f;
	int n;

	if (mi.uordblks + mi.hblkhd)
		return (uint64_t)mi.uordblks + (uint64_t)mi.hblkhd;
	f = fopen("/proc/self/statm", "re");
	if (!f)
		return 0;
	n = fscanf(f, "%lu %lu %lu", &size, &resident, &shared);
	fclose(f);
	return n == 3 && resident > shared
		       ? (uint64_t)(resident - shared) * (uint64_t)sysconf(_SC_PAGESIZE)
		       : 0;
}

/* Least recently used first; then by index, so the order is deterministic. */
static int by_use(const void *a, const void *b, void *arg)
{
	const struct symb_objects *t = arg;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	uint32_t ux = t->objs[x].used, uy = t->objs[y].used;

	if (ux != uy)
		return ux < uy ? -1 : 1;
	return x < y ? -1 : x > y;
}

uint32_t symb_objects__trim(struct symb_objects *t, uint64_t budget)
{
	uint64_t heap = heap_in_use();
	uint32_t *order, n = 0, evicted = 0;

	t->epoch++;
	t->n.heap_bytes = heap;
	if (!budget || heap <= budget)
		return 0;
	order = malloc((t->nobjs ? t->nobjs : 1) * sizeof(*order));
	if (!order)
		return 0;
	for (uint32_t i = 0; i < t->nobjs; i++)
		if (t->objs[i].path &&
		    (t->objs[i].elf || t->objs[i].have_deltas || t->objs[i].dwarf))
			order[n++] =
				i; /* loaded, and holding tables (a failed load is not retried) */
	qsort_r(order, n, sizeof(*order), by_use, t);
	for (uint32_t i = 0; i < n && heap > budget / 8 * 7; i++) {
		symb_obj_release(t, &t->objs[order[i]]);
		evicted++;
		if (evicted % 4 == 0 || i + 1 == n)
			heap = heap_in_use();
	}
	free(order);
	/* what was freed goes back to the system, so RSS follows the budget */
	malloc_trim(0);
	t->n.evicted += evicted;
	t->n.heap_bytes = heap_in_use();
	return evicted;
}
