/* SPDX-License-Identifier: MIT */
/*
 * Symbolizer internals: the state built from the record stream.
 *
 * Samples are normalized as they arrive: each user address becomes (object,
 * file offset) using the process's mappings at that moment, so later
 * exec/exit/dlopen cannot change what a sample meant. Identical normalized
 * stacks are aggregated. Names are resolved only once, per distinct frame,
 * when the profile is built.
 */
#ifndef LOWPROF_SYMB_INT_H
#define LOWPROF_SYMB_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "elfsym.h"
#include "lowprof/schema.h"
#include "profile.h"

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
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint32_t pid; /* a process that mapped it (to reach /proc/PID/root) */
	bool loaded;  /* open attempted */
	struct symb_elf *elf;
	char build_id[41 * 2 + 1];
	uint32_t mapping; /* index into the built profile's mappings */
	bool used;
};

struct symb_map {
	uint64_t start, end, offset;
	uint32_t obj; /* index into objs, or UINT32_MAX for anonymous */
};

struct symb_proc {
	uint32_t pid;
	bool used;
	bool has_maps;
	struct symb_map *maps; /* ascending by start */
	uint32_t nmaps;
};

struct symb_ksym {
	uint64_t addr;
	uint32_t name; /* offset into ksym_names */
};

/* One aggregated stack: key (pid, comm, frames) -> values. */
struct symb_agg {
	uint64_t hash;
	uint32_t pid;
	char comm[LPS_COMM_LEN + 1];
	uint32_t nframes;
	uint32_t first; /* index of its first frame in the frame arena */
	uint64_t count;
	uint64_t weight;
};

struct symb_counters {
	uint64_t records;
	uint64_t samples;
	uint64_t weight_ns;
	uint64_t bad_records;	  /* malformed: not decodable */
	uint64_t unknown_records; /* newer record types, skipped */
	uint64_t unmapped_frames; /* user addresses outside every known mapping */
	uint64_t no_maps_samples; /* samples of processes with no maps (yet) */
	uint64_t exec, exit;
	struct lps_loss loss; /* last loss record */
	bool have_loss;
};

struct symb_state {
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

	struct symb_obj *objs;
	uint32_t nobjs, cap_objs;

	struct symb_proc *procs; /* open-addressing hash by pid */
	uint32_t cap_procs, nprocs;
	uint32_t *seen_pids; /* distinct pids that had samples (hash set) */
	uint32_t cap_seen, nseen;

	struct symb_ksym *ksyms;
	uint32_t nksyms, cap_ksyms;
	char *ksym_names;
	size_t ksym_names_len, ksym_names_cap;
	bool ksyms_sorted;

	struct symb_agg *aggs; /* open-addressing hash */
	uint32_t cap_aggs, naggs;
	struct symb_frame *frames; /* frame arena */
	size_t nframes, cap_frames;

	struct symb_counters n;
};

/* state.c */
void symb_state_init(struct symb_state *s);
void symb_state_free(struct symb_state *s);
/* Feeds one encoded record; returns 0, or -EPROTO for an incompatible stream. */
int symb_state_feed(struct symb_state *s, const void *buf, size_t len);
const char *symb_ksym_lookup(struct symb_state *s, uint64_t addr);

/* build.c: the model handed to the writers, and the summary. */
struct symb_built;
struct symb_built *symb_build(struct symb_state *s);
const struct symb_profile *symb_built_profile(const struct symb_built *b);
void symb_built_free(struct symb_built *b);
void symb_print_summary(const struct symb_state *s, const struct symb_built *b, int fd);

#endif /* LOWPROF_SYMB_INT_H */
