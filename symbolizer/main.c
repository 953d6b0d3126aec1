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
	"      --output-fds A,B,C write pprof, folded and HTML to these inherited fds\n"
	"                         instead of -o (lowprof record); with --off-cpu six:\n"
	"                         A,B,C,D,E,F, D-F for the off-CPU profile\n"
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
	char *end;
	int n = 0;

	for (;;) {
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 0 || v > INT_MAX || n == 6)
			return -EINVAL;
		fds[n++] = (int)v;
		if (*end != ',')
			break;
		s = end + 1;
	}
	return *end || (n != 3 && n != 6) ? -EINVAL : n;
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

int main(int argc, char **argv)
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
		{"user", required_argument, NULL, 'u'},
		{"exit-with-parent", no_argument, NULL, 'P'},
		{"no-summary", no_argument, NULL, 'N'},
		{"cache", required_argument, NULL, 'C'},
		{"cache-size", required_argument, NULL, 'Z'},
		{"no-cache", no_argument, NULL, 'X'},
		{"debug-dir", required_argument, NULL, 'G'},
		{"off-cpu", no_argument, NULL, 'F'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct symb_opts o = {
		.sz = sizeof(o),
		.ring_fd = -1,
		.ring_cons_fd = -1,
		.files_fd = -1,
		.capture_fd = -1,
		.out_fds = {-1, -1, -1},
		.offcpu_fds = {-1, -1, -1},
		.user = LP_USER_DEFAULT,
	};
	static const char *debug_dirs[SYMB_MAX_DEBUG_DIRS + 1];
	enum lp_log_level level = LP_LOG_INFO;
	size_t ndebug = 0;
	bool no_cache = false;
	int fds[6], nfds = 0;
	char *end;
	long v;
	int opt;

	lp_log_init(argv[0], level);
	o.parent = getppid();
	while ((opt = getopt_long(argc, argv, "o:u:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'r':
			o.ring_path = optarg;
			break;
		case 'U':
			if (lp_user_lookup(optarg, "--collector-uid", LP_USER_NUMERIC,
					   &o.collector_uid, NULL))
				return 2;
			break;
		case 'R': {
			int rfds[2];

			if (lp_parse_fds(optarg, rfds, 2)) {
				lp_err("invalid value '%s' for --ring-fd (DATA,CONS)", optarg);
				return 2;
			}
			o.ring_fd = rfds[0];
			o.ring_cons_fd = rfds[1];
			break;
		}
		case 'f':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > INT_MAX) {
				lp_err("invalid value '%s' for --files-fd", optarg);
				return 2;
			}
			o.files_fd = (int)v;
			break;
		case 'c':
			o.capture_path = optarg;
			break;
		case 'K':
			errno = 0;
			v = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || v < 0 || v > INT_MAX) {
				lp_err("invalid value '%s' for --capture-fd", optarg);
				return 2;
			}
			o.capture_fd = (int)v;
			break;
		case 'p':
			o.progress = true;
			break;
		case 'S':
			o.no_sandbox = true;
			break;
		case 'M':
			o.resumed = true;
			break;
		case 'k':
			o.check_sandbox = true;
			break;
		case 'o':
			o.out_dir = optarg;
			break;
		case 'O':
			nfds = parse_fds(optarg, fds);
			if (nfds < 0) {
				lp_err("--output-fds takes three fds, PPROF,FOLDED,HTML, or with "
				       "--off-cpu six, the off-CPU ones after those");
				return 2;
			}
			break;
		case 'F':
			o.off_cpu = true;
			break;
		case 'u':
			o.user = optarg;
			break;
		case 'P':
			o.exit_with_parent = true;
			break;
		case 'N':
			o.quiet_summary = true;
			break;
		case 'C':
			o.cache_path = optarg;
			break;
		case 'Z':
			if (lp_parse_size(optarg, &o.cache_size) || o.cache_size < (1u << 20)) {
				lp_err("--cache-size %s: give a size of at least 1M", optarg);
				return 2;
			}
			break;
		case 'X':
			no_cache = true;
			break;
		case 'G':
			if (ndebug == SYMB_MAX_DEBUG_DIRS) {
				lp_err("at most %d --debug-dir options", SYMB_MAX_DEBUG_DIRS);
				return 2;
			}
			debug_dirs[ndebug++] = optarg;
			break;
		case 'v':
			level = level < LP_LOG_DEBUG ? level + 1 : level;
			lp_log_init(argv[0], level);
			break;
		case 'h':
			fputs(usage, stdout);
			return 0;
		default:
			fputs(usage, stderr);
			return 2;
		}
	}
	if (optind < argc) {
		lp_err("unexpected argument '%s' (see --help)", argv[optind]);
		return 2;
	}
	/* as root it becomes --user: a missing one is said before anything is made */
	if (geteuid() == 0 && lp_user_lookup(o.user, "--user", LP_USER_NOT_ROOT, NULL, NULL))
		return 1;
	if (o.check_sandbox)
		return symb_run(&o);
	if ((o.ring_fd >= 0) + !!o.ring_path + !!o.capture_path + (o.capture_fd >= 0) != 1) {
		lp_err("give exactly one of --ring PATH, --ring-fd DATA,CONS, --capture FILE or "
		       "--capture-fd FD (see --help)");
		return 2;
	}
	if (!o.out_dir == !nfds) {
		lp_err("give exactly one of -o DIR or --output-fds (see --help)");
		return 2;
	}
	if (o.capture_path || o.capture_fd >= 0) {
		if (nfds && nfds != 6) {
			lp_err("--output-fds: give six fds with a capture (its off-CPU data is "
			       "known once it is read)");
			return 2;
		}
		o.off_cpu = true;
	}
	if (nfds && nfds != (o.off_cpu ? 6 : 3)) {
		lp_err("--output-fds: give %s fds %s --off-cpu", o.off_cpu ? "six" : "three",
		       o.off_cpu ? "with" : "without");
		return 2;
	}
	for (int i = 0; i < nfds; i++) {
		if (i < 3)
			o.out_fds[i] = fds[i];
		else
			o.offcpu_fds[i - 3] = fds[i];
	}
	if (no_cache)
		o.cache_path = NULL;
	else if (!o.cache_path)
		o.cache_path = default_cache();
	if (!ndebug)
		debug_dirs[ndebug++] = SYMB_DEFAULT_DEBUG_DIR;
	o.debug_dirs = debug_dirs;
	return symb_run(&o);
}
