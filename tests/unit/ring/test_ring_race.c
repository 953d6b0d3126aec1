// SPDX-License-Identifier: MIT
/*
 * The consumer against a writer that changes records while they are read:
 * the symbolizer's read path (lp_ring__read, then lps_decode and the
 * entries of maps and kernel symbol records, as symb_state_feed walks
 * them) on a ring whose producer-side mapping another thread keeps
 * writing.
 *
 * Each round fills a new ring (the collector's memfds, the consumer's view
 * read-only as the symbolizer maps it) with a stream of real records, then
 * reads it to the end while a flipper thread XORs bytes of the records in
 * the ring: mostly flipped and put back a moment later (a record that is
 * being rewritten), some left flipped (a record that is malformed). What
 * the consumer decodes must not change under it: every record is walked
 * twice, and the two walks must agree in every decoded field, string and
 * blob; every string and blob lies inside the record handed out, which is
 * not in the shared mapping. In the sanitizer build the copy's bytes past
 * the record are poisoned, so a decoder reading past a length is caught.
 *
 * Decoding the ring's bytes in place (lp_ring__peek) fails this test in a
 * few milliseconds: the two walks disagree, or the entries an accepted
 * record promised do not decode.
 *
 * A second test also flips the records' headers and the ring header's
 * producer position and closed flag: the consumer must stop cleanly
 * (-EBADMSG, -EPIPE or nothing more to read) without handing out anything
 * outside its copy.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"
#include "lowprof/schema.h"

#define DATA_SIZE    (128u << 10)
#define RUN_SECONDS  2.0
#define MAX_RANGES   1024
#define KSYMS_PER    48
#define MAPS_PER     12
#define STACK_COPY   768
#define PERSIST_ONE  64 /* one flip in this many stays */
#define TOGGLE_SPINS 64 /* how long a transient flip stays */

struct range {
	uint32_t off, len; /* of a payload, or of any byte to flip */
};

struct round {
	int fds[2];
	uint8_t *pmem, *cmem; /* producer (read-write) and consumer (read-only) views */
	size_t psize, csize;
	struct lp_ring *prod, *cons;
	struct range ranges[MAX_RANGES];
	uint32_t nranges;
	bool hdr_flips; /* also record headers and the ring header */
};

