// SPDX-License-Identifier: MIT
/*
 * coll_read_maps (collector/procs.c) on this process: the LPS_MAPS records it
 * emits carry every executable mapping, split into records under the limit,
 * with the build-id the kernel gives for file mappings (PROCMAP_QUERY) equal
 * to the object's own note, and none for anonymous or special mappings.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "collector_int.h"
#include "procfs.h"
#include "self_objs.h"

/* What the records said about one mapping (the record buffer is reused). */
struct seen {
	uint64_t start, end, inode;
	bool file; /* inode != 0 and a path not starting with '[' */
	bool exe;  /* the path is /proc/self/exe's */
	uint8_t id[LPS_MAX_BUILD_ID];
	uint32_t idlen;
};

struct sink {
	struct seen *m;
	uint32_t n, cap;
	uint32_t records;
	uint32_t procs; /* LPS_PROC records */
	const char *exe;
};

static int collect(void *ctx, struct lps_enc *enc)
{
	struct sink *s = ctx;
	struct lps_mapping m;
	struct lps_record r;
	long len = lps_enc_len(enc);
	int ret;

	assert_true(len > 0 && len <= (long)LPS_MAX_RECORD);
	assert_int_equal(lps_decode(enc->buf, (size_t)len, &r), 0);
	if (r.type == LPS_PROC) {
		/* what the process runs, once, before its mappings */
		assert_int_equal(r.proc.pid, getpid());
		assert_int_equal(s->records, 0);
		assert_int_equal(s->procs, 0);
		assert_int_equal(r.proc.exe.len, strlen(s->exe));
		assert_memory_equal(r.proc.exe.ptr, s->exe, r.proc.exe.len);
		s->procs++;
		return 0;
	}
	assert_int_equal(s->procs, 1);
	assert_int_equal(r.type, LPS_MAPS);
	assert_int_equal(r.maps.pid, getpid());
	/* the first record replaces, the others append */
	assert_int_equal(r.maps.append, s->records > 0);
	s->records++;
	while ((ret = lps_maps_next(&r.maps, &m)) == 1) {
		struct seen *o;

		if (s->n == s->cap) {
			s->cap = s->cap ? s->cap * 2 : 256;
			s->m = realloc(s->m, s->cap * sizeof(*s->m));
			assert_non_null(s->m);
		}
		o = &s->m[s->n++];
		assert_true(m.prot & LPS_PROT_X);
		assert_true(m.build_id.len <= LPS_MAX_BUILD_ID);
		o->start = m.start;
		o->end = m.end;
		o->inode = m.inode;
		o->file = m.inode && m.path.len && m.path.ptr[0] != '[';
		o->exe = m.path.len == strlen(s->exe) && !memcmp(m.path.ptr, s->exe, m.path.len);
		o->idlen = m.build_id.len;
		memcpy(o->id, m.build_id.ptr, m.build_id.len);
	}
	assert_int_equal(ret, 0);
	return 0;
}

/* Skips when the kernel has no PROCMAP_QUERY (Linux < 6.11). */
static void skip_without_procmap_query(void)
{
	struct lps_mapping m = {.start = 0, .end = 0x1000};
	uint8_t id[LPS_MAX_BUILD_ID];
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	int r;

	assert_true(fd >= 0);
	r = coll_maps_build_id(fd, &m, id);
	close(fd);
	if (r == -EOPNOTSUPP)
		skip();
}

/*
 * Reads this process's maps through coll_read_maps and checks each mapping
 * against the loaded objects; returns how many mappings of the executable
 * had its build-id.
 */
static uint32_t read_and_check(struct sink *s, uint32_t *records)
{
	struct self_obj objs[64];
	struct coll_proc p = {.used = true, .pid = (uint32_t)getpid()};
	struct lps_enc enc;
	uint32_t exe_ok = 0, files = 0;
	int nobj = self_objs(objs, 64);

	assert_true(nobj >= 2 && objs[0].main && objs[0].idlen >= 16);
	s->n = s->records = s->procs = 0;
	lps_enc_init_dynamic(&enc);
	assert_int_equal(coll_read_maps(&p, 0, 1, &enc, collect, s), 0);
	lps_enc_free(&enc);
	*records = s->records;
	assert_int_equal(p.nranges, s->n);
	for (uint32_t i = 0; i < s->n; i++) {
		const struct seen *m = &s->m[i];
		const struct self_obj *o = self_obj_in(objs, nobj, m->start, m->end);

		assert_true(p.ranges[i].start == m->start && p.ranges[i].end == m->end);
		if (!m->file) {
			/* anonymous, [vdso]: the kernel is not asked */
			assert_int_equal(m->idlen, 0);
			continue;
		}
		files++;
		if (m->exe) {
			assert_int_equal(m->idlen, objs[0].idlen);
			assert_memory_equal(m->id, objs[0].id, objs[0].idlen);
			exe_ok++;
		} else if (o && o->idlen) {
			assert_int_equal(m->idlen, o->idlen);
			assert_memory_equal(m->id, o->id, o->idlen);
		}
	}
	assert_true(files >= 2); /* the test, libc, ld.so, ... */
	free(p.ranges);
	return exe_ok;
}

static void test_read_maps_self(void **state)
{
	struct sink s = {0};
	char exe[PATH_MAX];
	uint32_t records;
	ssize_t n;

	skip_without_procmap_query();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	s.exe = exe;
	assert_int_equal(read_and_check(&s, &records), 1);
	assert_int_equal(records, 1);
	free(s.m);
}

/*
 * Thousands of executable mappings of one file: they are split into several
 * records (each under the limit, sized with their build-ids) and every one
 * carries the file's build-id (asked once, reused for the others).
 */
static void test_read_maps_many(void **state)
{
	enum { N = 6000 };
	static void *pages[N];
	struct sink s = {0};
	char exe[PATH_MAX];
	uint32_t records;
	ssize_t n;
	int fd;

	skip_without_procmap_query();
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	s.exe = exe;
	fd = open(exe, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	for (int i = 0; i < N; i++) {
		/* page 0 each time: neighbours never merge (offsets not contiguous) */
		pages[i] = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (pages[i] == MAP_FAILED) {
			for (int j = 0; j < i; j++)
				munmap(pages[j], 4096);
			close(fd);
			skip(); /* a noexec mount */
		}
	}
	close(fd);
	assert_int_equal(read_and_check(&s, &records), N + 1);
	/* 6000 x (path + 20 + 64) bytes do not fit one 512 KiB chunk */
	assert_true(records >= 2);
	for (int i = 0; i < N; i++)
		munmap(pages[i], 4096);
	free(s.m);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_maps_self),
		cmocka_unit_test(test_read_maps_many),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
