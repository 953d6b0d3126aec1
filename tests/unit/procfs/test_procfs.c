// SPDX-License-Identifier: MIT
/*
 * The collector's /proc parsers: /proc/PID/maps lines, /proc/kallsyms lines
 * and coll_read_file, on hand-written lines with exact expected fields and on
 * this machine's real files; and the PROCMAP_QUERY build-id of this test's
 * own mappings against the notes the dynamic linker sees.
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
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "procfs.h"
#include "self_objs.h"

static int str_eq(struct lps_str s, const char *lit)
{
	return s.len == strlen(lit) && memcmp(s.ptr, lit, s.len) == 0;
}

/* Parses a NUL-terminated line (without its NUL). */
static int maps_line(const char *line, struct lps_mapping *m)
{
	return coll_maps_parse_line(line, strlen(line), m);
}

static int ksym_line(const char *line, struct lps_ksym *k)
{
	return coll_ksym_parse_line(line, strlen(line), k);
}

/* ---- /proc/PID/maps ---- */

static void test_maps_typical(void **state)
{
	struct lps_mapping m;

	assert_int_equal(maps_line("00400000-00452000 r-xp 00001000 08:02 173521      "
				   "/usr/bin/dbus-daemon\n",
				   &m),
			 0);
	assert_int_equal(m.start, 0x400000);
	assert_int_equal(m.end, 0x452000);
	assert_int_equal(m.offset, 0x1000);
	assert_int_equal(m.dev_major, 8);
	assert_int_equal(m.dev_minor, 2);
	assert_int_equal(m.inode, 173521);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_X | LPS_PROT_P);
	assert_true(str_eq(m.path, "/usr/bin/dbus-daemon"));

	/* 48-bit addresses, hex device numbers above 9, the kernel's padding */
	assert_int_equal(maps_line("7fe51676f000-7fe5168c5000 r-xp 00026000 fe:1a 332835"
				   "                     /usr/lib/x86_64-linux-gnu/libc.so.6\n",
				   &m),
			 0);
	assert_int_equal(m.start, 0x7fe51676f000ull);
	assert_int_equal(m.end, 0x7fe5168c5000ull);
	assert_int_equal(m.offset, 0x26000);
	assert_int_equal(m.dev_major, 0xfe);
	assert_int_equal(m.dev_minor, 0x1a);
	assert_int_equal(m.inode, 332835);
	assert_true(str_eq(m.path, "/usr/lib/x86_64-linux-gnu/libc.so.6"));

	/* shared, writable, not executable; full 64-bit values */
	assert_int_equal(maps_line("ffffffffff600000-ffffffffff601000 rw-s ffffffffffffffff "
				   "103:0f 18446744073709551615 /dev/shm/x\n",
				   &m),
			 0);
	assert_int_equal(m.start, 0xffffffffff600000ull);
	assert_int_equal(m.end, 0xffffffffff601000ull);
	assert_int_equal(m.offset, UINT64_MAX);
	assert_int_equal(m.dev_major, 0x103);
	assert_int_equal(m.dev_minor, 0xf);
	assert_int_equal(m.inode, UINT64_MAX);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_W);
	assert_true(str_eq(m.path, "/dev/shm/x"));

	/* no permissions at all (guard pages), upper-case hex */
	assert_int_equal(maps_line("7FE516625000-7FE516626000 ---p 00000000 00:00 0\n", &m), 0);
	assert_int_equal(m.start, 0x7fe516625000ull);
	assert_int_equal(m.prot, LPS_PROT_P);

	/* start == end is accepted (an empty range is not malformed) */
	assert_int_equal(maps_line("1000-1000 r--p 00000000 00:00 0\n", &m), 0);
}

