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

static bool is_link_at(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode);
}

/* Why dirfd/name could not be opened as a directory: -ELOOP for a symlink. */
static int dir_open_err(int dirfd, const char *name, int err)
{
	return (err == ENOTDIR || err == ELOOP) && is_link_at(dirfd, name) ? -ELOOP : -err;
}

/*
 * dirfd/name, a directory, opened without following a link; made (mode
 * exactly) if missing and create. O_PATH: only search permission needed.
 */
static int dir_step(int dirfd, const char *name, bool create, mode_t mode, bool *was_made)
{
	const int flags = O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC;
	int fd = openat(dirfd, name, O_PATH | flags);
	bool made = false;

	*was_made = false;
	if (fd >= 0 || errno != ENOENT || !create)
		return fd >= 0 ? fd : dir_open_err(dirfd, name, errno);
	if (mkdirat(dirfd, name, mode) == 0)
		made = true;
	else if (errno != EEXIST) /* EEXIST: made meanwhile, by someone else */
		return -errno;
	fd = openat(dirfd, name, (made ? O_RDONLY : O_PATH) | flags);
	if (fd < 0)
		return dir_open_err(dirfd, name, errno);
	/* the umask narrowed it; an exact mode is asked for */
	if (made && fchmod(fd, mode)) {
		int err = -errno;

		close(fd);
		return err;
	}
	*was_made = made;
	return fd;
}

/* m records dirfd/name (opened as fd), just made: the first, or one below the last. */
static void note_made(struct lp_made_dirs *m, int dirfd, const char *name, int fd)
{
	struct stat st;
	size_t len = strlen(m->rel);

	if (m->parent < 0) {
		if (fstat(fd, &st) || (m->parent = fcntl(dirfd, F_DUPFD_CLOEXEC, 0)) < 0)
			return; /* nothing recorded: nothing will be removed */
		m->dev = st.st_dev;
		m->ino = st.st_ino;
		snprintf(m->rel, sizeof(m->rel), "%s", name);
	} else if (len + 1 + strlen(name) < sizeof(m->rel)) {
		snprintf(m->rel + len, sizeof(m->rel) - len, "/%s", name);
	}
}

int lp_open_dir_made(const char *dir, bool create, mode_t dir_mode, struct lp_made_dirs *made)
{
	char path[PATH_MAX], *save = NULL, *name;
	size_t len = strlen(dir);
	bool was_made;
	int fd, next;

	if (made)
		*made = (struct lp_made_dirs){.parent = -1};
	if (len == 0 || len >= sizeof(path))
		return len ? -ENAMETOOLONG : -ENOENT;
	memcpy(path, dir, len + 1);
	fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (name = strtok_r(path, "/", &save); name; name = strtok_r(NULL, "/", &save)) {
		next = dir_step(fd, name, create, dir_mode, &was_made);
		/* below the first one made, every one is ours (one made meanwhile by someone
		 * else is not empty by the time it is removed, or is theirs to lose) */
		if (next >= 0 && made && (was_made || made->parent >= 0))
			note_made(made, fd, name, next);
		close(fd);
		if (next < 0) {
			lp_made_dirs__remove(made); /* a failed call leaves nothing made */
			return next;
		}
		fd = next;
	}
	/* the O_PATH fd of the last one, as a directory to read and write in */
	next = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	return next < 0 ? -errno : next;
}

int lp_open_dir_nofollow(const char *dir, bool create, mode_t dir_mode)
{
	return lp_open_dir_made(dir, create, dir_mode, NULL);
}

#define MADE_MAX_DEPTH 64

void lp_made_dirs__remove(struct lp_made_dirs *m)
{
	char rel[PATH_MAX], *save = NULL, *name;
	const char *names[MADE_MAX_DEPTH];
	int fds[MADE_MAX_DEPTH + 1], n = 0;
	struct stat st;

	if (!m || m->parent < 0)
		return;
	memcpy(rel, m->rel, sizeof(rel));
	fds[0] = m->parent;
	/* down the same names, never through a link, from the first one as it was made */
	for (name = strtok_r(rel, "/", &save); name && n < MADE_MAX_DEPTH;
	     name = strtok_r(NULL, "/", &save)) {
		int fd = openat(fds[n], name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

		if (fd < 0)
			break;
		if (n == 0 && (fstat(fd, &st) || st.st_dev != m->dev || st.st_ino != m->ino)) {
			close(fd);
			break;
		}
		names[n++] = name;
		fds[n] = fd;
	}
	/* deepest first; one that is not empty ends it (and keeps those above) */
	for (bool go = true; n > 0; n--) {
		if (go && unlinkat(fds[n - 1], names[n - 1], AT_REMOVEDIR))
			go = false;
		close(fds[n]);
	}
	lp_made_dirs__close(m);
}

void lp_made_dirs__close(struct lp_made_dirs *m)
{
	if (m && m->parent >= 0) {
		close(m->parent);
		m->parent = -1;
	}
}

int lp_open_output_dir(const char *dir, mode_t file_mode)
{
	return lp_open_dir_nofollow(dir, true, LP_OUTPUT_DIR_MODE(file_mode));
}

int lp_open_output_file(int dirfd, const char *name, mode_t mode)
{
	struct stat st;
	int fd, err;

	fd = openat(dirfd, name,
		    O_WRONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0) {
		err = -errno;
		/* a link of another user in a sticky directory is EACCES, not ELOOP */
		return err == -EACCES && is_link_at(dirfd, name) ? -ELOOP : err;
	}
	if (fstat(fd, &st)) {
		err = -errno;
		goto err_out;
	}
	/* a hard link to someone else's file must not be truncated */
	if (!S_ISREG(st.st_mode) || st.st_nlink != 1) {
		err = -EINVAL;
		goto err_out;
	}
	/* one another user made where we write: they could read what we put there */
	if (st.st_uid != geteuid()) {
		err = -EPERM;
		goto err_out;
	}
	if (fchmod(fd, mode) || ftruncate(fd, 0) || fcntl(fd, F_SETFL, 0)) {
		err = -errno;
		goto err_out;
	}
	return fd;
err_out:
	close(fd);
	return err;
}

int lp_open_output_path(const char *path, mode_t mode, int *dirfd)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
	size_t dlen = slash ? (size_t)(slash - path) : 0;
	int dfd, fd;

	if (dirfd)
		*dirfd = -1;
	if (!*name || !strcmp(name, ".") || !strcmp(name, ".."))
		return -EISDIR;
	if (dlen >= sizeof(dir))
		return -ENAMETOOLONG;
	if (!slash) {
		strcpy(dir, ".");
	} else if (!dlen) {
		strcpy(dir, "/");
	} else {
		memcpy(dir, path, dlen);
		dir[dlen] = '\0';
	}
	dfd = lp_open_dir_nofollow(dir, false, 0);
	if (dfd < 0)
		return dfd;
	fd = lp_open_output_file(dfd, name, mode);
	if (fd >= 0 && dirfd)
		*dirfd = dfd;
	else
		close(dfd);
	return fd;
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
