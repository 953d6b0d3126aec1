// SPDX-License-Identifier: MIT
/*
 * The merged profile of lowprof merge (merge.h): profiles folded in one at a
 * time into tables of their own. Strings are interned, so the tables
 * compare them by pointer; every table keeps its first-seen order, so the
 * same profiles in the same order give the same model.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli_int.h"
#include "lowprof/grow.h"
#include "lowprof/hash.h"
#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/shard.h"
#include "lowprof/spoolname.h"
#include "merge.h"

/* at most this many distinct comment lines (other than counters) are kept */
#define MG_MAX_COMMENTS 64
/* gaps listed in the merge comment */
#define MG_MAX_GAPS 16

/*
 * An index over a table the caller owns (entries 0..n-1 in its arrays):
 * open addressing, slots hold entry + 1, at most half full; each entry's
 * hash is kept for growing.
 */
struct mg_tab {
	uint32_t *slots;
	size_t mask;
	uint64_t *hash;
	size_t n, cap;
};

typedef bool (*mg_eq_fn)(const struct cli_merge *m, uint32_t entry, const void *key);

struct cli_merge {
	uint64_t seed;
	/* interned strings */
	char **strs;
	size_t strs_cap;
	struct mg_tab str_tab;
	/* the merged profile's tables */
	struct lpw_mapping *maps;
	uint64_t *map_delta; /* maps[i] lies this far from its inputs' addresses */
	size_t maps_cap, delta_cap;
	struct mg_tab map_tab;
	struct lpw_location *locs;
	size_t locs_cap;
	struct mg_tab loc_tab;
	struct lpw_stack *stacks;
	size_t *stack_off; /* stacks[i].locs: locs_pool + stack_off[i], set at the end */
	size_t stacks_cap, off_cap;
	struct mg_tab stack_tab;
	uint32_t *pool;
	size_t pool_len, pool_cap;
	/* per input: its indices into the merged tables */
	uint32_t *map_ix, *loc_ix, *scratch;
	size_t map_ix_cap, loc_ix_cap, scratch_cap;
	/* the header, from the first input */
	struct lpw_profile p;
	const char *first;
	size_t ninputs;
	bool period_differs;
	/* comments */
	const char *other[MG_MAX_COMMENTS];
	size_t nother, dropped;
	struct cli_counts *counts;
	size_t ncounts, counts_cap;
	struct mg_seq *seqs;
	size_t nseqs, seqs_cap;
	uint32_t shard, nshards; /* of the input being added, from its name */
	char **out_comments;
	char title[600];
	/* cli_merge__set_shards: the shards of one run, merged as its profile */
	bool shards;
	bool have_title;
};

/* ---- the index ------------------------------------------------------------ */

static int tab_grow(struct mg_tab *t)
{
	size_t n = t->mask ? 2 * (t->mask + 1) : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -ENOMEM;
	for (size_t e = 0; e < t->n; e++) {
		size_t i = t->hash[e] & (n - 1);

		while (s[i])
			i = (i + 1) & (n - 1);
		s[i] = (uint32_t)e + 1;
	}
	free(t->slots);
	t->slots = s;
	t->mask = n - 1;
	return 0;
}

/*
 * The entry eq finds equal to key (hash h), or a new one (*added): t->n
 * before the call, which the caller then fills in its arrays. Returns the
 * entry, or -ENOMEM / -E2BIG.
 */
static int64_t tab_get(struct cli_merge *m, struct mg_tab *t, uint64_t h, mg_eq_fn eq,
		       const void *key, bool *added)
{
	size_t i;
	int err;

	*added = false;
	if (t->slots)
		for (i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask)
			if (t->hash[t->slots[i] - 1] == h && eq(m, t->slots[i] - 1, key))
				return t->slots[i] - 1;
	if (t->n >= UINT32_MAX - 1)
		return -E2BIG;
	err = lp_grow((void **)&t->hash, &t->cap, t->n + 1, sizeof(*t->hash), 1024, UINT32_MAX);
	if (err)
		return err;
	if (2 * (t->n + 1) > (t->slots ? t->mask + 1 : 0)) {
		err = tab_grow(t);
		if (err)
			return err;
	}
	for (i = h & t->mask; t->slots[i]; i = (i + 1) & t->mask)
		;
	t->slots[i] = (uint32_t)t->n + 1;
	t->hash[t->n] = h;
	*added = true;
	return (int64_t)t->n++;
}

