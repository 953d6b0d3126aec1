// SPDX-License-Identifier: MIT
/*
 * lowprof record: checks what it can before starting anything (privileges,
 * -p processes, the output directory), creates the shared-memory ring as a
 * sealed anonymous memfd (nothing to clean up in /dev/shm whatever the exit
 * path, and nobody can truncate it under the collector), then starts
 * lowprof-collector (privileged) and lowprof-symbolizer (drops to --user)
 * with the ring and the output files as inherited descriptors.
 *
 * Both children run in their own sessions, without a controlling terminal,
 * so a Ctrl-C reaches only this process, which stops the collector first;
 * the symbolizer then drains the ring to its end and writes the outputs.
 * The symbolizer's output reaches the terminal only through this process.
 * Both children get SIGTERM if this process dies (PR_SET_PDEATHSIG).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <pwd.h>
#include <sys/capability.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/capture.h"
#include "lowprof/clock.h"
#include "lowprof/cpus.h"
#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "lowprof/opts.h"
#include "lowprof/ring.h"
#include "lowprof/schema.h"
#include "lowprof/user.h"
#include "cli_int.h"
#include "record.h"
#include "shards.h"

#define RING_FD 3

/* on-CPU outputs, then (with --off-cpu) the off-CPU ones */
const char *const cli_out_names[6] = {"cpu.pb.gz",    "cpu.folded",    "cpu.html",
				      "offcpu.pb.gz", "offcpu.folded", "offcpu.html"};

/* Capabilities lowprof record needs in its effective set, and why. */
static const struct {
	cap_value_t cap;
	const char *name;
	const char *why;
} needed_caps[] = {
	{CAP_BPF, "CAP_BPF", "load the BPF programs"},
	{CAP_PERFMON, "CAP_PERFMON", "open cpu-clock perf events and attach to them"},
	{CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "read /proc/PID/maps of other users' processes"},
	{CAP_DAC_READ_SEARCH, "CAP_DAC_READ_SEARCH",
	 "open binaries only their owners can read, for the symbolizer"},
	{CAP_SYSLOG, "CAP_SYSLOG", "read kernel symbol addresses"},
	{CAP_SETUID, "CAP_SETUID", "start the symbolizer as --user"},
	{CAP_SETGID, "CAP_SETGID", "start the symbolizer as --user"},
	{CAP_SETPCAP, "CAP_SETPCAP", "empty the children's capability bounding sets"},
};

static int check_privileges(void)
{
	cap_t caps = cap_get_proc();
	int missing = 0;

	if (!caps) {
		lp_err("reading capabilities: %m");
		return -1;
	}
	for (size_t i = 0; i < sizeof(needed_caps) / sizeof(needed_caps[0]); i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(caps, needed_caps[i].cap, CAP_EFFECTIVE, &v) || v != CAP_SET) {
			if (!missing++)
				lp_err("%s", geteuid() ? "lowprof record must run as root"
						       : "missing capabilities");
			lp_err("  missing %s: needed to %s", needed_caps[i].name,
			       needed_caps[i].why);
		}
	}
	cap_free(caps);
	return missing ? -1 : 0;
}

const char *cli_output_strerror(int err, bool path)
{
	switch (err) {
	case -ELOOP:
		return path ? "a symlink in its path (outputs are never written through one: "
			      "give the path it leads to)"
			    : "is a symlink";
	case -ENOTDIR:
		return "not a directory";
	case -EINVAL:
		return "not a regular file with a single link";
	case -EPERM:
		return "a file of another user";
	case -EISDIR:
		return "names a directory, not a file";
	default:
		return strerror(-err);
	}
}

/*
 * Removes dirfd/name if it is still the file fd is open on: an output
 * opened (made, or emptied) before a later one failed, so a run refused at
 * start leaves no empty files.
 */
static void unlink_opened(int dirfd, const char *name, int fd)
{
	struct stat opened, now;

	if (fstat(fd, &opened) == 0 && fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_dev == opened.st_dev && now.st_ino == opened.st_ino)
		unlinkat(dirfd, name, 0);
}

int cli_open_outputs(const char *dir, mode_t mode, int fds[], int nout, int *dirfd,
		     struct lp_made_dirs *made)
{
	int dfd = lp_open_dir_made(dir, true, LP_OUTPUT_DIR_MODE(mode), made);

	*dirfd = -1;
	if (dfd < 0) {
		lp_err("output directory %s: %s", dir, cli_output_strerror(dfd, true));
		return -1;
	}
	for (int i = 0; i < nout; i++) {
		fds[i] = lp_open_output_file(dfd, cli_out_names[i], mode);
		if (fds[i] < 0) {
			lp_err("output directory %s is not writable: %s: %s", dir, cli_out_names[i],
			       cli_output_strerror(fds[i], false));
			while (i--) {
				unlink_opened(dfd, cli_out_names[i], fds[i]);
				close(fds[i]);
				fds[i] = -1;
			}
			close(dfd);
			lp_made_dirs__remove(made);
			return -1;
		}
	}
	*dirfd = dfd;
	return 0;
}

/*
 * After a failed run, removes the outputs unless they hold samples (an empty
 * folded file means none), and then the directories made for them (made,
 * closed either way): a run that failed at start leaves nothing behind,
 * one that failed later keeps what it collected. Through the directory
 * opened for them: whatever its path leads to now.
 */
void cli_remove_empty_outputs(int dirfd, int nout, struct lp_made_dirs *made)
{
	struct stat st;

	for (int i = 1; i < nout; i += 3)
		if (fstatat(dirfd, cli_out_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode) && st.st_size > 0) {
			lp_made_dirs__close(made);
			return;
		}
	for (int i = 0; i < nout; i++)
		if (fstatat(dirfd, cli_out_names[i], &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISREG(st.st_mode))
			unlinkat(dirfd, cli_out_names[i], 0);
	lp_made_dirs__remove(made);
}

/* Path of a cli_sibling program: the directory of /proc/self/exe + name. */
void cli_sibling(const char *name, char *out, size_t len)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	char *slash;

	if (n <= 0) {
		snprintf(out, len, "%s", name);
		return;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	snprintf(out, len, "%s/%s", self, name);
}

/*
 * fork + exec in a new session: no controlling terminal, so the child can
 * neither inject input into the user's terminal (TIOCSTI) nor be stopped by
 * job control; stdin is /dev/null. src[i] becomes fd RING_FD + i and every
 * other descriptor is closed. With relay_out, stdout and stderr are pipes that
 * the parent copies to its own, sanitized.
 */
int cli_spawn(struct cli_child *ch, const char *prog, char *const argv[], const int *src, int nsrc,
	      bool relay_out)
{
	int pout[2] = {-1, -1}, perr[2] = {-1, -1};
	pid_t parent = getpid();
	sigset_t none;

	ch->out[0] = ch->out[1] = -1;
	ch->start_ns = lp_clock_ns(CLOCK_MONOTONIC);
	if (relay_out && (pipe2(pout, O_CLOEXEC) || pipe2(perr, O_CLOEXEC))) {
		lp_err("pipe: %m");
		return -1;
	}
	ch->pid = fork();
	if (ch->pid < 0) {
		lp_err("fork: %m");
		return -1;
	}
	if (ch->pid == 0) {
		int tmp[16], devnull;

		setsid();
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* the parent may have died (SIGKILL) before the signal was armed */
		if (getppid() != parent)
			_exit(127);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		devnull = open("/dev/null", O_RDONLY);
		if (devnull < 0 || dup2(devnull, STDIN_FILENO) < 0)
			_exit(127);
		if (relay_out &&
		    (dup2(pout[1], STDOUT_FILENO) < 0 || dup2(perr[1], STDERR_FILENO) < 0))
			_exit(127);
		/* move the sources above the target range so dup2 cannot clobber */
		for (int i = 0; i < nsrc; i++) {
			tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64);
			if (tmp[i] < 0)
				_exit(127);
		}
		for (int i = 0; i < nsrc; i++)
			if (dup2(tmp[i], RING_FD + i) < 0) /* clears FD_CLOEXEC */
				_exit(127);
		close_range(RING_FD + nsrc, ~0u, 0);
		execv(prog, argv);
		lp_err("starting %s: %m", prog);
		_exit(127);
	}
	if (relay_out) {
		close(pout[1]);
		close(perr[1]);
		ch->out[0] = pout[0];
		ch->out[1] = perr[0];
	}
	return 0;
}

