// SPDX-License-Identifier: MIT
/*
 * After the BPF programs are attached and the kernel symbols read, the
 * collector keeps two capabilities, for the two things it still does that
 * a process of another user can make hard:
 *
 *   CAP_SYS_PTRACE       reading /proc/PID/maps (a ptrace-mode read check)
 *                        of other users' and non-dumpable processes, and
 *                        following /proc/PID/root into their mount
 *                        namespace to open a mapped file (files.c);
 *   CAP_DAC_READ_SEARCH  opening, read-only, a mapped file that only its
 *                        owner may read, or one under directories only
 *                        its owner may search, to hand to the symbolizer.
 *
 * Everything else goes, from every set, and no_new_privs is set so nothing
 * can come back through exec.
 */
#include <sys/capability.h>

#include "collector_int.h"
#include "lowprof/caps.h"

#define KEEP (LP_CAP(CAP_SYS_PTRACE) | LP_CAP(CAP_DAC_READ_SEARCH))

int coll_drop_caps(void)
{
	int err = lp_caps_bound(KEEP);

	return err ? err : lp_caps_limit(KEEP);
}
