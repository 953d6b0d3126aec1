// SPDX-License-Identifier: MIT
/*
 * pprof writer: struct symb_profile -> profile.proto message -> gzip -> fd.
 *
 * The message is built in a handful of arrays sized from the profile's counts
 * (one allocation per kind of element, not one per element) whose strings
 * point into the profile, packed with protobuf-c, compressed with zlib and
 * written in one go. Nothing survives the call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "lowprof/log.h"
#include "profile.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pp_profile_t;
typedef Perftools__Profiles__ValueType pp_value_type_t;
typedef Perftools__Profiles__Sample pp_sample_t;
typedef Perftools__Profiles__Label pp_label_t;
typedef Perftools__Profiles__Mapping pp_mapping_t;
typedef Perftools__Profiles__Location pp_location_t;
typedef Perftools__Profiles__Line pp_line_t;
typedef Perftools__Profiles__Function pp_function_t;

/*
 * Interning table for the string table and the function table. Both are
 * sized once from an upper bound on their entries, so they never grow:
 * slots hold entry index + 1 (0 = empty) and stay at most half full.
 */
struct pp_index {
	uint32_t *slots;
	size_t mask;
};

struct pp_build {
	pp_profile_t msg;
	pp_value_type_t vt[2], period_type;
	pp_value_type_t *vtp[2];

	/* string table: strs[i] borrowed from the profile or a literal */
	const char **strs;
	size_t nstrs;
	struct pp_index str_idx;

	/* functions: keyed by (name, system_name, filename strings, mapping index) */
	pp_function_t *funcs;
	pp_function_t **funcp;
	uint32_t *func_mapping;
	size_t nfuncs;
	struct pp_index func_idx;

	pp_mapping_t *maps;
	pp_mapping_t **mapp;
	pp_location_t *locs;
	pp_location_t **locp;
	pp_line_t *lines; /* every location's lines, in location order */
	pp_line_t **linep;
	pp_sample_t *samples;
	pp_sample_t **samplep;
	uint64_t *loc_ids;
	int64_t *values;
	pp_label_t *labels;
	pp_label_t **labelp;
	int64_t *comments;
};

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* calloc that returns a usable pointer for n == 0, so NULL always means ENOMEM. */
static void *pp_calloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static uint64_t pp_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int pp_index_init(struct pp_index *ix, size_t max_entries)
{
	size_t n = 16;

	while (n < 2 * max_entries)
		n *= 2;
	ix->slots = calloc(n, sizeof(*ix->slots));
	ix->mask = n - 1;
	return ix->slots ? 0 : -ENOMEM;
}

/* Index of s in the string table, adding it if new. */
static int64_t pp_str(struct pp_build *b, const char *s)
{
	size_t i;

	s = nz(s);
	for (i = pp_hash(s) & b->str_idx.mask; b->str_idx.slots[i]; i = (i + 1) & b->str_idx.mask) {
		uint32_t e = b->str_idx.slots[i] - 1;

		if (strcmp(b->strs[e], s) == 0)
			return e;
	}
	b->str_idx.slots[i] = b->nstrs + 1;
	b->strs[b->nstrs] = s;
	return b->nstrs++;
}

/*
 * Id of the function named name with source file file (NULL: unknown) in
 * mapping (SYMB_NO_MAPPING for none), adding it if new. Functions are one per
 * (name, system_name, filename) as pprof merges them, and per mapping too:
 * the same name in two binaries stays two functions, as in the symbol tables
 * it came from. system_name is the name: demangled names are all we have.
 */
static uint64_t pp_func(struct pp_build *b, const char *name, const char *file, uint32_t mapping)
{
	int64_t name_ix = pp_str(b, name), file_ix = pp_str(b, file);
	size_t i;

	i = (pp_hash(nz(name)) ^ (pp_hash(nz(file)) * 31) ^ (mapping * 0x9e3779b97f4a7c15ull)) &
	    b->func_idx.mask;
	for (; b->func_idx.slots[i]; i = (i + 1) & b->func_idx.mask) {
		uint32_t e = b->func_idx.slots[i] - 1;

		if (b->funcs[e].name == name_ix && b->funcs[e].system_name == name_ix &&
		    b->funcs[e].filename == file_ix && b->func_mapping[e] == mapping)
			return e + 1;
	}
	b->func_idx.slots[i] = b->nfuncs + 1;
	b->func_mapping[b->nfuncs] = mapping;
	perftools__profiles__function__init(&b->funcs[b->nfuncs]);
	b->funcs[b->nfuncs].id = b->nfuncs + 1;
	b->funcs[b->nfuncs].name = name_ix;
	b->funcs[b->nfuncs].system_name = name_ix;
	/* the source file (0 = "" when only a symbol is known) */
	b->funcs[b->nfuncs].filename = file_ix;
	b->funcp[b->nfuncs] = &b->funcs[b->nfuncs];
	return ++b->nfuncs;
}

