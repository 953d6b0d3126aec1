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

struct fn_total {
	const char *name;
	bool kernel;
	uint64_t self, total;
	uint64_t stamp; /* last stack that counted it in total */
};

static int cmp_str(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->kernel - (int)y->kernel;
}

static int cmp_self(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->self != y->self)
		return x->self < y->self ? 1 : -1;
	return cmp_str(a, b);
}

static int cmp_total(const void *a, const void *b)
{
	const struct fn_total *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? 1 : -1;
	return cmp_str(a, b);
}

static void print_top(int fd, const char *what, struct fn_total *f, size_t n, uint64_t all,
		      bool self)
{
	char name[LP_NAME_PRINT_MAX + 4];

	dprintf(fd, "Top functions by %s:\n", what);
	for (size_t i = 0; i < n && i < 10; i++) {
		uint64_t v = self ? f[i].self : f[i].total;

		if (!v)
			break;
		dprintf(fd, "  %6.2f%%  %8" PRIu64 "  %s%s\n", all ? 100.0 * v / all : 0.0, v,
			lp_sanitize_name(name, sizeof(name), f[i].name), f[i].kernel ? " [k]" : "");
	}
}

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
static void print_top_functions(const struct symb_state *s, const struct lpw_profile *p, int fd)
{
	struct fn_total *fns = NULL;
	uint32_t *fn_of_loc = NULL;
	size_t nfns = 0;
	uint64_t samples = symb_state__counters(s)->samples;

	if (!p || !p->nstacks || !samples)
		return;

	/* functions by name: map each location to one entry */
	fns = calloc(p->nlocations, sizeof(*fns));
	fn_of_loc = calloc(p->nlocations, sizeof(*fn_of_loc));
	if (!fns || !fn_of_loc)
		goto out;
	{
		struct fn_total *sorted = calloc(p->nlocations, sizeof(*sorted));

		if (!sorted)
			goto out;
		for (size_t i = 0; i < p->nlocations; i++) {
			sorted[i].name = p->locations[i].function;
			sorted[i].kernel = p->locations[i].kernel;
			sorted[i].self = i; /* remember the location while sorting */
		}
		qsort(sorted, p->nlocations, sizeof(*sorted), cmp_str);
		for (size_t i = 0; i < p->nlocations; i++) {
			if (!nfns || cmp_str(&fns[nfns - 1], &sorted[i]))
				fns[nfns++] = (struct fn_total){sorted[i].name, sorted[i].kernel};
			fn_of_loc[sorted[i].self] = (uint32_t)(nfns - 1);
		}
		free(sorted);
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		uint64_t v = (uint64_t)st->values[0];

		if (!st->nlocs)
			continue;
		fns[fn_of_loc[st->locs[0]]].self += v;
		for (uint32_t j = 0; j < st->nlocs; j++) {
			struct fn_total *f = &fns[fn_of_loc[st->locs[j]]];

			if (f->stamp != i + 1) {
				f->total += v;
				f->stamp = i + 1;
			}
		}
	}
	qsort(fns, nfns, sizeof(*fns), cmp_self);
	print_top(fd, "self", fns, nfns, samples, true);
	qsort(fns, nfns, sizeof(*fns), cmp_total);
	print_top(fd, "total", fns, nfns, samples, false);
out:
	free(fns);
	free(fn_of_loc);
}

/* ---- off-CPU summary ---------------------------------------------------- */

/* User frames shown per blocking stack (the innermost ones). */
#define BLOCK_USER_FRAMES 3
#define BLOCK_TOP	  5

/*
 * A blocking stack as the summary shows it: the process name, the innermost
 * user frames and the kernel function it blocked in. Stacks that look the
 * same (other pids, other call sites in the same functions) are merged.
 */
struct block_total {
	const char *comm;
	const char *user[BLOCK_USER_FRAMES]; /* innermost first; NULL past nuser */
	uint32_t nuser;
	const char *kernel; /* NULL: no kernel frames */
	uint64_t ns;
};

/*
 * Kernel frames of the switch itself (the scheduler, the tracepoint, the BPF
 * program) say nothing about why a thread blocked: the first frame below
 * them does (futex_wait_queue, ep_poll, pipe_read, do_nanosleep...).
 */
