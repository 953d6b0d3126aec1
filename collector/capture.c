// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <liburing.h>
#include <zstd.h>

#include "capture.h"
#include "lowprof/capture.h"
#include "lowprof/clock.h"
#include "lowprof/crc32c.h"
#include "lowprof/files.h"
#include "lowprof/schema.h"

#define RAW_CAP COLL_CAPTURE_RAW_CAP
_Static_assert(RAW_CAP == COLL_CAPTURE_BLOCK + LPS_MAX_RECORD + LPC_REC_LEN_SIZE,
	       "room for a full block plus one largest record");
/*
 * zstd's first fast level: on a 40k-sample capture of a busy host (70.6 MB
 * of records) it made a file 1.9% larger than level 1 in 7% less time, and
 * the replay decompressed it in 17% less (12.2 against 14.7 ms), the
 * largest single cost of a replay.
 */
#define ZSTD_LEVEL (-1)

_Static_assert(RAW_CAP <= LPC_MAX_BLOCK, "a capture block must stay readable");

struct slot {
	uint8_t *buf; /* block header + payload */
	uint32_t len;
	uint32_t nrecords;
	uint64_t record_bytes;
	bool zstd;
	bool busy;
};

struct coll_capture {
	int fd;
	bool compress;
	bool uring;
	bool failed;
	bool stalled; /* the last wait for a slot ran out */
	struct io_uring ring;
	ZSTD_CCtx *cctx;
	size_t slot_cap;
	struct slot slots[COLL_CAPTURE_SLOTS];
	uint32_t inflight;

	uint8_t *raw; /* the block being filled: records with length prefixes */
	uint32_t raw_len;
	uint32_t nrecords;
	uint32_t reserved; /* open reservation's max length, 0: none */
	uint64_t first_ns; /* when the block's first record came */
	uint64_t off;	   /* where the next block goes */
	uint32_t seq;
	bool syncing, synced; /* coll_capture__finish_start's sync: queued, done */

	struct coll_capture_stats st;
};

int coll_capture__new(int fd, bool compress, struct coll_capture **out)
{
	struct lpc_header h = {.major = LPC_VERSION_MAJOR, .minor = LPC_VERSION_MINOR};
	uint8_t head[LPC_HDR_SIZE];
	struct coll_capture *c;
	int err;

	*out = NULL;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = fd;
	c->compress = compress;
	c->slot_cap = LPC_BLOCK_HDR_SIZE + (compress ? ZSTD_compressBound(RAW_CAP) : RAW_CAP);
	if (c->slot_cap < LPC_BLOCK_HDR_SIZE + RAW_CAP)
		c->slot_cap = LPC_BLOCK_HDR_SIZE + RAW_CAP;
	/* pages are touched only as blocks fill them: RSS follows the data rate */
	c->raw = malloc(RAW_CAP);
	if (!c->raw) {
		err = -ENOMEM;
		goto err_out;
	}
	for (int i = 0; i < COLL_CAPTURE_SLOTS; i++) {
		c->slots[i].buf = malloc(c->slot_cap);
		if (!c->slots[i].buf) {
			err = -ENOMEM;
			goto err_out;
		}
	}
	if (compress) {
		c->cctx = ZSTD_createCCtx();
		if (!c->cctx) {
			err = -ENOMEM;
			goto err_out;
		}
	}
	if (ftruncate(fd, 0)) {
		err = -errno;
		goto err_out;
	}
	h.created_real_ns = lp_clock_ns(CLOCK_REALTIME);
	lpc_header_encode(head, &h);
	err = lp_pwrite_all(fd, head, sizeof(head), 0);
	if (err)
		goto err_out;
	c->off = LPC_HDR_SIZE;
	c->st.file_bytes = LPC_HDR_SIZE;
	/* io_uring may be disabled (kernel.io_uring_disabled): pwrite then */
	c->uring = io_uring_queue_init(2 * COLL_CAPTURE_SLOTS, &c->ring, 0) == 0;
	c->st.uring = c->uring;
	*out = c;
	return 0;
err_out:
	coll_capture__free(c);
	return err;
}

