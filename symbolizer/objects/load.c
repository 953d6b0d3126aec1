// SPDX-License-Identifier: MIT
/*
 * Loading what the symbolizer knows about a mapped binary: its symbols and
 * PT_LOAD segments (elfsym.h), its stack-delta table (cfi.h), and at build
^ * time its DWARF (debuginfo.h). Symbols and deltas come from the SQLite cache
 * when it has them under the content identity of the bytes they are built
 * from (ident.h); otherwise they are built from exactly those bytes and
 * stored (see "How an object's tables are found" below).
 *
 * The paths, devices and inodes of objects come from the stream: opening
 * them must not let a stream open anything but the regular file that was
 * mapped (see open_checked), and a file replaced since it was mapped is
 * never used to name or unwind the old one's frames.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "cfi.h"
#include "debuginfo.h"
#include "ident.h"
#include "lowprof/clock.h"
#include "lowprof/files.h"
#include "lowprof/hash.h"
#include "lowprof/log.h"
#include "lowprof/text.h"
#include "objects_int.h"

/*
 * Objects whose DWARF stays open (each holds a descriptor, and once libdw
 * starts, the image of the file it reads).
 */
#define SYMB_MAX_DWARF_OPEN 256
/* How long to wait for the collector's answer to a file request. */
#define FILES_WAIT_MS 2000

/*
 * A path as /proc/PID/maps shows it: absolute, with no "." or ".."
 * component, so that "/proc/PID/root" + path cannot leave that root through
 * the path itself.
 */
static bool path_is_plain(const char *path)
{
	size_t n = strlen(path);

	if (path[0] != '/' || strstr(path, "/../") || strstr(path, "/./"))
		return false;
	return !(n >= 3 && strcmp(path + n - 3, "/..") == 0) &&
	       !(n >= 2 && strcmp(path + n - 2, "/.") == 0);
}

/* The mapped file itself: both the device and the inode come from /proc/PID/maps. */
static bool is_mapped_file(const struct stat *st, const struct symb_obj *o)
{
	return S_ISREG(st->st_mode) && st->st_ino == o->inode &&
	       st->st_dev == makedev(o->dev_major, o->dev_minor);
}

/*
 * Opens path read-only if it is the object's file (o NULL: any regular
 * file, for replay, where the build-id decides). The first open is O_PATH:
 * it opens no device and no FIFO (no driver open, no blocking), and follows
 * no final symlink; the checks run on the inode it found, and the read-only
 * open goes through that same inode (/proc/self/fd/N), checked again.
 * Returns an fd, or -errno (-ESTALE: not the file that was mapped).
 */
