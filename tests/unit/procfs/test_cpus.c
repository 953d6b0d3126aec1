// SPDX-License-Identifier: MIT
/* Kernel CPU lists, the online CPUs of this machine, and the rings' sizing. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector.h"
#include "collector_int.h"
#include "lowprof/cpus.h"

static uint32_t cpus[LP_MAX_CPUS + 1];

static int parse(const char *s, size_t max)
{
	memset(cpus, 0xff, sizeof(cpus));
	return lp_parse_cpulist(s, strlen(s), cpus, max);
}

static void test_cpulist_valid(void **state)
{
	static const uint32_t want[] = {0, 1, 2, 3, 8, 10, 11};

	assert_int_equal(parse("0", LP_MAX_CPUS), 1);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(parse("0-1\n", LP_MAX_CPUS), 2);
	assert_int_equal(cpus[0], 0);
	assert_int_equal(cpus[1], 1);
	assert_int_equal(parse("0-3,8,10-11", LP_MAX_CPUS), 7);
	assert_memory_equal(cpus, want, sizeof(want));
	assert_int_equal(cpus[7], UINT32_MAX); /* nothing written past the count */
	assert_int_equal(parse("5", LP_MAX_CPUS), 1);
	assert_int_equal(cpus[0], 5);
	assert_int_equal(parse("2-2", LP_MAX_CPUS), 1);
	assert_int_equal(cpus[0], 2);
	assert_int_equal(parse("007", LP_MAX_CPUS), 1);
	assert_int_equal(cpus[0], 7);

	/* the highest id, and every id, fit */
	assert_int_equal(parse("4095", LP_MAX_CPUS), 1);
	assert_int_equal(cpus[0], LP_MAX_CPUS - 1);
	assert_int_equal(parse("0-4095\n", LP_MAX_CPUS), LP_MAX_CPUS);
	assert_int_equal(cpus[LP_MAX_CPUS - 1], LP_MAX_CPUS - 1);

	/* exactly max CPUs fit */
	assert_int_equal(parse("0-3", 4), 4);

	/* a read() of a sysfs file into a zeroed buffer may leave NULs after "\n" */
	memset(cpus, 0, sizeof(cpus));
	assert_int_equal(lp_parse_cpulist("0-1\n\0\0", 6, cpus, LP_MAX_CPUS), 2);
	/* only the first len bytes count */
	assert_int_equal(lp_parse_cpulist("0-1,9", 3, cpus, LP_MAX_CPUS), 2);
}

static void test_cpulist_malformed(void **state)
{
	static const char *const bad[] = {
		"",	  "\n",	   "1-0", "3,1",  "1,1",    "0-3,2",
		"0,,1",	  "a",	   "0,",  "0-3,", ",0",	    "-1",
		"0-",	  "0--1",  " 0",  "0 ",	  "0\n1",   "0-1\n\n1",
		"+1",	  "1-2-3", "0x1", "4096", "0-4096", "99999999999999999999",
		"0,4096", "\n0",   "0\t",
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int n = parse(bad[i], LP_MAX_CPUS);

		if (n != -EBADMSG)
			fail_msg("cpulist %zu \"%s\" returned %d", i, bad[i], n);
	}
	/* more CPUs than max */
	assert_int_equal(parse("0-3", 3), -EBADMSG);
	assert_int_equal(parse("0,2", 1), -EBADMSG);
	assert_int_equal(parse("0", 0), -EBADMSG);
	/* a NUL inside the list is not a terminator */
	assert_int_equal(lp_parse_cpulist("0\0"
					  "1",
					  3, cpus, LP_MAX_CPUS),
			 -EBADMSG);
}

static void test_online_cpus(void **state)
{
	long sys = sysconf(_SC_NPROCESSORS_ONLN);
	int n = lp_online_cpus(cpus, LP_MAX_CPUS);

	assert_true(n >= 1);
	if (sys > 0)
		assert_int_equal(n, sys);
	for (int i = 1; i < n; i++)
		assert_true(cpus[i] > cpus[i - 1]);
	assert_true(cpus[n - 1] < LP_MAX_CPUS);
	/* too small a buffer is an error, not a silent truncation */
	if (n > 1)
		assert_int_equal(lp_online_cpus(cpus, (size_t)n - 1), -EBADMSG);
}

