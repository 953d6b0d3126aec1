// SPDX-License-Identifier: MIT
/*
 * Record encoders on msgpack-c's packer. The packer writes through
 * lps_enc_write, which either appends to a fixed caller buffer (and latches
 * -ENOSPC when it would overflow) or grows a heap buffer.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#include "lowprof/schema.h"

static int lps_enc_write(void *data, const char *buf, size_t len)
{
	struct lps_enc *e = data;

	if (e->err)
		return -1;
	if (len > e->cap - e->len) {
		size_t ncap;
		uint8_t *nbuf;

		if (!e->dynamic) {
			e->err = -ENOSPC;
			return -1;
		}
		ncap = e->cap ? e->cap : 4096;
		while (ncap - e->len < len)
			ncap *= 2;
		nbuf = realloc(e->buf, ncap);
		if (!nbuf) {
			e->err = -ENOMEM;
			return -1;
		}
		e->buf = nbuf;
		e->cap = ncap;
	}
	memcpy(e->buf + e->len, buf, len);
	e->len += len;
	return 0;
}

void lps_enc_init_fixed(struct lps_enc *e, void *buf, size_t cap)
{
	memset(e, 0, sizeof(*e));
	e->buf = buf;
	e->cap = cap;
}

void lps_enc_init_dynamic(struct lps_enc *e)
{
	memset(e, 0, sizeof(*e));
	e->dynamic = true;
}

void lps_enc_reset(struct lps_enc *e)
{
	e->len = 0;
	e->err = 0;
}

void lps_enc_free(struct lps_enc *e)
{
	if (!e || !e->dynamic)
		return;
	free(e->buf);
	e->buf = NULL;
	e->cap = e->len = 0;
}

long lps_enc_len(const struct lps_enc *e)
{
	return e->err ? e->err : (long)e->len;
}

#define PK(e)                                                                                      \
	msgpack_packer pk;                                                                         \
	msgpack_packer_init(&pk, (e), lps_enc_write)

static void pk_str(msgpack_packer *pk, const struct lps_str *s)
{
	msgpack_pack_str(pk, s->len);
	if (s->len) /* an empty string may have no buffer at all */
		msgpack_pack_str_body(pk, s->ptr, s->len);
}

static void pk_bin(msgpack_packer *pk, const uint8_t *p, uint32_t n)
{
	msgpack_pack_bin(pk, n);
	if (n) /* an empty blob may have no buffer at all */
		msgpack_pack_bin_body(pk, p, n);
}

void lps_enc_meta(struct lps_enc *e, const struct lps_meta *m, const uint32_t *pids,
		  const struct lps_str *fallbacks)
{
	PK(e);
	msgpack_pack_array(&pk, 25);
	msgpack_pack_uint32(&pk, LPS_META);
	msgpack_pack_uint32(&pk, LPS_VERSION_MAJOR);
	msgpack_pack_uint32(&pk, LPS_VERSION_MINOR);
	pk_str(&pk, &m->hostname);
	pk_str(&pk, &m->kernel_release);
	pk_str(&pk, &m->clock);
	msgpack_pack_uint64(&pk, m->start_mono_ns);
	msgpack_pack_uint64(&pk, m->start_real_ns);
	msgpack_pack_uint32(&pk, m->freq_hz);
	msgpack_pack_uint32(&pk, m->ncpus_online);
	msgpack_pack_uint32(&pk, m->drain_ms);
	msgpack_pack_uint64(&pk, m->bpf_ring_bytes);
	msgpack_pack_uint64(&pk, m->shm_ring_bytes);
	msgpack_pack_array(&pk, m->npids);
	for (uint32_t i = 0; i < m->npids; i++)
		msgpack_pack_uint32(&pk, pids[i]);
	pk_str(&pk, &m->producer);
	msgpack_pack_nil(&pk); /* reserved (1.0): stays, so 1.2 fields start at 16 */
	/* since 1.2 */
	msgpack_pack_uint32(&pk, m->stack_bytes);
	if (m->off_cpu)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);
	pk_str(&pk, &m->off_cpu_mode);
	msgpack_pack_double(&pk, m->off_cpu_rate);
	msgpack_pack_uint64(&pk, m->off_cpu_min_ns);
	msgpack_pack_uint64(&pk, m->off_cpu_period_ns);
	msgpack_pack_uint64(&pk, m->bpf_mem_bytes);
	/* since 1.4 */
	pk_str(&pk, &m->kernel_base);
	msgpack_pack_array(&pk, m->nfallbacks);
	for (uint32_t i = 0; i < m->nfallbacks; i++)
		pk_str(&pk, &fallbacks[i]);
}

