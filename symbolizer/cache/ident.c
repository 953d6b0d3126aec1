// SPDX-License-Identifier: MIT
/*
 * Verified content identity (see ident.h for the contract).
 *
 * Why a private copy, and why sparse. Hashing a file and then parsing it
 * again proves nothing: the file can change between the two reads, and a
 * FUSE file can return other bytes to each read. So the parsers read the
 * very bytes that were hashed: an anonymous mapping of the file's size into
 * which the selected ranges are pread once, handed to libelf with
 * elf_memory (which reads the buffer in place, copying only what it
 * converts or inflates). libelf's ELF_C_READ would also read into private
 * buffers, but section by section as parsers ask, so the bytes behind an
 * identity would depend on which parser ran; here the identity is fixed
 * before any parser runs.
 *
 * Only what the tables are built from is read: for libLLVM-15 (117 MB),
 * 10 MB of headers, .dynsym, .dynstr, .eh_frame and .eh_frame_hdr, about
 * 11 ms to read and hash instead of some 80 ms for every byte. The rest of
 * the mapping is never touched, so it costs no memory (reads of it see the
 * shared zero page). Memory: the bytes read, resident while the image lives
 * (during a load; for DWARF, while libdw uses it, where libdw would hold
 * copies of the debug sections anyway).
 *
 * Soundness does not depend on the selection being right: bytes outside
 * the ranges are zero, and the ranges are part of what is hashed, so
 * whatever a parser reads is determined by the identity's input. A range
 * the selection missed makes a table poorer (a test compares the tables
 * built from images with those built from the files), never another
 * file's.
 *
 * The selection parses the ELF headers from the image itself, after reading
 * them into it, so a file that changes while it is read cannot steer it
 * past what the hash covers.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "ident.h"
#include "lowprof/clock.h"

#ifndef STATX_MNT_ID_UNIQUE
#define STATX_MNT_ID_UNIQUE 0x00004000U /* Linux 6.8 */
#endif

/* Each pread asks for at most this much (a signal cannot waste more). */
#define IMG_CHUNK (8u << 20)
/* More sections or program headers than this: the file is read whole. */
#define IMG_MAX_HEADERS 65536
#define IMG_HUGE	(2ull << 20)

static const char img_tag[16] = "lowprof image 1\n";

/* ---- SHA-256 ------------------------------------------------------------ */

static pthread_once_t ident_once = PTHREAD_ONCE_INIT, ident_md_once = PTHREAD_ONCE_INIT;
static bool ident_config;
static EVP_MD *ident_md;

static void ident_load(void)
{
	ident_config = OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) == 1;
}

int symb_ident__init(void)
{
	pthread_once(&ident_once, ident_load);
	return ident_config ? 0 : -ENOSYS;
}

/*
 * Fetching the digest builds libcrypto's tables of its providers'
 * algorithms: ~0.4 ms, a tenth of a small run's start, which a run that
 * hashes nothing (a warm replay: every table from the cache) need not pay.
 * The providers were loaded with the configuration (symb_ident__init);
 * this only allocates.
 */
static void ident_fetch(void)
{
	ident_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *ident_sha256(void)
{
	if (symb_ident__init())
		return NULL;
	pthread_once(&ident_md_once, ident_fetch);
	return ident_md;
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/*
 * The identity's input: the tag, the file's size, the number of ranges,
 * each range's offset and length (little-endian u64s), then the ranges'
 * bytes in order. Ranges are sorted and disjoint, so one input is one image.
 */
int symb_image__hash(const uint8_t *data, uint64_t size, const struct symb_image_range *r, size_t n,
		     struct symb_ident *id)
{
	uint8_t hdr[8 * 2];
	const EVP_MD *md = ident_sha256();
	unsigned int len = 0;
	EVP_MD_CTX *ctx;
	int ok;

	if (!md)
		return -ENOSYS;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return -ENOMEM;
	put64(hdr, size);
	put64(hdr + 8, n);
	ok = EVP_DigestInit_ex(ctx, md, NULL) && EVP_DigestUpdate(ctx, img_tag, sizeof(img_tag)) &&
	     EVP_DigestUpdate(ctx, hdr, sizeof(hdr));
	for (size_t i = 0; ok && i < n; i++) {
		put64(hdr, r[i].off);
		put64(hdr + 8, r[i].len);
		ok = EVP_DigestUpdate(ctx, hdr, sizeof(hdr));
	}
	for (size_t i = 0; ok && i < n; i++)
		ok = EVP_DigestUpdate(ctx, data + r[i].off, r[i].len);
	ok = ok && EVP_DigestFinal_ex(ctx, id->b, &len) && len == SYMB_IDENT_LEN;
	EVP_MD_CTX_free(ctx);
	return ok ? 0 : -ENOSYS;
}

char *symb_ident__hex(const struct symb_ident *id, char out[SYMB_IDENT_HEX])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < SYMB_IDENT_LEN; i++) {
		out[2 * i] = digits[id->b[i] >> 4];
		out[2 * i + 1] = digits[id->b[i] & 15];
	}
	out[2 * SYMB_IDENT_LEN] = '\0';
	return out;
}

