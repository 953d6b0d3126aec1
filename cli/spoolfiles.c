// SPDX-License-Identifier: MIT
/*
 * lowprof run's window files, for the commands that read them (windows.c,
 * merge.c): their names, a spool's listing, and the counters lowprof
 * writes into a profile's comments.
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

#include "lowprof/grow.h"
#include "lowprof/spoolname.h"
#include "lowprof/writers.h"
#include "cli_int.h"

const char *const *const cli_win_kinds = lp_spool_kinds;

const char *cli_spool_hint(int err)
{
	return err == EACCES ? " (a spool is its symbolizer user's, mode 0700: run as root or "
			       "as that user, or read a copy)"
			     : "";
}

const char *cli_fmt_utc(char *buf, size_t len, int64_t ns)
{
	time_t t = (time_t)(ns / 1000000000 - (ns % 1000000000 < 0));
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "-");
	return buf;
}

int cli_win_parse_name(const char *name, struct cli_win_file *f)
{
	size_t len = strlen(name);
	struct lp_spool_name n;

	if (len >= sizeof(f->name) || lp_spool_parse(name, &n))
		return -EINVAL;
	memcpy(f->name, name, len + 1);
	f->kind = n.kind;
	f->seq = n.seq;
	f->start_s = n.start_s;
	f->shard = n.shard;
	f->nshards = n.nshards;
	return 0;
}

static int cmp_win(const void *a, const void *b)
{
	const struct cli_win_file *x = a, *y = b;

	if (x->kind != y->kind)
		return x->kind - y->kind;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->nshards != y->nshards)
		return x->nshards < y->nshards ? -1 : 1;
	if (x->shard != y->shard)
		return x->shard < y->shard ? -1 : 1;
	return strcmp(x->name, y->name);
}

int cli_win_scan(int dirfd, struct cli_win_file **out, size_t *n)
{
	struct cli_win_file *v = NULL;
	size_t cap = 0;
	int dfd = dup(dirfd), err = 0;
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	struct dirent *e;

	*out = NULL;
	*n = 0;
	if (!d) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		return err;
	}
	rewinddir(d);
	while ((e = readdir(d))) {
		struct cli_win_file f;
		struct stat st;

		/* temporary files (".tmp-...") and anything not named as a window */
		if (e->d_name[0] == '.' || cli_win_parse_name(e->d_name, &f) ||
		    fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISREG(st.st_mode))
			continue;
		f.size = (uint64_t)st.st_size;
		err = lp_grow((void **)&v, &cap, *n + 1, sizeof(*v), 64, SIZE_MAX / sizeof(*v));
		if (err)
			break;
		v[(*n)++] = f;
	}
	closedir(d);
	if (err) {
		free(v);
		*n = 0;
		return err;
	}
	if (*n)
		qsort(v, *n, sizeof(*v), cmp_win);
	*out = v;
	return 0;
}

/* ---- counters in comments ------------------------------------------------- */

/*
 * The comment lines whose numbers are counters of their window alone
 * (build.c's describe()): losses, off-CPU sampling, collector restarts.
 */
static const char *const count_prefixes[] = {
	"lost: ", "off-CPU: ", "lowprof: the collector started again "};

int cli_counts_parse(const char *line, struct cli_counts *c)
{
	const char *p = NULL;
	size_t o;

	for (size_t k = 0; k < sizeof(count_prefixes) / sizeof(count_prefixes[0]); k++)
		if (!strncmp(line, count_prefixes[k], strlen(count_prefixes[k])))
			p = line + strlen(count_prefixes[k]);
	if (!p || strlen(line) >= sizeof(c->shape) || strchr(line, CLI_COUNT_MARK))
		return -EINVAL;
	o = (size_t)(p - line);
	memcpy(c->shape, line, o);
	c->n = 0;
	/* items "N text", joined by ", ": each N becomes one CLI_COUNT_MARK */
	for (;;) {
		char *end;

		/* digits as PRIu64 prints them: no sign, no leading zero */
		if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] != ' ') || c->n == CLI_MAX_COUNTS)
			return -EINVAL;
		errno = 0;
		c->v[c->n++] = strtoull(p, &end, 10);
		if (errno || *end != ' ')
			return -EINVAL;
		c->shape[o++] = CLI_COUNT_MARK;
		p = end;
		while (*p && strncmp(p, ", ", 2))
			c->shape[o++] = *p++;
		if (!*p)
			break;
		memcpy(c->shape + o, ", ", 2);
		o += 2;
		p += 2;
	}
	c->shape[o] = '\0';
	return 0;
}

void cli_counts_format(const struct cli_counts *c, char *buf, size_t len)
{
	size_t o = 0;
	int k = 0;

	for (const char *s = c->shape; *s && o + 1 < len; s++) {
		int w;

		if (*s != CLI_COUNT_MARK || k == c->n) {
			buf[o++] = *s;
			continue;
		}
		w = snprintf(buf + o, len - o, "%" PRIu64, c->v[k++]);
		if (w < 0 || (size_t)w >= len - o) {
			o = len - 1; /* cut: snprintf ended it */
			break;
		}
		o += (size_t)w;
	}
	buf[o] = '\0';
}

bool cli_losses(const struct lpw_profile *p, uint64_t *lost)
{
	static const char off_lost[] = {CLI_COUNT_MARK, ' ', 'l', 'o', 's', 't', '\0'};
	bool found = false;
	struct cli_counts c;

	*lost = 0;
	for (size_t i = 0; i < p->ncomments; i++) {
		if (cli_counts_parse(p->comments[i], &c))
			continue;
		if (!strncmp(c.shape, "lost: ", 6)) {
			found = true;
			for (int k = 0; k < c.n; k++)
				*lost += c.v[k];
		} else if (!strncmp(c.shape, "off-CPU: ", 9)) {
			/* off-CPU: only its last item, "N lost", is a loss */
			size_t sl = strlen(c.shape);

			found = true;
			if (sl >= sizeof(off_lost) - 1 &&
			    !strcmp(c.shape + sl - (sizeof(off_lost) - 1), off_lost))
				*lost += c.v[c.n - 1];
		}
	}
	return found;
}
