/* SPDX-License-Identifier: MIT */
/*
 * The symbolizer's seccomp sandbox: once its files are open and privileges
 * are dropped, it may only read and write the descriptors it has, open
 * files to read them, map memory that is never executable, sleep, signal
 * itself, and make the few calls SQLite, libelf/libdw and libc need for
 * that (sandbox.c says which and why). Everything else fails with ENOSYS
 * (libc then takes its fallbacks): ptrace, bpf, perf_event_open, execve,
 * sockets, process_vm_*, mount, keyctl, making, removing, renaming or
 * changing any file, opening one to write, signalling another process,
 * PROT_EXEC... What it is not: a restriction of what may be read (the
 * unprivileged uid and the kernel's permission checks are that). Sanitizer
 * (test) builds refuse a list of calls and arguments instead of allowing
 * one, as LeakSanitizer needs ptrace and /proc at exit.
 */
#ifndef LOWPROF_SYMB_SANDBOX_H
#define LOWPROF_SYMB_SANDBOX_H

#include <stddef.h>
#include <sys/types.h>

/* Installs the filter (and no_new_privs) for this process; 0 or -errno. */
int symb_sandbox_enter(void);

/*
 * The spool writer's filter (spool.h): its socket and memory file read and
 * written, files made, renamed and removed only by names relative to
 * dirfd, the directory listed, memory that is never executable; nothing
 * else (no other open, no exec, no socket, no signal). 0 or -errno.
 */
int symb_sandbox_enter_spool(int dirfd);

/*
 * The ring connector's filter (attach.h): Unix sockets made and connected,
 * messages on them, memory that is never executable, sleep; no file opened,
 * no exec, no signal. 0 or -errno.
 */
int symb_sandbox_enter_connector(void);

/* The files symb_sandbox_check tries to change, in the directory it is given. */
#define SYMB_CHECK_VICTIM  "victim"
#define SYMB_CHECK_VICTIM2 "victim2"
/* Names it tries to make there (for the caller's cleanup), NULL-terminated. */
#define SYMB_CHECK_MADE                                                                            \
	{                                                                                          \
		"new", "newdir", "symlink", "link", "renamed", NULL                                \
	}

/*
 * Enters the sandbox and tries what it must stop, printing one line each
 * to stdout: ptrace, bpf, perf_event_open, execve, sockets, opening
 * /proc/1/mem; in dir (a directory this user may write, holding its files
 * SYMB_CHECK_VICTIM and SYMB_CHECK_VICTIM2) making a file, a directory or
 * a link, opening its file to write or truncate, fchmod, rename, unlink;
 * signalling other (another process of this user, which ignores SIGUSR1)
 * by kill, tgkill, tkill and rt_sigqueueinfo; executable memory (mmap,
 * mprotect, pkey_mprotect with PROT_EXEC, READ_IMPLIES_EXEC); and writing
 * the ring's header and data area (ring_mem, ring_size as mapped by the
 * consumer, ring_fd its descriptor of the ring object; ring_mem NULL: no
 * ring). Returns 0 when every one failed, 1 otherwise.
 */
int symb_sandbox_check(void *ring_mem, size_t ring_size, int ring_fd, const char *dir, pid_t other);

#endif /* LOWPROF_SYMB_SANDBOX_H */
