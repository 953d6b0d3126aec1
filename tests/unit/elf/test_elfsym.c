// SPDX-License-Identifier: MIT
/*
 * Unit tests for symbolizer/elfsym.c against fixtures built from fixture.c
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_symtab),	       cmocka_unit_test(test_dynsym_stripped),
		cmocka_unit_test(test_elf32),	       cmocka_unit_test(test_big_endian),
		cmocka_unit_test(test_no_build_id),    cmocka_unit_test(test_open_fd),
		cmocka_unit_test(test_open_mem),       cmocka_unit_test(test_errors),
		cmocka_unit_test(test_truncated),      cmocka_unit_test(test_corrupted),
		cmocka_unit_test(test_alloc_failures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