static void test_maps_anonymous_and_special(void **state)
{
	struct lps_mapping m;

	/* current kernels end an unnamed line with "0 \n", older ones "0\n" */
	assert_int_equal(maps_line("7fe516625000-7fe5166e9000 rw-p 00000000 00:00 0 \n", &m), 0);
	assert_int_equal(m.inode, 0);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_W | LPS_PROT_P);
	assert_int_equal(m.path.len, 0);
	assert_int_equal(maps_line("7fe516625000-7fe5166e9000 rw-p 00000000 00:00 0\n", &m), 0);
	assert_int_equal(m.path.len, 0);
	assert_int_equal(maps_line("7fe516625000-7fe5166e9000 rw-p 00000000 00:00 0", &m), 0);
	assert_int_equal(m.path.len, 0);

	assert_int_equal(maps_line("7ffd1d5f2000-7ffd1d5f4000 r-xp 00000000 00:00 0"
				   "                          [vdso]\n",
				   &m),
			 0);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_X | LPS_PROT_P);
	assert_true(str_eq(m.path, "[vdso]"));
	assert_int_equal(maps_line("7ffd1d4f1000-7ffd1d512000 rw-p 00000000 00:00 0"
				   "                          [stack]\n",
				   &m),
			 0);
	assert_true(str_eq(m.path, "[stack]"));
	assert_int_equal(maps_line("7ffd1d4f1000-7ffd1d512000 rw-p 00000000 00:00 0 "
				   "[anon:glibc malloc]\n",
				   &m),
			 0);
	assert_true(str_eq(m.path, "[anon:glibc malloc]"));
}

static void test_maps_odd_paths(void **state)
{
	struct lps_mapping m;

	/* spaces inside a path are part of it; trailing ones too */
	assert_int_equal(
		maps_line("400000-401000 r-xp 00000000 08:01 42 /opt/my app/bin/a b  \n", &m), 0);
	assert_true(str_eq(m.path, "/opt/my app/bin/a b  "));

	/* " (deleted)" is kept: the path is opaque, interpreting it is not ours */
	assert_int_equal(
		maps_line("400000-401000 r-xp 00000000 00:01 7 /memfd:jit (deleted)\n", &m), 0);
	assert_true(str_eq(m.path, "/memfd:jit (deleted)"));

	/* the kernel writes a '\n' in a name as the four bytes "\012" */
	assert_int_equal(maps_line("400000-401000 r-xp 00000000 08:01 42 /tmp/a\\012b\n", &m), 0);
	assert_true(str_eq(m.path, "/tmp/a\\012b"));

	/* no trailing newline: the path runs to the end of the buffer */
	assert_int_equal(maps_line("400000-401000 r-xp 00000000 08:01 42 /bin/true", &m), 0);
	assert_true(str_eq(m.path, "/bin/true"));

	/* a path of exactly LPS_MAX_PATH bytes is accepted, one more is not */
	{
		const char *head = "400000-401000 r-xp 00000000 08:01 42 ";
		size_t hl = strlen(head);
		char *line = malloc(hl + LPS_MAX_PATH + 2);

		assert_non_null(line);
		memcpy(line, head, hl);
		memset(line + hl, 'p', LPS_MAX_PATH + 1);
		line[hl] = '/';
		assert_int_equal(coll_maps_parse_line(line, hl + LPS_MAX_PATH, &m), 0);
		assert_int_equal(m.path.len, LPS_MAX_PATH);
		assert_int_equal(coll_maps_parse_line(line, hl + LPS_MAX_PATH + 1, &m), -EBADMSG);
		free(line);
	}
}

static void test_maps_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		/* bad hex */
		"40g000-401000 r-xp 00000000 08:01 42 /bin/x\n",
		"400000-40100x r-xp 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-xp 0000z000 08:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000 0g:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000 08:0g 42 /bin/x\n",
		"-401000 r-xp 00000000 08:01 42 /bin/x\n",
		"0x400000-0x401000 r-xp 00000000 08:01 42 /bin/x\n",
		/* end < start */
		"401000-400000 r-xp 00000000 08:01 42 /bin/x\n",
		/* bad permissions */
		"400000-401000 r-xq 00000000 08:01 42 /bin/x\n",
		"400000-401000 R-xp 00000000 08:01 42 /bin/x\n",
		"400000-401000 x-rp 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-x 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-xpp 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-x",
		/* missing fields or separators */
		"400000-401000\n",
		"400000-401000 r-xp\n",
		"400000-401000 r-xp 00000000\n",
		"400000-401000 r-xp 00000000 08:01\n",
		"400000-401000 r-xp 00000000 08:01 \n",
		"400000-401000 r-xp 00000000 08 42 /bin/x\n",
		"400000 r-xp 00000000 08:01 42 /bin/x\n",
		"400000-401000  r-xp 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000 08:01 /bin/x\n",
		" 400000-401000 r-xp 00000000 08:01 42 /bin/x\n",
		/* the inode must be followed by a separator, not glued to the path */
		"400000-401000 r-xp 00000000 08:01 42/bin/x\n",
		"400000-401000 r-xp 00000000 08:01 0x2a /bin/x\n",
		/* too-long numbers: 17 hex digits, inode > UINT64_MAX, dev > 32 bits */
		"10000000000000000-10000000000000001 r-xp 00000000 08:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000000000000 08:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000 08:01 18446744073709551616 /bin/x\n",
		"400000-401000 r-xp 00000000 100000000:01 42 /bin/x\n",
		"400000-401000 r-xp 00000000 08:100000000 42 /bin/x\n",
	};
	struct lps_mapping m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = maps_line(bad[i], &m);

		if (err != -EBADMSG)
			fail_msg("accepted malformed maps line %zu: \"%s\"", i, bad[i]);
	}
	/* a '\n' inside the line (the iterator never passes one) */
	assert_int_equal(maps_line("400000-401000 r-xp 00000000 08:01 42 /bin/x\n/y\n", &m),
			 -EBADMSG);
}

