// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/log.h"
#include "cli_int.h"
#include "lowprof/parse.h"
#include "lowprof/shard.h"
#include "lowprof/user.h"
#include "record.h"

#ifndef LOWPROF_VERSION
#define LOWPROF_VERSION "0"
#endif

static const char usage[] =
	"Usage: lowprof COMMAND [OPTIONS]\n"
	"\n"
	"Continuous eBPF profiler: on-CPU stacks of the whole host or of given\n"
	"processes, kernel and user frames, symbolized.\n"
	"\n"
	"Commands:\n"
	"  record        profile (on-CPU, and off-CPU with --off-cpu) and write pprof,\n"
	"                folded stacks and an HTML flame graph; --capture FILE keeps\n"
	"                the raw records to replay later\n"
	"  run           profile continuously, as a service: every --window seconds\n"
	"                the window's pprof profiles into a spool directory\n"
	"  replay        the same outputs from a capture file, here or elsewhere\n"
	"  capture-info  what a capture file holds: metadata, records, processes,\n"
	"                time span, losses, damage\n"
	"  windows       what run's spool holds: each window's start, duration,\n"
	"                samples, losses and size; gaps\n"
	"  merge         windows (or other lowprof profiles) into one pprof, folded\n"
	"                or HTML profile: the last hour, without a backend\n"
	"  help          this help; 'lowprof COMMAND --help' for a command's options\n"
	"  version       print the version\n";

static const char record_usage[] =
	"Usage: lowprof record [-d SECONDS] [-F HZ] [-p PID]... [-o DIR] [--off-cpu] ...\n"
	"\n"
	"Samples on-CPU stacks (kernel and user) at HZ per CPU on every online CPU,\n"
	"for SECONDS or until Ctrl-C / SIGTERM, then writes:\n"
	"  DIR/cpu.pb.gz   gzip'd pprof profile:  go tool pprof -top DIR/cpu.pb.gz\n"
	"  DIR/cpu.folded  folded stacks (comm;root;...;leaf COUNT), kernel frames _[k]\n"
	"  DIR/cpu.html    interactive flame graph, opens offline in a browser\n"
	"  DIR/offcpu.*    with --off-cpu: the same for time spent blocked (ns)\n"
	"and prints a summary (samples, losses, top functions, blocking stacks).\n"
	"\n"
	"Runs as root. It starts lowprof-collector (BPF; keeps only CAP_SYS_PTRACE,\n"
	"CAP_DAC_READ_SEARCH and CAP_CHECKPOINT_RESTORE after attaching) and\n"
	"lowprof-symbolizer (runs as USER with no capabilities), joined by an\n"
	"anonymous shared-memory ring the symbolizer maps read-only, and a socket\n"
	"on which the collector hands it the binaries it cannot open itself.\n"
	"\n"
	"Options:\n"
	"  -d, --duration SECONDS  how long to profile (default: until Ctrl-C)\n"
	"  -F, --freq HZ           samples per second per CPU (default 99, max 10000)\n"
	"  -p, --pid PID           only this process and all its threads (repeatable)\n"
	"      --cgroup PATH       only processes in this cgroup v2 directory or below\n"
	"                          it (repeatable, at most 16), filtered in BPF:\n"
	"                          absolute, or relative to the hierarchy's root\n"
	"                          (/sys/fs/cgroup; /sys/fs/cgroup/unified on hybrid\n"
	"                          hosts); with -p too, a process must pass both\n"
	"  -o, --output DIR        output directory (default ./lowprof-out), made if\n"
	"                          missing (and removed again, with the directories\n"
	"                          made for it, by a run that fails with no\n"
	"                          samples); no component of it may be a symlink\n"
	"      --output-mode MODE  the outputs' mode (default 0600: root's alone, as\n"
	"                          they show where kernel and user code is loaded;\n"
	"                          0644 lets every local user read them); directories\n"
	"                          made for them get x where r (0700, 0755)\n"
	"  -u, --user USER         the symbolizer's user, who owns the ring and the\n"
	"                          cache (default " LP_USER_DEFAULT ", a system user of its own:\n"
	"                          deploy/install-deps.sh creates it)\n"
	"      --stack-bytes N     user stack bytes copied per sample for unwinding\n"
	"                          code without frame pointers (default 16384, max\n"
	"                          65536, multiple of 8; 0: frame pointers only)\n"
	"      --cache PATH        symbol and stack-delta cache, SQLite, keyed by the\n"
	"                          content the tables were built from\n"
	"                          (default " LP_RECORD_DEFAULT_CACHE ")\n"
	"      --cache-size SIZE   its size budget, e.g. 512M (default 512M)\n"
	"      --no-cache          parse every binary and store nothing\n"
	"      --debug-dir DIR     separate debug files under DIR/.build-id/\n"
	"                          (repeatable; default /usr/lib/debug)\n"
	"      --off-cpu           also record where threads block (off-CPU time):\n"
	"                          DIR/offcpu.{pb.gz,folded,html}, weights in ns\n"
	"      --off-cpu-mode M    event: sample each block with probability P;\n"
	"                          time: sample a block of d us with probability\n"
	"                          min(1, d/T), so long blocks are always caught\n"
	"                          (default time, T = 10000 us; event when only\n"
	"                          --off-cpu-rate is given). Weights are scaled so\n"
	"                          totals estimate the real blocked time.\n"
	"      --off-cpu-rate P    event mode: 0 < P <= 1 (default 0.01; 1: all)\n"
	"      --off-cpu-period-us T  time mode's T in microseconds (default 10000)\n"
	"      --off-cpu-min-us N  blocks shorter than N us are counted, not recorded\n"
	"                          (default 0: dropping them would bias the totals)\n"
	"      --capture FILE      also write every record to FILE for 'lowprof replay'\n"
	"                          (mode 0600 whatever --output-mode: it holds copies\n"
	"                          of stacks; never through a symlink in its path, nor\n"
	"                          into a hard-linked or another user's file)\n"
	"      --capture-compress zstd|none  compress its blocks (default zstd, kept\n"
	"                          where it saves an eighth or more)\n"
	"      --no-symbolize      with --capture: run the collector alone (cheapest);\n"
	"                          no outputs now, replay the capture later\n"
	"      --include-self      profile lowprof's own processes too (this command,\n"
	"                          the collector, the symbolizer and what they start):\n"
	"                          by default they are left out in BPF, never sampled\n"
	"      --symbolizers N     N symbolizer processes (1 to 16, default 1), each\n"
	"                          with a ring of its own and the samples of its share\n"
	"                          of the processes (by pid); the outputs are merged\n"
	"                          and are those of one symbolizer; for hosts where\n"
	"                          one cannot keep up (many CPUs, many cold binaries)\n"
	"  -v, --verbose           more messages\n"
	"  -h, --help              this help\n"
	"\n"
	"Ctrl-C once stops and writes what was collected; twice stops at once.\n"
	"Exit status: 0 on success, 1 on errors, 2 on usage errors.\n";

