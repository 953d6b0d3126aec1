// SPDX-License-Identifier: MIT
/*
 * What the collector's drain costs per record, and what memory its rings
 * take at a given record rate: the real lowprof-collector, started on a
 * shared ring this program made (--ring-fd, as lowprof record does), gets
 * synthetic on-CPU sample records in its real BPF ring buffer from a
 * BPF_PROG_TYPE_SYSCALL program (bench_drain.bpf.c) that this program runs
 * with bpf_prog_test_run; the collector drains them as it drains the
 * perf_event program's (on_bpf_event: checks, the process's mappings once,
 * the cgroup, encoding into the shared ring) and a consumer thread here
 * reads the shared ring as the symbolizer does (lp_ring__read: one copy),
 * without symbolizing.
 *
 *   build/tests/bench/bench_drain [-s SECS] [-r RATE] [-c CPUS] [-F HZ]
 *                                 [--collector PATH]
 *     -r RATE  records a second (default 0: as fast as the BPF ring takes
 *              them: the drain's throughput)
 *     -c CPUS  size the rings as for CPUS online CPUs (--size-cpus; the
 *              shared ring from lp_shm_ring_size as the collector would)
 *     -F HZ    the collector's frequency, for its sizing (default 99; its
 *              -p is this program, so few real samples join)
 *
 * Record sizes cycle through 64 kinds of 0-16 kernel and 6-36 user frames
 * and 256-3,328 bytes of stack copy: 2.1 KB on average, like whole-host
 * samples here (~2 KB, README Benchmarks). The user frames and the copy
 * are this program's own addresses and bytes (the collector reads its
 * mappings once, as for any process).
 *
 * Prints key=value lines: records produced and delivered, the collector's
 * CPU (schedstat) per delivered record, records per collector CPU-second
 * and per wall second; with -r, the memory the run left: the collector's
 * Rss and Pss (smaps_rollup), the shared ring's resident bytes (mincore:
 * the same pages in the collector and the symbolizer) and the BPF ring's
 * size. Needs root (BPF, the collector).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/types.h>

#include "lowprof/clock.h"
#include "lowprof/cpus.h"
#include "lowprof/ring.h"
#include "lowprof/schema.h"
#include "profile.h"

/* bench_drain.bpf.c's record sizes (the skeleton names the type only) */
struct slot {
	__u16 nk, nu;
	__u32 copy;
};

#include "bench_drain.skel.h"

#define SLOTS 64

static double secs = 5, rate;
static uint32_t size_cpus, freq = 99;
static const char *collector = "lowprof-collector";

struct consumer {
	struct lp_ring *r;
	volatile int stop;
	volatile uint64_t records, samples, bytes;
};

static double now_s(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static void *consume(void *arg)
{
	struct consumer *c = arg;

	while (!c->stop) {
		const void *data;
		uint32_t len, type;
		int err;

		lp_ring__wait(c->r, 50);
		while ((err = lp_ring__read(c->r, &data, &len)) == 0) {
			c->records++;
			c->bytes += len;
			if (!lps_peek_type(data, len, &type) && type == LPS_SAMPLE)
				c->samples++;
		}
		if (err == -EPIPE)
			break;
	}
	return NULL;
}

/* ns the task has run (schedstat's first field), or 0 */
static uint64_t cpu_ns(pid_t pid)
{
	char path[64];
	unsigned long long ns = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/schedstat", pid);
	f = fopen(path, "r");
	if (!f)
		return 0;
	if (fscanf(f, "%llu", &ns) != 1)
		ns = 0;
	fclose(f);
	return ns;
}

/* KiB of field (e.g. "Pss:") in pid's smaps_rollup, or -1 */
static long rollup_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps_rollup", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, field, strlen(field))) {
			kb = strtol(line + strlen(field), NULL, 10);
			break;
		}
	fclose(f);
	return kb;
}

/* The collector's BPF ring buffer: a new fd of it (by id, from its fdinfo), or -1. */
static int find_ringbuf(pid_t pid, uint32_t *max_entries)
{
	for (int fd = 3; fd < 256; fd++) {
		char path[64], line[128];
		unsigned type = 0, id = 0, max = 0;
		FILE *f;

		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
		f = fopen(path, "r");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			sscanf(line, "map_type: %u", &type);
			sscanf(line, "map_id: %u", &id);
			sscanf(line, "max_entries: %u", &max);
		}
		fclose(f);
		if (type == BPF_MAP_TYPE_RINGBUF && id) {
			*max_entries = max;
			return bpf_map_get_fd_by_id(id);
		}
	}
	return -1;
}

