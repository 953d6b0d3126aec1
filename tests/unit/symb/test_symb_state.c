// SPDX-License-Identifier: MIT
/*
 * The symbolizer's ingest and profile building on a synthetic record stream
 * that describes this very process: its own executable mapping (from
 * /proc/self/maps, with the real device and inode) and samples whose user
 * frames are addresses of functions in this file, so names resolve through
 * the real ELF path to known values.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/inotify.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowprof/schema.h"
#include "lowprof/writers.h"
#include "build.h"

#define S(lit) ((struct lps_str){lit, sizeof(lit) - 1})

__attribute__((noinline, used)) void symb_test_leaf(void)
{
	__asm__ volatile("nop; nop; nop; nop");
}

__attribute__((noinline, used)) void symb_test_caller(void)
{
	symb_test_leaf();
	__asm__ volatile("nop");
}

static struct lps_mapping self_text;
static char self_path[4096];

/* This binary's executable mapping, as the collector would send it. */
static void find_self(void)
{
	uint64_t fn = (uint64_t)(uintptr_t)&symb_test_leaf;
	char line[4600];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long lo, hi, off, ino;
		unsigned maj, min;
		char perms[5];
		int n = 0;

		if (sscanf(line, "%llx-%llx %4s %llx %x:%x %llu %n", &lo, &hi, perms, &off, &maj,
			   &min, &ino, &n) < 7)
			continue;
		if (fn < lo || fn >= hi)
			continue;
		snprintf(self_path, sizeof(self_path), "%s", line + n);
		self_path[strcspn(self_path, "\n")] = '\0';
		self_text = (struct lps_mapping){lo,
						 hi,
						 off,
						 maj,
						 min,
						 ino,
						 LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
						 {self_path, (uint32_t)strlen(self_path)}};
	}
	fclose(f);
	assert_true(self_text.end > self_text.start);
}

/* A state as the symbolizer makes one; offline: never opens a file. */
static struct symb_state *state_new(bool offline, bool off_cpu)
{
	struct symb_state_opts o = {
		.sz = sizeof(o), .offline = offline, .off_cpu = off_cpu, .files_fd = -1};
	struct symb_state *s = symb_state__new(&o);

	assert_non_null(s);
	return s;
}

static void feed(struct symb_state *s, struct lps_enc *e)
{
	assert_true(lps_enc_len(e) > 0);
	assert_int_equal(symb_state__feed(s, e->buf, e->len), 0);
	lps_enc_reset(e);
}

/* A sample of a kind: weight in ns (off-CPU: the blocked time it stands for). */
static void feed_kind(struct symb_state *s, struct lps_enc *e, uint32_t kind, uint64_t weight,
		      uint32_t pid, const char *comm, const uint64_t *k, uint32_t nk,
		      const uint64_t *u, uint32_t nu)
{
	uint64_t kle[8], ule[8];
	struct lps_sample smp = {.kind = kind,
				 .time_ns = 1000,
				 .pid = pid,
				 .tid = pid,
				 .comm = {comm, (uint32_t)strlen(comm)},
				 .weight = weight,
				 .blocked_ns = kind == LPS_KIND_OFFCPU ? weight : 0,
				 .kstack = (const uint8_t *)kle,
				 .nkstack = nk,
				 .ustack = (const uint8_t *)ule,
				 .nustack = nu};

	for (uint32_t i = 0; i < nk; i++)
		kle[i] = htole64(k[i]);
	for (uint32_t i = 0; i < nu; i++)
		ule[i] = htole64(u[i]);
	lps_enc_sample(e, &smp);
	feed(s, e);
}

static void feed_sample(struct symb_state *s, struct lps_enc *e, uint32_t pid, const char *comm,
			const uint64_t *k, uint32_t nk, const uint64_t *u, uint32_t nu)
{
	feed_kind(s, e, LPS_KIND_CPU, 10000000, pid, comm, k, nk, u, nu);
}

/* A 1.4 meta: kernel addresses relative to _text. */
static void feed_meta_relative(struct symb_state *s, struct lps_enc *e)
{
	struct lps_meta m = {.hostname = S("h"),
			     .clock = S("CLOCK_MONOTONIC"),
			     .producer = S("test"),
			     .kernel_base = S("_text")};

	lps_enc_meta(e, &m, NULL, NULL);
	feed(s, e);
	assert_true(symb_state__ksyms_stats(s)->relative);
}

static char *folded_of(const struct lpw_profile *p)
{
	int fd = memfd_create("folded", 0);
	char *buf = calloc(1, 65536);

	assert_true(fd >= 0);
	assert_int_equal(lpw_write_folded(p, fd), 0);
	assert_true(pread(fd, buf, 65535, 0) >= 0);
	close(fd);
	return buf;
}

/* The folded output of s's on-CPU profile as built now (printed too). */
static char *state_folded(struct symb_state *s)
{
	struct symb_built *b = symb_build(s, SYMB_KIND_CPU);
	char *folded;

	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	printf("%s", folded);
	symb_built_free(b);
	return folded;
}

/* What a writer puts out for p, NUL-terminated. */
static char *output_of(const struct lpw_profile *p, int (*write)(const struct lpw_profile *, int))
{
	int fd = memfd_create("output", 0);
	char *buf = calloc(1, 1 << 20);

	assert_true(fd >= 0);
	assert_int_equal(write(p, fd), 0);
	assert_true(pread(fd, buf, (1 << 20) - 1, 0) >= 0);
	close(fd);
	return buf;
}

static char *summary_of(const struct symb_state *s, const struct symb_built *cpu,
			const struct symb_built *offcpu)
{
	int fd = memfd_create("summary", 0);
	char *buf = calloc(1, 65536);

	assert_true(fd >= 0);
	symb_print_summary(s, cpu, offcpu, symb_state__off_cpu(s), fd);
	assert_true(pread(fd, buf, 65535, 0) >= 0);
	close(fd);
	return buf;
}

static void feed_maps(struct symb_state *s, struct lps_enc *e, uint32_t pid, bool append,
		      const struct lps_mapping *m, uint32_t n)
{
	lps_enc_maps_begin(e, 1, pid, append, n);
	for (uint32_t i = 0; i < n; i++)
		lps_enc_mapping(e, &m[i]);
	feed(s, e);
}

/* Folded output of one sample at leaf in a process whose only mapping is m. */
static char *fold_one(const struct lps_mapping *m, bool offline)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	s = state_new(offline, false);
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 7, false, m, 1);
	feed_sample(s, &e, 7, "x", NULL, 0, u, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
	return folded;
}

/* m names this binary's text (whatever its path says), and is not symbolized. */
static void assert_unresolved(const struct lps_mapping *m)
{
	uint64_t off = (uint64_t)(uintptr_t)&symb_test_leaf + 1 - m->start + m->offset;
	char want[4200], *folded = fold_one(m, false);
	const char *base = strrchr(m->path.ptr, '/') + 1;

	snprintf(want, sizeof(want), "x;%.*s+0x%llx 1\n",
		 (int)(m->path.len - (uint32_t)(base - m->path.ptr)), base,
		 (unsigned long long)off);
	assert_string_equal(folded, want);
	free(folded);
}

static void test_stream_to_profile(void **state)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf + 2;
	/* a return address inside the caller, after the call */
	uint64_t caller = (uint64_t)(uintptr_t)&symb_test_caller + 6;
	uint64_t kstack[2] = {0xffffffff81000150ull, 0xffffffff81000210ull};
	uint64_t u[2] = {leaf, caller};
	uint64_t unknown[1] = {0x1000};
	struct lps_meta meta = {.hostname = S("testhost"),
				.kernel_release = S("6.1"),
				.clock = S("CLOCK_MONOTONIC"),
				.start_mono_ns = 500,
				.freq_hz = 100,
				.ncpus_online = 2,
				.producer = S("test")};
	struct symb_state *s;
	struct symb_built *b;
	const struct lpw_profile *p;
	struct lps_enc e;
	char *folded;

	find_self();
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &meta, NULL, NULL);
	feed(s, &e);
	/* an older collector's (1.3) snapshot: absolute addresses, made relative to _text */
	lps_enc_ksyms_begin(&e, 0, true, 3);
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000000ull, S("_text"), S("")});
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000100ull, S("do_syscall_64"), S("")});
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000200ull, S("entry_SYSCALL_64"), S("")});
	feed(s, &e);
	assert_false(symb_state__ksyms_stats(s)->relative);
	assert_true(symb_state__ksyms_stats(s)->kbase_known &&
		    symb_state__ksyms_stats(s)->kbase == 0xffffffff81000000ull);
	lps_enc_maps_begin(&e, 900, 100, false, 1);
	lps_enc_mapping(&e, &self_text);
	feed(s, &e);

	/* 3 identical user-only samples, 1 with kernel frames, 1 of another comm */
	for (int i = 0; i < 3; i++)
		feed_sample(s, &e, 100, "app", NULL, 0, u, 2);
	feed_sample(s, &e, 100, "app", kstack, 2, u, 2);
	feed_sample(s, &e, 100, "worker", NULL, 0, u, 1);
	/* a process with no maps: its frame is [unknown] */
	feed_sample(s, &e, 200, "nomaps", NULL, 0, unknown, 1);

	assert_int_equal(symb_state__counters(s)->samples, 6);
	assert_int_equal(symb_state__counters(s)->stacks, 4);
	assert_int_equal(symb_state__counters(s)->pids_seen, 2);
	assert_int_equal(symb_state__counters(s)->bad_records, 0);

	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	p = symb_built_profile(b);
	assert_int_equal(p->nstacks, 4);
	assert_int_equal(p->period, 10000000);
	folded = folded_of(p);
	printf("%s", folded);
	assert_non_null(strstr(folded, "app;symb_test_caller;symb_test_leaf 3\n"));
	assert_non_null(strstr(folded, "app;symb_test_caller;symb_test_leaf;entry_SYSCALL_64_[k];"
				       "do_syscall_64_[k] 1\n"));
	assert_non_null(strstr(folded, "worker;symb_test_leaf 1\n"));
	assert_non_null(strstr(folded, "nomaps;[unknown] 1\n"));
	free(folded);
	symb_print_summary(s, b, NULL, symb_state__off_cpu(s), STDOUT_FILENO);
	symb_built_free(b);

	/* after exec the old mappings are void */
	lps_enc_exec(&e, &(struct lps_exec){2000, 100, S("app2")});
	feed(s, &e);
	feed_sample(s, &e, 100, "app2", NULL, 0, u, 1);
	assert_true(symb_state__counters(s)->unmapped_frames >= 2);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* A file whose inode does not match the mapping is never used for names. */
