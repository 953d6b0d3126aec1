// SPDX-License-Identifier: MIT
/* Round trips of every record type, version rules, and malformed input. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lowprof/schema.h"

#define S(lit) ((struct lps_str){lit, sizeof(lit) - 1})

static int str_eq(struct lps_str s, const char *lit)
{
	return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

static uint8_t buf[65536];

static long enc_sample(struct lps_sample *s, uint8_t *kst, uint8_t *ust)
{
	struct lps_enc e;

	for (int i = 0; i < 5; i++) {
		uint64_t v = htole64(0xffffffff81000000ull + i);

		memcpy(kst + i * 8, &v, 8);
		v = htole64(0x400000ull + i * 16);
		memcpy(ust + i * 8, &v, 8);
	}
	*s = (struct lps_sample){.kind = LPS_KIND_CPU,
				 .time_ns = 123456789012ull,
				 .pid = 42,
				 .tid = 43,
				 .cpu = 1,
				 .comm = S("busy"),
				 .weight = 10101010,
				 .ip = 0x401000,
				 .sp = 0x7ffd0000,
				 .bp = 0x7ffd0040,
				 .kstack = kst,
				 .nkstack = 5,
				 .ustack = ust,
				 .nustack = 3};
	lps_enc_init_fixed(&e, buf, sizeof(buf));
	lps_enc_sample(&e, s);
	return lps_enc_len(&e);
}

static void test_sample_round_trip(void **state)
{
	uint8_t kst[40], ust[40];
	struct lps_sample s;
	struct lps_record r;
	long n = enc_sample(&s, kst, ust);

	assert_true(n > 0);
	assert_int_equal(lps_decode(buf, n, &r), 0);
	assert_int_equal(r.type, LPS_SAMPLE);
	assert_int_equal(r.sample.pid, 42);
	assert_int_equal(r.sample.tid, 43);
	assert_int_equal(r.sample.cpu, 1);
	assert_true(r.sample.time_ns == 123456789012ull);
	assert_true(r.sample.weight == 10101010);
	assert_true(str_eq(r.sample.comm, "busy"));
	assert_true(r.sample.ip == 0x401000 && r.sample.sp == 0x7ffd0000 &&
		    r.sample.bp == 0x7ffd0040);
	assert_int_equal(r.sample.nkstack, 5);
	assert_int_equal(r.sample.nustack, 3);
	assert_true(lps_frame(r.sample.kstack, 4) == 0xffffffff81000004ull);
	assert_true(lps_frame(r.sample.ustack, 2) == 0x400020ull);
}

/* a shard's skip: the pid of a sample without its stacks; other records are not samples */
static void test_peek_sample_pid(void **state)
{
	uint8_t kst[40], ust[40];
	struct lps_sample s;
	uint32_t pid = 0;
	long n = enc_sample(&s, kst, ust);
	/* an exit record: [LPS_EXIT, time, pid] */
	static const uint8_t exit_rec[] = {0x93, LPS_EXIT, 0x01, 0x2a};

	assert_true(n > 0);
	assert_int_equal(lps_peek_sample_pid(buf, n, &pid), 0);
	assert_int_equal(pid, 42);
	/* a record cut short gives its pid or an error, never another pid */
	for (long i = 0; i < n; i++) {
		int err = lps_peek_sample_pid(buf, i, &pid);

		assert_true(err == -EBADMSG || (err == 0 && pid == 42));
	}
	assert_int_equal(lps_peek_sample_pid(buf, 1, &pid), -EBADMSG);
	assert_int_equal(lps_peek_sample_pid(exit_rec, sizeof(exit_rec), &pid), -ENOENT);
	assert_int_equal(lps_peek_sample_pid(NULL, 0, &pid), -EBADMSG);
}

/* 1.1: the user stack copy; 1.0 samples (13 fields) still decode, without one */
static void test_sample_stack_copy(void **state)
{
	static uint8_t big[LPS_MAX_STACK_COPY + 1];
	static uint8_t out[LPS_MAX_STACK_COPY + 256];
	struct lps_sample s = {.comm = {"x", 1}, .ip = 0x401000, .sp = 0x7ffd0000};
	struct lps_record r;
	struct lps_enc e;
	long n;

	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	s.stack_copy = big;
	s.stack_copy_len = 16384;
	lps_enc_init_fixed(&e, out, sizeof(out));
	lps_enc_sample(&e, &s);
	n = lps_enc_len(&e);
	assert_true(n > 16384);
	assert_int_equal(lps_decode(out, n, &r), 0);
	assert_int_equal(r.sample.stack_copy_len, 16384);
	assert_memory_equal(r.sample.stack_copy, big, 16384);
	assert_int_equal(r.sample.nustack, 0);
	/* one byte over the limit is malformed */
	s.stack_copy_len = LPS_MAX_STACK_COPY + 1;
	lps_enc_init_fixed(&e, out, sizeof(out));
	lps_enc_sample(&e, &s);
	assert_int_equal(lps_decode(out, lps_enc_len(&e), &r), -EBADMSG);
	/* a 1.0 sample: same record without the last field */
	uint8_t kst[40], ust[40];
	struct lps_sample old;

	n = enc_sample(&old, kst, ust);
	/* 16 fields (array16 header): ..., empty bin, blocked_ns 0, cgroup 0 */
	assert_true(n > 5 && buf[0] == 0xdc && buf[1] == 0 && buf[2] == 16);
	assert_true(buf[n - 1] == 0 && buf[n - 2] == 0 && buf[n - 3] == 0);
	assert_int_equal(buf[n - 4], 0xc4);
	/* 13 fields: a fixarray header, the last four bytes gone */
	memmove(buf + 1, buf + 3, (size_t)n - 3);
	n -= 2;
	buf[0] = 0x9d;
	assert_int_equal(lps_decode(buf, n - 4, &r), 0);
	assert_int_equal(r.sample.nustack, 3);
	assert_null(r.sample.stack_copy);
	assert_int_equal(r.sample.stack_copy_len, 0);
}