void lps_enc_sample(struct lps_enc *e, const struct lps_sample *s)
{
	PK(e);
	msgpack_pack_array(&pk, 16);
	msgpack_pack_uint32(&pk, LPS_SAMPLE);
	msgpack_pack_uint32(&pk, s->kind);
	msgpack_pack_uint64(&pk, s->time_ns);
	msgpack_pack_uint32(&pk, s->pid);
	msgpack_pack_uint32(&pk, s->tid);
	msgpack_pack_uint32(&pk, s->cpu);
	pk_str(&pk, &s->comm);
	msgpack_pack_uint64(&pk, s->weight);
	msgpack_pack_uint64(&pk, s->ip);
	msgpack_pack_uint64(&pk, s->sp);
	msgpack_pack_uint64(&pk, s->bp);
	pk_bin(&pk, s->kstack, s->nkstack * 8);
	pk_bin(&pk, s->ustack, s->nustack * 8);
	pk_bin(&pk, s->stack_copy, s->stack_copy_len);
	msgpack_pack_uint64(&pk, s->blocked_ns); /* since 1.2 */
	msgpack_pack_uint64(&pk, s->cgroup_id);	 /* since 1.5 */
}

void lps_enc_maps_begin(struct lps_enc *e, uint64_t time_ns, uint32_t pid, bool append,
			uint32_t count)
{
	PK(e);
	msgpack_pack_array(&pk, 5);
	msgpack_pack_uint32(&pk, LPS_MAPS);
	msgpack_pack_uint64(&pk, time_ns);
	msgpack_pack_uint32(&pk, pid);
	if (append)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);
	msgpack_pack_array(&pk, count);
}

void lps_enc_mapping(struct lps_enc *e, const struct lps_mapping *m)
{
	PK(e);
	msgpack_pack_array(&pk, 9);
	msgpack_pack_uint64(&pk, m->start);
	msgpack_pack_uint64(&pk, m->end);
	msgpack_pack_uint64(&pk, m->offset);
	msgpack_pack_uint32(&pk, m->dev_major);
	msgpack_pack_uint32(&pk, m->dev_minor);
	msgpack_pack_uint64(&pk, m->inode);
	msgpack_pack_uint32(&pk, m->prot);
	pk_str(&pk, &m->path);
	pk_bin(&pk, (const uint8_t *)m->build_id.ptr, m->build_id.len); /* since 1.3 */
}

void lps_enc_exec(struct lps_enc *e, const struct lps_exec *x)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_EXEC);
	msgpack_pack_uint64(&pk, x->time_ns);
	msgpack_pack_uint32(&pk, x->pid);
	pk_str(&pk, &x->comm);
}

void lps_enc_exit(struct lps_enc *e, const struct lps_exit *x)
{
	PK(e);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint32(&pk, LPS_EXIT);
	msgpack_pack_uint64(&pk, x->time_ns);
	msgpack_pack_uint32(&pk, x->pid);
}

void lps_enc_ksyms_begin(struct lps_enc *e, uint32_t seq, bool last, uint32_t count)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_KSYMS);
	msgpack_pack_uint32(&pk, seq);
	if (last)
		msgpack_pack_true(&pk);
	else
		msgpack_pack_false(&pk);
	msgpack_pack_array(&pk, count);
}

void lps_enc_ksym(struct lps_enc *e, const struct lps_ksym *k)
{
	PK(e);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint64(&pk, k->addr);
	pk_str(&pk, &k->name);
	pk_str(&pk, &k->module);
}

void lps_enc_loss(struct lps_enc *e, const struct lps_loss *l)
{
	PK(e);
	msgpack_pack_array(&pk, 19);
	msgpack_pack_uint32(&pk, LPS_LOSS);
	msgpack_pack_uint64(&pk, l->time_ns);
	msgpack_pack_uint64(&pk, l->bpf_samples);
	msgpack_pack_uint64(&pk, l->bpf_ringbuf_full);
	msgpack_pack_uint64(&pk, l->bpf_stack_errors);
	msgpack_pack_uint64(&pk, l->shm_dropped);
	msgpack_pack_uint64(&pk, l->shm_dropped_bytes);
	msgpack_pack_uint64(&pk, l->maps_errors);
	msgpack_pack_uint64(&pk, l->bad_consumer_pos);
	msgpack_pack_uint64(&pk, l->bpf_task_lost);
	/* since 1.2 */
	msgpack_pack_uint64(&pk, l->off_cpu_switches);
	msgpack_pack_uint64(&pk, l->off_cpu_sampled);
	msgpack_pack_uint64(&pk, l->off_cpu_short);
	msgpack_pack_uint64(&pk, l->off_cpu_lost);
	/* since 1.3 */
	msgpack_pack_uint64(&pk, l->capture_dropped);
	msgpack_pack_uint64(&pk, l->capture_dropped_bytes);
	/* since 1.4 */
	msgpack_pack_uint64(&pk, l->kstacks_hidden);
	msgpack_pack_uint64(&pk, l->ustack_fp_fallback);
	/* since 1.6 */
	msgpack_pack_uint64(&pk, l->mmap_events_lost);
}

