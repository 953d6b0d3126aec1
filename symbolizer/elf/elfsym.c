// SPDX-License-Identifier: MIT
/*
 * ELF symbol lookup (see elfsym.h for the contract).
 *
 * Open does all the work in one pass through libelf and then drops libelf:
 * the object keeps three flat arrays (address ranges, names, PT_LOAD
 * segments) and the build-id, so it holds no fd or mapping, and lookups are
 * read-only and safe from several threads at once.
 *
 * Symbols are turned into disjoint address ranges at open time. Where
 * functions overlap (an assembler routine nested inside another, or a
 * zero-size label inside a sized function), each address belongs to the
 * containing symbol with the greatest start, which is what the header
 * promises; flattening the overlaps once makes every lookup a single binary
 * search instead of a walk back over enclosing symbols.
 *
 * ELF32 and ELF64 files of either byte order are supported (gelf_* hides the
 * class, notes are decoded by hand with the file's byte order). Only ET_EXEC
 * and ET_DYN files are accepted: relocatable objects and core files have no
 * meaningful symbol addresses for a profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elfsym.h"
#include "lowprof/log.h"

/*
 * Longest build-id kept. Linkers emit 8 (lld "fast"), 16 (md5, uuid) or 20
 * (sha1) bytes; a longer descriptor only comes from --build-id=0x<hex> and is
 * ignored rather than truncated, so two different ids never compare equal.
 */
#define ELFSYM_BUILD_ID_MAX 64
/*
 * Note areas (PT_NOTE segments plus SHT_NOTE sections) examined for the
 * build-id, and the largest one read. Real binaries have a handful of small
 * notes; the caps keep a crafted file with thousands of huge PT_NOTE entries
 * from making open read the file thousands of times.
 */
#define ELFSYM_MAX_NOTE_AREAS 32
#define ELFSYM_MAX_NOTE_SIZE  (1u << 20)
/*
 * Bytes of two names compared when symbols share an address and a binding.
 * Past this the string table offset decides, which keeps the order
 * deterministic while bounding the sort's cost on crafted files whose
 * symbols all share one address and a long common name prefix.
 */
#define ELFSYM_NAME_CMP_MAX 256

struct elfsym_range {
	uint64_t lo; /* [lo, hi): the addresses this range resolves */
	uint64_t hi;
	uint64_t start; /* start of the symbol owning the range, for sym_off */
	size_t name;	/* offset of the symbol's name in symb_elf.names */
};

struct elfsym_seg {
	uint64_t off;
	uint64_t filesz; /* > 0, and off + filesz does not wrap */
	uint64_t vaddr;
};

struct symb_elf {
	struct elfsym_range *ranges; /* sorted by lo, disjoint */
	size_t nranges;
	size_t nsyms;  /* distinct function start addresses */
	char *names;   /* NUL-terminated names, referenced by ranges */
	uint8_t *blob; /* decoded from a blob it took: names point into it; NULL: names own */
	struct elfsym_seg *segs;
	size_t nsegs;
	size_t build_id_len; /* 0: none */
	uint8_t build_id[ELFSYM_BUILD_ID_MAX];
};

/* One symbol table being read: its entries and its string table. */
struct elfsym_table {
	Elf_Data *syms;
	size_t count;
	const char *strs;
	size_t strsz;
	size_t last_nul; /* index of the table's last NUL: names past it are unterminated */
};

/* A function symbol while the index is built. */
struct elfsym_raw {
	uint64_t start;
	uint64_t size;	  /* st_size; after elfsym_set_ends, the end address */
	uint64_t limit;	  /* end of the symbol's section if known (zero-size only), else 0 */
	const char *name; /* inside the string table, known to be NUL-terminated */
	size_t name_off;  /* offset of the copied name in the arena */
	int rank;	  /* binding preference, lower wins */
};

static pthread_once_t elfsym_once = PTHREAD_ONCE_INIT;
static bool elfsym_libelf_ok;

/* elf_version() sets libelf's global state: once per process, not per open. */
static void elfsym_init_libelf(void)
{
	elfsym_libelf_ok = elf_version(EV_CURRENT) != EV_NONE;
}

static int elfsym_bind_rank(int bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	case STB_LOCAL:
		return 2;
	default:
		return 3;
	}
}

