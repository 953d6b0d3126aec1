// SPDX-License-Identifier: MIT
/*
 * The symbolizer's run: become unprivileged, attach to the ring as its
 * consumer, feed records into the state until the producer closes the ring
 * (or a signal), then build the profile and write the outputs.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/capture.h"
#include "lowprof/caps.h"
#include "lowprof/clock.h"
#include "lowprof/files.h"
#include "cache.h"
#include "lowprof/log.h"
#include "lowprof/opts.h"
#include "lowprof/ring.h"
#include "lowprof/user.h"
#include "lowprof/writers.h"
#include "attach.h"
#include "sandbox.h"
#include "spool.h"
#include "metrics.h"
#include "build.h"
#include "symbolizer.h"

/*
 * An empty ring: wait for the collector's wakeup after its next batch
 * (lp_ring__wait, a futex on the ring's header), or WAIT_MS at most, to
 * look at signals and print progress. A batch comes when the collector
 * drains, so a low-rate run wakes the symbolizer about once a second.
 */
#define WAIT_MS	       1000
#define ATTACH_WAIT_MS 10000
/* how long after its end a window waits for samples the collector still holds */
#define WINDOW_GRACE_NS	  (2000ull * 1000000)
#define PROGRESS_EVERY_NS 10000000000ull

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/*
 * Maps the ring fds[0] (data), fds[1] (consumer page) read-only but the
 * consumer page, after checking both are sealed against shrinking: if they
 * could be truncated under the collector, the ring is not one lowprof made.
 * 0 or -errno (said why); the fds stay the caller's.
 */
static int map_ring(const int fds[2], void **mem, size_t *size, struct lp_ring **ring)
{
	int err;

	if (lp_ring_check_sealed(fds[0]) || lp_ring_check_sealed(fds[1])) {
		lp_err("ring: fds %d,%d are not a sealed lowprof ring", fds[0], fds[1]);
		return -EPERM;
	}
	*mem = lp_ring_map_fds(fds[0], fds[1], false, size);
	if (!*mem) {
		err = -errno;
		lp_err("ring: mapping fds %d,%d: %s", fds[0], fds[1], strerror(-err));
		return err;
	}
	*ring = lp_ring__consumer(*mem, *size);
	if (*ring)
		return 0;
	err = -errno;
	lp_err("ring: not a lowprof ring: %s", strerror(-err));
	munmap(*mem, *size);
	*mem = NULL;
	return err;
}

/*
 * The ring: --ring-fd's, or received on --ring PATH (symb_receive_ring),
 * mapped (map_ring). *files_fd: the file channel (the socket the ring came
 * on, or --files-fd). With data_fd, the ring object's descriptor is kept
 * open and stored there (the sandbox check writes at it); otherwise it is
 * closed once mapped. *shard (may be NULL): the ring's shard, as --ring
 * PATH's collector says, or else o's.
 */
static int attach_ring(const struct symb_opts *o, void **mem, size_t *size, struct lp_ring **ring,
		       int *files_fd, int *data_fd, bool *resumed, pid_t *collector,
		       struct symb_shard *shard)
{
	int fds[2] = {o->ring_fd, o->ring_cons_fd}, err;

	*files_fd = o->files_fd;
	*resumed = false;
	if (shard)
		*shard = (struct symb_shard){o->shard, o->nshards ? o->nshards : 1};
	if (fds[0] < 0) {
		err = symb_receive_ring(o->ring_path, o->collector_uid, ATTACH_WAIT_MS,
					&stop_signal, fds, files_fd, resumed, collector, shard);
		if (err == -ETIMEDOUT)
			lp_err("ring: connecting to %s: nothing listens there (is the collector "
			       "running?)",
			       o->ring_path);
		if (err)
			return err;
	}
	err = map_ring(fds, mem, size, ring);
	if (data_fd && !err) {
		*data_fd = fds[0];
		fds[0] = o->ring_fd; /* not closed below */
	}
	for (int i = 0; i < 2; i++)
		if (fds[i] >= 0 && fds[i] != (i ? o->ring_cons_fd : o->ring_fd))
			close(fds[i]);
	return err;
}

/*
 * What --check-sandbox tries to change: a directory of this user's with
 * two files of its own in it, made before the filter goes on. Its path is
 * in dir (PATH_MAX bytes); 0 or -1 (said why).
 */
static int check_dir_make(char *dir)
{
	const char *tmp = getenv("TMPDIR");
	const char *const files[] = {SYMB_CHECK_VICTIM, SYMB_CHECK_VICTIM2};
	char p[PATH_MAX + 16];

	snprintf(dir, PATH_MAX, "%s/lowprof-check.XXXXXX", tmp && tmp[0] == '/' ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		lp_err("check-sandbox: a directory to try files in: %s: %m", dir);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		int fd;

		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0) {
			lp_err("check-sandbox: %s: %m", p);
			return -1;
		}
		close(fd);
	}
	return 0;
}

/* Removes what check_dir_make made and the checks may have made. */
static void check_dir_remove(const char *dir)
{
	const char *const made[] = SYMB_CHECK_MADE;
	const char *const files[] = {SYMB_CHECK_VICTIM, SYMB_CHECK_VICTIM2};
	char p[PATH_MAX + 16];

	for (int i = 0; i < 2; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i]);
		unlink(p);
	}
	for (int i = 0; made[i]; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, made[i]);
		if (unlink(p) && errno == EISDIR)
			rmdir(p);
	}
	rmdir(dir);
}

