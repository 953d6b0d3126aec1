/* SPDX-License-Identifier: MIT */
/*
 * lowprof capture files: the record stream of a run (schema.h records,
 * byte for byte what crosses the shared-memory ring), kept in a file to be
 * replayed later, elsewhere, or again.
 *
 * What it is: the file format (a header, then checksummed blocks of
 * length-prefixed records, each block optionally zstd-compressed) and a
 * validating reader. What it is not: the writer (the collector's, which
 * writes blocks with io_uring) or the interpretation of the records.
 *
 * Layout (all integers little-endian; schema/README.md has the tables):
 *
 *   file header, LPC_HDR_SIZE bytes:
 *     magic "LPCAPT\r\n", major u16, minor u16, hdr_size u32, flags u32,
 *     reserved u32, created_real_ns u64, reserved to byte 60, crc32c u32 of
 *     bytes [0, 60)
 *   blocks, one after the other, each:
 *     header, LPC_BLOCK_HDR_SIZE bytes: magic u32 "LPCB", flags u32 (bits
 *     0-7 compression), seq u32, nrecords u32, raw_len u32, stored_len u32,
 *     payload crc32c u32 (of the stored bytes), header crc32c u32 (of the
 *     header's first 28 bytes)
 *     payload, stored_len bytes: raw_len bytes once decompressed, holding
 *     nrecords records, each a u32 length and that many bytes
 *
 * A block is written whole or not at all as far as the reader can tell:
 * its checksums make a torn, zeroed or flipped block a counted loss of
 * exactly its records, and the reader goes on with the next block (found by
 * its header, scanning forward when a header is damaged). A file cut short
 * reads up to its last whole block. Version rules: a reader reads files of
 * its own major version; minor versions only add header fields in the
 * reserved bytes or block flags that older readers may ignore.
 */
#ifndef LOWPROF_CAPTURE_H
#define LOWPROF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LPC_MAGIC	    "LPCAPT\r\n"
#define LPC_MAGIC_LEN	    8
#define LPC_VERSION_MAJOR   1
#define LPC_VERSION_MINOR   0
#define LPC_HDR_SIZE	    64u
#define LPC_HDR_MAX	    4096u	/* hdr_size limit: later minors may grow the header */
#define LPC_BLOCK_MAGIC	    0x4243504cu /* "LPCB" */
#define LPC_BLOCK_HDR_SIZE  32u
#define LPC_MAX_BLOCK	    (4u << 20) /* raw and stored payload bytes of one block */
#define LPC_BLOCK_COMP_MASK 0xffu
#define LPC_REC_LEN_SIZE    4u

enum lpc_compression {
	LPC_COMP_NONE = 0,
	LPC_COMP_ZSTD = 1,
};

struct lpc_header {
	uint16_t major, minor;
	uint32_t hdr_size;
	uint32_t flags;
	uint64_t created_real_ns; /* when the writer opened the file, CLOCK_REALTIME */
};

struct lpc_block {
	uint32_t flags; /* compression in LPC_BLOCK_COMP_MASK */
	uint32_t seq;	/* 0, 1, 2... in file order */
	uint32_t nrecords;
	uint32_t raw_len;
	uint32_t stored_len;
	uint32_t payload_crc;
};

/* Encodes a file header (LPC_HDR_SIZE bytes, checksum included). */
void lpc_header_encode(void *out, const struct lpc_header *h);
/*
 * Decodes and checks a file header from buf[0..len). Returns 0; -EBADF: not
 * a capture file (magic); -EBADMSG: damaged (checksum, sizes) or cut short;
 * -EPROTO: a major version this reader does not read (h->major set).
 */
int lpc_header_decode(const void *buf, size_t len, struct lpc_header *h);

/* Encodes a block header (LPC_BLOCK_HDR_SIZE bytes, checksum included). */
void lpc_block_encode(void *out, const struct lpc_block *b);
/*
 * Decodes and checks a block header (LPC_BLOCK_HDR_SIZE bytes): magic,
 * checksum, lengths within LPC_MAX_BLOCK, stored == raw when uncompressed.
 * Returns 0 or -EBADMSG. An unknown compression is left for the reader.
 */
