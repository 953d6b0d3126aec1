// SPDX-License-Identifier: MIT
/*
 * Capture files end to end: the collector's writer (collector/capture.c)
 * makes them, the schema's reader (schema/src/capture.c) reads them back.
 * Round trips of records of every size, compressed and not; files cut at
 * every kind of offset; flipped bytes, damaged block headers and holes;
 * the header's version rules; the warn callback; writers whose writes fail;
 * blocks made once (ksnap.h) put into several files among their records.
 *
 * Every read is done twice, with lpc_reader__open_mem and with
 * lpc_reader__open_fd on a memfd of the same bytes, and the two must agree
 * on every record and every counter. The block layout a test expects is
 * taken from the file itself (its block headers), never from the writer's
 * block size, so the writer may choose its blocks as it likes.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "capture.h"
#include "ksnap.h"
#include "lowprof/capture.h"
#include "lowprof/clock.h"
#include "lowprof/crc32c.h"
#include "lowprof/schema.h"

#define MAX_BLOCKS 256
#define KiB	   1024u
#define MiB	   (1024u * 1024u)

/* The records a test writes: their lengths and contents, in one buffer. */
struct recs {
	uint32_t n;
	uint32_t *len;
	size_t *off; /* of record i in data */
	uint8_t *data;
};

/* A capture file as written, and what its writer said. */
struct cap {
	uint8_t *buf;
	size_t len;
	struct coll_capture_stats st;
};

/* One block of a file, from its header. */
struct blk {
	size_t off, len; /* header and payload */
	uint32_t nrec;
	uint32_t first; /* index of its first record */
	bool zstd;
};

struct layout {
	uint32_t n;
	struct blk b[MAX_BLOCKS];
};

struct warns {
	unsigned n;
	char last[512];
};

/* What a reader gave back. */
struct readout {
	int err; /* of the open */
	struct lpc_header h;
	struct lpc_stats st;
	struct warns w;
};

#if defined(__x86_64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define NATIVE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* --pwrite: io_uring refused (as with kernel.io_uring_disabled), so the writer uses pwrite */
static bool no_uring;

