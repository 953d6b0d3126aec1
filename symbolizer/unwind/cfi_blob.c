// SPDX-License-Identifier: MIT
/*
 * The cache's blob form of a stack-delta table (symb_deltas__encode,
 * __decode, __open_blob), lazy tables, and the lookups and freeing of
 * either form of table (cfi.h).
 *
 * The blob, version 2:
 *   "LPSD" u8:version u8:shift u32le:n u64le:pc[nb] u32le:off[nb] block*nb
 *   u64le:hash
 *   Rows are cut into nb blocks of 1 << shift rows (the last one may be
 *   shorter). pc[i] is the pc of block i's first row, off[i] where its bytes
 *   start, counted from the first block (off[0] = 0); block i ends where
 *   block i + 1 starts, the last one at the hash.
 *   block: the first row's fields (its pc is pc[i]), then for each further
 *          row: uleb pc delta, fields
 *   fields: u8 tag, [sleb cfa_off], [sleb bp_off]
 *   tag: bits 0-2 kind, bit 3 bp_off != 0 (sleb follows), bits 4-7 cfa code:
 *        0-14 means cfa_off = code * 8, 15 means an sleb follows.
 * encode writes shift = BLOB_SHIFT; the decoders take any shift up to
 * BLOB_SHIFT_MAX (the fuzzer reaches block edges with small inputs).
 * Encodings are canonical for a given shift (decode rejects every other
 * spelling), and the hash (blob_hash) catches any change confined to one
 * 8-byte word.
 *
 * A lazy table (symb_deltas__open_blob) checks the hash and the index
 * (offsets increasing, each block's byte length possible for its row
 * count, pcs increasing by at least the row count) at open, so a lookup
 * only binary-searches pc[], and decodes a block with the same checks as
 * decode when it is first needed.
 *
 * The blob's bytes are untrusted and read with their own canonical
 * decoders, not the CFI reader (cfi_int.h's rd_*), which accepts any
 * spelling.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi_int.h"
#include "lowprof/log.h"

/* decode writes cfa_off, bp_off, kind and pad as one little-endian word */
_Static_assert(offsetof(struct symb_delta, cfa_off) == 8 &&
		       offsetof(struct symb_delta, bp_off) == 12 &&
		       offsetof(struct symb_delta, kind) == 14 &&
		       offsetof(struct symb_delta, pad) == 15 && sizeof(struct symb_delta) == 16 &&
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "struct symb_delta layout");
static const uint8_t blob_magic[4] = {'L', 'P', 'S', 'D'};
#define BLOB_HDR       (sizeof(blob_magic) + 1 + 1 + 4)
#define BLOB_IDX       (8 + 4) /* per block: first pc, offset */
#define BLOB_ROW_MAX   (10 + 1 + 5 + 3)
#define BLOB_FIRST_MAX (1 + 5 + 3) /* a block's first row: no pc */
#define BLOB_HASH      8
#define BLOB_CFA_BIG   15
/*
 * 256 rows a block: a decoded block is one 4 KiB page, its decode about a
 * microsecond, and the index 12 bytes per 256 rows (some 45 KiB for a
 * million rows).
 */
#define BLOB_SHIFT     8
#define BLOB_SHIFT_MAX 12

/* A checked blob: header, hash and index (blob_check). */
struct blob_view {
	const uint8_t *pcs;  /* u64le[nb] */
	const uint8_t *offs; /* u32le[nb] */
	const uint8_t *data; /* the first block */
	size_t data_len;     /* up to the hash */
	uint32_t n, nb;
	unsigned shift;
};

/*
 * A lazy table. blocks[i] is NULL until block i is first decoded, then its
 * rows, or &bad_block if it failed validation.
 *
 * Memory: one malloc per decoded block (1 << shift rows, one page at the
 * default shift), so a table costs the blob, 8 bytes a block, and only the
 * blocks looked up. One calloc of all n rows would cost nothing for pages
 * never touched only while the allocator hands out fresh mmap'd memory;
 * glibc raises its mmap threshold after a large free, and a heap calloc
 * clears (touches) all of it.
 */
struct symb_deltas_lazy {
	uint8_t *blob; /* owned; the view points into it */
	struct blob_view v;
	struct symb_delta **blocks;
	uint32_t bad_blocks;
};

static struct symb_delta bad_block;

static inline uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v)); /* little-endian host (asserted above) */
	return v;
}

static inline uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t block_rows(const struct blob_view *v, uint32_t i)
{
	return i + 1 < v->nb ? 1u << v->shift : v->n - (i << v->shift);
}

