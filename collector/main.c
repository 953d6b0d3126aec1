// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "lowprof/cpus.h"
#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/user.h"

static const char usage[] =
	"Usage: lowprof-collector [OPTIONS] (--ring-fd FD,FD | --ring PATH | --capture FILE |\n"
	"                         --capture-dir DIR)\n"
	"\n"
	"The privileged half of lowprof: samples on-CPU stacks (and, with --off-cpu,\n"
	"where threads block and for how long) with BPF and writes\n"
	"schema records into a shared-memory ring that lowprof-symbolizer reads.\n"
	"It never parses ELF or other files a profiled process controls. After\n"
	"attaching it keeps only CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH: to read\n"
	"/proc/PID/maps, and to open files processes have mapped, read-only, for the\n"
	"symbolizer (which names them by process, device and inode; the collector\n"
	"never opens a path it names); and CAP_CHECKPOINT_RESTORE if it has it, to\n"
	"open a library deleted or replaced since it was mapped (/proc/PID/map_files).\n"
	"'lowprof record' starts it for you; run it alone to split collection and\n"
	"symbolization, e.g.:\n"
	"  lowprof-collector --ring /run/lowprof.sock -d 30 &\n"
	"  lowprof-symbolizer --ring /run/lowprof.sock -o out\n"
	"or to record now and symbolize later (lowprof replay FILE), with no ring:\n"
	"  lowprof-collector --capture /var/tmp/run.lpcap -d 30\n"
	"or on hosts that only collect, a capture per minute for a batch job elsewhere:\n"
	"  lowprof-collector --capture-dir /var/lib/lowprof/captures --capture-rotate 60\n"
	"\n"
	"Options:\n"
	"  -F, --freq HZ          samples per second per CPU (default 99, max 10000)\n"
	"  -d, --duration SECS    stop after SECS seconds (default: at SIGINT/SIGTERM)\n"
	"  -p, --pid PID          profile only this process and its threads (repeatable);\n"
	"                         files are opened for the symbolizer for these alone\n"
	"      --cgroup PATH      profile only processes in this cgroup v2 directory or\n"
	"                         below it (repeatable, at most 16): absolute, or relative\n"
	"                         to the hierarchy's root (/sys/fs/cgroup, or\n"
	"                         /sys/fs/cgroup/unified on hybrid hosts); filtered in\n"
	"                         BPF. With -p too, a process must pass both.\n"
	"      --ring PATH        create the ring and wait for a symbolizer to connect to\n"
	"                         the Unix socket PATH, which receives it read-only; the\n"
	"                         connection stays open for its requests for mapped\n"
	"                         files, and if it dies the next symbolizer to connect\n"
	"                         takes over (the socket is removed at exit)\n"
	"      --shards N         with --ring: N rings (at most 16), one symbolizer on\n"
	"                         each, the processes' samples split over them by pid\n"
	"                         (lowprof/shard.h); each symbolizer that connects gets\n"
	"                         the lowest shard that has none (default 1)\n"
	"      --ring-owner USER  the symbolizer's user (a name or a uid): owns the\n"
	"                         socket, the only uid besides root the ring is handed\n"
	"                         to and files are opened for (default " LP_USER_DEFAULT ", a\n"
	"                         system user of its own; deploy/install-deps.sh\n"
	"                         creates it)\n"
	"      --ring-size BYTES  data size of each ring for --ring, a power of two\n"
	"                         (default: sized from online CPUs and -F, 4-64 MiB,\n"
	"                         divided among the --shards rings)\n"
	"      --ring-fd DATA,CONS  produce into an inherited, sealed ring: its data and\n"
	"                         its consumer page (lowprof record); given again, the\n"
	"                         next shard's ring (at most 16)\n"
	"      --files-fd FD      answer requests for mapped files on this inherited\n"
	"                         Unix socket (SOCK_SEQPACKET; lowprof record), once per\n"
	"                         --ring-fd, in the same order. Files\n"
	"                         are opened by worker processes; one that takes over\n"
	"                         1 s (a hung file system) is answered with a timeout\n"
	"                         and its worker left behind (4 at most): the drain\n"
	"                         loop never waits for them\n"
	"      --capture FILE     also write every record to FILE, a capture file that\n"
	"                         'lowprof replay' turns into the same profile (created\n"
	"                         mode 0600: it holds copies of stacks; never through a\n"
	"                         symlink in its path, nor into a hard-linked file or\n"
	"                         another user's); with no ring the collector runs alone\n"
	"      --capture-fd FD    the same into an inherited file (lowprof record)\n"
	"      --capture-compress zstd|none  compress capture blocks with zstd where it\n"
	"                         saves an eighth or more (default zstd)\n"
	"      --capture-dir DIR  instead of one capture, one per window of\n"
	"                         --capture-rotate seconds from the start, each\n"
	"                         replayable alone (it starts with the metadata, kernel\n"
	"                         symbols and known mappings, and ends with an end\n"
	"                         record): DIR/capture-TIME-SEQ.lpcap, TIME the window's\n"
	"                         start (UTC), SEQ counting windows (after the highest\n"
	"                         there). A window's file is written as\n"
	"                         .capture-TIME-SEQ.lpcap.tmp and renamed when\n"
	"                         complete; with no ring the collector runs alone.\n"
	"                         DIR (made 0700 if missing; no symlink\n"
	"                         in its path) must be root's or ours and writable by\n"
	"                         no one else unless sticky; files are 0600\n"
	"      --capture-rotate SECS  the windows' length (default 60; 1 to 86400)\n"
	"      --capture-bytes SIZE  the directory's budget, e.g. 512M (default 1G): the\n"
	"                         oldest files are removed beyond it (never the newest)\n"
	"      --drain-ms MS      size the BPF ring buffer for MS of the largest samples\n"
	"                         (twice over, at most 8 MiB; default 100). It is\n"
	"                         drained when half full (the BPF programs wake the\n"
	"                         collector) and at least once a second (every MS if\n"
	"                         that wakeup cannot be watched)\n"
	"      --size-cpus N      size the BPF ring, the shared ring and the off-CPU\n"
	"                         table as if N CPUs were online (benchmarks: the\n"
	"                         memory of a bigger host; sampling is unchanged)\n"
	"      --stack-bytes N    user stack bytes copied per sample, from the stack\n"
	"                         pointer up, for unwinding code without frame pointers\n"
	"                         (default 16384, max 65536, multiple of 8; 0: frame-\n"
	"                         pointer walk in the kernel instead)\n"
	"      --off-cpu          also record off-CPU samples: voluntary blocks of user\n"
	"                         threads (sched_switch), each with the blocked time, the\n"
	"                         kernel stack where it blocked and, when it blocked in a\n"
	"                         syscall, its user stack\n"
	"      --off-cpu-mode MODE  which blocks are sampled (default time; event when\n"
	"                         only --off-cpu-rate is given):\n"
	"                         time:  a block of d ns with probability min(1, d/PERIOD),\n"
	"                                weighing max(d, PERIOD): long blocks always kept\n"
	"                         event: every block with probability RATE, weighing d/RATE\n"
	"                         Either way the weights add up to the blocked time.\n"
	"      --off-cpu-period-us T  time mode's PERIOD in microseconds (default 10000,\n"
	"                         max 4000000)\n"
	"      --off-cpu-rate P   event mode's RATE, 0 < P <= 1 (default 0.01; 1: every\n"
	"                         block)\n"
	"      --off-cpu-min-us N blocks shorter than N microseconds are counted, not\n"
	"                         recorded (default 0)\n"
	"      --full-btf         relocate the BPF programs against the full kernel BTF\n"
	"                         (/sys/kernel/btf/vmlinux, parsed whole by libbpf: ~11 MB\n"
	"                         more memory while loading) even when the minimal BTF\n"
	"                         built in fits this kernel; also LOWPROF_FULL_BTF=1\n"
	"      --include-self     profile lowprof's own processes too. By default they\n"
	"                         are left out in BPF (no record is made): this\n"
	"                         collector and the processes it starts, each\n"
	"                         symbolizer that takes the ring and what it starts,\n"
	"                         --self-pid's tree and, with --ring but no --self-pid,\n"
	"                         every process of the --ring-owner's uid unless root\n"
	"                         or nobody (the symbolizer's and exporter's services\n"
	"                         run as it: it must be lowprof's alone)\n"
	"      --self-pid PID     PID and the processes below it are lowprof's own, now\n"
	"                         and those they start (lowprof record and run pass\n"
	"                         their own pid)\n"
	"      --exit-with-parent exit when the parent process dies\n"
	"      --keep-caps        do not drop capabilities after attaching\n"
	"  -v, --verbose          more messages (repeat for debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 after a complete run, 1 on errors, 2 on usage errors.\n";

