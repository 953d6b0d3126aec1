// SPDX-License-Identifier: MIT
/*
 * HTML flame graph writer: one self-contained file made of the template
 * flamegraph.html (embedded at build time as lpw_flamegraph_html) with the
 * profile's title and data spliced in at two markers.
 *
 * The data is the merged call tree, not the stacks: a root, one child per
 * comm, then frames root to leaf with equal children (same name and kind)
 * merged. That is what the page draws, and it is much smaller than the
 * stacks. The tree goes out as JSON inside <script type="application/json">,
 * escaped so that no name can end the script element or break the parse:
 * '<', '>', '&', U+2028 and U+2029 are \u-escaped and invalid UTF-8 becomes
 * U+FFFD.
 *
 * JSON layout (read by the template's script):
 *   {"title":s, "type":s, "unit":s, "total":n,
 *    "nodes":[name, kind, value, nchildren, ...]   preorder, 4 numbers a node
 *    "names":[s, ...]}                             indexed by nodes' name
 * kind: 0 root, 1 process (comm), 2 user, 3 kernel, 4 unresolved, 5 inlined
 * (a function inlined into its parent frame: a location with source lines
 * gives one frame per line, the containing function first). Children are
 * sorted by name, so the output does not depend on the order of stacks.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lowprof/grow.h"
#include "lowprof/hash.h"
#include "lowprof/log.h"
#include "lowprof/writers.h"

/* Generated from flamegraph.html by writers/CMakeLists.txt. */
extern const unsigned char lpw_flamegraph_html[];
extern const size_t lpw_flamegraph_html_len;

#define FG_TITLE_MARK "@@LOWPROF_TITLE@@"
#define FG_DATA_MARK  "@@LOWPROF_DATA@@"
/* stdio's buffer for the output (see lpw_write_flamegraph) */
#define FG_STDIO_BUF (1u << 20)

enum fg_kind {
	FG_ROOT = 0,
	FG_PROCESS = 1,
	FG_USER = 2,
	FG_KERNEL = 3,
	FG_UNRESOLVED = 4,
	FG_INLINED = 5,
};

struct fg_node {
	int64_t value;	 /* sum over the stacks through this node */
	uint32_t name;	 /* index into tree.names */
	uint32_t parent; /* the root (node 0) is nobody's child, so 0 = none below */
	uint32_t first_child;
	uint32_t next; /* next sibling */
	uint32_t nchildren;
	uint8_t kind;
};

/*
 * Nodes and names with their hash indexes. The arrays are sized once from an
 * upper bound (a node per frame of every stack, a name per location and
 * comm), so they never move; the slots hold index + 1 (0 = empty), at most
 * half full. The node index starts small and doubles: stacks share most of
 * their frames, so the tree has far fewer nodes than the bound, and an index
 * of the bound's size (4 MiB for 21k stacks) cost more in page faults and
 * cache misses than the tree itself.
 */
struct fg_tree {
	struct fg_node *nodes;
	size_t nnodes, cap_nodes; /* at most max_nodes */
	size_t max_nodes;
	uint32_t *node_slots; /* children keyed by (parent, name, kind) */
	size_t node_mask;
	const char **names; /* borrowed from the profile */
	size_t nnames;
	uint32_t *name_slots;
	size_t name_mask;
	uint64_t name_seed;   /* names are the profiled binaries': seeded (no flooding) */
	uint32_t *loc_first;  /* index into frame_name of each location's first frame */
	uint32_t *frame_name; /* name index of every location's frames, innermost first */
	uint8_t *frame_kind;  /* and their kinds */
};

struct fg_child {
	const char *name;
	uint32_t kind;
	uint32_t id;
};

static uint32_t *fg_slots(size_t max_entries, size_t *mask)
{
	size_t n = 16;

	while (n < 2 * max_entries)
		n *= 2;
	*mask = n - 1;
	return calloc(n, sizeof(uint32_t));
}

static uint32_t fg_name(struct fg_tree *t, const char *s)
{
	size_t i;

	for (i = lp_hash_bytes(t->name_seed, s, strlen(s)) & t->name_mask; t->name_slots[i];
	     i = (i + 1) & t->name_mask) {
		uint32_t e = t->name_slots[i] - 1;

		if (strcmp(t->names[e], s) == 0)
			return e;
	}
	t->names[t->nnames] = s;
	t->name_slots[i] = ++t->nnames;
	return t->nnames - 1;
}

