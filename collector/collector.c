// SPDX-License-Identifier: MIT
/*
 * The collector's run: set up the shm ring, load and attach the BPF programs,
 * describe the host (meta, kernel symbols, mappings), then drain the BPF ring
 * buffer into the shm ring every drain interval until told to stop.
 *
 * Records that must not be lost (meta, maps, kernel symbols, loss, end) wait
 * for space in the shm ring for a bounded time; samples never wait: when the
 * ring is full they are dropped and counted (drop-newest).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/perf_event.h>

#include <sys/capability.h>

#include "btf.h"
#include "capdir.h"
#include "capture.h"
#include "cgroups.h"
#include "kfeatures.h"
#include "ksnap.h"
#include "collector.h"
#include "collector_int.h"
#include "lowprof/clock.h"
#include "lowprof/cpus.h"
#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "lowprof/opts.h"
#include "lowprof/ring.h"
#include "lowprof/schema.h"
#include "lowprof/user.h"
#include "procfs.h"
#include "profile.h"
#include "sha256.h"
#include "profile.skel.h"
#include "sideband.h"
#include "offcpu.h"
#include "offcpu.skel.h"

#define KSYMS_PER_RECORD 4096
#define KALLSYMS_MAX	 (256u << 20)
#define KSYMS_READ_BUF	 (64u << 10)
#define KSYM_NAME_MAX	 512	     /* kernel KSYM_NAME_LEN is 512 since 6.1 */
#define MODULES_MAX	 (16u << 20) /* /proc/modules: ~100 bytes a module */
#define MAPS_REFRESH_NS	 1000000000ull
#define LOSS_EVERY_NS	 1000000000ull
#define WAIT_START_MS	 5000 /* start-up records: the symbolizer is starting */
#define WAIT_RUN_MS	 100  /* during the run: never stall the drain for long */
/* --shards: how long after the first symbolizer the others may come and start fresh */
#define HANDOFF_GRACE_MS 1000

#ifndef LOWPROF_VERSION
#define LOWPROF_VERSION "0"
#endif

/* One shard's ring (lowprof/shard.h) and what the collector keeps for it. */
struct coll_shard {
	void *mem;
	size_t mem_size;
	struct lp_ring *ring;
	int ring_fd;  /* the ring's memfd (header and data) */
	int cons_fd;  /* the consumer page's memfd */
	int files_fd; /* its symbolizer's file channel (files.c), or -1 */
	bool stalled; /* a wait for room timed out: no more waits until it catches up */
	/* the early wrap, set from its write rate (tune_early_wrap) */
	uint64_t wrap_pos, wrap_ns; /* lp_ring__written and the time at the last check */
	double wrap_rate;	    /* bytes/s: the highest recent rate, decaying */
	uint64_t records, bytes;    /* written (record payloads) */
};

struct coll {
	const struct coll_opts *o;
	struct profile_bpf *skel;
	struct offcpu_bpf *off;	   /* --off-cpu only */
	struct coll_btf btf;	   /* the kernel BTF libbpf relocates against */
	struct coll_features feat; /* what the kernel has (kfeatures.h) */
	struct ring_buffer *rb;
	int wake_fd; /* epoll, edge-triggered on the BPF ring: the programs' wakeups */
	int *pfds;
	struct bpf_link **links;
	size_t nlinks;
	uint32_t *cpus;
	int ncpus;
	uint64_t bpf_ring_bytes;
	uint64_t bpf_mem_bytes; /* maps' and programs' memlock after load */
	uint64_t off_cpu_left;	/* pending off-CPU samples left at the end: lost */

	struct coll_shard sh[LP_MAX_SHARDS]; /* the rings, one per shard */
	uint32_t nsh;			     /* rings: 0 without one */
	/*
	 * While state is sent again for new symbolizers (resend_state): the
	 * rings (bits) that get the records meant for all; 0: every ring and
	 * the capture, as usual.
	 */
	uint32_t only;
	bool meta_sent;	 /* a ring handed over from now on is in use */
	int listen_fd;	 /* --ring PATH: socket for symbolizers to connect to */
	int kallsyms_fd; /* opened with CAP_SYSLOG: read again for a new symbolizer */
	uint64_t ktext;	 /* the kernel's _text (open_kallsyms); 0: unknown */
	/* /proc/modules, opened with CAP_SYSLOG (its addresses shown); -ENOENT: no modules */
	int modules_fd;
	/*
	 * --capture-dir: the last snapshot as capture blocks, for the next
	 * windows' files while the kernel's symbols stay as they were
	 * (ksyms_unchanged); ksnap_at is what they were like when it was read.
	 * ksnap_build: the one being read, where its records go instead of
	 * the capture (write_reliable).
	 */
	struct coll_ksnap *ksnap, *ksnap_build;
	struct ksyms_state {
		char modules[65]; /* SHA-256 of /proc/modules less the use counts, hex */
		uint64_t ksymbol_events, sb_lost;
	} ksnap_at;
	uint64_t ksnap_at_ns;		   /* CLOCK_MONOTONIC when it was read */
	uint64_t ksnap_reused, ksnap_read; /* snapshots copied into a window's file, read */
	/* a kernel stack relative to ktext, as it goes out (sample_stacks) */
	uint64_t kframes[LP_BPF_MAX_FRAMES];
	uint64_t kstacks_hidden; /* kernel stacks left out: ktext unknown */
	/* what the kernel lacked and what was done instead (meta fallbacks) */
	struct lps_str fallbacks[LPS_MAX_FALLBACKS];
	uint32_t nfallbacks;

	struct coll_broker *broker; /* answers requests on files_fd (files.c) */
	/* files whose build-id note went to the capture (note_buildid) */
	struct noted_file {
		uint64_t inode;
		uint32_t major, minor;
	} * noted;
	uint32_t noted_cap, noted_n;
	uint64_t notes_dropped;

	bool sock_created; /* we created the socket at ring_path: unlink it */

	struct coll_capture *cap; /* --capture: every record also goes to the file */
	int capture_fd;		  /* --capture PATH: opened here */
	/*
	 * --capture-dir: a capture file per window (rotate_capture), windows
	 * of rot_ns from the first meta's start; rot_next ends the one being
	 * written (CLOCK_MONOTONIC), rot_real is its start (CLOCK_REALTIME)
	 */
	struct coll_capdir *capdir;
	uint64_t rot_ns, rot_next;
	int64_t rot_real;
	char cap_name[COLL_CAPDIR_NAME_MAX]; /* the window's file being written */
	/* the last window's file while its data sync runs (start_closing) */
	struct coll_capture *closing;
	int closing_fd;
	char closing_name[COLL_CAPDIR_NAME_MAX];
	/* the start the next meta carries (0: now); records to the capture alone */
	uint64_t meta_mono;
	int64_t meta_real;
	bool cap_only;
	struct lps_loss loss_base; /* the loss counters at the window's start */

	struct coll_procs procs;
	/*
	 * the kernel's mmap, exec and fork events (sideband.h); NULL where
	 * the kernel refused them (meta fallback no-mmap-events)
	 */
	struct coll_sideband *sb;
	uint64_t sb_upto; /* CLOCK_MONOTONIC before the last read of its buffers */
	uint64_t sb_events;
	/*
	 * CLOCK_MONOTONIC after the last read of its buffers that found
	 * events lost, or maybe lost (a buffer all but full): mappings read
	 * before it may lack some (sample_stacks)
	 */
	uint64_t sb_loss_ns;
	struct coll_cgroups *cgroups;	/* id -> path, for the cgroup records */
	int cgroup_fds[LP_MAX_CGROUPS]; /* --cgroup directories, in the filter map */
	struct lps_enc dyn;		/* maps, ksyms: grows as needed */
	bool capture_failed;
	/*
	 * start-up is over: the start-up burst (the kernel symbol snapshot,
	 * sent with the programs already attached) is sent, writes no longer
	 * wait for the consumer to let the ring wrap early (write_ring), and
	 * the early wraps follow the write rate
	 */
	bool started;
	/*
	 * the end is written: the file channels are served until the
	 * symbolizers close them (serve_the_end), nothing else
	 */
	bool ending;
	uint64_t maps_errors;
	uint64_t maps_gone; /* reads of processes gone whose side-band events came */
	uint64_t maps_sent;
	uint64_t maps_after_loss; /* reads asked for by side-band losses (sample_stacks) */
	uint64_t bad_events;
	/*
	 * Sample records drained from the BPF ring, well-formed or not: the
	 * samples the programs emitted (they do not count them themselves,
	 * see struct lp_bpf_stats), all of them once the ring is drained.
	 */
	uint64_t bpf_samples;
};

static volatile sig_atomic_t stop_signal;
/* the stop signals so far: one more after the end stops serving (serve_the_end) */
static volatile sig_atomic_t stop_signals;
/* libbpf_print has no context argument: the current load's (struct coll) */
static bool quiet_libbpf;
/*
 * SIGUSR1: new symbolizers read these rings (bits; lowprof record sends
 * sival_int k + 1 for ring k, 0 or a plain kill for all of them).
 */
static uint32_t resend_rings;

static void on_signal(int sig, siginfo_t *si, void *uctx)
{
	(void)uctx;
	if (sig == SIGUSR1) {
		int k = si && si->si_code == SI_QUEUE ? si->si_value.sival_int : 0;

		/* lock-free on a u32: async-signal-safe; one out of range means all */
		__atomic_fetch_or(&resend_rings, k >= 1 && k <= LP_MAX_SHARDS ? 1u << (k - 1) : ~0u,
				  __ATOMIC_RELAXED);
	} else {
		stop_signal = sig;
		stop_signals++;
	}
}

/* The CPUs rings and tables are sized for: the online ones, or --size-cpus. */
static uint32_t sizing_cpus(const struct coll *c)
{
	return c->o->size_cpus ? c->o->size_cpus : (uint32_t)c->ncpus;
}

/* Data size of each ring (they are all of one size); 0 without rings. */
static uint64_t ring_data_size(const struct coll *c)
{
	return c->nsh ? c->sh[0].mem_size - LP_RING_DATA_OFF : 0;
}

static void sleep_ms(uint32_t ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL); /* EINTR is fine: the loop checks stop_signal */
}

/* Sum of the off-CPU counters of every CPU id. */
static void offcpu_counts(struct coll *c, struct lp_offcpu_counts *tot)
{
	memset(tot, 0, sizeof(*tot));
	if (!c->off)
		return;
	for (int i = 0; i < c->ncpus; i++) {
		struct lp_offcpu_counts v;
		uint32_t key = c->cpus[i];

		if (bpf_map__lookup_elem(c->off->maps.counts, &key, sizeof(key), &v, sizeof(v), 0))
			continue;
		for (size_t j = 0; j < sizeof(v) / sizeof(uint64_t); j++)
			((uint64_t *)tot)[j] += ((uint64_t *)&v)[j];
	}
}

/*
 * Writes a record that should not be dropped: waits up to wait_ms for room.
 * Once a wait has timed out, later calls do not wait until the consumer has
 * caught up, so a stopped symbolizer cannot slow the drain loop down.
 */
static int write_ring(struct coll *c, struct coll_shard *sh, const void *buf, size_t len,
		      uint32_t wait_ms)
{
	uint32_t waited = 0;
	int err;

	if (len > lp_ring__max_record(sh->ring))
		return -E2BIG;
	/* --ring PATH: a ring no symbolizer reads gets what fits, with no wait */
	if (c->listen_fd >= 0 && sh->files_fd < 0)
		wait_ms = 0;
	/*
	 * Until start-up is over the drain loop has not begun (the first
	 * samples wait in the BPF ring): the start-up burst (kernel symbols,
	 * ~5 MB) then also waits for the consumer to let the ring wrap early,
	 * so it does not fault in the whole shared ring for good.
	 */
	while (lp_ring__writable(sh->ring) < len ||
	       (!c->started && lp_ring__deepens(sh->ring, (uint32_t)len))) {
		/* stopped during start-up: nothing to wait for (lowprof run's
		 * symbolizer that failed at start-up left its ring unread) */
		if (sh->stalled || waited >= wait_ms || (stop_signal && !c->started)) {
			if (wait_ms)
				sh->stalled = true;
			break;
		}
		if (!waited)
			lp_ring__notify(sh->ring); /* it may be asleep */
		sleep_ms(1);
		waited++;
	}
	/*
	 * Caught up: room again, and (start-up burst) room where an early wrap
	 * keeps the ring shallow. Room alone is no sign of a reader during the
	 * burst: an unread ring has all its room, and each record would wait
	 * wait_ms again (5 s for each of kallsyms' ~40 chunks).
	 */
	if (lp_ring__writable(sh->ring) >= lp_ring__max_record(sh->ring) / 2 &&
	    (c->started || !lp_ring__deepens(sh->ring, (uint32_t)len)))
		sh->stalled = false;
	err = lp_ring__write(sh->ring, buf, (uint32_t)len);
	if (!err) {
		sh->records++;
		sh->bytes += len;
	}
	return err;
}

/*
 * The ring of a record that goes to one shard (lp_shard_by_pid: the
 * process's JIT records; samples take put_sample's way), or -1 when it goes
 * to all. Our own encoding, decoded only for the few of those kinds.
 */
static int record_shard(const struct coll *c, const void *buf, size_t len)
{
	struct lps_record rec;
	uint32_t type;

	if (c->nsh <= 1 || lps_peek_type(buf, len, &type) || !lp_shard_by_pid(type) ||
	    lps_decode(buf, len, &rec))
		return -1;
	/* the one pid field of each by-pid kind; perfmap and jitdump share theirs */
	return (int)lp_shard_of(type == LPS_SAMPLE ? rec.sample.pid : rec.perfmap.pid, c->nsh);
}

/*
 * Writes one record to the capture file (never waits: its writer drops and
 * counts when the disk falls behind) and to the ring, if there is one.
 */
static int write_reliable(struct coll *c, const void *buf, size_t len, uint32_t wait_ms)
{
	int k = record_shard(c, buf, len), err = 0;

	/*
	 * What is sent again for new symbolizers (c->only) never goes to the
	 * capture twice. While a snapshot is read for --capture-dir its
	 * records (nothing else is written then) go to its blocks (ksyms_build).
	 */
	if (c->ksnap_build && !c->only)
		coll_ksnap__add(c->ksnap_build, buf, (uint32_t)len);
	else if (c->cap && (k >= 0 || !c->only))
		err = coll_capture__write(c->cap, buf, (uint32_t)len);
	if (c->cap_only)
		return err; /* a new capture file's start: the rings have it */
	if (k >= 0)
		return write_ring(c, &c->sh[k], buf, len, wait_ms);
	for (uint32_t i = 0; i < c->nsh; i++)
		if (!c->only || (c->only & (1u << i)))
			err = write_ring(c, &c->sh[i], buf, len, wait_ms);
	return err;
}

static int write_enc(struct coll *c, struct lps_enc *e, uint32_t wait_ms)
{
	long len = lps_enc_len(e);

	if (len < 0)
		return (int)len;
	return write_reliable(c, e->buf, (size_t)len, wait_ms);
}

/*
 * The loss counters of the run so far: every ring's shm counters summed
 * into the whole run's (the capture's record; with --capture-dir, less
 * what earlier windows' files counted: send_loss).
 */
