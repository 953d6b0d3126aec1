// SPDX-License-Identifier: MIT
/* Seed program for the fuzz corpus: a few functions of each binding. */
__attribute__((noinline)) int seed_global(int x)
{
	return x * 3 + 1;
}

static __attribute__((noinline)) int seed_local(int x)
{
	return x ^ 0x55;
}

__attribute__((weak, noinline)) int seed_weak(int x)
{
	return x - 7;
}

__asm__(".pushsection .text.seed,\"ax\",@progbits\n"
	".globl seed_zero\n.type seed_zero,@function\nseed_zero:\n.fill 16,1,0\n"
	".globl seed_alias\n.type seed_alias,@function\n.set seed_alias,seed_zero\n"
	".popsection\n");

void _start(void)
{
	volatile int v = seed_global(seed_local(seed_weak(1)));

	(void)v;
	for (;;)
		;
}
