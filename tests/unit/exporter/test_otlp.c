// SPDX-License-Identifier: MIT
/*
 * exp_otlp_encode: the request is unpacked with protobuf-c (the generated
 * unpacker, not the encoder's code) and checked against the fixture
 * (otlp_fixture.h): resources and their attributes, the dictionary's zero
 * values, stacks down to function names and lines, build-ids, sample
 * values; then determinism, refusals, and every allocation failing in
 * turn (calloc and malloc are wrapped at link time, see CMakeLists.txt).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "otlp_fixture.h"
#include "otlp_profiles_service.pb-c.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	req_t;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary dict_t;
typedef Opentelemetry__Proto__Profiles__V1development__Profile profile_t;
typedef Opentelemetry__Proto__Profiles__V1development__Sample sample_t;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_t;
typedef Opentelemetry__Proto__Resource__V1__Resource resource_t;

#define UNPACK                                                                                     \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__unpack
#define FREE_UNPACKED                                                                              \
	opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__free_unpacked
#define ANY_STRING OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define ANY_INT	   OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE

/*
 * Allocation failure injection: the allocation numbered fail_call (counting
 * from 0 in alloc_calls) returns NULL; -1 never fails. Only this program's
 * and lp_exp's calls are wrapped, not protobuf-c's or cmocka's.
 */
static long alloc_calls, fail_call = -1;

void *__real_calloc(size_t n, size_t size);
void *__real_malloc(size_t size);

void *__wrap_calloc(size_t n, size_t size)
{
	if (alloc_calls++ == fail_call)
		return NULL;
	return __real_calloc(n, size);
}

void *__wrap_malloc(size_t size)
{
	if (alloc_calls++ == fail_call)
		return NULL;
	return __real_malloc(size);
}

struct enc {
	uint8_t *buf;
	size_t len;
	req_t *req;
};

static void encode(struct enc *e, const struct lpw_profile *p, const struct exp_identity *id)
{
	assert_int_equal(exp_otlp_encode(p, id, &e->buf, &e->len), 0);
	assert_non_null(e->buf);
	e->req = UNPACK(NULL, e->len, e->buf);
	assert_non_null(e->req);
	assert_non_null(e->req->dictionary);
}

static void enc_free(struct enc *e)
{
	FREE_UNPACKED(e->req, NULL);
	free(e->buf);
}

static const char *str(const req_t *r, int32_t i)
{
	assert_true(i >= 0 && (size_t)i < r->dictionary->n_string_table);
	return r->dictionary->string_table[i];
}

/* The resource attribute key's value, or NULL. */
static const any_t *res_attr(const resource_t *res, const char *key)
{
	for (size_t i = 0; i < res->n_attributes; i++)
		if (strcmp(res->attributes[i]->key, key) == 0)
			return res->attributes[i]->value;
	return NULL;
}

static const char *res_str(const resource_t *res, const char *key)
{
	const any_t *v = res_attr(res, key);

	if (!v)
		return NULL;
	assert_int_equal(v->value_case, ANY_STRING);
	return v->string_value;
}

/* The string value of attribute key among a dictionary reference list, or NULL. */
static const char *dict_attr(const req_t *r, const int32_t *ix, size_t n, const char *key)
{
	const dict_t *d = r->dictionary;

	for (size_t i = 0; i < n; i++) {
		assert_true(ix[i] > 0 && (size_t)ix[i] < d->n_attribute_table);
		if (strcmp(str(r, d->attribute_table[ix[i]]->key_strindex), key) == 0) {
			assert_int_equal(d->attribute_table[ix[i]]->value->value_case, ANY_STRING);
			return d->attribute_table[ix[i]]->value->string_value;
		}
	}
	return NULL;
}

