/* SPDX-License-Identifier: MIT */
/*
 * The kernel features lowprof can do without, probed once at load time, and
 * the fallback each one's absence takes. lowprof runs on every Linux from
 * 5.10 with BTF; newer kernels give it cheaper or more exact ways to do the
 * same work. The BPF programs branch on the results (read-only globals set
 * before load, so the verifier drops the branch not taken, and never sees a
 * helper or map the kernel lacks); the collector names the fallbacks in the
 * meta record, so the symbolizer's summary says once which were taken and
 * what they cost.
 *
 * What it is not: a kernel version check. Each feature is probed for itself
 * (distributions backport), with libbpf's probes or, for what no probe
 * shows, by the load or the ioctl itself.
 *
 * Tests force fallbacks on a kernel that has the features:
 * LOWPROF_FALLBACKS=no-task-pt-regs,no-task-btf,... (or "all") makes the probes
 * report those features missing.
 */
#ifndef LOWPROF_COLL_KFEATURES_H
#define LOWPROF_COLL_KFEATURES_H

#include <stdbool.h>
#include <stdint.h>

#include "lowprof/schema.h"

enum coll_feature {
	COLL_F_TASK_BTF,      /* bpf_get_current_task_btf: Linux 5.11 */
	COLL_F_TASK_STORAGE,  /* task storage in tracing programs: 5.11 */
	COLL_F_TASK_PT_REGS,  /* bpf_task_pt_regs: 5.15 */
	COLL_F_SWITCH_STATE,  /* sched_switch's prev_state argument: 5.18 */
	COLL_F_PROCMAP_QUERY, /* the PROCMAP_QUERY ioctl with build-ids: 6.11 */
	COLL_F_TASK_WORK,     /* BPF task work (bpf_task_work_schedule_resume_impl): 6.18 */
	COLL_F__COUNT,
};

struct coll_features {
	bool have[COLL_F__COUNT];
	bool forced[COLL_F__COUNT]; /* reported missing by LOWPROF_FALLBACKS */
};

/*
 * Probes what does not need the programs loaded: the helpers and map types
 * (libbpf_probe_bpf_helper/_map_type, a tiny program each), PROCMAP_QUERY
 * (on /proc/self/maps) and BPF task work (its kfunc's name in the kernel
 * BTF's strings). COLL_F_SWITCH_STATE is assumed present; the off-CPU load
 * tells (coll_features__lack). Dependent features follow: without task
 * BTF pointers, no task storage and no bpf_task_pt_regs (both take one);
 * without task storage, no task work (its callback finds the block's task
 * state there). Returns 0, or
 * -EINVAL for an unknown name in LOWPROF_FALLBACKS (said on stderr).
 */
int coll_features__probe(struct coll_features *f);

/* Marks a feature missing after the fact (the load that needed it failed). */
void coll_features__lack(struct coll_features *f, enum coll_feature which);

/*
 * The fallback names of the missing features ("no-task-pt-regs"), for the meta
 * record: at most LPS_MAX_FALLBACKS; returns their number. Names are static.
 * no-task-work only with off_cpu: nothing else would use it.
 */
uint32_t coll_features__fallbacks(const struct coll_features *f, bool off_cpu,
				  struct lps_str *names);

/* Says once, at -v, what is missing and what is done instead. */
void coll_features__log(const struct coll_features *f);

struct profile_bpf;
struct offcpu_bpf;

/*
 * Fits an opened, not yet loaded profile object to the features: the flags
 * its programs branch on, task storage and its program (on_fork) created
 * and loaded only where the kernel has them; raw: the exec/exit programs
 * are the raw_tp ones (a kernel that refuses the tp_btf ones).
 */
void coll_features__apply_profile(const struct coll_features *f, struct profile_bpf *prof,
				  bool raw);

/*
 * The same for the off-CPU object, which shares prof's (loaded) ring, pid
 * and cgroup filters, set of lowprof's own processes and, with task
 * storage, stack tops (bpf_map__reuse_fd; prof NULL:
 * it has its own, as in the BPF tests); its
 * switch-out times go to task storage or, without, to a hash by thread id
 * (COLL_OFFCPU_TASKS_FALLBACK entries). With task work (the kernel has it
 * and sparse: few blocks are sampled, see COLL_OFFCPU_TASK_WORK_MAX_RATE),
 * offcpu_switch_tw is loaded in place of offcpu_switch and
 * offcpu_sys_exit (attach it alone), and task state goes into slots before
 * task storage (offcpu.bpf.c). 0 or the reuse's -errno.
 */
int coll_features__apply_offcpu(const struct coll_features *f, struct offcpu_bpf *off,
				const struct profile_bpf *prof, bool sparse);

#endif /* LOWPROF_COLL_KFEATURES_H */