static const struct option longopts[] = {
	{"freq", required_argument, NULL, 'F'},
	{"duration", required_argument, NULL, 'd'},
	{"pid", required_argument, NULL, 'p'},
	{"cgroup", required_argument, NULL, 'G'},
	{"ring", required_argument, NULL, 'r'},
	{"ring-owner", required_argument, NULL, 'O'},
	{"ring-size", required_argument, NULL, 'S'},
	{"ring-fd", required_argument, NULL, 'R'},
	{"shards", required_argument, NULL, 'N'},
	{"files-fd", required_argument, NULL, 'f'},
	{"drain-ms", required_argument, NULL, 'D'},
	{"size-cpus", required_argument, NULL, 'U'},
	{"capture", required_argument, NULL, 'c'},
	{"capture-fd", required_argument, NULL, 'C'},
	{"capture-compress", required_argument, NULL, 'Z'},
	{"capture-dir", required_argument, NULL, 'w'},
	{"capture-rotate", required_argument, NULL, 'W'},
	{"capture-bytes", required_argument, NULL, 'Y'},
	{"stack-bytes", required_argument, NULL, 'B'},
	{"off-cpu", no_argument, NULL, 'o'},
	{"off-cpu-mode", required_argument, NULL, 'M'},
	{"off-cpu-period-us", required_argument, NULL, 'T'},
	{"off-cpu-rate", required_argument, NULL, 'A'},
	{"off-cpu-min-us", required_argument, NULL, 'm'},
	{"full-btf", no_argument, NULL, 'b'},
	{"exit-with-parent", no_argument, NULL, 'P'},
	{"include-self", no_argument, NULL, 'I'},
	{"self-pid", required_argument, NULL, 'X'},
	{"keep-caps", no_argument, NULL, 'K'},
	{"verbose", no_argument, NULL, 'v'},
	{"help", no_argument, NULL, 'h'},
	{},
};

