// SPDX-License-Identifier: MIT
/*
 * Validating msgpack decoder for lowprof records.
 *
 * msgpack-c's unpacker is not used here: it builds an object tree whose
 * arrays are allocated from counts claimed by the input before those counts
 * are checked against the input's length, so a five-byte record can ask for
 * gigabytes. This cursor reads only the few msgpack forms the schema uses,
 * checks every length and count against the bytes left, and allocates
 * nothing; strings and blobs are returned as pointers into the buffer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "lowprof/schema.h"

#define SKIP_MAX_DEPTH 8

struct cur {
	const uint8_t *p, *end;
};

static size_t left(const struct cur *c)
{
	return (size_t)(c->end - c->p);
}

/* Big-endian loads of unaligned bytes the caller checked are there. */
static uint16_t be16_at(const uint8_t *p)
{
	uint16_t x;

	memcpy(&x, p, 2);
	return be16toh(x);
}

static uint32_t be32_at(const uint8_t *p)
{
	uint32_t x;

	memcpy(&x, p, 4);
	return be32toh(x);
}

static uint64_t be64_at(const uint8_t *p)
{
	uint64_t x;

	memcpy(&x, p, 8);
	return be64toh(x);
}

/* n is 1, 2, 4 or 8. */
static int rd_be(struct cur *c, unsigned n, uint64_t *v)
{
	if (left(c) < n)
		return -EBADMSG;
	switch (n) {
	case 1:
		*v = c->p[0];
		break;
	case 2:
		*v = be16_at(c->p);
		break;
	case 4:
		*v = be32_at(c->p);
		break;
	default:
		*v = be64_at(c->p);
		break;
	}
	c->p += n;
	return 0;
}

static int rd_tag(struct cur *c, uint8_t *tag)
{
	if (left(c) < 1)
		return -EBADMSG;
	*tag = *c->p++;
	return 0;
}

/* Non-negative integer in any msgpack integer form. */
static int rd_uint(struct cur *c, uint64_t *v)
{
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if (t <= 0x7f) {
		*v = t;
		return 0;
	}
	switch (t) {
	case 0xcc:
		return rd_be(c, 1, v);
	case 0xcd:
		return rd_be(c, 2, v);
	case 0xce:
		return rd_be(c, 4, v);
	case 0xcf:
		return rd_be(c, 8, v);
	case 0xd0:
	case 0xd1:
	case 0xd2:
	case 0xd3: {
		unsigned n = 1u << (t - 0xd0);

		err = rd_be(c, n, v);
		if (err)
			return err;
		/* signed forms are accepted only for values >= 0 */
		if (*v >> (n * 8 - 1))
			return -EBADMSG;
		return 0;
	}
	default:
		return -EBADMSG;
	}
}

static int rd_u32(struct cur *c, uint32_t *v)
{
	uint64_t x;
	int err = rd_uint(c, &x);

	if (err)
		return err;
	if (x > UINT32_MAX)
		return -EBADMSG;
	*v = (uint32_t)x;
	return 0;
}

static int rd_len_body(struct cur *c, uint64_t n, struct lps_str *s)
{
	if (n > left(c))
		return -EBADMSG;
	s->ptr = (const char *)c->p;
	s->len = (uint32_t)n;
	c->p += n;
	return 0;
}

static int rd_str(struct cur *c, struct lps_str *s)
{
	uint64_t n;
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if ((t & 0xe0) == 0xa0)
		n = t & 0x1f;
	else if (t >= 0xd9 && t <= 0xdb)
		err = rd_be(c, 1u << (t - 0xd9), &n);
	else
		return -EBADMSG;
	return err ? err : rd_len_body(c, n, s);
}

static int rd_bin(struct cur *c, struct lps_str *s)
{
	uint64_t n;
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if (t < 0xc4 || t > 0xc6)
		return -EBADMSG;
	err = rd_be(c, 1u << (t - 0xc4), &n);
	return err ? err : rd_len_body(c, n, s);
}

