/* SPDX-License-Identifier: MIT */
/* Collector internals shared by its source files. */
#ifndef LOWPROF_COLLECTOR_INT_H
#define LOWPROF_COLLECTOR_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "lowprof/schema.h"

struct coll_range {
	uint64_t start, end;
};

struct coll_proc {
	bool used;
	uint32_t pid;
	uint64_t maps_ns;	   /* when its maps were last read */
	struct coll_range *ranges; /* executable ranges, ascending */
	uint32_t nranges;
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
int coll_read_maps(struct coll_proc *p, uint64_t now_ns, struct lps_enc *enc,
		   int (*emit)(void *ctx, struct lps_enc *enc), void *ctx);

/*
 * Mappings go out without build-ids from now on: the kernel has no
 * PROCMAP_QUERY (kfeatures.h), said once.
 */
void coll_procs_no_build_ids(void);

/* Capabilities: caps.c */
int coll_drop_caps(void);

/*
 * The file channel (lowprof/files.h): files.c. coll_file_open opens
 * read-only the file pid maps executable from that device and inode, or
 * returns -errno (-ENOENT: no such mapping; -ESTALE: the path now leads to
 * another file). coll_files_serve answers up to max waiting requests on
 * sock from uid owner (or root); returns how many it read, -EPIPE when the
 * peer is gone, or another -errno.
 */
struct coll_files_stats {
	uint64_t sent, failed, refused;
	uint32_t warned;
};
int coll_file_open(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode);
int coll_files_serve(int sock, uid_t owner, int max, struct coll_files_stats *st);

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
 * The BPF ring's budget. The programs wake the collector when the ring is
 * half full, so the ring only has to hold what arrives while the collector
 * gets to run; its size sets how often that happens, not whether records
 * are lost. Its data pages are mapped twice into the collector, all of them
 * resident: 16 MiB is 32 MiB of RSS. At the budget half the ring is ~45 ms
 * of worst-case records on 2 CPUs at 4999 Hz (~0.5 s of typical ones, whose
 * stack copies stop at the top of the stack); 64 CPUs at 999 Hz would have
 * had 256 MiB.
 */
#define COLL_BPF_RING_BUDGET (16u << 20)

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

#endif /* LOWPROF_COLLECTOR_INT_H */
