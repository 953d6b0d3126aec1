// SPDX-License-Identifier: MIT
/*
 * Unit tests for symbolizer/cache/ident.c: the content identity the cache is
 * keyed by, and the memo's rule.
 *
 *  - known answers: the identity is SHA-256 of the documented encoding;
 *  - an image is exactly its selection: the file's bytes in the ranges,
 *    zero elsewhere, and its identity is the hash of that (so whatever a
 *    parser reads of it is fixed by the identity);
 *  - the selection holds what the tables read: the symbol, stack-delta and
 *    DWARF results built from the image equal those built from the file
 *    (this test binary, built with -g, and the system's libc);
 *  - the identity changes with what the tables read and only with that;
 *  - the memo's rule (unique mount, no change during the read, a settled
 *    ctime) and the size limits.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

#include "cfi.h"
#include "debuginfo.h"
#include "elfsym.h"
#include "ident.h"

struct file {
	int fd;
	uint8_t *map;
	size_t size;
};

static void file_open(struct file *f, const char *path)
{
	struct stat st;

	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		fail_msg("%s: %s", path, strerror(errno));
	assert_int_equal(fstat(f->fd, &st), 0);
	f->size = (size_t)st.st_size;
	f->map = mmap(NULL, f->size, PROT_READ, MAP_PRIVATE, f->fd, 0);
	assert_true(f->map != MAP_FAILED);
}

static void file_close(struct file *f)
{
	munmap(f->map, f->size);
	close(f->fd);
}

static const char *self_path(void)
{
	static char path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

	assert_true(n > 0);
	path[n] = '\0';
	return path;
}

static const char *libc_path(void)
{
	Dl_info info;

	assert_true(dladdr((void *)&printf, &info) && info.dli_fname);
	return info.dli_fname;
}

static char *tmp_path(const char *name)
{
	static char path[PATH_MAX];
	const char *tmp = getenv("TMPDIR");

	snprintf(path, sizeof(path), "%s/lp-ident-%d-%s", tmp && *tmp ? tmp : "/tmp", getpid(),
		 name);
	return path;
}

static void write_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void expect_hex(const struct symb_ident *id, const char *want)
{
	char hex[SYMB_IDENT_HEX];

	assert_string_equal(symb_ident__hex(id, hex), want);
}

/* SHA-256("lowprof image 1\n" u64 size, u64 n, n x (u64 off, u64 len), bytes): hashlib. */
static void test_known_answers(void **state)
{
	struct symb_image img;
	const char *path = tmp_path("abc");
	int fd;

	(void)state;
	write_file(path, "abc", 3);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	/* not ELF: read whole in either mode */
	for (int mode = SYMB_IMAGE_ELF; mode <= SYMB_IMAGE_WHOLE; mode++) {
		assert_int_equal(symb_image__read(fd, mode, true, &img), 0);
		assert_true(img.hashed);
		assert_int_equal(img.size, 3);
		assert_int_equal(img.read, 3);
		assert_memory_equal(img.data, "abc", 3);
		expect_hex(&img.id,
			   "3eec19db3bca86f4e7f87e6580cf90efc02d5330946fde2040701710cf3f6614");
		symb_image__free(&img);
		assert_null(img.data);
	}
	/* without hash: the same bytes, no identity */
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, false, &img), 0);
	assert_false(img.hashed);
	assert_memory_equal(img.data, "abc", 3);
	symb_image__free(&img);
	close(fd);
	write_file(path, "", 0);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), 0);
	expect_hex(&img.id, "8f51c81b789fc2e842b6b376d0a880a6f42d94b9fa182a19fb7bc513dffb49db");
	symb_image__free(&img);
	close(fd);
	unlink(path);
}

/*
 * The image holds the file's bytes in the selected ranges and zeros
 * elsewhere, and its identity is the hash of exactly that.
 */
static void check_image(const char *path, bool sparse)
{
	struct symb_image_range *r;
	struct symb_image img;
	struct symb_ident id;
	struct file f;
	uint64_t total = 0, pos = 0;
	int n;

	file_open(&f, path);
	n = symb_image__select(f.map, f.size, &r);
	assert_true(n > 0);
	assert_int_equal(symb_image__read(f.fd, SYMB_IMAGE_ELF, true, &img), 0);
	assert_int_equal(img.size, f.size);
	for (int i = 0; i < n; i++) {
		/* sorted, disjoint, not touching, inside the file */
		assert_true(i == 0 || r[i].off > r[i - 1].off + r[i - 1].len);
		assert_true(r[i].len > 0 && r[i].off + r[i].len <= f.size);
		for (; pos < r[i].off; pos++)
			if (img.data[pos])
				fail_msg("%s: byte %#lx outside the ranges is not zero", path,
					 (unsigned long)pos);
		assert_memory_equal(img.data + r[i].off, f.map + r[i].off, r[i].len);
		pos = r[i].off + r[i].len;
		total += r[i].len;
	}
	for (; pos < f.size; pos++)
		if (img.data[pos])
			fail_msg("%s: byte %#lx after the ranges is not zero", path,
				 (unsigned long)pos);
	assert_int_equal(img.read, total);
	assert_int_equal(symb_image__hash(f.map, f.size, r, (size_t)n, &id), 0);
	assert_memory_equal(id.b, img.id.b, sizeof(id.b));
	printf("  %s: %d ranges, %lu of %zu bytes\n", path, n, (unsigned long)total, f.size);
	if (sparse)
		assert_true(total < f.size / 2);
	symb_image__free(&img);
	free(r);
	file_close(&f);
}

