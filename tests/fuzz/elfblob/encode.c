// SPDX-License-Identifier: MIT
/* elfblob_encode <elf file> <blob out>: writes symb_elf__encode's blob (seed corpus). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elfsym.h"

int main(int argc, char **argv)
{
	struct symb_elf *e;
	uint8_t *blob;
	size_t len;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: %s <elf file> <blob out>\n", argv[0]);
		return 2;
	}
	e = symb_elf__open(argv[1]);
	if (!e) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	if (symb_elf__encode(e, &blob, &len))
		return 1;
	f = fopen(argv[2], "wb");
	if (!f || fwrite(blob, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "%s: %s\n", argv[2], strerror(errno));
		return 1;
	}
	free(blob);
	symb_elf__free(e);
	return 0;
}
