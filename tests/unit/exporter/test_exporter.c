// SPDX-License-Identifier: MIT
/*
 * The exporter's other parts: the Pyroscope push request (series split,
 * each raw profile read back with the pprof reader), header files, the
 * spool queue's order and set-aside, and the check of the symbolizer's
 * metrics lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "exporter.h"
#include "lowprof/pprof_read.h"
#include "otlp_fixture.h"
#include "pyroscope_push.pb-c.h"

static const char *label(const Push__V1__RawProfileSeries *s, const char *name)
{
	for (size_t i = 0; i < s->n_labels; i++)
		if (!strcmp(s->labels[i]->name, name))
			return s->labels[i]->value;
	return NULL;
}

/* the raw profile of series s read back */
static struct lpw_read *raw_profile(const Push__V1__RawProfileSeries *s)
{
	int fd = memfd_create("raw", MFD_CLOEXEC);
	struct lpw_read *r = NULL;
	char why[128];

	assert_true(fd >= 0);
	assert_int_equal(s->n_samples, 1);
	assert_int_equal(write(fd, s->samples[0]->raw_profile.data, s->samples[0]->raw_profile.len),
			 (ssize_t)s->samples[0]->raw_profile.len);
	lseek(fd, 0, SEEK_SET);
	assert_int_equal(lpw_read_pprof(fd, NULL, &r, why, sizeof(why)), 0);
	close(fd);
	return r;
}

static Push__V1__PushRequest *push(const struct exp_identity *id)
{
	uint8_t *buf;
	size_t len;
	Push__V1__PushRequest *req;

	assert_int_equal(exp_pyroscope_encode(fix_otlp_profile(), id, &buf, &len), 0);
	req = push__v1__push_request__unpack(NULL, len, buf);
	free(buf);
	assert_non_null(req);
	return req;
}

static void test_pyroscope_series(void **state)
{
	Push__V1__PushRequest *req = push(fix_otlp_identity());
	const Push__V1__RawProfileSeries *app = NULL, *ctr = NULL;

	/* the host's app and the container: two series, labels sorted by name */
	assert_int_equal(req->n_series, 2);
	for (size_t i = 0; i < req->n_series; i++) {
		const Push__V1__RawProfileSeries *s = req->series[i];

		for (size_t k = 1; k < s->n_labels; k++)
			assert_true(strcmp(s->labels[k - 1]->name, s->labels[k]->name) < 0);
		assert_string_equal(label(s, "__name__"), "process_cpu");
		assert_string_equal(label(s, "host_name"), FIX_HOST);
		assert_null(label(s, "pid"));
		if (label(s, "container_id"))
			ctr = s;
		else
			app = s;
	}
	assert_non_null(app);
	assert_non_null(ctr);
	assert_string_equal(label(app, "service_name"), "app");
	assert_null(label(app, "pod_uid"));
	assert_string_equal(label(ctr, "service_name"), "container/4f2c1a9e8b7d");
	assert_string_equal(label(ctr, "container_id"), FIX_CONTAINER);
	assert_string_equal(label(ctr, "pod_uid"), FIX_POD);

	/* each series' pprof: its own stacks, pid kept as a sample label, the rest left out */
	struct lpw_read *ra = raw_profile(app), *rc = raw_profile(ctr);
	const struct lpw_profile *pa = lpw_read__profile(ra), *pc = lpw_read__profile(rc);
	int64_t ta = 0, tc = 0;

	assert_int_equal(pa->nstacks, 3);
	assert_int_equal(pc->nstacks, 2);
	for (size_t i = 0; i < pa->nstacks; i++) {
		assert_int_equal(pa->stacks[i].pid, 100);
		ta += pa->stacks[i].values[1];
	}
	for (size_t i = 0; i < pc->nstacks; i++) {
		assert_int_equal(pc->stacks[i].pid, 200);
		assert_string_equal(pc->stacks[i].container_id, FIX_CONTAINER);
		tc += pc->stacks[i].values[1];
	}
	assert_int_equal(ta, 110);
	assert_int_equal(tc, 70);
	/* app's series: app and libc, not the kernel (only nginx's stack has it); /unused in neither */
	assert_int_equal(pa->nmappings, 2);
	assert_string_equal(pa->mappings[0].path, "/usr/bin/app");
	assert_string_equal(pa->mappings[1].path, "/lib/libc.so.6");
	assert_int_equal(pc->nmappings, 3);
	for (size_t i = 0; i < pc->nmappings; i++)
		assert_string_not_equal(pc->mappings[i].path, "/unused");
	assert_int_equal(pa->time_nanos, FIX_TIME);
	assert_int_equal(pa->duration_nanos, FIX_DURATION);
	lpw_read__free(ra);
	lpw_read__free(rc);
	push__v1__push_request__free_unpacked(req, NULL);
}

