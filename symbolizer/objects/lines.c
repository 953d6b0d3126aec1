// SPDX-License-Identifier: MIT
/*
 * Source lines of objects (objects.h): DWARF lookups, and the cache traffic
 * of their results.
 *
 * The cache key of an object's DWARF results is the one load.c gave its
 * tables: the content identity of the binary, and of the debug file whose
 * DWARF it is ("c:<B>" or "c:<B>+<D>", cache.h). libdw reads only a file
 * of that identity (load.c's dwarf_start), else nothing learnt is stored.
 * Objects with no key keep their results for this run only.
 */
#include <errno.h>
#include <stdlib.h>

#include "cache.h"
#include "objects_int.h"

/*
 * Before an object's first DWARF lookup: the results earlier runs stored,
 * so that the addresses they cover need no libdw (which inflates and
 * indexes the whole debug file when it starts).
 */
static void lines_load(struct symb_objects *s, struct symb_obj *o)
{
	uint8_t *blob = NULL;
	size_t len = 0;
	int err;

	o->lines_loaded = true;
	if (!s->cache || !o->key ||
	    symb_cache__get(s->cache, o->key, SYMB_CACHE_LINES, SYMB_DWARF_LINES_BLOB_VERSION,
			    &blob, &len))
		return;
	err = symb_dwarf__load_lines(o->dwarf, blob, len);
	free(blob);
	if (err == -EBADMSG)
		s->n.cache_bad++; /* replaced by this run's results */
	else if (!err)
		s->n.lines_cache_hits++;
}

int symb_objects__lines(struct symb_objects *s, uint32_t idx, uint64_t off,
			struct symb_srcline *out, int max)
{
	struct symb_obj *o = &s->objs[idx];
	uint64_t vaddr;
	int n;

	symb_obj_load(s, o);
	if (!o->dwarf || !o->elf || symb_elf__offset_to_vaddr(o->elf, off, &vaddr))
		return 0;
	if (!o->lines_loaded)
		lines_load(s, o);
	n = symb_dwarf__lookup(o->dwarf, vaddr, out, max);
	return n > 0 ? n : 0;
}

void symb_objects__store_lines(struct symb_objects *s)
{
	uint8_t *blob;
	size_t len;

	s->n.dwarf_started = 0;
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct symb_obj *o = &s->objs[i];

		if (!o->dwarf)
			continue;
		s->n.dwarf_started += symb_dwarf__opened(o->dwarf);
		if (!s->cache || !o->key || !symb_dwarf__lines_changed(o->dwarf))
			continue;
		/*
		 * what another symbolizer stored meanwhile (the shards of one
		 * run look up other addresses of the same binaries) joins ours,
		 * so that neither run's results replace the other's
		 */
		if (!symb_cache__get(s->cache, o->key, SYMB_CACHE_LINES,
				     SYMB_DWARF_LINES_BLOB_VERSION, &blob, &len)) {
			symb_dwarf__load_lines(o->dwarf, blob, len);
			free(blob);
		}
		if (symb_dwarf__encode_lines(o->dwarf, &blob, &len))
			continue;
		if (symb_cache__put(s->cache, o->key, SYMB_CACHE_LINES,
				    SYMB_DWARF_LINES_BLOB_VERSION, blob, len) == 0)
			s->n.lines_stored++;
		free(blob);
	}
}
