// SPDX-License-Identifier: MIT
/*
 * Unit tests for symbolizer/elf/elfsym.c against fixtures built from fixture.c
 * (see its header for the pinned layout). Paths come from the build:
 *   ELF_FIXTURE           host, libc, non-PIE, -rdynamic, pinned build-id
 *   ELF_FIXTURE_STRIPPED  the same after objcopy --strip-all (.dynsym only)
 *   ELF_FIXTURE_NOID      host, linked with --build-id=none
 *   ELF_FIXTURE_32        ELF32 (-m32 -nostdlib), when the toolchain can
 *   ELF_FIXTURE_BE        big-endian ELF64 (aarch64_be, lld), when it can
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
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "elfsym.h"

static const uint8_t fixture_build_id[20] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23,
	0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x01, 0x23, 0x45, 0x67,
};

#define FIXTURE_MARK	   "LPFIXTURE_A_MARK"
#define FIXTURE_MARK_VADDR 0x700008

struct expect {
	uint64_t addr;
	const char *name; /* from .symtab; NULL: no function there */
	uint64_t off;
	/* from .dynsym where it differs (it has no local symbols); NULL: the same */
	const char *dyn_name;
	uint64_t dyn_off;
};

static const struct expect expects[] = {
	{0x700000, "fixture_func_a", 0},
	{0x700003, "fixture_func_a", 3},
	{0x70003f, "fixture_func_a", 0x3f},
	{0x700040, NULL, 0}, /* gap after a sized function */
	{0x7000ff, NULL, 0},
	{0x700100, "fixture_func_b", 0},
	{0x700200, "fixture_func_c", 0},    /* global beats weak and local, then name order */
	{0x70023f, "fixture_func_c", 0x3f}, /* spans the group's largest size */
	{0x700240, NULL, 0},
	{0x700300, "fixture_weak_d", 0}, /* weak beats local */
	{0x70031f, "fixture_weak_d", 0x1f},
	{0x700320, NULL, 0},
	{0x700400, "fixture_zero", 0},
	{0x7004ff, "fixture_zero", 0xff}, /* zero size: up to the next function */
	{0x700500, "fixture_outer", 0},
	{0x700520, "fixture_inner", 0, "fixture_outer", 0x20},
	{0x70053f, "fixture_inner", 0x1f, "fixture_outer", 0x3f},
	{0x700540, "fixture_outer", 0x40}, /* past the nested one: the outer again */
	{0x7005ff, "fixture_outer", 0xff},
	{0x700600, NULL, 0}, /* an object, not a function */
	{0x700700, "fixture_ifunc", 0},
	{0x70070f, "fixture_ifunc", 0xf},
	{0x700710, NULL, 0},
	{0x700800, "fixture_last", 0},
	{0x70083f, "fixture_last", 0x3f}, /* zero size, last: up to the section's end */
	{0x700840, NULL, 0},
	{0, NULL, 0},
	{UINT64_MAX, NULL, 0},
};

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Allocation failure injection: the test links with --wrap for malloc,
 * calloc and realloc, which reroutes the calls made by elfsym.c (a static
 * library) but not libelf's own (a shared one). fail_alloc_in counts down
 * the allocations left before one fails; -1 disables it.
 */
static long fail_alloc_in = -1;

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);

static int alloc_should_fail(void)
{
	return fail_alloc_in >= 0 && fail_alloc_in-- == 0;
}

void *__wrap_malloc(size_t size)
{
	return alloc_should_fail() ? NULL : __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
	return alloc_should_fail() ? NULL : __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
	return alloc_should_fail() ? NULL : __real_realloc(p, size);
}

static uint8_t *read_all(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &st), 0);
	buf = malloc(st.st_size);
	assert_non_null(buf);
	assert_int_equal(read(fd, buf, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return buf;
}

static void check_symbols(const struct symb_elf *e, int dynamic)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(expects); i++) {
		const struct expect *x = &expects[i];
		int dyn = dynamic && x->dyn_name;
		const char *want = dyn ? x->dyn_name : x->name;
		uint64_t off = 0xdead;
		const char *got = symb_elf__symbolize(e, x->addr, &off);

		if (!want) {
			if (got)
				fail_msg("0x%llx: want no symbol, got %s",
					 (unsigned long long)x->addr, got);
			continue;
		}
		if (!got)
			fail_msg("0x%llx: want %s, got none", (unsigned long long)x->addr, want);
		assert_string_equal(got, want);
		assert_int_equal(off, dyn ? x->dyn_off : x->off);
		/* sym_off is optional */
		assert_ptr_equal(symb_elf__symbolize(e, x->addr, NULL), got);
	}
}