static void test_pyroscope_service_given(void **state)
{
	struct exp_identity id = *fix_otlp_identity();
	Push__V1__PushRequest *req;

	id.service_name = "checkout";
	id.kind = "offcpu";
	req = push(&id);
	/* the containers stay apart: different series of the one service */
	assert_int_equal(req->n_series, 2);
	for (size_t i = 0; i < req->n_series; i++) {
		assert_string_equal(label(req->series[i], "service_name"), "checkout");
		assert_string_equal(label(req->series[i], "__name__"), "off_cpu");
	}
	push__v1__push_request__free_unpacked(req, NULL);
}

static void test_service_names(void **state)
{
	struct exp_identity id = {.host_name = "h", .kind = "cpu"};
	struct lpw_stack s = {.comm = "we;ird\n"};
	char buf[32];

	exp_service_name(&id, &s, buf, sizeof(buf));
	assert_string_equal(buf, "we_ird_");
	s.exe = "/opt/a b/srv";
	exp_service_name(&id, &s, buf, sizeof(buf));
	assert_string_equal(buf, "srv");
	s.container_id = "abc";
	exp_service_name(&id, &s, buf, sizeof(buf));
	assert_string_equal(buf, "container/abc");
	id.service_name = "x\"y";
	exp_service_name(&id, &s, buf, sizeof(buf));
	assert_string_equal(buf, "x_y");
	exp_service_name(&id, &s, buf, 4);
	assert_string_equal(buf, "x_y");
	s = (struct lpw_stack){.comm = ""};
	id.service_name = NULL;
	exp_service_name(&id, &s, buf, sizeof(buf));
	assert_string_equal(buf, "unknown");
}

/* ---- header files --------------------------------------------------------- */

static char dir[64];

