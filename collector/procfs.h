/* SPDX-License-Identifier: MIT */
/*
 * Parsers of the kernel text files the collector reads: /proc/PID/maps and
 * /proc/kallsyms. They are kernel-formatted, but a mapping's path is chosen
 * by whoever named the file, so every field is checked and the path is taken
 * as opaque bytes up to the end of the line (the kernel escapes '\n' in it).
 * Nothing here opens a file a profiled process controls.
 */
#ifndef LOWPROF_COLL_PROCFS_H
#define LOWPROF_COLL_PROCFS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/fs.h>

#include "lowprof/schema.h"

/*
 * PROCMAP_QUERY (Linux 6.11, include/uapi/linux/fs.h): an ioctl on an open
 * /proc/PID/maps that describes the mapping at an address, with the build-id
 * of its file if asked. Defined here for headers older than 6.11 (Debian 12
 * ships 6.1's); the ABI is fixed: the struct only grows, with its size in
 * its first field.
 */
#ifndef PROCMAP_QUERY
struct procmap_query {
	__u64 size;
	__u64 query_flags;
	__u64 query_addr;
	__u64 vma_start;
	__u64 vma_end;
	__u64 vma_flags;
	__u64 vma_page_size;
	__u64 vma_offset;
	__u64 inode;
	__u32 dev_major;
	__u32 dev_minor;
	__u32 vma_name_size;
	__u32 build_id_size;
	__u64 vma_name_addr;
	__u64 build_id_addr;
};

#define PROCFS_IOCTL_MAGIC		   'f'
#define PROCMAP_QUERY			   _IOWR(PROCFS_IOCTL_MAGIC, 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE	   0x01
#define PROCMAP_QUERY_VMA_WRITABLE	   0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE	   0x04
#define PROCMAP_QUERY_VMA_SHARED	   0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define PROCMAP_QUERY_FILE_BACKED_VMA	   0x20
#endif

/*
 * One line of /proc/PID/maps:
 *   "start-end rwxp offset major:minor inode   path\n"
 * Fills m (m->path points into the line). Returns 0 or -EBADMSG.
 */
int coll_maps_parse_line(const char *line, size_t len, struct lps_mapping *m);

/*
 * Iterates the lines of a maps buffer: *cur advances past each line.
 * Returns 1 with m filled, 0 at the end, -EBADMSG on a malformed line (the
 * iterator skips it, so callers may count and continue).
 */
int coll_maps_next(const char **cur, const char *end, struct lps_mapping *m);

/*
 * One line of /proc/kallsyms: "ffffffff81000000 T name\t[module]\n".
 * Returns 1 for a text symbol (types t, T, w, W), 0 for other symbols,
 * -EBADMSG for a malformed line. k->name / k->module point into the line.
 */
int coll_ksym_parse_line(const char *line, size_t len, struct lps_ksym *k);

/*
 * /proc/modules, "name size refcount deps state address[ taint]" a line:
 * removes each line's refcount field and the space before it, in place
 * (what is left changes when a module is loaded, unloaded or loaded
 * elsewhere, not when one is used). Returns the new length.
 */
size_t coll_modules_strip_counts(char *buf, size_t len);

/*
 * /proc/PID/task/TID/children: "PID PID ... " (each pid followed by a
 * space; empty when there are none). Appends the pids (each 1..INT_MAX)
 * to out[*n..cap) and advances *n. Returns 0, -ENOSPC when out filled up
 * (the pids that fit are kept), or -EBADMSG for anything else (the pids
 * before it are kept).
 */
int coll_parse_pids(const char *buf, size_t len, pid_t *out, size_t *n, size_t cap);

/*
 * From a /proc/PID/status buffer: the pid the process sees itself by (the
 * last field of "NSpid:", its pid in its innermost pid namespace) and its
 * effective uid (the second field of "Uid:"). A line counts only at the
 * start of the buffer or after a newline (the kernel escapes the newlines
 * of "Name:"). Returns 0, or -EBADMSG when either is missing or malformed.
 */
int coll_status_ids(const char *buf, size_t len, uint32_t *nspid, uint32_t *euid);

/*
 * From a /proc/PID/fdinfo/FD buffer: the id of the mount the descriptor
 * is on ("mnt_id:", at the start of a line). 0, or -EBADMSG.
 */
int coll_fdinfo_mnt_id(const char *buf, size_t len, uint32_t *mnt_id);

/*
 * A /proc/PID/mountinfo buffer ("ID PARENT MAJ:MIN ROOT POINT OPTS
 * [TAGS...] - TYPE SOURCE OPTS" a line, the paths escaped by the kernel so
 * that no field holds a blank), a line at a time from *cur (advanced past
 * it): 1 with its mount id and file system type (a string in the buffer
 * without blanks), 0 at the end, or -EBADMSG for a malformed line (*mnt_id
 * set only when its first field is a number). coll_mountinfo_type: the
 * type of mount mnt_id: 0, -ENOENT when no line is that mount's, or
 * -EBADMSG when its line is malformed.
 */
int coll_mountinfo_next(const char **cur, const char *end, uint32_t *mnt_id, struct lps_str *type);
int coll_mountinfo_type(const char *buf, size_t len, uint32_t mnt_id, struct lps_str *type);

/*
 * Reads a whole /proc file into a malloc'd, NUL-terminated buffer
 * (procfs files report size 0, so it reads until EOF, up to max bytes).
 * Returns 0 and sets *buf, *len; or a negative errno (-EFBIG over max).
 * The caller frees *buf. coll_read_fd reads from fd's current position and
 * leaves fd open (the caller closes it); coll_read_file opens path itself.
 */
int coll_read_fd(int fd, size_t max, char **buf, size_t *len);
int coll_read_file(const char *path, size_t max, char **buf, size_t *len);

/*
 * Build-id of the file behind m, a file-backed executable mapping parsed
 * from the /proc/PID/maps open as maps_fd, through PROCMAP_QUERY. Copies at
 * most LPS_MAX_BUILD_ID bytes to out.
 *
 * Why the kernel and not the file: the kernel parses the ELF note (from the
 * page cache) of the file it mapped, so the collector parses nothing that a
 * profiled process controls and opens none of its files; the answer is
 * bytes copied out of a fixed-size struct. One ioctl per call.
 *
 * Returns the length (1..LPS_MAX_BUILD_ID); 0 when the kernel found no
 * build-id note; -ESTALE when the mapping at m->start is no longer m (the
 * maps changed since the read: other range, inode or device); -EOPNOTSUPP
 * when the kernel has no PROCMAP_QUERY (before 6.11: ENOTTY, EINVAL,
 * EOPNOTSUPP); or another negative errno from the ioctl (-ENOENT: no
 * executable file mapping at m->start any more; -ESRCH: the process's
 * memory is gone).
 */
int coll_maps_build_id(int maps_fd, const struct lps_mapping *m, uint8_t *out);

#endif /* LOWPROF_COLL_PROCFS_H */