/*
 * Copies what the symbolizer printed to our stdout/stderr. It prints names
 * from ELF files it parsed; control characters (terminal escapes) become
 * '?'. Returns false at end of file.
 */
bool cli_relay(int from, int to)
{
	char buf[4096];
	ssize_t n = read(from, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return true;
	if (n <= 0)
		return false;
	for (ssize_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)buf[i];

		/* '\r' lets a progress line redraw itself */
		if ((ch < 0x20 && ch != '\n' && ch != '\t' && ch != '\r') || ch == 0x7f)
			buf[i] = '?';
	}
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			break;
		off += w;
	}
	return true;
}

const char *cli_exit_desc(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status %d", status);
	return buf;
}

bool cli_child_ok(const struct cli_child *c)
{
	return c->done && WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}

void cli_reap(struct cli_child *kids, int n)
{
	/* each by its pid: lowprof run's exporter is waited for on its own */
	for (int i = 0; i < n; i++) {
		struct rusage ru;
		int status;

		if (kids[i].pid > 0 && !kids[i].done &&
		    wait4(kids[i].pid, &status, WNOHANG, &ru) == kids[i].pid) {
			kids[i].done = true;
			kids[i].status = status;
			/* each process's share of a whole run's CPU (issue 25's breakdown) */
			lp_debug("%s: %.1f ms of CPU (user %.1f, sys %.1f)", kids[i].name,
				 (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
					 (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3,
				 ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
				 ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3);
		}
	}
}

int cli_signalfd(void)
{
	sigset_t mask;
	int sfd;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		lp_err("signalfd: %m");
	return sfd;
}

void cli_signal_kids(struct cli_child *kids, int n, int sig)
{
	for (int i = 0; i < n; i++)
		if (kids[i].pid > 0 && !kids[i].done)
			kill(kids[i].pid, sig);
}

/* Arguments of the two children. */
static void symbolizer_argv(const struct lp_record_opts *o, char *path, const char *sock,
			    const char *shard, char **argv)
{
	int n = 0;

	argv[n++] = path;
	if (o->spool_dir) {
		/* lowprof run: the collector's socket, which outlives a collector */
		argv[n++] = "--ring";
		argv[n++] = (char *)sock;
		/* inherited: the spool, through which we hold its lock (cli_prepare_spool_dir) */
		argv[n++] = "--spool-lock-fd=3";
	} else {
		/* inherited: the ring (read-only) and its consumer page, the file channel, the outputs */
		argv[n++] = "--ring-fd=3,4";
		argv[n++] = "--files-fd=5";
	}
	if (o->spool_dir) {
		static char window[16];

		snprintf(window, sizeof(window), "%u", o->window_s ? o->window_s : 10);
		argv[n++] = "--spool";
		argv[n++] = (char *)o->spool_dir;
		argv[n++] = "--window";
		argv[n++] = window;
		if (o->spool_bytes) {
			argv[n++] = "--spool-bytes";
			argv[n++] = (char *)o->spool_bytes;
		}
		if (o->mem_budget) {
			argv[n++] = "--mem-budget";
			argv[n++] = (char *)o->mem_budget;
		}
	} else if (shard) {
		/* one of --symbolizers: its profiles and summary, for us to merge */
		argv[n++] = "--shard";
		argv[n++] = (char *)shard;
		argv[n++] = "--partial-fds=6,7,8";
	} else {
		argv[n++] = o->off_cpu ? "--output-fds=6,7,8,9,10,11" : "--output-fds=6,7,8";
	}
	if (o->off_cpu)
		argv[n++] = "--off-cpu";
	argv[n++] = "--user";
	argv[n++] = (char *)o->user;
	argv[n++] = "--exit-with-parent";
	if (o->cache_path) {
		argv[n++] = "--cache";
		argv[n++] = (char *)o->cache_path;
	} else {
		argv[n++] = "--no-cache";
	}
	if (o->cache_size) {
		argv[n++] = "--cache-size";
		argv[n++] = (char *)o->cache_size;
	}
	for (size_t i = 0; o->debug_dirs && o->debug_dirs[i]; i++) {
		argv[n++] = "--debug-dir";
		argv[n++] = (char *)o->debug_dirs[i];
	}
	if (o->verbose)
		argv[n++] = "-v";
	argv[n] = NULL;
}

/* the collector's off-CPU options, in the order of lp_record_opts.off_cpu_args */
static const char *const off_cpu_flags[4] = {"--off-cpu-rate", "--off-cpu-min-us", "--off-cpu-mode",
					     "--off-cpu-period-us"};

static void collector_argv(const struct lp_record_opts *o, char *path, const char *sock,
			   char **argv, char *freq, char *dur, char *stack, char *self,
			   char (*pidbuf)[16])
{
	static char rings[LP_MAX_SHARDS][2][32], nshards[16], capfd[32];
	uint32_t nsymb = o->nsymb > 1 ? o->nsymb : 1;
	int n = 0;

	argv[n++] = path;
	if (o->spool_dir) {
		/* lowprof run: a ring of its own on a socket the symbolizer reconnects to */
		argv[n++] = "--ring";
		argv[n++] = (char *)sock;
		argv[n++] = "--ring-owner";
		argv[n++] = (char *)o->user;
		if (nsymb > 1) {
			snprintf(nshards, sizeof(nshards), "%u", nsymb);
			argv[n++] = "--shards";
			argv[n++] = nshards;
		}
	} else if (!o->no_symbolize) {
		/* inherited: shard k's ring as fds 3k+3 and 3k+4, its file channel 3k+5 */
		for (uint32_t k = 0; k < nsymb; k++) {
			snprintf(rings[k][0], sizeof(rings[k][0]), "--ring-fd=%u,%u", 3 * k + 3,
				 3 * k + 4);
			snprintf(rings[k][1], sizeof(rings[k][1]), "--files-fd=%u", 3 * k + 5);
			argv[n++] = rings[k][0];
			argv[n++] = rings[k][1];
		}
		argv[n++] = "--ring-owner";
		argv[n++] = (char *)o->user;
	}
	/* then the capture file */
	snprintf(capfd, sizeof(capfd), "--capture-fd=%u", o->no_symbolize ? 3 : 3 * nsymb + 3);
	if (o->capture_path)
		argv[n++] = capfd;
	if (o->capture_compress) {
		argv[n++] = "--capture-compress";
		argv[n++] = (char *)o->capture_compress;
	}
	if (o->capture_dir) {
		static char rotate[16];

		/* lowprof run: a capture per window, on the symbolizer's boundaries */
		snprintf(rotate, sizeof(rotate), "%u", o->window_s ? o->window_s : 10);
		argv[n++] = "--capture-dir";
		argv[n++] = (char *)o->capture_dir;
		argv[n++] = "--capture-rotate";
		argv[n++] = rotate;
		if (o->capture_bytes) {
			argv[n++] = "--capture-bytes";
			argv[n++] = (char *)o->capture_bytes;
		}
	}
	argv[n++] = "-F";
	argv[n++] = freq;
	snprintf(freq, 16, "%u", o->freq_hz);
	argv[n++] = "--stack-bytes";
	argv[n++] = stack;
	snprintf(stack, 16, "%u", o->stack_bytes);
	if (o->off_cpu) {
		argv[n++] = "--off-cpu";
		for (int i = 0; i < 4; i++) {
			if (!o->off_cpu_args[i])
				continue;
			argv[n++] = (char *)off_cpu_flags[i];
			argv[n++] = (char *)o->off_cpu_args[i];
		}
	}
	if (o->duration_s > 0) {
		snprintf(dur, 32, "%g", o->duration_s);
		argv[n++] = "-d";
		argv[n++] = dur;
	}
	for (size_t i = 0; i < o->npids; i++) {
		snprintf(pidbuf[i], 16, "%d", (int)o->pids[i]);
		argv[n++] = "-p";
		argv[n++] = pidbuf[i];
	}
	for (size_t i = 0; i < o->ncgroups; i++) {
		argv[n++] = "--cgroup";
		argv[n++] = (char *)o->cgroups[i];
	}
	if (o->include_self) {
		argv[n++] = "--include-self";
	} else {
		/* this process and all it starts: the symbolizer, the exporter */
		snprintf(self, 16, "%d", (int)getpid());
		argv[n++] = "--self-pid";
		argv[n++] = self;
	}
	argv[n++] = "--exit-with-parent";
	if (o->verbose)
		argv[n++] = "-v";
	argv[n] = NULL;
}

/*
 * Waits for both children, relaying the symbolizer's output. Signals come
 * through a signalfd, so none is lost between a check and a wait. The first
 * SIGINT/SIGTERM/SIGHUP stops the collector (the symbolizer then drains the
 * ring and writes), the second stops the symbolizer's reading (it writes
 * what it has), the third kills both.
 */
/*
 * The symbolizer died while the collector runs: start it again on the same
 * ring (it resumes where the dead one stopped reading; what the ring could
 * not hold meanwhile is dropped and counted) and have the collector send
 * what the new one needs to make sense of the stream. One that dies within
 * a second of starting is not restarted: that is a start-up failure.
 */
/* A child that ends sooner than this after its start failed to start: not started again */
#define RESTART_MIN_LIFE_NS 1000000000ull

/*
 * Why ch, which ended, is not started again under r: NULL when it may be,
 * else the reason as the messages end it (no restarts left, or it ended
 * within RESTART_MIN_LIFE_NS of starting).
 */
static const char *restart_refused(const struct cli_restart *r, const struct cli_child *ch)
{
	if (r->left <= 0)
		return " once more";
	if (lp_clock_ns(CLOCK_MONOTONIC) - ch->start_ns < RESTART_MIN_LIFE_NS)
		return " within a second of starting";
	return NULL;
}

/*
 * The collector ended, not stopped by us, in lowprof run: it died, or a
 * SIGTERM not ours stopped it (it exits 0 then; run never stops it before
 * its -d otherwise, and one that reached its -d is not started again:
 * prepare says so). Started again on the same socket: the symbolizers,
 * still reading, take the new one's ring and go on; the windows in between
 * lose what was not sampled, and the next window's comments say the
 * collector restarted (its counters start over). Not when it ended within
 * a second of starting, nor after LP_RECORD_MAX_RESTARTS: the run ends.
 */
static bool restart_collector(struct cli_child *kids, struct cli_restart *r)
{
	struct cli_child *coll = &kids[0];
	const char *how = cli_child_ok(coll) ? "was stopped" : "died", *refused;
	char desc[64];

	if (!r || (r->prepare && !r->prepare(r->ctx)))
		return false;
	cli_exit_desc(coll->status, desc, sizeof(desc));
	if ((refused = restart_refused(r, coll))) {
		lp_err("lowprof-collector %s (%s)%s; not started again: the run ends", how, desc,
		       refused);
		return false;
	}
	lp_warn("lowprof-collector %s (%s); starting it again (%d restarts left)", how, desc,
		r->left - 1);
	coll->done = false;
	coll->status = 0;
	if (cli_spawn(coll, r->prog, r->argv, r->fds, r->nfds, false)) {
		coll->done = true;
		coll->status = 1 << 8;
		return false;
	}
	r->left--;
	r->restarts++;
	return true;
}

/*
 * kids[1 + k], shard k's symbolizer, died: started again on its ring, and
 * the collector asked to send that ring what a new symbolizer needs
 * (SIGUSR1 with k + 1 as its value; the other shards read on).
 */
static bool restart_symbolizer(struct cli_child *kids, uint32_t k, struct cli_restart *r)
{
	struct cli_child *symb = &kids[1 + k];
	char desc[64];

	if (!r || restart_refused(r, symb))
		return false;
	lp_warn("%s died (%s); starting it again (%d restarts left)", symb->name,
		cli_exit_desc(symb->status, desc, sizeof(desc)), r->left - 1);
	for (int i = 0; i < 2; i++) {
		if (symb->out[i] >= 0) {
			while (cli_relay(symb->out[i], i ? STDERR_FILENO : STDOUT_FILENO))
				;
			close(symb->out[i]);
			symb->out[i] = -1;
		}
	}
	symb->done = false;
	symb->status = 0;
	if (cli_spawn(symb, r->prog, r->argv, r->fds, r->nfds, true)) {
		symb->done = true;
		symb->status = 1 << 8;
		return false;
	}
	r->left--;
	r->restarts++;
	/* lowprof run's collector sends it when the new one takes the ring on its socket */
	if (r->resend && kids[0].pid > 0 && !kids[0].done)
		sigqueue(kids[0].pid, SIGUSR1, (union sigval){.sival_int = (int)k + 1});
	return true;
}

/*
 * lowprof run's exporter ended while the collector runs (killed, or stopped
 * by a SIGTERM not ours: it exits 0 then): started again, so
 * that windows go on being delivered (those written meanwhile wait in the
 * spool). Not when it died within a second of starting, nor after
 * LP_RECORD_MAX_RESTARTS: then the windows stay in the spool, and the
 * summary says so.
 */
static void restart_exporter(struct cli_supervision *sv)
{
	struct cli_child *e = sv->exporter;
	struct cli_restart *r = sv->exp_restart;
	const char *refused = restart_refused(r, e);
	char desc[64];

	cli_exit_desc(e->status, desc, sizeof(desc));
	if (refused) {
		lp_err("lowprof-exporter died (%s)%s; not started again: windows stay in the "
		       "spool",
		       desc, refused);
		return;
	}
	lp_warn("lowprof-exporter died (%s); starting it again (%d restarts left)", desc,
		r->left - 1);
	r->left--;
	if (sv->exp_spawn(sv->exp_ctx) == 0)
		r->restarts++;
	else
		lp_err("lowprof-exporter could not start again: windows stay in the spool");
}

/* Whether every symbolizer is done and its output relayed. */
static bool symbs_over(const struct cli_child *symb, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		if (!symb[k].done || symb[k].out[0] >= 0 || symb[k].out[1] >= 0)
			return false;
	return true;
}

/* The signals of sfd: the first stops the collector, the second all, the third kills. */
static void on_signals(struct cli_supervision *sv, int sfd, int *nsignals)
{
	struct cli_child *coll = &sv->kids[0];
	struct signalfd_siginfo si;

	while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGCHLD)
			continue;
		(*nsignals)++;
		if (*nsignals == 1 && coll->done)
			(*nsignals)++; /* nothing to stop first: the symbolizers' turn */
		if (*nsignals == 1) {
			lp_info("stopping; writing what was collected (Ctrl-C again to stop "
				"sooner)");
			cli_signal_kids(coll, 1, SIGTERM);
		} else {
			cli_signal_kids(sv->kids, 1 + (int)sv->nsymb,
					*nsignals == 2 ? SIGTERM : SIGKILL);
		}
	}
}

