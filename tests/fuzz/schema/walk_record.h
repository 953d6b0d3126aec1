/* SPDX-License-Identifier: MIT */
/*
 * Decodes one record and reads every byte of it the symbolizer would:
 * strings, frames, each mapping and kernel symbol. Shared by the record
 * decoder's fuzz target and the capture reader's. sink keeps the reads.
 */
#ifndef LOWPROF_FUZZ_WALK_RECORD_H
#define LOWPROF_FUZZ_WALK_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "lowprof/schema.h"

static volatile uint64_t walk_sink;

static void walk_touch(struct lps_str s)
{
	for (uint32_t i = 0; i < s.len; i++)
		walk_sink += (uint8_t)s.ptr[i];
}

static void walk_record(const uint8_t *buf, size_t len)
{
	struct lps_record r;
	uint32_t pid;
	int peek = lps_peek_sample_pid(buf, len, &pid);

	if (lps_decode(buf, len, &r))
		return;
	/* a sample that decodes is one the peek saw, with the same pid */
	if (r.type == LPS_SAMPLE && (peek || pid != r.sample.pid))
		abort();
	switch (r.type) {
	case LPS_SAMPLE:
		walk_touch(r.sample.comm);
		for (uint32_t i = 0; i < r.sample.nkstack; i++)
			walk_sink += lps_frame(r.sample.kstack, i);
		for (uint32_t i = 0; i < r.sample.nustack; i++)
			walk_sink += lps_frame(r.sample.ustack, i);
		break;
	case LPS_MAPS: {
		struct lps_mapping m;

		while (lps_maps_next(&r.maps, &m) == 1)
			walk_touch(m.path), walk_touch(m.build_id);
		break;
	}
	case LPS_KSYMS: {
		struct lps_ksym k;

		while (lps_ksyms_next(&r.ksyms, &k) == 1)
			walk_touch(k.name), walk_touch(k.module);
		break;
	}
	case LPS_META: {
		uint32_t pid;

		walk_touch(r.meta.hostname);
		walk_touch(r.meta.kernel_base);
		for (uint32_t i = 0; i < r.meta.npids; i++)
			if (lps_meta_pid(&r.meta, i, &pid) == 0)
				walk_sink += pid;
		for (uint32_t i = 0; i < r.meta.nfallbacks; i++) {
			struct lps_str f;

			if (lps_meta_fallback(&r.meta, i, &f) == 0)
				walk_touch(f);
		}
		break;
	}
	case LPS_BUILDID:
		walk_touch(r.buildid.build_id);
		walk_touch(r.buildid.source);
		break;
	case LPS_CGROUP:
		walk_touch(r.cgroup.path);
		break;
	case LPS_PROC:
		walk_touch(r.proc.exe);
		break;
	case LPS_PERFMAP:
		walk_touch(r.perfmap.data);
		walk_sink += r.perfmap.offset + r.perfmap.data.len;
		break;
	case LPS_VDSO:
		walk_touch(r.vdso.image);
		break;
	case LPS_MMAP:
		walk_touch(r.mmap.map.path), walk_touch(r.mmap.map.build_id);
		break;
	default:
		break;
	}
}

#endif /* LOWPROF_FUZZ_WALK_RECORD_H */
