/* SPDX-License-Identifier: MIT */
/*
 * Getting the collector's ring over its --ring socket, at start and again
 * whenever a collector starts after the last one ended.
 *
 * What it is: the connection (connect, the check of who listens, the ring's
 * descriptors received) and, for a service run, the connector: a process
 * forked before the sandbox goes on, which alone may make a Unix socket and
 * connect it to that one path (its own seccomp filter), and hands each new
 * ring to the symbolizer over a socket pair. The symbolizer itself, in its
 * sandbox, can make no socket. What it is not: mapping or checking the ring
 * (run.c does, whoever received it).
 */
#ifndef LOWPROF_SYMB_ATTACH_H
#define LOWPROF_SYMB_ATTACH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Which ring of the collector's a received one is (lowprof/shard.h):
 * shard of nshards; 0 of 1 from a collector without shards.
 */
struct symb_shard {
	uint32_t shard, nshards;
};

/*
 * Connects to the collector's socket at path, waiting up to wait_ms for it
 * to appear, checks that root or collector_uid listens on it, and receives
 * the ring: fds[0] its data (read-only), fds[1] its consumer page, and
 * *sock the connection, which stays open as the file channel. *resumed: the
 * ring is in use (we replace a symbolizer that died). A collector that
 * resets the connection (on its way out) is waited past like an absent
 * one. Stops waiting when *stop becomes non-zero. *pid (pid may be NULL):
 * the listener's pid (SO_PEERCRED), for the metrics' resident memory.
 * *shard (may be NULL): which of the collector's rings it is (a collector
 * with --shards hands each symbolizer the lowest shard that has none). 0,
 * -ETIMEDOUT (quiet: nothing listened in time), or another -errno after
 * saying why.
 */
int symb_receive_ring(const char *path, uid_t collector_uid, unsigned wait_ms,
		      const volatile int *stop, int fds[2], int *sock, bool *resumed, pid_t *pid,
		      struct symb_shard *shard);

struct symb_connector;

/*
 * Forks the connector for path (before the sandbox; with sandbox, it enters
 * its own filter). 0 or -errno. Destructor: symb_connector__stop.
 */
int symb_connector__start(const char *path, uid_t collector_uid, bool sandbox,
			  struct symb_connector **out);
/*
 * The next ring: asks the connector to wait up to wait_ms for a collector.
 * 0 with fds[0..2] (data, consumer page, file channel), *resumed, the
 * collector's pid in *pid and the ring's shard in *shard (either may be
 * NULL);
 * -ETIMEDOUT when none came in time (ask again); another -errno when the
 * connector is gone or refused what listened (said why).
 */
int symb_connector__get(struct symb_connector *c, unsigned wait_ms, int fds[3], bool *resumed,
			pid_t *pid, struct symb_shard *shard);
void symb_connector__stop(struct symb_connector *c); /* NULL-safe */

#endif /* LOWPROF_SYMB_ATTACH_H */