/*
 * Runs sandbox.c's checks in a child, which enters the sandbox; this
 * process, of the same user and outside it, is the one the child tries to
 * signal (SIGUSR1, ignored here) and cleans up what it may have made.
 * Returns the child's verdict: 0 when everything was denied.
 */
static int check_in_child(void *mem, size_t size, int data_fd)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	char dir[PATH_MAX];
	pid_t self = getpid(), kid;
	int status = 0;

	sigemptyset(&ign.sa_mask);
	sigaction(SIGUSR1, &ign, NULL);
	if (check_dir_make(dir)) {
		check_dir_remove(dir);
		return 1;
	}
	fflush(stdout);
	kid = fork();
	if (kid == 0) {
		int bad = symb_sandbox_check(mem, size, data_fd, dir, self);

		fflush(stdout);
		_exit(bad ? 1 : 0);
	}
	while (kid > 0 && waitpid(kid, &status, 0) < 0 && errno == EINTR)
		;
	check_dir_remove(dir);
	if (kid < 0) {
		lp_err("check-sandbox: fork: %m");
		return 1;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

/*
 * --check-sandbox: the checks of sandbox.c on a real ring, the one given
 * (--ring-fd, --ring) or else one made here as the collector makes it
 * (sealed, handed over read-only) before privileges are dropped.
 */
static int check_sandbox(const struct symb_opts *o)
{
	struct lp_ring *ring = NULL;
	int own[2] = {-1, -1}, data_fd = -1, files_fd = -1, rc = 1;
	void *pmem = NULL, *mem = NULL;
	bool resumed;
	size_t psize = 0, size = 0;

	if (o->ring_fd < 0 && !o->ring_path) {
		if (lp_ring_create_memfds(LP_RING_MIN_DATA, own))
			return 1;
		pmem = lp_ring_map_fds(own[0], own[1], true, &psize);
		if (!pmem || lp_ring_seal_writes(own[0]))
			goto out;
		data_fd = lp_ring_reader_fd(own[0]);
		if (data_fd < 0)
			goto out;
	}
	if (lp_become_user(o->user, "--user"))
		goto out;
	if (data_fd >= 0) {
		mem = lp_ring_map_fds(data_fd, own[1], false, &size);
		if (!mem) {
			lp_err("ring: mapping: %m");
			goto out;
		}
	} else if (attach_ring(o, &mem, &size, &ring, &files_fd, &data_fd, &resumed, NULL, NULL)) {
		goto out;
	}
	rc = check_in_child(mem, size, data_fd);
out:
	lp_ring__free(ring);
	if (mem)
		munmap(mem, size);
	if (pmem)
		munmap(pmem, psize);
	for (int i = 0; i < 2; i++)
		if (own[i] >= 0)
			close(own[i]);
	if (data_fd >= 0 && data_fd != o->ring_fd)
		close(data_fd);
	if (files_fd >= 0 && files_fd != o->files_fd)
		close(files_fd);
	return rc;
}

/* Outputs: pprof, folded, HTML of the on-CPU profile, then of the off-CPU one. */
#define NOUT 6

static const char *const out_names[NOUT] = {"cpu.pb.gz",    "cpu.folded",    "cpu.html",
					    "offcpu.pb.gz", "offcpu.folded", "offcpu.html"};

static void capture_warn(void *ctx, const char *msg)
{
	lp_warn("capture %s: %s", (const char *)ctx, msg);
}

/*
 * A replay is a batch run that ends when the capture does, and every page
 * it touches for the first time costs a page fault (~1.3 us here for 4 KiB
 * pages, cleared and mapped). glibc's defaults grow the heap in 128 KiB
 * steps and hand its top back as soon as 128 KiB of it are free, so tables
 * that grow and are freed again fault their pages in over and over: grow
 * it in large steps (untouched until used) and keep what is freed for
 * reuse. Only the peak is held, and only until exit.
 *
 * Not transparent huge pages (MADV_HUGEPAGE on the heap, as before): where
 * a virtual machine's free memory goes back to its host (free page
 * reporting, which reports only free 2 MiB blocks), a huge page is often
 * one the host must back again, and clearing it cost ~4.6 ms instead of
 * ~0.1. A replay of the benchmark's capture took 143 ms of CPU with them
 * when it followed another replay within a second or two, but 210-260 ms
 * after 5 s of idleness (a replay run once); with 4 KiB pages, 159-171 ms
 * either way.
 */
static void replay_malloc_tuning(void)
{
	mallopt(M_TOP_PAD, 64 << 20);
	mallopt(M_TRIM_THRESHOLD, 256 << 20);
}

/*
 * Replay: feeds every whole record of the capture into the state, with a
 * progress line on a terminal. Returns 0, -EPROTO (another schema major),
 * -ENOMEM, or -EIO.
 */
static int consume_capture(struct lpc_reader *rd, struct symb_state *s, uint64_t size,
			   bool progress)
{
	bool tty = progress || isatty(STDERR_FILENO);
	uint64_t last = lp_clock_ns(CLOCK_MONOTONIC);
	int err;

	for (;;) {
		const void *rec;
		uint32_t len;

		err = lpc_reader__next(rd, &rec, &len);
		if (err == -ENODATA) {
			err = 0;
			break;
		}
		if (err) {
			lp_err("capture: reading: %s", strerror(-err));
			break;
		}
		err = symb_state__feed(s, rec, len);
		if (err == -EPROTO)
			break;
		if (err == -ENOMEM) {
			lp_err("out of memory; writing what was aggregated so far");
			break;
		}
		if (stop_signal)
			break;
		if (tty && !(symb_state__counters(s)->records & 1023) &&
		    lp_clock_ns(CLOCK_MONOTONIC) - last >= 500000000ull) {
			last = lp_clock_ns(CLOCK_MONOTONIC);
			fprintf(stderr, "\rreplay: %3.0f%%  %llu records, %llu samples ",
				size ? 100.0 * lpc_reader__offset(rd) / size : 0.0,
				(unsigned long long)symb_state__counters(s)->records,
				(unsigned long long)symb_state__counters(s)->samples);
		}
	}
	if (tty)
		fprintf(stderr, "\r%60s\r", "");
	return err;
}

/* What the capture held and what of it could not be read. */
static void print_capture(const struct lpc_reader *rd, const char *name, int fd)
{
	struct lpc_stats st;
	char damage[320];

	lpc_reader__stats(rd, &st);
	dprintf(fd,
		"  capture         %s%s%llu records in %llu blocks, %.1f MiB (%.1f MiB of records, "
		"%llu blocks zstd)\n",
		name ? name : "", name ? ": " : "", (unsigned long long)st.records,
		(unsigned long long)st.blocks, st.file_bytes / 1048576.0, st.raw_bytes / 1048576.0,
		(unsigned long long)st.zstd_blocks);
	if (lpc_damage_text(&st, damage, sizeof(damage)))
		dprintf(fd, "  capture damage  %s\n", damage);
}

/*
 * Output files: given as fds by lowprof record, or opened here before
 * privileges are dropped, so -o may name a directory only root can write.
 * The off-CPU ones only with --off-cpu; the others stay -1.
 */
static int open_outputs(const struct symb_opts *o, bool off_cpu, int fds[NOUT])
{
	const char *const *names = out_names;
	int dfd, n = off_cpu ? NOUT : 3;

	if (!o->out_dir) {
		for (int i = 0; i < 3; i++) {
			fds[i] = o->out_fds[i];
			fds[3 + i] = off_cpu ? o->offcpu_fds[i] : -1;
		}
		return 0;
	}
	dfd = lp_open_output_dir(o->out_dir, LP_OUTPUT_MODE);
	if (dfd < 0) {
		lp_err("output directory %s: %s", o->out_dir,
		       dfd == -ENOTDIR ? "not a directory"
		       : dfd == -ELOOP ? "a symbolic link in its path"
				       : strerror(-dfd));
		return dfd;
	}
	for (int i = 0; i < n; i++) {
		fds[i] = lp_open_output_file(dfd, names[i], LP_OUTPUT_MODE);
		if (fds[i] < 0) {
			int err = fds[i];

			lp_err("output: %s/%s: %s", o->out_dir, names[i],
			       err == -ELOOP   ? "is a symlink"
			       : err == -EPERM ? "a file of another user"
					       : strerror(-err));
			while (i--)
				close(fds[i]);
			close(dfd);
			return err;
		}
	}
	close(dfd);
	return 0;
}

/* Builds the profile of one kind, or NULL (logged); *rc gets the first error. */
static struct symb_built *build_profile(struct symb_state *s, enum symb_kind kind, int *rc)
{
	const char *what = kind == SYMB_KIND_OFFCPU ? "off-CPU" : "on-CPU";
	struct symb_built *b = symb_build(s, kind);

	if (!b) {
		int err = -errno;

		lp_err("building the %s profile: %s", what, strerror(-err));
		if (!*rc)
			*rc = err;
	}
	return b;
}

/*
 * Writes a built profile (NULL: none) to fds[0..2]; a shard's partial pprof
 * (partial) not compressed: lowprof reads it at once. *rc gets the first
 * error.
 */
static void write_profile(const struct symb_built *b, const int fds[3], bool partial, int *rc)
{
	const struct lpw_profile *p;
	int err;

	if (!b)
		return;
	p = symb_built_profile(b);
	/* '|': each writer runs even when another failed; a shard's partial outputs: pprof only */
	err = fds[0] < 0 ? 0
	      : partial	 ? lpw_write_pprof_raw(p, fds[0])
			 : lpw_write_pprof(p, fds[0]);
	err |= fds[1] >= 0 ? lpw_write_folded(p, fds[1]) : 0;
	err |= fds[2] >= 0 ? lpw_write_flamegraph(p, fds[2]) : 0;
	if (err && !*rc)
		*rc = -EIO;
}

/*
 * Builds the profiles and writes them to fds (closed here): the off-CPU one
 * when off_cpu. rd: the capture replayed, for the summary, or NULL. Both
 * are built before either is written: the state's tables that only
 * building uses are freed in between, and the writers reuse their memory.
 */
static int write_outputs(struct symb_state *s, const struct symb_opts *o, bool off_cpu,
			 int fds[NOUT], const struct lpc_reader *rd)
{
	const struct symb_meta *m = symb_state__meta(s);
	struct symb_built *cpu, *offcpu = NULL;
	int rc = 0;

	cpu = build_profile(s, SYMB_KIND_CPU, &rc);
	if (off_cpu)
		offcpu = build_profile(s, SYMB_KIND_OFFCPU, &rc);
	symb_state__finish(s);
	write_profile(cpu, fds, o->partial, &rc);
	if (off_cpu)
		write_profile(offcpu, fds + 3, o->partial, &rc);
	if (!o->quiet_summary) {
		int sfd = o->summary_fd;

		symb_print_summary(s, cpu, offcpu, off_cpu, sfd);
		if (rd)
			print_capture(rd, o->capture_path, sfd);
		if (o->resumed)
			dprintf(sfd,
				"  resumed         this symbolizer was started again during the "
				"run: "
				"the profile covers %.2f s from %.2f s into it (%llu records "
				"before "
				"the collector's metadata skipped)\n",
				m->first_ns && m->last_ns > m->first_ns
					? (m->last_ns - m->first_ns) / 1e9
					: 0.0,
				m->first_ns > m->start_mono_ns
					? (m->first_ns - m->start_mono_ns) / 1e9
					: 0.0,
				(unsigned long long)symb_state__counters(s)->skipped_resume);
	}
	symb_built_free(cpu);
	symb_built_free(offcpu);
	for (int i = 0; i < NOUT; i++)
		if (fds[i] >= 0 && close(fds[i]) && !rc)
			rc = -errno;
	return rc;
}

/*
 * A capture's off-CPU outputs are written when it turns out to have
 * off-CPU data. Otherwise they stay empty: the sandbox removes no file
 * (lowprof replay removes them; with -o DIR they are left, empty).
 */
static void close_unused_offcpu(int fds[NOUT])
{
	for (int i = 3; i < NOUT; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

/*
 * Replay: the capture, opened while we may still have the rights to; read
 * only after privileges are dropped.
 */
static int open_capture(const struct symb_opts *o)
{
	int fd;

	if (!o->capture_path)
		return o->capture_fd;
	fd = open(o->capture_path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		lp_err("capture %s: %m", o->capture_path);
	return fd < 0 ? -errno : fd;
}

/*
 * Replay of a capture from a kernel without PROCMAP_QUERY (meta fallback
 * no-procmap-query): its buildid records, the live symbolizer's notes, come
 * after the samples that needed their files, so they are read first, in a
 * pass of their own over the file; objects then take them when the stream
 * creates them (symb_state__note_build_id). With all, whatever the meta
 * says: a kernel with PROCMAP_QUERY is not asked about files without a
 * block device, whose notes are then read when one is first missed (below).
 * Returns false when the pass stopped at the meta record (not all).
 * Damage is the main pass's to report.
 */
static bool read_noted_build_ids(int fd, struct symb_state *s, bool all)
{
	struct lpc_reader *rd;
	bool first = true;
	uint64_t n = 0;

	if (lpc_reader__open_fd(fd, &rd, NULL))
		return false;
	for (;;) {
		struct lps_record r;
		const void *rec;
		uint32_t len, type;

		if (lpc_reader__next(rd, &rec, &len) || lps_peek_type(rec, len, &type))
			break;
		if (first) {
			bool wanted = false;
			struct lps_str f;

			first = false;
			if (type != LPS_META || lps_decode(rec, len, &r))
				break;
			for (uint32_t i = 0; i < r.meta.nfallbacks; i++)
				wanted |= !lps_meta_fallback(&r.meta, i, &f) && f.len == 16 &&
					  !memcmp(f.ptr, "no-procmap-query", 16);
			if (!wanted && !all) {
				lpc_reader__free(rd);
				return false;
			}
			continue;
		}
		if (type == LPS_BUILDID && !lps_decode(rec, len, &r) &&
		    !symb_state__note_build_id(s, &r.buildid))
			n++;
	}
	lpc_reader__free(rd);
	if (n)
		lp_debug("capture: %llu build-ids the live symbolizer noted (the kernel gave none)",
			 (unsigned long long)n);
	return true;
}

/* The capture whose notes are read when first needed (one replay a process) */
static struct late_notes {
	int fd;
	struct symb_state *s;
} late_notes;

static void read_late_notes(void *ctx)
{
	struct late_notes *l = ctx;

	lp_debug("capture: a file without a build-id is not at its path: reading the "
		 "symbolizer's notes");
	read_noted_build_ids(l->fd, l->s, true);
}

static int start_replay(const struct symb_opts *o, int fd, struct lpc_reader **rd)
{
	const char *name = o->capture_path ? o->capture_path : "file";
	struct lpc_header h;
	char msg[96];
	int err = lpc_reader__open_fd(fd, rd, &h);

	if (err) {
		lp_err("capture %s: %s", name, lpc_open_strerror(err, &h, msg, sizeof(msg)));
		return err;
	}
	lpc_reader__set_warn(*rd, capture_warn, (void *)name, 10);
	return 0;
}

/* ---- service mode: a window of profiles into the spool at a time -------- */

struct windows {
	struct symb_spool *spool;
	uint64_t window_ns;
	bool off_cpu;
	uint64_t seq;		 /* of the window being aggregated */
	uint64_t start_mono;	 /* its start, CLOCK_MONOTONIC */
	int64_t start_real;	 /* and CLOCK_REALTIME */
	struct lps_loss loss_at; /* the collector's counters at its start */
	int statm_fd;		 /* /proc/self/statm, for the metrics file */
	pid_t collector_pid;	 /* the ring's collector (SO_PEERCRED), 0 if none */
	struct symb_metrics_totals totals;
};

_Static_assert(sizeof(struct lps_loss) % sizeof(uint64_t) == 0, "lps_loss: counters only");

/* The collector's counters since then (a restarted collector's start over). */
static struct lps_loss loss_since(const struct lps_loss *now, const struct lps_loss *then)
{
	uint64_t a[sizeof(*now) / 8], b[sizeof(*now) / 8];
	struct lps_loss d;

	memcpy(a, now, sizeof(a));
	memcpy(b, then, sizeof(b));
	for (size_t i = 0; i < sizeof(a) / 8; i++)
		a[i] = a[i] >= b[i] ? a[i] - b[i] : a[i];
	memcpy(&d, a, sizeof(d));
	d.time_ns = now->time_ns;
	return d;
}

/*
 * Writes the window's profiles to the spool and starts the next window at
 * end (the stream's clock).
 */
static void close_window(struct windows *w, struct symb_state *s, uint64_t end)
{
	static const char *const names[SYMB_KIND__COUNT] = {"cpu", "offcpu"};
	uint64_t now = end;
	const struct lps_loss *loss = &symb_state__counters(s)->loss;
	struct symb_window win = {
		.seq = w->seq,
		.start_real_ns = w->start_real,
		.duration_ns = (int64_t)(now - w->start_mono),
		.loss = loss_since(loss, &w->loss_at),
	};

	for (int k = 0; k < SYMB_KIND__COUNT; k++) {
		struct symb_built *b;

		if (k == SYMB_KIND_OFFCPU && !w->off_cpu)
			continue;
		b = symb_build_window(s, (enum symb_kind)k, &win);
		if (!b) {
			lp_err("window %" PRIu64 ": building the %s profile: %m", w->seq, names[k]);
			continue;
		}
		if (!lpw_write_pprof(symb_built_profile(b), symb_spool__fd(w->spool)))
			symb_spool__put(w->spool, names[k], w->seq, w->start_real);
		symb_built_free(b);
	}
	w->loss_at = *loss;
	{
		const struct symb_counters *c = symb_state__counters(s);
		struct symb_metrics_in mi = {
			.c = c,
			.t = &w->totals,
			.os = symb_state__objects_stats(s),
			.sp = symb_spool__stats(w->spool),
			.window_lag_s = (double)(lp_clock_ns(CLOCK_MONOTONIC) - now) / 1e9,
			.statm_fd = w->statm_fd,
			.collector_pid = w->collector_pid,
			.shard_label = symb_spool__shard_label(w->spool),
		};

		w->totals.samples += c->samples;
		w->totals.offcpu_samples += c->offcpu_samples;
		w->totals.bad_records += c->bad_records;
		w->totals.over_limit += c->over_limit_samples;
		w->totals.restarts += c->restarts;
		if (!symb_metrics_write(symb_spool__fd(w->spool), &mi))
			symb_spool__put_metrics(w->spool);
	}
	symb_state__new_window(s);
	lp_debug("window %" PRIu64 " written; now %u processes, %u objects (%" PRIu64
		 " dropped so far)",
		 win.seq, symb_state__counters(s)->procs, symb_state__objects_stats(s)->objs,
		 symb_state__objects_stats(s)->swept);
	w->seq++;
	/* the next one's real start: its monotonic start seen from here */
	w->start_real += (int64_t)(now - w->start_mono);
	w->start_mono = now;
	symb_state__set_window_end(s, now + w->window_ns);
}

/*
 * symb_state__feed, closing the windows a sample's time says are over. A
 * sample from later than our clock (none from a sane collector) stays in
 * the open window, so that no stream makes windows without end.
 */
static int feed_window(struct symb_state *s, struct windows *w, const void *data, uint32_t len)
{
	int err;

	while ((err = symb_state__feed(s, data, len)) == SYMB_FEED_NEXT_WINDOW) {
		uint64_t end = w->start_mono + w->window_ns;

		if (end > lp_clock_ns(CLOCK_MONOTONIC)) {
			symb_state__set_window_end(s, 0);
			err = symb_state__feed(s, data, len);
			symb_state__set_window_end(s, end);
			break;
		}
		close_window(w, s, end);
	}
	return err;
}

/* A service run's first window starts now. */
static void windows_start(struct windows *w, struct symb_state *s)
{
	struct symb_spool_window first;

	/* with shards, cut on the real clock's window boundaries (spool.h) */
	symb_spool__first_window(w->spool, w->window_ns, lp_clock_ns(CLOCK_MONOTONIC),
				 (int64_t)lp_clock_ns(CLOCK_REALTIME), &first);
	w->seq = first.seq;
	w->start_mono = first.start_mono;
	w->start_real = first.start_real;
	symb_state__set_window_end(s, w->start_mono + w->window_ns);
}

/*
 * Closes the open window if our clock says it is over, late by
 * WINDOW_GRACE_NS for samples the collector still holds (true); else
 * shortens *wait_ms to its end.
 */
static bool window_due(struct windows *w, struct symb_state *s, unsigned *wait_ms)
{
	int64_t left = (int64_t)(w->start_mono + w->window_ns + WINDOW_GRACE_NS -
				 lp_clock_ns(CLOCK_MONOTONIC));

	if (left <= 0) {
		close_window(w, s, w->start_mono + w->window_ns);
		return true;
	}
	if (left / 1000000 + 1 < *wait_ms)
		*wait_ms = (unsigned)(left / 1000000 + 1);
	return false;
}

/*
 * Drains the ring into the state. Returns when the producer closed the ring
 * and everything was read, on a signal, or on a corrupt ring. Each record
 * is decoded from the ring's private copy of it (lp_ring__read), never in
 * the shared mapping, where the collector's bytes could change between
 * the decoder's check of a length and its use. With w (service mode) a
 * window is closed every w->window_ns: by the samples' clock (the
 * collector's CLOCK_MONOTONIC, the same as ours), so that drain latency
 * does not move samples between windows, and by ours when no sample says
 * the window is over (window_due). The last window is left open.
 */
/* The collector's end of the socket the ring came on hung up: it is gone. */
static bool peer_gone(int fd)
{
	struct pollfd p = {fd, POLLRDHUP, 0};

	return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

/*
 * How full the ring (of size bytes) came since the last look, into the
 * window's counters, from the first sample on: before it, the collector's
 * start-up records (kernel symbols, every process's mappings) fill the ring
 * by design, the collector waiting for room for each.
 */
static void note_ring(struct lp_ring *ring, uint64_t size, struct symb_state *s)
{
	uint64_t peak = lp_ring__take_peak(ring);

	symb_state__note_ring(s, symb_state__meta(s)->first_ns ? peak : 0, size);
}

static int consume_ring(struct lp_ring *ring, uint64_t size, struct symb_state *s,
			struct windows *w, int peer_fd)
{
	uint64_t t0 = lp_clock_ns(CLOCK_MONOTONIC), last_progress = 0, n = 0, reads = 0;

	symb_state__measure_lag(s, true);
	for (;;) {
		const void *data;
		uint32_t len;
		unsigned wait_ms = WAIT_MS;
		int err = lp_ring__read(ring, &data, &len);

		/* the ring keeps its peak between looks: every 64th record loses nothing */
		if (err || !(++reads & 63))
			note_ring(ring, size, s);
		if (err == 0) {
			err = w ? feed_window(s, w, data, len) : symb_state__feed(s, data, len);
			if (err == -EPROTO)
				return err;
			/* a busy ring is read without waits: windows look at the clock now and then */
			if (err != -ENOMEM && (!w || (++n & 255)))
				continue;
		}
		if (err == -ENOMEM) {
			lp_err("out of memory; writing what was aggregated so far");
			return err;
		}
		if (err == -EPIPE)
			return 0;
		if (err == -EBADMSG) {
			lp_err("ring: corrupt record or position; writing what was read so far");
			return err;
		}
		/* -EAGAIN: nothing yet (or 0: a busy ring's look at the clock) */
		if (err && stop_signal)
			return 0;
		if (w && symb_spool__writer_gone(w->spool))
			return -EPIPE; /* lowprof run (systemd) starts a new symbolizer */
		if (w && window_due(w, s, &wait_ms))
			continue;
		if (!err)
			continue;
		/* empty, and the collector died without closing it (killed): it has ended */
		if (peer_gone(peer_fd)) {
			lp_warn("ring: the collector is gone without ending its ring (killed?)");
			return 0;
		}
		lp_ring__wait(ring, wait_ms);
		if (lp_log_level() >= LP_LOG_DEBUG &&
		    lp_clock_ns(CLOCK_MONOTONIC) - t0 - last_progress >= PROGRESS_EVERY_NS) {
			last_progress = lp_clock_ns(CLOCK_MONOTONIC) - t0;
			lp_debug("%llu records, %llu samples",
				 (unsigned long long)symb_state__counters(s)->records,
				 (unsigned long long)symb_state__counters(s)->samples);
		}
	}
}

static int consume(struct lp_ring *ring, struct symb_state *s, struct windows *w, int peer_fd)
{
	struct lp_ring_stats st;
	int err;

	lp_ring__stats(ring, &st); /* for its size, which never changes */
	err = consume_ring(ring, st.data_size, s, w, peer_fd);
	note_ring(ring, st.data_size, s);
	return err;
}

/* The end of a service run: its last, partial window, and what the spool took. */
static int finish_windows(struct windows *w, struct symb_state *s)
{
	const struct symb_spool_stats *st;
	uint64_t now = lp_clock_ns(CLOCK_MONOTONIC);

	/*
	 * The open window ends now, or at its end if the clock says it is over
	 * (it waited its grace for samples the collector held; the ring is
	 * drained now): no sample after its end is in it, since one would have
	 * closed it. So the last window is never longer than the others.
	 */
	while (w->start_mono + 2 * w->window_ns < now)
		close_window(w, s, w->start_mono + w->window_ns);
	close_window(w, s, w->start_mono + w->window_ns < now ? w->start_mono + w->window_ns : now);
	st = symb_spool__stats(w->spool);
	lp_info("spool: %" PRIu64 " files of %" PRIu64 " windows written (%" PRIu64
		" bytes), %" PRIu64 " removed for the budget (%" PRIu64
		" of them for a full disk), %" PRIu64 " failed",
		st->windows, w->seq - symb_spool__next_seq(w->spool), st->bytes, st->removed,
		st->removed_full, st->failed);
	{
		const struct symb_objects_stats *os = symb_state__objects_stats(s);
		struct symb_labels_stats ls;

		symb_state__labels_stats(s, &ls);
		lp_info("memory: heap %.1f MiB in use at the last window; %" PRIu64
			" binaries' tables dropped for the memory budget, %" PRIu64
			" binaries no process maps forgotten; %u executables and %u cgroups known",
			(double)os->heap_bytes / (1 << 20), os->evicted, os->swept, ls.exes,
			ls.cgroups);
	}
	return st->failed ? 1 : 0;
}

/*
 * With shards, this symbolizer's messages say which it is, as lowprof's
 * about it do (cli/shards.c): "lowprof-symbolizer (shard 1 of 2): ...".
 */
static void log_as_shard(uint32_t shard, uint32_t nshards)
{
	static char name[64];

	if (nshards < 2)
		return;
	snprintf(name, sizeof(name), "lowprof-symbolizer (shard %u of %u)", shard, nshards);
	lp_log_init(name, lp_log_level());
}

/*
 * The state the stream is fed into, once everything it is given is open:
 * the cache, the file channel. NULL: said why.
 */
static struct symb_state *new_state(const struct symb_opts *o, bool off_cpu, bool replay,
				    bool resumed, struct symb_cache *cache, int files_fd)
{
	struct symb_state_opts so = {
		.sz = sizeof(so),
		.off_cpu = off_cpu,
		.wait_meta = resumed,
		.replay = replay,
		.cache = cache,
		.debug_dirs = o->debug_dirs,
		.files_fd = files_fd,
		.mem_budget = o->mem_budget,
	};
	struct symb_state *s = symb_state__new(&so);

	if (!s)
		lp_err("symbolizer state: %m");
	else
		symb_state__set_shard(s, o->shard, o->nshards, replay);
	if (s && replay)
		log_as_shard(o->shard, o->nshards); /* --shard: a replay's, given at start */
	return s;
}

/*
 * Reads the capture o names into a new state *s. Returns 0 when what was
 * read is to be written (*err: how reading ended), -1 when nothing is (said
 * why).
 */
static int run_replay(const struct symb_opts *o, int cap_fd, struct symb_cache *cache,
		      struct lpc_reader **rd, struct symb_state **s, int *err)
{
	struct lpc_stats st;

	if (start_replay(o, cap_fd, rd))
		return -1;
	*s = new_state(o, true, true, o->resumed, cache, -1);
	if (!*s || (!o->no_sandbox && symb_sandbox_enter()))
		return -1;
	if (!read_noted_build_ids(cap_fd, *s, false)) {
		late_notes = (struct late_notes){cap_fd, *s};
		symb_state__set_notes_loader(*s, read_late_notes, &late_notes);
	}
	lpc_reader__stats(*rd, &st);
	*err = consume_capture(*rd, *s, st.file_bytes, o->progress);
	return 0;
}

/* reattach (below) replaces the ring of a struct ring_att */
struct ring_att;
static int reattach(const struct symb_opts *o, struct symb_connector *conn, struct ring_att *att,
		    struct symb_state *s, struct windows *w);

/* The collector's ring, as attach_ring maps it; freed by symb_run. */
struct ring_att {
	void *mem;
	size_t size;
	struct lp_ring *ring;
	int files_fd;		 /* the file channel; -1: none */
	struct symb_shard shard; /* which of the collector's rings (attach.h) */
};

/*
 * Attaches to the collector's ring and consumes it into a new state *s.
 * Returns as run_replay does.
 */
static int run_live(const struct symb_opts *o, bool off_cpu, struct symb_cache *cache,
		    struct ring_att *att, struct symb_state **s, struct windows *w, int *err)
{
	struct symb_connector *conn = NULL;
	bool resumed;
	int r;

	if (attach_ring(o, &att->mem, &att->size, &att->ring, &att->files_fd, NULL, &resumed,
			&w->collector_pid, &att->shard))
		return -1;
	if (att->shard.nshards > 1) {
		log_as_shard(att->shard.shard, att->shard.nshards);
		lp_info("ring: shard %u of %u", att->shard.shard, att->shard.nshards);
	}
	if (resumed)
		lp_info("ring: resuming a run in progress; records before the "
			"collector's metadata are skipped");
	*s = new_state(o, off_cpu, false, o->resumed || resumed, cache, att->files_fd);
	/* the ring's shard: --shard's, or the one --ring PATH's collector handed over */
	if (*s)
		symb_state__set_shard(*s, att->shard.shard, att->shard.nshards, false);
	/* the spool's writer makes files: it is started outside the sandbox */
	if (!*s || (o->spool_dir &&
		    symb_spool__open(o->spool_dir, o->spool_bytes, !o->no_sandbox, att->shard.shard,
				     att->shard.nshards, o->spool_lock_fd, &w->spool)))
		return -1;
	/* the metrics file's resident memory: statm read through a descriptor of its own */
	if (o->spool_dir)
		w->statm_fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	/*
	 * A service run on --ring PATH outlives its collector: when a
	 * collector ends, the next one's ring comes through the connector,
	 * which alone may make a socket (the sandbox lets us make none).
	 */
	if (o->spool_dir && o->ring_path &&
	    symb_connector__start(o->ring_path, o->collector_uid, !o->no_sandbox, &conn))
		return -1;
	/* everything opened that needs more than the sandbox allows */
	if (!o->no_sandbox && symb_sandbox_enter()) {
		symb_connector__stop(conn);
		return -1;
	}
	if (w->spool)
		windows_start(w, *s);
	for (;;) {
		*err = consume(att->ring, *s, w->spool ? w : NULL, att->files_fd);
		if (*err || stop_signal || !conn)
			break;
		r = reattach(o, conn, att, *s, w);
		if (r) {
			if (r == -ECHRNG)
				*err = r; /* a failure: lowprof run starts this one again */
			break;
		}
	}
	/*
	 * The end is read: nothing more to ask for. The collector serves
	 * the file channel until it closes, and lowprof record keeps its
	 * other end for a restarted symbolizer: shut it, not just close it.
	 * Not after a failure, which lowprof record may restart on it.
	 */
	if (!conn && !*err && att->files_fd >= 0) {
		symb_state__set_files_fd(*s, -1);
		shutdown(att->files_fd, SHUT_RDWR);
	}
	symb_connector__stop(conn);
	return 0;
}

/*
 * The collector ended its ring (stopped or restarted): the windows go on by
 * our clock while the connector waits for the next collector's ring, which
 * is then read into the same state (its metadata replaces the old; the
 * window it starts in says so). 0 once attached; -1 on a signal, or when
 * the connector or the new ring fails (said why).
 */
static int reattach(const struct symb_opts *o, struct symb_connector *conn, struct ring_att *att,
		    struct symb_state *s, struct windows *w)
{
	struct symb_shard was = att->shard;
	int fds[3], err;
	bool resumed;

	lp_info("ring: the collector's ring ended; waiting for the next collector on %s (the "
		"windows go on)",
		o->ring_path);
	lp_ring__free(att->ring);
	att->ring = NULL;
	munmap(att->mem, att->size);
	att->mem = NULL;
	if (att->files_fd >= 0 && att->files_fd != o->files_fd)
		close(att->files_fd);
	att->files_fd = -1;
	symb_state__set_files_fd(s, -1);
	while (!stop_signal) {
		unsigned wait_ms = WAIT_MS;

		while (w->spool && window_due(w, s, &wait_ms))
			wait_ms = WAIT_MS;
		if (w->spool && symb_spool__writer_gone(w->spool))
			return -ECHRNG; /* a failure: lowprof run starts this one again */
		err = symb_connector__get(conn, wait_ms, fds, &resumed, &w->collector_pid,
					  &att->shard);
		if (err == -ETIMEDOUT)
			continue;
		if (err) {
			lp_err("ring: waiting for the next collector: %s", strerror(-err));
			return -1;
		}
		err = map_ring(fds, &att->mem, &att->size, &att->ring);
		close(fds[0]);
		close(fds[1]);
		if (err) {
			close(fds[2]);
			return -1;
		}
		att->files_fd = fds[2];
		if (att->shard.shard != was.shard || att->shard.nshards != was.nshards) {
			/* its windows are named by its shard: a new process takes the new one */
			lp_err("ring: the new collector handed over shard %u of %u, not %u of %u; "
			       "ending, so that this shard's symbolizer starts again",
			       att->shard.shard, att->shard.nshards, was.shard, was.nshards);
			return -ECHRNG;
		}
		symb_state__set_files_fd(s, fds[2]);
		if (resumed)
			symb_state__wait_meta(s);
		lp_info("ring: a collector started; reading its ring");
		return 0;
	}
	return -1;
}

/* As the final user, so that the database and its WAL files are ours. NULL: none. */
static struct symb_cache *open_cache(const struct symb_opts *o)
{
	struct symb_cache *cache = NULL;

	if (!o->cache_path)
		return NULL;
	if (symb_cache__open(o->cache_path, o->cache_size, &cache)) /* cache.c said why */
		lp_warn("cache: running without the symbol cache (give --cache PATH in "
			"a directory this user can write, or --no-cache)");
	/* its files are open: from here on it makes none (the sandbox) */
	if (!o->no_sandbox)
		symb_cache__seal(cache);
	return cache;
}

static void report_files(const struct symb_state *s)
{
	const struct symb_objects_stats *st = symb_state__objects_stats(s);

	if (st->files.asked)
		lp_info("files: asked the collector for %llu files: %llu received, %llu not "
			"found or refused, %llu unanswered",
			(unsigned long long)st->files.asked, (unsigned long long)st->files.received,
			(unsigned long long)st->files.refused,
			(unsigned long long)st->files.timeouts);
}

int symb_run(const struct symb_opts *o)
{
	struct sigaction sa = {.sa_handler = on_signal};
	struct lpc_reader *rd = NULL;
	bool replay, off_cpu;
	int cap_fd = -1;
	struct ring_att att = {.files_fd = -1};
	struct symb_cache *cache = NULL;
	int fds[NOUT] = {-1, -1, -1, -1, -1, -1};
	struct symb_state *s = NULL;
	struct windows w = {.statm_fd = -1};
	int err = 0, rc = 1;

	if (!o || LP_OPTS_CHECK(o, symb_opts, spool_lock_fd))
		return 1;
	replay = o->capture_path || o->capture_fd >= 0;
	off_cpu = o->off_cpu || replay;
	w.window_ns = o->window_ns;
	w.off_cpu = off_cpu;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (o->check_sandbox)
		return check_sandbox(o);

	if (replay) {
		replay_malloc_tuning();
		cap_fd = open_capture(o);
		if (cap_fd < 0)
			return 1;
	}
	if (!o->spool_dir && open_outputs(o, off_cpu, fds)) {
		if (cap_fd >= 0 && cap_fd != o->capture_fd)
			close(cap_fd);
		return 1;
	}
	err = lp_become_user(o->user, "--user");
	if (err)
		goto out;
	/* after the uid change: it clears the parent-death signal */
	if (o->exit_with_parent && lp_exit_with_parent(o->parent))
		goto out;
	cache = open_cache(o);
	if (replay ? run_replay(o, cap_fd, cache, &rd, &s, &err)
		   : run_live(o, off_cpu, cache, &att, &s, &w, &err))
		goto out;
	if (err == -EPROTO)
		goto out;
	if (w.spool) {
		rc = finish_windows(&w, s) || err ? 1 : 0;
		report_files(s);
		goto out;
	}
	if (!symb_state__meta(s)->have_meta)
		lp_warn("the stream had no metadata record; times and rates are unknown");
	if (replay && !symb_state__meta(s)->offcpu.on && !symb_state__counters(s)->offcpu_samples) {
		close_unused_offcpu(fds);
		off_cpu = false;
	}
	/* a corrupt ring or no memory: what was read is written, but the run failed */
	rc = write_outputs(s, o, off_cpu, fds, rd) || err ? 1 : 0;
	report_files(s);
	for (int i = 0; i < NOUT; i++)
		fds[i] = -1;
out:
	for (int i = 0; i < NOUT; i++)
		if (fds[i] >= 0 && o->out_dir)
			close(fds[i]);
	lp_ring__free(att.ring);
	lpc_reader__free(rd);
	if (cap_fd >= 0 && cap_fd != o->capture_fd)
		close(cap_fd);
	if (att.mem)
		munmap(att.mem, att.size);
	if (att.files_fd >= 0 && att.files_fd != o->files_fd)
		close(att.files_fd);
	symb_spool__close(w.spool);
	if (w.statm_fd >= 0)
		close(w.statm_fd);
	symb_state__free(s);
	symb_cache__close(cache);
	return rc;
}
