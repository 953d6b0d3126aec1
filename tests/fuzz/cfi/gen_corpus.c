// SPDX-License-Identifier: MIT
/*
 * gen_corpus OUTDIR MAXSIZE ELF...: writes fuzz_cfi seeds (see fuzz_cfi.c
 * for the layout) from each ELF's CFI sections: .eh_frame with its hdr,
 * .debug_frame, both, and the blob of its table. Sections are cut at
 * MAXSIZE bytes (the walk stops at the cut, as for a truncated file) to
 * keep the corpus small. Run by gen-corpus.sh, not by the build.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cfi.h"

static const uint8_t *section(Elf *elf, const char *want, size_t *size, uint64_t *vaddr)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf_Data *d;
	size_t shstrndx;

	*size = 0;
	*vaddr = 0;
	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS ||
		    strcmp(elf_strptr(elf, shstrndx, sh.sh_name), want))
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			return NULL;
		*size = d->d_size;
		*vaddr = sh.sh_addr;
		return d->d_buf;
	}
	return NULL;
}

static void put_le(FILE *f, uint64_t v, unsigned n)
{
	while (n--) {
		fputc((int)(v & 0xff), f);
		v >>= 8;
	}
}

static void seed(const char *dir, const char *name, const char *kind, uint8_t flags,
		 const struct symb_cfi_sections *s)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.%s", dir, name, kind);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		exit(1);
	}
	fputc(flags, f);
	put_le(f, s->eh_frame_vaddr, 8);
	put_le(f, flags & 1 ? s->eh_frame_size : 0, 4);
	put_le(f, flags & 2 ? s->eh_frame_hdr_size : 0, 4);
	put_le(f, s->eh_frame_hdr_vaddr, 8);
	if (flags & 1)
		fwrite(s->eh_frame, 1, s->eh_frame_size, f);
	if (flags & 2)
		fwrite(s->eh_frame_hdr, 1, s->eh_frame_hdr_size, f);
	if (flags & 4)
		fwrite(s->debug_frame, 1, s->debug_frame_size, f);
	fclose(f);
}

int main(int argc, char **argv)
{
	size_t max, i;
	int a;

	if (argc < 4) {
		fprintf(stderr, "usage: %s OUTDIR MAXSIZE ELF...\n", argv[0]);
		return 2;
	}
	max = strtoul(argv[2], NULL, 0);
	elf_version(EV_CURRENT);
	for (a = 3; a < argc; a++) {
		struct symb_cfi_sections s = {0};
		struct symb_deltas d;
		uint64_t unused;
		char path[4096], *name = basename(argv[a]);
		uint8_t *blob;
		size_t len;
		int fd = open(argv[a], O_RDONLY);
		Elf *elf = fd < 0 ? NULL : elf_begin(fd, ELF_C_READ, NULL);
		FILE *f;

		if (!elf) {
			fprintf(stderr, "%s: cannot open\n", argv[a]);
			return 1;
		}
		s.eh_frame = section(elf, ".eh_frame", &s.eh_frame_size, &s.eh_frame_vaddr);
		s.eh_frame_hdr =
			section(elf, ".eh_frame_hdr", &s.eh_frame_hdr_size, &s.eh_frame_hdr_vaddr);
		s.debug_frame = section(elf, ".debug_frame", &s.debug_frame_size, &unused);
		if (s.eh_frame_size > max)
			s.eh_frame_size = max;
		if (s.eh_frame_hdr_size > max)
			s.eh_frame_hdr_size = max;
		if (s.debug_frame_size > max)
			s.debug_frame_size = max;
		if (s.eh_frame)
			seed(argv[1], name, "eh", 3, &s);
		if (s.debug_frame)
			seed(argv[1], name, "debug", 4, &s);
		if (s.eh_frame && s.debug_frame)
			seed(argv[1], name, "both", 7, &s);
		if (symb_cfi__build_sections(&s, &d, NULL) ||
		    symb_deltas__encode(&d, &blob, &len)) {
			fprintf(stderr, "%s: cannot build\n", argv[a]);
			return 1;
		}
		/* blob mode: the blob without its hash */
		snprintf(path, sizeof(path), "%s/%s.blob", argv[1], name);
		f = fopen(path, "wb");
		fputc(0x80, f);
		for (i = 0; i + 8 < len; i++)
			fputc(blob[i], f);
		fclose(f);
		free(blob);
		symb_deltas__free(&d);
		elf_end(elf);
		close(fd);
	}
	return 0;
}
