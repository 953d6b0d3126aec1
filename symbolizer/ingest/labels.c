// SPDX-License-Identifier: MIT
/*
 * Sample labels (labels.h): interned executable paths and the cgroup
 * table, each an open-addressing hash over a dense array, seeded (the
 * stream chooses the keys).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "lowprof/grow.h"
#include "lowprof/hash.h"

struct exe_ent {
	char *path; /* NULL: a free id */
	uint32_t len;
	uint32_t refs;
};

struct cg_ent {
	struct symb_cgroup cg; /* cg.id 0: empty slot */
	char cid[65], pod[37];
	uint64_t used_ns; /* last sample (or the record) that named it */
};

struct symb_labels {
	uint64_t seed;
	/* executables: ids index exes (id - 1); exe_index holds ids by hash, 0 = empty */
	struct exe_ent *exes;
	uint32_t nexes, cap_exes, live_exes;
	uint32_t *exe_index;
	uint32_t cap_exe_index;
	uint32_t *free_ids; /* ids freed by a sweep, reused first */
	uint32_t nfree, cap_free;
	/* cgroups: open addressing by id, load <= 1/2 */
	struct cg_ent *cgs;
	uint32_t cap_cgs, ncgs;
	const struct cg_ent *last; /* of the last cgroup_used */
	uint64_t over;
};

struct symb_labels *symb_labels__new(uint64_t seed)
{
	struct symb_labels *l = calloc(1, sizeof(*l));

	if (l)
		l->seed = seed;
	return l;
}

void symb_labels__free(struct symb_labels *l)
{
	if (!l)
		return;
	for (uint32_t i = 0; i < l->nexes; i++)
		free(l->exes[i].path);
	free(l->exes);
	free(l->exe_index);
	free(l->free_ids);
	for (uint32_t i = 0; i < l->cap_cgs; i++)
		free((char *)l->cgs[i].cg.path);
	free(l->cgs);
	free(l);
}

/* ---- executables -------------------------------------------------------- */

static uint32_t exe_hash(const struct symb_labels *l, const char *p, uint32_t len)
{
	return (uint32_t)lp_hash_bytes(l->seed, p, len);
}

/* The index slot of path: its id's, or the empty one where it belongs. */
static uint32_t *exe_slot(const struct symb_labels *l, uint32_t *idx, uint32_t cap, const char *p,
			  uint32_t len)
{
	for (uint32_t i = exe_hash(l, p, len) & (cap - 1);; i = (i + 1) & (cap - 1)) {
		const struct exe_ent *e;

		if (!idx[i])
			return &idx[i];
		e = &l->exes[idx[i] - 1];
		if (e->len == len && memcmp(e->path, p, len) == 0)
			return &idx[i];
	}
}

/* The index again, sized for live ids (after a sweep or to grow): 0 or -ENOMEM. */
static int exe_reindex(struct symb_labels *l, uint32_t need)
{
	uint32_t cap = 64, *idx;

	while (need * 2 > cap)
		cap *= 2;
	idx = calloc(cap, sizeof(*idx));
	if (!idx)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->nexes; i++)
		if (l->exes[i].path)
			*exe_slot(l, idx, cap, l->exes[i].path, l->exes[i].len) = i + 1;
	free(l->exe_index);
	l->exe_index = idx;
	l->cap_exe_index = cap;
	return 0;
}

uint32_t symb_labels__exe_get(struct symb_labels *l, const char *path, uint32_t len)
{
	uint32_t *slot, id;
	char *copy;

	if (!len)
		return 0;
	if (l->cap_exe_index) {
		slot = exe_slot(l, l->exe_index, l->cap_exe_index, path, len);
		if (*slot) {
			l->exes[*slot - 1].refs++;
			return *slot;
		}
	}
	if (l->live_exes >= SYMB_LABELS_MAX) {
		l->over++;
		return 0;
	}
	if ((l->live_exes + 1) * 2 > l->cap_exe_index && exe_reindex(l, l->live_exes + 1))
		return 0;
	if (!l->nfree &&
	    lp_grow32((void **)&l->exes, &l->cap_exes, l->nexes + 1, sizeof(*l->exes), 64))
		return 0;
	copy = malloc((size_t)len + 1);
	if (!copy)
		return 0;
	memcpy(copy, path, len);
	copy[len] = '\0';
	id = l->nfree ? l->free_ids[--l->nfree] : ++l->nexes;
	l->exes[id - 1] = (struct exe_ent){copy, len, 1};
	l->live_exes++;
	*exe_slot(l, l->exe_index, l->cap_exe_index, path, len) = id;
	return id;
}

