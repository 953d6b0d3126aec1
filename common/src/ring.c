// SPDX-License-Identifier: MIT
/*
 * Shared-memory ring: single producer, single consumer, two processes.
 *
 * Memory ordering (both sides are in different processes, so the only
 * synchronisation is through the shared header):
 *
 *   producer                                consumer
 *   --------                                --------
 *   cons = acquire-load(cons_pos)           closed = acquire-load(closed)
 *     (bytes below cons are no longer       prod = acquire-load(prod_pos)
 *      read by the consumer: reusable)        (record bytes below prod are
 *   write record header + payload              visible)
 *   release-store(prod_pos)                 read record header + payload
 *   ...                                     release-store(cons_pos)
 *   release-store(closed = 1)                 (we are done with those bytes)
 *
 * The release store of prod_pos pairs with the consumer's acquire load, so a
 * record's bytes are visible before its position is. The release store of
 * cons_pos pairs with the producer's acquire load, so the consumer has
 * finished reading a record before the producer overwrites it. closed is
 * stored after the last prod_pos and loaded before prod_pos, so a consumer
 * that sees closed also sees the final prod_pos.
 *
 * Trust: each side keeps private copies of the positions and counters it owns
 * and, after taking them over once at attach, only ever stores them; it never
 * reads back its own shared fields, which the other side could overwrite. What it reads of the other side's
 * fields is loaded once per operation and validated before use.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include <limits.h>
#include <time.h>

#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RING_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(RING_ASAN)
#define RING_ASAN 1
#endif
#ifdef RING_ASAN
#include <sanitizer/asan_interface.h>
/* The copy buffer past the record: a parser reading there is caught. */
#define copy_poison(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define copy_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define copy_poison(p, n)   ((void)(p), (void)(n))
#define copy_unpoison(p, n) ((void)(p), (void)(n))
#endif

_Static_assert(sizeof(struct lp_ring_hdr) == 192, "lp_ring_hdr layout changed");
_Static_assert(sizeof(struct lp_ring_hdr) <= LP_RING_HDR_SIZE, "lp_ring_hdr exceeds its page");
_Static_assert(__builtin_offsetof(struct lp_ring_hdr, prod_pos) == 64, "producer cache line");
_Static_assert(sizeof(struct lp_ring_cons) <= LP_RING_CONS_SIZE, "lp_ring_cons exceeds its page");

/* Record header at the start of every record in the data area. */
struct lp_ring_rec {
	uint32_t len;
	uint32_t flags;
};

_Static_assert(sizeof(struct lp_ring_rec) == LP_RING_REC_HDR, "record header size");

struct lp_ring {
	struct lp_ring_hdr *hdr;
	struct lp_ring_cons *cpage; /* the consumer page */
	bool own_cpage;		    /* cpage was mapped here (lp_ring__new_consumer_page) */
	uint8_t *data;
	uint64_t data_size; /* validated at attach; never re-read */
	bool producer;

	/* producer: private copies, stored to the header, never loaded back */
	uint64_t prod;
	uint64_t dropped_records;
	uint64_t dropped_bytes;
	uint64_t bad_consumer_pos;
	uint64_t resv_off; /* offset of the open reservation's record header */
	uint64_t resv_pad; /* bytes of wrap padding before it */
	uint32_t resv_max;
	uint64_t early_wrap; /* wrap at an offset this far in once the start is free; 0: never */
	uint64_t padded;     /* bytes of prod that are wrap padding */
	bool resv_open;
	bool warned_cons;
	uint64_t notified; /* prod at the last lp_ring__notify */
	uint32_t seq;	   /* private copy of prod_seq */

	/* consumer */
	uint64_t cons;	  /* private copy of cons_pos */
	uint64_t pending; /* bytes lp_ring__consume releases; 0 if nothing peeked */
	uint64_t peak;	  /* most bytes unread at a peek (lp_ring__take_peak) */
	bool broken;	  /* sticky: a corrupt record or position was seen */
	uint8_t *copy;	  /* lp_ring__read's private copy of the last record */
	size_t copy_cap;
};