static void check_build_id(const struct symb_elf *e)
{
	uint8_t buf[64];

	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(symb_elf__build_id(e, buf, sizeof(buf)), sizeof(fixture_build_id));
	assert_memory_equal(buf, fixture_build_id, sizeof(fixture_build_id));
	assert_int_equal(buf[sizeof(fixture_build_id)], 0xee);
	/* A short buffer gets a prefix; the length is still the whole id's. */
	memset(buf, 0xee, sizeof(buf));
	assert_int_equal(symb_elf__build_id(e, buf, 4), sizeof(fixture_build_id));
	assert_memory_equal(buf, fixture_build_id, 4);
	assert_int_equal(buf[4], 0xee);
	assert_int_equal(symb_elf__build_id(e, NULL, 0), sizeof(fixture_build_id));
}

/* The marker's file offset maps to its pinned address; unloaded bytes do not map. */
static void check_offsets(const struct symb_elf *e, const char *path)
{
	uint64_t vaddr = 0;
	uint8_t *buf, *mark;
	size_t len;

	buf = read_all(path, &len);
	mark = memmem(buf, len, FIXTURE_MARK, strlen(FIXTURE_MARK));
	assert_non_null(mark);
	assert_int_equal(symb_elf__offset_to_vaddr(e, mark - buf, &vaddr), 0);
	assert_int_equal(vaddr, FIXTURE_MARK_VADDR);
	assert_string_equal(symb_elf__symbolize(e, vaddr, NULL), "fixture_func_a");
	/* The section header table ends the file and is not part of any PT_LOAD. */
	assert_int_equal(symb_elf__offset_to_vaddr(e, len - 1, &vaddr), -ENOENT);
	assert_int_equal(symb_elf__offset_to_vaddr(e, len + 4096, &vaddr), -ENOENT);
	assert_int_equal(symb_elf__offset_to_vaddr(e, UINT64_MAX, &vaddr), -ENOENT);
	free(buf);
}

static void check_fixture(const char *path, int dynamic)
{
	struct symb_elf *e;

	e = symb_elf__open(path);
	assert_non_null(e);
	assert_true(symb_elf__nsyms(e) >= 9);
	check_symbols(e, dynamic);
	check_build_id(e);
	check_offsets(e, path);
	symb_elf__free(e);
}

static void test_symtab(void **state)
{
	check_fixture(ELF_FIXTURE, 0);
}

static void test_dynsym_stripped(void **state)
{
	check_fixture(ELF_FIXTURE_STRIPPED, 1);
}

#if defined(ELF_FIXTURE_32) || defined(ELF_FIXTURE_BE)
/*
 * The -nostdlib fixtures hold exactly the fixture's functions plus main:
 * the count shows aliases collapse to one symbol per address and objects
 * are left out.
 */
static void check_nostdlib(const char *path)
{
	struct symb_elf *e;

	check_fixture(path, 0);
	e = symb_elf__open(path);
	assert_non_null(e);
	assert_int_equal(symb_elf__nsyms(e), 10);
	symb_elf__free(e);
}
#endif

static void test_elf32(void **state)
{
#ifdef ELF_FIXTURE_32
	check_nostdlib(ELF_FIXTURE_32);
#else
	skip();
#endif
}

static void test_big_endian(void **state)
{
#ifdef ELF_FIXTURE_BE
	check_nostdlib(ELF_FIXTURE_BE);
#else
	skip();
#endif
}

static void test_no_build_id(void **state)
{
	struct symb_elf *e;
	uint8_t buf[20];

	e = symb_elf__open(ELF_FIXTURE_NOID);
	assert_non_null(e);
	assert_int_equal(symb_elf__build_id(e, buf, sizeof(buf)), 0);
	check_symbols(e, 0);
	symb_elf__free(e);
}

