/* SPDX-License-Identifier: MIT */
/*
 * Files a privileged lowprof process writes or hands out. Output files are
 * created as root in directories users name, so nothing here follows a
 * symlink in any component of their paths or writes through a hard link;
 * descriptors cross the privilege line over Unix sockets (SCM_RIGHTS).
 */
#ifndef LOWPROF_FILES_H
#define LOWPROF_FILES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

/*
 * Output files and the directories made for them are private unless the
 * caller asks otherwise: they hold profiles, whose kernel frames and
 * mappings say where code is loaded.
 */
#define LP_OUTPUT_MODE 0600
/* The mode of a directory made for files of mode file_mode: x wherever r. */
#define LP_OUTPUT_DIR_MODE(file_mode) ((file_mode) | (((file_mode)&0444) >> 2))

/*
 * Opens directory dir without following a symbolic link in any component
 * of it (each is opened O_NOFOLLOW | O_DIRECTORY from the one before, from
 * / or the working directory): a link anywhere in the path, even one of
 * root's, is -ELOOP, so a directory another user can write cannot send
 * the outputs elsewhere. With create, missing components are made with
 * mode dir_mode exactly (fchmod: the umask does not widen or narrow it);
 * existing ones are left as they are. Returns an O_DIRECTORY fd
 * (close-on-exec) or a negative errno: -ELOOP, -ENOTDIR (a component is
 * not a directory), -ENOENT (missing, without create).
 */
int lp_open_dir_nofollow(const char *dir, bool create, mode_t dir_mode);

/*
 * The directories an lp_open_dir_made call made: the first one (dev, ino),
 * under the directory parent, and those below it (rel, "a/b/c"). parent
 * -1: none was made. Freed by lp_made_dirs__close or __remove.
 */
struct lp_made_dirs {
	int parent; /* O_PATH, close-on-exec, or -1 */
	char rel[PATH_MAX];
	dev_t dev;
	ino_t ino;
};

/*
 * lp_open_dir_nofollow, and in *made (if not NULL) the directories it made
 * (the path's last components, from the first that was missing), so that
 * a command that fails can remove what it made and only that. A call
 * that fails removes those it made itself (*made then holds none).
 */
int lp_open_dir_made(const char *dir, bool create, mode_t dir_mode, struct lp_made_dirs *made);

/*
 * Removes the directories m holds that are empty, deepest first, found
 * from its parent by the same names without following a link, the first
 * one only if it is still the one made; then closes m. Accepts NULL and
 * an m that made none.
 */
void lp_made_dirs__remove(struct lp_made_dirs *m);

/* Frees m (keeps the directories). Accepts NULL. */
void lp_made_dirs__close(struct lp_made_dirs *m);

/* lp_open_dir_nofollow(dir, true, LP_OUTPUT_DIR_MODE(file_mode)). */
int lp_open_output_dir(const char *dir, mode_t file_mode);

/*
 * Creates or truncates dirfd/name for writing, with mode mode exactly:
 * never through a symlink (-ELOOP), never anything but a regular file with
 * one link (-EINVAL), never a file of another user (-EPERM: the profile
 * would be theirs to read), never blocking on a FIFO. The checks are made
 * on the file opened, before it is truncated. Returns the fd
 * (close-on-exec) or a negative errno.
 */
int lp_open_output_file(int dirfd, const char *name, mode_t mode);

/*
 * lp_open_output_file on a path: its directory opened as
 * lp_open_dir_nofollow does (not created), the last component as above.
 * *dirfd (if not NULL) gets that directory, for unlinkat later (-1 on
 * errors). -EISDIR for a path that names no file ("", "dir/", "..").
 */
int lp_open_output_path(const char *path, mode_t mode, int *dirfd);

/*
 * Writes all len bytes of buf to fd, retrying short writes and EINTR.
 * Returns 0 or a negative errno (-EIO if write wrote nothing).
 */
int lp_write_all(int fd, const void *buf, size_t len);

/*
 * The same at offset off of a file (pwrite: fd's own offset is not used or
 * moved). Returns 0 or a negative errno (-ENOSPC if pwrite wrote nothing:
 * the file could not grow).
 */
