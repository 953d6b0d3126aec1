// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symbolizer/dwarf/dwarf.c and demangle.c: the input is an
 * ELF image (elf_memory) whose DWARF is opened and looked up at the values
 * of its symbols and at 64-bit values taken from the input, so addresses
 * the mutator keeps inside the units' ranges get walked; then the input,
 * as a string, is demangled. Besides memory errors (ASan/UBSan) it traps on
 * broken contracts: an errno other than ENOENT/ENOMEM, a count out of
 * [0, max], a NULL function, or a name or file longer than
 * SYMB_DWARF_NAME_MAX.
 */
#include <errno.h>
#include <gelf.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "debuginfo.h"

/* Lookups per input: enough to reach every seed function, few enough to stay fast. */
#define FUZZ_MAX_LOOKUPS 96

static void probe(struct symb_dwarf *d, uint64_t vaddr)
{
	struct symb_srcline out[16];
	int n, i, max = 1 + (int)(vaddr % 16);

	n = symb_dwarf__lookup(d, vaddr, out, max);
	if (n < 0 || n > max)
		__builtin_trap();
	for (i = 0; i < n; i++) {
		if (!out[i].function || strlen(out[i].function) > SYMB_DWARF_NAME_MAX)
			__builtin_trap();
		if (out[i].file && strlen(out[i].file) > SYMB_DWARF_NAME_MAX)
			__builtin_trap();
	}
}

/* Up to *budget lookups at the values of the symbols in .symtab/.dynsym. */
static void probe_symbols(struct symb_dwarf *d, Elf *elf, int *budget)
{
	Elf_Scn *scn = NULL;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Sym sym;
	size_t i;

	while ((scn = elf_nextscn(elf, scn)) && *budget > 0) {
		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && *budget > 0 && gelf_getsym(data, i, &sym); i++) {
			if (GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_value)
				continue;
			probe(d, sym.st_value);
			probe(d, sym.st_value + 1);
			*budget -= 2;
		}
	}
}

static void fuzz_demangle(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1), *dem;

	if (!s)
		return;
	memcpy(s, data, size);
	s[size] = '\0';
	dem = symb_demangle(s);
	if (dem && dem[0] == '\0' && s[0] == '\0')
		__builtin_trap();
	free(dem);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_dwarf *d;
	int budget = FUZZ_MAX_LOOKUPS;
	uint64_t v;
	char *image;
	size_t i, step;
	Elf *elf;

	fuzz_demangle(data, size);
	if (size < 64)
		return 0;
	elf_version(EV_CURRENT);
	/* libelf may write to the image (e.g. decompressing sections): copy it. */
	image = malloc(size);
	if (!image)
		return 0;
	memcpy(image, data, size);
	elf = elf_memory(image, size);
	if (!elf)
		goto out;
	d = symb_dwarf__open(elf, NULL);
	if (!d) {
		if (errno != ENOENT && errno != ENOMEM)
			__builtin_trap();
		goto out_elf;
	}
	probe_symbols(d, elf, &budget);
	/* 64-bit values spread over the input, and the byte before each. */
	step = (size / 8 / 32 + 1) * 8;
	for (i = 0; i + sizeof(v) <= size && budget > 0; i += step, budget -= 2) {
		memcpy(&v, data + i, sizeof(v));
		probe(d, v);
		probe(d, v - 1);
	}
	probe(d, 0);
	probe(d, UINT64_MAX);
	symb_dwarf__free(d);
out_elf:
	elf_end(elf);
out:
	free(image);
	return 0;
}
