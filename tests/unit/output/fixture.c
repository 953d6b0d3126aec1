// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fixture.h"

enum { L_MAIN, L_A, L_B, L_C, L_LEAF, L_SYSCALL, L_UNKNOWN };

static const struct symb_mapping fix_mappings[] = {
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

static const struct symb_location fix_locations[] = {
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
	[L_UNKNOWN] = {.mapping = SYMB_NO_MAPPING,
		       .address = 0x7f0000001234ull,
		       .function = "[unknown]"},
};

/* leaf first */
static const uint32_t fix_leaf_stack[] = {L_LEAF, L_C, L_B, L_A, L_MAIN, L_UNKNOWN};
static const uint32_t fix_kernel_stack[] = {L_SYSCALL, L_C, L_B, L_A, L_MAIN, L_UNKNOWN};
static const uint32_t fix_short_stack[] = {L_B, L_A, L_MAIN, L_UNKNOWN};

#define STACK(s) .locs = s, .nlocs = sizeof(s) / sizeof(s[0])

static const struct symb_stack fix_stacks[] = {
	{.pid = 100, .comm = "demo", STACK(fix_leaf_stack), .values = {70, 70 * FIX_NS}},
	{.pid = 101, .comm = "demo", STACK(fix_leaf_stack), .values = {10, 10 * FIX_NS}},
	{.pid = 100, .comm = "demo", STACK(fix_kernel_stack), .values = {15, 15 * FIX_NS}},
	{.pid = 100, .comm = "demo", STACK(fix_short_stack), .values = {5, 5 * FIX_NS}},
};

static const char *const fix_comments[] = {"lowprof test profile", "second comment"};

static const struct symb_profile fix_profile = {
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

const struct symb_profile *fix_sample_profile(void)
{
	return &fix_profile;
}

char *fix_capture(int (*writer)(const struct symb_profile *, int), const struct symb_profile *p,
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
