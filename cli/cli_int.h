/* SPDX-License-Identifier: MIT */
/*
 * What the lowprof commands share (record.c): output files, starting the
 * collector and the symbolizer as children, relaying their output, and the
 * symbol cache's directory.
 */
#ifndef LOWPROF_CLI_INT_H
#define LOWPROF_CLI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct lp_ring;

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
 * directory, or -1 (said why).
 */
int cli_open_outputs(const char *dir, mode_t mode, int fds[], int nout, int *dirfd);
/* After a failed run: removes the outputs in dirfd unless a folded file has samples. */
void cli_remove_empty_outputs(int dirfd, int nout);
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
	int left;     /* restarts still allowed */
	int restarts; /* done */
	/* before a restart (may be NULL): updates argv; false: do not restart */
	bool (*prepare)(void *ctx);
	void *ctx;
};

/*
 * Waits for kids[0] (the collector; may be done already) and kids[1] (the
 * symbolizer), relaying the symbolizer's output; signals from sfd stop
 * them in turn. ring (may be NULL) is closed if the collector dies. With
 * restart (may be NULL), a symbolizer that dies is started again; with
 * coll (may be NULL, lowprof run), a collector that dies is started again
 * on the same ring, where the symbolizer goes on reading.
 */
void cli_supervise(struct cli_child *kids, int sfd, struct lp_ring *ring, struct cli_restart *coll,
		   struct cli_restart *restart);
/* Makes the cache's directory usable by user; 0 or -errno (warned). */
int cli_prepare_cache_dir(const char *cache_path, const char *user);
/* lowprof run's spool directory (record.c): 0, or -1 after saying why. */
int cli_prepare_spool_dir(const char *dir, const char *user);

#endif /* LOWPROF_CLI_INT_H */
