// SPDX-License-Identifier: MIT
/*
 * The symbolizer's run: become unprivileged, attach to the ring as its
 * consumer, feed records into the state until the producer closes the ring
 * (or a signal), then build the profile and write the outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/caps.h"
#include "lowprof/files.h"
#include "cache.h"
#include "lowprof/log.h"
#include "lowprof/ring.h"
#include "profile.h"
#include "symb_int.h"
#include "symbolizer.h"

#define POLL_MS		  20
#define ATTACH_WAIT_MS	  10000
#define PROGRESS_EVERY_NS 10000000000ull

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * Started as root: become `user` with no capabilities in any set. The
 * bounding set is emptied first (that needs CAP_SETPCAP), then groups, gid
 * and uid change; changing uid from 0 clears the permitted and effective
 * sets. no_new_privs keeps exec from granting anything back.
 */
static int drop_privileges(const char *user)
{
	struct passwd *pw;
	int err = 0;

	if (geteuid() != 0)
		return lp_caps_limit(-1); /* already unprivileged: give up what we were handed */
	pw = getpwnam(user);
	if (!pw) {
		lp_err("--user %s: no such user", user);
		return -ENOENT;
	}
	if (pw->pw_uid == 0) {
		lp_err("--user %s: refusing to run the symbolizer as root", user);
		return -EPERM;
	}
	err = lp_caps_bound(-1);
	if (err)
		return err;
	if (setgroups(0, NULL) || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
	    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid)) {
		err = -errno;
		lp_err("privileges: becoming %s: %m", user);
		return err;
	}
	return lp_caps_limit(-1);
}

/*
 * --ring PATH: connect to the collector's Unix socket (waiting for it to
 * appear) and receive the ring's memfd.
 */
static int receive_ring(const char *path)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	int err = 0;

	if (strlen(path) >= sizeof(a.sun_path)) {
		lp_err("ring: socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	for (int waited = 0;; waited += 100) {
		int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), fd;

		if (s < 0)
			return -errno;
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
			fd = lp_recv_fd(s);
			close(s);
			if (fd < 0)
				lp_err("ring: receiving the ring from %s: %s", path,
				       fd == -EPIPE ? "refused (are we the ring's --ring-owner?)"
						    : strerror(-fd));
			return fd;
		}
		err = -errno;
		close(s);
		if ((err != -ENOENT && err != -ECONNREFUSED) || waited >= ATTACH_WAIT_MS ||
		    stop_signal)
			break;
		sleep_ms(100);
	}
	lp_err("ring: connecting to %s: %s", path, strerror(-err));
	return err;
}

/*
 * Maps the ring, which must be sealed against shrinking: if it could be
 * truncated under the collector, the ring is not one lowprof made.
 */
static int attach_ring(const struct symb_opts *o, void **mem, size_t *size, struct lp_ring **ring)
{
	int fd = o->ring_fd, err;

	if (fd < 0) {
		fd = receive_ring(o->ring_path);
		if (fd < 0)
			return fd;
	}
	if (lp_ring_check_sealed(fd)) {
		lp_err("ring: fd %d is not a sealed lowprof ring", fd);
		err = -EPERM;
		goto out;
	}
	*mem = lp_ring_map_fd(fd, size);
	if (!*mem) {
		err = -errno;
		lp_err("ring: mapping fd %d: %s", fd, strerror(-err));
		goto out;
	}
	*ring = lp_ring__consumer(*mem, *size);
	err = *ring ? 0 : -errno;
	if (err)
		lp_err("ring: not a lowprof ring: %s", strerror(-err));
out:
	if (fd != o->ring_fd)
		close(fd);
	return err;
}

/*
 * Drains the ring into the state. Returns when the producer closed the ring
 * and everything was read, on a signal, or on a corrupt ring.
 */
static int consume(struct lp_ring *ring, struct symb_state *s)
{
	struct timespec t0;
	uint64_t last_progress = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		const void *data;
		uint32_t len;
		int err = lp_ring__peek(ring, &data, &len);

		if (err == 0) {
			err = symb_state_feed(s, data, len);
			lp_ring__consume(ring);
			if (err == -EPROTO)
				return err;
			if (err == -ENOMEM) {
				lp_err("out of memory; writing what was aggregated so far");
				return err;
			}
			continue;
		}
		if (err == -EPIPE)
			return 0;
		if (err == -EBADMSG) {
			lp_err("ring: corrupt record or position; writing what was read so far");
			return err;
		}
		/* -EAGAIN: nothing yet */
		if (stop_signal)
			return 0;
		sleep_ms(POLL_MS);
		if (lp_log_level() >= LP_LOG_DEBUG) {
			struct timespec t;
			uint64_t ns;

			clock_gettime(CLOCK_MONOTONIC, &t);
			ns = (uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull + t.tv_nsec;
			if (ns - last_progress >= PROGRESS_EVERY_NS) {
				lp_debug("%llu records, %llu samples",
					 (unsigned long long)s->n.records,
					 (unsigned long long)s->n.samples);
				last_progress = ns;
			}
		}
	}
}

/* Outputs: pprof, folded, HTML of the on-CPU profile, then of the off-CPU one. */
#define NOUT 6

