// SPDX-License-Identifier: MIT
/*
 * Unit tests of symbolizer/dwarf/dwarf.c and demangle.c against fixtures built
 * from dwarf_fixture.c and dwarf_fixture.cc (see CMakeLists.txt). Addresses
 * come from marker symbols the fixture defines inside inlined code; the
 * expected lines are the ones marked in dwarf_fixture.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "debuginfo.h"

/* Lines of dwarf_fixture.c */
#define LINE_LEAF_BODY	13 /* fx_mark_leaf, in fx_leaf */
#define LINE_MID_CALL	19 /* fx_mid calls fx_leaf */
#define LINE_MID_BODY	20 /* fx_mark_mid, in fx_mid */
#define LINE_OUTER_CALL 27 /* fx_outer calls fx_mid */
#define LINE_OUTER_BODY 28 /* fx_mark_outer, in fx_outer */

struct fx {
	int fd;
	Elf *elf;
};

static void fx_open(struct fx *f, const char *path)
{
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(f->fd >= 0);
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(f->elf);
}

static void fx_close(struct fx *f)
{
	elf_end(f->elf);
	close(f->fd);
}

/* Value of the first .symtab symbol whose name starts with prefix. */
static uint64_t fx_symbol(Elf *elf, const char *prefix)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	GElf_Sym sym;
	Elf_Data *data;
	const char *name;
	size_t i;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			if (!gelf_getsym(data, i, &sym))
				continue;
			name = elf_strptr(elf, sh.sh_link, sym.st_name);
			if (name && strncmp(name, prefix, strlen(prefix)) == 0)
				return sym.st_value;
		}
	}
	fail_msg("fixture has no symbol %s", prefix);
	return 0;
}

static int setup(void **state)
{
	elf_version(EV_CURRENT);
	return 0;
}

static void assert_frame(const struct symb_srcline *l, const char *function, uint32_t line)
{
	size_t flen, slen = strlen(DWARF_FIXTURE_SRC);

	assert_string_equal(l->function, function);
	assert_int_equal(l->line, line);
	assert_non_null(l->file);
	/* The path as the compiler recorded it: the absolute source path here. */
	flen = strlen(l->file);
	assert_true(flen >= strlen("dwarf_fixture.c"));
	assert_string_equal(l->file + flen - strlen("dwarf_fixture.c"), "dwarf_fixture.c");
	assert_true(flen == slen && strcmp(l->file, DWARF_FIXTURE_SRC) == 0);
}

/*
 * The inline chains of the C fixture: addresses looked up in dwarf_elf,
 * marker symbols found in sym_elf (the same binary, maybe unstripped).
 */
