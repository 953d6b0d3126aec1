/* SPDX-License-Identifier: MIT */
/*
 * Input layout of fuzz_unwind, shared with gen-corpus.c. All fields are
 * little-endian and packed:
 *
 *   header, FUZZ_HDR_SIZE (32) bytes:
 *     0  u64 ip, 8 u64 sp, 16 u64 bp      the sampled registers
 *     24 u8  max                          frames: max % (FUZZ_MAX_FRAMES + 1)
 *     25 u8  nrows                        rows: nrows % (FUZZ_MAX_ROWS + 1)
 *     26 i16 base_adj                     stack base = sp + base_adj (the
 *                                         contract says base == sp; seeds use 0)
 *     28 u32 reserved
 *   nrows rows, FUZZ_ROW_SIZE (16) bytes each:
 *     0 u64 pc, 8 i32 cfa_off, 12 i16 bp_off, 14 u8 kind, 15 u8 unused
 *     kind FUZZ_KIND_UNMAPPED / FUZZ_KIND_NO_CFI make the lookup return
 *     that for the row's range; any other kind is returned as the row
 *     (kinds above SYMB_CFA_INVALID included).
 *   the rest: the stack copy (data[i] is the byte at base + i).
 *
 * The lookup sorts the rows by pc; an address below the first row is
 * unmapped, otherwise the last row whose pc <= address answers (like
 * symb_deltas__find).
 */
#ifndef LOWPROF_FUZZ_UNWIND_H
#define LOWPROF_FUZZ_UNWIND_H

#define FUZZ_HDR_SIZE	   32
#define FUZZ_ROW_SIZE	   16
#define FUZZ_MAX_ROWS	   16
#define FUZZ_MAX_FRAMES	   64
#define FUZZ_KIND_UNMAPPED 0xfe
#define FUZZ_KIND_NO_CFI   0xff

#endif /* LOWPROF_FUZZ_UNWIND_H */