static size_t fg_node_hash(uint32_t parent, uint32_t name, uint8_t kind)
{
	uint64_t h = parent * 0x9e3779b97f4a7c15ull ^ name * 0xc2b2ae3d27d4eb4full ^ kind;

	return (size_t)(h ^ h >> 29);
}

/* The node index at twice its size: 0 or -ENOMEM. */
static int fg_node_slots_grow(struct fg_tree *t)
{
	size_t mask = t->node_mask * 2 + 1;
	uint32_t *slots = calloc(mask + 1, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	/* node 0, the root, is nobody's child: not in the index */
	for (uint32_t e = 1; e < t->nnodes; e++) {
		const struct fg_node *n = &t->nodes[e];
		size_t i = fg_node_hash(n->parent, n->name, n->kind) & mask;

		while (slots[i])
			i = (i + 1) & mask;
		slots[i] = e + 1;
	}
	free(t->node_slots);
	t->node_slots = slots;
	t->node_mask = mask;
	return 0;
}

/*
 * The child of parent with this name and kind, created (value 0) if new;
 * UINT32_MAX without memory for the node or the index.
 */
static uint32_t fg_child(struct fg_tree *t, uint32_t parent, uint32_t name, uint8_t kind)
{
	struct fg_node *n;
	size_t i;

	for (i = fg_node_hash(parent, name, kind) & t->node_mask; t->node_slots[i];
	     i = (i + 1) & t->node_mask) {
		uint32_t e = t->node_slots[i] - 1;

		n = &t->nodes[e];
		if (n->parent == parent && n->name == name && n->kind == kind)
			return e;
	}
	if (lp_grow((void **)&t->nodes, &t->cap_nodes, t->nnodes + 1, sizeof(*t->nodes), 4096,
		    t->max_nodes))
		return UINT32_MAX;
	if (2 * (t->nnodes + 1) > t->node_mask + 1) {
		if (fg_node_slots_grow(t))
			return UINT32_MAX;
		for (i = fg_node_hash(parent, name, kind) & t->node_mask; t->node_slots[i];
		     i = (i + 1) & t->node_mask)
			;
	}
	n = &t->nodes[t->nnodes];
	*n = (struct fg_node){.name = name, .kind = kind, .parent = parent};
	n->next = t->nodes[parent].first_child;
	t->nodes[parent].first_child = t->nnodes;
	t->nodes[parent].nchildren++;
	t->node_slots[i] = ++t->nnodes;
	return t->nnodes - 1;
}

/* Frames of a location: one per source line (inlined functions), else one. */
static uint32_t fg_nframes(const struct lpw_location *l)
{
	return l->nlines ? l->nlines : 1;
}

/* Name of frame k of l, innermost first (k < fg_nframes(l)). */
static const char *fg_frame_name(const struct lpw_location *l, uint32_t k)
{
	if (!l->nlines)
		return l->function;
	return l->lines[k].function ? l->lines[k].function : "[unknown]";
}

/* Kind of frame k of l: all but the outermost of several are inlined. */
static uint8_t fg_frame_kind(const struct lpw_location *l, uint32_t k)
{
	if (!l->resolved)
		return FG_UNRESOLVED;
	if (l->kernel)
		return FG_KERNEL;
	return k + 1 < fg_nframes(l) ? FG_INLINED : FG_USER;
}

static void fg_tree_free(struct fg_tree *t)
{
	free(t->nodes);
	free(t->node_slots);
	free(t->names);
	free(t->name_slots);
	free(t->loc_first);
	free(t->frame_name);
	free(t->frame_kind);
}

/*
 * Builds the merged tree of p's stacks, counting values[folded_value].
 * Stacks with a value <= 0 are left out: they have no width to draw. Each
 * location's frames are named and kinded once (loc_first, frame_name,
 * frame_kind), so that the walk over the stacks reads those small arrays
 * rather than the locations.
 */
static int fg_tree_build(struct fg_tree *t, const struct lpw_profile *p)
{
	size_t max_nodes = 1, nframes = 0, max_names, i;
	uint32_t j, k;

	for (i = 0; i < p->nlocations; i++) {
		if (p->locations[i].nlines && !p->locations[i].lines)
			return -EINVAL;
		nframes += fg_nframes(&p->locations[i]);
	}
	max_names = 1 + nframes + p->nstacks;
	if (nframes > UINT32_MAX / 4 || max_names > UINT32_MAX / 4)
		return -E2BIG;
	t->names = calloc(max_names, sizeof(*t->names));
	t->name_slots = fg_slots(max_names, &t->name_mask);
	t->name_seed = lp_hash_seed(t);
	t->loc_first = malloc((p->nlocations + 1) * sizeof(*t->loc_first));
	t->frame_name = malloc((nframes ? nframes : 1) * sizeof(*t->frame_name));
	t->frame_kind = malloc(nframes ? nframes : 1);
	if (!t->names || !t->name_slots || !t->loc_first || !t->frame_name || !t->frame_kind)
		return -ENOMEM;
	t->nodes = NULL;
	fg_name(t, "all");
	for (i = 0, nframes = 0; i < p->nlocations; i++) {
		const struct lpw_location *l = &p->locations[i];

		t->loc_first[i] = nframes;
		for (k = 0; k < fg_nframes(l); k++) {
			t->frame_kind[nframes] = fg_frame_kind(l, k);
			t->frame_name[nframes++] = fg_name(t, fg_frame_name(l, k));
		}
	}
	t->loc_first[p->nlocations] = nframes;
	for (i = 0; i < p->nstacks; i++) {
		for (j = 0; j < p->stacks[i].nlocs; j++) {
			uint32_t loc = p->stacks[i].locs[j];

			if (loc >= p->nlocations)
				return -EINVAL;
			max_nodes += t->loc_first[loc + 1] - t->loc_first[loc];
		}
		max_nodes++;
	}
	if (max_nodes > UINT32_MAX / 4)
		return -E2BIG;
	/*
	 * The bound is far above the number of nodes made: the array grows
	 * (fg_child) rather than being reserved whole. Untouched, a block of
	 * the bound still moves the heap's top past it (5.7 MB for 20k
	 * stacks), and what is allocated next lands on fresh pages.
	 */
	t->max_nodes = max_nodes;
	if (lp_grow((void **)&t->nodes, &t->cap_nodes, 1, sizeof(*t->nodes), 4096, max_nodes))
		return -ENOMEM;
	t->node_slots = fg_slots(1024, &t->node_mask);
	if (!t->nodes || !t->node_slots)
		return -ENOMEM;
	t->nodes[0] = (struct fg_node){.name = 0, .kind = FG_ROOT};
	t->nnodes = 1;
	for (i = 0; i < p->nstacks; i++) {
		const struct lpw_stack *st = &p->stacks[i];
		int64_t v = st->values[p->folded_value];
		uint32_t cur;

		if (v <= 0)
			continue;
		t->nodes[0].value += v;
		cur = fg_child(t, 0, fg_name(t, st->comm), FG_PROCESS);
		if (cur == UINT32_MAX)
			return -ENOMEM;
		t->nodes[cur].value += v;
		for (j = st->nlocs; j-- > 0;) {
			uint32_t first = t->loc_first[st->locs[j]];

			/* root first: the containing function, then what it inlined */
			for (k = t->loc_first[st->locs[j] + 1]; k-- > first;) {
				cur = fg_child(t, cur, t->frame_name[k], t->frame_kind[k]);
				if (cur == UINT32_MAX)
					return -ENOMEM;
				t->nodes[cur].value += v;
			}
		}
	}
	return 0;
}

static int fg_child_cmp(const void *a, const void *b)
{
	const struct fg_child *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

/* Relinks every node's children in (name, kind) order. */
static int fg_tree_sort(struct fg_tree *t)
{
	struct fg_child *tmp;
	size_t i, n, k;
	uint32_t c;

	tmp = calloc(t->nnodes, sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	for (i = 0; i < t->nnodes; i++) {
		if (t->nodes[i].nchildren < 2)
			continue;
		n = 0;
		for (c = t->nodes[i].first_child; c; c = t->nodes[c].next) {
			tmp[n].name = t->names[t->nodes[c].name];
			tmp[n].kind = t->nodes[c].kind;
			tmp[n++].id = c;
		}
		qsort(tmp, n, sizeof(*tmp), fg_child_cmp);
		t->nodes[i].first_child = tmp[0].id;
		for (k = 0; k + 1 < n; k++)
			t->nodes[tmp[k].id].next = tmp[k + 1].id;
		t->nodes[tmp[n - 1].id].next = 0;
	}
	free(tmp);
	return 0;
}

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 if none starts there. */
static int fg_utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	/* each test reads s[k] only after s[k-1] proved a continuation (not NUL) */
	if (c >= 0xe0 && c <= 0xef) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))
			return 0; /* overlong, or a UTF-16 surrogate */
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		if ((s[1] & 0xc0) != 0x80 || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		if ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))
			return 0; /* overlong, or above U+10FFFF */
		return 4;
	}
	return 0;
}