static int make_dir(void **state)
{
	snprintf(dir, sizeof(dir), "/tmp/lp-exp-test.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[96];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd);
}

static const char *file(const char *name, const char *text, mode_t mode)
{
	static char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	assert_int_equal(chmod(path, mode), 0);
	return path;
}

static void test_headers(void **state)
{
	char **h;

	assert_int_equal(exp_headers_read(file("h",
					       "# c\r\n\nAuthorization: Bearer x\r\n"
					       "  X-Scope-OrgID:t1\n",
					       0600),
					  &h),
			 0);
	assert_string_equal(h[0], "Authorization: Bearer x");
	assert_string_equal(h[1], "X-Scope-OrgID:t1");
	assert_null(h[2]);
	exp_headers_free(h);
	/* others may read it: refused, and nothing read */
	assert_int_equal(exp_headers_read(file("h", "A: b\n", 0644), &h), -EPERM);
	assert_null(h);
	assert_int_equal(exp_headers_read(file("h", "A: b\n", 0640), &h),
			 getegid() == getgid() ? 0 : -EPERM);
	exp_headers_free(h);
	assert_int_equal(exp_headers_read(file("h", "no colon\n", 0600), &h), -EINVAL);
	assert_int_equal(exp_headers_read(file("h", "Bad Name: v\n", 0600), &h), -EINVAL);
	assert_int_equal(exp_headers_read(file("h", "A: b\x01\n", 0600), &h), -EINVAL);
	assert_int_equal(exp_headers_read(file("h", "Content-Type: text/plain\n", 0600), &h),
			 -EINVAL);
	assert_int_equal(exp_headers_read(dir, &h), -EINVAL);
	assert_int_equal(exp_headers_read("/nonexistent/h", &h), -ENOENT);
	assert_int_equal(exp_headers_read(file("h", "", 0400), &h), 0);
	assert_null(h[0]);
	exp_headers_free(h);
}

/* ---- the spool queue -------------------------------------------------------- */

static void test_queue(void **state)
{
	static const char *const names[] = {
		"offcpu-20261126T000010Z-000001.pb.gz",
		"cpu-20261126T000010Z-000001.pb.gz",
		"cpu-20261126T000000Z-000000.pb.gz",
		"cpu-20261126T000020Z-1000000.pb.gz",
		"cpu-20261126T000020Z-000002.pb.gz",
		".tmp-cpu-20261126T000030Z-000003.pb.gz",
		"metrics.prom",
		"cpu-20261130T000000Z-00001.pb.gz",
	};
	static const char *const order[] = {
		"cpu-20261126T000000Z-000000.pb.gz",	"cpu-20261126T000010Z-000001.pb.gz",
		"offcpu-20261126T000010Z-000001.pb.gz", "cpu-20261126T000020Z-000002.pb.gz",
		"cpu-20261126T000020Z-1000000.pb.gz",
	};
	struct exp_win *v;
	uint64_t bytes;
	size_t n;
	int dfd, rfd;
	char sub[96];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		file(names[i], "xyz", 0600);
	snprintf(sub, sizeof(sub), "%s/cpu-20261126T000040Z-000004.pb.gz", dir);
	assert_int_equal(mkdir(sub, 0700), 0); /* a directory named as a window: not one */
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(exp_queue_scan(dfd, &v, &n, &bytes), 0);
	assert_int_equal(n, 5);
	assert_int_equal(bytes, 15);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i].name, order[i]);
	assert_int_equal(v[2].kind, 1);
	assert_int_equal(v[4].seq, 1000000);
	/* set aside: moved, and only the newest 2 kept there */
	assert_int_equal(mkdirat(dfd, "rejected", 0700), 0);
	rfd = openat(dfd, "rejected", O_RDONLY | O_DIRECTORY);
	for (size_t i = 0; i < 3; i++)
		assert_int_equal(exp_queue_set_aside(dfd, rfd, v[i].name, 2), 0);
	free(v);
	assert_int_equal(exp_queue_scan(rfd, &v, &n, &bytes), 0);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].name, order[1]);
	assert_string_equal(v[1].name, order[2]);
	free(v);
	assert_int_equal(exp_queue_scan(dfd, &v, &n, &bytes), 0);
	assert_int_equal(n, 2);
	free(v);
	/* opening: a link is refused; a vanished window is -ENOENT */
	assert_int_equal(symlinkat("/etc/passwd", dfd, "cpu-20261126T000050Z-000005.pb.gz"), 0);
	assert_int_equal(exp_queue_open(dfd, "cpu-20261126T000050Z-000005.pb.gz"), -ELOOP);
	assert_int_equal(exp_queue_open(dfd, "cpu-20261126T000000Z-000000.pb.gz"), -ENOENT);
	close(rfd);
	close(dfd);
}

/* ---- shards' files ------------------------------------------------------------ */

static void test_spool_names(void **state)
{
	static const char *const bad[] = {
		"cpu-20261126T000000Z-000000.s0of2.pb.gz",  /* shards count from 1 */
		"cpu-20261126T000000Z-000000.s3of2.pb.gz",  /* beyond N */
		"cpu-20261126T000000Z-000000.s1of1.pb.gz",  /* one shard: no shard part */
		"cpu-20261126T000000Z-000000.s1of17.pb.gz", /* beyond LP_MAX_SHARDS */
		"cpu-20261126T000000Z-000000.s01of2.pb.gz", /* a leading zero */
		"cpu-20261126T000000Z-000000.s1of02.pb.gz",
		"cpu-20261126T000000Z-000000.s1o2.pb.gz",
		"cpu-20261126T000000Z-000000.sof2.pb.gz",
		"cpu-20261126T000000Z-000000.s1of.pb.gz",
		"cpu-20261126T000000Z-000000..pb.gz",
		"cpu-20261126T000000Z-000000.s1of2.s1of2.pb.gz",
		"cpu-20261126T000000Z-00000.s1of2.pb.gz", /* five digits */
		"cpu-20261126T000000Z-.s1of2.pb.gz",
		"cpu-20261126T000000Z-000000s1of2.pb.gz",
	};
	struct lp_spool_name n;
	uint32_t k, nk;

	assert_int_equal(lp_spool_parse("cpu-20261126T000010Z-000001.pb.gz", &n), 0);
	assert_int_equal(n.seq, 1);
	assert_int_equal(n.nshards, 1);
	assert_int_equal(n.shard, 0);
	assert_int_equal(lp_spool_parse("offcpu-20261126T000010Z-176414358.s2of3.pb.gz", &n), 0);
	assert_int_equal(n.kind, 1);
	assert_int_equal(n.seq, 176414358);
	assert_int_equal(n.start_s, 1795651210);
	assert_int_equal(n.shard, 1);
	assert_int_equal(n.nshards, 3);
	assert_int_equal(lp_spool_parse("cpu-20261126T000010Z-000001.s16of16.pb.gz", &n), 0);
	assert_int_equal(n.shard, 15);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(lp_spool_parse(bad[i], &n), -EINVAL);
	/* the streams: dense, one per (shard, nshards), none shared */
	assert_int_equal(lp_spool_stream(0, 1), 0);
	assert_int_equal(lp_spool_stream(0, 2), 1);
	assert_int_equal(lp_spool_stream(1, 2), 2);
	assert_int_equal(lp_spool_stream(0, 3), 3);
	assert_int_equal(lp_spool_stream(15, 16), LP_SPOOL_STREAMS - 1);
	/* metrics files */
	assert_int_equal(lp_spool_parse_metrics("metrics.prom", &k, &nk), 0);
	assert_int_equal(nk, 1);
	assert_int_equal(lp_spool_parse_metrics("metrics-s2of4.prom", &k, &nk), 0);
	assert_int_equal(k, 1);
	assert_int_equal(nk, 4);
	assert_int_equal(lp_spool_parse_metrics("metrics-s5of4.prom", &k, &nk), -EINVAL);
	assert_int_equal(lp_spool_parse_metrics("metrics.s1of2.prom", &k, &nk), -EINVAL);
	assert_int_equal(lp_spool_parse_metrics("metrics-s1of2.prom.tmp", &k, &nk), -EINVAL);
	assert_int_equal(lp_spool_parse_metrics(".tmp-metrics-s1of2.prom", &k, &nk), -EINVAL);
}

