// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "lowprof/kernel.h"
#include "lowprof/log.h"

int lp_check_kernel_btf(void)
{
	int err;

	if (!access(LP_KERNEL_BTF, R_OK))
		return 0;
	err = errno;
	lp_err("this kernel has no BTF (%s: %s): lowprof needs a kernel built with "
	       "CONFIG_DEBUG_INFO_BTF=y (the default of Debian 11 and later, Ubuntu 20.10 and "
	       "later, RHEL 8.2 and later, Amazon Linux 2 5.10 and 2023); install such a kernel "
	       "or enable the option and rebuild",
	       LP_KERNEL_BTF, strerror(err));
	return -ENOENT;
}

static int is_cgroup2(const char *path)
{
	struct statfs sf;

	return statfs(path, &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC;
}

const char *lp_cgroup2_root(void)
{
	if (is_cgroup2("/sys/fs/cgroup"))
		return "/sys/fs/cgroup";
	if (is_cgroup2("/sys/fs/cgroup/unified"))
		return "/sys/fs/cgroup/unified";
	return NULL;
}

int lp_cgroup2_open(const char *root, const char *arg)
{
	char path[PATH_MAX];
	struct statfs sf;
	size_t rl;
	int fd, err;

	if (!root) {
		lp_err("--cgroup %s: no cgroup v2 hierarchy (neither /sys/fs/cgroup nor "
		       "/sys/fs/cgroup/unified is a cgroup2 mount)",
		       arg);
		return -ENOENT;
	}
	rl = strlen(root);
	if (arg[0] == '/' && strncmp(arg, root, rl) == 0 && (arg[rl] == '/' || !arg[rl])) {
		if (snprintf(path, sizeof(path), "%s", arg) >= (int)sizeof(path))
			goto too_long;
	} else if (snprintf(path, sizeof(path), "%s/%s", root, arg[0] == '/' ? arg + 1 : arg) >=
		   (int)sizeof(path)) {
		goto too_long;
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		lp_err("--cgroup %s: %s: %s (give a directory of the cgroup v2 hierarchy, under %s "
		       "or relative to it)",
		       arg, path, strerror(-err), root);
		return err;
	}
	if (fstatfs(fd, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC) {
		lp_err("--cgroup %s: %s is not in the cgroup v2 hierarchy (%s)", arg, path, root);
		close(fd);
		return -EINVAL;
	}
	return fd;
too_long:
	lp_err("--cgroup %s: path too long", arg);
	return -ENAMETOOLONG;
}

int lp_proc_tgid(int tid)
{
	char path[32], buf[1024], *line;
	ssize_t n;
	int fd, tgid, err;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* Tgid is the fourth line, well inside the first kilobyte */
	n = read(fd, buf, sizeof(buf) - 1);
	err = -errno;
	close(fd);
	if (n < 0)
		return err == -ESRCH ? -ENOENT : err; /* it exited since the open */
	buf[n] = '\0';
	line = strstr(buf, "\nTgid:");
	if (!line || sscanf(line + 6, "%d", &tgid) != 1 || tgid <= 0)
		return -EINVAL;
	return tgid;
}

int lp_check_process_arg(int pid)
{
	int tgid = lp_proc_tgid(pid);

	if (tgid == -ENOENT) {
		lp_err("-p %d: no such process", pid);
		return -1;
	}
	if (tgid > 0 && tgid != pid) {
		lp_err("-p %d: a thread of process %d; give the process (-p %d profiles all its "
		       "threads)",
		       pid, tgid, tgid);
		return -1;
	}
	return 0;
}

int lp_statm_resident(int fd, uint64_t *bytes)
{
	char statm[128];
	unsigned long pages, rss;
	ssize_t r = pread(fd, statm, sizeof(statm) - 1, 0);

	if (r < 0)
		return -errno;
	statm[r] = '\0';
	if (sscanf(statm, "%lu %lu", &pages, &rss) != 2)
		return -EINVAL;
	*bytes = (uint64_t)rss * (uint64_t)sysconf(_SC_PAGESIZE);
	return 0;
}