struct flipper {
	struct round *rd;
	uint64_t seed;
	uint64_t flips;
	int stop; /* atomic */
};

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static double now(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

/* ---- the stream ---------------------------------------------------------- */

static void enc_meta(struct lps_enc *e)
{
	static const uint32_t pids[2] = {100, 200};
	struct lps_meta m = {
		.major = LPS_VERSION_MAJOR,
		.minor = LPS_VERSION_MINOR,
		.hostname = {"race-host", 9},
		.kernel_release = {"6.18.0", 6},
		.clock = {"CLOCK_MONOTONIC", 15},
		.start_mono_ns = 1000,
		.start_real_ns = 2000,
		.freq_hz = 99,
		.ncpus_online = 2,
		.drain_ms = 100,
		.bpf_ring_bytes = 1 << 20,
		.shm_ring_bytes = DATA_SIZE,
		.npids = 2,
		.producer = {"test_ring_race", 14},
		.stack_bytes = STACK_COPY,
		.off_cpu = true,
		.off_cpu_mode = {"time", 4},
		.off_cpu_rate = 0.5,
		.off_cpu_period_ns = 10000000,
	};

	lps_enc_meta(e, &m, pids, NULL);
}

/* The collector's form: full 64-bit addresses, fixstr or str8 names. */
static void enc_ksyms(struct lps_enc *e, uint32_t seq, uint64_t *s)
{
	char name[64];

	lps_enc_ksyms_begin(e, seq, false, KSYMS_PER);
	for (uint32_t i = 0; i < KSYMS_PER; i++) {
		uint32_t n = 3 + (uint32_t)(xorshift(s) % 40);
		struct lps_ksym k = {.addr = 0xffffffff81000000ull + seq * 0x10000 + i * 16,
				     .name = {name, n},
				     .module = i & 1 ? (struct lps_str){"[mod]", 5}
						     : (struct lps_str){"", 0}};

		memset(name, 'a' + (int)(i % 26), n);
		lps_enc_ksym(e, &k);
	}
}

static void enc_maps(struct lps_enc *e, uint32_t pid, uint64_t *s)
{
	char path[128], bid[20];

	lps_enc_maps_begin(e, 5000, pid, false, MAPS_PER);
	for (uint32_t i = 0; i < MAPS_PER; i++) {
		int n = snprintf(path, sizeof(path), "/usr/lib/x86_64-linux-gnu/lib%u-%llu.so", i,
				 (unsigned long long)(xorshift(s) % 100000));
		struct lps_mapping m = {.start = 0x400000ull + i * 0x100000,
					.end = 0x400000ull + i * 0x100000 + 0x8000,
					.offset = i * 0x1000,
					.dev_major = 8,
					.dev_minor = 1,
					.inode = 1000 + i,
					.prot = LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
					.path = {path, (uint32_t)n},
					.build_id = {bid, sizeof(bid)}};

		memset(bid, (int)i, sizeof(bid));
		lps_enc_mapping(e, &m);
	}
}

static void enc_sample(struct lps_enc *e, uint32_t pid, uint64_t *s)
{
	static uint8_t kstack[12 * 8], copy[STACK_COPY];
	struct lps_sample smp = {.kind = (uint32_t)(xorshift(s) & 1),
				 .time_ns = 6000,
				 .pid = pid,
				 .tid = pid + 1,
				 .cpu = 1,
				 .comm = {"racer", 5},
				 .weight = 10101010,
				 .ip = 0x401234,
				 .sp = 0x7ffd0000,
				 .bp = 0x7ffd0100,
				 .kstack = kstack,
				 .nkstack = 12,
				 .stack_copy = copy,
				 .stack_copy_len = STACK_COPY - (uint32_t)(xorshift(s) % 64) * 8};

	for (uint32_t i = 0; i < sizeof(kstack); i++)
		kstack[i] = (uint8_t)(0x80 + i);
	for (uint32_t i = 0; i < sizeof(copy); i++)
		copy[i] = (uint8_t)xorshift(s);
	lps_enc_sample(e, &smp);
}

static void enc_next(struct lps_enc *e, uint32_t i, uint64_t *s)
{
	struct lps_exec x = {.time_ns = 7000, .pid = 100 + i, .comm = {"\x1b[31mred", 8}};
	struct lps_exit y = {.time_ns = 8000, .pid = 100 + i};
	struct lps_loss l = {.time_ns = 9000, .bpf_samples = i, .shm_dropped = 2};
	struct lps_end end = {.time_ns = 10000, .reason = {"duration", 8}};

	lps_enc_reset(e);
	if (i == 0) {
		enc_meta(e);
		return;
	}
	switch (xorshift(s) % 8) {
	case 0:
	case 1:
		enc_ksyms(e, i, s);
		break;
	case 2:
		enc_maps(e, 100 + i % 7, s);
		break;
	case 3:
		lps_enc_exec(e, &x);
		break;
	case 4:
		lps_enc_exit(e, &y);
		break;
	case 5:
		lps_enc_loss(e, &l);
		break;
	case 6:
		lps_enc_end(e, &end);
		break;
	default:
		enc_sample(e, 100 + i % 7, s);
		break;
	}
}

/* A new ring, mapped as the collector and the symbolizer map theirs, full of records. */
static void round_init(struct round *rd, bool hdr_flips, uint64_t *s)
{
	struct lps_enc e;
	int rfd;

	memset(rd, 0, sizeof(*rd));
	rd->hdr_flips = hdr_flips;
	assert_int_equal(lp_ring_create_memfds(DATA_SIZE, rd->fds), 0);
	rd->pmem = lp_ring_map_fds(rd->fds[LP_RING_FD_DATA], rd->fds[LP_RING_FD_CONS], true,
				   &rd->psize);
	assert_non_null(rd->pmem);
	rfd = lp_ring_reader_fd(rd->fds[LP_RING_FD_DATA]);
	assert_true(rfd >= 0);
	rd->cmem = lp_ring_map_fds(rfd, rd->fds[LP_RING_FD_CONS], false, &rd->csize);
	assert_non_null(rd->cmem);
	close(rfd);
	rd->prod = lp_ring__producer(rd->pmem, rd->psize);
	rd->cons = lp_ring__consumer(rd->cmem, rd->csize);
	assert_non_null(rd->prod);
	assert_non_null(rd->cons);

	lps_enc_init_dynamic(&e);
	for (uint32_t i = 0; rd->nranges < MAX_RANGES; i++) {
		uint8_t *p;
		long len;

		enc_next(&e, i, s);
		len = lps_enc_len(&e);
		assert_true(len > 0);
		p = lp_ring__reserve(rd->prod, (uint32_t)len);
		if (!p)
			break; /* full */
		memcpy(p, e.buf, (size_t)len);
		lp_ring__commit(rd->prod, (uint32_t)len);
		/* the payload, or with hdr_flips its record header too */
		rd->ranges[rd->nranges++] = (struct range){
			(uint32_t)(p - (rd->pmem + LP_RING_DATA_OFF)) - (hdr_flips ? 8 : 0),
			(uint32_t)len + (hdr_flips ? 8 : 0)};
	}
	lp_ring__close(rd->prod);
	lps_enc_free(&e);
	assert_true(rd->nranges > 8);
}

static void round_fini(struct round *rd)
{
	lp_ring__free(rd->cons);
	lp_ring__free(rd->prod);
	munmap(rd->cmem, rd->csize);
	munmap(rd->pmem, rd->psize);
	close(rd->fds[0]);
	close(rd->fds[1]);
}

/* ---- the writer ---------------------------------------------------------- */

static void *flip_loop(void *arg)
{
	struct flipper *f = arg;
	struct round *rd = f->rd;
	volatile uint8_t *data = rd->pmem + LP_RING_DATA_OFF;
	struct lp_ring_hdr *hdr = (struct lp_ring_hdr *)(rd->pmem + LP_RING_CONS_SIZE);

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		uint64_t r = xorshift(&f->seed);
		const struct range *g = &rd->ranges[r % rd->nranges];
		volatile uint8_t *b = data + g->off + (uint32_t)((r >> 16) % g->len);
		uint8_t x = (uint8_t)(r >> 40) | 1;

		if (rd->hdr_flips && (r >> 52) == 0) {
			/* the producer's fields the consumer reads: rarely, they end the round */
			if (r & 1)
				__atomic_store_n(&hdr->prod_pos, hdr->prod_pos ^ (r >> 20 & 0xfff8),
						 __ATOMIC_RELEASE);
			else
				__atomic_store_n(&hdr->closed, (uint32_t)(r >> 8),
						 __ATOMIC_RELEASE);
			f->flips++;
			continue;
		}
		*b ^= x;
		if ((r >> 48) % PERSIST_ONE) {
			for (volatile int i = 0; i < TOGGLE_SPINS; i++)
				;
			*b ^= x;
		}
		f->flips++;
	}
	return NULL;
}

