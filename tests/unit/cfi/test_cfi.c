// SPDX-License-Identifier: MIT
/*
 * Unit tests for symbolizer/unwind/cfi_*.c (cfi.h). Three kinds of check:
 *  - fixtures built from fixture.c (see CMakeLists.txt): rows of known
 *    prologues, checked against the instruction bytes found there (so a
 *    change of compiler cannot make them pass silently), the PLT, _start,
 *    .debug_frame only, a separate debug file, no section headers;
 *  - every row of every FDE readelf --debug-dump=frames-interp prints, for
 *    the fixtures and the system's libc (CFI_READELF);
 *  - hand-assembled sections for each instruction, encoding and
 *    malformation; the blob's roundtrip and rejections, eager and lazy
 *    (symb_deltas__open_blob: same answers as the built table, bad blocks
 *    that cost only their own lookups).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <unistd.h>
#include <cmocka.h>

#include "cfi.h"

#define LIBC_PATH "/lib/x86_64-linux-gnu/libc.so.6"

/* ---- helpers ---- */

struct elf_file {
	int fd;
	Elf *elf;
};

static Elf *open_elf(struct elf_file *f, const char *path)
{
	elf_version(EV_CURRENT);
	f->fd = open(path, O_RDONLY);
	if (f->fd < 0) {
		f->elf = NULL;
		return NULL;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ_MMAP, NULL);
	return f->elf;
}

static void close_elf(struct elf_file *f)
{
	elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
}

static Elf_Scn *find_scn(Elf *elf, const char *want, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;

	assert_int_equal(elf_getshdrstrndx(elf, &shstrndx), 0);
	while ((scn = elf_nextscn(elf, scn))) {
		gelf_getshdr(scn, sh);
		name = elf_strptr(elf, shstrndx, sh->sh_name);
		if (name && !strcmp(name, want))
			return scn;
	}
	return NULL;
}

/* A section's bytes (NULL if absent or NOBITS). */
static const uint8_t *scn_bytes(Elf *elf, const char *name, size_t *size, uint64_t *vaddr)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_scn(elf, name, &sh);
	Elf_Data *d;

	if (!scn || sh.sh_type == SHT_NOBITS)
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d)
		return NULL;
	*size = d->d_size;
	*vaddr = sh.sh_addr;
	return d->d_buf;
}

static bool find_sym(Elf *elf, const char *want, uint64_t *addr, uint64_t *size)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_scn(elf, ".symtab", &sh);
	Elf_Data *d;
	GElf_Sym sym;
	size_t i;

	if (!scn)
		return false;
	d = elf_getdata(scn, NULL);
	for (i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		gelf_getsym(d, (int)i, &sym);
		if (!strcmp(elf_strptr(elf, sh.sh_link, sym.st_name), want)) {
			*addr = sym.st_value;
			*size = sym.st_size;
			return true;
		}
	}
	return false;
}

/* The code bytes at vaddr (from the section holding it). */
static const uint8_t *code_at(Elf *elf, uint64_t vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;

	while ((scn = elf_nextscn(elf, scn))) {
		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_PROGBITS || vaddr < sh.sh_addr ||
		    vaddr >= sh.sh_addr + sh.sh_size)
			continue;
		d = elf_getdata(scn, NULL);
		return (const uint8_t *)d->d_buf + (vaddr - sh.sh_addr);
	}
	fail_msg("no section holds %#lx", (unsigned long)vaddr);
	return NULL;
}

/* The table's rules: sorted, merged, last NONE, fields zero where unused. */
static void check_table(const struct symb_deltas *d)
{
	uint32_t i;

	if (!d->n) {
		assert_null(d->rows);
		return;
	}
	for (i = 0; i < d->n; i++) {
		const struct symb_delta *r = &d->rows[i];

		assert_true(r->kind <= SYMB_CFA_INVALID);
		assert_int_equal(r->pad, 0);
		if (r->kind != SYMB_CFA_SP && r->kind != SYMB_CFA_BP) {
			assert_int_equal(r->cfa_off, 0);
			assert_int_equal(r->bp_off, 0);
		}
		if (i) {
			assert_true(r->pc > r[-1].pc);
			assert_false(r->kind == r[-1].kind && r->cfa_off == r[-1].cfa_off &&
				     r->bp_off == r[-1].bp_off);
		}
	}
	assert_int_equal(d->rows[d->n - 1].kind, SYMB_CFA_NONE);
}

static void expect_row_(const struct symb_deltas *d, uint64_t pc, int kind, int cfa, int bp,
			int line)
{
	const struct symb_delta *r = symb_deltas__find(d, pc);

	if (!r)
		fail_msg("line %d: no row at %#lx", line, (unsigned long)pc);
	if (r->kind != kind || r->cfa_off != cfa || r->bp_off != bp)
		fail_msg("line %d: at %#lx: kind %d cfa %d bp %d, want %d %d %d", line,
			 (unsigned long)pc, r->kind, r->cfa_off, r->bp_off, kind, cfa, bp);
}
#define expect_row(d, pc, kind, cfa, bp) expect_row_(d, pc, kind, cfa, bp, __LINE__)

static void build_file(const char *path, struct symb_deltas *d, struct symb_cfi_stats *st)
{
	struct elf_file f;

	assert_non_null(open_elf(&f, path));
	assert_int_equal(symb_cfi__build(f.elf, NULL, d, st), 0);
	check_table(d);
	close_elf(&f);
}

/* ---- fixtures ---- */

/* -fno-omit-frame-pointer: push %rbp; mov %rsp,%rbp. */
static void test_fp_prologue(void **state)
{
	static const uint8_t prologue[] = {0x55, 0x48, 0x89, 0xe5};
	struct symb_cfi_stats st;
	struct symb_deltas d;
	struct elf_file f;
	uint64_t fn, size, leaf, leaf_size;

	assert_non_null(open_elf(&f, CFI_FX_FP));
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, &st), 0);
	check_table(&d);
	assert_int_equal(st.bad_entries, 0);
	assert_true(st.fdes > 3);
	assert_int_equal(st.from_eh_frame, st.fdes);
	assert_true(find_sym(f.elf, "cfi_fx_frame", &fn, &size));
	assert_memory_equal(code_at(f.elf, fn), prologue, sizeof(prologue));
	expect_row(&d, fn, SYMB_CFA_SP, 8, 0);
	expect_row(&d, fn + 1, SYMB_CFA_SP, 16, -16);
	expect_row(&d, fn + 3, SYMB_CFA_SP, 16, -16);
	expect_row(&d, fn + 4, SYMB_CFA_BP, 16, -16);
	/* with frame pointers the leaf has the same prologue */
	assert_true(find_sym(f.elf, "cfi_fx_callee", &leaf, &leaf_size));
	assert_memory_equal(code_at(f.elf, leaf), prologue, sizeof(prologue));
	expect_row(&d, leaf + 4, SYMB_CFA_BP, 16, -16);
	/* below the first row */
	assert_null(symb_deltas__find(&d, d.rows[0].pc - 1));
	assert_null(symb_deltas__find(&d, 0));
	assert_ptr_equal(symb_deltas__find(&d, UINT64_MAX), &d.rows[d.n - 1]);
	symb_deltas__free(&d);
	assert_null(d.rows);
	symb_deltas__free(&d);
	symb_deltas__free(NULL);
	close_elf(&f);
}

/* -fomit-frame-pointer: each push moves the CFA by 8; a push of rbp saves it. */
static void test_nofp_prologue(void **state)
{
	struct symb_deltas d;
	struct elf_file f;
	const uint8_t *code;
	const struct symb_delta *r;
	uint64_t fn, size, at = 0, leaf, leaf_size, i;
	int cfa = 8, bp = 0, pushes = 0;

	assert_non_null(open_elf(&f, CFI_FX_NOFP));
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, NULL), 0);
	check_table(&d);
	assert_true(find_sym(f.elf, "cfi_fx_frame", &fn, &size));
	code = code_at(f.elf, fn);
	expect_row(&d, fn, SYMB_CFA_SP, 8, 0);
	for (;;) {
		unsigned reg;

		if (code[at] >= 0x50 && code[at] <= 0x57) {
			reg = code[at] - 0x50;
			at += 1;
		} else if (code[at] == 0x41 && code[at + 1] >= 0x50 && code[at + 1] <= 0x57) {
			reg = 8 + code[at + 1] - 0x50;
			at += 2;
		} else {
			break;
		}
		cfa += 8;
		if (reg == 5) /* rbp in the instruction's numbering */
			bp = -cfa;
		pushes++;
		/* LLVM states where registers went only after the last push */
		r = symb_deltas__find(&d, fn + at);
		assert_int_equal(r->kind, SYMB_CFA_SP);
		assert_int_equal(r->cfa_off, cfa);
	}
	assert_true(pushes > 0);
	expect_row(&d, fn + at, SYMB_CFA_SP, cfa, bp);
	/* the leaf never moves rsp: one row for all of it */
	assert_true(find_sym(f.elf, "cfi_fx_callee", &leaf, &leaf_size));
	for (i = 0; i < leaf_size; i++)
		expect_row(&d, leaf + i, SYMB_CFA_SP, 8, 0);
	assert_ptr_equal(symb_deltas__find(&d, leaf), symb_deltas__find(&d, leaf + leaf_size - 1));
	symb_deltas__free(&d);
	close_elf(&f);
}

/* The lazy PLT: PLT0 pushes twice, the entries use the CFA expression. */
static void test_plt(void **state)
{
	struct symb_deltas d;
	struct elf_file f;
	GElf_Shdr sh;
	uint64_t plt, i;

	assert_non_null(open_elf(&f, CFI_FX_FP));
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, NULL), 0);
	assert_non_null(find_scn(f.elf, ".plt", &sh));
	assert_true(sh.sh_size >= 32); /* PLT0 and one entry, at least */
	plt = sh.sh_addr;
	expect_row(&d, plt, SYMB_CFA_SP, 16, 0);
	expect_row(&d, plt + 6, SYMB_CFA_SP, 24, 0);
	for (i = 16; i < sh.sh_size; i++)
		expect_row(&d, plt + i, SYMB_CFA_PLT, 0, 0);
	symb_deltas__free(&d);
	close_elf(&f);
}

