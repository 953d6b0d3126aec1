// SPDX-License-Identifier: GPL-2.0 OR MIT
/*
 * Off-CPU sampling: where threads wait, and for how long.
 *
 * sched_switch, at the switch-out of prev (a voluntary block: not preempted,
 * prev_state != TASK_RUNNING; user tasks only; pid filter): stores the time
 * in prev's state (its slot, else its task storage). Nothing else, so the
 * common path is one array lookup and a store.
 *
 * sched_switch, at the switch-in of next: d = now - t_out. Blocks shorter
 * than min_ns are counted and dropped. Otherwise the block is sampled
 *   event mode: with probability rate,             weight = d / rate
 *   time mode:  with probability min(1, d/period), weight = max(d, period)
 * so that E[weight] = d either way (unbiased totals), and in time mode a
 * block of period or more is always sampled. A sampled block's kernel stack
 * is taken now with bpf_get_task_stack(next): next is not running, its
 * stack is stable and shows where it blocked. Its user registers (top of its
 * kernel stack) are read now too. All of it waits in the pending map.
 *
 * The user stack (copy from sp, or the kernel's frame-pointer walk) can
 * only be read in the task's own context, the first time it runs in the
 * kernel after the switch-in: at its next syscall exit (sys_exit), or at its
 * next voluntary switch-out, whichever comes first (in sched_switch prev is
 * still current, its user memory mapped). The latter is common: one syscall
 * often blocks several times (a write with O_DSYNC waits for the page's
 * writeback, then the buffer, then the cache flush), and each block but the
 * last is emitted there. Where the kernel has BPF task work (Linux 6.18:
 * bpf_task_work_schedule_resume_impl), sys_exit is not attached at all: the
 * switch-in of a sampled block schedules a task work on the task, whose
 * callback runs in the task's own context when it next returns to user mode
 * (after the syscall, or the page fault or interrupt it blocked in), and
 * emits the block there. Time mode samples few blocks, so this moves the
 * work from every system call exit of the host (an empty raw_tp/sys_exit
 * program alone cost a pipe ping-pong 14-16% of its throughput) to the few
 * sampled blocks. In every place, if the user registers still match
 * those taken at the switch-in, the task is still in (or returning from) the
 * kernel entry it blocked in, its user stack untouched since: the record is
 * emitted with the kernel stack, the registers and the user stack. If they
 * do not (the block was not in a syscall, e.g. a page fault, and this is a
 * later syscall), it is emitted with the kernel stack and the registers of
 * the block, and no user stack (counted in no_ustack): never a user stack
 * from another place. A pending record of a task that never blocks or makes
 * a syscall again stays until the collector stops, which counts it as lost.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "profile.h"
#include "offcpu.h"
#include "shared.bpf.h"
#include "ustack.bpf.h"

char LICENSE[] SEC("license") = "Dual MIT/GPL";

#define TASK_RUNNING 0x0000
#define TASK_DEAD    0x0080 /* include/linux/sched.h, stable since 2.6 */

/* Set through the skeleton's rodata before load (and shared.bpf.h's). */
/* sched_switch has its prev_state argument (Linux >= 5.18) */
const volatile bool have_switch_state = true;
const volatile __u32 mode = LP_OFFCPU_EVENT;
const volatile __u64 rate_threshold = LP_OFFCPU_ALWAYS; /* event: rate * 2^32 */
const volatile __u64 min_ns = 0;
const volatile __u64 period_ns = 10000000; /* time mode, <= LP_OFFCPU_MAX_PERIOD_NS */
/* sampled blocks go out from a task work (offcpu_switch_tw), not at sys_exit */
const volatile bool have_task_work = false;
/*
 * Task state in slots before task storage: with task work (offcpu_switch_tw
 * alone claims and frees slots, see task_state)
 */
const volatile bool have_slots = false;

/*
 * Raised by the collector each time it adds processes that already run to
 * lowprof's own (self_tgids: a symbolizer that takes the ring, the walk of
 * --self-pid's tree after attaching), so that answers of lp_self cached in
 * the task state before (wanted) are decided again. on_fork's additions
 * need no raise: they are of new processes, whose tasks have no answer yet.
 */
