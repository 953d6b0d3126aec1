// SPDX-License-Identifier: MIT
/*
 * The collector's SHA-256 (collector/sha256.c): FIPS 180-4's vectors, and
 * the SHA extensions' rounds against the portable ones on every length and
 * split a stream can have.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void hex_of(const void *p, size_t n, bool portable, size_t split, char out[65])
{
	struct coll_sha256 s;

	coll_sha256_init(&s);
	s.portable = portable;
	if (split > n)
		split = n;
	coll_sha256_update(&s, p, split);
	coll_sha256_update(&s, (const uint8_t *)p + split, n - split);
	coll_sha256_hex(&s, out);
}

static void test_vectors(void **state)
{
	static const struct {
		const char *in, *hex;
	} v[] = {
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
	};
	char out[65];

	(void)state;
	for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
		for (int portable = 0; portable < 2; portable++) {
			hex_of(v[i].in, strlen(v[i].in), portable, 1, out);
			assert_string_equal(out, v[i].hex);
		}
}

static void test_million_a(void **state)
{
	size_t n = 1000000;
	char *a = malloc(n), out[65];

	(void)state;
	assert_non_null(a);
	memset(a, 'a', n);
	for (int portable = 0; portable < 2; portable++) {
		hex_of(a, n, portable, 65537, out);
		assert_string_equal(
			out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	free(a);
}

/* Every length up to a few blocks, split anywhere: both rounds agree. */
static void test_accelerated_matches_portable(void **state)
{
	uint8_t buf[300];
	char a[65], b[65];

	(void)state;
	if (!coll_sha256_accelerated())
		print_message(
			"no SHA extensions on this CPU: the portable rounds against themselves\n");
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	for (size_t n = 0; n <= sizeof(buf); n++)
		for (size_t split = 0; split <= n; split += 1 + split / 3) {
			hex_of(buf, n, false, split, a);
			hex_of(buf, n, true, n - split, b);
			assert_string_equal(a, b);
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_vectors),
		cmocka_unit_test(test_million_a),
		cmocka_unit_test(test_accelerated_matches_portable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