static uint64_t splitmix(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int new_memfd(void)
{
	int fd = memfd_create("lowprof-test-capture", MFD_CLOEXEC);

	assert_true(fd >= 0);
	return fd;
}

/*
 * Record i's contents: random bytes (zstd cannot shrink them) in runs of 16
 * records, a pattern it shrinks well in between, so a compressing writer
 * makes both kinds of block. The index leads, so a record out of place is
 * plain in a failure message.
 */
static void fill(uint8_t *p, uint32_t len, uint32_t i)
{
	uint64_t s = (uint64_t)i * 0x1234567ull + 1, v = 0;
	bool random = !((i / 16) & 1);

	for (uint32_t j = 0; j < len; j++) {
		if (!random) {
			p[j] = (uint8_t)(i + j / 64);
			continue;
		}
		if (!(j % 8))
			v = splitmix(&s);
		p[j] = (uint8_t)(v >> (8 * (j % 8)));
	}
	memcpy(p, &i, len < 4 ? len : 4);
}

/*
 * Makes records until they hold at least total bytes: first the lengths in
 * first[], then lengths drawn from seed, most small, some up to maxlen.
 */
static void recs_make(struct recs *r, uint64_t seed, size_t total, uint32_t maxlen,
		      const uint32_t *first, uint32_t nfirst)
{
	uint32_t cap = 64;
	size_t sum = 0;

	memset(r, 0, sizeof(*r));
	r->len = malloc(cap * sizeof(*r->len));
	assert_non_null(r->len);
	while (sum < total || r->n < nfirst) {
		uint64_t x = splitmix(&seed);
		uint32_t len;

		if (r->n < nfirst) {
			len = first[r->n];
		} else {
			switch (x % 10) {
			case 0 ... 3:
				len = (uint32_t)(x >> 8) % 65;
				break;
			case 4 ... 6:
				len = (uint32_t)(x >> 8) % (8 * KiB + 1);
				break;
			case 7 ... 8:
				len = (uint32_t)(x >> 8) % (maxlen / 4 + 1);
				break;
			default:
				/* the largest: now and then exactly maxlen */
				len = maxlen - (uint32_t)(x >> 8) % (maxlen / 2) * ((x >> 40) & 1);
				break;
			}
		}
		if (r->n == cap) {
			cap *= 2;
			r->len = realloc(r->len, cap * sizeof(*r->len));
			assert_non_null(r->len);
		}
		r->len[r->n++] = len;
		sum += len;
	}
	r->off = malloc((r->n ? r->n : 1) * sizeof(*r->off));
	r->data = malloc(sum ? sum : 1);
	assert_non_null(r->off);
	assert_non_null(r->data);
	sum = 0;
	for (uint32_t i = 0; i < r->n; i++) {
		r->off[i] = sum;
		fill(r->data + sum, r->len[i], i);
		sum += r->len[i];
	}
}

static void recs_free(struct recs *r)
{
	free(r->len);
	free(r->off);
	free(r->data);
}

static const void *rec_data(const struct recs *r, uint32_t i)
{
	return r->data + r->off[i];
}

/* Reads all of fd into cap->buf. */
static void slurp(int fd, struct cap *cap)
{
	struct stat sb;
	size_t got = 0;

	assert_int_equal(fstat(fd, &sb), 0);
	cap->len = (size_t)sb.st_size;
	cap->buf = malloc(cap->len ? cap->len : 1);
	assert_non_null(cap->buf);
	while (got < cap->len) {
		ssize_t k = pread(fd, cap->buf + got, cap->len - got, (off_t)got);

		assert_true(k > 0);
		got += (size_t)k;
	}
}

/*
 * Waits until the file holds every block handed to the writer (or the
 * writer has failed), so its few slots are free again for the next block: a
 * test makes records faster than any disk takes them, and a block that
 * finds no free slot is dropped, by design. tick reaps the completions.
 */
static void settle(int fd, struct coll_capture *c)
{
	for (int i = 0; i < 50000; i++) {
		struct coll_capture_stats st;
		struct stat sb;

		coll_capture__stats(c, &st);
		assert_int_equal(fstat(fd, &sb), 0);
		if (st.err || (uint64_t)sb.st_size >= st.file_bytes)
			return;
		coll_capture__tick(c, lp_clock_ns(CLOCK_MONOTONIC));
		usleep(200);
	}
	fail_msg("capture: the writes did not reach the file in 10 s");
}

/* Finishes c (which must succeed) and reads its file fd into cap, closing both. */
static void end_capture(struct coll_capture *c, int fd, struct cap *cap)
{
	assert_int_equal(coll_capture__finish(c), 0);
	coll_capture__stats(c, &cap->st);
	coll_capture__free(c);
	slurp(fd, cap);
	close(fd);
}

/* Writes r[i] with __write, or (every other one, if reserve) with __reserve + __commit. */
static void put(struct coll_capture *c, const struct recs *r, uint32_t i, bool reserve)
{
	uint32_t max;
	void *p;

	if (!reserve || !(i & 1)) {
		assert_int_equal(coll_capture__write(c, rec_data(r, i), r->len[i]), 0);
		return;
	}
	/* a reservation larger than the record, as a sample's encoder makes */
	max = r->len[i] + (i % 3) * 100;
	if (max > LPS_MAX_RECORD)
		max = LPS_MAX_RECORD;
	p = coll_capture__reserve(c, max);
	assert_non_null(p);
	memcpy(p, rec_data(r, i), r->len[i]);
	coll_capture__commit(c, r->len[i]);
}

/* Writes every record of r into a new capture; all must be written. */
static void write_capture(const struct recs *r, bool compress, bool reserve, struct cap *cap)
{
	struct coll_capture *c;
	int fd = new_memfd();

	assert_int_equal(coll_capture__new(fd, compress, &c), 0);
	for (uint32_t i = 0; i < r->n; i++) {
		put(c, r, i, reserve);
		settle(fd, c);
	}
	end_capture(c, fd, cap);
	assert_int_equal(cap->st.err, 0);
	assert_int_equal(cap->st.dropped_records, 0);
	assert_int_equal(cap->st.dropped_bytes, 0);
	assert_int_equal(cap->st.records, r->n);
	assert_int_equal(cap->st.file_bytes, cap->len);
	if (no_uring)
		assert_false(cap->st.uring);
}

/* The blocks of a whole, undamaged file, checked against the format. */
static void layout_of(const struct cap *cap, struct layout *l)
{
	size_t off = LPC_HDR_SIZE;
	uint32_t rec = 0;

	l->n = 0;
	while (off < cap->len) {
		struct lpc_block h;
		struct blk *b = &l->b[l->n];

		assert_true(l->n < MAX_BLOCKS);
		assert_true(off + LPC_BLOCK_HDR_SIZE <= cap->len);
		assert_int_equal(lpc_block_decode(cap->buf + off, &h), 0);
		assert_int_equal(h.seq, l->n);
		assert_true(h.nrecords > 0);
		*b = (struct blk){.off = off,
				  .len = LPC_BLOCK_HDR_SIZE + h.stored_len,
				  .nrec = h.nrecords,
				  .first = rec,
				  .zstd = (h.flags & LPC_BLOCK_COMP_MASK) == LPC_COMP_ZSTD};
		rec += h.nrecords;
		off += b->len;
		l->n++;
	}
	assert_int_equal(off, cap->len);
	assert_int_equal(rec, cap->st.records);
	assert_int_equal(l->n, cap->st.blocks);
}

static void on_warn(void *ctx, const char *msg)
{
	struct warns *w = ctx;

	assert_non_null(msg);
	assert_true(msg[0] != '\0');
	assert_true(strlen(msg) < 256);
	w->n++;
	snprintf(w->last, sizeof(w->last), "%s", msg);
}

/*
 * Reads buf[0..len) with one reader and checks that it returns exactly the
 * records of r that want[] marks, in order and byte for byte, then -ENODATA.
 */
static void read_one(const uint8_t *buf, size_t len, bool via_fd, const struct recs *r,
		     const bool *want, unsigned max_msgs, struct readout *out)
{
	struct lpc_reader *rd = (struct lpc_reader *)&rd; /* not NULL: the open must set it */
	const void *rec;
	uint32_t rlen;
	int fd = -1;

	memset(out, 0, sizeof(*out));
	if (via_fd) {
		fd = new_memfd();
		for (size_t done = 0; done < len;) {
			ssize_t k = pwrite(fd, buf + done, len - done, (off_t)done);

			assert_true(k > 0);
			done += (size_t)k;
		}
		out->err = lpc_reader__open_fd(fd, &rd, &out->h);
	} else {
		out->err = lpc_reader__open_mem(buf, len, &rd, &out->h);
	}
	if (out->err) {
		assert_null(rd);
		goto out;
	}
	assert_non_null(rd);
	lpc_reader__set_warn(rd, on_warn, &out->w, max_msgs);
	for (uint32_t i = 0; i < r->n; i++) {
		int err;

		if (!want[i])
			continue;
		err = lpc_reader__next(rd, &rec, &rlen);
		if (err)
			fail_msg("%s: record %u: %d (%s)", via_fd ? "fd" : "mem", i, err,
				 strerror(-err));
		if (rlen != r->len[i] || memcmp(rec, rec_data(r, i), rlen)) {
			uint32_t got = UINT32_MAX;

			if (rlen >= 4)
				memcpy(&got, rec, 4);
			fail_msg("%s: record %u (%u bytes) differs: %u bytes, leading %u",
				 via_fd ? "fd" : "mem", i, r->len[i], rlen, got);
		}
		assert_true(lpc_reader__offset(rd) <= len);
	}
	assert_int_equal(lpc_reader__next(rd, &rec, &rlen), -ENODATA);
	assert_int_equal(lpc_reader__next(rd, &rec, &rlen), -ENODATA);
	assert_true(lpc_reader__offset(rd) <= len);
	lpc_reader__stats(rd, &out->st);
	lpc_reader__free(rd);
out:
	if (fd >= 0)
		close(fd);
}

static void assert_stats_equal(const struct lpc_stats *a, const struct lpc_stats *b)
{
	assert_int_equal(a->file_bytes, b->file_bytes);
	assert_int_equal(a->blocks, b->blocks);
	assert_int_equal(a->records, b->records);
	assert_int_equal(a->raw_bytes, b->raw_bytes);
	assert_int_equal(a->stored_bytes, b->stored_bytes);
	assert_int_equal(a->zstd_blocks, b->zstd_blocks);
	assert_int_equal(a->bad_blocks, b->bad_blocks);
	assert_int_equal(a->lost_records, b->lost_records);
	assert_int_equal(a->missing_blocks, b->missing_blocks);
	assert_int_equal(a->skipped_bytes, b->skipped_bytes);
	assert_int_equal(a->truncated, b->truncated);
	assert_int_equal(a->truncated_bytes, b->truncated_bytes);
}

/* read_one with open_mem and with open_fd, which must agree; *out is open_mem's. */
static void read_both(const uint8_t *buf, size_t len, const struct recs *r, const bool *want,
		      unsigned max_msgs, struct readout *out)
{
	struct readout fd;

	read_one(buf, len, false, r, want, max_msgs, out);
	read_one(buf, len, true, r, want, max_msgs, &fd);
	assert_int_equal(out->err, fd.err);
	assert_int_equal(out->h.major, fd.h.major);
	assert_int_equal(out->h.minor, fd.h.minor);
	assert_int_equal(out->h.hdr_size, fd.h.hdr_size);
	assert_int_equal(out->h.created_real_ns, fd.h.created_real_ns);
	if (out->err)
		return;
	assert_stats_equal(&out->st, &fd.st);
	assert_int_equal(out->w.n, fd.w.n);
	assert_string_equal(out->w.last, fd.w.last);
}

static bool *want_new(const struct recs *r, bool v)
{
	bool *w = malloc(r->n ? r->n : 1);

	assert_non_null(w);
	memset(w, v, r->n);
	return w;
}

static void want_range(bool *w, uint32_t from, uint32_t n, bool v)
{
	memset(w + from, v, n);
}

static uint32_t count_zstd(const struct layout *l)
{
	uint32_t n = 0;

	for (uint32_t k = 0; k < l->n; k++)
		n += l->b[k].zstd;
	return n;
}

/* No damage: every record, every block, nothing lost. */
static void assert_clean(const struct readout *o, const struct cap *cap, const struct layout *l)
{
	assert_int_equal(o->err, 0);
	assert_int_equal(o->st.file_bytes, cap->len);
	assert_int_equal(o->st.blocks, l->n);
	assert_int_equal(o->st.records, cap->st.records);
	assert_int_equal(o->st.raw_bytes, cap->st.record_bytes);
	assert_int_equal(o->st.stored_bytes, cap->len - LPC_HDR_SIZE - l->n * LPC_BLOCK_HDR_SIZE);
	assert_int_equal(o->st.zstd_blocks, cap->st.zstd_blocks);
	assert_int_equal(o->st.zstd_blocks, count_zstd(l));
	assert_int_equal(o->st.bad_blocks, 0);
	assert_int_equal(o->st.lost_records, 0);
	assert_int_equal(o->st.missing_blocks, 0);
	assert_int_equal(o->st.skipped_bytes, 0);
	assert_false(o->st.truncated);
	assert_int_equal(o->st.truncated_bytes, 0);
	assert_int_equal(o->w.n, 0);
}

/* Records of every size from 0 bytes to LPS_MAX_RECORD, 64 blocks' worth. */
static void make_mixed(struct recs *r)
{
	static const uint32_t first[] = {
		0, 1, LPS_MAX_RECORD, 0, 2, 4 * KiB, LPS_MAX_RECORD, 3, LPS_MAX_RECORD - 1};

	recs_make(r, 42, 64 * (size_t)COLL_CAPTURE_BLOCK, LPS_MAX_RECORD, first,
		  sizeof(first) / sizeof(first[0]));
}

/* Many records per block, at most 64 KiB each: 7 to 8 blocks (of COLL_CAPTURE_BLOCK). */
static void make_small(struct recs *r)
{
	static const uint32_t first[] = {0, 1, 7};

	recs_make(r, 7, 7 * (size_t)COLL_CAPTURE_BLOCK, 64 * KiB, first, 3);
}

static void round_trip(bool compress)
{
	uint64_t t0, t1;
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	bool *want;
	uint32_t big = 0;

	make_mixed(&r);
	t0 = lp_clock_ns(CLOCK_REALTIME);
	write_capture(&r, compress, true, &cap);
	t1 = lp_clock_ns(CLOCK_REALTIME);
	layout_of(&cap, &l);
	assert_true(l.n >= 20);
	for (uint32_t i = 0; i < r.n; i++)
		big += r.len[i] == LPS_MAX_RECORD;
	assert_true(big >= 2);
	if (compress) {
		/* the pattern runs shrink, the random runs are kept as they are */
		assert_true(cap.st.zstd_blocks > 0);
		assert_true(cap.st.zstd_blocks < l.n);
	} else {
		assert_int_equal(cap.st.zstd_blocks, 0);
	}

	want = want_new(&r, true);
	read_both(cap.buf, cap.len, &r, want, 10, &o);
	assert_clean(&o, &cap, &l);
	assert_int_equal(o.h.major, LPC_VERSION_MAJOR);
	assert_int_equal(o.h.minor, LPC_VERSION_MINOR);
	assert_int_equal(o.h.hdr_size, LPC_HDR_SIZE);
	assert_int_equal(o.h.flags, 0);
	assert_true(o.h.created_real_ns >= t0);
	assert_true(o.h.created_real_ns <= t1);
	if (!compress)
		assert_int_equal(o.st.stored_bytes, o.st.raw_bytes);
	else
		assert_true(o.st.stored_bytes < o.st.raw_bytes);
	free(want);
	free(cap.buf);
	recs_free(&r);
}

static void test_round_trip_zstd(void **state)
{
	round_trip(true);
}

static void test_round_trip_plain(void **state)
{
	round_trip(false);
}

/* Records larger than LPS_MAX_RECORD are refused and counted; the rest go on. */
static void test_record_limits(void **state)
{
	static const uint32_t lens[] = {5, LPS_MAX_RECORD, 0, 300 * KiB, LPS_MAX_RECORD, 9};
	struct coll_capture_stats st;
	struct coll_capture *c;
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	uint8_t *big;
	bool *want;
	int fd = new_memfd();

	recs_make(&r, 1, 0, 0, lens, sizeof(lens) / sizeof(lens[0]));
	big = calloc(1, LPS_MAX_RECORD + 1);
	assert_non_null(big);
	assert_int_equal(coll_capture__new(fd, true, &c), 0);
	for (uint32_t i = 0; i < r.n; i++) {
		put(c, &r, i, true);
		settle(fd, c);
		if (i == 1) {
			assert_int_equal(coll_capture__write(c, big, LPS_MAX_RECORD + 1), -ENOSPC);
			assert_null(coll_capture__reserve(c, LPS_MAX_RECORD + 1));
			assert_null(coll_capture__reserve(c, UINT32_MAX));
			coll_capture__commit(c, 0); /* no reservation is open: nothing */
		}
	}
	coll_capture__stats(c, &st);
	assert_int_equal(st.dropped_records, 3);
	assert_int_equal(st.dropped_bytes, 2ull * (LPS_MAX_RECORD + 1) + UINT32_MAX);
	end_capture(c, fd, &cap);
	assert_int_equal(cap.st.records, r.n);
	assert_int_equal(cap.st.dropped_records, 3);
	assert_int_equal(cap.st.err, 0);

	layout_of(&cap, &l);
	want = want_new(&r, true);
	read_both(cap.buf, cap.len, &r, want, 10, &o);
	assert_clean(&o, &cap, &l);
	free(want);
	free(big);
	free(cap.buf);
	recs_free(&r);
}

/* cap holds every record of r, whole and clean; frees both. */
/* cap reads back as every record of r, nothing lost. */
static void assert_reads_all(const struct cap *cap, const struct recs *r)
{
	struct readout o;
	struct layout l;
	bool *want;

	layout_of(cap, &l);
	want = want_new(r, true);
	read_both(cap->buf, cap->len, r, want, 10, &o);
	assert_clean(&o, cap, &l);
	free(want);
}

static void assert_whole(struct cap *cap, struct recs *r)
{
	assert_reads_all(cap, r);
	free(cap->buf);
	recs_free(r);
}

/*
 * A snapshot of records [a, b) made once (coll_ksnap) and put into two
 * files among their own records: each reads back whole, in order, its
 * blocks numbered without a gap, as if they had been written one by one.
 */
static void ksnap_copies(bool compress)
{
	struct coll_ksnap *k = coll_ksnap__new(compress);
	uint32_t a = 5, b;
	struct recs r;
	uint64_t bytes, rbytes;

	make_small(&r);
	b = r.n - 5;
	assert_non_null(k);
	for (uint32_t i = a; i < b; i++)
		assert_int_equal(coll_ksnap__add(k, rec_data(&r, i), r.len[i]), 0);
	assert_int_equal(coll_ksnap__finish(k), 0);
	assert_int_equal(coll_ksnap__add(k, "x", 1), -EINVAL); /* finished */
	coll_ksnap__size(k, &bytes, &rbytes);
	if (compress)
		assert_true(bytes < rbytes);
	for (int copy = 0; copy < 2; copy++) {
		struct coll_capture *c;
		int fd = new_memfd();
		struct cap cap;

		assert_int_equal(coll_capture__new(fd, compress, &c), 0);
		for (uint32_t i = 0; i < a; i++)
			put(c, &r, i, false);
		assert_int_equal(coll_capture__put_block(c, "LPCB", 4), -EINVAL); /* not a block */
		assert_int_equal(coll_ksnap__write(k, c), 0);
		settle(fd, c);
		for (uint32_t i = b; i < r.n; i++) {
			put(c, &r, i, true);
			settle(fd, c);
		}
		end_capture(c, fd, &cap);
		assert_int_equal(cap.st.records, r.n);
		assert_int_equal(cap.st.dropped_records, 0);
		assert_reads_all(&cap, &r);
		free(cap.buf);
	}
	coll_ksnap__free(k);
	recs_free(&r);
}

static void test_ksnap_zstd(void **state)
{
	(void)state;
	ksnap_copies(true);
}

static void test_ksnap_plain(void **state)
{
	(void)state;
	ksnap_copies(false);
}

/* Reservations: committed shorter than reserved, empty, or longer (refused). */
static void test_reserve_commit(void **state)
{
	static const uint32_t lens[] = {10, 0, 3};
	struct coll_capture *c;
	struct recs r;
	struct cap cap;
	uint8_t *p;
	int fd = new_memfd();

	recs_make(&r, 1, 0, 0, lens, 3);
	assert_int_equal(coll_capture__new(fd, false, &c), 0);
	p = coll_capture__reserve(c, 4096);
	assert_non_null(p);
	memcpy(p, rec_data(&r, 0), 10);
	coll_capture__commit(c, 10);
	coll_capture__commit(c, 10); /* the reservation is used up: nothing */
	assert_non_null(coll_capture__reserve(c, 0));
	coll_capture__commit(c, 0);
	p = coll_capture__reserve(c, 3);
	assert_non_null(p);
	memcpy(p, rec_data(&r, 2), 3);
	coll_capture__commit(c, 4); /* longer than reserved: refused */
	coll_capture__commit(c, 3);
	end_capture(c, fd, &cap);
	assert_int_equal(cap.st.records, 3);
	assert_int_equal(cap.st.record_bytes, 3 * LPC_REC_LEN_SIZE + 13);
	assert_int_equal(cap.st.blocks, 1);

	assert_whole(&cap, &r);
}

/*
 * finish_start and finish_poll (a rotated capture): the same whole file as
 * finish, the call itself never waiting for the disk with io_uring.
 */
static void test_finish_async(void **state)
{
	struct coll_capture *c;
	struct recs r;
	struct cap cap;
	int fd = new_memfd(), err = -1, done = 0;

	(void)state;
	recs_make(&r, 11, 3 * (size_t)COLL_CAPTURE_BLOCK, 4 * KiB, NULL, 0);
	assert_int_equal(coll_capture__new(fd, true, &c), 0);
	assert_int_equal(coll_capture__finish_poll(c, false, &err), -EINVAL);
	for (uint32_t i = 0; i < r.n; i++) {
		put(c, &r, i, false);
		settle(fd, c);
	}
	assert_int_equal(coll_capture__finish_start(c), 0);
	assert_int_equal(coll_capture__finish_start(c), 0); /* once is enough */
	for (int i = 0; i < 5000 && !done; i++) {
		done = coll_capture__finish_poll(c, false, &err);
		if (!done)
			usleep(1000);
	}
	if (!done)
		done = coll_capture__finish_poll(c, true, &err);
	assert_int_equal(done, 1);
	assert_int_equal(err, 0);
	coll_capture__stats(c, &cap.st);
	coll_capture__free(c);
	slurp(fd, &cap);
	close(fd);
	assert_int_equal(cap.st.records, r.n);
	assert_int_equal(cap.st.dropped_records, 0);
	assert_int_equal(cap.st.file_bytes, cap.len);
	assert_whole(&cap, &r);
}

/* A block is written when its first record is COLL_CAPTURE_AGE_NS old, and not before. */
static void test_tick(void **state)
{
	static const uint32_t lens[] = {1, 20, 300, 4000, 0};
	struct coll_capture_stats st;
	struct coll_capture *c;
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	bool *want;
	int fd = new_memfd();

	recs_make(&r, 1, 0, 0, lens, 5);
	assert_int_equal(coll_capture__new(fd, true, &c), 0);
	/* nothing to write */
	coll_capture__tick(c, lp_clock_ns(CLOCK_MONOTONIC) + 2 * COLL_CAPTURE_AGE_NS);
	for (uint32_t i = 0; i < 3; i++)
		put(c, &r, i, false);
	coll_capture__tick(c, lp_clock_ns(CLOCK_MONOTONIC));
	coll_capture__stats(c, &st);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.records, 0); /* the block being filled counts nowhere yet */
	coll_capture__tick(c, lp_clock_ns(CLOCK_MONOTONIC) + COLL_CAPTURE_AGE_NS);
	coll_capture__stats(c, &st);
	assert_int_equal(st.blocks, 1);
	assert_int_equal(st.records, 3);
	settle(fd, c);
	for (uint32_t i = 3; i < r.n; i++)
		put(c, &r, i, false);
	end_capture(c, fd, &cap);

	layout_of(&cap, &l);
	assert_int_equal(l.n, 2);
	assert_int_equal(l.b[0].nrec, 3);
	assert_int_equal(l.b[1].nrec, 2);
	want = want_new(&r, true);
	read_both(cap.buf, cap.len, &r, want, 10, &o);
	assert_clean(&o, &cap, &l);
	free(want);
	free(cap.buf);
	recs_free(&r);
}

