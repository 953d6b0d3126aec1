// SPDX-License-Identifier: MIT
/*
 * Stack deltas from call-frame information (cfi.h).
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
 * cap ends the build early (what is done so far is kept).
 *
 * The cache blob (symb_deltas__encode/__decode/__open_blob), version 2:
 *   "LPSD" u8:version u8:shift u32le:n u64le:pc[nb] u32le:off[nb] block*nb
 *   u64le:hash
 *   Rows are cut into nb blocks of 1 << shift rows (the last one may be
 *   shorter). pc[i] is the pc of block i's first row, off[i] where its bytes
 *   start, counted from the first block (off[0] = 0); block i ends where
 *   block i + 1 starts, the last one at the hash.
 *   block: the first row's fields (its pc is pc[i]), then for each further
 *          row: uleb pc delta, fields
 *   fields: u8 tag, [sleb cfa_off], [sleb bp_off]
 *   tag: bits 0-2 kind, bit 3 bp_off != 0 (sleb follows), bits 4-7 cfa code:
 *        0-14 means cfa_off = code * 8, 15 means an sleb follows.
 * encode writes shift = BLOB_SHIFT; the decoders take any shift up to
 * BLOB_SHIFT_MAX (the fuzzer reaches block edges with small inputs).
 * Encodings are canonical for a given shift (decode rejects every other
 * spelling), and the hash (blob_hash) catches any change confined to one
 * 8-byte word.
 *
 * A lazy table (symb_deltas__open_blob) checks the hash and the index
 * (offsets increasing, each block's byte length possible for its row
 * count, pcs increasing by at least the row count) at open, so a lookup
 * only binary-searches pc[], and decodes a block with the same checks as
 * decode when it is first needed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"
#include "lowprof/grow.h"
#include "lowprof/log.h"

#define CFI_MAX_ROWS	(1u << 26)
#define CFI_STATE_DEPTH 16
/* Instructions that repeated runs may take, per input byte. */
#define CFI_BUDGET_PER_BYTE 16
#define CFI_BUDGET_MIN	    (1u << 20)

#define REG_RBP 6
#define REG_RSP 7

/* DW_EH_PE_* */
#define PE_OMIT	    0xff
#define PE_FMT_MASK 0x0f
#define PE_APP_MASK 0x70
#define PE_INDIRECT 0x80
#define PE_PCREL    0x10
#define PE_TEXTREL  0x20
#define PE_DATAREL  0x30
#define PE_FUNCREL  0x40
#define PE_ALIGNED  0x50

enum { SRC_EH = 0, SRC_DEBUG = 1 };

/* Byte reader over [pos, end) of a section; errors are sticky, pos never passes end. */
struct rd {
	const uint8_t *p;
	size_t pos, end;
	bool err;
};

static inline uint8_t rd_u8(struct rd *r)
{
	if (r->pos >= r->end) {
		r->err = true;
		return 0;
	}
	return r->p[r->pos++];
}

static inline uint64_t rd_le(struct rd *r, unsigned n)
{
	uint64_t v = 0;
	unsigned i;

	if (r->end - r->pos < n) {
		r->err = true;
		r->pos = r->end;
		return 0;
	}
	for (i = 0; i < n; i++)
		v |= (uint64_t)r->p[r->pos + i] << (8 * i);
	r->pos += n;
	return v;
}

static inline void rd_skip(struct rd *r, uint64_t n)
{
	if (r->end - r->pos < n) {
		r->err = true;
		r->pos = r->end;
		return;
	}
	r->pos += n;
}

/* Bits past the 64th are dropped: CFI has no such values, and the bytes are consumed. */
static inline uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (r->pos >= r->end) {
			r->err = true;
			return 0;
		}
		b = r->p[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	return v;
}

static inline int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (r->pos >= r->end) {
			r->err = true;
			return 0;
		}
		b = r->p[r->pos++];
		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

/* Bases of the relative pointer encodings. */
struct ptr_base {
	uint64_t sec_vaddr; /* address of the section's first byte (pcrel) */
	uint64_t data;	    /* datarel: .eh_frame_hdr, as in the hdr itself */
	uint64_t func;	    /* funcrel: the FDE's start */
	bool has_data, has_func;
};

/*
 * Reads a DW_EH_PE-encoded pointer. With skip_only (a personality pointer)
 * the value is not needed: any application and the indirect bit are fine,
 * the bytes are only consumed. Otherwise indirect and unknown bases fail:
 * nothing is ever dereferenced. Returns false on malformed input.
 */
