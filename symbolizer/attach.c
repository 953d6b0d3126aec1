// SPDX-License-Identifier: MIT
/*
 * The collector's ring over its socket, and the connector that fetches the
 * next one for a sandboxed service run (attach.h).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "lowprof/files.h"
#include "lowprof/log.h"
#include "lowprof/shard.h"
#include "sandbox.h"

/*
 * The peer of a connected --ring socket is the collector only if it runs
 * as root or as --collector-uid: anyone who can create a socket at PATH
 * (the ring's own user too, where the directory lets it) could serve a
 * ring of their making, with mappings and file descriptors it chose.
 * SO_PEERCRED gives the credentials the listener had when it called
 * listen(), which its process cannot change. 0 or -EPERM (said why).
 */
static int check_collector(int s, const char *path, uid_t collector_uid, pid_t *pid)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(s, SOL_SOCKET, SO_PEERCRED, &cred, &len)) {
		lp_err("ring: %s: who serves the socket: %m", path);
		return -EPERM;
	}
	*pid = cred.pid;
	if (cred.uid == 0 || cred.uid == collector_uid)
		return 0;
	if (collector_uid)
		lp_err("ring: %s is served by uid %u (pid %d), not by the collector (root or "
		       "--collector-uid %u): refusing it",
		       path, (unsigned int)cred.uid, (int)cred.pid, (unsigned int)collector_uid);
	else
		lp_err("ring: %s is served by uid %u (pid %d), not by the collector (root): "
		       "refusing it; give --collector-uid if the collector runs as that user",
		       path, (unsigned int)cred.uid, (int)cred.pid);
	return -EPERM;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/*
 * The hand-off message (lowprof/shard.h) of n bytes in h: its `how` alone
 * from a collector without shards (shard 0 of 1), or all of it, with a
 * shard below its count. Whether it is one.
 */
static bool hello_ok(struct lp_shard_hello *h, ssize_t n)
{
	if (n == 1) {
		h->shard = 0;
		h->nshards = 1;
	} else if (n != (ssize_t)sizeof(*h) || h->zero || !h->nshards ||
		   h->nshards > LP_MAX_SHARDS || h->shard >= h->nshards) {
		return false;
	}
	return h->how == LP_SHARD_HELLO_FRESH || h->how == LP_SHARD_HELLO_RESUMED;
}

/* The ring from a connected socket s: 0 or -errno (said why, but -ECONNRESET). */
static int take_ring(int s, const char *path, uid_t collector_uid, int fds[2], bool *resumed,
		     pid_t *pid, struct symb_shard *shard)
{
	struct lp_shard_hello h = {0};
	int nfds = 0, err;
	ssize_t n;

	/* before anything is read from it */
	err = check_collector(s, path, collector_uid, pid);
	if (err)
		return err;
	n = lp_recv_msg(s, &h, sizeof(h), fds, 2, &nfds, 0, NULL);
	err = n < 0 ? (int)n : 0;
	if (!err && (!hello_ok(&h, n) || nfds != 2)) {
		while (nfds > 0)
			close(fds[--nfds]);
		err = -EBADMSG;
	}
	/* reset: a collector on its way out still had the socket (quiet: the caller waits on) */
	if (err && err != -ECONNRESET)
		lp_err("ring: receiving the ring from %s: %s", path,
		       err == -EPIPE ? "refused (are we the ring's --ring-owner?)"
				     : strerror(-err));
	if (err)
		return err;
	*resumed = h.how == LP_SHARD_HELLO_RESUMED;
	if (shard)
		*shard = (struct symb_shard){h.shard, h.nshards};
	return 0;
}

int symb_receive_ring(const char *path, uid_t collector_uid, unsigned wait_ms,
		      const volatile int *stop, int fds[2], int *sock, bool *resumed, pid_t *pid,
		      struct symb_shard *shard)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	pid_t peer = 0;
	int err = 0;

	if (strlen(path) >= sizeof(a.sun_path)) {
		lp_err("ring: socket path %s is too long", path);
		return -ENAMETOOLONG;
	}
	strcpy(a.sun_path, path);
	for (unsigned waited = 0;; waited += 100) {
		int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

		if (s < 0)
			return -errno;
		if (connect(s, (struct sockaddr *)&a, sizeof(a)) == 0) {
			err = take_ring(s, path, collector_uid, fds, resumed, &peer, shard);
			if (!err) {
				*sock = s;
				if (pid)
					*pid = peer;
				return 0;
			}
			close(s);
			if (err != -ECONNRESET)
				return err; /* said why */
		} else {
			err = -errno;
			close(s);
			if (err != -ENOENT && err != -ECONNREFUSED) {
				lp_err("ring: connecting to %s: %s", path, strerror(-err));
				return err;
			}
		}
		if (waited >= wait_ms || (stop && *stop))
			return -ETIMEDOUT;
		sleep_ms(100);
	}
}