int lp_pwrite_all(int fd, const void *buf, size_t len, uint64_t off);

#define LP_MAX_SEND_FDS 4

/*
 * Sends len bytes of buf (one byte if len is 0) with nfds (<=
 * LP_MAX_SEND_FDS) descriptors over Unix socket sock. 0 or a negative errno.
 */
int lp_send_msg(int sock, const void *buf, size_t len, const int *fds, int nfds);

/*
 * Receives one message of at most cap bytes (0: a one-byte message whose
 * byte is ignored) and up to maxfds descriptors (close-on-exec; further ones
 * are closed). flags go to recvmsg (MSG_DONTWAIT). With cred, the message
 * must carry the sender's credentials (SO_PASSCRED on sock), stored there.
 * Returns the bytes received (0 when cap is 0) with *nfds set, or a negative
 * errno: -EPIPE at end of stream, -EBADMSG for a truncated message or one
 * without credentials (its descriptors closed), -EAGAIN.
 */
ssize_t lp_recv_msg(int sock, void *buf, size_t cap, int *fds, int maxfds, int *nfds, int flags,
		    struct ucred *cred);

/* Sends nfds descriptors over Unix socket sock. Returns 0 or a negative errno. */
int lp_send_fds(int sock, const int *fds, int nfds);
int lp_send_fd(int sock, int fd);

/*
 * Receives exactly nfds descriptors (close-on-exec) in one message; more are
 * closed, fewer is -EBADMSG (those received closed). Returns 0 or a negative
 * errno (-EPIPE at end of stream). lp_recv_fd: one, returned.
 */
int lp_recv_fds(int sock, int *fds, int nfds);
int lp_recv_fd(int sock);

/*
 * Opens the file behind fd again (an O_PATH fd, say) through
 * /proc/self/fd/N with flags (| O_CLOEXEC): a new open file description of
 * the same inode, with the permission checks of an open. Returns the fd or
 * a negative errno.
 */
int lp_reopen(int fd, int flags);

/* Parses exactly n descriptor numbers "A,B,..." into fds; 0 or -EINVAL. */
int lp_parse_fds(const char *s, int *fds, int n);

/*
 * The file channel: a SOCK_SEQPACKET Unix socket from a symbolizer to the
 * collector. The symbolizer asks for a file a process has mapped
 * executable, naming the process and the file's device and inode as a
 * mappings record gave them; the collector answers with a read-only
 * descriptor of that very file, or an errno. It never opens a path the
 * symbolizer names. One request, one reply (with the descriptor as
 * SCM_RIGHTS when err is 0); id pairs them, so replies to a request of an
 * earlier symbolizer on the same socket are recognised and dropped.
 */
#define LP_FILE_REQ_MAGIC 0x5246504cu /* "LPFR" */
#define LP_FILE_REP_MAGIC 0x4146504cu /* "LPFA" */

struct lp_file_req {
	uint32_t magic;
	uint32_t id;
	uint32_t pid;
	uint32_t dev_major, dev_minor;
	uint32_t zero; /* must be 0 */
	uint64_t inode;
};

struct lp_file_rep {
	uint32_t magic;
	uint32_t id;
	int32_t err; /* 0: the descriptor is attached; else -errno */
	uint32_t zero;
};

/*
 * A note on the same channel, symbolizer to collector, no reply: the GNU
 * build-id the symbolizer read from a mapped file it opened (checked by
 * device and inode) where the kernel gave none (no PROCMAP_QUERY). The
 * collector keeps it in the capture file, marked as the symbolizer's
 * (lowprof/schema.h, LPS_BUILDID), so that a replay elsewhere can find the
 * file; it trusts it no further.
 */
#define LP_FILE_BUILDID_MAGIC 0x4246504cu /* "LPFB" */

struct lp_file_buildid {
	uint32_t magic;
	uint32_t len; /* bytes of id used, 1..64 */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint8_t id[64];
};

#endif /* LOWPROF_FILES_H */