static inline uint64_t rec_size(uint32_t len)
{
	return LP_RING_REC_HDR + (((uint64_t)len + 7) & ~7ull);
}

static bool data_size_valid(uint64_t data_size)
{
	return data_size >= LP_RING_MIN_DATA && data_size <= LP_RING_MAX_DATA &&
	       (data_size & (data_size - 1)) == 0;
}

size_t lp_ring_mem_size(uint64_t data_size)
{
	/* 0 rather than a wrapped size on a 32-bit size_t */
	if (data_size > SIZE_MAX - LP_RING_DATA_OFF)
		return 0;
	return LP_RING_DATA_OFF + data_size;
}

uint64_t lp_ring_round_size(uint64_t want)
{
	uint64_t size = LP_RING_MIN_DATA;

	if (want > LP_RING_MAX_DATA)
		return 0;
	while (size < want)
		size <<= 1;
	return size;
}

/* The header of the ring object (without the consumer page). */
static void format_hdr(struct lp_ring_hdr *hdr, uint64_t data_size)
{
	memset(hdr, 0, LP_RING_HDR_SIZE);
	hdr->version = LP_RING_VERSION;
	hdr->hdr_size = LP_RING_HDR_SIZE;
	hdr->data_size = data_size;
	/* magic last: whoever sees it sees a complete header */
	__atomic_store_n(&hdr->magic, LP_RING_MAGIC, __ATOMIC_RELEASE);
}

int lp_ring_format(void *mem, size_t mem_size, uint64_t data_size)
{
	size_t need = lp_ring_mem_size(data_size);

	if (!mem || ((uintptr_t)mem & 7) || !data_size_valid(data_size) || !need || mem_size < need)
		return -EINVAL;
	memset(mem, 0, LP_RING_CONS_SIZE);
	format_hdr((struct lp_ring_hdr *)((uint8_t *)mem + LP_RING_CONS_SIZE), data_size);
	return 0;
}

/*
 * Reads the format fields once and checks them against mem_size. Both sides
 * do this: the consumer because the header is not trusted, the producer
 * because data_size bounds every write it makes.
 */
static int ring_attach(struct lp_ring *r, void *mem, size_t mem_size)
{
	struct lp_ring_hdr *hdr;
	uint64_t magic, data_size;
	uint32_t version, hdr_size;

	if (!mem || ((uintptr_t)mem & 7) || mem_size < LP_RING_DATA_OFF + LP_RING_MIN_DATA)
		return -EINVAL;
	hdr = (struct lp_ring_hdr *)((uint8_t *)mem + LP_RING_CONS_SIZE);
	magic = __atomic_load_n(&hdr->magic, __ATOMIC_ACQUIRE);
	version = __atomic_load_n(&hdr->version, __ATOMIC_RELAXED);
	hdr_size = __atomic_load_n(&hdr->hdr_size, __ATOMIC_RELAXED);
	data_size = __atomic_load_n(&hdr->data_size, __ATOMIC_RELAXED);
	if (magic != LP_RING_MAGIC) {
		lp_warn("ring: bad magic 0x%llx", (unsigned long long)magic);
		return -EINVAL;
	}
	if (version != LP_RING_VERSION || hdr_size != LP_RING_HDR_SIZE) {
		lp_warn("ring: unsupported version %u / header size %u", version, hdr_size);
		return -EINVAL;
	}
	/* data_size <= LP_RING_MAX_DATA, so the sum cannot overflow a u64 */
	if (!data_size_valid(data_size) || LP_RING_DATA_OFF + data_size > mem_size) {
		lp_warn("ring: bad data size %llu for a %zu-byte mapping",
			(unsigned long long)data_size, mem_size);
		return -EINVAL;
	}
	r->cpage = mem;
	r->hdr = hdr;
	r->data = (uint8_t *)mem + LP_RING_DATA_OFF;
	r->data_size = data_size;
	return 0;
}

