// SPDX-License-Identifier: MIT
/*
 * Writes the fixture's OTLP request (otlp_fixture.h), for the check with
 * protoc: write_otlp FILE writes the ExportProfilesServiceRequest's bytes
 * (uncompressed) to FILE.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "otlp_fixture.h"

int main(int argc, char **argv)
{
	uint8_t *buf;
	size_t len;
	FILE *f;
	int err;

	if (argc != 2) {
		fprintf(stderr, "usage: write_otlp FILE\n");
		return 2;
	}
	err = exp_otlp_encode(fix_otlp_profile(), fix_otlp_identity(), &buf, &len);
	if (err) {
		fprintf(stderr, "write_otlp: encode: %s\n", strerror(-err));
		return 1;
	}
	f = fopen(argv[1], "wbe");
	if (!f || fwrite(buf, 1, len, f) != len || fclose(f)) {
		fprintf(stderr, "write_otlp: %s: write failed\n", argv[1]);
		free(buf);
		return 1;
	}
	free(buf);
	return 0;
}
