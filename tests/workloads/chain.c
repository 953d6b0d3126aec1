// SPDX-License-Identifier: MIT
/*
 * CPU-bound workload with a known call chain for the end-to-end tests:
 * main -> chain_one -> chain_two -> chain_three -> chain_leaf, each noinline.
 * Runs for argv[1] seconds (default: forever). argv[2], if given, is a number
 * of bytes main puts on its stack first, so the chain runs that far below
 * the top of the stack (every sample then carries the largest stack copy).
 * argv[3] "thread": the loop runs in a second thread (chain_thread ->
 * chain_one ...), which first writes its thread pointer (pthread_self, the
 * fs base on x86-64 glibc) to stdout as "0x...\n". "leader-exit": the same,
 * but main then ends its own thread (pthread_exit) while the second one goes
 * on: the process outlives its thread-group leader.
 */
#include <stdint.h>
#include <alloca.h>
#include <pthread.h>
#include <stdio.h>
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

/*
 * Runs the chain for secs seconds (0: forever). A macro, not a function: the
 * tests expect main (or chain_thread) right above chain_one, and with -g an
 * inlined function would still be a frame of its own.
 */
#define CHAIN_RUN(secs)                                                                            \
	do {                                                                                       \
		struct timespec t0_, t_;                                                           \
                                                                                                   \
		clock_gettime(CLOCK_MONOTONIC, &t0_);                                              \
		for (uint64_t n_ = 0;; n_++) {                                                     \
			chain_one(n_);                                                             \
			if ((secs) > 0 && (n_ & 15) == 0) {                                        \
				clock_gettime(CLOCK_MONOTONIC, &t_);                               \
				if ((t_.tv_sec - t0_.tv_sec) + (t_.tv_nsec - t0_.tv_nsec) / 1e9 >= \
				    (secs))                                                        \
					break;                                                     \
			}                                                                          \
		}                                                                                  \
	} while (0)

static double thread_secs;

__attribute__((noinline)) static void *chain_thread(void *arg)
{
	(void)arg;
	printf("%#lx\n", (unsigned long)pthread_self());
	fflush(stdout);
	CHAIN_RUN(thread_secs);
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0;
	size_t pad = argc > 2 ? strtoul(argv[2], NULL, 0) : 0;

	if (pad) {
		char *p = alloca(pad);

		memset(p, 1, pad);
		sink += (uint64_t)p[pad - 1];
	}
	if (argc > 3 && (strcmp(argv[3], "thread") == 0 || strcmp(argv[3], "leader-exit") == 0)) {
		pthread_t t;

		thread_secs = secs;
		if (pthread_create(&t, NULL, chain_thread, NULL))
			return 1;
		if (strcmp(argv[3], "leader-exit") == 0)
			pthread_exit(NULL); /* the process ends with its last thread */
		pthread_join(t, NULL);
		return 0;
	}
	CHAIN_RUN(secs);
	return 0;
}
