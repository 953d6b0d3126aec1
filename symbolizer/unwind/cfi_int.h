/* SPDX-License-Identifier: MIT */
/*
 * What the pieces of cfi.h's implementation share. Not a public header.
 *
 *   cfi_read.c   the bounded byte reader's pointer encodings (the primitives
 *                are inline below), and .eh_frame_hdr's eh_frame_ptr
 *   cfi_build.c  CIE/FDE parsing, the CFA program interpreter, the table
 *                (symb_cfi__build_sections)
 *   cfi_elf.c    finding the sections with libelf (symb_cfi__build)
 *   cfi_blob.c   the blob codec, lazy tables, lookups and freeing
 *
 * Calls go one way only: build and elf use read; elf uses build through
 * cfi.h; blob uses none of them.
 */
#ifndef LOWPROF_SYMB_CFI_INT_H
#define LOWPROF_SYMB_CFI_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"

/* Rows a table may have: the builder stops there, the codec refuses more. */
#define CFI_MAX_ROWS (1u << 26)

/* DW_EH_PE_* */
#define PE_OMIT	    0xff
#define PE_FMT_MASK 0x0f
#define PE_APP_MASK 0x70
#define PE_INDIRECT 0x80
#define PE_PCREL    0x10
#define PE_TEXTREL  0x20
#define PE_DATAREL  0x30
#define PE_FUNCREL  0x40
#define PE_ALIGNED  0x50

/*
 * Byte reader over [pos, end) of p; the caller makes sure end is within p's
 * bytes. Errors are sticky (err stays set), pos never passes end, and a
 * read that fails yields 0. The primitives are inline: the interpreter
 * calls them for every instruction (out of line, a build is ~13% slower).
 */
struct rd {
	const uint8_t *p;
	size_t pos, end;
	bool err;
};

static inline uint8_t rd_u8(struct rd *r)
{
	if (r->pos >= r->end) {
		r->err = true;
		return 0;
	}
	return r->p[r->pos++];
}

/* n (at most 8) bytes, little-endian; when fewer are left, pos goes to end. */
static inline uint64_t rd_le(struct rd *r, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (r->end - r->pos < n) {
		r->err = true;
		r->pos = r->end;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static inline void rd_skip(struct rd *r, uint64_t n)
{
	if (r->end - r->pos < n) {
		r->err = true;
		r->pos = r->end;
		return;
	}
	r->pos += n;
}

/*
 * The bits of a LEB128 (past the 64th dropped: CFI has no such values, and
 * the bytes are consumed); *shift: 7 per byte read, *last: the last byte.
 * On a read past end: 0, and *last is 0.
 */
static inline uint64_t rd_leb(struct rd *r, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	uint8_t b;

	*shift = 0;
	do {
		if (r->pos >= r->end) {
			r->err = true;
			*last = 0;
			return 0;
		}
		b = r->p[r->pos++];
		if (*shift < 64)
			v |= (uint64_t)(b & 0x7f) << *shift;
		*shift += 7;
	} while (b & 0x80);
	*last = b;
	return v;
}

static inline uint64_t rd_uleb(struct rd *r)
{
	unsigned shift;
	uint8_t b;

	return rd_leb(r, &shift, &b);
}

static inline int64_t rd_sleb(struct rd *r)
{
	unsigned shift;
	uint8_t b;
	uint64_t v = rd_leb(r, &shift, &b);

	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* Bases of the relative pointer encodings. */
struct ptr_base {
	uint64_t sec_vaddr; /* address of r->p[0] (pcrel) */
	uint64_t data;	    /* datarel: .eh_frame_hdr, as in the hdr itself */
	uint64_t func;	    /* funcrel: the FDE's start */
	bool has_data, has_func;
};

/*
 * Reads a DW_EH_PE-encoded pointer at r into *out (0 on failure). With
 * skip_only (a personality pointer) the value is not needed: any
 * application and the indirect bit are fine, the bytes are only consumed.
 * Otherwise indirect and unknown bases fail: nothing is ever dereferenced.
 * PE_OMIT reads nothing and is fine only with skip_only. Returns false on
 * malformed input (r->err may then be set, and pos anywhere up to end).
 */
bool cfi_rd_ptr(struct rd *r, uint8_t enc, const struct ptr_base *b, bool skip_only, uint64_t *out);

/* The size-only part of an encoding (an FDE's pc range): no base, no indirection. */
bool cfi_rd_ptr_value(struct rd *r, uint8_t enc, uint64_t *out);

/*
 * eh_frame_ptr of the .eh_frame_hdr (version 1) in p[0..size) that sits at
 * vaddr; false if it is not one or the pointer cannot be read.
 */
bool cfi_hdr_eh_frame_ptr(const uint8_t *p, size_t size, uint64_t vaddr, uint64_t *out);

#endif /* LOWPROF_SYMB_CFI_INT_H */
