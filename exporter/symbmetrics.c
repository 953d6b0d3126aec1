// SPDX-License-Identifier: MIT
/*
 * The symbolizers' metrics files in the spool (exporter.h): "metrics.prom",
 * or one "metrics-sKofN.prom" per shard of a run split over symbolizers,
 * each replaced with its symbolizer's windows. Their lines are passed on
 * to the exporter's /metrics, checked one by one (exp_metrics_line_ok);
 * a shard's samples carry a shard="KofN" label (the symbolizer's, else
 * added from the file's name), and the families of several
 * files are put together (one HELP and TYPE, then every file's samples),
 * as the text format wants.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "exporter.h"

#define PAGE_MAX (64u << 10)
/* families put together; more (a file not the symbolizer's) are passed as they come */
#define MAX_FAMILIES 256

static int cmp_page(const void *a, const void *b)
{
	const struct exp_symb_page *x = a, *y = b;

	if (x->nshards != y->nshards)
		return x->nshards < y->nshards ? -1 : 1;
	return x->shard < y->shard ? -1 : x->shard > y->shard;
}

/* Reads name (a metrics file of the spool) into p: 0 or -1. */
static int read_page(int spool, const char *name, struct exp_symb_page *p)
{
	int fd = openat(spool, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	ssize_t r;

	p->len = 0;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || !(p->text = malloc(PAGE_MAX))) {
		close(fd);
		return -1;
	}
	while (p->len < PAGE_MAX && (r = read(fd, p->text + p->len, PAGE_MAX - p->len)) > 0)
		p->len += (size_t)r;
	p->mtime = st.st_mtim;
	close(fd);
	return 0;
}

