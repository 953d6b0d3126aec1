// SPDX-License-Identifier: MIT
/*
 * Unit tests of the shared-memory ring in one process: format and attach
 * validation, round trips, wrap-around (at the end and early), drop-newest
 * accounting, close, a
 * hostile consumer position seen by the producer, corrupt records seen by
 * the consumer, the producer's wakeups of a waiting consumer, and a fresh
 * consumer page for each consumer. The two-process test is test_ring_stress.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RING_TEST_ASAN 1
#include <sanitizer/asan_interface.h>
#endif
#endif

#define GUARD 4096u /* canary bytes after the data area */

struct fixture {
	uint8_t *mem;
	size_t mem_size; /* header + data, without the guard */
	uint64_t data_size;
	struct lp_ring_cons *cons; /* the consumer page */
	struct lp_ring_hdr *hdr;
	uint8_t *data;
};

static void fix_init(struct fixture *f, uint64_t data_size)
{
	f->data_size = data_size;
	f->mem_size = lp_ring_mem_size(data_size);
	f->mem = aligned_alloc(4096, f->mem_size + GUARD);
	assert_non_null(f->mem);
	memset(f->mem, 0x5a, f->mem_size);
	memset(f->mem + f->mem_size, 0xa5, GUARD);
	assert_int_equal(lp_ring_format(f->mem, f->mem_size, data_size), 0);
	f->cons = (struct lp_ring_cons *)f->mem;
	f->hdr = (struct lp_ring_hdr *)(f->mem + LP_RING_CONS_SIZE);
	f->data = f->mem + LP_RING_DATA_OFF;
}

static void fix_check_guard(const struct fixture *f)
{
	for (size_t i = 0; i < GUARD; i++)
		assert_int_equal(f->mem[f->mem_size + i], 0xa5);
}

static void fix_fini(struct fixture *f)
{
	fix_check_guard(f);
	free(f->mem);
}

/* Writes a raw record header at data offset off (for crafting bad rings). */
static void raw_rec(struct fixture *f, uint64_t off, uint32_t len, uint32_t flags)
{
	memcpy(f->data + off, &len, 4);
	memcpy(f->data + off + 4, &flags, 4);
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Deterministic payload byte i of record seq. */
static uint8_t pat(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static void fill(uint8_t *p, uint64_t seq, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pat(seq, i);
}

static void check_payload(const void *data, uint64_t seq, uint32_t len)
{
	const uint8_t *p = data;

	for (uint32_t i = 0; i < len; i++)
		assert_int_equal(p[i], pat(seq, i));
}

static int write_seq(struct lp_ring *r, uint64_t seq, uint32_t len)
{
	uint8_t buf[8192];

	assert_true(len <= sizeof(buf));
	fill(buf, seq, len);
	return lp_ring__write(r, buf, len);
}

static void expect_rec(struct lp_ring *r, uint64_t seq, uint32_t len)
{
	const void *data;
	uint32_t got;

	assert_int_equal(lp_ring__peek(r, &data, &got), 0);
	assert_int_equal(got, len);
	check_payload(data, seq, len);
	lp_ring__consume(r);
}

/*
 * lp_ring__read hands out a private copy: the record's bytes, outside the
 * mapping, unchanged when the producer rewrites the ring, and (sanitizer
 * build) nothing readable past its length.
 */
static void test_read_copies(void **state)
{
	static const uint32_t lens[] = {100, 0, 4000, 7, 1, 2048};
	const uint8_t *first = NULL;
	struct fixture f;
	struct lp_ring *p, *c;

	fix_init(&f, 8192);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_non_null(p);
	assert_non_null(c);
	for (uint32_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
		const uint8_t *data;
		uint32_t len;

		assert_int_equal(write_seq(p, i, lens[i]), 0);
		assert_int_equal(lp_ring__read(c, (const void **)&data, &len), 0);
		assert_int_equal(len, lens[i]);
		assert_true(data < f.mem || data >= f.mem + f.mem_size + GUARD);
		check_payload(data, i, len);
		/* consumed: the producer may write over it, the copy stays */
		memset(f.data, 0xee, f.data_size);
		check_payload(data, i, len);
#ifdef RING_TEST_ASAN
		assert_true(__asan_address_is_poisoned(data + len));
#endif
		if (!first)
			first = data;
	}
	assert_int_equal(lp_ring__read(c, (const void **)&first, &(uint32_t){0}), -EAGAIN);
	lp_ring__close(p);
	assert_int_equal(lp_ring__read(c, (const void **)&first, &(uint32_t){0}), -EPIPE);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

static void test_sizes(void **state)
{
	assert_int_equal(lp_ring_mem_size(4096), 12288);
	assert_int_equal(lp_ring_round_size(0), LP_RING_MIN_DATA);
	assert_int_equal(lp_ring_round_size(4096), 4096);
	assert_int_equal(lp_ring_round_size(4097), 8192);
	assert_int_equal(lp_ring_round_size(1000000), 1048576);
	assert_true(lp_ring_round_size(LP_RING_MAX_DATA) == LP_RING_MAX_DATA);
	assert_int_equal(lp_ring_round_size(LP_RING_MAX_DATA + 1), 0);
}

static void test_format_invalid(void **state)
{
	size_t size = lp_ring_mem_size(8192);
	uint8_t *mem = aligned_alloc(4096, size);

	assert_non_null(mem);
	assert_int_equal(lp_ring_format(mem, size, 4095), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, 6144), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, 2048), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, 0), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, 16384), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, LP_RING_MAX_DATA * 2), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size - 1, 8192), -EINVAL);
	assert_int_equal(lp_ring_format(NULL, size, 8192), -EINVAL);
	assert_int_equal(lp_ring_format(mem + 4, size - 8, 4096), -EINVAL);
	assert_int_equal(lp_ring_format(mem, size, 8192), 0);
	assert_int_equal(lp_ring_format(mem, size, 4096), 0);
	free(mem);
}