/* Stack stack_ix as "leaf;...;root", one frame per Line (inlined ones too). */
static void frames(const req_t *r, int32_t stack_ix, char *out, size_t outlen)
{
	const dict_t *d = r->dictionary;
	size_t n = 0;

	assert_true(stack_ix > 0 && (size_t)stack_ix < d->n_stack_table);
	out[0] = '\0';
	for (size_t i = 0; i < d->stack_table[stack_ix]->n_location_indices; i++) {
		int32_t li = d->stack_table[stack_ix]->location_indices[i];

		assert_true(li > 0 && (size_t)li < d->n_location_table);
		for (size_t j = 0; j < d->location_table[li]->n_lines; j++) {
			int32_t fi = d->location_table[li]->lines[j]->function_index;

			assert_true(fi > 0 && (size_t)fi < d->n_function_table);
			n += snprintf(out + n, outlen - n, "%s%s", n ? ";" : "",
				      str(r, d->function_table[fi]->name_strindex));
			assert_true(n < outlen);
		}
	}
}

static const profile_t *profile_of(const req_t *r, size_t res)
{
	assert_true(res < r->n_resource_profiles);
	assert_int_equal(r->resource_profiles[res]->n_scope_profiles, 1);
	assert_int_equal(r->resource_profiles[res]->scope_profiles[0]->n_profiles, 1);
	return r->resource_profiles[res]->scope_profiles[0]->profiles[0];
}

/* Sample i of resource res: its frames, thread.name and value. */
static void check_sample(const req_t *r, size_t res, size_t i, const char *want_frames,
			 const char *want_thread, int64_t want_value)
{
	const profile_t *pr = profile_of(r, res);
	const sample_t *s;
	char buf[512];

	assert_true(i < pr->n_samples);
	s = pr->samples[i];
	frames(r, s->stack_index, buf, sizeof(buf));
	assert_string_equal(buf, want_frames);
	assert_int_equal(s->n_attribute_indices, 1);
	assert_string_equal(dict_attr(r, s->attribute_indices, 1, "thread.name"), want_thread);
	assert_int_equal(s->n_values, 1);
	assert_int_equal(s->values[0], want_value);
	assert_int_equal(s->n_timestamps_unix_nano, 0);
	assert_int_equal(s->link_index, 0);
}

static void test_zero_values(void **state)
{
	struct enc e;
	const dict_t *d;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	d = e.req->dictionary;
	assert_true(d->n_string_table > 1);
	assert_string_equal(d->string_table[0], "");

	assert_true(d->n_mapping_table > 1);
	assert_int_equal(d->mapping_table[0]->memory_start, 0);
	assert_int_equal(d->mapping_table[0]->memory_limit, 0);
	assert_int_equal(d->mapping_table[0]->file_offset, 0);
	assert_int_equal(d->mapping_table[0]->filename_strindex, 0);
	assert_int_equal(d->mapping_table[0]->n_attribute_indices, 0);

	assert_true(d->n_location_table > 1);
	assert_int_equal(d->location_table[0]->mapping_index, 0);
	assert_int_equal(d->location_table[0]->address, 0);
	assert_int_equal(d->location_table[0]->n_lines, 0);
	assert_int_equal(d->location_table[0]->n_attribute_indices, 0);

	assert_true(d->n_function_table > 1);
	assert_int_equal(d->function_table[0]->name_strindex, 0);
	assert_int_equal(d->function_table[0]->system_name_strindex, 0);
	assert_int_equal(d->function_table[0]->filename_strindex, 0);
	assert_int_equal(d->function_table[0]->start_line, 0);

	assert_true(d->n_stack_table > 1);
	assert_int_equal(d->stack_table[0]->n_location_indices, 0);

	assert_true(d->n_attribute_table > 1);
	assert_int_equal(d->attribute_table[0]->key_strindex, 0);
	assert_null(d->attribute_table[0]->value);
	assert_int_equal(d->attribute_table[0]->unit_strindex, 0);

	/* no links used: only the recommended zero Link, ids of full length */
	assert_int_equal(d->n_link_table, 1);
	assert_int_equal(d->link_table[0]->trace_id.len, 16);
	assert_int_equal(d->link_table[0]->span_id.len, 8);
	for (size_t i = 0; i < 16; i++)
		assert_int_equal(d->link_table[0]->trace_id.data[i], 0);
	for (size_t i = 0; i < 8; i++)
		assert_int_equal(d->link_table[0]->span_id.data[i], 0);
	enc_free(&e);
}

