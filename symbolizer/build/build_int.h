/* SPDX-License-Identifier: MIT */
/* Inside build/: what the model (build.c) and the summary (summary.c) share. */
#ifndef LOWPROF_SYMB_BUILD_INT_H
#define LOWPROF_SYMB_BUILD_INT_H

#include <stddef.h>
#include <stdint.h>

#include "ingest.h"

/* x ns as "1.23 s", "4.56 ms", "7.89 us" or "12 ns". Returns buf. */
const char *symb_fmt_ns(char *buf, size_t cap, uint64_t ns);

/*
 * The collector's off-CPU settings as "mode time, period 1.00 ms, minimum
 * 10.00 us", or "settings not reported" (a stream before schema 1.2). The
 * mode comes from the stream: it is printed as sanitized. Returns buf.
 */
const char *symb_offcpu_settings(const struct symb_meta *m, char *buf, size_t cap);

#endif /* LOWPROF_SYMB_BUILD_INT_H */
