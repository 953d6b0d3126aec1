/* SPDX-License-Identifier: MIT */
/*
 * The spool: each window's profiles as files in one directory, for a reader
 * (the exporter, a person with go tool pprof) that takes finished files.
 *
 * What it is: a writer process the symbolizer forks before its sandbox
 * closes (which lets it make no file), and the symbolizer's side of talking
 * to it. The symbolizer writes a window's pprof into a memory file both
 * share and sends a fixed-size header on a socket; the writer copies those
 * bytes to "KIND-YYYYmmddTHHMMSSZ-SEQ.pb.gz" (".sKofN.pb.gz" for a shard of a
 * run split over symbolizers) through a temporary name and a
 * rename, so a reader never sees half a file, then removes the oldest
 * windows while the spool holds more than its byte budget, and answers.
 * Nothing else here deletes a spool file.
 *
 * What it is not: a parser. The writer reads nothing from the symbolizer
 * but the header's integers (checked) and bytes it copies as they are;
 * names are its own. It runs as the symbolizer's unprivileged user, with
 * no capabilities, no_new_privs and a seccomp filter of its own.
 */
#ifndef LOWPROF_SYMB_SPOOL_H
#define LOWPROF_SYMB_SPOOL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The default budget: a day of 10 s windows of a busy host is ~1-2 GiB. */
#define SYMB_SPOOL_DEFAULT_BYTES (1ull << 30)
/* A window's file is at most this big (the writer refuses more). */
#define SYMB_SPOOL_MAX_FILE (1ull << 30)

struct symb_spool_stats {
	uint64_t windows; /* files written */
	uint64_t bytes;	  /* their bytes */
	uint64_t removed; /* oldest files removed for the budget, or a full disk */
	uint64_t removed_bytes;
	uint64_t removed_full; /* of removed: for a full disk */
	uint64_t failed;       /* files that could not be written */
};

struct symb_spool;

/*
 * Opens (making it if missing, mode 0700) the spool directory dir and
 * starts its writer process, under a seccomp filter of its own when
 * sandbox (symb_sandbox_enter_spool); call before the symbolizer's
 * sandbox. max_bytes: the budget (0: SYMB_SPOOL_DEFAULT_BYTES), the whole
 * spool's: with shards each writer counts every window file and removes
 * the oldest overall. shard of nshards (lowprof/shard.h; nshards <= 1: the
 * whole run): with nshards > 1 every file's name says its shard
 * (lowprof/spoolname.h). One writer at a time: the spool is flock'd,
 * exclusively (shared among shards), through lock_fd, an inherited
 * descriptor of dir (lowprof run's, which holds the lock), or else one of
 * its own that the writer keeps; -EBUSY (said) while another holds it.
 * 0, or a negative errno (said why).
 * Destructor: symb_spool__close (accepts NULL): the writer sees the socket
 * close and exits (it is killed if the symbolizer dies).
 */
int symb_spool__open(const char *dir, uint64_t max_bytes, bool sandbox, uint32_t shard,
		     uint32_t nshards, int lock_fd, struct symb_spool **out);

/*
 * The number after the highest window already in the spool (0 if none), so
 * that a restarted symbolizer's windows follow its predecessor's and no
 * two files share a number; once symb_spool__first_window numbered a
 * shard's first window, that number.
 */
uint64_t symb_spool__next_seq(const struct symb_spool *sp);

/* A service run's first window. */
struct symb_spool_window {
	uint64_t seq;
	uint64_t start_mono; /* CLOCK_MONOTONIC */
	int64_t start_real;  /* CLOCK_REALTIME */
};

/*
 * The first window of a run that starts at now_mono / now_real with
 * windows of window_ns. Without shards it starts now, numbered
 * symb_spool__next_seq. With shards the windows of every shard must be the
 * same spans under the same numbers, whenever each started (or restarts):
 * windows are cut from the epoch on the real clock, window N covering
 * [N * window_ns, (N + 1) * window_ns), and the first is the one holding
 * now (partial). So numbers of a sharded run are times: a run's windows
 * follow one another, and the numbers jump over the time between two runs.
 */
void symb_spool__first_window(struct symb_spool *sp, uint64_t window_ns, uint64_t now_mono,
			      int64_t now_real, struct symb_spool_window *w);

/* The memory file to write a window's pprof into (emptied by each put). */
int symb_spool__fd(const struct symb_spool *sp);

/*
 * Hands the bytes written to the memory file since the last put to the
 * writer as the profile of kind ("cpu", "offcpu") for window seq starting
 * at start_real_ns, and waits until it is in the spool. 0, or a negative
 * errno (the window is lost and counted; later windows are still tried).
 */
int symb_spool__put(struct symb_spool *sp, const char *kind, uint64_t seq, int64_t start_real_ns);

/*
 * The symbolizer's metrics (Prometheus text) for the exporter's /metrics:
 * the bytes written to the memory file since the last put (at most
 * SYMB_SPOOL_METRICS_MAX) replace the spool's SYMB_SPOOL_METRICS file, the
 * same way as a window (temporary name, rename). Not a window: not
 * numbered, not counted, never removed by the budget. 0 or -errno.
 */
#define SYMB_SPOOL_METRICS     "metrics.prom" /* with shards: "metrics-s1of2.prom" */
#define SYMB_SPOOL_METRICS_MAX (64u << 10)
int symb_spool__put_metrics(struct symb_spool *sp);

/*
 * Whether the writer process is gone (killed: the socket to it failed).
 * Every later window would be lost: the run ends, to be started again.
 */
bool symb_spool__writer_gone(const struct symb_spool *sp);

/* The shard's metrics label, "shard=\"1of2\"", or "" without shards. */
const char *symb_spool__shard_label(const struct symb_spool *sp);

const struct symb_spool_stats *symb_spool__stats(const struct symb_spool *sp);
void symb_spool__close(struct symb_spool *sp);

#endif /* LOWPROF_SYMB_SPOOL_H */
