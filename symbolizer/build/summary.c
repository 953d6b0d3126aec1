// SPDX-License-Identifier: MIT
/*
 * The end-of-run summary (build.h): what was profiled, what was lost and
 * why, where symbols came from, and the top functions and blocking stacks.
 * Every name printed comes from a stream or a binary: it is sanitized.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "build.h"
#include "build_int.h"
#include "lowprof/text.h"

/* ", N what" when N is not 0: the optional parts of the "other losses" line. */
static void print_extra(int fd, uint64_t n, const char *what)
{
	if (n)
		dprintf(fd, ", %" PRIu64 " %s", n, what);
}

/* What the builds of a run counted, summed. */
static struct symb_build_stats build_stats(const struct symb_built *cpu,
					   const struct symb_built *offcpu)
{
	const struct symb_built *b[2] = {cpu, offcpu};
	struct symb_build_stats t = {0};

	for (int i = 0; i < 2; i++) {
		if (!b[i])
			continue;
		t.over_limit_frames += symb_built_stats(b[i])->over_limit_frames;
		t.bad_offsets += symb_built_stats(b[i])->bad_offsets;
	}
	return t;
}

static void print_other_losses(const struct symb_state *s, const struct symb_build_stats *bs,
			       int fd)
{
	const struct symb_counters *c = symb_state__counters(s);
	uint64_t over_limit_ksyms = symb_state__ksyms_stats(s)->over_limit;
	uint64_t bad_offsets = c->bad_offsets + bs->bad_offsets;
	const struct lps_loss *l = &c->loss;

	if (!(l->bpf_stack_errors || c->bad_records || c->unknown_records || l->maps_errors ||
	      l->bad_consumer_pos || l->bpf_task_lost || l->kstacks_hidden || c->bad_mappings ||
	      l->mmap_events_lost || bad_offsets || c->over_limit_mappings ||
	      c->over_limit_samples || over_limit_ksyms || bs->over_limit_frames ||
	      c->unknown_kinds))
		return;
	dprintf(fd,
		"  other losses    %" PRIu64 " stack errors, %" PRIu64
		" malformed records, %" PRIu64 " unknown records, %" PRIu64
		" unreadable /proc/PID/maps, %" PRIu64 " exec/exit events, %" PRIu64
		" invalid ring positions",
		l->bpf_stack_errors, c->bad_records, c->unknown_records, l->maps_errors,
		l->bpf_task_lost, l->bad_consumer_pos);
	print_extra(fd, l->kstacks_hidden, "kernel stacks left out (kernel addresses hidden)");
	print_extra(fd, l->mmap_events_lost, "mmap events lost");
	print_extra(fd, c->bad_mappings, "overlapping mappings");
	print_extra(fd, bad_offsets, "frames at impossible file offsets");
	print_extra(fd, c->over_limit_mappings, "mappings over limits");
	print_extra(fd, c->over_limit_samples, "samples over limits");
	print_extra(fd, over_limit_ksyms, "kernel symbols over limits");
	print_extra(fd, bs->over_limit_frames, "frames over limits");
	print_extra(fd, c->unknown_kinds, "samples of unknown kinds");
	dprintf(fd, "\n");
}

/*
 * What the collector did where the kernel lacked a feature (meta fallbacks),
 * once each, and how many stack copies took the fail-closed bounds.
 */
static void print_fallbacks(const struct symb_state *s, int fd)
{
	const struct lps_loss *l = &symb_state__counters(s)->loss;
	const struct symb_meta *m = symb_state__meta(s);
	char name[LPS_MAX_FALLBACK_NAME + 4];

	for (uint32_t i = 0; i < m->nfallbacks; i++) {
		const char *text = lps_fallback_text(
			(struct lps_str){m->fallbacks[i], (uint32_t)strlen(m->fallbacks[i])});

		dprintf(fd, "  fallback        %s\n",
			text ? text : lp_sanitize_name(name, sizeof(name), m->fallbacks[i]));
	}
	if (l->ustack_fp_fallback)
		dprintf(fd,
			"  stack copies    %" PRIu64
			" not made (no stack top known above the stack "
			"pointer): frame-pointer walks instead\n",
			l->ustack_fp_fallback);
}

