// SPDX-License-Identifier: MIT
/*
 * How big the collector makes what it sizes: the BPF ring buffer, the
 * off-CPU pending map and the largest sample record. Pure functions of the
 * settings, apart from the collector so the unit tests can check them.
 */
#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include "collector.h"
#include "collector_int.h"
#include "lowprof/cpus.h"
#include "lowprof/schema.h"

/* the BPF records: profile.h first, offcpu.h builds on it */
#include "profile.h"

#include "offcpu.h"

_Static_assert(COLL_MAX_STACK_BYTES == LP_BPF_MAX_STACK_COPY &&
		       COLL_MAX_STACK_BYTES <= LPS_MAX_STACK_COPY,
	       "stack copy limits disagree");

uint32_t coll_max_sample_record(uint32_t stack_bytes)
{
	_Static_assert(SAMPLE_ENC_SLACK + LP_EV_FRAMES_BYTES == LPS_SAMPLE_RECORD_MAX(0),
		       "sample record bound disagrees with the schema's");
	return LPS_SAMPLE_RECORD_MAX(stack_bytes);
}

uint64_t coll_bpf_ring_size(uint32_t online_cpus, uint32_t freq_hz, uint32_t drain_ms,
			    uint32_t stack_bytes, bool off_cpu)
{
	/* + the ring buffer's own 8-byte record header; off-CPU records are 16 bytes larger */
	uint64_t max_record = sizeof(struct lp_ev_offcpu) + stack_bytes + 8;
	uint64_t rate = freq_hz + (off_cpu ? COLL_OFFCPU_RECORDS_PER_CPU_S : 0);
	uint64_t want = (uint64_t)online_cpus * rate * drain_ms * max_record * 2 / 1000;

	if (want < 64 * 1024)
		want = 64 * 1024;
	if (want > COLL_BPF_RING_BUDGET)
		want = COLL_BPF_RING_BUDGET;
	return lp_roundup_pow2(want);
}

uint32_t coll_offcpu_pending_size(uint32_t online_cpus)
{
	return online_cpus * 64 > 128 ? online_cpus * 64 : 128;
}

_Static_assert(sizeof(struct lp_ev_offcpu) == sizeof(struct lp_ev_sample) + 8,
	       "the ring size formula assumes off-CPU records are the larger");