static bool rd_ptr(struct rd *r, uint8_t enc, const struct ptr_base *b, bool skip_only,
		   uint64_t *out)
{
	uint64_t field = b->sec_vaddr + r->pos, v, base = 0;

	*out = 0;
	if (enc == PE_OMIT)
		return skip_only;
	if ((enc & PE_APP_MASK) == PE_ALIGNED) {
		rd_skip(r, (8 - (field & 7)) & 7);
		v = rd_le(r, 8);
		*out = v;
		return !r->err && (enc & PE_FMT_MASK) == 0 && (skip_only || !(enc & PE_INDIRECT));
	}
	switch (enc & PE_FMT_MASK) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		v = rd_le(r, 8);
		break;
	case 0x01:
		v = rd_uleb(r);
		break;
	case 0x02:
		v = rd_le(r, 2);
		break;
	case 0x03:
		v = rd_le(r, 4);
		break;
	case 0x09:
		v = (uint64_t)rd_sleb(r);
		break;
	case 0x0a:
		v = (uint64_t)(int64_t)(int16_t)rd_le(r, 2);
		break;
	case 0x0b:
		v = (uint64_t)(int64_t)(int32_t)rd_le(r, 4);
		break;
	default:
		return false;
	}
	if (r->err)
		return false;
	if (skip_only)
		return true;
	switch (enc & PE_APP_MASK) {
	case 0:
		break;
	case PE_PCREL:
		base = field;
		break;
	case PE_DATAREL:
		if (!b->has_data)
			return false;
		base = b->data;
		break;
	case PE_FUNCREL:
		if (!b->has_func)
			return false;
		base = b->func;
		break;
	default: /* textrel: no text base is known here */
		return false;
	}
	if (enc & PE_INDIRECT)
		return false;
	*out = v + base;
	return true;
}

/* The size-only part of an encoding (an FDE's pc range): no base, no indirection. */
static bool rd_ptr_value(struct rd *r, uint8_t enc, uint64_t *out)
{
	static const struct ptr_base none;

	return rd_ptr(r, enc & PE_FMT_MASK, &none, false, out);
}

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

/* DW_CFA_* with their operands; returns false on a malformed operand. */
static bool op_extended(struct run *x, struct rd *r, uint8_t op)
{
	uint64_t reg, len;
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
		reg = rd_uleb(r);
		if (reg == REG_RBP)
			x->st.bp = x->init->bp;
		if (reg == x->cie->ra_reg)
			x->st.ra = x->init->ra;
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
	case 0x10: /* expression */
	case 0x16: /* val_expression */
		reg = rd_uleb(r);
		len = rd_uleb(r);
		rd_skip(r, len);
		set_rule(x, reg, RULE_OTHER, 0);
		break;
	case 0x2e: /* GNU_args_size */
		rd_uleb(r);
		break;
	case 0x00: /* nop */
		break;
	default:
		return false;
	}
	return !r->err;
}

/*
 * Runs the program in [pos, end) of x->s. Returns 0, -EBADMSG for a
 * malformed program, -ETIME when a metered run used up the budget, -E2BIG
 * at the row cap, or -ENOMEM.
 */
