/* SPDX-License-Identifier: MIT */
/*
 * Shared by the output writer tests: a small known profile and a way to
 * capture what a writer writes.
 *
 * The sample profile (pid 100 and 101, comm "demo", folded_value 1 = cpu ns):
 *   [unknown] -> main -> func_a -> func_b -> func_c -> leaf_compute   70 + 10 samples (two pids)
 *   [unknown] -> main -> func_a -> func_b -> func_c -> do_syscall_64  15 samples (kernel)
 *   [unknown] -> main -> func_a -> func_b                              5 samples
 * Each sample is worth 10 ms of cpu, so leaf_compute has 80 samples, 800 ms.
 */
#ifndef LOWPROF_TEST_OUTPUT_FIXTURE_H
#define LOWPROF_TEST_OUTPUT_FIXTURE_H

#include <stddef.h>

#include "lowprof/writers.h"

#define FIX_LEAF	 "leaf_compute"
#define FIX_LEAF_SAMPLES 80
#define FIX_TOTAL	 100
#define FIX_NS		 10000000 /* per sample */

const struct lpw_profile *fix_sample_profile(void);

/*
 * A profile with source lines and inlined functions (pid 200, comm "inl",
 * one mapping, folded_value 1, FIX_NS per sample):
 *   main -> outer_fn -> mid_fn (inline) -> inner_fn (inline)  60 samples
 *   main -> outer_fn -> inner_fn (inline)                      30 samples
 *   main -> plain_fn (no source lines)                         10 samples
 * Each frame's file:line is listed in fixture.c. inner_fn comes from the
 * same file in both stacks (one pprof Function), at two different lines.
 */
#define FIX_INL_TOTAL 100
const struct lpw_profile *fix_inline_profile(void);

/*
 * Runs writer on p with a memfd and returns what it wrote (NUL-terminated,
 * *len bytes without the NUL; free() it). *err gets the writer's return value;
 * the buffer is returned even when it failed.
 */
char *fix_capture(int (*writer)(const struct lpw_profile *, int), const struct lpw_profile *p,
		  size_t *len, int *err);

#endif /* LOWPROF_TEST_OUTPUT_FIXTURE_H */