/* The command line: coll_opts, and what the checks after parsing need. */
struct args {
	struct coll_opts o;
	pid_t pids[COLL_MAX_PIDS];
	const char *cgroups[COLL_MAX_CGROUPS];
	const char *prog; /* argv[0], for the log */
	enum lp_log_level level;
	const char *ring_owner; /* --ring-owner, or NULL */
	bool off_cpu_opts;	/* an --off-cpu-* option was given */
	bool mode_given, rate_given, period_given;
};

/*
 * What parse_args and the option callbacks return when the arguments are
 * fine so far; otherwise they return the exit code (0 after --help).
 */
#define ARGS_OK (-1)

/* An option's value is not one it takes: a usage error. */
static int bad_value(int key, const char *arg)
{
	for (const struct option *lo = longopts; lo->name; lo++)
		if (lo->val == key)
			lp_err("invalid value '%s' for --%s (see --help)", arg, lo->name);
	return 2;
}

static void args_init(struct args *a, const char *prog)
{
	const char *e = getenv("LOWPROF_FULL_BTF");

	a->o = (struct coll_opts){.sz = sizeof(a->o),
				  .freq_hz = COLL_DEFAULT_FREQ,
				  .drain_ms = COLL_DEFAULT_DRAIN_MS,
				  .stack_bytes = COLL_DEFAULT_STACK_BYTES,
				  .off_cpu_mode = COLL_DEFAULT_OFFCPU_MODE,
				  .off_cpu_rate = COLL_DEFAULT_OFFCPU_RATE,
				  .off_cpu_min_ns = COLL_DEFAULT_OFFCPU_MIN_NS,
				  .off_cpu_period_ns = COLL_DEFAULT_OFFCPU_PERIOD_NS,
				  .capture_fd = -1,
				  .capture_compress = true,
				  .pids = a->pids,
				  .cgroups = a->cgroups};
	a->prog = prog;
	a->level = LP_LOG_INFO;
	a->o.parent = getppid();
	a->o.full_btf = e && *e && strcmp(e, "0");
}

