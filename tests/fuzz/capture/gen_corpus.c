// SPDX-License-Identifier: MIT
/*
 * Writes the seed corpus of fuzz_capture with the collector's real writer
 * (collector/capture.c) and records made by the real encoders (lps_enc_*):
 * a small complete capture (meta, maps with build-ids, a kernel symbol
 * snapshot in two chunks, samples, exec, exit, loss, end) in four blocks,
 * zstd-compressed and not; the same cut inside a payload and inside a block
 * header; with a flipped payload byte; with a damaged block header; with a
 * hole of zeros; a capture of no records; and a header of another major
 * version. Each seed is read back with the reader and the complete ones
 * must give back every record, each decoding as its type.
 *
 * Built with the tests (capture_gen_corpus), not run by them. To rebuild
 * corpus/, from the top of the tree:
 *
 *   make -C build capture_gen_corpus &&
 *   build/tests/fuzz/capture/capture_gen_corpus tests/fuzz/capture/corpus
 *
 * The output is deterministic (fixed values; the header's creation time is
 * rewritten to a fixed one), so rerunning it leaves corpus/ unchanged
 * unless the writer, the encoders or zstd's output changed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capture.h"
#include "lowprof/capture.h"
#include "lowprof/clock.h"
#include "lowprof/schema.h"

#define S(lit)	     ((struct lps_str){lit, sizeof(lit) - 1})
#define CREATED_NS   1700000000123456789ull
#define MAX_RECORDS  64
#define NKSYMS_CHUNK 60

static const char *outdir;
static int failed;

/* The records of the complete capture, in order, and where its blocks end. */
static uint8_t *recs[MAX_RECORDS];
static uint32_t rec_len[MAX_RECORDS], rec_type[MAX_RECORDS], nrecs;
static uint32_t block_end[MAX_RECORDS]; /* a block ends after record block_end[i] - 1 */
static uint32_t nblock_ends;

struct file {
	uint8_t *buf;
	size_t len;
};

static void die(const char *what, int err)
{
	fprintf(stderr, "gen_corpus: %s: %s\n", what, strerror(err));
	exit(1);
}

/* Keeps the encoded record e (of type type) and resets e. */
static void keep(struct lps_enc *e, uint32_t type)
{
	long n = lps_enc_len(e);

	if (n <= 0)
		die("encoding", n ? (int)-n : EINVAL);
	if (nrecs == MAX_RECORDS)
		die("records", E2BIG);
	recs[nrecs] = malloc((size_t)n);
	if (!recs[nrecs])
		die("malloc", ENOMEM);
	memcpy(recs[nrecs], e->buf, (size_t)n);
	rec_len[nrecs] = (uint32_t)n;
	rec_type[nrecs++] = type;
	lps_enc_reset(e);
}

static void end_block(void)
{
	block_end[nblock_ends++] = nrecs;
}

static void put_frames(uint8_t *blob, uint64_t base, uint64_t step, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t v = htole64(base + i * step);

		memcpy(blob + (size_t)i * 8, &v, 8);
	}
}

static void make_meta_maps(struct lps_enc *e)
{
	static const uint32_t pids[] = {4242};
	static const uint8_t sha1[20] = {0x8e, 0x1f, 0x42, 0x0c, 0x5a, 0x33, 0x10,
					 0x77, 0x9b, 0xe4, 0x01, 0x2d, 0x6f, 0xc8,
					 0x55, 0x90, 0x3e, 0xa1, 0x07, 0xbb};
	static const uint8_t libc_id[20] = {0xc0, 0x47, 0x67, 0x2c, 0xae, 0x79, 0x64,
					    0x32, 0x4e, 0x45, 0x8f, 0x4c, 0x51, 0x8d,
					    0xd6, 0x56, 0x19, 0x3c, 0xc5, 0x28};
	const struct lps_mapping maps[3] = {
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
		 {(const char *)libc_id, sizeof(libc_id)}},
		{0x7ffd1d5f2000ull, 0x7ffd1d5f4000ull, 0, 0, 0, 0,
		 LPS_PROT_R | LPS_PROT_X | LPS_PROT_P, S("[vdso]"), S("")},
	};
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
			     .npids = 1,
			     .producer = S("lowprof-collector 0.1.0"),
			     .stack_bytes = 16384};

	lps_enc_meta(e, &m, pids, NULL);
	keep(e, LPS_META);
	lps_enc_maps_begin(e, 123456800000ull, 4242, false, 3);
	for (int i = 0; i < 3; i++)
		lps_enc_mapping(e, &maps[i]);
	keep(e, LPS_MAPS);
	end_block();
}

