// SPDX-License-Identifier: MIT
/*
 * HTTP for the exporter (exporter.h), with libcurl: one easy handle per
 * destination, kept between requests so its connection (and TLS session)
 * is reused, all on one multi handle so that the run loop waits for
 * transfers and its metrics endpoint together.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lowprof/log.h"
#include "exporter.h"

#define MAX_SLOTS EXP_NDEST
#define BODY_KEEP 120 /* bytes of an error answer kept for the log */

struct slot {
	CURL *easy;
	struct curl_slist *headers;
	bool busy;
	char answer[BODY_KEEP + 1]; /* the start of the answer's body */
	size_t answer_len;
	char errbuf[CURL_ERROR_SIZE];
};

struct exp_http {
	CURLM *multi;
	struct slot slots[MAX_SLOTS];
	int nslots;
};

struct exp_http *exp_http__new(void)
{
	struct exp_http *h;

	if (curl_global_init(CURL_GLOBAL_DEFAULT)) {
		lp_err("http: libcurl's set-up failed");
		return NULL;
	}
	h = calloc(1, sizeof(*h));
	if (h)
		h->multi = curl_multi_init();
	if (!h || !h->multi) {
		free(h);
		curl_global_cleanup();
		lp_err("http: out of memory");
		return NULL;
	}
	return h;
}

void exp_http__free(struct exp_http *h)
{
	if (!h)
		return;
	for (int i = 0; i < h->nslots; i++) {
		if (h->slots[i].busy)
			curl_multi_remove_handle(h->multi, h->slots[i].easy);
		curl_easy_cleanup(h->slots[i].easy);
		curl_slist_free_all(h->slots[i].headers);
	}
	curl_multi_cleanup(h->multi);
	free(h);
	curl_global_cleanup();
}

/* The answer's body: the start kept for an error message, the rest counted away. */
static size_t on_body(char *p, size_t size, size_t n, void *arg)
{
	struct slot *s = arg;
	size_t len = size * n, room = BODY_KEEP - s->answer_len;

	if (room) {
		size_t k = len < room ? len : room;

		memcpy(s->answer + s->answer_len, p, k);
		s->answer_len += k;
	}
	return len;
}

