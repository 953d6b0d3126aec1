// SPDX-License-Identifier: MIT
/*
 * After the BPF programs are attached and the kernel symbols read, the
 * collector needs one capability: CAP_SYS_PTRACE, because reading
 * /proc/PID/maps of a process of another user (or a non-dumpable one) is a
 * ptrace-mode read check. Everything else goes, from every set, and
 * no_new_privs is set so nothing can come back through exec.
 */
#include <sys/capability.h>

#include "collector_int.h"
#include "lowprof/caps.h"

int coll_drop_caps(void)
{
	int err = lp_caps_bound(CAP_SYS_PTRACE);

	return err ? err : lp_caps_limit(CAP_SYS_PTRACE);
}
