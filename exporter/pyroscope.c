// SPDX-License-Identifier: MIT
/*
 * Pyroscope push requests (exp.h): a window's profile split into series, one
 * gzip'd pprof each.
 *
 * A series is what Pyroscope stores and queries as one: its labels name the
 * profile type and the service. Stacks of different services or containers
 * go to different series; pid, comm, exe and cgroup stay sample labels
 * inside each series' pprof, as the spool file has them. Pyroscope's
 * distributor lifts the string ones (comm, exe, cgroup) into series labels,
 * not pid, a number label: short processes do not multiply series.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exp.h"
#include "pyroscope_push.pb-c.h"

#define SERVICE_MAX 128

struct series {
	char service[SERVICE_MAX];
	const char *container_id, *pod_uid; /* in the profile, or NULL */
	uint32_t *stacks;		    /* indices into p->stacks */
	size_t nstacks;
};

static int streq0(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* The series stack s belongs to, made if new; NULL on no memory. */
static struct series *series_of(struct series **v, size_t *n, const struct exp_identity *id,
				const struct lpw_stack *s)
{
	char name[SERVICE_MAX];
	struct series *grown;

	exp_service_name(id, s, name, sizeof(name));
	for (size_t i = 0; i < *n; i++) {
		struct series *x = &(*v)[i];

		if (!strcmp(x->service, name) && streq0(x->container_id, s->container_id) &&
		    streq0(x->pod_uid, s->pod_uid))
			return x;
	}
	grown = realloc(*v, (*n + 1) * sizeof(**v));
	if (!grown)
		return NULL;
	*v = grown;
	memset(&grown[*n], 0, sizeof(grown[*n]));
	memcpy(grown[*n].service, name, sizeof(name));
	grown[*n].container_id = s->container_id;
	grown[*n].pod_uid = s->pod_uid;
	return &grown[(*n)++];
}

/*
 * The gzip'd pprof of p's stacks x->stacks only, with the mappings and
 * locations they use (renumbered) and p's header (types, time, comments).
 */
static int series_pprof(const struct lpw_profile *p, const struct series *x, uint8_t **out,
			size_t *len)
{
	struct lpw_profile sub = *p;
	uint32_t *loc_map = malloc(p->nlocations * sizeof(*loc_map) + 1);
	uint32_t *map_map = malloc(p->nmappings * sizeof(*map_map) + 1);
	struct lpw_location *locs = NULL;
	struct lpw_mapping *maps = NULL;
	struct lpw_stack *stacks = calloc(x->nstacks + 1, sizeof(*stacks));
	uint32_t *locidx = NULL;
	size_t nlocs = 0, nmaps = 0, total = 0, at = 0;
	int err = -ENOMEM;

	if (!loc_map || !map_map || !stacks)
		goto out;
	memset(loc_map, 0xff, p->nlocations * sizeof(*loc_map));
	memset(map_map, 0xff, p->nmappings * sizeof(*map_map));
	for (size_t i = 0; i < x->nstacks; i++)
		total += p->stacks[x->stacks[i]].nlocs;
	locidx = malloc(total * sizeof(*locidx) + 1);
	locs = malloc(p->nlocations * sizeof(*locs) + 1);
	maps = malloc(p->nmappings * sizeof(*maps) + 1);
	if (!locidx || !locs || !maps)
		goto out;
	err = -EINVAL;
	for (size_t i = 0; i < x->nstacks; i++) {
		const struct lpw_stack *s = &p->stacks[x->stacks[i]];

		stacks[i] = *s;
		stacks[i].locs = &locidx[at];
		for (uint32_t k = 0; k < s->nlocs; k++) {
			uint32_t l = s->locs[k];

			if (l >= p->nlocations)
				goto out;
			if (loc_map[l] == UINT32_MAX) {
				uint32_t m = p->locations[l].mapping;

				locs[nlocs] = p->locations[l];
				if (m != LPW_NO_MAPPING) {
					if (m >= p->nmappings)
						goto out;
					if (map_map[m] == UINT32_MAX) {
						maps[nmaps] = p->mappings[m];
						map_map[m] = (uint32_t)nmaps++;
					}
					locs[nlocs].mapping = map_map[m];
				}
				loc_map[l] = (uint32_t)nlocs++;
			}
			locidx[at++] = loc_map[l];
		}
	}
	sub.mappings = maps;
	sub.nmappings = nmaps;
	sub.locations = locs;
	sub.nlocations = nlocs;
	sub.stacks = stacks;
	sub.nstacks = x->nstacks;
	err = lpw_pprof_bytes(&sub, out, len);
out:
	free(loc_map);
	free(map_map);
	free(locs);
	free(maps);
	free(stacks);
	free(locidx);
	return err;
}

static void label(Push__V1__LabelPair *l, const char *name, const char *value)
{
	push__v1__label_pair__init(l);
	l->name = (char *)name;
	l->value = (char *)value;
}

int exp_pyroscope_encode(const struct lpw_profile *p, const struct exp_identity *id, uint8_t **out,
			 size_t *len)
{
	const char *type = strcmp(id->kind, "offcpu") ? "process_cpu" : "off_cpu";
	struct series *v = NULL;
	size_t n = 0;
	Push__V1__PushRequest req = PUSH__V1__PUSH_REQUEST__INIT;
	Push__V1__RawProfileSeries *ser = NULL, **serp = NULL;
	Push__V1__RawSample *raw = NULL, **rawp = NULL;
	Push__V1__LabelPair *labels = NULL, **labelp = NULL;
	uint8_t **gz = NULL;
	int err = -ENOMEM;

	*out = NULL;
	*len = 0;
	for (size_t i = 0; i < p->nstacks; i++) {
		struct series *x = series_of(&v, &n, id, &p->stacks[i]);
		uint32_t *grown;

		if (!x)
			goto out;
		grown = realloc(x->stacks, (x->nstacks + 1) * sizeof(*grown));
		if (!grown)
			goto out;
		x->stacks = grown;
		x->stacks[x->nstacks++] = (uint32_t)i;
	}
	ser = calloc(n + 1, sizeof(*ser));
	serp = calloc(n + 1, sizeof(*serp));
	raw = calloc(n + 1, sizeof(*raw));
	rawp = calloc(n + 1, sizeof(*rawp));
	labels = calloc(5 * n + 1, sizeof(*labels));
	labelp = calloc(5 * n + 1, sizeof(*labelp));
	gz = calloc(n + 1, sizeof(*gz));
	if (!ser || !serp || !raw || !rawp || !labels || !labelp || !gz)
		goto out;
	for (size_t i = 0; i < n; i++) {
		Push__V1__LabelPair *l = &labels[5 * i];
		size_t nl = 0, gzlen;

		push__v1__raw_profile_series__init(&ser[i]);
		push__v1__raw_sample__init(&raw[i]);
		err = series_pprof(p, &v[i], &gz[i], &gzlen);
		if (err)
			goto out;
		raw[i].raw_profile.data = gz[i];
		raw[i].raw_profile.len = gzlen;
		rawp[i] = &raw[i];
		/* Pyroscope wants them sorted by name, as Prometheus does */
		label(&l[nl++], "__name__", type);
		if (v[i].container_id)
			label(&l[nl++], "container_id", v[i].container_id);
		label(&l[nl++], "host_name", id->host_name);
		if (v[i].pod_uid)
			label(&l[nl++], "pod_uid", v[i].pod_uid);
		label(&l[nl++], "service_name", v[i].service);
		for (size_t k = 0; k < nl; k++)
			labelp[5 * i + k] = &l[k];
		ser[i].labels = &labelp[5 * i];
		ser[i].n_labels = nl;
		ser[i].samples = &rawp[i];
		ser[i].n_samples = 1;
		serp[i] = &ser[i];
	}
	req.series = serp;
	req.n_series = n;
	*len = push__v1__push_request__get_packed_size(&req);
	*out = malloc(*len + 1);
	if (!*out) {
		err = -ENOMEM;
		*len = 0;
		goto out;
	}
	push__v1__push_request__pack(&req, *out);
	err = 0;
out:
	for (size_t i = 0; gz && i < n; i++)
		free(gz[i]);
	for (size_t i = 0; i < n; i++)
		free(v[i].stacks);
	free(v);
	free(gz);
	free(ser);
	free(serp);
	free(raw);
	free(rawp);
	free(labels);
	free(labelp);
	return err;
}
