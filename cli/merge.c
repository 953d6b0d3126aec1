// SPDX-License-Identifier: MIT
/*
 * lowprof merge: several profiles (lowprof run's windows) into one, for
 * looking at a longer stretch of time without a backend: the command line,
 * the inputs and the outputs; the merging is merge_model.c's.
 *
 * Each input is read whole and checked (lowprof/pprof_read.h), folded in
 * and freed before the next: memory follows the merged profile, not the
 * number of inputs. Outputs are opened only once every input has been
 * merged: a bad input leaves an existing output as it was.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_int.h"
#include "lowprof/files.h"
#include "lowprof/grow.h"
#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/pprof_read.h"
#include "merge.h"
#include "record.h"

const char lp_merge_usage[] =
	"Usage: lowprof merge [-o OUT.pb.gz] [--folded FILE] [--html FILE] INPUT...\n"
	"\n"
	"Merges pprof profiles written by lowprof (the windows of 'lowprof run',\n"
	"or record's cpu.pb.gz) into one. All inputs must have the same sample\n"
	"types: cpu and offcpu windows are merged apart. Samples with the same\n"
	"stack and labels (pid, comm, exe, cgroup, container.id, k8s.pod.uid) are\n"
	"summed; the profile starts at the earliest input's start and lasts to the\n"
	"latest one's end. Its comments say which windows it holds ('lowprof merge:\n"
	"N windows, SEQ a..b', and the numbers missing between them), and the\n"
	"inputs' counters ('lost: ...', 'off-CPU: ...', collector restarts) are\n"
	"summed.\n"
	"The same inputs in the same order give the same bytes.\n"
	"\n"
	"An INPUT that is a directory stands for the window files in it (as\n"
	"'lowprof windows' lists them) of one --kind, oldest first, optionally\n"
	"only the newest (--last) or the recent ones (--since). The last hour of a\n"
	"spool of 10 s windows, by their names' times or by shell globbing:\n"
	"  lowprof merge --since 1h -o hour.pb.gz --html hour.html /var/lib/lowprof/spool\n"
	"  lowprof merge -o hour.pb.gz $(ls SPOOL/cpu-*.pb.gz | tail -n 360)\n"
	"\n"
	"Outputs (at least one), written after every input was read; never through\n"
	"a symlink, into a hard-linked file or another user's, nor over an input;\n"
	"'-' is standard output:\n"
	"  -o, --output FILE       gzip'd pprof:  go tool pprof -top FILE\n"
	"      --folded FILE       folded stacks (comm;root;...;leaf VALUE)\n"
	"      --html FILE         interactive flame graph, works offline\n"
	"      --output-mode MODE  their mode (default 0600; 0644: readable by all)\n"
	"Directory inputs:\n"
	"  -k, --kind KIND         cpu (default) or offcpu windows\n"
	"      --last N            only the N highest-numbered windows\n"
	"      --since DURATION    only windows that started within DURATION of now\n"
	"                          (by the UTC time in their names): 90, 90s, 30m,\n"
	"                          1h, 2d\n"
	"  -h, --help              this help\n"
	"\n"
	"Exit status: 0 on success, 1 on errors (an input that cannot be read or\n"
	"does not fit is named), 2 on usage errors.\n";

/* Reads path and folds it into m: 0 or -1 (said why). */
static int merge_file(struct cli_merge *m, const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK), err;
	struct lpw_read *r = NULL;
	struct stat st;
	char why[256];

	if (fd < 0) {
		lp_err("%s: %m", path);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		lp_err("%s: not a regular file", path);
		close(fd);
		return -1;
	}
	err = lpw_read_pprof(fd, NULL, &r, why, sizeof(why));
	close(fd);
	if (err) {
		lp_err("%s: %s", path, why);
		return -1;
	}
	err = cli_merge__add(m, lpw_read__profile(r), path);
	lpw_read__free(r);
	return err ? -1 : 0;
}

/* ---- the command ---------------------------------------------------------- */

struct merge_opts {
	const char *out[3]; /* pprof, folded, HTML */
	mode_t mode;
	int kind;	 /* of directory inputs */
	uint64_t last;	 /* 0: all */
	int64_t since_s; /* 0: all */
	char **inputs;	 /* files, directories expanded */
	size_t ninputs, cap;
};

static int (*const writers[3])(const struct lpw_profile *,
			       int) = {lpw_write_pprof, lpw_write_folded, lpw_write_flamegraph};

