// SPDX-License-Identifier: MIT
/*
 * Fixture for test_cfi: built several ways by CMakeLists.txt (frame pointers
 * or not, .eh_frame or only .debug_frame) and read, never run. The tests
 * find these functions by symbol and check the rows of their prologues
 * against the instruction bytes there; main's printf goes through the PLT.
 */
#include <stdio.h>

/* The asm keeps the compiler from seeing through calls or folding the loop. */
__attribute__((noinline)) int cfi_fx_callee(int x)
{
	__asm__ volatile("" : "+r"(x));
	return x * 3;
}

/* A loop around a call: it needs callee-saved registers, hence pushes. */
__attribute__((noinline)) int cfi_fx_frame(int n)
{
	int s = 0, i;

	for (i = 0; i < n; i++)
		s += cfi_fx_callee(i) ^ s;
	__asm__ volatile("" : "+r"(s));
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", cfi_fx_frame(argc));
	return 0;
}
