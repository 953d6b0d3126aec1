/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Off-CPU records and state shared between offcpu.bpf.c and the collector.
 * Fixed-width types only, no logic. Include after profile.h (the common
 * record header, frame and copy limits).
 */
#ifndef LOWPROF_BPF_OFFCPU_H
#define LOWPROF_BPF_OFFCPU_H

/* ring record type, next to enum lp_bpf_event_type */
#define LP_EV_OFFCPU 4

enum lp_offcpu_mode {
	LP_OFFCPU_EVENT = 0, /* each block sampled with probability rate */
	LP_OFFCPU_TIME = 1,  /* each block of d ns sampled with probability min(1, d / period) */
};

/*
 * event mode's probability as a fraction of 2^32: a block is sampled when
 * bpf_get_prandom_u32() < threshold; LP_OFFCPU_ALWAYS (rate 1) samples all.
 */
#define LP_OFFCPU_ALWAYS (1ull << 32)
/* time mode's period is at most 2^32 ns (~4.3 s) so that d << 32 cannot overflow */
#define LP_OFFCPU_MAX_PERIOD_NS (1ull << 32)

/*
 * One sampled off-CPU interval. Laid out like struct lp_ev_sample: only the
 * header, the (nkstack + nustack) frames and the stack_len bytes of user
 * stack copy travel in the ring. hdr.time_ns and hdr.cpu are those of the
 * switch-in (when and where the thread ran again).
 */
struct lp_ev_offcpu {
	struct lp_ev_hdr hdr;
	__u64 weight_ns;  /* off-CPU time it stands for: blocked_ns / P(sampled) */
	__u64 blocked_ns; /* switch-out to switch-in */
	__u64 ip, sp, bp; /* user registers where it blocked; 0 if unknown */
	__u16 nkstack;
	__u16 nustack;
	__u32 stack_len;
	__u64 stack[2 * LP_BPF_MAX_FRAMES];
};

#define LP_EV_OFFCPU_FIXED_SIZE (sizeof(struct lp_ev_offcpu) - 2 * LP_BPF_MAX_FRAMES * 8)

/*
 * Per-task state (BPF_MAP_TYPE_TASK_STORAGE): only what every blocking
 * switch needs, so an entry stays small for every task that ever blocks.
 */
struct lp_offcpu_task {
	__u64 t_out;	  /* switch-out time of the current voluntary block; 0: none */
	__u8 pending;	  /* a sampled block waits in the pending map for its user stack */
	__u8 wanted;	  /* whole host: not lowprof's own (lp_self), as of wanted_gen */
	__u16 hint;	  /* while pending: the pend_hint bucket it is counted in */
	__u32 wanted_gen; /* offcpu.bpf.c self_gen + 1 when wanted was decided; 0: never */
};

/*
 * A sampled block between its switch-in (kernel stack and user registers
 * taken then, from the not-running task) and the moment the task itself is
 * next in the kernel (its syscall exit or, with BPF task work, its return
 * to user mode; or its next block's switch-out), where the user stack is
 * read. Keyed by tid.
 */
struct lp_offcpu_pending {
	__u64 time_ns; /* switch-in */
	__u64 weight_ns;
	__u64 blocked_ns;
	__u64 ip, sp, bp;
	__u32 cpu; /* of the switch-in */
	__u16 nkstack;
	__u16 pad;
	__u64 kstack[LP_BPF_MAX_FRAMES];
};

/* buckets of offcpu.bpf.c's pend_hint */
#define LP_OFFCPU_HINTS 1024
/* entries of offcpu.bpf.c's slots (a power of two): 96 KiB */
#define LP_OFFCPU_SLOTS 4096

/* Per CPU-id scratch: a record is built here (see profile.bpf.c's scratch). */
struct lp_offcpu_scratch {
	struct lp_ev_offcpu e;
	__u8 copy[LP_BPF_MAX_STACK_COPY + 2 * LP_BPF_PAGE_SIZE];
};

/*
 * Counters, one set per CPU id (a plain array, no atomics: the programs
 * updating a CPU's set cannot interrupt each other; no shared cache line is
 * written on every context switch). 128 bytes so two CPUs' sets do not share
 * a cache line's hot words. The collector sums them.
 */
struct lp_offcpu_counts {
	__u64 switches;	      /* voluntary switch-outs of profiled user tasks */
	__u64 sampled;	      /* blocks chosen for a sample */
	__u64 short_blocks;   /* blocks under min_ns: not recorded */
	__u64 lost;	      /* sampled blocks lost: pending map full, ring full */
	__u64 emitted;	      /* records written to the ring */
	__u64 no_ustack;      /* records emitted without a user stack (block not in a syscall) */
	__u64 kstack_errors;  /* bpf_get_task_stack failed */
	__u64 ustack_errors;  /* user FP walk failed (stack_bytes == 0) */
	__u64 storage_errors; /* task storage could not be created: block not measured */
	__u64 ustack_fp;      /* no stack top known: the frame-pointer walk instead of a copy */
	__u64 rng; /* not a count: the CPU's sampling random state (offcpu.bpf.c lp_rand) */
	__u64 pad[5];
};

#endif /* LOWPROF_BPF_OFFCPU_H */
