// SPDX-License-Identifier: MIT
/*
 * The exporter's loop (exporter.h). Each destination keeps a cursor per
 * stream of files (the run's, or one shard's: lowprof/spoolname.h): the
 * last window of it (in delivery order: number, then kind, then shard) it
 * is done with, because the destination accepted it (2xx), refused it for
 * good (4xx but 429), or it could not be read. A destination sends the
 * first window past its cursor, one at a time, so windows arrive in order,
 * none twice in one run. Shards write apart: one may add window N after
 * another's N+1 was sent, and its own cursor still sends it. A failed try
 * (no answer, 429, 5xx) is tried again after a backoff
 * that doubles up to --max-backoff, with jitter, or after the answer's
 * Retry-After. A window leaves the spool once every destination is past
 * it: removed, or moved to rejected/ if one refused it. Nothing is kept but
 * in the spool, so a restarted exporter sends again what it had not
 * finished (at least once). The spool's writer removes the oldest windows
 * over its byte budget, delivered or not: a backend that is down never
 * holds up collection, and what it costs is counted.
 */
#include <ctype.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <netdb.h>

#include "lowprof/clock.h"
#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "lowprof/pprof_read.h"
#include "lowprof/user.h"
#include "exp.h"
#include "exporter.h"

#define SCAN_MS		   1000
#define MAX_CAUSES	   16
#define RETRY_AFTER_MAX_MS (3600 * 1000)

static const char *const dest_names[EXP_NDEST] = {"pyroscope", "otlp"};

struct dest {
	enum exp_dest_type type;
	const char *name;
	char *url;
	char **headers;
	int slot;
	/* per stream (lp_spool_stream): the last window it is done with */
	bool has_cursor[LP_SPOOL_STREAMS];
	struct exp_win cursor[LP_SPOOL_STREAMS];
	bool have_win; /* win is encoded in body, being tried */
	struct exp_win win;
	uint8_t *body;
	size_t body_len;
	unsigned attempts;
	int64_t next_try_ms;
	uint64_t sent, sent_bytes, failed, rejected, empty, bad;
	char causes[MAX_CAUSES][48]; /* failures already reported */
	int ncauses;
	bool failing;
};

/* What the exporter follows of each stream of files. */
struct stream {
	uint64_t top_seq[LP_SPOOL_KINDS]; /* the highest window number seen, per kind */
	bool seen[LP_SPOOL_KINDS];
	struct exp_win counted; /* samples are counted once per window: the last one */
	bool has_counted;
};

struct state {
	const struct exp_opts *o;
	struct dest d[EXP_NDEST];
	int nd;
	struct exp_http *http;
	struct exp_metrics *metrics;
	int spool, rej, statm;
	struct exp_identity id;
	char host[256];
	struct exp_win *q; /* the spool's windows, in order */
	size_t nq;
	uint64_t spool_bytes;
	uint64_t removed, set_aside, dropped, samples[LP_SPOOL_KINDS];
	struct stream *st; /* [LP_SPOOL_STREAMS] */
	/* the window read last, kept for the other destinations until it is retired */
	struct lpw_read *cache;
	struct exp_win cache_w;
};

static volatile sig_atomic_t stop_signals;

static void on_signal(int sig)
{
	(void)sig;
	stop_signals++;
}

static unsigned stream_of(const struct exp_win *w)
{
	return lp_spool_stream(w->shard, w->nshards);
}

/* Whether w is at or before d's cursor of its stream. */
static bool done_with(const struct dest *d, const struct exp_win *w)
{
	unsigned k = stream_of(w);

	return d->has_cursor[k] && exp_win_cmp(w, &d->cursor[k]) <= 0;
}

static void advance(struct dest *d, const struct exp_win *w)
{
	d->cursor[stream_of(w)] = *w;
	d->has_cursor[stream_of(w)] = true;
	free(d->body);
	d->body = NULL;
	d->body_len = 0;
	d->have_win = false;
	d->attempts = 0;
	d->next_try_ms = 0;
}

