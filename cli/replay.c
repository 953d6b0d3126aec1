// SPDX-License-Identifier: MIT
/*
 * lowprof replay: the outputs of a recording, from its capture file. Opens
 * the capture and the outputs (as whoever runs it), then starts
 * lowprof-symbolizer on them: as --user with no capabilities when run as
 * root, as the caller otherwise. Nothing here parses more of the capture
 * than its 64-byte header (for an early, clear error).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_int.h"
#include "lowprof/capture.h"
#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/parse.h"
#include "lowprof/user.h"
#include "record.h"
#include "shards.h"

const char lp_replay_usage[] =
	"Usage: lowprof replay FILE [-o DIR] [--debug-dir DIR]... [OPTIONS]\n"
	"\n"
	"Symbolizes a capture file (lowprof record --capture FILE) into the outputs\n"
	"of the run that wrote it: DIR/cpu.{pb.gz,folded,html} and, when it was\n"
	"recorded with --off-cpu, DIR/offcpu.{pb.gz,folded,html}; prints the same\n"
	"summary plus what the capture held. The same file always gives the same\n"
	"profile.\n"
	"\n"
	"Binaries are found by the build-id the collector saw mapped: the file at\n"
	"the recorded path if its build-id matches, else DIR/.build-id/xx/rest (the\n"
	"binary) under each --debug-dir. A binary found in neither is named once in\n"
	"a warning and its frames are shown as PATH+0xOFFSET, never symbolized\n"
	"against another file. A capture cut short or damaged replays what is whole\n"
	"and says how much was lost.\n"
	"\n"
	"Options:\n"
	"  -o, --output DIR        output directory (default ./lowprof-out), made if\n"
	"                          missing (and removed again, with the directories\n"
	"                          made for it, by a run that fails with no\n"
	"                          samples); no component of it may be a symlink\n"
	"      --output-mode MODE  the outputs' mode (default 0600: yours alone; 0644\n"
	"                          lets every local user read them); directories made\n"
	"                          for them get x where r (0700, 0755)\n"
	"      --debug-dir DIR     binaries and separate debug files by build-id under\n"
	"                          DIR/.build-id/ (repeatable; default /usr/lib/debug)\n"
	"      --cache PATH        symbol and stack-delta cache (default " LP_RECORD_DEFAULT_CACHE
	"\n"
	"                          as root, else ~/.cache/lowprof/symbols.db)\n"
	"      --cache-size SIZE   its size budget (default 512M)\n"
	"      --no-cache          parse every binary, store nothing\n"
	"  -j, --jobs N            N symbolizers in parallel (1 to 16, default 1), each\n"
	"                          on its share of the processes (by pid); each reads\n"
	"                          the whole file, their profiles are merged, and the\n"
	"                          outputs are those of -j 1\n"
	"  -u, --user USER         as root: the user the symbolizer runs as (default\n"
	"                          " LP_USER_DEFAULT "; it must be able to read the binaries)\n"
	"  -v, --verbose           more messages\n"
	"  -h, --help              this help\n"
	"\n"
	"Exit status: 0 when the outputs were written, 1 on errors, 2 on usage errors.\n";

struct replay_opts {
	const char *file;
	const char *out_dir;
	const char *user;
	const char *cache_path; /* NULL: the symbolizer's default, or none with no_cache */
	const char *cache_size;
	bool no_cache;
	bool verbose;
	const char *debug_dirs[LP_RECORD_MAX_DEBUG_DIRS + 1];
	size_t ndebug;
	mode_t output_mode;
	uint32_t jobs; /* -j: symbolizers, each on its shard of the processes */
};

/*
 * Opens the capture and checks its header (the reader's own check, which
 * reads 64 bytes): an fd, or -1 (said why).
 */