static void loss_counts(struct coll *c, struct lps_loss *out)
{
	struct lps_loss l;
	const struct lp_bpf_stats *bs = &c->skel->bss->stats;
	struct lp_offcpu_counts oc;
	struct coll_capture_stats cs = {0};

	offcpu_counts(c, &oc);
	if (c->cap)
		coll_capture__stats(c->cap, &cs);
	l = (struct lps_loss){
		.time_ns = lp_clock_ns(CLOCK_MONOTONIC),
		.bpf_samples = c->bpf_samples,
		.bpf_ringbuf_full = __atomic_load_n(&bs->ringbuf_full, __ATOMIC_RELAXED),
		.bpf_task_lost = __atomic_load_n(&bs->task_lost, __ATOMIC_RELAXED),
		.bpf_stack_errors = __atomic_load_n(&bs->kstack_errors, __ATOMIC_RELAXED) +
				    __atomic_load_n(&bs->ustack_errors, __ATOMIC_RELAXED) +
				    oc.kstack_errors + oc.ustack_errors,
		.maps_errors = c->maps_errors,
		.off_cpu_switches = oc.switches,
		.off_cpu_sampled = oc.sampled,
		.off_cpu_short = oc.short_blocks,
		.off_cpu_lost = oc.lost + c->off_cpu_left,
		.capture_dropped = cs.dropped_records,
		.capture_dropped_bytes = cs.dropped_bytes,
		.kstacks_hidden = c->kstacks_hidden,
		.ustack_fp_fallback =
			__atomic_load_n(&bs->ustack_fp, __ATOMIC_RELAXED) + oc.ustack_fp,
		.mmap_events_lost = coll_sideband__lost(c->sb),
	};
	for (uint32_t i = 0; i < c->nsh; i++) {
		struct lp_ring_stats rs;

		lp_ring__stats(c->sh[i].ring, &rs);
		l.shm_dropped += rs.dropped_records;
		l.shm_dropped_bytes += rs.dropped_bytes;
		l.bad_consumer_pos += rs.bad_consumer_pos;
	}
	*out = l;
}

_Static_assert(sizeof(struct lps_loss) % sizeof(uint64_t) == 0, "lps_loss: counters only");

/*
 * The loss records: the whole run's into the capture (with --capture-dir,
 * a window's file gets those of its window, since its start: c->loss_base,
 * so that each file's replay, and a merge of them, counts each loss once),
 * and each ring's own into it (coll_loss_split).
 */
static void send_loss(struct coll *c)
{
	uint64_t v[sizeof(struct lps_loss) / 8], base[sizeof(struct lps_loss) / 8];
	struct lps_loss run, l;
	long len;

	loss_counts(c, &run);
	if (c->cap) {
		l = run;
		if (c->capdir) {
			memcpy(v, &l, sizeof(v));
			memcpy(base, &c->loss_base, sizeof(base));
			for (size_t i = 1; i < sizeof(v) / 8; i++) /* [0] is the time */
				v[i] = v[i] >= base[i] ? v[i] - base[i] : v[i];
			memcpy(&l, v, sizeof(l));
		}
		lps_enc_reset(&c->dyn);
		lps_enc_loss(&c->dyn, &l);
		len = lps_enc_len(&c->dyn);
		if (len > 0)
			coll_capture__write(c->cap, c->dyn.buf, (uint32_t)len);
	}
	for (uint32_t i = 0; i < c->nsh; i++) {
		struct lp_ring_stats rs;

		lp_ring__stats(c->sh[i].ring, &rs);
		coll_loss_split(&run, &rs, i, &l);
		lps_enc_reset(&c->dyn);
		lps_enc_loss(&c->dyn, &l);
		len = lps_enc_len(&c->dyn);
		if (len > 0)
			write_ring(c, &c->sh[i], c->dyn.buf, (size_t)len, WAIT_RUN_MS);
	}
}

struct maps_emit {
	struct coll *c;
	uint32_t wait_ms;
};

static int emit_maps(void *ctx, struct lps_enc *enc)
{
	struct maps_emit *me = ctx;

	return write_enc(me->c, enc, me->wait_ms);
}

/*
 * (Re)reads pid's maps (through thread tid, 0: the leader) and sends them;
 * counts failures (short-lived processes).
 */
static void send_maps(struct coll *c, uint32_t pid, uint32_t tid, uint32_t wait_ms)
{
	struct coll_proc *p = coll_procs_add(&c->procs, pid);
	struct maps_emit me = {c, wait_ms};
	int err;

	if (!p) {
		c->maps_errors++;
		return;
	}
	err = coll_read_maps(p, tid, lp_clock_ns(CLOCK_MONOTONIC), &c->dyn, emit_maps, &me);
	if (err && p->born && (err == -ENOENT || err == -ESRCH)) {
		/* gone, but its mmap events gave the symbolizer its mappings */
		c->maps_gone++;
		return;
	}
	if (err) {
		/* unreadable (gone), or a part dropped: ranges stay as they were,
		 * so the next sample outside them asks again after a second */
		c->maps_errors++;
		lp_debug("maps: pid %u: %s", pid, strerror(-err));
		return;
	}
	p->maps_read = true;
	c->maps_sent++;
	coll_perfmap_refresh(p, lp_clock_ns(CLOCK_MONOTONIC), &c->dyn, emit_maps, &me);
}

/* What the known JIT perf maps grew by (perfmap.c). */
static void send_perfmaps(struct coll *c)
{
	struct maps_emit me = {c, WAIT_RUN_MS};

	coll_perfmaps_poll(&c->procs, lp_clock_ns(CLOCK_MONOTONIC), &c->dyn, emit_maps, &me);
}

/*
 * The part of an on-CPU or off-CPU BPF record after its fixed fields: the
 * two records differ only in what comes before the frames.
 */
struct ev_stacks {
	uint16_t nkstack, nustack;
	uint32_t stack_len;
	const __u64 *stack;
};

/*
 * Fills s's stacks from st (checked against the record's size) and makes
 * sure the symbolizer has the mappings of s's process. Returns the frames
 * and copy bytes in the record, or -EBADMSG.
 */
static int sample_stacks(struct coll *c, struct lps_sample *s, const struct ev_stacks *st,
			 size_t fixed, size_t size)
{
	uint32_t nframes = (uint32_t)st->nkstack + st->nustack;
	struct coll_proc *p;

	if (st->nkstack > LP_BPF_MAX_FRAMES || st->nustack > LP_BPF_MAX_FRAMES ||
	    st->stack_len > LP_BPF_MAX_STACK_COPY ||
	    fixed + (size_t)nframes * 8 + st->stack_len > size) {
		c->bad_events++;
		return -EBADMSG;
	}
	/*
	 * User context: make sure the symbolizer has this process's mappings.
	 * They are read again (at most once a second) when the sample's
	 * instruction is in none of them (a dlopen, a JIT), and when side-band
	 * events were lost since they were read: a mapping whose event was
	 * lost may hold the sample's callers, not its instruction (a library
	 * loaded then, calling back into code known before), and the
	 * unwinder stops at a return address in no known mapping.
	 */
	if (s->ip || st->nustack) {
		p = coll_procs_find(&c->procs, s->pid);
		if (!p || (!p->maps_read && !p->maps_ns)) {
			send_maps(c, s->pid, s->tid, WAIT_RUN_MS);
		} else if (s->time_ns > p->maps_ns + MAPS_REFRESH_NS) {
			bool after_loss = p->maps_ns < c->sb_loss_ns;

			if (after_loss || (s->ip && !coll_proc_covers(p, s->ip))) {
				c->maps_after_loss += after_loss;
				send_maps(c, s->pid, s->tid, WAIT_RUN_MS);
			}
		}
	}
	/*
	 * Kernel addresses leave relative to _text, or not at all: the KASLR
	 * base stays here. x86-64 is little-endian: the u64 arrays are the
	 * wire format.
	 */
	s->nkstack = c->ktext ? st->nkstack : 0;
	if (st->nkstack && !c->ktext)
		c->kstacks_hidden++;
	for (uint32_t i = 0; i < s->nkstack; i++)
		c->kframes[i] = st->stack[i] - c->ktext;
	s->kstack = (const uint8_t *)c->kframes;
	s->ustack = (const uint8_t *)&st->stack[st->nkstack];
	s->nustack = st->nustack;
	s->stack_copy = (const uint8_t *)&st->stack[nframes];
	s->stack_copy_len = st->stack_len;
	return 0;
}

static void rotate_due(struct coll *c, uint64_t time_ns);

/*
 * Encodes s straight into the shm ring, or with a capture into the capture
 * block (private memory), then copied into the ring: no allocation, and
 * never a copy of bytes the consumer could have changed.
 */
static void put_sample(struct coll *c, const struct lps_sample *s)
{
	uint32_t max = SAMPLE_ENC_SLACK + (s->nkstack + s->nustack) * 8 + s->stack_copy_len;
	/* its shard's ring (lowprof/shard.h) */
	struct coll_shard *sh = c->nsh ? &c->sh[lp_shard_of(s->pid, c->nsh)] : NULL;
	void *in_cap, *slot;
	struct lps_enc enc;
	long len;

	/* by the samples' clock, as the symbolizer's windows: none is in two files */
	if (c->capdir && s->time_ns >= c->rot_next)
		rotate_due(c, s->time_ns);
	/* NULL: dropped and counted by the capture; the ring may still have room */
	in_cap = c->cap ? coll_capture__reserve(c->cap, max) : NULL;
	slot = in_cap ? in_cap : sh ? lp_ring__reserve(sh->ring, max) : NULL;
	if (!slot)
		return; /* dropped and counted by the ring */
	lps_enc_init_fixed(&enc, slot, max);
	lps_enc_sample(&enc, s);
	len = lps_enc_len(&enc);
	if (len < 0) {
		/* cannot happen: SAMPLE_ENC_SLACK bounds the overhead */
		c->bad_events++;
		len = 0;
	}
	if (!in_cap) {
		lp_ring__commit(sh->ring, (uint32_t)len);
		sh->records++;
		sh->bytes += (uint64_t)len;
		return;
	}
	/* before the commit, which may hand the block to the disk */
	if (sh && len && !lp_ring__write(sh->ring, slot, (uint32_t)len)) {
		sh->records++;
		sh->bytes += (uint64_t)len;
	}
	coll_capture__commit(c->cap, (uint32_t)len);
}

/*
 * Before a sample of cgroup id: its path, where the reader has not had it
 * (or not for a minute).
 */
static void send_cgroup(struct coll *c, uint64_t id, uint64_t time_ns)
{
	struct lps_cgroup g = {.time_ns = time_ns, .id = id};
	const char *path;

	if (!c->cgroups || !(path = coll_cgroups__due(c->cgroups, id, time_ns, &g.path.len)))
		return;
	g.path.ptr = path;
	lps_enc_reset(&c->dyn);
	lps_enc_cgroup(&c->dyn, &g);
	write_enc(c, &c->dyn, WAIT_RUN_MS);
}

/*
 * What both kinds of sample share: s (its kind, weight and registers set)
 * gets the header's fields and the stacks, then goes out.
 */
static void send_sample(struct coll *c, struct lps_sample *s, const struct lp_ev_hdr *h,
			const struct ev_stacks *st, size_t fixed, size_t size)
{
	s->time_ns = h->time_ns;
	s->pid = h->pid;
	s->tid = h->tid;
	s->cpu = h->cpu;
	s->comm = (struct lps_str){h->comm, (uint32_t)strnlen(h->comm, LP_BPF_COMM_LEN)};
	s->cgroup_id = h->cgroup_id;
	send_cgroup(c, s->cgroup_id, s->time_ns);
	if (sample_stacks(c, s, st, fixed, size) == 0)
		put_sample(c, s);
}

static void handle_sample(struct coll *c, const struct lp_ev_sample *e, size_t size)
{
	struct ev_stacks st = {e->nkstack, e->nustack, e->stack_len, e->stack};
	struct lps_sample s = {
		.kind = LPS_KIND_CPU,
		.weight = e->period_ns,
		.ip = e->ip,
		.sp = e->sp,
		.bp = e->bp,
	};

	send_sample(c, &s, &e->hdr, &st, LP_EV_SAMPLE_FIXED_SIZE, size);
}

/* time_ns and cpu: the switch-in; ip/sp/bp: where it blocked (0: unknown) */
static void handle_offcpu(struct coll *c, const struct lp_ev_offcpu *e, size_t size)
{
	struct ev_stacks st = {e->nkstack, e->nustack, e->stack_len, e->stack};
	struct lps_sample s = {
		.kind = LPS_KIND_OFFCPU,
		.weight = e->weight_ns,
		.ip = e->ip,
		.sp = e->sp,
		.bp = e->bp,
		.blocked_ns = e->blocked_ns,
	};

	send_sample(c, &s, &e->hdr, &st, LP_EV_OFFCPU_FIXED_SIZE, size);
}

static void handle_task(struct coll *c, const struct lp_ev_task *e)
{
	lps_enc_reset(&c->dyn);
	if (e->hdr.type == LP_EV_EXEC) {
		struct coll_proc *p;
		struct lps_exec x = {
			e->hdr.time_ns,
			e->hdr.pid,
			{e->hdr.comm, (uint32_t)strnlen(e->hdr.comm, LP_BPF_COMM_LEN)}};

		/*
		 * with the side-band, its exec event came before the new
		 * image's mmap events: another here would void them
		 */
		if (c->sb)
			return; /* and its first sample has the maps read (maps_read) */
		lps_enc_exec(&c->dyn, &x);
		write_enc(c, &c->dyn, WAIT_RUN_MS);
		/* the new image's mappings replace the old ones */
		p = coll_procs_find(&c->procs, e->hdr.pid);
		if (p) /* the reader forgets the old image's JIT symbols */
			coll_perfmap_forget(p);
		if (p || c->o->npids)
			send_maps(c, e->hdr.pid, e->hdr.tid, WAIT_RUN_MS);
	} else {
		struct lps_exit x = {e->hdr.time_ns, e->hdr.pid};

		lps_enc_exit(&c->dyn, &x);
		write_enc(c, &c->dyn, WAIT_RUN_MS);
		coll_procs_del(&c->procs, e->hdr.pid);
	}
}

/*
 * A new process or image (fork, exec event): the maps read is still due
 * at its first sample (build-ids, exe), and not a loss if it has gone.
 */
static void proc_born(struct coll *c, uint32_t pid)
{
	struct coll_proc *p = coll_procs_add(&c->procs, pid);

	if (!p)
		return;
	coll_perfmap_forget(p); /* the reader forgets an old image's JIT symbols */
	p->born = true;
	p->maps_read = false;
	p->maps_ns = 0;
	p->nranges = 0;
}

static void on_sideband(void *ctx, const struct coll_sb_event *ev)
{
	struct coll *c = ctx;
	/* a path of at most PATH_MAX bytes and the fixed fields: no allocation */
	uint8_t buf[LPS_MAX_PATH + 256];
	struct lps_enc enc;
	struct coll_proc *p;

	if (!coll_pid_profiled(c->o->pids, c->o->npids, ev->pid))
		return;
	lps_enc_init_fixed(&enc, buf, sizeof(buf));
	switch (ev->kind) {
	case COLL_SB_MMAP: {
		struct lps_mmap m = {
			.time_ns = ev->time_ns,
			.pid = ev->pid,
			.map = {.start = ev->start,
				.end = ev->start + ev->len,
				.offset = ev->pgoff,
				.dev_major = ev->major,
				.dev_minor = ev->minor,
				.inode = ev->inode,
				.prot = coll_prot_bits(ev->prot, ev->flags),
				.path = {ev->path, ev->path_len}},
		};

		if (ev->start + ev->len < ev->start || ev->path_len > LPS_MAX_PATH)
			return;
		lps_enc_mmap(&enc, &m);
		/* the collector's own view: no read of the maps for it */
		p = coll_procs_find(&c->procs, ev->pid);
		if (p && (m.map.prot & LPS_PROT_X)) {
			coll_proc_add_range(p, m.map.start, m.map.end);
			coll_jitdump_seen(p, ev->path, ev->path_len); /* perf's marker */
		}
		break;
	}
	case COLL_SB_EXEC:
		proc_born(c, ev->pid);
		lps_enc_exec(&enc, &(struct lps_exec){ev->time_ns,
						      ev->pid,
						      {ev->comm, ev->comm_len < LPS_COMM_LEN
									 ? ev->comm_len
									 : LPS_COMM_LEN}});
		break;
	case COLL_SB_FORK:
		proc_born(c, ev->pid);
		lps_enc_fork(&enc, &(struct lps_fork){ev->time_ns, ev->pid, ev->ppid});
		break;
	default:
		return;
	}
	if (write_enc(c, &enc, WAIT_RUN_MS) == 0)
		c->sb_events++;
}