static int rd_array(struct cur *c, uint32_t *count)
{
	uint64_t n;
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if ((t & 0xf0) == 0x90)
		n = t & 0x0f;
	else if (t == 0xdc || t == 0xdd)
		err = rd_be(c, t == 0xdc ? 2 : 4, &n);
	else
		return -EBADMSG;
	if (err)
		return err;
	/* every element takes at least one byte */
	if (n > left(c))
		return -EBADMSG;
	*count = (uint32_t)n;
	return 0;
}

static int rd_bool(struct cur *c, bool *b)
{
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if (t != 0xc2 && t != 0xc3)
		return -EBADMSG;
	*b = t == 0xc3;
	return 0;
}

/* A float64 (or float32) that is finite. */
static int rd_double(struct cur *c, double *d)
{
	uint64_t v;
	uint8_t t;
	int err = rd_tag(c, &t);

	if (err)
		return err;
	if (t == 0xcb) {
		err = rd_be(c, 8, &v);
		if (!err)
			memcpy(d, &v, 8);
	} else if (t == 0xca) {
		float f;
		uint32_t w;

		err = rd_be(c, 4, &v);
		w = (uint32_t)v;
		memcpy(&f, &w, 4);
		*d = f;
	} else {
		return -EBADMSG;
	}
	if (err)
		return err;
	if (!(*d >= -1e300 && *d <= 1e300)) /* NaN or infinite */
		return -EBADMSG;
	return 0;
}

/* Skips one object of any type (fields appended by newer minor versions). */
static int skip(struct cur *c, int depth)
{
	uint64_t n = 0;
	uint8_t t;
	int err;

	if (depth > SKIP_MAX_DEPTH)
		return -EBADMSG;
	if (left(c) < 1)
		return -EBADMSG;
	t = *c->p;
	if (t <= 0x7f || t >= 0xe0 || t == 0xc0 || t == 0xc2 || t == 0xc3) {
		c->p++;
		return 0;
	}
	if ((t & 0xe0) == 0xa0 || (t >= 0xd9 && t <= 0xdb)) {
		struct lps_str s;

		return rd_str(c, &s);
	}
	if (t >= 0xc4 && t <= 0xc6) {
		struct lps_str s;

		return rd_bin(c, &s);
	}
	if ((t & 0xf0) == 0x90 || t == 0xdc || t == 0xdd || (t & 0xf0) == 0x80 || t == 0xde ||
	    t == 0xdf) {
		bool map = (t & 0xf0) == 0x80 || t == 0xde || t == 0xdf;

		c->p++;
		if ((t & 0xf0) == 0x90 || (t & 0xf0) == 0x80)
			n = t & 0x0f;
		else if ((err = rd_be(c, (t == 0xdc || t == 0xde) ? 2 : 4, &n)))
			return err;
		if (map)
			n *= 2;
		if (n > left(c))
			return -EBADMSG;
		for (uint64_t i = 0; i < n; i++)
			if ((err = skip(c, depth + 1)))
				return err;
		return 0;
	}
	switch (t) {
	case 0xcc:
	case 0xd0:
		n = 1;
		break;
	case 0xcd:
	case 0xd1:
		n = 2;
		break;
	case 0xca:
	case 0xce:
	case 0xd2:
		n = 4;
		break;
	case 0xcb:
	case 0xcf:
	case 0xd3:
		n = 8;
		break;
	case 0xd4:
		n = 2;
		break; /* fixext: type byte + 1..16 */
	case 0xd5:
		n = 3;
		break;
	case 0xd6:
		n = 5;
		break;
	case 0xd7:
		n = 9;
		break;
	case 0xd8:
		n = 17;
		break;
	case 0xc7:
	case 0xc8:
	case 0xc9: {
		c->p++;
		if ((err = rd_be(c, 1u << (t - 0xc7), &n)))
			return err;
		n += 1;
		if (n > left(c))
			return -EBADMSG;
		c->p += n;
		return 0;
	}
	default:
		return -EBADMSG; /* 0xc1 is never used */
	}
	c->p++;
	if (n > left(c))
		return -EBADMSG;
	c->p += n;
	return 0;
}

