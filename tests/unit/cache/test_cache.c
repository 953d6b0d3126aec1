// SPDX-License-Identifier: MIT
/*
 * Unit tests for symbolizer/cache/cache.c: the get/put contract, LRU eviction,
 * persistence, several processes on one file, the file's mode and symlink
 * refusal, and recovery from damaged files (garbage, truncation, a wrong
 * schema version, a blob edited behind the checksum's back, a broken
 * overflow chain), read-only directories and a full disk; the memo (its
 * key, boots, bad rows, its bound) and the keys made from identities.
 *
 * Each test works in its own directory under $TMPDIR (or /tmp). Warnings
 * the cache prints are captured (stderr redirected to a file) and checked.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include <sqlite3.h>

#include "cache.h"

struct fx {
	char dir[PATH_MAX];
	char path[PATH_MAX];
	char side[PATH_MAX + 32];
	int saved_stderr;
	char errfile[PATH_MAX];
};

static int fx_setup(void **state)
{
	const char *tmp = getenv("TMPDIR");
	struct fx *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	snprintf(f->dir, sizeof(f->dir), "%s/lp-cache-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/cache.db", f->dir);
	snprintf(f->errfile, sizeof(f->errfile), "%s/stderr.txt", f->dir);
	f->saved_stderr = -1;
	*state = f;
	return 0;
}

static int fx_teardown(void **state)
{
	struct fx *f = *state;
	char cmd[PATH_MAX + 16];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", f->dir);
	free(f);
	return 0;
}

static const char *side(struct fx *f, const char *suffix)
{
	snprintf(f->side, sizeof(f->side), "%s%s", f->path, suffix);
	return f->side;
}

/* Redirects stderr (where lp_warn writes) to a file until capture_end. */
static void capture_start(struct fx *f)
{
	int fd = open(f->errfile, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	f->saved_stderr = dup(STDERR_FILENO);
	assert_true(f->saved_stderr >= 0);
	assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
	close(fd);
}

/* Restores stderr; returns what was written (static buffer), echoed for the log. */
static const char *capture_end(struct fx *f)
{
	static char buf[8192];
	ssize_t n;
	int fd;

	assert_int_equal(dup2(f->saved_stderr, STDERR_FILENO), STDERR_FILENO);
	close(f->saved_stderr);
	f->saved_stderr = -1;
	fd = open(f->errfile, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	fputs(buf, stderr);
	return buf;
}

static void fill(uint8_t *buf, size_t len, unsigned int seed)
{
	size_t i;

	for (i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7 + (i >> 8));
}

static void put_n(struct symb_cache *c, const char *key, size_t len, unsigned int seed)
{
	uint8_t *buf = malloc(len ? len : 1);

	assert_non_null(buf);
	fill(buf, len, seed);
	assert_int_equal(symb_cache__put(c, key, SYMB_CACHE_SYMBOLS, 1, buf, len), 0);
	free(buf);
}

/* Asserts key holds the blob put_n(key, len, seed) stored. */
static void expect_blob(struct symb_cache *c, const char *key, size_t len, unsigned int seed)
{
	uint8_t *want = malloc(len ? len : 1), *got = NULL;
	size_t n = 0;

	assert_non_null(want);
	fill(want, len, seed);
	assert_int_equal(symb_cache__get(c, key, SYMB_CACHE_SYMBOLS, 1, &got, &n), 0);
	assert_int_equal(n, len);
	assert_memory_equal(got, want, len);
	free(got);
	free(want);
}

static void expect_miss(struct symb_cache *c, const char *key)
{
	uint8_t *got = (uint8_t *)0x1;
	size_t n = 7;

	assert_int_equal(symb_cache__get(c, key, SYMB_CACHE_SYMBOLS, 1, &got, &n), -ENOENT);
	/* Nothing is handed out on a miss. */
	assert_ptr_equal(got, (uint8_t *)0x1);
	assert_int_equal(n, 7);
}

static void test_roundtrip(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	uint8_t *got;
	size_t n;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	put_n(c, "b:0123abcd", 100000, 1);
	put_n(c, "p:/usr/bin/x:10:20", 10, 2);
	put_n(c, "b:empty", 0, 3);
	expect_blob(c, "b:0123abcd", 100000, 1);
	expect_blob(c, "p:/usr/bin/x:10:20", 10, 2);
	expect_blob(c, "b:empty", 0, 3);
	expect_miss(c, "b:nothing");
	/* put replaces */
	put_n(c, "b:0123abcd", 5000, 9);
	expect_blob(c, "b:0123abcd", 5000, 9);
	/* the same key under another kind is another row */
	assert_int_equal(symb_cache__put(c, "b:0123abcd", SYMB_CACHE_DELTAS, 1, "xyz", 3), 0);
	assert_int_equal(symb_cache__get(c, "b:0123abcd", SYMB_CACHE_DELTAS, 1, &got, &n), 0);
	assert_int_equal(n, 3);
	assert_memory_equal(got, "xyz", 3);
	free(got);
	expect_blob(c, "b:0123abcd", 5000, 9);

	symb_cache__stats(c, &st);
	assert_int_equal(st.puts, 5);
	assert_int_equal(st.hits, 6);
	assert_int_equal(st.misses, 1);
	assert_int_equal(st.bad_rows, 0);
	assert_int_equal(st.errors, 0);
	assert_int_equal(st.evictions, 0);
	assert_int_equal(st.bytes, 5000 + 10 + 0 + 3);

	assert_int_equal(symb_cache__get(c, NULL, SYMB_CACHE_SYMBOLS, 1, &got, &n), -EINVAL);
	assert_int_equal(symb_cache__put(c, NULL, SYMB_CACHE_SYMBOLS, 1, "", 0), -EINVAL);
	symb_cache__close(c);
	symb_cache__close(NULL);
}

/* The checksum column is CRC-32C, as schema/cache.sql documents. */
static void test_checksum_column(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;
	sqlite3_stmt *s;
	sqlite3 *db;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(symb_cache__put(c, "k", SYMB_CACHE_SYMBOLS, 1, "123456789", 9), 0);
	symb_cache__close(c);
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "SELECT checksum, size FROM entries", -1, &s, NULL),
			 SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_int_equal(sqlite3_column_int64(s, 0), 0xe3069283);
	assert_int_equal(sqlite3_column_int64(s, 1), 9);
	sqlite3_finalize(s);
	sqlite3_close(db);
}

static void test_version_kind_mismatch(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	uint8_t *got;
	size_t n;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	put_n(c, "b:aa", 64, 1);
	assert_int_equal(symb_cache__get(c, "b:aa", SYMB_CACHE_SYMBOLS, 2, &got, &n), -ENOENT);
	assert_int_equal(symb_cache__get(c, "b:aa", SYMB_CACHE_DELTAS, 1, &got, &n), -ENOENT);
	/* A mismatch is a miss, not damage: the row stays for its own version. */
	expect_blob(c, "b:aa", 64, 1);
	/* A put of the new version replaces the old one. */
	assert_int_equal(symb_cache__put(c, "b:aa", SYMB_CACHE_SYMBOLS, 2, "v2", 2), 0);
	expect_miss(c, "b:aa");
	assert_int_equal(symb_cache__get(c, "b:aa", SYMB_CACHE_SYMBOLS, 2, &got, &n), 0);
	assert_int_equal(n, 2);
	free(got);
	symb_cache__stats(c, &st);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.bad_rows, 0);
	assert_int_equal(st.bytes, 2);
	symb_cache__close(c);
}