static void tab_free(struct mg_tab *t)
{
	free(t->slots);
	free(t->hash);
}

/* ---- interning ------------------------------------------------------------ */

static bool str_eq(const struct cli_merge *m, uint32_t e, const void *key)
{
	return !strcmp(m->strs[e], key);
}

/*
 * Makes the array *p (of *cap elements of elem bytes) hold n + 1: room for
 * the entry tab_get may add to a table of n. Growing first means a new
 * entry never lacks its slot in the caller's arrays; any error ends the
 * merge, so an entry left half made (NULL pointers) is only freed.
 */
static int room(void *p, size_t *cap, size_t n, size_t elem)
{
	return lp_grow((void **)p, cap, n + 1, elem, 256, SIZE_MAX / elem / 2);
}

/* The merge's copy of s (NULL stays NULL); NULL with errno on failure. */
static const char *intern(struct cli_merge *m, const char *s)
{
	bool added;
	int64_t e;
	int err;

	if (!s)
		return NULL;
	err = room(&m->strs, &m->strs_cap, m->str_tab.n, sizeof(*m->strs));
	e = err ? err
		: tab_get(m, &m->str_tab, lp_hash_bytes(m->seed, s, strlen(s)), str_eq, s, &added);
	if (e >= 0 && added && !(m->strs[e] = strdup(s)))
		e = -ENOMEM;
	if (e < 0) {
		errno = (int)-e;
		return NULL;
	}
	return m->strs[e];
}

/* Interns *s in place; false (errno set) when that failed. */
static bool intern_in(struct cli_merge *m, const char **s)
{
	const char *was = *s;

	*s = intern(m, was);
	return *s || !was;
}

static uint64_t hash_ptr(uint64_t h, const void *p)
{
	return lp_mix64(h ^ (uint64_t)(uintptr_t)p);
}

/* ---- mappings, locations, stacks ------------------------------------------ */

static bool map_eq(const struct cli_merge *m, uint32_t e, const void *key)
{
	const struct lpw_mapping *a = &m->maps[e], *b = key;
	uint64_t d = m->map_delta[e];

	return a->path == b->path && a->build_id == b->build_id && a->start - d == b->start &&
	       a->limit - d == b->limit && a->file_offset == b->file_offset;
}

/* Whether [start, limit) meets one of the first n merged mappings. */
static bool overlaps(const struct cli_merge *m, size_t n, uint64_t start, uint64_t limit)
{
	for (size_t i = 0; i < n; i++)
		if (m->maps[i].start < limit && start < m->maps[i].limit)
			return true;
	return false;
}

/*
 * How far to move new mapping e from its input's addresses: nowhere, unless
 * they meet a merged mapping. Windows lay binaries out anew (the
 * symbolizer numbers the mappings each uses), so another file can hold the
 * same range in another window; the newcomer then goes above the highest
 * mapping that ends below the top of the address space, at a multiple of
 * its size as the symbolizer's are. Where there is no room it stays where
 * it was: two mappings overlap, as they would without this.
 */
static uint64_t place(const struct cli_merge *m, size_t e, const struct lpw_mapping *k)
{
	uint64_t size = k->limit - k->start, top = 0;

	if (k->limit <= k->start || !overlaps(m, e, k->start, k->limit))
		return 0;
	for (size_t i = 0; i < e; i++)
		if (m->maps[i].limit != UINT64_MAX && m->maps[i].limit > top)
			top = m->maps[i].limit;
	if (top % size && top > UINT64_MAX - (size - top % size))
		return 0;
	top += top % size ? size - top % size : 0;
	if (top > UINT64_MAX - size || overlaps(m, e, top, top + size))
		return 0;
	return top - k->start;
}