/* Skips the fields after the ones this reader knows (had of total). */
static int skip_rest(struct cur *c, uint32_t had, uint32_t total)
{
	int err;

	for (uint32_t i = had; i < total; i++)
		if ((err = skip(c, 1)))
			return err;
	return 0;
}

#define TRY(x)                                                                                     \
	do {                                                                                       \
		int err_ = (x);                                                                    \
		if (err_)                                                                          \
			return err_;                                                               \
	} while (0)

static int dec_meta(struct cur *c, uint32_t n, struct lps_meta *m)
{
	uint32_t npids;

	if (n < 15)
		return -EBADMSG;
	TRY(rd_u32(c, &m->major));
	TRY(rd_u32(c, &m->minor));
	if (m->major != LPS_VERSION_MAJOR)
		return -EPROTO;
	TRY(rd_str(c, &m->hostname));
	TRY(rd_str(c, &m->kernel_release));
	TRY(rd_str(c, &m->clock));
	TRY(rd_uint(c, &m->start_mono_ns));
	TRY(rd_uint(c, &m->start_real_ns));
	TRY(rd_u32(c, &m->freq_hz));
	TRY(rd_u32(c, &m->ncpus_online));
	TRY(rd_u32(c, &m->drain_ms));
	TRY(rd_uint(c, &m->bpf_ring_bytes));
	TRY(rd_uint(c, &m->shm_ring_bytes));
	TRY(rd_array(c, &npids));
	m->npids = npids;
	m->pids_raw = c->p;
	for (uint32_t i = 0; i < npids; i++) {
		uint32_t pid;

		TRY(rd_u32(c, &pid));
	}
	m->pids_raw_len = (uint32_t)(c->p - m->pids_raw);
	TRY(rd_str(c, &m->producer));
	if (n < 23) /* 1.0 / 1.1: the 1.2 fields stay zero */
		return skip_rest(c, 15, n);
	TRY(skip(c, 1)); /* 15: reserved */
	TRY(rd_u32(c, &m->stack_bytes));
	TRY(rd_bool(c, &m->off_cpu));
	TRY(rd_str(c, &m->off_cpu_mode));
	TRY(rd_double(c, &m->off_cpu_rate));
	TRY(rd_uint(c, &m->off_cpu_min_ns));
	TRY(rd_uint(c, &m->off_cpu_period_ns));
	TRY(rd_uint(c, &m->bpf_mem_bytes));
	if (m->off_cpu_mode.len > LPS_MAX_MODE || m->off_cpu_rate < 0 || m->off_cpu_rate > 1 ||
	    m->stack_bytes > LPS_MAX_STACK_COPY)
		return -EBADMSG;
	if (n < 25) /* 1.2 / 1.3 */
		return skip_rest(c, 23, n);
	TRY(rd_str(c, &m->kernel_base));
	TRY(rd_array(c, &m->nfallbacks));
	if (m->kernel_base.len > LPS_MAX_KERNEL_BASE || m->nfallbacks > LPS_MAX_FALLBACKS)
		return -EBADMSG;
	m->fallbacks_raw = c->p;
	for (uint32_t i = 0; i < m->nfallbacks; i++) {
		struct lps_str f;

		TRY(rd_str(c, &f));
		if (f.len > LPS_MAX_FALLBACK_NAME)
			return -EBADMSG;
	}
	m->fallbacks_raw_len = (uint32_t)(c->p - m->fallbacks_raw);
	return skip_rest(c, 25, n);
}

static int dec_stack(struct cur *c, const uint8_t **stack, uint32_t *n)
{
	struct lps_str b;

	TRY(rd_bin(c, &b));
	if (b.len % 8 || b.len / 8 > LPS_MAX_FRAMES)
		return -EBADMSG;
	*stack = (const uint8_t *)b.ptr;
	*n = b.len / 8;
	return 0;
}

