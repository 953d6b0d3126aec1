// SPDX-License-Identifier: MIT
/*
 * The minimal kernel BTF (collector/btf.h): on the machine that built it
 * the collector must choose it, libbpf must load both objects with it
 * without parsing /sys/kernel/btf/vmlinux (its "loading kernel BTF" debug
 * message) but once for the off-CPU object's kfunc externs (BPF task work:
 * libbpf resolves a kfunc against the full kernel BTF whatever
 * btf_custom_path says), and the tp_btf programs, given their attach targets from the
 * build, must attach and run: exec/exit events for a child, switches for
 * a task that sleeps. The full-BTF fallback must still work with our
 * tp_btf handler registered.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf.h"
#include "kfeatures.h"
#include "lowprof/cpus.h"
#include "min_btf.h"
#include "profile.h"
#include "profile.skel.h"

#include "offcpu.h" /* after profile.h, which it builds on */
#include "offcpu.skel.h"

static int kernel_btf_loads; /* libbpf parsed the full kernel BTF */

static int count_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	if (strstr(line, "loading kernel BTF '"))
		kernel_btf_loads++;
	if (level == LIBBPF_WARN)
		fputs(line, stderr);
	return 0;
}

static uint32_t cpus[LP_MAX_CPUS];
static int ncpus;

struct objs {
	struct profile_bpf *prof;
	struct offcpu_bpf *off;
	int retries;	/* off-CPU loads again without sched_switch's prev_state */
	int prof_loads; /* kernel_btf_loads once the profile object is loaded */
	struct bpf_link *links[3];
};

/* Opens, prepares and loads both objects as the collector does. */
static void load_both(struct coll_btf *b, struct objs *o)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = coll_btf__path(b));
	uint32_t max_id = cpus[ncpus - 1] + 1;
	struct coll_features f;
	int err;

	assert_int_equal(coll_features__probe(&f), 0);
	o->prof = profile_bpf__open_opts(&oo);
	assert_non_null(o->prof);
	bpf_map__set_max_entries(o->prof->maps.events, 1 << 20);
	bpf_map__set_max_entries(o->prof->maps.scratch, max_id);
	coll_features__apply_profile(&f, o->prof, false);
	assert_int_equal(coll_btf__prepare(b, o->prof->obj), 0);
	assert_int_equal(profile_bpf__load(o->prof), 0);
	o->prof_loads = kernel_btf_loads;

	/* with sched_switch's prev_state first, as the collector loads it */
	for (;;) {
		o->off = offcpu_bpf__open_opts(&oo);
		assert_non_null(o->off);
		o->off->rodata->mode = LP_OFFCPU_EVENT;
		o->off->rodata->rate_threshold = LP_OFFCPU_ALWAYS;
		bpf_map__set_max_entries(o->off->maps.scratch, max_id);
		bpf_map__set_max_entries(o->off->maps.counts, max_id);
		bpf_map__set_max_entries(o->off->maps.pending, 128);
		assert_int_equal(coll_features__apply_offcpu(&f, o->off, o->prof, true), 0);
		assert_int_equal(coll_btf__prepare(b, o->off->obj), 0);
		err = offcpu_bpf__load(o->off);
		if (!err || !f.have[COLL_F_SWITCH_STATE])
			break;
		offcpu_bpf__destroy(o->off);
		coll_features__lack(&f, COLL_F_SWITCH_STATE);
		o->retries++;
	}
	assert_int_equal(err, 0);
}

static uint64_t switches(struct objs *o)
{
	uint64_t n = 0;

	for (int i = 0; i < ncpus; i++) {
		struct lp_offcpu_counts v;

		if (!bpf_map__lookup_elem(o->off->maps.counts, &cpus[i], sizeof(cpus[i]), &v,
					  sizeof(v), 0))
			n += v.switches;
	}
	return n;
}