/*
 * The file cut at cut: the records of the whole blocks before it, and the
 * block it cuts into reported (its records lost if its header is whole).
 */
static void check_cut(const struct cap *cap, const struct layout *l, const struct recs *r,
		      size_t cut)
{
	const struct blk *part = NULL;
	uint32_t whole = 0, nrec = 0;
	struct readout o;
	bool *want;

	for (uint32_t k = 0; k < l->n; k++) {
		if (l->b[k].off + l->b[k].len <= cut) {
			whole++;
			nrec += l->b[k].nrec;
		} else if (l->b[k].off < cut) {
			part = &l->b[k];
		}
	}
	want = want_new(r, false);
	want_range(want, 0, nrec, true);
	read_both(cap->buf, cut, r, want, 10, &o);
	if (cut < LPC_MAGIC_LEN) {
		assert_int_equal(o.err, -EBADF);
		goto out;
	}
	if (cut < LPC_HDR_SIZE) {
		assert_int_equal(o.err, -EBADMSG);
		goto out;
	}
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.file_bytes, cut);
	assert_int_equal(o.st.blocks, whole);
	assert_int_equal(o.st.records, nrec);
	assert_int_equal(o.st.bad_blocks, 0);
	assert_int_equal(o.st.missing_blocks, 0);
	assert_int_equal(o.st.skipped_bytes, 0);
	if (!part) {
		assert_false(o.st.truncated);
		assert_int_equal(o.st.truncated_bytes, 0);
		assert_int_equal(o.st.lost_records, 0);
		assert_int_equal(o.w.n, 0);
	} else {
		assert_true(o.st.truncated);
		assert_int_equal(o.st.truncated_bytes, cut - part->off);
		/* a cut header cannot say how many records its block had */
		assert_int_equal(o.st.lost_records,
				 cut - part->off >= LPC_BLOCK_HDR_SIZE ? part->nrec : 0);
		assert_int_equal(o.w.n, 1);
	}
