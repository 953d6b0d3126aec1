// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/parse.h"

int lp_parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	uint64_t v = 0;
	unsigned shift = 0;
	const char *u;

	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	for (; isdigit((unsigned char)*s); s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (*s) {
		u = strchr(units, toupper((unsigned char)*s));
		if (!u)
			return -EINVAL;
		shift = 10 * (unsigned)(u - units + 1);
		s++;
		if (*s == 'i' && s[1] == 'B')
			s += 2;
		else if (*s == 'B')
			s++;
		if (*s)
			return -EINVAL;
	}
	if (shift && v > UINT64_MAX >> shift)
		return -EINVAL;
	*out = v << shift;
	return 0;
}

int lp_parse_uint(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}