/* A failure's cause said once per destination and cause (the first ones). */
static void report(struct dest *d, bool warn, const char *cause, const char *detail)
{
	for (int i = 0; i < d->ncauses; i++)
		if (!strcmp(d->causes[i], cause))
			return;
	if (d->ncauses < MAX_CAUSES)
		snprintf(d->causes[d->ncauses++], sizeof(d->causes[0]), "%s", cause);
	lp_log(warn ? LP_LOG_WARN : LP_LOG_ERROR, "%s: %s (%s; said once)", d->name, detail,
	       d->url);
}

/* ---- windows to bodies ------------------------------------------------------- */

static int64_t window_samples(const struct lpw_profile *p)
{
	int64_t n = 0;

	for (size_t i = 0; i < p->nstacks; i++)
		n += p->stacks[i].values[0];
	return n;
}

/*
 * Window w's profile: read and checked once for every destination (the
 * window read last is kept until it leaves the spool). 0, or a negative
 * errno (-ENOENT: the budget took it; else it cannot be read, said).
 */
static int read_window(struct state *s, const struct dest *d, const struct exp_win *w,
		       const struct lpw_profile **p)
{
	char why[256] = "";
	struct lpw_read *r = NULL;
	int fd, err;

	if (s->cache && !exp_win_cmp(w, &s->cache_w)) {
		*p = lpw_read__profile(s->cache);
		return 0;
	}
	fd = exp_queue_open(s->spool, w->name);
	if (fd < 0)
		return fd;
	err = lpw_read_pprof(fd, NULL, &r, why, sizeof(why));
	close(fd);
	if (err) {
		lp_err("%s: window %s cannot be read (%s): set aside", d->name, w->name,
		       why[0] ? why : strerror(-err));
		return err == -ENOENT ? -EIO : err;
	}
	lpw_read__free(s->cache);
	s->cache = r;
	s->cache_w = *w;
	*p = lpw_read__profile(r);
	{
		struct stream *st = &s->st[stream_of(w)];

		if (!st->has_counted || exp_win_cmp(w, &st->counted) > 0) {
			s->samples[w->kind] += (uint64_t)window_samples(*p);
			st->counted = *w;
			st->has_counted = true;
		}
	}
	return 0;
}

/*
 * Encodes window w for d into d->body: 0; 1 when it has no sample (nothing
 * to send); -ENOENT when the budget took it; another negative errno when it
 * cannot be read or encoded (said).
 */
static int encode(struct state *s, struct dest *d, const struct exp_win *w)
{
	const struct lpw_profile *p;
	uint8_t *raw = NULL;
	size_t len = 0;
	int err = read_window(s, d, w, &p);

	if (err)
		return err;
	if (!p->nstacks)
		return 1;
	s->id.kind = lp_spool_kinds[w->kind];
	s->id.seq = w->seq;
	if (d->type == EXP_PYROSCOPE) {
		err = exp_pyroscope_encode(p, &s->id, &d->body, &d->body_len);
	} else {
		err = exp_otlp_encode(p, &s->id, &raw, &len);
		if (!err)
			err = lpw_gzip(raw, len, &d->body, &d->body_len);
		free(raw);
	}
	if (err)
		lp_err("%s: window %s: encoding failed: %s", d->name, w->name, strerror(-err));
	return err;
}

/* ---- the spool ------------------------------------------------------------------ */

/*
 * Rescans the spool. Windows that vanished undelivered went to the budget,
 * and so did those it took between two scans: their numbers are missing
 * (the symbolizer numbers a kind's windows without a gap, across restarts).
 * A shard's numbers are times (symbolizer/spool.h): they jump over the
 * time between two runs, so only the first count is kept for them.
 */
