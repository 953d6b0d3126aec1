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
 *   roundup_pow2(clamp(online_cpus * freq_hz * max_record * 2,
 *                      LP_SHM_RING_MIN, LP_SHM_RING_BUDGET))
 * i.e. two seconds of worst-case samples, so a symbolizer that stalls for up
 * to ~2 s loses nothing, never less than 4 MiB, which absorbs the kernel
 * symbol snapshot sent at start, and never more than the 64 MiB budget:
 * both processes touch every page of it, so it is resident in each, and a
 * formula that gives 4 GiB to 64 CPUs at 999 Hz is no default. At the
 * budget it holds less than 2 s of worst-case samples, but several seconds
 * of typical ones (a stack copy stops at the top of the stack). An explicit
 * size (lowprof-collector --ring-size) may go up to LP_SHM_RING_MAX.
 */
#define LP_SHM_RING_MIN	   (4u << 20)
#define LP_SHM_RING_BUDGET (64u << 20)
#define LP_SHM_RING_MAX	   (1ull << 32) /* = LP_RING_MAX_DATA */
uint64_t lp_shm_ring_size(uint32_t online_cpus, uint32_t freq_hz, uint32_t max_record);

/*
 * The size of each of n rings (--symbolizers) sharing a budget of total
 * bytes (lp_shm_ring_size's): total / n rounded down to a power of two,
 * not below LP_SHM_RING_MIN.
 */
uint64_t lp_shm_ring_share(uint64_t total, uint32_t n);

#endif /* LOWPROF_CPUS_H */