/* Attaches the three tp_btf programs through bpf_program__attach (the SEC() handler). */
static void attach_and_run(struct objs *o)
{
	struct timespec ts = {0, 2000000};
	pid_t pid;
	int st;

	o->links[0] = bpf_program__attach(o->prof->progs.on_exec);
	o->links[1] = bpf_program__attach(o->prof->progs.on_exit);
	o->links[2] = bpf_program__attach(bpf_program__autoload(o->off->progs.offcpu_switch_tw)
						  ? o->off->progs.offcpu_switch_tw
						  : o->off->progs.offcpu_switch);
	for (int i = 0; i < 3; i++)
		assert_non_null(o->links[i]);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (int i = 0; i < 20; i++)
		nanosleep(&ts, NULL);
	/* exec of the child, its exit (and whatever else ran on the host) */
	assert_true(o->prof->bss->stats.task_events >= 2);
	assert_true(switches(o) > 0);
}

static void destroy(struct objs *o)
{
	for (int i = 0; i < 3; i++)
		bpf_link__destroy(o->links[i]);
	offcpu_bpf__destroy(o->off);
	profile_bpf__destroy(o->prof);
	memset(o, 0, sizeof(*o));
}

/*
 * The minimal BTF is made from the build host's kernel BTF and is used on
 * that kernel alone: on another one (tests/vm/run.sh boots other kernels
 * with the host's build) the two tests that need it are skipped, and the
 * full-BTF test still runs.
 */
static void skip_unless_build_kernel(void)
{
	struct utsname u;

	if (uname(&u) == 0 && strcmp(u.release, lp_min_btf_release) != 0) {
		printf("SKIP: the minimal BTF was built for kernel %s, this is %s\n",
		       lp_min_btf_release, u.release);
		skip();
	}
}

static void test_minimal_btf_is_used(void **state)
{
	struct coll_btf b = {.fd = -1};
	struct objs o = {0};

	(void)state;
	skip_unless_build_kernel();
	coll_btf__init(&b, false);
	assert_non_null(coll_btf__path(&b));
	kernel_btf_loads = 0;
	load_both(&b, &o);
	assert_int_equal(o.prof_loads, 0);
	assert_int_equal(kernel_btf_loads, 1 + o.retries); /* the off-CPU kfunc externs */
	attach_and_run(&o);
	assert_int_equal(kernel_btf_loads, 1 + o.retries);
	destroy(&o);
	coll_btf__free(&b);
}

/* The fallback: our tp_btf handler registered, the full BTF resolving the targets. */
static void test_fallback_to_full_btf(void **state)
{
	struct coll_btf b = {.fd = -1};
	struct objs o = {0};

	(void)state;
	skip_unless_build_kernel();
	coll_btf__init(&b, false);
	assert_non_null(coll_btf__path(&b));
	coll_btf__use_full(&b);
	assert_null(coll_btf__path(&b));
	kernel_btf_loads = 0;
	load_both(&b, &o);
	assert_int_equal(kernel_btf_loads, 2 + o.retries); /* once per object loaded */
	attach_and_run(&o);
	destroy(&o);
	coll_btf__free(&b);
}

static void test_forced_full_btf(void **state)
{
	struct coll_btf b = {.fd = -1};
	struct objs o = {0};

	(void)state;
	coll_btf__init(&b, true);
	assert_null(coll_btf__path(&b));
	kernel_btf_loads = 0;
	load_both(&b, &o);
	assert_int_equal(kernel_btf_loads, 2 + o.retries);
	attach_and_run(&o);
	destroy(&o);
	coll_btf__free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_minimal_btf_is_used),
		cmocka_unit_test(test_fallback_to_full_btf),
		cmocka_unit_test(test_forced_full_btf),
	};

	if (geteuid() != 0) {
		printf("SKIP: the BPF tests load programs and need root\n");
		return 77;
	}
	if (!lp_min_btf_len) {
		printf("SKIP: built without a minimal BTF (no kernel BTF on the build host)\n");
		return 77;
	}
	ncpus = lp_online_cpus(cpus, LP_MAX_CPUS);
	assert_true(ncpus > 0);
	libbpf_set_print(count_print);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
