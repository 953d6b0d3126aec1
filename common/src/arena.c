// SPDX-License-Identifier: MIT
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lowprof/arena.h"

struct lp_arena_chunk {
	struct lp_arena_chunk *next;
	size_t size, used; /* bytes after the header */
};

/* the header keeps malloc's alignment for the bytes after it */
#define ARENA_HDR ((sizeof(struct lp_arena_chunk) + 15) & ~(size_t)15)

void *lp_arena_alloc(struct lp_arena *a, size_t size, size_t align)
{
	struct lp_arena_chunk *c = a->chunks;
	size_t at = c ? (c->used + align - 1) & ~(align - 1) : 0;

	if (size > SIZE_MAX - ARENA_HDR - 16)
		return NULL;
	if (!c || at > c->size || c->size - at < size) {
		bool alone = size >= a->chunk / 4;
		size_t n = alone ? size : a->chunk;
		struct lp_arena_chunk *nc = malloc(ARENA_HDR + n);

		if (!nc)
			return NULL;
		*nc = (struct lp_arena_chunk){.size = n};
		/* one of its own goes behind the chunk being carved, which stays first */
		if (c && alone) {
			nc->next = c->next;
			c->next = nc;
		} else {
			nc->next = c;
			a->chunks = nc;
		}
		c = nc;
		at = 0;
	}
	c->used = at + size;
	return (char *)c + ARENA_HDR + at;
}

void lp_arena_free(struct lp_arena *a)
{
	while (a->chunks) {
		struct lp_arena_chunk *c = a->chunks;

		a->chunks = c->next;
		free(c);
	}
}
