// SPDX-License-Identifier: MIT
/*
 * libFuzzer target for symbolizer/unwind/unwind.c: registers, a small delta table
 * and stack bytes from the input (layout in fuzz_unwind.h), walked with a
 * lookup over that table. Besides memory errors (ASan/UBSan) it traps on
 * broken contracts:
 *   - n <= max, a known stop reason, fp_frames <= n, at most about len / 8
 *     frames (what increasing, aligned CFAs inside the copy allow);
 *   - frame 0 is the sampled ip, exact; no frame has pc 0;
 *   - frame i was looked up i-th, at pc (exact) or pc - 1, and no frame but
 *     the first got UNMAPPED from the lookup; UNMAPPED stops come from it;
 *   - every CFA the walk accepted (through unwind.c's test hook) is 8-aligned
 *     and above the one before and the sampled sp, one per step;
 *   - the same input walks to the same result twice.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_unwind.h"

static uint64_t cfas[FUZZ_MAX_FRAMES + 2];
static unsigned int ncfas;

static void note_cfa(uint64_t cfa)
{
	if (ncfas < sizeof(cfas) / sizeof(cfas[0]))
		cfas[ncfas] = cfa;
	ncfas++;
}

/* The code under test, with its CFA hook pointed at note_cfa. */
#define SYMB_UNWIND_TRACE_CFA(cfa) note_cfa(cfa)
#include "unwind.c"

struct fuzz_row {
	uint64_t pc;
	struct symb_delta row;
	uint8_t kind;
};

struct fuzz_table {
	struct fuzz_row rows[FUZZ_MAX_ROWS];
	unsigned int n;
	uint64_t asked[FUZZ_MAX_FRAMES + 2];
	enum symb_lookup answer[FUZZ_MAX_FRAMES + 2];
	unsigned int nasked;
};

static enum symb_lookup fuzz_lookup(void *ctx, uint64_t addr, struct symb_delta *row)
{
	struct fuzz_table *t = ctx;
	enum symb_lookup ret = SYMB_LOOKUP_UNMAPPED;
	unsigned int i;

	for (i = t->n; i-- > 0;) {
		if (t->rows[i].pc > addr)
			continue;
		if (t->rows[i].kind == FUZZ_KIND_UNMAPPED) {
			ret = SYMB_LOOKUP_UNMAPPED;
		} else if (t->rows[i].kind == FUZZ_KIND_NO_CFI) {
			ret = SYMB_LOOKUP_NO_CFI;
		} else {
			*row = t->rows[i].row;
			ret = SYMB_LOOKUP_FOUND;
		}
		break;
	}
	if (t->nasked >= sizeof(t->asked) / sizeof(t->asked[0]))
		__builtin_trap(); /* more lookups than frames + 1 */
	t->asked[t->nasked] = addr;
	t->answer[t->nasked] = ret;
	t->nasked++;
	return ret;
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void parse_rows(struct fuzz_table *t, const uint8_t *p, unsigned int n)
{
	struct fuzz_row r;
	unsigned int i, j;
	int16_t bp_off;
	int32_t off;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < n; i++, p += FUZZ_ROW_SIZE) {
		memset(&r, 0, sizeof(r));
		r.pc = get64(p);
		memcpy(&off, p + 8, sizeof(off));
		memcpy(&bp_off, p + 12, sizeof(bp_off));
		r.kind = p[14];
		r.row.pc = r.pc;
		r.row.cfa_off = off;
		r.row.bp_off = bp_off;
		r.row.kind = r.kind;
		/* insertion sort by pc: at most 16 rows */
		for (j = t->n; j > 0 && t->rows[j - 1].pc > r.pc; j--)
			t->rows[j] = t->rows[j - 1];
		t->rows[j] = r;
		t->n++;
	}
}

