// SPDX-License-Identifier: MIT
/*
 * The unwinder (symbolizer/unwind/unwind.c) on hand-built stacks and delta tables,
 * one test per frame shape and per stop reason, then on real stacks of this
 * process: a frame-pointer chain and a kernel signal frame.
 *
 * Fake stacks live at BASE; a "table" maps address ranges to lookup results
 * and rows, and records every address it was asked about, so tests also
 * check that return addresses are looked up at pc - 1 and exact frames at pc.
 */
#include <dlfcn.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#include <cmocka.h>

#include "real_stack.h"
#include "unwind.h"

#define BASE  0x7ffd00001000ULL
#define WORDS 512

struct fake_stack {
	uint8_t raw[WORDS * 8 + 1];
	uint8_t *mem; /* raw + 1: 8-byte values are unaligned in the copy */
	struct symb_unwind_stack s;
};

static void stack_init(struct fake_stack *f, uint32_t len)
{
	memset(f->raw, 0xa5, sizeof(f->raw));
	f->mem = f->raw + 1;
	f->s.data = f->mem;
	f->s.len = len;
	f->s.base = BASE;
}

static void put(struct fake_stack *f, uint64_t addr, uint64_t v)
{
	assert_true(addr >= BASE && addr + 8 <= BASE + WORDS * 8);
	memcpy(f->mem + (addr - BASE), &v, sizeof(v));
}

struct range {
	uint64_t lo, hi; /* [lo, hi) */
	enum symb_lookup res;
	struct symb_delta row;
};

#define ROW(k, off, bpo)                                                                           \
	{                                                                                          \
		.kind = (k), .cfa_off = (off), .bp_off = (bpo)                                     \
	}
#define FOUND(lo, hi, k, off, bpo)                                                                 \
	{                                                                                          \
		(lo), (hi), SYMB_LOOKUP_FOUND, ROW(k, off, bpo)                                    \
	}
#define NOCFI(lo, hi)                                                                              \
	{                                                                                          \
		(lo), (hi), SYMB_LOOKUP_NO_CFI, ROW(SYMB_CFA_NONE, 0, 0)                           \
	}

/* Addresses outside every range are unmapped. */
struct table {
	const struct range *r;
	size_t n;
	uint64_t asked[64];
	size_t nasked;
};

static enum symb_lookup table_lookup(void *ctx, uint64_t addr, struct symb_delta *row)
{
	struct table *t = ctx;
	size_t i;

	if (t->nasked < 64)
		t->asked[t->nasked++] = addr;
	for (i = 0; i < t->n; i++) {
		if (addr >= t->r[i].lo && addr < t->r[i].hi) {
			*row = t->r[i].row;
			return t->r[i].res;
		}
	}
	return SYMB_LOOKUP_UNMAPPED;
}

#define TABLE(ranges)                                                                              \
	{                                                                                          \
		.r = (ranges), .n = sizeof(ranges) / sizeof((ranges)[0])                           \
	}

static struct symb_unwind_result walk(struct table *t, const struct fake_stack *f, uint64_t ip,
				      uint64_t sp, uint64_t bp, struct symb_uframe *out,
				      uint32_t max)
{
	struct symb_unwind_regs regs = {.ip = ip, .sp = sp, .bp = bp};
	struct symb_unwind_result res;

	memset(&res, 0xff, sizeof(res));
	symb_unwind(&regs, &f->s, table_lookup, t, out, max, &res);
	assert_true(res.n <= max);
	assert_true(res.stop < SYMB_STOP__COUNT);
	assert_true(res.fp_frames <= res.n);
	return res;
}

static void assert_frame(const struct symb_uframe *fr, uint64_t pc, bool exact)
{
	assert_int_equal(fr->pc, pc);
	assert_int_equal(fr->exact, exact);
}

/* Functions of the fake program, 0x100 bytes each. */
#define FN(i) (0x400000ULL + (i)*0x100)

