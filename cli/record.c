// SPDX-License-Identifier: MIT
/*
 * lowprof record: checks what it can before starting anything (privileges,
 * -p processes, the output directory), creates the shared-memory ring as an
 * anonymous memfd (nothing to clean up in /dev/shm, whatever the exit path),
 * then starts lowprof-collector (privileged) and lowprof-symbolizer (drops to
 * --user) with the ring and the output files as inherited descriptors.
 *
 * Both children run in their own process group, so a Ctrl-C reaches only
 * this process, which stops the collector first; the symbolizer then drains
 * the ring to its end and writes the outputs. Both children get SIGTERM if
 * this process dies (PR_SET_PDEATHSIG), so none outlives it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lowprof/cpus.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"
#include "record.h"

#define RING_FD	       3
#define OUT_FD0	       4
#define MAX_SAMPLE_REC 4096 /* msgpack sample with 254 frames, rounded up */

static const char *const out_names[3] = {"cpu.pb.gz", "cpu.folded", "cpu.html"};

static volatile sig_atomic_t got_signal;

static void on_signal(int sig)
{
	got_signal++;
	(void)sig;
}

/* Capabilities lowprof record needs in its effective set, and why. */
static const struct {
	cap_value_t cap;
	const char *name;
	const char *why;
} needed_caps[] = {
	{CAP_BPF, "CAP_BPF", "load the BPF programs"},
	{CAP_PERFMON, "CAP_PERFMON", "open cpu-clock perf events and attach to them"},
	{CAP_SYS_PTRACE, "CAP_SYS_PTRACE", "read /proc/PID/maps of other users' processes"},
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

static int mkdir_p(const char *dir)
{
	char path[PATH_MAX];
	size_t len = strlen(dir);

	if (len == 0 || len >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	memcpy(path, dir, len + 1);
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(path, 0755) && errno != EEXIST)
		return -1;
	return 0;
}

static int open_outputs(const char *dir, int fds[3])
{
	struct stat st;

	if (mkdir_p(dir) || stat(dir, &st)) {
		lp_err("output directory %s: %m", dir);
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		lp_err("output directory %s: not a directory", dir);
		return -1;
	}
	for (int i = 0; i < 3; i++) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", dir, out_names[i]);
		fds[i] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fds[i] < 0) {
			lp_err("output directory %s is not writable: %s: %m", dir, path);
			while (i--)
				close(fds[i]);
			return -1;
		}
	}
	return 0;
}

/*
 * After a failed run, removes the outputs unless they hold samples (an empty
 * folded file means none): a run that failed at start leaves nothing behind,
 * one that failed later keeps what it collected.
 */
static void remove_empty_outputs(const char *dir)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, out_names[1]);
	if (stat(path, &st) == 0 && st.st_size > 0)
		return;
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, out_names[i]);
		unlink(path);
	}
}

/* Creates and formats the ring; returns its fd and keeps a mapping in *mem. */
static int create_ring(uint32_t freq, void **mem, size_t *mem_size)
{
	uint32_t cpus[LP_MAX_CPUS];
	int ncpus = lp_online_cpus(cpus, LP_MAX_CPUS);
	uint64_t data;
	int fd;

	if (ncpus <= 0)
		ncpus = 1;
	data = lp_shm_ring_size((uint32_t)ncpus, freq, MAX_SAMPLE_REC);
	fd = memfd_create("lowprof-ring", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, (off_t)lp_ring_mem_size(data))) {
		lp_err("ring: creating shared memory: %m");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	*mem = lp_ring_map_fd(fd, mem_size);
	if (!*mem || lp_ring_format(*mem, *mem_size, data)) {
		lp_err("ring: mapping shared memory: %m");
		if (*mem)
			munmap(*mem, *mem_size);
		*mem = NULL;
		close(fd);
		return -1;
	}
	return fd;
}

/* Path of a sibling program: the directory of /proc/self/exe + name. */
static void sibling(const char *name, char *out, size_t len)
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
 * fork + exec with the inherited fds placed at fixed numbers (src[i] ->
 * RING_FD + i) and everything else closed on exec.
 */
static pid_t spawn(const char *prog, char *const argv[], const int *src, int nsrc)
{
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	/* move the sources above the target range first so dup2 cannot clobber */
	int tmp[8];

	for (int i = 0; i < nsrc; i++) {
		tmp[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 64);
		if (tmp[i] < 0)
			_exit(127);
	}
	for (int i = 0; i < nsrc; i++) {
		if (dup2(tmp[i], RING_FD + i) < 0) /* dup2 clears FD_CLOEXEC */
			_exit(127);
	}
	execv(prog, argv);
	lp_err("starting %s: %m", prog);
	_exit(127);
}

static const char *exit_desc(int status, char *buf, size_t len)
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

