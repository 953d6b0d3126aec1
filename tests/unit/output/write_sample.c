// SPDX-License-Identifier: MIT
/*
 * Writes the fixture profiles with every writer, for the checks that need an
 * outside tool (go tool pprof, chromium): write_sample DIR creates
 * DIR/profile.pb.gz, DIR/profile.folded and DIR/profile.html from the sample
 * profile, and DIR/inline.pb.gz, .folded, .html from the inline profile.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

static int write_one(const char *dir, const char *name, const struct lpw_profile *p,
		     int (*writer)(const struct lpw_profile *, int))
{
	char path[4096];
	int fd, err;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "write_sample: %s: %s\n", path, strerror(errno));
		return 1;
	}
	err = writer(p, fd);
	if (close(fd) && !err)
		err = -errno;
	if (err) {
		fprintf(stderr, "write_sample: %s: %s\n", path, strerror(-err));
		return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: write_sample DIR\n");
		return 2;
	}
	return write_one(argv[1], "profile.pb.gz", fix_sample_profile(), lpw_write_pprof) |
	       write_one(argv[1], "profile.folded", fix_sample_profile(), lpw_write_folded) |
	       write_one(argv[1], "profile.html", fix_sample_profile(), lpw_write_flamegraph) |
	       write_one(argv[1], "inline.pb.gz", fix_inline_profile(), lpw_write_pprof) |
	       write_one(argv[1], "inline.folded", fix_inline_profile(), lpw_write_folded) |
	       write_one(argv[1], "inline.html", fix_inline_profile(), lpw_write_flamegraph);
}