static int add_input(struct merge_opts *o, char *path)
{
	if (!path || lp_grow((void **)&o->inputs, &o->cap, o->ninputs + 1, sizeof(*o->inputs), 64,
			     SIZE_MAX / sizeof(*o->inputs))) {
		free(path);
		lp_err("out of memory");
		return -1;
	}
	o->inputs[o->ninputs++] = path;
	return 0;
}

/* The window files of a directory input that the options select, oldest first. */
static int add_dir(struct merge_opts *o, const char *dir)
{
	int dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err;
	int64_t since = o->since_s ? (int64_t)time(NULL) - o->since_s : INT64_MIN;
	struct cli_win_file *v = NULL;
	size_t n = 0, first = 0, last;

	if (dirfd < 0) {
		lp_err("%s: %m%s", dir, cli_spool_hint(errno));
		return -1;
	}
	err = cli_win_scan(dirfd, &v, &n);
	close(dirfd);
	if (err) {
		lp_err("%s: %s", dir, strerror(-err));
		return -1;
	}
	/* sorted by kind, then number: the kind's run, then its newest */
	while (first < n && v[first].kind != o->kind)
		first++;
	for (last = first; last < n && v[last].kind == o->kind; last++)
		;
	/* the last N numbers: a number's shard files are one window */
	if (o->last) {
		size_t i = last;
		uint64_t nums = 0;

		while (i > first && (nums < o->last || v[i - 1].seq == v[i].seq)) {
			nums += i == last || v[i - 1].seq != v[i].seq;
			i--;
		}
		first = i;
	}
	for (size_t i = first; i < last && !err; i++) {
		char *path = NULL;

		if (v[i].start_s < since)
			continue;
		if (asprintf(&path, "%s/%s", dir, v[i].name) < 0)
			path = NULL;
		err = add_input(o, path);
	}
	free(v);
	return err;
}

/* An output that is also an input would be emptied before it is read. */
static bool output_is_input(const struct merge_opts *o)
{
	for (int i = 0; i < 3; i++) {
		struct stat so, si;

		if (!o->out[i] || stat(o->out[i], &so))
			continue;
		for (size_t k = 0; k < o->ninputs; k++)
			if (!stat(o->inputs[k], &si) && si.st_dev == so.st_dev &&
			    si.st_ino == so.st_ino) {
				lp_err("%s is an input too: give another output", o->out[i]);
				return true;
			}
	}
	return false;
}

/*
 * Writes the outputs ("-": standard output); a file that fails is removed.
 * 0 or -1 (said why).
 */
static int write_outputs(const struct merge_opts *o, const struct lpw_profile *p)
{
	int rc = 0;

	for (int i = 0; i < 3; i++) {
		const char *base;
		int dirfd = -1, fd;

		if (!o->out[i])
			continue;
		if (!strcmp(o->out[i], "-")) {
			if (writers[i](p, STDOUT_FILENO))
				rc = -1;
			continue;
		}
		fd = lp_open_output_path(o->out[i], o->mode, &dirfd);
		if (fd < 0) {
			lp_err("%s: %s", o->out[i], cli_output_strerror(fd, true));
			rc = -1;
			continue;
		}
		if (writers[i](p, fd) || fsync(fd)) {
			lp_err("%s: not written", o->out[i]);
			base = strrchr(o->out[i], '/');
			unlinkat(dirfd, base ? base + 1 : o->out[i], 0);
			rc = -1;
		}
		close(fd);
		close(dirfd);
	}
	return rc;
}

/* The merge comment and the totals: on stderr when an output is standard output. */
static void print_summary(const struct lpw_profile *p, const struct merge_opts *o)
{
	int64_t samples = 0, value = 0;
	FILE *f = stdout;

	for (size_t i = 0; i < p->nstacks; i++) {
		samples += p->stacks[i].values[0];
		value += p->stacks[i].values[1];
	}
	for (int i = 0; i < 3; i++)
		if (o->out[i] && !strcmp(o->out[i], "-"))
			f = stderr;
	fprintf(f,
		"%s\n%" PRId64 " samples, %s %.3f s, over %.3f s:", p->comments[p->ncomments - 1],
		samples, p->value_types[1].type, value / 1e9, p->duration_nanos / 1e9);
	for (int i = 0; i < 3; i++)
		if (o->out[i])
			fprintf(f, " %s", o->out[i]);
	fprintf(f, "\n");
}

