/* SPDX-License-Identifier: MIT */
/*
 * Online CPUs and the sizing formulas that depend on them. Everything lowprof
 * allocates per CPU is sized from the online CPUs, never the possible ones
 * (VMs often report 128+ possible CPUs with 2 online).
 */
#ifndef LOWPROF_CPUS_H
#define LOWPROF_CPUS_H

#include <stddef.h>
#include <stdint.h>

#define LP_MAX_CPUS 4096

/*
 * Parses a kernel CPU list ("0-3,8,10-11\n") from buf[0..len) into cpus
 * (at most max entries, ascending). Returns the number of CPUs, or -EBADMSG
 * for malformed input (bad numbers, reversed or overlapping ranges, more
 * than max CPUs, ids >= LP_MAX_CPUS).
 */
int lp_parse_cpulist(const char *buf, size_t len, uint32_t *cpus, size_t max);

/* Online CPUs from /sys/devices/system/cpu/online; count or negative errno. */
int lp_online_cpus(uint32_t *cpus, size_t max);

/* Smallest power of two >= v; 1 for v == 0, 0 for v > 2^63. */
uint64_t lp_roundup_pow2(uint64_t v);

/*
 * Data size of the shared-memory ring between collector and symbolizer:
 *   roundup_pow2(clamp(online_cpus * freq_hz * LP_SHM_RING_LAG_S *
 *                      max_record / LP_SHM_RING_RECORD_DIV,
 *                      LP_SHM_RING_MIN, LP_SHM_RING_BUDGET))
 * i.e. two seconds of records of an eighth of the largest size (2.3 KiB
 * with the default 16 KiB stack copy; whole-host records here average
 * ~2 KB, as a stack copy stops at the top of the stack), so a symbolizer
 * that lags ~2 s behind loses nothing: the collector drains the BPF ring
 * once a second at low rates, so up to a second arrives at once, and the
 * symbolizer needs time to read it. Never less than 4 MiB, which absorbs
 * the kernel symbol snapshot sent at start, and never more than the 64 MiB
 * budget. Worst-case records (every frame, the whole copy) fill it 8x
 * faster; what does not fit is dropped and counted. The ring is one set of
 * pages shared by both processes: its resident part counts once in their
 * total (and follows the write rate: the collector's early wrap). 64 CPUs
 * at 99 Hz: 32 MiB (two seconds of worst-case records would be 235 MB).
 * An explicit size (lowprof-collector --ring-size) may go up to
 * LP_SHM_RING_MAX.
 */
#define LP_SHM_RING_MIN	       (4u << 20)
#define LP_SHM_RING_BUDGET     (64u << 20)
#define LP_SHM_RING_MAX	       (1ull << 32) /* = LP_RING_MAX_DATA */
#define LP_SHM_RING_LAG_S      2
#define LP_SHM_RING_RECORD_DIV 8
uint64_t lp_shm_ring_size(uint32_t online_cpus, uint32_t freq_hz, uint32_t max_record);

/*
 * The data size of each of n rings (--symbolizers, the collector's
 * --shards) sharing a budget of total bytes (lp_shm_ring_size's): a power
 * of two, at most total / n (and LP_RING_MAX_DATA), at least min (a power
 * of two: what holds the largest record twice); total itself when n <= 1.
 */
uint64_t lp_shm_ring_share(uint64_t total, uint32_t n, uint64_t min);

#endif /* LOWPROF_CPUS_H */
