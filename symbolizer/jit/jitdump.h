/* SPDX-License-Identifier: MIT */
/*
 * JIT dump files: one process's jit-PID.dump (the format of Linux perf's
 * tools/perf/util/jitdump.h, written by node --perf-prof, Java's
 * libperf-jvmti, .NET's DOTNET_PerfMapEnabled), as the collector copied it
 * into the stream (LPS_JITDUMP chunks), parsed into the process's JIT
 * symbol table (perfmap.h) next to its perf map's lines.
 *
 * What it is: a streaming parser of the file header (magic "JiTD" in
 * either byte order: the other order swaps every field) and of the records
 * {id, total_size, timestamp}, fed chunk by chunk in file offset order.
 * JIT_CODE_LOAD adds (code_addr, code_size, name) to the table, newer
 * entries winning where they overlap; JIT_CODE_MOVE adds the symbol that
 * held old_code_addr again at new_code_addr (the old range stays until
 * newer code covers it). JIT_CODE_DEBUG_INFO, JIT_CODE_UNWINDING_INFO,
 * JIT_CODE_CLOSE and unknown records are skipped, as are the code bytes:
 * at most a record's first SYMB_JITDUMP_MAX_PREFIX bytes are kept.
 *
 * What it is not: a reader of files, or of line numbers or unwinding
 * tables. The bytes are the profiled process's: every length and offset
 * is checked; a record that cannot be a record (total_size below its
 * header) loses the file's framing, and the rest of the file is ignored
 * (counted) until it starts again at offset 0; a gap in the chunks does too
 * unless it falls in bytes being skipped.
 */
#ifndef LOWPROF_SYMB_JIT_JITDUMP_H
#define LOWPROF_SYMB_JIT_JITDUMP_H

#include <stddef.h>
#include <stdint.h>

#include "perfmap.h"

#define SYMB_JITDUMP_MAGIC	  0x4A695444u	    /* "JiTD" */
#define SYMB_JITDUMP_FILE_HDR	  40u		    /* the header's fixed part */
#define SYMB_JITDUMP_MAX_FILE_HDR (1u << 20)	    /* a longer header is not a jitdump */
#define SYMB_JITDUMP_REC_HDR	  16u		    /* id, total_size, timestamp */
#define SYMB_JITDUMP_LOAD_FIXED	  56u		    /* record header + pid .. code_index */
#define SYMB_JITDUMP_MOVE_FIXED	  64u		    /* record header + pid .. code_index */
#define SYMB_JITDUMP_MAX_NAME	  SYMB_JIT_MAX_LINE /* longer names: the record is skipped */
#define SYMB_JITDUMP_MAX_PREFIX	  (SYMB_JITDUMP_LOAD_FIXED + SYMB_JITDUMP_MAX_NAME + 1)

enum {
	SYMB_JITDUMP_CODE_LOAD = 0,
	SYMB_JITDUMP_CODE_MOVE = 1,
	SYMB_JITDUMP_CODE_DEBUG_INFO = 2,
	SYMB_JITDUMP_CODE_CLOSE = 3,
	SYMB_JITDUMP_CODE_UNWINDING_INFO = 4,
};

struct symb_jitdump_stats {
	uint64_t loads;	      /* JIT_CODE_LOAD records added */
	uint64_t moves;	      /* JIT_CODE_MOVE records that moved a known symbol */
	uint64_t skipped;     /* other records (debug, unwinding info, close, unknown) */
	uint64_t bad_records; /* malformed: short, size 0, no NUL in the name, too long */
	uint64_t bad_files;   /* not a jitdump (magic, header), or framing lost */
	uint64_t gap_bytes;   /* bytes missing between chunks (lost records) */
	uint64_t dup_bytes;   /* bytes received twice (skipped) */
	uint64_t restarts;    /* chunks at offset 0 after others: the file again */
};

struct symb_jitdump;

/* A parser at the file's start; NULL with errno set. Destructor: symb_jitdump__free. */
struct symb_jitdump *symb_jitdump__new(void);
void symb_jitdump__free(struct symb_jitdump *d);

/*
 * Feeds bytes [offset, offset + len) of the file, adding its symbols to j.
 * Chunks come in offset order: offset 0 after others starts the file over
 * (j keeps what it has: newer entries win); a repeated part is skipped.
 * Returns 0 or -ENOMEM (what could not be kept is counted).
 */
int symb_jitdump__feed(struct symb_jitdump *d, struct symb_jit *j, uint64_t offset,
		       const char *data, size_t len);

const struct symb_jitdump_stats *symb_jitdump__stats(const struct symb_jitdump *d);

#endif /* LOWPROF_SYMB_JIT_JITDUMP_H */