/* ---- the memo key ----------------------------------------------------- */

static int file_statx(int fd, struct statx *sx)
{
	if (statx(fd, "", AT_EMPTY_PATH | AT_STATX_SYNC_AS_STAT,
		  STATX_BASIC_STATS | STATX_MNT_ID_UNIQUE, sx))
		return -errno;
	if (!S_ISREG(sx->stx_mode))
		return -EINVAL;
	return 0;
}

/*
 * Why the memo needs the unique mount id. Device numbers are not enough:
 * anonymous ones (FUSE, tmpfs, overlayfs) and loop devices are given again
 * to later mounts, and on FUSE (or a filesystem image someone else made)
 * every stat value is whatever its maker chose. A file there could claim
 * the key a victim's file will have on a later mount of the same device
 * number. A mount id that is never reused confines an entry to files of
 * the mount it was computed on, which all take their bytes and their stat
 * values from the same source. Older kernels give no such id: no memo
 * (fail closed; the file is then hashed at each load).
 */
static int key_of(const struct statx *sx, struct symb_file_key *k)
{
	k->mnt = sx->stx_mnt_id;
	k->dev = makedev(sx->stx_dev_major, sx->stx_dev_minor);
	k->ino = sx->stx_ino;
	k->size = sx->stx_size;
	k->mtime_ns = (int64_t)sx->stx_mtime.tv_sec * 1000000000 + sx->stx_mtime.tv_nsec;
	k->ctime_ns = (int64_t)sx->stx_ctime.tv_sec * 1000000000 + sx->stx_ctime.tv_nsec;
	if (!(sx->stx_mask & STATX_MNT_ID_UNIQUE)) {
		k->mnt = 0;
		return 0;
	}
	return 1;
}

int symb_file_key__get(int fd, struct symb_file_key *k)
{
	struct statx sx;
	int err;

	memset(k, 0, sizeof(*k));
	err = file_statx(fd, &sx);
	return err ? err : key_of(&sx, k);
}

/* ---- reading ranges ---------------------------------------------------- */

struct img_rd {
	int fd;	       /* -1: data already holds the file (symb_image__select) */
	uint8_t *data; /* size bytes */
	uint64_t size;
	struct symb_image_range *r;
	size_t n, cap;
	uint64_t wanted; /* bytes asked for, overlaps counted again */
};

