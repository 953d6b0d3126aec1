// SPDX-License-Identifier: MIT
/*
 * The exporter's seccomp filter (exporter.h). The exporter talks to the
 * network and reads and removes spool files; it parses no ELF and starts
 * no program. What it needs besides its own calls comes from libcurl
 * (sockets, its threaded resolver's threads and socket pairs), OpenSSL
 * (the CA file, read when the first TLS connection is made) and glibc's
 * name service (/etc/hosts, resolv.conf, a netlink socket for
 * AI_ADDRCONFIG); the resolver's modules are loaded before the filter
 * (run.c), since no code may be mapped after it. Everything else fails
 * with ENOSYS. Sanitizer builds refuse a list instead, as the symbolizer's
 * do (LeakSanitizer needs ptrace at exit).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "exporter.h"

#if defined(__SANITIZE_ADDRESS__)
#define EXP_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EXP_SANITIZED 1
#endif
#endif

static const char *const allowed[] = {
	/* spool files, CA files, /etc/hosts, the metrics page; stderr */
	"read",
	"pread64",
	"readv",
	"write",
	"writev",
	"close",
	"fstat",
	"newfstatat",
	"statx",
	"lseek",
	"getdents64",
	/* connections: curl's, the resolver's, the metrics endpoint's */
	"connect",
	"bind",
	"listen",
	"accept4",
	"getsockname",
	"getpeername",
	"getsockopt",
	"setsockopt",
	"sendto",
	"recvfrom",
	"sendmsg",
	"recvmsg",
	"sendmmsg",
	"shutdown",
	"poll",
	"ppoll",
	/* curl's resolver thread: made, synchronised, ended */
	"futex",
	"set_robust_list",
	"rseq",
	"sched_getaffinity",
	"sched_yield",
	"madvise",
	"exit",
	"gettid",
	/* memory (mmap and mprotect are checked below) */
	"brk",
	"munmap",
	"mremap",
	/* time, randomness (backoff jitter, TLS), sleeping */
	"clock_gettime",
	"gettimeofday",
	"nanosleep",
	"clock_nanosleep",
	"getrandom",
	/* signals: the handler's return, masks around threads */
	"rt_sigreturn",
	"rt_sigprocmask",
	"restart_syscall",
	"getpid",
	"exit_group",
	/* name service: a look at whether nscd or files exist */
	"faccessat",
	"faccessat2",
	"uname",
	"sysinfo",
};

/*
 * Sanitizer builds: what it must never do, refused; the rest allowed.
 * ptrace stays (LeakSanitizer's exit-time check stops the threads with
 * it), and kill is refused only towards others (below).
 */
static const char *const refused[] = {
	"execve",
	"execveat",
	"bpf",
	"perf_event_open",
	"process_vm_readv",
	"process_vm_writev",
	"mount",
	"setuid",
	"setns",
	"unshare",
	"fork",
	"vfork",
	"init_module",
	"finit_module",
	"keyctl",
	"chmod",
	"chown",
	"symlinkat",
	"linkat",
	"mkdirat",
};

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n,
		struct scmp_arg_cmp a, struct scmp_arg_cmp b)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	if (n == 2)
		return seccomp_rule_add(ctx, action, nr, 2, a, b);
	return n ? seccomp_rule_add(ctx, action, nr, 1, a) : seccomp_rule_add(ctx, action, nr, 0);
}

static const struct scmp_arg_cmp none;

static int allow_rules(scmp_filter_ctx ctx, int spooldir, int rejdir)
{
	static const int families[] = {AF_INET, AF_INET6, AF_UNIX, AF_NETLINK};
	static const int fcntls[] = {F_GETFL, F_SETFL, F_GETFD, F_SETFD};
	const uint32_t ok = SCMP_ACT_ALLOW;
	const uint32_t sp = (uint32_t)spooldir, rj = (uint32_t)rejdir;
	pid_t self = getpid();
	int err = 0;

	for (size_t i = 0; !err && i < sizeof(allowed) / sizeof(allowed[0]); i++)
		err = rule(ctx, ok, allowed[i], 0, none, none);
	for (size_t i = 0; !err && i < sizeof(families) / sizeof(families[0]); i++)
		err = rule(ctx, ok, "socket", 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)families[i]),
			   none);
	/* curl's resolver wakes its caller through a Unix socket pair */
	if (!err)
		err = rule(ctx, ok, "socketpair", 1, SCMP_A0_32(SCMP_CMP_EQ, AF_UNIX), none);
	for (size_t i = 0; !err && i < sizeof(fcntls) / sizeof(fcntls[0]); i++)
		err = rule(ctx, ok, "fcntl", 1, SCMP_A1_32(SCMP_CMP_EQ, (uint32_t)fcntls[i]), none);
	/* files opened only to read */
	if (!err)
		err = rule(ctx, ok, "openat", 1,
			   SCMP_A2_32(SCMP_CMP_MASKED_EQ, O_ACCMODE | O_CREAT | O_TRUNC, 0), none);
	/* delivered windows removed; refused ones moved aside, and the oldest of those removed */
	if (!err)
		err = rule(ctx, ok, "unlinkat", 1, SCMP_A0_32(SCMP_CMP_EQ, sp), none);
	if (!err)
		err = rule(ctx, ok, "unlinkat", 1, SCMP_A0_32(SCMP_CMP_EQ, rj), none);
	if (!err)
		err = rule(ctx, ok, "renameat", 2, SCMP_A0_32(SCMP_CMP_EQ, sp),
			   SCMP_A2_32(SCMP_CMP_EQ, rj));
	if (!err)
		err = rule(ctx, ok, "renameat2", 2, SCMP_A0_32(SCMP_CMP_EQ, sp),
			   SCMP_A2_32(SCMP_CMP_EQ, rj));
	/* threads, never a new process; clone3's flags are out of reach: glibc falls back */
	if (!err)
		err = rule(ctx, ok, "clone", 1,
			   SCMP_A0_64(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD), none);
	if (!err)
		err = rule(ctx, ok, "mmap", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0), none);
	/* a new thread's stack guard */
	if (!err)
		err = rule(ctx, ok, "mprotect", 1, SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0),
			   none);
	if (!err)
		err = rule(ctx, ok, "tgkill", 1, SCMP_A0_32(SCMP_CMP_EQ, (uint32_t)self), none);
	if (!err)
		err = rule(ctx, ok, "ioctl", 1, SCMP_A1_32(SCMP_CMP_EQ, FIONREAD), none);
	if (!err)
		err = rule(ctx, ok, "ioctl", 1, SCMP_A1_32(SCMP_CMP_EQ, TCGETS), none);
	return err;
}

