// SPDX-License-Identifier: MIT
/*
 * The user-stack walk of unwind.h (x86-64). One frame at a time: look up the
 * row for the frame's pc, emit the frame, then compute the caller's ip, sp
 * and bp from the row (or from frame pointers where there is no CFI).
 *
 * Termination: every step that leads to another frame sets sp to a CFA that
 * is 8-aligned and strictly above the previous sp, and each step reads at
 * least one value inside the stack copy at or above the previous sp, so a
 * walk takes at most about len / 8 frames whatever the copy and the rows
 * contain.
 */
#include <stddef.h>
#include <string.h>

#include "unwind.h"

/*
 * Test hook: sees each CFA the walk accepts (the sp of the next frame). The
 * fuzz target defines it to check that CFAs only increase; compiled out
 * otherwise.
 */
#ifndef SYMB_UNWIND_TRACE_CFA
#define SYMB_UNWIND_TRACE_CFA(cfa) ((void)0)
#endif

/*
 * The caller's registers as the kernel saved them for a signal handler: on
 * entry to the restorer (__restore_rt) the handler's ret has popped the
 * rt_sigframe's pretcode, so sp points at its struct ucontext, whose
 * uc_mcontext (struct sigcontext, arch/x86/include/uapi/asm/sigcontext.h)
 * follows uc_flags, uc_link and uc_stack (8 + 8 + 24 bytes). glibc's
 * ucontext_t has the same layout (gregs[REG_RBP] etc.); the unit test checks
 * these against it.
 */
#define UC_MCONTEXT 40
#define SC_RBP	    (UC_MCONTEXT + 10 * 8)
#define SC_RSP	    (UC_MCONTEXT + 15 * 8)
#define SC_RIP	    (UC_MCONTEXT + 16 * 8)

/* Not a stop reason: the step found the next frame. */
#define STEP_NEXT SYMB_STOP__COUNT

struct walk {
	const struct symb_unwind_stack *stack;
	uint64_t ip, sp, bp;
	bool exact; /* ip is the executing instruction, not a return address */
};

/* Reads the 8 bytes at addr if they all lie inside the stack copy. */
static bool stack_read(const struct symb_unwind_stack *s, uint64_t addr, uint64_t *v)
{
	uint64_t off;

	if (!s->data || addr < s->base)
		return false;
	off = addr - s->base;
	if (s->len < sizeof(*v) || off > s->len - sizeof(*v))
		return false;
	memcpy(v, s->data + off, sizeof(*v)); /* the copy need not be aligned */
	return true;
}

/*
 * Moves to the caller of a frame whose CFA is cfa: return address at
 * CFA - 8, saved rbp at CFA + bp_off unless bp_off is 0 (rbp then keeps its
 * value, DWARF's "same value").
 */
static int step_cfa(struct walk *w, uint64_t cfa, int32_t bp_off)
{
	uint64_t ra, bp = w->bp;

	if (cfa <= w->sp || (cfa & 7))
		return SYMB_STOP_BAD_CFA;
	if (!stack_read(w->stack, cfa - 8, &ra))
		return SYMB_STOP_SHORT_STACK;
	if (ra == 0)
		return SYMB_STOP_END;
	if (bp_off && !stack_read(w->stack, cfa + (int64_t)bp_off, &bp))
		return SYMB_STOP_SHORT_STACK;
	SYMB_UNWIND_TRACE_CFA(cfa);
	w->ip = ra;
	w->sp = cfa;
	w->bp = bp;
	w->exact = false;
	return STEP_NEXT;
}

/*
 * Frame pointers: rbp points at the saved rbp, the return address above it.
 * An rbp of 0 is the ABI's mark of the outermost frame. rbp may equal sp (a
 * function with no locals after its prologue); the CFA is still above sp. An
 * aligned rbp at or above sp but beyond the copy is taken for a real frame
 * pointer into the part of the stack that was not copied (a deep stack), so
 * the walk stops with SHORT_STACK rather than NO_CFI.
 */
static int step_fp(struct walk *w)
{
	if (w->bp == 0)
		return SYMB_STOP_END;
	if (w->bp < w->sp || (w->bp & 7))
		return SYMB_STOP_NO_CFI;
	return step_cfa(w, w->bp + 16, -16);
}