static int open_checked(const char *path, const struct symb_obj *o, struct stat *st)
{
	int pfd, fd, err;

	pfd = open(path, O_PATH | O_NOFOLLOW | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	if (fstat(pfd, st)) {
		err = -errno;
		close(pfd);
		return err;
	}
	if (o ? !is_mapped_file(st, o) : !S_ISREG(st->st_mode)) {
		close(pfd);
		return -ESTALE;
	}
	fd = lp_reopen(pfd, O_RDONLY | O_NOCTTY | O_NONBLOCK);
	close(pfd);
	if (fd < 0)
		return fd;
	if (fstat(fd, st) || (o ? !is_mapped_file(st, o) : !S_ISREG(st->st_mode))) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

static void hex_id(char *out, const uint8_t *id, size_t len)
{
	out[0] = '\0';
	for (size_t i = 0; i < len && i < LPS_MAX_BUILD_ID; i++)
		snprintf(out + 2 * i, 3, "%02x", id[i]);
}

/*
 * The GNU build-id of the ELF file behind fd, as hex in out (2 * 64 + 1
 * bytes); "" when it has none or is not ELF.
 */
static void file_build_id(int fd, char *out)
{
	Elf *e;
	const void *id;
	ssize_t n;

	out[0] = '\0';
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && elf_kind(e) == ELF_K_ELF) {
		n = dwelf_elf_gnu_build_id(e, &id);
		if (n > 0 && n <= LPS_MAX_BUILD_ID)
			hex_id(out, id, (size_t)n);
	}
	elf_end(e);
}

/*
 * The path a file had before it was deleted or replaced under the process
 * that maps it (an upgrade): the kernel's maps print "PATH (deleted)". In
 * buf, or NULL when path does not end so.
 */
static const char *path_before_delete(const char *path, char *buf, size_t cap)
{
	static const char sfx[] = " (deleted)";
	size_t n = strlen(path), k = sizeof(sfx) - 1;

	if (n <= k + 1 || n - k >= cap || strcmp(path + n - k, sfx))
		return NULL;
	memcpy(buf, path, n - k);
	buf[n - k] = '\0';
	return buf;
}

struct symb_noted_id *symb_noted_slot(struct symb_noted_id *t, uint32_t cap, uint32_t major,
				      uint32_t minor, uint64_t inode)
{
	uint64_t h = lp_mix64(inode ^ ((uint64_t)major << 44) ^ ((uint64_t)minor << 24));

	for (uint32_t i = (uint32_t)h & (cap - 1);; i = (i + 1) & (cap - 1))
		if (!t[i].len ||
		    (t[i].inode == inode && t[i].dev_major == major && t[i].dev_minor == minor))
			return &t[i];
}

/* o takes the noted build-id of its file, if there is one: whether it did. */
bool symb_obj_take_note(struct symb_objects *s, struct symb_obj *o)
{
	const struct symb_noted_id *n;

	if (!s->nnoted_ids)
		return false;
	n = symb_noted_slot(s->noted_ids, s->cap_noted_ids, o->dev_major, o->dev_minor, o->inode);
	if (!n->len)
		return false;
	memcpy(o->want_id, n->id, n->len);
	o->want_id_len = n->len;
	o->id_noted = true;
	return true;
}

/*
 * o has no build-id and its file is not at its path: the notes are read now
 * if they were left for then (symb_objects__set_notes_loader), and o takes
 * its file's. Whether it has one now. Only for a file the kernel was not
 * asked about (device major 0: collector/procs.c) and that could be found
 * elsewhere: not a memfd, which every whole-host capture maps and no note
 * would find, and whose miss would cost the replay a whole pass for nothing
 * (+15 ms, a fifth of a warm replay, in the benchmark's).
 */
static bool late_noted_id(struct symb_objects *s, struct symb_obj *o)
{
	if (o->want_id_len || !s->load_notes || o->dev_major != 0 ||
	    !strncmp(o->path, "/memfd:", 7))
		return false;
	if (!s->notes_loaded) {
		s->notes_loaded = true;
		s->load_notes(s->notes_ctx);
	}
	return symb_obj_take_note(s, o);
}

/*
 * Replay: the file with the mapped build-id, at the recorded path (for a
 * file deleted or replaced since it was mapped, also at the path it had:
 * the same build may be installed there where the capture is replayed) or under
 * a debug dir as .build-id/xx/rest. Without a recorded build-id, the file
 * at the path if it is the mapped one by device and inode, which only holds
 * on the host that was profiled. Returns an fd, or -ESTALE after saying,
 * once per object, what was missing.
 */
static int open_replay_file(struct symb_objects *s, struct symb_obj *o, struct stat *st)
{
	char want[2 * LPS_MAX_BUILD_ID + 1], got[2 * LPS_MAX_BUILD_ID + 1],
		shown[LP_NAME_PRINT_MAX + 4], before[LPS_MAX_PATH + 1];
	const char *paths[2] = {o->path, NULL};
	int fd, path_err;

	lp_sanitize_name(shown, sizeof(shown), o->path);
	if (!o->want_id_len) {
		fd = path_is_plain(o->path) ? open_checked(o->path, o, st) : -EINVAL;
		if (fd >= 0)
			return fd;
	}
	if (!o->want_id_len && !late_noted_id(s, o)) {
		lp_warn("replay: %s: no build-id was recorded for it (no build-id note, or a "
			"kernel without PROCMAP_QUERY) and the file at that path is not the one "
			"mapped; its frames are shown as %s+0xOFFSET",
			shown, shown);
		s->n.mismatched_objs++;
		o->not_found = true;
		return -ESTALE;
	}
	hex_id(want, o->want_id, o->want_id_len);
	got[0] = '\0';
	path_err = -EINVAL;
	paths[1] = path_before_delete(o->path, before, sizeof(before));
	for (int i = 0; i < 2 && paths[i]; i++) {
		if (!path_is_plain(paths[i]))
			continue;
		fd = open_checked(paths[i], NULL, st);
		if (i == 0 || fd >= 0)
			path_err = fd < 0 ? fd : 0;
		if (fd >= 0) {
			file_build_id(fd, got);
			if (!strcmp(got, want))
				return fd;
			close(fd);
		}
	}
	for (size_t i = 0; s->debug_dirs && s->debug_dirs[i]; i++) {
		char alt[2 * LPS_MAX_BUILD_ID + 1];

		fd = symb_build_id_file_open(s->debug_dirs[i], o->want_id, o->want_id_len, "");
		if (fd < 0)
			continue;
		file_build_id(fd, alt);
		if (!strcmp(alt, want) && !fstat(fd, st))
			return fd;
		close(fd);
	}
	lp_warn("replay: %s: %s, and no --debug-dir has build-id %s (as .build-id/%.2s/%s); its "
		"frames are shown as %s+0xOFFSET",
		shown,
		path_err ? (path_err == -ENOENT ? "not found" : "cannot be read")
		: got[0] ? "the file at that path has another build-id"
			 : "the file at that path has no build-id",
		want, want, want + 2, shown);
	s->n.mismatched_objs++;
	o->not_found = true;
	return -ESTALE;
}

/*
 * Asks the collector for the object's file over the file channel: it opens
 * what process o->pid has mapped from o's device and inode (nothing else)
 * and sends a read-only descriptor. Waits up to FILES_WAIT_MS for the
 * answer; an answer to an earlier request (one that timed out, or of a
 * symbolizer before us on the same socket) is recognised by its id and
 * dropped. Returns an fd of the mapped file or -errno.
 */
static int ask_collector(struct symb_objects *s, const struct symb_obj *o, struct stat *st)
{
	struct lp_file_req q = {.magic = LP_FILE_REQ_MAGIC,
				.id = ((uint32_t)getpid() << 12) ^ ++s->files_next_id,
				.pid = o->pid,
				.dev_major = o->dev_major,
				.dev_minor = o->dev_minor,
				.inode = o->inode};
	uint64_t deadline = lp_clock_ns(CLOCK_MONOTONIC) + FILES_WAIT_MS * 1000000ull;
	int err;

	s->n.files.asked++;
	err = lp_send_msg(s->files_fd, &q, sizeof(q), NULL, 0);
	if (err) {
		lp_warn("files: the file channel to the collector: %s; opening files ourselves "
			"only",
			strerror(-err));
		s->have_files = false;
		return err;
	}
	for (;;) {
		struct pollfd p = {s->files_fd, POLLIN, 0};
		struct lp_file_rep r;
		uint64_t now = lp_clock_ns(CLOCK_MONOTONIC);
		int fd[1], nfds;
		ssize_t n;

		if (now >= deadline) {
			s->n.files.timeouts++;
			return -ETIMEDOUT;
		}
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = lp_recv_msg(s->files_fd, &r, sizeof(r), fd, 1, &nfds, MSG_DONTWAIT, NULL);
		if (n == -EAGAIN || n == -EINTR || n == -EBADMSG)
			continue;
		if (n < 0) {
			lp_warn("files: the file channel to the collector: %s; opening files "
				"ourselves only",
				n == -EPIPE ? "closed" : strerror((int)-n));
			s->have_files = false;
			return (int)n;
		}
		if ((size_t)n != sizeof(r) || r.magic != LP_FILE_REP_MAGIC || r.id != q.id ||
		    (r.err == 0) != (nfds == 1)) {
			if (nfds)
				close(fd[0]); /* not the answer to this request */
			continue;
		}
		if (r.err) {
			s->n.files.refused++;
			return r.err < 0 && r.err > -4096 ? r.err : -EIO;
		}
		/* the collector checked; so do we: the mapped file, regular */
		if (fstat(fd[0], st) || !is_mapped_file(st, o)) {
			close(fd[0]);
			s->n.files.refused++;
			return -ESTALE;
		}
		s->n.files.received++;
		return fd[0];
	}
}

/*
 * Opens an object's file: at its path, then through the mapping process's
 * root (other mount namespaces, when we are allowed to), then from the
 * collector. Returns an fd or -errno.
 */
static int open_obj_file(struct symb_objects *s, const struct symb_obj *o, struct stat *st)
{
	char alt[LPS_MAX_PATH + 32];
	const char *paths[2] = {o->path, alt};
	int err = -EINVAL;

	if (path_is_plain(o->path)) {
		if (snprintf(alt, sizeof(alt), "/proc/%u/root%s", o->pid, o->path) >=
		    (int)sizeof(alt))
			paths[1] = NULL;
		for (int i = 0; i < 2 && paths[i]; i++) {
			int fd = open_checked(paths[i], o, st);

			if (fd >= 0)
				return fd;
			err = fd;
		}
	}
	if (s->have_files) {
		int fd = ask_collector(s, o, st);

		if (fd >= 0)
			return fd;
		/* our own reason says more when the collector found nothing either */
		if (err == -EINVAL || fd == -EACCES || fd == -EPERM)
			err = fd;
	}
	return err;
}

/*
 * How an object's tables are found. A build-id only says where to look
 * (the separate debug file, a binary moved away in replay); the cache key
 * is the content identity of the bytes the tables are built from (ident.h,
 * cache.h), so a binary that claims another's build-id never shares its
 * rows.
 *
 * By the memo (load_by_memo): the cache remembers the identities of the
 * binary and its debug files by their stat keys, and whether each debug
 * file belongs to the binary; when both tables are there too, the object
 * is loaded without reading the files. The memo serves lookups only.
 *
 * Verified (load_verified): the binary's image is read and hashed
 * (SYMB_IMAGE_ELF), each debug file found by build-id read whole and
 * checked against the binary (symb_debug_file_match, remembered in the
 * cache under both identities), and tables missing from the cache are
 * built from those images, the very bytes their key was computed over,
 * then stored. Without a cache (or an identity for the binary) it is
 * parsed through libelf's ELF_C_READ, and nothing is hashed or stored;
 * debug files are still read whole, as their CRC-32 is over the whole
 * file.
 *
 * DWARF is read later, by libdw, only if a lookup needs it (dwarf_start):
 * the file is read again into an image, and must have the identity the
 * object was loaded under, or its DWARF is not used (and nothing learnt
 * from it stored). Without a cache there is no identity to check, and
 * nothing learnt is kept past the run.
 */

/* The format of the SYMB_CACHE_DEBUG_MATCH blob: one byte, 1 or 0. */
#define DEBUG_MATCH_VERSION 1

/* One file behind an object: the binary, or a debug file. */
struct obj_file {
	int fd;		       /* -1: none */
	Elf *probe;	       /* ELF_C_READ on fd: hints only (build-id, has DWARF) */
	struct symb_image img; /* the private copy, once read */
	Elf *elf;	       /* elf_memory over img.data */
	bool have_id;	       /* id: from the memo (lookups only) or from img */
	struct symb_ident id;
};

/* The file libdw reads for an object, from its first lookup that needs libdw. */
struct symb_obj_dwarf {
	int fd;
	enum symb_image_mode mode;
	bool check; /* the image must have identity id */
	struct symb_ident id;
	struct symb_image img;
	Elf *elf;
};

struct obj_load {
	struct symb_objects *s;
	struct symb_obj *o;
	const uint8_t *claimed; /* the build-id the binary claims: finds debug files */
	size_t claimed_len;
	struct obj_file bin, dbg;     /* dbg: the debug file in use (fd -1: none) */
	char key[SYMB_CACHE_KEY_MAX]; /* "": nothing is looked up or stored */
};

static void file_init(struct obj_file *f)
{
	memset(f, 0, sizeof(*f));
	f->fd = -1;
}

static void file_drop(struct obj_file *f)
{
	elf_end(f->elf);
	elf_end(f->probe);
	symb_image__free(&f->img);
	if (f->fd >= 0)
		close(f->fd);
	file_init(f);
}

/* The identity the memo remembers for f's file (false: none, or no memo for it). */
static bool memo_lookup(struct symb_objects *s, struct obj_file *f)
{
	struct symb_file_key k;

	f->have_id = symb_file_key__get(f->fd, &k) == 1 &&
		     symb_cache__memo_get(s->cache, &k, &f->id) == 0;
	return f->have_id;
}

/*
 * Reads f's image and opens it with libelf; with hash, its identity, which
 * the memo then remembers where it may. 0 or a negative errno.
 */
static int file_read(struct symb_objects *s, struct obj_file *f, enum symb_image_mode mode,
		     bool hash)
{
	int err;

	f->have_id = false;
	err = symb_image__read(f->fd, mode, hash, &f->img);
	if (err)
		return err;
	f->elf = elf_memory((char *)f->img.data, f->img.size);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF) {
		elf_end(f->elf);
		f->elf = NULL;
		symb_image__free(&f->img);
		return -ENOEXEC;
	}
	f->have_id = f->img.hashed;
	f->id = f->img.id;
	if (s->cache && f->img.hashed && f->img.memo_ok)
		symb_cache__memo_put(s->cache, &f->img.key, &f->img.id);
	return 0;
}