/*
 * Embedded NUL bytes. The kernel never writes one (a path cannot hold it).
 * A NUL anywhere, the path included, is a malformed line: the symbolizer
 * treats paths as C strings once they are interned.
 */
static void test_maps_embedded_nul(void **state)
{
	static const char num[] = "400000-40\0"
				  "1000 r-xp 00000000 08:01 42 /bin/x\n";
	static const char perm[] = "400000-401000 r\0xp 00000000 08:01 42 /bin/x\n";
	static const char inode[] = "400000-401000 r-xp 00000000 08:01 4\0002 /bin/x\n";
	static const char path[] = "400000-401000 r-xp 00000000 08:01 42 /bin/x\0evil\n";
	struct lps_mapping m;

	assert_int_equal(coll_maps_parse_line(num, sizeof(num) - 1, &m), -EBADMSG);
	assert_int_equal(coll_maps_parse_line(perm, sizeof(perm) - 1, &m), -EBADMSG);
	assert_int_equal(coll_maps_parse_line(inode, sizeof(inode) - 1, &m), -EBADMSG);
	assert_int_equal(coll_maps_parse_line(path, sizeof(path) - 1, &m), -EBADMSG);
}

static void test_maps_next(void **state)
{
	static const char buf[] = "00400000-00401000 r--p 00000000 08:01 42 /bin/a\n"
				  "00401000-00402000 r-xp 00001000 08:01 42 /bin/a\n"
				  "this is not a maps line\n"
				  "7ffd0000-7ffd1000 rw-p 00000000 00:00 0 \n"
				  "\n"
				  "7ffe0000-7ffe2000 r-xp 00000000 00:00 0 [vdso]";
	const char *cur = buf, *end = buf + sizeof(buf) - 1;
	struct lps_mapping m;

	assert_int_equal(coll_maps_next(&cur, end, &m), 1);
	assert_int_equal(m.start, 0x400000);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_P);
	assert_true(str_eq(m.path, "/bin/a"));
	assert_int_equal(coll_maps_next(&cur, end, &m), 1);
	assert_int_equal(m.offset, 0x1000);
	assert_int_equal(m.prot, LPS_PROT_R | LPS_PROT_X | LPS_PROT_P);
	/* the malformed line is reported, then skipped */
	assert_int_equal(coll_maps_next(&cur, end, &m), -EBADMSG);
	assert_int_equal(coll_maps_next(&cur, end, &m), 1);
	assert_int_equal(m.start, 0x7ffd0000);
	assert_int_equal(m.path.len, 0);
	/* an empty line is malformed too */
	assert_int_equal(coll_maps_next(&cur, end, &m), -EBADMSG);
	/* last line without '\n' */
	assert_int_equal(coll_maps_next(&cur, end, &m), 1);
	assert_true(str_eq(m.path, "[vdso]"));
	assert_ptr_equal(cur, end);
	assert_int_equal(coll_maps_next(&cur, end, &m), 0);
	assert_int_equal(coll_maps_next(&cur, end, &m), 0);

	/* an empty buffer has no lines */
	cur = end = buf;
	assert_int_equal(coll_maps_next(&cur, end, &m), 0);
}

static void test_maps_real_self(void **state)
{
	char exe[PATH_MAX], *buf;
	const char *cur, *end;
	struct lps_mapping m;
	size_t len;
	ssize_t n;
	int ret, lines = 0, found = 0;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	assert_int_equal(coll_read_file("/proc/self/maps", 64u << 20, &buf, &len), 0);
	assert_true(len > 0);
	cur = buf;
	end = buf + len;
	while ((ret = coll_maps_next(&cur, end, &m)) != 0) {
		if (ret != 1)
			fail_msg("malformed line in /proc/self/maps near offset %zu",
				 (size_t)(cur - buf));
		lines++;
		assert_true(m.start <= m.end);
		if ((m.prot & LPS_PROT_X) && str_eq(m.path, exe)) {
			assert_true(m.inode != 0);
			found++;
		}
	}
	assert_true(lines > 5);
	if (!found)
		fail_msg("no executable mapping of %s in /proc/self/maps", exe);
	free(buf);
}