/* Both sides must refuse the mapping; errno EINVAL. */
static void expect_attach_fails(struct fixture *f, size_t mem_size)
{
	errno = 0;
	assert_null(lp_ring__consumer(f->mem, mem_size));
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_null(lp_ring__producer(f->mem, mem_size));
	assert_int_equal(errno, EINVAL);
}

static void test_attach_invalid(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;

	fix_init(&f, 8192);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_non_null(p);
	assert_non_null(c);
	lp_ring__free(p);
	lp_ring__free(c);
	lp_ring__free(NULL);

	expect_attach_fails(&f, f.mem_size - 1);
	expect_attach_fails(&f, LP_RING_HDR_SIZE);
	errno = 0;
	assert_null(lp_ring__consumer(NULL, f.mem_size));
	assert_int_equal(errno, EINVAL);

	f.hdr->magic ^= 1;
	expect_attach_fails(&f, f.mem_size);
	f.hdr->magic ^= 1;

	/* version 1 kept the consumer position in the header: refused too */
	f.hdr->version = 1;
	expect_attach_fails(&f, f.mem_size);
	f.hdr->version = LP_RING_VERSION + 1;
	expect_attach_fails(&f, f.mem_size);
	f.hdr->version = LP_RING_VERSION;

	f.hdr->hdr_size = 8192;
	expect_attach_fails(&f, f.mem_size);
	f.hdr->hdr_size = LP_RING_HDR_SIZE;

	const uint64_t bad_sizes[] = {
		0, 2048, 6144, 8200, 16384, LP_RING_MAX_DATA * 2, UINT64_MAX, 1ull << 63};
	for (size_t i = 0; i < sizeof(bad_sizes) / sizeof(bad_sizes[0]); i++) {
		f.hdr->data_size = bad_sizes[i];
		expect_attach_fails(&f, f.mem_size);
	}
	/* 4096 in an 8192-byte area is valid: the mapping may be larger. */
	f.hdr->data_size = 4096;
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_non_null(c);
	assert_int_equal(lp_ring__max_record(c), 2048 - 8);
	lp_ring__free(c);
	f.hdr->data_size = 8192;

	/* Each side refuses an unaligned position of its own. */
	f.cons->cons_pos = 12;
	errno = 0;
	assert_null(lp_ring__consumer(f.mem, f.mem_size));
	assert_int_equal(errno, EINVAL);
	f.cons->cons_pos = 0;
	f.hdr->prod_pos = 4;
	errno = 0;
	assert_null(lp_ring__producer(f.mem, f.mem_size));
	assert_int_equal(errno, EINVAL);
	f.hdr->prod_pos = 0;
	fix_fini(&f);
}

static void test_roundtrip(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	const void *data;
	uint32_t len;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_non_null(p);
	assert_non_null(c);

	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);
	lp_ring__consume(c); /* nothing peeked: no-op */
	assert_int_equal(f.cons->cons_pos, 0);

	assert_int_equal(write_seq(p, 1, 5), 0);
	assert_int_equal(write_seq(p, 2, 0), 0);
	assert_int_equal(write_seq(p, 3, 100), 0);
	assert_int_equal(f.hdr->prod_pos, 16 + 8 + 112);

	/* Peeking twice gives the same record. */
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_int_equal(len, 5);
	assert_ptr_equal(data, f.data + 8);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_int_equal(len, 5);
	check_payload(data, 1, 5);
	lp_ring__consume(c);
	assert_int_equal(f.cons->cons_pos, 16);
	lp_ring__consume(c); /* second consume without peek: no-op */
	assert_int_equal(f.cons->cons_pos, 16);
	expect_rec(c, 2, 0);
	expect_rec(c, 3, 100);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);

	lp_ring__stats(c, &st);
	assert_int_equal(st.prod_pos, 136);
	assert_int_equal(st.cons_pos, 136);
	assert_int_equal(st.data_size, 4096);
	assert_int_equal(st.dropped_records, 0);
	assert_int_equal(st.bad_consumer_pos, 0);
	assert_false(st.closed);

	/* Wrong side or NULL arguments. */
	assert_int_equal(lp_ring__peek(p, &data, &len), -EINVAL);
	assert_int_equal(lp_ring__peek(c, NULL, &len), -EINVAL);
	assert_int_equal(lp_ring__write(c, "x", 1), -EINVAL);
	assert_null(lp_ring__reserve(c, 1));
	lp_ring__stats(NULL, &st);
	assert_int_equal(st.prod_pos, 0);

	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/*
 * Random writes and reads against a model queue for many laps of a small
 * ring: every size from 0 to max_record, so wrap markers land at every offset.
 */