/* Whether debug file d belongs to binary b, as the cache remembers: 1, 0 or -ENOENT. */
static int match_get(struct symb_objects *s, const struct symb_ident *b, const struct symb_ident *d)
{
	char key[SYMB_CACHE_KEY_MAX];
	uint8_t *blob = NULL;
	size_t len = 0;
	int v = -ENOENT;

	if (symb_cache__get(s->cache, symb_cache__key(key, b, d), SYMB_CACHE_DEBUG_MATCH,
			    DEBUG_MATCH_VERSION, &blob, &len) == 0 &&
	    len == 1 && blob[0] <= 1)
		v = blob[0];
	free(blob);
	return v;
}

static void match_put(struct symb_objects *s, const struct symb_ident *b,
		      const struct symb_ident *d, bool match)
{
	char key[SYMB_CACHE_KEY_MAX];
	uint8_t v = match;

	symb_cache__put(s->cache, symb_cache__key(key, b, d), SYMB_CACHE_DEBUG_MATCH,
			DEBUG_MATCH_VERSION, &v, 1);
}

/* The next debug file under the claimed build-id, from debug dir *i on; false at the end. */
static bool next_debug_file(struct obj_load *ld, size_t *i)
{
	const char *const *dirs = ld->s->debug_dirs;

	file_drop(&ld->dbg);
	for (; ld->claimed_len && dirs && dirs[*i]; (*i)++) {
		ld->dbg.fd = symb_debug_file_open(dirs[*i], ld->claimed, ld->claimed_len);
		if (ld->dbg.fd >= 0) {
			(*i)++;
			return true;
		}
	}
	return false;
}