/* A -> B -> C, each with an SP row, C the outermost (END row). */
static void test_sp_chain(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 16, 0), /* A: one push */
		FOUND(FN(2), FN(3), SYMB_CFA_SP, 40, 0), /* B: 32 bytes of frame */
		FOUND(FN(3), FN(4), SYMB_CFA_END, 0, 0), /* C: _start-like */
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	put(&f, BASE + 8, FN(2) + 0x20);	 /* A's ra, at CFA 0x10 - 8 */
	put(&f, BASE + 0x10 + 32, FN(3) + 0x30); /* B's ra, at CFA 0x38 - 8 */
	res = walk(&t, &f, FN(1) + 0x10, BASE, 0, out, 8);
	assert_int_equal(res.n, 3);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.fp_frames, 0);
	assert_frame(&out[0], FN(1) + 0x10, true);
	assert_frame(&out[1], FN(2) + 0x20, false);
	assert_frame(&out[2], FN(3) + 0x30, false);
	assert_int_equal(t.nasked, 3);
	assert_int_equal(t.asked[0], FN(1) + 0x10);
	assert_int_equal(t.asked[1], FN(2) + 0x1f);
	assert_int_equal(t.asked[2], FN(3) + 0x2f);
}

/* A return address at a function's end (noreturn call): looked up at pc - 1. */
static void test_ra_at_function_end(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0),
		FOUND(FN(2), FN(3), SYMB_CFA_END, 0, 0),
		FOUND(FN(3), FN(4), SYMB_CFA_INVALID, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, FN(3)); /* the call was FN(2)'s last instruction */
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_frame(&out[1], FN(3), false);
	assert_int_equal(t.asked[1], FN(3) - 1);
}

/* rbp-based frames: CFA from rbp, the caller's rbp restored from CFA - 16. */
static void test_bp_rows(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_BP, 16, -16),
		FOUND(FN(2), FN(3), SYMB_CFA_BP, 16, -16),
		FOUND(FN(3), FN(4), SYMB_CFA_SP, 8, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t bp1 = BASE + 0x40, bp2 = BASE + 0x100;

	stack_init(&f, WORDS * 8);
	put(&f, bp1, bp2);
	put(&f, bp1 + 8, FN(2) + 4);
	put(&f, bp2, 0x1234); /* the outer rbp: not a frame pointer */
	put(&f, bp2 + 8, FN(3) + 4);
	put(&f, bp2 + 16, 0); /* FN(3)'s ra: outermost */
	res = walk(&t, &f, FN(1) + 8, BASE, bp1, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 3);
	assert_frame(&out[1], FN(2) + 4, false);
	assert_frame(&out[2], FN(3) + 4, false);
}

/*
 * A leaf without a frame pointer (rbp still the caller's) called from a
 * function that uses rbp: with CFI the caller is found; frame pointers alone
 * skip it, the classic error this unwinder exists to avoid.
 */
static void test_leaf_without_fp(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0),	   /* leaf: nothing pushed */
		FOUND(FN(2), FN(3), SYMB_CFA_BP, 16, -16), /* caller: push rbp; mov rsp, rbp */
		FOUND(FN(3), FN(4), SYMB_CFA_END, 0, 0),
	};
	const struct range none[] = {NOCFI(FN(1), FN(4))};
	struct table t = TABLE(r), tn = TABLE(none);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t bp = BASE + 0x20;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, FN(2) + 0x10); /* leaf's ra */
	put(&f, bp, 0);		     /* caller's saved rbp: outermost */
	put(&f, bp + 8, FN(3) + 0x10);
	res = walk(&t, &f, FN(1) + 3, BASE, bp, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 3);
	assert_frame(&out[1], FN(2) + 0x10, false);
	assert_frame(&out[2], FN(3) + 0x10, false);

	res = walk(&tn, &f, FN(1) + 3, BASE, bp, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END); /* rbp 0 ends the chain */
	assert_int_equal(res.n, 2);
	assert_int_equal(res.fp_frames, 1);
	assert_frame(&out[1], FN(3) + 0x10, false); /* the caller is missing */
}