static int run_program(struct builder *b, struct run *x, size_t pos, size_t end)
{
	struct rd r = {.p = x->s->p, .pos = pos, .end = end};
	uint64_t v;
	uint8_t op;
	int err = 0;

	while (r.pos < r.end) {
		if (x->metered) {
			if (!b->budget)
				return -ETIME;
			b->budget--;
		}
		op = r.p[r.pos++];
		switch (op & 0xc0) {
		case 0x40: /* advance_loc */
			err = advance_by(b, x, op & 0x3f);
			break;
		case 0x80: { /* offset */
			int64_t off, fv;

			if (!uleb_s64(&r, &fv) || !factor(x, fv, &off))
				return -EBADMSG;
			set_rule(x, op & 0x3f, RULE_OFFSET, off);
			break;
		}
		case 0xc0: /* restore */
			if ((op & 0x3f) == REG_RBP)
				x->st.bp = x->init->bp;
			if ((op & 0x3f) == x->cie->ra_reg)
				x->st.ra = x->init->ra;
			break;
		default:
			switch (op) {
			case 0x01: /* set_loc */
				if (x->s->src == SRC_EH) {
					if (!rd_ptr(&r, x->cie->fde_enc, &x->pb, false, &v))
						return -EBADMSG;
				} else {
					v = rd_le(&r, x->cie->addr_size);
				}
				if (r.err || v < x->loc)
					return -EBADMSG;
				err = advance_to(b, x, v);
				break;
			case 0x02:
				err = advance_by(b, x, rd_le(&r, 1));
				break;
			case 0x03:
				err = advance_by(b, x, rd_le(&r, 2));
				break;
			case 0x04:
				err = advance_by(b, x, rd_le(&r, 4));
				break;
			case 0x1d: /* MIPS_advance_loc8 */
				err = advance_by(b, x, rd_le(&r, 8));
				break;
			default:
				if (!op_extended(x, &r, op))
					return -EBADMSG;
			}
		}
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
			if (r->err || !rd_ptr(r, enc, &s->pb, true, &skip))
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

/* Parses the CIE whose body (after the id) is [body, end); runs its initial instructions. */
static int parse_cie(struct builder *b, struct sect *s, size_t off, size_t body, size_t end,
		     struct cie *c)
{
	struct rd r = {.p = s->p, .pos = body, .end = end};
	static const struct cfa_state unsaved;
	struct run *x;
	const char *aug;
	const uint8_t *nul;
	uint64_t len;
	uint8_t version;
	int err;

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
	if (aug[0] == 'z') {
		struct rd a = r;

		c->aug_z = true;
		len = rd_uleb(&a);
		if (a.err || a.end - a.pos < len)
			return -EBADMSG;
		a.end = a.pos + len;
		r.pos = a.end; /* the data length rules, whatever the letters consumed */
		if (!parse_cie_aug(&a, aug, s, c) || c->fde_enc == PE_OMIT)
			return -EBADMSG;
	} else if (aug[0]) {
		return -EBADMSG; /* "eh" and other pre-'z' forms: the data length is unknown */
	}
	if (r.err)
		return -EBADMSG;

	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->cie = c;
	x->s = s;
	x->init = &unsaved;
	x->cie_mode = true;
	err = run_program(b, x, r.pos, r.end);
	c->init = x->st;
	free(x);
	return err;
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
		if (!rd_ptr(&r, c->fde_enc, &s->pb, false, &start) ||
		    !rd_ptr_value(&r, c->fde_enc, &range))
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

/* Step 3 (see the top of the file): the windows, sorted by address and disjoint. */
static int assign_windows(struct builder *b)
{
	size_t i, j, neh_segs;
	uint64_t cur = 0, s, e;
	bool have = false, again;
	int err;

	if (b->nfdes > 1)
		qsort(b->fdes, b->nfdes, sizeof(*b->fdes), cmp_fde);
	for (i = 0; i < b->nfdes && b->fdes[i].src == SRC_EH; i++) {
		const struct fde *f = &b->fdes[i];

		s = f->start;
		if (have && s < cur) {
			b->st.bad_entries++; /* overlaps an earlier FDE, which wins */
			if (f->end <= cur)
				continue;
			s = cur;
		}
		err = push_seg(b, s, f->end, i, false);
		if (err)
			return err;
		cur = f->end;
		have = true;
	}
	neh_segs = b->nsegs;
	have = false;
	for (; i < b->nfdes; i++) {
		const struct fde *f = &b->fdes[i];
		size_t lo = 0, hi = neh_segs;

		s = f->start;
		if (have && s < cur) {
			b->st.bad_entries++;
			if (f->end <= cur)
				continue;
			s = cur;
		}
		cur = f->end;
		have = true;
		/* the first .eh_frame window that ends after s */
		while (lo < hi) {
			j = lo + (hi - lo) / 2;
			if (b->segs[j].we <= s)
				lo = j + 1;
			else
				hi = j;
		}
		for (j = lo, again = false; s < f->end;) {
			if (j < neh_segs && b->segs[j].ws <= s) {
				s = b->segs[j++].we;
				continue;
			}
			e = j < neh_segs && b->segs[j].ws < f->end ? b->segs[j].ws : f->end;
			err = push_seg(b, s, e, i, again);
			again = true;
			if (err)
				return err;
			s = e;
		}
	}
	if (b->nsegs > neh_segs)
		qsort(b->segs, b->nsegs, sizeof(*b->segs), cmp_seg);
	return 0;
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
		const struct sect *s = &secs[f->src];

		if (f->bad || (g->again && b->budget_out))
			continue;
		if (any && g->ws > prev_end) {
			err = push_none(b, prev_end);
			if (err)
				break;
		}
		n0 = b->n;
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
		err = run_program(b, x, f->insn, f->insn_end);
		if (err == -ETIME) {
			/* its first window and every other FDE are kept */
			b->n = n0;
			b->budget_out = true;
			b->st.bad_entries++;
			lp_debug("cfi: instruction budget spent; skipping repeated windows");
			err = 0;
			continue;
		}
		if (err == -EBADMSG || err == -E2BIG) {
			b->n = n0;
			b->st.bad_entries++;
			f->bad = true;
			if (err == -E2BIG) {
				lp_debug("cfi: row cap reached; the table stops here");
				break;
			}
			err = 0;
			continue;
		}
		if (err)
			break;
		b->st.invalid_rows += x->invalid;
		if (!f->used) {
			f->used = true;
			if (f->src == SRC_EH)
				b->st.from_eh_frame++;
			else
				b->st.from_debug_frame++;
		}
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

/* eh_frame_ptr of an .eh_frame_hdr (version 1), or false. */
static bool hdr_eh_frame_ptr(const uint8_t *p, size_t size, uint64_t vaddr, uint64_t *out)
{
	struct rd r = {.p = p, .pos = 0, .end = size};
	struct ptr_base pb = {.sec_vaddr = vaddr, .data = vaddr, .has_data = true};
	uint8_t enc;

	if (rd_u8(&r) != 1)
		return false;
	enc = rd_u8(&r);
	rd_skip(&r, 2);
	if (r.err)
		return false;
	return rd_ptr(&r, enc, &pb, false, out);
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

int symb_cfi__build_sections(const struct symb_cfi_sections *sec, struct symb_deltas *out,
			     struct symb_cfi_stats *stats)
{
	struct builder b;
	struct sect secs[2];
	struct symb_delta *rows;
	uint64_t ptr;
	int i, err = 0;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	memset(&b, 0, sizeof(b));
	sect_init(&secs[SRC_EH], SRC_EH, sec->eh_frame, sec->eh_frame_size, sec->eh_frame_vaddr,
		  sec);
	sect_init(&secs[SRC_DEBUG], SRC_DEBUG, sec->debug_frame, sec->debug_frame_size, 0, sec);
	if (sec->eh_frame_hdr && secs[SRC_EH].size &&
	    hdr_eh_frame_ptr(sec->eh_frame_hdr, sec->eh_frame_hdr_size, sec->eh_frame_hdr_vaddr,
			     &ptr) &&
	    ptr != sec->eh_frame_vaddr)
		lp_debug("cfi: .eh_frame_hdr points at %#llx, .eh_frame is at %#llx",
			 (unsigned long long)ptr, (unsigned long long)sec->eh_frame_vaddr);
	b.budget = CFI_BUDGET_MIN +
		   CFI_BUDGET_PER_BYTE * ((uint64_t)secs[0].size + (uint64_t)secs[1].size);

	for (i = 0; i < 2 && !err; i++)
		err = collect_cies(&b, &secs[i]);
	for (i = 0; i < 2 && !err; i++)
		err = collect_fdes(&b, &secs[i]);
	if (!err)
		err = assign_windows(&b);
	if (!err)
		err = emit_rows(&b, secs);
	if (err == -E2BIG) /* more FDEs or windows than addressable: keep none */
		err = -ENOMEM;
	if (err)
		goto err_out;

	if (b.n && b.n < b.cap) {
		rows = realloc(b.rows, b.n * sizeof(*rows));
		if (rows)
			b.rows = rows;
	}
	out->rows = b.n ? b.rows : NULL;
	out->n = (uint32_t)b.n;
	if (!b.n)
		free(b.rows);
	b.rows = NULL;
err_out:
	free(b.rows);
	free(b.fdes);
	free(b.segs);
	for (i = 0; i < 2; i++)
		free(secs[i].cies);
	if (stats)
		*stats = b.st;
	return err;
}

/* The bytes of a named section, NULL if absent or without data (SHT_NOBITS). */
static const uint8_t *elf_section(Elf *elf, const char *want, size_t *size, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		/* separate debug files compress .debug_frame */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			lp_warn("cfi: cannot decompress %s: %s", want, elf_errmsg(-1));
			return NULL;
		}
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			return NULL;
		*size = d->d_size;
		*vaddr = sh.sh_addr;
		return d->d_buf;
	}
	return NULL;
}

/*
 * .eh_frame through PT_GNU_EH_FRAME, for a file without section headers:
 * the bytes from the hdr's eh_frame_ptr to the end of the PT_LOAD that holds
 * it (parsing stops at the zero terminator).
 */
static void elf_eh_frame_by_phdr(Elf *elf, struct symb_cfi_sections *sec)
{
	GElf_Phdr ph, hdr = {0};
	size_t i, n, rawsz;
	const uint8_t *raw;
	uint64_t ptr;
	bool found = false;

	raw = (const uint8_t *)elf_rawfile(elf, &rawsz);
	if (!raw || elf_getphdrnum(elf, &n))
		return;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			hdr = ph;
			found = true;
		}
	}
	if (!found || hdr.p_offset > rawsz || hdr.p_filesz > rawsz - hdr.p_offset)
		return;
	if (!hdr_eh_frame_ptr(raw + hdr.p_offset, hdr.p_filesz, hdr.p_vaddr, &ptr))
		return;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ptr < ph.p_vaddr || ptr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (ph.p_offset > rawsz || ph.p_filesz > rawsz - ph.p_offset)
			return;
		sec->eh_frame = raw + ph.p_offset + (ptr - ph.p_vaddr);
		sec->eh_frame_size = ph.p_filesz - (ptr - ph.p_vaddr);
		sec->eh_frame_vaddr = ptr;
		sec->eh_frame_hdr = raw + hdr.p_offset;
		sec->eh_frame_hdr_size = hdr.p_filesz;
		sec->eh_frame_hdr_vaddr = hdr.p_vaddr;
		return;
	}
}

