// SPDX-License-Identifier: MIT
/*
 * coll_capdir (collector/capdir.h): window names parsed strictly; a
 * window's file under its hidden temporary name until published, removed
 * when not ok; numbers after the highest file there; temporary files of an
 * earlier run removed, other files left alone; the budget removes the
 * oldest, never the newest; a symlinked or open directory refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "capdir.h"

/* 2026-11-25 21:59:40 UTC */
#define T0 1795643980ll

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/lp-capdir.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static bool exists(const char *name)
{
	char p[256];

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

static void put(const char *name, size_t size)
{
	char p[256];
	int fd;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)size), 0);
	close(fd);
}

/* A window of size bytes starting at T0 + dt seconds, published (ok) or not. */
static void window(struct coll_capdir *d, long long dt, off_t size, bool ok)
{
	char name[COLL_CAPDIR_NAME_MAX];
	int fd = coll_capdir__create(d, (T0 + dt) * 1000000000ll, name);

	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, size), 0);
	close(fd);
	assert_int_equal(coll_capdir__publish(d, name, ok), 0);
}

static void test_names(void **state)
{
	uint64_t seq = 0;

	(void)state;
	assert_true(coll_capdir_parse_name("capture-20261125T215940Z-000000.lpcap", &seq));
	assert_int_equal(seq, 0);
	assert_true(coll_capdir_parse_name("capture-20261125T215940Z-1234567.lpcap", &seq));
	assert_int_equal(seq, 1234567);
	assert_false(coll_capdir_parse_name("capture-20261125T215940Z-00000.lpcap", &seq));
	assert_false(coll_capdir_parse_name("capture-20261125T215940Z-0000001.lpcap", &seq));
	assert_false(coll_capdir_parse_name("capture-20261125T215940Z-000000.lpcap.tmp", &seq));
	assert_false(coll_capdir_parse_name(".capture-20261125T215940Z-000000.lpcap", &seq));
	assert_false(coll_capdir_parse_name("capture-20261125X215940Z-000000.lpcap", &seq));
	assert_false(coll_capdir_parse_name("capture-20261125T215940Z-00000a.lpcap", &seq));
	assert_false(coll_capdir_parse_name("cpu-20261125T215940Z-000000.pb.gz", &seq));
	/* a date that does not exist, a number past 18 digits */
	assert_false(coll_capdir_parse_name("capture-20260230T215940Z-000000.lpcap", &seq));
	assert_false(
		coll_capdir_parse_name("capture-20261125T215940Z-1234567890123456789.lpcap", &seq));
	assert_false(coll_capdir_parse_name("", &seq));
}

static void test_publish(void **state)
{
	struct coll_capdir *d;
	struct coll_capdir_stats st;
	char name[COLL_CAPDIR_NAME_MAX], name2[COLL_CAPDIR_NAME_MAX];
	int fd, fd2;

	(void)state;
	put("capture-20200101T000000Z-000041.lpcap", 10);
	put(".capture-20200101T000000Z-000042.lpcap.tmp", 10);
	put("notes.txt", 10);
	assert_int_equal(coll_capdir__new(dir, 1 << 20, &d), 0);
	assert_false(exists(".capture-20200101T000000Z-000042.lpcap.tmp"));
	assert_true(exists("notes.txt"));

	fd = coll_capdir__create(d, T0 * 1000000000ll, name);
	assert_true(fd >= 0);
	assert_string_equal(name, "capture-20261125T215940Z-000042.lpcap");
	assert_true(exists(".capture-20261125T215940Z-000042.lpcap.tmp"));
	assert_false(exists("capture-20261125T215940Z-000042.lpcap"));
	/* two at once (one written, one syncing): each its own number */
	fd2 = coll_capdir__create(d, (T0 + 1) * 1000000000ll, name2);
	assert_true(fd2 >= 0);
	assert_string_equal(name2, "capture-20261125T215941Z-000043.lpcap");
	assert_int_equal(write(fd, "x", 1), 1);
	close(fd);
	close(fd2);
	assert_int_equal(coll_capdir__publish(d, name, true), 0);
	assert_true(exists("capture-20261125T215940Z-000042.lpcap"));
	assert_false(exists(".capture-20261125T215940Z-000042.lpcap.tmp"));
	assert_true(exists(".capture-20261125T215941Z-000043.lpcap.tmp"));
	assert_int_equal(coll_capdir__publish(d, name2, false), 0);
	assert_false(exists(".capture-20261125T215941Z-000043.lpcap.tmp"));

	/* not ok: removed, never published; the number is used up */
	window(d, 60, 1, false);
	assert_false(exists(".capture-20261125T220040Z-000044.lpcap.tmp"));
	assert_false(exists("capture-20261125T220040Z-000044.lpcap"));

	coll_capdir__stats(d, &st);
	assert_int_equal(st.files, 1);
	assert_int_equal(st.removed, 0);
	assert_int_equal(st.tmp_cleaned, 1);
	coll_capdir__free(d);
}