static void rescan(struct state *s)
{
	struct exp_win *v;
	size_t n;
	uint64_t bytes;

	if (exp_queue_scan(s->spool, &v, &n, &bytes)) {
		lp_warn("spool: cannot list it: %m");
		return;
	}
	/* both lists are in delivery order: one walk */
	for (size_t i = 0, j = 0; i < s->nq; i++) {
		bool undelivered = false;

		while (j < n && exp_win_cmp(&v[j], &s->q[i]) < 0)
			j++;
		if (j < n && !exp_win_cmp(&v[j], &s->q[i]))
			continue;
		for (int k = 0; k < s->nd; k++)
			undelivered |= !done_with(&s->d[k], &s->q[i]);
		s->dropped += undelivered;
	}
	for (size_t j = 0; j < n; j++) {
		struct stream *st = &s->st[stream_of(&v[j])];
		int k = v[j].kind;

		if (st->seen[k] && v[j].seq > st->top_seq[k] + 1 && v[j].nshards <= 1)
			s->dropped += v[j].seq - st->top_seq[k] - 1;
		if (!st->seen[k] || v[j].seq > st->top_seq[k])
			st->top_seq[k] = v[j].seq;
		st->seen[k] = true;
	}
	free(s->q);
	s->q = v;
	s->nq = n;
	s->spool_bytes = bytes;
}

/* Removes (or sets aside, if refused) the windows every destination is past. */
static void retire(struct state *s, const struct exp_win *refused)
{
	size_t kept = 0;

	for (size_t i = 0; i < s->nq; i++) {
		bool all = true;

		for (int k = 0; k < s->nd; k++)
			all &= done_with(&s->d[k], &s->q[i]);
		if (!all) {
			s->q[kept++] = s->q[i];
			continue;
		}
		if (s->cache && !exp_win_cmp(&s->cache_w, &s->q[i])) {
			lpw_read__free(s->cache);
			s->cache = NULL;
		}
		if (refused && !exp_win_cmp(refused, &s->q[i])) {
			if (!exp_queue_set_aside(s->spool, s->rej, s->q[i].name,
						 s->o->keep_rejected))
				s->set_aside++;
		} else if (!unlinkat(s->spool, s->q[i].name, 0)) {
			s->removed++;
		}
		s->spool_bytes -= s->spool_bytes >= s->q[i].size ? s->q[i].size : s->spool_bytes;
	}
	s->nq = kept;
}

/* ---- one destination ---------------------------------------------------------- */

static void start_next(struct state *s, struct dest *d, int64_t now)
{
	while (!exp_http__busy(s->http, d->slot) && now >= d->next_try_ms) {
		const struct exp_win *w = NULL;
		int err;

		if (!d->have_win) {
			for (size_t i = 0; i < s->nq && !w; i++)
				if (!done_with(d, &s->q[i]))
					w = &s->q[i];
			if (!w)
				return;
			err = encode(s, d, w);
			if (err == -ENOENT) {
				rescan(s); /* the budget took it: on to the next */
				continue;
			}
			if (err) {
				struct exp_win gone = *w;

				if (err < 0)
					d->bad++;
				else
					d->empty++;
				advance(d, &gone);
				retire(s, err < 0 ? &gone : NULL);
				continue;
			}
			d->win = *w;
			d->have_win = true;
		}
		err = exp_http__post(s->http, d->slot, d->body, d->body_len);
		if (err) {
			report(d, false, "post", "cannot start a request");
			d->next_try_ms = now + 1000;
		}
		return;
	}
}

static int64_t backoff_ms(const struct state *s, unsigned attempts)
{
	uint64_t max = s->o->max_backoff_ms, base = 1000;
	uint32_t r = 0;

	for (unsigned i = 1; i < attempts && base < max; i++)
		base *= 2;
	if (base > max)
		base = max;
	/* jitter: half fixed, half random, so a fleet's exporters spread out */
	if (getrandom(&r, sizeof(r), GRND_NONBLOCK) != sizeof(r))
		r = (uint32_t)lp_clock_ms(CLOCK_MONOTONIC);
	return (int64_t)(base / 2 + (base / 2 ? r % (base / 2 + 1) : 0));
}