int exp_http__slot(struct exp_http *h, const char *url, const char *const *headers,
		   const char *ca_file, uint32_t timeout_ms)
{
	struct slot *s;
	int err = -ENOMEM;

	if (h->nslots == MAX_SLOTS)
		return -ENOSPC;
	s = &h->slots[h->nslots];
	memset(s, 0, sizeof(*s));
	s->easy = curl_easy_init();
	if (!s->easy)
		goto err_out;
	for (size_t i = 0; headers && headers[i]; i++) {
		struct curl_slist *l = curl_slist_append(s->headers, headers[i]);

		if (!l)
			goto err_out;
		s->headers = l;
	}
	/* the body is sent as it is: no "Expect: 100-continue" round trip */
	{
		struct curl_slist *l = curl_slist_append(s->headers, "Expect:");

		if (!l)
			goto err_out;
		s->headers = l;
	}
	err = -EINVAL;
	if (curl_easy_setopt(s->easy, CURLOPT_URL, url) ||
	    curl_easy_setopt(s->easy, CURLOPT_HTTPHEADER, s->headers) ||
	    curl_easy_setopt(s->easy, CURLOPT_POST, 1L) ||
	    curl_easy_setopt(s->easy, CURLOPT_TIMEOUT_MS, (long)timeout_ms) ||
	    curl_easy_setopt(s->easy, CURLOPT_CONNECTTIMEOUT_MS,
			     (long)(timeout_ms < 10000 ? timeout_ms : 10000)) ||
	    curl_easy_setopt(s->easy, CURLOPT_NOSIGNAL, 1L) ||
	    /* http and https only, and never redirected elsewhere */
	    curl_easy_setopt(s->easy, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(s->easy, CURLOPT_FOLLOWLOCATION, 0L) ||
	    curl_easy_setopt(s->easy, CURLOPT_WRITEFUNCTION, on_body) ||
	    curl_easy_setopt(s->easy, CURLOPT_WRITEDATA, s) ||
	    curl_easy_setopt(s->easy, CURLOPT_ERRORBUFFER, s->errbuf) ||
	    curl_easy_setopt(s->easy, CURLOPT_USERAGENT, "lowprof-exporter/" LOWPROF_VERSION) ||
	    curl_easy_setopt(s->easy, CURLOPT_PRIVATE, (void *)(intptr_t)h->nslots))
		goto err_out;
	if (ca_file && curl_easy_setopt(s->easy, CURLOPT_CAINFO, ca_file))
		goto err_out;
	return h->nslots++;
err_out:
	curl_easy_cleanup(s->easy);
	curl_slist_free_all(s->headers);
	memset(s, 0, sizeof(*s));
	return err;
}

bool exp_http__busy(const struct exp_http *h, int slot)
{
	return slot >= 0 && slot < h->nslots && h->slots[slot].busy;
}

int exp_http__post(struct exp_http *h, int slot, const void *body, size_t len)
{
	struct slot *s;

	if (slot < 0 || slot >= h->nslots || h->slots[slot].busy)
		return -EINVAL;
	s = &h->slots[slot];
	s->answer_len = 0;
	s->errbuf[0] = '\0';
	if (curl_easy_setopt(s->easy, CURLOPT_POSTFIELDS, body) ||
	    curl_easy_setopt(s->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len))
		return -EINVAL;
	if (curl_multi_add_handle(h->multi, s->easy))
		return -ENOMEM;
	s->busy = true;
	return 0;
}

/* The start of an answer's body as one printable line. */
static void answer_text(const struct slot *s, char *out, size_t cap)
{
	size_t n = 0;

	for (size_t i = 0; i < s->answer_len && n + 1 < cap; i++) {
		unsigned char c = (unsigned char)s->answer[i];

		out[n++] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	out[n] = '\0';
}

static void finish(struct exp_http *h, CURLMsg *m,
		   void (*done)(int slot, const struct exp_http_result *r, void *arg), void *arg)
{
	struct exp_http_result r = {.retry_after_ms = -1};
	void *priv = NULL;
	curl_off_t ra = -1;
	int slot;

	curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
	slot = (int)(intptr_t)priv;
	if (slot < 0 || slot >= h->nslots)
		return;
	curl_multi_remove_handle(h->multi, m->easy_handle);
	h->slots[slot].busy = false;
	r.curl_code = (int)m->data.result;
	if (r.curl_code == CURLE_OK) {
		char text[BODY_KEEP + 1];

		curl_easy_getinfo(m->easy_handle, CURLINFO_RESPONSE_CODE, &r.status);
		if (!curl_easy_getinfo(m->easy_handle, CURLINFO_RETRY_AFTER, &ra) && ra > 0)
			r.retry_after_ms = (int64_t)ra * 1000;
		answer_text(&h->slots[slot], text, sizeof(text));
		snprintf(r.why, sizeof(r.why), "HTTP %ld%s%s", r.status, text[0] ? ": " : "", text);
	} else {
		const char *e = h->slots[slot].errbuf;

		snprintf(r.why, sizeof(r.why), "%s", e[0] ? e : curl_easy_strerror(m->data.result));
	}
	done(slot, &r, arg);
}

int exp_http__run(struct exp_http *h, struct pollfd *extra, unsigned nextra, int timeout_ms,
		  void (*done)(int slot, const struct exp_http_result *r, void *arg), void *arg)
{
	struct curl_waitfd w[8];
	int running = 0, left;
	CURLMcode mc;
	CURLMsg *m;

	if (nextra > 8)
		nextra = 8;
	for (unsigned i = 0; i < nextra; i++) {
		w[i].fd = extra[i].fd;
		w[i].events = CURL_WAIT_POLLIN;
		w[i].revents = 0;
	}
	mc = curl_multi_poll(h->multi, w, nextra, timeout_ms, NULL);
	if (mc != CURLM_OK && mc != CURLM_UNRECOVERABLE_POLL)
		return -EIO;
	for (unsigned i = 0; i < nextra; i++)
		extra[i].revents = (w[i].revents & CURL_WAIT_POLLIN) ? POLLIN : 0;
	if (curl_multi_perform(h->multi, &running) != CURLM_OK)
		return -EIO;
	while ((m = curl_multi_info_read(h->multi, &left)))
		if (m->msg == CURLMSG_DONE)
			finish(h, m, done, arg);
	return 0;
}

/* ---- header files ----------------------------------------------------------- */

void exp_headers_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static bool token_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       (c && strchr("!#$%&'*+-.^_`|~", c));
}

/* One "Name: value" line, trimmed: 0, or -EINVAL with the reason in why. */
static int check_line(char *line, const char **why)
{
	char *colon = strchr(line, ':');

	if (!colon || colon == line) {
		*why = "not \"Name: value\"";
		return -EINVAL;
	}
	for (char *p = line; p < colon; p++)
		if (!token_char(*p)) {
			*why = "a header name has a character HTTP does not allow";
			return -EINVAL;
		}
	for (char *p = colon + 1; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t') {
			*why = "a control character in the value";
			return -EINVAL;
		}
	if (!strncasecmp(line, "Content-Type:", 13) || !strncasecmp(line, "Content-Length:", 15) ||
	    !strncasecmp(line, "Content-Encoding:", 17) || !strncasecmp(line, "Host:", 5)) {
		*why = "the exporter sets this header itself";
		return -EINVAL;
	}
	return 0;
}

int exp_headers_parse(char *buf, const char *path, char ***out)
{
	char **v = calloc(1, sizeof(*v));
	const char *why = NULL;
	size_t n = 0;
	int err = 0, lineno = 0;

	*out = NULL;
	if (!v)
		return -ENOMEM;
	for (char *line = buf, *next; line && *line; line = next) {
		char **g;
		size_t ll;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		ll = strlen(line);
		if (ll && line[ll - 1] == '\r')
			line[ll - 1] = '\0';
		while (*line == ' ' || *line == '\t')
			line++;
		if (!*line || *line == '#')
			continue;
		if (check_line(line, &why)) {
			lp_err("headers: %s line %d: %s", path, lineno, why);
			err = -EINVAL;
			break;
		}
		g = realloc(v, (n + 2) * sizeof(*v));
		if (!g) {
			err = -ENOMEM;
			break;
		}
		v = g;
		v[n] = strdup(line);
		if (!v[n]) {
			err = -ENOMEM;
			break;
		}
		v[++n] = NULL;
	}
	if (err) {
		exp_headers_free(v);
		return err;
	}
	*out = v;
	return 0;
}

int exp_headers_read(const char *path, char ***out)
{
	/* links are followed (Kubernetes' secret files are links): the file itself is checked */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	char buf[16384];
	size_t len = 0;
	struct stat st;
	int err;
	ssize_t r;

	*out = NULL;
	if (fd < 0) {
		err = -errno;
		lp_err("headers: %s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		lp_err("headers: %s: not a regular file", path);
		close(fd);
		return -EINVAL;
	}
	/*
	 * secrets: this user's (or root's), and nobody else may read it: no
	 * permission for others, and for the group only if it is ours (a
	 * Kubernetes secret volume: root's, group fsGroup, 0440)
	 */
	if ((st.st_uid != geteuid() && st.st_uid != 0) || (st.st_mode & 007) ||
	    ((st.st_mode & 070) && st.st_gid != getegid())) {
		lp_err("headers: %s must belong to this user (uid %u) or root and be readable by "
		       "nobody else (chmod 600, or 440 with group %u; it is uid %u gid %u, mode "
		       "%03o)",
		       path, (unsigned)geteuid(), (unsigned)getegid(), (unsigned)st.st_uid,
		       (unsigned)st.st_gid, (unsigned)(st.st_mode & 0777));
		close(fd);
		return -EPERM;
	}
	while (len < sizeof(buf) - 1 && (r = read(fd, buf + len, sizeof(buf) - 1 - len)) > 0)
		len += (size_t)r;
	if (len == sizeof(buf) - 1 && read(fd, buf, 1) > 0) {
		lp_err("headers: %s: over %zu bytes", path, sizeof(buf) - 2);
		close(fd);
		explicit_bzero(buf, sizeof(buf));
		return -EFBIG;
	}
	close(fd);
	buf[len] = '\0';
	if (memchr(buf, '\0', len)) {
		lp_err("headers: %s: a NUL byte in it", path);
		err = -EINVAL;
	} else {
		err = exp_headers_parse(buf, path, out);
	}
	explicit_bzero(buf, sizeof(buf));
	return err;
}