static void test_lru_eviction(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;

	assert_int_equal(symb_cache__open(f->path, 1000, &c), 0);
	put_n(c, "a", 300, 1);
	put_n(c, "b", 300, 2);
	put_n(c, "c", 300, 3);
	expect_blob(c, "a", 300, 1); /* a is now newer than b and c */
	put_n(c, "d", 300, 4);	     /* 1200 > 1000: b, the least recently used, goes */
	expect_miss(c, "b");
	expect_blob(c, "c", 300, 3); /* order now a, d, c */
	put_n(c, "e", 600, 5);	     /* needs 500 freed: a and d go */
	expect_miss(c, "a");
	expect_miss(c, "d");
	expect_blob(c, "c", 300, 3);
	expect_blob(c, "e", 600, 5);
	symb_cache__stats(c, &st);
	assert_int_equal(st.evictions, 3);
	assert_int_equal(st.bytes, 900);
	/* A blob the size of the budget fits alone. */
	put_n(c, "f", 1000, 6);
	expect_miss(c, "c");
	expect_miss(c, "e");
	expect_blob(c, "f", 1000, 6);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bytes, 1000);
	symb_cache__close(c);
}

/*
 * A hit's last-use update is deferred (one transaction for many hits) but
 * not lost: made by the next put before it evicts, else at close, and more
 * than a batch of hits is flushed along the way.
 */
static void test_lru_deferred_touches(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;
	char key[16];

	assert_int_equal(symb_cache__open(f->path, 1000, &c), 0);
	put_n(c, "a", 300, 1);
	put_n(c, "b", 300, 2);
	put_n(c, "c", 300, 3);
	expect_blob(c, "a", 300, 1);
	expect_blob(c, "b", 300, 2);
	expect_blob(c, "a", 300, 1); /* hit again: now the newest of the three */
	symb_cache__close(c);	     /* order c, b, a */
	assert_int_equal(symb_cache__open(f->path, 1000, &c), 0);
	put_n(c, "d", 300, 4); /* c goes */
	expect_miss(c, "c");
	put_n(c, "e", 300, 5); /* b goes */
	expect_miss(c, "b");
	expect_blob(c, "a", 300, 1);
	symb_cache__close(c);

	/* 100 rows, all hit in order but the first: a batch flushes on the way */
	assert_int_equal(symb_cache__open(f->path, 100 * 10, &c), 0);
	for (int i = 0; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put_n(c, key, 10, (uint8_t)i);
	}
	for (int i = 1; i < 100; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		expect_blob(c, key, 10, (uint8_t)i);
	}
	put_n(c, "z", 10, 7); /* k0, the least recently used, goes */
	expect_miss(c, "k0");
	expect_blob(c, "k1", 10, 1);
	symb_cache__close(c);
}

