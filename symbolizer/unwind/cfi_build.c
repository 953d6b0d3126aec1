// SPDX-License-Identifier: MIT
/*
 * Stack deltas from call-frame information (cfi.h): the table of a set of
 * raw CFI sections (symb_cfi__build_sections).
 *
 * The build runs in four steps, each linear in the section sizes (plus the
 * sorts):
 *  1. walk each section's entries once to parse its CIEs (kept sorted by
 *     offset; their initial instructions run once, the result is cached);
 *  2. walk again to parse the FDE headers against their CIEs;
 *  3. decide which FDE owns which addresses: .eh_frame FDEs sorted by start,
 *     one that starts inside an earlier one keeps only what lies past it
 *     (counted as a bad entry: the linker never emits that); .debug_frame
 *     FDEs fill only what .eh_frame leaves uncovered, so one of them may own
 *     several windows;
 *  4. run each window's CFA program and append its rows, merging equal
 *     neighbours, with NONE rows in the gaps.
 * An FDE found malformed in step 4 has its rows rolled back and is counted.
 * Every program runs once, so the work is linear in the input, except a
 * .debug_frame FDE's program that runs again for each further window: those
 * runs share an instruction budget proportional to the input, and once it is
 * spent the remaining repeated windows are left out (counted once). A row
 * cap (CFI_MAX_ROWS) ends the build early (what is done so far is kept).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi_int.h"
#include "lowprof/grow.h"
#include "lowprof/log.h"

#define CFI_STATE_DEPTH 16
/* Instructions that repeated runs may take, per input byte. */
#define CFI_BUDGET_PER_BYTE 16
#define CFI_BUDGET_MIN	    (1u << 20)

#define REG_RBP 6
#define REG_RSP 7

enum { SRC_EH = 0, SRC_DEBUG = 1 };

enum { RULE_UNSAVED = 0, RULE_UNDEF, RULE_SAME, RULE_OFFSET, RULE_OTHER };
enum { CFA_UNSET = 0, CFA_REGOFF, CFA_PLT, CFA_EXPR };

struct rule {
	int64_t off;
	uint8_t how;
};

/* Only what a row needs: the CFA, and the rules of rbp and the return address. */
struct cfa_state {
	uint64_t cfa_reg;
	int64_t cfa_off;
	uint8_t cfa_how;
	struct rule bp, ra;
};

struct cie {
	size_t off; /* of its length field: the key FDEs refer to */
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	uint8_t addr_size, seg_size;
	bool aug_z, signal;
	struct cfa_state init; /* after the initial instructions */
};

struct sect {
	const uint8_t *p;
	size_t size;
	int src;
	struct ptr_base pb;
	struct cie *cies; /* sorted by off */
	size_t ncies, cap;
};

struct fde {
	uint64_t start, end;
	size_t insn, insn_end; /* the CFA program, in its section */
	uint32_t cie;
	uint8_t src;
	bool bad, used;
};

/* The part [ws, we) of an FDE's range that its rows fill. */
struct seg {
	uint64_t ws, we;
	uint32_t fde;
	bool again; /* not the FDE's first window: its program runs again, metered */
};

struct builder {
	struct symb_delta *rows;
	size_t n, cap;
	struct fde *fdes;
	size_t nfdes, fcap;
	struct seg *segs;
	size_t nsegs, scap;
	struct symb_cfi_stats st;
	uint64_t budget; /* instructions left for programs that run again */
	bool budget_out;
};

static int grow(void **p, size_t *cap, size_t need, size_t elem, size_t max)
{
	return lp_grow(p, cap, need, elem, 64, max);
}

/* Appends a row unless it repeats the last one. limit: the rows allowed in all. */
static inline int push_row(struct builder *b, const struct symb_delta *row, size_t limit)
{
	struct symb_delta *last = b->n ? &b->rows[b->n - 1] : NULL;
	int err;

	if (last && last->kind == row->kind && last->cfa_off == row->cfa_off &&
	    last->bp_off == row->bp_off)
		return 0;
	if (b->n >= b->cap) {
		err = grow((void **)&b->rows, &b->cap, b->n + 1, sizeof(*b->rows), limit);
		if (err)
			return err;
	}
	b->rows[b->n++] = *row;
	return 0;
}

static int push_none(struct builder *b, uint64_t pc)
{
	struct symb_delta row = {.pc = pc, .kind = SYMB_CFA_NONE};

	return push_row(b, &row, CFI_MAX_ROWS);
}