/* Mapping i of input p into the merged table: m->map_ix[i]. */
static int merge_mapping(struct cli_merge *m, const struct lpw_profile *p, size_t i)
{
	struct lpw_mapping k = p->mappings[i];
	uint64_t h;
	bool added;
	int64_t e;
	int err;

	if (!intern_in(m, &k.path) || !intern_in(m, &k.build_id))
		return -ENOMEM;
	h = hash_ptr(hash_ptr(m->seed, k.path), k.build_id);
	h = lp_mix64(h ^ k.start) ^ lp_mix64(k.limit + 1) ^ lp_mix64(k.file_offset + 2);
	if (m->map_tab.n + 1 >= LPW_NO_MAPPING)
		return -E2BIG;
	err = room(&m->maps, &m->maps_cap, m->map_tab.n, sizeof(*m->maps));
	if (!err)
		err = room(&m->map_delta, &m->delta_cap, m->map_tab.n, sizeof(*m->map_delta));
	e = err ? err : tab_get(m, &m->map_tab, h, map_eq, &k, &added);
	if (e < 0)
		return (int)e;
	if (added) {
		m->map_delta[e] = place(m, (size_t)e, &k);
		m->maps[e] = k;
		m->maps[e].start += m->map_delta[e];
		m->maps[e].limit += m->map_delta[e];
	}
	m->maps[e].has_functions |= k.has_functions;
	m->map_ix[i] = (uint32_t)e;
	return 0;
}

static bool loc_eq(const struct cli_merge *m, uint32_t e, const void *key)
{
	const struct lpw_location *a = &m->locs[e], *b = key;

	if (a->mapping != b->mapping || a->address != b->address || a->function != b->function ||
	    a->kernel != b->kernel || a->resolved != b->resolved || a->nlines != b->nlines)
		return false;
	for (uint32_t k = 0; k < a->nlines; k++)
		if (a->lines[k].function != b->lines[k].function ||
		    a->lines[k].file != b->lines[k].file || a->lines[k].line != b->lines[k].line)
			return false;
	return true;
}

static uint64_t loc_hash(const struct cli_merge *m, const struct lpw_location *l)
{
	uint64_t h = lp_mix64(m->seed ^ l->mapping) ^ lp_mix64(l->address);

	h = hash_ptr(h, l->function) ^ ((uint64_t)l->kernel << 1 | l->resolved);
	for (uint32_t k = 0; k < l->nlines; k++)
		h = hash_ptr(hash_ptr(h, l->lines[k].function), l->lines[k].file) ^
		    l->lines[k].line;
	return lp_mix64(h);
}

/* Location i of input p (its lines copied into lines) into the merged table. */
static int merge_location(struct cli_merge *m, const struct lpw_profile *p, size_t i,
			  struct lpw_line *lines)
{
	struct lpw_location k = p->locations[i];
	bool added;
	int64_t e;
	int err;

	if (k.mapping != LPW_NO_MAPPING) {
		k.mapping = m->map_ix[k.mapping];
		k.address += m->map_delta[k.mapping]; /* wraps as the mapping's did */
	}
	if (!intern_in(m, &k.function))
		return -ENOMEM;
	for (uint32_t j = 0; j < k.nlines; j++) {
		lines[j] = k.lines[j];
		if (!intern_in(m, &lines[j].function) || !intern_in(m, &lines[j].file))
			return -ENOMEM;
	}
	k.lines = lines;
	err = room(&m->locs, &m->locs_cap, m->loc_tab.n, sizeof(*m->locs));
	e = err ? err : tab_get(m, &m->loc_tab, loc_hash(m, &k), loc_eq, &k, &added);
	if (e < 0)
		return (int)e;
	m->loc_ix[i] = (uint32_t)e;
	if (!added)
		return 0;
	m->locs[e] = k;
	m->locs[e].lines = NULL;
	if (!k.nlines)
		return 0;
	m->locs[e].lines = malloc(k.nlines * sizeof(*k.lines));
	if (!m->locs[e].lines)
		return -ENOMEM;
	memcpy((void *)m->locs[e].lines, lines, k.nlines * sizeof(*k.lines));
	return 0;
}

static bool stack_eq(const struct cli_merge *m, uint32_t e, const void *key)
{
	const struct lpw_stack *a = &m->stacks[e], *b = key;

	return a->nlocs == b->nlocs && a->pid == b->pid && a->comm == b->comm && a->exe == b->exe &&
	       a->cgroup == b->cgroup && a->container_id == b->container_id &&
	       a->pod_uid == b->pod_uid &&
	       (!b->nlocs ||
		!memcmp(m->pool + m->stack_off[e], b->locs, b->nlocs * sizeof(*b->locs)));
}