__u32 self_gen = 0;

/*
 * BPF task work (Linux 6.18, kernel/bpf/helpers.c): the callback runs in
 * the task's context when it returns to user mode, with migration (not
 * preemption) disabled, verified as a sleepable async callback. Weak:
 * unresolved on older kernels, where offcpu_switch_tw, the one program
 * that calls them, is not loaded. aux__prog: NULL (the verifier sets it).
 */
struct bpf_map {
	int __unused; /* only pointed to: a STRUCT for libbpf < 1.2, which finds no FWD compatible */
};
extern int bpf_task_work_schedule_resume_impl(struct task_struct *task, struct bpf_task_work *tw,
					      void *map__map,
					      int (*callback)(struct bpf_map *map, void *key,
							      void *value),
					      void *aux__prog) __ksym __weak;
extern void bpf_preempt_disable(void) __ksym __weak;
extern void bpf_preempt_enable(void) __ksym __weak;

/*
 * Switch-out time of each blocked task that has no slot (see slots below):
 * storage attached to the task, freed with it. Grows with the tasks that
 * block while profiled and find their slot taken; one entry is 16
 * bytes of value plus the kernel's element (~100 bytes) and, once per task
 * for all task-storage maps, its bpf_local_storage (~200 bytes).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lp_offcpu_task);
} tasks SEC(".maps");

/*
 * The same by thread id where the kernel has no task storage for tracing
 * programs (Linux < 5.11; not created elsewhere): least recently used
 * threads give way, the collector sizes it (LP_OFFCPU_TASKS_FALLBACK). A
 * thread's last switch-out (TASK_DEAD) clears its entry, so a new thread
 * with a reused id starts clean.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_offcpu_task);
} tasks_h SEC(".maps");

/*
 * The switch-out state of most tasks, in front of task storage: a slot per
 * tid & (LP_OFFCPU_SLOTS - 1), owned from the first block of a task that
 * finds it free (a compare-and-swap on its key, Linux 5.12) until the
 * task's last switch-out (TASK_DEAD). The verifier inlines an array lookup,
 * while bpf_task_storage_get is a helper call (its recursion guard and
 * returns included, two of them made a third of sched_switch's cost on the
 * pipe ping-pong). A task's state stays in one place for its life: its
 * slot, or task storage when the slot was taken at its first block (a task
 * with storage never claims a slot). The key is the tid and the low half of
 * the task's start time, so that a slot left behind (a thread whose tid an
 * exec gave to its leader never sees TASK_DEAD under it) is never taken for
 * a later thread's with the same id: it only sends that slot's tasks to
 * task storage. LP_OFFCPU_SLOTS entries of 24 bytes.
 */
struct lp_offcpu_slot {
	__u64 key; /* slot_key of its owner; 0: free */
	struct lp_offcpu_task ts;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_OFFCPU_SLOTS);
	__type(key, __u32);
	__type(value, struct lp_offcpu_slot);
} slots SEC(".maps");

static __always_inline __u64 slot_key(struct task_struct *t, __u32 tid)
{
	return (t->start_time << 32) | tid; /* never 0: tid 0 has no state */
}

/* the slot of tid (free, t's or another task's); NULL cannot happen */
static __always_inline struct lp_offcpu_slot *slot_of(__u32 tid)
{
	__u32 i = tid & (LP_OFFCPU_SLOTS - 1);

	return bpf_map_lookup_elem(&slots, &i);
}

/*
 * t's switch-out state (tid: t's thread id), created when create; or NULL.
 * claim (a constant): t may claim its slot. Only offcpu_switch_tw's code
 * has the compare-and-swap that claims (and frees) one: BPF's is Linux
 * 5.12's, and Linux 5.10 refuses a program with it in any instruction,
 * even one the verifier would drop as dead. Task work means Linux 6.18.
 */