/* Record sizes like whole-host samples: 64 kinds, 2.1 KB on average. */
static void fill_template(struct bench_drain_bpf *skel)
{
	struct lp_ev_sample *e = (void *)skel->bss->rec;
	uint8_t *copy_area = (uint8_t *)&e->stack[0];
	size_t room = sizeof(skel->bss->rec) - LP_EV_SAMPLE_FIXED_SIZE;

	/* frames: a few of our own code addresses; the copy: our stack's bytes */
	for (size_t i = 0; i + 8 <= room; i += 8) {
		uint64_t v = (uint64_t)(uintptr_t)&fill_template + (i % 512);

		memcpy(copy_area + i, &v, 8);
	}
	e->period_ns = 1000000000ull / freq;
	e->ip = (uint64_t)(uintptr_t)&fill_template;
	e->sp = (uint64_t)(uintptr_t)__builtin_frame_address(0);
	e->bp = e->sp;
	memcpy(e->hdr.comm, "bench_drain", 12);
	for (uint32_t k = 0; k < SLOTS; k++) {
		skel->bss->slots[k].nk = (uint16_t)((k * 7) % 17);
		skel->bss->slots[k].nu = (uint16_t)(6 + (k * 11) % 31);
		skel->bss->slots[k].copy = 256 + ((k * 37) % 64) * 48;
	}
	skel->bss->pid = (uint32_t)getpid();
	skel->bss->tid = (uint32_t)getpid();
}

static int produce(int prog_fd, uint32_t n)
{
	struct {
		uint32_t n;
	} args = {n};
	LIBBPF_OPTS(bpf_test_run_opts, o, .ctx_in = &args, .ctx_size_in = sizeof(args));

	return bpf_prog_test_run_opts(prog_fd, &o);
}

static pid_t start_collector(int fds[2])
{
	char ringfd[32], hz[16], dur[32], cpus[16], self[16];
	pid_t pid;

	snprintf(ringfd, sizeof(ringfd), "%d,%d", fds[0], fds[1]);
	snprintf(hz, sizeof(hz), "%u", freq);
	snprintf(dur, sizeof(dur), "%.0f", secs + 30);
	snprintf(cpus, sizeof(cpus), "%u", size_cpus ? size_cpus : 0);
	snprintf(self, sizeof(self), "%d", getpid());
	pid = fork();
	if (pid == 0) {
		const char *argv[16] = {collector, "--ring-fd", ringfd, "-F", hz,
					"-d",	   dur,		"-p",	self, "--exit-with-parent"};
		int n = 10;

		fcntl(fds[0], F_SETFD, 0);
		fcntl(fds[1], F_SETFD, 0);
		if (size_cpus) {
			argv[n++] = "--size-cpus";
			argv[n++] = cpus;
		}
		argv[n] = NULL;
		execvp(collector, (char **)argv);
		_exit(127);
	}
	return pid;
}

