/* SPDX-License-Identifier: MIT */
/*
 * For tests and benchmarks of the symbolizer's loading path (objects.c):
 * a state that knows one file, mapped by this process, as the ring would
 * tell it. Header-only, so each target compiles it with its own flags.
 */
#ifndef LOWPROF_TESTS_SYMB_TEST_H
#define LOWPROF_TESTS_SYMB_TEST_H

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lowprof/schema.h"
#include "symb_int.h"

/*
 * Inits s with cache c (may be NULL) and debug_dirs (may be NULL), and
 * feeds one mapping of path by this process: its objs[0]. Returns 0 or a
 * negative errno; s is to be freed (symb_state_free) either way.
 */
static inline int symb_test_state_with(struct symb_state *s, const char *path, struct symb_cache *c,
				       const char *const *debug_dirs)
{
	uint8_t buf[8192];
	struct lps_enc e;
	struct stat st;
	struct lps_mapping m;

	symb_state_init(s);
	s->cache = c;
	s->debug_dirs = debug_dirs;
	if (stat(path, &st))
		return -errno;
	m = (struct lps_mapping){.start = 0x10000000,
				 .end = 0x10000000 + 4096,
				 .offset = 0,
				 .dev_major = major(st.st_dev),
				 .dev_minor = minor(st.st_dev),
				 .inode = st.st_ino,
				 .prot = LPS_PROT_R | LPS_PROT_X,
				 .path = {path, (uint32_t)strlen(path)}};
	lps_enc_init_fixed(&e, buf, sizeof(buf));
	lps_enc_maps_begin(&e, 1, (uint32_t)getpid(), false, 1);
	lps_enc_mapping(&e, &m);
	if (lps_enc_len(&e) < 0 || symb_state_feed(s, buf, (size_t)lps_enc_len(&e)) ||
	    s->nobjs != 1)
		return -EINVAL;
	return 0;
}

#endif /* LOWPROF_TESTS_SYMB_TEST_H */
