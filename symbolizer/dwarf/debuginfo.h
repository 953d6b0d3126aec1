/* SPDX-License-Identifier: MIT */
/*
 * Source-level frames from DWARF (elfutils' libdw): for an address, the
 * chain of inlined functions with their file:line, innermost first, ending
 * with the function that contains the address; C++ and Rust names
 * demangled. Also finds a binary's separate debug file by build-id, and
 * tells whether a debug file found that way belongs to the binary.
 *
 * What it is: lookups on debug information the caller opened. What it is
 * not: ELF symbol tables (elfsym.h) or CFI (cfi.h). The debug information is
 * untrusted: libdw checks its own reads; names and files handed back are
 * bounded in length.
 */
#ifndef LOWPROF_SYMB_DEBUGINFO_H
#define LOWPROF_SYMB_DEBUGINFO_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Longest name or file returned; longer ones are cut (and end in "..."). */
#define SYMB_DWARF_NAME_MAX 1024

struct symb_srcline {
	const char *function; /* demangled; never NULL ("[unknown]" if DWARF has none) */
	const char *file;     /* NULL when unknown */
	uint32_t line;	      /* 0 when unknown */
};

struct symb_dwarf;

/*
 * Opens the DWARF of a binary: from debug_elf (its separate debug file) if
 * given, else from elf itself. Only the section headers are read here:
 * libdw is started by the first lookup that no remembered result answers.
 * Neither handle is kept by libdw beyond symb_dwarf__free, and the caller
 * must keep both alive until then. Returns NULL with errno ENOENT when the
 * file has no .debug_info (the caller then uses ELF symbols only), ENOMEM.
 * A file whose .debug_info turns out unusable when libdw starts gives an
 * object whose lookups find nothing. Destructor: symb_dwarf__free.
 */
struct symb_dwarf *symb_dwarf__open(Elf *elf, Elf *debug_elf);
/*
 * The same, for a caller that hands libdw its file only when libdw starts:
 * probe (a handle of that same file, used during this call only) decides
 * whether there is DWARF; start(ctx) is called at most once, by the first
 * lookup no remembered result answers, and returns the handle libdw reads
 * (the caller keeps it until symb_dwarf__free), or NULL: then lookups find
 * nothing, and the object's results are never offered for persisting (the
 * file is not the content its cache key names).
 */
typedef Elf *symb_dwarf_start_fn(void *ctx);
struct symb_dwarf *symb_dwarf__open_deferred(Elf *probe, symb_dwarf_start_fn *start, void *ctx);
/*
 * An object without debug information: its lookups find only what
 * symb_dwarf__load_lines gave it (tests, fuzzing). NULL with errno ENOMEM.
 * Destructor: symb_dwarf__free.
 */
struct symb_dwarf *symb_dwarf__new_empty(void);
void symb_dwarf__free(struct symb_dwarf *d);

/*
 * The source frames at ELF virtual address vaddr: out[0] is the innermost
 * inlined function (with the file:line of vaddr), out[n-1] the function
 * that contains vaddr (with the file:line of the call into out[n-2]).
 * Returns n (0 if no debug information covers vaddr; at most max). Strings
 * stay valid until symb_dwarf__free. Every result is remembered (up to a
 * limit far above real profiles), so asking again costs a hash lookup.
 */
int symb_dwarf__lookup(struct symb_dwarf *d, uint64_t vaddr, struct symb_srcline *out, int max);

/* Whether libdw was started (a lookup was not answered by a remembered result). */
bool symb_dwarf__opened(const struct symb_dwarf *d);

/*
 * Remembered results, to keep in the symbol cache under the binary's
 * build-id (and the debug file used): a later symbolizer that loads them
 * answers those addresses without starting libdw. The blob holds every
 * remembered address with its frames; functions named from linkage names
 * are stored mangled and demangled again on load. Bump the version when a
 * lookup's result for the same DWARF would change.
 */
#define SYMB_DWARF_LINES_BLOB_VERSION 1

/*
 * Adds the results of a blob (untrusted: every count, index and length is
 * checked; a bad blob adds nothing) to those remembered; an address already
 * remembered keeps its result. Returns 0, -EBADMSG, or -ENOMEM (out of
 * memory, or the object's limits reached: some results were added).
 */
int symb_dwarf__load_lines(struct symb_dwarf *d, const uint8_t *blob, size_t len);
/*
 * True when lookups remembered results since the object was opened or last
 * encoded, and every result is what a fresh lookup gives (it is not after
 * the string arena filled up, or after libdw failed for want of memory).
 */
bool symb_dwarf__lines_changed(const struct symb_dwarf *d);
/*
 * Every remembered result as a blob (malloc'd, in *blob and *len; canonical:
 * results by address, strings in first use). Clears the changed state.
 * Returns 0, -ENODATA when the results may not be what fresh lookups give,
 * or -ENOMEM.
 */
int symb_dwarf__encode_lines(struct symb_dwarf *d, uint8_t **blob, size_t *len);

/*
 * Demangles a C++ (Itanium) or Rust (legacy and v0) symbol name, without
 * parameter lists: "_ZN2ns4TypeIlE6methodEv" -> "ns::Type<long>::method".
 * Returns a malloc'd string, or NULL if name is not mangled (or on ENOMEM).
 */
char *symb_demangle(const char *name);

/*
 * Opens the separate debug file of a build-id under dir (a /usr/lib/debug-
 * like tree: dir/.build-id/xx/rest.debug), read-only, regular files only.
 * Returns an fd or -errno (-ENOENT when there is none).
 */
int symb_debug_file_open(const char *dir, const uint8_t *build_id, size_t len);
/* The same for dir/.build-id/xx/rest<suffix> ("" for the binary itself). */
int symb_build_id_file_open(const char *dir, const uint8_t *build_id, size_t len,
			    const char *suffix);

/*
 * Whether dbg, found by the build-id bin claims, is bin's debug file: when
 * bin has a .gnu_debuglink section, its CRC-32 must be that of the debug
 * file's bytes (dbg_file, dbg_len: all of them, the bytes dbg was opened
 * on); otherwise the allocated sections of both (name, address and size,
 * in order) must be the same, and there must be some. Returns 1 or 0.
 *
 * Both files come from whoever made them: a binary can copy another's
 * build-id and .gnu_debuglink, and then gets that binary's debug symbols
 * for its own frames. That misnames only its own frames: the cache keys
 * every table by the content identity of both files (cache.h).
 */
int symb_debug_file_match(Elf *bin, Elf *dbg, const void *dbg_file, size_t dbg_len);

#endif /* LOWPROF_SYMB_DEBUGINFO_H */
