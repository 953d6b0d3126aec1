// SPDX-License-Identifier: MIT
/*
 * Source frames from DWARF with libdw (see debuginfo.h for the contract).
 *
 * Opening is lazy: symb_dwarf__open only checks that the file has a
 * .debug_info section; libdw is started (dwarf_begin_elf, which inflates
 * every compressed debug section, tens of MiB for a distribution's debug
 * file) and the units indexed on the first lookup that no remembered
 * result answers. A symbolizer whose cache already holds the results of the
 * addresses it meets (symb_dwarf__load_lines) never starts libdw at all.
 *
 * Starting builds a sorted table of the address ranges of every compile
 * unit (from the units' own DW_AT_ranges / low_pc+high_pc), because
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
 * a function is demangled once, and every result is remembered per address
 * (up to DW_MAX_RESULTS) in a seeded hash table. The arena is bounded: once
 * full, names become "[unknown]" and files NULL rather than growing without
 * limit, and the object's results are no longer offered for persisting.
 *
 * libdw objects are not safe for concurrent use, so neither is a
 * struct symb_dwarf: one thread at a time.
 */
#include <dwarf.h> /* the system's DW_* constants */
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <libdeflate.h>
#include <unistd.h>

#include "debuginfo.h"
#include "lowprof/arena.h"
#include "lowprof/grow.h"
#include "lowprof/hash.h"

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
/*
 * Results remembered per object, and their frames (32 bytes each): far
 * above the distinct addresses of one binary in a real profile, and at most
 * ~45 MiB per object. Beyond, lookups still answer, from libdw every time.
 */
#define DW_MAX_RESULTS	     (1u << 18)
#define DW_MAX_RESULT_FRAMES (1u << 20)
/* Frames of one lookup, innermost first (DW_MAX_DEPTH bounds them anyway). */
#define DW_MAX_FRAMES DW_MAX_DEPTH
#define DW_UNKNOWN    "[unknown]"
#define DW_TRUNC      "..."
/*
 * Bytes of inflated sections per object (dw_inflate): a distribution's
 * libc needs ~9 MiB; beyond, libdw inflates the file itself.
 */
#define DW_INFLATE_MAX (1ull << 30)
/* deflate's largest expansion: a claimed size beyond it is a lie */
#define DW_DEFLATE_RATIO 1032u

/* The lines blob: "LPDL", then counts and tables (see symb_dwarf__encode_lines). */
#define DW_BLOB_MAGIC	0x4c44504cu /* "LPDL" little-endian */
#define DW_BLOB_MANGLED 0x80000000u /* a function index flag: demangle on load */
#define DW_BLOB_NO_FILE UINT32_MAX
#define DW_BLOB_HDR	12u
#define DW_BLOB_FRAME	12u
#define DW_BLOB_RESULT	12u

struct dw_range {
	uint64_t lo; /* [lo, hi) belongs to units[unit] */
	uint64_t hi;
	uint32_t unit;
};

/* Open-addressing hash tables: interned strings, and names per DIE. */
struct dw_strtab {
	const char **slots;
	size_t cap; /* power of two, or 0 */
	size_t count;
	uint64_t seed; /* the names are a file's: seeded (no flooding) */
};

struct dw_name {
	const void *die; /* Dwarf_Die.addr: unique per DIE in memory */
	const char *name;
	const char *raw; /* the linkage name it was demangled from, or NULL */
};

struct dw_nametab {
	struct dw_name *slots;
	size_t cap;
	size_t count;
};

/* One frame of a result: what a lookup hands out, and how to persist it. */
struct dw_frame {
	const char *function;
	const char *file;
	const char *raw; /* function was demangled from this linkage name; or NULL */
	uint32_t line;
};

/* A remembered lookup: frames[first, first + n) of symb_dwarf.frames. */
struct dw_result {
	uint64_t vaddr;
	uint32_t first;
	uint32_t n;
};

enum dw_state {
	DW_LAZY,   /* libdw not started yet */
	DW_OPEN,   /* started, units indexed */
	DW_FAILED, /* starting failed: no lookup finds anything */
};

/*
 * The scopes with addresses directly below a unit (through namespaces and
 * classes), each range once, sorted by lo: a lookup finds the scope that
 * holds its address by binary search instead of walking every DIE of the
 * unit (dwarf_siblingof reads a sibling's whole subtree), which took most
 * of the DWARF time of a whole-host run with libc's debug file.
 */
struct dw_scope {
	uint64_t lo, hi; /* [lo, hi) */
	uint64_t max_hi; /* the largest hi of this one and those before it */
	Dwarf_Die die;
	uint32_t order; /* in DIE order: the first one holding an address wins */
	uint32_t level; /* namespace and class levels above it */
};

struct dw_uscopes {
	struct dw_scope *v;
	size_t n, cap;
	bool built;
};

struct symb_dwarf;
static void dw_free_uscopes(struct symb_dwarf *d);

struct symb_dwarf {
	Elf *elf;      /* the file libdw is started on (not owned); deferred: NULL until then */
	Elf *inflated; /* elf's sections lookups read, inflated (dw_inflate); or NULL */
	void *inflated_img; /* its image, owned */
	symb_dwarf_start_fn *start;
	void *start_ctx;
	enum dw_state state;
	Dwarf *dw;
	Dwarf_Die *units;	    /* DIEs whose subtree is walked (split units resolved) */
	struct dw_uscopes *uscopes; /* per unit, built on its first lookup; or NULL */
	size_t nunits;
	struct dw_range *ranges; /* sorted by lo */
	size_t nranges;

