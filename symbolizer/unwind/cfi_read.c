// SPDX-License-Identifier: MIT
/*
 * The byte reader's DW_EH_PE pointer encodings (cfi_int.h), over untrusted
 * section bytes: every read is bounded by the reader's end.
 */
#include "cfi_int.h"

/* The 8-byte aligned form (the value is absolute: its format must be absptr). */
static bool rd_ptr_aligned(struct rd *r, uint8_t enc, uint64_t field, bool skip_only, uint64_t *out)
{
	rd_skip(r, (8 - (field & 7)) & 7);
	*out = rd_le(r, 8);
	return !r->err && (enc & PE_FMT_MASK) == 0 && (skip_only || !(enc & PE_INDIRECT));
}

/* The stored value of an encoding's format (low nibble); false if unknown. */
static bool rd_ptr_fmt(struct rd *r, uint8_t enc, uint64_t *v)
{
	switch (enc & PE_FMT_MASK) {
	case 0x00: /* absptr */
	case 0x04: /* udata8 */
	case 0x0c: /* sdata8 */
		*v = rd_le(r, 8);
		break;
	case 0x01:
		*v = rd_uleb(r);
		break;
	case 0x02:
		*v = rd_le(r, 2);
		break;
	case 0x03:
		*v = rd_le(r, 4);
		break;
	case 0x09:
		*v = (uint64_t)rd_sleb(r);
		break;
	case 0x0a:
		*v = (uint64_t)(int64_t)(int16_t)rd_le(r, 2);
		break;
	case 0x0b:
		*v = (uint64_t)(int64_t)(int32_t)rd_le(r, 4);
		break;
	default:
		return false;
	}
	return true;
}

/* The base an encoding's application adds; false if none is known here. */
static bool ptr_app_base(uint8_t enc, const struct ptr_base *b, uint64_t field, uint64_t *base)
{
	switch (enc & PE_APP_MASK) {
	case 0:
		*base = 0;
		return true;
	case PE_PCREL:
		*base = field;
		return true;
	case PE_DATAREL:
		*base = b->data;
		return b->has_data;
	case PE_FUNCREL:
		*base = b->func;
		return b->has_func;
	default: /* textrel: no text base is known here */
		return false;
	}
}

bool cfi_rd_ptr(struct rd *r, uint8_t enc, const struct ptr_base *b, bool skip_only, uint64_t *out)
{
	uint64_t field = b->sec_vaddr + r->pos, v, base;

	*out = 0;
	if (enc == PE_OMIT)
		return skip_only;
	if ((enc & PE_APP_MASK) == PE_ALIGNED)
		return rd_ptr_aligned(r, enc, field, skip_only, out);
	if (!rd_ptr_fmt(r, enc, &v) || r->err)
		return false;
	if (skip_only)
		return true;
	if (!ptr_app_base(enc, b, field, &base) || (enc & PE_INDIRECT))
		return false;
	*out = v + base;
	return true;
}

bool cfi_rd_ptr_value(struct rd *r, uint8_t enc, uint64_t *out)
{
	static const struct ptr_base none;

	return cfi_rd_ptr(r, enc & PE_FMT_MASK, &none, false, out);
}

bool cfi_hdr_eh_frame_ptr(const uint8_t *p, size_t size, uint64_t vaddr, uint64_t *out)
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
	return cfi_rd_ptr(&r, enc, &pb, false, out);
}
