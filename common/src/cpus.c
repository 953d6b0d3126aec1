// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "lowprof/cpus.h"
#include "lowprof/ring.h"

static int parse_num(const char **p, const char *end, uint32_t *v)
{
	uint64_t x = 0;
	const char *s = *p;

	if (s >= end || *s < '0' || *s > '9')
		return -EBADMSG;
	while (s < end && *s >= '0' && *s <= '9') {
		x = x * 10 + (uint64_t)(*s - '0');
		if (x >= LP_MAX_CPUS)
			return -EBADMSG;
		s++;
	}
	*p = s;
	*v = (uint32_t)x;
	return 0;
}

int lp_parse_cpulist(const char *buf, size_t len, uint32_t *cpus, size_t max)
{
	const char *p = buf, *end = buf + len;
	size_t n = 0;
	bool any = false;

	/* trailing newline / NULs are allowed; nothing else after the list */
	while (end > p && (end[-1] == '\n' || end[-1] == '\0'))
		end--;
	while (p < end) {
		uint32_t lo, hi;

		if (parse_num(&p, end, &lo))
			return -EBADMSG;
		hi = lo;
		if (p < end && *p == '-') {
			p++;
			if (parse_num(&p, end, &hi) || hi < lo)
				return -EBADMSG;
		}
		if (any && n > 0 && lo <= cpus[n - 1])
			return -EBADMSG;
		for (uint32_t c = lo; c <= hi; c++) {
			if (n >= max)
				return -EBADMSG;
			cpus[n++] = c;
		}
		any = true;
		if (p < end) {
			if (*p != ',')
				return -EBADMSG;
			p++;
			if (p == end)
				return -EBADMSG;
		}
	}
	return any ? (int)n : -EBADMSG;
}

int lp_online_cpus(uint32_t *cpus, size_t max)
{
	char buf[4096];
	ssize_t n;
	int fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf));
	if (n < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	close(fd);
	return lp_parse_cpulist(buf, (size_t)n, cpus, max);
}

uint64_t lp_roundup_pow2(uint64_t v)
{
	uint64_t p = 1;

	if (v > (1ull << 63))
		return 0; /* not representable */
	while (p < v)
		p <<= 1;
	return p;
}

uint64_t lp_shm_ring_size(uint32_t online_cpus, uint32_t freq_hz, uint32_t max_record)
{
	uint64_t want = (uint64_t)online_cpus * freq_hz * LP_SHM_RING_LAG_S * max_record /
			LP_SHM_RING_RECORD_DIV;

	if (want < LP_SHM_RING_MIN)
		want = LP_SHM_RING_MIN;
	/* the memory budget (a power of two: rounding keeps it) */
	if (want > LP_SHM_RING_BUDGET)
		want = LP_SHM_RING_BUDGET;
	return lp_roundup_pow2(want);
}

uint64_t lp_shm_ring_share(uint64_t total, uint32_t n, uint64_t min)
{
	uint64_t want = n > 1 ? total / n : total, size = min;

	if (n <= 1)
		return total;
	while (size * 2 <= want && size * 2 <= LP_RING_MAX_DATA)
		size *= 2;
	return size;
}
