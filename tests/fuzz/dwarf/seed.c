// SPDX-License-Identifier: MIT
/*
 * Seed for the dwarf fuzz target's corpus (gen-corpus.sh): small, linked
 * without libc, with nested inlined functions, a lexical block, a static
 * function and a noinline call so the DWARF has every scope dwarf.c walks.
 */
volatile int seed_sink;

static inline __attribute__((always_inline)) void seed_leaf(int x)
{
	seed_sink = x * 3;
}

static inline __attribute__((always_inline)) void seed_mid(int x)
{
	seed_leaf(x + 1);
	{
		volatile int y = x;
		seed_sink += y;
	}
	seed_leaf(x + 2);
}

__attribute__((noinline)) static void seed_static(int x)
{
	seed_mid(x);
}

__attribute__((noinline)) void seed_outer(int x)
{
	seed_static(x);
	seed_mid(x * 2);
}

void _start(void)
{
	seed_outer(1);
	for (;;)
		;
}
