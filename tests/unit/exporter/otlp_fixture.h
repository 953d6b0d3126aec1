/* SPDX-License-Identifier: MIT */
/*
 * The profile the OTLP encoder tests encode: two processes, one of them in
 * a Kubernetes container, sharing a stack.
 *
 *   pid 100 /usr/bin/app (no container)
 *     thread "app":        main -> work -> inner_fn (inlined)       70 + 10 ns
 *                          (two stacks differing only in cgroup: one sample)
 *     thread "app-worker": main -> work -> inner_fn -> memcpy       30 ns
 *   pid 200 /usr/sbin/nginx, container FIX_CONTAINER, pod FIX_POD
 *     thread "nginx":      [unknown] -> memcpy -> do_syscall_64 [k] 50 ns
 *                          main -> work -> inner_fn -> memcpy       20 ns
 *
 * Mappings: /usr/bin/app (build-id FIX_BUILD_ID), /lib/libc.so.6 (no
 * build-id), [kernel.kallsyms], and /unused, which no location in a stack
 * uses (nor does location "unused_fn"). values[0] counts samples, values[1]
 * is cpu nanoseconds and folded_value is 1.
 */
#ifndef LOWPROF_TEST_OTLP_FIXTURE_H
#define LOWPROF_TEST_OTLP_FIXTURE_H

#include "exp.h"

#define FIX_HOST      "testhost"
#define FIX_BUILD_ID  "0123456789abcdef0123456789abcdef01234567"
#define FIX_CONTAINER "4f2c1a9e8b7d6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b"
#define FIX_POD	      "8d4a2c1e-1111-2222-3333-444455556666"
#define FIX_TIME      1700000000123456789ll
#define FIX_DURATION  10000000000ll
#define FIX_PERIOD    10000000ll

const struct lpw_profile *fix_otlp_profile(void);
const struct exp_identity *fix_otlp_identity(void);

#endif /* LOWPROF_TEST_OTLP_FIXTURE_H */