static uint32_t elfsym_rd32(const unsigned char *p, bool msb)
{
	if (msb)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static size_t elfsym_align_up(size_t v, size_t align)
{
	return (v + align - 1) & ~(align - 1);
}

/*
 * Looks for the GNU build-id in one note area of size bytes (size <=
 * ELFSYM_MAX_NOTE_SIZE, so the arithmetic below cannot wrap). A note is a
 * 12-byte header, then the name and the descriptor, each starting on an
 * align boundary of the area (align is 8 for areas aligned to 8, such as
 * .note.gnu.property on 64-bit targets, else 4). Every size is checked
 * against what is left of the area; a malformed note ends the scan of its
 * area. Returns true and stores the id if found.
 */
static bool elfsym_scan_notes(struct symb_elf *e, const unsigned char *p, size_t size, size_t align,
			      bool msb)
{
	size_t off = 0;

	while (size - off >= 12) {
		size_t namesz = elfsym_rd32(p + off, msb);
		size_t descsz = elfsym_rd32(p + off + 4, msb);
		uint32_t type = elfsym_rd32(p + off + 8, msb);
		size_t name_off = off + 12;
		size_t desc_off;

		if (namesz > size - name_off)
			return false;
		desc_off = elfsym_align_up(name_off + namesz, align);
		if (desc_off > size || descsz > size - desc_off)
			return false;
		if (type == NT_GNU_BUILD_ID && namesz == 4 && !memcmp(p + name_off, "GNU", 4) &&
		    descsz > 0 && descsz <= ELFSYM_BUILD_ID_MAX) {
			memcpy(e->build_id, p + desc_off, descsz);
			e->build_id_len = descsz;
			return true;
		}
		off = elfsym_align_up(desc_off + descsz, align);
		if (off >= size)
			return false;
	}
	return false;
}

/* PT_NOTE segments first (what the loader maps), then SHT_NOTE sections. */
static void elfsym_load_build_id(struct symb_elf *e, Elf *elf, bool msb)
{
	unsigned int areas = 0;
	Elf_Scn *scn = NULL;
	size_t phnum, i;
	Elf_Data *data;
	GElf_Shdr sh;
	GElf_Phdr ph;

	if (elf_getphdrnum(elf, &phnum) < 0)
		phnum = 0;
	for (i = 0; i < phnum && areas < ELFSYM_MAX_NOTE_AREAS; i++) {
		if (!gelf_getphdr(elf, i, &ph))
			break;
		if (ph.p_type != PT_NOTE)
			continue;
		areas++;
		if (ph.p_filesz == 0 || ph.p_filesz > ELFSYM_MAX_NOTE_SIZE)
			continue;
		/* libelf checks the range against the file's size. */
		data = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		if (data && data->d_buf &&
		    elfsym_scan_notes(e, data->d_buf, data->d_size, ph.p_align == 8 ? 8 : 4, msb))
			return;
	}
	while ((scn = elf_nextscn(elf, scn)) && areas < ELFSYM_MAX_NOTE_AREAS) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    (sh.sh_flags & SHF_COMPRESSED))
			continue;
		areas++;
		if (sh.sh_size == 0 || sh.sh_size > ELFSYM_MAX_NOTE_SIZE)
			continue;
		/* Raw bytes: the notes are decoded with the file's byte order above. */
		data = elf_rawdata(scn, NULL);
		if (data && data->d_buf && data->d_size <= ELFSYM_MAX_NOTE_SIZE &&
		    elfsym_scan_notes(e, data->d_buf, data->d_size, sh.sh_addralign == 8 ? 8 : 4,
				      msb))
			return;
	}
}

/*
 * Keeps the PT_LOAD segments that map file bytes. Two passes so the array is
 * sized by what is there, not by a program header count read from the file.
 */
static int elfsym_load_segments(struct symb_elf *e, Elf *elf)
{
	size_t phnum, i, n = 0;
	GElf_Phdr ph;
	int pass;

	if (elf_getphdrnum(elf, &phnum) < 0)
		return 0; /* no usable program headers: no offset can be mapped */
	for (pass = 0; pass < 2; pass++) {
		for (i = 0; i < phnum; i++) {
			if (!gelf_getphdr(elf, i, &ph))
				break;
			if (ph.p_type != PT_LOAD || ph.p_filesz == 0 ||
			    ph.p_filesz > UINT64_MAX - ph.p_offset)
				continue;
			if (pass == 1) {
				e->segs[e->nsegs].off = ph.p_offset;
				e->segs[e->nsegs].filesz = ph.p_filesz;
				e->segs[e->nsegs].vaddr = ph.p_vaddr;
				e->nsegs++;
			} else {
				n++;
			}
		}
		if (pass == 0) {
			if (n == 0)
				return 0;
			e->segs = calloc(n, sizeof(*e->segs));
			if (!e->segs)
				return -ENOMEM;
		}
	}
	return 0;
}