static bool is_x86_64(Elf *elf)
{
	GElf_Ehdr eh;

	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getclass(elf) == ELFCLASS64 &&
	       gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64;
}

int symb_cfi__build(Elf *elf, Elf *debug_elf, struct symb_deltas *out, struct symb_cfi_stats *stats)
{
	struct symb_cfi_sections sec = {0};
	uint64_t unused;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!is_x86_64(elf))
		return -ENOEXEC;
	sec.eh_frame = elf_section(elf, ".eh_frame", &sec.eh_frame_size, &sec.eh_frame_vaddr);
	if (sec.eh_frame)
		sec.eh_frame_hdr = elf_section(elf, ".eh_frame_hdr", &sec.eh_frame_hdr_size,
					       &sec.eh_frame_hdr_vaddr);
	else
		elf_eh_frame_by_phdr(elf, &sec);
	sec.debug_frame = elf_section(elf, ".debug_frame", &sec.debug_frame_size, &unused);
	if (!sec.debug_frame && debug_elf) {
		if (is_x86_64(debug_elf))
			sec.debug_frame = elf_section(debug_elf, ".debug_frame",
						      &sec.debug_frame_size, &unused);
		else
			lp_warn("cfi: debug file is not x86-64 ELF; ignored");
	}
	return symb_cfi__build_sections(&sec, out, stats);
}

