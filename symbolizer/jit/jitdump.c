// SPDX-License-Identifier: MIT
/*
 * JIT dump parser (jitdump.h): a state machine over the file's bytes. Each
 * step wants a number of bytes into buf (the file header's fixed part, a
 * record's header, a record's kept prefix) or skips a number of bytes (the
 * rest of the header, of a record: its code); a chunk boundary may fall
 * anywhere, and no length is trusted before it is checked against what it
 * must contain.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "jitdump.h"

enum jd_state {
	JD_FILE_HDR, /* buf: the header's fixed part */
	JD_REC_HDR,  /* buf: a record's header */
	JD_REC_BODY, /* buf: a record's kept prefix (header included) */
	JD_SKIP,     /* skip bytes, then JD_REC_HDR */
	JD_BROKEN,   /* framing lost: nothing until offset 0 */
};

struct symb_jitdump {
	enum jd_state state;
	bool swap;	 /* the file's byte order is not ours */
	uint64_t next;	 /* file offset the next chunk should start at */
	uint64_t skip;	 /* JD_SKIP: bytes left to skip */
	uint32_t rec_id; /* JD_REC_BODY: the record's id and size */
	uint32_t rec_size;
	bool named;	     /* JIT_CODE_LOAD: need covers its name, not just its fixed part */
	uint32_t have, need; /* bytes in buf, bytes wanted there */
	unsigned char buf[SYMB_JITDUMP_MAX_PREFIX];
	struct symb_jitdump_stats st;
};

struct symb_jitdump *symb_jitdump__new(void)
{
	struct symb_jitdump *d = calloc(1, sizeof(*d));

	if (d)
		d->need = SYMB_JITDUMP_FILE_HDR;
	return d;
}

void symb_jitdump__free(struct symb_jitdump *d)
{
	free(d);
}

const struct symb_jitdump_stats *symb_jitdump__stats(const struct symb_jitdump *d)
{
	return &d->st;
}

static uint32_t u32_at(const struct symb_jitdump *d, uint32_t off)
{
	uint32_t v;

	memcpy(&v, d->buf + off, sizeof(v));
	return d->swap ? __builtin_bswap32(v) : v;
}

static uint64_t u64_at(const struct symb_jitdump *d, uint32_t off)
{
	uint64_t v;

	memcpy(&v, d->buf + off, sizeof(v));
	return d->swap ? __builtin_bswap64(v) : v;
}

static void start_over(struct symb_jitdump *d)
{
	d->state = JD_FILE_HDR;
	d->swap = false;
	d->next = 0;
	d->skip = 0;
	d->have = 0;
	d->need = SYMB_JITDUMP_FILE_HDR;
}

static void broken(struct symb_jitdump *d)
{
	d->state = JD_BROKEN;
	d->st.bad_files++;
}

static void skip_then_record(struct symb_jitdump *d, uint64_t n)
{
	d->state = JD_SKIP;
	d->skip = n;
	d->have = 0;
	d->need = SYMB_JITDUMP_REC_HDR;
}

/* The file header's fixed part is in buf. */
static void file_header(struct symb_jitdump *d)
{
	uint32_t magic, size;

	memcpy(&magic, d->buf, sizeof(magic));
	if (magic == __builtin_bswap32(SYMB_JITDUMP_MAGIC))
		d->swap = true;
	else if (magic != SYMB_JITDUMP_MAGIC)
		return broken(d);
	size = u32_at(d, 8); /* total_size: the header's, with what follows its fields */
	if (size < SYMB_JITDUMP_FILE_HDR || size > SYMB_JITDUMP_MAX_FILE_HDR)
		return broken(d);
	skip_then_record(d, size - SYMB_JITDUMP_FILE_HDR);
}

/* A record's header is in buf: what of it to keep. */
static void record_header(struct symb_jitdump *d)
{
	uint32_t want;

	d->rec_id = u32_at(d, 0);
	d->rec_size = u32_at(d, 4);
	if (d->rec_size < SYMB_JITDUMP_REC_HDR) {
		d->st.bad_records++;
		return broken(d); /* where the next record starts is unknown */
	}
	d->named = false;
	if (d->rec_id == SYMB_JITDUMP_CODE_LOAD)
		want = SYMB_JITDUMP_LOAD_FIXED; /* then its name: record_body */
	else if (d->rec_id == SYMB_JITDUMP_CODE_MOVE)
		want = SYMB_JITDUMP_MOVE_FIXED;
	else
		want = SYMB_JITDUMP_REC_HDR;
	if (want > d->rec_size)
		want = d->rec_size;
	if (want == SYMB_JITDUMP_REC_HDR) {
		if (d->rec_id != SYMB_JITDUMP_CODE_LOAD && d->rec_id != SYMB_JITDUMP_CODE_MOVE)
			d->st.skipped++;
		else
			d->st.bad_records++;
		return skip_then_record(d, d->rec_size - SYMB_JITDUMP_REC_HDR);
	}
	d->state = JD_REC_BODY;
	d->need = want; /* buf keeps the header: have stays */
}

