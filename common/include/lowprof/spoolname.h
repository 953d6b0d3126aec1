/* SPDX-License-Identifier: MIT */
/*
 * The names of a spool's window files, "KIND-YYYYmmddTHHMMSSZ-SEQ.pb.gz"
 * (symbolizer/spool.c writes them), for every reader of a spool: lowprof
 * windows and merge, the exporter. A name is data from a directory anyone
 * of the spool's user can write: parsed strictly, or refused.
 */
#ifndef LOWPROF_SPOOLNAME_H
#define LOWPROF_SPOOLNAME_H

#include <stdint.h>

/* "cpu", "offcpu": the kinds of window, in the order readers list them */
#define LP_SPOOL_KINDS 2
extern const char *const lp_spool_kinds[LP_SPOOL_KINDS];

/* The longest name a spool file has (without the terminator). */
#define LP_SPOOL_NAME_MAX 63

/*
 * Parses a window file's name (not its path): its kind (index into
 * lp_spool_kinds), its start from the name (seconds since the epoch; a
 * date that exists) and its number (six digits or more, as %06 prints).
 * 0, or -EINVAL for any other name (temporary ".tmp-" ones included).
 */
int lp_spool_parse_name(const char *name, int *kind, int64_t *start_s, uint64_t *seq);

#endif /* LOWPROF_SPOOLNAME_H */
