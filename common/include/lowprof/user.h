/* SPDX-License-Identifier: MIT */
/*
 * The user lowprof runs its unprivileged side as: the symbolizer, the
 * ring's owner, capture-info. By default a dedicated system user,
 * "lowprof", never nobody: nobody is the identity every daemon and
 * container that wants "no one" shares, and any process running as the
 * ring's owner can take the ring while no symbolizer is attached or write
 * the symbol cache. What it is not: a user database; names go through
 * getpwnam (NSS), before any sandbox is entered.
 */
#ifndef LOWPROF_USER_H
#define LOWPROF_USER_H

#include <sys/types.h>

#define LP_USER_DEFAULT "lowprof"
/*
 * How the user is made, as deploy/install-deps.sh makes it: a system
 * account with its own group, no login shell, and a home that does not
 * exist, so it owns nothing but what lowprof hands it (the cache
 * directory).
 */
#define LP_USER_CREATE_CMD                                                                         \
	"useradd --system --user-group --no-create-home --home-dir /nonexistent "                  \
	"--shell /usr/sbin/nologin"

/* lp_user_lookup flags */
#define LP_USER_NUMERIC	 1u /* a number no passwd entry names is that uid (containers) */
#define LP_USER_NOT_ROOT 2u /* uid 0 is refused */

/*
 * Looks up user, the value of option opt (e.g. "--user"). Returns 0 and
 * *uid, *gid (either may be NULL; *gid is (gid_t)-1 for a bare number), or
 * after saying why: -ENOENT, with the exact command that creates the user
 * and the option that names another; -EPERM for root with LP_USER_NOT_ROOT.
 */
int lp_user_lookup(const char *user, const char *opt, unsigned flags, uid_t *uid, gid_t *gid);

/*
 * Started as root: become user (the value of option opt) with no
 * capabilities in any set. The bounding set is emptied first (that needs
 * CAP_SETPCAP), then groups, gid and uid change; changing uid from 0 clears
 * the permitted and effective sets. Started as another user: only give up
 * the capabilities it was handed. 0, or a negative errno (said why).
 */
int lp_become_user(const char *user, const char *opt);

/*
 * --exit-with-parent: SIGTERM to this process when its parent dies
 * (PR_SET_PDEATHSIG). A uid change clears that signal: call it after
 * lp_become_user. parent: the parent's pid as read at start, so that a
 * parent that died before the signal was armed is seen. 0, or -ECHILD
 * when it is already gone.
 */
int lp_exit_with_parent(pid_t parent);

#endif /* LOWPROF_USER_H */