static uint64_t stack_hash(const struct cli_merge *m, const struct lpw_stack *s)
{
	uint64_t h = lp_hash_bytes(m->seed ^ s->pid, s->locs, s->nlocs * sizeof(*s->locs));

	h = hash_ptr(hash_ptr(h, s->comm), s->exe);
	h = hash_ptr(hash_ptr(h, s->cgroup), s->container_id);
	return hash_ptr(h, s->pod_uid);
}

static int merge_stack(struct cli_merge *m, const struct lpw_stack *st)
{
	struct lpw_stack k = *st;
	bool added;
	int64_t e;
	int err;

	for (uint32_t j = 0; j < k.nlocs; j++)
		m->scratch[j] = m->loc_ix[st->locs[j]];
	k.locs = m->scratch;
	if (!intern_in(m, &k.comm) || !intern_in(m, &k.exe) || !intern_in(m, &k.cgroup) ||
	    !intern_in(m, &k.container_id) || !intern_in(m, &k.pod_uid))
		return -ENOMEM;
	err = room(&m->stacks, &m->stacks_cap, m->stack_tab.n, sizeof(*m->stacks));
	if (!err)
		err = room(&m->stack_off, &m->off_cap, m->stack_tab.n, sizeof(*m->stack_off));
	if (!err)
		err = room(&m->pool, &m->pool_cap, m->pool_len + k.nlocs, sizeof(*m->pool));
	e = err ? err : tab_get(m, &m->stack_tab, stack_hash(m, &k), stack_eq, &k, &added);
	if (e < 0)
		return (int)e;
	if (added) {
		/* new: its location list into the pool */
		m->stacks[e] = k;
		m->stacks[e].values[0] = m->stacks[e].values[1] = 0;
		m->stack_off[e] = m->pool_len;
		memcpy(m->pool + m->pool_len, k.locs, k.nlocs * sizeof(*k.locs));
		m->pool_len += k.nlocs;
	}
	/* wrapping (not overflowing: undefined) on absurd sums */
	m->stacks[e].values[0] =
		(int64_t)((uint64_t)m->stacks[e].values[0] + (uint64_t)k.values[0]);
	m->stacks[e].values[1] =
		(int64_t)((uint64_t)m->stacks[e].values[1] + (uint64_t)k.values[1]);
	return 0;
}

/* ---- comments ------------------------------------------------------------- */

/* "lowprof window N" (build.c's describe()): N, or -1 */
static int64_t window_seq(const char *c)
{
	static const char pre[] = "lowprof window ";
	uint64_t v;

	if (strncmp(c, pre, sizeof(pre) - 1) || lp_parse_uint(c + sizeof(pre) - 1, INT64_MAX, &v))
		return -1;
	return (int64_t)v;
}

/* A "lowprof window N" line's number, and the shard of its file. */
struct mg_seq {
	uint64_t seq;
	uint32_t shard, nshards; /* nshards 1: no shard's */
};

static int merge_comment(struct cli_merge *m, const char *c)
{
	int64_t seq = window_seq(c);
	struct cli_counts k;
	const char *s;
	size_t i;
	int err;

	if (m->shards && !strncmp(c, LP_SHARD_TITLE, sizeof(LP_SHARD_TITLE) - 1)) {
		if (!m->have_title)
			snprintf(m->title, sizeof(m->title), "%s", c + sizeof(LP_SHARD_TITLE) - 1);
		m->have_title = true;
		return 0;
	}

	if (seq >= 0) {
		err = room(&m->seqs, &m->seqs_cap, m->nseqs, sizeof(*m->seqs));
		if (!err)
			m->seqs[m->nseqs++] = (struct mg_seq){(uint64_t)seq, m->shard, m->nshards};
		return err;
	}
	if (!cli_counts_parse(c, &k)) {
		for (i = 0; i < m->ncounts; i++)
			if (m->counts[i].n == k.n && !strcmp(m->counts[i].shape, k.shape))
				break;
		if (i < m->ncounts) {
			for (int j = 0; j < k.n; j++)
				m->counts[i].v[j] += k.v[j];
			return 0;
		}
		err = lp_grow((void **)&m->counts, &m->counts_cap, m->ncounts + 1,
			      sizeof(*m->counts), 4, 1024);
		if (err)
			return err == -E2BIG ? 0 : err;
		m->counts[m->ncounts++] = k;
		return 0;
	}
	s = intern(m, c);
	if (!s)
		return -ENOMEM;
	for (i = 0; i < m->nother; i++)
		if (m->other[i] == s)
			return 0;
	if (m->nother == MG_MAX_COMMENTS)
		m->dropped++;
	else
		m->other[m->nother++] = s;
	return 0;
}

