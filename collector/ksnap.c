// SPDX-License-Identifier: MIT
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "ksnap.h"
#include "lowprof/capture.h"

struct coll_ksnap {
	ZSTD_CCtx *cctx; /* NULL: blocks stored as they are */
	uint8_t *raw;	 /* the block being gathered (NULL once finished) */
	uint32_t raw_len, nrecords;
	uint8_t *blocks; /* finished blocks, back to back */
	size_t len, cap;
	uint64_t record_bytes;
	int err;
};

struct coll_ksnap *coll_ksnap__new(bool compress)
{
	struct coll_ksnap *k = calloc(1, sizeof(*k));

	if (!k)
		return NULL;
	k->raw = malloc(COLL_CAPTURE_RAW_CAP);
	if (!k->raw)
		goto err_out;
	if (compress) {
		k->cctx = ZSTD_createCCtx();
		if (!k->cctx)
			goto err_out;
	}
	return k;
err_out:
	coll_ksnap__free(k);
	errno = ENOMEM;
	return NULL;
}

/* Encodes the gathered records as the next block. */
static int seal(struct coll_ksnap *k)
{
	size_t need = LPC_BLOCK_HDR_SIZE + ZSTD_compressBound(k->raw_len);
	bool zstd;

	if (!k->nrecords)
		return 0;
	if (k->len + need > k->cap) {
		size_t ncap = k->cap ? k->cap * 2 : need * 2;
		uint8_t *nb;

		while (ncap < k->len + need)
			ncap *= 2;
		nb = realloc(k->blocks, ncap);
		if (!nb)
			return -ENOMEM;
		k->blocks = nb;
		k->cap = ncap;
	}
	k->len += coll_capture_encode_block(k->cctx, COLL_KSNAP_LEVEL, 0, k->raw, k->raw_len,
					    k->nrecords, k->blocks + k->len, need, &zstd);
	k->record_bytes += k->raw_len;
	k->raw_len = 0;
	k->nrecords = 0;
	return 0;
}

int coll_ksnap__add(struct coll_ksnap *k, const void *rec, uint32_t len)
{
	uint32_t v = htole32(len);

	if (!k->raw) /* finished */
		return -EINVAL;
	if (!k->err && len > COLL_CAPTURE_RAW_CAP - LPC_REC_LEN_SIZE)
		k->err = -EINVAL;
	if (k->err)
		return k->err;
	if (k->raw_len + LPC_REC_LEN_SIZE + (uint64_t)len > COLL_CAPTURE_RAW_CAP &&
	    (k->err = seal(k)))
		return k->err;
	memcpy(k->raw + k->raw_len, &v, sizeof(v));
	memcpy(k->raw + k->raw_len + LPC_REC_LEN_SIZE, rec, len);
	k->raw_len += LPC_REC_LEN_SIZE + len;
	k->nrecords++;
	return 0;
}

int coll_ksnap__finish(struct coll_ksnap *k)
{
	if (!k->raw)
		return k->err;
	if (!k->err)
		k->err = seal(k);
	free(k->raw);
	k->raw = NULL;
	ZSTD_freeCCtx(k->cctx);
	k->cctx = NULL;
	return k->err;
}

int coll_ksnap__write(const struct coll_ksnap *k, struct coll_capture *cap)
{
	size_t off = 0;
	int err = 0;

	if (k->raw || k->err)
		return -EINVAL;
	while (off < k->len) {
		struct lpc_block b;
		uint32_t len;
		int e;

		if (lpc_block_decode(k->blocks + off, &b))
			return -EINVAL; /* cannot happen: we made them */
		len = LPC_BLOCK_HDR_SIZE + b.stored_len;
		e = coll_capture__put_block(cap, k->blocks + off, len);
		err = err ?: e;
		off += len;
	}
	return err;
}

void coll_ksnap__size(const struct coll_ksnap *k, uint64_t *bytes, uint64_t *record_bytes)
{
	*bytes = k->len;
	*record_bytes = k->record_bytes;
}

void coll_ksnap__free(struct coll_ksnap *k)
{
	if (!k)
		return;
	ZSTD_freeCCtx(k->cctx);
	free(k->raw);
	free(k->blocks);
	free(k);
}
