// SPDX-License-Identifier: MIT
/*
 * The minimal kernel BTF (see btf.h): identity check, memfd, and the tp_btf
 * SEC() handler that keeps libbpf from parsing the full kernel BTF.
 *
 * Why a handler: libbpf 1.1 loads the whole vmlinux BTF in bpf_object__load
 * when obj_needs_vmlinux_btf() says so, which is true for CO-RE relocations
 * without btf_custom_path, and for any BPF_PROG_TYPE_TRACING program with no
 * attach_prog_fd (prog_needs_vmlinux_btf), because libbpf_prepare_prog_load
 * resolves the attach target (btf_trace_<name>) in it. Nothing else in our
 * objects needs it. The handler registers "tp_btf+" ahead of libbpf's own
 * (custom handlers are matched first) with the same type and attach type;
 * for each tp_btf program coll_btf__prepare() sets a placeholder
 * attach_prog_fd, which makes prog_needs_vmlinux_btf() false, and at load
 * time the handler replaces it with the kernel BTF id recorded at build
 * time (valid because the kernel BTF is byte-identical). If the collector
 * falls back to the full BTF while the handler is registered, prepare
 * resolves the target with bpf_program__set_attach_target(), which is what
 * libbpf does itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "btf.h"
#include "lowprof/clock.h"
#include "lowprof/files.h"
#include "lowprof/kernel.h"
#include "lowprof/log.h"
#include "min_btf.h"
#include "sha256.h"

#define HASH_CHUNK    65536 /* read in chunks: hashing must not cost the RSS it saves */
#define TP_BTF_PREFIX "tp_btf/"

