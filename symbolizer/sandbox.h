/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's seccomp sandbox: once its files are open and privileges
 * are dropped, it may only read and write descriptors, open files, map
 * memory, sleep, and the few calls SQLite, libelf/libdw and libc need for
 * that. Everything else fails with ENOSYS (libc then takes its fallbacks):
 * ptrace, bpf, perf_event_open, execve, sockets, process_vm_*, mount,
 * keyctl... What it is not: a filesystem restriction (the unprivileged uid
 * and the kernel's permission checks are that). Sanitizer (test) builds
 * refuse a list of calls instead of allowing one, as LeakSanitizer needs
 * ptrace and /proc at exit.
 */
#ifndef LOWPROF_SYMB_SANDBOX_H
#define LOWPROF_SYMB_SANDBOX_H

#include <stddef.h>

/* Installs the filter (and no_new_privs) for this process; 0 or -errno. */
int symb_sandbox_enter(void);

/*
 * Enters the sandbox and tries what it must stop (ptrace, bpf,
 * perf_event_open, execve, a network socket, opening /proc/1/mem, and
 * writing the ring's header and data area: ring_mem, ring_size as mapped by
 * the consumer, ring_fd its descriptor of the ring object), printing one
 * line each to stdout. Returns 0 when every one failed, 1 otherwise.
 */
int symb_sandbox_check(void *ring_mem, size_t ring_size, int ring_fd);

#endif /* LOWPROF_SYMB_SANDBOX_H */
