// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "lowprof/caps.h"
#include "lowprof/log.h"

int lp_caps_bound(int keep)
{
	for (int c = 0; c < cap_max_bits(); c++) {
		if (c == keep)
			continue;
		/* EINVAL: a capability this kernel does not know */
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL) {
			int err = -errno;

			lp_err("caps: dropping capability %d from the bounding set: %m", c);
			return err;
		}
	}
	return 0;
}

int lp_caps_limit(int keep)
{
	cap_value_t v = keep;
	cap_t caps;
	int err = 0;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) {
		err = -errno;
		lp_err("caps: clearing ambient capabilities: %m");
		return err;
	}
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if ((keep >= 0 && (cap_set_flag(caps, CAP_PERMITTED, 1, &v, CAP_SET) ||
			   cap_set_flag(caps, CAP_EFFECTIVE, 1, &v, CAP_SET))) ||
	    cap_set_proc(caps)) {
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