/*
 * Everything in the side-band buffers, as records: before the BPF records
 * taken after it (see on_bpf_event), so that a sample finds the mappings
 * made before it.
 */
static void drain_sideband(struct coll *c)
{
	uint64_t lost;

	if (!c->sb)
		return;
	lost = coll_sideband__maybe_lost(c->sb);
	c->sb_upto = lp_clock_ns(CLOCK_MONOTONIC);
	coll_sideband__drain(c->sb, on_sideband, c);
	if (coll_sideband__maybe_lost(c->sb) != lost)
		c->sb_loss_ns = lp_clock_ns(CLOCK_MONOTONIC);
}

static int on_bpf_event(void *ctx, void *data, size_t size)
{
	struct coll *c = ctx;
	const struct lp_ev_hdr *h = data;

	if (size < sizeof(*h)) {
		c->bad_events++;
		return 0;
	}
	/*
	 * A record newer than the last read of the side-band (taken while
	 * this drain runs): the mmap and exec events before it first.
	 */
	if (c->sb && h->time_ns > c->sb_upto)
		drain_sideband(c);
	switch (h->type) {
	case LP_EV_SAMPLE:
		c->bpf_samples++;
		if (size < LP_EV_SAMPLE_FIXED_SIZE) {
			c->bad_events++;
			return 0;
		}
		handle_sample(c, data, size);
		break;
	case LP_EV_OFFCPU:
		if (size < LP_EV_OFFCPU_FIXED_SIZE) {
			c->bad_events++;
			return 0;
		}
		handle_offcpu(c, data, size);
		break;
	case LP_EV_EXEC:
	case LP_EV_EXIT:
		if (size < sizeof(struct lp_ev_task)) {
			c->bad_events++;
			return 0;
		}
		handle_task(c, data);
		break;
	default:
		c->bad_events++;
	}
	return 0;
}

/*
 * The tail of a verifier log that is printed: the error is at its end, and
 * a failed load's log can run to megabytes.
 */
#define LIBBPF_LOG_TAIL (16u << 10)

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	char *line = NULL;
	const char *msg;
	int n;

	/* libbpf's debug output (every relocation) only when asked for */
	if (level == LIBBPF_DEBUG && !getenv("LOWPROF_LIBBPF_DEBUG"))
		return 0;
	/* a load that has a fallback: its verifier log is noise unless -v */
	if (quiet_libbpf && lp_log_level() < LP_LOG_DEBUG)
		return 0;
	if (level == LIBBPF_INFO && lp_log_level() < LP_LOG_DEBUG)
		return 0;
	n = vasprintf(&line, fmt, ap);
	if (n < 0)
		return 0;
	msg = line;
	if (!strncmp(msg, "libbpf: ", 8))
		msg += 8;
	if (n < 900) {
		lp_log(level == LIBBPF_WARN ? LP_LOG_WARN : LP_LOG_DEBUG, "libbpf: %s", msg);
	} else if (lp_log_level() >= (level == LIBBPF_WARN ? LP_LOG_WARN : LP_LOG_DEBUG)) {
		/* longer than a log line (lp_log's 1 KiB): a verifier log, its end as it is */
		size_t skip = (size_t)n > LIBBPF_LOG_TAIL ? (size_t)n - LIBBPF_LOG_TAIL : 0;

		lp_log(level == LIBBPF_WARN ? LP_LOG_WARN : LP_LOG_DEBUG,
		       "libbpf: %zu bytes follow%s", (size_t)n - skip,
		       skip ? " (the end of a longer message)" : "");
		if (write(STDERR_FILENO, line + skip, (size_t)n - skip) < 0)
			lp_debug("libbpf: writing its message: %m");
	}
	free(line);
	return 0;
}

/*
 * --ring PATH: a Unix socket at PATH, owned by the symbolizer's user and
 * mode 0600, where the first symbolizer to connect receives the ring (a
 * read-only descriptor of its data and the consumer page) and then keeps
 * the connection as its file channel; if it dies, the next one to connect
 * takes over. A stale socket left by a collector that was killed is
 * replaced. The socket is made at a temporary name beside PATH and moved
 * there once it has its owner and mode and listens: a symbolizer started
 * at the same time never finds a socket that is still root's (it would be
 * refused, not told to wait).
 */
static int ring_listen(struct coll *c)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX}, t = {.sun_family = AF_UNIX};
	const char *path = c->o->ring_path;
	struct stat st;
	bool moved;
	mode_t old;
	int s, err;

	if (strlen(path) >= sizeof(a.sun_path)) {
		lp_err("ring: socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	/* where the temporary name does not fit, the socket is made in place */
	moved = (size_t)snprintf(t.sun_path, sizeof(t.sun_path), "%s.%d~", path, (int)getpid()) <
		sizeof(t.sun_path);
	if (!moved)
		t = a;
	s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	if (lstat(path, &st) == 0 && S_ISSOCK(st.st_mode)) {
		int probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (probe >= 0 && connect(probe, (struct sockaddr *)&a, sizeof(a)) &&
		    errno == ECONNREFUSED)
			unlink(path);
		if (probe >= 0)
			close(probe);
	}
	/* a temporary name left by a killed collector that had our pid */
	if (moved && lstat(t.sun_path, &st) == 0 && S_ISSOCK(st.st_mode))
		unlink(t.sun_path);
	/* made mode 0600: no chmod by name, which would follow a symlink put there */
	old = umask(0177);
	err = bind(s, (struct sockaddr *)&t, sizeof(t)) ? -errno : 0;
	umask(old);
	if (err) {
		lp_err("ring: creating socket %s: %s", t.sun_path, strerror(-err));
		close(s);
		return err;
	}
	if (fchownat(AT_FDCWD, t.sun_path, c->o->ring_uid, (gid_t)-1, AT_SYMLINK_NOFOLLOW) ||
	    listen(s, LP_MAX_SHARDS)) {
		err = -errno;
		lp_err("ring: socket %s: %s", t.sun_path, strerror(-err));
		goto fail;
	}
	/* never over a live socket: that one belongs to another collector */
	if (moved && renameat2(AT_FDCWD, t.sun_path, AT_FDCWD, path, RENAME_NOREPLACE)) {
		err = errno == EEXIST ? -EADDRINUSE : -errno;
		lp_err("ring: creating socket %s: %s", path, strerror(-err));
		goto fail;
	}
	c->sock_created = true;
	c->listen_fd = s;
	return 0;
fail:
	unlink(t.sun_path);
	close(s);
	return err;
}

/*
 * Requests on the file channel carry their sender's credentials; replies
 * never block (a symbolizer that stops reading loses its own answers, it
 * cannot stall the collector).
 */
static void files_channel_init(struct coll_shard *sh)
{
	int one = 1;

	if (sh->files_fd >= 0 &&
	    (setsockopt(sh->files_fd, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	     fcntl(sh->files_fd, F_SETFL, fcntl(sh->files_fd, F_GETFL) | O_NONBLOCK))) {
		lp_warn("files: the file channel: %m; the symbolizer opens files itself");
		close(sh->files_fd);
		sh->files_fd = -1;
	}
}

/*
 * --ring PATH: the ring's consumer position is read from a page no one
 * had before (lp_ring__new_consumer_page), for each symbolizer that
 * attaches and as soon as one leaves: nothing a symbolizer that left (or
 * anyone it gave its page to) writes there is read again, neither while
 * none is attached nor once the next one reads. 0 or -errno.
 */
static int fresh_consumer_page(struct coll_shard *sh)
{
	int fd = lp_ring__new_consumer_page(sh->ring);

	if (fd < 0)
		return fd;
	/* ours: --ring PATH never inherits the consumer page */
	if (sh->cons_fd >= 0)
		close(sh->cons_fd);
	sh->cons_fd = fd;
	return 0;
}

/*
 * The consumer's descriptors: ring k read-only, and a consumer page of
 * its own, with the hand-off message (lowprof/shard.h): 'R' when the ring
 * is already in use (the symbolizer resumes), and which shard it is.
 */
static int send_ring(struct coll *c, uint32_t k, int sock, bool resumed)
{
	struct coll_shard *sh = &c->sh[k];
	struct lp_shard_hello h = {.how = resumed ? LP_SHARD_HELLO_RESUMED : LP_SHARD_HELLO_FRESH,
				   .shard = (uint8_t)k,
				   .nshards = (uint8_t)c->nsh};
	int fds[2] = {lp_ring_reader_fd(sh->ring_fd), -1}, err;

	if (fds[0] < 0)
		return fds[0];
	err = fresh_consumer_page(sh);
	if (err) {
		close(fds[0]);
		return err;
	}
	fds[1] = sh->cons_fd;
	/* one ring: `how` alone, as before shards, which every symbolizer reads */
	err = lp_send_msg(sock, &h, c->nsh > 1 ? sizeof(h) : 1, fds, 2);
	close(fds[0]);
	return err;
}

/*
 * Processes that already run were added to lowprof's own (self_tgids):
 * the off-CPU programs decide again for the tasks whose answer they keep
 * (offcpu.bpf.c self_gen).
 */
static void self_changed(struct coll *c)
{
	if (c->off)
		__atomic_fetch_add(&c->off->bss->self_gen, 1, __ATOMIC_RELEASE);
}

/*
 * Accepts one pending symbolizer on the --ring socket: of the ring's user
 * (or root), and only while a ring has none attached (its file channel is
 * open until the attached one exits); it gets the lowest such shard. Once
 * the metadata went out (c->meta_sent) the ring is in use: the new one
 * must skip what it reads before the metadata sent again. Returns 1 + the
 * shard when a ring was handed over, 0 when there was none or it was
 * refused, or a negative errno of the listening socket.
 */
static int accept_consumer(struct coll *c)
{
	struct coll_shard *sh = NULL;
	uint32_t k;
	static uint64_t refused;
	struct ucred cred;
	socklen_t len = sizeof(cred);
	int cfd, err;

	cfd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return errno == EINTR || errno == EAGAIN || errno == ECONNABORTED ? 0 : -errno;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) ||
	    (cred.uid != c->o->ring_uid && cred.uid != 0)) {
		/* said for the first few and then every power of two: no log flood */
		if (++refused <= 3 || !(refused & (refused - 1)))
			lp_warn("ring: refusing a consumer with uid %u (the ring's owner is %u; "
				"%llu refused)",
				cred.uid, c->o->ring_uid, (unsigned long long)refused);
		close(cfd);
		return 0;
	}
	for (k = 0; k < c->nsh && !sh; k++)
		if (c->sh[k].files_fd < 0)
			sh = &c->sh[k];
	if (!sh) {
		if (++refused <= 3 || !(refused & (refused - 1)))
			lp_warn("ring: refusing another symbolizer (pid %d): %s (%llu refused)",
				cred.pid, c->nsh > 1 ? "every shard has one" : "one is attached",
				(unsigned long long)refused);
		close(cfd);
		return 0;
	}
	k--;
	/* lowprof's own from now on; its exit takes it out (profile.bpf.c) */
	if (!c->o->include_self) {
		coll_self_add(bpf_map__fd(c->skel->maps.self_tgids), cred.pid);
		self_changed(c);
	}
	/*
	 * the file channel's credentials on before the ring goes: a request
	 * sent as soon as the ring arrives must carry them
	 */
	sh->files_fd = cfd;
	files_channel_init(sh);
	if (sh->files_fd < 0)
		return 0; /* closed, and said why */
	err = send_ring(c, k, cfd, c->meta_sent);
	if (err) {
		close(cfd);
		sh->files_fd = -1;
		lp_warn("ring: handing the ring to pid %d: %s", cred.pid, strerror(-err));
		return 0;
	}
	if (c->nsh > 1)
		lp_info("ring: shard %u of %u to the symbolizer pid %d", k, c->nsh, cred.pid);
	return 1 + (int)k;
}

/*
 * Waits for a symbolizer of the ring's user and hands it the ring. The
 * socket stays: a symbolizer that dies can be replaced by a new one
 * (systemd's Restart=, a container restarting), see nap_serving.
 */
static int ring_handoff(struct coll *c)
{
	uint64_t first = 0;
	uint32_t n = 0;

	lp_info("waiting for %s: lowprof-symbolizer --ring %s",
		c->nsh > 1 ? "symbolizers, one per shard" : "a symbolizer", c->o->ring_path);
	/*
	 * With shards, the others get HANDOFF_GRACE_MS after the first to
	 * come too (started beside it, they read the run from its start);
	 * one that comes later takes its ring as a resumed one.
	 */
	while (n < c->nsh) {
		struct pollfd pfd = {c->listen_fd, POLLIN, 0};
		int r;

		/* a short poll: a signal that came before it is seen within 200 ms */
		if (stop_signal)
			return -EINTR;
		if (first && lp_clock_ns(CLOCK_MONOTONIC) - first >= HANDOFF_GRACE_MS * 1000000ull)
			break;
		if (poll(&pfd, 1, first ? 50 : 200) <= 0)
			continue;
		r = accept_consumer(c);
		if (r < 0)
			return r;
		if (r && !n++)
			first = lp_clock_ns(CLOCK_MONOTONIC);
	}
	if (n < c->nsh)
		lp_info("ring: %u of %u shards have a symbolizer; the others' rings take what "
			"fits until one connects",
			n, c->nsh);
	return 0;
}

/*
 * The ring: an inherited memfd (lowprof record), which must be sealed
 * against shrinking so no one can truncate it under us (SIGBUS), or one we
 * create and later hand to the symbolizer that connects to --ring PATH.
 */
static int open_ring(struct coll *c, struct coll_shard *sh, uint32_t k, uint64_t size)
{
	const struct coll_opts *o = c->o;
	struct lp_ring_stats st;
	int err;

	if (o->nring_fds) {
		if (lp_ring_check_sealed(o->ring_fds[k][0]) ||
		    lp_ring_check_sealed(o->ring_fds[k][1])) {
			lp_err("ring: fds %d,%d are not a sealed lowprof ring (it could be "
			       "truncated under the collector)",
			       o->ring_fds[k][0], o->ring_fds[k][1]);
			return -EPERM;
		}
		sh->ring_fd = o->ring_fds[k][0];
		sh->cons_fd = o->ring_fds[k][1];
	} else {
		int fds[2];

		err = lp_ring_create_memfds(size, fds);
		if (err) {
			lp_err("ring: creating shared memory: %s", strerror(-err));
			return err;
		}
		sh->ring_fd = fds[LP_RING_FD_DATA];
		sh->cons_fd = fds[LP_RING_FD_CONS];
	}
	sh->mem = lp_ring_map_fds(sh->ring_fd, sh->cons_fd, true, &sh->mem_size);
	if (!sh->mem) {
		err = -errno;
		lp_err("ring: mapping fds %d,%d: %s", sh->ring_fd, sh->cons_fd, strerror(-err));
		return err;
	}
	/*
	 * Ours is the last writable mapping there will be: from here on no
	 * one, the consumer included, can write the header or the data area.
	 */
	err = lp_ring_seal_writes(sh->ring_fd);
	if (err)
		lp_warn("ring: sealing it against writes: %s; the consumer is kept out of it "
			"only by its read-only descriptor",
			strerror(-err));
	sh->ring = lp_ring__producer(sh->mem, sh->mem_size);
	if (!sh->ring) {
		err = -errno;
		lp_err("ring: not a lowprof ring (fd %d): %s", sh->ring_fd, strerror(-err));
		return err;
	}
	/*
	 * The ring is sized for two seconds of typical records; a symbolizer
	 * that keeps up needs one drain's worth. Going back to the start once
	 * it has read far enough keeps the ring's pages, resident in both
	 * processes, to what is used. Until the programs run, an eighth: the
	 * start-up burst waits for the symbolizer within it (write_ring);
	 * from then on tune_early_wrap sets it from the write rate.
	 */
	lp_ring__stats(sh->ring, &st);
	lp_ring__set_early_wrap(sh->ring, st.data_size / COLL_RING_EARLY_WRAP_DIV);
	return 0;
}

