// SPDX-License-Identifier: MIT
/*
 * pprof writer: struct lpw_profile -> profile.proto message -> gzip -> fd.
 *
 * The message is encoded directly, section by section, into a few growing
 * buffers: strings and functions are interned in the order the sections are
 * walked (header, mappings, locations, samples), each section is encoded as
 * it is walked, and the message is put together in field order. The bytes
 * are those protobuf-c packs for the same message (fields in number order,
 * proto3 zero values left out, repeated scalars packed): the unit test
 * checks that unpacking and packing again with protobuf-c gives them back.
 * Building protobuf-c's structs and packing them cost more than gzip.
 * Nothing survives the call.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libdeflate.h>

#include "lowprof/files.h"
#include "lowprof/hash.h"
#include "lowprof/log.h"
#include "lowprof/writers.h"

/* profile.proto's wire types and the field numbers used below */
#define PB_VARINT 0
#define PB_LEN	  2

/*
 * Interning table for the string table and the function table. Both are
 * sized once from an upper bound on their entries, so they never grow:
 * slots hold entry index + 1 (0 = empty) and stay at most half full.
 */
struct pp_index {
	uint32_t *slots;
	size_t mask;
	uint64_t seed; /* the keys are the profiled binaries' names: seeded (no flooding) */
};

/* A growing byte buffer; oom is set (and later writes dropped) when growing fails. */
struct pp_buf {
	uint8_t *p;
	size_t len, cap;
	bool oom;
};

struct pp_func_ent {
	int64_t name, file; /* string indices */
	uint32_t mapping;
};

struct pp_build {
	/* string table: strs[i] borrowed from the profile or a literal */
	const char **strs;
	size_t nstrs;
	struct pp_index str_idx;

	/* functions: keyed by (name, filename strings, mapping index); id = index + 1 */
	struct pp_func_ent *funcs;
	size_t nfuncs;
	struct pp_index func_idx;