static inline uint64_t block_pc(const struct blob_view *v, uint32_t i)
{
	return get_le64(v->pcs + 8 * (size_t)i);
}

/* Where block i starts in data; i = nb gives the end of the last one. */
static inline size_t block_off(const struct blob_view *v, uint32_t i)
{
	return i < v->nb ? get_le32(v->offs + 4 * (size_t)i) : v->data_len;
}

/*
 * Word-wise multiply-xorshift in two lanes (even and odd words, for speed).
 * Each step is a bijection of its lane's state and the lanes are combined
 * by xor, so two inputs that differ in one 8-byte word never share a hash.
 */
static uint64_t blob_hash(const uint8_t *p, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t a = 0x6c70736431ull ^ len, b = ~a, w, x;
	size_t i;

	for (i = 0; i + 16 <= len; i += 16) {
		memcpy(&w, p + i, 8);
		memcpy(&x, p + i + 8, 8);
		a = (a ^ w) * k;
		b = (b ^ x) * k;
		a ^= a >> 29;
		b ^= b >> 29;
	}
	for (; i < len; i++) {
		a = (a ^ p[i]) * k;
		a ^= a >> 29;
	}
	a ^= b * k;
	a *= k;
	return a ^ (a >> 32);
}

static uint8_t *put_uleb(uint8_t *p, uint64_t v)
{
	do {
		*p = v & 0x7f;
		v >>= 7;
		if (v)
			*p |= 0x80;
		p++;
	} while (v);
	return p;
}

static uint8_t *put_sleb(uint8_t *p, int64_t v)
{
	bool more;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7; /* arithmetic shift: clang and gcc define it */
		more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
		*p++ = b | (more ? 0x80 : 0);
	} while (more);
	return p;
}

static bool row_valid(const struct symb_delta *r, const struct symb_delta *prev)
{
	if (r->kind > SYMB_CFA_INVALID || r->pad)
		return false;
	if (!prev)
		return true;
	return r->pc > prev->pc &&
	       (r->kind != prev->kind || r->cfa_off != prev->cfa_off || r->bp_off != prev->bp_off);
}

/* A row's fields (tag, [cfa_off], [bp_off]). */
static uint8_t *put_fields(uint8_t *p, const struct symb_delta *r)
{
	uint32_t code;

	if (r->cfa_off >= 0 && r->cfa_off % 8 == 0 && r->cfa_off / 8 < BLOB_CFA_BIG)
		code = (uint32_t)r->cfa_off / 8;
	else
		code = BLOB_CFA_BIG;
	*p++ = (uint8_t)(r->kind | (r->bp_off ? 0x08 : 0) | code << 4);
	if (code == BLOB_CFA_BIG)
		p = put_sleb(p, r->cfa_off);
	if (r->bp_off)
		p = put_sleb(p, r->bp_off);
	return p;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Whether a fully decoded table keeps the rules of cfi.h and the row cap. */
static bool table_valid(const struct symb_deltas *d)
{
	size_t i;

	for (i = 0; i < d->n; i++) {
		if (!row_valid(&d->rows[i], i ? &d->rows[i - 1] : NULL))
			return false;
	}
	return !d->n || (d->n <= CFI_MAX_ROWS && d->rows[d->n - 1].kind == SYMB_CFA_NONE);
}

/*
 * Writes the header, the index of the nb blocks and the blocks of d's rows
 * to buf; returns the end of the blocks (where the hash goes).
 */
static uint8_t *put_table(uint8_t *buf, const struct symb_deltas *d, size_t nb)
{
	const size_t block = (size_t)1 << BLOB_SHIFT;
	uint8_t *p, *pcs, *offs, *data;
	size_t i;

	memcpy(buf, blob_magic, sizeof(blob_magic));
	p = buf + sizeof(blob_magic);
	*p++ = SYMB_DELTAS_BLOB_VERSION;
	*p++ = BLOB_SHIFT;
	put_le(p, d->n, 4);
	pcs = p + 4;
	offs = pcs + 8 * nb;
	data = p = offs + 4 * nb;
	for (i = 0; i < d->n; i++) {
		const struct symb_delta *r = &d->rows[i];

		if (i % block == 0) {
			put_le(pcs + 8 * (i / block), r->pc, 8);
			put_le(offs + 4 * (i / block), (uint64_t)(p - data), 4);
		} else {
			p = put_uleb(p, r->pc - r[-1].pc);
		}
		p = put_fields(p, r);
	}
	return p;
}

int symb_deltas__encode(const struct symb_deltas *d, uint8_t **blob, size_t *len)
{
	const size_t block = (size_t)1 << BLOB_SHIFT;
	uint8_t *buf, *p, *shrunk;
	size_t nb;

	*blob = NULL;
	*len = 0;
	if (d->lazy || !table_valid(d))
		return -EINVAL;
	nb = ((size_t)d->n + block - 1) / block;
	/* at most CFI_MAX_ROWS * BLOB_ROW_MAX bytes of blocks: offsets fit 32 bits */
	buf = malloc(BLOB_HDR + nb * BLOB_IDX + (size_t)d->n * BLOB_ROW_MAX + BLOB_HASH);
	if (!buf)
		return -ENOMEM;
	p = put_table(buf, d, nb);
	put_le(p, blob_hash(buf, (size_t)(p - buf)), BLOB_HASH);
	p += BLOB_HASH;
	*len = (size_t)(p - buf);
	shrunk = realloc(buf, *len);
	*blob = shrunk ? shrunk : buf;
	return 0;
}

/*
 * Canonical SLEB128 of at most 5 bytes at *pp, within [min, max]. The
 * shortest spelling has no redundant last byte: 0x00 after a byte whose sign
 * bit (0x40) is clear, or 0x7f after one where it is set.
 */
static inline bool get_sleb32(const uint8_t **pp, const uint8_t *end, int64_t min, int64_t max,
			      int64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift > 28)
			return false;
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b & 0x40)
		v |= ~(uint64_t)0 << shift;
	if (shift > 7 && (b == 0x00 || b == 0x7f) && ((p[-2] & 0x40) != 0) == (b == 0x7f))
		return false;
	if ((int64_t)v < min || (int64_t)v > max)
		return false;
	*out = (int64_t)v;
	*pp = p;
	return true;
}