static void pp_build_free(struct pp_build *b)
{
	free(b->strs);
	free(b->str_idx.slots);
	free(b->funcs);
	free(b->funcp);
	free(b->func_mapping);
	free(b->func_idx.slots);
	free(b->maps);
	free(b->mapp);
	free(b->locs);
	free(b->locp);
	free(b->lines);
	free(b->linep);
	free(b->samples);
	free(b->samplep);
	free(b->loc_ids);
	free(b->values);
	free(b->labels);
	free(b->labelp);
	free(b->comments);
}

/*
 * Checks every index the message is built from; -EINVAL on the first bad
 * one. Counts the stacks' location ids and the locations' lines (at least
 * one each).
 */
static int pp_check(const struct symb_profile *p, size_t *total_locs, size_t *total_lines)
{
	size_t i, j, n = 0;

	if (p->folded_value < 0 || p->folded_value > 1)
		return -EINVAL;
	*total_lines = 0;
	for (i = 0; i < p->nlocations; i++) {
		const struct symb_location *sl = &p->locations[i];
		uint32_t m = sl->mapping;

		if (m != SYMB_NO_MAPPING && m >= p->nmappings)
			return -EINVAL;
		if (sl->nlines && !sl->lines)
			return -EINVAL;
		*total_lines += sl->nlines ? sl->nlines : 1;
	}
	for (i = 0; i < p->nstacks; i++) {
		for (j = 0; j < p->stacks[i].nlocs; j++)
			if (p->stacks[i].locs[j] >= p->nlocations)
				return -EINVAL;
		n += p->stacks[i].nlocs;
	}
	*total_locs = n;
	return 0;
}

static int pp_alloc(struct pp_build *b, const struct symb_profile *p, size_t total_locs,
		    size_t total_lines)
{
	/*
	 * "", 2 value types, period type, "pid", "comm", then the profile's
	 * strings: a function name and a file per line.
	 */
	size_t max_strs =
		1 + 4 + 2 + 2 + p->ncomments + 2 * p->nmappings + 2 * total_lines + p->nstacks;
	int err;

	if (total_lines > UINT32_MAX / 8 || max_strs > UINT32_MAX / 4 ||
	    p->nlocations > UINT32_MAX / 4)
		return -E2BIG;
	b->strs = pp_calloc(max_strs, sizeof(*b->strs));
	b->funcs = pp_calloc(total_lines, sizeof(*b->funcs));
	b->funcp = pp_calloc(total_lines, sizeof(*b->funcp));
	b->func_mapping = pp_calloc(total_lines, sizeof(*b->func_mapping));
	b->maps = pp_calloc(p->nmappings, sizeof(*b->maps));
	b->mapp = pp_calloc(p->nmappings, sizeof(*b->mapp));
	b->locs = pp_calloc(p->nlocations, sizeof(*b->locs));
	b->locp = pp_calloc(p->nlocations, sizeof(*b->locp));
	b->lines = pp_calloc(total_lines, sizeof(*b->lines));
	b->linep = pp_calloc(total_lines, sizeof(*b->linep));
	b->samples = pp_calloc(p->nstacks, sizeof(*b->samples));
	b->samplep = pp_calloc(p->nstacks, sizeof(*b->samplep));
	b->loc_ids = pp_calloc(total_locs, sizeof(*b->loc_ids));
	b->values = pp_calloc(p->nstacks, 2 * sizeof(*b->values));
	b->labels = pp_calloc(p->nstacks, 2 * sizeof(*b->labels));
	b->labelp = pp_calloc(p->nstacks, 2 * sizeof(*b->labelp));
	b->comments = pp_calloc(p->ncomments, sizeof(*b->comments));
	if (!b->strs || !b->funcs || !b->funcp || !b->func_mapping || !b->maps || !b->mapp ||
	    !b->locs || !b->locp || !b->lines || !b->linep || !b->samples || !b->samplep ||
	    !b->loc_ids || !b->values || !b->labels || !b->labelp || !b->comments)
		return -ENOMEM;
	err = pp_index_init(&b->str_idx, max_strs);
	if (err)
		return err;
	return pp_index_init(&b->func_idx, total_lines);
}

