// SPDX-License-Identifier: MIT
/*
 * Capture file format and reader (lowprof/capture.h). The reader trusts
 * nothing in the file: every length is checked against LPC_MAX_BLOCK, the
 * file's size and the block it is in before it is used, and damage costs
 * the records of the damaged block only.
 */
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>

#include "lowprof/capture.h"
#include "lowprof/crc32c.h"
#include "lowprof/grow.h"

#define HDR_CRC_OFF   60u
#define BLOCK_CRC_OFF 28u
#define SCAN_WINDOW   (64u << 10)
#define WARN_MSG_MAX  256

struct lpc_reader {
	int fd; /* -1: reading mem */
	const uint8_t *mem;
	uint64_t size; /* bytes readable */
	struct lpc_header h;
	uint64_t off; /* next block header */
	bool done;

	uint8_t *stored, *raw; /* payload buffers, grown up to LPC_MAX_BLOCK */
	size_t stored_cap, raw_cap;
	ZSTD_DCtx *dctx;

	/* the block being read */
	const uint8_t *blk;
	uint32_t blk_len, blk_pos, blk_left, blk_seq;
	uint64_t blk_off;
	bool in_block;
	bool have_seq;
	uint32_t next_seq;

	void (*warn)(void *ctx, const char *msg);
	void *warn_ctx;
	unsigned warn_left;

	struct lpc_stats st;
};

static void put16(uint8_t *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

void lpc_header_encode(void *out, const struct lpc_header *h)
{
	uint8_t *p = out;

	memset(p, 0, LPC_HDR_SIZE);
	memcpy(p, LPC_MAGIC, LPC_MAGIC_LEN);
	put16(p + 8, h->major);
	put16(p + 10, h->minor);
	put32(p + 12, LPC_HDR_SIZE);
	put32(p + 16, h->flags);
	put64(p + 24, h->created_real_ns);
	put32(p + HDR_CRC_OFF, lp_crc32c(p, HDR_CRC_OFF));
}

int lpc_header_decode(const void *buf, size_t len, struct lpc_header *h)
{
	const uint8_t *p = buf;

	memset(h, 0, sizeof(*h));
	if (len < LPC_MAGIC_LEN || memcmp(p, LPC_MAGIC, LPC_MAGIC_LEN))
		return -EBADF;
	if (len < LPC_HDR_SIZE || get32(p + HDR_CRC_OFF) != lp_crc32c(p, HDR_CRC_OFF))
		return -EBADMSG;
	h->major = get16(p + 8);
	h->minor = get16(p + 10);
	h->hdr_size = get32(p + 12);
	h->flags = get32(p + 16);
	h->created_real_ns = get64(p + 24);
	if (h->major != LPC_VERSION_MAJOR)
		return -EPROTO;
	if (h->hdr_size < LPC_HDR_SIZE || h->hdr_size > LPC_HDR_MAX)
		return -EBADMSG;
	return 0;
}

void lpc_block_encode(void *out, const struct lpc_block *b)
{
	uint8_t *p = out;

	put32(p, LPC_BLOCK_MAGIC);
	put32(p + 4, b->flags);
	put32(p + 8, b->seq);
	put32(p + 12, b->nrecords);
	put32(p + 16, b->raw_len);
	put32(p + 20, b->stored_len);
	put32(p + 24, b->payload_crc);
	put32(p + BLOCK_CRC_OFF, lp_crc32c(p, BLOCK_CRC_OFF));
}

int lpc_block_decode(const void *buf, struct lpc_block *b)
{
	const uint8_t *p = buf;

	if (get32(p) != LPC_BLOCK_MAGIC || get32(p + BLOCK_CRC_OFF) != lp_crc32c(p, BLOCK_CRC_OFF))
		return -EBADMSG;
	b->flags = get32(p + 4);
	b->seq = get32(p + 8);
	b->nrecords = get32(p + 12);
	b->raw_len = get32(p + 16);
	b->stored_len = get32(p + 20);
	b->payload_crc = get32(p + 24);
	if (b->raw_len > LPC_MAX_BLOCK || b->stored_len > LPC_MAX_BLOCK)
		return -EBADMSG;
	if ((b->flags & LPC_BLOCK_COMP_MASK) == LPC_COMP_NONE && b->stored_len != b->raw_len)
		return -EBADMSG;
	/* every record costs at least its length prefix */
	if (b->nrecords > b->raw_len / LPC_REC_LEN_SIZE)
		return -EBADMSG;
	return 0;
}

const char *lpc_open_strerror(int err, const struct lpc_header *hdr, char *buf, size_t cap)
{
	switch (err) {
	case -EBADF:
		return "not a lowprof capture file";
	case -EBADMSG:
		return "its header is damaged or cut short";
	case -EINVAL:
		return "not a regular file";
	case -EPROTO:
		snprintf(buf, cap, "capture format %u.%u; this lowprof reads %u.x", hdr->major,
			 hdr->minor, LPC_VERSION_MAJOR);
		return buf;
	}
	return strerror(-err);
}

const char *lpc_damage_text(const struct lpc_stats *st, char *buf, size_t cap)
{
	if (!st->lost_records && !st->bad_blocks && !st->missing_blocks && !st->skipped_bytes &&
	    !st->truncated)
		return NULL;
	/* a block cut inside its header took its record count with it */
	snprintf(buf, cap,
		 "%llu records lost in %llu damaged blocks, %llu blocks missing, %llu bytes that "
		 "were no block%s",
		 (unsigned long long)st->lost_records, (unsigned long long)st->bad_blocks,
		 (unsigned long long)st->missing_blocks, (unsigned long long)st->skipped_bytes,
		 !st->truncated ? ""
		 : st->truncated_bytes < LPC_BLOCK_HDR_SIZE
			 ? ", and a cut-off end inside a block's header, whose records are unknown "
			   "(the writer was stopped or the disk was full)"
			 : ", and a cut-off end (the writer was stopped or the disk was full)");
	return buf;
}

const char *lpc_compression_name(uint32_t comp)
{
	switch (comp) {
	case LPC_COMP_NONE:
		return "none";
	case LPC_COMP_ZSTD:
		return "zstd";
	}
	return "unknown";
}

static void warnf(struct lpc_reader *r, const char *fmt, ...)
{
	char msg[WARN_MSG_MAX];
	va_list ap;

	if (!r->warn || !r->warn_left)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!--r->warn_left) {
		size_t n = strlen(msg);

		snprintf(msg + n, sizeof(msg) - n, " (further problems are only counted)");
	}
	r->warn(r->warn_ctx, msg);
}

