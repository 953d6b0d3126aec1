// SPDX-License-Identifier: MIT
/* HTML flame graph writer: embedded data, escaping, self-containment. */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <cmocka.h>

#include "fixture.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

#define DATA_OPEN "<script id=\"fg-data\" type=\"application/json\">"

static char *write_html(const struct lpw_profile *p, size_t *len)
{
	int err = 1;
	char *html = fix_capture(lpw_write_flamegraph, p, len, &err);

	assert_non_null(html);
	assert_int_equal(err, 0);
	assert_int_equal(strlen(html), *len); /* no NUL bytes */
	return html;
}

/* The JSON between the data script's tags (a copy; free it). */
static char *data_of(const char *html)
{
	const char *s = strstr(html, DATA_OPEN), *e;

	assert_non_null(s);
	s += strlen(DATA_OPEN);
	e = strstr(s, "</script>");
	assert_non_null(e);
	return strndup(s, e - s);
}

static size_t count(const char *hay, const char *needle, bool nocase)
{
	size_t n = 0;
	const char *p = hay;

	while ((p = nocase ? strcasestr(p, needle) : strstr(p, needle))) {
		n++;
		p++;
	}
	return n;
}

/* Same acceptance rules as the writer: no overlong forms, surrogates, > U+10FFFF. */
static bool valid_utf8(const unsigned char *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		unsigned char c = s[i];
		size_t n, k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return false;
		if (i + n >= len)
			return false;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return false;
		i += n + 1;
	}
	return true;
}

static void test_sample_profile(void **state)
{
	size_t len;
	char *html = write_html(fix_sample_profile(), &len);
	char *data = data_of(html);

	assert_non_null(strstr(html, "<title>lowprof cpu: test host</title>"));
	assert_null(strstr(html, "@@LOWPROF"));
	/* self-contained: no references to anything outside the file */
	assert_null(strcasestr(html, "http://"));
	assert_null(strcasestr(html, "https://"));
	assert_null(strcasestr(html, "src="));
	assert_null(strcasestr(html, "<link"));
	assert_null(strcasestr(html, "@import"));
	/* the merged tree, children sorted by name, names in preorder */
	assert_string_equal(
		data,
		"{\"title\":\"lowprof cpu: test host\",\"type\":\"cpu\",\"unit\":\"nanoseconds\","
		"\"total\":1000000000,\"nodes\":["
		"0,0,1000000000,1,\n"
		"1,1,1000000000,1,\n"
		"2,4,1000000000,1,\n"
		"3,2,1000000000,1,\n"
		"4,2,1000000000,1,\n"
		"5,2,1000000000,1,\n"
		"6,2,950000000,2,\n"
		"7,3,150000000,0,\n"
		"8,2,800000000,0],\n"
		"\"names\":[\"all\",\"demo\",\"[unknown]\",\"main\",\"func_a\",\"func_b\","
		"\"func_c\",\"do_syscall_64\",\"leaf_compute\"]}");
	assert_true(valid_utf8((const unsigned char *)html, len));
	free(data);
	free(html);
}

static const struct lpw_location evil_locs[] = {
	{.mapping = LPW_NO_MAPPING,
	 .function = "</script><script>alert(1)</script>",
	 .resolved = true},
	{.mapping = LPW_NO_MAPPING, .function = "bad\xff\xfe utf8 \xc3", .resolved = true},
	{.mapping = LPW_NO_MAPPING,
	 .function = "sep\xe2\x80\xa8para\xe2\x80\xa9",
	 .resolved = true},
	{.mapping = LPW_NO_MAPPING, .function = "q\"b\\s\x01<!--&", .resolved = true},
	{.mapping = LPW_NO_MAPPING,
	 .function = "overlong\xc0\xaf surrogate\xed\xa0\x80",
	 .resolved = true},
	{.mapping = LPW_NO_MAPPING, .function = "caf\xc3\xa9 \xf0\x9f\x94\xa5", .resolved = true},
};
static const uint32_t evil_stack[] = {5, 4, 3, 2, 1, 0};
static const struct lpw_stack evil_stacks[] = {
	{.pid = 1,
	 .comm = "</SCRIPT>",
	 .locs = evil_stack,
	 .nlocs = N(evil_stack),
	 .values = {1, 1}},
};

