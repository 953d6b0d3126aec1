// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lowprof/files.h"

int lp_open_output_dir(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);
	struct stat st;
	int fd;

	if (len == 0 || len >= sizeof(path))
		return -ENAMETOOLONG;
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int lp_open_output_file(int dirfd, const char *name)
{
	struct stat st;
	int fd, err;

	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st)) {
		err = -errno;
		goto err_out;
	}
	/* a hard link to someone else's file must not be truncated */
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		err = -EINVAL;
		goto err_out;
	}
	if (ftruncate(fd, 0) || fcntl(fd, F_SETFL, 0)) {
		err = -errno;
		goto err_out;
	}
	return fd;
err_out:
	close(fd);
	return err;
}

int lp_send_fd(int sock, int fd)
{
	char byte = 'F';
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	memset(&u, 0, sizeof(u));
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(c), &fd, sizeof(int));
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

int lp_recv_fd(int sock)
{
	char byte;
	struct iovec iov = {&byte, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(4 * sizeof(int))];
	} u;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	int fd = -1;
	ssize_t n;

	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC)) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (n == 0)
		return -EPIPE;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		size_t nfds;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfds = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < nfds; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd < 0)
				fd = got;
			else
				close(got);
		}
	}
	if (msg.msg_flags & MSG_CTRUNC) {
		if (fd >= 0)
			close(fd);
		return -EBADMSG;
	}
	return fd >= 0 ? fd : -EBADMSG;
}