static void test_roundup_pow2(void **state)
{
	assert_int_equal(lp_roundup_pow2(0), 1);
	assert_int_equal(lp_roundup_pow2(1), 1);
	assert_int_equal(lp_roundup_pow2(2), 2);
	assert_int_equal(lp_roundup_pow2(3), 4);
	assert_int_equal(lp_roundup_pow2(4), 4);
	assert_int_equal(lp_roundup_pow2(5), 8);
	assert_int_equal(lp_roundup_pow2(4095), 4096);
	assert_int_equal(lp_roundup_pow2(4097), 8192);
	assert_int_equal(lp_roundup_pow2(UINT32_MAX), 1ull << 32);
	assert_int_equal(lp_roundup_pow2((1ull << 32) + 1), 1ull << 33);
	assert_int_equal(lp_roundup_pow2((1ull << 62) + 1), 1ull << 63);
	assert_int_equal(lp_roundup_pow2((1ull << 63) - 1), 1ull << 63);
	assert_int_equal(lp_roundup_pow2(1ull << 63), 1ull << 63);
	for (int b = 0; b < 64; b++)
		assert_int_equal(lp_roundup_pow2(1ull << b), 1ull << b);
	/* not representable: 0, and it returns (it used to loop forever) */
	assert_int_equal(lp_roundup_pow2((1ull << 63) + 1), 0);
	assert_int_equal(lp_roundup_pow2(UINT64_MAX), 0);
}

static int is_pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

static void test_shm_ring_size(void **state)
{
	static const uint32_t freqs[] = {1, 19, 49, 99, 100, 997, 1000, 4999, 10000};
	uint64_t prev_cpu;

	/* the floor: small machines and zeros get 4 MiB */
	assert_int_equal(LP_SHM_RING_MIN, 4u << 20);
	assert_int_equal(lp_shm_ring_size(0, 0, 0), LP_SHM_RING_MIN);
	/* the ceiling: the memory budget, a power of two the ring can hold */
	assert_int_equal(LP_SHM_RING_BUDGET, 64u << 20);
	assert_true(is_pow2(LP_SHM_RING_BUDGET) && LP_SHM_RING_BUDGET <= LP_SHM_RING_MAX);
	assert_int_equal(lp_shm_ring_size(LP_MAX_CPUS, 10000, 1u << 20), LP_SHM_RING_BUDGET);
	assert_int_equal(lp_shm_ring_size(1, 99, 4096), LP_SHM_RING_MIN);
	assert_int_equal(lp_shm_ring_size(2, 99, 4096), LP_SHM_RING_MIN);
	/* 2 s of records an eighth of the largest: 16 * 1000 * 2 * 4096 / 8 = 16384000 -> 2^24 */
	assert_int_equal(lp_shm_ring_size(16, 1000, 4096), 1ull << 24);
	/* exactly a power of two stays as is: 32 * 1024 * 2 * 4096 / 8 = 2^25 */
	assert_int_equal(lp_shm_ring_size(32, 1024, 4096), 1ull << 25);
	/* 128 * 1000 * 2 * 4096 / 8 = 131072000: over the budget */
	assert_int_equal(lp_shm_ring_size(128, 1000, 4096), LP_SHM_RING_BUDGET);
	/* the largest configuration the collector allows (freq <= 10000): capped */
	assert_int_equal(lp_shm_ring_size(LP_MAX_CPUS, 10000, 4096), LP_SHM_RING_BUDGET);
	/*
	 * The default 16 KiB copy (records of at most 18,544 bytes): 2 CPUs
	 * at 99 / 999 / 4999 Hz, 64 CPUs at 99 Hz (the memory goal: 32 MiB),
	 * 256 at 99 Hz (the budget)
	 */
	assert_int_equal(lp_shm_ring_size(2, 99, 18544), LP_SHM_RING_MIN);
	assert_int_equal(lp_shm_ring_size(2, 999, 18544), 16u << 20);
	assert_int_equal(lp_shm_ring_size(2, 4999, 18544), 64u << 20);
	assert_int_equal(lp_shm_ring_size(64, 99, 18544), 32u << 20);
	assert_int_equal(lp_shm_ring_size(256, 99, 18544), LP_SHM_RING_BUDGET);

	for (size_t f = 0; f < sizeof(freqs) / sizeof(freqs[0]); f++) {
		prev_cpu = 0;
		for (uint32_t n = 1; n <= LP_MAX_CPUS; n += n < 16 ? 1 : 37) {
			uint64_t sz = lp_shm_ring_size(n, freqs[f], 4096);

			assert_true(sz >= LP_SHM_RING_MIN);
			assert_true(is_pow2(sz));
			uint64_t want = (uint64_t)n * freqs[f] * 2 * 4096 / 8;

			assert_true(sz >= (want < LP_SHM_RING_BUDGET ? want : LP_SHM_RING_BUDGET));
			assert_true(sz <= LP_SHM_RING_BUDGET);
			assert_true(sz >= prev_cpu); /* monotonic in cpus */
			prev_cpu = sz;
			if (f > 0) /* monotonic in freq */
				assert_true(sz >= lp_shm_ring_size(n, freqs[f - 1], 4096));
		}
	}
}