/* Reads up to n bytes at off; returns the bytes read (short only at the end) or -EIO. */
static ssize_t src_read(struct lpc_reader *r, uint64_t off, void *buf, size_t n)
{
	size_t got = 0;

	if (off >= r->size)
		return 0;
	if (n > r->size - off)
		n = (size_t)(r->size - off);
	if (r->fd < 0) {
		memcpy(buf, r->mem + off, n);
		return (ssize_t)n;
	}
	while (got < n) {
		ssize_t k = pread(r->fd, (uint8_t *)buf + got, n - got, (off_t)(off + got));

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -EIO;
		if (k == 0)
			break; /* the file shrank since it was opened */
		got += (size_t)k;
	}
	return (ssize_t)got;
}

static int grow(uint8_t **buf, size_t *cap, size_t need)
{
	return lp_grow((void **)buf, cap, need, 1, 64u << 10, SIZE_MAX);
}

static int reader_new(struct lpc_reader **out, struct lpc_header *hdr, int fd, const void *mem,
		      uint64_t size)
{
	uint8_t head[LPC_HDR_SIZE];
	struct lpc_header h;
	struct lpc_reader *r;
	ssize_t n;
	int err;

	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->fd = fd;
	r->mem = mem;
	r->size = size;
	r->st.file_bytes = size;
	n = src_read(r, 0, head, sizeof(head));
	if (n < 0) {
		err = (int)n;
		goto err_out;
	}
	err = lpc_header_decode(head, (size_t)n, &h);
	if (hdr)
		*hdr = h;
	if (err)
		goto err_out;
	if (h.hdr_size > size) {
		err = -EBADMSG;
		goto err_out;
	}
	r->h = h;
	r->off = h.hdr_size;
	r->have_seq = true; /* blocks are numbered from 0: a lost first block is a gap too */
	*out = r;
	return 0;
err_out:
	free(r);
	return err;
}

int lpc_reader__open_fd(int fd, struct lpc_reader **out, struct lpc_header *hdr)
{
	struct stat st;

	*out = NULL;
	if (fstat(fd, &st))
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		*out = NULL;
		return -EINVAL;
	}
	return reader_new(out, hdr, fd, NULL, (uint64_t)st.st_size);
}

