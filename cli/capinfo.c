// SPDX-License-Identifier: MIT
/*
 * lowprof capture-info: what a capture file holds, read with the validating
 * capture reader and record decoder. Started as root it first becomes
 * --user (default lowprof; after opening the file), and it gives up every
 * capability: reading an untrusted file needs no privileges, and if they
 * cannot be given up the file is not read. Every string from the file is
 * printed sanitized (lp_sanitize).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/capture.h"
#include "lowprof/caps.h"
#include "lowprof/log.h"
#include "lowprof/schema.h"
#include "lowprof/text.h"
#include "lowprof/user.h"
#include "record.h"

#define TOP_PROCS 10
#define MAX_PROCS (1u << 20)

const char lp_capture_info_usage[] =
	"Usage: lowprof capture-info FILE [--processes N] [--user USER]\n"
	"\n"
	"Prints what a capture file (lowprof record --capture) holds: its format,\n"
	"whether it is complete, the run's metadata (host, kernel, clock, rates,\n"
	"CPUs, pid filter), records by type, samples by kind, the time span, when\n"
	"the first on-CPU sample was taken (on the run's clock, and after its start),\n"
	"the processes with the most samples, the mapped binaries and how many have a\n"
	"build-id, the losses the collector counted, and any damage (blocks cut\n"
	"short, checksum failures, records lost). Reads the whole file.\n"
	"\n"
	"Options:\n"
	"      --processes N   list the N processes with the most samples (default 10)\n"
	"  -u, --user USER     as root: read the file as USER, once it is open\n"
	"                      (default " LP_USER_DEFAULT ")\n"
	"  -h, --help          this help\n"
	"\n"
	"Exit status: 0 when the file was read (damage is reported, not an error),\n"
	"1 when it is not a capture or cannot be read, 2 on usage errors.\n";

struct proc {
	uint32_t pid; /* 0: empty */
	char comm[LPS_COMM_LEN + 1];
	uint64_t samples;
};

/* A file by device and inode, as a mapping or a buildid record names it. */
struct file_key {
	uint64_t inode;
	uint32_t major, minor;
};

/* Files kept at most in each list below; the rest are not counted. */
#define FILES_MAX (1u << 20)

struct info {
	uint64_t by_type[LPS__TYPES], unknown, malformed, records;
	uint64_t samples[2], weight[2], other_kinds;
	uint64_t first_ns, last_ns, first_rec_ns, last_rec_ns;
	uint64_t first_on_ns; /* the first on-CPU sample's time_ns */
	uint64_t mappings, mappings_id;
	/* mappings without a kernel build-id, files a buildid record names */
	struct file_key *noid, *noted;
	size_t nnoid, cap_noid, nnoted, cap_noted;
	bool have_meta, have_loss, have_end;
	struct lps_meta meta;
	uint8_t *meta_copy; /* the meta record: its strings point into it */
	uint32_t meta_pids[16];
	struct lps_loss loss;
	char end_reason[32];
	struct proc *procs;
	uint32_t cap, nprocs;
	uint64_t procs_over;
};

static uint32_t pid_slot(const struct info *in, uint32_t pid)
{
	uint32_t h = pid * 2654435761u;

	for (uint32_t i = h & (in->cap - 1);; i = (i + 1) & (in->cap - 1))
		if (in->procs[i].pid == pid || !in->procs[i].pid)
			return i;
}

static struct proc *proc_get(struct info *in, uint32_t pid)
{
	uint32_t i;

	if ((in->nprocs + 1) * 2 > in->cap) {
		uint32_t ncap = in->cap ? in->cap * 2 : 1024, ocap = in->cap;
		struct proc *old = in->procs, *n;

		if (in->nprocs >= MAX_PROCS || !(n = calloc(ncap, sizeof(*n))))
			return NULL;
		in->procs = n;
		in->cap = ncap;
		for (uint32_t j = 0; j < ocap; j++)
			if (old[j].pid)
				in->procs[pid_slot(in, old[j].pid)] = old[j];
		free(old);
	}
	i = pid_slot(in, pid);
	if (!in->procs[i].pid) {
		in->procs[i].pid = pid;
		in->nprocs++;
	}
	return &in->procs[i];
}