static void test_image_is_the_selection(void **state)
{
	(void)state;
	check_image(self_path(), false);
	check_image(libc_path(), true);
}

static void expect_same_blob(int (*enc)(const void *, uint8_t **, size_t *), const void *a,
			     const void *b, const char *what)
{
	uint8_t *x, *y;
	size_t nx, ny;

	assert_int_equal(enc(a, &x, &nx), 0);
	assert_int_equal(enc(b, &y, &ny), 0);
	if (nx != ny || memcmp(x, y, nx))
		fail_msg("%s built from the image differs from the file's", what);
	free(x);
	free(y);
}

static int enc_elf(const void *e, uint8_t **blob, size_t *len)
{
	return symb_elf__encode(e, blob, len);
}

static int enc_deltas(const void *d, uint8_t **blob, size_t *len)
{
	return symb_deltas__encode(d, blob, len);
}

static __attribute__((noinline)) int marker_one(int x)
{
	return x * 3 + 1;
}

static __attribute__((noinline)) int marker_two(int x)
{
	return marker_one(x) ^ 5;
}

static int first_object(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uintptr_t *)data = info->dlpi_addr;
	return 1;
}

/* Same DWARF frames for this program's own functions through either handle. */
static void check_dwarf(Elf *from_image, Elf *from_file)
{
	int (*volatile fns[])(int) = {marker_one, marker_two};
	struct symb_srcline a[8], b[8];
	struct symb_dwarf *da, *db;
	uintptr_t bias = 0;
	int na, nb, found = 0;

	dl_iterate_phdr(first_object, &bias);
	da = symb_dwarf__open(from_image, NULL);
	db = symb_dwarf__open(from_file, NULL);
	assert_non_null(da);
	assert_non_null(db);
	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		uint64_t vaddr = (uintptr_t)fns[i] - bias;

		na = symb_dwarf__lookup(da, vaddr, a, 8);
		nb = symb_dwarf__lookup(db, vaddr, b, 8);
		assert_int_equal(na, nb);
		for (int k = 0; k < na; k++) {
			assert_string_equal(a[k].function, b[k].function);
			assert_int_equal(a[k].line, b[k].line);
		}
		found += na > 0;
	}
	assert_int_equal(found, 2); /* the test is built with -g */
	symb_dwarf__free(da);
	symb_dwarf__free(db);
}

static void check_tables(const char *path, bool dwarf)
{
	struct symb_deltas da = {0}, db = {0};
	struct symb_elf *ea, *eb;
	struct symb_image img;
	Elf *mem, *rd;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), 0);
	mem = elf_memory((char *)img.data, img.size);
	rd = elf_begin(fd, ELF_C_READ, NULL);
	assert_non_null(mem);
	assert_non_null(rd);
	ea = symb_elf__open_elf(mem);
	eb = symb_elf__open_elf(rd);
	assert_non_null(ea);
	assert_non_null(eb);
	assert_true(symb_elf__nsyms(ea) > 100);
	expect_same_blob(enc_elf, ea, eb, "the symbol table");
	assert_int_equal(symb_cfi__build(mem, NULL, &da, NULL), 0);
	assert_int_equal(symb_cfi__build(rd, NULL, &db, NULL), 0);
	assert_true(da.n > 100);
	expect_same_blob(enc_deltas, &da, &db, "the stack-delta table");
	if (dwarf)
		check_dwarf(mem, rd);
	symb_deltas__free(&da);
	symb_deltas__free(&db);
	symb_elf__free(ea);
	symb_elf__free(eb);
	elf_end(mem);
	elf_end(rd);
	symb_image__free(&img);
	close(fd);
}

static void test_tables_from_image(void **state)
{
	(void)state;
	check_tables(self_path(), true);
	check_tables(libc_path(), false);
}