/* JIT_CODE_LOAD: buf[0..have), the record's first bytes. */
static int code_load(struct symb_jitdump *d, struct symb_jit *j)
{
	uint64_t addr, size, name_end;
	const unsigned char *name, *nul;

	if (d->have < SYMB_JITDUMP_LOAD_FIXED + 1)
		goto bad;
	addr = u64_at(d, 32); /* code_addr: pid, tid, vma before it */
	size = u64_at(d, 40); /* code_size; code_index at 48 */
	/* the name is between the fixed part and the code, NUL-terminated */
	if (size > d->rec_size - SYMB_JITDUMP_LOAD_FIXED - 1)
		goto bad;
	name_end = d->rec_size - size;
	if (name_end > d->have)
		name_end = d->have; /* a longer name: no NUL in what was kept */
	name = d->buf + SYMB_JITDUMP_LOAD_FIXED;
	nul = memchr(name, '\0', name_end - SYMB_JITDUMP_LOAD_FIXED);
	if (!nul || nul == name || !size || addr > UINT64_MAX - size ||
	    memchr(name, '\n', (size_t)(nul - name)))
		goto bad;
	d->st.loads++;
	return symb_jit__add(j, addr, size, (const char *)name, (size_t)(nul - name));
bad:
	d->st.bad_records++;
	return 0;
}

/* JIT_CODE_MOVE: the symbol at old_code_addr, again at new_code_addr. */
static int code_move(struct symb_jitdump *d, struct symb_jit *j)
{
	char name[SYMB_JITDUMP_MAX_NAME];
	uint64_t from, to, size, start;
	const char *n;
	uint32_t len;

	if (d->have < SYMB_JITDUMP_MOVE_FIXED) {
		d->st.bad_records++;
		return 0;
	}
	from = u64_at(d, 32); /* pid, tid, vma before it */
	to = u64_at(d, 40);
	size = u64_at(d, 48); /* code_index at 56 */
	if (!size || to > UINT64_MAX - size) {
		d->st.bad_records++;
		return 0;
	}
	if (symb_jit__lookup(j, from, &n, &len, &start) != 1 || len > sizeof(name)) {
		d->st.skipped++; /* code it does not know (or a perf map name too long) */
		return 0;
	}
	memcpy(name, n, len); /* n is the table's: the add may move it */
	d->st.moves++;
	return symb_jit__add(j, to, size, name, len);
}

/* buf holds the record's kept prefix. */
static int record_body(struct symb_jitdump *d, struct symb_jit *j)
{
	int err;

	if (d->rec_id == SYMB_JITDUMP_CODE_LOAD && !d->named) {
		/* the fixed part: the name lies between it and code_size bytes of code */
		uint64_t size = u64_at(d, 40);

		d->named = true;
		if (d->rec_size > SYMB_JITDUMP_LOAD_FIXED &&
		    size <= d->rec_size - SYMB_JITDUMP_LOAD_FIXED - 1) {
			uint64_t name_end = d->rec_size - size;

			d->need = name_end < SYMB_JITDUMP_MAX_PREFIX ? (uint32_t)name_end
								     : SYMB_JITDUMP_MAX_PREFIX;
			return 0;
		}
		/* too short for a name: code_load counts it */
	}
	err = d->rec_id == SYMB_JITDUMP_CODE_LOAD ? code_load(d, j) : code_move(d, j);

	skip_then_record(d, (uint64_t)d->rec_size - d->need);
	return err;
}

int symb_jitdump__feed(struct symb_jitdump *d, struct symb_jit *j, uint64_t offset,
		       const char *data, size_t len)
{
	const char *p = data, *end = data + len;
	int err = 0;

	if (!len)
		return 0;
	if (offset == 0 && d->next) {
		start_over(d);
		d->st.restarts++;
	}
	if (offset < d->next) {
		uint64_t dup = d->next - offset;

		if (dup >= len) {
			d->st.dup_bytes += len;
			return 0;
		}
		d->st.dup_bytes += dup;
		p += dup;
	} else if (offset > d->next) {
		uint64_t gap = offset - d->next;

		d->st.gap_bytes += gap;
		if (d->state == JD_SKIP && gap <= d->skip)
			d->skip -= gap; /* the bytes lost were to be skipped anyway */
		else if (d->state != JD_BROKEN)
			broken(d);
	}
	d->next = offset + len;
	while (p < end && d->state != JD_BROKEN) {
		size_t n = (size_t)(end - p);

		if (d->state == JD_SKIP) {
			if (n > d->skip)
				n = (size_t)d->skip;
			p += n;
			d->skip -= n;
			if (!d->skip)
				d->state = JD_REC_HDR;
			continue;
		}
		if (n > d->need - d->have)
			n = d->need - d->have;
		memcpy(d->buf + d->have, p, n);
		d->have += (uint32_t)n;
		p += n;
		if (d->have < d->need)
			break;
		if (d->state == JD_FILE_HDR)
			file_header(d);
		else if (d->state == JD_REC_HDR)
			record_header(d);
		else if ((err = record_body(d, j)) != 0)
			break;
	}
	return err;
}