static void pp_fill_header(struct pp_build *b, const struct symb_profile *p)
{
	pp_profile_t *m = &b->msg;
	size_t i;

	pp_str(b, ""); /* index 0 must be "" */
	for (i = 0; i < 2; i++) {
		perftools__profiles__value_type__init(&b->vt[i]);
		b->vt[i].type = pp_str(b, p->value_types[i].type);
		b->vt[i].unit = pp_str(b, p->value_types[i].unit);
		b->vtp[i] = &b->vt[i];
	}
	m->n_sample_type = 2;
	m->sample_type = b->vtp;
	perftools__profiles__value_type__init(&b->period_type);
	b->period_type.type = pp_str(b, p->period_type.type);
	b->period_type.unit = pp_str(b, p->period_type.unit);
	m->period_type = &b->period_type;
	m->period = p->period;
	m->time_nanos = p->time_nanos;
	m->duration_nanos = p->duration_nanos;
	/* What folded and HTML show is also what pprof opens with. */
	m->default_sample_type = b->vt[p->folded_value].type;
	for (i = 0; i < p->ncomments; i++)
		b->comments[i] = pp_str(b, p->comments[i]);
	m->n_comment = p->ncomments;
	m->comment = b->comments;
}

static void pp_fill_mappings(struct pp_build *b, const struct symb_profile *p)
{
	size_t i;

	for (i = 0; i < p->nmappings; i++) {
		const struct symb_mapping *sm = &p->mappings[i];
		pp_mapping_t *mm = &b->maps[i];

		perftools__profiles__mapping__init(mm);
		mm->id = i + 1;
		mm->memory_start = sm->start;
		mm->memory_limit = sm->limit;
		mm->file_offset = sm->file_offset;
		mm->filename = pp_str(b, sm->path);
		mm->build_id = pp_str(b, sm->build_id);
		mm->has_functions = sm->has_functions;
		b->mapp[i] = mm;
	}
	b->msg.n_mapping = p->nmappings;
	b->msg.mapping = b->mapp;
}

/*
 * Line entries of one location from pos on: one per source line, innermost
 * first as pprof wants them (the last is the caller the others were inlined
 * into), or just the function. Returns how many.
 */
static size_t pp_fill_lines(struct pp_build *b, const struct symb_location *sl, size_t pos)
{
	size_t k, n = sl->nlines ? sl->nlines : 1;

	for (k = 0; k < n; k++) {
		pp_line_t *ln = &b->lines[pos + k];

		perftools__profiles__line__init(ln);
		if (sl->nlines) {
			const struct symb_line *src = &sl->lines[k];

			ln->function_id = pp_func(b, src->function ? src->function : "[unknown]",
						  src->file, sl->mapping);
			ln->line = src->line;
		} else {
			ln->function_id = pp_func(b, sl->function, NULL, sl->mapping);
		}
		b->linep[pos + k] = ln;
	}
	return n;
}

static void pp_fill_locations(struct pp_build *b, const struct symb_profile *p)
{
	size_t i, pos = 0;

	for (i = 0; i < p->nlocations; i++) {
		const struct symb_location *sl = &p->locations[i];
		pp_location_t *l = &b->locs[i];

		perftools__profiles__location__init(l);
		l->id = i + 1;
		l->mapping_id = sl->mapping == SYMB_NO_MAPPING ? 0 : (uint64_t)sl->mapping + 1;
		l->address = sl->address;
		l->line = &b->linep[pos];
		l->n_line = pp_fill_lines(b, sl, pos);
		pos += l->n_line;
		b->locp[i] = l;
	}
	b->msg.n_location = p->nlocations;
	b->msg.location = b->locp;
	b->msg.n_function = b->nfuncs;
	b->msg.function = b->funcp;
}