/*
 * The x86-64 lazy PLT's CFA as binutils writes it (elf_x86_64_eh_frame_plt;
 * the IBT PLT compares with 10 instead of 11): rsp + 8, plus 8 once the
 * entry's push has run.
 */
static bool is_plt_expr(const uint8_t *e, uint64_t len)
{
	static const uint8_t plt[] = {0x77, 0x08, /* DW_OP_breg7 8 */
				      0x80, 0x00, /* DW_OP_breg16 0 */
				      0x3f,	  /* DW_OP_lit15 */
				      0x1a,	  /* DW_OP_and */
				      0x3b,	  /* DW_OP_lit11 */
				      0x2a,	  /* DW_OP_ge */
				      0x33,	  /* DW_OP_lit3 */
				      0x24,	  /* DW_OP_shl */
				      0x22 /* DW_OP_plus */};

	if (len != sizeof(plt))
		return false;
	if (memcmp(e, plt, 6) || (e[6] != 0x3b && e[6] != 0x3a))
		return false;
	return !memcmp(e + 7, plt + 7, sizeof(plt) - 7);
}

/* One run of a CFA program (a CIE's initial instructions, or an FDE's window). */
struct run {
	const struct cie *cie;
	const struct sect *s;
	const struct cfa_state *init; /* DW_CFA_restore's rules */
	struct cfa_state st;
	struct cfa_state stack[CFI_STATE_DEPTH];
	unsigned depth;
	uint64_t loc, end; /* current row start, FDE end */
	uint64_t ws, we;   /* rows are kept inside [ws, we) */
	uint32_t invalid;
	bool cie_mode, metered;
	struct ptr_base pb;
};

static void make_row(const struct run *x, struct symb_delta *row)
{
	const struct cfa_state *s = &x->st;

	row->cfa_off = 0;
	row->bp_off = 0;
	row->pad = 0;
	if (x->cie->signal) {
		row->kind = SYMB_CFA_SIGNAL;
		return;
	}
	if (s->ra.how == RULE_UNDEF) {
		row->kind = SYMB_CFA_END;
		return;
	}
	row->kind = SYMB_CFA_INVALID;
	if (s->ra.how != RULE_OFFSET || s->ra.off != -8)
		return;
	if (s->bp.how == RULE_OTHER)
		return;
	if (s->bp.how == RULE_OFFSET && (s->bp.off < INT16_MIN || s->bp.off > INT16_MAX ||
					 s->bp.off == 0 || s->cfa_how == CFA_PLT))
		return;
	if (s->cfa_how == CFA_PLT) {
		row->kind = SYMB_CFA_PLT;
		return;
	}
	if (s->cfa_how != CFA_REGOFF || s->cfa_off < INT32_MIN || s->cfa_off > INT32_MAX)
		return;
	if (s->cfa_reg == REG_RSP)
		row->kind = SYMB_CFA_SP;
	else if (s->cfa_reg == REG_RBP)
		row->kind = SYMB_CFA_BP;
	else
		return;
	row->cfa_off = (int32_t)s->cfa_off;
	if (s->bp.how == RULE_OFFSET)
		row->bp_off = (int16_t)s->bp.off;
}

/* The current state holds on [loc, next); keeps its part inside the window. */
static int emit(struct builder *b, struct run *x, uint64_t next)
{
	struct symb_delta row;

	if (next <= x->loc || next <= x->ws || x->loc >= x->we)
		return 0;
	make_row(x, &row);
	row.pc = x->loc > x->ws ? x->loc : x->ws;
	if (row.kind == SYMB_CFA_INVALID)
		x->invalid++;
	/* room for a gap row and the final NONE row */
	return push_row(b, &row, CFI_MAX_ROWS - 2);
}

/* Returns 1 once loc has left the window, 0 to go on, or a negative errno. */
static int advance_to(struct builder *b, struct run *x, uint64_t next)
{
	int err;

	if (x->cie_mode)
		return -EBADMSG;
	if (next > x->end)
		next = x->end;
	if (next > x->loc) {
		err = emit(b, x, next);
		if (err)
			return err;
		x->loc = next;
	}
	return x->loc >= x->we || x->loc >= x->end;
}

