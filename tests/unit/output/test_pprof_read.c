// SPDX-License-Identifier: MIT
/*
 * pprof reader: what lpw_write_pprof writes reads back as the same model
 * (and writes again to the same bytes); damaged and hostile files are
 * refused with a reason, each check on a message that differs from a good
 * one in that one place.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <cmocka.h>
#include <libdeflate.h>

#include "fixture.h"
#include "lowprof/pprof_read.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_t;

static const char *nz(const char *s)
{
	return s ? s : "(null)";
}

/* bytes in a memfd, at offset 0 */
static int memfd_of(const void *p, size_t len)
{
	int fd = memfd_create("lp-read-test", 0);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, p, len), (ssize_t)len);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	return fd;
}

/* lpw_read_pprof of bytes; why gets the reason. */
static int read_bytes(const void *p, size_t len, const struct lpw_read_opts *o, struct lpw_read **r,
		      char *why, size_t why_len)
{
	int fd = memfd_of(p, len), err;

	err = lpw_read_pprof(fd, o, r, why, why_len);
	close(fd);
	return err;
}

static struct lpw_read *write_read(const struct lpw_profile *p)
{
	size_t len = 0;
	int err = 1;
	char *gz = fix_capture(lpw_write_pprof, p, &len, &err), why[256];
	struct lpw_read *r = NULL;

	assert_non_null(gz);
	assert_int_equal(err, 0);
	err = read_bytes(gz, len, NULL, &r, why, sizeof(why));
	if (err)
		fail_msg("read back: %s", why);
	free(gz);
	return r;
}

static void assert_same_location(const struct lpw_location *a, const struct lpw_location *b)
{
	assert_int_equal(a->mapping, b->mapping);
	assert_int_equal(a->address, b->address);
	assert_string_equal(a->function, b->function);
	assert_int_equal(a->kernel, b->kernel);
	assert_int_equal(a->resolved, b->resolved);
	assert_int_equal(a->nlines, b->nlines);
	for (uint32_t k = 0; k < a->nlines; k++) {
		assert_string_equal(a->lines[k].function, b->lines[k].function);
		assert_string_equal(nz(a->lines[k].file), nz(b->lines[k].file));
		assert_int_equal(a->lines[k].line, b->lines[k].line);
	}
}

static void assert_same_stack(const struct lpw_stack *a, const struct lpw_stack *b)
{
	assert_int_equal(a->pid, b->pid);
	assert_string_equal(a->comm, b->comm);
	assert_string_equal(nz(a->exe), nz(b->exe));
	assert_string_equal(nz(a->cgroup), nz(b->cgroup));
	assert_string_equal(nz(a->container_id), nz(b->container_id));
	assert_string_equal(nz(a->pod_uid), nz(b->pod_uid));
	assert_int_equal(a->values[0], b->values[0]);
	assert_int_equal(a->values[1], b->values[1]);
	assert_int_equal(a->nlocs, b->nlocs);
	for (uint32_t j = 0; j < a->nlocs; j++)
		assert_int_equal(a->locs[j], b->locs[j]);
}

/* Every field of the model but the title, which pprof does not hold. */
static void assert_same_profile(const struct lpw_profile *a, const struct lpw_profile *b)
{
	assert_int_equal(a->nmappings, b->nmappings);
	for (size_t i = 0; i < a->nmappings; i++) {
		assert_string_equal(a->mappings[i].path, b->mappings[i].path);
		assert_string_equal(nz(a->mappings[i].build_id), nz(b->mappings[i].build_id));
		assert_int_equal(a->mappings[i].start, b->mappings[i].start);
		assert_int_equal(a->mappings[i].limit, b->mappings[i].limit);
		assert_int_equal(a->mappings[i].file_offset, b->mappings[i].file_offset);
		assert_int_equal(a->mappings[i].has_functions, b->mappings[i].has_functions);
	}
	assert_int_equal(a->nlocations, b->nlocations);
	for (size_t i = 0; i < a->nlocations; i++)
		assert_same_location(&a->locations[i], &b->locations[i]);
	assert_int_equal(a->nstacks, b->nstacks);
	for (size_t i = 0; i < a->nstacks; i++)
		assert_same_stack(&a->stacks[i], &b->stacks[i]);
	for (int i = 0; i < 2; i++) {
		assert_string_equal(a->value_types[i].type, b->value_types[i].type);
		assert_string_equal(a->value_types[i].unit, b->value_types[i].unit);
	}
	assert_string_equal(a->period_type.type, b->period_type.type);
	assert_string_equal(a->period_type.unit, b->period_type.unit);
	assert_int_equal(a->period, b->period);
	assert_int_equal(a->folded_value, b->folded_value);
	assert_int_equal(a->time_nanos, b->time_nanos);
	assert_int_equal(a->duration_nanos, b->duration_nanos);
	assert_int_equal(a->ncomments, b->ncomments);
	for (size_t i = 0; i < a->ncomments; i++)
		assert_string_equal(a->comments[i], b->comments[i]);
}

