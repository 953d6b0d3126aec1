// SPDX-License-Identifier: MIT
/*
 * Folded-stacks writer (the input format of flamegraph.pl, speedscope and
 * inferno): "comm;root;...;leaf VALUE\n".
 *
 * Every distinct frame name and comm becomes a token (sanitized once), and
 * every stack a sequence of tokens: equal sequences (stacks that differed
 * only by pid, or by bytes the sanitizer replaced) become one line with
 * their values summed, and the lines are sorted bytewise, as whole lines
 * with their values, so that the output does not depend on the order of
 * the stacks. Two lines compare token by token and then byte by byte from
 * the first token that differs: the common part of two deep stacks is not
 * compared as text again and again, and no key is put together as a string
 * until it is written.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/files.h"
#include "lowprof/hash.h"
#include "lowprof/log.h"
#include "lowprof/writers.h"

#define FOLDED_KSUFFIX "_[k]"

/* Frames of a location: one per source line (inlined functions), else one. */
static uint32_t folded_nframes(const struct lpw_location *l)
{
	return l->nlines ? l->nlines : 1;
}

/* Name of frame k of l, innermost first (k < folded_nframes(l)). */
static const char *folded_frame(const struct lpw_location *l, uint32_t k)
{
	if (!l->nlines)
		return l->function;
	return l->lines[k].function ? l->lines[k].function : "[unknown]";
}

/*
 * Copies s to dst so that it cannot break the line format: ';' separates
 * frames, so it becomes ':'; a newline or other control byte becomes '?'.
 * Spaces stay: readers split the count off at the last space. Returns the
 * end of the copy.
 */
static char *folded_put(char *dst, const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == ';')
			c = ':';
		else if (c < 0x20 || c == 0x7f)
			c = '?';
		*dst++ = c;
	}
	return dst;
}

/* Writes v in decimal at dst (as "%" PRId64); returns the end. */
static char *folded_int(char *dst, int64_t v)
{
	char tmp[24];
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
	size_t n = 0;

	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*dst++ = '-';
	while (n)
		*dst++ = tmp[--n];
	return dst;
}

/* Writes a line's end, " VALUE\n", at dst (24 bytes); returns its length. */
static size_t folded_tail(char *dst, int64_t v)
{
	char *e = dst;

	*e++ = ' ';
	e = folded_int(e, v);
	*e++ = '\n';
	return (size_t)(e - dst);
}

/*
 * Frames and comms as tokens: each distinct sanitized string once, in one
 * text arena, so that two stacks' keys are equal exactly when their token
 * sequences are (tokens hold no ';', so a key splits into them one way).
 */
struct folded_tok {
	size_t off; /* in text, after the ';' each token has before it */
	size_t len;
};

struct folded_tab {
	char *text;
	size_t text_len;
	struct folded_tok *toks;
	uint32_t ntoks;
	uint32_t *slots; /* token index + 1, 0 = empty */
	size_t cap_slots;
	uint64_t seed;
};

/* A line: a stack's tokens (comm, then frames root first) and its value. */
struct folded_line {
	const uint32_t *seq;
	uint32_t n;
	int64_t value;
};

