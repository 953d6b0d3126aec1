// SPDX-License-Identifier: MIT
/*
 * pprof reader (lowprof/pprof_read.h): file -> gunzip -> protobuf-c under a
 * memory budget -> checked conversion into struct lpw_profile.
 *
 * The model points into the unpacked message: its strings are the string
 * table's, so the message lives as long as the reader. Ids are resolved
 * through sorted (id, index) tables; lowprof writes ids 1..n in order, which
 * the lookup takes without a search.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <libdeflate.h>

#include "lowprof/arena.h"
#include "lowprof/opts.h"
#include "lowprof/pprof_read.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;

/*
 * protobuf-c's allocations, counted against a budget, carved from chunks
 * that go all at once with the reader: protobuf-c allocates every string,
 * array and submessage apart (several per sample), and the mallocs and
 * frees of a profile's ~100k of them cost lowprof's merge of shards more
 * than the unpacking itself. A free is a no-op: nothing is handed back
 * before the end, so used is what was ever asked for, at most max.
 */
struct rd_budget {
	size_t used, max;
	bool refused;
	struct lp_arena arena;
};

struct lpw_read {
	struct rd_budget budget;
	ProtobufCAllocator alloc; /* allocator_data: &budget */
	pb_profile *m;
	struct lpw_profile p;
	struct lpw_mapping *mappings;
	struct lpw_location *locations;
	struct lpw_line *lines;
	struct lpw_stack *stacks;
	uint32_t *locs;
	const char **comments;
};

/* id -> index tables, sorted by id */
struct rd_id {
	uint64_t id;
	uint32_t ix;
};

struct rd_ctx {
	const pb_profile *m;
	struct lpw_read *r;
	struct rd_id *map_ids, *func_ids, *loc_ids;
	char *why;
	size_t why_len;
};

/* ---- bytes ---------------------------------------------------------------- */

#define RD_ALIGN 16	      /* malloc's alignment on x86_64 */
#define RD_CHUNK (256u << 10) /* the arena's chunks */

static void *rd_alloc(void *data, size_t size)
{
	struct rd_budget *b = data;
	void *p;

	if (size > b->max - b->used) {
		b->refused = true;
		return NULL;
	}
	p = lp_arena_alloc(&b->arena, size, RD_ALIGN);
	if (p)
		b->used += size;
	return p;
}

static void rd_free(void *data, void *ptr)
{
	(void)data;
	(void)ptr; /* the chunks go at once: rd_free_all */
}

static void rd_free_all(struct rd_budget *b)
{
	lp_arena_free(&b->arena);
}