/* The fd stays the caller's: open_fd neither closes it nor needs it afterwards. */
static void test_open_fd(void **state)
{
	struct symb_elf *e;
	int fd;

	fd = open(ELF_FIXTURE, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	e = symb_elf__open_fd(fd);
	assert_non_null(e);
	assert_int_equal(fcntl(fd, F_GETFD) >= 0, 1);
	close(fd);
	check_symbols(e, 0);
	check_build_id(e);
	symb_elf__free(e);

	errno = 0;
	assert_null(symb_elf__open_fd(-1));
	assert_int_equal(errno, EBADF);
}

static void test_open_mem(void **state)
{
	struct symb_elf *e;
	uint8_t *buf;
	size_t len;

	buf = read_all(ELF_FIXTURE, &len);
	e = symb_elf__open_mem(buf, len);
	/* The image is copied: the caller's buffer may go at once. */
	memset(buf, 0, len);
	free(buf);
	assert_non_null(e);
	check_symbols(e, 0);
	check_build_id(e);
	symb_elf__free(e);
}

static void expect_enoexec_mem(const void *buf, size_t len)
{
	errno = 0;
	assert_null(symb_elf__open_mem(buf, len));
	assert_int_equal(errno, ENOEXEC);
}

static void test_errors(void **state)
{
	char tmp[] = "/tmp/lp-elfsym-XXXXXX";
	static const char text[] = "#!/bin/sh\necho not an ELF file\n";
	uint8_t *buf;
	size_t len;
	int fd;

	errno = 0;
	assert_null(symb_elf__open("/nonexistent/lowprof/elfsym"));
	assert_int_equal(errno, ENOENT);

	fd = mkstemp(tmp);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, sizeof(text) - 1), sizeof(text) - 1);
	close(fd);
	errno = 0;
	assert_null(symb_elf__open(tmp));
	assert_int_equal(errno, ENOEXEC);
	unlink(tmp);

	errno = 0;
	assert_null(symb_elf__open("/"));
	assert_int_equal(errno, ENOEXEC);

	expect_enoexec_mem(text, sizeof(text) - 1);
	expect_enoexec_mem("\177ELF", 4);
	expect_enoexec_mem("", 0);

	buf = read_all(ELF_FIXTURE, &len);
	buf[16] = 1; /* e_type = ET_REL (little-endian fixture) */
	buf[17] = 0;
	expect_enoexec_mem(buf, len);
	buf[16] = 4; /* ET_CORE */
	expect_enoexec_mem(buf, len);
	free(buf);

	symb_elf__free(NULL);
}

/*
 * Opens an image both from memory and through an fd (a memfd, so libelf's
 * pread path is taken) and checks that the two agree. Returns the in-memory
 * object, or NULL with errno set as both set it.
 */
static struct symb_elf *open_both(const uint8_t *buf, size_t len)
{
	struct symb_elf *m, *f;
	uint8_t mid[64], fid[64];
	uint64_t mv, fv, moff, foff;
	int fd, merr, ferr;
	size_t i, n;

	fd = memfd_create("lp-elfsym-test", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), len);
	errno = 0;
	m = symb_elf__open_mem(buf, len);
	merr = errno;
	errno = 0;
	f = symb_elf__open_fd(fd);
	ferr = errno;
	close(fd);
	if (!m || !f) {
		if (m || f)
			fail_msg("length %zu: opens from memory and from an fd disagree", len);
		assert_int_equal(merr, ferr);
		errno = merr;
		return NULL;
	}
	assert_int_equal(symb_elf__nsyms(m), symb_elf__nsyms(f));
	n = symb_elf__build_id(m, mid, sizeof(mid));
	assert_int_equal(symb_elf__build_id(f, fid, sizeof(fid)), n);
	assert_memory_equal(mid, fid, n < sizeof(mid) ? n : sizeof(mid));
	for (i = 0; i < ARRAY_SIZE(expects); i++) {
		const char *a = symb_elf__symbolize(m, expects[i].addr, &moff);
		const char *b = symb_elf__symbolize(f, expects[i].addr, &foff);

		assert_int_equal(!a, !b);
		if (a) {
			assert_string_equal(a, b);
			assert_int_equal(moff, foff);
		}
	}
	for (i = 0; i < len; i += 61) {
		assert_int_equal(symb_elf__offset_to_vaddr(m, i, &mv),
				 symb_elf__offset_to_vaddr(f, i, &fv));
		if (symb_elf__offset_to_vaddr(m, i, &mv) == 0)
			assert_int_equal(mv, fv);
	}
	symb_elf__free(f);
	return m;
}