	struct lp_arena arena; /* the interned strings */
	size_t arena_bytes;
	struct dw_strtab strs;
	struct dw_nametab names;

	struct dw_result *results; /* in insertion order */
	uint32_t nresults, cap_results;
	uint32_t *index; /* open addressing by vaddr: result index + 1, 0 = empty */
	uint32_t cap_index;
	struct dw_frame *frames;
	uint32_t nframes, cap_frames;
	uint64_t seed;
	bool changed;  /* results were added since the last load or encode */
	bool degraded; /* a result may differ from a fresh one: not persisted */
};

/* ---- strings ---------------------------------------------------------- */

static uint64_t dw_hash_ptr(const void *p)
{
	return ((uint64_t)(uintptr_t)p * 0x9e3779b97f4a7c15ull) >> 17;
}

static char *dw_arena_alloc(struct symb_dwarf *d, size_t size)
{
	char *p;

	if (d->arena_bytes + size > DW_ARENA_MAX)
		return NULL;
	p = lp_arena_alloc(&d->arena, size, 1);
	if (p)
		d->arena_bytes += size;
	return p;
}

static int dw_strtab_grow(struct dw_strtab *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024, i, j;
	const char **slots = calloc(cap, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	if (!t->cap)
		t->seed = lp_hash_seed(t);
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i])
			continue;
		j = lp_hash_bytes(t->seed, t->slots[i], strlen(t->slots[i])) & (cap - 1);
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
 * "..."), or NULL if the arena is full or memory ran out (the object is
 * then degraded).
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
		goto fail;
	i = lp_hash_bytes(d->strs.seed, s, len) & (d->strs.cap - 1);
	for (; d->strs.slots[i]; i = (i + 1) & (d->strs.cap - 1)) {
		if (strcmp(d->strs.slots[i], s) == 0)
			return d->strs.slots[i];
	}
	copy = dw_arena_alloc(d, len + 1);
	if (!copy)
		goto fail;
	memcpy(copy, s, len + 1);
	d->strs.slots[i] = copy;
	d->strs.count++;
	return copy;
fail:
	/* names become "[unknown]" from here on: not what a fresh lookup gives */
	d->degraded = true;
	return NULL;
}

/* ---- function names --------------------------------------------------- */

static const char *dw_attr_string(Dwarf_Die *die, unsigned int name)
{
	Dwarf_Attribute attr;

	return dwarf_formstring(dwarf_attr_integrate(die, name, &attr));
}

/* The name shown for a linkage name: demangled, else as it is. NULL: arena full. */
static const char *dw_linkage_name(struct symb_dwarf *d, const char *raw)
{
	const char *name;
	char *dem = symb_demangle(raw);

	if (!dem)
		return dw_intern(d, raw);
	name = dw_intern(d, dem);
	free(dem);
	return name;
}

/*
 * The name of the function a subprogram or inlined_subroutine DIE is an
 * instance of: its linkage name demangled, else its plain name, both found
 * through DW_AT_abstract_origin and DW_AT_specification. *raw gets the
 * interned linkage name when it is whole (so that the name can be made
 * again from it), else NULL.
 */
static const char *dw_die_name_uncached(struct symb_dwarf *d, Dwarf_Die *die, const char **raw)
{
	const char *link, *plain;

	*raw = NULL;
	link = dw_attr_string(die, DW_AT_linkage_name);
	if (!link)
		link = dw_attr_string(die, DW_AT_MIPS_linkage_name);
	if (link) {
		if (strnlen(link, SYMB_DWARF_NAME_MAX + 1) <= SYMB_DWARF_NAME_MAX)
			*raw = dw_intern(d, link);
		return dw_linkage_name(d, link);
	}
	plain = dw_attr_string(die, DW_AT_name);
	return plain ? dw_intern(d, plain) : NULL;
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

/* The DIE's name (never NULL) and, in *raw, its linkage name (see above). */
static const char *dw_die_name(struct symb_dwarf *d, Dwarf_Die *die, const char **raw)
{
	struct dw_nametab *t = &d->names;
	const char *name;
	size_t i;

	*raw = NULL;
	if (!die->addr)
		return DW_UNKNOWN;
	if (t->count * 2 >= t->cap && dw_nametab_grow(t))
		goto uncached;
	for (i = dw_hash_ptr(die->addr) & (t->cap - 1); t->slots[i].die;
	     i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].die == die->addr) {
			*raw = t->slots[i].raw;
			return t->slots[i].name;
		}
	}
	name = dw_die_name_uncached(d, die, raw);
	if (!name) {
		name = DW_UNKNOWN;
		*raw = NULL;
	}
	t->slots[i].die = die->addr;
	t->slots[i].name = name;
	t->slots[i].raw = *raw;
	t->count++;
	return name;
uncached:
	name = dw_die_name_uncached(d, die, raw);
	if (!name)
		*raw = NULL;
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
	if (lo >= hi || d->nranges >= DW_MAX_RANGES)
		return 0;
	if (lp_grow((void **)&d->ranges, cap, d->nranges + 1, sizeof(*d->ranges), 64, SIZE_MAX))
		return -ENOMEM;
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

/*
 * Whether e has a .debug_info section with contents: what libdw needs to
 * find any unit. Reads only the section headers and their names.
 */
static bool dw_has_debug_info(Elf *e)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	const char *name;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return false;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info")))
			return true;
	}
	return false;
}