static void check_c_fixture(struct symb_dwarf *d, Elf *sym_elf)
{
	struct symb_srcline out[8];
	const char *first;
	int n;

	n = symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_mark_leaf"), out, 8);
	assert_int_equal(n, 3);
	assert_frame(&out[0], "fx_leaf", LINE_LEAF_BODY);
	assert_frame(&out[1], "fx_mid", LINE_MID_CALL);
	assert_frame(&out[2], "fx_outer", LINE_OUTER_CALL);
	first = out[0].function;

	n = symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_mark_mid"), out, 8);
	assert_int_equal(n, 2);
	assert_frame(&out[0], "fx_mid", LINE_MID_BODY);
	assert_frame(&out[1], "fx_outer", LINE_OUTER_CALL);

	n = symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_mark_outer"), out, 8);
	assert_int_equal(n, 1);
	assert_frame(&out[0], "fx_outer", LINE_OUTER_BODY);

	/* Again (cached), and cut to max: the innermost frames come first. */
	n = symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_mark_leaf"), out, 1);
	assert_int_equal(n, 1);
	assert_ptr_equal(out[0].function, first);
	assert_frame(&out[0], "fx_leaf", LINE_LEAF_BODY);

	/* No DWARF: asm in a unit's .text, asm in no unit, no code at all. */
	assert_int_equal(symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_nodebug"), out, 8), 0);
	assert_int_equal(symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_nounit"), out, 8), 0);
	assert_int_equal(symb_dwarf__lookup(d, 0, out, 8), 0);
	assert_int_equal(symb_dwarf__lookup(d, UINT64_MAX, out, 8), 0);
	assert_int_equal(symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_mark_leaf"), out, 0), 0);

	/* A name longer than SYMB_DWARF_NAME_MAX is cut and ends in "...". */
	n = symb_dwarf__lookup(d, fx_symbol(sym_elf, "fx_long_"), out, 8);
	assert_int_equal(n, 1);
	assert_int_equal(strlen(out[0].function), SYMB_DWARF_NAME_MAX);
	assert_memory_equal(out[0].function, "fx_long_abcdefghijklmnopqrst", 28);
	assert_string_equal(out[0].function + SYMB_DWARF_NAME_MAX - 3, "...");
}

/* The C fixture built into path, its DWARF in the binary itself. */
static void check_c_file(const char *path)
{
	struct symb_dwarf *d;
	struct fx f;

	fx_open(&f, path);
	d = symb_dwarf__open(f.elf, NULL);
	assert_non_null(d);
	check_c_fixture(d, f.elf);
	symb_dwarf__free(d);
	fx_close(&f);
}

static void test_inline_default(void **state)
{
	check_c_file(DWARF_FIXTURE_DEFAULT);
}

#ifdef DWARF_FIXTURE_GCC
static void test_inline_gcc(void **state)
{
	struct symb_dwarf *d;
	struct fx f;

	fx_open(&f, DWARF_FIXTURE_GCC);
	d = symb_dwarf__open(f.elf, NULL);
	assert_non_null(d);
	check_c_fixture(d, f.elf);
	symb_dwarf__free(d);
	/* The same ELF given as its own debug file. */
	d = symb_dwarf__open(NULL, f.elf);
	assert_non_null(d);
	check_c_fixture(d, f.elf);
	symb_dwarf__free(d);
	fx_close(&f);
}

/*
 * Compressed debug sections (what distributions ship): the sections lookups
 * read are inflated by dwarf.c itself, the answers are the same.
 */
static void test_inline_compressed(void **state)
{
	check_c_file(DWARF_FIXTURE_ZLIB);
}

/* The file's bytes, with .debug_info's compressed stream damaged at its middle. */
static char *damaged_copy(const char *path, size_t *len)
{
	struct fx f;
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	struct stat st;
	char *buf = NULL;
	int fd;

	fx_open(&f, path);
	assert_int_equal(elf_getshdrstrndx(f.elf, &shstrndx), 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0 && fstat(fd, &st) == 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len);
	assert_non_null(buf);
	assert_int_equal(pread(fd, buf, *len, 0), (ssize_t)*len);
	close(fd);
	while ((scn = elf_nextscn(f.elf, scn))) {
		assert_non_null(gelf_getshdr(scn, &sh));
		if (strcmp(elf_strptr(f.elf, shstrndx, sh.sh_name), ".debug_info"))
			continue;
		assert_true(sh.sh_flags & SHF_COMPRESSED);
		memset(buf + sh.sh_offset + sizeof(Elf64_Chdr) + 4, 0xff, 16);
	}
	fx_close(&f);
	return buf;
}

/* A stream that does not inflate to its claimed size finds nothing, safely. */
static void test_compressed_damaged(void **state)
{
	struct symb_srcline out[8];
	struct symb_dwarf *d;
	struct fx f;
	size_t len;
	char *buf = damaged_copy(DWARF_FIXTURE_ZLIB, &len);
	Elf *elf = elf_memory(buf, len);

	assert_non_null(elf);
	fx_open(&f, DWARF_FIXTURE_ZLIB);
	d = symb_dwarf__open(elf, NULL);
	assert_non_null(d);
	assert_int_equal(symb_dwarf__lookup(d, fx_symbol(f.elf, "fx_mark_leaf"), out, 8), 0);
	symb_dwarf__free(d);
	fx_close(&f);
	elf_end(elf);
	free(buf);
}

static void hex_to_bytes(const char *hex, uint8_t *out, size_t *len)
{
	unsigned int b;

	if (strncmp(hex, "0x", 2) == 0)
		hex += 2;
	for (*len = 0; hex[0] && hex[1]; hex += 2) {
		assert_int_equal(sscanf(hex, "%2x", &b), 1);
		out[(*len)++] = b;
	}
}

static void test_split_debug(void **state)
{
	char tmpl[] = "/tmp/lp-dwarf-test.XXXXXX", path[PATH_MAX], target[PATH_MAX];
	uint8_t id[20], other[20];
	struct symb_dwarf *d;
	struct fx stripped, full;
	Elf *debug_elf;
	size_t len;
	int fd;

	hex_to_bytes(DWARF_FIXTURE_BUILD_ID, id, &len);
	assert_int_equal(len, 20);
	assert_non_null(mkdtemp(tmpl));

	/* The stripped binary alone has no DWARF. */
	fx_open(&stripped, DWARF_FIXTURE_STRIPPED);
	errno = 0;
	assert_null(symb_dwarf__open(stripped.elf, NULL));
	assert_int_equal(errno, ENOENT);

	/* Nothing there yet. */
	assert_int_equal(symb_debug_file_open(tmpl, id, len), -ENOENT);

	/* dir/.build-id/ab/cdef....debug, a symlink as distributions make them */
	snprintf(path, sizeof(path), "%s/.build-id", tmpl);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/ab", tmpl);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/ab/%s.debug", tmpl, &DWARF_FIXTURE_BUILD_ID[4]);
	assert_non_null(realpath(DWARF_FIXTURE_DEBUG, target));
	assert_int_equal(symlink(target, path), 0);

	fd = symb_debug_file_open(tmpl, id, len);
	assert_true(fd >= 0);
	debug_elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	assert_non_null(debug_elf);
	d = symb_dwarf__open(stripped.elf, debug_elf);
	assert_non_null(d);
	/* The markers' addresses come from the unstripped build. */
	fx_open(&full, DWARF_FIXTURE_GCC);
	check_c_fixture(d, full.elf);
	symb_dwarf__free(d);
	elf_end(debug_elf);
	close(fd);

	/* Not regular files: a FIFO (must not block the open) and a directory. */
	memcpy(other, id, sizeof(other));
	other[19] ^= 1;
	snprintf(path, sizeof(path), "%s/.build-id/ab/%.36s%02x.debug", tmpl,
		 &DWARF_FIXTURE_BUILD_ID[4], other[19]);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(symb_debug_file_open(tmpl, other, len), -EINVAL);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(mkdir(path, 0700), 0);
	assert_int_equal(symb_debug_file_open(tmpl, other, len), -EINVAL);
	assert_int_equal(rmdir(path), 0);

	/* Bad arguments. */
	assert_int_equal(symb_debug_file_open(tmpl, id, 1), -EINVAL);
	assert_int_equal(symb_debug_file_open(tmpl, id, 0), -EINVAL);
	assert_int_equal(symb_debug_file_open(NULL, id, len), -EINVAL);

	snprintf(path, sizeof(path), "%s/.build-id/ab/%s.debug", tmpl, &DWARF_FIXTURE_BUILD_ID[4]);
	assert_int_equal(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/.build-id/ab", tmpl);
	assert_int_equal(rmdir(path), 0);
	snprintf(path, sizeof(path), "%s/.build-id", tmpl);
	assert_int_equal(rmdir(path), 0);
	assert_int_equal(rmdir(tmpl), 0);
	fx_close(&full);
	fx_close(&stripped);
}
#endif

#ifdef DWARF_FIXTURE_CXX
static void test_cxx(void **state)
{
	struct symb_srcline out[8];
	struct symb_dwarf *d;
	struct fx f;
	int n;

	fx_open(&f, DWARF_FIXTURE_CXX);
	d = symb_dwarf__open(f.elf, NULL);
	assert_non_null(d);
	n = symb_dwarf__lookup(d, fx_symbol(f.elf, "_ZN2ns4TypeIlE6methodEl"), out, 8);
	assert_int_equal(n, 1);
	assert_string_equal(out[0].function, "ns::Type<long>::method");
	assert_non_null(out[0].file);
	assert_true(out[0].line > 0);
	/* persisted as the linkage name, demangled again on load */
	{
		struct symb_srcline again[8];
		struct symb_dwarf *e = symb_dwarf__new_empty();
		uint8_t *blob;
		size_t len;

		assert_non_null(e);
		assert_int_equal(symb_dwarf__encode_lines(d, &blob, &len), 0);
		assert_non_null(memmem(blob, len, "_ZN2ns4TypeIlE6methodEl", 23));
		assert_int_equal(symb_dwarf__load_lines(e, blob, len), 0);
		n = symb_dwarf__lookup(e, fx_symbol(f.elf, "_ZN2ns4TypeIlE6methodEl"), again, 8);
		assert_int_equal(n, 1);
		assert_string_equal(again[0].function, out[0].function);
		assert_string_equal(again[0].file, out[0].file);
		assert_int_equal(again[0].line, out[0].line);
		free(blob);
		symb_dwarf__free(e);
	}
	symb_dwarf__free(d);
	fx_close(&f);
}
#endif

/* The frames two objects give at vaddr are the same strings and lines. */
static void assert_same_lookup(struct symb_dwarf *a, struct symb_dwarf *b, uint64_t vaddr)
{
	struct symb_srcline x[16], y[16];
	int n = symb_dwarf__lookup(a, vaddr, x, 16);

	assert_int_equal(symb_dwarf__lookup(b, vaddr, y, 16), n);
	for (int i = 0; i < n; i++) {
		assert_string_equal(x[i].function, y[i].function);
		assert_true(!x[i].file == !y[i].file);
		if (x[i].file)
			assert_string_equal(x[i].file, y[i].file);
		assert_int_equal(x[i].line, y[i].line);
	}
}

/*
 * Opening reads no DWARF; the first lookup does. Results go into a blob
 * that answers the same lookups in another object without starting libdw,
 * and that encodes back to the same bytes.
 */
static void test_lines_blob(void **state)
{
	static const char *const marks[] = {"fx_mark_leaf", "fx_mark_mid", "fx_mark_outer",
					    "fx_nodebug",   "fx_nounit",   "fx_long_"};
	struct symb_dwarf *d, *d2, *e;
	uint8_t *blob, *blob2;
	size_t len, len2;
	struct fx f;

	fx_open(&f, DWARF_FIXTURE_DEFAULT);
	d = symb_dwarf__open(f.elf, NULL);
	assert_non_null(d);
	assert_false(symb_dwarf__opened(d));
	assert_false(symb_dwarf__lines_changed(d));
	check_c_fixture(d, f.elf);
	assert_true(symb_dwarf__opened(d));
	assert_true(symb_dwarf__lines_changed(d));
	assert_int_equal(symb_dwarf__encode_lines(d, &blob, &len), 0);
	assert_false(symb_dwarf__lines_changed(d));

	/* the same file, with the blob: the fixture's checks pass without libdw */
	d2 = symb_dwarf__open(f.elf, NULL);
	assert_non_null(d2);
	assert_int_equal(symb_dwarf__load_lines(d2, blob, len), 0);
	check_c_fixture(d2, f.elf);
	assert_false(symb_dwarf__opened(d2));
	assert_false(symb_dwarf__lines_changed(d2));
	assert_int_equal(symb_dwarf__encode_lines(d2, &blob2, &len2), 0);
	assert_int_equal(len2, len);
	assert_memory_equal(blob2, blob, len);
	free(blob2);
	/* an address the blob lacks starts libdw, and is new */
	assert_same_lookup(d, d2, fx_symbol(f.elf, "fx_mark_leaf") + 1);
	assert_true(symb_dwarf__opened(d2));
	assert_true(symb_dwarf__lines_changed(d2));

	/* no debug information at all: only what was loaded */
	e = symb_dwarf__new_empty();
	assert_non_null(e);
	assert_int_equal(symb_dwarf__load_lines(e, blob, len), 0);
	for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
		assert_same_lookup(d, e, fx_symbol(f.elf, marks[i]));
	assert_int_equal(symb_dwarf__lookup(e, fx_symbol(f.elf, "fx_mark_leaf") + 1,
					    (struct symb_srcline[1]){0}, 1),
			 0);
	/* loading again keeps what is there */
	assert_int_equal(symb_dwarf__load_lines(e, blob, len), 0);
	assert_same_lookup(d, e, fx_symbol(f.elf, "fx_mark_mid"));
	symb_dwarf__free(e);

	/* every cut of the blob is refused whole: nothing of it is added */
	for (size_t cut = 0; cut < len; cut++) {
		e = symb_dwarf__new_empty();
		assert_non_null(e);
		assert_int_equal(symb_dwarf__load_lines(e, blob, cut), -EBADMSG);
		assert_int_equal(symb_dwarf__lookup(e, fx_symbol(f.elf, "fx_mark_leaf"),
						    (struct symb_srcline[1]){0}, 1),
				 0);
		symb_dwarf__free(e);
	}
	free(blob);
	symb_dwarf__free(d2);
	symb_dwarf__free(d);
	fx_close(&f);
}

/* Little-endian u32 and u64 into a hand-made blob. */
static size_t put32(uint8_t *p, size_t at, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[at + i] = (uint8_t)(v >> (8 * i));
	return at + 4;
}

static size_t put64(uint8_t *p, size_t at, uint64_t v)
{
	return put32(p, put32(p, at, (uint32_t)v), (uint32_t)(v >> 32));
}

/*
 * A blob of one string and results at 0x10 (and at vaddr2, when not 0),
 * one frame each: function string 0 with flags fn, file file, line 7.
 * Returns its length.
 */
static size_t make_blob(uint8_t *b, const char *str, uint32_t fn, uint32_t file, uint64_t vaddr2,
			uint32_t nframes)
{
	size_t at = 0, n = strlen(str);

	at = put32(b, at, 0x4c44504cu); /* "LPDL" */
	at = put32(b, at, 1);
	at = put32(b, at, vaddr2 ? 2 : 1);
	at = put32(b, at, (uint32_t)n);
	memcpy(b + at, str, n);
	at += n;
	for (int r = 0; r < (vaddr2 ? 2 : 1); r++) {
		at = put64(b, at, r ? vaddr2 : 0x10);
		at = put32(b, at, nframes);
		for (uint32_t k = 0; k < nframes && k < 1; k++) {
			at = put32(b, at, fn);
			at = put32(b, at, file);
			at = put32(b, at, 7);
		}
	}
	return at;
}

/* Blobs made by hand: what is accepted, and each way of being refused. */
static void test_lines_blob_checks(void **state)
{
	struct symb_srcline out[4];
	struct symb_dwarf *e;
	uint8_t b[256];
	size_t len;

	e = symb_dwarf__new_empty();
	assert_non_null(e);
	len = make_blob(b, "plain", 0, 0, 0x20, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), 0);
	assert_int_equal(symb_dwarf__lookup(e, 0x10, out, 4), 1);
	assert_string_equal(out[0].function, "plain");
	assert_string_equal(out[0].file, "plain");
	assert_int_equal(out[0].line, 7);
	assert_int_equal(symb_dwarf__lookup(e, 0x20, out, 4), 1);
	assert_int_equal(symb_dwarf__lookup(e, 0x30, out, 4), 0);
	symb_dwarf__free(e);

	/* a linkage name is demangled on load; no file */
	e = symb_dwarf__new_empty();
	len = make_blob(b, "_ZN2ns4TypeIlE6methodEv", 0x80000000u, UINT32_MAX, 0, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), 0);
	assert_int_equal(symb_dwarf__lookup(e, 0x10, out, 4), 1);
	assert_string_equal(out[0].function, "ns::Type<long>::method");
	assert_null(out[0].file);
	symb_dwarf__free(e);

	/* refused: index out of range, results not ascending, a NUL in a string, too many frames */
	e = symb_dwarf__new_empty();
	len = make_blob(b, "f", 1, 0, 0, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0, 1, 0, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0x80000001u, 0, 0, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0, 0, 0x10, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0, 0, 0x8, 1);
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "axb", 0, 0, 0, 1);
	b[17] = '\0';
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0, 0, 0, 65); /* claims 65 frames, holds 1 */
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG);
	len = make_blob(b, "f", 0, 0, 0, 1);
	b[len] = 0;
	assert_int_equal(symb_dwarf__load_lines(e, b, len + 1), -EBADMSG); /* a byte after */
	b[0] ^= 1;
	assert_int_equal(symb_dwarf__load_lines(e, b, len), -EBADMSG); /* magic */
	assert_int_equal(symb_dwarf__lookup(e, 0x10, out, 4), 0);
	assert_int_equal(symb_dwarf__load_lines(e, NULL, 0), -EBADMSG);
	assert_int_equal(symb_dwarf__load_lines(NULL, b, len), -EINVAL);
	/* the lookup of 0x10 found nothing, and that is remembered too: 12 + 12 bytes */
	assert_true(symb_dwarf__lines_changed(e));
	{
		uint8_t *blob;

		assert_int_equal(symb_dwarf__encode_lines(e, &blob, &len), 0);
		assert_int_equal(len, 24);
		assert_false(symb_dwarf__lines_changed(e));
		assert_int_equal(symb_dwarf__load_lines(e, blob, len), 0);
		free(blob);
	}
	symb_dwarf__free(e);
}