static int usage(void)
{
	fprintf(stderr,
		"usage: bench_drain [-s SECS] [-r RATE] [-c CPUS] [-F HZ] [--collector PATH]\n");
	return 2;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {{"collector", required_argument, NULL, 'C'}, {}};
	struct consumer cons = {0};
	struct bench_drain_bpf *skel = NULL;
	uint64_t ring_size, cpu0, cpu1, full0, delivered0, ok0;
	uint32_t bpf_ring = 0;
	uint32_t cpus[LP_MAX_CPUS];
	int fds[2], rb_fd = -1, opt, ncpus, st;
	double t0, t1, wait_end;
	struct lp_ring_stats rst;
	pthread_t th;
	size_t mem_size;
	void *mem;
	pid_t coll;

	while ((opt = getopt_long(argc, argv, "s:r:c:F:", lo, NULL)) != -1) {
		switch (opt) {
		case 's':
			secs = atof(optarg);
			break;
		case 'r':
			rate = atof(optarg);
			break;
		case 'c':
			size_cpus = (uint32_t)atoi(optarg);
			break;
		case 'F':
			freq = (uint32_t)atoi(optarg);
			break;
		case 'C':
			collector = optarg;
			break;
		default:
			return usage();
		}
	}
	if (secs <= 0 || rate < 0 || !freq)
		return usage();
	ncpus = lp_online_cpus(cpus, LP_MAX_CPUS);
	if (ncpus <= 0)
		return 1;
	/* the shared ring as the collector would make it for these CPUs */
	ring_size = lp_shm_ring_size(size_cpus ? size_cpus : (uint32_t)ncpus, freq,
				     LPS_SAMPLE_RECORD_MAX(16384));
	if (lp_ring_create_memfds(ring_size, fds)) {
		perror("ring");
		return 1;
	}
	mem = lp_ring_map_fds(fds[LP_RING_FD_DATA], fds[LP_RING_FD_CONS], false, &mem_size);
	cons.r = mem ? lp_ring__consumer(mem, mem_size) : NULL;
	if (!cons.r) {
		perror("ring map");
		return 1;
	}
	coll = start_collector(fds);
	if (coll < 0 || pthread_create(&th, NULL, consume, &cons))
		return 1;
	/* its BPF ring, once loaded; then a second for its start (kernel symbols) */
	for (int i = 0; i < 300 && rb_fd < 0; i++) {
		if (waitpid(coll, &st, WNOHANG) == coll) {
			fprintf(stderr, "bench_drain: the collector exited\n");
			return 1;
		}
		usleep(20000);
		rb_fd = find_ringbuf(coll, &bpf_ring);
	}
	if (rb_fd < 0) {
		fprintf(stderr, "bench_drain: no BPF ring buffer in the collector\n");
		goto out;
	}
	sleep(1);
	skel = bench_drain_bpf__open();
	if (!skel || bpf_map__reuse_fd(skel->maps.events, rb_fd) || bench_drain_bpf__load(skel)) {
		fprintf(stderr, "bench_drain: loading the producer: %s\n", strerror(errno));
		goto out;
	}
	fill_template(skel);
	skel->bss->wake_bytes = bpf_ring / 2;
	cpu0 = cpu_ns(coll);
	delivered0 = cons.samples;
	ok0 = skel->bss->ok;
	full0 = skel->bss->full;
	t0 = now_s();
	if (rate > 0) {
		/* paced: every 10 ms what is due */
		double due = 0, next = t0;

		while ((t1 = now_s()) < t0 + secs) {
			uint32_t n = (uint32_t)((t1 - t0) * rate - due);

			if (n) {
				produce(bpf_program__fd(skel->progs.produce), n);
				due += n;
			}
			next += 0.01;
			if (next > now_s())
				usleep((useconds_t)((next - now_s()) * 1e6));
		}
	} else {
		/*
		 * as fast as the drain and the reader take them: a batch, then
		 * a breath while more than IN_FLIGHT records are on their way,
		 * so neither ring overflows (a dropped record would cost the
		 * collector less than a delivered one)
		 */
		/* three quarters of the BPF ring: past the wakeup at half */
		uint64_t in_flight = (uint64_t)bpf_ring * 3 / 4 / 2200;

		while ((t1 = now_s()) < t0 + secs) {
			produce(bpf_program__fd(skel->progs.produce), 64);
			while (skel->bss->ok - ok0 > cons.samples - delivered0 + in_flight &&
			       now_s() < t0 + secs)
				sched_yield();
		}
	}
	t1 = now_s();
	/* until what was submitted has come through (or 5 s) */
	wait_end = t1 + 5;
	while (now_s() < wait_end && cons.samples - delivered0 < skel->bss->ok - ok0)
		usleep(10000);
	cpu1 = cpu_ns(coll);
	lp_ring__stats(cons.r, &rst);
	{
		uint64_t delivered = cons.samples - delivered0;
		double cpu_s = (double)(cpu1 - cpu0) / 1e9;
		unsigned char *vec;
		size_t pages = mem_size / 4096, res = 0;

		printf("records_submitted=%llu\n", (unsigned long long)(skel->bss->ok - ok0));
		printf("records_bpf_ring_full=%llu\n",
		       (unsigned long long)(skel->bss->full - full0));
		printf("records_delivered=%llu\n", (unsigned long long)delivered);
		printf("shared_ring_dropped=%llu\n", (unsigned long long)rst.dropped_records);
		printf("bytes_per_record=%.0f\n",
		       cons.records ? (double)cons.bytes / (double)cons.records : 0.0);
		printf("wall_s=%.3f\n", t1 - t0);
		printf("collector_cpu_s=%.3f\n", cpu_s);
		printf("records_per_wall_s=%.0f\n", delivered / (t1 - t0));
		printf("records_per_collector_cpu_s=%.0f\n", cpu_s > 0 ? delivered / cpu_s : 0);
		printf("collector_ns_per_record=%.1f\n", delivered ? cpu_s * 1e9 / delivered : 0);
		printf("bpf_ring_bytes=%u\n", bpf_ring);
		printf("shared_ring_bytes=%llu\n", (unsigned long long)ring_size);
		vec = malloc(pages);
		if (vec && !mincore(mem, mem_size, vec))
			for (size_t i = 0; i < pages; i++)
				res += vec[i] & 1;
		free(vec);
		printf("shared_ring_resident_bytes=%zu\n", res * 4096);
		printf("collector_rss_kb=%ld\n", rollup_kb(coll, "Rss:"));
		printf("collector_pss_kb=%ld\n", rollup_kb(coll, "Pss:"));
		printf("collector_anon_kb=%ld\n", rollup_kb(coll, "Anonymous:"));
	}
out:
	kill(coll, SIGTERM);
	waitpid(coll, &st, 0);
	cons.stop = 1;
	pthread_join(th, NULL);
	bench_drain_bpf__destroy(skel);
	if (rb_fd >= 0)
		close(rb_fd);
	return 0;
}
