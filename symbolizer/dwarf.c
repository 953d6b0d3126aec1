// SPDX-License-Identifier: MIT
/*
 * Source frames from DWARF with libdw (see dwarf.h for the contract).
 *
 * Open builds a sorted table of the address ranges of every compile unit
 * (from the units' own DW_AT_ranges / low_pc+high_pc), because
 * .debug_aranges, which dwarf_addrdie needs, is missing from clang and Rust
 * output and may be incomplete. A lookup then finds the unit by binary
 * search and walks its DIE tree down through the scopes that contain the
 * address (subprograms, inlined subroutines, lexical blocks, and the
 * namespaces and classes that can hold them), with a bounded depth and a
 * bounded number of DIEs visited, so a crafted file cannot recurse or loop
 * without end in our code.
 *
 * Every string handed out is copied into an arena owned by the object and
 * interned (one copy per distinct string); names are also cached per DIE so
 * a function is demangled once, and whole results are cached per address in
 * a small direct-mapped table. The arena is bounded: once full, names become
 * "[unknown]" and files NULL rather than growing without limit.
 *
 * libdw objects are not safe for concurrent use, so neither is a
 * struct symb_dwarf: one thread at a time.
 */
#include <dwarf.h> /* the system's: see dwarf.cmake */
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dwarf.h"

#ifndef _DWARF_H
#error "<dwarf.h> found lowprof's symbolizer/dwarf.h: build without symbolizer/ on the -I path"
#endif

/* Bytes of strings kept per object; real binaries need a few MiB at most. */
#define DW_ARENA_MAX   (64u << 20)
#define DW_ARENA_CHUNK (64u << 10)
/* Compile-unit address ranges indexed; beyond this, addresses go unresolved. */
#define DW_MAX_RANGES (1u << 22)
/*
 * Scopes with an address range followed below a unit, DIE nesting levels
 * searched (namespaces and classes included), and DIEs visited per lookup.
 */
#define DW_MAX_DEPTH  64
#define DW_MAX_LEVELS 256
#define DW_MAX_VISITS (1u << 20)
/* Per-address result cache: entries, and frames a cached result may hold. */
#define DW_CACHE_SLOTS	512
#define DW_CACHE_FRAMES 8
/* Frames of one lookup, innermost first (DW_MAX_DEPTH bounds them anyway). */
#define DW_MAX_FRAMES DW_MAX_DEPTH
#define DW_UNKNOWN    "[unknown]"
#define DW_TRUNC      "..."

struct dw_range {
	uint64_t lo; /* [lo, hi) belongs to units[unit] */
	uint64_t hi;
	uint32_t unit;
};

struct dw_chunk {
	struct dw_chunk *next;
	size_t used;
	size_t size;
	char data[];
};

/* Open-addressing hash tables: interned strings, and names per DIE. */
struct dw_strtab {
	const char **slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
};

struct dw_name {
	const void *die; /* Dwarf_Die.addr: unique per DIE in memory */
	const char *name;
};

struct dw_nametab {
	struct dw_name *slots;
	size_t cap;
	size_t count;
};

struct dw_cache_entry {
	uint64_t vaddr;
	int n; /* -1: empty slot */
	struct symb_srcline frames[DW_CACHE_FRAMES];
};

struct symb_dwarf {
	Dwarf *dw;
	Dwarf_Die *units; /* DIEs whose subtree is walked (split units resolved) */
	size_t nunits;
	struct dw_range *ranges; /* sorted by lo */
	size_t nranges;

	struct dw_chunk *chunks;
	size_t arena_bytes;
	struct dw_strtab strs;
	struct dw_nametab names;
	struct dw_cache_entry *cache;
};

/* ---- strings ---------------------------------------------------------- */

static uint64_t dw_hash_bytes(const char *s, size_t len)
{
	uint64_t h = 0xcbf29ce484222325ull;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
	return h;
}

static uint64_t dw_hash_ptr(const void *p)
{
	return ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 17;
}

static char *dw_arena_alloc(struct symb_dwarf *d, size_t size)
{
	struct dw_chunk *c = d->chunks;
	size_t csize;

	if (d->arena_bytes + size > DW_ARENA_MAX)
		return NULL;
	if (!c || c->size - c->used < size) {
		csize = size > DW_ARENA_CHUNK ? size : DW_ARENA_CHUNK;
		c = malloc(sizeof(*c) + csize);
		if (!c)
			return NULL;
		c->used = 0;
		c->size = csize;
		c->next = d->chunks;
		d->chunks = c;
	}
	d->arena_bytes += size;
	c->used += size;
	return c->data + c->used - size;
}

