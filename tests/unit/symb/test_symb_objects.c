// SPDX-License-Identifier: MIT
/*
 * How the symbolizer loads an object's tables (symbolizer/objects/), on
 * fixtures built for it (CMakeLists.txt): two programs that claim one
 * build-id, a separate debug file of one of them, stripped copies with and
 * without a .gnu_debuglink.
 *
 *  - a binary that claims another's build-id never gets or gives its
 *    tables through the cache (the key is each one's content identity);
 *  - a debug file found by build-id is used only when it belongs to the
 *    binary: .gnu_debuglink's CRC-32, else the allocated section headers;
 *  - the memo serves lookups only: a wrong memo row never makes a table be
 *    stored under another identity;
 *  - DWARF is read only from the content the object was loaded for.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "cache.h"
#include "debuginfo.h"
#include "ident.h"
#include "lowprof/schema.h"
#include "symb_test.h"

struct fx {
	char dir[PATH_MAX];
	char db[PATH_MAX + 16];
	struct symb_cache *cache;
};

static const char *fixture(const char *name)
{
	static char paths[16][PATH_MAX]; /* a test holds a few at a time */
	static int next;
	char *p = paths[next++ % 16];

	snprintf(p, PATH_MAX, "%s/%s", IDENT_DIR, name);
	return p;
}

static int fx_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/lp-objects-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->db, sizeof(f->db), "%s/cache.db", f->dir);
	assert_int_equal(symb_cache__open(f->db, 0, &f->cache), 0);
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[PATH_MAX + 16];

	symb_cache__close(f->cache);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f);
	return 0;
}

static const struct symb_obj *load(struct symb_objects **s, const char *path, struct symb_cache *c,
				   const char *const *dirs)
{
	assert_int_equal(symb_test_objects_with(s, path, c, dirs), 0);
	return symb_objects__load(*s, 0);
}

/* A function's address in an unstripped fixture's .symtab. */
static uint64_t sym_vaddr(const char *path, const char *want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e;
	Elf_Scn *scn = NULL;
	uint64_t v = 0;
	GElf_Shdr sh;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(e);
	while ((scn = elf_nextscn(e, scn)) && !v) {
		Elf_Data *d = gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB
				      ? elf_getdata(scn, NULL)
				      : NULL;

		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, (int)i, &sym))
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			if (name && !strcmp(name, want))
				v = sym.st_value;
		}
	}
	elf_end(e);
	close(fd);
	if (!v)
		fail_msg("%s: no symbol %s", path, want);
	return v;
}

static const char *name_at(const struct symb_obj *o, const char *unstripped, const char *fn)
{
	uint64_t v = sym_vaddr(unstripped, fn);

	return o->elf ? symb_elf__symbolize(o->elf, v + 4, NULL) : NULL;
}

static void expect_name(const struct symb_obj *o, const char *unstripped, const char *fn)
{
	const char *got = name_at(o, unstripped, fn);

	if (!got || strcmp(got, fn))
		fail_msg("%s: named %s, not %s", o->path, got ? got : "(nothing)", fn);
}

static void expect_unnamed(const struct symb_obj *o, const char *unstripped, const char *fn)
{
	const char *got = name_at(o, unstripped, fn);

	if (got)
		fail_msg("%s: the address of %s is named %s (another binary's symbols)", o->path,
			 fn, got);
}

static void copy_file(const char *from, const char *to, long flip_at)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	long i = 0;
	int c;

	assert_non_null(in);
	assert_non_null(out);
	while ((c = fgetc(in)) != EOF)
		fputc(i++ == flip_at ? c ^ 0x10 : c, out);
	fclose(in);
	assert_int_equal(fclose(out), 0);
}

static long file_size(const char *path)
{
	struct stat st;

	assert_int_equal(stat(path, &st), 0);
	return (long)st.st_size;
}

