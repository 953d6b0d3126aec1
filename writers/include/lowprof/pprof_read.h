/* SPDX-License-Identifier: MIT */
/*
 * pprof reader: a profile.proto file (gzip'd or plain) back into the
 * writers' model (struct lpw_profile), for tools that read what lowprof
 * wrote: listing a spool's windows, merging them.
 *
 * What it is: a validating decoder. The file is untrusted: its size is
 * capped before and after gunzip, protobuf-c unpacks it under a memory
 * budget, and every index in it (string table, mapping, location and
 * function ids, label keys, the value count of each sample) is checked
 * before use; a file that fails any check is refused as a whole with a
 * reason, never half read. What it is not: a general pprof library. The
 * model holds exactly two sample types, so other files are refused;
 * labels other than lowprof's (pid, comm, exe, cgroup, container.id,
 * k8s.pod.uid) are dropped, as are columns, drop/keep_frames and the
 * has_filenames family of mapping flags.
 *
 * Two model fields are not in the file and are inferred: a location is
 * kernel when its mapping is "[kernel.kallsyms]", and resolved when it has
 * source lines or a function name that is neither "[...]" nor
 * "NAME+0xHEX" (the names lowprof gives unresolved frames). A location with
 * one line that has neither file nor line number reads back as a plain
 * function (nlines 0), as lpw_write_pprof writes one.
 */
#ifndef LOWPROF_PPROF_READ_H
#define LOWPROF_PPROF_READ_H

#include <stddef.h>

#include "lowprof/writers.h"

/* Defaults: the message after gunzip, and protobuf-c's memory for it. */
#define LPW_READ_MAX_BYTES (256u << 20)
#define LPW_READ_MAX_MEM   (1024u << 20)

struct lpw_read_opts {
	size_t sz;	  /* sizeof(struct lpw_read_opts) */
	size_t max_bytes; /* largest message (and file) read; 0: LPW_READ_MAX_BYTES */
	size_t max_mem;	  /* unpacking allocates at most this; 0: LPW_READ_MAX_MEM */
};

/* A profile read from a file: owns every string and table of its model. */
struct lpw_read;

/*
 * Reads fd (from its current offset to its end) as a pprof profile,
 * gzip'd (one member, nothing after it) or not. opts may be NULL. Returns
 * 0 with *out (free it with lpw_read__free), or a negative errno with a
 * reason in why[0..why_len) that names no file (the caller knows it):
 * -EBADMSG bad gzip or protobuf, or an index out of range; -EFBIG over
 * max_bytes; -ENOMEM (also: over max_mem); -EINVAL bad opts; or the read's
 * error. Logs nothing.
 */
int lpw_read_pprof(int fd, const struct lpw_read_opts *opts, struct lpw_read **out, char *why,
		   size_t why_len);

/* The model; valid until lpw_read__free. title is NULL (pprof has none). */
const struct lpw_profile *lpw_read__profile(const struct lpw_read *r);

/* Frees r and everything its model points to; NULL is fine. */
void lpw_read__free(struct lpw_read *r);

#endif /* LOWPROF_PPROF_READ_H */
