/* SPDX-License-Identifier: MIT */
/*
 * lowprof shared-memory ring: one producer (the collector) and one consumer
 * (a symbolizer) in two processes that share one mapping.
 *
 * What it is: a single-producer single-consumer byte ring of length-prefixed,
 * 8-byte-aligned records in a power-of-two data area, with producer and
 * consumer positions published with release stores and read with acquire
 * loads. When a record does not fit, the producer drops it (drop-newest) and
 * counts it. A futex word in the header lets the consumer sleep until the
 * producer publishes a batch (lp_ring__notify, lp_ring__wait). What it is
 * not: a multi-producer queue or a parser of what the records contain.
 *
 * Trust: the consumer can write its consumer position, so the producer reads
 * it once per operation and treats any value (ahead of the producer,
 * backwards, unaligned) as hostile: it counts it and treats the ring as full.
 * The consumer position is all it can write: it lives in a page of its own,
 * a second shared object, and the consumer maps the header and the data
 * area read-only. The consumer treats everything in the mapping as possibly
 * malformed: every length and position is read once and checked before use.
 *
 * Layout of one side's mapping (all little-endian, host order), made of two
 * shared objects (memfds) mapped next to each other:
 *
 *   offset 0      struct lp_ring_cons  (the consumer page: its own object,
 *                                       writable by the consumer)
 *   offset 4096   struct lp_ring_hdr   (one page, the start of the ring object;
 *                                       written only by the producer)
 *   offset 8192   data area, data_size bytes (power of two, >= 4096)
 *
 * A record in the data area is an 8-byte header { u32 len; u32 flags; }
 * followed by len payload bytes, padded to a multiple of 8. A record never
 * wraps: when the contiguous space left before the end of the data area is
 * too small, the producer writes a header with LP_RING_F_WRAP (len 0) and
 * continues at offset 0; it may also do so earlier, by choice
 * (lp_ring__set_early_wrap). Positions are free-running u64 byte counters;
 * (pos & (data_size - 1)) is the offset.
 *
 * Reader protocol (consumer):
 *
 *   while ((err = lp_ring__read(r, &data, &len)) == 0)
 *           use data[0..len)   (a private copy, valid until the next read)
 *   -EAGAIN: nothing yet; -EPIPE: producer closed and everything consumed;
 *   -EBADMSG: the ring is corrupt (a bad length or position); stop reading;
 *   -ENOMEM: no memory for the copy (the record stays in the ring).
 *
 * A parser must not read the shared mapping: the producer (or anyone with
 * the mapping) can change a byte between two loads of it, and a length
 * checked on the first load then bounds nothing on the second.
 * lp_ring__read copies each record once, after its length was checked, so
 * what a parser sees cannot change under it. lp_ring__peek and
 * lp_ring__consume hand out the shared bytes themselves, for callers that
 * only copy them (tests, the fuzz target).
 */
#ifndef LOWPROF_RING_H
#define LOWPROF_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LP_RING_MAGIC	  0x474e52504cULL /* "LPRNG" */
#define LP_RING_VERSION	  2		  /* 2: the consumer position moved to a page of its own */
#define LP_RING_CONS_SIZE 4096u
#define LP_RING_HDR_SIZE  4096u
#define LP_RING_DATA_OFF  (LP_RING_CONS_SIZE + LP_RING_HDR_SIZE)
#define LP_RING_MIN_DATA  4096u
#define LP_RING_MAX_DATA  (1ull << 32)
#define LP_RING_REC_HDR	  8u
#define LP_RING_F_WRAP	  1u

struct lp_ring_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;
	uint64_t data_size;
	uint8_t _pad0[64 - 24];
	/* producer cache line: written only by the producer */
	uint64_t prod_pos;	   /* release-stored after the record bytes */
	uint64_t dropped_records;  /* records that did not fit (drop-newest) */
	uint64_t dropped_bytes;	   /* their payload bytes */
	uint64_t bad_consumer_pos; /* times the consumer position was invalid */
	uint32_t closed;	   /* 1 once the producer wrote its last record */
	uint32_t prod_seq;	   /* futex word: bumped after records were published */
	uint8_t _pad1[64 - 40];
	uint8_t _reserved[64]; /* version 1's consumer position */
};

/* The consumer page: the one thing the consumer writes. */
struct lp_ring_cons {
	uint64_t cons_pos; /* release-stored after a record was used */
	uint8_t _pad[64 - 8];
};

struct lp_ring;

