// SPDX-License-Identifier: MIT
/* Series and resource names shared by the encoders (exp.h). */
#include <string.h>

#include "exp.h"

static void put_clean(char *buf, size_t len, const char *prefix, const char *s, size_t max)
{
	size_t n = 0;

	for (const char *p = prefix; *p && n + 1 < len; p++)
		buf[n++] = *p;
	for (size_t i = 0; s[i] && i < max && n + 1 < len; i++) {
		char c = s[i];
		int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '/' || c == '-';

		buf[n++] = ok ? c : '_';
	}
	buf[n] = '\0';
}

void exp_service_name(const struct exp_identity *id, const struct lpw_stack *s, char *buf,
		      size_t len)
{
	if (!len)
		return;
	if (id->service_name && *id->service_name) {
		put_clean(buf, len, "", id->service_name, (size_t)-1);
	} else if (s->container_id && *s->container_id) {
		put_clean(buf, len, "container/", s->container_id, 12);
	} else if (s->exe && *s->exe) {
		const char *base = strrchr(s->exe, '/');

		base = base ? base + 1 : s->exe;
		put_clean(buf, len, "", *base ? base : s->exe, (size_t)-1);
	} else if (s->comm && *s->comm) {
		put_clean(buf, len, "", s->comm, (size_t)-1);
	} else {
		put_clean(buf, len, "", "unknown", (size_t)-1);
	}
	if (!buf[0])
		put_clean(buf, len, "", "unknown", (size_t)-1);
}
