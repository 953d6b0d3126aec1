// SPDX-License-Identifier: MIT
/*
 * stamp_exec FILE COMMAND [ARGS...]: writes "MONO REAL" to FILE,
 * CLOCK_MONOTONIC and CLOCK_REALTIME in ns, then executes COMMAND in this
 * process. tests/bench/bench.sh's start-up
 * rows measure from this stamp to the first sample the profiler took (both
 * lowprof's samples and perf record -k CLOCK_MONOTONIC's are on that clock).
 * The file is opened first, so the stamp is the last thing before exec.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	struct timespec t, r;
	FILE *f;

	if (argc < 3) {
		fprintf(stderr, "usage: stamp_exec FILE COMMAND [ARGS...]\n");
		return 2;
	}
	f = fopen(argv[1], "w");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	clock_gettime(CLOCK_REALTIME, &r);
	clock_gettime(CLOCK_MONOTONIC, &t);
	fprintf(f, "%" PRIu64 " %" PRIu64 "\n",
		(uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec,
		(uint64_t)r.tv_sec * 1000000000u + (uint64_t)r.tv_nsec);
	if (fclose(f)) {
		perror(argv[1]);
		return 1;
	}
	execvp(argv[2], argv + 2);
	perror(argv[2]);
	return 127;
}
