// SPDX-License-Identifier: MIT
/*
 * What lowprof-exporter reads: a spool window (any bytes: the pprof reader
 * decides) encoded for Pyroscope and OTLP, whose requests must unpack
 * again with protobuf-c; and the same bytes as a header file and as the
 * symbolizer's metrics file, line by line. The encoders, the reader and
 * the parsers are compiled in, so they are instrumented.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "exp.h"
#include "exporter.h"
#include "lowprof/log.h"
#include "lowprof/pprof_read.h"
#include "otlp_profiles_service.pb-c.h"
#include "pyroscope_push.pb-c.h"

static void encoders(const uint8_t *data, size_t size)
{
	static const struct exp_identity id = {.host_name = "h", .kind = "cpu", .seq = 1};
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	struct lpw_read *r = NULL;
	char why[128];
	uint8_t *out;
	size_t len;

	if (fd < 0 || write(fd, data, size) != (ssize_t)size || lseek(fd, 0, SEEK_SET))
		abort();
	if (!lpw_read_pprof(fd, NULL, &r, why, sizeof(why))) {
		const struct lpw_profile *p = lpw_read__profile(r);

		if (!exp_pyroscope_encode(p, &id, &out, &len)) {
			Push__V1__PushRequest *q = push__v1__push_request__unpack(NULL, len, out);

			if (!q)
				abort();
			push__v1__push_request__free_unpacked(q, NULL);
			free(out);
		}
		if (!exp_otlp_encode(p, &id, &out, &len)) {
			Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
				*q = opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack(
					NULL, len, out);

			if (!q)
				abort();
			opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked(
				q, NULL);
			free(out);
		}
		lpw_read__free(r);
	}
	close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool quiet;
	char *text = malloc(size + 1);
	char **h = NULL;

	if (!quiet) {
		lp_log_init("fuzz", (enum lp_log_level) - 1); /* silent: bad input is expected */
		quiet = true;
	}
	if (!text)
		return 0;
	encoders(data, size);
	memcpy(text, data, size);
	text[size] = '\0';
	if (!exp_headers_parse(text, "fuzz", &h)) {
		for (size_t i = 0; h[i]; i++)
			if (strchr(h[i], '\n') || strchr(h[i], '\r') || !strchr(h[i], ':'))
				abort();
		exp_headers_free(h);
	}
	for (size_t at = 0; at < size;) {
		const char *l = (const char *)data + at, *nl = memchr(l, '\n', size - at);
		size_t ll = nl ? (size_t)(nl - l) : size - at;

		if (exp_metrics_line_ok(l, ll) && (memchr(l, '\r', ll) || memchr(l, '\0', ll)))
			abort();
		at += ll + 1;
	}
	free(text);
	return 0;
}
