// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <stdbool.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <stdint.h>
#include <unistd.h>

#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"
#include "sandbox.h"

#if defined(__SANITIZE_ADDRESS__)
#define SYMB_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYMB_SANITIZED 1
#endif
#endif

/*
 * What the symbolizer calls once its files are open, each for a reason
 * (found with strace -f on a record, a replay, a cache eviction, the file
 * channel and a restarted symbolizer). Calls that take arguments worth
 * checking are not here but in add_allow_rules, with their conditions.
 * Not here, so refused: every call that makes, removes, renames or changes
 * a file (SQLite's -wal and -shm are open before and kept, its temporary
 * files are memory: cache.c), mprotect (nothing changes a mapping's
 * protection after start-up), any signal but to itself, and the rest.
 */
static const char *const allowed[] = {
	/* the capture, binaries and debug files (libelf, libdw), SQLite's pages */
	"pread64",
	/*
	 * SQLite seeds its random numbers from /dev/urandom the first time it
	 * needs them (a WAL restart's salt); libelf and libdw where they
	 * cannot map a file (elfutils' crc32_file)
	 */
	"read",
	/* the outputs and stderr, SQLite's pages into its open -wal, database and -shm */
	"write",
	"pwrite64",
	/* SQLite: truncating its WAL (journal_size_limit) and growing its -shm */
	"ftruncate",
	/* SQLite: a checkpoint syncs the WAL and the database (synchronous=NORMAL) */
	"fdatasync",
	/* binaries and debug files done with */
	"close",
	/* fstat (glibc's is newfstatat); SQLite stats the database to see it is the same file */
	"newfstatat",
	/* a file's identity for the cache's memo: unique mount id, inode, times (ident.c) */
	"statx",
	/* stdio asks where stdout is */
	"lseek",
	/* libdw's realpath of binaries and debug files, and of /proc/self/fd/N */
	"readlink",
	/* the flame graph writer's fdopen of a dup */
	"dup",
	/* memory: malloc, libelf's and SQLite's mappings (mmap itself is checked) */
	"munmap",
	"mremap",
	"brk",
	/* huge pages for large file images read whole (cache/ident.c) */
	"madvise",
	/* waiting for the collector (lp_ring__wait); libc's locks */
	"futex",
	/* SQLite's busy handler, the cache's open retries */
	"clock_nanosleep",
	/* where the vDSO cannot answer (some clock sources) */
	"clock_gettime",
	"gettimeofday",
	/* raise() (abort, assert) names its process to tgkill; SQLite's seeding, after a fork */
	"getpid",
	/* the seeds of the hash tables (lp_hash_seed: ingest, DWARF, the writers) */
	"getrandom",
	/* qsort sizes its buffer from physical memory (sysconf) */
	"sysinfo",
	/* the file channel: requests and descriptors on the collector's socket */
	"sendmsg",
	"recvmsg",
	"poll",
	"ppoll", /* poll() where there is no poll syscall */
	/* and done with it at the end (lowprof record keeps a copy of our end) */
	"shutdown",
	/* a signal (SIGTERM: write and exit) interrupting a sleep, and its handler's return */
	"restart_syscall",
	"rt_sigreturn",
	/* abort() blocks and unblocks signals around raise() */
	"rt_sigprocmask",
	/* exit() */
	"exit_group",
};

/*
 * fcntl commands: SQLite's POSIX locks and their checks, descriptors' flags
 * (libelf, fdopen), a new collector's ring's seals (a service run, attach.h)
 */
static const int fcntl_cmds[] = {F_GETFD, F_GETFL, F_GETLK, F_SETLK, F_GET_SEALS};

/*
 * Sanitizer builds (tests): LeakSanitizer's exit-time check stops the
 * threads with a ptrace-ing clone and reads /proc, which an allowlist
 * breaks. There the filter allows by default and refuses these instead
 * (and, in add_deny_rules, what the allowlist refuses by its arguments:
 * files opened to create or write, signals to others, executable memory);
 * production builds use the allowlist above.
 */