static void load_symbols(struct symb_objects *s, struct symb_obj *o, const char *key, Elf *elf,
			 Elf *dbg);
static void load_deltas(struct symb_objects *s, struct symb_obj *o, const char *key, Elf *elf,
			Elf *dbg);

/*
 * Both tables from the cache under ld->key, or neither (the caller then
 * loads verified). A blob that fails to decode is counted there.
 */
static bool tables_from_cache(struct obj_load *ld)
{
	struct symb_objects *s = ld->s;
	struct symb_elf *elf = NULL;
	struct symb_deltas deltas = {0};
	uint8_t *blob = NULL;
	size_t len = 0;

	if (symb_cache__get(s->cache, ld->key, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, &blob,
			    &len))
		return false;
	elf = symb_elf__decode_take(blob, len);
	if (!elf || symb_cache__get(s->cache, ld->key, SYMB_CACHE_DELTAS, SYMB_DELTAS_BLOB_VERSION,
				    &blob, &len)) {
		symb_elf__free(elf);
		return false;
	}
	if (symb_deltas__open_blob(blob, len, &deltas)) { /* takes blob */
		symb_elf__free(elf);
		return false;
	}
	ld->o->elf = elf;
	ld->o->deltas = deltas;
	ld->o->have_deltas = true;
	s->n.cache_hits += 2;
	return true;
}

