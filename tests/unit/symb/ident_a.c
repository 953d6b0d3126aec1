// SPDX-License-Identifier: MIT
/*
 * Fixture of test_symb_objects (never run): a program whose functions are
 * local (in .symtab only), built with a fixed build-id that ident_b.c's
 * program claims too. Its stripped copies are named only through its
 * separate debug file.
 */
static volatile unsigned long sink;

__attribute__((noinline)) static void ident_a_alpha(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * 2862933555777941757ul;
}

__attribute__((noinline)) static void ident_a_beta(unsigned long n)
{
	ident_a_alpha(n ^ 1);
	sink++;
}

__attribute__((noinline)) static void ident_a_gamma(unsigned long n)
{
	ident_a_beta(n ^ 2);
	sink++;
}

int main(int argc, char **argv)
{
	(void)argv;
	ident_a_gamma((unsigned long)argc);
	return 0;
}
