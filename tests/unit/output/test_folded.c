// SPDX-License-Identifier: MIT
/* Folded-stacks writer: exact text for hand-built profiles. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "fixture.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

static void assert_folded(const struct lpw_profile *p, const char *want)
{
	size_t len = 0;
	int err = 1;
	char *got = fix_capture(lpw_write_folded, p, &len, &err);

	assert_non_null(got);
	assert_int_equal(err, 0);
	assert_string_equal(got, want);
	assert_int_equal(len, strlen(want));
	free(got);
}

static void test_sample_profile(void **state)
{
	assert_folded(fix_sample_profile(),
		      "demo;[unknown];main;func_a;func_b 50000000\n"
		      "demo;[unknown];main;func_a;func_b;func_c;do_syscall_64_[k] 150000000\n"
		      "demo;[unknown];main;func_a;func_b;func_c;leaf_compute 800000000\n");
}

static void test_folded_value_index(void **state)
{
	struct lpw_profile p = *fix_sample_profile();

	p.folded_value = 0;
	assert_folded(&p, "demo;[unknown];main;func_a;func_b 5\n"
			  "demo;[unknown];main;func_a;func_b;func_c;do_syscall_64_[k] 15\n"
			  "demo;[unknown];main;func_a;func_b;func_c;leaf_compute 80\n");
}

/* Names that would break the format, kernel frames, and merging across pids. */
static const struct lpw_location hostile_locs[] = {
	{.mapping = LPW_NO_MAPPING, .function = "std::vector<int>::push_back(int const&)"},
	{.mapping = LPW_NO_MAPPING, .function = "semi;colon"},
	{.mapping = LPW_NO_MAPPING, .function = "new\nline\ttab\x7f"},
	{.mapping = LPW_NO_MAPPING, .function = "with space", .kernel = true},
	{.mapping = LPW_NO_MAPPING, .function = "semi:colon"},
	{.mapping = LPW_NO_MAPPING, .function = "caf\xc3\xa9"},
};
static const uint32_t hs0[] = {3, 2, 1, 0}; /* leaf first */
static const uint32_t hs1[] = {4, 0};	    /* sanitizes to the same as 1, 0 */
static const uint32_t hs2[] = {1, 0};
static const uint32_t hs3[] = {5};

static const struct lpw_stack hostile_stacks[] = {
	{.pid = 1, .comm = "a;b\nc", .locs = hs0, .nlocs = N(hs0), .values = {1, 3}},
	{.pid = 2, .comm = "a;b\nc", .locs = hs0, .nlocs = N(hs0), .values = {1, 4}},
	{.pid = 3, .comm = "other", .locs = hs0, .nlocs = N(hs0), .values = {1, 5}},
	{.pid = 4, .comm = "other", .locs = hs1, .nlocs = N(hs1), .values = {1, 6}},
	{.pid = 5, .comm = "other", .locs = hs2, .nlocs = N(hs2), .values = {1, 7}},
	{.pid = 6, .comm = "other", .locs = hs3, .nlocs = N(hs3), .values = {1, 8}},
	{.pid = 7, .comm = "empty", .locs = NULL, .nlocs = 0, .values = {1, 9}},
};

static struct lpw_profile hostile_profile(void)
{
	struct lpw_profile p = {
		.locations = hostile_locs,
		.nlocations = N(hostile_locs),
		.stacks = hostile_stacks,
		.nstacks = N(hostile_stacks),
		.folded_value = 1,
	};
	return p;
}

static const char hostile_want[] =
	"a:b?c;std::vector<int>::push_back(int const&);semi:colon;new?line?tab?;with space_[k] 7\n"
	"empty 9\n"
	"other;caf\xc3\xa9 8\n"
	"other;std::vector<int>::push_back(int const&);semi:colon 13\n"
	"other;std::vector<int>::push_back(int const&);semi:colon;new?line?tab?;with space_[k] 5\n";

static void test_sanitize_merge_kernel(void **state)
{
	struct lpw_profile p = hostile_profile();

	assert_folded(&p, hostile_want);
}

/* Any order of the same stacks gives the same bytes. */
static void test_deterministic(void **state)
{
	struct lpw_stack rev[N(hostile_stacks)];
	struct lpw_profile p = hostile_profile();
	size_t i;

	assert_folded(&p, hostile_want);
	assert_folded(&p, hostile_want);
	for (i = 0; i < N(rev); i++)
		rev[i] = hostile_stacks[N(rev) - 1 - i];
	p.stacks = rev;
	assert_folded(&p, hostile_want);
}