/* crt1's _start marks the return address undefined: the outermost frame. */
static void test_start_is_end(void **state)
{
	struct symb_deltas d;
	struct elf_file f;
	uint64_t start, size;

	assert_non_null(open_elf(&f, CFI_FX_FP));
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, NULL), 0);
	assert_true(find_sym(f.elf, "_start", &start, &size));
	expect_row(&d, start, SYMB_CFA_END, 0, 0);
	expect_row(&d, start + 8, SYMB_CFA_END, 0, 0);
	symb_deltas__free(&d);
	close_elf(&f);
}

/* Functions with CFI in .debug_frame only; _start's in .eh_frame. */
static void test_debug_frame_only(void **state)
{
	struct symb_cfi_sections sec = {0};
	struct symb_cfi_stats st;
	struct symb_deltas d, eh;
	const struct symb_delta *r;
	struct elf_file f;
	uint64_t fn, size, start;

	assert_non_null(open_elf(&f, CFI_FX_DBG));
	assert_true(find_sym(f.elf, "cfi_fx_frame", &fn, &size));
	assert_true(find_sym(f.elf, "_start", &start, &size));
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, &st), 0);
	check_table(&d);
	assert_int_equal(st.bad_entries, 0);
	assert_true(st.from_debug_frame >= 2);
	assert_true(st.from_eh_frame >= 1);
	expect_row(&d, fn, SYMB_CFA_SP, 8, 0);
	expect_row(&d, fn + 1, SYMB_CFA_SP, 16, -16);
	expect_row(&d, fn + 4, SYMB_CFA_BP, 16, -16);
	expect_row(&d, start, SYMB_CFA_END, 0, 0);

	/* .eh_frame alone has nothing there */
	sec.eh_frame = scn_bytes(f.elf, ".eh_frame", &sec.eh_frame_size, &sec.eh_frame_vaddr);
	assert_non_null(sec.eh_frame);
	assert_int_equal(symb_cfi__build_sections(&sec, &eh, &st), 0);
	check_table(&eh);
	assert_int_equal(st.from_debug_frame, 0);
	r = symb_deltas__find(&eh, fn + 4);
	assert_true(!r || r->kind == SYMB_CFA_NONE);
	expect_row(&eh, start, SYMB_CFA_END, 0, 0);
	symb_deltas__free(&eh);
	symb_deltas__free(&d);
	close_elf(&f);
}

static bool tables_equal(const struct symb_deltas *a, const struct symb_deltas *b)
{
	return a->n == b->n && (!a->n || !memcmp(a->rows, b->rows, a->n * sizeof(*a->rows)));
}

/* The binary without .debug_*, and its debug file: NOBITS .eh_frame, compressed .debug_frame. */
static void test_separate_debug_file(void **state)
{
	struct symb_deltas full, split, alone;
	struct symb_cfi_stats st;
	struct elf_file f, s, dbg;
	GElf_Shdr sh;
	uint64_t fn, size;

	build_file(CFI_FX_DBG, &full, NULL);
	assert_non_null(open_elf(&f, CFI_FX_DBG));
	assert_true(find_sym(f.elf, "cfi_fx_frame", &fn, &size));
	close_elf(&f);
	assert_non_null(open_elf(&s, CFI_FX_DBG_STRIPPED));
	assert_non_null(open_elf(&dbg, CFI_FX_DBG_DEBUG));
	assert_null(find_scn(s.elf, ".debug_frame", &sh));
	assert_non_null(find_scn(dbg.elf, ".eh_frame", &sh));
	assert_int_equal(sh.sh_type, SHT_NOBITS);
	assert_non_null(find_scn(dbg.elf, ".debug_frame", &sh));
	assert_true(sh.sh_flags & SHF_COMPRESSED);

	assert_int_equal(symb_cfi__build(s.elf, NULL, &alone, NULL), 0);
	expect_row(&full, fn + 4, SYMB_CFA_BP, 16, -16);
	assert_true(!symb_deltas__find(&alone, fn + 4) ||
		    symb_deltas__find(&alone, fn + 4)->kind == SYMB_CFA_NONE);
	assert_int_equal(symb_cfi__build(s.elf, dbg.elf, &split, &st), 0);
	assert_int_equal(st.bad_entries, 0);
	assert_true(tables_equal(&full, &split));
	/* the debug file alone: its .eh_frame has no bytes */
	symb_deltas__free(&alone);
	assert_int_equal(symb_cfi__build(dbg.elf, NULL, &alone, &st), 0);
	assert_int_equal(st.from_eh_frame, 0);
	assert_true(st.from_debug_frame >= 2);
	symb_deltas__free(&alone);
	symb_deltas__free(&split);
	symb_deltas__free(&full);
	close_elf(&s);
	close_elf(&dbg);
}

/* No section headers: .eh_frame is found through PT_GNU_EH_FRAME. */
static void test_no_section_headers(void **state)
{
#ifdef CFI_FX_FP_NOSH
	struct symb_deltas full, nosh;
	struct elf_file f;

	build_file(CFI_FX_FP, &full, NULL);
	assert_non_null(open_elf(&f, CFI_FX_FP_NOSH));
	assert_int_equal(elf_nextscn(f.elf, NULL), NULL);
	assert_int_equal(symb_cfi__build(f.elf, NULL, &nosh, NULL), 0);
	assert_true(full.n > 10);
	assert_true(tables_equal(&full, &nosh));
	symb_deltas__free(&full);
	symb_deltas__free(&nosh);
	close_elf(&f);
#else
	skip();
#endif
}

static void test_not_x86_64(void **state)
{
	/* an ELF header for AArch64, then for 32-bit x86 */
	uint8_t img[sizeof(Elf64_Ehdr)] = {0x7f,       'E',	    'L',       'F',
					   ELFCLASS64, ELFDATA2LSB, EV_CURRENT};
	Elf64_Ehdr *eh = (Elf64_Ehdr *)img;
	struct symb_deltas d = {(struct symb_delta *)1, 1};
	Elf *elf;

	elf_version(EV_CURRENT);
	eh->e_type = ET_DYN;
	eh->e_machine = EM_AARCH64;
	eh->e_version = EV_CURRENT;
	eh->e_ehsize = sizeof(Elf64_Ehdr);
	elf = elf_memory((char *)img, sizeof(img));
	assert_non_null(elf);
	assert_int_equal(symb_cfi__build(elf, NULL, &d, NULL), -ENOEXEC);
	assert_null(d.rows);
	assert_int_equal(d.n, 0);
	elf_end(elf);
	img[EI_CLASS] = ELFCLASS32;
	elf = elf_memory((char *)img, sizeof(img));
	assert_int_equal(symb_cfi__build(elf, NULL, &d, NULL), -ENOEXEC);
	elf_end(elf);
	assert_int_equal(symb_cfi__build(NULL, NULL, &d, NULL), -ENOEXEC);
}

/* libc's __restore_rt (mov $15,%rax; syscall) lies in an 'S' CIE's FDE. */
static void test_libc_signal(void **state)
{
	static const uint8_t restore_rt[] = {0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05};
	struct symb_cfi_stats st;
	struct symb_deltas d;
	struct elf_file f;
	const uint8_t *text, *hit = NULL, *p;
	uint64_t vaddr;
	size_t size;
	int found = 0;

	if (!open_elf(&f, LIBC_PATH))
		skip();
	assert_int_equal(symb_cfi__build(f.elf, NULL, &d, &st), 0);
	check_table(&d);
	assert_int_equal(st.bad_entries, 0);
	assert_true(d.n > 1000);
	text = scn_bytes(f.elf, ".text", &size, &vaddr);
	assert_non_null(text);
	for (p = text; p + sizeof(restore_rt) <= text + size; p++) {
		p = memchr(p, restore_rt[0], (size_t)(text + size - p));
		if (!p || p + sizeof(restore_rt) > text + size)
			break;
		if (memcmp(p, restore_rt, sizeof(restore_rt)))
			continue;
		hit = p;
		found++;
	}
	assert_int_equal(found, 1);
	vaddr += (uint64_t)(hit - text);
	expect_row(&d, vaddr, SYMB_CFA_SIGNAL, 0, 0);
	/* the FDE starts one byte early, for lookups at return address - 1 */
	expect_row(&d, vaddr - 1, SYMB_CFA_SIGNAL, 0, 0);
	expect_row(&d, vaddr + sizeof(restore_rt) - 1, SYMB_CFA_SIGNAL, 0, 0);
	symb_deltas__free(&d);
	close_elf(&f);
}

/* ---- comparison with readelf --debug-dump=frames-interp ---- */

#ifdef CFI_READELF
struct cmp {
	const struct symb_deltas *d;
	uint64_t (*eh)[2]; /* .eh_frame FDE ranges: .debug_frame rows there are not used */
	size_t neh, cap;
	unsigned rows, fdes, plt, signal;
	bool in_eh;
};

struct interp {
	char cols[32][16];
	int ncols;
	char aug[16];
	uint64_t start, end;
	bool fde, any_row;
	char init[256]; /* the CIE's row: for FDEs without rows */
	char init_hdr[512];
};

