// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

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