static int dec_sample(struct cur *c, uint32_t n, struct lps_sample *s)
{
	if (n < 13)
		return -EBADMSG;
	TRY(rd_u32(c, &s->kind));
	TRY(rd_uint(c, &s->time_ns));
	TRY(rd_u32(c, &s->pid));
	TRY(rd_u32(c, &s->tid));
	TRY(rd_u32(c, &s->cpu));
	TRY(rd_str(c, &s->comm));
	if (s->comm.len > LPS_COMM_LEN)
		return -EBADMSG;
	TRY(rd_uint(c, &s->weight));
	TRY(rd_uint(c, &s->ip));
	TRY(rd_uint(c, &s->sp));
	TRY(rd_uint(c, &s->bp));
	TRY(dec_stack(c, &s->kstack, &s->nkstack));
	TRY(dec_stack(c, &s->ustack, &s->nustack));
	s->stack_copy = NULL;
	s->stack_copy_len = 0;
	s->blocked_ns = 0;
	if (n < 14) /* 1.0 */
		return skip_rest(c, 13, n);
	{
		struct lps_str b;

		TRY(rd_bin(c, &b));
		if (b.len > LPS_MAX_STACK_COPY)
			return -EBADMSG;
		s->stack_copy = (const uint8_t *)b.ptr;
		s->stack_copy_len = b.len;
	}
	if (n < 15) /* 1.1 */
		return skip_rest(c, 14, n);
	TRY(rd_uint(c, &s->blocked_ns));
	if (n < 16) /* 1.2 - 1.4 */
		return skip_rest(c, 15, n);
	TRY(rd_uint(c, &s->cgroup_id));
	return skip_rest(c, 16, n);
}

static int dec_mapping(struct cur *c, struct lps_mapping *m)
{
	uint32_t n;

	TRY(rd_array(c, &n));
	if (n < 8)
		return -EBADMSG;
	TRY(rd_uint(c, &m->start));
	TRY(rd_uint(c, &m->end));
	TRY(rd_uint(c, &m->offset));
	TRY(rd_u32(c, &m->dev_major));
	TRY(rd_u32(c, &m->dev_minor));
	TRY(rd_uint(c, &m->inode));
	TRY(rd_u32(c, &m->prot));
	TRY(rd_str(c, &m->path));
	if (m->end < m->start || m->path.len > LPS_MAX_PATH)
		return -EBADMSG;
	m->build_id = (struct lps_str){NULL, 0};
	if (n < 9) /* 1.0 - 1.2 */
		return 0;
	TRY(rd_bin(c, &m->build_id));
	if (m->build_id.len > LPS_MAX_BUILD_ID)
		return -EBADMSG;
	return skip_rest(c, 9, n);
}

static int dec_ksym(struct cur *c, struct lps_ksym *k)
{
	const uint8_t *p = c->p;
	uint32_t n;

	/*
	 * The form the collector writes (msgpack's smallest): a 3-array of a
	 * uint64, a str8 or fixstr name and a fixstr module; anything else
	 * takes the general path below. Same checks, fewer branches: a
	 * snapshot has ~200k of these.
	 */
	if (left(c) >= 13 && p[0] == 0x93 && p[1] == 0xcf) {
		size_t avail = left(c) - 10, nlen, hlen, mlen;
		uint8_t ntag = p[10], mtag;

		/*
		 * Each tag byte is loaded once into a local and only the local
		 * is used: a length checked must be the length used, even if
		 * the buffer changed in between (it must not: records are
		 * decoded from private copies, see lp_ring__read).
		 */
		if ((ntag & 0xe0) == 0xa0) {
			nlen = ntag & 0x1f;
			hlen = 1;
		} else if (ntag == 0xd9) {
			nlen = p[11];
			hlen = 2;
		} else {
			goto general;
		}
		/* the name, then the module's tag: at least one byte more */
		if (hlen + nlen >= avail)
			goto general;
		mtag = p[10 + hlen + nlen];
		mlen = mtag & 0x1f;
		if ((mtag & 0xe0) != 0xa0 || mlen >= avail - hlen - nlen)
			goto general;
		k->addr = be64_at(p + 2);
		k->name = (struct lps_str){(const char *)p + 10 + hlen, (uint32_t)nlen};
		p += 10 + hlen + nlen;
		k->module = (struct lps_str){(const char *)p + 1, (uint32_t)mlen};
		c->p = p + 1 + mlen;
		return 0;
	}
general:
	TRY(rd_array(c, &n));
	if (n < 3)
		return -EBADMSG;
	TRY(rd_uint(c, &k->addr));
	TRY(rd_str(c, &k->name));
	TRY(rd_str(c, &k->module));
	return skip_rest(c, 3, n);
}

