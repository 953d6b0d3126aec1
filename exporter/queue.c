// SPDX-License-Identifier: MIT
/*
 * The spool seen from the exporter (exporter.h): finished windows in the
 * order they are delivered, opened safely, and set aside when a
 * destination refuses them. The spool's writer (symbolizer/spool.c) makes
 * files and removes the oldest over its budget; the exporter removes what
 * every destination accepted. Both may remove a file: a name that vanished
 * is not an error.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "exporter.h"

int exp_win_cmp(const struct exp_win *a, const struct exp_win *b)
{
	if (a->seq != b->seq)
		return a->seq < b->seq ? -1 : 1;
	if (a->kind != b->kind)
		return a->kind < b->kind ? -1 : 1;
	if (a->nshards != b->nshards)
		return a->nshards < b->nshards ? -1 : 1;
	if (a->shard != b->shard)
		return a->shard < b->shard ? -1 : 1;
	return strcmp(a->name, b->name);
}

static int cmp(const void *a, const void *b)
{
	return exp_win_cmp(a, b);
}

/* dirfd's entries as a stream of its own (the caller's descriptor stays open) */
static DIR *open_listing(int dirfd)
{
	int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;

	if (!d && dfd >= 0)
		close(dfd);
	return d;
}

int exp_queue_scan(int dirfd, struct exp_win **out, size_t *n, uint64_t *bytes)
{
	struct exp_win *v = NULL;
	size_t cap = 0;
	DIR *d = open_listing(dirfd);
	struct dirent *e;
	int err = 0;

	*out = NULL;
	*n = 0;
	*bytes = 0;
	if (!d)
		return -errno;
	while ((e = readdir(d))) {
		struct exp_win w = {0};
		struct lp_spool_name pn;
		struct stat st;

		if (lp_spool_parse(e->d_name, &pn) ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		if (*n == cap) {
			size_t c = cap ? 2 * cap : 64;
			struct exp_win *g = realloc(v, c * sizeof(*v));

			if (!g) {
				err = -ENOMEM;
				break;
			}
			v = g;
			cap = c;
		}
		memcpy(w.name, e->d_name, strlen(e->d_name) + 1);
		w.kind = pn.kind;
		w.seq = pn.seq;
		w.start_s = pn.start_s;
		w.shard = pn.shard;
		w.nshards = pn.nshards;
		w.size = (uint64_t)st.st_size;
		*bytes += w.size;
		v[(*n)++] = w;
	}
	closedir(d);
	if (err) {
		free(v);
		*n = 0;
		return err;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp);
	*out = v;
	return 0;
}

int exp_queue_open(int dirfd, const char *name)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

int exp_queue_set_aside(int dirfd, int rejfd, const char *name, uint32_t keep)
{
	struct exp_win *v = NULL;
	uint64_t bytes;
	size_t n = 0;

	if (renameat(dirfd, name, rejfd, name))
		return -errno;
	/* the trim waits for the next one if the listing fails */
	if (exp_queue_scan(rejfd, &v, &n, &bytes))
		return 0;
	for (size_t i = 0; n > keep && i < n - keep; i++)
		unlinkat(rejfd, v[i].name, 0);
	free(v);
	return 0;
}
