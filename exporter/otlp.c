// SPDX-License-Identifier: MIT
/*
 * OTLP profiles encoder (exp.h): struct lpw_profile -> an
 * ExportProfilesServiceRequest in the dictionary form
 * (proto/otlp_profiles*.proto, opentelemetry-proto v1development).
 *
 * The request is built as protobuf-c structs and packed by protobuf-c,
 * which writes fields in number order: the same structs give the same
 * bytes. Every table is filled in the order the profile is walked
 * (mappings, locations, stacks in their input order), so the same profile
 * gives the same structs. All structs, arrays and hash slots live in one
 * arena freed at the end; strings are borrowed from the profile or are
 * literals, except the service names, copied into the arena.
 *
 * Choices where the data model leaves room:
 * - One sample type. A Profile has exactly one sample_type (pprof's several
 *   become several Profiles); lowprof's profiles have two values, a count
 *   and a time. The Profile carries value_types[folded_value], the one the
 *   pprof file marks as its default (cpu or off_cpu nanoseconds), which is
 *   what backends show; the count is left out rather than doubling the
 *   request with a second Profile. For cpu profiles it is the time divided
 *   by the period.
 * - comm is the sample attribute thread.name: it is the task's comm
 *   (bpf_get_current_comm), i.e. the thread's name, which is what the
 *   semantic conventions' thread.name is. process.command would be argv[0]
 *   from /proc/pid/cmdline, which lowprof does not record. The cgroup path
 *   has no semantic convention and is left out (container.id and
 *   k8s.pod.uid, derived from it, are on the resource).
 * - Locations carry profile.frame.type, "kernel" or "native", as the
 *   OpenTelemetry eBPF profiler sends them.
 * - Attribute values are inline strings (AnyValue.string_value), not
 *   string_value_strindex: the latter is newer and profiles-only, and every
 *   distinct (key, value) is in the attribute table once anyway.
 * - Samples of one resource with the same identity (stack, attributes) are
 *   merged by adding their values, as the data model asks: two lowprof
 *   stacks can differ only in their cgroup.
 * - No profile_id: it is optional, and a made-up one would not be unique.
 */
#include <errno.h>
#include <stdalign.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/hash.h"

#include "exp.h"
#include "otlp_profiles_service.pb-c.h"

#ifndef LOWPROF_VERSION
#define LOWPROF_VERSION "0"
#endif

typedef Opentelemetry__Proto__Common__V1__AnyValue ot_any;
typedef Opentelemetry__Proto__Common__V1__KeyValue ot_kv;
typedef Opentelemetry__Proto__Common__V1__InstrumentationScope ot_scope;
typedef Opentelemetry__Proto__Resource__V1__Resource ot_resource;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary ot_dict;
typedef Opentelemetry__Proto__Profiles__V1development__ResourceProfiles ot_rprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__ScopeProfiles ot_sprofiles;
typedef Opentelemetry__Proto__Profiles__V1development__Profile ot_profile;
typedef Opentelemetry__Proto__Profiles__V1development__Link ot_link;
typedef Opentelemetry__Proto__Profiles__V1development__ValueType ot_vtype;
typedef Opentelemetry__Proto__Profiles__V1development__Sample ot_sample;
typedef Opentelemetry__Proto__Profiles__V1development__Mapping ot_mapping;
typedef Opentelemetry__Proto__Profiles__V1development__Stack ot_stack;
typedef Opentelemetry__Proto__Profiles__V1development__Location ot_location;
typedef Opentelemetry__Proto__Profiles__V1development__Line ot_line;
typedef Opentelemetry__Proto__Profiles__V1development__Function ot_function;
typedef Opentelemetry__Proto__Profiles__V1development__KeyValueAndUnit ot_kvu;
typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest
	ot_request;

#define OT_ANY_INIT	  OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__INIT
#define OT_ANY_STRING	  OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE
#define OT_ANY_INT	  OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE
#define OT_KV_INIT	  OPENTELEMETRY__PROTO__COMMON__V1__KEY_VALUE__INIT
#define OT_SCOPE_INIT	  OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT
#define OT_RESOURCE_INIT  OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT
#define OT_DICT_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILES_DICTIONARY__INIT
#define OT_RPROFILES_INIT OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__RESOURCE_PROFILES__INIT
#define OT_SPROFILES_INIT OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SCOPE_PROFILES__INIT
#define OT_PROFILE_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__PROFILE__INIT
#define OT_LINK_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINK__INIT
#define OT_VTYPE_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__VALUE_TYPE__INIT
#define OT_SAMPLE_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__SAMPLE__INIT
#define OT_MAPPING_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__MAPPING__INIT
#define OT_STACK_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__STACK__INIT
#define OT_LOCATION_INIT  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LOCATION__INIT
#define OT_LINE_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__LINE__INIT
#define OT_FUNCTION_INIT  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__FUNCTION__INIT
#define OT_KVU_INIT	  OPENTELEMETRY__PROTO__PROFILES__V1DEVELOPMENT__KEY_VALUE_AND_UNIT__INIT
#define OT_REQUEST_INIT                                                                            \
	OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_REQUEST__INIT