static void on_done(int slot, const struct exp_http_result *r, void *arg)
{
	struct state *s = arg;
	struct dest *d = NULL;
	int64_t now = lp_clock_ms(CLOCK_MONOTONIC);

	for (int k = 0; k < s->nd; k++)
		if (s->d[k].slot == slot)
			d = &s->d[k];
	if (!d || !d->have_win)
		return;
	if (r->status >= 200 && r->status < 300) {
		struct exp_win w = d->win;

		if (d->failing)
			lp_info("%s: delivering again after %u tries of window %s", d->name,
				d->attempts + 1, w.name);
		d->failing = false;
		d->sent++;
		d->sent_bytes += d->body_len;
		lp_debug("%s: window %s sent (%zu bytes)", d->name, w.name, d->body_len);
		advance(d, &w);
		retire(s, NULL);
		return;
	}
	if (r->status >= 400 && r->status < 500 && r->status != 429 && r->status != 408) {
		struct exp_win w = d->win;
		char cause[48];

		snprintf(cause, sizeof(cause), "HTTP %ld", r->status);
		report(d, false, cause, r->why);
		lp_debug("%s: window %s refused (%s): set aside in rejected/", d->name, w.name,
			 cause);
		d->rejected++;
		advance(d, &w);
		retire(s, &w);
		return;
	}
	/* no answer, 408, 429, 5xx: again, later */
	d->failed++;
	d->attempts++;
	d->failing = true;
	{
		char cause[48];
		int64_t wait = backoff_ms(s, d->attempts);

		if (r->status)
			snprintf(cause, sizeof(cause), "HTTP %ld", r->status);
		else
			snprintf(cause, sizeof(cause), "curl %d", r->curl_code);
		if (r->retry_after_ms >= 0)
			wait = r->retry_after_ms < RETRY_AFTER_MAX_MS ? r->retry_after_ms
								      : RETRY_AFTER_MAX_MS;
		report(d, true, cause, r->why);
		lp_debug("%s: window %s: %s; trying again in %" PRId64 " ms", d->name, d->win.name,
			 r->why, wait);
		d->next_try_ms = now + wait;
	}
}

/* Whether every destination is done with every window in the spool. */
static bool all_delivered(const struct state *s)
{
	for (int k = 0; k < s->nd; k++) {
		if (s->d[k].have_win)
			return false;
		for (size_t i = 0; i < s->nq; i++)
			if (!done_with(&s->d[k], &s->q[i]))
				return false;
	}
	return true;
}

/* ---- metrics ------------------------------------------------------------------ */

#define P(...)                                                                                     \
	do {                                                                                       \
		int w_ = snprintf(buf + n, n < cap ? cap - n : 0, __VA_ARGS__);                    \
		if (w_ > 0)                                                                        \
			n += (size_t)w_;                                                           \
	} while (0)

/* The counters each destination keeps, one metric family each. */
static const struct dest_family {
	const char *name, *help;
	size_t off; /* of its uint64_t in struct dest */
} dest_families[] = {
	{"lowprof_exporter_windows_sent_total", "Windows a destination accepted.",
	 offsetof(struct dest, sent)},
	{"lowprof_exporter_sent_bytes_total", "Request bytes a destination accepted.",
	 offsetof(struct dest, sent_bytes)},
	{"lowprof_exporter_failed_total",
	 "Tries that failed and will be tried again (no answer, 408, 429, 5xx).",
	 offsetof(struct dest, failed)},
	{"lowprof_exporter_windows_rejected_total",
	 "Windows a destination refused (4xx but 408 and 429), set aside.",
	 offsetof(struct dest, rejected)},
	{"lowprof_exporter_windows_unreadable_total", "Windows that could not be read, set aside.",
	 offsetof(struct dest, bad)},
	{"lowprof_exporter_windows_empty_total", "Windows without a sample, not sent.",
	 offsetof(struct dest, empty)},
};

