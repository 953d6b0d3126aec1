/* SPDX-License-Identifier: MIT */
/* Collector internals shared by its source files. */
#ifndef LOWPROF_COLLECTOR_INT_H
#define LOWPROF_COLLECTOR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "lowprof/files.h"
#include "lowprof/schema.h"

struct coll_opts;

struct coll_range {
	uint64_t start, end;
};

struct coll_perfmap;

struct coll_proc {
	bool used;
	uint32_t pid;
	uint64_t maps_ns;	   /* when its maps were last read */
	bool maps_read;		   /* they were, once */
	bool born;		   /* its fork or exec came as a side-band event */
	struct coll_range *ranges; /* executable ranges, ascending */
	uint32_t nranges;
	struct coll_perfmap *pm; /* its JIT perf map (perfmap.c), or NULL */
	uint64_t pm_looked_ns;	 /* when its perf map was last looked for */
	bool pm_remote;		 /* its perf map's path is not local: counted once */
	struct coll_perfmap *jd; /* its jitdump file (perfmap.c), or NULL */
	bool jd_remote;		 /* its jitdump's path is not local: counted once */
};

/* Open-addressing hash of processes; pointers die on the next add. */
struct coll_procs {
	struct coll_proc *slots;
	uint32_t cap, count;
};

struct coll_proc *coll_procs_find(struct coll_procs *t, uint32_t pid);
struct coll_proc *coll_procs_add(struct coll_procs *t, uint32_t pid);
void coll_procs_del(struct coll_procs *t, uint32_t pid);
void coll_procs_free(struct coll_procs *t);
bool coll_proc_covers(const struct coll_proc *p, uint64_t ip);
/* Adds [start, end) to p's ranges, merged with those it touches: 0, -ENOSPC, -ENOMEM. */
int coll_proc_add_range(struct coll_proc *p, uint64_t start, uint64_t end);
/* A mapping's LPS_PROT_* bits from mmap's PROT_* and MAP_* (MAP_PRIVATE). */
uint32_t coll_prot_bits(uint32_t prot, uint32_t flags);
int coll_read_maps(struct coll_proc *p, uint32_t tid, uint64_t now_ns, struct lps_enc *enc,
		   int (*emit)(void *ctx, struct lps_enc *enc), void *ctx);

/*
 * JIT perf maps (perfmap.c): copied into the stream as LPS_PERFMAP records,
 * never parsed. coll_perfmap_refresh, after a read of p's mappings: finds
 * p's perf map (a new file at the path starts over from offset 0) and sends
 * what is new. coll_perfmaps_poll, once a drain, before the samples: sends
 * what every known perf map grew by, and looks again, every
 * COLL_PERFMAP_LOOK_NS, for the perf map of a process whose maps were read
 * without one (mmap events make later maps reads rare). coll_perfmap_forget: the next refresh
 * sends the file from offset 0 (exec, a new reader); the table's del and
 * free call it. Both send through emit, as coll_read_maps does, and return
 * 0 or the first negative errno (what was not emitted is sent next time).
 */
#define COLL_PERFMAP_LOOK_NS (10ull * 1000000000)

struct coll_perfmap_stats {
	uint64_t files;	       /* perf map files found */
	uint64_t refused;      /* found but not a regular file of the process's uid */
	uint64_t remote;       /* processes whose file's path is not on local file systems */
	uint64_t records;      /* LPS_PERFMAP records emitted */
	uint64_t bytes;	       /* their data bytes */
	uint64_t capped_files; /* files longer than the per-process cap: the rest not sent */
};

int coll_perfmap_refresh(struct coll_proc *p, uint64_t now_ns, struct lps_enc *enc,
			 int (*emit)(void *ctx, struct lps_enc *enc), void *ctx);
int coll_perfmaps_poll(struct coll_procs *t, uint64_t now_ns, struct lps_enc *enc,
		       int (*emit)(void *ctx, struct lps_enc *enc), void *ctx);