/* ---- cache blob ---- */

/* decode writes cfa_off, bp_off, kind and pad as one little-endian word */
_Static_assert(offsetof(struct symb_delta, cfa_off) == 8 &&
		       offsetof(struct symb_delta, bp_off) == 12 &&
		       offsetof(struct symb_delta, kind) == 14 &&
		       offsetof(struct symb_delta, pad) == 15 && sizeof(struct symb_delta) == 16 &&
		       __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
	       "struct symb_delta layout");
static const uint8_t blob_magic[4] = {'L', 'P', 'S', 'D'};
#define BLOB_HDR       (sizeof(blob_magic) + 1 + 1 + 4)
#define BLOB_IDX       (8 + 4) /* per block: first pc, offset */
#define BLOB_ROW_MAX   (10 + 1 + 5 + 3)
#define BLOB_FIRST_MAX (1 + 5 + 3) /* a block's first row: no pc */
#define BLOB_HASH      8
#define BLOB_CFA_BIG   15
/*
 * 256 rows a block: a decoded block is one 4 KiB page, its decode about a
 * microsecond, and the index 12 bytes per 256 rows (some 45 KiB for a
 * million rows).
 */
#define BLOB_SHIFT     8
#define BLOB_SHIFT_MAX 12

/* A checked blob: header, hash and index (blob_check). */
struct blob_view {
	const uint8_t *pcs;  /* u64le[nb] */
	const uint8_t *offs; /* u32le[nb] */
	const uint8_t *data; /* the first block */
	size_t data_len;     /* up to the hash */
	uint32_t n, nb;
	unsigned shift;
};

/*
 * A lazy table. blocks[i] is NULL until block i is first decoded, then its
 * rows, or &bad_block if it failed validation.
 *
 * Memory: one malloc per decoded block (1 << shift rows, one page at the
 * default shift), so a table costs the blob, 8 bytes a block, and only the
 * blocks looked up. One calloc of all n rows would cost nothing for pages
 * never touched only while the allocator hands out fresh mmap'd memory;
 * glibc raises its mmap threshold after a large free, and a heap calloc
 * clears (touches) all of it.
 */
struct symb_deltas_lazy {
	uint8_t *blob; /* owned; the view points into it */
	struct blob_view v;
	struct symb_delta **blocks;
	uint32_t bad_blocks;
};

static struct symb_delta bad_block;

static inline uint64_t get_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v)); /* little-endian host (asserted above) */
	return v;
}

static inline uint32_t get_le32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t block_rows(const struct blob_view *v, uint32_t i)
{
	return i + 1 < v->nb ? 1u << v->shift : v->n - (i << v->shift);
}

static inline uint64_t block_pc(const struct blob_view *v, uint32_t i)
{
	return get_le64(v->pcs + 8 * (size_t)i);
}

/* Where block i starts in data; i = nb gives the end of the last one. */
static inline size_t block_off(const struct blob_view *v, uint32_t i)
{
	return i < v->nb ? get_le32(v->offs + 4 * (size_t)i) : v->data_len;
}

/*
 * Word-wise multiply-xorshift in two lanes (even and odd words, for speed).
 * Each step is a bijection of its lane's state and the lanes are combined
 * by xor, so two inputs that differ in one 8-byte word never share a hash.
 */
static uint64_t blob_hash(const uint8_t *p, size_t len)
{
	const uint64_t k = 0x9e3779b97f4a7c15ull;
	uint64_t a = 0x6c70736431ull ^ len, b = ~a, w, x;
	size_t i;

	for (i = 0; i + 16 <= len; i += 16) {
		memcpy(&w, p + i, 8);
		memcpy(&x, p + i + 8, 8);
		a = (a ^ w) * k;
		b = (b ^ x) * k;
		a ^= a >> 29;
		b ^= b >> 29;
	}
	for (; i < len; i++) {
		a = (a ^ p[i]) * k;
		a ^= a >> 29;
	}
	a ^= b * k;
	a *= k;
	return a ^ (a >> 32);
}

static uint8_t *put_uleb(uint8_t *p, uint64_t v)
{
	do {
		*p = v & 0x7f;
		v >>= 7;
		if (v)
			*p |= 0x80;
		p++;
	} while (v);
	return p;
}

static uint8_t *put_sleb(uint8_t *p, int64_t v)
{
	bool more;

	do {
		uint8_t b = v & 0x7f;

		v >>= 7; /* arithmetic shift: clang and gcc define it */
		more = !((v == 0 && !(b & 0x40)) || (v == -1 && (b & 0x40)));
		*p++ = b | (more ? 0x80 : 0);
	} while (more);
	return p;
}

static bool row_valid(const struct symb_delta *r, const struct symb_delta *prev)
{
	if (r->kind > SYMB_CFA_INVALID || r->pad)
		return false;
	if (!prev)
		return true;
	return r->pc > prev->pc &&
	       (r->kind != prev->kind || r->cfa_off != prev->cfa_off || r->bp_off != prev->bp_off);
}

