// SPDX-License-Identifier: MIT
/* Record decoder on arbitrary bytes: decode, then walk every nested entry. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/schema.h"

static volatile uint64_t sink;

static void touch(struct lps_str s)
{
	for (uint32_t i = 0; i < s.len; i++)
		sink += (uint8_t)s.ptr[i];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy so ASan catches any read past the record */
	uint8_t *copy = malloc(size ? size : 1);
	struct lps_record r;

	memcpy(copy, data, size);
	if (lps_decode(copy, size, &r) == 0) {
		switch (r.type) {
		case LPS_SAMPLE:
			touch(r.sample.comm);
			for (uint32_t i = 0; i < r.sample.nkstack; i++)
				sink += lps_frame(r.sample.kstack, i);
			for (uint32_t i = 0; i < r.sample.nustack; i++)
				sink += lps_frame(r.sample.ustack, i);
			break;
		case LPS_MAPS: {
			struct lps_mapping m;

			while (lps_maps_next(&r.maps, &m) == 1)
				touch(m.path), touch(m.build_id);
			break;
		}
		case LPS_KSYMS: {
			struct lps_ksym k;

			while (lps_ksyms_next(&r.ksyms, &k) == 1)
				touch(k.name), touch(k.module);
			break;
		}
		case LPS_META: {
			uint32_t pid;

			touch(r.meta.hostname);
			for (uint32_t i = 0; i < r.meta.npids; i++)
				if (lps_meta_pid(&r.meta, i, &pid) == 0)
					sink += pid;
			break;
		}
		default:
			break;
		}
	}
	free(copy);
	return 0;
}