/* Delivery order with shards: number, then kind, then shard (no shard's first). */
static void test_queue_shards(void **state)
{
	static const char *const names[] = {
		"cpu-20261126T000010Z-000001.s2of2.pb.gz",
		"offcpu-20261126T000010Z-000001.s1of2.pb.gz",
		"cpu-20261126T000010Z-000001.s1of2.pb.gz",
		"cpu-20261126T000000Z-000000.s2of2.pb.gz",
		"cpu-20261126T000010Z-000001.pb.gz",
		"cpu-20261126T000020Z-000002.s1of2.pb.gz",
		"cpu-20261126T000010Z-000001.s1of3.pb.gz",
		"metrics-s1of2.prom",
		"cpu-20261126T000010Z-000001.s3of2.pb.gz",
	};
	static const char *const order[] = {
		"cpu-20261126T000000Z-000000.s2of2.pb.gz",
		"cpu-20261126T000010Z-000001.pb.gz",
		"cpu-20261126T000010Z-000001.s1of2.pb.gz",
		"cpu-20261126T000010Z-000001.s2of2.pb.gz",
		"cpu-20261126T000010Z-000001.s1of3.pb.gz",
		"offcpu-20261126T000010Z-000001.s1of2.pb.gz",
		"cpu-20261126T000020Z-000002.s1of2.pb.gz",
	};
	struct exp_win *v;
	uint64_t bytes;
	size_t n;
	int dfd;

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		file(names[i], "xyz", 0600);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	assert_int_equal(exp_queue_scan(dfd, &v, &n, &bytes), 0);
	assert_int_equal(n, sizeof(order) / sizeof(order[0]));
	for (size_t i = 0; i < n; i++)
		assert_string_equal(v[i].name, order[i]);
	assert_int_equal(v[3].shard, 1);
	assert_int_equal(v[3].nshards, 2);
	assert_int_equal(v[1].nshards, 1);
	free(v);
	close(dfd);
}

/*
 * The metrics files of two shards: one family each, labelled, nothing lost;
 * the second labelled by its symbolizer already (not twice), the first not.
 */