static void test_wrong_inode_not_symbolized(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct lps_mapping m;
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded, want[128];

	find_self();
	m = self_text;
	m.inode += 1;
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	lps_enc_maps_begin(&e, 1, 7, false, 1);
	lps_enc_mapping(&e, &m);
	feed(s, &e);
	feed_sample(s, &e, 7, "x", NULL, 0, u, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	folded = folded_of(symb_built_profile(b));
	snprintf(want, sizeof(want), "x;%s+0x%llx 1\n", strrchr(self_path, '/') + 1,
		 (unsigned long long)(u[0] - m.start + m.offset));
	assert_string_equal(folded, want);
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* The container ids and pod UIDs of the cgroup path forms runtimes make. */
static void test_container_ids(void **state)
{
	static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	static const struct {
		const char *path;
		bool cid;
		const char *pod;
	} cases[] = {
		{"/docker/%s", true, NULL},
		{"/system.slice/docker-%s.scope", true, NULL},
		{"/kubepods/burstable/pod0a1b2c3d-4e5f-6789-abcd-ef0123456789/%s", true,
		 "0a1b2c3d-4e5f-6789-abcd-ef0123456789"},
		{"/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod0a1b2c3d_4e5f_6789_"
		 "abcd_ef0123456789.slice/cri-containerd-%s.scope",
		 true, "0a1b2c3d-4e5f-6789-abcd-ef0123456789"},
		{"/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
		 "crio-%s.scope",
		 true, "0a1b2c3d-4e5f-6789-abcd-ef0123456789"},
		{"/machine.slice/libpod-%s.scope/container", true, NULL},
		{"/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-%s.scope", true,
		 NULL},
		/* conmon is not the container */
		{"/machine.slice/libpod-conmon-%s.scope", false, NULL},
		{"/system.slice/crio-conmon-%s.scope", false, NULL},
		/* no container */
		{"/system.slice/cron.service%.0s", false, NULL},
		{"/%.0s", false, NULL},
		/* 63 digits, upper case, a pod UID with a bad group: none */
		{"/docker/%.63s", false, NULL},
		{"/kubepods/pod0a1b2c3d-4e5f-6789-abcd-ef012345678/x%.0s", false, NULL},
	};
	char path[512], cid[65], pod[37];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), cases[i].path, id);
		symb_container_ids(path, strlen(path), cid, pod);
		printf("%s -> [%s] [%s]\n", path, cid, pod);
		assert_string_equal(cid, cases[i].cid ? id : "");
		assert_string_equal(pod, cases[i].pod ? cases[i].pod : "");
	}
	strcpy(path, "/docker/0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef");
	symb_container_ids(path, strlen(path), cid, pod);
	assert_string_equal(cid, "");
}

/* A sample of pid in cgroup at time t (on-CPU, user frames u). */
static void feed_cg_sample(struct symb_state *s, struct lps_enc *e, uint32_t pid, uint64_t cgroup,
			   uint64_t t, const uint64_t *u, uint32_t nu)
{
	uint64_t ule[4];
	struct lps_sample smp = {.kind = LPS_KIND_CPU,
				 .time_ns = t,
				 .pid = pid,
				 .tid = pid,
				 .comm = S("app"),
				 .weight = 10000000,
				 .ustack = (const uint8_t *)ule,
				 .nustack = nu,
				 .cgroup_id = cgroup};

	for (uint32_t i = 0; i < nu; i++)
		ule[i] = htole64(u[i]);
	lps_enc_sample(e, &smp);
	feed(s, e);
}

/*
 * exe, cgroup, container.id and k8s.pod.uid: from the proc and cgroup
 * records to the profile's stacks; samples of other cgroups or executables
 * are other stacks; between windows, what nothing holds is forgotten.
 */
static void test_labels(void **state)
{
	static const char cgpath[] =
		"/kubepods.slice/kubepods-pod0a1b2c3d_4e5f_6789_abcd_ef0123456789.slice/"
		"cri-containerd-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef."
		"scope";
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 2};
	struct symb_labels_stats ls;
	const struct lpw_profile *p;
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	int found = 0;

	find_self();
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	lps_enc_proc(&e, &(struct lps_proc){900, 100, S("/usr/bin/app")});
	feed(s, &e);
	lps_enc_maps_begin(&e, 900, 100, false, 1);
	lps_enc_mapping(&e, &self_text);
	feed(s, &e);
	lps_enc_cgroup(&e, &(struct lps_cgroup){950, 55, {cgpath, (uint32_t)strlen(cgpath)}});
	feed(s, &e);
	lps_enc_cgroup(&e, &(struct lps_cgroup){950, 56, S("/system.slice/cron.service")});
	feed(s, &e);
	/* malformed: a path that is not absolute, or empty */
	lps_enc_cgroup(&e, &(struct lps_cgroup){950, 57, S("relative")});
	assert_int_equal(symb_state__feed(s, e.buf, e.len), 0);
	lps_enc_reset(&e);
	assert_int_equal(symb_state__counters(s)->bad_records, 1);

	feed_cg_sample(s, &e, 100, 55, 1000, u, 1);
	feed_cg_sample(s, &e, 100, 55, 1001, u, 1);
	feed_cg_sample(s, &e, 100, 56, 1002, u, 1);
	feed_cg_sample(s, &e, 100, 99, 1003, u, 1); /* never named */
	assert_int_equal(symb_state__counters(s)->stacks, 3);

	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	p = symb_built_profile(b);
	assert_int_equal(p->nstacks, 3);
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];

		assert_string_equal(st->exe, "/usr/bin/app");
		if (st->values[0] == 2) {
			assert_string_equal(st->cgroup, cgpath);
			assert_string_equal(st->container_id,
					    "0123456789abcdef0123456789abcdef0123456789"
					    "abcdef0123456789abcdef");
			assert_string_equal(st->pod_uid, "0a1b2c3d-4e5f-6789-abcd-ef0123456789");
			found |= 1;
		} else if (st->cgroup) {
			assert_string_equal(st->cgroup, "/system.slice/cron.service");
			assert_null(st->container_id);
			assert_null(st->pod_uid);
			found |= 2;
		} else {
			assert_null(st->container_id);
			found |= 4;
		}
	}
	assert_int_equal(found, 7);
	symb_built_free(b);

	/* a new executable after exec: its samples are a stack of their own */
	lps_enc_proc(&e, &(struct lps_proc){1100, 100, S("/usr/bin/app2")});
	feed(s, &e);
	feed_cg_sample(s, &e, 100, 55, 1101, u, 1);
	assert_int_equal(symb_state__counters(s)->stacks, 4);
	symb_state__labels_stats(s, &ls);
	assert_int_equal(ls.exes, 2);
	assert_int_equal(ls.cgroups, 2);

	/* a window later: /usr/bin/app is held by no process */
	symb_state__new_window(s);
	symb_state__labels_stats(s, &ls);
	assert_int_equal(ls.exes, 1);
	assert_int_equal(ls.cgroups, 2);
	assert_null(symb_state__exe(s, 1)); /* app's id: app2 took the next one */
	assert_string_equal(symb_state__exe(s, 2), "/usr/bin/app2");
	/* eleven minutes on: cgroup 56 named no sample since, 55 one now */
	feed_cg_sample(s, &e, 100, 55, 1101 + SYMB_CGROUP_IDLE_NS + 60000000000ull, u, 1);
	symb_state__new_window(s);
	symb_state__labels_stats(s, &ls);
	assert_int_equal(ls.cgroups, 1);
	assert_non_null(symb_state__cgroup(s, 55));
	assert_null(symb_state__cgroup(s, 56));
	/* the process exits: its executable goes with the next window */
	lps_enc_exit(&e, &(struct lps_exit){1200 + SYMB_CGROUP_IDLE_NS + 60000000000ull, 100});
	feed(s, &e);
	symb_state__new_window(s);
	symb_state__labels_stats(s, &ls);
	assert_int_equal(ls.exes, 0);
	lps_enc_free(&e);
	symb_state__free(s);
}

