/* SPDX-License-Identifier: MIT */
/*
 * A run's symbolization split over shards (lowprof/shard.h): lowprof record
 * --symbolizers N and lowprof replay -j N start N symbolizers with --shard
 * K/N --partial-fds; shards.c gives them memory files to write into and
 * makes the run's outputs and summary of what they wrote.
 */
#ifndef LOWPROF_CLI_SHARDS_H
#define LOWPROF_CLI_SHARDS_H

#include <stdbool.h>
#include <stdint.h>

#include "lowprof/shard.h"

/* what each shard writes, in the order of its --partial-fds */
enum { CLI_SHARD_CPU, CLI_SHARD_OFFCPU, CLI_SHARD_SUMMARY, CLI_SHARD_NFD };

/* zeroed: none open (cli_shards__close does nothing) */
struct cli_shards {
	uint32_t n;
	int fd[LP_MAX_SHARDS][CLI_SHARD_NFD]; /* memfds, close-on-exec; -1: none */
};

/* Memory files for n (2..LP_MAX_SHARDS) shards: 0, or -1 (said why). */
int cli_shards__open(struct cli_shards *s, uint32_t n);
/* Closes what is open; s is zeroed-like again. */
void cli_shards__close(struct cli_shards *s);

/*
 * The name a symbolizer goes by in lowprof's messages: shard k of n's
 * ("lowprof-symbolizer (shard 1 of 2)"), or with n <= 1 the program's.
 * Valid until the next call for the same k.
 */
const char *cli_shards__name(uint32_t k, uint32_t n);

/*
 * Once every shard has exited: prints their summaries in shard order
 * (unless quiet), merges their profiles and writes them to out_fds (pprof,
 * folded, HTML; then the off-CPU ones when off_cpu; -1: not written), and
 * prints the merged totals and top tables. *wrote_offcpu: an off-CPU
 * profile was written (a capture without off-CPU data has none). 0, or -1
 * (said why).
 */
int cli_shards__finish(const struct cli_shards *s, const int out_fds[6], bool off_cpu, bool quiet,
		       bool *wrote_offcpu);

#endif /* LOWPROF_CLI_SHARDS_H */