int lp_record(const struct lp_record_opts *o)
{
	char coll_path[PATH_MAX], symb_path[PATH_MAX], freq[16], dur[32], desc[64];
	char *cargv[16 + 2 * LP_RECORD_MAX_PIDS], *sargv[16];
	char pidbuf[LP_RECORD_MAX_PIDS][16];
	int fds[3] = {-1, -1, -1}, ring_fd, cstatus = 0, sstatus = 0, rc = 1, n = 0;
	pid_t coll, symb;
	bool coll_done = false, symb_done = false;
	struct sigaction sa = {.sa_handler = on_signal};
	size_t ring_size = 0;
	void *ring_mem = NULL;
	int sent_signals = 0;

	if (check_privileges())
		return 1;
	for (size_t i = 0; i < o->npids; i++) {
		char proc[32];

		snprintf(proc, sizeof(proc), "/proc/%d", (int)o->pids[i]);
		if (access(proc, F_OK)) {
			lp_err("-p %d: no such process", (int)o->pids[i]);
			return 1;
		}
	}
	if (open_outputs(o->out_dir, fds))
		return 1;
	ring_fd = create_ring(o->freq_hz, &ring_mem, &ring_size);
	if (ring_fd < 0)
		goto out;
	sibling("lowprof-collector", coll_path, sizeof(coll_path));
	sibling("lowprof-symbolizer", symb_path, sizeof(symb_path));

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);

	/* the symbolizer first: it is ready to drain when the collector starts */
	sargv[n = 0] = symb_path;
	sargv[++n] = "--ring-fd=3";
	sargv[++n] = "--output-fds=4,5,6";
	sargv[++n] = "--user";
	sargv[++n] = (char *)o->user;
	sargv[++n] = "--exit-with-parent";
	if (o->verbose)
		sargv[++n] = "-v";
	sargv[++n] = NULL;
	int sfds[4] = {ring_fd, fds[0], fds[1], fds[2]};

	symb = spawn(symb_path, sargv, sfds, 4);
	if (symb < 0) {
		lp_err("fork: %m");
		goto out;
	}
	snprintf(freq, sizeof(freq), "%u", o->freq_hz);
	cargv[n = 0] = coll_path;
	cargv[++n] = "--ring-fd=3";
	cargv[++n] = "-F";
	cargv[++n] = freq;
	if (o->duration_s > 0) {
		snprintf(dur, sizeof(dur), "%g", o->duration_s);
		cargv[++n] = "-d";
		cargv[++n] = dur;
	}
	for (size_t i = 0; i < o->npids; i++) {
		snprintf(pidbuf[i], sizeof(pidbuf[i]), "%d", (int)o->pids[i]);
		cargv[++n] = "-p";
		cargv[++n] = pidbuf[i];
	}
	cargv[++n] = "--exit-with-parent";
	if (o->verbose)
		cargv[++n] = "-v";
	cargv[++n] = NULL;
	coll = spawn(coll_path, cargv, &ring_fd, 1);
	if (coll < 0) {
		lp_err("fork: %m");
		kill(symb, SIGTERM);
		coll_done = true;
	}
	/* the children have their copies; ours would keep files open */
	for (int i = 0; i < 3; i++) {
		close(fds[i]);
		fds[i] = -1;
	}
	close(ring_fd);

	while (!coll_done || !symb_done) {
		int status;
		pid_t w;

		if (got_signal > sent_signals) {
			sent_signals = got_signal;
			if (!coll_done && sent_signals == 1) {
				lp_info("stopping; writing what was collected (Ctrl-C again to "
					"stop "
					"at once)");
				kill(coll, SIGTERM);
			} else {
				if (!coll_done)
					kill(coll, SIGTERM);
				if (!symb_done)
					kill(symb, SIGTERM);
			}
		}
		w = waitpid(-1, &status, 0);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (w == coll) {
			coll_done = true;
			cstatus = status;
			if (!WIFEXITED(status) || WEXITSTATUS(status)) {
				/* make sure the symbolizer sees the end of the stream */
				struct lp_ring *r = lp_ring__producer(ring_mem, ring_size);

				lp_ring__close(r);
				lp_ring__free(r);
			}
		} else if (w == symb) {
			symb_done = true;
			sstatus = status;
			if (!coll_done && (!WIFEXITED(status) || WEXITSTATUS(status)))
				kill(coll, SIGTERM);
		}
	}
	if (!WIFEXITED(cstatus) || WEXITSTATUS(cstatus))
		lp_err("lowprof-collector failed (%s)", exit_desc(cstatus, desc, sizeof(desc)));
	if (!WIFEXITED(sstatus) || WEXITSTATUS(sstatus)) {
		lp_err("lowprof-symbolizer failed (%s)", exit_desc(sstatus, desc, sizeof(desc)));
	} else if (WIFEXITED(cstatus) && WEXITSTATUS(cstatus) == 0) {
		rc = 0;
	}
	if (WIFEXITED(sstatus) && WEXITSTATUS(sstatus) == 0)
		printf("\nOutputs in %s/: %s %s %s\n", o->out_dir, out_names[0], out_names[1],
		       out_names[2]);
out:
	for (int i = 0; i < 3; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	if (ring_mem)
		munmap(ring_mem, ring_size);
	if (rc)
		remove_empty_outputs(o->out_dir);
	return rc;
}
