// SPDX-License-Identifier: MIT
/*
 * The vDSO object (objects.h): the kernel's vDSO image from the stream
 * (schema record 13), loaded like a mapped file but from memory. The image
 * is as untrusted as any file: libelf, the symbol loader (elfsym.h) and the
 * CFI parser (cfi.h) check every offset in it, and they read a private copy
 * each time, so that nothing they do to it changes the bytes kept.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/log.h"
#include "objects_int.h"

#define VDSO_PATH "[vdso]"

int symb_objects__set_vdso(struct symb_objects *t, const void *image, size_t len)
{
	static const char path[] = VDSO_PATH;
	const struct lps_mapping m = {.path = {path, sizeof(path) - 1}};
	struct symb_obj *o;
	uint8_t *copy;
	int err;

	if (!len || len > LPS_MAX_VDSO)
		return -EINVAL;
	if (t->have_vdso) {
		o = &t->objs[t->vdso];
		if (o->image_len == len && !memcmp(o->image, image, len))
			return 0;
	}
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, image, len);
	if (!t->have_vdso) {
		/* a special mapping's name, no device or inode: no file matches it */
		err = symb_objects__intern(t, &m, 0, &t->vdso);
		if (err) {
			free(copy);
			return err;
		}
		t->have_vdso = true; /* the reference intern gave is the table's */
	}
	o = &t->objs[t->vdso];
	symb_obj_release(t, o);
	free(o->image);
	o->image = copy;
	o->image_len = (uint32_t)len;
	o->build_id[0] = '\0';
	return 1;
}

int symb_objects__vdso(struct symb_objects *t, uint64_t len, uint32_t *idx)
{
	if (!t->have_vdso || len != t->objs[t->vdso].image_len)
		return -ENOENT;
	t->objs[t->vdso].refs++;
	*idx = t->vdso;
	return 0;
}

void symb_obj_load_image(struct symb_objects *s, struct symb_obj *o)
{
	uint8_t *copy = malloc(o->image_len), id[LPS_MAX_BUILD_ID];
	Elf *elf = NULL;
	size_t n;

	if (copy) {
		memcpy(copy, o->image, o->image_len);
		elf_version(EV_CURRENT);
		elf = elf_memory((char *)copy, o->image_len);
	}
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		lp_debug("symbols: [vdso]: the stream's image is not ELF");
		goto out;
	}
	o->elf = symb_elf__open_elf(elf); /* copies what it keeps */
	if (o->elf) {
		s->n.parsed_symbols++;
		n = symb_elf__build_id(o->elf, id, sizeof(id));
		if (n && n <= 40)
			symb_obj_hex_id(o->build_id, id, n);
	}
	if (symb_cfi__build(elf, NULL, &o->deltas, NULL) == 0) {
		o->have_deltas = true;
		s->n.parsed_deltas++;
	}
out:
	elf_end(elf);
	free(copy);
}
