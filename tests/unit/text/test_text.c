// SPDX-License-Identifier: MIT
/*
 * lp_sanitize: text from untrusted files made safe for a terminal. The
 * symbolizer's cases (names) are in tests/unit/symb; here the
 * length-bounded input (NULs inside, nothing read past len), and a
 * property over random bytes: the output is well-formed UTF-8 with no
 * control or bidi character, never longer than asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "lowprof/text.h"

static const char *san(const char *s, size_t len)
{
	static char buf[64];

	return lp_sanitize(buf, sizeof(buf), s, len);
}

static void test_bounded(void **state)
{
	char tiny[4];

	assert_string_equal(san("host\0name", 9), "host?name");
	assert_string_equal(san("abcdef", 3), "abc"); /* nothing past len */
	assert_string_equal(san("\x1b]0;owned\x07", 10), "?]0;owned?");
	assert_string_equal(san("\xc3\xa9t\xc3", 4), "\xc3\xa9t?"); /* cut at len */
	assert_string_equal(san("\xe2\x80\xae", 2), "??");
	assert_string_equal(san("\x9b"
				"31m",
				4),
			    "?31m"); /* 8-bit CSI */
	assert_string_equal(san("", 0), "");
	assert_string_equal(lp_sanitize(tiny, sizeof(tiny), "abc", 3), "...");
	assert_string_equal(lp_sanitize(tiny, 3, "abc", 3), "");
	assert_string_equal(lp_sanitize(tiny, 0, "abc", 3), "");
}

/* Length of the UTF-8 character at s, checked strictly; 0 if malformed. */
static size_t strict_len(const unsigned char *s)
{
	uint32_t cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	cp = s[0] & (0x7f >> n);
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	if (cp < 0xa0 || (cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
		return 0; /* C1, separators, bidi: must not be there */
	return n;
}

static void test_random_bytes(void **state)
{
	unsigned char in[48];
	char out[40];
	uint64_t x = 88172645463325252ull;

	for (int round = 0; round < 200000; round++) {
		size_t len = (size_t)(x % sizeof(in)), olen;

		for (size_t i = 0; i < sizeof(in); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* bias towards the interesting bytes */
			in[i] = (uint8_t)(x & 1 ? 0x80 + (x >> 8) % 0x80 : x >> 8);
		}
		lp_sanitize(out, sizeof(out), (const char *)in, len);
		olen = strlen(out);
		assert_true(olen <= sizeof(out) - 1);
		for (size_t i = 0; i < olen;) {
			unsigned char c = (unsigned char)out[i];
			size_t n = strict_len((const unsigned char *)out + i);

			assert_true(n > 0);
			assert_false(n == 1 && (c < 0x20 || c == 0x7f));
			i += n;
		}
	}
}

static void assert_sanitized(const char *in, const char *want)
{
	char buf[LP_NAME_PRINT_MAX + 4];

	assert_string_equal(lp_sanitize_name(buf, sizeof(buf), in), want);
}

/* Names printed in summaries and warnings: cut short, never mid-character. */
static void test_sanitize_name(void **state)
{
	char long_in[400], long_want[LP_NAME_PRINT_MAX + 4];

	(void)state;
	assert_sanitized("\x1b[2J", "?[2J");
	assert_sanitized("a\tb\x7f", "a?b?");
	assert_sanitized("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5",
			 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5");
	assert_sanitized("\xc0\xaf", "??"); /* overlong '/' */
	assert_sanitized("\xc2\x9b"
			 "2J",
			 "??2J");		      /* C1 CSI */
	assert_sanitized("\xed\xa0\x80", "???");      /* surrogate */
	assert_sanitized("\xf4\x90\x80\x80", "????"); /* > U+10FFFF */
	assert_sanitized("\xe2\x80\xae"
			 "evil",
			 "???evil");	      /* bidi override */
	assert_sanitized("a\xe2\x82", "a??"); /* truncated */
	assert_sanitized("\x80x", "?x");
	memset(long_in, 'a', 300);
	long_in[300] = '\0';
	memset(long_want, 'a', LP_NAME_PRINT_MAX);
	strcpy(long_want + LP_NAME_PRINT_MAX, "...");
	assert_sanitized(long_in, long_want);
	/* a character is never cut */
	memcpy(long_in + LP_NAME_PRINT_MAX - 1, "\xc3\xa9", 2);
	memcpy(long_want + LP_NAME_PRINT_MAX - 1, "...", 4);
	assert_sanitized(long_in, long_want);
	long_in[LP_NAME_PRINT_MAX + 1] = '\0';
	assert_sanitized(long_in, long_want);
	long_in[LP_NAME_PRINT_MAX - 1] = '\0';
	assert_int_equal(strlen(lp_sanitize_name(long_want, sizeof(long_want), long_in)),
			 LP_NAME_PRINT_MAX - 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bounded),
		cmocka_unit_test(test_random_bytes),
		cmocka_unit_test(test_sanitize_name),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
