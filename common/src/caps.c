// SPDX-License-Identifier: MIT
#include <errno.h>
#include <sys/capability.h>
#include <sys/prctl.h>

#include "lowprof/caps.h"
#include "lowprof/log.h"

int lp_caps_bound(uint64_t keep)
{
	for (int c = 0; c < cap_max_bits(); c++) {
		if (c < 64 && (keep & (1ull << c)))
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

int lp_caps_limit(uint64_t keep)
{
	cap_value_t v[64];
	int n = 0, err = 0;
	cap_t caps;

	for (int c = 0; c < 64; c++)
		if (keep & (1ull << c))
			v[n++] = c;

	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) && errno != EINVAL) {
		err = -errno;
		lp_err("caps: clearing ambient capabilities: %m");
		return err;
	}
	caps = cap_init();
	if (!caps)
		return -ENOMEM;
	if ((n && (cap_set_flag(caps, CAP_PERMITTED, n, v, CAP_SET) ||
		   cap_set_flag(caps, CAP_EFFECTIVE, n, v, CAP_SET))) ||
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