static void test_e2big(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;
	static uint8_t buf[2000];

	assert_int_equal(symb_cache__open(f->path, 1000, &c), 0);
	put_n(c, "small", 10, 1);
	assert_int_equal(symb_cache__put(c, "big", SYMB_CACHE_SYMBOLS, 1, buf, 1001), -E2BIG);
	/* Checked before the blob is read: the length alone decides. */
	assert_int_equal(
		symb_cache__put(c, "huge", SYMB_CACHE_SYMBOLS, 1, buf, SYMB_CACHE_MAX_BLOB + 1),
		-E2BIG);
	expect_miss(c, "big");
	expect_blob(c, "small", 10, 1);
	symb_cache__close(c);

	assert_int_equal(symb_cache__open(f->path, UINT64_MAX, &c), 0);
	assert_int_equal(
		symb_cache__put(c, "huge", SYMB_CACHE_SYMBOLS, 1, buf, SYMB_CACHE_MAX_BLOB + 1),
		-E2BIG);
	symb_cache__close(c);
}

static void test_persistence(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	put_n(c, "b:1", 70000, 1);
	put_n(c, "b:2", 123, 2);
	symb_cache__close(c);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bytes, 70000 + 123); /* the total is read at open */
	expect_blob(c, "b:1", 70000, 1);
	expect_blob(c, "b:2", 123, 2);
	symb_cache__close(c);
	/* No damage was reported, so nothing was moved aside. */
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
}

/*
 * Several processes put and get shared and own keys on one file, with a
 * budget that makes them evict each other's rows. Every call must give 0 or
 * a miss, never an error (busy beyond the timeout, corruption).
 */
#define CONC_PROCS 4
#define CONC_ITERS 300

static int conc_child(const char *path, int id)
{
	struct symb_cache_stats st;
	struct symb_cache *c;
	char key[64];
	uint8_t buf[4096], *got;
	size_t n, len;
	int i, err;

	if (symb_cache__open(path, 256 << 10, &c))
		return 10;
	for (i = 0; i < CONC_ITERS; i++) {
		len = 100 + (i * 37 + id * 11) % (sizeof(buf) - 100);
		snprintf(key, sizeof(key), "%s:%d", i % 3 ? "own" : "shared",
			 i % 3 ? id * 1000 + i : i % 17);
		memset(buf, (uint8_t)(len & 0xff), len);
		err = symb_cache__put(c, key, SYMB_CACHE_SYMBOLS, 1, buf, len);
		if (err)
			return 11;
		snprintf(key, sizeof(key), "shared:%d", (i * 7) % 17);
		err = symb_cache__get(c, key, SYMB_CACHE_SYMBOLS, 1, &got, &n);
		if (err && err != -ENOENT)
			return 12;
		if (!err) {
			/* Whoever wrote it, the content is consistent with its length. */
			if (n < 100 || got[0] != (uint8_t)(n & 0xff) || got[n - 1] != got[0])
				return 13;
			free(got);
		}
	}
	symb_cache__stats(c, &st);
	symb_cache__close(c);
	return st.errors || st.bad_rows ? 14 : 0;
}