void lps_enc_end(struct lps_enc *e, const struct lps_end *x)
{
	PK(e);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint32(&pk, LPS_END);
	msgpack_pack_uint64(&pk, x->time_ns);
	pk_str(&pk, &x->reason);
}

void lps_enc_buildid(struct lps_enc *e, const struct lps_buildid *b)
{
	PK(e);
	msgpack_pack_array(&pk, 7);
	msgpack_pack_uint32(&pk, LPS_BUILDID);
	msgpack_pack_uint64(&pk, b->time_ns);
	msgpack_pack_uint32(&pk, b->dev_major);
	msgpack_pack_uint32(&pk, b->dev_minor);
	msgpack_pack_uint64(&pk, b->inode);
	pk_bin(&pk, (const uint8_t *)b->build_id.ptr, b->build_id.len);
	pk_str(&pk, &b->source);
}

void lps_enc_cgroup(struct lps_enc *e, const struct lps_cgroup *g)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_CGROUP);
	msgpack_pack_uint64(&pk, g->time_ns);
	msgpack_pack_uint64(&pk, g->id);
	pk_str(&pk, &g->path);
}

void lps_enc_proc(struct lps_enc *e, const struct lps_proc *p)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_PROC);
	msgpack_pack_uint64(&pk, p->time_ns);
	msgpack_pack_uint32(&pk, p->pid);
	pk_str(&pk, &p->exe);
}

static void enc_file_bytes(struct lps_enc *e, uint32_t type, const struct lps_perfmap *p)
{
	PK(e);
	msgpack_pack_array(&pk, 5);
	msgpack_pack_uint32(&pk, type);
	msgpack_pack_uint64(&pk, p->time_ns);
	msgpack_pack_uint32(&pk, p->pid);
	msgpack_pack_uint64(&pk, p->offset);
	pk_bin(&pk, (const uint8_t *)p->data.ptr, p->data.len);
}

void lps_enc_perfmap(struct lps_enc *e, const struct lps_perfmap *p)
{
	enc_file_bytes(e, LPS_PERFMAP, p);
}

void lps_enc_jitdump(struct lps_enc *e, const struct lps_perfmap *p)
{
	enc_file_bytes(e, LPS_JITDUMP, p);
}

void lps_enc_vdso(struct lps_enc *e, const struct lps_vdso *v)
{
	PK(e);
	msgpack_pack_array(&pk, 3);
	msgpack_pack_uint32(&pk, LPS_VDSO);
	msgpack_pack_uint64(&pk, v->time_ns);
	pk_bin(&pk, (const uint8_t *)v->image.ptr, v->image.len);
}

void lps_enc_mmap(struct lps_enc *e, const struct lps_mmap *m)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_MMAP);
	msgpack_pack_uint64(&pk, m->time_ns);
	msgpack_pack_uint32(&pk, m->pid);
	lps_enc_mapping(e, &m->map);
}

void lps_enc_fork(struct lps_enc *e, const struct lps_fork *f)
{
	PK(e);
	msgpack_pack_array(&pk, 4);
	msgpack_pack_uint32(&pk, LPS_FORK);
	msgpack_pack_uint64(&pk, f->time_ns);
	msgpack_pack_uint32(&pk, f->pid);
	msgpack_pack_uint32(&pk, f->ppid);
}

const char *lps_type_name(uint32_t type)
{
	static const char *const names[] = {
		[LPS_META] = "meta",	   [LPS_SAMPLE] = "sample", [LPS_MAPS] = "maps",
		[LPS_EXEC] = "exec",	   [LPS_EXIT] = "exit",	    [LPS_KSYMS] = "ksyms",
		[LPS_LOSS] = "loss",	   [LPS_END] = "end",	    [LPS_BUILDID] = "buildid",
		[LPS_CGROUP] = "cgroup",   [LPS_PROC] = "proc",	    [LPS_PERFMAP] = "perfmap",
		[LPS_VDSO] = "vdso",	   [LPS_MMAP] = "mmap",	    [LPS_FORK] = "fork",
		[LPS_JITDUMP] = "jitdump",
	};

	if (type < sizeof(names) / sizeof(names[0]) && names[type])
		return names[type];
	return "unknown";
}
