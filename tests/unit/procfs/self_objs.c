// SPDX-License-Identifier: MIT
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dl_iterate_phdr (the build defines it too) */
#endif
#include <elf.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "self_objs.h"

struct walk {
	struct self_obj *objs;
	int max, n;
};

/* The NT_GNU_BUILD_ID note of a PT_NOTE segment (entries padded to align). */
static void find_build_id(const uint8_t *p, size_t size, size_t align, struct self_obj *o)
{
	const uint8_t *end = p + size;

	while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
		ElfW(Nhdr) nh;
		size_t name, desc;

		memcpy(&nh, p, sizeof(nh));
		name = (nh.n_namesz + align - 1) & ~(align - 1);
		desc = (nh.n_descsz + align - 1) & ~(align - 1);
		if (name + desc > (size_t)(end - p) - sizeof(nh))
			return;
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp(p + sizeof(nh), "GNU", 4) && nh.n_descsz &&
		    nh.n_descsz <= LPS_MAX_BUILD_ID) {
			memcpy(o->id, p + sizeof(nh) + name, nh.n_descsz);
			o->idlen = nh.n_descsz;
			return;
		}
		p += sizeof(nh) + name + desc;
	}
}

static int one_obj(struct dl_phdr_info *info, size_t size, void *data)
{
	struct walk *w = data;
	struct self_obj *o;

	if (w->n++ >= w->max)
		return 0;
	o = &w->objs[w->n - 1];
	memset(o, 0, sizeof(*o));
	o->main = w->n == 1;
	snprintf(o->name, sizeof(o->name), "%s", info->dlpi_name ? info->dlpi_name : "");
	o->lo = UINT64_MAX;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			if (start < o->lo)
				o->lo = start;
			if (start + ph->p_memsz > o->hi)
				o->hi = start + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !o->idlen) {
			find_build_id((const uint8_t *)(uintptr_t)start, ph->p_memsz,
				      ph->p_align == 8 ? 8 : 4, o);
		}
	}
	if (o->lo == UINT64_MAX)
		o->lo = o->hi = 0;
	return 0;
}

int self_objs(struct self_obj *objs, int max)
{
	struct walk w = {objs, max, 0};

	dl_iterate_phdr(one_obj, &w);
	return w.n < max ? w.n : max;
}

const struct self_obj *self_obj_in(const struct self_obj *objs, int n, uint64_t start, uint64_t end)
{
	for (int i = 0; i < n; i++)
		if (start < objs[i].hi && objs[i].lo < end)
			return &objs[i];
	return NULL;
}
