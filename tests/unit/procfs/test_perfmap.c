// SPDX-License-Identifier: MIT
/*
 * The collector's JIT perf map copy (collector/perfmap.c) on this process's
 * own /tmp/perf-PID.map: the bytes go out unchanged in offset order, only
 * what the file grew by is sent again, a file rewritten shorter or
 * replaced starts over at 0, and a symbolic link, another user's file or a
 * FIFO is refused. The same copy of a jitdump file, found by the path of
 * its marker mapping: only jit-OWNPID.dump, sent as LPS_JITDUMP records.
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

#include "collector_int.h"

/* The file as the records rebuilt it. */
struct sink {
	char buf[1 << 20];
	uint64_t len;
	uint32_t records;
	uint64_t first_offset;
	int fail_after; /* emit fails once this many records went (-1: never) */
	uint32_t type;	/* the records' type: LPS_PERFMAP unless set */
};

static int collect(void *ctx, struct lps_enc *enc)
{
	struct sink *s = ctx;
	struct lps_record r;
	long len = lps_enc_len(enc);

	if (s->fail_after >= 0 && s->records >= (uint32_t)s->fail_after)
		return -ENOSPC;
	assert_true(len > 0 && len <= (long)LPS_MAX_RECORD);
	assert_int_equal(lps_decode(enc->buf, (size_t)len, &r), 0);
	assert_int_equal(r.type, s->type ? s->type : LPS_PERFMAP);
	assert_int_equal(r.perfmap.pid, getpid());
	assert_true(r.perfmap.data.len <= LPS_MAX_PERFMAP_CHUNK);
	if (!s->records)
		s->first_offset = r.perfmap.offset;
	else
		assert_true(r.perfmap.offset == s->len); /* in order, no gap */
	assert_true(r.perfmap.offset + r.perfmap.data.len <= sizeof(s->buf));
	memcpy(s->buf + r.perfmap.offset, r.perfmap.data.ptr, r.perfmap.data.len);
	s->len = r.perfmap.offset + r.perfmap.data.len;
	s->records++;
	return 0;
}

static char path[64];

static void write_file(const char *p, const char *data, size_t n, int flags)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, n), (ssize_t)n);
	close(fd);
}

static void reset(struct sink *s)
{
	s->len = 0;
	s->records = 0;
	s->first_offset = ~0ull;
	s->fail_after = -1;
}