static void fail(struct coll_capture *c, int err)
{
	if (!c->failed) {
		c->failed = true;
		c->st.err = err;
	}
}

/* The block in s was counted as written when it was handed out, but is not. */
static void uncount(struct coll_capture *c, const struct slot *s)
{
	c->st.records -= s->nrecords;
	c->st.record_bytes -= s->record_bytes;
	c->st.blocks--;
	c->st.zstd_blocks -= s->zstd;
	c->st.file_bytes -= s->len;
	c->st.dropped_records += s->nrecords;
	c->st.dropped_bytes += s->record_bytes;
}

/* A write finished: res is its result. Its records count as dropped if it failed. */
static void slot_done(struct coll_capture *c, struct slot *s, int res)
{
	if (res < 0 || (uint32_t)res != s->len) {
		fail(c, res < 0 ? res : -ENOSPC);
		uncount(c, s);
	}
	s->busy = false;
	c->inflight--;
}

/* user_data of finish_start's sync (the slots' are their indices) */
#define SYNC_TAG COLL_CAPTURE_SLOTS

static void reap(struct coll_capture *c, bool wait)
{
	struct io_uring_cqe *cqe;

	if (!c->uring)
		return;
	while (c->inflight) {
		int err = wait ? io_uring_wait_cqe(&c->ring, &cqe)
			       : io_uring_peek_cqe(&c->ring, &cqe);

		if (err == -EINTR)
			continue;
		if (err)
			return;
		if (cqe->user_data < COLL_CAPTURE_SLOTS && c->slots[cqe->user_data].busy)
			slot_done(c, &c->slots[cqe->user_data], cqe->res);
		if (cqe->user_data == SYNC_TAG && c->syncing && !c->synced) {
			if (cqe->res < 0)
				fail(c, cqe->res);
			c->synced = true;
			c->inflight--;
		}
		io_uring_cqe_seen(&c->ring, cqe);
	}
}

static struct slot *free_slot(struct coll_capture *c)
{
	for (int i = 0; i < COLL_CAPTURE_SLOTS; i++)
		if (!c->slots[i].busy)
			return &c->slots[i];
	return NULL;
}

/* Waits up to COLL_CAPTURE_WAIT_NS for one write to complete. */
static void wait_slot(struct coll_capture *c)
{
	struct __kernel_timespec ts = {0, COLL_CAPTURE_WAIT_NS};
	struct io_uring_cqe *cqe;

	if (!c->uring || !c->inflight)
		return;
	if (io_uring_wait_cqe_timeout(&c->ring, &cqe, &ts) == 0)
		reap(c, false); /* takes the completion seen and any other */
}

static void drop_block(struct coll_capture *c)
{
	c->st.dropped_records += c->nrecords;
	c->st.dropped_bytes += c->raw_len;
}

uint32_t coll_capture_encode_block(void *cctx, int level, uint32_t seq, const void *raw,
				   uint32_t raw_len, uint32_t nrecords, uint8_t *out, size_t cap,
				   bool *zstd)
{
	struct lpc_block b = {.seq = seq, .nrecords = nrecords, .raw_len = raw_len};
	uint8_t *payload = out + LPC_BLOCK_HDR_SIZE;
	size_t n = 0;

	if (cctx) {
		n = ZSTD_compressCCtx(cctx, payload, cap - LPC_BLOCK_HDR_SIZE, raw, raw_len, level);
		/* kept only if it saves an eighth: else reading it costs more than it saves */
		if (ZSTD_isError(n) || n > raw_len - raw_len / 8)
			n = 0;
	}
	if (n) {
		b.flags = LPC_COMP_ZSTD;
		b.stored_len = (uint32_t)n;
	} else {
		memcpy(payload, raw, raw_len);
		b.flags = LPC_COMP_NONE;
		b.stored_len = raw_len;
	}
	b.payload_crc = lp_crc32c(payload, b.stored_len);
	lpc_block_encode(out, &b);
	*zstd = n != 0;
	return LPC_BLOCK_HDR_SIZE + b.stored_len;
}

