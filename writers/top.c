// SPDX-License-Identifier: MIT
/*
 * The top functions and blocking stacks of a profile (writers.h), as the
 * summaries print them: the symbolizer's at the end of a run, and lowprof's
 * of the merged profile of several shards. Everything printed comes from a
 * profile, from a stream or a binary: it is sanitized.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/hash.h"
#include "lowprof/text.h"
#include "lowprof/writers.h"

const char *lpw_fmt_ns(char *buf, size_t cap, uint64_t ns)
{
	if (ns >= 1000000000ull)
		snprintf(buf, cap, "%.2f s", ns / 1e9);
	else if (ns >= 1000000)
		snprintf(buf, cap, "%.2f ms", ns / 1e6);
	else if (ns >= 1000)
		snprintf(buf, cap, "%.2f us", ns / 1e3);
	else
		snprintf(buf, cap, "%" PRIu64 " ns", ns);
	return buf;
}

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

/* How many functions each list prints. */
#define TOP_N 10

/*
 * The first TOP_N of f[0, n) in cmp's order, into top[]; returns how many.
 * cmp is a total order on distinct functions (names and kernel flags are
 * unique), so these are the first TOP_N a full sort would give, in its
 * order, without sorting (or comparing by name) all of them.
 */
static size_t top_select(const struct fn_total *f, size_t n, int (*cmp)(const void *, const void *),
			 const struct fn_total **top)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		size_t j = k;

		if (k == TOP_N && cmp(&f[i], top[k - 1]) >= 0)
			continue;
		if (k < TOP_N)
			k++;
		else
			j = TOP_N - 1;
		for (; j > 0 && cmp(&f[i], top[j - 1]) < 0; j--)
			top[j] = top[j - 1];
		top[j] = &f[i];
	}
	return k;
}

static void print_top(int fd, const char *what, const struct fn_total *const *f, size_t n,
		      uint64_t all, bool self)
{
	char name[LP_NAME_PRINT_MAX + 4];

	dprintf(fd, "Top functions by %s:\n", what);
	for (size_t i = 0; i < n; i++) {
		uint64_t v = self ? f[i]->self : f[i]->total;

		if (!v)
			break;
		dprintf(fd, "  %6.2f%%  %8" PRIu64 "  %s%s\n", all ? 100.0 * v / all : 0.0, v,
			lp_sanitize_name(name, sizeof(name), f[i]->name),
			f[i]->kernel ? " [k]" : "");
	}
}

/*
 * Each location's function: fn_of_loc[i] indexes fns[], one entry per
 * distinct (name, kernel), found through an open-addressing table of the
 * names' hashes. Sets *nfns to the number of functions; returns 0, or
 * -ENOMEM.
 */
static int top_functions_of(const struct lpw_profile *p, struct fn_total *fns, uint32_t *fn_of_loc,
			    size_t *nfns)
{
	size_t cap = 16, n = 0;
	uint32_t *slots;
	uint64_t seed;

	while (cap < 2 * p->nlocations)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots)); /* fns index + 1; 0: empty */
	if (!slots)
		return -ENOMEM;
	seed = lp_hash_seed(slots);
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];
		size_t j = lp_hash_bytes(seed ^ l->kernel, l->function, strlen(l->function));

		for (j &= cap - 1; slots[j]; j = (j + 1) & (cap - 1)) {
			const struct fn_total *f = &fns[slots[j] - 1];

			if (f->kernel == l->kernel && !strcmp(f->name, l->function))
				break;
		}
		if (!slots[j]) {
			fns[n++] = (struct fn_total){l->function, l->kernel};
			slots[j] = (uint32_t)n;
		}
		fn_of_loc[i] = slots[j] - 1;
	}
	free(slots);
	*nfns = n;
	return 0;
}

void lpw_print_top_functions(const struct lpw_profile *p, int fd)
{
	const struct fn_total *top[TOP_N];
	struct fn_total *fns = NULL;
	uint32_t *fn_of_loc = NULL;
	size_t nfns = 0, ntop;
	uint64_t samples = 0;

	if (!p || !p->nstacks)
		return;
	for (size_t i = 0; i < p->nstacks; i++)
		samples += p->stacks[i].values[0] > 0 ? (uint64_t)p->stacks[i].values[0] : 0;
	if (!samples)
		return;

	/* functions by name: map each location to one entry */
	fns = calloc(p->nlocations, sizeof(*fns));
	fn_of_loc = calloc(p->nlocations, sizeof(*fn_of_loc));
	if (!fns || !fn_of_loc)
		goto out;
	if (top_functions_of(p, fns, fn_of_loc, &nfns))
		goto out;
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
	ntop = top_select(fns, nfns, cmp_self, top);
	print_top(fd, "self", top, ntop, samples, true);
	ntop = top_select(fns, nfns, cmp_total, top);
	print_top(fd, "total", top, ntop, samples, false);
out:
	free(fns);
	free(fn_of_loc);
}

/* ---- off-CPU: the longest blocks ----------------------------------------- */

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
		lpw_fmt_ns(ns, sizeof(ns), t->ns), lp_sanitize_name(name, sizeof(name), t->comm));
	for (uint32_t i = t->nuser; i-- > 0;)
		dprintf(fd, " %s%s", lp_sanitize_name(name, sizeof(name), t->user[i]),
			i || t->kernel ? " >" : "");
	if (t->kernel)
		dprintf(fd, " %s [k]", lp_sanitize_name(name, sizeof(name), t->kernel));
	dprintf(fd, "\n");
}

/* The stacks that were blocked longest (merged as block_total says). */
void lpw_print_top_blocking(const struct lpw_profile *p, int fd)
{
	uint64_t all = 0;
	struct block_total *t;
	size_t n = 0;

	if (!p || !p->nstacks)
		return;
	for (size_t i = 0; i < p->nstacks; i++)
		all += p->stacks[i].values[1] > 0 ? (uint64_t)p->stacks[i].values[1] : 0;
	if (!all)
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