/* Writing what was read gives the bytes written first. */
static void assert_rewrites_same(const struct lpw_profile *p, const struct lpw_profile *q)
{
	size_t la = 0, lb = 0;
	int ea = 1, eb = 1;
	char *a = fix_capture(lpw_write_pprof, p, &la, &ea);
	char *b = fix_capture(lpw_write_pprof, q, &lb, &eb);

	assert_int_equal(ea, 0);
	assert_int_equal(eb, 0);
	assert_int_equal(la, lb);
	assert_memory_equal(a, b, la);
	free(a);
	free(b);
}

static void round_trip(const struct lpw_profile *p)
{
	struct lpw_read *r = write_read(p);

	assert_same_profile(p, lpw_read__profile(r));
	assert_null(lpw_read__profile(r)->title);
	assert_rewrites_same(p, lpw_read__profile(r));
	lpw_read__free(r);
}

static void test_round_trip_sample(void **state)
{
	(void)state;
	round_trip(fix_sample_profile());
}

static void test_round_trip_inline(void **state)
{
	(void)state;
	round_trip(fix_inline_profile());
}

/* The labels lowprof run writes, some known and some not; folded_value 0. */
static void test_round_trip_labels(void **state)
{
	static const struct lpw_location locs[] = {
		{.mapping = 0, .address = 0x10, .function = "/bin/x+0x10"},
		{.mapping = 1, .address = 0xffff0000, .function = "[unknown]", .kernel = true},
		{.mapping = LPW_NO_MAPPING, .address = 0x20, .function = "[too many frames]"},
		{.mapping = 0, .address = 0x30, .function = "operator+", .resolved = true},
	};
	static const struct lpw_mapping maps[] = {
		{.path = "/bin/x", .start = 0x0, .limit = 0x1000},
		{.path = "[kernel.kallsyms]", .start = 0xffff0000, .limit = UINT64_MAX},
	};
	static const uint32_t s0[] = {1, 0, 3}, s1[] = {2};
	static const struct lpw_stack stacks[] = {
		{.pid = 7,
		 .comm = "c1",
		 .exe = "/bin/x",
		 .cgroup = "/kubepods.slice/a",
		 .container_id = "abc",
		 .pod_uid = "1-2",
		 .locs = s0,
		 .nlocs = 3,
		 .values = {3, 30}},
		{.pid = 8, .comm = "", .cgroup = "/", .locs = s1, .nlocs = 1, .values = {1, -5}},
		{.pid = UINT32_MAX, .comm = "empty stack", .values = {2, 20}},
	};
	static const struct lpw_profile p = {
		.mappings = maps,
		.nmappings = 2,
		.locations = locs,
		.nlocations = 4,
		.stacks = stacks,
		.nstacks = 3,
		.value_types = {{"samples", "count"}, {"off_cpu", "nanoseconds"}},
		.period_type = {"off_cpu", "nanoseconds"},
		.time_nanos = -1,
	};

	(void)state;
	round_trip(&p);
}

/* The writer's gzip member, unpacked: the message itself. */
static uint8_t *plain_message(const struct lpw_profile *p, size_t *len)
{
	size_t gz_len = 0, cap = 1 << 20;
	int err = 1;
	char *gz = fix_capture(lpw_write_pprof, p, &gz_len, &err);
	struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
	uint8_t *out = malloc(cap);

	assert_non_null(gz);
	assert_non_null(out);
	assert_int_equal(libdeflate_gzip_decompress(d, gz, gz_len, out, cap, len), 0);
	libdeflate_free_decompressor(d);
	free(gz);
	return out;
}

static void test_plain_message(void **state)
{
	size_t len;
	uint8_t *msg = plain_message(fix_sample_profile(), &len);
	struct lpw_read *r = NULL;
	char why[256];

	(void)state;
	assert_int_equal(read_bytes(msg, len, NULL, &r, why, sizeof(why)), 0);
	assert_same_profile(fix_sample_profile(), lpw_read__profile(r));
	lpw_read__free(r);
	free(msg);
}

/* Reading bytes fails with err and a reason that contains what. */
static void assert_refused(const void *p, size_t len, const struct lpw_read_opts *o, int err,
			   const char *what)
{
	struct lpw_read *r = (struct lpw_read *)&r;
	char why[256];

	assert_int_equal(read_bytes(p, len, o, &r, why, sizeof(why)), err);
	assert_null(r);
	if (!strstr(why, what))
		fail_msg("reason \"%s\" does not say \"%s\"", why, what);
}