/* Fills slot s with the current block: header, then the payload, compressed if it pays. */
static void make_block(struct coll_capture *c, struct slot *s)
{
	s->len = coll_capture_encode_block(c->cctx, ZSTD_LEVEL, c->seq, c->raw, c->raw_len,
					   c->nrecords, s->buf, c->slot_cap, &s->zstd);
	s->nrecords = c->nrecords;
	s->record_bytes = c->raw_len;
}

/*
 * A free slot for the next block, or NULL (the capture failed, or no write
 * completed in time): the block is then dropped.
 */
static struct slot *take_slot(struct coll_capture *c)
{
	struct slot *s;

	reap(c, false);
	s = free_slot(c);
	if (!s && !c->failed && !c->stalled) {
		/*
		 * On a host whose CPUs are all busy, io_uring's workers can take
		 * longer than the slots last: wait a little (the drain loop's own
		 * CPU goes to them). Once a wait ran out, later blocks are dropped
		 * at once until a write completes: a stuck disk never slows the
		 * drain loop by more than one wait.
		 */
		wait_slot(c);
		s = free_slot(c);
		c->stalled = !s;
	}
	if (c->failed || !s)
		return NULL;
	c->stalled = false;
	return s;
}

/* Counts the block in s as written and writes it at the next offset. */
static void submit(struct coll_capture *c, struct slot *s)
{
	c->st.records += s->nrecords;
	c->st.record_bytes += s->record_bytes;
	c->st.blocks++;
	c->st.zstd_blocks += s->zstd;
	c->st.file_bytes += s->len;
	if (c->uring) {
		struct io_uring_sqe *sqe = io_uring_get_sqe(&c->ring);

		if (!sqe) { /* cannot happen: the ring has room for every slot */
			uncount(c, s);
			return;
		}
		io_uring_prep_write(sqe, c->fd, s->buf, s->len, c->off);
		sqe->user_data = (uint64_t)(s - c->slots);
		s->busy = true;
		c->inflight++;
		if (io_uring_submit(&c->ring) < 0) {
			slot_done(c, s, -EIO);
			return;
		}
	} else {
		s->busy = true;
		c->inflight++;
		slot_done(c, s, lp_pwrite_all(c->fd, s->buf, s->len, c->off) ?: (int)s->len);
	}
	c->off += s->len;
	c->seq++;
}

/* Writes the current block out (or drops it when no slot is free) and starts a new one. */
static void flush(struct coll_capture *c)
{
	struct slot *s;

	if (!c->nrecords)
		return;
	s = take_slot(c);
	if (!s) {
		drop_block(c);
	} else {
		make_block(c, s);
		submit(c, s);
	}
	c->raw_len = 0;
	c->nrecords = 0;
}

int coll_capture__put_block(struct coll_capture *c, const void *blk, uint32_t len)
{
	struct lpc_block b;
	struct slot *s;

	if (len < LPC_BLOCK_HDR_SIZE || len > c->slot_cap || lpc_block_decode(blk, &b) ||
	    b.stored_len != len - LPC_BLOCK_HDR_SIZE)
		return -EINVAL;
	flush(c); /* the records before it stay before it */
	s = take_slot(c);
	if (!s) {
		c->st.dropped_records += b.nrecords;
		c->st.dropped_bytes += b.raw_len;
		return -ENOSPC;
	}
	memcpy(s->buf, blk, len);
	b.seq = c->seq; /* the payload and its checksum stay as they are */
	lpc_block_encode(s->buf, &b);
	s->len = len;
	s->zstd = (b.flags & LPC_BLOCK_COMP_MASK) == LPC_COMP_ZSTD;
	s->nrecords = b.nrecords;
	s->record_bytes = b.raw_len;
	submit(c, s);
	return 0;
}

