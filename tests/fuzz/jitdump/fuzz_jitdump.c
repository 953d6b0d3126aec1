// SPDX-License-Identifier: MIT
/*
 * The jitdump parser (symbolizer/jit/jitdump.c) on arbitrary bytes, cut
 * into chunks the way a stream may bring them: the first byte of the input
 * steers the chunk sizes and whether a chunk repeats, skips or restarts,
 * the rest is the file. After each chunk, lookups at the addresses the
 * input names check the table's contract: a symbol found holds the
 * address, its name has no NUL and no newline.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jitdump.h"

static volatile uint64_t sink;

static void check(struct symb_jit *j, uint64_t addr)
{
	const char *name;
	uint32_t len;
	uint64_t start;

	if (symb_jit__lookup(j, addr, &name, &len, &start) != 1)
		return;
	if (start > addr || !len || memchr(name, '\n', len) || memchr(name, '\0', len))
		abort();
	for (uint32_t i = 0; i < len; i++)
		sink += (uint8_t)name[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_jitdump *d;
	struct symb_jit *j;
	uint64_t off = 0;
	uint8_t ctl;
	size_t pos = 1;

	if (size < 1)
		return 0;
	ctl = data[0];
	j = symb_jit__new();
	d = symb_jitdump__new();
	if (!j || !d)
		goto out;
	while (pos < size) {
		size_t n = 1 + (size_t)((ctl * 7 + pos) % 131);
		uint64_t at = off;
		char *chunk;

		if (n > size - pos)
			n = size - pos;
		/* some chunks come twice, some after a gap, some from offset 0 */
		if ((ctl & 3) == 1 && pos % 5 == 0 && off >= 3)
			at = off - 3;
		else if ((ctl & 3) == 2 && pos % 7 == 0)
			at = off + 11;
		else if ((ctl & 3) == 3 && pos % 13 == 0)
			at = 0;
		/* a private copy so ASan catches any read past the chunk */
		chunk = malloc(n);
		if (!chunk)
			break;
		memcpy(chunk, data + pos, n);
		symb_jitdump__feed(d, j, at, chunk, n);
		free(chunk);
		off = at + n;
		for (size_t k = pos; k + 8 <= pos + n; k += 8) {
			uint64_t a;

			memcpy(&a, data + k, 8);
			check(j, a);
		}
		pos += n;
	}
	sink += symb_jit__count(j) + symb_jitdump__stats(d)->bad_records;
out:
	symb_jitdump__free(d);
	symb_jit__free(j);
	return 0;
}