struct lp_ring_stats {
	uint64_t prod_pos;
	uint64_t cons_pos;
	uint64_t data_size;
	uint64_t dropped_records;
	uint64_t dropped_bytes;
	uint64_t bad_consumer_pos;
	bool closed;
};

/*
 * Bytes of one side's mapping (consumer page, header, data area) for a data
 * area of data_size bytes; the ring object itself is LP_RING_CONS_SIZE less.
 */
size_t lp_ring_mem_size(uint64_t data_size);

/* Smallest valid data size (power of two, >= LP_RING_MIN_DATA) holding at
 * least want bytes; 0 if want exceeds LP_RING_MAX_DATA. */
uint64_t lp_ring_round_size(uint64_t want);

/*
 * Formats mem (mem_size bytes, zeroed or not; laid out as above) as an
 * empty ring with a data_size-byte data area and a zero consumer position.
 * data_size must be a power of two >= LP_RING_MIN_DATA and mem_size >=
 * lp_ring_mem_size(data_size). Returns 0 or -EINVAL. Done once, before
 * either side attaches (lp_ring_create_memfds does it for shared objects).
 */
int lp_ring_format(void *mem, size_t mem_size, uint64_t data_size);

/*
 * The two shared objects of a ring, as memfds (close-on-exec):
 * fds[LP_RING_FD_DATA] the header and data area (formatted), and
 * fds[LP_RING_FD_CONS] the consumer page (zero). Both are sealed against
 * shrinking and growing (a truncation would turn the other side's next
 * access into SIGBUS) and mode 0600, so a consumer of another user handed
 * a read-only descriptor cannot open the object again for writing through
 * /proc/self/fd. Returns 0 or a negative errno.
 */
#define LP_RING_FD_DATA 0
#define LP_RING_FD_CONS 1
int lp_ring_create_memfds(uint64_t data_size, int fds[2]);

/*
 * Maps a ring's two objects as one mapping laid out as above: the consumer
 * page read-write, the header and data area read-write for the producer
 * and read-only otherwise (PROT_READ: no write through this mapping can
 * ever reach the producer's bytes). Sizes come from fstat. Returns the
 * mapping and stores its size, or NULL with errno set. Undo with
 * munmap(mem, size). The fds may be closed afterwards.
 */
void *lp_ring_map_fds(int data_fd, int cons_fd, bool producer, size_t *size);

/*
 * After the producer has mapped the ring object read-write: seals it
 * against any further write or writable mapping (F_SEAL_FUTURE_WRITE), so
 * not even a consumer of the same user can write the data area. Returns 0,
 * or -EPERM if the object is already sealed (F_SEAL_SEAL) without it.
 */
int lp_ring_seal_writes(int data_fd);

/* A read-only descriptor of the ring object, for a consumer. Or -errno. */
int lp_ring_reader_fd(int data_fd);

/* 0 if fd cannot shrink or grow (sealed as above), -EPERM otherwise. */
int lp_ring_check_sealed(int fd);

/*
 * Attach to a formatted ring in mem. The mapping must stay valid until
 * lp_ring__free (which does not unmap it). Both sides validate magic, version,
 * hdr_size and data_size against mem_size once (the producer because
 * data_size bounds every write it makes); after that the producer reads only
 * cons_pos and the consumer only prod_pos, closed and the records. The
 * consumer writes only the consumer page. Both return NULL with errno set
 * (EINVAL, ENOMEM).
 * Destructor: lp_ring__free.
 */
struct lp_ring *lp_ring__producer(void *mem, size_t mem_size);
struct lp_ring *lp_ring__consumer(void *mem, size_t mem_size);
void lp_ring__free(struct lp_ring *r);

/*
 * Producer. lp_ring__reserve returns space for up to max_len payload bytes,
 * or NULL when it does not fit (the record is then counted as dropped with
 * max_len bytes; nothing else is written). lp_ring__commit publishes the
 * reserved record with its final length len <= max_len. At most one
 * reservation is open at a time (a new reserve or close abandons an open one
 * unpublished). lp_ring__write is reserve + copy + commit; it returns 0 or
 * -ENOSPC (dropped and counted) or -E2BIG (len can never fit; also counted).
 */
void *lp_ring__reserve(struct lp_ring *r, uint32_t max_len);
void lp_ring__commit(struct lp_ring *r, uint32_t len);
int lp_ring__write(struct lp_ring *r, const void *data, uint32_t len);
/*
 * Largest payload the producer could write right now without dropping (0 if
 * the consumer position is invalid). Does not count anything: used to wait
 * for space before records that must not be dropped (maps, kernel symbols).
 */