static const char *const refused[] = {
	"bpf",
	"perf_event_open",
	"execve",
	"execveat",
	"socket",
	"socketpair",
	"process_vm_readv",
	"process_vm_writev",
	"mount",
	"umount2",
	"keyctl",
	"add_key",
	"request_key",
	"init_module",
	"finit_module",
	"kexec_load",
	"setuid",
	"setgid",
	"unshare",
	"setns",
	/* no file is made, removed, renamed or changed (the ring's and SQLite's are open) */
	"creat",
	"openat2",
	"unlink",
	"unlinkat",
	"rename",
	"renameat",
	"renameat2",
	"link",
	"linkat",
	"symlink",
	"symlinkat",
	"mkdir",
	"mkdirat",
	"mknod",
	"mknodat",
	"chmod",
	"fchmod",
	"fchmodat",
	"truncate",
	"chown",
	"fchown",
	"lchown",
	"fchownat",
	"utimensat",
	"memfd_create",
	/* signals only to itself (kill, tgkill... in add_deny_rules) */
	"pidfd_open",
	"pidfd_send_signal",
	/* no executable memory by other ways (mmap, mprotect in add_deny_rules) */
	"personality",
	"shmat",
};

/* fcntl commands that signal a process: an owner for SIGIO, leases, dnotify */
static const int fcntl_signalling[] = {F_SETOWN, F_SETOWN_EX, F_SETSIG, F_SETLEASE, F_NOTIFY};

/* Opens that make or change a file: created, truncated, or writable. */
#define OPEN_WRITES (O_ACCMODE | O_CREAT | O_TRUNC)

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		struct scmp_arg_cmp cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	return n ? seccomp_rule_add(ctx, action, nr, 1, cmp) : seccomp_rule_add(ctx, action, nr, 0);
}

static const struct scmp_arg_cmp no_arg;

/*
 * The allowlist's calls with conditions. Anything else, these calls with
 * other arguments included, fails with ENOSYS.
 */
static int add_allow_rules(scmp_filter_ctx ctx, pid_t self)
{
	const uint32_t ok = SCMP_ACT_ALLOW;
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		err = rule(ctx, ok, allowed[i], 0, no_arg);
	/*
	 * Opening only to read (binaries, debug files by build-id, a file
	 * again through /proc/self/fd): no file is created, truncated or
	 * opened for writing. SQLite's files are open before (cache.c), and it
	 * needs no other: its WAL and -shm persist, its temporary files are
	 * memory.
	 */
	if (!err)
		err = rule(ctx, ok, "openat", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, OPEN_WRITES, 0));
	/* memory, never executable: no code is loaded or made after start-up */
	if (!err)
		err = rule(ctx, ok, "mmap", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* raise() (abort, assert) signals this process, and no other */
	if (!err)
		err = rule(ctx, ok, "tgkill", 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)self));
	/* isatty() for stdio's buffering and the progress line: TCGETS only */
	if (!err)
		err = rule(ctx, ok, "ioctl", 1, SCMP_A1_32(SCMP_CMP_EQ, TCGETS));
	for (size_t i = 0; !err && i < sizeof(fcntl_cmds) / sizeof(fcntl_cmds[0]); i++)
		err = rule(ctx, ok, "fcntl", 1, SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)fcntl_cmds[i]));
	return err;
}