static void pp_fill_samples(struct pp_build *b, const struct symb_profile *p)
{
	int64_t pid_key = pp_str(b, "pid"), comm_key = pp_str(b, "comm");
	uint64_t *ids = b->loc_ids;
	size_t i, j;

	for (i = 0; i < p->nstacks; i++) {
		const struct symb_stack *st = &p->stacks[i];
		pp_sample_t *s = &b->samples[i];
		pp_label_t *lb = &b->labels[2 * i];

		perftools__profiles__sample__init(s);
		for (j = 0; j < st->nlocs; j++)
			ids[j] = (uint64_t)st->locs[j] + 1; /* both leaf first */
		s->n_location_id = st->nlocs;
		s->location_id = ids;
		ids += st->nlocs;
		b->values[2 * i] = st->values[0];
		b->values[2 * i + 1] = st->values[1];
		s->n_value = 2;
		s->value = &b->values[2 * i];
		perftools__profiles__label__init(&lb[0]);
		lb[0].key = pid_key;
		lb[0].num = st->pid;
		perftools__profiles__label__init(&lb[1]);
		lb[1].key = comm_key;
		lb[1].str = pp_str(b, st->comm);
		b->labelp[2 * i] = &lb[0];
		b->labelp[2 * i + 1] = &lb[1];
		s->n_label = 2;
		s->label = &b->labelp[2 * i];
		b->samplep[i] = s;
	}
	b->msg.n_sample = p->nstacks;
	b->msg.sample = b->samplep;
}

/*
 * gzip of in[0..len) into a new buffer (*out, *out_len; caller frees).
 * Without deflateSetHeader zlib writes no file name and a zero mtime, so the
 * same input always gives the same bytes.
 */
static int pp_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	z_stream zs = {0};
	uint8_t *buf = NULL;
	size_t cap;
	int err = 0, zerr;

	if (len > UINT32_MAX) /* one deflate() call below; avail_in is 32 bits */
		return -E2BIG;
	if (deflateInit2(&zs, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&zs, len);
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto err_out;
	}
	zs.next_in = (uint8_t *)in;
	zs.avail_in = len;
	zs.next_out = buf;
	zs.avail_out = cap;
	zerr = deflate(&zs, Z_FINISH);
	if (zerr != Z_STREAM_END) {
		/* deflateBound is a guarantee for a single Z_FINISH call */
		err = -EIO;
		goto err_out;
	}
	*out_len = cap - zs.avail_out;
	*out = buf;
	deflateEnd(&zs);
	return 0;
err_out:
	free(buf);
	deflateEnd(&zs);
	return err;
}

/* Writes all len bytes, retrying short writes and EINTR. */
static int pp_write_all(int fd, const uint8_t *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		buf += n;
		len -= n;
	}
	return 0;
}

int symb_write_pprof(const struct symb_profile *p, int fd)
{
	struct pp_build b = {.msg = PERFTOOLS__PROFILES__PROFILE__INIT};
	uint8_t *packed = NULL, *gz = NULL;
	size_t total_locs, total_lines, packed_len, gz_len;
	int err;

	err = pp_check(p, &total_locs, &total_lines);
	if (err) {
		lp_err("pprof: invalid profile (index out of range)");
		goto err_out;
	}
	err = pp_alloc(&b, p, total_locs, total_lines);
	if (err) {
		lp_err("pprof: cannot allocate the message: %s", strerror(-err));
		goto err_out;
	}
	pp_fill_header(&b, p);
	pp_fill_mappings(&b, p);
	pp_fill_locations(&b, p);
	pp_fill_samples(&b, p);
	b.msg.n_string_table = b.nstrs;
	/* protobuf-c packs strings without writing to them */
	b.msg.string_table = (char **)b.strs;

	packed_len = perftools__profiles__profile__get_packed_size(&b.msg);
	packed = malloc(packed_len ? packed_len : 1);
	if (!packed) {
		err = -ENOMEM;
		lp_err("pprof: cannot allocate %zu bytes to pack the profile", packed_len);
		goto err_out;
	}
	perftools__profiles__profile__pack(&b.msg, packed);
	err = pp_gzip(packed, packed_len, &gz, &gz_len);
	if (err) {
		lp_err("pprof: gzip failed: %s", strerror(-err));
		goto err_out;
	}
	err = pp_write_all(fd, gz, gz_len);
	if (err)
		lp_err("pprof: write failed: %s", strerror(-err));
err_out:
	free(gz);
	free(packed);
	pp_build_free(&b);
	return err;
}
