/* SPDX-License-Identifier: MIT */
/*
 * lowprof logging: one line per message on stderr, prefixed with the program
 * name and the subsystem ("lowprof-collector: ring: ..."). It is not a
 * structured logger and never allocates.
 */
#ifndef LOWPROF_LOG_H
#define LOWPROF_LOG_H

#include <stdarg.h>

enum lp_log_level {
	LP_LOG_ERROR = 0,
	LP_LOG_WARN = 1,
	LP_LOG_INFO = 2,
	LP_LOG_DEBUG = 3,
};

/* Set once at start-up; name is kept by pointer and must outlive logging. */
void lp_log_init(const char *progname, enum lp_log_level level);
enum lp_log_level lp_log_level(void);
void lp_log(enum lp_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define lp_err(...)   lp_log(LP_LOG_ERROR, __VA_ARGS__)
#define lp_warn(...)  lp_log(LP_LOG_WARN, __VA_ARGS__)
#define lp_info(...)  lp_log(LP_LOG_INFO, __VA_ARGS__)
#define lp_debug(...) lp_log(LP_LOG_DEBUG, __VA_ARGS__)

#endif /* LOWPROF_LOG_H */
