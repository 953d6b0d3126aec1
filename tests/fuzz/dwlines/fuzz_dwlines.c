// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symb_dwarf__load_lines: any byte string is a
 * candidate cache row of DWARF results. A refused blob must give EBADMSG or
 * ENOMEM and add nothing. An accepted one must keep the lookup contract (a
 * count in [0, max], a function never NULL, names and files no longer than
 * SYMB_DWARF_NAME_MAX), and survive encode -> load into another object with
 * the same answers, the second encoding equal to the first (the encoding is
 * canonical).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo.h"

static void same(struct symb_dwarf *a, struct symb_dwarf *b, uint64_t vaddr)
{
	struct symb_srcline x[70], y[70];
	int max = 1 + (int)(vaddr % 70), n = symb_dwarf__lookup(a, vaddr, x, max);

	if (n < 0 || n > max || symb_dwarf__lookup(b, vaddr, y, max) != n)
		__builtin_trap();
	for (int i = 0; i < n; i++) {
		if (!x[i].function || !y[i].function || strcmp(x[i].function, y[i].function) ||
		    strlen(x[i].function) > SYMB_DWARF_NAME_MAX)
			__builtin_trap();
		if (!x[i].file != !y[i].file || x[i].line != y[i].line)
			__builtin_trap();
		if (x[i].file &&
		    (strcmp(x[i].file, y[i].file) || strlen(x[i].file) > SYMB_DWARF_NAME_MAX))
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_dwarf *a = symb_dwarf__new_empty(), *b = symb_dwarf__new_empty();
	uint8_t *blob = NULL, *blob2 = NULL;
	size_t len, len2, i;
	uint64_t v;
	int err;

	if (!a || !b)
		goto out;
	err = symb_dwarf__load_lines(a, data, size);
	if (err == -EBADMSG) {
		/* nothing was added: the encoding is the empty table's */
		if (symb_dwarf__encode_lines(a, &blob, &len) == 0 && len != 12)
			__builtin_trap();
		goto out;
	}
	if (err == -ENOMEM)
		goto out;
	if (err || symb_dwarf__lines_changed(a))
		__builtin_trap();
	if (symb_dwarf__encode_lines(a, &blob, &len))
		goto out; /* ENOMEM */
	if (symb_dwarf__load_lines(b, blob, len))
		__builtin_trap(); /* what encode writes, load accepts */
	if (symb_dwarf__encode_lines(b, &blob2, &len2) == 0 &&
	    (len2 != len || memcmp(blob, blob2, len)))
		__builtin_trap();
	/* every aligned 64-bit value of the input as an address (results' vaddrs among them) */
	for (i = 0; i + sizeof(v) <= size; i += 4) {
		memcpy(&v, data + i, sizeof(v));
		same(a, b, v);
	}
	same(a, b, 0);
	same(a, b, UINT64_MAX);
out:
	free(blob);
	free(blob2);
	symb_dwarf__free(a);
	symb_dwarf__free(b);
	return 0;
}
