/* SPDX-License-Identifier: MIT */
/*
 * Real stacks of this process for test_unwind: a chain of functions built
 * with -O2 -fno-omit-frame-pointer (real_stack.c) whose leaf captures its
 * registers and a copy of the stack above them, and a signal handler that
 * does the same on top of a kernel signal frame.
 */
#ifndef LOWPROF_TEST_REAL_STACK_H
#define LOWPROF_TEST_REAL_STACK_H

#include <stdint.h>

#define REAL_STACK_MAX (64 * 1024)

struct real_capture {
	uint64_t hi;	/* copy no further than this (set by the caller) */
	uint32_t limit; /* and no more than this many bytes (<= REAL_STACK_MAX) */
	uint64_t ip, sp, bp;
	uint32_t len;
	uint8_t stack[REAL_STACK_MAX];
	/*
	 * ret[i]: __builtin_return_address(0) of the i-th function from the
	 * leaf (chain: leaf, c, b, a; signal: handler, victim, outer).
	 */
	uint64_t ret[4];
	/* signal only: the interrupted registers from the handler's ucontext */
	uint64_t uc_ip, uc_sp, uc_bp;
};

extern struct real_capture real_capture;

/* leaf <- c <- b <- a: returns x + 4 */
int real_chain_a(int x);
int real_chain_b(int x);
int real_chain_c(int x);
int real_chain_leaf(int x);

/*
 * outer -> victim, which executes int3; the SIGTRAP handler (installed by
 * the caller through real_sig_install) captures. Returns x + 2.
 */
int real_sig_outer(int x);
int real_sig_victim(int x);
int real_sig_install(void);

#endif /* LOWPROF_TEST_REAL_STACK_H */
