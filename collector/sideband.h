/* SPDX-License-Identifier: MIT */
/*
 * The kernel's side-band events: every executable mapping as a process
 * makes it (PERF_RECORD_MMAP2), every exec (PERF_RECORD_COMM with
 * PERF_RECORD_MISC_COMM_EXEC) and every fork (PERF_RECORD_FORK), from one
 * dummy software perf event per CPU, on CLOCK_MONOTONIC like the samples.
 *
 * What it is: opening those events, reading their buffers (the kernel's
 * records; their paths are what processes named, passed on as bytes) and
 * handing the events over in time order across CPUs. It also counts the
 * kernel's ksymbol events (PERF_RECORD_KSYMBOL: a BPF program, trampoline
 * or other out-of-line code given or stripped of a kernel symbol), which
 * tell the collector that /proc/kallsyms changed. What it is not: the
 * record stream (the collector encodes what it is handed) or any filter.
 */
#ifndef LOWPROF_COLL_SIDEBAND_H
#define LOWPROF_COLL_SIDEBAND_H

#include <stdbool.h>
#include <stdint.h>

enum coll_sb_kind {
	COLL_SB_MMAP = 1, /* an executable mapping */
	COLL_SB_EXEC = 2, /* pid called exec: its mappings are void */
	COLL_SB_FORK = 3, /* pid is a new process of ppid (not a thread) */
};

struct coll_sb_event {
	enum coll_sb_kind kind;
	uint64_t time_ns; /* CLOCK_MONOTONIC */
	uint32_t pid, ppid;
	/* COLL_SB_MMAP */
	uint64_t start, len, pgoff, inode;
	uint32_t major, minor, prot; /* prot: PROT_* */
	uint32_t flags;		     /* MAP_* */
	const char *path;	     /* NUL-terminated, at most PATH_MAX */
	uint32_t path_len;
	/* COLL_SB_EXEC: the new comm, NUL-terminated */
	const char *comm;
	uint32_t comm_len;
};

struct coll_sideband;

/*
 * Opens the events on the ncpus CPUs of cpus, bytes_per_cpu of buffer each
 * (a power of two of pages), and adds each event to the edge-triggered
 * epoll epfd (when >= 0) to wake it when a buffer is half full. NULL with
 * errno set (EACCES, ENOENT on a kernel without the events...).
 * Free with coll_sideband__free.
 */
struct coll_sideband *coll_sideband__new(const uint32_t *cpus, int ncpus, uint32_t bytes_per_cpu,
					 int epfd);

typedef void (*coll_sb_fn)(void *ctx, const struct coll_sb_event *ev);

/*
 * Reads every buffer and calls fn for each event, in time order across
 * CPUs. Returns the number of events, or -ENOMEM (then the events read are
 * lost and counted).
 */
int coll_sideband__drain(struct coll_sideband *sb, coll_sb_fn fn, void *ctx);

/* Events the kernel could not put in the buffers, and records unreadable here. */
uint64_t coll_sideband__lost(const struct coll_sideband *sb);

/*
 * coll_sideband__lost's count plus the drains that found a buffer all but
 * full: grows as soon as a drain finds events lost or maybe lost (the
 * kernel tells of a loss only at that CPU's next event, which may be long
 * after).
 */
uint64_t coll_sideband__maybe_lost(const struct coll_sideband *sb);

/*
 * The ksymbol events and the events lost so far (*lost as
 * coll_sideband__maybe_lost counts them), read by coll_sideband__drain or still
 * in the buffers: a change made before the call is in the counts, however
 * long ago the last drain was. False when ksymbol events are not known:
 * no side-band events, or a kernel without them (before 5.1), where the
 * other events were opened alone.
 */
bool coll_sideband__ksymbols(const struct coll_sideband *sb, uint64_t *ksymbols, uint64_t *lost);

/* Bytes of buffers mapped. */
uint64_t coll_sideband__bytes(const struct coll_sideband *sb);

void coll_sideband__free(struct coll_sideband *sb);

#endif /* LOWPROF_COLL_SIDEBAND_H */