/* Random writes and reads; early_wrap as for lp_ring__set_early_wrap. */
static void wrap_varied(uint64_t early_wrap)
{
	enum { QN = 1024 };
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	uint64_t q_seq[QN];
	uint32_t q_len[QN];
	unsigned int head = 0, tail = 0;
	uint64_t seq = 0, drops = 0, drop_bytes = 0, reads = 0;
	uint32_t max;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	max = lp_ring__max_record(p);
	assert_int_equal(max, 2040);
	lp_ring__set_early_wrap(p, early_wrap);

	for (int it = 0; it < 200000; it++) {
		if (rng() % 2) {
			uint32_t len = rng() % 4 ? rng() % 200 : rng() % (max + 1);
			uint32_t writable = lp_ring__writable(p);
			int err = write_seq(p, seq, len);

			/* writable is exact: the largest length that succeeds (0 is
			 * both "a 0-byte record fits" and "nothing fits") */
			if (len || writable)
				assert_int_equal(err == 0, len <= writable);

			if (err == 0) {
				assert_true(tail - head < QN);
				q_seq[tail % QN] = seq;
				q_len[tail % QN] = len;
				tail++;
			} else {
				assert_int_equal(err, -ENOSPC);
				drops++;
				drop_bytes += len;
			}
			seq++;
		} else {
			const void *data;
			uint32_t len;
			int err = lp_ring__peek(c, &data, &len);

			if (head == tail) {
				assert_int_equal(err, -EAGAIN);
				continue;
			}
			assert_int_equal(err, 0);
			assert_int_equal(len, q_len[head % QN]);
			check_payload(data, q_seq[head % QN], len);
			assert_true((const uint8_t *)data + len <= f.data + f.data_size);
			lp_ring__consume(c);
			head++;
			reads++;
		}
	}
	lp_ring__stats(p, &st);
	assert_int_equal(st.dropped_records, drops);
	assert_int_equal(st.dropped_bytes, drop_bytes);
	assert_int_equal(st.bad_consumer_pos, 0);
	assert_true(st.prod_pos > 1000 * f.data_size); /* many laps */
	assert_true(drops > 0 && reads > 10000);
	assert_int_equal(seq, reads + drops + (tail - head));
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

static void test_wrap_varied(void **state)
{
	wrap_varied(0);
}

/* The same with early wraps: writable stays exact, nothing is lost. */
static void test_wrap_varied_early(void **state)
{
	wrap_varied(1024);
	wrap_varied(8);
}

/*
 * With an early wrap at 1024 of 65536 bytes, a consumer that keeps up sees
 * every batch start below 1024 + one record; a lagging one lets the
 * producer go on into the rest of the ring.
 */
static void test_early_wrap_bounded(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	const void *data;
	uint32_t len;
	uint64_t seq = 0, highest = 0, n, first;

	fix_init(&f, 65536);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_false(lp_ring__deepens(p, 100)); /* early wraps off */
	lp_ring__set_early_wrap(p, 1020);	/* rounded up to 1024 */

	/* 10 records: 1120 bytes in, the consumer at 0: the next one deepens. */
	for (n = 0; n < 10; n++) {
		assert_false(lp_ring__deepens(p, 100));
		assert_int_equal(write_seq(p, seq++, 100), 0);
	}
	assert_true(lp_ring__deepens(p, 100));
	assert_false(lp_ring__deepens(c, 100)); /* the consumer's handle: no */
	for (n = 0; n < 10; n++)
		expect_rec(c, n, 100);
	/* Read: it wraps early instead, to the start. */
	assert_false(lp_ring__deepens(p, 100));
	assert_int_equal(write_seq(p, seq, 100), 0);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_ptr_equal(data, f.data + 8);
	check_payload(data, seq++, len);
	lp_ring__consume(c);
	assert_false(lp_ring__deepens(p, 100)); /* 112 bytes in */

	/* Batches of 1..9 records of 100 bytes (112 with the header), then all read. */
	for (int it = 0; it < 5000; it++) {
		first = seq;

		n = 1 + rng() % 9;
		for (uint64_t i = 0; i < n; i++)
			assert_int_equal(write_seq(p, seq++, 100), 0);
		for (uint64_t i = first; i < seq; i++) {
			uint64_t end;

			assert_int_equal(lp_ring__peek(c, &data, &len), 0);
			assert_int_equal(len, 100);
			check_payload(data, i, len);
			end = (uint64_t)((const uint8_t *)data - f.data) + 104;
			if (end > highest)
				highest = end;
			lp_ring__consume(c);
		}
	}
	/* A batch starts below 1024 + 112 and adds at most 9 x 112 bytes. */
	assert_true(highest <= 1024 + 112 + 9 * 112);
	lp_ring__stats(p, &st);
	assert_true(st.prod_pos > 10 * f.data_size); /* many early wraps */
	/* written counts the records, not the tails the wraps skipped */
	assert_int_equal(lp_ring__written(p), seq * 112);
	assert_int_equal(lp_ring__written(c), 0);

	/*
	 * Lagging: unread records fill at least the early-wrap offset (the
	 * skipped tail is not free until the marker is read); once the consumer
	 * has read past the marker, the whole ring is usable again.
	 */
	first = seq;
	while (write_seq(p, seq, 100) == 0)
		seq++;
	assert_true((seq - first) * 112 >= 1024);
	expect_rec(c, first, 100);
	while (write_seq(p, seq, 100) == 0)
		seq++;
	assert_true((seq - first - 1) * 112 >= 65536 - 2 * 112);
	for (uint64_t i = first + 1; i < seq; i++)
		expect_rec(c, i, 100);
	lp_ring__stats(p, &st);
	assert_int_equal(st.dropped_records, 2);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

static void test_full_drops_newest(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	const void *data;
	uint32_t len;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);

	/* 248 payload + 8 header = 256: exactly 16 records fill the ring. */
	for (int i = 0; i < 16; i++)
		assert_int_equal(write_seq(p, i, 248), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(write_seq(p, 100 + i, 248), -ENOSPC);
	assert_int_equal(write_seq(p, 200, 0), -ENOSPC); /* even 8 bytes do not fit */
	assert_null(lp_ring__reserve(p, 100));
	assert_int_equal(lp_ring__writable(p), 0);
	lp_ring__stats(p, &st);
	assert_int_equal(st.dropped_records, 7);
	assert_int_equal(st.dropped_bytes, 5 * 248 + 100);
	assert_int_equal(st.prod_pos, 4096);

	/* The oldest records survived; freeing one makes room for one more. */
	expect_rec(c, 0, 248);
	assert_int_equal(lp_ring__writable(p), 248);
	assert_int_equal(write_seq(p, 16, 248), 0);
	assert_int_equal(write_seq(p, 17, 0), -ENOSPC);
	for (int i = 1; i <= 16; i++)
		expect_rec(c, i, 248);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);

	lp_ring__stats(c, &st);
	assert_int_equal(st.dropped_records, 8);
	assert_int_equal(st.dropped_bytes, 5 * 248 + 100);
	assert_int_equal(st.bad_consumer_pos, 0);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

static void test_close_epipe(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	const void *data;
	uint32_t len;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_int_equal(write_seq(p, 1, 10), 0);
	assert_int_equal(write_seq(p, 2, 20), 0);
	/* An open reservation is abandoned by close. */
	assert_non_null(lp_ring__reserve(p, 30));
	lp_ring__close(p);
	lp_ring__commit(p, 30);
	lp_ring__stats(c, &st);
	assert_true(st.closed);
	assert_int_equal(st.prod_pos, 24 + 32);

	/* Data written before close is still delivered, then -EPIPE for good. */
	expect_rec(c, 1, 10);
	expect_rec(c, 2, 20);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EPIPE);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EPIPE);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);

	/* Closed while empty. */
	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);
	lp_ring__close(p);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EPIPE);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/*
 * lp_ring__take_peak: the most bytes unread at any peek since the last
 * call (record headers and padding included), then a new count.
 */