void coll_perfmap_forget(struct coll_proc *p);
void coll_perfmap_stats(struct coll_perfmap_stats *st);
/*
 * jitdump files (perfmap.c), sent as LPS_JITDUMP records the same way:
 * coll_jitdump_seen, for each executable mapping of p (mmap event, maps
 * read), notes path when it names a jitdump (jit-N.dump); the poll opens
 * it and sends what it grew by; coll_perfmap_forget forgets it too.
 */
void coll_jitdump_seen(struct coll_proc *p, const char *path, size_t len);
void coll_jitdump_stats(struct coll_perfmap_stats *st);

/*
 * Mappings go out without build-ids from now on: the kernel has no
 * PROCMAP_QUERY (kfeatures.h), said once.
 */
void coll_procs_no_build_ids(void);

/* Whether pid is one of pids[0..npids), or npids is 0 (the whole host): files.c */
bool coll_pid_profiled(const pid_t *pids, size_t npids, uint32_t pid);

/* Capabilities: caps.c */
int coll_drop_caps(void);

/*
 * The file channel (lowprof/files.h): files.c. coll_file_open opens
 * read-only the file pid maps executable from that device and inode, or
 * returns -errno (-ENOENT: no such mapping; -ESTALE: the path now leads to
 * another file and the mapping cannot be reached otherwise; -EPERM: the
 * file is deleted or replaced and only /proc/PID/map_files reaches it,
 * which needs a capability the collector does not have). In two steps:
 * coll_mapped_path finds the mapping in /proc/PID/maps (its path as the
 * kernel printed it, " (deleted)" included, and its range),
 * coll_file_open_at opens it inside the process's root, or else as the
 * process's executable (/proc/PID/exe) or the mapping itself
 * (/proc/PID/map_files/START-END), and checks it is that file. Either can
 * block for as long as a file system hangs (the maps read waits for the
 * process's mmap lock).
 */
struct coll_mapped {
	uint64_t start, end;
	char path[4096];
};

int coll_file_open(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode);
int coll_mapped_path(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode,
		     struct coll_mapped *out);
int coll_file_open_at(uint32_t pid, const struct coll_mapped *m, uint32_t major, uint32_t minor,
		      uint64_t inode);
/*
 * What coll_file_open_at tries first, with any check: opens path inside pid's root
 * (openat2 RESOLVE_IN_ROOT, no magic link, the last component no symbolic
 * link), fstats it into *st, and when ok(st, arg) holds reopens that inode
 * read-only (O_NONBLOCK: no FIFO wait). Returns the descriptor, -ESTALE
 * when ok refused it (or the reopened inode is another), or -errno.
 */
int coll_open_in_root(uint32_t pid, const char *path,
		      bool (*ok)(const struct stat *st, const void *arg), const void *arg,
		      struct stat *st);

/*
 * coll_open_in_root for the drain loop, which must never wait: the path
 * is walked one component at a time (no symbolic link, no "." or ".."),
 * and nothing is asked of a mount, the process's root included, before
 * its type (from the process's mountinfo) is found to be one whose
 * lookups and reads no user's daemon or remote server serves: tmpfs, the
 * local disk file systems, and overlay in the collector's user namespace
 * (files.c's local_types). Any other, or one that cannot be told, is
 * -EREMOTE. The file's reads later are on that file system too.
 */
int coll_open_local_in_root(uint32_t pid, const char *path,
			    bool (*ok)(const struct stat *st, const void *arg), const void *arg,
			    struct stat *st);

/*
 * The file broker: answers the symbolizer's requests without ever
 * blocking the caller (the drain loop). coll_broker__serve reads up to max
 * waiting requests on sock, refuses what it must (malformed, another uid
 * than owner or root, a pid not in pids when npids > 0, no room) and
 * queues the rest for a worker process, which opens the file
 * (coll_file_open's two steps); coll_broker__tick collects what the
 * workers found and answers it, answers -ETIMEDOUT what took longer than
 * timeout_ms and gives up on its worker (at most max_stuck of those at
 * once). Call tick often: when coll_broker__fd is readable, and at the
 * latest after the milliseconds it returns (-1: nothing pending). serve
 * returns how many requests it read, -EPIPE when the peer is gone, or
 * another -errno. Several channels may be served (a symbolizer per shard):
 * each answer goes to the channel its request came on. coll_broker__detach:
 * channel sock closed, its requests are answered no more (a new channel,
 * even one with the same descriptor number, may be served later). coll_broker__free leaves workers stuck in the kernel
 * where they are: they die when they return. Details in files.c.
 */