/* See the top of this part. True when the object was loaded. */
static bool load_by_memo(struct obj_load *ld)
{
	struct obj_file *b = &ld->bin, *d = &ld->dbg;
	size_t i = 0;
	int v = 0;

	if (!memo_lookup(ld->s, b))
		return false;
	while (next_debug_file(ld, &i)) {
		if (!memo_lookup(ld->s, d))
			return false;
		v = match_get(ld->s, &b->id, &d->id);
		if (v < 0)
			return false;
		if (v)
			break;
	}
	if (!v)
		file_drop(d);
	symb_cache__key(ld->key, &b->id, d->fd >= 0 ? &d->id : NULL);
	return tables_from_cache(ld);
}

/*
 * Whether the debug file just read belongs to the binary (belf: its image,
 * or without one its probe); remembered under both identities when the
 * binary's was computed.
 */
static bool debug_matches(struct obj_load *ld, Elf *belf)
{
	struct obj_file *b = &ld->bin, *d = &ld->dbg;
	char shown[LP_NAME_PRINT_MAX + 4];
	bool remember = ld->s->cache && b->img.hashed;
	int v = remember ? match_get(ld->s, &b->id, &d->id) : -ENOENT;

	if (v < 0) {
		v = symb_debug_file_match(belf, d->elf, d->img.data, d->img.size);
		if (remember)
			match_put(ld->s, &b->id, &d->id, v);
	}
	if (!v)
		lp_debug(
			"symbols: %s: the debug file of its build-id is another binary's; not used",
			lp_sanitize_name(shown, sizeof(shown), ld->o->path));
	return v == 1;
}

