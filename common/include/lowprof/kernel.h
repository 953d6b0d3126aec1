/* SPDX-License-Identifier: MIT */
/*
 * What lowprof needs of the running kernel before anything starts, checked
 * where a user first meets it (lowprof record, the collector), with the
 * same words. The finer features (helpers, task storage, PROCMAP_QUERY)
 * have fallbacks and are probed by the collector (collector/kfeatures.h).
 */
#ifndef LOWPROF_KERNEL_H
#define LOWPROF_KERNEL_H

/* The kernel's BTF, which every CO-RE program needs. */
#define LP_KERNEL_BTF "/sys/kernel/btf/vmlinux"

/*
 * 0 when the kernel has BTF; else says, as an error, what is missing and
 * how to get it, and returns -ENOENT.
 */
int lp_check_kernel_btf(void);

#endif /* LOWPROF_KERNEL_H */
