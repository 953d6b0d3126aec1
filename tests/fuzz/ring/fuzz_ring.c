// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the input is a whole shared mapping as a hostile producer
 * (or anyone else with the mapping) could leave it.
 *
 * Input layout, compact so the fuzzer does not spend its time on padding:
 *   bytes [0, 192)   struct lp_ring_hdr (magic, data_size, positions, closed...);
 *                    its bytes [128, 136), version 1's consumer position, go to
 *                    the consumer page instead (so older corpora still steer it)
 *   bytes [192, ...) the data area, from offset 0
 * The harness builds a mapping of LP_RING_DATA_OFF + area bytes, where area is
 * the smallest power of two >= 4096 holding the rest of the input (at most
 * MAX_AREA; zero padded). The header's data_size is the fuzzer's and may
 * disagree with area: attach must catch it.
 *
 * The mapping is its own heap allocation of exactly that size, so ASan flags
 * any read past it; on top, every record handed out must lie inside the data
 * area the header declared. A second pass attaches a producer to the same
 * input (hostile cons_pos) and checks it writes only its own header fields and
 * inside [0, data_size) of the data area, never the consumer page.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/log.h"
#include "lowprof/ring.h"

#define MAX_AREA (64u * 1024)

#define check(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

struct mapping {
	uint8_t *mem;
	size_t size;
	uint8_t *data;
	uint64_t area;
};

static int map_input(struct mapping *m, const uint8_t *in, size_t n)
{
	size_t hsz = sizeof(struct lp_ring_hdr);
	size_t rest = n > hsz ? n - hsz : 0;

	m->area = LP_RING_MIN_DATA;
	while (m->area < rest && m->area < MAX_AREA)
		m->area <<= 1;
	if (rest > m->area)
		rest = m->area;
	m->size = LP_RING_DATA_OFF + m->area;
	m->mem = malloc(m->size);
	if (!m->mem)
		return -ENOMEM;
	memset(m->mem, 0, m->size);
	memcpy(m->mem + LP_RING_CONS_SIZE, in, n < hsz ? n : hsz);
	if (n >= 136)
		memcpy(m->mem, in + 128, 8); /* the consumer position */
	m->data = m->mem + LP_RING_DATA_OFF;
	memcpy(m->data, in + hsz, rest);
	return 0;
}

/* Reads every record the consumer hands out; never more than fit. */
static void consume_all(struct mapping *m)
{
	const struct lp_ring_hdr *hdr = (const struct lp_ring_hdr *)(m->mem + LP_RING_CONS_SIZE);
	uint64_t data_size = hdr->data_size; /* nothing writes it while we run */
	volatile uint8_t sink = 0;
	struct lp_ring_stats st;
	struct lp_ring *c;
	uint64_t n;
	int err = 0;

	c = lp_ring__consumer(m->mem, m->size);
	if (!c)
		return;
	check(data_size <= m->area);
	/* Each record advances the position by >= 8 bytes of at most data_size. */
	for (n = 0; n <= data_size / 8 + 1; n++) {
		const uint8_t *p = NULL;
		uint32_t len = 0;

		err = lp_ring__peek(c, (const void **)&p, &len);
		if (err)
			break;
		check(p >= m->data + 8 && (uint64_t)(p - m->data) + len <= data_size);
		check(((uintptr_t)p & 7) == 0);
		for (uint32_t i = 0; i < len; i++)
			sink += p[i];
		lp_ring__consume(c);
	}
	check(err == -EAGAIN || err == -EPIPE || err == -EBADMSG);
	if (err == -EBADMSG) {
		const void *p;
		uint32_t len;

		check(lp_ring__peek(c, &p, &len) == -EBADMSG);
	}
	lp_ring__stats(c, &st);
	check(st.data_size == data_size);
	lp_ring__free(c);
	(void)sink;
}

/* A producer over the same hostile mapping writes only where it may. */
static void produce_some(struct mapping *m, const uint8_t *in, size_t n)
{
	const struct lp_ring_hdr *hdr = (const struct lp_ring_hdr *)(m->mem + LP_RING_CONS_SIZE);
	uint64_t data_size = hdr->data_size;
	uint8_t *before, payload[256];
	struct lp_ring *p;

	before = malloc(m->size);
	if (!before)
		return;
	memcpy(before, m->mem, m->size);
	p = lp_ring__producer(m->mem, m->size);
	if (!p)
		goto out;
	memset(payload, 0xcc, sizeof(payload));
	/* Record lengths from the first input bytes, some near max_record. */
	for (size_t i = 0; i < 8 && i < n; i++) {
		uint32_t len = in[i] < 0xf0 ? in[i] : lp_ring__max_record(p) - (in[i] - 0xf0);
		void *buf = lp_ring__reserve(p, len);

		if (!buf)
			continue;
		check((uint8_t *)buf >= m->data + 8 &&
		      (uint64_t)((uint8_t *)buf - m->data) + len <= data_size);
		memcpy(buf, payload, len < sizeof(payload) ? len : sizeof(payload));
		lp_ring__commit(p, len / 2);
	}
	lp_ring__close(p);
	lp_ring__free(p);
	/* The consumer page: never written by the producer. */
	check(memcmp(before, m->mem, LP_RING_CONS_SIZE) == 0);
	/* Header: only the producer cache line may change. */
	check(memcmp(before + LP_RING_CONS_SIZE, m->mem + LP_RING_CONS_SIZE, 64) == 0);
	check(memcmp(before + LP_RING_CONS_SIZE + 128, m->mem + LP_RING_CONS_SIZE + 128,
		     LP_RING_HDR_SIZE - 128) == 0);
	/* Data area: nothing at or past data_size. */
	check(memcmp(before + LP_RING_DATA_OFF + data_size, m->data + data_size,
		     m->area - data_size) == 0);
out:
	free(before);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	/* Corrupt rings are the point; their warnings would drown the output. */
	lp_log_init("fuzz_ring", LP_LOG_ERROR);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
	struct mapping m;

	if (map_input(&m, in, n))
		return 0;
	consume_all(&m);
	free(m.mem);

	if (map_input(&m, in, n))
		return 0;
	produce_some(&m, in + (n > 192 ? 192 : n), n > 192 ? n - 192 : 0);
	free(m.mem);
	return 0;
}