out:
	free(want);
}

static void truncation(bool compress)
{
	struct layout l;
	struct recs r;
	struct cap cap;
	uint64_t seed = 99;

	make_small(&r);
	write_capture(&r, compress, true, &cap);
	layout_of(&cap, &l);
	assert_true(l.n >= 6);
	for (size_t cut = 0; cut <= LPC_HDR_SIZE + 1; cut++)
		check_cut(&cap, &l, &r, cut);
	for (uint32_t k = 0; k < l.n; k++) {
		const struct blk *b = &l.b[k];
		const size_t in[] = {b->off - 1,
				     b->off + 1,
				     b->off + 4,
				     b->off + 16,
				     b->off + LPC_BLOCK_HDR_SIZE - 1,
				     b->off + LPC_BLOCK_HDR_SIZE,
				     b->off + LPC_BLOCK_HDR_SIZE + 1,
				     b->off + b->len / 2,
				     b->off + b->len - 1,
				     b->off + b->len,
				     b->off + b->len + 1};

		for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
			if (in[i] <= cap.len)
				check_cut(&cap, &l, &r, in[i]);
	}
	for (int i = 0; i < 200; i++)
		check_cut(&cap, &l, &r, (size_t)(splitmix(&seed) % (cap.len + 1)));
	free(cap.buf);
	recs_free(&r);
}