/* Lines, not keys, are sorted: "x;a 1 3" < "x;a 9" although key "x;a" < "x;a 1". */
static void test_lines_sorted_bytewise(void **state)
{
	static const struct lpw_location locs[] = {
		{.mapping = LPW_NO_MAPPING, .function = "a"},
		{.mapping = LPW_NO_MAPPING, .function = "a 1"},
		{.mapping = LPW_NO_MAPPING, .function = "B"},
	};
	static const uint32_t s0[] = {0}, s1[] = {1}, s2[] = {2};
	static const struct lpw_stack stacks[] = {
		{.comm = "x", .locs = s0, .nlocs = 1, .values = {9, 0}},
		{.comm = "x", .locs = s1, .nlocs = 1, .values = {3, 0}},
		{.comm = "x", .locs = s2, .nlocs = 1, .values = {1, 0}},
	};
	struct lpw_profile p = {
		.locations = locs,
		.nlocations = N(locs),
		.stacks = stacks,
		.nstacks = N(stacks),
		.folded_value = 0,
	};

	assert_folded(&p, "x;B 1\nx;a 1 3\nx;a 9\n");
}

/*
 * Without spaces, key order is line order: prefixes and ':' (the ';' of a
 * name) sort as bytes; values print as "%" PRId64 would, negative ones too.
 */
static void test_lines_sorted_no_space(void **state)
{
	static const struct lpw_location locs[] = {
		{.mapping = LPW_NO_MAPPING, .function = "a"},
		{.mapping = LPW_NO_MAPPING, .function = "a!"},
		{.mapping = LPW_NO_MAPPING, .function = "a;b"},
		{.mapping = LPW_NO_MAPPING, .function = "A"},
	};
	static const uint32_t s0[] = {0}, s1[] = {1}, s2[] = {2}, s3[] = {3}, s01[] = {1, 0};
	static const struct lpw_stack stacks[] = {
		{.comm = "x", .locs = s0, .nlocs = 1, .values = {0, 0}},
		{.comm = "x", .locs = s1, .nlocs = 1, .values = {INT64_MIN, 0}},
		{.comm = "x", .locs = s2, .nlocs = 1, .values = {-12, 0}},
		{.comm = "x", .locs = s3, .nlocs = 1, .values = {INT64_MAX, 0}},
		{.comm = "x", .locs = s01, .nlocs = 2, .values = {10, 0}},
		{.comm = "x", .locs = s0, .nlocs = 1, .values = {5, 0}},
	};
	struct lpw_profile p = {
		.locations = locs,
		.nlocations = N(locs),
		.stacks = stacks,
		.nstacks = N(stacks),
		.folded_value = 0,
	};

	assert_folded(&p, "x;A 9223372036854775807\nx;a 5\nx;a! -9223372036854775808\nx;a:b "
			  "-12\nx;a;a! 10\n");
}

static void test_empty(void **state)
{
	struct lpw_profile p = {.folded_value = 1};

	assert_folded(&p, "");
}

static void test_bad_input(void **state)
{
	static const uint32_t bad[] = {7};
	struct lpw_stack st = {.comm = "x", .locs = bad, .nlocs = 1};
	struct lpw_profile p = hostile_profile();
	size_t len = 0;
	int err = 0;
	char *got;

	p.stacks = &st;
	p.nstacks = 1;
	got = fix_capture(lpw_write_folded, &p, &len, &err);
	assert_int_equal(err, -EINVAL);
	assert_int_equal(len, 0);
	free(got);

	p = hostile_profile();
	p.folded_value = 2;
	got = fix_capture(lpw_write_folded, &p, &len, &err);
	assert_int_equal(err, -EINVAL);
	free(got);
}

/* nlines without a lines array is refused by every writer. */
static void test_bad_lines(void **state)
{
	static const struct lpw_location loc = {
		.mapping = LPW_NO_MAPPING, .function = "f", .nlines = 2};
	static const uint32_t idx[] = {0};
	struct lpw_stack st = {.comm = "c", .locs = idx, .nlocs = 1, .values = {1, 1}};
	struct lpw_profile p = {
		.locations = &loc, .nlocations = 1, .stacks = &st, .nstacks = 1, .folded_value = 1};
	int (*writers[])(const struct lpw_profile *, int) = {lpw_write_folded, lpw_write_pprof,
							     lpw_write_flamegraph};
	size_t i, len;
	int err;
	char *got;

	for (i = 0; i < N(writers); i++) {
		len = 0;
		err = 0;
		got = fix_capture(writers[i], &p, &len, &err);
		assert_int_equal(err, -EINVAL);
		assert_int_equal(len, 0);
		free(got);
	}
}

/*
 * Inlined functions are frames of their own, caller first; a location
 * without lines is its function alone.
 */
static void test_inline_frames(void **state)
{
	assert_folded(fix_inline_profile(), "inl;main;outer_fn;inner_fn 300000000\n"
					    "inl;main;outer_fn;mid_fn;inner_fn 600000000\n"
					    "inl;main;plain_fn 100000000\n");
}

/* Lines in a kernel location get the suffix each; ';' in them is replaced. */
static void test_inline_kernel_sanitized(void **state)
{
	static const struct lpw_line lines[] = {
		{.function = "in;line"},
		{.function = "outer"},
	};
	static const struct lpw_location locs[] = {
		{.mapping = LPW_NO_MAPPING,
		 .function = "outer",
		 .kernel = true,
		 .resolved = true,
		 .lines = lines,
		 .nlines = 2},
	};
	static const uint32_t idx[] = {0};
	struct lpw_stack st = {.comm = "k", .locs = idx, .nlocs = 1, .values = {1, 2}};
	struct lpw_profile p = {.locations = locs, .nlocations = 1, .stacks = &st, .nstacks = 1};

	assert_folded(&p, "k;outer_[k];in:line_[k] 1\n");
}