/* 1.2: off-CPU samples carry blocked_ns; 1.1 samples (14 fields) decode with 0 */
static void test_sample_offcpu(void **state)
{
	uint8_t kst[40], ust[40];
	struct lps_sample s;
	struct lps_record r;
	long n = enc_sample(&s, kst, ust);
	static const uint8_t copy[24] = {1, 2, 3};

	s.kind = LPS_KIND_OFFCPU;
	s.weight = 200000000; /* sampled at rate 0.1 */
	s.blocked_ns = 20000001;
	s.stack_copy = copy;
	s.stack_copy_len = sizeof(copy);
	s.nustack = 0;
	{
		struct lps_enc e;

		lps_enc_init_fixed(&e, buf, sizeof(buf));
		lps_enc_sample(&e, &s);
		n = lps_enc_len(&e);
	}
	assert_true(n > 0);
	assert_int_equal(lps_decode(buf, n, &r), 0);
	assert_int_equal(r.sample.kind, LPS_KIND_OFFCPU);
	assert_true(r.sample.weight == 200000000);
	assert_true(r.sample.blocked_ns == 20000001);
	assert_int_equal(r.sample.nkstack, 5);
	assert_int_equal(r.sample.stack_copy_len, sizeof(copy));
	assert_memory_equal(r.sample.stack_copy, copy, sizeof(copy));
	/* since 1.5: 16 fields, the cgroup id last */
	assert_int_equal(buf[0], 0xdc);
	assert_int_equal(buf[2], 16);
	assert_int_equal(buf[n - 1], 0);
	s.cgroup_id = 0x1234;
	{
		struct lps_enc e;

		lps_enc_init_fixed(&e, buf, sizeof(buf));
		lps_enc_sample(&e, &s);
		assert_int_equal(lps_decode(buf, lps_enc_len(&e), &r), 0);
		assert_true(r.sample.cgroup_id == 0x1234);
		assert_true(r.sample.blocked_ns == 20000001);
	}
	s.cgroup_id = 0;
	{
		struct lps_enc e;

		lps_enc_init_fixed(&e, buf, sizeof(buf));
		lps_enc_sample(&e, &s);
	}
	/* a 1.2-1.4 sample: 15 fields (fixarray), cgroup dropped */
	memmove(buf + 1, buf + 3, (size_t)n - 3);
	n -= 2;
	buf[0] = 0x9f;
	n -= 1;
	assert_int_equal(lps_decode(buf, n, &r), 0);
	assert_true(r.sample.cgroup_id == 0);
	assert_true(r.sample.blocked_ns == 20000001);
	/* the same as a 1.1 sample: 14 fields, blocked_ns (uint32: 5 bytes) dropped */
	assert_int_equal(buf[n - 5], 0xce);
	buf[0] = 0x9e;
	assert_int_equal(lps_decode(buf, n - 5, &r), 0);
	assert_int_equal(r.sample.kind, LPS_KIND_OFFCPU);
	assert_true(r.sample.blocked_ns == 0);
	assert_int_equal(r.sample.stack_copy_len, sizeof(copy));
	/* a newer sample with one more field than 1.5's still decodes */
	buf[0] = 0xdc;
	memmove(buf + 3, buf + 1, (size_t)n - 1);
	buf[1] = 0;
	buf[2] = 17;
	buf[n + 2] = 0x07; /* cgroup */
	buf[n + 3] = 0x08; /* unknown */
	assert_int_equal(lps_decode(buf, (size_t)n + 4, &r), 0);
	assert_true(r.sample.blocked_ns == 20000001);
	assert_true(r.sample.cgroup_id == 7);
}

static void test_fixed_buffer_too_small(void **state)
{
	uint8_t small[16], kst[40], ust[40];
	struct lps_sample s;
	struct lps_enc e;

	enc_sample(&s, kst, ust);
	lps_enc_init_fixed(&e, small, sizeof(small));
	lps_enc_sample(&e, &s);
	assert_int_equal(lps_enc_len(&e), -ENOSPC);
}

