/* SPDX-License-Identifier: GPL-2.0 OR MIT */
/*
 * Minimal kernel types for lowprof's BPF programs. UAPI structures come from
 * the UAPI headers (their layout is ABI); kernel-internal structures are
 * declared here with only the fields the programs read, tagged
 * preserve_access_index so libbpf relocates each access against the running
 * kernel's BTF (CO-RE). The build never depends on the build host's BTF.
 */
#ifndef LOWPROF_BPF_VMLINUX_H
#define LOWPROF_BPF_VMLINUX_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>
#include <asm/ptrace.h> /* UAPI struct pt_regs (x86_64: ip, sp, bp, ...) */

typedef int pid_t;
typedef _Bool bool;
enum { false = 0, true = 1 };

/*
 * include/uapi/linux/bpf.h of Linux 6.18: a map value field the kernel
 * recognizes by this name (BPF task work, offcpu.bpf.c)
 */
struct bpf_task_work {
	__u64 __opaque;
} __attribute__((aligned(8)));

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct mm_struct {
	unsigned long start_stack;
};

typedef struct {
	int counter;
} atomic_t;

struct signal_struct {
	atomic_t live; /* threads of the group not yet exiting */
};

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
};

/* x86 */
struct thread_struct {
	unsigned long fsbase;
};

struct task_struct {
	unsigned int __state; /* Linux >= 5.14; "state" before (task_struct___o) */
	void *stack;	      /* the kernel stack: user registers at its top */
	unsigned int flags;
	pid_t pid;
	pid_t tgid;
	struct mm_struct *mm;
	struct task_struct *group_leader;
	struct signal_struct *signal;
	char comm[16];
	__u64 start_time; /* monotonic ns at fork: with pid, names a task for its life */
	struct thread_struct thread;
};

/* Linux < 5.14 (commit 2f064a59a11f, "sched: Change task_struct::state") */
struct task_struct___o {
	long state;
};

struct linux_binprm;

#pragma clang attribute pop

#define PF_KTHREAD 0x00200000 /* include/linux/sched.h, stable since 2.6 */

#endif /* LOWPROF_BPF_VMLINUX_H */
