// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_schema: one record of each type, made by the
 * real encoders (lps_enc_*), plus edge cases. Each seed is decoded again
 * before it is written, so a seed the decoder rejects is a failure here.
 *
 * Not part of the build. To rebuild corpus/, from this directory:
 *
 *   cc -std=gnu11 -Wall -Wextra -Werror -I../../../schema/include \
 *      gen_corpus.c ../../../schema/src/encode.c ../../../schema/src/decode.c \
 *      -lmsgpackc -o /tmp/lowprof-gen-corpus && /tmp/lowprof-gen-corpus corpus
 *
 * The output is deterministic (fixed values, no clocks), so rerunning it
 * leaves corpus/ unchanged unless the encoders changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/schema.h"

#define S(lit) ((struct lps_str){lit, sizeof(lit) - 1})

static const char *outdir;
static int failed;

/* Checks that the record decodes as type, writes it to outdir/name, resets e. */
static void emit(struct lps_enc *e, const char *name, uint32_t type)
{
	long n = lps_enc_len(e);
	struct lps_record r;
	char path[4096];
	FILE *f;
	int err;

	if (n <= 0) {
		fprintf(stderr, "gen_corpus: %s: encoding failed: %s\n", name, strerror((int)-n));
		failed = 1;
		goto out;
	}
	err = lps_decode(e->buf, (size_t)n, &r);
	if (err || r.type != type) {
		fprintf(stderr, "gen_corpus: %s: does not decode: %d (type %u)\n", name, err,
			r.type);
		failed = 1;
		goto out;
	}
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		failed = 1;
		goto out;
	}
	if (fwrite(e->buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "gen_corpus: %s: short write\n", path);
		failed = 1;
	}
	if (fclose(f)) {
		fprintf(stderr, "gen_corpus: %s: %s\n", path, strerror(errno));
		failed = 1;
	}
out:
	lps_enc_reset(e);
}

static void put_frames(uint8_t *blob, uint64_t base, uint64_t step, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = htole64(base + i * step);

		memcpy(blob + (size_t)i * 8, &v, 8);
	}
}

static void gen_meta(struct lps_enc *e)
{
	static const uint32_t pids[] = {1, 4242, 70000, 4194304};
	struct lps_meta m = {.hostname = S("buildhost"),
			     .kernel_release = S("6.1.0-18-amd64"),
			     .clock = S("CLOCK_MONOTONIC"),
			     .start_mono_ns = 123456789000ull,
			     .start_real_ns = 1700000000123456789ull,
			     .freq_hz = 99,
			     .ncpus_online = 8,
			     .drain_ms = 100,
			     .bpf_ring_bytes = 8u << 20,
			     .shm_ring_bytes = 16u << 20,
			     .npids = 4,
			     .producer = S("lowprof-collector 0.1.0")};

	lps_enc_meta(e, &m, pids, NULL);
	emit(e, "meta_pids", LPS_META);

	/* 1.2: off-CPU settings and the BPF memory in use */
	m.npids = 0;
	m.stack_bytes = 16384;
	m.off_cpu = true;
	m.off_cpu_mode = S("time");
	m.off_cpu_rate = 1;
	m.off_cpu_min_ns = 0;
	m.off_cpu_period_ns = 10000000;
	m.bpf_mem_bytes = 9u << 20;
	lps_enc_meta(e, &m, pids, NULL);
	emit(e, "meta_offcpu", LPS_META);

	/* 1.4: kernel addresses relative to _text, the collector's fallbacks */
	{
		const struct lps_str fb[] = {S("no-task-btf"), S("no-task-storage"),
					     S("no-procmap-query")};

		m.kernel_base = S("_text");
		m.nfallbacks = 3;
		lps_enc_meta(e, &m, pids, fb);
		emit(e, "meta_fallbacks", LPS_META);
	}
}

