// SPDX-License-Identifier: MIT
/*
 * Writes fuzz_unwind's seed corpus: one small input per frame shape and per
 * stop reason, in the layout of fuzz_unwind.h (the unit test's scenarios).
 * Run by hand, not by the build, from this directory:
 *
 *   cc -I../../../symbolizer $(pkg-config --cflags libelf) -o /tmp/gen gen-corpus.c
 *   /tmp/gen corpus
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfi.h"
#include "fuzz_unwind.h"

#define BASE  0x7ffd00001000ULL
#define FN(i) (0x400000ULL + (i)*0x100)

struct seed {
	uint8_t hdr[FUZZ_HDR_SIZE];
	uint8_t rows[FUZZ_MAX_ROWS * FUZZ_ROW_SIZE];
	unsigned int nrows;
	uint8_t stack[1024];
	uint32_t len;
};

static const char *dir;

static void begin(struct seed *s, uint64_t ip, uint64_t bp, uint8_t max, uint32_t len)
{
	uint64_t sp = BASE;

	memset(s, 0, sizeof(*s));
	memcpy(s->hdr, &ip, 8);
	memcpy(s->hdr + 8, &sp, 8);
	memcpy(s->hdr + 16, &bp, 8);
	s->hdr[24] = max;
	s->len = len;
}

static void row(struct seed *s, uint64_t pc, int32_t cfa_off, int16_t bp_off, uint8_t kind)
{
	uint8_t *p = s->rows + s->nrows * FUZZ_ROW_SIZE;

	if (s->nrows == FUZZ_MAX_ROWS)
		abort();
	memcpy(p, &pc, 8);
	memcpy(p + 8, &cfa_off, 4);
	memcpy(p + 12, &bp_off, 2);
	p[14] = kind;
	s->nrows++;
	s->hdr[25] = (uint8_t)s->nrows;
}

static void put(struct seed *s, uint64_t addr, uint64_t v)
{
	if (addr < BASE || addr - BASE + 8 > s->len)
		abort();
	memcpy(s->stack + (addr - BASE), &v, 8);
}

static void emit(const struct seed *s, const char *name)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(s->hdr, 1, sizeof(s->hdr), f) != sizeof(s->hdr) ||
	    fwrite(s->rows, FUZZ_ROW_SIZE, s->nrows, f) != s->nrows ||
	    fwrite(s->stack, 1, s->len, f) != s->len || fclose(f)) {
		perror(path);
		exit(1);
	}
}

int main(int argc, char **argv)
{
	struct seed s;
	uint64_t uc;
	int i;

	if (argc != 2) {
		fprintf(stderr, "usage: %s corpus-dir\n", argv[0]);
		return 2;
	}
	dir = argv[1];

	begin(&s, FN(1) + 0x10, 0, 16, 128);
	row(&s, FN(1), 16, 0, SYMB_CFA_SP);
	row(&s, FN(2), 40, 0, SYMB_CFA_SP);
	row(&s, FN(3), 0, 0, SYMB_CFA_END);
	row(&s, FN(4), 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE + 8, FN(2) + 0x20);
	put(&s, BASE + 0x30, FN(3) + 0x30);
	emit(&s, "sp-chain");

	begin(&s, FN(1) + 8, BASE + 0x40, 16, 0x120);
	row(&s, FN(1), 16, -16, SYMB_CFA_BP);
	row(&s, FN(3), 8, 0, SYMB_CFA_SP);
	row(&s, FN(4), 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE + 0x40, BASE + 0x100);
	put(&s, BASE + 0x48, FN(2) + 4);
	put(&s, BASE + 0x100, 0x1234);
	put(&s, BASE + 0x108, FN(3) + 4);
	put(&s, BASE + 0x110, 0);
	emit(&s, "bp-rows");

	begin(&s, FN(1) + 3, BASE + 0x20, 16, 64);
	row(&s, FN(1), 8, 0, SYMB_CFA_SP);
	row(&s, FN(2), 16, -16, SYMB_CFA_BP);
	row(&s, FN(3), 0, 0, SYMB_CFA_END);
	put(&s, BASE, FN(2) + 0x10);
	put(&s, BASE + 0x20, 0);
	put(&s, BASE + 0x28, FN(3) + 0x10);
	emit(&s, "leaf-without-fp");
	s.nrows = 1;
	s.rows[14] = FUZZ_KIND_NO_CFI;
	s.hdr[25] = 1;
	emit(&s, "fp-only");

	for (i = 0; i < 2; i++) {
		begin(&s, FN(1) + (i ? 0x2b : 0x26), 0, 16, 16);
		row(&s, FN(1), 0, 0, SYMB_CFA_PLT);
		row(&s, FN(2), 0, 0, SYMB_CFA_END);
		put(&s, BASE, FN(2) + 0x10);
		put(&s, BASE + 8, FN(2) + 0x20);
		emit(&s, i ? "plt-hi" : "plt-lo");
	}

	begin(&s, FN(1) + 5, 0x77, 16, 0x200);
	uc = BASE + 0x10;
	row(&s, FN(1), 16, -16, SYMB_CFA_SP);
	row(&s, FN(2), 16, -16, SYMB_CFA_BP);
	row(&s, FN(3), 0, 0, SYMB_CFA_END);
	row(&s, FN(4), 0, 0, FUZZ_KIND_UNMAPPED);
	row(&s, FN(5) + 0x10, 0, 0, SYMB_CFA_SIGNAL);
	row(&s, FN(5) + 0x20, 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE, 0xdead);
	put(&s, BASE + 8, FN(5) + 0x11);
	put(&s, uc + 40 + 10 * 8, BASE + 0x1d0);
	put(&s, uc + 40 + 15 * 8, BASE + 0x1a0);
	put(&s, uc + 40 + 16 * 8, FN(2) + 0x33);
	put(&s, BASE + 0x1d0, 0);
	put(&s, BASE + 0x1d8, FN(3) + 8);
	emit(&s, "signal");
	put(&s, uc + 40 + 16 * 8, 0);
	emit(&s, "signal-ip0");

	begin(&s, FN(1), BASE + 0x40, 16, 0xb0);
	row(&s, FN(1), 8, 0, SYMB_CFA_SP);
	row(&s, FN(2), 0, 0, FUZZ_KIND_NO_CFI);
	row(&s, FN(3), 0, 0, SYMB_CFA_NONE);
	row(&s, FN(4), 16, 0, SYMB_CFA_SP);
	row(&s, FN(5), 0, 0, SYMB_CFA_END);
	put(&s, BASE, FN(2) + 1);
	put(&s, BASE + 0x40, BASE + 0x80);
	put(&s, BASE + 0x48, FN(3) + 1);
	put(&s, BASE + 0x80, 0x5555);
	put(&s, BASE + 0x88, FN(4) + 1);
	put(&s, BASE + 0x98, FN(5) + 1);
	emit(&s, "fp-fallback");

	begin(&s, FN(1), 0, 8, 0x200);
	row(&s, FN(1), 16, 0, SYMB_CFA_SP);
	row(&s, FN(2), 0, 0, FUZZ_KIND_UNMAPPED);
	for (i = 0; i < 32; i++)
		put(&s, BASE + i * 16 + 8, FN(1) + 0x10 + i % 8);
	emit(&s, "max-frames");

	begin(&s, FN(1), 0, 16, 56);
	row(&s, FN(1), 64, 0, SYMB_CFA_SP);
	emit(&s, "short-stack");

	begin(&s, FN(1), BASE - 0x40, 16, 64);
	row(&s, FN(1), 0, 0, FUZZ_KIND_NO_CFI);
	emit(&s, "no-cfi");

	begin(&s, FN(1), 0, 16, 16);
	row(&s, FN(1), 8, 0, SYMB_CFA_SP);
	row(&s, FN(2), 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE, 0x1234567);
	emit(&s, "unmapped");

	begin(&s, 0x7f0000001000ULL, BASE + 0x20, 16, 64);
	row(&s, FN(2), 0, 0, SYMB_CFA_END);
	row(&s, FN(3), 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE + 0x20, 0);
	put(&s, BASE + 0x28, FN(2) + 9);
	emit(&s, "jit-ip");

	begin(&s, FN(4) + 1, BASE + 0x40, 16, 0x60);
	row(&s, FN(4), 16, -16, SYMB_CFA_BP);
	row(&s, FN(5), 0, 0, FUZZ_KIND_UNMAPPED);
	put(&s, BASE + 0x40, BASE + 0x40);
	put(&s, BASE + 0x48, FN(4) + 2);
	emit(&s, "bad-cfa-cycle");

	begin(&s, FN(1), 0, 16, 16);
	row(&s, FN(1), 0, 0, SYMB_CFA_INVALID);
	emit(&s, "invalid");

	begin(&s, 0, 0, 16, 16);
	emit(&s, "no-regs");
	return 0;
}
