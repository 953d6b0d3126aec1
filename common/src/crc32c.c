// SPDX-License-Identifier: MIT
#include <pthread.h>
#include <string.h>
#if defined(__x86_64__)
#include <sys/platform/x86.h>
#endif

#include "lowprof/crc32c.h"

static uint32_t crc_tab[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void)
{
	uint32_t i, k, c;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82f63b78 : c >> 1;
		crc_tab[i] = c;
	}
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t n)
{
	pthread_once(&crc_once, crc_init);
	while (n--)
		crc = crc_tab[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
/*
 * One crc32 instruction's result is the next one's input: a single stream
 * runs at its latency, 8 bytes per 3 cycles, a third of its throughput. So
 * long buffers are taken in three lanes of CRC_LONG (then CRC_SHORT) bytes
 * at once, each lane's register started at 0, and joined by linearity:
 * crc(c, A B) = shift(crc(c, A), |B|) ^ crc(0, B), where shift(x, len) is
 * x run through len zero bytes, a linear map of 32 bits that a table per
 * byte of x gives (Mark Adler's crc32c.c does the same).
 */
#define CRC_LONG  4096u
#define CRC_SHORT 256u

static uint32_t crc_long[4][256], crc_short[4][256];
static pthread_once_t crc_shift_once = PTHREAD_ONCE_INIT;

/* x run through len zero bytes (len a multiple of 8), no pre/post xor */
__attribute__((target("sse4.2"))) static uint32_t crc_zeros(uint32_t x, size_t len)
{
	uint64_t c = x;

	for (; len; len -= 8)
		c = __builtin_ia32_crc32di(c, 0);
	return (uint32_t)c;
}

static void crc_shift_table(uint32_t t[4][256], size_t len)
{
	uint32_t img[32];

	for (int i = 0; i < 32; i++)
		img[i] = crc_zeros(1u << i, len);
	for (int k = 0; k < 4; k++)
		for (int b = 0; b < 256; b++) {
			uint32_t v = 0;

			for (int j = 0; j < 8; j++)
				if (b >> j & 1)
					v ^= img[8 * k + j];
			t[k][b] = v;
		}
}

static void crc_shift_init(void)
{
	crc_shift_table(crc_long, CRC_LONG);
	crc_shift_table(crc_short, CRC_SHORT);
}

static uint32_t crc_shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][c >> 8 & 0xff] ^ t[2][c >> 16 & 0xff] ^ t[3][c >> 24];
}

/* n bytes in three lanes of len each, from p; the crc of p[0, 3 len) */
__attribute__((target("sse4.2"))) static uint32_t crc_lanes(uint32_t crc, const uint8_t *p,
							    size_t len, const uint32_t t[4][256])
{
	uint64_t c0 = crc, c1 = 0, c2 = 0, w0, w1, w2;

	for (const uint8_t *e = p + len; p < e; p += 8) {
		memcpy(&w0, p, 8);
		memcpy(&w1, p + len, 8);
		memcpy(&w2, p + 2 * len, 8);
		c0 = __builtin_ia32_crc32di(c0, w0);
		c1 = __builtin_ia32_crc32di(c1, w1);
		c2 = __builtin_ia32_crc32di(c2, w2);
	}
	crc = crc_shift(t, (uint32_t)c0) ^ (uint32_t)c1;
	return crc_shift(t, crc) ^ (uint32_t)c2;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c, w;

	if (n >= 3 * CRC_SHORT) {
		pthread_once(&crc_shift_once, crc_shift_init);
		for (; n >= 3 * CRC_LONG; n -= 3 * CRC_LONG, p += 3 * CRC_LONG)
			crc = crc_lanes(crc, p, CRC_LONG, crc_long);
		for (; n >= 3 * CRC_SHORT; n -= 3 * CRC_SHORT, p += 3 * CRC_SHORT)
			crc = crc_lanes(crc, p, CRC_SHORT, crc_short);
	}
	for (c = crc; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		c = __builtin_ia32_crc32di(c, w);
	}
	crc = (uint32_t)c;
	while (n--)
		crc = __builtin_ia32_crc32qi(crc, *p++);
	return crc;
}
#endif

uint32_t lp_crc32c(const void *buf, size_t n)
{
	const uint8_t *p = n ? buf : NULL;

#if defined(__x86_64__)
	/*
	 * glibc's record of the CPU (it ran cpuid at start-up anyway), not
	 * __builtin_cpu_supports: that links compiler-rt's constructor, whose
	 * own cpuid calls cost ~0.2 ms of every process start in a VM, where
	 * cpuid traps to the hypervisor.
	 */
	if (CPU_FEATURE_ACTIVE(SSE4_2))
		return ~crc_hw(~0u, p, n);
#endif
	return ~crc_sw(~0u, p, n);
}