/*
 * The rings: inherited memfds (lowprof record: --ring-fd once per shard),
 * which must be sealed against shrinking so no one can truncate them
 * under us (SIGBUS), or ones we create (--shards of them, the default
 * size's budget divided among them) and later hand to the symbolizers
 * that connect to --ring PATH.
 */
static int open_rings(struct coll *c)
{
	const struct coll_opts *o = c->o;
	uint64_t total = lp_shm_ring_size(sizing_cpus(c), o->freq_hz,
					  coll_max_sample_record(o->stack_bytes));
	uint64_t size;
	int err;

	c->nsh = o->nring_fds ? o->nring_fds : o->nshards ? o->nshards : 1;
	size = o->ring_size ? o->ring_size : coll_shard_ring_size(total, c->nsh);
	for (uint32_t k = 0; k < c->nsh; k++)
		c->sh[k] =
			(struct coll_shard){.ring_fd = -1,
					    .cons_fd = -1,
					    .files_fd = k < o->nfiles_fds ? o->files_fds[k] : -1};
	if (!o->nring_fds && lp_ring_round_size(size) != size) {
		lp_err("ring: size %llu is not a power of two >= %u", (unsigned long long)size,
		       LP_RING_MIN_DATA);
		return -EINVAL;
	}
	for (uint32_t k = 0; k < c->nsh; k++)
		if ((err = open_ring(c, &c->sh[k], k, size)))
			return err;
	if (!o->nring_fds && (err = ring_listen(c)))
		return err;
	for (uint32_t k = 0; k < c->nsh; k++)
		files_channel_init(&c->sh[k]);
	lp_debug("ring: %u ring%s of %llu KiB, %llu KiB in all", c->nsh, c->nsh > 1 ? "s" : "",
		 (unsigned long long)(ring_data_size(c) >> 10),
		 (unsigned long long)((ring_data_size(c) * c->nsh) >> 10));
	return 0;
}

/*
 * Right after an early wrap, until the symbolizer has read past it, the
 * ring takes only the part before the wrap (lp_ring__set_early_wrap), so
 * that part must hold what arrives while the symbolizer lags: the offset
 * is set to COLL_RING_EARLY_WRAP_S seconds of the highest recent write
 * rate (which decays by a tenth a second), never less than an eighth of
 * the ring; when that is the whole ring, no early wraps. Half the ring
 * until the first second has been measured. At 99 Hz that is an eighth;
 * at high rates the ring's pages follow the rate, not the ring's size.
 */
static void tune_early_wrap(struct coll_shard *sh, uint64_t now)
{
	struct lp_ring_stats st;
	double rate, want;

	lp_ring__stats(sh->ring, &st);
	if (!sh->wrap_ns) {
		lp_ring__set_early_wrap(sh->ring, st.data_size / 2);
	} else {
		if (now - sh->wrap_ns < 1000000000ull)
			return;
		rate = (double)(lp_ring__written(sh->ring) - sh->wrap_pos) * 1e9 /
		       (double)(now - sh->wrap_ns);
		sh->wrap_rate *= 0.9;
		if (rate > sh->wrap_rate)
			sh->wrap_rate = rate;
		want = sh->wrap_rate * COLL_RING_EARLY_WRAP_S;
		if (want < (double)(st.data_size / COLL_RING_EARLY_WRAP_DIV))
			want = (double)(st.data_size / COLL_RING_EARLY_WRAP_DIV);
		lp_ring__set_early_wrap(sh->ring,
					want >= (double)st.data_size ? 0 : (uint64_t)want);
	}
	sh->wrap_pos = lp_ring__written(sh->ring);
	sh->wrap_ns = now;
}

/* Each ring's early wrap (tune_early_wrap): the rates of shards differ. */
static void tune_early_wraps(struct coll *c, uint64_t now)
{
	for (uint32_t k = 0; k < c->nsh; k++)
		tune_early_wrap(&c->sh[k], now);
}

/* Every ring: one wakeup of its symbolizer for what was written since the last. */
static void notify_rings(struct coll *c)
{
	for (uint32_t k = 0; k < c->nsh; k++)
		lp_ring__notify(c->sh[k].ring);
}

/*
 * Record 13: the collector's own vDSO image, copied, never parsed. The
 * kernel maps the same image into every 64-bit process, so the symbolizer
 * unwinds and names [vdso] frames with it. Its length is our own [vdso]
 * mapping's (our maps: nothing a profiled process controls). None is sent
 * without a vDSO, or for one over LPS_MAX_VDSO.
 */
static void send_vdso(struct coll *c)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR), size = 0;
	struct lps_mapping m;
	const char *cur;
	char *maps;
	size_t len;
	int r;

	if (!base || coll_read_file("/proc/self/maps", 1u << 20, &maps, &len))
		return;
	for (cur = maps; (r = coll_maps_next(&cur, maps + len, &m)) != 0;)
		if (r == 1 && m.start == base && m.path.len == 6 &&
		    !memcmp(m.path.ptr, "[vdso]", 6))
			size = m.end - m.start;
	free(maps);
	if (!size || size > LPS_MAX_VDSO) {
		if (size)
			lp_warn("vdso: ours is %llu bytes, over %u: [vdso] frames end the "
				"user stacks",
				(unsigned long long)size, LPS_MAX_VDSO);
		return;
	}
	lps_enc_reset(&c->dyn);
	lps_enc_vdso(&c->dyn, &(struct lps_vdso){lp_clock_ns(CLOCK_MONOTONIC),
						 {(const char *)(uintptr_t)base, (uint32_t)size}});
	write_enc(c, &c->dyn, WAIT_START_MS);
}

static void send_meta(struct coll *c)
{
	struct utsname u;
	char producer[64];
	uint32_t pids[COLL_MAX_PIDS];
	const char *mode = c->o->off_cpu_mode == COLL_OFFCPU_TIME ? "time" : "event";
	struct lps_meta m;

	uname(&u);
	snprintf(producer, sizeof(producer), "lowprof-collector %s", LOWPROF_VERSION);
	for (size_t i = 0; i < c->o->npids; i++)
		pids[i] = (uint32_t)c->o->pids[i];
	m = (struct lps_meta){
		.hostname = {u.nodename, (uint32_t)strlen(u.nodename)},
		.kernel_release = {u.release, (uint32_t)strlen(u.release)},
		.clock = {"CLOCK_MONOTONIC", 15},
		.start_mono_ns = c->meta_mono ? c->meta_mono : lp_clock_ns(CLOCK_MONOTONIC),
		.start_real_ns =
			c->meta_mono ? (uint64_t)c->meta_real : lp_clock_ns(CLOCK_REALTIME),
		.freq_hz = c->o->freq_hz,
		.ncpus_online = (uint32_t)c->ncpus,
		.drain_ms = c->o->drain_ms,
		.bpf_ring_bytes = c->bpf_ring_bytes,
		.shm_ring_bytes = ring_data_size(c), /* each ring's, with shards */
		.npids = (uint32_t)c->o->npids,
		.producer = {producer, (uint32_t)strlen(producer)},
		.stack_bytes = c->o->stack_bytes,
		.off_cpu = c->o->off_cpu,
		.bpf_mem_bytes = c->bpf_mem_bytes,
		.kernel_base = {"_text", 5},
		.nfallbacks = c->nfallbacks,
	};
	if (c->o->off_cpu) {
		m.off_cpu_mode = (struct lps_str){mode, (uint32_t)strlen(mode)};
		m.off_cpu_rate = c->o->off_cpu_mode == COLL_OFFCPU_EVENT ? c->o->off_cpu_rate : 0;
		m.off_cpu_min_ns = c->o->off_cpu_min_ns;
		m.off_cpu_period_ns =
			c->o->off_cpu_mode == COLL_OFFCPU_TIME ? c->o->off_cpu_period_ns : 0;
	}
	lps_enc_reset(&c->dyn);
	c->meta_mono = 0;
	lps_enc_meta(&c->dyn, &m, pids, c->fallbacks);
	write_enc(c, &c->dyn, WAIT_START_MS);
	c->meta_sent = true; /* a ring handed over from now on is in use */
	send_vdso(c);
}

/* Kernel symbol snapshot: text symbols of /proc/kallsyms in chunks. */
/*
 * One record's worth of kernel symbols, with their names copied: kallsyms is
 * read in pieces, so names cannot point into the read buffer.
 */
struct ksym_chunk {
	struct lps_ksym k[KSYMS_PER_RECORD];
	char names[KSYMS_PER_RECORD * 2 * (KSYM_NAME_MAX + 1)];
	size_t used;
	uint32_t n;
};

static void ksym_chunk_add(struct ksym_chunk *ch, const struct lps_ksym *k)
{
	struct lps_ksym *d = &ch->k[ch->n++];

	d->addr = k->addr;
	memcpy(ch->names + ch->used, k->name.ptr, k->name.len);
	d->name = (struct lps_str){ch->names + ch->used, k->name.len};
	ch->used += k->name.len;
	memcpy(ch->names + ch->used, k->module.ptr, k->module.len);
	d->module = (struct lps_str){ch->names + ch->used, k->module.len};
	ch->used += k->module.len;
}

static void ksym_chunk_send(struct coll *c, struct ksym_chunk *ch, uint32_t seq, bool last)
{
	lps_enc_reset(&c->dyn);
	lps_enc_ksyms_begin(&c->dyn, seq, last, ch->n);
	for (uint32_t i = 0; i < ch->n; i++)
		lps_enc_ksym(&c->dyn, &ch->k[i]);
	if (write_enc(c, &c->dyn, WAIT_START_MS))
		lp_warn("kallsyms: chunk %u did not fit in the ring", seq);
	ch->n = 0;
	ch->used = 0;
}

/*
 * Calls fn for each text symbol of /proc/kallsyms, read from its start 64
 * KiB at a time (~5 MB with modules: the collector's peak memory does not
 * grow with it), until fn returns non-zero. The kernel decides at open
 * whether the file shows addresses (by the opener's CAP_SYSLOG), so the one
 * fd opened at start, before the capabilities went, serves every reading.
 * Returns 0, or -errno when kallsyms could not be read to its end.
 */
static int kallsyms_scan(struct coll *c, int (*fn)(void *ctx, const struct lps_ksym *k), void *ctx)
{
	char *buf = malloc(KSYMS_READ_BUF);
	size_t have = 0, read_total = 0;
	bool eof = false;
	int err = 0;

	if (!buf)
		return -ENOMEM;
	if (lseek(c->kallsyms_fd, 0, SEEK_SET) < 0) {
		free(buf);
		return -errno;
	}
	while (!eof) {
		ssize_t r = read(c->kallsyms_fd, buf + have, KSYMS_READ_BUF - have);
		const char *p = buf, *end, *nl;

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		eof = r == 0 || (read_total += (size_t)r) > KALLSYMS_MAX;
		end = buf + have + r;
		while (p < end) {
			const char *line = p;
			struct lps_ksym k;

			nl = memchr(p, '\n', (size_t)(end - p));
			if (!nl && !eof && (p > buf || end < buf + KSYMS_READ_BUF))
				break; /* a partial line: read the rest first */
			p = nl ? nl + 1 : end;
			if (!nl && !eof)
				continue; /* longer than the buffer: not a symbol line, dropped */
			if (coll_ksym_parse_line(line, (size_t)((nl ? nl : end) - line), &k) != 1 ||
			    k.name.len > KSYM_NAME_MAX || k.module.len > KSYM_NAME_MAX)
				continue;
			if (fn(ctx, &k))
				goto out;
		}
		have = (size_t)(end - p);
		memmove(buf, p, have);
	}
out:
	free(buf);
	return err;
}

static int find_text_base(void *ctx, const struct lps_ksym *k)
{
	uint64_t *base = ctx;

	if (k->module.len || k->name.len != 5 || memcmp(k->name.ptr, "_text", 5))
		return 0;
	*base = k->addr;
	return 1;
}

/*
 * Opens /proc/kallsyms (with CAP_SYSLOG, at start) and finds the kernel's
 * text base, _text: every kernel address leaves the collector relative to
 * it (the kernel symbols, the kernel stacks), so the KASLR base never
 * reaches the symbolizer, a capture file or an output. 0 when kallsyms
 * cannot be read or hides its addresses (kernel.kptr_restrict, no
 * CAP_SYSLOG): kernel stacks are then left out (kstacks_hidden), never sent
 * as they are.
 */
static void open_kallsyms(struct coll *c)
{
	uint64_t base = 0;
	int err;

	if (c->o->capture_dir) { /* what tells a window whether the snapshot still holds */
		c->modules_fd = open("/proc/modules", O_RDONLY | O_CLOEXEC);
		if (c->modules_fd < 0)
			c->modules_fd = -errno; /* -ENOENT: a kernel built without modules */
	}
	c->kallsyms_fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
	if (c->kallsyms_fd < 0) {
		lp_warn("kallsyms: %m; kernel stacks are left out of the profile");
		return;
	}
	err = kallsyms_scan(c, find_text_base, &base);
	if (err)
		lp_warn("kallsyms: %s; kernel stacks are left out of the profile", strerror(-err));
	else if (!base)
		lp_warn("kallsyms: kernel addresses are hidden (kernel.kptr_restrict, needs "
			"CAP_SYSLOG); kernel stacks are left out of the profile");
	c->ktext = err ? 0 : base;
}

/* One record's worth of kernel symbols being gathered (send_ksyms). */
struct ksym_send {
	struct coll *c;
	struct ksym_chunk *ch;
	uint32_t seq, total;
};

static int ksym_send_one(void *ctx, const struct lps_ksym *k)
{
	struct ksym_send *ks = ctx;
	/* relative to _text; modules lie above it, anything below wraps */
	struct lps_ksym rel = {k->addr - ks->c->ktext, k->name, k->module};

	ksym_chunk_add(ks->ch, &rel);
	ks->total++;
	if (ks->ch->n == KSYMS_PER_RECORD)
		ksym_chunk_send(ks->c, ks->ch, ks->seq++, false);
	return 0;
}

/*
 * SHA-256 of /proc/modules, each line without its use count (which moves
 * as modules are used, not loaded): a module loaded, unloaded or loaded
 * again elsewhere changes it (the fd, opened with CAP_SYSLOG, shows the
 * addresses). The digest never leaves the collector. A kernel without
 * module support has no /proc/modules: all zeros. 0 or -errno.
 */
static int modules_digest(struct coll *c, char out[65])
{
	struct coll_sha256 h;
	size_t len;
	char *buf;
	int err;

	if (c->modules_fd == -ENOENT) { /* no module support: nothing comes or goes */
		memset(out, 0, 65);
		return 0;
	}
	if (c->modules_fd < 0)
		return -EBADF;
	if (lseek(c->modules_fd, 0, SEEK_SET) < 0)
		return -errno;
	err = coll_read_fd(c->modules_fd, MODULES_MAX, &buf, &len);
	if (err)
		return err;
	coll_sha256_init(&h);
	coll_sha256_update(&h, buf, coll_modules_strip_counts(buf, len));
	coll_sha256_hex(&h, out);
	free(buf);
	return 0;
}