static const char run_usage[] =
	"Usage: lowprof run [--window SECONDS] [--spool DIR] [--spool-bytes SIZE] [-F HZ]\n"
	"                   [--capture-dir DIR [--capture-bytes SIZE]]\n"
	"                   [-p PID]... [--cgroup PATH]... [--off-cpu ...] [-d SECONDS] ...\n"
	"\n"
	"Profiles continuously until SIGTERM / Ctrl-C (or for -d SECONDS), as\n"
	"'lowprof record' does, but writes no outputs at the end: every window\n"
	"(default 10 s) the symbolizer writes that window's profiles into the\n"
	"spool directory, the partial last one when it stops:\n"
	"  DIR/cpu-TIME-SEQ.pb.gz     gzip'd pprof of the window's on-CPU samples\n"
	"  DIR/offcpu-TIME-SEQ.pb.gz  with --off-cpu: its off-CPU time\n"
	"TIME is the window's start (UTC, 20261125T215000Z), SEQ counts windows\n"
	"from 0, so a gap shows. Each file has the window's start and duration,\n"
	"and its losses in the profile's comments; samples are labelled with pid,\n"
	"comm, exe (the executable), cgroup (its v2 path) and, where the path\n"
	"names them, container.id and k8s.pod.uid. Files appear under a temporary\n"
	"name and are renamed when whole. When the spool holds more than\n"
	"--spool-bytes, the oldest windows are removed; nothing else removes them\n"
	"but lowprof-exporter, once every destination accepted them (below).\n"
	"A collector, symbolizer or exporter that dies, or is stopped by a SIGTERM\n"
	"not lowprof run's, is started again (each at most 20 times, not when it\n"
	"ends within a second of starting; a collector only before -d); the\n"
	"symbolizer stays through a collector's restart, and its windows go on;\n"
	"the windows written while the exporter is down wait in the spool.\n"
	"\n"
	"Options (and record's -F, -p, --cgroup, -u, --stack-bytes, --cache,\n"
	"--cache-size, --no-cache, --debug-dir, --off-cpu and --off-cpu-*,\n"
	"--include-self (the exporter is lowprof's own too), -v):\n"
	"      --window SECONDS    the windows' length (default 10; 1 to 3600)\n"
	"      --spool DIR         where windows go (default " LP_RUN_DEFAULT_SPOOL "),\n"
	"                          made if missing: the symbolizer user's, 0700\n"
	"      --spool-bytes SIZE  the spool's budget, e.g. 512M, at least 1K (default 1G)\n"
	"      --mem-budget SIZE   the symbolizer's memory budget: between windows,\n"
	"                          past SIZE of heap the tables of the binaries used\n"
	"                          least recently are dropped, to load again from the\n"
	"                          cache when needed (default 256M, at least 16M)\n"
	"      --capture-dir DIR   the collector also writes a capture file per window\n"
	"                          there, DIR/capture-TIME-SEQ.lpcap, each replayable\n"
	"                          alone ('lowprof replay FILE -o OUT'), renamed from a\n"
	"                          hidden .tmp name when complete; made 0700 if missing,\n"
	"                          root's (see lowprof-collector --help)\n"
	"      --capture-bytes SIZE  its budget (default 1G): the oldest files go first\n"
	"      --symbolizers N     N symbolizers (1 to 16), each on its share of the\n"
	"                          processes: each writes its own windows,\n"
	"                          cpu-TIME-SEQ.sKofN.pb.gz, numbered by the clock's\n"
	"                          multiples of --window so that the shards agree\n"
	"                          (lowprof merge and the exporter take them all)\n"
	"  -d, --duration SECONDS  stop after SECONDS (default: until SIGTERM)\n"
	"  -h, --help              this help\n"
	"\n"
	"Delivery (lowprof-exporter, started when a destination is given; see\n"
	"lowprof-exporter --help). It sends each window, and removes it from the\n"
	"spool once every destination accepted it; stopping, it has 5 s to send\n"
	"the last windows, and what it could not send stays for the next run:\n"
	"      --pyroscope URL     push to Grafana Pyroscope at URL\n"
	"      --otlp URL          send OTLP profiles to an OpenTelemetry Collector\n"
	"      --pyroscope-headers FILE, --otlp-headers FILE\n"
	"                          extra headers (Authorization, X-Scope-OrgID), one\n"
	"                          \"Name: value\" per line; FILE must be the user's\n"
	"                          (--user) or root's and readable by nobody else\n"
	"                          (0600; 0440 if its group is the user's)\n"
	"      --ca-file FILE      trust these CAs for https instead of the system's\n"
	"      --service-name NAME the service of every sample (default: per container\n"
	"                          or executable)\n"
	"      --metrics ADDR      serve Prometheus metrics at http://ADDR/metrics\n"
	"\n"
	"Exit status: 0 on success, 1 on errors, 2 on usage errors.\n";