/*
 * Validates a symbol table and its string table (sh_link): types, entry
 * size, compression, and that libelf could read both. Returns 0 or -ENOEXEC.
 */
static int elfsym_table_open(Elf *elf, Elf_Scn *scn, struct elfsym_table *t)
{
	size_t entsz = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	Elf_Data *strdata;
	GElf_Shdr sh, strsh;
	Elf_Scn *strscn;
	const char *nul;

	if (!gelf_getshdr(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED) || entsz == 0 ||
	    sh.sh_entsize != entsz)
		return -ENOEXEC;
	/* Section 0 is SHT_NULL, so sh_link 0 fails the type check too. */
	strscn = elf_getscn(elf, sh.sh_link);
	if (!strscn || !gelf_getshdr(strscn, &strsh) || strsh.sh_type != SHT_STRTAB ||
	    (strsh.sh_flags & SHF_COMPRESSED))
		return -ENOEXEC;
	strdata = elf_getdata(strscn, NULL);
	t->syms = elf_getdata(scn, NULL);
	if (!strdata || !strdata->d_buf || strdata->d_size == 0 || !t->syms || !t->syms->d_buf ||
	    t->syms->d_type != ELF_T_SYM)
		return -ENOEXEC;
	/* d_size is what libelf read and checked against the file's size. */
	t->count = t->syms->d_size / entsz;
	t->strs = strdata->d_buf;
	t->strsz = strdata->d_size;
	nul = memrchr(t->strs, '\0', t->strsz);
	if (!nul)
		return -ENOEXEC;
	t->last_nul = nul - t->strs;
	return 0;
}

/*
 * End of the section holding a symbol at start, if section shndx is a real
 * section that contains start; else 0 (a real end is always > start >= 0).
 */
static uint64_t elfsym_section_end(Elf *elf, size_t shndx, uint64_t start)
{
	GElf_Shdr sh;
	Elf_Scn *scn;

	if (shndx == SHN_UNDEF || shndx >= SHN_LORESERVE)
		return 0;
	scn = elf_getscn(elf, shndx);
	if (!scn || !gelf_getshdr(scn, &sh))
		return 0;
	if (start < sh.sh_addr || start - sh.sh_addr >= sh.sh_size)
		return 0;
	if (sh.sh_size > UINT64_MAX - sh.sh_addr)
		return UINT64_MAX;
	return sh.sh_addr + sh.sh_size;
}

/* Reads entry i; true if it is a defined, named function symbol. */
static bool elfsym_read_sym(Elf *elf, const struct elfsym_table *t, size_t i, struct elfsym_raw *r)
{
	GElf_Sym sym;
	int type;

	if (!gelf_getsym(t->syms, i, &sym))
		return false;
	type = GELF_ST_TYPE(sym.st_info);
	if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
		return false;
	/* Ranges are [start, end) with end > start, so start must leave room. */
	if (sym.st_value == UINT64_MAX)
		return false;
	/* In the table, NUL-terminated within it, and not empty. */
	if (sym.st_name >= t->strsz || sym.st_name > t->last_nul || t->strs[sym.st_name] == '\0')
		return false;
	r->start = sym.st_value;
	r->size = sym.st_size;
	r->limit = sym.st_size ? 0 : elfsym_section_end(elf, sym.st_shndx, sym.st_value);
	r->name = t->strs + sym.st_name;
	r->rank = elfsym_bind_rank(GELF_ST_BIND(sym.st_info));
	/*
	 * a versioned alias (".symver": "__libc_start_main@@GLIBC_2.34") names
	 * the function last: the plain name at that address is the one DWARF
	 * and perf show
	 */
	if (strchr(r->name, '@'))
		r->rank += 4;
	return true;
}

/*
 * Address, then binding (GLOBAL > WEAK > LOCAL, versioned aliases last), then
 * name: the first of a group wins.
 */
static int elfsym_raw_cmp(const void *pa, const void *pb)
{
	const struct elfsym_raw *a = pa, *b = pb;
	int c;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->name == b->name)
		return 0;
	c = strncmp(a->name, b->name, ELFSYM_NAME_CMP_MAX);
	if (c)
		return c;
	return a->name < b->name ? -1 : 1;
}

/*
 * Collapses each group of symbols at one address into its first (best)
 * entry, with the group's largest size, so an alias without a size does not
 * hide its sized twin. Returns the new count.
 */
static size_t elfsym_dedup(struct elfsym_raw *raw, size_t n)
{
	size_t i, j, k = 0;

	for (i = 0; i < n; i = j) {
		uint64_t size = raw[i].size;

		for (j = i + 1; j < n && raw[j].start == raw[i].start; j++) {
			if (raw[j].size > size)
				size = raw[j].size;
		}
		raw[k] = raw[i];
		raw[k].size = size;
		if (size)
			raw[k].limit = 0;
		k++;
	}
	return k;
}