static int advance_by(struct builder *b, struct run *x, uint64_t delta)
{
	uint64_t next;

	if (__builtin_mul_overflow(delta, x->cie->code_align, &delta) ||
	    __builtin_add_overflow(x->loc, delta, &next))
		next = UINT64_MAX;
	return advance_to(b, x, next);
}

static void set_rule(struct run *x, uint64_t reg, uint8_t how, int64_t off)
{
	struct rule r = {.off = off, .how = how};

	if (reg == REG_RBP)
		x->st.bp = r;
	if (reg == x->cie->ra_reg)
		x->st.ra = r;
}

/* A factored offset: operand * data alignment factor. */
static bool factor(const struct run *x, int64_t v, int64_t *out)
{
	return !__builtin_mul_overflow(v, x->cie->data_align, out);
}

static bool uleb_s64(struct rd *r, int64_t *out)
{
	uint64_t v = rd_uleb(r);

	*out = (int64_t)v;
	return v <= INT64_MAX;
}

/* DW_CFA_restore(_extended): reg's rule as after the CIE's initial instructions. */
static void restore_rule(struct run *x, uint64_t reg)
{
	if (reg == REG_RBP)
		x->st.bp = x->init->bp;
	if (reg == x->cie->ra_reg)
		x->st.ra = x->init->ra;
}

/* The DW_CFA_def_cfa* ops with their operands; false on a malformed or unknown op. */
static bool op_cfa(struct run *x, struct rd *r, uint8_t op)
{
	uint64_t len;

	switch (op) {
	case 0x0c: /* def_cfa */
		x->st.cfa_reg = rd_uleb(r);
		if (!uleb_s64(r, &x->st.cfa_off))
			return false;
		x->st.cfa_how = CFA_REGOFF;
		break;
	case 0x12: /* def_cfa_sf */
		x->st.cfa_reg = rd_uleb(r);
		if (!factor(x, rd_sleb(r), &x->st.cfa_off))
			return false;
		x->st.cfa_how = CFA_REGOFF;
		break;
	case 0x0d: /* def_cfa_register */
		x->st.cfa_reg = rd_uleb(r);
		x->st.cfa_how = CFA_REGOFF;
		break;
	case 0x0e: /* def_cfa_offset: keeps an expression CFA, as libgcc does */
		if (!uleb_s64(r, &x->st.cfa_off))
			return false;
		break;
	case 0x13: /* def_cfa_offset_sf */
		if (!factor(x, rd_sleb(r), &x->st.cfa_off))
			return false;
		break;
	case 0x0f: /* def_cfa_expression */
		len = rd_uleb(r);
		if (r->end - r->pos < len)
			return false;
		x->st.cfa_how = is_plt_expr(r->p + r->pos, len) ? CFA_PLT : CFA_EXPR;
		r->pos += len;
		break;
	default:
		return false;
	}
	return !r->err;
}

/* The other DW_CFA_* ops with their operands; false on a malformed or unknown op. */
static bool op_extended(struct run *x, struct rd *r, uint8_t op)
{
	uint64_t reg;
	int64_t v, off;

	switch (op) {
	case 0x05: /* offset_extended */
	case 0x14: /* val_offset */
	case 0x2f: /* GNU_negative_offset_extended */
		reg = rd_uleb(r);
		if (!uleb_s64(r, &v) || !factor(x, v, &off))
			return false;
		if (op == 0x2f) {
			if (off == INT64_MIN)
				return false;
			off = -off;
		}
		set_rule(x, reg, op == 0x14 ? RULE_OTHER : RULE_OFFSET, off);
		break;
	case 0x11: /* offset_extended_sf */
	case 0x15: /* val_offset_sf */
		reg = rd_uleb(r);
		if (!factor(x, rd_sleb(r), &off))
			return false;
		set_rule(x, reg, op == 0x15 ? RULE_OTHER : RULE_OFFSET, off);
		break;
	case 0x06: /* restore_extended */
		restore_rule(x, rd_uleb(r));
		break;
	case 0x07: /* undefined */
		set_rule(x, rd_uleb(r), RULE_UNDEF, 0);
		break;
	case 0x08: /* same_value */
		set_rule(x, rd_uleb(r), RULE_SAME, 0);
		break;
	case 0x09: /* register */
		reg = rd_uleb(r);
		rd_uleb(r);
		set_rule(x, reg, RULE_OTHER, 0);
		break;
	case 0x0a: /* remember_state */
		if (x->depth >= CFI_STATE_DEPTH)
			return false;
		x->stack[x->depth++] = x->st;
		break;
	case 0x0b: /* restore_state */
		if (!x->depth)
			return false;
		/* the CFA is restored too, as GCC and LLVM expect */
		x->st = x->stack[--x->depth];
		break;
	case 0x10: /* expression */
	case 0x16: /* val_expression */
		reg = rd_uleb(r);
		rd_skip(r, rd_uleb(r));
		set_rule(x, reg, RULE_OTHER, 0);
		break;
	case 0x2e: /* GNU_args_size */
		rd_uleb(r);
		break;
	case 0x00: /* nop */
		break;
	default:
		return op_cfa(x, r, op);
	}
	return !r->err;
}

