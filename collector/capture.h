/* SPDX-License-Identifier: MIT */
/*
 * The collector's capture file writer: appends every record the collector
 * produces to a capture file (format: lowprof/capture.h) without ever
 * blocking the drain loop on the disk.
 *
 * Records are gathered in a block buffer; a full block (COLL_CAPTURE_BLOCK
 * bytes of records, or one second old) is compressed (zstd level -1, kept
 * only if it saves an eighth) into one of a few fixed slots and written with
 * io_uring at the next file offset; a slot is free again when its write
 * completes. When every slot is still in flight the drain loop waits up to
 * 50 ms for one (io_uring's workers may be short of CPU on a busy host);
 * if none completes the block is dropped and its records counted, and the
 * next blocks are dropped without waiting until a write completes: a
 * stuck disk costs the drain loop one wait. Memory is bounded by the block
 * buffer and the slots (9 x 1.5 MiB of address space; pages are touched
 * only as blocks fill them). A failed or short write (a full disk) stops
 * the capture: later records are counted as dropped. Where io_uring is not
 * available (kernel.io_uring_disabled) the blocks are written with pwrite.
 *
 * What it is not: a reader, or a parser of what the records contain.
 */
#ifndef LOWPROF_COLL_CAPTURE_H
#define LOWPROF_COLL_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

/* A block is written when it holds this many bytes of records, or is a second old. */
#define COLL_CAPTURE_BLOCK  (512u << 10)
#define COLL_CAPTURE_AGE_NS 1000000000ull
#define COLL_CAPTURE_SLOTS  8
/*
 * A block's most bytes of records: a full block plus one largest record
 * (LPS_MAX_RECORD and its length), so a record always fits after a flush.
 */
#define COLL_CAPTURE_RAW_CAP (COLL_CAPTURE_BLOCK + (1u << 20) + 4u)
/* With every slot still being written, a block waits this long for one. */
#define COLL_CAPTURE_WAIT_NS 50000000L

struct coll_capture;

struct coll_capture_stats {
	uint64_t records;      /* records written to the file */
	uint64_t record_bytes; /* their bytes, with length prefixes */
	uint64_t file_bytes;   /* bytes written: header + blocks */
	uint64_t blocks, zstd_blocks;
	uint64_t dropped_records; /* records not written (no free slot, or after an error) */
	uint64_t dropped_bytes;
	int err;    /* first write error (negative errno), or 0 */
	bool uring; /* io_uring in use (else pwrite) */
};

/*
 * Starts a capture into fd (a regular file opened for writing; it is
 * truncated, and stays the caller's to close after coll_capture__free).
 * compress: zstd-compress blocks that get smaller. Writes the file header
 * synchronously. Returns 0 and *out, or a negative errno.
 * Destructor: coll_capture__free.
 */
int coll_capture__new(int fd, bool compress, struct coll_capture **out);

/*
 * Space for one record of at most max_len bytes in the current block, or
 * NULL (the record is then counted as dropped). Commit with its final length;
 * at most one reservation is open at a time.
 */
void *coll_capture__reserve(struct coll_capture *c, uint32_t max_len);
void coll_capture__commit(struct coll_capture *c, uint32_t len);
/* reserve + copy + commit; 0 or -ENOSPC (dropped and counted). */
int coll_capture__write(struct coll_capture *c, const void *rec, uint32_t len);

/*
 * Writes a block made elsewhere (coll_capture_encode_block; blk, len bytes:
 * header and payload) after the records written so far, as the file's next
 * block: its header gets the file's next seq, its payload and payload
 * checksum stay as they are. Its records are counted as the capture's.
 * 0, -EINVAL (not a block, or larger than a block of records compressed
 * at worst) or -ENOSPC (dropped and counted, as a block of records is).
 */
int coll_capture__put_block(struct coll_capture *c, const void *blk, uint32_t len);

/*
 * Encodes one block: nrecords records (raw: raw_len <= COLL_CAPTURE_RAW_CAP
 * bytes, each with its length prefix) into out (cap bytes: the block
 * header and ZSTD_compressBound(raw_len) at least), numbered seq. With
 * cctx (a ZSTD_CCtx) the payload is zstd-compressed at level, and kept so
 * only if that saves an eighth (*zstd says which). Returns the block's
 * length, header included.
 */
uint32_t coll_capture_encode_block(void *cctx, int level, uint32_t seq, const void *raw,
				   uint32_t raw_len, uint32_t nrecords, uint8_t *out, size_t cap,
				   bool *zstd);

/* Reaps finished writes and writes the current block if it is old. Call often. */
void coll_capture__tick(struct coll_capture *c, uint64_t now_ns);

/*
 * Writes the last block, waits for every write and syncs the file's data.
 * Returns 0 or the first error. The stats stay readable until __free.
 */
int coll_capture__finish(struct coll_capture *c);

/*
 * coll_capture__finish without waiting (a rotated capture, while the next
 * one is written): writes the last block and queues a data sync that
 * starts once every write completed. coll_capture__finish_poll reaps
 * (waits for everything with wait) and returns 1 once the file is
 * whole on disk, with *err the first error, 0 while it is not, -EINVAL
 * before finish_start. Without io_uring the sync is done at once.
 */
int coll_capture__finish_start(struct coll_capture *c);
int coll_capture__finish_poll(struct coll_capture *c, bool wait, int *err);

void coll_capture__stats(const struct coll_capture *c, struct coll_capture_stats *st);
void coll_capture__free(struct coll_capture *c);

#endif /* LOWPROF_COLL_CAPTURE_H */
