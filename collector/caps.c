// SPDX-License-Identifier: MIT
/*
 * After the BPF programs are attached and the kernel symbols read, the
 * collector needs one capability: CAP_SYS_PTRACE, because reading
 * /proc/PID/maps of a process of another user (or a non-dumpable one) is a
 * ptrace-mode read check. Everything else goes, from every set, and
 * no_new_privs is set so nothing can come back through exec.
 */
#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "collector_int.h"
#include "lowprof/log.h"

int coll_drop_caps(void)
{
	cap_value_t keep[] = {CAP_SYS_PTRACE};
	cap_t caps;
	int err = 0;

	/* the bounding set needs CAP_SETPCAP, so it goes first */
	for (int c = 0; c < cap_max_bits(); c++) {
		if (c == CAP_SYS_PTRACE)
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL) {
			err = -errno;
			lp_err("caps: dropping capability %d from the bounding set: %m", c);
			return err;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) {
		err = -errno;
		lp_err("caps: clearing ambient capabilities: %m");
		return err;
	}
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if (cap_set_flag(caps, CAP_PERMITTED, 1, keep, CAP_SET) ||
	    cap_set_flag(caps, CAP_EFFECTIVE, 1, keep, CAP_SET) || cap_set_proc(caps)) {
		err = -errno;
		lp_err("caps: dropping capabilities: %m");
	}
	cap_free(caps);
	if (!err && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		err = -errno;
		lp_err("caps: setting no_new_privs: %m");
	}
	return err;
}
