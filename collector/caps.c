// SPDX-License-Identifier: MIT
/*
 * After the BPF programs are attached and the kernel symbols read, the
 * collector keeps two capabilities, for the two things it still does that
 * a process of another user can make hard, and a third when it was given
 * it:
 *
 *   CAP_SYS_PTRACE          reading /proc/PID/maps (a ptrace-mode read
 *                           check) of other users' and non-dumpable
 *                           processes, following /proc/PID/root into their
 *                           mount namespace and /proc/PID/exe to a deleted
 *                           or replaced executable, to open a mapped file
 *                           (files.c);
 *   CAP_DAC_READ_SEARCH     opening, read-only, a mapped file that only its
 *                           owner may read, or one under directories only
 *                           its owner may search, to hand to the symbolizer;
 *   CAP_CHECKPOINT_RESTORE  (if permitted at the drop) opening a mapped
 *                           file that was deleted or replaced since, a
 *                           shared library after an upgrade, through
 *                           /proc/PID/map_files, which the kernel (5.9+)
 *                           allows with it or CAP_SYS_ADMIN in the initial
 *                           user namespace. Its other uses (choosing the
 *                           pid of a new process, setting its own exe link)
 *                           give nothing CAP_SYS_PTRACE does not; without
 *                           it such files stay unsymbolized, said once.
 *
 * Everything else goes, from every set, and no_new_privs is set so nothing
 * can come back through exec.
 */
#include <sys/capability.h>

#include "collector_int.h"
#include "lowprof/caps.h"

#ifndef CAP_CHECKPOINT_RESTORE
#define CAP_CHECKPOINT_RESTORE 40
#endif

#define KEEP (LP_CAP(CAP_SYS_PTRACE) | LP_CAP(CAP_DAC_READ_SEARCH))

/* Whether c is in our permitted set (a kernel before 5.9 knows no 40). */
static bool permitted(cap_value_t c)
{
	cap_flag_value_t v = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (caps) {
		if (cap_get_flag(caps, c, CAP_PERMITTED, &v))
			v = CAP_CLEAR;
		cap_free(caps);
	}
	return v == CAP_SET;
}

int coll_drop_caps(void)
{
	uint64_t keep = KEEP;
	int err;

	if (permitted(CAP_CHECKPOINT_RESTORE))
		keep |= LP_CAP(CAP_CHECKPOINT_RESTORE);
	err = lp_caps_bound(keep);
	return err ? err : lp_caps_limit(keep);
}