bool exp_sanitized(void)
{
#ifdef EXP_SANITIZED
	return true;
#else
	return false;
#endif
}

int exp_sandbox_enter(int spooldir, int rejdir)
{
#ifdef EXP_SANITIZED
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
#else
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(ENOSYS));
#endif
	int err = 0;

	if (!ctx)
		return -ENOMEM;
#ifdef EXP_SANITIZED
	(void)allow_rules;
	for (size_t i = 0; !err && i < sizeof(refused) / sizeof(refused[0]); i++)
		err = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), refused[i], 0, none, none);
	if (!err)
		err = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "openat", 1,
			   SCMP_A2_32(SCMP_CMP_MASKED_EQ, O_CREAT, O_CREAT), none);
	if (!err)
		err = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "mmap", 1,
			   SCMP_A2_32(SCMP_CMP_MASKED_EQ, PROT_EXEC, PROT_EXEC), none);
	if (!err)
		err = rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "kill", 1,
			   SCMP_A0_32(SCMP_CMP_NE, (uint32_t)getpid()), none);
	(void)spooldir;
	(void)rejdir;
#else
	(void)refused;
	err = allow_rules(ctx, spooldir, rejdir);
#endif
	if (!err)
		err = seccomp_load(ctx); /* sets no_new_privs first */
	seccomp_release(ctx);
	if (err)
		lp_err("sandbox: installing the seccomp filter: %s", strerror(-err));
	return err;
}

/* ---- --check-sandbox ---------------------------------------------------------- */

static int report(const char *what, long rc, int err)
{
	bool denied = rc < 0;

	printf("%-44s %s (%s)\n", what, denied ? "denied" : "ALLOWED",
	       denied ? strerror(err) : "succeeded");
	return denied ? 0 : 1;
}

int exp_sandbox_check(const char *dir)
{
	char path[PATH_MAX];
	int spool = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rej, bad = 0, fd;
	long rc;
	void *p;

	if (spool < 0 || mkdirat(spool, "rejected", 0700) ||
	    (rej = openat(spool, "rejected", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		fprintf(stderr, "--check-sandbox %s: %s\n", dir, strerror(errno));
		return 2;
	}
	fd = openat(spool, "victim", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || close(fd) || exp_sandbox_enter(spool, rej))
		return 2;
#ifdef EXP_SANITIZED
	printf("sanitizer build: its filter refuses a list (LeakSanitizer needs what the "
	       "production allowlist refuses); checked on the production build\n");
	return 0;
#endif
	rc = execl("/bin/true", "true", (char *)NULL);
	bad |= report("execve(/bin/true)", rc, errno);
	rc = syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
	if (rc == 0)
		_exit(0);
	bad |= report("clone(a new process)", rc, errno);
	rc = ptrace(PTRACE_TRACEME, 0, NULL, NULL);
	bad |= report("ptrace(PTRACE_TRACEME)", rc, errno);
	rc = syscall(SYS_bpf, 0, NULL, 0);
	bad |= report("bpf", rc, errno);
	rc = syscall(SYS_perf_event_open, NULL, 0, -1, -1, 0);
	bad |= report("perf_event_open", rc, errno);
	rc = socket(AF_PACKET, SOCK_RAW, 0);
	bad |= report("socket(AF_PACKET)", rc, errno);
	snprintf(path, sizeof(path), "%s/new", dir);
	rc = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	bad |= report("open(O_CREAT, in the spool)", rc, errno);
	rc = openat(spool, "victim", O_WRONLY | O_CLOEXEC);
	bad |= report("openat(a spool file, O_WRONLY)", rc, errno);
	snprintf(path, sizeof(path), "%s/victim", dir);
	rc = unlink(path);
	bad |= report("unlink(a spool file, by path)", rc, errno);
	rc = renameat(spool, "victim", spool, "renamed");
	bad |= report("renameat(within the spool)", rc, errno);
	rc = kill(getppid(), 0);
	bad |= report("kill(another process)", rc, errno);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	bad |= report("mmap(PROT_EXEC)", p == MAP_FAILED ? -1 : 0, errno);
	p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	rc = p == MAP_FAILED ? 0 : mprotect(p, 4096, PROT_READ | PROT_EXEC);
	bad |= report("mprotect(PROT_EXEC)", rc, errno);
	/* what it needs: a socket, and removing a spool file by its directory */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	printf("%-44s %s\n", "socket(AF_INET)", fd >= 0 ? "allowed (needed)" : "REFUSED");
	bad |= fd < 0;
	rc = unlinkat(spool, "victim", 0);
	printf("%-44s %s\n", "unlinkat(the spool, a window)",
	       rc == 0 ? "allowed (needed)" : "REFUSED");
	bad |= rc != 0;
	return bad;
}
