/* SPDX-License-Identifier: MIT */
/*
 * lowprof record schema: the one contract between the collector and the
 * symbolizer, in the shared-memory ring and in capture files.
 *
 * What it is: msgpack encoders (msgpack-c's packer) and a validating,
 * non-allocating decoder for every record type. What it is not: transport
 * (see lowprof/ring.h) or interpretation of the records.
 *
 * Every record is one msgpack array whose first element is the record type
 * and whose following elements are positional fields (schema/README.md lists
 * them). A stream starts with an LPS_META record carrying the schema version.
 *
 * Version rules: a reader accepts any stream with its own major version;
 * minor versions only append fields at the end of a record (or of a maps
 * entry) or add record types, so readers ignore trailing fields they do not
 * know and skip (and count) unknown record types. A major version change is
 * a break.
 *
 * Decoding is in place: decoded strings and blobs point into the record
 * buffer (not NUL-terminated; use the length) and stay valid as long as it.
 * Every length and count is checked against the bytes left; malformed input
 * returns -EBADMSG and never reads outside [buf, buf + len).
 */
#ifndef LOWPROF_SCHEMA_H
#define LOWPROF_SCHEMA_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define LPS_VERSION_MAJOR 1
#define LPS_VERSION_MINOR 6

#define LPS_MAX_FRAMES	   127 /* kernel and user frame-pointer stacks */
#define LPS_COMM_LEN	   16
#define LPS_MAX_STACK_COPY (64u * 1024) /* user stack bytes in one sample */
#define LPS_MAX_PATH	   4096
#define LPS_MAX_RECORD	   (1u << 20) /* larger content is split (maps, ksyms) */
/*
 * Largest encoded sample: msgpack overhead and fixed fields (at most 128
 * bytes), 2 x LPS_MAX_FRAMES frames, and a stack copy of copy_bytes. Ring
 * sizes are computed from it.
 */
#define LPS_SAMPLE_RECORD_MAX(copy_bytes) (128u + 2u * LPS_MAX_FRAMES * 8u + (copy_bytes))
#define LPS_MAX_MODE			  16 /* meta off_cpu_mode */
#define LPS_MAX_BUILD_ID		  64 /* mapping build_id bytes */
#define LPS_MAX_KERNEL_BASE		  32 /* meta kernel_base */
#define LPS_MAX_FALLBACKS		  16 /* meta fallbacks: entries */
#define LPS_MAX_FALLBACK_NAME		  32 /* meta fallbacks: bytes of one */

enum lps_type {
	LPS_META = 1,	  /* run metadata; first record of every stream */
	LPS_SAMPLE = 2,	  /* one stack sample */
	LPS_MAPS = 3,	  /* executable mappings of one process */
	LPS_EXEC = 4,	  /* a process called exec */
	LPS_EXIT = 5,	  /* a process exited */
	LPS_KSYMS = 6,	  /* a chunk of the kernel symbol snapshot */
	LPS_LOSS = 7,	  /* loss counters, cumulative since the run began */
	LPS_END = 8,	  /* the stream is complete */
	LPS_BUILDID = 9,  /* since 1.4: a mapped file's build-id the kernel did not give */
	LPS_CGROUP = 10,  /* since 1.5: the path of a cgroup id that samples carry */
	LPS_PROC = 11,	  /* since 1.5: what a process runs: its executable's path */
	LPS_PERFMAP = 12, /* since 1.6: bytes of a process's JIT perf map file */
	LPS_VDSO = 13,	  /* since 1.6: the kernel's vDSO image, for [vdso] mappings */
	LPS_MMAP = 14,	  /* since 1.6: one executable mapping, as the process made it */
	LPS_FORK = 15,	  /* since 1.6: a new process, with a copy of its parent's mappings */
	LPS_JITDUMP = 16, /* since 1.6: bytes of a process's jitdump file (jit-PID.dump) */
	LPS__TYPES,	  /* one past the last type this reader knows */
};

