/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4), streaming, for the kernel BTF's identity check
 * (btf.c): the build records CMake's file(SHA256) of the BTF it was made
 * from. With the x86 SHA extensions (checked at run time) a block takes a
 * few instructions, ~6x faster than the portable rounds here, which every
 * start of the collector pays for ~5 MB of BTF. Not a general crypto API:
 * no secrets go through it. Not libcrypto, which the symbolizer's cache
 * uses: linked into the collector it raised the collector's RSS from
 * 6.1-7.2 to 10.1-10.6 MiB (4 runs each, whole host, 99 Hz), past its
 * 8 MB goal, and its start cost ~2 ms of CPU more.
 */
#ifndef LOWPROF_COLL_SHA256_H
#define LOWPROF_COLL_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct coll_sha256 {
	uint32_t h[8];
	uint64_t len;
	uint8_t buf[64];
	size_t nbuf;
	bool portable; /* the portable rounds even where the extensions exist (tests) */
};

void coll_sha256_init(struct coll_sha256 *s);
void coll_sha256_update(struct coll_sha256 *s, const void *p, size_t n);
/* Ends s: the digest as 64 lowercase hex digits and a NUL. */
void coll_sha256_hex(struct coll_sha256 *s, char out[65]);
/* Whether this CPU runs the SHA extensions' rounds. */
bool coll_sha256_accelerated(void);

#endif /* LOWPROF_COLL_SHA256_H */
