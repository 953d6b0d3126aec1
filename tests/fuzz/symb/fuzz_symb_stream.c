// SPDX-License-Identifier: MIT
/*
 * The symbolizer's ingest on an arbitrary record stream: the input is a
 * sequence of [u32 little-endian length][record bytes] (so records up to
 * LPS_MAX_RECORD are reachable); every record goes through symb_state__feed,
 * then the on- and off-CPU profiles are built offline (the stream names the
 * files: the fuzzer must not make us open them) and all three writers and
 * the summary run (to /dev/null). A length whose top bit is set first ends
 * a service window (its profile built, symb_state__new_window: the dead
 * processes and objects dropped). Ingest, aggregation and the writers must
 * survive any stream; they are compiled into the target so they are
 * instrumented.
 */
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "build.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* ignoring off-CPU samples is the trivial path */
	struct symb_state_opts so = {
		.sz = sizeof(so), .offline = true, .off_cpu = true, .files_fd = -1};
	static int devnull = -1;
	struct symb_built *b[SYMB_KIND__COUNT];
	struct symb_state *s;

	if (devnull < 0) {
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		lp_log_init("fuzz", LP_LOG_ERROR);
	}
	s = symb_state__new(&so);
	if (!s)
		return 0;
	while (size >= 4) {
		size_t len = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 |
			     (size_t)(data[3] & 0x7f) << 24;
		uint8_t *rec;

		/* the length's top bit: a service window ends before this record */
		if (data[3] & 0x80) {
			struct symb_built *w = symb_build(s, SYMB_KIND_CPU);

			if (w)
				lpw_write_pprof(symb_built_profile(w), devnull);
			symb_built_free(w);
			symb_state__new_window(s);
		}
		data += 4;
		size -= 4;
		if (len > size)
			len = size;
		rec = malloc(len ? len : 1); /* exact size: ASan sees overreads */
		memcpy(rec, data, len);
		int err = symb_state__feed(s, rec, len);

		free(rec);
		data += len;
		size -= len;
		if (err)
			break;
	}
	for (int k = 0; k < SYMB_KIND__COUNT; k++) {
		b[k] = symb_build(s, (enum symb_kind)k);
		if (b[k]) {
			const struct lpw_profile *p = symb_built_profile(b[k]);

			lpw_write_pprof(p, devnull);
			lpw_write_folded(p, devnull);
			lpw_write_flamegraph(p, devnull);
		}
	}
	symb_print_summary(s, b[SYMB_KIND_CPU], b[SYMB_KIND_OFFCPU], true, devnull);
	for (int k = 0; k < SYMB_KIND__COUNT; k++)
		symb_built_free(b[k]);
	symb_state__free(s);
	return 0;
}