/* ---- build-ids through PROCMAP_QUERY ---- */

struct self_maps {
	int fd;
	char *buf;
	size_t len;
};

static void self_maps_open(struct self_maps *s)
{
	s->fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	assert_true(s->fd >= 0);
	assert_int_equal(coll_read_fd(s->fd, 64u << 20, &s->buf, &s->len), 0);
}

static void self_maps_close(struct self_maps *s)
{
	close(s->fd);
	free(s->buf);
}

/* The first mapping of s with path and the prot bits want (exactly), or fails. */
static struct lps_mapping self_mapping(const struct self_maps *s, const char *path, uint32_t want)
{
	const char *cur = s->buf, *end = s->buf + s->len;
	struct lps_mapping m;
	int r;

	while ((r = coll_maps_next(&cur, end, &m)) != 0)
		if (r == 1 && str_eq(m.path, path) && (m.prot & ~LPS_PROT_P) == want)
			return m;
	fail_msg("no %s mapping with prot %u in /proc/self/maps", path, want);
	return m;
}

/* This test binary's text mapping has its own build-id, as readelf shows it. */
static void test_build_id_self(void **state)
{
	struct self_obj objs[64];
	uint8_t id[LPS_MAX_BUILD_ID];
	const struct self_obj *o;
	struct lps_mapping m, bad;
	struct self_maps s;
	char exe[PATH_MAX];
	ssize_t n;
	int nobj, r;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	nobj = self_objs(objs, 64);
	assert_true(nobj >= 2);
	assert_true(objs[0].main);
	/* the build links with --build-id: a 20-byte SHA-1 (or 16-byte md5/uuid) */
	assert_true(objs[0].idlen >= 16);

	self_maps_open(&s);
	m = self_mapping(&s, exe, LPS_PROT_R | LPS_PROT_X);
	o = self_obj_in(objs, nobj, m.start, m.end);
	assert_ptr_equal(o, &objs[0]);
	r = coll_maps_build_id(s.fd, &m, id);
	if (r == -EOPNOTSUPP) {
		self_maps_close(&s);
		skip(); /* Linux < 6.11 */
	}
	assert_int_equal(r, (int)o->idlen);
	assert_memory_equal(id, o->id, o->idlen);

	/* the same question again gives the same answer (the fd is reusable) */
	memset(id, 0, sizeof(id));
	assert_int_equal(coll_maps_build_id(s.fd, &m, id), (int)o->idlen);
	assert_memory_equal(id, o->id, o->idlen);

	/* an answer about another mapping than the one read is not used */
	bad = m;
	bad.end += 0x1000;
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ESTALE);
	bad = m;
	bad.inode++;
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ESTALE);
	bad = m;
	bad.dev_minor ^= 1;
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ESTALE);
	/* inside the mapping, not at its start: the range differs */
	bad = m;
	bad.start += 0x1000;
	if (bad.start < bad.end)
		assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ESTALE);

	/* only executable file mappings are asked about: the kernel says none */
	bad = self_mapping(&s, exe, LPS_PROT_R);
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ENOENT);
	bad = self_mapping(&s, "[vdso]", LPS_PROT_R | LPS_PROT_X);
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ENOENT);
	/* never the next mapping: nothing is mapped at page 0 */
	bad = (struct lps_mapping){.start = 0, .end = 0x1000};
	assert_int_equal(coll_maps_build_id(s.fd, &bad, id), -ENOENT);
	self_maps_close(&s);
}

