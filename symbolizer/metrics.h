/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's self-metrics in Prometheus' text format, written with
 * each window into the spool (spool.h: SYMB_SPOOL_METRICS), where the
 * exporter serves them on its /metrics with its own (exporter/run.c). What
 * it is not: a server; the symbolizer has no network.
 */
#ifndef LOWPROF_SYMB_METRICS_H
#define LOWPROF_SYMB_METRICS_H

#include "ingest.h"
#include "objects.h"
#include "spool.h"

/* Counters the state keeps per window, summed since the symbolizer started. */
struct symb_metrics_totals {
	uint64_t samples, offcpu_samples, bad_records, over_limit, restarts;
};

struct symb_metrics_in {
	const struct symb_counters *c; /* the window's; its losses: the collector's so far */
	const struct symb_metrics_totals
		*t; /* c's per-window counts summed, this window's included */
	const struct symb_objects_stats *os; /* objects and cache */
	const struct symb_spool_stats *sp;   /* windows written and removed */
	double window_lag_s;		     /* how late the last window was written */
	int statm_fd;			     /* /proc/self/statm (open before the sandbox), or -1 */
	pid_t collector_pid;		     /* its /proc/PID/statm is read too; 0: none */
	/*
	 * A shard's label, first on every sample ("shard=\"1of2\"":
	 * symb_spool__shard_label), so that shards' files summed count each
	 * sample once; NULL or "": none.
	 */
	const char *shard_label;
};

/* The page, appended to fd: 0 or -errno. */
int symb_metrics_write(int fd, const struct symb_metrics_in *in);

#endif /* LOWPROF_SYMB_METRICS_H */