static void test_take_peak(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	const void *data;
	uint32_t len;

	(void)state;
	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_int_equal(lp_ring__take_peak(c), 0);
	assert_int_equal(write_seq(p, 1, 10), 0); /* 8 + 16 bytes */
	assert_int_equal(write_seq(p, 2, 20), 0); /* 8 + 24 */
	expect_rec(c, 1, 10);
	expect_rec(c, 2, 20);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);
	assert_int_equal(lp_ring__take_peak(c), 24 + 32);
	assert_int_equal(lp_ring__take_peak(c), 0);
	assert_int_equal(write_seq(p, 3, 30), 0); /* 8 + 32 */
	expect_rec(c, 3, 30);
	assert_int_equal(lp_ring__take_peak(c), 40);
	/* the producer's handle has no peak */
	assert_int_equal(lp_ring__take_peak(p), 0);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/*
 * A hostile consumer position makes the producer drop and count, and write
 * nothing at all; a sane position afterwards makes it work again.
 */
static void test_hostile_consumer(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	uint8_t *snap;
	uint64_t prod;

	fix_init(&f, 4096);
	snap = malloc(f.mem_size);
	assert_non_null(snap);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	/* Move past one lap so "backwards by more than the size" is a u64. */
	for (int i = 0; i < 40; i++) {
		assert_int_equal(write_seq(p, i, 200), 0);
		expect_rec(c, i, 200);
	}
	assert_int_equal(write_seq(p, 40, 200), 0);
	prod = f.hdr->prod_pos;
	assert_true(prod > f.data_size + 208);

	const uint64_t bad[] = {
		prod + 8,		/* ahead of the producer */
		prod - f.data_size - 8, /* backwards by more than the size */
		prod - 3,		/* unaligned */
		prod - 208 + 4,		/* unaligned, inside the window */
		UINT64_MAX,		/* ahead, and prod - cons wraps */
		prod - UINT64_MAX / 2,	/* far behind */
	};
	const uint64_t nbad = sizeof(bad) / sizeof(bad[0]);
	for (size_t i = 0; i < nbad; i++) {
		f.cons->cons_pos = bad[i];
		memcpy(snap, f.mem, f.mem_size);
		assert_int_equal(write_seq(p, 1000 + i, 16), -ENOSPC);
		assert_null(lp_ring__reserve(p, 8));
		assert_int_equal(lp_ring__writable(p), 0); /* and counts nothing */
		/* Only the producer's counters changed. */
		assert_memory_equal(snap + LP_RING_CONS_SIZE + 192, f.mem + LP_RING_CONS_SIZE + 192,
				    f.mem_size - LP_RING_CONS_SIZE - 192);
		assert_memory_equal(snap, f.mem,
				    LP_RING_CONS_SIZE +
					    offsetof(struct lp_ring_hdr, dropped_records));
		assert_int_equal(f.hdr->prod_pos, prod);
		assert_int_equal(f.hdr->bad_consumer_pos, 2 * (i + 1));
		assert_int_equal(f.hdr->dropped_records, 2 * (i + 1));
	}
	fix_check_guard(&f);

	/* The consumer may overwrite the producer's fields; the producer does not
	 * read them back. */
	f.hdr->prod_pos = 12345;
	f.hdr->dropped_records = 0;
	f.hdr->bad_consumer_pos = 0;
	f.cons->cons_pos = prod - 208;
	assert_int_equal(write_seq(p, 41, 24), 0);
	assert_int_equal(f.hdr->prod_pos, prod + 32);
	f.cons->cons_pos = 1;
	assert_int_equal(write_seq(p, 42, 40), -ENOSPC);
	lp_ring__stats(p, &st);
	assert_int_equal(st.prod_pos, prod + 32);
	assert_int_equal(st.dropped_records, 2 * nbad + 1);
	assert_int_equal(st.bad_consumer_pos, 2 * nbad + 1);
	assert_int_equal(st.dropped_bytes, nbad * (16 + 8) + 40);
	f.cons->cons_pos = prod - 208;

	expect_rec(c, 40, 200);
	expect_rec(c, 41, 24);
	free(snap);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/* A consumer over a crafted ring: set positions, then attach. */
static struct lp_ring *craft_consumer(struct fixture *f, uint64_t cons, uint64_t prod)
{
	struct lp_ring *c;

	f->cons->cons_pos = cons;
	f->hdr->prod_pos = prod;
	c = lp_ring__consumer(f->mem, f->mem_size);
	assert_non_null(c);
	return c;
}

static void expect_badmsg(struct lp_ring *c)
{
	const void *data = NULL;
	uint32_t len = 0;

	assert_int_equal(lp_ring__peek(c, &data, &len), -EBADMSG);
	assert_null(data);
	lp_ring__consume(c);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EBADMSG);
}

