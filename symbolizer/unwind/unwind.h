/* SPDX-License-Identifier: MIT */
/*
 * User-stack unwinding from a sample's registers and a copy of the top of
 * its stack, with stack-delta rows (cfi.h) where the code has CFI and frame
 * pointers where it has none.
 *
 * What it is: the frame-by-frame walk, and the reason it stopped. What it is
 * not: address-to-object lookup (the caller's callback does that) or
 * symbolization. It never reads memory other than the stack copy it is
 * given, whose contents are untrusted: any value only ends the walk early,
 * with a reason.
 */
#ifndef LOWPROF_SYMB_UNWIND_H
#define LOWPROF_SYMB_UNWIND_H

#include <stdbool.h>
#include <stdint.h>

#include "cfi.h"

struct symb_unwind_regs {
	uint64_t ip, sp, bp;
};

/* Bytes copied from the user stack: data[i] is the byte at base + i. */
struct symb_unwind_stack {
	const uint8_t *data;
	uint32_t len;
	uint64_t base; /* the sampled sp */
};

enum symb_lookup {
	SYMB_LOOKUP_FOUND = 0,	  /* *row holds the delta row for the address */
	SYMB_LOOKUP_NO_CFI = 1,	  /* mapped code, but no CFI covers it (use frame pointers) */
	SYMB_LOOKUP_UNMAPPED = 2, /* not in any executable mapping of the process */
};

/*
 * Supplied by the caller: the row for runtime address addr (the caller maps
 * it to its object's ELF virtual address and calls symb_deltas__find). A
 * SYMB_CFA_NONE row is treated like SYMB_LOOKUP_NO_CFI.
 */
typedef enum symb_lookup (*symb_delta_lookup_fn)(void *ctx, uint64_t addr, struct symb_delta *row);

enum symb_unwind_stop {
	SYMB_STOP_END = 0,     /* clean: the outermost frame (RA undefined, or 0) */
	SYMB_STOP_MAX_FRAMES,  /* the output was full */
	SYMB_STOP_SHORT_STACK, /* a value needed lies beyond the stack copy */
	SYMB_STOP_NO_CFI,      /* no CFI, and frame pointers did not lead on */
	SYMB_STOP_UNMAPPED,    /* a return address outside every mapping */
	SYMB_STOP_BAD_CFA,     /* CFA not above the previous sp, or misaligned */
	SYMB_STOP_INVALID_CFI, /* a SYMB_CFA_INVALID row */
	SYMB_STOP_NO_REGS,     /* the sample has no user registers (ip == 0) */
	SYMB_STOP__COUNT
};

/* A frame: pcs[0] is the sampled ip; the rest are return addresses. */
struct symb_uframe {
	uint64_t pc;
	/*
	 * true when pc is the address of the instruction being executed (the
	 * sampled ip, or the ip a signal frame restored), false for return
	 * addresses: symbolize and look up those at pc - 1, inside the call.
	 */
	bool exact;
};

struct symb_unwind_result {
	uint32_t n; /* frames written */
	enum symb_unwind_stop stop;
	uint32_t fp_frames; /* frames unwound through frame pointers */
};

/*
 * Walks the stack: writes up to max frames, leaf first, into out and the
 * outcome into res. Deterministic and allocation-free.
 */
void symb_unwind(const struct symb_unwind_regs *regs, const struct symb_unwind_stack *stack,
		 symb_delta_lookup_fn lookup, void *ctx, struct symb_uframe *out, uint32_t max,
		 struct symb_unwind_result *res);

/* Short name of a stop reason for summaries ("short-stack"). */
const char *symb_unwind_stop_name(enum symb_unwind_stop stop);

#endif /* LOWPROF_SYMB_UNWIND_H */
