/* SPDX-License-Identifier: MIT */
/*
 * Text from files lowprof does not trust (ELF names, paths and hostnames
 * in a record stream or a capture file), made safe to print to a terminal.
 */
#ifndef LOWPROF_TEXT_H
#define LOWPROF_TEXT_H

#include <stddef.h>

/*
 * Copies s[0..len) (may hold NULs) into dst (cap bytes, NUL-terminated) so
 * that it is safe to print to a terminal: control bytes (< 0x20, 0x7f,
 * NUL), bytes that are not part of well-formed UTF-8 (overlong,
 * surrogates, > U+10FFFF, truncated), C1 controls (U+0080..U+009F) and
 * bidi/line-separator characters (U+2028..U+202E, U+2066..U+2069) become
 * '?', one per byte. Text longer than cap - 4 bytes is cut at a character
 * boundary and ends in "...". cap < 4 gives "". Returns dst.
 */
char *lp_sanitize(char *dst, size_t cap, const char *s, size_t len);

/* Printed names (summaries, warnings) are cut to this many bytes, then "...". */
#define LP_NAME_PRINT_MAX 200

/*
 * lp_sanitize of a NUL-terminated name into dst (cap >= LP_NAME_PRINT_MAX +
 * 4): names longer than LP_NAME_PRINT_MAX bytes are cut at a character
 * boundary and end in "...". Returns dst.
 */
char *lp_sanitize_name(char *dst, size_t cap, const char *name);

#endif /* LOWPROF_TEXT_H */
