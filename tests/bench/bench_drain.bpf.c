// SPDX-License-Identifier: MIT
/*
 * bench_drain's synthetic producer: a BPF_PROG_TYPE_SYSCALL program, run by
 * bpf_prog_test_run from user space (no kprobe or perf event needed), that
 * submits args->n on-CPU sample records (struct lp_ev_sample, profile.h)
 * to the collector's own BPF ring buffer (the map's fd is reused before
 * load) with bpf_ringbuf_output, the helper the on-CPU program uses for a
 * record it built in scratch memory, and its wakeup policy (lp_rb_flags:
 * a forced wakeup only once half the ring is full).
 *
 * The records are one template in .bss (user space fills the frames and
 * the stack copy once) whose header, frame counts and copy length change
 * per record, cycling through the sizes user space put in slots[].
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

#include "profile.h"

#define SLOTS	64 /* a power of two */
#define REC_MAX (LP_EV_SAMPLE_FIXED_SIZE + 2 * LP_BPF_MAX_FRAMES * 8 + 16384)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024); /* replaced by the collector's map */
} events SEC(".maps");

struct slot {
	__u16 nk, nu;
	__u32 copy;
};

struct args {
	__u32 n;
};

struct slot slots[SLOTS];
__u64 wake_bytes; /* the collector's: half its ring */
__u32 pid, tid;
__u64 seq, ok, full;
__u8 rec[REC_MAX];

static long one(__u64 i, void *ctx)
{
	struct lp_ev_sample *e = (void *)rec;
	struct slot *s = &slots[seq++ & (SLOTS - 1)];
	__u64 len = LP_EV_SAMPLE_FIXED_SIZE + ((__u64)s->nk + s->nu) * 8 + s->copy;
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (len > REC_MAX)
		return 1;
	e->hdr.type = LP_EV_SAMPLE;
	e->hdr.time_ns = bpf_ktime_get_ns();
	e->hdr.pid = pid;
	e->hdr.tid = tid;
	e->hdr.cpu = bpf_get_smp_processor_id();
	e->hdr.cgroup_id = bpf_get_current_cgroup_id();
	e->nkstack = s->nk;
	e->nustack = s->nu;
	e->stack_len = s->copy;
	if (wake_bytes && bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	if (bpf_ringbuf_output(&events, rec, len, flags))
		full++;
	else
		ok++;
	return 0;
}

SEC("syscall")
int produce(struct args *a)
{
	bpf_loop(a->n, one, NULL, 0);
	return 0;
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