static void test_bad_records_counted(void **state)
{
	static const uint8_t garbage[] = {0x93, 0x02, 0xff, 0x00};
	static const uint8_t newer_type[] = {0x92, 0x3f, 0x00};
	static const uint8_t major2[] = {0x9f, 0x01, 0x02, 0x00, 0xa0, 0xa0, 0xa0, 0,
					 0,    0,    0,	   0,	 0,    0,    0x90, 0xa0};
	struct symb_state *s;

	s = state_new(false, false);
	assert_int_equal(symb_state__feed(s, garbage, sizeof(garbage)), 0);
	assert_int_equal(symb_state__feed(s, newer_type, sizeof(newer_type)), 0);
	assert_int_equal(symb_state__counters(s)->bad_records, 1);
	assert_int_equal(symb_state__counters(s)->unknown_records, 1);
	assert_int_equal(symb_state__feed(s, major2, sizeof(major2)), -EPROTO);
	symb_state__free(s);
}

/*
 * A process's mappings split across records: appends add to the first
 * record's, out-of-order entries are dropped and counted, and a new first
 * record replaces everything.
 */
static void test_maps_append(void **state)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf + 2;
	uint64_t caller = (uint64_t)(uintptr_t)&symb_test_caller + 6;
	uint64_t u[2] = {leaf, caller};
	/* split between the two functions: one frame in each part */
	uint64_t lf = (uint64_t)(uintptr_t)&symb_test_leaf;
	uint64_t cf = (uint64_t)(uintptr_t)&symb_test_caller;
	uint64_t mid = lf < cf ? cf : lf;
	struct lps_mapping part[2], anon = {0x1000, 0x2000, 0, 0, 0, 0, LPS_PROT_X, S("")};
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	find_self();
	part[0] = part[1] = self_text;
	part[0].end = mid;
	part[1].start = mid;
	part[1].offset = self_text.offset + (mid - self_text.start);
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 100, false, &part[0], 1);
	feed_maps(s, &e, 100, true, &part[1], 1);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 2);
	/* overlapping the known ones: dropped */
	feed_maps(s, &e, 100, true, &part[0], 1);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 2);
	assert_int_equal(symb_state__counters(s)->bad_mappings, 1);
	feed_sample(s, &e, 100, "app", NULL, 0, u, 2);
	/* an append for a process without maps starts them */
	feed_maps(s, &e, 101, true, &self_text, 1);
	feed_sample(s, &e, 101, "late", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->unmapped_frames, 0);

	b = symb_build(s, SYMB_KIND_CPU);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "app;symb_test_caller;symb_test_leaf 1\n"
				    "late;symb_test_leaf 1\n");
	free(folded);
	symb_built_free(b);

	/* a first record replaces the appended mappings */
	feed_maps(s, &e, 100, false, &anon, 1);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 1);
	assert_int_equal(symb_state__counters(s)->maps, 2);
	feed_sample(s, &e, 100, "app", NULL, 0, u, 2);
	assert_int_equal(symb_state__counters(s)->unmapped_frames, 2);
	lps_enc_free(&e);
	symb_state__free(s);
}

static void feed_mmap(struct symb_state *s, struct lps_enc *e, uint32_t pid,
		      const struct lps_mapping *m)
{
	lps_enc_mmap(e, &(struct lps_mmap){.time_ns = 1, .pid = pid, .map = *m});
	feed(s, e);
}

/*
 * 1.6 mmap and fork records: a mapping made later replaces what it
 * overlaps (split, cut or dropped), a fork inherits its parent's mappings,
 * an exec voids them.
 */
static void test_mmap_fork(void **state)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf + 2;
	uint64_t caller = (uint64_t)(uintptr_t)&symb_test_caller + 6;
	uint64_t u[2] = {leaf, caller};
	uint64_t lf = (uint64_t)(uintptr_t)&symb_test_leaf;
	uint64_t cf = (uint64_t)(uintptr_t)&symb_test_caller;
	uint64_t mid = lf < cf ? cf : lf;
	struct lps_mapping anon = {0x1000, 0x9000, 0, 0, 0, 0, LPS_PROT_X, S("")};
	struct lps_mapping hole = {0x3000, 0x4000, 0, 0, 0, 0, LPS_PROT_X, S("")};
	struct lps_mapping below;
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	find_self();
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	feed_mmap(s, &e, 100, &anon);
	feed_mmap(s, &e, 100, &self_text);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 2);
	/* inside the anonymous one: split in three */
	feed_mmap(s, &e, 100, &hole);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 4);
	assert_int_equal(symb_state__counters(s)->bad_mappings, 0);
	feed_sample(s, &e, 100, "app", NULL, 0, u, 2);
	/* a fork has its parent's mappings */
	lps_enc_fork(&e, &(struct lps_fork){2, 101, 100});
	feed(s, &e);
	assert_int_equal(symb_state__proc_nmaps(s, 101), 4);
	assert_int_equal(symb_state__counters(s)->maps, 8);
	feed_sample(s, &e, 101, "kid", NULL, 0, u, 2);
	assert_int_equal(symb_state__counters(s)->unmapped_frames, 0);
	b = symb_build(s, SYMB_KIND_CPU);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "app;symb_test_caller;symb_test_leaf 1\n"
				    "kid;symb_test_caller;symb_test_leaf 1\n");
	free(folded);
	symb_built_free(b);

	/* anonymous memory over the text's head: its tail keeps the file at its offset */
	below = anon;
	below.start = self_text.start;
	below.end = mid;
	feed_mmap(s, &e, 101, &below);
	assert_int_equal(symb_state__proc_nmaps(s, 101), 5);
	feed_sample(s, &e, 101, "kid", NULL, 0, &u[mid == lf ? 0 : 1], 1);
	b = symb_build(s, SYMB_KIND_CPU);
	folded = folded_of(symb_built_profile(b));
	assert_non_null(
		strstr(folded, mid == lf ? "kid;symb_test_leaf 1\n" : "kid;symb_test_caller 1\n"));
	free(folded);
	symb_built_free(b);
	/* the same over the whole of it: the file mapping is gone, its object unheld */
	below.end = self_text.end;
	feed_mmap(s, &e, 101, &below);
	assert_int_equal(symb_state__proc_nmaps(s, 101), 4);
	/* an exec voids them; a mapping that is not executable is not kept */
	lps_enc_exec(&e, &(struct lps_exec){3, 100, S("app")});
	feed(s, &e);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 0);
	hole.prot = LPS_PROT_R;
	feed_mmap(s, &e, 100, &hole);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 0);
	assert_int_equal(symb_state__counters(s)->maps, 4);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * Many distinct files: the object table stops at SYMB_MAX_OBJS, a process at
 * SYMB_MAX_MAPS_PER_PROC mappings; the rest is counted, lookups of known
 * objects still work, and ingest stays linear (a quadratic one takes minutes).
 */
static void test_maps_limits(void **state)
{
	enum { PER_REC = 16384, PER_PROC = 40000, BIG = 70000 };
	uint64_t first[1] = {0x10000 + 0x800}, last[1] = {0x10000 + (PER_PROC - 1) * 0x1000ull};
	static char paths[PER_REC][32];
	struct lps_mapping *m = calloc(PER_REC, sizeof(*m));
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	assert_non_null(m);
	s = state_new(true, false);
	lps_enc_init_dynamic(&e);
	/* pids 1 and 2: 40000 distinct files each, in records of 16384 */
	for (uint32_t pid = 1; pid <= 2; pid++) {
		for (uint32_t i = 0; i < PER_PROC; i += PER_REC) {
			uint32_t n = PER_PROC - i < PER_REC ? PER_PROC - i : PER_REC;

			for (uint32_t j = 0; j < n; j++) {
				uint32_t k = (pid - 1) * PER_PROC + i + j;

				snprintf(paths[j], sizeof(paths[j]), "/nonexistent/lib%u.so", k);
				m[j] = (struct lps_mapping){0x10000 + (i + j) * 0x1000ull,
							    0x10000 + (i + j + 1) * 0x1000ull,
							    0,
							    8,
							    1,
							    1000 + k,
							    LPS_PROT_R | LPS_PROT_X,
							    {paths[j], (uint32_t)strlen(paths[j])}};
			}
			feed_maps(s, &e, pid, i > 0, m, n);
		}
	}
	assert_int_equal(symb_state__objects_stats(s)->objs, SYMB_MAX_OBJS);
	assert_int_equal(symb_state__counters(s)->over_limit_mappings,
			 2 * PER_PROC - SYMB_MAX_OBJS);
	/* pid 3: more mappings than a process may have, all of a known file */
	snprintf(paths[0], sizeof(paths[0]), "/nonexistent/lib0.so");
	for (uint32_t i = 0; i < BIG; i += PER_REC) {
		uint32_t n = BIG - i < PER_REC ? BIG - i : PER_REC;

		for (uint32_t j = 0; j < n; j++)
			m[j] = (struct lps_mapping){0x10000 + (i + j) * 0x1000ull,
						    0x10000 + (i + j + 1) * 0x1000ull,
						    0,
						    8,
						    1,
						    1000,
						    LPS_PROT_R | LPS_PROT_X,
						    {paths[0], (uint32_t)strlen(paths[0])}};
		feed_maps(s, &e, 3, i > 0, m, n);
	}
	assert_int_equal(symb_state__objects_stats(s)->objs, SYMB_MAX_OBJS);
	assert_int_equal(symb_state__proc_nmaps(s, 3), SYMB_MAX_MAPS_PER_PROC);
	assert_int_equal(symb_state__counters(s)->over_limit_mappings,
			 2 * PER_PROC - SYMB_MAX_OBJS + BIG - SYMB_MAX_MAPS_PER_PROC);
	assert_int_equal(symb_state__counters(s)->maps, 2 * PER_PROC + SYMB_MAX_MAPS_PER_PROC);

	/* pid 1's first file is known; pid 2's last one is past the limit */
	feed_sample(s, &e, 1, "a", NULL, 0, first, 1);
	feed_sample(s, &e, 2, "b", NULL, 0, last, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "a;lib0.so+0x800 1\nb;[unknown] 1\n");
	free(folded);
	symb_built_free(b);

	lps_enc_exit(&e, &(struct lps_exit){2, 3});
	feed(s, &e);
	assert_int_equal(symb_state__counters(s)->maps, 2 * PER_PROC);
	lps_enc_free(&e);
	symb_state__free(s);
	free(m);
}

