// SPDX-License-Identifier: MIT
#include <errno.h>
#include <grp.h>
#include <unistd.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "lowprof/caps.h"
#include "lowprof/log.h"
#include "lowprof/user.h"

/* A uid written as decimal digits, below (uid_t)-1; -EINVAL otherwise. */
static int parse_uid(const char *s, uid_t *uid)
{
	unsigned long long v;
	char *end;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v >= 0xffffffffull)
		return -EINVAL;
	*uid = (uid_t)v;
	return 0;
}

int lp_user_lookup(const char *user, const char *opt, unsigned flags, uid_t *uid, gid_t *gid)
{
	struct passwd *pw = getpwnam(user);
	uid_t u;
	gid_t g = (gid_t)-1;

	if (pw) {
		u = pw->pw_uid;
		g = pw->pw_gid;
	} else if (!(flags & LP_USER_NUMERIC) || parse_uid(user, &u)) {
		lp_err("%s %s: no such user; create it with", opt, user);
		lp_err("  " LP_USER_CREATE_CMD " %s", user);
		lp_err("%sor name another user with %s USER",
		       strcmp(user, LP_USER_DEFAULT) ? "" : "(deploy/install-deps.sh does), ", opt);
		return -ENOENT;
	}
	if (u == 0 && (flags & LP_USER_NOT_ROOT)) {
		lp_err("%s %s: that is root; the unprivileged side never runs as root", opt, user);
		return -EPERM;
	}
	if (uid)
		*uid = u;
	if (gid)
		*gid = g;
	return 0;
}

int lp_become_user(const char *user, const char *opt)
{
	uid_t uid;
	gid_t gid;
	int err = 0;

	if (geteuid() != 0)
		return lp_caps_limit(0); /* already unprivileged: give up what we were handed */
	err = lp_user_lookup(user, opt, LP_USER_NOT_ROOT, &uid, &gid);
	if (err)
		return err;
	err = lp_caps_bound(0);
	if (err)
		return err;
	if (setgroups(0, NULL) || setresgid(gid, gid, gid) || setresuid(uid, uid, uid)) {
		err = -errno;
		lp_err("privileges: becoming %s: %m", user);
		return err;
	}
	return lp_caps_limit(0);
}

int lp_exit_with_parent(pid_t parent)
{
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	/* the parent may have died before the signal was armed */
	return getppid() == parent ? 0 : -ECHILD;
}
