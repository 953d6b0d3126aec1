// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>

#include "lowprof/grow.h"

int lp_grow(void **p, size_t *cap, size_t need, size_t elem, size_t first, size_t max)
{
	size_t ncap;
	void *np;

	if (need <= *cap)
		return 0;
	if (need > max)
		return -E2BIG;
	ncap = *cap ? *cap : first ? first : 1;
	while (ncap < need)
		ncap = ncap > SIZE_MAX / 2 ? SIZE_MAX : ncap * 2;
	if (ncap > max)
		ncap = max;
	if (elem && ncap > SIZE_MAX / elem)
		return -ENOMEM;
	np = realloc(*p, ncap * elem ? ncap * elem : 1);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

int lp_grow32(void **p, uint32_t *cap, uint32_t need, size_t elem, uint32_t first)
{
	size_t c = *cap;
	int err = lp_grow(p, &c, need, elem, first, UINT32_MAX);

	if (!err)
		*cap = (uint32_t)c;
	return err;
}
