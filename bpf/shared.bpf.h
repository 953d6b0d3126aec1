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
/* user stack bytes to copy per sample (--stack-bytes), <= LP_BPF_MAX_STACK_COPY; 0: FP walk */
const volatile __u32 stack_bytes = 0;

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

static __always_inline bool lp_wanted(__u32 tgid)
{
	return !filter_pids || bpf_map_lookup_elem(&pids, &tgid);
}

/*
 * The user-mode registers of task: saved at the top of its kernel stack,
 * whether it was interrupted in user or kernel mode. 0 or < 0.
 */
static __always_inline int lp_user_regs(struct task_struct *task, struct pt_regs *ur)
{
	struct pt_regs *regs = (struct pt_regs *)bpf_task_pt_regs(task);

	if (!regs)
		return -1;
	return bpf_probe_read_kernel(ur, sizeof(*ur), regs);
}

#endif /* LOWPROF_BPF_SHARED_BPF_H */
