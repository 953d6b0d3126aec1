// SPDX-License-Identifier: MIT
/*
 * The persistent symbol cache (see cache.h for the contract, and
 * schema/cache.sql for the tables and what each column means).
 *
 * Concurrency: every symbolizer process has its own connection to the one
 * file. WAL mode lets readers run beside one writer; writers queue on the
 * busy timeout. A put is one BEGIN IMMEDIATE transaction (delete, insert,
 * evict), so the byte total the triggers keep and the eviction order are
 * consistent across processes. A hit's last_used update is a write too; it
 * is skipped when the row is already the most recent one, and deferred:
 * up to CACHE_TOUCH_BATCH of them are made in one transaction, at the next
 * put (before it evicts), when the batch is full, or at close. A warm
 * symbolizer then takes no write lock per hit (with 64 KiB pages each was a
 * WAL page or more written). Flushing only waits a short time for the
 * write lock, because a lost update only makes the LRU order a little less
 * exact.
 *
 * Damage: the file is untrusted. At open, a file that is not a SQLite
 * database, carries another application_id or user_version, or fails the
 * structural check (cache_check) is moved aside to "<path>.corrupt" and a
 * fresh cache created. Later, any SQLITE_CORRUPT or SQLITE_NOTADB does the
 * same. A row whose size or checksum does not match its blob is deleted.
 *
 * The memo (cache.h) is a table of its own, outside the byte budget: a
 * put deletes the rows of other boots and keeps the SYMB_CACHE_MEMO_MAX most
 * recent ones. A hit writes nothing (a row's age is that of its put), so a
 * warm load reads only. Its rows have no trigger, so a put may REPLACE.
 *
 * One object is used by one thread at a time.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sqlite3.h>

#include "cache.h"
#include "lowprof/crc32c.h"
#include "lowprof/log.h"

/* schema/cache.sql, embedded by this folder's CMakeLists.txt; NUL-terminated. */
extern const char symb_cache_sql[];

#define CACHE_APPLICATION_ID 0x4c505343 /* "LPSC"; as in cache.sql */
#define CACHE_SCHEMA_VERSION 2		/* PRAGMA user_version; as in cache.sql */
#define CACHE_BUSY_MS	     5000
#define CACHE_OPEN_RETRY_MS  10 /* between attempts to open a busy database */
/* A hit's last_used update waits at most this long for the write lock. */
#define CACHE_TOUCH_BUSY_MS 100
/* Hits whose last_used updates wait for one transaction (see top). */
#define CACHE_TOUCH_BATCH 64
#define CACHE_PAGE_SIZE	  "65536"
/* The WAL is truncated back to 64 MiB after a checkpoint (a big put grows it). */
#define CACHE_WAL_LIMIT "67108864"
#define CACHE_BOOT_ID	"/proc/sys/kernel/random/boot_id"

/* user_version of a file found damaged when it could not be moved aside (cache_give_up) */
#define CACHE_DAMAGED_VERSION 0x44414d47 /* "DAMG" */

enum cache_stmt {
	ST_GET,
	ST_TOUCH,
	ST_DROP,
	ST_DEL_KEY,
	ST_INSERT,
	ST_INSERT_BLOB,
	ST_BYTES,
	ST_EVICT,
	ST_MEMO_GET,
	ST_MEMO_PUT,
	ST_MEMO_DROP,
	ST_MEMO_PURGE,
	ST_MEMO_TRIM,
	ST_COUNT,
};

static const char *const cache_sql[ST_COUNT] = {
	[ST_GET] = "SELECT e.id, e.version, e.size, e.checksum, e.last_used,"
		   " (SELECT max(last_used) FROM entries), b.id IS NOT NULL"
		   " FROM entries e LEFT JOIN blobs b ON b.id = e.id"
		   " WHERE e.key = ?1 AND e.kind = ?2",
	[ST_TOUCH] = "UPDATE entries SET last_used = (SELECT max(last_used) FROM entries) + 1"
		     " WHERE id = ?1",
	[ST_DROP] = "DELETE FROM entries WHERE id = ?1",
	[ST_DEL_KEY] = "DELETE FROM entries WHERE key = ?1 AND kind = ?2",
	[ST_INSERT] = "INSERT INTO entries (key, kind, version, size, checksum, created, last_used)"
		      " VALUES (?1, ?2, ?3, ?4, ?5, ?6,"
		      " coalesce((SELECT max(last_used) FROM entries), 0) + 1)",
	[ST_INSERT_BLOB] = "INSERT INTO blobs (id, data) VALUES (?1, ?2)",
	[ST_BYTES] = "SELECT value FROM meta WHERE name = 'bytes'",
	[ST_EVICT] = "DELETE FROM entries WHERE id ="
		     " (SELECT id FROM entries ORDER BY last_used, id LIMIT 1)",
	[ST_MEMO_GET] = "SELECT id, ident FROM memo WHERE boot = ?1 AND mnt = ?2 AND dev = ?3"
			" AND ino = ?4 AND size = ?5 AND mtime = ?6 AND ctime = ?7",
	[ST_MEMO_PUT] =
		"INSERT OR REPLACE INTO memo (boot, mnt, dev, ino, size, mtime, ctime, ident)"
		" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[ST_MEMO_DROP] = "DELETE FROM memo WHERE id = ?1",
	[ST_MEMO_PURGE] = "DELETE FROM memo WHERE boot <> ?1",
	/* ids grow with each put: keeps the most recent, at most SYMB_CACHE_MEMO_MAX */
	[ST_MEMO_TRIM] = "DELETE FROM memo WHERE id <= (SELECT max(id) FROM memo) - ?1",
};