/*
 * Writes s as valid UTF-8 (each invalid byte becomes U+FFFD), escaped either
 * as the inside of a JSON string safe within <script>, or as HTML text.
 */
static void fg_put_text(FILE *f, const char *str, bool json)
{
	const unsigned char *s = (const unsigned char *)str;

	while (*s) {
		int len = fg_utf8_len(s);

		if (len == 0) {
			fputs("\xef\xbf\xbd", f);
			s++;
			continue;
		}
		if (len == 3 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9)) {
			/* line/paragraph separators: JS source line breaks before ES2019 */
			fputs(json ? (s[2] == 0xa8 ? "\\u2028" : "\\u2029") : " ", f);
		} else if (len > 1) {
			fwrite(s, 1, len, f);
		} else if (json) {
			if (*s == '"' || *s == '\\')
				fprintf(f, "\\%c", *s);
			else if (*s < 0x20 || *s == '<' || *s == '>' || *s == '&')
				fprintf(f, "\\u%04x", (unsigned)*s);
			else
				fputc(*s, f);
		} else {
			switch (*s) {
			case '&':
				fputs("&amp;", f);
				break;
			case '<':
				fputs("&lt;", f);
				break;
			case '>':
				fputs("&gt;", f);
				break;
			case '"':
				fputs("&quot;", f);
				break;
			default:
				fputc(*s < 0x20 ? ' ' : *s, f);
			}
		}
		s += len;
	}
}