/* The row our mapping gives for one readelf row (tokens under the header columns). */
static void interp_expect(const struct interp *in, char **tok, int ntok, struct symb_delta *want,
			  bool *exp)
{
	const char *cfa = tok[1], *ra = "u", *bp = "u";
	int i;

	*exp = false;
	for (i = 2; i < ntok && i < in->ncols; i++) {
		if (!strcmp(in->cols[i], "ra"))
			ra = tok[i];
		if (!strcmp(in->cols[i], "rbp"))
			bp = tok[i];
	}
	memset(want, 0, sizeof(*want));
	if (strchr(in->aug, 'S')) {
		want->kind = SYMB_CFA_SIGNAL;
		return;
	}
	if (!strcmp(ra, "u")) {
		want->kind = SYMB_CFA_END;
		return;
	}
	want->kind = SYMB_CFA_INVALID;
	if (strcmp(ra, "c-8"))
		return;
	if (!strcmp(bp, "u") || !strcmp(bp, "s")) {
		want->bp_off = 0;
	} else if (bp[0] == 'c' && (bp[1] == '-' || bp[1] == '+')) {
		long v = strtol(bp + 1, NULL, 10);

		if (v < INT16_MIN || v > INT16_MAX || !v)
			return;
		want->bp_off = (int16_t)v;
	} else {
		return;
	}
	if (!strcmp(cfa, "exp")) {
		*exp = true; /* PLT or another expression: the caller decides */
		want->bp_off = 0;
		return;
	}
	if (!strncmp(cfa, "rsp", 3))
		want->kind = SYMB_CFA_SP;
	else if (!strncmp(cfa, "rbp", 3))
		want->kind = SYMB_CFA_BP;
	else {
		want->bp_off = 0;
		return;
	}
	want->cfa_off = (int32_t)strtol(cfa + 3, NULL, 10);
}

static int split(char *line, char **tok, int max)
{
	int n = 0;
	char *s = strtok(line, " \t\n");

	while (s && n < max) {
		/* "r10 (r10)": the name in parentheses belongs to the cell before */
		if (s[0] != '(')
			tok[n++] = s;
		s = strtok(NULL, " \t\n");
	}
	return n;
}

static bool covered_by_eh(const struct cmp *c, uint64_t pc)
{
	size_t i;

	for (i = 0; i < c->neh; i++) {
		if (pc >= c->eh[i][0] && pc < c->eh[i][1])
			return true;
	}
	return false;
}

static void check_interp_row(struct cmp *c, const struct interp *in, char *line)
{
	char buf[512], *tok[40];
	struct symb_delta want;
	const struct symb_delta *got;
	uint64_t pc;
	bool exp;
	int n;

	snprintf(buf, sizeof(buf), "%s", line);
	n = split(buf, tok, 40);
	if (n < 2)
		return;
	pc = in->any_row ? strtoull(tok[0], NULL, 16) : in->start;
	if (pc < in->start || pc >= in->end)
		return;
	if (!c->in_eh && covered_by_eh(c, pc))
		return;
	interp_expect(in, tok, n, &want, &exp);
	got = symb_deltas__find(c->d, pc);
	if (!got)
		fail_msg("readelf row at %#lx: no row", (unsigned long)pc);
	if (exp) {
		if (got->kind != SYMB_CFA_PLT && got->kind != SYMB_CFA_INVALID)
			fail_msg("at %#lx: CFA expression gave kind %d", (unsigned long)pc,
				 got->kind);
		c->plt += got->kind == SYMB_CFA_PLT;
	} else if (got->kind != want.kind || got->cfa_off != want.cfa_off ||
		   got->bp_off != want.bp_off) {
		fail_msg("at %#lx (%s): kind %d cfa %d bp %d, readelf says %d %d %d",
			 (unsigned long)pc, line, got->kind, got->cfa_off, got->bp_off, want.kind,
			 want.cfa_off, want.bp_off);
	}
	c->signal += got->kind == SYMB_CFA_SIGNAL;
	c->rows++;
}

static void set_header(struct interp *in, const char *line)
{
	char buf[512], *tok[33];
	int i;

	snprintf(buf, sizeof(buf), "%s", line);
	in->ncols = split(buf, tok, 32);
	for (i = 0; i < in->ncols; i++)
		snprintf(in->cols[i], sizeof(in->cols[i]), "%s", tok[i]);
}

/* An FDE readelf printed no rows for holds its CIE's row. */
static void finish_fde(struct cmp *c, struct interp *in)
{
	if (in->fde && !in->any_row && in->init[0] && in->end > in->start) {
		set_header(in, in->init_hdr);
		check_interp_row(c, in, in->init);
	}
	in->fde = false;
}

struct cie_rec {
	unsigned long off;
	char aug[16], hdr[512], row[256];
};

static void compare_with_readelf(const char *path, const struct symb_deltas *d, unsigned min_rows,
				 struct cmp *c)
{
	char cmd[1024], line[1024], *q;
	struct cie_rec *cies = NULL, *cur_cie = NULL;
	size_t ncies = 0, i;
	struct interp in = {0};
	FILE *p;
	bool after_hdr = false;

	memset(c, 0, sizeof(*c));
	c->d = d;
	snprintf(cmd, sizeof(cmd), "LC_ALL=C '%s' --debug-dump=frames-interp '%s'", CFI_READELF,
		 path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (strstr(line, "Contents of the .eh_frame section")) {
			finish_fde(c, &in);
			c->in_eh = true;
			ncies = 0;
			continue;
		}
		if (strstr(line, "Contents of the .debug_frame section")) {
			finish_fde(c, &in);
			c->in_eh = false;
			ncies = 0;
			continue;
		}
		if (line[0] != ' ' && strstr(line, " CIE")) {
			finish_fde(c, &in);
			cies = realloc(cies, (ncies + 1) * sizeof(*cies));
			cur_cie = &cies[ncies++];
			memset(cur_cie, 0, sizeof(*cur_cie));
			cur_cie->off = strtoul(line, NULL, 16);
			q = strchr(line, '"');
			if (q)
				snprintf(cur_cie->aug, sizeof(cur_cie->aug), "%.*s",
					 (int)strcspn(q + 1, "\""), q + 1);
			after_hdr = false;
			continue;
		}
		if (line[0] != ' ' && strstr(line, " FDE cie=")) {
			unsigned long cie_off;

			finish_fde(c, &in);
			cur_cie = NULL;
			q = strstr(line, "cie=");
			cie_off = strtoul(q + 4, NULL, 16);
			q = strstr(line, "pc=");
			in.start = strtoull(q + 3, &q, 16);
			in.end = strtoull(q + 2, NULL, 16);
			in.fde = true;
			in.any_row = false;
			in.aug[0] = in.init[0] = '\0';
			for (i = 0; i < ncies; i++) {
				if (cies[i].off == cie_off) {
					snprintf(in.aug, sizeof(in.aug), "%s", cies[i].aug);
					snprintf(in.init, sizeof(in.init), "%s", cies[i].row);
					snprintf(in.init_hdr, sizeof(in.init_hdr), "%s",
						 cies[i].hdr);
				}
			}
			if (in.start == 0 && !c->in_eh)
				in.fde = false; /* a discarded function's FDE */
			if (in.fde) {
				c->fdes++;
				if (c->in_eh) {
					c->eh = realloc(c->eh, (c->neh + 1) * sizeof(*c->eh));
					c->eh[c->neh][0] = in.start;
					c->eh[c->neh++][1] = in.end;
				}
			}
			after_hdr = false;
			continue;
		}
		if (strstr(line, "   LOC")) {
			if (cur_cie)
				snprintf(cur_cie->hdr, sizeof(cur_cie->hdr), "%s", line);
			else
				set_header(&in, line);
			after_hdr = true;
			continue;
		}
		if (!after_hdr || !strchr("0123456789abcdef", line[0]))
			continue;
		if (cur_cie) {
			snprintf(cur_cie->row, sizeof(cur_cie->row), "%s", line);
			continue;
		}
		if (!in.fde)
			continue;
		in.any_row = true;
		check_interp_row(c, &in, line);
	}
	finish_fde(c, &in);
	/* readelf exits 1 on some libraries it dumps fully (libc); the row count decides */
	assert_int_not_equal(pclose(p), -1);
	free(cies);
	free(c->eh);
	c->eh = NULL;
	if (c->rows < min_rows)
		fail_msg("%s: only %u readelf rows compared", path, c->rows);
}

static void readelf_case(const char *path, unsigned min_rows, unsigned min_plt, unsigned min_signal)
{
	struct symb_deltas d;
	struct cmp c;

	build_file(path, &d, NULL);
	compare_with_readelf(path, &d, min_rows, &c);
	print_message("%s: %u FDEs, %u rows as readelf has them (%u PLT, %u signal)\n", path,
		      c.fdes, c.rows, c.plt, c.signal);
	assert_true(c.plt >= min_plt);
	assert_true(c.signal >= min_signal);
	symb_deltas__free(&d);
}

static void test_readelf_fp(void **state)
{
	readelf_case(CFI_FX_FP, 15, 1, 0);
}

static void test_readelf_nofp(void **state)
{
	readelf_case(CFI_FX_NOFP, 10, 1, 0);
}

static void test_readelf_dbg(void **state)
{
	readelf_case(CFI_FX_DBG, 8, 0, 0);
}

static void test_readelf_gcc(void **state)
{
#ifdef CFI_FX_GCC
	readelf_case(CFI_FX_GCC, 10, 1, 0);
#else
	skip();
#endif
}

static void test_readelf_libc(void **state)
{
	if (access(LIBC_PATH, R_OK))
		skip();
	readelf_case(LIBC_PATH, 10000, 0, 1);
}
#else
static void test_readelf_fp(void **state)
{
	skip();
}
#define test_readelf_nofp test_readelf_fp
#define test_readelf_dbg  test_readelf_fp
#define test_readelf_gcc  test_readelf_fp
#define test_readelf_libc test_readelf_fp
#endif

/* ---- hand-assembled sections ---- */

struct asm_buf {
	uint8_t b[1 << 16];
	size_t n;
};

