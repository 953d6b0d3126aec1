// SPDX-License-Identifier: MIT
/* Fixture for test_dwarf.c: never run, only read. test_dwarf.c asserts */
/* the line numbers marked "line NN" below: keep them where they are.   */
#define LP_CAT_(a, b) a##b
#define LP_CAT(a, b)  LP_CAT_(a, b)
#define LP_X4(x)      LP_CAT(LP_CAT(x, x), LP_CAT(x, x))
#define LP_LONG	      LP_CAT(fx_long_, LP_X4(LP_X4(LP_X4(abcdefghijklmnopqrst))))

volatile int fx_sink;

static inline __attribute__((always_inline)) void fx_leaf(int x)
{
	__asm__ volatile(".globl fx_mark_leaf\nfx_mark_leaf: nop"); /* line 13 */
	fx_sink = x * 3;
}

static inline __attribute__((always_inline)) void fx_mid(int x)
{
	fx_leaf(x + 1);						  /* line 19 */
	__asm__ volatile(".globl fx_mark_mid\nfx_mark_mid: nop"); /* line 20 */
	fx_sink = x;
}

__attribute__((noinline)) void fx_outer(int x)
{
	fx_sink = 0;
	fx_mid(x);						      /* line 27 */
	__asm__ volatile(".globl fx_mark_outer\nfx_mark_outer: nop"); /* line 28 */
}

/* A 1288-byte name, longer than SYMB_DWARF_NAME_MAX. */
__attribute__((noinline)) void LP_LONG(void)
{
	fx_sink = 7;
}

/* Code in a unit's own .text without DWARF, and in a section of no unit. */
__asm__(".text\n.globl fx_nodebug\n.type fx_nodebug,@function\nfx_nodebug: nop\nnop\nret\n"
	".pushsection .text.lp_nounit,\"ax\",@progbits\n.globl fx_nounit\n"
	".type fx_nounit,@function\nfx_nounit: nop\nnop\nret\n.popsection\n");

int main(int argc, char **argv)
{
	fx_outer(argc);
	LP_LONG();
	return fx_sink;
}