static int open_capture(const char *file)
{
	struct lpc_reader *rd;
	struct lpc_header h;
	char msg[96];
	int fd, err;

	fd = open(file, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		lp_err("%s: %m", file);
		return -1;
	}
	err = lpc_reader__open_fd(fd, &rd, &h);
	lpc_reader__free(rd);
	if (err) {
		lp_err("%s: %s", file, lpc_open_strerror(err, &h, msg, sizeof(msg)));
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Whether the capture (fd cap) is one of the outputs (replay D/cpu.html -o
 * D): opening them would empty it before it is read. Said as an error.
 */
static bool capture_is_output(const struct replay_opts *o, int cap)
{
	struct stat capst, st;
	char path[PATH_MAX];

	if (fstat(cap, &capst))
		return false;
	for (int i = 0; i < 6; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", o->out_dir, cli_out_names[i]) >=
		    (int)sizeof(path))
			continue;
		if (stat(path, &st) == 0 && st.st_dev == capst.st_dev &&
		    st.st_ino == capst.st_ino) {
			lp_err("%s: that is the output %s, which the replay would overwrite; give "
			       "another -o",
			       o->file, path);
			return true;
		}
	}
	return false;
}

static void symbolizer_argv(const struct replay_opts *o, char *path, const char *shard, char **argv)
{
	int n = 0;

	argv[n++] = path;
	argv[n++] = "--capture-fd=3";
	if (shard) {
		argv[n++] = "--shard";
		argv[n++] = (char *)shard;
		argv[n++] = "--partial-fds=4,5,6";
	} else {
		argv[n++] = "--output-fds=4,5,6,7,8,9";
	}
	argv[n++] = "--exit-with-parent";
	if (geteuid() == 0) {
		argv[n++] = "--user";
		argv[n++] = (char *)o->user;
	}
	if (o->no_cache) {
		argv[n++] = "--no-cache";
	} else if (o->cache_path) {
		argv[n++] = "--cache";
		argv[n++] = (char *)o->cache_path;
	}
	if (o->cache_size) {
		argv[n++] = "--cache-size";
		argv[n++] = (char *)o->cache_size;
	}
	for (size_t i = 0; i < o->ndebug; i++) {
		argv[n++] = "--debug-dir";
		argv[n++] = (char *)o->debug_dirs[i];
	}
	if (o->verbose)
		argv[n++] = "-v";
	if (isatty(STDERR_FILENO) && (!shard || shard[0] == '0'))
		argv[n++] = "--progress"; /* of one shard: they all read the whole file */
	argv[n] = NULL;
}

/*
 * The off-CPU outputs in dirfd stay when the symbolizer wrote them: when the
 * capture has off-CPU data or was recorded with --off-cpu (a pprof profile
 * with no samples is not empty; an empty folded file is), as lowprof record
 * wrote them; the files it left empty go.
 */
static bool drop_empty_offcpu(int dirfd)
{
	struct stat st;

	if (fstatat(dirfd, cli_out_names[3], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode) && st.st_size > 0)
		return false;
	for (int i = 3; i < 6; i++)
		if (fstatat(dirfd, cli_out_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			unlinkat(dirfd, cli_out_names[i], 0);
	return true;
}

/*
 * The symbolizers: one with the outputs, or with -j N one per shard with
 * its own descriptor of the capture and memory files for its partial
 * outputs (shards.h). 0, or -1 (said why).
 */
static int start_symbolizers(struct replay_opts *o, const char *symb_path, struct cli_child *kids,
			     const int out[6], struct cli_shards *parts)
{
	char *argv[28 + 2 * LP_RECORD_MAX_DEBUG_DIRS];
	static char shard[LP_MAX_SHARDS][16];
	uint32_t n = o->jobs > 1 ? o->jobs : 1;

	if (n > 1 && cli_shards__open(parts, n))
		return -1;
	for (uint32_t k = 0; k < n; k++) {
		/* the capture, then the outputs, or a shard's memory files */
		int fds[7], nfds = n > 1 ? 1 + CLI_SHARD_NFD : 7, err;

		fds[0] = open_capture(o->file);
		if (fds[0] < 0)
			return -1;
		memcpy(fds + 1, n > 1 ? parts->fd[k] : out, (size_t)(nfds - 1) * sizeof(*fds));
		snprintf(shard[k], sizeof(shard[k]), "%u/%u", k, n);
		symbolizer_argv(o, (char *)symb_path, n > 1 ? shard[k] : NULL, argv);
		err = cli_spawn(&kids[1 + k], symb_path, argv, fds, nfds, true);
		close(fds[0]);
		if (err)
			return -1;
	}
	return 0;
}

static int run_replay(struct replay_opts *o)
{
	char symb_path[PATH_MAX], desc[64];
	struct cli_child kids[1 + LP_MAX_SHARDS] = {
		{.name = "none", .done = true, .out = {-1, -1}}};
	struct cli_supervision sv = {.kids = kids, .nsymb = o->jobs > 1 ? o->jobs : 1};
	struct cli_shards parts = {.n = 0};
	int fds[6] = {-1, -1, -1, -1, -1, -1}, sfd = -1, rc = 1, dirfd = -1, cap;
	struct lp_made_dirs made = {.parent = -1};
	bool offcpu = false, ok = true;

	for (uint32_t k = 0; k < LP_MAX_SHARDS; k++)
		kids[1 + k] =
			(struct cli_child){.name = cli_shards__name(k, sv.nsymb), .out = {-1, -1}};
	/* as root the symbolizer becomes --user: say now if there is none */
	if (geteuid() == 0 && lp_user_lookup(o->user, "--user", LP_USER_NOT_ROOT, NULL, NULL))
		return 1;
	cap = open_capture(o->file); /* a clear error before anything is made */
	if (cap < 0)
		return 1;
	if (capture_is_output(o, cap)) {
		close(cap);
		return 1;
	}
	close(cap);
	if (cli_open_outputs(o->out_dir, o->output_mode, fds, 6, &dirfd, &made))
		goto out;
	if (geteuid() == 0 && !o->no_cache) {
		if (!o->cache_path)
			o->cache_path = LP_RECORD_DEFAULT_CACHE;
		if (cli_prepare_cache_dir(o->cache_path, o->user))
			o->no_cache = true; /* warned */
	}
	sfd = cli_signalfd();
	if (sfd < 0)
		goto out;
	cli_sibling("lowprof-symbolizer", symb_path, sizeof(symb_path));
	if (start_symbolizers(o, symb_path, kids, fds, &parts)) {
		/* those started are stopped below, by the supervision's end */
		cli_signal_kids(kids + 1, (int)sv.nsymb, SIGTERM);
		/* those not started: the supervision would wait for them forever */
		for (uint32_t k = 0; k < sv.nsymb; k++)
			if (kids[1 + k].pid <= 0)
				kids[1 + k].done = true;
		ok = false;
	}
	cli_supervise(&sv, sfd);
	for (uint32_t k = 0; k < sv.nsymb; k++)
		if (!cli_child_ok(&kids[1 + k])) {
			lp_err("%s failed (%s)", kids[1 + k].name,
			       cli_exit_desc(kids[1 + k].status, desc, sizeof(desc)));
			ok = false;
		}
	if (!ok)
		goto out;
	if (sv.nsymb > 1 && cli_shards__finish(&parts, fds, true, false, &offcpu))
		goto out;
	printf("\nOutputs in %s/: %s %s %s%s\n", o->out_dir, cli_out_names[0], cli_out_names[1],
	       cli_out_names[2],
	       drop_empty_offcpu(dirfd) ? "" : " offcpu.pb.gz offcpu.folded offcpu.html");
	rc = 0;
out:
	for (int i = 0; i < 6; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	for (uint32_t k = 0; k < sv.nsymb; k++)
		for (int i = 0; i < 2; i++)
			if (kids[1 + k].out[i] >= 0)
				close(kids[1 + k].out[i]);
	cli_shards__close(&parts);
	if (sfd >= 0)
		close(sfd);
	if (rc && dirfd >= 0) {
		drop_empty_offcpu(dirfd);
		cli_remove_empty_outputs(dirfd, 6, &made);
	}
	lp_made_dirs__close(&made);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

int lp_cmd_replay(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"user", required_argument, NULL, 'u'},
		{"cache", required_argument, NULL, 'C'},
		{"cache-size", required_argument, NULL, 'Z'},
		{"no-cache", no_argument, NULL, 'X'},
		{"debug-dir", required_argument, NULL, 'G'},
		{"output-mode", required_argument, NULL, 'M'},
		{"jobs", required_argument, NULL, 'j'},
		{"verbose", no_argument, NULL, 'v'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct replay_opts o = {
		.out_dir = "lowprof-out", .user = LP_USER_DEFAULT, .output_mode = LP_OUTPUT_MODE};
	uint64_t size;
	int opt;

	while ((opt = getopt_long(argc, argv, "o:u:j:vh", longopts, NULL)) != -1) {
		switch (opt) {
		case 'j':
			if (lp_parse_uint(optarg, LP_MAX_SHARDS, &size) || !size) {
				lp_err("-j %s: give a number of symbolizers from 1 to %d", optarg,
				       LP_MAX_SHARDS);
				return 2;
			}
			o.jobs = (uint32_t)size;
			break;
		case 'o':
			o.out_dir = optarg;
			break;
		case 'u':
			o.user = optarg;
			break;
		case 'C':
			if (optarg[0] != '/') {
				lp_err("--cache %s: give an absolute path", optarg);
				return 2;
			}
			o.cache_path = optarg;
			break;
		case 'Z':
			if (lp_parse_size(optarg, &size) || size < (1u << 20)) {
				lp_err("--cache-size %s: give a size of at least 1M", optarg);
				return 2;
			}
			o.cache_size = optarg;
			break;
		case 'X':
			o.no_cache = true;
			break;
		case 'G':
			if (o.ndebug == LP_RECORD_MAX_DEBUG_DIRS) {
				lp_err("at most %d --debug-dir options", LP_RECORD_MAX_DEBUG_DIRS);
				return 2;
			}
			o.debug_dirs[o.ndebug++] = optarg;
			break;
		case 'M':
			if (cli_parse_output_mode(optarg, &o.output_mode))
				return 2;
			break;
		case 'v':
			o.verbose = true;
			lp_log_init("lowprof", LP_LOG_DEBUG);
			break;
		case 'h':
			fputs(lp_replay_usage, stdout);
			return 0;
		default:
			fputs(lp_replay_usage, stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		lp_err(optind == argc ? "give the capture file (see lowprof replay --help)"
				      : "give one capture file (see lowprof replay --help)");
		return 2;
	}
	o.file = argv[optind];
	return run_replay(&o);
}