/* How user stacks were unwound, and why walks ended before the outermost frame. */
static void print_unwinding(const struct symb_state *s, int fd)
{
	const struct symb_counters *c = symb_state__counters(s);
	uint64_t early = c->unwound - c->unwind_stops[SYMB_STOP_END];

	if (!c->unwound)
		return;
	dprintf(fd,
		"  user stacks     %" PRIu64 " unwound, %" PRIu64
		" to the outermost frame (%.1f%%)",
		c->unwound, c->unwind_stops[SYMB_STOP_END],
		100.0 * (double)c->unwind_stops[SYMB_STOP_END] / (double)c->unwound);
	if (c->unwind_fp_frames)
		dprintf(fd, ", %" PRIu64 " frames by frame pointers", c->unwind_fp_frames);
	dprintf(fd, "\n");
	if (!early)
		return;
	dprintf(fd, "  ended early     ");
	for (int r = 0, first = 1; r < SYMB_STOP__COUNT; r++) {
		if (r == SYMB_STOP_END || !c->unwind_stops[r])
			continue;
		dprintf(fd, "%s%s %" PRIu64, first ? "" : ", ", symb_unwind_stop_name(r),
			c->unwind_stops[r]);
		first = 0;
	}
	dprintf(fd, "\n");
}

/* JIT perf maps: what they held, and what they named. */
static void print_jit(const struct symb_state *s, int fd)
{
	const struct symb_counters *c = symb_state__counters(s);
	struct symb_jit_stats j;

	symb_state__jit_stats(s, &j);
	if (!j.lines && !j.bad_lines && !c->jit_frames)
		return;
	dprintf(fd,
		"  JIT symbols     %" PRIu64 " read from perf maps and jitdumps, %" PRIu64
		" frames named",
		j.lines, c->jit_frames);
	print_extra(fd, j.bad_lines, "malformed lines");
	print_extra(fd, j.dropped, "dropped (over the limits)");
	print_extra(fd, j.gap_bytes, "bytes missing");
	print_extra(fd, c->jit_names_dropped, "frames unnamed (names full)");
	print_extra(fd, c->jit_over_limit, "chunks left out (over the budget)");
	dprintf(fd, "\n");
}

/* Where symbols and stack deltas came from: the files or the cache. */
static void print_objects(const struct symb_state *s, int fd)
{
	const struct symb_objects_stats *c = symb_state__objects_stats(s);

	if (!c->parsed_symbols && !c->parsed_deltas && !c->cache_hits && !c->unreadable_objs &&
	    !c->mismatched_objs)
		return;
	dprintf(fd,
		"  binaries        loaded in %.1f ms: %" PRIu64 " tables from the cache, %" PRIu64
		" parsed (%" PRIu64 " symbol, %" PRIu64 " stack-delta), %" PRIu64 " stored",
		c->load_ns / 1e6, c->cache_hits, c->parsed_symbols + c->parsed_deltas,
		c->parsed_symbols, c->parsed_deltas, c->cache_stored);
	print_extra(fd, c->cache_bad, "bad cache rows");
	print_extra(fd, c->unreadable_objs, "unreadable");
	print_extra(fd, c->mismatched_objs, "not found by build-id");
	dprintf(fd, "%s\n", c->cache ? "" : " (no cache)");
	if (c->lines_cache_hits || c->lines_stored || c->dwarf_started)
		dprintf(fd,
			"  source lines    DWARF results of %" PRIu64
			" binaries from the cache, %" PRIu64 " stored; DWARF read from %" PRIu64
			" files\n",
			c->lines_cache_hits, c->lines_stored, c->dwarf_started);
}

