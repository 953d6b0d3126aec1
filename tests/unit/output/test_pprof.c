// SPDX-License-Identifier: MIT
/*
 * pprof writer: gunzip and decode the output with protobuf-c, check every
 * field, and that protobuf-c packs the decoded message to the same bytes.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include <zlib.h>

#include "fixture.h"
#include "profile.pb-c.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

typedef Perftools__Profiles__Profile pb_t;

static uint8_t *gunzip(const uint8_t *in, size_t len, size_t *out_len)
{
	z_stream zs = {0};
	size_t cap = 4096;
	uint8_t *out = malloc(cap);
	int zerr;

	assert_non_null(out);
	assert_int_equal(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (uint8_t *)in;
	zs.avail_in = len;
	do {
		if (zs.total_out == cap) {
			cap *= 2;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		zs.next_out = out + zs.total_out;
		zs.avail_out = cap - zs.total_out;
		zerr = inflate(&zs, Z_NO_FLUSH);
		assert_true(zerr == Z_OK || zerr == Z_STREAM_END);
	} while (zerr != Z_STREAM_END);
	assert_int_equal(zs.avail_in, 0); /* one member, nothing after it */
	*out_len = zs.total_out;
	inflateEnd(&zs);
	return out;
}

/* Writes p, checks the gzip wrapper, and returns the decoded message. */
static pb_t *write_decode(const struct lpw_profile *p)
{
	size_t len = 0, plen;
	uint8_t *gz, *raw;
	int err = 1;
	pb_t *m;

	gz = (uint8_t *)fix_capture(lpw_write_pprof, p, &len, &err);
	assert_non_null(gz);
	assert_int_equal(err, 0);
	assert_true(len > 18);
	/* gzip magic, deflate, no flags (no file name), mtime 0 */
	assert_int_equal(gz[0], 0x1f);
	assert_int_equal(gz[1], 0x8b);
	assert_int_equal(gz[2], 8);
	assert_int_equal(gz[3], 0);
	assert_int_equal(gz[4] | gz[5] | gz[6] | gz[7], 0);
	raw = gunzip(gz, len, &plen);
	m = perftools__profiles__profile__unpack(NULL, plen, raw);
	assert_non_null(m);
	/*
	 * The writer encodes by hand: its bytes must be protobuf-c's own
	 * packing of the message they hold (fields in order, zeros left out,
	 * packed repeated scalars), so that the output is what it always was.
	 */
	{
		size_t n = perftools__profiles__profile__get_packed_size(m);
		uint8_t *again = malloc(n ? n : 1);

		assert_non_null(again);
		assert_int_equal(perftools__profiles__profile__pack(m, again), n);
		assert_int_equal(n, plen);
		assert_memory_equal(again, raw, n);
		free(again);
	}
	free(raw);
	free(gz);
	return m;
}

static const char *str(const pb_t *m, int64_t i)
{
	assert_true(i >= 0 && (size_t)i < m->n_string_table);
	return m->string_table[i];
}

static void assert_string_table_ok(const pb_t *m)
{
	size_t i, j;

	assert_true(m->n_string_table >= 1);
	assert_string_equal(m->string_table[0], "");
	for (i = 0; i < m->n_string_table; i++)
		for (j = i + 1; j < m->n_string_table; j++)
			assert_string_not_equal(m->string_table[i], m->string_table[j]);
}

static const Perftools__Profiles__Function *func(const pb_t *m, uint64_t id)
{
	assert_true(id >= 1 && id <= m->n_function);
	assert_int_equal(m->function[id - 1]->id, id);
	return m->function[id - 1];
}