/* ---- inputs --------------------------------------------------------------- */

static bool same_type(const struct lpw_value_type *a, const struct lpw_value_type *b)
{
	return !strcmp(a->type, b->type) && !strcmp(a->unit, b->unit);
}

/* The header of the first input; the others must have its sample types. */
static int merge_header(struct cli_merge *m, const struct lpw_profile *p, const char *name)
{
	int64_t end, m_end;

	if (!m->ninputs) {
		m->p = *p;
		m->p.value_types[0].type = intern(m, p->value_types[0].type);
		m->p.value_types[0].unit = intern(m, p->value_types[0].unit);
		m->p.value_types[1].type = intern(m, p->value_types[1].type);
		m->p.value_types[1].unit = intern(m, p->value_types[1].unit);
		m->p.period_type.type = intern(m, p->period_type.type);
		m->p.period_type.unit = intern(m, p->period_type.unit);
		m->first = intern(m, name); /* for later messages: the caller's may go */
		if (!m->p.value_types[0].type || !m->p.value_types[0].unit ||
		    !m->p.value_types[1].type || !m->p.value_types[1].unit ||
		    !m->p.period_type.type || !m->p.period_type.unit || !m->first)
			return -ENOMEM;
		return 0;
	}
	if (!same_type(&p->value_types[0], &m->p.value_types[0]) ||
	    !same_type(&p->value_types[1], &m->p.value_types[1])) {
		lp_err("%s: its sample types (%s/%s, %s/%s) are not those of %s (%s/%s, %s/%s): "
		       "merge cpu and offcpu windows apart",
		       name, p->value_types[0].type, p->value_types[0].unit, p->value_types[1].type,
		       p->value_types[1].unit, m->first, m->p.value_types[0].type,
		       m->p.value_types[0].unit, m->p.value_types[1].type,
		       m->p.value_types[1].unit);
		return -EINVAL;
	}
	if (p->period != m->p.period) {
		m->period_differs = true;
		if (p->period > m->p.period)
			m->p.period = p->period;
	}
	if (__builtin_add_overflow(p->time_nanos, p->duration_nanos, &end))
		end = INT64_MAX;
	if (__builtin_add_overflow(m->p.time_nanos, m->p.duration_nanos, &m_end))
		m_end = INT64_MAX;
	if (p->time_nanos < m->p.time_nanos)
		m->p.time_nanos = p->time_nanos;
	if (end > m_end)
		m_end = end;
	if (__builtin_sub_overflow(m_end, m->p.time_nanos, &m->p.duration_nanos))
		m->p.duration_nanos = INT64_MAX;
	return 0;
}

/* Room for input p's index tables. */
static int merge_room(struct cli_merge *m, const struct lpw_profile *p, size_t *maxlines)
{
	size_t maxlocs = 0;
	int err;

	*maxlines = 0;
	for (size_t i = 0; i < p->nlocations; i++)
		if (p->locations[i].nlines > *maxlines)
			*maxlines = p->locations[i].nlines;
	for (size_t i = 0; i < p->nstacks; i++)
		if (p->stacks[i].nlocs > maxlocs)
			maxlocs = p->stacks[i].nlocs;
	err = room(&m->map_ix, &m->map_ix_cap, p->nmappings, sizeof(*m->map_ix));
	if (!err)
		err = room(&m->loc_ix, &m->loc_ix_cap, p->nlocations, sizeof(*m->loc_ix));
	if (!err)
		err = room(&m->scratch, &m->scratch_cap, maxlocs, sizeof(*m->scratch));
	return err;
}

