// SPDX-License-Identifier: MIT
/*
 * The collector's shards in numbers (collector/shards.c): each ring's size
 * from the budget, and each ring's loss record from the run's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "collector_int.h"
#include "lowprof/ring.h"
#include "lowprof/shard.h"

#define MiB (1ull << 20)

static void test_ring_size(void **state)
{
	(void)state;
	/* one ring: the budget as it is */
	assert_int_equal(coll_shard_ring_size(4 * MiB, 1), 4 * MiB);
	assert_int_equal(coll_shard_ring_size(4 * MiB, 0), 4 * MiB);
	/* divided, rounded down to a power of two */
	assert_int_equal(coll_shard_ring_size(64 * MiB, 2), 32 * MiB);
	assert_int_equal(coll_shard_ring_size(64 * MiB, 3), 16 * MiB);
	assert_int_equal(coll_shard_ring_size(48 * MiB, 2), 16 * MiB);
	/* never below what holds the largest record twice */
	assert_int_equal(coll_shard_ring_size(4 * MiB, 2), COLL_SHARD_RING_MIN);
	assert_int_equal(coll_shard_ring_size(4 * MiB, LP_MAX_SHARDS), COLL_SHARD_RING_MIN);
	assert_true(COLL_SHARD_RING_MIN / 2 - LP_RING_REC_HDR >= LPS_MAX_RECORD - LP_RING_REC_HDR);
}

/* every field of a loss record, set to a distinct non-zero value */
static void fill(struct lps_loss *l)
{
	uint64_t *v = (uint64_t *)l;

	for (size_t i = 0; i < sizeof(*l) / sizeof(uint64_t); i++)
		v[i] = 1000 + i;
}

static void test_loss_split(void **state)
{
	struct lps_loss run, parts[3], sum;
	struct lp_ring_stats rs[3] = {
		{.dropped_records = 1, .dropped_bytes = 10, .bad_consumer_pos = 0},
		{.dropped_records = 2, .dropped_bytes = 20, .bad_consumer_pos = 3},
		{.dropped_records = 0, .dropped_bytes = 0, .bad_consumer_pos = 0},
	};
	uint64_t *s = (uint64_t *)&sum;

	(void)state;
	_Static_assert(sizeof(struct lps_loss) % sizeof(uint64_t) == 0, "u64 fields only");
	fill(&run);
	run.shm_dropped = 3;
	run.shm_dropped_bytes = 30;
	run.bad_consumer_pos = 3;
	memset(&sum, 0, sizeof(sum));
	for (uint32_t i = 0; i < 3; i++) {
		const uint64_t *p = (const uint64_t *)&parts[i];

		coll_loss_split(&run, &rs[i], i, &parts[i]);
		assert_int_equal(parts[i].time_ns, run.time_ns);
		assert_int_equal(parts[i].shm_dropped, rs[i].dropped_records);
		assert_int_equal(parts[i].shm_dropped_bytes, rs[i].dropped_bytes);
		assert_int_equal(parts[i].bad_consumer_pos, rs[i].bad_consumer_pos);
		for (size_t j = 0; j < sizeof(sum) / sizeof(uint64_t); j++)
			s[j] += p[j];
	}
	/* the whole run's counters in ring 0's record only */
	assert_int_equal(parts[0].bpf_samples, run.bpf_samples);
	assert_int_equal(parts[1].bpf_samples, 0);
	assert_int_equal(parts[2].maps_errors, 0);
	assert_int_equal(parts[2].capture_dropped, 0);
	/* summed, the rings' records are the run's (but for the time) */
	sum.time_ns = run.time_ns;
	assert_memory_equal(&sum, &run, sizeof(run));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ring_size),
		cmocka_unit_test(test_loss_split),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
