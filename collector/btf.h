/* SPDX-License-Identifier: MIT */
/*
 * Which kernel BTF libbpf relocates the BPF programs against: the minimal
 * BTF embedded at build time (bpf/min_btf.h) when the running kernel's BTF
 * is the one it was made from (same release, size and SHA-256), else the
 * full /sys/kernel/btf/vmlinux, which libbpf parses whole (~5 MB here).
 *
 * With the minimal BTF, tp_btf programs would still make libbpf parse the
 * full kernel BTF: it needs it to find their attach target
 * (btf_trace_<name>), whatever btf_custom_path says. So while the minimal
 * BTF is in use, tp_btf sections are handled by our own SEC() handler that
 * hands libbpf the target ids recorded at build time (see btf.c).
 *
 * Not thread-safe: the SEC() handler is process-wide libbpf state.
 */
#ifndef LOWPROF_COLL_BTF_H
#define LOWPROF_COLL_BTF_H

#include <stdbool.h>

struct bpf_object;

struct coll_btf {
	int fd;		/* memfd of the minimal BTF; -1: none */
	bool minimal;	/* open the next objects with the minimal BTF */
	int handler_id; /* our tp_btf SEC() handler; 0: not registered */
	char path[32];	/* /proc/self/fd/<fd>, for btf_custom_path */
};

/*
 * Decides which BTF to use (full when force_full, when the build had no
 * minimal BTF or when the kernel's BTF is not the one it came from) and
 * says which with a debug message. Never fails: any problem means the full
 * BTF. b must be zeroed with fd = -1 first; free with coll_btf__free().
 * Call before opening any object.
 */
void coll_btf__init(struct coll_btf *b, bool force_full);

/* btf_custom_path for bpf_object_open_opts: NULL for the full BTF. */
const char *coll_btf__path(const struct coll_btf *b);

/*
 * After open, before load (and after bpf_program__set_autoload): prepares
 * obj's autoloaded tp_btf programs for the BTF chosen. Returns 0 or a
 * negative errno.
 */
int coll_btf__prepare(struct coll_btf *b, struct bpf_object *obj);

/* Loading failed with the minimal BTF: objects opened from now on use the full one. */
void coll_btf__use_full(struct coll_btf *b);

/* After every object opened with b is destroyed. Accepts a zeroed b with fd = -1. */
void coll_btf__free(struct coll_btf *b);

/* The process's peak resident set (VmHWM) in KiB, or 0 if unknown. */
unsigned long coll_peak_rss_kib(void);

#endif /* LOWPROF_COLL_BTF_H */