/*
 * Every prefix of the fixture, read from memory and from an fd, opens the
 * same way: as ENOEXEC, or as an object with no more symbols than the whole
 * file, whose answers are ones the whole file could give (.symtab or
 * .dynsym), and whose build-id, if any, is the real one.
 */
static void test_truncated(void **state)
{
	struct symb_elf *full, *e;
	size_t len, n, i, nsyms;
	uint8_t *buf, id[64];

	buf = read_all(ELF_FIXTURE, &len);
	full = symb_elf__open_mem(buf, len);
	assert_non_null(full);
	nsyms = symb_elf__nsyms(full);
	for (n = 0; n < len; n++) {
		e = open_both(buf, n);
		if (!e) {
			assert_int_equal(errno, ENOEXEC);
			continue;
		}
		assert_true(symb_elf__nsyms(e) <= nsyms);
		for (i = 0; i < ARRAY_SIZE(expects); i++) {
			const char *got = symb_elf__symbolize(e, expects[i].addr, NULL);
			const struct expect *x = &expects[i];

			if (got && !(x->name && !strcmp(got, x->name)) &&
			    !(x->dyn_name && !strcmp(got, x->dyn_name)))
				fail_msg("prefix %zu: 0x%llx gave %s", n,
					 (unsigned long long)x->addr, got);
		}
		if (symb_elf__build_id(e, id, sizeof(id)))
			check_build_id(e);
		symb_elf__free(e);
	}
	symb_elf__free(full);
	free(buf);
}

/*
 * Deterministic corruption: random bytes overwritten in the headers, in the
 * tables at the end of the file and anywhere. Checked: survival, and that
 * memory and fd opens agree; the fuzz target explores this properly.
 */
static void test_corrupted(void **state)
{
	size_t with_syms = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	uint8_t *orig, *buf, id[64];
	size_t len, iter, k;

	orig = read_all(ELF_FIXTURE, &len);
	buf = malloc(len);
	assert_non_null(buf);
	for (iter = 0; iter < 3000; iter++) {
		struct symb_elf *e;
		uint64_t vaddr;

		memcpy(buf, orig, len);
		for (k = 0; k < 1 + iter % 8; k++) {
			size_t r;

			rng ^= rng << 13;
			rng ^= rng >> 7;
			rng ^= rng << 17;
			r = rng >> 8;
			/* headers, or the tables at the file's end, or anywhere */
			if (k % 3 == 0)
				buf[r % 1024] = rng & 0xff;
			else if (k % 3 == 1)
				buf[len - 1 - r % 4096] = rng & 0xff;
			else
				buf[r % len] = rng & 0xff;
		}
		e = open_both(buf, len);
		if (!e) {
			assert_int_equal(errno, ENOEXEC);
			continue;
		}
		for (k = 0; k < ARRAY_SIZE(expects); k++)
			symb_elf__symbolize(e, expects[k].addr, NULL);
		symb_elf__offset_to_vaddr(e, 0x4000, &vaddr);
		symb_elf__build_id(e, id, sizeof(id));
		with_syms += symb_elf__nsyms(e) > 0;
		symb_elf__free(e);
	}
	/* A few bad bytes cost a table or a note, rarely the whole file. */
	assert_true(with_syms > 2000);
	free(buf);
	free(orig);
}

/*
 * Each allocation open makes, failed in turn: open fails with ENOMEM and
 * frees what it built (the sanitizer build checks for leaks), or, where the
 * failure is tolerated (shrinking an array), gives the full answers.
 */
static void test_alloc_failures(void **state)
{
	struct symb_elf *e;
	long k;

	for (k = 0;; k++) {
		fail_alloc_in = k;
		errno = 0;
		e = symb_elf__open(ELF_FIXTURE);
		if (fail_alloc_in >= 0) {
			/* Fewer than k + 1 allocations: nothing failed, all done. */
			fail_alloc_in = -1;
			assert_non_null(e);
			symb_elf__free(e);
			break;
		}
		if (!e) {
			assert_int_equal(errno, ENOMEM);
			continue;
		}
		check_symbols(e, 0);
		check_build_id(e);
		symb_elf__free(e);
	}
	assert_true(k >= 5);
}

/*
 * The blob form (symb_elf__encode / symb_elf__decode): the decoded object
 * answers every question exactly like the one opened from the file, and
 * encoding it again gives the same bytes.
 */