/* A row's fields (tag, [cfa_off], [bp_off]). */
static uint8_t *put_fields(uint8_t *p, const struct symb_delta *r)
{
	uint32_t code;

	if (r->cfa_off >= 0 && r->cfa_off % 8 == 0 && r->cfa_off / 8 < BLOB_CFA_BIG)
		code = (uint32_t)r->cfa_off / 8;
	else
		code = BLOB_CFA_BIG;
	*p++ = (uint8_t)(r->kind | (r->bp_off ? 0x08 : 0) | code << 4);
	if (code == BLOB_CFA_BIG)
		p = put_sleb(p, r->cfa_off);
	if (r->bp_off)
		p = put_sleb(p, r->bp_off);
	return p;
}

static void put_le(uint8_t *p, uint64_t v, unsigned n)
{
	unsigned i;

	for (i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int symb_deltas__encode(const struct symb_deltas *d, uint8_t **blob, size_t *len)
{
	const size_t block = (size_t)1 << BLOB_SHIFT;
	uint8_t *buf, *p, *pcs, *offs, *data, *shrunk;
	size_t nb, i;

	*blob = NULL;
	*len = 0;
	if (d->lazy)
		return -EINVAL;
	for (i = 0; i < d->n; i++) {
		if (!row_valid(&d->rows[i], i ? &d->rows[i - 1] : NULL))
			return -EINVAL;
	}
	if (d->n && (d->n > CFI_MAX_ROWS || d->rows[d->n - 1].kind != SYMB_CFA_NONE))
		return -EINVAL;
	nb = ((size_t)d->n + block - 1) / block;
	/* at most CFI_MAX_ROWS * BLOB_ROW_MAX bytes of blocks: offsets fit 32 bits */
	buf = malloc(BLOB_HDR + nb * BLOB_IDX + (size_t)d->n * BLOB_ROW_MAX + BLOB_HASH);
	if (!buf)
		return -ENOMEM;
	memcpy(buf, blob_magic, sizeof(blob_magic));
	p = buf + sizeof(blob_magic);
	*p++ = SYMB_DELTAS_BLOB_VERSION;
	*p++ = BLOB_SHIFT;
	put_le(p, d->n, 4);
	pcs = p + 4;
	offs = pcs + 8 * nb;
	data = p = offs + 4 * nb;
	for (i = 0; i < d->n; i++) {
		const struct symb_delta *r = &d->rows[i];

		if (i % block == 0) {
			put_le(pcs + 8 * (i / block), r->pc, 8);
			put_le(offs + 4 * (i / block), (uint64_t)(p - data), 4);
		} else {
			p = put_uleb(p, r->pc - r[-1].pc);
		}
		p = put_fields(p, r);
	}
	put_le(p, blob_hash(buf, (size_t)(p - buf)), BLOB_HASH);
	p += BLOB_HASH;
	*len = (size_t)(p - buf);
	shrunk = realloc(buf, *len);
	*blob = shrunk ? shrunk : buf;
	return 0;
}

/*
 * Canonical SLEB128 of at most 5 bytes at *pp, within [min, max]. The
 * shortest spelling has no redundant last byte: 0x00 after a byte whose sign
 * bit (0x40) is clear, or 0x7f after one where it is set.
 */
static inline bool get_sleb32(const uint8_t **pp, const uint8_t *end, int64_t min, int64_t max,
			      int64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift > 28)
			return false;
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b & 0x40)
		v |= ~(uint64_t)0 << shift;
	if (shift > 7 && (b == 0x00 || b == 0x7f) && ((p[-2] & 0x40) != 0) == (b == 0x7f))
		return false;
	if ((int64_t)v < min || (int64_t)v > max)
		return false;
	*out = (int64_t)v;
	*pp = p;
	return true;
}

/* Canonical ULEB128 at *pp that fits 64 bits. */
static inline bool get_uleb64(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (p >= end || shift > 63)
			return false;
		b = *p++;
		if (shift == 63 && (b & 0x7e))
			return false;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b == 0 && shift > 7)
		return false; /* a redundant trailing zero group */
	*out = v;
	*pp = p;
	return true;
}

/* One row's fields after its pc delta; false if malformed or not canonical. */
static inline bool get_fields(const uint8_t **pp, const uint8_t *end, struct symb_delta *row)
{
	uint8_t tag;
	int64_t v;

	if (*pp >= end)
		return false;
	tag = *(*pp)++;
	if ((tag & 0x07) > SYMB_CFA_INVALID)
		return false;
	row->kind = tag & 0x07;
	row->pad = 0;
	row->cfa_off = (int32_t)(tag >> 4) * 8;
	row->bp_off = 0;
	if ((tag >> 4) == BLOB_CFA_BIG) {
		if (!get_sleb32(pp, end, INT32_MIN, INT32_MAX, &v))
			return false;
		/* canonical: a short code would have done */
		if (v >= 0 && v % 8 == 0 && v / 8 < BLOB_CFA_BIG)
			return false;
		row->cfa_off = (int32_t)v;
	}
	if (tag & 0x08) {
		if (!get_sleb32(pp, end, INT16_MIN, INT16_MAX, &v) || !v)
			return false;
		row->bp_off = (int16_t)v;
	}
	return true;
}