/*
 * Turns sizes into end addresses (raw sorted, starts distinct). A zero-size
 * symbol runs to the next symbol's start, cut at its section's end; the last
 * one with no known section covers its first byte only.
 */
static void elfsym_set_ends(struct elfsym_raw *raw, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		struct elfsym_raw *r = &raw[i];
		bool bounded = i + 1 < n;
		uint64_t end = bounded ? raw[i + 1].start : UINT64_MAX;

		if (r->size) {
			r->size = r->size > UINT64_MAX - r->start ? UINT64_MAX : r->start + r->size;
			continue;
		}
		if (r->limit && r->limit < end) {
			end = r->limit;
			bounded = true;
		}
		r->size = bounded ? end : r->start + 1;
	}
}

static int elfsym_name_ptr_cmp(const void *pa, const void *pb)
{
	const char *a = (*(struct elfsym_raw *const *)pa)->name;
	const char *b = (*(struct elfsym_raw *const *)pb)->name;

	return a < b ? -1 : a > b;
}

/*
 * Copies the names into one arena. Names are visited in string table order
 * and a name that starts inside the previous copied one (a suffix shared by
 * the linker's tail merging, or the same offset twice) reuses that copy, so
 * every string table byte is copied at most once: the arena is no bigger
 * than the string table, and the cost is linear in it however many symbols
 * share a name.
 */
static int elfsym_copy_names(struct symb_elf *e, struct elfsym_raw *raw, size_t n)
{
	struct elfsym_raw **by_name;
	size_t i, total = 0, prev_off = 0;
	const char *prev = NULL, *prev_end = NULL;
	int err = 0, pass;

	by_name = malloc(n * sizeof(*by_name));
	if (!by_name)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		by_name[i] = &raw[i];
	qsort(by_name, n, sizeof(*by_name), elfsym_name_ptr_cmp);
	/* Pass 0 sizes the arena, pass 1 fills it. */
	for (pass = 0; pass < 2; pass++) {
		prev = prev_end = NULL;
		total = 0;
		for (i = 0; i < n; i++) {
			struct elfsym_raw *r = by_name[i];
			size_t len;

			if (prev && r->name < prev_end) {
				r->name_off = prev_off + (r->name - prev);
				continue;
			}
			len = strlen(r->name) + 1;
			if (pass == 1)
				memcpy(e->names + total, r->name, len);
			r->name_off = total;
			prev = r->name;
			prev_end = r->name + len;
			prev_off = total;
			total += len;
		}
		if (pass == 0) {
			e->names = malloc(total);
			if (!e->names) {
				err = -ENOMEM;
				goto err_out;
			}
		}
	}
err_out:
	free(by_name);
	return err;
}

/*
 * Builds disjoint ranges from symbols sorted by distinct start, each with
 * end > start. At every address the open symbol with the greatest start
 * wins; symbols are opened in start order, so that is the top of a stack
 * whose expired entries are dropped lazily. Each step emits at most one range
 * ending at the next start and at most one per symbol leaving the stack, so
 * 2n + 1 ranges suffice.
 */
static int elfsym_flatten(struct symb_elf *e, const struct elfsym_raw *raw, size_t n)
{
	struct elfsym_range *ranges = NULL, *shrunk;
	size_t *stack = NULL, top = 0, nr = 0, i;
	uint64_t pos = 0;
	int err = 0;

	stack = malloc(n * sizeof(*stack));
	if (n > (SIZE_MAX / sizeof(*ranges) - 1) / 2) {
		err = -ENOMEM;
		goto err_out;
	}
	ranges = malloc((2 * n + 1) * sizeof(*ranges));
	if (!stack || !ranges) {
		err = -ENOMEM;
		goto err_out;
	}
	for (i = 0; i <= n; i++) {
		uint64_t lim = i < n ? raw[i].start : UINT64_MAX;

		while (top > 0 && pos < lim) {
			const struct elfsym_raw *t = &raw[stack[top - 1]];
			uint64_t hi;

			if (t->size <= pos) {
				top--;
				continue;
			}
			hi = t->size < lim ? t->size : lim;
			ranges[nr].lo = pos;
			ranges[nr].hi = hi;
			ranges[nr].start = t->start;
			ranges[nr].name = t->name_off;
			nr++;
			pos = hi;
		}
		if (i < n) {
			stack[top++] = i;
			pos = raw[i].start;
		}
	}
	shrunk = realloc(ranges, nr * sizeof(*ranges));
	e->ranges = shrunk ? shrunk : ranges;
	e->nranges = nr;
	ranges = NULL;
err_out:
	free(ranges);
	free(stack);
	return err;
}

