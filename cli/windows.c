// SPDX-License-Identifier: MIT
/*
 * lowprof windows: what a spool holds, read from the window files
 * themselves (every file is read whole and checked: lowprof/pprof_read.h).
 * Needs no privileges beyond reading the spool.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_int.h"
#include "lowprof/log.h"
#include "lowprof/spoolname.h"
#include "lowprof/pprof_read.h"
#include "record.h"

const char lp_windows_usage[] =
	"Usage: lowprof windows [-k cpu|offcpu] [DIR]\n"
	"\n"
	"Lists the windows 'lowprof run' wrote into spool DIR (default\n" LP_RUN_DEFAULT_SPOOL
	"), one line per file, by kind, then window number:\n"
	"  kind  seq  start (UTC)  duration  samples  seconds  lost  bytes\n"
	"duration in seconds; samples: the sum of the samples/count values; seconds:\n"
	"the sum of the other value (cpu or off_cpu, nanoseconds) in seconds; lost:\n"
	"the samples the window's comments say were lost (ring buffers full, stack\n"
	"errors, malformed records; off-CPU samples lost), '-' when not reported;\n"
	"bytes: the file's size. A run split over symbolizers (--symbolizers)\n"
	"writes a file per shard and window, seq shown as NUMBER.sKofN. Each kind\n"
	"ends with a total line ('KIND total': earliest start, span to the latest\n"
	"end, sums over every shard) and a line per gap in the numbers (windows\n"
	"removed for the spool's budget, or never written; a number is there when\n"
	"any shard's file is) and per shard missing a number others have. Files\n"
	"named with a leading '.' (being written) or not as windows are skipped.\n"
	"Every file is read and checked: one that fails is listed with the reason\n"
	"and the others still are.\n"
	"\n"
	"Options:\n"
	"  -k, --kind KIND  only the cpu or the offcpu windows\n"
	"  -h, --help       this help\n"
	"\n"
	"Exit status: 0 when every file was read, 1 otherwise, 2 on usage errors.\n";

/* A kind's sums, for its total line. */
struct win_total {
	size_t files, failed;
	size_t numbers; /* distinct window numbers (files of shards share one) */
	int64_t first_ns, last_end_ns;
	int64_t samples, value;
	uint64_t lost, bytes;
	bool ns; /* the value is in nanoseconds: printed as seconds */
	bool any;
};

static void print_value(int64_t v, bool ns)
{
	if (ns)
		printf(" %10.3f", v / 1e9);
	else
		printf(" %10" PRId64, v);
}

/* the seq column's width: its widest text (windows_main), at least 6 */
static int seq_w = 6;

/* "000012", or "000012.s1of2" for a shard's file, in buf */
static const char *seq_text(const struct cli_win_file *f, char *buf, size_t len)
{
	int w = snprintf(buf, len, "%06" PRIu64, f->seq);

	if (f->nshards > 1 && w > 0 && (size_t)w < len)
		snprintf(buf + w, len - (size_t)w, LP_SPOOL_SHARD_FMT, f->shard + 1, f->nshards);
	return buf;
}