/* Semantic-convention attribute keys. */
#define OT_K_HOST	"host.name"
#define OT_K_SERVICE	"service.name"
#define OT_K_PID	"process.pid"
#define OT_K_EXE_PATH	"process.executable.path"
#define OT_K_EXE_NAME	"process.executable.name"
#define OT_K_CONTAINER	"container.id"
#define OT_K_POD	"k8s.pod.uid"
#define OT_K_BUILD_ID	"process.executable.build_id.gnu"
#define OT_K_FRAME_TYPE "profile.frame.type"
#define OT_K_THREAD	"thread.name"
#define OT_NRES_ATTRS	7 /* the resource attributes above */

#define OT_SERVICE_LEN 256 /* exp_service_name's buffer, terminator included */

/* ---- arena --------------------------------------------------------------- */

#define OT_BLK_SIZE (64 * 1024)

struct ot_blk {
	struct ot_blk *next;
	size_t used, cap;
	max_align_t data[];
};

/*
 * Open-addressing index over a table's entries, sized once for the most
 * entries the table can get (so at most half full, never grown): a slot
 * holds entry index + 1, 0 when empty.
 */
struct ot_index {
	uint32_t *slots;
	size_t mask;
};

struct ot_build {
	const struct lpw_profile *p;
	const struct exp_identity *id;
	struct ot_blk *blk; /* the arena: every allocation below */
	uint64_t seed;
	int vi; /* which values[] the profile carries */

	/* dictionary tables; entry 0 the zero value */
	char **strs;
	size_t nstrs;
	struct ot_index str_ix;
	ot_function **funcs;
	size_t nfuncs;
	struct ot_index func_ix;
	ot_kvu **attrs;
	size_t nattrs;
	struct ot_index attr_ix;
	ot_stack **stacks;
	size_t nstacks;
	struct ot_index stack_ix;
	ot_mapping **maps;
	size_t nmaps;
	ot_location **locs;
	size_t nlocs;
	int32_t *map_of; /* per p->mappings: its mapping_table index, 0 if unused */
	int32_t *loc_of; /* per p->locations: its location_table index, 0 if unused */

	/* resources: groups of stacks, each named by its first stack */
	uint32_t *group_first;
	size_t ngroups;
	struct ot_index group_ix;

	/* samples of all resources, in first-seen order; sample_group[i] is i's group */
	ot_sample **samples;
	uint32_t *sample_group;
	size_t nsamples;
	struct ot_index sample_ix;
};

/* n zeroed objects of size bytes from the arena, or NULL (out of memory). */
static void *ot_alloc(struct ot_build *b, size_t n, size_t size)
{
	const size_t align = alignof(max_align_t);
	struct ot_blk *blk = b->blk, *nb;
	size_t bytes;
	void *ret;

	if (size && n > (SIZE_MAX - OT_BLK_SIZE - sizeof(*nb)) / size)
		return NULL;
	bytes = (n * size + align - 1) & ~(align - 1);
	if (bytes > OT_BLK_SIZE / 4) {
		/* a block of its own, behind the current one */
		nb = calloc(1, sizeof(*nb) + bytes);
		if (!nb)
			return NULL;
		nb->used = nb->cap = bytes;
		if (blk) {
			nb->next = blk->next;
			blk->next = nb;
		} else {
			b->blk = nb;
		}
		return nb->data;
	}
	if (!blk || blk->cap - blk->used < bytes) {
		nb = calloc(1, sizeof(*nb) + OT_BLK_SIZE);
		if (!nb)
			return NULL;
		nb->cap = OT_BLK_SIZE;
		nb->next = blk;
		b->blk = blk = nb;
	}
	ret = (unsigned char *)blk->data + blk->used;
	blk->used += bytes;
	return ret;
}

static void ot_free(struct ot_build *b)
{
	struct ot_blk *blk = b->blk, *next;

	for (; blk; blk = next) {
		next = blk->next;
		free(blk);
	}
	b->blk = NULL;
}

/* ---- interning ----------------------------------------------------------- */

static int ot_index_init(struct ot_build *b, struct ot_index *ix, size_t max_entries)
{
	size_t n = 16;

	while (n < 2 * max_entries)
		n *= 2;
	ix->slots = ot_alloc(b, n, sizeof(*ix->slots));
	ix->mask = n - 1;
	return ix->slots ? 0 : -ENOMEM;
}