static void test_meta_round_trip(void **state)
{
	uint32_t pids[] = {1, 70000, 4000000};
	struct lps_meta m = {.hostname = S("host"),
			     .kernel_release = S("6.1.0"),
			     .clock = S("CLOCK_MONOTONIC"),
			     .start_mono_ns = 5,
			     .start_real_ns = 1700000000000000000ull,
			     .freq_hz = 99,
			     .ncpus_online = 2,
			     .drain_ms = 100,
			     .bpf_ring_bytes = 1 << 20,
			     .shm_ring_bytes = 8 << 20,
			     .npids = 3,
			     .producer = S("test 1")};
	struct lps_record r;
	struct lps_enc e;
	uint32_t pid;

	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &m, pids, NULL);
	assert_true(lps_enc_len(&e) > 0);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_META);
	assert_int_equal(r.meta.major, LPS_VERSION_MAJOR);
	assert_true(str_eq(r.meta.hostname, "host"));
	assert_true(str_eq(r.meta.clock, "CLOCK_MONOTONIC"));
	assert_int_equal(r.meta.freq_hz, 99);
	assert_int_equal(r.meta.npids, 3);
	assert_int_equal(lps_meta_pid(&r.meta, 2, &pid), 0);
	assert_int_equal(pid, 4000000);
	assert_int_equal(lps_meta_pid(&r.meta, 3, &pid), -EBADMSG);
	assert_true(str_eq(r.meta.producer, "test 1"));
	/* the 1.2 fields default to zero */
	assert_int_equal(r.meta.minor, LPS_VERSION_MINOR);
	assert_false(r.meta.off_cpu);
	assert_int_equal(r.meta.off_cpu_mode.len, 0);

	m.stack_bytes = 16384;
	m.off_cpu = true;
	m.off_cpu_mode = S("time");
	m.off_cpu_rate = 0.25;
	m.off_cpu_min_ns = 1000;
	m.off_cpu_period_ns = 10000000;
	m.bpf_mem_bytes = 123456789;
	lps_enc_reset(&e);
	lps_enc_meta(&e, &m, pids, NULL);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.meta.stack_bytes, 16384);
	assert_true(r.meta.off_cpu);
	assert_true(str_eq(r.meta.off_cpu_mode, "time"));
	assert_true(r.meta.off_cpu_rate == 0.25);
	assert_true(r.meta.off_cpu_min_ns == 1000);
	assert_true(r.meta.off_cpu_period_ns == 10000000);
	assert_true(r.meta.bpf_mem_bytes == 123456789);
	assert_int_equal(lps_meta_pid(&r.meta, 1, &pid), 0);
	assert_int_equal(pid, 70000);
	assert_int_equal(r.meta.kernel_base.len, 0);
	assert_int_equal(r.meta.nfallbacks, 0);

	/* 1.4: the kernel base and the fallbacks */
	{
		const struct lps_str fb[2] = {S("no-task-pt-regs"), S("no-task-btf")};
		struct lps_str got;

		m.kernel_base = S("_text");
		m.nfallbacks = 2;
		lps_enc_reset(&e);
		lps_enc_meta(&e, &m, pids, fb);
		assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
		assert_true(str_eq(r.meta.kernel_base, "_text"));
		assert_int_equal(r.meta.nfallbacks, 2);
		assert_int_equal(lps_meta_fallback(&r.meta, 1, &got), 0);
		assert_true(str_eq(got, "no-task-btf"));
		assert_int_equal(lps_meta_fallback(&r.meta, 0, &got), 0);
		assert_true(str_eq(got, "no-task-pt-regs"));
		assert_int_equal(lps_meta_fallback(&r.meta, 2, &got), -EBADMSG);
		assert_true(r.meta.bpf_mem_bytes == 123456789);
		/* a fallback name over LPS_MAX_FALLBACK_NAME is malformed */
		{
			const struct lps_str big[1] = {S("0123456789abcdef0123456789abcdef!")};

			m.nfallbacks = 1;
			lps_enc_reset(&e);
			lps_enc_meta(&e, &m, pids, big);
			assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
		}
		m.kernel_base = (struct lps_str){0};
		m.nfallbacks = 0;
	}

	/* a rate outside [0, 1] or not a number is malformed */
	m.off_cpu_rate = 1.5;
	lps_enc_reset(&e);
	lps_enc_meta(&e, &m, pids, NULL);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	m.off_cpu_rate = __builtin_nan("");
	lps_enc_reset(&e);
	lps_enc_meta(&e, &m, pids, NULL);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	lps_enc_free(&e);
}

/*
 * A 1.1 meta (16 fields, ending with the reserved nil) decodes with the 1.2
 * fields zero/empty: made from a 1.2 one whose new fields are all zero (15
 * bytes: 0, false, "", float64 0.0, 0, 0, 0), dropped.
 */
static void test_meta_1_1(void **state)
{
	struct lps_meta m = {.hostname = S("h"),
			     .kernel_release = S("6.1"),
			     .clock = S("CLOCK_MONOTONIC"),
			     .producer = S("old 0.1")};
	struct lps_record r;
	struct lps_enc e;

	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &m, NULL, NULL);
	assert_int_equal(e.buf[0], 0xdc);
	assert_int_equal(e.buf[2], 25);
	/* the 1.4 fields, empty: "" and [] */
	assert_true(e.buf[e.len - 2] == 0xa0 && e.buf[e.len - 1] == 0x90);
	assert_int_equal(e.buf[e.len - 18], 0xc0); /* the reserved nil */
	e.buf[2] = 16;
	assert_int_equal(lps_decode(e.buf, e.len - 17, &r), 0);
	assert_true(str_eq(r.meta.producer, "old 0.1"));
	assert_int_equal(r.meta.stack_bytes, 0);
	assert_false(r.meta.off_cpu);
	assert_null(r.meta.off_cpu_mode.ptr);
	assert_true(r.meta.off_cpu_rate == 0 && r.meta.bpf_mem_bytes == 0);
	lps_enc_free(&e);
}