/* The 8-byte word at cfa_off of a row (see the layout assertion above). */
static inline uint64_t row_word(const struct symb_delta *r)
{
	return (uint64_t)(uint32_t)r->cfa_off | (uint64_t)(uint16_t)r->bp_off << 32 |
	       (uint64_t)r->kind << 48;
}

/*
 * A row that the inline path of decode does not take: its pc delta and
 * fields word. Returns the position after it, or NULL if malformed.
 */
static const uint8_t *get_row_slow(const uint8_t *p, const uint8_t *end, uint64_t *delta,
				   uint64_t *word)
{
	struct symb_delta row;

	if (!get_uleb64(&p, end, delta) || !get_fields(&p, end, &row))
		return NULL;
	*word = row_word(&row);
	return p;
}

/*
 * Checks what open must: magic, version, hash, header, and the whole index
 * (so that a lookup can trust pc[] and off[]). Each block's byte length must
 * be possible for its row count (two bytes a row at least, the first row
 * one; BLOB_ROW_MAX at most), and the first pcs increase by at least the
 * previous block's row count. Returns 0 or -EBADMSG.
 */
static int blob_check(const uint8_t *blob, size_t len, struct blob_view *v)
{
	size_t off, next, k, idx_room;
	uint64_t h, pc, npc;
	uint32_t i;

	if (!blob || len < BLOB_HDR + BLOB_HASH || memcmp(blob, blob_magic, sizeof(blob_magic)) ||
	    blob[sizeof(blob_magic)] != SYMB_DELTAS_BLOB_VERSION)
		return -EBADMSG;
	h = get_le64(blob + len - BLOB_HASH);
	if (h != blob_hash(blob, len - BLOB_HASH))
		return -EBADMSG;
	v->shift = blob[sizeof(blob_magic) + 1];
	v->n = get_le32(blob + sizeof(blob_magic) + 2);
	if (v->shift > BLOB_SHIFT_MAX || v->n > CFI_MAX_ROWS)
		return -EBADMSG;
	v->nb = (uint32_t)(((uint64_t)v->n + (1u << v->shift) - 1) >> v->shift);
	idx_room = len - BLOB_HDR - BLOB_HASH;
	if (v->nb > idx_room / BLOB_IDX)
		return -EBADMSG;
	v->pcs = blob + BLOB_HDR;
	v->offs = v->pcs + 8 * (size_t)v->nb;
	v->data = v->offs + 4 * (size_t)v->nb;
	v->data_len = idx_room - (size_t)v->nb * BLOB_IDX;
	if (!v->nb)
		return v->data_len ? -EBADMSG : 0;
	if (block_off(v, 0))
		return -EBADMSG;
	for (i = 0; i < v->nb; i++) {
		k = block_rows(v, i);
		off = block_off(v, i);
		next = block_off(v, i + 1);
		if (next < off || next - off < 2 * k - 1 ||
		    next - off > BLOB_FIRST_MAX + (k - 1) * BLOB_ROW_MAX)
			return -EBADMSG;
		pc = block_pc(v, i);
		if (i + 1 < v->nb) {
			npc = block_pc(v, i + 1);
			if (npc <= pc || npc - pc < k)
				return -EBADMSG;
		} else if (UINT64_MAX - pc < k - 1) {
			return -EBADMSG;
		}
	}
	return 0;
}

/*
 * Decodes block i of a checked blob into rows (block_rows(v, i) of them)
 * with all of decode's checks except the one against the previous block's
 * last row: pcs strictly increase and stay below the next block's first pc,
 * neighbours differ, kinds are known, the encoding is canonical and ends
 * exactly at the block's end, and the table's last row is SYMB_CFA_NONE.
 */
static bool decode_block(const struct blob_view *v, uint32_t i, struct symb_delta *rows)
{
	const uint8_t *p = v->data + block_off(v, i), *end = v->data + block_off(v, i + 1);
	uint64_t pc = block_pc(v, i), dv, w, pw;
	uint32_t j, k = block_rows(v, i);
	struct symb_delta row;

	if (!get_fields(&p, end, &row))
		return false;
	row.pc = pc;
	rows[0] = row;
	pw = row_word(&row);
	for (j = 1; j < k; j++) {
		/*
		 * Inline: a one-byte delta, a short cfa code, and a one-byte
		 * bp_off or none (nearly every row); the rest take the call.
		 */
		if (end - p >= 3 && p[0] < 0x80 && (p[1] >> 4) != BLOB_CFA_BIG &&
		    (p[1] & 0x07) <= SYMB_CFA_INVALID && (!(p[1] & 0x08) || p[2] < 0x80)) {
			dv = p[0];
			w = (uint64_t)(p[1] >> 4) * 8 | (uint64_t)(p[1] & 0x07) << 48;
			if (p[1] & 0x08) {
				/* bp_off: the 7 bits sign-extended, at bit 32 */
				int16_t bp = (int16_t)((int8_t)(uint8_t)(p[2] << 1) >> 1);

				if (!bp)
					return false;
				w |= (uint64_t)(uint16_t)bp << 32;
				p++;
			}
			p += 2;
		} else {
			p = get_row_slow(p, end, &dv, &w);
			if (!p)
				return false;
		}
		/* pcs strictly increase, neighbours differ */
		if (!dv || pc + dv < pc || w == pw)
			return false;
		pc += dv;
		pw = w;
		rows[j].pc = pc;
		memcpy(&rows[j].cfa_off, &w, sizeof(w));
	}
	if (p != end)
		return false;
	if (i + 1 < v->nb)
		return pc < block_pc(v, i + 1);
	return rows[k - 1].kind == SYMB_CFA_NONE;
}