/* record's long options without a short one */
enum {
	OPT_OFF_CPU_RATE = 1000, /* the four in the order of lp_record_opts.off_cpu_args */
	OPT_OFF_CPU_MIN_US,
	OPT_OFF_CPU_MODE,
	OPT_OFF_CPU_PERIOD_US,
	OPT_CAPTURE,
	OPT_CAPTURE_COMPRESS,
	OPT_NO_SYMBOLIZE,
	OPT_OUTPUT_MODE,
	OPT_SPOOL, /* lowprof run's */
	OPT_WINDOW,
	OPT_SPOOL_BYTES,
	OPT_CGROUP,
	OPT_MEM_BUDGET,
	OPT_EXPORT, /* lowprof run's options passed to lowprof-exporter */
	OPT_INCLUDE_SELF,
	OPT_SYMBOLIZERS,
	OPT_CAPTURE_DIR, /* lowprof run's */
	OPT_CAPTURE_BYTES,
};

/* the options record and run share: sampling, the symbolizer's, off-CPU */
// clang-format off
#define PROFILE_LONGOPTS \
	{"duration", required_argument, NULL, 'd'}, \
	{"freq", required_argument, NULL, 'F'}, \
	{"pid", required_argument, NULL, 'p'}, \
	{"cgroup", required_argument, NULL, OPT_CGROUP}, \
	{"user", required_argument, NULL, 'u'}, \
	{"stack-bytes", required_argument, NULL, 'B'}, \
	{"cache", required_argument, NULL, 'C'}, \
	{"cache-size", required_argument, NULL, 'Z'}, \
	{"no-cache", no_argument, NULL, 'X'}, \
	{"debug-dir", required_argument, NULL, 'G'}, \
	{"off-cpu", no_argument, NULL, 'Q'}, \
	{"off-cpu-rate", required_argument, NULL, OPT_OFF_CPU_RATE}, \
	{"off-cpu-min-us", required_argument, NULL, OPT_OFF_CPU_MIN_US}, \
	{"off-cpu-mode", required_argument, NULL, OPT_OFF_CPU_MODE}, \
	{"off-cpu-period-us", required_argument, NULL, OPT_OFF_CPU_PERIOD_US}, \
	{"include-self", no_argument, NULL, OPT_INCLUDE_SELF}, \
	{"symbolizers", required_argument, NULL, OPT_SYMBOLIZERS}, \
	{"verbose", no_argument, NULL, 'v'}, \
	{"help", no_argument, NULL, 'h'}