/*
 * Indexes the function symbols of one table. A table that is unusable gives
 * no symbols rather than an error; only running out of memory fails.
 */
static int elfsym_load_table(struct symb_elf *e, Elf *elf, Elf_Scn *scn)
{
	struct elfsym_raw *raw = NULL;
	struct elfsym_table t;
	size_t n = 0, i;
	int err = 0;

	if (elfsym_table_open(elf, scn, &t) < 0) {
		lp_debug("elfsym: ignoring malformed symbol table in section %zu", elf_ndxscn(scn));
		return 0;
	}
	if (t.count == 0)
		return 0;
	/* count is bounded by the section's size, which libelf bounded by the file's. */
	raw = calloc(t.count, sizeof(*raw));
	if (!raw)
		return -ENOMEM;
	for (i = 0; i < t.count; i++) {
		if (elfsym_read_sym(elf, &t, i, &raw[n]))
			n++;
	}
	if (n == 0)
		goto err_out;
	qsort(raw, n, sizeof(*raw), elfsym_raw_cmp);
	n = elfsym_dedup(raw, n);
	elfsym_set_ends(raw, n);
	err = elfsym_copy_names(e, raw, n);
	if (err)
		goto err_out;
	err = elfsym_flatten(e, raw, n);
	if (err)
		goto err_out;
	e->nsyms = n;
err_out:
	free(raw);
	return err;
}

/* .symtab, or .dynsym when there is no .symtab or it holds no functions. */
static int elfsym_load_symbols(struct symb_elf *e, Elf *elf)
{
	Elf_Scn *scn = NULL, *symtab = NULL, *dynsym = NULL;
	GElf_Shdr sh;
	int err = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB && !symtab)
			symtab = scn;
		else if (sh.sh_type == SHT_DYNSYM && !dynsym)
			dynsym = scn;
	}
	if (symtab)
		err = elfsym_load_table(e, elf, symtab);
	if (!err && e->nsyms == 0 && dynsym)
		err = elfsym_load_table(e, elf, dynsym);
	return err;
}

/*
 * Builds the object from an open libelf handle, which the caller ends.
 * Only a bad ELF header or an unsupported type fails with -ENOEXEC; damage
 * elsewhere costs the affected table, segment or note.
 */
static int elfsym_load(Elf *elf, struct symb_elf **out)
{
	struct symb_elf *e = NULL;
	GElf_Ehdr ehdr;
	const char *ident;
	bool msb;
	int err;

	ident = elf_getident(elf, NULL);
	if (elf_kind(elf) != ELF_K_ELF || !ident || !gelf_getehdr(elf, &ehdr) ||
	    (ehdr.e_type != ET_EXEC && ehdr.e_type != ET_DYN) ||
	    (ident[EI_DATA] != ELFDATA2LSB && ident[EI_DATA] != ELFDATA2MSB)) {
		err = -ENOEXEC;
		goto err_out;
	}
	msb = ident[EI_DATA] == ELFDATA2MSB;
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto err_out;
	}
	err = elfsym_load_segments(e, elf);
	if (err)
		goto err_out;
	elfsym_load_build_id(e, elf, msb);
	err = elfsym_load_symbols(e, elf);
	if (err)
		goto err_out;
	*out = e;
	return 0;
err_out:
	symb_elf__free(e);
	return err;
}

struct symb_elf *symb_elf__open_fd(int fd)
{
	struct symb_elf *e = NULL;
	Elf *elf = NULL;
	struct stat st;
	int err;

	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto err_out;
	}
	/* pread on a pipe or device would fail or never end; only files are ELF images here. */
	if (!S_ISREG(st.st_mode)) {
		err = -ENOEXEC;
		goto err_out;
	}
	pthread_once(&elfsym_once, elfsym_init_libelf);
	if (!elfsym_libelf_ok) {
		err = -ENOEXEC;
		goto err_out;
	}
	/*
	 * ELF_C_READ reads what is needed with pread into libelf's own buffers:
	 * unlike ELF_C_READ_MMAP, a file truncated while it is read gives an
	 * error instead of SIGBUS, and only the tables used are read.
	 */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf) {
		err = -ENOEXEC;
		goto err_out;
	}
	err = elfsym_load(elf, &e);
	if (err)
		goto err_out;
	elf_end(elf);
	return e;
err_out:
	elf_end(elf);
	errno = -err;
	return NULL;
}