/* An executable file mapping of a file that is not ELF has no build-id: 0. */
static void test_build_id_none(void **state)
{
	char name[64];
	uint8_t id[LPS_MAX_BUILD_ID];
	struct lps_mapping m;
	struct self_maps s;
	struct stat st;
	void *p;
	int fd, r;

	fd = memfd_create("lowprof-test-noelf", MFD_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, 8192), 0);
	assert_int_equal(write(fd, "not an ELF file", 15), 15);
	p = mmap(NULL, 8192, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		skip(); /* vm.memfd_noexec or a policy forbids executable memfds */
	}
	assert_int_equal(fstat(fd, &st), 0);
	snprintf(name, sizeof(name), "/memfd:lowprof-test-noelf (deleted)");
	self_maps_open(&s);
	m = self_mapping(&s, name, LPS_PROT_R | LPS_PROT_X);
	assert_true(m.start == (uintptr_t)p);
	assert_true(m.inode == st.st_ino);
	memset(id, 0xaa, sizeof(id));
	r = coll_maps_build_id(s.fd, &m, id);
	if (r != -EOPNOTSUPP) {
		assert_int_equal(r, 0);
		assert_int_equal(id[0], 0xaa); /* nothing copied */
	}
	self_maps_close(&s);
	munmap(p, 8192);
	close(fd);
	if (r == -EOPNOTSUPP)
		skip();
}

/* ---- /proc/kallsyms ---- */

static void test_ksym_lines(void **state)
{
	struct lps_ksym k;

	assert_int_equal(ksym_line("ffffffff81000000 T _stext\n", &k), 1);
	assert_int_equal(k.addr, 0xffffffff81000000ull);
	assert_true(str_eq(k.name, "_stext"));
	assert_non_null(k.module.ptr);
	assert_int_equal(k.module.len, 0);

	/* module symbols: "name\t[module]" */
	assert_int_equal(ksym_line("ffffffffc0a01000 t ext4_fill_super\t[ext4]\n", &k), 1);
	assert_int_equal(k.addr, 0xffffffffc0a01000ull);
	assert_true(str_eq(k.name, "ext4_fill_super"));
	assert_true(str_eq(k.module, "ext4"));
	assert_int_equal(ksym_line("ffffffffc0000000 t bpf_prog_6deef7357e7b4530_sd_fw\t[bpf]", &k),
			 1);
	assert_true(str_eq(k.module, "bpf"));

	/* hidden addresses (kptr_restrict) parse as 0 */
	assert_int_equal(ksym_line("0000000000000000 T _text\n", &k), 1);
	assert_int_equal(k.addr, 0);

	/* text: t T w W; anything else is parsed but not text */
	assert_int_equal(ksym_line("ffffffff81000010 t local_fn\n", &k), 1);
	assert_int_equal(ksym_line("ffffffff81000020 W weak_fn\n", &k), 1);
	assert_int_equal(ksym_line("ffffffff81000030 w weak_local\n", &k), 1);
	assert_int_equal(ksym_line("ffffffff82000000 D init_task\n", &k), 0);
	assert_true(str_eq(k.name, "init_task"));
	assert_int_equal(ksym_line("ffffffff83000000 b some_bss\t[ext4]\n", &k), 0);
	assert_true(str_eq(k.module, "ext4"));
	assert_int_equal(ksym_line("ffffffff82000000 r __ksymtab_x\n", &k), 0);
	assert_int_equal(ksym_line("0000000000000000 A fixed_percpu_data\n", &k), 0);

	/* names of 512 bytes are accepted, longer ones are not */
	{
		char line[32 + 514];
		int hl = snprintf(line, sizeof(line), "ffffffff81000000 T ");

		memset(line + hl, 'n', 513);
		line[hl + 513] = '\0';
		assert_int_equal(coll_ksym_parse_line(line, (size_t)hl + 512, &k), 1);
		assert_int_equal(k.name.len, 512);
		assert_int_equal(coll_ksym_parse_line(line, (size_t)hl + 513, &k), -EBADMSG);
	}
}

static void test_ksym_malformed(void **state)
{
	static const char *const bad[] = {
		"",
		"\n",
		"ffffffff81000000\n",		      /* no type */
		"ffffffff81000000 \n",		      /* no type */
		"ffffffff81000000 T\n",		      /* no name */
		"ffffffff81000000 T \n",	      /* empty name */
		"ffffffff81000000 TT name\n",	      /* type of two chars */
		"ffffffff81000000 T two words\n",     /* space in the name */
		"ffffffff8100000g T name\n",	      /* bad hex */
		"1ffffffff81000000 T name\n",	      /* 17 hex digits */
		" ffffffff81000000 T name\n",	      /* leading space */
		"ffffffff81000000  T name\n",	      /* double space */
		"T name\n",			      /* no address */
		"ffffffff81000000 T name\text4]\n",   /* no '[' */
		"ffffffff81000000 T name\t[ext4\n",   /* no ']' */
		"ffffffff81000000 T name\text4\n",    /* no brackets */
		"ffffffff81000000 T name\t\n",	      /* tab, no module */
		"ffffffff81000000 T name\t[\n",	      /* one bracket */
		"ffffffff81000000 T \t[ext4]\n",      /* module, no name */
		"ffffffff81000000 T name\t[ext4] \n", /* text after ']' */
	};
	struct lps_ksym k;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = ksym_line(bad[i], &k);

		if (err != -EBADMSG)
			fail_msg("malformed kallsyms line %zu returned %d: \"%s\"", i, err, bad[i]);
	}
}