// clang-format on

static const struct option record_longopts[] = {
	PROFILE_LONGOPTS,
	{"output", required_argument, NULL, 'o'},
	{"capture", required_argument, NULL, OPT_CAPTURE},
	{"capture-compress", required_argument, NULL, OPT_CAPTURE_COMPRESS},
	{"no-symbolize", no_argument, NULL, OPT_NO_SYMBOLIZE},
	{"output-mode", required_argument, NULL, OPT_OUTPUT_MODE},
	{},
};

/* lowprof run's: record's but those of outputs and captures, and the spool's */
static const struct option run_longopts[] = {
	PROFILE_LONGOPTS,
	{"spool", required_argument, NULL, OPT_SPOOL},
	{"window", required_argument, NULL, OPT_WINDOW},
	{"spool-bytes", required_argument, NULL, OPT_SPOOL_BYTES},
	{"mem-budget", required_argument, NULL, OPT_MEM_BUDGET},
	{"capture-dir", required_argument, NULL, OPT_CAPTURE_DIR},
	{"capture-bytes", required_argument, NULL, OPT_CAPTURE_BYTES},
	{"pyroscope", required_argument, NULL, OPT_EXPORT},
	{"otlp", required_argument, NULL, OPT_EXPORT},
	{"pyroscope-headers", required_argument, NULL, OPT_EXPORT},
	{"otlp-headers", required_argument, NULL, OPT_EXPORT},
	{"ca-file", required_argument, NULL, OPT_EXPORT},
	{"service-name", required_argument, NULL, OPT_EXPORT},
	{"metrics", required_argument, NULL, OPT_EXPORT},
	{},
};

/* at most each of run_longopts' exporter options once, as "--name" "value" */
#define RUN_EXPORT_ARGS 16

/* lowprof record's command line: lp_record_opts and the tables it points into. */
struct record_args {
	struct lp_record_opts o;
	pid_t pids[LP_RECORD_MAX_PIDS];
	const char *cgroups[LP_RECORD_MAX_CGROUPS];
	const char *debug_dirs[LP_RECORD_MAX_DEBUG_DIRS + 1];
	size_t ndebug;
	const char *export_args[RUN_EXPORT_ARGS + 1];
	char export_names[RUN_EXPORT_ARGS / 2][24];
	size_t nexport;
};

/*
 * What the record_* parsing functions return when the arguments are fine
 * so far; otherwise they return the exit code (0 after --help).
 */
#define ARGS_OK (-1)

static void record_args_init(struct record_args *a)
{
	a->o = (struct lp_record_opts){.sz = sizeof(a->o),
				       .freq_hz = 99,
				       .pids = a->pids,
				       .cgroups = a->cgroups,
				       .out_dir = "lowprof-out",
				       .user = LP_USER_DEFAULT,
				       .stack_bytes = 16384,
				       .cache_path = LP_RECORD_DEFAULT_CACHE};
}