void cli_supervise(struct cli_supervision *sv, int sfd)
{
	struct cli_child *coll = &sv->kids[0], *symb = &sv->kids[1];
	uint32_t n = sv->nsymb;
	int nsignals = 0;

	while (!coll->done || !symbs_over(symb, n)) {
		struct pollfd pfd[1 + 2 * LP_MAX_SHARDS];
		bool coll_was_done = coll->done, symb_was_done[LP_MAX_SHARDS], any_up = false;

		pfd[0] = (struct pollfd){sfd, POLLIN, 0};
		for (uint32_t k = 0; k < n; k++) {
			pfd[1 + 2 * k] = (struct pollfd){symb[k].out[0], POLLIN, 0};
			pfd[2 + 2 * k] = (struct pollfd){symb[k].out[1], POLLIN, 0};
			symb_was_done[k] = symb[k].done;
		}
		if (poll(pfd, 1 + 2 * n, -1) < 0 && errno != EINTR)
			break;
		for (uint32_t k = 0; k < n; k++)
			for (int i = 0; i < 2; i++)
				if (pfd[1 + 2 * k + i].revents &&
				    !cli_relay(symb[k].out[i], i ? STDERR_FILENO : STDOUT_FILENO)) {
					close(symb[k].out[i]);
					symb[k].out[i] = -1;
				}
		on_signals(sv, sfd, &nsignals);
		cli_reap(sv->kids, 1 + (int)n);
		if (sv->exporter && sv->exporter->pid > 0 && !sv->exporter->done) {
			cli_reap(sv->exporter, 1);
			/* exit 0 too: only a signal from elsewhere stops it before us */
			if (sv->exporter->done && !nsignals && !coll->done)
				restart_exporter(sv);
		}
		if (coll->done && !coll_was_done && !cli_child_ok(coll))
			/* it never wrote its end: let the symbolizers finish */
			for (uint32_t k = 0; k < n && sv->rings; k++)
				lp_ring__close(sv->rings[k]);
		for (uint32_t k = 0; k < n; k++)
			any_up |= !symb[k].done;
		/*
		 * lowprof run: the symbolizers wait for the next collector on
		 * the socket. One that ended before we stopped it (died, or
		 * stopped from elsewhere: exit 0) is started again, unless its
		 * -d is over; after the last one, the symbolizers write their
		 * last windows and end.
		 */
		if (sv->coll_restart && coll->done && !coll_was_done && any_up &&
		    (nsignals || !restart_collector(sv->kids, sv->coll_restart)))
			cli_signal_kids(symb, (int)n, SIGTERM);
		/*
		 * lowprof run's symbolizers end before the collector only when
		 * stopped from elsewhere (a SIGTERM not ours: exit 0) or dead:
		 * either way started again. record's may end well on their own.
		 */
		for (uint32_t k = 0; k < n; k++)
			if (symb[k].done && !symb_was_done[k] && !coll->done &&
			    (nsignals || (cli_child_ok(&symb[k]) && !sv->coll_restart) ||
			     !restart_symbolizer(sv->kids, k,
						 sv->restart ? &sv->restart[k] : NULL)))
				/* nobody reads its ring any more: stop collecting */
				cli_signal_kids(coll, 1, SIGTERM);
		for (uint32_t k = 0; k < n; k++)
			if (symb[k].done && sv->files && sv->files[k] >= 0) {
				shutdown(sv->files[k], SHUT_RDWR);
				sv->files[k] = -1;
			}
	}
}