static __always_inline struct lp_offcpu_task *task_state(struct task_struct *t, __u32 tid,
							 bool create, bool claim)
{
	struct lp_offcpu_task *ts, zero = {};
	struct lp_offcpu_slot *sl;
	__u64 key;

	if (have_slots) {
		sl = slot_of(tid);
		key = slot_key(t, tid);
		if (sl && sl->key == key)
			return &sl->ts;
		ts = bpf_task_storage_get(&tasks, t, 0, 0);
		if (ts || !create)
			return ts;
		/* t's first block: no other program looks for t's state now */
		if (claim && sl && !sl->key && __sync_val_compare_and_swap(&sl->key, 0, key) == 0) {
			sl->ts = zero;
			return &sl->ts;
		}
	}
	if (have_task_storage)
		return bpf_task_storage_get(&tasks, t, 0,
					    create ? BPF_LOCAL_STORAGE_GET_F_CREATE : 0);
	ts = bpf_map_lookup_elem(&tasks_h, &tid);
	if (ts || !create)
		return ts;
	bpf_map_update_elem(&tasks_h, &tid, &zero, BPF_NOEXIST);
	return bpf_map_lookup_elem(&tasks_h, &tid);
}

/* t's last switch-out: frees its slot if it owns one */
static __always_inline void slot_release(struct task_struct *t, __u32 tid)
{
	struct lp_offcpu_slot *sl = slot_of(tid);

	/* atomic: the task's last stores to its state come before the slot is free */
	if (sl)
		__sync_val_compare_and_swap(&sl->key, slot_key(t, tid), 0);
}

/*
 * Sampled blocks waiting for their task's syscall exit (or task work), by
 * tid. An entry lives from a switch-in until the task's next syscall exit
 * (return to user mode) or voluntary switch-out, so its holders are running
 * or runnable tasks: the collector sizes it at max(128, 64 * online CPUs)
 * (run-queue depth with margin); when full the sample is lost and counted.
 * Kept out of the task storage so that the ~1 KiB kernel stack is not paid
 * by every task that blocks. With task work, an entry's deletion cancels
 * its work if still scheduled (the kernel frees the field with the entry).
 */
struct lp_offcpu_pend_entry {
	struct lp_offcpu_pending p;
	struct bpf_task_work tw; /* have_task_work: the work that emits p */
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 128);
	__type(key, __u32);
	__type(value, struct lp_offcpu_pend_entry);
} pending SEC(".maps");

/*
 * Without task work: how many sampled blocks wait in pending, by bucket of
 * their task's saved user registers' address (task_pt_regs: fixed for a
 * task's life, and the first argument of sys_exit, so that sys_exit finds its bucket
 * without any helper call). sys_exit runs at every system call exit of
 * every thread on the host and returns at once when the bucket is empty,
 * without looking up the task's storage (one array load instead of ~50
 * ns here, where every kernel return is mitigated). Raised where
 * ts->pending is set, lowered (by ts->hint) where it is cleared, so a
 * bucket is never 0 while one of its tasks has a pending block; a count
 * left behind (a task whose 5.10 hash entry gave way while pending) only
 * sends that bucket's tasks down the full path.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LP_OFFCPU_HINTS);
	__type(key, __u32);
	__type(value, __u32);
} pend_hint SEC(".maps");

/* the bucket of the task whose registers are saved at regs */
static __always_inline __u32 hint_bucket(__u64 regs)
{
	return (__u32)((regs >> 12) * 0x9E3779B97F4A7C15ull >> 32) % LP_OFFCPU_HINTS;
}

/* task_pt_regs(task), as sys_exit's first argument gives it for current; 0 if unknown */
static __always_inline __u64 task_regs_addr(struct task_struct *task)
{
	void *stack, *regs;
	__u64 a = 0;

	if (have_task_pt_regs) {
		/* its address as a number (the verifier forbids hashing the pointer) */
		regs = (void *)bpf_task_pt_regs(task);
		bpf_probe_read_kernel(&a, sizeof(a), &regs);
		return a;
	}
	stack = BPF_CORE_READ(task, stack);
	return stack ? (__u64)stack + LP_THREAD_SIZE - sizeof(struct pt_regs) : 0;
}

