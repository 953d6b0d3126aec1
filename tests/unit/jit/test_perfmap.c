// SPDX-License-Identifier: MIT
/*
 * The JIT perf map table (symbolizer/jit/perfmap.c): lines in every form
 * the JITs write, lines split across chunks, later lines winning where
 * they overlap, chunks repeated, missing or starting over, malformed lines
 * and the limits.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "perfmap.h"

/* The name at addr, NUL-terminated in a static buffer, or NULL. */
static const char *name_at(struct symb_jit *j, uint64_t addr)
{
	static char buf[SYMB_JIT_MAX_LINE + 1];
	const char *name;
	uint32_t len;
	uint64_t start;

	if (!symb_jit__lookup(j, addr, &name, &len, &start))
		return NULL;
	memcpy(buf, name, len);
	buf[len] = '\0';
	return buf;
}

static void feed(struct symb_jit *j, uint64_t off, const char *s)
{
	assert_int_equal(symb_jit__feed(j, off, s, strlen(s)), 0);
}

static void test_lines(void **state)
{
	static const char map[] =
		"1000 40 Builtin:JSEntryTrampoline\n"
		"0x2000 0x100 LazyCompile:*hotLeaf /srv/app.js:3:17\n" /* 0x and spaces in the name */
		"7f3a1c004040 1A8 Ljava/lang/String;::hashCode\r\n"    /* upper case, CRLF */
		"3000\t10\tpy::f:/x.py\n"			       /* tabs */
		"bad line\n"
		"4000 10\n"		     /* no name */
		"5000 0 zero\n"		     /* empty */
		"ffffffffffffffff 2 wraps\n" /* past the address space */
		"10000000000000000 2 long\n" /* 17 digits */
		"6000 10 last without newline";
	struct symb_jit *j = symb_jit__new();

	assert_non_null(j);
	feed(j, 0, map);
	assert_string_equal(name_at(j, 0x1000), "Builtin:JSEntryTrampoline");
	assert_string_equal(name_at(j, 0x103f), "Builtin:JSEntryTrampoline");
	assert_null(name_at(j, 0x1040));
	assert_null(name_at(j, 0xfff));
	assert_string_equal(name_at(j, 0x20ff), "LazyCompile:*hotLeaf /srv/app.js:3:17");
	assert_string_equal(name_at(j, 0x7f3a1c004040 + 0x1a7), "Ljava/lang/String;::hashCode");
	assert_string_equal(name_at(j, 0x3005), "py::f:/x.py");
	assert_null(name_at(j, 0x4000));
	assert_null(name_at(j, 0x5000));
	assert_null(name_at(j, 0x6000)); /* waits for its newline */
	assert_int_equal(symb_jit__stats(j)->lines, 4);
	assert_int_equal(symb_jit__stats(j)->bad_lines, 5);
	feed(j, sizeof(map) - 1, "\n");
	assert_string_equal(name_at(j, 0x600f), "last without newline");
	symb_jit__free(j);
	symb_jit__free(NULL);
}

/* A line cut anywhere between two chunks reads as the whole line. */
static void test_split(void **state)
{
	static const char map[] = "1000 40 first\n2000 80 JS:*second /a.js:1\n3000 8 third\n";
	size_t n = sizeof(map) - 1;

	for (size_t cut = 1; cut < n; cut++) {
		struct symb_jit *j = symb_jit__new();

		assert_int_equal(symb_jit__feed(j, 0, map, cut), 0);
		assert_int_equal(symb_jit__feed(j, cut, map + cut, n - cut), 0);
		assert_string_equal(name_at(j, 0x2001), "JS:*second /a.js:1");
		assert_string_equal(name_at(j, 0x1000), "first");
		assert_string_equal(name_at(j, 0x3007), "third");
		assert_int_equal(symb_jit__count(j), 3);
		assert_int_equal(symb_jit__stats(j)->bad_lines, 0);
		symb_jit__free(j);
	}
}