/*
 * The default cache directory changes hands (from nobody, the default
 * before lowprof had a user of its own, or from a --user given before):
 * what the previous owner left in it is not trusted, and the symbolizer
 * would refuse it anyway (cache.c opens only files of its own uid). Every
 * entry that is not a directory and not the new owner's is removed; the
 * cache is rebuilt as binaries are seen again.
 */
static void drop_foreign_cache_files(int dfd, const char *dir, uid_t owner)
{
	struct dirent *e;
	unsigned n = 0;
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || S_ISDIR(st.st_mode) ||
		    st.st_uid == owner)
			continue;
		if (unlinkat(dfd, e->d_name, 0) == 0)
			n++;
	}
	closedir(d);
	if (n)
		lp_warn("cache: %s belonged to another user: removed the %u files it held "
			"(the cache is rebuilt)",
			dir, n);
}

/*
 * The symbol cache lives in a directory only the symbolizer's user can
 * write (it opens the database after dropping privileges). The default
 * directory is created for it; a directory the user does not own is only
 * used if it is already writable to them. Returns 0 or -errno (warned).
 */
int cli_prepare_cache_dir(const char *cache_path, const char *user)
{
	char dir[PATH_MAX];
	struct passwd *pw;
	struct stat st;
	char *slash;
	int dfd, err = 0;

	if (snprintf(dir, sizeof(dir), "%s", cache_path) >= (int)sizeof(dir))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (!slash || slash == dir) {
		lp_warn("cache: %s: give an absolute path in a directory; running without the "
			"cache",
			cache_path);
		return -EINVAL;
	}
	*slash = '\0';
	pw = getpwnam(user);
	if (!pw)
		return -ENOENT; /* the symbolizer reports the unknown user */
	if (strcmp(cache_path, LP_RECORD_DEFAULT_CACHE) == 0 && mkdir(dir, 0700) &&
	    errno != EEXIST) {
		err = -errno;
		goto fail;
	}
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		err = -errno;
		goto fail;
	}
	if (fstat(dfd, &st)) {
		err = -errno;
	} else if (strcmp(cache_path, LP_RECORD_DEFAULT_CACHE) == 0 && st.st_uid != pw->pw_uid) {
		/* ours to manage: hand it to the symbolizer's user, private */
		if (fchown(dfd, pw->pw_uid, pw->pw_gid) || fchmod(dfd, 0700))
			err = -errno;
		else
			drop_foreign_cache_files(dfd, dir, pw->pw_uid);
	}
	close(dfd);
	if (!err)
		return 0;
fail:
	lp_warn("cache: %s: %s; running without the cache", dir, strerror(-err));
	return err;
}

/*
 * lowprof run's spool: made if missing (its parents 0755, root's), and
 * then handed to the symbolizer's user, 0700; one that exists is used as it
 * is (the symbolizer says if it cannot write there). Never through a
 * symlink. One run at a time: *lock_fd (close it at the end) holds an
 * exclusive flock on the directory, and a spool another run or a
 * standalone lowprof-symbolizer holds is an error (two writers would
 * number their windows alike and remove each other's for the budget).
 * The run's symbolizers inherit *lock_fd (--spool-lock-fd): the lock is
 * theirs too. 0, or -1 after saying why.
 */
int cli_prepare_spool_dir(const char *dir, const char *user, int *lock_fd)
{
	struct passwd *pw = getpwnam(user);
	bool made = false;
	struct stat st;
	int dfd, err = 0;
	char path[PATH_MAX];

	if (!pw)
		return 0; /* rec_setup said so */
	if (dir[0] != '/' || snprintf(path, sizeof(path), "%s", dir) >= (int)sizeof(path)) {
		lp_err("--spool %s: give an absolute path", dir);
		return -1;
	}
	for (char *p = strchr(path + 1, '/'); p; p = strchr(p + 1, '/')) {
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			err = -errno;
		*p = '/';
	}
	if (!err && mkdir(path, 0700) == 0)
		made = true;
	else if (!err && errno != EEXIST)
		err = -errno;
	dfd = err ? -1 : open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (!err && (dfd < 0 || fstat(dfd, &st)))
		err = -errno;
	if (!err && made && (fchown(dfd, pw->pw_uid, pw->pw_gid) || fchmod(dfd, 0700)))
		err = -errno;
	if (!err && flock(dfd, LOCK_EX | LOCK_NB)) {
		err = -errno;
		if (err == -EWOULDBLOCK) {
			lp_err("--spool %s: another lowprof run or lowprof-symbolizer is using it",
			       dir);
			close(dfd);
			return -1;
		}
	}
	if (!err) {
		*lock_fd = dfd;
		return 0;
	}
	if (dfd >= 0)
		close(dfd);
	lp_err("--spool %s: %s%s", dir, strerror(-err),
	       err == -ELOOP || err == -ENOTDIR ? " (not a directory, or a symlink)" : "");
	return -1;
}

