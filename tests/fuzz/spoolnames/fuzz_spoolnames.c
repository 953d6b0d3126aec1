// SPDX-License-Identifier: MIT
/*
 * cli/spoolfiles.c's parsers on arbitrary bytes (up to the first NUL): as a
 * window file's name (a shard's too), as a metrics file's name and as a
 * comment line. Each must give back exactly what it accepted: the name rebuilt as symbolizer/spool.c names files,
 * the line with its numbers put back; anything else aborts.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_int.h"
#include "lowprof/spoolname.h"
#include "lowprof/writers.h"

static void check_name(const char *s)
{
	struct cli_win_file f;
	char when[32], name[96], sh[16] = "";
	uint32_t k, n;
	time_t t;
	struct tm tm;

	/* a metrics file's name: rebuilt as spool.c names it */
	if (!lp_spool_parse_metrics(s, &k, &n)) {
		if (n > 1)
			snprintf(name, sizeof(name), "metrics-s%uof%u.prom", k + 1, n);
		else
			snprintf(name, sizeof(name), "metrics.prom");
		if (k >= n || n > LP_MAX_SHARDS || strcmp(name, s))
			abort();
	}
	if (cli_win_parse_name(s, &f))
		return;
	if (f.nshards > 1)
		snprintf(sh, sizeof(sh), LP_SPOOL_SHARD_FMT, f.shard + 1, f.nshards);
	if (f.nshards < 1 || f.nshards > LP_MAX_SHARDS || f.shard >= f.nshards)
		abort();
	t = (time_t)f.start_s;
	if (f.kind < 0 || f.kind >= CLI_WIN_KINDS || !gmtime_r(&t, &tm) ||
	    !strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm))
		abort();
	snprintf(name, sizeof(name), "%s-%s-%06" PRIu64 "%s.pb.gz", cli_win_kinds[f.kind], when,
		 f.seq, sh);
	if (strcmp(name, s) || strcmp(f.name, s))
		abort();
}

static void check_counts(const char *s)
{
	const char *const lines[] = {s};
	struct lpw_profile p = {.comments = lines, .ncomments = 1};
	struct cli_counts c;
	char back[512];
	uint64_t lost;

	if (cli_counts_parse(s, &c)) {
		if (cli_losses(&p, &lost) || lost)
			abort();
		return;
	}
	if (c.n < 1 || c.n > CLI_MAX_COUNTS)
		abort();
	cli_counts_format(&c, back, sizeof(back));
	/* a loss line is one of the counter lines, not the restart count */
	if (strcmp(back, s) ||
	    cli_losses(&p, &lost) != (!strncmp(s, "lost: ", 6) || !strncmp(s, "off-CPU: ", 9)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_name(s);
	check_counts(s);
	free(s);
	return 0;
}