static void test_concurrent_processes(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	pid_t pids[CONC_PROCS];
	int i, status;

	/* The children also race to create the file and its schema. */
	for (i = 0; i < CONC_PROCS; i++) {
		pids[i] = fork();
		assert_true(pids[i] >= 0);
		if (pids[i] == 0)
			_exit(conc_child(f->path, i));
	}
	for (i = 0; i < CONC_PROCS; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
	assert_int_equal(symb_cache__open(f->path, 256 << 10, &c), 0);
	symb_cache__stats(c, &st);
	assert_true(st.bytes > 0 && st.bytes <= 256 << 10);
	symb_cache__close(c);
}

static void test_mode_0600(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;
	struct stat st;
	mode_t old;
	int fd;

	old = umask(0);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	put_n(c, "k", 10, 1);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	/* SQLite gives its side files the database's mode. */
	assert_int_equal(stat(side(f, "-wal"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(side(f, "-shm"), &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	symb_cache__close(c);
	umask(old);

	/* An existing file of ours with a looser mode is tightened. */
	assert_int_equal(unlink(f->path), 0);
	fd = open(f->path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(fchmod(fd, 0644), 0);
	close(fd);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	symb_cache__close(c);
}

static void test_symlink_refused(void **state)
{
	struct fx *f = *state;
	char target[PATH_MAX + 16];
	struct symb_cache *c = (void *)0x1;
	const char *out;

	snprintf(target, sizeof(target), "%s/elsewhere", f->dir);
	assert_int_equal(symlink(target, f->path), 0);
	capture_start(f);
	assert_int_equal(symb_cache__open(f->path, 0, &c), -ELOOP);
	out = capture_end(f);
	assert_null(c);
	assert_non_null(strstr(out, "symbolic link"));
	/* The symlink's target was not created. */
	assert_int_equal(access(target, F_OK), -1);
	assert_int_equal(unlink(f->path), 0);

	/* Nor a WAL file that is a symlink. */
	assert_int_equal(symlink(target, side(f, "-wal")), 0);
	capture_start(f);
	assert_int_equal(symb_cache__open(f->path, 0, &c), -ELOOP);
	capture_end(f);
	assert_int_equal(access(target, F_OK), -1);
}

/* Opens a file expected to be damaged: warned about, moved aside, fresh and working. */
static void expect_recovered(struct fx *f, const char *cause)
{
	struct symb_cache_stats st;
	struct symb_cache *c;
	const char *out;

	capture_start(f);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	out = capture_end(f);
	assert_non_null(strstr(out, f->path));
	assert_non_null(strstr(out, "damaged"));
	if (cause && !strstr(out, cause))
		fail_msg("warning does not name the cause \"%s\": %s", cause, out);
	assert_int_equal(access(side(f, ".corrupt"), F_OK), 0);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bytes, 0);
	expect_miss(c, "b:1");
	put_n(c, "b:new", 5000, 7);
	expect_blob(c, "b:new", 5000, 7);
	symb_cache__close(c);
	/* And it stays healthy. */
	capture_start(f);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	out = capture_end(f);
	assert_null(strstr(out, "damaged"));
	expect_blob(c, "b:new", 5000, 7);
	symb_cache__close(c);
}

static void write_file(const char *path, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, buf, len), (ssize_t)len);
	close(fd);
}

static void test_garbage_file(void **state)
{
	struct fx *f = *state;
	uint8_t junk[10000];

	fill(junk, sizeof(junk), 42);
	write_file(f->path, junk, sizeof(junk));
	expect_recovered(f, "not a database");
}

static void test_short_garbage_file(void **state)
{
	struct fx *f = *state;

	write_file(f->path, "hello", 5);
	expect_recovered(f, NULL);
}

/*
 * A healthy cache with a few rows, closed (so the WAL is checkpointed and
 * empty: it stays, as SQLite's files must for a sandboxed symbolizer).
 */
static void make_cache(struct fx *f)
{
	struct symb_cache *c;
	struct stat st;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	put_n(c, "b:1", 200000, 1);
	put_n(c, "b:2", 300000, 2);
	put_n(c, "b:3", 50, 3);
	symb_cache__close(c);
	assert_int_equal(stat(side(f, "-wal"), &st), 0);
	assert_int_equal(st.st_size, 0);
}

static void test_truncated_database(void **state)
{
	struct fx *f = *state;
	struct stat st;

	make_cache(f);
	assert_int_equal(stat(f->path, &st), 0);
	assert_int_equal(truncate(f->path, st.st_size / 2), 0);
	expect_recovered(f, "truncated");
}

static void exec_sql(const char *path, const char *sql)
{
	sqlite3 *db;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
		fail_msg("%s: %s", sql, sqlite3_errmsg(db));
	sqlite3_close(db);
}

static void test_wrong_schema_version(void **state)
{
	struct fx *f = *state;

	make_cache(f);
	exec_sql(f->path, "PRAGMA user_version = 99");
	expect_recovered(f, "schema version");
}

/* A cache of version 1 (keyed by claimed build-ids) starts over, with a warning. */
static void test_older_schema_version(void **state)
{
	struct fx *f = *state;

	make_cache(f);
	exec_sql(f->path, "PRAGMA user_version = 1");
	expect_recovered(f, "older schema version");
}

static void test_foreign_database(void **state)
{
	struct fx *f = *state;

	exec_sql(f->path, "CREATE TABLE t (x); INSERT INTO t VALUES (1)");
	expect_recovered(f, NULL);
}

static void test_bad_byte_total(void **state)
{
	struct fx *f = *state;

	make_cache(f);
	exec_sql(f->path, "UPDATE meta SET value = 3 WHERE name = 'bytes'");
	expect_recovered(f, "byte total");
}

static void flip_blob_byte(const char *path, const char *key, size_t at)
{
	sqlite3_stmt *s;
	uint8_t *copy;
	sqlite3 *db;
	int n;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(
		sqlite3_prepare_v2(db,
				   "SELECT b.data FROM blobs b JOIN entries e ON e.id = b.id"
				   " WHERE e.key = ?1",
				   -1, &s, NULL),
		SQLITE_OK);
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	n = sqlite3_column_bytes(s, 0);
	assert_true((size_t)n > at);
	copy = malloc(n);
	assert_non_null(copy);
	memcpy(copy, sqlite3_column_blob(s, 0), n);
	sqlite3_finalize(s);
	copy[at] ^= 0x40;
	assert_int_equal(sqlite3_prepare_v2(db,
					    "UPDATE blobs SET data = ?2 WHERE id ="
					    " (SELECT id FROM entries WHERE key = ?1)",
					    -1, &s, NULL),
			 SQLITE_OK);
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_blob(s, 2, copy, n, SQLITE_STATIC);
	assert_int_equal(sqlite3_step(s), SQLITE_DONE);
	assert_int_equal(sqlite3_changes(db), 1);
	sqlite3_finalize(s);
	sqlite3_close(db);
	free(copy);
}

/*
 * Rows edited behind the cache's back (the blob changed without its
 * checksum, a size that lies, a missing blob): each is deleted on its first
 * read, counted, and a miss; the rest of the cache is untouched.
 */
static void test_bad_rows(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	const char *out;

	make_cache(f);
	/* Flip one byte in the middle of b:1's blob, same length, same checksum column. */
	flip_blob_byte(f->path, "b:1", 100000);
	/* b:3's size column lies; the byte total follows it, as the triggers would. */
	exec_sql(f->path, "UPDATE entries SET size = 49 WHERE key = 'b:3';"
			  "UPDATE meta SET value = value - 1 WHERE name = 'bytes'");
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	capture_start(f);
	expect_miss(c, "b:1");
	expect_miss(c, "b:3");
	out = capture_end(f);
	assert_non_null(strstr(out, "checksum"));
	assert_non_null(strstr(out, "size"));
	/* Deleted: the next get is a plain miss. */
	expect_miss(c, "b:1");
	expect_blob(c, "b:2", 300000, 2);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bad_rows, 2);
	assert_int_equal(st.misses, 3);
	assert_int_equal(st.errors, 0);
	symb_cache__close(c);
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bytes, 300000);
	symb_cache__close(c);
}

/*
 * The open check does not walk the blobs table (cache.c's cache_check): an
 * entry whose blob row is gone, and a blob row without an entry, pass it.
 * The first is a bad row on its first read, deleted and a miss; the second
 * costs its space only. Nothing is moved aside and the other rows hit.
 */
static void test_missing_and_stray_blob(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	const char *out;

	make_cache(f);
	exec_sql(f->path, "DELETE FROM blobs WHERE id = (SELECT id FROM entries WHERE key = 'b:3');"
			  "INSERT INTO blobs (id, data) VALUES (1000000, x'00')");
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	capture_start(f);
	expect_miss(c, "b:3");
	out = capture_end(f);
	assert_non_null(strstr(out, "no blob"));
	expect_blob(c, "b:1", 200000, 1);
	expect_blob(c, "b:2", 300000, 2);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bad_rows, 1);
	assert_int_equal(st.errors, 0);
	symb_cache__close(c);
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
	/* b:3's entry went with its bytes; the stray row is not counted */
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	symb_cache__stats(c, &st);
	assert_int_equal(st.bytes, 500000);
	symb_cache__close(c);
}

