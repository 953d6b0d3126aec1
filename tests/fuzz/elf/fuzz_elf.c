// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symbolizer/elf/elfsym.c: any byte string goes to
 * symb_elf__open_mem, and every accessor is then called with addresses and
 * offsets taken from the input, so symbol values and segment offsets the
 * mutator keeps get looked up. Besides memory errors (ASan/UBSan) it traps on
 * broken contracts: an errno other than ENOEXEC/ENOMEM, an empty name, a
 * sym_off that puts the symbol's start above the address, or a symbol that
 * does not resolve to itself at its own start.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "elfsym.h"

static void probe(const struct symb_elf *e, uint64_t vaddr)
{
	const char *name, *again;
	uint64_t off, off2;

	name = symb_elf__symbolize(e, vaddr, &off);
	if (!name)
		return;
	if (name[0] == '\0' || off > vaddr)
		__builtin_trap();
	/* Starts are distinct, so no other symbol can own a symbol's first byte. */
	again = symb_elf__symbolize(e, vaddr - off, &off2);
	if (again != name || off2 != 0)
		__builtin_trap();
	(void)strlen(name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_elf *e;
	uint8_t id[128];
	uint64_t v, vaddr;
	uint32_t v32;
	size_t i, n;

	e = symb_elf__open_mem(data, size);
	if (!e) {
		if (errno != ENOEXEC && errno != ENOMEM)
			__builtin_trap();
		return 0;
	}
	n = symb_elf__build_id(e, id, sizeof(id));
	if (n > sizeof(id))
		__builtin_trap();
	symb_elf__build_id(e, id, 1);
	(void)symb_elf__nsyms(e);

	/* Every aligned 64- and 32-bit value of the input, and the byte before it. */
	for (i = 0; i + sizeof(v) <= size; i += sizeof(v)) {
		memcpy(&v, data + i, sizeof(v));
		probe(e, v);
		probe(e, v - 1);
	}
	for (i = 0; i + sizeof(v32) <= size; i += sizeof(v32)) {
		memcpy(&v32, data + i, sizeof(v32));
		probe(e, v32);
		probe(e, __builtin_bswap32(v32));
	}
	/* File offsets through the segments, and just past the input. */
	for (i = 0; i <= size; i += 7) {
		if (symb_elf__offset_to_vaddr(e, i, &vaddr) == 0)
			probe(e, vaddr);
	}
	probe(e, 0);
	probe(e, UINT64_MAX);
	symb_elf__offset_to_vaddr(e, UINT64_MAX, &vaddr);
	symb_elf__free(e);
	return 0;
}
