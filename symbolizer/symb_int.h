/* SPDX-License-Identifier: MIT */
/*
 * Symbolizer internals: the state built from the record stream.
 *
 * Samples are normalized as they arrive: each user address becomes (object,
 * file offset) using the process's mappings at that moment, so later
 * exec/exit/dlopen cannot change what a sample meant. Identical normalized
 * stacks of the same sample kind are aggregated. Names are resolved only once, per distinct frame,
 * when the profile is built.
 */
#ifndef LOWPROF_SYMB_INT_H
#define LOWPROF_SYMB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfi.h"
#include "elfsym.h"
#include "lowprof/schema.h"
#include "lowprof/writers.h"
#include "unwind.h"

struct symb_cache;
struct symb_dwarf;
struct symb_obj_dwarf;

/*
 * Limits on what a stream can make the symbolizer hold. The stream comes from
 * a less trusted side, so every table it grows is bounded: each limit is far
 * above what a real host produces and keeps the worst case to a few hundred
 * MiB per table. What goes beyond a limit is dropped and counted, never fatal.
 */
/* distinct mapped files: a busy host maps a few thousand; also keeps every
 * object's 2^44 slice of pprof's address space below the kernel's */
#define SYMB_MAX_OBJS (1u << 16)
/* their paths (up to 4 KiB each): 64 MiB */
#define SYMB_MAX_OBJ_PATH_BYTES (64u << 20)
/* per process: the kernel's default vm.max_map_count is 65530 */
#define SYMB_MAX_MAPS_PER_PROC 65536
/* live executable mappings of all processes, 32 bytes each: 256 MiB */
#define SYMB_MAX_MAPS (1u << 23)
/* distinct pids (slots are never freed): pid_max is at most 4M and a run
 * rarely sees 100k; 1M pids cost 56 MiB of tables */
#define SYMB_MAX_PROCS (1u << 20)
/* kernel symbols: kallsyms has ~200k entries with modules loaded */
#define SYMB_MAX_KSYMS (1u << 22)
/* their names: well below 4 GiB, so the u32 name offsets cannot wrap */
#define SYMB_MAX_KSYM_BYTES (256u << 20)
/* aggregated frames, 16 bytes each: 256 MiB */
#define SYMB_MAX_FRAMES (1u << 24)
/* distinct stacks: the table (load <= 1/2, 64-byte slots) stays <= 256 MiB */
#define SYMB_MAX_STACKS (1u << 21)
/* distinct frames named when the profile is built (each costs a location, a
 * name and a symbol lookup): real profiles have ~100k */
#define SYMB_MAX_LOCATIONS (1u << 21)

/* Each object's slice of pprof's address space; file offsets must be below. */
#define SYMB_OBJ_SPAN (1ull << 44)

/* Printed names (summary) are cut to this many bytes, then "...". */
#define SYMB_NAME_PRINT_MAX 200

enum symb_frame_kind {
	SYMB_F_UNKNOWN = 0, /* no mapping: raw address */
	SYMB_F_USER = 1,    /* (object, file offset) */
	SYMB_F_ANON = 2,    /* executable anonymous mapping (JIT): raw address */
	SYMB_F_KERNEL = 3,  /* kernel address */
};

struct symb_frame {
	uint32_t kind;
	uint32_t obj;  /* SYMB_F_USER: index into objs */
	uint64_t addr; /* file offset (USER) or address */
};

