// SPDX-License-Identifier: MIT
/*
 * Command-line values (lowprof/parse.h): decimal numbers within a bound,
 * and byte sizes with their suffixes; anything else refused.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include "lowprof/parse.h"

static void test_uint(void **state)
{
	static const char *const bad[] = {"",	"-1", "-0",   "+5", " 5",
					  "5 ", "5x", "0x10", "11", "18446744073709551616"};
	uint64_t v = 7;

	(void)state;
	assert_int_equal(lp_parse_uint("0", 10, &v), 0);
	assert_int_equal(v, 0);
	assert_int_equal(lp_parse_uint("10", 10, &v), 0);
	assert_int_equal(v, 10);
	assert_int_equal(lp_parse_uint("007", 10, &v), 0);
	assert_int_equal(v, 7);
	assert_int_equal(lp_parse_uint("18446744073709551615", UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 42;
		assert_int_equal(lp_parse_uint(bad[i], 10, &v), -EINVAL);
		assert_int_equal(v, 42); /* untouched */
	}
}

static void test_size(void **state)
{
	static const char *const bad[] = {"", "-1", "1X", "K", "1.5M", "16384P", "99999999999T"};
	uint64_t v;

	(void)state;
	assert_int_equal(lp_parse_size("512", &v), 0);
	assert_int_equal(v, 512);
	assert_int_equal(lp_parse_size("2K", &v), 0);
	assert_int_equal(v, 2048);
	assert_int_equal(lp_parse_size("512M", &v), 0);
	assert_int_equal(v, 512ull << 20);
	assert_int_equal(lp_parse_size("1GiB", &v), 0);
	assert_int_equal(v, 1ull << 30);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(lp_parse_size(bad[i], &v), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_uint),
		cmocka_unit_test(test_size),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
