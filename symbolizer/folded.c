// SPDX-License-Identifier: MIT
/*
 * Folded-stacks writer (the input format of flamegraph.pl, speedscope and
 * inferno): "comm;root;...;leaf VALUE\n".
 *
 * Every location's frames are rendered once (";outer;inlined"), and every
 * stack's key ("comm;root;...;leaf") is put together from them in one arena;
 * equal keys (stacks that differed only by pid, or by bytes the sanitizer
 * replaced) become one line with their values summed (a hash table first,
 * so that only distinct keys are sorted); the lines are then sorted
 * bytewise. Sorting makes the output independent of the order of the
 * stacks.
 *
 * The second sort is only needed when a key holds a space (see
 * folded_merge); keys without one, the usual case, are in line order
 * already.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "profile.h"

#define FOLDED_KSUFFIX "_[k]"

struct folded_line {
	const char *key;
	size_t len; /* of key */
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
 * Every location's part of a key, rendered once: ";frame" for each of its
 * frames, the containing function before what was inlined into it, kernel
 * frames with their suffix. A stack's key is then its comm and the parts
 * of its locations, root first, copied.
 */
struct folded_parts {
	char *text;
	size_t *off; /* location i's part: text[off[i], off[i + 1]) */
};

static int folded_parts_make(const struct symb_profile *p, struct folded_parts *fp)
{
	size_t size = 0, i;
	uint32_t k;
	char *dst;

	fp->off = calloc(p->nlocations + 1, sizeof(*fp->off));
	if (!fp->off)
		return -ENOMEM;
	for (i = 0; i < p->nlocations; i++) {
		const struct symb_location *l = &p->locations[i];

		for (k = 0; k < folded_nframes(l); k++)
			size += 1 + strlen(folded_frame(l, k)) +
				(l->kernel ? strlen(FOLDED_KSUFFIX) : 0);
	}
	fp->text = malloc(size ? size : 1);
	if (!fp->text)
		return -ENOMEM;
	dst = fp->text;
	for (i = 0; i < p->nlocations; i++) {
		const struct symb_location *l = &p->locations[i];

		fp->off[i] = (size_t)(dst - fp->text);
		for (k = folded_nframes(l); k-- > 0;) {
			*dst++ = ';';
			dst = folded_put(dst, folded_frame(l, k));
			if (l->kernel)
				dst = folded_put(dst, FOLDED_KSUFFIX);
		}
	}
	fp->off[p->nlocations] = (size_t)(dst - fp->text);
	return 0;
}

/* Bytes of the key of st, without the terminating NUL. */
static size_t folded_key_len(const struct folded_parts *fp, const struct symb_stack *st)
{
	size_t n = strlen(st->comm);

	for (uint32_t i = 0; i < st->nlocs; i++)
		n += fp->off[st->locs[i] + 1] - fp->off[st->locs[i]];
	return n;
}

/*
 * Writes the key of st (root first; within a location, the containing
 * function before what was inlined into it) at dst, NUL-terminated; returns
 * the byte after the NUL.
 */
static char *folded_key(char *dst, const struct folded_parts *fp, const struct symb_stack *st)
{
	dst = folded_put(dst, st->comm);
	for (uint32_t i = st->nlocs; i-- > 0;) {
		size_t a = fp->off[st->locs[i]], n = fp->off[st->locs[i] + 1] - a;

		memcpy(dst, fp->text + a, n);
		dst += n;
	}
	*dst++ = '\0';
	return dst;
}

/* A seeded hash of n bytes: keys come from names a profiled binary chose. */
static uint64_t folded_hash(uint64_t seed, const char *s, size_t n)
{
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
 * Merges lines of equal keys (stacks that differed only by pid, or by bytes
 * the sanitizer replaced) into the first of them, summing their values, so
 * that the sort has only distinct keys to order. Returns how many lines
 * remain in lines[]; n when there is no memory for the table (the merge
 * after the sort then does it).
 */
static size_t folded_dedupe(struct folded_line *lines, size_t n)
{
	size_t cap = 16, k = 0, i, j;
	uint32_t *slots;
	uint64_t seed;

	while (cap < 2 * n)
		cap *= 2;
	slots = calloc(cap, sizeof(*slots));
	if (!slots || n >= UINT32_MAX) {
		free(slots);
		return n;
	}
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) != sizeof(seed))
		seed = (uint64_t)(uintptr_t)slots;
	for (i = 0; i < n; i++) {
		for (j = folded_hash(seed, lines[i].key, lines[i].len) & (cap - 1); slots[j];
		     j = (j + 1) & (cap - 1)) {
			struct folded_line *l = &lines[slots[j] - 1];

			if (l->len == lines[i].len && memcmp(l->key, lines[i].key, l->len) == 0)
				break;
		}
		if (slots[j]) {
			lines[slots[j] - 1].value += lines[i].value;
			continue;
		}
		lines[k] = lines[i];
		slots[j] = (uint32_t)++k;
	}
	free(slots);
	return k;
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