/*
 * Makes a cache whose row "b:big" (len bytes of 0xab) has a zeroed
 * next-page number inside its overflow chain, beside a healthy "b:small".
 */
static void make_broken_chain(struct fx *f, const uint8_t *blob, size_t len)
{
	struct symb_cache *c;
	uint8_t *file;
	size_t flen, i, run = 0, at = 0, pgsz;
	struct stat sb;
	int fd;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(symb_cache__put(c, "b:big", SYMB_CACHE_SYMBOLS, 1, blob, len), 0);
	put_n(c, "b:small", 10, 1);
	symb_cache__close(c);

	/* A page in the middle of the run of 0xab bytes is an overflow page. */
	fd = open(f->path, O_RDWR | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(fstat(fd, &sb), 0);
	flen = sb.st_size;
	file = malloc(flen);
	assert_non_null(file);
	assert_int_equal(pread(fd, file, flen, 0), (ssize_t)flen);
	/* Overflow pages: a 4-byte next-page number, then content only. */
	pgsz = file[16] << 8 | file[17];
	if (pgsz == 1)
		pgsz = 65536;
	for (i = pgsz; i + pgsz <= flen; i += pgsz) {
		size_t k;

		for (k = 4; k < pgsz && file[i + k] == 0xab; k++)
			;
		if (k == pgsz && ++run == 4) {
			at = i;
			break;
		}
	}
	assert_true(at > 0);
	/* Zero the next-page number: the chain ends before the blob does. */
	memset(file, 0, 4);
	assert_int_equal(pwrite(fd, file, 4, at), 4);
	close(fd);
	free(file);
}

/*
 * A zeroed page inside a blob's overflow chain passes the start-up check
 * (which does not walk overflow chains) and SQLite reports SQLITE_CORRUPT
 * when the blob is read: the file is moved aside and the object goes on
 * with a fresh one.
 */
static void test_corrupt_overflow_chain(void **state)
{
	struct fx *f = *state;
	struct symb_cache_stats st;
	struct symb_cache *c;
	size_t len = 1 << 20;
	uint8_t *blob = malloc(len);
	const char *out;

	assert_non_null(blob);
	memset(blob, 0xab, len);
	make_broken_chain(f, blob, len);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	capture_start(f);
	expect_miss(c, "b:big");
	out = capture_end(f);
	assert_non_null(strstr(out, "damaged"));
	assert_int_equal(access(side(f, ".corrupt"), F_OK), 0);
	/* The object works on the new file. */
	expect_miss(c, "b:small");
	assert_int_equal(symb_cache__put(c, "b:big", SYMB_CACHE_SYMBOLS, 1, blob, len), 0);
	symb_cache__stats(c, &st);
	assert_int_equal(st.errors, 1);
	symb_cache__close(c);
	free(blob);
}

/*
 * The same damage found by a sealed object (the symbolizer in its
 * sandbox, where no file can be renamed or made): nothing is moved aside
 * or created, the object gives up on the file (every call fails, a miss),
 * and the next open, unsealed, moves it aside as marked.
 */
static void test_corrupt_while_sealed(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;
	size_t len = 1 << 20;
	uint8_t *blob = malloc(len), *got = NULL;
	const char *out;
	size_t n;

	assert_non_null(blob);
	memset(blob, 0xab, len);
	make_broken_chain(f, blob, len);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	symb_cache__seal(c);
	expect_blob(c, "b:small", 10, 1);
	capture_start(f);
	expect_miss(c, "b:big");
	out = capture_end(f);
	assert_non_null(strstr(out, "moved aside at the next start"));
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
	/* done with the file: no call reaches it, none fails loudly */
	assert_int_equal(symb_cache__get(c, "b:small", SYMB_CACHE_SYMBOLS, 1, &got, &n), -EIO);
	assert_int_equal(symb_cache__put(c, "b:new", SYMB_CACHE_SYMBOLS, 1, blob, 10), -EIO);
	symb_cache__close(c);
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
	expect_recovered(f, "a symbolizer found it damaged");
	free(blob);
}

/* Runs fn in a child as an unprivileged user, so permissions apply even to root. */
static int run_unprivileged(int (*fn)(struct fx *), struct fx *f)
{
	pid_t pid;
	int status;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgid(65534) || setuid(65534)))
			_exit(99);
		_exit(fn(f));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	return WEXITSTATUS(status);
}