static size_t metrics_text(char *buf, size_t cap, void *arg)
{
	struct exp_symb_page symb[EXP_SYMB_PAGES];
	struct state *s = arg;
	size_t n = 0, ns;
	uint64_t rss = 0;

	if (s->statm >= 0)
		lp_statm_resident(s->statm, &rss);
	ns = exp_symb_read(s->spool, symb, EXP_SYMB_PAGES);
	for (size_t f = 0; f < sizeof(dest_families) / sizeof(dest_families[0]); f++) {
		const struct dest_family *m = &dest_families[f];

		P("# HELP %s %s\n# TYPE %s counter\n", m->name, m->help, m->name);
		for (int k = 0; k < s->nd; k++)
			P("%s{destination=\"%s\"} %" PRIu64 "\n", m->name, s->d[k].name,
			  *(const uint64_t *)((const char *)&s->d[k] + m->off));
	}
	P("# HELP lowprof_exporter_backlog_windows Windows a destination has yet to deliver.\n"
	  "# TYPE lowprof_exporter_backlog_windows gauge\n");
	for (int k = 0; k < s->nd; k++) {
		uint64_t b = 0;

		for (size_t i = 0; i < s->nq; i++)
			b += !done_with(&s->d[k], &s->q[i]);
		P("lowprof_exporter_backlog_windows{destination=\"%s\"} %" PRIu64 "\n",
		  s->d[k].name, b);
	}
	P("# HELP lowprof_spool_windows_dropped_total Windows the spool's byte budget removed "
	  "before every destination had them.\n"
	  "# TYPE lowprof_spool_windows_dropped_total counter\n"
	  "lowprof_spool_windows_dropped_total %" PRIu64 "\n",
	  s->dropped);
	P("# HELP lowprof_spool_windows_delivered_total Windows removed from the spool once "
	  "delivered.\n"
	  "# TYPE lowprof_spool_windows_delivered_total counter\n"
	  "lowprof_spool_windows_delivered_total %" PRIu64 "\n",
	  s->removed);
	P("# HELP lowprof_spool_windows_set_aside_total Windows moved to rejected/.\n"
	  "# TYPE lowprof_spool_windows_set_aside_total counter\n"
	  "lowprof_spool_windows_set_aside_total %" PRIu64 "\n",
	  s->set_aside);
	P("# HELP lowprof_spool_bytes Bytes of windows in the spool.\n"
	  "# TYPE lowprof_spool_bytes gauge\n"
	  "lowprof_spool_bytes %" PRIu64 "\n",
	  s->spool_bytes);
	P("# HELP lowprof_spool_windows Windows in the spool.\n"
	  "# TYPE lowprof_spool_windows gauge\n"
	  "lowprof_spool_windows %zu\n",
	  s->nq);
	P("# HELP lowprof_samples_total Samples in the windows the exporter read.\n"
	  "# TYPE lowprof_samples_total counter\n");
	for (int k = 0; k < LP_SPOOL_KINDS; k++)
		P("lowprof_samples_total{kind=\"%s\"} %" PRIu64 "\n", lp_spool_kinds[k],
		  s->samples[k]);
	n += exp_symb_age(symb, ns, buf + (n < cap ? n : cap), n < cap ? cap - n : 0);
	n += exp_symb_lines(symb, ns, buf + (n < cap ? n : cap), n < cap ? cap - n : 0, false);
	P("# HELP lowprof_process_resident_bytes Resident memory of a lowprof process.\n"
	  "# TYPE lowprof_process_resident_bytes gauge\n"
	  "lowprof_process_resident_bytes{process=\"exporter\"} %" PRIu64 "\n",
	  rss);
	n += exp_symb_lines(symb, ns, buf + (n < cap ? n : cap), n < cap ? cap - n : 0, true);
	exp_symb_free(symb, ns);
	return n < cap ? n : cap;
}

/* ---- set-up ---------------------------------------------------------------------- */

/* base + path, without a doubled '/': the URL of each destination's requests */
static char *join_url(const char *base, const char *path)
{
	size_t bl = strlen(base);
	char *u;

	while (bl && base[bl - 1] == '/')
		bl--;
	u = malloc(bl + strlen(path) + 1);
	if (u) {
		memcpy(u, base, bl);
		strcpy(u + bl, path);
	}
	return u;
}

/*
 * Resolves the destination's host once before the sandbox closes, so that
 * the name service's modules are loaded (it may load no code later).
 */