static void put(struct asm_buf *a, const void *p, size_t n)
{
	assert_true(a->n + n <= sizeof(a->b));
	if (n)
		memcpy(a->b + a->n, p, n);
	a->n += n;
}

static void put_le(struct asm_buf *a, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++) {
		uint8_t byte = (uint8_t)(v >> (8 * i));

		put(a, &byte, 1);
	}
}

static void put_uleb(struct asm_buf *a, uint64_t v)
{
	do {
		uint8_t byte = v & 0x7f;

		v >>= 7;
		if (v)
			byte |= 0x80;
		put(a, &byte, 1);
	} while (v);
}

/* Opens an entry (4-byte or 64-bit length), returns where its length goes. */
static size_t entry_open(struct asm_buf *a, bool dwarf64)
{
	size_t at = a->n;

	if (dwarf64)
		put_le(a, 0xffffffff, 4);
	put_le(a, 0, dwarf64 ? 8 : 4);
	return at;
}

static void entry_close(struct asm_buf *a, size_t at)
{
	bool dwarf64 = a->b[at] == 0xff && a->b[at + 1] == 0xff && a->b[at + 2] == 0xff &&
		       a->b[at + 3] == 0xff;
	size_t body = at + (dwarf64 ? 12 : 4);
	uint64_t len = a->n - body;
	unsigned i;

	for (i = 0; i < (dwarf64 ? 8u : 4u); i++)
		a->b[at + (dwarf64 ? 4 : 0) + i] = (uint8_t)(len >> (8 * i));
}

/*
 * A CIE: version 1, code alignment 1, data alignment -8, ra 16, the given
 * augmentation string and data (eh) or "" (debug), then insns.
 */
static size_t cie(struct asm_buf *a, bool debug, bool dwarf64, unsigned version, const char *aug,
		  const uint8_t *augdata, size_t naug, const uint8_t *insns, size_t ninsns)
{
	size_t at = entry_open(a, dwarf64);

	if (debug)
		put_le(a, dwarf64 ? UINT64_MAX : 0xffffffff, dwarf64 ? 8 : 4);
	else
		put_le(a, 0, 4);
	put_le(a, version, 1);
	put(a, aug, strlen(aug) + 1);
	if (version == 4) {
		put_le(a, 8, 1); /* address_size */
		put_le(a, 0, 1); /* segment_selector_size */
	}
	put_uleb(a, 1);
	put_le(a, 0x78, 1); /* sleb -8 */
	if (version == 1)
		put_le(a, 16, 1);
	else
		put_uleb(a, 16);
	if (aug[0] == 'z') {
		put_uleb(a, naug);
		put(a, augdata, naug);
	}
	put(a, insns, ninsns);
	entry_close(a, at);
	return at;
}

/* The usual x86-64 CIE: CFA = rsp + 8, ra at CFA - 8; "zR" absptr in .eh_frame. */
static const uint8_t cie_insns[] = {0x0c, 7, 8, 0x90, 1};

static size_t std_cie(struct asm_buf *a)
{
	static const uint8_t enc = 0x00;

	return cie(a, false, false, 1, "zR", &enc, 1, cie_insns, sizeof(cie_insns));
}

/* An .eh_frame FDE with absptr addresses and no augmentation data. */
static size_t fde(struct asm_buf *a, size_t cie_at, uint64_t start, uint64_t len,
		  const uint8_t *insns, size_t ninsns)
{
	size_t at = entry_open(a, false);

	put_le(a, a->n - cie_at, 4);
	put_le(a, start, 8);
	put_le(a, len, 8);
	put_uleb(a, 0);
	put(a, insns, ninsns);
	entry_close(a, at);
	return at;
}

static void build_eh(const struct asm_buf *a, struct symb_deltas *d, struct symb_cfi_stats *st)
{
	struct symb_cfi_sections sec = {.eh_frame = a->b, .eh_frame_size = a->n};

	assert_int_equal(symb_cfi__build_sections(&sec, d, st), 0);
	check_table(d);
}

struct row {
	uint64_t pc;
	int kind, cfa, bp;
};

static void expect_rows_(const struct symb_deltas *d, const struct row *want, size_t n, int line)
{
	size_t i;

	for (i = 0; i < n && i < d->n; i++) {
		const struct symb_delta *r = &d->rows[i];

		if (r->pc != want[i].pc || r->kind != want[i].kind || r->cfa_off != want[i].cfa ||
		    r->bp_off != want[i].bp)
			fail_msg("line %d: row %zu: %#lx %d %d %d, want %#lx %d %d %d", line, i,
				 (unsigned long)r->pc, r->kind, r->cfa_off, r->bp_off,
				 (unsigned long)want[i].pc, want[i].kind, want[i].cfa, want[i].bp);
	}
	if (d->n != n)
		fail_msg("line %d: %u rows, want %zu", line, d->n, n);
}
#define expect_rows(d, want) expect_rows_(d, want, sizeof(want) / sizeof(want[0]), __LINE__)

enum { SP = SYMB_CFA_SP, BP = SYMB_CFA_BP, NONE = SYMB_CFA_NONE, PLT = SYMB_CFA_PLT };
enum { INV = SYMB_CFA_INVALID, END = SYMB_CFA_END, SIG = SYMB_CFA_SIGNAL };

/* Prologue/epilogue, remember/restore, gaps, merging of equal neighbours. */
static void test_asm_basic(void **state)
{
	static const uint8_t f1[] = {0x41,		     /* advance_loc 1 */
				     0x0e, 16,		     /* def_cfa_offset 16 */
				     0x86, 2,		     /* offset r6, 2*-8 */
				     0x43,		     /* advance_loc 3 */
				     0x0d, 6,		     /* def_cfa_register r6 */
				     0x48,		     /* advance_loc 8 */
				     0x0a,		     /* remember_state */
				     0x0c, 7,	 8,	     /* def_cfa r7, 8 */
				     0xc6,		     /* restore r6 */
				     0x41,		     /* advance_loc 1 */
				     0x0b,		     /* restore_state */
				     0x2e, 0x10,	     /* GNU_args_size */
				     0x02, 1,		     /* advance_loc1 1 */
				     0x0e, 16,		     /* def_cfa_offset 16 (rbp still) */
				     0x03, 1,	 0,	     /* advance_loc2 1 */
				     0x08, 6,		     /* same_value r6 */
				     0x04, 1,	 0,    0, 0, /* advance_loc4 1 */
				     0x13, 0x7d,	     /* def_cfa_offset_sf -3 => 24 */
				     0x12, 7,	 0x7e,	     /* def_cfa_sf r7, -2 => 16 */
				     0x00, 0x00};
	static const struct row want[] = {
		{0x1000, SP, 8, 0},   {0x1001, SP, 16, -16}, {0x1004, BP, 16, -16},
		{0x100c, SP, 8, 0},   {0x100d, BP, 16, -16}, {0x100f, BP, 16, 0},
		{0x1010, NONE, 0, 0}, {0x1020, SP, 8, 0},    {0x1040, NONE, 0, 0},
	};
	struct symb_cfi_stats st;
	struct asm_buf *a = calloc(1, sizeof(*a));
	struct symb_deltas d;
	size_t c;

	c = std_cie(a);
	fde(a, c, 0x1000, 0x10, f1, sizeof(f1));
	fde(a, c, 0x1030, 0x10, NULL, 0); /* merges with the one before it */
	fde(a, c, 0x1020, 0x10, NULL, 0);
	put_le(a, 0, 4); /* terminator, then junk that must not be read */
	put_le(a, 0xdeadbeef, 4);
	build_eh(a, &d, &st);
	expect_rows(&d, want);
	assert_int_equal(st.cies, 1);
	assert_int_equal(st.fdes, 3);
	assert_int_equal(st.bad_entries, 0);
	assert_int_equal(st.from_eh_frame, 3);
	expect_row(&d, 0x1011, NONE, 0, 0);
	assert_null(symb_deltas__find(&d, 0xfff));
	symb_deltas__free(&d);
	free(a);
}

/* Overlapping FDEs: the first by address wins, the loser keeps what is past it, counted. */
static void test_asm_overlap(void **state)
{
	static const uint8_t big[] = {0x0e, 32};
	static const struct row want[] = {
		{0x2000, SP, 8, 0},
		{0x2010, SP, 32, 0},
		{0x2020, NONE, 0, 0},
	};
	struct symb_cfi_stats st;
	struct asm_buf *a = calloc(1, sizeof(*a));
	struct symb_deltas d;
	size_t c;

	c = std_cie(a);
	fde(a, c, 0x2008, 0x18, big, sizeof(big));
	fde(a, c, 0x2000, 0x10, NULL, 0);
	fde(a, c, 0x2002, 0x2, big, sizeof(big)); /* inside the first: dropped */
	fde(a, c, 0x5000, 0, big, sizeof(big));	  /* empty: nothing */
	build_eh(a, &d, &st);
	expect_rows(&d, want);
	assert_int_equal(st.bad_entries, 2);
	assert_int_equal(st.fdes, 4);
	symb_deltas__free(&d);
	free(a);
}

