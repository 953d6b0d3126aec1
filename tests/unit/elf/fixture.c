// SPDX-License-Identifier: MIT
/*
 * Fixture for the elfsym tests: never run, only read. The functions under
 * test are assembler-defined in one section, .lp_fixture, which the build
 * links at 0x700000, so every address, size, binding and alias below is
 * exact and the test can assert exact values. They hold no instructions
 * (filler bytes only), so the same source builds for any target.
 *
 *   0x700000 fixture_func_a   global, size 0x40; "LPFIXTURE_A_MARK" at +8
 *   0x700100 fixture_func_b   global, size 0x40
 *   0x700200 fixture_func_c   global, no size, with aliases at the same
 *            address: fixture_func_c_alias (global, size 0x10),
 *            fixture_weak_c (weak, size 0x40), fixture_local_c (local,
 *            size 0x10); the group spans the largest size, 0x40
 *   0x700300 fixture_weak_d   weak, size 0x20; fixture_local_d local alias
 *   0x700400 fixture_zero     global, no size (runs to fixture_outer)
 *   0x700500 fixture_outer    global, size 0x100, containing
 *   0x700520 fixture_inner    local, size 0x20
 *   0x700600 fixture_object   an object, not a function
 *   0x700700 fixture_ifunc    global STT_GNU_IFUNC, size 0x10
 *   0x700800 fixture_last     global, no size, last in the section, which
 *                             ends at 0x700840
 */
/* One line per symbol of the table above; kept out of clang-format's reach. */
/* clang-format off */
#define FUNC(name, bind, type) \
	"." bind " " name "\n.type " name ",@" type "\n" name ":\n"
#define AT(off) ".org " off "\n"

__asm__(".pushsection .lp_fixture,\"ax\",@progbits\n"
	AT("0x000") FUNC("fixture_func_a", "globl", "function")
	".fill 8,1,0\n.ascii \"LPFIXTURE_A_MARK\"\n"
	".size fixture_func_a,0x40\n"
	AT("0x100") FUNC("fixture_func_b", "globl", "function") ".size fixture_func_b,0x40\n"
	AT("0x200") FUNC("fixture_local_c", "local", "function") ".size fixture_local_c,0x10\n"
	FUNC("fixture_weak_c", "weak", "function") ".size fixture_weak_c,0x40\n"
	FUNC("fixture_func_c_alias", "globl", "function") ".size fixture_func_c_alias,0x10\n"
	FUNC("fixture_func_c", "globl", "function")
	AT("0x300") FUNC("fixture_local_d", "local", "function") ".size fixture_local_d,0x20\n"
	FUNC("fixture_weak_d", "weak", "function") ".size fixture_weak_d,0x20\n"
	AT("0x400") FUNC("fixture_zero", "globl", "function")
	AT("0x500") FUNC("fixture_outer", "globl", "function") ".size fixture_outer,0x100\n"
	AT("0x520") FUNC("fixture_inner", "local", "function") ".size fixture_inner,0x20\n"
	AT("0x600") FUNC("fixture_object", "globl", "object") ".size fixture_object,0x10\n"
	AT("0x700") FUNC("fixture_ifunc", "globl", "gnu_indirect_function")
	".size fixture_ifunc,0x10\n"
	AT("0x800") FUNC("fixture_last", "globl", "function") ".fill 0x40,1,0\n"
	".popsection\n");
/* clang-format on */

/* Only for the variant linked against libc; the -nostdlib ones enter at fixture_func_a. */
int main(void)
{
	return 0;
}