/*
 * The slot of the entry eq() finds equal to key (*slot = its index + 1), or
 * the empty slot where it goes (*slot == 0).
 */
static uint32_t *ot_slot(const struct ot_build *b, const struct ot_index *ix, uint64_t h,
			 bool (*eq)(const struct ot_build *b, uint32_t e, const void *key),
			 const void *key)
{
	size_t i;

	for (i = h & ix->mask; ix->slots[i]; i = (i + 1) & ix->mask)
		if (eq(b, ix->slots[i] - 1, key))
			return &ix->slots[i];
	return &ix->slots[i];
}

static bool ot_str_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	return strcmp(b->strs[e], key) == 0;
}

/* The string table index of s (NULL: ""), adding it if new. */
static int32_t ot_str(struct ot_build *b, const char *s)
{
	uint32_t *slot;

	s = s ? s : "";
	slot = ot_slot(b, &b->str_ix, lp_hash_bytes(b->seed, s, strlen(s)), ot_str_eq, s);
	if (!*slot) {
		/* borrowed: the profile's strings and literals outlive the build */
		b->strs[b->nstrs] = (char *)s;
		*slot = ++b->nstrs;
	}
	return (int32_t)(*slot - 1);
}

static bool ot_func_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	const ot_function *f = b->funcs[e], *k = key;

	return f->name_strindex == k->name_strindex && f->filename_strindex == k->filename_strindex;
}

/*
 * The function table index of (name, file), adding it if new. A Function
 * is its name and source file: the same name in two binaries is one item,
 * as the dictionary wants items distinct by value. The system name is left
 * empty (we have demangled names only).
 */
static int32_t ot_func(struct ot_build *b, const char *name, const char *file)
{
	ot_function k = OT_FUNCTION_INIT;
	uint32_t *slot;
	uint64_t h;

	k.name_strindex = ot_str(b, name);
	k.filename_strindex = ot_str(b, file);
	h = lp_mix64(b->seed ^
		     ((uint64_t)(uint32_t)k.name_strindex << 32 | (uint32_t)k.filename_strindex));
	slot = ot_slot(b, &b->func_ix, h, ot_func_eq, &k);
	if (!*slot) {
		*b->funcs[b->nfuncs] = k;
		*slot = ++b->nfuncs;
	}
	return (int32_t)(*slot - 1);
}

static bool ot_attr_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	const ot_kvu *a = b->attrs[e], *k = key;

	return a->key_strindex == k->key_strindex &&
	       strcmp(a->value->string_value, k->value->string_value) == 0;
}

/* The attribute table index of key = string value val, adding it if new. */
static int32_t ot_attr(struct ot_build *b, const char *key, const char *val)
{
	ot_any kv = OT_ANY_INIT;
	ot_kvu k = OT_KVU_INIT;
	uint32_t *slot;
	uint64_t h;

	kv.value_case = OT_ANY_STRING;
	kv.string_value = (char *)val;
	k.key_strindex = ot_str(b, key);
	k.value = &kv;
	h = lp_hash_bytes(b->seed ^ (uint32_t)k.key_strindex, val, strlen(val));
	slot = ot_slot(b, &b->attr_ix, h, ot_attr_eq, &k);
	if (!*slot) {
		/* entries and their values were allocated with the table */
		ot_kvu *a = b->attrs[b->nattrs];

		*a->value = kv;
		a->key_strindex = k.key_strindex;
		*slot = ++b->nattrs;
	}
	return (int32_t)(*slot - 1);
}

static bool ot_stack_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	const ot_stack *s = b->stacks[e], *k = key;

	return s->n_location_indices == k->n_location_indices &&
	       memcmp(s->location_indices, k->location_indices,
		      k->n_location_indices * sizeof(*k->location_indices)) == 0;
}

/*
 * The stack table index of the dictionary locations of st's (leaf first),
 * adding it if new; 0 (the empty Stack{}) for an empty stack.
 */
static int ot_stack_of(struct ot_build *b, const struct lpw_stack *st, int32_t *ix)
{
	ot_stack k = OT_STACK_INIT;
	uint32_t *slot;

	*ix = 0;
	if (!st->nlocs)
		return 0;
	k.location_indices = ot_alloc(b, st->nlocs, sizeof(*k.location_indices));
	if (!k.location_indices)
		return -ENOMEM;
	k.n_location_indices = st->nlocs;
	for (uint32_t i = 0; i < st->nlocs; i++)
		k.location_indices[i] = b->loc_of[st->locs[i]];
	slot = ot_slot(b, &b->stack_ix,
		       lp_hash_bytes(b->seed, k.location_indices,
				     k.n_location_indices * sizeof(*k.location_indices)),
		       ot_stack_eq, &k);
	if (!*slot) {
		*b->stacks[b->nstacks] = k;
		*slot = ++b->nstacks;
	} /* else the copy stays in the arena until the end: one stack's worth */
	*ix = (int32_t)(*slot - 1);
	return 0;
}