static void test_corrupt(void **state)
{
	struct fixture f;
	struct lp_ring *c;
	const void *data;
	uint32_t len;

	/* Length beyond what was published; stays broken once fixed. */
	fix_init(&f, 4096);
	raw_rec(&f, 0, 100, 0);
	c = craft_consumer(&f, 0, 24);
	expect_badmsg(c);
	raw_rec(&f, 0, 16, 0);
	assert_int_equal(lp_ring__peek(c, &data, &len), -EBADMSG);
	lp_ring__free(c);
	/* The same ring is fine for a fresh consumer. */
	c = craft_consumer(&f, 0, 24);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_int_equal(len, 16);
	lp_ring__free(c);
	/* Huge length: no overflow in the size computation. */
	raw_rec(&f, 0, UINT32_MAX, 0);
	c = craft_consumer(&f, 0, 4096);
	expect_badmsg(c);
	lp_ring__free(c);
	fix_fini(&f);

	/* Record crossing the end of the data area (published length fits). */
	fix_init(&f, 4096);
	raw_rec(&f, 4080, 24, 0);
	c = craft_consumer(&f, 4080, 4080 + 32);
	expect_badmsg(c);
	lp_ring__free(c);
	fix_fini(&f);

	/* Unknown flags. */
	fix_init(&f, 4096);
	raw_rec(&f, 0, 8, 2);
	c = craft_consumer(&f, 0, 16);
	expect_badmsg(c);
	lp_ring__free(c);
	raw_rec(&f, 0, 0, LP_RING_F_WRAP | 2);
	c = craft_consumer(&f, 0, 16);
	expect_badmsg(c);
	lp_ring__free(c);
	fix_fini(&f);

	/* Wrap markers: non-zero length, at offset 0, tail not published, and
	 * followed by another wrap. */
	fix_init(&f, 4096);
	raw_rec(&f, 4000, 8, LP_RING_F_WRAP);
	c = craft_consumer(&f, 4000, 4096 + 16);
	expect_badmsg(c);
	lp_ring__free(c);
	raw_rec(&f, 0, 0, LP_RING_F_WRAP);
	c = craft_consumer(&f, 4096, 4096 + 16);
	expect_badmsg(c);
	lp_ring__free(c);
	raw_rec(&f, 4000, 0, LP_RING_F_WRAP);
	c = craft_consumer(&f, 4000, 4000 + 48);
	expect_badmsg(c);
	lp_ring__free(c);
	c = craft_consumer(&f, 4000, 4096 + 16);
	expect_badmsg(c); /* the record at 0 is the wrap written above */
	lp_ring__free(c);
	/* A valid wrap then a valid record. */
	raw_rec(&f, 0, 8, 0);
	c = craft_consumer(&f, 4000, 4096 + 16);
	assert_int_equal(lp_ring__peek(c, &data, &len), 0);
	assert_int_equal(len, 8);
	assert_ptr_equal(data, f.data + 8);
	assert_int_equal(f.cons->cons_pos, 4096); /* the tail was released */
	lp_ring__free(c);
	fix_fini(&f);

	/* Bad producer positions. */
	fix_init(&f, 4096);
	raw_rec(&f, 0, 8, 0);
	c = craft_consumer(&f, 0, 4096 + 8); /* more than data_size ahead */
	expect_badmsg(c);
	lp_ring__free(c);
	c = craft_consumer(&f, 0, 20); /* unaligned */
	expect_badmsg(c);
	lp_ring__free(c);
	c = craft_consumer(&f, 4096, 16); /* behind the consumer */
	expect_badmsg(c);
	lp_ring__free(c);
	c = craft_consumer(&f, 0, UINT64_MAX - 7);
	expect_badmsg(c);
	lp_ring__free(c);
	/* Exactly data_size ahead is a full ring, not corruption. */
	for (uint64_t off = 0; off < 4096; off += 16)
		raw_rec(&f, off, 8, 0);
	c = craft_consumer(&f, 0, 4096);
	for (int i = 0; i < 256; i++) {
		assert_int_equal(lp_ring__peek(c, &data, &len), 0);
		lp_ring__consume(c);
	}
	assert_int_equal(lp_ring__peek(c, &data, &len), -EAGAIN);
	lp_ring__free(c);
	fix_fini(&f);
}

