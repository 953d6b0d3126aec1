// SPDX-License-Identifier: MIT
/*
 * lowprof's own processes, which the BPF programs leave out (shared.bpf.h
 * lp_self) unless --include-self: the uid they run as where one is theirs
 * alone, and the tgids the collector puts in the self_tgids map. The BPF
 * side adds what those processes start from then on and removes what ends.
 * Pids are the collector's pid namespace's, which BPF's tgids match only in
 * the host's: the collector runs there anyway (hostPID in the DaemonSet),
 * as it reads every process's /proc/PID/maps.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "collector.h"
#include "collector_int.h"
#include "procfs.h"
#include "lowprof/log.h"
#include "profile.h"

/* nobody: the kernel's overflow uid, shared by every daemon that wants "no one" */
#define COLL_NOBODY_UID 65534

uint32_t coll_self_uid(const struct coll_opts *o)
{
	/*
	 * --ring PATH alone is a service's collector: its symbolizer and
	 * exporter are other units (deploy/) that nothing ties to the
	 * collector but running as the ring's owner, lowprof's own user
	 * (lowprof/user.h). lowprof record and run start all of theirs and
	 * name them by --self-pid instead: their --user may be a real user
	 * whose programs are to be profiled.
	 */
	if (o->include_self || !o->ring_path || o->self_pid > 0 || o->ring_uid == 0 ||
	    o->ring_uid == COLL_NOBODY_UID)
		return 0;
	return (uint32_t)o->ring_uid;
}

int coll_self_add(int map_fd, pid_t pid)
{
	uint32_t key = (uint32_t)pid;
	uint8_t one = 1;

	if (pid <= 0)
		return -EINVAL;
	if (bpf_map_update_elem(map_fd, &key, &one, BPF_ANY))
		return -errno;
	return 0;
}

/* Appends the children of every thread of pid to q[*n..cap). */
static void add_children(pid_t pid, pid_t *q, size_t *n, size_t cap)
{
	char path[64];
	struct dirent *e;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return; /* gone */
	while ((e = readdir(d)) && *n < cap) {
		char *buf;
		size_t len;

		if (e->d_name[0] < '1' || e->d_name[0] > '9' || strlen(e->d_name) > 10)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", (int)pid, e->d_name);
		if (coll_read_file(path, 1 << 16, &buf, &len))
			continue;
		if (coll_parse_pids(buf, len, q, n, cap) == -EBADMSG)
			lp_debug("self: %s is not a pid list", path);
		free(buf);
	}
	closedir(d);
}

/*
 * pid and every process below it now (lowprof record and the symbolizer
 * it may have started before the map existed); what they start later is
 * on_fork's. The walk follows /proc/PID/task/TID/children, at most
 * LP_MAX_SELF processes.
 */
static void add_tree(int map_fd, pid_t root)
{
	pid_t *q = malloc(LP_MAX_SELF * sizeof(*q));
	size_t head = 0, n = 0;

	if (!q) {
		coll_self_add(map_fd, root);
		return;
	}
	q[n++] = root;
	while (head < n) {
		coll_self_add(map_fd, q[head]);
		add_children(q[head++], q, &n, LP_MAX_SELF);
	}
	free(q);
}

void coll_self_walk(int map_fd, const struct coll_opts *o)
{
	if (!o->include_self && o->self_pid > 0)
		add_tree(map_fd, o->self_pid);
}

void coll_self_init(int map_fd, const struct coll_opts *o)
{
	int err;

	if (o->include_self)
		return;
	err = coll_self_add(map_fd, getpid());
	if (err)
		lp_warn("self: leaving the collector out of the profile: %s", strerror(-err));
	coll_self_walk(map_fd, o);
}