static void test_maps_and_ksyms(void **state)
{
	struct lps_mapping in[3] = {
		{0x400000, 0x401000, 0, 8, 1, 1234, LPS_PROT_R | LPS_PROT_X, S("/bin/a")},
		{0x7f0000000000, 0x7f0000100000, 0x2000, 254, 3, 99, LPS_PROT_X, S("/lib/x.so")},
		{0x7fff0000, 0x7fff1000, 0, 0, 0, 0, LPS_PROT_R | LPS_PROT_X, S("[vdso]")},
	};
	struct lps_mapping out;
	struct lps_ksym k;
	struct lps_record r;
	struct lps_enc e;
	int i = 0;

	lps_enc_init_dynamic(&e);
	lps_enc_maps_begin(&e, 77, 1000, true, 3);
	for (int j = 0; j < 3; j++)
		lps_enc_mapping(&e, &in[j]);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_MAPS);
	assert_int_equal(r.maps.pid, 1000);
	assert_int_equal(r.maps.count, 3);
	assert_true(r.maps.append);
	while (lps_maps_next(&r.maps, &out) == 1) {
		assert_true(out.start == in[i].start && out.end == in[i].end);
		assert_true(out.offset == in[i].offset && out.inode == in[i].inode);
		assert_int_equal(out.dev_major, in[i].dev_major);
		assert_int_equal(out.prot, in[i].prot);
		assert_int_equal(out.path.len, in[i].path.len);
		i++;
	}
	assert_int_equal(i, 3);

	lps_enc_reset(&e);
	lps_enc_ksyms_begin(&e, 4, true, 2);
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffff81000000ull, S("_stext"), S("")});
	lps_enc_ksym(&e, &(struct lps_ksym){0xffffffffc0000000ull, S("ext4_foo"), S("ext4")});
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.ksyms.seq, 4);
	assert_true(r.ksyms.last);
	assert_int_equal(lps_ksyms_next(&r.ksyms, &k), 1);
	assert_true(str_eq(k.name, "_stext"));
	assert_int_equal(lps_ksyms_next(&r.ksyms, &k), 1);
	assert_true(str_eq(k.module, "ext4"));
	assert_int_equal(lps_ksyms_next(&r.ksyms, &k), 0);
	lps_enc_free(&e);
}

/* Encodes in[0..n) as one maps record into e (reset first). */
static void enc_maps(struct lps_enc *e, const struct lps_mapping *in, uint32_t n)
{
	lps_enc_reset(e);
	lps_enc_maps_begin(e, 77, 1000, false, n);
	for (uint32_t j = 0; j < n; j++)
		lps_enc_mapping(e, &in[j]);
}

/* 1.3: a mapping's build-id (raw bytes, 0..64) round-trips */
static void test_maps_build_id(void **state)
{
	static const uint8_t sha1[20] = {0x8e, 0x1f, 0x00, 0x42, 0xff, 0x10, 0x20,
					 0x30, 0x40, 0x50, 0x60, 0x70, 0x80, 0x90,
					 0xa0, 0xb0, 0xc0, 0xd0, 0xe0, 0x01};
	static uint8_t max[LPS_MAX_BUILD_ID];
	struct lps_mapping in[3] = {
		{0x400000,
		 0x401000,
		 0,
		 8,
		 1,
		 1234,
		 LPS_PROT_R | LPS_PROT_X,
		 S("/bin/a"),
		 {(const char *)sha1, sizeof(sha1)}},
		{0x7fff0000, 0x7fff1000, 0, 0, 0, 0, LPS_PROT_R | LPS_PROT_X, S("[vdso]")},
		{0x7f0000000000,
		 0x7f0000100000,
		 0x2000,
		 254,
		 3,
		 99,
		 LPS_PROT_X,
		 S("/lib/x.so"),
		 {(const char *)max, sizeof(max)}},
	};
	struct lps_mapping out;
	struct lps_record r;
	struct lps_enc e;

	for (size_t i = 0; i < sizeof(max); i++)
		max[i] = (uint8_t)(0xff - i);
	lps_enc_init_dynamic(&e);
	enc_maps(&e, in, 3);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.maps.count, 3);
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_true(str_eq(out.path, "/bin/a"));
	assert_int_equal(out.build_id.len, sizeof(sha1));
	assert_memory_equal(out.build_id.ptr, sha1, sizeof(sha1));
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_true(str_eq(out.path, "[vdso]"));
	assert_int_equal(out.build_id.len, 0);
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_true(out.inode == 99);
	assert_int_equal(out.build_id.len, LPS_MAX_BUILD_ID);
	assert_memory_equal(out.build_id.ptr, max, sizeof(max));
	assert_int_equal(lps_maps_next(&r.maps, &out), 0);

	/* one byte over the limit is malformed */
	in[2].build_id.len = LPS_MAX_BUILD_ID + 1;
	{
		static uint8_t over[LPS_MAX_BUILD_ID + 1];

		in[2].build_id.ptr = (const char *)over;
		enc_maps(&e, in, 3);
		assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	}
	/* a build-id must be a bin: a str in its place is malformed */
	enc_maps(&e, in, 1);
	assert_int_equal(e.buf[e.len - 22], 0xc4);
	e.buf[e.len - 22] = 0xd9;
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	lps_enc_free(&e);
}

