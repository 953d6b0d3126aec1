// SPDX-License-Identifier: MIT
/*
 * JIT perf map parser and table (perfmap.h).
 *
 * Lines go to a pending list in arrival order; a lookup first merges the
 * pending lines into the sorted table (sort the new ones, merge, and let
 * the newer line win each overlap), so that a stream of chunks costs one
 * merge per batch of lines, not one per line. Names live in one arena,
 * compacted when more than half of it belongs to lines that lost.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "perfmap.h"

struct jit_sym {
	uint64_t start, end; /* [start, end) */
	uint32_t name_off, name_len;
};

struct symb_jit {
	struct jit_sym *syms; /* sorted by start, non-overlapping */
	uint32_t nsyms, cap_syms;
	struct jit_sym *pend; /* newer than every entry of syms; later ones newer still */
	uint32_t npend, cap_pend;
	char *names;
	size_t names_len, names_cap;
	uint64_t next; /* file offset the next chunk should start at */
	bool skip;     /* inside a line cut by a gap or too long: until its newline */
	char part[SYMB_JIT_MAX_LINE];
	uint32_t part_len; /* a line's start from the last chunk, waiting for its end */
	struct symb_jit_stats st;
};

struct symb_jit *symb_jit__new(void)
{
	return calloc(1, sizeof(struct symb_jit));
}

void symb_jit__free(struct symb_jit *j)
{
	if (!j)
		return;
	free(j->syms);
	free(j->pend);
	free(j->names);
	free(j);
}

const struct symb_jit_stats *symb_jit__stats(const struct symb_jit *j)
{
	return &j->st;
}

size_t symb_jit__mem(const struct symb_jit *j)
{
	return sizeof(*j) + ((size_t)j->cap_syms + j->cap_pend) * sizeof(struct jit_sym) +
	       j->names_cap;
}

static int grow(void **p, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap = *cap ? *cap : 64;
	void *n;

	if (need <= *cap)
		return 0;
	while (ncap < need)
		ncap *= 2;
	n = realloc(*p, (size_t)ncap * elem);
	if (!n)
		return -ENOMEM;
	*p = n;
	*cap = ncap;
	return 0;
}

/* ---- merging ----------------------------------------------------------- */

/* The arrival order of pending entries breaks ties: a stable sort by start. */
struct pend_ref {
	uint64_t start;
	uint32_t idx;
};

static int cmp_pend(const void *a, const void *b)
{
	const struct pend_ref *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Appends e (age: 0 for the table's entries, 1 + arrival index for pending
 * ones) to out[0..*n), sorted and non-overlapping, where it overlaps the
 * last entries the newer one wins: an older entry is cut short at e's start
 * (or removed when e starts where it does), or e starts after a newer one.
 */
static void sweep_push(struct jit_sym *out, uint32_t *age, uint32_t *n, struct jit_sym e,
		       uint32_t e_age)
{
	while (*n && out[*n - 1].end > e.start) {
		struct jit_sym *r = &out[*n - 1];

		if (e_age > age[*n - 1]) {
			if (r->start >= e.start) {
				(*n)--;
				continue;
			}
			r->end = e.start;
			break;
		}
		e.start = r->end;
		if (e.start >= e.end)
			return;
		break;
	}
	out[*n] = e;
	age[*n] = e_age;
	(*n)++;
}

/* Names of the table's entries only, moved to a new arena. 0 or -ENOMEM. */
static int names_compact(struct symb_jit *j)
{
	size_t live = 0, pos = 0;
	char *n;

	for (uint32_t i = 0; i < j->nsyms; i++)
		live += j->syms[i].name_len;
	n = malloc(live ? live : 1);
	if (!n)
		return -ENOMEM;
	for (uint32_t i = 0; i < j->nsyms; i++) {
		memcpy(n + pos, j->names + j->syms[i].name_off, j->syms[i].name_len);
		j->syms[i].name_off = (uint32_t)pos;
		pos += j->syms[i].name_len;
	}
	free(j->names);
	j->names = n;
	j->names_len = j->names_cap = pos;
	return 0;
}

/* Pending entries into the table: 0 or -ENOMEM (the table is then unchanged). */
static int merge(struct symb_jit *j)
{
	uint32_t cap = j->nsyms + j->npend, n = 0, a = 0, b = 0;
	struct pend_ref *ref = NULL;
	struct jit_sym *out = NULL;
	uint32_t *age = NULL;
	size_t live = 0;

	if (!j->npend)
		return 0;
	ref = malloc(j->npend * sizeof(*ref));
	out = malloc(cap * sizeof(*out));
	age = malloc(cap * sizeof(*age));
	if (!ref || !out || !age) {
		free(ref);
		free(out);
		free(age);
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < j->npend; i++)
		ref[i] = (struct pend_ref){j->pend[i].start, i};
	qsort(ref, j->npend, sizeof(*ref), cmp_pend);
	/* by start; at equal starts the older first, so the newer wins */
	while (a < j->nsyms || b < j->npend) {
		if (b == j->npend || (a < j->nsyms && j->syms[a].start <= ref[b].start))
			sweep_push(out, age, &n, j->syms[a++], 0);
		else
			sweep_push(out, age, &n, j->pend[ref[b].idx], ref[b].idx + 1), b++;
	}
	free(ref);
	free(age);
	free(j->syms);
	j->syms = out;
	j->nsyms = n;
	j->cap_syms = cap;
	j->npend = 0;
	if (j->cap_pend > 4096) { /* a file's first load: the next batches are small */
		free(j->pend);
		j->pend = NULL;
		j->cap_pend = 0;
	}
	for (uint32_t i = 0; i < n; i++)
		live += out[i].name_len;
	/* more than half the arena is names no entry uses: worth a copy */
	if (j->names_len > 2 * live + 4096)
		names_compact(j); /* without memory, the arena stays as it is */
	return 0;
}

/* ---- lines -------------------------------------------------------------- */

/* A hex number, "0x" optional, 1-16 digits, at *p; advances *p. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int d = 0;

	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, d++) {
		char c = *s;
		uint64_t x;

		if (c >= '0' && c <= '9')
			x = (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			x = (uint64_t)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			x = (uint64_t)(c - 'A' + 10);
		else
			break;
		if (d == 16)
			return false;
		v = v << 4 | x;
	}
	if (!d)
		return false;
	*p = s;
	*out = v;
	return true;
}

static bool skip_blanks(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

static int add_sym(struct symb_jit *j, uint64_t start, uint64_t size, const char *name, size_t len)
{
	if (j->nsyms + j->npend >= SYMB_JIT_MAX_SYMS ||
	    j->names_len + len > SYMB_JIT_MAX_NAME_BYTES) {
		/* lines that lost to newer ones may free room */
		if (merge(j))
			return -ENOMEM;
		if (j->nsyms >= SYMB_JIT_MAX_SYMS || j->names_len + len > SYMB_JIT_MAX_NAME_BYTES) {
			j->st.dropped++;
			return 0;
		}
	}
	if (grow((void **)&j->pend, &j->cap_pend, j->npend + 1, sizeof(*j->pend)))
		return -ENOMEM;
	if (j->names_len + len > j->names_cap) {
		size_t ncap = j->names_cap ? j->names_cap : 4096;
		char *n;

		while (ncap < j->names_len + len)
			ncap *= 2;
		if (ncap > SYMB_JIT_MAX_NAME_BYTES) /* the check above keeps the need within */
			ncap = SYMB_JIT_MAX_NAME_BYTES;
		n = realloc(j->names, ncap);
		if (!n)
			return -ENOMEM;
		j->names = n;
		j->names_cap = ncap;
	}
	memcpy(j->names + j->names_len, name, len);
	j->pend[j->npend++] =
		(struct jit_sym){start, start + size, (uint32_t)j->names_len, (uint32_t)len};
	j->names_len += len;
	j->st.lines++;
	return 0;
}