/* ---- checking and sizing ------------------------------------------------- */

/* NULL for an unknown label: lowprof's labels are NULL or "" when unknown. */
static const char *ot_opt(const char *s)
{
	return s && *s ? s : NULL;
}

/*
 * Checks every index and pointer the request is built from; -EINVAL on the
 * first bad one, or when a table could outgrow the int32 indices of the
 * wire format. *nfunc_max gets the most functions the locations can name.
 */
static int ot_check(const struct lpw_profile *p, size_t *nfunc_max)
{
	uint64_t nfunc = 0;
	size_t i;

	if (p->folded_value < 0 || p->folded_value > 1)
		return -EINVAL;
	if ((p->nmappings && !p->mappings) || (p->nlocations && !p->locations) ||
	    (p->nstacks && !p->stacks))
		return -EINVAL;
	if (p->nmappings >= INT32_MAX / 4 || p->nlocations >= INT32_MAX / 4 ||
	    p->nstacks >= INT32_MAX / 4)
		return -EINVAL;
	for (i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		if (l->mapping != LPW_NO_MAPPING && l->mapping >= p->nmappings)
			return -EINVAL;
		if (!l->function || (l->nlines && !l->lines))
			return -EINVAL;
		for (uint32_t j = 0; j < l->nlines; j++)
			if (!l->lines[j].function)
				return -EINVAL;
		nfunc += l->nlines ? l->nlines : 1;
	}
	/* each function adds up to two strings, and the string table is the largest */
	if (nfunc >= INT32_MAX / 4)
		return -EINVAL;
	for (i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *s = &p->stacks[i];

		if (!s->comm || (s->nlocs && !s->locs))
			return -EINVAL;
		for (uint32_t j = 0; j < s->nlocs; j++)
			if (s->locs[j] >= p->nlocations)
				return -EINVAL;
	}
	*nfunc_max = nfunc;
	return 0;
}

/*
 * Allocates every table at its largest size and puts in the zero values at
 * index 0.
 */
static int ot_init(struct ot_build *b, size_t nfunc_max)
{
	const struct lpw_profile *p = b->p;
	/* "", 4 value type strings, 3 dictionary attribute keys, mapping paths, functions */
	size_t nstr_max = 8 + p->nmappings + 2 * nfunc_max;
	size_t nattr_max = 1 + p->nmappings + 2 + p->nstacks;
	size_t nstack_max = 1 + p->nstacks;
	ot_function *funcs;
	ot_stack *stacks;
	ot_kvu *attrs;
	ot_any *vals;
	size_t i;
	int err;

	/* hashes are seeded: symbol names come from files others write (no flooding) */
	b->seed = lp_mix64((uintptr_t)b ^ (uintptr_t)&ot_init);
	b->strs = ot_alloc(b, nstr_max, sizeof(*b->strs));
	b->funcs = ot_alloc(b, 1 + nfunc_max, sizeof(*b->funcs));
	funcs = ot_alloc(b, 1 + nfunc_max, sizeof(*funcs));
	b->attrs = ot_alloc(b, nattr_max, sizeof(*b->attrs));
	attrs = ot_alloc(b, nattr_max, sizeof(*attrs));
	vals = ot_alloc(b, nattr_max, sizeof(*vals));
	b->stacks = ot_alloc(b, nstack_max, sizeof(*b->stacks));
	stacks = ot_alloc(b, nstack_max, sizeof(*stacks));
	b->map_of = ot_alloc(b, p->nmappings, sizeof(*b->map_of));
	b->loc_of = ot_alloc(b, p->nlocations, sizeof(*b->loc_of));
	b->group_first = ot_alloc(b, p->nstacks, sizeof(*b->group_first));
	b->samples = ot_alloc(b, p->nstacks, sizeof(*b->samples));
	b->sample_group = ot_alloc(b, p->nstacks, sizeof(*b->sample_group));
	if (!b->strs || !b->funcs || !funcs || !b->attrs || !attrs || !vals || !b->stacks ||
	    !stacks || !b->map_of || !b->loc_of || !b->group_first || !b->samples ||
	    !b->sample_group)
		return -ENOMEM;
	if ((err = ot_index_init(b, &b->str_ix, nstr_max)) ||
	    (err = ot_index_init(b, &b->func_ix, 1 + nfunc_max)) ||
	    (err = ot_index_init(b, &b->attr_ix, nattr_max)) ||
	    (err = ot_index_init(b, &b->stack_ix, nstack_max)) ||
	    (err = ot_index_init(b, &b->group_ix, p->nstacks)) ||
	    (err = ot_index_init(b, &b->sample_ix, p->nstacks)))
		return err;

	for (i = 0; i < 1 + nfunc_max; i++) {
		funcs[i] = (ot_function)OT_FUNCTION_INIT;
		b->funcs[i] = &funcs[i];
	}
	for (i = 0; i < nattr_max; i++) {
		attrs[i] = (ot_kvu)OT_KVU_INIT;
		vals[i] = (ot_any)OT_ANY_INIT;
		b->attrs[i] = &attrs[i];
		if (i) /* the zero value has no value */
			attrs[i].value = &vals[i];
	}
	for (i = 0; i < nstack_max; i++) {
		stacks[i] = (ot_stack)OT_STACK_INIT;
		b->stacks[i] = &stacks[i];
	}
	/* the zero values: "" and the entries just initialized */
	ot_str(b, "");
	b->nfuncs = b->nattrs = b->nstacks = 1;
	return 0;
}

