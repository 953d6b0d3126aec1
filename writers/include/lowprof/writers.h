/* SPDX-License-Identifier: MIT */
/*
 * Profile writers: a symbolized, aggregated profile (struct lpw_profile) to
 * gzip'd pprof, folded stacks and a self-contained HTML flame graph.
 *
 * What it is: the model and the three encodings, with no other dependency
 * than common/ (and protobuf-c, libdeflate), so that the symbolizer and
 * anything else that has a profile to write (the exporter) share them. What
 * it is not: symbolization, aggregation, or deciding where the bytes go
 * (callers pass an fd). The model is a read-only view: writers never modify
 * it and never keep pointers into it after they return.
 *
 * Every stack is a list of location indices, leaf first. A location is one
 * address: a user frame (mapping + normalized address), a kernel frame, or an
 * unresolved frame. Every location has a printable function name, so nothing
 * is dropped: unresolved frames are named "[unknown]" or "module+0xoffset".
 * A location with source information (DWARF) also has lines: the functions
 * inlined at its address, each with its file:line; writers show those as
 * frames of their own (folded, HTML) or as the location's Line list (pprof).
 */
#ifndef LOWPROF_WRITERS_H
#define LOWPROF_WRITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LPW_NO_MAPPING UINT32_MAX

struct lpw_mapping {
	const char *path;     /* "/usr/bin/foo", "[kernel.kallsyms]", "[vdso]" */
	const char *build_id; /* lowercase hex, or NULL when unknown */
	uint64_t start;	      /* normalized address space of this mapping: */
	uint64_t limit;	      /*   [start, limit) holds every location address */
	uint64_t file_offset; /* file offset that corresponds to start */
	bool has_functions;   /* at least one location resolved to a symbol */
};

/*
 * One source-level frame of a location: a function and the file:line in it
 * (of the address for the innermost one, of the call into the next inner
 * one for the others).
 */
struct lpw_line {
	const char *function; /* never NULL */
	const char *file;     /* source file as recorded in DWARF, or NULL */
	uint32_t line;	      /* 0 when unknown */
};

struct lpw_location {
	uint32_t mapping;     /* index into profile->mappings, or LPW_NO_MAPPING */
	uint64_t address;     /* in the mapping's normalized space (file offset for
			     user code, kernel virtual address for the kernel) */
	const char *function; /* never NULL: symbol, "[unknown]", or "mod+0x1f";
			     with lines, the containing function's name */
	bool kernel;	      /* kernel frame: folded output suffixes "_[k]" */
	bool resolved;	      /* function is a real symbol name */
	/*
	 * nlines source frames, innermost first: lines[0] is the innermost
	 * inlined function, lines[nlines - 1] the function that contains the
	 * address (the one named by function). nlines == 0 (lines may be
	 * NULL): no source information, just function.
	 */
	const struct lpw_line *lines;
	uint32_t nlines;
};

struct lpw_stack {
	uint32_t pid;
	const char *comm; /* never NULL */
	/*
	 * More labels, each NULL when unknown: the executable's path, the
	 * cgroup v2 path, the container id and the Kubernetes pod UID (pprof:
	 * "exe", "cgroup", "container.id", "k8s.pod.uid")
	 */
	const char *exe, *cgroup, *container_id, *pod_uid;
	const uint32_t *locs; /* nlocs indices into profile->locations, leaf first */
	uint32_t nlocs;
	int64_t values[2]; /* one per profile->value_types, e.g. {count, ns} */
};

struct lpw_value_type {
	const char *type; /* "samples", "cpu", "off_cpu" */
	const char *unit; /* "count", "nanoseconds" */
};

struct lpw_profile {
	const struct lpw_mapping *mappings;
	size_t nmappings;
	const struct lpw_location *locations;
	size_t nlocations;
	const struct lpw_stack *stacks; /* distinct (pid, comm, labels, stack) */
	size_t nstacks;

	struct lpw_value_type value_types[2]; /* {samples,count}, {cpu,nanoseconds} */
	struct lpw_value_type period_type;    /* {cpu,nanoseconds} */
	int64_t period;			      /* e.g. 1e9 / frequency */
	int folded_value;		      /* which values[] index folded/HTML use */

	int64_t time_nanos;	     /* wall-clock start of the profile (CLOCK_REALTIME) */
	int64_t duration_nanos;	     /* length of the profile */
	const char *title;	     /* shown in the flame graph, e.g. "lowprof cpu: host" */
	const char *const *comments; /* ncomments lines stored as pprof comments */
	size_t ncomments;
};

/*
 * Writers. Each returns 0 or a negative errno and logs its own error with
 * the output's name. Output is deterministic: the same profile gives the same
 * bytes (pprof: apart from nothing; time_nanos comes from the profile).
 */

/*
 * gzip-compressed pprof protobuf (profile.proto), written to fd. A location
 * with lines gets one Line per source frame in the same order (pprof's
 * convention: the last Line is the caller the earlier ones were inlined
 * into), with Function.filename and Line.line set.
 */
int lpw_write_pprof(const struct lpw_profile *p, int fd);

/* The same bytes in memory: 0 with *out (malloc'd; *out_len bytes), or -errno (logged). */
int lpw_pprof_bytes(const struct lpw_profile *p, uint8_t **out, size_t *out_len);

/*
 * The same protobuf message, not compressed: for a reader on the same host
 * that reads it at once (a shard's partial profile, which lowprof merges),
 * where gzip and gunzip would cost more than the bytes they save.
 * lpw_read_pprof reads both.
 */
int lpw_write_pprof_raw(const struct lpw_profile *p, int fd);

/*
 * gzip of in[0..len) at libdeflate's fastest level, with no name and a zero
 * mtime in the header: 0 with *out (malloc'd; *out_len bytes), or -ENOMEM.
 * Logs nothing.
 */
int lpw_gzip(const uint8_t *in, size_t len, uint8_t **out, size_t *out_len);

/*
 * Folded stacks, one line per distinct (comm, frames) after merging pids:
 * "comm;root;...;leaf VALUE\n", lines sorted bytewise, VALUE =
 * values[folded_value]. A location with lines gives one frame per line,
 * caller first ("outer;inlined"). Kernel frames get "_[k]" appended. ';'
 * and '\n' in names are replaced so the line format stays parseable.
 */
int lpw_write_folded(const struct lpw_profile *p, int fd);

/*
 * Self-contained interactive HTML flame graph (no network access needed).
 * Inlined functions are frames of their own, marked as inlined.
 */
int lpw_write_flamegraph(const struct lpw_profile *p, int fd);

/*
 * The summaries' tables (top.c), to fd: the ten functions with the most
 * samples of their own and in total (percent of the profile's samples),
 * and, of an off-CPU profile, the five stacks blocked longest (by process,
 * innermost user frames and the kernel function they blocked in). Nothing
 * when the profile is NULL or empty.
 */
void lpw_print_top_functions(const struct lpw_profile *p, int fd);
void lpw_print_top_blocking(const struct lpw_profile *p, int fd);

/* ns as "1.23 s", "4.56 ms", "7.89 us" or "12 ns", in buf */
const char *lpw_fmt_ns(char *buf, size_t cap, uint64_t ns);

#endif /* LOWPROF_WRITERS_H */
