/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Records the BPF programs put in the BPF ring buffer, shared between
 * profile.bpf.c and the collector. Fixed-width types only, no logic. The
 * collector turns these into schema records; nothing here crosses the
 * privilege line.
 */
#ifndef LOWPROF_BPF_PROFILE_H
#define LOWPROF_BPF_PROFILE_H

#define LP_BPF_MAX_FRAMES 127 /* perf's default kernel.perf_event_max_stack */
#define LP_BPF_COMM_LEN	  16
#define LP_MAX_CGROUPS	  16 /* --cgroup directories in the filter */
/*
 * lowprof's own processes left out by tgid (shared.bpf.h self_tgids): the
 * collector, lowprof record, a symbolizer, and what they start (file
 * workers, a restarted symbolizer). ~70 bytes each, preallocated.
 */
#define LP_MAX_SELF 1024
/*
 * Largest user stack copy per sample (--stack-bytes). 16 KiB is the default:
 * it holds the frames of ordinary call chains (most frames are well under
 * 256 bytes) at 16 KiB per sample, the same order as perf --call-graph
 * dwarf's 8 KiB default; deep recursion or big stack buffers need more.
 */
#define LP_BPF_MAX_STACK_COPY (64 * 1024)
#define LP_BPF_PAGE_SIZE      4096

enum lp_bpf_event_type {
	LP_EV_SAMPLE = 1,
	LP_EV_EXEC = 2,
	LP_EV_EXIT = 3,
};

/* Common header of every ring buffer record. */
struct lp_ev_hdr {
	__u32 type;
	__u32 cpu;
	__u64 time_ns; /* bpf_ktime_get_ns: CLOCK_MONOTONIC */
	__u32 pid;     /* tgid */
	__u32 tid;
	char comm[LP_BPF_COMM_LEN];
	__u64 cgroup_id; /* bpf_get_current_cgroup_id: the task's cgroup v2 id */
};

/*
 * A stack sample. Only the header, the (nkstack + nustack) frames that were
 * captured (kernel frames first, then user frames, each leaf first) and the
 * stack_len bytes of user stack copied from sp upward travel in the ring,
 * in that order. A record can be longer than those (room reserved in the
 * ring and left unused); its readers go by the counts, never by its size.
 */
struct lp_ev_sample {
	struct lp_ev_hdr hdr;
	__u64 period_ns;  /* the perf event's sample period: CPU time it stands for */
	__u64 ip, sp, bp; /* user-mode registers; 0 for kernel threads */
	__u16 nkstack;
	__u16 nustack;
	__u32 stack_len; /* bytes of user stack copy after the frames */
	__u64 stack[2 * LP_BPF_MAX_FRAMES];
};

#define LP_EV_SAMPLE_FIXED_SIZE (sizeof(struct lp_ev_sample) - 2 * LP_BPF_MAX_FRAMES * 8)
#define LP_EV_FRAMES_BYTES	(2 * LP_BPF_MAX_FRAMES * 8)

/*
 * Per-CPU scratch where a sample is built: the record, then room for the
 * stack copy at the end of the frames actually captured, plus one page of
 * slack so the verifier can bound a page-sized read at any offset below the
 * limit.
 */
struct lp_ev_scratch {
	struct lp_ev_sample s;
	__u8 copy[LP_BPF_MAX_STACK_COPY + 2 * LP_BPF_PAGE_SIZE];
};

/* exec and exit: the header alone. */
struct lp_ev_task {
	struct lp_ev_hdr hdr;
};

/*
 * Counters in the program's .bss, updated with atomic adds and read by the
 * collector through the skeleton's mmap of .bss. The samples emitted are
 * not among them: the collector counts the sample records it drains, which
 * costs the programs nothing (an atomic add on a line both CPUs write cost
 * ~0.1 us per sample at 99 Hz), and all of them are drained before the
 * last count is reported.
 */
struct lp_bpf_stats {
	__u64 ringbuf_full;  /* records that could not be written (ring full) */
	__u64 kstack_errors; /* bpf_get_stack failed for the kernel stack */
	__u64 ustack_errors; /* bpf_get_stack failed for the user stack */
	__u64 idle;	     /* samples of the idle task, not emitted */
	__u64 filtered;	     /* samples of other processes (pid or cgroup filter) */
	__u64 task_events;   /* exec/exit records emitted */
	__u64 task_lost;     /* exec/exit records that did not fit */
	__u64 ustack_fp;     /* no stack top known: the frame-pointer walk instead of a copy */
	__u64 self;	     /* samples of lowprof's own processes (lp_self), not emitted */
};

#endif /* LOWPROF_BPF_PROFILE_H */