size_t exp_symb_read(int spool, struct exp_symb_page *pages, size_t cap)
{
	int dfd = openat(spool, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;
	size_t n = 0;

	if (!d) {
		if (dfd >= 0)
			close(dfd);
		return 0;
	}
	while ((e = readdir(d)) && n < cap) {
		struct exp_symb_page p = {0};

		if (lp_spool_parse_metrics(e->d_name, &p.shard, &p.nshards) ||
		    read_page(spool, e->d_name, &p))
			continue;
		pages[n++] = p;
	}
	closedir(d);
	qsort(pages, n, sizeof(*pages), cmp_page);
	return n;
}

void exp_symb_free(struct exp_symb_page *pages, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(pages[i].text);
}

/* p's shard label, "shard=\"1of2\"", in buf; "" for a file of no shard */
static void shard_label(const struct exp_symb_page *p, char *buf, size_t len)
{
	buf[0] = '\0';
	if (p->nshards > 1)
		snprintf(buf, len, "shard=\"%" PRIu32 "of%" PRIu32 "\"", p->shard + 1, p->nshards);
}

/*
 * Appends line l[0..ll) to buf (n bytes used of cap) with label added to a
 * sample line ("" or a comment: as it is); the line whole or nothing.
 */
static size_t put_line(char *buf, size_t n, size_t cap, const char *l, size_t ll, const char *label)
{
	size_t name = 0, lab = label[0] && l[0] != '#' ? strlen(label) : 0;

	/* the symbolizer labels a shard's samples itself: not twice */
	if (lab && (memmem(l, ll, "{shard=\"", 8) || memmem(l, ll, ",shard=\"", 8)))
		lab = 0;

	if (!lab) {
		if (n + ll + 1 >= cap)
			return n;
		memcpy(buf + n, l, ll);
		buf[n + ll] = '\n';
		return n + ll + 1;
	}
	/* a checked sample line: name, then '{' or ' ' */
	while (name < ll && l[name] != '{' && l[name] != ' ')
		name++;
	if (name == ll || n + ll + lab + 4 >= cap)
		return n;
	memcpy(buf + n, l, name);
	n += name;
	buf[n++] = '{';
	memcpy(buf + n, label, lab);
	n += lab;
	if (l[name] == '{') {
		name++;
		if (l[name] != '}')
			buf[n++] = ',';
	} else {
		buf[n++] = '}';
	}
	memcpy(buf + n, l + name, ll - name);
	n += ll - name;
	buf[n++] = '\n';
	return n;
}

/* Whether l is a line of the resident memory family (which joins the exporter's). */
static bool is_resident(const char *l, size_t ll)
{
	return (ll > 31 && !memcmp(l, "lowprof_process_resident_bytes{", 31)) ||
	       (ll > 38 && !memcmp(l + 7, "lowprof_process_resident_bytes ", 31));
}

/* The metric name of a checked line (after "# HELP " for a comment): its length. */
static size_t family_of(const char *l, size_t ll, const char **name)
{
	size_t i = l[0] == '#' ? 7 : 0, k = i;

	while (k < ll && l[k] != '{' && l[k] != ' ')
		k++;
	*name = l + i;
	return k - i;
}

/* The lines of page p wanted (resident or not, checked), one after another. */
struct line_iter {
	const struct exp_symb_page *p;
	size_t at;
	bool resident;
};

static bool next_line(struct line_iter *it, const char **l, size_t *ll)
{
	while (it->at < it->p->len) {
		const char *s = it->p->text + it->at, *nl = memchr(s, '\n', it->p->len - it->at);
		size_t len = nl ? (size_t)(nl - s) : it->p->len - it->at;

		it->at += len + 1;
		if (is_resident(s, len) == it->resident && exp_metrics_line_ok(s, len)) {
			*l = s;
			*ll = len;
			return true;
		}
	}
	return false;
}

struct family {
	const char *name;
	size_t len;
};

/* Adds name to fam[0..*nf) if new: false when the table is full. */
static bool add_family(struct family *fam, size_t *nf, const char *name, size_t len)
{
	for (size_t i = 0; i < *nf; i++)
		if (fam[i].len == len && !memcmp(fam[i].name, name, len))
			return true;
	if (*nf == MAX_FAMILIES)
		return false;
	fam[*nf].name = name;
	fam[(*nf)++].len = len;
	return true;
}

size_t exp_symb_lines(const struct exp_symb_page *pages, size_t np, char *buf, size_t cap,
		      bool resident)
{
	struct family fam[MAX_FAMILIES];
	size_t n = 0, nf = 0;
	const char *l, *name;
	size_t ll, nl;
	char label[32];

	/* one file: its lines as they come (a shard's labelled) */
	if (np == 1) {
		struct line_iter it = {&pages[0], 0, resident};

		shard_label(&pages[0], label, sizeof(label));
		while (next_line(&it, &l, &ll))
			n = put_line(buf, n, cap, l, ll, label);
		return n;
	}
	for (size_t i = 0; i < np; i++) {
		struct line_iter it = {&pages[i], 0, resident};

		while (next_line(&it, &l, &ll)) {
			nl = family_of(l, ll, &name);
			add_family(fam, &nf, name, nl);
		}
	}
	/* each family: its HELP and TYPE once (the first file's), then every file's samples */
	for (size_t f = 0; f < nf; f++) {
		bool said = false;

		for (size_t i = 0; i < np; i++) {
			struct line_iter it = {&pages[i], 0, resident};
			bool comments = false;

			shard_label(&pages[i], label, sizeof(label));
			while (next_line(&it, &l, &ll)) {
				nl = family_of(l, ll, &name);
				if (nl != fam[f].len || memcmp(name, fam[f].name, nl))
					continue;
				if (l[0] == '#') {
					comments = true;
					if (said)
						continue;
				}
				n = put_line(buf, n, cap, l, ll, label);
			}
			said |= comments;
		}
	}
	return n;
}

size_t exp_symb_age(const struct exp_symb_page *pages, size_t np, char *buf, size_t cap)
{
	struct timespec now;
	size_t n = 0;

	if (!np)
		return 0;
	clock_gettime(CLOCK_REALTIME, &now);
	n += (size_t)snprintf(
		buf, cap,
		"# HELP lowprof_symbolizer_metrics_age_seconds Since the symbolizer last wrote "
		"its metrics (with each window).\n"
		"# TYPE lowprof_symbolizer_metrics_age_seconds gauge\n");
	for (size_t i = 0; i < np && n < cap; i++) {
		double age = (double)(now.tv_sec - pages[i].mtime.tv_sec) +
			     (double)(now.tv_nsec - pages[i].mtime.tv_nsec) / 1e9;
		char label[32];
		int w;

		shard_label(&pages[i], label, sizeof(label));
		if (label[0])
			w = snprintf(buf + n, cap - n,
				     "lowprof_symbolizer_metrics_age_seconds{%s} %.3f\n", label,
				     age);
		else
			w = snprintf(buf + n, cap - n,
				     "lowprof_symbolizer_metrics_age_seconds %.3f\n", age);
		if (w > 0)
			n += (size_t)w;
	}
	return n < cap ? n : cap;
}