/* See the top of this part. */
static void load_verified(struct obj_load *ld)
{
	struct symb_objects *s = ld->s;
	struct obj_file *b = &ld->bin, *d = &ld->dbg;
	char shown[LP_NAME_PRINT_MAX + 4];
	size_t i = 0;
	Elf *belf;
	int err;

	file_drop(d);
	b->have_id = false;
	ld->key[0] = '\0';
	if (s->cache) {
		err = file_read(s, b, SYMB_IMAGE_ELF, true);
		if (err)
			lp_debug("symbols: %s: not cached: %s",
				 lp_sanitize_name(shown, sizeof(shown), ld->o->path),
				 strerror(-err));
	}
	belf = b->elf ? b->elf : b->probe;
	while (next_debug_file(ld, &i))
		if (file_read(s, d, SYMB_IMAGE_WHOLE, b->img.hashed) == 0 &&
		    debug_matches(ld, belf))
			break;
	if (b->img.hashed)
		symb_cache__key(ld->key, &b->id, d->elf ? &d->id : NULL);
	load_symbols(s, ld->o, ld->key[0] ? ld->key : NULL, belf, d->elf);
	load_deltas(s, ld->o, ld->key[0] ? ld->key : NULL, belf, d->elf);
}

static void load_symbols(struct symb_objects *s, struct symb_obj *o, const char *key, Elf *elf,
			 Elf *dbg)
{
	uint8_t *blob = NULL;
	size_t len = 0;

	if (key && s->cache &&
	    symb_cache__get(s->cache, key, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, &blob,
			    &len) == 0) {
		o->elf = symb_elf__decode_take(blob, len);
		if (o->elf) {
			s->n.cache_hits++;
			return;
		}
		s->n.cache_bad++;
	}
	o->elf = symb_elf__open_elf(elf);
	if (!o->elf)
		return;
	/*
	 * a separate debug file has the full .symtab of a stripped binary
	 * (local functions too); the binary's own segments still apply
	 */
	if (dbg) {
		struct symb_elf *d = symb_elf__open_elf(dbg);

		if (d && symb_elf__nsyms(d) > symb_elf__nsyms(o->elf) &&
		    symb_elf__adopt_segments(d, o->elf) == 0) {
			symb_elf__free(o->elf);
			o->elf = d;
		} else {
			symb_elf__free(d);
		}
	}
	s->n.parsed_symbols++;
	if (key && s->cache && symb_elf__encode(o->elf, &blob, &len) == 0) {
		if (symb_cache__put(s->cache, key, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, blob,
				    len) == 0)
			s->n.cache_stored++;
		free(blob);
	}
}

static void load_deltas(struct symb_objects *s, struct symb_obj *o, const char *key, Elf *elf,
			Elf *dbg)
{
	uint8_t *blob = NULL;
	size_t len = 0;
	int err;

	/*
	 * have_deltas: a table is present. One from the cache is lazy (its
	 * blocks are decoded by the lookups that need them), so a block found
	 * bad then still costs only the lookups in it.
	 */
	if (key && s->cache &&
	    symb_cache__get(s->cache, key, SYMB_CACHE_DELTAS, SYMB_DELTAS_BLOB_VERSION, &blob,
			    &len) == 0) {
		err = symb_deltas__open_blob(blob, len, &o->deltas); /* takes blob */
		if (!err) {
			s->n.cache_hits++;
			o->have_deltas = true;
			return;
		}
		s->n.cache_bad++;
	}
	if (symb_cfi__build(elf, dbg, &o->deltas, NULL))
		return;
	o->have_deltas = true;
	s->n.parsed_deltas++;
	if (key && s->cache && symb_deltas__encode(&o->deltas, &blob, &len) == 0) {
		if (symb_cache__put(s->cache, key, SYMB_CACHE_DELTAS, SYMB_DELTAS_BLOB_VERSION,
				    blob, len) == 0)
			s->n.cache_stored++;
		free(blob);
	}
}