/* Whether an O_PATH open of path shows as IN_OPEN (older kernels may). */
static bool o_path_notifies(const char *path)
{
	char buf[4096];
	int in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), fd;
	bool seen;

	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, path, IN_OPEN) >= 0);
	fd = open(path, O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	close(fd);
	seen = read(in, buf, sizeof(buf)) > 0;
	close(in);
	return seen;
}

/*
 * A maps record naming a FIFO or a device, with its real device and inode,
 * never makes the symbolizer open it: the frame stays "name+0x...", and
 * inotify sees no open of the FIFO (an O_PATH lookup is not an open).
 */
static void test_open_refuses_special_files(void **state)
{
	char dir[] = "/tmp/symb-test-XXXXXX", fifo[64], buf[4096];
	struct lps_mapping m;
	struct stat st;
	bool watch;
	int in;

	find_self();
	assert_non_null(mkdtemp(dir));
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(stat(fifo, &st), 0);
	watch = !o_path_notifies(fifo);
	in = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	assert_true(in >= 0);
	assert_true(inotify_add_watch(in, fifo, IN_OPEN) >= 0);

	m = self_text;
	m.path = (struct lps_str){fifo, (uint32_t)strlen(fifo)};
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	m.inode = st.st_ino;
	assert_unresolved(&m);
	if (watch)
		assert_true(read(in, buf, sizeof(buf)) < 0 && errno == EAGAIN);
	close(in);

	assert_int_equal(stat("/dev/null", &st), 0);
	m.path = S("/dev/null");
	m.dev_major = major(st.st_dev);
	m.dev_minor = minor(st.st_dev);
	m.inode = st.st_ino;
	assert_unresolved(&m);

	unlink(fifo);
	rmdir(dir);
}

/*
 * Paths that resolve to this very binary (right device and inode) but are
 * not what /proc/PID/maps shows are refused: "..", "." components, and a
 * symlink as the last component.
 */
static void test_open_refuses_odd_paths(void **state)
{
	char dir[] = "/tmp/symb-test-XXXXXX", link[64], path[4200];
	const char *base, *parent;
	struct lps_mapping m;
	char *folded;

	find_self();
	base = strrchr(self_path, '/');
	for (parent = base - 1; parent > self_path && *parent != '/'; parent--)
		;
	assert_true(*parent == '/' && parent < base);
	m = self_text;

	/* /a/b/../b/bin */
	snprintf(path, sizeof(path), "%.*s/..%.*s%s", (int)(base - self_path), self_path,
		 (int)(base - parent), parent, base);
	m.path = (struct lps_str){path, (uint32_t)strlen(path)};
	assert_int_equal(access(path, R_OK), 0);
	assert_unresolved(&m);

	/* /a/b/./bin */
	snprintf(path, sizeof(path), "%.*s/.%s", (int)(base - self_path), self_path, base);
	m.path = (struct lps_str){path, (uint32_t)strlen(path)};
	assert_unresolved(&m);

	/* a symlink to the binary */
	assert_non_null(mkdtemp(dir));
	snprintf(link, sizeof(link), "%s/%s", dir, base + 1);
	assert_int_equal(symlink(self_path, link), 0);
	m.path = (struct lps_str){link, (uint32_t)strlen(link)};
	assert_unresolved(&m);
	unlink(link);
	rmdir(dir);

	/* the plain path resolves, unless the state is offline */
	folded = fold_one(&self_text, false);
	assert_string_equal(folded, "x;symb_test_leaf 1\n");
	free(folded);
	folded = fold_one(&self_text, true);
	assert_non_null(strstr(folded, "+0x"));
	free(folded);
}

/* File offsets beyond an object's 2^44 slice become raw, unmapped frames. */
static void test_bad_offsets(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct lps_mapping m;
	struct symb_state *s;
	struct symb_built *b;
	const struct lpw_profile *p;
	struct lps_enc e;
	char *folded;

	find_self();
	s = state_new(true, false);
	lps_enc_init_dynamic(&e);
	m = self_text;
	m.offset = SYMB_OBJ_SPAN - 1 - (u[0] - m.start); /* the frame is at the last offset */
	feed_maps(s, &e, 7, false, &m, 1);
	feed_sample(s, &e, 7, "x", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->bad_offsets, 0);
	m.offset = UINT64_MAX - 4;
	feed_maps(s, &e, 7, false, &m, 1);
	feed_sample(s, &e, 7, "y", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->bad_offsets, 1);
	assert_int_equal(symb_state__counters(s)->unmapped_frames, 0);

	b = symb_build(s, SYMB_KIND_CPU);
	p = symb_built_profile(b);
	folded = folded_of(p);
	assert_non_null(strstr(folded, "y;[unknown] 1\n"));
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		if (l->mapping != LPW_NO_MAPPING)
			assert_true(l->address >= p->mappings[l->mapping].start &&
				    l->address < p->mappings[l->mapping].limit);
	}
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* Names from the stream or from ELF files cannot drive the terminal. */
static void test_summary_sanitized(void **state)
{
	uint64_t k[1] = {0x10};
	struct lps_loss loss = {.time_ns = 5, .bad_consumer_pos = 3};
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *out;

	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	feed_meta_relative(s, &e);
	lps_enc_ksyms_begin(&e, 0, true, 1);
	lps_enc_ksym(&e, &(struct lps_ksym){0, S("\x1b[2Jevil\x1b]0;x\x07"), S("")});
	feed(s, &e);
	lps_enc_loss(&e, &loss);
	feed(s, &e);
	feed_sample(s, &e, 1, "\x1b[2J", k, 1, NULL, 0);
	b = symb_build(s, SYMB_KIND_CPU);
	out = summary_of(s, b, NULL);
	printf("%s", out);
	assert_null(strchr(out, '\x1b'));
	assert_null(strchr(out, '\x07'));
	assert_non_null(strstr(out, "  ?[2Jevil?]0;x? [k]\n"));
	assert_non_null(strstr(out, ", 3 invalid ring positions\n"));
	free(out);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* A stream of off-CPU samples between on-CPU ones, in a run with --off-cpu. */
static void feed_offcpu_stream(struct symb_state *s, struct lps_enc *e)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf + 2;
	uint64_t caller = (uint64_t)(uintptr_t)&symb_test_caller + 6;
	uint64_t u[2] = {leaf, caller};
	/* blocked in a futex: the scheduler's frames first, leaf first */
	uint64_t k[4] = {0x110, 0x210, 0x310, 0x410}; /* relative to _text (1.4) */
	struct lps_meta meta = {.hostname = S("testhost"),
				.kernel_release = S("6.1"),
				.clock = S("CLOCK_MONOTONIC"),
				.start_mono_ns = 500,
				.freq_hz = 100,
				.ncpus_online = 2,
				.producer = S("test"),
				.off_cpu = true,
				.off_cpu_mode = S("time"),
				.off_cpu_min_ns = 10000,
				.off_cpu_period_ns = 1000000,
				.bpf_mem_bytes = 5u << 20,
				.kernel_base = S("_text")};
	struct lps_loss loss = {.time_ns = 5,
				.off_cpu_switches = 1000,
				.off_cpu_sampled = 40,
				.off_cpu_short = 900,
				.off_cpu_lost = 2};

	lps_enc_meta(e, &meta, NULL, NULL);
	feed(s, e);
	lps_enc_ksyms_begin(e, 0, true, 4);
	lps_enc_ksym(e, &(struct lps_ksym){0x100, S("__schedule"), S("")});
	lps_enc_ksym(e, &(struct lps_ksym){0x200, S("schedule"), S("")});
	lps_enc_ksym(e, &(struct lps_ksym){0x300, S("futex_wait_queue"), S("")});
	lps_enc_ksym(e, &(struct lps_ksym){0x400, S("do_syscall_64"), S("")});
	feed(s, e);
	feed_maps(s, e, 100, false, &self_text, 1);

	feed_sample(s, e, 100, "app", NULL, 0, u, 2);
	feed_kind(s, e, LPS_KIND_OFFCPU, 3000000, 100, "app", k, 4, u, 2);
	feed_sample(s, e, 100, "app", NULL, 0, u, 2);
	feed_kind(s, e, LPS_KIND_OFFCPU, 3000000, 100, "app", k, 4, u, 2);
	feed_kind(s, e, LPS_KIND_OFFCPU, 1500000, 100, "worker", k, 4, u, 1);
	/* the same stack as the on-CPU samples: aggregated apart from them */
	feed_kind(s, e, LPS_KIND_OFFCPU, 500000, 100, "app", NULL, 0, u, 2);
	lps_enc_loss(e, &loss);
	feed(s, e);
	/* the 1.2 meta and loss fields reached the state */
	assert_string_equal(symb_state__meta(s)->offcpu.mode, "time");
	assert_true(symb_state__meta(s)->bpf_mem_bytes == meta.bpf_mem_bytes);
	assert_true(symb_state__counters(s)->loss.off_cpu_switches == loss.off_cpu_switches);
}

