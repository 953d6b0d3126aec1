/* SPDX-License-Identifier: MIT */
/*
 * Inside objects/: the object table's layout, shared by table.c (the table),
 * load.c (opening and loading a file) and lines.c (DWARF lookups and their
 * cache traffic). Nothing outside this folder includes it.
 */
#ifndef LOWPROF_SYMB_OBJECTS_INT_H
#define LOWPROF_SYMB_OBJECTS_INT_H

#include "objects.h"

/* A buildid record's claim (symb_objects__note_build_id). */
struct symb_noted_id {
	uint64_t inode;
	uint32_t dev_major, dev_minor;
	uint32_t len; /* 0: empty slot */
	uint8_t id[LPS_MAX_BUILD_ID];
};

struct symb_objects {
	/* settings (symb_objects_opts) */
	uint64_t seed;
	bool offline, replay;
	struct symb_cache *cache;
	const char *const *debug_dirs;
	bool have_files;
	int files_fd;

	struct symb_obj *objs; /* in first-seen order; path NULL: a free slot */
	uint32_t nobjs, cap_objs;
	uint32_t *free_slots; /* indices symb_objects__sweep freed, taken last first */
	uint32_t nfree, cap_free;
	uint32_t *obj_index; /* open-addressing hash: index + 1, 0 = empty */
	uint32_t cap_obj_index;
	size_t obj_path_bytes;

	/* replay of a capture from a kernel without PROCMAP_QUERY: the live
	 * symbolizer's build-id notes, by file (a hash of device and inode) */
	struct symb_noted_id *noted_ids;
	uint32_t cap_noted_ids, nnoted_ids;
	/*
	 * or from a kernel that gave none for some files (a file system
	 * without a block device): the notes are read when a file is first
	 * missed, by load_notes(notes_ctx), once
	 */
	void (*load_notes)(void *ctx);
	void *notes_ctx;
	bool notes_loaded;

	uint32_t files_next_id; /* of the next request to the collector */
	uint32_t epoch;		/* of use: symb_objects__trim starts a new one */
	uint32_t ndwarf_open;
	bool have_vdso;
	uint32_t vdso; /* the vDSO's object, when have_vdso */
	struct symb_objects_stats n;
};

/*
 * load.c: loads o once (symb_objects__load) and notes its use; frees what
 * it loaded (o can load again after it).
 */
void symb_obj_load(struct symb_objects *s, struct symb_obj *o);
/* The slot of the note for a file (device, inode): free, or its note. */
struct symb_noted_id *symb_noted_slot(struct symb_noted_id *t, uint32_t cap, uint32_t major,
				      uint32_t minor, uint64_t inode);
/* o takes the noted build-id of its file, if there is one: whether it did. */
bool symb_obj_take_note(struct symb_objects *s, struct symb_obj *o);
void symb_obj_release(struct symb_objects *s, struct symb_obj *o);

#endif /* LOWPROF_SYMB_OBJECTS_INT_H */
