// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <seccomp.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
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
 * What the symbolizer does after start-up, by who needs it: reading the
 * ring, capture and binaries (read, pread64, openat, newfstatat, readlink
 * by libdw), memory (mmap, mremap, brk, madvise), the SQLite cache (pwrite64,
 * fcntl locks, ftruncate, fdatasync, unlink of -wal/-shm, rename of a
 * corrupt file, fchmod of a new one, mmap of -shm), polling (nanosleep),
 * writing the outputs, and abort() (rt_sigprocmask, tgkill).
 */
static const char *const allowed[] = {
	"read",
	"pread64",
	"readv",
	"preadv",
	"write",
	"pwrite64",
	"writev",
	"close",
	"fstat",
	"newfstatat",
	"statx",
	"lseek",
	"openat",
	"fcntl",
	"mmap",
	"munmap",
	"mremap",
	"mprotect",
	"brk",
	"madvise",
	"readlink",
	"readlinkat",
	"getcwd",
	"access",
	"faccessat",
	"faccessat2",
	"unlink",
	"unlinkat",
	"rename",
	"renameat",
	"renameat2",
	"ftruncate",
	"fsync",
	"fdatasync",
	"fchmod",
	"futex",
	"getpid",
	"gettid",
	"getuid",
	"geteuid",
	"getgid",
	"getegid",
	"getppid",
	"getrandom",
	"clock_gettime",
	"clock_nanosleep",
	"nanosleep",
	"gettimeofday",
	"sched_yield",
	"sysinfo",
	"uname",
	"exit",
	"exit_group",
	"rt_sigreturn",
	"rt_sigprocmask",
	"tgkill",
	"dup",
	/* the file channel: requests and descriptors on the collector's socket */
	"sendmsg",
	"recvmsg",
	"poll",
	"ppoll",
	"fadvise64",
	"getdents64",
	"restart_syscall",
	"lstat",
	"stat",
	"open",
};

/*
 * Sanitizer builds (tests): LeakSanitizer's exit-time check stops the
 * threads with a ptrace-ing clone and reads /proc, which an allowlist
 * breaks. There the filter allows by default and refuses these instead;
 * production builds use the allowlist above.
 */
static const char *const refused[] = {
	"bpf",	       "perf_event_open", "execve",	      "execveat",
	"socket",      "socketpair",	  "process_vm_readv", "process_vm_writev",
	"mount",       "umount2",	  "keyctl",	      "add_key",
	"request_key", "init_module",	  "finit_module",     "kexec_load",
	"setuid",      "setgid",	  "unshare",	      "setns",
};

static int allow(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	return seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
}

static int add_rules(scmp_filter_ctx ctx)
{
	int err = 0;

#ifdef SYMB_SANITIZED
	for (size_t i = 0; !err && i < sizeof(refused) / sizeof(refused[0]); i++) {
		int nr = seccomp_syscall_resolve_name(refused[i]);

		if (nr != __NR_SCMP_ERROR)
			err = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	}
	(void)allowed;
	(void)allow;
#else
	(void)refused;
	for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		err = allow(ctx, allowed[i]);
	/* isatty() for stdio's buffering and the progress line: TCGETS only */
	if (!err)
		err = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
				       SCMP_A1(SCMP_CMP_EQ, TCGETS));
#endif
	return err;
}

int symb_sandbox_enter(void)
{
#ifdef SYMB_SANITIZED
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
#endif
	int err;

	if (!ctx)
		return -ENOMEM;
	err = add_rules(ctx);
	if (!err)
		err = seccomp_load(ctx); /* sets no_new_privs first */
	seccomp_release(ctx);
	if (err)
		lp_err("sandbox: installing the seccomp filter: %s", strerror(-err));
	return err;
}

static int report(const char *what, long rc, int err)
{
	bool denied = rc < 0;

	printf("%-34s %s (%s)\n", what, denied ? "denied" : "ALLOWED",
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
		printf("%-34s %s\n", "write(consumer position)", "allowed (its one field)");
	}
	return bad;
}

int symb_sandbox_check(void *ring_mem, size_t ring_size, int ring_fd)
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
	printf("%-34s %s\n", "ptrace(PTRACE_TRACEME)", "not checked (sanitizer build)");
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
	if (ring_mem)
		bad |= check_ring(ring_mem, ring_size, ring_fd);
	fflush(stdout);
	return bad;
}