uint32_t lp_ring__writable(struct lp_ring *r);
/*
 * Producer: keeps the ring's touched pages to what the consumer lags behind.
 * Once the producer is at least bytes into the data area and the consumer,
 * in the same lap, is at least bytes in too, the next record goes at offset
 * 0 after a WRAP marker, not further on. A consumer that keeps up then sees
 * the producer cycle through the first bytes (plus what it lags) of the
 * ring, so only those pages are ever faulted in and resident on either
 * side; the rest is used only while the consumer lags. The price: until
 * the consumer has read the marker, the skipped tail is not free, and the
 * ring can take only the start the consumer left (>= bytes) more, not all
 * of what it has read. 0 (the default) never wraps early. Consumers need
 * nothing: it is the same WRAP marker.
 */
void lp_ring__set_early_wrap(struct lp_ring *r, uint64_t bytes);
/*
 * Producer: true when a record of len bytes written now would go on past
 * the early-wrap offset, into pages a consumer that keeps up never needs,
 * because the consumer is not far enough on for an early wrap. A producer
 * with a burst to send and time to wait (start-up) waits while this holds
 * so the burst does not fault the whole ring in. False without early wraps.
 */
bool lp_ring__deepens(struct lp_ring *r, uint32_t len);
/*
 * Producer: bytes published so far, record headers and padding to 8
 * included, the tails skipped by WRAP markers not (prod_pos counts them).
 */
uint64_t lp_ring__written(const struct lp_ring *r);
/*
 * Producer, before handing the ring to a new consumer (lowprof-collector
 * --ring: each symbolizer that connects): gives it a consumer page of its
 * own. The producer maps a new memfd (sealed, mode 0600, as
 * lp_ring_create_memfds makes them) and reads the position only there
 * from then on, so nothing a consumer before writes, not even one that
 * kept its mapping after it left, is read again (the old page stays
 * mapped, unread, until the caller unmaps its mapping; lp_ring__free
 * unmaps the pages mapped here). The new page starts at the producer's
 * position, a record boundary the producer knows, never at one a consumer
 * wrote: the new consumer reads what comes next; what the one before left
 * unread is not handed over (a symbolizer taking over skips what comes
 * before the metadata sent again anyway). Returns the new page's fd
 * (close-on-exec) for the consumer, or a negative errno with the old page
 * still the one read.
 */
int lp_ring__new_consumer_page(struct lp_ring *r);

/* Marks the stream complete; the consumer gets -EPIPE once it has read all. */
void lp_ring__close(struct lp_ring *r);

/*
 * Producer: after a batch of commits (or the close), tells a consumer
 * waiting in lp_ring__wait that there is something to read: bumps prod_seq
 * and wakes it (a futex on the shared page). Nothing when nothing was
 * published since the last call. One syscall per batch, not per record.
 */
void lp_ring__notify(struct lp_ring *r);

/*
 * Consumer: waits until the producer publishes records (lp_ring__notify),
 * at most timeout_ms; returns at once if some are already there. A signal
 * ends the wait early. Returns 0, or -EINVAL for a producer's handle.
 */
int lp_ring__wait(struct lp_ring *r, unsigned timeout_ms);

/*
 * Consumer; see the reader protocol above. lp_ring__read copies the next
 * record (len bytes, the length peek checked, read once) into a buffer r
 * owns and consumes it: *data is private memory holding exactly those
 * bytes (in the sanitizer build the buffer's bytes past len are poisoned),
 * valid until the next lp_ring__read or lp_ring__free. The buffer grows to
 * the largest record read, at most lp_ring__max_record bytes.
 */
int lp_ring__read(struct lp_ring *r, const void **data, uint32_t *len);
/* The record in place, in shared memory: to copy, never to parse. */
int lp_ring__peek(struct lp_ring *r, const void **data, uint32_t *len);
void lp_ring__consume(struct lp_ring *r);
/*
 * Consumer: the most bytes the ring held unread at any peek since the last
 * call, which starts the count again: how near the producer came to
 * dropping records (at data_size it drops). 0 for a producer's handle.
 */
uint64_t lp_ring__take_peak(struct lp_ring *r);

/* Snapshot of the header's counters (each field read once). */
void lp_ring__stats(const struct lp_ring *r, struct lp_ring_stats *st);

/* Largest payload a single record can carry in this ring: data_size / 2 -
 * LP_RING_REC_HDR, the largest that fits an empty ring whatever the producer's
 * offset (see ring.c). Larger writes fail with -E2BIG and are counted as
 * dropped. */
uint32_t lp_ring__max_record(const struct lp_ring *r);

#endif /* LOWPROF_RING_H */
