// SPDX-License-Identifier: MIT
/*
 * The jitdump parser (symbolizer/jit/jitdump.c): code loads in both byte
 * orders, fed whole and a byte at a time, a move, records it skips, a
 * longer file header, and the malformed: a bad magic, a record shorter
 * than its header, a name without its NUL, a code size past the record, a
 * gap inside a record and one inside skipped code bytes, a restart.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "jitdump.h"

struct buf {
	unsigned char b[8192];
	size_t len;
	bool swap;
};

static void put32(struct buf *f, uint32_t v)
{
	if (f->swap)
		v = __builtin_bswap32(v);
	memcpy(f->b + f->len, &v, 4);
	f->len += 4;
}

static void put64(struct buf *f, uint64_t v)
{
	if (f->swap)
		v = __builtin_bswap64(v);
	memcpy(f->b + f->len, &v, 8);
	f->len += 8;
}

static void file_header(struct buf *f, uint32_t size)
{
	put32(f, SYMB_JITDUMP_MAGIC);
	put32(f, 1);
	put32(f, size);
	put32(f, 62); /* EM_X86_64 */
	put32(f, 0);
	put32(f, 4242);
	put64(f, 1);
	put64(f, 0);
	memset(f->b + f->len, 0xee, size - 40);
	f->len += size - 40;
}

static void rec_header(struct buf *f, uint32_t id, uint32_t size)
{
	put32(f, id);
	put32(f, size);
	put64(f, 7);
}

/* A JIT_CODE_LOAD of name with code_size bytes of code. */
static void code_load(struct buf *f, uint64_t addr, uint64_t size, const char *name)
{
	size_t n = strlen(name) + 1;

	rec_header(f, SYMB_JITDUMP_CODE_LOAD, (uint32_t)(56 + n + size));
	put32(f, 4242);
	put32(f, 4243);
	put64(f, addr);
	put64(f, addr);
	put64(f, size);
	put64(f, 1);
	memcpy(f->b + f->len, name, n);
	f->len += n;
	memset(f->b + f->len, 0xcc, size);
	f->len += size;
}

static void code_move(struct buf *f, uint64_t from, uint64_t to, uint64_t size)
{
	rec_header(f, SYMB_JITDUMP_CODE_MOVE, 64);
	put32(f, 4242);
	put32(f, 4243);
	put64(f, to);
	put64(f, from);
	put64(f, to);
	put64(f, size);
	put64(f, 1);
}

static void other(struct buf *f, uint32_t id, uint32_t len)
{
	rec_header(f, id, 16 + len);
	memset(f->b + f->len, 0xab, len);
	f->len += len;
}

static const char *name_at(struct symb_jit *j, uint64_t addr)
{
	static char out[SYMB_JIT_MAX_LINE + 1];
	const char *name;
	uint32_t len;
	uint64_t start;

	if (!symb_jit__lookup(j, addr, &name, &len, &start))
		return NULL;
	memcpy(out, name, len);
	out[len] = '\0';
	return out;
}

/* The file whole, or one byte a chunk. */
static void parse(const struct buf *f, size_t step, struct symb_jit **j, struct symb_jitdump **d)
{
	*j = symb_jit__new();
	*d = symb_jitdump__new();
	assert_non_null(*j);
	assert_non_null(*d);
	for (size_t off = 0; off < f->len; off += step) {
		size_t n = f->len - off < step ? f->len - off : step;

		assert_int_equal(symb_jitdump__feed(*d, *j, off, (const char *)f->b + off, n), 0);
	}
}

static void done(struct symb_jit *j, struct symb_jitdump *d)
{
	symb_jit__free(j);
	symb_jitdump__free(d);
}

static void loads_in(bool swap, size_t step)
{
	struct buf f = {.swap = swap};
	struct symb_jitdump *d;
	struct symb_jit *j;

	file_header(&f, 48);
	code_load(&f, 0x7f0000001000, 0x40, "JS:*hot /x.js:1:1");
	other(&f, SYMB_JITDUMP_CODE_DEBUG_INFO, 40);
	code_load(&f, 0x7f0000001040, 0x20, "JS:~outer /x.js:9:1");
	other(&f, SYMB_JITDUMP_CODE_UNWINDING_INFO, 24);
	code_move(&f, 0x7f0000001000, 0x7f0000003000, 0x40);
	other(&f, 99, 3); /* unknown: skipped */
	other(&f, SYMB_JITDUMP_CODE_CLOSE, 0);
	parse(&f, step, &j, &d);
	assert_string_equal(name_at(j, 0x7f0000001000), "JS:*hot /x.js:1:1");
	assert_string_equal(name_at(j, 0x7f000000103f), "JS:*hot /x.js:1:1");
	assert_string_equal(name_at(j, 0x7f0000001040), "JS:~outer /x.js:9:1");
	assert_null(name_at(j, 0x7f0000001060));
	assert_string_equal(name_at(j, 0x7f0000003010), "JS:*hot /x.js:1:1");
	assert_int_equal(symb_jitdump__stats(d)->loads, 2);
	assert_int_equal(symb_jitdump__stats(d)->moves, 1);
	assert_int_equal(symb_jitdump__stats(d)->skipped, 4);
	assert_int_equal(symb_jitdump__stats(d)->bad_records, 0);
	assert_int_equal(symb_jitdump__stats(d)->bad_files, 0);
	done(j, d);
}

