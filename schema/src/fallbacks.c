// SPDX-License-Identifier: MIT
/*
 * The collector's fallback names (meta field 24) and what each means for a
 * profile: the collector logs them, the symbolizer's summary and
 * capture-info print them. A name this table does not know (a newer
 * collector's) is printed as it is.
 */
#include <string.h>

#include "lowprof/schema.h"

static const struct {
	const char *name, *text;
} fallbacks[] = {
	{"no-task-btf", "no bpf_get_current_task_btf (Linux < 5.11): task fields read with "
			"bpf_probe_read_kernel, ~0.1 us more per sample"},
	{"no-task-storage",
	 "no task storage for tracing programs (< 5.11): new threads' stacks copied up to their "
	 "thread pointer, not their first stack pointer (their static TLS too), every copy "
	 "page by page, and off-CPU switch-out times kept in a hash by thread id (least "
	 "recently used threads give way)"},
	{"no-task-pt-regs", "no bpf_task_pt_regs (< 5.15): the user registers of samples taken "
			    "in the kernel read from the top of the kernel stack, and checked"},
	{"no-switch-state", "no prev_state in sched_switch (< 5.18): a thread's state read from "
			    "the thread, so a block woken while switching out is missed"},
	{"no-procmap-query", "no PROCMAP_QUERY (< 6.11): mappings carry no build-ids; live runs "
			     "read them from the files, a capture replays only where its "
			     "binaries are at their paths"},
	{"no-task-work", "no BPF task work (< 6.18): a sampled off-CPU block's user stack read at "
			 "its thread's next system call exit, a program run at every system call "
			 "exit of the host (a pipe ping-pong lost ~15% of its throughput to it)"},
	{"no-mmap-events", "no side-band mmap events (perf_event_open refused): mappings read "
			   "from /proc/PID/maps when a process is first sampled, so processes "
			   "that end within a drain interval are not symbolized"},
};

const char *lps_fallback_text(struct lps_str name)
{
	for (size_t i = 0; i < sizeof(fallbacks) / sizeof(fallbacks[0]); i++)
		if (strlen(fallbacks[i].name) == name.len &&
		    !memcmp(fallbacks[i].name, name.ptr, name.len))
			return fallbacks[i].text;
	return NULL;
}
