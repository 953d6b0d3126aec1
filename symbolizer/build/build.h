/* SPDX-License-Identifier: MIT */
/*
 * The profile model (lowprof/writers.h) built from ingest's aggregated
 * stacks, one profile per sample kind, and the end-of-run summary.
 *
 * What it is: one location per distinct frame of a kind's stacks, each
 * named once (ELF symbols, demangled, for user frames; the kernel snapshot
 * for kernel frames; DWARF inline frames and lines where the object has
 * them), and one mapping per object those frames use. It owns the built
 * profile's tables and nothing else: objects are loaded and looked up
 * through objects.h, counters of the stream come from ingest.h.
 *
 * What it is not: a writer (writers/), or anything that reads the stream.
 */
#ifndef LOWPROF_SYMB_BUILD_H
#define LOWPROF_SYMB_BUILD_H

#include <stdbool.h>
#include <stdint.h>

#include "ingest.h"
#include "lowprof/writers.h"

/* distinct frames named when a profile is built (each costs a location, a
 * name and a symbol lookup): real profiles have ~100k */
#define SYMB_MAX_LOCATIONS (1u << 21)

struct symb_built;

struct symb_build_stats {
	uint64_t over_limit_frames; /* frames named "[too many frames]" */
	uint64_t bad_offsets;	    /* user frames at an offset no slice holds */
};

/*
 * The profile of the samples of one kind: only their stacks, and only the
 * locations and mappings those use. Returns NULL with errno set on failure.
 * Each may be kept until s is freed (names and lines point into its
 * objects). Stores the DWARF results learnt in the cache
 * (symb_objects__store_lines). Destructor: symb_built_free (accepts NULL).
 */
struct symb_built *symb_build(struct symb_state *s, enum symb_kind kind);

/* A window of a service run (symb_state__new_window starts the next). */
struct symb_window {
	uint64_t seq;	       /* windows of a run count 0, 1, ...: gaps show */
	int64_t start_real_ns; /* CLOCK_REALTIME at its start */
	int64_t duration_ns;
	struct lps_loss loss; /* the collector's counters in it (differences) */
};

/* symb_build of the samples of a window: its times, number and losses. */
struct symb_built *symb_build_window(struct symb_state *s, enum symb_kind kind,
				     const struct symb_window *w);
const struct lpw_profile *symb_built_profile(const struct symb_built *b);
const struct symb_build_stats *symb_built_stats(const struct symb_built *b);
void symb_built_free(struct symb_built *b);

/*
 * The end-of-run summary. cpu is the on-CPU profile, offcpu the off-CPU
 * one; either may be NULL (not built, or building failed). The off-CPU part
 * is printed when off_cpu (the run profiled off-CPU time); else only the
 * off-CPU samples ignored, if any.
 */
void symb_print_summary(const struct symb_state *s, const struct symb_built *cpu,
			const struct symb_built *offcpu, bool off_cpu, int fd);

#endif /* LOWPROF_SYMB_BUILD_H */