int cli_merge__add(struct cli_merge *m, const struct lpw_profile *p, const char *name)
{
	struct lpw_line *lines = NULL;
	const char *base = strrchr(name, '/');
	struct lp_spool_name sn;
	size_t maxlines;
	int err = merge_header(m, p, name);

	/* a shard's window (by its file's name): its number is one window with its siblings' */
	m->shard = 0;
	m->nshards = 1;
	if (!lp_spool_parse(base ? base + 1 : name, &sn)) {
		m->shard = sn.shard;
		m->nshards = sn.nshards;
	}

	if (!err)
		err = merge_room(m, p, &maxlines);
	if (!err && maxlines && !(lines = malloc(maxlines * sizeof(*lines))))
		err = -ENOMEM;
	for (size_t i = 0; !err && i < p->nmappings; i++)
		err = merge_mapping(m, p, i);
	for (size_t i = 0; !err && i < p->nlocations; i++)
		err = merge_location(m, p, i, lines);
	for (size_t i = 0; !err && i < p->nstacks; i++)
		err = merge_stack(m, &p->stacks[i]);
	for (size_t i = 0; !err && i < p->ncomments; i++)
		err = merge_comment(m, p->comments[i]);
	free(lines);
	if (!err)
		m->ninputs++;
	else if (err != -EINVAL)
		lp_err("%s: merging it: %s", name, strerror(-err));
	return err;
}

/* ---- the merged profile --------------------------------------------------- */

static int cmp_seq(const void *a, const void *b)
{
	const struct mg_seq *x = a, *y = b;

	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->nshards != y->nshards)
		return x->nshards < y->nshards ? -1 : 1;
	return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/*
 * Over m->seqs (sorted): *nums distinct numbers, *files distinct (number,
 * shard), *lacking numbers a shard's file is missing for (some shard of
 * its run has one); whether any is a shard's.
 */
static bool count_seqs(const struct cli_merge *m, size_t *nums, size_t *files, size_t *lacking)
{
	bool shards = false;

	*nums = *files = *lacking = 0;
	for (size_t i = 0; i < m->nseqs; i++) {
		const struct mg_seq *e = &m->seqs[i], *prev = i ? &m->seqs[i - 1] : NULL;
		size_t have = 0, q;

		*nums += !prev || prev->seq != e->seq;
		*files += !prev || cmp_seq(prev, e);
		shards |= e->nshards > 1;
		/* at the first entry of a number and run split in nshards: its shards there */
		if (e->nshards <= 1 || (prev && prev->seq == e->seq && prev->nshards == e->nshards))
			continue;
		for (q = i;
		     q < m->nseqs && m->seqs[q].seq == e->seq && m->seqs[q].nshards == e->nshards;
		     q++)
			have += q == i || m->seqs[q].shard != m->seqs[q - 1].shard;
		*lacking += have < e->nshards;
	}
	return shards;
}

