/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Copy of the top of the current task's user stack, shared by the BPF
 * programs that capture one (profile.bpf.c, offcpu.bpf.c). Include after
 * vmlinux.h, the libbpf helpers and profile.h.
 */
#ifndef LOWPROF_BPF_USTACK_BPF_H
#define LOWPROF_BPF_USTACK_BPF_H

/* The mapping a thread's stack pointer was last found in. */
struct lp_stack_vma {
	__u64 start, end;
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
 * limit cut to the top of the stack sp is on: nothing above it is a frame,
 * and a thread's frames usually take far less than the limit, so most
 * samples copy, and carry through both rings, a few KiB rather than the
 * whole limit. The top is, by the first that applies:
 * - for a thread started while the programs ran, its first stack pointer
 *   (on_fork): below it are its frames, above it glibc's thread descriptor
 *   and TLS;
 * - on the main thread's stack, the process's start_stack (where argc is):
 *   above it are only argv, the environment and the aux vector, which the
 *   unwinder never reads and which should not travel (environments hold
 *   secrets);
 * - on a thread's stack whose mapping also holds its thread pointer (fs
 *   base: glibc and musl put the thread descriptor and TLS at the top of
 *   the thread's stack mapping, x86-64 TLS variant II), the thread pointer;
 * - otherwise the end of the mapping sp is in.
 * Each gets LP_STACK_TOP_SLACK bytes more, so a CFA a word above the top is
 * still inside the copy.
 *
 * bpf_find_vma runs once per thread and stack: in the sampling interrupt it
 * can only trylock the mmap lock and must release it through an irq_work (a
 * self-interrupt, ~8 us here), so the bounds are kept in task storage and
 * looked up again only when sp leaves them (a thread switching stacks).
 * A stack keeps its top for the thread's life: it grows down only. The
 * limit is unchanged when the lookup fails (mmap lock busy) or storage is
 * short.
 */
#define LP_STACK_TOP_SLACK 64

static __always_inline __u64 lp_stack_limit(struct task_struct *task, __u64 sp, __u64 limit)
{
	struct lp_stack_vma *v, found = {};
	__u64 ss, fs;

	v = bpf_task_storage_get(&stack_vmas, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!v)
		return limit;
	if (sp < v->start || sp >= v->end) {
		if (bpf_find_vma(task, sp, lp_vma_bounds, &found, 0) || found.end <= sp)
			return limit;
		ss = BPF_CORE_READ(task, mm, start_stack);
		if (ss >= sp && ss + LP_STACK_TOP_SLACK < found.end)
			found.end = ss + LP_STACK_TOP_SLACK;
		fs = BPF_CORE_READ(task, thread.fsbase);
		if (fs > sp && fs + LP_STACK_TOP_SLACK < found.end)
			found.end = fs + LP_STACK_TOP_SLACK;
		v->start = found.start;
		v->end = found.end;
	}
	if (v->end - sp < limit)
		limit = v->end - sp;
	return limit;
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
}

/*
 * Copies up to limit (<= LP_BPF_MAX_STACK_COPY) bytes of the current task's
 * user stack from sp upward to dst + off. Returns the bytes copied. dst has
 * room for LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY + one page; off <=
 * LP_EV_FRAMES_BYTES.
 *
 * The range almost always lies on pages the thread has used, below the top
 * lp_stack_limit found, so one read takes it whole: each read of user memory
 * has a cost of its own (a copy that spans two pages costs ~0.1 us more page
 * by page, at 99 Hz). A read fails as a whole when a page in it faults (past
 * the top of the stack, or not present); only then does the copy go page by
 * page, which keeps everything up to the first page that faults.
 */
static __always_inline __u32 lp_copy_user_stack(__u8 *dst, __u32 off, __u64 sp, __u64 limit)
{
	__u64 done = 0, want, at;

	if (limit > LP_BPF_MAX_STACK_COPY)
		limit = LP_BPF_MAX_STACK_COPY;
	if (!limit || off > LP_EV_FRAMES_BYTES)
		return 0;
	if (!bpf_probe_read_user(dst + off, limit, (const void *)sp))
		return limit;
	for (int i = 0; i < LP_BPF_MAX_STACK_COPY / LP_BPF_PAGE_SIZE + 1; i++) {
		if (done >= limit)
			break;
		want = LP_BPF_PAGE_SIZE - ((sp + done) & (LP_BPF_PAGE_SIZE - 1));
		if (want > limit - done)
			want = limit - done;
		at = off + done;
		if (at > LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY)
			break;
		/*
		 * want is 1..4096 here; the mask makes that visible to the
		 * verifier (the scratch has two pages of slack past the limit)
		 */
		want &= 2 * LP_BPF_PAGE_SIZE - 1;
		if (bpf_probe_read_user(dst + at, want, (const void *)(sp + done)))
			break;
		done += want;
	}
	return done;
}

#endif /* LOWPROF_BPF_USTACK_BPF_H */
