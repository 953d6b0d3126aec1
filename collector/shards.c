// SPDX-License-Identifier: MIT
/*
 * The collector's shards (lowprof/shard.h) in numbers: how big each ring
 * is and what each ring's loss record says. Pure functions, apart from the
 * collector so the unit tests can check them.
 */
#include <stdint.h>

#include "collector_int.h"
#include "lowprof/cpus.h"
#include "lowprof/ring.h"

uint64_t coll_shard_ring_size(uint64_t total, uint32_t nshards)
{
	return lp_shm_ring_share(total, nshards, COLL_SHARD_RING_MIN);
}

void coll_loss_split(const struct lps_loss *run, const struct lp_ring_stats *rs, uint32_t i,
		     struct lps_loss *out)
{
	*out = i ? (struct lps_loss){.time_ns = run->time_ns} : *run;
	out->shm_dropped = rs->dropped_records;
	out->shm_dropped_bytes = rs->dropped_bytes;
	out->bad_consumer_pos = rs->bad_consumer_pos;
}