static struct symb_dwarf *dw_new(Elf *elf)
{
	struct symb_dwarf *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->elf = elf;
	d->state = elf ? DW_LAZY : DW_FAILED;
	d->arena.chunk = DW_ARENA_CHUNK;
	d->seed = lp_hash_seed(d); /* addresses come from the stream, which may be hostile */
	return d;
}

struct symb_dwarf *symb_dwarf__open(Elf *elf, Elf *debug_elf)
{
	Elf *e = debug_elf ? debug_elf : elf;
	struct symb_dwarf *d;

	if (!e || !dw_has_debug_info(e)) {
		errno = ENOENT;
		return NULL;
	}
	d = dw_new(e);
	if (!d)
		errno = ENOMEM;
	return d;
}

struct symb_dwarf *symb_dwarf__open_deferred(Elf *probe, symb_dwarf_start_fn *start, void *ctx)
{
	struct symb_dwarf *d;

	if (!probe || !start || !dw_has_debug_info(probe)) {
		errno = ENOENT;
		return NULL;
	}
	d = dw_new(NULL);
	if (!d) {
		errno = ENOMEM;
		return NULL;
	}
	d->state = DW_LAZY;
	d->start = start;
	d->start_ctx = ctx;
	return d;
}

struct symb_dwarf *symb_dwarf__new_empty(void)
{
	struct symb_dwarf *d = dw_new(NULL);

	if (!d)
		errno = ENOMEM;
	return d;
}

/* ---- inflating compressed sections ------------------------------------- */

/*
 * What lookups read: units, abbreviations, lines, strings, ranges and
 * address tables. Location lists, frames, macros and name indexes (a sixth
 * of a distribution's libc debug file, inflated) are never needed.
 */
static bool dw_section_wanted(const char *name)
{
	static const char *const want[] = {
		".debug_info",	   ".debug_abbrev", ".debug_line",
		".debug_line_str", ".debug_str",    ".debug_ranges",
		".debug_rnglists", ".debug_addr",   ".debug_str_offsets",
	};

	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strcmp(name, want[i]))
			return true;
	return false;
}

struct dw_isec {
	const char *name;
	GElf_Shdr sh;
	const uint8_t *src; /* raw bytes (compressed: after the header) */
	size_t srclen;
	uint64_t size;	/* inflated */
	uint64_t align; /* a power of two */
	bool zlib;
	uint64_t off; /* in the image */
	uint32_t name_off;
};

#define DW_ISEC_MAX 16

/*
 * Collects e's wanted sections. 0 with at least one zlib-compressed
 * section; -ENOENT when there is nothing to gain or the file needs what
 * only libdw's own path gives (GNU .zdebug sections, another compression,
 * a dwz alternate file found relative to the file's own path).
 */
static int dw_isec_collect(Elf *e, struct dw_isec *is, size_t *n, uint64_t *total)
{
	size_t shstrndx, nz = 0;
	Elf_Scn *scn = NULL;
	const char *ident = elf_getident(e, NULL);

	*n = 0;
	*total = 0;
	if (!ident || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
	    __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__ || elf_getshdrstrndx(e, &shstrndx))
		return -ENOENT;
	while ((scn = elf_nextscn(e, scn))) {
		struct dw_isec *x;
		const char *name;
		Elf_Data *raw;
		Elf64_Chdr ch;
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)))
			continue;
		if (!strncmp(name, ".zdebug", 7) || !strcmp(name, ".gnu_debugaltlink"))
			return -ENOENT;
		if (!dw_section_wanted(name) || sh.sh_type == SHT_NOBITS || !sh.sh_size)
			continue;
		if (*n == DW_ISEC_MAX || !(raw = elf_rawdata(scn, NULL)) || !raw->d_buf)
			return -ENOENT;
		x = &is[*n];
		x->sh = sh;
		x->name = name;
		x->zlib = x->sh.sh_flags & SHF_COMPRESSED;
		x->src = raw->d_buf;
		x->srclen = raw->d_size;
		x->size = raw->d_size;
		x->align = 1;
		if (x->zlib) {
			if (raw->d_size < sizeof(ch))
				return -ENOENT;
			memcpy(&ch, raw->d_buf, sizeof(ch));
			if (ch.ch_type != ELFCOMPRESS_ZLIB ||
			    ch.ch_size / DW_DEFLATE_RATIO > raw->d_size ||
			    (ch.ch_addralign & (ch.ch_addralign - 1)) || ch.ch_addralign > 4096)
				return -ENOENT;
			x->src += sizeof(ch);
			x->srclen -= sizeof(ch);
			x->size = ch.ch_size;
			x->align = ch.ch_addralign ? ch.ch_addralign : 1;
			nz++;
		}
		*total += x->size + x->align + 8;
		if (*total > DW_INFLATE_MAX)
			return -ENOENT;
		(*n)++;
	}
	return nz ? 0 : -ENOENT;
}

/*
 * An ELF image holding e's wanted debug sections, inflated with libdeflate
 * (about twice zlib's speed, which libdw's dwarf_begin_elf uses to inflate
 * every compressed section, location lists too: 33 ms of CPU for Debian's
 * libc debug file, 13 here). Returns the Elf over *img (free both after
 * dwarf_end), or NULL (errno) when libdw should be started on e as it is.
 */