/*
 * Merges runs of equal keys in lines[0..n) (sorted by key) into text lines
 * "key sum\n" in a new arena, then sorts those lines bytewise when a key
 * has a space (spaces). Only then can key order and line order differ ("a 9"
 * sorts after "a 1 3" although "a" sorts before "a 1"): keys hold no byte
 * below ' ' (folded_put), so for distinct keys without spaces the first
 * difference of their lines is the first difference of the keys, or a key's
 * end (' ') against a byte above ' ' in the longer key.
 * On success *out (n_out pointers into *text) and *text belong to the caller.
 */
static int folded_merge(const struct folded_line *lines, size_t n, size_t key_bytes, bool spaces,
			char ***out, size_t *n_out, char **text)
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

		size_t klen = strlen(lines[i].key);
		char *end;

		for (j = i; j < n && strcmp(lines[j].key, lines[i].key) == 0; j++)
			sum += lines[j].value;
		/* fits: the key came from key_bytes, and " %lld\n" is at most 22 bytes */
		ptrs[k++] = buf + used;
		memcpy(buf + used, lines[i].key, klen);
		end = buf + used + klen;
		*end++ = ' ';
		end = folded_int(end, sum);
		*end++ = '\n';
		*end++ = '\0';
		used = (size_t)(end - buf);
		i = j;
	}
	if (spaces)
		qsort(ptrs, k, sizeof(*ptrs), folded_strcmp);
	*out = ptrs;
	*n_out = k;
	*text = buf;
	return 0;
}

/*
 * stdio's buffer: with its default (the file's block size, 4 KiB) a
 * profile of a MiB costs hundreds of write calls.
 */
#define FOLDED_STDIO_BUF (1u << 20)

/* Writes the lines through stdio on a dup of fd (stdio retries short writes). */
static int folded_emit(char *const *lines, size_t n, int fd)
{
	char *buf = malloc(FOLDED_STDIO_BUF);
	FILE *f;
	size_t i;
	int dfd, err = 0;

	dfd = dup(fd);
	if (dfd < 0) {
		err = -errno;
		free(buf);
		return err;
	}
	f = fdopen(dfd, "w");
	if (!f) {
		err = -errno;
		close(dfd);
		free(buf);
		return err;
	}
	if (buf) /* else stdio's own */
		setvbuf(f, buf, _IOFBF, FOLDED_STDIO_BUF);
	errno = 0; /* so a stdio failure that sets no errno reads as -EIO */
	for (i = 0; i < n; i++)
		if (fputs(lines[i], f) < 0)
			break;
	if (ferror(f))
		err = errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = errno ? -errno : -EIO;
	free(buf);
	return err;
}

int symb_write_folded(const struct symb_profile *p, int fd)
{
	struct folded_parts fp = {0};
	struct folded_line *lines = NULL;
	char *arena = NULL, *text = NULL, *pos, **out = NULL;
	size_t size = 0, nout = 0, nlines, i, j;
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
	err = folded_parts_make(p, &fp);
	if (err) {
		lp_err("folded: cannot allocate the frames");
		goto err_out;
	}
	for (i = 0; i < p->nstacks; i++)
		size += folded_key_len(&fp, &p->stacks[i]) + 1;
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
		pos = folded_key(pos, &fp, &p->stacks[i]);
		lines[i].len = (size_t)(pos - lines[i].key) - 1;
	}
	nlines = folded_dedupe(lines, p->nstacks);
	qsort(lines, nlines, sizeof(*lines), folded_cmp);
	err = folded_merge(lines, nlines, size, memchr(arena, ' ', size) != NULL, &out, &nout,
			   &text);
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
	free(fp.text);
	free(fp.off);
	return err;
}