static void test_budget(void **state)
{
	struct coll_capdir *d;
	struct coll_capdir_stats st;

	(void)state;
	/* out of order on purpose: the time sorts first, then the number */
	put("capture-20261125T215950Z-000001.lpcap", 400);
	put("capture-20261125T215940Z-000000.lpcap", 400);
	assert_int_equal(coll_capdir__new(dir, 1000, &d), 0);
	for (int i = 0; i < 3; i++)
		window(d, 20 + 10 * i, 400, true);
	/* five of 400 bytes, a budget of 1000: the two newest stay */
	assert_false(exists("capture-20261125T215940Z-000000.lpcap"));
	assert_false(exists("capture-20261125T215950Z-000001.lpcap"));
	assert_false(exists("capture-20261125T220000Z-000002.lpcap"));
	assert_true(exists("capture-20261125T220010Z-000003.lpcap"));
	assert_true(exists("capture-20261125T220020Z-000004.lpcap"));
	coll_capdir__stats(d, &st);
	assert_int_equal(st.removed, 3);
	assert_int_equal(st.removed_bytes, 1200);
	assert_int_equal(st.bytes, 800);
	coll_capdir__free(d);

	/* one file over the budget alone: kept, the newest */
	assert_int_equal(coll_capdir__new(dir, 100, &d), 0);
	window(d, 60, 400, true);
	assert_true(exists("capture-20261125T220040Z-000005.lpcap"));
	coll_capdir__stats(d, &st);
	assert_int_equal(st.removed, 2);
	coll_capdir__free(d);
}

static void test_refused(void **state)
{
	struct coll_capdir *d = NULL;
	char p[256], l[256];

	(void)state;
	snprintf(p, sizeof(p), "%s/open", dir);
	assert_int_equal(mkdir(p, 0700), 0);
	assert_int_equal(chmod(p, 0777), 0);
	assert_int_equal(coll_capdir__new(p, 0, &d), -EPERM);
	assert_null(d);
	assert_int_equal(chmod(p, 01777), 0); /* sticky: others cannot remove ours */
	assert_int_equal(coll_capdir__new(p, 0, &d), 0);
	coll_capdir__free(d);
	snprintf(l, sizeof(l), "%s/link", dir);
	assert_int_equal(symlink(p, l), 0);
	assert_int_equal(coll_capdir__new(l, 0, &d), -ELOOP);
	/* made when missing, 0700 */
	snprintf(p, sizeof(p), "%s/new/sub", dir);
	assert_int_equal(coll_capdir__new(p, 0, &d), 0);
	coll_capdir__free(d);
	{
		struct stat st;

		assert_int_equal(stat(p, &st), 0);
		assert_int_equal(st.st_mode & 07777, 0700);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test_setup_teardown(test_publish, setup, teardown),
		cmocka_unit_test_setup_teardown(test_budget, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
