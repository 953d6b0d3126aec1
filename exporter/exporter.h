/* SPDX-License-Identifier: MIT */
/*
 * lowprof-exporter's parts (the encoders are exp.h): the spool queue, the
 * HTTP transport, the metrics endpoint, the sandbox and the run loop.
 */
#ifndef LOWPROF_EXPORTER_H
#define LOWPROF_EXPORTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "lowprof/spoolname.h"

/* ---- options (main.c) ------------------------------------------------------- */

enum exp_dest_type { EXP_PYROSCOPE, EXP_OTLP, EXP_NDEST };

struct exp_opts {
	const char *spool;		     /* the spool directory */
	const char *url[EXP_NDEST];	     /* each destination's base URL, or NULL */
	const char *headers_file[EXP_NDEST]; /* each one's header file, or NULL */
	const char *ca_file;		     /* --ca-file, or NULL: the system's CAs */
	const char *service_name;	     /* --service-name, or NULL */
	const char *metrics;		     /* --metrics ADDR, or NULL */
	const char *user;		     /* started as root: become this user */
	uint32_t timeout_ms;		     /* one request's whole time */
	uint32_t max_backoff_ms;	     /* the longest wait between tries */
	uint32_t stop_grace_ms;		     /* SIGTERM: time left to deliver */
	uint32_t keep_rejected;		     /* windows set aside kept (rejected/) */
	bool oneshot;			     /* exit once the spool is delivered */
	bool sandbox;			     /* --no-sandbox clears it (debugging) */
	int ready_fd;			     /* set up: a byte written, closed; -1 none */
	bool exit_with_parent;		     /* SIGTERM when parent (its pid) dies */
	pid_t parent;
};

/* The exporter: 0 when it stopped as asked, 1 on a fatal error (said). */
int exp_run(const struct exp_opts *o);

/* ---- the spool queue (queue.c) ---------------------------------------------- */

struct exp_win {
	char name[LP_SPOOL_NAME_MAX + 1];
	int kind; /* index into lp_spool_kinds */
	uint64_t seq;
	int64_t start_s;
	uint64_t size;
	uint32_t shard, nshards; /* nshards 1: not a shard's (lowprof/spoolname.h) */
};

/*
 * Windows in delivery order: by number, then kind, then shard (a file
 * without one first). <0, 0 or >0.
 */
int exp_win_cmp(const struct exp_win *a, const struct exp_win *b);

/*
 * The finished windows in the spool dirfd (regular files named as
 * windows; temporary and other names are not), in delivery order: 0 with
 * *out (free it), *n and their bytes in *bytes, or a negative errno.
 */
int exp_queue_scan(int dirfd, struct exp_win **out, size_t *n, uint64_t *bytes);

/*
 * Opens window name of the spool to read: a regular file, not a link.
 * The descriptor, or a negative errno (-ENOENT: the spool's budget took it).
 */
int exp_queue_open(int dirfd, const char *name);

/*
 * Moves window name from the spool into rejfd (the spool's "rejected"
 * directory), then removes the oldest there beyond keep. 0 or -errno.
 */
int exp_queue_set_aside(int dirfd, int rejfd, const char *name, uint32_t keep);

/* ---- HTTP (http.c) ------------------------------------------------------------ */

struct exp_http;

struct exp_http_result {
	long status;		/* HTTP status, 0 when no answer came */
	int curl_code;		/* CURLcode: 0, or why no answer came */
	int64_t retry_after_ms; /* the answer's Retry-After, -1 if none */
	char why[160];		/* a failure's cause, for the log */
};

/*
 * Global set-up (curl_global_init) and the multi handle every transfer
 * runs on. Destructor: exp_http__free.
 */
struct exp_http *exp_http__new(void);
void exp_http__free(struct exp_http *h);

/*
 * A transfer slot for one destination: url, headers (a NULL-terminated
 * list of "Name: value", copied), the CA file (NULL: system CAs) and a
 * timeout. Returns the slot id (>= 0) or a negative errno.
 */
int exp_http__slot(struct exp_http *h, const char *url, const char *const *headers,
		   const char *ca_file, uint32_t timeout_ms);

/* Starts a POST of body (kept by the caller until it is done) on slot. 0 or -errno. */
int exp_http__post(struct exp_http *h, int slot, const void *body, size_t len);

/* Whether slot has a transfer under way. */
bool exp_http__busy(const struct exp_http *h, int slot);

/*
 * Runs the transfers and waits up to timeout_ms for one of them, or for
 * one of extra[0..nextra) to be readable (its revents set). Then for each
 * transfer that finished, done(slot, result, arg). 0 or -errno.
 */
struct pollfd;
int exp_http__run(struct exp_http *h, struct pollfd *extra, unsigned nextra, int timeout_ms,
		  void (*done)(int slot, const struct exp_http_result *r, void *arg), void *arg);