struct lp_ring *lp_ring__producer(void *mem, size_t mem_size)
{
	struct lp_ring *r;
	int err;

	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL; /* errno is ENOMEM */
	err = ring_attach(r, mem, mem_size);
	if (err)
		goto err_out;
	r->producer = true;
	/*
	 * Take over where a previous producer stopped. Read once; from here on
	 * the producer only stores these fields.
	 */
	r->prod = __atomic_load_n(&r->hdr->prod_pos, __ATOMIC_RELAXED);
	r->notified = r->prod;
	r->seq = __atomic_load_n(&r->hdr->prod_seq, __ATOMIC_RELAXED);
	r->dropped_records = __atomic_load_n(&r->hdr->dropped_records, __ATOMIC_RELAXED);
	r->dropped_bytes = __atomic_load_n(&r->hdr->dropped_bytes, __ATOMIC_RELAXED);
	r->bad_consumer_pos = __atomic_load_n(&r->hdr->bad_consumer_pos, __ATOMIC_RELAXED);
	if (r->prod & 7) {
		lp_warn("ring: unaligned producer position %llu", (unsigned long long)r->prod);
		err = -EINVAL;
		goto err_out;
	}
	return r;
err_out:
	free(r);
	errno = -err;
	return NULL;
}

struct lp_ring *lp_ring__consumer(void *mem, size_t mem_size)
{
	struct lp_ring *r;
	int err;

	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	err = ring_attach(r, mem, mem_size);
	if (err)
		goto err_out;
	/* The one read of our own shared position (re-attach after a restart). */
	r->cons = __atomic_load_n(&r->cpage->cons_pos, __ATOMIC_RELAXED);
	if (r->cons & 7) {
		lp_warn("ring: unaligned consumer position %llu", (unsigned long long)r->cons);
		err = -EINVAL;
		goto err_out;
	}
	return r;
err_out:
	free(r);
	errno = -err;
	return NULL;
}

void lp_ring__free(struct lp_ring *r)
{
	if (!r)
		return;
	if (r->copy) {
		copy_unpoison(r->copy, r->copy_cap);
		free(r->copy);
	}
	if (r->own_cpage)
		munmap(r->cpage, LP_RING_CONS_SIZE);
	free(r);
}

/*
 * Why data_size / 2 - LP_RING_REC_HDR: a record of rec bytes (header + padded
 * payload) that does not fit in the tail (data_size - off) is written at offset
 * 0 after a WRAP marker, and must then end before the marker at off. So in an
 * empty ring a record fits iff rec <= max(data_size - off, off). Over all
 * offsets the minimum of that is data_size / 2 (off = data_size / 2). This is
 * the largest payload that fits whatever the producer's offset once the
 * consumer has caught up; anything larger could be dropped forever, so it is
 * refused up front (-E2BIG). It fits a u32 since data_size <= 2^32.
 */
uint32_t lp_ring__max_record(const struct lp_ring *r)
{
	if (!r)
		return 0;
	return (uint32_t)(r->data_size / 2 - LP_RING_REC_HDR);
}

static void prod_drop(struct lp_ring *r, uint32_t len)
{
	/* Counters only need to be visible by the time closed is (release). */
	r->dropped_records++;
	r->dropped_bytes += len;
	__atomic_store_n(&r->hdr->dropped_records, r->dropped_records, __ATOMIC_RELAXED);
	__atomic_store_n(&r->hdr->dropped_bytes, r->dropped_bytes, __ATOMIC_RELAXED);
}

