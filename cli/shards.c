// SPDX-License-Identifier: MIT
/*
 * The outputs of a run split over shards (shards.h): each shard symbolizer
 * writes its partial profiles and its summary into memory files of its
 * own; once all have exited, their summaries are printed in shard order,
 * their profiles merged (merge.h, as one run's) and written as the run's
 * outputs, and the merged profile's totals and top functions printed.
 *
 * The partial profiles come from unprivileged processes: they are read
 * with the checking pprof reader, like any other input of lowprof merge.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "lowprof/pprof_read.h"
#include "lowprof/writers.h"
#include "merge.h"
#include "shards.h"

int cli_shards__open(struct cli_shards *s, uint32_t n)
{
	static const char *const names[CLI_SHARD_NFD] = {
		"lowprof-shard-cpu", "lowprof-shard-offcpu", "lowprof-shard-summary"};

	memset(s, 0, sizeof(*s));
	if (n < 2 || n > LP_MAX_SHARDS) {
		lp_err("shards: %u is not between 2 and %d", n, LP_MAX_SHARDS);
		return -1;
	}
	s->n = n;
	for (uint32_t k = 0; k < n; k++)
		for (int i = 0; i < CLI_SHARD_NFD; i++)
			s->fd[k][i] = -1;
	for (uint32_t k = 0; k < n; k++)
		for (int i = 0; i < CLI_SHARD_NFD; i++) {
			/* close-on-exec here: the spawn dup2s them to the shard's numbers */
			s->fd[k][i] = memfd_create(names[i], MFD_CLOEXEC);
			if (s->fd[k][i] < 0) {
				lp_err("shards: a memory file for shard %u's outputs: %m", k);
				cli_shards__close(s);
				return -1;
			}
		}
	return 0;
}

void cli_shards__close(struct cli_shards *s)
{
	for (uint32_t k = 0; k < s->n; k++)
		for (int i = 0; i < CLI_SHARD_NFD; i++) {
			if (s->fd[k][i] >= 0)
				close(s->fd[k][i]);
			s->fd[k][i] = -1;
		}
	s->n = 0;
}

const char *cli_shards__name(uint32_t k, uint32_t n)
{
	static char names[LP_MAX_SHARDS][48];

	if (n <= 1 || k >= LP_MAX_SHARDS)
		return "lowprof-symbolizer";
	snprintf(names[k], sizeof(names[k]), "lowprof-symbolizer (shard %u of %u)", k, n);
	return names[k];
}

/* A shard's summary, as it wrote it, to standard output. */
static void print_summary(int fd)
{
	char buf[8192];
	ssize_t n;

	if (lseek(fd, 0, SEEK_SET) < 0)
		return;
	fflush(stdout);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(STDOUT_FILENO, buf, (size_t)n) != n)
			break;
}

/*
 * The shards' profiles of one kind (i: CLI_SHARD_CPU or _OFFCPU) merged
 * into m: the number merged (empty files are shards that wrote none), or
 * -1 (said why).
 */
static int merge_kind(const struct cli_shards *s, int i, struct cli_merge *m)
{
	int merged = 0;

	for (uint32_t k = 0; k < s->n; k++) {
		struct lpw_read *r = NULL;
		char why[256] = "not readable", name[32];
		struct stat st;
		int err;

		if (fstat(s->fd[k][i], &st) || !st.st_size)
			continue;
		snprintf(name, sizeof(name), "shard %u", k);
		if (lseek(s->fd[k][i], 0, SEEK_SET) < 0 ||
		    (err = lpw_read_pprof(s->fd[k][i], NULL, &r, why, sizeof(why)))) {
			lp_err("%s's %s profile: %s", name,
			       i == CLI_SHARD_CPU ? "on-CPU" : "off-CPU", why);
			return -1;
		}
		err = cli_merge__add(m, lpw_read__profile(r), name);
		lpw_read__free(r);
		if (err)
			return -1;
		merged++;
	}
	return merged;
}