static void warm_resolver(const char *url)
{
	const char *h = strstr(url, "://");
	char host[256];
	size_t n = 0;
	struct addrinfo *res = NULL;

	if (!h)
		return;
	h += 3;
	if (*h == '[')
		return; /* a literal IPv6 address */
	while (h[n] && h[n] != ':' && h[n] != '/' && n + 1 < sizeof(host)) {
		host[n] = h[n];
		n++;
	}
	host[n] = '\0';
	if (n && !getaddrinfo(host, NULL, NULL, &res))
		freeaddrinfo(res);
}

static int add_dest(struct state *s, enum exp_dest_type t)
{
	static const char *const paths[EXP_NDEST] = {"/push.v1.PusherService/Push",
						     "/v1development/profiles"};
	static const char *const types[EXP_NDEST] = {
		"Content-Type: application/proto",
		"Content-Type: application/x-protobuf",
	};
	const struct exp_opts *o = s->o;
	struct dest *d = &s->d[s->nd];
	char **file = NULL;
	const char *hdr[72];
	size_t nh = 0;
	int err;

	memset(d, 0, sizeof(*d));
	s->nd++; /* cleanup() frees what it gets from here on */
	d->type = t;
	d->name = dest_names[t];
	d->url = join_url(o->url[t], paths[t]);
	if (!d->url)
		return -ENOMEM;
	if (o->headers_file[t]) {
		err = exp_headers_read(o->headers_file[t], &file);
		if (err)
			return err;
	}
	d->headers = file;
	hdr[nh++] = types[t];
	if (t == EXP_PYROSCOPE)
		hdr[nh++] = "Connect-Protocol-Version: 1";
	else
		hdr[nh++] = "Content-Encoding: gzip";
	for (size_t i = 0; file && file[i] && nh + 1 < sizeof(hdr) / sizeof(hdr[0]); i++)
		hdr[nh++] = file[i];
	hdr[nh] = NULL;
	d->slot = exp_http__slot(s->http, d->url, hdr, o->ca_file, o->timeout_ms);
	if (d->slot < 0) {
		lp_err("%s: cannot set up requests to %s", d->name, d->url);
		return d->slot;
	}
	warm_resolver(d->url);
	return 0;
}

static void cleanup(struct state *s)
{
	for (int k = 0; k < s->nd; k++) {
		free(s->d[k].url);
		free(s->d[k].body);
		exp_headers_free(s->d[k].headers);
	}
	lpw_read__free(s->cache);
	exp_http__free(s->http);
	exp_metrics__free(s->metrics);
	free(s->q);
	free(s->st);
	if (s->spool >= 0)
		close(s->spool);
	if (s->rej >= 0)
		close(s->rej);
	if (s->statm >= 0)
		close(s->statm);
}

static int setup(struct state *s)
{
	const struct exp_opts *o = s->o;
	struct sigaction sa = {.sa_handler = on_signal};
	int err;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	/*
	 * another process of the same user (the symbolizer) may not ptrace
	 * it; sanitizer builds stay dumpable: LeakSanitizer ptraces at exit
	 */
	if (!exp_sanitized())
		prctl(PR_SET_DUMPABLE, 0);
	err = lp_become_user(o->user, "--user");
	if (err)
		return err;
	/* changing uid made it undumpable (fs.suid_dumpable): again for LeakSanitizer */
	if (exp_sanitized())
		prctl(PR_SET_DUMPABLE, 1);
	/* after the uid change, which clears the parent-death signal */
	if (o->exit_with_parent && lp_exit_with_parent(o->parent)) {
		lp_err("the parent process is gone: not starting");
		return -ECHILD;
	}
	s->spool = lp_open_dir_nofollow(o->spool, false, 0700);
	if (s->spool < 0) {
		lp_err("spool: %s: %s%s", o->spool, strerror(-s->spool),
		       s->spool == -EACCES ? " (the spool is its symbolizer user's, mode 0700: run "
					     "the exporter as that user)"
					   : "");
		return s->spool;
	}
	if (mkdirat(s->spool, "rejected", 0700) && errno != EEXIST) {
		err = -errno;
		lp_err("spool: %s/rejected: %s", o->spool, strerror(-err));
		return err;
	}
	s->rej = openat(s->spool, "rejected", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (s->rej < 0) {
		err = -errno;
		lp_err("spool: %s/rejected: %s", o->spool, strerror(-err));
		return err;
	}
	s->statm = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
	s->st = calloc(LP_SPOOL_STREAMS, sizeof(*s->st));
	if (!s->st)
		return -ENOMEM;
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "unknown");
	s->id.host_name = s->host;
	s->id.service_name = o->service_name;
	s->http = exp_http__new();
	if (!s->http)
		return -ENOMEM;
	for (int t = 0; t < EXP_NDEST; t++)
		if (o->url[t] && (err = add_dest(s, t)))
			return err;
	if (o->metrics) {
		s->metrics = exp_metrics__new(o->metrics);
		if (!s->metrics)
			return -EINVAL;
	}
	if (o->sandbox && (err = exp_sandbox_enter(s->spool, s->rej)))
		return err;
	return 0;
}