/*
 * What the kernel's symbols are like now, as far as can be told without
 * reading them: the modules, and the ksymbol events and lost side-band
 * events so far, the ones not drained yet included. false when that cannot be told (no side-band
 * events, a kernel without ksymbol events, /proc/modules unreadable).
 */
static bool ksyms_state(struct coll *c, struct ksyms_state *st)
{
	memset(st, 0, sizeof(*st));
	return coll_sideband__ksymbols(c->sb, &st->ksymbol_events, &st->sb_lost) &&
	       !modules_digest(c, st->modules);
}

/*
 * Whether the last snapshot (c->ksnap) still is what /proc/kallsyms would
 * give: no module came or went, and the side-band events saw no ksymbol
 * event (BPF programs, trampolines, ftrace and kprobe pages) and lost
 * none since it was read (nor came near losing one: a full buffer's loss
 * is told only later), and it is at most KSNAP_MAX_AGE_NS old (a CPU that
 * came online since has no side-band event; a module reloaded alike at
 * the same place looks the same). When in doubt, false: it is read again.
 */
/* The longest a snapshot is copied without reading kallsyms again, whatever the events say */
#define KSNAP_MAX_AGE_NS (300ull * 1000000000)

static bool ksyms_unchanged(struct coll *c)
{
	struct ksyms_state now;

	if (!c->ksnap)
		return false;
	if (lp_clock_ns(CLOCK_MONOTONIC) - c->ksnap_at_ns > KSNAP_MAX_AGE_NS) {
		lp_debug("kallsyms: the snapshot is 5 minutes old: read again");
		return false;
	}
	if (!ksyms_state(c, &now)) {
		lp_debug("kallsyms: cannot tell whether it changed: read again");
		return false;
	}
	if (now.ksymbol_events != c->ksnap_at.ksymbol_events ||
	    now.sb_lost != c->ksnap_at.sb_lost || strcmp(now.modules, c->ksnap_at.modules)) {
		lp_debug("kallsyms: changed (%llu ksymbol events, %llu side-band events lost%s): "
			 "read again",
			 (unsigned long long)(now.ksymbol_events - c->ksnap_at.ksymbol_events),
			 (unsigned long long)(now.sb_lost - c->ksnap_at.sb_lost),
			 strcmp(now.modules, c->ksnap_at.modules) ? ", modules" : "");
		return false;
	}
	return true;
}

static int ksyms_read(struct coll *c);

/*
 * --capture-dir: reads /proc/kallsyms into a new snapshot of blocks
 * (the rings, unless the file alone is meant, get the records as
 * always), puts it into the window's file and keeps it for the next
 * windows when nothing went wrong and the kernel's state could be told.
 */
static void ksyms_build(struct coll *c)
{
	struct ksyms_state before;
	struct coll_ksnap *k;
	uint64_t bytes, rbytes;
	bool keep;
	int err;

	coll_ksnap__free(c->ksnap);
	c->ksnap = NULL;
	/* before the read: whatever changes during it shows at the next window */
	if (!ksyms_state(c, &before)) { /* it could not be kept: read into the file as records */
		ksyms_read(c);
		c->ksnap_read++;
		return;
	}
	c->ksnap_at_ns = lp_clock_ns(CLOCK_MONOTONIC);
	k = c->ksnap_build = coll_ksnap__new(c->o->capture_compress);
	err = ksyms_read(c); /* to the rings, and to k (if any) instead of the capture */
	c->ksnap_build = NULL;
	c->ksnap_read++;
	if (!k)
		return; /* no memory: the records went to the capture as they are */
	if (coll_ksnap__finish(k)) {
		/* the blocks could not be made: the file gets the records as they are */
		lp_debug("kallsyms: no memory for the snapshot's blocks: read again for %s",
			 c->cap_name);
		coll_ksnap__free(k);
		c->cap_only = true; /* the rings have them */
		ksyms_read(c);
		c->cap_only = false;
		return;
	}
	/* a write that fails is dropped and counted by the capture; the blocks are good */
	coll_ksnap__write(k, c->cap);
	coll_ksnap__size(k, &bytes, &rbytes);
	keep = !err;
	lp_debug("kallsyms: %.1f KiB of snapshot records in %.1f KiB of blocks%s", rbytes / 1024.0,
		 bytes / 1024.0, keep ? "" : "; read again for the next window");
	if (keep) {
		c->ksnap = k;
		c->ksnap_at = before;
	} else {
		coll_ksnap__free(k);
	}
}

/*
 * The kernel symbol snapshot, KSYMS_PER_RECORD text symbols per record,
 * their addresses relative to the kernel's text base. Without that base
 * (open_kallsyms) the snapshot is empty: absolute addresses never leave.
 *
 * --capture-dir: the snapshot goes into a window's file as blocks of its
 * own (ksnap.h), compressed harder than the capture's; while the kernel's
 * symbols do not change (ksyms_unchanged), the next windows' files get
 * the same blocks, and /proc/kallsyms is not read again (~50 ms of CPU).
 */
static void send_ksyms(struct coll *c)
{
	bool to_cap = c->capdir && c->cap && !c->only;

	if (!to_cap) {
		ksyms_read(c);
	} else if (c->cap_only && ksyms_unchanged(c)) {
		if (coll_ksnap__write(c->ksnap, c->cap))
			lp_debug("kallsyms: the snapshot's blocks did not all go to %s",
				 c->cap_name);
		c->ksnap_reused++;
	} else {
		ksyms_build(c);
	}
}

/* Reads /proc/kallsyms and sends the snapshot's records (send_ksyms). 0 or -errno. */
static int ksyms_read(struct coll *c)
{
	struct ksym_send ks = {c, calloc(1, sizeof(*ks.ch)), 0, 0};
	int err = 0;

	if (!ks.ch) {
		lp_warn("kallsyms: %s; the kernel symbol snapshot is empty", strerror(ENOMEM));
		return -ENOMEM;
	}
	if (c->ktext)
		err = kallsyms_scan(c, ksym_send_one, &ks);
	if (err)
		lp_warn("kallsyms: reading it again: %s; the snapshot is incomplete",
			strerror(-err));
	/* the last chunk (possibly empty) completes the snapshot */
	ksym_chunk_send(c, ks.ch, ks.seq++, true);
	free(ks.ch);
	lp_debug("kallsyms: %u text symbols in %u records", ks.total, ks.seq);
	return err;
}

/* uname -r, for messages */
static const char *kernel_release(void)
{
	static struct utsname u;

	return uname(&u) ? "unknown" : u.release;
}

static int open_perf_event(uint32_t cpu, uint32_t freq)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = freq,
		.freq = 1,
	};

	return (int)syscall(__NR_perf_event_open, &attr, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Opens and loads the skeleton, with BTF-enabled or raw exec/exit tracepoints. */
static int load_skel(struct coll *c, bool raw)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = coll_btf__path(&c->btf));
	const struct coll_opts *o = c->o;
	int err;

	c->skel = profile_bpf__open_opts(&oo);
	if (!c->skel) {
		err = -errno;
		lp_err("bpf: opening the BPF object: %s", strerror(-err));
		return err;
	}
	c->skel->rodata->filter_pids = o->npids > 0;
	c->skel->rodata->filter_cgroups = (uint32_t)o->ncgroups;
	c->skel->rodata->stack_bytes = o->stack_bytes;
	c->skel->rodata->exclude_self = !o->include_self;
	c->skel->rodata->self_uid = coll_self_uid(o);
	c->bpf_ring_bytes = coll_bpf_ring_size(sizing_cpus(c), o->freq_hz, o->drain_ms,
					       o->stack_bytes, o->off_cpu);
	c->skel->rodata->wake_bytes = c->bpf_ring_bytes / 2;
	/* indexed by CPU id: highest online id + 1, never the possible CPUs */
	bpf_map__set_max_entries(c->skel->maps.scratch, c->cpus[c->ncpus - 1] + 1);
	bpf_map__set_max_entries(c->skel->maps.events, (uint32_t)c->bpf_ring_bytes);
	bpf_map__set_max_entries(c->skel->maps.pids, o->npids ? (uint32_t)o->npids : 1);
	bpf_map__set_max_entries(c->skel->maps.cgroups, o->ncgroups ? (uint32_t)o->ncgroups : 1);
	coll_features__apply_profile(&c->feat, c->skel, raw);
	if ((err = coll_btf__prepare(&c->btf, c->skel->obj)))
		return err;
	return profile_bpf__load(c->skel);
}

/*
 * The off-CPU programs (--off-cpu), sharing profile's events ring and pid
 * filter (bpf_map__reuse_fd before load). sched_switch is tp_btf only: the
 * off-CPU path needs BTF task pointers (task storage of next,
 * bpf_get_task_stack) that a raw tracepoint's arguments are not.
 */
static int load_offcpu_with(struct coll *c)
{
	LIBBPF_OPTS(bpf_object_open_opts, oo, .btf_custom_path = coll_btf__path(&c->btf));
	const struct coll_opts *o = c->o;
	uint32_t max_id = c->cpus[c->ncpus - 1] + 1;
	struct offcpu_bpf *off;
	int err;

	c->off = off = offcpu_bpf__open_opts(&oo);
	if (!off) {
		err = -errno;
		lp_err("bpf: opening the off-CPU BPF object: %s", strerror(-err));
		return err;
	}
	off->rodata->filter_pids = o->npids > 0;
	off->rodata->filter_cgroups = (uint32_t)o->ncgroups;
	off->rodata->stack_bytes = o->stack_bytes;
	off->rodata->exclude_self = !o->include_self;
	off->rodata->self_uid = coll_self_uid(o);
	off->rodata->wake_bytes = c->bpf_ring_bytes / 2;
	off->rodata->mode = o->off_cpu_mode == COLL_OFFCPU_TIME ? LP_OFFCPU_TIME : LP_OFFCPU_EVENT;
	/* rate * 2^32, the comparison bpf_get_prandom_u32() < threshold */
	off->rodata->rate_threshold = o->off_cpu_rate >= 1
					      ? LP_OFFCPU_ALWAYS
					      : (uint64_t)(o->off_cpu_rate * 4294967296.0 + 0.5);
	off->rodata->min_ns = o->off_cpu_min_ns;
	off->rodata->period_ns = o->off_cpu_period_ns;
	/* by CPU id: highest online id + 1, never the possible CPUs */
	bpf_map__set_max_entries(off->maps.scratch, max_id);
	bpf_map__set_max_entries(off->maps.counts, max_id);
	bpf_map__set_max_entries(off->maps.pending, coll_offcpu_pending_size(sizing_cpus(c)));
	err = coll_features__apply_offcpu(&c->feat, off, c->skel,
					  o->off_cpu_mode == COLL_OFFCPU_TIME ||
						  o->off_cpu_rate <=
							  COLL_OFFCPU_TASK_WORK_MAX_RATE);
	if (err) {
		lp_err("bpf: sharing the ring, pid filter and stack tops with the off-CPU "
		       "programs: %s",
		       strerror(-err));
		return err;
	}
	err = coll_btf__prepare(&c->btf, off->obj);
	return err ? err : offcpu_bpf__load(off);
}

/*
 * Whether this process may load BPF programs at all (CAP_BPF and
 * CAP_PERFMON, or CAP_SYS_ADMIN, effective): with them, EPERM or EACCES
 * from a load is the verifier refusing a program, not a missing privilege.
 */
static bool can_load_bpf(void)
{
	cap_flag_value_t bpf = CAP_CLEAR, perfmon = CAP_CLEAR, admin = CAP_CLEAR;
	cap_t caps = cap_get_proc();

	if (!caps)
		return false;
	cap_get_flag(caps, CAP_BPF, CAP_EFFECTIVE, &bpf);
	cap_get_flag(caps, CAP_PERFMON, CAP_EFFECTIVE, &perfmon);
	cap_get_flag(caps, CAP_SYS_ADMIN, CAP_EFFECTIVE, &admin);
	cap_free(caps);
	return (bpf == CAP_SET && perfmon == CAP_SET) || admin == CAP_SET;
}

/* A load failed for want of privileges (not a kernel that refuses the program). */
static bool perm_error(int err)
{
	return err == -ENOSYS || ((err == -EPERM || err == -EACCES) && !can_load_bpf());
}

/*
 * Loading with the minimal BTF failed (a kernel that the identity check
 * let through, a libbpf that treats our tp_btf handler differently): once
 * more with the full kernel BTF, for this object and the ones after it.
 */
static bool retry_full_btf(struct coll *c, int err, const char *what)
{
	if (!err || perm_error(err) || !coll_btf__path(&c->btf))
		return false;
	lp_debug("btf: loading the %s with the minimal kernel BTF failed (%s); using the full "
		 "kernel BTF",
		 what, strerror(-err));
	coll_btf__use_full(&c->btf);
	return true;
}

/*
 * After a refused off-CPU load (err) that needed feature f: loads again
 * without it, saying why (what: what is done instead). Returns the new
 * load's result, or err when f was not in use.
 */
static int load_offcpu_without(struct coll *c, int err, enum coll_feature f, bool used,
			       const char *why, const char *what)
{
	if (!err || perm_error(err) || !c->feat.have[f] || !used)
		return err;
	lp_debug("bpf: the off-CPU programs with %s were refused (%s); %s", why, strerror(-err),
		 what);
	offcpu_bpf__destroy(c->off);
	c->off = NULL;
	coll_features__lack(&c->feat, f);
	return load_offcpu_with(c);
}

/*
 * The off-CPU programs, with BPF task work and sched_switch's prev_state
 * argument first: a kernel before 5.18 refuses the program that reads it
 * (the verifier checks the argument's index against the tracepoint's BTF),
 * and the next attempt reads the state from the task instead
 * (no-switch-state); a kernel that names the task work kfuncs but refuses
 * their use gets sys_exit instead (no-task-work). The minimal BTF gets its
 * own retry, with the full one.
 */
static int load_offcpu(struct coll *c)
{
	int err;

	quiet_libbpf = c->feat.have[COLL_F_SWITCH_STATE];
	err = load_offcpu_with(c);
	if (retry_full_btf(c, err, "off-CPU programs")) {
		offcpu_bpf__destroy(c->off);
		c->off = NULL;
		err = load_offcpu_with(c);
	}
	quiet_libbpf = false;
	err = load_offcpu_without(c, err, COLL_F_TASK_WORK,
				  c->off && bpf_program__autoload(c->off->progs.offcpu_switch_tw),
				  "BPF task work", "emitting at system call exits");
	err = load_offcpu_without(c, err, COLL_F_SWITCH_STATE, true, "sched_switch's prev_state",
				  "reading the state from the task");
	if (!err)
		lp_debug("bpf: off-CPU: sampled blocks go out %s",
			 bpf_program__autoload(c->off->progs.offcpu_switch_tw)
				 ? "from a BPF task work (no sys_exit program)"
				 : "at system call exits (raw_tp/sys_exit)");
	if (err)
		lp_err("bpf: loading the off-CPU programs: %s%s", strerror(-err),
		       perm_error(err) ? " (needs CAP_BPF and CAP_PERFMON, or root)"
				       : " (the kernel refused them: the verifier's log is above)");
	return err;
}

/* memlock: of a map or program fd, from /proc/self/fdinfo; 0 if not shown */
static uint64_t fd_memlock(int fd)
{
	char path[64], *buf, *p;
	uint64_t v = 0;
	size_t len;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	if (coll_read_file(path, 1 << 16, &buf, &len))
		return 0;
	p = strstr(buf, "memlock:");
	if (p)
		v = strtoull(p + 8, NULL, 10);
	free(buf);
	return v;
}

/*
 * BPF memory in use after load: every map's and program's memlock (the
 * kernel's own accounting). Task storage reports its map only, not the
 * per-task entries (~300 bytes per task that blocked, see offcpu.bpf.c).
 */
