// SPDX-License-Identifier: MIT
/*
 * lp-hostile-capture FILE: writes a well-formed capture (the collector's
 * writer, the real encoders) whose strings are what a hostile capture
 * would carry to a terminal: escape sequences (ESC, BEL, an OSC title, a
 * screen clear), 8-bit and UTF-8 C1 CSIs, a bidi override, malformed
 * UTF-8 and NULs, in the hostname, the kernel release, the clock, the
 * producer, the off-CPU mode, mapping paths, every comm and the end
 * reason. tests/e2e/capture.sh runs lowprof capture-info on it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture.h"
#include "lowprof/schema.h"

#define S(lit) ((struct lps_str){lit, sizeof(lit) - 1})

static struct coll_capture *cap;

static void put(struct lps_enc *e)
{
	long n = lps_enc_len(e);

	if (n <= 0 || coll_capture__write(cap, e->buf, (uint32_t)n)) {
		fprintf(stderr, "lp-hostile-capture: a record of %ld bytes: failed\n", n);
		exit(1);
	}
	lps_enc_reset(e);
}

int main(int argc, char **argv)
{
	static const uint32_t pids[1] = {4242};
	static uint8_t kst[4 * 8];
	struct lps_meta m = {.major = LPS_VERSION_MAJOR,
			     .minor = LPS_VERSION_MINOR,
			     .hostname = S("\x1b]0;owned\x07host\x1b[2J"),
			     .kernel_release = S("6.1\x9b"
						 "31m\xc2\x9b"
						 "1m"),
			     .clock = S("CLOCK\xe2\x80\xae"
					"CINOTONOM"),
			     .start_mono_ns = 1000000000,
			     .start_real_ns = 1700000000000000000ull,
			     .freq_hz = 99,
			     .ncpus_online = 2,
			     .drain_ms = 100,
			     .npids = 1,
			     .producer = S("\x1bP+q\x1b\\evil\xff\xfe"),
			     .stack_bytes = 0,
			     .off_cpu = true,
			     .off_cpu_mode = S("\x1b[5mx\0y"),
			     .off_cpu_rate = 0.5};
	struct lps_mapping map = {.start = 0x400000,
				  .end = 0x401000,
				  .dev_major = 8,
				  .inode = 12,
				  .prot = LPS_PROT_R | LPS_PROT_X | LPS_PROT_P,
				  .path = S("/tmp/\x1b[31mevil\x07.so")};
	struct lps_sample smp = {.kind = LPS_KIND_CPU,
				 .time_ns = 1100000000,
				 .pid = 4242,
				 .tid = 4242,
				 .comm = S("\x1b[1;31mEVIL\x07\x9b"),
				 .weight = 10000000,
				 .kstack = kst,
				 .nkstack = 4};
	struct lps_exec x = {.time_ns = 1200000000, .pid = 4242, .comm = S("\x1b]2;t\x07")};
	struct lps_end end = {.time_ns = 1300000000, .reason = S("\x1b[2J\x1b[Hdone\xc0\xaf")};
	struct lps_enc e;
	int fd;

	if (argc != 2) {
		fprintf(stderr, "usage: lp-hostile-capture FILE\n");
		return 2;
	}
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || coll_capture__new(fd, false, &cap)) {
		fprintf(stderr, "lp-hostile-capture: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (uint32_t i = 0; i < sizeof(kst); i++)
		kst[i] = (uint8_t)(0x80 + i);
	lps_enc_init_dynamic(&e);
	lps_enc_meta(&e, &m, pids, NULL);
	put(&e);
	lps_enc_maps_begin(&e, 1050000000, 4242, false, 1);
	lps_enc_mapping(&e, &map);
	put(&e);
	for (int i = 0; i < 3; i++) {
		smp.tid = 4242 + (uint32_t)i;
		lps_enc_sample(&e, &smp);
		put(&e);
	}
	lps_enc_exec(&e, &x);
	put(&e);
	lps_enc_end(&e, &end);
	put(&e);
	lps_enc_free(&e);
	if (coll_capture__finish(cap)) {
		fprintf(stderr, "lp-hostile-capture: writing %s failed\n", argv[1]);
		return 1;
	}
	coll_capture__free(cap);
	close(fd);
	return 0;
}