static void gen_samples(struct lps_enc *e)
{
	static uint8_t kst[LPS_MAX_FRAMES * 8], ust[LPS_MAX_FRAMES * 8];
	struct lps_sample s = {.kind = LPS_KIND_CPU,
			       .time_ns = 123456999000ull,
			       .pid = 4242,
			       .tid = 4243,
			       .cpu = 3,
			       .comm = S("worker"),
			       .weight = 10101010,
			       .ip = 0x55d0c0a01234ull,
			       .sp = 0x7ffd1d50f000ull,
			       .bp = 0x7ffd1d50f040ull,
			       .kstack = kst,
			       .nkstack = 6,
			       .ustack = ust,
			       .nustack = 9};

	put_frames(kst, 0xffffffff81000100ull, 0x40, LPS_MAX_FRAMES);
	put_frames(ust, 0x55d0c0a01234ull, 0x100, LPS_MAX_FRAMES);
	lps_enc_sample(e, &s);
	emit(e, "sample_stacks", LPS_SAMPLE);

	/* edge: a kernel thread, no user registers, no frames at all */
	s.nkstack = s.nustack = 0;
	s.ip = s.sp = s.bp = 0;
	s.comm = S("kworker/0:1");
	lps_enc_sample(e, &s);
	emit(e, "sample_0frames", LPS_SAMPLE);

	/* edge: the deepest stacks the decoder accepts, a full-length comm */
	s.nkstack = s.nustack = LPS_MAX_FRAMES;
	s.comm = S("0123456789abcdef");
	lps_enc_sample(e, &s);
	emit(e, "sample_max_frames", LPS_SAMPLE);

	/* 1.2: an off-CPU sample with a user stack copy */
	static uint8_t copy[512];

	for (size_t i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)(i * 13);
	s.kind = LPS_KIND_OFFCPU;
	s.comm = S("worker");
	s.nkstack = 12;
	s.nustack = 0;
	s.ip = 0x7fe51677a2f1ull;
	s.sp = 0x7ffd1d50f000ull;
	s.bp = 0;
	s.weight = 200000000;
	s.blocked_ns = 20000000;
	s.stack_copy = copy;
	s.stack_copy_len = sizeof(copy);
	lps_enc_sample(e, &s);
	emit(e, "sample_offcpu", LPS_SAMPLE);
}

static void gen_maps(struct lps_enc *e)
{
	/* 1.3 build-ids: a SHA-1 one (20 bytes), the longest accepted (64) */
	static const uint8_t sha1[20] = {0x8e, 0x1f, 0x42, 0x0c, 0x5a, 0x33, 0x10,
					 0x77, 0x9b, 0xe4, 0x01, 0x2d, 0x6f, 0xc8,
					 0x55, 0x90, 0x3e, 0xa1, 0x07, 0xbb};
	static uint8_t max[LPS_MAX_BUILD_ID];
	static const struct lps_mapping maps[3] = {
		{0x55d0c0a00000ull,
		 0x55d0c0a42000ull,
		 0x1000,
		 254,
		 0,
		 247134,
		 LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
		 S("/usr/bin/worker"),
		 {(const char *)sha1, sizeof(sha1)}},
		{0x7fe51676f000ull,
		 0x7fe5168c5000ull,
		 0x26000,
		 254,
		 0,
		 332835,
		 LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
		 S("/usr/lib/x86_64-linux-gnu/libc.so.6"),
		 {(const char *)max, sizeof(max)}},
		{0x7ffd1d5f2000ull, 0x7ffd1d5f4000ull, 0, 0, 0, 0,
		 LPS_PROT_R | LPS_PROT_X | LPS_PROT_P, S("[vdso]"), S("")},
	};

	for (size_t i = 0; i < sizeof(max); i++)
		max[i] = (uint8_t)(i * 37 + 1);

	lps_enc_maps_begin(e, 123456800000ull, 4242, false, 3);
	for (int i = 0; i < 3; i++)
		lps_enc_mapping(e, &maps[i]);
	emit(e, "maps_3", LPS_MAPS);

	/* edge: a process without executable mappings (or already gone) */
	lps_enc_maps_begin(e, 123456800001ull, 4243, false, 0);
	emit(e, "maps_0", LPS_MAPS);
}

