// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symb_elf__decode and symb_elf__decode_take (the
 * input, through a copy it takes): any byte string is a candidate
 * cache row. A blob that decodes must keep the lookup contract (non-empty
 * names, sym_off within the address, a range's owner resolving to itself
 * at its own start when that start is inside the range... checked as in
 * fuzz/elf) and survive encode -> decode with the same answers, and the
 * second encoding must equal the first (the encoding is canonical).
 * Rejections must be EBADMSG or ENOMEM.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "elfsym.h"

static void same(const struct symb_elf *a, const struct symb_elf *b, uint64_t vaddr)
{
	uint64_t oa = 0, ob = 0;
	const char *x = symb_elf__symbolize(a, vaddr, &oa);
	const char *y = symb_elf__symbolize(b, vaddr, &ob);

	if (!x != !y)
		__builtin_trap();
	if (!x)
		return;
	if (strcmp(x, y) || oa != ob || x[0] == '\0' || oa > vaddr)
		__builtin_trap();
}

static void probe(const struct symb_elf *a, const struct symb_elf *b, uint64_t vaddr)
{
	same(a, b, vaddr);
	same(a, b, vaddr - 1);
	same(a, b, vaddr + 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_elf *e, *d;
	uint8_t *blob, *blob2, id[128], id2[128];
	size_t len, len2, i, n;
	uint64_t v, va, vb;

	/* the input through decode_take (a copy it owns), its re-encoding through decode */
	blob = malloc(size ? size : 1);
	if (!blob)
		return 0;
	memcpy(blob, data, size);
	e = symb_elf__decode_take(blob, size);
	if (!e) {
		if (errno != EBADMSG && errno != ENOMEM)
			__builtin_trap();
		return 0;
	}
	if (symb_elf__encode(e, &blob, &len))
		goto out;
	d = symb_elf__decode(blob, len);
	if (!d)
		__builtin_trap(); /* what encode writes, decode accepts */
	if (symb_elf__nsyms(d) != symb_elf__nsyms(e))
		__builtin_trap();
	n = symb_elf__build_id(e, id, sizeof(id));
	if (n > 64 || symb_elf__build_id(d, id2, sizeof(id2)) != n || memcmp(id, id2, n))
		__builtin_trap();
	/* Every aligned 64-bit value of the input as an address and a file offset. */
	for (i = 0; i + sizeof(v) <= size; i += 4) {
		memcpy(&v, data + i, sizeof(v));
		probe(e, d, v);
		if (symb_elf__offset_to_vaddr(e, v, &va) != symb_elf__offset_to_vaddr(d, v, &vb))
			__builtin_trap();
		if (symb_elf__offset_to_vaddr(e, v, &va) == 0) {
			symb_elf__offset_to_vaddr(d, v, &vb);
			if (va != vb)
				__builtin_trap();
			probe(e, d, va);
		}
	}
	/* Small addresses, where the varint-coded first ranges of small inputs land. */
	for (v = 0; v < 512; v++)
		same(e, d, v);
	probe(e, d, UINT64_MAX);
	if (symb_elf__encode(d, &blob2, &len2) == 0) {
		if (len2 != len || memcmp(blob, blob2, len))
			__builtin_trap();
		free(blob2);
	}
	symb_elf__free(d);
	free(blob);
out:
	symb_elf__free(e);
	return 0;
}
