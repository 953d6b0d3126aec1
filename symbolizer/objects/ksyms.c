// SPDX-License-Identifier: MIT
/*
 * The kernel's symbols (objects.h): the snapshot the collector sends in
 * ksyms records, names in one arena, sorted on first lookup. Addresses are
 * relative to the kernel's text base; an older stream's absolute ones are
 * made relative here, so that no absolute kernel address reaches an output.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/grow.h"
#include "objects.h"

struct symb_ksym {
	uint64_t addr;
	uint32_t name; /* offset into names */
};

struct symb_ksyms {
	struct symb_ksym *ksyms;
	uint32_t cap_ksyms;
	char *ksym_names;
	size_t ksym_names_len, ksym_names_cap;
	bool ksyms_sorted;
	struct symb_ksyms_stats n;
};

struct symb_ksyms *symb_ksyms__new(void)
{
	return calloc(1, sizeof(struct symb_ksyms));
}

void symb_ksyms__release(struct symb_ksyms *k)
{
	free(k->ksyms);
	free(k->ksym_names);
	k->ksyms = NULL;
	k->ksym_names = NULL;
	k->cap_ksyms = 0;
	k->ksym_names_len = k->ksym_names_cap = 0;
	k->n.count = 0;
}

void symb_ksyms__free(struct symb_ksyms *k)
{
	if (!k)
		return;
	symb_ksyms__release(k);
	free(k);
}

void symb_ksyms__start(struct symb_ksyms *k, bool relative)
{
	k->n.relative = relative;
	k->n.kbase_known = false;
	k->n.kbase = 0;
}

uint64_t symb_ksyms__relative(const struct symb_ksyms *k, uint64_t addr)
{
	if (k->n.relative)
		return addr;
	return k->n.kbase_known ? addr - k->n.kbase : 0;
}

const struct symb_ksyms_stats *symb_ksyms__stats(const struct symb_ksyms *k)
{
	return &k->n;
}

/*
 * Room for one record's entries, taken once per record: each entry's name
 * and NUL fit in the bytes the entry takes in the record (its tags alone
 * take more than one byte), and both tables stop at their SYMB_MAX_* limit.
 */
static int ksyms_reserve(struct symb_ksyms *s, const struct lps_ksyms *rec)
{
	uint32_t n =
		rec->count < SYMB_MAX_KSYMS - s->n.count ? s->n.count + rec->count : SYMB_MAX_KSYMS;
	size_t need = s->ksym_names_len + (size_t)(rec->end - rec->cur);

	if (need > SYMB_MAX_KSYM_BYTES)
		need = SYMB_MAX_KSYM_BYTES;
	if (lp_grow32((void **)&s->ksyms, &s->cap_ksyms, n, sizeof(*s->ksyms), 16))
		return -ENOMEM;
	if (lp_grow((void **)&s->ksym_names, &s->ksym_names_cap, need, 1, 65536, SIZE_MAX))
		return -ENOMEM;
	return 0;
}

/*
 * An older collector's snapshot, complete, with absolute addresses: made
 * relative to its _text like a newer collector's, so that no absolute kernel
 * address reaches an output. Without _text there is no base: the snapshot
 * is dropped and kernel frames have no address.
 */
static void ksyms_relative(struct symb_ksyms *s)
{
	uint32_t i;

	s->n.kbase_known = false;
	for (i = 0; i < s->n.count; i++)
		if (!strcmp(s->ksym_names + s->ksyms[i].name, "_text"))
			break;
	if (i == s->n.count) {
		s->n.count = 0;
		s->ksym_names_len = 0;
		return;
	}
	s->n.kbase = s->ksyms[i].addr;
	s->n.kbase_known = true;
	for (i = 0; i < s->n.count; i++)
		s->ksyms[i].addr -= s->n.kbase;
}

int symb_ksyms__feed(struct symb_ksyms *s, struct lps_ksyms *rec)
{
	struct lps_ksym k;
	int r;

	if (rec->seq == 0) {
		/* a new snapshot replaces the old one */
		s->n.count = 0;
		s->ksym_names_len = 0;
	}
	s->ksyms_sorted = false;
	if (ksyms_reserve(s, rec))
		return -ENOMEM;
	while ((r = lps_ksyms_next(rec, &k)) == 1) {
		/* a name is within one record (<= 1 MiB): no overflow */
		size_t need = s->ksym_names_len + k.name.len + 1;

		if (!k.addr && !s->n.relative)
			continue; /* an older collector's: hidden by kptr_restrict */
		if (s->n.count >= SYMB_MAX_KSYMS || need > SYMB_MAX_KSYM_BYTES) {
			s->n.over_limit++;
			continue;
		}
		/* ksyms_reserve made room for both */
		s->ksyms[s->n.count].addr = k.addr;
		/* < SYMB_MAX_KSYM_BYTES, far below 2^32 */
		s->ksyms[s->n.count].name = (uint32_t)s->ksym_names_len;
		memcpy(s->ksym_names + s->ksym_names_len, k.name.ptr, k.name.len);
		s->ksym_names[s->ksym_names_len + k.name.len] = '\0';
		s->ksym_names_len = need;
		s->n.count++;
	}
	if (r == 0 && rec->last && !s->n.relative)
		ksyms_relative(s);
	return r < 0 ? r : 0;
}

static int ksym_cmp(const void *a, const void *b)
{
	const struct symb_ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->name < y->name ? -1 : x->name > y->name;
}

/*
 * Sorts the kernel symbols by (address, name offset): a total order, so the
 * result is the same however it is reached. /proc/kallsyms is in address
 * order but for a few entries at its end (modules, BPF programs), so the
 * sorted prefix is kept, only the rest is sorted, and the two are merged
 * from the back. Without memory for the merge, the whole table is sorted.
 */
static void ksyms_sort(struct symb_ksyms *s)
{
	struct symb_ksym *k = s->ksyms, *tail;
	uint32_t n = s->n.count, p = 1, t, i, j, w;

	while (p < n && ksym_cmp(&k[p - 1], &k[p]) < 0)
		p++;
	if (p >= n)
		return;
	t = n - p;
	tail = malloc((size_t)t * sizeof(*tail));
	if (!tail) {
		qsort(k, n, sizeof(*k), ksym_cmp);
		return;
	}
	memcpy(tail, k + p, (size_t)t * sizeof(*tail));
	qsort(tail, t, sizeof(*tail), ksym_cmp);
	/* k[0, p) and tail[0, t) into k[0, n), largest first */
	for (i = p, j = t, w = n; j > 0;) {
		if (i > 0 && ksym_cmp(&k[i - 1], &tail[j - 1]) > 0)
			k[--w] = k[--i];
		else
			k[--w] = tail[--j];
	}
	free(tail);
}

/* Kernel symbols have no sizes: a symbol extends to the next one, at most 1 MiB. */
const char *symb_ksyms__lookup(struct symb_ksyms *s, uint64_t addr)
{
	uint32_t lo = 0, hi = s->n.count;

	if (!s->ksyms_sorted && s->n.count) {
		ksyms_sort(s);
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
