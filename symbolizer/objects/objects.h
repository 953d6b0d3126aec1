/* SPDX-License-Identifier: MIT */
/*
 * The objects: every mapped file a record stream names, and the kernel's
 * symbols.
 *
 * What it is: two tables, each the one owner of what it holds.
 * - struct symb_objects: the object table. A file is identified by (path,
 *   device, inode) as the collector saw it mapped. It is loaded on first use
 *   (symbols, PT_LOAD segments, stack deltas; its DWARF when a line is first
 *   asked for), from the SQLite cache when the cache has the tables of the
 *   same bytes, else parsed and stored. The table owns that cache traffic,
 *   the requests for files to the collector, the DWARF it keeps open, and
 *   the counters of all of it.
 * - struct symb_ksyms: the kernel's symbols from the stream's snapshot, with
 *   addresses relative to the kernel's text base.
 *
 * What it is not: processes and their mappings, or aggregation (ingest/);
 * the profile model (build/). Nothing here reads a record stream's samples
 * or calls back up into those.
 *
 * Every table a stream can grow is bounded (the SYMB_MAX_* below); what is
 * beyond a bound is refused with -ENOSPC and counted by the caller.
 */
#ifndef LOWPROF_SYMB_OBJECTS_H
#define LOWPROF_SYMB_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"
#include "debuginfo.h"
#include "elfsym.h"
#include "lowprof/schema.h"

struct symb_cache;

/* distinct mapped files: a busy host maps a few thousand; also keeps every
 * object's 2^44 slice of pprof's address space below the kernel's */
#define SYMB_MAX_OBJS (1u << 16)
/* their paths (up to 4 KiB each): 64 MiB */
#define SYMB_MAX_OBJ_PATH_BYTES (64u << 20)
/* build-ids a live symbolizer noted (replay), 40 bytes each: 2.5 MiB */
#define SYMB_MAX_NOTED_IDS 65536
/* kernel symbols: kallsyms has ~200k entries with modules loaded */
#define SYMB_MAX_KSYMS (1u << 22)
/* their names: well below 4 GiB, so the u32 name offsets cannot wrap */
#define SYMB_MAX_KSYM_BYTES (256u << 20)

/* Each object's slice of pprof's address space; file offsets must be below. */
#define SYMB_OBJ_SPAN (1ull << 44)

/*
 * A mapped file. Read-only outside objects/: the table sets every field.
 */
struct symb_obj {
	char *path;
	uint32_t path_len;
	uint64_t hash; /* of (device, inode, path) with the table's seed */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint32_t pid; /* a process that mapped it (to reach /proc/PID/root) */
	bool loaded;  /* open attempted (symb_objects__load) */
	struct symb_elf *elf;
	struct symb_deltas deltas; /* stack deltas, by ELF virtual address */
	bool have_deltas;
	struct symb_dwarf *dwarf;	  /* NULL: no debug information */
	struct symb_obj_dwarf *dwarf_src; /* the file libdw reads */
	char *key;			  /* the cache key of its tables; NULL: none */
	char build_id[41 * 2 + 1];	  /* as the file claims it */
	/* the build-id the collector saw mapped (schema 1.3); 0 bytes: unknown */
	uint8_t want_id[LPS_MAX_BUILD_ID];
	uint32_t want_id_len;
	bool id_noted;	/* want_id is a live symbolizer's note (buildid record), not the kernel's */
	bool not_found; /* no file with that build-id: frames are named path+0xoffset */
	bool lines_loaded; /* the cache was asked for its DWARF results */
	uint32_t refs;	   /* mappings that hold it (symb_objects__intern, __unref) */
	/* an object of an in-memory ELF image (the vDSO), NULL: a file */
	uint8_t *image;
	uint32_t image_len;
	uint32_t used; /* the table's epoch when it was last used (symb_objects__trim) */
};

struct symb_objects_opts {
	size_t sz; /* sizeof(struct symb_objects_opts) */
	/* of every hash a stream can steer (no flooding) */
	uint64_t seed;
	/* never open a file: user frames are named "binary+0xoffset" (fuzzing, tests) */
	bool offline;
	/*
	 * The stream is a capture replayed after the fact, maybe on another
	 * host: files are found by build-id (at their path, else under
	 * debug_dirs as .build-id/xx/rest), never by device and inode, and
	 * never through /proc/PID/root.
	 */
	bool replay;
	struct symb_cache *cache;      /* may be NULL; not owned */
	const char *const *debug_dirs; /* NULL-terminated; may be NULL; not copied */
	/*
	 * The file channel to the collector (lowprof/files.h), -1: none.
	 * Objects the symbolizer cannot open itself (another user's, another
	 * mount namespace's) are asked for there. Not owned.
	 */
	int files_fd;
};