static void test_truncated_zstd(void **state)
{
	truncation(true);
}

static void test_truncated_plain(void **state)
{
	truncation(false);
}

/* A copy of cap's bytes to damage. */
static uint8_t *copy_of(const struct cap *cap)
{
	uint8_t *p = malloc(cap->len);

	assert_non_null(p);
	memcpy(p, cap->buf, cap->len);
	return p;
}

/* A flipped payload byte costs exactly its block's records. */
static void corrupt_payload(bool compress)
{
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;

	make_small(&r);
	write_capture(&r, compress, false, &cap);
	layout_of(&cap, &l);
	if (compress)
		assert_true(count_zstd(&l) > 0);
	for (uint32_t k = 0; k < l.n; k++) {
		const struct blk *b = &l.b[k];
		size_t plen = b->len - LPC_BLOCK_HDR_SIZE;
		/* the first payload byte, the last, and others between */
		size_t at = b->off + LPC_BLOCK_HDR_SIZE +
			    (k == 0	    ? 0
			     : k == l.n - 1 ? plen - 1
					    : (k * 7919) % plen);
		uint8_t *buf = copy_of(&cap);
		bool *want = want_new(&r, true);

		buf[at] ^= 0x20;
		want_range(want, b->first, b->nrec, false);
		read_both(buf, cap.len, &r, want, 10, &o);
		assert_int_equal(o.err, 0);
		assert_int_equal(o.st.blocks, l.n - 1);
		assert_int_equal(o.st.records, r.n - b->nrec);
		assert_int_equal(o.st.bad_blocks, 1);
		assert_int_equal(o.st.lost_records, b->nrec);
		assert_int_equal(o.st.missing_blocks, 0);
		assert_int_equal(o.st.skipped_bytes, 0);
		assert_false(o.st.truncated);
		assert_int_equal(o.w.n, 1);
		assert_non_null(strstr(o.w.last, "checksum"));
		free(want);
		free(buf);
	}
	free(cap.buf);
	recs_free(&r);
}

static void test_corrupt_payload_zstd(void **state)
{
	corrupt_payload(true);
}

static void test_corrupt_payload_plain(void **state)
{
	corrupt_payload(false);
}

/*
 * Blocks [k, k + n) unreadable from their headers on (a damaged header, a
 * hole of zeros): skipped by the scan for the next header, their records
 * unknown, the gap counted as missing blocks when a later block shows it.
 */
static void check_skipped(const uint8_t *buf, const struct cap *cap, const struct layout *l,
			  const struct recs *r, uint32_t k, uint32_t n)
{
	struct readout o;
	bool *want = want_new(r, true);
	uint32_t nrec = 0;
	size_t bytes = 0;

	for (uint32_t j = k; j < k + n; j++) {
		want_range(want, l->b[j].first, l->b[j].nrec, false);
		nrec += l->b[j].nrec;
		bytes += l->b[j].len;
	}
	read_both(buf, cap->len, r, want, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.blocks, l->n - n);
	assert_int_equal(o.st.records, r->n - nrec);
	assert_int_equal(o.st.bad_blocks, 0);
	assert_int_equal(o.st.lost_records, 0);
	assert_int_equal(o.st.skipped_bytes, bytes);
	assert_int_equal(o.st.missing_blocks, k + n < l->n ? n : 0);
	assert_false(o.st.truncated);
	assert_int_equal(o.w.n, k + n < l->n ? 2 : 1);
	free(want);
}

