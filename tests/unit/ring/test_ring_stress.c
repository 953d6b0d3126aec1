// SPDX-License-Identifier: MIT
/*
 * Two-process stress test of the ring: a forked producer writes N records of
 * pseudo-random sizes into a small MAP_SHARED ring while this process consumes
 * and verifies every one (sequence order, length, checksum and every byte).
 *
 * The producer alternates between windows of WINDOW records where it waits for
 * space (nothing may be dropped) and windows where it never waits (drop-newest
 * whenever the ring is full); the consumer sleeps now and then so the lossy
 * windows really drop. At the end every sequence number is either consumed or
 * accounted for in dropped_records / dropped_bytes, exactly. Once as is, once
 * with early wraps (lp_ring__set_early_wrap).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include <cmocka.h>

#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"

#define N_RECORDS   8000000ull
#define WINDOW	    400000ull
#define DATA_SIZE   65536u
#define SLEEP_EVERY 20000u
#define PAYLOAD_HDR 16u /* u64 seq, u32 len, u32 checksum */

static uint64_t mix(uint64_t x)
{
	/* splitmix64 finaliser */
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Payload length of record seq: mostly small, sometimes a few KiB. */
static uint32_t rec_len(uint64_t seq)
{
	uint64_t h = mix(seq);

	if ((h & 63) == 0)
		return PAYLOAD_HDR + (uint32_t)((h >> 8) % 4000);
	return PAYLOAD_HDR + (uint32_t)((h >> 8) % 300);
}

/* Fills body[0..n) from seq and returns its checksum. */
static uint32_t body_fill(uint8_t *body, uint64_t seq, uint32_t n)
{
	uint64_t x = mix(seq ^ 0xabcdef), sum = 0;
	uint32_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		x = mix(x);
		memcpy(body + i, &x, 8);
		sum = sum * 31 + x;
	}
	if (i < n) {
		x = mix(x);
		memcpy(body + i, &x, n - i);
		sum = sum * 31 + (x & ((1ull << (8 * (n - i))) - 1));
	}
	return (uint32_t)(sum ^ (sum >> 32));
}

/* Checksum of body[0..n) computed as body_fill does, from the bytes. */
static uint32_t body_sum(const uint8_t *body, uint32_t n)
{
	uint64_t x, sum = 0;
	uint32_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		memcpy(&x, body + i, 8);
		sum = sum * 31 + x;
	}
	if (i < n) {
		x = 0;
		memcpy(&x, body + i, n - i);
		sum = sum * 31 + x;
	}
	return (uint32_t)(sum ^ (sum >> 32));
}

static void payload_fill(uint8_t *p, uint64_t seq, uint32_t len)
{
	uint32_t sum = body_fill(p + PAYLOAD_HDR, seq, len - PAYLOAD_HDR);

	memcpy(p, &seq, 8);
	memcpy(p + 8, &len, 4);
	memcpy(p + 12, &sum, 4);
}

struct result {
	uint64_t produced;
	uint64_t dropped; /* the producer's own count of failed reserves */
	uint64_t lossless_drops;
};

/* Runs in the child; exits 0 on success. */
static void producer(void *mem, size_t mem_size, struct result *res, uint64_t early_wrap)
{
	struct lp_ring_stats st;
	struct lp_ring *r;
	uint64_t seq;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	r = lp_ring__producer(mem, mem_size);
	if (!r)
		_exit(2);
	lp_ring__set_early_wrap(r, early_wrap);
	for (seq = 0; seq < N_RECORDS; seq++) {
		uint32_t len = rec_len(seq);
		bool lossless = (seq / WINDOW) % 2 == 0;
		uint8_t *p;

		/* Worst case a record needs a wrap tail shorter than itself. */
		while (lossless) {
			lp_ring__stats(r, &st);
			if (st.data_size - (st.prod_pos - st.cons_pos) >= 2 * (8 + len + 8))
				break;
			sched_yield();
		}
		p = lp_ring__reserve(r, len);
		if (!p) {
			res->dropped++;
			if (lossless)
				res->lossless_drops++;
			continue;
		}
		payload_fill(p, seq, len);
		lp_ring__commit(r, len);
	}
	res->produced = seq;
	lp_ring__close(r);
	lp_ring__free(r);
	_exit(0);
}

