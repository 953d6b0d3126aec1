// SPDX-License-Identifier: MIT
/*
 * Workload for the end-to-end tests whose hot code is a callback libc's
 * qsort calls: main -> sort_round -> qsort (libc's own frames: qsort_r,
 * msort_with_tmp...) -> by_hash. Runs for argv[1] seconds (default 30).
 * Built -O2 without frame pointers or debug information, so its stacks are
 * unwound through libc's CFI and named by libc's symbols.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) int by_hash(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	for (int i = 0; i < 64; i++) {
		x = x * 6364136223846793005ull + 1;
		y = y * 6364136223846793005ull + 1;
	}
	sink += x ^ y;
	return (x > y) - (x < y);
}

__attribute__((noinline)) void sort_round(uint64_t *v, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = seed * 2862933555777941757ull + i;
	qsort(v, n, sizeof(*v), by_hash);
	sink++; /* not a tail call: sort_round keeps its frame */
}

int main(int argc, char **argv)
{
	static uint64_t v[4096];
	time_t end = time(NULL) + (argc > 1 ? atoi(argv[1]) : 30);

	for (uint64_t s = 0; time(NULL) < end; s++)
		sort_round(v, 4096, s);
	return 0;
}