/* --off-cpu and --off-cpu-*, checked here, passed on as given: ARGS_OK, or the exit code. */
static int record_off_cpu_opt(int key, const char *arg, struct record_args *a)
{
	uint64_t v;
	char *end;
	double p;

	switch (key) {
	case 'Q':
		a->o.off_cpu = true;
		return ARGS_OK;
	case OPT_OFF_CPU_RATE:
		errno = 0;
		p = strtod(arg, &end);
		if (errno || end == arg || *end || !(p > 0 && p <= 1)) {
			lp_err("--off-cpu-rate %s: give a probability, 0 < P <= 1", arg);
			return 2;
		}
		break;
	case OPT_OFF_CPU_MIN_US:
		if (lp_parse_uint(arg, 3600000000ull, &v)) {
			lp_err("--off-cpu-min-us %s: give microseconds, 0 or more", arg);
			return 2;
		}
		break;
	case OPT_OFF_CPU_MODE:
		if (strcmp(arg, "event") && strcmp(arg, "time")) {
			lp_err("--off-cpu-mode %s: give event or time", arg);
			return 2;
		}
		break;
	case OPT_OFF_CPU_PERIOD_US:
		if (lp_parse_uint(arg, 3600000000ull, &v) || v == 0) {
			lp_err("--off-cpu-period-us %s: give microseconds, 1 or more", arg);
			return 2;
		}
		break;
	default: /* unknown, or missing its value: getopt said which */
		fputs(a->o.spool_dir ? run_usage : record_usage, stderr);
		return 2;
	}
	a->o.off_cpu_args[key - OPT_OFF_CPU_RATE] = arg;
	return ARGS_OK;
}

/* The symbolizer's: its user, the cache, the debug directories. */
static int record_symb_opt(int key, const char *arg, struct record_args *a)
{
	uint64_t size;

	switch (key) {
	case 'u':
		a->o.user = arg;
		break;
	case 'C':
		if (arg[0] != '/') {
			lp_err("--cache %s: give an absolute path", arg);
			return 2;
		}
		a->o.cache_path = arg;
		break;
	case 'Z':
		if (lp_parse_size(arg, &size) || size < (1u << 20)) {
			lp_err("--cache-size %s: give a size of at least 1M", arg);
			return 2;
		}
		a->o.cache_size = arg;
		break;
	case 'X':
		a->o.cache_path = NULL;
		break;
	case 'G':
		if (a->ndebug == LP_RECORD_MAX_DEBUG_DIRS) {
			lp_err("at most %d --debug-dir options", LP_RECORD_MAX_DEBUG_DIRS);
			return 2;
		}
		a->debug_dirs[a->ndebug++] = arg;
		break;
	default:
		return record_off_cpu_opt(key, arg, a);
	}
	return ARGS_OK;
}

/* Where the results go: the output directory and its files' mode, the capture. */
static int record_output_opt(int key, const char *arg, struct record_args *a)
{
	uint64_t v;
	uint64_t bytes;

	switch (key) {
	case 'o':
		a->o.out_dir = arg;
		break;
	case OPT_OUTPUT_MODE:
		if (cli_parse_output_mode(arg, &a->o.output_mode))
			return 2;
		break;
	case OPT_CAPTURE:
		a->o.capture_path = arg;
		break;
	case OPT_CAPTURE_COMPRESS:
		if (strcmp(arg, "zstd") && strcmp(arg, "none")) {
			lp_err("--capture-compress %s: give zstd or none", arg);
			return 2;
		}
		a->o.capture_compress = arg;
		break;
	case OPT_NO_SYMBOLIZE:
		a->o.no_symbolize = true;
		break;
	case OPT_INCLUDE_SELF:
		a->o.include_self = true;
		break;
	case OPT_SPOOL:
		a->o.spool_dir = arg;
		break;
	case OPT_WINDOW:
		if (lp_parse_uint(arg, 3600, &v) || v == 0) {
			lp_err("--window %s: give whole seconds, 1 to 3600", arg);
			return 2;
		}
		a->o.window_s = (uint32_t)v;
		break;
	case OPT_SPOOL_BYTES:
		if (lp_parse_size(arg, &bytes) || bytes < 1024) {
			lp_err("--spool-bytes %s: give a size of at least 1K", arg);
			return 2;
		}
		a->o.spool_bytes = arg;
		break;
	case OPT_CAPTURE_DIR:
		a->o.capture_dir = arg;
		break;
	case OPT_CAPTURE_BYTES:
		if (lp_parse_size(arg, &bytes) || bytes < 1024) {
			lp_err("--capture-bytes %s: give a size of at least 1K", arg);
			return 2;
		}
		a->o.capture_bytes = arg;
		break;
	case OPT_MEM_BUDGET:
		if (lp_parse_size(arg, &bytes) || bytes < (16u << 20)) {
			lp_err("--mem-budget %s: give a size of at least 16M", arg);
			return 2;
		}
		a->o.mem_budget = arg;
		break;
	default:
		return record_symb_opt(key, arg, a);
	}
	return ARGS_OK;
}