static int rd_fail(char *why, size_t len, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int rd_fail(char *why, size_t len, int err, const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

/* All of fd from its offset: *buf (free it), *len. -EFBIG past max bytes. */
static int rd_read_all(int fd, size_t max, uint8_t **buf, size_t *len)
{
	struct stat st;
	size_t cap = 65536, n = 0;
	uint8_t *p;

	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
		cap = (uint64_t)st.st_size < max ? (size_t)st.st_size + 1 : max + 1;
	p = malloc(cap);
	if (!p)
		return -ENOMEM;
	for (;;) {
		ssize_t r;

		if (n == cap) {
			uint8_t *q;

			if (cap > max) {
				free(p);
				return -EFBIG;
			}
			cap = cap > max / 2 ? max + 1 : cap * 2;
			q = realloc(p, cap);
			if (!q) {
				free(p);
				return -ENOMEM;
			}
			p = q;
		}
		r = read(fd, p + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int err = -errno;

			free(p);
			return err;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free(p);
		return -EFBIG;
	}
	*buf = p;
	*len = n;
	return 0;
}

/*
 * gunzip of one gzip member that is all of in: *out (free it), *out_len.
 * The trailer's size (mod 2^32) is the first guess at the output's; it
 * doubles up to max.
 */
static int rd_gunzip(const uint8_t *in, size_t len, size_t max, uint8_t **out, size_t *out_len,
		     char *why, size_t why_len)
{
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	enum libdeflate_result res = LIBDEFLATE_BAD_DATA;
	size_t cap = 4096, in_used = 0;
	uint8_t *buf = NULL;
	int err = 0;

	if (!d)
		return -ENOMEM;
	if (len >= 18) {
		uint32_t isize = (uint32_t)in[len - 4] | (uint32_t)in[len - 3] << 8 |
				 (uint32_t)in[len - 2] << 16 | (uint32_t)in[len - 1] << 24;

		/* deflate expands at most 1032 times: a bigger claim is a lie */
		if (isize > cap)
			cap = isize / 1032 > len ? len * 1032 : isize;
	}
	if (cap > max)
		cap = max;
	for (;;) {
		uint8_t *n = realloc(buf, cap ? cap : 1);

		if (!n) {
			err = -ENOMEM;
			break;
		}
		buf = n;
		res = libdeflate_gzip_decompress_ex(d, in, len, buf, cap, &in_used, out_len);
		if (res != LIBDEFLATE_INSUFFICIENT_SPACE)
			break;
		if (cap >= max) {
			err = rd_fail(why, why_len, -EFBIG, "larger than %zu MiB after gunzip",
				      max >> 20);
			break;
		}
		cap = cap > max / 2 ? max : cap * 2;
	}
	libdeflate_free_decompressor(d);
	if (!err && res != LIBDEFLATE_SUCCESS)
		err = rd_fail(why, why_len, -EBADMSG, "not valid gzip data");
	if (!err && in_used != len)
		err = rd_fail(why, why_len, -EBADMSG, "%zu bytes after the gzip data",
			      len - in_used);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	return 0;
}

/* ---- checks --------------------------------------------------------------- */

/* The reason a check failed, in c->why: -EBADMSG. */
#define rd_bad(c, ...) rd_fail((c)->why, (c)->why_len, -EBADMSG, __VA_ARGS__)

/* String ix of the table, or NULL when out of range. */
static const char *rd_str(const struct rd_ctx *c, int64_t ix)
{
	if (ix < 0 || (uint64_t)ix >= c->m->n_string_table)
		return NULL;
	return c->m->string_table[ix] ? c->m->string_table[ix] : "";
}

/* The same, NULL for "" too (an unknown build id or file). */
static const char *rd_str_opt(const struct rd_ctx *c, int64_t ix)
{
	const char *s = rd_str(c, ix);

	return s && s[0] ? s : NULL;
}

static int cmp_id(const void *a, const void *b)
{
	const struct rd_id *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

/* The sorted table of n ids (id(i) for i < n); -EBADMSG for 0 or a repeat. */
static int rd_ids(struct rd_ctx *c, struct rd_id **out, size_t n, const char *what,
		  uint64_t (*id)(const pb_profile *, size_t))
{
	struct rd_id *v = malloc((n ? n : 1) * sizeof(*v));
	bool sorted = true;

	*out = v;
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		v[i] = (struct rd_id){id(c->m, i), (uint32_t)i};
		if (!v[i].id)
			return rd_bad(c, "%s %zu has id 0", what, i);
		if (i && v[i].id <= v[i - 1].id)
			sorted = false;
	}
	if (!sorted)
		qsort(v, n, sizeof(*v), cmp_id);
	for (size_t i = 1; i < n; i++)
		if (v[i].id == v[i - 1].id)
			return rd_bad(c, "two %ss with id %llu", what, (unsigned long long)v[i].id);
	return 0;
}

/* Index of id in the sorted table v of n, or -1. */
static int64_t rd_find(const struct rd_id *v, size_t n, uint64_t id)
{
	size_t lo = 0, hi = n;

	if (id && id <= n && v[id - 1].id == id)
		return v[id - 1].ix;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].id == id)
			return v[mid].ix;
		if (v[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static uint64_t mapping_id(const pb_profile *m, size_t i)
{
	return m->mapping[i]->id;
}

static uint64_t function_id(const pb_profile *m, size_t i)
{
	return m->function[i]->id;
}

static uint64_t location_id(const pb_profile *m, size_t i)
{
	return m->location[i]->id;
}

/* ---- conversion ----------------------------------------------------------- */

static int rd_value_type(struct rd_ctx *c, const Perftools__Profiles__ValueType *vt,
			 struct lpw_value_type *out, const char *what)
{
	out->type = vt ? rd_str(c, vt->type) : "";
	out->unit = vt ? rd_str(c, vt->unit) : "";
	if (!out->type || !out->unit)
		return rd_bad(c, "%s: string index out of range", what);
	return 0;
}

/* Sample types, period, times, comments: everything but the tables. */
static int rd_header(struct rd_ctx *c)
{
	const pb_profile *m = c->m;
	struct lpw_profile *p = &c->r->p;
	const char *dflt;
	int err;

	if (!m->n_string_table || (m->string_table[0] && m->string_table[0][0]))
		return rd_bad(c, "the string table does not start with \"\"");
	if (m->n_sample_type != 2)
		return rd_bad(c, "%zu sample types (lowprof's profiles have 2)", m->n_sample_type);
	for (int i = 0; i < 2; i++) {
		err = rd_value_type(c, m->sample_type[i], &p->value_types[i], "sample type");
		if (err)
			return err;
	}
	err = rd_value_type(c, m->period_type, &p->period_type, "period type");
	if (err)
		return err;
	dflt = rd_str(c, m->default_sample_type);
	if (!dflt || !rd_str(c, m->drop_frames) || !rd_str(c, m->keep_frames))
		return rd_bad(c, "default sample type or frame filter: string index out of range");
	/* the one the writer marks: what folded output and HTML show */
	p->folded_value = dflt[0] && !strcmp(dflt, p->value_types[1].type) &&
			  strcmp(dflt, p->value_types[0].type);
	if (m->duration_nanos < 0)
		return rd_bad(c, "negative duration");
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	c->r->comments = calloc(m->n_comment ? m->n_comment : 1, sizeof(*c->r->comments));
	if (!c->r->comments)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_comment; i++) {
		c->r->comments[i] = rd_str(c, m->comment[i]);
		if (!c->r->comments[i])
			return rd_bad(c, "comment %zu: string index out of range", i);
	}
	p->comments = c->r->comments;
	p->ncomments = m->n_comment;
	return 0;
}

static int rd_mappings(struct rd_ctx *c)
{
	const pb_profile *m = c->m;
	struct lpw_mapping *v;
	int err;

	if (m->n_mapping >= LPW_NO_MAPPING)
		return rd_bad(c, "too many mappings");
	err = rd_ids(c, &c->map_ids, m->n_mapping, "mapping", mapping_id);
	if (err)
		return err;
	v = calloc(m->n_mapping ? m->n_mapping : 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	c->r->mappings = v;
	for (size_t i = 0; i < m->n_mapping; i++) {
		const Perftools__Profiles__Mapping *pm = m->mapping[i];

		v[i].path = rd_str(c, pm->filename);
		v[i].build_id = rd_str_opt(c, pm->build_id);
		if (!v[i].path || !rd_str(c, pm->build_id))
			return rd_bad(c, "mapping %llu: string index out of range",
				      (unsigned long long)pm->id);
		v[i].start = pm->memory_start;
		v[i].limit = pm->memory_limit;
		v[i].file_offset = pm->file_offset;
		v[i].has_functions = pm->has_functions;
	}
	c->r->p.mappings = v;
	c->r->p.nmappings = m->n_mapping;
	return 0;
}

/* The functions' strings, all checked here, once. */
static int rd_functions(struct rd_ctx *c)
{
	const pb_profile *m = c->m;
	int err = rd_ids(c, &c->func_ids, m->n_function, "function", function_id);

	if (err)
		return err;
	for (size_t i = 0; i < m->n_function; i++) {
		const Perftools__Profiles__Function *f = m->function[i];

		if (!rd_str(c, f->name) || !rd_str(c, f->system_name) || !rd_str(c, f->filename))
			return rd_bad(c, "function %llu: string index out of range",
				      (unsigned long long)f->id);
	}
	return 0;
}

/* The names lowprof gives frames it could not resolve: "[...]" and "NAME+0xHEX". */
static bool rd_name_resolved(const char *s)
{
	const char *plus = strrchr(s, '+');

	if (s[0] == '[')
		return false;
	if (!plus || plus == s || plus[1] != '0' || plus[2] != 'x' || !plus[3])
		return true;
	return strspn(plus + 3, "0123456789abcdef") != strlen(plus + 3);
}

/* Line k of location l into out; -EBADMSG for a bad function id or line. */
static int rd_line(struct rd_ctx *c, const Perftools__Profiles__Location *l, size_t k,
		   struct lpw_line *out)
{
	const Perftools__Profiles__Line *ln = l->line[k];
	int64_t f = rd_find(c->func_ids, c->m->n_function, ln->function_id);
	const Perftools__Profiles__Function *fn;

	if (f < 0)
		return rd_bad(c, "location %llu: no function %llu", (unsigned long long)l->id,
			      (unsigned long long)ln->function_id);
	if (ln->line < 0 || ln->line > UINT32_MAX)
		return rd_bad(c, "location %llu: line number %lld out of range",
			      (unsigned long long)l->id, (long long)ln->line);
	fn = c->m->function[f];
	out->function = rd_str(c, fn->name);
	out->file = rd_str_opt(c, fn->filename);
	out->line = (uint32_t)ln->line;
	return 0;
}

static int rd_location(struct rd_ctx *c, size_t i, struct lpw_line *lines)
{
	const Perftools__Profiles__Location *l = c->m->location[i];
	struct lpw_location *out = &c->r->locations[i];
	int err;

	out->mapping = LPW_NO_MAPPING;
	if (l->mapping_id) {
		int64_t mi = rd_find(c->map_ids, c->m->n_mapping, l->mapping_id);

		if (mi < 0)
			return rd_bad(c, "location %llu: no mapping %llu",
				      (unsigned long long)l->id, (unsigned long long)l->mapping_id);
		out->mapping = (uint32_t)mi;
		out->kernel = !strcmp(c->r->mappings[mi].path, "[kernel.kallsyms]");
	}
	out->address = l->address;
	for (size_t k = 0; k < l->n_line; k++) {
		err = rd_line(c, l, k, &lines[k]);
		if (err)
			return err;
	}
	out->function = l->n_line ? lines[l->n_line - 1].function : "[unknown]";
	/* one line with neither file nor line: a plain function, as written */
	if (l->n_line > 1 || (l->n_line == 1 && (lines[0].file || lines[0].line))) {
		out->lines = lines;
		out->nlines = (uint32_t)l->n_line;
	}
	out->resolved = out->nlines || rd_name_resolved(out->function);
	return 0;
}

static int rd_locations(struct rd_ctx *c)
{
	const pb_profile *m = c->m;
	size_t nlines = 0, off = 0;
	int err;

	if (m->n_location >= UINT32_MAX)
		return rd_bad(c, "too many locations");
	err = rd_ids(c, &c->loc_ids, m->n_location, "location", location_id);
	if (err)
		return err;
	for (size_t i = 0; i < m->n_location; i++) {
		if (m->location[i]->n_line > UINT32_MAX)
			return rd_bad(c, "location %zu: too many lines", i);
		nlines += m->location[i]->n_line;
	}
	c->r->locations = calloc(m->n_location ? m->n_location : 1, sizeof(*c->r->locations));
	c->r->lines = calloc(nlines ? nlines : 1, sizeof(*c->r->lines));
	if (!c->r->locations || !c->r->lines)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_location; i++) {
		err = rd_location(c, i, c->r->lines + off);
		if (err)
			return err;
		off += m->location[i]->n_line;
	}
	c->r->p.locations = c->r->locations;
	c->r->p.nlocations = m->n_location;
	return 0;
}

/* The labels of sample i that the model holds; the others' indices checked. */
static int rd_labels(struct rd_ctx *c, size_t i, struct lpw_stack *st)
{
	static const char *const keys[] = {"comm", "exe", "cgroup", "container.id", "k8s.pod.uid"};
	const Perftools__Profiles__Sample *s = c->m->sample[i];
	const char **slots[] = {&st->comm, &st->exe, &st->cgroup, &st->container_id, &st->pod_uid};

	for (size_t k = 0; k < s->n_label; k++) {
		const Perftools__Profiles__Label *l = s->label[k];
		const char *key = rd_str(c, l->key), *str = rd_str(c, l->str);

		if (!key || !str || !rd_str(c, l->num_unit))
			return rd_bad(c, "sample %zu: label string index out of range", i);
		if (!strcmp(key, "pid")) {
			if (l->num < 0 || l->num > UINT32_MAX)
				return rd_bad(c, "sample %zu: pid %lld out of range", i,
					      (long long)l->num);
			st->pid = (uint32_t)l->num;
			continue;
		}
		for (size_t j = 0; j < sizeof(keys) / sizeof(keys[0]); j++)
			if (!strcmp(key, keys[j]))
				*slots[j] = str;
	}
	if (!st->comm)
		st->comm = "";
	return 0;
}

static int rd_samples(struct rd_ctx *c)
{
	const pb_profile *m = c->m;
	size_t nlocs = 0, off = 0;
	int err;

	for (size_t i = 0; i < m->n_sample; i++) {
		if (m->sample[i]->n_location_id > UINT32_MAX)
			return rd_bad(c, "sample %zu: too many locations", i);
		nlocs += m->sample[i]->n_location_id;
	}
	c->r->stacks = calloc(m->n_sample ? m->n_sample : 1, sizeof(*c->r->stacks));
	c->r->locs = calloc(nlocs ? nlocs : 1, sizeof(*c->r->locs));
	if (!c->r->stacks || !c->r->locs)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_sample; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];
		struct lpw_stack *st = &c->r->stacks[i];

		if (s->n_value != 2)
			return rd_bad(c, "sample %zu: %zu values for 2 sample types", i,
				      s->n_value);
		st->values[0] = s->value[0];
		st->values[1] = s->value[1];
		st->locs = c->r->locs + off;
		st->nlocs = (uint32_t)s->n_location_id;
		for (size_t k = 0; k < s->n_location_id; k++) {
			int64_t ix = rd_find(c->loc_ids, m->n_location, s->location_id[k]);

			if (ix < 0)
				return rd_bad(c, "sample %zu: no location %llu", i,
					      (unsigned long long)s->location_id[k]);
			c->r->locs[off++] = (uint32_t)ix;
		}
		err = rd_labels(c, i, st);
		if (err)
			return err;
	}
	c->r->p.stacks = c->r->stacks;
	c->r->p.nstacks = m->n_sample;
	return 0;
}

static int rd_convert(struct lpw_read *r, char *why, size_t why_len)
{
	struct rd_ctx c = {.m = r->m, .r = r, .why = why, .why_len = why_len};
	int err;

	err = rd_header(&c);
	if (!err)
		err = rd_mappings(&c);
	if (!err)
		err = rd_functions(&c);
	if (!err)
		err = rd_locations(&c);
	if (!err)
		err = rd_samples(&c);
	free(c.map_ids);
	free(c.func_ids);
	free(c.loc_ids);
	if (err == -ENOMEM)
		rd_fail(why, why_len, err, "out of memory");
	return err;
}

/* ---- the API -------------------------------------------------------------- */

/* Unpacks msg into r->m under r's budget. */
static int rd_unpack(struct lpw_read *r, const uint8_t *msg, size_t len, char *why, size_t why_len)
{
	r->alloc = (ProtobufCAllocator){rd_alloc, rd_free, &r->budget};
	r->m = perftools__profiles__profile__unpack(&r->alloc, len, msg);
	if (r->m)
		return 0;
	if (r->budget.refused)
		return rd_fail(why, why_len, -ENOMEM, "needs more than %zu MiB to unpack",
			       r->budget.max >> 20);
	return rd_fail(why, why_len, -EBADMSG, "not a valid pprof protobuf message");
}

int lpw_read_pprof(int fd, const struct lpw_read_opts *opts, struct lpw_read **out, char *why,
		   size_t why_len)
{
	size_t max_bytes = LPW_READ_MAX_BYTES, len = 0, msg_len;
	uint8_t *raw = NULL, *msg = NULL;
	struct lpw_read *r = NULL;
	int err;

	*out = NULL;
	if (why && why_len)
		why[0] = '\0';
	if (LP_OPTS_CHECK(opts, lpw_read_opts, max_mem))
		return rd_fail(why, why_len, -EINVAL, "bad options");
	if (opts && opts->max_bytes)
		max_bytes = opts->max_bytes;
	r = calloc(1, sizeof(*r));
	if (!r)
		return rd_fail(why, why_len, -ENOMEM, "out of memory");
	r->budget.max = opts && opts->max_mem ? opts->max_mem : LPW_READ_MAX_MEM;
	r->budget.arena.chunk = RD_CHUNK;
	err = rd_read_all(fd, max_bytes, &raw, &len);
	if (err) {
		if (err == -EFBIG)
			rd_fail(why, why_len, err, "larger than %zu MiB", max_bytes >> 20);
		else
			rd_fail(why, why_len, err, "read: %s", strerror(-err));
		goto err_out;
	}
	/* an empty message is a valid protobuf, but no pprof: say what it is */
	if (len == 0) {
		free(raw);
		err = rd_fail(why, why_len, -EBADMSG, "an empty file");
		goto err_out;
	}
	if (len >= 2 && raw[0] == 0x1f && raw[1] == 0x8b) {
		err = rd_gunzip(raw, len, max_bytes, &msg, &msg_len, why, why_len);
		free(raw);
		if (err)
			goto err_out;
	} else {
		msg = raw;
		msg_len = len;
	}
	err = rd_unpack(r, msg, msg_len, why, why_len);
	if (!err)
		err = rd_convert(r, why, why_len);
	free(msg);
	if (err)
		goto err_out;
	*out = r;
	return 0;
err_out:
	lpw_read__free(r);
	return err;
}

const struct lpw_profile *lpw_read__profile(const struct lpw_read *r)
{
	return &r->p;
}

void lpw_read__free(struct lpw_read *r)
{
	if (!r)
		return;
	rd_free_all(&r->budget); /* r->m and all it holds */
	free(r->mappings);
	free(r->locations);
	free(r->lines);
	free(r->stacks);
	free(r->locs);
	free(r->comments);
	free(r);
}
