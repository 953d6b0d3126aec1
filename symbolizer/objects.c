// SPDX-License-Identifier: MIT
/*
 * Loading what the symbolizer knows about a mapped binary: its symbols and
 * PT_LOAD segments (elfsym.h), its stack-delta table (cfi.h), and at build
 * time its DWARF (dwarf.h). Symbols and deltas come from the SQLite cache
 * when it has them under the binary's build-id (or path, size and mtime);
 * otherwise they are parsed from the file and stored.
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
#include "dwarf.h"
#include "lowprof/files.h"
#include "lowprof/log.h"
#include "symb_int.h"

/* Objects whose DWARF stays open (each holds a descriptor or two). */
#define SYMB_MAX_DWARF_OPEN 256
/* How long to wait for the collector's answer to a file request. */
#define FILES_WAIT_MS 2000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

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
 * Replay: the file with the mapped build-id, at the recorded path or under
 * a debug dir as .build-id/xx/rest. Without a recorded build-id, the file
 * at the path if it is the mapped one by device and inode, which only holds
 * on the host that was profiled. Returns an fd, or -ESTALE after saying,
 * once per object, what was missing.
 */
static int open_replay_file(struct symb_state *s, struct symb_obj *o, struct stat *st)
{
	char want[2 * LPS_MAX_BUILD_ID + 1], got[2 * LPS_MAX_BUILD_ID + 1],
		shown[SYMB_NAME_PRINT_MAX + 4];
	int fd, path_err;

	symb_sanitize_name(shown, sizeof(shown), o->path);
	if (!o->want_id_len) {
		fd = path_is_plain(o->path) ? open_checked(o->path, o, st) : -EINVAL;
		if (fd >= 0)
			return fd;
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
	if (path_is_plain(o->path)) {
		fd = open_checked(o->path, NULL, st);
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
static int ask_collector(struct symb_state *s, const struct symb_obj *o, struct stat *st)
{
	struct lp_file_req q = {.magic = LP_FILE_REQ_MAGIC,
				.id = ((uint32_t)getpid() << 12) ^ ++s->files_next_id,
				.pid = o->pid,
				.dev_major = o->dev_major,
				.dev_minor = o->dev_minor,
				.inode = o->inode};
	uint64_t deadline = now_ns() + FILES_WAIT_MS * 1000000ull;
	int err;

	s->files.asked++;
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
		uint64_t now = now_ns();
		int fd[1], nfds;
		ssize_t n;

		if (now >= deadline) {
			s->files.timeouts++;
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
			s->files.refused++;
			return r.err < 0 && r.err > -4096 ? r.err : -EIO;
		}
		/* the collector checked; so do we: the mapped file, regular */
		if (fstat(fd[0], st) || !is_mapped_file(st, o)) {
			close(fd[0]);
			s->files.refused++;
			return -ESTALE;
		}
		s->files.received++;
		return fd[0];
	}
}

/*
 * Opens an object's file: at its path, then through the mapping process's
 * root (other mount namespaces, when we are allowed to), then from the
 * collector. Returns an fd or -errno.
 */
static int open_obj_file(struct symb_state *s, const struct symb_obj *o, struct stat *st)
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

/* Cache key: "b:<build-id>", else "p:<path>:<size>:<mtime ns>". 0 or -ENAMETOOLONG. */
static int cache_key(const struct symb_obj *o, const struct stat *st, char *key, size_t cap)
{
	int n;

	if (o->build_id[0])
		n = snprintf(key, cap, "b:%s", o->build_id);
	else
		n = snprintf(key, cap, "p:%s:%lld:%lld", o->path, (long long)st->st_size,
			     (long long)st->st_mtim.tv_sec * 1000000000ll + st->st_mtim.tv_nsec);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

/* The separate debug file of the object's build-id, if a debug dir has one. */
static Elf *open_debug_file(struct symb_state *s, const uint8_t *id, size_t idlen, int *fd_out)
{
	*fd_out = -1;
	if (!idlen)
		return NULL;
	for (size_t i = 0; s->debug_dirs && s->debug_dirs[i]; i++) {
		int fd = symb_debug_file_open(s->debug_dirs[i], id, idlen);
		Elf *e;

		if (fd < 0)
			continue;
		e = elf_begin(fd, ELF_C_READ, NULL);
		if (e && elf_kind(e) == ELF_K_ELF) {
			*fd_out = fd;
			return e;
		}
		elf_end(e);
		close(fd);
	}
	return NULL;
}

static void load_symbols(struct symb_state *s, struct symb_obj *o, const char *key, Elf *elf,
			 Elf *dbg)
{
	uint8_t *blob = NULL;
	size_t len = 0;

	if (key && s->cache &&
	    symb_cache__get(s->cache, key, SYMB_CACHE_SYMBOLS, SYMB_ELF_BLOB_VERSION, &blob,
			    &len) == 0) {
		o->elf = symb_elf__decode(blob, len);
		free(blob);
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

static void load_deltas(struct symb_state *s, struct symb_obj *o, const char *key, Elf *elf,
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

static void keep_dwarf(struct symb_state *s, struct symb_obj *o, int fd, Elf *elf, int dbg_fd,
		       Elf *dbg)
{
	if (s->ndwarf_open >= SYMB_MAX_DWARF_OPEN)
		return;
	o->dwarf = symb_dwarf__open(elf, dbg);
	if (!o->dwarf)
		return;
	/* libdw reads lazily from these until symb_dwarf__free */
	o->elf_h = elf;
	o->fd = fd;
	o->dbg_h = dbg;
	o->dbg_fd = dbg_fd;
	s->ndwarf_open++;
}

void symb_obj_load(struct symb_state *s, struct symb_obj *o)
{
	char key[LPS_MAX_PATH + 64], shown[SYMB_NAME_PRINT_MAX + 4];
	const void *id = NULL;
	Elf *elf = NULL, *dbg = NULL;
	int fd, dbg_fd = -1;
	uint64_t t0;
	struct stat st;
	ssize_t idlen;

	if (o->loaded)
		return;
	o->loaded = true;
	o->fd = o->dbg_fd = -1;
	if (s->offline)
		return;
	t0 = now_ns();
	fd = s->replay ? open_replay_file(s, o, &st) : open_obj_file(s, o, &st);
	if (fd < 0 && s->replay) {
		s->n.load_ns += now_ns() - t0;
		return;
	}
	if (fd < 0) {
		lp_debug("symbols: %s: %s", symb_sanitize_name(shown, sizeof(shown), o->path),
			 fd == -ESTALE	 ? "not the file that was mapped"
			 : fd == -EINVAL ? "not a plain absolute path"
					 : strerror(-fd));
		s->n.unreadable_objs++;
		return;
	}
	/*
	 * ELF_C_READ reads with pread into libelf's buffers: a file truncated
	 * while it is read gives an error, not SIGBUS.
	 */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF) {
		lp_debug("symbols: %s: not an ELF file",
			 symb_sanitize_name(shown, sizeof(shown), o->path));
		goto done;
	}
	idlen = dwelf_elf_gnu_build_id(elf, &id);
	if (idlen > 0 && idlen <= 40)
		hex_id(o->build_id, id, (size_t)idlen);
	/* replaced in place since the collector read the maps: not the mapped file */
	if (o->want_id_len &&
	    (idlen != (ssize_t)o->want_id_len || memcmp(id, o->want_id, o->want_id_len))) {
		lp_debug("symbols: %s: its build-id is not the one mapped",
			 symb_sanitize_name(shown, sizeof(shown), o->path));
		o->build_id[0] = '\0';
		s->n.mismatched_objs++;
		o->not_found = true;
		goto done;
	}
	dbg = open_debug_file(s, id, idlen > 0 && idlen <= 40 ? (size_t)idlen : 0, &dbg_fd);
	/*
	 * tables built with a separate debug file hold more (local symbols,
	 * .debug_frame): they are kept apart from those built without, so a
	 * run's result never depends on what another run's debug dirs found
	 */
	if (cache_key(o, &st, key, sizeof(key)) || (dbg && strlen(key) + 5 > sizeof(key)))
		key[0] = '\0';
	else if (dbg)
		strcat(key, ":dbg");
	load_symbols(s, o, key[0] ? key : NULL, elf, dbg);
	load_deltas(s, o, key[0] ? key : NULL, elf, dbg);
	keep_dwarf(s, o, fd, elf, dbg_fd, dbg);
done:
	if (!o->dwarf) {
		elf_end(dbg);
		if (dbg_fd >= 0)
			close(dbg_fd);
		elf_end(elf);
		close(fd);
	}
	s->n.load_ns += now_ns() - t0;
}

void symb_obj_release(struct symb_obj *o)
{
	symb_elf__free(o->elf);
	o->elf = NULL;
	symb_deltas__free(&o->deltas);
	symb_dwarf__free(o->dwarf);
	o->dwarf = NULL;
	if (o->loaded && o->dbg_h)
		elf_end(o->dbg_h);
	if (o->loaded && o->elf_h)
		elf_end(o->elf_h);
	if (o->loaded && o->dbg_fd >= 0)
		close(o->dbg_fd);
	if (o->loaded && o->fd >= 0)
		close(o->fd);
	o->elf_h = o->dbg_h = NULL;
	o->fd = o->dbg_fd = -1;
}