/* Top functions of the on-CPU profile, by self and by total samples. */
/* Off-CPU time, settings and counters; or the samples ignored without --off-cpu. */
static void print_offcpu(const struct symb_state *s, bool off_cpu, int fd)
{
	const struct symb_counters *c = symb_state__counters(s);
	const struct symb_meta *m = symb_state__meta(s);
	const struct lps_loss *l = &c->loss;
	char set[160], ns[32];

	if (!off_cpu) {
		if (c->offcpu_ignored)
			dprintf(fd,
				"  off-CPU samples %" PRIu64
				" ignored (the symbolizer was not started with --off-cpu)\n",
				c->offcpu_ignored);
		return;
	}
	dprintf(fd, "  off-CPU         %s in %" PRIu64 " samples (%s)\n",
		symb_fmt_ns(ns, sizeof(ns), c->offcpu_ns), c->offcpu_samples,
		symb_offcpu_settings(m, set, sizeof(set)));
	if (c->have_loss)
		dprintf(fd,
			"  off-CPU blocks  %" PRIu64 " switches seen, %" PRIu64 " sampled, %" PRIu64
			" shorter than the minimum, %" PRIu64 " lost\n",
			l->off_cpu_switches, l->off_cpu_sampled, l->off_cpu_short, l->off_cpu_lost);
	if (m->have_meta && !m->offcpu.on && !c->offcpu_samples)
		dprintf(fd, "  note: the collector did not record off-CPU samples\n");
}

void symb_print_summary(const struct symb_state *s, const struct symb_built *cpu,
			const struct symb_built *offcpu, bool off_cpu, int fd)
{
	const struct symb_built *any = cpu ? cpu : offcpu;
	const struct lpw_profile *p = any ? symb_built_profile(any) : NULL;
	double secs = p ? p->duration_nanos / 1e9 : 0;
	const struct symb_counters *c = symb_state__counters(s);
	const struct symb_meta *m = symb_state__meta(s);
	struct symb_build_stats bs = build_stats(cpu, offcpu);
	const struct lps_loss *l = &c->loss;

	uint32_t nshards, shard = symb_state__shard(s, &nshards);

	if (nshards)
		dprintf(fd,
			"\nlowprof summary: shard %u of %u (%" PRIu64 " records, %" PRIu64
			" of other shards' processes skipped)\n",
			shard, nshards, c->records, c->other_shard);
	else
		dprintf(fd, "\nlowprof summary\n");
	dprintf(fd, "  duration        %.2f s\n", secs);
	dprintf(fd, "  samples         %" PRIu64 " (%.3f s of CPU)\n", c->samples,
		c->weight_ns / 1e9);
	print_offcpu(s, off_cpu, fd);
	dprintf(fd, "  processes seen  %u\n", c->pids_seen);
	dprintf(fd,
		"  samples lost    %" PRIu64 " (BPF ring full %" PRIu64
		", shared ring full %" PRIu64 ")\n",
		l->bpf_ringbuf_full + l->shm_dropped, l->bpf_ringbuf_full, l->shm_dropped);
	if (c->lag_peak_ns)
		dprintf(fd, "  lag             samples read at most %.3f s after they were taken\n",
			c->lag_peak_ns / 1e9);
	if (c->ring_bytes)
		dprintf(fd,
			"  ring            at most %.0f%% full (%.1f of %.1f MiB unread at a "
			"read)\n",
			100.0 * (double)c->ring_peak_bytes / (double)c->ring_bytes,
			c->ring_peak_bytes / 1048576.0, c->ring_bytes / 1048576.0);
	print_other_losses(s, &bs, fd);
	print_fallbacks(s, fd);
	if (c->unmapped_frames)
		dprintf(fd, "  unmapped frames %" PRIu64 " (shown as [unknown])\n",
			c->unmapped_frames);
	print_unwinding(s, fd);
	print_jit(s, fd);
	print_objects(s, fd);
	if (m->bpf_mem_bytes)
		dprintf(fd, "  BPF memory      %.1f MiB\n", m->bpf_mem_bytes / 1048576.0);
	if (!c->have_loss)
		dprintf(fd, "  note: no loss counters received (collector stopped early?)\n");
	if (nshards)
		return; /* lowprof prints them of the shards' profiles merged */
	lpw_print_top_functions(cpu ? symb_built_profile(cpu) : NULL, fd);
	if (off_cpu)
		lpw_print_top_blocking(offcpu ? symb_built_profile(offcpu) : NULL, fd);
}