static void fg_put_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	fg_put_text(f, s ? s : "", true);
	fputc('"', f);
}

/* v in decimal, ending at end (room for 20 digits before it); returns its start */
static char *fg_dec(char *end, uint64_t v)
{
	do
		*--end = (char)('0' + v % 10);
	while (v /= 10);
	return end;
}

/*
 * One node of the preorder array: "name,kind,value,children", after ",\n"
 * unless it is the first. Formatted here: fprintf took ~1,800 instructions
 * a node, a tenth of writing the whole flame graph.
 */
static void fg_put_node(FILE *f, bool sep, uint32_t name, uint32_t kind, int64_t value,
			uint32_t nchildren)
{
	char line[2 + 4 * 21], *end = line + sizeof(line), *p = end;

	p = fg_dec(p, nchildren);
	*--p = ',';
	p = fg_dec(p, value < 0 ? -(uint64_t)value : (uint64_t)value);
	if (value < 0)
		*--p = '-';
	*--p = ',';
	p = fg_dec(p, kind);
	*--p = ',';
	p = fg_dec(p, name);
	if (sep) {
		*--p = '\n';
		*--p = ',';
	}
	fwrite(p, 1, (size_t)(end - p), f);
}

/*
 * The JSON document described at the top. Names are renumbered in order of
 * first use in the preorder walk, so unused names are dropped and the order
 * does not depend on the order of stacks.
 */