/*
 * On- and off-CPU samples of the same process: each profile gets only its
 * own stacks, locations and mappings; off-CPU values are the samples'
 * weights in nanoseconds, and folded output and the flame graph use them.
 */
static void test_offcpu_profile(void **state)
{
	static const char want_offcpu[] =
		"app;symb_test_caller;symb_test_leaf 500000\n"
		"app;symb_test_caller;symb_test_leaf;do_syscall_64_[k];futex_wait_queue_[k];"
		"schedule_[k];__schedule_[k] 6000000\n"
		"worker;symb_test_leaf;do_syscall_64_[k];futex_wait_queue_[k];schedule_[k];"
		"__schedule_[k] 1500000\n";
	struct symb_built *cpu, *offcpu;
	const struct lpw_profile *p;
	struct symb_state *s;
	struct lps_enc e;
	int64_t count = 0, ns = 0;
	char *out;

	find_self();
	s = state_new(false, true);
	lps_enc_init_dynamic(&e);
	feed_offcpu_stream(s, &e);
	assert_int_equal(symb_state__counters(s)->samples, 2);
	assert_int_equal(symb_state__counters(s)->weight_ns, 20000000);
	assert_int_equal(symb_state__counters(s)->offcpu_samples, 4);
	assert_int_equal(symb_state__counters(s)->offcpu_ns, 8000000);
	assert_int_equal(symb_state__counters(s)->offcpu_ignored, 0);

	cpu = symb_build(s, SYMB_KIND_CPU);
	offcpu = symb_build(s, SYMB_KIND_OFFCPU);
	assert_non_null(cpu);
	assert_non_null(offcpu);

	/* on-CPU: as without off-CPU samples, not a frame of theirs */
	p = symb_built_profile(cpu);
	assert_int_equal(p->nstacks, 1);
	assert_int_equal(p->nlocations, 2);
	assert_int_equal(p->stacks[0].values[0], 2);
	assert_int_equal(p->stacks[0].values[1], 20000000);
	assert_string_equal(p->value_types[1].type, "cpu");
	assert_int_equal(p->folded_value, 0);
	assert_int_equal(p->period, 10000000);
	out = folded_of(p);
	assert_string_equal(out, "app;symb_test_caller;symb_test_leaf 2\n");
	free(out);

	/* off-CPU: its own stacks, values {samples, ns}, folded in ns */
	p = symb_built_profile(offcpu);
	assert_int_equal(p->nstacks, 3);
	assert_int_equal(p->nlocations,
			 7); /* the user leaf is 2 addresses: below a syscall, pc - 1 */
	for (size_t i = 0; i < p->nstacks; i++) {
		count += p->stacks[i].values[0];
		ns += p->stacks[i].values[1];
	}
	assert_int_equal(count, 4);
	assert_int_equal(ns, 8000000);
	assert_string_equal(p->value_types[0].type, "samples");
	assert_string_equal(p->value_types[1].type, "off_cpu");
	assert_string_equal(p->value_types[1].unit, "nanoseconds");
	assert_string_equal(p->period_type.type, "off_cpu");
	assert_string_equal(p->period_type.unit, "nanoseconds");
	assert_int_equal(p->period, 1000000);
	assert_int_equal(p->folded_value, 1);
	assert_non_null(strstr(p->title, "off-cpu"));
	assert_true(p->ncomments >= 2);
	assert_non_null(strstr(p->comments[0],
			       "off-CPU time, mode time, period 1.00 ms, minimum 10.00 us"));
	assert_non_null(strstr(p->comments[1], "1000 switches seen, 40 sampled, 900 shorter than "
					       "the minimum, 2 lost"));
	out = folded_of(p);
	printf("%s", out);
	assert_string_equal(out, want_offcpu);
	free(out);
	/* the flame graph shows time: the page formats nanoseconds as such */
	out = output_of(p, lpw_write_flamegraph);
	assert_non_null(
		strstr(out, "\"type\":\"off_cpu\",\"unit\":\"nanoseconds\",\"total\":8000000,"));
	free(out);

	out = summary_of(s, cpu, offcpu);
	printf("%s", out);
	assert_non_null(strstr(out, "  samples         2 (0.020 s of CPU)\n"));
	assert_non_null(strstr(out, "  off-CPU         8.00 ms in 4 samples (mode time, period "
				    "1.00 ms, minimum 10.00 us)\n"));
	assert_non_null(strstr(out, "  off-CPU blocks  1000 switches seen, 40 sampled, 900 shorter "
				    "than the minimum, 2 lost\n"));
	assert_non_null(strstr(out, "  BPF memory      5.0 MiB\n"));
	assert_non_null(strstr(out, "Top functions by self:\n"
				    "  100.00%         2  symb_test_leaf\n"));
	assert_non_null(strstr(out,
			       "Top blocking stacks by off-CPU time:\n"
			       "   75.00%     6.00 ms  app: symb_test_caller > symb_test_leaf > "
			       "futex_wait_queue [k]\n"
			       "   18.75%     1.50 ms  worker: symb_test_leaf > futex_wait_queue "
			       "[k]\n"
			       "    6.25%   500.00 us  app: symb_test_caller > symb_test_leaf\n"));
	free(out);
	symb_built_free(cpu);
	symb_built_free(offcpu);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * Without --off-cpu, off-CPU samples are counted and dropped, and samples of
 * kinds newer than the symbolizer are never mixed into the CPU profile.
 */
static void test_offcpu_ignored(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct symb_built *cpu, *offcpu;
	struct symb_state *s;
	struct lps_enc e;
	char *out;

	find_self();
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	feed_offcpu_stream(s, &e);
	feed_kind(s, &e, 7, 1000, 100, "newer", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->samples, 2);
	assert_int_equal(symb_state__counters(s)->offcpu_samples, 0);
	assert_int_equal(symb_state__counters(s)->offcpu_ignored, 4);
	assert_int_equal(symb_state__counters(s)->unknown_kinds, 1);
	assert_int_equal(symb_state__counters(s)->stacks, 1);

	cpu = symb_build(s, SYMB_KIND_CPU);
	offcpu = symb_build(s, SYMB_KIND_OFFCPU);
	assert_non_null(cpu);
	assert_non_null(offcpu);
	out = folded_of(symb_built_profile(cpu));
	assert_string_equal(out, "app;symb_test_caller;symb_test_leaf 2\n");
	free(out);
	assert_int_equal(symb_built_profile(offcpu)->nstacks, 0);
	out = folded_of(symb_built_profile(offcpu));
	assert_string_equal(out, "");
	free(out);

	out = summary_of(s, cpu, NULL);
	printf("%s", out);
	assert_non_null(strstr(out, "  off-CPU samples 4 ignored (the symbolizer was not started "
				    "with --off-cpu)\n"));
	assert_non_null(strstr(out, ", 1 samples of unknown kinds\n"));
	assert_null(strstr(out, "Top blocking stacks"));
	assert_non_null(strstr(out, "  BPF memory      5.0 MiB\n"));
	free(out);
	symb_built_free(cpu);
	symb_built_free(offcpu);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * Kernel symbols come in /proc/kallsyms order: sorted but for a tail
 * (modules, BPF). Lookups must see them in (address, order of arrival)
 * order however they came: the later of two symbols at one address wins.
 */
static void test_ksyms_unsorted_tail(void **state)
{
	static const struct {
		uint64_t addr;
		const char *name;
	} in[] = {
		{0xffffffff81001000ull, "a"},
		{0xffffffff81002000ull, "b"},
		{0xffffffff81003000ull, "c"},
		{0xffffffff81005000ull, "d"},
		/* the tail: out of order, one below all, one at b's address */
		{0xffffffff81004000ull, "e"},
		{0xffffffff81000800ull, "f"},
		{0xffffffff81002000ull, "g"},
		{0xffffffff81006000ull, "h"},
	};
	static const struct {
		uint64_t addr;
		const char *want;
	} q[] = {
		{0xffffffff81000900ull, "f"},  {0xffffffff81001001ull, "a"},
		{0xffffffff81002000ull, "g"},  {0xffffffff81003fffull, "c"},
		{0xffffffff81004000ull, "e"},  {0xffffffff81005001ull, "d"},
		{0xffffffff81006000ull, "h"},  {0xffffffff81000700ull, NULL},
		{0xffffffff81206001ull, NULL}, /* more than 1 MiB past h */
	};
	struct symb_state *s;
	struct lps_enc e;

	for (int order = 0; order < 2; order++) {
		s = state_new(false, false);
		lps_enc_init_dynamic(&e);
		feed_meta_relative(s, &e);
		lps_enc_ksyms_begin(&e, 0, true, sizeof(in) / sizeof(in[0]));
		for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
			/* order 1: the tail first, so that the unsorted part is the whole table */
			size_t j = order ? (i + 4) % 8 : i;

			lps_enc_ksym(&e, &(struct lps_ksym){in[j].addr,
							    {in[j].name, strlen(in[j].name)},
							    S("")});
		}
		feed(s, &e);
		for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
			const char *got = symb_ksyms__lookup(symb_state__ksyms(s), q[i].addr);

			if (!q[i].want)
				assert_null(got);
			else if (order && q[i].addr == 0xffffffff81002000ull)
				assert_string_equal(got, "b"); /* b came after g */
			else
				assert_string_equal(got, q[i].want);
		}
		lps_enc_free(&e);
		symb_state__free(s);
	}
}

