/* SPDX-License-Identifier: MIT */
#ifndef LOWPROF_RECORD_H
#define LOWPROF_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LP_RECORD_MAX_PIDS    1024
#define LP_RECORD_MAX_CGROUPS 16

struct lp_record_opts {
	size_t sz; /* sizeof(struct lp_record_opts), checked (lowprof/opts.h) */
	uint32_t freq_hz;
	double duration_s; /* 0: until Ctrl-C / SIGTERM */
	const pid_t *pids;
	size_t npids;
	const char *out_dir;
	const char *user; /* the symbolizer's user */
	bool verbose;
	uint32_t stack_bytes;	       /* user stack copy per sample */
	const char *cache_path;	       /* symbol cache; NULL: none */
	const char *cache_size;	       /* passed through as given; NULL: default */
	const char *const *debug_dirs; /* NULL-terminated, may be empty */
	bool off_cpu;
	/* --off-cpu-rate, -min-us, -mode, -period-us as given (checked); NULL: default */
	const char *off_cpu_args[4];
	/* --capture FILE: every record also written there (collector) */
	const char *capture_path;
	const char *capture_compress; /* "zstd" or "none" as given; NULL: default */
	bool no_symbolize;	      /* the collector alone: only the capture */
	/* profile lowprof's own processes too (the collector's --include-self) */
	bool include_self;
	mode_t output_mode; /* of the output files (dirs made: x where r); 0: LP_OUTPUT_MODE */
	/*
	 * lowprof run: no outputs at the end; every window_s seconds the
	 * symbolizer writes the window's profiles into spool_dir (made if
	 * missing, the symbolizer user's, 0700). spool_bytes as given; NULL:
	 * the symbolizer's default.
	 */
	const char *spool_dir;
	uint32_t window_s;
	const char *spool_bytes;
	const char *mem_budget; /* as given (checked); NULL: the symbolizer's default */
	/* --cgroup: only processes in these cgroup v2 directories (the collector checks them) */
	const char *const *cgroups;
	size_t ncgroups;
	/*
	 * lowprof run: lowprof-exporter's options ("--otlp" "URL" ...,
	 * NULL-terminated), or NULL for no exporter. It is started on the
	 * spool before anything else, as --user.
	 */
	const char *const *exporter_args;
	/*
	 * --symbolizers N: N symbolizer processes, each on a ring of its own
	 * with the samples of its processes (lowprof/shard.h); record merges
	 * their profiles into the outputs. 0 or 1: one.
	 */
	uint32_t nsymb;
	/*
	 * lowprof run --capture-dir: the collector also writes a capture file
	 * per window (its --capture-dir, rotated every window_s);
	 * capture_bytes as given (checked), NULL: the collector's default.
	 */
	const char *capture_dir;
	const char *capture_bytes;
};

#define LP_RECORD_MAX_OUTPUTS 6
/* a symbolizer that dies during a run is started again at most this often */
#define LP_RECORD_MAX_RESTARTS 20

#define LP_RECORD_DEFAULT_CACHE	 "/var/cache/lowprof/symbols.db"
#define LP_RUN_DEFAULT_SPOOL	 "/var/lib/lowprof/spool"
#define LP_RECORD_MAX_DEBUG_DIRS 16

/*
 * Runs a whole recording; returns the process exit code (1 also when
 * opts->sz is not one this build can read: lowprof/opts.h).
 */
int lp_record(const struct lp_record_opts *opts);

/*
 * lowprof replay / capture-info / windows / merge: parse their arguments
 * and run (replay.c, capinfo.c, windows.c, merge.c).
 */
extern const char lp_replay_usage[], lp_capture_info_usage[], lp_windows_usage[], lp_merge_usage[];
int lp_cmd_replay(int argc, char **argv);
int lp_cmd_capture_info(int argc, char **argv);
int lp_cmd_windows(int argc, char **argv);
int lp_cmd_merge(int argc, char **argv);

#endif /* LOWPROF_RECORD_H */
