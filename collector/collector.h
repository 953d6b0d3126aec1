/* SPDX-License-Identifier: MIT */
/*
 * lowprof-collector: the privileged, minimal half of lowprof. Loads and
 * attaches the BPF programs, drains the BPF ring buffer into the
 * shared-memory ring as schema records, and adds what only a privileged
 * process can read: process mappings (/proc/PID/maps) and the kernel symbol
 * snapshot (/proc/kallsyms). It never opens or parses ELF files or anything
 * else a profiled process controls. After attaching it drops every
 * capability but CAP_SYS_PTRACE (needed to read other users' maps).
 */
#ifndef LOWPROF_COLLECTOR_H
#define LOWPROF_COLLECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define COLL_DEFAULT_FREQ     99
#define COLL_DEFAULT_DRAIN_MS 100
#define COLL_MAX_FREQ	      10000
#define COLL_MAX_PIDS	      1024
/* user stack copy per sample: see LP_BPF_MAX_STACK_COPY for the default's reason */
#define COLL_DEFAULT_STACK_BYTES 16384
#define COLL_MAX_STACK_BYTES	 65536

struct coll_opts {
	size_t sz;	   /* sizeof(struct coll_opts) */
	uint32_t freq_hz;  /* sampling frequency per CPU */
	double duration_s; /* 0: until SIGINT/SIGTERM */
	const pid_t *pids; /* processes to profile; npids == 0: whole host */
	size_t npids;
	int ring_fd;	       /* sealed, formatted ring memfd to produce into, or -1 */
	const char *ring_path; /* or: create a ring and hand it out on this socket */
	uint64_t ring_size;    /* data size when creating the ring (0: formula) */
	uid_t ring_uid;	       /* the only uid (besides root) the ring is handed to */
	uint32_t drain_ms;     /* BPF ring drain interval */
	uint32_t stack_bytes;  /* user stack copy per sample; 0: kernel FP walk */
	bool exit_with_parent; /* SIGTERM ourselves when the parent dies */
	pid_t parent;	       /* getppid() at start */
	bool keep_caps;	       /* do not drop capabilities after attaching (tests) */
};

/* Runs until the duration elapses or a signal arrives; returns an exit code. */
int coll_run(const struct coll_opts *opts);

#endif /* LOWPROF_COLLECTOR_H */
