/* SPDX-License-Identifier: MIT */
/*
 * Verified content identity of the files the symbol cache describes.
 *
 * What it is: a reader that copies the part of a file the symbolizer's
 * tables are built from into private memory, once, and hashes exactly that
 * copy (SHA-256, OpenSSL's libcrypto); and the key under which the kernel
 * says a file is still the version that was hashed (struct symb_file_key),
 * for the cache's memo. What it is not: the cache (cache.h), or any parser
 * of what the copy holds (elfsym.h, cfi.h, debuginfo.h read it through libelf's
 * elf_memory).
 *
 * The copy ("image") is the file's size of anonymous memory in which only
 * the selected ranges were read; every other byte is zero. The identity is
 * SHA-256 over the file's size, the ranges and their bytes, so the image is
 * a function of what was hashed: whatever a parser reads from it, the
 * tables it builds are a function of the identity's input, even when the
 * file changes under the reader or a FUSE file returns other bytes to each
 * read. Stored tables are keyed by identities computed here, never by a
 * build-id the file claims.
 *
 * SYMB_IMAGE_ELF selects what the tables use (see ident.c): the headers,
 * every section that is not loaded (symbols, DWARF, .gnu_debuglink), notes,
 * .dynsym and its strings, .eh_frame and .eh_frame_hdr. A file that is not
 * such an ELF file is read whole. SYMB_IMAGE_WHOLE reads every byte (debug
 * files, whose CRC-32 is over the whole file).
 */
#ifndef LOWPROF_SYMB_IDENT_H
#define LOWPROF_SYMB_IDENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SYMB_IDENT_LEN 32			/* SHA-256 */
#define SYMB_IDENT_HEX (2 * SYMB_IDENT_LEN + 1) /* with the NUL */
/*
 * Bytes an image may read (and hold resident while it lives): a larger
 * selection has no identity, and its tables are neither looked up nor
 * stored. The file itself may be larger (the rest is never touched).
 */
#define SYMB_IMAGE_MAX_BYTES (1ull << 30)
#define SYMB_IMAGE_MAX_FILE  (1ull << 40)
/*
 * A file is remembered in the memo only once its ctime is this much older
 * than the read's start (see symb_image.memo_ok): longer than any
 * filesystem's timestamp granularity (FAT: 2 s).
 */
#define SYMB_MEMO_SETTLE_NS (3ull * 1000000000ull)

struct symb_ident {
	uint8_t b[SYMB_IDENT_LEN];
};

/*
 * What the kernel says identifies the current version of an open file:
 * the mount (STATX_MNT_ID_UNIQUE, never reused while the system runs;
 * the cache adds the boot), device, inode, size, mtime and ctime.
 */
struct symb_file_key {
	uint64_t mnt, dev, ino, size;
	int64_t mtime_ns, ctime_ns;
};

enum symb_image_mode {
	SYMB_IMAGE_ELF,	  /* what the symbol, stack-delta and DWARF tables read */
	SYMB_IMAGE_WHOLE, /* every byte */
};

struct symb_image {
	uint8_t *data; /* size bytes, private; zero outside the ranges read */
	uint64_t size; /* the file's size when the read began */
	uint64_t read; /* bytes read (the ranges' total) */
	bool hashed;   /* id is set */
	struct symb_ident id;
	/*
	 * The file may be remembered as key -> id (symb_cache__memo_put):
	 * the kernel gave it a unique mount id, its key was the same before
	 * and after the read, and its ctime had settled before the read
	 * began. Then a file with this key later is this same version (a
	 * write or a new inode gets a later ctime) on the same mount (whose
	 * files all take their stat values from one source).
	 */
	bool memo_ok;
	struct symb_file_key key;
};

/*
 * Has libcrypto read its configuration (the providers it names are loaded
 * then): before the sandbox is entered. SHA-256 itself is fetched at the
 * first hash. Idempotent. Returns 0 or -ENOSYS.
 */
int symb_ident__init(void);

/*
 * The file's memo key. Returns 1 when the memo may serve it (the kernel
 * has unique mount ids, Linux 6.8 and later), 0 when it may not (the key
 * is still filled, with mnt 0), or a negative errno (-EINVAL: not a
 * regular file).
 */
int symb_file_key__get(int fd, struct symb_file_key *k);

/*
 * The memo's rule for a file read at read_start_ns (CLOCK_REALTIME), whose
 * key was before when the read began and after when it ended: the kernel
 * gave a unique mount id, nothing changed, and the ctime had settled (see
 * symb_image.memo_ok).
 */
bool symb_file_key__settled(const struct symb_file_key *before, const struct symb_file_key *after,
			    int64_t read_start_ns);

/*
 * Reads fd's image (see top) and, with hash, its identity. Returns 0,
 * -EFBIG (more than SYMB_IMAGE_MAX_BYTES to read, or a larger file than
 * SYMB_IMAGE_MAX_FILE), -ESTALE (the file shrank while it was read),
 * -ENOMEM, -ENOSYS (no SHA-256), or another negative errno. img is
 * all zero on failure. Destructor: symb_image__free.
 */
int symb_image__read(int fd, enum symb_image_mode mode, bool hash, struct symb_image *img);
void symb_image__free(struct symb_image *img);

/*
 * The ranges SYMB_IMAGE_ELF selects in an ELF file held whole in memory,
 * as [off, off + len) pairs, sorted and merged (tests, fuzzing). Returns the
 * number of ranges (a malloc'd array in *out), or a negative errno.
 */
struct symb_image_range {
	uint64_t off, len;
};
int symb_image__select(const uint8_t *file, size_t size, struct symb_image_range **out);

/* SHA-256 of the encoding of an image (see ident.c); 0 or -ENOSYS / -ENOMEM. */
int symb_image__hash(const uint8_t *data, uint64_t size, const struct symb_image_range *r, size_t n,
		     struct symb_ident *id);

/* Lower-case hex, NUL-terminated. Returns out. */
char *symb_ident__hex(const struct symb_ident *id, char out[SYMB_IDENT_HEX]);

#endif /* LOWPROF_SYMB_IDENT_H */
