// SPDX-License-Identifier: MIT
/*
 * The cgroup table (cgroups.h): an open-addressing hash of id -> path,
 * filled by walking the cgroup v2 hierarchy with openat (no path is ever
 * resolved through a symlink; cgroupfs has none).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroups.h"
#include "lowprof/clock.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "lowprof/schema.h"

#define WALK_MIN_NS    1000000000ull /* a walk at most once a second */
#define WALK_MAX_DEPTH 64

struct cg_entry {
	uint64_t id; /* 0: empty slot */
	char *path;  /* NULL: a walk did not find it */
	uint32_t len;
	uint64_t sent_ns; /* 0: never sent */
};

struct coll_cgroups {
	char root[64]; /* "" without a cgroup v2 hierarchy */
	struct cg_entry *slots;
	uint32_t cap, count;
	uint64_t last_walk_ns;
	bool walked;	       /* at least once */
	struct cg_entry *last; /* of the last lookup: most samples repeat it */
	struct coll_cgroups_stats st;
};

static int table_init(struct coll_cgroups *t, uint32_t cap)
{
	t->slots = calloc(cap, sizeof(*t->slots));
	if (!t->slots)
		return -ENOMEM;
	t->cap = cap;
	t->count = 0;
	t->last = NULL;
	return 0;
}

static void table_clear(struct coll_cgroups *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		free(t->slots[i].path);
	memset(t->slots, 0, (size_t)t->cap * sizeof(*t->slots));
	t->count = 0;
	t->last = NULL;
}

struct coll_cgroups *coll_cgroups__new(void)
{
	struct coll_cgroups *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	if (table_init(t, 256)) {
		free(t);
		errno = ENOMEM;
		return NULL;
	}
	if (lp_cgroup2_root())
		snprintf(t->root, sizeof(t->root), "%s", lp_cgroup2_root());
	return t;
}

void coll_cgroups__free(struct coll_cgroups *t)
{
	if (!t)
		return;
	table_clear(t);
	free(t->slots);
	free(t);
}

const char *coll_cgroups__root(const struct coll_cgroups *t)
{
	return t->root[0] ? t->root : NULL;
}

static struct cg_entry *slot(struct coll_cgroups *t, uint64_t id)
{
	uint32_t mask = t->cap - 1;

	for (uint32_t i = (uint32_t)((id * 0x9e3779b97f4a7c15ull) >> 32) & mask;;
	     i = (i + 1) & mask)
		if (!t->slots[i].id || t->slots[i].id == id)
			return &t->slots[i];
}

/* The table doubled (its load stays <= 1/2): 0 or -ENOMEM. */
static int grow(struct coll_cgroups *t)
{
	struct coll_cgroups n = *t;

	if (table_init(&n, t->cap * 2))
		return -ENOMEM;
	for (uint32_t i = 0; i < t->cap; i++)
		if (t->slots[i].id)
			*slot(&n, t->slots[i].id) = t->slots[i];
	n.count = t->count;
	free(t->slots);
	*t = n;
	return 0;
}

/* The entry of id, made if missing (NULL: the table is full, or no memory). */
static struct cg_entry *entry(struct coll_cgroups *t, uint64_t id)
{
	struct cg_entry *e = slot(t, id);

	if (e->id)
		return e;
	if (t->count >= COLL_CGROUPS_MAX)
		return NULL;
	if ((t->count + 1) * 2 > t->cap) {
		if (grow(t))
			return NULL;
		e = slot(t, id);
	}
	e->id = id;
	t->count++;
	return e;
}