static void check_same(const struct symb_elf *a, const struct symb_elf *b, const char *path)
{
	uint8_t ida[64], idb[64];
	uint64_t addr, oa, ob, va, vb;
	size_t n, len, off;
	uint8_t *file;

	assert_int_equal(symb_elf__nsyms(a), symb_elf__nsyms(b));
	n = symb_elf__build_id(a, ida, sizeof(ida));
	assert_int_equal(symb_elf__build_id(b, idb, sizeof(idb)), n);
	assert_memory_equal(ida, idb, n);
	/* Every address of the fixture section and around it. */
	for (addr = 0x6fff00; addr < 0x700a00; addr++) {
		const char *x = symb_elf__symbolize(a, addr, &oa);
		const char *y = symb_elf__symbolize(b, addr, &ob);

		assert_int_equal(!x, !y);
		if (x) {
			assert_string_equal(x, y);
			assert_int_equal(oa, ob);
		}
	}
	file = read_all(path, &len);
	for (off = 0; off <= len + 8192; off++) {
		int ra = symb_elf__offset_to_vaddr(a, off, &va);

		assert_int_equal(ra, symb_elf__offset_to_vaddr(b, off, &vb));
		if (ra == 0) {
			const char *x = symb_elf__symbolize(a, va, &oa);
			const char *y = symb_elf__symbolize(b, va, &ob);

			assert_int_equal(va, vb);
			assert_int_equal(!x, !y);
			if (x) {
				assert_string_equal(x, y);
				assert_int_equal(oa, ob);
			}
		}
	}
	free(file);
}

static void check_blob_roundtrip(const char *path, int dynamic, int has_id)
{
	struct symb_elf *e, *d;
	uint8_t *blob, *again;
	size_t len, len2;

	e = symb_elf__open(path);
	assert_non_null(e);
	assert_int_equal(symb_elf__encode(e, &blob, &len), 0);
	d = symb_elf__decode(blob, len);
	assert_non_null(d);
	check_same(e, d, path);
	check_symbols(d, dynamic);
	if (has_id)
		check_build_id(d);
	check_offsets(d, path);
	assert_int_equal(symb_elf__encode(d, &again, &len2), 0);
	assert_int_equal(len2, len);
	assert_memory_equal(again, blob, len);
	free(again);
	symb_elf__free(d);
	/* the same from a blob decode_take owns (names read in place) */
	d = symb_elf__decode_take(blob, len);
	assert_non_null(d);
	check_same(e, d, path);
	check_symbols(d, dynamic);
	symb_elf__free(d);
	symb_elf__free(e);
}

static void test_blob_roundtrip(void **state)
{
	check_blob_roundtrip(ELF_FIXTURE, 0, 1);
	check_blob_roundtrip(ELF_FIXTURE_STRIPPED, 1, 1);
	check_blob_roundtrip(ELF_FIXTURE_NOID, 0, 0);
#ifdef ELF_FIXTURE_32
	check_blob_roundtrip(ELF_FIXTURE_32, 0, 1);
#endif
#ifdef ELF_FIXTURE_BE
	check_blob_roundtrip(ELF_FIXTURE_BE, 0, 1);
#endif
}

/* An object with nothing indexed (no symbols, segments or build-id) round-trips too. */
static void test_blob_empty(void **state)
{
	static const uint8_t empty[] = {'L', 'P', 'S', 'Y', SYMB_ELF_BLOB_VERSION, 0, 0, 0, 0,
					0,   0,	  0,   0};
	struct symb_elf *d;
	uint8_t *blob;
	uint64_t v;
	size_t len;

	d = symb_elf__decode(empty, sizeof(empty));
	assert_non_null(d);
	assert_int_equal(symb_elf__nsyms(d), 0);
	assert_int_equal(symb_elf__build_id(d, NULL, 0), 0);
	assert_null(symb_elf__symbolize(d, 0x700000, NULL));
	assert_int_equal(symb_elf__offset_to_vaddr(d, 0, &v), -ENOENT);
	assert_int_equal(symb_elf__encode(d, &blob, &len), 0);
	assert_int_equal(len, sizeof(empty));
	assert_memory_equal(blob, empty, len);
	free(blob);
	symb_elf__free(d);
}

static void expect_ebadmsg(const uint8_t *blob, size_t len)
{
	errno = 0;
	assert_null(symb_elf__decode(blob, len));
	assert_int_equal(errno, EBADMSG);
}