struct symb_elf *symb_elf__open_elf(Elf *elf)
{
	struct symb_elf *e = NULL;
	int err;

	pthread_once(&elfsym_once, elfsym_init_libelf);
	err = elfsym_libelf_ok ? elfsym_load(elf, &e) : -ENOEXEC;
	if (err) {
		errno = -err;
		return NULL;
	}
	return e;
}

int symb_elf__adopt_segments(struct symb_elf *dst, const struct symb_elf *src)
{
	struct elfsym_seg *segs = NULL;

	if (src->nsegs) {
		segs = calloc(src->nsegs, sizeof(*segs));
		if (!segs)
			return -ENOMEM;
		memcpy(segs, src->segs, src->nsegs * sizeof(*segs));
	}
	free(dst->segs);
	dst->segs = segs;
	dst->nsegs = src->nsegs;
	return 0;
}

struct symb_elf *symb_elf__open(const char *path)
{
	struct symb_elf *e;
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	e = symb_elf__open_fd(fd);
	err = errno;
	close(fd);
	errno = err;
	return e;
}

struct symb_elf *symb_elf__open_mem(const void *image, size_t len)
{
	struct symb_elf *e = NULL;
	Elf *elf = NULL;
	char *copy;
	int err;

	/* libelf takes a writable buffer and reads it until elf_end: give it a private copy. */
	copy = malloc(len ? len : 1);
	if (!copy) {
		err = -ENOMEM;
		goto err_out;
	}
	if (len)
		memcpy(copy, image, len);
	pthread_once(&elfsym_once, elfsym_init_libelf);
	if (!elfsym_libelf_ok) {
		err = -ENOEXEC;
		goto err_out;
	}
	elf = elf_memory(copy, len);
	if (!elf) {
		err = -ENOEXEC;
		goto err_out;
	}
	err = elfsym_load(elf, &e);
err_out:
	elf_end(elf);
	free(copy);
	if (err) {
		errno = -err;
		return NULL;
	}
	return e;
}

void symb_elf__free(struct symb_elf *e)
{
	if (!e)
		return;
	free(e->ranges);
	if (e->blob)
		free(e->blob);
	else
		free(e->names);
	free(e->segs);
	free(e);
}

size_t symb_elf__nsyms(const struct symb_elf *e)
{
	return e->nsyms;
}

size_t symb_elf__build_id(const struct symb_elf *e, uint8_t *buf, size_t len)
{
	if (buf && len)
		memcpy(buf, e->build_id, len < e->build_id_len ? len : e->build_id_len);
	return e->build_id_len;
}

/* Linear: a binary has a handful of PT_LOAD segments, in program header order. */
int symb_elf__offset_to_vaddr(const struct symb_elf *e, uint64_t off, uint64_t *vaddr)
{
	size_t i;

	for (i = 0; i < e->nsegs; i++) {
		const struct elfsym_seg *s = &e->segs[i];

		if (off >= s->off && off - s->off < s->filesz) {
			*vaddr = s->vaddr + (off - s->off);
			return 0;
		}
	}
	return -ENOENT;
}

