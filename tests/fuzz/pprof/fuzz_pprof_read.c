// SPDX-License-Identifier: MIT
/*
 * The pprof reader on arbitrary bytes. A profile it accepts must be a valid
 * model: every index in range, every string readable (ASan sees any pointer
 * outside what the reader owns). It is then written with lpw_write_pprof,
 * which must succeed, read again and written again: the two writes give the
 * same bytes, so reading loses or invents nothing the writer puts out.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lowprof/pprof_read.h"

static volatile size_t sink;

static void touch(const char *s)
{
	if (s)
		sink += strlen(s);
}

static void check_model(const struct lpw_profile *p)
{
	for (size_t i = 0; i < p->nmappings; i++) {
		if (!p->mappings[i].path)
			abort();
		touch(p->mappings[i].build_id);
	}
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		if ((l->mapping != LPW_NO_MAPPING && l->mapping >= p->nmappings) || !l->function ||
		    (l->nlines && !l->lines))
			abort();
		touch(l->function);
		for (uint32_t k = 0; k < l->nlines; k++) {
			if (!l->lines[k].function)
				abort();
			touch(l->lines[k].function);
			touch(l->lines[k].file);
		}
	}
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];

		if (!st->comm)
			abort();
		touch(st->exe);
		touch(st->cgroup);
		touch(st->container_id);
		touch(st->pod_uid);
		for (uint32_t j = 0; j < st->nlocs; j++)
			if (st->locs[j] >= p->nlocations)
				abort();
	}
	for (size_t i = 0; i < p->ncomments; i++)
		touch(p->comments[i]);
	if (p->folded_value < 0 || p->folded_value > 1 || p->duration_nanos < 0)
		abort();
}

/* fd's bytes, from 0: *len of them (free it). */
static uint8_t *contents(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *p = malloc(n > 0 ? (size_t)n : 1);

	if (n < 0 || !p || pread(fd, p, (size_t)n, 0) != n)
		abort();
	*len = (size_t)n;
	return p;
}

/* Writes p into fd (emptied first) and leaves its offset at 0. */
static void rewrite(const struct lpw_profile *p, int fd)
{
	if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) || lpw_write_pprof(p, fd) ||
	    lseek(fd, 0, SEEK_SET))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* small caps: the fuzzer's memory limit, not the tool's */
	struct lpw_read_opts o = {.sz = sizeof(o), .max_bytes = 4 << 20, .max_mem = 64 << 20};
	static int fd = -1, fd2 = -1;
	struct lpw_read *r = NULL, *r2 = NULL;
	size_t len1, len2;
	uint8_t *w1, *w2;
	char why[256];

	if (fd < 0) {
		fd = memfd_create("fuzz-pprof-in", 0);
		fd2 = memfd_create("fuzz-pprof-out", 0);
		if (fd < 0 || fd2 < 0)
			abort();
	}
	if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size ||
	    lseek(fd, 0, SEEK_SET))
		abort();
	if (lpw_read_pprof(fd, &o, &r, why, sizeof(why))) {
		if (r || !why[0])
			abort();
		return 0;
	}
	check_model(lpw_read__profile(r));
	rewrite(lpw_read__profile(r), fd2);
	w1 = contents(fd2, &len1);
	lseek(fd2, 0, SEEK_SET);
	if (lpw_read_pprof(fd2, &o, &r2, why, sizeof(why)))
		abort();
	rewrite(lpw_read__profile(r2), fd2);
	w2 = contents(fd2, &len2);
	if (len1 != len2 || memcmp(w1, w2, len1))
		abort();
	free(w1);
	free(w2);
	lpw_read__free(r);
	lpw_read__free(r2);
	return 0;
}