	/* the repeated message fields, each already encoded with its tags */
	struct pp_buf mappings, locations, functions; /* samples go straight into msg */
	struct pp_buf msg, sub, sub2;		      /* the message; scratch for nested messages */
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

static int pp_index_init(struct pp_index *ix, size_t max_entries)
{
	size_t n = 16;

	while (n < 2 * max_entries)
		n *= 2;
	ix->slots = calloc(n, sizeof(*ix->slots));
	ix->mask = n - 1;
	ix->seed = lp_hash_seed(ix);
	return ix->slots ? 0 : -ENOMEM;
}

/* Index of s in the string table, adding it if new. */
static int64_t pp_str(struct pp_build *b, const char *s)
{
	size_t i;

	s = nz(s);
	for (i = lp_hash_bytes(b->str_idx.seed, s, strlen(s)) & b->str_idx.mask;
	     b->str_idx.slots[i]; i = (i + 1) & b->str_idx.mask) {
		uint32_t e = b->str_idx.slots[i] - 1;

		if (strcmp(b->strs[e], s) == 0)
			return e;
	}
	b->str_idx.slots[i] = b->nstrs + 1;
	b->strs[b->nstrs] = s;
	return b->nstrs++;
}

/* ---- encoding ------------------------------------------------------------ */

/* Room for n more bytes: true, or false with b->oom set. */
static bool pb_room(struct pp_buf *b, size_t n)
{
	size_t cap;
	uint8_t *p;

	if (b->oom)
		return false;
	if (b->cap - b->len >= n)
		return true;
	for (cap = b->cap ? b->cap : 4096; cap - b->len < n; cap *= 2)
		;
	p = realloc(b->p, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static void pb_varint(struct pp_buf *b, uint64_t v)
{
	if (!pb_room(b, 10))
		return;
	while (v >= 0x80) {
		b->p[b->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	b->p[b->len++] = (uint8_t)v;
}

static size_t pb_varint_size(uint64_t v)
{
	size_t n = 1;

	for (; v >= 0x80; v >>= 7)
		n++;
	return n;
}

static void pb_tag(struct pp_buf *b, uint32_t field, uint32_t wire)
{
	pb_varint(b, (uint64_t)field << 3 | wire);
}

/* A proto3 scalar (int64 as its two's complement, uint64, bool): left out when 0. */
static void pb_int(struct pp_buf *b, uint32_t field, uint64_t v)
{
	if (!v)
		return;
	pb_tag(b, field, PB_VARINT);
	pb_varint(b, v);
}

/* A length-delimited field: a string, a nested message, packed scalars. */
static void pb_bytes(struct pp_buf *b, uint32_t field, const void *p, size_t n)
{
	pb_tag(b, field, PB_LEN);
	pb_varint(b, n);
	if (n && pb_room(b, n)) {
		memcpy(b->p + b->len, p, n);
		b->len += n;
	}
}

/* The message in sub as field of b; sub is emptied for the next one. */
static void pb_msg(struct pp_buf *b, uint32_t field, struct pp_buf *sub)
{
	if (sub->oom)
		b->oom = true;
	pb_bytes(b, field, sub->p, sub->len);
	sub->len = 0;
}

/* n packed varints (v[i], or (uint64_t)v[i] for int64): left out when n is 0. */
static void pb_packed(struct pp_buf *b, uint32_t field, const uint64_t *v, size_t n)
{
	size_t size = 0, i;

	if (!n)
		return;
	for (i = 0; i < n; i++)
		size += pb_varint_size(v[i]);
	pb_tag(b, field, PB_LEN);
	pb_varint(b, size);
	for (i = 0; i < n; i++)
		pb_varint(b, v[i]);
}

/* ---- building ------------------------------------------------------------ */

/*
 * Id of the function named name with source file file (NULL: unknown) in
 * mapping (LPW_NO_MAPPING for none), adding it if new. Functions are one per
 * (name, system_name, filename) as pprof merges them, and per mapping too:
 * the same name in two binaries stays two functions, as in the symbol tables
 * it came from. system_name is the name: demangled names are all we have.
 */
static uint64_t pp_func(struct pp_build *b, const char *name, const char *file, uint32_t mapping)
{
	int64_t name_ix = pp_str(b, name), file_ix = pp_str(b, file);
	uint64_t h;
	size_t i;

	/* the string indices stand for the strings: equal exactly when they are */
	h = ((uint64_t)name_ix * 0x9e3779b97f4a7c15ull) ^
	    ((uint64_t)file_ix * 0xc2b2ae3d27d4eb4full) ^ (mapping * 0xff51afd7ed558ccdull);
	i = (h ^ h >> 29) & b->func_idx.mask;
	for (; b->func_idx.slots[i]; i = (i + 1) & b->func_idx.mask) {
		uint32_t e = b->func_idx.slots[i] - 1;

		if (b->funcs[e].name == name_ix && b->funcs[e].file == file_ix &&
		    b->funcs[e].mapping == mapping)
			return e + 1;
	}
	b->func_idx.slots[i] = b->nfuncs + 1;
	b->funcs[b->nfuncs] = (struct pp_func_ent){name_ix, file_ix, mapping};
	return ++b->nfuncs;
}

static void pp_build_free(struct pp_build *b)
{
	free(b->strs);
	free(b->str_idx.slots);
	free(b->funcs);
	free(b->func_idx.slots);
	free(b->mappings.p);
	free(b->locations.p);
	free(b->functions.p);
	free(b->msg.p);
	free(b->sub.p);
	free(b->sub2.p);
}

/*
 * Checks every index the message is built from; -EINVAL on the first bad
 * one. Counts the stacks' location ids and the locations' lines (at least
 * one each).
 */
static int pp_check(const struct lpw_profile *p, size_t *total_locs, size_t *total_lines)
{
	size_t i, j, n = 0;

	if (p->folded_value < 0 || p->folded_value > 1)
		return -EINVAL;
	*total_lines = 0;
	for (i = 0; i < p->nlocations; i++) {
		const struct lpw_location *sl = &p->locations[i];
		uint32_t m = sl->mapping;

		if (m != LPW_NO_MAPPING && m >= p->nmappings)
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

static int pp_alloc(struct pp_build *b, const struct lpw_profile *p, size_t total_lines)
{
	/*
	 * "", 2 value types, period type, "pid", "comm" and the four other
	 * label keys, then the profile's strings: a function name and a file
	 * per line, a comm and four labels per stack.
	 */
	size_t max_strs =
		1 + 4 + 2 + 6 + p->ncomments + 2 * p->nmappings + 2 * total_lines + 5 * p->nstacks;
	int err;

	if (total_lines > UINT32_MAX / 8 || max_strs > UINT32_MAX / 4 ||
	    p->nlocations > UINT32_MAX / 4)
		return -E2BIG;
	b->strs = pp_calloc(max_strs, sizeof(*b->strs));
	b->funcs = pp_calloc(total_lines, sizeof(*b->funcs));
	if (!b->strs || !b->funcs)
		return -ENOMEM;
	err = pp_index_init(&b->str_idx, max_strs);
	if (err)
		return err;
	return pp_index_init(&b->func_idx, total_lines);
}

/* ValueType {type = 1, unit = 2} as field of b. */
static void pp_value_type(struct pp_build *b, struct pp_buf *out, uint32_t field,
			  const struct lpw_value_type *vt)
{
	int64_t type = pp_str(b, vt->type), unit = pp_str(b, vt->unit);

	pb_int(&b->sub, 1, (uint64_t)type);
	pb_int(&b->sub, 2, (uint64_t)unit);
	pb_msg(out, field, &b->sub);
}

/* Mapping {id 1, memory_start 2, memory_limit 3, file_offset 4, filename 5, build_id 6, has_functions 7} */
static void pp_encode_mappings(struct pp_build *b, const struct lpw_profile *p)
{
	for (size_t i = 0; i < p->nmappings; i++) {
		const struct lpw_mapping *sm = &p->mappings[i];
		int64_t filename = pp_str(b, sm->path), build_id = pp_str(b, sm->build_id);

		pb_int(&b->sub, 1, i + 1);
		pb_int(&b->sub, 2, sm->start);
		pb_int(&b->sub, 3, sm->limit);
		pb_int(&b->sub, 4, sm->file_offset);
		pb_int(&b->sub, 5, (uint64_t)filename);
		pb_int(&b->sub, 6, (uint64_t)build_id);
		pb_int(&b->sub, 7, sm->has_functions);
		pb_msg(&b->mappings, 3, &b->sub);
	}
}

/*
 * Location {id 1, mapping_id 2, address 3, line 4...}: one Line {function_id
 * 1, line 2} per source line, innermost first as pprof wants them (the last
 * is the caller the others were inlined into), or just the function.
 */
static void pp_encode_locations(struct pp_build *b, const struct lpw_profile *p)
{
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct lpw_location *sl = &p->locations[i];
		size_t k, n = sl->nlines ? sl->nlines : 1;

		pb_int(&b->sub, 1, i + 1);
		pb_int(&b->sub, 2, sl->mapping == LPW_NO_MAPPING ? 0 : (uint64_t)sl->mapping + 1);
		pb_int(&b->sub, 3, sl->address);
		for (k = 0; k < n; k++) {
			if (sl->nlines) {
				const struct lpw_line *src = &sl->lines[k];

				pb_int(&b->sub2, 1,
				       pp_func(b, src->function ? src->function : "[unknown]",
					       src->file, sl->mapping));
				pb_int(&b->sub2, 2, src->line);
			} else {
				pb_int(&b->sub2, 1, pp_func(b, sl->function, NULL, sl->mapping));
			}
			pb_msg(&b->sub, 4, &b->sub2);
		}
		pb_msg(&b->locations, 4, &b->sub);
	}
	/* Function {id 1, name 2, system_name 3, filename 4}, in the order they were made */
	for (size_t i = 0; i < b->nfuncs; i++) {
		pb_int(&b->sub, 1, i + 1);
		pb_int(&b->sub, 2, (uint64_t)b->funcs[i].name);
		pb_int(&b->sub, 3, (uint64_t)b->funcs[i].name);
		/* the source file (0 = "" when only a symbol is known) */
		pb_int(&b->sub, 4, (uint64_t)b->funcs[i].file);
		pb_msg(&b->functions, 5, &b->sub);
	}
}

/* Label {key 1, str 2} of the sample being built, when v is known; key interned first. */
static void pp_str_label(struct pp_build *b, int64_t *key, const char *name, const char *v)
{
	if (!v)
		return;
	if (!*key)
		*key = pp_str(b, name);
	pb_int(&b->sub2, 1, (uint64_t)*key);
	pb_int(&b->sub2, 2, (uint64_t)pp_str(b, v));
	pb_msg(&b->sub, 3, &b->sub2);
}

/*
 * Sample {location_id 1 (packed, leaf first as the stacks), value 2
 * (packed), label 3: {key "pid", num pid}, {key "comm", str comm}, and
 * where known {key "exe" | "cgroup" | "container.id" | "k8s.pod.uid", str}}
 */
static void pp_encode_samples(struct pp_build *b, const struct lpw_profile *p)
{
	int64_t pid_key = pp_str(b, "pid"), comm_key = pp_str(b, "comm");
	int64_t exe_key = 0, cgroup_key = 0, cid_key = 0, pod_key = 0;
	uint64_t *ids = NULL;
	size_t cap = 0;

	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		uint64_t values[2] = {(uint64_t)st->values[0], (uint64_t)st->values[1]};
		int64_t comm;

		if (st->nlocs > cap) {
			uint64_t *n = realloc(ids, st->nlocs * sizeof(*ids));

			if (!n) {
				b->msg.oom = true;
				break;
			}
			ids = n;
			cap = st->nlocs;
		}
		for (uint32_t j = 0; j < st->nlocs; j++)
			ids[j] = (uint64_t)st->locs[j] + 1;
		pb_packed(&b->sub, 1, ids, st->nlocs);
		pb_packed(&b->sub, 2, values, 2);
		pb_int(&b->sub2, 1, (uint64_t)pid_key);
		pb_int(&b->sub2, 3, st->pid);
		pb_msg(&b->sub, 3, &b->sub2);
		comm = pp_str(b, st->comm);
		pb_int(&b->sub2, 1, (uint64_t)comm_key);
		pb_int(&b->sub2, 2, (uint64_t)comm);
		pb_msg(&b->sub, 3, &b->sub2);
		pp_str_label(b, &exe_key, "exe", st->exe);
		pp_str_label(b, &cgroup_key, "cgroup", st->cgroup);
		pp_str_label(b, &cid_key, "container.id", st->container_id);
		pp_str_label(b, &pod_key, "k8s.pod.uid", st->pod_uid);
		pb_msg(&b->msg, 2, &b->sub);
	}
	free(ids);
}

/* Appends a finished section to the message. */
static void pb_append(struct pp_buf *b, const struct pp_buf *sec)
{
	if (sec->oom)
		b->oom = true;
	if (sec->len && pb_room(b, sec->len)) {
		memcpy(b->p + b->len, sec->p, sec->len);
		b->len += sec->len;
	}
}

/*
 * The whole message, fields in number order: sample_type 1, sample 2,
 * mapping 3, location 4, function 5, string_table 6, time_nanos 9,
 * duration_nanos 10, period_type 11, period 12, comment 13 (packed),
 * default_sample_type 14. Strings are interned in the order of the old
 * protobuf-c builder: header, mappings, locations, samples.
 */
static int pp_encode(struct pp_build *b, const struct lpw_profile *p)
{
	struct pp_buf head = {0}, ptype = {0};
	uint64_t *comments = pp_calloc(p->ncomments, sizeof(*comments));
	int64_t vt_type[2];
	size_t i;

	if (!comments)
		return -ENOMEM;
	pp_str(b, ""); /* index 0 must be "" */
	for (i = 0; i < 2; i++) {
		vt_type[i] = pp_str(b, p->value_types[i].type);
		pb_int(&b->sub, 1, (uint64_t)vt_type[i]);
		pb_int(&b->sub, 2, (uint64_t)pp_str(b, p->value_types[i].unit));
		pb_msg(&head, 1, &b->sub);
	}
	pp_value_type(b, &ptype, 11, &p->period_type);
	for (i = 0; i < p->ncomments; i++)
		comments[i] = (uint64_t)pp_str(b, p->comments[i]);
	pp_encode_mappings(b, p);
	pp_encode_locations(b, p);
	/* the samples, the largest section, encoded in place: field 2 follows 1 */
	pb_append(&b->msg, &head);
	pp_encode_samples(b, p);
	pb_append(&b->msg, &b->mappings);
	pb_append(&b->msg, &b->locations);
	pb_append(&b->msg, &b->functions);
	for (i = 0; i < b->nstrs; i++)
		pb_bytes(&b->msg, 6, b->strs[i], strlen(b->strs[i]));
	pb_int(&b->msg, 9, (uint64_t)p->time_nanos);
	pb_int(&b->msg, 10, (uint64_t)p->duration_nanos);
	pb_append(&b->msg, &ptype);
	pb_int(&b->msg, 12, (uint64_t)p->period);
	pb_packed(&b->msg, 13, comments, p->ncomments);
	/* What folded and HTML show is also what pprof opens with. */
	pb_int(&b->msg, 14, (uint64_t)vt_type[p->folded_value]);
	free(comments);
	free(head.p);
	free(ptype.p);
	return b->msg.oom ? -ENOMEM : 0;
}

/*
 * gzip of in[0..len) into a new buffer (*out, *out_len; caller frees), at
 * libdeflate's fastest level: about twice zlib's level-1 speed here, and
 * smaller (a warm replay's 0.98 MB message: 3.5 ms and 273 KB against 7 ms
 * and 288 KB). Go's runtime/pprof also writes at its fastest level. The
 * header has no file name and a zero mtime, so the same input always gives
 * the same bytes.
 */
int lpw_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len)
{
	struct libdeflate_compressor *c = libdeflate_alloc_compressor(1);
	uint8_t *buf = NULL;
	size_t cap, n;

	if (!c)
		return -ENOMEM;
	cap = libdeflate_gzip_compress_bound(c, len);
	buf = malloc(cap);
	/* the bound is a guarantee: 0 (no room) cannot happen */
	n = buf ? libdeflate_gzip_compress(c, in, len, buf, cap) : 0;
	libdeflate_free_compressor(c);
	if (!n) {
		free(buf);
		return buf ? -EIO : -ENOMEM;
	}
	*out = buf;
	*out_len = n;
	return 0;
}

/*
 * The message of p built in b (pp_build_free it): 0, or -errno (logged).
 * Gzip'd by the callers that write a file for people and tools.
 */
static int pp_message(struct pp_build *b, const struct lpw_profile *p)
{
	size_t total_locs, total_lines;
	int err;

	err = pp_check(p, &total_locs, &total_lines);
	if (err) {
		lp_err("pprof: invalid profile (index out of range)");
		return err;
	}
	err = pp_alloc(b, p, total_lines);
	if (!err)
		err = pp_encode(b, p);
	if (err)
		lp_err("pprof: cannot build the message: %s", strerror(-err));
	return err;
}

int lpw_pprof_bytes(const struct lpw_profile *p, uint8_t **out, size_t *out_len)
{
	struct pp_build b = {0};
	int err = pp_message(&b, p);

	if (!err) {
		err = lpw_gzip(b.msg.p ? b.msg.p : (const uint8_t *)"", b.msg.len, out, out_len);
		if (err)
			lp_err("pprof: gzip failed: %s", strerror(-err));
	}
	pp_build_free(&b);
	return err;
}

static int pp_write(int fd, const uint8_t *buf, size_t len)
{
	int err = lp_write_all(fd, buf, len);

	if (err)
		lp_err("pprof: write failed: %s", strerror(-err));
	return err;
}

int lpw_write_pprof(const struct lpw_profile *p, int fd)
{
	uint8_t *gz = NULL;
	size_t gz_len;
	int err = lpw_pprof_bytes(p, &gz, &gz_len);

	if (!err)
		err = pp_write(fd, gz, gz_len);
	free(gz);
	return err;
}

int lpw_write_pprof_raw(const struct lpw_profile *p, int fd)
{
	struct pp_build b = {0};
	int err = pp_message(&b, p);

	if (!err)
		err = pp_write(fd, b.msg.p ? b.msg.p : (const uint8_t *)"", b.msg.len);
	pp_build_free(&b);
	return err;
}
