// SPDX-License-Identifier: MIT
/*
 * lp-hangfs: a FUSE file system that hangs, as a dead NFS server or a stuck
 * FUSE daemon does, for the file broker's test (tests/e2e/broker.sh).
 *
 *   lp-hangfs SOURCE MOUNTPOINT [--serve-opens N] [--hang-reads] [--hang-lookups]
 *
 * Shows one read-only file, MOUNTPOINT/bin, with SOURCE's bytes (read
 * once, at start) and its mode. The first N opens of it (default 1) are
 * served; every later open never returns: the opener waits in the kernel
 * until the daemon dies, which aborts the connection. With --hang-reads,
 * every read hangs too (the page cache then never gets the file's pages).
 * Lookups and attributes are served, except with --hang-lookups: a lookup
 * of any name but bin then never returns (as on a /tmp mounted over by a
 * stuck daemon in a user's own mount namespace). Runs in the foreground
 * until SIGTERM (then unmounts) or SIGKILL (the kernel fails what waits).
 */
#define FUSE_USE_VERSION 31

#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *content;
static size_t content_len;
static mode_t content_mode;
static int serve_opens = 1, opens;
static int hang_reads, hang_lookups;

/* Waits until the process ends (the kernel then fails the request). */
static void hang(void)
{
	for (;;)
		pause();
}

static int hf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (!strcmp(path, "/")) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
		return 0;
	}
	if (strcmp(path, "/bin")) {
		if (hang_lookups)
			hang();
		return -ENOENT;
	}
	st->st_mode = S_IFREG | (content_mode & 0777);
	st->st_nlink = 1;
	st->st_size = (off_t)content_len;
	return 0;
}

static int hf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		      struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/"))
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "bin", NULL, 0, 0);
	return 0;
}

static int hf_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/bin"))
		return -ENOENT;
	if ((fi->flags & O_ACCMODE) != O_RDONLY)
		return -EACCES;
	if (__atomic_fetch_add(&opens, 1, __ATOMIC_RELAXED) >= serve_opens)
		hang();
	fi->keep_cache = 1;
	return 0;
}

static int hf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)path, (void)fi;
	if (hang_reads)
		hang();
	if (off < 0 || (size_t)off >= content_len)
		return 0;
	if (size > content_len - (size_t)off)
		size = content_len - (size_t)off;
	memcpy(buf, content + off, size);
	return (int)size;
}

static void *hf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	/* the kernel keeps attributes and names: only opens and reads reach us */
	cfg->entry_timeout = cfg->attr_timeout = 3600;
	cfg->kernel_cache = 1;
	return NULL;
}

static const struct fuse_operations ops = {
	.init = hf_init,
	.getattr = hf_getattr,
	.readdir = hf_readdir,
	.open = hf_open,
	.read = hf_read,
};

static int load(const char *src)
{
	struct stat st;
	int fd = open(src, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) || !(content = malloc((size_t)st.st_size + 1)))
		return -1;
	content_len = (size_t)st.st_size;
	content_mode = st.st_mode;
	for (size_t got = 0; got < content_len;) {
		ssize_t n = read(fd, content + got, content_len - got);

		if (n <= 0)
			return -1;
		got += (size_t)n;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	char *fargv[8];
	int fargc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: lp-hangfs SOURCE MOUNTPOINT [--serve-opens N] "
				"[--hang-reads] [--hang-lookups]\n");
		return 2;
	}
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "--serve-opens") && i + 1 < argc)
			serve_opens = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--hang-reads"))
			hang_reads = 1;
		else if (!strcmp(argv[i], "--hang-lookups"))
			hang_lookups = 1;
		else
			return 2;
	}
	if (load(argv[1])) {
		perror("lp-hangfs: reading the source");
		return 1;
	}
	fargv[fargc++] = argv[0];
	fargv[fargc++] = "-f"; /* foreground */
	fargv[fargc++] = "-o";
	fargv[fargc++] = "fsname=lp-hangfs,ro";
	fargv[fargc++] = argv[2];
	fargv[fargc] = NULL;
	return fuse_main(fargc, fargv, &ops, NULL);
}
