// SPDX-License-Identifier: MIT
/*
 * Kernel feature probes (kfeatures.h). libbpf's probes load a program of a
 * few instructions calling the helper, or create a map of the type: a few
 * hundred microseconds each, once per run.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "collector_int.h"
#include "kfeatures.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "procfs.h"
#include "profile.h"
#include "offcpu.h"
#include "offcpu.skel.h"
#include "profile.skel.h"

static const char *const names[COLL_F__COUNT] = {
	[COLL_F_TASK_BTF] = "no-task-btf",	     [COLL_F_TASK_STORAGE] = "no-task-storage",
	[COLL_F_TASK_PT_REGS] = "no-task-pt-regs",   [COLL_F_SWITCH_STATE] = "no-switch-state",
	[COLL_F_PROCMAP_QUERY] = "no-procmap-query", [COLL_F_TASK_WORK] = "no-task-work",
};

/*
 * A helper a perf_event program may call: the programs' helpers are all in
 * the kernel's generic tracing set, which perf_event, raw_tp and tp_btf
 * programs share, and libbpf can probe perf_event programs (not tp_btf).
 * An error of the probe itself counts as absent: the fallback is correct
 * everywhere.
 */
static bool have_helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_PERF_EVENT, id, NULL) == 1;
}

/* PROCMAP_QUERY on our own maps: the query of our own code's mapping. */
static bool have_procmap_query(void)
{
	struct lps_mapping m = {.start = (uint64_t)(uintptr_t)&have_procmap_query};
	uint8_t id[LPS_MAX_BUILD_ID];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC), r;

	if (fd < 0)
		return false;
	r = coll_maps_build_id(fd, &m, id);
	close(fd);
	/* -ESTALE: it answered, about the mapping that holds m.start */
	return r != -EOPNOTSUPP;
}

/*
 * Whether the kernel BTF's strings hold name (NUL-terminated on both
 * sides): a kfunc is callable when the kernel BTF describes it, and its
 * name is there only then. Read in chunks, without parsing the types:
 * libbpf's btf__load_vmlinux_btf takes ~7 ms and ~12 MB here, this a
 * fraction of both. Any error counts as absent.
 */