static int rd_fill(int fd, uint8_t *dst, uint64_t off, uint64_t len)
{
	while (len) {
		ssize_t got = pread(fd, dst, len > IMG_CHUNK ? IMG_CHUNK : len, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			return -ESTALE; /* shorter than when the read began */
		dst += got;
		off += (uint64_t)got;
		len -= (uint64_t)got;
	}
	return 0;
}

/*
 * Large ranges in huge pages where they cover them whole: a third of the
 * time to read, most of it page faults otherwise.
 */
static void rd_advise(struct img_rd *rd, uint64_t off, uint64_t len)
{
	uintptr_t start = (uintptr_t)rd->data + off;
	uintptr_t lo = (start + IMG_HUGE - 1) & ~(uintptr_t)(IMG_HUGE - 1);
	uintptr_t hi = (start + len) & ~(uintptr_t)(IMG_HUGE - 1);

	if (hi > lo)
		madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/*
 * Selects [off, off + len), cut at the file's end, and reads it into the
 * image now unless a range read before holds it. 0 or a negative errno.
 */
static int rd_want(struct img_rd *rd, uint64_t off, uint64_t len)
{
	if (off >= rd->size || !len)
		return 0;
	if (len > rd->size - off)
		len = rd->size - off;
	for (size_t i = 0; i < rd->n; i++)
		if (off >= rd->r[i].off && off + len <= rd->r[i].off + rd->r[i].len)
			return 0;
	rd->wanted += len;
	if (rd->wanted > SYMB_IMAGE_MAX_BYTES)
		return -EFBIG;
	if (rd->n == rd->cap) {
		size_t cap = rd->cap ? 2 * rd->cap : 64;
		void *p = realloc(rd->r, cap * sizeof(*rd->r));

		if (!p)
			return -ENOMEM;
		rd->r = p;
		rd->cap = cap;
	}
	rd->r[rd->n++] = (struct symb_image_range){off, len};
	if (rd->fd < 0)
		return 0;
	rd_advise(rd, off, len);
	return rd_fill(rd->fd, rd->data + off, off, len);
}

static int range_cmp(const void *a, const void *b)
{
	const struct symb_image_range *x = a, *y = b;

	if (x->off != y->off)
		return x->off < y->off ? -1 : 1;
	return (x->len > y->len) - (x->len < y->len);
}

/* Sorts and merges overlapping or touching ranges; returns their total length. */
static uint64_t rd_merge(struct img_rd *rd)
{
	uint64_t total = 0;
	size_t m = 0;

	if (!rd->n)
		return 0; /* an empty file */
	qsort(rd->r, rd->n, sizeof(*rd->r), range_cmp);
	for (size_t i = 0; i < rd->n; i++) {
		struct symb_image_range *last = m ? &rd->r[m - 1] : NULL;

		if (last && rd->r[i].off <= last->off + last->len) {
			uint64_t end = rd->r[i].off + rd->r[i].len;

			if (end > last->off + last->len)
				last->len = end - last->off;
			continue;
		}
		rd->r[m++] = rd->r[i];
	}
	rd->n = m;
	for (size_t i = 0; i < m; i++)
		total += rd->r[i].len;
	return total;
}

/* ---- what the tables read of an ELF file ------------------------------- */

struct elf_hdr {
	bool is64, msb;
	uint64_t phoff, shoff;
	uint64_t phnum, shnum, shstrndx;
	unsigned int phent, shent;
};

static uint64_t get_n(const uint8_t *p, unsigned int width, bool msb)
{
	uint64_t v = 0;

	for (unsigned int i = 0; i < width; i++)
		v |= (uint64_t)p[msb ? width - 1 - i : i] << (8 * i);
	return v;
}

/* A field of a structure at off in the image, which the caller selected. */
static uint64_t field(const struct img_rd *rd, const struct elf_hdr *h, uint64_t off,
		      unsigned int at32, unsigned int at64, unsigned int w32, unsigned int w64)
{
	return get_n(rd->data + off + (h->is64 ? at64 : at32), h->is64 ? w64 : w32, h->msb);
}

/* Section i's header fields. */
struct elf_sec {
	uint64_t name, type, flags, off, size, link, info;
};

static void elf_sec_at(const struct img_rd *rd, const struct elf_hdr *h, uint64_t i,
		       struct elf_sec *s)
{
	uint64_t o = h->shoff + i * h->shent;

	s->name = field(rd, h, o, 0, 0, 4, 4);
	s->type = field(rd, h, o, 4, 4, 4, 4);
	s->flags = field(rd, h, o, 8, 8, 4, 8);
	s->off = field(rd, h, o, 16, 24, 4, 8);
	s->size = field(rd, h, o, 20, 32, 4, 8);
	s->link = field(rd, h, o, 24, 40, 4, 4);
	s->info = field(rd, h, o, 28, 44, 4, 4);
}

/*
 * Reads and parses the ELF header and the section header table. Returns 1
 * when the file is an ELF file with sections (*h set), 0 when it is not
 * (read it whole), or a negative errno.
 */
static int elf_headers(struct img_rd *rd, struct elf_hdr *h)
{
	const uint8_t *e = rd->data;
	uint64_t ehsize;
	struct elf_sec s0;
	int err;

	err = rd_want(rd, 0, 64);
	if (err || rd->size < EI_NIDENT || memcmp(e, ELFMAG, SELFMAG))
		return err;
	if ((e[EI_CLASS] != ELFCLASS32 && e[EI_CLASS] != ELFCLASS64) ||
	    (e[EI_DATA] != ELFDATA2LSB && e[EI_DATA] != ELFDATA2MSB))
		return 0;
	h->is64 = e[EI_CLASS] == ELFCLASS64;
	h->msb = e[EI_DATA] == ELFDATA2MSB;
	ehsize = h->is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
	if (rd->size < ehsize)
		return 0;
	h->phoff = field(rd, h, 0, 28, 32, 4, 8);
	h->shoff = field(rd, h, 0, 32, 40, 4, 8);
	h->phent = (unsigned int)field(rd, h, 0, 42, 54, 2, 2);
	h->phnum = field(rd, h, 0, 44, 56, 2, 2);
	h->shent = (unsigned int)field(rd, h, 0, 46, 58, 2, 2);
	h->shnum = field(rd, h, 0, 48, 60, 2, 2);
	h->shstrndx = field(rd, h, 0, 50, 62, 2, 2);
	/* no section headers (they are what the selection goes by), or odd ones */
	if (!h->shoff || h->shent != (h->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)) ||
	    h->shoff > rd->size || rd->size - h->shoff < h->shent)
		return 0;
	err = rd_want(rd, h->shoff, h->shent);
	if (err)
		return err;
	/* more than 0xff00 sections, or program headers: counts in section 0 */
	elf_sec_at(rd, h, 0, &s0);
	if (h->shnum == 0)
		h->shnum = s0.size;
	if (h->shstrndx == SHN_XINDEX)
		h->shstrndx = s0.link;
	if (h->phnum == PN_XNUM)
		h->phnum = s0.info;
	if (h->shnum == 0 || h->shnum > IMG_MAX_HEADERS || h->phnum > IMG_MAX_HEADERS ||
	    (rd->size - h->shoff) / h->shent < h->shnum)
		return 0;
	err = rd_want(rd, h->shoff, h->shnum * h->shent);
	return err ? err : 1;
}

/* The notes (build-id) and the segment .eh_frame_hdr is found by without sections. */
static int elf_segments(struct img_rd *rd, const struct elf_hdr *h)
{
	uint64_t tab;
	int err;

	if (!h->phnum)
		return 0;
	if (h->phent != (h->is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)) ||
	    h->phoff > rd->size || (rd->size - h->phoff) / h->phent < h->phnum)
		return 0; /* libelf refuses these program headers too */
	tab = h->phnum * h->phent;
	err = rd_want(rd, h->phoff, tab);
	for (uint64_t i = 0; !err && i < h->phnum; i++) {
		uint64_t o = h->phoff + i * h->phent, type = field(rd, h, o, 0, 0, 4, 4);

		if (type == PT_NOTE || type == PT_GNU_EH_FRAME)
			err = rd_want(rd, field(rd, h, o, 4, 8, 4, 8),
				      field(rd, h, o, 16, 32, 4, 8));
	}
	return err;
}

