// SPDX-License-Identifier: MIT
/*
 * Ingest of the record stream into struct symb_state. Every record comes
 * from a less trusted side (the ring, a capture file): it is decoded by the
 * validating schema decoder, and every value used as an index or size here
 * is bounded again.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/log.h"
#include "symb_int.h"

#define MAX_MAPS_PER_PROC 65536

static uint64_t mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap = *cap ? *cap : 16;
	void *np;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	np = realloc(*p, (size_t)ncap * elem);
	if (!np)
		return -ENOMEM;
	*p = np;
	*cap = ncap;
	return 0;
}

void symb_state_init(struct symb_state *s)
{
	memset(s, 0, sizeof(*s));
}

void symb_state_free(struct symb_state *s)
{
	for (uint32_t i = 0; i < s->nobjs; i++) {
		free(s->objs[i].path);
		symb_elf__free(s->objs[i].elf);
	}
	free(s->objs);
	for (uint32_t i = 0; i < s->cap_procs; i++)
		free(s->procs[i].maps);
	free(s->procs);
	free(s->seen_pids);
	free(s->ksyms);
	free(s->ksym_names);
	free(s->aggs);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

/* ---- processes ---------------------------------------------------------- */

static struct symb_proc *proc_slot(struct symb_proc *t, uint32_t cap, uint32_t pid)
{
	for (uint32_t i = (uint32_t)mix64(pid) & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].used || t[i].pid == pid)
			return &t[i];
}

static struct symb_proc *proc_get(struct symb_state *s, uint32_t pid, bool create)
{
	struct symb_proc *p;

	if (s->cap_procs) {
		p = proc_slot(s->procs, s->cap_procs, pid);
		if (p->used || !create)
			return p->used ? p : NULL;
	} else if (!create) {
		return NULL;
	}
	if ((s->nprocs + 1) * 2 > s->cap_procs) {
		uint32_t ncap = s->cap_procs ? s->cap_procs * 2 : 256;
		struct symb_proc *n = calloc(ncap, sizeof(*n));

		if (!n)
			return NULL;
		for (uint32_t i = 0; i < s->cap_procs; i++)
			if (s->procs[i].used)
				*proc_slot(n, ncap, s->procs[i].pid) = s->procs[i];
		free(s->procs);
		s->procs = n;
		s->cap_procs = ncap;
	}
	p = proc_slot(s->procs, s->cap_procs, pid);
	memset(p, 0, sizeof(*p));
	p->used = true;
	p->pid = pid;
	s->nprocs++;
	return p;
}

/* Forgetting a process keeps its slot (pids are few; no tombstone logic). */
static void proc_clear_maps(struct symb_proc *p)
{
	free(p->maps);
	p->maps = NULL;
	p->nmaps = 0;
	p->has_maps = false;
}

static void note_pid_seen(struct symb_state *s, uint32_t pid)
{
	uint32_t key = pid + 1; /* 0 marks an empty slot */

	if ((s->nseen + 1) * 2 > s->cap_seen) {
		uint32_t ncap = s->cap_seen ? s->cap_seen * 2 : 256;
		uint32_t *n = calloc(ncap, sizeof(*n));

		if (!n)
			return;
		for (uint32_t i = 0; i < s->cap_seen; i++) {
			uint32_t k = s->seen_pids[i];

			if (!k)
				continue;
			for (uint32_t j = (uint32_t)mix64(k) & (ncap - 1);;
			     j = (j + 1) & (ncap - 1))
				if (!n[j]) {
					n[j] = k;
					break;
				}
		}
		free(s->seen_pids);
		s->seen_pids = n;
		s->cap_seen = ncap;
	}
	for (uint32_t j = (uint32_t)mix64(key) & (s->cap_seen - 1);;
	     j = (j + 1) & (s->cap_seen - 1)) {
		if (s->seen_pids[j] == key)
			return;
		if (!s->seen_pids[j]) {
			s->seen_pids[j] = key;
			s->nseen++;
			return;
		}
	}
}

/* ---- objects ------------------------------------------------------------ */