/* "lowprof merge: N windows, SEQ a..b, missing: c..d, e" into a new string */
static char *merge_line(struct cli_merge *m)
{
	char *buf = NULL;
	size_t len = 0, gaps = 0, n = 0, files, lacking;
	FILE *f = open_memstream(&buf, &len);
	bool sharded; /* some inputs are shards' windows */

	if (!f)
		return NULL;
	if (m->nseqs) /* m->seqs is NULL without windows: qsort's base must not be */
		qsort(m->seqs, m->nseqs, sizeof(*m->seqs), cmp_seq);
	sharded = count_seqs(m, &n, &files, &lacking);
	if (!m->nseqs)
		fprintf(f, "lowprof merge: %zu profile%s", m->ninputs, m->ninputs == 1 ? "" : "s");
	else if (!sharded)
		fprintf(f, "lowprof merge: %zu window%s, SEQ %" PRIu64 "..%" PRIu64, m->nseqs,
			m->nseqs == 1 ? "" : "s", m->seqs[0].seq, m->seqs[m->nseqs - 1].seq);
	else
		/* a number's shard files are one window */
		fprintf(f,
			"lowprof merge: %zu window%s in %zu shard files, SEQ %" PRIu64 "..%" PRIu64,
			n, n == 1 ? "" : "s", m->nseqs, m->seqs[0].seq, m->seqs[m->nseqs - 1].seq);
	if (!sharded && n < m->nseqs)
		fprintf(f, " (%zu numbers repeated: several runs?)", m->nseqs - n);
	if (sharded && files < m->nseqs)
		fprintf(f, " (%zu files repeated: several runs?)", m->nseqs - files);
	if (lacking)
		fprintf(f, " (%zu number%s a shard's file)", lacking,
			lacking == 1 ? " lacks" : "s lack");
	if (m->nseqs && m->ninputs > m->nseqs)
		fprintf(f, " and %zu profile%s without a number", m->ninputs - m->nseqs,
			m->ninputs - m->nseqs == 1 ? "" : "s");
	for (size_t i = 1; i < m->nseqs; i++) {
		uint64_t a = m->seqs[i - 1].seq + 1, b = m->seqs[i].seq - 1;

		if (m->seqs[i].seq <= a)
			continue;
		if (gaps++ == MG_MAX_GAPS) {
			fprintf(f, ", ...");
			break;
		}
		fprintf(f, "%s", gaps == 1 ? ", missing: " : ", ");
		if (a == b)
			fprintf(f, "%" PRIu64, a);
		else
			fprintf(f, "%" PRIu64 "..%" PRIu64, a, b);
	}
	if (m->ncounts)
		fprintf(f, "; their loss counters summed");
	if (m->period_differs)
		fprintf(f, "; their periods differ, the largest is kept");
	if (m->dropped)
		fprintf(f, "; %zu more distinct comment lines left out", m->dropped);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The merged model: pointers set, comments and title made. */
static int merge_finish(struct cli_merge *m)
{
	size_t n = m->nother + m->ncounts + 1;
	char when[32];

	for (size_t i = 0; i < m->stack_tab.n; i++)
		m->stacks[i].locs = m->pool + m->stack_off[i];
	m->p.mappings = m->maps;
	m->p.nmappings = m->map_tab.n;
	m->p.locations = m->locs;
	m->p.nlocations = m->loc_tab.n;
	m->p.stacks = m->stacks;
	m->p.nstacks = m->stack_tab.n;
	/* what cli_merge__free frees: the first input's count means nothing here */
	m->p.ncomments = 0;
	m->out_comments = calloc(n, sizeof(*m->out_comments));
	if (!m->out_comments)
		return -ENOMEM;
	m->p.comments = (const char *const *)m->out_comments;
	for (size_t i = 0; i < m->nother; i++)
		m->out_comments[m->p.ncomments++] = (char *)m->other[i];
	for (size_t i = 0; i < m->ncounts; i++) {
		char line[512];

		cli_counts_format(&m->counts[i], line, sizeof(line));
		if (!(m->out_comments[m->p.ncomments++] = strdup(line)))
			return -ENOMEM;
	}
	m->p.title = m->title;
	if (m->shards) {
		/* one run's profile: as one symbolizer writes it, no merge line */
		if (!m->have_title)
			snprintf(m->title, sizeof(m->title), "lowprof %s",
				 m->p.value_types[1].type);
		return 0;
	}
	if (!(m->out_comments[m->p.ncomments++] = merge_line(m)))
		return -ENOMEM;
	snprintf(m->title, sizeof(m->title), "lowprof %s: %zu profiles from %s, %.0f s",
		 m->p.value_types[1].type, m->ninputs,
		 cli_fmt_utc(when, sizeof(when), m->p.time_nanos), m->p.duration_nanos / 1e9);
	return 0;
}

struct cli_merge *cli_merge__new(void)
{
	struct cli_merge *m = calloc(1, sizeof(*m));

	/* the tables' hashes: not chosen by the files' contents */
	if (m)
		m->seed = lp_mix64((uint64_t)time(NULL) ^ (uint64_t)getpid() << 32 ^
				   (uint64_t)(uintptr_t)m);
	return m;
}

void cli_merge__set_shards(struct cli_merge *m)
{
	m->shards = true;
}

const struct lpw_profile *cli_merge__profile(struct cli_merge *m)
{
	if (!m->ninputs || m->out_comments) {
		errno = EINVAL;
		return NULL;
	}
	if (merge_finish(m)) {
		errno = ENOMEM;
		return NULL;
	}
	return &m->p;
}

void cli_merge__free(struct cli_merge *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->str_tab.n; i++)
		free(m->strs[i]);
	for (size_t i = 0; i < m->loc_tab.n; i++)
		free((void *)m->locs[i].lines);
	if (m->out_comments)
		for (size_t i = m->nother; i < m->p.ncomments; i++)
			free(m->out_comments[i]);
	free(m->out_comments);
	free(m->strs);
	free(m->maps);
	free(m->map_delta);
	free(m->locs);
	free(m->stacks);
	free(m->stack_off);
	free(m->pool);
	free(m->map_ix);
	free(m->loc_ix);
	free(m->scratch);
	free(m->counts);
	free(m->seqs);
	tab_free(&m->str_tab);
	tab_free(&m->map_tab);
	tab_free(&m->loc_tab);
	tab_free(&m->stack_tab);
	free(m);
}