/*
 * Validates all count entries now (so that iteration cannot fail halfway on a
 * record that was accepted) and returns the cursor span that holds them.
 */
typedef int (*dec_entry_fn)(struct cur *c, void *out);

static int dec_entries(struct cur *c, uint32_t count, dec_entry_fn fn, void *scratch,
		       const uint8_t **start, const uint8_t **end)
{
	*start = c->p;
	for (uint32_t i = 0; i < count; i++)
		TRY(fn(c, scratch));
	*end = c->p;
	return 0;
}

static int dec_mapping_fn(struct cur *c, void *out)
{
	return dec_mapping(c, out);
}

static int dec_ksym_fn(struct cur *c, void *out)
{
	return dec_ksym(c, out);
}

static int dec_maps(struct cur *c, uint32_t n, struct lps_maps *m)
{
	struct lps_mapping tmp;

	if (n < 5)
		return -EBADMSG;
	TRY(rd_uint(c, &m->time_ns));
	TRY(rd_u32(c, &m->pid));
	TRY(rd_bool(c, &m->append));
	TRY(rd_array(c, &m->count));
	TRY(dec_entries(c, m->count, dec_mapping_fn, &tmp, &m->cur, &m->end));
	m->left = m->count;
	return skip_rest(c, 5, n);
}

static int dec_ksyms(struct cur *c, uint32_t n, struct lps_ksyms *k)
{
	struct lps_ksym tmp;

	if (n < 4)
		return -EBADMSG;
	TRY(rd_u32(c, &k->seq));
	TRY(rd_bool(c, &k->last));
	TRY(rd_array(c, &k->count));
	TRY(dec_entries(c, k->count, dec_ksym_fn, &tmp, &k->cur, &k->end));
	k->left = k->count;
	return skip_rest(c, 4, n);
}

static int dec_loss(struct cur *c, uint32_t n, struct lps_loss *l)
{
	if (n < 10)
		return -EBADMSG;
	TRY(rd_uint(c, &l->time_ns));
	TRY(rd_uint(c, &l->bpf_samples));
	TRY(rd_uint(c, &l->bpf_ringbuf_full));
	TRY(rd_uint(c, &l->bpf_stack_errors));
	TRY(rd_uint(c, &l->shm_dropped));
	TRY(rd_uint(c, &l->shm_dropped_bytes));
	TRY(rd_uint(c, &l->maps_errors));
	TRY(rd_uint(c, &l->bad_consumer_pos));
	TRY(rd_uint(c, &l->bpf_task_lost));
	if (n < 14) /* 1.0 / 1.1 */
		return skip_rest(c, 10, n);
	TRY(rd_uint(c, &l->off_cpu_switches));
	TRY(rd_uint(c, &l->off_cpu_sampled));
	TRY(rd_uint(c, &l->off_cpu_short));
	TRY(rd_uint(c, &l->off_cpu_lost));
	if (n < 16) /* 1.2 */
		return skip_rest(c, 14, n);
	TRY(rd_uint(c, &l->capture_dropped));
	TRY(rd_uint(c, &l->capture_dropped_bytes));
	if (n < 18) /* 1.3 */
		return skip_rest(c, 16, n);
	TRY(rd_uint(c, &l->kstacks_hidden));
	TRY(rd_uint(c, &l->ustack_fp_fallback));
	if (n < 19) /* 1.4 / 1.5 */
		return skip_rest(c, 18, n);
	TRY(rd_uint(c, &l->mmap_events_lost));
	return skip_rest(c, 19, n);
}