/*
 * Reads a header file: "Name: value" lines, '#' comments and blank lines.
 * It must be a regular file of this user (or root) that nobody else may
 * read: no permission for others, for the group only if it is this
 * process's (mode 0600, 0400; a Kubernetes secret's 0440 with fsGroup).
 * Secrets never travel on a command line. Returns 0 with a
 * NULL-terminated list in *out (free with exp_headers_free), or a negative
 * errno (said why, with the line).
 */
int exp_headers_read(const char *path, char ***out);
/* The lines of such a file in buf (terminated; changed), path for messages. */
int exp_headers_parse(char *buf, const char *path, char ***out);
void exp_headers_free(char **h);

/* ---- metrics (metrics.c) ------------------------------------------------------ */

struct exp_metrics;

/*
 * Listens on addr ("HOST:PORT", "[V6]:PORT" or ":PORT" for every address)
 * for GET /metrics. Destructor: exp_metrics__free. NULL on error (said).
 */
struct exp_metrics *exp_metrics__new(const char *addr);
void exp_metrics__free(struct exp_metrics *m);

/* The descriptors to poll for reading (at most cap): the listener, clients. */
unsigned exp_metrics__fds(const struct exp_metrics *m, struct pollfd *out, unsigned cap);

/*
 * Serves what is ready (pfds as exp_metrics__fds filled and poll set);
 * text(buf, cap, arg) writes the page and returns its length.
 */
void exp_metrics__serve(struct exp_metrics *m, const struct pollfd *pfds, unsigned n,
			size_t (*text)(char *buf, size_t cap, void *arg), void *arg);

/*
 * Whether l[0..len) is a metrics line the exporter may pass on from the
 * symbolizer's metrics file: "# HELP lowprof_...", "# TYPE lowprof_..." or
 * "lowprof_name{labels} number", printable ASCII, none of the exporter's
 * own (lowprof_exporter_*).
 */
bool exp_metrics_line_ok(const char *l, size_t len);

/* ---- the symbolizers' metrics files (symbmetrics.c) ----------------------------- */

/* One metrics file of the spool: "metrics.prom" or a shard's "metrics-sKofN.prom". */
struct exp_symb_page {
	char *text; /* its first 64 KiB */
	size_t len;
	struct timespec mtime;
	uint32_t shard, nshards; /* nshards 1: no shard's */
};

/* the files read for one /metrics page (one per shard of one run, and a stale one) */
#define EXP_SYMB_PAGES (LP_MAX_SHARDS + 1)

/*
 * Reads the spool's metrics files into pages (at most cap), ordered by
 * shard (no shard's first): how many. Free them with exp_symb_free.
 */
size_t exp_symb_read(int spool, struct exp_symb_page *pages, size_t cap);
void exp_symb_free(struct exp_symb_page *pages, size_t n);

/*
 * The lines of pages[0..n) the exporter passes on (exp_metrics_line_ok),
 * written to buf (at most cap bytes; a line whole or not at all): those of
 * the lowprof_process_resident_bytes family only with resident, the others
 * without. A shard's samples without a shard label get shard="KofN" (first). One file:
 * its lines as they come; several: each family once (the first file's
 * HELP and TYPE), then every file's samples of it. Returns the length.
 */
size_t exp_symb_lines(const struct exp_symb_page *pages, size_t n, char *buf, size_t cap,
		      bool resident);

/* The lowprof_symbolizer_metrics_age_seconds family of pages[0..n) (none: nothing). */
size_t exp_symb_age(const struct exp_symb_page *pages, size_t n, char *buf, size_t cap);

/* ---- sandbox (sandbox.c) ------------------------------------------------------ */

/*
 * The exporter's seccomp filter (and no_new_privs): sockets of the
 * Internet families and Unix (name service), files opened only to read,
 * removed and renamed only in the spool (spooldir, rejdir), threads (the
 * resolver's) but no new process, memory that is never executable; no
 * exec, no ptrace, no bpf, no signal to another process. 0 or -errno.
 */
int exp_sandbox_enter(int spooldir, int rejdir);

/*
 * --check-sandbox DIR: enters the filter with DIR as the spool (an empty
 * directory of this user's) and tries what it must refuse, one line each:
 * exec, a new process, ptrace, bpf, perf_event_open, a packet socket,
 * files made or opened to write, a spool file removed by path or renamed,
 * a signal to another process, executable memory; then what it needs.
 * 0 when each was refused and each need met, 1 otherwise, 2 on set-up.
 */
int exp_sandbox_check(const char *dir);

/* Whether this is a sanitizer build (its filter refuses a list instead). */
bool exp_sanitized(void);

#endif /* LOWPROF_EXPORTER_H */
