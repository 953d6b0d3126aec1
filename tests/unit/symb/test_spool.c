// SPDX-License-Identifier: MIT
/*
 * symbolizer/spool.c with shards: the writer's names (a shard's windows
 * and metrics file), the first window cut on the real clock the same for
 * every shard, and the budget shared by two shards' writers (the oldest
 * file overall removed, whoever wrote it), and a shard's metrics page
 * labelled; one writer per spool (its lock). Real writer processes, on a temporary directory, without
 * their seccomp filter.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "metrics.h"
#include "sandbox.h"
#include "spool.h"

/* the writer's filter is symbolizer/sandbox.c's: not under test here */
int symb_sandbox_enter_spool(int dirfd)
{
	(void)dirfd;
	return -ENOSYS;
}

static char dir[64];

static int make_dir(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/lp-spool-test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static bool exists(const char *name)
{
	char path[160];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return access(path, F_OK) == 0;
}

/* n bytes into sp's memory file, then put as window seq */
static void put(struct symb_spool *sp, uint64_t seq, int64_t start_ns, size_t n)
{
	char buf[256];

	memset(buf, 'x', sizeof(buf));
	assert_true(n <= sizeof(buf));
	assert_int_equal(write(symb_spool__fd(sp), buf, n), (ssize_t)n);
	assert_int_equal(symb_spool__put(sp, "cpu", seq, start_ns), 0);
}

#define W_NS 10000000000ull /* 10 s windows */

/*
 * One writer at a time (flock on the directory, as lowprof run's): a
 * second unsharded writer is refused (-EBUSY, after the wait for an ending
 * holder), the shards of a run share it but keep a whole-spool writer out,
 * and an inherited descriptor that holds the lock (lowprof run's) lets its
 * symbolizer in, a descriptor of another directory does not.
 */
static void test_lock(void **state)
{
	struct symb_spool *a, *b, *c;
	int fd, other;

	assert_int_equal(symb_spool__open(dir, 0, false, 0, 1, -1, &a), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 0, 1, -1, &b), -EBUSY);
	assert_int_equal(symb_spool__open(dir, 0, false, 1, 2, -1, &b), -EBUSY);
	symb_spool__close(a); /* the writer exits: the lock goes with it */

	assert_int_equal(symb_spool__open(dir, 0, false, 0, 2, -1, &a), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 1, 2, -1, &b), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 0, 1, -1, &c), -EBUSY);
	symb_spool__close(a);
	symb_spool__close(b);

	/* lowprof run's lock, held through fd: its symbolizers in, anyone else out */
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* the shards' writers exit once they see their sockets close */
	for (int i = 0; i < 100 && flock(fd, LOCK_EX | LOCK_NB); i++)
		usleep(20 * 1000);
	assert_int_equal(flock(fd, LOCK_EX | LOCK_NB), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 0, 2, fd, &a), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 1, 2, fd, &b), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 1, 2, -1, &c), -EBUSY);
	symb_spool__close(a);
	symb_spool__close(b);
	other = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	assert_int_equal(symb_spool__open(dir, 0, false, 0, 1, other, &a), -EINVAL);
	close(other);
	close(fd);
}

static void test_unsharded(void **state)
{
	struct symb_spool *sp;
	struct symb_spool_window w;

	assert_int_equal(symb_spool__open(dir, 0, false, 0, 1, -1, &sp), 0);
	/* without shards the first window starts now, numbered after the spool's */
	symb_spool__first_window(sp, W_NS, 123456789, 1795651215000000000, &w);
	assert_int_equal(w.seq, 0);
	assert_int_equal(w.start_mono, 123456789);
	assert_int_equal(w.start_real, 1795651215000000000);
	put(sp, 0, w.start_real, 10);
	assert_true(exists("cpu-20261126T000015Z-000000.pb.gz"));
	assert_int_equal(write(symb_spool__fd(sp), "m 1\n", 4), 4);
	assert_int_equal(symb_spool__put_metrics(sp), 0);
	assert_true(exists("metrics.prom"));
	symb_spool__close(sp);
}