void symb_labels__exe_put(struct symb_labels *l, uint32_t id)
{
	if (id && id <= l->nexes && l->exes[id - 1].refs)
		l->exes[id - 1].refs--;
}

uint32_t symb_labels__exe_ref(struct symb_labels *l, uint32_t id)
{
	if (!id || id > l->nexes || !l->exes[id - 1].refs)
		return 0;
	l->exes[id - 1].refs++;
	return id;
}

const char *symb_labels__exe(const struct symb_labels *l, uint32_t id)
{
	return id && id <= l->nexes ? l->exes[id - 1].path : NULL;
}

/* ---- cgroups ------------------------------------------------------------ */

static struct cg_ent *cg_slot(const struct symb_labels *l, struct cg_ent *t, uint32_t cap,
			      uint64_t id)
{
	for (uint32_t i = (uint32_t)lp_mix64(id ^ l->seed) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].cg.id || t[i].cg.id == id)
			return &t[i];
}

/* A table of cap slots with the entries kept (keep, or all): 0 or -ENOMEM. */
static int cg_rehash(struct symb_labels *l, uint32_t cap, uint64_t keep_from)
{
	struct cg_ent *t = calloc(cap, sizeof(*t));
	uint32_t n = 0;

	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < l->cap_cgs; i++) {
		struct cg_ent *e = &l->cgs[i], *d;

		if (!e->cg.id)
			continue;
		if (e->used_ns < keep_from) {
			free((char *)e->cg.path);
			continue;
		}
		d = cg_slot(l, t, cap, e->cg.id);
		*d = *e;
		/* the strings point into the entry itself */
		d->cg.container_id = e->cg.container_id ? d->cid : NULL;
		d->cg.pod_uid = e->cg.pod_uid ? d->pod : NULL;
		n++;
	}
	free(l->cgs);
	l->cgs = t;
	l->cap_cgs = cap;
	l->ncgs = n;
	l->last = NULL;
	return 0;
}

int symb_labels__cgroup_set(struct symb_labels *l, uint64_t id, const char *path, uint32_t len,
			    uint64_t now_ns)
{
	struct cg_ent *e;
	char *copy;

	if (!id)
		return 0;
	e = l->cap_cgs ? cg_slot(l, l->cgs, l->cap_cgs, id) : NULL;
	if (!e || !e->cg.id) {
		if (l->ncgs >= SYMB_LABELS_MAX) {
			l->over++;
			return -ENOSPC;
		}
		if ((l->ncgs + 1) * 2 > l->cap_cgs &&
		    cg_rehash(l, l->cap_cgs ? l->cap_cgs * 2 : 64, 0))
			return -ENOMEM;
		e = cg_slot(l, l->cgs, l->cap_cgs, id);
	}
	if (e->cg.id && e->cg.path && strlen(e->cg.path) == len && !memcmp(e->cg.path, path, len)) {
		if (now_ns > e->used_ns)
			e->used_ns = now_ns;
		return 0;
	}
	copy = malloc((size_t)len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, path, len);
	copy[len] = '\0';
	if (!e->cg.id)
		l->ncgs++;
	free((char *)e->cg.path);
	e->cg.id = id;
	e->cg.path = copy;
	symb_container_ids(copy, len, e->cid, e->pod);
	e->cg.container_id = e->cid[0] ? e->cid : NULL;
	e->cg.pod_uid = e->pod[0] ? e->pod : NULL;
	if (now_ns > e->used_ns)
		e->used_ns = now_ns;
	return 0;
}

void symb_labels__cgroup_used(struct symb_labels *l, uint64_t id, uint64_t now_ns)
{
	struct cg_ent *e;

	if (!id || !l->cap_cgs)
		return;
	e = (struct cg_ent *)l->last;
	if (!e || e->cg.id != id) {
		e = cg_slot(l, l->cgs, l->cap_cgs, id);
		if (!e->cg.id)
			return;
		l->last = e;
	}
	if (now_ns > e->used_ns)
		e->used_ns = now_ns;
}