/*
 * A 1.2 mapping (8 elements, no build-id) reads with an empty build-id; a
 * mapping of a later minor version (10 elements) reads with the extra
 * element ignored. Both made from a 1.3 record by editing the bytes.
 */
static void test_maps_versions(void **state)
{
	static const uint8_t id[4] = {0xde, 0xad, 0xbe, 0xef};
	struct lps_mapping in[2] = {
		{0x400000,
		 0x401000,
		 0,
		 8,
		 1,
		 1234,
		 LPS_PROT_R | LPS_PROT_X,
		 S("/bin/a"),
		 {(const char *)id, sizeof(id)}},
		{0x500000, 0x501000, 0x1000, 8, 1, 1235, LPS_PROT_X, S("/bin/b")},
	};
	struct lps_mapping out;
	struct lps_record r;
	struct lps_enc e;
	uint8_t old[256], newer[256];
	size_t n;

	lps_enc_init_dynamic(&e);
	/* one mapping: [3, time, pid, false, [[... 9 elements]]], build-id last */
	enc_maps(&e, in, 1);
	n = e.len;
	assert_true(n < sizeof(old) - 8);
	assert_int_equal(e.buf[n - 6], 0xc4); /* bin8 of 4 bytes */
	assert_int_equal(e.buf[n - 5], 4);

	/* 1.2: drop the bin, 8 elements */
	/* 0x95 3 77 (0xcd 1000) false (fixarray 1), then the mapping's header */
	memcpy(old, e.buf, n);
	assert_int_equal(old[7], 0x91);
	assert_int_equal(old[8], 0x99);
	old[8] = 0x98;
	assert_int_equal(lps_decode(old, n - 6, &r), 0);
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_true(str_eq(out.path, "/bin/a") && out.inode == 1234);
	assert_int_equal(out.build_id.len, 0);
	assert_null(out.build_id.ptr);
	assert_int_equal(lps_maps_next(&r.maps, &out), 0);

	/* later: 10 elements, the 10th a nested array [1, "x"], ignored */
	memcpy(newer, e.buf, n);
	newer[8] = 0x9a;
	memcpy(newer + n, "\x92\x01\xa1x", 4);
	assert_int_equal(lps_decode(newer, n + 4, &r), 0);
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_int_equal(out.build_id.len, sizeof(id));
	assert_memory_equal(out.build_id.ptr, id, sizeof(id));
	assert_int_equal(lps_maps_next(&r.maps, &out), 0);
	/* ... but a trailing element is still validated */
	assert_int_equal(lps_decode(newer, n + 3, &r), -EBADMSG);
	newer[n + 1] = 0xc1;
	assert_int_equal(lps_decode(newer, n + 4, &r), -EBADMSG);

	/* two mappings: each has its own build-id, the second none */
	enc_maps(&e, in, 2);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_int_equal(out.build_id.len, sizeof(id));
	assert_int_equal(lps_maps_next(&r.maps, &out), 1);
	assert_true(str_eq(out.path, "/bin/b"));
	assert_int_equal(out.build_id.len, 0);
	lps_enc_free(&e);
}

/*
 * A 1.4 loss record whose 1.4 counters are zero, turned into the 1.3 one an
 * older collector wrote: 16 fields, the two zeros (a byte each) dropped.
 */
static void loss_as_1_3(struct lps_enc *e)
{
	assert_int_equal(e->buf[0], 0xdc);
	assert_int_equal(e->buf[2], 19);
	assert_true(e->buf[e->len - 1] == 0 && e->buf[e->len - 2] == 0 && e->buf[e->len - 3] == 0);
	e->buf[2] = 16;
	e->len -= 3;
}

