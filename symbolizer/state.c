// SPDX-License-Identifier: MIT
/*
 * Ingest of the record stream into struct symb_state. Every record comes
 * from a less trusted side (the ring, a capture file): it is decoded by the
 * validating schema decoder, and every value used as an index or size here
 * is bounded again. Every table the stream can grow has a SYMB_MAX_* limit,
 * and every hash the stream can steer is seeded, so that no stream makes
 * ingest quadratic or memory unbounded.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "lowprof/grow.h"
#include "lowprof/log.h"
#include "symb_int.h"

/* every need is bounded by a SYMB_MAX_* far below 2^31 */
static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	return lp_grow32(p, cap, need, elem, 16);
}

/* Hash of a byte string, chained from h (length included). */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&v, b, 8);
		h = symb_mix64(h ^ v);
	}
	v = 0;
	memcpy(&v, b, n);
	return symb_mix64(h ^ v ^ (uint64_t)n << 59);
}

void symb_state_init(struct symb_state *s)
{
	memset(s, 0, sizeof(*s));
	/* an unpredictable seed only changes table layout, never output order */
	if (getrandom(&s->seed, sizeof(s->seed), GRND_NONBLOCK) != sizeof(s->seed))
		s->seed = symb_mix64((uint64_t)(uintptr_t)s ^ (uint64_t)time(NULL));
}

void symb_state_free(struct symb_state *s)
{
	for (uint32_t i = 0; i < s->nobjs; i++) {
		free(s->objs[i].path);
		symb_obj_release(&s->objs[i]);
	}
	free(s->objs);
	free(s->obj_index);
	for (uint32_t i = 0; i < s->cap_procs; i++)
		free(s->procs[i].maps);
	free(s->procs);
	free(s->seen_pids);
	free(s->ksyms);
	free(s->ksym_names);
	free(s->aggs);
	free(s->agg_index);
	free(s->frames);
	free(s->delta_memo);
	free(s->noted_ids);
	memset(s, 0, sizeof(*s));
}

/* ---- build-ids a live symbolizer noted (replay) ------------------------- */

static struct symb_noted_id *noted_slot(struct symb_noted_id *t, uint32_t cap, uint32_t major,
					uint32_t minor, uint64_t inode)
{
	uint64_t h = symb_mix64(inode ^ ((uint64_t)major << 44) ^ ((uint64_t)minor << 24));

	for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].len ||
		    (t[i].inode == inode && t[i].dev_major == major && t[i].dev_minor == minor))
			return &t[i];
}

int symb_state_note_build_id(struct symb_state *s, const struct lps_buildid *b)
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
				*noted_slot(t, cap, s->noted_ids[i].dev_major,
					    s->noted_ids[i].dev_minor, s->noted_ids[i].inode) =
					s->noted_ids[i];
		free(s->noted_ids);
		s->noted_ids = t;
		s->cap_noted_ids = cap;
	}
	n = noted_slot(s->noted_ids, s->cap_noted_ids, b->dev_major, b->dev_minor, b->inode);
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
static void obj_take_noted_id(struct symb_state *s, struct symb_obj *o)
{
	const struct symb_noted_id *n;

	if (o->want_id_len || !s->nnoted_ids || o->loaded)
		return;
	n = noted_slot(s->noted_ids, s->cap_noted_ids, o->dev_major, o->dev_minor, o->inode);
	if (!n->len)
		return;
	memcpy(o->want_id, n->id, n->len);
	o->want_id_len = n->len;
	o->id_noted = true;
}

/* ---- processes ---------------------------------------------------------- */

