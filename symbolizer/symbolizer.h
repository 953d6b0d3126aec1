/* SPDX-License-Identifier: MIT */
/*
 * lowprof-symbolizer: the unprivileged half of lowprof. Reads records from
 * the shared-memory ring (or a capture file), normalizes and aggregates stacks, symbolizes them
 * (ELF symbols, the kernel symbol snapshot) and writes pprof, folded stacks
 * and an HTML flame graph: of on-CPU samples, and with --off-cpu of
 * off-CPU samples in files of their own. Started as root it first becomes
 * an unprivileged user with no capabilities in any set and no_new_privs.
 */
#ifndef LOWPROF_SYMBOLIZER_H
#define LOWPROF_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct symb_opts {
	size_t sz;	       /* sizeof(struct symb_opts) */
	int ring_fd;	       /* inherited ring (read-only is enough), or -1 */
	int ring_cons_fd;      /* and its consumer page */
	const char *ring_path; /* or: receive the ring on this Unix socket */
	uid_t collector_uid;   /* whose socket ring_path may be, besides root's */
	int files_fd;	       /* the file channel to the collector (--ring PATH: the socket) */
	const char *out_dir;   /* write DIR/cpu.{pb.gz,folded,html} (and DIR/offcpu.*) */
	int out_fds[3];	       /* or: pprof, folded, html fds given by lowprof record */
	const char *user;      /* drop to this user when started as root */
	bool exit_with_parent;
	pid_t parent; /* getppid() at start */
	bool quiet_summary;
	const char *cache_path;	       /* SQLite symbol cache; NULL: none */
	uint64_t cache_size;	       /* its byte budget; 0: the default */
	const char *const *debug_dirs; /* separate debug files by build-id; NULL-terminated */
	/*
	 * Aggregate off-CPU samples into a second profile: DIR/offcpu.{pb.gz,
	 * folded,html}, or offcpu_fds (pprof, folded, html) with out_fds.
	 * Without it, off-CPU samples are counted and dropped.
	 */
	bool off_cpu;
	int offcpu_fds[3];
	/*
	 * Replay: read the records from a capture file instead of a ring
	 * (opened before privileges are dropped). Files are then found by
	 * build-id; off-CPU outputs are written when the capture has off-CPU
	 * data (with out_fds, offcpu_fds must be given too).
	 */
	const char *capture_path;
	int capture_fd;	    /* or an inherited one; -1: none */
	bool progress;	    /* a progress line on stderr while replaying, even if not a tty */
	bool no_sandbox;    /* skip the seccomp filter (debugging) */
	bool resumed;	    /* restarted on a ring in use: wait for the resent metadata */
	bool check_sandbox; /* drop privileges, enter the sandbox, try what it must stop */
	/*
	 * Service mode (with a ring): instead of outputs at the end, every
	 * window_ns the profiles of that window go into the spool directory
	 * (spool.h), and the partial last window when the run stops.
	 */
	const char *spool_dir;
	uint64_t window_ns;
	uint64_t spool_bytes; /* its budget; 0: the default */
	/* the memory budget between windows (symb_objects__trim); 0: the default */
	uint64_t mem_budget;
	/*
	 * Shard shard of nshards (lowprof/shard.h); nshards 0 or 1: the whole
	 * stream. A shard aggregates only the samples (and JIT records) of
	 * its processes and takes the loss counters that are the whole run's
	 * only as shard 0; every other record it takes whole.
	 */
	uint32_t shard, nshards;
	/*
	 * A shard of lowprof record or replay (--partial-fds): instead of the
	 * outputs, its pprof profiles to out_fds[0] and offcpu_fds[0] and its
	 * summary to summary_fd, for lowprof to merge with the other shards'.
	 */
	bool partial;
	int summary_fd;
	/*
	 * With spool_dir: an inherited descriptor of it that holds (or takes)
	 * its lock (lowprof run's, which holds it for the run); -1: the spool
	 * is locked through a descriptor of its own (spool.h).
	 */
	int spool_lock_fd;
};

#define SYMB_DEFAULT_MEM_BUDGET (256ull << 20)

#define SYMB_DEFAULT_CACHE     "/var/cache/lowprof/symbols.db"
#define SYMB_DEFAULT_DEBUG_DIR "/usr/lib/debug"
#define SYMB_MAX_DEBUG_DIRS    16

/* Runs until the ring is closed and drained, or a signal; returns an exit code. */
int symb_run(const struct symb_opts *opts);

#endif /* LOWPROF_SYMBOLIZER_H */