/* Reads one window file and prints its line; false when it failed. */
static bool list_one(int dirfd, const struct cli_win_file *f, struct win_total *t)
{
	int fd = openat(dirfd, f->name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	const char *kind = cli_win_kinds[f->kind];
	const struct lpw_profile *p;
	int64_t samples = 0, value = 0;
	struct lpw_read *r = NULL;
	char why[256], when[32], seq[40];
	uint64_t lost;
	bool have_lost;
	int err;

	if (fd < 0 && errno == ENOENT) {
		/* the spool's budget removed it since the listing: not a failure */
		printf("%-6s %-*s  removed while listing\n", kind, seq_w,
		       seq_text(f, seq, sizeof(seq)));
		return true;
	}
	if (fd < 0) {
		snprintf(why, sizeof(why), "%s", strerror(errno));
		err = -errno;
	} else {
		err = lpw_read_pprof(fd, NULL, &r, why, sizeof(why));
		close(fd);
	}
	if (err) {
		printf("%-6s %-*s  error: %s: %s\n", kind, seq_w, seq_text(f, seq, sizeof(seq)),
		       f->name, why);
		return false;
	}
	p = lpw_read__profile(r);
	for (size_t i = 0; i < p->nstacks; i++) {
		samples += p->stacks[i].values[0];
		value += p->stacks[i].values[1];
	}
	have_lost = cli_losses(p, &lost);
	t->ns = !strcmp(p->value_types[1].unit, "nanoseconds");
	printf("%-6s %-*s  %-20s %9.3f %9" PRId64, kind, seq_w, seq_text(f, seq, sizeof(seq)),
	       cli_fmt_utc(when, sizeof(when), p->time_nanos), p->duration_nanos / 1e9, samples);
	print_value(value, t->ns);
	if (have_lost)
		printf(" %6" PRIu64, lost);
	else
		printf(" %6s", "-");
	printf(" %10" PRIu64 "\n", f->size);
	if (!t->any || p->time_nanos < t->first_ns)
		t->first_ns = p->time_nanos;
	if (!t->any || p->time_nanos + p->duration_nanos > t->last_end_ns)
		t->last_end_ns = p->time_nanos + p->duration_nanos;
	t->any = true;
	t->samples += samples;
	t->value += value;
	t->lost += lost;
	lpw_read__free(r);
	return true;
}

static void print_total(int kind, const struct win_total *t)
{
	char when[32];

	printf("%-6s %-*s  %-20s %9.3f %9" PRId64, cli_win_kinds[kind], seq_w, "total",
	       t->any ? cli_fmt_utc(when, sizeof(when), t->first_ns) : "-",
	       t->any ? (t->last_end_ns - t->first_ns) / 1e9 : 0.0, t->samples);
	print_value(t->value, t->ns);
	printf(" %6" PRIu64 " %10" PRIu64 "  (%zu windows", t->lost, t->bytes, t->numbers);
	if (t->numbers != t->files)
		printf(" in %zu files", t->files);
	if (t->failed)
		printf(", %zu unreadable", t->failed);
	printf(")\n");
}

/* The gaps in the numbers of v[0..n) (one kind, sorted): a number any file has is there. */
static void print_gaps(const struct cli_win_file *v, size_t n)
{
	for (size_t i = 1; i < n; i++) {
		uint64_t a = v[i - 1].seq + 1, b = v[i].seq - 1;

		if (v[i].seq <= v[i - 1].seq + 1)
			continue;
		if (a == b)
			printf("gap: %s window %" PRIu64, cli_win_kinds[v[i].kind], a);
		else
			printf("gap: %s windows %" PRIu64 "..%" PRIu64, cli_win_kinds[v[i].kind], a,
			       b);
		printf(" missing (removed for the budget or not written)\n");
	}
}

/* Whether v[0..n) (sorted) has shard k of nk's file of window seq, from *at on. */
static bool has_shard(const struct cli_win_file *v, size_t n, size_t *at, uint64_t seq, uint32_t k,
		      uint32_t nk)
{
	while (*at < n && v[*at].seq < seq)
		(*at)++;
	for (size_t i = *at; i < n && v[i].seq == seq; i++)
		if (v[i].nshards == nk && v[i].shard == k)
			return true;
	return false;
}

static void print_shard_gap(int kind, uint32_t k, uint32_t nk, uint64_t a, uint64_t b)
{
	if (a == b)
		printf("gap: %s window %" PRIu64, cli_win_kinds[kind], a);
	else
		printf("gap: %s windows %" PRIu64 "..%" PRIu64, cli_win_kinds[kind], a, b);
	printf(" missing shard %" PRIu32 "of%" PRIu32 "'s file (others have it)\n", k + 1, nk);
}

/*
 * The numbers of v[0..n) (one kind, sorted) for which some shard of a run
 * split in nk has a file and shard k has none: consecutive numbers of
 * that run in one line.
 */
static void print_shard_gaps(const struct cli_win_file *v, size_t n)
{
	for (uint32_t nk = 2; nk <= LP_MAX_SHARDS; nk++) {
		for (uint32_t k = 0; k < nk; k++) {
			bool open = false;
			uint64_t a = 0, b = 0;
			size_t at = 0;

			for (size_t i = 0; i < n; i++) {
				/* each number of this run once: its first file of nk */
				if (v[i].nshards != nk ||
				    (i && v[i - 1].seq == v[i].seq && v[i - 1].nshards == nk))
					continue;
				if (has_shard(v, n, &at, v[i].seq, k, nk)) {
					if (open)
						print_shard_gap(v[i].kind, k, nk, a, b);
					open = false;
				} else if (open) {
					b = v[i].seq;
				} else {
					open = true;
					a = b = v[i].seq;
				}
			}
			if (open)
				print_shard_gap(v[0].kind, k, nk, a, b);
		}
	}
}

static int list_windows(const char *dir, int only_kind)
{
	struct cli_win_file *v = NULL;
	size_t n = 0, failed = 0;
	int dirfd, err;

	dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd < 0) {
		lp_err("%s: %m%s", dir, cli_spool_hint(errno));
		return 1;
	}
	err = cli_win_scan(dirfd, &v, &n);
	if (err) {
		lp_err("%s: %s", dir, strerror(-err));
		close(dirfd);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		char seq[40];
		int w = (int)strlen(seq_text(&v[i], seq, sizeof(seq)));

		seq_w = w > seq_w ? w : seq_w;
	}
	printf("%-6s %-*s  %-20s %9s %9s %10s %6s %10s\n", "kind", seq_w, "seq", "start(UTC)",
	       "duration", "samples", "seconds", "lost", "bytes");
	for (int k = 0; k < CLI_WIN_KINDS; k++) {
		struct win_total t = {.ns = true};
		size_t first = n, cnt = 0;

		if (only_kind >= 0 && k != only_kind)
			continue;
		for (size_t i = 0; i < n; i++) {
			if (v[i].kind != k)
				continue;
			if (first == n)
				first = i;
			cnt++;
			t.files++;
			/* a shard's file of a number already counted is no other window */
			t.numbers += !(cnt > 1 && v[i].nshards > 1 && v[i - 1].seq == v[i].seq);
			t.bytes += v[i].size;
			if (!list_one(dirfd, &v[i], &t))
				t.failed++;
		}
		if (!cnt)
			continue;
		print_total(k, &t);
		print_gaps(v + first, cnt);
		print_shard_gaps(v + first, cnt);
		failed += t.failed;
	}
	if (!n)
		printf("(no window files in %s)\n", dir);
	free(v);
	close(dirfd);
	if (failed)
		lp_err("%zu window file%s could not be read", failed, failed == 1 ? "" : "s");
	return failed ? 1 : 0;
}

int lp_cmd_windows(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"kind", required_argument, NULL, 'k'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int opt, kind = -1;

	while ((opt = getopt_long(argc, argv, "k:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'k':
			kind = !strcmp(optarg, "cpu") ? 0 : !strcmp(optarg, "offcpu") ? 1 : -2;
			if (kind == -2) {
				lp_err("--kind %s: give cpu or offcpu", optarg);
				return 2;
			}
			break;
		case 'h':
			fputs(lp_windows_usage, stdout);
			return 0;
		default:
			fputs(lp_windows_usage, stderr);
			return 2;
		}
	}
	if (optind < argc - 1) {
		lp_err("give one spool directory (see lowprof windows --help)");
		return 2;
	}
	return list_windows(optind < argc ? argv[optind] : LP_RUN_DEFAULT_SPOOL, kind);
}