void *coll_capture__reserve(struct coll_capture *c, uint32_t max_len)
{
	c->reserved = 0;
	if (c->failed || max_len > LPS_MAX_RECORD) {
		c->st.dropped_records++;
		c->st.dropped_bytes += max_len;
		return NULL;
	}
	if (c->raw_len + LPC_REC_LEN_SIZE + (uint64_t)max_len > RAW_CAP)
		flush(c);
	if (!c->nrecords)
		c->first_ns = lp_clock_ns(CLOCK_MONOTONIC);
	c->reserved = max_len ? max_len : 1;
	return c->raw + c->raw_len + LPC_REC_LEN_SIZE;
}

void coll_capture__commit(struct coll_capture *c, uint32_t len)
{
	uint32_t v;

	if (!c->reserved || len > c->reserved)
		return;
	c->reserved = 0;
	v = htole32(len);
	memcpy(c->raw + c->raw_len, &v, sizeof(v));
	c->raw_len += LPC_REC_LEN_SIZE + len;
	c->nrecords++;
	if (c->raw_len >= COLL_CAPTURE_BLOCK)
		flush(c);
}

int coll_capture__write(struct coll_capture *c, const void *rec, uint32_t len)
{
	void *p = coll_capture__reserve(c, len);

	if (!p)
		return -ENOSPC;
	memcpy(p, rec, len);
	coll_capture__commit(c, len);
	return 0;
}

void coll_capture__tick(struct coll_capture *c, uint64_t now_ns)
{
	reap(c, false);
	if (c->nrecords && now_ns - c->first_ns >= COLL_CAPTURE_AGE_NS)
		flush(c);
}

int coll_capture__finish(struct coll_capture *c)
{
	flush(c);
	reap(c, true);
	if (!c->failed && fdatasync(c->fd))
		fail(c, -errno);
	return c->st.err;
}

int coll_capture__finish_start(struct coll_capture *c)
{
	struct io_uring_sqe *sqe;

	if (c->syncing)
		return 0;
	flush(c);
	c->syncing = true;
	if (!c->uring || c->failed || !(sqe = io_uring_get_sqe(&c->ring))) {
		/* pwrite: every block is already written; the sync is the only wait */
		c->synced = true;
		if (!c->failed && fdatasync(c->fd))
			fail(c, -errno);
		return 0;
	}
	/* drained: it starts once every write before it completed */
	io_uring_prep_fsync(sqe, c->fd, IORING_FSYNC_DATASYNC);
	sqe->flags |= IOSQE_IO_DRAIN;
	sqe->user_data = SYNC_TAG;
	c->inflight++;
	if (io_uring_submit(&c->ring) < 0) {
		c->inflight--;
		c->synced = true;
		fail(c, -EIO);
	}
	return 0;
}

int coll_capture__finish_poll(struct coll_capture *c, bool wait, int *err)
{
	if (!c->syncing)
		return -EINVAL;
	reap(c, wait);
	*err = c->st.err;
	return c->synced && !c->inflight;
}

void coll_capture__stats(const struct coll_capture *c, struct coll_capture_stats *st)
{
	*st = c->st;
	/* the block being filled is neither written nor dropped yet */
}

void coll_capture__free(struct coll_capture *c)
{
	if (!c)
		return;
	if (c->uring) {
		reap(c, true); /* the kernel may still read the slots */
		io_uring_queue_exit(&c->ring);
	}
	ZSTD_freeCCtx(c->cctx);
	for (int i = 0; i < COLL_CAPTURE_SLOTS; i++)
		free(c->slots[i].buf);
	free(c->raw);
	free(c);
}