static void test_resources(void **state)
{
	const resource_t *r0, *r1;
	const any_t *pid;
	struct enc e;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	/* one per process, in the order the stacks name them */
	assert_int_equal(e.req->n_resource_profiles, 2);
	r0 = e.req->resource_profiles[0]->resource;
	r1 = e.req->resource_profiles[1]->resource;
	assert_non_null(r0);
	assert_non_null(r1);

	assert_string_equal(res_str(r0, "host.name"), FIX_HOST);
	assert_string_equal(res_str(r0, "service.name"), "app");
	pid = res_attr(r0, "process.pid");
	assert_non_null(pid);
	assert_int_equal(pid->value_case, ANY_INT);
	assert_int_equal(pid->int_value, 100);
	assert_string_equal(res_str(r0, "process.executable.path"), "/usr/bin/app");
	assert_string_equal(res_str(r0, "process.executable.name"), "app");
	assert_null(res_attr(r0, "container.id"));
	assert_null(res_attr(r0, "k8s.pod.uid"));
	assert_int_equal(r0->n_attributes, 5);

	assert_string_equal(res_str(r1, "host.name"), FIX_HOST);
	/* exp_service_name: a container's first 12 characters */
	assert_string_equal(res_str(r1, "service.name"), "container/4f2c1a9e8b7d");
	pid = res_attr(r1, "process.pid");
	assert_non_null(pid);
	assert_int_equal(pid->int_value, 200);
	assert_string_equal(res_str(r1, "process.executable.path"), "/usr/sbin/nginx");
	assert_string_equal(res_str(r1, "process.executable.name"), "nginx");
	assert_string_equal(res_str(r1, "container.id"), FIX_CONTAINER);
	assert_string_equal(res_str(r1, "k8s.pod.uid"), FIX_POD);
	assert_int_equal(r1->n_attributes, 7);

	for (size_t i = 0; i < 2; i++) {
		const Opentelemetry__Proto__Common__V1__InstrumentationScope *sc =
			e.req->resource_profiles[i]->scope_profiles[0]->scope;

		assert_non_null(sc);
		assert_string_equal(sc->name, "lowprof");
		assert_string_not_equal(sc->version, "");
	}
	enc_free(&e);
}

static void test_service_name_given(void **state)
{
	struct exp_identity id = *fix_otlp_identity();
	struct enc e;

	id.service_name = "checkout";
	encode(&e, fix_otlp_profile(), &id);
	assert_int_equal(e.req->n_resource_profiles, 2);
	for (size_t i = 0; i < 2; i++)
		assert_string_equal(res_str(e.req->resource_profiles[i]->resource, "service.name"),
				    "checkout");
	enc_free(&e);
}

static void test_profile_fields(void **state)
{
	struct enc e;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	for (size_t i = 0; i < e.req->n_resource_profiles; i++) {
		const profile_t *pr = profile_of(e.req, i);

		/* the default (folded_value) sample type: cpu nanoseconds */
		assert_non_null(pr->sample_type);
		assert_string_equal(str(e.req, pr->sample_type->type_strindex), "cpu");
		assert_string_equal(str(e.req, pr->sample_type->unit_strindex), "nanoseconds");
		assert_non_null(pr->period_type);
		assert_string_equal(str(e.req, pr->period_type->type_strindex), "cpu");
		assert_string_equal(str(e.req, pr->period_type->unit_strindex), "nanoseconds");
		assert_int_equal(pr->period, FIX_PERIOD);
		assert_int_equal(pr->time_unix_nano, FIX_TIME);
		assert_int_equal(pr->duration_nano, FIX_DURATION);
		assert_int_equal(pr->profile_id.len, 0);
	}
	enc_free(&e);
}

static void test_samples_and_stacks(void **state)
{
	const profile_t *p0, *p1;
	struct enc e;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	p0 = profile_of(e.req, 0);
	p1 = profile_of(e.req, 1);
	/* the two "app" stacks differing only in cgroup are one sample: 70 + 10 */
	assert_int_equal(p0->n_samples, 2);
	check_sample(e.req, 0, 0, "inner_fn;work;main", "app", 80);
	check_sample(e.req, 0, 1, "memcpy;inner_fn;work;main", "app-worker", 30);
	assert_int_equal(p1->n_samples, 2);
	check_sample(e.req, 1, 0, "do_syscall_64;memcpy;[unknown]", "nginx", 50);
	check_sample(e.req, 1, 1, "memcpy;inner_fn;work;main", "nginx", 20);

	/* stacks are shared by the resources: three distinct plus Stack{} */
	assert_int_equal(p0->samples[1]->stack_index, p1->samples[1]->stack_index);
	assert_int_equal(e.req->dictionary->n_stack_table, 4);
	/* same thread.name value in two samples: one attribute */
	assert_int_equal(p1->samples[0]->attribute_indices[0],
			 p1->samples[1]->attribute_indices[0]);
	enc_free(&e);
}

