// SPDX-License-Identifier: MIT
/*
 * JIT function names by id (perfmap.h): an arena of NUL-terminated names,
 * their offsets by id, and a seeded open-addressing index (the names are a
 * profiled process's: no input may make it quadratic).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/hash.h"
#include "perfmap.h"

struct symb_jit_names {
	uint64_t seed;
	char *arena;
	size_t len, cap;
	uint32_t *off; /* by id */
	uint32_t n, cap_off;
	uint32_t *index; /* id + 1; 0 empty */
	uint32_t cap_index;
};

struct symb_jit_names *symb_jit_names__new(uint64_t seed)
{
	struct symb_jit_names *t = calloc(1, sizeof(*t));

	if (t)
		t->seed = seed;
	return t;
}

void symb_jit_names__free(struct symb_jit_names *t)
{
	if (!t)
		return;
	free(t->arena);
	free(t->off);
	free(t->index);
	free(t);
}

void symb_jit_names__clear(struct symb_jit_names *t)
{
	t->len = 0;
	t->n = 0;
	if (t->index)
		memset(t->index, 0, (size_t)t->cap_index * sizeof(*t->index));
}

const char *symb_jit_names__get(const struct symb_jit_names *t, uint32_t id)
{
	return id < t->n ? t->arena + t->off[id] : NULL;
}

static uint32_t *slot(const struct symb_jit_names *t, const uint32_t *index, uint32_t cap,
		      const char *name, uint32_t len)
{
	uint64_t h = lp_hash_bytes(t->seed, name, len);

	for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1)) {
		uint32_t *e = (uint32_t *)&index[i]; /* the caller's table */
		const char *s;

		if (!*e)
			return e;
		s = t->arena + t->off[*e - 1];
		/* name has no NUL: strncmp stops at the end of a shorter s */
		if (!strncmp(s, name, len) && s[len] == '\0')
			return e;
	}
}

static int index_grow(struct symb_jit_names *t)
{
	uint32_t ncap = t->cap_index ? t->cap_index * 2 : 1024;
	uint32_t *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t id = 0; id < t->n; id++) {
		const char *s = t->arena + t->off[id];

		*slot(t, n, ncap, s, (uint32_t)strlen(s)) = id + 1;
	}
	free(t->index);
	t->index = n;
	t->cap_index = ncap;
	return 0;
}

int symb_jit_names__intern(struct symb_jit_names *t, const char *name, uint32_t len, uint32_t *id)
{
	uint32_t *e;

	/* at the limit the index stays half full: names it holds are still found */
	if ((t->n + 1) * 2 > t->cap_index && t->n < SYMB_JIT_MAX_NAMES && index_grow(t))
		return -ENOMEM;
	e = slot(t, t->index, t->cap_index, name, len);
	if (*e) {
		*id = *e - 1;
		return 0;
	}
	if (t->n >= SYMB_JIT_MAX_NAMES || t->len + len + 1 > SYMB_JIT_MAX_NAMES_BYTES)
		return -ENOSPC;
	if (t->n == t->cap_off) {
		uint32_t ncap = t->cap_off ? t->cap_off * 2 : 256;
		uint32_t *n = realloc(t->off, (size_t)ncap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		t->off = n;
		t->cap_off = ncap;
	}
	if (t->len + len + 1 > t->cap) {
		size_t ncap = t->cap ? t->cap : 4096;
		char *n;

		while (ncap < t->len + len + 1)
			ncap *= 2;
		n = realloc(t->arena, ncap);
		if (!n)
			return -ENOMEM;
		t->arena = n;
		t->cap = ncap;
	}
	memcpy(t->arena + t->len, name, len);
	t->arena[t->len + len] = '\0';
	t->off[t->n] = (uint32_t)t->len;
	t->len += len + 1;
	*e = t->n + 1;
	*id = t->n++;
	return 0;
}