/* A sample of pid 100 with registers and a stack copy, to be unwound. */
static void feed_regs_sample(struct symb_state *s, struct lps_enc *e, const char *comm, uint64_t ip,
			     const uint64_t *stack, uint32_t nwords)
{
	uint64_t le[8];
	struct lps_sample smp = {.kind = LPS_KIND_CPU,
				 .time_ns = 1000,
				 .pid = 100,
				 .tid = 100,
				 .comm = {comm, (uint32_t)strlen(comm)},
				 .weight = 1000000,
				 .ip = ip,
				 .sp = 0x7ffd00001000ull,
				 .bp = 0,
				 .stack_copy = (const uint8_t *)le,
				 .stack_copy_len = nwords * 8};

	for (uint32_t i = 0; i < nwords; i++)
		le[i] = htole64(stack[i]);
	lps_enc_sample(e, &smp);
	feed(s, e);
}

/*
 * The unwinder's delta lookups are remembered per (pid, address), but only
 * while that process's mappings do not change (another's may): after an
 * exec the same registers and stack unwind against no mappings (one
 * unknown frame, then frame pointers end the walk), and after the maps
 * come again, against them.
 */
static void test_unwind_follows_maps(void **state)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf;
	/* at the leaf's entry the return address is at sp; the caller's entry "returns" 0 */
	uint64_t stack[4] = {(uint64_t)(uintptr_t)&symb_test_caller + 1, 0, 0, 0};
	struct symb_state *s;
	struct lps_enc e;
	char *folded;

	find_self();
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	lps_enc_maps_begin(&e, 900, 100, false, 1);
	lps_enc_mapping(&e, &self_text);
	feed(s, &e);
	feed_regs_sample(s, &e, "app", leaf, stack, 4);
	feed_regs_sample(s, &e, "app", leaf, stack, 4);
	/* another process's mappings come and go: pid 100's entries still hold */
	lps_enc_maps_begin(&e, 1000, 200, false, 1);
	lps_enc_mapping(&e, &self_text);
	feed(s, &e);
	lps_enc_exec(&e, &(struct lps_exec){1100, 200, S("other")});
	feed(s, &e);
	feed_regs_sample(s, &e, "app", leaf, stack, 4);
	lps_enc_exec(&e, &(struct lps_exec){2000, 100, S("app2")});
	feed(s, &e);
	feed_regs_sample(s, &e, "app2", leaf, stack, 4);
	lps_enc_maps_begin(&e, 3000, 100, false, 1);
	lps_enc_mapping(&e, &self_text);
	feed(s, &e);
	feed_regs_sample(s, &e, "app3", leaf, stack, 4);
	assert_int_equal(symb_state__counters(s)->unwound, 5);

	folded = state_folded(s);
	assert_non_null(strstr(folded, "app;symb_test_caller;symb_test_leaf 3\n"));
	assert_non_null(strstr(folded, "app2;[unknown] 1\n"));
	assert_non_null(strstr(folded, "app3;symb_test_caller;symb_test_leaf 1\n"));
	free(folded);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * Delta lookups are also remembered per (object, file offset), for every
 * process that maps the object: a new process unwinds through them. They
 * last as long as the object's slot names that file: after the process
 * exits and a window start sweeps the object, a file without CFI that takes
 * its slot at the same addresses is not unwound with the old rows (the
 * walk stops at the leaf, as frame pointers end it).
 */
static void test_unwind_obj_memo(void **state)
{
	uint64_t leaf = (uint64_t)(uintptr_t)&symb_test_leaf;
	uint64_t stack[4] = {(uint64_t)(uintptr_t)&symb_test_caller + 1, 0, 0, 0};
	struct lps_mapping none;
	struct symb_state *s;
	struct lps_enc e;
	char *folded;

	find_self();
	none = self_text;
	none.path = S("/nonexistent/lowprof-no-cfi");
	none.inode++;
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 100, false, &self_text, 1);
	feed_regs_sample(s, &e, "app", leaf, stack, 4);
	/* the same process again after an exec and new maps: a new generation */
	lps_enc_exec(&e, &(struct lps_exec){2000, 100, S("again")});
	feed(s, &e);
	feed_maps(s, &e, 100, false, &self_text, 1);
	feed_regs_sample(s, &e, "again", leaf, stack, 4);
	folded = state_folded(s);
	assert_non_null(strstr(folded, "app;symb_test_caller;symb_test_leaf 1\n"));
	assert_non_null(strstr(folded, "again;symb_test_caller;symb_test_leaf 1\n"));
	free(folded);

	/* the process exits; the next window sweeps its object */
	lps_enc_exit(&e, &(struct lps_exit){3000, 100});
	feed(s, &e);
	symb_state__new_window(s);
	feed_maps(s, &e, 100, false, &none, 1);
	feed_regs_sample(s, &e, "nocfi", leaf, stack, 4);
	folded = state_folded(s);
	assert_null(strstr(folded, "symb_test_caller"));
	assert_non_null(strstr(folded, "nocfi;lowprof-no-cfi+0x"));
	assert_int_equal(strchr(folded, ';') - folded, 5);
	assert_null(strchr(strchr(folded, ';') + 1, ';'));
	free(folded);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* This process's [vdso] mapping (its length from /proc/self/maps). */
static struct lps_mapping self_vdso(void)
{
	struct lps_mapping m = {
		.start = getauxval(AT_SYSINFO_EHDR), .prot = 5, .path = S("[vdso]")};
	unsigned long long a, b;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &a, &b) == 2 && a == m.start &&
		    strstr(line, "[vdso]"))
			m.end = b;
	fclose(f);
	assert_true(m.start && m.end > m.start);
	return m;
}

/*
 * [vdso] frames unwind and are named from the stream's vDSO image (record
 * 13): a sample at the entry of this process's __vdso_clock_gettime reaches
 * its caller. A mapping of another length or below 4 GiB (a 32-bit
 * process's vDSO) does not use the image; an image that replaces it is used from then on (one
 * that is not ELF: the frame is unnamed, the walk ends).
 */