/* dir/<name>/.build-id/xx/rest.debug: a copy of debug, one byte flipped at flip_at (-1: none). */
static const char *debug_dir(struct fx *f, const char *name, const char *debug, long flip_at)
{
	static char dirs[4][PATH_MAX + 64];
	static int next;
	char *d = dirs[next++ % 4], path[PATH_MAX + 128];
	const char *id = &IDENT_ID[2];

	snprintf(d, PATH_MAX + 64, "%s/%s", f->dir, name);
	assert_int_equal(mkdir(d, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id", d);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s", d, id);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", d, id, id + 2);
	copy_file(debug, path, flip_at);
	return d;
}

static void free_state(struct symb_objects **s)
{
	symb_objects__free(*s);
	*s = NULL;
}

/*
 * Two programs claim one build-id: each is named by its own tables, first
 * parsed, then from the cache, whichever came first.
 */
static void test_claimed_build_id_is_not_a_key(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a"), *b = fixture("ident_b");
	struct symb_objects *s;
	const struct symb_obj *o;
	char key_a[SYMB_CACHE_KEY_MAX], key_b[SYMB_CACHE_KEY_MAX];

	o = load(&s, b, f->cache, NULL);
	expect_name(o, b, "ident_b_one");
	assert_string_equal(o->build_id, &IDENT_ID[2]);
	assert_non_null(o->key);
	snprintf(key_b, sizeof(key_b), "%s", o->key);
	free_state(&s);

	o = load(&s, a, f->cache, NULL);
	assert_string_equal(o->build_id, &IDENT_ID[2]);
	expect_name(o, a, "ident_a_alpha");
	expect_name(o, a, "ident_a_beta");
	assert_int_equal(symb_objects__stats(s)->cache_hits, 0);
	assert_int_equal(symb_objects__stats(s)->parsed_symbols, 1);
	assert_int_equal(symb_objects__stats(s)->parsed_deltas, 1);
	assert_non_null(o->key);
	snprintf(key_a, sizeof(key_a), "%s", o->key);
	assert_string_not_equal(key_a, key_b);
	assert_null(strchr(key_a, '+'));
	free_state(&s);

	/* both from the cache now, each its own */
	o = load(&s, a, f->cache, NULL);
	expect_name(o, a, "ident_a_alpha");
	assert_int_equal(symb_objects__stats(s)->cache_hits, 2);
	assert_int_equal(
		symb_objects__stats(s)->parsed_symbols + symb_objects__stats(s)->parsed_deltas, 0);
	free_state(&s);
	o = load(&s, b, f->cache, NULL);
	expect_name(o, b, "ident_b_one");
	assert_int_equal(symb_objects__stats(s)->cache_hits, 2);
	free_state(&s);
}

/*
 * Loads path without a cache, with debug dirs: the address of unstripped's
 * fn named fn (named), or nothing (not); and whether it has DWARF.
 */
static void expect_debug(const char *path, const char *const *dirs, const char *unstripped,
			 const char *fn, bool named)
{
	struct symb_objects *s;
	const struct symb_obj *o = load(&s, path, NULL, dirs);

	if (named)
		expect_name(o, unstripped, fn);
	else
		expect_unnamed(o, unstripped, fn);
	/* a stripped binary's DWARF can only be its debug file's */
	assert_int_equal(o->dwarf != NULL, named);
	free_state(&s);
}

/*
 * The debug file found by build-id names a stripped binary when it is
 * that binary's: by the allocated section headers (no .gnu_debuglink), by
 * the CRC-32 (.gnu_debuglink). Another binary that claims the build-id
 * gets none of its symbols; a debug file whose CRC-32 is not the one the
 * binary names is skipped for the next directory's.
 */
static void test_debug_file_must_match(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a"), *b = fixture("ident_b"),
		   *dbg = fixture("ident_a.debug");
	const char *good = debug_dir(f, "good", dbg, -1);
	const char *bad = debug_dir(f, "bad", dbg, file_size(dbg) / 2);
	const char *dirs[] = {good, NULL}, *bad_first[] = {bad, good, NULL},
		   *bad_only[] = {bad, NULL};

	expect_debug(fixture("ident_a.stripped"), dirs, a, "ident_a_alpha", true);
	expect_debug(fixture("ident_a.linked"), dirs, a, "ident_a_alpha", true);
	expect_debug(fixture("ident_b.stripped"), dirs, b, "ident_b_one", false);
	expect_debug(fixture("ident_b.stripped"), dirs, b, "ident_b_two", false);
	expect_debug(fixture("ident_a.linked"), bad_only, a, "ident_a_alpha", false);
	expect_debug(fixture("ident_a.linked"), bad_first, a, "ident_a_alpha", true);
}

/*
 * Loads path with the cache and dirs: the address of unstripped's fn is
 * named (named) or not, the key names the debug file (with_debug) or not,
 * and hits tables come from the cache.
 */
static void expect_keyed(struct fx *f, const char *path, const char *const *dirs,
			 const char *unstripped, const char *fn, bool named, bool with_debug,
			 uint64_t hits)
{
	struct symb_objects *s;
	const struct symb_obj *o = load(&s, path, f->cache, dirs);

	if (named)
		expect_name(o, unstripped, fn);
	else
		expect_unnamed(o, unstripped, fn);
	assert_non_null(o->key);
	assert_int_equal(strchr(o->key, '+') != NULL, with_debug);
	assert_int_equal(symb_objects__stats(s)->cache_hits, hits);
	free_state(&s);
}

/* With a cache: the key names both files, or the binary alone when the debug file is not its. */
static void test_debug_file_keys(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a"), *b = fixture("ident_b");
	const char *dirs[] = {debug_dir(f, "good", fixture("ident_a.debug"), -1), NULL};

	for (int round = 0; round < 2; round++) {
		expect_keyed(f, fixture("ident_a.stripped"), dirs, a, "ident_a_alpha", true, true,
			     round ? 2 : 0);
		expect_keyed(f, fixture("ident_b.stripped"), dirs, b, "ident_b_one", false, false,
			     round ? 2 : 0);
	}
}

static void file_key(const char *path, struct symb_file_key *k)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_true(symb_file_key__get(fd, k) >= 0);
	close(fd);
}

