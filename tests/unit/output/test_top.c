// SPDX-License-Identifier: MIT
/*
 * The summaries' top functions (lpw_print_top_functions): random profiles
 * against a model that sorts every function by name and then by value, as
 * the writer once did. Names repeat across locations, in kernel and user
 * frames, and values tie, so that grouping, the tie order and the cut at
 * ten are all exercised.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "fixture.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

struct model_fn {
	const char *name;
	bool kernel;
	uint64_t self, total;
};

/* The list being sorted: by self (true) or by total; ties by name, then kernel. */
static bool model_by_self;

static int model_name_cmp(const struct model_fn *x, const struct model_fn *y)
{
	int c = strcmp(x->name, y->name);

	return c ? c : (int)x->kernel - (int)y->kernel;
}

static int model_value_cmp(const void *a, const void *b)
{
	const struct model_fn *x = a, *y = b;
	uint64_t vx = model_by_self ? x->self : x->total, vy = model_by_self ? y->self : y->total;

	return vx != vy ? (vx < vy) - (vx > vy) : model_name_cmp(x, y);
}

/* Appends one list as the writer prints it (names here need no sanitizing). */
static void model_list(char **pos, const char *what, const struct model_fn *f, size_t n,
		       uint64_t all, bool self)
{
	*pos += sprintf(*pos, "Top functions by %s:\n", what);
	for (size_t i = 0; i < n && i < 10; i++) {
		uint64_t v = self ? f[i].self : f[i].total;

		if (!v)
			break;
		*pos += sprintf(*pos, "  %6.2f%%  %8" PRIu64 "  %s%s\n", 100.0 * v / all, v,
				f[i].name, f[i].kernel ? " [k]" : "");
	}
}

/* The model's output for p: functions found by a linear search of names. */
static char *model_top(const struct lpw_profile *p)
{
	struct model_fn *fns = calloc(p->nlocations, sizeof(*fns));
	size_t *fn_of = calloc(p->nlocations, sizeof(*fn_of)), nfns = 0;
	char *out = malloc(8192), *pos = out;
	uint64_t all = 0;

	assert_non_null(fns);
	assert_non_null(fn_of);
	assert_non_null(out);
	*out = '\0';
	for (size_t i = 0; i < p->nlocations; i++) {
		struct model_fn key = {p->locations[i].function, p->locations[i].kernel};
		size_t k;

		for (k = 0; k < nfns && model_name_cmp(&fns[k], &key); k++)
			;
		if (k == nfns)
			fns[nfns++] = key;
		fn_of[i] = k;
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		uint64_t v = (uint64_t)st->values[0];
		bool seen[64] = {false};

		all += v;
		if (!st->nlocs)
			continue;
		fns[fn_of[st->locs[0]]].self += v;
		for (uint32_t j = 0; j < st->nlocs; j++) {
			size_t k = fn_of[st->locs[j]];

			if (!seen[k]) {
				fns[k].total += v;
				seen[k] = true;
			}
		}
	}
	if (all) {
		model_by_self = true;
		qsort(fns, nfns, sizeof(*fns), model_value_cmp);
		model_list(&pos, "self", fns, nfns, all, true);
		model_by_self = false;
		qsort(fns, nfns, sizeof(*fns), model_value_cmp);
		model_list(&pos, "total", fns, nfns, all, false);
	}
	free(fns);
	free(fn_of);
	return out;
}

static int print_top(const struct lpw_profile *p, int fd)
{
	lpw_print_top_functions(p, fd);
	return 0;
}

static void test_random_against_model(void **state)
{
	static const char *const names[] = {"main", "f", "g", "g", "h",	  "f", "ab",  "a",
					    "b",    "c", "d", "e", "x y", "z", "main"};
	enum { NLOC = N(names), NSTACK = 40, MAXD = 5 };
	struct lpw_location locs[NLOC];
	struct lpw_stack stacks[NSTACK];
	uint32_t idx[NSTACK][MAXD];
	uint64_t rnd = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (int round = 0; round < 200; round++) {
		struct lpw_profile p = {.locations = locs,
					.nlocations = NLOC,
					.stacks = stacks,
					.nstacks = 1 + round % NSTACK};
		size_t len;
		int err = 1;
		char *want, *got;

		for (size_t i = 0; i < NLOC; i++) {
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			/* the same name in kernel and user frames: two functions */
			locs[i] = (struct lpw_location){.mapping = LPW_NO_MAPPING,
							.function = names[i],
							.kernel = (rnd >> 40) % 4 == 0};
		}
		for (size_t i = 0; i < p.nstacks; i++) {
			rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
			stacks[i] =
				(struct lpw_stack){.comm = "c",
						   .locs = idx[i],
						   .nlocs = (uint32_t)((rnd >> 33) % (MAXD + 1))};
			/* few distinct values, so that functions tie */
			stacks[i].values[0] = (int64_t)((rnd >> 50) % (round % 3 ? 4 : 1000));
			for (uint32_t j = 0; j < stacks[i].nlocs; j++) {
				rnd = rnd * 6364136223846793005ull + 1442695040888963407ull;
				idx[i][j] = (uint32_t)((rnd >> 35) % NLOC);
			}
		}
		want = model_top(&p);
		got = fix_capture(print_top, &p, &len, &err);
		assert_non_null(got);
		assert_string_equal(got, want);
		free(got);
		free(want);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_random_against_model),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