static int dec_buildid(struct cur *c, uint32_t n, struct lps_buildid *b)
{
	if (n < 7)
		return -EBADMSG;
	TRY(rd_uint(c, &b->time_ns));
	TRY(rd_u32(c, &b->dev_major));
	TRY(rd_u32(c, &b->dev_minor));
	TRY(rd_uint(c, &b->inode));
	TRY(rd_bin(c, &b->build_id));
	TRY(rd_str(c, &b->source));
	if (!b->build_id.len || b->build_id.len > LPS_MAX_BUILD_ID || b->source.len > LPS_MAX_MODE)
		return -EBADMSG;
	return skip_rest(c, 7, n);
}

static int dec_cgroup(struct cur *c, uint32_t n, struct lps_cgroup *g)
{
	if (n < 4)
		return -EBADMSG;
	TRY(rd_uint(c, &g->time_ns));
	TRY(rd_uint(c, &g->id));
	TRY(rd_str(c, &g->path));
	if (!g->path.len || g->path.len > LPS_MAX_PATH || g->path.ptr[0] != '/')
		return -EBADMSG;
	return skip_rest(c, 4, n);
}

static int dec_proc(struct cur *c, uint32_t n, struct lps_proc *p)
{
	if (n < 4)
		return -EBADMSG;
	TRY(rd_uint(c, &p->time_ns));
	TRY(rd_u32(c, &p->pid));
	TRY(rd_str(c, &p->exe));
	if (p->exe.len > LPS_MAX_PATH)
		return -EBADMSG;
	return skip_rest(c, 4, n);
}

static int dec_perfmap(struct cur *c, uint32_t n, struct lps_perfmap *p)
{
	if (n < 5)
		return -EBADMSG;
	TRY(rd_uint(c, &p->time_ns));
	TRY(rd_u32(c, &p->pid));
	TRY(rd_uint(c, &p->offset));
	TRY(rd_bin(c, &p->data));
	/* the end of the chunk must be a file offset too */
	if (!p->data.len || p->data.len > LPS_MAX_PERFMAP_CHUNK ||
	    p->offset > UINT64_MAX - p->data.len)
		return -EBADMSG;
	return skip_rest(c, 5, n);
}

static int dec_vdso(struct cur *c, uint32_t n, struct lps_vdso *v)
{
	if (n < 3)
		return -EBADMSG;
	TRY(rd_uint(c, &v->time_ns));
	TRY(rd_bin(c, &v->image));
	if (!v->image.len || v->image.len > LPS_MAX_VDSO)
		return -EBADMSG;
	return skip_rest(c, 3, n);
}

static int dec_mmap(struct cur *c, uint32_t n, struct lps_mmap *m)
{
	if (n < 4)
		return -EBADMSG;
	TRY(rd_uint(c, &m->time_ns));
	TRY(rd_u32(c, &m->pid));
	TRY(dec_mapping(c, &m->map));
	return skip_rest(c, 4, n);
}

static int dec_fork(struct cur *c, uint32_t n, struct lps_fork *f)
{
	if (n < 4)
		return -EBADMSG;
	TRY(rd_uint(c, &f->time_ns));
	TRY(rd_u32(c, &f->pid));
	TRY(rd_u32(c, &f->ppid));
	return skip_rest(c, 4, n);
}

/* A record's opening, its field count *n (the type among them) and type: 0 or -EBADMSG. */
static int rd_head(struct cur *c, const void *buf, size_t len, uint32_t *n, uint32_t *type)
{
	if (!buf || len > LPS_MAX_RECORD)
		return -EBADMSG;
	*c = (struct cur){buf, (const uint8_t *)buf + len};
	TRY(rd_array(c, n));
	if (*n < 1)
		return -EBADMSG;
	return rd_u32(c, type);
}

int lps_peek_type(const void *buf, size_t len, uint32_t *type)
{
	struct cur c;
	uint32_t n;

	return rd_head(&c, buf, len, &n, type);
}

int lps_peek_sample_pid(const void *buf, size_t len, uint32_t *pid)
{
	struct cur c;
	uint32_t n, type, kind;
	uint64_t time_ns;

	TRY(rd_head(&c, buf, len, &n, &type));
	if (type != LPS_SAMPLE)
		return -ENOENT;
	if (n < 13) /* dec_sample's least */
		return -EBADMSG;
	TRY(rd_u32(&c, &kind));
	TRY(rd_uint(&c, &time_ns));
	return rd_u32(&c, pid);
}