/* What becomes PLT, INVALID and END. */
static void test_asm_kinds(void **state)
{
#define PLT_EXPR(lit) 0x0f, 11, 0x77, 8, 0x80, 0, 0x3f, 0x1a, lit, 0x2a, 0x33, 0x24, 0x22
	static const uint8_t f[] = {
		PLT_EXPR(0x3b), 0x41,		  /* 0x1000 PLT */
		PLT_EXPR(0x3a), 0x0e, 8,    0x41, /* lit10 PLT; offset kept, still PLT */
		0x0f,		3,    0x77, 8,	  0x06, 0x41, /* 0x1002 breg7 8; deref: INVALID */
		0x0c,		3,    16,   0x41,	      /* 0x1003 CFA = rbx + 16: INVALID */
		0x0c,		7,    8,    0x90, 2,	0x41, /* 0x1004 ra at CFA-16: INVALID */
		0x90,		1,    0x09, 6,	  3,	0x41, /* 0x1005 rbp in rbx: INVALID */
		0x08,		6,    0x14, 6,	  2,	0x41, /* 0x1006 val_offset rbp: INVALID */
		0x05,		6,    2,    0x41, /* 0x1007 offset_extended rbp: bp -16 */
		0x2f,		6,    2,    0x41, /* 0x1008 negative_offset_extended: +16 */
		0x11,		6,    0xf0, 0xb0, 0x7f, 0x41, /* 0x1009 bp 10000*-8: out of int16 */
		0x06,		6,    0x41,		      /* 0x100a restore_extended r6: 0 */
		0x10,		6,    2,    0x77, 0,	0x41, /* 0x100b expression rbp: INVALID */
		0x08,		6,    0x09, 16,	  0,	0x41, /* 0x100c ra in rax: INVALID */
		0x08,		16,   0x41,		      /* 0x100d ra same value: INVALID */
		0x07,		16,   0x41,		      /* 0x100e ra undefined: END */
		0x0c,		7,    0x80, 0x80, 0x80, 0x80, 0x10, /* CFA offset 2^32: INVALID */
		0x90,		1};
	static const struct row want[] = {
		{0x1000, PLT, 0, 0},  {0x1002, INV, 0, 0}, {0x1007, SP, 8, -16},
		{0x1008, SP, 8, 16},  {0x1009, INV, 0, 0}, {0x100a, SP, 8, 0},
		{0x100b, INV, 0, 0},  {0x100e, END, 0, 0}, {0x100f, INV, 0, 0},
		{0x1010, NONE, 0, 0},
	};
	struct symb_cfi_stats st;
	struct asm_buf *a = calloc(1, sizeof(*a));
	struct symb_deltas d;
	size_t c;

	c = std_cie(a);
	fde(a, c, 0x1000, 0x10, f, sizeof(f));
	build_eh(a, &d, &st);
	expect_rows(&d, want);
	assert_int_equal(st.bad_entries, 0);
	assert_int_equal(st.invalid_rows, 10);
	symb_deltas__free(&d);
	free(a);
#undef PLT_EXPR
}

/* 'S' CIEs, 64-bit lengths, "zPLR" with an indirect personality, pcrel and other encodings. */
static void test_asm_augmentations(void **state)
{
	/* P: indirect pcrel sdata4 personality; L: pcrel sdata4; R: pcrel sdata4 */
	static const uint8_t zplr[] = {0x9b, 0xef, 0xbe, 0xad, 0xde, 0x1b, 0x1b};
	static const uint8_t zrs[] = {0x1b};
	static const uint8_t push[] = {0x41, 0x0e, 16};
	static const struct row want[] = {
		{0x3000, SP, 8, 0},   {0x3001, SP, 16, 0}, {0x3010, SIG, 0, 0},
		{0x3020, NONE, 0, 0}, {0x3030, SP, 8, 0},  {0x3031, SP, 16, 0},
		{0x3040, NONE, 0, 0}, {0x4000, SP, 8, 0},  {0x4001, SP, 16, 0},
		{0x4002, NONE, 0, 0}, {0x5000, SP, 8, 0},  {0x5001, SP, 16, 0},
		{0x5002, NONE, 0, 0},
	};
	const uint64_t vaddr = 0x100000;
	struct symb_cfi_sections sec = {0};
	struct symb_cfi_stats st;
	struct asm_buf *a = calloc(1, sizeof(*a));
	struct symb_deltas d;
	size_t c1, c2, c3, c4, at;
	uint8_t enc;

	/* "zPLR", FDE with an LSDA pointer in its augmentation data */
	c1 = cie(a, false, false, 3, "zPLR", zplr, sizeof(zplr), cie_insns, sizeof(cie_insns));
	at = entry_open(a, false);
	put_le(a, a->n - c1, 4);
	put_le(a, (uint32_t)(0x3000 - (vaddr + a->n)), 4);
	put_le(a, 0x10, 4);
	put_uleb(a, 4);
	put_le(a, 0x12345678, 4);
	put(a, push, sizeof(push));
	entry_close(a, at);
	/* 'S': every row a signal frame, whatever the program says */
	c2 = cie(a, false, false, 1, "zRS", zrs, 1, cie_insns, sizeof(cie_insns));
	at = entry_open(a, false);
	put_le(a, a->n - c2, 4);
	put_le(a, (uint32_t)(0x3010 - (vaddr + a->n)), 4);
	put_le(a, 0x10, 4);
	put_uleb(a, 0);
	put(a, push, sizeof(push));
	entry_close(a, at);
	/* 64-bit lengths for the CIE and the FDE (the CIE pointer stays 4 bytes) */
	enc = 0x04; /* udata8 */
	c3 = cie(a, false, true, 1, "zR", &enc, 1, cie_insns, sizeof(cie_insns));
	at = entry_open(a, true);
	put_le(a, a->n - c3, 4);
	put_le(a, 0x3030, 8);
	put_le(a, 0x10, 8);
	put_uleb(a, 0);
	put(a, push, sizeof(push));
	entry_close(a, at);
	/* udata2 and uleb128 starts, datarel from .eh_frame_hdr */
	enc = 0x02;
	c4 = cie(a, false, false, 1, "zR", &enc, 1, cie_insns, sizeof(cie_insns));
	at = entry_open(a, false);
	put_le(a, a->n - c4, 4);
	put_le(a, 0x4000, 2);
	put_le(a, 2, 2);
	put_uleb(a, 0);
	put(a, push, sizeof(push));
	entry_close(a, at);
	enc = 0x31; /* datarel uleb128 */
	c4 = cie(a, false, false, 1, "zR", &enc, 1, cie_insns, sizeof(cie_insns));
	at = entry_open(a, false);
	put_le(a, a->n - c4, 4);
	put_uleb(a, 0x5000 - 0x800);
	put_uleb(a, 2);
	put_uleb(a, 0);
	put(a, push, sizeof(push));
	entry_close(a, at);

	sec.eh_frame = a->b;
	sec.eh_frame_size = a->n;
	sec.eh_frame_vaddr = vaddr;
	sec.eh_frame_hdr = (const uint8_t *)"\1\x1b\3\x3b\0\0\0\0";
	sec.eh_frame_hdr_size = 8;
	sec.eh_frame_hdr_vaddr = 0x800;
	assert_int_equal(symb_cfi__build_sections(&sec, &d, &st), 0);
	check_table(&d);
	expect_rows(&d, want);
	assert_int_equal(st.bad_entries, 0);
	assert_int_equal(st.cies, 5);
	assert_int_equal(st.fdes, 5);
	symb_deltas__free(&d);

	/* without the hdr, datarel has no base: that FDE is bad */
	sec.eh_frame_hdr = NULL;
	sec.eh_frame_hdr_size = 0;
	assert_int_equal(symb_cfi__build_sections(&sec, &d, &st), 0);
	assert_int_equal(st.bad_entries, 1);
	assert_int_equal(d.rows[d.n - 2].pc, 0x4001);
	symb_deltas__free(&d);
	free(a);
}

/* .debug_frame: versions 1, 3, 4, 64-bit; used only where .eh_frame has no FDE. */
static void test_asm_debug_frame(void **state)
{
	static const uint8_t push[] = {0x41, 0x0e, 16};
	static const uint8_t setloc[] = {0x01, 0x08, 0x50, 0, 0, 0, 0, 0, 0, 0x0e, 24};
	static const struct row want[] = {
		{0x0ff0, SP, 8, 0},  {0x0ff1, SP, 16, 0},  {0x1000, SP, 8, 0},
		{0x1010, SP, 16, 0}, {0x1020, NONE, 0, 0}, {0x2000, SP, 8, 0},
		{0x2001, SP, 16, 0}, {0x2010, NONE, 0, 0}, {0x3000, SP, 8, 0},
		{0x3001, SP, 16, 0}, {0x3010, NONE, 0, 0}, {0x4000, SP, 8, 0},
		{0x4001, SP, 16, 0}, {0x4010, NONE, 0, 0}, {0x5000, SP, 8, 0},
		{0x5008, SP, 24, 0}, {0x5010, NONE, 0, 0},
	};
	struct asm_buf *eh = calloc(1, sizeof(*eh)), *dbg = calloc(1, sizeof(*dbg));
	struct symb_cfi_sections sec = {0};
	struct symb_cfi_stats st;
	struct symb_deltas d;
	size_t c, v3, v4, c64, at, ptr;
	unsigned i;

	c = std_cie(eh);
	fde(eh, c, 0x1000, 0x10, NULL, 0);
	/* an FDE before its CIE is fine in .debug_frame */
	at = entry_open(dbg, false);
	ptr = dbg->n;
	put_le(dbg, 0, 4); /* the v1 CIE below */
	put_le(dbg, 0x0ff0, 8);
	put_le(dbg, 0x30, 8);
	put(dbg, push, sizeof(push));
	entry_close(dbg, at);
	c = cie(dbg, true, false, 1, "", NULL, 0, cie_insns, sizeof(cie_insns));
	dbg->b[ptr] = (uint8_t)c;
	v3 = cie(dbg, true, false, 3, "", NULL, 0, cie_insns, sizeof(cie_insns));
	v4 = cie(dbg, true, false, 4, "", NULL, 0, cie_insns, sizeof(cie_insns));
	c64 = cie(dbg, true, true, 4, "", NULL, 0, cie_insns, sizeof(cie_insns));
	for (i = 0; i < 3; i++) {
		size_t ci = i == 0 ? v3 : i == 1 ? v4 : c64;

		at = entry_open(dbg, i == 2);
		put_le(dbg, ci, i == 2 ? 8 : 4);
		put_le(dbg, 0x2000 + 0x1000 * i, 8);
		put_le(dbg, 0x10, 8);
		put(dbg, push, sizeof(push));
		entry_close(dbg, at);
	}
	at = entry_open(dbg, false);
	put_le(dbg, c, 4);
	put_le(dbg, 0x5000, 8);
	put_le(dbg, 0x10, 8);
	put(dbg, setloc, sizeof(setloc));
	entry_close(dbg, at);
	/* a discarded function's FDE, relocated to 0: ignored */
	at = entry_open(dbg, false);
	put_le(dbg, c, 4);
	put_le(dbg, 0, 8);
	put_le(dbg, 0x10, 8);
	entry_close(dbg, at);

	sec.eh_frame = eh->b;
	sec.eh_frame_size = eh->n;
	sec.debug_frame = dbg->b;
	sec.debug_frame_size = dbg->n;
	assert_int_equal(symb_cfi__build_sections(&sec, &d, &st), 0);
	check_table(&d);
	expect_rows(&d, want);
	assert_int_equal(st.bad_entries, 0);
	assert_int_equal(st.cies, 5);
	assert_int_equal(st.fdes, 7);
	assert_int_equal(st.from_eh_frame, 1);
	assert_int_equal(st.from_debug_frame, 5);
	symb_deltas__free(&d);
	free(eh);
	free(dbg);
}

