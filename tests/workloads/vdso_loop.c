// SPDX-License-Identifier: MIT
/*
 * A workload whose time is spent in the vDSO, for the end-to-end test of
 * unwinding through it (tests/e2e/vdso.sh): main -> vdso_outer ->
 * vdso_loop, which calls clock_gettime(CLOCK_MONOTONIC) in a loop (libc
 * calls the vDSO's __vdso_clock_gettime, which reads the clock without a
 * system call where the clock source allows it). Built without frame
 * pointers: only CFI gets from the vDSO back to main. Runs for argv[1]
 * seconds (default 30).
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

/* clock_gettime many times; returns the last reading's seconds */
__attribute__((noinline)) void vdso_loop(void)
{
	struct timespec ts;

	for (int i = 0; i < 100000; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sink += (uint64_t)ts.tv_nsec;
	}
}

__attribute__((noinline)) void vdso_outer(void)
{
	vdso_loop();
	sink++;
}

int main(int argc, char **argv)
{
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);

	while (time(NULL) < end)
		vdso_outer();
	return 0;
}
