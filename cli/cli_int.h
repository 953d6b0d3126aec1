/* SPDX-License-Identifier: MIT */
/*
 * What the lowprof commands share: output files, starting the collector and
 * the symbolizer as children, relaying their output, and the symbol cache's
 * directory (record.c); the window files of lowprof run's spool and the
 * counters in their comments (spoolfiles.c).
 */
#ifndef LOWPROF_CLI_INT_H
#define LOWPROF_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lowprof/files.h"
#include "lowprof/spoolname.h"

struct lp_ring;
struct lpw_profile;

/* cpu.pb.gz, cpu.folded, cpu.html, then offcpu.* */
extern const char *const cli_out_names[6];

struct cli_child {
	const char *name;
	pid_t pid;
	bool done;
	int status;
	int out[2];	   /* read ends of its stdout / stderr pipes, or -1 */
	uint64_t start_ns; /* CLOCK_MONOTONIC when it was started */
};

/*
 * Creates dir if needed (no symlink in its path) and opens the first nout
 * output files in it with mode mode (lowprof/files.h); 0 with *dirfd the
 * directory and *made the directories made for it (lp_made_dirs__close
 * it), or -1 (said why) with the files it had opened and the directories
 * it made removed, and fds[] at -1 or the error.
 */
int cli_open_outputs(const char *dir, mode_t mode, int fds[], int nout, int *dirfd,
		     struct lp_made_dirs *made);
/*
 * After a failed run: removes the outputs in dirfd unless a folded file has
 * samples, and then the directories made (closed either way).
 */
void cli_remove_empty_outputs(int dirfd, int nout, struct lp_made_dirs *made);
/* What an lp_open_output_* error means, for a message; path: of a path, not a name. */
const char *cli_output_strerror(int err, bool path);
/* --output-mode MODE: octal, rw for the owner, nothing but r/w bits; 0 or -EINVAL (said why). */
int cli_parse_output_mode(const char *arg, mode_t *mode);
/* Path of a sibling program: the directory of /proc/self/exe + name. */
void cli_sibling(const char *name, char *out, size_t len);
/*
 * fork + exec prog in a new session, src[i] as fd 3 + i, stdin /dev/null;
 * with relay_out, its stdout and stderr come back through ch->out. 0 or -1.
 */
int cli_spawn(struct cli_child *ch, const char *prog, char *const argv[], const int *src, int nsrc,
	      bool relay_out);
bool cli_relay(int from, int to);
const char *cli_exit_desc(int status, char *buf, size_t len);
bool cli_child_ok(const struct cli_child *c);
void cli_reap(struct cli_child *kids, int n);
void cli_signal_kids(struct cli_child *kids, int n, int sig);
/*
 * Blocks SIGINT, SIGTERM, SIGHUP and SIGCHLD and returns a signalfd
 * (non-blocking, close-on-exec) that receives them, so none is lost between
 * a check and a wait; -1 after saying why.
 */
int cli_signalfd(void);
/*
 * How to start the symbolizer again when it dies while the collector runs
 * (lowprof record): its program, arguments (with --resumed) and inherited
 * fds, and how many restarts are left. The collector is then told to send
 * its metadata, kernel symbols and mappings again (SIGUSR1).
 */
struct cli_restart {
	const char *prog;
	char **argv;
	const int *fds;
	int nfds;
	/* a symbolizer's: the collector is asked to send its ring what a new one needs (SIGUSR1) */
	bool resend;
	int left;     /* restarts still allowed */
	int restarts; /* done */
	/* before a restart (may be NULL): updates argv; false: do not restart */
	bool (*prepare)(void *ctx);
	void *ctx;
};

/*
 * What cli_supervise watches: kids[0], the collector (may be done already:
 * none), and kids[1..nsymb], the symbolizers (shard k is kids[1 + k]).
 * rings (may be NULL): closed if the collector dies. restart (NULL, or
 * one per symbolizer): a symbolizer that dies is started again on its
 * ring. coll_restart (may be NULL, lowprof run): a collector that dies is
 * started again on the same rings, where the symbolizers go on reading.
 */