/* A PLT stub: one word pushed before (rip & 15) == 11, two from there. */
static void test_plt(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_PLT, 0, 0),
		FOUND(FN(2), FN(3), SYMB_CFA_END, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t ip;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, FN(2) + 0x10);
	put(&f, BASE + 8, FN(2) + 0x20);
	for (ip = FN(1) + 0x20; ip < FN(1) + 0x30; ip++) {
		res = walk(&t, &f, ip, BASE, 0, out, 8);
		assert_int_equal(res.stop, SYMB_STOP_END);
		assert_int_equal(res.n, 2);
		assert_frame(&out[1], (ip & 15) >= 11 ? FN(2) + 0x20 : FN(2) + 0x10, false);
	}
}

/* The layout step_signal reads, checked against glibc's ucontext_t. */
_Static_assert(offsetof(ucontext_t, uc_mcontext) == 40, "uc_mcontext");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]) == 40 + 10 * 8, "rbp");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]) == 40 + 15 * 8, "rsp");
_Static_assert(offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]) == 40 + 16 * 8, "rip");

/*
 * handler -> __restore_rt -> interrupted function -> its caller. The
 * restorer's FDE starts one byte before it (as glibc's does) so that its
 * return address, looked up at pc - 1, finds it. The interrupted ip is
 * exact: looked up as is, and reported exact.
 */
static void test_signal_frame(void **state)
{
	const uint64_t restorer = FN(5) + 0x11;
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 16, -16), /* handler: push rbp */
		FOUND(FN(5) + 0x10, FN(5) + 0x20, SYMB_CFA_SIGNAL, 0, 0),
		FOUND(FN(2), FN(3), SYMB_CFA_BP, 16, -16), /* interrupted */
		FOUND(FN(3), FN(4), SYMB_CFA_END, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t uc = BASE + 0x10, isp = BASE + 0x800, ibp = isp + 0x30;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, 0xdead);	     /* handler's saved rbp (its own rbp is junk) */
	put(&f, BASE + 8, restorer); /* pretcode */
	put(&f, uc + 40 + 10 * 8, ibp);
	put(&f, uc + 40 + 15 * 8, isp);
	put(&f, uc + 40 + 16 * 8, FN(2) + 0x33);
	put(&f, ibp, 0);
	put(&f, ibp + 8, FN(3) + 8);
	res = walk(&t, &f, FN(1) + 5, BASE, 0x77, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 4);
	assert_frame(&out[0], FN(1) + 5, true);
	assert_frame(&out[1], restorer, false);
	assert_frame(&out[2], FN(2) + 0x33, true);
	assert_frame(&out[3], FN(3) + 8, false);
	assert_int_equal(t.asked[1], restorer - 1);
	assert_int_equal(t.asked[2], FN(2) + 0x33);
	assert_int_equal(t.asked[3], FN(3) + 7);
}

/* CFI, then code without CFI (lookup NO_CFI, or a NONE row), then CFI again. */
static void test_fp_fallback(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0),	  NOCFI(FN(2), FN(3)),
		FOUND(FN(3), FN(4), SYMB_CFA_NONE, 0, 0), FOUND(FN(4), FN(5), SYMB_CFA_SP, 16, 0),
		FOUND(FN(5), FN(6), SYMB_CFA_END, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t bp2 = BASE + 0x40, bp3 = BASE + 0x80;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, FN(2) + 1);
	put(&f, bp2, bp3);
	put(&f, bp2 + 8, FN(3) + 1);
	put(&f, bp3, 0x5555);
	put(&f, bp3 + 8, FN(4) + 1);
	put(&f, bp3 + 16 + 8, FN(5) + 1); /* FN(4): CFA = sp + 16 */
	res = walk(&t, &f, FN(1), BASE, bp2, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 5);
	assert_int_equal(res.fp_frames, 2);
	assert_frame(&out[2], FN(3) + 1, false);
	assert_frame(&out[3], FN(4) + 1, false);
	assert_frame(&out[4], FN(5) + 1, false);
}

