/* SPDX-License-Identifier: MIT */
/*
 * What lowprof needs of the running kernel before anything starts, checked
 * where a user first meets it (lowprof record, the collector), with the
 * same words. The finer features (helpers, task storage, PROCMAP_QUERY)
 * have fallbacks and are probed by the collector (collector/kfeatures.h).
 */
#ifndef LOWPROF_KERNEL_H
#define LOWPROF_KERNEL_H

#include <stdint.h>

/* The kernel's BTF, which every CO-RE program needs. */
#define LP_KERNEL_BTF "/sys/kernel/btf/vmlinux"

/*
 * 0 when the kernel has BTF; else says, as an error, what is missing and
 * how to get it, and returns -ENOENT.
 */
int lp_check_kernel_btf(void);

/*
 * The cgroup v2 hierarchy's mount point: /sys/fs/cgroup (pure v2) or
 * /sys/fs/cgroup/unified (hybrid), whichever is a cgroup2 mount; NULL
 * when neither is.
 */
const char *lp_cgroup2_root(void);

/*
 * Opens a --cgroup argument: a directory of the cgroup v2 hierarchy,
 * absolute (under root) or relative to root. Returns an fd (O_RDONLY |
 * O_DIRECTORY | O_CLOEXEC) or a negative errno after saying why.
 */
int lp_cgroup2_open(const char *root, const char *arg);

/*
 * The thread group (process) that thread id tid belongs to, from
 * /proc/TID/status: tid itself for a process's main thread, another pid
 * for one of its other threads. Returns it or a negative errno (-ENOENT:
 * no such thread; -EINVAL: no Tgid line).
 */
int lp_proc_tgid(int tid);

/*
 * Whether -p PID names a process that runs: 0, or -1 after saying why
 * ("-p PID: no such process"; "-p PID: a thread of process TGID; give the
 * process", since the filter is by process and a thread's id alone would
 * match nothing). A tgid that cannot be read otherwise passes.
 */
int lp_check_process_arg(int pid);

/*
 * A process's resident memory in bytes, read (pread at 0) from fd, its
 * /proc/PID/statm: 0 with *bytes, or a negative errno (-EINVAL: not the
 * statm format).
 */
int lp_statm_resident(int fd, uint64_t *bytes);

#endif /* LOWPROF_KERNEL_H */
