// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
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

/* lp_write_all (off < 0: at fd's offset) and lp_pwrite_all; nothing written: -none */
static int write_all_at(int fd, const void *buf, size_t len, int64_t off, int none)
{
	const char *p = buf;

	while (len) {
		ssize_t n = off < 0 ? write(fd, p, len) : pwrite(fd, p, len, (off_t)off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -none;
		p += n;
		len -= (size_t)n;
		if (off >= 0)
			off += n;
	}
	return 0;
}

int lp_write_all(int fd, const void *buf, size_t len)
{
	return write_all_at(fd, buf, len, -1, EIO);
}

int lp_pwrite_all(int fd, const void *buf, size_t len, uint64_t off)
{
	if (off > INT64_MAX)
		return -EINVAL;
	return write_all_at(fd, buf, len, (int64_t)off, ENOSPC);
}

int lp_send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds)
{
	char byte = 'F';
	struct iovec iov = {len ? (void *)buf : &byte, len ? len : 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(LP_MAX_SEND_FDS * sizeof(int))];
	} u;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	struct cmsghdr *c;

	if (nfds < 0 || nfds > LP_MAX_SEND_FDS)
		return -EINVAL;
	if (nfds) {
		memset(&u, 0, sizeof(u));
		msg.msg_control = u.buf;
		msg.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
		c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
		memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
	}
	while (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

ssize_t lp_recv_msg(int sock, void *buf, size_t cap, int *fds, int maxfds, int *nfds, int flags,
		    struct ucred *cred)
{
	char byte;
	struct iovec iov = {cap ? buf : &byte, cap ? cap : 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(LP_MAX_SEND_FDS * sizeof(int)) +
			 CMSG_SPACE(sizeof(struct ucred))];
	} u;
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u.buf)};
	bool have_cred = false;
	ssize_t n;
	int got = 0;

	*nfds = 0;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | flags)) < 0) {
		if (errno != EINTR)
			return -errno;
	}
	if (n == 0 && !msg.msg_controllen)
		return -EPIPE;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET)
			continue;
		if (c->cmsg_type == SCM_CREDENTIALS && cred &&
		    c->cmsg_len >= CMSG_LEN(sizeof(struct ucred))) {
			memcpy(cred, CMSG_DATA(c), sizeof(*cred));
			have_cred = true;
			continue;
		}
		if (c->cmsg_type != SCM_RIGHTS)
			continue;
		for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++) {
			int fd;

			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (got < maxfds)
				fds[got++] = fd;
			else
				close(fd); /* more than asked for: not ours to keep */
		}
	}
	if ((msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) || (cred && !have_cred)) {
		while (got > 0)
			close(fds[--got]);
		return -EBADMSG;
	}
	*nfds = got;
	return cap ? n : 0;
}

int lp_send_fds(int sock, const int *fds, int nfds)
{
	return lp_send_msg(sock, NULL, 0, fds, nfds);
}

int lp_recv_fds(int sock, int *fds, int nfds)
{
	int got = 0;
	ssize_t n = lp_recv_msg(sock, NULL, 0, fds, nfds, &got, 0, NULL);

	if (n < 0)
		return (int)n;
	if (got != nfds) {
		while (got > 0)
			close(fds[--got]);
		return -EBADMSG;
	}
	return 0;
}

int lp_send_fd(int sock, int fd)
{
	return lp_send_fds(sock, &fd, 1);
}

int lp_recv_fd(int sock)
{
	int fd = -1, err = lp_recv_fds(sock, &fd, 1);

	return err ? err : fd;
}

int lp_reopen(int fd, int flags)
{
	char self[32];
	int nfd;

	snprintf(self, sizeof(self), "/proc/self/fd/%d", fd);
	nfd = open(self, flags | O_CLOEXEC);
	return nfd < 0 ? -errno : nfd;
}

int lp_parse_fds(const char *s, int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		char *end;
		long v;

		errno = 0;
		v = strtol(s, &end, 10);
		if (errno || end == s || v < 0 || v > INT_MAX ||
		    !(*end == (i + 1 < n ? ',' : '\0')))
			return -EINVAL;
		fds[i] = (int)v;
		s = end + 1;
	}
	return 0;
}