/*
 * A run that failed before the capture's first block leaves no capture
 * behind: the file we made (same inode), in the directory we made it in.
 */
static void remove_empty_capture(int dirfd, const char *path, const struct stat *made)
{
	const char *name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && st.st_dev == made->st_dev &&
	    st.st_ino == made->st_ino && st.st_size <= (off_t)LPC_HDR_SIZE)
		unlinkat(dirfd, name, 0);
}

int cli_parse_output_mode(const char *arg, mode_t *mode)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(arg, &end, 8);
	if (errno || end == arg || *end || (v & ~0666ul) || (v & 0600) != 0600) {
		lp_err("--output-mode %s: give an octal file mode with rw for the owner and only "
		       "r/w bits, e.g. 0644",
		       arg);
		return -EINVAL;
	}
	*mode = (mode_t)v;
	return 0;
}

/* One recording, from set-up to tear-down. */
/* One symbolizer's ring, file channel and command line (a shard's, with --symbolizers). */
struct rec_shard {
	/* the ring (data, consumer page), the symbolizer's read-only view of it, our mapping */
	int ring_fds[2], reader_fd;
	void *ring_mem;
	size_t ring_size;
	struct lp_ring *ring;
	int files[2];	/* the file channel: the collector's end, the symbolizer's */
	char shard[16]; /* "K/N" with --symbolizers */
	/* its argv with --resumed and its fds, to start it again */
	char *rargv[32 + 2 * LP_RECORD_MAX_DEBUG_DIRS];
	int sfds[3 + LP_RECORD_MAX_OUTPUTS];
};

struct rec {
	struct lp_record_opts o; /* the caller's; cache_path NULL if the cache is unusable */
	int nout; /* output files: 0 (--no-symbolize, lowprof run), 3, or 6 (--off-cpu) */
	int fds[LP_RECORD_MAX_OUTPUTS];
	int out_dirfd;
	struct lp_made_dirs out_made; /* the directories made for the outputs */
	int cap_fd, cap_dirfd;	      /* --capture, and the directory it was made in */
	int spool_lock; /* lowprof run: the spool, flock'd for the run (cli_prepare_spool_dir) */
	struct stat cap_st;
	uint32_t nsymb; /* symbolizers (shards): 1, or --symbolizers */
	struct rec_shard sh[LP_MAX_SHARDS];
	struct lp_ring *rings[LP_MAX_SHARDS]; /* sh[k].ring, for cli_supervise */
	/* --symbolizers with outputs: what each shard wrote, merged at the end */
	struct cli_shards parts;
	int sfd; /* signals, from when the children start (cli_signalfd) */
	struct cli_child kids[1 + LP_MAX_SHARDS]; /* the collector, the symbolizers */
	/* lowprof run with a destination: lowprof-exporter on the spool */
	struct cli_child exporter;
	struct cli_restart exp_restart;
	char exp_path[PATH_MAX];
	/* the symbolizers, and how to start each again (rec_shard) */
	char symb_path[PATH_MAX];
	struct cli_restart restart[LP_MAX_SHARDS];
	/* lowprof run: the collector's command line, fds and start, to start it again */
	char coll_path[PATH_MAX], freq[16], dur[32], stack[16], self[16];
	/* 6 more than record needs: run's --capture-dir, --capture-rotate, --capture-bytes */
	char *cargv[42 + 2 * LP_RECORD_MAX_PIDS + 2 * LP_RECORD_MAX_CGROUPS + 2 * LP_MAX_SHARDS];
	int cfds[1 + 3 * LP_MAX_SHARDS];
	uint64_t start_ns;
	struct cli_restart coll_restart;
	/* lowprof run: the ring is the collector's, on a socket in a directory of our own */
	char sock_dir[64], sock_path[96];
	int sock_lock; /* sock_dir, flock'd for the run (rec_make_socket_dir) */
};

static void rec_init(struct rec *r, const struct lp_record_opts *o)
{
	*r = (struct rec){
		.o = *o,
		.fds = {-1, -1, -1, -1, -1, -1},
		.out_dirfd = -1,
		.out_made = {.parent = -1},
		.cap_fd = -1,
		.cap_dirfd = -1,
		.spool_lock = -1,
		.sock_lock = -1,
		.sfd = -1,
		.exporter = {.name = "lowprof-exporter", .out = {-1, -1}},
	};
	r->nout = o->no_symbolize || o->spool_dir ? 0 : o->off_cpu ? 6 : 3;
	r->nsymb = o->nsymb > 1 ? o->nsymb : 1;
	r->kids[0] = (struct cli_child){.name = "lowprof-collector", .out = {-1, -1}};
	for (uint32_t k = 0; k < LP_MAX_SHARDS; k++) {
		r->sh[k] = (struct rec_shard){
			.ring_fds = {-1, -1}, .reader_fd = -1, .files = {-1, -1}};
		snprintf(r->sh[k].shard, sizeof(r->sh[k].shard), "%u/%u", k, r->nsymb);
		r->kids[1 + k] =
			(struct cli_child){.name = cli_shards__name(k, r->nsymb), .out = {-1, -1}};
	}
}

/*
 * Whether the capture file opened is one of the outputs (--capture
 * DIR/cpu.folded): both would be written into one file, each spoiling the
 * other. Said as an error.
 */
static bool capture_is_output(const struct rec *r)
{
	struct stat st;

	for (int i = 0; i < r->nout; i++)
		if (r->fds[i] >= 0 && fstat(r->fds[i], &st) == 0 && st.st_dev == r->cap_st.st_dev &&
		    st.st_ino == r->cap_st.st_ino) {
			lp_err("--capture %s: that is the output %s/%s; give a file of its own",
			       r->o.capture_path, r->o.out_dir, cli_out_names[i]);
			return true;
		}
	return false;
}

/*
 * What can be checked before anything starts (privileges, BTF, the
 * symbolizer's user, the -p processes), then the outputs, the capture and
 * the cache's directory. 0, or -1 after saying why.
 */
static int rec_setup(struct rec *r)
{
	const struct lp_record_opts *o = &r->o;

	if (check_privileges() || lp_check_kernel_btf())
		return -1;
	/* the symbolizer's user, before anything starts: it owns the ring */
	if (!o->no_symbolize && lp_user_lookup(o->user, "--user", LP_USER_NOT_ROOT, NULL, NULL))
		return -1;
	for (size_t i = 0; i < o->npids; i++)
		if (lp_check_process_arg((int)o->pids[i]))
			return -1;
	for (size_t i = 0; i < o->ncgroups; i++) {
		int fd = lp_cgroup2_open(lp_cgroup2_root(), o->cgroups[i]);

		if (fd < 0)
			return -1;
		close(fd);
	}
	if (r->nout &&
	    cli_open_outputs(o->out_dir, o->output_mode ? o->output_mode : LP_OUTPUT_MODE, r->fds,
			     r->nout, &r->out_dirfd, &r->out_made))
		return -1;
	if (o->capture_path) {
		/* 0600, root's: it holds copies of the profiled processes' stacks */
		r->cap_fd = lp_open_output_path(o->capture_path, 0600, &r->cap_dirfd);
		if (r->cap_fd < 0 || fstat(r->cap_fd, &r->cap_st)) {
			lp_err("--capture %s: %s", o->capture_path,
			       cli_output_strerror(r->cap_fd < 0 ? r->cap_fd : -errno, true));
			return -1;
		}
		if (capture_is_output(r))
			return -1;
	}
	if (o->spool_dir && cli_prepare_spool_dir(o->spool_dir, o->user, &r->spool_lock))
		return -1;
	if (!o->no_symbolize && o->cache_path && cli_prepare_cache_dir(o->cache_path, o->user))
		r->o.cache_path = NULL; /* warned: the run goes on without the cache */
	return 0;
}