const struct symb_cgroup *symb_labels__cgroup(const struct symb_labels *l, uint64_t id)
{
	const struct cg_ent *e;

	if (!id || !l->cap_cgs)
		return NULL;
	e = cg_slot(l, l->cgs, l->cap_cgs, id);
	return e->cg.id ? &e->cg : NULL;
}

/* ---- between windows ---------------------------------------------------- */

void symb_labels__sweep(struct symb_labels *l, uint64_t now_ns)
{
	uint32_t freed = 0;

	for (uint32_t i = 0; i < l->nexes; i++) {
		struct exe_ent *e = &l->exes[i];

		if (!e->path || e->refs)
			continue;
		if (lp_grow32((void **)&l->free_ids, &l->cap_free, l->nfree + 1,
			      sizeof(*l->free_ids), 64))
			break; /* kept until the next sweep */
		free(e->path);
		*e = (struct exe_ent){0};
		l->free_ids[l->nfree++] = i + 1;
		l->live_exes--;
		freed++;
	}
	if (freed)
		exe_reindex(l, l->live_exes); /* without memory the old index stays: no id lost */
	if (l->cap_cgs && now_ns > SYMB_CGROUP_IDLE_NS) {
		uint32_t live = 0, cap = 64;

		for (uint32_t i = 0; i < l->cap_cgs; i++)
			live += l->cgs[i].cg.id &&
				l->cgs[i].used_ns >= now_ns - SYMB_CGROUP_IDLE_NS;
		if (live < l->ncgs) {
			while ((live + 1) * 2 > cap)
				cap *= 2;
			cg_rehash(l, cap, now_ns - SYMB_CGROUP_IDLE_NS);
		}
	}
}

void symb_labels__stats(const struct symb_labels *l, struct symb_labels_stats *st)
{
	st->exes = l->live_exes;
	st->cgroups = l->ncgs;
	st->over = l->over;
}

/* ---- container ids ------------------------------------------------------ */

static bool is_hex_lower(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
			return false;
	return true;
}

static bool has_prefix(const char *p, size_t n, const char *pre)
{
	size_t k = strlen(pre);

	return n >= k && memcmp(p, pre, k) == 0;
}

/* A container id in one path component c[0..n), into cid: true if found. */
static bool component_cid(const char *c, size_t n, char *cid)
{
	static const char *const prefixes[] = {"docker-", "cri-containerd-", "crio-", "libpod-",
					       "containerd-"};

	if (n > 6 && memcmp(c + n - 6, ".scope", 6) == 0)
		n -= 6;
	if (has_prefix(c, n, "crio-conmon-") || has_prefix(c, n, "libpod-conmon-"))
		return false;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		if (has_prefix(c, n, prefixes[i])) {
			size_t k = strlen(prefixes[i]);

			c += k;
			n -= k;
			break;
		}
	}
	if (n != 64 || !is_hex_lower(c, 64))
		return false;
	memcpy(cid, c, 64);
	cid[64] = '\0';
	return true;
}

/* A pod UID in one component ("...pod" + 8-4-4-4-12, '-' or '_'), into pod. */
static bool component_pod(const char *c, size_t n, char *pod)
{
	static const int dash[] = {8, 13, 18, 23};

	for (size_t i = 0; i + 3 + 36 <= n; i++) {
		const char *u = c + i + 3;
		size_t rest = n - (i + 3 + 36);
		bool ok = memcmp(c + i, "pod", 3) == 0;

		for (int k = 0, d = 0; ok && k < 36; k++) {
			if (d < 4 && k == dash[d]) {
				ok = u[k] == '-' || u[k] == '_';
				d++;
			} else {
				ok = is_hex_lower(&u[k], 1);
			}
		}
		if (!ok || (rest && !(rest == 6 && memcmp(u + 36, ".slice", 6) == 0)))
			continue;
		for (int k = 0; k < 36; k++)
			pod[k] = u[k] == '_' ? '-' : u[k];
		pod[36] = '\0';
		return true;
	}
	return false;
}

void symb_container_ids(const char *path, size_t len, char *cid, char *pod)
{
	size_t end = len;

	cid[0] = pod[0] = '\0';
	/* components from the last: the innermost container names the sample */
	while (end > 0) {
		size_t start = end;

		while (start > 0 && path[start - 1] != '/')
			start--;
		if (end > start) {
			if (!cid[0])
				component_cid(path + start, end - start, cid);
			if (!pod[0])
				component_pod(path + start, end - start, pod);
		}
		if (!start)
			break;
		end = start - 1;
	}
}