static int run_merge(struct merge_opts *o)
{
	struct cli_merge *m;
	const struct lpw_profile *p;
	int rc = 1;

	if (!o->ninputs) {
		/* --last N keeps at least one of any: only --since can leave none */
		lp_err("no window files to merge (of --kind %s%s)", cli_win_kinds[o->kind],
		       o->since_s ? ", started within --since" : "");
		return 1;
	}
	if (output_is_input(o))
		return 1;
	m = cli_merge__new();
	if (!m) {
		lp_err("merging: out of memory");
		return 1;
	}
	for (size_t i = 0; i < o->ninputs; i++)
		if (merge_file(m, o->inputs[i]))
			goto out;
	p = cli_merge__profile(m);
	if (!p) {
		lp_err("merging: out of memory");
		goto out;
	}
	if (!write_outputs(o, p)) {
		print_summary(p, o);
		rc = 0;
	}
out:
	cli_merge__free(m);
	return rc;
}

/* "90", "90s", "30m", "1h", "2d": seconds (at most 100 years), or -1 */
static int64_t parse_duration(const char *s)
{
	static const char units[] = "smhd";
	static const int64_t mult[] = {1, 60, 3600, 86400};
	size_t n = strlen(s);
	const char *u = n ? memchr(units, s[n - 1], 4) : NULL;
	char num[24];
	uint64_t v;

	n -= u != NULL;
	if (!n || n >= sizeof(num))
		return -1;
	memcpy(num, s, n);
	num[n] = '\0';
	if (lp_parse_uint(num, 100ull * 365 * 86400, &v) || !v)
		return -1;
	return (int64_t)v * (u ? mult[u - units] : 1);
}

/* One option: -1 to go on, or the exit code. */
static int merge_opt(int key, const char *arg, struct merge_opts *o)
{
	uint64_t v;

	switch (key) {
	case 'o':
		o->out[0] = arg;
		break;
	case 'F':
		o->out[1] = arg;
		break;
	case 'H':
		o->out[2] = arg;
		break;
	case 'M':
		if (cli_parse_output_mode(arg, &o->mode))
			return 2;
		break;
	case 'k':
		o->kind = !strcmp(arg, "cpu") ? 0 : !strcmp(arg, "offcpu") ? 1 : -1;
		if (o->kind < 0) {
			lp_err("--kind %s: give cpu or offcpu", arg);
			return 2;
		}
		break;
	case 'L':
		if (lp_parse_uint(arg, UINT32_MAX, &v) || !v) {
			lp_err("--last %s: give a number of windows, 1 or more", arg);
			return 2;
		}
		o->last = v;
		break;
	case 'S':
		o->since_s = parse_duration(arg);
		if (o->since_s < 0) {
			lp_err("--since %s: give a duration such as 600, 90s, 30m, 1h, 2d", arg);
			return 2;
		}
		break;
	case 'h':
		fputs(lp_merge_usage, stdout);
		return 0;
	default:
		fputs(lp_merge_usage, stderr);
		return 2;
	}
	return -1;
}

int lp_cmd_merge(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"folded", required_argument, NULL, 'F'},
		{"html", required_argument, NULL, 'H'},
		{"output-mode", required_argument, NULL, 'M'},
		{"kind", required_argument, NULL, 'k'},
		{"last", required_argument, NULL, 'L'},
		{"since", required_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct merge_opts o = {.mode = LP_OUTPUT_MODE};
	int key, rc = -1;

	while (rc < 0 && (key = getopt_long(argc, argv, "o:k:h", longopts, NULL)) != -1)
		rc = merge_opt(key, optarg, &o);
	if (rc >= 0)
		return rc;
	if (!o.out[0] && !o.out[1] && !o.out[2]) {
		lp_err("give an output: -o FILE, --folded FILE or --html FILE (see lowprof merge "
		       "--help)");
		return 2;
	}
	if (optind == argc) {
		lp_err("give the profiles to merge (see lowprof merge --help)");
		return 2;
	}
	for (rc = 0; optind < argc && !rc; optind++) {
		struct stat st;

		if (!stat(argv[optind], &st) && S_ISDIR(st.st_mode))
			rc = add_dir(&o, argv[optind]);
		else
			rc = add_input(&o, strdup(argv[optind]));
	}
	if (!rc)
		rc = run_merge(&o);
	else
		rc = 1;
	for (size_t i = 0; i < o.ninputs; i++)
		free(o.inputs[i]);
	free(o.inputs);
	return rc;
}
