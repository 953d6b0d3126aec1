/* SPDX-License-Identifier: MIT */
/*
 * The objects loaded in this process as the dynamic linker sees them
 * (dl_iterate_phdr): executable address span and the GNU build-id from the
 * object's own PT_NOTE segments in memory, i.e. what `readelf -n` prints
 * for its file. The expected values of the build-id tests.
 */
#ifndef LOWPROF_TEST_SELF_OBJS_H
#define LOWPROF_TEST_SELF_OBJS_H

#include <stdbool.h>
#include <stdint.h>

#include "lowprof/schema.h"

struct self_obj {
	uint64_t lo, hi; /* span of the executable PT_LOAD segments */
	uint8_t id[LPS_MAX_BUILD_ID];
	uint32_t idlen; /* 0: no NT_GNU_BUILD_ID note */
	bool main;	/* the program itself (the first object) */
	char name[256]; /* dlpi_name; "" for the program */
};

/* Fills objs[0..max) and returns how many it filled (the first max objects). */
int self_objs(struct self_obj *objs, int max);

/* The object whose executable span overlaps [start, end), or NULL. */
const struct self_obj *self_obj_in(const struct self_obj *objs, int n, uint64_t start,
				   uint64_t end);

#endif