static __always_inline void hint_add(__u32 b, __s32 v)
{
	__u32 *h = bpf_map_lookup_elem(&pend_hint, &b);

	if (h)
		__sync_fetch_and_add(h, v); /* atomic: tasks of one bucket run on several CPUs */
}

/*
 * Scratch per CPU id (highest online id + 1, set by the collector), a plain
 * array: per-CPU values are limited to 32 KiB and would be allocated for
 * every possible CPU. sched_switch and sys_exit cannot interrupt each other
 * on one CPU (both run with preemption off, neither from an interrupt), so
 * they share it; profile.bpf.c's perf_event program, which can interrupt
 * them, has its own.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_offcpu_scratch);
} scratch SEC(".maps");

_Static_assert(sizeof(struct lp_offcpu_scratch) -
			       __builtin_offsetof(struct lp_offcpu_scratch, e.stack) >=
		       sizeof(struct lp_copy_area),
	       "the scratch holds a copy area from its frames on");

static __always_inline struct lp_copy_area *lp_copy_area(__u32 cpu)
{
	struct lp_offcpu_scratch *sc = bpf_map_lookup_elem(&scratch, &cpu);

	return sc ? (struct lp_copy_area *)sc->e.stack : NULL;
}

/* Counters per CPU id, same sizing as scratch. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lp_offcpu_counts);
} counts SEC(".maps");

/*
 * Emits task's pending block (task is current) and clears it, with its user
 * stack when task's user registers are still those of the block. ctx is the
 * program's context (sys_exit's, or sched_switch's at task's switch-out):
 * both are raw tracepoints, whose bpf_get_stack walks current's user stack;
 * NULL in the task work's callback, which has none (task is then a BTF
 * pointer, which bpf_get_task_stack walks).
 */
static __always_inline void emit_pending(void *ctx, struct task_struct *task, __u64 pid_tgid,
					 struct lp_offcpu_task *ts, struct lp_offcpu_counts *cnt,
					 __u32 cpu)
{
	struct lp_offcpu_pend_entry *pe;
	struct lp_offcpu_pending *p;
	struct lp_offcpu_scratch *sc;
	struct lp_ev_offcpu *e;
	struct lp_stack_top t = {};
	__u32 tid = (__u32)pid_tgid, nk, nu = 0, copied = 0, size;
	int top_kind = LP_TOP_NONE;
	bool same = false;

	ts->pending = 0;
	if (!have_task_work)
		hint_add(ts->hint, -1);
	pe = bpf_map_lookup_elem(&pending, &tid);
	if (!pe)
		return;
	p = &pe->p;
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc) {
		bpf_map_delete_elem(&pending, &tid);
		return;
	}
	e = &sc->e;
	e->hdr.type = LP_EV_OFFCPU;
	e->hdr.cpu = p->cpu;
	e->hdr.time_ns = p->time_ns;
	e->hdr.pid = pid_tgid >> 32;
	e->hdr.tid = tid;
	bpf_get_current_comm(e->hdr.comm, sizeof(e->hdr.comm));
	e->hdr.cgroup_id = bpf_get_current_cgroup_id(); /* task is current */
	e->weight_ns = p->weight_ns;
	e->blocked_ns = p->blocked_ns;
	e->ip = p->ip;
	e->sp = p->sp;
	e->bp = p->bp;
	nk = p->nkstack;
	if (nk > LP_BPF_MAX_FRAMES)
		nk = LP_BPF_MAX_FRAMES;
	if (bpf_probe_read_kernel(e->stack, nk * 8, p->kstack))
		nk = 0;
	if (p->sp) {
		struct pt_regs ur;

		/* the same kernel entry: still in, or returning from, the one it blocked in */
		same = lp_user_regs(task, &ur) == 0 && ur.rip == p->ip && ur.rsp == p->sp;
	}
	bpf_map_delete_elem(&pending, &tid);
	if (same && stack_bytes)
		top_kind = lp_stack_top(task, e->sp, &t);
	if (same && top_kind != LP_TOP_NONE) {
		/* see lp_stack_top: where nothing is known, the FP walk below */
		copied = lp_copy_user_stack(cpu, (__u8 *)e->stack, nk * 8, e->sp,
					    lp_stack_limit(&t, e->sp, stack_bytes), t.v);
	} else if (same) {
		if (stack_bytes)
			cnt->ustack_fp++;
		long n = ctx ? bpf_get_stack(ctx, &e->stack[nk], LP_BPF_MAX_FRAMES * 8,
					     BPF_F_USER_STACK)
			     : bpf_get_task_stack(task, &e->stack[nk], LP_BPF_MAX_FRAMES * 8,
						  BPF_F_USER_STACK);

		if (n < 0)
			cnt->ustack_errors++;
		else
			nu = (__u32)n / 8;
		if (nu > LP_BPF_MAX_FRAMES)
			nu = LP_BPF_MAX_FRAMES;
	} else {
		cnt->no_ustack++;
	}
	e->nkstack = nk;
	e->nustack = nu;
	e->stack_len = copied;
	size = LP_EV_OFFCPU_FIXED_SIZE + (nk + nu) * 8 + copied;
	if (size > sizeof(*sc))
		return; /* cannot happen; bounds the size for the verifier */
	if (bpf_ringbuf_output(&events, e, size, lp_rb_flags()))
		cnt->lost++;
	else
		cnt->emitted++;
}

