// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"

enum { L_MAIN, L_A, L_B, L_C, L_LEAF, L_SYSCALL, L_UNKNOWN };

static const struct lpw_mapping fix_mappings[] = {
	{.path = "/usr/bin/lp-demo",
	 .build_id = "0123456789abcdef0123456789abcdef01234567",
	 .start = 0x1000,
	 .limit = 0x9000,
	 .file_offset = 0x1000,
	 .has_functions = true},
	{.path = "[kernel.kallsyms]",
	 .start = 0xffffffff81000000ull,
	 .limit = 0xffffffff83000000ull,
	 .has_functions = true},
};

static const struct lpw_location fix_locations[] = {
	[L_MAIN] = {.mapping = 0, .address = 0x1100, .function = "main", .resolved = true},
	[L_A] = {.mapping = 0, .address = 0x1200, .function = "func_a", .resolved = true},
	[L_B] = {.mapping = 0, .address = 0x1300, .function = "func_b", .resolved = true},
	[L_C] = {.mapping = 0, .address = 0x1400, .function = "func_c", .resolved = true},
	[L_LEAF] = {.mapping = 0, .address = 0x1500, .function = FIX_LEAF, .resolved = true},
	[L_SYSCALL] = {.mapping = 1,
		       .address = 0xffffffff81e01234ull,
		       .function = "do_syscall_64",
		       .kernel = true,
		       .resolved = true},
	[L_UNKNOWN] = {.mapping = LPW_NO_MAPPING,
		       .address = 0x7f0000001234ull,
		       .function = "[unknown]"},
};

/* leaf first */
static const uint32_t fix_leaf_stack[] = {L_LEAF, L_C, L_B, L_A, L_MAIN, L_UNKNOWN};
static const uint32_t fix_kernel_stack[] = {L_SYSCALL, L_C, L_B, L_A, L_MAIN, L_UNKNOWN};
static const uint32_t fix_short_stack[] = {L_B, L_A, L_MAIN, L_UNKNOWN};

#define STACK(s) .locs = s, .nlocs = sizeof(s) / sizeof(s[0])

static const struct lpw_stack fix_stacks[] = {
	{.pid = 100, .comm = "demo", STACK(fix_leaf_stack), .values = {70, 70 * FIX_NS}},
	{.pid = 101, .comm = "demo", STACK(fix_leaf_stack), .values = {10, 10 * FIX_NS}},
	{.pid = 100, .comm = "demo", STACK(fix_kernel_stack), .values = {15, 15 * FIX_NS}},
	{.pid = 100, .comm = "demo", STACK(fix_short_stack), .values = {5, 5 * FIX_NS}},
};

static const char *const fix_comments[] = {"lowprof test profile", "second comment"};

static const struct lpw_profile fix_profile = {
	.mappings = fix_mappings,
	.nmappings = 2,
	.locations = fix_locations,
	.nlocations = sizeof(fix_locations) / sizeof(fix_locations[0]),
	.stacks = fix_stacks,
	.nstacks = sizeof(fix_stacks) / sizeof(fix_stacks[0]),
	.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.period_type = {"cpu", "nanoseconds"},
	.period = FIX_NS,
	.folded_value = 1,
	.time_nanos = 1700000000123456789ll,
	.duration_nanos = 10000000000ll,
	.title = "lowprof cpu: test host",
	.comments = fix_comments,
	.ncomments = 2,
};

const struct lpw_profile *fix_sample_profile(void)
{
	return &fix_profile;
}

/* innermost first, as lpw_location.lines wants them */
static const struct lpw_line fix_inl_deep[] = {
	{.function = "inner_fn", .file = "/src/inl.h", .line = 12},
	{.function = "mid_fn", .file = "/src/inl.h", .line = 30},
	{.function = "outer_fn", .file = "/src/main.c", .line = 77},
};
static const struct lpw_line fix_inl_one[] = {
	{.function = "inner_fn", .file = "/src/inl.h", .line = 14},
	{.function = "outer_fn", .file = "/src/main.c", .line = 80},
};
static const struct lpw_line fix_inl_main[] = {
	{.function = "main", .file = "/src/main.c", .line = 5},
};

#define LINES(a) .lines = a, .nlines = sizeof(a) / sizeof(a[0])

enum { LI_DEEP, LI_ONE, LI_MAIN, LI_PLAIN };

static const struct lpw_location fix_inl_locations[] = {
	[LI_DEEP] = {.mapping = 0,
		     .address = 0x2100,
		     .function = "outer_fn",
		     .resolved = true,
		     LINES(fix_inl_deep)},
	[LI_ONE] = {.mapping = 0,
		    .address = 0x2180,
		    .function = "outer_fn",
		    .resolved = true,
		    LINES(fix_inl_one)},
	[LI_MAIN] = {.mapping = 0,
		     .address = 0x2200,
		     .function = "main",
		     .resolved = true,
		     LINES(fix_inl_main)},
	[LI_PLAIN] = {.mapping = 0, .address = 0x2300, .function = "plain_fn", .resolved = true},
};

static const uint32_t fix_inl_deep_stack[] = {LI_DEEP, LI_MAIN};
static const uint32_t fix_inl_one_stack[] = {LI_ONE, LI_MAIN};
static const uint32_t fix_inl_plain_stack[] = {LI_PLAIN, LI_MAIN};

static const struct lpw_stack fix_inl_stacks[] = {
	{.pid = 200, .comm = "inl", STACK(fix_inl_deep_stack), .values = {60, 60 * FIX_NS}},
	{.pid = 200, .comm = "inl", STACK(fix_inl_one_stack), .values = {30, 30 * FIX_NS}},
	{.pid = 200, .comm = "inl", STACK(fix_inl_plain_stack), .values = {10, 10 * FIX_NS}},
};

static const struct lpw_profile fix_inl_profile = {
	.mappings = fix_mappings,
	.nmappings = 1,
	.locations = fix_inl_locations,
	.nlocations = sizeof(fix_inl_locations) / sizeof(fix_inl_locations[0]),
	.stacks = fix_inl_stacks,
	.nstacks = sizeof(fix_inl_stacks) / sizeof(fix_inl_stacks[0]),
	.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.period_type = {"cpu", "nanoseconds"},
	.period = FIX_NS,
	.folded_value = 1,
	.time_nanos = 1700000000123456789ll,
	.duration_nanos = 10000000000ll,
	.title = "lowprof cpu: inline test",
};

const struct lpw_profile *fix_inline_profile(void)
{
	return &fix_inl_profile;
}

char *fix_capture(int (*writer)(const struct lpw_profile *, int), const struct lpw_profile *p,
		  size_t *len, int *err)
{
	char *buf = NULL;
	off_t size;
	int fd;

	fd = memfd_create("lp-output-test", 0);
	if (fd < 0)
		return NULL;
	*err = writer(p, fd);
	size = lseek(fd, 0, SEEK_END);
	if (size < 0)
		goto out;
	buf = malloc(size + 1);
	if (!buf || pread(fd, buf, size, 0) != size) {
		free(buf);
		buf = NULL;
		goto out;
	}
	buf[size] = '\0';
	*len = size;
out:
	close(fd);
	return buf;
}
