/* SPDX-License-Identifier: MIT */
/*
 * ELF symbol tables for the symbolizer (libelf). Turns a file offset inside
 * an executable mapping of a binary into the function that contains it.
 *
 * What it is: a loader of function symbols (.symtab, falling back to
 * .dynsym), the binary's PT_LOAD segments (to turn file offsets into ELF
 * virtual addresses) and its GNU build-id. What it is not: DWARF, CFI,
 * demangling, or anything that opens a file by itself beyond the path or fd
 * it is given.
 *
 * The file is untrusted: every section, segment, symbol and string offset is
 * checked against the file's size before use; a malformed file gives an error
 * or fewer symbols, never a crash.
 */
#ifndef LOWPROF_SYMB_ELFSYM_H
#define LOWPROF_SYMB_ELFSYM_H

#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

struct symb_elf;

/*
 * Opens and indexes an ELF file from a read-only fd (the fd is not kept open
 * afterwards: the caller still owns it and may close it at once) or from a
 * path. Returns NULL with errno set: ENOENT/EACCES from open, ENOEXEC for a
 * file that is not a usable ELF. Destructor: symb_elf__free.
 */
struct symb_elf *symb_elf__open_fd(int fd);
struct symb_elf *symb_elf__open(const char *path);
/* Same, from an in-memory image (len bytes; copied). For tests and fuzzing. */
struct symb_elf *symb_elf__open_mem(const void *image, size_t len);
/* Same, from a libelf handle the caller keeps and ends (elf_end). */
struct symb_elf *symb_elf__open_elf(Elf *elf);
/*
 * Replaces dst's PT_LOAD segments with a copy of src's: a separate debug
 * file has the symbols, but only the binary's own program headers describe
 * its file offsets. 0 or -ENOMEM.
 */
int symb_elf__adopt_segments(struct symb_elf *dst, const struct symb_elf *src);
void symb_elf__free(struct symb_elf *e);

/*
 * Compact blob form of everything indexed (segments, build-id, symbols) for
 * the cache. encode returns 0 and a malloc'd blob, or -ENOMEM. decode
 * validates every length, offset and order (a blob is untrusted input) and
 * returns the object, or NULL with errno EBADMSG or ENOMEM.
 */
#define SYMB_ELF_BLOB_VERSION 1
int symb_elf__encode(const struct symb_elf *e, uint8_t **blob, size_t *len);
struct symb_elf *symb_elf__decode(const uint8_t *blob, size_t len);
/*
 * The same from a malloc'd blob that becomes the object's, its names read
 * where they are rather than copied; freed here when decoding fails.
 */
struct symb_elf *symb_elf__decode_take(uint8_t *blob, size_t len);

/* Number of function symbols indexed. */
size_t symb_elf__nsyms(const struct symb_elf *e);

/*
 * GNU build-id (NT_GNU_BUILD_ID note): copies up to len bytes into buf and
 * returns the build-id's length, or 0 if the file has none.
 */
size_t symb_elf__build_id(const struct symb_elf *e, uint8_t *buf, size_t len);

/*
 * ELF virtual address of file offset off, via the PT_LOAD segment whose file
 * range contains it. Returns 0 on success, -ENOENT if no segment maps off.
 */
int symb_elf__offset_to_vaddr(const struct symb_elf *e, uint64_t off, uint64_t *vaddr);

/*
 * The function containing ELF virtual address vaddr: the symbol with the
 * greatest start <= vaddr whose [start, start+size) contains vaddr (a
 * zero-size symbol extends to the next symbol). Returns its name (valid until
 * symb_elf__free) and stores vaddr - start in *sym_off if non-NULL; NULL if
 * no symbol contains vaddr.
 */
const char *symb_elf__symbolize(const struct symb_elf *e, uint64_t vaddr, uint64_t *sym_off);

#endif /* LOWPROF_SYMB_ELFSYM_H */