enum lps_sample_kind {
	LPS_KIND_CPU = 0, /* on-CPU, from the cpu-clock perf event */
	/*
	 * since 1.2: one sampled off-CPU interval (a voluntary block, from
	 * sched_switch): time_ns = when the thread ran again, blocked_ns = the
	 * interval measured, weight = the off-CPU nanoseconds it stands for
	 * (blocked_ns scaled by 1 / its sampling probability)
	 */
	LPS_KIND_OFFCPU = 1,
};

/* A string or blob inside a record: not NUL-terminated. */
struct lps_str {
	const char *ptr;
	uint32_t len;
};

struct lps_meta {
	uint32_t major, minor;
	struct lps_str hostname;
	struct lps_str kernel_release;
	struct lps_str clock;	/* "CLOCK_MONOTONIC": the clock of every time_ns */
	uint64_t start_mono_ns; /* run start on that clock */
	uint64_t start_real_ns; /* same instant on CLOCK_REALTIME */
	uint32_t freq_hz;	/* on-CPU sampling frequency per CPU */
	uint32_t ncpus_online;
	uint32_t drain_ms;	 /* collector drain interval */
	uint64_t bpf_ring_bytes; /* BPF ring buffer size */
	uint64_t shm_ring_bytes; /* shared-memory ring data size */
	uint32_t npids;		 /* pid filter (0 = whole host) */
	const uint8_t *pids_raw; /* npids msgpack uints; read with lps_meta_pid */
	uint32_t pids_raw_len;
	struct lps_str producer; /* "lowprof-collector 0.1.0" */
	/* since 1.2 (zero / empty in older streams): */
	uint32_t stack_bytes;	     /* user stack copy limit per sample; 0 = FP walk */
	bool off_cpu;		     /* off-CPU samples are recorded */
	struct lps_str off_cpu_mode; /* "event" or "time" */
	double off_cpu_rate;	     /* event mode: probability of sampling a block */
	uint64_t off_cpu_min_ns;     /* blocks shorter than this are not recorded */
	uint64_t off_cpu_period_ns;  /* time mode: a block of d ns is sampled with
				      * probability min(1, d / period) */
	uint64_t bpf_mem_bytes;	     /* memory of the BPF maps (and programs) loaded */
	/*
	 * since 1.4 (empty in older streams): the kernel symbol every kernel
	 * address in the stream is relative to ("_text"); empty: they are
	 * absolute (older collectors)
	 */
	struct lps_str kernel_base;
	/*
	 * since 1.4: what the collector did instead where the kernel lacked a
	 * feature, as short names ("no-task-pt-regs"); read with lps_meta_fallback
	 */
	uint32_t nfallbacks;
	const uint8_t *fallbacks_raw;
	uint32_t fallbacks_raw_len;
};

struct lps_sample {
	uint32_t kind; /* enum lps_sample_kind */
	uint64_t time_ns;
	uint32_t pid, tid, cpu;
	struct lps_str comm;
	uint64_t weight;       /* nanoseconds this sample stands for */
	uint64_t ip, sp, bp;   /* user registers; 0 for kernel threads */
	const uint8_t *kstack; /* nkstack little-endian u64, leaf first */
	uint32_t nkstack;
	const uint8_t *ustack; /* nustack little-endian u64, leaf first */
	uint32_t nustack;
	/* since 1.1: user stack bytes from sp upward (ustack is then empty) */
	const uint8_t *stack_copy;
	uint32_t stack_copy_len;
	/* since 1.2: LPS_KIND_OFFCPU only, the measured blocked interval; 0 otherwise */
	uint64_t blocked_ns;
	/*
	 * since 1.5: the thread's cgroup v2 id (the inode number of its
	 * directory; an LPS_CGROUP record before it names it); 0: unknown
	 */
	uint64_t cgroup_id;
};

/* Protection bits of a mapping. */
#define LPS_PROT_R 1u
#define LPS_PROT_W 2u
#define LPS_PROT_X 4u
#define LPS_PROT_P 8u /* private */

