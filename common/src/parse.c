// SPDX-License-Identifier: MIT
#include <ctype.h>
#include <errno.h>
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