static void test_stop_end(void **state)
{
	const struct range r[] = {FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0)};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	put(&f, BASE, 0); /* return address 0: a thread's bottom frame */
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 1);
}

static void test_stop_max_frames(void **state)
{
	/* 100 frames of 16 bytes, each returning into the same function */
	const struct range r[] = {FOUND(FN(1), FN(2), SYMB_CFA_SP, 16, 0)};
	struct table t = TABLE(r);
	struct symb_uframe out[101];
	struct symb_unwind_result res;
	struct fake_stack f;
	unsigned int i;

	stack_init(&f, WORDS * 8);
	for (i = 0; i < 100; i++)
		put(&f, BASE + i * 16 + 8, FN(1) + 0x10 + i % 8);
	res = walk(&t, &f, FN(1), BASE, 0, out, 64);
	assert_int_equal(res.stop, SYMB_STOP_MAX_FRAMES);
	assert_int_equal(res.n, 64);
	assert_frame(&out[63], FN(1) + 0x10 + 62 % 8, false);

	res = walk(&t, &f, FN(1), BASE, 0, out, 0);
	assert_int_equal(res.stop, SYMB_STOP_MAX_FRAMES);
	assert_int_equal(res.n, 0);

	/* the whole walk: the 102nd return address, 0xa5a5..., is unmapped */
	res = walk(&t, &f, FN(1), BASE, 0, out, 101);
	assert_int_equal(res.stop, SYMB_STOP_UNMAPPED);
	assert_int_equal(res.n, 101);
}

static void test_stop_short_stack(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 64, 0),
		FOUND(FN(2), FN(3), SYMB_CFA_SP, 8, -16),
	};
	const struct range rs[] = {FOUND(FN(1), FN(2), SYMB_CFA_SIGNAL, 0, 0)};
	struct table t = TABLE(r), ts = TABLE(rs);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, 56); /* the ra at CFA - 8 = 56 is just beyond */
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);
	assert_int_equal(res.n, 1);

	/* the ra is in, the saved rbp is not (below base) */
	stack_init(&f, 64);
	put(&f, BASE, FN(2));
	res = walk(&t, &f, FN(2) + 1, BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);

	/* frame pointers leading beyond the copy */
	res = walk(&t, &f, FN(7), BASE, BASE + 64, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);
	assert_int_equal(res.n, 1);

	/* a signal frame whose ucontext is cut */
	stack_init(&f, 40 + 16 * 8);
	res = walk(&ts, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);

	/* no copy at all */
	f.s.data = NULL;
	f.s.len = 0;
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);
}

static void test_stop_no_cfi(void **state)
{
	const struct range r[] = {NOCFI(FN(1), FN(2))};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	res = walk(&t, &f, FN(1), BASE + 0x100, BASE + 0x80, out, 8); /* rbp below sp */
	assert_int_equal(res.stop, SYMB_STOP_NO_CFI);
	assert_int_equal(res.n, 1);
	assert_int_equal(res.fp_frames, 0);
	res = walk(&t, &f, FN(1), BASE, BASE + 0x84, out, 8); /* misaligned */
	assert_int_equal(res.stop, SYMB_STOP_NO_CFI);
	res = walk(&t, &f, FN(1), BASE + 0x90, 1, out, 8); /* rbp holds data */
	assert_int_equal(res.stop, SYMB_STOP_NO_CFI);

	/* rbp == sp (no locals) is a frame pointer: the CFA is sp + 16 */
	put(&f, BASE, 0);
	put(&f, BASE + 8, 0);
	res = walk(&t, &f, FN(1), BASE, BASE, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
}

static void test_stop_unmapped(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0),
		FOUND(FN(2), FN(3), SYMB_CFA_END, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t bp = BASE + 0x40;

	/* a bogus return address is not reported */
	stack_init(&f, WORDS * 8);
	put(&f, BASE, 0x1234567);
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_UNMAPPED);
	assert_int_equal(res.n, 1);
	assert_frame(&out[0], FN(1), true);

	/* an unmapped sampled ip (JIT code) is, and frame pointers go on */
	put(&f, bp, 0);
	put(&f, bp + 8, FN(2) + 9);
	res = walk(&t, &f, 0x7f0000001000ULL, BASE, bp, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.fp_frames, 1);
	assert_frame(&out[0], 0x7f0000001000ULL, true);
	assert_frame(&out[1], FN(2) + 9, false);
}