static int dw_strtab_grow(struct dw_strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024, i, j;
	const char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i])
			continue;
		j = dw_hash_bytes(t->slots[i], strlen(t->slots[i])) & (cap - 1);
		while (slots[j])
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

/*
 * The interned copy of s, cut to SYMB_DWARF_NAME_MAX bytes (ending in
 * "..."), or NULL if the arena is full or memory ran out.
 */
static const char *dw_intern(struct symb_dwarf *d, const char *s)
{
	size_t len = strnlen(s, SYMB_DWARF_NAME_MAX + 1), i;
	bool cut = len > SYMB_DWARF_NAME_MAX;
	char buf[SYMB_DWARF_NAME_MAX + 1];
	char *copy;

	if (cut) {
		len = SYMB_DWARF_NAME_MAX;
		memcpy(buf, s, len - strlen(DW_TRUNC));
		memcpy(buf + len - strlen(DW_TRUNC), DW_TRUNC, strlen(DW_TRUNC));
		buf[len] = '\0';
		s = buf;
	}
	if (d->strs.count * 2 >= d->strs.cap && dw_strtab_grow(&d->strs))
		return NULL;
	i = dw_hash_bytes(s, len) & (d->strs.cap - 1);
	for (; d->strs.slots[i]; i = (i + 1) & (d->strs.cap - 1)) {
		if (strcmp(d->strs.slots[i], s) == 0)
			return d->strs.slots[i];
	}
	copy = dw_arena_alloc(d, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, s, len + 1);
	d->strs.slots[i] = copy;
	d->strs.count++;
	return copy;
}

/* ---- function names --------------------------------------------------- */

static const char *dw_attr_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

/*
 * The name of the function a subprogram or inlined_subroutine DIE is an
 * instance of: its linkage name demangled, else its plain name, both found
 * through DW_AT_abstract_origin and DW_AT_specification.
 */
static const char *dw_die_name_uncached(struct symb_dwarf *d, Dwarf_Die *die)
{
	const char *raw, *name;
	char *dem;

	raw = dw_attr_string(die, DW_AT_linkage_name);
	if (!raw)
		raw = dw_attr_string(die, DW_AT_MIPS_linkage_name);
	if (raw) {
		dem = symb_demangle(raw);
		if (dem) {
			name = dw_intern(d, dem);
			free(dem);
			return name;
		}
		return dw_intern(d, raw);
	}
	raw = dw_attr_string(die, DW_AT_name);
	return raw ? dw_intern(d, raw) : NULL;
}

static int dw_nametab_grow(struct dw_nametab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024, i, j;
	struct dw_name *slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].die)
			continue;
		j = dw_hash_ptr(t->slots[i].die) & (cap - 1);
		while (slots[j].die)
			j = (j + 1) & (cap - 1);
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static const char *dw_die_name(struct symb_dwarf *d, Dwarf_Die *die)
{
	struct dw_nametab *t = &d->names;
	const char *name;
	size_t i;

	if (!die->addr)
		return DW_UNKNOWN;
	if (t->count * 2 >= t->cap && dw_nametab_grow(t))
		goto uncached;
	for (i = dw_hash_ptr(die->addr) & (t->cap - 1); t->slots[i].die;
	     i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].die == die->addr)
			return t->slots[i].name;
	}
	name = dw_die_name_uncached(d, die);
	if (!name)
		name = DW_UNKNOWN;
	t->slots[i].die = die->addr;
	t->slots[i].name = name;
	t->count++;
	return name;
uncached:
	name = dw_die_name_uncached(d, die);
	return name ? name : DW_UNKNOWN;
}

/* ---- open ------------------------------------------------------------- */

static int dw_range_cmp(const void *a, const void *b)
{
	const struct dw_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	if (x->hi != y->hi)
		return x->hi < y->hi ? -1 : 1;
	return x->unit < y->unit ? -1 : x->unit > y->unit;
}

static int dw_add_range(struct symb_dwarf *d, size_t *cap, uint64_t lo, uint64_t hi)
{
	struct dw_range *r;
	size_t ncap;

	if (lo >= hi || d->nranges >= DW_MAX_RANGES)
		return 0;
	if (d->nranges == *cap) {
		ncap = *cap ? *cap * 2 : 64;
		r = realloc(d->ranges, ncap * sizeof(*r));
		if (!r)
			return -ENOMEM;
		d->ranges = r;
		*cap = ncap;
	}
	d->ranges[d->nranges++] = (struct dw_range){.lo = lo, .hi = hi, .unit = d->nunits};
	return 0;
}

