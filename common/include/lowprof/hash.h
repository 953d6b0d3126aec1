/* SPDX-License-Identifier: MIT */
/*
 * Hash mixing for in-memory tables: a 64-bit finalizer, a chained hash of
 * byte strings, and FNV-1a. What it is: fast, well-mixed hashes for
 * open-addressing tables; where a record stream or a file chooses the
 * keys, callers seed them with an unpredictable value (no flooding). What
 * it is not: a cryptographic hash or a stable one; never store these
 * values.
 */
#ifndef LOWPROF_HASH_H
#define LOWPROF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Bijective 64-bit mixer (MurmurHash3's fmix64). */
static inline uint64_t lp_mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ull;
	x ^= x >> 33;
	return x;
}

/* Hash of p[0..n), chained from h; the length is part of the hash. */
static inline uint64_t lp_hash_bytes(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t v = 0;

	for (; n >= 8; b += 8, n -= 8) {
		memcpy(&v, b, 8);
		h = lp_mix64(h ^ v);
	}
	v = 0;
	memcpy(&v, b, n);
	return lp_mix64(h ^ v ^ (uint64_t)n << 59);
}

/* FNV-1a of p[0..n) (unseeded: for keys no stream chooses, or bounded tables). */
static inline uint64_t lp_fnv1a(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* lp_fnv1a of a NUL-terminated string, the NUL excluded. */
static inline uint64_t lp_fnv1a_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

#endif /* LOWPROF_HASH_H */