int symb_deltas__decode(const uint8_t *blob, size_t len, struct symb_deltas *out)
{
	struct symb_delta *rows, *r;
	struct blob_view v;
	uint32_t i;
	int err;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	err = blob_check(blob, len, &v);
	if (err || !v.n)
		return err;
	rows = malloc((size_t)v.n * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	for (i = 0; i < v.nb; i++) {
		r = rows + ((size_t)i << v.shift);
		if (!decode_block(&v, i, r) || (i && row_word(r) == row_word(r - 1))) {
			free(rows);
			return -EBADMSG;
		}
	}
	out->rows = rows;
	out->n = v.n;
	return 0;
}

int symb_deltas__open_blob(uint8_t *blob, size_t len, struct symb_deltas *out)
{
	struct symb_deltas_lazy *z = NULL;
	struct blob_view v;
	int err;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	err = blob_check(blob, len, &v);
	if (err || !v.n)
		goto err_out; /* an empty table needs nothing kept */
	err = -ENOMEM;
	z = calloc(1, sizeof(*z));
	if (!z)
		goto err_out;
	z->blocks = calloc(v.nb, sizeof(*z->blocks));
	if (!z->blocks)
		goto err_out;
	z->blob = blob;
	z->v = v;
	out->lazy = z;
	out->n = v.n;
	return 0;
err_out:
	free(z);
	free(blob);
	return err;
}

/* Block i's rows, decoding them on first use; &bad_block or NULL (no memory). */
static struct symb_delta *lazy_block(struct symb_deltas_lazy *z, uint32_t i)
{
	struct symb_delta *rows = z->blocks[i];

	if (rows)
		return rows;
	rows = malloc((size_t)block_rows(&z->v, i) * sizeof(*rows));
	if (!rows)
		return NULL;
	if (!decode_block(&z->v, i, rows)) {
		free(rows);
		rows = &bad_block;
		z->bad_blocks++;
		lp_debug("cfi: cached table block %u of %u is malformed; no CFI there", i, z->v.nb);
	}
	z->blocks[i] = rows;
	return rows;
}

/* The row that holds at vaddr in rows[0..n), vaddr >= rows[0].pc. */
static const struct symb_delta *find_row(const struct symb_delta *rows, size_t n, uint64_t vaddr)
{
	size_t lo = 0, hi = n, mid;

	/* rows[lo].pc <= vaddr < rows[hi].pc (rows[n] read as +infinity) */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (rows[mid].pc <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	return &rows[lo];
}

static const struct symb_delta *lazy_find(struct symb_deltas_lazy *z, uint64_t vaddr)
{
	const struct blob_view *v = &z->v;
	uint32_t lo = 0, hi = v->nb, mid;
	struct symb_delta *rows;

	if (vaddr < block_pc(v, 0))
		return NULL;
	/* pc[lo] <= vaddr < pc[hi] (pc[nb] read as +infinity) */
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (block_pc(v, mid) <= vaddr)
			lo = mid;
		else
			hi = mid;
	}
	rows = lazy_block(z, lo);
	if (!rows || rows == &bad_block)
		return NULL;
	return find_row(rows, block_rows(v, lo), vaddr);
}

const struct symb_delta *symb_deltas__find(const struct symb_deltas *d, uint64_t vaddr)
{
	if (!d)
		return NULL;
	if (d->lazy)
		return lazy_find(d->lazy, vaddr);
	if (!d->n || vaddr < d->rows[0].pc)
		return NULL;
	return find_row(d->rows, d->n, vaddr);
}

uint32_t symb_deltas__bad_blocks(const struct symb_deltas *d)
{
	return d && d->lazy ? d->lazy->bad_blocks : 0;
}

void symb_deltas__free(struct symb_deltas *d)
{
	struct symb_deltas_lazy *z;
	uint32_t i;

	if (!d)
		return;
	z = d->lazy;
	if (z) {
		for (i = 0; i < z->v.nb; i++) {
			if (z->blocks[i] != &bad_block)
				free(z->blocks[i]);
		}
		free(z->blocks);
		free(z->blob);
		free(z);
	}
	free(d->rows);
	d->rows = NULL;
	d->n = 0;
	d->lazy = NULL;
}