struct lps_mapping {
	uint64_t start, end, offset;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	uint32_t prot;	     /* LPS_PROT_* */
	struct lps_str path; /* "" for anonymous mappings */
	/*
	 * since 1.3: the GNU build-id of the mapped file as the kernel read it
	 * (raw bytes, at most LPS_MAX_BUILD_ID); empty = unknown
	 */
	struct lps_str build_id;
};

/*
 * Entries are read one at a time with lps_maps_next. A process's mappings
 * may span several records: the first replaces what was known (append =
 * false), the following ones add to it (append = true), in address order.
 */
struct lps_maps {
	uint64_t time_ns;
	uint32_t pid;
	bool append;
	uint32_t count; /* entries that follow */
	const uint8_t *cur, *end;
	uint32_t left;
};

struct lps_exec {
	uint64_t time_ns;
	uint32_t pid;
	struct lps_str comm;
};

struct lps_exit {
	uint64_t time_ns;
	uint32_t pid;
};

/*
 * since 1.6: one executable mapping pid made (the kernel's mmap event): it
 * replaces whatever pid had mapped in [start, end).
 */
struct lps_mmap {
	uint64_t time_ns;
	uint32_t pid;
	struct lps_mapping map;
};

/* since 1.6: pid is a new process (fork, not a thread) of ppid, with its mappings */
struct lps_fork {
	uint64_t time_ns;
	uint32_t pid, ppid;
};

struct lps_ksym {
	uint64_t addr;
	struct lps_str name;
	struct lps_str module; /* "" for the core kernel */
};

struct lps_ksyms {
	uint32_t seq; /* 0, 1, 2... within one snapshot */
	bool last;    /* the snapshot is complete after this chunk */
	uint32_t count;
	const uint8_t *cur, *end;
	uint32_t left;
};

struct lps_loss {
	uint64_t time_ns;
	uint64_t bpf_samples;	   /* samples the BPF programs emitted */
	uint64_t bpf_ringbuf_full; /* records the BPF ring could not reserve */
	uint64_t bpf_stack_errors; /* stacks the kernel could not capture */
	uint64_t shm_dropped;	   /* records the shm ring dropped (full) */
	uint64_t shm_dropped_bytes;
	uint64_t maps_errors;	   /* /proc/PID/maps reads that failed */
	uint64_t bad_consumer_pos; /* invalid consumer positions seen */
	uint64_t bpf_task_lost;	   /* exec/exit records the BPF ring could not take */
	/* since 1.2 (0 in older streams): off-CPU */
	uint64_t off_cpu_switches; /* voluntary switch-outs seen */
	uint64_t off_cpu_sampled;  /* blocks chosen for a sample */
	uint64_t off_cpu_short;	   /* blocks shorter than the minimum, not recorded */
	uint64_t off_cpu_lost;	   /* sampled blocks whose record was lost */
	/* since 1.3 (0 in older streams): capture file */
	uint64_t capture_dropped; /* records the capture writer could not write
				   * (its buffers full or the disk failing) */
	uint64_t capture_dropped_bytes;
	/* since 1.4 (0 in older streams): */
	uint64_t kstacks_hidden;     /* samples sent without their kernel stack: the
				      * kernel's text base was not known */
	uint64_t ustack_fp_fallback; /* samples with no known stack top: the
				      * frame-pointer walk instead of a copy */
	/* since 1.6 (0 in older streams): */
	uint64_t mmap_events_lost; /* mmap/fork/exec events the kernel's side-band
				    * buffers could not take */
};

struct lps_end {
	uint64_t time_ns;
	struct lps_str reason; /* "duration", "signal", ... */
};

/*
 * since 1.4, in capture files only: the GNU build-id of the file mapped from
 * (dev_major, dev_minor, inode), where the kernel gave none (no
 * PROCMAP_QUERY), as source established it: "symbolizer", which read it
 * from the mapped file it opened (checked by device and inode). A claim of
 * an unprivileged process, used by a replay only to find the file.
 */
