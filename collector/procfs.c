// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "procfs.h"

struct pcur {
	const char *p, *end;
};

static int hex_u64(struct pcur *c, uint64_t *v)
{
	uint64_t x = 0;
	int digits = 0;

	while (c->p < c->end) {
		char ch = *c->p;
		unsigned d;

		if (ch >= '0' && ch <= '9')
			d = ch - '0';
		else if (ch >= 'a' && ch <= 'f')
			d = ch - 'a' + 10;
		else if (ch >= 'A' && ch <= 'F')
			d = ch - 'A' + 10;
		else
			break;
		if (++digits > 16)
			return -EBADMSG;
		x = (x << 4) | d;
		c->p++;
	}
	if (!digits)
		return -EBADMSG;
	*v = x;
	return 0;
}

static int dec_u64(struct pcur *c, uint64_t *v)
{
	uint64_t x = 0;
	int digits = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		uint64_t d = (uint64_t)(*c->p - '0');

		if (x > (UINT64_MAX - d) / 10)
			return -EBADMSG;
		x = x * 10 + d;
		digits++;
		c->p++;
	}
	if (!digits)
		return -EBADMSG;
	*v = x;
	return 0;
}

static int expect(struct pcur *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return -EBADMSG;
	c->p++;
	return 0;
}

#define TRY(x)                                                                                     \
	do {                                                                                       \
		if ((x))                                                                           \
			return -EBADMSG;                                                           \
	} while (0)

int coll_maps_parse_line(const char *line, size_t len, struct lps_mapping *m)
{
	struct pcur c = {line, line + len};
	uint64_t maj, min;

	if (len && line[len - 1] == '\n')
		c.end--;
	memset(m, 0, sizeof(*m));
	TRY(hex_u64(&c, &m->start));
	TRY(expect(&c, '-'));
	TRY(hex_u64(&c, &m->end));
	TRY(expect(&c, ' '));
	if (m->end < m->start || c.end - c.p < 4)
		return -EBADMSG;
	/* permissions: exactly "[r-][w-][x-][ps]" */
	if ((c.p[0] != 'r' && c.p[0] != '-') || (c.p[1] != 'w' && c.p[1] != '-') ||
	    (c.p[2] != 'x' && c.p[2] != '-') || (c.p[3] != 'p' && c.p[3] != 's'))
		return -EBADMSG;
	m->prot = (c.p[0] == 'r' ? LPS_PROT_R : 0) | (c.p[1] == 'w' ? LPS_PROT_W : 0) |
		  (c.p[2] == 'x' ? LPS_PROT_X : 0) | (c.p[3] == 'p' ? LPS_PROT_P : 0);
	c.p += 4;
	TRY(expect(&c, ' '));
	TRY(hex_u64(&c, &m->offset));
	TRY(expect(&c, ' '));
	TRY(hex_u64(&c, &maj));
	TRY(expect(&c, ':'));
	TRY(hex_u64(&c, &min));
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return -EBADMSG;
	m->dev_major = (uint32_t)maj;
	m->dev_minor = (uint32_t)min;
	TRY(expect(&c, ' '));
	TRY(dec_u64(&c, &m->inode));
	/* the inode ends the line or is followed by a space, never by the path */
	if (c.p < c.end && *c.p != ' ')
		return -EBADMSG;
	/* the kernel pads with spaces up to the path column */
	while (c.p < c.end && *c.p == ' ')
		c.p++;
	if (c.end - c.p > LPS_MAX_PATH)
		return -EBADMSG;
	/* the kernel escapes '\n'; a path can never hold NUL */
	if (memchr(c.p, '\n', c.end - c.p) || memchr(c.p, '\0', c.end - c.p))
		return -EBADMSG;
	m->path.ptr = c.p;
	m->path.len = (uint32_t)(c.end - c.p);
	return 0;
}

int coll_maps_next(const char **cur, const char *end, struct lps_mapping *m)
{
	const char *line = *cur, *nl;

	if (line >= end)
		return 0;
	nl = memchr(line, '\n', end - line);
	*cur = nl ? nl + 1 : end;
	return coll_maps_parse_line(line, (nl ? nl : end) - line, m) ? -EBADMSG : 1;
}

