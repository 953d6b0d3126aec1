// SPDX-License-Identifier: MIT
/*
 * The vDSO object (objects.h): the kernel's vDSO image from the stream
 * (schema record 13), kept by one object of the table, which load.c loads
 * from it like a mapped file (symb_obj_load).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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