/*
 * 32 random bits from the CPU's xorshift64* state, seeded from
 * bpf_get_prandom_u32 on first use: a helper call costs ~40 ns at every
 * sampled-or-not block on CPUs whose kernel returns are mitigated (SRSO),
 * a few shifts on a counter this CPU owns do not. Good enough to draw
 * samples (not a secret: a thread could time its blocks anyway).
 */
static __always_inline __u32 lp_rand(struct lp_offcpu_counts *cnt)
{
	__u64 x = cnt->rng;

	if (!x)
		x = ((__u64)bpf_get_prandom_u32() << 32) | bpf_get_prandom_u32() | 1;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	cnt->rng = x;
	return (__u32)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* d ns off CPU: the sampling decision; returns the weight, 0 = not sampled */
static __always_inline __u64 sample_weight(__u64 d, struct lp_offcpu_counts *cnt)
{
	__u64 r = lp_rand(cnt);

	if (mode == LP_OFFCPU_TIME) {
		if (d >= period_ns)
			return d;
		/* P = d / period, d < period <= 2^32: d << 32 fits */
		return r * period_ns < (d << 32) ? period_ns : 0;
	}
	if (rate_threshold >= LP_OFFCPU_ALWAYS)
		return d;
	if (r >= rate_threshold || !rate_threshold)
		return 0;
	/* d / rate = d * 2^32 / threshold, without overflowing d << 32 */
	return (d / rate_threshold << 32) + ((d % rate_threshold) << 32) / rate_threshold;
}

/*
 * The time and CPU of a switch, read once and only when a block starts or
 * ends there: most switches (kernel threads, preemptions, the idle task)
 * need neither, and bpf_ktime_get_ns is the dearest helper on the path.
 */
struct lp_sw {
	__u64 now;
	__u32 cpu;
};

static __always_inline void sw_clock(struct lp_sw *w)
{
	if (!w->now) {
		w->now = bpf_ktime_get_ns();
		w->cpu = bpf_get_smp_processor_id();
	}
}

static __always_inline void block_out(void *ctx, struct task_struct *prev, unsigned int prev_state,
				      struct lp_sw *w, bool tw)
{
	struct lp_offcpu_counts *cnt;
	struct lp_offcpu_task *ts;
	__u32 cpu;

	/*
	 * With a pid or cgroup filter most tasks are not profiled: they are
	 * left out before any state is made for them. Whole host, all are
	 * but lowprof's own, and the answer (a hash lookup, ~35 ns a block)
	 * is kept in the task's state until self_gen moves; a task that takes
	 * the ring owner's uid after its first block is still profiled until
	 * then.
	 */
	if ((filter_pids || filter_cgroups) && !lp_wanted(prev->tgid))
		return;
	ts = task_state(prev, prev->pid, true, tw);
	if (ts && !filter_pids && !filter_cgroups) {
		__u32 gen = *(volatile __u32 *)&self_gen + 1;

		if (ts->wanted_gen != gen) {
			ts->wanted = !lp_self(prev->tgid);
			ts->wanted_gen = gen;
		}
		if (!ts->wanted)
			return;
	}
	sw_clock(w);
	cpu = w->cpu;
	cnt = bpf_map_lookup_elem(&counts, &cpu);
	if (!cnt)
		return;
	if (!ts) {
		cnt->storage_errors++;
		return;
	}
	/*
	 * blocking again before any syscall exit (often in the same syscall):
	 * the last block goes out now, prev being current
	 */
	if (ts->pending)
		emit_pending(ctx, prev, ((__u64)prev->tgid << 32) | (__u32)prev->pid, ts, cnt, cpu);
	cnt->switches++;
	ts->t_out = (prev_state & TASK_DEAD) ? 0 : w->now;
	/* the hash by thread id (Linux < 5.11) gives the id to a new thread next */
	if (prev_state & TASK_DEAD)
		ts->wanted_gen = 0;
}

static __always_inline void switch_out(void *ctx, struct task_struct *prev, bool preempt,
				       unsigned int prev_state, struct lp_sw *w, bool tw)
{
	if (preempt || prev_state == TASK_RUNNING)
		return; /* still runnable: not a block */
	if ((prev->flags & PF_KTHREAD) || !prev->pid)
		return;
	block_out(ctx, prev, prev_state, w, tw);
	/* whether profiled or not now: a filter may have changed since the slot was taken */
	if (tw && have_slots && (prev_state & TASK_DEAD))
		slot_release(prev, prev->pid);
}

/*
 * Emits the pending block of the task this runs in (offcpu_switch_tw's task
 * work callback): with preemption off, as in the programs, since the
 * scratch of this CPU is shared with them and with other tasks' callbacks.
 */
static int offcpu_task_work(struct bpf_map *map, void *key, void *value)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct lp_offcpu_counts *cnt;
	struct lp_offcpu_task *ts;
	__u32 cpu;

	bpf_preempt_disable();
	cpu = bpf_get_smp_processor_id();
	cnt = bpf_map_lookup_elem(&counts, &cpu);
	ts = task_state(task, (__u32)pid_tgid, false, false);
	if (cnt && ts && ts->pending)
		emit_pending(NULL, task, pid_tgid, ts, cnt, cpu);
	bpf_preempt_enable();
	return 0;
}