/* Each malformation costs its entry, and only that. */
static void test_asm_malformed(void **state)
{
	static const uint8_t bad_op[] = {0x41, 0x0e, 16, 0x41, 0x3f /* hi_user */};
	static const uint8_t underflow[] = {0x41, 0x0b};
	static const uint8_t backwards[] = {0x42, 0x01, 0, 0x10, 0, 0, 0, 0, 0, 0};
	static const uint8_t cut[] = {0x41, 0x0f, 5, 0x77};
	static const uint8_t in_cie[] = {0x0c, 7, 8, 0x41, 0x90, 1};
	static const uint8_t zx = 0;
	static const uint8_t textrel = 0x20, indirect = 0x83;
	uint8_t deep[17]; /* one more than the state stack holds */
	static const struct row want[] = {
		{0x6000, SP, 8, 0},
		{0x6010, NONE, 0, 0},
		{0x7000, SP, 8, 0},
		{0x7010, NONE, 0, 0},
	};
	struct symb_cfi_stats st;
	struct asm_buf *a = calloc(1, sizeof(*a));
	struct symb_deltas d;
	size_t c, cx, at;
	int bad = 0;

	memset(deep, 0x0a, sizeof(deep)); /* 17 remember_state */
	c = std_cie(a);
	fde(a, c, 0x6000, 0x10, NULL, 0);
	fde(a, c, 0x1000, 0x10, bad_op, sizeof(bad_op)), bad++;
	fde(a, c, 0x1100, 0x10, underflow, sizeof(underflow)), bad++;
	fde(a, c, 0x1200, 0x10, backwards, sizeof(backwards)), bad++;
	fde(a, c, 0x1300, 0x10, cut, sizeof(cut)), bad++;
	fde(a, c, 0x1400, 0x10, deep, sizeof(deep)), bad++;
	fde(a, c, UINT64_MAX - 4, 0x10, NULL, 0), bad++; /* wraps */
	/* CIEs that are bad, and so their FDEs */
	cx = cie(a, false, false, 1, "zX", &zx, 1, cie_insns, sizeof(cie_insns)), bad++;
	fde(a, cx, 0x1500, 0x10, NULL, 0), bad++;
	cx = cie(a, false, false, 2, "zR", &zx, 1, cie_insns, sizeof(cie_insns)), bad++;
	fde(a, cx, 0x1600, 0x10, NULL, 0), bad++;
	cx = cie(a, false, false, 1, "eh", NULL, 0, cie_insns, sizeof(cie_insns)), bad++;
	cx = cie(a, false, false, 1, "", NULL, 0, in_cie, sizeof(in_cie)), bad++;
	cx = cie(a, false, false, 1, "zR", &textrel, 1, cie_insns, sizeof(cie_insns));
	fde(a, cx, 0x1700, 0x10, NULL, 0), bad++;
	cx = cie(a, false, false, 1, "zR", &indirect, 1, cie_insns, sizeof(cie_insns));
	fde(a, cx, 0x1800, 0x10, NULL, 0), bad++;
	/* a CIE pointer to nowhere, and one past the start */
	at = entry_open(a, false);
	put_le(a, 3, 4);
	put_le(a, 0x1900, 8);
	put_le(a, 0x10, 8);
	entry_close(a, at), bad++;
	at = entry_open(a, false);
	put_le(a, a->n + 100, 4);
	put_le(a, 0x1900, 8);
	put_le(a, 0x10, 8);
	entry_close(a, at), bad++;
	/* augmentation data longer than the FDE */
	at = entry_open(a, false);
	put_le(a, a->n - c, 4);
	put_le(a, 0x1a00, 8);
	put_le(a, 0x10, 8);
	put_uleb(a, 100);
	entry_close(a, at), bad++;
	fde(a, c, 0x7000, 0x10, NULL, 0);
	/* a length past the end: the walk stops there */
	put_le(a, 1000, 4), bad++;
	put_le(a, 0, 4);
	build_eh(a, &d, &st);
	expect_rows(&d, want);
	assert_int_equal(st.bad_entries, bad);
	assert_int_equal(st.invalid_rows, 0);
	assert_int_equal(st.from_eh_frame, 2);
	symb_deltas__free(&d);
	free(a);
}

/*
 * One .debug_frame FDE over thousands of .eh_frame windows, with a long
 * program: the instruction budget ends the build early, and fast.
 */
static void test_asm_budget(void **state)
{
	struct asm_buf *eh = calloc(1, sizeof(*eh)), *dbg = calloc(1, sizeof(*dbg));
	struct symb_cfi_sections sec = {0};
	struct symb_cfi_stats st;
	struct symb_deltas d;
	size_t c, at, i;

	c = std_cie(eh);
	for (i = 0; i < 2000; i++)
		fde(eh, c, 0x10000 + 4 * i, 2, NULL, 0);
	c = cie(dbg, true, false, 1, "", NULL, 0, cie_insns, sizeof(cie_insns));
	at = entry_open(dbg, false);
	put_le(dbg, c, 4);
	put_le(dbg, 0x10000, 8);
	put_le(dbg, 0x10000, 8);
	for (i = 0; i < 30000; i++)
		put_le(dbg, 0x00, 1);
	put_le(dbg, 0x41, 1);
	entry_close(dbg, at);
	sec.eh_frame = eh->b;
	sec.eh_frame_size = eh->n;
	sec.debug_frame = dbg->b;
	sec.debug_frame_size = dbg->n;
	assert_int_equal(symb_cfi__build_sections(&sec, &d, &st), 0);
	check_table(&d);
	assert_int_equal(st.bad_entries, 1);
	assert_int_equal(st.from_eh_frame, 2000);
	assert_int_equal(st.from_debug_frame, 1);
	/* the debug FDE's first window is there, and the last .eh_frame FDE */
	expect_row(&d, 0x10002, SP, 8, 0);
	expect_row(&d, 0x10000 + 4 * 1999, SP, 8, 0);
	symb_deltas__free(&d);
	free(eh);
	free(dbg);
}

/* ---- blob ---- */

static void roundtrip(const struct symb_deltas *d, uint8_t **blob, size_t *len)
{
	struct symb_deltas back;

	assert_int_equal(symb_deltas__encode(d, blob, len), 0);
	assert_int_equal(symb_deltas__decode(*blob, *len, &back), 0);
	assert_true(tables_equal(d, &back));
	symb_deltas__free(&back);
}

static void test_blob_roundtrip(void **state)
{
	struct symb_deltas d, empty = {0};
	uint8_t *blob;
	size_t len;

	build_file(CFI_FX_FP, &d, NULL);
	roundtrip(&d, &blob, &len);
	free(blob);
	symb_deltas__free(&d);
	if (!access(LIBC_PATH, R_OK)) {
		build_file(LIBC_PATH, &d, NULL);
		roundtrip(&d, &blob, &len);
		print_message("libc: %u rows, blob %zu bytes, %.2f bytes/row\n", d.n, len,
			      (double)len / d.n);
		free(blob);
		symb_deltas__free(&d);
	}
	roundtrip(&empty, &blob, &len);
	free(blob);
}

/* Fields the builder never makes, but the format must carry. */
static void test_blob_extremes(void **state)
{
	struct symb_delta rows[] = {
		{.pc = 0, .cfa_off = INT32_MIN, .bp_off = INT16_MIN, .kind = SP},
		{.pc = 1, .cfa_off = INT32_MAX, .bp_off = INT16_MAX, .kind = BP},
		{.pc = 2, .cfa_off = 112, .bp_off = -1, .kind = SP},
		{.pc = 3, .cfa_off = 120, .bp_off = 1, .kind = SP},
		{.pc = 4, .cfa_off = 4, .kind = SP},
		{.pc = 5, .cfa_off = -8, .kind = SP},
		{.pc = 0x8000000000000000ull, .kind = PLT},
		{.pc = UINT64_MAX - 1, .kind = INV},
		{.pc = UINT64_MAX, .kind = NONE},
	};
	struct symb_deltas d = {rows, sizeof(rows) / sizeof(rows[0])};
	uint8_t *blob;
	size_t len;

	roundtrip(&d, &blob, &len);
	free(blob);
}

static void test_blob_encode_rejects(void **state)
{
	struct symb_delta rows[] = {
		{.pc = 0x10, .cfa_off = 8, .kind = SP},
		{.pc = 0x20, .kind = NONE},
	};
	struct symb_deltas d = {rows, 2};
	uint8_t *blob = (uint8_t *)1;
	size_t len = 1;

	rows[1].kind = 7;
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), -EINVAL);
	assert_null(blob);
	assert_int_equal(len, 0);
	rows[1].kind = SP; /* last not NONE */
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), -EINVAL);
	rows[1].kind = NONE;
	rows[1].pad = 1;
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), -EINVAL);
	rows[1].pad = 0;
	rows[1].pc = 0x10; /* not increasing */
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), -EINVAL);
	rows[1].pc = 0x20;
	rows[0].kind = NONE; /* equal neighbours */
	rows[0].cfa_off = 0;
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), -EINVAL);
}

