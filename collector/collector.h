/* SPDX-License-Identifier: MIT */
/*
 * lowprof-collector: the privileged, minimal half of lowprof. Loads and
 * attaches the BPF programs, drains the BPF ring buffer into the
 * shared-memory ring as schema records, and adds what only a privileged
 * process can read: process mappings (/proc/PID/maps) and the kernel symbol
 * snapshot (/proc/kallsyms). It never opens or parses ELF files or anything
 * else a profiled process controls. After attaching it drops every
 * capability but CAP_SYS_PTRACE and CAP_DAC_READ_SEARCH (other users' maps,
 * and opening mapped files for the symbolizer: files.c). With a
 * capture file it also writes every record there (capture.h), with or
 * without a symbolizer on the ring.
 *
 * Shards (lowprof/shard.h): with several rings, one symbolizer on each,
 * each process's samples and JIT records go to the ring of its shard and
 * every other record to all of them; the capture gets each record once.
 */
#ifndef LOWPROF_COLLECTOR_H
#define LOWPROF_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lowprof/shard.h"

#define COLL_DEFAULT_FREQ     99
#define COLL_DEFAULT_DRAIN_MS 100
#define COLL_MAX_FREQ	      10000
#define COLL_MAX_PIDS	      1024
#define COLL_MAX_CGROUPS      16 /* LP_MAX_CGROUPS of the BPF programs */
/*
 * The longest nap between drains when the BPF programs can wake the
 * collector (once the ring is half full): at low rates a drain a second,
 * not ten.
 */
#define COLL_IDLE_DRAIN_MS 1000
/*
 * The shared ring wraps early (lp_ring__set_early_wrap) at this many seconds
 * of its recent write rate, and at no less than 1/DIV of its size.
 */
#define COLL_RING_EARLY_WRAP_DIV 8
#define COLL_RING_EARLY_WRAP_S	 2
/* user stack copy per sample: see LP_BPF_MAX_STACK_COPY for the default's reason */
#define COLL_DEFAULT_STACK_BYTES 16384
#define COLL_MAX_STACK_BYTES	 65536

/*
 * Off-CPU defaults (--off-cpu-*), from costs measured on a 2-CPU 6.18 VM
 * (bpf_stats, perf bench sched pipe): a block that is not sampled costs
 * ~100 ns in sched_switch and ~45 ns per syscall exit; a sampled one ~1.5 us
 * more (kernel stack, 16 KiB stack copy, ring). Time mode keeps the sampled
 * blocks to about (blocked time) / period whatever the switch rate, never
 * misses a block of a period or more, and its totals are unbiased: the
 * default. Its 10 ms period matches the on-CPU default (99 Hz, ~10 ms of CPU
 * per sample) and bounds samples to 100 per second per blocked thread. Event
 * mode's default rate 0.01 keeps the sampled path near 15% of the per-switch
 * cost (0.01 x 1.5 us); 0.1 already costs +55%. No minimum: short blocks
 * cost the unsampled path only, and dropping them would bias the totals.
 */
enum coll_off_cpu_mode {
	COLL_OFFCPU_EVENT = 0, /* each block with probability rate */
	COLL_OFFCPU_TIME = 1,  /* each block of d ns with probability min(1, d / period) */
};

#define COLL_DEFAULT_OFFCPU_MODE      COLL_OFFCPU_TIME
#define COLL_DEFAULT_OFFCPU_RATE      0.01
#define COLL_DEFAULT_OFFCPU_MIN_NS    0
#define COLL_DEFAULT_OFFCPU_PERIOD_NS 10000000ull   /* 10 ms: about one on-CPU period at 99 Hz */
#define COLL_MAX_OFFCPU_PERIOD_NS     4000000000ull /* < 2^32 ns, see offcpu.h */

struct coll_opts {
	size_t sz;	   /* sizeof(struct coll_opts), checked (lowprof/opts.h) */
	uint32_t freq_hz;  /* sampling frequency per CPU */
	double duration_s; /* 0: until SIGINT/SIGTERM */
	const pid_t *pids; /* processes to profile; npids == 0: whole host */
	size_t npids;
	/*
	 * Sealed, formatted rings to produce into (--ring-fd, once per
	 * shard): shard i's data memfd ring_fds[i][0] and consumer page
	 * ring_fds[i][1]; nring_fds of them, 0: none. files_fds[i]: shard i's
	 * file channel (lowprof/files.h); nfiles_fds is 0 or nring_fds.
	 */
	int ring_fds[LP_MAX_SHARDS][2];
	uint32_t nring_fds;
	int files_fds[LP_MAX_SHARDS];
	uint32_t nfiles_fds;
	const char *ring_path; /* or: create nshards rings and hand them out on this socket */
	uint32_t nshards;      /* --shards: rings created for ring_path (0: 1) */
	uint64_t ring_size;    /* data size of each ring created (0: formula) */
	uid_t ring_uid;	       /* the only uid (besides root) the ring is handed to */
	uint32_t drain_ms;     /* BPF ring drain interval */
	uint32_t size_cpus;    /* --size-cpus: CPUs the rings are sized for (0: online) */
	uint32_t stack_bytes;  /* user stack copy per sample; 0: kernel FP walk */
	bool exit_with_parent; /* SIGTERM ourselves when the parent dies */
	pid_t parent;	       /* getppid() at start */
	bool keep_caps;	       /* do not drop capabilities after attaching (tests) */
	/* off-CPU (sched_switch) sampling */
	bool off_cpu;
	enum coll_off_cpu_mode off_cpu_mode;
	double off_cpu_rate;	    /* event mode: 0 < rate <= 1 */
	uint64_t off_cpu_min_ns;    /* shorter blocks are counted, not recorded */
	uint64_t off_cpu_period_ns; /* time mode: 0 < period <= COLL_MAX_OFFCPU_PERIOD_NS */
	/* relocate against the full kernel BTF even where the minimal one fits (btf.h) */
	bool full_btf;
	/*
	 * Capture file (lowprof/capture.h) of every record: created at
	 * capture_path, or an inherited capture_fd (-1: none). With a capture
	 * the ring is optional (the collector alone). capture_compress: zstd.
	 */
	const char *capture_path;
	int capture_fd;
	bool capture_compress;
	/*
	 * Cgroup filter (--cgroup): only processes in these cgroup v2
	 * directories or below them (absolute, or relative to the hierarchy's
	 * root), at most COLL_MAX_CGROUPS; with pids too, a process must pass
	 * both.
	 */
	const char *const *cgroups;
	size_t ncgroups;
	/*
	 * lowprof's own processes are left out in BPF (shared.bpf.h lp_self):
	 * the collector, self_pid (lowprof record or run; > 0) and what is
	 * below it, each symbolizer that takes the ring, what they start, and
	 * with --ring PATH the ring owner's uid (coll_self_uid). include_self:
	 * none of them is.
	 */
	bool include_self;
	pid_t self_pid;
	/*
	 * --capture-dir: instead of one capture, a file per window of
	 * capture_rotate_s seconds (from the run's start) in capture_dir, each
	 * replayable alone, the oldest removed beyond capture_bytes (0: 1 GiB):
	 * capdir.h.
	 */
	const char *capture_dir;
	uint32_t capture_rotate_s;
	uint64_t capture_bytes;
};

/*
 * Runs until the duration elapses or a signal arrives; returns an exit code
 * (1 also when opts->sz is not one this build can read: lowprof/opts.h).
 */
int coll_run(const struct coll_opts *opts);

#endif /* LOWPROF_COLLECTOR_H */