static void test_vdso_unwinds(void **state)
{
	struct lps_mapping m[2] = {self_vdso()}, low[2];
	void *h = dlopen("linux-vdso.so.1", RTLD_NOW | RTLD_NOLOAD);
	uint64_t ip = (uint64_t)(uintptr_t)(h ? dlsym(h, "__vdso_clock_gettime") : NULL);
	uint64_t stack[4] = {(uint64_t)(uintptr_t)&symb_test_caller + 1, 0, 0, 0};
	size_t len = m[0].end - m[0].start;
	uint8_t *other = calloc(1, len);
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded, want[128];

	assert_true(ip > m[0].start && ip < m[0].end);
	find_self();
	m[1] = self_text;
	if (m[1].start < m[0].start) { /* ascending */
		m[1] = m[0];
		m[0] = self_text;
	}
	s = state_new(false, false);
	lps_enc_init_dynamic(&e);
	lps_enc_vdso(&e, &(struct lps_vdso){
				 1, {(const char *)(uintptr_t)self_vdso().start, (uint32_t)len}});
	feed(s, &e);
	feed_maps(s, &e, 100, false, m, 2);
	feed_regs_sample(s, &e, "app", ip, stack, 4);
	/* the same image again changes nothing */
	lps_enc_vdso(&e, &(struct lps_vdso){
				 2, {(const char *)(uintptr_t)self_vdso().start, (uint32_t)len}});
	feed(s, &e);
	feed_regs_sample(s, &e, "app", ip, stack, 4);
	/* a [vdso] of another length: not this image */
	for (int i = 0; i < 2; i++)
		if (!strncmp(m[i].path.ptr, "[vdso]", 6))
			m[i].end += 4096;
	feed_maps(s, &e, 100, false, m, 2);
	feed_regs_sample(s, &e, "app32", ip, stack, 4);
	/* nor one of its length below 4 GiB, where only a 32-bit process maps one */
	low[0] = (struct lps_mapping){
		.start = 0x70000000, .end = 0x70000000 + len, .prot = 5, .path = S("[vdso]")};
	low[1] = self_text;
	feed_maps(s, &e, 100, false, low, 2);
	feed_regs_sample(s, &e, "low", low[0].start + (ip - self_vdso().start), stack, 4);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	printf("%s", folded);
	assert_non_null(strstr(folded, "app;symb_test_caller;__vdso_clock_gettime 2\n")
				?: strstr(folded, "app;symb_test_caller;clock_gettime 2\n"));
	assert_non_null(strstr(folded, "app32;[unknown] 1\n"));
	assert_non_null(strstr(folded, "low;[unknown] 1\n"));
	free(folded);
	symb_built_free(b);
	/* another image (not ELF) of the same length replaces it */
	for (int i = 0; i < 2; i++)
		if (!strncmp(m[i].path.ptr, "[vdso]", 6))
			m[i].end -= 4096;
	feed_maps(s, &e, 100, false, m, 2);
	lps_enc_vdso(&e, &(struct lps_vdso){3, {(const char *)other, (uint32_t)len}});
	feed(s, &e);
	feed_regs_sample(s, &e, "other", ip, stack, 4);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	snprintf(want, sizeof(want), "other;[vdso]+0x%llx 1\n",
		 (unsigned long long)(ip - self_vdso().start));
	assert_non_null(strstr(folded, want));
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
	free(other);
}

/*
 * No absolute kernel address reaches a profile: a 1.4 stream's addresses are
 * relative to _text already; an older stream's are made so with its _text;
 * an older stream without _text keeps no kernel address at all.
 */
static void test_kernel_addresses_relative(void **state)
{
	const uint64_t base = 0xffffffff9a200000ull; /* a KASLR base */
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 2};

	for (int mode = 0; mode < 3; mode++) {
		/* 0: 1.4 relative; 1: 1.3 absolute with _text; 2: 1.3 without */
		uint64_t off = mode ? base : 0, k[2] = {off + 0x150, off + 0x210};
		struct lps_meta meta = {.hostname = S("h"),
					.clock = S("CLOCK_MONOTONIC"),
					.producer = S("test"),
					.kernel_base = mode ? (struct lps_str){0} : S("_text")};
		const struct lpw_profile *p;
		struct symb_built *b;
		struct symb_state *s;
		struct lps_enc e;
		uint32_t nk = 0;
		char *folded;

		s = state_new(false, false);
		lps_enc_init_dynamic(&e);
		lps_enc_meta(&e, &meta, NULL, NULL);
		feed(s, &e);
		lps_enc_ksyms_begin(&e, 0, true, mode == 2 ? 2 : 3);
		if (mode != 2)
			lps_enc_ksym(&e, &(struct lps_ksym){off, S("_text"), S("")});
		lps_enc_ksym(&e, &(struct lps_ksym){off + 0x100, S("do_syscall_64"), S("")});
		lps_enc_ksym(&e, &(struct lps_ksym){off + 0x200, S("entry_SYSCALL_64"), S("")});
		feed(s, &e);
		feed_maps(s, &e, 100, false, &self_text, 1);
		feed_sample(s, &e, 100, "app", k, 2, u, 1);
		b = symb_build(s, SYMB_KIND_CPU);
		assert_non_null(b);
		p = symb_built_profile(b);
		for (uint32_t i = 0; i < p->nlocations; i++) {
			const struct lpw_location *l = &p->locations[i];

			if (!l->kernel)
				continue;
			nk++;
			/* the kernel mapping's start stands for _text */
			assert_true(l->address - p->mappings[l->mapping].start < 0x1000);
			assert_true(l->address < base || l->address - base >= (1ull << 32));
		}
		assert_int_equal(nk, mode == 2 ? 1 : 2);
		folded = folded_of(p);
		if (mode == 2)
			assert_non_null(
				strstr(folded, "app;symb_test_leaf;[unknown]_[k];[unknown]_[k] 1"));
		else
			assert_non_null(strstr(folded, "app;symb_test_leaf;entry_SYSCALL_64_[k];"
						       "do_syscall_64_[k] 1"));
		free(folded);
		symb_built_free(b);
		lps_enc_free(&e);
		symb_state__free(s);
	}
}

/*
 * symb_state__finish frees what building needs: a profile built before
 * still writes the same, the counters stay, and the state refuses to be
 * fed or built again rather than read what was freed.
 */
static void test_finish(void **state)
{
	uint64_t k[1] = {0x150}, u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 2};
	struct lps_meta meta = {.hostname = S("h"),
				.clock = S("CLOCK_MONOTONIC"),
				.producer = S("test"),
				.kernel_base = S("_text")};
	struct symb_built *b;
	struct symb_state *s = state_new(false, false);
	struct lps_enc e;
	char *before, *after;

	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &meta, NULL, NULL);
	feed(s, &e);
	lps_enc_ksyms_begin(&e, 0, true, 2);
	lps_enc_ksym(&e, &(struct lps_ksym){0, S("_text"), S("")});
	lps_enc_ksym(&e, &(struct lps_ksym){0x100, S("do_syscall_64"), S("")});
	feed(s, &e);
	feed_maps(s, &e, 100, false, &self_text, 1);
	feed_sample(s, &e, 100, "app", k, 1, u, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	before = folded_of(symb_built_profile(b));
	assert_non_null(strstr(before, "app;symb_test_leaf;do_syscall_64_[k] 1"));
	assert_false(symb_state__finished(s));

	symb_state__finish(s);
	assert_true(symb_state__finished(s));
	after = folded_of(symb_built_profile(b));
	assert_string_equal(after, before);
	assert_int_equal(symb_state__counters(s)->samples, 1);
	errno = 0;
	assert_null(symb_build(s, SYMB_KIND_CPU));
	assert_int_equal(errno, EINVAL);
	lps_enc_meta(&e, &meta, NULL, NULL);
	assert_int_equal(symb_state__feed(s, e.buf, e.len), -EINVAL);
	free(before);
	free(after);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

/* Options of another size are read only when this build knows all they say. */
static void test_opts_size_checked(void **state)
{
	struct {
		struct symb_state_opts o;
		uint64_t newer;
	} big = {.o = {.sz = sizeof(big), .files_fd = -1}};
	struct symb_state_opts small = {.sz = offsetof(struct symb_state_opts, files_fd),
					.files_fd = -1};
	struct symb_state *s;

	(void)state;
	errno = 0;
	assert_null(symb_state__new(&small));
	assert_int_equal(errno, EINVAL);
	assert_null(symb_state__new(NULL));
	big.newer = 1; /* an option this build does not know: refused */
	assert_null(symb_state__new(&big.o));
	big.newer = 0; /* unset: read as this build's */
	s = symb_state__new(&big.o);
	assert_non_null(s);
	symb_state__free(s);
}

/*
 * Windows: a sample at or after the window's end is handed back, not
 * aggregated; a new window starts from no stacks and no sample counts but
 * keeps the processes' mappings, so the next window's frames still resolve.
 */
static void test_windows(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct lps_sample smp = {.kind = LPS_KIND_CPU,
				 .time_ns = 500,
				 .pid = 100,
				 .tid = 100,
				 .comm = S("app"),
				 .weight = 10000000};
	const struct symb_counters *c;
	struct symb_state *s;
	struct symb_built *b;
	uint64_t ule[1];
	struct lps_enc e;
	char *folded;

	(void)state;
	find_self();
	s = state_new(false, false);
	c = symb_state__counters(s);
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 100, false, &self_text, 1);
	ule[0] = htole64(u[0]);
	smp.ustack = (const uint8_t *)ule;
	smp.nustack = 1;
	symb_state__set_window_end(s, 1000);
	lps_enc_sample(&e, &smp);
	feed(s, &e); /* at 500: this window's */
	smp.time_ns = 1000;
	lps_enc_sample(&e, &smp);
	assert_int_equal(symb_state__feed(s, e.buf, e.len), SYMB_FEED_NEXT_WINDOW);
	assert_int_equal(c->samples, 1);
	assert_int_equal(c->records, 2); /* the maps and the first sample */

	symb_state__new_window(s);
	assert_int_equal(c->samples, 0);
	assert_int_equal(c->stacks, 0);
	assert_int_equal(symb_state__proc_nmaps(s, 100), 1);
	symb_state__set_window_end(s, 2000);
	assert_int_equal(symb_state__feed(s, e.buf, e.len), 0); /* the same record, again */
	lps_enc_reset(&e);
	assert_int_equal(c->samples, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "app;symb_test_leaf 1\n");
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * A long run's tables follow what is alive: at a window's start, processes
 * that exited are dropped, and objects no mapping holds any more; an
 * object mapped again later takes a freed slot and still resolves.
 */
static void test_windows_drop_the_dead(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	const struct symb_objects_stats *os;
	const struct symb_counters *c;
	struct symb_state *s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	(void)state;
	find_self();
	s = state_new(false, false);
	c = symb_state__counters(s);
	os = symb_state__objects_stats(s);
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 100, false, &self_text, 1);
	feed_maps(s, &e, 200, false, &self_text, 1);
	assert_int_equal(os->objs, 1);
	assert_int_equal(c->procs, 2);

	lps_enc_exit(&e, &(struct lps_exit){.time_ns = 10, .pid = 100});
	feed(s, &e);
	symb_state__new_window(s);
	assert_int_equal(c->procs, 1); /* 100 is gone */
	assert_int_equal(os->objs, 1); /* 200 still maps the file */
	assert_int_equal(os->swept, 0);

	lps_enc_exit(&e, &(struct lps_exit){.time_ns = 20, .pid = 200});
	feed(s, &e);
	symb_state__new_window(s);
	assert_int_equal(c->procs, 0);
	assert_int_equal(os->objs, 0);
	assert_int_equal(os->swept, 1);
	assert_int_equal(os->slots, 1);

	/* pid 100 again, a new process: the file in the freed slot, named right */
	feed_maps(s, &e, 100, false, &self_text, 1);
	assert_int_equal(os->objs, 1);
	assert_int_equal(os->slots, 1);
	feed_sample(s, &e, 100, "again", NULL, 0, u, 1);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "again;symb_test_leaf 1\n");
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state__free(s);
}