struct lps_buildid {
	uint64_t time_ns;
	uint32_t dev_major, dev_minor;
	uint64_t inode;
	struct lps_str build_id; /* raw bytes, 1..LPS_MAX_BUILD_ID */
	struct lps_str source;	 /* at most LPS_MAX_MODE bytes */
};

/*
 * since 1.5: the cgroup v2 id samples carry, with its path relative to the
 * cgroup v2 root ("/system.slice/foo.service"; "/" for the root). Sent by
 * the collector before the first sample that carries the id, and again
 * after a while (a symbolizer may have forgotten it).
 */
struct lps_cgroup {
	uint64_t time_ns;
	uint64_t id;
	struct lps_str path; /* 1..LPS_MAX_PATH bytes, starting with '/' */
};

/*
 * since 1.5: a process's executable (the target of /proc/PID/exe), sent
 * with each full read of its mappings (before the maps record).
 */
struct lps_proc {
	uint64_t time_ns;
	uint32_t pid;
	struct lps_str exe; /* at most LPS_MAX_PATH bytes; empty: unknown */
};

/*
 * since 1.6: the collector's own vDSO image, copied (not parsed) from its
 * memory: every 64-bit process's [vdso] mapping holds these bytes, so the
 * symbolizer unwinds and names vDSO frames from its CFI and symbols. Sent
 * after the meta record, before any sample. The bytes are untrusted ELF.
 */
#define LPS_MAX_VDSO (64u * 1024) /* image bytes */

struct lps_vdso {
	uint64_t time_ns;
	struct lps_str image; /* 1..LPS_MAX_VDSO bytes */
};

/*
 * since 1.6: bytes [offset, offset + data.len) of a process's JIT perf map
 * file (/tmp/perf-NSPID.map in its root), copied by the collector without
 * parsing. Chunks of one file come in offset order; offset 0 starts the
 * file again (a new file, or one that shrank). The content is the process's:
 * untrusted text.
 */
#define LPS_MAX_PERFMAP_CHUNK (64u * 1024) /* data bytes in one record */
struct lps_perfmap {
	uint64_t time_ns;
	uint32_t pid;
	uint64_t offset;
	struct lps_str data; /* bin, 1..LPS_MAX_PERFMAP_CHUNK bytes */
};

/* Any record: type + the member that matches it. */
struct lps_record {
	uint32_t type;
	union {
		struct lps_meta meta;
		struct lps_sample sample;
		struct lps_maps maps;
		struct lps_exec exec;
		struct lps_exit exit;
		struct lps_ksyms ksyms;
		struct lps_loss loss;
		struct lps_end end;
		struct lps_buildid buildid;
		struct lps_cgroup cgroup;
		struct lps_proc proc;
		struct lps_vdso vdso;
		struct lps_mmap mmap;
		struct lps_fork fork;
		struct lps_perfmap perfmap;
		struct lps_perfmap jitdump; /* LPS_JITDUMP: the same fields, another file */
	};
};

/*
 * Decodes one record from buf[0..len). Returns 0, -EBADMSG (malformed:
 * truncated, wrong types, counts beyond the data, trailing garbage) or
 * -ENOTSUP (a record type this reader does not know: skip it; rec->type is
 * set) or -EPROTO (a meta record of another major version: stop reading).
 * Never allocates.
 */
int lps_decode(const void *buf, size_t len, struct lps_record *rec);

/*
 * The type of the record in buf[0..len) without decoding the rest of it
 * (a reader looking for one kind): 0, or -EBADMSG.
 */
int lps_peek_type(const void *buf, size_t len, uint32_t *type);

/*
 * The pid of the sample record in buf[0..len), read as lps_decode reads it,
 * without decoding its stacks (a shard skipping other shards' samples): 0,
 * -ENOENT (not a sample) or -EBADMSG. 0 does not promise that the rest of
 * the record decodes.
 */
int lps_peek_sample_pid(const void *buf, size_t len, uint32_t *pid);