int lps_decode(const void *buf, size_t len, struct lps_record *rec)
{
	struct cur c;
	uint32_t n, type;
	int err;

	memset(rec, 0, sizeof(*rec));
	TRY(rd_head(&c, buf, len, &n, &type));
	rec->type = type;
	/* from here on, n counts the type too: field counts below include it */
	switch (type) {
	case LPS_META:
		err = dec_meta(&c, n, &rec->meta);
		break;
	case LPS_SAMPLE:
		err = dec_sample(&c, n, &rec->sample);
		break;
	case LPS_MAPS:
		err = dec_maps(&c, n, &rec->maps);
		break;
	case LPS_EXEC:
		if (n < 4)
			return -EBADMSG;
		TRY(rd_uint(&c, &rec->exec.time_ns));
		TRY(rd_u32(&c, &rec->exec.pid));
		TRY(rd_str(&c, &rec->exec.comm));
		err = skip_rest(&c, 4, n);
		break;
	case LPS_EXIT:
		if (n < 3)
			return -EBADMSG;
		TRY(rd_uint(&c, &rec->exit.time_ns));
		TRY(rd_u32(&c, &rec->exit.pid));
		err = skip_rest(&c, 3, n);
		break;
	case LPS_KSYMS:
		err = dec_ksyms(&c, n, &rec->ksyms);
		break;
	case LPS_LOSS:
		err = dec_loss(&c, n, &rec->loss);
		break;
	case LPS_END:
		if (n < 3)
			return -EBADMSG;
		TRY(rd_uint(&c, &rec->end.time_ns));
		TRY(rd_str(&c, &rec->end.reason));
		err = skip_rest(&c, 3, n);
		break;
	case LPS_BUILDID:
		err = dec_buildid(&c, n, &rec->buildid);
		break;
	case LPS_CGROUP:
		err = dec_cgroup(&c, n, &rec->cgroup);
		break;
	case LPS_PROC:
		err = dec_proc(&c, n, &rec->proc);
		break;
	case LPS_PERFMAP:
		err = dec_perfmap(&c, n, &rec->perfmap);
		break;
	case LPS_JITDUMP:
		err = dec_perfmap(&c, n, &rec->jitdump);
		break;
	case LPS_VDSO:
		err = dec_vdso(&c, n, &rec->vdso);
		break;
	case LPS_MMAP:
		err = dec_mmap(&c, n, &rec->mmap);
		break;
	case LPS_FORK:
		err = dec_fork(&c, n, &rec->fork);
		break;
	default:
		return -ENOTSUP;
	}
	if (err)
		return err;
	/* one record per buffer: anything after it is corruption */
	return c.p == c.end ? 0 : -EBADMSG;
}

int lps_maps_next(struct lps_maps *m, struct lps_mapping *out)
{
	struct cur c = {m->cur, m->end};

	if (!m->left)
		return 0;
	TRY(dec_mapping(&c, out));
	m->cur = c.p;
	m->left--;
	return 1;
}

int lps_ksyms_next(struct lps_ksyms *k, struct lps_ksym *out)
{
	struct cur c = {k->cur, k->end};

	if (!k->left)
		return 0;
	TRY(dec_ksym(&c, out));
	k->cur = c.p;
	k->left--;
	return 1;
}

int lps_meta_pid(const struct lps_meta *m, uint32_t idx, uint32_t *pid)
{
	struct cur c = {m->pids_raw, m->pids_raw + m->pids_raw_len};

	if (idx >= m->npids)
		return -EBADMSG;
	for (uint32_t i = 0; i <= idx; i++)
		TRY(rd_u32(&c, pid));
	return 0;
}

int lps_meta_fallback(const struct lps_meta *m, uint32_t idx, struct lps_str *name)
{
	struct cur c = {m->fallbacks_raw, m->fallbacks_raw + m->fallbacks_raw_len};

	if (idx >= m->nfallbacks)
		return -EBADMSG;
	for (uint32_t i = 0; i <= idx; i++)
		TRY(rd_str(&c, name));
	return 0;
}
