// SPDX-License-Identifier: MIT
/*
 * Fixture of test_symb_objects (never run): another program, with other
 * code, other CFI and other symbols, that claims the build-id of
 * ident_a.c's program (-Wl,--build-id=0x... with the same id).
 */
static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long ident_b_one(unsigned long n)
{
	unsigned long x = n;

	for (int i = 0; i < 64; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	return x;
}

__attribute__((noinline)) static void ident_b_two(unsigned long n)
{
	char buf[256];

	for (unsigned int i = 0; i < sizeof(buf); i++)
		buf[i] = (char)ident_b_one(n + i);
	sink += (unsigned long)buf[n & 255];
}

int main(int argc, char **argv)
{
	(void)argv;
	ident_b_two((unsigned long)argc);
	return 0;
}