/* JITs reuse code memory: the later line names the address. */
static void test_later_wins(void **state)
{
	struct symb_jit *j = symb_jit__new();
	uint64_t off = 0;
	const char *l;

#define LINE(s) (l = (s), feed(j, off, l), off += strlen(l))
	LINE("1000 100 old\n");
	LINE("1000 100 same start newer\n");
	assert_string_equal(name_at(j, 0x1050), "same start newer");
	LINE("1040 20 inside\n"); /* cuts the one it lies in short */
	assert_string_equal(name_at(j, 0x1041), "inside");
	assert_string_equal(name_at(j, 0x1000), "same start newer");
	assert_null(name_at(j, 0x1070)); /* the tail of the older one is gone */
	LINE("0f00 180 covers all\n");
	assert_string_equal(name_at(j, 0x1041), "covers all");
	assert_string_equal(name_at(j, 0xf00), "covers all");
	/* in one batch, lines out of address order */
	LINE("9000 10 b\n8000 10 a\n9000 10 b2\n");
	assert_string_equal(name_at(j, 0x9000), "b2");
	assert_string_equal(name_at(j, 0x8000), "a");
	/* an older line in the table does not cover a newer one */
	LINE("8008 10 a2\n");
	assert_string_equal(name_at(j, 0x8000), "a");
	assert_string_equal(name_at(j, 0x8008), "a2");
	assert_string_equal(name_at(j, 0x8017), "a2");
#undef LINE
	symb_jit__free(j);
}

/* Repeated, missing and restarted chunks. */
static void test_chunks(void **state)
{
	struct symb_jit *j = symb_jit__new();

	feed(j, 0, "1000 10 a\n2000 1");
	/* the same bytes again, then more: only the new part counts */
	feed(j, 0 + 10, "2000 10 b\n");
	assert_int_equal(symb_jit__stats(j)->dup_bytes, 6);
	assert_string_equal(name_at(j, 0x2000), "b");
	feed(j, 5, "10 a\n"); /* wholly repeated */
	assert_int_equal(symb_jit__stats(j)->dup_bytes, 11);
	/* a gap: the line it cut is skipped, the next one read */
	feed(j, 40, "0 10 cut\n4000 10 d\n");
	assert_int_equal(symb_jit__stats(j)->gap_bytes, 40 - 20);
	assert_null(name_at(j, 0));
	assert_string_equal(name_at(j, 0x4000), "d");
	/* a new file: the old table goes */
	feed(j, 0, "5000 10 e\n");
	assert_int_equal(symb_jit__stats(j)->restarts, 1);
	assert_null(name_at(j, 0x1000));
	assert_string_equal(name_at(j, 0x5000), "e");
	assert_int_equal(symb_jit__count(j), 1);
	symb_jit__free(j);
}

/* A line too long to be a symbol is skipped whole, across chunks. */
static void test_long_line(void **state)
{
	struct symb_jit *j = symb_jit__new();
	char *big = malloc(3 * SYMB_JIT_MAX_LINE);
	uint64_t off = 0;

	memset(big, 'x', 3 * SYMB_JIT_MAX_LINE);
	memcpy(big, "1000 10 ", 8);
	feed(j, off, "9000 10 before\n");
	off += 15;
	for (int i = 0; i < 3; i++, off += SYMB_JIT_MAX_LINE)
		assert_int_equal(
			symb_jit__feed(j, off, big + i * SYMB_JIT_MAX_LINE, SYMB_JIT_MAX_LINE), 0);
	feed(j, off, "\n2000 10 after\n");
	assert_null(name_at(j, 0x1000));
	assert_string_equal(name_at(j, 0x2000), "after");
	assert_string_equal(name_at(j, 0x9000), "before");
	assert_int_equal(symb_jit__stats(j)->bad_lines, 1);
	free(big);
	symb_jit__free(j);
}

/* Beyond SYMB_JIT_MAX_SYMS symbols, lines are dropped and counted. */
static void test_limits(void **state)
{
	struct symb_jit *j = symb_jit__new();
	char line[64];
	uint64_t off = 0;

	for (uint32_t i = 0; i < SYMB_JIT_MAX_SYMS + 10; i++) {
		int n = snprintf(line, sizeof(line), "%x 10 f\n", 0x10000 + i * 16);

		assert_int_equal(symb_jit__feed(j, off, line, (size_t)n), 0);
		off += (uint64_t)n;
	}
	assert_int_equal(symb_jit__count(j), SYMB_JIT_MAX_SYMS);
	assert_int_equal(symb_jit__stats(j)->dropped, 10);
	/* lines that replace others make room again */
	symb_jit__free(j);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lines),	   cmocka_unit_test(test_split),
		cmocka_unit_test(test_later_wins), cmocka_unit_test(test_chunks),
		cmocka_unit_test(test_long_line),  cmocka_unit_test(test_limits),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
