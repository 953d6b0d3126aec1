// SPDX-License-Identifier: MIT
/*
 * lp_opts_check / LP_OPTS_CHECK: NULL accepted, a size below the sz field
 * or the stated minimum refused, a larger struct accepted only when what
 * this build does not know of it is zero.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "lowprof/log.h"
#include "lowprof/opts.h"

/* the struct this build knows */
struct t_opts {
	size_t sz;
	int a;
	long b;
};

/* the same struct as a newer caller knows it: fields appended */
struct t_opts_v2 {
	size_t sz;
	int a;
	long b;
	int c;
	long d;
};

static void test_null(void **state)
{
	const struct t_opts *o = NULL;

	assert_int_equal(LP_OPTS_CHECK(o, t_opts, b), 0);
	assert_int_equal(lp_opts_check(NULL, 0, sizeof(struct t_opts), 0, "x"), 0);
}

static void test_exact(void **state)
{
	struct t_opts o = {.sz = sizeof(o), .a = 1, .b = 2};

	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, b), 0);
	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, a), 0);
}

static void test_too_small(void **state)
{
	struct t_opts o = {.sz = 0};

	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, a), -EINVAL);
	/* not even the sz field, whatever the minimum asked for */
	o.sz = sizeof(size_t) - 1;
	assert_int_equal(lp_opts_check(&o, o.sz, sizeof(o), 0, "struct t_opts"), -EINVAL);
	o.sz = sizeof(size_t);
	assert_int_equal(lp_opts_check(&o, o.sz, sizeof(o), 0, "struct t_opts"), 0);
	/* below the stated minimum */
	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, a), -EINVAL);
	o.sz = offsetof(struct t_opts, b);
	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, b), -EINVAL);
	/* an older caller that has every field needed */
	assert_int_equal(LP_OPTS_CHECK(&o, t_opts, a), 0);
}

static void test_newer_caller(void **state)
{
	struct t_opts_v2 n;

	/* padding included: every byte this build does not know is zero */
	memset(&n, 0, sizeof(n));
	n.sz = sizeof(n);
	n.a = 1;
	n.b = 2;
	assert_int_equal(LP_OPTS_CHECK((struct t_opts *)&n, t_opts, b), 0);
	/* a field this build does not know, set: refused */
	n.c = 3;
	assert_int_equal(LP_OPTS_CHECK((struct t_opts *)&n, t_opts, b), -EINVAL);
	n.c = 0;
	n.d = 1;
	assert_int_equal(LP_OPTS_CHECK((struct t_opts *)&n, t_opts, b), -EINVAL);
	/* the last byte alone */
	n.d = 0;
	((unsigned char *)&n)[sizeof(n) - 1] = 1;
	assert_int_equal(LP_OPTS_CHECK((struct t_opts *)&n, t_opts, b), -EINVAL);
	/* what lies beyond the caller's own size is not looked at */
	n.sz = sizeof(n) - 1;
	assert_int_equal(LP_OPTS_CHECK((struct t_opts *)&n, t_opts, b), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_null),
		cmocka_unit_test(test_exact),
		cmocka_unit_test(test_too_small),
		cmocka_unit_test(test_newer_caller),
	};

	lp_log_init("test_opts", LP_LOG_INFO);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