static void test_copy_and_grow(void **state)
{
	static struct sink s;
	struct coll_proc p = {.used = true, .pid = (uint32_t)getpid()};
	static char big[200000];
	struct coll_perfmap_stats st;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	reset(&s);
	/* none yet: nothing sent, nothing kept */
	assert_int_equal(coll_perfmap_refresh(&p, 1, NULL, collect, &s), 0);
	assert_null(p.pm);
	/* a file of several chunks, sent whole */
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = i % 61 == 60 ? '\n' : (char)('a' + i % 26);
	write_file(path, big, sizeof(big), O_TRUNC);
	{
		struct lps_enc e;

		lps_enc_init_dynamic(&e);
		assert_int_equal(coll_perfmap_refresh(&p, 2, &e, collect, &s), 0);
		assert_non_null(p.pm);
		assert_int_equal(s.first_offset, 0);
		assert_int_equal(s.len, sizeof(big));
		assert_int_equal(s.records,
				 (sizeof(big) + LPS_MAX_PERFMAP_CHUNK - 1) / LPS_MAX_PERFMAP_CHUNK);
		assert_memory_equal(s.buf, big, sizeof(big));
		/* nothing new: nothing sent */
		reset(&s);
		assert_int_equal(
			coll_perfmaps_poll(&(struct coll_procs){&p, 1, 1}, 3, &e, collect, &s), 0);
		assert_int_equal(s.records, 0);
		/* it grows: only the new bytes, from where the last ended */
		write_file(path, "7f00 10 grown\n", 14, O_APPEND);
		assert_int_equal(
			coll_perfmaps_poll(&(struct coll_procs){&p, 1, 1}, 4, &e, collect, &s), 0);
		assert_int_equal(s.records, 1);
		assert_int_equal(s.first_offset, sizeof(big));
		assert_memory_equal(s.buf + sizeof(big), "7f00 10 grown\n", 14);
		/* an emit that fails: the same bytes are sent next time */
		write_file(path, "7f10 10 again\n", 14, O_APPEND);
		reset(&s);
		s.fail_after = 0;
		assert_int_equal(
			coll_perfmaps_poll(&(struct coll_procs){&p, 1, 1}, 5, &e, collect, &s),
			-ENOSPC);
		s.fail_after = -1;
		assert_int_equal(
			coll_perfmaps_poll(&(struct coll_procs){&p, 1, 1}, 6, &e, collect, &s), 0);
		assert_int_equal(s.first_offset, sizeof(big) + 14);
		/* rewritten shorter: from 0 */
		write_file(path, "1 2 short\n", 10, O_TRUNC);
		reset(&s);
		assert_int_equal(
			coll_perfmaps_poll(&(struct coll_procs){&p, 1, 1}, 7, &e, collect, &s), 0);
		assert_int_equal(s.first_offset, 0);
		assert_int_equal(s.len, 10);
		/* replaced by another file at the path: from 0 at the next refresh */
		unlink(path);
		write_file(path, "3 4 other\n", 10, O_EXCL);
		reset(&s);
		assert_int_equal(coll_perfmap_refresh(&p, 8, &e, collect, &s), 0);
		assert_int_equal(s.first_offset, 0);
		assert_memory_equal(s.buf, "3 4 other\n", 10);
		/* forgotten (exec): whole again */
		coll_perfmap_forget(&p);
		assert_null(p.pm);
		reset(&s);
		assert_int_equal(coll_perfmap_refresh(&p, 9, &e, collect, &s), 0);
		assert_int_equal(s.first_offset, 0);
		assert_int_equal(s.len, 10);
		lps_enc_free(&e);
	}
	coll_perfmap_forget(&p);
	coll_perfmap_stats(&st);
	assert_true(st.files >= 3 && st.records >= 6);
	unlink(path);
}

/* What is not the process's own regular file is not read. */
static void test_refused(void **state)
{
	static struct sink s;
	struct coll_proc p = {.used = true, .pid = (uint32_t)getpid()};
	char target[64];

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	snprintf(target, sizeof(target), "/tmp/perf-%d.target", getpid());
	unlink(path);
	reset(&s);
	write_file(target, "1 2 secret\n", 11, O_TRUNC);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(coll_perfmap_refresh(&p, 1, NULL, collect, &s), 0);
	assert_null(p.pm);
	assert_int_equal(s.records, 0);
	unlink(path);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(coll_perfmap_refresh(&p, 2, NULL, collect, &s), 0);
	assert_null(p.pm);
	unlink(path);
	/* another owner (only root can make one) */
	if (geteuid() == 0) {
		write_file(path, "1 2 theirs\n", 11, O_TRUNC);
		assert_int_equal(chown(path, 65534, 65534), 0);
		assert_int_equal(coll_perfmap_refresh(&p, 3, NULL, collect, &s), 0);
		assert_null(p.pm);
		unlink(path);
	}
	assert_int_equal(s.records, 0);
	unlink(target);
}

