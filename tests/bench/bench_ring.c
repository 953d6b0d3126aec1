// SPDX-License-Identifier: MIT
/*
 * What the symbolizer's live read path costs per record: the records of a
 * capture file are written into a shared ring (the collector's memfds, the
 * consumer's view read-only, as in a live run), and read back by the
 * symbolizer's loop, timed, in two ways:
 *
 *   in place   lp_ring__peek, symb_state__feed on the shared bytes,
 *              lp_ring__consume (the read path before records were copied)
 *   copied     lp_ring__read (one copy into private memory), then
 *              symb_state__feed on the copy (the symbolizer's path now)
 *
 * each with its own ring and symbolizer state, warmed by one untimed pass
 * (binaries parsed, tables built, the ring's pages faulted in), then
 * ROUNDS timed passes, interleaved; medians.
 * Also the ring alone (peek + consume against read, the feed left out).
 *
 *   build/tests/bench/bench_ring [-n ROUNDS] [-r RING_MIB] CAPTURE
 *     RING_MIB: the ring's data size, a power of two (default 8, the
 *     shared ring of 2 CPUs at 99 Hz; 64 is the budget at 999 Hz)
 *
 * Binaries are opened as the capture's paths say: run it where the capture
 * was recorded (as root, to read every binary).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/capture.h"
#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"
#include "ingest.h"

static uint64_t ring_data = 8u << 20; /* -r: 2 CPUs at 99 Hz (README, Sizing) */

struct recs {
	uint8_t **p;
	uint32_t *len;
	size_t n;
	uint64_t bytes;
};

struct ring {
	int fds[2];
	uint8_t *pmem, *cmem;
	size_t psize, csize;
	struct lp_ring *prod, *cons;
};

enum mode { IN_PLACE, COPIED, PEEK_ONLY, READ_ONLY, NMODES };
static const char *const mode_names[NMODES] = {"in place + feed", "copied + feed",
					       "ring alone: peek", "ring alone: read"};