/* Hashes the kernel BTF in HASH_CHUNK reads; checks the size first (cheap). */
static int kernel_btf_sha256(char out[65], const char **why)
{
	struct coll_sha256 s;
	struct stat st;
	uint8_t *buf;
	ssize_t n;
	int fd, err = 0;

	fd = open(LP_KERNEL_BTF, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*why = "no " LP_KERNEL_BTF;
		return -errno;
	}
	if (fstat(fd, &st) || (unsigned long long)st.st_size != lp_min_btf_vmlinux_size) {
		*why = "the kernel BTF's size differs";
		close(fd);
		return -ESTALE;
	}
	buf = malloc(HASH_CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	coll_sha256_init(&s);
	while ((n = read(fd, buf, HASH_CHUNK)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			*why = "reading " LP_KERNEL_BTF " failed";
			break;
		}
		coll_sha256_update(&s, buf, (size_t)n);
	}
	free(buf);
	close(fd);
	if (!err)
		coll_sha256_hex(&s, out);
	return err;
}

/* 0 when the running kernel's BTF is the one the minimal BTF was made from. */
static int kernel_btf_matches(const char **why)
{
	struct utsname u;
	char sha[65];
	int err;

	if (!lp_min_btf_len) {
		*why = "built without one";
		return -ENOENT;
	}
	if (uname(&u) || strcmp(u.release, lp_min_btf_release)) {
		*why = "built for another kernel release";
		return -ESTALE;
	}
	err = kernel_btf_sha256(sha, why);
	if (err)
		return err;
	if (strcmp(sha, lp_min_btf_sha256)) {
		*why = "the kernel BTF's SHA-256 differs";
		return -ESTALE;
	}
	return 0;
}

static const struct lp_min_btf_attach *attach_target(const struct bpf_program *prog)
{
	const char *sec = bpf_program__section_name(prog);

	if (strncmp(sec, TP_BTF_PREFIX, strlen(TP_BTF_PREFIX)))
		return NULL;
	sec += strlen(TP_BTF_PREFIX);
	for (size_t i = 0; i < lp_min_btf_nattach; i++)
		if (!strcmp(sec, lp_min_btf_attach[i].name))
			return &lp_min_btf_attach[i];
	return NULL;
}

/*
 * Load time: a placeholder attach_prog_fd (minimal BTF) is replaced by the
 * recorded kernel BTF id; a target resolved against the full BTF
 * (attach_btf_id already set) is left alone.
 */
static int tp_btf_prepare_load(struct bpf_program *prog, struct bpf_prog_load_opts *opts,
			       long cookie)
{
	const struct lp_min_btf_attach *t;

	(void)cookie;
	if (opts->attach_btf_id)
		return 0;
	t = attach_target(prog);
	if (!t)
		return -ESRCH;
	opts->attach_prog_fd = 0;
	opts->attach_btf_obj_fd = 0;
	opts->attach_btf_id = t->btf_id;
	return 0;
}

/* What libbpf's own tp_btf handler does (attach_trace). */
static int tp_btf_attach(const struct bpf_program *prog, long cookie, struct bpf_link **link)
{
	(void)cookie;
	*link = bpf_program__attach_trace(prog);
	return *link ? 0 : -errno;
}

/*
 * The handler is registered once per process and never unregistered: its
 * callbacks use only the embedded tables, and libbpf 1.1.2's
 * libbpf_unregister_prog_handler leaves a dangling array behind when it
 * removes the last handler (realloc(p, 0) frees p and returns NULL, which
 * libbpf ignores), so a later registration would free it twice.
 */
static int tp_btf_handler_id;

static int register_tp_btf(struct coll_btf *b)
{
	LIBBPF_OPTS(libbpf_prog_handler_opts, ho, .prog_prepare_load_fn = tp_btf_prepare_load,
		    .prog_attach_fn = tp_btf_attach);
	int id;

	if (!tp_btf_handler_id) {
		id = libbpf_register_prog_handler("tp_btf+", BPF_PROG_TYPE_TRACING,
						  BPF_TRACE_RAW_TP, &ho);
		if (id < 0)
			return id;
		tp_btf_handler_id = id;
	}
	b->handler_id = tp_btf_handler_id;
	return 0;
}

void coll_btf__init(struct coll_btf *b, bool force_full)
{
	const char *why = "--full-btf";
	uint64_t t0, t1;
	int err;

	b->minimal = false;
	/* registered earlier in this process: it handles every tp_btf program */
	b->handler_id = tp_btf_handler_id;
	t0 = lp_clock_ns(CLOCK_MONOTONIC);
	if (!force_full && (err = kernel_btf_matches(&why)) == 0) {
		b->fd = memfd_create("lowprof-min-btf", MFD_CLOEXEC);
		if (b->fd < 0 || lp_write_all(b->fd, lp_min_btf, lp_min_btf_len)) {
			why = "memfd failed";
		} else if (register_tp_btf(b)) {
			why = "registering the tp_btf handler failed";
		} else {
			snprintf(b->path, sizeof(b->path), "/proc/self/fd/%d", b->fd);
			b->minimal = true;
		}
	}
	t1 = lp_clock_ns(CLOCK_MONOTONIC);
	if (b->minimal)
		lp_debug("btf: using the minimal kernel BTF (%zu bytes, built for %s; kernel BTF "
			 "identity checked in %.1f ms)",
			 lp_min_btf_len, lp_min_btf_release, (double)(t1 - t0) / 1e6);
	else
		lp_debug("btf: using the full kernel BTF (minimal BTF: %s)", why);
}

const char *coll_btf__path(const struct coll_btf *b)
{
	return b->minimal ? b->path : NULL;
}

int coll_btf__prepare(struct coll_btf *b, struct bpf_object *obj)
{
	struct bpf_program *prog;

	if (!b->handler_id)
		return 0; /* libbpf's own tp_btf handler */
	bpf_object__for_each_program(prog, obj)
	{
		const char *sec = bpf_program__section_name(prog);
		int err;

		if (!bpf_program__autoload(prog) ||
		    strncmp(sec, TP_BTF_PREFIX, strlen(TP_BTF_PREFIX)))
			continue;
		if (b->minimal) {
			if (!attach_target(prog))
				return -ESRCH;
			/* any fd > 0: only stored, replaced in tp_btf_prepare_load */
			err = bpf_program__set_attach_target(prog, b->fd, NULL);
		} else {
			err = bpf_program__set_attach_target(prog, 0, sec + strlen(TP_BTF_PREFIX));
		}
		if (err)
			return err;
	}
	return 0;
}

void coll_btf__use_full(struct coll_btf *b)
{
	b->minimal = false;
}

void coll_btf__free(struct coll_btf *b)
{
	/* the handler stays registered: see register_tp_btf */
	b->handler_id = 0;
	if (b->fd >= 0)
		close(b->fd);
	b->fd = -1;
	b->minimal = false;
}

unsigned long coll_peak_rss_kib(void)
{
	char line[256];
	unsigned long kib = 0;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %lu kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}
