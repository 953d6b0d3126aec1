/* SPDX-License-Identifier: MIT */
/*
 * A directory of capture files, one per window (lowprof-collector
 * --capture-dir): where each file is made, how it becomes visible, and
 * the byte budget that removes the oldest.
 *
 * A window's file is written as ".capture-TIME-SEQ.lpcap.tmp" (hidden, and
 * not matching *.lpcap) and renamed to "capture-TIME-SEQ.lpcap" once it is
 * complete (end record written, every block on disk, fdatasync'd): a batch
 * job that picks up *.lpcap never reads a half-written file. TIME is the
 * window's start in UTC (20261125T215940Z), SEQ counts windows, from 0 in
 * an empty directory and after the highest one there otherwise (a
 * restarted collector never replaces a file). Names are those of the
 * spool's windows (lowprof/spoolname.h) with another kind and suffix.
 *
 * The directory is opened without following a symbolic link in its path
 * and must be the collector's user's or root's, and writable by nobody
 * else unless sticky: the budget removes files in it. Files are created
 * 0600 (they hold copies of stacks). The budget counts the complete files
 * and removes the oldest while they are over it, never the newest; only
 * regular files of ours with a window's name are counted or removed.
 *
 * What it is not: the writer of the files (capture.h).
 */
#ifndef LOWPROF_COLL_CAPDIR_H
#define LOWPROF_COLL_CAPDIR_H

#include <stdbool.h>
#include <stdint.h>

#define COLL_CAPDIR_DEFAULT_BYTES (1ull << 30)
#define COLL_CAPDIR_NAME_MAX	  64

struct coll_capdir;

struct coll_capdir_stats {
	uint64_t files;		/* made complete (renamed) */
	uint64_t removed;	/* removed by the budget */
	uint64_t removed_bytes; /* their bytes */
	uint64_t bytes;		/* of the complete files there now, after the last publish */
	uint64_t tmp_cleaned;	/* temporary files a killed collector left, removed at start */
};

/*
 * Opens (creating it 0700 if missing) dir for windows' files with a budget
 * of budget bytes (0: COLL_CAPDIR_DEFAULT_BYTES). Returns 0 and *out, or a
 * negative errno: -ELOOP (a symbolic link in the path), -EPERM (another
 * user's directory, or one others may write). Destructor: coll_capdir__free.
 */
int coll_capdir__new(const char *dir, uint64_t budget, struct coll_capdir **out);

/*
 * Creates the temporary file of the next window, starting at start_real_ns
 * (CLOCK_REALTIME); name gets its final name. Returns its fd (the caller's
 * to close) or a negative errno. Several may be open (one being written,
 * one being synced); each ends with a publish.
 */
int coll_capdir__create(struct coll_capdir *d, int64_t start_real_ns,
			char name[COLL_CAPDIR_NAME_MAX]);

/*
 * Renames the window's file (name, as create gave it) to its final name
 * (ok) or removes it (!ok), and then applies the budget. 0 or a negative
 * errno (the rename's).
 */
int coll_capdir__publish(struct coll_capdir *d, const char *name, bool ok);

void coll_capdir__stats(const struct coll_capdir *d, struct coll_capdir_stats *st);
void coll_capdir__free(struct coll_capdir *d);

/*
 * Whether name is a window's file: "capture-YYYYmmddTHHMMSSZ-NNNNNN.lpcap"
 * (the time and number as a spool's window names have them,
 * lp_name_time_seq: a date that exists, the number as %06 prints it, at
 * most 18 digits); *seq gets its number. Strict: anything else is false.
 */
bool coll_capdir_parse_name(const char *name, uint64_t *seq);

#endif /* LOWPROF_COLL_CAPDIR_H */