static double now_ns(void)
{
	return (double)lp_clock_ns(CLOCK_MONOTONIC);
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int load(const char *file, struct recs *r)
{
	struct lpc_reader *rd;
	struct lpc_header h;
	size_t cap = 0;
	int fd = open(file, O_RDONLY | O_CLOEXEC), err;

	if (fd < 0)
		return -errno;
	err = lpc_reader__open_fd(fd, &rd, &h);
	if (err)
		goto out;
	for (;;) {
		const void *rec;
		uint32_t len;

		err = lpc_reader__next(rd, &rec, &len);
		if (err == -ENODATA) {
			err = 0;
			break;
		}
		if (err)
			break;
		if (r->n == cap) {
			cap = cap ? cap * 2 : 4096;
			r->p = realloc(r->p, cap * sizeof(*r->p));
			r->len = realloc(r->len, cap * sizeof(*r->len));
			if (!r->p || !r->len) {
				err = -ENOMEM;
				break;
			}
		}
		r->p[r->n] = malloc(len ? len : 1);
		if (!r->p[r->n]) {
			err = -ENOMEM;
			break;
		}
		memcpy(r->p[r->n], rec, len);
		r->len[r->n++] = len;
		r->bytes += len;
	}
	lpc_reader__free(rd);
out:
	close(fd);
	return err;
}

static int ring_new(struct ring *g)
{
	int rfd;

	if (lp_ring_create_memfds(ring_data, g->fds))
		return -1;
	g->pmem = lp_ring_map_fds(g->fds[0], g->fds[1], true, &g->psize);
	rfd = lp_ring_reader_fd(g->fds[0]);
	if (!g->pmem || rfd < 0)
		return -1;
	g->cmem = lp_ring_map_fds(rfd, g->fds[1], false, &g->csize);
	close(rfd);
	if (!g->cmem)
		return -1;
	g->prod = lp_ring__producer(g->pmem, g->psize);
	g->cons = lp_ring__consumer(g->cmem, g->csize);
	return g->prod && g->cons ? 0 : -1;
}

/* Writes records from *next on until the ring is full or all are in. */
static void fill(struct ring *g, const struct recs *r, size_t *next)
{
	while (*next < r->n && lp_ring__writable(g->prod) >= r->len[*next]) {
		if (lp_ring__write(g->prod, r->p[*next], r->len[*next]))
			break;
		(*next)++;
	}
}

/* Reads everything in the ring in mode m; returns the ns it took. */
static double drain(struct ring *g, struct symb_state *s, enum mode m, volatile uint64_t *sink)
{
	double t0 = now_ns();
	const void *data;
	uint32_t len;

	for (;;) {
		int err = m == IN_PLACE || m == PEEK_ONLY ? lp_ring__peek(g->cons, &data, &len)
							  : lp_ring__read(g->cons, &data, &len);

		if (err)
			break;
		if (m == IN_PLACE || m == COPIED)
			symb_state__feed(s, data, len);
		else
			*sink += len ? ((const uint8_t *)data)[len - 1] : 0;
		if (m == IN_PLACE || m == PEEK_ONLY)
			lp_ring__consume(g->cons);
	}
	return now_ns() - t0;
}

/* One pass of every record through the mode's ring; the ns spent reading. */
static double pass(struct ring *g, const struct recs *r, struct symb_state *s, enum mode m)
{
	volatile uint64_t sink = 0;
	size_t next = 0;
	double ns = 0;

	while (next < r->n) {
		fill(g, r, &next);
		ns += drain(g, s, m, &sink);
	}
	return ns;
}

/* -r: a power of two of MiB that makes a valid ring; 0 or -EINVAL. */
static int ring_mib(const char *arg)
{
	uint64_t bytes = (uint64_t)strtoull(arg, NULL, 10) << 20;

	if (!bytes || lp_ring_round_size(bytes) != bytes)
		return -EINVAL;
	ring_data = bytes;
	return 0;
}

int main(int argc, char **argv)
{
	struct symb_state_opts so = {.sz = sizeof(so), .files_fd = -1};
	struct symb_state *st[NMODES];
	struct ring g[NMODES] = {0};
	struct recs r = {0};
	double *t[NMODES];
	int rounds = 7, opt;

	lp_log_init("bench_ring", LP_LOG_ERROR);
	while ((opt = getopt(argc, argv, "n:r:")) != -1) {
		if (opt == 'n' && (rounds = atoi(optarg)) >= 1)
			continue;
		if (opt == 'r' && !ring_mib(optarg))
			continue;
		optind = argc; /* usage */
		break;
	}
	if (optind != argc - 1) {
		fprintf(stderr, "usage: bench_ring [-n ROUNDS] [-r RING_MIB] CAPTURE\n");
		return 2;
	}
	if (load(argv[optind], &r) || !r.n) {
		fprintf(stderr, "bench_ring: %s: no records\n", argv[optind]);
		return 1;
	}
	for (int m = 0; m < NMODES; m++) {
		/* no collector (files_fd -1): binaries are opened by path */
		st[m] = symb_state__new(&so);
		t[m] = calloc((size_t)rounds, sizeof(double));
		if (!st[m] || !t[m] || ring_new(&g[m])) {
			fprintf(stderr, "bench_ring: making a ring: %m\n");
			return 1;
		}
		pass(&g[m], &r, st[m], (enum mode)m); /* warm-up, untimed */
	}
	for (int i = 0; i < rounds; i++)
		for (int m = 0; m < NMODES; m++)
			t[m][i] = pass(&g[m], &r, st[m], (enum mode)m);
	printf("%zu records, %.1f MiB, %llu samples per pass, a %llu MiB ring; median of %d "
	       "passes:\n",
	       r.n, r.bytes / 1048576.0,
	       (unsigned long long)symb_state__counters(st[COPIED])->samples / (rounds + 1),
	       (unsigned long long)(ring_data >> 20), rounds);
	for (int m = 0; m < NMODES; m++) {
		qsort(t[m], (size_t)rounds, sizeof(double), cmp_d);
		printf("  %-18s %8.1f ns/record  %7.3f ms/pass  (min %.3f, max %.3f)\n",
		       mode_names[m], t[m][rounds / 2] / r.n, t[m][rounds / 2] / 1e6, t[m][0] / 1e6,
		       t[m][rounds - 1] / 1e6);
	}
	printf("  copied against in place: %+.1f ns/record with the feed (%+.2f%%), %+.1f "
	       "ns/record for the ring alone\n",
	       (t[COPIED][rounds / 2] - t[IN_PLACE][rounds / 2]) / r.n,
	       100.0 * (t[COPIED][rounds / 2] - t[IN_PLACE][rounds / 2]) / t[IN_PLACE][rounds / 2],
	       (t[READ_ONLY][rounds / 2] - t[PEEK_ONLY][rounds / 2]) / r.n);
	return 0;
}