static void test_corrupt_block_header(void **state)
{
	struct layout l;
	struct recs r;
	struct cap cap;

	make_small(&r);
	write_capture(&r, true, false, &cap);
	layout_of(&cap, &l);
	const uint32_t blocks[] = {0, 1, l.n / 2, l.n - 1};

	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		const struct blk *b = &l.b[blocks[i]];

		for (uint32_t byte = 0; byte < LPC_BLOCK_HDR_SIZE; byte++) {
			uint8_t *buf = copy_of(&cap);

			buf[b->off + byte] ^= (uint8_t)(1u << (byte % 8));
			check_skipped(buf, &cap, &l, &r, blocks[i], 1);
			free(buf);
		}
	}
	free(cap.buf);
	recs_free(&r);
}

/* Holes of zeros, as a crash leaves where a block's write never happened. */
static void test_holes(void **state)
{
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	uint8_t *buf;
	bool *want;
	uint32_t k;

	make_small(&r);
	write_capture(&r, true, false, &cap);
	layout_of(&cap, &l);
	assert_true(l.n >= 6);
	k = l.n / 2;

	/* one whole block, in the middle, first, last; then two */
	const uint32_t one[] = {k, 0, l.n - 1};

	for (size_t i = 0; i < sizeof(one) / sizeof(one[0]); i++) {
		buf = copy_of(&cap);
		memset(buf + l.b[one[i]].off, 0, l.b[one[i]].len);
		check_skipped(buf, &cap, &l, &r, one[i], 1);
		free(buf);
	}
	buf = copy_of(&cap);
	memset(buf + l.b[1].off, 0, l.b[1].len + l.b[2].len);
	check_skipped(buf, &cap, &l, &r, 1, 2);
	free(buf);

	/* from the middle of block k to the middle of k + 1: k bad, k + 1 skipped */
	buf = copy_of(&cap);
	memset(buf + l.b[k].off + l.b[k].len / 2, 0,
	       l.b[k].len - l.b[k].len / 2 + l.b[k + 1].len / 2);
	want = want_new(&r, true);
	want_range(want, l.b[k].first, l.b[k].nrec + l.b[k + 1].nrec, false);
	read_both(buf, cap.len, &r, want, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.blocks, l.n - 2);
	assert_int_equal(o.st.bad_blocks, 1);
	assert_int_equal(o.st.lost_records, l.b[k].nrec);
	assert_int_equal(o.st.skipped_bytes, l.b[k + 1].len);
	assert_int_equal(o.st.missing_blocks, 1);
	assert_int_equal(o.w.n, 3);
	free(want);
	free(buf);

	/* zeros where the file goes on after its last block */
	buf = calloc(1, cap.len + 4096);
	assert_non_null(buf);
	memcpy(buf, cap.buf, cap.len);
	want = want_new(&r, true);
	read_both(buf, cap.len + 4096, &r, want, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.records, r.n);
	assert_int_equal(o.st.skipped_bytes, 4096);
	assert_int_equal(o.st.missing_blocks, 0);
	assert_int_equal(o.st.lost_records, 0);
	assert_false(o.st.truncated);
	free(want);
	free(buf);
	free(cap.buf);
	recs_free(&r);
}

