/* SPDX-License-Identifier: MIT */
/*
 * Parsers of the kernel text files the collector reads: /proc/PID/maps and
 * /proc/kallsyms. They are kernel-formatted, but a mapping's path is chosen
 * by whoever named the file, so every field is checked and the path is taken
 * as opaque bytes up to the end of the line (the kernel escapes '\n' in it).
 * Nothing here opens a file a profiled process controls.
 */
#ifndef LOWPROF_COLL_PROCFS_H
#define LOWPROF_COLL_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "lowprof/schema.h"

/*
 * One line of /proc/PID/maps:
 *   "start-end rwxp offset major:minor inode   path\n"
 * Fills m (m->path points into the line). Returns 0 or -EBADMSG.
 */
int coll_maps_parse_line(const char *line, size_t len, struct lps_mapping *m);

/*
 * Iterates the lines of a maps buffer: *cur advances past each line.
 * Returns 1 with m filled, 0 at the end, -EBADMSG on a malformed line (the
 * iterator skips it, so callers may count and continue).
 */
int coll_maps_next(const char **cur, const char *end, struct lps_mapping *m);

/*
 * One line of /proc/kallsyms: "ffffffff81000000 T name\t[module]\n".
 * Returns 1 for a text symbol (types t, T, w, W), 0 for other symbols,
 * -EBADMSG for a malformed line. k->name / k->module point into the line.
 */
int coll_ksym_parse_line(const char *line, size_t len, struct lps_ksym *k);

/*
 * Reads a whole /proc file into a malloc'd, NUL-terminated buffer
 * (procfs files report size 0, so it reads until EOF, up to max bytes).
 * Returns 0 and sets *buf, *len; or a negative errno (-EFBIG over max).
 * The caller frees *buf.
 */
int coll_read_file(const char *path, size_t max, char **buf, size_t *len);

#endif /* LOWPROF_COLL_PROCFS_H */
