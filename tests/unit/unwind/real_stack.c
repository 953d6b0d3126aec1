// SPDX-License-Identifier: MIT
/*
 * See real_stack.h. Built with -O2 -fno-omit-frame-pointer whatever the
 * build type, so every function here keeps rbp as a frame pointer. Each
 * call is followed by an add, so none is a tail call.
 */
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <ucontext.h>

#include "real_stack.h"

struct real_capture real_capture;

/*
 * Copies [sp, min(sp + limit, hi)): the live stack of the callers, which
 * holds ASan's redzones in the sanitizer build, hence byte reads the
 * sanitizer does not check.
 */
__attribute__((noinline, no_sanitize("address"))) static void capture_stack(uint64_t sp)
{
	const volatile uint8_t *src = (const volatile uint8_t *)(uintptr_t)sp;
	uint64_t n = real_capture.hi > sp ? real_capture.hi - sp : 0;
	uint64_t i;

	if (n > real_capture.limit)
		n = real_capture.limit;
	for (i = 0; i < n; i++)
		real_capture.stack[i] = src[i];
	real_capture.len = (uint32_t)n;
}

#define CAPTURE_REGS()                                                                             \
	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"                      \
			 : "=r"(real_capture.ip), "=r"(real_capture.sp), "=r"(real_capture.bp)     \
			 :                                                                         \
			 : "memory")

__attribute__((noinline)) int real_chain_leaf(int x)
{
	CAPTURE_REGS();
	real_capture.ret[0] = (uintptr_t)__builtin_return_address(0);
	capture_stack(real_capture.sp);
	return x + 1;
}

__attribute__((noinline)) int real_chain_c(int x)
{
	real_capture.ret[1] = (uintptr_t)__builtin_return_address(0);
	return real_chain_leaf(x) + 1;
}

__attribute__((noinline)) int real_chain_b(int x)
{
	real_capture.ret[2] = (uintptr_t)__builtin_return_address(0);
	return real_chain_c(x) + 1;
}

__attribute__((noinline)) int real_chain_a(int x)
{
	real_capture.ret[3] = (uintptr_t)__builtin_return_address(0);
	return real_chain_b(x) + 1;
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	const ucontext_t *uc = ucv;

	CAPTURE_REGS();
	real_capture.ret[0] = (uintptr_t)__builtin_return_address(0); /* the restorer */
	real_capture.uc_ip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	real_capture.uc_sp = (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
	real_capture.uc_bp = (uint64_t)uc->uc_mcontext.gregs[REG_RBP];
	capture_stack(real_capture.sp);
}

int real_sig_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGTRAP, &sa, NULL);
}

__attribute__((noinline)) int real_sig_victim(int x)
{
	real_capture.ret[1] = (uintptr_t)__builtin_return_address(0);
	__asm__ volatile("int3" ::: "memory");
	return x + 1;
}

__attribute__((noinline)) int real_sig_outer(int x)
{
	real_capture.ret[2] = (uintptr_t)__builtin_return_address(0);
	return real_sig_victim(x) + 1;
}