static Elf *dw_inflate(Elf *e, void **img)
{
	struct dw_isec is[DW_ISEC_MAX];
	struct libdeflate_decompressor *dc = NULL;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	GElf_Ehdr oe;
	uint64_t total, off = sizeof(*eh), stroff, shoff, len;
	uint8_t *p = NULL;
	uint32_t names = 1;
	size_t n;
	Elf *out;
	int err = EBADMSG; /* a stream that does not inflate, or an image libelf refuses */

	*img = NULL;
	/* relocatable files need their .rela.debug_* sections: libdw's own path */
	if (!gelf_getehdr(e, &oe) || (oe.e_type != ET_EXEC && oe.e_type != ET_DYN) ||
	    dw_isec_collect(e, is, &n, &total)) {
		errno = ENOENT;
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		off = (off + is[i].align - 1) & ~(is[i].align - 1);
		is[i].off = off;
		off += is[i].size;
		is[i].name_off = names;
		names += (uint32_t)strlen(is[i].name) + 1;
	}
	stroff = off;
	names += sizeof(".shstrtab");
	shoff = (stroff + names + 7) & ~7ull;
	len = shoff + (n + 2) * sizeof(*sh);
	/* calloc: the padding is zero, and a large block comes zeroed from mmap */
	p = calloc(1, len);
	dc = p ? libdeflate_alloc_decompressor() : NULL;
	if (!dc) {
		err = ENOMEM;
		goto fail;
	}
	for (size_t i = 0; i < n; i++) {
		if (!is[i].zlib)
			memcpy(p + is[i].off, is[i].src, is[i].size);
		else if (libdeflate_zlib_decompress(dc, is[i].src, is[i].srclen, p + is[i].off,
						    is[i].size, NULL) != LIBDEFLATE_SUCCESS)
			goto fail;
	}
	libdeflate_free_decompressor(dc);
	dc = NULL;
	eh = (Elf64_Ehdr *)p;
	memcpy(eh->e_ident, elf_getident(e, NULL), EI_NIDENT);
	eh->e_type = oe.e_type;
	eh->e_machine = oe.e_machine;
	eh->e_version = EV_CURRENT;
	eh->e_flags = (uint32_t)oe.e_flags;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = (uint16_t)(n + 2);
	eh->e_shstrndx = (uint16_t)(n + 1);
	eh->e_shoff = shoff;
	sh = (Elf64_Shdr *)(p + shoff);
	for (size_t i = 0; i < n; i++) {
		Elf64_Shdr *s = &sh[i + 1];

		memcpy(p + stroff + is[i].name_off, is[i].name, strlen(is[i].name));
		s->sh_name = is[i].name_off;
		s->sh_type = is[i].sh.sh_type;
		s->sh_flags = is[i].sh.sh_flags & ~(uint64_t)SHF_COMPRESSED;
		s->sh_offset = is[i].off;
		s->sh_size = is[i].size;
		s->sh_addralign = is[i].align;
		s->sh_entsize = is[i].sh.sh_entsize;
	}
	memcpy(p + stroff + names - sizeof(".shstrtab"), ".shstrtab", sizeof(".shstrtab"));
	sh[n + 1] = (Elf64_Shdr){.sh_name = names - (uint32_t)sizeof(".shstrtab"),
				 .sh_type = SHT_STRTAB,
				 .sh_offset = stroff,
				 .sh_size = names,
				 .sh_addralign = 1};
	out = elf_memory((char *)p, len);
	if (!out)
		goto fail;
	*img = p;
	return out;
fail:
	libdeflate_free_decompressor(dc);
	free(p);
	errno = err;
	return NULL;
}

/* A failed start holds no inflated image (up to DW_INFLATE_MAX). */
static void dw_drop_inflated(struct symb_dwarf *d)
{
	elf_end(d->inflated);
	free(d->inflated_img);
	d->inflated = NULL;
	d->inflated_img = NULL;
}

/*
 * Starts libdw and indexes the units, once: true when lookups can walk
 * DWARF. A failure is final (the object then finds nothing, as an object
 * without DWARF); one for want of memory also stops its results from being
 * persisted.
 */
static bool dw_ready(struct symb_dwarf *d)
{
	int err;

	if (d->state != DW_LAZY)
		return d->state == DW_OPEN;
	d->state = DW_FAILED;
	if (!d->elf && d->start)
		d->elf = d->start(d->start_ctx);
	if (!d->elf) {
		d->degraded = true; /* what is learnt now is not the file's */
		return false;
	}
	d->inflated = dw_inflate(d->elf, &d->inflated_img);
	if (!d->inflated && errno == ENOMEM) {
		d->degraded = true;
		return false;
	}
	errno = 0;
	d->dw = dwarf_begin_elf(d->inflated ? d->inflated : d->elf, DWARF_C_READ, NULL);
	if (!d->dw) {
		/* libdw's own codes are private; malloc's errno tells memory apart */
		if (errno == ENOMEM)
			d->degraded = true;
		dw_drop_inflated(d);
		return false;
	}
	err = dw_index_units(d);
	if (err) {
		if (err == -ENOMEM)
			d->degraded = true;
		dwarf_end(d->dw);
		d->dw = NULL;
		free(d->units);
		free(d->ranges);
		d->units = NULL;
		d->ranges = NULL;
		d->nunits = d->nranges = 0;
		dw_drop_inflated(d);
		return false;
	}
	d->state = DW_OPEN;
	return true;
}

bool symb_dwarf__opened(const struct symb_dwarf *d)
{
	return d && d->state != DW_LAZY;
}