/* A mapped file, identified by path + device + inode. */
struct symb_obj {
	char *path;
	uint32_t path_len;
	uint64_t hash; /* of (device, inode, path) with the state's seed */
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint32_t pid; /* a process that mapped it (to reach /proc/PID/root) */
	bool loaded;  /* open attempted (symb_obj_load) */
	struct symb_elf *elf;
	struct symb_deltas deltas; /* stack deltas, by ELF virtual address */
	bool have_deltas;
	struct symb_dwarf *dwarf;	  /* NULL: no debug information */
	struct symb_obj_dwarf *dwarf_src; /* objects.c: the file libdw reads */
	char *key;			  /* the cache key of its tables; NULL: none */
	char build_id[41 * 2 + 1];	  /* as the file claims it */
	/* the build-id the collector saw mapped (schema 1.3); 0 bytes: unknown */
	uint8_t want_id[LPS_MAX_BUILD_ID];
	uint32_t want_id_len;
	bool id_noted;	/* want_id is a live symbolizer's note (buildid record), not the kernel's */
	bool not_found; /* no file with that build-id: frames are named path+0xoffset */
	uint32_t mapping;   /* index into the profile being built's mappings */
	uint8_t used_kinds; /* 1 << kind for each symb_kind with a frame in it */
	bool lines_loaded;  /* build.c: the cache was asked for its DWARF results */
};

/* A buildid record's claim (symb_state_note_build_id). */
struct symb_noted_id {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t len; /* 0: empty slot */
	uint8_t id[LPS_MAX_BUILD_ID];
};

struct symb_map {
	uint64_t start, end, offset;
	uint32_t obj; /* index into objs, or UINT32_MAX for anonymous */
};

struct symb_proc {
	uint32_t pid;
	uint32_t gen; /* maps_gen when its mappings last changed: keys its delta memo entries */
	bool used;
	bool has_maps;
	struct symb_map *maps; /* ascending by start, non-overlapping */
	uint32_t nmaps, cap_maps;
};

struct symb_ksym {
	uint64_t addr;
	uint32_t name; /* offset into ksym_names */
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

struct symb_agg_slot {
	uint32_t agg; /* index into aggs + 1; 0 = empty */
	uint32_t hash_hi;
};

/* One aggregated stack: key (kind, pid, comm, frames) -> values. */
struct symb_agg {
	uint64_t hash;
	uint32_t kind; /* enum symb_kind */
	uint32_t pid;
	char comm[LPS_COMM_LEN + 1];
	uint32_t nframes;
	uint32_t first; /* index of its first frame in the frame arena */
	uint32_t seq;	/* insertion order within its kind: the profile's stack order */
	uint64_t count; /* >= 1 */
	uint64_t weight;
};

struct symb_counters {
	uint64_t records;
	uint64_t samples;	  /* on-CPU samples aggregated */
	uint64_t weight_ns;	  /* their CPU time */
	uint64_t offcpu_samples;  /* off-CPU samples aggregated (state.off_cpu) */
	uint64_t offcpu_ns;	  /* their estimated off-CPU time */
	uint64_t offcpu_ignored;  /* off-CPU samples of a run without state.off_cpu */
	uint64_t unknown_kinds;	  /* samples of newer kinds, skipped */
	uint64_t bad_records;	  /* malformed: not decodable */
	uint64_t unknown_records; /* newer record types, skipped */
	uint64_t unmapped_frames; /* user addresses outside every known mapping */
	uint64_t no_maps_samples; /* samples of processes with no maps (yet) */
	uint64_t bad_mappings;	  /* out of order or overlapping: dropped */
	uint64_t bad_offsets;	  /* frames whose file offset is >= SYMB_OBJ_SPAN */
	/* dropped or degraded because a SYMB_MAX_* limit was reached: */
	uint64_t over_limit_mappings; /* mappings kept as anonymous, or dropped */
	uint64_t over_limit_samples;  /* samples dropped (processes, stacks) */
	uint64_t over_limit_ksyms;    /* kernel symbols dropped */
	uint64_t build_ids_noted;     /* live: build-ids told the collector (no PROCMAP_QUERY) */
	uint64_t over_limit_frames;   /* frames named "[too many frames]" */
	uint64_t exec, exit;
	/* user stacks unwound from the stack copy, and why each walk ended */
	uint64_t unwound;
	uint64_t unwind_stops[SYMB_STOP__COUNT];
	uint64_t unwind_fp_frames; /* frames found through frame pointers */
	/* objects: parsed from the file or taken from the cache */
	uint64_t parsed_symbols, parsed_deltas;
	uint64_t cache_hits, cache_stored, cache_bad;
	uint64_t unreadable_objs;
	uint64_t mismatched_objs; /* a file whose build-id is not the one mapped */
	uint64_t skipped_resume;  /* records read before the meta of a resumed stream */
	uint64_t load_ns;	  /* time spent loading objects */
	/* build.c: DWARF results taken from the cache, and libdw started */
	uint64_t lines_cache_hits, lines_stored, dwarf_started;
	struct lps_loss loss; /* last loss record */
	bool have_loss;
};

struct symb_state {
	/*
	 * Set by the caller after symb_state_init: symb_build never opens a
	 * file, so user frames are named "binary+0xoffset" (fuzzing, tests).
	 */
	bool offline;
	/*
	 * Set by the caller after symb_state_init: aggregate off-CPU samples
	 * (else they are counted in n.offcpu_ignored and dropped).
	 */
	bool off_cpu;
	/*
	 * Set by the caller: the stream is a capture replayed after the fact,
	 * maybe on another host. Files are then found by build-id (at their
	 * path, else under debug_dirs as .build-id/xx/rest), never by device
	 * and inode, and never through /proc/PID/root.
	 */
	bool replay;
	/*
	 * Set by the caller: a restarted symbolizer on a ring already in use.
	 * Records before the next meta record (which the collector sends
	 * again, with the kernel symbols and mappings) are skipped and counted.
	 */
	bool wait_meta;
	/*
	 * Set by the caller: the file channel to the collector
	 * (lowprof/files.h), used when have_files. Objects the symbolizer
	 * cannot open itself (another user's, another mount namespace's) are
	 * asked for there (objects.c).
	 */
	bool have_files;
	int files_fd;
	/*
	 * Replay of a capture from a kernel without PROCMAP_QUERY: the live
	 * symbolizer's build-id notes (buildid records, read first), by file;
	 * objects without a kernel build-id take theirs (state.c)
	 */
	struct symb_noted_id *noted_ids;
	uint32_t cap_noted_ids, nnoted_ids;
	uint32_t files_next_id;
	struct {
		uint64_t asked, received, refused, timeouts;
	} files;
	uint64_t seed;		       /* of every hash a stream can steer (no flooding) */
	struct symb_cache *cache;      /* set by the caller, may be NULL; not owned */
	const char *const *debug_dirs; /* NULL-terminated; set by the caller */
	uint32_t ndwarf_open;

