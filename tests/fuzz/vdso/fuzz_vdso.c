// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for the vDSO object (symbolizer/objects/vdso.c, load.c): the
 * input is the image a stream's vdso record carries (schema record 13),
 * given to an offline object table as the symbolizer's ingest gives it; the
 * object is loaded (libelf from memory, ELF symbols, the CFI of the
 * sections found in it), and its symbols and stack deltas are looked up at
 * offsets taken from the input. Besides memory errors (ASan/UBSan) it traps
 * on broken contracts: the same image twice is not "unchanged", a mapping
 * of another length gets the object, an empty symbol name, or a delta row
 * of an unknown kind or above the address looked up.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lowprof/log.h"
#include "objects.h"

static uint64_t get_le(const uint8_t *p, size_t left)
{
	uint64_t v = 0;

	for (size_t i = 0; i < 8 && i < left; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static void probe(struct symb_objects *t, uint32_t idx, const struct symb_obj *o, uint64_t off)
{
	const char *name = symb_objects__symbol(t, idx, off);
	const struct symb_delta *d;
	uint64_t vaddr;

	if (name && !name[0])
		__builtin_trap();
	if (!o->elf || !o->have_deltas || symb_elf__offset_to_vaddr(o->elf, off, &vaddr))
		return;
	d = symb_deltas__find(&o->deltas, vaddr);
	if (d && (d->kind > SYMB_CFA_INVALID || d->pc > vaddr))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_objects_opts oo = {.sz = sizeof(oo), .offline = true, .files_fd = -1};
	static bool once;
	struct symb_objects *t;
	const struct symb_obj *o;
	uint32_t idx, other;

	if (!once) {
		lp_log_init("fuzz", LP_LOG_ERROR);
		once = true;
	}
	t = symb_objects__new(&oo);
	if (!t)
		return 0;
	if (symb_objects__set_vdso(t, data, size) != 1) {
		if (size && size <= LPS_MAX_VDSO)
			__builtin_trap();
		goto out;
	}
	if (symb_objects__set_vdso(t, data, size) != 0 ||
	    symb_objects__vdso(t, (uint64_t)size + 4096, &other) != -ENOENT ||
	    symb_objects__vdso(t, size, &idx) != 0)
		__builtin_trap();
	o = symb_objects__load(t, idx);
	/* offsets from the input (symbol values, section addresses the mutator kept) */
	for (size_t i = 0; i + 8 <= size && i < 4096; i += 8)
		probe(t, idx, o, get_le(data + i, size - i) & 0xffff);
	for (uint64_t off = 0; off < size; off += 61)
		probe(t, idx, o, off);
	symb_objects__unref(t, idx);
out:
	symb_objects__free(t);
	return 0;
}