static void sql(const char *db, const char *stmt)
{
	sqlite3 *h;

	assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
	if (sqlite3_exec(h, stmt, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", stmt, sqlite3_errmsg(h));
	sqlite3_close(h);
}

static bool cached(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
		   uint32_t version)
{
	uint8_t *blob = NULL;
	size_t len;
	int err = symb_cache__get(c, key, kind, version, &blob, &len);

	free(blob);
	return err == 0;
}

/*
 * The memo serves lookups only. A row that says ident_a has ident_b's
 * identity (whose deltas are not cached) does not make ident_a's tables
 * be stored as ident_b's: they go under ident_a's own identity, and
 * ident_b is still named by its own symbols.
 */
static void test_memo_serves_lookups_only(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a"), *b = fixture("ident_b");
	char key_b[SYMB_CACHE_KEY_MAX], lie[SYMB_CACHE_KEY_MAX];
	struct symb_ident id_b, bogus;
	struct symb_file_key ka;
	struct symb_objects *s;
	const struct symb_obj *o;

	o = load(&s, b, f->cache, NULL);
	snprintf(key_b, sizeof(key_b), "%s", o->key);
	free_state(&s);
	symb_cache__close(f->cache);
	sql(f->db, "DELETE FROM entries WHERE kind = 2");
	assert_int_equal(symb_cache__open(f->db, 0, &f->cache), 0);
	/* the identity in key_b, from its hex */
	for (int i = 0; i < SYMB_IDENT_LEN; i++)
		assert_int_equal(sscanf(key_b + 2 + 2 * i, "%2hhx", &id_b.b[i]), 1);
	file_key(a, &ka);
	assert_int_equal(symb_cache__memo_put(f->cache, &ka, &id_b), 0);

	o = load(&s, a, f->cache, NULL);
	expect_name(o, a, "ident_a_alpha");
	assert_string_not_equal(o->key, key_b);
	assert_true(cached(f->cache, o->key, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION));
	assert_true(cached(f->cache, o->key, SYMB_CACHE_DELTAS, SYMB_DELTAS_BLOB_VERSION));
	assert_false(cached(f->cache, key_b, SYMB_CACHE_DELTAS, SYMB_DELTAS_BLOB_VERSION));
	free_state(&s);
	o = load(&s, b, f->cache, NULL);
	expect_name(o, b, "ident_b_one");
	assert_string_equal(o->key, key_b);
	free_state(&s);

	/* an identity nothing is stored under: a miss, then ident_a's own */
	memset(bogus.b, 0x42, sizeof(bogus.b));
	assert_int_equal(symb_cache__memo_put(f->cache, &ka, &bogus), 0);
	o = load(&s, a, f->cache, NULL);
	expect_name(o, a, "ident_a_alpha");
	assert_string_not_equal(o->key, symb_cache__key(lie, &bogus, NULL));
	assert_false(cached(f->cache, lie, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION));
	free_state(&s);
}

/*
 * A warm load through the memo: the stat key finds the identity, the
 * identity the tables; nothing is parsed.
 */
static void test_memo_warm_load(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a");
	struct symb_cache_stats before, after;
	struct symb_file_key k;
	struct symb_image img;
	struct symb_objects *s;
	const struct symb_obj *o;
	int fd = open(a, O_RDONLY | O_CLOEXEC);

	o = load(&s, a, f->cache, NULL);
	free_state(&s);
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), 0);
	close(fd);
	if (symb_file_key__get(fd = open(a, O_RDONLY | O_CLOEXEC), &k) != 1) {
		/* Linux < 6.8: no unique mount ids, no memo; the load hashes the file */
		close(fd);
		symb_image__free(&img);
		return;
	}
	close(fd);
	assert_int_equal(symb_cache__memo_put(f->cache, &k, &img.id), 0);
	symb_image__free(&img);
	symb_cache__stats(f->cache, &before);
	o = load(&s, a, f->cache, NULL);
	symb_cache__stats(f->cache, &after);
	expect_name(o, a, "ident_a_alpha");
	assert_int_equal(symb_objects__stats(s)->cache_hits, 2);
	assert_int_equal(after.memo_hits, before.memo_hits + 1);
	assert_int_equal(after.memo_puts, before.memo_puts);
	free_state(&s);
}

