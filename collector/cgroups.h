/* SPDX-License-Identifier: MIT */
/*
 * Cgroups: the cgroup v2 hierarchy's ids and paths, for the samples' labels,
 * and the --cgroup filter's directories.
 *
 * What it is: the collector's table cgroup id -> path, filled by walking
 * the cgroup v2 hierarchy (a directory's inode number is its cgroup's id,
 * what bpf_get_current_cgroup_id returns), at most once a second and only
 * when a sample carries an id the table does not know; and when each path
 * was last sent, so that it goes to the symbolizer before the first sample
 * that carries it and again once a minute. What it is not: interpretation
 * of the paths (container ids: the symbolizer's). A path is a name someone
 * chose (a delegated subtree's user, a container runtime): it is passed on
 * as opaque bytes, bounded by LPS_MAX_PATH.
 *
 * The hierarchy is found at /sys/fs/cgroup (pure v2) or
 * /sys/fs/cgroup/unified (hybrid): each must be a cgroup2 mount.
 */
#ifndef LOWPROF_COLL_CGROUPS_H
#define LOWPROF_COLL_CGROUPS_H

#include <stdbool.h>
#include <stdint.h>

struct coll_cgroups;

/* distinct cgroups the table holds; a walk stops there, a full table starts over */
#define COLL_CGROUPS_MAX 65536
/* a path is sent again after this long (ns), for symbolizers that forget */
#define COLL_CGROUP_RESEND_NS (60ull * 1000000000ull)

/*
 * The table, on the hierarchy found (a table without one resolves
 * nothing: cgroup_root() is NULL). NULL with errno on ENOMEM.
 */
struct coll_cgroups *coll_cgroups__new(void);
void coll_cgroups__free(struct coll_cgroups *t);

/* The cgroup v2 mount point, or NULL when there is none. */
const char *coll_cgroups__root(const struct coll_cgroups *t);

/*
 * The path of id (relative to the root, "/..."), if it should be sent now:
 * never sent, or sent over COLL_CGROUP_RESEND_NS before now_ns; *len its
 * length. NULL: nothing to send (sent recently, or unknown: a walk found
 * no such cgroup). Marks it sent.
 */
const char *coll_cgroups__due(struct coll_cgroups *t, uint64_t id, uint64_t now_ns, uint32_t *len);

/* A new reader of the stream: every path is sent again before its next sample. */
void coll_cgroups__resend_all(struct coll_cgroups *t);

/*
 * Opens the --cgroup argument: a directory of the cgroup v2 hierarchy,
 * absolute (under its mount point) or relative to its root. Returns an fd
 * (O_RDONLY | O_DIRECTORY) or a negative errno, after saying why.
 */
int coll_cgroups__open_dir(const struct coll_cgroups *t, const char *arg);

struct coll_cgroups_stats {
	uint64_t walks;	     /* of the hierarchy */
	uint64_t sent;	     /* paths sent (with resends) */
	uint64_t unresolved; /* ids a walk did not find */
	uint32_t known;	     /* cgroups the table holds */
};
void coll_cgroups__stats(const struct coll_cgroups *t, struct coll_cgroups_stats *st);

#endif /* LOWPROF_COLL_CGROUPS_H */
