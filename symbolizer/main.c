// SPDX-License-Identifier: MIT
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/shard.h"
#include "lowprof/user.h"
#include "symbolizer.h"

static const char usage[] =
	"Usage: lowprof-symbolizer [OPTIONS] (--ring-fd FD,FD | --ring PATH | --capture FILE) -o "
	"DIR\n"
	"\n"
	"The unprivileged half of lowprof: reads the records lowprof-collector\n"
	"writes into a shared-memory ring, symbolizes and aggregates the stacks,\n"
	"and when the collector finishes (or on SIGINT/SIGTERM) writes\n"
	"  DIR/cpu.pb.gz   gzip'd pprof profile (go tool pprof)\n"
	"  DIR/cpu.folded  folded stacks (flamegraph.pl, speedscope)\n"
	"  DIR/cpu.html    self-contained interactive flame graph\n"
	"with --off-cpu also DIR/offcpu.{pb.gz,folded,html}, weighted by the time\n"
	"threads were blocked, and prints a summary. Started as root, it first\n"
	"becomes --user (no capabilities in any set, no_new_privs); once its files\n"
	"are open a seccomp filter leaves it reading and writing what it has open,\n"
	"opening files to read, memory that is never executable, signals to\n"
	"itself only, and time (ptrace, bpf, perf_event_open, exec, new sockets,\n"
	"making, changing or removing files fail). It maps the\n"
	"ring's data read-only; binaries it cannot open itself (another user's,\n"
	"another mount namespace's) the collector opens for it, read-only, after\n"
	"checking they are the ones mapped. 'lowprof record' starts it for you;\n"
	"'lowprof replay' runs it on a capture file.\n"
	"\n"
	"Options:\n"
	"      --ring PATH        receive the ring from the collector's Unix socket\n"
	"                         PATH (lowprof-collector --ring PATH); the connection\n"
	"                         is then the file channel. The socket must be served\n"
	"                         by root or --collector-uid (SO_PEERCRED), or nothing\n"
	"                         it sends is used\n"
	"      --collector-uid USER  the user the collector runs as, if not root (a\n"
	"                         name or a uid; default: root only)\n"
	"      --ring-fd DATA,CONS  attach to an inherited ring: its data (read-only)\n"
	"                         and its consumer page (lowprof record)\n"
	"      --files-fd FD      ask the collector for mapped files on this inherited\n"
	"                         socket (lowprof record)\n"
	"      --capture FILE     replay a capture file (lowprof record --capture)\n"
	"                         instead: binaries are found by build-id, at their\n"
	"                         path or as DIR/.build-id/xx/rest under a --debug-dir;\n"
	"                         off-CPU outputs are written if it has off-CPU data\n"
	"                         (else, with -o, they are left empty: the sandbox\n"
	"                         removes no file; lowprof replay removes them)\n"
	"      --capture-fd FD    the same from an inherited file (lowprof replay)\n"
	"      --progress         replaying, show progress on stderr (default: when it\n"
	"                         is a terminal)\n"
	"  -o, --output DIR       output directory (created if missing)\n"
	"      --spool DIR        service mode, with a ring, instead of -o: every\n"
	"                         --window the window's profiles go into DIR as\n"
	"                         cpu-TIME-SEQ.pb.gz (and offcpu-...) under a\n"
	"                         temporary name, then renamed; the partial last\n"
	"                         window on SIGINT/SIGTERM. TIME is the window's\n"
	"                         start (UTC), SEQ counts windows from 0. With\n"
	"                         --ring PATH it outlives its collector: windows go\n"
	"                         on, and the next collector on PATH is read. Its\n"
	"                         counters (Prometheus text, for lowprof-exporter's\n"
	"                         /metrics) replace DIR/metrics.prom each window.\n"
	"                         One writer at a time: it holds a lock on DIR\n"
	"                         (shared by the shards of one run) and refuses a\n"
	"                         spool whose lock another lowprof run or\n"
	"                         symbolizer holds\n"
	"      --window SECONDS   the windows' length (default 10; 1 to 3600)\n"
	"      --spool-bytes SIZE the spool's budget: the oldest windows are removed\n"
	"                         while it holds more; K/M/G suffixes (default 1G)\n"
	"      --spool-lock-fd FD lock the spool through this inherited descriptor of\n"
	"                         it (lowprof run's, which holds the lock already)\n"
	"      --mem-budget SIZE  with --spool: between windows, when the heap in use\n"
	"                         is over SIZE, the tables of the binaries used least\n"
	"                         recently are dropped (and loaded again, from the\n"
	"                         cache, when next needed); default 256M\n"
	"      --output-fds A,B,C write pprof, folded and HTML to these inherited fds\n"
	"                         instead of -o (lowprof record); with --off-cpu six:\n"
	"                         A,B,C,D,E,F, D-F for the off-CPU profile\n"
	"      --shard K/N        aggregate only the samples of the processes of shard\n"
	"                         K of N (0 <= K < N <= 16; lowprof record\n"
	"                         --symbolizers, lowprof replay -j): every other\n"
	"                         record is read whole, so the shards' profiles\n"
	"                         merged are those of one symbolizer\n"
	"      --partial-fds C,O,S instead of outputs, write the on-CPU and off-CPU\n"
	"                         pprof profiles and the summary of this --shard to\n"
	"                         these inherited fds, for lowprof to merge\n"
	"      --off-cpu          the collector records off-CPU samples: write them\n"
	"                         as a second profile (otherwise they are ignored)\n"
	"  -u, --user USER        user to run as when started as root (default\n"
	"                         " LP_USER_DEFAULT ", a system user of its own)\n"
	"      --exit-with-parent exit when the parent process dies\n"
	"      --no-summary       do not print the summary\n"
	"      --cache PATH       SQLite cache of symbol and stack-delta tables, by the\n"
	"                         SHA-256 of what they were built from (never by the\n"
	"                         build-id a binary claims); shared safely by several\n"
	"                         symbolizers\n"
	"                         (default " SYMB_DEFAULT_CACHE " as root,\n"
	"                         else $XDG_CACHE_HOME or ~/.cache /lowprof/symbols.db)\n"
	"      --cache-size BYTES the cache's size budget, least recently used tables\n"
	"                         evicted first; K/M/G suffixes (default 512M)\n"
	"      --no-cache         parse every binary, store nothing\n"
	"      --debug-dir DIR    look for separate debug files (and, replaying, the\n"
	"                         binaries themselves) in DIR/.build-id/; a debug file\n"
	"                         is used only for the binary it belongs to\n"
	"                         (repeatable; default " SYMB_DEFAULT_DEBUG_DIR ")\n"
	"      --no-sandbox       do not install the seccomp filter (debugging only)\n"
	"      --resumed          started again on a ring already in use (lowprof\n"
	"                         record, after a symbolizer died): skip records until\n"
	"                         the collector's metadata comes again\n"
	"      --check-sandbox    become --user, enter the sandbox, try what it must\n"
	"                         stop (ptrace, bpf, perf_event_open, sockets,\n"
	"                         /proc/1/mem, execve; in a directory of its own under\n"
	"                         $TMPDIR or /tmp: making a file, directory or link,\n"
	"                         opening its file to write or truncate, fchmod,\n"
	"                         rename, unlink; kill, tgkill, tkill, rt_sigqueueinfo\n"
	"                         to another process of its user; PROT_EXEC by mmap,\n"
	"                         mprotect, pkey_mprotect, READ_IMPLIES_EXEC; writing\n"
	"                         the ring's data: the --ring/--ring-fd given, else\n"
	"                         one made as the collector makes it), print each\n"
	"                         result and exit 0 if all failed, 1 if not\n"
	"  -v, --verbose          more messages (repeat for debug)\n"
	"  -h, --help             this help\n"
	"\n"
	"Exit status: 0 when the outputs were written, 1 on errors, 2 on usage errors.\n";