/* Canonical ULEB128 at *pp that fits 64 bits. */
static inline bool get_uleb64(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift > 63)
			return false;
		b = *p++;
		if (shift == 63 && (b & 0x7e))
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b == 0 && shift > 7)
		return false; /* a redundant trailing zero group */
	*out = v;
	*pp = p;
	return true;
}

/* One row's fields after its pc delta; false if malformed or not canonical. */
static inline bool get_fields(const uint8_t **pp, const uint8_t *end, struct symb_delta *row)
{
	uint8_t tag;
	int64_t v;

	if (*pp >= end)
		return false;
	tag = *(*pp)++;
	if ((tag & 0x07) > SYMB_CFA_INVALID)
		return false;
	row->kind = tag & 0x07;
	row->pad = 0;
	row->cfa_off = (int32_t)(tag >> 4) * 8;
	row->bp_off = 0;
	if ((tag >> 4) == BLOB_CFA_BIG) {
		if (!get_sleb32(pp, end, INT32_MIN, INT32_MAX, &v))
			return false;
		/* canonical: a short code would have done */
		if (v >= 0 && v % 8 == 0 && v / 8 < BLOB_CFA_BIG)
			return false;
		row->cfa_off = (int32_t)v;
	}
	if (tag & 0x08) {
		if (!get_sleb32(pp, end, INT16_MIN, INT16_MAX, &v) || !v)
			return false;
		row->bp_off = (int16_t)v;
	}
	return true;
}

/* The 8-byte word at cfa_off of a row (see the layout assertion above). */
static inline uint64_t row_word(const struct symb_delta *r)
{
	return (uint64_t)(uint32_t)r->cfa_off | (uint64_t)(uint16_t)r->bp_off << 32 |
	       (uint64_t)r->kind << 48;
}

/*
 * A row that the inline path of decode does not take: its pc delta and
 * fields word. Returns the position after it, or NULL if malformed.
 */
static const uint8_t *get_row_slow(const uint8_t *p, const uint8_t *end, uint64_t *delta,
				   uint64_t *word)
{
	struct symb_delta row;

	if (!get_uleb64(&p, end, delta) || !get_fields(&p, end, &row))
		return NULL;
	*word = row_word(&row);
	return p;
}

/*
 * A row after a block's first: its pc delta and fields word. Returns the
 * position after it, or NULL if malformed. Inline: a one-byte delta, a
 * short cfa code, and a one-byte bp_off or none (nearly every row); the
 * rest take the call.
 */
