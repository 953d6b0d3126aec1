/* SPDX-License-Identifier: MIT */
/*
 * Files a privileged lowprof process writes or hands out. Output files are
 * created as root in directories users name, so nothing here follows a
 * symlink at the last component or writes through a hard link; descriptors
 * cross the privilege line over Unix sockets (SCM_RIGHTS).
 */
#ifndef LOWPROF_FILES_H
#define LOWPROF_FILES_H

/*
 * Opens output directory dir, creating it and missing parents (0755).
 * Returns an O_DIRECTORY fd (close-on-exec) or a negative errno (-ENOTDIR
 * when dir exists and is not a directory).
 */
int lp_open_output_dir(const char *dir);

/*
 * Creates or truncates dirfd/name for writing (0644): never through a
 * symlink (-ELOOP), never anything but a regular file with one link
 * (-EINVAL), never blocking on a FIFO. Returns the fd (close-on-exec) or a
 * negative errno.
 */
int lp_open_output_file(int dirfd, const char *name);

/* Sends fd over Unix socket sock. Returns 0 or a negative errno. */
int lp_send_fd(int sock, int fd);

/*
 * Receives one fd from sock (close-on-exec); any further descriptors in the
 * message are closed. Returns the fd or a negative errno (-EBADMSG when the
 * message carried none, -EPIPE at end of stream).
 */
int lp_recv_fd(int sock);

#endif /* LOWPROF_FILES_H */