static void gen_small(struct lps_enc *e)
{
	struct lps_exec x = {.time_ns = 123456900000ull, .pid = 4244, .comm = S("sh")};
	struct lps_exit y = {.time_ns = 123457000000ull, .pid = 4244};
	struct lps_loss l = {.time_ns = 123458000000ull,
			     .bpf_samples = 100000,
			     .bpf_ringbuf_full = 12,
			     .bpf_stack_errors = 3,
			     .shm_dropped = 5,
			     .shm_dropped_bytes = 5 * 1200,
			     .maps_errors = 1,
			     .bad_consumer_pos = 0,
			     .bpf_task_lost = 2,
			     .off_cpu_switches = 5000,
			     .off_cpu_sampled = 500,
			     .off_cpu_short = 20,
			     .off_cpu_lost = 1,
			     .capture_dropped = 7,
			     .capture_dropped_bytes = 7 * 1100};
	struct lps_end z = {.time_ns = 123459000000ull, .reason = S("duration")};

	lps_enc_exec(e, &x);
	emit(e, "exec", LPS_EXEC);
	lps_enc_exit(e, &y);
	emit(e, "exit", LPS_EXIT);
	lps_enc_loss(e, &l);
	emit(e, "loss", LPS_LOSS);
	lps_enc_end(e, &z);
	emit(e, "end", LPS_END);
	lps_enc_buildid(e,
			&(struct lps_buildid){.time_ns = 123459500000ull,
					      .dev_major = 259,
					      .dev_minor = 1,
					      .inode = 1835009,
					      .build_id = S("\x8d\x3f\x1a\x00\x77\x21\x5e\x99\x10"
							    "\x02\xab\xcd\xef\x01\x23\x45"
							    "\x67\x89\x9a\xbc"),
					      .source = S("symbolizer")});
	emit(e, "buildid", LPS_BUILDID);
	lps_enc_cgroup(e, &(struct lps_cgroup){
				  .time_ns = 123459600000ull,
				  .id = 4242,
				  .path = S("/system.slice/docker-0123456789abcdef0123"
					    "456789abcdef0123456789abcdef0123456789abcdef.scope")});
	emit(e, "cgroup", LPS_CGROUP);
	lps_enc_proc(e, &(struct lps_proc){.time_ns = 123459600000ull,
					   .pid = 4321,
					   .exe = S("/usr/bin/python3.11")});
	emit(e, "proc", LPS_PROC);
	lps_enc_perfmap(e,
			&(struct lps_perfmap){
				.time_ns = 123459700000ull,
				.pid = 4321,
				.offset = 4096,
				.data = S("7f3a1c004040 1a8 JS:*hotLeaf /srv/app.js:3:17\n"
					  "7f3a1c004200 60 Builtin:ArgumentsAdaptorTrampoline\n")});
	emit(e, "perfmap", LPS_PERFMAP);
	/* an ELF header's worth: the decoder checks only the length */
	lps_enc_vdso(e, &(struct lps_vdso){.time_ns = 123459700000ull,
					   .image = S("\x7f"
						      "ELF\x02\x01\x01\x00\x00\x00\x00\x00"
						      "\x00\x00\x00\x00\x03\x00\x3e\x00")});
	emit(e, "vdso", LPS_VDSO);
	lps_enc_mmap(e,
		     &(struct lps_mmap){.time_ns = 123459700000ull,
					.pid = 4321,
					.map = {.start = 0x7f1234560000ull,
						.end = 0x7f1234580000ull,
						.offset = 0x2000,
						.dev_major = 259,
						.dev_minor = 1,
						.inode = 1835010,
						.prot = LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
						.path = S("/usr/lib/x86_64-linux-gnu/libm.so.6")}});
	emit(e, "mmap", LPS_MMAP);
	lps_enc_fork(e, &(struct lps_fork){.time_ns = 123459700001ull, .pid = 4322, .ppid = 4321});
	emit(e, "fork", LPS_FORK);
}

static void gen_ksyms(struct lps_enc *e)
{
	static const struct lps_ksym k[2] = {
		{0xffffffff81000000ull, S("_stext"), S("")},
		{0xffffffffc0a01000ull, S("ext4_fill_super"), S("ext4")},
	};

	lps_enc_ksyms_begin(e, 0, true, 2);
	lps_enc_ksym(e, &k[0]);
	lps_enc_ksym(e, &k[1]);
	emit(e, "ksyms_2", LPS_KSYMS);
}

int main(int argc, char **argv)
{
	struct lps_enc e;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	lps_enc_init_dynamic(&e);
	gen_meta(&e);
	gen_samples(&e);
	gen_maps(&e);
	gen_small(&e);
	gen_ksyms(&e);
	lps_enc_free(&e);
	return failed;
}