/* DW_CFA_set_loc: an address in the CIE's FDE encoding, never going back. */
static int op_set_loc(struct builder *b, struct run *x, struct rd *r)
{
	uint64_t v;

	if (x->s->src == SRC_EH) {
		if (!cfi_rd_ptr(r, x->cie->fde_enc, &x->pb, false, &v))
			return -EBADMSG;
	} else {
		v = rd_le(r, x->cie->addr_size);
	}
	if (r->err || v < x->loc)
		return -EBADMSG;
	return advance_to(b, x, v);
}

/* One instruction after its opcode; returns advance_to's values, or -EBADMSG. */
static int run_op(struct builder *b, struct run *x, struct rd *r, uint8_t op)
{
	int64_t off, fv;

	switch (op & 0xc0) {
	case 0x40: /* advance_loc */
		return advance_by(b, x, op & 0x3f);
	case 0x80: /* offset */
		if (!uleb_s64(r, &fv) || !factor(x, fv, &off))
			return -EBADMSG;
		set_rule(x, op & 0x3f, RULE_OFFSET, off);
		return 0;
	case 0xc0:
		restore_rule(x, op & 0x3f);
		return 0;
	}
	switch (op) {
	case 0x01:
		return op_set_loc(b, x, r);
	case 0x02: /* advance_loc1 */
		return advance_by(b, x, rd_le(r, 1));
	case 0x03:
		return advance_by(b, x, rd_le(r, 2));
	case 0x04:
		return advance_by(b, x, rd_le(r, 4));
	case 0x1d: /* MIPS_advance_loc8 */
		return advance_by(b, x, rd_le(r, 8));
	default:
		return op_extended(x, r, op) ? 0 : -EBADMSG;
	}
}

/*
 * Runs the program in [pos, end) of x->s. Returns 0, -EBADMSG for a
 * malformed program, -ETIME when a metered run used up the budget, -E2BIG
 * at the row cap, or -ENOMEM.
 */
static int run_program(struct builder *b, struct run *x, size_t pos, size_t end)
{
	struct rd r = {.p = x->s->p, .pos = pos, .end = end};
	int err;

	while (r.pos < r.end) {
		if (x->metered) {
			if (!b->budget)
				return -ETIME;
			b->budget--;
		}
		err = run_op(b, x, &r, r.p[r.pos++]);
		if (r.err)
			return -EBADMSG;
		if (err)
			return err < 0 ? err : 0;
	}
	if (x->cie_mode)
		return 0;
	return emit(b, x, x->end);
}

/* The letters after 'z', read from the augmentation data (r spans exactly that). */
static bool parse_cie_aug(struct rd *r, const char *aug, const struct sect *s, struct cie *c)
{
	uint64_t skip;
	uint8_t enc;

	for (aug++; *aug; aug++) {
		switch (*aug) {
		case 'R':
			c->fde_enc = rd_u8(r);
			break;
		case 'L':
			rd_u8(r);
			break;
		case 'P':
			enc = rd_u8(r);
			if (r->err || !cfi_rd_ptr(r, enc, &s->pb, true, &skip))
				return false;
			break;
		case 'S':
			c->signal = true;
			break;
		case 'B': /* AArch64 BTI, MTE: no data */
		case 'G':
			break;
		default:
			return false;
		}
	}
	return !r->err;
}

/*
 * The augmentation data after 'z' (its length rules, whatever the letters
 * consumed: r moves past it), or none. False for other forms ("eh" and
 * pre-'z' ones: the data length is unknown) and malformed data.
 */