/* One line without its newline: "START SIZE name". 0 or -ENOMEM. */
static int parse_line(struct symb_jit *j, const char *p, size_t n)
{
	const char *end = p + n;
	uint64_t start, size;

	if (n && end[-1] == '\r')
		end--;
	if (!parse_hex(&p, end, &start) || !skip_blanks(&p, end) || !parse_hex(&p, end, &size) ||
	    !skip_blanks(&p, end) || p == end || !size || start > UINT64_MAX - size ||
	    memchr(p, '\0', (size_t)(end - p))) {
		j->st.bad_lines++;
		return 0;
	}
	return add_sym(j, start, size, p, (size_t)(end - p));
}

int symb_jit__add(struct symb_jit *j, uint64_t start, uint64_t size, const char *name, size_t len)
{
	if (!len || len > SYMB_JIT_MAX_LINE || !size || start > UINT64_MAX - size ||
	    memchr(name, '\0', len) || memchr(name, '\n', len)) {
		j->st.bad_lines++;
		return 0;
	}
	return add_sym(j, start, size, name, len);
}

static void reset(struct symb_jit *j)
{
	j->nsyms = j->npend = 0;
	j->names_len = 0;
	j->next = 0;
	j->skip = false;
	j->part_len = 0;
}

int symb_jit__feed(struct symb_jit *j, uint64_t offset, const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	int err;

	if (!len)
		return 0;
	if (offset == 0 && j->next) {
		reset(j);
		j->st.restarts++;
	}
	if (offset < j->next) {
		uint64_t dup = j->next - offset;

		if (dup >= len) {
			j->st.dup_bytes += len;
			return 0;
		}
		j->st.dup_bytes += dup;
		p += dup;
	} else if (offset > j->next) {
		j->st.gap_bytes += offset - j->next;
		/* the line the gap cut: where the chunk starts a line is unknown */
		j->skip = true;
		j->part_len = 0;
	}
	j->next = offset + len;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (j->skip) {
			if (!nl)
				return 0;
			j->skip = false;
			j->st.bad_lines++;
			p = nl + 1;
			continue;
		}
		if (j->part_len + n > sizeof(j->part)) {
			/* too long to be a symbol: skipped to its end */
			j->part_len = 0;
			j->skip = true;
			continue;
		}
		if (!nl) {
			memcpy(j->part + j->part_len, p, n);
			j->part_len += (uint32_t)n;
			return 0;
		}
		if (j->part_len) {
			memcpy(j->part + j->part_len, p, n);
			err = parse_line(j, j->part, j->part_len + n);
			j->part_len = 0;
		} else {
			err = parse_line(j, p, n);
		}
		if (err)
			return err;
		p = nl + 1;
	}
	return 0;
}

int symb_jit__lookup(struct symb_jit *j, uint64_t addr, const char **name, uint32_t *name_len,
		     uint64_t *start)
{
	uint32_t lo = 0, hi;

	if (j->npend && merge(j))
		return 0; /* without memory: the pending lines wait */
	hi = j->nsyms;
	/* the last entry starting at or before addr */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (j->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || addr >= j->syms[lo - 1].end)
		return 0;
	*name = j->names + j->syms[lo - 1].name_off;
	*name_len = j->syms[lo - 1].name_len;
	*start = j->syms[lo - 1].start;
	return 1;
}

uint32_t symb_jit__count(struct symb_jit *j)
{
	merge(j);
	return j->nsyms + j->npend;
}