/* The sanitizer build's denylist: the refused calls, and the allowlist's conditions reversed. */
static int add_deny_rules(scmp_filter_ctx ctx, pid_t self)
{
	static const char *const signal_calls[] = {"kill", "tkill", "tgkill", "rt_sigqueueinfo",
						   "rt_tgsigqueueinfo"};
	static const char *const exec_calls[] = {"mmap", "mprotect", "pkey_mprotect"};
	static const int writes[][2] = {
		{O_CREAT, O_CREAT}, {O_TRUNC, O_TRUNC}, {O_ACCMODE, O_WRONLY}, {O_ACCMODE, O_RDWR}};
	const uint32_t no = SCMP_ACT_ERRNO(ENOSYS);
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(refused) / sizeof(refused[0]); i++)
		err = rule(ctx, no, refused[i], 0, no_arg);
	for (size_t i = 0; !err && i < sizeof(writes) / sizeof(writes[0]); i++) {
		err = rule(ctx, no, "openat", 1,
			   SCMP_A2_32(SCMP_CMP_MASKED_EQ, (uint32_t)writes[i][0], writes[i][1]));
		if (!err)
			err = rule(ctx, no, "open", 1,
				   SCMP_A1_32(SCMP_CMP_MASKED_EQ, (uint32_t)writes[i][0],
					      writes[i][1]));
	}
	for (size_t i = 0; !err && i < sizeof(exec_calls) / sizeof(exec_calls[0]); i++)
		err = rule(ctx, no, exec_calls[i], 1,
			   SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC));
	for (size_t i = 0; !err && i < sizeof(signal_calls) / sizeof(signal_calls[0]); i++)
		err = rule(ctx, no, signal_calls[i], 1, SCMP_A0_32(SCMP_CMP_NE, (uint32_t)self));
	for (size_t i = 0; !err && i < sizeof(fcntl_signalling) / sizeof(fcntl_signalling[0]); i++)
		err = rule(ctx, no, "fcntl", 1,
			   SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)fcntl_signalling[i]));
	/* typing into a terminal it may have (started by hand) */
	if (!err)
		err = rule(ctx, no, "ioctl", 1, SCMP_A1_32(SCMP_CMP_EQ, TIOCSTI));
	return err;
}

int symb_sandbox_enter(void)
{
	pid_t self = getpid();
#ifdef SYMB_SANITIZED
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
#endif
	int err;

	if (!ctx)
		return -ENOMEM;
#ifdef SYMB_SANITIZED
	err = add_deny_rules(ctx, self);
	(void)add_allow_rules;
#else
	err = add_allow_rules(ctx, self);
	(void)add_deny_rules;
#endif
	if (!err)
		err = seccomp_load(ctx); /* sets no_new_privs first */
	seccomp_release(ctx);
	if (err)
		lp_err("sandbox: installing the seccomp filter: %s", strerror(-err));
	return err;
}

/* Each call of names[0..n) without conditions, with action: 0 or -errno. */
static int rules(scmp_filter_ctx ctx, uint32_t action, const char *const *names, size_t n)
{
	int err = 0;

	for (size_t i = 0; !err && i < n; i++)
		err = rule(ctx, action, names[i], 0, no_arg);
	return err;
}

/* A helper process's filter, built with err so far: loaded, released, failure said. */
static int load_filter(scmp_filter_ctx ctx, int err, const char *what)
{
	if (!err)
		err = seccomp_load(ctx); /* sets no_new_privs first */
	seccomp_release(ctx);
	if (err)
		lp_err("%s: installing the seccomp filter: %s", what, strerror(-err));
	return err;
}

/* What the ring connector calls (attach.c): besides socket, only on AF_UNIX. */
static const char *const connector_allowed[] = {
	"connect",	"getsockopt",	   "recvfrom",
	"recvmsg",	"sendto",	   "sendmsg",
	"read",		"write",	   "close",
	"nanosleep",	"clock_nanosleep", "clock_gettime",
	"gettimeofday", "fstat",	   "newfstatat",
	"brk",		"munmap",	   "mremap",
	"getpid",	"rt_sigreturn",	   "exit",
	"exit_group",
};