static void test_open_errors(void **state)
{
	errno = 0;
	assert_null(symb_dwarf__open(NULL, NULL));
	assert_int_equal(errno, ENOENT);
	symb_dwarf__free(NULL);
	assert_int_equal(symb_dwarf__lookup(NULL, 0x1000, NULL, 0), 0);
	assert_false(symb_dwarf__opened(NULL));
	assert_false(symb_dwarf__lines_changed(NULL));
}

static void assert_demangles(const char *mangled, const char *want)
{
	char *got = symb_demangle(mangled);

	if (!want) {
		assert_null(got);
		return;
	}
	assert_non_null(got);
	assert_string_equal(got, want);
	free(got);
}

static void test_demangle(void **state)
{
	char *big, *got;
	size_t i;

	assert_demangles("_ZN2ns4TypeIlE6methodEv", "ns::Type<long>::method");
	assert_demangles("_ZN2ns4TypeIlE6methodEl", "ns::Type<long>::method");
	assert_demangles("_RNvCs1234_7mycrate4main", "mycrate::main");
	assert_demangles("_ZN4core3fmt5write17h0123456789abcdefE", "core::fmt::write");
	assert_demangles("_ZNK3foo3barEv", "foo::bar");
	/* Without parameters, clone suffixes go too: one name per function. */
	assert_demangles("_Z3fooi.cold", "foo");
	/* Not mangled: C names, empty, NULL. */
	assert_demangles("main", NULL);
	assert_demangles("_start", NULL);
	assert_demangles("", NULL);
	assert_demangles(NULL, NULL);
	/* Malformed. */
	assert_demangles("_Z", NULL);
	assert_demangles("_ZN3foo", NULL);
	assert_demangles("_Z9foo", NULL);
	assert_demangles("_ZZZ", NULL);
	assert_demangles("_R", NULL);
	assert_demangles("_RNvC", NULL);

	/* Too long to be handed to libiberty at all. */
	big = malloc(8192);
	assert_non_null(big);
	memcpy(big, "_Z3foo", 6);
	memset(big + 6, 'v', 8192 - 7);
	big[8191] = '\0';
	assert_null(symb_demangle(big));

	/* Deep nesting within the length bound: libiberty's recursion limit. */
	memcpy(big, "_Z1fP", 5);
	for (i = 5; i < 4000; i++)
		big[i] = 'P';
	memcpy(big + 4000, "v", 2);
	got = symb_demangle(big);
	free(got); /* either result is fine: no crash, no stack exhaustion */
	for (i = 0; i < 1300; i++)
		memcpy(big + 2 + 3 * i, "NS_", 3);
	memcpy(big, "_Z", 2);
	big[2 + 3 * 1300] = '\0';
	got = symb_demangle(big);
	free(got);
	free(big);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_inline_default),
#ifdef DWARF_FIXTURE_GCC
		cmocka_unit_test(test_inline_gcc),
		cmocka_unit_test(test_split_debug),
		cmocka_unit_test(test_inline_compressed),
		cmocka_unit_test(test_compressed_damaged),
#endif
#ifdef DWARF_FIXTURE_CXX
		cmocka_unit_test(test_cxx),
#endif
		cmocka_unit_test(test_open_errors),
		cmocka_unit_test(test_demangle),
		cmocka_unit_test(test_lines_blob),
		cmocka_unit_test(test_lines_blob_checks),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
