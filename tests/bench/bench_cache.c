// SPDX-License-Identifier: MIT
/*
 * Cold versus warm loading of binaries through the symbolizer's own path
 * (symb_obj_load): cold parses the symbol table and the stack-delta table
 * from the file and stores both in a fresh cache; warm is a new symbolizer
 * state that finds both in that cache. Also: parsing with no cache at all.
 *
 *   build/tests/bench/bench_cache [-n RUNS] [-w] [-g DIR] FILE...
 *     -w: after one cold load, only warm loads (to profile the warm path)
 *     -g: look for separate debug files under DIR (as --debug-dir)
 *     (default: libc and the largest libLLVM on the machine)
 *
 * Prints one row per file: the median of RUNS (default 5) wall-clock times
 * of each mode, and warm's speed-up over cold, twice: with the files in the
 * page cache (parsing against cache reads alone), and with the binary and
 * the cache database dropped from the page cache before each load
 * (POSIX_FADV_DONTNEED), as on a host where the binary's .eh_frame and
 * symbol tables were never read (a running program does not touch them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "symb_test.h"

static double now_ms(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e6;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static int drop_pages;
static const char *debug_dirs[2]; /* -g */

static void drop_from_page_cache(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	fdatasync(fd);
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
}

/* One load; returns ms, or < 0. */
static double load_once(const char *path, struct symb_cache *c, const char *db, uint64_t *rows,
			size_t *syms)
{
	const struct symb_obj *o;
	struct symb_objects *s;
	double t0, t;

	if (symb_test_objects_with(&s, path, c, debug_dirs[0] ? debug_dirs : NULL)) {
		symb_objects__free(s);
		return -1;
	}
	if (drop_pages) {
		drop_from_page_cache(path);
		drop_from_page_cache(db);
	}
	t0 = now_ms();
	o = symb_objects__load(s, 0);
	t = now_ms() - t0;
	*rows = o->deltas.n;
	*syms = o->elf ? symb_elf__nsyms(o->elf) : 0;
	symb_objects__free(s);
	return t;
}

static int bench(const char *const *files, int runs, int warm_only);

int main(int argc, char **argv)
{
	const char *defaults[] = {"/usr/lib/x86_64-linux-gnu/libc.so.6",
				  "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
				  "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1", NULL};
	const char *const *files = defaults;
	int runs = 5, opt, warm_only = 0;

	lp_log_init("bench_cache", LP_LOG_WARN);
	while ((opt = getopt(argc, argv, "n:wg:")) != -1) {
		if (opt == 'w') {
			warm_only = 1;
			continue;
		}
		if (opt == 'g') {
			debug_dirs[0] = optarg;
			continue;
		}
		if (opt != 'n' || (runs = atoi(optarg)) < 1 || runs > 100) {
			fprintf(stderr, "usage: %s [-n RUNS] [-w] [-g DIR] FILE...\n", argv[0]);
			return 2;
		}
	}
	if (optind < argc)
		files = (const char *const *)&argv[optind];
	for (drop_pages = 0; drop_pages < 2; drop_pages++)
		if (bench(files, runs, warm_only))
			return 1;
	return 0;
}

static int bench(const char *const *files, int runs, int warm_only)
{
	printf("\n%s\n%-44s %9s %8s %10s %10s %10s %8s\n",
	       drop_pages ? "binary and cache dropped from the page cache before each load:"
			  : "files in the page cache:",
	       "file", "symbols", "rows", "no cache", "cold", "warm", "warm x");
	for (; *files; files++) {
		double nocache[100], cold[100], warm[100];
		char dir[] = "/tmp/lowprof-bench.XXXXXX", db[64];
		uint64_t rows = 0;
		size_t syms = 0;
		int ok = 1;

		if (access(*files, R_OK))
			continue;
		if (!mkdtemp(dir))
			return 1;
		snprintf(db, sizeof(db), "%s/c.db", dir);
		for (int i = 0; i < runs && ok; i++) {
			struct symb_cache *c = NULL;

			if (!warm_only || i == 0) {
				nocache[i] = load_once(*files, NULL, db, &rows, &syms);
				unlink(db);
				if (symb_cache__open(db, 0, &c))
					return 1;
				cold[i] = load_once(*files, c, db, &rows, &syms);
				symb_cache__close(c);
			} else {
				nocache[i] = nocache[0];
				cold[i] = cold[0];
			}
			/* a new process would open the cache again */
			if (symb_cache__open(db, 0, &c))
				return 1;
			warm[i] = load_once(*files, c, db, &rows, &syms);
			symb_cache__close(c);
			ok = nocache[i] >= 0 && cold[i] >= 0 && warm[i] >= 0;
		}
		unlink(db);
		rmdir(dir);
		if (!ok) {
			printf("%-44s failed\n", *files);
			continue;
		}
		qsort(nocache, runs, sizeof(double), cmp_d);
		qsort(cold, runs, sizeof(double), cmp_d);
		qsort(warm, runs, sizeof(double), cmp_d);
		printf("%-44s %9zu %8llu %8.2fms %8.2fms %8.2fms %7.1fx\n", *files, syms,
		       (unsigned long long)rows, nocache[runs / 2], cold[runs / 2], warm[runs / 2],
		       cold[runs / 2] / warm[runs / 2]);
	}
	return 0;
}