struct coll_files_stats {
	uint64_t sent;	      /* descriptors handed over */
	uint64_t failed;      /* not found, replaced, or the open failed */
	uint64_t refused;     /* malformed, or from another uid */
	uint64_t refused_pid; /* for a process not given with -p */
	uint64_t busy;	      /* no room: queue full, workers stuck, or near a stuck one */
	uint64_t timeouts;    /* answered -ETIMEDOUT */
	uint64_t late;	      /* opens that returned after their timeout */
	uint32_t stuck;	      /* workers in the kernel past their timeout, now */
	uint32_t stuck_peak;  /* and at most */
	uint32_t warned, warned_pid;
};

struct coll_broker_opts {
	uid_t owner; /* besides root, the uid that may ask */
	const pid_t *pids;
	size_t npids;	     /* 0: any process */
	uint32_t timeout_ms; /* 0: 1000 */
	uint32_t max_stuck;  /* 0 (or more than 4): 4 */
	/* NULL: coll_mapped_path and coll_file_open_at (tests put slow ones here) */
	int (*maps)(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode,
		    struct coll_mapped *out);
	int (*open)(uint32_t pid, const struct coll_mapped *m, uint32_t major, uint32_t minor,
		    uint64_t inode);
	/* a build-id note (lowprof/files.h) from the owner; NULL: ignored */
	void (*buildid)(void *ctx, const struct lp_file_buildid *note);
	void *ctx;
};

struct coll_broker;
/* NULL with errno set. Destructor: coll_broker__free. */
struct coll_broker *coll_broker__new(const struct coll_broker_opts *opts);
int coll_broker__fd(const struct coll_broker *b);
int coll_broker__serve(struct coll_broker *b, int sock, int max);
int coll_broker__tick(struct coll_broker *b, uint64_t now_ns);
void coll_broker__detach(struct coll_broker *b, int sock);
void coll_broker__stats(const struct coll_broker *b, struct coll_files_stats *st);
void coll_broker__free(struct coll_broker *b);

/*
 * lowprof's own processes (self.c; coll_opts.include_self). coll_self_uid:
 * the uid left out whole (0: none). coll_self_add: pid into the self_tgids
 * map (map_fd), 0 or -errno. coll_self_init: the collector and self_pid's
 * tree, once the map exists. coll_self_walk: self_pid's tree again, for
 * what was started before on_fork was attached to note it (the symbolizer's
 * helpers, started while the collector waited for it): just before and
 * just after attaching, which leaves only what starts during the attach
 * and is sampled before the second walk.
 */
uint32_t coll_self_uid(const struct coll_opts *o);
int coll_self_add(int map_fd, pid_t pid);
void coll_self_init(int map_fd, const struct coll_opts *o);
void coll_self_walk(int map_fd, const struct coll_opts *o);

/* msgpack overhead of a sample record, upper bound */
#define SAMPLE_ENC_SLACK 128

/*
 * Off-CPU records the BPF ring is sized for, per online CPU and second: an
 * assumption (a CPU doing 10,000 voluntary switches a second, one in ten
 * sampled; or time mode at a 1 ms period on a CPU whose threads all wait).
 * Bursts above it are lost and counted (off_cpu_lost), never silently.
 */
#define COLL_OFFCPU_RECORDS_PER_CPU_S 1000

/*
 * Threads whose off-CPU switch-out time is kept on a kernel without task
 * storage for tracing programs (Linux < 5.11; offcpu.bpf.c tasks_h): an LRU
 * hash of ~80 bytes an entry, ~1.3 MiB. A host with more threads blocking
 * at once than this loses the least recently switched ones' blocks.
 */
#define COLL_OFFCPU_TASKS_FALLBACK 16384