/* The location whose first line names function name, or NULL. */
static const Opentelemetry__Proto__Profiles__V1development__Location *loc_named(const req_t *r,
										const char *name)
{
	const dict_t *d = r->dictionary;

	for (size_t i = 1; i < d->n_location_table; i++) {
		const Opentelemetry__Proto__Profiles__V1development__Location *l =
			d->location_table[i];

		if (l->n_lines &&
		    !strcmp(str(r, d->function_table[l->lines[0]->function_index]->name_strindex),
			    name))
			return l;
	}
	return NULL;
}

static void test_locations_and_lines(void **state)
{
	const Opentelemetry__Proto__Profiles__V1development__Location *l;
	const Opentelemetry__Proto__Profiles__V1development__Function *f;
	const dict_t *d;
	struct enc e;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	d = e.req->dictionary;
	/* five locations in stacks, plus Location{}; "unused_fn" left out */
	assert_int_equal(d->n_location_table, 6);
	assert_null(loc_named(e.req, "unused_fn"));
	for (size_t i = 0; i < d->n_string_table; i++) {
		assert_string_not_equal(d->string_table[i], "unused_fn");
		assert_string_not_equal(d->string_table[i], "/unused");
	}

	/* inlined: inner_fn first, then the function it is inlined into */
	l = loc_named(e.req, "inner_fn");
	assert_non_null(l);
	assert_int_equal(l->address, 0x1340);
	assert_int_equal(l->n_lines, 2);
	assert_int_equal(l->lines[0]->line, 12);
	f = d->function_table[l->lines[0]->function_index];
	assert_string_equal(str(e.req, f->filename_strindex), "/src/app/inner.h");
	assert_int_equal(l->lines[1]->line, 40);
	f = d->function_table[l->lines[1]->function_index];
	assert_string_equal(str(e.req, f->name_strindex), "work");
	assert_string_equal(str(e.req, f->filename_strindex), "/src/app/work.c");
	assert_string_equal(dict_attr(e.req, l->attribute_indices, l->n_attribute_indices,
				      "profile.frame.type"),
			    "native");

	/* no source lines: one Line naming the function, no file */
	l = loc_named(e.req, "main");
	assert_non_null(l);
	assert_int_equal(l->n_lines, 1);
	assert_int_equal(l->lines[0]->line, 0);
	assert_int_equal(d->function_table[l->lines[0]->function_index]->filename_strindex, 0);

	l = loc_named(e.req, "do_syscall_64");
	assert_non_null(l);
	assert_int_equal(l->address, 0xffffffff81001000ull);
	assert_string_equal(dict_attr(e.req, l->attribute_indices, l->n_attribute_indices,
				      "profile.frame.type"),
			    "kernel");

	/* no mapping: index 0 */
	l = loc_named(e.req, "[unknown]");
	assert_non_null(l);
	assert_int_equal(l->mapping_index, 0);
	assert_int_equal(l->address, 0x7f0000001234ull);
	enc_free(&e);
}

