/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * What profile.bpf.c and offcpu.bpf.c share: the ring buffer the collector
 * drains and the pid filter (the collector hands profile's map fds to the
 * off-CPU object with bpf_map__reuse_fd, so both definitions must be the
 * same: they are this one), and two small helpers. Include after vmlinux.h
 * and the libbpf helpers.
 */
#ifndef LOWPROF_BPF_SHARED_BPF_H
#define LOWPROF_BPF_SHARED_BPF_H

/* Set through each skeleton's rodata before load. */
const volatile bool filter_pids = false;
/* entries of the cgroups map (--cgroup), <= LP_MAX_CGROUPS; 0: no cgroup filter */
const volatile __u32 filter_cgroups = 0;
/* user stack bytes to copy per sample (--stack-bytes), <= LP_BPF_MAX_STACK_COPY; 0: FP walk */
const volatile __u32 stack_bytes = 0;
/* leave lowprof's own processes out (lp_self); false with --include-self */
const volatile bool exclude_self = false;
/* and every process of this uid: the ring owner's, never root's (0: none) */
const volatile __u32 self_uid = 0;

/*
 * What the running kernel has, probed by the collector at load time
 * (collector/kfeatures.c). Each false takes a fallback; the branches on them
 * are decided by the verifier from these read-only values, so code for a
 * helper or map the kernel lacks is never verified, and is dropped.
 */
const volatile bool have_task_btf = true;     /* bpf_get_current_task_btf: 5.11 */
const volatile bool have_task_storage = true; /* task storage in tracing programs: 5.11 */
const volatile bool have_task_pt_regs = true; /* bpf_task_pt_regs: 5.15 */

/*
 * Ring fill (bytes) from which a record wakes the collector: half the ring,
 * set by the collector. Below it records go in without a wakeup and the
 * collector drains on its own, slow interval; 0: never wake it.
 */
const volatile __u64 wake_bytes = 0;

/*
 * Sized by the collector before load (bpf_map__set_max_entries):
 * roundup_pow2(online_cpus * (freq_hz [+ off-CPU records/s]) * drain_s *
 * max_record * 2), see coll_bpf_ring_size in collector/collector.c.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} events SEC(".maps");

/* Processes to profile when filter_pids is set: tgid -> 1. Resized to -p count. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u8);
} pids SEC(".maps");

/*
 * Cgroups to profile when filter_cgroups is set: index -> cgroup v2
 * directory fd (the collector fills it; the kernel keeps the cgroup).
 * Resized to the --cgroup count; shared like pids.
 */
struct {
	__uint(type, BPF_MAP_TYPE_CGROUP_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} cgroups SEC(".maps");

/*
 * lowprof's own processes, left out when exclude_self is set: tgid -> 1.
 * The collector puts itself (before attaching), --self-pid (lowprof record
 * or run) and each symbolizer that takes the ring (SO_PEERCRED) here;
 * on_fork adds the processes they start from then on, on_exit removes a
 * process that ends, so a pid used again is not left out. Shared like pids.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, LP_MAX_SELF);
	__type(key, __u32);
	__type(value, __u8);
} self_tgids SEC(".maps");

/*
 * Flags for submitting a record: a wakeup (an irq_work, a self-interrupt)
 * only once the ring is half full, so the collector can sleep long at low
 * rates and still be woken well before the ring overflows at high ones.
 */
static __always_inline __u64 lp_rb_flags(void)
{
	if (wake_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes)
		return BPF_RB_FORCE_WAKEUP;
	return BPF_RB_NO_WAKEUP;
}

/* The current task is in one of the cgroups (or below one), or there is no cgroup filter. */
static __always_inline bool lp_in_cgroups(void)
{
	for (__u32 i = 0; i < LP_MAX_CGROUPS; i++) {
		if (i >= filter_cgroups)
			break;
		if (bpf_current_task_under_cgroup(&cgroups, i) == 1)
			return true;
	}
	return !filter_cgroups;
}

/*
 * Process tgid, which the current task belongs to (or, for a new thread,
 * its parent does), is lowprof's own: the collector, a symbolizer and what
 * they started, or of the ring owner's uid (the current task's uid: the
 * same for a new thread, whose credentials are its parent's copy). Decided
 * here, in BPF, so that no record of them is made, rather than filtered
 * from the records.
 */
static __always_inline bool lp_self(__u32 tgid)
{
	if (!exclude_self)
		return false;
	if (self_uid && (__u32)bpf_get_current_uid_gid() == self_uid)
		return true;
	return bpf_map_lookup_elem(&self_tgids, &tgid) != NULL;
}

/*
 * Whether process tgid (as in lp_self) passes the filters the user gave:
 * in the pid filter, and in the cgroup filter, each where one is set.
 */
static __always_inline bool lp_selected(__u32 tgid)
{
	if (filter_pids && !bpf_map_lookup_elem(&pids, &tgid))
		return false;
	return lp_in_cgroups();
}

/* Whether to profile process tgid (as in lp_self): selected and not lowprof's own. */
static __always_inline bool lp_wanted(__u32 tgid)
{
	return !lp_self(tgid) && lp_selected(tgid);
}

/*
 * The current task: a BTF pointer whose fields the programs read directly
 * where the kernel has bpf_get_current_task_btf; otherwise a plain address,
 * read only with BPF_CORE_READ (bpf_probe_read_kernel).
 */
static __always_inline struct task_struct *lp_current_task(void)
{
	if (have_task_btf)
		return bpf_get_current_task_btf();
	return (struct task_struct *)bpf_get_current_task();
}

/*
 * x86-64's kernel stack size (THREAD_SIZE, 16 KiB; 32 KiB with KASAN, where
 * the check below fails and the registers are unknown) and the selectors of
 * 64-bit user mode (__USER_CS, __USER_DS): without bpf_task_pt_regs the
 * user registers are read where task_pt_regs() finds them, at the top of the
 * kernel stack (no padding above them on x86-64), and believed only when
 * their selectors are user mode's.
 */
#define LP_THREAD_SIZE (16 * 1024)
#define LP_USER_CS     0x33
#define LP_USER_DS     0x2b

/*
 * The user-mode registers of task: saved at the top of its kernel stack,
 * whether it was interrupted in user or kernel mode. 0 or < 0.
 */
static __always_inline int lp_user_regs(struct task_struct *task, struct pt_regs *ur)
{
	struct pt_regs *regs;
	void *stack;

	if (have_task_pt_regs) {
		regs = (struct pt_regs *)bpf_task_pt_regs(task);
		if (!regs)
			return -1;
		return bpf_probe_read_kernel(ur, sizeof(*ur), regs);
	}
	stack = BPF_CORE_READ(task, stack);
	if (!stack || bpf_probe_read_kernel(ur, sizeof(*ur), stack + LP_THREAD_SIZE - sizeof(*ur)))
		return -1;
	return ur->cs == LP_USER_CS && ur->ss == LP_USER_DS ? 0 : -1;
}

#endif /* LOWPROF_BPF_SHARED_BPF_H */