/* --off-cpu and --off-cpu-*: ARGS_OK, or the exit code. */
static int parse_off_cpu_opt(int key, const char *arg, struct args *a)
{
	struct coll_opts *o = &a->o;
	uint64_t v;
	char *end;

	switch (key) {
	case 'o':
		o->off_cpu = true;
		break;
	case 'M':
		if (!strcmp(arg, "time"))
			o->off_cpu_mode = COLL_OFFCPU_TIME;
		else if (!strcmp(arg, "event"))
			o->off_cpu_mode = COLL_OFFCPU_EVENT;
		else
			return bad_value(key, arg);
		a->off_cpu_opts = a->mode_given = true;
		break;
	case 'T':
		if (lp_parse_uint(arg, COLL_MAX_OFFCPU_PERIOD_NS / 1000, &v) || v == 0)
			return bad_value(key, arg);
		o->off_cpu_period_ns = v * 1000;
		a->off_cpu_opts = a->period_given = true;
		break;
	case 'A':
		errno = 0;
		o->off_cpu_rate = strtod(arg, &end);
		/* below 2^-32 the BPF threshold (rate * 2^32) would be 0 */
		if (errno || end == arg || *end || !(o->off_cpu_rate > 0) || o->off_cpu_rate > 1 ||
		    o->off_cpu_rate < 1.0 / 4294967296.0)
			return bad_value(key, arg);
		a->off_cpu_opts = a->rate_given = true;
		break;
	case 'm':
		if (lp_parse_uint(arg, 3600ull * 1000000, &v))
			return bad_value(key, arg);
		o->off_cpu_min_ns = v * 1000;
		a->off_cpu_opts = true;
		break;
	default: /* unknown, or missing its value: getopt said which */
		fputs(usage, stderr);
		return 2;
	}
	return ARGS_OK;
}