/*
 * The BPF ring (collector/sizing.c): two drain intervals of the largest
 * records, a power of two, at least 64 KiB, within the budget.
 */
static void test_bpf_ring_size(void **state)
{
	static const uint32_t freqs[] = {1, 19, 99, 100, 999, 4999, 10000};
	/* the largest on-CPU or off-CPU record with 16 KiB copies, its 8-byte header */
	const uint64_t rec = 2112 + 16384 + 8;

	assert_int_equal(COLL_BPF_RING_BUDGET, 8u << 20);
	assert_true(is_pow2(COLL_BPF_RING_BUDGET));
	assert_int_equal(coll_bpf_ring_size(0, 0, 0, 0, false), 64u << 10);
	assert_int_equal(coll_bpf_ring_size(1, 1, 100, 0, false), 64u << 10);
	/* 2 x 99 x 0.1 s x rec x 2 = 733 KiB -> 1 MiB; x 10 -> 8 MiB */
	assert_int_equal(coll_bpf_ring_size(2, 99, 100, 16384, false), 1u << 20);
	assert_int_equal(coll_bpf_ring_size(2, 999, 100, 16384, false), 8u << 20);
	/* 2 x 4999: 37 MB before the budget (64 MiB once rounded up) */
	assert_int_equal(coll_bpf_ring_size(2, 4999, 100, 16384, false), COLL_BPF_RING_BUDGET);
	/* 64 CPUs at 99 Hz (the memory goal): 23 MB before the budget */
	assert_int_equal(coll_bpf_ring_size(64, 99, 100, 16384, false), COLL_BPF_RING_BUDGET);
	assert_int_equal(coll_bpf_ring_size(64, 999, 100, 16384, false), COLL_BPF_RING_BUDGET);
	assert_int_equal(coll_bpf_ring_size(LP_MAX_CPUS, 10000, 60000, COLL_MAX_STACK_BYTES, true),
			 COLL_BPF_RING_BUDGET);
	/* --off-cpu adds 1000 records per CPU-second: 2 x 1099 x 0.1 s x rec x 2 -> 8 MiB */
	assert_int_equal(coll_bpf_ring_size(2, 99, 100, 16384, true), 8u << 20);
	for (size_t f = 0; f < sizeof(freqs) / sizeof(freqs[0]); f++) {
		uint64_t prev = 0;

		for (uint32_t n = 1; n <= LP_MAX_CPUS; n += n < 16 ? 1 : 37) {
			uint64_t sz = coll_bpf_ring_size(n, freqs[f], 100, 16384, false);
			uint64_t want = n * (uint64_t)freqs[f] * rec * 2 / 10;

			assert_true(is_pow2(sz));
			assert_true(sz >=
				    (want < COLL_BPF_RING_BUDGET ? want : COLL_BPF_RING_BUDGET));
			assert_true(sz <= COLL_BPF_RING_BUDGET);
			assert_true(sz >= prev);
			prev = sz;
			if (f > 0)
				assert_true(sz >=
					    coll_bpf_ring_size(n, freqs[f - 1], 100, 16384, false));
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cpulist_valid), cmocka_unit_test(test_cpulist_malformed),
		cmocka_unit_test(test_online_cpus),   cmocka_unit_test(test_roundup_pow2),
		cmocka_unit_test(test_shm_ring_size), cmocka_unit_test(test_bpf_ring_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