/* Every strict prefix of a blob is rejected: the counts promise more bytes. */
static void test_blob_truncated(void **state)
{
	struct symb_elf *e;
	uint8_t *blob;
	size_t len, n;

	e = symb_elf__open(ELF_FIXTURE);
	assert_non_null(e);
	assert_int_equal(symb_elf__encode(e, &blob, &len), 0);
	for (n = 0; n < len; n++)
		expect_ebadmsg(blob, n);
	free(blob);
	symb_elf__free(e);
}

/*
 * Every byte of a blob flipped in turn (several patterns): the decoder
 * rejects it with EBADMSG or gives an object that keeps the lookup
 * contract (non-empty names, sym_off within the address, a symbol's own
 * start resolving to itself) and encodes back to a blob that decodes.
 */
static void test_blob_flipped(void **state)
{
	static const uint8_t pats[] = {0x01, 0x80, 0xff, 0x40};
	size_t len, i, p, k, ok = 0, bad = 0;
	struct symb_elf *e, *d, *d2;
	uint8_t *blob, *copy, *b2;
	size_t l2;

	e = symb_elf__open(ELF_FIXTURE);
	assert_non_null(e);
	assert_int_equal(symb_elf__encode(e, &blob, &len), 0);
	copy = malloc(len);
	assert_non_null(copy);
	for (p = 0; p < ARRAY_SIZE(pats); p++) {
		for (i = 0; i < len; i++) {
			memcpy(copy, blob, len);
			copy[i] ^= pats[p];
			errno = 0;
			d = symb_elf__decode(copy, len);
			if (!d) {
				assert_int_equal(errno, EBADMSG);
				bad++;
				continue;
			}
			ok++;
			for (k = 0; k < ARRAY_SIZE(expects); k++) {
				uint64_t off, off2;
				const char *n = symb_elf__symbolize(d, expects[k].addr, &off);

				if (!n)
					continue;
				assert_true(n[0] != '\0');
				assert_true(off <= expects[k].addr);
				symb_elf__symbolize(d, expects[k].addr - off, &off2);
			}
			assert_int_equal(symb_elf__encode(d, &b2, &l2), 0);
			d2 = symb_elf__decode(b2, l2);
			assert_non_null(d2);
			symb_elf__free(d2);
			free(b2);
			symb_elf__free(d);
		}
	}
	/* The header and the range records are checked; name bytes are just bytes. */
	assert_true(bad > 0 && ok > 0);
	free(copy);
	free(blob);
	symb_elf__free(e);
}

/* A hand-made blob: the header, then the body as given. */
struct blobw {
	uint8_t buf[256];
	size_t len;
};

static void bw_bytes(struct blobw *w, const void *p, size_t n)
{
	assert_true(w->len + n <= sizeof(w->buf));
	memcpy(w->buf + w->len, p, n);
	w->len += n;
}

static void bw_var(struct blobw *w, uint64_t v)
{
	do {
		uint8_t b = (v & 0x7f) | (v >= 0x80 ? 0x80 : 0);

		bw_bytes(w, &b, 1);
		v >>= 7;
	} while (v);
}

/* nsegs, idlen, nranges, nsyms, names_len, then one segment and one range. */
static void bw_one(struct blobw *w, uint64_t seg_off, uint64_t seg_sz, uint64_t gap, uint64_t span,
		   uint64_t back, uint64_t name, const char *names, size_t nlen, uint64_t nsyms)
{
	static const uint8_t hdr[] = {'L', 'P', 'S', 'Y', SYMB_ELF_BLOB_VERSION, 0, 0, 0};

	w->len = 0;
	bw_bytes(w, hdr, sizeof(hdr));
	bw_var(w, 1);
	bw_var(w, 0);
	bw_var(w, 1);
	bw_var(w, nsyms);
	bw_var(w, nlen);
	bw_var(w, seg_off);
	bw_var(w, seg_sz);
	bw_var(w, 0x400000);
	bw_var(w, gap);
	bw_var(w, span);
	bw_var(w, back);
	bw_var(w, name);
	bw_bytes(w, names, nlen);
}

