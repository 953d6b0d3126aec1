/* SPDX-License-Identifier: MIT */
/*
 * Labels of samples beyond pid and comm: the executable a process runs and
 * the cgroup a thread was in, with the container id and the Kubernetes pod
 * UID its path names.
 *
 * What it is: two tables the stream fills (LPS_PROC, LPS_CGROUP) and the
 * aggregates key by: interned executable paths, counted by the processes
 * that hold them, and cgroup id -> path, with the ids parsed from the path
 * once, when it arrives. Both are bounded (SYMB_LABELS_MAX each) and swept
 * between windows: paths no process holds any more, cgroups no sample has
 * named for SYMB_CGROUP_IDLE_NS. What it is not: the collector's walk of
 * the hierarchy, or what the writers do with labels. Paths come from the
 * stream and were named by whoever made the file or the cgroup: bounded,
 * never trusted to be text.
 */
#ifndef LOWPROF_SYMB_LABELS_H
#define LOWPROF_SYMB_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMB_LABELS_MAX	    65536
#define SYMB_CGROUP_IDLE_NS (600ull * 1000000000ull) /* 10 min on the sample clock */

struct symb_labels;

/* A cgroup the stream named. */
struct symb_cgroup {
	uint64_t id;
	const char *path;	  /* relative to the cgroup v2 root: "/system.slice/x.service" */
	const char *container_id; /* 64 hex digits from the path, or NULL */
	const char *pod_uid;	  /* Kubernetes pod UID (8-4-4-4-12), or NULL */
};

struct symb_labels *symb_labels__new(uint64_t seed);
void symb_labels__free(struct symb_labels *l);

/*
 * An executable path, interned: its id (>= 1) with one more reference, or 0
 * (empty, or the table full: counted in *over).
 */
uint32_t symb_labels__exe_get(struct symb_labels *l, const char *path, uint32_t len);
/* Drops a reference taken by exe_get (0: none). */
void symb_labels__exe_put(struct symb_labels *l, uint32_t id);
/* Another reference to id, which one is held on (a forked process's): id, or 0. */
uint32_t symb_labels__exe_ref(struct symb_labels *l, uint32_t id);
/* The path of id, NUL-terminated; NULL for 0 or a freed id. */
const char *symb_labels__exe(const struct symb_labels *l, uint32_t id);

/* Learns (or renames) cgroup id at time now_ns: 0, -ENOSPC (table full), -ENOMEM. */
int symb_labels__cgroup_set(struct symb_labels *l, uint64_t id, const char *path, uint32_t len,
			    uint64_t now_ns);
/* A sample named id at now_ns: it is kept for SYMB_CGROUP_IDLE_NS more. */
void symb_labels__cgroup_used(struct symb_labels *l, uint64_t id, uint64_t now_ns);
/* The cgroup id, or NULL when the stream has not named it. */
const struct symb_cgroup *symb_labels__cgroup(const struct symb_labels *l, uint64_t id);

/*
 * Between windows, nothing aggregated refers to labels: frees the paths no
 * process holds and the cgroups unused since now_ns - SYMB_CGROUP_IDLE_NS.
 */
void symb_labels__sweep(struct symb_labels *l, uint64_t now_ns);

struct symb_labels_stats {
	uint32_t exes, cgroups; /* held now */
	uint64_t over;		/* paths or cgroups not kept: a table was full */
};
void symb_labels__stats(const struct symb_labels *l, struct symb_labels_stats *st);

/*
 * The container id and pod UID a cgroup path names, from its last
 * component that has one: Docker ("/docker/ID", "docker-ID.scope"),
 * containerd and CRI ("cri-containerd-ID.scope", ".../podUID/ID"), CRI-O
 * ("crio-ID.scope"), Podman ("libpod-ID.scope"); ID is 64 lowercase hex
 * digits. conmon's scopes ("crio-conmon-ID", "libpod-conmon-ID") are not
 * the container. The pod UID is the "pod" component (kubepods...pod<UID>,
 * with '_' for '-' in systemd's slices). cid: 65 bytes, pod: 37 bytes,
 * each "" when not found.
 */
void symb_container_ids(const char *path, size_t len, char *cid, char *pod);

#endif /* LOWPROF_SYMB_LABELS_H */