int lpc_block_decode(const void *buf, struct lpc_block *b);

/* What a reader found, cumulative. */
struct lpc_stats {
	uint64_t file_bytes;	  /* size of the file when it was opened */
	uint64_t blocks;	  /* whole blocks read */
	uint64_t records;	  /* records returned */
	uint64_t raw_bytes;	  /* their payload bytes, decompressed */
	uint64_t stored_bytes;	  /* their payload bytes in the file */
	uint64_t zstd_blocks;	  /* of blocks, compressed ones */
	uint64_t bad_blocks;	  /* skipped: checksum, decompression or record framing */
	uint64_t lost_records;	  /* records of bad, cut or unreadable blocks */
	uint64_t missing_blocks;  /* gaps in the block numbers (records unknown) */
	uint64_t skipped_bytes;	  /* bytes that were no block (scanned over) */
	bool truncated;		  /* the file ends inside a block */
	uint64_t truncated_bytes; /* bytes of that last, partial block */
};

struct lpc_reader;

/*
 * Opens a reader over fd (read with pread from offset 0; the fd stays the
 * caller's) or over buf[0..len) (kept by the caller until lpc_reader__free).
 * The header is read and checked here: returns 0 and *out, or the error of
 * lpc_header_decode, -EIO on a read error, -ENOMEM. hdr (may be NULL) gets
 * the header whenever it could be decoded, on -EPROTO too (for the message).
 * Destructor: lpc_reader__free.
 */
int lpc_reader__open_fd(int fd, struct lpc_reader **out, struct lpc_header *hdr);
int lpc_reader__open_mem(const void *buf, size_t len, struct lpc_reader **out,
			 struct lpc_header *hdr);
void lpc_reader__free(struct lpc_reader *r);

/*
 * Called with a one-line description of each problem found (a damaged or cut
 * block, a gap, bytes that are no block), at most max_msgs times; the rest
 * are only counted. Off until set.
 */
void lpc_reader__set_warn(struct lpc_reader *r, void (*warn)(void *ctx, const char *msg), void *ctx,
			  unsigned max_msgs);

const struct lpc_header *lpc_reader__header(const struct lpc_reader *r);

/*
 * Next record: 0 and *rec, *len (valid until the next call; the record itself
 * is not decoded: lps_decode it), -ENODATA at the end of the file, -EIO on a
 * read error, -ENOMEM. Damage is skipped, counted in the stats and reported
 * through the warn callback; it never ends the reading early.
 */
int lpc_reader__next(struct lpc_reader *r, const void **rec, uint32_t *len);

/* The reader's position in the file (for progress). */
uint64_t lpc_reader__offset(const struct lpc_reader *r);
void lpc_reader__stats(const struct lpc_reader *r, struct lpc_stats *st);

/*
 * Why an lpc_reader__open_* failed, for a message after the file's name: "not
 * a lowprof capture file", "its header is damaged or cut short", "not a
 * regular file", "capture format M.N; this lowprof reads 1.x" (hdr as open
 * filled it), or strerror. The text is in buf (cap bytes) or static.
 */
const char *lpc_open_strerror(int err, const struct lpc_header *hdr, char *buf, size_t cap);

/*
 * What st says was damaged, for capture-info and the replay's summary:
 * NULL when nothing was, else "N records lost in B damaged blocks, M blocks
 * missing, S bytes that were no block", and when the file ends inside a
 * block ", and a cut-off end (the writer was stopped or the disk was full)"
 * or, inside a block's header, "..., and a cut-off end inside a block's
 * header, whose records are unknown (...)". The text is in buf (cap bytes).
 */
const char *lpc_damage_text(const struct lpc_stats *st, char *buf, size_t cap);

/* "none", "zstd" or "unknown". */
const char *lpc_compression_name(uint32_t comp);

#endif /* LOWPROF_CAPTURE_H */