const char *symb_elf__symbolize(const struct symb_elf *e, uint64_t vaddr, uint64_t *sym_off)
{
	const struct elfsym_range *r;
	size_t lo = 0, hi = e->nranges;

	/* First range starting above vaddr; the one before it is the candidate. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (e->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	r = &e->ranges[lo - 1];
	if (vaddr >= r->hi)
		return NULL;
	if (sym_off)
		*sym_off = vaddr - r->start;
	return e->names + r->name;
}

/*
 * Blob form (symb_elf__encode / symb_elf__decode), all integers unsigned
 * LEB128 varints unless noted:
 *
 *   "LPSY" (4 bytes), SYMB_ELF_BLOB_VERSION (u32 little-endian)
 *   nsegs, build_id_len, nranges, nsyms, names_len
 *   nsegs x { off, filesz, vaddr }
 *   build_id_len raw bytes
 *   nranges x { lo - prev_hi, hi - lo - 1, lo - start, name }  (prev_hi 0 first)
 *   names_len raw bytes: the name arena, ending with a NUL
 *
 * Ranges are stored as gaps from the previous range, so sorted, disjoint
 * and non-empty hold by construction once the sums are checked not to wrap;
 * decode checks the rest: counts against the bytes left, segments as
 * elfsym_load_segments keeps them, names inside the arena and not empty,
 * nsyms consistent with the ranges, and no byte left over.
 */
#define ELFSYM_BLOB_MAGIC "LPSY"
#define ELFSYM_VARINT_MAX 10

static uint8_t *elfsym_put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

/* Length of the name arena: the end of the last name any range references. */
static size_t elfsym_names_len(const struct symb_elf *e)
{
	size_t i, len = 0;

	for (i = 0; i < e->nranges; i++) {
		size_t end = e->ranges[i].name + strlen(e->names + e->ranges[i].name) + 1;

		if (end > len)
			len = end;
	}
	return len;
}

int symb_elf__encode(const struct symb_elf *e, uint8_t **blob, size_t *len)
{
	size_t names_len = elfsym_names_len(e), cap, i;
	uint64_t prev_hi = 0;
	uint8_t *buf, *p, *shrunk;

	/* Upper bound; the counts come from memory that already holds them. */
	cap = 8 + 5 * ELFSYM_VARINT_MAX + e->nsegs * 3 * ELFSYM_VARINT_MAX + e->build_id_len +
	      e->nranges * 4 * ELFSYM_VARINT_MAX + names_len;
	buf = malloc(cap);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, ELFSYM_BLOB_MAGIC, 4);
	buf[4] = SYMB_ELF_BLOB_VERSION & 0xff;
	buf[5] = (SYMB_ELF_BLOB_VERSION >> 8) & 0xff;
	buf[6] = (SYMB_ELF_BLOB_VERSION >> 16) & 0xff;
	buf[7] = (SYMB_ELF_BLOB_VERSION >> 24) & 0xff;
	p = buf + 8;
	p = elfsym_put_varint(p, e->nsegs);
	p = elfsym_put_varint(p, e->build_id_len);
	p = elfsym_put_varint(p, e->nranges);
	p = elfsym_put_varint(p, e->nsyms);
	p = elfsym_put_varint(p, names_len);
	for (i = 0; i < e->nsegs; i++) {
		p = elfsym_put_varint(p, e->segs[i].off);
		p = elfsym_put_varint(p, e->segs[i].filesz);
		p = elfsym_put_varint(p, e->segs[i].vaddr);
	}
	memcpy(p, e->build_id, e->build_id_len);
	p += e->build_id_len;
	for (i = 0; i < e->nranges; i++) {
		const struct elfsym_range *r = &e->ranges[i];

		p = elfsym_put_varint(p, r->lo - prev_hi);
		p = elfsym_put_varint(p, r->hi - r->lo - 1);
		p = elfsym_put_varint(p, r->lo - r->start);
		p = elfsym_put_varint(p, r->name);
		prev_hi = r->hi;
	}
	if (names_len)
		memcpy(p, e->names, names_len);
	p += names_len;
	*len = p - buf;
	shrunk = realloc(buf, *len);
	*blob = shrunk ? shrunk : buf;
	return 0;
}

/* A bounded reader over the blob: every read checks what is left. */
struct elfsym_rd {
	const uint8_t *p, *end;
};

/* Canonical-length LEB128 up to 64 bits; false on truncation or overflow. */
static bool elfsym_get_varint(struct elfsym_rd *rd, uint64_t *v)
{
	uint64_t x = 0;
	unsigned int shift = 0;

	while (rd->p < rd->end) {
		uint8_t b = *rd->p++;

		if (shift == 63 && b > 1)
			return false;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			/* A zero last byte after the first is an overlong encoding. */
			if (b == 0 && shift)
				return false;
			*v = x;
			return true;
		}
		shift += 7;
		if (shift > 63)
			return false;
	}
	return false;
}

/* A count of items of at least min_bytes each that fits in what is left. */
static bool elfsym_get_count(struct elfsym_rd *rd, size_t min_bytes, size_t *n)
{
	uint64_t v;

	if (!elfsym_get_varint(rd, &v) || v > (uint64_t)(rd->end - rd->p) / min_bytes)
		return false;
	*n = v;
	return true;
}

static int elfsym_decode_segs(struct symb_elf *e, struct elfsym_rd *rd)
{
	size_t i;

	if (!e->nsegs)
		return 0;
	e->segs = calloc(e->nsegs, sizeof(*e->segs));
	if (!e->segs)
		return -ENOMEM;
	for (i = 0; i < e->nsegs; i++) {
		struct elfsym_seg *s = &e->segs[i];

		if (!elfsym_get_varint(rd, &s->off) || !elfsym_get_varint(rd, &s->filesz) ||
		    !elfsym_get_varint(rd, &s->vaddr))
			return -EBADMSG;
		if (s->filesz == 0 || s->filesz > UINT64_MAX - s->off)
			return -EBADMSG;
	}
	return 0;
}