struct symb_cache {
	sqlite3 *db; /* NULL after a failed recovery: every call then fails */
	sqlite3_stmt *stmt[ST_COUNT];
	char *path;
	uint64_t budget;
	dev_t dev; /* the file opened, so that recovery never moves another one */
	ino_t ino;
	struct symb_cache_stats st;
	bool sealed;   /* symb_cache__seal: no file may be made or renamed any more */
	char msg[256]; /* SQLite's message for a failed open, kept past the ROLLBACK */
	int64_t touch[CACHE_TOUCH_BATCH]; /* rows hit since the last flush, in hit order */
	unsigned ntouch;
	char boot[40]; /* the boot id, "" when unknown: no memo */
};

static void cache_flush_touches(struct symb_cache *c);

/* The checksum column: CRC-32C (lowprof/crc32c.h). */
#define cache_crc lp_crc32c

static bool cache_rc_corrupt(int rc)
{
	rc &= 0xff;
	return rc == SQLITE_CORRUPT || rc == SQLITE_NOTADB;
}

static int cache_errno(int rc)
{
	switch (rc & 0xff) {
	case SQLITE_OK:
		return 0;
	case SQLITE_BUSY:
	case SQLITE_LOCKED:
		return -EBUSY;
	case SQLITE_NOMEM:
		return -ENOMEM;
	case SQLITE_FULL:
		return -ENOSPC;
	case SQLITE_READONLY:
		return -EROFS;
	case SQLITE_PERM:
	case SQLITE_AUTH:
		return -EPERM;
	case SQLITE_CANTOPEN:
		return -EACCES;
	case SQLITE_TOOBIG:
		return -E2BIG;
	case SQLITE_CORRUPT:
	case SQLITE_NOTADB:
		return -EBADMSG;
	default:
		return -EIO;
	}
}

static void cache_disconnect(struct symb_cache *c)
{
	int i;

	c->ntouch = 0; /* row ids of this file only */

	for (i = 0; i < ST_COUNT; i++) {
		sqlite3_finalize(c->stmt[i]);
		c->stmt[i] = NULL;
	}
	sqlite3_close(c->db);
	c->db = NULL;
}

/*
 * True if the database header says the file has more pages than it holds.
 * The header's page count is only valid when its version-valid-for number
 * equals the change counter, and only when no WAL holds newer pages; then a
 * shorter file lost its end (SQLite itself would only notice when a missing
 * page is read).
 */
static bool cache_truncated(struct symb_cache *c, int fd, const struct stat *st)
{
	uint8_t h[100];
	uint64_t pgsz, pages;
	char wal[PATH_MAX + 8];
	struct stat wst;

	if (pread(fd, h, sizeof(h), 0) != sizeof(h) || memcmp(h, "SQLite format 3", 16))
		return false; /* not SQLite at all is SQLite's to report */
	snprintf(wal, sizeof(wal), "%s-wal", c->path);
	if (stat(wal, &wst) == 0 && wst.st_size > 0)
		return false;
	if (memcmp(h + 24, h + 92, 4))
		return false;
	pgsz = (uint64_t)h[16] << 8 | h[17];
	if (pgsz == 1)
		pgsz = 65536;
	pages = (uint64_t)h[28] << 24 | h[29] << 16 | h[30] << 8 | h[31];
	return pages * pgsz > (uint64_t)st->st_size;
}

/*
 * Opens the file itself first: O_NOFOLLOW refuses a symlink planted in a
 * shared directory, O_CREAT with mode 0600 plus fchmod makes the mode
 * independent of the umask, and the owner check refuses a file someone else
 * prepared. SQLite gives the -wal and -shm files the database's mode; they
 * must not be symlinks either. Returns 0, -EBADMSG with *cause for a
 * truncated database, or a negative errno.
 */