int lpc_reader__open_mem(const void *buf, size_t len, struct lpc_reader **out,
			 struct lpc_header *hdr)
{
	return reader_new(out, hdr, -1, buf, len);
}

void lpc_reader__free(struct lpc_reader *r)
{
	if (!r)
		return;
	free(r->stored);
	free(r->raw);
	ZSTD_freeDCtx(r->dctx);
	free(r);
}

void lpc_reader__set_warn(struct lpc_reader *r, void (*warn)(void *ctx, const char *msg), void *ctx,
			  unsigned max_msgs)
{
	r->warn = warn;
	r->warn_ctx = ctx;
	r->warn_left = max_msgs;
}

const struct lpc_header *lpc_reader__header(const struct lpc_reader *r)
{
	return &r->h;
}

uint64_t lpc_reader__offset(const struct lpc_reader *r)
{
	return r->off;
}

void lpc_reader__stats(const struct lpc_reader *r, struct lpc_stats *st)
{
	*st = r->st;
}

/*
 * The offset of the next valid block header after from, or r->size if there
 * is none: a damaged header (or a hole of zeros a crash left) is skipped by
 * looking for the block magic with a header checksum that holds.
 */
static int64_t scan_for_block(struct lpc_reader *r, uint64_t from)
{
	uint8_t *win;
	uint64_t pos = from;
	int64_t found = (int64_t)r->size;

	win = malloc(SCAN_WINDOW);
	if (!win)
		return -ENOMEM;
	while (pos + LPC_BLOCK_HDR_SIZE <= r->size) {
		ssize_t n = src_read(r, pos, win, SCAN_WINDOW);

		if (n < 0) {
			found = n;
			break;
		}
		if ((size_t)n < LPC_BLOCK_HDR_SIZE)
			break;
		for (size_t i = 0; i + LPC_BLOCK_HDR_SIZE <= (size_t)n; i++) {
			struct lpc_block b;

			if (win[i] != (LPC_BLOCK_MAGIC & 0xff) || get32(win + i) != LPC_BLOCK_MAGIC)
				continue;
			if (lpc_block_decode(win + i, &b) == 0) {
				found = (int64_t)(pos + i);
				goto out;
			}
		}
		/* the next window overlaps by a header less one byte */
		pos += (uint64_t)n - (LPC_BLOCK_HDR_SIZE - 1);
	}
out:
	free(win);
	return found;
}

static void bad_block(struct lpc_reader *r, const struct lpc_block *b, const char *why)
{
	r->st.bad_blocks++;
	r->st.lost_records += b->nrecords;
	warnf(r, "block %u at offset %llu: %s; its %u records are skipped", b->seq,
	      (unsigned long long)r->off, why, b->nrecords);
}

/*
 * Loads the next whole block into blk: 0 when one is loaded, 1 at the end
 * of the file, -EIO or -ENOMEM.
 */