static void test_blob_invalid(void **state)
{
	struct blobw w;
	struct symb_elf *d;
	uint8_t extra = 0;

	/* The reference blob decodes. */
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 1);
	d = symb_elf__decode(w.buf, w.len);
	assert_non_null(d);
	assert_string_equal(symb_elf__symbolize(d, 0x40100f, NULL), "fn");
	assert_null(symb_elf__symbolize(d, 0x401010, NULL));
	symb_elf__free(d);

	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 1);
	bw_bytes(&w, &extra, 1); /* a byte left over */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 1);
	w.buf[0] = 'X'; /* magic */
	expect_ebadmsg(w.buf, w.len);
	w.buf[0] = 'L';
	w.buf[4]++; /* version */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0, 0x401000, 0xf, 0, 0, "fn\0", 3, 1); /* empty segment */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, UINT64_MAX - 4, 0x10, 0x401000, 0xf, 0, 0, "fn\0", 3, 1); /* wraps */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 3, "fn\0", 3, 1); /* name past arena */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 2, "fn\0", 3, 1); /* empty name */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fnx", 3, 1); /* unterminated arena */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0x401001, 0, "fn\0", 3, 1); /* start > lo */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, UINT64_MAX, 0, 0, 0, "fn\0", 3, 1); /* hi wraps */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, UINT64_MAX - 0x401000, 0, 0, "fn\0", 3, 1);
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 2); /* nsyms > nranges */
	expect_ebadmsg(w.buf, w.len);
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 0); /* ranges, no symbols */
	expect_ebadmsg(w.buf, w.len);
	/* A count larger than the bytes left, before anything is allocated. */
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 1);
	w.buf[8] = 0xff, w.buf[9] = 0xff, w.buf[10] = 0x7f; /* nsegs: 2^21 - 1 */
	expect_ebadmsg(w.buf, w.len);
	/* An overlong varint (a zero continuation) for nsegs. */
	bw_one(&w, 0x1000, 0x100, 0x401000, 0xf, 0, 0, "fn\0", 3, 1);
	memmove(w.buf + 10, w.buf + 9, w.len - 9);
	w.buf[8] = 0x81, w.buf[9] = 0x00;
	w.len++;
	expect_ebadmsg(w.buf, w.len);
	/* build_id_len over the maximum kept. */
	w.len = 0;
	bw_bytes(&w, "LPSY\1\0\0\0", 8);
	bw_var(&w, 0);
	bw_var(&w, 65);
	bw_var(&w, 0);
	bw_var(&w, 0);
	bw_var(&w, 0);
	memset(w.buf + w.len, 0xaa, 65);
	w.len += 65;
	expect_ebadmsg(w.buf, w.len);
	w.buf[9] = 64;
	w.len--;
	d = symb_elf__decode(w.buf, w.len);
	assert_non_null(d);
	assert_int_equal(symb_elf__build_id(d, NULL, 0), 64);
	symb_elf__free(d);
}

/* Each allocation decode makes, failed in turn: NULL with ENOMEM, nothing leaked. */
static void test_blob_alloc_failures(void **state)
{
	struct symb_elf *e, *d;
	uint8_t *blob;
	size_t len;
	long k;

	e = symb_elf__open(ELF_FIXTURE);
	assert_non_null(e);
	fail_alloc_in = 0;
	assert_int_equal(symb_elf__encode(e, &blob, &len), -ENOMEM);
	fail_alloc_in = -1;
	assert_int_equal(symb_elf__encode(e, &blob, &len), 0);
	for (k = 0;; k++) {
		fail_alloc_in = k;
		errno = 0;
		d = symb_elf__decode(blob, len);
		if (fail_alloc_in >= 0) {
			fail_alloc_in = -1;
			assert_non_null(d);
			symb_elf__free(d);
			break;
		}
		assert_null(d);
		assert_int_equal(errno, ENOMEM);
	}
	assert_true(k >= 3);
	free(blob);
	symb_elf__free(e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symtab),
		cmocka_unit_test(test_dynsym_stripped),
		cmocka_unit_test(test_elf32),
		cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_no_build_id),
		cmocka_unit_test(test_open_fd),
		cmocka_unit_test(test_open_mem),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_alloc_failures),
		cmocka_unit_test(test_blob_roundtrip),
		cmocka_unit_test(test_blob_empty),
		cmocka_unit_test(test_blob_truncated),
		cmocka_unit_test(test_blob_flipped),
		cmocka_unit_test(test_blob_invalid),
		cmocka_unit_test(test_blob_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