static void test_blob_decode_rejects(void **state)
{
	struct symb_deltas d, back;
	uint8_t *blob, *copy;
	size_t len, i;
	unsigned bit;

	build_file(CFI_FX_NOFP, &d, NULL);
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), 0);
	copy = malloc(len);
	/* every truncation (into a buffer of exactly that size, for ASan) */
	for (i = 0; i < len; i++) {
		uint8_t *t = malloc(i ? i : 1);

		memcpy(t, blob, i);
		back.rows = (struct symb_delta *)1;
		assert_int_equal(symb_deltas__decode(t, i, &back), -EBADMSG);
		assert_null(back.rows);
		assert_int_equal(back.n, 0);
		free(t);
	}
	/* every bit flip */
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			memcpy(copy, blob, len);
			copy[i] ^= (uint8_t)(1u << bit);
			if (symb_deltas__decode(copy, len, &back) != -EBADMSG)
				fail_msg("flip of bit %u of byte %zu accepted", bit, i);
		}
	}
	/* a byte more */
	copy = realloc(copy, len + 1);
	memcpy(copy, blob, len);
	copy[len] = 0;
	assert_int_equal(symb_deltas__decode(copy, len + 1, &back), -EBADMSG);
	assert_int_equal(symb_deltas__decode(NULL, 0, &back), -EBADMSG);
	free(copy);
	free(blob);
	symb_deltas__free(&d);
}

/* ---- lazy tables (symb_deltas__open_blob) ---- */

/* Layout of a version 2 blob (cfi_blob.c): header, pc[nb], off[nb], blocks, hash. */
#define BLOB_HDR   10
#define BLOB_SHIFT 8 /* cfi_blob.c's BLOB_SHIFT: encode's rows per block, log2 */

/* A copy of cfi_blob.c's blob_hash, to craft blobs whose checksum is right. */
static uint64_t blob_hash(const uint8_t *p, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t a = 0x6c70736431ull ^ len, b = ~a, w, x;
	size_t i;

	for (i = 0; i + 16 <= len; i += 16) {
		memcpy(&w, p + i, 8);
		memcpy(&x, p + i + 8, 8);
		a = (a ^ w) * k;
		b = (b ^ x) * k;
		a ^= a >> 29;
		b ^= b >> 29;
	}
	for (; i < len; i++) {
		a = (a ^ p[i]) * k;
		a ^= a >> 29;
	}
	a ^= b * k;
	a *= k;
	return a ^ (a >> 32);
}

static void rehash(uint8_t *blob, size_t len)
{
	uint64_t h = blob_hash(blob, len - 8);

	for (unsigned i = 0; i < 8; i++)
		blob[len - 8 + i] = (uint8_t)(h >> (8 * i));
}

static uint64_t le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = v << 8 | p[n];
	return v;
}

static uint32_t blob_nblocks(const uint8_t *blob)
{
	uint32_t n = (uint32_t)le(blob + 6, 4);
	unsigned shift = blob[5];

	return (n + (1u << shift) - 1) >> shift;
}

/* Where block i's bytes start in blob. */
static size_t blob_block_at(const uint8_t *blob, uint32_t i)
{
	uint32_t nb = blob_nblocks(blob);

	return BLOB_HDR + 12 * (size_t)nb + le(blob + BLOB_HDR + 8 * (size_t)nb + 4 * i, 4);
}

static uint8_t *blob_dup(const uint8_t *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);

	assert_non_null(q);
	memcpy(q, p, n);
	return q;
}

static void same_answer_(const struct symb_deltas *want, const struct symb_deltas *got, uint64_t pc,
			 int line)
{
	const struct symb_delta *a = symb_deltas__find(want, pc), *b = symb_deltas__find(got, pc);

	if (!a && !b)
		return;
	if (!a || !b || a->pc != b->pc || a->kind != b->kind || a->cfa_off != b->cfa_off ||
	    a->bp_off != b->bp_off || b->pad)
		fail_msg("line %d: at %#llx: lazy table answers %s, built table %s", line,
			 (unsigned long long)pc, b ? "a row" : "NULL", a ? "a row" : "NULL");
}
#define same_answer(want, got, pc) same_answer_(want, got, pc, __LINE__)

/* Opens encode(d) lazily and checks every row's pc, pc - 1, pc + 1 and more. */
static void lazy_matches(const struct symb_deltas *d)
{
	static const uint64_t outside[] = {0,	      1, 0x1000, UINT64_MAX / 2, UINT64_MAX - 1,
					   UINT64_MAX};
	struct symb_deltas z;
	uint8_t *blob;
	size_t len, i;

	assert_int_equal(symb_deltas__encode(d, &blob, &len), 0);
	assert_int_equal(symb_deltas__open_blob(blob, len, &z), 0);
	assert_int_equal(z.n, d->n);
	assert_null(z.rows);
	for (i = 0; i < d->n; i++) {
		same_answer(d, &z, d->rows[i].pc);
		same_answer(d, &z, d->rows[i].pc - 1);
		same_answer(d, &z, d->rows[i].pc + 1);
	}
	for (i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		same_answer(d, &z, outside[i]);
	if (d->n) {
		same_answer(d, &z, d->rows[d->n - 1].pc + 0x100000);
		/* found rows stay put: a block decodes once */
		assert_ptr_equal(symb_deltas__find(&z, d->rows[0].pc),
				 symb_deltas__find(&z, d->rows[0].pc));
	}
	assert_int_equal(symb_deltas__bad_blocks(&z), 0);
	/* a lazy table is not encoded again (the empty one is not lazy) */
	if (z.lazy)
		assert_int_equal(symb_deltas__encode(&z, &blob, &len), -EINVAL);
	symb_deltas__free(&z);
	assert_null(z.lazy);
	assert_int_equal(z.n, 0);
	symb_deltas__free(&z);
}

/* n rows over several blocks, every kind and field size, last NONE. */
static void synthetic(struct symb_deltas *d, uint32_t n)
{
	uint32_t i;

	d->rows = calloc(n, sizeof(*d->rows));
	d->n = n;
	d->lazy = NULL;
	assert_non_null(d->rows);
	for (i = 0; i < n; i++) {
		struct symb_delta *r = &d->rows[i];

		r->pc = 0x400000 + 10 * (uint64_t)i + (i % 5) * (i % 3) + (i > n / 2 ? 1000000 : 0);
		r->kind = i % 4 == 3 ? SYMB_CFA_NONE : i % 4 == 1 ? SYMB_CFA_BP : SYMB_CFA_SP;
		if (r->kind != SYMB_CFA_NONE)
			r->cfa_off = i % 7 == 0 ? -12345 * (int32_t)i : 8 * (int32_t)(i % 20);
		if (r->kind == SYMB_CFA_BP)
			r->bp_off = (int16_t)(i % 11 == 0 ? 300 : -16);
		if (i % (1u << BLOB_SHIFT) == 0)
			r->cfa_off = 8; /* a block's first row is one byte, 0x11 */
	}
	d->rows[n - 1] = (struct symb_delta){.pc = d->rows[n - 1].pc, .kind = SYMB_CFA_NONE};
	if (n > 1 && d->rows[n - 2].kind == SYMB_CFA_NONE)
		d->rows[n - 2] = (struct symb_delta){
			.pc = d->rows[n - 2].pc, .kind = SYMB_CFA_SP, .cfa_off = 8};
	for (i = 1; i < n; i++)
		assert_true(d->rows[i].pc > d->rows[i - 1].pc);
	check_table(d);
}

static void test_lazy_matches(void **state)
{
	static const char *const files[] = {CFI_FX_FP, CFI_FX_NOFP, CFI_FX_DBG, LIBC_PATH};
	struct symb_deltas d, empty = {0}, z;
	uint8_t *blob;
	size_t len, i;

	for (i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (access(files[i], R_OK))
			continue;
		build_file(files[i], &d, NULL);
		lazy_matches(&d);
		symb_deltas__free(&d);
	}
	synthetic(&d, 5 << BLOB_SHIFT); /* whole blocks */
	lazy_matches(&d);
	symb_deltas__free(&d);
	synthetic(&d, (3 << BLOB_SHIFT) + 1); /* a last block of one row */
	lazy_matches(&d);
	symb_deltas__free(&d);
	/* the empty table */
	lazy_matches(&empty);
	assert_int_equal(symb_deltas__encode(&empty, &blob, &len), 0);
	assert_int_equal(symb_deltas__open_blob(blob, len, &z), 0);
	assert_null(z.lazy);
	assert_null(symb_deltas__find(&z, 0x1000));
	symb_deltas__free(&z);
}

/* A checksum-correct blob with bad blocks: only lookups in them fail, counted once each. */
static void test_lazy_bad_block(void **state)
{
	struct symb_deltas d, z, back;
	uint8_t *blob, *copy;
	uint32_t bad1 = 2, nb, i;
	size_t len, at;

	synthetic(&d, (6 << BLOB_SHIFT) + 100);
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), 0);
	nb = blob_nblocks(blob);
	assert_int_equal(nb, 7);
	copy = blob_dup(blob, len);
	/* block 2: its first row's kind 7 */
	copy[blob_block_at(copy, bad1)] |= 0x07;
	/* the last block: its second row's pc delta 0 (after the first row's lone tag) */
	at = blob_block_at(copy, nb - 1);
	assert_int_equal(copy[at], 0x11);
	copy[at + 1] = 0;
	rehash(copy, len);
	/* decode sees every block */
	assert_int_equal(symb_deltas__decode(copy, len, &back), -EBADMSG);
	assert_int_equal(symb_deltas__open_blob(blob_dup(copy, len), len, &z), 0);
	assert_int_equal(symb_deltas__bad_blocks(&z), 0);
	for (i = 0; i < d.n; i++) {
		uint32_t b = i >> BLOB_SHIFT;
		const struct symb_delta *r = symb_deltas__find(&z, d.rows[i].pc);

		if (b == bad1 || b == nb - 1) {
			assert_null(r);
			assert_null(symb_deltas__find(&z, d.rows[i].pc + 1));
		} else {
			same_answer(&d, &z, d.rows[i].pc);
			same_answer(&d, &z, d.rows[i].pc + 1);
			if (i % (1u << BLOB_SHIFT) || b - 1 != bad1) /* pc - 1 in the bad block */
				same_answer(&d, &z, d.rows[i].pc - 1);
		}
	}
	assert_null(symb_deltas__find(&z, UINT64_MAX));
	assert_int_equal(symb_deltas__bad_blocks(&z), 2);
	symb_deltas__free(&z);
	assert_int_equal(symb_deltas__bad_blocks(&z), 0);
	/* one bad block costs only itself, also when it is the first looked up */
	memcpy(copy, blob, len);
	copy[blob_block_at(copy, 0) + 1] = 0; /* the second row's pc delta */
	rehash(copy, len);
	assert_int_equal(symb_deltas__open_blob(blob_dup(copy, len), len, &z), 0);
	assert_null(symb_deltas__find(&z, d.rows[0].pc));
	same_answer(&d, &z, d.rows[1 << BLOB_SHIFT].pc);
	same_answer(&d, &z, d.rows[d.n - 1].pc);
	assert_int_equal(symb_deltas__bad_blocks(&z), 1);
	symb_deltas__free(&z);
	free(copy);
	free(blob);
	symb_deltas__free(&d);
}