/*
 * record's option callback: one option key (getopt_long's) and its value
 * into a. Sampling and the command's own options here, the others by group.
 */
static int record_opt(int key, const char *arg, struct record_args *a)
{
	struct lp_record_opts *o = &a->o;
	uint64_t v;
	char *end;

	switch (key) {
	case 'd':
		errno = 0;
		o->duration_s = strtod(arg, &end);
		if (errno || end == arg || *end || !(o->duration_s > 0) || o->duration_s > 1e7) {
			lp_err("-d %s: give a number of seconds, more than 0 and at most 10000000",
			       arg);
			return 2;
		}
		break;
	case 'F':
		if (lp_parse_uint(arg, 10000, &v) || v == 0) {
			lp_err("-F %s: give a frequency from 1 to 10000 Hz", arg);
			return 2;
		}
		o->freq_hz = (uint32_t)v;
		break;
	case 'p':
		if (lp_parse_uint(arg, INT_MAX, &v) || v == 0) {
			lp_err("-p %s: not a process id", arg);
			return 2;
		}
		if (o->npids == LP_RECORD_MAX_PIDS) {
			lp_err("at most %d -p options", LP_RECORD_MAX_PIDS);
			return 2;
		}
		a->pids[o->npids++] = (pid_t)v;
		break;
	case OPT_CGROUP:
		if (o->ncgroups == LP_RECORD_MAX_CGROUPS) {
			lp_err("at most %d --cgroup options", LP_RECORD_MAX_CGROUPS);
			return 2;
		}
		if (!arg[0]) {
			lp_err("--cgroup: give a cgroup v2 directory");
			return 2;
		}
		a->cgroups[o->ncgroups++] = arg;
		break;
	case 'B':
		if (lp_parse_uint(arg, 65536, &v) || v % 8) {
			lp_err("--stack-bytes %s: give a multiple of 8 from 0 to 65536", arg);
			return 2;
		}
		o->stack_bytes = (uint32_t)v;
		break;
	case OPT_SYMBOLIZERS:
		if (lp_parse_uint(arg, LP_MAX_SHARDS, &v) || v == 0) {
			lp_err("--symbolizers %s: give a number from 1 to %d", arg, LP_MAX_SHARDS);
			return 2;
		}
		o->nsymb = (uint32_t)v;
		break;
	case 'v':
		o->verbose = true;
		lp_log_init("lowprof", LP_LOG_DEBUG);
		break;
	case 'h':
		fputs(a->o.spool_dir ? run_usage : record_usage, stdout);
		return 0;
	default:
		return record_output_opt(key, arg, a);
	}
	return ARGS_OK;
}

/* The options together: ARGS_OK, or 2 after saying what does not fit. */
static int record_check_args(struct record_args *a)
{
	struct lp_record_opts *o = &a->o;

	o->debug_dirs = a->ndebug ? a->debug_dirs : NULL;
	if (o->no_symbolize && o->nsymb > 1) {
		lp_err("--symbolizers: with --no-symbolize there is no symbolizer (replay the "
		       "capture with -j N instead)");
		return 2;
	}
	if ((o->no_symbolize || o->capture_compress) && !o->capture_path) {
		lp_err("--no-symbolize and --capture-compress need --capture FILE");
		return 2;
	}
	if (o->capture_bytes && !o->capture_dir) {
		lp_err("--capture-bytes needs --capture-dir DIR");
		return 2;
	}
	for (int i = 0; i < 4; i++) {
		if (o->off_cpu_args[i] && !o->off_cpu) {
			lp_err("the --off-cpu-* options need --off-cpu");
			return 2;
		}
	}
	return ARGS_OK;
}

