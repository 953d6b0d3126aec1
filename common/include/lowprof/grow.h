/* SPDX-License-Identifier: MIT */
/* Growing a heap array by doubling, shared by the parsers' tables. */
#ifndef LOWPROF_GROW_H
#define LOWPROF_GROW_H

#include <stddef.h>
#include <stdint.h>

/*
 * Makes the array *p, of *cap elements of elem bytes, hold at least need
 * elements: its capacity doubles from first (when *cap is 0) until it
 * does, never beyond max elements. Returns 0 (also when it already holds
 * need), -E2BIG when need > max, -ENOMEM when the allocation fails or its
 * size would overflow; *p and *cap are unchanged on error.
 */
int lp_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first, size_t max);

/* The same for a uint32_t capacity, up to UINT32_MAX elements. */
int lp_grow32(void **p, uint32_t *cap, uint32_t need, size_t elem, uint32_t first);

#endif /* LOWPROF_GROW_H */
