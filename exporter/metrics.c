// SPDX-License-Identifier: MIT
/*
 * The exporter's /metrics endpoint (exporter.h): Prometheus' text format
 * over the little HTTP a scraper speaks: one GET per connection, answered
 * and closed. A handful of clients at once, each given a few seconds to
 * send its request; anything else gets 404 or 405.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "lowprof/clock.h"
#include "lowprof/log.h"
#include "exporter.h"

#define MAX_CLIENTS 4
#define REQ_MAX	    4096
#define PAGE_MAX    (64u << 10)
#define CLIENT_MS   5000

struct client {
	int fd;
	size_t len;
	int64_t deadline_ms;
	char req[REQ_MAX];
};

struct exp_metrics {
	int listen_fd;
	struct client c[MAX_CLIENTS];
	char *page;
};

struct exp_metrics *exp_metrics__new(const char *addr)
{
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
	char host[256];
	const char *colon = strrchr(addr, ':'), *port;
	struct exp_metrics *m;
	int one = 1, rc, fd = -1;

	if (!colon || !colon[1] || (size_t)(colon - addr) >= sizeof(host)) {
		lp_err("metrics: %s is not HOST:PORT (e.g. 127.0.0.1:9464, :9464)", addr);
		return NULL;
	}
	memcpy(host, addr, (size_t)(colon - addr));
	host[colon - addr] = '\0';
	port = colon + 1;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = '\0';
	}
	rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		lp_err("metrics: %s: %s", addr, gai_strerror(rc));
		return NULL;
	}
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) || listen(fd, 16)) {
		lp_err("metrics: listening on %s: %m", addr);
		if (fd >= 0)
			close(fd);
		freeaddrinfo(res);
		return NULL;
	}
	freeaddrinfo(res);
	m = calloc(1, sizeof(*m));
	if (m)
		m->page = malloc(PAGE_MAX);
	if (!m || !m->page) {
		if (m)
			free(m);
		close(fd);
		lp_err("metrics: out of memory");
		return NULL;
	}
	m->listen_fd = fd;
	for (int i = 0; i < MAX_CLIENTS; i++)
		m->c[i].fd = -1;
	return m;
}

void exp_metrics__free(struct exp_metrics *m)
{
	if (!m)
		return;
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (m->c[i].fd >= 0)
			close(m->c[i].fd);
	close(m->listen_fd);
	free(m->page);
	free(m);
}

unsigned exp_metrics__fds(const struct exp_metrics *m, struct pollfd *out, unsigned cap)
{
	unsigned n = 0;

	if (!m || !cap)
		return 0;
	out[n++] = (struct pollfd){.fd = m->listen_fd, .events = POLLIN};
	for (int i = 0; i < MAX_CLIENTS && n < cap; i++)
		if (m->c[i].fd >= 0)
			out[n++] = (struct pollfd){.fd = m->c[i].fd, .events = POLLIN};
	return n;
}

static void drop(struct client *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Sends all of buf, waiting at most a second for room: the page is small. */
static void send_all(int fd, const char *buf, size_t len)
{
	int64_t end = lp_clock_ms(CLOCK_MONOTONIC) + 1000;

	while (len) {
		ssize_t w = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w > 0) {
			buf += w;
			len -= (size_t)w;
		} else if (w < 0 && (errno == EAGAIN || errno == EINTR) &&
			   lp_clock_ms(CLOCK_MONOTONIC) < end) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};

			poll(&p, 1, 100);
		} else {
			return;
		}
	}
}

