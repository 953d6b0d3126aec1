/* SPDX-License-Identifier: MIT */
/*
 * Giving up capabilities, in the two steps every lowprof process needs:
 * the bounding set first (dropping from it needs CAP_SETPCAP, and a process
 * that changes uid must do it before the change), then the ambient,
 * permitted, effective and inheritable sets, with no_new_privs so exec can
 * never grant anything back. `keep`, a mask of LP_CAP(CAP_...) bits (0 for
 * none), survives both steps.
 */
#ifndef LOWPROF_CAPS_H
#define LOWPROF_CAPS_H

#include <stdint.h>

#define LP_CAP(c) (1ull << (c))

/* Drops every capability not in keep from the bounding set; 0 or -errno. */
int lp_caps_bound(uint64_t keep);

/* Leaves only keep in the permitted and effective sets, clears the
 * ambient and inheritable ones, sets no_new_privs; 0 or -errno. */
int lp_caps_limit(uint64_t keep);

#endif /* LOWPROF_CAPS_H */