/* Two chunks of a kernel symbol snapshot: names alike, so the block compresses. */
static void make_ksyms(struct lps_enc *e)
{
	static const char *const mods[] = {"", "", "", "ext4", "nvme"};
	char names[2 * NKSYMS_CHUNK][48];

	for (uint32_t chunk = 0; chunk < 2; chunk++) {
		lps_enc_ksyms_begin(e, chunk, chunk == 1, NKSYMS_CHUNK);
		for (uint32_t i = 0; i < NKSYMS_CHUNK; i++) {
			uint32_t j = chunk * NKSYMS_CHUNK + i;
			const char *mod = mods[j % 5];
			struct lps_ksym k = {.addr = 0xffffffff81000000ull + j * 0x140,
					     .module = {mod, (uint32_t)strlen(mod)}};
			int n = snprintf(names[j], sizeof(names[j]), "%s_do_work_%u",
					 j % 3 ? "__x64_sys" : "ext4", j);

			k.name = (struct lps_str){names[j], (uint32_t)n};
			lps_enc_ksym(e, &k);
		}
		keep(e, LPS_KSYMS);
	}
	end_block();
}

static void make_samples(struct lps_enc *e)
{
	static uint8_t kst[LPS_MAX_FRAMES * 8], ust[LPS_MAX_FRAMES * 8], copy[256];
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
	struct lps_exec x = {.time_ns = 123457100000ull, .pid = 4244, .comm = S("sh")};
	struct lps_exit y = {.time_ns = 123457200000ull, .pid = 4244};

	put_frames(kst, 0xffffffff81000100ull, 0x40, LPS_MAX_FRAMES);
	put_frames(ust, 0x55d0c0a01234ull, 0x100, LPS_MAX_FRAMES);
	for (size_t i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)(i < 64 ? i * 13 : 0);
	lps_enc_sample(e, &s);
	keep(e, LPS_SAMPLE);
	s.time_ns += 10101010;
	s.tid = 4242;
	s.nkstack = 0;
	lps_enc_sample(e, &s);
	keep(e, LPS_SAMPLE);
	/* an off-CPU sample with a user stack copy */
	s.kind = LPS_KIND_OFFCPU;
	s.time_ns += 10101010;
	s.nkstack = 12;
	s.nustack = 0;
	s.blocked_ns = 20000000;
	s.weight = 20000000;
	s.stack_copy = copy;
	s.stack_copy_len = sizeof(copy);
	lps_enc_sample(e, &s);
	keep(e, LPS_SAMPLE);
	lps_enc_exec(e, &x);
	keep(e, LPS_EXEC);
	lps_enc_exit(e, &y);
	keep(e, LPS_EXIT);
	end_block();
}

static void make_end(struct lps_enc *e)
{
	struct lps_loss l = {.time_ns = 123458000000ull,
			     .bpf_samples = 3,
			     .bpf_ringbuf_full = 1,
			     .shm_dropped = 0,
			     .capture_dropped = 0};
	struct lps_end z = {.time_ns = 123459000000ull, .reason = S("duration")};

	lps_enc_loss(e, &l);
	keep(e, LPS_LOSS);
	lps_enc_end(e, &z);
	keep(e, LPS_END);
	end_block();
}

/* Writes records [0, n) with the collector's writer, a block per end_block, into f. */
static void write_capture(bool compress, uint32_t n, struct file *f)
{
	struct coll_capture_stats st;
	struct lpc_header h = {.major = LPC_VERSION_MAJOR,
			       .minor = LPC_VERSION_MINOR,
			       .created_real_ns = CREATED_NS};
	struct coll_capture *c;
	struct stat sb;
	uint32_t b = 0;
	int fd, err;

	fd = memfd_create("lowprof-gen-corpus", MFD_CLOEXEC);
	if (fd < 0)
		die("memfd_create", errno);
	err = coll_capture__new(fd, compress, &c);
	if (err)
		die("coll_capture__new", -err);
	for (uint32_t i = 0; i < n; i++) {
		if (coll_capture__write(c, recs[i], rec_len[i]))
			die("coll_capture__write", ENOSPC);
		if (b < nblock_ends && block_end[b] == i + 1) {
			/* as if the block's first record were a second old */
			coll_capture__tick(c, lp_clock_ns(CLOCK_MONOTONIC) + COLL_CAPTURE_AGE_NS);
			b++;
		}
	}
	err = coll_capture__finish(c);
	if (err)
		die("coll_capture__finish", -err);
	coll_capture__stats(c, &st);
	coll_capture__free(c);
	if (st.records != n || st.dropped_records)
		die("capture records", EIO);
	if (fstat(fd, &sb))
		die("fstat", errno);
	f->len = (size_t)sb.st_size;
	f->buf = malloc(f->len);
	if (!f->buf)
		die("malloc", ENOMEM);
	if (pread(fd, f->buf, f->len, 0) != (ssize_t)f->len)
		die("pread", EIO);
	close(fd);
	/* a fixed creation time: the corpus stays the same from run to run */
	lpc_header_encode(f->buf, &h);
}

/* The offset of block k of a whole capture, and its length. */
static size_t block_at(const struct file *f, uint32_t k, size_t *len)
{
	size_t off = LPC_HDR_SIZE;

	for (;;) {
		struct lpc_block b;

		if (off + LPC_BLOCK_HDR_SIZE > f->len || lpc_block_decode(f->buf + off, &b))
			die("block layout", EBADMSG);
		*len = LPC_BLOCK_HDR_SIZE + b.stored_len;
		if (b.seq == k)
			return off;
		off += *len;
	}
}

