/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Copy of the top of the current task's user stack, shared by the BPF
 * programs that capture one (profile.bpf.c, offcpu.bpf.c). Include after
 * vmlinux.h, the libbpf helpers and profile.h.
 */
#ifndef LOWPROF_BPF_USTACK_BPF_H
#define LOWPROF_BPF_USTACK_BPF_H

/*
 * Per thread: its stack's top where it is known exactly (a thread started
 * while the programs ran, lp_thread_stack; 0 otherwise), and whether the
 * last copy of its stack stopped at a page that faulted (lp_copy_user_stack).
 */
struct lp_stack_state {
	__u64 top;
	__u32 faulted;
	__u32 pad;
};

/*
 * Task storage of the above, shared by both objects (the collector hands
 * profile's fd to offcpu, bpf_map__reuse_fd). Not created on kernels
 * without task storage for tracing programs (Linux < 5.11).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lp_stack_state);
} stack_tops SEC(".maps");

/*
 * Where a copy of the stack from sp upward must end: nothing above it is a
 * frame, and a thread's frames usually take far less than the limit, so
 * most samples copy, and carry through both rings, a few KiB rather than
 * the whole limit. More to the point, above it lies what must never leave
 * the process: on the main thread's stack argv, the environment and the
 * aux vector (AT_RANDOM, the source of the stack and pointer guards); on a
 * thread's stack its thread descriptor (the guards themselves).
 *
 * The top is the nearest above sp of:
 * - for a thread started while the programs ran, its first stack pointer
 *   (lp_thread_stack): below it are its frames, above it its static TLS and
 *   glibc's thread descriptor;
 * - the process's start_stack (where argc is): on the main thread's stack,
 *   above it are only argv, the environment and the aux vector, which the
 *   unwinder never reads;
 * - the thread pointer (fs base): glibc and musl put the thread descriptor
 *   and TLS at the top of a thread's stack mapping (x86-64 TLS variant II),
 *   so on a thread's stack the thread pointer is where its descriptor
 *   starts.
 * The first two get LP_STACK_TOP_SLACK bytes more, so a CFA a word above
 * the top is still inside the copy. The thread pointer gets none: the
 * frames end below the static TLS under it.
 *
 * That keeps both kinds of secret out whatever stack sp is on: a thread
 * stack ends at its thread pointer, the main thread's at start_stack, and
 * any other (a coroutine's, a signal stack, a Go goroutine's) lies below
 * start_stack, its copy stopping there at the latest, and before that at
 * the first unreadable page (the guard page at the bottom of every glibc
 * and musl thread stack keeps a copy from running up into another thread's
 * stack and descriptor). Where neither is above sp, nothing is known:
 * nothing is copied, and the kernel's frame-pointer walk stands in
 * (lp_stack_top returns LP_TOP_NONE, counted).
 *
 * Reading start_stack and the thread pointer costs two loads per sample;
 * looking up the stack's mapping (bpf_find_vma, Linux 5.17) would cost an
 * mmap-lock trylock and a self-interrupt to release it, fail when the lock
 * is busy (the copy must still stop at the bounds above), and bound only
 * stacks that are neither a process's nor a glibc thread's more tightly.
 */
#define LP_STACK_TOP_SLACK 64

enum lp_top_kind {
	LP_TOP_UNSET = -1, /* not looked at yet */
	LP_TOP_NONE = 0,   /* no top known: no copy */
	LP_TOP_KNOWN = 1,  /* t->top */
};

struct lp_stack_top {
	__u64 top;		  /* the copy ends below it */
	struct lp_stack_state *v; /* the thread's state in task storage, or NULL */
};

/*
 * The top of the stack sp is on (see above), in t, and its kind. task is
 * current, and a BTF pointer when have_task_storage.
 */