static int readonly_child(struct fx *f)
{
	struct symb_cache *c = NULL;
	int err = symb_cache__open(f->path, 0, &c);

	return err == -EACCES && !c ? 0 : 1;
}

static void test_readonly_directory(void **state)
{
	struct fx *f = *state;

	/* The directory must be reachable, but not writable, by the child. */
	assert_int_equal(chmod(f->dir, 0555), 0);
	capture_start(f);
	assert_int_equal(run_unprivileged(readonly_child, f), 0);
	capture_end(f);
	assert_int_equal(chmod(f->dir, 0700), 0);
}

/*
 * A full disk, made with RLIMIT_FSIZE (writes past it fail with EFBIG):
 * the put fails with an error and the cache still answers.
 */
static int full_disk_child(struct fx *f)
{
	struct rlimit rl = {256 << 10, 256 << 10};
	struct symb_cache *c;
	uint8_t *buf, *got;
	size_t len = 1 << 20, n;
	int err;

	signal(SIGXFSZ, SIG_IGN);
	if (symb_cache__open(f->path, 0, &c))
		return 1;
	if (symb_cache__put(c, "small", SYMB_CACHE_SYMBOLS, 1, "abc", 3))
		return 2;
	if (setrlimit(RLIMIT_FSIZE, &rl))
		return 3;
	buf = calloc(1, len);
	if (!buf)
		return 4;
	err = symb_cache__put(c, "big", SYMB_CACHE_SYMBOLS, 1, buf, len);
	free(buf);
	if (err >= 0)
		return 5;
	if (symb_cache__get(c, "small", SYMB_CACHE_SYMBOLS, 1, &got, &n) || n != 3)
		return 6;
	free(got);
	if (symb_cache__get(c, "big", SYMB_CACHE_SYMBOLS, 1, &got, &n) != -ENOENT)
		return 7;
	symb_cache__close(c);
	return 0;
}