/* ---- the reader ---------------------------------------------------------- */

/* Every decoded value, string and blob of a record, folded into a digest. */
struct walk {
	int err;	 /* lps_decode's */
	int entries_err; /* the entries': 0 when all count entries decoded */
	uint32_t type, entries;
	uint64_t digest;
	bool outside; /* a string or blob not inside the record */
};

static void fold(struct walk *w, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		w->digest = (w->digest ^ b[i]) * 0x100000001b3ull;
}

static void fold_str(struct walk *w, const uint8_t *rec, uint32_t len, const void *p, uint32_t n)
{
	const uint8_t *s = p;

	if (n && (s < rec || s > rec + len || n > (size_t)(rec + len - s))) {
		w->outside = true;
		return;
	}
	fold(w, &n, sizeof(n));
	if (n)
		fold(w, s, n);
}

static void walk_entries(struct walk *w, const uint8_t *d, uint32_t len, struct lps_record *r)
{
	int got;

	if (r->type == LPS_MAPS) {
		struct lps_mapping m;

		while ((got = lps_maps_next(&r->maps, &m)) == 1) {
			w->entries++;
			fold(w, &m.start, sizeof(m.start));
			fold(w, &m.end, sizeof(m.end));
			fold(w, &m.inode, sizeof(m.inode));
			fold_str(w, d, len, m.path.ptr, m.path.len);
			fold_str(w, d, len, m.build_id.ptr, m.build_id.len);
		}
		w->entries_err = got;
		if (!got && w->entries != r->maps.count)
			w->entries_err = -ERANGE;
	} else if (r->type == LPS_KSYMS) {
		struct lps_ksym k;

		while ((got = lps_ksyms_next(&r->ksyms, &k)) == 1) {
			w->entries++;
			fold(w, &k.addr, sizeof(k.addr));
			fold_str(w, d, len, k.name.ptr, k.name.len);
			fold_str(w, d, len, k.module.ptr, k.module.len);
		}
		w->entries_err = got;
		if (!got && w->entries != r->ksyms.count)
			w->entries_err = -ERANGE;
	}
}

