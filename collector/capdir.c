// SPDX-License-Identifier: MIT
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "capdir.h"
#include "lowprof/files.h"
#include "lowprof/spoolname.h"

#define PREFIX	   "capture-"
#define SUFFIX	   ".lpcap"
#define TMP_SUFFIX ".tmp"
/* "YYYYmmddTHHMMSSZ" */
#define WHEN_LEN 16

struct coll_capdir {
	int dirfd;
	uint64_t budget;
	uint64_t next_seq;
	struct coll_capdir_stats st;
};

struct capfile {
	char name[COLL_CAPDIR_NAME_MAX];
	uint64_t seq;
	uint64_t size;
};

bool coll_capdir_parse_name(const char *name, uint64_t *seq)
{
	size_t n = strnlen(name, COLL_CAPDIR_NAME_MAX), pl = strlen(PREFIX), sl = strlen(SUFFIX);
	int64_t when;

	/* capture-, TIME-SEQ, .lpcap */
	return n < COLL_CAPDIR_NAME_MAX && n > pl + sl && !strncmp(name, PREFIX, pl) &&
	       !strcmp(name + n - sl, SUFFIX) &&
	       !lp_name_time_seq(name + pl, n - pl - sl, &when, seq);
}

/* A temporary file a window's writer makes: "." + a window's name + ".tmp". */
static bool is_tmp_name(const char *name)
{
	size_t n = strnlen(name, COLL_CAPDIR_NAME_MAX + 8), tl = strlen(TMP_SUFFIX);
	char base[COLL_CAPDIR_NAME_MAX];
	uint64_t seq;

	if (name[0] != '.' || n < 1 + tl || n - 1 - tl >= sizeof(base) ||
	    strcmp(name + n - tl, TMP_SUFFIX))
		return false;
	memcpy(base, name + 1, n - 1 - tl);
	base[n - 1 - tl] = '\0';
	return coll_capdir_parse_name(base, &seq);
}

/* A regular file of ours at name (never followed). */
static bool ours(int dirfd, const char *name, struct stat *st)
{
	return !fstatat(dirfd, name, st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st->st_mode) &&
	       st->st_uid == geteuid();
}

