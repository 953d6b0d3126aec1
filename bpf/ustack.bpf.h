/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Copy of the top of the current task's user stack, shared by the BPF
 * programs that capture one (profile.bpf.c, offcpu.bpf.c). Include after
 * vmlinux.h, the libbpf helpers and profile.h.
 */
#ifndef LOWPROF_BPF_USTACK_BPF_H
#define LOWPROF_BPF_USTACK_BPF_H

/*
 * Copies up to limit (<= LP_BPF_MAX_STACK_COPY) bytes of the current task's
 * user stack from sp upward to dst + off, one page at a time: a single large
 * read fails as a whole when its end runs past the stack mapping, while page
 * by page keeps everything up to the first page that faults (the top of the
 * stack, or a page not present). Returns the bytes copied. dst has room for
 * LP_EV_FRAMES_BYTES + LP_BPF_MAX_STACK_COPY + one page; off <=
 * LP_EV_FRAMES_BYTES.
 */
static __always_inline __u32 lp_copy_user_stack(__u8 *dst, __u32 off, __u64 sp, __u64 limit)
{
	__u64 done = 0, want, at;

	if (limit > LP_BPF_MAX_STACK_COPY)
		limit = LP_BPF_MAX_STACK_COPY;
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
