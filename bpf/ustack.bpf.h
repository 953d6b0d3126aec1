/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Copy of the top of the current task's user stack, shared by the BPF
 * programs that capture one (profile.bpf.c, offcpu.bpf.c). Include after
 * vmlinux.h, the libbpf helpers and profile.h.
 */
#ifndef LOWPROF_BPF_USTACK_BPF_H
#define LOWPROF_BPF_USTACK_BPF_H

/*
 * The mapping a thread's stack pointer was last found in, and whether the
 * last copy from it stopped at a page that faulted (lp_copy_user_stack).
 */
struct lp_stack_vma {
	__u64 start, end;
	__u32 faulted;
	__u32 pad;
};

/* bpf_find_vma's callback: the bounds of the mapping holding the address */
static long lp_vma_bounds(struct task_struct *task, struct vm_area_struct *vma, void *ctx)
{
	struct lp_stack_vma *v = ctx;

	v->start = vma->vm_start;
	v->end = vma->vm_end;
	return 0;
}

/*
 * Per thread, the bounds of the mapping its stack is in. Shared by both
 * objects (the collector hands profile's fd to offcpu, bpf_map__reuse_fd).
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct lp_stack_vma);
} stack_vmas SEC(".maps");

/*
 * Where a copy of the stack from sp upward must end: nothing above it is a
 * frame, and a thread's frames usually take far less than the limit, so
 * most samples copy, and carry through both rings, a few KiB rather than
 * the whole limit. More to the point, above it lie what must never leave
 * the process: on the main thread's stack argv, the environment and the
 * aux vector (AT_RANDOM, the source of the stack and pointer guards); on a
 * thread's stack its thread descriptor (the guards themselves).
 *
 * The top is, by the first that applies:
 * - for a thread started while the programs ran, its first stack pointer
 *   (on_fork): below it are its frames, above it glibc's thread descriptor
 *   and TLS;
 * - on the main thread's stack, the process's start_stack (where argc is):
 *   above it are only argv, the environment and the aux vector, which the
 *   unwinder never reads;
 * - on a thread's stack whose mapping also holds its thread pointer (fs
 *   base: glibc and musl put the thread descriptor and TLS at the top of
 *   the thread's stack mapping, x86-64 TLS variant II), the thread pointer;
 * - otherwise the end of the mapping sp is in.
 * The first two get LP_STACK_TOP_SLACK bytes more, so a CFA a word above
 * the top is still inside the copy. The thread pointer gets none: the
 * frames end below the static TLS under it, and above it is the thread
 * descriptor.
 *
 * The mapping comes from bpf_find_vma, once per thread and stack: in the
 * sampling interrupt it can only trylock the mmap lock and must release it
 * through an irq_work (a self-interrupt, ~8 us here), so the bounds are
 * kept in task storage and looked up again only when sp leaves them (a
 * thread switching stacks). A stack keeps its top for the thread's life:
 * it grows down only.
 *
 * Fail closed: when the mapping is not known (the lookup failed because the
 * mmap lock or the irq_work was busy, common in processes that mmap and
 * munmap a lot; storage is short; or the kernel has no bpf_find_vma or
 * task storage), the copy is cut at what is known without it, the nearest
 * above sp of start_stack (+ slack) and the thread pointer, which keeps
 * both of the above out: a glibc thread's stack ends at its thread pointer,
 * the main thread's at start_stack, and any other stack (a coroutine's, a
 * signal stack) lies below start_stack, its copy stopping there at the
 * latest and at the first unreadable page (a thread stack's guard page)
 * before. When neither is above sp, nothing is copied: the kernel's
 * frame-pointer walk stands in (lp_stack_top returns LP_TOP_NONE).
 */
#define LP_STACK_TOP_SLACK 64

enum lp_top_kind {
	LP_TOP_UNSET = -1, /* not looked up yet */
	LP_TOP_NONE = 0,   /* no top known: no copy */
	LP_TOP_MAPPED = 1, /* from the stack's mapping or the thread's start (v) */
	LP_TOP_KNOWN = 2,  /* start_stack or the thread pointer, mapping unknown */
};

struct lp_stack_top {
	__u64 top;		/* the copy ends below it */
	struct lp_stack_vma *v; /* the thread's bounds in task storage, or NULL */
};