static void prod_bad_cons(struct lp_ring *r, uint64_t cons)
{
	r->bad_consumer_pos++;
	__atomic_store_n(&r->hdr->bad_consumer_pos, r->bad_consumer_pos, __ATOMIC_RELAXED);
	if (!r->warned_cons) {
		/* Once: a hostile consumer must not be able to flood the log. */
		lp_warn("ring: invalid consumer position %llu (producer at %llu); dropping",
			(unsigned long long)cons, (unsigned long long)r->prod);
		r->warned_cons = true;
	}
}

static void rec_store(uint8_t *at, uint32_t len, uint32_t flags)
{
	struct lp_ring_rec *rec = (struct lp_ring_rec *)at;

	/* Ordered before the consumer's view by the release store of prod_pos. */
	__atomic_store_n(&rec->len, len, __ATOMIC_RELAXED);
	__atomic_store_n(&rec->flags, flags, __ATOMIC_RELAXED);
}

/*
 * The consumer position, loaded once and checked: 0 and *used set, or
 * -EBADMSG if it is ahead of the producer, more than data_size behind or
 * unaligned. The acquire pairs with the consumer's release store of cons_pos:
 * bytes below it are no longer read and may be reused.
 */
static int prod_load_cons(struct lp_ring *r, uint64_t *cons, uint64_t *used)
{
	*cons = __atomic_load_n(&r->cpage->cons_pos, __ATOMIC_ACQUIRE);
	*used = r->prod - *cons;
	/* cons > prod is caught by the unsigned difference too; kept explicit. */
	if (*cons > r->prod || *used > r->data_size || (*cons & 7))
		return -EBADMSG;
	return 0;
}

/*
 * Whether a record of rec bytes (header included) at offset off, with used
 * bytes unread, goes to offset 0 early: the producer is at least early_wrap
 * in, the consumer is in the same lap and at least early_wrap in too (so
 * the start of the ring it left, which the producer now fills, holds at
 * least early_wrap bytes), and the record fits there (then tail + rec <=
 * data_size - used: it fits with its WRAP marker, as reserve requires).
 */
static bool early_wrap_fits(const struct lp_ring *r, uint64_t off, uint64_t used, uint64_t rec)
{
	return r->early_wrap && off >= r->early_wrap && used <= off - r->early_wrap &&
	       rec <= off - used;
}

bool lp_ring__deepens(struct lp_ring *r, uint32_t len)
{
	uint64_t cons, used, off;

	if (!r || !r->producer || !r->early_wrap || prod_load_cons(r, &cons, &used))
		return false;
	off = r->prod & (r->data_size - 1);
	return off >= r->early_wrap && rec_size(len) <= r->data_size - off &&
	       !early_wrap_fits(r, off, used, rec_size(len));
}

/*
 * Exact: reserve(len) succeeds now iff len <= the result (while cons_pos does
 * not move back). 0 also when not even a 0-byte record fits; callers waiting
 * for space wait for a non-zero length.
 */
uint32_t lp_ring__writable(struct lp_ring *r)
{
	uint64_t cons, used, free, tail, rec;

	if (!r || !r->producer || prod_load_cons(r, &cons, &used))
		return 0;
	free = r->data_size - used;
	tail = r->data_size - (r->prod & (r->data_size - 1));
	/* Either in the tail, or after a WRAP marker padding the whole tail. */
	rec = free < tail ? free : tail;
	if (free > 2 * tail)
		rec = free - tail;
	/* rec is a multiple of 8: a payload of rec - 8 needs no padding. */
	if (rec < LP_RING_REC_HDR)
		return 0;
	rec -= LP_RING_REC_HDR;
	return rec < lp_ring__max_record(r) ? (uint32_t)rec : lp_ring__max_record(r);
}