/* tw: the block goes out from a task work, not at sys_exit (offcpu_switch_tw) */
static __always_inline void switch_in(struct task_struct *next, struct lp_sw *sw, bool tw)
{
	struct lp_offcpu_pend_entry *pe;
	struct lp_offcpu_counts *cnt;
	struct lp_offcpu_scratch *sc;
	struct lp_offcpu_pending *p;
	struct lp_offcpu_task *ts;
	struct pt_regs ur;
	__u64 d, w;
	__u32 tid, cpu;
	__u64 now;
	long n;

	/* kernel threads and the idle task never block here: no state to look up */
	if ((next->flags & PF_KTHREAD) || !next->pid)
		return;
	ts = task_state(next, next->pid, false, false);
	if (!ts || !ts->t_out)
		return;
	sw_clock(sw);
	now = sw->now;
	cpu = sw->cpu;
	d = now - ts->t_out;
	ts->t_out = 0;
	cnt = bpf_map_lookup_elem(&counts, &cpu);
	if (!cnt)
		return;
	if (d < min_ns) {
		cnt->short_blocks++;
		return;
	}
	w = sample_weight(d, cnt);
	if (!w)
		return;
	cnt->sampled++;
	sc = bpf_map_lookup_elem(&scratch, &cpu);
	if (!sc)
		return;
	/*
	 * the entry is made (from any bytes: the scratch's) and filled in
	 * place, so that its kernel stack is copied once; no other program
	 * reads it before the task runs again
	 */
	tid = next->pid;
	if (bpf_map_update_elem(&pending, &tid, sc, BPF_ANY) ||
	    !(pe = bpf_map_lookup_elem(&pending, &tid))) {
		cnt->lost++;
		return;
	}
	p = &pe->p;
	p->time_ns = now;
	p->weight_ns = w;
	p->blocked_ns = d;
	p->cpu = cpu;
	p->ip = p->sp = p->bp = 0;
	if (lp_user_regs(next, &ur) == 0) {
		p->ip = ur.rip;
		p->sp = ur.rsp;
		p->bp = ur.rbp;
	}
	n = bpf_get_task_stack(next, p->kstack, sizeof(p->kstack), 0);
	if (n < 0) {
		cnt->kstack_errors++;
		n = 0;
	}
	p->nkstack = (__u16)(n / 8);
	if (tw) {
		/*
		 * fails only without memory (for its context, once per entry)
		 * or while the task exits: the block then goes out at the
		 * task's next switch-out, or is left pending (counted)
		 */
		bpf_task_work_schedule_resume_impl(next, &pe->tw, &pending, offcpu_task_work, NULL);
	} else if (!ts->pending) {
		ts->hint = hint_bucket(task_regs_addr(next));
		hint_add(ts->hint, 1);
	}
	ts->pending = 1;
}

