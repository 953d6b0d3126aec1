/* SPDX-License-Identifier: MIT */
/*
 * Options structs that carry their size (struct coll_opts, lp_record_opts,
 * symb_opts), checked the way libbpf's OPTS_VALID checks its own: a caller
 * built against another version of the struct is either one this build can
 * read or refused, never read past its end nor half understood.
 */
#ifndef LOWPROF_OPTS_H
#define LOWPROF_OPTS_H

#include <stddef.h>

/* The offset of the byte after field in type. */
#define lp_offsetofend(type, field) (offsetof(type, field) + sizeof(((type *)0)->field))

/*
 * Whether opts, a caller's struct of sz bytes whose first field is its size
 * sz, is one this build can read: known_sz is the size of the struct it was
 * built with, min_sz the size it needs at least. NULL opts is valid (for a
 * function that takes none; one that needs them checks for NULL itself).
 * Invalid: sz smaller than the sz field or than min_sz, or larger than
 * known_sz with a byte beyond known_sz that is not zero (an option of a newer
 * caller this build does not know). Returns 0 or -EINVAL, after saying why
 * with the struct's name.
 */
int lp_opts_check(const void *opts, size_t sz, size_t known_sz, size_t min_sz, const char *name);

/*
 * lp_opts_check for struct type, which needs every field up to and
 * including last (for the whole struct: its last field).
 */
#define LP_OPTS_CHECK(opts, type, last)                                                            \
	lp_opts_check((opts), (opts) ? (opts)->sz : 0, sizeof(struct type),                        \
		      lp_offsetofend(struct type, last), "struct " #type)

#endif /* LOWPROF_OPTS_H */