static void test_mappings(void **state)
{
	const Opentelemetry__Proto__Profiles__V1development__Mapping *m;
	const dict_t *d;
	struct enc e;
	int seen = 0;

	encode(&e, fix_otlp_profile(), fix_otlp_identity());
	d = e.req->dictionary;
	/* three used, plus Mapping{}; /unused left out */
	assert_int_equal(d->n_mapping_table, 4);
	for (size_t i = 1; i < d->n_mapping_table; i++) {
		const char *name;

		m = d->mapping_table[i];
		name = str(e.req, m->filename_strindex);
		if (!strcmp(name, "/usr/bin/app")) {
			assert_int_equal(m->memory_start, 0x1000);
			assert_int_equal(m->memory_limit, 0x9000);
			assert_int_equal(m->file_offset, 0x1000);
			assert_string_equal(dict_attr(e.req, m->attribute_indices,
						      m->n_attribute_indices,
						      "process.executable.build_id.gnu"),
					    FIX_BUILD_ID);
			seen |= 1;
		} else if (!strcmp(name, "/lib/libc.so.6")) {
			assert_int_equal(m->n_attribute_indices, 0);
			seen |= 2;
		} else if (!strcmp(name, "[kernel.kallsyms]")) {
			assert_int_equal(m->n_attribute_indices, 0);
			seen |= 4;
		}
	}
	assert_int_equal(seen, 7);
	/* locations point at their mapping */
	m = d->mapping_table[loc_named(e.req, "memcpy")->mapping_index];
	assert_string_equal(str(e.req, m->filename_strindex), "/lib/libc.so.6");
	enc_free(&e);
}

static void test_deterministic(void **state)
{
	struct enc a, b;
	uint8_t *again;
	size_t n;

	encode(&a, fix_otlp_profile(), fix_otlp_identity());
	encode(&b, fix_otlp_profile(), fix_otlp_identity());
	assert_int_equal(a.len, b.len);
	assert_memory_equal(a.buf, b.buf, a.len);
	/* canonical: protobuf-c packs what it unpacked to the same bytes */
	n = protobuf_c_message_get_packed_size(&a.req->base);
	assert_int_equal(n, a.len);
	again = malloc(n);
	assert_non_null(again);
	assert_int_equal(protobuf_c_message_pack(&a.req->base, again), n);
	assert_memory_equal(again, a.buf, n);
	free(again);
	enc_free(&a);
	enc_free(&b);
}

static void test_empty(void **state)
{
	struct lpw_profile p = *fix_otlp_profile();
	const dict_t *d;
	struct enc e;

	p.nstacks = 0;
	encode(&e, &p, fix_otlp_identity());
	d = e.req->dictionary;
	assert_int_equal(e.req->n_resource_profiles, 0);
	/* only the zero values (the string table also has the keys and value types) */
	assert_int_equal(d->n_mapping_table, 1);
	assert_int_equal(d->n_location_table, 1);
	assert_int_equal(d->n_function_table, 1);
	assert_int_equal(d->n_stack_table, 1);
	assert_int_equal(d->n_attribute_table, 1);
	assert_int_equal(d->n_link_table, 1);
	assert_string_equal(d->string_table[0], "");
	enc_free(&e);
}

static void expect_einval(const struct lpw_profile *p, const struct exp_identity *id)
{
	uint8_t *out = (uint8_t *)"x";
	size_t len = 1;

	assert_int_equal(exp_otlp_encode(p, id, &out, &len), -EINVAL);
	assert_null(out);
	assert_int_equal(len, 0);
}

static void test_refusals(void **state)
{
	const struct lpw_profile *good = fix_otlp_profile();
	struct lpw_location locs[6];
	struct lpw_stack stacks[5];
	struct exp_identity id = *fix_otlp_identity();
	struct lpw_profile p;
	const uint32_t bad_loc[] = {0, 6};

	p = *good;
	p.folded_value = 2;
	expect_einval(&p, &id);

	/* a stack naming a location past the table */
	p = *good;
	memcpy(stacks, good->stacks, sizeof(stacks));
	stacks[1].locs = bad_loc;
	stacks[1].nlocs = 2;
	p.stacks = stacks;
	expect_einval(&p, &id);

	/* a location naming a mapping past the table */
	p = *good;
	memcpy(locs, good->locations, sizeof(locs));
	locs[2].mapping = 4;
	p.locations = locs;
	expect_einval(&p, &id);

	/* lines counted but absent */
	locs[2].mapping = 1;
	locs[2].nlines = 1;
	expect_einval(&p, &id);

	p = *good;
	id.host_name = NULL;
	expect_einval(&p, &id);
	expect_einval(NULL, fix_otlp_identity());
}