/* Several kinds of damage in one file. */
static void test_combined_damage(void **state)
{
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	uint8_t *buf;
	bool *want;
	const struct blk *last;
	size_t cut;

	make_small(&r);
	write_capture(&r, false, true, &cap);
	layout_of(&cap, &l);
	assert_true(l.n >= 6);
	last = &l.b[l.n - 1];
	cut = last->off + LPC_BLOCK_HDR_SIZE + (last->len - LPC_BLOCK_HDR_SIZE) / 2;
	buf = copy_of(&cap);
	buf[l.b[1].off + 8] ^= 1;			    /* header of block 1 */
	buf[l.b[3].off + LPC_BLOCK_HDR_SIZE + 100] ^= 0x80; /* payload of block 3 */
	want = want_new(&r, false);
	want_range(want, 0, last->first, true);
	want_range(want, l.b[1].first, l.b[1].nrec, false);
	want_range(want, l.b[3].first, l.b[3].nrec, false);
	read_both(buf, cut, &r, want, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.blocks, l.n - 3);
	assert_int_equal(o.st.records, last->first - l.b[1].nrec - l.b[3].nrec);
	assert_int_equal(o.st.bad_blocks, 1);
	assert_int_equal(o.st.lost_records, l.b[3].nrec + last->nrec);
	assert_int_equal(o.st.missing_blocks, 1);
	assert_int_equal(o.st.skipped_bytes, l.b[1].len);
	assert_true(o.st.truncated);
	assert_int_equal(o.st.truncated_bytes, cut - last->off);
	assert_int_equal(o.w.n, 4);
	free(want);
	free(buf);
	free(cap.buf);
	recs_free(&r);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/* The file header: damage, magic, version rules, a grown header. */
static void test_file_header(void **state)
{
	static const uint32_t lens[] = {1, 2, 3};
	struct lpc_header h;
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	uint8_t *buf;
	bool *all, *none;
	size_t glen;

	make_small(&r);
	write_capture(&r, true, false, &cap);
	layout_of(&cap, &l);
	all = want_new(&r, true);
	none = want_new(&r, false);
	assert_int_equal(lpc_header_decode(cap.buf, cap.len, &h), 0);

	for (size_t byte = 0; byte < LPC_HDR_SIZE; byte++) {
		buf = copy_of(&cap);
		buf[byte] ^= 0x04;
		read_both(buf, cap.len, &r, none, 10, &o);
		assert_int_equal(o.err, byte < LPC_MAGIC_LEN ? -EBADF : -EBADMSG);
		free(buf);
	}

	/* text-mode mangling of the CR LF, with a checksum that holds */
	buf = copy_of(&cap);
	buf[6] = '\n';
	put32(buf + 60, lp_crc32c(buf, 60));
	read_both(buf, cap.len, &r, none, 10, &o);
	assert_int_equal(o.err, -EBADF);
	free(buf);

	/* another major version: refused, its header returned for the message */
	buf = copy_of(&cap);
	h.major = 2;
	h.minor = 3;
	lpc_header_encode(buf, &h);
	read_both(buf, cap.len, &r, none, 10, &o);
	assert_int_equal(o.err, -EPROTO);
	assert_int_equal(o.h.major, 2);
	assert_int_equal(o.h.minor, 3);
	h.major = 0;
	lpc_header_encode(buf, &h);
	read_both(buf, cap.len, &r, none, 10, &o);
	assert_int_equal(o.err, -EPROTO);
	assert_int_equal(o.h.major, 0);

	/* a later minor is read */
	h.major = LPC_VERSION_MAJOR;
	h.minor = 9;
	h.flags = 0x100;
	lpc_header_encode(buf, &h);
	read_both(buf, cap.len, &r, all, 10, &o);
	assert_clean(&o, &cap, &l);
	assert_int_equal(o.h.minor, 9);
	assert_int_equal(o.h.flags, 0x100);
	free(buf);

	/* a grown header (a later minor's): the blocks start where it ends */
	glen = cap.len + 64;
	buf = calloc(1, glen);
	assert_non_null(buf);
	memcpy(buf, cap.buf, LPC_HDR_SIZE);
	memset(buf + LPC_HDR_SIZE, 0xee, 64);
	memcpy(buf + 2 * LPC_HDR_SIZE, cap.buf + LPC_HDR_SIZE, cap.len - LPC_HDR_SIZE);
	put32(buf + 12, 128);
	put32(buf + 60, lp_crc32c(buf, 60));
	read_both(buf, glen, &r, all, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.h.hdr_size, 128);
	assert_int_equal(o.st.records, r.n);
	assert_int_equal(o.st.skipped_bytes, 0);
	/* too large for the format, or for the file */
	put32(buf + 12, LPC_HDR_MAX + 1);
	put32(buf + 60, lp_crc32c(buf, 60));
	read_both(buf, glen, &r, none, 10, &o);
	assert_int_equal(o.err, -EBADMSG);
	put32(buf + 12, LPC_HDR_SIZE - 1);
	put32(buf + 60, lp_crc32c(buf, 60));
	read_both(buf, glen, &r, none, 10, &o);
	assert_int_equal(o.err, -EBADMSG);
	put32(buf + 12, 128);
	put32(buf + 60, lp_crc32c(buf, 60));
	read_both(buf, 100, &r, none, 10, &o);
	assert_int_equal(o.err, -EBADMSG);
	free(buf);
	free(all);
	free(none);
	free(cap.buf);
	recs_free(&r);

	/* a capture of no records: the header alone */
	recs_make(&r, 1, 0, 0, lens, 0);
	write_capture(&r, true, false, &cap);
	assert_int_equal(cap.len, LPC_HDR_SIZE);
	all = want_new(&r, true);
	read_both(cap.buf, cap.len, &r, all, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.blocks, 0);
	assert_int_equal(o.st.records, 0);
	free(all);
	free(cap.buf);
	recs_free(&r);
}

/* open_fd reads regular files only; the fd stays the caller's. */
static void test_open_fd_kinds(void **state)
{
	struct lpc_reader *rd = (struct lpc_reader *)&rd;
	int p[2];

	assert_int_equal(pipe(p), 0);
	assert_int_equal(lpc_reader__open_fd(p[0], &rd, NULL), -EINVAL);
	assert_null(rd);
	close(p[0]);
	close(p[1]);
	lpc_reader__free(NULL);
	assert_string_equal(lpc_compression_name(LPC_COMP_NONE), "none");
	assert_string_equal(lpc_compression_name(LPC_COMP_ZSTD), "zstd");
	assert_string_equal(lpc_compression_name(7), "unknown");
}

/* Damage is said at most max_msgs times, the last saying so; all of it is counted. */
static void test_warn_limit(void **state)
{
	static const unsigned limits[] = {0, 1, 3, 5, 10};
	struct readout o;
	struct layout l;
	struct recs r;
	struct cap cap;
	uint8_t *buf;
	bool *want;

	make_small(&r);
	write_capture(&r, false, false, &cap);
	layout_of(&cap, &l);
	assert_true(l.n >= 6);
	buf = copy_of(&cap);
	want = want_new(&r, true);
	for (uint32_t k = 0; k < 5; k++) {
		buf[l.b[k].off + LPC_BLOCK_HDR_SIZE + 1] ^= 1;
		want_range(want, l.b[k].first, l.b[k].nrec, false);
	}
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		read_both(buf, cap.len, &r, want, limits[i], &o);
		assert_int_equal(o.st.bad_blocks, 5);
		assert_int_equal(o.w.n, limits[i] < 5 ? limits[i] : 5);
		if (limits[i] && limits[i] <= 5)
			assert_non_null(strstr(o.w.last, "further problems are only counted"));
		else if (limits[i])
			assert_null(strstr(o.w.last, "further problems"));
		if (limits[i])
			assert_non_null(strstr(o.w.last, "block"));
	}
	free(want);
	free(buf);
	free(cap.buf);
	recs_free(&r);
}

/*
 * A writer whose file stops taking writes (here: its fd replaced by a
 * read-only one) reports the error from __finish and counts every record
 * it could not write as dropped, without crashing.
 */
static void test_write_error_readonly(void **state)
{
	struct coll_capture_stats st;
	struct coll_capture *c;
	struct readout o;
	struct recs r;
	struct cap cap;
	char path[64];
	bool *want;
	int fd = new_memfd(), keep, ro;

	make_small(&r);
	assert_int_equal(coll_capture__new(fd, true, &c), 0);
	keep = dup(fd);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	ro = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(keep >= 0 && ro >= 0);
	assert_int_equal(dup2(ro, fd), fd);
	close(ro);
	for (uint32_t i = 0; i < r.n; i++) {
		void *p = coll_capture__reserve(c, r.len[i]);

		/* NULL once the failure is known: dropped and counted */
		if (p) {
			memcpy(p, rec_data(&r, i), r.len[i]);
			coll_capture__commit(c, r.len[i]);
		}
		settle(fd, c);
	}
	assert_int_equal(coll_capture__finish(c), -EBADF);
	coll_capture__stats(c, &st);
	assert_int_equal(st.err, -EBADF);
	assert_int_equal(st.records, 0);
	assert_int_equal(st.record_bytes, 0);
	assert_int_equal(st.blocks, 0);
	assert_int_equal(st.zstd_blocks, 0);
	assert_int_equal(st.file_bytes, LPC_HDR_SIZE);
	assert_int_equal(st.dropped_records, r.n);
	assert_int_equal(coll_capture__write(c, "x", 1), -ENOSPC);
	coll_capture__free(c);
	close(fd);

	/* the file has its header and nothing else */
	slurp(keep, &cap);
	close(keep);
	assert_int_equal(cap.len, LPC_HDR_SIZE);
	want = want_new(&r, false);
	read_both(cap.buf, cap.len, &r, want, 10, &o);
	assert_int_equal(o.err, 0);
	assert_int_equal(o.st.records, 0);
	free(want);
	free(cap.buf);
	recs_free(&r);
}