/* A seeded hash of n bytes: keys come from names a profiled binary chose. */
static uint64_t folded_hash(uint64_t seed, const void *p, size_t n)
{
	const char *s = p;
	uint64_t h = seed ^ (n * 0x9e3779b97f4a7c15ull), v;

	for (; n >= 8; s += 8, n -= 8) {
		memcpy(&v, s, 8);
		h = (h ^ v) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	v = 0;
	memcpy(&v, s, n);
	h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/*
 * The token of s (sanitized, with suffix when not NULL): the one already
 * there, or a new one. The arena and the table were sized for every string
 * the profile can give, so this cannot run out.
 */
static uint32_t folded_intern(struct folded_tab *t, const char *s, const char *suffix)
{
	char *dst = t->text + t->text_len + 1, *end = folded_put(dst, s);
	size_t len, j;

	if (suffix)
		end = folded_put(end, suffix);
	len = (size_t)(end - dst);
	for (j = folded_hash(t->seed, dst, len) & (t->cap_slots - 1); t->slots[j];
	     j = (j + 1) & (t->cap_slots - 1)) {
		const struct folded_tok *k = &t->toks[t->slots[j] - 1];

		if (k->len == len && memcmp(t->text + k->off, dst, len) == 0)
			return t->slots[j] - 1;
	}
	/* the separator before it, so that a frame is written in one copy */
	dst[-1] = ';';
	t->toks[t->ntoks] = (struct folded_tok){t->text_len + 1, len};
	t->text_len += 1 + len;
	t->slots[j] = ++t->ntoks;
	return t->ntoks - 1;
}

/*
 * A line's bytes from token i on, one at a time: ";token" (token 0, the
 * comm, without the ';'), then " VALUE\n"; -1 after the last.
 */
struct folded_it {
	const struct folded_tab *t;
	const struct folded_line *l;
	uint32_t i; /* next token; n: the value next; n + 1: done */
	const char *p;
	size_t left;
	char num[24];
};

static int folded_next(struct folded_it *it)
{
	for (;;) {
		if (it->left) {
			it->left--;
			return (unsigned char)*it->p++;
		}
		if (it->i < it->l->n) {
			const struct folded_tok *k = &it->t->toks[it->l->seq[it->i]];

			it->p = it->t->text + k->off;
			it->left = k->len;
			if (it->i++ > 0)
				return ';';
			continue;
		}
		if (it->i == it->l->n) {
			it->p = it->num;
			it->left = folded_tail(it->num, it->l->value);
			it->i++;
			continue;
		}
		return -1;
	}
}

/*
 * Lines compare bytewise, as whole lines ("x;a 1 3" < "x;a 9" although the
 * key "x;a" is a prefix of "x;a 1"): tokens equal up to the first one that
 * differs, and from there the bytes decide, usually within that token.
 */
static int folded_cmp(const void *a, const void *b, void *ctx)
{
	const struct folded_line *x = a, *y = b;
	struct folded_it ix = {.t = ctx, .l = x}, iy = {.t = ctx, .l = y};
	uint32_t n = x->n < y->n ? x->n : y->n, i = 0;

	while (i < n && x->seq[i] == y->seq[i])
		i++;
	if (i < n) {
		/* different tokens: unless one is a prefix of the other, they decide */
		const struct folded_tok *a = &ix.t->toks[x->seq[i]], *b = &ix.t->toks[y->seq[i]];
		int c = memcmp(ix.t->text + a->off, ix.t->text + b->off,
			       a->len < b->len ? a->len : b->len);

		if (c)
			return c;
	}
	ix.i = iy.i = i;
	for (;;) {
		int cx = folded_next(&ix), cy = folded_next(&iy);

		if (cx != cy)
			return cx < cy ? -1 : 1;
		if (cx < 0)
			return 0;
	}
}

/*
 * Merges lines of equal keys (stacks that differed only by pid, or by bytes
 * the sanitizer replaced) into the first of them, summing their values.
 * Returns how many lines remain in lines[], or 0 without memory (n > 0).
 */
static size_t folded_dedupe(struct folded_line *lines, size_t n, uint64_t seed)
{
	size_t cap = 16, k = 0, i, j;
	uint32_t *slots;

	while (cap < 2 * n)
		cap *= 2;
	slots = n < UINT32_MAX ? calloc(cap, sizeof(*slots)) : NULL;
	if (!slots)
		return 0;
	for (i = 0; i < n; i++) {
		size_t bytes = lines[i].n * sizeof(*lines[i].seq);

		for (j = folded_hash(seed, lines[i].seq, bytes) & (cap - 1); slots[j];
		     j = (j + 1) & (cap - 1)) {
			struct folded_line *l = &lines[slots[j] - 1];

			if (l->n == lines[i].n && memcmp(l->seq, lines[i].seq, bytes) == 0)
				break;
		}
		if (slots[j]) {
			/* wraps as the sum of int64 values always did: two's complement */
			lines[slots[j] - 1].value = (int64_t)((uint64_t)lines[slots[j] - 1].value +
							      (uint64_t)lines[i].value);
			continue;
		}
		lines[k] = lines[i];
		slots[j] = (uint32_t)++k;
	}
	free(slots);
	return k;
}

/* Output through one buffer, written out with write(2) as it fills. */
struct folded_out {
	int fd;
	int err;
	char *buf;
	size_t len, cap;
};

static void folded_flush(struct folded_out *o)
{
	if (o->len && !o->err)
		o->err = lp_write_all(o->fd, o->buf, o->len);
	o->len = 0;
}

static void folded_write(struct folded_out *o, const char *s, size_t n)
{
	while (n && !o->err) {
		size_t k;

		if (o->len == o->cap)
			folded_flush(o);
		k = o->cap - o->len < n ? o->cap - o->len : n;
		memcpy(o->buf + o->len, s, k);
		o->len += k;
		s += k;
		n -= k;
	}
}

/* Writes one line: "comm;frame;...;frame VALUE\n". */
static void folded_emit(struct folded_out *o, const struct folded_tab *t,
			const struct folded_line *l)
{
	char num[24];

	for (uint32_t i = 0; i < l->n; i++) {
		const struct folded_tok *k = &t->toks[l->seq[i]];

		/* ";frame" in one copy; the comm without its ';' */
		folded_write(o, t->text + k->off - (i > 0), k->len + (i > 0));
	}
	folded_write(o, num, folded_tail(num, l->value));
}

/*
 * The token table and every stack's line. Each location's frames are
 * interned once (the containing function before what was inlined into it,
 * kernel frames with their suffix), then each stack is its comm and its
 * locations' tokens, root first. Returns 0 or -ENOMEM.
 */
static int folded_lines(const struct lpw_profile *p, struct folded_tab *t, uint32_t **loc_first,
			uint32_t **loc_toks, uint32_t **seqs, struct folded_line **lines)
{
	size_t text = 0, nfr = 0, nseq = 0, ntoks, i, j, pos;
	uint32_t k, *lt, *sq;

	for (i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		for (k = 0; k < folded_nframes(l); k++)
			text += strlen(folded_frame(l, k)) +
				(l->kernel ? strlen(FOLDED_KSUFFIX) : 0);
		nfr += folded_nframes(l);
	}
	for (i = 0; i < p->nstacks; i++) {
		text += strlen(p->stacks[i].comm);
		nseq++;
		for (j = 0; j < p->stacks[i].nlocs; j++)
			nseq += folded_nframes(&p->locations[p->stacks[i].locs[j]]);
	}
	ntoks = nfr + p->nstacks;
	if (ntoks >= UINT32_MAX / 2 || nseq > SIZE_MAX / sizeof(uint32_t))
		return -ENOMEM;
	text += ntoks; /* each token's ';' */
	t->cap_slots = 16;
	while (t->cap_slots < 2 * ntoks)
		t->cap_slots *= 2;
	t->text = malloc(text ? text : 1);
	t->toks = malloc((ntoks ? ntoks : 1) * sizeof(*t->toks));
	t->slots = calloc(t->cap_slots, sizeof(*t->slots));
	*loc_first = malloc((p->nlocations + 1) * sizeof(**loc_first));
	*loc_toks = malloc((nfr ? nfr : 1) * sizeof(**loc_toks));
	*seqs = malloc((nseq ? nseq : 1) * sizeof(**seqs));
	*lines = malloc((p->nstacks ? p->nstacks : 1) * sizeof(**lines));
	if (!t->text || !t->toks || !t->slots || !*loc_first || !*loc_toks || !*seqs || !*lines)
		return -ENOMEM;
	t->seed = lp_hash_seed(t->slots);
	lt = *loc_toks;
	pos = 0;
	for (i = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		(*loc_first)[i] = (uint32_t)pos;
		for (k = folded_nframes(l); k-- > 0;)
			lt[pos++] = folded_intern(t, folded_frame(l, k),
						  l->kernel ? FOLDED_KSUFFIX : NULL);
	}
	(*loc_first)[p->nlocations] = (uint32_t)pos;
	sq = *seqs;
	for (i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		struct folded_line *l = &(*lines)[i];

		l->seq = sq;
		*sq++ = folded_intern(t, st->comm, NULL);
		for (j = st->nlocs; j-- > 0;) {
			uint32_t a = (*loc_first)[st->locs[j]], b = (*loc_first)[st->locs[j] + 1];

			/* most locations are one frame: a call to memcpy each cost more */
			while (a < b)
				*sq++ = lt[a++];
		}
		l->n = (uint32_t)(sq - l->seq);
		l->value = st->values[p->folded_value];
	}
	return 0;
}

/* write(2)'s chunk: a profile of a MiB in a few calls */
#define FOLDED_OUT_BUF (1u << 20)

int lpw_write_folded(const struct lpw_profile *p, int fd)
{
	struct folded_tab t = {0};
	struct folded_line *lines = NULL;
	struct folded_out o = {.fd = fd};
	uint32_t *loc_first = NULL, *loc_toks = NULL, *seqs = NULL;
	size_t nlines, i, j;
	int err;

	if (p->folded_value < 0 || p->folded_value > 1) {
		err = -EINVAL;
		lp_err("folded: invalid value index %d", p->folded_value);
		goto err_out;
	}
	for (i = 0; i < p->nlocations; i++) {
		if (p->locations[i].nlines && !p->locations[i].lines) {
			err = -EINVAL;
			lp_err("folded: location %zu has lines but no array", i);
			goto err_out;
		}
	}
	for (i = 0; i < p->nstacks; i++) {
		for (j = 0; j < p->stacks[i].nlocs; j++) {
			if (p->stacks[i].locs[j] >= p->nlocations) {
				err = -EINVAL;
				lp_err("folded: stack %zu has an out-of-range location", i);
				goto err_out;
			}
		}
	}
	err = folded_lines(p, &t, &loc_first, &loc_toks, &seqs, &lines);
	nlines = err ? 0 : folded_dedupe(lines, p->nstacks, t.seed);
	o.buf = malloc(FOLDED_OUT_BUF);
	o.cap = FOLDED_OUT_BUF;
	if (err || (p->nstacks && !nlines) || !o.buf) {
		err = -ENOMEM;
		lp_err("folded: cannot allocate the stacks of %zu lines", p->nstacks);
		goto err_out;
	}
	qsort_r(lines, nlines, sizeof(*lines), folded_cmp, &t);
	for (i = 0; i < nlines && !o.err; i++)
		folded_emit(&o, &t, &lines[i]);
	folded_flush(&o);
	err = o.err;
	if (err)
		lp_err("folded: write failed: %s", strerror(-err));
err_out:
	free(o.buf);
	free(lines);
	free(seqs);
	free(loc_toks);
	free(loc_first);
	free(t.slots);
	free(t.toks);
	free(t.text);
	return err;
}