int exp_run(const struct exp_opts *o)
{
	struct state s = {.o = o, .spool = -1, .rej = -1, .statm = -1};
	int64_t next_scan = 0, stop_at = 0;
	int seen_signals = 0, rc = 0;

	if (setup(&s)) {
		cleanup(&s);
		return 1;
	}
	if (o->ready_fd >= 0) {
		if (write(o->ready_fd, "1", 1) != 1)
			lp_warn("--ready-fd: %m");
		close(o->ready_fd);
	}
	for (int k = 0; k < s.nd; k++)
		lp_info("%s: delivering %s's windows to %s", s.d[k].name, o->spool, s.d[k].url);
	for (;;) {
		struct pollfd pf[8];
		unsigned npf = exp_metrics__fds(s.metrics, pf, 8);
		int64_t now = lp_clock_ms(CLOCK_MONOTONIC), wait = SCAN_MS;

		if (stop_signals != seen_signals) {
			if (seen_signals || !o->stop_grace_ms)
				break;
			seen_signals = stop_signals;
			stop_at = now + o->stop_grace_ms;
			next_scan = 0; /* the symbolizer's last window, if it came */
		}
		if (now >= next_scan) {
			rescan(&s);
			next_scan = now + SCAN_MS;
		}
		if ((stop_at || o->oneshot) && all_delivered(&s))
			break;
		if (stop_at && now >= stop_at)
			break;
		for (int k = 0; k < s.nd; k++) {
			start_next(&s, &s.d[k], now);
			if (!exp_http__busy(s.http, s.d[k].slot) && s.d[k].next_try_ms > now &&
			    s.d[k].next_try_ms - now < wait)
				wait = s.d[k].next_try_ms - now;
		}
		if (next_scan - now < wait)
			wait = next_scan - now;
		if (exp_http__run(s.http, pf, npf, (int)(wait > 0 ? wait : 0), on_done, &s)) {
			lp_err("http: the transfer loop failed");
			rc = 1;
			break;
		}
		exp_metrics__serve(s.metrics, pf, npf, metrics_text, &s);
	}
	for (int k = 0; k < s.nd; k++) {
		struct dest *d = &s.d[k];
		uint64_t left = 0;

		for (size_t i = 0; i < s.nq; i++)
			left += !done_with(d, &s.q[i]);
		lp_info("%s: %" PRIu64 " windows sent (%.1f MB), %" PRIu64 " refused, %" PRIu64
			" unreadable, %" PRIu64 " empty, %" PRIu64 " failed tries; %" PRIu64
			" left in the spool",
			d->name, d->sent, (double)d->sent_bytes / 1e6, d->rejected, d->bad,
			d->empty, d->failed, left);
	}
	if (s.dropped)
		lp_warn("spool: %" PRIu64 " windows were removed by its byte budget before they "
			"were delivered",
			s.dropped);
	cleanup(&s);
	return rc;
}