/* Indexes every compile unit with code; returns 0, -ENOENT if none has, -ENOMEM. */
static int dw_index_units(struct symb_dwarf *d)
{
	size_t ucap = 0, rcap = 0;
	Dwarf_CU *cu = NULL;
	Dwarf_Die cudie, subdie, *walk, *u;
	Dwarf_Addr base, lo, hi;
	uint8_t unit_type;
	ptrdiff_t off;
	int err;

	while (dwarf_get_units(d->dw, cu, &cu, NULL, &unit_type, &cudie, &subdie) == 0) {
		if (unit_type == DW_UT_type || unit_type == DW_UT_split_type)
			continue;
		/* A skeleton's ranges are its own; its DIEs are in the split unit. */
		walk = unit_type == DW_UT_skeleton ? &subdie : &cudie;
		if (!walk->addr || d->nunits >= UINT32_MAX)
			continue;
		if (d->nunits == ucap) {
			ucap = ucap ? ucap * 2 : 16;
			u = realloc(d->units, ucap * sizeof(*u));
			if (!u)
				return -ENOMEM;
			d->units = u;
		}
		off = 0;
		while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
			err = dw_add_range(d, &rcap, lo, hi);
			if (err)
				return err;
		}
		d->units[d->nunits++] = *walk;
	}
	/* Units without code (type units only, say) are not usable either. */
	if (!d->nranges)
		return -ENOENT;
	qsort(d->ranges, d->nranges, sizeof(*d->ranges), dw_range_cmp);
	return 0;
}

struct symb_dwarf *symb_dwarf__open(Elf *elf, Elf *debug_elf)
{
	struct symb_dwarf *d;
	int err = -ENOMEM, i;

	d = calloc(1, sizeof(*d));
	if (!d)
		goto err_out;
	d->cache = malloc(DW_CACHE_SLOTS * sizeof(*d->cache));
	if (!d->cache)
		goto err_out;
	for (i = 0; i < DW_CACHE_SLOTS; i++)
		d->cache[i].n = -1;
	err = -ENOENT;
	if (!elf && !debug_elf)
		goto err_out;
	d->dw = dwarf_begin_elf(debug_elf ? debug_elf : elf, DWARF_C_READ, NULL);
	if (!d->dw)
		goto err_out;
	err = dw_index_units(d);
	if (err)
		goto err_out;
	return d;
err_out:
	symb_dwarf__free(d);
	errno = -err;
	return NULL;
}

void symb_dwarf__free(struct symb_dwarf *d)
{
	struct dw_chunk *c, *next;

	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	for (c = d->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(d->strs.slots);
	free(d->names.slots);
	free(d->cache);
	free(d->units);
	free(d->ranges);
	free(d);
}

/* ---- lookup ----------------------------------------------------------- */

/* The unit whose ranges contain vaddr, or NULL. */
static Dwarf_Die *dw_find_unit(struct symb_dwarf *d, uint64_t vaddr)
{
	size_t lo = 0, hi = d->nranges, i, back;

	while (lo < hi) {
		i = lo + (hi - lo) / 2;
		if (d->ranges[i].lo <= vaddr)
			lo = i + 1;
		else
			hi = i;
	}
	/* Ranges of real units are disjoint; a few steps back covers overlaps. */
	for (back = 0; back < 8 && lo > back; back++) {
		if (vaddr < d->ranges[lo - 1 - back].hi)
			return &d->units[d->ranges[lo - 1 - back].unit];
	}
	return NULL;
}

struct dw_walk {
	uint64_t pc;
	unsigned int visits;
	Dwarf_Die chain[DW_MAX_DEPTH]; /* scopes containing pc, outermost first */
};

/*
 * Follows the scopes below parent that contain w->pc, appending them to
 * w->chain from index depth. Returns the chain's new length. Namespaces,
 * modules and classes have no address ranges, so they are searched and left
 * again when they do not hold the address.
 */
static int dw_descend(struct dw_walk *w, Dwarf_Die *parent, int depth, int level)
{
	Dwarf_Die child;
	int n;

	if (depth >= DW_MAX_DEPTH || level >= DW_MAX_LEVELS || dwarf_child(parent, &child) != 0)
		return depth;
	do {
		if (++w->visits > DW_MAX_VISITS)
			return depth;
		switch (dwarf_tag(&child)) {
		case DW_TAG_subprogram:
		case DW_TAG_inlined_subroutine:
		case DW_TAG_entry_point:
		case DW_TAG_lexical_block:
		case DW_TAG_try_block:
		case DW_TAG_catch_block:
		case DW_TAG_with_stmt:
			if (dwarf_haspc(&child, w->pc) <= 0)
				break;
			w->chain[depth] = child;
			return dw_descend(w, &child, depth + 1, level + 1);
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
		case DW_TAG_interface_type:
			n = dw_descend(w, &child, depth, level + 1);
			if (n > depth)
				return n;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return depth;
}

static const char *dw_file(struct symb_dwarf *d, const char *path)
{
	return path ? dw_intern(d, path) : NULL;
}

/* The file:line of the call an inlined_subroutine DIE stands for. */
static void dw_call_site(struct symb_dwarf *d, Dwarf_Die *cu, Dwarf_Die *inl,
			 struct symb_srcline *out)
{
	Dwarf_Attribute attr;
	Dwarf_Files *files;
	Dwarf_Word val;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_line, &attr), &val) == 0 &&
	    val <= UINT32_MAX)
		out->line = val;
	if (dwarf_formudata(dwarf_attr(inl, DW_AT_call_file, &attr), &val) == 0 &&
	    dwarf_getsrcfiles(cu, &files, &nfiles) == 0 && val < nfiles)
		out->file = dw_file(d, dwarf_filesrc(files, val, NULL, NULL));
}