static int elfsym_decode_ranges(struct symb_elf *e, struct elfsym_rd *rd, size_t names_len)
{
	uint64_t prev_hi = 0, gap, span, back, name;
	size_t i;

	if (!e->nranges)
		return 0;
	e->ranges = malloc(e->nranges * sizeof(*e->ranges));
	if (!e->ranges)
		return -ENOMEM;
	for (i = 0; i < e->nranges; i++) {
		struct elfsym_range *r = &e->ranges[i];

		if (!elfsym_get_varint(rd, &gap) || !elfsym_get_varint(rd, &span) ||
		    !elfsym_get_varint(rd, &back) || !elfsym_get_varint(rd, &name))
			return -EBADMSG;
		/* lo >= prev_hi and hi > lo, neither wrapping; start <= lo. */
		if (gap > UINT64_MAX - prev_hi)
			return -EBADMSG;
		r->lo = prev_hi + gap;
		if (span >= UINT64_MAX - r->lo || back > r->lo || name >= names_len)
			return -EBADMSG;
		r->hi = r->lo + span + 1;
		r->start = r->lo - back;
		r->name = name;
		prev_hi = r->hi;
	}
	return 0;
}

/*
 * The arena ends with a NUL, so every offset inside it starts a terminated
 * name. In a blob e took (e->blob) the names stay where they are.
 */
static int elfsym_decode_names(struct symb_elf *e, struct elfsym_rd *rd, size_t names_len)
{
	size_t i;

	if (!names_len)
		return 0;
	if (rd->p[names_len - 1] != '\0')
		return -EBADMSG;
	if (e->blob) {
		e->names = (char *)e->blob + (rd->p - e->blob);
	} else {
		e->names = malloc(names_len);
		if (!e->names)
			return -ENOMEM;
		memcpy(e->names, rd->p, names_len);
	}
	rd->p += names_len;
	for (i = 0; i < e->nranges; i++) {
		if (e->names[e->ranges[i].name] == '\0')
			return -EBADMSG;
	}
	return 0;
}

/* See symb_elf__decode; take: blob is malloc'd and becomes e's (freed on failure). */
static struct symb_elf *elfsym_decode(const uint8_t *blob, size_t len, bool take)
{
	struct elfsym_rd rd = {blob, blob + len};
	struct symb_elf *e = NULL;
	size_t names_len;
	int err = -EBADMSG;

	if (len < 8 || memcmp(blob, ELFSYM_BLOB_MAGIC, 4) ||
	    (uint32_t)(blob[4] | blob[5] << 8 | blob[6] << 16 | (uint32_t)blob[7] << 24) !=
		    SYMB_ELF_BLOB_VERSION)
		goto err_out;
	rd.p += 8;
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = -ENOMEM;
		goto err_out;
	}
	if (take) {
		e->blob = (uint8_t *)blob;
		take = false; /* freed with e from here on */
	}
	/* Minimum encoded sizes: 3 bytes a segment, 4 a range, 1 a byte. */
	if (!elfsym_get_count(&rd, 3, &e->nsegs) || !elfsym_get_count(&rd, 1, &e->build_id_len) ||
	    !elfsym_get_count(&rd, 4, &e->nranges) || !elfsym_get_count(&rd, 1, &e->nsyms) ||
	    !elfsym_get_count(&rd, 1, &names_len))
		goto err_out;
	/* Every symbol owns at least one range, and a range's name is in the arena. */
	if (e->build_id_len > ELFSYM_BUILD_ID_MAX || e->nsyms > e->nranges ||
	    (e->nsyms == 0) != (e->nranges == 0) || (names_len == 0) != (e->nranges == 0))
		goto err_out;
	err = elfsym_decode_segs(e, &rd);
	if (err)
		goto err_out;
	err = -EBADMSG;
	if ((size_t)(rd.end - rd.p) < e->build_id_len)
		goto err_out;
	memcpy(e->build_id, rd.p, e->build_id_len);
	rd.p += e->build_id_len;
	err = elfsym_decode_ranges(e, &rd, names_len);
	if (err)
		goto err_out;
	err = -EBADMSG;
	if ((size_t)(rd.end - rd.p) != names_len)
		goto err_out;
	err = elfsym_decode_names(e, &rd, names_len);
	if (err)
		goto err_out;
	return e;
err_out:
	symb_elf__free(e);
	if (take)
		free((uint8_t *)blob);
	errno = -err;
	return NULL;
}

struct symb_elf *symb_elf__decode(const uint8_t *blob, size_t len)
{
	return elfsym_decode(blob, len, false);
}

struct symb_elf *symb_elf__decode_take(uint8_t *blob, size_t len)
{
	return elfsym_decode(blob, len, true);
}