static uint32_t pid_hash(const struct symb_state *s, uint32_t pid)
{
	return (uint32_t)symb_mix64(pid ^ s->seed);
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

	if (s->nprocs >= SYMB_MAX_PROCS)
		return -ENOSPC;
	if ((s->nprocs + 1) * 2 > s->cap_procs) {
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
	s->nprocs++;
	maps_changed(s, p); /* a pid seen before must not find the old process's entries */
	*out = p;
	return 0;
}

/* Forgetting a process keeps its slot (no tombstones; SYMB_MAX_PROCS bounds them). */
static void proc_clear_maps(struct symb_state *s, struct symb_proc *p)
{
	maps_changed(s, p);
	s->nmaps_total -= p->nmaps;
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
	p->cap_maps = 0;
	p->has_maps = false;
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
	if (s->nseen >= SYMB_MAX_PROCS)
		return -ENOSPC;
	if ((s->nseen + 1) * 2 > s->cap_seen) {
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
			s->nseen++;
			return 0;
		}
}

/* ---- objects ------------------------------------------------------------ */

static uint64_t obj_hash(const struct symb_state *s, const struct lps_mapping *m)
{
	uint64_t h = symb_mix64(s->seed ^ ((uint64_t)m->dev_major << 32 | m->dev_minor));

	h = symb_mix64(h ^ m->inode);
	return hash_bytes(h, m->path.ptr, m->path.len);
}

static bool obj_matches(const struct symb_obj *o, uint64_t h, const struct lps_mapping *m)
{
	return o->hash == h && o->inode == m->inode && o->dev_major == m->dev_major &&
	       o->dev_minor == m->dev_minor && o->path_len == m->path.len &&
	       memcmp(o->path, m->path.ptr, m->path.len) == 0;
}

static int obj_index_grow(struct symb_state *s)
{
	uint32_t ncap = s->cap_obj_index ? s->cap_obj_index * 2 : 256;
	uint32_t *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->nobjs; i++)
		for (uint32_t j = (uint32_t)s->objs[i].hash & (ncap - 1);; j = (j + 1) & (ncap - 1))
			if (!n[j]) {
				n[j] = i + 1;
				break;
			}
	free(s->obj_index);
	s->obj_index = n;
	s->cap_obj_index = ncap;
	return 0;
}

/*
 * The object of a file mapping: found, or added. Returns 0 and its index in
 * *idx, -ENOSPC when the object limits are reached, or -ENOMEM.
 */
static int obj_intern(struct symb_state *s, const struct lps_mapping *m, uint32_t pid,
		      uint32_t *idx)
{
	uint64_t h = obj_hash(s, m);
	struct symb_obj *o;
	uint32_t j;

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
			return 0;
		}
	}
	if (s->nobjs >= SYMB_MAX_OBJS || s->obj_path_bytes + m->path.len > SYMB_MAX_OBJ_PATH_BYTES)
		return -ENOSPC;
	if (grow((void **)&s->objs, &s->cap_objs, s->nobjs + 1, sizeof(*s->objs)))
		return -ENOMEM;
	o = &s->objs[s->nobjs];
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
	obj_take_noted_id(s, o);
	s->obj_path_bytes += m->path.len;
	s->obj_index[j] = s->nobjs + 1;
	*idx = s->nobjs++;
	return 0;
}