static int dw_lookup_uncached(struct symb_dwarf *d, uint64_t vaddr, struct symb_srcline *out,
			      int max)
{
	struct dw_walk walk, *w = &walk;
	Dwarf_Die *cu, *scope;
	Dwarf_Line *line;
	int depth, n = 0, i, tag, lineno;

	cu = dw_find_unit(d, vaddr);
	if (!cu)
		return 0;
	w->pc = vaddr;
	w->visits = 0;
	depth = dw_descend(w, cu, 0, 0);
	/* Innermost first: inlined instances up to the first real function. */
	for (i = depth - 1; i >= 0 && n < max; i--) {
		scope = &w->chain[i];
		tag = dwarf_tag(scope);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
		    tag != DW_TAG_entry_point)
			continue;
		out[n].function = dw_die_name(d, scope);
		if (n == 0) {
			out[n].file = NULL;
			out[n].line = 0;
			line = dwarf_getsrc_die(cu, vaddr);
			if (line && dwarf_lineno(line, &lineno) == 0 && lineno > 0)
				out[n].line = lineno;
			if (line)
				out[n].file = dw_file(d, dwarf_linesrc(line, NULL, NULL));
		}
		n++;
		/* The caller's frame gets the file:line of this call. */
		if (tag == DW_TAG_inlined_subroutine && n < max) {
			out[n].file = NULL;
			out[n].line = 0;
			dw_call_site(d, cu, scope, &out[n]);
		}
		if (tag != DW_TAG_inlined_subroutine)
			break;
	}
	return n;
}

int symb_dwarf__lookup(struct symb_dwarf *d, uint64_t vaddr, struct symb_srcline *out, int max)
{
	struct symb_srcline frames[DW_MAX_FRAMES];
	struct dw_cache_entry *e;
	int n;

	if (!d || !out || max <= 0)
		return 0;
	e = &d->cache[dw_hash_ptr((const void *)(uintptr_t)vaddr) % DW_CACHE_SLOTS];
	if (e->n < 0 || e->vaddr != vaddr) {
		n = dw_lookup_uncached(d, vaddr, frames, DW_MAX_FRAMES);
		if (n > DW_CACHE_FRAMES) {
			memcpy(out, frames, (n < max ? n : max) * sizeof(*out));
			return n < max ? n : max;
		}
		e->vaddr = vaddr;
		e->n = n;
		memcpy(e->frames, frames, n * sizeof(*frames));
	}
	n = e->n < max ? e->n : max;
	memcpy(out, e->frames, n * sizeof(*out));
	return n;
}

/* ---- separate debug files --------------------------------------------- */

int symb_debug_file_open(const char *dir, const uint8_t *build_id, size_t len)
{
	return symb_build_id_file_open(dir, build_id, len, ".debug");
}

int symb_build_id_file_open(const char *dir, const uint8_t *build_id, size_t len,
			    const char *suffix)
{
	char path[PATH_MAX], hex[2 * 64 + 1];
	struct stat st;
	size_t i;
	int fd, n, err;

	/* build-ids are 8 to 20 bytes in practice; 64 as in elfsym.c */
	if (!dir || !build_id || len < 2 || len > 64)
		return -EINVAL;
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", build_id[i]);
	n = snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", dir, hex, hex + 2, suffix);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	/*
	 * Symlinks are followed: distributions' .build-id entries are links
	 * into the debug tree. O_NONBLOCK keeps a FIFO planted there from
	 * blocking the open; anything but a regular file is refused after.
	 */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}
