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
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t crc, const uint8_t *p, size_t n)
{
	uint64_t c = crc, w;

	for (; n >= 8; n -= 8, p += 8) {
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