/* ---- the dictionary ------------------------------------------------------ */

/* Marks the locations the stacks use and the mappings those use. */
static void ot_mark(struct ot_build *b)
{
	const struct lpw_profile *p = b->p;

	for (size_t i = 0; i < p->nstacks; i++)
		for (uint32_t j = 0; j < p->stacks[i].nlocs; j++)
			b->loc_of[p->stacks[i].locs[j]] = 1;
	for (size_t i = 0; i < p->nlocations; i++)
		if (b->loc_of[i] && p->locations[i].mapping != LPW_NO_MAPPING)
			b->map_of[p->locations[i].mapping] = 1;
}

/* The mapping table: index 0 Mapping{}, then the used mappings in input order. */
static int ot_mappings(struct ot_build *b)
{
	const struct lpw_profile *p = b->p;
	ot_mapping *maps = ot_alloc(b, 1 + p->nmappings, sizeof(*maps));
	int32_t *attr = ot_alloc(b, p->nmappings, sizeof(*attr));

	b->maps = ot_alloc(b, 1 + p->nmappings, sizeof(*b->maps));
	if (!maps || !attr || !b->maps)
		return -ENOMEM;
	maps[0] = (ot_mapping)OT_MAPPING_INIT;
	b->maps[0] = &maps[0];
	b->nmaps = 1;
	for (size_t i = 0; i < p->nmappings; i++) {
		const struct lpw_mapping *m = &p->mappings[i];
		ot_mapping *o = &maps[b->nmaps];

		if (!b->map_of[i])
			continue;
		*o = (ot_mapping)OT_MAPPING_INIT;
		o->memory_start = m->start;
		o->memory_limit = m->limit;
		o->file_offset = m->file_offset;
		o->filename_strindex = ot_str(b, m->path);
		if (ot_opt(m->build_id)) {
			attr[i] = ot_attr(b, OT_K_BUILD_ID, m->build_id);
			o->attribute_indices = &attr[i];
			o->n_attribute_indices = 1;
		}
		b->maps[b->nmaps] = o;
		b->map_of[i] = (int32_t)b->nmaps++;
	}
	return 0;
}

/*
 * The location table: index 0 Location{}, then the used locations in input
 * order. A location's lines are its source frames, innermost first (both
 * models' order), or one line naming its function when it has none.
 */
static int ot_locations(struct ot_build *b)
{
	const struct lpw_profile *p = b->p;
	ot_location *locs = ot_alloc(b, 1 + p->nlocations, sizeof(*locs));
	int32_t *attr = ot_alloc(b, p->nlocations, sizeof(*attr));

	b->locs = ot_alloc(b, 1 + p->nlocations, sizeof(*b->locs));
	if (!locs || !attr || !b->locs)
		return -ENOMEM;
	locs[0] = (ot_location)OT_LOCATION_INIT;
	b->locs[0] = &locs[0];
	b->nlocs = 1;
	for (size_t i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];
		ot_location *o = &locs[b->nlocs];
		uint32_t nlines = l->nlines ? l->nlines : 1;
		ot_line *lines, **plines;

		if (!b->loc_of[i])
			continue;
		lines = ot_alloc(b, nlines, sizeof(*lines));
		plines = ot_alloc(b, nlines, sizeof(*plines));
		if (!lines || !plines)
			return -ENOMEM;
		*o = (ot_location)OT_LOCATION_INIT;
		if (l->mapping != LPW_NO_MAPPING)
			o->mapping_index = b->map_of[l->mapping];
		o->address = l->address;
		for (uint32_t j = 0; j < nlines; j++) {
			lines[j] = (ot_line)OT_LINE_INIT;
			if (l->nlines) {
				lines[j].function_index =
					ot_func(b, l->lines[j].function, l->lines[j].file);
				lines[j].line = l->lines[j].line;
			} else {
				lines[j].function_index = ot_func(b, l->function, NULL);
			}
			plines[j] = &lines[j];
		}
		o->lines = plines;
		o->n_lines = nlines;
		attr[i] = ot_attr(b, OT_K_FRAME_TYPE, l->kernel ? "kernel" : "native");
		o->attribute_indices = &attr[i];
		o->n_attribute_indices = 1;
		b->locs[b->nlocs] = o;
		b->loc_of[i] = (int32_t)b->nlocs++;
	}
	return 0;
}