static uint32_t obj_intern(struct symb_state *s, const struct lps_mapping *m, uint32_t pid)
{
	/* linear: a host maps a few hundred distinct files at most */
	for (uint32_t i = 0; i < s->nobjs; i++) {
		struct symb_obj *o = &s->objs[i];

		if (o->inode == m->inode && o->dev_major == m->dev_major &&
		    o->dev_minor == m->dev_minor && strlen(o->path) == m->path.len &&
		    memcmp(o->path, m->path.ptr, m->path.len) == 0)
			return i;
	}
	if (grow((void **)&s->objs, &s->cap_objs, s->nobjs + 1, sizeof(*s->objs)))
		return UINT32_MAX;
	struct symb_obj *o = &s->objs[s->nobjs];

	memset(o, 0, sizeof(*o));
	o->path = strndup(m->path.ptr, m->path.len);
	if (!o->path)
		return UINT32_MAX;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->inode = m->inode;
	o->pid = pid;
	return s->nobjs++;
}

static int feed_maps(struct symb_state *s, struct lps_maps *rec)
{
	struct symb_proc *p = proc_get(s, rec->pid, true);
	struct lps_mapping m;
	uint32_t n = 0;
	int r;

	if (!p)
		return -ENOMEM;
	proc_clear_maps(p);
	if (rec->count > MAX_MAPS_PER_PROC)
		return -EBADMSG;
	p->maps = calloc(rec->count ? rec->count : 1, sizeof(*p->maps));
	if (!p->maps)
		return -ENOMEM;
	while ((r = lps_maps_next(rec, &m)) == 1) {
		struct symb_map *sm = &p->maps[n];

		if (n >= rec->count)
			break;
		if (m.end <= m.start || !(m.prot & LPS_PROT_X))
			continue;
		/* keep ascending, non-overlapping: anything else is malformed */
		if (n && m.start < p->maps[n - 1].end)
			continue;
		sm->start = m.start;
		sm->end = m.end;
		sm->offset = m.offset;
		/* "[vdso]", "[stack]" and anonymous memory are not files */
		if (m.path.len && m.path.ptr[0] == '/' && m.inode)
			sm->obj = obj_intern(s, &m, rec->pid);
		else
			sm->obj = UINT32_MAX;
		n++;
	}
	p->nmaps = n;
	p->has_maps = true;
	return r < 0 ? r : 0;
}

