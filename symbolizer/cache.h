/* SPDX-License-Identifier: MIT */
/*
 * The persistent symbol cache: SQLite, one file shared by any number of
 * symbolizer processes (WAL mode, a busy timeout). It stores opaque blobs
 * (symbol tables, stack-delta tables, DWARF results by address) under a key
 * that names the binary's content: "b:<hex build-id>", or
 * "p:<path>:<size>:<mtime ns>" for binaries without a build-id; the schema
 * is schema/cache.sql.
 *
 * What it is: get/put of checksummed, versioned blobs, least-recently-used
 * eviction under a byte budget, and recovery from a damaged file (detected
 * at open, moved aside, rebuilt, with a warning). What it is not: the blobs'
 * formats (their owners encode and validate them).
 *
 * The database is untrusted input like any file: a row whose size, checksum
 * or kind does not match is deleted and reported as a miss.
 */
#ifndef LOWPROF_SYMB_CACHE_H
#define LOWPROF_SYMB_CACHE_H

#include <stddef.h>
#include <stdint.h>

#define SYMB_CACHE_DEFAULT_BUDGET (512ull << 20)
#define SYMB_CACHE_MAX_BLOB	  (1ull << 30) /* larger blobs are not stored */

enum symb_cache_kind {
	SYMB_CACHE_SYMBOLS = 1, /* elfsym.h's symb_elf__encode blob */
	SYMB_CACHE_DELTAS = 2,	/* cfi.h's symb_deltas__encode blob */
	SYMB_CACHE_LINES = 3,	/* dwarf.h's symb_dwarf__encode_lines blob */
};

struct symb_cache_stats {
	uint64_t hits, misses, puts, evictions;
	uint64_t bad_rows; /* rows that failed validation, deleted */
	uint64_t errors;   /* SQLite errors (busy beyond the timeout, I/O) */
	uint64_t bytes;	   /* blob bytes stored now (as of the last put/evict) */
};

struct symb_cache;

/*
 * Opens or creates the cache at path (mode 0600; the directory must
 * exist). A file that is not a healthy cache of this schema is renamed to
 * "<path>.corrupt" and a new one created, with a warning. budget is the
 * byte limit of stored blobs (0: SYMB_CACHE_DEFAULT_BUDGET). Returns 0 or a
 * negative errno (the symbolizer then runs without a cache). Destructor:
 * symb_cache__close.
 */
int symb_cache__open(const char *path, uint64_t budget, struct symb_cache **out);
void symb_cache__close(struct symb_cache *c);

/*
 * Looks up key/kind with the given blob format version (a row of another
 * version is a miss). Returns 0 with a malloc'd copy in *blob and *len (the row's
 * last use is updated), -ENOENT on a miss, or another negative errno.
 */
int symb_cache__get(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
		    uint32_t version, uint8_t **blob, size_t *len);

/*
 * Stores (replaces) a blob, then evicts least-recently-used rows until the
 * total is within the budget. Returns 0 or a negative errno (-E2BIG for a
 * blob larger than the budget or SYMB_CACHE_MAX_BLOB).
 */
int symb_cache__put(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
		    uint32_t version, const void *blob, size_t len);

void symb_cache__stats(const struct symb_cache *c, struct symb_cache_stats *st);

#endif /* LOWPROF_SYMB_CACHE_H */