static void test_small_records(void **state)
{
	struct lps_loss l = {1, 2, 3, 4, 5, 6, 7, 8, 9};
	struct lps_record r;
	struct lps_enc e;

	lps_enc_init_fixed(&e, buf, sizeof(buf));
	lps_enc_loss(&e, &l);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.bpf_ringbuf_full == 3 && r.loss.bad_consumer_pos == 8 &&
		    r.loss.bpf_task_lost == 9);
	assert_true(r.loss.off_cpu_switches == 0 && r.loss.off_cpu_lost == 0);
	/* 1.2 off-CPU counters */
	l.off_cpu_switches = 1000000;
	l.off_cpu_sampled = 100000;
	l.off_cpu_short = 300;
	l.off_cpu_lost = 4;
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.off_cpu_switches == 1000000 && r.loss.off_cpu_sampled == 100000 &&
		    r.loss.off_cpu_short == 300 && r.loss.off_cpu_lost == 4);
	assert_true(r.loss.bpf_task_lost == 9);
	assert_true(r.loss.capture_dropped == 0 && r.loss.capture_dropped_bytes == 0);
	/* 1.3 capture counters */
	l.capture_dropped = 70000;
	l.capture_dropped_bytes = 5000000000ull;
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.capture_dropped == 70000 &&
		    r.loss.capture_dropped_bytes == 5000000000ull);
	assert_true(r.loss.off_cpu_lost == 4 && r.loss.bpf_task_lost == 9);
	assert_true(r.loss.kstacks_hidden == 0 && r.loss.ustack_fp_fallback == 0);
	/* 1.4 kernel stack and stack copy fallbacks */
	l.kstacks_hidden = 11;
	l.ustack_fp_fallback = 1ull << 40;
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.kstacks_hidden == 11 && r.loss.ustack_fp_fallback == 1ull << 40 &&
		    r.loss.capture_dropped == 70000);
	/* a 1.3 one reads them as 0 */
	l.kstacks_hidden = l.ustack_fp_fallback = 0;
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	loss_as_1_3(&e);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.capture_dropped_bytes == 5000000000ull && r.loss.kstacks_hidden == 0);
	/* a 1.2 loss record: 14 fields (capture_* uint32 + uint64: 5 + 9 bytes) */
	assert_int_equal(buf[0], 0xdc);
	assert_int_equal(buf[2], 16);
	assert_int_equal(buf[e.len - 14], 0xce);
	buf[2] = 14;
	assert_int_equal(lps_decode(buf, e.len - 14, &r), 0);
	assert_true(r.loss.off_cpu_lost == 4 && r.loss.off_cpu_short == 300);
	assert_true(r.loss.capture_dropped == 0 && r.loss.capture_dropped_bytes == 0);
	/* only one of the two: the group is absent, the extra field skipped */
	buf[2] = 15;
	assert_int_equal(lps_decode(buf, e.len - 9, &r), 0);
	assert_true(r.loss.off_cpu_lost == 4 && r.loss.capture_dropped == 0);
	/* a later one with a 17th field */
	buf[2] = 17;
	buf[e.len] = 0x2a;
	assert_int_equal(lps_decode(buf, e.len + 1, &r), 0);
	assert_true(r.loss.capture_dropped_bytes == 5000000000ull);
	/* a 1.1 loss record: 10 fields */
	l.off_cpu_switches = l.off_cpu_sampled = l.off_cpu_short = l.off_cpu_lost = 0;
	l.capture_dropped = l.capture_dropped_bytes = 0;
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	loss_as_1_3(&e);
	assert_int_equal(buf[0], 0xdc);
	buf[2] = 10;
	assert_int_equal(lps_decode(buf, e.len - 6, &r), 0);
	assert_true(r.loss.bpf_task_lost == 9 && r.loss.off_cpu_switches == 0);

	lps_enc_reset(&e);
	lps_enc_exec(&e, &(struct lps_exec){9, 10, S("sh")});
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_EXEC);
	assert_true(str_eq(r.exec.comm, "sh"));

	lps_enc_reset(&e);
	lps_enc_exit(&e, &(struct lps_exit){11, 12});
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_int_equal(r.exit.pid, 12);

	/* 1.6: mmap events and forks */
	lps_enc_reset(&e);
	lps_enc_mmap(&e, &(struct lps_mmap){.time_ns = 14,
					    .pid = 15,
					    .map = {.start = 0x7f0000001000ull,
						    .end = 0x7f0000005000ull,
						    .offset = 0x1000,
						    .dev_major = 8,
						    .dev_minor = 1,
						    .inode = 77,
						    .prot = LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
						    .path = S("/usr/lib/libc.so.6")}});
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_MMAP);
	assert_true(r.mmap.pid == 15 && r.mmap.map.start == 0x7f0000001000ull &&
		    r.mmap.map.end == 0x7f0000005000ull && r.mmap.map.inode == 77 &&
		    r.mmap.map.build_id.len == 0);
	assert_true(str_eq(r.mmap.map.path, "/usr/lib/libc.so.6"));
	assert_int_equal(lps_decode(buf, e.len - 1, &r), -EBADMSG);
	/* a mapping that ends before it starts */
	lps_enc_reset(&e);
	lps_enc_mmap(&e, &(struct lps_mmap){.pid = 15, .map = {.start = 2, .end = 1}});
	assert_int_equal(lps_decode(buf, e.len, &r), -EBADMSG);
	lps_enc_reset(&e);
	lps_enc_fork(&e, &(struct lps_fork){16, 17, 18});
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.type == LPS_FORK && r.fork.pid == 17 && r.fork.ppid == 18);
	assert_int_equal(lps_decode(buf, e.len - 1, &r), -EBADMSG);
	assert_string_equal(lps_type_name(LPS_FORK), "fork");
	/* 1.6 loss: the side-band's losses */
	l = (struct lps_loss){.bpf_task_lost = 9, .mmap_events_lost = 1234};
	lps_enc_reset(&e);
	lps_enc_loss(&e, &l);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(r.loss.mmap_events_lost == 1234 && r.loss.bpf_task_lost == 9);

	lps_enc_reset(&e);
	lps_enc_end(&e, &(struct lps_end){13, S("signal")});
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_true(str_eq(r.end.reason, "signal"));
	assert_string_equal(lps_type_name(LPS_END), "end");
	assert_string_equal(lps_type_name(999), "unknown");
}

