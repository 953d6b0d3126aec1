/* SPDX-License-Identifier: MIT */
/*
 * Ingest: a record stream (the ring, a capture file) into aggregated,
 * normalized stacks.
 *
 * What it is: the owner of the processes and their mappings, the pids seen,
 * the aggregated stacks and their frames, and the run's metadata. Samples
 * are normalized as they arrive: each user address becomes (object, file
 * offset) using the process's mappings at that moment, so a later
 * exec/exit/dlopen cannot change what a sample meant; a user stack copy is
 * unwound here (unwind.h) with the objects' stack deltas. Identical
 * normalized stacks of the same kind are aggregated. It also owns an object
 * table and a kernel symbol table (objects.h), which it fills from the
 * stream and lends to the profile builder.
 *
 * What it is not: naming frames or building a profile (build/), or reading
 * files (objects/). Every record comes from a less trusted side: it is
 * decoded by the validating schema decoder, every value used as an index or
 * size is bounded again, and every table the stream can grow is bounded by
 * a SYMB_MAX_* limit below; what goes beyond is dropped and counted, never
 * fatal.
 */
#ifndef LOWPROF_SYMB_INGEST_H
#define LOWPROF_SYMB_INGEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "labels.h"
#include "lowprof/schema.h"
#include "objects.h"
#include "perfmap.h"
#include "unwind.h"

struct symb_cache;

/* per process: the kernel's default vm.max_map_count is 65530 */
#define SYMB_MAX_MAPS_PER_PROC 65536
/* live executable mappings of all processes, 32 bytes each: 256 MiB */
#define SYMB_MAX_MAPS (1u << 23)
/* distinct pids (slots are never freed): pid_max is at most 4M and a run
 * rarely sees 100k; 1M pids cost 56 MiB of tables */
#define SYMB_MAX_PROCS (1u << 20)
/*
 * perf map bytes held for the live processes of a stream: the per-process
 * tables (symbolizer/jit/perfmap.h) cost about their bytes again in names
 * and 24 bytes a symbol; chunks beyond it are left out and counted
 */
#define SYMB_MAX_JIT_BYTES (256ull << 20)
/* aggregated frames, 16 bytes each: 256 MiB */
#define SYMB_MAX_FRAMES (1u << 24)
/* distinct stacks: the table (load <= 1/2, 64-byte slots) stays <= 256 MiB */
#define SYMB_MAX_STACKS (1u << 21)

enum symb_frame_kind {
	SYMB_F_UNKNOWN = 0, /* no mapping: raw address */
	SYMB_F_USER = 1,    /* (object, file offset) */
	SYMB_F_ANON = 2,    /* executable anonymous mapping (JIT): raw address */
	SYMB_F_KERNEL = 3,  /* kernel address, relative to the text base */
	SYMB_F_JIT = 4,	    /* named by the process's perf map: obj = name id, addr = its start */
};

struct symb_frame {
	uint32_t kind;
	uint32_t obj;  /* SYMB_F_USER: index into the object table */
	uint64_t addr; /* file offset (USER) or address */
};

/*
 * The profiles a stream feeds: samples of each kind are aggregated apart and
 * built into a profile of their own. The values are those of enum
 * lps_sample_kind, so a sample's kind indexes these directly.
 */
enum symb_kind {
	SYMB_KIND_CPU = LPS_KIND_CPU,	    /* cpu.*: weight = CPU ns */
	SYMB_KIND_OFFCPU = LPS_KIND_OFFCPU, /* offcpu.*: weight = blocked ns */
	SYMB_KIND__COUNT,
};

/* One aggregated stack: key (kind, pid, comm, exe, cgroup, frames) -> values. */
struct symb_agg {
	uint64_t hash;
	uint32_t kind; /* enum symb_kind */
	uint32_t pid;
	uint64_t cgroup; /* the samples' cgroup id (symb_state__cgroup); 0: unknown */
	uint32_t exe;	 /* the process's executable (symb_state__exe); 0: unknown */
	char comm[LPS_COMM_LEN + 1];
	uint32_t nframes;
	uint32_t first; /* index of its first frame in symb_state__frames */
	uint32_t seq;	/* insertion order within its kind: the profile's stack order */
	uint64_t count; /* >= 1 */
	uint64_t weight;
};