static void test_full_disk(void **state)
{
	struct fx *f = *state;
	pid_t pid;
	int status;

	capture_start(f);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(full_disk_child(f));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	capture_end(f);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_bad_paths(void **state)
{
	struct fx *f = *state;
	char path[PATH_MAX + 16];
	struct symb_cache *c;

	capture_start(f);
	snprintf(path, sizeof(path), "%s/no/such/dir/cache.db", f->dir);
	assert_int_equal(symb_cache__open(path, 0, &c), -ENOENT);
	assert_int_equal(symb_cache__open(f->dir, 0, &c), -EISDIR);
	assert_int_equal(symb_cache__open("", 0, &c), -EINVAL);
	capture_end(f);
}

/* ---- the memo ----------------------------------------------------------- */

static struct symb_file_key memo_key(uint64_t ino)
{
	return (struct symb_file_key){.mnt = 0x100000123ull,
				      .dev = 0x801,
				      .ino = ino,
				      .size = 4096,
				      .mtime_ns = 1700000000123456789ll,
				      .ctime_ns = 1700000000987654321ll};
}

static struct symb_ident ident_of(unsigned int seed)
{
	struct symb_ident id;

	fill(id.b, sizeof(id.b), seed);
	return id;
}

static void expect_memo(struct symb_cache *c, const struct symb_file_key *k,
			const struct symb_ident *want)
{
	struct symb_ident got;

	assert_int_equal(symb_cache__memo_get(c, k, &got), 0);
	assert_memory_equal(got.b, want->b, sizeof(got.b));
}

static void expect_no_memo(struct symb_cache *c, const struct symb_file_key *k)
{
	struct symb_ident got;

	assert_int_equal(symb_cache__memo_get(c, k, &got), -ENOENT);
}

static int64_t count_rows(const char *path, const char *sql)
{
	sqlite3_stmt *s;
	sqlite3 *db;
	int64_t n;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	n = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return n;
}

/*
 * A memo row answers exactly its key: every field of it (mount, device,
 * inode, size, mtime, ctime) tells files apart; a put replaces; rows
 * persist and are not counted against the blob budget.
 */
static void test_memo_key(void **state)
{
	struct fx *f = *state;
	struct symb_file_key k = memo_key(7), other;
	struct symb_ident a = ident_of(1), b = ident_of(2);
	struct symb_cache_stats st;
	struct symb_cache *c;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	expect_no_memo(c, &k);
	assert_int_equal(symb_cache__memo_put(c, &k, &a), 0);
	expect_memo(c, &k, &a);
	for (int field = 0; field < 6; field++) {
		other = k;
		switch (field) {
		case 0:
			other.mnt++;
			break;
		case 1:
			other.dev++;
			break;
		case 2:
			other.ino++;
			break;
		case 3:
			other.size++;
			break;
		case 4:
			other.mtime_ns++;
			break;
		default:
			other.ctime_ns++;
			break;
		}
		expect_no_memo(c, &other);
	}
	/* 64-bit values survive SQLite's signed integers */
	other = k;
	other.ino = UINT64_MAX - 1;
	other.dev = UINT64_MAX;
	assert_int_equal(symb_cache__memo_put(c, &other, &b), 0);
	expect_memo(c, &other, &b);
	assert_int_equal(symb_cache__memo_put(c, &k, &b), 0);
	expect_memo(c, &k, &b);
	symb_cache__stats(c, &st);
	assert_int_equal(st.memo_puts, 3);
	assert_int_equal(st.memo_hits, 3);
	assert_int_equal(st.memo_misses, 7);
	assert_int_equal(st.bytes, 0);
	assert_int_equal(symb_cache__memo_get(c, NULL, &a), -EINVAL);
	assert_int_equal(symb_cache__memo_put(c, &k, NULL), -EINVAL);
	symb_cache__close(c);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	expect_memo(c, &k, &b);
	symb_cache__close(c);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo"), 2);
}

/*
 * Rows of another boot never answer (mount ids and devices mean something
 * else after a reboot), and the next put deletes them.
 */
static void test_memo_other_boot(void **state)
{
	struct fx *f = *state;
	struct symb_file_key k = memo_key(7), k2 = memo_key(8);
	struct symb_ident a = ident_of(1);
	struct symb_cache *c;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(symb_cache__memo_put(c, &k, &a), 0);
	symb_cache__close(c);
	exec_sql(f->path, "UPDATE memo SET boot = '00000000-0000-0000-0000-000000000000'");
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	expect_no_memo(c, &k);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo"), 1);
	assert_int_equal(symb_cache__memo_put(c, &k2, &a), 0);
	expect_memo(c, &k2, &a);
	expect_no_memo(c, &k);
	symb_cache__close(c);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo"), 1);
}

/* A row whose identity is not 32 bytes of blob is deleted, counted and a miss. */
static void test_memo_bad_row(void **state)
{
	static const char *const bad[] = {
		"UPDATE memo SET ident = x'0102' WHERE ino = 7",
		"UPDATE memo SET ident = '0123456789abcdef0123456789abcdef' WHERE ino = 7",
		"UPDATE memo SET ident = zeroblob(33) WHERE ino = 7",
	};
	struct fx *f = *state;
	struct symb_file_key k = memo_key(7), k2 = memo_key(8);
	struct symb_ident a = ident_of(1), b = ident_of(2);
	struct symb_cache_stats st;
	struct symb_cache *c;
	const char *out;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
		assert_int_equal(symb_cache__memo_put(c, &k, &a), 0);
		assert_int_equal(symb_cache__memo_put(c, &k2, &b), 0);
		symb_cache__close(c);
		exec_sql(f->path, bad[i]);
		assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
		capture_start(f);
		expect_no_memo(c, &k);
		out = capture_end(f);
		assert_non_null(strstr(out, "bad memo row"));
		expect_no_memo(c, &k);
		expect_memo(c, &k2, &b);
		symb_cache__stats(c, &st);
		assert_int_equal(st.bad_rows, 1);
		symb_cache__close(c);
		assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo WHERE ino = 7"), 0);
	}
	assert_int_equal(access(side(f, ".corrupt"), F_OK), -1);
}