/*
 * libdw's file, once a lookup needs it: read again, and used only if it is
 * still the content the object's tables and cache key were loaded for (a
 * file too large for an image is read by libelf directly, when there is
 * nothing to check it against).
 */
static Elf *dwarf_start(void *ctx)
{
	struct symb_obj_dwarf *src = ctx;
	int err;

	err = symb_image__read(src->fd, src->mode, src->check, &src->img);
	if (err == -EFBIG && !src->check) {
		src->elf = elf_begin(src->fd, ELF_C_READ, NULL);
		return src->elf;
	}
	if (err)
		return NULL;
	if (src->check && memcmp(&src->img.id, &src->id, sizeof(src->id))) {
		lp_debug("dwarf: a file changed since its tables were loaded; its DWARF is not "
			 "used");
		symb_image__free(&src->img);
		return NULL;
	}
	src->elf = elf_memory((char *)src->img.data, src->img.size);
	return src->elf;
}

static void dwarf_src_free(struct symb_obj_dwarf *src)
{
	if (!src)
		return;
	elf_end(src->elf);
	symb_image__free(&src->img);
	if (src->fd >= 0)
		close(src->fd);
	free(src);
}

/* DWARF from the debug file in use, else from the binary; it keeps that file's fd. */
static void keep_dwarf(struct obj_load *ld)
{
	struct obj_file *f = ld->dbg.fd >= 0 ? &ld->dbg : &ld->bin;
	struct symb_objects *s = ld->s;
	struct symb_obj_dwarf *src;
	Elf *probe;

	if (s->ndwarf_open >= SYMB_MAX_DWARF_OPEN)
		return;
	if (!f->elf && !f->probe)
		f->probe = elf_begin(f->fd, ELF_C_READ, NULL);
	probe = f->elf ? f->elf : f->probe;
	src = calloc(1, sizeof(*src));
	if (!src || !probe) {
		free(src);
		return;
	}
	*src = (struct symb_obj_dwarf){.fd = f->fd,
				       .mode = f == &ld->dbg ? SYMB_IMAGE_WHOLE : SYMB_IMAGE_ELF,
				       .check = f->have_id,
				       .id = f->id};
	ld->o->dwarf = symb_dwarf__open_deferred(probe, dwarf_start, src);
	if (!ld->o->dwarf) {
		free(src);
		return;
	}
	f->fd = -1; /* the object's now */
	ld->o->dwarf_src = src;
	s->ndwarf_open++;
}

/*
 * Live, on a kernel that gave no build-id for o's file (no PROCMAP_QUERY):
 * tells the collector the one read from the file, which is the mapped one
 * (checked by device and inode), so that a capture of the run can find it
 * again elsewhere (lowprof/files.h, LPFB). No answer; a note lost costs
 * only that.
 */
static void note_build_id(struct symb_objects *s, const struct symb_obj *o, const void *id,
			  size_t len)
{
	struct lp_file_buildid n = {.magic = LP_FILE_BUILDID_MAGIC,
				    .len = (uint32_t)len,
				    .dev_major = o->dev_major,
				    .dev_minor = o->dev_minor,
				    .inode = o->inode};

	if (!s->have_files || len > sizeof(n.id))
		return;
	memcpy(n.id, id, len);
	if (lp_send_msg(s->files_fd, &n, sizeof(n), NULL, 0) == 0)
		s->n.build_ids_noted++;
}

/*
 * The object's file, opened and checked (its build-id the mapped one);
 * ld->bin.probe set. Returns false when there is nothing to load.
 */