/*
 * Output files: given as fds by lowprof record, or opened here before
 * privileges are dropped, so -o may name a directory only root can write.
 * The off-CPU ones only with --off-cpu; the others stay -1.
 */
static int open_outputs(const struct symb_opts *o, int fds[NOUT])
{
	static const char *const names[NOUT] = {"cpu.pb.gz",	"cpu.folded",	 "cpu.html",
						"offcpu.pb.gz", "offcpu.folded", "offcpu.html"};
	int dfd, n = o->off_cpu ? NOUT : 3;

	if (!o->out_dir) {
		for (int i = 0; i < 3; i++) {
			fds[i] = o->out_fds[i];
			fds[3 + i] = o->off_cpu ? o->offcpu_fds[i] : -1;
		}
		return 0;
	}
	dfd = lp_open_output_dir(o->out_dir);
	if (dfd < 0) {
		lp_err("output directory %s: %s", o->out_dir,
		       dfd == -ENOTDIR ? "not a directory" : strerror(-dfd));
		return dfd;
	}
	for (int i = 0; i < n; i++) {
		fds[i] = lp_open_output_file(dfd, names[i]);
		if (fds[i] < 0) {
			int err = fds[i];

			lp_err("output: %s/%s: %s", o->out_dir, names[i],
			       err == -ELOOP ? "is a symlink" : strerror(-err));
			while (i--)
				close(fds[i]);
			close(dfd);
			return err;
		}
	}
	close(dfd);
	return 0;
}

/*
 * Builds the profile of one kind and writes it to fds[0..2]. Returns it
 * (for the summary) or NULL; *rc gets the first error.
 */
static struct symb_built *write_profile(struct symb_state *s, enum symb_kind kind, const int fds[3],
					int *rc)
{
	const char *what = kind == SYMB_KIND_OFFCPU ? "off-CPU" : "on-CPU";
	const struct symb_profile *p;
	struct symb_built *b;
	int err;

	b = symb_build(s, kind);
	if (!b) {
		err = -errno;
		lp_err("building the %s profile: %s", what, strerror(-err));
		if (!*rc)
			*rc = err;
		return NULL;
	}
	p = symb_built_profile(b);
	/* '|': each writer runs even when another failed */
	if ((symb_write_pprof(p, fds[0]) | symb_write_folded(p, fds[1]) |
	     symb_write_flamegraph(p, fds[2])) &&
	    !*rc)
		*rc = -EIO;
	return b;
}

/* Builds the profiles and writes them to fds (closed here). */
static int write_outputs(struct symb_state *s, const struct symb_opts *o, int fds[NOUT])
{
	struct symb_built *cpu, *offcpu = NULL;
	int rc = 0;

	cpu = write_profile(s, SYMB_KIND_CPU, fds, &rc);
	if (o->off_cpu)
		offcpu = write_profile(s, SYMB_KIND_OFFCPU, fds + 3, &rc);
	if (!o->quiet_summary)
		symb_print_summary(s, cpu, offcpu, STDOUT_FILENO);
	symb_built_free(cpu);
	symb_built_free(offcpu);
	for (int i = 0; i < NOUT; i++)
		if (fds[i] >= 0 && close(fds[i]) && !rc)
			rc = -errno;
	return rc;
}

int symb_run(const struct symb_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct lp_ring *ring = NULL;
	struct symb_cache *cache = NULL;
	int fds[NOUT] = {-1, -1, -1, -1, -1, -1};
	struct symb_state s;
	void *mem = NULL;
	size_t size = 0;
	int err, rc = 1;

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	symb_state_init(&s);
	s.off_cpu = o->off_cpu;

	if (open_outputs(o, fds))
		return 1;
	err = drop_privileges(o->user);
	if (err)
		goto out;
	/* after the uid change: it clears the parent-death signal */
	if (o->exit_with_parent) {
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		/* the parent may have died before the signal was armed */
		if (getppid() != o->parent)
			goto out;
	}
	/* as the final user, so that the database and its WAL files are ours */
	if (o->cache_path) {
		err = symb_cache__open(o->cache_path, o->cache_size, &cache);
		if (err) /* cache.c said why */
			lp_warn("cache: running without the symbol cache (give --cache PATH in "
				"a directory this user can write, or --no-cache)");
		s.cache = cache;
	}
	s.debug_dirs = o->debug_dirs;
	err = attach_ring(o, &mem, &size, &ring);
	if (err)
		goto out;
	err = consume(ring, &s);
	if (err == -EPROTO)
		goto out;
	if (!s.have_meta)
		lp_warn("the stream had no metadata record; times and rates are unknown");
	/* a corrupt ring or no memory: what was read is written, but the run failed */
	rc = write_outputs(&s, o, fds) || err ? 1 : 0;
	for (int i = 0; i < NOUT; i++)
		fds[i] = -1;
out:
	for (int i = 0; i < NOUT; i++)
		if (fds[i] >= 0 && o->out_dir)
			close(fds[i]);
	lp_ring__free(ring);
	if (mem)
		munmap(mem, size);
	symb_state_free(&s);
	symb_cache__close(cache);
	return rc;
}