static void test_reserve_commit_short(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	uint8_t *buf;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);

	buf = lp_ring__reserve(p, 200);
	assert_non_null(buf);
	assert_ptr_equal(buf, f.data + 8);
	assert_int_equal(((uintptr_t)buf) & 7, 0);
	fill(buf, 1, 50);
	assert_int_equal(f.hdr->prod_pos, 0); /* nothing published before commit */
	lp_ring__commit(p, 50);
	assert_int_equal(f.hdr->prod_pos, 8 + 56);
	lp_ring__commit(p, 50); /* no open reservation: no-op */
	assert_int_equal(f.hdr->prod_pos, 64);

	/* A second reserve abandons the first; commit never exceeds max_len. */
	assert_non_null(lp_ring__reserve(p, 64));
	buf = lp_ring__reserve(p, 16);
	assert_ptr_equal(buf, f.data + 64 + 8);
	fill(buf, 2, 16);
	lp_ring__commit(p, 1000);
	assert_int_equal(f.hdr->prod_pos, 64 + 24);
	expect_rec(c, 1, 50);
	expect_rec(c, 2, 16);

	/* Reserve wraps for max_len; the shorter final record stays at 0. */
	while (f.hdr->prod_pos % 4096 != 4096 - 64) {
		assert_int_equal(write_seq(p, 0, 0), 0);
		expect_rec(c, 0, 0);
	}
	buf = lp_ring__reserve(p, 100);
	assert_ptr_equal(buf, f.data + 8);
	fill(buf, 3, 10);
	lp_ring__commit(p, 10);
	assert_int_equal(f.hdr->prod_pos, 4096 + 24);
	expect_rec(c, 3, 10);

	lp_ring__stats(p, &st);
	assert_int_equal(st.dropped_records, 0);
	assert_int_equal(st.cons_pos, st.prod_pos);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/* max_record fits an empty ring at every offset; one more byte is -E2BIG. */
