/* SPDX-License-Identifier: MIT */
/*
 * The names of a spool's window files, "KIND-YYYYmmddTHHMMSSZ-SEQ.pb.gz",
 * or "KIND-YYYYmmddTHHMMSSZ-SEQ.sKofN.pb.gz" for shard K (1..N, N >= 2) of
 * a run split over N symbolizers (lowprof/shard.h), and of their metrics
 * files, "metrics.prom" or "metrics-sKofN.prom" (symbolizer/spool.c writes
 * them), for every reader of a spool: lowprof windows and merge, the
 * exporter. A name is data from a directory anyone of the spool's user can
 * write: parsed strictly, or refused.
 */
#ifndef LOWPROF_SPOOLNAME_H
#define LOWPROF_SPOOLNAME_H

#include <stddef.h>
#include <stdint.h>

#include "lowprof/shard.h"

/* "cpu", "offcpu": the kinds of window, in the order readers list them */
#define LP_SPOOL_KINDS 2
extern const char *const lp_spool_kinds[LP_SPOOL_KINDS];

/* The longest name a spool file has (without the terminator). */
#define LP_SPOOL_NAME_MAX 63

/*
 * "YYYYmmddTHHMMSSZ-SEQ", exactly s[0..len): the time (seconds since the
 * epoch, a date that exists) and the number (six digits or more, as %06
 * prints, at most 18), as window files and rotated captures
 * (collector/capdir.c) are named. 0 or -EINVAL.
 */
int lp_name_time_seq(const char *s, size_t len, int64_t *start_s, uint64_t *seq);

/*
 * Parses a window file's name (not its path): its kind (index into
 * lp_spool_kinds), its start from the name (seconds since the epoch; a
 * date that exists) and its number (six digits or more, as %06 prints).
 * 0, or -EINVAL for any other name (temporary ".tmp-" ones included).
 */
int lp_spool_parse_name(const char *name, int *kind, int64_t *start_s, uint64_t *seq);

/*
 * A shard's part of a name: ".s" K "of" N, K counted from 1 (shard K-1 of
 * lowprof/shard.h), N from 2 to LP_MAX_SHARDS, no leading zero.
 */
#define LP_SPOOL_SHARD_FMT ".s%uof%u"

/* A window file's name, parsed (lp_spool_parse). */
struct lp_spool_name {
	int kind; /* index into lp_spool_kinds */
	int64_t start_s;
	uint64_t seq;
	uint32_t shard;	  /* 0..nshards-1 */
	uint32_t nshards; /* 1: a name without a shard */
};

/* As lp_spool_parse_name, with the shard part (optional). 0 or -EINVAL. */
int lp_spool_parse(const char *name, struct lp_spool_name *out);

/*
 * A metrics file's name: "metrics.prom" (*nshards 1) or "metrics-sKofN.prom"
 * (no dot before the s). 0 or -EINVAL.
 */
int lp_spool_parse_metrics(const char *name, uint32_t *shard, uint32_t *nshards);

/*
 * The streams of window files a spool can hold: one without shards, then
 * one per (shard, nshards). lp_spool_stream: a name's stream, a dense
 * index below LP_SPOOL_STREAMS, for tables kept per stream.
 */
#define LP_SPOOL_STREAMS (LP_MAX_SHARDS * (LP_MAX_SHARDS + 1) / 2)
static inline unsigned lp_spool_stream(uint32_t shard, uint32_t nshards)
{
	return nshards <= 1 ? 0 : nshards * (nshards - 1) / 2 + shard;
}

#endif /* LOWPROF_SPOOLNAME_H */