/* A failing write is reported as the writer's error, for every writer. */
static void test_write_error(void **state)
{
	int fd = open("/dev/full", O_WRONLY | O_CLOEXEC);

	if (fd < 0)
		skip();
	assert_int_equal(lpw_write_folded(fix_sample_profile(), fd), -ENOSPC);
	assert_int_equal(lpw_write_pprof(fix_sample_profile(), fd), -ENOSPC);
	assert_int_equal(lpw_write_flamegraph(fix_sample_profile(), fd), -ENOSPC);
	close(fd);
	assert_int_equal(lpw_write_folded(fix_sample_profile(), fd), -EBADF);
}

/* A key as the writer must render it: comm, then frames root first. */
static size_t model_key(char *dst, const struct lpw_profile *p, const struct lpw_stack *st)
{
	size_t n = 0;

	n += (size_t)sprintf(dst + n, "%s", st->comm);
	for (uint32_t i = st->nlocs; i-- > 0;)
		n += (size_t)sprintf(dst + n, ";%s", p->locations[st->locs[i]].function);
	return n;
}

static int model_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Random stacks over names that are prefixes of each other, with spaces
 * and bytes on both sides of ';' and ' ': the output must be what the
 * slow way gives, every key once with its values summed (as int64 wraps)
 * and the whole lines sorted bytewise.
 */
static void test_random_against_model(void **state)
{
	static const char *const names[] = {"a", "a b", "a 1",	 "ab", "a!", "a.", "a~",
					    "b", "a 9", "x y z", "A",  "a:", " ",  "a b c"};
	static const char *const comms[] = {"c", "c 1", "c1", "c.", "c c"};
	enum { NLOC = N(names), NSTACK = 400, MAXD = 6 };
	struct lpw_location locs[NLOC];
	struct lpw_stack stacks[NSTACK];
	uint32_t idx[NSTACK][MAXD];
	char *keys[NSTACK], *want, *pos;
	size_t i, j, nuniq = 0, wlen = 0;
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	for (i = 0; i < NLOC; i++)
		locs[i] = (struct lpw_location){.mapping = LPW_NO_MAPPING, .function = names[i]};
	for (int round = 0; round < 20; round++) {
		struct lpw_profile p = {.locations = locs,
					.nlocations = NLOC,
					.stacks = stacks,
					.nstacks = NSTACK,
					.folded_value = 0};
		int64_t sums[NSTACK];

		for (i = 0; i < NSTACK; i++) {
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			stacks[i] =
				(struct lpw_stack){.comm = comms[(rnd >> 33) % N(comms)],
						   .locs = idx[i],
						   .nlocs = (uint32_t)((rnd >> 40) % (MAXD + 1))};
			/* small and huge values, so that sums wrap and digits differ */
			stacks[i].values[0] = (rnd >> 20) % 3 == 0 ? (int64_t)(rnd >> 1)
								   : (int64_t)(rnd >> 56) - 100;
			for (j = 0; j < stacks[i].nlocs; j++) {
				rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
				idx[i][j] = (uint32_t)((rnd >> 35) % (round % 2 ? 3 : NLOC));
			}
		}
		/* the model: keys, merged by a quadratic search, lines sorted with strcmp */
		nuniq = 0;
		for (i = 0; i < NSTACK; i++) {
			char key[512];
			size_t k;

			model_key(key, &p, &stacks[i]);
			for (k = 0; k < nuniq && strcmp(keys[k], key); k++)
				;
			if (k == nuniq) {
				keys[nuniq] = strdup(key);
				assert_non_null(keys[nuniq]);
				sums[nuniq++] = 0;
			}
			sums[k] = (int64_t)((uint64_t)sums[k] + (uint64_t)stacks[i].values[0]);
		}
		for (i = 0; i < nuniq; i++) {
			char *line = malloc(strlen(keys[i]) + 32);

			assert_non_null(line);
			sprintf(line, "%s %" PRId64 "\n", keys[i], sums[i]);
			free(keys[i]);
			keys[i] = line;
			wlen += strlen(line);
		}
		qsort(keys, nuniq, sizeof(*keys), model_cmp);
		want = malloc(wlen + 1);
		assert_non_null(want);
		pos = want;
		for (i = 0; i < nuniq; i++) {
			pos += sprintf(pos, "%s", keys[i]);
			free(keys[i]);
		}
		assert_folded(&p, want);
		free(want);
		wlen = 0;
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_profile),
		cmocka_unit_test(test_folded_value_index),
		cmocka_unit_test(test_sanitize_merge_kernel),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_lines_sorted_bytewise),
		cmocka_unit_test(test_lines_sorted_no_space),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_inline_frames),
		cmocka_unit_test(test_inline_kernel_sanitized),
		cmocka_unit_test(test_bad_lines),
		cmocka_unit_test(test_write_error),
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