static inline const uint8_t *get_row(const uint8_t *p, const uint8_t *end, uint64_t *dv,
				     uint64_t *w)
{
	if (!(end - p >= 3 && p[0] < 0x80 && (p[1] >> 4) != BLOB_CFA_BIG &&
	      (p[1] & 0x07) <= SYMB_CFA_INVALID && (!(p[1] & 0x08) || p[2] < 0x80)))
		return get_row_slow(p, end, dv, w);
	*dv = p[0];
	*w = (uint64_t)(p[1] >> 4) * 8 | (uint64_t)(p[1] & 0x07) << 48;
	if (p[1] & 0x08) {
		/* bp_off: the 7 bits sign-extended, at bit 32 */
		int16_t bp = (int16_t)((int8_t)(uint8_t)(p[2] << 1) >> 1);

		if (!bp)
			return NULL;
		*w |= (uint64_t)(uint16_t)bp << 32;
		p++;
	}
	return p + 2;
}

/*
 * The index of a view with blocks: each block's byte length must be possible
 * for its row count (two bytes a row at least, the first row one;
 * BLOB_ROW_MAX at most), and the first pcs increase by at least the
 * previous block's row count. Returns 0 or -EBADMSG.
 */
static int index_check(const struct blob_view *v)
{
	size_t off, next, k;
	uint64_t pc, npc;
	uint32_t i;

	if (block_off(v, 0))
		return -EBADMSG;
	for (i = 0; i < v->nb; i++) {
		k = block_rows(v, i);
		off = block_off(v, i);
		next = block_off(v, i + 1);
		if (next < off || next - off < 2 * k - 1 ||
		    next - off > BLOB_FIRST_MAX + (k - 1) * BLOB_ROW_MAX)
			return -EBADMSG;
		pc = block_pc(v, i);
		if (i + 1 < v->nb) {
			npc = block_pc(v, i + 1);
			if (npc <= pc || npc - pc < k)
				return -EBADMSG;
		} else if (UINT64_MAX - pc < k - 1) {
			return -EBADMSG;
		}
	}
	return 0;
}

/*
 * Checks what open must: magic, version, hash, header, and the whole index
 * (index_check: so that a lookup can trust pc[] and off[]), and fills v.
 * Returns 0 or -EBADMSG.
 */
static int blob_check(const uint8_t *blob, size_t len, struct blob_view *v)
{
	size_t idx_room;
	uint64_t h;

	if (!blob || len < BLOB_HDR + BLOB_HASH || memcmp(blob, blob_magic, sizeof(blob_magic)) ||
	    blob[sizeof(blob_magic)] != SYMB_DELTAS_BLOB_VERSION)
		return -EBADMSG;
	h = get_le64(blob + len - BLOB_HASH);
	if (h != blob_hash(blob, len - BLOB_HASH))
		return -EBADMSG;
	v->shift = blob[sizeof(blob_magic) + 1];
	v->n = get_le32(blob + sizeof(blob_magic) + 2);
	if (v->shift > BLOB_SHIFT_MAX || v->n > CFI_MAX_ROWS)
		return -EBADMSG;
	v->nb = (uint32_t)(((uint64_t)v->n + (1u << v->shift) - 1) >> v->shift);
	idx_room = len - BLOB_HDR - BLOB_HASH;
	if (v->nb > idx_room / BLOB_IDX)
		return -EBADMSG;
	v->pcs = blob + BLOB_HDR;
	v->offs = v->pcs + 8 * (size_t)v->nb;
	v->data = v->offs + 4 * (size_t)v->nb;
	v->data_len = idx_room - (size_t)v->nb * BLOB_IDX;
	if (!v->nb)
		return v->data_len ? -EBADMSG : 0;
	return index_check(v);
}

/*
 * Decodes block i of a checked blob into rows (block_rows(v, i) of them)
 * with all of decode's checks except the one against the previous block's
 * last row: pcs strictly increase and stay below the next block's first pc,
 * neighbours differ, kinds are known, the encoding is canonical and ends
 * exactly at the block's end, and the table's last row is SYMB_CFA_NONE.
 */
static bool decode_block(const struct blob_view *v, uint32_t i, struct symb_delta *rows)
{
	const uint8_t *p = v->data + block_off(v, i), *end = v->data + block_off(v, i + 1);
	uint64_t pc = block_pc(v, i), dv, w, pw;
	uint32_t j, k = block_rows(v, i);
	struct symb_delta row;

	if (!get_fields(&p, end, &row))
		return false;
	row.pc = pc;
	rows[0] = row;
	pw = row_word(&row);
	for (j = 1; j < k; j++) {
		p = get_row(p, end, &dv, &w);
		/* pcs strictly increase, neighbours differ */
		if (!p || !dv || pc + dv < pc || w == pw)
			return false;
		pc += dv;
		pw = w;
		rows[j].pc = pc;
		memcpy(&rows[j].cfa_off, &w, sizeof(w));
	}
	if (p != end)
		return false;
	if (i + 1 < v->nb)
		return pc < block_pc(v, i + 1);
	return rows[k - 1].kind == SYMB_CFA_NONE;
}