static void check(const struct symb_unwind_regs *regs, const struct symb_unwind_stack *st,
		  const struct fuzz_table *t, const struct symb_uframe *out, uint32_t max,
		  const struct symb_unwind_result *res)
{
	uint32_t i, steps;

	if (res->n > max || res->stop >= SYMB_STOP__COUNT || res->fp_frames > res->n)
		__builtin_trap();
	/*
	 * All CFAs but the last are 8-aligned, distinct and in
	 * [base - 40, base + len] (a value was read just below or, for a signal
	 * frame, 40 bytes above each), and there is one frame more than CFAs.
	 */
	if (res->n > (st->len + 40) / 8 + 3)
		__builtin_trap();
	if (regs->ip == 0) {
		if (res->stop != SYMB_STOP_NO_REGS || res->n || t->nasked || ncfas)
			__builtin_trap();
		return;
	}
	if (res->stop == SYMB_STOP_NO_REGS)
		__builtin_trap();
	if (res->n && (out[0].pc != regs->ip || !out[0].exact))
		__builtin_trap();
	/*
	 * Steps that reached another frame: each emitted frame's but the last,
	 * and the last's too when the frame it reached did not fit or was
	 * unmapped. That frame was looked up, except a signal frame's restored
	 * ip of 0, which stops UNMAPPED with neither a CFA nor a lookup.
	 */
	if (res->n == 0) {
		steps = 0;
		if (res->stop != SYMB_STOP_MAX_FRAMES || t->nasked != 1)
			__builtin_trap();
	} else if (res->stop == SYMB_STOP_MAX_FRAMES || res->stop == SYMB_STOP_UNMAPPED) {
		steps = res->n;
		if (t->nasked == res->n + 1) {
			if (res->stop == SYMB_STOP_UNMAPPED &&
			    t->answer[res->n] != SYMB_LOOKUP_UNMAPPED)
				__builtin_trap();
		} else if (res->stop == SYMB_STOP_UNMAPPED && t->nasked == res->n) {
			steps = res->n - 1;
			if (t->answer[res->n - 1] != SYMB_LOOKUP_FOUND)
				__builtin_trap();
		} else {
			__builtin_trap();
		}
	} else {
		steps = res->n - 1;
		if (t->nasked != res->n)
			__builtin_trap();
	}
	if (ncfas != steps)
		__builtin_trap();
	for (i = 0; i < res->n; i++) {
		if (out[i].pc == 0 || t->asked[i] != (out[i].exact ? out[i].pc : out[i].pc - 1))
			__builtin_trap();
		if (i > 0 && t->answer[i] == SYMB_LOOKUP_UNMAPPED)
			__builtin_trap();
	}
	for (i = 0; i < ncfas && i < sizeof(cfas) / sizeof(cfas[0]); i++) {
		if ((cfas[i] & 7) || cfas[i] <= (i ? cfas[i - 1] : regs->sp))
			__builtin_trap();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct symb_uframe out[FUZZ_MAX_FRAMES], out2[FUZZ_MAX_FRAMES];
	static struct fuzz_table t;
	struct symb_unwind_result res, res2;
	struct symb_unwind_regs regs;
	struct symb_unwind_stack st;
	unsigned int nrows;
	int16_t base_adj;
	uint32_t max;

	if (size < FUZZ_HDR_SIZE)
		return 0;
	regs.ip = get64(data);
	regs.sp = get64(data + 8);
	regs.bp = get64(data + 16);
	max = data[24] % (FUZZ_MAX_FRAMES + 1);
	nrows = data[25] % (FUZZ_MAX_ROWS + 1);
	memcpy(&base_adj, data + 26, sizeof(base_adj));
	data += FUZZ_HDR_SIZE;
	size -= FUZZ_HDR_SIZE;
	if (size < (size_t)nrows * FUZZ_ROW_SIZE)
		return 0;
	parse_rows(&t, data, nrows);
	data += nrows * FUZZ_ROW_SIZE;
	size -= nrows * FUZZ_ROW_SIZE;
	st.data = size ? data : NULL;
	st.len = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
	st.base = regs.sp + (uint64_t)(int64_t)base_adj;

	ncfas = 0;
	symb_unwind(&regs, &st, fuzz_lookup, &t, out, max, &res);
	check(&regs, &st, &t, out, max, &res);
	(void)symb_unwind_stop_name(res.stop);

	t.nasked = 0;
	ncfas = 0;
	symb_unwind(&regs, &st, fuzz_lookup, &t, out2, max, &res2);
	if (memcmp(&res, &res2, sizeof(res)) || memcmp(out, out2, res.n * sizeof(out[0])))
		__builtin_trap();
	return 0;
}