static void test_hostile_names(void **state)
{
	struct lpw_profile p = {
		.locations = evil_locs,
		.nlocations = N(evil_locs),
		.stacks = evil_stacks,
		.nstacks = N(evil_stacks),
		.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.title = "a<b & \"c\" \xff</title>",
	};
	size_t len;
	char *html = write_html(&p, &len);
	char *data = data_of(html);

	/* only the template's own two script elements end */
	assert_int_equal(count(html, "</script", true), 2);
	assert_int_equal(count(html, "<script", true), 2);
	assert_int_equal(count(html, "</title", true), 1);
	assert_null(strchr(data, '<'));
	assert_null(strchr(data, '>'));
	assert_null(strchr(data, '&'));
	assert_non_null(strstr(data, "\"\\u003c/script\\u003e\\u003cscript\\u003ealert(1)"
				     "\\u003c/script\\u003e\""));
	assert_non_null(strstr(data, "\"\\u003c/SCRIPT\\u003e\""));
	/* invalid bytes become U+FFFD, one each; valid sequences pass unchanged */
	assert_non_null(strstr(data, "\"bad\xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd\""));
	assert_non_null(strstr(data, "\"overlong\xef\xbf\xbd\xef\xbf\xbd surrogate"
				     "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""));
	assert_non_null(strstr(data, "\"caf\xc3\xa9 \xf0\x9f\x94\xa5\""));
	/* U+2028/2029 escaped; quotes, backslashes and control bytes JSON-escaped */
	assert_non_null(strstr(data, "\"sep\\u2028para\\u2029\""));
	assert_null(strstr(html, "\xe2\x80\xa8"));
	assert_non_null(strstr(data, "\"q\\\"b\\\\s\\u0001\\u003c!--\\u0026\""));
	/* the title: HTML-escaped in <title>, JSON-escaped in the data */
	assert_non_null(strstr(
		html, "<title>a&lt;b &amp; &quot;c&quot; \xef\xbf\xbd&lt;/title&gt;</title>"));
	assert_non_null(strstr(
		data,
		"\"title\":\"a\\u003cb \\u0026 \\\"c\\\" \xef\xbf\xbd\\u003c/title\\u003e\""));
	assert_true(valid_utf8((const unsigned char *)html, len));
	free(data);
	free(html);
}

/* Stack order does not matter; zero-valued stacks are left out. */
static void test_deterministic(void **state)
{
	const struct lpw_profile *base = fix_sample_profile();
	struct lpw_stack st[8];
	struct lpw_profile p = *base;
	size_t i, l1, l2;
	char *a, *b;

	for (i = 0; i < base->nstacks; i++)
		st[i] = base->stacks[base->nstacks - 1 - i];
	st[i] = base->stacks[0];
	st[i].comm = "idle";
	st[i].values[1] = 0;
	p.stacks = st;
	p.nstacks = base->nstacks + 1;
	a = write_html(base, &l1);
	b = write_html(&p, &l2);
	assert_int_equal(l1, l2);
	assert_memory_equal(a, b, l1);
	assert_null(strstr(b, "idle"));
	free(a);
	free(b);
}

/*
 * A wide tree of thousands of nodes: every node and name is there once,
 * values summed, and the output does not depend on the order of the stacks.
 */
static void test_many_nodes(void **state)
{
	enum { STACKS = 1500, NODES = 1 + 2 + 2 * STACKS };
	static struct lpw_location locs[2 * STACKS];
	static char names[2 * STACKS][16];
	static uint32_t ids[STACKS][2];
	static struct lpw_stack st[STACKS], rev[STACKS];
	struct lpw_profile p = {
		.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
		.locations = locs,
		.nlocations = 2 * STACKS,
		.stacks = st,
		.nstacks = STACKS,
	};
	size_t i, len, len2;
	char *html, *html2, *data, want[64];

	for (i = 0; i < 2 * STACKS; i++) {
		snprintf(names[i], sizeof(names[i]), "f%zu", i);
		locs[i] = (struct lpw_location){.mapping = LPW_NO_MAPPING, .function = names[i]};
	}
	for (i = 0; i < STACKS; i++) {
		ids[i][0] = 2 * i + 1; /* leaf */
		ids[i][1] = 2 * i;
		st[i] = (struct lpw_stack){.comm = i % 2 ? "b" : "a", .locs = ids[i], .nlocs = 2};
		st[i].values[0] = (int64_t)i + 1;
		rev[STACKS - 1 - i] = st[i];
	}
	html = write_html(&p, &len);
	data = data_of(html);
	snprintf(want, sizeof(want), "\"total\":%d,", STACKS * (STACKS + 1) / 2);
	assert_non_null(strstr(data, want));
	assert_int_equal(count(data, "\n", false), NODES);
	for (i = 0; i < 2 * STACKS; i += 97) {
		snprintf(want, sizeof(want), "\"f%zu\"", i);
		assert_int_equal(count(data, want, false), 1);
	}
	p.stacks = rev;
	html2 = write_html(&p, &len2);
	assert_int_equal(len, len2);
	assert_memory_equal(html, html2, len);
	free(data);
	free(html);
	free(html2);
}

static void test_empty(void **state)
{
	struct lpw_profile p = {
		.value_types = {{"samples", "count"}, {"cpu", "nanoseconds"}},
	};
	size_t len;
	char *html = write_html(&p, &len);
	char *data = data_of(html);

	assert_non_null(strstr(html, "<title>lowprof</title>"));
	assert_string_equal(data, "{\"title\":\"lowprof\",\"type\":\"samples\",\"unit\":\"count\","
				  "\"total\":0,\"nodes\":[0,0,0,0],\n\"names\":[\"all\"]}");
	free(data);
	free(html);
}

/*
 * Inlined functions are nodes of their own (kind 5) below the function
 * they were inlined into (kind 2); inner_fn under outer_fn directly and
 * under mid_fn stay two nodes.
 */
static void test_inline_frames(void **state)
{
	size_t len;
	char *html = write_html(fix_inline_profile(), &len);
	char *data = data_of(html);

	assert_string_equal(data, "{\"title\":\"lowprof cpu: inline test\",\"type\":\"cpu\","
				  "\"unit\":\"nanoseconds\",\"total\":1000000000,\"nodes\":["
				  "0,0,1000000000,1,\n" /* all */
				  "1,1,1000000000,1,\n" /* inl */
				  "2,2,1000000000,2,\n" /* main */
				  "3,2,900000000,2,\n"	/* outer_fn */
				  "4,5,300000000,0,\n"	/* inner_fn (inline) */
				  "5,5,600000000,1,\n"	/* mid_fn (inline) */
				  "4,5,600000000,0,\n"	/* inner_fn (inline) */
				  "6,2,100000000,0],\n" /* plain_fn */
				  "\"names\":[\"all\",\"inl\",\"main\",\"outer_fn\",\"inner_fn\","
				  "\"mid_fn\",\"plain_fn\"]}");
	assert_non_null(strstr(html, "\"inlined\"")); /* the page names kind 5 */
	free(data);
	free(html);
}

static void test_bad_input(void **state)
{
	static const uint32_t bad[] = {3};
	struct lpw_stack st = {.comm = "x", .locs = bad, .nlocs = 1, .values = {1, 1}};
	struct lpw_profile p = *fix_sample_profile();
	size_t len = 0;
	int err = 0;
	char *got;

	p.nlocations = 3;
	p.stacks = &st;
	p.nstacks = 1;
	got = fix_capture(lpw_write_flamegraph, &p, &len, &err);
	assert_int_equal(err, -EINVAL);
	assert_int_equal(len, 0);
	free(got);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sample_profile), cmocka_unit_test(test_hostile_names),
		cmocka_unit_test(test_deterministic),  cmocka_unit_test(test_empty),
		cmocka_unit_test(test_bad_input),      cmocka_unit_test(test_inline_frames),
		cmocka_unit_test(test_many_nodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