/* Whether section s is named name: within the section name table, NUL-terminated. */
static bool sec_named(const struct img_rd *rd, const struct elf_sec *names, const struct elf_sec *s,
		      const char *name)
{
	size_t len = strlen(name) + 1;

	if (!names || names->off >= rd->size || s->name >= names->size ||
	    names->size - s->name < len || rd->size - names->off < s->name + len)
		return false;
	return memcmp(rd->data + names->off + s->name, name, len) == 0;
}

/*
 * Every section not loaded at run time (symbols, DWARF, .debug_frame,
 * .gnu_debuglink: what a stripped copy would lose), and the loaded ones the
 * tables read: notes, symbol tables and their strings, .eh_frame and
 * .eh_frame_hdr.
 */
static bool elf_sec_used(const struct img_rd *rd, const struct elf_sec *names,
			 const struct elf_sec *s)
{
	if (s->type == SHT_NULL || s->type == SHT_NOBITS)
		return false;
	if (!(s->flags & SHF_ALLOC) || s->type == SHT_NOTE || s->type == SHT_DYNSYM ||
	    s->type == SHT_SYMTAB)
		return true;
	return sec_named(rd, names, s, ".eh_frame") || sec_named(rd, names, s, ".eh_frame_hdr");
}

static int elf_sections(struct img_rd *rd, const struct elf_hdr *h)
{
	struct elf_sec names, s, link;
	bool have_names = false;
	int err = 0;

	if (h->shstrndx < h->shnum) {
		elf_sec_at(rd, h, h->shstrndx, &names);
		if (names.type != SHT_NOBITS) {
			err = rd_want(rd, names.off, names.size);
			have_names = true;
		}
	}
	for (uint64_t i = 1; !err && i < h->shnum; i++) {
		elf_sec_at(rd, h, i, &s);
		if (!elf_sec_used(rd, have_names ? &names : NULL, &s))
			continue;
		err = rd_want(rd, s.off, s.size);
		if (err || (s.type != SHT_DYNSYM && s.type != SHT_SYMTAB) || !s.link ||
		    s.link >= h->shnum)
			continue;
		elf_sec_at(rd, h, s.link, &link);
		if (link.type != SHT_NOBITS)
			err = rd_want(rd, link.off, link.size);
	}
	return err;
}