static void test_bad_files(void **state)
{
	size_t len = 0, mlen;
	int err = 1;
	char *gz = fix_capture(lpw_write_pprof, fix_sample_profile(), &len, &err);
	uint8_t *msg = plain_message(fix_sample_profile(), &mlen);
	struct lpw_read_opts small = {.sz = sizeof(small), .max_bytes = 64};
	struct lpw_read_opts tight = {.sz = sizeof(small), .max_mem = 256};
	char *more = malloc(len + 3);

	(void)state;
	assert_refused("", 0, NULL, -EBADMSG, "an empty file");
	assert_refused(gz, len - 5, NULL, -EBADMSG, "gzip");
	memcpy(more, gz, len);
	memcpy(more + len, "abc", 3);
	assert_refused(more, len + 3, NULL, -EBADMSG, "3 bytes after the gzip data");
	gz[len / 2] ^= 0x55;
	assert_refused(gz, len, NULL, -EBADMSG, "gzip");
	gz[len / 2] ^= 0x55;
	assert_refused(gz, len, &small, -EFBIG, "larger than");
	assert_refused(msg, mlen, &small, -EFBIG, "larger than");
	assert_refused(gz, len, &tight, -ENOMEM, "to unpack");
	assert_refused(msg, mlen / 2, NULL, -EBADMSG, "not a valid pprof");
	free(more);
	free(msg);
	free(gz);
}

/*
 * Damages one field of the sample profile's message, then reads it. damage
 * is called again before the message is freed: those that change a count
 * or a pointer are their own inverse, the others only change a number.
 */
static void assert_damage_refused(void (*damage)(pb_t *m), const char *what)
{
	size_t len, n;
	uint8_t *msg = plain_message(fix_sample_profile(), &len), *again;
	pb_t *m = perftools__profiles__profile__unpack(NULL, len, msg);

	assert_non_null(m);
	damage(m);
	n = perftools__profiles__profile__get_packed_size(m);
	again = malloc(n ? n : 1);
	assert_non_null(again);
	assert_int_equal(perftools__profiles__profile__pack(m, again), n);
	assert_refused(again, n, NULL, -EBADMSG, what);
	free(again);
	damage(m);
	perftools__profiles__profile__free_unpacked(m, NULL);
	free(msg);
}

static void bad_location_id(pb_t *m)
{
	m->sample[1]->location_id[0] = 99;
}
static void bad_label_key(pb_t *m)
{
	m->sample[0]->label[1]->key = 1000;
}
static void bad_label_str(pb_t *m)
{
	m->sample[0]->label[1]->str = -1;
}
static void bad_comment(pb_t *m)
{
	m->comment[1] = (int64_t)m->n_string_table;
}
static void bad_mapping_ref(pb_t *m)
{
	m->location[0]->mapping_id = 3;
}
static void dup_mapping(pb_t *m)
{
	m->mapping[1]->id = 1;
}
static void zero_location_id(pb_t *m)
{
	m->location[2]->id = 0;
}
static void bad_function_ref(pb_t *m)
{
	m->location[0]->line[0]->function_id = 0;
}
static void bad_function_name(pb_t *m)
{
	m->function[0]->name = 1 << 20;
}
static void bad_mapping_file(pb_t *m)
{
	m->mapping[0]->filename = -3;
}
static void one_value(pb_t *m)
{
	m->sample[2]->n_value ^= 3; /* 2 <-> 1 */
}
static void one_sample_type(pb_t *m)
{
	m->n_sample_type ^= 3;
}
static void bad_sample_type(pb_t *m)
{
	m->sample_type[1]->unit = 777;
}
static void bad_pid(pb_t *m)
{
	m->sample[0]->label[0]->num = -1;
}
static void first_string(pb_t *m)
{
	char *s = m->string_table[0];

	m->string_table[0] = m->string_table[1];
	m->string_table[1] = s;
}
static void bad_default(pb_t *m)
{
	m->default_sample_type = 1 << 30;
}
static void negative_line(pb_t *m)
{
	m->location[0]->line[0]->line = -1;
}

static void test_bad_indices(void **state)
{
	(void)state;
	assert_damage_refused(bad_location_id, "sample 1: no location 99");
	assert_damage_refused(bad_label_key, "sample 0: label string index");
	assert_damage_refused(bad_label_str, "sample 0: label string index");
	assert_damage_refused(bad_comment, "comment 1");
	assert_damage_refused(bad_mapping_ref, "location 1: no mapping 3");
	assert_damage_refused(dup_mapping, "two mappings with id 1");
	assert_damage_refused(zero_location_id, "location 2 has id 0");
	assert_damage_refused(bad_function_ref, "location 1: no function 0");
	assert_damage_refused(bad_function_name, "function 1: string index");
	assert_damage_refused(bad_mapping_file, "mapping 1: string index");
	assert_damage_refused(one_value, "sample 2: 1 values for 2 sample types");
	assert_damage_refused(one_sample_type, "1 sample types");
	assert_damage_refused(bad_sample_type, "sample type: string index");
	assert_damage_refused(bad_pid, "sample 0: pid -1");
	assert_damage_refused(first_string, "does not start with");
	assert_damage_refused(bad_default, "default sample type");
	assert_damage_refused(negative_line, "line number -1");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip_sample), cmocka_unit_test(test_round_trip_inline),
		cmocka_unit_test(test_round_trip_labels), cmocka_unit_test(test_plain_message),
		cmocka_unit_test(test_bad_files),	  cmocka_unit_test(test_bad_indices),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