struct symb_objects_stats {
	uint32_t objs;	     /* in the table */
	uint32_t slots;	     /* indices are below this (free ones among them) */
	uint64_t swept;	     /* objects dropped once no mapping held them */
	uint64_t evicted;    /* loaded tables dropped for the memory budget (reloaded on use) */
	uint64_t heap_bytes; /* the process's heap in use at the last symb_objects__trim */
	bool cache;	     /* a cache was given (opts) */
	/* parsed from the file or taken from the cache */
	uint64_t parsed_symbols, parsed_deltas;
	uint64_t cache_hits, cache_stored, cache_bad;
	uint64_t unreadable_objs;
	uint64_t mismatched_objs; /* a file whose build-id is not the one mapped */
	uint64_t build_ids_noted; /* live: build-ids told the collector (no PROCMAP_QUERY) */
	uint64_t load_ns;	  /* time spent loading objects */
	/* DWARF results taken from the cache and stored; objects that started libdw */
	uint64_t lines_cache_hits, lines_stored, dwarf_started;
	/* files asked of the collector */
	struct {
		uint64_t asked, received, refused, timeouts;
	} files;
};

/*
 * An empty table; NULL with errno set (EINVAL: opts' sz is not one this
 * version knows; ENOMEM). Destructor: symb_objects__free (accepts NULL).
 */
struct symb_objects *symb_objects__new(const struct symb_objects_opts *opts);
void symb_objects__free(struct symb_objects *t);

/*
 * The object of a file mapping (m->path absolute, m->inode set): found, or
 * added. pid is a process that maps it. Returns 0 and its index in *idx,
 * -ENOSPC when SYMB_MAX_OBJS or SYMB_MAX_OBJ_PATH_BYTES is reached, or
 * -ENOMEM. The object holds one more reference (its refs), which the
 * mapping gives back with symb_objects__unref. An index stays the object's
 * until symb_objects__sweep drops it; until then new objects take new
 * indices (first-seen order), after it they may take freed ones.
 */
int symb_objects__intern(struct symb_objects *t, const struct lps_mapping *m, uint32_t pid,
			 uint32_t *idx);
/* The file channel to the collector from now on (a new collector); -1: none. */
void symb_objects__set_files_fd(struct symb_objects *t, int files_fd);

/* A mapping of object idx is gone. */
void symb_objects__unref(struct symb_objects *t, uint32_t idx);
/* One more mapping holds object idx (a mapping split in two, a forked copy). */
void symb_objects__ref(struct symb_objects *t, uint32_t idx);
/*
 * Drops the objects no mapping holds (their tables, their slots), for a
 * long run: call only when nothing refers to their indices any more (no
 * aggregated frame: at the start of a window). Returns how many.
 */
uint32_t symb_objects__sweep(struct symb_objects *t);
/*
 * The memory budget, between windows like sweep: when the process's heap in
 * use (malloc's count: tables, DWARF, everything) is over budget bytes, the
 * loaded tables of the objects least recently used (symbols, stack deltas,
 * DWARF handles and their lines) are dropped until it is at 7/8 of it or
 * nothing is left to drop; the objects stay, and load again (from the
 * cache, where there is one) when next used. Starts a new epoch of use.
 * budget 0: no budget. Returns how many objects were unloaded.
 */
uint32_t symb_objects__trim(struct symb_objects *t, uint64_t budget);

/* idx < symb_objects__stats(t)->slots; a free slot's path is NULL */
const struct symb_obj *symb_objects__get(const struct symb_objects *t, uint32_t idx);

/*
 * Loads object idx once (a failure is not retried) and returns it: its elf,
 * deltas and dwarf are set where the file could be opened and was the one
 * mapped.
 */
const struct symb_obj *symb_objects__load(struct symb_objects *t, uint32_t idx);

/*
 * The ELF symbol at file offset off of object idx (loaded if need be), as
 * the file names it (mangled); NULL: none. The name lives as long as t.
 */
const char *symb_objects__symbol(struct symb_objects *t, uint32_t idx, uint64_t off);

/*
 * Source frames at file offset off of object idx from DWARF, innermost
 * first, at most max: the number written, 0 for none. Results earlier runs
 * stored in the cache are loaded before the object's first lookup. The
 * strings live as long as t.
 */