static int cmp_file(const void *a, const void *b)
{
	const struct capfile *x = a, *y = b;
	/* the time part first, then the number (which may grow past six digits) */
	int c = strncmp(x->name + strlen(PREFIX), y->name + strlen(PREFIX), WHEN_LEN);

	return c ? c : x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * The complete files of ours, oldest first: *n of them, their bytes in
 * *total. With clean_tmp, temporary files (a killed writer's) are removed.
 * NULL with *n = 0 when there are none or on errors (nothing is removed
 * then).
 */
static struct capfile *scan(struct coll_capdir *d, size_t *n, uint64_t *total, bool clean_tmp)
{
	struct capfile *v = NULL;
	size_t cap = 0;
	struct dirent *e;
	int fd = dup(d->dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;

	*n = 0;
	*total = 0;
	if (!dir) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	rewinddir(dir); /* the dup shares the offset of earlier scans */
	while ((e = readdir(dir))) {
		struct stat st;
		uint64_t seq;

		if (clean_tmp && is_tmp_name(e->d_name) && ours(d->dirfd, e->d_name, &st)) {
			if (!unlinkat(d->dirfd, e->d_name, 0))
				d->st.tmp_cleaned++;
			continue;
		}
		if (!coll_capdir_parse_name(e->d_name, &seq) || !ours(d->dirfd, e->d_name, &st))
			continue;
		if (*n == cap) {
			size_t ncap = cap ? cap * 2 : 64;
			struct capfile *nv = realloc(v, ncap * sizeof(*v));

			if (!nv) {
				free(v);
				closedir(dir);
				*n = 0;
				*total = 0;
				return NULL;
			}
			v = nv;
			cap = ncap;
		}
		snprintf(v[*n].name, sizeof(v[*n].name), "%s", e->d_name);
		v[*n].seq = seq;
		v[*n].size = (uint64_t)st.st_size;
		*total += (uint64_t)st.st_size;
		(*n)++;
	}
	closedir(dir);
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_file);
	return v;
}

int coll_capdir__new(const char *dir, uint64_t budget, struct coll_capdir **out)
{
	struct coll_capdir *d;
	struct capfile *v;
	struct stat st;
	uint64_t total;
	size_t n;
	int err;

	*out = NULL;
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->budget = budget ? budget : COLL_CAPDIR_DEFAULT_BYTES;
	d->dirfd = lp_open_output_dir(dir, LP_OUTPUT_MODE);
	if (d->dirfd < 0) {
		err = d->dirfd;
		goto err_out;
	}
	if (fstat(d->dirfd, &st)) {
		err = -errno;
		goto err_out;
	}
	/* the budget removes files here: nobody else may put or replace any */
	if ((st.st_uid != 0 && st.st_uid != geteuid()) ||
	    ((st.st_mode & (S_IWGRP | S_IWOTH)) && !(st.st_mode & S_ISVTX))) {
		err = -EPERM;
		goto err_out;
	}
	v = scan(d, &n, &total, true);
	for (size_t i = 0; i < n; i++)
		if (v[i].seq >= d->next_seq)
			d->next_seq = v[i].seq + 1;
	free(v);
	*out = d;
	return 0;
err_out:
	coll_capdir__free(d);
	return err;
}

/* A window's temporary name: "." + its name + ".tmp". */
static void tmp_name(char *tmp, const char *name)
{
	snprintf(tmp, COLL_CAPDIR_NAME_MAX + 8, ".%s" TMP_SUFFIX, name);
}

int coll_capdir__create(struct coll_capdir *d, int64_t start_real_ns,
			char name[COLL_CAPDIR_NAME_MAX])
{
	time_t t = (time_t)(start_real_ns > 0 ? start_real_ns / 1000000000 : 0);
	char when[32] = "19700101T000000Z", tmp[COLL_CAPDIR_NAME_MAX + 8];
	struct tm tm;
	int fd;

	if (gmtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(name, COLL_CAPDIR_NAME_MAX, PREFIX "%s-%06" PRIu64 SUFFIX, when, d->next_seq);
	tmp_name(tmp, name);
	fd = lp_open_output_file(d->dirfd, tmp, LP_OUTPUT_MODE);
	if (fd < 0)
		return fd;
	d->next_seq++;
	return fd;
}

/* Removes the oldest complete files while they are over the budget, never the newest. */
static void apply_budget(struct coll_capdir *d)
{
	uint64_t total;
	size_t n, i;
	struct capfile *v = scan(d, &n, &total, false);

	for (i = 0; i + 1 < n && total > d->budget; i++) {
		if (unlinkat(d->dirfd, v[i].name, 0))
			continue;
		total -= v[i].size;
		d->st.removed++;
		d->st.removed_bytes += v[i].size;
	}
	d->st.bytes = total;
	free(v);
}

int coll_capdir__publish(struct coll_capdir *d, const char *name, bool ok)
{
	char tmp[COLL_CAPDIR_NAME_MAX + 8];
	int err = 0;

	tmp_name(tmp, name);
	if (ok && renameat2(d->dirfd, tmp, d->dirfd, name, RENAME_NOREPLACE))
		err = -errno;
	if (!ok || err)
		unlinkat(d->dirfd, tmp, 0);
	if (!err && ok)
		d->st.files++;
	apply_budget(d);
	return err;
}

void coll_capdir__stats(const struct coll_capdir *d, struct coll_capdir_stats *st)
{
	*st = d->st;
}

void coll_capdir__free(struct coll_capdir *d)
{
	if (!d)
		return;
	if (d->dirfd >= 0)
		close(d->dirfd);
	free(d);
}