static void note_time(struct info *in, uint64_t t)
{
	if (!t)
		return;
	if (!in->first_rec_ns || t < in->first_rec_ns)
		in->first_rec_ns = t;
	if (t > in->last_rec_ns)
		in->last_rec_ns = t;
}

/*
 * Printable copy of a string from the file (lp_sanitize: control bytes,
 * malformed UTF-8, C1 and bidi characters become '?'): a capture can come
 * from anywhere, and the terminal must not take its strings for commands.
 */
static const char *safe(char *dst, size_t cap, struct lps_str s)
{
	return lp_sanitize(dst, cap, s.ptr, s.len);
}

static void file_add(struct file_key **v, size_t *n, size_t *cap, struct file_key k)
{
	if (*n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 64;
		struct file_key *nv;

		if (*n >= FILES_MAX || !(nv = realloc(*v, ncap * sizeof(*nv))))
			return;
		*v = nv;
		*cap = ncap;
	}
	(*v)[(*n)++] = k;
}

static int file_cmp(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;

	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	return x->minor < y->minor ? -1 : x->minor > y->minor;
}

/* Mappings without a kernel build-id whose file a buildid record names. */
static uint64_t mappings_noted(struct info *in)
{
	uint64_t n = 0;

	if (!in->nnoted)
		return 0;
	qsort(in->noted, in->nnoted, sizeof(*in->noted), file_cmp);
	for (size_t i = 0; i < in->nnoid; i++)
		n += bsearch(&in->noid[i], in->noted, in->nnoted, sizeof(*in->noted), file_cmp) !=
		     NULL;
	return n;
}

static void feed(struct info *in, const void *buf, uint32_t len)
{
	struct lps_record r;
	struct lps_mapping m;
	struct proc *p;
	int err = lps_decode(buf, len, &r);

	in->records++;
	if (err == -ENOTSUP) {
		in->unknown++;
		return;
	}
	if (err == -EPROTO && !in->have_meta) {
		in->meta.major = r.meta.major;
		in->meta.minor = r.meta.minor;
	}
	if (err) {
		in->malformed++;
		return;
	}
	in->by_type[r.type]++;
	switch (r.type) {
	case LPS_META:
		if (in->have_meta)
			break;
		/* keep the bytes: the decoded strings point into them */
		in->meta_copy = malloc(len);
		if (!in->meta_copy || lps_decode(memcpy(in->meta_copy, buf, len), len, &r))
			break;
		in->have_meta = true;
		in->meta = r.meta;
		for (uint32_t i = 0; i < r.meta.npids && i < 16; i++)
			lps_meta_pid(&r.meta, i, &in->meta_pids[i]);
		break;
	case LPS_SAMPLE: {
		const struct lps_sample *s = &r.sample;

		note_time(in, s->time_ns);
		if (s->kind > LPS_KIND_OFFCPU) {
			in->other_kinds++;
			break;
		}
		in->samples[s->kind]++;
		in->weight[s->kind] += s->weight;
		if (!in->first_ns || s->time_ns < in->first_ns)
			in->first_ns = s->time_ns;
		if (s->time_ns > in->last_ns)
			in->last_ns = s->time_ns;
		if (s->kind == LPS_KIND_CPU && (!in->first_on_ns || s->time_ns < in->first_on_ns))
			in->first_on_ns = s->time_ns;
		p = proc_get(in, s->pid);
		if (!p) {
			in->procs_over++;
			break;
		}
		p->samples++;
		memcpy(p->comm, s->comm.ptr, s->comm.len); /* <= 16, checked by the decoder */
		p->comm[s->comm.len] = '\0';
		break;
	}
	case LPS_MAPS:
		note_time(in, r.maps.time_ns);
		while (lps_maps_next(&r.maps, &m) == 1) {
			if (!m.path.len || m.path.ptr[0] != '/')
				continue;
			in->mappings++;
			in->mappings_id += m.build_id.len > 0;
			if (!m.build_id.len)
				file_add(&in->noid, &in->nnoid, &in->cap_noid,
					 (struct file_key){m.inode, m.dev_major, m.dev_minor});
		}
		break;
	case LPS_BUILDID:
		file_add(&in->noted, &in->nnoted, &in->cap_noted,
			 (struct file_key){r.buildid.inode, r.buildid.dev_major,
					   r.buildid.dev_minor});
		break;
	case LPS_EXEC:
		note_time(in, r.exec.time_ns);
		break;
	case LPS_EXIT:
		note_time(in, r.exit.time_ns);
		break;
	case LPS_LOSS:
		note_time(in, r.loss.time_ns);
		in->loss = r.loss;
		in->have_loss = true;
		break;
	case LPS_END:
		note_time(in, r.end.time_ns);
		in->have_end = true;
		safe(in->end_reason, sizeof(in->end_reason), r.end.reason);
		break;
	}
}