void *lp_ring__reserve(struct lp_ring *r, uint32_t max_len)
{
	uint64_t cons, used, off, tail, need, rec;

	if (!r || !r->producer)
		return NULL;
	/* A reservation still open is abandoned: it was never published. */
	r->resv_open = false;
	if (max_len > lp_ring__max_record(r)) {
		prod_drop(r, max_len);
		return NULL;
	}
	rec = rec_size(max_len);

	if (prod_load_cons(r, &cons, &used)) {
		prod_bad_cons(r, cons);
		prod_drop(r, max_len);
		return NULL;
	}

	off = r->prod & (r->data_size - 1);
	tail = r->data_size - off; /* >= 8: off is 8-aligned, data_size a multiple of 8 */
	need = rec <= tail ? rec : tail + rec;
	if (need > r->data_size - used) {
		prod_drop(r, max_len);
		return NULL;
	}
	r->resv_pad = 0;
	if (rec > tail || early_wrap_fits(r, off, used, rec)) {
		/* Published together with the record by commit's prod_pos store. */
		rec_store(r->data + off, 0, LP_RING_F_WRAP);
		r->resv_pad = tail;
		off = 0;
	}
	r->resv_off = off;
	r->resv_max = max_len;
	r->resv_open = true;
	return r->data + off + LP_RING_REC_HDR;
}

void lp_ring__commit(struct lp_ring *r, uint32_t len)
{
	if (!r || !r->producer || !r->resv_open)
		return;
	/* len > max_len breaks the contract; never publish bytes not reserved. */
	if (len > r->resv_max)
		len = r->resv_max;
	rec_store(r->data + r->resv_off, len, 0);
	r->prod += r->resv_pad + rec_size(len);
	r->padded += r->resv_pad;
	r->resv_open = false;
	/* Publishes the record (and any WRAP marker) written above. */
	__atomic_store_n(&r->hdr->prod_pos, r->prod, __ATOMIC_RELEASE);
}

uint64_t lp_ring__written(const struct lp_ring *r)
{
	return r && r->producer ? r->prod - r->padded : 0;
}

void lp_ring__set_early_wrap(struct lp_ring *r, uint64_t bytes)
{
	if (!r || !r->producer)
		return;
	/* 8-aligned and never 0 when set: a WRAP marker at offset 0 is corrupt */
	r->early_wrap = bytes ? (bytes + 7) & ~7ull : 0;
}

int lp_ring__write(struct lp_ring *r, const void *data, uint32_t len)
{
	void *p;

	if (!r || !r->producer)
		return -EINVAL;
	if (len > lp_ring__max_record(r)) {
		prod_drop(r, len);
		return -E2BIG;
	}
	p = lp_ring__reserve(r, len);
	if (!p)
		return -ENOSPC;
	if (len)
		memcpy(p, data, len);
	lp_ring__commit(r, len);
	return 0;
}

