// SPDX-License-Identifier: MIT
/*
 * symb_cfi__build (cfi.h): finds a binary's CFI sections with libelf, by
 * section header or, without them, through PT_GNU_EH_FRAME, and builds
 * their table (cfi_build.c).
 */
#include <errno.h>
#include <string.h>

#include "cfi_int.h"
#include "lowprof/log.h"

/* The bytes of a named section, NULL if absent or without data (SHT_NOBITS). */
static const uint8_t *elf_section(Elf *elf, const char *want, size_t *size, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t shstrndx;
	const char *name;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name || strcmp(name, want))
			continue;
		/* separate debug files compress .debug_frame */
		if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0) {
			lp_warn("cfi: cannot decompress %s: %s", want, elf_errmsg(-1));
			return NULL;
		}
		d = elf_getdata(scn, NULL);
		if (!d || !d->d_buf || !d->d_size)
			return NULL;
		*size = d->d_size;
		*vaddr = sh.sh_addr;
		return d->d_buf;
	}
	return NULL;
}

/* The last PT_GNU_EH_FRAME of the n program headers, or false. */
static bool eh_frame_hdr_phdr(Elf *elf, size_t n, GElf_Phdr *hdr)
{
	GElf_Phdr ph;
	bool found = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_GNU_EH_FRAME) {
			*hdr = ph;
			found = true;
		}
	}
	return found;
}

/*
 * .eh_frame through PT_GNU_EH_FRAME, for a file without section headers:
 * the bytes from the hdr's eh_frame_ptr to the end of the PT_LOAD that holds
 * it (parsing stops at the zero terminator).
 */
static void elf_eh_frame_by_phdr(Elf *elf, struct symb_cfi_sections *sec)
{
	GElf_Phdr ph, hdr = {0};
	size_t i, n, rawsz;
	const uint8_t *raw;
	uint64_t ptr;

	raw = (const uint8_t *)elf_rawfile(elf, &rawsz);
	if (!raw || elf_getphdrnum(elf, &n))
		return;
	if (!eh_frame_hdr_phdr(elf, n, &hdr) || hdr.p_offset > rawsz ||
	    hdr.p_filesz > rawsz - hdr.p_offset)
		return;
	if (!cfi_hdr_eh_frame_ptr(raw + hdr.p_offset, hdr.p_filesz, hdr.p_vaddr, &ptr))
		return;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (ptr < ph.p_vaddr || ptr - ph.p_vaddr >= ph.p_filesz)
			continue;
		if (ph.p_offset > rawsz || ph.p_filesz > rawsz - ph.p_offset)
			return;
		sec->eh_frame = raw + ph.p_offset + (ptr - ph.p_vaddr);
		sec->eh_frame_size = ph.p_filesz - (ptr - ph.p_vaddr);
		sec->eh_frame_vaddr = ptr;
		sec->eh_frame_hdr = raw + hdr.p_offset;
		sec->eh_frame_hdr_size = hdr.p_filesz;
		sec->eh_frame_hdr_vaddr = hdr.p_vaddr;
		return;
	}
}

static bool is_x86_64(Elf *elf)
{
	GElf_Ehdr eh;

	return elf && elf_kind(elf) == ELF_K_ELF && gelf_getclass(elf) == ELFCLASS64 &&
	       gelf_getehdr(elf, &eh) && eh.e_machine == EM_X86_64;
}

int symb_cfi__build(Elf *elf, Elf *debug_elf, struct symb_deltas *out, struct symb_cfi_stats *stats)
{
	struct symb_cfi_sections sec = {0};
	uint64_t unused;

	out->rows = NULL;
	out->n = 0;
	out->lazy = NULL;
	if (stats)
		memset(stats, 0, sizeof(*stats));
	if (!is_x86_64(elf))
		return -ENOEXEC;
	sec.eh_frame = elf_section(elf, ".eh_frame", &sec.eh_frame_size, &sec.eh_frame_vaddr);
	if (sec.eh_frame)
		sec.eh_frame_hdr = elf_section(elf, ".eh_frame_hdr", &sec.eh_frame_hdr_size,
					       &sec.eh_frame_hdr_vaddr);
	else
		elf_eh_frame_by_phdr(elf, &sec);
	sec.debug_frame = elf_section(elf, ".debug_frame", &sec.debug_frame_size, &unused);
	if (!sec.debug_frame && debug_elf) {
		if (is_x86_64(debug_elf))
			sec.debug_frame = elf_section(debug_elf, ".debug_frame",
						      &sec.debug_frame_size, &unused);
		else
			lp_warn("cfi: debug file is not x86-64 ELF; ignored");
	}
	return symb_cfi__build_sections(&sec, out, stats);
}
