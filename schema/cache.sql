-- SPDX-License-Identifier: MIT
-- The symbolizer's persistent cache (symbolizer/cache.c), schema version 2.
--
-- Run once, in one transaction, on an empty database. cache.c embeds this
-- file at build time; it then checks application_id and user_version at
-- every open: another value means "not our cache" and the file is moved
-- aside. Any change to the tables below must bump user_version (and the
-- constant in cache.c), which makes existing caches start over: they only
-- hold data that can be computed again.
--
-- Metadata and blob bytes are in two tables on purpose: the frequent writes
-- (last_used on every hit, the eviction scan) then touch small rows only,
-- never a blob's overflow pages, which SQLite would otherwise read and
-- rewrite with the row.
--
-- Version 2 keys every blob by the verified content identity of the files
-- it was built from (symbolizer/ident.h), never by the build-id a binary
-- claims (version 1's "b:<build-id>" keys let one binary name another's
-- frames), and adds the memo.

PRAGMA application_id = 1280332611; -- 0x4c505343, "LPSC"
PRAGMA user_version = 2;

-- Counters kept by the triggers below, so that nothing has to scan.
--   name 'bytes': sum of entries.size, the bytes held against the budget
CREATE TABLE meta (
	name  TEXT PRIMARY KEY NOT NULL,
	value INTEGER NOT NULL
);
INSERT INTO meta (name, value) VALUES ('bytes', 0);

-- One row per cached blob.
--   key       the content the blob was built from: "c:<B>" for a binary
--             alone, "c:<B>+<D>" for a binary with its separate debug file,
--             B and D the SHA-256 content identities (64 hex digits) of
--             what was read of each file (see cache.h, ident.h)
--   kind      enum symb_cache_kind: 1 symbol table, 2 stack deltas, 3 DWARF
--             results by address, 4 whether the debug file D belongs to
--             the binary B (a new kind needs no new version: older
--             symbolizers never ask for it, and its rows are evicted as any)
--   version   the blob format's version (its owner's *_BLOB_VERSION); a
--             reader asking for another version gets a miss
--   size      length of blobs.data in bytes, checked on every read
--   checksum  CRC-32C (Castagnoli) of blobs.data, checked on every read
--   created   unix time (seconds) of the put, for people reading the file
--   last_used logical clock: 1 + the greatest last_used in the table at
--             the time of the put or hit; the smallest is evicted first
-- A put replaces the row of the same (key, kind), whatever its version.
CREATE TABLE entries (
	id        INTEGER PRIMARY KEY,
	key       TEXT NOT NULL,
	kind      INTEGER NOT NULL,
	version   INTEGER NOT NULL,
	size      INTEGER NOT NULL CHECK (size >= 0),
	checksum  INTEGER NOT NULL,
	created   INTEGER NOT NULL,
	last_used INTEGER NOT NULL,
	UNIQUE (key, kind)
);
-- Eviction order, and max(last_used) for the clock, without a scan.
CREATE INDEX entries_lru ON entries (last_used);

-- The blob bytes, one row per entries row (same id).
CREATE TABLE blobs (
	id   INTEGER PRIMARY KEY,
	data BLOB NOT NULL
);

-- The byte total and the blob follow every insert and delete of an entry.
-- cache.c never updates size in place and never uses INSERT OR REPLACE
-- (whose implicit delete fires no trigger without recursive_triggers).
CREATE TRIGGER entries_insert AFTER INSERT ON entries BEGIN
	UPDATE meta SET value = value + NEW.size WHERE name = 'bytes';
END;
CREATE TRIGGER entries_delete AFTER DELETE ON entries BEGIN
	UPDATE meta SET value = value - OLD.size WHERE name = 'bytes';
	DELETE FROM blobs WHERE id = OLD.id;
END;

-- The memo: which content identity a file had, by what the kernel says
-- identifies the file's current version, so that a warm load finds its
-- tables without reading the file. It serves lookups only: every blob is
-- stored under an identity computed from the bytes it was built from, so
-- a wrong memo row can only misname the file it describes. Why a row
-- cannot describe another file (cache.h): mnt is a mount id the kernel
-- never gives again until it reboots (boot tells boots apart), and a row
-- is made only for a file whose ctime was older than the read that hashed
-- it, and whose stat values did not change during that read.
--   boot      /proc/sys/kernel/random/boot_id; rows of other boots are
--             deleted by the next memo write
--   mnt, dev, ino, size, mtime, ctime (ns): statx of the file
--   ident     its content identity, 32 bytes, checked on every read
-- Rows are not counted against the byte budget: at most cache.h's
-- SYMB_CACHE_MEMO_MAX of them (~150 bytes each) are kept, the oldest deleted.
CREATE TABLE memo (
	id    INTEGER PRIMARY KEY,
	boot  TEXT NOT NULL,
	mnt   INTEGER NOT NULL,
	dev   INTEGER NOT NULL,
	ino   INTEGER NOT NULL,
	size  INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	ctime INTEGER NOT NULL,
	ident BLOB NOT NULL,
	UNIQUE (boot, mnt, dev, ino, size, mtime, ctime)
);
