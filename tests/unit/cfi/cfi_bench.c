// SPDX-License-Identifier: MIT
/*
 * cfi_bench FILE [DEBUGFILE]: builds FILE's stack-delta table and prints the
 * time, the peak RSS growth, rows, stats, the blob's size and the time to
 * decode it (the cache's warm path). Not a test: numbers for people.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cfi.h"
#include "lowprof/clock.h"

static double now(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static long maxrss_kb(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_maxrss;
}

static Elf *open_elf(const char *path)
{
	int fd = open(path, O_RDONLY);
	Elf *e;

	if (fd < 0) {
		perror(path);
		exit(1);
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e) {
		fprintf(stderr, "%s: %s\n", path, elf_errmsg(-1));
		exit(1);
	}
	return e;
}

int main(int argc, char **argv)
{
	struct symb_deltas d, d2;
	struct symb_cfi_stats st;
	Elf *elf, *dbg = NULL;
	uint8_t *blob;
	size_t len;
	double t0, t_build, t_dec = 1e9;
	long rss0;
	int err, i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE [DEBUGFILE]\n", argv[0]);
		return 2;
	}
	elf_version(EV_CURRENT);
	elf = open_elf(argv[1]);
	if (argc > 2)
		dbg = open_elf(argv[2]);
	rss0 = maxrss_kb();
	t0 = now();
	err = symb_cfi__build(elf, dbg, &d, &st);
	t_build = now() - t0;
	if (err) {
		fprintf(stderr, "build: %s\n", strerror(-err));
		return 1;
	}
	printf("%s\n  build %.1f ms, peak RSS +%ld KiB, %u rows (%zu KiB in memory)\n", argv[1],
	       t_build * 1e3, maxrss_kb() - rss0, d.n, d.n * sizeof(*d.rows) / 1024);
	printf("  cies %u fdes %u bad %u invalid_rows %u from_eh %u from_debug %u\n", st.cies,
	       st.fdes, st.bad_entries, st.invalid_rows, st.from_eh_frame, st.from_debug_frame);
	if (symb_deltas__encode(&d, &blob, &len))
		return 1;
	for (i = 0; i < 30; i++) {
		t0 = now();
		err = symb_deltas__decode(blob, len, &d2);
		t0 = now() - t0;
		if (t0 < t_dec)
			t_dec = t0;
		if (err || d2.n != d.n || memcmp(d.rows, d2.rows, d.n * sizeof(*d.rows))) {
			fprintf(stderr, "decode: mismatch (%d)\n", err);
			return 1;
		}
		symb_deltas__free(&d2);
	}
	printf("  blob %zu bytes (%.2f bytes/row), decode %.2f ms (%.0fx faster than build)\n", len,
	       d.n ? (double)len / d.n : 0.0, t_dec * 1e3, t_build / t_dec);
	free(blob);
	symb_deltas__free(&d);
	elf_end(elf);
	if (dbg)
		elf_end(dbg);
	return 0;
}