/* Every truncation and bit flip fails at open; so does a rehashed bad index or header. */
static void test_lazy_open_rejects(void **state)
{
	struct symb_deltas d, z;
	uint8_t *blob, *copy;
	size_t len, i, idx;
	unsigned bit;
	uint32_t nb;

	synthetic(&d, (2 << BLOB_SHIFT) + 10);
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), 0);
	for (i = 0; i < len; i++) {
		z.lazy = (struct symb_deltas_lazy *)1;
		assert_int_equal(symb_deltas__open_blob(blob_dup(blob, i), i, &z), -EBADMSG);
		assert_null(z.lazy);
		assert_null(z.rows);
		assert_int_equal(z.n, 0);
	}
	for (i = 0; i < len; i++) {
		for (bit = 0; bit < 8; bit++) {
			copy = blob_dup(blob, len);
			copy[i] ^= (uint8_t)(1u << bit);
			if (symb_deltas__open_blob(copy, len, &z) != -EBADMSG)
				fail_msg("flip of bit %u of byte %zu accepted", bit, i);
		}
	}
	copy = malloc(len + 1);
	memcpy(copy, blob, len);
	copy[len] = 0;
	assert_int_equal(symb_deltas__open_blob(copy, len + 1, &z), -EBADMSG);
	assert_int_equal(symb_deltas__open_blob(NULL, 0, &z), -EBADMSG);

	/* checksum right, header or index wrong */
	nb = blob_nblocks(blob);
	idx = BLOB_HDR;
	for (i = 0; i < 7; i++) {
		copy = blob_dup(blob, len);
		switch (i) {
		case 0: /* a pc not above the one before */
			memcpy(copy + idx + 8, copy + idx, 8);
			break;
		case 1: /* first pcs closer than a block's rows */
			copy[idx + 8] = (uint8_t)(copy[idx] + 10);
			memcpy(copy + idx + 9, copy + idx + 1, 7);
			break;
		case 2: /* the first block not at 0 */
			copy[idx + 8 * nb] = 1;
			break;
		case 3: /* offsets decreasing */
			memcpy(copy + idx + 8 * nb + 8, copy + idx + 8 * nb + 4, 4);
			copy[idx + 8 * nb + 8]--;
			break;
		case 4: /* an offset past the end */
			copy[idx + 8 * nb + 11] = 0x7f;
			break;
		case 5: /* block size too large */
			copy[5] = 13;
			break;
		case 6: /* more rows than the blob can hold */
			copy[8] = 0x10;
			break;
		}
		rehash(copy, len);
		if (symb_deltas__open_blob(copy, len, &z) != -EBADMSG)
			fail_msg("rehashed case %zu accepted", i);
	}
	free(blob);
	symb_deltas__free(&d);
}

/* ---- truncated and garbage sections ---- */

static void build_raw(const uint8_t *eh, size_t eh_size, const uint8_t *dbg, size_t dbg_size,
		      struct symb_cfi_stats *st)
{
	struct symb_cfi_sections sec = {.eh_frame = eh,
					.eh_frame_size = eh_size,
					.eh_frame_vaddr = 0x2000,
					.debug_frame = dbg,
					.debug_frame_size = dbg_size};
	struct symb_deltas d, back;
	uint8_t *blob;
	size_t len;

	assert_int_equal(symb_cfi__build_sections(&sec, &d, st), 0);
	check_table(&d);
	assert_int_equal(symb_deltas__encode(&d, &blob, &len), 0);
	assert_int_equal(symb_deltas__decode(blob, len, &back), 0);
	assert_true(tables_equal(&d, &back));
	free(blob);
	symb_deltas__free(&back);
	symb_deltas__free(&d);
}

/* Copies into an exact-size buffer so ASan sees any read past the end. */
static uint8_t *dup_exact(const uint8_t *p, size_t n)
{
	uint8_t *q = malloc(n ? n : 1);

	memcpy(q, p, n);
	return q;
}

static void test_truncated_sections(void **state)
{
	struct symb_cfi_stats st;
	const uint8_t *eh, *dbg;
	struct elf_file f, g;
	size_t eh_size, dbg_size, i;
	uint64_t vaddr;
	unsigned with_bad = 0;

	assert_non_null(open_elf(&f, CFI_FX_FP));
	assert_non_null(open_elf(&g, CFI_FX_DBG));
	eh = scn_bytes(f.elf, ".eh_frame", &eh_size, &vaddr);
	dbg = scn_bytes(g.elf, ".debug_frame", &dbg_size, &vaddr);
	assert_non_null(eh);
	assert_non_null(dbg);
	for (i = 0; i <= eh_size; i++) {
		uint8_t *t = dup_exact(eh, i);

		build_raw(t, i, NULL, 0, &st);
		with_bad += st.bad_entries > 0;
		free(t);
	}
	assert_true(with_bad > eh_size / 2);
	for (i = 0; i <= dbg_size; i++) {
		uint8_t *t = dup_exact(dbg, i);

		build_raw(NULL, 0, t, i, &st);
		free(t);
	}
	close_elf(&f);
	close_elf(&g);
}

static void test_mutated_sections(void **state)
{
	static const uint8_t vals[] = {0x00, 0xff, 0x80, 0x7f, 0x0a, 0x0b, 0x40};
	struct symb_cfi_stats st;
	const uint8_t *eh;
	struct elf_file f;
	size_t eh_size, i, j;
	uint64_t vaddr, x = 0x9e3779b97f4a7c15ull;
	uint8_t *t;

	assert_non_null(open_elf(&f, CFI_FX_FP));
	eh = scn_bytes(f.elf, ".eh_frame", &eh_size, &vaddr);
	t = dup_exact(eh, eh_size);
	for (i = 0; i < eh_size; i++) {
		for (j = 0; j < sizeof(vals); j++) {
			uint8_t keep = t[i];

			t[i] = vals[j];
			build_raw(t, eh_size, NULL, 0, &st);
			build_raw(NULL, 0, t, eh_size, &st);
			t[i] = keep;
		}
	}
	free(t);
	/* garbage */
	t = malloc(4096);
	for (i = 0; i < 300; i++) {
		for (j = 0; j < 4096; j++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			t[j] = (uint8_t)x;
			if (i & 1) /* small lengths, so entries start to parse */
				t[j] &= (j & 3) ? 0x1f : 0xff;
		}
		build_raw(t, 4096, t, 4096, &st);
	}
	free(t);
	close_elf(&f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_fp_prologue),
		cmocka_unit_test(test_nofp_prologue),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_start_is_end),
		cmocka_unit_test(test_debug_frame_only),
		cmocka_unit_test(test_separate_debug_file),
		cmocka_unit_test(test_no_section_headers),
		cmocka_unit_test(test_not_x86_64),
		cmocka_unit_test(test_libc_signal),
		cmocka_unit_test(test_readelf_fp),
		cmocka_unit_test(test_readelf_nofp),
		cmocka_unit_test(test_readelf_dbg),
		cmocka_unit_test(test_readelf_gcc),
		cmocka_unit_test(test_readelf_libc),
		cmocka_unit_test(test_asm_basic),
		cmocka_unit_test(test_asm_overlap),
		cmocka_unit_test(test_asm_kinds),
		cmocka_unit_test(test_asm_augmentations),
		cmocka_unit_test(test_asm_debug_frame),
		cmocka_unit_test(test_asm_malformed),
		cmocka_unit_test(test_asm_budget),
		cmocka_unit_test(test_blob_roundtrip),
		cmocka_unit_test(test_blob_extremes),
		cmocka_unit_test(test_blob_encode_rejects),
		cmocka_unit_test(test_blob_decode_rejects),
		cmocka_unit_test(test_lazy_matches),
		cmocka_unit_test(test_lazy_bad_block),
		cmocka_unit_test(test_lazy_open_rejects),
		cmocka_unit_test(test_truncated_sections),
		cmocka_unit_test(test_mutated_sections),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