/* What symb_state_feed reads of a record: decode, then each field and entry. */
static void walk(const uint8_t *d, uint32_t len, struct walk *w)
{
	struct lps_record r;

	memset(w, 0, sizeof(*w));
	w->digest = 0xcbf29ce484222325ull;
	w->err = lps_decode(d, len, &r);
	if (w->err)
		return;
	w->type = r.type;
	switch (r.type) {
	case LPS_META:
		fold_str(w, d, len, r.meta.hostname.ptr, r.meta.hostname.len);
		fold_str(w, d, len, r.meta.kernel_release.ptr, r.meta.kernel_release.len);
		fold_str(w, d, len, r.meta.producer.ptr, r.meta.producer.len);
		fold_str(w, d, len, r.meta.off_cpu_mode.ptr, r.meta.off_cpu_mode.len);
		fold_str(w, d, len, r.meta.pids_raw, r.meta.pids_raw_len);
		fold(w, &r.meta.freq_hz, sizeof(r.meta.freq_hz));
		fold(w, &r.meta.off_cpu_rate, sizeof(r.meta.off_cpu_rate));
		break;
	case LPS_SAMPLE:
		fold(w, &r.sample.time_ns, sizeof(r.sample.time_ns));
		fold(w, &r.sample.ip, sizeof(r.sample.ip));
		fold_str(w, d, len, r.sample.comm.ptr, r.sample.comm.len);
		fold_str(w, d, len, r.sample.kstack, r.sample.nkstack * 8);
		fold_str(w, d, len, r.sample.ustack, r.sample.nustack * 8);
		fold_str(w, d, len, r.sample.stack_copy, r.sample.stack_copy_len);
		break;
	case LPS_MAPS:
	case LPS_KSYMS:
		walk_entries(w, d, len, &r);
		break;
	case LPS_EXEC:
		fold_str(w, d, len, r.exec.comm.ptr, r.exec.comm.len);
		break;
	case LPS_END:
		fold_str(w, d, len, r.end.reason.ptr, r.end.reason.len);
		break;
	default:
		fold(w, &r, sizeof(r.type));
		break;
	}
}

struct tally {
	uint64_t rounds, records, decoded, entries, flips;
	uint64_t disagree, outside, broken_entries, in_mapping;
	uint64_t ends[4]; /* -EPIPE, -EBADMSG, -EAGAIN (gave up), other */
};

static bool in_mapping(const struct round *rd, const void *p)
{
	const uint8_t *b = p;

	return b >= rd->cmem && b < rd->cmem + rd->csize;
}

