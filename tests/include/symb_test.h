/* SPDX-License-Identifier: MIT */
/*
 * For tests and benchmarks of the symbolizer's loading path (objects/): an
 * object table that knows one file, mapped by this process, as the ring
 * would tell it. Header-only, so each target compiles it with its own
 * flags.
 */
#ifndef LOWPROF_TESTS_SYMB_TEST_H
#define LOWPROF_TESTS_SYMB_TEST_H

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lowprof/schema.h"
#include "objects.h"

/*
 * A new table in *t with cache c (may be NULL) and debug_dirs (may be NULL)
 * that knows one mapping of path by this process: its object 0. Returns 0
 * or a negative errno; *t is to be freed (symb_objects__free) either way.
 */
static inline int symb_test_objects_with(struct symb_objects **t, const char *path,
					 struct symb_cache *c, const char *const *debug_dirs)
{
	struct symb_objects_opts o = {
		.sz = sizeof(o), .seed = 1, .cache = c, .debug_dirs = debug_dirs, .files_fd = -1};
	struct lps_mapping m;
	struct stat st;
	uint32_t idx;

	*t = symb_objects__new(&o);
	if (!*t)
		return -errno;
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
	if (symb_objects__intern(*t, &m, (uint32_t)getpid(), &idx) || idx != 0)
		return -EINVAL;
	return 0;
}

#endif /* LOWPROF_TESTS_SYMB_TEST_H */