/* After prod_pos and closed: a waiter that sees the new seq sees them. */
static void wake_consumer(struct lp_ring *r)
{
	__atomic_store_n(&r->hdr->prod_seq, ++r->seq, __ATOMIC_RELEASE);
	/* shared (no FUTEX_PRIVATE_FLAG): the consumer is another process */
	syscall(SYS_futex, &r->hdr->prod_seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void lp_ring__close(struct lp_ring *r)
{
	if (!r || !r->producer)
		return;
	r->resv_open = false;
	/* After the last prod_pos and counter stores; see the ordering above. */
	__atomic_store_n(&r->hdr->closed, 1, __ATOMIC_RELEASE);
	r->notified = r->prod;
	wake_consumer(r);
}

static int cons_corrupt(struct lp_ring *r, const char *why, uint64_t a, uint64_t b)
{
	/* Logged once: the ring stays broken from here on. */
	lp_warn("ring: corrupt at consumer position %llu: %s (%llu, %llu)",
		(unsigned long long)r->cons, why, (unsigned long long)a, (unsigned long long)b);
	r->broken = true;
	r->pending = 0;
	return -EBADMSG;
}

/*
 * Each call loads closed, prod_pos and the record header once and checks them
 * all before handing out a pointer. The payload stays in shared memory: the
 * producer (or anyone with the mapping) can change those bytes while the
 * caller reads them, so the caller may only copy them (lp_ring__read does)
 * and never parse them there. len and the bounds of data are the checked
 * ones and cannot change.
 */
int lp_ring__peek(struct lp_ring *r, const void **data, uint32_t *len)
{
	const struct lp_ring_rec *rec;
	uint64_t prod, avail, off, tail, size;
	uint32_t rlen, rflags;
	bool closed;

	if (!r || r->producer || !data || !len)
		return -EINVAL;
	if (r->broken)
		return -EBADMSG;
	/* closed before prod_pos: once closed is seen, prod_pos is final. */
	closed = __atomic_load_n(&r->hdr->closed, __ATOMIC_ACQUIRE) != 0;
	prod = __atomic_load_n(&r->hdr->prod_pos, __ATOMIC_ACQUIRE);
	avail = prod - r->cons;
	if (avail > r->data_size || (prod & 7))
		return cons_corrupt(r, "bad producer position", prod, r->data_size);
	if (!avail)
		return closed ? -EPIPE : -EAGAIN;
	if (avail > r->peak)
		r->peak = avail;

	off = r->cons & (r->data_size - 1);
	rec = (const struct lp_ring_rec *)(r->data + off);
	rlen = __atomic_load_n(&rec->len, __ATOMIC_RELAXED);
	rflags = __atomic_load_n(&rec->flags, __ATOMIC_RELAXED);
	if (rflags == LP_RING_F_WRAP) {
		/* Our producer never wraps at 0 and always publishes the whole tail. */
		tail = r->data_size - off;
		if (rlen != 0 || off == 0 || tail > avail)
			return cons_corrupt(r, "bad wrap marker", rlen, off);
		r->cons += tail;
		avail -= tail;
		/* The tail is free now; nothing in it is handed out. */
		__atomic_store_n(&r->cpage->cons_pos, r->cons, __ATOMIC_RELEASE);
		if (!avail)
			return closed ? -EPIPE : -EAGAIN;
		off = 0;
		rec = (const struct lp_ring_rec *)r->data;
		rlen = __atomic_load_n(&rec->len, __ATOMIC_RELAXED);
		rflags = __atomic_load_n(&rec->flags, __ATOMIC_RELAXED);
	}
	if (rflags != 0)
		return cons_corrupt(r, "unknown record flags", rflags, rlen);
	size = rec_size(rlen);
	if (size > avail || size > r->data_size - off)
		return cons_corrupt(r, "record length out of bounds", rlen, avail);

	r->pending = size;
	*data = rec + 1;
	*len = rlen;
	return 0;
}

/* Room for a record of len bytes in the copy buffer: 0 or -ENOMEM. */
static int copy_reserve(struct lp_ring *r, uint32_t len)
{
	size_t cap = r->copy_cap ? r->copy_cap : 4096;
	uint8_t *p;

	if (r->copy && len <= r->copy_cap)
		return 0;
	while (cap < len)
		cap *= 2; /* len < 2^31 (lp_ring__max_record): no overflow */
	if (r->copy)
		copy_unpoison(r->copy, r->copy_cap);
	p = realloc(r->copy, cap);
	if (!p) {
		if (r->copy)
			copy_poison(r->copy, r->copy_cap);
		return -ENOMEM;
	}
	r->copy = p;
	r->copy_cap = cap;
	copy_poison(r->copy, r->copy_cap);
	return 0;
}

/*
 * One copy of the record, of the length peek loaded once and checked:
 * from here on nothing the producer writes reaches the caller.
 */
int lp_ring__read(struct lp_ring *r, const void **data, uint32_t *len)
{
	const void *shared;
	uint32_t n;
	int err;

	err = lp_ring__peek(r, &shared, &n);
	if (err)
		return err;
	err = copy_reserve(r, n);
	if (err)
		return err;
	/* all, then the record: exact to the byte, whatever n's alignment */
	copy_poison(r->copy, r->copy_cap);
	copy_unpoison(r->copy, n);
	memcpy(r->copy, shared, n);
	lp_ring__consume(r);
	*data = r->copy;
	*len = n;
	return 0;
}

void lp_ring__consume(struct lp_ring *r)
{
	if (!r || r->producer || r->broken || !r->pending)
		return;
	r->cons += r->pending;
	r->pending = 0;
	/* We are done reading the record: the producer may reuse it. */
	__atomic_store_n(&r->cpage->cons_pos, r->cons, __ATOMIC_RELEASE);
}

uint64_t lp_ring__take_peak(struct lp_ring *r)
{
	uint64_t peak;

	if (!r || r->producer)
		return 0;
	peak = r->peak;
	r->peak = 0;
	return peak;
}

void lp_ring__stats(const struct lp_ring *r, struct lp_ring_stats *st)
{
	const struct lp_ring_hdr *hdr;

	if (!st)
		return;
	memset(st, 0, sizeof(*st));
	if (!r)
		return;
	hdr = r->hdr;
	/* closed first, as in peek: counters stored before it are then final. */
	st->closed = __atomic_load_n(&hdr->closed, __ATOMIC_ACQUIRE) != 0;
	st->prod_pos = __atomic_load_n(&hdr->prod_pos, __ATOMIC_ACQUIRE);
	st->cons_pos = __atomic_load_n(&r->cpage->cons_pos, __ATOMIC_ACQUIRE);
	st->data_size = r->data_size;
	st->dropped_records = __atomic_load_n(&hdr->dropped_records, __ATOMIC_RELAXED);
	st->dropped_bytes = __atomic_load_n(&hdr->dropped_bytes, __ATOMIC_RELAXED);
	st->bad_consumer_pos = __atomic_load_n(&hdr->bad_consumer_pos, __ATOMIC_RELAXED);
}

/*
 * One mapping of both objects: an address range reserved with PROT_NONE,
 * then each object mapped over its part with MAP_FIXED, so the consumer
 * page and the header keep the offsets of the layout.
 */
void *lp_ring_map_fds(int data_fd, int cons_fd, bool producer, size_t *size)
{
	struct stat dst, cst;
	uint8_t *mem;
	size_t total;
	int prot = PROT_READ | (producer ? PROT_WRITE : 0), err;

	if (fstat(data_fd, &dst) || fstat(cons_fd, &cst))
		return NULL;
	if (!S_ISREG(dst.st_mode) || !S_ISREG(cst.st_mode) ||
	    dst.st_size < (off_t)(LP_RING_HDR_SIZE + LP_RING_MIN_DATA) ||
	    (uint64_t)dst.st_size > LP_RING_HDR_SIZE + LP_RING_MAX_DATA ||
	    cst.st_size < (off_t)LP_RING_CONS_SIZE) {
		errno = EINVAL;
		return NULL;
	}
	total = LP_RING_CONS_SIZE + (size_t)dst.st_size;
	mem = mmap(NULL, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		return NULL;
	if (mmap(mem, LP_RING_CONS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, cons_fd,
		 0) == MAP_FAILED ||
	    mmap(mem + LP_RING_CONS_SIZE, (size_t)dst.st_size, prot, MAP_SHARED | MAP_FIXED,
		 data_fd, 0) == MAP_FAILED) {
		err = errno;
		munmap(mem, total);
		errno = err;
		return NULL;
	}
	*size = total;
	return mem;
}

/* A memfd of size bytes, mode 0600, sealed against shrinking and growing. */
static int sealed_memfd(const char *name, size_t size)
{
	int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING), err;

	if (fd < 0)
		return -errno;
	if (fchmod(fd, 0600) || ftruncate(fd, (off_t)size) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int lp_ring_create_memfds(uint64_t data_size, int fds[2])
{
	size_t size = lp_ring_mem_size(data_size) - LP_RING_CONS_SIZE;
	void *mem;
	int err;

	fds[0] = fds[1] = -1;
	if (!data_size_valid(data_size) || !lp_ring_mem_size(data_size))
		return -EINVAL;
	fds[LP_RING_FD_DATA] = sealed_memfd("lowprof-ring", size);
	if (fds[LP_RING_FD_DATA] < 0) {
		err = fds[LP_RING_FD_DATA];
		goto err_out;
	}
	fds[LP_RING_FD_CONS] = sealed_memfd("lowprof-ring-consumer", LP_RING_CONS_SIZE);
	if (fds[LP_RING_FD_CONS] < 0) {
		err = fds[LP_RING_FD_CONS];
		goto err_out;
	}
	/* a new memfd reads as zeros: the consumer page needs nothing */
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fds[LP_RING_FD_DATA], 0);
	if (mem == MAP_FAILED) {
		err = -errno;
		goto err_out;
	}
	format_hdr(mem, data_size);
	munmap(mem, size);
	return 0;
err_out:
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	fds[0] = fds[1] = -1;
	return err;
}

int lp_ring__new_consumer_page(struct lp_ring *r)
{
	const struct lp_ring_cons start = {.cons_pos = r ? r->prod : 0};
	struct lp_ring_cons *page;
	ssize_t n;
	int fd, err;

	if (!r || !r->producer)
		return -EINVAL;
	fd = sealed_memfd("lowprof-ring-consumer", LP_RING_CONS_SIZE);
	if (fd < 0)
		return fd;
	/* the position first: the page never shows the producer anything else */
	n = pwrite(fd, &start, sizeof(start), 0);
	if (n != (ssize_t)sizeof(start)) {
		err = n < 0 ? -errno : -EIO;
		goto err_out;
	}
	page = mmap(NULL, LP_RING_CONS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (page == MAP_FAILED) {
		err = -errno;
		goto err_out;
	}
	/* the first page is the caller's mapping's; the ones after are ours */
	if (r->own_cpage)
		munmap(r->cpage, LP_RING_CONS_SIZE);
	r->cpage = page;
	r->own_cpage = true;
	return fd;
err_out:
	close(fd);
	return err;
}

int lp_ring_seal_writes(int data_fd)
{
	int seals;

	if (fcntl(data_fd, F_ADD_SEALS, F_SEAL_FUTURE_WRITE | F_SEAL_SEAL) == 0)
		return 0;
	/* sealed before (a collector that took over the ring): fine if so */
	seals = fcntl(data_fd, F_GET_SEALS);
	return seals >= 0 && (seals & F_SEAL_FUTURE_WRITE) ? 0 : -EPERM;
}

int lp_ring_reader_fd(int data_fd)
{
	return lp_reopen(data_fd, O_RDONLY);
}

int lp_ring_check_sealed(int fd)
{
	int seals = fcntl(fd, F_GET_SEALS);

	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return -EPERM;
	return 0;
}

void lp_ring__notify(struct lp_ring *r)
{
	if (!r || !r->producer)
		return;
	if (r->prod == r->notified)
		return;
	r->notified = r->prod;
	wake_consumer(r);
}

int lp_ring__wait(struct lp_ring *r, unsigned timeout_ms)
{
	struct timespec ts = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000};
	uint32_t seq;

	if (!r || r->producer)
		return -EINVAL;
	/*
	 * seq before prod_pos: a notify after this load changes seq, so the
	 * futex wait returns at once rather than sleeping through it.
	 */
	seq = __atomic_load_n(&r->hdr->prod_seq, __ATOMIC_ACQUIRE);
	if (__atomic_load_n(&r->hdr->prod_pos, __ATOMIC_ACQUIRE) != r->cons ||
	    __atomic_load_n(&r->hdr->closed, __ATOMIC_ACQUIRE))
		return 0;
	/* FUTEX_WAIT only reads the word: the read-only mapping is enough */
	syscall(SYS_futex, &r->hdr->prod_seq, FUTEX_WAIT, seq, &ts, NULL, 0);
	return 0;
}