/*
 * A file that fills up after a few blocks (RLIMIT_FSIZE, as a full disk):
 * the blocks written before are read back whole, every record after is
 * dropped and counted, and the writer's count of written records is the
 * reader's.
 */
static void write_error_full(bool compress)
{
	struct coll_capture_stats st;
	struct rlimit old, lim;
	struct coll_capture *c;
	struct readout o;
	struct recs r;
	struct cap cap;
	bool *want;
	int fd = new_memfd(), err;
	void (*prev)(int);

	make_small(&r);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < 1 * MiB)
		skip();
	lim = old;
	lim.rlim_cur = 700 * KiB; /* two or three blocks */
	prev = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(coll_capture__new(fd, compress, &c), 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (uint32_t i = 0; i < r.n; i++) {
		void *p = coll_capture__reserve(c, r.len[i]);

		if (p) {
			memcpy(p, rec_data(&r, i), r.len[i]);
			coll_capture__commit(c, r.len[i]);
		}
		settle(fd, c);
	}
	err = coll_capture__finish(c);
	/* before any assert: a failed one would leave the limit on for the rest */
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, prev);
	coll_capture__stats(c, &st);
	coll_capture__free(c);
	assert_true(err < 0);
	assert_int_equal(st.err, err);
	assert_true(st.records > 0);
	assert_true(st.dropped_records > 0);
	assert_int_equal(st.records + st.dropped_records, r.n);

	slurp(fd, &cap);
	close(fd);
	assert_true(cap.len <= lim.rlim_cur);
	want = want_new(&r, false);
	want_range(want, 0, (uint32_t)st.records, true);
	read_both(cap.buf, cap.len, &r, want, 10, &o);
	assert_int_equal(o.err, 0);
	/* the writer counts what reached the file, no more */
	assert_int_equal(o.st.records, st.records);
	assert_int_equal(o.st.raw_bytes, st.record_bytes);
	assert_int_equal(o.st.blocks, st.blocks);
	assert_int_equal(o.st.zstd_blocks, st.zstd_blocks);
	assert_int_equal(LPC_HDR_SIZE + o.st.blocks * LPC_BLOCK_HDR_SIZE + o.st.stored_bytes,
			 st.file_bytes);
	assert_true(st.file_bytes <= cap.len);
	assert_int_equal(o.st.bad_blocks, 0);
	assert_int_equal(o.st.skipped_bytes, 0);
	assert_true(o.st.records + o.st.lost_records <= r.n);
	free(want);
	free(cap.buf);
	recs_free(&r);
}

static void test_write_error_full_zstd(void **state)
{
	write_error_full(true);
}

static void test_write_error_full_plain(void **state)
{
	write_error_full(false);
}

/* fds a capture cannot be written to: refused at once, nothing left behind. */
static void test_new_errors(void **state)
{
	struct coll_capture *c = (struct coll_capture *)&c;
	int p[2], full;

	assert_int_equal(pipe(p), 0);
	assert_true(coll_capture__new(p[1], true, &c) < 0);
	assert_null(c);
	close(p[0]);
	close(p[1]);
	full = open("/dev/full", O_WRONLY | O_CLOEXEC);
	if (full >= 0) {
		c = (struct coll_capture *)&c;
		assert_true(coll_capture__new(full, false, &c) < 0);
		assert_null(c);
		close(full);
	}
	c = (struct coll_capture *)&c;
	assert_true(coll_capture__new(-1, false, &c) < 0);
	assert_null(c);
	coll_capture__free(NULL);
}

/*
 * Makes io_uring_setup fail with ENOSYS for this process, as on a kernel
 * with io_uring disabled: the writer then falls back to pwrite. A seccomp
 * filter needs no privileges once no_new_privs is set.
 */
static int refuse_io_uring(void)
{
#ifdef NATIVE_AUDIT_ARCH
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NATIVE_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = {.len = sizeof(f) / sizeof(f[0]), .filter = f};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("test_capture: seccomp");
		return -1;
	}
	return 0;
#else
	fprintf(stderr, "test_capture: --pwrite: no seccomp filter for this architecture\n");
	return -1;
#endif
}

/*
 * The checksum of blocks and headers: long buffers go through three lanes
 * joined by shift tables; every length and alignment around the lanes'
 * sizes must give the bitwise definition's value.
 */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t n)
{
	uint32_t c = ~0u;

	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
	}
	return ~c;
}

static void test_crc32c_lanes(void **state)
{
	static const size_t lens[] = {0,    1,	  7,	 8,	255,   767,   768,   769,
				      1000, 4095, 12287, 12288, 12289, 13056, 24576, 40000};
	size_t cap = 40000 + 8;
	uint8_t *b = malloc(cap);
	uint32_t x = 1;

	(void)state;
	assert_non_null(b);
	for (size_t i = 0; i < cap; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
	assert_int_equal(lp_crc32c("123456789", 9), 0xe3069283);
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t off = 0; off < 8; off += 3)
			assert_int_equal(lp_crc32c(b + off, lens[i]),
					 crc32c_bitwise(b + off, lens[i]));
	free(b);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_crc32c_lanes),
		cmocka_unit_test(test_round_trip_zstd),
		cmocka_unit_test(test_round_trip_plain),
		cmocka_unit_test(test_record_limits),
		cmocka_unit_test(test_ksnap_zstd),
		cmocka_unit_test(test_ksnap_plain),
		cmocka_unit_test(test_reserve_commit),
		cmocka_unit_test(test_tick),
		cmocka_unit_test(test_finish_async),
		cmocka_unit_test(test_truncated_zstd),
		cmocka_unit_test(test_truncated_plain),
		cmocka_unit_test(test_corrupt_payload_zstd),
		cmocka_unit_test(test_corrupt_payload_plain),
		cmocka_unit_test(test_corrupt_block_header),
		cmocka_unit_test(test_holes),
		cmocka_unit_test(test_combined_damage),
		cmocka_unit_test(test_file_header),
		cmocka_unit_test(test_open_fd_kinds),
		cmocka_unit_test(test_warn_limit),
		cmocka_unit_test(test_write_error_readonly),
		cmocka_unit_test(test_write_error_full_zstd),
		cmocka_unit_test(test_write_error_full_plain),
		cmocka_unit_test(test_new_errors),
	};

	if (argc > 1 && !strcmp(argv[1], "--pwrite")) {
		if (refuse_io_uring())
			return 1;
		no_uring = true;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