struct verify {
	uint64_t next; /* lowest sequence number not yet seen */
	uint64_t consumed;
	uint64_t missing; /* sequence numbers skipped over: must be the drops */
	uint64_t missing_bytes;
	uint64_t bad; /* corrupt or out-of-order records */
	uint64_t eagain;
};

static void account_gap(struct verify *v, uint64_t upto)
{
	for (; v->next < upto; v->next++) {
		v->missing++;
		v->missing_bytes += rec_len(v->next);
	}
}

static bool verify_rec(struct verify *v, const uint8_t *p, uint32_t len, uint8_t *scratch)
{
	uint64_t seq;
	uint32_t hlen, sum;

	if (len < PAYLOAD_HDR)
		return false;
	memcpy(&seq, p, 8);
	memcpy(&hlen, p + 8, 4);
	memcpy(&sum, p + 12, 4);
	if (seq < v->next || seq >= N_RECORDS || hlen != len || len != rec_len(seq))
		return false;
	if (body_sum(p + PAYLOAD_HDR, len - PAYLOAD_HDR) != sum)
		return false;
	if (body_fill(scratch, seq, len - PAYLOAD_HDR) != sum ||
	    memcmp(scratch, p + PAYLOAD_HDR, len - PAYLOAD_HDR) != 0)
		return false;
	account_gap(v, seq);
	v->next = seq + 1;
	return true;
}

static double now(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static void stress(uint64_t early_wrap)
{
	size_t mem_size = lp_ring_mem_size(DATA_SIZE);
	struct verify v = {0};
	struct lp_ring_stats st;
	struct result *res;
	struct lp_ring *c;
	uint8_t scratch[8192];
	void *mem;
	pid_t pid;
	int status, err;
	double t0 = now();

	mem = mmap(NULL, mem_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(mem != MAP_FAILED);
	res = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	assert_true(res != MAP_FAILED);
	memset(res, 0, sizeof(*res));
	assert_int_equal(lp_ring_format(mem, mem_size, DATA_SIZE), 0);
	c = lp_ring__consumer(mem, mem_size);
	assert_non_null(c);
	assert_true(rec_len(0) <= lp_ring__max_record(c));

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		producer(mem, mem_size, res, early_wrap);

	for (;;) {
		const void *data;
		uint32_t len;

		err = lp_ring__peek(c, &data, &len);
		if (err == -EAGAIN) {
			v.eagain++;
			sched_yield();
			continue;
		}
		if (err)
			break;
		if (!verify_rec(&v, data, len, scratch)) {
			v.bad++;
			break;
		}
		lp_ring__consume(c);
		if (++v.consumed % SLEEP_EVERY == 0)
			usleep(2000);
	}
	if (err != -EPIPE)
		kill(pid, SIGKILL);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(v.bad, 0);
	assert_int_equal(err, -EPIPE);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	account_gap(&v, N_RECORDS);

	lp_ring__stats(c, &st);
	print_message("ring stress (early wrap %llu): %llu produced, %llu consumed, %llu dropped "
		      "(%llu bytes), "
		      "%llu EAGAIN polls, %.2f s\n",
		      (unsigned long long)early_wrap, (unsigned long long)res->produced,
		      (unsigned long long)v.consumed, (unsigned long long)st.dropped_records,
		      (unsigned long long)st.dropped_bytes, (unsigned long long)v.eagain,
		      now() - t0);
	assert_int_equal(res->produced, N_RECORDS);
	assert_int_equal(res->lossless_drops, 0);
	assert_int_equal(res->produced, v.consumed + st.dropped_records);
	assert_int_equal(st.dropped_records, res->dropped);
	assert_int_equal(st.dropped_records, v.missing);
	assert_int_equal(st.dropped_bytes, v.missing_bytes);
	assert_int_equal(st.bad_consumer_pos, 0);
	assert_int_equal(st.cons_pos, st.prod_pos);
	/* Both regimes were exercised. */
	assert_true(st.dropped_records > 0);
	assert_true(v.consumed > N_RECORDS / 2);

	lp_ring__free(c);
	munmap(res, 4096);
	munmap(mem, mem_size);
}

static void test_two_process_stress(void **state)
{
	stress(0);
}

/* The same with the producer wrapping early whenever the ring is empty. */
static void test_two_process_stress_early(void **state)
{
	stress(DATA_SIZE / 8);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_two_process_stress),
		cmocka_unit_test(test_two_process_stress_early),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