/*
 * lowprof run's directory for the ring's socket, BASE/lowprof-run.XXXXXX:
 * the run holds an exclusive flock on it for its whole life (O_CLOEXEC: no
 * child keeps it) and, once it holds it, writes its pid into RUN_DIR_PID.
 * A run killed with SIGKILL cannot remove it; the next run does, but only
 * a directory that proves its run dead: it has the pid file (so its run
 * took the lock; a run still making it, or one of a lowprof that does not
 * lock it, is left alone) and its lock is free (the run that held it is
 * gone, whatever became of its pid).
 */
#define RUN_DIR_PREFIX "lowprof-run."
#define RUN_DIR_PID    "pid"

/* dfd, BASE/name, if it is a dead run's directory: its contents and itself removed. */
static void remove_dead_run_dir(int basefd, const char *name, int dfd)
{
	char pid[16] = "?";
	struct stat st;
	ssize_t n;
	int pfd;

	if (fstat(dfd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    fstatat(dfd, RUN_DIR_PID, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode) ||
	    flock(dfd, LOCK_EX | LOCK_NB))
		return; /* not ours, not a run's that locked it, or its run is alive */
	pfd = openat(dfd, RUN_DIR_PID, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = pfd >= 0 ? read(pfd, pid, sizeof(pid) - 1) : -1;
	if (pfd >= 0)
		close(pfd);
	pid[n > 0 ? n : 1] = '\0';
	pid[strcspn(pid, "\n")] = '\0';
	unlinkat(dfd, "ring.sock", 0);
	unlinkat(dfd, RUN_DIR_PID, 0);
	if (unlinkat(basefd, name, AT_REMOVEDIR) == 0)
		lp_info("removed %s, left behind by lowprof run %s, which is gone", name, pid);
}

/* The directories that dead runs left in base (remove_dead_run_dir). */
static void remove_dead_run_dirs(const char *base)
{
	int basefd = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	DIR *d = basefd >= 0 && (fd = dup(basefd)) >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int dfd;

		if (strncmp(e->d_name, RUN_DIR_PREFIX, strlen(RUN_DIR_PREFIX)) ||
		    strlen(e->d_name) != strlen(RUN_DIR_PREFIX) + 6)
			continue;
		dfd = openat(basefd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dfd < 0)
			continue;
		remove_dead_run_dir(basefd, e->d_name, dfd);
		close(dfd); /* and its lock, if it was taken */
	}
	if (d)
		closedir(d);
	if (basefd >= 0)
		close(basefd);
}

/*
 * lowprof run: a directory of our own for the collector's socket, which
 * the symbolizer's user may enter (the socket itself is its alone), locked
 * and with our pid (above). 0 or -1 (said why).
 */
static int rec_make_socket_dir(struct rec *r)
{
	const char *base = access("/run", W_OK) == 0 ? "/run" : "/tmp";
	char pid[16];
	int fd, len;

	remove_dead_run_dirs(base);
	snprintf(r->sock_dir, sizeof(r->sock_dir), "%s/" RUN_DIR_PREFIX "XXXXXX", base);
	if (!mkdtemp(r->sock_dir)) {
		lp_err("a directory for the ring's socket in %s: %m", base);
		r->sock_dir[0] = '\0';
		return -1;
	}
	r->sock_lock = open(r->sock_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (r->sock_lock < 0 || flock(r->sock_lock, LOCK_EX | LOCK_NB) ||
	    fchmod(r->sock_lock, 0711)) {
		lp_err("%s: %m", r->sock_dir);
		return -1;
	}
	snprintf(r->sock_path, sizeof(r->sock_path), "%s/ring.sock", r->sock_dir);
	len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	fd = openat(r->sock_lock, RUN_DIR_PID, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		    0644);
	if (fd < 0 || write(fd, pid, (size_t)len) != len) {
		lp_err("%s/" RUN_DIR_PID ": %m", r->sock_dir);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* Shard k's ring (size bytes) and file channel: 0, or -1 after saying why. */
static int rec_make_shard_ring(struct rec_shard *sh, uint64_t size)
{
	int err = lp_ring_create_memfds(size, sh->ring_fds);

	if (err) {
		lp_err("ring: creating shared memory: %s", strerror(-err));
		return -1;
	}
	/*
	 * our own view, to mark the stream closed if the collector dies; the
	 * collector seals the ring against writes once it has mapped it too
	 */
	sh->ring_mem = lp_ring_map_fds(sh->ring_fds[LP_RING_FD_DATA], sh->ring_fds[LP_RING_FD_CONS],
				       true, &sh->ring_size);
	sh->ring = sh->ring_mem ? lp_ring__producer(sh->ring_mem, sh->ring_size) : NULL;
	if (!sh->ring) {
		lp_err("ring: mapping shared memory: %m");
		return -1;
	}
	/* the symbolizer's: read-only, and it cannot open the object again (0600, root's) */
	sh->reader_fd = lp_ring_reader_fd(sh->ring_fds[LP_RING_FD_DATA]);
	if (sh->reader_fd < 0) {
		lp_err("ring: a read-only descriptor: %s", strerror(-sh->reader_fd));
		return -1;
	}
	/* the file channel; the symbolizer's end stays here too, for a restarted one */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sh->files)) {
		lp_err("file channel: %m");
		return -1;
	}
	return 0;
}

/*
 * The rings, one per symbolizer, sharing one budget (lowprof/cpus.h), and
 * with --symbolizers the memory files of the shards' outputs. 0, or -1
 * after saying why.
 */
static int rec_make_ring(struct rec *r)
{
	uint32_t cpus[LP_MAX_CPUS];
	int ncpus = lp_online_cpus(cpus, LP_MAX_CPUS);
	uint64_t size = lp_shm_ring_size(ncpus > 0 ? (uint32_t)ncpus : 1, r->o.freq_hz,
					 LPS_SAMPLE_RECORD_MAX(r->o.stack_bytes));

	/* as the collector's --shards: what holds the largest record twice at least */
	size = lp_shm_ring_share(size, r->nsymb, 2ull * LPS_MAX_RECORD);
	for (uint32_t k = 0; k < r->nsymb; k++) {
		if (rec_make_shard_ring(&r->sh[k], size))
			return -1;
		r->rings[k] = r->sh[k].ring;
	}
	if (r->nsymb > 1)
		lp_info("%u symbolizers, each with a ring of %llu MiB", r->nsymb,
			(unsigned long long)(size >> 20));
	return r->nsymb > 1 && cli_shards__open(&r->parts, r->nsymb) ? -1 : 0;
}

/*
 * The symbolizers, before the collector: they are ready to drain when the
 * collector starts. With --no-symbolize there are none. 0 or -1 (said why).
 */
static int rec_start_symbolizer(struct rec *r)
{
	cli_sibling("lowprof-symbolizer", r->symb_path, sizeof(r->symb_path));
	if (r->o.no_symbolize) {
		r->kids[1].done = true; /* none: the collector alone */
		return 0;
	}
	for (uint32_t k = 0; k < r->nsymb; k++) {
		struct rec_shard *sh = &r->sh[k];
		char *sargv[32 + 2 * LP_RECORD_MAX_DEBUG_DIRS];
		int n = 0;

		/*
		 * inherited: the ring read-only and its consumer page, the file
		 * channel, the outputs; lowprof run's: the spool we hold locked
		 */
		sh->sfds[0] = r->o.spool_dir ? r->spool_lock : sh->reader_fd;
		sh->sfds[1] = sh->ring_fds[LP_RING_FD_CONS];
		sh->sfds[2] = sh->files[1];
		if (r->nsymb > 1)
			memcpy(sh->sfds + 3, r->parts.fd[k], sizeof(r->parts.fd[k]));
		else
			memcpy(sh->sfds + 3, r->fds, sizeof(r->fds));
		r->restart[k] = (struct cli_restart){
			.prog = r->symb_path,
			.argv = sh->rargv,
			.fds = sh->sfds,
			.nfds = r->o.spool_dir ? 1 : 3 + (r->nsymb > 1 ? CLI_SHARD_NFD : r->nout),
			.resend = !r->o.spool_dir,
			.left = LP_RECORD_MAX_RESTARTS};
		symbolizer_argv(&r->o, r->symb_path, r->sock_path,
				r->nsymb > 1 && !r->o.spool_dir ? sh->shard : NULL, sargv);
		while (sargv[n]) {
			sh->rargv[n] = sargv[n];
			n++;
		}
		sh->rargv[n++] = "--resumed";
		sh->rargv[n] = NULL;
		if (cli_spawn(&r->kids[1 + k], r->symb_path, sargv, sh->sfds, r->restart[k].nfds,
			      true))
			return -1;
	}
	return 0;
}

/*
 * The collector, on the ring (with --no-symbolize: only into the
 * capture). One that cannot be started counts as failed.
 */
/* A collector started again: for what is left of -d; false when nothing is. */
static bool rec_prepare_collector(void *ctx)
{
	struct rec *r = ctx;
	double left;

	if (!(r->o.duration_s > 0))
		return true;
	left = r->o.duration_s - (double)(lp_clock_ns(CLOCK_MONOTONIC) - r->start_ns) / 1e9;
	if (left < 1)
		return false;
	snprintf(r->dur, sizeof(r->dur), "%g", left);
	return true;
}

static void rec_start_collector(struct rec *r)
{
	static char pidbuf[LP_RECORD_MAX_PIDS][16];
	const struct lp_record_opts *o = &r->o;
	int *cfds = r->cfds;

	uint32_t nc = 0;

	/* inherited: each ring, its consumer page and file channel, then the capture file */
	if (!o->no_symbolize && !o->spool_dir)
		for (uint32_t k = 0; k < r->nsymb; k++) {
			cfds[nc++] = r->sh[k].ring_fds[LP_RING_FD_DATA];
			cfds[nc++] = r->sh[k].ring_fds[LP_RING_FD_CONS];
			cfds[nc++] = r->sh[k].files[0];
		}
	if (r->cap_fd >= 0)
		cfds[nc++] = r->cap_fd;
	cli_sibling("lowprof-collector", r->coll_path, sizeof(r->coll_path));
	collector_argv(o, r->coll_path, r->sock_path, r->cargv, r->freq, r->dur, r->stack, r->self,
		       pidbuf);
	r->start_ns = lp_clock_ns(CLOCK_MONOTONIC);
	/* lowprof run: a collector that dies is started again; the symbolizer reconnects */
	r->coll_restart = (struct cli_restart){.prog = r->coll_path,
					       .argv = r->cargv,
					       .fds = r->cfds,
					       .nfds = 0,
					       .left = LP_RECORD_MAX_RESTARTS,
					       .prepare = rec_prepare_collector,
					       .ctx = r};
	if (cli_spawn(&r->kids[0], r->coll_path, r->cargv, cfds, o->spool_dir ? 0 : (int)nc,
		      false)) {
		/* the collector never ran: count it as failed */
		r->kids[0].done = true;
		r->kids[0].status = 1 << 8;
		for (uint32_t k = 0; k < r->nsymb; k++)
			if (r->sh[k].ring)
				lp_ring__close(r->sh[k].ring);
	}
	if (r->cap_fd >= 0) {
		close(r->cap_fd);
		r->cap_fd = -1;
	}
	/* the collector's ends: their hang-up is the collector's exit */
	for (uint32_t k = 0; k < r->nsymb; k++)
		if (r->sh[k].files[0] >= 0) {
			close(r->sh[k].files[0]);
			r->sh[k].files[0] = -1;
		}
}

/*
 * lowprof-exporter on lowprof run's spool, waited for until it is set up
 * (it says so on a pipe, or exits having said why): 0, or -1. At the start
 * and when it is started again (ctx: the struct rec).
 */
static int rec_spawn_exporter(void *ctx)
{
	struct rec *r = ctx;
	const struct lp_record_opts *o = &r->o;
	char *argv[13 + 2 * 8];
	int n = 0, ready[2];
	char byte;
	ssize_t got;

	argv[n++] = r->exp_path;
	argv[n++] = "--spool";
	argv[n++] = (char *)o->spool_dir;
	argv[n++] = "--user";
	argv[n++] = (char *)o->user;
	argv[n++] = "--ready-fd=3";
	/* its uid change clears the parent-death signal cli_spawn set: armed again after it */
	argv[n++] = "--exit-with-parent";
	for (size_t i = 0; o->exporter_args[i] && n < 13 + 2 * 8 - 2; i++)
		argv[n++] = (char *)o->exporter_args[i];
	if (o->verbose)
		argv[n++] = "-v";
	argv[n] = NULL;
	if (pipe2(ready, O_CLOEXEC)) {
		lp_err("pipe: %m");
		return -1;
	}
	r->exporter.done = false;
	r->exporter.status = 0;
	if (cli_spawn(&r->exporter, r->exp_path, argv, &ready[1], 1, false)) {
		close(ready[0]);
		close(ready[1]);
		r->exporter.done = true;
		r->exporter.status = 1 << 8;
		return -1;
	}
	close(ready[1]);
	while ((got = read(ready[0], &byte, 1)) < 0 && errno == EINTR)
		;
	close(ready[0]);
	if (got == 1)
		return 0;
	while (waitpid(r->exporter.pid, &r->exporter.status, 0) < 0 && errno == EINTR)
		;
	r->exporter.done = true;
	return -1;
}

/*
 * lowprof run with a destination: the exporter is started first, so that a
 * bad URL or header file stops the run before anything is collected. 0, or
 * -1 (it said why).
 */
static int rec_start_exporter(struct rec *r)
{
	if (!r->o.exporter_args)
		return 0;
	cli_sibling("lowprof-exporter", r->exp_path, sizeof(r->exp_path));
	r->exp_restart = (struct cli_restart){.prog = r->exp_path, .left = LP_RECORD_MAX_RESTARTS};
	if (rec_spawn_exporter(r) == 0)
		return 0;
	lp_err("lowprof-exporter could not start; nothing was collected");
	return -1;
}

/*
 * After the symbolizer's last window: the exporter gets SIGTERM and its
 * --stop-grace (5 s) to send what is left, then is killed. A signal here
 * (Ctrl-C again) stops it at once.
 */
static void rec_stop_exporter(struct rec *r)
{
	uint64_t deadline = lp_clock_ns(CLOCK_MONOTONIC) + 10ull * 1000000000ull;
	struct cli_child *e = &r->exporter;

	if (e->pid <= 0 || e->done)
		return;
	kill(e->pid, SIGTERM);
	while (!e->done) {
		struct pollfd p = {r->sfd, POLLIN, 0};
		struct signalfd_siginfo si;

		if (lp_clock_ns(CLOCK_MONOTONIC) >= deadline) {
			lp_warn("lowprof-exporter did not stop in time: killed");
			kill(e->pid, SIGKILL);
			deadline = UINT64_MAX;
		}
		poll(&p, 1, 100);
		while (r->sfd >= 0 && read(r->sfd, &si, sizeof(si)) == sizeof(si))
			if (si.ssi_signo != SIGCHLD)
				kill(e->pid, SIGTERM);
		cli_reap(e, 1);
	}
}

/* Until both children are done, relaying the symbolizer's output (cli_supervise). */
static void rec_wait(struct rec *r)
{
	/* the rings and the outputs stay open here: a restarted symbolizer gets them */
	struct cli_supervision sv = {
		.kids = r->kids,
		.nsymb = r->o.no_symbolize ? 1 : r->nsymb,
		.rings = r->o.no_symbolize || r->o.spool_dir ? NULL : r->rings,
		.restart = r->o.no_symbolize ? NULL : r->restart,
		.coll_restart = r->o.spool_dir ? &r->coll_restart : NULL,
		.exporter = r->exporter.pid > 0 ? &r->exporter : NULL,
		.exp_spawn = rec_spawn_exporter,
		.exp_ctx = r,
		.exp_restart = &r->exp_restart,
	};
	int restarts = 0, files[LP_MAX_SHARDS];

	if (!r->o.no_symbolize && !r->o.spool_dir) {
		for (uint32_t k = 0; k < r->nsymb; k++)
			files[k] = r->sh[k].files[1];
		sv.files = files;
	}
	cli_supervise(&sv, r->sfd);
	for (uint32_t k = 0; k < r->nsymb; k++)
		restarts += r->restart[k].restarts;
	if (r->coll_restart.restarts)
		lp_warn("the collector was started again (%d in all): the windows of those moments "
			"lack what was not sampled (their comments say so)",
			r->coll_restart.restarts);
	if (r->exp_restart.restarts)
		lp_warn("lowprof-exporter was started again (%d in all): the windows written "
			"meanwhile waited in the spool",
			r->exp_restart.restarts);
	if (restarts && r->o.spool_dir)
		lp_warn("%s started again (%d in all): the window each was making when it "
			"ended was lost; the next ones go on from when it resumed",
			r->nsymb > 1 ? "symbolizers were" : "the symbolizer was", restarts);
	else if (restarts && r->nsymb > 1)
		lp_warn("symbolizers were restarted %d times: the outputs of those shards cover "
			"the run from their last start (their summaries say from when)",
			restarts);
	else if (restarts)
		lp_warn("the symbolizer was restarted %d times: the outputs cover the run "
			"from its last start (the summary says from when)",
			restarts);
}

/* How the children ended, and where the results are: the exit code. */
static int rec_summary(const struct rec *r)
{
	const struct lp_record_opts *o = &r->o;
	const struct cli_child *coll = &r->kids[0];
	bool symb_ok = true, offcpu = o->off_cpu;
	char desc[64];

	if (!cli_child_ok(coll))
		lp_err("lowprof-collector failed (%s)",
		       cli_exit_desc(coll->status, desc, sizeof(desc)));
	for (uint32_t k = 0; k < (o->no_symbolize ? 1 : r->nsymb); k++)
		if (!cli_child_ok(&r->kids[1 + k])) {
			lp_err("%s failed (%s)", r->kids[1 + k].name,
			       cli_exit_desc(r->kids[1 + k].status, desc, sizeof(desc)));
			symb_ok = false;
		}
	/* --symbolizers: the outputs are the shards' profiles merged */
	if (r->nsymb > 1 && r->nout &&
	    cli_shards__finish(&r->parts, r->fds, o->off_cpu, false, &offcpu))
		symb_ok = false;
	/* where the results are: not after a symbolizer failed (what is there is partial) */
	if (r->exporter.pid > 0 && !cli_child_ok(&r->exporter))
		lp_err("lowprof-exporter failed (%s): undelivered windows stay in %s",
		       cli_exit_desc(r->exporter.status, desc, sizeof(desc)), o->spool_dir);
	else if (o->spool_dir && symb_ok)
		printf("\nWindows in %s/%s: go tool pprof -top %s/cpu-*.pb.gz\n", o->spool_dir,
		       cli_child_ok(coll) ? "" : " (until the collector failed)", o->spool_dir);
	else if (!o->no_symbolize && symb_ok)
		printf("\nOutputs in %s/%s: %s %s %s%s\n", o->out_dir,
		       cli_child_ok(coll) ? "" : " (until the collector failed)", cli_out_names[0],
		       cli_out_names[1], cli_out_names[2],
		       offcpu ? " offcpu.pb.gz offcpu.folded offcpu.html" : "");
	if (o->capture_path && cli_child_ok(coll))
		printf("%sCapture in %s: lowprof replay %s -o DIR; lowprof capture-info %s\n",
		       o->no_symbolize ? "\n" : "", o->capture_path, o->capture_path,
		       o->capture_path);
	if (o->capture_dir)
		printf("Captures in %s/: lowprof replay %s/capture-TIME-SEQ.lpcap -o DIR, one per "
		       "window\n",
		       o->capture_dir, o->capture_dir);
	return cli_child_ok(coll) && symb_ok && (r->exporter.pid <= 0 || cli_child_ok(&r->exporter))
		       ? 0
		       : 1;
}

/*
 * Whatever point the run reached: a symbolizer still running (set-up
 * failed after it started) is killed, every descriptor closed, and after
 * a failure (rc != 0) outputs and a capture without samples removed.
 */
static void rec_teardown(struct rec *r, int rc)
{
	for (uint32_t k = 0; k < r->nsymb; k++)
		if (r->kids[1 + k].pid > 0 && !r->kids[1 + k].done) {
			kill(r->kids[1 + k].pid, SIGKILL);
			while (waitpid(r->kids[1 + k].pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
	if (r->exporter.pid > 0 && !r->exporter.done) {
		kill(r->exporter.pid, SIGKILL);
		while (waitpid(r->exporter.pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (int i = 0; i < r->nout; i++)
		if (r->fds[i] >= 0)
			close(r->fds[i]);
	for (uint32_t k = 0; k < r->nsymb; k++) {
		struct rec_shard *sh = &r->sh[k];

		for (int i = 0; i < 2; i++) {
			if (r->kids[1 + k].out[i] >= 0)
				close(r->kids[1 + k].out[i]);
			if (sh->ring_fds[i] >= 0)
				close(sh->ring_fds[i]);
			if (sh->files[i] >= 0)
				close(sh->files[i]);
		}
		if (sh->reader_fd >= 0)
			close(sh->reader_fd);
		lp_ring__free(sh->ring);
		if (sh->ring_mem)
			munmap(sh->ring_mem, sh->ring_size);
	}
	cli_shards__close(&r->parts);
	if (r->cap_fd >= 0)
		close(r->cap_fd);
	if (r->sfd >= 0)
		close(r->sfd);
	if (r->sock_dir[0]) {
		unlink(r->sock_path); /* the collector's, if it could not */
		if (r->sock_lock >= 0)
			unlinkat(r->sock_lock, RUN_DIR_PID, 0);
		rmdir(r->sock_dir);
	}
	if (r->sock_lock >= 0)
		close(r->sock_lock); /* after the directory is gone: never seen free while there */
	/* the capture first: it may be in a directory made for the outputs */
	if (rc && r->cap_dirfd >= 0)
		remove_empty_capture(r->cap_dirfd, r->o.capture_path, &r->cap_st);
	if (rc && r->out_dirfd >= 0)
		cli_remove_empty_outputs(r->out_dirfd, r->nout, &r->out_made);
	lp_made_dirs__close(&r->out_made);
	if (r->out_dirfd >= 0)
		close(r->out_dirfd);
	if (r->cap_dirfd >= 0)
		close(r->cap_dirfd);
	if (r->spool_lock >= 0)
		close(r->spool_lock);
}

int lp_record(const struct lp_record_opts *opts)
{
	struct rec r;
	int rc = 1;

	if (LP_OPTS_CHECK(opts, lp_record_opts, exporter_args))
		return 1;
	rec_init(&r, opts);
	if (rec_setup(&r) ||
	    (r.o.spool_dir ? rec_make_socket_dir(&r) : !r.o.no_symbolize && rec_make_ring(&r)) ||
	    (r.o.spool_dir && rec_start_exporter(&r)))
		goto out;
	/* from here on signals come through sfd: cli_supervise acts on them */
	r.sfd = cli_signalfd();
	if (r.sfd < 0 || rec_start_symbolizer(&r))
		goto out;
	rec_start_collector(&r);
	rec_wait(&r);
	rec_stop_exporter(&r);
	rc = rec_summary(&r);
out:
	rec_teardown(&r, rc);
	return rc;
}
