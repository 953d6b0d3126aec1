// SPDX-License-Identifier: MIT
/* Window file names of a spool (lowprof/spoolname.h). */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <time.h>

#include "lowprof/spoolname.h"

const char *const lp_spool_kinds[LP_SPOOL_KINDS] = {"cpu", "offcpu"};

/* n decimal digits at s: their value, or -1 */
static int64_t digits(const char *s, int n)
{
	int64_t v = 0;

	for (int i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

/* "YYYYmmddTHHMMSSZ" at s, a time that exists: seconds since the epoch, or -1 */
static int64_t name_time(const char *s)
{
	struct tm tm = {0}, back;
	time_t t;
	int64_t y = digits(s, 4), mo = digits(s + 4, 2), d = digits(s + 6, 2);
	int64_t h = digits(s + 9, 2), mi = digits(s + 11, 2), sec = digits(s + 13, 2);

	if (y < 0 || mo < 1 || mo > 12 || d < 1 || d > 31 || s[8] != 'T' || h < 0 || h > 23 ||
	    mi < 0 || mi > 59 || sec < 0 || sec > 60 || s[15] != 'Z')
		return -1;
	tm.tm_year = (int)y - 1900;
	tm.tm_mon = (int)mo - 1;
	tm.tm_mday = (int)d;
	tm.tm_hour = (int)h;
	tm.tm_min = (int)mi;
	tm.tm_sec = (int)sec;
	t = timegm(&tm);
	/* timegm makes Feb 30 into Mar 2 (in tm too): a name spool.c cannot write */
	if (!gmtime_r(&t, &back) || back.tm_year != y - 1900 || back.tm_mon != mo - 1 ||
	    back.tm_mday != d || back.tm_hour != h || back.tm_min != mi || back.tm_sec != sec)
		return -1;
	return (int64_t)t;
}

int lp_name_time_seq(const char *s, size_t len, int64_t *start_s, uint64_t *seq)
{
	size_t nd = len > 17 ? len - 17 : 0;
	int64_t t = len >= 17 ? name_time(s) : -1;

	/* as %06 prints: six digits, or more without a leading zero */
	if (t < 0 || s[16] != '-' || nd < 6 || nd > 18 || digits(s + 17, (int)nd) < 0 ||
	    (nd > 6 && s[17] == '0'))
		return -EINVAL;
	*start_s = t;
	*seq = (uint64_t)digits(s + 17, (int)nd);
	return 0;
}

/*
 * "sKofN" at s[0..len) (the shard part after its '.' or '-'): K and N as
 * LP_SPOOL_SHARD_FMT prints them (1 <= K <= N, 2 <= N <= LP_MAX_SHARDS, no
 * leading zero). 0 or -EINVAL.
 */
static int parse_shard(const char *s, size_t len, uint32_t *shard, uint32_t *nshards)
{
	const char *of = len > 1 ? memchr(s + 1, 'o', len - 1) : NULL;
	size_t kd, nd;
	int64_t k, n;

	if (len < 5 || s[0] != 's' || !of || (size_t)(of - s) + 2 >= len || of[1] != 'f')
		return -EINVAL;
	kd = (size_t)(of - (s + 1));
	nd = len - (size_t)(of + 2 - s);
	if (kd < 1 || kd > 2 || nd < 1 || nd > 2 || s[1] == '0' || of[2] == '0')
		return -EINVAL;
	k = digits(s + 1, (int)kd);
	n = digits(of + 2, (int)nd);
	if (k < 1 || n < 2 || n > LP_MAX_SHARDS || k > n)
		return -EINVAL;
	*shard = (uint32_t)k - 1;
	*nshards = (uint32_t)n;
	return 0;
}

int lp_spool_parse(const char *name, struct lp_spool_name *out)
{
	size_t len = strlen(name);
	const char *p = NULL, *end, *dot;

	if (len > LP_SPOOL_NAME_MAX)
		return -EINVAL;
	for (int k = 0; k < LP_SPOOL_KINDS && !p; k++) {
		size_t l = strlen(lp_spool_kinds[k]);

		if (!strncmp(name, lp_spool_kinds[k], l) && name[l] == '-') {
			p = name + l + 1;
			out->kind = k;
		}
	}
	/* TIME "-" SEQ [SHARD] ".pb.gz": SEQ has 6 digits or more (spool.c's %06) */
	if (!p || (size_t)(name + len - p) < 16 + 1 + 6 + 6 || strcmp(name + len - 6, ".pb.gz"))
		return -EINVAL;
	end = name + len - 6;
	dot = memchr(p + 17, '.', (size_t)(end - (p + 17)) + 1);
	out->shard = 0;
	out->nshards = 1;
	if (!dot || (dot < end &&
		     parse_shard(dot + 1, (size_t)(end - dot - 1), &out->shard, &out->nshards)))
		return -EINVAL;
	return lp_name_time_seq(p, (size_t)(dot - p), &out->start_s, &out->seq);
}

int lp_spool_parse_name(const char *name, int *kind, int64_t *start_s, uint64_t *seq)
{
	struct lp_spool_name n;
	int err = lp_spool_parse(name, &n);

	if (err)
		return err;
	*kind = n.kind;
	*start_s = n.start_s;
	*seq = n.seq;
	return 0;
}

int lp_spool_parse_metrics(const char *name, uint32_t *shard, uint32_t *nshards)
{
	size_t len = strlen(name);

	*shard = 0;
	*nshards = 1;
	if (!strcmp(name, "metrics.prom"))
		return 0;
	if (len < 8 + 5 + 5 || len > LP_SPOOL_NAME_MAX || strncmp(name, "metrics-", 8) ||
	    strcmp(name + len - 5, ".prom"))
		return -EINVAL;
	return parse_shard(name + 8, len - 8 - 5, shard, nshards);
}
