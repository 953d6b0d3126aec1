/* SPDX-License-Identifier: MIT */
/*
 * The persistent symbol cache: SQLite, one file shared by any number of
 * symbolizer processes (WAL mode, a busy timeout). It stores opaque blobs
 * (symbol tables, stack-delta tables, DWARF results by address, whether a
 * debug file belongs to a binary) under a key that names the content they
 * were built from: "c:<B>" for a binary alone, "c:<B>+<D>" for a binary
 * with its separate debug file, where B and D are content identities
 * (SHA-256 over what was read of each file, ident.h) computed from the very
 * bytes the blob was built from (symb_cache__key). A build-id is only how
 * files are found; two files that claim one build-id never share a row.
 * The schema is schema/cache.sql.
 *
 * The memo maps what the kernel says identifies a file's current version
 * (struct symb_file_key, with the boot) to the content identity computed
 * from it, so that a warm load finds its rows without reading the file. It
 * serves lookups only: puts take identities computed from the bytes, so a
 * memo row can at worst misname the file it was computed for. It cannot
 * name another one: its mount id is never given again while the system
 * runs (boot tells boots apart), and it is made only for a file whose
 * stat values held during the read and whose ctime had settled before it
 * (ident.h), so a write to the file or a new file on that inode number has
 * another ctime. On FUSE, or a filesystem image someone else made, stat
 * values are chosen by that mount's maker: a row there can only name other
 * files of the same mount, which the same maker serves.
 *
 * What it is: get/put of checksummed, versioned blobs, least-recently-used
 * eviction under a byte budget, the memo (at most SYMB_CACHE_MEMO_MAX rows,
 * outside the budget), and recovery from a damaged file (detected at open,
 * moved aside, rebuilt, with a warning). What it is not: the blobs' formats
 * (their owners encode and validate them), or the identities (ident.h).
 *
 * The database is untrusted input like any file: a row whose size, checksum
 * or kind does not match, or a memo row whose identity is not 32 bytes, is
 * deleted and reported as a miss.
 */
#ifndef LOWPROF_SYMB_CACHE_H
#define LOWPROF_SYMB_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "ident.h"

#define SYMB_CACHE_DEFAULT_BUDGET (512ull << 20)
#define SYMB_CACHE_MAX_BLOB	  (1ull << 30) /* larger blobs are not stored */

enum symb_cache_kind {
	SYMB_CACHE_SYMBOLS = 1,	    /* elfsym.h's symb_elf__encode blob */
	SYMB_CACHE_DELTAS = 2,	    /* cfi.h's symb_deltas__encode blob */
	SYMB_CACHE_LINES = 3,	    /* debuginfo.h's symb_dwarf__encode_lines blob */
	SYMB_CACHE_DEBUG_MATCH = 4, /* "c:<B>+<D>": one byte, 1 if D belongs to B, else 0 */
};

/* Memo rows kept (the most recently put): ~150 bytes each, outside the budget. */
#define SYMB_CACHE_MEMO_MAX 16384

/* Longest key symb_cache__key makes: "c:", two hex identities, "+", a NUL. */
#define SYMB_CACHE_KEY_MAX (2 + 2 * (SYMB_IDENT_HEX - 1) + 2)

struct symb_cache_stats {
	uint64_t hits, misses, puts, evictions;
	uint64_t bad_rows; /* rows that failed validation, deleted */
	uint64_t errors;   /* SQLite errors (busy beyond the timeout, I/O) */
	uint64_t bytes;	   /* blob bytes stored now (as of the last put/evict) */
	uint64_t memo_hits, memo_misses, memo_puts;
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

/*
 * From here on the object makes, renames and removes no file (the
 * symbolizer's sandbox would refuse it; SQLite's own files are open and
 * stay, see cache.c): a file found damaged is no longer moved aside and
 * replaced but marked for the next open to do so, and the object then
 * answers every call with an error (a miss). Call before the sandbox.
 */
void symb_cache__seal(struct symb_cache *c);

void symb_cache__stats(const struct symb_cache *c, struct symb_cache_stats *st);

/*
 * The key of what was built from a binary of identity bin, with the
 * separate debug file of identity dbg (NULL: none). Returns out.
 */
char *symb_cache__key(char out[SYMB_CACHE_KEY_MAX], const struct symb_ident *bin,
		      const struct symb_ident *dbg);

/*
 * The memo (see top). get: 0 with the identity last put for k in this
 * boot, -ENOENT, or another negative errno (-ENOTSUP: the cache keeps no
 * memo, because the boot is unknown). put: 0 or a negative errno; only for
 * an identity computed from the file's bytes, when its image said memo_ok.
 */
int symb_cache__memo_get(struct symb_cache *c, const struct symb_file_key *k,
			 struct symb_ident *id);
int symb_cache__memo_put(struct symb_cache *c, const struct symb_file_key *k,
			 const struct symb_ident *id);

#endif /* LOWPROF_SYMB_CACHE_H */
