/* SPDX-License-Identifier: MIT */
/*
 * Shards: the samples of a run split over several symbolizers by process,
 * so that symbolization scales apart from collection. The collector routes
 * each process's samples (and its JIT records) to the ring of its shard and
 * every other record (metadata, kernel symbols, mappings, process events,
 * loss counters) to all rings; a replay split over processes applies the
 * same rule to a capture. Each shard therefore sees the whole host's
 * mappings, and the outputs of all shards, merged, are those of one.
 */
#ifndef LOWPROF_SHARD_H
#define LOWPROF_SHARD_H

#include <stdbool.h>
#include <stdint.h>

/* the most symbolizers per collector (--symbolizers, replay -j) */
#define LP_MAX_SHARDS 16

/*
 * The shard (0..n-1) of process tgid among n: a multiplicative hash, so
 * that pids handed out in order spread evenly; 0 when n <= 1. The same on
 * both sides of a ring and in every replay: it is part of the contract.
 */
static inline uint32_t lp_shard_of(uint32_t tgid, uint32_t n)
{
	if (n <= 1)
		return 0;
	return (uint32_t)(((uint64_t)(uint32_t)(tgid * 0x9e3779b1u) * n) >> 32);
}

/*
 * A shard's profile (pprof has no title) carries its title in a comment
 * that starts so; lowprof takes it off when it merges the shards.
 */
#define LP_SHARD_TITLE "lowprof shard title: "

/* Whether records of schema kind `record` go to one shard (by pid), not to all. */
static inline bool lp_shard_by_pid(uint32_t record)
{
	return record == 2 /* sample */ || record == 12 /* perfmap */ || record == 16 /* jitdump */;
}

/*
 * The message that hands a ring over a --ring socket (lowprof-collector
 * --ring PATH to lowprof-symbolizer), with the ring's two descriptors:
 * how, 'F' (a fresh ring: read it from its start) or 'R' (a ring in use:
 * skip to the metadata sent again), then which shard of how many the ring
 * is. With one ring the collector sends `how` alone, as it did before
 * shards: shard 0 of 1. A symbolizer that knows only `how` refuses the
 * longer message (it is truncated), rather than take one shard for all.
 */
#define LP_SHARD_HELLO_FRESH   'F'
#define LP_SHARD_HELLO_RESUMED 'R'

struct lp_shard_hello {
	char how;
	uint8_t shard;	 /* < nshards */
	uint8_t nshards; /* 1..LP_MAX_SHARDS */
	uint8_t zero;
};

#endif /* LOWPROF_SHARD_H */