int symb_objects__lines(struct symb_objects *t, uint32_t idx, uint64_t off,
			struct symb_srcline *out, int max);
/*
 * Stores, for the next run, the DWARF results of objects that learned
 * addresses since they were loaded, and counts the objects that started
 * libdw (stats' dwarf_started).
 */
void symb_objects__store_lines(struct symb_objects *t);

/*
 * Replay: a buildid record's claim for a file (read before the stream, the
 * records coming after the samples that need the files): an object of that
 * device and inode without a build-id from the kernel takes it, to find the
 * file by (id_noted). 0, -EINVAL for an empty or oversized id, -ENOSPC
 * beyond SYMB_MAX_NOTED_IDS, -ENOMEM.
 */
int symb_objects__note_build_id(struct symb_objects *t, const struct lps_buildid *b);
/*
 * Replay of a capture whose notes were not read before the stream (its
 * kernel had PROCMAP_QUERY, but files without a block device get no
 * build-id from it): fn(ctx) reads them (symb_objects__note_build_id) the
 * first time a file without a build-id is not at its path, so that a
 * replay on the host that was profiled never pays that pass.
 */
void symb_objects__set_notes_loader(struct symb_objects *t, void (*fn)(void *ctx), void *ctx);

const struct symb_objects_stats *symb_objects__stats(const struct symb_objects *t);

/*
 * The vDSO (schema record 13): one object named "[vdso]" whose ELF image is
 * the stream's, not a file. It loads like a file (its .eh_frame into stack
 * deltas, its dynamic symbols for names; never cached), from the image,
 * which it keeps (8 KiB on x86_64) and treats as untrusted ELF; it also
 * loads in an offline table, as it opens no file. The table holds one
 * reference of its own, so it is never swept.
 *
 * set_vdso copies the image: 0 when it is the image the table already has
 * (nothing changes), 1 when it is new (a different one replaces the old:
 * its tables are dropped and load again from the new bytes on next use, so
 * callers forget what they derived from them); -EINVAL for an empty image
 * or one over LPS_MAX_VDSO, -ENOSPC or -ENOMEM.
 *
 * vdso gives the object to a [vdso] mapping of len bytes, with one more
 * reference (symb_objects__unref gives it back): 0, or -ENOENT when the
 * stream sent no image or len is not the image's length (a 32-bit
 * process's vDSO is another image; the caller also keeps those below
 * 4 GiB away).
 */
int symb_objects__set_vdso(struct symb_objects *t, const void *image, size_t len);
int symb_objects__vdso(struct symb_objects *t, uint64_t len, uint32_t *idx);

/* ---- kernel symbols ----------------------------------------------------- */

struct symb_ksyms_stats {
	uint32_t count;
	uint64_t over_limit; /* symbols dropped at SYMB_MAX_KSYMS / _BYTES */
	/*
	 * The stream carries kernel addresses relative to the text base (since
	 * 1.4). An older stream's are absolute: its base is _text's address in
	 * its snapshot (kbase, once kbase_known); without it kernel frames
	 * have no address.
	 */
	bool relative;
	bool kbase_known;
	uint64_t kbase;
};

/* NULL with errno set. Destructor: symb_ksyms__free (accepts NULL). */
struct symb_ksyms *symb_ksyms__new(void);
void symb_ksyms__free(struct symb_ksyms *k);
/* A meta record: whether the stream's kernel addresses are relative. */
void symb_ksyms__start(struct symb_ksyms *k, bool relative);
/*
 * One ksyms record (seq 0 starts a new snapshot). 0, -EBADMSG for a
 * malformed record (what came before it is kept), -ENOMEM.
 */
int symb_ksyms__feed(struct symb_ksyms *k, struct lps_ksyms *rec);
/* A stream's kernel address made relative to the text base; 0: unknown. */
uint64_t symb_ksyms__relative(const struct symb_ksyms *k, uint64_t addr);
/* The symbol at a relative address (at most 1 MiB past its start); NULL: none. */
const char *symb_ksyms__lookup(struct symb_ksyms *k, uint64_t addr);
const struct symb_ksyms_stats *symb_ksyms__stats(const struct symb_ksyms *k);
/*
 * Frees the symbols, as a new snapshot that has none: lookups find nothing
 * until the next one is fed. The stats but count are kept.
 */
void symb_ksyms__release(struct symb_ksyms *k);

#endif /* LOWPROF_SYMB_OBJECTS_H */
