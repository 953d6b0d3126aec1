/* SPDX-License-Identifier: MIT */
/*
 * The merged profile of lowprof merge (merge_model.c): profiles (the
 * writers' model, as lowprof/pprof_read.h reads them) folded in one at a
 * time, each freed by its caller once added.
 *
 * What it is: mappings merged by (path, build id, start, limit, offset),
 * locations by content (mapping, address, function, lines), samples with
 * the same locations and labels summed; the earliest start to the latest
 * end; the profiles' comments kept once each, their counters (lowprof's
 * "lost:", "off-CPU:" and collector restart lines) summed, their "lowprof
 * window N" lines replaced by one line saying which windows it holds and
 * which numbers are missing between them. A new mapping whose range meets
 * one already merged (windows lay binaries out anew, so another file can
 * hold the same range in another window) is moved above the others, its
 * locations with it, so that no two mappings overlap.
 *
 * What it is not: a relocator of identical files. The same file at
 * different addresses in two windows stays two mappings.
 */
#ifndef LOWPROF_CLI_MERGE_H
#define LOWPROF_CLI_MERGE_H

#include <stddef.h>

#include "lowprof/writers.h"

struct cli_merge;

/* An empty merge (free it with cli_merge__free), or NULL (ENOMEM). */
struct cli_merge *cli_merge__new(void);

/*
 * Before any add: the inputs are the shards of one run (lowprof/shard.h),
 * merged into the profile one symbolizer would have written: the title is
 * the one the shards carry in a comment (which is taken out), and no
 * "lowprof merge:" line is added.
 */
void cli_merge__set_shards(struct cli_merge *m);

/*
 * Folds p in; name (its file) is for messages. p is not kept. Returns 0,
 * -EINVAL when its sample types are not those of the first profile, or
 * -ENOMEM / -E2BIG; either said with name. After an error m is only good
 * for cli_merge__free.
 */
int cli_merge__add(struct cli_merge *m, const struct lpw_profile *p, const char *name);

/*
 * The merged profile, once at least one was added: its comments and title
 * made; valid until cli_merge__free, and no more adding after it. NULL
 * with errno (EINVAL: none added, or called twice; ENOMEM).
 */
const struct lpw_profile *cli_merge__profile(struct cli_merge *m);

/* Frees m and the merged profile; NULL is fine. */
void cli_merge__free(struct cli_merge *m);

#endif /* LOWPROF_CLI_MERGE_H */