static uint64_t obj_mem(const struct bpf_object *obj, const struct bpf_map *shared1,
			const struct bpf_map *shared2)
{
	const struct bpf_program *prog = NULL;
	const struct bpf_map *map = NULL;
	uint64_t sum = 0;

	while ((map = bpf_object__next_map(obj, map)))
		if (map != shared1 && map != shared2)
			sum += fd_memlock(bpf_map__fd(map));
	while ((prog = bpf_object__next_program(obj, (struct bpf_program *)prog)))
		if (bpf_program__fd(prog) >= 0) /* not loaded: autoload off */
			sum += fd_memlock(bpf_program__fd(prog));
	return sum;
}

static uint64_t bpf_mem(struct coll *c)
{
	uint64_t sum = obj_mem(c->skel->obj, NULL, NULL);

	/* the off-CPU object's ring, filters and self set are profile's (reused fds) */
	if (c->off)
		sum += obj_mem(c->off->obj, c->off->maps.events, c->off->maps.pids) -
		       fd_memlock(bpf_map__fd(c->off->maps.cgroups)) -
		       fd_memlock(bpf_map__fd(c->off->maps.self_tgids));
	return sum;
}

/*
 * The BPF ring's wakeups, without its readiness: the ring's fd polls ready
 * whenever it holds any record, but the programs wake it only once it is
 * half full (lp_rb_flags in shared.bpf.h). An edge-triggered epoll reports
 * just those wakeups, so the collector can nap for COLL_IDLE_DRAIN_MS at low
 * rates and still drain at once when the ring fills. -1 if that cannot be
 * set up: the collector then drains every --drain-ms, as the ring is sized.
 */
