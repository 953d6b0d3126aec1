/* SPDX-License-Identifier: MIT */
/*
 * A clock read as one integer: what every deadline, tick, lag and record
 * time in lowprof is computed from. What it is not: a timer or a sleep.
 */
#ifndef LOWPROF_CLOCK_H
#define LOWPROF_CLOCK_H

#include <stdint.h>
#include <time.h>

/*
 * The clock clk (CLOCK_MONOTONIC, CLOCK_REALTIME, ...) in nanoseconds. clk
 * must be a clock this process may read: clock_gettime fails only for an
 * invalid one, and then the result is undefined.
 */
static inline uint64_t lp_clock_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* lp_clock_ns in whole milliseconds, signed: for poll timeouts and deadlines. */
static inline int64_t lp_clock_ms(clockid_t clk)
{
	return (int64_t)(lp_clock_ns(clk) / 1000000);
}

#endif /* LOWPROF_CLOCK_H */