/* Reads the round's ring to its end, as the symbolizer's consume() does. */
static void read_all(struct round *rd, struct tally *t)
{
	uint32_t eagain = 0;
	int err;

	for (;;) {
		struct walk a, b;
		const void *data;
		uint32_t len;

		err = lp_ring__read(rd->cons, &data, &len);
		if (err == -EAGAIN && ++eagain < 1000)
			continue; /* a flipped producer position may come back */
		if (err)
			break;
		t->records++;
		if (len && in_mapping(rd, data))
			t->in_mapping++;
		walk(data, len, &a);
		walk(data, len, &b);
		if (memcmp(&a, &b, sizeof(a)))
			t->disagree++;
		if (a.outside || b.outside)
			t->outside++;
		if (!a.err) {
			t->decoded++;
			t->entries += a.entries;
			if (a.entries_err)
				t->broken_entries++;
		}
	}
	t->ends[err == -EPIPE ? 0 : err == -EBADMSG ? 1 : err == -EAGAIN ? 2 : 3]++;
}

static void race(bool hdr_flips, struct tally *t)
{
	uint64_t seed = 0x9e3779b97f4a7c15ull;
	double end = now() + RUN_SECONDS;

	memset(t, 0, sizeof(*t));
	while (now() < end) {
		struct round rd;
		struct flipper f = {.seed = seed ^ t->rounds};
		pthread_t th;

		round_init(&rd, hdr_flips, &seed);
		f.rd = &rd;
		assert_int_equal(pthread_create(&th, NULL, flip_loop, &f), 0);
		read_all(&rd, t);
		__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
		assert_int_equal(pthread_join(th, NULL), 0);
		t->flips += f.flips;
		t->rounds++;
		round_fini(&rd);
	}
	print_message("race (%s): %llu rounds, %llu records read, %llu decoded (%llu entries), "
		      "%llu bytes flipped; %llu walks disagreed, %llu strings outside, %llu "
		      "accepted records whose entries failed, %llu handed out in the mapping; "
		      "ends: %llu closed, %llu corrupt, %llu stalled, %llu other\n",
		      hdr_flips ? "headers too" : "payloads", (unsigned long long)t->rounds,
		      (unsigned long long)t->records, (unsigned long long)t->decoded,
		      (unsigned long long)t->entries, (unsigned long long)t->flips,
		      (unsigned long long)t->disagree, (unsigned long long)t->outside,
		      (unsigned long long)t->broken_entries, (unsigned long long)t->in_mapping,
		      (unsigned long long)t->ends[0], (unsigned long long)t->ends[1],
		      (unsigned long long)t->ends[2], (unsigned long long)t->ends[3]);
}

/* Payload bytes change while they are decoded: what is decoded does not. */
static void test_payload_flips(void **state)
{
	struct tally t;

	race(false, &t);
	assert_int_equal(t.disagree, 0);
	assert_int_equal(t.outside, 0);
	assert_int_equal(t.broken_entries, 0);
	assert_int_equal(t.in_mapping, 0);
	/* record headers were left alone: every round reads to the producer's close */
	assert_int_equal(t.ends[0], t.rounds);
	/* the race really ran: records were changed, and many still decoded */
	assert_true(t.rounds >= 5);
	assert_true(t.flips > t.records);
	assert_true(t.decoded > t.records / 4);
	assert_true(t.entries > 0);
}

/* Record headers and the producer's position and flag change too. */
static void test_header_flips(void **state)
{
	struct tally t;

	race(true, &t);
	assert_int_equal(t.disagree, 0);
	assert_int_equal(t.outside, 0);
	assert_int_equal(t.broken_entries, 0);
	assert_int_equal(t.in_mapping, 0);
	assert_int_equal(t.ends[3], 0);
	assert_true(t.rounds >= 5);
	assert_true(t.ends[1] > 0); /* some rounds ended at a corrupt header */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_payload_flips),
		cmocka_unit_test(test_header_flips),
	};

	/* corrupt rings are expected here; their warnings would drown the output */
	lp_log_init("test_ring_race", LP_LOG_ERROR);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