static int fg_put_data(FILE *f, const struct fg_tree *t, const struct lpw_profile *p)
{
	const struct lpw_value_type *vt = &p->value_types[p->folded_value];
	uint32_t *remap, *order, nused = 0, i = 0;

	remap = calloc(t->nnames, sizeof(*remap)); /* new index + 1, 0 = unused */
	order = calloc(t->nnames, sizeof(*order));
	if (!remap || !order) {
		free(remap);
		free(order);
		return -ENOMEM;
	}
	fputs("{\"title\":", f);
	fg_put_json_str(f, p->title ? p->title : "lowprof");
	fputs(",\"type\":", f);
	fg_put_json_str(f, vt->type);
	fputs(",\"unit\":", f);
	fg_put_json_str(f, vt->unit);
	fprintf(f, ",\"total\":%" PRId64 ",\"nodes\":[", t->nodes[0].value);
	for (;;) {
		const struct fg_node *n = &t->nodes[i];

		if (!remap[n->name]) {
			order[nused] = n->name;
			remap[n->name] = ++nused;
		}
		fg_put_node(f, i != 0, remap[n->name] - 1, n->kind, n->value, n->nchildren);
		if (n->first_child) {
			i = n->first_child;
			continue;
		}
		while (i && !t->nodes[i].next)
			i = t->nodes[i].parent;
		if (!i)
			break;
		i = t->nodes[i].next;
	}
	fputs("],\n\"names\":[", f);
	for (i = 0; i < nused; i++) {
		if (i)
			fputc(',', f);
		fg_put_json_str(f, t->names[order[i]]);
	}
	fputs("]}", f);
	free(remap);
	free(order);
	return 0;
}

/* The template's bytes from *pos up to mark, written out; *pos moves past mark. */
static int fg_put_until(FILE *f, size_t *pos, const char *mark)
{
	const unsigned char *tpl = lpw_flamegraph_html;
	const unsigned char *m;

	m = memmem(tpl + *pos, lpw_flamegraph_html_len - *pos, mark, strlen(mark));
	if (!m)
		return -EINVAL;
	fwrite(tpl + *pos, 1, m - (tpl + *pos), f);
	*pos = m - tpl + strlen(mark);
	return 0;
}

static int fg_write(FILE *f, const struct fg_tree *t, const struct lpw_profile *p)
{
	size_t pos = 0;
	int err;

	err = fg_put_until(f, &pos, FG_TITLE_MARK);
	if (err)
		return err;
	fg_put_text(f, p->title ? p->title : "lowprof", false);
	err = fg_put_until(f, &pos, FG_DATA_MARK);
	if (err)
		return err;
	err = fg_put_data(f, t, p);
	if (err)
		return err;
	fwrite(lpw_flamegraph_html + pos, 1, lpw_flamegraph_html_len - pos, f);
	return 0;
}

int lpw_write_flamegraph(const struct lpw_profile *p, int fd)
{
	struct fg_tree t = {0};
	char *buf = NULL;
	FILE *f = NULL;
	int dfd, err;

	if (p->folded_value < 0 || p->folded_value > 1) {
		err = -EINVAL;
		lp_err("flamegraph: invalid value index %d", p->folded_value);
		goto err_out;
	}
	err = fg_tree_build(&t, p);
	if (!err)
		err = fg_tree_sort(&t);
	if (err) {
		lp_err("flamegraph: cannot build the call tree: %s", strerror(-err));
		goto err_out;
	}
	dfd = dup(fd);
	if (dfd < 0 || !(f = fdopen(dfd, "w"))) {
		err = -errno;
		if (dfd >= 0)
			close(dfd);
		lp_err("flamegraph: cannot open output: %s", strerror(-err));
		goto err_out;
	}
	/* this thread alone writes f: no lock taken around each of its many small writes */
	__fsetlocking(f, FSETLOCKING_BYCALLER);
	/* stdio's default buffer (4 KiB) costs a write call per 4 KiB */
	buf = malloc(FG_STDIO_BUF);
	if (buf)
		setvbuf(f, buf, _IOFBF, FG_STDIO_BUF);
	errno = 0; /* so a stdio failure that sets no errno reads as -EIO */
	err = fg_write(f, &t, p);
	if (err) {
		/* -EINVAL: a marker is missing from the embedded template */
		lp_err("flamegraph: cannot fill the template: %s", strerror(-err));
	} else if (ferror(f)) {
		err = errno ? -errno : -EIO;
		lp_err("flamegraph: write failed: %s", strerror(-err));
	}
	if (fclose(f) && !err) {
		err = errno ? -errno : -EIO;
		lp_err("flamegraph: write failed: %s", strerror(-err));
	}
err_out:
	free(buf); /* after fclose: stdio wrote from it until then */
	fg_tree_free(&t);
	return err;
}