/* __restore_rt: the next frame is the interrupted instruction itself. */
static int step_signal(struct walk *w)
{
	uint64_t ip, sp, bp;

	if (!stack_read(w->stack, w->sp + SC_RBP, &bp) ||
	    !stack_read(w->stack, w->sp + SC_RSP, &sp) ||
	    !stack_read(w->stack, w->sp + SC_RIP, &ip))
		return SYMB_STOP_SHORT_STACK;
	if (sp <= w->sp || (sp & 7))
		return SYMB_STOP_BAD_CFA;
	/* No mapping holds page 0 (mmap_min_addr); 0 must not become a frame. */
	if (ip == 0)
		return SYMB_STOP_UNMAPPED;
	SYMB_UNWIND_TRACE_CFA(sp);
	w->ip = ip;
	w->sp = sp;
	w->bp = bp;
	w->exact = true;
	return STEP_NEXT;
}

static int step(struct walk *w, const struct symb_delta *row, uint32_t *fp_frames)
{
	uint64_t cfa;
	int ret;

	switch (row->kind) {
	case SYMB_CFA_SP:
		return step_cfa(w, w->sp + (int64_t)row->cfa_off, row->bp_off);
	case SYMB_CFA_BP:
		return step_cfa(w, w->bp + (int64_t)row->cfa_off, row->bp_off);
	case SYMB_CFA_PLT:
		/* The stub's second half (push; jmp) has pushed one more word. */
		cfa = w->sp + 8 + ((w->ip & 15) >= 11 ? 8 : 0);
		return step_cfa(w, cfa, row->bp_off);
	case SYMB_CFA_SIGNAL:
		return step_signal(w);
	case SYMB_CFA_END:
		return SYMB_STOP_END;
	case SYMB_CFA_NONE:
		ret = step_fp(w);
		if (ret == STEP_NEXT)
			(*fp_frames)++;
		return ret;
	default: /* SYMB_CFA_INVALID, and kinds this code does not know */
		return SYMB_STOP_INVALID_CFI;
	}
}

void symb_unwind(const struct symb_unwind_regs *regs, const struct symb_unwind_stack *stack,
		 symb_delta_lookup_fn lookup, void *ctx, struct symb_uframe *out, uint32_t max,
		 struct symb_unwind_result *res)
{
	static const struct symb_unwind_stack empty;
	struct symb_unwind_result r = {0};
	struct symb_delta row;
	enum symb_lookup found;
	struct walk w;
	bool first = true;
	int ret;

	if (!out)
		max = 0;
	if (!regs || regs->ip == 0) {
		r.stop = SYMB_STOP_NO_REGS;
		goto out;
	}
	w.stack = stack ? stack : &empty;
	w.ip = regs->ip;
	w.sp = regs->sp;
	w.bp = regs->bp;
	w.exact = true;
	for (;;) {
		memset(&row, 0, sizeof(row));
		found = lookup ? lookup(ctx, w.exact ? w.ip : w.ip - 1, &row) : SYMB_LOOKUP_NO_CFI;
		/*
		 * A return address outside every mapping is garbage, so it is
		 * not reported; an unmapped sampled ip is real (JIT code) and
		 * frame pointers may still lead on from it.
		 */
		if (found == SYMB_LOOKUP_UNMAPPED && !first) {
			r.stop = SYMB_STOP_UNMAPPED;
			break;
		}
		if (r.n >= max) {
			r.stop = SYMB_STOP_MAX_FRAMES;
			break;
		}
		out[r.n].pc = w.ip;
		out[r.n].exact = w.exact;
		r.n++;
		first = false;
		if (found != SYMB_LOOKUP_FOUND)
			row.kind = SYMB_CFA_NONE;
		ret = step(&w, &row, &r.fp_frames);
		if (ret != STEP_NEXT) {
			r.stop = ret;
			break;
		}
	}
out:
	if (res)
		*res = r;
}

const char *symb_unwind_stop_name(enum symb_unwind_stop stop)
{
	static const char *const names[SYMB_STOP__COUNT] = {
		[SYMB_STOP_END] = "end",
		[SYMB_STOP_MAX_FRAMES] = "max-frames",
		[SYMB_STOP_SHORT_STACK] = "short-stack",
		[SYMB_STOP_NO_CFI] = "no-cfi",
		[SYMB_STOP_UNMAPPED] = "unmapped",
		[SYMB_STOP_BAD_CFA] = "bad-cfa",
		[SYMB_STOP_INVALID_CFI] = "invalid-cfi",
		[SYMB_STOP_NO_REGS] = "no-regs",
	};

	if ((unsigned int)stop >= SYMB_STOP__COUNT)
		return "unknown";
	return names[stop];
}