	/* run metadata, copied from the meta record */
	bool have_meta;
	uint32_t freq_hz;
	uint32_t ncpus;
	uint64_t start_mono_ns, start_real_ns;
	uint64_t first_ns, last_ns; /* sample time span */
	uint64_t end_ns;
	char hostname[256];
	char kernel_release[256];
	char end_reason[32];
	uint64_t bpf_mem_bytes; /* 0: not reported */
	/*
	 * Kernel addresses are kept relative to the kernel's text base, never
	 * absolute: streams since 1.4 carry them so (kernel_relative); in an
	 * older stream the base is _text's address in its symbol snapshot
	 * (kbase, once kbase_known), and without it kernel frames have no
	 * address at all.
	 */
	bool kernel_relative;
	bool kbase_known;
	uint64_t kbase;
	/* the collector's fallbacks (meta, since 1.4), NUL-terminated */
	char fallbacks[LPS_MAX_FALLBACKS][LPS_MAX_FALLBACK_NAME + 1];
	uint32_t nfallbacks;
	/* off-CPU settings of the collector (meta, since 1.2) */
	struct {
		bool on;
		char mode[16]; /* "event" or "time"; "" when not reported */
		double rate;
		uint64_t min_ns, period_ns;
	} offcpu_meta;

	struct symb_obj *objs; /* in first-seen order */
	uint32_t nobjs, cap_objs;
	uint32_t *obj_index; /* open-addressing hash: index + 1, 0 = empty */
	uint32_t cap_obj_index;
	size_t obj_path_bytes;