/* ---- resources and samples ----------------------------------------------- */

static bool ot_same(const char *a, const char *b)
{
	a = ot_opt(a);
	b = ot_opt(b);
	return a == b || (a && b && strcmp(a, b) == 0);
}

static uint64_t ot_hash_opt(uint64_t h, const char *s)
{
	s = ot_opt(s);
	return s ? lp_hash_bytes(h, s, strlen(s) + 1) : lp_mix64(h ^ 1);
}

/* A resource is a process: pid, executable, container id, pod uid. */
static bool ot_group_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	const struct lpw_stack *g = &b->p->stacks[b->group_first[e]], *s = key;

	return g->pid == s->pid && ot_same(g->exe, s->exe) &&
	       ot_same(g->container_id, s->container_id) && ot_same(g->pod_uid, s->pod_uid);
}

static uint32_t ot_group(struct ot_build *b, size_t stack)
{
	const struct lpw_stack *s = &b->p->stacks[stack];
	uint32_t *slot;
	uint64_t h = lp_mix64(b->seed ^ s->pid);

	h = ot_hash_opt(ot_hash_opt(ot_hash_opt(h, s->exe), s->container_id), s->pod_uid);
	slot = ot_slot(b, &b->group_ix, h, ot_group_eq, s);
	if (!*slot) {
		b->group_first[b->ngroups] = (uint32_t)stack;
		*slot = ++b->ngroups;
	}
	return *slot - 1;
}

/* A sample's identity within its resource: stack and attributes (no links here). */
struct ot_sample_key {
	uint32_t group;
	int32_t stack, attr; /* attr 0: no attribute */
};

static bool ot_sample_eq(const struct ot_build *b, uint32_t e, const void *key)
{
	const ot_sample *s = b->samples[e];
	const struct ot_sample_key *k = key;
	int32_t attr = s->n_attribute_indices ? s->attribute_indices[0] : 0;

	return b->sample_group[e] == k->group && s->stack_index == k->stack && attr == k->attr;
}

static int64_t ot_add_sat(int64_t a, int64_t v)
{
	int64_t r;

	if (__builtin_add_overflow(a, v, &r))
		return v < 0 ? INT64_MIN : INT64_MAX;
	return r;
}

/*
 * Samples, in the order of the stacks: each stack goes to its resource's
 * sample of the same identity, or a new one.
 */
static int ot_samples(struct ot_build *b)
{
	const struct lpw_profile *p = b->p;
	ot_sample *mem = ot_alloc(b, p->nstacks, sizeof(*mem));
	int64_t *vals = ot_alloc(b, p->nstacks, sizeof(*vals));
	int32_t *attrs = ot_alloc(b, p->nstacks, sizeof(*attrs));

	if (!mem || !vals || !attrs)
		return -ENOMEM;
	for (size_t i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		struct ot_sample_key k = {.group = ot_group(b, i)};
		uint32_t *slot;
		uint64_t h;
		int err;

		err = ot_stack_of(b, st, &k.stack);
		if (err)
			return err;
		if (*st->comm)
			k.attr = ot_attr(b, OT_K_THREAD, st->comm);
		h = lp_mix64(b->seed ^ ((uint64_t)k.group << 32 | (uint32_t)k.stack));
		slot = ot_slot(b, &b->sample_ix, lp_mix64(h ^ (uint32_t)k.attr), ot_sample_eq, &k);
		if (*slot) {
			ot_sample *s = b->samples[*slot - 1];

			s->values[0] = ot_add_sat(s->values[0], st->values[b->vi]);
		} else {
			ot_sample *s = &mem[b->nsamples];

			*s = (ot_sample)OT_SAMPLE_INIT;
			s->stack_index = k.stack;
			if (k.attr) {
				attrs[b->nsamples] = k.attr;
				s->attribute_indices = &attrs[b->nsamples];
				s->n_attribute_indices = 1;
			}
			vals[b->nsamples] = st->values[b->vi];
			s->values = &vals[b->nsamples];
			s->n_values = 1;
			b->samples[b->nsamples] = s;
			b->sample_group[b->nsamples] = k.group;
			*slot = ++b->nsamples;
		}
	}
	return 0;
}

