/* SPDX-License-Identifier: MIT */
/*
 * A kernel symbol snapshot kept as capture blocks (--capture-dir): the
 * snapshot's records, as the collector encoded them for one window's file,
 * gathered into blocks of at most COLL_CAPTURE_RAW_CAP bytes of records and
 * compressed once, harder than the capture's own blocks (the cost is paid
 * once per snapshot, not per window), so that the next windows' files get
 * the same blocks (coll_capture__put_block) without /proc/kallsyms being
 * read again. Each file still holds the whole snapshot and replays alone.
 *
 * What it is not: the judge of whether the kernel's symbols changed (the
 * collector's), or a parser of the records.
 */
#ifndef LOWPROF_COLL_KSNAP_H
#define LOWPROF_COLL_KSNAP_H

#include <stdbool.h>
#include <stdint.h>

#include "capture.h"

/*
 * zstd level of a snapshot's blocks: 3, zstd's default. Level 6 made them
 * ~19% smaller than the capture's level -1 but cost ~25 ms more for each
 * snapshot read (at start-up, before the drain loop) and a 3.6 MB context
 * in the collector's peak memory.
 */
#define COLL_KSNAP_LEVEL 3

struct coll_ksnap;

/*
 * An empty snapshot to add records to; compress: zstd its blocks (as the
 * capture does). NULL with errno set. Destructor: coll_ksnap__free.
 */
struct coll_ksnap *coll_ksnap__new(bool compress);

/*
 * Appends one record (len <= 1 MiB); 0, or -ENOMEM / -EINVAL (a record too
 * large), and the snapshot is then unusable; -EINVAL once it is finished.
 */
int coll_ksnap__add(struct coll_ksnap *k, const void *rec, uint32_t len);

/* Seals the last block: no record is added after. 0 or the first error of an add or of this. */
int coll_ksnap__finish(struct coll_ksnap *k);

/* Puts every block of a finished snapshot into cap, in order: 0 or the first error. */
int coll_ksnap__write(const struct coll_ksnap *k, struct coll_capture *cap);

/* Its blocks' bytes and their records' bytes. */
void coll_ksnap__size(const struct coll_ksnap *k, uint64_t *bytes, uint64_t *record_bytes);

void coll_ksnap__free(struct coll_ksnap *k);

#endif /* LOWPROF_COLL_KSNAP_H */