/*
 * Event mode's highest rate at which sampled blocks go out from a BPF task
 * work rather than at sys_exit (kfeatures.h). A task work costs each sampled
 * block ~5 us here (a self-interrupt to queue it, its context, the callback:
 * offcpu_switch went from 1.4 to 5.0 us a switch at rate 1 on the pipe
 * ping-pong of tests/bench/bench.sh, section 2b), sys_exit every system
 * call of the host (~0.13 us of BPF a switch there, and the slow exit path:
 * ~15% of its throughput): the task work is cheaper while under ~6% of the
 * blocks are sampled. Time mode samples at most one block per period and
 * thread, always few: it always takes the task work.
 */
#define COLL_OFFCPU_TASK_WORK_MAX_RATE 0.05

/*
 * The BPF ring's budget. The programs wake the collector when the ring is
 * half full, so the ring only has to hold what arrives while the collector
 * gets to run; its size sets how often that happens, not whether records
 * are lost. Its pages are allocated by the kernel at creation and mapped
 * twice into the collector (RSS counts them twice, PSS once). At the
 * budget half the ring is ~23 ms of worst-case records on 2 CPUs at
 * 4999 Hz and ~0.2 s of this host's whole-host ones (~20 MB/s), ~35 ms of
 * worst-case and ~0.3 s of typical ones on 64 CPUs at 99 Hz; 64 CPUs at
 * 999 Hz would have had 256 MiB. 8 MiB keeps 64 CPUs at 99 Hz within
 * 64 MB in all (README, Sizing).
 */
#define COLL_BPF_RING_BUDGET (8u << 20)

/*
 * Size of the BPF ring buffer (bytes):
 *   roundup_pow2(clamp(online_cpus * (freq_hz + offcpu_rate) * drain_ms /
 *                      1000 * max_record * 2, 64 KiB, COLL_BPF_RING_BUDGET))
 * with max_record = header + 254 frames + stack_bytes + 8 (the ring's own
 * header) and offcpu_rate = COLL_OFFCPU_RECORDS_PER_CPU_S with --off-cpu, 0
 * without: two drain intervals of worst-case records (every frame and the
 * whole stack copy captured), within the budget. The x2 absorbs a late
 * drain; BPF ring sizes must be powers of two.
 */
uint64_t coll_bpf_ring_size(uint32_t online_cpus, uint32_t freq_hz, uint32_t drain_ms,
			    uint32_t stack_bytes, bool off_cpu);

/*
 * Entries of the off-CPU pending map (sampled blocks waiting for their
 * task's syscall exit): max(128, 64 * online_cpus). Its holders are running
 * or runnable tasks (a block ends the wait), so this is run-queue depth
 * with margin; each entry is ~1.1 KiB (the kernel stack), preallocated.
 */
uint32_t coll_offcpu_pending_size(uint32_t online_cpus);

/*
 * Largest schema sample record: msgpack overhead + 254 frames + the stack
 * copy. The shared ring is sized from it.
 */
uint32_t coll_max_sample_record(uint32_t stack_bytes);

/*
 * Shards (shards.c). coll_shard_ring_size: the data size of each of
 * nshards rings made from a budget of total bytes (lp_shm_ring_size): a
 * power of two, at most total / nshards, at least COLL_SHARD_RING_MIN
 * (twice the largest record, which a ring must hold: lp_ring__max_record);
 * total itself when nshards <= 1. coll_loss_split: ring i's loss record
 * out from the whole run's (run, whose shm counters are the rings' summed)
 * and ring i's own counters rs: that ring's shm_dropped, shm_dropped_bytes
 * and bad_consumer_pos, and every other counter in ring 0's only (0 in the
 * others), so that what the symbolizers count, summed, is the run's.
 */
#define COLL_SHARD_RING_MIN (2ull * LPS_MAX_RECORD)

struct lp_ring_stats;
uint64_t coll_shard_ring_size(uint64_t total, uint32_t nshards);
void coll_loss_split(const struct lps_loss *run, const struct lp_ring_stats *rs, uint32_t i,
		     struct lps_loss *out);

#endif /* LOWPROF_COLLECTOR_INT_H */