static void test_max_record(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	struct lp_ring_stats st;
	uint32_t max;

	for (uint64_t off = 0; off < 4096; off += 8) {
		fix_init(&f, 4096);
		/* an empty ring whose positions start at off */
		f.hdr->prod_pos = off;
		f.cons->cons_pos = off;
		p = lp_ring__producer(f.mem, f.mem_size);
		c = lp_ring__consumer(f.mem, f.mem_size);
		assert_non_null(p);
		max = lp_ring__max_record(p);
		assert_int_equal(max, 2040);
		assert_int_equal(write_seq(p, off, max + 1), -E2BIG);
		assert_null(lp_ring__reserve(p, UINT32_MAX));
		assert_int_equal(lp_ring__writable(p), max);
		assert_int_equal(write_seq(p, off, max), 0);
		expect_rec(c, off, max);
		lp_ring__stats(p, &st);
		assert_int_equal(st.dropped_records, 2);
		assert_int_equal(st.dropped_bytes, (uint64_t)max + 1 + UINT32_MAX);
		lp_ring__free(p);
		lp_ring__free(c);
		fix_fini(&f);
	}
	assert_int_equal(lp_ring__max_record(NULL), 0);
	assert_int_equal(lp_ring__writable(NULL), 0);
}

struct later {
	struct lp_ring *p;
	bool close; /* close instead of writing a record */
};

/* 150 ms from now: a record and a notify, or the close */
static void *produce_later(void *arg)
{
	struct later *l = arg;
	struct timespec ts = {0, 150 * 1000000L};

	nanosleep(&ts, NULL);
	if (l->close) {
		lp_ring__close(l->p);
	} else {
		write_seq(l->p, 7, 40);
		lp_ring__notify(l->p);
	}
	return NULL;
}

/* ms c waits (timeout 10 s) for produce_later's record or close on p */
static uint64_t wait_for_later(struct lp_ring *p, struct lp_ring *c, bool close)
{
	struct later l = {p, close};
	pthread_t th;
	uint64_t t0 = lp_clock_ms(CLOCK_MONOTONIC), dt;

	assert_int_equal(pthread_create(&th, NULL, produce_later, &l), 0);
	assert_int_equal(lp_ring__wait(c, 10000), 0);
	dt = lp_clock_ms(CLOCK_MONOTONIC) - t0;
	assert_int_equal(pthread_join(th, NULL), 0);
	return dt;
}

/*
 * lp_ring__wait sleeps until the producer's lp_ring__notify (or close), or
 * the timeout; it returns at once when records are already there. notify
 * bumps prod_seq only when something was published since the last one.
 */
static void test_wait_notify(void **state)
{
	struct fixture f;
	struct lp_ring *p, *c;
	uint64_t t0, dt;
	uint32_t seq;

	fix_init(&f, 4096);
	p = lp_ring__producer(f.mem, f.mem_size);
	c = lp_ring__consumer(f.mem, f.mem_size);
	assert_int_equal(lp_ring__wait(p, 10), -EINVAL);

	/* nothing published: the timeout */
	t0 = lp_clock_ms(CLOCK_MONOTONIC);
	assert_int_equal(lp_ring__wait(c, 200), 0);
	dt = lp_clock_ms(CLOCK_MONOTONIC) - t0;
	assert_true(dt >= 150 && dt < 5000);

	/* a notify with nothing new leaves the futex word alone */
	seq = f.hdr->prod_seq;
	lp_ring__notify(p);
	assert_int_equal(f.hdr->prod_seq, seq);

	/* a record published but not yet notified: no wait at all */
	assert_int_equal(write_seq(p, 1, 24), 0);
	t0 = lp_clock_ms(CLOCK_MONOTONIC);
	assert_int_equal(lp_ring__wait(c, 5000), 0);
	assert_true(lp_clock_ms(CLOCK_MONOTONIC) - t0 < 1000);
	lp_ring__notify(p);
	assert_int_equal(f.hdr->prod_seq, seq + 1);
	lp_ring__notify(p);
	assert_int_equal(f.hdr->prod_seq, seq + 1);
	expect_rec(c, 1, 24);

	/* empty again: woken by the notify after 150 ms, long before 10 s */
	assert_true(wait_for_later(p, c, false) < 5000);
	expect_rec(c, 7, 40);

	/* woken by the close */
	assert_true(wait_for_later(p, c, true) < 5000);
	{
		const void *data;
		uint32_t len;

		assert_int_equal(lp_ring__peek(c, &data, &len), -EPIPE);
	}
	/* closed: returns at once */
	t0 = lp_clock_ms(CLOCK_MONOTONIC);
	assert_int_equal(lp_ring__wait(c, 5000), 0);
	assert_true(lp_clock_ms(CLOCK_MONOTONIC) - t0 < 1000);
	lp_ring__free(p);
	lp_ring__free(c);
	fix_fini(&f);
}