static bool is_switch_frame(const char *name)
{
	static const char *const prefixes[] = {
		"finish_task_switch", "__switch_to", "context_switch", "__traceiter_", "trace_",
		"perf_trace_",	      "bpf_",	     "__bpf_",
	};

	if (strstr(name, "schedule"))
		return true; /* __schedule, schedule_timeout, io_schedule... */
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++)
		if (strncmp(name, prefixes[i], strlen(prefixes[i])) == 0)
			return true;
	return false;
}

static void block_of(const struct lpw_profile *p, const struct lpw_stack *st,
		     struct block_total *out)
{
	uint32_t j = 0;

	memset(out, 0, sizeof(*out));
	out->comm = st->comm;
	out->ns = st->values[1] > 0 ? (uint64_t)st->values[1] : 0;
	for (; j < st->nlocs && p->locations[st->locs[j]].kernel; j++)
		if (!out->kernel && !is_switch_frame(p->locations[st->locs[j]].function))
			out->kernel = p->locations[st->locs[j]].function;
	if (!out->kernel && j)
		out->kernel = p->locations[st->locs[0]].function; /* only switch frames */
	for (; j < st->nlocs && out->nuser < BLOCK_USER_FRAMES; j++)
		out->user[out->nuser++] = p->locations[st->locs[j]].function;
}

static int cmp_opt_str(const char *a, const char *b)
{
	if (!a || !b)
		return (a != NULL) - (b != NULL);
	return strcmp(a, b);
}

static int cmp_block_key(const void *a, const void *b)
{
	const struct block_total *x = a, *y = b;
	int c = strcmp(x->comm, y->comm);

	if (!c)
		c = cmp_opt_str(x->kernel, y->kernel);
	if (!c && x->nuser != y->nuser)
		c = x->nuser < y->nuser ? -1 : 1;
	for (uint32_t i = 0; !c && i < x->nuser; i++)
		c = strcmp(x->user[i], y->user[i]);
	return c;
}

static int cmp_block_ns(const void *a, const void *b)
{
	const struct block_total *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns < y->ns ? 1 : -1;
	return cmp_block_key(a, b);
}

/* "  12.34%  1.23 s  comm: outer > inner > leaf > blocked_in [k]" */
static void print_block(int fd, const struct block_total *t, uint64_t all)
{
	char name[LP_NAME_PRINT_MAX + 4], ns[32];

	dprintf(fd, "  %6.2f%%  %10s  %s:", all ? 100.0 * (double)t->ns / (double)all : 0.0,
		symb_fmt_ns(ns, sizeof(ns), t->ns), lp_sanitize_name(name, sizeof(name), t->comm));
	for (uint32_t i = t->nuser; i-- > 0;)
		dprintf(fd, " %s%s", lp_sanitize_name(name, sizeof(name), t->user[i]),
			i || t->kernel ? " >" : "");
	if (t->kernel)
		dprintf(fd, " %s [k]", lp_sanitize_name(name, sizeof(name), t->kernel));
	dprintf(fd, "\n");
}

/* The stacks that were blocked longest (merged as block_total says). */
static void print_top_blocking(const struct symb_state *s, const struct lpw_profile *p, int fd)
{
	uint64_t all = symb_state__counters(s)->offcpu_ns;
	struct block_total *t;
	size_t n = 0;

	if (!p || !p->nstacks || !all)
		return;
	t = calloc(p->nstacks, sizeof(*t));
	if (!t)
		return;
	for (size_t i = 0; i < p->nstacks; i++) {
		block_of(p, &p->stacks[i], &t[i]);
	}
	qsort(t, p->nstacks, sizeof(*t), cmp_block_key);
	for (size_t i = 0; i < p->nstacks; i++) {
		if (n && cmp_block_key(&t[n - 1], &t[i]) == 0)
			t[n - 1].ns += t[i].ns;
		else
			t[n++] = t[i];
	}
	qsort(t, n, sizeof(*t), cmp_block_ns);
	dprintf(fd, "Top blocking stacks by off-CPU time:\n");
	for (size_t i = 0; i < n && i < BLOCK_TOP && t[i].ns; i++)
		print_block(fd, &t[i], all);
	free(t);
}

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
	print_top_functions(s, cpu ? symb_built_profile(cpu) : NULL, fd);
	if (off_cpu)
		print_top_blocking(s, offcpu ? symb_built_profile(offcpu) : NULL, fd);
}
