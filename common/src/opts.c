// SPDX-License-Identifier: MIT
#include <errno.h>

#include "lowprof/log.h"
#include "lowprof/opts.h"

int lp_opts_check(const void *opts, size_t sz, size_t known_sz, size_t min_sz, const char *name)
{
	const unsigned char *p = opts;

	if (!opts)
		return 0;
	if (min_sz < sizeof(size_t))
		min_sz = sizeof(size_t); /* at least the sz field itself */
	if (sz < min_sz) {
		lp_err("%s: size %zu is too small (at least %zu)", name, sz, min_sz);
		return -EINVAL;
	}
	for (size_t i = known_sz; i < sz; i++) {
		if (p[i]) {
			lp_err("%s: size %zu: byte %zu is not zero, beyond the %zu bytes this "
			       "version knows (an option of a newer caller?)",
			       name, sz, i, known_sz);
			return -EINVAL;
		}
	}
	return 0;
}