static int load_block(struct lpc_reader *r)
{
	uint8_t head[LPC_BLOCK_HDR_SIZE];

	for (;;) {
		uint64_t left = r->size - r->off, end;
		struct lpc_block b;
		uint32_t comp;
		ssize_t n;
		int err;

		if (r->off >= r->size)
			return 1;
		if (left < LPC_BLOCK_HDR_SIZE) {
			r->st.truncated = true;
			r->st.truncated_bytes = left;
			warnf(r,
			      "the file ends %llu byte%s into a block header at offset %llu: that "
			      "block's records are lost, how many is unknown (cut short: the "
			      "writer was stopped, or the disk was full)",
			      (unsigned long long)left, left == 1 ? "" : "s",
			      (unsigned long long)r->off);
			return 1;
		}
		n = src_read(r, r->off, head, sizeof(head));
		if (n < 0)
			return (int)n;
		if ((size_t)n < sizeof(head)) { /* the file shrank */
			r->size = r->off + (uint64_t)n;
			continue;
		}
		if (lpc_block_decode(head, &b)) {
			int64_t next = scan_for_block(r, r->off + 1);

			if (next < 0)
				return (int)next;
			r->st.skipped_bytes += (uint64_t)next - r->off;
			warnf(r,
			      "bytes %llu to %llu are not a valid block (damaged or never "
			      "written); skipped",
			      (unsigned long long)r->off, (unsigned long long)next);
			r->off = (uint64_t)next;
			continue;
		}
		if (r->have_seq && b.seq > r->next_seq) {
			r->st.missing_blocks += b.seq - r->next_seq;
			warnf(r, "blocks %u to %u are missing before offset %llu", r->next_seq,
			      b.seq - 1, (unsigned long long)r->off);
		}
		r->have_seq = true;
		r->next_seq = b.seq + 1;
		end = r->off + LPC_BLOCK_HDR_SIZE + b.stored_len;
		if (end > r->size) {
			r->st.truncated = true;
			r->st.truncated_bytes = left;
			r->st.lost_records += b.nrecords;
			warnf(r,
			      "the file ends inside block %u (offset %llu, %llu of %llu bytes): "
			      "its %u records are lost (cut short: the writer was stopped, or the "
			      "disk was full)",
			      b.seq, (unsigned long long)r->off, (unsigned long long)left,
			      (unsigned long long)(LPC_BLOCK_HDR_SIZE + b.stored_len), b.nrecords);
			return 1;
		}
		err = grow(&r->stored, &r->stored_cap, b.stored_len ? b.stored_len : 1);
		if (err)
			return err;
		n = src_read(r, r->off + LPC_BLOCK_HDR_SIZE, r->stored, b.stored_len);
		if (n < 0)
			return (int)n;
		if ((size_t)n < b.stored_len) { /* the file shrank */
			r->size = r->off + LPC_BLOCK_HDR_SIZE + (uint64_t)n;
			continue;
		}
		comp = b.flags & LPC_BLOCK_COMP_MASK;
		if (lp_crc32c(r->stored, b.stored_len) != b.payload_crc) {
			bad_block(r, &b, "checksum mismatch");
		} else if (comp == LPC_COMP_NONE) {
			r->blk = r->stored;
		} else if (comp == LPC_COMP_ZSTD) {
			size_t got;

			err = grow(&r->raw, &r->raw_cap, b.raw_len ? b.raw_len : 1);
			if (err)
				return err;
			if (!r->dctx && !(r->dctx = ZSTD_createDCtx()))
				return -ENOMEM;
			got = ZSTD_decompressDCtx(r->dctx, r->raw, b.raw_len, r->stored,
						  b.stored_len);
			if (ZSTD_isError(got) || got != b.raw_len)
				bad_block(r, &b, "does not decompress to its length");
			else
				r->blk = r->raw;
		} else {
			bad_block(r, &b, "unknown compression");
		}
		if (r->blk) {
			r->in_block = true;
			r->blk_len = b.raw_len;
			r->blk_pos = 0;
			r->blk_left = b.nrecords;
			r->blk_seq = b.seq;
			r->blk_off = r->off;
			r->st.blocks++;
			r->st.raw_bytes += b.raw_len;
			r->st.stored_bytes += b.stored_len;
			if (comp == LPC_COMP_ZSTD)
				r->st.zstd_blocks++;
		}
		r->off = end;
		if (r->blk)
			return 0;
	}
}

static void leave_block(struct lpc_reader *r, const char *why)
{
	if (why) {
		r->st.bad_blocks++;
		r->st.lost_records += r->blk_left;
		warnf(r, "block %u at offset %llu: %s; its last %u records are skipped", r->blk_seq,
		      (unsigned long long)r->blk_off, why, r->blk_left);
	}
	r->in_block = false;
	r->blk = NULL;
}

int lpc_reader__next(struct lpc_reader *r, const void **rec, uint32_t *len)
{
	for (;;) {
		if (r->in_block) {
			uint32_t avail = r->blk_len - r->blk_pos, n;

			if (!r->blk_left) {
				leave_block(r, avail ? "bytes after its last record" : NULL);
				continue;
			}
			if (avail < LPC_REC_LEN_SIZE) {
				leave_block(r, "a record length runs past its end");
				continue;
			}
			n = get32(r->blk + r->blk_pos);
			if (n > avail - LPC_REC_LEN_SIZE) {
				leave_block(r, "a record runs past its end");
				continue;
			}
			*rec = r->blk + r->blk_pos + LPC_REC_LEN_SIZE;
			*len = n;
			r->blk_pos += LPC_REC_LEN_SIZE + n;
			r->blk_left--;
			r->st.records++;
			return 0;
		}
		if (r->done)
			return -ENODATA;
		{
			int err = load_block(r);

			if (err < 0)
				return err;
			if (err == 1)
				r->done = true;
		}
	}
}