static void test_shards(void **state)
{
	struct symb_spool *a, *b;
	struct symb_spool_window wa, wb;
	/* 2026-11-26T00:00:15Z; shard b starts 3 s later, its clocks 3 s on */
	const int64_t real = 1795651215000000000;
	const uint64_t mono = 500000000000ull;

	assert_int_equal(symb_spool__open(dir, 0, false, 0, 2, -1, &a), 0);
	assert_int_equal(symb_spool__open(dir, 0, false, 1, 2, -1, &b), 0);
	symb_spool__first_window(a, W_NS, mono, real, &wa);
	symb_spool__first_window(b, W_NS, mono + 3000000000ull, real + 3000000000ll, &wb);
	/* the same window: numbered by the real clock, starting on its boundary */
	assert_int_equal(wa.seq, 179565121);
	assert_int_equal(wb.seq, wa.seq);
	assert_int_equal(wa.start_real, 1795651210000000000);
	assert_int_equal(wb.start_real, wa.start_real);
	assert_int_equal(wa.start_mono, mono - 5000000000ull);
	assert_int_equal(wb.start_mono, wa.start_mono);
	assert_int_equal(symb_spool__next_seq(a), wa.seq);
	put(a, wa.seq, wa.start_real, 10);
	put(b, wb.seq, wb.start_real, 10);
	assert_true(exists("cpu-20261126T000010Z-179565121.s1of2.pb.gz"));
	assert_true(exists("cpu-20261126T000010Z-179565121.s2of2.pb.gz"));
	assert_int_equal(write(symb_spool__fd(b), "m 1\n", 4), 4);
	assert_int_equal(symb_spool__put_metrics(b), 0);
	assert_true(exists("metrics-s2of2.prom"));
	assert_false(exists("metrics.prom"));
	symb_spool__close(a);
	symb_spool__close(b);
}

/* Two shards' writers under one budget of 250 bytes: 100-byte windows. */
static void test_shared_budget(void **state)
{
	struct symb_spool *a, *b;
	const int64_t t = 1795651210000000000;

	assert_int_equal(symb_spool__open(dir, 250, false, 0, 2, -1, &a), 0);
	assert_int_equal(symb_spool__open(dir, 250, false, 1, 2, -1, &b), 0);
	put(a, 1, t, 100);
	put(b, 1, t, 100);
	/* 300 bytes: a's writer removes the oldest overall, window 1's first shard */
	put(a, 2, t + (int64_t)W_NS, 100);
	assert_false(exists("cpu-20261126T000010Z-000001.s1of2.pb.gz"));
	assert_true(exists("cpu-20261126T000010Z-000001.s2of2.pb.gz"));
	assert_int_equal(symb_spool__stats(a)->removed, 1);
	/* b's writer removes a file of a's shard as readily as its own */
	put(b, 2, t + (int64_t)W_NS, 100);
	assert_false(exists("cpu-20261126T000010Z-000001.s2of2.pb.gz"));
	assert_true(exists("cpu-20261126T000020Z-000002.s1of2.pb.gz"));
	assert_true(exists("cpu-20261126T000020Z-000002.s2of2.pb.gz"));
	assert_int_equal(symb_spool__stats(b)->removed, 1);
	symb_spool__close(a);
	symb_spool__close(b);
}

/* A shard's metrics page: every sample labelled first, nothing else changed. */
static void test_metrics_label(void **state)
{
	struct symb_counters c = {0};
	struct symb_metrics_totals t = {.samples = 42};
	struct symb_objects_stats os = {0};
	struct symb_spool_stats sp = {0};
	struct symb_metrics_in in = {
		.c = &c,
		.t = &t,
		.os = &os,
		.sp = &sp,
		.statm_fd = -1,
		.shard_label = "shard=\"2of3\"",
	};
	char buf[16384], *line, *save = NULL;
	int fd = memfd_create("m", 0);
	ssize_t n;
	size_t samples = 0;

	assert_true(fd >= 0);
	assert_int_equal(symb_metrics_write(fd, &in), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	assert_true(n > 0);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "\nlowprof_symbolizer_samples_total{shard=\"2of3\"} 42\n"));
	assert_non_null(
		strstr(buf, "\nlowprof_lost_total{shard=\"2of3\",cause=\"bpf_ring_full\"} 0\n"));
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (line[0] == '#')
			continue;
		samples++;
		assert_non_null(strstr(line, "{shard=\"2of3\""));
	}
	assert_true(samples > 10);
	close(fd);
	/* without a shard: no label */
	in.shard_label = NULL;
	fd = memfd_create("m", 0);
	assert_int_equal(symb_metrics_write(fd, &in), 0);
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[n > 0 ? n : 0] = '\0';
	assert_non_null(strstr(buf, "\nlowprof_symbolizer_samples_total 42\n"));
	assert_non_null(strstr(buf, "\nlowprof_lost_total{cause=\"bpf_ring_full\"} 0\n"));
	assert_null(strstr(buf, "shard"));
	close(fd);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_unsharded, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_lock, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_shards, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_shared_budget, make_dir, remove_dir),
		cmocka_unit_test(test_metrics_label),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