static void test_header(void **state)
{
	const struct lpw_profile *p = fix_sample_profile();
	pb_t *m = write_decode(p);

	assert_string_table_ok(m);
	assert_int_equal(m->n_sample_type, 2);
	assert_string_equal(str(m, m->sample_type[0]->type), "samples");
	assert_string_equal(str(m, m->sample_type[0]->unit), "count");
	assert_string_equal(str(m, m->sample_type[1]->type), "cpu");
	assert_string_equal(str(m, m->sample_type[1]->unit), "nanoseconds");
	assert_non_null(m->period_type);
	assert_string_equal(str(m, m->period_type->type), "cpu");
	assert_string_equal(str(m, m->period_type->unit), "nanoseconds");
	assert_int_equal(m->period, FIX_NS);
	assert_int_equal(m->time_nanos, p->time_nanos);
	assert_int_equal(m->duration_nanos, p->duration_nanos);
	assert_string_equal(str(m, m->default_sample_type), "cpu"); /* folded_value 1 */
	assert_int_equal(m->n_comment, 2);
	assert_string_equal(str(m, m->comment[0]), "lowprof test profile");
	assert_string_equal(str(m, m->comment[1]), "second comment");
	assert_int_equal(m->drop_frames, 0);
	assert_int_equal(m->keep_frames, 0);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_mappings_locations_functions(void **state)
{
	const struct lpw_profile *p = fix_sample_profile();
	pb_t *m = write_decode(p);
	size_t i;

	assert_int_equal(m->n_mapping, p->nmappings);
	for (i = 0; i < p->nmappings; i++) {
		const Perftools__Profiles__Mapping *mm = m->mapping[i];

		assert_int_equal(mm->id, i + 1);
		assert_int_equal(mm->memory_start, p->mappings[i].start);
		assert_int_equal(mm->memory_limit, p->mappings[i].limit);
		assert_int_equal(mm->file_offset, p->mappings[i].file_offset);
		assert_string_equal(str(m, mm->filename), p->mappings[i].path);
		assert_string_equal(str(m, mm->build_id),
				    p->mappings[i].build_id ? p->mappings[i].build_id : "");
		assert_int_equal(mm->has_functions, p->mappings[i].has_functions);
	}
	assert_int_equal(m->n_location, p->nlocations);
	for (i = 0; i < p->nlocations; i++) {
		const Perftools__Profiles__Location *l = m->location[i];
		const struct lpw_location *sl = &p->locations[i];
		const Perftools__Profiles__Function *f;

		assert_int_equal(l->id, i + 1);
		assert_int_equal(l->mapping_id,
				 sl->mapping == LPW_NO_MAPPING ? 0 : sl->mapping + 1);
		assert_int_equal(l->address, sl->address);
		assert_int_equal(l->n_line, 1);
		f = func(m, l->line[0]->function_id);
		assert_string_equal(str(m, f->name), sl->function);
		assert_string_equal(str(m, f->system_name), sl->function);
	}
	assert_int_equal(m->n_function, p->nlocations); /* all names differ */
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_samples(void **state)
{
	const struct lpw_profile *p = fix_sample_profile();
	pb_t *m = write_decode(p);
	size_t i, j;

	assert_int_equal(m->n_sample, p->nstacks);
	for (i = 0; i < p->nstacks; i++) {
		const Perftools__Profiles__Sample *s = m->sample[i];
		const struct lpw_stack *st = &p->stacks[i];

		assert_int_equal(s->n_location_id, st->nlocs);
		for (j = 0; j < st->nlocs; j++)
			assert_int_equal(s->location_id[j], st->locs[j] + 1);
		assert_int_equal(s->n_value, 2);
		assert_int_equal(s->value[0], st->values[0]);
		assert_int_equal(s->value[1], st->values[1]);
		assert_int_equal(s->n_label, 2);
		assert_string_equal(str(m, s->label[0]->key), "pid");
		assert_int_equal(s->label[0]->num, st->pid);
		assert_int_equal(s->label[0]->str, 0);
		assert_string_equal(str(m, s->label[1]->key), "comm");
		assert_string_equal(str(m, s->label[1]->str), st->comm);
		assert_int_equal(s->label[1]->num, 0);
	}
	/* the leaf of the first sample resolves to the leaf function */
	{
		const Perftools__Profiles__Location *l =
			m->location[m->sample[0]->location_id[0] - 1];

		assert_string_equal(str(m, func(m, l->line[0]->function_id)->name), FIX_LEAF);
	}
	perftools__profiles__profile__free_unpacked(m, NULL);
}

/* One function per (name, mapping): same name in two binaries stays two. */
static void test_function_dedup(void **state)
{
	static const struct lpw_mapping maps[] = {
		{.path = "/bin/x", .start = 0, .limit = 0x1000},
		{.path = "/lib/y.so", .start = 0, .limit = 0x1000},
	};
	static const struct lpw_location locs[] = {
		{.mapping = 0, .address = 0x10, .function = "f", .resolved = true},
		{.mapping = 0, .address = 0x20, .function = "f", .resolved = true},
		{.mapping = 1, .address = 0x10, .function = "f", .resolved = true},
		{.mapping = LPW_NO_MAPPING, .address = 0x99, .function = "[unknown]"},
		{.mapping = LPW_NO_MAPPING, .address = 0x98, .function = "[unknown]"},
	};
	static const uint32_t s0[] = {0, 1, 2, 3, 4};
	static const struct lpw_stack stacks[] = {
		{.pid = 1, .comm = "c", .locs = s0, .nlocs = N(s0), .values = {1, 2}},
	};
	struct lpw_profile p = *fix_sample_profile();
	pb_t *m;

	p.mappings = maps;
	p.nmappings = N(maps);
	p.locations = locs;
	p.nlocations = N(locs);
	p.stacks = stacks;
	p.nstacks = N(stacks);
	m = write_decode(&p);
	assert_string_table_ok(m);
	assert_int_equal(m->n_location, 5);
	assert_int_equal(m->n_function, 3);
	assert_int_equal(m->location[0]->line[0]->function_id,
			 m->location[1]->line[0]->function_id);
	assert_int_not_equal(m->location[0]->line[0]->function_id,
			     m->location[2]->line[0]->function_id);
	assert_int_equal(m->location[3]->line[0]->function_id,
			 m->location[4]->line[0]->function_id);
	assert_int_equal(m->location[3]->mapping_id, 0);
	assert_string_equal(str(m, m->mapping[0]->build_id), "");
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void assert_line(const pb_t *m, const Perftools__Profiles__Line *ln, const char *function,
			const char *file, int64_t line)
{
	const Perftools__Profiles__Function *f = func(m, ln->function_id);

	assert_string_equal(str(m, f->name), function);
	assert_string_equal(str(m, f->system_name), function);
	assert_string_equal(str(m, f->filename), file);
	assert_int_equal(ln->line, line);
}

/*
 * One Location per address with one Line per source frame, innermost
 * first (the last is the caller); Functions shared by (name, file).
 */
static void test_inline_lines(void **state)
{
	const struct lpw_profile *p = fix_inline_profile();
	pb_t *m = write_decode(p);
	const Perftools__Profiles__Location *deep, *one, *main_loc, *plain;

	assert_string_table_ok(m);
	assert_int_equal(m->n_location, 4);
	deep = m->location[0];
	one = m->location[1];
	main_loc = m->location[2];
	plain = m->location[3];
	assert_int_equal(deep->address, 0x2100);
	assert_int_equal(deep->mapping_id, 1);
	assert_int_equal(deep->n_line, 3);
	assert_line(m, deep->line[0], "inner_fn", "/src/inl.h", 12);
	assert_line(m, deep->line[1], "mid_fn", "/src/inl.h", 30);
	assert_line(m, deep->line[2], "outer_fn", "/src/main.c", 77);
	assert_int_equal(one->n_line, 2);
	assert_line(m, one->line[0], "inner_fn", "/src/inl.h", 14);
	assert_line(m, one->line[1], "outer_fn", "/src/main.c", 80);
	assert_int_equal(main_loc->n_line, 1);
	assert_line(m, main_loc->line[0], "main", "/src/main.c", 5);
	assert_int_equal(plain->n_line, 1);
	assert_line(m, plain->line[0], "plain_fn", "", 0);
	/* inner_fn, mid_fn, outer_fn, main, plain_fn */
	assert_int_equal(m->n_function, 5);
	assert_int_equal(deep->line[0]->function_id, one->line[0]->function_id);
	assert_int_equal(deep->line[2]->function_id, one->line[1]->function_id);

	/* samples still point at locations, leaf first */
	assert_int_equal(m->n_sample, 3);
	assert_int_equal(m->sample[0]->n_location_id, 2);
	assert_int_equal(m->sample[0]->location_id[0], 1);
	assert_int_equal(m->sample[0]->location_id[1], 3);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

/* The same function name from two source files is two Functions. */
static void test_inline_function_files(void **state)
{
	static const struct lpw_line a[] = {{.function = "f", .file = "/a.c", .line = 1}};
	static const struct lpw_line b[] = {{.function = "f", .file = "/b.c", .line = 1}};
	static const struct lpw_line c[] = {{.function = "f", .file = "/a.c", .line = 2}};
	static const struct lpw_location locs[] = {
		{.mapping = LPW_NO_MAPPING, .function = "f", .lines = a, .nlines = 1},
		{.mapping = LPW_NO_MAPPING, .function = "f", .lines = b, .nlines = 1},
		{.mapping = LPW_NO_MAPPING, .function = "f", .lines = c, .nlines = 1},
		{.mapping = LPW_NO_MAPPING, .function = "f"},
	};
	struct lpw_profile p = {.locations = locs, .nlocations = N(locs)};
	pb_t *m = write_decode(&p);

	assert_int_equal(m->n_function, 3);
	assert_int_equal(m->location[0]->line[0]->function_id,
			 m->location[2]->line[0]->function_id);
	assert_int_not_equal(m->location[0]->line[0]->function_id,
			     m->location[1]->line[0]->function_id);
	assert_int_not_equal(m->location[0]->line[0]->function_id,
			     m->location[3]->line[0]->function_id);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_deterministic(void **state)
{
	size_t l1 = 0, l2 = 0;
	int e1 = 1, e2 = 1;
	char *a = fix_capture(lpw_write_pprof, fix_sample_profile(), &l1, &e1);
	char *b = fix_capture(lpw_write_pprof, fix_sample_profile(), &l2, &e2);

	assert_non_null(a);
	assert_non_null(b);
	assert_int_equal(e1 | e2, 0);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	free(a);
	free(b);
}

/*
 * Values at the edges of the encoding: zeros (left out), negatives (ten-byte
 * varints), a stack without locations (no location_id field), pid 0, an
 * empty comm, a line without function or file, no mapping, no build-id,
 * more than 127 locations in a stack (a two-byte packed length). The
 * repacking check in write_decode does the work.
 */
static void test_encoding_edges(void **state)
{
	static const struct lpw_mapping maps[] = {{.path = "/bin/x", .start = 0, .limit = 0}};
	static const struct lpw_line lines[] = {
		{.function = NULL, .file = NULL, .line = 0},
		{.function = "outer", .file = "x.c", .line = 4000000000u}};
	static const struct lpw_location locs[] = {
		{.mapping = 0, .address = 0, .function = "f"},
		{.mapping = LPW_NO_MAPPING, .address = UINT64_MAX, .function = "g"},
		{.mapping = 0, .address = 0x10, .function = "outer", .lines = lines, .nlines = 2},
	};
	static uint32_t many[300];
	static const uint32_t one[] = {2};
	struct lpw_stack stacks[] = {
		{.pid = 0, .comm = "", .locs = NULL, .nlocs = 0, .values = {0, -1}},
		{.pid = UINT32_MAX,
		 .comm = "c",
		 .locs = one,
		 .nlocs = 1,
		 .values = {INT64_MIN, INT64_MAX}},
		{.pid = 7, .comm = "many", .locs = many, .nlocs = 300, .values = {1, 2}},
	};
	struct lpw_profile p = {
		.mappings = maps,
		.nmappings = 1,
		.locations = locs,
		.nlocations = N(locs),
		.stacks = stacks,
		.nstacks = N(stacks),
		.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {NULL, NULL},
		.period = -5,
		.time_nanos = 0,
		.duration_nanos = -1,
		.folded_value = 1,
	};
	pb_t *m;

	for (size_t i = 0; i < N(many); i++)
		many[i] = (uint32_t)(i % 3);
	m = write_decode(&p);
	assert_int_equal(m->n_sample, 3);
	assert_int_equal(m->sample[0]->n_location_id, 0);
	assert_int_equal(m->sample[1]->value[0], INT64_MIN);
	assert_int_equal(m->sample[2]->n_location_id, 300);
	assert_int_equal(m->period, -5);
	assert_int_equal(m->duration_nanos, -1);
	assert_non_null(m->period_type);
	assert_int_equal(m->period_type->type, 0);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_empty(void **state)
{
	struct lpw_profile p = {
		.value_types = {{"samples", "count"}, {"off_cpu", "nanoseconds"}},
	};
	pb_t *m = write_decode(&p);

	assert_string_table_ok(m);
	assert_int_equal(m->n_sample, 0);
	assert_int_equal(m->n_location, 0);
	assert_int_equal(m->n_function, 0);
	assert_int_equal(m->n_sample_type, 2);
	assert_string_equal(str(m, m->default_sample_type), "samples");
	/* NULL period type strings become "" */
	assert_string_equal(str(m, m->period_type->type), "");
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static void test_bad_input(void **state)
{
	static const struct lpw_location bad_loc = {.mapping = 5, .function = "f"};
	static const uint32_t bad_idx[] = {99};
	struct lpw_stack st = {.comm = "c", .locs = bad_idx, .nlocs = 1};
	struct lpw_profile p = *fix_sample_profile();
	size_t len = 0;
	int err = 0;
	char *got;

	p.stacks = &st;
	p.nstacks = 1;
	got = fix_capture(lpw_write_pprof, &p, &len, &err);
	assert_int_equal(err, -EINVAL);
	assert_int_equal(len, 0);
	free(got);

	p = *fix_sample_profile();
	p.locations = &bad_loc;
	p.nlocations = 1;
	p.nstacks = 0;
	got = fix_capture(lpw_write_pprof, &p, &len, &err);
	assert_int_equal(err, -EINVAL);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_header),
		cmocka_unit_test(test_mappings_locations_functions),
		cmocka_unit_test(test_samples),
		cmocka_unit_test(test_function_dedup),
		cmocka_unit_test(test_inline_lines),
		cmocka_unit_test(test_inline_function_files),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_encoding_edges),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bad_input),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