static void answer(struct exp_metrics *m, struct client *c,
		   size_t (*text)(char *buf, size_t cap, void *arg), void *arg)
{
	char head[256];
	int hl;

	if (strncmp(c->req, "GET ", 4)) {
		hl = snprintf(head, sizeof(head),
			      "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET\r\nContent-Length: "
			      "0\r\nConnection: close\r\n\r\n");
		send_all(c->fd, head, (size_t)hl);
	} else if (strncmp(c->req + 4, "/metrics ", 9) && strncmp(c->req + 4, "/metrics? ", 10) &&
		   strncmp(c->req + 4, "/metrics?", 9)) {
		static const char body[] = "lowprof-exporter: see /metrics\n";

		hl = snprintf(head, sizeof(head),
			      "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\n"
			      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
			      sizeof(body) - 1);
		send_all(c->fd, head, (size_t)hl);
		send_all(c->fd, body, sizeof(body) - 1);
	} else {
		size_t len = text(m->page, PAGE_MAX, arg);

		hl = snprintf(head, sizeof(head),
			      "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; "
			      "charset=utf-8\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n",
			      len);
		send_all(c->fd, head, (size_t)hl);
		send_all(c->fd, m->page, len);
	}
	drop(c);
}

void exp_metrics__serve(struct exp_metrics *m, const struct pollfd *pfds, unsigned n,
			size_t (*text)(char *buf, size_t cap, void *arg), void *arg)
{
	int64_t now = lp_clock_ms(CLOCK_MONOTONIC);

	if (!m)
		return;
	for (unsigned i = 0; i < n; i++) {
		if (!(pfds[i].revents & (POLLIN | POLLHUP | POLLERR)))
			continue;
		if (pfds[i].fd == m->listen_fd) {
			int fd = accept4(m->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
			int k = 0;

			if (fd < 0)
				continue;
			while (k < MAX_CLIENTS && m->c[k].fd >= 0)
				k++;
			if (k == MAX_CLIENTS) {
				close(fd); /* busy: the scraper tries again */
				continue;
			}
			m->c[k].fd = fd;
			m->c[k].len = 0;
			m->c[k].deadline_ms = now + CLIENT_MS;
			continue;
		}
		for (int k = 0; k < MAX_CLIENTS; k++) {
			struct client *c = &m->c[k];
			ssize_t r;

			if (c->fd != pfds[i].fd)
				continue;
			r = recv(c->fd, c->req + c->len, REQ_MAX - 1 - c->len, MSG_DONTWAIT);
			if (r <= 0) {
				if (r == 0 || (errno != EAGAIN && errno != EINTR))
					drop(c);
				break;
			}
			c->len += (size_t)r;
			c->req[c->len] = '\0';
			if (strstr(c->req, "\r\n\r\n") || strstr(c->req, "\n\n"))
				answer(m, c, text, arg);
			else if (c->len == REQ_MAX - 1)
				drop(c);
			break;
		}
	}
	for (int k = 0; k < MAX_CLIENTS; k++)
		if (m->c[k].fd >= 0 && now > m->c[k].deadline_ms)
			drop(&m->c[k]);
}

/*
 * One line of the symbolizer's metrics file, checked: "# HELP name text",
 * "# TYPE name type", or "name{label="value",...} number". The file comes
 * from a process that parses hostile ELF: a line that is anything else, or
 * names one of the exporter's own metrics, is dropped.
 */
bool exp_metrics_line_ok(const char *l, size_t len)
{
	size_t i = 0;

	/* l is not terminated: every comparison is bounded by len */
	if (len > 7 && (!memcmp(l, "# HELP ", 7) || !memcmp(l, "# TYPE ", 7)))
		i = 7;
	if (len - i < 8 || memcmp(l + i, "lowprof_", 8) ||
	    (len - i >= 17 && !memcmp(l + i, "lowprof_exporter_", 17)))
		return false;
	for (size_t k = 0; k < len; k++)
		if ((unsigned char)l[k] < 0x20 || (unsigned char)l[k] > 0x7e || l[k] == '\\')
			return false;
	if (i)
		return true;
	while (i < len && (isalnum((unsigned char)l[i]) || l[i] == '_' || l[i] == ':'))
		i++;
	if (i < len && l[i] == '{') {
		const char *close = memchr(l + i, '}', len - i);

		if (!close)
			return false;
		i = (size_t)(close - l) + 1;
	}
	if (i >= len || l[i++] != ' ' || i == len)
		return false;
	for (; i < len; i++)
		if (!isdigit((unsigned char)l[i]) && !strchr("eE+-.", l[i]))
			return false;
	return true;
}