static void test_stop_bad_cfa(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_SP, 0, 0),	   /* CFA == sp */
		FOUND(FN(2), FN(3), SYMB_CFA_SP, 12, 0),   /* misaligned */
		FOUND(FN(3), FN(4), SYMB_CFA_SP, -8, 0),   /* below sp */
		FOUND(FN(4), FN(5), SYMB_CFA_BP, 16, -16), /* rbp chain */
		FOUND(FN(5), FN(6), SYMB_CFA_SIGNAL, 0, 0),
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;
	uint64_t bp = BASE + 0x40;
	uint64_t ip;

	stack_init(&f, WORDS * 8);
	for (ip = FN(1); ip < FN(4); ip += 0x100) {
		res = walk(&t, &f, ip, BASE + 8, 0, out, 8);
		assert_int_equal(res.stop, SYMB_STOP_BAD_CFA);
		assert_int_equal(res.n, 1);
	}

	/* a saved rbp that points at itself: the second CFA equals the sp */
	put(&f, bp, bp);
	put(&f, bp + 8, FN(4) + 2);
	res = walk(&t, &f, FN(4) + 1, BASE, bp, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_BAD_CFA);
	assert_int_equal(res.n, 2);

	/* rbp below sp */
	res = walk(&t, &f, FN(4) + 1, BASE + 0x100, bp, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_BAD_CFA);

	/* a CFA that wraps around the address space */
	res = walk(&t, &f, FN(4) + 1, BASE, UINT64_MAX - 7, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_BAD_CFA);

	/* a signal frame that restores an sp not above its own */
	put(&f, BASE + 40 + 15 * 8, BASE);
	put(&f, BASE + 40 + 16 * 8, FN(1));
	res = walk(&t, &f, FN(5), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_BAD_CFA);
	assert_int_equal(res.n, 1);
}

static void test_stop_invalid_cfi(void **state)
{
	const struct range r[] = {
		FOUND(FN(1), FN(2), SYMB_CFA_INVALID, 0, 0),
		FOUND(FN(2), FN(3), 99, 8, 0), /* a kind this code does not know */
	};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	res = walk(&t, &f, FN(1), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_INVALID_CFI);
	assert_int_equal(res.n, 1);
	res = walk(&t, &f, FN(2), BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_INVALID_CFI);
}

static void test_stop_no_regs(void **state)
{
	const struct range r[] = {FOUND(FN(1), FN(2), SYMB_CFA_SP, 8, 0)};
	struct table t = TABLE(r);
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	stack_init(&f, WORDS * 8);
	res = walk(&t, &f, 0, BASE, 0, out, 8);
	assert_int_equal(res.stop, SYMB_STOP_NO_REGS);
	assert_int_equal(res.n, 0);
	assert_int_equal(t.nasked, 0);
	symb_unwind(NULL, &f.s, table_lookup, &t, out, 8, &res);
	assert_int_equal(res.stop, SYMB_STOP_NO_REGS);
}

