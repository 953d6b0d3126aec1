// SPDX-License-Identifier: MIT
/* SHA-256 (see sha256.h): portable rounds, and x86's SHA extensions. */
#include <stdio.h>
#include <string.h>

#include "sha256.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_NI 1
#endif

static const uint32_t sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static uint32_t ror(uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

static void blocks_portable(uint32_t st[8], const uint8_t *p, size_t nblocks)
{
	for (; nblocks; nblocks--, p += 64) {
		uint32_t w[64], a, b, c, d, e, f, g, h;

		for (int i = 0; i < 16; i++)
			w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
			       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
		for (int i = 16; i < 64; i++)
			w[i] = w[i - 16] +
			       (ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3)) +
			       w[i - 7] +
			       (ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10));
		a = st[0], b = st[1], c = st[2], d = st[3];
		e = st[4], f = st[5], g = st[6], h = st[7];
		for (int i = 0; i < 64; i++) {
			uint32_t t1 = h + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) +
				      ((e & f) ^ (~e & g)) + sha256_k[i] + w[i];
			uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) +
				      ((a & b) ^ (a & c) ^ (b & c));

			h = g, g = f, f = e, e = d + t1;
			d = c, c = b, b = a, a = t1 + t2;
		}
		st[0] += a, st[1] += b, st[2] += c, st[3] += d;
		st[4] += e, st[5] += f, st[6] += g, st[7] += h;
	}
}

#ifdef SHA256_NI
/*
 * The SHA extensions keep the state as ABEF and CDGH halves; each
 * sha256rnds2 does two rounds, and sha256msg1/msg2 extend the message
 * schedule four words at a time (Intel's "SHA extensions" paper, 2013).
 */
__attribute__((target("sha,ssse3,sse4.1"))) static void blocks_ni(uint32_t st[8], const uint8_t *p,
								  size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
	__m128i s0, s1, t, w[4];

	/* A..H in memory order to the ABEF and CDGH halves */
	t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[0]), 0xB1);
	s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&st[4]), 0x1B);
	s0 = _mm_alignr_epi8(t, s1, 8);
	s1 = _mm_blend_epi16(s1, t, 0xF0);
	for (; nblocks; nblocks--, p += 64) {
		__m128i abef = s0, cdgh = s1;

		for (int g = 0; g < 16; g++) {
			__m128i m;

			if (g < 4) {
				w[g] = _mm_shuffle_epi8(
					_mm_loadu_si128((const __m128i *)(p + 16 * g)), bswap);
			} else {
				/* W[g] from W[g-4..g-1], in w[g & 3] and the three after it */
				m = _mm_sha256msg1_epu32(w[g & 3], w[(g + 1) & 3]);
				m = _mm_add_epi32(
					m, _mm_alignr_epi8(w[(g + 3) & 3], w[(g + 2) & 3], 4));
				w[g & 3] = _mm_sha256msg2_epu32(m, w[(g + 3) & 3]);
			}
			m = _mm_add_epi32(w[g & 3],
					  _mm_loadu_si128((const __m128i *)&sha256_k[4 * g]));
			s1 = _mm_sha256rnds2_epu32(s1, s0, m);
			s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
		}
		s0 = _mm_add_epi32(s0, abef);
		s1 = _mm_add_epi32(s1, cdgh);
	}
	/* back to A..H in memory order */
	t = _mm_shuffle_epi32(s0, 0x1B);
	s1 = _mm_shuffle_epi32(s1, 0xB1);
	_mm_storeu_si128((__m128i *)&st[0], _mm_blend_epi16(t, s1, 0xF0));
	_mm_storeu_si128((__m128i *)&st[4], _mm_alignr_epi8(s1, t, 8));
}
#endif

bool coll_sha256_accelerated(void)
{
#ifdef SHA256_NI
	unsigned int a, b, c, d;

	/* CPUID.1: ECX bit 9 SSSE3, 19 SSE4.1; CPUID.(7,0): EBX bit 29 SHA */
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19)))
		return false;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
#else
	return false;
#endif
}

static void blocks(struct coll_sha256 *s, const uint8_t *p, size_t nblocks)
{
#ifdef SHA256_NI
	static int ni = -1;

	if (ni < 0)
		ni = coll_sha256_accelerated();
	if (ni && !s->portable) {
		blocks_ni(s->h, p, nblocks);
		return;
	}
#endif
	blocks_portable(s->h, p, nblocks);
}

void coll_sha256_init(struct coll_sha256 *s)
{
	static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
				       0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

	memcpy(s->h, h0, sizeof(h0));
	s->len = 0;
	s->nbuf = 0;
	s->portable = false;
}

void coll_sha256_update(struct coll_sha256 *s, const void *data, size_t n)
{
	const uint8_t *p = data;

	s->len += n;
	if (s->nbuf) {
		size_t k = 64 - s->nbuf < n ? 64 - s->nbuf : n;

		memcpy(s->buf + s->nbuf, p, k);
		s->nbuf += k, p += k, n -= k;
		if (s->nbuf < 64)
			return;
		blocks(s, s->buf, 1);
		s->nbuf = 0;
	}
	/* whole blocks straight from the input */
	if (n >= 64) {
		blocks(s, p, n / 64);
		p += n / 64 * 64;
		n %= 64;
	}
	memcpy(s->buf, p, n);
	s->nbuf = n;
}

void coll_sha256_hex(struct coll_sha256 *s, char out[65])
{
	uint64_t bits = s->len * 8;
	uint8_t pad[72] = {0x80};
	size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;

	for (int i = 0; i < 8; i++)
		pad[npad + i] = (uint8_t)(bits >> (56 - 8 * i));
	coll_sha256_update(s, pad, npad + 8);
	for (int i = 0; i < 8; i++)
		snprintf(out + 8 * i, 9, "%08x", s->h[i]);
}
