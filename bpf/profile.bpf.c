// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * On-CPU sampling and process lifecycle.
 *
 * on_cpu_sample runs on the software cpu-clock perf event of every online
 * CPU. For each sample it records the kernel stack (when it hit in the
 * kernel), the user-mode registers and a copy of the user stack up to its
 * top (ustack.bpf.h; with --stack-bytes 0 the kernel's frame-pointer walk
 * instead), and emits what was captured into the ring buffer: most samples
 * straight into a record reserved there (sample_in_ring), the others built
 * in a scratch and copied. on_exec / on_exit tell the collector when to
 * (re)read a process's mappings and when to forget it; on_fork notes where
 * a new thread's stack starts.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profile.h"
#include "shared.bpf.h"
#include "ustack.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

struct lp_bpf_stats stats = {};

/*
 * Scratch space for one sample per CPU, indexed by CPU id, for the samples
 * sample_in_ring does not take: the record is built here and only its used
 * part is copied into the ring. A plain array because per-CPU values are
 * limited to 32 KiB; the collector sets max_entries to the highest online
 * CPU id + 1 (not the possible CPUs).
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_ev_scratch);
} scratch SEC(".maps");

_Static_assert(sizeof(struct lp_ev_scratch) - __builtin_offsetof(struct lp_ev_scratch, s.stack) >=
		       sizeof(struct lp_copy_area),
	       "the scratch holds a copy area from its frames on");

static __always_inline struct lp_copy_area *lp_copy_area(__u32 cpu)
{
	struct lp_ev_scratch *sc = bpf_map_lookup_elem(&scratch, &cpu);

	return sc ? (struct lp_copy_area *)sc->s.stack : NULL;
}

/* The header but its comm, which the caller fills. */
static __always_inline void fill_hdr(struct lp_ev_hdr *h, __u32 type, __u64 pid_tgid)
{
	h->type = type;
	h->cpu = bpf_get_smp_processor_id();
	h->time_ns = bpf_ktime_get_ns();
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->cgroup_id = bpf_get_current_cgroup_id();
}

/*
 * A sample's header; task is current. on_cpu_sample takes its ids, and this
 * its comm, from the task itself rather than through
 * bpf_get_current_pid_tgid and bpf_get_current_comm (two helper calls, ~0.1
 * us per sample at 99 Hz): the kernel sets comm with strscpy_pad, so its 16
 * bytes are what the helper would copy.
 */
static __always_inline void fill_sample_hdr(struct lp_ev_hdr *h, struct task_struct *task,
					    __u64 pid_tgid)
{
	fill_hdr(h, LP_EV_SAMPLE, pid_tgid);
	if (!have_task_btf) {
		bpf_get_current_comm(h->comm, sizeof(h->comm));
		return;
	}
	*(__u64 *)&h->comm[0] = *(__u64 *)&task->comm[0];
	*(__u64 *)&h->comm[8] = *(__u64 *)&task->comm[8];
}

/*
 * The common sample: it interrupted user mode, its thread's state is in
 * task storage (t->v) and the copy up to its top reads in one piece,
 * straight into a record reserved in the ring. That saves building the
 * record in the scratch and copying it again (~0.35 us per sample at 99
 * Hz). Returns whether the record was emitted; if not (no room in the ring
 * for a record of that size, or a page of the range faulted, which
 * v->faulted then notes), the caller builds it in the scratch.
 *
 * room is the stack copy's room in the record: a constant where this is
 * inlined (ring_room), because the verifier takes only a reservation size
 * it knows, and bounds the read below only by a constant it compares len
 * with (the verifiers before Linux 6.x learn nothing from comparing two
 * registers).
 */
static __always_inline bool sample_in_ring(struct bpf_perf_event_data *ctx,
					   struct task_struct *task, __u64 pid_tgid,
					   const struct lp_stack_top *t, __u64 sp, __u64 len,
					   const __u32 room)
{
	struct lp_stack_state *v = t->v;
	struct lp_ev_sample *r;

	asm volatile("" : "+r"(len)); /* compared with room here, whatever came before */
	if (len > room)
		return false;
	r = bpf_ringbuf_reserve(&events, LP_EV_SAMPLE_FIXED_SIZE + room, 0);
	if (!r)
		return false;
	if (bpf_probe_read_user(r->stack, len, (const void *)sp)) {
		v->faulted = 1;
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return false;
	}
	fill_sample_hdr(&r->hdr, task, pid_tgid);
	r->period_ns = ctx->sample_period;
	r->ip = ctx->regs.rip;
	r->sp = sp;
	r->bp = ctx->regs.rbp;
	r->nkstack = 0;
	r->nustack = 0;
	r->stack_len = len;
	bpf_ringbuf_submit(r, lp_rb_flags());
	return true;
}

/*
 * A record of the smallest of these rooms that holds len bytes of copy
 * (sample_in_ring): steps of at most 1.5x leave at most a third of a room
 * above 1 KiB unused (it is reserved, not written). Rooms above stack_bytes
 * are not taken (len never exceeds it, and the ring is sized for records of
 * that size); such a copy goes through the scratch.
 */