static bool btf_has_name(const char *name)
{
	struct {
		uint16_t magic;
		uint8_t version, flags;
		uint32_t hdr_len, type_off, type_len, str_off, str_len;
	} h;
	size_t nlen = strlen(name) + 2, keep = 0;
	char want[128], buf[65536 + 128];
	bool found = false;
	uint64_t off, end;
	int fd;

	if (nlen > sizeof(want))
		return false;
	want[0] = '\0';
	memcpy(want + 1, name, nlen - 1); /* with its NUL */
	fd = open(LP_KERNEL_BTF, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	if (pread(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || h.magic != 0xeB9F)
		goto out;
	off = (uint64_t)h.hdr_len + h.str_off;
	end = off + h.str_len;
	while (!found && off < end) {
		size_t chunk = end - off < 65536 ? (size_t)(end - off) : 65536, total, carry;
		ssize_t n = pread(fd, buf + keep, chunk, (off_t)off);

		if (n <= 0)
			break;
		total = keep + (size_t)n;
		found = memmem(buf, total, want, nlen) != NULL;
		off += (uint64_t)n;
		/* a name cut by the chunk's end is found with the next */
		carry = total < nlen - 1 ? total : nlen - 1;
		memmove(buf, buf + total - carry, carry);
		keep = carry;
	}
out:
	close(fd);
	return found;
}

/* LOWPROF_FALLBACKS: the features to report missing; -EINVAL for a bad name */
static int forced(struct coll_features *f)
{
	const char *env = getenv("LOWPROF_FALLBACKS");
	char *copy, *tok, *save = NULL;
	int err = 0;

	if (!env || !*env)
		return 0;
	copy = strdup(env);
	if (!copy)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		bool any = false;

		for (int i = 0; i < COLL_F__COUNT; i++)
			if (!strcmp(tok, "all") || !strcmp(tok, names[i]))
				f->forced[i] = any = true;
		if (!any) {
			lp_err("LOWPROF_FALLBACKS: unknown fallback '%s' (known: all, no-task-btf, "
			       "no-task-storage, no-task-pt-regs, no-switch-state, "
			       "no-procmap-query, no-task-work)",
			       tok);
			err = -EINVAL;
		}
	}
	free(copy);
	return err;
}

int coll_features__probe(struct coll_features *f)
{
	int err;

	memset(f, 0, sizeof(*f));
	err = forced(f);
	if (err)
		return err;
	f->have[COLL_F_TASK_BTF] = have_helper(BPF_FUNC_get_current_task_btf);
	f->have[COLL_F_TASK_STORAGE] =
		libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1 &&
		have_helper(BPF_FUNC_task_storage_get);
	f->have[COLL_F_TASK_PT_REGS] = have_helper(BPF_FUNC_task_pt_regs);
	f->have[COLL_F_SWITCH_STATE] = true;
	f->have[COLL_F_PROCMAP_QUERY] = have_procmap_query();
	f->have[COLL_F_TASK_WORK] = btf_has_name("bpf_task_work_schedule_resume_impl") &&
				    btf_has_name("bpf_preempt_disable");
	for (int i = 0; i < COLL_F__COUNT; i++)
		if (f->forced[i])
			f->have[i] = false;
	/*
	 * Task storage and bpf_task_pt_regs take a task's BTF pointer, which
	 * only bpf_get_current_task_btf gives the perf_event program.
	 */
	if (!f->have[COLL_F_TASK_BTF]) {
		f->have[COLL_F_TASK_STORAGE] = false;
		f->have[COLL_F_TASK_PT_REGS] = false;
	}
	/* the task work's callback finds the block's task state in task storage */
	if (!f->have[COLL_F_TASK_STORAGE])
		f->have[COLL_F_TASK_WORK] = false;
	return 0;
}

void coll_features__lack(struct coll_features *f, enum coll_feature which)
{
	f->have[which] = false;
}

uint32_t coll_features__fallbacks(const struct coll_features *f, bool off_cpu, struct lps_str *out)
{
	uint32_t n = 0;

	for (int i = 0; i < COLL_F__COUNT && n < LPS_MAX_FALLBACKS; i++)
		if (!f->have[i] && (off_cpu || i != COLL_F_TASK_WORK))
			out[n++] = (struct lps_str){names[i], (uint32_t)strlen(names[i])};
	return n;
}

void coll_features__log(const struct coll_features *f)
{
	bool any = false;

	for (int i = 0; i < COLL_F__COUNT; i++) {
		struct lps_str name = {names[i], (uint32_t)strlen(names[i])};
		const char *text = lps_fallback_text(name);

		if (f->have[i])
			continue;
		lp_debug("kernel: %s%s", text ? text : names[i],
			 f->forced[i] ? " [forced by LOWPROF_FALLBACKS]" : "");
		any = true;
	}
	if (!any)
		lp_debug("kernel: every feature lowprof uses is there, no fallbacks");
}

/*
 * The flags both objects' programs branch on (shared.bpf.h); rodata is
 * either skeleton's .rodata, which declare them alike.
 */
#define set_flags(f, rodata)                                                                       \
	do {                                                                                       \
		(rodata)->have_task_btf = (f)->have[COLL_F_TASK_BTF];                              \
		(rodata)->have_task_storage = (f)->have[COLL_F_TASK_STORAGE];                      \
		(rodata)->have_task_pt_regs = (f)->have[COLL_F_TASK_PT_REGS];                      \
	} while (0)

void coll_features__apply_profile(const struct coll_features *f, struct profile_bpf *prof, bool raw)
{
	bool storage = f->have[COLL_F_TASK_STORAGE];

	set_flags(f, prof->rodata);
	bpf_program__set_autoload(prof->progs.on_exec, !raw);
	bpf_program__set_autoload(prof->progs.on_exit, !raw);
	bpf_program__set_autoload(prof->progs.on_exec_raw, raw);
	bpf_program__set_autoload(prof->progs.on_exit_raw, raw);
	/* new threads' first stack pointers go to task storage */
	bpf_program__set_autoload(prof->progs.on_fork, !raw && storage);
	bpf_map__set_autocreate(prof->maps.stack_tops, storage);
}

int coll_features__apply_offcpu(const struct coll_features *f, struct offcpu_bpf *off,
				const struct profile_bpf *prof, bool sparse)
{
	bool storage = f->have[COLL_F_TASK_STORAGE], tw = f->have[COLL_F_TASK_WORK] && sparse;
	bool slots = storage && tw; /* offcpu_switch_tw alone claims slots */
	int err;

	set_flags(f, off->rodata);
	off->rodata->have_slots = slots;
	off->rodata->have_switch_state = f->have[COLL_F_SWITCH_STATE];
	off->rodata->have_task_work = tw;
	bpf_program__set_autoload(off->progs.offcpu_switch, !tw);
	bpf_program__set_autoload(off->progs.offcpu_switch_tw, tw);
	bpf_program__set_autoload(off->progs.offcpu_sys_exit, !tw);
	bpf_map__set_autocreate(off->maps.tasks, storage);
	bpf_map__set_autocreate(off->maps.slots, slots);
	bpf_map__set_autocreate(off->maps.tasks_h, !storage);
	bpf_map__set_max_entries(off->maps.tasks_h, COLL_OFFCPU_TASKS_FALLBACK);
	bpf_map__set_autocreate(off->maps.stack_tops, storage);
	if (!prof)
		return 0;
	if ((err = bpf_map__reuse_fd(off->maps.events, bpf_map__fd(prof->maps.events))) ||
	    (err = bpf_map__reuse_fd(off->maps.pids, bpf_map__fd(prof->maps.pids))) ||
	    (err = bpf_map__reuse_fd(off->maps.cgroups, bpf_map__fd(prof->maps.cgroups))) ||
	    (err = bpf_map__reuse_fd(off->maps.self_tgids, bpf_map__fd(prof->maps.self_tgids))))
		return err;
	return storage ? bpf_map__reuse_fd(off->maps.stack_tops, bpf_map__fd(prof->maps.stack_tops))
		       : 0;
}