static int cmp_pid(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Distinct pids with samples in p and q (either may be NULL); sorted, not n^2: 20k stacks. */
static size_t count_pids(const struct lpw_profile *p, const struct lpw_profile *q)
{
	const struct lpw_profile *v[2] = {p, q};
	size_t n = 0, all = 0, seen = 0;
	uint32_t *pids;

	for (int j = 0; j < 2; j++)
		all += v[j] ? v[j]->nstacks : 0;
	pids = calloc(all ? all : 1, sizeof(*pids));
	if (!pids)
		return 0;
	for (int j = 0; j < 2; j++)
		for (size_t i = 0; v[j] && i < v[j]->nstacks; i++)
			pids[n++] = v[j]->stacks[i].pid;
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n; i++)
		seen += !i || pids[i] != pids[i - 1];
	free(pids);
	return seen;
}

static void totals(const struct lpw_profile *p, uint64_t *count, uint64_t *value)
{
	*count = *value = 0;
	for (size_t i = 0; p && i < p->nstacks; i++) {
		*count += p->stacks[i].values[0] > 0 ? (uint64_t)p->stacks[i].values[0] : 0;
		*value += p->stacks[i].values[1] > 0 ? (uint64_t)p->stacks[i].values[1] : 0;
	}
}

/* The merged profiles' totals, counters and top tables. */
static void print_merged(const struct cli_shards *s, const struct lpw_profile *cpu,
			 const struct lpw_profile *off)
{
	const struct lpw_profile *any = cpu ? cpu : off;
	uint64_t n, v;
	char ns[32];

	fflush(stdout);
	dprintf(STDOUT_FILENO, "\nlowprof summary: the %u shards merged\n", s->n);
	if (any)
		dprintf(STDOUT_FILENO, "  duration        %.2f s\n", any->duration_nanos / 1e9);
	totals(cpu, &n, &v);
	dprintf(STDOUT_FILENO, "  samples         %" PRIu64 " (%.3f s of CPU)\n", n, v / 1e9);
	if (off) {
		totals(off, &n, &v);
		dprintf(STDOUT_FILENO, "  off-CPU         %s in %" PRIu64 " samples\n",
			lpw_fmt_ns(ns, sizeof(ns), v), n);
	}
	dprintf(STDOUT_FILENO, "  processes seen  %zu\n", count_pids(cpu, off));
	/* the counters, summed over the shards (each counts what was its own) */
	for (size_t i = 0; any && i < any->ncomments; i++)
		if (!strncmp(any->comments[i], "lost: ", 6))
			dprintf(STDOUT_FILENO, "  %s\n", any->comments[i]);
	for (size_t i = 0; off && i < off->ncomments; i++)
		if (!strncmp(off->comments[i], "off-CPU: ", 9))
			dprintf(STDOUT_FILENO, "  %s\n", off->comments[i]);
	lpw_print_top_functions(cpu, STDOUT_FILENO);
	lpw_print_top_blocking(off, STDOUT_FILENO);
}

static int (*const writers[3])(const struct lpw_profile *,
			       int) = {lpw_write_pprof, lpw_write_folded, lpw_write_flamegraph};

int cli_shards__finish(const struct cli_shards *s, const int out_fds[6], bool off_cpu, bool quiet,
		       bool *wrote_offcpu)
{
	struct cli_merge *m[2] = {NULL, NULL};
	const struct lpw_profile *p[2] = {NULL, NULL};
	int rc = 0;

	*wrote_offcpu = false;
	if (!quiet)
		for (uint32_t k = 0; k < s->n; k++)
			print_summary(s->fd[k][CLI_SHARD_SUMMARY]);
	for (int j = 0; j < (off_cpu ? 2 : 1); j++) {
		int got;

		m[j] = cli_merge__new();
		if (!m[j]) {
			lp_err("merging the shards: out of memory");
			rc = -1;
			break;
		}
		cli_merge__set_shards(m[j]);
		got = merge_kind(s, j ? CLI_SHARD_OFFCPU : CLI_SHARD_CPU, m[j]);
		if (got < 0) {
			rc = -1;
			break;
		}
		if (!got)
			continue; /* none: no off-CPU data (replay), or no shard finished */
		p[j] = cli_merge__profile(m[j]);
		if (!p[j]) {
			lp_err("merging the shards: %m");
			rc = -1;
			break;
		}
		for (int i = 0; i < 3; i++)
			if (out_fds[3 * j + i] >= 0 && writers[i](p[j], out_fds[3 * j + i]))
				rc = -1;
		if (j)
			*wrote_offcpu = true;
	}
	if (!rc && !quiet)
		print_merged(s, p[0], p[1]);
	cli_merge__free(m[0]);
	cli_merge__free(m[1]);
	return rc;
}