/* /proc/modules: the use counts go, the rest stays, byte for byte. */
static void test_modules_strip(void **state)
{
	char a[] = "nf_nat 61440 2 nft_chain_nat,xt_MASQUERADE, Live 0xffffffffc0a1e000\n"
		   "loop 40960 0 - Live 0x0000000000000000 (E)\n";
	char b[] = "nf_nat 61440 3 nft_chain_nat,xt_MASQUERADE, Live 0xffffffffc0a1e000\n"
		   "loop 40960 12 - Live 0x0000000000000000 (E)\n";
	const char *want = "nf_nat 61440 nft_chain_nat,xt_MASQUERADE, Live 0xffffffffc0a1e000\n"
			   "loop 40960 - Live 0x0000000000000000 (E)\n";
	char odd[] = "a\nb 1\nc 2 3\n\n";
	size_t n;

	(void)state;
	n = coll_modules_strip_counts(a, strlen(a));
	assert_int_equal(n, strlen(want));
	assert_memory_equal(a, want, n);
	n = coll_modules_strip_counts(b, strlen(b));
	assert_memory_equal(b, want, n);
	/* short lines: nothing past them is taken; the third field alone goes */
	n = coll_modules_strip_counts(odd, strlen(odd));
	assert_int_equal(n, strlen("a\nb 1\nc 2\n\n"));
	assert_memory_equal(odd, "a\nb 1\nc 2\n\n", n);
	assert_int_equal(coll_modules_strip_counts(odd, 0), 0);
}

static void test_ksym_real(void **state)
{
	const char *p, *end, *nl;
	size_t len, lines = 0, text = 0;
	struct lps_ksym k;
	char *buf;
	int err;

	err = coll_read_file("/proc/kallsyms", 256u << 20, &buf, &len);
	if (err == -EACCES || err == -EPERM || err == -ENOENT)
		skip();
	assert_int_equal(err, 0);
	for (p = buf, end = buf + len; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		err = coll_ksym_parse_line(p, (size_t)(nl - p), &k);
		if (err < 0)
			fail_msg("kallsyms line %zu malformed: \"%.*s\"", lines + 1, (int)(nl - p),
				 p);
		lines++;
		text += err == 1;
	}
	assert_true(lines > 1000);
	assert_true(text > 100);
	free(buf);
}

/* ---- coll_read_file ---- */

static void test_read_file_proc(void **state)
{
	size_t len;
	char *buf;

	assert_int_equal(coll_read_file("/proc/self/status", 1u << 20, &buf, &len), 0);
	assert_int_equal(strlen(buf), len); /* NUL-terminated, no NUL inside */
	assert_true(len > 100);
	assert_memory_equal(buf, "Name:", 5);
	assert_non_null(strstr(buf, "\nPid:"));
	/* the last field: the whole file was read, not one read()'s worth */
	assert_non_null(strstr(buf, "\nnonvoluntary_ctxt_switches:"));
	assert_int_equal(buf[len - 1], '\n');
	free(buf);

	/* a procfs file over max: st_size is 0, so only reading can tell */
	buf = (char *)1;
	assert_int_equal(coll_read_file("/proc/self/status", 16, &buf, &len), -EFBIG);
	assert_ptr_equal(buf, (char *)1); /* untouched on error */
	assert_int_equal(coll_read_file("/proc/self/status", 0, &buf, &len), -EFBIG);

	assert_int_equal(coll_read_file("/nonexistent/lowprof-test", 1024, &buf, &len), -ENOENT);
}

