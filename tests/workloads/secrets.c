// SPDX-License-Identifier: MIT
/*
 * A process whose secrets sit right above its stacks' frames, for
 * tests/e2e/secrets.sh: the main thread and argv[2] workers spin in a
 * shallow function (the main thread's environment and aux vector, and each
 * thread's descriptor, a few hundred bytes above their stack pointers),
 * argv[3] threads mmap and munmap in a tight loop (so that looking up a
 * stack's mapping in the sampling interrupt often finds the mmap lock
 * taken), and one thread sleeps 2 ms at a time (off-CPU samples).
 *
 * secrets FILE NWORKERS NHAMMERS SECONDS; FILE gets the secrets as grep -P
 * byte patterns.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int stop;
static volatile uint64_t sink;

__attribute__((noinline)) static void spin(void)
{
	while (!stop)
		sink++;
}

static void *worker(void *arg)
{
	(void)arg;
	spin();
	return NULL;
}

static void *hammer(void *arg)
{
	(void)arg;
	while (!stop) {
		void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			       0);
		if (p != MAP_FAILED)
			munmap(p, 4096);
	}
	return NULL;
}

/* blocks and wakes all the time, shallow: off-CPU samples of a thread's stack */
static void *sleeper(void *arg)
{
	struct timespec ts = {0, 2000000};

	(void)arg;
	while (!stop)
		nanosleep(&ts, NULL);
	return NULL;
}

static void *timer(void *arg)
{
	sleep((unsigned)(uintptr_t)arg);
	stop = 1;
	return NULL;
}

/*
 * The secrets as grep -P byte patterns, one a line: the pointer guard (in
 * the thread descriptor, fs:0x30) and the 16 AT_RANDOM bytes (above
 * start_stack). Written by a forked child, which has the same ones, so that
 * no frame of this process ever holds them.
 */
static void write_secrets(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		const unsigned char *rnd = (const unsigned char *)getauxval(AT_RANDOM);
		uint64_t guard;
		FILE *f = fopen(path, "w");

		__asm__("mov %%fs:0x30, %0" : "=r"(guard));
		for (int i = 0; i < 8; i++)
			fprintf(f, "\\x%02x", (unsigned)(guard >> (8 * i)) & 0xff);
		fprintf(f, "\n");
		for (int i = 0; i < 16; i++)
			fprintf(f, "\\x%02x", rnd[i]);
		fprintf(f, "\n");
		fclose(f);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
}

int main(int argc, char **argv)
{
	int nworkers = argc > 2 ? atoi(argv[2]) : 4, nhammers = argc > 3 ? atoi(argv[3]) : 1;
	pthread_t t;

	write_secrets(argv[1]);
	for (int i = 0; i < nworkers; i++)
		pthread_create(&t, NULL, worker, NULL);
	for (int i = 0; i < nhammers; i++)
		pthread_create(&t, NULL, hammer, NULL);
	pthread_create(&t, NULL, sleeper, NULL);
	pthread_create(&t, NULL, timer, (void *)(uintptr_t)(argc > 4 ? atoi(argv[4]) : 30));
	spin();
	return 0;
}