static int lookup(const struct symb_obj *o, const char *unstripped, const char *fn,
		  struct symb_srcline *out)
{
	return symb_dwarf__lookup(o->dwarf, sym_vaddr(unstripped, fn) + 4, out, 8);
}

/*
 * libdw reads the object's file only when a lookup needs it, and only if
 * it is still the content the object was loaded for: rewritten in place
 * meanwhile, its DWARF is not used, and nothing learnt is offered to the
 * cache.
 */
static void test_dwarf_reads_the_loaded_content(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a"), *b = fixture("ident_b");
	char same[PATH_MAX + 16], changed[PATH_MAX + 16];
	struct symb_srcline src[8];
	struct symb_objects *s1, *s2;
	const struct symb_obj *o;
	int n;

	snprintf(same, sizeof(same), "%s/same", f->dir);
	snprintf(changed, sizeof(changed), "%s/changed", f->dir);
	copy_file(a, same, -1);
	copy_file(a, changed, -1);

	o = load(&s1, same, f->cache, NULL);
	assert_non_null(o->dwarf);
	assert_false(symb_dwarf__opened(o->dwarf));
	n = lookup(o, a, "ident_a_alpha", src);
	assert_true(n >= 1);
	assert_string_equal(src[n - 1].function, "ident_a_alpha");
	assert_true(symb_dwarf__lines_changed(o->dwarf));

	o = load(&s2, changed, f->cache, NULL);
	assert_non_null(o->dwarf);
	copy_file(b, changed, -1); /* same inode, other bytes */
	n = lookup(o, a, "ident_a_alpha", src);
	assert_int_equal(n, 0);
	assert_false(symb_dwarf__lines_changed(o->dwarf));
	free_state(&s1);
	free_state(&s2);
}

/*
 * The memory budget: over it, the loaded tables of the least recently used
 * objects go (the DWARF handle too, so another object may open its own),
 * and come back from the cache on the next use, naming the same; under it,
 * or with no budget, nothing goes.
 */
static void test_trim_evicts_and_reloads(void **state)
{
	struct fx *f = *state;
	const char *a = fixture("ident_a");
	struct symb_objects *s;
	const struct symb_obj *o;
	uint64_t hits;

	o = load(&s, a, f->cache, NULL);
	expect_name(o, a, "ident_a_alpha");
	assert_true(o->loaded && o->elf);
	assert_int_equal(symb_objects__trim(s, 0), 0);
	assert_int_equal(symb_objects__trim(s, UINT64_MAX), 0);
	assert_true(o->elf);
	assert_true(symb_objects__stats(s)->heap_bytes > 0);
	/* a budget of one byte: everything loaded goes */
	assert_int_equal(symb_objects__trim(s, 1), 1);
	assert_false(o->loaded);
	assert_null(o->elf);
	assert_null(o->dwarf);
	assert_false(o->have_deltas);
	assert_int_equal(symb_objects__stats(s)->evicted, 1);
	assert_int_equal(symb_objects__stats(s)->objs, 1); /* the object stays */
	/* the next use loads it again, from the cache */
	hits = symb_objects__stats(s)->cache_hits;
	o = symb_objects__load(s, 0);
	expect_name(o, a, "ident_a_alpha");
	assert_true(symb_objects__stats(s)->cache_hits > hits);
	assert_non_null(o->dwarf);
	free_state(&s);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_claimed_build_id_is_not_a_key),
		T(test_debug_file_must_match),
		T(test_debug_file_keys),
		T(test_memo_serves_lookups_only),
		T(test_memo_warm_load),
		T(test_dwarf_reads_the_loaded_content),
		T(test_trim_evicts_and_reloads),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