/*
 * prev's state at the switch: sched_switch's fourth argument since Linux
 * 5.18 (commit fa2c3254d7cf); before it, read from prev, which a wakeup
 * racing the switch may already have made TASK_RUNNING (that block is then
 * missed, never invented). The argument is read only where it exists: the
 * branch on have_switch_state is decided at load time.
 */
static __always_inline unsigned int switch_state(__u64 *ctx, struct task_struct *prev)
{
	struct task_struct___o *old = (void *)prev;

	if (have_switch_state)
		return (unsigned int)ctx[3];
	if (bpf_core_field_exists(prev->__state))
		return BPF_CORE_READ(prev, __state);
	return (unsigned int)BPF_CORE_READ(old, state);
}

/* sched_switch: a block ends for next and begins for prev (tw: see switch_in) */
static __always_inline int on_switch(__u64 *ctx, bool tw)
{
	struct task_struct *prev = (struct task_struct *)ctx[1];
	struct task_struct *next = (struct task_struct *)ctx[2];
	struct lp_sw w = {};

	switch_out(ctx, prev, (bool)ctx[0], switch_state(ctx, prev), &w, tw);
	switch_in(next, &w, tw);
	return 0;
}

SEC("tp_btf/sched_switch")
int offcpu_switch(__u64 *ctx)
{
	return on_switch(ctx, false);
}

/*
 * The same where the kernel has BPF task work and few blocks are sampled
 * (have_task_work; then offcpu_sys_exit is neither loaded nor attached). A
 * program of its own: the callback's address (a BPF_PSEUDO_FUNC load) is
 * refused by Linux < 5.13 even in code the verifier would drop.
 */
SEC("tp_btf/sched_switch")
int offcpu_switch_tw(__u64 *ctx)
{
	return on_switch(ctx, true);
}

SEC("raw_tp/sys_exit")
int offcpu_sys_exit(struct bpf_raw_tracepoint_args *ctx)
{
	__u32 b = hint_bucket(ctx->args[0]), *h; /* args[0]: current's saved registers */
	struct lp_offcpu_counts *cnt;
	struct lp_offcpu_task *ts;
	struct task_struct *task;
	__u64 pid_tgid;
	__u32 cpu;

	/* the common case: nothing pending for this task (nor its bucket) */
	h = bpf_map_lookup_elem(&pend_hint, &b);
	if (!h || !*h)
		return 0;
	pid_tgid = bpf_get_current_pid_tgid();
	task = lp_current_task();
	ts = task_state(task, (__u32)pid_tgid, false, false);
	if (!ts || !ts->pending)
		return 0;
	cpu = bpf_get_smp_processor_id();
	cnt = bpf_map_lookup_elem(&counts, &cpu);
	if (!cnt)
		return 0;
	emit_pending(ctx, task, pid_tgid, ts, cnt, cpu);
	return 0;
}