static __always_inline int lp_stack_top(struct task_struct *task, __u64 sp, struct lp_stack_top *t)
{
	__u64 ss = BPF_CORE_READ(task, mm, start_stack);
	__u64 fs = BPF_CORE_READ(task, thread.fsbase);
	struct lp_stack_state *v = NULL;
	__u64 top = 0;

	if (ss >= sp)
		top = ss + LP_STACK_TOP_SLACK;
	if (fs > sp && (!top || fs < top))
		top = fs;
	if (have_task_storage) {
		v = bpf_task_storage_get(&stack_tops, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (v && v->top > sp && (!top || v->top < top))
			top = v->top;
	}
	t->v = v;
	t->top = top;
	return top ? LP_TOP_KNOWN : LP_TOP_NONE;
}

/* limit cut to the top t (lp_stack_top): 0 when there is none above sp */
static __always_inline __u64 lp_stack_limit(const struct lp_stack_top *t, __u64 sp, __u64 limit)
{
	if (t->top <= sp)
		return 0;
	return t->top - sp < limit ? t->top - sp : limit;
}

/*
 * A new thread's stack top: its first user stack pointer, which the kernel
 * set from clone's stack argument. Only for a thread (not a process: a
 * forked child runs on a copy of its parent's stack, frames above sp
 * included) that got a stack of its own.
 */
static __always_inline void lp_thread_stack(struct task_struct *parent, struct task_struct *child)
{
	struct lp_stack_state *v;
	struct pt_regs cr, pr;

	if (!stack_bytes || child->pid == child->tgid)
		return;
	if (lp_user_regs(child, &cr) || !cr.rsp || lp_user_regs(parent, &pr) || cr.rsp == pr.rsp)
		return;
	v = bpf_task_storage_get(&stack_tops, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		return;
	v->top = cr.rsp + LP_STACK_TOP_SLACK;
	v->faulted = 0;
}

/* Where lp_copy_pages copies to: a record's frames and stack copy, with slack. */
struct lp_copy_area {
	__u8 b[LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY + 2 * LP_BPF_PAGE_SIZE];
};

/*
 * The copy area of the record being built on this CPU (id cpu) in the
 * including object's scratch, or NULL: each object defines it, after its
 * scratch map.
 */
static __always_inline struct lp_copy_area *lp_copy_area(__u32 cpu);

/*
 * Copies up to limit bytes of the current task's user stack from sp upward
 * to dst + off (off <= LP_EV_FRAMES_BYTES) one page at a time: a single
 * large read fails as a whole when a page in it faults, while page by page
 * keeps everything up to the first page that faults (the top of the stack,
 * or a page not present). Returns the bytes copied.
 *
 * A global function, so the verifier checks it once, for any arguments,
 * rather than once for each state its callers reach it in; and each page's
 * offset follows from the loop index, so its states do not grow with the
 * pages before it. Inlined, the loop took most of the programs' load time,
 * and as a static function three times as long. Its arguments are scalars
 * (the area is found again from the CPU id): Linux 5.10 takes no pointer
 * but the context as a global function's argument.
 */
__noinline __u32 lp_copy_pages(__u32 cpu, __u64 off, __u64 sp, __u64 limit)
{
	struct lp_copy_area *dst = lp_copy_area(cpu);
	__u64 first, start, want;

	if (!dst || off > LP_EV_FRAMES_BYTES || !limit)
		return 0;
	if (limit > LP_BPF_MAX_STACK_COPY)
		limit = LP_BPF_MAX_STACK_COPY;
	/* to the end of sp's page, then whole pages */
	first = LP_BPF_PAGE_SIZE - (sp & (LP_BPF_PAGE_SIZE - 1));
	if (first > limit)
		first = limit;
	if (bpf_probe_read_user(dst->b + off, first, (const void *)sp))
		return 0;
	for (int i = 0; i < LP_BPF_MAX_STACK_COPY / LP_BPF_PAGE_SIZE; i++) {
		start = first + (__u64)i * LP_BPF_PAGE_SIZE;
		/*
		 * start < limit <= LP_BPF_MAX_STACK_COPY, but a verifier
		 * before Linux 6.x learns no bound from comparing two
		 * registers (6.1 refused the read below, mem_size=75760
		 * off=75759): the constant bound is checked on its own, and
		 * the barrier keeps the compiler from dropping it as implied.
		 */
		asm volatile("" : "+r"(start));
		if (start >= LP_BPF_MAX_STACK_COPY || start >= limit)
			break;
		want = limit - start;
		if (want > LP_BPF_PAGE_SIZE)
			want = LP_BPF_PAGE_SIZE;
		if (bpf_probe_read_user(dst->b + off + start, want, (const void *)(sp + start)))
			return start;
	}
	return limit;
}

/*
 * Copies up to limit (<= LP_BPF_MAX_STACK_COPY) bytes of the current task's
 * user stack from sp upward to dst + off, dst being lp_copy_area(cpu); v is the thread's state in task
 * storage (lp_stack_top, may be NULL). Returns the bytes copied. dst has room for
 * LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY + two pages; off <=
 * LP_EV_FRAMES_BYTES.
 *
 * Below a known top the range almost always lies on pages the thread has
 * used, so one read takes it whole: each read of user memory has a cost of
 * its own (a copy that spans two pages costs ~0.1 us more page by page, at
 * 99 Hz). A read fails as a whole, and zeroes all of its destination, when
 * a page in it faults; the copy then goes page by page (lp_copy_pages).
 * Where that happened last time (v->faulted: say, a thread running on a
 * stack of its own below its first one), or where there is no task storage
 * to remember it, the copy goes page by page at once.
 */
static __always_inline __u32 lp_copy_user_stack(__u32 cpu, __u8 *dst, __u32 off, __u64 sp,
						__u64 limit, struct lp_stack_state *v)
{
	__u32 done, faulted;

	if (limit > LP_BPF_MAX_STACK_COPY)
		limit = LP_BPF_MAX_STACK_COPY;
	if (!limit || off > LP_EV_FRAMES_BYTES)
		return 0;
	if (v && !v->faulted && !bpf_probe_read_user(dst + off, limit, (const void *)sp))
		return limit;
	done = lp_copy_pages(cpu, off, sp, limit);
	if (done > limit)
		done = 0; /* cannot happen; bounds it for the verifier */
	faulted = done < limit;
	if (v && v->faulted != faulted)
		v->faulted = faulted;
	return done;
}

#endif /* LOWPROF_BPF_USTACK_BPF_H */