/* A mapping of a file (not "[vdso]", "[stack]" or anonymous memory). */
static bool is_file_mapping(const struct lps_mapping *m)
{
	return m->path.len && m->path.ptr[0] == '/' && m->inode &&
	       !memchr(m->path.ptr, '\0', m->path.len);
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
	if (p->nmaps >= SYMB_MAX_MAPS_PER_PROC || s->nmaps_total >= SYMB_MAX_MAPS) {
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
		err = obj_intern(s, m, p->pid, &sm->obj);
		if (err == -ENOSPC)
			s->n.over_limit_mappings++; /* kept, as anonymous memory */
		else if (err)
			return err;
	}
	p->nmaps++;
	s->nmaps_total++;
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
	while ((r = lps_maps_next(rec, &m)) == 1) {
		err = proc_add_map(s, p, &m);
		if (err)
			return err;
	}
	return r < 0 ? r : 0;
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

/* ---- kernel symbols ----------------------------------------------------- */

/*
 * Room for one record's entries, taken once per record: each entry's name
 * and NUL fit in the bytes the entry takes in the record (its tags alone
 * take more than one byte), and both tables stop at their SYMB_MAX_* limit.
 */
static int ksyms_reserve(struct symb_state *s, const struct lps_ksyms *rec)
{
	uint32_t n =
		rec->count < SYMB_MAX_KSYMS - s->nksyms ? s->nksyms + rec->count : SYMB_MAX_KSYMS;
	size_t need = s->ksym_names_len + (size_t)(rec->end - rec->cur);

	if (need > SYMB_MAX_KSYM_BYTES)
		need = SYMB_MAX_KSYM_BYTES;
	if (grow((void **)&s->ksyms, &s->cap_ksyms, n, sizeof(*s->ksyms)))
		return -ENOMEM;
	if (lp_grow((void **)&s->ksym_names, &s->ksym_names_cap, need, 1, 65536, SIZE_MAX))
		return -ENOMEM;
	return 0;
}

/*
 * An older collector's snapshot, complete, with absolute addresses: made
 * relative to its _text like a newer collector's, so that no absolute kernel
 * address reaches an output. Without _text there is no base: the snapshot
 * is dropped and kernel frames have no address.
 */
static void ksyms_relative(struct symb_state *s)
{
	uint32_t i;

	s->kbase_known = false;
	for (i = 0; i < s->nksyms; i++)
		if (!strcmp(s->ksym_names + s->ksyms[i].name, "_text"))
			break;
	if (i == s->nksyms) {
		s->nksyms = 0;
		s->ksym_names_len = 0;
		return;
	}
	s->kbase = s->ksyms[i].addr;
	s->kbase_known = true;
	for (i = 0; i < s->nksyms; i++)
		s->ksyms[i].addr -= s->kbase;
}

static int feed_ksyms(struct symb_state *s, struct lps_ksyms *rec)
{
	struct lps_ksym k;
	int r;

	if (rec->seq == 0) {
		/* a new snapshot replaces the old one */
		s->nksyms = 0;
		s->ksym_names_len = 0;
	}
	s->ksyms_sorted = false;
	if (ksyms_reserve(s, rec))
		return -ENOMEM;
	while ((r = lps_ksyms_next(rec, &k)) == 1) {
		/* a name is within one record (<= 1 MiB): no overflow */
		size_t need = s->ksym_names_len + k.name.len + 1;

		if (!k.addr && !s->kernel_relative)
			continue; /* an older collector's: hidden by kptr_restrict */
		if (s->nksyms >= SYMB_MAX_KSYMS || need > SYMB_MAX_KSYM_BYTES) {
			s->n.over_limit_ksyms++;
			continue;
		}
		/* ksyms_reserve made room for both */
		s->ksyms[s->nksyms].addr = k.addr;
		/* < SYMB_MAX_KSYM_BYTES, far below 2^32 */
		s->ksyms[s->nksyms].name = (uint32_t)s->ksym_names_len;
		memcpy(s->ksym_names + s->ksym_names_len, k.name.ptr, k.name.len);
		s->ksym_names[s->ksym_names_len + k.name.len] = '\0';
		s->ksym_names_len = need;
		s->nksyms++;
	}
	if (r == 0 && rec->last && !s->kernel_relative)
		ksyms_relative(s);
	return r < 0 ? r : 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct symb_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * Sorts the kernel symbols by (address, name offset): a total order, so the
 * result is the same however it is reached. /proc/kallsyms is in address
 * order but for a few entries at its end (modules, BPF programs), so the
 * sorted prefix is kept, only the rest is sorted, and the two are merged
 * from the back. Without memory for the merge, the whole table is sorted.
 */
static void ksyms_sort(struct symb_state *s)
{
	struct symb_ksym *k = s->ksyms, *tail;
	uint32_t n = s->nksyms, p = 1, t, i, j, w;

	while (p < n && ksym_cmp(&k[p - 1], &k[p]) < 0)
		p++;
	if (p >= n)
		return;
	t = n - p;
	tail = malloc((size_t)t * sizeof(*tail));
	if (!tail) {
		qsort(k, n, sizeof(*k), ksym_cmp);
		return;
	}
	memcpy(tail, k + p, (size_t)t * sizeof(*tail));
	qsort(tail, t, sizeof(*tail), ksym_cmp);
	/* k[0, p) and tail[0, t) into k[0, n), largest first */
	for (i = p, j = t, w = n; j > 0;) {
		if (i > 0 && ksym_cmp(&k[i - 1], &tail[j - 1]) > 0)
			k[--w] = k[--i];
		else
			k[--w] = tail[--j];
	}
	free(tail);
}

/* Kernel symbols have no sizes: a symbol extends to the next one, at most 1 MiB. */
const char *symb_ksym_lookup(struct symb_state *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->nksyms;

	if (!s->ksyms_sorted && s->nksyms) {
		ksyms_sort(s);
		s->ksyms_sorted = true;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - s->ksyms[lo - 1].addr > (1u << 20))
		return NULL;
	return s->ksym_names + s->ksyms[lo - 1].name;
}

/* ---- samples ------------------------------------------------------------ */

static uint64_t hash_stack(const struct symb_state *s, uint32_t kind, uint32_t pid,
			   const char *comm, const struct symb_frame *f, uint32_t n)
{
	uint64_t h =
		hash_bytes(symb_mix64(s->seed ^ ((uint64_t)kind << 32 | pid)), comm, strlen(comm));

	/*
	 * Each frame is mixed on its own (the mixes of a stack's frames run in
	 * parallel) and chained with one multiply: two mixes in the chain per
	 * frame were a tenth of a sample's cost.
	 */
	for (uint32_t i = 0; i < n; i++)
		h = (h ^ symb_mix64(f[i].addr ^ s->seed) ^ ((uint64_t)f[i].kind << 32 | f[i].obj)) *
		    0x9e3779b97f4a7c15ull;
	return symb_mix64(h);
}

static bool agg_matches(const struct symb_state *s, const struct symb_agg *a, uint64_t h,
			uint32_t kind, uint32_t pid, const char *comm, const struct symb_frame *f,
			uint32_t n)
{
	return a->hash == h && a->kind == kind && a->pid == pid && a->nframes == n &&
	       strcmp(a->comm, comm) == 0 && memcmp(&s->frames[a->first], f, n * sizeof(*f)) == 0;
}

/* The index, doubled: 0 or -ENOMEM. */
static int agg_index_grow(struct symb_state *s)
{
	uint32_t ncap = s->cap_agg_index ? s->cap_agg_index * 2 : 1024;
	struct symb_agg_slot *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->naggs; i++)
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
static struct symb_agg_slot *agg_slot(struct symb_state *s, uint64_t h, uint32_t kind, uint32_t pid,
				      const char *comm, const struct symb_frame *f, uint32_t n)
{
	uint32_t hi = (uint32_t)(h >> 32);

	for (uint32_t j = (uint32_t)h & (s->cap_agg_index - 1);;
	     j = (j + 1) & (s->cap_agg_index - 1)) {
		struct symb_agg_slot *e = &s->agg_index[j];

		if (!e->agg || (e->hash_hi == hi &&
				agg_matches(s, &s->aggs[e->agg - 1], h, kind, pid, comm, f, n)))
			return e;
	}
}

/*
 * Counts one sample of a stack of a kind (< SYMB_KIND__COUNT): 0, -ENOSPC
 * beyond the stack limits (shared by all kinds), or -ENOMEM.
 */
static int aggregate(struct symb_state *s, uint32_t kind, uint32_t pid, const char *comm,
		     const struct symb_frame *f, uint32_t n, uint64_t weight)
{
	uint64_t h = hash_stack(s, kind, pid, comm, f, n);
	struct symb_agg_slot *e = s->cap_agg_index ? agg_slot(s, h, kind, pid, comm, f, n) : NULL;
	struct symb_agg *a;
	size_t clen;

	if (e && e->agg) {
		a = &s->aggs[e->agg - 1];
		a->count++;
		a->weight += weight;
		return 0;
	}
	if (s->naggs >= SYMB_MAX_STACKS || n > SYMB_MAX_FRAMES - s->nframes)
		return -ENOSPC;
	if ((s->naggs + 1) * 2 > s->cap_agg_index) {
		if (agg_index_grow(s))
			return -ENOMEM;
		e = agg_slot(s, h, kind, pid, comm, f, n);
	}
	if (grow((void **)&s->aggs, &s->cap_aggs, s->naggs + 1, sizeof(*s->aggs)))
		return -ENOMEM;
	if (lp_grow((void **)&s->frames, &s->cap_frames, s->nframes + n, sizeof(*s->frames), 4096,
		    SIZE_MAX))
		return -ENOMEM;
	memcpy(&s->frames[s->nframes], f, n * sizeof(*f));
	/* the objects a profile of this kind needs; a stack seen again adds none */
	for (uint32_t i = 0; i < n; i++)
		if (f[i].kind == SYMB_F_USER)
			s->objs[f[i].obj].used_kinds |= 1u << kind;
	a = &s->aggs[s->naggs];
	a->hash = h;
	a->kind = kind;
	a->pid = pid;
	clen = strnlen(comm, sizeof(a->comm) - 1);
	memcpy(a->comm, comm, clen);
	a->comm[clen] = '\0';
	a->nframes = n;
	a->first = (uint32_t)s->nframes; /* < SYMB_MAX_FRAMES */
	a->seq = s->naggs_kind[kind]++;
	a->count = 1;
	a->weight = weight;
	s->nframes += n;
	*e = (struct symb_agg_slot){++s->naggs, (uint32_t)(h >> 32)};
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
 * The unwinder's view of a process: runtime address -> its object's delta
 * row. *frame gets the frame of addr.
 */
static enum symb_lookup lookup_delta_uncached(struct unwind_ctx *u, uint64_t addr,
					      struct symb_delta *row, struct symb_frame *frame,
					      enum frame_note *note)
{
	const struct symb_map *m = u->p ? map_find(u->p, addr) : NULL;
	const struct symb_delta *d;
	struct symb_obj *o;
	uint64_t vaddr;

	*frame = map_frame(m, addr, note);
	if (!m)
		return SYMB_LOOKUP_UNMAPPED;
	if (m->obj == UINT32_MAX)
		return SYMB_LOOKUP_NO_CFI; /* anonymous (JIT) or [vdso] */
	o = &u->s->objs[m->obj];
	symb_obj_load(u->s, o);
	if (!o->have_deltas || !o->elf ||
	    symb_elf__offset_to_vaddr(o->elf, addr - m->start + m->offset, &vaddr))
		return SYMB_LOOKUP_NO_CFI;
	d = symb_deltas__find(&o->deltas, vaddr);
	if (!d || d->kind == SYMB_CFA_NONE)
		return SYMB_LOOKUP_NO_CFI;
	*row = *d;
	return SYMB_LOOKUP_FOUND;
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

		if (!s->kernel_relative)
			a = s->kbase_known ? a - s->kbase : 0;
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
	err = note_pid_seen(s, smp->pid);
	if (!err)
		err = aggregate(s, smp->kind, smp->pid, comm, f, n, smp->weight);
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
	}
	if (!s->first_ns || smp->time_ns < s->first_ns)
		s->first_ns = smp->time_ns;
	if (smp->time_ns > s->last_ns)
		s->last_ns = smp->time_ns;
	return 0;
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

	s->kernel_relative = m->kernel_base.len > 0;
	s->kbase_known = false;
	s->kbase = 0;
	s->nfallbacks = 0;
	for (uint32_t i = 0; i < m->nfallbacks && i < LPS_MAX_FALLBACKS; i++) {
		if (lps_meta_fallback(m, i, &f))
			break;
		copy_str(s->fallbacks[s->nfallbacks++], LPS_MAX_FALLBACK_NAME + 1, f);
	}
}

int symb_state_feed(struct symb_state *s, const void *buf, size_t len)
{
	struct lps_record r;
	struct symb_proc *p;
	int err;

	s->n.records++;
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
		s->have_meta = true;
		s->freq_hz = r.meta.freq_hz;
		s->ncpus = r.meta.ncpus_online;
		s->start_mono_ns = r.meta.start_mono_ns;
		s->start_real_ns = r.meta.start_real_ns;
		copy_str(s->hostname, sizeof(s->hostname), r.meta.hostname);
		copy_str(s->kernel_release, sizeof(s->kernel_release), r.meta.kernel_release);
		s->bpf_mem_bytes = r.meta.bpf_mem_bytes;
		s->offcpu_meta.on = r.meta.off_cpu;
		copy_str(s->offcpu_meta.mode, sizeof(s->offcpu_meta.mode), r.meta.off_cpu_mode);
		s->offcpu_meta.rate = r.meta.off_cpu_rate;
		s->offcpu_meta.min_ns = r.meta.off_cpu_min_ns;
		s->offcpu_meta.period_ns = r.meta.off_cpu_period_ns;
		feed_meta_kernel(s, &r.meta);
		break;
	case LPS_SAMPLE:
		err = feed_sample(s, &r.sample);
		break;
	case LPS_MAPS:
		err = feed_maps(s, &r.maps);
		break;
	case LPS_EXEC:
		s->n.exec++;
		p = proc_get(s, r.exec.pid);
		if (p)
			proc_clear_maps(s, p);
		break;
	case LPS_EXIT:
		s->n.exit++;
		p = proc_get(s, r.exit.pid);
		if (p)
			proc_clear_maps(s, p);
		break;
	case LPS_KSYMS:
		err = feed_ksyms(s, &r.ksyms);
		break;
	case LPS_LOSS:
		s->n.loss = r.loss;
		s->n.have_loss = true;
		break;
	case LPS_END:
		s->end_ns = r.end.time_ns;
		copy_str(s->end_reason, sizeof(s->end_reason), r.end.reason);
		break;
	}
	if (err == -EBADMSG) {
		s->n.bad_records++;
		err = 0;
	}
	return err;
}