static const char *utc(char *buf, size_t cap, uint64_t real_ns)
{
	time_t t = (time_t)(real_ns / 1000000000ull);
	struct tm tm;

	if (!real_ns || !gmtime_r(&t, &tm) || !strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, cap, "unknown");
	return buf;
}

static int by_samples(const void *a, const void *b)
{
	const struct proc *x = a, *y = b;

	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

static void print_meta(const struct info *in)
{
	const struct lps_meta *m = &in->meta;
	char a[256], b[256], t[64];

	if (!in->have_meta) {
		printf("metadata      none (the stream has no meta record%s)\n",
		       in->meta.major ? ": another schema major version" : "");
		return;
	}
	printf("schema        %u.%u, written by %s\n", m->major, m->minor,
	       safe(a, sizeof(a), m->producer));
	printf("host          %s, kernel %s, %u CPUs online\n", safe(a, sizeof(a), m->hostname),
	       safe(b, sizeof(b), m->kernel_release), m->ncpus_online);
	printf("started       %s (%s %.3f s)\n", utc(t, sizeof(t), m->start_real_ns),
	       safe(a, sizeof(a), m->clock), m->start_mono_ns / 1e9);
	printf("sampling      on-CPU %u Hz per CPU, user stack copy %u bytes%s", m->freq_hz,
	       m->stack_bytes, m->off_cpu ? "; off-CPU " : "; off-CPU off\n");
	if (m->off_cpu) {
		safe(a, sizeof(a), m->off_cpu_mode);
		if (!strcmp(a, "time"))
			printf("time mode, period %" PRIu64 " us", m->off_cpu_period_ns / 1000);
		else
			printf("%s mode, rate %g", a, m->off_cpu_rate);
		printf(", minimum %" PRIu64 " us\n", m->off_cpu_min_ns / 1000);
	}
	printf("buffers       BPF ring %.1f MiB, shared ring %.1f MiB, BPF memory %.1f MiB\n",
	       m->bpf_ring_bytes / 1048576.0, m->shm_ring_bytes / 1048576.0,
	       m->bpf_mem_bytes / 1048576.0);
	printf("kernel        addresses %s", m->kernel_base.len ? "relative to " : "absolute");
	if (m->kernel_base.len)
		printf("%s", safe(a, sizeof(a), m->kernel_base));
	for (uint32_t i = 0; i < m->nfallbacks; i++) {
		struct lps_str f;

		if (!lps_meta_fallback(m, i, &f))
			printf("%s%s", i ? ", " : "; fallbacks ", safe(a, sizeof(a), f));
	}
	printf("\n");
	if (!m->npids) {
		printf("pid filter    none: the whole host\n");
	} else {
		printf("pid filter   ");
		for (uint32_t i = 0; i < m->npids && i < 16; i++)
			printf(" %u", in->meta_pids[i]);
		printf("%s\n", m->npids > 16 ? " ..." : "");
	}
}

static void print_records(struct info *in)
{
	uint64_t noted = mappings_noted(in);

	printf("records       %" PRIu64 ":", in->records);
	for (uint32_t t = LPS_META; t < LPS__TYPES; t++)
		if (in->by_type[t])
			printf(" %s %" PRIu64, lps_type_name(t), in->by_type[t]);
	if (in->unknown)
		printf(", %" PRIu64 " of newer types (skipped)", in->unknown);
	if (in->malformed)
		printf(", %" PRIu64 " malformed", in->malformed);
	printf("\n");
	printf("samples       on-CPU %" PRIu64 " (%.2f s of CPU), off-CPU %" PRIu64
	       " (%.2f s blocked)\n",
	       in->samples[0], in->weight[0] / 1e9, in->samples[1], in->weight[1] / 1e9);
	if (in->first_ns)
		printf("time span     %.3f s from the first sample to the last (records: %.3f s)\n",
		       (in->last_ns - in->first_ns) / 1e9,
		       (in->last_rec_ns - in->first_rec_ns) / 1e9);
	if (in->first_on_ns) {
		printf("first sample  on-CPU at %.6f s on the meta clock", in->first_on_ns / 1e9);
		if (in->have_meta)
			printf(", %+.6f s from the run's start",
			       ((double)in->first_on_ns - (double)in->meta.start_mono_ns) / 1e9);
		printf("\n");
	}
	printf("binaries      %" PRIu64 " executable file mappings, %" PRIu64 " with a build-id",
	       in->mappings, in->mappings_id + noted);
	if (noted)
		printf(" (%" PRIu64 " noted by the live symbolizer: the kernel gave none)", noted);
	printf("\n");
}

static void print_procs(struct info *in, unsigned top)
{
	struct proc *list;
	uint32_t n = 0;
	char c[64];

	printf("processes     %u with samples%s\n", in->nprocs,
	       in->procs_over ? " (more not counted)" : "");
	if (!in->nprocs || !top)
		return;
	list = malloc(sizeof(*list) * in->nprocs);
	if (!list)
		return;
	for (uint32_t i = 0; i < in->cap; i++)
		if (in->procs[i].pid)
			list[n++] = in->procs[i];
	qsort(list, n, sizeof(*list), by_samples);
	printf("              %8s  %-16s %10s\n", "pid", "comm", "samples");
	for (uint32_t i = 0; i < n && i < top; i++)
		printf("              %8u  %-16s %10" PRIu64 "\n", list[i].pid,
		       safe(c, sizeof(c), (struct lps_str){list[i].comm, strlen(list[i].comm)}),
		       list[i].samples);
	free(list);
}

static void print_losses(const struct info *in)
{
	const struct lps_loss *l = &in->loss;

	if (!in->have_loss) {
		printf("losses        unknown (no loss record)\n");
		return;
	}
	printf("losses        of %" PRIu64 " samples the BPF programs emitted: %" PRIu64
	       " BPF ring full, %" PRIu64 " stack errors, %" PRIu64
	       " dropped by the shared ring, %" PRIu64 " by the capture writer; %" PRIu64
	       " maps reads failed, %" PRIu64 " mmap events lost",
	       l->bpf_samples, l->bpf_ringbuf_full, l->bpf_stack_errors, l->shm_dropped,
	       l->capture_dropped, l->maps_errors, l->mmap_events_lost);
	if (in->have_meta && in->meta.off_cpu)
		printf("; off-CPU %" PRIu64 " switches, %" PRIu64 " sampled, %" PRIu64 " lost",
		       l->off_cpu_switches, l->off_cpu_sampled, l->off_cpu_lost);
	printf("\n");
}

static void print_file(const char *file, const struct lpc_reader *rd, const struct info *in)
{
	const struct lpc_header *h = lpc_reader__header(rd);
	struct lpc_stats st;
	char damage[320];
	char t[64];

	lpc_reader__stats(rd, &st);
	printf("capture       %s: %.1f MiB, format %u.%u, created %s\n", file, /* sanitized */
	       st.file_bytes / 1048576.0, h->major, h->minor,
	       utc(t, sizeof(t), h->created_real_ns));
	printf("blocks        %" PRIu64 " (%" PRIu64 " zstd): %.1f MiB of records in %.1f MiB",
	       st.blocks, st.zstd_blocks, st.raw_bytes / 1048576.0, st.stored_bytes / 1048576.0);
	if (st.stored_bytes)
		printf(" (%.1fx)", (double)st.raw_bytes / st.stored_bytes);
	printf("\n");
	if (in->have_end)
		printf("complete      yes: the stream ends with its end record (%s)\n",
		       in->end_reason);
	else
		printf("complete      NO: no end record (the collector was stopped before it "
		       "finished, or the end was lost)\n");
	if (lpc_damage_text(&st, damage, sizeof(damage)))
		printf("damage        %s\n", damage);
	else
		printf("damage        none\n");
}

static void warn_cb(void *ctx, const char *msg)
{
	lp_warn("%s: %s", (const char *)ctx, msg);
}

/*
 * Reading a file needs no privileges: once it is open, root becomes user
 * (groups, gid, uid: the uid change from 0 clears the capability sets;
 * the caller looked it up) and anyone gives up what capabilities it has,
 * with no_new_privs. Fails closed: 0, or -errno (said why) and the file is
 * not read.
 */
static int drop_privileges(const char *user)
{
	struct passwd *pw;
	uid_t r, e, su;
	int err;

	if (geteuid() == 0 || getuid() == 0) {
		errno = 0;
		pw = getpwnam(user);
		if (!pw || pw->pw_uid == 0) {
			lp_err("capture-info: there is no user %s to read the file as", user);
			return -ENOENT;
		}
		if (setgroups(0, NULL) || setresgid(pw->pw_gid, pw->pw_gid, pw->pw_gid) ||
		    setresuid(pw->pw_uid, pw->pw_uid, pw->pw_uid)) {
			err = -errno;
			lp_err("capture-info: could not become %s: %s", user, strerror(-err));
			return err;
		}
		/* all three ids: nothing left to switch back to */
		if (getresuid(&r, &e, &su) || r != pw->pw_uid || e != r || su != r) {
			lp_err("capture-info: could not become %s: still uid %u/%u/%u", user, r, e,
			       su);
			return -EPERM;
		}
	}
	err = lp_caps_limit(0);
	if (err)
		lp_err("capture-info: could not give up capabilities: %s", strerror(-err));
	return err;
}

int lp_cmd_capture_info(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"processes", required_argument, NULL, 'n'},
		{"user", required_argument, NULL, 'u'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct lpc_reader *rd = NULL;
	struct lpc_header h;
	struct info in = {0};
	unsigned top = TOP_PROCS;
	char name[PATH_MAX];
	const char *file, *user = LP_USER_DEFAULT;
	int opt, fd, err, rc = 1;

	while ((opt = getopt_long(argc, argv, "u:h", longopts, NULL)) != -1) {
		switch (opt) {
		case 'n': {
			char *end;
			long v = strtol(optarg, &end, 10);

			if (end == optarg || *end || v < 0 || v > 1000000) {
				lp_err("--processes %s: give a count", optarg);
				return 2;
			}
			top = (unsigned)v;
			break;
		}
		case 'u':
			user = optarg;
			break;
		case 'h':
			fputs(lp_capture_info_usage, stdout);
			return 0;
		default:
			fputs(lp_capture_info_usage, stderr);
			return 2;
		}
	}
	if (optind != argc - 1) {
		lp_err("give one capture file (see lowprof capture-info --help)");
		return 2;
	}
	/* as root it reads as --user: a missing one is said before anything */
	if ((geteuid() == 0 || getuid() == 0) &&
	    lp_user_lookup(user, "--user", LP_USER_NOT_ROOT, NULL, NULL))
		return 1;
	/* the name may come from a glob: printed sanitized too */
	file = lp_sanitize(name, sizeof(name), argv[optind], strlen(argv[optind]));
	fd = open(argv[optind], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		lp_err("%s: %m", file);
		return 1;
	}
	if (drop_privileges(user))
		goto out;
	err = lpc_reader__open_fd(fd, &rd, &h);
	if (err) {
		char msg[96];

		lp_err("%s: %s", file, lpc_open_strerror(err, &h, msg, sizeof(msg)));
		goto out;
	}
	lpc_reader__set_warn(rd, warn_cb, (void *)file, 10);
	for (;;) {
		const void *rec;
		uint32_t len;

		err = lpc_reader__next(rd, &rec, &len);
		if (err == -ENODATA)
			break;
		if (err) {
			lp_err("%s: reading: %s", file, strerror(-err));
			goto out;
		}
		feed(&in, rec, len);
	}
	print_file(file, rd, &in);
	print_meta(&in);
	print_records(&in);
	print_procs(&in, top);
	print_losses(&in);
	rc = 0;
out:
	lpc_reader__free(rd);
	free(in.procs);
	free(in.meta_copy);
	free(in.noid);
	free(in.noted);
	close(fd);
	return rc;
}