/* The ranges of SYMB_IMAGE_ELF; the whole file when it is not such an ELF file. */
static int rd_select_elf(struct img_rd *rd)
{
	struct elf_hdr h;
	int err;

	err = elf_headers(rd, &h);
	if (err == 1)
		err = elf_segments(rd, &h);
	else if (err == 0)
		return rd_want(rd, 0, rd->size);
	if (!err)
		err = elf_sections(rd, &h);
	return err;
}

int symb_image__select(const uint8_t *file, size_t size, struct symb_image_range **out)
{
	struct img_rd rd = {.fd = -1, .data = (uint8_t *)file, .size = size};
	int err;

	*out = NULL;
	err = rd_select_elf(&rd);
	if (err) {
		free(rd.r);
		return err;
	}
	rd_merge(&rd);
	*out = rd.r;
	return (int)rd.n;
}

/* ---- the image --------------------------------------------------------- */

static bool same_version(const struct symb_file_key *a, const struct symb_file_key *b)
{
	return a->mnt == b->mnt && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/*
 * The memo may remember the file when, besides a unique mount id (mnt is
 * then not 0): its key did not change while it was read (no write finished
 * during the read), and its ctime is older than the read's start by more
 * than any timestamp granularity. A write after the read, or a new file
 * given this inode number later, then gets a ctime after the read's start,
 * so a later file with this key is this version (git's "racily clean"
 * rule, for ctime).
 */
bool symb_file_key__settled(const struct symb_file_key *before, const struct symb_file_key *after,
			    int64_t read_start_ns)
{
	return before->mnt && same_version(before, after) &&
	       before->ctime_ns < read_start_ns - (int64_t)SYMB_MEMO_SETTLE_NS;
}

static void image_memo_ok(struct symb_image *img, int fd, int64_t t0)
{
	struct symb_file_key after;

	img->memo_ok = symb_file_key__get(fd, &after) == 1 &&
		       symb_file_key__settled(&img->key, &after, t0);
}

static int image_hash(struct img_rd *rd, struct symb_image *img)
{
	int err = symb_image__hash(rd->data, rd->size, rd->r, rd->n, &img->id);

	img->hashed = !err;
	return err;
}

int symb_image__read(int fd, enum symb_image_mode mode, bool hash, struct symb_image *img)
{
	struct img_rd rd = {.fd = fd};
	struct statx sx;
	int64_t t0 = (int64_t)lp_clock_ns(CLOCK_REALTIME);
	int err;

	memset(img, 0, sizeof(*img));
	if (hash && !ident_sha256())
		return -ENOSYS;
	err = file_statx(fd, &sx);
	if (err)
		return err;
	key_of(&sx, &img->key);
	rd.size = sx.stx_size;
	if (rd.size > SYMB_IMAGE_MAX_FILE ||
	    (mode == SYMB_IMAGE_WHOLE && rd.size > SYMB_IMAGE_MAX_BYTES))
		return -EFBIG;
	/* MAP_NORESERVE: only the ranges read are ever touched */
	rd.data = mmap(NULL, rd.size ? rd.size : 1, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rd.data == MAP_FAILED)
		return -ENOMEM;
	err = mode == SYMB_IMAGE_WHOLE ? rd_want(&rd, 0, rd.size) : rd_select_elf(&rd);
	if (!err) {
		img->read = rd_merge(&rd);
		if (hash)
			err = image_hash(&rd, img);
	}
	free(rd.r);
	if (err) {
		munmap(rd.data, rd.size ? rd.size : 1);
		memset(img, 0, sizeof(*img));
		return err;
	}
	img->data = rd.data;
	img->size = rd.size;
	image_memo_ok(img, fd, t0);
	return 0;
}

void symb_image__free(struct symb_image *img)
{
	if (img && img->data)
		munmap(img->data, img->size ? img->size : 1);
	if (img)
		memset(img, 0, sizeof(*img));
}