/* Where the records go: the ring, the file channel, the capture. */
static int parse_output_opt(int key, const char *arg, struct args *a)
{
	struct coll_opts *o = &a->o;
	uint64_t v;
	int fds[2];

	switch (key) {
	case 'r':
		o->ring_path = arg;
		break;
	case 'O':
		a->ring_owner = arg;
		break;
	case 'S':
		if (lp_parse_uint(arg, 1ull << 32, &v))
			return bad_value(key, arg);
		o->ring_size = v;
		break;
	case 'N':
		if (lp_parse_uint(arg, LP_MAX_SHARDS, &v) || v == 0)
			return bad_value(key, arg);
		o->nshards = (uint32_t)v;
		break;
	case 'R':
		if (lp_parse_fds(arg, fds, 2) || o->nring_fds == LP_MAX_SHARDS)
			return bad_value(key, arg);
		o->ring_fds[o->nring_fds][0] = fds[0];
		o->ring_fds[o->nring_fds++][1] = fds[1];
		break;
	case 'f':
		if (lp_parse_uint(arg, INT_MAX, &v) || o->nfiles_fds == LP_MAX_SHARDS)
			return bad_value(key, arg);
		o->files_fds[o->nfiles_fds++] = (int)v;
		break;
	case 'c':
		o->capture_path = arg;
		break;
	case 'C':
		if (lp_parse_uint(arg, INT_MAX, &v))
			return bad_value(key, arg);
		o->capture_fd = (int)v;
		break;
	case 'w':
		o->capture_dir = arg;
		break;
	case 'W':
		if (lp_parse_uint(arg, 86400, &v) || v == 0)
			return bad_value(key, arg);
		o->capture_rotate_s = (uint32_t)v;
		break;
	case 'Y':
		if (lp_parse_size(arg, &o->capture_bytes) || o->capture_bytes < 1024)
			return bad_value(key, arg);
		break;
	case 'Z':
		if (!strcmp(arg, "zstd"))
			o->capture_compress = true;
		else if (!strcmp(arg, "none"))
			o->capture_compress = false;
		else
			return bad_value(key, arg);
		break;
	case 'D':
		if (lp_parse_uint(arg, 10000, &v) || v == 0)
			return bad_value(key, arg);
		o->drain_ms = (uint32_t)v;
		break;
	case 'U':
		if (lp_parse_uint(arg, LP_MAX_CPUS, &v) || v == 0)
			return bad_value(key, arg);
		o->size_cpus = (uint32_t)v;
		break;
	default:
		return parse_off_cpu_opt(key, arg, a);
	}
	return ARGS_OK;
}

/*
 * The option callback: one option key (getopt_long's) and its value into
 * a. Sampling and the process's own options here, the others by group.
 */
static int parse_opt(int key, const char *arg, struct args *a)
{
	struct coll_opts *o = &a->o;
	uint64_t v;
	char *end;

	switch (key) {
	case 'F':
		if (lp_parse_uint(arg, COLL_MAX_FREQ, &v) || v == 0)
			return bad_value(key, arg);
		o->freq_hz = (uint32_t)v;
		break;
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->duration_s > 0) || o->duration_s > 1e7)
			return bad_value(key, arg);
		break;
	case 'p':
		if (lp_parse_uint(arg, INT_MAX, &v) || v == 0)
			return bad_value(key, arg);
		if (o->npids == COLL_MAX_PIDS) {
			lp_err("at most %d -p options", COLL_MAX_PIDS);
			return 2;
		}
		if (lp_check_process_arg((int)v))
			return 2;
		a->pids[o->npids++] = (pid_t)v;
		break;
	case 'G':
		if (o->ncgroups == COLL_MAX_CGROUPS) {
			lp_err("at most %d --cgroup options", COLL_MAX_CGROUPS);
			return 2;
		}
		if (!arg[0] || strlen(arg) >= PATH_MAX)
			return bad_value(key, arg);
		a->cgroups[o->ncgroups++] = arg;
		break;
	case 'B':
		if (lp_parse_uint(arg, COLL_MAX_STACK_BYTES, &v) || v % 8)
			return bad_value(key, arg);
		o->stack_bytes = (uint32_t)v;
		break;
	case 'b':
		o->full_btf = true;
		break;
	case 'P':
		o->exit_with_parent = true;
		break;
	case 'I':
		o->include_self = true;
		break;
	case 'X':
		if (lp_parse_uint(arg, INT_MAX, &v) || v == 0)
			return bad_value(key, arg);
		o->self_pid = (pid_t)v;
		break;
	case 'K':
		o->keep_caps = true;
		break;
	case 'v':
		a->level = a->level < LP_LOG_DEBUG ? a->level + 1 : a->level;
		lp_log_init(a->prog, a->level);
		break;
	case 'h':
		fputs(usage, stdout);
		return 0;
	default:
		return parse_output_opt(key, arg, a);
	}
	return ARGS_OK;
}