/* The file offset of the first byte of a section, by name. */
static uint64_t section_offset(const char *path, const char *want)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	Elf_Scn *scn = NULL;
	uint64_t off = 0;
	size_t shstrndx;
	GElf_Shdr sh;

	assert_non_null(e);
	assert_int_equal(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((scn = elf_nextscn(e, scn))) {
		const char *name =
			gelf_getshdr(scn, &sh) ? elf_strptr(e, shstrndx, sh.sh_name) : NULL;

		if (name && !strcmp(name, want) && sh.sh_size > 16)
			off = sh.sh_offset + sh.sh_size / 2;
	}
	elf_end(e);
	close(fd);
	if (!off)
		fail_msg("%s has no %s", path, want);
	return off;
}

static struct symb_ident ident_of_file(const char *path)
{
	struct symb_image img;
	struct symb_ident id;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), 0);
	id = img.id;
	symb_image__free(&img);
	close(fd);
	return id;
}

/*
 * A copy of this program with one byte changed: in .text (which no table
 * reads) the identity stays, in what the tables read it changes.
 */
static void test_identity_follows_tables(void **state)
{
	static const struct {
		const char *section;
		bool changes;
	} cases[] = {
		{".text", false},    {".rodata", false},    {".symtab", true}, {".strtab", true},
		{".eh_frame", true}, {".debug_info", true}, {".dynstr", true},
	};
	const char *src = self_path(), *copy = tmp_path("copy");
	struct symb_ident base, id;
	struct file f;

	(void)state;
	file_open(&f, src);
	write_file(copy, f.map, f.size);
	base = ident_of_file(copy);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t at = section_offset(src, cases[i].section);
		uint8_t *bytes = malloc(f.size);

		assert_non_null(bytes);
		memcpy(bytes, f.map, f.size);
		bytes[at] ^= 0x20;
		write_file(copy, bytes, f.size);
		free(bytes);
		id = ident_of_file(copy);
		if ((memcmp(id.b, base.b, sizeof(id.b)) != 0) != cases[i].changes)
			fail_msg("a byte changed in %s %s the identity", cases[i].section,
				 cases[i].changes ? "does not change" : "changes");
	}
	file_close(&f);
	unlink(copy);
}

/*
 * The memo's rule: a unique mount id, the same key after the read as
 * before, and a ctime older than the read's start by more than
 * SYMB_MEMO_SETTLE_NS.
 */
static void test_memo_rule(void **state)
{
	const int64_t t0 = 1700000100000000000ll;
	struct symb_file_key k = {.mnt = 0x100000456ull,
				  .dev = 0x801,
				  .ino = 12,
				  .size = 4096,
				  .mtime_ns = t0 - 5000000000ll,
				  .ctime_ns = t0 - (int64_t)SYMB_MEMO_SETTLE_NS - 1},
			     after;

	(void)state;
	after = k;
	assert_true(symb_file_key__settled(&k, &after, t0));
	/* a ctime within the settling time: a write or a new inode may share it */
	k.ctime_ns = t0 - (int64_t)SYMB_MEMO_SETTLE_NS;
	after = k;
	assert_false(symb_file_key__settled(&k, &after, t0));
	k.ctime_ns = t0 + 1000;
	after = k;
	assert_false(symb_file_key__settled(&k, &after, t0));
	k.ctime_ns = t0 - (int64_t)SYMB_MEMO_SETTLE_NS - 1;
	/* anything that changed during the read */
	for (int field = 0; field < 6; field++) {
		after = k;
		switch (field) {
		case 0:
			after.mnt++;
			break;
		case 1:
			after.dev++;
			break;
		case 2:
			after.ino++;
			break;
		case 3:
			after.size++;
			break;
		case 4:
			after.mtime_ns++;
			break;
		default:
			after.ctime_ns++;
			break;
		}
		assert_false(symb_file_key__settled(&k, &after, t0));
	}
	/* no unique mount id (kernels before 6.8): never */
	k.mnt = 0;
	after = k;
	assert_false(symb_file_key__settled(&k, &after, t0));
}

/*
 * Keys of real files: libc's ctime settled long ago, a file just written
 * has not; files on two mounts have two mount ids. A pipe has no key.
 */