/* Next entry of a maps/ksyms record: 1 = got one, 0 = done, -EBADMSG. */
int lps_maps_next(struct lps_maps *m, struct lps_mapping *out);
int lps_ksyms_next(struct lps_ksyms *k, struct lps_ksym *out);
/* i-th pid of the meta pid filter (i < npids); -EBADMSG if malformed. */
int lps_meta_pid(const struct lps_meta *m, uint32_t i, uint32_t *pid);
/* i-th fallback name of the meta (i < nfallbacks); -EBADMSG if malformed. */
int lps_meta_fallback(const struct lps_meta *m, uint32_t i, struct lps_str *name);

static inline uint64_t lps_frame(const uint8_t *stack, uint32_t i)
{
	uint64_t v;

	memcpy(&v, stack + (size_t)i * 8, 8); /* blobs are not aligned */
	return le64toh(v);
}

/*
 * Encoding. An encoder writes into a caller-owned fixed buffer (no
 * allocation: the drain loop) or into a growing heap buffer (maps, ksyms).
 * After the calls, lps_enc_len() is the record's length, or a negative errno
 * if it did not fit (-ENOSPC) or memory ran out (-ENOMEM).
 */
struct lps_enc {
	uint8_t *buf;
	size_t cap, len;
	bool dynamic;
	int err;
};

void lps_enc_init_fixed(struct lps_enc *e, void *buf, size_t cap);
void lps_enc_init_dynamic(struct lps_enc *e);
void lps_enc_reset(struct lps_enc *e);
void lps_enc_free(struct lps_enc *e); /* dynamic buffers only; NULL-safe */
long lps_enc_len(const struct lps_enc *e);

/* fallbacks: m->nfallbacks names (m->fallbacks_raw is not read) */
void lps_enc_meta(struct lps_enc *e, const struct lps_meta *m, const uint32_t *pids,
		  const struct lps_str *fallbacks);
void lps_enc_sample(struct lps_enc *e, const struct lps_sample *s);
/* maps: begin with the entry count, then exactly count entries */
void lps_enc_maps_begin(struct lps_enc *e, uint64_t time_ns, uint32_t pid, bool append,
			uint32_t count);
void lps_enc_mapping(struct lps_enc *e, const struct lps_mapping *m);
void lps_enc_exec(struct lps_enc *e, const struct lps_exec *x);
void lps_enc_exit(struct lps_enc *e, const struct lps_exit *x);
void lps_enc_ksyms_begin(struct lps_enc *e, uint32_t seq, bool last, uint32_t count);
void lps_enc_ksym(struct lps_enc *e, const struct lps_ksym *k);
void lps_enc_loss(struct lps_enc *e, const struct lps_loss *l);
void lps_enc_end(struct lps_enc *e, const struct lps_end *x);
void lps_enc_buildid(struct lps_enc *e, const struct lps_buildid *b);
void lps_enc_cgroup(struct lps_enc *e, const struct lps_cgroup *g);
void lps_enc_proc(struct lps_enc *e, const struct lps_proc *p);
void lps_enc_vdso(struct lps_enc *e, const struct lps_vdso *v);
void lps_enc_mmap(struct lps_enc *e, const struct lps_mmap *m);
void lps_enc_fork(struct lps_enc *e, const struct lps_fork *f);
void lps_enc_perfmap(struct lps_enc *e, const struct lps_perfmap *p);
/* LPS_JITDUMP: bytes of a jitdump file, in the fields of a perfmap record */
void lps_enc_jitdump(struct lps_enc *e, const struct lps_perfmap *p);

/*
 * What a fallback of the meta means ("no-task-pt-regs": "no bpf_task_pt_regs
 * (< 5.15): ..."), or NULL for a name this reader does not know.
 */
const char *lps_fallback_text(struct lps_str name);

/* Name of a record type for messages ("sample"), or "unknown". */
const char *lps_type_name(uint32_t type);

#endif /* LOWPROF_SCHEMA_H */