static void test_loads(void **state)
{
	(void)state;
	loads_in(false, 1 << 20);
	loads_in(false, 1);
	loads_in(true, 1 << 20); /* the other byte order: every field swapped */
	loads_in(true, 3);
}

/* Records that cannot be: counted, and the file's framing where it is lost. */
static void test_malformed(void **state)
{
	struct symb_jitdump *d;
	struct symb_jit *j;
	struct buf f = {0};

	(void)state;
	file_header(&f, 40);
	code_load(&f, 0x1000, 0x10, "ok");
	/* code_size past the record: the name has no room */
	code_load(&f, 0x2000, 0x10, "bad");
	memcpy(&f.b[f.len - 0x10 - 4 - 56 + 40], &(uint64_t){0x1000}, 8);
	/* a name without its NUL before the code */
	code_load(&f, 0x3000, 0x10, "nonul");
	f.b[f.len - 0x10 - 1] = 'x';
	/* code size 0 */
	code_load(&f, 0x4000, 0, "empty");
	code_load(&f, 0x5000, 0x10, "after");
	parse(&f, 1 << 20, &j, &d);
	assert_string_equal(name_at(j, 0x1000), "ok");
	assert_null(name_at(j, 0x2000));
	assert_null(name_at(j, 0x3000));
	assert_null(name_at(j, 0x4000));
	assert_string_equal(name_at(j, 0x5000), "after");
	assert_int_equal(symb_jitdump__stats(d)->bad_records, 3);
	done(j, d);

	/* a record shorter than its header: nothing after it is read */
	f.len = 0;
	file_header(&f, 40);
	code_load(&f, 0x1000, 0x10, "ok");
	rec_header(&f, 0, 8);
	code_load(&f, 0x5000, 0x10, "after");
	parse(&f, 7, &j, &d);
	assert_string_equal(name_at(j, 0x1000), "ok");
	assert_null(name_at(j, 0x5000));
	assert_int_equal(symb_jitdump__stats(d)->bad_files, 1);
	done(j, d);

	/* not a jitdump */
	f.len = 0;
	file_header(&f, 40);
	code_load(&f, 0x1000, 0x10, "ok");
	memcpy(f.b, "XXXX", 4);
	parse(&f, 1 << 20, &j, &d);
	assert_null(name_at(j, 0x1000));
	assert_int_equal(symb_jitdump__stats(d)->bad_files, 1);
	done(j, d);

	/* a header shorter than its fixed part */
	f.len = 0;
	file_header(&f, 40);
	memcpy(&f.b[8], &(uint32_t){39}, 4);
	code_load(&f, 0x1000, 0x10, "ok");
	parse(&f, 1 << 20, &j, &d);
	assert_null(name_at(j, 0x1000));
	done(j, d);
}

/* Gaps: inside code bytes, harmless; inside a record's header, the framing is lost. */
static void test_gaps(void **state)
{
	struct symb_jitdump *d = symb_jitdump__new();
	struct symb_jit *j = symb_jit__new();
	struct buf f = {0};
	size_t second;

	(void)state;
	file_header(&f, 40);
	code_load(&f, 0x1000, 0x100, "first");
	second = f.len;
	code_load(&f, 0x2000, 0x10, "second");
	/* all but 0x80 bytes of first's code */
	assert_int_equal(symb_jitdump__feed(d, j, 0, (const char *)f.b, second - 0x80), 0);
	assert_int_equal(
		symb_jitdump__feed(d, j, second, (const char *)f.b + second, f.len - second), 0);
	assert_string_equal(name_at(j, 0x1000), "first");
	assert_string_equal(name_at(j, 0x2000), "second");
	assert_int_equal(symb_jitdump__stats(d)->gap_bytes, 0x80);
	assert_int_equal(symb_jitdump__stats(d)->bad_files, 0);
	/* a repeat is skipped; offset 0 starts over */
	assert_int_equal(symb_jitdump__feed(d, j, second, (const char *)f.b + second, 4), 0);
	assert_int_equal(symb_jitdump__stats(d)->dup_bytes, 4);
	assert_int_equal(symb_jitdump__feed(d, j, 0, (const char *)f.b, second), 0);
	assert_int_equal(symb_jitdump__stats(d)->restarts, 1);
	/* a gap that cuts second's header: lost */
	assert_int_equal(symb_jitdump__feed(d, j, second + 8, (const char *)f.b + second + 8,
					    f.len - second - 8),
			 0);
	assert_int_equal(symb_jitdump__stats(d)->bad_files, 1);
	assert_int_equal(symb_jitdump__stats(d)->loads, 3);
	done(j, d);
}

/* A name longer than the parser keeps: that record is skipped, not the file. */
static void test_long_name(void **state)
{
	static char name[SYMB_JITDUMP_MAX_NAME + 2];
	struct symb_jitdump *d;
	struct symb_jit *j;
	struct buf f = {0};

	(void)state;
	memset(name, 'n', sizeof(name) - 1);
	file_header(&f, 40);
	code_load(&f, 0x1000, 0x10, name);
	code_load(&f, 0x2000, 0x10, "after");
	parse(&f, 1 << 20, &j, &d);
	assert_null(name_at(j, 0x1000));
	assert_string_equal(name_at(j, 0x2000), "after");
	assert_int_equal(symb_jitdump__stats(d)->bad_records, 1);
	done(j, d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_loads),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_gaps),
		cmocka_unit_test(test_long_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