static bool parse_cie_z(struct rd *r, const char *aug, const struct sect *s, struct cie *c)
{
	struct rd a = *r;
	uint64_t len;

	if (!aug[0])
		return true;
	if (aug[0] != 'z')
		return false;
	c->aug_z = true;
	len = rd_uleb(&a);
	if (a.err || a.end - a.pos < len)
		return false;
	a.end = a.pos + len;
	r->pos = a.end;
	return parse_cie_aug(&a, aug, s, c) && c->fde_enc != PE_OMIT;
}

/* Runs a CIE's initial instructions, [pos, end) of s, into c->init. */
static int run_cie_init(struct builder *b, const struct sect *s, struct cie *c, size_t pos,
			size_t end)
{
	static const struct cfa_state unsaved;
	struct run *x;
	int err;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->cie = c;
	x->s = s;
	x->init = &unsaved;
	x->cie_mode = true;
	err = run_program(b, x, pos, end);
	c->init = x->st;
	free(x);
	return err;
}

/* Parses the CIE whose body (after the id) is [body, end); runs its initial instructions. */
static int parse_cie(struct builder *b, struct sect *s, size_t off, size_t body, size_t end,
		     struct cie *c)
{
	struct rd r = {.p = s->p, .pos = body, .end = end};
	const char *aug;
	const uint8_t *nul;
	uint8_t version;

	memset(c, 0, sizeof(*c));
	c->off = off;
	c->addr_size = 8;
	version = rd_u8(&r);
	if (r.err || !(version == 1 || version == 3 || (version == 4 && s->src == SRC_DEBUG)))
		return -EBADMSG;
	nul = memchr(r.p + r.pos, 0, r.end - r.pos);
	if (!nul)
		return -EBADMSG;
	aug = (const char *)(r.p + r.pos);
	r.pos = (size_t)(nul - r.p) + 1;
	if (version == 4) {
		c->addr_size = rd_u8(&r);
		c->seg_size = rd_u8(&r);
		if (c->addr_size != 4 && c->addr_size != 8)
			return -EBADMSG;
		if (c->seg_size > 8)
			return -EBADMSG;
	}
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = version == 1 ? rd_u8(&r) : rd_uleb(&r);
	if (!parse_cie_z(&r, aug, s, c) || r.err)
		return -EBADMSG;
	return run_cie_init(b, s, c, r.pos, r.end);
}

/* An entry's header; returns 1, 0 at the end, -1 if its length is unusable. */
struct entry {
	size_t start, id_pos, body, end;
	uint64_t id;
	bool is_cie, id_ok;
};

static int next_entry(const struct sect *s, size_t *pos, struct entry *e)
{
	struct rd r = {.p = s->p, .pos = *pos, .end = s->size};
	unsigned idsz = 4;
	uint64_t len;

	if (*pos >= s->size)
		return 0;
	len = rd_le(&r, 4);
	if (r.err)
		return -1;
	if (len == 0) /* the zero terminator (in .debug_frame too: nothing valid is empty) */
		return 0;
	if (len == 0xffffffff) {
		len = rd_le(&r, 8);
		/* .eh_frame's CIE pointer stays 4 bytes (LSB; LLVM reads it so) */
		idsz = s->src == SRC_EH ? 4 : 8;
		if (r.err)
			return -1;
	} else if (len >= 0xfffffff0) {
		return -1;
	}
	if (len > s->size - r.pos)
		return -1;
	e->start = *pos;
	e->id_pos = r.pos;
	e->end = r.pos + len;
	r.end = e->end;
	e->id = rd_le(&r, idsz);
	e->id_ok = !r.err;
	e->body = r.pos;
	if (s->src == SRC_EH)
		e->is_cie = e->id == 0;
	else
		e->is_cie = e->id == (idsz == 4 ? 0xffffffffu : UINT64_MAX);
	*pos = e->end;
	return 1;
}

static int collect_cies(struct builder *b, struct sect *s)
{
	struct entry e;
	size_t pos = 0;
	int ret, err;

	while ((ret = next_entry(s, &pos, &e)) > 0) {
		if (!e.id_ok) {
			b->st.bad_entries++;
			continue;
		}
		if (!e.is_cie)
			continue;
		err = grow((void **)&s->cies, &s->cap, s->ncies + 1, sizeof(*s->cies),
			   SIZE_MAX / 2);
		if (err)
			return err;
		err = parse_cie(b, s, e.start, e.body, e.end, &s->cies[s->ncies]);
		if (err == -ENOMEM)
			return err;
		if (err) {
			b->st.bad_entries++;
			continue;
		}
		s->ncies++;
		b->st.cies++;
	}
	if (ret < 0)
		b->st.bad_entries++;
	return 0;
}