static void test_file_keys(void **state)
{
	const char *fresh = tmp_path("fresh"), *shm = "/dev/shm/lp-ident-test";
	struct symb_file_key a, b;
	struct symb_image img;
	int fd, fd2, usable, p[2];
	struct stat st;

	(void)state;
	fd = open(libc_path(), O_RDONLY | O_CLOEXEC);
	usable = symb_file_key__get(fd, &a);
	assert_true(usable == 0 || usable == 1);
	assert_int_equal(fstat(fd, &st), 0);
	assert_int_equal(a.ino, st.st_ino);
	assert_int_equal(a.dev, st.st_dev);
	assert_int_equal(a.size, st.st_size);
	assert_int_equal(a.ctime_ns, st.st_ctim.tv_sec * 1000000000ll + st.st_ctim.tv_nsec);
	assert_int_equal(a.mnt != 0, usable);
	printf("  unique mount ids: %s\n", usable ? "yes" : "no (Linux < 6.8): no memo");
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), 0);
	assert_int_equal(img.memo_ok, usable);
	symb_image__free(&img);
	write_file(fresh, "\177ELF", 4);
	fd2 = open(fresh, O_RDONLY | O_CLOEXEC);
	assert_int_equal(symb_image__read(fd2, SYMB_IMAGE_ELF, true, &img), 0);
	assert_false(img.memo_ok);
	symb_image__free(&img);
	close(fd2);
	write_file(shm, "x", 1);
	fd2 = open(shm, O_RDONLY | O_CLOEXEC);
	assert_int_equal(symb_file_key__get(fd2, &b), usable);
	if (usable && a.dev != b.dev)
		assert_true(a.mnt != b.mnt);
	close(fd2);
	close(fd);
	unlink(shm);
	unlink(fresh);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(symb_file_key__get(p[0], &a), -EINVAL);
	assert_int_equal(symb_image__read(p[0], SYMB_IMAGE_WHOLE, true, &img), -EINVAL);
	close(p[0]);
	close(p[1]);
}

/* Sparse files: more to read than SYMB_IMAGE_MAX_BYTES, or larger than SYMB_IMAGE_MAX_FILE. */
static void test_limits(void **state)
{
	const char *path = tmp_path("big");
	struct symb_image img;
	int fd;

	(void)state;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)SYMB_IMAGE_MAX_BYTES + 4096), 0);
	/* not ELF: the whole file would be read */
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), -EFBIG);
	assert_null(img.data);
	assert_int_equal(symb_image__read(fd, SYMB_IMAGE_WHOLE, true, &img), -EFBIG);
	if (ftruncate(fd, (off_t)SYMB_IMAGE_MAX_FILE + 1) == 0)
		assert_int_equal(symb_image__read(fd, SYMB_IMAGE_ELF, true, &img), -EFBIG);
	close(fd);
	unlink(path);
}

/* ELF headers that point outside the file: the whole file is the selection. */
static void test_select_malformed(void **state)
{
	uint8_t buf[4096];
	Elf64_Ehdr *eh = (Elf64_Ehdr *)buf;
	struct symb_image_range *r;
	int n;

	(void)state;
	memset(buf, 0, sizeof(buf));
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_shentsize = sizeof(Elf64_Shdr);
	eh->e_phentsize = sizeof(Elf64_Phdr);
	/* no section headers */
	n = symb_image__select(buf, sizeof(buf), &r);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].off, 0);
	assert_int_equal(r[0].len, sizeof(buf));
	free(r);
	/* a section table past the end */
	eh->e_shoff = sizeof(buf) - 64;
	eh->e_shnum = 2;
	n = symb_image__select(buf, sizeof(buf), &r);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].len, sizeof(buf));
	free(r);
	/* in the file, with a section whose range runs past the end: cut at the end */
	eh->e_shoff = 1024;
	eh->e_shnum = 2;
	((Elf64_Shdr *)(buf + 1024))[1] =
		(Elf64_Shdr){.sh_type = SHT_PROGBITS, .sh_offset = 3000, .sh_size = 1u << 30};
	n = symb_image__select(buf, sizeof(buf), &r);
	assert_int_equal(n, 3);
	assert_int_equal(r[0].off, 0);
	assert_int_equal(r[0].len, sizeof(Elf64_Ehdr));
	assert_int_equal(r[1].off, 1024);
	assert_int_equal(r[1].len, 2 * sizeof(Elf64_Shdr));
	assert_int_equal(r[2].off, 3000);
	assert_int_equal(r[2].len, sizeof(buf) - 3000);
	free(r);
	/* an allocated section that no table reads is left out */
	((Elf64_Shdr *)(buf + 1024))[1].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
	n = symb_image__select(buf, sizeof(buf), &r);
	assert_int_equal(n, 2);
	free(r);
	/* too short to be ELF */
	n = symb_image__select(buf, 10, &r);
	assert_int_equal(n, 1);
	assert_int_equal(r[0].len, 10);
	free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_answers),
		cmocka_unit_test(test_image_is_the_selection),
		cmocka_unit_test(test_tables_from_image),
		cmocka_unit_test(test_identity_follows_tables),
		cmocka_unit_test(test_memo_rule),
		cmocka_unit_test(test_file_keys),
		cmocka_unit_test(test_limits),
		cmocka_unit_test(test_select_malformed),
	};

	if (symb_ident__init()) {
		fprintf(stderr, "no SHA-256 in libcrypto\n");
		return 1;
	}
	return cmocka_run_group_tests(tests, NULL, NULL);
}