/* lowprof record's command line into a: ARGS_OK, or the exit code. */
static int record_parse_args(int argc, char **argv, struct record_args *a)
{
	int key, rc;

	while ((key = getopt_long(argc, argv, "d:F:p:o:u:vh", record_longopts, NULL)) != -1) {
		rc = record_opt(key, optarg, a);
		if (rc != ARGS_OK)
			return rc;
	}
	if (optind < argc) {
		lp_err("unexpected argument '%s' (see lowprof record --help)", argv[optind]);
		return 2;
	}
	return record_check_args(a);
}

/* lowprof run's command line into a: ARGS_OK, or the exit code. */
static int run_parse_args(int argc, char **argv, struct record_args *a)
{
	int key, rc;

	/* the spool's default stands until --spool names another: it marks run too */
	a->o.spool_dir = LP_RUN_DEFAULT_SPOOL;
	a->o.out_dir = NULL;
	int idx = -1;

	while ((key = getopt_long(argc, argv, "d:F:p:u:vh", run_longopts, &idx)) != -1) {
		if (key == OPT_EXPORT) {
			/* checked by lowprof-exporter, which is started before anything else */
			const char *name = run_longopts[idx].name;

			for (size_t i = 0; i < a->nexport; i += 2)
				if (!strcmp(a->export_args[i] + 2, name)) {
					lp_err("--%s: give it once", name);
					return 2;
				}
			size_t k = a->nexport;

			snprintf(a->export_names[k / 2], sizeof(a->export_names[0]), "--%s", name);
			a->export_args[k] = a->export_names[k / 2];
			a->export_args[k + 1] = optarg;
			a->export_args[k + 2] = NULL;
			a->nexport = k + 2;
			a->o.exporter_args = a->export_args;
			idx = -1;
			continue;
		}
		idx = -1;
		rc = record_opt(key, optarg, a);
		if (rc != ARGS_OK)
			return rc;
	}
	if (optind < argc) {
		lp_err("unexpected argument '%s' (see lowprof run --help)", argv[optind]);
		return 2;
	}
	return record_check_args(a);
}

static int cmd_run(int argc, char **argv)
{
	static struct record_args a;
	int rc;

	record_args_init(&a);
	rc = run_parse_args(argc, argv, &a);
	if (rc != ARGS_OK)
		return rc;
	return lp_record(&a.o);
}

static int cmd_record(int argc, char **argv)
{
	static struct record_args a; /* the -p table: off the stack */
	int rc;

	record_args_init(&a);
	rc = record_parse_args(argc, argv, &a);
	if (rc != ARGS_OK)
		return rc;
	return lp_record(&a.o);
}

int main(int argc, char **argv)
{
	/* getopt names argv[0] in its messages: "lowprof record: unrecognized option" */
	static char prog[32];
	const char *cmd;

	lp_log_init("lowprof", LP_LOG_INFO);
	if (argc < 2) {
		fputs(usage, stderr);
		return 2;
	}
	cmd = argv[1];
	snprintf(prog, sizeof(prog), "lowprof %s", cmd);
	argv[1] = prog;
	if (!strcmp(cmd, "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(cmd, "run"))
		return cmd_run(argc - 1, argv + 1);
	if (!strcmp(cmd, "replay"))
		return lp_cmd_replay(argc - 1, argv + 1);
	if (!strcmp(cmd, "capture-info"))
		return lp_cmd_capture_info(argc - 1, argv + 1);
	if (!strcmp(cmd, "windows"))
		return lp_cmd_windows(argc - 1, argv + 1);
	if (!strcmp(cmd, "merge"))
		return lp_cmd_merge(argc - 1, argv + 1);
	if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		if (argc > 2 && !strcmp(argv[2], "record"))
			fputs(record_usage, stdout);
		else if (argc > 2 && !strcmp(argv[2], "run"))
			fputs(run_usage, stdout);
		else if (argc > 2 && !strcmp(argv[2], "replay"))
			fputs(lp_replay_usage, stdout);
		else if (argc > 2 && !strcmp(argv[2], "capture-info"))
			fputs(lp_capture_info_usage, stdout);
		else if (argc > 2 && !strcmp(argv[2], "windows"))
			fputs(lp_windows_usage, stdout);
		else if (argc > 2 && !strcmp(argv[2], "merge"))
			fputs(lp_merge_usage, stdout);
		else
			fputs(usage, stdout);
		return 0;
	}
	if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
		printf("lowprof %s\n", LOWPROF_VERSION);
		return 0;
	}
	lp_err("unknown command '%s' (see lowprof --help)", cmd);
	return 2;
}