/*
 * A profile large enough that the encoder's arena takes many blocks in
 * every phase: BIG_LOCS locations with names of their own, BIG_STACKS
 * stacks of 4 over BIG_PROCS processes. Freed with big_free.
 */
#define BIG_LOCS   4000
#define BIG_STACKS 3000
#define BIG_PROCS  50

struct big {
	struct lpw_profile p;
	struct lpw_mapping map;
	struct lpw_location *locs;
	struct lpw_stack *stacks;
	uint32_t *ids;
	char (*names)[16];
};

static void big_init(struct big *b)
{
	memset(b, 0, sizeof(*b));
	b->locs = calloc(BIG_LOCS, sizeof(*b->locs));
	b->stacks = calloc(BIG_STACKS, sizeof(*b->stacks));
	b->ids = calloc(BIG_STACKS * 4, sizeof(*b->ids));
	b->names = calloc(BIG_LOCS, sizeof(*b->names));
	assert_true(b->locs && b->stacks && b->ids && b->names);
	b->map = (struct lpw_mapping){"/usr/bin/big", "abcd", 0, 1 << 30, 0, true};
	for (uint32_t i = 0; i < BIG_LOCS; i++) {
		snprintf(b->names[i], sizeof(b->names[i]), "fn_%u", i);
		b->locs[i] = (struct lpw_location){0, 0x1000 + 16 * i, b->names[i], false, true};
	}
	for (uint32_t i = 0; i < BIG_STACKS; i++) {
		for (uint32_t j = 0; j < 4; j++)
			b->ids[4 * i + j] = (i * 7 + j * 1000) % BIG_LOCS;
		b->stacks[i] = (struct lpw_stack){
			.pid = 1000 + i % BIG_PROCS,
			.comm = "big",
			.exe = "/usr/bin/big",
			.locs = &b->ids[4 * i],
			.nlocs = 4,
			.values = {1, 10},
		};
	}
	b->p = *fix_otlp_profile();
	b->p.mappings = &b->map;
	b->p.nmappings = 1;
	b->p.locations = b->locs;
	b->p.nlocations = BIG_LOCS;
	b->p.stacks = b->stacks;
	b->p.nstacks = BIG_STACKS;
}

static void big_free(struct big *b)
{
	free(b->locs);
	free(b->stacks);
	free(b->ids);
	free(b->names);
}

/*
 * Each allocation failing in turn gives -ENOMEM, no output and (ASan) no
 * leak. Returns how many failed before one encoding succeeded.
 */
static long fail_each(const struct lpw_profile *p)
{
	long failed = 0;

	for (long k = 0;; k++) {
		uint8_t *out = (uint8_t *)"x";
		size_t len = 1;
		int err;

		alloc_calls = 0;
		fail_call = k;
		err = exp_otlp_encode(p, fix_otlp_identity(), &out, &len);
		fail_call = -1;
		if (!err) {
			assert_non_null(out);
			free(out);
			return failed;
		}
		assert_int_equal(err, -ENOMEM);
		assert_null(out);
		assert_int_equal(len, 0);
		failed++;
	}
}

static void test_out_of_memory(void **state)
{
	struct big b;
	struct enc e;

	/* the small profile fits one arena block: it and the output */
	assert_true(fail_each(fix_otlp_profile()) >= 2);

	big_init(&b);
	assert_true(fail_each(&b.p) >= 10);
	/* and the big one is encoded right */
	encode(&e, &b.p, fix_otlp_identity());
	assert_int_equal(e.req->n_resource_profiles, BIG_PROCS);
	assert_int_equal(e.req->dictionary->n_location_table, 1 + BIG_LOCS);
	assert_int_equal(e.req->dictionary->n_stack_table, 1 + BIG_STACKS);
	assert_int_equal(profile_of(e.req, 0)->n_samples, BIG_STACKS / BIG_PROCS);
	enc_free(&e);
	big_free(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_zero_values),
		cmocka_unit_test(test_resources),
		cmocka_unit_test(test_service_name_given),
		cmocka_unit_test(test_profile_fields),
		cmocka_unit_test(test_samples_and_stacks),
		cmocka_unit_test(test_locations_and_lines),
		cmocka_unit_test(test_mappings),
		cmocka_unit_test(test_deterministic),
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_out_of_memory),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
