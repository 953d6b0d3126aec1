// SPDX-License-Identifier: MIT
/*
 * Folded-stacks writer (the input format of flamegraph.pl, speedscope and
 * inferno): "comm;root;...;leaf VALUE\n".
 *
 * Every stack's key ("comm;root;...;leaf") is rendered once into one arena;
 * the keys are sorted so that runs of equal keys (stacks that differed only
 * by pid, or by bytes the sanitizer replaced) become one line with their
 * values summed; the lines are then sorted bytewise. Sorting makes the output
 * independent of the order of the stacks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "profile.h"

#define FOLDED_KSUFFIX "_[k]"

struct folded_line {
	const char *key;
	int64_t value;
};

/* Frames of a location: one per source line (inlined functions), else one. */
static uint32_t folded_nframes(const struct symb_location *l)
{
	return l->nlines ? l->nlines : 1;
}

/* Name of frame k of l, innermost first (k < folded_nframes(l)). */
static const char *folded_frame(const struct symb_location *l, uint32_t k)
{
	if (!l->nlines)
		return l->function;
	return l->lines[k].function ? l->lines[k].function : "[unknown]";
}

/* Bytes of the key of st, without the terminating NUL. */
static size_t folded_key_len(const struct symb_profile *p, const struct symb_stack *st)
{
	size_t n = strlen(st->comm), i;
	uint32_t k;

	for (i = 0; i < st->nlocs; i++) {
		const struct symb_location *l = &p->locations[st->locs[i]];

		for (k = 0; k < folded_nframes(l); k++)
			n += 1 + strlen(folded_frame(l, k)) +
			     (l->kernel ? strlen(FOLDED_KSUFFIX) : 0);
	}
	return n;
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

/*
 * Writes the key of st (root first; within a location, the containing
 * function before what was inlined into it) at dst, NUL-terminated; returns
 * the byte after the NUL.
 */
static char *folded_key(char *dst, const struct symb_profile *p, const struct symb_stack *st)
{
	uint32_t i, k;

	dst = folded_put(dst, st->comm);
	for (i = st->nlocs; i-- > 0;) {
		const struct symb_location *l = &p->locations[st->locs[i]];

		for (k = folded_nframes(l); k-- > 0;) {
			*dst++ = ';';
			dst = folded_put(dst, folded_frame(l, k));
			if (l->kernel)
				dst = folded_put(dst, FOLDED_KSUFFIX);
		}
	}
	*dst++ = '\0';
	return dst;
}

/* strcmp compares as unsigned char: both orders are bytewise. */
static int folded_cmp(const void *a, const void *b)
{
	const struct folded_line *x = a, *y = b;

	return strcmp(x->key, y->key);
}

static int folded_strcmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Merges runs of equal keys in lines[0..n) (sorted by key) into text lines
 * "key sum\n" in a new arena, then sorts those lines bytewise. The second
 * sort is not redundant: with a space in a name, key order and line order
 * differ ("a 9" sorts after "a 1 3" although "a" sorts before "a 1").
 * On success *out (n_out pointers into *text) and *text belong to the caller.
 */
static int folded_merge(const struct folded_line *lines, size_t n, size_t key_bytes, char ***out,
			size_t *n_out, char **text)
{
	size_t cap = key_bytes + n * 24 + 1, used = 0, k = 0, i = 0;
	char **ptrs, *buf;

	ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	buf = malloc(cap);
	if (!ptrs || !buf) {
		free(ptrs);
		free(buf);
		return -ENOMEM;
	}
	while (i < n) {
		int64_t sum = 0;
		size_t j;

		for (j = i; j < n && strcmp(lines[j].key, lines[i].key) == 0; j++)
			sum += lines[j].value;
		/* fits: the key came from key_bytes, and " %lld\n" is at most 22 bytes */
		ptrs[k++] = buf + used;
		used += sprintf(buf + used, "%s %" PRId64 "\n", lines[i].key, sum) + 1;
		i = j;
	}
	qsort(ptrs, k, sizeof(*ptrs), folded_strcmp);
	*out = ptrs;
	*n_out = k;
	*text = buf;
	return 0;
}

/* Writes the lines through stdio on a dup of fd (stdio retries short writes). */
static int folded_emit(char *const *lines, size_t n, int fd)
{
	FILE *f;
	size_t i;
	int dfd, err = 0;

	dfd = dup(fd);
	if (dfd < 0)
		return -errno;
	f = fdopen(dfd, "w");
	if (!f) {
		err = -errno;
		close(dfd);
		return err;
	}
	errno = 0; /* so a stdio failure that sets no errno reads as -EIO */
	for (i = 0; i < n; i++)
		if (fputs(lines[i], f) < 0)
			break;
	if (ferror(f))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = errno ? -errno : -EIO;
	return err;
}

int symb_write_folded(const struct symb_profile *p, int fd)
{
	struct folded_line *lines = NULL;
	char *arena = NULL, *text = NULL, *pos, **out = NULL;
	size_t size = 0, nout = 0, i, j;
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
		size += folded_key_len(p, &p->stacks[i]) + 1;
	}
	lines = calloc(p->nstacks ? p->nstacks : 1, sizeof(*lines));
	arena = malloc(size ? size : 1);
	if (!lines || !arena) {
		err = -ENOMEM;
		lp_err("folded: cannot allocate %zu bytes of stacks", size);
		goto err_out;
	}
	pos = arena;
	for (i = 0; i < p->nstacks; i++) {
		lines[i].key = pos;
		lines[i].value = p->stacks[i].values[p->folded_value];
		pos = folded_key(pos, p, &p->stacks[i]);
	}
	qsort(lines, p->nstacks, sizeof(*lines), folded_cmp);
	err = folded_merge(lines, p->nstacks, size, &out, &nout, &text);
	if (err) {
		lp_err("folded: cannot allocate the output: %s", strerror(-err));
		goto err_out;
	}
	err = folded_emit(out, nout, fd);
	if (err)
		lp_err("folded: write failed: %s", strerror(-err));
err_out:
	free(out);
	free(text);
	free(arena);
	free(lines);
	return err;
}