static int cache_open_file(struct symb_cache *c, const char **cause)
{
	static const char *const sfx[] = {"-wal", "-shm"};
	char side[PATH_MAX];
	struct stat st;
	size_t i;
	int fd, err;

	fd = open(c->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = -errno;
		if (err == -ELOOP)
			lp_warn("cache: %s is a symbolic link; refusing it", c->path);
		else
			lp_warn("cache: cannot open %s: %s", c->path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	err = -EPERM;
	if (!S_ISREG(st.st_mode)) {
		lp_warn("cache: %s is not a regular file", c->path);
		goto out;
	}
	if (st.st_uid != geteuid()) {
		lp_warn("cache: %s belongs to uid %u, not to us; refusing it", c->path,
			(unsigned int)st.st_uid);
		goto out;
	}
	if ((st.st_mode & 07777) != 0600 && fchmod(fd, 0600) < 0) {
		err = -errno;
		lp_warn("cache: cannot chmod %s: %s", c->path, strerror(-err));
		goto out;
	}
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		struct stat sst;

		if ((size_t)snprintf(side, sizeof(side), "%s%s", c->path, sfx[i]) >= sizeof(side)) {
			err = -ENAMETOOLONG;
			goto out;
		}
		if (lstat(side, &sst) < 0)
			continue;
		if (!S_ISREG(sst.st_mode) || sst.st_uid != geteuid()) {
			lp_warn("cache: %s is not a regular file of ours; refusing the cache",
				side);
			err = S_ISLNK(sst.st_mode) ? -ELOOP : -EPERM;
			goto out;
		}
	}
	c->dev = st.st_dev;
	c->ino = st.st_ino;
	err = 0;
	if (cache_truncated(c, fd, &st)) {
		*cause = "file is truncated";
		err = -EBADMSG;
	}
out:
	/* Closed before SQLite opens the file: closing an fd drops its POSIX locks. */
	close(fd);
	return err;
}

/* Runs a statement returning one integer (or none: *v = 0). Returns the SQLite rc. */
static int cache_int(sqlite3 *db, const char *sql, int64_t *v)
{
	sqlite3_stmt *s;
	int rc;

	*v = 0;
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		*v = sqlite3_column_int64(s, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

/* Runs a statement returning one text value into buf. Returns the SQLite rc. */
static int cache_text(sqlite3 *db, const char *sql, char *buf, size_t len)
{
	sqlite3_stmt *s;
	int rc;

	buf[0] = '\0';
	rc = sqlite3_prepare_v2(db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW) {
		snprintf(buf, len, "%s", (const char *)sqlite3_column_text(s, 0) ?: "");
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
	sqlite3_finalize(s);
	return rc;
}

/*
 * Ends a transaction: commits if rc is SQLITE_OK, else keeps SQLite's
 * message and rolls back. Returns rc, or COMMIT's failure.
 */
static int cache_end_tx(struct symb_cache *c, int rc)
{
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		return rc;
	snprintf(c->msg, sizeof(c->msg), "%s", sqlite3_errmsg(c->db));
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return rc;
}

/*
 * Reads application_id and user_version from one snapshot: another process
 * may be creating the schema in between two separate reads.
 */
static int cache_ids(struct symb_cache *c, int64_t *appid, int64_t *ver)
{
	int rc;

	rc = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = cache_int(c->db, "PRAGMA application_id", appid);
	if (rc == SQLITE_OK)
		rc = cache_int(c->db, "PRAGMA user_version", ver);
	return cache_end_tx(c, rc);
}

/*
 * Creates the schema if the database is empty. Two processes may race to
 * create it: the check and the creation share one write transaction.
 */
static int cache_create_schema(struct symb_cache *c)
{
	int64_t ver, objs;
	int rc;

	rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = cache_int(c->db, "PRAGMA user_version", &ver);
	if (rc == SQLITE_OK)
		rc = cache_int(c->db, "SELECT count(*) FROM sqlite_schema", &objs);
	if (rc == SQLITE_OK && ver == 0 && objs == 0)
		rc = sqlite3_exec(c->db, symb_cache_sql, NULL, NULL, NULL);
	return cache_end_tx(c, rc);
}

/*
 * The start-up health check. PRAGMA quick_check reads every page, blob
 * overflow pages included: on a 500 MB cache that is seconds (see
 * schema/README.md). This checks what the cache cannot work without, in
 * time that grows with the number of entries, not with the blob bytes:
 *  - the header and schema (SQLite parses both on the first statement),
 *  - quick_check of the small tables, meta, entries and memo with their
 *    indexes (their pages are a few hundred bytes per row),
 *  - the byte total against the sizes,
 * and cache_truncated has compared the file's length with its header.
 * The blobs table is not walked: at 64 KiB pages a blob under ~64 KB lives
 * whole in its leaf page, so counting its rows read nearly the whole file
 * (75 MB read at every open of a 61 MB cache of 1,489 entries). A blob is
 * checked when it is read: a missing row is a miss ("no blob"), a broken
 * overflow chain is SQLITE_CORRUPT, and the size and checksum catch the
 * rest. A blob row without an entry, which only damage makes (the entry's
 * delete trigger removes its blob in the same transaction), costs space
 * and nothing else.
 * Runs inside one read transaction (other processes may be writing).
 * Returns the SQLite rc; *cause is set when the file is damaged.
 */
static int cache_check(struct symb_cache *c, const char **cause)
{
	static const char *const checks[] = {"PRAGMA quick_check(meta)",
					     "PRAGMA quick_check(entries)",
					     "PRAGMA quick_check(memo)"};
	char res[256];
	int64_t n;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(checks) / sizeof(checks[0]); i++) {
		rc = cache_text(c->db, checks[i], res, sizeof(res));
		if (rc != SQLITE_OK)
			return rc;
		if (strcmp(res, "ok")) {
			*cause = "quick_check failed";
			return SQLITE_CORRUPT;
		}
	}
	rc = cache_int(c->db,
		       "SELECT (SELECT value FROM meta WHERE name = 'bytes') IS"
		       " (SELECT total(size) FROM entries)",
		       &n);
	if (rc != SQLITE_OK)
		return rc;
	if (!n) {
		*cause = "byte total does not match the entries";
		return SQLITE_CORRUPT;
	}
	return SQLITE_OK;
}

/*
 * After the connection is set up the symbolizer's sandbox lets SQLite make
 * and remove no file, so it must need none: its -wal and -shm are opened
 * by the first transaction (cache_setup runs several) and, with
 * PERSIST_WAL, kept (emptied) when the last connection closes instead of
 * removed and made again at the next open; temporary tables, indices,
 * sorts and statement journals (a put's deletes) stay in memory, not in
 * files made and unlinked in /var/tmp. Returns the SQLite rc.
 */
static int cache_no_new_files(struct symb_cache *c)
{
	int persist = 1;
	int rc = sqlite3_file_control(c->db, "main", SQLITE_FCNTL_PERSIST_WAL, &persist);

	if (rc != SQLITE_OK)
		return rc;
	return sqlite3_exec(c->db, "PRAGMA temp_store = MEMORY", NULL, NULL, NULL);
}

/*
 * Sets up the connection on a file cache_open_file accepted: pragmas, the
 * schema if new, the identity and health checks, the statements. Returns
 * the SQLite rc; *cause is set when the file is damaged (rc CORRUPT).
 */
static int cache_setup(struct symb_cache *c, const char **cause)
{
	char mode[16];
	int64_t appid, ver;
	int rc, i;

	rc = sqlite3_open_v2(c->path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOFOLLOW, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = cache_no_new_files(c);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_extended_result_codes(c->db, 1);
	sqlite3_busy_timeout(c->db, CACHE_BUSY_MS);
	/* The first read parses the header: a file of garbage fails here (NOTADB). */
	rc = cache_ids(c, &appid, &ver);
	if (rc != SQLITE_OK)
		return rc;
	if ((appid || ver) && (appid != CACHE_APPLICATION_ID || ver != CACHE_SCHEMA_VERSION)) {
		/* an older schema's rows can all be computed again: start over */
		*cause = ver == CACHE_DAMAGED_VERSION ? "a symbolizer found it damaged"
			 : appid == CACHE_APPLICATION_ID && ver < CACHE_SCHEMA_VERSION
				 ? "a lowprof cache of an older schema version"
				 : "not a lowprof cache of this schema version";
		return SQLITE_CORRUPT;
	}
	/*
	 * Page size and journal mode are the database's, set before its first
	 * write. Large pages: a blob is a chain of overflow pages, read one
	 * page at a time, so 64 KiB pages read a 16 MB blob in 256 steps.
	 */
	if (!ver) {
		rc = sqlite3_exec(c->db, "PRAGMA page_size = " CACHE_PAGE_SIZE, NULL, NULL, NULL);
		if (rc != SQLITE_OK)
			return rc;
	}
	rc = cache_text(c->db, "PRAGMA journal_mode = WAL", mode, sizeof(mode));
	if (rc != SQLITE_OK)
		return rc;
	if (strcmp(mode, "wal")) {
		lp_warn("cache: %s: cannot use WAL mode (journal mode %s)", c->path, mode);
		return SQLITE_CANTOPEN;
	}
	rc = sqlite3_exec(c->db,
			  "PRAGMA synchronous = NORMAL;"
			  "PRAGMA journal_size_limit = " CACHE_WAL_LIMIT,
			  NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	if (!ver) {
		/* A new file, or a database without tables: make the schema. */
		rc = cache_create_schema(c);
		if (rc != SQLITE_OK)
			return rc;
		rc = cache_ids(c, &appid, &ver);
		if (rc != SQLITE_OK)
			return rc;
		if (appid != CACHE_APPLICATION_ID || ver != CACHE_SCHEMA_VERSION) {
			*cause = "a database of another application";
			return SQLITE_CORRUPT;
		}
	}
	rc = sqlite3_exec(c->db, "BEGIN", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	rc = cache_end_tx(c, cache_check(c, cause));
	if (rc != SQLITE_OK)
		return rc;
	for (i = 0; i < ST_COUNT; i++) {
		rc = sqlite3_prepare_v3(c->db, cache_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
					&c->stmt[i], NULL);
		if (rc != SQLITE_OK) {
			/* The tables are there but not as cache.sql made them. */
			if ((rc & 0xff) == SQLITE_ERROR) {
				*cause = "unexpected schema";
				rc = SQLITE_CORRUPT;
			}
			return rc;
		}
	}
	return cache_int(c->db, "SELECT value FROM meta WHERE name = 'bytes'",
			 (int64_t *)&c->st.bytes);
}

/*
 * Renames the damaged file and its WAL and shared-memory files to
 * "<name>.corrupt" (kept for inspection, replacing an older one). If the
 * path no longer names the file this connection opened, another process
 * already moved it and nothing is renamed.
 */
static int cache_move_aside(struct symb_cache *c, const char *cause)
{
	static const char *const sfx[] = {"", "-wal", "-shm"};
	char from[PATH_MAX], to[PATH_MAX + 16];
	struct stat st;
	size_t i;
	int err;

	cache_disconnect(c);
	if (lstat(c->path, &st) < 0 || st.st_dev != c->dev || st.st_ino != c->ino) {
		lp_warn("cache: %s is damaged (%s); another process replaced it already", c->path,
			cause);
		return 0;
	}
	for (i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++) {
		snprintf(from, sizeof(from), "%s%s", c->path, sfx[i]);
		snprintf(to, sizeof(to), "%s%s.corrupt", c->path, sfx[i]);
		if (rename(from, to) < 0 && errno != ENOENT) {
			err = -errno;
			lp_warn("cache: %s is damaged (%s) and cannot be moved aside: %s", c->path,
				cause, strerror(-err));
			return err;
		}
	}
	lp_warn("cache: %s is damaged (%s); moved to %s.corrupt, starting a new cache", c->path,
		cause, c->path);
	return 0;
}

/*
 * Opens the file and sets up the connection once. Returns 0, -EBADMSG with
 * *cause, or errno; a busy database is not reported unless warn_busy.
 */
static int cache_connect_once(struct symb_cache *c, char *cause, size_t len, bool warn_busy)
{
	const char *why = NULL;
	int err, rc;

	c->msg[0] = '\0';
	err = cache_open_file(c, &why);
	if (err == -EBADMSG)
		snprintf(cause, len, "%s", why);
	if (err)
		return err;
	rc = cache_setup(c, &why);
	if (rc == SQLITE_OK)
		return 0;
	if (cache_rc_corrupt(rc)) {
		snprintf(cause, len, "%s",
			 why
				 ?: c->msg[0] ? c->msg
			    : c->db	      ? sqlite3_errmsg(c->db)
					      : "corrupt");
		cache_disconnect(c);
		return -EBADMSG;
	}
	err = cache_errno(rc);
	if (err != -EBUSY || warn_busy)
		lp_warn("cache: cannot open %s: %s", c->path,
			c->msg[0] ? c->msg
			: c->db	  ? sqlite3_errmsg(c->db)
				  : sqlite3_errstr(rc));
	cache_disconnect(c);
	return err;
}

/*
 * cache_connect_once, again while the database is busy, up to
 * CACHE_BUSY_MS: a process creating the file or switching it to WAL holds
 * locks that SQLite reports at once (no busy handler), so several
 * symbolizers starting on a new cache together would fail to open it.
 */
static int cache_connect_wait(struct symb_cache *c, char *cause, size_t len)
{
	const struct timespec nap = {0, CACHE_OPEN_RETRY_MS * 1000000L};
	int err;

	for (int tries = CACHE_BUSY_MS / CACHE_OPEN_RETRY_MS;; tries--) {
		err = cache_connect_once(c, cause, len, tries <= 0);
		if (err != -EBUSY || tries <= 0)
			return err;
		nanosleep(&nap, NULL);
	}
}

/* Connects, moving a damaged file aside and starting over once. */
static int cache_connect(struct symb_cache *c)
{
	char cause[256];
	int err;

	err = cache_connect_wait(c, cause, sizeof(cause));
	if (err != -EBADMSG)
		return err;
	err = cache_move_aside(c, cause);
	if (err)
		return err;
	err = cache_connect_wait(c, cause, sizeof(cause));
	if (err == -EBADMSG)
		lp_warn("cache: %s: new cache is damaged too (%s)", c->path, cause);
	return err;
}

/*
 * Damage found once sealed: the file cannot be moved aside nor a new one
 * made now. It is marked (user_version, a write to the header page alone,
 * best effort) so that the next open moves it aside, and this object is
 * done with it: every call fails from here on, a miss to its callers.
 */
static void cache_give_up(struct symb_cache *c, const char *cause)
{
	char sql[48];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", CACHE_DAMAGED_VERSION);
	sqlite3_exec(c->db, sql, NULL, NULL, NULL);
	lp_warn("cache: %s is damaged (%s); not used for the rest of this run, and moved "
		"aside at the next start",
		c->path, cause);
	cache_disconnect(c);
}

/*
 * Handles a failed SQLite call: corruption moves the file aside and
 * reconnects (the object then works on the new file); other errors are
 * counted. msg is SQLite's message (NULL: the connection's last one).
 * Returns the error as a negative errno.
 */
static int cache_fail(struct symb_cache *c, int rc, const char *what, const char *msg)
{
	char cause[256];

	if (!msg)
		msg = sqlite3_errmsg(c->db);
	c->st.errors++;
	if (!cache_rc_corrupt(rc)) {
		lp_warn("cache: %s: %s: %s", c->path, what, msg);
		return cache_errno(rc);
	}
	snprintf(cause, sizeof(cause), "%s: %s", what, msg);
	if (c->sealed) {
		cache_give_up(c, cause);
		return -EBADMSG;
	}
	if (cache_move_aside(c, cause) == 0)
		cache_connect(c);
	return -EBADMSG;
}

/*
 * The boot id, which the memo's rows carry: mount ids and device numbers
 * mean something else after a reboot. Unknown (no /proc): no memo.
 */
static void cache_read_boot(struct symb_cache *c)
{
	char buf[64];
	ssize_t n = -1;
	int fd;

	c->boot[0] = '\0';
	fd = open(CACHE_BOOT_ID, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	/* 8-4-4-4-12 hex digits, then a newline */
	if (n < 36 || strspn(buf, "0123456789abcdef-") != 36)
		return;
	memcpy(c->boot, buf, 36);
	c->boot[36] = '\0';
}

int symb_cache__open(const char *path, uint64_t budget, struct symb_cache **out)
{
	struct symb_cache *c;
	int err;

	*out = NULL;
	if (!path || !*path)
		return -EINVAL;
	if (strlen(path) >= PATH_MAX - 16)
		return -ENAMETOOLONG;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->path = strdup(path);
	if (!c->path) {
		err = -ENOMEM;
		goto err_out;
	}
	c->budget = budget ? budget : SYMB_CACHE_DEFAULT_BUDGET;
	cache_read_boot(c);
	/* libcrypto reads its configuration: before the sandbox, as this is */
	if (symb_ident__init())
		lp_warn("cache: no SHA-256 in libcrypto; no binary will be cached");
	err = cache_connect(c);
	if (err)
		goto err_out;
	*out = c;
	return 0;
err_out:
	symb_cache__close(c);
	return err;
}

void symb_cache__close(struct symb_cache *c)
{
	if (!c)
		return;
	cache_flush_touches(c);
	cache_disconnect(c);
	free(c->path);
	free(c);
}

/* Deletes a row that failed validation. Errors are ignored: the row stays a miss. */
static void cache_drop(struct symb_cache *c, int64_t id, const char *key, const char *why)
{
	sqlite3_stmt *s = c->stmt[ST_DROP];
	int rc;

	lp_warn("cache: %s: dropping bad row for %s: %s", c->path, key, why);
	c->st.bad_rows++;
	sqlite3_bind_int64(s, 1, id);
	rc = sqlite3_step(s);
	sqlite3_reset(s);
	if (rc != SQLITE_DONE)
		cache_fail(c, rc, "delete bad row", NULL);
}

/* Steps a prepared statement to completion and resets it. Returns the SQLite rc. */
static int cache_run(sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * Makes the rows hit since the last flush the most recently used, in hit
 * order, inside the caller's write transaction. Returns the SQLite rc.
 */
static int cache_touch_in_tx(struct symb_cache *c)
{
	int rc = SQLITE_OK;

	for (unsigned i = 0; i < c->ntouch && rc == SQLITE_OK; i++) {
		sqlite3_bind_int64(c->stmt[ST_TOUCH], 1, c->touch[i]);
		rc = cache_run(c->stmt[ST_TOUCH]);
	}
	return rc;
}

/* The deferred updates in a transaction of their own; a busy lock skips them (see top). */
static void cache_flush_touches(struct symb_cache *c)
{
	int rc;

	if (!c->ntouch || !c->db)
		return;
	sqlite3_busy_timeout(c->db, CACHE_TOUCH_BUSY_MS);
	rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc == SQLITE_OK)
		rc = cache_touch_in_tx(c);
	if (rc == SQLITE_OK)
		rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK && !sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	sqlite3_busy_timeout(c->db, CACHE_BUSY_MS);
	c->ntouch = 0;
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		cache_fail(c, rc, "update last use", NULL);
}

/* Row id was hit: its last_used update waits for the next flush. */
static void cache_touch(struct symb_cache *c, int64_t id)
{
	for (unsigned i = 0; i < c->ntouch; i++) {
		if (c->touch[i] != id)
			continue;
		/* hit again: it moves to the end, as its update would have */
		memmove(&c->touch[i], &c->touch[i + 1], (c->ntouch - i - 1) * sizeof(c->touch[0]));
		c->touch[c->ntouch - 1] = id;
		return;
	}
	if (c->ntouch == CACHE_TOUCH_BATCH)
		cache_flush_touches(c);
	c->touch[c->ntouch++] = id;
}

/*
 * Steps a lookup statement: 0 on a row (s is not reset), else after a
 * reset -ENOENT (no row, counted in *misses; or a damaged file, moved
 * aside by cache_fail) or another negative errno.
 */
static int cache_lookup(struct symb_cache *c, sqlite3_stmt *s, uint64_t *misses, const char *what)
{
	int rc = sqlite3_step(s), err;

	if (rc == SQLITE_ROW)
		return 0;
	sqlite3_reset(s);
	if (rc == SQLITE_DONE) {
		(*misses)++;
		return -ENOENT;
	}
	err = cache_fail(c, rc, what, NULL);
	return err == -EBADMSG ? -ENOENT : err;
}

int symb_cache__get(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
		    uint32_t version, uint8_t **blob, size_t *len)
{
	int64_t id, size, crc, last, newest;
	sqlite3_blob *bh = NULL;
	uint8_t *copy = NULL;
	const char *bad = NULL;
	char msg[256];
	sqlite3_stmt *s;
	int rc, n, err;

	if (!c || !key || !blob || !len)
		return -EINVAL;
	if (!c->db)
		return -EIO;
	s = c->stmt[ST_GET];
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, kind);
	err = cache_lookup(c, s, &c->st.misses, "get");
	if (err)
		return err;
	id = sqlite3_column_int64(s, 0);
	size = sqlite3_column_int64(s, 2);
	crc = sqlite3_column_int64(s, 3);
	last = sqlite3_column_int64(s, 4);
	newest = sqlite3_column_int64(s, 5);
	if (sqlite3_column_int64(s, 1) != version) {
		sqlite3_reset(s);
		c->st.misses++;
		return -ENOENT;
	}
	if (!sqlite3_column_int(s, 6)) {
		bad = "no blob";
		goto bad_row;
	}
	/*
	 * Read straight into the copy (the statement keeps the snapshot): one
	 * copy instead of SQLite assembling the overflow pages first.
	 */
	rc = sqlite3_blob_open(c->db, "main", "blobs", "data", id, 0, &bh);
	if (rc == SQLITE_ERROR) {
		bad = "not a blob"; /* an integer, real or NULL */
		goto bad_row;
	}
	if (rc != SQLITE_OK)
		goto fail;
	n = sqlite3_blob_bytes(bh);
	if (n != size) {
		bad = "size does not match";
		goto bad_row;
	}
	copy = malloc(n ? n : 1);
	if (!copy) {
		err = -ENOMEM;
		goto out;
	}
	rc = sqlite3_blob_read(bh, copy, n, 0);
	if (rc != SQLITE_OK)
		goto fail;
	if (crc != (int64_t)cache_crc(copy, n)) {
		bad = "checksum does not match";
		goto bad_row;
	}
	sqlite3_blob_close(bh);
	bh = NULL;
	/* Ends the read transaction before the update takes the write lock. */
	sqlite3_reset(s);
	if (last < newest)
		cache_touch(c, id);
	c->st.hits++;
	*blob = copy;
	*len = n;
	return 0;
fail:
	/* SQLite reports a broken overflow chain here, as SQLITE_CORRUPT. */
	snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(c->db));
	sqlite3_blob_close(bh);
	sqlite3_reset(s);
	free(copy);
	err = cache_fail(c, rc, "get", msg);
	return err == -EBADMSG ? -ENOENT : err;
bad_row:
	sqlite3_blob_close(bh);
	sqlite3_reset(s);
	free(copy);
	cache_drop(c, id, key, bad);
	c->st.misses++;
	return -ENOENT;
out:
	sqlite3_blob_close(bh);
	sqlite3_reset(s);
	return err;
}

/* Deletes least-recently-used rows until the total is within the budget. */
static int cache_evict(struct symb_cache *c, int64_t *bytes)
{
	int rc;

	for (;;) {
		rc = sqlite3_step(c->stmt[ST_BYTES]);
		*bytes = rc == SQLITE_ROW ? sqlite3_column_int64(c->stmt[ST_BYTES], 0) : 0;
		sqlite3_reset(c->stmt[ST_BYTES]);
		if (rc != SQLITE_ROW)
			return rc == SQLITE_DONE ? SQLITE_CORRUPT : rc;
		if (*bytes <= (int64_t)c->budget)
			return SQLITE_OK;
		rc = cache_run(c->stmt[ST_EVICT]);
		if (rc != SQLITE_OK)
			return rc;
		if (sqlite3_changes(c->db) == 0)
			return SQLITE_CORRUPT; /* a total above zero with no rows */
		c->st.evictions++;
	}
}

/*
 * One put transaction. Returns the SQLite rc; on failure the transaction
 * may still be open, so that the caller can read the message first.
 */
static int cache_put_once(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
			  uint32_t version, const void *blob, size_t len, uint32_t crc)
{
	sqlite3_stmt *s;
	int64_t bytes = 0;
	int rc;

	rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	/* the hits so far count before this put evicts */
	rc = cache_touch_in_tx(c);
	if (rc != SQLITE_OK)
		goto err_out;
	s = c->stmt[ST_DEL_KEY];
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, kind);
	rc = cache_run(s);
	if (rc != SQLITE_OK)
		goto err_out;
	s = c->stmt[ST_INSERT];
	sqlite3_bind_text(s, 1, key, -1, SQLITE_STATIC);
	sqlite3_bind_int(s, 2, kind);
	sqlite3_bind_int64(s, 3, version);
	sqlite3_bind_int64(s, 4, (int64_t)len);
	sqlite3_bind_int64(s, 5, (int64_t)crc);
	sqlite3_bind_int64(s, 6, (int64_t)time(NULL));
	rc = cache_run(s);
	if (rc != SQLITE_OK)
		goto err_out;
	s = c->stmt[ST_INSERT_BLOB];
	sqlite3_bind_int64(s, 1, sqlite3_last_insert_rowid(c->db));
	rc = sqlite3_bind_blob64(s, 2, len ? blob : "", len, SQLITE_STATIC);
	if (rc == SQLITE_OK)
		rc = cache_run(s);
	sqlite3_clear_bindings(s); /* the blob is the caller's */
	if (rc != SQLITE_OK)
		goto err_out;
	rc = cache_evict(c, &bytes);
	if (rc != SQLITE_OK)
		goto err_out;
	rc = sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		goto err_out;
	c->st.bytes = bytes;
	c->ntouch = 0;
	return SQLITE_OK;
err_out:
	return rc;
}

int symb_cache__put(struct symb_cache *c, const char *key, enum symb_cache_kind kind,
		    uint32_t version, const void *blob, size_t len)
{
	char msg[256];
	uint32_t crc;
	int rc, err, attempt;

	if (!c || !key || (!blob && len))
		return -EINVAL;
	if (len > SYMB_CACHE_MAX_BLOB || len > c->budget)
		return -E2BIG;
	crc = cache_crc(blob, len);
	/* A second attempt only after corruption was found and a new file made. */
	for (attempt = 0; attempt < 2; attempt++) {
		if (!c->db)
			return -EIO;
		rc = cache_put_once(c, key, kind, version, blob, len, crc);
		if (rc == SQLITE_OK) {
			c->st.puts++;
			return 0;
		}
		snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(c->db));
		if (!sqlite3_get_autocommit(c->db))
			sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
		if ((rc & 0xff) == SQLITE_TOOBIG)
			return -E2BIG;
		err = cache_fail(c, rc, "put", msg);
		if (err != -EBADMSG)
			return err;
	}
	return -EBADMSG;
}

void symb_cache__seal(struct symb_cache *c)
{
	if (c)
		c->sealed = true;
}

void symb_cache__stats(const struct symb_cache *c, struct symb_cache_stats *st)
{
	*st = c->st;
}

char *symb_cache__key(char out[SYMB_CACHE_KEY_MAX], const struct symb_ident *bin,
		      const struct symb_ident *dbg)
{
	char b[SYMB_IDENT_HEX], d[SYMB_IDENT_HEX];

	if (dbg)
		snprintf(out, SYMB_CACHE_KEY_MAX, "c:%s+%s", symb_ident__hex(bin, b),
			 symb_ident__hex(dbg, d));
	else
		snprintf(out, SYMB_CACHE_KEY_MAX, "c:%s", symb_ident__hex(bin, b));
	return out;
}

/* Binds boot and the key's fields to ?1..?7 of s. */
static void cache_bind_memo(struct symb_cache *c, sqlite3_stmt *s, const struct symb_file_key *k)
{
	sqlite3_bind_text(s, 1, c->boot, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, 2, (int64_t)k->mnt);
	sqlite3_bind_int64(s, 3, (int64_t)k->dev);
	sqlite3_bind_int64(s, 4, (int64_t)k->ino);
	sqlite3_bind_int64(s, 5, (int64_t)k->size);
	sqlite3_bind_int64(s, 6, k->mtime_ns);
	sqlite3_bind_int64(s, 7, k->ctime_ns);
}

/* 0 when the memo can be used, -EIO (no database) or -ENOTSUP (the boot is unknown). */
static int cache_memo_usable(const struct symb_cache *c)
{
	if (!c->db)
		return -EIO;
	return c->boot[0] ? 0 : -ENOTSUP;
}

/* Deletes a memo row that failed validation. Errors are ignored: it stays a miss. */
static void cache_memo_drop(struct symb_cache *c, int64_t id)
{
	int rc;

	lp_warn("cache: %s: dropping bad memo row %" PRId64, c->path, id);
	c->st.bad_rows++;
	sqlite3_bind_int64(c->stmt[ST_MEMO_DROP], 1, id);
	rc = cache_run(c->stmt[ST_MEMO_DROP]);
	if (rc != SQLITE_OK)
		cache_fail(c, rc, "delete bad memo row", NULL);
}

int symb_cache__memo_get(struct symb_cache *c, const struct symb_file_key *k, struct symb_ident *id)
{
	sqlite3_stmt *s;
	int64_t row;
	bool good;
	int err;

	if (!c || !k || !id)
		return -EINVAL;
	err = cache_memo_usable(c);
	if (err)
		return err;
	s = c->stmt[ST_MEMO_GET];
	cache_bind_memo(c, s, k);
	err = cache_lookup(c, s, &c->st.memo_misses, "memo get");
	if (err)
		return err;
	row = sqlite3_column_int64(s, 0);
	good = sqlite3_column_type(s, 1) == SQLITE_BLOB &&
	       sqlite3_column_bytes(s, 1) == SYMB_IDENT_LEN;
	if (good)
		memcpy(id->b, sqlite3_column_blob(s, 1), SYMB_IDENT_LEN);
	sqlite3_reset(s);
	if (!good) {
		cache_memo_drop(c, row);
		c->st.memo_misses++;
		return -ENOENT;
	}
	c->st.memo_hits++;
	return 0;
}

/* One memo put transaction; the caller rolls back on failure. Returns the SQLite rc. */
static int cache_memo_put_once(struct symb_cache *c, const struct symb_file_key *k,
			       const struct symb_ident *id)
{
	sqlite3_stmt *s = c->stmt[ST_MEMO_PUT];
	int rc;

	rc = sqlite3_exec(c->db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_text(c->stmt[ST_MEMO_PURGE], 1, c->boot, -1, SQLITE_STATIC);
	rc = cache_run(c->stmt[ST_MEMO_PURGE]);
	if (rc != SQLITE_OK)
		return rc;
	cache_bind_memo(c, s, k);
	sqlite3_bind_blob(s, 8, id->b, SYMB_IDENT_LEN, SQLITE_STATIC);
	rc = cache_run(s);
	if (rc != SQLITE_OK)
		return rc;
	sqlite3_bind_int64(c->stmt[ST_MEMO_TRIM], 1, SYMB_CACHE_MEMO_MAX);
	rc = cache_run(c->stmt[ST_MEMO_TRIM]);
	if (rc != SQLITE_OK)
		return rc;
	return sqlite3_exec(c->db, "COMMIT", NULL, NULL, NULL);
}

int symb_cache__memo_put(struct symb_cache *c, const struct symb_file_key *k,
			 const struct symb_ident *id)
{
	char msg[256];
	int rc;

	if (!c || !k || !id)
		return -EINVAL;
	rc = cache_memo_usable(c);
	if (rc)
		return rc;
	rc = cache_memo_put_once(c, k, id);
	if (rc == SQLITE_OK) {
		c->st.memo_puts++;
		return 0;
	}
	snprintf(msg, sizeof(msg), "%s", sqlite3_errmsg(c->db));
	if (!sqlite3_get_autocommit(c->db))
		sqlite3_exec(c->db, "ROLLBACK", NULL, NULL, NULL);
	return cache_fail(c, rc, "memo put", msg);
}