int symb_deltas__decode(const uint8_t *blob, size_t len, struct symb_deltas *out)
{
	struct symb_delta *rows, *r;
	struct blob_view v;
	uint32_t i;
	int err;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	err = blob_check(blob, len, &v);
	if (err || !v.n)
		return err;
	rows = malloc((size_t)v.n * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (i = 0; i < v.nb; i++) {
		r = rows + ((size_t)i << v.shift);
		if (!decode_block(&v, i, r) || (i && row_word(r) == row_word(r - 1))) {
			free(rows);
			return -EBADMSG;
		}
	}
	out->rows = rows;
	out->n = v.n;
	return 0;
}

int symb_deltas__open_blob(uint8_t *blob, size_t len, struct symb_deltas *out)
{
	struct symb_deltas_lazy *z = NULL;
	struct blob_view v;
	int err;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	err = blob_check(blob, len, &v);
	if (err || !v.n)
		goto err_out; /* an empty table needs nothing kept */
	err = -ENOMEM;
	z = calloc(1, sizeof(*z));
	if (!z)
		goto err_out;
	z->blocks = calloc(v.nb, sizeof(*z->blocks));
	if (!z->blocks)
		goto err_out;
	z->blob = blob;
	z->v = v;
	out->lazy = z;
	out->n = v.n;
	return 0;
err_out:
	free(z);
	free(blob);
	return err;
}

/* Block i's rows, decoding them on first use; &bad_block or NULL (no memory). */
static struct symb_delta *lazy_block(struct symb_deltas_lazy *z, uint32_t i)
{
	struct symb_delta *rows = z->blocks[i];

	if (rows)
		return rows;
	rows = malloc((size_t)block_rows(&z->v, i) * sizeof(*rows));
	if (!rows)
		return NULL;
	if (!decode_block(&z->v, i, rows)) {
		free(rows);
		rows = &bad_block;
		z->bad_blocks++;
		lp_debug("cfi: cached table block %u of %u is malformed; no CFI there", i, z->v.nb);
	}
	z->blocks[i] = rows;
	return rows;
}

/* The row that holds at vaddr in rows[0..n), vaddr >= rows[0].pc. */
static const struct symb_delta *find_row(const struct symb_delta *rows, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n, mid;

	/* rows[lo].pc <= vaddr < rows[hi].pc (rows[n] read as +infinity) */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

static const struct symb_delta *lazy_find(struct symb_deltas_lazy *z, uint64_t vaddr)
{
	const struct blob_view *v = &z->v;
	uint32_t lo = 0, hi = v->nb, mid;
	struct symb_delta *rows;

	if (vaddr < block_pc(v, 0))
		return NULL;
	/* pc[lo] <= vaddr < pc[hi] (pc[nb] read as +infinity) */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (block_pc(v, mid) <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	rows = lazy_block(z, lo);
	if (!rows || rows == &bad_block)
		return NULL;
	return find_row(rows, block_rows(v, lo), vaddr);
}

const struct symb_delta *symb_deltas__find(const struct symb_deltas *d, uint64_t vaddr)
{
	if (!d)
		return NULL;
	if (d->lazy)
		return lazy_find(d->lazy, vaddr);
	if (!d->n || vaddr < d->rows[0].pc)
		return NULL;
	return find_row(d->rows, d->n, vaddr);
}

uint32_t symb_deltas__bad_blocks(const struct symb_deltas *d)
{
	return d && d->lazy ? d->lazy->bad_blocks : 0;
}

void symb_deltas__free(struct symb_deltas *d)
{
	struct symb_deltas_lazy *z;
	uint32_t i;

	if (!d)
		return;
	z = d->lazy;
	if (z) {
		for (i = 0; i < z->v.nb; i++) {
			if (z->blocks[i] != &bad_block)
				free(z->blocks[i]);
		}
		free(z->blocks);
		free(z->blob);
		free(z);
	}
	free(d->rows);
	d->rows = NULL;
	d->n = 0;
	d->lazy = NULL;
}