static const struct symb_map *map_find(const struct symb_proc *p, uint64_t addr)
{
	uint32_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

/* ---- kernel symbols ----------------------------------------------------- */

static int feed_ksyms(struct symb_state *s, struct lps_ksyms *rec)
{
	struct lps_ksym k;
	int r;

	if (rec->seq == 0) {
		/* a new snapshot replaces the old one */
		s->nksyms = 0;
		s->ksym_names_len = 0;
	}
	while ((r = lps_ksyms_next(rec, &k)) == 1) {
		size_t need = s->ksym_names_len + k.name.len + 1;

		if (!k.addr)
			continue; /* hidden by kptr_restrict */
		if (grow((void **)&s->ksyms, &s->cap_ksyms, s->nksyms + 1, sizeof(*s->ksyms)))
			return -ENOMEM;
		if (need > s->ksym_names_cap) {
			size_t ncap = s->ksym_names_cap ? s->ksym_names_cap : 65536;
			char *n;

			while (ncap < need)
				ncap *= 2;
			n = realloc(s->ksym_names, ncap);
			if (!n)
				return -ENOMEM;
			s->ksym_names = n;
			s->ksym_names_cap = ncap;
		}
		s->ksyms[s->nksyms].addr = k.addr;
		s->ksyms[s->nksyms].name = (uint32_t)s->ksym_names_len;
		memcpy(s->ksym_names + s->ksym_names_len, k.name.ptr, k.name.len);
		s->ksym_names[s->ksym_names_len + k.name.len] = '\0';
		s->ksym_names_len = need;
		s->nksyms++;
	}
	s->ksyms_sorted = false;
	return r < 0 ? r : 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct symb_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/* Kernel symbols have no sizes: a symbol extends to the next one, at most 1 MiB. */
const char *symb_ksym_lookup(struct symb_state *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->nksyms;

	if (!s->ksyms_sorted) {
		qsort(s->ksyms, s->nksyms, sizeof(*s->ksyms), ksym_cmp);
		s->ksyms_sorted = true;
	}
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (s->ksyms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr - s->ksyms[lo - 1].addr > (1u << 20))
		return NULL;
	return s->ksym_names + s->ksyms[lo - 1].name;
}

/* ---- samples ------------------------------------------------------------ */

static uint64_t hash_stack(uint32_t pid, const char *comm, const struct symb_frame *f, uint32_t n)
{
	uint64_t h = mix64(pid ^ 0x9e3779b97f4a7c15ull);

	for (const char *c = comm; *c; c++)
		h = mix64(h ^ (uint8_t)*c);
	for (uint32_t i = 0; i < n; i++)
		h = mix64(h ^ ((uint64_t)f[i].kind << 32 | f[i].obj) ^ mix64(f[i].addr));
	return h;
}

static bool agg_matches(const struct symb_state *s, const struct symb_agg *a, uint64_t h,
			uint32_t pid, const char *comm, const struct symb_frame *f, uint32_t n)
{
	return a->hash == h && a->pid == pid && a->nframes == n && strcmp(a->comm, comm) == 0 &&
	       memcmp(&s->frames[a->first], f, n * sizeof(*f)) == 0;
}

static int agg_grow(struct symb_state *s)
{
	uint32_t ncap = s->cap_aggs ? s->cap_aggs * 2 : 1024;
	struct symb_agg *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->cap_aggs; i++) {
		struct symb_agg *a = &s->aggs[i];

		if (!a->count)
			continue;
		for (uint32_t j = (uint32_t)a->hash & (ncap - 1);; j = (j + 1) & (ncap - 1))
			if (!n[j].count) {
				n[j] = *a;
				break;
			}
	}
	free(s->aggs);
	s->aggs = n;
	s->cap_aggs = ncap;
	return 0;
}

static int aggregate(struct symb_state *s, uint32_t pid, const char *comm,
		     const struct symb_frame *f, uint32_t n, uint64_t weight)
{
	uint64_t h = hash_stack(pid, comm, f, n);
	struct symb_agg *a;

	if ((s->naggs + 1) * 2 > s->cap_aggs && agg_grow(s))
		return -ENOMEM;
	for (uint32_t j = (uint32_t)h & (s->cap_aggs - 1);; j = (j + 1) & (s->cap_aggs - 1)) {
		a = &s->aggs[j];
		if (!a->count)
			break;
		if (agg_matches(s, a, h, pid, comm, f, n)) {
			a->count++;
			a->weight += weight;
			return 0;
		}
	}
	if (s->nframes + n > s->cap_frames) {
		size_t ncap = s->cap_frames ? s->cap_frames * 2 : 4096;
		struct symb_frame *nf;

		while (ncap < s->nframes + n)
			ncap *= 2;
		nf = realloc(s->frames, ncap * sizeof(*nf));
		if (!nf)
			return -ENOMEM;
		s->frames = nf;
		s->cap_frames = ncap;
	}
	memcpy(&s->frames[s->nframes], f, n * sizeof(*f));
	a->hash = h;
	a->pid = pid;
	snprintf(a->comm, sizeof(a->comm), "%s", comm);
	a->nframes = n;
	a->first = (uint32_t)s->nframes;
	a->count = 1;
	a->weight = weight;
	s->nframes += n;
	s->naggs++;
	return 0;
}

static int feed_sample(struct symb_state *s, const struct lps_sample *smp)
{
	struct symb_frame f[2 * LPS_MAX_FRAMES];
	char comm[LPS_COMM_LEN + 1];
	const struct symb_proc *p = proc_get(s, smp->pid, false);
	uint32_t n = 0;

	/* comm is bounded by the decoder; NULs inside would cut it short */
	memcpy(comm, smp->comm.ptr, smp->comm.len);
	comm[smp->comm.len] = '\0';
	if (!comm[0])
		snprintf(comm, sizeof(comm), "[pid %u]", smp->pid % 100000000u);

	/*
	 * Every frame but the interrupted instruction is a return address;
	 * addr - 1 lies inside the call, so it names the caller's function
	 * even when the call is the last instruction of that function.
	 */
	for (uint32_t i = 0; i < smp->nkstack; i++) {
		uint64_t a = lps_frame(smp->kstack, i);

		f[n++] = (struct symb_frame){SYMB_F_KERNEL, 0, i ? a - 1 : a};
	}
	if (smp->nustack && (!p || !p->has_maps))
		s->n.no_maps_samples++;
	for (uint32_t i = 0; i < smp->nustack; i++) {
		uint64_t a = lps_frame(smp->ustack, i);
		const struct symb_map *m;

		if (i || smp->nkstack)
			a -= 1;
		m = p ? map_find(p, a) : NULL;
		if (!m) {
			f[n++] = (struct symb_frame){SYMB_F_UNKNOWN, 0, a};
			s->n.unmapped_frames++;
		} else if (m->obj == UINT32_MAX) {
			f[n++] = (struct symb_frame){SYMB_F_ANON, 0, a};
		} else {
			f[n++] = (struct symb_frame){SYMB_F_USER, m->obj, a - m->start + m->offset};
			s->objs[m->obj].used = true;
		}
	}
	s->n.samples++;
	s->n.weight_ns += smp->weight;
	if (!s->first_ns || smp->time_ns < s->first_ns)
		s->first_ns = smp->time_ns;
	if (smp->time_ns > s->last_ns)
		s->last_ns = smp->time_ns;
	note_pid_seen(s, smp->pid);
	return aggregate(s, smp->pid, comm, f, n, smp->weight);
}

static void copy_str(char *dst, size_t cap, struct lps_str src)
{
	size_t n = src.len < cap - 1 ? src.len : cap - 1;

	memcpy(dst, src.ptr, n);
	dst[n] = '\0';
}

int symb_state_feed(struct symb_state *s, const void *buf, size_t len)
{
	struct lps_record r;
	int err;

	s->n.records++;
	err = lps_decode(buf, len, &r);
	if (err == -ENOTSUP) {
		s->n.unknown_records++;
		return 0;
	}
	if (err == -EPROTO) {
		lp_err("stream: schema version %u.%u, this symbolizer reads %u.x", r.meta.major,
		       r.meta.minor, LPS_VERSION_MAJOR);
		return err;
	}
	if (err) {
		s->n.bad_records++;
		return 0;
	}
	switch (r.type) {
	case LPS_META:
		s->have_meta = true;
		s->freq_hz = r.meta.freq_hz;
		s->ncpus = r.meta.ncpus_online;
		s->start_mono_ns = r.meta.start_mono_ns;
		s->start_real_ns = r.meta.start_real_ns;
		copy_str(s->hostname, sizeof(s->hostname), r.meta.hostname);
		copy_str(s->kernel_release, sizeof(s->kernel_release), r.meta.kernel_release);
		break;
	case LPS_SAMPLE:
		err = feed_sample(s, &r.sample);
		break;
	case LPS_MAPS:
		err = feed_maps(s, &r.maps);
		break;
	case LPS_EXEC: {
		struct symb_proc *p = proc_get(s, r.exec.pid, false);

		s->n.exec++;
		if (p)
			proc_clear_maps(p);
		break;
	}
	case LPS_EXIT: {
		struct symb_proc *p = proc_get(s, r.exit.pid, false);

		s->n.exit++;
		if (p)
			proc_clear_maps(p);
		break;
	}
	case LPS_KSYMS:
		err = feed_ksyms(s, &r.ksyms);
		break;
	case LPS_LOSS:
		s->n.loss = r.loss;
		s->n.have_loss = true;
		break;
	case LPS_END:
		s->end_ns = r.end.time_ns;
		copy_str(s->end_reason, sizeof(s->end_reason), r.end.reason);
		break;
	}
	if (err == -EBADMSG) {
		s->n.bad_records++;
		err = 0;
	}
	return err;
}
