// SPDX-License-Identifier: MIT
/*
 * The symbol cache under the symbolizer's real seccomp filter (sandbox.c):
 * once the filter is on, no file may be made, removed or renamed, so
 * SQLite must work with the files it opened before (the database, its
 * -wal and -shm): hits, puts that replace rows and evict others (statement
 * journals, temporary b-trees), and the close that checkpoints. Each case
 * runs in a child that enters the sandbox; the parent then checks the
 * directory holds the three files and nothing else, the WAL emptied. And
 * a file's identity and memo key (ident.c) come out inside the sandbox as
 * they do outside it: a call the filter refuses there would not fail, it
 * would quietly cost the memo or the hash.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "cache.h"
#include "ident.h"
#include "sandbox.h"

/* as sandbox.c decides which filter a build has */
#if defined(__SANITIZE_ADDRESS__)
#define SYMB_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SYMB_TEST_SANITIZED 1
#endif
#endif

#define BLOB  (200u << 10)
#define NPUTS 24

struct fx {
	char dir[PATH_MAX];
	char path[PATH_MAX + 16];
};

static int fx_setup(void **state)
{
	static struct fx f;
	const char *tmp = getenv("TMPDIR");

	snprintf(f.dir, sizeof(f.dir), "%s/lp-sandbox-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f.dir))
		return -1;
	snprintf(f.path, sizeof(f.path), "%s/cache.db", f.dir);
	*state = &f;
	return 0;
}

/* Removes the cache's three files; the directory must then be empty. */
static int fx_teardown(void **state)
{
	static const char *const sfx[] = {"", "-wal", "-shm"};
	const struct fx *f = *state;
	char p[PATH_MAX + 32];

	for (unsigned i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, sfx[i]);
		unlink(p);
	}
	return rmdir(f->dir);
}

static void key(char *buf, size_t len, unsigned i)
{
	snprintf(buf, len, "b:%04u", i);
}

/* Puts rows 0..n-1 (blob i filled with i), as a symbolizer stores tables. */
static int put_rows(struct symb_cache *c, unsigned from, unsigned n)
{
	static uint8_t blob[BLOB];
	char k[16];

	for (unsigned i = from; i < from + n; i++) {
		memset(blob, (int)i, sizeof(blob));
		key(k, sizeof(k), i);
		if (symb_cache__put(c, k, SYMB_CACHE_SYMBOLS, 1, blob, sizeof(blob)))
			return 1;
	}
	return 0;
}

/*
 * The child: opens the cache (creating it if need be), seals it, enters
 * the sandbox, checks the filter refuses a new file, then gets, replaces
 * and evicts rows and closes. Exit 0 when everything worked and rows were
 * evicted, 2 when the filter was not on, 1 otherwise.
 */
static int sandboxed_run(const struct fx *f, bool warm)
{
	struct symb_cache_stats st;
	struct symb_cache *c;
	uint8_t *got;
	char k[16], probe[PATH_MAX + 16];
	size_t n;
	int fd, bad = 0;

	if (symb_cache__open(f->path, 2 * NPUTS / 3 * BLOB, &c))
		return 1;
	symb_cache__seal(c);
	if (symb_sandbox_enter())
		return 1;
	snprintf(probe, sizeof(probe), "%s/probe", f->dir);
	fd = open(probe, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	if (fd >= 0 || errno != ENOSYS)
		return 2;
	if (warm) {
		/* hits (their last use written in a batch), then replaced rows */
		for (unsigned i = NPUTS / 3; i < NPUTS / 2; i++) {
			key(k, sizeof(k), i);
			if (symb_cache__get(c, k, SYMB_CACHE_SYMBOLS, 1, &got, &n) || n != BLOB ||
			    got[0] != (uint8_t)i)
				bad = 1;
			free(got);
		}
		bad |= put_rows(c, NPUTS / 3, NPUTS / 3);
	}
	/* more than the budget holds: the least recently used are evicted */
	bad |= put_rows(c, NPUTS, NPUTS);
	symb_cache__stats(c, &st);
	if (!st.evictions || st.errors)
		bad = 1;
	symb_cache__close(c);
	return bad;
}

/* The directory holds the cache's three files and nothing else; the WAL is empty. */
static void expect_only_cache_files(const struct fx *f)
{
	static const char *const want[] = {"cache.db", "cache.db-wal", "cache.db-shm"};
	unsigned seen = 0;
	struct dirent *e;
	struct stat st;
	char p[PATH_MAX + 32];
	DIR *d = opendir(f->dir);

	assert_non_null(d);
	while ((e = readdir(d))) {
		bool known = false;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		for (unsigned i = 0; i < 3; i++)
			known |= !strcmp(e->d_name, want[i]);
		if (!known)
			fail_msg("unexpected file %s/%s", f->dir, e->d_name);
		seen++;
	}
	closedir(d);
	assert_int_equal(seen, 3);
	snprintf(p, sizeof(p), "%s-wal", f->path);
	assert_int_equal(stat(p, &st), 0);
	assert_int_equal(st.st_size, 0);
}

static void run_child(const struct fx *f, bool warm)
{
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0)
		_exit(sandboxed_run(f, warm));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 2)
		fail_msg("the filter let a file be created");
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A cache made by this run: created before the filter, filled and evicted under it. */
static void test_new_cache(void **state)
{
	struct fx *f = *state;

	run_child(f, false);
	expect_only_cache_files(f);
}