struct symb_counters {
	uint64_t records;
	uint64_t samples;	    /* on-CPU samples aggregated */
	uint64_t weight_ns;	    /* their CPU time */
	uint64_t offcpu_samples;    /* off-CPU samples aggregated (opts' off_cpu) */
	uint64_t offcpu_ns;	    /* their estimated off-CPU time */
	uint64_t offcpu_ignored;    /* off-CPU samples of a run without off_cpu */
	uint64_t unknown_kinds;	    /* samples of newer kinds, skipped */
	uint64_t bad_records;	    /* malformed: not decodable */
	uint64_t unknown_records;   /* newer record types, skipped */
	uint64_t unmapped_frames;   /* user addresses outside every known mapping */
	uint64_t no_maps_samples;   /* samples of processes with no maps (yet) */
	uint64_t bad_mappings;	    /* out of order or overlapping: dropped */
	uint64_t bad_offsets;	    /* frames whose file offset is >= SYMB_OBJ_SPAN */
	uint64_t jit_frames;	    /* frames named by a JIT perf map */
	uint64_t jit_names_dropped; /* frames a perf map named, left as addresses: names full */
	uint64_t jit_over_limit;    /* perf map chunks left out: SYMB_MAX_JIT_BYTES reached */
	/* dropped or degraded because a SYMB_MAX_* limit was reached: */
	uint64_t over_limit_mappings; /* mappings kept as anonymous, or dropped */
	uint64_t over_limit_samples;  /* samples dropped (processes, stacks) */
	uint64_t exec, exit;
	/* user stacks unwound from the stack copy, and why each walk ended */
	uint64_t unwound;
	uint64_t unwind_stops[SYMB_STOP__COUNT];
	uint64_t unwind_fp_frames; /* frames found through frame pointers */
	uint64_t skipped_resume;   /* records read before the meta of a resumed stream */
	uint64_t restarts;	   /* meta records after the first: a collector started again */
	uint64_t other_shard;	   /* records of other shards' processes, skipped */
	/* a live run's lag (symb_state__note_lag): the most, in ns, in this window */
	uint64_t lag_peak_ns;
	/* a live run's ring (symb_state__note_ring): its size, and the most
	 * bytes it held unread at a read in this window */
	uint64_t ring_bytes;
	uint64_t ring_peak_bytes;
	/* what the tables hold */
	uint32_t procs;	      /* processes (slots are kept) */
	uint32_t maps;	      /* live mappings of all processes */
	uint32_t pids_seen;   /* distinct pids that had samples */
	uint32_t stacks;      /* aggregated stacks, all kinds */
	struct lps_loss loss; /* last loss record */
	bool have_loss;
};

/* What the stream's meta, loss-free records and sample times say of the run. */
struct symb_meta {
	bool have_meta;
	uint32_t freq_hz;
	uint32_t ncpus;
	uint64_t start_mono_ns, start_real_ns;
	uint64_t first_ns, last_ns; /* sample time span; 0: no sample */
	uint64_t end_ns;
	char hostname[256];
	char kernel_release[256];
	char end_reason[32];
	uint64_t bpf_mem_bytes; /* 0: not reported */
	/* the collector's fallbacks (since 1.4), NUL-terminated */
	char fallbacks[LPS_MAX_FALLBACKS][LPS_MAX_FALLBACK_NAME + 1];
	uint32_t nfallbacks;
	/* off-CPU settings of the collector (since 1.2) */
	struct {
		bool on;
		char mode[16]; /* "event" or "time"; "" when not reported */
		double rate;
		uint64_t min_ns, period_ns;
	} offcpu;
};

struct symb_state_opts {
	size_t sz; /* sizeof(struct symb_state_opts) */
	/* aggregate off-CPU samples (else they are counted in offcpu_ignored) */
	bool off_cpu;
	/*
	 * A restarted symbolizer on a ring already in use: records before the
	 * next meta record (which the collector sends again, with the kernel
	 * symbols and mappings) are skipped and counted.
	 */
	bool wait_meta;
	/* for the object table (symb_objects_opts): */
	bool offline;
	bool replay;
	struct symb_cache *cache;      /* may be NULL; not owned */
	const char *const *debug_dirs; /* NULL-terminated; may be NULL; not copied */
	int files_fd;		       /* the file channel to the collector; -1: none */
	/* between windows, the objects' loaded tables beyond it are dropped (symb_objects__trim); 0: none */
	uint64_t mem_budget;
};

/*
 * An empty state; NULL with errno set (EINVAL: opts' sz is not one this
 * version knows; ENOMEM). Destructor: symb_state__free (accepts NULL).
 */
struct symb_state *symb_state__new(const struct symb_state_opts *opts);
void symb_state__free(struct symb_state *s);

/*
 * Feeds one encoded record; returns 0 (malformed records and what is beyond
 * the SYMB_MAX_* limits are counted), -EPROTO for an incompatible stream,
 * -ENOMEM, or SYMB_FEED_NEXT_WINDOW: a sample taken at or after the window
 * end (symb_state__set_window_end) was not fed; close the window
 * (symb_state__new_window) and feed it again.
 */
#define SYMB_FEED_NEXT_WINDOW 1
int symb_state__feed(struct symb_state *s, const void *buf, size_t len);

/*
 * The end of a run whose profiles are all built: frees what only feeding
 * and building use (the stacks' frames and their index, the kernel
 * symbols, the unwinder's memo), so that the writers reuse that memory
 * rather than fault in fresh pages. Built profiles stay valid, and so do
 * the counters, meta, aggregates, labels and objects that the summary
 * reads; the state can then be neither fed nor built (symb_state__feed
 * returns -EINVAL, symb_build fails with EINVAL).
 */