/* the nearest above sp of start_stack (+ slack) and the thread pointer; 0: none */
static __always_inline __u64 lp_known_top(struct task_struct *task, __u64 sp)
{
	__u64 ss = BPF_CORE_READ(task, mm, start_stack);
	__u64 fs = BPF_CORE_READ(task, thread.fsbase);
	__u64 top = 0;

	if (ss >= sp)
		top = ss + LP_STACK_TOP_SLACK;
	if (fs > sp && (!top || fs < top))
		top = fs;
	return top;
}

/*
 * The top of the stack sp is on (see above), in t; the kind of top found.
 * task is current, and a BTF pointer when have_task_storage.
 */
static __always_inline int lp_stack_top(struct task_struct *task, __u64 sp, struct lp_stack_top *t)
{
	struct lp_stack_vma *v, found = {};
	__u64 known;

	t->v = NULL;
	t->top = 0;
	if (have_task_storage) {
		v = bpf_task_storage_get(&stack_vmas, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (v && sp >= v->start && sp < v->end) {
			t->v = v;
			t->top = v->end;
			return LP_TOP_MAPPED;
		}
		if (v && have_find_vma && !bpf_find_vma(task, sp, lp_vma_bounds, &found, 0) &&
		    found.end > sp) {
			known = lp_known_top(task, sp);
			if (known && known < found.end)
				found.end = known;
			v->start = found.start;
			v->end = found.end;
			v->faulted = 0;
			t->v = v;
			t->top = found.end;
			return LP_TOP_MAPPED;
		}
	}
	t->top = lp_known_top(task, sp);
	return t->top ? LP_TOP_KNOWN : LP_TOP_NONE;
}

/* limit cut to the top t (lp_stack_top) */
static __always_inline __u64 lp_stack_limit(const struct lp_stack_top *t, __u64 sp, __u64 limit)
{
	if (t->top > sp && t->top - sp < limit)
		return t->top - sp;
	return t->top > sp ? limit : 0;
}

/*
 * A new thread's stack top: its first user stack pointer, which the kernel
 * set from clone's stack argument. Only for a thread (not a process: a
 * forked child runs on a copy of its parent's stack, frames above sp
 * included) that got a stack of its own. start 0: any sp below the top
 * counts as on this stack.
 */
static __always_inline void lp_thread_stack(struct task_struct *parent, struct task_struct *child)
{
	struct pt_regs cr, pr;
	struct lp_stack_vma *v;

	if (!stack_bytes || child->pid == child->tgid)
		return;
	if (lp_user_regs(child, &cr) || !cr.rsp || lp_user_regs(parent, &pr) || cr.rsp == pr.rsp)
		return;
	v = bpf_task_storage_get(&stack_vmas, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		return;
	v->start = 0;
	v->end = cr.rsp + LP_STACK_TOP_SLACK;
	v->faulted = 0;
}

/* Where lp_copy_pages copies to: a record's frames and stack copy, with slack. */
struct lp_copy_area {
	__u8 b[LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY + 2 * LP_BPF_PAGE_SIZE];
};

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
 * pages before it. Inlined, the loop took most of the programs' load time.
 */
__noinline __u32 lp_copy_pages(struct lp_copy_area *dst, __u64 off, __u64 sp, __u64 limit)
{
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
		if (start >= limit)
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
 * user stack from sp upward to dst + off; v is the stack's bounds in task
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
 * stack of its own below its first one), or where the mapping is not known,
 * the copy goes page by page at once.
 */
static __always_inline __u32 lp_copy_user_stack(__u8 *dst, __u32 off, __u64 sp, __u64 limit,
						struct lp_stack_vma *v)
{
	__u32 done, faulted;

	if (limit > LP_BPF_MAX_STACK_COPY)
		limit = LP_BPF_MAX_STACK_COPY;
	if (!limit || off > LP_EV_FRAMES_BYTES)
		return 0;
	if (v && !v->faulted && !bpf_probe_read_user(dst + off, limit, (const void *)sp))
		return limit;
	done = lp_copy_pages((struct lp_copy_area *)dst, off, sp, limit);
	if (done > limit)
		done = 0; /* cannot happen; bounds it for the verifier */
	faulted = done < limit;
	if (v && v->faulted != faulted)
		v->faulted = faulted;
	return done;
}

#endif /* LOWPROF_BPF_USTACK_BPF_H */
