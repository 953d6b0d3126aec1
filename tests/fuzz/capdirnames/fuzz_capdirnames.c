// SPDX-License-Identifier: MIT
/*
 * coll_capdir_parse_name on arbitrary bytes (up to the first NUL): a name
 * it accepts must be exactly the one the collector would give that window
 * (coll_capdir__create's format, the time part as it is); anything else
 * aborts.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capdir.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char s[128], name[128];
	size_t n = size < sizeof(s) - 1 ? size : sizeof(s) - 1;
	uint64_t seq;

	memcpy(s, data, n);
	s[n] = '\0';
	if (!coll_capdir_parse_name(s, &seq))
		return 0;
	/* "capture-" + 16 characters of time, as they are */
	snprintf(name, sizeof(name), "capture-%.16s-%06" PRIu64 ".lpcap", s + 8, seq);
	if (strcmp(name, s))
		abort();
	return 0;
}