/* ---- the connector ------------------------------------------------------ */

struct symb_connector {
	pid_t pid;
	int sock; /* to it: requests (the wait, u32), answers (struct conn_rep + fds) */
};

struct conn_rep {
	int32_t err;
	int32_t pid; /* the collector's (SO_PEERCRED), for the metrics */
	uint8_t resumed;
	uint8_t shard, nshards; /* the ring's shard (take_ring checked them) */
};

static void connector_main(int sock, const char *path, uid_t collector_uid, pid_t parent,
			   bool sandbox)
{
	/* the symbolizer finishes its window on SIGINT/SIGTERM; we just go with it */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(0);
	/* only the socket to the symbolizer and stderr: nothing else is ours */
	if (sock > 3)
		close_range(3, (unsigned int)sock - 1, 0);
	close_range((unsigned int)sock + 1, ~0u, 0);
	if (sandbox && symb_sandbox_enter_connector())
		_exit(1);
	for (;;) {
		struct conn_rep rep = {0};
		int fds[3] = {-1, -1, -1};
		uint32_t wait_ms;
		struct symb_shard shard = {0, 1};
		bool resumed = false;
		pid_t pid = 0;

		if (recv(sock, &wait_ms, sizeof(wait_ms), 0) != sizeof(wait_ms))
			_exit(0); /* the symbolizer is done */
		rep.err = symb_receive_ring(path, collector_uid, wait_ms, NULL, fds, &fds[2],
					    &resumed, &pid, &shard);
		rep.resumed = resumed;
		rep.shard = (uint8_t)shard.shard;
		rep.nshards = (uint8_t)shard.nshards;
		rep.pid = (int32_t)pid;
		if (lp_send_msg(sock, &rep, sizeof(rep), rep.err ? NULL : fds, rep.err ? 0 : 3))
			_exit(1);
		for (int i = 0; i < 3; i++)
			if (fds[i] >= 0)
				close(fds[i]);
	}
}

int symb_connector__start(const char *path, uid_t collector_uid, bool sandbox,
			  struct symb_connector **out)
{
	struct symb_connector *c = calloc(1, sizeof(*c));
	pid_t self = getpid();
	int sv[2], err;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv)) {
		err = -errno;
		free(c);
		lp_err("ring: the connector's socket: %s", strerror(-err));
		return err;
	}
	c->pid = fork();
	if (c->pid < 0) {
		err = -errno;
		close(sv[0]);
		close(sv[1]);
		free(c);
		lp_err("ring: starting the connector: %s", strerror(-err));
		return err;
	}
	if (c->pid == 0) {
		close(sv[0]);
		connector_main(sv[1], path, collector_uid, self, sandbox);
		_exit(0);
	}
	close(sv[1]);
	c->sock = sv[0];
	*out = c;
	return 0;
}

int symb_connector__get(struct symb_connector *c, unsigned wait_ms, int fds[3], bool *resumed,
			pid_t *pid, struct symb_shard *shard)
{
	uint32_t w = wait_ms;
	struct conn_rep rep;
	int nfds = 0;
	ssize_t n;

	/* sendmsg: the symbolizer's sandbox has no sendto */
	if (lp_send_msg(c->sock, &w, sizeof(w), NULL, 0))
		return -EPIPE;
	/* the answer comes within wait_ms: a signal meanwhile does not lose it */
	do
		n = lp_recv_msg(c->sock, &rep, sizeof(rep), fds, 3, &nfds, 0, NULL);
	while (n == -EINTR);
	/* the connector is ours, but checked as the rest: a shard below its count */
	if (n != sizeof(rep) || (rep.err == 0) != (nfds == 3) ||
	    (!rep.err &&
	     (!rep.nshards || rep.nshards > LP_MAX_SHARDS || rep.shard >= rep.nshards))) {
		while (nfds > 0)
			close(fds[--nfds]);
		return n < 0 ? (int)n : -EBADMSG;
	}
	*resumed = rep.resumed;
	if (pid && !rep.err)
		*pid = rep.pid;
	if (shard && !rep.err)
		*shard = (struct symb_shard){rep.shard, rep.nshards};
	return rep.err;
}

void symb_connector__stop(struct symb_connector *c)
{
	if (!c)
		return;
	close(c->sock); /* it reads the end and exits */
	free(c);
}
