// SPDX-License-Identifier: MIT
/*
 * lp-subreaper CMD ARGS...: runs CMD as a child subreaper
 * (PR_SET_CHILD_SUBREAPER survives execve). The end-to-end tests run under
 * it so that a process they started and then orphaned (a collector whose
 * lowprof record was killed) is reparented to the test itself, not to init:
 * the test finds what it left behind in its own process tree, never by
 * name across the machine, where a deployed lowprof may be running.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: lp-subreaper CMD [ARGS...]\n");
		return 2;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) {
		perror("lp-subreaper: PR_SET_CHILD_SUBREAPER");
		return 1;
	}
	execvp(argv[1], argv + 1);
	fprintf(stderr, "lp-subreaper: %s: %s\n", argv[1], strerror(errno));
	return 127;
}
