// SPDX-License-Identifier: MIT
/*
 * The capture file reader on arbitrary bytes: open the input as a capture
 * (lpc_reader__open_mem), read every record to the end, and decode each one
 * as the symbolizer would (lps_decode, then every mapping and kernel symbol
 * of maps and ksyms records).
 *
 * Invariants: an open that fails says why (-EBADF, -EBADMSG, -EPROTO) and
 * leaves no reader; reading ends with -ENODATA (never another error: the
 * bytes are in memory), after at most as many records as the blocks the
 * input can hold can frame; each record fits in one block; the counters
 * agree with what was returned and with the input's size; the warn
 * callback gets at most max_msgs short messages. The input is copied into
 * a buffer of exactly its size and each record into one of exactly its
 * length, so ASan sees any read past either.
 *
 * Checksums stop almost every mutation at the door, so each input is read
 * a second time with its checksums made to hold (the file header's, and
 * each block's payload and header checksums along the chain of blocks from
 * the header's end): mutations then reach the lengths, the compression,
 * the record framing and the records themselves.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/capture.h"
#include "lowprof/crc32c.h"
#include "lowprof/schema.h"
#include "walk_record.h"

#define MAX_MSGS 4

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_capture: %s:%d: %s\n", __FILE__, __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

static void on_warn(void *ctx, const char *msg)
{
	unsigned *n = ctx;

	CHECK(msg && msg[0] && strlen(msg) < 256);
	++*n;
}

static void decode(const void *rec, uint32_t len)
{
	uint8_t *copy = malloc(len ? len : 1);

	CHECK(copy);
	memcpy(copy, rec, len); /* reads all of the record where the reader put it */
	walk_record(copy, len);
	free(copy);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * Makes the checksums of buf hold: the file header's, then block by block
 * from the header's end, as far as the blocks' stored lengths stay inside
 * buf. Returns whether it changed anything.
 */
static int fix_checksums(uint8_t *buf, size_t size)
{
	uint8_t before[4];
	size_t off;
	int changed = 0;

	if (size < LPC_HDR_SIZE || memcmp(buf, LPC_MAGIC, LPC_MAGIC_LEN))
		return 0;
	memcpy(before, buf + 60, 4);
	put32(buf + 60, lp_crc32c(buf, 60));
	changed |= memcmp(before, buf + 60, 4) != 0;
	off = get32(buf + 12);
	if (off < LPC_HDR_SIZE || off > size)
		return changed;
	while (off + LPC_BLOCK_HDR_SIZE <= size) {
		uint8_t *h = buf + off;
		uint32_t stored = get32(h + 20);

		if (get32(h) != LPC_BLOCK_MAGIC)
			break;
		memcpy(before, h + 28, 4);
		if (stored <= size - off - LPC_BLOCK_HDR_SIZE) {
			uint8_t pbefore[4];

			memcpy(pbefore, h + 24, 4);
			put32(h + 24, lp_crc32c(h + LPC_BLOCK_HDR_SIZE, stored));
			changed |= memcmp(pbefore, h + 24, 4) != 0;
		}
		put32(h + 28, lp_crc32c(h, 28));
		changed |= memcmp(before, h + 28, 4) != 0;
		if (stored > size - off - LPC_BLOCK_HDR_SIZE)
			break;
		off += LPC_BLOCK_HDR_SIZE + stored;
	}
	return changed;
}

/* Reads in[0..size) as a capture to its end, checking the invariants. */
static void read_capture(const uint8_t *in, size_t size)
{
	struct lpc_reader *rd = (struct lpc_reader *)&rd;
	/* each block takes a header in the file and each record 4 bytes of it */
	uint64_t max_blocks = size / LPC_BLOCK_HDR_SIZE;
	uint64_t max_records = max_blocks * (LPC_MAX_BLOCK / LPC_REC_LEN_SIZE);
	uint64_t nrec = 0, nbytes = 0;
	struct lpc_header h;
	struct lpc_stats st;
	unsigned nwarn = 0;
	int err;

	/* a block header that decodes encodes back to the same bytes */
	if (size >= LPC_HDR_SIZE + LPC_BLOCK_HDR_SIZE) {
		uint8_t again[LPC_BLOCK_HDR_SIZE];
		struct lpc_block b;

		if (lpc_block_decode(in + LPC_HDR_SIZE, &b) == 0) {
			lpc_block_encode(again, &b);
			CHECK(!memcmp(again, in + LPC_HDR_SIZE, sizeof(again)));
			CHECK(b.raw_len <= LPC_MAX_BLOCK && b.stored_len <= LPC_MAX_BLOCK);
		}
	}

	err = lpc_reader__open_mem(in, size, &rd, &h);
	if (err) {
		CHECK(err == -EBADF || err == -EBADMSG || err == -EPROTO);
		CHECK(!rd);
		CHECK(err != -EPROTO || h.major != LPC_VERSION_MAJOR);
		return;
	}
	CHECK(rd);
	CHECK(h.major == LPC_VERSION_MAJOR);
	CHECK(h.hdr_size >= LPC_HDR_SIZE && h.hdr_size <= LPC_HDR_MAX && h.hdr_size <= size);
	lpc_reader__set_warn(rd, on_warn, &nwarn, MAX_MSGS);
	for (;;) {
		const void *rec;
		uint32_t len;

		err = lpc_reader__next(rd, &rec, &len);
		if (err == -ENODATA)
			break;
		CHECK(err == 0);
		CHECK(len <= LPC_MAX_BLOCK - LPC_REC_LEN_SIZE);
		CHECK(++nrec <= max_records);
		CHECK(lpc_reader__offset(rd) <= size);
		nbytes += LPC_REC_LEN_SIZE + len;
		decode(rec, len);
	}
	CHECK(lpc_reader__next(rd, &(const void *){NULL}, &(uint32_t){0}) == -ENODATA);
	lpc_reader__stats(rd, &st);
	CHECK(st.file_bytes == size);
	CHECK(st.records == nrec);
	CHECK(nbytes <= st.raw_bytes);
	CHECK(st.blocks + st.bad_blocks <= max_blocks);
	CHECK(st.zstd_blocks <= st.blocks);
	CHECK(st.raw_bytes <= st.blocks * LPC_MAX_BLOCK);
	CHECK(st.stored_bytes + st.blocks * LPC_BLOCK_HDR_SIZE <= size - h.hdr_size);
	CHECK(st.skipped_bytes <= size - h.hdr_size);
	CHECK(st.truncated_bytes <= size - h.hdr_size);
	CHECK(st.truncated || !st.truncated_bytes);
	CHECK(st.lost_records <= (st.bad_blocks + 1) * (LPC_MAX_BLOCK / LPC_REC_LEN_SIZE));
	CHECK(nwarn <= MAX_MSGS);
	CHECK(nwarn == 0 || st.bad_blocks || st.missing_blocks || st.skipped_bytes || st.truncated);
	lpc_reader__free(rd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *in = malloc(size ? size : 1);

	CHECK(in);
	memcpy(in, data, size);
	read_capture(in, size);
	if (fix_checksums(in, size))
		read_capture(in, size);
	free(in);
	return 0;
}
