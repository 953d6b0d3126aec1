// SPDX-License-Identifier: MIT
/*
 * lowprof merge's model (cli/merge.h): profiles folded in give the sums of
 * their samples, keep apart what differs in a label or a frame, span from
 * the earliest start to the latest end, and carry comments that say which
 * windows they hold with the loss counters summed.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "../output/fixture.h"
#include "merge.h"

static int64_t total(const struct lpw_profile *p, int v)
{
	int64_t s = 0;

	for (size_t i = 0; i < p->nstacks; i++)
		s += p->stacks[i].values[v];
	return s;
}

/* The fixture three times: the same tables, every value tripled. */
static void test_same_profile_sums(void **state)
{
	const struct lpw_profile *f = fix_sample_profile(), *p;
	struct cli_merge *m = cli_merge__new();

	(void)state;
	assert_non_null(m);
	for (int i = 0; i < 3; i++)
		assert_int_equal(cli_merge__add(m, f, "fixture"), 0);
	p = cli_merge__profile(m);
	assert_non_null(p);
	assert_int_equal(p->nmappings, f->nmappings);
	assert_int_equal(p->nlocations, f->nlocations);
	assert_int_equal(p->nstacks, f->nstacks);
	for (size_t i = 0; i < f->nstacks; i++) {
		assert_int_equal(p->stacks[i].values[0], 3 * f->stacks[i].values[0]);
		assert_int_equal(p->stacks[i].values[1], 3 * f->stacks[i].values[1]);
		assert_int_equal(p->stacks[i].pid, f->stacks[i].pid);
		assert_int_equal(p->stacks[i].nlocs, f->stacks[i].nlocs);
		assert_memory_equal(p->stacks[i].locs, f->stacks[i].locs,
				    f->stacks[i].nlocs * sizeof(uint32_t));
	}
	assert_int_equal(p->time_nanos, f->time_nanos);
	assert_int_equal(p->duration_nanos, f->duration_nanos);
	assert_int_equal(p->folded_value, f->folded_value);
	assert_null(cli_merge__profile(m)); /* once */
	assert_int_equal(errno, EINVAL);
	cli_merge__free(m);
}

/* One stack per window: its own, or one that is the table's newest entry. */
static const uint32_t st_a[] = {0}, st_b[] = {1, 0};
static const struct lpw_mapping maps[] = {{.path = "/bin/w", .start = 0x1000, .limit = 0x2000}};
static const struct lpw_location locs[] = {
	{.mapping = 0, .address = 0x1100, .function = "main", .resolved = true},
	{.mapping = 0, .address = 0x1200, .function = "work", .resolved = true},
};

static struct lpw_profile window(const struct lpw_stack *stacks, size_t n, int64_t t, int64_t d,
				 const char *const *comments, size_t ncomments)
{
	return (struct lpw_profile){
		.mappings = maps,
		.nmappings = 1,
		.locations = locs,
		.nlocations = 2,
		.stacks = stacks,
		.nstacks = n,
		.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.period_type = {"cpu", "nanoseconds"},
		.period = 10,
		.time_nanos = t,
		.duration_nanos = d,
		.comments = comments,
		.ncomments = ncomments,
	};
}

/* describe()'s line for collector restarts in a window */
#define RESTARTS(n)                                                                                \
	("lowprof: the collector started again " n " times in this profile: what it did not "      \
	 "sample meanwhile is missing")

static void test_windows(void **state)
{
	static const struct lpw_stack s1[] = {
		{.pid = 1, .comm = "w", .locs = st_a, .nlocs = 1, .values = {1, 10}},
	};
	static const struct lpw_stack s2[] = {
		{.pid = 1, .comm = "w", .locs = st_b, .nlocs = 2, .values = {2, 20}},
		/* the same frames in another cgroup, and in another pid: apart */
		{.pid = 1,
		 .comm = "w",
		 .cgroup = "/a",
		 .locs = st_b,
		 .nlocs = 2,
		 .values = {4, 40}},
		{.pid = 2, .comm = "w", .locs = st_b, .nlocs = 2, .values = {8, 80}},
	};
	static const struct lpw_stack s3[] = {
		/* the newest entry of the table again, then the first */
		{.pid = 2, .comm = "w", .locs = st_b, .nlocs = 2, .values = {16, 160}},
		{.pid = 1, .comm = "w", .locs = st_a, .nlocs = 1, .values = {32, 320}},
	};
	static const char *const c1[] = {"lowprof: 99 Hz", "lost: 1 bpf ring full, 2 shm ring full",
					 "lowprof window 3"};
	static const char *const c2[] = {
		"lowprof: 99 Hz", "lost: 10 bpf ring full, 0 shm ring full", "lowprof window 5"};
	static const char *const c3[] = {"lowprof window 9",
					 "lost: 100 bpf ring full, 5 shm ring full", "a note",
					 RESTARTS("2")};
	/* an empty window with a restart: the restart counts add up */
	static const char *const c4[] = {"lowprof window 10", RESTARTS("1")};
	struct lpw_profile w1 = window(s1, 1, 1000, 100, c1, 3);
	struct lpw_profile w2 = window(s2, 3, 1100, 100, c2, 3);
	struct lpw_profile w3 = window(s3, 2, 950, 10, c3, 4);
	struct lpw_profile w4 = window(NULL, 0, 1150, 10, c4, 2);
	struct cli_merge *m = cli_merge__new();
	const struct lpw_profile *p;

	(void)state;
	assert_int_equal(cli_merge__add(m, &w1, "w1"), 0);
	assert_int_equal(cli_merge__add(m, &w2, "w2"), 0);
	assert_int_equal(cli_merge__add(m, &w3, "w3"), 0);
	assert_int_equal(cli_merge__add(m, &w4, "w4"), 0);
	p = cli_merge__profile(m);
	assert_non_null(p);
	assert_int_equal(total(p, 0), 63);
	assert_int_equal(total(p, 1), 630);
	assert_int_equal(p->nstacks, 4);
	assert_int_equal(p->stacks[0].values[0], 33); /* window 1 + window 3 */
	assert_int_equal(p->stacks[3].values[0], 24); /* pid 2: windows 2 and 3 */
	assert_string_equal(p->stacks[2].cgroup, "/a");
	assert_int_equal(p->nmappings, 1);
	assert_int_equal(p->nlocations, 2);
	/* earliest start, latest end */
	assert_int_equal(p->time_nanos, 950);
	assert_int_equal(p->duration_nanos, 1200 - 950);
	assert_int_equal(p->ncomments, 5);
	assert_string_equal(p->comments[0], "lowprof: 99 Hz");
	assert_string_equal(p->comments[1], "a note");
	assert_string_equal(p->comments[2], "lost: 111 bpf ring full, 7 shm ring full");
	assert_string_equal(p->comments[3], RESTARTS("3"));
	assert_string_equal(p->comments[4],
			    "lowprof merge: 4 windows, SEQ 3..10, missing: 4, 6..8; "
			    "their loss counters summed");
	assert_non_null(strstr(p->title, "lowprof cpu: 4 profiles"));
	cli_merge__free(m);
}