/* No stack, no lookup (frame pointers only), no output, no result: no crash. */
static void test_null_args(void **state)
{
	struct symb_unwind_regs regs = {.ip = FN(1), .sp = BASE, .bp = BASE + 0x10};
	struct symb_uframe out[8];
	struct symb_unwind_result res;
	struct fake_stack f;

	symb_unwind(&regs, NULL, NULL, NULL, out, 8, &res);
	assert_int_equal(res.stop, SYMB_STOP_SHORT_STACK);
	assert_int_equal(res.n, 1);

	stack_init(&f, WORDS * 8);
	put(&f, BASE + 0x10, 0);
	put(&f, BASE + 0x18, FN(2));
	symb_unwind(&regs, &f.s, NULL, NULL, out, 8, &res);
	assert_int_equal(res.stop, SYMB_STOP_END);
	assert_int_equal(res.n, 2);
	assert_int_equal(res.fp_frames, 1);

	symb_unwind(&regs, &f.s, NULL, NULL, NULL, 8, &res);
	assert_int_equal(res.stop, SYMB_STOP_MAX_FRAMES);
	assert_int_equal(res.n, 0);
	symb_unwind(&regs, &f.s, NULL, NULL, out, 8, NULL);
}

static void test_stop_names(void **state)
{
	static const char *const want[SYMB_STOP__COUNT] = {
		"end",	    "max-frames", "short-stack", "no-cfi",
		"unmapped", "bad-cfa",	  "invalid-cfi", "no-regs",
	};
	int i;

	for (i = 0; i < SYMB_STOP__COUNT; i++)
		assert_string_equal(symb_unwind_stop_name(i), want[i]);
	assert_string_equal(symb_unwind_stop_name(SYMB_STOP__COUNT), "unknown");
	assert_string_equal(symb_unwind_stop_name((enum symb_unwind_stop) - 1), "unknown");
}

/* Real stacks: frame pointers only, or one signal row for the restorer. */
static uint64_t real_restorer;
static uint64_t real_asked[64];
static size_t real_nasked;

static enum symb_lookup real_lookup(void *ctx, uint64_t addr, struct symb_delta *row)
{
	if (real_nasked < 64)
		real_asked[real_nasked++] = addr;
	if (real_restorer && addr == real_restorer - 1) {
		row->kind = SYMB_CFA_SIGNAL;
		return SYMB_LOOKUP_FOUND;
	}
	return SYMB_LOOKUP_NO_CFI;
}

/* The function of this executable that holds pc (-rdynamic exports them). */
static const void *func_of(uint64_t pc)
{
	Dl_info info;

	if (!dladdr((void *)(uintptr_t)pc, &info) || !info.dli_saddr)
		return NULL;
	return info.dli_saddr;
}

static void real_unwind(struct symb_uframe *out, uint32_t max, struct symb_unwind_result *res)
{
	struct symb_unwind_regs regs = {
		.ip = real_capture.ip, .sp = real_capture.sp, .bp = real_capture.bp};
	struct symb_unwind_stack st = {
		.data = real_capture.stack, .len = real_capture.len, .base = real_capture.sp};

	real_nasked = 0;
	symb_unwind(&regs, &st, real_lookup, NULL, out, max, res);
}