/* A cache of an earlier run (closed: its WAL empty): hits, replaced rows, evictions. */
static void test_warm_cache(void **state)
{
	struct fx *f = *state;
	struct symb_cache *c;

	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	assert_int_equal(put_rows(c, 0, NPUTS / 2), 0);
	symb_cache__close(c);
	run_child(f, true);
	expect_only_cache_files(f);
	/* and what it stored is there for the next run */
	assert_int_equal(symb_cache__open(f->path, 0, &c), 0);
	{
		uint8_t *got = NULL;
		size_t n = 0;
		char k[16];

		key(k, sizeof(k), 2 * NPUTS - 1);
		assert_int_equal(symb_cache__get(c, k, SYMB_CACHE_SYMBOLS, 1, &got, &n), 0);
		assert_int_equal(n, BLOB);
		assert_int_equal(got[BLOB - 1], (uint8_t)(2 * NPUTS - 1));
		free(got);
	}
	symb_cache__close(c);
}

/* What ident.c makes of fd: its memo key (and whether the memo may use it) and identity. */
struct ident_of {
	int usable;
	struct symb_file_key key;
	struct symb_ident id;
};

static int ident_of(int fd, struct ident_of *o)
{
	struct symb_image img;
	int err;

	memset(o, 0, sizeof(*o));
	o->usable = symb_file_key__get(fd, &o->key);
	err = symb_image__read(fd, SYMB_IMAGE_ELF, true, &img);
	if (err)
		return err;
	o->id = img.id;
	symb_image__free(&img);
	return o->usable < 0 ? o->usable : 0;
}

static void test_identity_in_sandbox(void **state)
{
	struct ident_of out, in;
	int fd, status;
	pid_t pid;

	(void)state;
	assert_int_equal(symb_ident__init(), 0);
	fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ident_of(fd, &out), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (symb_sandbox_enter() || ident_of(fd, &in))
			_exit(1);
		/* the memo's verdict itself depends on time (a settled ctime): not compared */
		_exit(in.usable != out.usable || memcmp(&in.key, &out.key, sizeof(in.key)) ||
		      memcmp(&in.id, &out.id, sizeof(in.id)));
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	close(fd);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status))
		fail_msg("inside the sandbox the identity or the memo key differs (usable outside: "
			 "%d)",
			 out.usable);
}

/*
 * The spool writer's filter (production builds): files by names in its
 * directory made, renamed and removed; any other open, exec and sockets
 * refused. A sanitizer build's filter only refuses exec and sockets.
 */
static void test_spool_filter(void **state)
{
	char dir[] = "/tmp/lp-spoolf-XXXXXX";
	int status;
	pid_t pid;

	(void)state;
	assert_non_null(mkdtemp(dir));
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int d = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd, bad = 0;

		if (d < 0 || symb_sandbox_enter_spool(d))
			_exit(10);
		fd = openat(d, "w", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		bad |= (fd < 0) << 0;
		bad |= (renameat(d, "w", d, "w2") != 0) << 1;
		bad |= (unlinkat(d, "w2", 0) != 0) << 2;
		bad |= (execl("/bin/true", "true", (char *)NULL) == 0) << 3;
		bad |= (socket(AF_UNIX, SOCK_STREAM, 0) >= 0) << 4;
#ifndef SYMB_TEST_SANITIZED
		bad |= (open("/etc/hostname", O_RDONLY) >= 0) << 5;
		bad |= (renameat(AT_FDCWD, "/tmp/lp-nonexistent-a", AT_FDCWD,
				 "/tmp/lp-nonexistent-b") == 0 ||
			errno != ENOSYS)
		       << 6;
#endif
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(rmdir(dir), 0);
}

/*
 * The ring connector's filter (production builds): Unix sockets made and
 * connected; no other socket family, no open, no exec. A sanitizer build's
 * filter only refuses open and exec.
 */
static void test_connector_filter(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		int bad = 0, s;

		if (symb_sandbox_enter_connector())
			_exit(10);
		s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		bad |= (s < 0) << 0;
		bad |= (execl("/bin/true", "true", (char *)NULL) == 0) << 1;
		bad |= (open("/etc/hostname", O_RDONLY) >= 0) << 2;
#ifndef SYMB_TEST_SANITIZED
		bad |= (socket(AF_INET, SOCK_STREAM, 0) >= 0) << 3;
		bad |= (kill(getppid(), 0) == 0) << 4;
#endif
		_exit(bad);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_new_cache, fx_setup, fx_teardown),
		cmocka_unit_test_setup_teardown(test_warm_cache, fx_setup, fx_teardown),
		cmocka_unit_test(test_identity_in_sandbox),
		cmocka_unit_test(test_spool_filter),
		cmocka_unit_test(test_connector_filter),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
