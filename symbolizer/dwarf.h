/* SPDX-License-Identifier: MIT */
/*
 * Source-level frames from DWARF (elfutils' libdw): for an address, the
 * chain of inlined functions with their file:line, innermost first, ending
 * with the function that contains the address; C++ and Rust names
 * demangled. Also finds a binary's separate debug file by build-id.
 *
 * What it is: lookups on debug information the caller opened. What it is
 * not: ELF symbol tables (elfsym.h) or CFI (cfi.h). The debug information is
 * untrusted: libdw checks its own reads; names and files handed back are
 * bounded in length.
 */
#ifndef LOWPROF_SYMB_DWARF_H
#define LOWPROF_SYMB_DWARF_H

#include <gelf.h>
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
 * given, else from elf itself. Neither handle is kept by libdw beyond
 * symb_dwarf__free, and the caller must keep both alive until then.
 * Returns NULL with errno ENOENT when there is no usable debug information
 * (the caller then uses ELF symbols only), ENOMEM. Destructor:
 * symb_dwarf__free.
 */
struct symb_dwarf *symb_dwarf__open(Elf *elf, Elf *debug_elf);
void symb_dwarf__free(struct symb_dwarf *d);

/*
 * The source frames at ELF virtual address vaddr: out[0] is the innermost
 * inlined function (with the file:line of vaddr), out[n-1] the function
 * that contains vaddr (with the file:line of the call into out[n-2]).
 * Returns n (0 if no debug information covers vaddr; at most max). Strings
 * stay valid until symb_dwarf__free.
 */
int symb_dwarf__lookup(struct symb_dwarf *d, uint64_t vaddr, struct symb_srcline *out, int max);

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

#endif /* LOWPROF_SYMB_DWARF_H */
