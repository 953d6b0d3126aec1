/* SPDX-License-Identifier: MIT */
/* Parsing of command-line values shared by the three programs. */
#ifndef LOWPROF_PARSE_H
#define LOWPROF_PARSE_H

#include <stdint.h>

/*
 * A byte size: decimal digits with an optional K, M, G or T suffix (powers
 * of 1024, optionally followed by "B" or "iB"). Returns 0, or -EINVAL for
 * anything else, including a value that does not fit in 64 bits.
 */
int lp_parse_size(const char *s, uint64_t *out);

/*
 * A decimal number from 0 to max: digits only (no sign, no space, no
 * suffix). Returns 0, or -EINVAL for anything else.
 */
int lp_parse_uint(const char *s, uint64_t max, uint64_t *out);

#endif /* LOWPROF_PARSE_H */
