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

/*
 * The symbolizers' metrics files: the input as one shard's file, then cut
 * in two as two shards'. Whatever comes in, what goes out is whole lines
 * within the buffer, no byte a line may not have, every sample labelled.
 */
static void check_symb_out(const char *out, size_t n, size_t cap)
{
	if (n > cap || (n && out[n - 1] != '\n'))
		abort();
	for (size_t at = 0; at < n;) {
		const char *l = out + at, *nl = memchr(l, '\n', n - at);
		size_t ll = (size_t)(nl - l);

		/* a shard label: the file's own (anywhere), else put first */
		if (memchr(l, '\r', ll) || memchr(l, '\0', ll) ||
		    (l[0] != '#' && !memmem(l, ll, "{shard=\"", 8) &&
		     !memmem(l, ll, ",shard=\"", 8)))
			abort();
		at += ll + 1;
	}
}

static void symb_pages(const uint8_t *data, size_t size)
{
	static char out[1 << 17];
	struct exp_symb_page p[2] = {
		{.text = (char *)data, .len = size, .shard = 0, .nshards = 2},
		{.text = (char *)data + size / 2, .len = size - size / 2, .shard = 1, .nshards = 2},
	};
	const size_t caps[] = {sizeof(out), 64};

	p[0].len = size / 2;
	for (size_t c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		for (int res = 0; res < 2; res++) {
			check_symb_out(out, exp_symb_lines(p, 2, out, caps[c], res), caps[c]);
			p[0].len = size;
			check_symb_out(out, exp_symb_lines(p, 1, out, caps[c], res), caps[c]);
			p[0].len = size / 2;
		}
	}
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
	symb_pages(data, size);
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
