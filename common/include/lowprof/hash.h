/* SPDX-License-Identifier: MIT */
/*
 * Hash mixing for in-memory tables: a 64-bit finalizer, a chained hash of
 * byte strings, and the seed of a table. What it is: fast, well-mixed
 * hashes for open-addressing tables; where a record stream or a file
 * chooses the keys, callers seed them with lp_hash_seed (no flooding).
 * What it is not: a cryptographic hash or a stable one; never store these
 * values.
 */
#ifndef LOWPROF_HASH_H
#define LOWPROF_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

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

/*
 * A seed for a table whose keys a stream or a file chooses: unpredictable
 * (getrandom), or, where that fails, salt's address and the time mixed.
 * It changes the table's layout only, never what comes out of it.
 */
static inline uint64_t lp_hash_seed(const void *salt)
{
	uint64_t seed;

	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == sizeof(seed))
		return seed;
	return lp_mix64((uint64_t)(uintptr_t)salt ^ (uint64_t)time(NULL));
}

#endif /* LOWPROF_HASH_H */