int coll_ksym_parse_line(const char *line, size_t len, struct lps_ksym *k)
{
	struct pcur c = {line, line + len};
	const char *name, *tab;
	char type;

	if (len && line[len - 1] == '\n')
		c.end--;
	memset(k, 0, sizeof(*k));
	k->module.ptr = "";
	TRY(hex_u64(&c, &k->addr));
	TRY(expect(&c, ' '));
	if (c.p >= c.end)
		return -EBADMSG;
	type = *c.p++;
	TRY(expect(&c, ' '));
	name = c.p;
	tab = memchr(name, '\t', c.end - name);
	k->name.ptr = name;
	k->name.len = (uint32_t)((tab ? tab : c.end) - name);
	if (!k->name.len || k->name.len > 512 || memchr(name, ' ', k->name.len))
		return -EBADMSG;
	if (tab) {
		const char *mod = tab + 1;

		if (c.end - mod < 2 || mod[0] != '[' || c.end[-1] != ']')
			return -EBADMSG;
		k->module.ptr = mod + 1;
		k->module.len = (uint32_t)(c.end - mod - 2);
	}
	return (type == 't' || type == 'T' || type == 'w' || type == 'W') ? 1 : 0;
}

/* The line of buf that starts with key, its text after the key; NULL if none. */
static const char *status_line(const char *buf, size_t len, const char *key, size_t *rest)
{
	size_t klen = strlen(key);

	for (size_t i = 0; i < len;) {
		const char *nl = memchr(buf + i, '\n', len - i);
		size_t eol = nl ? (size_t)(nl - buf) : len;

		if (eol - i >= klen && !memcmp(buf + i, key, klen)) {
			*rest = eol - i - klen;
			return buf + i + klen;
		}
		i = eol + 1;
	}
	return NULL;
}

/*
 * Decimal fields separated by blanks in p[0..n): the idx-th (or the last
 * with idx < 0) into *out. 0 or -EBADMSG.
 */
static int status_field(const char *p, size_t n, int idx, uint32_t *out)
{
	bool found = false;
	int k = 0;

	for (size_t i = 0; i < n;) {
		uint64_t v = 0;
		size_t d = 0;

		if (p[i] == ' ' || p[i] == '\t') {
			i++;
			continue;
		}
		for (; i < n && p[i] >= '0' && p[i] <= '9'; i++, d++) {
			v = v * 10 + (uint64_t)(p[i] - '0');
			if (v > UINT32_MAX)
				return -EBADMSG;
		}
		if (!d || (i < n && p[i] != ' ' && p[i] != '\t'))
			return -EBADMSG;
		if (idx < 0 || k == idx) {
			*out = (uint32_t)v;
			found = true;
		}
		k++;
	}
	return found ? 0 : -EBADMSG;
}

int coll_status_ids(const char *buf, size_t len, uint32_t *nspid, uint32_t *euid)
{
	const char *p;
	size_t n;

	p = status_line(buf, len, "NSpid:", &n);
	if (!p || status_field(p, n, -1, nspid))
		return -EBADMSG;
	p = status_line(buf, len, "Uid:", &n);
	if (!p || status_field(p, n, 1, euid))
		return -EBADMSG;
	return 0;
}

int coll_fdinfo_mnt_id(const char *buf, size_t len, uint32_t *mnt_id)
{
	const char *p = status_line(buf, len, "mnt_id:", &len);

	return p && !status_field(p, len, 0, mnt_id) ? 0 : -EBADMSG;
}

int coll_mountinfo_next(const char **cur, const char *end, uint32_t *mnt_id, struct lps_str *type)
{
	const char *p = *cur, *nl, *eol, *e, *t;

	if (p >= end)
		return 0;
	nl = memchr(p, '\n', (size_t)(end - p));
	eol = nl ? nl : end;
	*cur = nl ? nl + 1 : end;
	/* the first field, the mount id, ends at the first blank */
	for (e = p; e < eol && *e != ' '; e++)
		;
	if (status_field(p, (size_t)(e - p), 0, mnt_id))
		return -EBADMSG;
	/* " - " ends the optional tags; the type follows it */
	for (t = e; eol - t >= 3 && memcmp(t, " - ", 3); t++)
		;
	if (eol - t < 3)
		return -EBADMSG;
	t += 3;
	for (e = t; e < eol && *e != ' '; e++)
		;
	if (e == t)
		return -EBADMSG;
	*type = (struct lps_str){t, (uint32_t)(e - t)};
	return 1;
}