/* The options together: ARGS_OK, or 2 after saying what does not fit. */
static int check_args(struct args *a)
{
	struct coll_opts *o = &a->o;

	if (a->off_cpu_opts && !o->off_cpu) {
		lp_err("--off-cpu-mode, -period-us, -rate and -min-us need --off-cpu");
		return 2;
	}
	/* a rate alone asks for event mode; a rate or period the mode ignores is an error */
	if (a->rate_given && !a->mode_given)
		o->off_cpu_mode = COLL_OFFCPU_EVENT;
	if ((a->rate_given && o->off_cpu_mode != COLL_OFFCPU_EVENT) ||
	    (a->period_given && o->off_cpu_mode != COLL_OFFCPU_TIME)) {
		lp_err("--off-cpu-rate goes with --off-cpu-mode event, --off-cpu-period-us with "
		       "--off-cpu-mode time");
		return 2;
	}
	if ((o->capture_path != NULL) + (o->capture_fd >= 0) + (o->capture_dir != NULL) > 1) {
		lp_err("give one of --capture FILE, --capture-fd FD or --capture-dir DIR");
		return 2;
	}
	if ((o->capture_rotate_s || o->capture_bytes) && !o->capture_dir) {
		lp_err("--capture-rotate and --capture-bytes need --capture-dir DIR");
		return 2;
	}
	if (o->capture_dir && !o->capture_rotate_s)
		o->capture_rotate_s = 60;
	if (o->nring_fds && o->ring_path) {
		lp_err("give one of --ring PATH or --ring-fd DATA,CONS (see --help)");
		return 2;
	}
	if (o->nshards > 1 && !o->ring_path) {
		lp_err("--shards goes with --ring PATH (with --ring-fd, give one per shard)");
		return 2;
	}
	if (o->nfiles_fds && o->nfiles_fds != o->nring_fds) {
		lp_err("give --files-fd once per --ring-fd (%u and %u given)", o->nfiles_fds,
		       o->nring_fds);
		return 2;
	}
	if (!o->nring_fds && !o->ring_path && !o->capture_path && o->capture_fd < 0 &&
	    !o->capture_dir) {
		lp_err("nowhere to write: give --ring PATH, --ring-fd DATA,CONS, --capture FILE or "
		       "--capture-dir DIR (see --help)");
		return 2;
	}
	return ARGS_OK;
}

/*
 * The ring's owner, only where there is a ring to hand over or a file
 * channel to serve; a number where no passwd entry names it (containers).
 * ARGS_OK, or the exit code: 2 for a --ring-owner that names nobody, 1
 * when the default user is missing.
 */
static int resolve_ring_owner(struct args *a)
{
	struct coll_opts *o = &a->o;

	if ((a->ring_owner || o->ring_path || o->nfiles_fds) &&
	    lp_user_lookup(a->ring_owner ? a->ring_owner : LP_USER_DEFAULT, "--ring-owner",
			   LP_USER_NUMERIC, &o->ring_uid, NULL))
		return a->ring_owner ? 2 : 1;
	return ARGS_OK;
}

/* The command line into a: ARGS_OK, or the exit code. */
static int parse_args(int argc, char **argv, struct args *a)
{
	int key, rc;

	while ((key = getopt_long(argc, argv, "F:d:p:vh", longopts, NULL)) != -1) {
		rc = parse_opt(key, optarg, a);
		if (rc != ARGS_OK)
			return rc;
	}
	if (optind < argc) {
		lp_err("unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	rc = check_args(a);
	if (rc != ARGS_OK)
		return rc;
	return resolve_ring_owner(a);
}

int main(int argc, char **argv)
{
	static struct args a; /* the -p table: off the stack */
	int rc;

	lp_log_init(argv[0], LP_LOG_INFO);
	args_init(&a, argv[0]);
	rc = parse_args(argc, argv, &a);
	if (rc != ARGS_OK)
		return rc;
	return coll_run(&a.o);
}