static void test_symb_metrics(void **state)
{
	static const char one[] = "# HELP lowprof_symbolizer_samples_total On-CPU samples.\n"
				  "# TYPE lowprof_symbolizer_samples_total counter\n"
				  "lowprof_symbolizer_samples_total 10\n"
				  "lowprof_lost_total{cause=\"ring\"} 3\n"
				  "lowprof_process_resident_bytes{process=\"symbolizer\"} 100\n";
	static const char two[] = "# HELP lowprof_symbolizer_samples_total On-CPU samples.\n"
				  "# TYPE lowprof_symbolizer_samples_total counter\n"
				  "lowprof_symbolizer_samples_total{shard=\"2of2\"} 32\n"
				  "lowprof_lost_total{shard=\"2of2\",cause=\"ring\"} 0\n"
				  "evil 1\n"
				  "lowprof_process_resident_bytes{process=\"symbolizer\"} 200\n";
	static const char want[] = "# HELP lowprof_symbolizer_samples_total On-CPU samples.\n"
				   "# TYPE lowprof_symbolizer_samples_total counter\n"
				   "lowprof_symbolizer_samples_total{shard=\"1of2\"} 10\n"
				   "lowprof_symbolizer_samples_total{shard=\"2of2\"} 32\n"
				   "lowprof_lost_total{shard=\"1of2\",cause=\"ring\"} 3\n"
				   "lowprof_lost_total{shard=\"2of2\",cause=\"ring\"} 0\n";
	static const char want_res[] =
		"lowprof_process_resident_bytes{shard=\"1of2\",process=\"symbolizer\"} 100\n"
		"lowprof_process_resident_bytes{shard=\"2of2\",process=\"symbolizer\"} 200\n";
	struct exp_symb_page p[EXP_SYMB_PAGES];
	char buf[4096];
	size_t n, len;
	int dfd;

	file("metrics-s2of2.prom", two, 0600);
	file("metrics-s1of2.prom", one, 0600);
	file("metrics-s1of2.prom.x", one, 0600);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(dfd >= 0);
	n = exp_symb_read(dfd, p, EXP_SYMB_PAGES);
	assert_int_equal(n, 2);
	assert_int_equal(p[0].shard, 0);
	len = exp_symb_lines(p, n, buf, sizeof(buf), false);
	buf[len] = '\0';
	assert_string_equal(buf, want);
	len = exp_symb_lines(p, n, buf, sizeof(buf), true);
	buf[len] = '\0';
	assert_string_equal(buf, want_res);
	len = exp_symb_age(p, n, buf, sizeof(buf));
	buf[len] = '\0';
	assert_non_null(strstr(buf, "\nlowprof_symbolizer_metrics_age_seconds{shard=\"2of2\"} "));
	/* one file: its lines as they are, but the resident family's */
	len = exp_symb_lines(p, 1, buf, sizeof(buf), false);
	buf[len] = '\0';
	assert_non_null(strstr(buf, "total{shard=\"1of2\"} 10\nlowprof_lost_total{shard="));
	/* a line that does not fit is left out whole */
	len = exp_symb_lines(p, n, buf, 140, false);
	assert_true(len < 140 && buf[len - 1] == '\n');
	exp_symb_free(p, n);
	close(dfd);
}

/* ---- the symbolizer's metrics lines ----------------------------------------- */

static bool ok(const char *l)
{
	return exp_metrics_line_ok(l, strlen(l));
}

static void test_metrics_lines(void **state)
{
	assert_true(ok("lowprof_symbolizer_samples_total 123"));
	assert_true(ok("lowprof_lost_total{cause=\"bpf_ring_full\"} 0"));
	assert_true(ok("lowprof_symbolizer_window_lag_seconds 1.5e-05"));
	assert_true(ok("# HELP lowprof_x Some text."));
	assert_true(ok("# TYPE lowprof_x counter"));
	assert_false(ok("lowprof_exporter_windows_sent_total 9"));
	assert_false(ok("# TYPE lowprof_exporter_windows_sent_total counter"));
	assert_false(ok("other_metric 1"));
	assert_false(ok("lowprof_x 1 # comment"));
	assert_false(ok("lowprof_x{a=\"b\" 1"));
	assert_false(ok("lowprof_x"));
	assert_false(ok("lowprof_x "));
	assert_false(ok("lowprof_x\t1"));
	assert_false(ok("lowprof_x 1\r"));
	assert_false(ok("lowprof_x{a=\"\\\"\"} 1"));
	assert_false(ok("lowprof_x 0x10"));
	assert_false(ok(""));
	assert_false(ok("# HELP "));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pyroscope_series),
		cmocka_unit_test(test_pyroscope_service_given),
		cmocka_unit_test(test_service_names),
		cmocka_unit_test_setup_teardown(test_headers, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_queue, make_dir, remove_dir),
		cmocka_unit_test(test_metrics_lines),
		cmocka_unit_test(test_spool_names),
		cmocka_unit_test_setup_teardown(test_queue_shards, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(test_symb_metrics, make_dir, remove_dir),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
