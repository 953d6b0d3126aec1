// SPDX-License-Identifier: MIT
/*
 * Not a test: measurements behind choices in symbolizer/cache/cache.c and the
 * elfsym blob (see schema/README.md).
 *
 *   cache_bench quickcheck <dir> [MB]
 *	fills <dir>/bench.db with MB (default 500) megabytes of 1-4 MB blobs,
 *	then times, on a fresh connection, PRAGMA quick_check against the
 *	cache's own start-up check (symb_cache__open of the file).
 *   cache_bench elf <dir> <elf file>...
 *	for each file: symb_elf__open time (cold), blob size, and the time of
 *	symb_cache__get + symb_elf__decode (warm), with a lookup check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache.h"
#include "elfsym.h"
#include "lowprof/clock.h"

static double now(void)
{
	return lp_clock_ns(CLOCK_MONOTONIC) / 1e9;
}

static int quickcheck(const char *dir, long mb)
{
	char path[4096], key[64];
	struct symb_cache *c;
	sqlite3 *db;
	sqlite3_stmt *s;
	size_t total = 0, len;
	uint8_t *buf;
	double t;
	int i = 0;

	snprintf(path, sizeof(path), "%s/bench.db", dir);
	if (symb_cache__open(path, (uint64_t)mb << 21, &c))
		return 1;
	buf = malloc(4 << 20);
	if (!buf)
		return 1;
	while (total < (size_t)mb << 20) {
		len = (1 << 20) + (size_t)(i * 7919 % 3) * (1 << 20);
		memset(buf, i, len);
		snprintf(key, sizeof(key), "b:%08d", i++);
		if (symb_cache__put(c, key, SYMB_CACHE_SYMBOLS, 1, buf, len))
			return 1;
		total += len;
	}
	symb_cache__close(c);
	free(buf);
	printf("cache of %zu MB in %d blobs\n", total >> 20, i);

	/* Both timings with the file in the page cache (the common restart case). */
	if (sqlite3_open(path, &db) != SQLITE_OK)
		return 1;
	t = now();
	sqlite3_prepare_v2(db, "PRAGMA quick_check", -1, &s, NULL);
	while (sqlite3_step(s) == SQLITE_ROW)
		printf("quick_check: %s\n", sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	printf("PRAGMA quick_check: %.3f s\n", now() - t);
	sqlite3_close(db);
	t = now();
	if (symb_cache__open(path, (uint64_t)mb << 21, &c))
		return 1;
	printf("symb_cache__open (its own check): %.3f s\n", now() - t);
	symb_cache__close(c);
	return 0;
}

static int bench_elf(const char *dir, const char *file)
{
	char path[4096];
	struct symb_elf *e, *d;
	struct symb_cache *c;
	uint8_t *blob, *got;
	size_t len, n, i;
	double t_open, t_enc, t_get = 1e9, t_dec = 1e9, t;
	int rep;

	t = now();
	e = symb_elf__open(file);
	t_open = now() - t;
	if (!e) {
		fprintf(stderr, "%s: %s\n", file, strerror(errno));
		return 1;
	}
	t = now();
	if (symb_elf__encode(e, &blob, &len))
		return 1;
	t_enc = now() - t;
	snprintf(path, sizeof(path), "%s/elf.db", dir);
	if (symb_cache__open(path, 0, &c) ||
	    symb_cache__put(c, file, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, blob, len))
		return 1;
	symb_cache__close(c);
	/* Warm: a new connection (as a restarted symbolizer), best of 5. */
	for (rep = 0; rep < 5; rep++) {
		double t0 = now(), t1;

		if (symb_cache__open(path, 0, &c))
			return 1;
		t1 = now();
		if (symb_cache__get(c, file, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, &got, &n))
			return 1;
		t = now();
		if (t - t1 < t_get)
			t_get = t - t1;
		d = symb_elf__decode(got, n);
		if (now() - t < t_dec)
			t_dec = now() - t;
		(void)t0;
		if (!d)
			return 1;
		for (i = 0; i < 100000; i++) {
			uint64_t a = 0x1000 + i * 977, o1 = 0, o2 = 0;
			const char *x = symb_elf__symbolize(e, a, &o1),
				   *y = symb_elf__symbolize(d, a, &o2);

			if (!x != !y || (x && (strcmp(x, y) || o1 != o2))) {
				fprintf(stderr, "%s: lookup differs at 0x%lx\n", file,
					(unsigned long)a);
				return 1;
			}
		}
		symb_elf__free(d);
		free(got);
		symb_cache__close(c);
	}
	{
		const uint8_t *p = blob + 8;
		uint64_t h[5];
		int k;

		for (k = 0; k < 5; k++) {
			unsigned int sh = 0;

			h[k] = 0;
			do
				h[k] |= (uint64_t)(*p & 0x7f) << sh, sh += 7;
			while (*p++ & 0x80);
		}
		printf("%s: blob: %lu segments, %lu ranges, names %lu bytes\n", file,
		       (unsigned long)h[0], (unsigned long)h[2], (unsigned long)h[4]);
	}
	printf("%s: %zu symbols; open %.3f ms; encode %.3f ms, %zu bytes; "
	       "cache get %.3f ms + decode %.3f ms = warm %.3f ms; cold/warm %.1fx\n",
	       file, symb_elf__nsyms(e), t_open * 1e3, t_enc * 1e3, len, t_get * 1e3, t_dec * 1e3,
	       (t_get + t_dec) * 1e3, t_open / (t_get + t_dec));
	free(blob);
	symb_elf__free(e);
	return 0;
}

int main(int argc, char **argv)
{
	int i;

	if (argc >= 3 && !strcmp(argv[1], "quickcheck"))
		return quickcheck(argv[2], argc > 3 ? atol(argv[3]) : 500);
	if (argc >= 4 && !strcmp(argv[1], "elf")) {
		for (i = 3; i < argc; i++) {
			if (bench_elf(argv[2], argv[i]))
				return 1;
		}
		return 0;
	}
	fprintf(stderr, "usage: %s quickcheck <dir> [MB] | elf <dir> <file>...\n", argv[0]);
	return 2;
}