/*
 * Reads buf back: prints what the reader found; complete seeds must give
 * back all records (byte for byte, each decoding as its type).
 */
static void check(const char *name, const uint8_t *buf, size_t len, bool complete)
{
	struct lpc_reader *rd;
	struct lpc_stats st;
	const void *rec;
	uint32_t rlen, i = 0;
	int err;

	err = lpc_reader__open_mem(buf, len, &rd, NULL);
	if (err) {
		printf("%-22s %6zu bytes: open: %s\n", name, len, strerror(-err));
		if (complete)
			failed = 1;
		return;
	}
	while ((err = lpc_reader__next(rd, &rec, &rlen)) == 0) {
		struct lps_record r;

		if (complete && (i >= nrecs || rlen != rec_len[i] || memcmp(rec, recs[i], rlen) ||
				 lps_decode(rec, rlen, &r) || r.type != rec_type[i])) {
			fprintf(stderr, "gen_corpus: %s: record %u differs\n", name, i);
			failed = 1;
		}
		i++;
	}
	lpc_reader__stats(rd, &st);
	lpc_reader__free(rd);
	printf("%-22s %6zu bytes: %u records in %llu blocks (%llu zstd); bad %llu, lost %llu, "
	       "missing %llu, skipped %llu, truncated %d\n",
	       name, len, i, (unsigned long long)st.blocks, (unsigned long long)st.zstd_blocks,
	       (unsigned long long)st.bad_blocks, (unsigned long long)st.lost_records,
	       (unsigned long long)st.missing_blocks, (unsigned long long)st.skipped_bytes,
	       st.truncated);
	if (err != -ENODATA || (complete && (i != nrecs || st.bad_blocks || st.lost_records ||
					     st.skipped_bytes || st.truncated))) {
		fprintf(stderr, "gen_corpus: %s: not read back whole (%d)\n", name, err);
		failed = 1;
	}
}

static void emit(const char *name, const uint8_t *buf, size_t len, bool complete)
{
	char path[4096];
	FILE *f;

	check(name, buf, len, complete);
	snprintf(path, sizeof(path), "%s/%s", outdir, name);
	f = fopen(path, "wb");
	if (!f)
		die(path, errno);
	if (fwrite(buf, 1, len, f) != len || fclose(f))
		die(path, EIO);
}

int main(int argc, char **argv)
{
	struct file z, p, empty;
	struct lpc_header h;
	struct lps_enc e;
	size_t off, len;
	uint8_t *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: %s OUTDIR\n", argv[0]);
		return 2;
	}
	outdir = argv[1];
	lps_enc_init_dynamic(&e);
	make_meta_maps(&e);
	make_ksyms(&e);
	make_samples(&e);
	make_end(&e);
	lps_enc_free(&e);

	write_capture(true, nrecs, &z);
	write_capture(false, nrecs, &p);
	write_capture(true, 0, &empty);
	emit("complete_zstd", z.buf, z.len, true);
	emit("complete_plain", p.buf, p.len, true);
	emit("empty", empty.buf, empty.len, false);

	/* cut inside the last block's payload, and inside its header */
	off = block_at(&z, nblock_ends - 1, &len);
	emit("cut_payload", z.buf, off + LPC_BLOCK_HDR_SIZE + (len - LPC_BLOCK_HDR_SIZE) / 2,
	     false);
	off = block_at(&p, nblock_ends - 1, &len);
	emit("cut_block_header", p.buf, off + 10, false);

	/* a flipped byte in the payload of the (compressed) ksyms block */
	buf = malloc(z.len > p.len ? z.len : p.len);
	if (!buf)
		die("malloc", ENOMEM);
	memcpy(buf, z.buf, z.len);
	off = block_at(&z, 1, &len);
	buf[off + LPC_BLOCK_HDR_SIZE + len / 3] ^= 0x10;
	emit("flipped_payload", buf, z.len, false);

	/* a damaged block header: found again by the scan for the next one */
	memcpy(buf, p.buf, p.len);
	off = block_at(&p, 1, &len);
	buf[off + 12] ^= 0x01;
	emit("damaged_block_header", buf, p.len, false);

	/* a hole of zeros where a block's write never happened */
	memcpy(buf, p.buf, p.len);
	off = block_at(&p, 2, &len);
	memset(buf + off, 0, len);
	emit("hole", buf, p.len, false);

	/* a capture format this reader does not read */
	memcpy(buf, p.buf, p.len);
	if (lpc_header_decode(buf, p.len, &h))
		die("header", EBADMSG);
	h.major = LPC_VERSION_MAJOR + 1;
	lpc_header_encode(buf, &h);
	emit("major_2", buf, LPC_HDR_SIZE, false);

	free(buf);
	free(z.buf);
	free(p.buf);
	free(empty.buf);
	for (uint32_t i = 0; i < nrecs; i++)
		free(recs[i]);
	return failed;
}