static bool open_binary(struct obj_load *ld)
{
	struct symb_objects *s = ld->s;
	struct symb_obj *o = ld->o;
	char shown[LP_NAME_PRINT_MAX + 4];
	const void *id = NULL;
	struct stat st;
	ssize_t idlen;
	int fd;

	fd = s->replay ? open_replay_file(s, o, &st) : open_obj_file(s, o, &st);
	if (fd < 0 && s->replay)
		return false;
	if (fd < 0) {
		lp_debug("symbols: %s: %s", lp_sanitize_name(shown, sizeof(shown), o->path),
			 fd == -ESTALE	 ? "not the file that was mapped"
			 : fd == -EINVAL ? "not a plain absolute path"
					 : strerror(-fd));
		s->n.unreadable_objs++;
		return false;
	}
	ld->bin.fd = fd;
	/*
	 * ELF_C_READ reads with pread into libelf's buffers: a file truncated
	 * while it is read gives an error, not SIGBUS.
	 */
	elf_version(EV_CURRENT);
	ld->bin.probe = elf_begin(fd, ELF_C_READ, NULL);
	if (!ld->bin.probe || elf_kind(ld->bin.probe) != ELF_K_ELF) {
		lp_debug("symbols: %s: not an ELF file",
			 lp_sanitize_name(shown, sizeof(shown), o->path));
		return false;
	}
	idlen = dwelf_elf_gnu_build_id(ld->bin.probe, &id);
	if (idlen > 0 && idlen <= 40) {
		hex_id(o->build_id, id, (size_t)idlen);
		ld->claimed = id;
		ld->claimed_len = (size_t)idlen;
	}
	/* replaced in place since the collector read the maps: not the mapped file */
	if (o->want_id_len &&
	    (idlen != (ssize_t)o->want_id_len || memcmp(id, o->want_id, o->want_id_len))) {
		lp_debug("symbols: %s: its build-id is not the one mapped",
			 lp_sanitize_name(shown, sizeof(shown), o->path));
		o->build_id[0] = '\0';
		s->n.mismatched_objs++;
		o->not_found = true;
		return false;
	}
	if (!s->replay && !o->want_id_len && idlen > 0 && idlen <= LPS_MAX_BUILD_ID)
		note_build_id(s, o, id, (size_t)idlen);
	return true;
}

/*
 * An object of an in-memory image (the vDSO, vdso.c): as untrusted as any
 * file (libelf, elfsym.h and cfi.h check every offset in it), read from a
 * private copy each time, so that nothing done to it changes the bytes
 * kept. Never cached: the image is a few KiB.
 */
static void load_image(struct symb_objects *s, struct symb_obj *o)
{
	uint8_t *copy = malloc(o->image_len), id[LPS_MAX_BUILD_ID];
	Elf *elf = NULL;
	size_t n;

	if (copy) {
		memcpy(copy, o->image, o->image_len);
		elf_version(EV_CURRENT);
		elf = elf_memory((char *)copy, o->image_len);
	}
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		lp_debug("symbols: [vdso]: the stream's image is not ELF");
		goto out;
	}
	o->elf = symb_elf__open_elf(elf); /* copies what it keeps */
	if (o->elf) {
		s->n.parsed_symbols++;
		n = symb_elf__build_id(o->elf, id, sizeof(id));
		if (n && n <= 40)
			hex_id(o->build_id, id, n);
	}
	if (symb_cfi__build(elf, NULL, &o->deltas, NULL) == 0) {
		o->have_deltas = true;
		s->n.parsed_deltas++;
	}
out:
	elf_end(elf);
	free(copy);
}

void symb_obj_load(struct symb_objects *s, struct symb_obj *o)
{
	struct obj_load ld = {.s = s, .o = o};
	uint64_t t0;

	o->used = s->epoch;
	if (o->loaded)
		return;
	o->loaded = true;
	if (o->image) {
		load_image(s, o);
		return;
	}
	if (s->offline)
		return;
	t0 = lp_clock_ns(CLOCK_MONOTONIC);
	file_init(&ld.bin);
	file_init(&ld.dbg);
	if (open_binary(&ld)) {
		if (!(s->cache && load_by_memo(&ld)))
			load_verified(&ld);
		if (ld.key[0])
			o->key = strdup(ld.key);
		/* the images go: DWARF reads its file again if it needs it */
		keep_dwarf(&ld);
	}
	/* ld.claimed points into the probe: nothing uses it past here */
	file_drop(&ld.dbg);
	file_drop(&ld.bin);
	s->n.load_ns += lp_clock_ns(CLOCK_MONOTONIC) - t0;
}

void symb_obj_release(struct symb_objects *s, struct symb_obj *o)
{
	if (o->dwarf_src && s->ndwarf_open)
		s->ndwarf_open--; /* another object may keep its DWARF open now */
	symb_elf__free(o->elf);
	o->elf = NULL;
	symb_deltas__free(&o->deltas);
	o->have_deltas = false;
	/* libdw reads the source's handle until it is freed */
	symb_dwarf__free(o->dwarf);
	o->dwarf = NULL;
	dwarf_src_free(o->dwarf_src);
	o->dwarf_src = NULL;
	free(o->key);
	o->key = NULL;
	o->loaded = false;
	o->lines_loaded = false;
}
