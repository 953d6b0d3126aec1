/* SPDX-License-Identifier: MIT */
/*
 * The minimal kernel BTF of profile.bpf.o and offcpu.bpf.o, generated at
 * build time by bpf/minbtf.cmake (bpftool gen min_core_btf) from the build
 * host's /sys/kernel/btf/vmlinux: only the types their CO-RE relocations
 * use. It is valid for that kernel BTF alone, named by its SHA-256, size and
 * kernel release; lp_min_btf_len is 0 when the build host had none. It does
 * not replace the kernel BTF the kernel itself checks programs against.
 */
#ifndef LOWPROF_MIN_BTF_H
#define LOWPROF_MIN_BTF_H

#include <stddef.h>

/* a tp_btf program's target: the kernel BTF id of typedef btf_trace_<name> */
struct lp_min_btf_attach {
	const char *name;
	unsigned int btf_id;
};

extern const unsigned char lp_min_btf[];
extern const size_t lp_min_btf_len;
extern const char lp_min_btf_sha256[];			 /* hex, of the whole kernel BTF */
extern const unsigned long long lp_min_btf_vmlinux_size; /* its size in bytes */
extern const char lp_min_btf_release[];			 /* uname -r of the build host */
extern const struct lp_min_btf_attach lp_min_btf_attach[];
extern const size_t lp_min_btf_nattach;

#endif /* LOWPROF_MIN_BTF_H */
