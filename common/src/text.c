// SPDX-License-Identifier: MIT
#include <stdint.h>
#include <string.h>

#include "lowprof/text.h"

/*
 * Length of the well-formed, printable UTF-8 character at s (s[0] >= 0x80,
 * left >= 1 bytes from s on), or 0.
 */
static size_t utf8_char_len(const unsigned char *s, size_t left)
{
	unsigned c = s[0], lo = 0x80, hi = 0xbf;
	size_t n;

	if (c >= 0xc2 && c <= 0xdf)
		n = 2, lo = c == 0xc2 ? 0xa0 : 0x80; /* U+0080..U+009F: C1 controls */
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;
	else
		return 0; /* continuation byte, overlong lead (c0, c1) or > U+10FFFF */
	if (n > left || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	/* U+2028..U+202E (line/paragraph separators, bidi embeddings) */
	if (c == 0xe2 && s[1] == 0x80 && s[2] >= 0xa8 && s[2] <= 0xae)
		return 0;
	/* U+2066..U+2069 (bidi isolates) */
	if (c == 0xe2 && s[1] == 0x81 && s[2] >= 0xa6 && s[2] <= 0xa9)
		return 0;
	return n;
}

char *lp_sanitize(char *dst, size_t cap, const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str, *end = s + len;
	size_t o = 0, max = cap - 4;

	if (cap < 4) {
		if (cap)
			dst[0] = '\0';
		return dst;
	}
	while (s < end) {
		size_t n = *s < 0x80 ? 1 : utf8_char_len(s, (size_t)(end - s));

		if (o + (n ? n : 1) > max) {
			memcpy(dst + o, "...", 3);
			o += 3;
			break;
		}
		if (!n || (n == 1 && (*s < 0x20 || *s == 0x7f))) {
			dst[o++] = '?';
			s++;
			continue;
		}
		memcpy(dst + o, s, n);
		o += n;
		s += n;
	}
	dst[o] = '\0';
	return dst;
}

char *lp_sanitize_name(char *dst, size_t cap, const char *name)
{
	return lp_sanitize(dst, cap < LP_NAME_PRINT_MAX + 4 ? cap : LP_NAME_PRINT_MAX + 4, name,
			   strlen(name));
}
