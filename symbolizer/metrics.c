// SPDX-License-Identifier: MIT
/* The symbolizer's self-metrics (metrics.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "metrics.h"

#define PAGE 8192

struct page {
	char buf[PAGE];
	size_t n;
	/* every sample's first label ("shard=\"1of2\"") and its separator, or "" */
	const char *label, *sep;
};

__attribute__((format(printf, 2, 3))) static void put(struct page *p, const char *fmt, ...)
{
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(p->buf + p->n, PAGE - p->n, fmt, ap);
	va_end(ap);
	if (w > 0)
		p->n = p->n + (size_t)w < PAGE ? p->n + (size_t)w : PAGE - 1;
}

/* "{label}" after a sample's name, or nothing */
#define LABELS(p) (p)->label[0] ? "{" : "", (p)->label, (p)->label[0] ? "}" : ""

static void counter(struct page *p, const char *name, const char *help, uint64_t v)
{
	put(p, "# HELP %s %s\n# TYPE %s counter\n%s%s%s%s %" PRIu64 "\n", name, help, name, name,
	    LABELS(p), v);
}

static void gauge(struct page *p, const char *name, const char *help, double v)
{
	put(p, "# HELP %s %s\n# TYPE %s gauge\n%s%s%s%s %.6g\n", name, help, name, name, LABELS(p),
	    v);
}

int symb_metrics_write(int fd, const struct symb_metrics_in *in)
{
	static struct page p;
	const struct symb_counters *c = in->c;
	const struct lps_loss *l = &c->loss;
	const struct symb_objects_stats *os = in->os;
	/* the collector's losses by cause (its counters: they start over with a new collector) */
	const struct {
		const char *cause;
		uint64_t v;
	} lost[] = {
		{"bpf_ring_full", l->bpf_ringbuf_full},	  {"bpf_stack_error", l->bpf_stack_errors},
		{"shm_ring_full", l->shm_dropped},	  {"task_event_lost", l->bpf_task_lost},
		{"off_cpu_record_lost", l->off_cpu_lost}, {"capture_dropped", l->capture_dropped},
		{"maps_read_error", l->maps_errors},	  {"malformed_record", in->t->bad_records},
		{"over_limit", in->t->over_limit},	  {"mmap_event_lost", l->mmap_events_lost},
	};
	uint64_t rss;

	p.n = 0;
	p.buf[0] = '\0';
	p.label = in->shard_label ? in->shard_label : "";
	p.sep = p.label[0] ? "," : "";
	counter(&p, "lowprof_symbolizer_samples_total", "On-CPU samples aggregated.",
		in->t->samples);
	counter(&p, "lowprof_symbolizer_offcpu_samples_total", "Off-CPU samples aggregated.",
		in->t->offcpu_samples);
	counter(&p, "lowprof_collector_samples_total",
		"Samples the BPF programs emitted (the collector's count).", l->bpf_samples);
	put(&p, "# HELP lowprof_lost_total Samples and records lost, by cause.\n"
		"# TYPE lowprof_lost_total counter\n");
	for (size_t i = 0; i < sizeof(lost) / sizeof(lost[0]); i++)
		put(&p, "lowprof_lost_total{%s%scause=\"%s\"} %" PRIu64 "\n", p.label, p.sep,
		    lost[i].cause, lost[i].v);
	counter(&p, "lowprof_collector_restarts_total",
		"Collectors started again under this symbolizer.", in->t->restarts);
	counter(&p, "lowprof_spool_windows_written_total", "Window files written into the spool.",
		in->sp->windows);
	counter(&p, "lowprof_spool_windows_removed_total",
		"Oldest window files removed for the spool's byte budget, or a full disk.",
		in->sp->removed);
	counter(&p, "lowprof_spool_windows_removed_full_total",
		"Of those, removed because the disk was full before the budget.",
		in->sp->removed_full);
	counter(&p, "lowprof_spool_windows_failed_total", "Window files that could not be written.",
		in->sp->failed);
	counter(&p, "lowprof_symbolizer_records_total",
		"Records read from the ring, of every kind.", c->records);
	gauge(&p, "lowprof_symbolizer_lag_peak_seconds",
	      "The most a sample read during the window was behind the clock: the collector's "
	      "drain and this symbolizer's backlog.",
	      c->lag_peak_ns / 1e9);
	gauge(&p, "lowprof_symbolizer_ring_fill_peak_ratio",
	      "The fullest this symbolizer's ring was at a read during the window (bytes unread "
	      "over its size): at 1 the collector drops samples.",
	      c->ring_bytes ? (double)c->ring_peak_bytes / (double)c->ring_bytes : 0);
	gauge(&p, "lowprof_symbolizer_window_lag_seconds",
	      "How late after its end the last window was written.", in->window_lag_s);
	counter(&p, "lowprof_symbolizer_cache_hits_total",
		"Binaries whose tables came from the symbol cache.", os->cache_hits);
	counter(&p, "lowprof_symbolizer_cache_stored_total",
		"Binaries whose tables were parsed and stored.", os->cache_stored);
	gauge(&p, "lowprof_symbolizer_objects", "Binaries in the symbolizer's table.", os->objs);
	counter(&p, "lowprof_symbolizer_objects_evicted_total",
		"Loaded tables dropped for the memory budget.", os->evicted);
	gauge(&p, "lowprof_symbolizer_processes", "Processes the symbolizer knows.", c->procs);
	if (in->statm_fd >= 0 && !lp_statm_resident(in->statm_fd, &rss))
		put(&p, "lowprof_process_resident_bytes{%s%sprocess=\"symbolizer\"} %" PRIu64 "\n",
		    p.label, p.sep, rss);
	/* the collector's: statm is readable by anyone (no ptrace check); gone: nothing */
	if (in->collector_pid > 0) {
		char path[32];
		int sfd;

		snprintf(path, sizeof(path), "/proc/%d/statm", (int)in->collector_pid);
		sfd = open(path, O_RDONLY | O_CLOEXEC);
		if (sfd >= 0 && !lp_statm_resident(sfd, &rss))
			put(&p,
			    "lowprof_process_resident_bytes{%s%sprocess=\"collector\"} %" PRIu64
			    "\n",
			    p.label, p.sep, rss);
		if (sfd >= 0)
			close(sfd);
	}
	return lp_write_all(fd, p.buf, p.n);
}
