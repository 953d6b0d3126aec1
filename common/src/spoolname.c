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

int lp_spool_parse_name(const char *name, int *kind, int64_t *start_s, uint64_t *seq)
{
	size_t len = strlen(name), nd;
	const char *p = NULL;
	int64_t t;

	if (len > LP_SPOOL_NAME_MAX)
		return -EINVAL;
	for (int k = 0; k < LP_SPOOL_KINDS && !p; k++) {
		size_t l = strlen(lp_spool_kinds[k]);

		if (!strncmp(name, lp_spool_kinds[k], l) && name[l] == '-') {
			p = name + l + 1;
			*kind = k;
		}
	}
	/* TIME "-" SEQ ".pb.gz": SEQ has 6 digits or more (spool.c's %06) */
	if (!p || (size_t)(name + len - p) < 16 + 1 + 6 + 6 || strcmp(name + len - 6, ".pb.gz"))
		return -EINVAL;
	t = name_time(p);
	nd = (size_t)(name + len - 6 - (p + 17));
	/* as %06 prints: no leading zero beyond six digits */
	if (t < 0 || p[16] != '-' || nd > 18 || digits(p + 17, (int)nd) < 0 ||
	    (nd > 6 && p[17] == '0'))
		return -EINVAL;
	*start_s = t;
	*seq = (uint64_t)digits(p + 17, (int)nd);
	return 0;
}
