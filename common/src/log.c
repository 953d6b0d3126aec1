// SPDX-License-Identifier: MIT
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/log.h"

static const char *lp_progname = "lowprof";
static enum lp_log_level lp_level = LP_LOG_INFO;

void lp_log_init(const char *progname, enum lp_log_level level)
{
	if (progname) {
		const char *slash = strrchr(progname, '/');

		lp_progname = slash ? slash + 1 : progname;
	}
	lp_level = level;
}

enum lp_log_level lp_log_level(void)
{
	return lp_level;
}

void lp_log(enum lp_log_level level, const char *fmt, ...)
{
	static const char *const tags[] = {"error: ", "warning: ", "", "debug: "};
	char line[1024];
	va_list ap;
	int n;

	if (level > lp_level)
		return;
	n = snprintf(line, sizeof(line), "%s: %s", lp_progname, tags[level]);
	if (n < 0 || (size_t)n >= sizeof(line))
		return;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - n, fmt, ap);
	va_end(ap);
	/* One write per message so lines from the three processes do not interleave. */
	n = strlen(line);
	if (n > 0 && line[n - 1] != '\n' && (size_t)n < sizeof(line) - 1)
		line[n++] = '\n';
	if (write(STDERR_FILENO, line, n) < 0)
		return;
}