static void ot_kv_str(ot_kv *kv, ot_any *v, const char *key, const char *val)
{
	*kv = (ot_kv)OT_KV_INIT;
	*v = (ot_any)OT_ANY_INIT;
	kv->key = (char *)key;
	kv->value = v;
	v->value_case = OT_ANY_STRING;
	v->string_value = (char *)val;
}

/*
 * The resource of group g: the semantic conventions' attributes of the
 * host, service, process, container and pod, those known.
 */
static int ot_resource_of(struct ot_build *b, uint32_t g, ot_resource *res)
{
	const struct lpw_stack *s = &b->p->stacks[b->group_first[g]];
	ot_kv *kvs = ot_alloc(b, OT_NRES_ATTRS, sizeof(*kvs));
	ot_kv **pkvs = ot_alloc(b, OT_NRES_ATTRS, sizeof(*pkvs));
	ot_any *vals = ot_alloc(b, OT_NRES_ATTRS, sizeof(*vals));
	char *service = ot_alloc(b, OT_SERVICE_LEN, 1);
	const char *exe = ot_opt(s->exe);
	size_t n = 0;

	if (!kvs || !pkvs || !vals || !service)
		return -ENOMEM;
	exp_service_name(b->id, s, service, OT_SERVICE_LEN);
	ot_kv_str(&kvs[n], &vals[n], OT_K_HOST, b->id->host_name);
	n++;
	ot_kv_str(&kvs[n], &vals[n], OT_K_SERVICE, service);
	n++;
	ot_kv_str(&kvs[n], &vals[n], OT_K_PID, NULL);
	vals[n].value_case = OT_ANY_INT;
	vals[n].int_value = s->pid;
	n++;
	if (exe) {
		const char *base = strrchr(exe, '/');

		base = base ? base + 1 : exe;
		ot_kv_str(&kvs[n], &vals[n], OT_K_EXE_PATH, exe);
		n++;
		if (*base) {
			ot_kv_str(&kvs[n], &vals[n], OT_K_EXE_NAME, base);
			n++;
		}
	}
	if (ot_opt(s->container_id)) {
		ot_kv_str(&kvs[n], &vals[n], OT_K_CONTAINER, s->container_id);
		n++;
	}
	if (ot_opt(s->pod_uid)) {
		ot_kv_str(&kvs[n], &vals[n], OT_K_POD, s->pod_uid);
		n++;
	}
	for (size_t i = 0; i < n; i++)
		pkvs[i] = &kvs[i];
	*res = (ot_resource)OT_RESOURCE_INIT;
	res->attributes = pkvs;
	res->n_attributes = n;
	return 0;
}

/* ---- the request --------------------------------------------------------- */

/*
 * One ResourceProfiles per group, each with one ScopeProfiles holding one
 * Profile of the group's samples, in the order the groups were found. The
 * scope, sample type and period type are shared (packing only reads them).
 */
static int ot_resources(struct ot_build *b, ot_request *req)
{
	const struct lpw_profile *p = b->p;
	const size_t ng = b->ngroups;
	ot_rprofiles *rps = ot_alloc(b, ng, sizeof(*rps));
	ot_rprofiles **prps = ot_alloc(b, ng, sizeof(*prps));
	ot_resource *res = ot_alloc(b, ng, sizeof(*res));
	ot_sprofiles *sps = ot_alloc(b, ng, sizeof(*sps));
	ot_sprofiles **psps = ot_alloc(b, ng, sizeof(*psps));
	ot_profile *profs = ot_alloc(b, ng, sizeof(*profs));
	ot_profile **pprofs = ot_alloc(b, ng, sizeof(*pprofs));
	ot_sample **by_group = ot_alloc(b, b->nsamples, sizeof(*by_group));
	size_t *start = ot_alloc(b, ng + 1, sizeof(*start));
	ot_scope *scope = ot_alloc(b, 1, sizeof(*scope));
	ot_vtype *vt = ot_alloc(b, 2, sizeof(*vt));
	int err;

	if (!rps || !prps || !res || !sps || !psps || !profs || !pprofs || !by_group || !start ||
	    !scope || !vt)
		return -ENOMEM;
	*scope = (ot_scope)OT_SCOPE_INIT;
	scope->name = "lowprof";
	scope->version = LOWPROF_VERSION;
	vt[0] = (ot_vtype)OT_VTYPE_INIT;
	vt[0].type_strindex = ot_str(b, p->value_types[b->vi].type);
	vt[0].unit_strindex = ot_str(b, p->value_types[b->vi].unit);
	vt[1] = (ot_vtype)OT_VTYPE_INIT;
	vt[1].type_strindex = ot_str(b, p->period_type.type);
	vt[1].unit_strindex = ot_str(b, p->period_type.unit);

	/* samples grouped by resource, first-seen order kept within each (counting sort) */
	for (size_t i = 0; i < b->nsamples; i++)
		start[b->sample_group[i] + 1]++;
	for (size_t g = 0; g < ng; g++)
		start[g + 1] += start[g];
	for (size_t i = 0; i < b->nsamples; i++)
		by_group[start[b->sample_group[i]]++] = b->samples[i];
	/* start[g] is now the end of g: the beginning of g + 1 */

	for (size_t g = 0; g < ng; g++) {
		size_t first = g ? start[g - 1] : 0;
		ot_profile *pr = &profs[g];

		err = ot_resource_of(b, (uint32_t)g, &res[g]);
		if (err)
			return err;
		*pr = (ot_profile)OT_PROFILE_INIT;
		pr->sample_type = &vt[0];
		pr->samples = &by_group[first];
		pr->n_samples = start[g] - first;
		pr->time_unix_nano = p->time_nanos > 0 ? (uint64_t)p->time_nanos : 0;
		pr->duration_nano = p->duration_nanos > 0 ? (uint64_t)p->duration_nanos : 0;
		pr->period_type = &vt[1];
		pr->period = p->period;
		pprofs[g] = pr;

		sps[g] = (ot_sprofiles)OT_SPROFILES_INIT;
		sps[g].scope = scope;
		sps[g].profiles = &pprofs[g];
		sps[g].n_profiles = 1;
		psps[g] = &sps[g];

		rps[g] = (ot_rprofiles)OT_RPROFILES_INIT;
		rps[g].resource = &res[g];
		rps[g].scope_profiles = &psps[g];
		rps[g].n_scope_profiles = 1;
		prps[g] = &rps[g];
	}
	req->resource_profiles = prps;
	req->n_resource_profiles = ng;
	return 0;
}

