/* SPDX-License-Identifier: MIT */
/*
 * An arena: blocks carved from chunks and freed all at once, for many
 * small allocations that live as long as their owner (interned names,
 * an unpacked message). What it is not: a budget (callers count what they
 * ask for) or an allocator that takes a block back.
 */
#ifndef LOWPROF_ARENA_H
#define LOWPROF_ARENA_H

#include <stddef.h>

struct lp_arena_chunk;

struct lp_arena {
	struct lp_arena_chunk *chunks; /* the one being carved first */
	size_t chunk;		       /* bytes of a new chunk */
};

/*
 * size bytes aligned to align (a power of two, at most 16), from the
 * chunk being carved or a new one of a->chunk bytes; a block of a quarter
 * of that or more gets a chunk of its own, which leaves the one being
 * carved first. NULL without memory.
 */
void *lp_arena_alloc(struct lp_arena *a, size_t size, size_t align);

/* Frees every block at once; the arena is empty and usable again. */
void lp_arena_free(struct lp_arena *a);

#endif /* LOWPROF_ARENA_H */