static const struct cie *find_cie(const struct sect *s, size_t off, uint32_t *idx)
{
	size_t lo = 0, hi = s->ncies, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (s->cies[mid].off == off) {
			*idx = (uint32_t)mid;
			return &s->cies[mid];
		}
		if (s->cies[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Parses an FDE header into f; false if malformed. */
static bool parse_fde(const struct sect *s, const struct entry *e, struct fde *f)
{
	struct rd r = {.p = s->p, .pos = e->body, .end = e->end};
	const struct cie *c;
	uint64_t cie_off, start, range;
	uint32_t idx;

	if (s->src == SRC_EH) {
		/* the CIE pointer counts back from its own field */
		if (e->id > e->id_pos)
			return false;
		cie_off = e->id_pos - e->id;
	} else {
		cie_off = e->id;
	}
	c = find_cie(s, cie_off, &idx);
	if (!c)
		return false;
	if (s->src == SRC_EH) {
		if (!cfi_rd_ptr(&r, c->fde_enc, &s->pb, false, &start) ||
		    !cfi_rd_ptr_value(&r, c->fde_enc, &range))
			return false;
	} else {
		rd_skip(&r, c->seg_size);
		start = rd_le(&r, c->addr_size);
		range = rd_le(&r, c->addr_size);
	}
	if (c->aug_z)
		rd_skip(&r, rd_uleb(&r));
	if (r.err || start + range < start)
		return false;
	f->start = start;
	f->end = start + range;
	f->insn = r.pos;
	f->insn_end = r.end;
	f->cie = idx;
	f->src = (uint8_t)s->src;
	f->bad = false;
	f->used = false;
	return true;
}

static int collect_fdes(struct builder *b, struct sect *s)
{
	struct entry e;
	struct fde f;
	size_t pos = 0;
	int err;

	while (next_entry(s, &pos, &e) > 0) {
		if (!e.id_ok || e.is_cie)
			continue;
		if (!parse_fde(s, &e, &f)) {
			b->st.bad_entries++;
			continue;
		}
		b->st.fdes++;
		/*
		 * Empty ones cover nothing; .debug_frame keeps the FDEs of
		 * functions the linker discarded, relocated to 0.
		 */
		if (f.start == f.end || (f.start == 0 && s->src == SRC_DEBUG))
			continue;
		err = grow((void **)&b->fdes, &b->fcap, b->nfdes + 1, sizeof(*b->fdes), UINT32_MAX);
		if (err)
			return err;
		b->fdes[b->nfdes++] = f;
	}
	return 0;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->src != y->src)
		return x->src < y->src ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->insn < y->insn ? -1 : x->insn > y->insn;
}

static int cmp_seg(const void *a, const void *b)
{
	const struct seg *x = a, *y = b;

	return x->ws < y->ws ? -1 : x->ws > y->ws;
}

static int push_seg(struct builder *b, uint64_t ws, uint64_t we, size_t fde, bool again)
{
	int err = grow((void **)&b->segs, &b->scap, b->nsegs + 1, sizeof(*b->segs), UINT32_MAX);

	if (err)
		return err;
	b->segs[b->nsegs++] =
		(struct seg){.ws = ws, .we = we, .fde = (uint32_t)fde, .again = again};
	return 0;
}

/*
 * Where FDE f's window starts after the ones before it in its section,
 * which end at cur (have: there are some): an overlap is counted and the
 * earlier FDE wins. False if nothing of f is left.
 */
static bool trim_overlap(struct builder *b, const struct fde *f, bool have, uint64_t cur,
			 uint64_t *s)
{
	*s = f->start;
	if (!have || *s >= cur)
		return true;
	b->st.bad_entries++;
	if (f->end <= cur)
		return false;
	*s = cur;
	return true;
}

/* The windows of the .eh_frame FDEs (sorted first); *next: the first other one. */
static int eh_windows(struct builder *b, size_t *next)
{
	uint64_t cur = 0, s;
	bool have = false;
	size_t i;
	int err;

	for (i = 0; i < b->nfdes && b->fdes[i].src == SRC_EH; i++) {
		const struct fde *f = &b->fdes[i];

		if (!trim_overlap(b, f, have, cur, &s))
			continue;
		err = push_seg(b, s, f->end, i, false);
		if (err)
			return err;
		cur = f->end;
		have = true;
	}
	*next = i;
	return 0;
}

/* The first of the neh .eh_frame windows that ends after s (neh if none). */
static size_t eh_window_after(const struct builder *b, size_t neh, uint64_t s)
{
	size_t lo = 0, hi = neh, j;

	while (lo < hi) {
		j = lo + (hi - lo) / 2;
		if (b->segs[j].we <= s)
			lo = j + 1;
		else
			hi = j;
	}
	return lo;
}

/* The windows of .debug_frame FDE i from s on: what the neh .eh_frame windows leave. */
static int debug_windows(struct builder *b, size_t i, uint64_t s, size_t neh)
{
	const struct fde *f = &b->fdes[i];
	size_t j = eh_window_after(b, neh, s);
	bool again = false;
	uint64_t e;
	int err;

	while (s < f->end) {
		if (j < neh && b->segs[j].ws <= s) {
			s = b->segs[j++].we;
			continue;
		}
		e = j < neh && b->segs[j].ws < f->end ? b->segs[j].ws : f->end;
		err = push_seg(b, s, e, i, again);
		again = true;
		if (err)
			return err;
		s = e;
	}
	return 0;
}

/* Step 3 (see the top of the file): the windows, sorted by address and disjoint. */
static int assign_windows(struct builder *b)
{
	size_t i, neh_segs;
	uint64_t cur = 0, s;
	bool have = false;
	int err;

	if (b->nfdes > 1)
		qsort(b->fdes, b->nfdes, sizeof(*b->fdes), cmp_fde);
	err = eh_windows(b, &i);
	if (err)
		return err;
	neh_segs = b->nsegs;
	for (; i < b->nfdes; i++) {
		if (!trim_overlap(b, &b->fdes[i], have, cur, &s))
			continue;
		cur = b->fdes[i].end;
		have = true;
		err = debug_windows(b, i, s, neh_segs);
		if (err)
			return err;
	}
	if (b->nsegs > neh_segs)
		qsort(b->segs, b->nsegs, sizeof(*b->segs), cmp_seg);
	return 0;
}

/* Sets x up to run window g of FDE f, whose section is s. */
static void start_window(struct run *x, const struct sect *s, const struct fde *f,
			 const struct seg *g)
{
	x->cie = &s->cies[f->cie];
	x->s = s;
	x->init = &x->cie->init;
	x->st = x->cie->init;
	x->depth = 0;
	x->loc = f->start;
	x->end = f->end;
	x->ws = g->ws;
	x->we = g->we;
	x->invalid = 0;
	x->cie_mode = false;
	x->metered = g->again;
	x->pb = s->pb;
	x->pb.func = f->start;
	x->pb.has_func = true;
}

/*
 * A window of FDE f whose program failed with err: its rows (from n0 on)
 * are rolled back and it is counted. Returns 0 to go on with the next
 * window, or the error that ends step 4 (-E2BIG at the row cap).
 */
static int window_failed(struct builder *b, struct fde *f, size_t n0, int err)
{
	if (err == -ETIME) {
		/* its first window and every other FDE are kept */
		b->n = n0;
		b->budget_out = true;
		b->st.bad_entries++;
		lp_debug("cfi: instruction budget spent; skipping repeated windows");
		return 0;
	}
	if (err != -EBADMSG && err != -E2BIG)
		return err;
	b->n = n0;
	b->st.bad_entries++;
	f->bad = true;
	if (err == -E2BIG) {
		lp_debug("cfi: row cap reached; the table stops here");
		return err;
	}
	return 0;
}

/* A window of FDE f whose rows are in: counts them, and the FDE once. */
static void window_done(struct builder *b, struct fde *f, uint32_t invalid)
{
	b->st.invalid_rows += invalid;
	if (f->used)
		return;
	f->used = true;
	if (f->src == SRC_EH)
		b->st.from_eh_frame++;
	else
		b->st.from_debug_frame++;
}

/* Step 4: every window's rows, gaps as NONE rows. */
static int emit_rows(struct builder *b, struct sect *secs)
{
	struct run *x;
	uint64_t prev_end = 0;
	bool any = false;
	size_t i, n0;
	int err = 0;

	x = malloc(sizeof(*x));
	if (!x)
		return -ENOMEM;
	for (i = 0; i < b->nsegs; i++) {
		const struct seg *g = &b->segs[i];
		struct fde *f = &b->fdes[g->fde];

		if (f->bad || (g->again && b->budget_out))
			continue;
		if (any && g->ws > prev_end) {
			err = push_none(b, prev_end);
			if (err)
				break;
		}
		n0 = b->n;
		start_window(x, &secs[f->src], f, g);
		err = run_program(b, x, f->insn, f->insn_end);
		if (err) {
			err = window_failed(b, f, n0, err);
			if (err)
				break;
			continue;
		}
		window_done(b, f, x->invalid);
		prev_end = g->we;
		any = true;
	}
	free(x);
	if (err == -E2BIG)
		err = 0;
	if (!err && any)
		err = push_none(b, prev_end);
	return err;
}

static void sect_init(struct sect *s, int src, const uint8_t *p, size_t size, uint64_t vaddr,
		      const struct symb_cfi_sections *sec)
{
	memset(s, 0, sizeof(*s));
	s->src = src;
	if (!p || !size)
		return;
	s->p = p;
	s->size = size;
	s->pb.sec_vaddr = vaddr;
	if (sec->eh_frame_hdr && sec->eh_frame_hdr_size) {
		s->pb.data = sec->eh_frame_hdr_vaddr;
		s->pb.has_data = true;
	}
}

/* Says when .eh_frame_hdr points elsewhere than .eh_frame (the hdr is not used further). */
static void check_hdr(const struct symb_cfi_sections *sec, const struct sect *eh)
{
	uint64_t ptr;

	if (sec->eh_frame_hdr && eh->size &&
	    cfi_hdr_eh_frame_ptr(sec->eh_frame_hdr, sec->eh_frame_hdr_size, sec->eh_frame_hdr_vaddr,
				 &ptr) &&
	    ptr != sec->eh_frame_vaddr)
		lp_debug("cfi: .eh_frame_hdr points at %#llx, .eh_frame is at %#llx",
			 (unsigned long long)ptr, (unsigned long long)sec->eh_frame_vaddr);
}

/* Steps 1 to 4 (see the top of the file). */
static int build(struct builder *b, struct sect *secs)
{
	int i, err = 0;

	for (i = 0; i < 2 && !err; i++)
		err = collect_cies(b, &secs[i]);
	for (i = 0; i < 2 && !err; i++)
		err = collect_fdes(b, &secs[i]);
	if (!err)
		err = assign_windows(b);
	if (!err)
		err = emit_rows(b, secs);
	if (err == -E2BIG) /* more FDEs or windows than addressable: keep none */
		err = -ENOMEM;
	return err;
}

/* Hands the rows over to out (trimmed to size; none: NULL); b keeps none. */
static void take_rows(struct builder *b, struct symb_deltas *out)
{
	struct symb_delta *rows;

	if (b->n && b->n < b->cap) {
		rows = realloc(b->rows, b->n * sizeof(*rows));
		if (rows)
			b->rows = rows;
	}
	out->rows = b->n ? b->rows : NULL;
	out->n = (uint32_t)b->n;
	if (!b->n)
		free(b->rows);
	b->rows = NULL;
}

int symb_cfi__build_sections(const struct symb_cfi_sections *sec, struct symb_deltas *out,
			     struct symb_cfi_stats *stats)
{
	struct builder b;
	struct sect secs[2];
	int i, err;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	memset(&b, 0, sizeof(b));
	sect_init(&secs[SRC_EH], SRC_EH, sec->eh_frame, sec->eh_frame_size, sec->eh_frame_vaddr,
		  sec);
	sect_init(&secs[SRC_DEBUG], SRC_DEBUG, sec->debug_frame, sec->debug_frame_size, 0, sec);
	check_hdr(sec, &secs[SRC_EH]);
	b.budget = CFI_BUDGET_MIN +
		   CFI_BUDGET_PER_BYTE * ((uint64_t)secs[0].size + (uint64_t)secs[1].size);

	err = build(&b, secs);
	if (!err)
		take_rows(&b, out);
	free(b.rows);
	free(b.fdes);
	free(b.segs);
	for (i = 0; i < 2; i++)
		free(secs[i].cies);
	if (stats)
		*stats = b.st;
	return err;
}