int symb_sandbox_enter_connector(void)
{
#ifdef SYMB_SANITIZED
	static const char *const connector_refused[] = {
		"execve",
		"execveat",
		"ptrace",
		"bpf",
		"perf_event_open",
		"process_vm_readv",
		"process_vm_writev",
		"mount",
		"setuid",
		"setns",
		"unshare",
		"openat",
		"open",
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	const uint32_t no = SCMP_ACT_ERRNO(ENOSYS);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	const uint32_t ok = SCMP_ACT_ALLOW;
#endif
	int err = 0;

	if (!ctx)
		return -ENOMEM;
#ifdef SYMB_SANITIZED
	(void)connector_allowed;
	err = rules(ctx, no, connector_refused,
		    sizeof(connector_refused) / sizeof(connector_refused[0]));
#else
	err = rules(ctx, ok, connector_allowed,
		    sizeof(connector_allowed) / sizeof(connector_allowed[0]));
	/* a Unix socket, to connect to the collector's; no other family */
	if (!err)
		err = rule(ctx, ok, "socket", 1, SCMP_A0_32(SCMP_CMP_EQ, AF_UNIX));
	if (!err)
		err = rule(ctx, ok, "mmap", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
#endif
	return load_filter(ctx, err, "ring: the connector");
}

/* What the spool writer calls besides those with conditions (spool.c). */
static const char *const spool_allowed[] = {
	/* the header and answers on its socket, the window's bytes */
	"recvfrom",
	"recvmsg",
	"sendto",
	"sendmsg",
	"read",
	"write",
	"pread64",
	/* its files: synced, closed, looked at; the directory listed */
	"fdatasync",
	"close",
	"newfstatat",
	"fstat",
	"getdents64",
	"dup",
	"lseek",
	/* memory for the listing */
	"brk",
	"munmap",
	"mremap",
	"rt_sigreturn",
	"exit",
	"exit_group",
	"clock_gettime",
	"gettimeofday",
};

int symb_sandbox_enter_spool(int dirfd)
{
#ifdef SYMB_SANITIZED
	/* sanitizer builds: what it must never do refused, the rest allowed */
	static const char *const spool_refused[] = {
		"execve",  "execveat",	       "ptrace",
		"bpf",	   "perf_event_open",  "socket",
		"connect", "process_vm_readv", "process_vm_writev",
		"mount",   "setuid",	       "setns",
		"unshare",
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	const uint32_t no = SCMP_ACT_ERRNO(ENOSYS);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
	const uint32_t ok = SCMP_ACT_ALLOW;
	const uint32_t d = (uint32_t)dirfd;
#endif
	int err = 0;

	if (!ctx)
		return -ENOMEM;
#ifdef SYMB_SANITIZED
	(void)dirfd;
	(void)spool_allowed;
	err = rules(ctx, no, spool_refused, sizeof(spool_refused) / sizeof(spool_refused[0]));
#else
	err = rules(ctx, ok, spool_allowed, sizeof(spool_allowed) / sizeof(spool_allowed[0]));
	/* files only by names in the spool (the writer makes them: spool.c) */
	if (!err)
		err = rule(ctx, ok, "openat", 1, SCMP_A0_32(SCMP_CMP_EQ, d));
	if (!err)
		err = rule(ctx, ok, "unlinkat", 1, SCMP_A0_32(SCMP_CMP_EQ, d));
	if (!err)
		err = seccomp_rule_add(ctx, ok, SCMP_SYS(renameat), 2, SCMP_A0_32(SCMP_CMP_EQ, d),
				       SCMP_A2_32(SCMP_CMP_EQ, d));
	if (!err)
		err = seccomp_rule_add(ctx, ok, SCMP_SYS(renameat2), 2, SCMP_A0_32(SCMP_CMP_EQ, d),
				       SCMP_A2_32(SCMP_CMP_EQ, d));
	/* fdopendir checks the descriptor's flags */
	if (!err)
		err = rule(ctx, ok, "fcntl", 1, SCMP_A1_32(SCMP_CMP_EQ, F_GETFL));
	if (!err)
		err = rule(ctx, ok, "fcntl", 1, SCMP_A1_32(SCMP_CMP_EQ, F_GETFD));
	if (!err)
		err = rule(ctx, ok, "fcntl", 1, SCMP_A1_32(SCMP_CMP_EQ, F_SETFD));
	if (!err)
		err = rule(ctx, ok, "mmap", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
#endif
	return load_filter(ctx, err, "spool: the writer");
}

static int report(const char *what, long rc, int err)
{
	bool denied = rc < 0;

	printf("%-40s %s (%s)\n", what, denied ? "denied" : "ALLOWED",
	       denied ? strerror(err) : "succeeded");
	return denied ? 0 : 1;
}

/*
 * Every way the consumer could write the ring's header or data area: its
 * own mapping made writable, a new writable mapping or a write through its
 * read-only descriptor, or that object opened again for writing.
 */
static int check_ring(uint8_t *mem, size_t size, int fd)
{
	int bad = 0, rw;
	long rc;
	void *p;

	rc = mprotect(mem + LP_RING_CONS_SIZE, size - LP_RING_CONS_SIZE, PROT_READ | PROT_WRITE);
	bad |= report("mprotect(ring data, PROT_WRITE)", rc, errno);
	p = mmap(NULL, size - LP_RING_CONS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	bad |= report("mmap(ring fd, PROT_WRITE, MAP_SHARED)", p == MAP_FAILED ? -1 : 0, errno);
	if (p != MAP_FAILED)
		munmap(p, size - LP_RING_CONS_SIZE);
	rc = pwrite(fd, "x", 1, LP_RING_HDR_SIZE);
	bad |= report("pwrite(ring fd)", rc, errno);
	rw = lp_reopen(fd, O_RDWR);
	bad |= report("open(ring fd again, O_RDWR)", rw, -rw);
	if (rw >= 0) {
		p = mmap(NULL, size - LP_RING_CONS_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0);
		bad |= report("  then mmap(PROT_WRITE, MAP_SHARED)", p == MAP_FAILED ? -1 : 0,
			      errno);
		if (p != MAP_FAILED)
			munmap(p, size - LP_RING_CONS_SIZE);
		rc = pwrite(rw, "x", 1, LP_RING_HDR_SIZE);
		bad |= report("  then pwrite", rc, errno);
		close(rw);
	}
	/* what it may write: its own position, in the consumer page */
	{
		volatile uint64_t *cons = (volatile uint64_t *)mem;
		uint64_t v = *cons;

		*cons = v;
		printf("%-40s %s\n", "write(consumer position)", "allowed (its one field)");
	}
	return bad;
}

/* dir/name into buf (the caller's directory is short: mkdtemp's) */
static const char *in_dir(char *buf, size_t len, const char *dir, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
	return buf;
}

/*
 * Files in dir, a directory this user may write that holds its files
 * SYMB_CHECK_VICTIM and SYMB_CHECK_VICTIM2: no file is made (a new one, a
 * directory, a link), opened to write or truncate, changed, renamed or
 * removed.
 */
static int check_files(const char *dir)
{
	char p[512], q[512];
	int bad = 0, fd;
	long rc;

	fd = open(in_dir(p, sizeof(p), dir, "new"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bad |= report("open(O_CREAT, a new file)", fd, errno);
	if (fd >= 0)
		close(fd);
	fd = open(in_dir(p, sizeof(p), dir, SYMB_CHECK_VICTIM), O_WRONLY | O_CLOEXEC);
	bad |= report("open(its own file, O_WRONLY)", fd, errno);
	if (fd >= 0)
		close(fd);
	fd = open(p, O_RDONLY | O_TRUNC | O_CLOEXEC);
	bad |= report("open(its own file, O_TRUNC)", fd, errno);
	if (fd >= 0)
		close(fd);
	rc = mkdir(in_dir(q, sizeof(q), dir, "newdir"), 0700);
	bad |= report("mkdir", rc, errno);
	rc = symlink(SYMB_CHECK_VICTIM, in_dir(q, sizeof(q), dir, "symlink"));
	bad |= report("symlink", rc, errno);
	rc = link(p, in_dir(q, sizeof(q), dir, "link"));
	bad |= report("link(its own file)", rc, errno);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		rc = fchmod(fd, 0644);
		bad |= report("fchmod(its own file)", rc, errno);
		close(fd);
	} else {
		printf("%-40s not checked (%s)\n", "fchmod(its own file)", strerror(errno));
		bad = 1;
	}
	rc = rename(p, in_dir(q, sizeof(q), dir, "renamed"));
	bad |= report("rename(its own file)", rc, errno);
	rc = unlink(in_dir(p, sizeof(p), dir, SYMB_CHECK_VICTIM2));
	bad |= report("unlink(its own file)", rc, errno);
	return bad;
}

/*
 * Signals to other, another process of this user (SIGUSR1, which it
 * ignores): refused by every call that sends one. To itself raise() works.
 */
static int check_signals(pid_t other)
{
	siginfo_t si = {.si_signo = SIGUSR1, .si_code = SI_QUEUE};
	int bad = 0;
	long rc;

	rc = kill(other, SIGUSR1);
	bad |= report("kill(another process)", rc, errno);
	rc = syscall(SYS_tgkill, other, other, SIGUSR1);
	bad |= report("tgkill(another process)", rc, errno);
	rc = syscall(SYS_tkill, other, SIGUSR1);
	bad |= report("tkill(another process)", rc, errno);
	si.si_pid = getpid();
	si.si_uid = getuid();
	rc = syscall(SYS_rt_sigqueueinfo, other, SIGUSR1, &si);
	bad |= report("rt_sigqueueinfo(another process)", rc, errno);
	/* the main thread's tid is the pid */
	rc = syscall(SYS_tgkill, getpid(), getpid(), 0);
	printf("%-40s %s\n", "tgkill(itself, 0)", rc ? "DENIED (abort() cannot work)" : "allowed");
	return bad | (rc != 0);
}

/* No memory becomes executable: mapped so, changed to it, or all readable memory at once. */
static int check_exec(void)
{
	long page = sysconf(_SC_PAGESIZE), rc;
	int bad = 0;
	void *p;

	p = mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad |= report("mmap(PROT_EXEC)", p == MAP_FAILED ? -1 : 0, errno);
	if (p != MAP_FAILED)
		munmap(p, page);
	p = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		printf("%-40s not checked (%s)\n", "mprotect(PROT_EXEC)", strerror(errno));
		return 1;
	}
	rc = mprotect(p, page, PROT_READ | PROT_EXEC);
	bad |= report("mprotect(PROT_EXEC)", rc, errno);
	rc = syscall(SYS_pkey_mprotect, p, page, PROT_READ | PROT_EXEC, -1);
	bad |= report("pkey_mprotect(PROT_EXEC)", rc, errno);
	munmap(p, page);
	/* last: if it were allowed, every readable mapping would become executable */
	rc = personality(PER_LINUX | READ_IMPLIES_EXEC);
	bad |= report("personality(READ_IMPLIES_EXEC)", rc, errno);
	return bad;
}

int symb_sandbox_check(void *ring_mem, size_t ring_size, int ring_fd, const char *dir, pid_t other)
{
	union bpf_attr attr = {
		.map_type = BPF_MAP_TYPE_ARRAY, .key_size = 4, .value_size = 4, .max_entries = 1};
	struct perf_event_attr pe = {
		.type = PERF_TYPE_SOFTWARE, .size = sizeof(pe), .config = PERF_COUNT_SW_CPU_CLOCK};
	char *const argv[] = {"/bin/true", NULL};
	int bad = 0;
	long rc;

	if (symb_sandbox_enter())
		return 1;
#ifdef SYMB_SANITIZED
	printf("%-40s %s\n", "ptrace(PTRACE_TRACEME)", "not checked (sanitizer build)");
#else
	rc = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	bad |= report("ptrace(PTRACE_TRACEME)", rc, errno);
#endif
	rc = syscall(__NR_bpf, BPF_MAP_CREATE, &attr, sizeof(attr));
	bad |= report("bpf(BPF_MAP_CREATE)", rc, errno);
	rc = syscall(__NR_perf_event_open, &pe, 0, -1, -1, 0);
	bad |= report("perf_event_open(cpu-clock, self)", rc, errno);
	rc = socket(AF_INET, SOCK_STREAM, 0);
	bad |= report("socket(AF_INET)", rc, errno);
	rc = socket(AF_UNIX, SOCK_STREAM, 0);
	bad |= report("socket(AF_UNIX)", rc, errno);
	rc = open("/proc/1/mem", O_RDONLY);
	bad |= report("open(/proc/1/mem)", rc, errno);
	rc = execv(argv[0], argv);
	bad |= report("execve(/bin/true)", rc, errno);
	bad |= check_files(dir);
	bad |= check_signals(other);
	if (ring_mem)
		bad |= check_ring(ring_mem, ring_size, ring_fd);
	bad |= check_exec();
	fflush(stdout);
	return bad;
}
