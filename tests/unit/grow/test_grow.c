// SPDX-License-Identifier: MIT
/*
 * lp_grow: doubling from the first capacity, the maximum, nothing done when
 * there is room, errors that leave the array as it was. lp_arena: blocks
 * aligned as asked, carved one after the other, a large one apart without
 * ending the chunk being carved, all freed at once.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lowprof/arena.h"
#include "lowprof/grow.h"

static void test_doubles(void **state)
{
	uint64_t *a = NULL;
	size_t cap = 0;

	assert_int_equal(lp_grow((void **)&a, &cap, 1, sizeof(*a), 16, 1000), 0);
	assert_non_null(a);
	assert_int_equal(cap, 16);
	for (size_t i = 0; i < cap; i++)
		a[i] = i;
	assert_int_equal(lp_grow((void **)&a, &cap, 16, sizeof(*a), 16, 1000), 0);
	assert_int_equal(cap, 16); /* room already: nothing */
	assert_int_equal(lp_grow((void **)&a, &cap, 17, sizeof(*a), 16, 1000), 0);
	assert_int_equal(cap, 32);
	assert_int_equal(lp_grow((void **)&a, &cap, 100, sizeof(*a), 16, 1000), 0);
	assert_int_equal(cap, 128);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(a[i], i); /* kept */
	/* capped at max, and beyond it refused with everything kept */
	assert_int_equal(lp_grow((void **)&a, &cap, 999, sizeof(*a), 16, 1000), 0);
	assert_int_equal(cap, 1000);
	assert_int_equal(lp_grow((void **)&a, &cap, 1001, sizeof(*a), 16, 1000), -E2BIG);
	assert_int_equal(cap, 1000);
	assert_int_equal(a[15], 15);
	free(a);
}

static void test_overflow(void **state)
{
	char *a = NULL;
	size_t cap = 0;

	/* a size that does not fit: -ENOMEM, nothing allocated */
	assert_int_equal(lp_grow((void **)&a, &cap, SIZE_MAX / 2, 4, 1, SIZE_MAX), -ENOMEM);
	assert_null(a);
	assert_int_equal(cap, 0);
	/* first 0 starts at 1 */
	assert_int_equal(lp_grow((void **)&a, &cap, 1, 1, 0, 10), 0);
	assert_int_equal(cap, 1);
	free(a);
}

static void test_grow32(void **state)
{
	uint32_t *a = NULL, cap = 0;

	assert_int_equal(lp_grow32((void **)&a, &cap, 65, sizeof(*a), 64), 0);
	assert_int_equal(cap, 128);
	assert_int_equal(lp_grow32((void **)&a, &cap, 2, sizeof(*a), 64), 0);
	assert_int_equal(cap, 128);
	free(a);
}

static void test_arena(void **state)
{
	struct lp_arena a = {.chunk = 1024};
	char *p, *q, *big, *r;

	(void)state;
	p = lp_arena_alloc(&a, 3, 1);
	q = lp_arena_alloc(&a, 5, 1);
	assert_non_null(p);
	assert_ptr_equal(q, p + 3); /* carved one after the other */
	r = lp_arena_alloc(&a, 8, 16);
	assert_int_equal((uintptr_t)r % 16, 0);
	assert_ptr_equal(r, p + 16);
	memset(p, 'x', 3);
	/* a quarter of a chunk or more: a chunk of its own */
	big = lp_arena_alloc(&a, 4000, 8);
	assert_non_null(big);
	memset(big, 'y', 4000);
	/* ... and carving goes on where it was */
	assert_ptr_equal(lp_arena_alloc(&a, 4, 1), r + 8);
	/* the chunk full: a new one */
	assert_non_null(lp_arena_alloc(&a, 1000, 1));
	assert_int_equal(p[0], 'x');
	lp_arena_free(&a);
	assert_null(a.chunks);
	assert_non_null(lp_arena_alloc(&a, 1, 1)); /* usable again */
	lp_arena_free(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_doubles),
		cmocka_unit_test(test_overflow),
		cmocka_unit_test(test_grow32),
		cmocka_unit_test(test_arena),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
