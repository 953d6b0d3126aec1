// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symbolizer/unwind/cfi_*.c. Input (all little-endian):
 *   u8 flags   bit 0: .eh_frame, bit 1: .eh_frame_hdr, bit 2: .debug_frame,
 *              bit 7: blob mode (below)
 *   u64 eh_frame vaddr, u32 eh_frame size, u32 hdr size, u64 hdr vaddr
 *   the .eh_frame bytes, the hdr bytes, the rest: .debug_frame
 * Each section is copied into a buffer of exactly its size, so ASan sees a
 * read past it. A built table must keep the table's rules and survive
 * encode -> decode unchanged. In blob mode the bytes after the flags are a
 * blob without its trailing hash, which is appended here (a copy of
 * cfi_blob.c's blob_hash) so mutations reach the decoder's field checks; a
 * blob that decodes must encode back to the same bytes (the format is
 * canonical for encode's block size). Every input is also given to the
 * decoder as is.
 *
 * The lazy form (symb_deltas__open_blob) gets the same blobs: lookups at
 * pcs taken from the input and near the blob's block index must not crash
 * or read outside the blob, and where the eager decoder accepts the blob
 * (or for the encoding of a built table) they must answer as the full
 * table does at every row's pc and its neighbours.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"

#define HDR_SIZE 25

static uint64_t get_le(const uint8_t *p, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

/* Must match blob_hash in symbolizer/unwind/cfi_blob.c (else blob mode only finds hash mismatches). */
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

static void check_table(const struct symb_deltas *d)
{
	uint32_t i;

	if (!d->n) {
		if (d->rows)
			__builtin_trap();
		return;
	}
	for (i = 0; i < d->n; i++) {
		const struct symb_delta *r = &d->rows[i];

		if (r->kind > SYMB_CFA_INVALID || r->pad)
			__builtin_trap();
		if (i &&
		    (r->pc <= r[-1].pc || (r->kind == r[-1].kind && r->cfa_off == r[-1].cfa_off &&
					   r->bp_off == r[-1].bp_off)))
			__builtin_trap();
		if (symb_deltas__find(d, r->pc) != r)
			__builtin_trap();
	}
	if (d->rows[d->n - 1].kind != SYMB_CFA_NONE)
		__builtin_trap();
}

/* want (a fully decoded table) and got answer alike at pc. */
static void same_answer(const struct symb_deltas *want, const struct symb_deltas *got, uint64_t pc)
{
	const struct symb_delta *a = symb_deltas__find(want, pc), *b = symb_deltas__find(got, pc);

	if (!a && !b)
		return;
	if (!a || !b || a->pc != b->pc || a->kind != b->kind || a->cfa_off != b->cfa_off ||
	    a->bp_off != b->bp_off || b->pad)
		__builtin_trap();
}

/* A lazy table answers as the full one d at every row's pc and around it. */
static void lazy_like(const struct symb_deltas *d, const struct symb_deltas *z)
{
	uint32_t i;

	if (z->n != d->n || symb_deltas__bad_blocks(z))
		__builtin_trap();
	for (i = 0; i < d->n; i++) {
		same_answer(d, z, d->rows[i].pc);
		same_answer(d, z, d->rows[i].pc - 1);
		same_answer(d, z, d->rows[i].pc + 1);
	}
	same_answer(d, z, 0);
	same_answer(d, z, UINT64_MAX);
	if (symb_deltas__bad_blocks(z))
		__builtin_trap();
}

/*
 * Opens a copy of blob lazily; probes it at pcs from the input (each 8-byte
 * window) and from the blob's own index; if full (the eager decode of the
 * same blob) is given, the answers must match it. Returns whether it opened.
 */
static bool lazy_probe(const uint8_t *blob, size_t len, const struct symb_deltas *full,
		       const uint8_t *in, size_t in_len)
{
	struct symb_deltas z;
	const struct symb_delta *r;
	uint8_t *copy = malloc(len ? len : 1);
	size_t i;
	int err;

	if (!copy)
		return false;
	memcpy(copy, blob, len);
	err = symb_deltas__open_blob(copy, len, &z); /* takes copy */
	if (err) {
		if (full && err != -ENOMEM)
			__builtin_trap(); /* decode accepted it */
		return false;
	}
	if (z.rows || (!z.lazy && z.n))
		__builtin_trap();
	if (full)
		lazy_like(full, &z);
	for (i = 0; i + 8 <= in_len && i < 8 * 64; i += 8) {
		uint64_t pc = get_le(in + i, 8);

		r = symb_deltas__find(&z, pc);
		if (r && (r->pc > pc || r->kind > SYMB_CFA_INVALID || r->pad))
			__builtin_trap();
		r = symb_deltas__find(&z, pc >> 32);
		if (r && r->pc > pc >> 32)
			__builtin_trap();
	}
	/* the index's pcs (at offset 10: see cfi_blob.c) and just below them */
	for (i = 10; i + 8 <= len && i < 10 + 8 * 64; i += 8) {
		uint64_t pc = get_le(blob + i, 8);

		r = symb_deltas__find(&z, pc);
		if (r && (r->pc > pc || r->kind > SYMB_CFA_INVALID))
			__builtin_trap();
		r = symb_deltas__find(&z, pc - 1);
		if (r && r->pc > pc - 1)
			__builtin_trap();
	}
	if (symb_deltas__bad_blocks(&z) > z.n)
		__builtin_trap();
	symb_deltas__free(&z);
	return true;
}

static void roundtrip(const struct symb_deltas *d)
{
	struct symb_deltas back;
	uint8_t *blob;
	size_t len;
	int err;

	err = symb_deltas__encode(d, &blob, &len);
	if (err == -ENOMEM)
		return;
	if (err)
		__builtin_trap();
	err = symb_deltas__decode(blob, len, &back);
	if (err != -ENOMEM) {
		if (err || back.n != d->n ||
		    (d->n && memcmp(back.rows, d->rows, d->n * sizeof(*d->rows))))
			__builtin_trap();
		symb_deltas__free(&back);
	}
	lazy_probe(blob, len, d, NULL, 0);
	free(blob);
}

static void blob_mode(const uint8_t *data, size_t size)
{
	struct symb_deltas d;
	uint8_t *blob, *again;
	size_t len = size - 1, len2;
	uint64_t h;
	unsigned i;

	blob = malloc(len + 8);
	if (!blob)
		return;
	memcpy(blob, data + 1, len);
	h = blob_hash(blob, len);
	for (i = 0; i < 8; i++)
		blob[len + i] = (uint8_t)(h >> (8 * i));
	if (symb_deltas__decode(blob, len + 8, &d) == 0) {
		check_table(&d);
		if (symb_deltas__encode(&d, &again, &len2) == 0) {
			/* encode writes block size 256 (byte 5: cfi_blob.c's BLOB_SHIFT, 8) */
			if (len > 5 && blob[5] == 8 &&
			    (len2 != len + 8 || memcmp(again, blob, len2)))
				__builtin_trap();
			free(again);
		}
		lazy_probe(blob, len + 8, &d, data + 1, len);
		symb_deltas__free(&d);
	} else {
		lazy_probe(blob, len + 8, NULL, data + 1, len);
	}
	free(blob);
}

static uint8_t *take(const uint8_t **p, size_t *left, size_t want, size_t *got)
{
	uint8_t *b;

	*got = want < *left ? want : *left;
	b = malloc(*got ? *got : 1);
	if (b)
		memcpy(b, *p, *got);
	*p += *got;
	*left -= *got;
	return b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symb_cfi_sections sec = {0};
	struct symb_cfi_stats st;
	struct symb_deltas d;
	uint8_t *eh, *hdr, *dbg;
	size_t left, eh_size, hdr_size, dbg_size;
	const uint8_t *p;
	uint8_t flags;

	if (symb_deltas__decode(data, size, &d) == 0) {
		check_table(&d);
		lazy_probe(data, size, &d, data, size);
		symb_deltas__free(&d);
	} else {
		lazy_probe(data, size, NULL, data, size);
	}
	if (size < 1)
		return 0;
	flags = data[0];
	if (flags & 0x80) {
		blob_mode(data, size);
		return 0;
	}
	if (size < HDR_SIZE)
		return 0;
	p = data + HDR_SIZE;
	left = size - HDR_SIZE;
	eh = take(&p, &left, get_le(data + 9, 4), &eh_size);
	hdr = take(&p, &left, get_le(data + 13, 4), &hdr_size);
	dbg = take(&p, &left, left, &dbg_size);
	if (eh && hdr && dbg) {
		if (flags & 1) {
			sec.eh_frame = eh;
			sec.eh_frame_size = eh_size;
			sec.eh_frame_vaddr = get_le(data + 1, 8);
		}
		if (flags & 2) {
			sec.eh_frame_hdr = hdr;
			sec.eh_frame_hdr_size = hdr_size;
			sec.eh_frame_hdr_vaddr = get_le(data + 17, 8);
		}
		if (flags & 4) {
			sec.debug_frame = dbg;
			sec.debug_frame_size = dbg_size;
		}
		if (symb_cfi__build_sections(&sec, &d, &st) == 0) {
			check_table(&d);
			if (st.from_eh_frame + st.from_debug_frame > st.fdes)
				__builtin_trap();
			roundtrip(&d);
			symb_deltas__free(&d);
		}
	}
	free(eh);
	free(hdr);
	free(dbg);
	return 0;
}