#define LP_RING_ROOM(R)                                                                            \
	if (len <= (R))                                                                            \
	return (R) <= stack_bytes && sample_in_ring(ctx, task, pid_tgid, t, sp, len, (R))

static __always_inline bool ring_room(struct bpf_perf_event_data *ctx, struct task_struct *task,
				      __u64 pid_tgid, const struct lp_stack_top *t, __u64 sp)
{
	__u64 len = lp_stack_limit(t, sp, stack_bytes);

	if (!t->v || !len)
		return false;
	LP_RING_ROOM(512);
	LP_RING_ROOM(1024);
	LP_RING_ROOM(1536);
	LP_RING_ROOM(2048);
	LP_RING_ROOM(3072);
	LP_RING_ROOM(4096);
	LP_RING_ROOM(6144);
	LP_RING_ROOM(8192);
	LP_RING_ROOM(12288);
	LP_RING_ROOM(16384);
	LP_RING_ROOM(24576);
	LP_RING_ROOM(32768);
	LP_RING_ROOM(49152);
	LP_RING_ROOM(LP_BPF_MAX_STACK_COPY);
	return false;
}

/*
 * The user stack of sample e from its sp: a copy up to the stack's top
 * (lp_stack_top), where a top is known, else the kernel's frame-pointer
 * walk (also with --stack-bytes 0). top_kind: lp_stack_top's, when the
 * caller looked already (LP_TOP_UNSET otherwise: looked up here). Sets
 * e->nustack and e->stack_len after nk kernel frames.
 */
static __always_inline void user_stack(struct bpf_perf_event_data *ctx, struct task_struct *task,
				       struct lp_ev_sample *e, __u32 nk, int top_kind,
				       struct lp_stack_top *t)
{
	__u32 nu = 0, copied = 0;
	long n;

	if (stack_bytes && top_kind == LP_TOP_UNSET)
		top_kind = lp_stack_top(task, e->sp, t);
	if (stack_bytes && top_kind != LP_TOP_NONE) {
		/*
		 * The symbolizer unwinds from the copy (CFI, or frame
		 * pointers found in it), so the kernel's frame-pointer walk
		 * would only repeat part of that work here.
		 */
		copied = lp_copy_user_stack(bpf_get_smp_processor_id(), (__u8 *)e->stack, nk * 8,
					    e->sp, lp_stack_limit(t, e->sp, stack_bytes), t->v);
	} else {
		if (stack_bytes)
			__sync_fetch_and_add(&stats.ustack_fp, 1);
		n = bpf_get_stack(ctx, &e->stack[nk], LP_BPF_MAX_FRAMES * 8, BPF_F_USER_STACK);
		if (n < 0)
			__sync_fetch_and_add(&stats.ustack_errors, 1);
		else
			nu = (__u32)n / 8;
		if (nu > LP_BPF_MAX_FRAMES)
			nu = LP_BPF_MAX_FRAMES;
	}
	e->nustack = nu;
	e->stack_len = copied;
}

SEC("perf_event")
int on_cpu_sample(struct bpf_perf_event_data *ctx)
{
	struct task_struct *task = lp_current_task();
	struct lp_stack_top t = {};
	struct lp_ev_scratch *sc;
	struct lp_ev_sample *e;
	__u32 cpu = bpf_get_smp_processor_id(), nk = 0, size;
	bool user = (ctx->regs.cs & 3) == 3;
	int top_kind = LP_TOP_UNSET;
	__u64 pid_tgid;
	long n;

	if (have_task_btf)
		pid_tgid = ((__u64)task->tgid << 32) | (__u32)task->pid;
	else
		pid_tgid = bpf_get_current_pid_tgid();
	if ((__u32)pid_tgid == 0) {
		/* the idle task: counted, not emitted */
		__sync_fetch_and_add(&stats.idle, 1);
		return 0;
	}
	if (lp_self(pid_tgid >> 32)) {
		__sync_fetch_and_add(&stats.self, 1);
		return 0;
	}
	if (!lp_selected(pid_tgid >> 32)) {
		__sync_fetch_and_add(&stats.filtered, 1);
		return 0;
	}
	if (user && stack_bytes && ctx->regs.rsp) {
		top_kind = lp_stack_top(task, ctx->regs.rsp, &t);
		if (top_kind == LP_TOP_KNOWN && t.v && !t.v->faulted &&
		    ring_room(ctx, task, pid_tgid, &t, ctx->regs.rsp))
			return 0;
	}
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc)
		return 0;
	e = &sc->s;
	fill_sample_hdr(&e->hdr, task, pid_tgid);
	e->period_ns = ctx->sample_period;
	e->ip = e->sp = e->bp = 0;
	e->nustack = 0;
	e->stack_len = 0;

	/*
	 * A sample that interrupted user mode (CPL 3 in the saved cs) has no
	 * kernel stack, and its user registers are the interrupted ones: the
	 * kernel's stack walk (about 1 us here even when it finds nothing)
	 * and the read of the saved registers are skipped.
	 */
	if (user) {
		e->ip = ctx->regs.rip;
		e->sp = ctx->regs.rsp;
		e->bp = ctx->regs.rbp;
	} else {
		n = bpf_get_stack(ctx, e->stack, LP_BPF_MAX_FRAMES * 8, 0);
		if (n < 0)
			__sync_fetch_and_add(&stats.kstack_errors, 1);
		else
			nk = (__u32)n / 8;
		if (nk > LP_BPF_MAX_FRAMES)
			nk = LP_BPF_MAX_FRAMES;
		/*
		 * In the kernel on behalf of a user task: its user-mode
		 * registers are at the top of its kernel stack.
		 */
		if (!(BPF_CORE_READ(task, flags) & PF_KTHREAD) && BPF_CORE_READ(task, mm)) {
			struct pt_regs ur;

			if (lp_user_regs(task, &ur) == 0) {
				e->ip = ur.rip;
				e->sp = ur.rsp;
				e->bp = ur.rbp;
			}
		}
	}
	e->nkstack = nk;
	if (e->sp)
		user_stack(ctx, task, e, nk, top_kind, &t);

	size = LP_EV_SAMPLE_FIXED_SIZE + (nk + e->nustack) * 8 + e->stack_len;
	if (size > sizeof(*sc))
		return 0; /* cannot happen; bounds the size for the verifier */
	if (bpf_ringbuf_output(&events, e, size, lp_rb_flags()))
		__sync_fetch_and_add(&stats.ringbuf_full, 1);
	return 0;
}

