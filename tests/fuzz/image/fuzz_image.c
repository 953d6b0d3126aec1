// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for what decides whose tables a file gets: ident.c's
 * selection of the ranges the tables read (symb_image__select, which parses
 * ELF headers), the identity over them, and dwarf.c's check that a debug
 * file belongs to a binary (symb_debug_file_match: .gnu_debuglink, section
 * headers). The input is the file; the image is built from the ranges as
 * symb_image__read builds it (zero elsewhere) and matched, as a binary,
 * against the input as a debug file, and against itself.
 *
 * Besides memory errors (ASan/UBSan) it traps on broken contracts: an
 * error other than -ENOMEM/-EFBIG, ranges that are empty, unsorted,
 * touching or outside the input, a non-empty input whose first bytes are
 * not selected, a match result other than 0/1, or two hashes of one image
 * that differ.
 */
#include <errno.h>
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo.h"
#include "ident.h"

static void check_ranges(const struct symb_image_range *r, int n, size_t size)
{
	if (size && n < 1)
		__builtin_trap();
	for (int i = 0; i < n; i++) {
		if (!r[i].len || r[i].off >= size || r[i].len > size - r[i].off)
			__builtin_trap();
		if (i && r[i].off <= r[i - 1].off + r[i - 1].len)
			__builtin_trap();
	}
	/* the start of the file (an ELF header, or the whole file) is always read */
	if (size && r[0].off != 0)
		__builtin_trap();
}

static void match(const uint8_t *bin, size_t bin_len, uint8_t *dbg, size_t dbg_len)
{
	Elf *b = elf_memory((char *)bin, bin_len), *d = elf_memory((char *)dbg, dbg_len);
	int v = symb_debug_file_match(b, d, dbg, dbg_len);

	if (v != 0 && v != 1)
		__builtin_trap();
	elf_end(b);
	elf_end(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_image_range *r = NULL;
	struct symb_ident a, b;
	uint8_t *image, *copy;
	int n;

	elf_version(EV_CURRENT);
	n = symb_image__select(data, size, &r);
	if (n < 0) {
		if (n != -ENOMEM && n != -EFBIG)
			__builtin_trap();
		return 0;
	}
	check_ranges(r, n, size);
	image = calloc(1, size ? size : 1);
	copy = malloc(size ? size : 1);
	if (!image || !copy)
		goto out;
	for (int i = 0; i < n; i++)
		memcpy(image + r[i].off, data + r[i].off, r[i].len);
	if (symb_image__hash(image, size, r, (size_t)n, &a) == 0 &&
	    symb_image__hash(image, size, r, (size_t)n, &b) == 0 && memcmp(a.b, b.b, sizeof(a.b)))
		__builtin_trap();
	memcpy(copy, data, size);
	match(image, size, copy, size);
	memcpy(copy, data, size);
	match(copy, size, image, size);
out:
	free(copy);
	free(image);
	free(r);
	return 0;
}
