// SPDX-License-Identifier: MIT
/*
 * CPU-bound workload with a known call chain for the end-to-end tests:
 * main -> chain_one -> chain_two -> chain_three -> chain_leaf, each noinline.
 * Runs for argv[1] seconds (default: forever). argv[2], if given, is a number
 * of bytes main puts on its stack first, so the chain runs that far below
 * the top of the stack (every sample then carries the largest stack copy).
 */
#include <stdint.h>
#include <alloca.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile uint64_t sink;

__attribute__((noinline)) void chain_leaf(uint64_t n)
{
	uint64_t x = n;

	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink += x;
}

__attribute__((noinline)) void chain_three(uint64_t n)
{
	chain_leaf(n + 3);
	sink++;
}

__attribute__((noinline)) void chain_two(uint64_t n)
{
	chain_three(n + 2);
	sink++;
}

__attribute__((noinline)) void chain_one(uint64_t n)
{
	chain_two(n + 1);
	sink++;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	size_t pad = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;
	struct timespec t0, t;

	if (pad) {
		char *p = alloca(pad);

		memset(p, 1, pad);
		sink += (uint64_t)p[pad - 1];
	}

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t n = 0;; n++) {
		chain_one(n);
		if (secs > 0 && (n & 15) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= secs)
				break;
		}
	}
	return 0;
}