int coll_mountinfo_type(const char *buf, size_t len, uint32_t mnt_id, struct lps_str *type)
{
	const char *cur = buf, *end = buf + len;
	struct lps_str t;
	uint32_t id;
	int r;

	for (;;) {
		id = ~mnt_id; /* not the id asked for unless the line's first field is */
		r = coll_mountinfo_next(&cur, end, &id, &t);
		if (!r)
			break;
		if (r > 0 && id == mnt_id) {
			*type = t;
			return 0;
		}
		/* a malformed line of that id: the first field parsed, the rest not */
		if (r < 0 && id == mnt_id)
			return -EBADMSG;
	}
	return -ENOENT;
}

size_t coll_modules_strip_counts(char *buf, size_t len)
{
	size_t out = 0;
	int field = 0;

	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\n')
			field = 0;
		else if (buf[i] == ' ')
			field++;
		if (field != 2)
			buf[out++] = buf[i];
	}
	return out;
}

int coll_read_fd(int fd, size_t max, char **bufp, size_t *lenp)
{
	size_t cap = max < 65536 ? max : 65536, len = 0;
	char *buf;
	int err;

	buf = malloc(cap + 1);
	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (len == cap && cap < max) {
			char *nbuf;

			cap = cap > max / 2 ? max : cap * 2;
			nbuf = realloc(buf, cap + 1);
			if (!nbuf) {
				err = -ENOMEM;
				goto err_out;
			}
			buf = nbuf;
		}
		/*
		 * At max, the byte kept for the NUL also takes one more byte of
		 * the file: only a read can tell a file of exactly max bytes
		 * (st_size is 0 in procfs) from a longer one.
		 */
		n = read(fd, buf + len, cap - len + (cap == max));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			goto err_out;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > max) {
			err = -EFBIG;
			goto err_out;
		}
	}
	buf[len] = '\0';
	*bufp = buf;
	*lenp = len;
	return 0;
err_out:
	free(buf);
	return err;
}

int coll_parse_pids(const char *buf, size_t len, pid_t *out, size_t *n, size_t cap)
{
	const char *p = buf, *end = buf + len;

	while (end > p && (end[-1] == '\n' || end[-1] == ' '))
		end--;
	while (p < end) {
		uint64_t v = 0;
		const char *start = p;

		while (p < end && *p >= '0' && *p <= '9' && p - start < 10)
			v = v * 10 + (uint64_t)(*p++ - '0');
		if (p == start || v == 0 || v > INT_MAX || (p < end && *p != ' '))
			return -EBADMSG;
		if (*n >= cap)
			return -ENOSPC;
		out[(*n)++] = (pid_t)v;
		if (p < end)
			p++;
	}
	return 0;
}

int coll_read_file(const char *path, size_t max, char **bufp, size_t *lenp)
{
	int fd, err;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = coll_read_fd(fd, max, bufp, lenp);
	close(fd);
	return err;
}

int coll_maps_build_id(int maps_fd, const struct lps_mapping *m, uint8_t *out)
{
	uint8_t id[LPS_MAX_BUILD_ID];
	struct procmap_query q = {
		.size = sizeof(q),
		/*
		 * Without COVERING_OR_NEXT: the mapping that holds start or
		 * none, never the next one.
		 */
		.query_flags = PROCMAP_QUERY_VMA_EXECUTABLE | PROCMAP_QUERY_FILE_BACKED_VMA,
		.query_addr = m->start,
		.build_id_addr = (uintptr_t)id,
		.build_id_size = sizeof(id),
	};

	if (ioctl(maps_fd, PROCMAP_QUERY, &q) < 0) {
		int err = -errno;

		if (err == -ENOTTY || err == -EINVAL || err == -EOPNOTSUPP)
			return -EOPNOTSUPP;
		return err;
	}
	/* the maps were read earlier: the answer must be about the same mapping */
	if (q.vma_start != m->start || q.vma_end != m->end || q.inode != m->inode ||
	    q.dev_major != m->dev_major || q.dev_minor != m->dev_minor)
		return -ESTALE;
	if (q.build_id_size > LPS_MAX_BUILD_ID)
		return -EBADMSG; /* the kernel writes at most the size it was given */
	memcpy(out, id, q.build_id_size);
	return (int)q.build_id_size;
}