void symb_dwarf__free(struct symb_dwarf *d)
{
	if (!d)
		return;
	if (d->dw)
		dwarf_end(d->dw);
	dw_drop_inflated(d);
	lp_arena_free(&d->arena);
	free(d->strs.slots);
	free(d->names.slots);
	free(d->results);
	free(d->index);
	free(d->frames);
	dw_free_uscopes(d);
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

/* What a DIE is to a lookup: a scope with addresses, one that may hold such scopes, neither. */
enum { DW_SCOPE_NONE, DW_SCOPE_PC, DW_SCOPE_HOLDER };

static int dw_scope_kind(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_entry_point:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_with_stmt:
		return DW_SCOPE_PC;
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_interface_type:
		return DW_SCOPE_HOLDER;
	default:
		return DW_SCOPE_NONE;
	}
}

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
		switch (dw_scope_kind(dwarf_tag(&child))) {
		case DW_SCOPE_PC:
			if (dwarf_haspc(&child, w->pc) <= 0)
				break;
			w->chain[depth] = child;
			return dw_descend(w, &child, depth + 1, level + 1);
		case DW_SCOPE_HOLDER:
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
static void dw_call_site(struct symb_dwarf *d, Dwarf_Die *cu, Dwarf_Die *inl, struct dw_frame *out)
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

static void dw_free_uscopes(struct symb_dwarf *d)
{
	for (size_t i = 0; d->uscopes && i < d->nunits; i++)
		free(d->uscopes[i].v);
	free(d->uscopes);
	d->uscopes = NULL;
}

static int dw_scope_cmp(const void *a, const void *b)
{
	const struct dw_scope *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/*
 * Collects the scopes below parent as dw_descend looks at them (the same
 * tags, levels and visit bound), in DIE order. -ENOMEM, else 0.
 */
static int dw_collect(struct dw_uscopes *u, Dwarf_Die *parent, uint32_t level, uint32_t *order,
		      unsigned int *visits)
{
	Dwarf_Die child;
	Dwarf_Addr base, lo, hi;
	ptrdiff_t off;
	int err;

	if (level >= DW_MAX_LEVELS || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		if (++*visits > DW_MAX_VISITS)
			return 0;
		switch (dw_scope_kind(dwarf_tag(&child))) {
		case DW_SCOPE_PC:
			off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
				if (lo >= hi)
					continue;
				if (lp_grow((void **)&u->v, &u->cap, u->n + 1, sizeof(*u->v), 64,
					    SIZE_MAX))
					return -ENOMEM;
				u->v[u->n++] = (struct dw_scope){lo, hi, 0, child, *order, level};
			}
			(*order)++;
			break;
		case DW_SCOPE_HOLDER:
			err = dw_collect(u, &child, level + 1, order, visits);
			if (err)
				return err;
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Unit u's scopes, built on its first lookup; NULL without memory. */
static struct dw_uscopes *dw_unit_scopes(struct symb_dwarf *d, Dwarf_Die *cu)
{
	size_t i = (size_t)(cu - d->units);
	struct dw_uscopes *u;
	unsigned int visits = 0;
	uint32_t order = 0;

	if (!d->uscopes) {
		d->uscopes = calloc(d->nunits, sizeof(*d->uscopes));
		if (!d->uscopes)
			return NULL;
	}
	u = &d->uscopes[i];
	if (u->built)
		return u;
	if (dw_collect(u, cu, 0, &order, &visits)) {
		free(u->v);
		*u = (struct dw_uscopes){0};
		return NULL;
	}
	if (u->n > 1)
		qsort(u->v, u->n, sizeof(*u->v), dw_scope_cmp);
	for (size_t k = 0; k < u->n; k++)
		u->v[k].max_hi =
			k && u->v[k - 1].max_hi > u->v[k].hi ? u->v[k - 1].max_hi : u->v[k].hi;
	u->built = true;
	return u;
}

/*
 * dw_descend from the unit cu, through its scope index: the first scope
 * in DIE order that holds w->pc, then its subtree as dw_descend walks it.
 */
static int dw_descend_unit(struct symb_dwarf *d, struct dw_walk *w, Dwarf_Die *cu)
{
	struct dw_uscopes *u = dw_unit_scopes(d, cu);
	const struct dw_scope *best = NULL;
	size_t lo = 0, hi;

	if (!u)
		return dw_descend(w, cu, 0, 0);
	hi = u->n;
	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (u->v[m].lo <= w->pc)
			lo = m + 1;
		else
			hi = m;
	}
	/* entries [0, lo) start at or below pc; max_hi ends the search */
	while (lo-- > 0 && u->v[lo].max_hi > w->pc)
		if (w->pc < u->v[lo].hi && (!best || u->v[lo].order < best->order))
			best = &u->v[lo];
	if (!best)
		return 0;
	w->chain[0] = best->die;
	return dw_descend(w, &w->chain[0], 1, (int)best->level + 1);
}

/* The frames at vaddr from DWARF (at most DW_MAX_FRAMES); libdw must be ready. */
static int dw_walk_frames(struct symb_dwarf *d, uint64_t vaddr, struct dw_frame *out)
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
	depth = dw_descend_unit(d, w, cu);
	/* Innermost first: inlined instances up to the first real function. */
	for (i = depth - 1; i >= 0 && n < DW_MAX_FRAMES; i--) {
		scope = &w->chain[i];
		tag = dwarf_tag(scope);
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram &&
		    tag != DW_TAG_entry_point)
			continue;
		out[n].function = dw_die_name(d, scope, &out[n].raw);
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
		if (tag == DW_TAG_inlined_subroutine && n < DW_MAX_FRAMES) {
			out[n].file = NULL;
			out[n].line = 0;
			dw_call_site(d, cu, scope, &out[n]);
		}
		if (tag != DW_TAG_inlined_subroutine)
			break;
	}
	return n;
}

/* ---- remembered results ----------------------------------------------- */

static uint32_t dw_slot(const struct symb_dwarf *d, uint64_t vaddr)
{
	uint64_t x = vaddr ^ d->seed;

	/* splitmix64's finalizer: a seeded, well-mixed slot for any address set */
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(x ^ (x >> 31)) & (d->cap_index - 1);
}

static const struct dw_result *dw_result_find(const struct symb_dwarf *d, uint64_t vaddr)
{
	uint32_t j;

	if (!d->cap_index)
		return NULL;
	for (j = dw_slot(d, vaddr); d->index[j]; j = (j + 1) & (d->cap_index - 1)) {
		const struct dw_result *r = &d->results[d->index[j] - 1];

		if (r->vaddr == vaddr)
			return r;
	}
	return NULL;
}

static int dw_index_grow(struct symb_dwarf *d)
{
	uint32_t cap = d->cap_index ? d->cap_index * 2 : 256, i, j;
	uint32_t *index = calloc(cap, sizeof(*index));

	if (!index)
		return -ENOMEM;
	free(d->index);
	d->index = index;
	d->cap_index = cap;
	for (i = 0; i < d->nresults; i++) {
		for (j = dw_slot(d, d->results[i].vaddr); index[j]; j = (j + 1) & (cap - 1))
			;
		index[j] = i + 1;
	}
	return 0;
}

/*
 * Remembers the n frames at vaddr (not remembered yet). Returns the result,
 * or NULL beyond the DW_MAX_RESULT* limits or without memory.
 */
static const struct dw_result *dw_result_add(struct symb_dwarf *d, uint64_t vaddr,
					     const struct dw_frame *frames, uint32_t n)
{
	struct dw_result *r;
	uint32_t j;

	if (d->nresults >= DW_MAX_RESULTS || n > DW_MAX_RESULT_FRAMES - d->nframes)
		return NULL;
	if ((d->nresults + 1) * 2 > d->cap_index && dw_index_grow(d))
		return NULL;
	/* need is bounded by DW_MAX_RESULT*, far below 2^31 */
	if (lp_grow32((void **)&d->results, &d->cap_results, d->nresults + 1, sizeof(*d->results),
		      64) ||
	    lp_grow32((void **)&d->frames, &d->cap_frames, d->nframes + n, sizeof(*d->frames), 64))
		return NULL;
	if (n)
		memcpy(&d->frames[d->nframes], frames, n * sizeof(*frames));
	r = &d->results[d->nresults];
	r->vaddr = vaddr;
	r->first = d->nframes;
	r->n = n;
	for (j = dw_slot(d, vaddr); d->index[j]; j = (j + 1) & (d->cap_index - 1))
		;
	d->index[j] = ++d->nresults;
	d->nframes += n;
	return r;
}

static int dw_copy_out(const struct dw_frame *f, int n, struct symb_srcline *out, int max)
{
	if (n > max)
		n = max;
	for (int i = 0; i < n; i++)
		out[i] = (struct symb_srcline){f[i].function, f[i].file, f[i].line};
	return n;
}

int symb_dwarf__lookup(struct symb_dwarf *d, uint64_t vaddr, struct symb_srcline *out, int max)
{
	struct dw_frame frames[DW_MAX_FRAMES];
	const struct dw_result *r;
	int n;

	if (!d || !out || max <= 0)
		return 0;
	r = dw_result_find(d, vaddr);
	if (r)
		return r->n ? dw_copy_out(&d->frames[r->first], (int)r->n, out, max) : 0;
	n = dw_ready(d) ? dw_walk_frames(d, vaddr, frames) : 0;
	r = dw_result_add(d, vaddr, frames, (uint32_t)n);
	if (r)
		d->changed = true;
	return dw_copy_out(frames, n, out, max);
}

/* ---- persisted results ------------------------------------------------- */

/*
 * The lines blob, little-endian:
 *   u32 magic "LPDL", u32 nstrings, u32 nresults
 *   nstrings x { u32 len; len bytes, no NUL, len <= SYMB_DWARF_NAME_MAX }
 *   nresults x { u64 vaddr (strictly ascending); u32 n (<= DW_MAX_FRAMES);
 *                n x { u32 function, u32 file, u32 line } }
 * function is a string index, with DW_BLOB_MANGLED set when the string is
 * the linkage name the function's name is demangled from (so a cached name
 * never depends on another build's demangler); file is a string index or
 * DW_BLOB_NO_FILE. Frames are innermost first, as lookups return them.
 */

static void dw_put32(uint8_t **p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		*(*p)++ = (uint8_t)(v >> (8 * i));
}

static uint32_t dw_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t dw_get64(const uint8_t *p)
{
	return (uint64_t)dw_get32(p) | (uint64_t)dw_get32(p + 4) << 32;
}

bool symb_dwarf__lines_changed(const struct symb_dwarf *d)
{
	return d && d->changed && !d->degraded;
}

/* Strings of an encoding, deduplicated by content, numbered in first-use order. */
struct dw_enc_strs {
	const char **slots; /* open addressing */
	uint32_t *ids;
	uint32_t cap;
	const char **list; /* by id */
	uint32_t n;
	size_t bytes; /* of their encoding */
	uint64_t seed;
};

static uint32_t dw_enc_str(struct dw_enc_strs *t, const char *s)
{
	size_t len = strlen(s);
	uint32_t j = (uint32_t)lp_hash_bytes(t->seed, s, len) & (t->cap - 1);

	for (; t->slots[j]; j = (j + 1) & (t->cap - 1))
		if (strcmp(t->slots[j], s) == 0)
			return t->ids[j];
	t->slots[j] = s;
	t->ids[j] = t->n;
	t->list[t->n] = s;
	t->bytes += 4 + len;
	return t->n++;
}

static int dw_cmp_vaddr(const void *a, const void *b, void *ctx)
{
	const struct dw_result *r = ctx;
	uint64_t x = r[*(const uint32_t *)a].vaddr, y = r[*(const uint32_t *)b].vaddr;

	return x < y ? -1 : x > y;
}

int symb_dwarf__encode_lines(struct symb_dwarf *d, uint8_t **blob, size_t *len)
{
	struct dw_enc_strs t = {0};
	uint32_t *order = NULL, *fn = NULL, *file = NULL, i, k, cap;
	size_t size;
	uint8_t *p, *out = NULL;
	int err = -ENOMEM;

	*blob = NULL;
	*len = 0;
	if (!d || d->degraded)
		return -ENODATA;
	/* every frame has at most two strings: a table twice as large stays half empty */
	for (cap = 16; cap < 4 * (uint64_t)d->nframes + 16; cap *= 2)
		;
	t.slots = calloc(cap, sizeof(*t.slots));
	t.ids = calloc(cap, sizeof(*t.ids));
	t.list = calloc(2 * (size_t)d->nframes + 1, sizeof(*t.list));
	t.cap = cap;
	t.seed = lp_hash_seed(&t);
	order = malloc(((size_t)d->nresults + 1) * sizeof(*order));
	fn = malloc(((size_t)d->nframes + 1) * sizeof(*fn));
	file = malloc(((size_t)d->nframes + 1) * sizeof(*file));
	if (!t.slots || !t.ids || !t.list || !order || !fn || !file)
		goto out;
	for (i = 0; i < d->nresults; i++)
		order[i] = i;
	qsort_r(order, d->nresults, sizeof(*order), dw_cmp_vaddr, d->results);
	size = DW_BLOB_HDR;
	for (i = 0; i < d->nresults; i++) {
		const struct dw_result *r = &d->results[order[i]];

		size += DW_BLOB_RESULT + (size_t)r->n * DW_BLOB_FRAME;
		for (k = r->first; k < r->first + r->n; k++) {
			const struct dw_frame *f = &d->frames[k];

			fn[k] = f->raw ? dw_enc_str(&t, f->raw) | DW_BLOB_MANGLED
				       : dw_enc_str(&t, f->function);
			file[k] = f->file ? dw_enc_str(&t, f->file) : DW_BLOB_NO_FILE;
		}
	}
	size += t.bytes;
	out = malloc(size);
	if (!out)
		goto out;
	p = out;
	dw_put32(&p, DW_BLOB_MAGIC);
	dw_put32(&p, t.n);
	dw_put32(&p, d->nresults);
	for (i = 0; i < t.n; i++) {
		size_t n = strlen(t.list[i]);

		dw_put32(&p, (uint32_t)n);
		memcpy(p, t.list[i], n);
		p += n;
	}
	for (i = 0; i < d->nresults; i++) {
		const struct dw_result *r = &d->results[order[i]];

		dw_put32(&p, (uint32_t)r->vaddr);
		dw_put32(&p, (uint32_t)(r->vaddr >> 32));
		dw_put32(&p, r->n);
		for (k = r->first; k < r->first + r->n; k++) {
			dw_put32(&p, fn[k]);
			dw_put32(&p, file[k]);
			dw_put32(&p, d->frames[k].line);
		}
	}
	*blob = out;
	*len = size;
	d->changed = false;
	err = 0;
out:
	free(t.slots);
	free(t.ids);
	free(t.list);
	free(order);
	free(fn);
	free(file);
	return err;
}

/* One string of a blob being loaded: where it is, and its interned forms. */
struct dw_blob_str {
	const uint8_t *p;
	uint32_t len;
	const char *plain;     /* interned as it is, or NULL (not yet) */
	const char *demangled; /* the name it gives as a linkage name, or NULL (not yet) */
};

/*
 * Checks a whole blob: the string table (filled into strs, nstrings of
 * them) and every result. Returns 0 or -EBADMSG.
 */
static int dw_blob_check(const uint8_t *b, size_t len, struct dw_blob_str *strs, uint32_t nstrings,
			 uint32_t nresults, size_t *results_at)
{
	size_t off = DW_BLOB_HDR, frames = 0;
	uint64_t prev = 0;
	uint32_t i, k, n, x;

	for (i = 0; i < nstrings; i++) {
		if (len - off < 4)
			return -EBADMSG;
		n = dw_get32(b + off);
		off += 4;
		if (n > SYMB_DWARF_NAME_MAX || len - off < n || memchr(b + off, '\0', n))
			return -EBADMSG;
		strs[i] = (struct dw_blob_str){b + off, n, NULL, NULL};
		off += n;
	}
	*results_at = off;
	for (i = 0; i < nresults; i++) {
		uint64_t vaddr;

		if (len - off < DW_BLOB_RESULT)
			return -EBADMSG;
		vaddr = dw_get64(b + off);
		n = dw_get32(b + off + 8);
		off += DW_BLOB_RESULT;
		if ((i && vaddr <= prev) || n > DW_MAX_FRAMES || (len - off) / DW_BLOB_FRAME < n)
			return -EBADMSG;
		prev = vaddr;
		frames += n;
		for (k = 0; k < n; k++, off += DW_BLOB_FRAME) {
			x = dw_get32(b + off);
			if ((x & ~DW_BLOB_MANGLED) >= nstrings)
				return -EBADMSG;
			x = dw_get32(b + off + 4);
			if (x != DW_BLOB_NO_FILE && x >= nstrings)
				return -EBADMSG;
		}
	}
	if (off != len || frames > DW_MAX_RESULT_FRAMES)
		return -EBADMSG;
	return 0;
}

/* String i of a blob, interned (demangled: the name it gives as a linkage name). */
static const char *dw_blob_string(struct symb_dwarf *d, struct dw_blob_str *s, bool demangled)
{
	char buf[SYMB_DWARF_NAME_MAX + 1];

	if (!s->plain) {
		memcpy(buf, s->p, s->len);
		buf[s->len] = '\0';
		s->plain = dw_intern(d, buf);
		if (!s->plain)
			return NULL;
	}
	if (!demangled)
		return s->plain;
	if (!s->demangled)
		s->demangled = dw_linkage_name(d, s->plain);
	return s->demangled;
}

int symb_dwarf__load_lines(struct symb_dwarf *d, const uint8_t *blob, size_t len)
{
	struct dw_frame frames[DW_MAX_FRAMES];
	struct dw_blob_str *strs = NULL;
	uint32_t nstrings, nresults, i, k, n, x;
	size_t off;
	int err;

	if (!d || (!blob && len))
		return -EINVAL;
	if (len < DW_BLOB_HDR || dw_get32(blob) != DW_BLOB_MAGIC)
		return -EBADMSG;
	nstrings = dw_get32(blob + 4);
	nresults = dw_get32(blob + 8);
	/* each string takes 4 bytes at least, each result 12 */
	if (nstrings > (len - DW_BLOB_HDR) / 4 || nresults > (len - DW_BLOB_HDR) / DW_BLOB_RESULT ||
	    nresults > DW_MAX_RESULTS)
		return -EBADMSG;
	strs = calloc(nstrings ? nstrings : 1, sizeof(*strs));
	if (!strs)
		return -ENOMEM;
	err = dw_blob_check(blob, len, strs, nstrings, nresults, &off);
	for (i = 0; !err && i < nresults; i++) {
		uint64_t vaddr = dw_get64(blob + off);

		n = dw_get32(blob + off + 8);
		off += DW_BLOB_RESULT;
		for (k = 0; k < n; k++, off += DW_BLOB_FRAME) {
			struct dw_frame *f = &frames[k];

			x = dw_get32(blob + off);
			f->function =
				dw_blob_string(d, &strs[x & ~DW_BLOB_MANGLED], x & DW_BLOB_MANGLED);
			f->raw = x & DW_BLOB_MANGLED ? strs[x & ~DW_BLOB_MANGLED].plain : NULL;
			x = dw_get32(blob + off + 4);
			f->file = x == DW_BLOB_NO_FILE ? NULL : dw_blob_string(d, &strs[x], false);
			f->line = dw_get32(blob + off + 8);
			if (!f->function || (x != DW_BLOB_NO_FILE && !f->file))
				err = -ENOMEM; /* the arena is full */
		}
		/* what this object found itself stays; so does what was loaded before */
		if (!err && !dw_result_find(d, vaddr) && !dw_result_add(d, vaddr, frames, n))
			err = -ENOMEM;
	}
	free(strs);
	return err;
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

/* The named section, or NULL. */
static Elf_Scn *dw_section(Elf *e, const char *want)
{
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		name = gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

/* The next allocated section after *scn (NULL: the first); false at the end. */
static bool dw_next_alloc(Elf *e, size_t shstrndx, Elf_Scn **scn, GElf_Shdr *sh, const char **name)
{
	while ((*scn = elf_nextscn(e, *scn))) {
		if (!gelf_getshdr(*scn, sh) || !(sh->sh_flags & SHF_ALLOC))
			continue;
		*name = elf_strptr(e, shstrndx, sh->sh_name);
		return true;
	}
	return false;
}

/* objcopy --only-keep-debug keeps every section header, allocated ones as NOBITS. */
static bool dw_same_alloc_sections(Elf *bin, Elf *dbg)
{
	Elf_Scn *a = NULL, *b = NULL;
	size_t sa, sb, n = 0;
	const char *na, *nb;
	GElf_Shdr ha, hb;
	bool more_a, more_b;

	if (elf_getshdrstrndx(bin, &sa) || elf_getshdrstrndx(dbg, &sb))
		return false;
	for (;;) {
		more_a = dw_next_alloc(bin, sa, &a, &ha, &na);
		more_b = dw_next_alloc(dbg, sb, &b, &hb, &nb);
		if (!more_a || !more_b)
			return !more_a && !more_b && n > 0;
		if (!na || !nb || strcmp(na, nb) || ha.sh_addr != hb.sh_addr ||
		    ha.sh_size != hb.sh_size)
			return false;
		n++;
	}
}

int symb_debug_file_match(Elf *bin, Elf *dbg, const void *dbg_file, size_t dbg_len)
{
	GElf_Word crc;

	if (!bin || !dbg || (!dbg_file && dbg_len))
		return 0;
	if (dwelf_elf_gnu_debuglink(bin, &crc))
		return libdeflate_crc32(0, dbg_file, dbg_len) == crc;
	/* a .gnu_debuglink libdwelf cannot read still names a CRC: none matches */
	if (dw_section(bin, ".gnu_debuglink"))
		return 0;
	return dw_same_alloc_sections(bin, dbg);
}