/*
 * lowprof-collector --ring gives each consumer a fresh consumer page: one
 * that left but kept its page mapped writes what it likes there, and the
 * producer, reading only the new consumer's page, neither counts it nor
 * overwrites what the new one has not read.
 */
static void test_new_consumer_page(void **state)
{
	const uint64_t size = 1 << 16;
	struct lp_ring *p, *a, *b;
	struct lp_ring_stats st;
	struct lp_ring_cons *old;
	void *pmem, *amem, *bmem;
	size_t psize, asize, bsize;
	int fds[2], rd, page;
	uint64_t seq = 0, next_b;
	struct stat sb;

	(void)state;
	assert_int_equal(lp_ring_create_memfds(size, fds), 0);
	pmem = lp_ring_map_fds(fds[LP_RING_FD_DATA], fds[LP_RING_FD_CONS], true, &psize);
	assert_non_null(pmem);
	p = lp_ring__producer(pmem, psize);
	assert_non_null(p);
	rd = lp_ring_reader_fd(fds[LP_RING_FD_DATA]);
	assert_true(rd >= 0);
	amem = lp_ring_map_fds(rd, fds[LP_RING_FD_CONS], false, &asize);
	a = lp_ring__consumer(amem, asize);
	assert_non_null(a);
	for (; seq < 10; seq++)
		assert_int_equal(write_seq(p, seq, 100), 0);
	for (uint64_t i = 0; i < 5; i++)
		expect_rec(a, i, 100);

	/* the next consumer's page: sealed, private, starting where the producer is */
	page = lp_ring__new_consumer_page(p);
	assert_true(page >= 0);
	assert_int_equal(lp_ring_check_sealed(page), 0);
	assert_int_equal(fstat(page, &sb), 0);
	assert_int_equal(sb.st_mode & 0777, 0600);
	bmem = lp_ring_map_fds(rd, page, false, &bsize);
	b = lp_ring__consumer(bmem, bsize);
	assert_non_null(b);
	next_b = seq;

	/* the one before writes garbage, then a position that frees everything */
	old = amem;
	old->cons_pos = UINT64_MAX - 7;
	for (int i = 0; i < 3; i++, seq++)
		assert_int_equal(write_seq(p, seq, 100), 0);
	lp_ring__stats(p, &st);
	assert_int_equal(st.bad_consumer_pos, 0);
	old->cons_pos = ((struct lp_ring_hdr *)((uint8_t *)pmem + LP_RING_CONS_SIZE))->prod_pos;
	/* the ring fills up to what b has not read, and no further */
	while (write_seq(p, seq, 100) == 0)
		seq++;
	lp_ring__stats(p, &st);
	assert_int_equal(st.bad_consumer_pos, 0);
	assert_true(st.dropped_records >= 1);
	assert_true((seq - next_b) * 108 <= size);
	/* b reads every record after it came, whole and in order */
	while (next_b < seq)
		expect_rec(b, next_b++, 100);
	{
		const void *data;
		uint32_t len;

		assert_int_equal(lp_ring__peek(b, &data, &len), -EAGAIN);
	}
	lp_ring__stats(p, &st);
	assert_int_equal(st.cons_pos, st.prod_pos);
	assert_int_equal(st.bad_consumer_pos, 0);

	lp_ring__free(a);
	lp_ring__free(b);
	lp_ring__free(p);
	munmap(amem, asize);
	munmap(bmem, bsize);
	munmap(pmem, psize);
	close(page);
	close(rd);
	close(fds[0]);
	close(fds[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_read_copies),
		cmocka_unit_test(test_format_invalid),
		cmocka_unit_test(test_attach_invalid),
		cmocka_unit_test(test_roundtrip),
		cmocka_unit_test(test_wrap_varied),
		cmocka_unit_test(test_wrap_varied_early),
		cmocka_unit_test(test_early_wrap_bounded),
		cmocka_unit_test(test_full_drops_newest),
		cmocka_unit_test(test_close_epipe),
		cmocka_unit_test(test_take_peak),
		cmocka_unit_test(test_hostile_consumer),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_reserve_commit_short),
		cmocka_unit_test(test_max_record),
		cmocka_unit_test(test_wait_notify),
		cmocka_unit_test(test_new_consumer_page),
	};

	/* attach failures warn by design; keep the test output readable */
	lp_log_init("test_ring", LP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
