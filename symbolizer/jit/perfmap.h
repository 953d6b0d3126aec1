/* SPDX-License-Identifier: MIT */
/*
 * JIT perf maps: one process's /tmp/perf-PID.map, as the collector copied
 * it into the stream (LPS_PERFMAP chunks), parsed into a table of
 * (start, size, name) that names addresses of JIT-compiled code.
 *
 * What it is: the parser of the lines "START SIZE name\n" (START and SIZE
 * hex, with or without 0x) that Node.js (--perf-basic-prof), Java's
 * perf-map-agent, Python 3.12 (-X perf) and LuaJIT write, fed chunk by
 * chunk in file offset order, and the lookup of an address. Later lines
 * win over earlier ones where they overlap (a JIT reuses freed code
 * memory): the table never overlaps itself.
 *
 * What it is not: a reader of files (the bytes come from the stream). The
 * jitdump parser (jitdump.h) adds its symbols with symb_jit__add. The bytes are the profiled process's: every line is
 * checked, and a malformed one is skipped and counted; the table of a
 * process is bounded by SYMB_JIT_MAX_SYMS symbols and SYMB_JIT_MAX_NAME_BYTES
 * of names, beyond which lines are dropped and counted.
 */
#ifndef LOWPROF_SYMB_JIT_PERFMAP_H
#define LOWPROF_SYMB_JIT_PERFMAP_H

#include <stddef.h>
#include <stdint.h>

/* per process: 1M symbols (24 bytes each in the table) */
#define SYMB_JIT_MAX_SYMS (1u << 20)
/* per process: names' bytes (what the collector sends of a file, at most) */
#define SYMB_JIT_MAX_NAME_BYTES (64u << 20)
/* a longer line is malformed (Java's signatures reach a few hundred bytes) */
#define SYMB_JIT_MAX_LINE 4096

struct symb_jit_stats {
	uint64_t lines;	    /* symbols read */
	uint64_t bad_lines; /* malformed: not "hex hex name", size 0, a NUL, too long */
	uint64_t dropped;   /* over SYMB_JIT_MAX_SYMS or SYMB_JIT_MAX_NAME_BYTES */
	uint64_t gap_bytes; /* bytes missing between chunks (lost records) */
	uint64_t dup_bytes; /* bytes received twice (skipped) */
	uint64_t restarts;  /* chunks at offset 0 after others: the file again */
};

struct symb_jit;

/* An empty table; NULL with errno set. Destructor: symb_jit__free (accepts NULL). */
struct symb_jit *symb_jit__new(void);
void symb_jit__free(struct symb_jit *j);

/*
 * Feeds bytes [offset, offset + len) of the file. Chunks come in offset
 * order: offset 0 after other chunks starts the file over (the table is
 * emptied); a chunk that starts before the end of the last one has its
 * repeated part skipped; one that starts after it leaves a gap (counted),
 * and the line the gap cut is skipped. A partial last line waits for the
 * next chunk. Returns 0 or -ENOMEM (what could not be kept is counted).
 */
int symb_jit__feed(struct symb_jit *j, uint64_t offset, const char *data, size_t len);

/*
 * Adds [start, start + size) named name[0..len) (no NUL or newline in it;
 * checked), newer than every entry so far. Returns 0 (a bad or over-limit
 * symbol is counted) or -ENOMEM.
 */
int symb_jit__add(struct symb_jit *j, uint64_t start, uint64_t size, const char *name, size_t len);

/*
 * The symbol holding addr: 1 with *name (not NUL-terminated, valid until
 * the next feed), *name_len and *start set; 0 when none.
 */
int symb_jit__lookup(struct symb_jit *j, uint64_t addr, const char **name, uint32_t *name_len,
		     uint64_t *start);

const struct symb_jit_stats *symb_jit__stats(const struct symb_jit *j);
/* Symbols in the table, and the bytes it holds (for tests and budgets). */
uint32_t symb_jit__count(struct symb_jit *j);
size_t symb_jit__mem(const struct symb_jit *j);

/*
 * JIT function names as aggregated frames refer to them: each distinct
 * name once, by a small id, for as long as the frames that use it (the
 * ingest empties it with its aggregates). Bounded by SYMB_JIT_MAX_NAMES
 * names and SYMB_JIT_MAX_NAMES_BYTES bytes in all.
 */
#define SYMB_JIT_MAX_NAMES	 (1u << 20)
#define SYMB_JIT_MAX_NAMES_BYTES (128u << 20)

struct symb_jit_names;

/* NULL with errno set. Destructor: symb_jit_names__free (accepts NULL). */
struct symb_jit_names *symb_jit_names__new(uint64_t seed);
void symb_jit_names__free(struct symb_jit_names *t);
/*
 * The id of name[0..len) (no NUL inside), added if new: 0, -ENOSPC beyond
 * the limits, or -ENOMEM.
 */
int symb_jit_names__intern(struct symb_jit_names *t, const char *name, uint32_t len, uint32_t *id);
/* The NUL-terminated name of id, or NULL for an id it does not hold. */
const char *symb_jit_names__get(const struct symb_jit_names *t, uint32_t id);
/* Empties it: every id is void. */
void symb_jit_names__clear(struct symb_jit_names *t);

#endif /* LOWPROF_SYMB_JIT_PERFMAP_H */