/* A put keeps the SYMB_CACHE_MEMO_MAX most recent rows (row ids grow with each put). */
static void test_memo_bound(void **state)
{
	struct fx *f = *state;
	struct symb_file_key k = memo_key(1000);
	struct symb_ident a = ident_of(1);
	struct symb_cache *c;
	char sql[256];

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	for (uint64_t ino = 1; ino <= 5; ino++) {
		struct symb_file_key old = memo_key(ino);

		assert_int_equal(symb_cache__memo_put(c, &old, &a), 0);
	}
	symb_cache__close(c);
	/* one row put long after: the five are now older than the bound */
	snprintf(sql, sizeof(sql),
		 "INSERT INTO memo (id, boot, mnt, dev, ino, size, mtime, ctime, ident)"
		 " SELECT %d, boot, mnt, dev, 999, size, mtime, ctime, ident FROM memo"
		 " WHERE ino = 5",
		 SYMB_CACHE_MEMO_MAX + 5);
	exec_sql(f->path, sql);
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(symb_cache__memo_put(c, &k, &a), 0);
	symb_cache__close(c);
	/* ids 1..5 are at most the newest (MAX + 6) - MAX: gone; 999 and 1000 stay */
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo"), 2);
	assert_int_equal(count_rows(f->path, "SELECT count(*) FROM memo WHERE ino IN (999, 1000)"),
			 2);
}

/* Keys name the identities in hex: one for a binary, two joined by '+'. */
static void test_keys(void **state)
{
	struct symb_ident a, b;
	char key[SYMB_CACHE_KEY_MAX], want[SYMB_CACHE_KEY_MAX];

	(void)state;
	memset(a.b, 0x00, sizeof(a.b));
	memset(b.b, 0xff, sizeof(b.b));
	a.b[0] = 0x1f;
	b.b[31] = 0xa0;
	snprintf(want, sizeof(want), "c:1f%062d", 0);
	assert_string_equal(symb_cache__key(key, &a, NULL), want);
	snprintf(want, sizeof(want), "c:1f%062d+%.62sa0", 0,
		 "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff");
	assert_string_equal(symb_cache__key(key, &a, &b), want);
	assert_int_equal(strlen(key), SYMB_CACHE_KEY_MAX - 1);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, fx_setup, fx_teardown)
	const struct CMUnitTest tests[] = {
		T(test_roundtrip),
		T(test_checksum_column),
		T(test_version_kind_mismatch),
		T(test_lru_eviction),
		T(test_lru_deferred_touches),
		T(test_e2big),
		T(test_persistence),
		T(test_concurrent_processes),
		T(test_mode_0600),
		T(test_symlink_refused),
		T(test_garbage_file),
		T(test_short_garbage_file),
		T(test_truncated_database),
		T(test_wrong_schema_version),
		T(test_older_schema_version),
		T(test_foreign_database),
		T(test_bad_byte_total),
		T(test_bad_rows),
		T(test_missing_and_stray_blob),
		T(test_corrupt_overflow_chain),
		T(test_corrupt_while_sealed),
		T(test_readonly_directory),
		T(test_full_disk),
		T(test_bad_paths),
		T(test_memo_key),
		T(test_memo_other_boot),
		T(test_memo_bad_row),
		T(test_memo_bound),
		T(test_keys),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
