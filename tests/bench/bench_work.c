// SPDX-License-Identifier: MIT
/*
 * The fixed CPU-bound workload of tests/bench/bench.sh: T threads, each
 * running N units of work down a known call chain
 *
 *   main -> bench_thread -> work_one -> work_two -> work_three -> work_leaf
 *
 * (each noinline), a unit being 1,000,000 steps of a 64-bit LCG. The amount
 * of work is fixed by N, so the time it takes is the figure: printed on
 * stdout as "elapsed_s=S", measured with CLOCK_MONOTONIC from the start of
 * the work to the end of the last thread.
 *
 *   bench_work [-t THREADS] [-n UNITS] [-s SECONDS] [-w]
 *
 * -t  threads (default: online CPUs, so any CPU a profiler takes shows up
 *     as slowdown)
 * -n  units of work per thread (default 1000)
 * -s  instead of a fixed amount, run for SECONDS (load for the cost runs)
 * -w  wait for SIGUSR1 before starting the clock, so a profiler can attach
 *     to the waiting process first
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t sink;
static uint64_t units = 1000;
static double run_secs;
/* all threads exist before the start signal, so `perf record -p` and the
 * like attach to every one of them; they start together at this barrier */
static pthread_barrier_t start;

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

__attribute__((noinline)) void work_leaf(uint64_t n)
{
	uint64_t x = n;

	for (int i = 0; i < 1000000; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	sink += x;
}

__attribute__((noinline)) void work_three(uint64_t n)
{
	work_leaf(n + 3);
	sink++;
}

__attribute__((noinline)) void work_two(uint64_t n)
{
	work_three(n + 2);
	sink++;
}

__attribute__((noinline)) void work_one(uint64_t n)
{
	work_two(n + 1);
	sink++;
}

__attribute__((noinline)) void *bench_thread(void *arg)
{
	double end;

	(void)arg;
	pthread_barrier_wait(&start);
	end = run_secs > 0 ? now() + run_secs : 0;
	for (uint64_t n = 0; end > 0 || n < units; n++) {
		work_one(n);
		if (end > 0 && (n & 15) == 0 && now() >= end)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long nthreads = sysconf(_SC_NPROCESSORS_ONLN);
	int wait_start = 0, opt;
	pthread_t *th;
	double t0, t1;

	while ((opt = getopt(argc, argv, "t:n:s:w")) != -1) {
		switch (opt) {
		case 't':
			nthreads = atol(optarg);
			break;
		case 'n':
			units = strtoull(optarg, NULL, 10);
			break;
		case 's':
			run_secs = atof(optarg);
			break;
		case 'w':
			wait_start = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-t THREADS] [-n UNITS] [-s SECONDS] [-w]\n",
				argv[0]);
			return 2;
		}
	}
	if (nthreads < 1 || nthreads > 1024) {
		fprintf(stderr, "bench_work: bad thread count %ld\n", nthreads);
		return 2;
	}
	th = calloc((size_t)nthreads, sizeof(*th));
	if (!th || pthread_barrier_init(&start, NULL, (unsigned)nthreads))
		return 1;
	if (wait_start) {
		sigset_t set;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		/* before any thread exists (they inherit it) and before "ready" */
		sigprocmask(SIG_BLOCK, &set, NULL);
	}
	for (long i = 1; i < nthreads; i++)
		if (pthread_create(&th[i], NULL, bench_thread, NULL)) {
			perror("bench_work: pthread_create");
			return 1;
		}
	if (wait_start) {
		sigset_t set;
		int sig;

		sigemptyset(&set);
		sigaddset(&set, SIGUSR1);
		printf("ready\n");
		fflush(stdout);
		sigwait(&set, &sig);
	}
	t0 = now();
	bench_thread(NULL);
	for (long i = 1; i < nthreads; i++)
		pthread_join(th[i], NULL);
	t1 = now();
	printf("elapsed_s=%.6f\n", t1 - t0);
	free(th);
	return 0;
}
