// SPDX-License-Identifier: MIT
/*
 * The symbolizer's ingest and profile building on a synthetic record stream
 * that describes this very process: its own executable mapping (from
 * /proc/self/maps, with the real device and inode) and samples whose user
 * frames are addresses of functions in this file, so names resolve through
 * the real ELF path to known values.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowprof/schema.h"
#include "profile.h"
#include "symb_int.h"

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

static void feed(struct symb_state *s, struct lps_enc *e)
{
	assert_true(lps_enc_len(e) > 0);
	assert_int_equal(symb_state_feed(s, e->buf, e->len), 0);
	lps_enc_reset(e);
}

static void feed_sample(struct symb_state *s, struct lps_enc *e, uint32_t pid, const char *comm,
			const uint64_t *k, uint32_t nk, const uint64_t *u, uint32_t nu)
{
	uint64_t kle[8], ule[8];
	struct lps_sample smp = {.kind = LPS_KIND_CPU,
				 .time_ns = 1000,
				 .pid = pid,
				 .tid = pid,
				 .comm = {comm, (uint32_t)strlen(comm)},
				 .weight = 10000000,
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

static char *folded_of(const struct symb_profile *p)
{
	int fd = memfd_create("folded", 0);
	char *buf = calloc(1, 65536);

	assert_true(fd >= 0);
	assert_int_equal(symb_write_folded(p, fd), 0);
	assert_true(pread(fd, buf, 65535, 0) >= 0);
	close(fd);
	return buf;
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
	struct symb_state s;
	struct symb_built *b;
	const struct symb_profile *p;
	struct lps_enc e;
	char *folded;

	find_self();
	symb_state_init(&s);
	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &meta, NULL);
	feed(&s, &e);
	lps_enc_ksyms_begin(&e, 0, true, 2);
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000100ull, S("do_syscall_64"), S("")});
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000200ull, S("entry_SYSCALL_64"), S("")});
	feed(&s, &e);
	lps_enc_maps_begin(&e, 900, 100, 1);
	lps_enc_mapping(&e, &self_text);
	feed(&s, &e);

	/* 3 identical user-only samples, 1 with kernel frames, 1 of another comm */
	for (int i = 0; i < 3; i++)
		feed_sample(&s, &e, 100, "app", NULL, 0, u, 2);
	feed_sample(&s, &e, 100, "app", kstack, 2, u, 2);
	feed_sample(&s, &e, 100, "worker", NULL, 0, u, 1);
	/* a process with no maps: its frame is [unknown] */
	feed_sample(&s, &e, 200, "nomaps", NULL, 0, unknown, 1);

	assert_int_equal(s.n.samples, 6);
	assert_int_equal(s.naggs, 4);
	assert_int_equal(s.nseen, 2);
	assert_int_equal(s.n.bad_records, 0);

	b = symb_build(&s);
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
	symb_print_summary(&s, b, STDOUT_FILENO);
	symb_built_free(b);

	/* after exec the old mappings are void */
	lps_enc_exec(&e, &(struct lps_exec){2000, 100, S("app2")});
	feed(&s, &e);
	feed_sample(&s, &e, 100, "app2", NULL, 0, u, 1);
	assert_true(s.n.unmapped_frames >= 2);
	lps_enc_free(&e);
	symb_state_free(&s);
}

/* A file whose inode does not match the mapping is never used for names. */
static void test_wrong_inode_not_symbolized(void **state)
{
	uint64_t u[1] = {(uint64_t)(uintptr_t)&symb_test_leaf + 1};
	struct lps_mapping m;
	struct symb_state s;
	struct symb_built *b;
	struct lps_enc e;
	char *folded, want[128];

	find_self();
	m = self_text;
	m.inode += 1;
	symb_state_init(&s);
	lps_enc_init_dynamic(&e);
	lps_enc_maps_begin(&e, 1, 7, 1);
	lps_enc_mapping(&e, &m);
	feed(&s, &e);
	feed_sample(&s, &e, 7, "x", NULL, 0, u, 1);
	b = symb_build(&s);
	folded = folded_of(symb_built_profile(b));
	snprintf(want, sizeof(want), "x;%s+0x%llx 1\n", strrchr(self_path, '/') + 1,
		 (unsigned long long)(u[0] - m.start + m.offset));
	assert_string_equal(folded, want);
	free(folded);
	symb_built_free(b);
	lps_enc_free(&e);
	symb_state_free(&s);
}

static void test_bad_records_counted(void **state)
{
	static const uint8_t garbage[] = {0x93, 0x02, 0xff, 0x00};
	static const uint8_t newer_type[] = {0x92, 0x3f, 0x00};
	static const uint8_t major2[] = {0x9f, 0x01, 0x02, 0x00, 0xa0, 0xa0, 0xa0, 0,
					 0,    0,    0,	   0,	 0,    0,    0x90, 0xa0};
	struct symb_state s;

	symb_state_init(&s);
	assert_int_equal(symb_state_feed(&s, garbage, sizeof(garbage)), 0);
	assert_int_equal(symb_state_feed(&s, newer_type, sizeof(newer_type)), 0);
	assert_int_equal(s.n.bad_records, 1);
	assert_int_equal(s.n.unknown_records, 1);
	assert_int_equal(symb_state_feed(&s, major2, sizeof(major2)), -EPROTO);
	symb_state_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stream_to_profile),
		cmocka_unit_test(test_wrong_inode_not_symbolized),
		cmocka_unit_test(test_bad_records_counted),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