struct cli_supervision {
	struct cli_child *kids;
	uint32_t nsymb;
	struct lp_ring **rings;
	/*
	 * lowprof record's ends of the symbolizers' file channels, kept for a
	 * restarted one (NULL, or nsymb of them, -1 once shut): shut when
	 * symbolizer k is over for good, since the collector serves the
	 * channel after its end until it closes
	 */
	int *files;
	struct cli_restart *restart;
	struct cli_restart *coll_restart;
	/*
	 * lowprof run's exporter (may be NULL): one that dies while the
	 * collector runs is started again by exp_spawn(exp_ctx) (0 or -1),
	 * as the collector is (exp_restart: its left and restarts)
	 */
	struct cli_child *exporter;
	int (*exp_spawn)(void *ctx);
	void *exp_ctx;
	struct cli_restart *exp_restart;
};

/*
 * Until the collector and every symbolizer are done, relaying the
 * symbolizers' output; signals from sfd stop them in turn (the collector,
 * then all, then SIGKILL).
 */
void cli_supervise(struct cli_supervision *sv, int sfd);
/* Makes the cache's directory usable by user; 0 or -errno (warned). */
int cli_prepare_cache_dir(const char *cache_path, const char *user);
/*
 * lowprof run's spool directory (record.c), flock'd in *lock_fd for the
 * run: 0, or -1 after saying why (another run holds it, too).
 */
int cli_prepare_spool_dir(const char *dir, const char *user, int *lock_fd);

/* ---- window files (spoolfiles.c) ------------------------------------------ */

/* "cpu", "offcpu": the kinds of window, in the order windows lists them */
#define CLI_WIN_KINDS LP_SPOOL_KINDS
extern const char *const *const cli_win_kinds;

/*
 * One window file: KIND-YYYYmmddTHHMMSSZ-SEQ.pb.gz, or SEQ.sKofN.pb.gz for
 * shard K of N (symbolizer/spool.c, lowprof/spoolname.h).
 */
struct cli_win_file {
	char name[64];
	int kind;		 /* index into cli_win_kinds */
	uint64_t seq;		 /* the window's number */
	int64_t start_s;	 /* its start from the name: seconds since the epoch */
	uint64_t size;		 /* bytes (cli_win_scan) */
	uint32_t shard, nshards; /* nshards 1: no shard's */
};

/* What to add to an error opening a spool: for EACCES, whose it is. */
const char *cli_spool_hint(int err);

/* ns since the epoch as "2026-11-26T00:50:28Z" in buf, or "-" for one gmtime cannot show. */
const char *cli_fmt_utc(char *buf, size_t len, int64_t ns);

/* Parses a window file's name (not its path) into f, size aside: 0 or -EINVAL. */
int cli_win_parse_name(const char *name, struct cli_win_file *f);

/*
 * The window files in directory dirfd (regular, named as windows, not
 * starting with '.'), sorted by kind, then number, then shard (none
 * first): 0 with *out (free it) and *n, or a negative errno.
 */
int cli_win_scan(int dirfd, struct cli_win_file **out, size_t *n);

/*
 * Counter lines of a profile's comments, as symbolizer/build/build.c's
 * describe() writes them: "lost: N text, N text, ...", "off-CPU: N text,
 * ..." and "lowprof: the collector started again N times ...", each
 * counting its window alone. shape is the line with each number replaced by
 * CLI_COUNT_MARK, so lines that differ only in their numbers have the same
 * shape and can be summed.
 */
#define CLI_MAX_COUNTS 8
#define CLI_COUNT_MARK '\x01'
struct cli_counts {
	char shape[256];
	uint64_t v[CLI_MAX_COUNTS];
	int n;
};

/* line into c: 0, or -EINVAL when it is not a counter line. */
int cli_counts_parse(const char *line, struct cli_counts *c);
/* The line c stands for, its numbers put back, into buf (len >= 1 bytes). */
void cli_counts_format(const struct cli_counts *c, char *buf, size_t len);
/*
 * The samples a profile says it lost: every counter of its "lost:" line
 * and the last ("N lost") of its "off-CPU:" line. false when it has
 * neither line (the counters were not reported), *lost 0.
 */
bool cli_losses(const struct lpw_profile *p, uint64_t *lost);

#endif /* LOWPROF_CLI_INT_H */
