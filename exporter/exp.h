/* SPDX-License-Identifier: MIT */
/*
 * The exporter's encoders: one window's profile (struct lpw_profile, as
 * read back from a spool file by writers/pprof_read.h) to the request body a
 * backend takes. Pure functions of their input: no network, no files, no
 * clock, so the same window always gives the same bytes and tests need no
 * server.
 *
 * What it is not: transport (http.c), the spool queue (queue.c), retries
 * (run.c). The profile is the symbolizer's output, parsed by the validating
 * pprof reader; the encoders still treat every string in it as data (they
 * never build a label name from it).
 */
#ifndef LOWPROF_EXP_H
#define LOWPROF_EXP_H

#include <stddef.h>
#include <stdint.h>

#include "lowprof/writers.h"

/* What the exporter knows about a window beyond its profile. */
struct exp_identity {
	const char *host_name;	  /* this host (gethostname), never NULL */
	const char *service_name; /* --service-name, or NULL: derived per stack */
	const char *kind;	  /* the spool file's kind: "cpu" or "offcpu" */
	uint64_t seq;		  /* the window's number */
};

/*
 * The service a stack belongs to, written to buf (always terminated):
 * id->service_name when set; else "container/" and the first 12 characters
 * of its container id; else the executable's base name; else its comm;
 * else "unknown". Characters outside [A-Za-z0-9._/-] become '_'.
 */
void exp_service_name(const struct exp_identity *id, const struct lpw_stack *s, char *buf,
		      size_t len);

/*
 * Pyroscope: a push.v1.PushRequest (Connect protocol, binary protobuf) of
 * profile p. One series per distinct (service_name, container id, pod uid),
 * each with one raw sample: a gzip'd pprof of that series' stacks only
 * (mappings, locations and functions they use), sample labels kept as the
 * spool file has them. Series labels: __name__ ("process_cpu" for cpu, "off_cpu" for
 * offcpu), service_name, host_name, and container_id / pod_uid where known.
 * Returns 0 with *out (malloc'd, *len bytes; the caller frees it), or a
 * negative errno.
 */
int exp_pyroscope_encode(const struct lpw_profile *p, const struct exp_identity *id, uint8_t **out,
			 size_t *len);

/*
 * OpenTelemetry: an
 * opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
 * of profile p in the dictionary form (one ProfilesDictionary shared by the
 * request; index 0 of each table the zero value). One ResourceProfiles per
 * process (distinct pid, exe, container id, pod uid), with the resource
 * attributes of the semantic conventions: host.name, service.name (as
 * exp_service_name), process.pid, process.executable.path and .name,
 * container.id, k8s.pod.uid where known; mappings carry
 * process.executable.build_id.gnu where the build-id is known. Returns 0
 * with *out (malloc'd, *len bytes; the caller frees it and gzips it for the
 * wire), or a negative errno.
 */
int exp_otlp_encode(const struct lpw_profile *p, const struct exp_identity *id, uint8_t **out,
		    size_t *len);

#endif /* LOWPROF_EXP_H */