/*
 * The dictionary, once every table is complete. link_table[0] is the zero
 * Link with ids of their proper lengths, as the data model recommends for
 * codecs that check them.
 */
static int ot_dictionary(struct ot_build *b, ot_request *req)
{
	static const uint8_t zero_id[16];
	ot_dict *d = ot_alloc(b, 1, sizeof(*d));
	ot_link *link = ot_alloc(b, 1, sizeof(*link));
	ot_link **plink = ot_alloc(b, 1, sizeof(*plink));

	if (!d || !link || !plink)
		return -ENOMEM;
	*link = (ot_link)OT_LINK_INIT;
	link->trace_id.data = (uint8_t *)zero_id;
	link->trace_id.len = 16;
	link->span_id.data = (uint8_t *)zero_id;
	link->span_id.len = 8;
	*plink = link;

	*d = (ot_dict)OT_DICT_INIT;
	d->mapping_table = b->maps;
	d->n_mapping_table = b->nmaps;
	d->location_table = b->locs;
	d->n_location_table = b->nlocs;
	d->function_table = b->funcs;
	d->n_function_table = b->nfuncs;
	d->link_table = plink;
	d->n_link_table = 1;
	d->string_table = b->strs;
	d->n_string_table = b->nstrs;
	d->attribute_table = b->attrs;
	d->n_attribute_table = b->nattrs;
	d->stack_table = b->stacks;
	d->n_stack_table = b->nstacks;
	req->dictionary = d;
	return 0;
}

static int ot_pack(ot_request *req, uint8_t **out, size_t *len)
{
	size_t n = protobuf_c_message_get_packed_size(&req->base);
	uint8_t *buf = malloc(n ? n : 1);

	if (!buf)
		return -ENOMEM;
	if (protobuf_c_message_pack(&req->base, buf) != n) {
		free(buf);
		return -EINVAL;
	}
	*out = buf;
	*len = n;
	return 0;
}

int exp_otlp_encode(const struct lpw_profile *p, const struct exp_identity *id, uint8_t **out,
		    size_t *len)
{
	ot_request req = OT_REQUEST_INIT;
	struct ot_build b = {.p = p, .id = id};
	size_t nfunc_max = 0;
	int err;

	if (!out || !len)
		return -EINVAL;
	*out = NULL;
	*len = 0;
	if (!p || !id || !id->host_name)
		return -EINVAL;
	err = ot_check(p, &nfunc_max);
	if (err)
		return err;
	b.vi = p->folded_value;
	err = ot_init(&b, nfunc_max);
	if (!err) {
		ot_mark(&b);
		err = ot_mappings(&b);
	}
	if (!err)
		err = ot_locations(&b);
	if (!err)
		err = ot_samples(&b);
	if (!err)
		err = ot_resources(&b, &req);
	if (!err)
		err = ot_dictionary(&b, &req);
	if (!err)
		err = ot_pack(&req, out, len);
	ot_free(&b);
	return err;
}
