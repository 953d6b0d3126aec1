// SPDX-License-Identifier: MIT
/*
 * Handing the symbolizer the files processes have mapped (the file
 * channel, lowprof/files.h). The symbolizer, unprivileged, cannot open
 * binaries only their owner can read, nor reach files in another mount
 * namespace; the collector can (CAP_DAC_READ_SEARCH, CAP_SYS_PTRACE) and
 * opens them read-only on its behalf.
 *
 * What a request can make the collector open: only a file that the named
 * process has mapped executable right now, found by device and inode in
 * that process's /proc/PID/maps. The path comes from the kernel's maps,
 * is resolved inside the process's own root (RESOLVE_IN_ROOT: its
 * symlinks cannot lead out of it), and the file opened must be a regular
 * file with that device and inode, or nothing is sent. The collector reads
 * none of the file's bytes.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "collector_int.h"
#include "lowprof/files.h"
#include "lowprof/log.h"
#include "procfs.h"

#define MAPS_MAX_BYTES (64u << 20)

static bool is_file(const struct stat *st, uint32_t major, uint32_t minor, uint64_t inode)
{
	return S_ISREG(st->st_mode) && st->st_ino == inode && st->st_dev == makedev(major, minor);
}

/* The path pid maps executable from (major:minor, inode), NUL-terminated. */
static int mapped_path(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode, char *out,
		       size_t cap)
{
	char maps[32];
	const char *cur, *end;
	struct lps_mapping m;
	size_t len;
	char *buf;
	int err, r;

	snprintf(maps, sizeof(maps), "/proc/%u/maps", pid);
	err = coll_read_file(maps, MAPS_MAX_BYTES, &buf, &len);
	if (err)
		return err;
	err = -ENOENT;
	cur = buf;
	end = buf + len;
	while ((r = coll_maps_next(&cur, end, &m)) != 0) {
		if (r < 0 || !(m.prot & LPS_PROT_X) || m.inode != inode || m.dev_major != major ||
		    m.dev_minor != minor || !m.path.len || m.path.ptr[0] != '/')
			continue;
		if (m.path.len >= cap || memchr(m.path.ptr, '\0', m.path.len)) {
			err = -ENAMETOOLONG;
			continue;
		}
		memcpy(out, m.path.ptr, m.path.len);
		out[m.path.len] = '\0';
		err = 0;
		break;
	}
	free(buf);
	return err;
}

int coll_file_open(uint32_t pid, uint32_t major, uint32_t minor, uint64_t inode)
{
	struct open_how how = {.flags = O_PATH | O_NOFOLLOW | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	char path[4096], root[32];
	struct stat st;
	int rootfd, pfd, fd, err;

	if (pid == 0 || pid > 0x3fffffff)
		return -ESRCH;
	err = mapped_path(pid, major, minor, inode, path, sizeof(path));
	if (err)
		return err;
	snprintf(root, sizeof(root), "/proc/%u/root", pid);
	rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rootfd < 0)
		return -errno;
	pfd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	if (pfd < 0 && errno == ENOSYS) /* before 5.6: the inode check below still holds */
		pfd = openat(rootfd, path + 1, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	err = pfd < 0 ? -errno : 0;
	close(rootfd);
	if (err)
		return err;
	if (fstat(pfd, &st) || !is_file(&st, major, minor, inode)) {
		close(pfd);
		return -ESTALE;
	}
	/* the inode found above, opened for reading: no device or FIFO opens */
	fd = lp_reopen(pfd, O_RDONLY | O_NONBLOCK | O_NOCTTY);
	close(pfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) || !is_file(&st, major, minor, inode)) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static void reply(int sock, uint32_t id, int err, int fd)
{
	struct lp_file_rep rep = {.magic = LP_FILE_REP_MAGIC, .id = id, .err = err};

	/* a peer that stopped reading only loses its own answers */
	if (lp_send_msg(sock, &rep, sizeof(rep), &fd, fd >= 0 ? 1 : 0))
		lp_debug("files: replying to request %u: %m", id);
}

int coll_files_serve(int sock, uid_t owner, int max, struct coll_files_stats *st)
{
	int served = 0;

	while (served < max) {
		struct lp_file_req q;
		struct ucred cr;
		int none[1], nfds, fd;
		ssize_t n = lp_recv_msg(sock, &q, sizeof(q), none, 0, &nfds, MSG_DONTWAIT, &cr);

		if (n == -EAGAIN || n == -EINTR)
			return served;
		if (n == -EPIPE || n == -ECONNRESET)
			return -EPIPE;
		served++;
		if (n == -EBADMSG || (n >= 0 && (size_t)n != sizeof(q)) ||
		    (n >= 0 && (q.magic != LP_FILE_REQ_MAGIC || q.zero))) {
			st->refused++;
			if (!st->warned++)
				lp_warn("files: a malformed request on the file channel; ignored");
			continue;
		}
		if (n < 0)
			return (int)n;
		if (cr.uid != owner && cr.uid != 0) {
			st->refused++;
			if (!st->warned++)
				lp_warn("files: refusing a request from uid %u (pid %d): only uid "
					"%u "
					"may ask",
					cr.uid, cr.pid, owner);
			reply(sock, q.id, -EPERM, -1);
			continue;
		}
		fd = coll_file_open(q.pid, q.dev_major, q.dev_minor, q.inode);
		if (fd < 0) {
			st->failed++;
			lp_debug("files: pid %u %u:%u inode %llu: %s", q.pid, q.dev_major,
				 q.dev_minor, (unsigned long long)q.inode, strerror(-fd));
		} else {
			st->sent++;
		}
		reply(sock, q.id, fd < 0 ? fd : 0, fd);
		if (fd >= 0)
			close(fd);
	}
	return served;
}
