// SPDX-License-Identifier: MIT
/*
 * The collector's text parsers on arbitrary bytes: the whole input as a
 * /proc/PID/maps buffer, each of its lines as a /proc/kallsyms line, the
 * input as a CPU list, as a list of child pids and as /proc/modules (its
 * use counts stripped in place: never longer, the rest in order, no byte
 * of a line's third field kept). Every returned string is
 * read byte by byte so ASan sees any pointer outside the input, and the
 * parsers' contracts (ranges, lengths, ascending CPUs, pids > 0, counts
 * within the room) are checked with abort(). Also as /proc/PID/fdinfo/FD
 * and /proc/PID/mountinfo (the type of every mount id the input starts a
 * line with, and of a few others).
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lowprof/cpus.h"
#include "procfs.h"

static volatile uint64_t sink;

static void touch(struct lps_str s, const char *lo, const char *hi)
{
	/* the module of a core-kernel symbol is a static "" outside the input */
	if (s.len && (s.ptr < lo || s.ptr + s.len > hi))
		abort();
	for (uint32_t i = 0; i < s.len; i++)
		sink += (uint8_t)s.ptr[i];
}

static void fuzz_maps(const char *buf, size_t size)
{
	const char *cur = buf, *end = buf + size;
	struct lps_mapping m;
	size_t lines = 0;
	int ret;

	while ((ret = coll_maps_next(&cur, end, &m)) != 0) {
		if (ret != 1 && ret != -EBADMSG)
			abort();
		/* every call consumes at least one byte */
		if (++lines > size || cur > end)
			abort();
		if (ret != 1)
			continue;
		if (m.end < m.start || m.path.len > LPS_MAX_PATH ||
		    (m.prot & ~(LPS_PROT_R | LPS_PROT_W | LPS_PROT_X | LPS_PROT_P)))
			abort();
		touch(m.path, buf, end);
		if (memchr(m.path.ptr, '\n', m.path.len))
			abort();
	}
}

static void fuzz_ksyms(const char *buf, size_t size)
{
	const char *p = buf, *end = buf + size;
	struct lps_ksym k;
	int ret;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl + 1 : end;

		ret = coll_ksym_parse_line(p, (size_t)(eol - p), &k);
		if (ret != 0 && ret != 1 && ret != -EBADMSG)
			abort();
		if (ret >= 0) {
			if (!k.name.len || !k.module.ptr)
				abort();
			touch(k.name, p, eol);
			touch(k.module, p, eol);
		}
		p = eol;
	}
}

static void fuzz_status(const char *buf, size_t size)
{
	uint32_t nspid = 0, euid = 0;
	int ret = coll_status_ids(buf, size, &nspid, &euid);

	if (ret != 0 && ret != -EBADMSG)
		abort();
	sink += nspid + euid;
}

static void fuzz_cpulist(const char *buf, size_t size, size_t max)
{
	/* exactly max entries on the heap: a write past them is an ASan report */
	uint32_t *cpus = malloc((max ? max : 1) * sizeof(*cpus));
	int n;

	if (!cpus)
		return;
	n = lp_parse_cpulist(buf, size, cpus, max);
	if (n != -EBADMSG && (n < 1 || (size_t)n > max))
		abort();
	for (int i = 0; i < n; i++)
		if (cpus[i] >= LP_MAX_CPUS || (i && cpus[i] <= cpus[i - 1]))
			abort();
	free(cpus);
}

/* the input as /proc/PID/task/TID/children: into exactly cap slots */
static void fuzz_pids(const char *buf, size_t size, size_t cap)
{
	pid_t *out = malloc((cap ? cap : 1) * sizeof(*out));
	size_t n = 0;
	int ret;

	if (!out)
		return;
	ret = coll_parse_pids(buf, size, out, &n, cap);
	if ((ret != 0 && ret != -ENOSPC && ret != -EBADMSG) || n > cap)
		abort();
	for (size_t i = 0; i < n; i++)
		if (out[i] <= 0)
			abort();
	free(out);
}

/* the input as /proc/modules: what is left is the input less each line's third field */
static void fuzz_modules(const char *buf, size_t size)
{
	char *work = malloc(size ? size : 1);
	size_t n, j = 0;
	int field = 0;

	if (!work)
		return;
	memcpy(work, buf, size);
	n = coll_modules_strip_counts(work, size);
	if (n > size)
		abort();
	for (size_t i = 0; i < size; i++) {
		field = buf[i] == '\n' ? 0 : field + (buf[i] == ' ');
		if (field != 2 && (j >= n || work[j++] != buf[i]))
			abort();
	}
	if (j != n)
		abort();
	free(work);
}

/* the input as fdinfo, and as mountinfo asked for its lines' ids and a few others */
static void fuzz_mounts(const char *buf, size_t size)
{
	static const uint32_t ids[] = {0, 1, 21, 4294967295u};
	const char *p = buf, *end = buf + size;
	struct lps_str type;
	uint32_t id = 0;
	int ret;

	ret = coll_fdinfo_mnt_id(buf, size, &id);
	if (ret != 0 && ret != -EBADMSG)
		abort();
	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]) + 1; i++) {
		uint32_t want = i < sizeof(ids) / sizeof(ids[0]) ? ids[i] : id;

		ret = coll_mountinfo_type(buf, size, want, &type);
		if (ret != 0 && ret != -ENOENT && ret != -EBADMSG)
			abort();
		if (!ret) {
			if (!type.len || memchr(type.ptr, ' ', type.len) ||
			    memchr(type.ptr, '\n', type.len))
				abort();
			touch(type, buf, end);
		}
	}
	/* a line at a time: each call consumes at least one byte */
	for (size_t lines = 0; (ret = coll_mountinfo_next(&p, end, &id, &type)) != 0;) {
		if ((ret != 1 && ret != -EBADMSG) || ++lines > size || p > end)
			abort();
		if (ret == 1) {
			if (!type.len || memchr(type.ptr, ' ', type.len))
				abort();
			touch(type, buf, end);
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy of exactly size bytes so ASan catches any read past it */
	char *copy = malloc(size ? size : 1);

	if (!copy)
		return 0;
	memcpy(copy, data, size);
	fuzz_maps(copy, size);
	fuzz_ksyms(copy, size);
	fuzz_status(copy, size);
	fuzz_cpulist(copy, size, LP_MAX_CPUS);
	fuzz_cpulist(copy, size, 4);
	fuzz_pids(copy, size, 64);
	fuzz_pids(copy, size, 2);
	fuzz_modules(copy, size);
	fuzz_mounts(copy, size);
	free(copy);
	return 0;
}