/* 1.4's buildid record: round trip and bounds. */
static void test_buildid(void **state)
{
	uint8_t id[64];
	struct lps_buildid b = {.time_ns = 7,
				.dev_major = 259,
				.dev_minor = 3,
				.inode = 1ull << 40,
				.build_id = {(const char *)id, 20},
				.source = S("symbolizer")};
	struct lps_record r;
	struct lps_enc e;

	for (int i = 0; i < 64; i++)
		id[i] = (uint8_t)(i * 37);
	lps_enc_init_fixed(&e, buf, sizeof(buf));
	lps_enc_buildid(&e, &b);
	assert_int_equal(lps_decode(buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_BUILDID);
	assert_true(r.buildid.dev_major == 259 && r.buildid.dev_minor == 3 &&
		    r.buildid.inode == 1ull << 40 && r.buildid.time_ns == 7);
	assert_int_equal(r.buildid.build_id.len, 20);
	assert_memory_equal(r.buildid.build_id.ptr, id, 20);
	assert_true(str_eq(r.buildid.source, "symbolizer"));
	assert_string_equal(lps_type_name(LPS_BUILDID), "buildid");
	/* an empty build-id, one over 64 bytes, a source over 16 bytes: malformed */
	b.build_id.len = 0;
	lps_enc_reset(&e);
	lps_enc_buildid(&e, &b);
	assert_int_equal(lps_decode(buf, e.len, &r), -EBADMSG);
	{
		uint8_t big[65] = {1};

		b.build_id = (struct lps_str){(const char *)big, 65};
		lps_enc_reset(&e);
		lps_enc_buildid(&e, &b);
		assert_int_equal(lps_decode(buf, e.len, &r), -EBADMSG);
	}
	b.build_id = (struct lps_str){(const char *)id, 64};
	b.source = S("the symbolizer, 17");
	lps_enc_reset(&e);
	lps_enc_buildid(&e, &b);
	assert_int_equal(lps_decode(buf, e.len, &r), -EBADMSG);
	/* every truncation is malformed, never read past */
	b.source = S("symbolizer");
	lps_enc_reset(&e);
	lps_enc_buildid(&e, &b);
	for (size_t n = 0; n < e.len; n++)
		assert_int_equal(lps_decode(buf, n, &r), -EBADMSG);
}

/* 1.6's perfmap record: round trip and bounds. */
static void test_perfmap(void **state)
{
	static char big[LPS_MAX_PERFMAP_CHUNK + 1];
	struct lps_perfmap p = {.time_ns = 5,
				.pid = 4242,
				.offset = 1ull << 33,
				.data = S("7f0000001000 40 LazyCompile:*hot /x.js:1\n")};
	struct lps_record r;
	struct lps_enc e;

	lps_enc_init_dynamic(&e);
	lps_enc_perfmap(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_PERFMAP);
	assert_true(r.perfmap.time_ns == 5 && r.perfmap.pid == 4242 &&
		    r.perfmap.offset == 1ull << 33);
	assert_true(str_eq(r.perfmap.data, "7f0000001000 40 LazyCompile:*hot /x.js:1\n"));
	assert_string_equal(lps_type_name(LPS_PERFMAP), "perfmap");
	for (size_t n = 0; n < e.len; n++)
		assert_int_equal(lps_decode(e.buf, n, &r), -EBADMSG);
	/* a chunk of the largest size; one byte more, none, or an end past 2^64: malformed */
	memset(big, 'a', sizeof(big));
	p.data = (struct lps_str){big, LPS_MAX_PERFMAP_CHUNK};
	lps_enc_reset(&e);
	lps_enc_perfmap(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.perfmap.data.len, LPS_MAX_PERFMAP_CHUNK);
	p.data.len++;
	lps_enc_reset(&e);
	lps_enc_perfmap(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	p.data.len = 0;
	lps_enc_reset(&e);
	lps_enc_perfmap(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	p.data = S("x");
	p.offset = UINT64_MAX;
	lps_enc_reset(&e);
	lps_enc_perfmap(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	lps_enc_free(&e);
}

/* 1.6's jitdump record: a perfmap's fields under its own type, the same bounds. */
static void test_jitdump(void **state)
{
	struct lps_perfmap p = {.time_ns = 6, .pid = 77, .offset = 40, .data = S("JiTD")};
	struct lps_record r;
	struct lps_enc e;

	lps_enc_init_dynamic(&e);
	lps_enc_jitdump(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), 0);
	assert_int_equal(r.type, LPS_JITDUMP);
	assert_true(r.jitdump.time_ns == 6 && r.jitdump.pid == 77 && r.jitdump.offset == 40);
	assert_true(str_eq(r.jitdump.data, "JiTD"));
	assert_string_equal(lps_type_name(LPS_JITDUMP), "jitdump");
	for (size_t n = 0; n < e.len; n++)
		assert_int_equal(lps_decode(e.buf, n, &r), -EBADMSG);
	p.data.len = 0;
	lps_enc_reset(&e);
	lps_enc_jitdump(&e, &p);
	assert_int_equal(lps_decode(e.buf, e.len, &r), -EBADMSG);
	lps_enc_free(&e);
}

/* 1.6's vdso record: round trip and bounds. */
static void test_vdso(void **state)
{
	static uint8_t img[LPS_MAX_VDSO + 1], big[LPS_MAX_VDSO + 64];
	struct lps_vdso v = {.time_ns = 9, .image = {(const char *)img, 8192}};
	struct lps_record r;
	struct lps_enc e;

	for (size_t i = 0; i < sizeof(img); i++)
		img[i] = (uint8_t)(i * 31);
	lps_enc_init_fixed(&e, big, sizeof(big));
	lps_enc_vdso(&e, &v);
	assert_int_equal(lps_decode(big, e.len, &r), 0);
	assert_int_equal(r.type, LPS_VDSO);
	assert_true(r.vdso.time_ns == 9);
	assert_int_equal(r.vdso.image.len, 8192);
	assert_memory_equal(r.vdso.image.ptr, img, 8192);
	assert_string_equal(lps_type_name(LPS_VDSO), "vdso");
	/* every truncation is malformed, never read past */
	for (size_t n = 0; n < e.len; n += 97)
		assert_int_equal(lps_decode(big, n, &r), -EBADMSG);
	/* the largest image decodes; an empty one or one byte more is malformed */
	v.image.len = LPS_MAX_VDSO;
	lps_enc_reset(&e);
	lps_enc_vdso(&e, &v);
	assert_int_equal(lps_decode(big, e.len, &r), 0);
	v.image.len = LPS_MAX_VDSO + 1;
	lps_enc_reset(&e);
	lps_enc_vdso(&e, &v);
	assert_int_equal(lps_decode(big, e.len, &r), -EBADMSG);
	v.image.len = 0;
	lps_enc_reset(&e);
	lps_enc_vdso(&e, &v);
	assert_int_equal(lps_decode(big, e.len, &r), -EBADMSG);
}

/* A newer minor version appends fields; an unknown type is reported. */
static void test_version_rules(void **state)
{
	/* [5 (exit), 11, 12, "new field", [1,2]] */
	static const uint8_t newer[] = {0x95, 0x05, 0x0b, 0x0c, 0xa3, 'n', 'e', 'w', 0x92, 1, 2};
	static const uint8_t unknown[] = {0x92, 0x3f, 0x01};
	/* meta with major 2 */
	static const uint8_t major2[] = {0x9f, 0x01, 0x02, 0x00};
	struct lps_record r;

	assert_int_equal(lps_decode(newer, sizeof(newer), &r), 0);
	assert_int_equal(r.exit.pid, 12);
	assert_int_equal(lps_decode(unknown, sizeof(unknown), &r), -ENOTSUP);
	assert_int_equal(r.type, 0x3f);
	uint8_t m2[64] = {0};

	memcpy(m2, major2, sizeof(major2));
	assert_int_equal(lps_decode(m2, 4 + 15, &r), -EPROTO);
}

static void test_malformed(void **state)
{
	uint8_t kst[40], ust[40];
	struct lps_sample s;
	struct lps_record r;
	long n = enc_sample(&s, kst, ust);
	/* array32 claiming 4 billion elements */
	static const uint8_t huge[] = {0xdd, 0xff, 0xff, 0xff, 0xff, 0x02};
	/* sample whose kstack blob is not a multiple of 8 */
	uint8_t odd[256];

	/* every truncation of a valid record is rejected */
	for (long i = 0; i < n; i++)
		assert_int_equal(lps_decode(buf, i, &r), -EBADMSG);
	/* trailing garbage */
	buf[n] = 0xc0;
	assert_int_equal(lps_decode(buf, n + 1, &r), -EBADMSG);
	assert_int_equal(lps_decode(huge, sizeof(huge), &r), -EBADMSG);
	assert_int_equal(lps_decode(NULL, 0, &r), -EBADMSG);

	/* corrupt the kstack bin8 length: find the 0xc4 0x28 (40 bytes) tag */
	memcpy(odd, buf, n);
	for (long i = 0; i + 1 < n; i++) {
		if (odd[i] == 0xc4 && odd[i + 1] == 40) {
			odd[i + 1] = 39;
			break;
		}
	}
	assert_int_equal(lps_decode(odd, n - 1, &r), -EBADMSG);

	/* every single-byte corruption either decodes or errors, never crashes */
	for (long i = 0; i < n; i++) {
		for (int v = 0; v < 256; v += 17) {
			memcpy(odd, buf, n);
			odd[i] = (uint8_t)v;
			int err = lps_decode(odd, n, &r);

			assert_true(err == 0 || err == -EBADMSG || err == -ENOTSUP ||
				    err == -EPROTO);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_round_trip),
		cmocka_unit_test(test_sample_stack_copy),
		cmocka_unit_test(test_peek_sample_pid),
		cmocka_unit_test(test_sample_offcpu),
		cmocka_unit_test(test_fixed_buffer_too_small),
		cmocka_unit_test(test_meta_round_trip),
		cmocka_unit_test(test_meta_1_1),
		cmocka_unit_test(test_maps_and_ksyms),
		cmocka_unit_test(test_maps_build_id),
		cmocka_unit_test(test_maps_versions),
		cmocka_unit_test(test_small_records),
		cmocka_unit_test(test_buildid),
		cmocka_unit_test(test_perfmap),
		cmocka_unit_test(test_jitdump),
		cmocka_unit_test(test_vdso),
		cmocka_unit_test(test_version_rules),
		cmocka_unit_test(test_malformed),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
