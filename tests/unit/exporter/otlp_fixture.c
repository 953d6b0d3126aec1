// SPDX-License-Identifier: MIT
#include "otlp_fixture.h"

enum { M_APP, M_LIBC, M_KERNEL, M_UNUSED };
enum { L_MAIN, L_WORK, L_MEMCPY, L_SYSCALL, L_UNUSED, L_UNKNOWN };

static const struct lpw_mapping mappings[] = {
	[M_APP] = {"/usr/bin/app", FIX_BUILD_ID, 0x1000, 0x9000, 0x1000, true},
	[M_LIBC] = {"/lib/libc.so.6", NULL, 0x20000, 0x40000, 0x20000, true},
	[M_KERNEL] = {"[kernel.kallsyms]", NULL, 0xffffffff81000000ull, 0xffffffff82000000ull, 0,
		      true},
	[M_UNUSED] = {"/unused", "ffff", 0x1000, 0x2000, 0, false},
};

/* innermost first: inner_fn inlined into work */
static const struct lpw_line work_lines[] = {
	{"inner_fn", "/src/app/inner.h", 12},
	{"work", "/src/app/work.c", 40},
};

static const struct lpw_location locations[] = {
	[L_MAIN] = {M_APP, 0x1200, "main", false, true, NULL, 0},
	[L_WORK] = {M_APP, 0x1340, "work", false, true, work_lines, 2},
	[L_MEMCPY] = {M_LIBC, 0x20400, "memcpy", false, true, NULL, 0},
	[L_SYSCALL] = {M_KERNEL, 0xffffffff81001000ull, "do_syscall_64", true, true, NULL, 0},
	[L_UNUSED] = {M_UNUSED, 0x1100, "unused_fn", false, true, NULL, 0},
	[L_UNKNOWN] = {LPW_NO_MAPPING, 0x7f0000001234ull, "[unknown]", false, false, NULL, 0},
};

/* leaf first */
static const uint32_t st_app[] = {L_WORK, L_MAIN};
static const uint32_t st_copy[] = {L_MEMCPY, L_WORK, L_MAIN};
static const uint32_t st_sys[] = {L_SYSCALL, L_MEMCPY, L_UNKNOWN};

static const struct lpw_stack stacks[] = {
	{100, "app", "/usr/bin/app", "/user.slice/a", NULL, NULL, st_app, 2, {7, 70}},
	{100, "app-worker", "/usr/bin/app", "/user.slice/a", NULL, NULL, st_copy, 3, {3, 30}},
	{200,
	 "nginx",
	 "/usr/sbin/nginx",
	 "/kubepods/pod/x",
	 FIX_CONTAINER,
	 FIX_POD,
	 st_sys,
	 3,
	 {5, 50}},
	{100, "app", "/usr/bin/app", "/user.slice/b", NULL, NULL, st_app, 2, {1, 10}},
	{200,
	 "nginx",
	 "/usr/sbin/nginx",
	 "/kubepods/pod/x",
	 FIX_CONTAINER,
	 FIX_POD,
	 st_copy,
	 3,
	 {2, 20}},
};

static const struct lpw_profile profile = {
	.mappings = mappings,
	.nmappings = sizeof(mappings) / sizeof(mappings[0]),
	.locations = locations,
	.nlocations = sizeof(locations) / sizeof(locations[0]),
	.stacks = stacks,
	.nstacks = sizeof(stacks) / sizeof(stacks[0]),
	.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	.period_type = {"cpu", "nanoseconds"},
	.period = FIX_PERIOD,
	.folded_value = 1,
	.time_nanos = FIX_TIME,
	.duration_nanos = FIX_DURATION,
	.title = "lowprof cpu: testhost",
};

static const struct exp_identity identity = {
	.host_name = FIX_HOST,
	.service_name = NULL,
	.kind = "cpu",
	.seq = 7,
};

const struct lpw_profile *fix_otlp_profile(void)
{
	return &profile;
}

const struct exp_identity *fix_otlp_identity(void)
{
	return &identity;
}