/* Regular files across the 64 KiB first buffer and exactly at max. */
static void test_read_file_sizes(void **state)
{
	char path[] = "/tmp/lowprof-test-procfs-XXXXXX";
	size_t big = 200000, len;
	char *data, *buf;
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	data = malloc(big);
	assert_non_null(data);
	for (size_t i = 0; i < big; i++)
		data[i] = (char)('a' + i % 26);
	assert_int_equal(write(fd, data, big), (ssize_t)big);
	close(fd);

	assert_int_equal(coll_read_file(path, 1u << 20, &buf, &len), 0);
	assert_int_equal(len, big);
	assert_memory_equal(buf, data, big);
	assert_int_equal(buf[len], '\0');
	free(buf);

	/* exactly max bytes fits; one byte less does not */
	assert_int_equal(coll_read_file(path, big, &buf, &len), 0);
	assert_int_equal(len, big);
	free(buf);
	assert_int_equal(coll_read_file(path, big - 1, &buf, &len), -EFBIG);
	assert_int_equal(coll_read_file(path, 65536, &buf, &len), -EFBIG);

	/* empty file */
	fd = open(path, O_WRONLY | O_TRUNC);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(coll_read_file(path, 0, &buf, &len), 0);
	assert_int_equal(len, 0);
	assert_int_equal(buf[0], '\0');
	free(buf);

	unlink(path);
	free(data);
}

/* /proc/PID/status: the innermost NSpid and the effective uid. */
static void test_status_ids(void **state)
{
	static const char host[] = "Name:\tnode\nUmask:\t0022\nState:\tR (running)\n"
				   "Uid:\t1000\t1001\t1000\t1000\nGid:\t0\t0\t0\t0\n"
				   "NSpid:\t4242\n";
	static const char nested[] = "Name:\tx\\nNSpid:\t9\nNSpid:\t4242\t17\t1\n"
				     "Uid:\t0\t65534\t0\t0\n";
	char buf[512], *s;
	size_t len;
	uint32_t nspid, euid;

	assert_int_equal(coll_status_ids(host, sizeof(host) - 1, &nspid, &euid), 0);
	assert_int_equal(nspid, 4242);
	assert_int_equal(euid, 1001);
	/* the escaped newline of Name does not start a line; the last NSpid wins */
	assert_int_equal(coll_status_ids(nested, sizeof(nested) - 1, &nspid, &euid), 0);
	assert_int_equal(nspid, 1);
	assert_int_equal(euid, 65534);
	/* missing, empty, overflowing, or not a number: malformed */
	assert_int_equal(coll_status_ids("Uid:\t1\t2\n", 9, &nspid, &euid), -EBADMSG);
	snprintf(buf, sizeof(buf), "NSpid:\t\nUid:\t1\t2\n");
	assert_int_equal(coll_status_ids(buf, strlen(buf), &nspid, &euid), -EBADMSG);
	snprintf(buf, sizeof(buf), "NSpid:\t4294967296\nUid:\t1\t2\n");
	assert_int_equal(coll_status_ids(buf, strlen(buf), &nspid, &euid), -EBADMSG);
	snprintf(buf, sizeof(buf), "NSpid:\t12x\nUid:\t1\t2\n");
	assert_int_equal(coll_status_ids(buf, strlen(buf), &nspid, &euid), -EBADMSG);
	snprintf(buf, sizeof(buf), "NSpid:\t12\nUid:\t1\n");
	assert_int_equal(coll_status_ids(buf, strlen(buf), &nspid, &euid), -EBADMSG);
	/* our own */
	assert_int_equal(coll_read_file("/proc/self/status", 1 << 16, &s, &len), 0);
	assert_int_equal(coll_status_ids(s, len, &nspid, &euid), 0);
	assert_int_equal(nspid, (uint32_t)getpid()); /* the test runs in the host's namespace */
	assert_int_equal(euid, (uint32_t)geteuid());
	free(s);
}