/* A jitdump file: named by its marker mapping, checked, copied as a perf map is. */
static void test_jitdump(void **state)
{
	static struct sink s;
	struct coll_proc p = {.used = true, .pid = (uint32_t)getpid()};
	struct coll_procs t = {&p, 1, 1};
	char dir[64], other[96], lib[96];
	struct coll_perfmap_stats st;
	struct lps_enc e;

	snprintf(dir, sizeof(dir), "/tmp/lp-jitdump-%d", getpid());
	snprintf(path, sizeof(path), "%s/jit-%d.dump", dir, getpid());
	snprintf(other, sizeof(other), "%s/jit-%d.dump", dir, getpid() + 1);
	snprintf(lib, sizeof(lib), "%s/libjit-%d.dump.so", dir, getpid());
	mkdir(dir, 0700);
	write_file(path, "JiTD-and-more", 13, O_TRUNC);
	write_file(other, "JiTD-theirs", 11, O_TRUNC);
	write_file(lib, "ELF", 3, O_TRUNC);
	lps_enc_init_dynamic(&e);
	reset(&s);
	s.type = LPS_JITDUMP;
	/* mappings of other files: nothing noted */
	coll_jitdump_seen(&p, lib, strlen(lib));
	coll_jitdump_seen(&p, "/x/jit-.dump", 12);
	coll_jitdump_seen(&p, "/x/jit-12a.dump", 15);
	assert_null(p.jd);
	/* a jitdump named by another pid: dropped at the poll, nothing sent */
	coll_jitdump_seen(&p, other, strlen(other));
	assert_non_null(p.jd);
	assert_int_equal(coll_perfmaps_poll(&t, 1, &e, collect, &s), 0);
	assert_null(p.jd);
	assert_int_equal(s.records, 0);
	/* its own: sent whole, then what it grew by */
	coll_jitdump_seen(&p, path, strlen(path));
	assert_int_equal(coll_perfmaps_poll(&t, 2, &e, collect, &s), 0);
	assert_non_null(p.jd);
	assert_int_equal(s.first_offset, 0);
	assert_int_equal(s.len, 13);
	assert_memory_equal(s.buf, "JiTD-and-more", 13);
	write_file(path, "++", 2, O_APPEND);
	coll_jitdump_seen(&p, path, strlen(path)); /* mapped again: the same file */
	reset(&s);
	s.type = LPS_JITDUMP;
	assert_int_equal(coll_perfmaps_poll(&t, 3, &e, collect, &s), 0);
	assert_int_equal(s.records, 1);
	assert_int_equal(s.first_offset, 13);
	/* forgotten (exec): until it is mapped again */
	coll_perfmap_forget(&p);
	assert_null(p.jd);
	/* a symbolic link at the path: refused */
	unlink(path);
	assert_int_equal(symlink(other, path), 0);
	coll_jitdump_seen(&p, path, strlen(path));
	reset(&s);
	s.type = LPS_JITDUMP;
	assert_int_equal(coll_perfmaps_poll(&t, 4, &e, collect, &s), 0);
	assert_null(p.jd);
	assert_int_equal(s.records, 0);
	coll_jitdump_stats(&st);
	assert_true(st.files == 1 && st.records == 2 && st.bytes == 15 && st.refused >= 2);
	lps_enc_free(&e);
	unlink(path);
	unlink(other);
	unlink(lib);
	rmdir(dir);
}

/* A process whose maps were read before it had a perf map: looked at again later. */
static void test_looked_again(void **state)
{
	static struct sink s;
	struct coll_proc p = {.used = true, .pid = (uint32_t)getpid()};
	struct coll_procs t = {&p, 1, 1};
	uint64_t t0 = 5000000000ull;
	struct lps_enc e;

	snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
	unlink(path);
	reset(&s);
	lps_enc_init_dynamic(&e);
	/* maps never read: not looked for */
	write_file(path, "1 2 late\n", 9, O_TRUNC);
	assert_int_equal(coll_perfmaps_poll(&t, t0 + COLL_PERFMAP_LOOK_NS, &e, collect, &s), 0);
	assert_null(p.pm);
	unlink(path);
	/* read without one; it comes; found once the interval has passed */
	p.maps_ns = t0;
	assert_int_equal(coll_perfmap_refresh(&p, t0, &e, collect, &s), 0);
	assert_null(p.pm);
	write_file(path, "1 2 late\n", 9, O_TRUNC);
	assert_int_equal(coll_perfmaps_poll(&t, t0 + COLL_PERFMAP_LOOK_NS - 1, &e, collect, &s), 0);
	assert_null(p.pm);
	assert_int_equal(s.records, 0);
	assert_int_equal(coll_perfmaps_poll(&t, t0 + COLL_PERFMAP_LOOK_NS, &e, collect, &s), 0);
	assert_non_null(p.pm);
	assert_int_equal(s.len, 9);
	coll_perfmap_forget(&p);
	lps_enc_free(&e);
	unlink(path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_copy_and_grow),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_looked_again),
		cmocka_unit_test(test_jitdump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