/* A comma-separated list of 3 or 6 fds; returns how many, or -EINVAL. */
static int parse_fds(const char *s, int fds[6])
{
	if (!lp_parse_fds(s, fds, 6))
		return 6;
	return lp_parse_fds(s, fds, 3) ? -EINVAL : 3;
}

/*
 * The cache of an unprivileged user is theirs: $XDG_CACHE_HOME/lowprof or
 * ~/.cache/lowprof (created 0700). Root's symbolizer runs as --user in
 * SYMB_DEFAULT_CACHE's directory, which lowprof record and replay create.
 */
static const char *default_cache(void)
{
	static char path[PATH_MAX];
	const char *base = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	char dir[PATH_MAX];
	int n;

	if (geteuid() == 0)
		return SYMB_DEFAULT_CACHE;
	if (base && base[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/lowprof", base);
	else if (home && home[0] == '/')
		n = snprintf(dir, sizeof(dir), "%s/.cache/lowprof", home);
	else
		return SYMB_DEFAULT_CACHE;
	if (n < 0 || (size_t)n >= sizeof(dir) - 16)
		return SYMB_DEFAULT_CACHE;
	/* the parent first: ~/.cache may not exist yet */
	{
		char *slash = strrchr(dir, '/');

		*slash = '\0';
		mkdir(dir, 0700);
		*slash = '/';
	}
	mkdir(dir, 0700);
	snprintf(path, sizeof(path), "%s/symbols.db", dir);
	return path;
}

/* What the command line says, on its way to struct symb_opts. */
struct args {
	struct symb_opts o;
	const char *debug_dirs[SYMB_MAX_DEBUG_DIRS + 1];
	size_t ndebug;
	bool no_cache;
	int fds[6], nfds;
	int partial[3], npartial;
	enum lp_log_level level;
	const char *prog;
};

/* A descriptor number for option name; -1: said why. */
static int parse_fd(const char *arg, const char *name)
{
	int fd;

	if (!lp_parse_fds(arg, &fd, 1))
		return fd;
	lp_err("invalid value '%s' for %s", arg, name);
	return -1;
}

/* --window SECONDS: whole seconds, 1 to 3600. 0, or 2 (said why). */
static int parse_window(const char *arg, uint64_t *ns)
{
	uint64_t v;

	if (lp_parse_uint(arg, 3600, &v) || v < 1) {
		lp_err("--window %s: give whole seconds, 1 to 3600", arg);
		return 2;
	}
	*ns = v * 1000000000ull;
	return 0;
}

/* One option of the ring, the capture or the outputs: 0, or 2 (said why). */
static int parse_io_opt(int opt, const char *arg, struct args *a)
{
	struct symb_opts *o = &a->o;
	int rfds[2];

	switch (opt) {
	case 'r':
		o->ring_path = arg;
		return 0;
	case 'U':
		return lp_user_lookup(arg, "--collector-uid", LP_USER_NUMERIC, &o->collector_uid,
				      NULL)
			       ? 2
			       : 0;
	case 'R':
		if (lp_parse_fds(arg, rfds, 2)) {
			lp_err("invalid value '%s' for --ring-fd (DATA,CONS)", arg);
			return 2;
		}
		o->ring_fd = rfds[0];
		o->ring_cons_fd = rfds[1];
		return 0;
	case 'f':
		return (o->files_fd = parse_fd(arg, "--files-fd")) < 0 ? 2 : 0;
	case 'c':
		o->capture_path = arg;
		return 0;
	case 'K':
		return (o->capture_fd = parse_fd(arg, "--capture-fd")) < 0 ? 2 : 0;
	case 'o':
		o->out_dir = arg;
		return 0;
	case 'W':
		o->spool_dir = arg;
		return 0;
	case 'w':
		return parse_window(arg, &o->window_ns);
	case 'L':
		return (o->spool_lock_fd = parse_fd(arg, "--spool-lock-fd")) < 0 ? 2 : 0;
	case 'B':
		if (!lp_parse_size(arg, &o->spool_bytes) && o->spool_bytes >= 1024)
			return 0;
		lp_err("--spool-bytes %s: give a size of at least 1K", arg);
		return 2;
	case 'm':
		if (!lp_parse_size(arg, &o->mem_budget) && o->mem_budget >= (16u << 20))
			return 0;
		lp_err("--mem-budget %s: give a size of at least 16M", arg);
		return 2;
	case 'J':
		if (lp_parse_fds(arg, a->partial, 3)) {
			lp_err("--partial-fds takes three fds: CPU,OFFCPU,SUMMARY");
			return 2;
		}
		a->npartial = 3;
		return 0;
	default: /* 'O' */
		a->nfds = parse_fds(arg, a->fds);
		if (a->nfds >= 0)
			return 0;
		lp_err("--output-fds takes three fds, PPROF,FOLDED,HTML, or with "
		       "--off-cpu six, the off-CPU ones after those");
		return 2;
	}
}

/* --shard K/N: 0, or 2 (said why) */
static int parse_shard(const char *arg, struct symb_opts *o)
{
	const char *slash = strchr(arg, '/');
	char k[16];
	uint64_t kv, nv;

	if (slash && (size_t)(slash - arg) < sizeof(k)) {
		memcpy(k, arg, (size_t)(slash - arg));
		k[slash - arg] = '\0';
		if (!lp_parse_uint(k, LP_MAX_SHARDS, &kv) &&
		    !lp_parse_uint(slash + 1, LP_MAX_SHARDS, &nv) && nv >= 1 && kv < nv) {
			o->shard = (uint32_t)kv;
			o->nshards = (uint32_t)nv;
			return 0;
		}
	}
	lp_err("--shard %s: give K/N with 0 <= K < N <= %d", arg, LP_MAX_SHARDS);
	return 2;
}

/* One option: 0, 1 for --help (printed), or 2 (said why). */
static int parse_opt(int opt, const char *arg, struct args *a)
{
	struct symb_opts *o = &a->o;

	switch (opt) {
	case 'r':
	case 'U':
	case 'R':
	case 'f':
	case 'c':
	case 'K':
	case 'o':
	case 'O':
	case 'W':
	case 'w':
	case 'B':
	case 'm':
	case 'J':
	case 'L':
		return parse_io_opt(opt, arg, a);
	case 's':
		return parse_shard(arg, o);
	case 'p':
		o->progress = true;
		return 0;
	case 'S':
		o->no_sandbox = true;
		return 0;
	case 'M':
		o->resumed = true;
		return 0;
	case 'k':
		o->check_sandbox = true;
		return 0;
	case 'F':
		o->off_cpu = true;
		return 0;
	case 'u':
		o->user = arg;
		return 0;
	case 'P':
		o->exit_with_parent = true;
		return 0;
	case 'N':
		o->quiet_summary = true;
		return 0;
	case 'C':
		o->cache_path = arg;
		return 0;
	case 'Z':
		if (!lp_parse_size(arg, &o->cache_size) && o->cache_size >= (1u << 20))
			return 0;
		lp_err("--cache-size %s: give a size of at least 1M", arg);
		return 2;
	case 'X':
		a->no_cache = true;
		return 0;
	case 'G':
		if (a->ndebug == SYMB_MAX_DEBUG_DIRS) {
			lp_err("at most %d --debug-dir options", SYMB_MAX_DEBUG_DIRS);
			return 2;
		}
		a->debug_dirs[a->ndebug++] = arg;
		return 0;
	case 'v':
		a->level = a->level < LP_LOG_DEBUG ? a->level + 1 : a->level;
		lp_log_init(a->prog, a->level);
		return 0;
	case 'h':
		fputs(usage, stdout);
		return 1;
	default:
		fputs(usage, stderr);
		return 2;
	}
}

/* Where records come from and outputs go: exactly one of each. 0, or 2 (said why). */
static int check_io(struct args *a)
{
	struct symb_opts *o = &a->o;

	if ((o->ring_fd >= 0) + !!o->ring_path + !!o->capture_path + (o->capture_fd >= 0) != 1) {
		lp_err("give exactly one of --ring PATH, --ring-fd DATA,CONS, --capture FILE or "
		       "--capture-fd FD (see --help)");
		return 2;
	}
	if (o->spool_dir &&
	    (o->out_dir || a->nfds || a->npartial || o->capture_path || o->capture_fd >= 0)) {
		lp_err("--spool writes windows of a ring: not with -o, --output-fds or a capture");
		return 2;
	}
	if (o->spool_dir) {
		if (!o->window_ns)
			o->window_ns = 10 * 1000000000ull;
		if (!o->mem_budget)
			o->mem_budget = SYMB_DEFAULT_MEM_BUDGET;
		return 0;
	}
	if (o->window_ns || o->spool_bytes || o->mem_budget || o->spool_lock_fd >= 0) {
		lp_err("--window, --spool-bytes, --spool-lock-fd and --mem-budget go with --spool");
		return 2;
	}
	if (a->npartial) {
		if (o->out_dir || a->nfds || o->nshards < 2) {
			lp_err("--partial-fds goes with --shard K/N (N of 2 or more), not with -o "
			       "or "
			       "--output-fds");
			return 2;
		}
		o->partial = true;
		o->out_fds[0] = a->partial[0];
		o->offcpu_fds[0] = a->partial[1];
		o->summary_fd = a->partial[2];
		if (o->capture_path || o->capture_fd >= 0)
			o->off_cpu = true;
		return 0;
	}
	if (!o->out_dir == !a->nfds) {
		lp_err("give exactly one of -o DIR, --output-fds, --partial-fds or --spool (see "
		       "--help)");
		return 2;
	}
	if (o->capture_path || o->capture_fd >= 0) {
		if (a->nfds && a->nfds != 6) {
			lp_err("--output-fds: give six fds with a capture (its off-CPU data is "
			       "known once it is read)");
			return 2;
		}
		o->off_cpu = true;
	}
	if (a->nfds && a->nfds != (o->off_cpu ? 6 : 3)) {
		lp_err("--output-fds: give %s fds %s --off-cpu", o->off_cpu ? "six" : "three",
		       o->off_cpu ? "with" : "without");
		return 2;
	}
	for (int i = 0; i < a->nfds; i++) {
		if (i < 3)
			o->out_fds[i] = a->fds[i];
		else
			o->offcpu_fds[i - 3] = a->fds[i];
	}
	return 0;
}

/* Parses the command line into a->o: 0, 1 (--help: exit 0), or the exit code. */
static int parse_args(int argc, char **argv, struct args *a)
{
	static const struct option longopts[] = {
		{"ring", required_argument, NULL, 'r'},
		{"collector-uid", required_argument, NULL, 'U'},
		{"ring-fd", required_argument, NULL, 'R'},
		{"files-fd", required_argument, NULL, 'f'},
		{"capture", required_argument, NULL, 'c'},
		{"capture-fd", required_argument, NULL, 'K'},
		{"progress", no_argument, NULL, 'p'},
		{"no-sandbox", no_argument, NULL, 'S'},
		{"resumed", no_argument, NULL, 'M'},
		{"check-sandbox", no_argument, NULL, 'k'},
		{"output", required_argument, NULL, 'o'},
		{"output-fds", required_argument, NULL, 'O'},
		{"spool", required_argument, NULL, 'W'},
		{"window", required_argument, NULL, 'w'},
		{"spool-bytes", required_argument, NULL, 'B'},
		{"spool-lock-fd", required_argument, NULL, 'L'},
		{"mem-budget", required_argument, NULL, 'm'},
		{"user", required_argument, NULL, 'u'},
		{"exit-with-parent", no_argument, NULL, 'P'},
		{"no-summary", no_argument, NULL, 'N'},
		{"cache", required_argument, NULL, 'C'},
		{"cache-size", required_argument, NULL, 'Z'},
		{"no-cache", no_argument, NULL, 'X'},
		{"debug-dir", required_argument, NULL, 'G'},
		{"off-cpu", no_argument, NULL, 'F'},
		{"shard", required_argument, NULL, 's'},
		{"partial-fds", required_argument, NULL, 'J'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "o:u:vh", longopts, NULL)) != -1)
		if ((rc = parse_opt(opt, optarg, a)))
			return rc;
	if (optind < argc) {
		lp_err("unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct args a = {
		.o =
			{
				.sz = sizeof(struct symb_opts),
				.ring_fd = -1,
				.ring_cons_fd = -1,
				.files_fd = -1,
				.capture_fd = -1,
				.out_fds = {-1, -1, -1},
				.offcpu_fds = {-1, -1, -1},
				.summary_fd = STDOUT_FILENO,
				.spool_lock_fd = -1,
				.user = LP_USER_DEFAULT,
			},
		.level = LP_LOG_INFO,
	};
	int rc;

	a.prog = argv[0];
	lp_log_init(argv[0], a.level);
	a.o.parent = getppid();
	rc = parse_args(argc, argv, &a);
	if (rc)
		return rc == 1 ? 0 : rc;
	/* as root it becomes --user: a missing one is said before anything is made */
	if (geteuid() == 0 && lp_user_lookup(a.o.user, "--user", LP_USER_NOT_ROOT, NULL, NULL))
		return 1;
	if (a.o.check_sandbox)
		return symb_run(&a.o);
	rc = check_io(&a);
	if (rc)
		return rc;
	if (a.no_cache)
		a.o.cache_path = NULL;
	else if (!a.o.cache_path)
		a.o.cache_path = default_cache();
	if (!a.ndebug)
		a.debug_dirs[a.ndebug++] = SYMB_DEFAULT_DEBUG_DIR;
	a.o.debug_dirs = a.debug_dirs;
	return symb_run(&a.o);
}