/* /proc/PID/fdinfo/FD's mnt_id and /proc/PID/mountinfo's types, and our own */
static void test_mounts(void **state)
{
	static const char info[] =
		"36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 shared:3 - ext3 /dev/root rw\n"
		"40 36 0:55 / /tmp rw - fuse.lp-hangfs lp-hangfs ro\n"
		"41 36 0:56 / /a\\040-\\040b rw - tmpfs tmpfs rw\n"
		"42 36 0:57 / /x rw -\n"
		"43 36 0:58 / /y rw - ";
	char path[48], *s, *m;
	struct lps_str t;
	uint32_t id;
	size_t len, mlen;
	int fd;

	(void)state;
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 36, &t), 0);
	assert_int_equal(t.len, 4);
	assert_memory_equal(t.ptr, "ext3", 4);
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 40, &t), 0);
	assert_int_equal(t.len, 14);
	assert_memory_equal(t.ptr, "fuse.lp-hangfs", 14);
	/* an escaped blank is no separator */
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 41, &t), 0);
	assert_memory_equal(t.ptr, "tmpfs", 5);
	/* no type after the separator, or no separator: malformed; unknown: absent */
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 42, &t), -EBADMSG);
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 43, &t), -EBADMSG);
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 3, &t), -ENOENT);
	assert_int_equal(coll_mountinfo_type(info, sizeof(info) - 1, 4, &t), -ENOENT);
	assert_int_equal(coll_fdinfo_mnt_id("pos:\t0\nflags:\t02\nmnt_id:\t27\n", 28, &id), 0);
	assert_int_equal(id, 27);
	assert_int_equal(coll_fdinfo_mnt_id("pos:\t0\nmnt_id:\t\n", 16, &id), -EBADMSG);
	assert_int_equal(coll_fdinfo_mnt_id("pos:\t0\n", 7, &id), -EBADMSG);
	/* our own root: its mount is in our mountinfo, with a type */
	fd = open("/", O_PATH | O_CLOEXEC);
	assert_true(fd >= 0);
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	assert_int_equal(coll_read_file(path, 4096, &s, &len), 0);
	assert_int_equal(coll_fdinfo_mnt_id(s, len, &id), 0);
	assert_int_equal(coll_read_file("/proc/self/mountinfo", 1 << 22, &m, &mlen), 0);
	assert_int_equal(coll_mountinfo_type(m, mlen, id, &t), 0);
	assert_true(t.len > 0);
	free(m);
	free(s);
	close(fd);
}

/* /proc/PID/task/TID/children: pids each followed by a space */
static void test_parse_pids(void **state)
{
	pid_t out[4];
	size_t n = 0;

	(void)state;
	assert_int_equal(coll_parse_pids("", 0, out, &n, 4), 0);
	assert_int_equal(n, 0);
	assert_int_equal(coll_parse_pids("12 345 ", 7, out, &n, 4), 0);
	assert_int_equal(n, 2);
	assert_int_equal(out[0], 12);
	assert_int_equal(out[1], 345);
	/* appended after what is there; a trailing newline is fine */
	assert_int_equal(coll_parse_pids("2147483647\n", 11, out, &n, 4), 0);
	assert_int_equal(n, 3);
	assert_int_equal(out[2], INT_MAX);
	/* no room: what fits is kept */
	assert_int_equal(coll_parse_pids("7 8 ", 4, out, &n, 4), -ENOSPC);
	assert_int_equal(n, 4);
	assert_int_equal(out[3], 7);
	n = 0;
	assert_int_equal(coll_parse_pids("2147483648 ", 11, out, &n, 4), -EBADMSG);
	assert_int_equal(coll_parse_pids("0 ", 2, out, &n, 4), -EBADMSG);
	assert_int_equal(coll_parse_pids("-1 ", 3, out, &n, 4), -EBADMSG);
	assert_int_equal(coll_parse_pids("1  2", 4, out, &n, 4), -EBADMSG);
	assert_int_equal(coll_parse_pids("12345678901", 11, out, &n, 4), -EBADMSG);
	assert_int_equal(n, 1); /* "1" before the double space */
	n = 0;
	assert_int_equal(coll_parse_pids("3x", 2, out, &n, 4), -EBADMSG);
	assert_int_equal(n, 0);
	/* nothing but a space */
	assert_int_equal(coll_parse_pids(" ", 1, out, &n, 4), 0);
	assert_int_equal(n, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_maps_typical),
		cmocka_unit_test(test_parse_pids),
		cmocka_unit_test(test_maps_anonymous_and_special),
		cmocka_unit_test(test_maps_odd_paths),
		cmocka_unit_test(test_maps_malformed),
		cmocka_unit_test(test_maps_embedded_nul),
		cmocka_unit_test(test_maps_next),
		cmocka_unit_test(test_maps_real_self),
		cmocka_unit_test(test_build_id_self),
		cmocka_unit_test(test_build_id_none),
		cmocka_unit_test(test_ksym_lines),
		cmocka_unit_test(test_ksym_malformed),
		cmocka_unit_test(test_ksym_real),
		cmocka_unit_test(test_modules_strip),
		cmocka_unit_test(test_read_file_proc),
		cmocka_unit_test(test_read_file_sizes),
		cmocka_unit_test(test_status_ids),
		cmocka_unit_test(test_mounts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