	struct symb_proc *procs; /* open-addressing hash by pid */
	uint32_t cap_procs, nprocs;
	uint32_t nmaps_total; /* mappings held by all processes */
	uint32_t *seen_pids;  /* distinct pids that had samples (hash set) */
	uint32_t cap_seen, nseen;

	struct symb_ksym *ksyms;
	uint32_t nksyms, cap_ksyms;
	char *ksym_names;
	size_t ksym_names_len, ksym_names_cap;
	bool ksyms_sorted;

	/*
	 * Aggregates in insertion order (all kinds), found through agg_index:
	 * an open-addressing hash of (index + 1, high bits of the hash), 0 =
	 * empty, so that a probe reads 8 bytes and a miss no aggregate.
	 */
	struct symb_agg *aggs;
	uint32_t naggs, cap_aggs; /* of aggs */
	struct symb_agg_slot *agg_index;
	uint32_t cap_agg_index;
	uint32_t naggs_kind[SYMB_KIND__COUNT]; /* of naggs, per kind */
	struct symb_frame *frames;	       /* frame arena */
	size_t nframes, cap_frames;

	struct symb_counters n;

	/*
	 * state.c: the unwinder's delta lookups and frames by (pid, address),
	 * each valid while its process's gen holds; maps_gen counts changes
	 */
	struct symb_delta_memo *delta_memo;
	uint32_t maps_gen;
};

static inline uint64_t symb_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* state.c */
/* Destructor: symb_state_free. */
void symb_state_init(struct symb_state *s);
void symb_state_free(struct symb_state *s);
/*
 * Feeds one encoded record; returns 0 (malformed records and what is beyond
 * the SYMB_MAX_* limits are counted in s->n), -EPROTO for an incompatible
 * stream, or -ENOMEM.
 */
int symb_state_feed(struct symb_state *s, const void *buf, size_t len);

/*
 * Replay: a buildid record's claim for a file (read before the stream, the
 * records coming after the samples that need the files): an object of that
 * device and inode without a build-id from the kernel takes it, to find
 * the file by (id_noted). 0, -ENOSPC beyond SYMB_MAX_NOTED_IDS, -ENOMEM.
 */
#define SYMB_MAX_NOTED_IDS 65536
int symb_state_note_build_id(struct symb_state *s, const struct lps_buildid *b);
const char *symb_ksym_lookup(struct symb_state *s, uint64_t addr);

/* objects.c: symbols, stack deltas and DWARF of an object, loaded once. */
void symb_obj_load(struct symb_state *s, struct symb_obj *o);
void symb_obj_release(struct symb_obj *o);

/* build.c: the model handed to the writers, and the summary. */
struct symb_built;
/*
 * The profile of the samples of one kind: only their stacks, and only the
 * locations and mappings those use. Returns NULL with errno set on failure.
 * Profiles of a state are built one after the other (a build records its
 * mapping indices in the objects); each may be kept until the state is
 * freed. Destructor: symb_built_free.
 */
struct symb_built *symb_build(struct symb_state *s, enum symb_kind kind);
const struct lpw_profile *symb_built_profile(const struct symb_built *b);
void symb_built_free(struct symb_built *b);
/*
 * The end-of-run summary. cpu is the on-CPU profile, offcpu the off-CPU
 * one; either may be NULL (not built, or building failed). The off-CPU part
 * is printed when s->off_cpu is set.
 */
void symb_print_summary(const struct symb_state *s, const struct symb_built *cpu,
			const struct symb_built *offcpu, int fd);

/*
 * Copies name into dst (cap >= SYMB_NAME_PRINT_MAX + 4) so that it is safe
 * to print to a terminal, as lp_sanitize (lowprof/text.h) does: control
 * bytes, malformed UTF-8, C1 controls and bidi/line-separator characters
 * become '?', one per byte. Names longer than SYMB_NAME_PRINT_MAX bytes
 * are cut at a character boundary and end in "...". Returns dst.
 */
char *symb_sanitize_name(char *dst, size_t cap, const char *name);

#endif /* LOWPROF_SYMB_INT_H */