static void test_refused(void **state)
{
	static const struct lpw_stack s1[] = {
		{.pid = 1, .comm = "w", .locs = st_a, .nlocs = 1, .values = {1, 10}},
	};
	struct lpw_profile cpu = window(s1, 1, 0, 1, NULL, 0), off = cpu;
	struct cli_merge *m = cli_merge__new();

	(void)state;
	assert_null(cli_merge__profile(m)); /* nothing added */
	off.value_types[1] = (struct lpw_value_type){"off_cpu", "nanoseconds"};
	assert_int_equal(cli_merge__add(m, &cpu, "cpu"), 0);
	assert_int_equal(cli_merge__add(m, &off, "off"), -EINVAL);
	cli_merge__free(m);
	cli_merge__free(NULL);
}

/*
 * Two windows whose symbolizers put different binaries at the same
 * addresses: the second goes above the first, its locations with it, so
 * no two mappings of the merge overlap and file offsets stay what they were.
 */
static void test_mappings_placed_apart(void **state)
{
	static const struct lpw_mapping ma[] = {
		{.path = "/bin/a", .start = 0x1000, .limit = 0x2000, .file_offset = 0x10},
		{.path = "[kernel.kallsyms]", .start = 0xffff000000000000ull, .limit = UINT64_MAX},
	};
	static const struct lpw_mapping mb[] = {
		{.path = "/bin/b", .start = 0x1000, .limit = 0x2000, .file_offset = 0x10},
		{.path = "[kernel.kallsyms]", .start = 0xffff000000000000ull, .limit = UINT64_MAX},
	};
	static const struct lpw_location la[] = {
		{.mapping = 0, .address = 0x1234, .function = "fa", .resolved = true},
		{.mapping = 1, .address = 0xffff000000001000ull, .function = "k", .kernel = true},
	};
	static const struct lpw_location lb[] = {
		{.mapping = 0, .address = 0x1234, .function = "fb", .resolved = true},
		{.mapping = 1, .address = 0xffff000000001000ull, .function = "k", .kernel = true},
	};
	static const uint32_t st[] = {1, 0};
	static const struct lpw_stack s[] = {
		{.pid = 1, .comm = "x", .locs = st, .nlocs = 2, .values = {1, 1}},
	};
	struct lpw_profile a = window(s, 1, 0, 1, NULL, 0), b = a;
	struct cli_merge *m = cli_merge__new();
	const struct lpw_profile *p;

	(void)state;
	a.mappings = ma;
	a.nmappings = 2;
	a.locations = la;
	b.mappings = mb;
	b.nmappings = 2;
	b.locations = lb;
	assert_int_equal(cli_merge__add(m, &a, "a"), 0);
	assert_int_equal(cli_merge__add(m, &b, "b"), 0);
	assert_int_equal(cli_merge__add(m, &a, "a again"), 0);
	p = cli_merge__profile(m);
	assert_non_null(p);
	assert_int_equal(p->nmappings, 3);
	assert_int_equal(p->nlocations, 3); /* the kernel frame is one */
	assert_string_equal(p->mappings[2].path, "/bin/b");
	assert_int_equal(p->mappings[0].start, 0x1000);
	assert_int_equal(p->mappings[2].start, 0x2000); /* above /bin/a, a multiple of 0x1000 */
	assert_int_equal(p->mappings[2].limit, 0x3000);
	assert_int_equal(p->mappings[2].file_offset, 0x10);
	assert_string_equal(p->locations[2].function, "fb");
	assert_int_equal(p->locations[2].mapping, 2);
	assert_int_equal(p->locations[2].address, 0x2234);
	assert_int_equal(p->locations[0].address, 0x1234);
	assert_int_equal(p->nstacks, 2);
	assert_int_equal(p->stacks[0].values[0], 2); /* a twice */
	cli_merge__free(m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_same_profile_sums),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_mappings_placed_apart),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