/* Notes one directory found by the walk: 0, or -ENOSPC when the table is full. */
static int note(struct coll_cgroups *t, uint64_t id, const char *path, size_t len)
{
	struct cg_entry *e = entry(t, id);
	char *p;

	if (!e)
		return t->count >= COLL_CGROUPS_MAX ? -ENOSPC : -ENOMEM;
	if (e->path && e->len == len && memcmp(e->path, path, len) == 0)
		return 0;
	p = malloc(len + 1);
	if (!p)
		return -ENOMEM;
	memcpy(p, path, len);
	p[len] = '\0';
	free(e->path);
	e->path = p;
	e->len = (uint32_t)len;
	e->sent_ns = 0; /* a new path (a reused inode number): sent again */
	return 0;
}

/*
 * Walks the directory fd (closed here), whose path relative to the root
 * is buf[0..len) ("" for the root itself).
 */
static int walk(struct coll_cgroups *t, int fd, char *buf, size_t len, int depth)
{
	struct stat st;
	struct dirent *d;
	DIR *dir;
	int err = 0;

	if (fstat(fd, &st)) {
		close(fd);
		return 0; /* removed meanwhile */
	}
	err = note(t, (uint64_t)st.st_ino, len ? buf : "/", len ? len : 1);
	if (err || depth >= WALK_MAX_DEPTH) {
		close(fd);
		return err;
	}
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return 0;
	}
	while (!err && (d = readdir(dir)) != NULL) {
		size_t n = strlen(d->d_name);
		int sub;

		if (d->d_type != DT_DIR || !strcmp(d->d_name, ".") || !strcmp(d->d_name, ".."))
			continue;
		if (len + 1 + n > LPS_MAX_PATH)
			continue; /* too deep to send: its samples keep the id alone */
		sub = openat(dirfd(dir), d->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (sub < 0)
			continue;
		buf[len] = '/';
		memcpy(buf + len + 1, d->d_name, n);
		err = walk(t, sub, buf, len + 1 + n, depth + 1);
	}
	closedir(dir);
	return err;
}

static void walk_all(struct coll_cgroups *t, uint64_t now_ns)
{
	static char buf[LPS_MAX_PATH + 1];
	int fd, err;

	t->last_walk_ns = now_ns;
	t->walked = true;
	t->st.walks++;
	fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	err = walk(t, fd, buf, 0, 0);
	if (err == -ENOSPC) {
		/* more cgroups than the table holds: start over with what is found now */
		lp_debug("cgroups: over %u cgroups; the table starts over", COLL_CGROUPS_MAX);
		table_clear(t);
		fd = open(t->root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0)
			walk(t, fd, buf, 0, 0);
	}
}

const char *coll_cgroups__due(struct coll_cgroups *t, uint64_t id, uint64_t now_ns, uint32_t *len)
{
	struct cg_entry *e = t->last;

	if (!id || !t->root[0])
		return NULL;
	if (!e || e->id != id) {
		e = slot(t, id);
		if (!e->id || !e->path) {
			/* unknown: walk (at most once a second), then remember the answer */
			if (!t->walked ||
			    lp_clock_ns(CLOCK_MONOTONIC) >= t->last_walk_ns + WALK_MIN_NS)
				walk_all(t, lp_clock_ns(CLOCK_MONOTONIC));
			e = entry(t, id);
			if (!e)
				return NULL;
			if (!e->path) {
				t->st.unresolved++;
				return NULL;
			}
		}
		t->last = e;
	}
	if (e->sent_ns && now_ns < e->sent_ns + COLL_CGROUP_RESEND_NS)
		return NULL;
	e->sent_ns = now_ns ? now_ns : 1;
	t->st.sent++;
	*len = e->len;
	return e->path;
}

void coll_cgroups__resend_all(struct coll_cgroups *t)
{
	for (uint32_t i = 0; i < t->cap; i++)
		t->slots[i].sent_ns = 0;
}

int coll_cgroups__open_dir(const struct coll_cgroups *t, const char *arg)
{
	return lp_cgroup2_open(t->root[0] ? t->root : NULL, arg);
}

void coll_cgroups__stats(const struct coll_cgroups *t, struct coll_cgroups_stats *st)
{
	*st = t->st;
	st->known = t->count;
}