static __always_inline int emit_task(__u32 type, struct task_struct *p)
{
	struct lp_ev_task *e;
	__u32 tgid = BPF_CORE_READ(p, tgid);

	if (!lp_wanted(tgid))
		return 0;
	e = bpf_ringbuf_reserve(&events, sizeof(*e), 0); /* flags must be 0 */
	if (!e) {
		__sync_fetch_and_add(&stats.task_lost, 1);
		return 0;
	}
	fill_hdr(&e->hdr, type, ((__u64)tgid << 32) | (__u32)BPF_CORE_READ(p, pid));
	bpf_get_current_comm(e->hdr.comm, sizeof(e->hdr.comm)); /* p is current */
	bpf_ringbuf_submit(e, lp_rb_flags());
	__sync_fetch_and_add(&stats.task_events, 1);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(on_exec, struct task_struct *p)
{
	/* a new image, a new stack: its bounds are looked up again */
	if (have_task_storage)
		bpf_task_storage_delete(&stack_tops, p);
	return emit_task(LP_EV_EXEC, p);
}

/*
 * A new process started by one of lowprof's own is lowprof's too (a file
 * worker, a symbolizer started again, a symbolizer's helper): left out
 * before it first runs, as this tracepoint comes before the child is woken.
 * A full map leaves it in the profile.
 */
static __always_inline void self_fork(__u32 parent_tgid, __u32 child_tgid)
{
	__u8 one = 1;

	if (exclude_self && parent_tgid != child_tgid &&
	    bpf_map_lookup_elem(&self_tgids, &parent_tgid))
		bpf_map_update_elem(&self_tgids, &child_tgid, &one, BPF_ANY);
}

/* A process that ended: its pid, used again, is no longer lowprof's. */
static __always_inline void self_exit(__u32 tgid)
{
	if (exclude_self)
		bpf_map_delete_elem(&self_tgids, &tgid);
}

/* A new thread: where its stack's top is (lp_thread_stack). */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(on_fork, struct task_struct *parent, struct task_struct *child)
{
	/* not loaded without task storage (collector/kfeatures.c) */
	self_fork(parent->tgid, child->tgid);
	if (have_task_storage && lp_wanted(child->tgid))
		lp_thread_stack(parent, child);
	return 0;
}

/*
 * Whether p, exiting, is the last thread of its process: do_exit counts
 * signal->live down before this tracepoint. Not the leader's exit: a
 * leader that calls pthread_exit early leaves its threads running, and
 * the process's mappings must outlive it.
 */
static __always_inline bool group_dead(struct task_struct *p)
{
	return BPF_CORE_READ(p, signal, live.counter) == 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(on_exit, struct task_struct *p)
{
	if (!group_dead(p))
		return 0;
	self_exit(BPF_CORE_READ(p, tgid));
	return emit_task(LP_EV_EXIT, p);
}

/* raw_tp fallbacks for kernels without BTF-enabled tracepoints. */
SEC("raw_tp/sched_process_exec")
int on_exec_raw(struct bpf_raw_tracepoint_args *ctx)
{
	return emit_task(LP_EV_EXEC, (struct task_struct *)ctx->args[0]);
}

SEC("raw_tp/sched_process_exit")
int on_exit_raw(struct bpf_raw_tracepoint_args *ctx)
{
	struct task_struct *p = (struct task_struct *)ctx->args[0];

	if (!group_dead(p))
		return 0;
	self_exit(BPF_CORE_READ(p, tgid));
	return emit_task(LP_EV_EXIT, p);
}