static void feed_perfmap(struct symb_state *s, struct lps_enc *e, uint32_t pid, uint64_t off,
			 const char *text)
{
	lps_enc_perfmap(e, &(struct lps_perfmap){.time_ns = 1,
						 .pid = pid,
						 .offset = off,
						 .data = {text, (uint32_t)strlen(text)}});
	feed(s, e);
}

/*
 * Frames in anonymous executable memory are named by the process's perf
 * map as it was when the sample came: a later line for the same code
 * renames later samples only; exec forgets the map.
 */
static void test_jit_frames(void **state)
{
	static const char map1[] = "7f0000001000 100 JS:*hot /app.js:1\n"
				   "7f0000002000 100 JS:^caller /app.js:9\n";
	static const char map2[] = "7f0000001000 80 JS:*reused /app.js:20\n";
	struct lps_mapping anon = {0x7f0000000000ull,
				   0x7f0000010000ull,
				   0,
				   0,
				   0,
				   0,
				   LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
				   S("")};
	uint64_t u[3] = {0x7f0000001010ull, 0x7f0000002040ull, 0x7f0000003000ull};
	struct symb_jit_stats js;
	struct symb_state *s = state_new(true, false);
	struct symb_built *b;
	struct lps_enc e;
	char *folded, *sum;

	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 300, false, &anon, 1);
	/* the map in two chunks, the first cutting a line */
	feed_perfmap(s, &e, 300, 0, "7f0000001000 100 JS:*h");
	feed_perfmap(s, &e, 300, 22, map1 + 22);
	feed_sample(s, &e, 300, "node", NULL, 0, u, 3);
	feed_sample(s, &e, 300, "node", NULL, 0, u + 1, 1);
	/* the JIT put other code where hot was */
	feed_perfmap(s, &e, 300, sizeof(map1) - 1, map2);
	feed_sample(s, &e, 300, "node", NULL, 0, u, 2);
	assert_int_equal(symb_state__counters(s)->jit_frames, 5);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	printf("%s", folded);
	/* the frame in no symbol stays unnamed */
	assert_non_null(
		strstr(folded, "node;[unknown];JS:^caller /app.js:9;JS:*hot /app.js:1 1\n"));
	assert_non_null(strstr(folded, "node;JS:^caller /app.js:9 1\n"));
	assert_non_null(strstr(folded, "node;JS:^caller /app.js:9;JS:*reused /app.js:20 1\n"));
	{
		const struct lpw_profile *p = symb_built_profile(b);
		bool jit = false;

		for (uint32_t i = 0; i < p->nmappings; i++)
			jit |= strcmp(p->mappings[i].path, "[jit]") == 0;
		assert_true(jit);
	}
	sum = summary_of(s, b, NULL);
	assert_non_null(
		strstr(sum, "JIT symbols     3 read from perf maps and jitdumps, 5 frames named"));
	free(sum);
	free(folded);
	symb_built_free(b);
	/* after exec the map is void: the same address is not named */
	lps_enc_exec(&e, &(struct lps_exec){2000, 300, S("node")});
	feed(s, &e);
	feed_maps(s, &e, 300, false, &anon, 1);
	feed_sample(s, &e, 300, "node", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->jit_frames, 5);
	symb_state__jit_stats(s, &js);
	assert_int_equal(js.lines, 3);
	lps_enc_free(&e);
	symb_state__free(s);
}

/*
 * A jitdump's code loads name frames too, beside a perf map of the same
 * process: the perf map's chunk at offset 0 leaves the jitdump's symbols,
 * exec forgets both.
 */
static void test_jitdump_frames(void **state)
{
	static const char name[] = "JS:*hot /app.js:1";
	struct lps_mapping anon = {0x7f0000000000ull,
				   0x7f0000010000ull,
				   0,
				   0,
				   0,
				   0,
				   LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
				   S("")};
	uint64_t u[2] = {0x7f0000001010ull, 0x7f0000002040ull};
	struct symb_state *s = state_new(true, false);
	unsigned char dump[40 + 56 + sizeof(name) + 0x100] = {0};
	uint32_t rec = 56 + sizeof(name) + 0x100, magic = 0x4A695444, hdr = 40;
	uint64_t addr = 0x7f0000001000ull, size = 0x100;
	struct symb_built *b;
	struct lps_enc e;
	char *folded;

	memcpy(dump, &magic, 4);
	memcpy(dump + 8, &hdr, 4);
	memcpy(dump + 44, &rec, 4); /* id 0: JIT_CODE_LOAD */
	memcpy(dump + 40 + 32, &addr, 8);
	memcpy(dump + 40 + 40, &size, 8);
	memcpy(dump + 40 + 56, name, sizeof(name));
	lps_enc_init_dynamic(&e);
	feed_maps(s, &e, 300, false, &anon, 1);
	/* the file in two chunks, the second inside the code load's name */
	lps_enc_jitdump(&e, &(struct lps_perfmap){1, 300, 0, {(const char *)dump, 100}});
	feed(s, &e);
	lps_enc_jitdump(&e, &(struct lps_perfmap){
				    1, 300, 100, {(const char *)dump + 100, sizeof(dump) - 100}});
	feed(s, &e);
	feed_perfmap(s, &e, 300, 0, "7f0000002000 100 JS:^caller /app.js:9\n");
	feed_sample(s, &e, 300, "node", NULL, 0, u, 2);
	assert_int_equal(symb_state__counters(s)->jit_frames, 2);
	b = symb_build(s, SYMB_KIND_CPU);
	assert_non_null(b);
	folded = folded_of(symb_built_profile(b));
	assert_string_equal(folded, "node;JS:^caller /app.js:9;JS:*hot /app.js:1 1\n");
	free(folded);
	symb_built_free(b);
	lps_enc_exec(&e, &(struct lps_exec){2000, 300, S("node")});
	feed(s, &e);
	feed_maps(s, &e, 300, false, &anon, 1);
	feed_sample(s, &e, 300, "node", NULL, 0, u, 1);
	assert_int_equal(symb_state__counters(s)->jit_frames, 2);
	lps_enc_free(&e);
	symb_state__free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_opts_size_checked),
		cmocka_unit_test(test_windows),
		cmocka_unit_test(test_windows_drop_the_dead),
		cmocka_unit_test(test_stream_to_profile),
		cmocka_unit_test(test_wrong_inode_not_symbolized),
		cmocka_unit_test(test_bad_records_counted),
		cmocka_unit_test(test_maps_append),
		cmocka_unit_test(test_mmap_fork),
		cmocka_unit_test(test_maps_limits),
		cmocka_unit_test(test_open_refuses_special_files),
		cmocka_unit_test(test_open_refuses_odd_paths),
		cmocka_unit_test(test_bad_offsets),
		cmocka_unit_test(test_summary_sanitized),
		cmocka_unit_test(test_offcpu_profile),
		cmocka_unit_test(test_offcpu_ignored),
		cmocka_unit_test(test_ksyms_unsorted_tail),
		cmocka_unit_test(test_unwind_follows_maps),
		cmocka_unit_test(test_unwind_obj_memo),
		cmocka_unit_test(test_vdso_unwinds),
		cmocka_unit_test(test_kernel_addresses_relative),
		cmocka_unit_test(test_finish),
		cmocka_unit_test(test_container_ids),
		cmocka_unit_test(test_labels),
		cmocka_unit_test(test_jit_frames),
		cmocka_unit_test(test_jitdump_frames),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