static int wake_watch(int map_fd)
{
	struct epoll_event ev = {.events = EPOLLIN | EPOLLET};
	int fd = epoll_create1(EPOLL_CLOEXEC);

	if (fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, map_fd, &ev)) {
		lp_warn("bpf: watching the ring's wakeups: %m; draining every --drain-ms");
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static int load_bpf(struct coll *c)
{
	const struct coll_opts *o = c->o;
	int err;

	if ((err = lp_check_kernel_btf()))
		return err;
	err = coll_features__probe(&c->feat);
	if (err)
		return err;
	coll_features__log(&c->feat);
	if (!c->feat.have[COLL_F_PROCMAP_QUERY])
		coll_procs_no_build_ids();
	coll_btf__init(&c->btf, o->full_btf);
	/*
	 * tp_btf first; where the kernel refuses BTF-enabled tracepoints (but
	 * still relocates CO-RE), the raw tracepoints do the same job.
	 */
	err = load_skel(c, false);
	if (retry_full_btf(c, err, "BPF programs")) {
		profile_bpf__destroy(c->skel);
		c->skel = NULL;
		err = load_skel(c, false);
	}
	if (err && !perm_error(err) && c->skel) {
		lp_debug("bpf: tp_btf programs refused (%s); trying raw_tp", strerror(-err));
		profile_bpf__destroy(c->skel);
		c->skel = NULL;
		err = load_skel(c, true);
	}
	if (err) {
		if (perm_error(err) && err != -ENOSYS)
			lp_err("bpf: loading the BPF programs: %s (needs CAP_BPF and "
			       "CAP_PERFMON, or root)",
			       strerror(-err));
		else if (err == -EPERM || err == -EACCES)
			lp_err("bpf: loading the BPF programs: %s: the kernel's verifier refused "
			       "them (its log is above; please report it with the kernel "
			       "version, %s)",
			       strerror(-err), kernel_release());
		else if (err == -ENOSYS)
			lp_err("bpf: the kernel has no BPF support (bpf() returned ENOSYS)");
		else
			lp_err("bpf: loading the BPF programs: %s", strerror(-err));
		return err;
	}
	if (o->off_cpu && (err = load_offcpu(c)))
		return err;
	c->nfallbacks = coll_features__fallbacks(&c->feat, c->o->off_cpu, c->fallbacks);
	c->bpf_mem_bytes = bpf_mem(c);
	lp_debug("bpf: %llu bytes of BPF memory (maps and programs); peak RSS after loading %lu "
		 "KiB",
		 (unsigned long long)c->bpf_mem_bytes, coll_peak_rss_kib());
	for (size_t i = 0; i < o->npids; i++) {
		uint32_t pid = (uint32_t)o->pids[i];
		uint8_t one = 1;

		if (bpf_map__update_elem(c->skel->maps.pids, &pid, sizeof(pid), &one, sizeof(one),
					 BPF_ANY)) {
			err = -errno;
			lp_err("bpf: pid filter: %s", strerror(-err));
			return err;
		}
	}
	for (uint32_t i = 0; i < o->ncgroups; i++) {
		int fd = c->cgroup_fds[i];

		if (bpf_map__update_elem(c->skel->maps.cgroups, &i, sizeof(i), &fd, sizeof(fd),
					 BPF_ANY)) {
			err = -errno;
			lp_err("bpf: cgroup filter: %s", strerror(-err));
			return err;
		}
	}
	c->rb = ring_buffer__new(bpf_map__fd(c->skel->maps.events), on_bpf_event, c, NULL);
	if (!c->rb) {
		err = -errno;
		lp_err("bpf: ring buffer: %s", strerror(-err));
		return err;
	}
	c->wake_fd = wake_watch(bpf_map__fd(c->skel->maps.events));
	return 0;
}

static int attach_bpf(struct coll *c)
{
	struct bpf_program *tps[3];
	int err, ntps;

	c->pfds = calloc(c->ncpus, sizeof(*c->pfds));
	c->links = calloc(c->ncpus + 5, sizeof(*c->links));
	if (!c->pfds || !c->links)
		return -ENOMEM;
	for (int i = 0; i < c->ncpus; i++)
		c->pfds[i] = -1;
	for (int i = 0; i < c->ncpus; i++) {
		int fd = open_perf_event(c->cpus[i], c->o->freq_hz);

		if (fd < 0) {
			err = -errno;
			if (err == -ENODEV) /* went offline since we listed it */
				continue;
			lp_err("perf: cpu-clock event on CPU %u: %s%s", c->cpus[i], strerror(-err),
			       (err == -EACCES || err == -EPERM) ? " (needs CAP_PERFMON or root)"
								 : "");
			return err;
		}
		c->pfds[i] = fd;
		c->links[c->nlinks] =
			bpf_program__attach_perf_event(c->skel->progs.on_cpu_sample, fd);
		if (!c->links[c->nlinks]) {
			err = -errno;
			lp_err("bpf: attaching to CPU %u: %s", c->cpus[i], strerror(-err));
			return err;
		}
		c->nlinks++;
	}
	tps[0] = bpf_program__autoload(c->skel->progs.on_exec) ? c->skel->progs.on_exec
							       : c->skel->progs.on_exec_raw;
	tps[1] = bpf_program__autoload(c->skel->progs.on_exit) ? c->skel->progs.on_exit
							       : c->skel->progs.on_exit_raw;
	/* new threads' stack tops (tp_btf only, like task storage) */
	tps[2] = c->skel->progs.on_fork;
	ntps = bpf_program__autoload(tps[2]) ? 3 : 2;
	for (int i = 0; i < ntps; i++) {
		c->links[c->nlinks] = bpf_program__attach(tps[i]);
		if (!c->links[c->nlinks]) {
			err = -errno;
			lp_err("bpf: attaching %s: %s", bpf_program__name(tps[i]), strerror(-err));
			return err;
		}
		c->nlinks++;
	}
	if (!c->off)
		return 0;
	/* with task work, sched_switch alone (kfeatures.h) */
	tps[0] = bpf_program__autoload(c->off->progs.offcpu_switch_tw)
			 ? c->off->progs.offcpu_switch_tw
			 : c->off->progs.offcpu_switch;
	tps[1] = c->off->progs.offcpu_sys_exit;
	ntps = bpf_program__autoload(tps[1]) ? 2 : 1;
	for (int i = 0; i < ntps; i++) {
		c->links[c->nlinks] = bpf_program__attach(tps[i]);
		if (!c->links[c->nlinks]) {
			err = -errno;
			lp_err("bpf: attaching %s: %s", bpf_program__name(tps[i]), strerror(-err));
			return err;
		}
		c->nlinks++;
	}
	return 0;
}

/*
 * Sampled blocks still waiting for their task's syscall exit when the
 * programs are detached (a task that neither blocked nor made a syscall
 * again): lost, and counted as such.
 */
static uint64_t offcpu_leftovers(struct coll *c)
{
	uint32_t key, next;
	uint64_t n = 0;
	void *prev = NULL;

	if (!c->off)
		return 0;
	while (!bpf_map__get_next_key(c->off->maps.pending, prev, &next, sizeof(next))) {
		n++;
		key = next;
		prev = &key;
	}
	return n;
}

static void detach_bpf(struct coll *c)
{
	for (size_t i = 0; i < c->nlinks; i++)
		bpf_link__destroy(c->links[i]);
	c->nlinks = 0;
	if (c->pfds) {
		for (int i = 0; i < c->ncpus; i++)
			if (c->pfds[i] >= 0)
				close(c->pfds[i]);
		free(c->pfds);
		c->pfds = NULL;
	}
}

static void coll_cleanup(struct coll *c)
{
	coll_sideband__free(c->sb);
	c->sb = NULL;
	detach_bpf(c);
	free(c->links);
	ring_buffer__free(c->rb);
	if (c->wake_fd >= 0)
		close(c->wake_fd);
	offcpu_bpf__destroy(c->off);
	profile_bpf__destroy(c->skel);
	coll_btf__free(&c->btf); /* after the objects: they point at its tp_btf handler */
	coll_capture__free(c->cap);
	if (c->capture_fd >= 0)
		close(c->capture_fd);
	if (c->capdir && c->closing)
		coll_capdir__publish(c->capdir, c->closing_name, false);
	if (c->capdir && c->cap)
		coll_capdir__publish(c->capdir, c->cap_name, false);
	coll_capture__free(c->closing);
	if (c->closing_fd >= 0)
		close(c->closing_fd);
	coll_capdir__free(c->capdir);
	if (c->listen_fd >= 0)
		close(c->listen_fd);
	if (c->sock_created)
		unlink(c->o->ring_path);
	for (uint32_t k = 0; k < c->nsh; k++) {
		struct coll_shard *sh = &c->sh[k];
		/* inherited ones (--ring-fd) are closed too: nothing else uses them here */

		lp_ring__free(sh->ring);
		if (sh->mem)
			munmap(sh->mem, sh->mem_size);
		if (sh->ring_fd >= 0)
			close(sh->ring_fd);
		if (sh->cons_fd >= 0)
			close(sh->cons_fd);
		if (sh->files_fd >= 0)
			close(sh->files_fd);
	}
	/* idle workers exit; stuck ones are left in the kernel, to die when they return */
	coll_broker__free(c->broker);
	if (c->kallsyms_fd >= 0)
		close(c->kallsyms_fd);
	if (c->modules_fd >= 0)
		close(c->modules_fd);
	coll_ksnap__free(c->ksnap);
	coll_ksnap__free(c->ksnap_build);
	coll_procs_free(&c->procs);
	coll_cgroups__free(c->cgroups);
	for (int i = 0; i < LP_MAX_CGROUPS; i++)
		if (c->cgroup_fds[i] >= 0)
			close(c->cgroup_fds[i]);
	free(c->noted);
	lps_enc_free(&c->dyn);
	free(c->cpus);
}

/*
 * The cgroup table (the samples' cgroup paths) and the --cgroup filter's
 * directories, opened before anything loads: a wrong one is an error now.
 */
_Static_assert(COLL_MAX_CGROUPS == LP_MAX_CGROUPS, "the filter map holds every --cgroup");

/* Side-band buffer per CPU: 1.5 s of a busy CPU's execs (each ~15 events of ~150 bytes) */
#define SIDEBAND_BYTES_PER_CPU (64u << 10)

/*
 * The kernel's mmap, exec and fork events, before any sample: without
 * them (a kernel or policy that refuses a system-wide dummy event) a
 * process's mappings come from /proc/PID/maps alone, read when it is
 * first sampled, which a process that lived a few milliseconds escapes.
 */
static void open_sideband(struct coll *c)
{
	c->sb = coll_sideband__new(c->cpus, c->ncpus, SIDEBAND_BYTES_PER_CPU, c->wake_fd);
	if (c->sb) {
		c->sb_upto = lp_clock_ns(CLOCK_MONOTONIC);
		return;
	}
	lp_warn("perf: mmap events: %m; mappings come from /proc/PID/maps alone, so processes "
		"that end within a drain interval are not symbolized");
	if (c->nfallbacks < LPS_MAX_FALLBACKS)
		c->fallbacks[c->nfallbacks++] = (struct lps_str){"no-mmap-events", 14};
}

static int open_cgroups(struct coll *c)
{
	const struct coll_opts *o = c->o;

	c->cgroups = coll_cgroups__new();
	if (!c->cgroups)
		return -ENOMEM;
	if (!coll_cgroups__root(c->cgroups))
		lp_info("cgroups: no cgroup v2 hierarchy: samples carry no cgroup path");
	if (o->ncgroups > LP_MAX_CGROUPS) {
		lp_err("at most %d --cgroup options", LP_MAX_CGROUPS);
		return -E2BIG;
	}
	for (size_t i = 0; i < o->ncgroups; i++) {
		c->cgroup_fds[i] = coll_cgroups__open_dir(c->cgroups, o->cgroups[i]);
		if (c->cgroup_fds[i] < 0) {
			int err = c->cgroup_fds[i];

			c->cgroup_fds[i] = -1;
			return err;
		}
	}
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa = {.sa_sigaction = on_signal, .sa_flags = SA_SIGINFO};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/*
 * New symbolizers on the rings in mask (bits; SIGUSR1 from lowprof record,
 * or one that connected to --ring PATH), or with capture_only a new
 * capture file (--capture-dir). They know nothing of the run: send the
 * metadata, the kernel symbols and the mappings of every process seen
 * again; a symbolizer skips what it reads before the metadata. For rings:
 * not into the capture, which has them, nor into the other rings; what the
 * JIT files of the rings' processes hold goes again from offset 0, the way
 * of those records (its ring, and the capture, where a chunk at 0 starts
 * the file over). For a capture file: the metadata, kernel symbols and
 * vDSO go to the file alone; mappings and perf maps (from offset 0) to
 * every ring as well, so that the collector's idea of what the rings know
 * stays true.
 */
static void resend_state(struct coll *c, uint32_t mask, bool capture_only)
{
	uint32_t *pids;
	uint32_t n = 0;

	mask &= c->nsh >= 32 ? ~0u : (1u << c->nsh) - 1;
	if (!mask && !capture_only)
		return;
	if (!capture_only)
		send_perfmaps(c);
	for (uint32_t k = 0; k < c->nsh; k++)
		if (mask & (1u << k))
			c->sh[k].stalled = false; /* a new consumer: worth waiting for again */
	if (c->cgroups)
		coll_cgroups__resend_all(c->cgroups);
	c->only = mask;
	c->cap_only = capture_only;
	send_meta(c);
	send_ksyms(c);
	c->cap_only = false;
	pids = malloc(sizeof(*pids) * (c->procs.count ? c->procs.count : 1));
	if (!pids) {
		c->maps_errors += c->procs.count;
		c->only = 0;
		return;
	}
	/* send_maps adds to the table: collect the pids first */
	for (uint32_t i = 0; i < c->procs.cap; i++) {
		struct coll_proc *p = &c->procs.slots[i];

		if (!p->used)
			continue;
		pids[n++] = p->pid;
		/* a new capture file: every process's (and with no ring, nsh is 0) */
		if (capture_only || (mask & (1u << lp_shard_of(p->pid, c->nsh))))
			coll_perfmap_forget(p); /* sent again, whole */
	}
	for (uint32_t i = 0; i < n; i++)
		send_maps(c, pids[i], 0, WAIT_RUN_MS);
	free(pids);
	c->only = 0;
	if (capture_only)
		lp_debug("capture: metadata, kernel symbols and %u processes' mappings sent to %s",
			 n, c->cap_name);
	else if (c->nsh > 1)
		lp_info("a new symbolizer on shard(s) 0x%x: metadata, kernel symbols and %u "
			"processes' mappings sent again",
			mask, n);
	else
		lp_info("a new symbolizer: metadata, kernel symbols and %u processes' mappings "
			"sent again",
			n);
}

static const char *capture_name(const struct coll *c)
{
	if (c->capdir)
		return c->cap_name;
	return c->o->capture_path ? c->o->capture_path : "the capture file";
}

/* --capture-dir: the directory, checked now; the first window's file comes with the meta. */
static int open_capture_dir(struct coll *c)
{
	const struct coll_opts *o = c->o;
	int err = coll_capdir__new(o->capture_dir, o->capture_bytes, &c->capdir);

	if (err)
		lp_err("capture: directory %s: %s", o->capture_dir,
		       err == -ELOOP   ? "a symbolic link in its path"
		       : err == -EPERM ? "another user's, or writable by others and not sticky"
				       : strerror(-err));
	c->rot_ns = (uint64_t)o->capture_rotate_s * 1000000000ull;
	return err;
}

/* --capture-dir: the file of the window that starts at c->rot_real, and its writer. */
static int open_window_file(struct coll *c)
{
	int fd = coll_capdir__create(c->capdir, c->rot_real, c->cap_name), err;

	if (fd < 0) {
		lp_err("capture: creating %s: %s", c->cap_name, strerror(-fd));
		return fd;
	}
	err = coll_capture__new(fd, c->o->capture_compress, &c->cap);
	if (err) {
		lp_err("capture: starting %s: %s", capture_name(c), strerror(-err));
		close(fd);
		coll_capdir__publish(c->capdir, c->cap_name, false);
		return err;
	}
	c->capture_fd = fd;
	c->capture_failed = false;
	return 0;
}

/*
 * --capture PATH (created 0600: it holds copies of processes' stacks; as
 * the outputs are, never through a symlink anywhere in PATH, never into a
 * hard-linked or another user's file, truncated only once it is checked)
 * or an inherited --capture-fd.
 */
static int open_capture(struct coll *c)
{
	const struct coll_opts *o = c->o;
	int fd = o->capture_fd, err;

	if (o->capture_dir)
		return open_capture_dir(c);
	if (o->capture_path) {
		fd = lp_open_output_path(o->capture_path, 0600, NULL);
		if (fd < 0) {
			err = fd;
			lp_err("capture: %s: %s", o->capture_path,
			       err == -ELOOP	? "a symbolic link in its path"
			       : err == -EINVAL ? "not a regular file with a single link"
			       : err == -EPERM	? "a file of another user"
						: strerror(-err));
			return err;
		}
		c->capture_fd = fd;
	}
	err = coll_capture__new(fd, o->capture_compress, &c->cap);
	if (err)
		lp_err("capture: starting %s: %s", capture_name(c), strerror(-err));
	return err;
}

/* What a finished capture holds. */
static void say_capture(struct coll_capture *cap, const char *name, enum lp_log_level level)
{
	struct coll_capture_stats cs;

	coll_capture__stats(cap, &cs);
	lp_log(level,
	       "capture: %llu records, %.1f MiB in %s (%.1f MiB of records, %llu of %llu "
	       "blocks zstd), %llu records dropped",
	       (unsigned long long)cs.records, cs.file_bytes / 1048576.0, name,
	       cs.record_bytes / 1048576.0, (unsigned long long)cs.zstd_blocks,
	       (unsigned long long)cs.blocks, (unsigned long long)cs.dropped_records);
}

/* A window's file, finished (err: how): renamed to its final name, or removed. */
static void publish_window(struct coll *c, const char *name, int err)
{
	err = coll_capdir__publish(c->capdir, name, !err) ?: err;
	if (err)
		lp_err("capture: %s not kept: %s", name, strerror(-err));
}

/*
 * Writes the capture's last block and says what it holds. A window's
 * file of --capture-dir is then closed and, if it was written whole,
 * renamed to its final name.
 */
static void finish_capture(struct coll *c)
{
	int err = coll_capture__finish(c->cap);

	if (err && !c->capture_failed)
		lp_err("capture: writing %s: %s", capture_name(c), strerror(-err));
	say_capture(c->cap, capture_name(c), LP_LOG_INFO);
	if (!c->capdir)
		return;
	coll_capture__free(c->cap);
	c->cap = NULL;
	close(c->capture_fd);
	c->capture_fd = -1;
	publish_window(c, c->cap_name, err);
}

/*
 * The last window's file, once its data sync is done (wait: now; else
 * only if it is): said with -v, and renamed to its final name (removed
 * when a write failed).
 */
static void end_closing(struct coll *c, bool wait)
{
	int err = 0;

	if (!c->closing || coll_capture__finish_poll(c->closing, wait, &err) != 1)
		return;
	if (err)
		lp_err("capture: writing %s: %s", c->closing_name, strerror(-err));
	say_capture(c->closing, c->closing_name, LP_LOG_DEBUG);
	coll_capture__free(c->closing);
	c->closing = NULL;
	close(c->closing_fd);
	c->closing_fd = -1;
	publish_window(c, c->closing_name, err);
}

/*
 * A window's file is complete: its last block and a data sync go to the
 * disk in the background (io_uring), and the drain loop goes on; the file
 * gets its final name once they are done (end_closing). Only if the window
 * before is still not on disk a whole window later does this wait for it.
 */
static void start_closing(struct coll *c)
{
	end_closing(c, true);
	coll_capture__finish_start(c->cap);
	c->closing = c->cap;
	c->closing_fd = c->capture_fd;
	memcpy(c->closing_name, c->cap_name, sizeof(c->closing_name));
	c->cap = NULL;
	c->capture_fd = -1;
}

/*
 * --capture-dir, once a sample's time (or, without samples, the clock)
 * passes the window's end: ends the window's file (loss counters, an end
 * record; its last writes and sync go on in the background: start_closing)
 * and starts the next window's with a snapshot of its own (resend_state),
 * so that each file replays alone. 0 or a negative errno: no capture until
 * the next window then.
 */
static int rotate_capture(struct coll *c)
{
	struct lps_end end = {lp_clock_ns(CLOCK_MONOTONIC), {"rotate", 6}};
	uint64_t t0 = end.time_ns, cpu0 = lp_clock_ns(CLOCK_THREAD_CPUTIME_ID);
	struct coll_capdir_stats ds;
	uint64_t reused = c->ksnap_reused;
	int err;

	if (c->cap) {
		send_loss(c);
		lps_enc_reset(&c->dyn);
		lps_enc_end(&c->dyn, &end);
		c->cap_only = true;
		write_enc(c, &c->dyn, 0);
		c->cap_only = false;
		start_closing(c);
	}
	c->rot_real += (int64_t)c->rot_ns;
	c->meta_mono = c->rot_next;
	c->meta_real = c->rot_real;
	c->rot_next += c->rot_ns;
	err = open_window_file(c);
	if (err) {
		c->meta_mono = 0;
		return err;
	}
	loss_counts(c, &c->loss_base); /* the new file's own: its writer's start at 0 */
	resend_state(c, 0, true);
	coll_capdir__stats(c->capdir, &ds);
	lp_debug("capture: %s started in %.1f ms (%.1f ms of CPU; kernel symbols %s); %.1f MiB of "
		 "windows there, %llu removed by the budget so far",
		 capture_name(c), (lp_clock_ns(CLOCK_MONOTONIC) - t0) / 1e6,
		 (lp_clock_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) / 1e6,
		 c->ksnap_reused > reused ? "copied" : "read", ds.bytes / 1048576.0,
		 (unsigned long long)ds.removed);
	return 0;
}

/* Rotates the capture for every window that ended by time_ns. */
static void rotate_due(struct coll *c, uint64_t time_ns)
{
	while (time_ns >= c->rot_next)
		rotate_capture(c);
}

/*
 * Sleeps ms, taking the symbolizer's file requests as they come (a few at
 * a time: a flood of them cannot keep the BPF ring from being drained).
 * The broker's workers open the files; what it answers here never blocks,
 * and a request that takes too long is answered here when it is due.
 */
/* Shard k's file channel closed: its symbolizer is gone (or never asked). */
static void channel_closed(struct coll *c, uint32_t k, int n)
{
	struct coll_shard *sh = &c->sh[k];

	lp_debug("files: the file channel%s closed (%s)", c->nsh > 1 ? " of a shard" : "",
		 n < 0 ? strerror(-n) : "hang-up");
	coll_broker__detach(c->broker, sh->files_fd);
	close(sh->files_fd);
	sh->files_fd = -1;
	if (c->listen_fd < 0 || c->ending)
		return;
	n = fresh_consumer_page(sh);
	if (n)
		lp_warn("ring: a fresh consumer page: %s; the one that left can still move the "
			"consumer position until the next one attaches",
			strerror(-n));
	if (c->nsh > 1)
		lp_warn("ring: the symbolizer of shard %u is gone; waiting for another on %s "
			"(meanwhile what its ring cannot hold is dropped and counted)",
			k, c->o->ring_path);
	else
		lp_warn("ring: the symbolizer is gone; waiting for another on %s (meanwhile what "
			"the ring cannot hold is dropped and counted)",
			c->o->ring_path);
}

/*
 * Sleeps ms, taking the symbolizers' file requests as they come (a few at
 * a time: a flood of them cannot keep the BPF ring from being drained).
 * The broker's workers open the files; what it answers here never blocks,
 * and a request that takes too long is answered here when it is due.
 */
static void nap_serving(struct coll *c, uint32_t ms)
{
	sig_atomic_t signals = stop_signals;
	uint64_t end = lp_clock_ns(CLOCK_MONOTONIC) + (uint64_t)ms * 1000000;
	/* a negative fd is ignored by poll; the broker's: its workers' answers */
	enum { P_LISTEN, P_WAKE, P_BROKER, P_FILES };
	struct pollfd pfd[P_FILES + LP_MAX_SHARDS];

	for (;;) {
		uint64_t now = lp_clock_ns(CLOCK_MONOTONIC);
		int due = coll_broker__tick(c->broker, now), wait, n, r;
		bool any = !c->ending && (c->listen_fd >= 0 || c->wake_fd >= 0);
		struct epoll_event ev;

		if (now >= end || (c->ending ? stop_signals != signals : stop_signal))
			return;
		wait = (int)((end - now + 999999) / 1000000);
		if (due >= 0 && due < wait)
			wait = due;
		pfd[P_LISTEN] = (struct pollfd){c->ending ? -1 : c->listen_fd, POLLIN, 0};
		pfd[P_WAKE] = (struct pollfd){c->ending ? -1 : c->wake_fd, POLLIN, 0};
		pfd[P_BROKER] = (struct pollfd){coll_broker__fd(c->broker), POLLIN, 0};
		for (uint32_t k = 0; k < c->nsh; k++) {
			pfd[P_FILES + k] = (struct pollfd){c->sh[k].files_fd, POLLIN, 0};
			any |= c->sh[k].files_fd >= 0;
		}
		if (!any && c->ending)
			return; /* every channel closed */
		if (!any) {
			sleep_ms((uint32_t)wait);
			continue;
		}
		n = poll(pfd, P_FILES + c->nsh, wait);
		if (n < 0 && errno == EINTR && !c->ending)
			return; /* the loop looks at the signal */
		if (n <= 0)
			continue;
		if (pfd[P_WAKE].revents) {
			/* the BPF ring is half full: drain now (and re-arm the edge) */
			while (epoll_wait(c->wake_fd, &ev, 1, 0) > 0)
				;
			return;
		}
		for (uint32_t k = 0; k < c->nsh; k++) {
			short rev = pfd[P_FILES + k].revents;

			if (!rev || c->sh[k].files_fd < 0)
				continue;
			r = coll_broker__serve(c->broker, c->sh[k].files_fd, 16);
			if (r < 0 || ((rev & (POLLHUP | POLLERR)) && !(rev & POLLIN)))
				channel_closed(c, k, r);
		}
		/* a new symbolizer in place of one that died: it resumes */
		if (pfd[P_LISTEN].revents && (r = accept_consumer(c)) > 0) {
			lp_info("ring: a new symbolizer attached; sending it the metadata, "
				"kernel symbols and mappings");
			resend_state(c, 1u << (r - 1), false);
		}
	}
}

/*
 * After the end record. The symbolizers are still reading what the rings
 * hold, and a binary first met there may be one only we can open (another
 * user's, another mount namespace's): their file requests are served until
 * each closes its channel (it read the end), for at most END_SERVE_MS, or
 * until one more stop signal (lowprof record's second Ctrl-C). Before, the
 * tail's new binaries were left as bare addresses.
 */
#define END_SERVE_MS 10000

/* The file channels still open */
static uint32_t open_channels(const struct coll *c)
{
	uint32_t open = 0;

	for (uint32_t k = 0; k < c->nsh; k++)
		open += c->sh[k].files_fd >= 0;
	return open;
}

static void serve_the_end(struct coll *c)
{
	uint64_t t0 = lp_clock_ns(CLOCK_MONOTONIC);
	uint32_t open;

	if (!open_channels(c))
		return;
	c->ending = true;
	nap_serving(c, END_SERVE_MS);
	open = open_channels(c);
	lp_log(open ? LP_LOG_INFO : LP_LOG_DEBUG,
	       "files: served the symbolizers' file requests for %.2f s after the end%s",
	       (lp_clock_ns(CLOCK_MONOTONIC) - t0) / 1e9,
	       open ? "; stopped with a file channel still open" : "");
}

/* The rings, for the start-up line: "; 2 rings of 4 MiB (8 MiB)" (static buffer) */
static const char *rings_line(const struct coll *c)
{
	static char line[96];

	if (!c->nsh)
		return "";
	snprintf(line, sizeof(line), "; %u ring%s of %.1f MiB (%.1f MiB)", c->nsh,
		 c->nsh > 1 ? "s" : "", ring_data_size(c) / 1048576.0,
		 ring_data_size(c) * c->nsh / 1048576.0);
	return line;
}

/* Each ring's records at the end (-v), and what it dropped (said when it dropped any). */
static void print_rings(struct coll *c)
{
	for (uint32_t k = 0; k < c->nsh; k++) {
		struct coll_shard *sh = &c->sh[k];
		struct lp_ring_stats rs;

		lp_ring__stats(sh->ring, &rs);
		lp_log(rs.dropped_records && c->nsh > 1 ? LP_LOG_INFO : LP_LOG_DEBUG,
		       "ring: shard %u of %u: %llu records written (%.1f MiB), %llu dropped "
		       "(ring full, %.1f MiB)",
		       k, c->nsh, (unsigned long long)sh->records, sh->bytes / 1048576.0,
		       (unsigned long long)rs.dropped_records, rs.dropped_bytes / 1048576.0);
	}
}

/* The file broker's counts, when it had requests (-v: always). */
static void print_files(struct coll *c)
{
	struct coll_files_stats f;

	coll_broker__stats(c->broker, &f);
	if (!f.sent && !f.failed && !f.refused && !f.refused_pid && !f.busy && !f.timeouts &&
	    lp_log_level() < LP_LOG_DEBUG)
		return;
	lp_info("files: %llu mapped files handed to the symbolizer, %llu not found or replaced, "
		"%llu requests refused (%llu for a process not given with -p), %llu timed out "
		"and %llu refused while workers were stuck (%u stuck at the end, at most %u; "
		"%llu opens returned late)",
		(unsigned long long)f.sent, (unsigned long long)f.failed,
		(unsigned long long)(f.refused + f.refused_pid), (unsigned long long)f.refused_pid,
		(unsigned long long)f.timeouts, (unsigned long long)f.busy, f.stuck, f.stuck_peak,
		(unsigned long long)f.late);
}

/* What the copies of JIT files (perfmap.c) sent: kind "perfmap" or "jitdump". */
static void print_jit_files(const char *kind, const char *files,
			    const struct coll_perfmap_stats *st)
{
	if (st->files || st->refused)
		lp_debug("%s: %llu %s, %llu KiB in %llu records, %llu refused "
			 "(not a regular file of the process's uid, or not named by its pid)",
			 kind, (unsigned long long)st->files, files,
			 (unsigned long long)(st->bytes >> 10), (unsigned long long)st->records,
			 (unsigned long long)st->refused);
	if (st->remote)
		lp_info("%s: %llu processes' %s not read: on a file system that is not local "
			"(FUSE, network): a read could hold the collector",
			kind, (unsigned long long)st->remote, files);
	if (st->capped_files)
		lp_warn("%s: %llu %s over 64 MiB: only their first 64 MiB sent", kind,
			(unsigned long long)st->capped_files, files);
}

static void print_perfmaps(void)
{
	struct coll_perfmap_stats st;

	coll_perfmap_stats(&st);
	print_jit_files("perfmap", "JIT perf maps", &st);
	coll_jitdump_stats(&st);
	print_jit_files("jitdump", "jitdump files", &st);
}

/*
 * The loss counters go out every LOSS_EVERY_NS, the first time before the
 * first drain: a symbolizer's window can only say what was lost once it
 * has a loss record, and a first window shorter than LOSS_EVERY_NS plus
 * the start-up (lowprof run --window 1) would otherwise close without one.
 */
static const char *drain_loop(struct coll *c)
{
	uint64_t start = lp_clock_ns(CLOCK_MONOTONIC), last_loss = start;
	uint64_t deadline = c->o->duration_s > 0 ? start + (uint64_t)(c->o->duration_s * 1e9) : 0;

	send_loss(c);
	for (;;) {
		uint64_t now;
		uint32_t nap = c->wake_fd >= 0 ? COLL_IDLE_DRAIN_MS : c->o->drain_ms;

		if (stop_signal)
			return "signal";
		if (__atomic_load_n(&resend_rings, __ATOMIC_RELAXED))
			resend_state(c, __atomic_exchange_n(&resend_rings, 0, __ATOMIC_RELAXED),
				     false);
		if (deadline) {
			now = lp_clock_ns(CLOCK_MONOTONIC);
			if (now >= deadline)
				return "duration";
			if (deadline - now < (uint64_t)nap * 1000000)
				nap = (uint32_t)((deadline - now) / 1000000) + 1;
		}
		/*
		 * one wakeup of the symbolizer for everything written since the
		 * last (the batch drained below, loss records, metadata)
		 */
		notify_rings(c);
		nap_serving(c, nap);
		drain_sideband(c);
		send_perfmaps(c); /* before the samples that may need them */
		ring_buffer__consume(c->rb);
		now = lp_clock_ns(CLOCK_MONOTONIC);
		tune_early_wraps(c, now);
		/* no sample said the window is over: the clock does, a drain late */
		if (c->capdir && now >= c->rot_next + COLL_IDLE_DRAIN_MS * 1000000ull)
			rotate_due(c, now - COLL_IDLE_DRAIN_MS * 1000000ull);
		if (c->capdir && !c->cap && !c->nsh)
			return "capture-error";
		end_closing(c, false);
		if (c->cap) {
			struct coll_capture_stats cs;

			coll_capture__tick(c->cap, now);
			coll_capture__stats(c->cap, &cs);
			if (cs.err && !c->capture_failed) {
				c->capture_failed = true;
				lp_err("capture: writing %s: %s; %s", capture_name(c),
				       strerror(-cs.err),
				       c->nsh ? "the capture stops here, profiling goes on"
					      : "stopping");
				if (!c->nsh)
					return "capture-error";
			}
		}
		if (now - last_loss >= LOSS_EVERY_NS) {
			send_loss(c);
			last_loss = now;
		}
	}
}

/* Files noted at most; each further note is dropped and counted. */
#define NOTED_MAX 65536

/*
 * Whether the file of note n was noted before; if not, it is now. -ENOSPC
 * beyond NOTED_MAX files, -ENOMEM.
 */
static int noted_once(struct coll *c, const struct lp_file_buildid *n)
{
	uint64_t h = (n->inode ^ ((uint64_t)n->dev_major << 44) ^ ((uint64_t)n->dev_minor << 24)) *
		     0x9e3779b97f4a7c15ull;
	uint32_t i;

	if (c->noted_n >= c->noted_cap / 2) {
		struct noted_file *old = c->noted;
		uint32_t ocap = c->noted_cap, ncap = ocap ? ocap * 2 : 256;

		if (c->noted_n >= NOTED_MAX)
			return -ENOSPC;
		c->noted = calloc(ncap, sizeof(*c->noted));
		if (!c->noted) {
			c->noted = old;
			return -ENOMEM;
		}
		c->noted_cap = ncap;
		c->noted_n = 0;
		for (i = 0; i < ocap; i++)
			if (old[i].inode || old[i].major || old[i].minor)
				noted_once(c, &(struct lp_file_buildid){.dev_major = old[i].major,
									.dev_minor = old[i].minor,
									.inode = old[i].inode});
		free(old);
	}
	for (i = (uint32_t)(h >> 32) & (c->noted_cap - 1);; i = (i + 1) & (c->noted_cap - 1)) {
		struct noted_file *f = &c->noted[i];

		if (f->inode == n->inode && f->major == n->dev_major && f->minor == n->dev_minor &&
		    (f->inode || f->major || f->minor))
			return 1;
		if (!f->inode && !f->major && !f->minor) {
			*f = (struct noted_file){n->inode, n->dev_major, n->dev_minor};
			c->noted_n++;
			return 0;
		}
	}
}

/*
 * The symbolizer's build-id note for a mapped file (lowprof/files.h): into
 * the capture file only (the symbolizer knows it), once per file, marked as
 * the symbolizer's. The symbolizer sends one only for a file whose mapping
 * came without a build-id (no PROCMAP_QUERY, a file system without a block
 * device, which is not asked, a query that failed), and a replay takes a
 * note only for such a mapping: never in place of the kernel's.
 */
static void note_buildid(void *ctx, const struct lp_file_buildid *n)
{
	struct coll *c = ctx;
	struct lps_buildid b = {
		.time_ns = lp_clock_ns(CLOCK_MONOTONIC),
		.dev_major = n->dev_major,
		.dev_minor = n->dev_minor,
		.inode = n->inode,
		.build_id = {(const char *)n->id, n->len},
		.source = {"symbolizer", 10},
	};
	long len;
	int r;

	if (!c->cap)
		return;
	r = noted_once(c, n);
	if (r) {
		c->notes_dropped += r < 0;
		return;
	}
	lps_enc_reset(&c->dyn);
	lps_enc_buildid(&c->dyn, &b);
	len = lps_enc_len(&c->dyn);
	if (len > 0)
		coll_capture__write(c->cap, c->dyn.buf, (uint32_t)len);
}

int coll_run(const struct coll_opts *o)
{
	struct coll c = {
		.o = o,
		.wake_fd = -1,
		.listen_fd = -1,
		.kallsyms_fd = -1,
		.modules_fd = -1,
		.capture_fd = -1,
		.closing_fd = -1,
		.btf = {.fd = -1},
	};
	struct lps_end end;
	const char *reason;
	int err;

	if (LP_OPTS_CHECK(o, coll_opts, ncgroups))
		return 1;
	for (int i = 0; i < LP_MAX_CGROUPS; i++)
		c.cgroup_fds[i] = -1;
	install_signals();
	if (o->exit_with_parent && lp_exit_with_parent(o->parent))
		return 1;
	libbpf_set_print(libbpf_print);
	lps_enc_init_dynamic(&c.dyn);
	c.cpus = calloc(LP_MAX_CPUS, sizeof(*c.cpus));
	if (!c.cpus) {
		err = -ENOMEM;
		goto err_out;
	}
	err = open_cgroups(&c);
	if (err)
		goto err_out;
	c.ncpus = lp_online_cpus(c.cpus, LP_MAX_CPUS);
	if (c.ncpus <= 0) {
		err = c.ncpus ? c.ncpus : -ENODEV;
		lp_err("cpus: reading /sys/devices/system/cpu/online: %s", strerror(-err));
		goto err_out;
	}
	if (o->nring_fds || o->ring_path) {
		err = open_rings(&c);
		if (err)
			goto err_out;
	}
	/* no worker yet: they are forked on the first request, in the drain loop */
	c.broker = coll_broker__new(&(struct coll_broker_opts){.owner = o->ring_uid,
							       .pids = o->pids,
							       .npids = o->npids,
							       .buildid = note_buildid,
							       .ctx = &c});
	if (!c.broker) {
		err = -errno;
		lp_err("files: %m");
		goto err_out;
	}
	if (o->capture_fd >= 0 || o->capture_path || o->capture_dir) {
		err = open_capture(&c);
		if (err)
			goto err_out;
	}
	err = load_bpf(&c);
	if (err)
		goto err_out;
	coll_self_init(bpf_map__fd(c.skel->maps.self_tgids), o);
	if (c.listen_fd >= 0) {
		err = ring_handoff(&c);
		if (err == -EINTR) { /* stopped before any symbolizer came */
			coll_cleanup(&c);
			return 0;
		}
		if (err) {
			lp_err("ring: waiting for a symbolizer: %s", strerror(-err));
			goto err_out;
		}
	}
	open_sideband(&c);
	open_kallsyms(&c);
	if (c.capdir) {
		/* the first window starts with the run: the meta's start */
		c.rot_real = (int64_t)lp_clock_ns(CLOCK_REALTIME);
		c.meta_mono = lp_clock_ns(CLOCK_MONOTONIC);
		c.meta_real = c.rot_real;
		c.rot_next = c.meta_mono + c.rot_ns;
		err = open_window_file(&c);
		if (err)
			goto err_out;
	}
	send_meta(&c);
	for (size_t i = 0; i < o->npids; i++)
		send_maps(&c, (uint32_t)o->pids[i], 0, WAIT_START_MS);
	coll_self_walk(bpf_map__fd(c.skel->maps.self_tgids), o);
	err = attach_bpf(&c);
	if (err)
		goto err_out;
	coll_self_walk(bpf_map__fd(c.skel->maps.self_tgids), o);
	self_changed(&c);
	/*
	 * The kernel symbols after attaching: reading /proc/kallsyms is most
	 * of the start-up (~50 ms here), and sampling need not wait for it.
	 * The first samples wait in the BPF ring, sized for a drain interval
	 * (a window's rotation pauses the drain loop as long); the drain loop
	 * starts after the snapshot, so in the stream it still comes first.
	 * The snapshot is still the start-up burst for the ring (started
	 * false until it is sent): it waits for the symbolizer within the
	 * ring's first eighth rather than fault in the whole ring.
	 */
	send_ksyms(&c);
	c.started = true;
	tune_early_wraps(&c, lp_clock_ns(CLOCK_MONOTONIC)); /* half the ring, until measured */
	if (!o->keep_caps) {
		err = coll_drop_caps();
		if (err)
			goto err_out;
	}
	lp_info("profiling %s at %u Hz on %d CPUs%s%s%s",
		o->npids ? "the given processes" : "the host", o->freq_hz, c.ncpus,
		o->off_cpu ? ", off-CPU too" : "", o->duration_s > 0 ? "" : " until interrupted",
		rings_line(&c));

	reason = drain_loop(&c);
	/* stop sampling first, then take everything that is still in flight */
	detach_bpf(&c);
	drain_sideband(&c);
	send_perfmaps(&c);
	ring_buffer__consume(c.rb);
	c.off_cpu_left = offcpu_leftovers(&c);
	send_loss(&c);
	end = (struct lps_end){lp_clock_ns(CLOCK_MONOTONIC), {reason, (uint32_t)strlen(reason)}};
	lps_enc_reset(&c.dyn);
	lps_enc_end(&c.dyn, &end);
	write_enc(&c, &c.dyn, WAIT_START_MS);
	for (uint32_t k = 0; k < c.nsh; k++)
		lp_ring__close(c.sh[k].ring);
	notify_rings(&c);
	end_closing(&c, true); /* the window before the last first: names in order */
	if (c.cap)
		finish_capture(&c);
	serve_the_end(&c);
	print_rings(&c);
	if (c.capdir) {
		struct coll_capdir_stats ds;

		coll_capdir__stats(c.capdir, &ds);
		lp_log(ds.removed ? LP_LOG_INFO : LP_LOG_DEBUG,
		       "capture: %llu window files made in %s (%.1f MiB there now), %llu oldest "
		       "removed by the budget (%.1f MiB), %llu unfinished ones of an earlier run "
		       "removed; the kernel symbols read %llu times, copied %llu",
		       (unsigned long long)ds.files, o->capture_dir, ds.bytes / 1048576.0,
		       (unsigned long long)ds.removed, ds.removed_bytes / 1048576.0,
		       (unsigned long long)ds.tmp_cleaned, (unsigned long long)c.ksnap_read,
		       (unsigned long long)c.ksnap_reused);
	}
	if (c.noted_n || c.notes_dropped)
		lp_debug("capture: %u build-ids established by the symbolizer kept, %llu dropped",
			 c.noted_n, (unsigned long long)c.notes_dropped);
	if (c.bad_events)
		lp_warn("bpf: %llu malformed events ignored", (unsigned long long)c.bad_events);
	{
		const struct lp_bpf_stats *bs = &c.skel->bss->stats;

		lp_debug("bpf: %llu samples, %llu ring full, %llu idle, %llu filtered, %llu of "
			 "lowprof's own, %llu task events, %llu task lost, %llu/%llu stack errors",
			 (unsigned long long)c.bpf_samples, (unsigned long long)bs->ringbuf_full,
			 (unsigned long long)bs->idle, (unsigned long long)bs->filtered,
			 (unsigned long long)bs->self, (unsigned long long)bs->task_events,
			 (unsigned long long)bs->task_lost, (unsigned long long)bs->kstack_errors,
			 (unsigned long long)bs->ustack_errors);
	}
	if (c.off) {
		struct lp_offcpu_counts oc;

		offcpu_counts(&c, &oc);
		lp_debug("bpf: off-CPU: %llu switches, %llu sampled, %llu short, %llu emitted "
			 "(%llu without a user stack), %llu lost, %llu left pending, %llu storage "
			 "errors",
			 (unsigned long long)oc.switches, (unsigned long long)oc.sampled,
			 (unsigned long long)oc.short_blocks, (unsigned long long)oc.emitted,
			 (unsigned long long)oc.no_ustack, (unsigned long long)oc.lost,
			 (unsigned long long)c.off_cpu_left, (unsigned long long)oc.storage_errors);
	}
	lp_debug("collector: %llu maps records (%llu read again after side-band losses), %llu "
		 "maps errors, %llu maps of processes gone known from side-band events, %llu "
		 "side-band events, %llu lost",
		 (unsigned long long)c.maps_sent, (unsigned long long)c.maps_after_loss,
		 (unsigned long long)c.maps_errors, (unsigned long long)c.maps_gone,
		 (unsigned long long)c.sb_events, (unsigned long long)coll_sideband__lost(c.sb));
	print_perfmaps();
	print_files(&c);
	lp_debug("collector: peak RSS %lu KiB (VmHWM)", coll_peak_rss_kib());
	coll_cleanup(&c);
	return 0;
err_out:
	for (uint32_t k = 0; k < c.nsh; k++)
		lp_ring__close(c.sh[k].ring);
	coll_cleanup(&c);
	return 1;
}