__attribute__((noinline)) static void test_real_frame_pointers(void **state)
{
	struct symb_uframe out[32];
	struct symb_unwind_result res;
	uint64_t here = (uintptr_t)__builtin_return_address(0);

	memset(&real_capture, 0, sizeof(real_capture));
	real_capture.hi = (uintptr_t)__builtin_frame_address(0) + 16;
	real_capture.limit = 16 * 1024;
	real_restorer = 0;
	assert_int_equal(real_chain_a(1), 5);
	assert_true(real_capture.len > 64);

	real_unwind(out, 32, &res);
	assert_true(res.n >= 6);
	assert_true(res.fp_frames >= 5);
	assert_frame(&out[0], real_capture.ip, true);
	assert_ptr_equal(func_of(out[0].pc), (const void *)real_chain_leaf);
	assert_frame(&out[1], real_capture.ret[0], false);
	assert_ptr_equal(func_of(out[1].pc - 1), (const void *)real_chain_c);
	assert_frame(&out[2], real_capture.ret[1], false);
	assert_ptr_equal(func_of(out[2].pc - 1), (const void *)real_chain_b);
	assert_frame(&out[3], real_capture.ret[2], false);
	assert_ptr_equal(func_of(out[3].pc - 1), (const void *)real_chain_a);
	assert_frame(&out[4], real_capture.ret[3], false); /* into this function */
	assert_frame(&out[5], here, false);
	/* this copy ends at this function's frame: beyond, no more than that */
	if (res.n == 6)
		assert_true(res.stop == SYMB_STOP_SHORT_STACK || res.stop == SYMB_STOP_NO_CFI ||
			    res.stop == SYMB_STOP_END || res.stop == SYMB_STOP_BAD_CFA);
}

/*
 * A SIGTRAP handler on the same stack: handler (frame pointers) -> restorer
 * (the signal row) -> the interrupted instruction in real_sig_victim, exact,
 * with rbp and rsp from the kernel's ucontext -> real_sig_outer.
 */
__attribute__((noinline)) static void test_real_signal_frame(void **state)
{
	struct symb_uframe out[32];
	struct symb_unwind_result res;
	size_t i;

	memset(&real_capture, 0, sizeof(real_capture));
	real_capture.hi = (uintptr_t)__builtin_frame_address(0) + 16;
	real_capture.limit = REAL_STACK_MAX;
	assert_int_equal(real_sig_install(), 0);
	assert_int_equal(real_sig_outer(1), 3);
	signal(SIGTRAP, SIG_DFL);
	if (real_capture.hi - real_capture.sp > REAL_STACK_MAX)
		skip(); /* a signal frame too large for the copy (big xsave state) */

	real_restorer = real_capture.ret[0];
	real_unwind(out, 32, &res);
	assert_true(res.n >= 5);
	assert_frame(&out[1], real_restorer, false);
	assert_frame(&out[2], real_capture.uc_ip, true);
	assert_ptr_equal(func_of(out[2].pc), (const void *)real_sig_victim);
	assert_frame(&out[3], real_capture.ret[1], false);
	assert_ptr_equal(func_of(out[3].pc - 1), (const void *)real_sig_outer);
	assert_frame(&out[4], real_capture.ret[2], false); /* into this function */
	if (res.stop != SYMB_STOP_MAX_FRAMES) /* all but the signal frame and the last */
		assert_int_equal(res.fp_frames, res.n - 2);
	for (i = 0; i < real_nasked; i++)
		assert_true(real_asked[i] != real_capture.uc_ip - 1);
	assert_int_equal(real_asked[2], real_capture.uc_ip);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sp_chain),
		cmocka_unit_test(test_ra_at_function_end),
		cmocka_unit_test(test_bp_rows),
		cmocka_unit_test(test_leaf_without_fp),
		cmocka_unit_test(test_plt),
		cmocka_unit_test(test_signal_frame),
		cmocka_unit_test(test_fp_fallback),
		cmocka_unit_test(test_stop_end),
		cmocka_unit_test(test_stop_max_frames),
		cmocka_unit_test(test_stop_short_stack),
		cmocka_unit_test(test_stop_no_cfi),
		cmocka_unit_test(test_stop_unmapped),
		cmocka_unit_test(test_stop_bad_cfa),
		cmocka_unit_test(test_stop_invalid_cfi),
		cmocka_unit_test(test_stop_no_regs),
		cmocka_unit_test(test_null_args),
		cmocka_unit_test(test_stop_names),
		cmocka_unit_test(test_real_frame_pointers),
		cmocka_unit_test(test_real_signal_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
