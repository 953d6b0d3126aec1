/* SPDX-License-Identifier: MIT */
/*
 * Stack deltas: a compact table, per binary, of how to unwind one frame at
 * any address, built from the compiler's call-frame information (.eh_frame,
 * located through .eh_frame_hdr when present, and .debug_frame, also from a
 * separate debug file). x86-64 only.
 *
 * What it is: a parser of CIE/FDE records and their CFA programs, reduced to
 * rows of "CFA = rsp|rbp + offset, return address at CFA - 8, saved rbp at
 * CFA + offset", plus the few shapes that cannot be written that way (PLT
 * stubs, signal trampolines, the outermost frame); and the table's compact
 * blob form for the cache. What it is not: the unwinder (unwind.h), ELF
 * symbols, or anything that opens files.
 *
 * Section contents are untrusted: every length, offset, pointer encoding and
 * instruction operand is checked; a malformed CIE or FDE costs that entry
 * (counted), never a crash or a read outside the given bytes.
 */
#ifndef LOWPROF_SYMB_CFI_H
#define LOWPROF_SYMB_CFI_H

#include <gelf.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum symb_cfa_kind {
	SYMB_CFA_NONE = 0,    /* no CFI covers this address (gap between FDEs) */
	SYMB_CFA_SP = 1,      /* CFA = rsp + cfa_off */
	SYMB_CFA_BP = 2,      /* CFA = rbp + cfa_off */
	SYMB_CFA_PLT = 3,     /* PLT stub: CFA = rsp + 8, + 8 more when (rip & 15) >= 11 */
	SYMB_CFA_SIGNAL = 4,  /* signal trampoline (FDE of an 'S' CIE): the caller's
			       * registers are in the rt_sigframe's ucontext at rsp */
	SYMB_CFA_END = 5,     /* outermost frame: return address undefined (_start, clone) */
	SYMB_CFA_INVALID = 6, /* CFI exists but is not expressible here (other CFA
			       * register or expression, return address not at CFA - 8) */
};

/*
 * One row: from pc up to the next row's pc. Rows are sorted by pc, and
 * consecutive rows differ (equal neighbours are merged). A gap between two
 * FDEs is a SYMB_CFA_NONE row; the last row is always SYMB_CFA_NONE (the end
 * of the last FDE).
 */
struct symb_delta {
	uint64_t pc;	 /* ELF virtual address where the row starts */
	int32_t cfa_off; /* SP/BP kinds */
	int16_t bp_off;	 /* saved rbp at CFA + bp_off; 0: rbp unchanged by this frame */
	uint8_t kind;	 /* enum symb_cfa_kind */
	uint8_t pad;	 /* 0 */
};

struct symb_deltas_lazy;

/*
 * A table, in one of two forms. Destructor: symb_deltas__free.
 *
 * Fully decoded (symb_cfi__build*, symb_deltas__decode): rows holds all n
 * rows; lazy is NULL.
 *
 * Lazy (symb_deltas__open_blob): rows is NULL and lazy holds the blob; its
 * rows are decoded a block at a time by symb_deltas__find. n is then the
 * row count the blob declares (checked against its block index at open,
 * but the blocks' rows are checked only when first decoded, so a block
 * found bad later still counts in n); it is for reporting only. Only
 * symb_deltas__find, symb_deltas__bad_blocks and symb_deltas__free may be
 * used on a lazy table, and since find decodes into it, a lazy table must
 * not be used by two threads at once (not even two finds).
 *
 * rows and n are meaningful as rows only for a fully decoded table.
 */
struct symb_deltas {
	struct symb_delta *rows;
	uint32_t n;
	struct symb_deltas_lazy *lazy;
};

struct symb_cfi_stats {
	uint32_t cies, fdes;	   /* parsed */
	uint32_t bad_entries;	   /* malformed CIEs/FDEs skipped */
	uint32_t invalid_rows;	   /* rows turned into SYMB_CFA_INVALID */
	uint32_t from_eh_frame;	   /* FDEs from .eh_frame */
	uint32_t from_debug_frame; /* FDEs from .debug_frame not covered by .eh_frame */
};

/*
 * Raw sections for symb_cfi__build_sections (fuzzing, tests). Each is
 * optional (data NULL / size 0); vaddr is the section's sh_addr (pc-relative
 * and data-relative pointer encodings need it). .debug_frame uses absolute
 * addresses.
 */
struct symb_cfi_sections {
	const uint8_t *eh_frame;
	size_t eh_frame_size;
	uint64_t eh_frame_vaddr;
	const uint8_t *eh_frame_hdr;
	size_t eh_frame_hdr_size;
	uint64_t eh_frame_hdr_vaddr;
	const uint8_t *debug_frame;
	size_t debug_frame_size;
};

/*
 * Builds the table of a binary from its libelf handle and, optionally, the
 * handle of its separate debug file (whose .debug_frame is used where the
 * binary's own .eh_frame has no FDE). Returns 0 (a binary with no CFI at all
 * gives an empty table), -ENOMEM, or -ENOEXEC if elf is not x86-64 ELF.
 * stats may be NULL.
 */
int symb_cfi__build(Elf *elf, Elf *debug_elf, struct symb_deltas *out,
		    struct symb_cfi_stats *stats);
int symb_cfi__build_sections(const struct symb_cfi_sections *sec, struct symb_deltas *out,
			     struct symb_cfi_stats *stats);

/*
 * The row that holds at vaddr, or NULL if vaddr is below the first row. On
 * a lazy table also NULL where the block that holds vaddr fails validation
 * when first decoded (counted, see symb_deltas__bad_blocks; it is "no CFI"
 * from then on) or cannot be allocated (tried again on the next call). The
 * row stays valid until symb_deltas__free.
 */
const struct symb_delta *symb_deltas__find(const struct symb_deltas *d, uint64_t vaddr);

/*
 * Compact blob form for the cache (versioned, delta-encoded, in blocks of
 * rows that decode on their own, behind an index of their first pcs).
 *
 * encode returns 0 and a malloc'd blob, -EINVAL if d is lazy or breaks the
 * table's rules above, or -ENOMEM.
 *
 * decode validates everything (format version, checksum, index, lengths,
 * sorted pcs, known kinds) and decodes every row; it returns 0, -EBADMSG or
 * -ENOMEM.
 *
 * open_blob takes ownership of blob (malloc'd; freed by symb_deltas__free,
 * or before it returns on error) and gives a lazy table: it checks the
 * header, checksum and the whole block index, and leaves each block's rows
 * to be decoded and validated by the first symb_deltas__find that needs
 * them. It returns 0, -EBADMSG or -ENOMEM. A blob that decode accepts is
 * accepted here and answers every find the same way; the converse does not
 * hold (two neighbour rows in different blocks that are equal are not
 * checked, and a bad block only costs lookups in it).
 */
#define SYMB_DELTAS_BLOB_VERSION 2
int symb_deltas__encode(const struct symb_deltas *d, uint8_t **blob, size_t *len);
int symb_deltas__decode(const uint8_t *blob, size_t len, struct symb_deltas *out);
int symb_deltas__open_blob(uint8_t *blob, size_t len, struct symb_deltas *out);

/* Blocks of a lazy table found bad so far (0 for a fully decoded table). */
uint32_t symb_deltas__bad_blocks(const struct symb_deltas *d);

void symb_deltas__free(struct symb_deltas *d); /* NULL-safe; leaves it empty */

#endif /* LOWPROF_SYMB_CFI_H */
