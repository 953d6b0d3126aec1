// SPDX-License-Identifier: MIT
/* Record decoder on arbitrary bytes: decode, then walk every nested entry. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "walk_record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy so ASan catches any read past the record */
	uint8_t *copy = malloc(size ? size : 1);

	memcpy(copy, data, size);
	walk_record(copy, size);
	free(copy);
	return 0;
}