void symb_state__finish(struct symb_state *s);
bool symb_state__finished(const struct symb_state *s);

/*
 * A service run whose collector started again: the new file channel (-1:
 * none, meanwhile), and, for a ring in use, skipping what comes before the
 * next meta record (as opts' wait_meta).
 */
void symb_state__set_files_fd(struct symb_state *s, int files_fd);
void symb_state__wait_meta(struct symb_state *s);

/*
 * Shard shard of nshards: samples, perf maps and jitdumps of other shards'
 * processes are skipped (counted in other_shard); every other record is
 * taken whole. A ring's loss records are its shard's own (the collector
 * splits the run's counters); a capture's are the whole run's, which shards
 * other than 0 do not keep, so that the shards' counters summed are the
 * run's.
 */
void symb_state__set_shard(struct symb_state *s, uint32_t shard, uint32_t nshards, bool capture);
/* The shard set: its number, and *nshards (0: the whole stream). */
uint32_t symb_state__shard(const struct symb_state *s, uint32_t *nshards);

/* Replay: a buildid record, before the stream (symb_objects__note_build_id). */
int symb_state__note_build_id(struct symb_state *s, const struct lps_buildid *b);
/* Replay: the notes read when first needed instead (symb_objects__set_notes_loader). */
void symb_state__set_notes_loader(struct symb_state *s, void (*fn)(void *ctx), void *ctx);

const struct symb_counters *symb_state__counters(const struct symb_state *s);
/*
 * A live run: every 64th on-CPU sample is compared with the clock
 * (CLOCK_MONOTONIC, the samples' clock) when it is read, and the counters
 * keep the largest difference per window (lag_peak_ns): the collector's
 * drain and this symbolizer's backlog together, so a shard that cannot
 * keep up shows. Off (the default) for a capture.
 */
void symb_state__measure_lag(struct symb_state *s, bool on);
/*
 * A live run: the ring of size bytes held peak bytes unread at its fullest
 * read since the last call (lp_ring__take_peak); the counters keep the
 * window's most. Near the size, the collector is about to drop samples.
 */
void symb_state__note_ring(struct symb_state *s, uint64_t peak, uint64_t size);
const struct symb_meta *symb_state__meta(const struct symb_state *s);
bool symb_state__off_cpu(const struct symb_state *s);

/* The aggregated stacks, all kinds, in insertion order; *n of them. */
const struct symb_agg *symb_state__aggs(const struct symb_state *s, uint32_t *n);
/* Of them, of one kind. */
uint32_t symb_state__naggs_kind(const struct symb_state *s, enum symb_kind kind);
/* The frame arena the aggregates index. */
const struct symb_frame *symb_state__frames(const struct symb_state *s);

/* The object and kernel symbol tables the stream filled; owned by s. */
struct symb_objects *symb_state__objects(struct symb_state *s);
struct symb_ksyms *symb_state__ksyms(struct symb_state *s);
const struct symb_objects_stats *symb_state__objects_stats(const struct symb_state *s);
const struct symb_ksyms_stats *symb_state__ksyms_stats(const struct symb_state *s);

/*
 * Service mode: the aggregates (stacks, frames) and the counters of the
 * samples are emptied for the next window; live processes and their
 * mappings, the objects they map, kernel symbols, the meta and the last
 * loss record are kept. Processes that exited are dropped, and so are
 * objects no mapping holds any more (symb_objects__sweep), so that a
 * run's tables follow what is alive, not all it ever saw.
 */
void symb_state__new_window(struct symb_state *s);
/* (and the objects' tables beyond opts' mem_budget are dropped: symb_objects__trim) */
/* Samples taken at or after end_ns (the stream's clock) belong to the next window; 0: none. */
void symb_state__set_window_end(struct symb_state *s, uint64_t end_ns);

/* An aggregate's labels: the executable's path (NULL: unknown), the cgroup (NULL: unnamed). */
const char *symb_state__exe(const struct symb_state *s, uint32_t exe);
const struct symb_cgroup *symb_state__cgroup(const struct symb_state *s, uint64_t id);
void symb_state__labels_stats(const struct symb_state *s, struct symb_labels_stats *st);

/* The name of a SYMB_F_JIT frame's id (its obj), NUL-terminated; NULL if unknown. */
const char *symb_state__jit_name(const struct symb_state *s, uint32_t id);
/* What the JIT perf maps of the stream counted, live and gone processes. */
void symb_state__jit_stats(const struct symb_state *s, struct symb_jit_stats *st);

/* Mappings pid holds now; 0 for an unknown pid (tests, diagnostics). */
uint32_t symb_state__proc_nmaps(const struct symb_state *s, uint32_t pid);

#endif /* LOWPROF_SYMB_INGEST_H */
