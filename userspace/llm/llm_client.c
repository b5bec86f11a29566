// SPDX-License-Identifier: MIT
/*
 * A minimal HTTP/1.1 client over TCP for maia-serve-bench and the serving
 * tests: one request per connection ("Connection: close"), the reply read
 * until the server closes it, each send and receive bounded by a timeout so
 * a wedged server fails a test instead of hanging it. Reading values back
 * out of a reply is by member name, enough for maia-serve's flat replies.
 */
#define _GNU_SOURCE	/* asprintf */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "llm.h"

/* Connect, send raw, shut the write side; the socket or a negative errno. */
static int http_open(const char *host, int port, const char *raw, size_t len, int timeout_ms)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	size_t off = 0;
	int fd, err;

	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
		return -EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	while (off < len) {
		ssize_t w = send(fd, raw + off, len - off, MSG_NOSIGNAL);

		if (w <= 0)
			break;	/* the server may answer and close before reading it all */
		off += (size_t)w;
	}
	shutdown(fd, SHUT_WR);
	return fd;
}

/* recv() until the peer closes; 0, or a negative errno (a reset after data is an end). */
static int http_read(int fd, void (*fn)(void *arg, const char *data, size_t n), void *arg)
{
	char chunk[4096];

	for (;;) {
		ssize_t r = recv(fd, chunk, sizeof(chunk), 0);

		if (r < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
		if (!r)
			return 0;
		fn(arg, chunk, (size_t)r);
	}
}

struct sink {
	char *buf;
	size_t n, cap;
	bool oom;
};

static void keep(void *arg, const char *data, size_t n)
{
	struct sink *k = arg;

	if (k->oom)
		return;
	if (k->n + n + 1 > k->cap) {
		size_t cap = (k->n + n + 1) * 2;
		char *nb = realloc(k->buf, cap);

		if (!nb) {
			k->oom = true;
			return;
		}
		k->buf = nb;
		k->cap = cap;
	}
	memcpy(k->buf + k->n, data, n);
	k->n += n;
	k->buf[k->n] = 0;
}

static int status_of(const char *head, size_t n)
{
	return n > 12 && !strncmp(head, "HTTP/1.", 7) ? atoi(head + 9) : 0;
}

int llm_http_raw(const char *host, int port, const char *raw, size_t len, int timeout_ms,
		 int *status, char **reply, size_t *reply_len)
{
	struct sink k = { 0 };
	int fd, err;

	*status = 0;
	*reply = NULL;
	if (reply_len)
		*reply_len = 0;
	fd = http_open(host, port, raw, len, timeout_ms);
	if (fd < 0)
		return fd;
	err = http_read(fd, keep, &k);
	close(fd);
	if (err == -ECONNRESET && k.n)
		err = 0;
	if (k.oom || !k.buf) {
		free(k.buf);
		k.buf = calloc(1, 1);
		k.n = 0;
		if (!k.buf)
			return -ENOMEM;
	}
	*status = status_of(k.buf, k.n);
	*reply = k.buf;
	if (reply_len)
		*reply_len = k.n;
	return err;
}

struct tee {
	void (*fn)(void *arg, const char *data, size_t n);
	void *arg;
	char head[16];
	size_t nhead;
};

static void tee_fn(void *arg, const char *data, size_t n)
{
	struct tee *t = arg;
	size_t take = sizeof(t->head) - 1 - t->nhead;

	if (take > n)
		take = n;
	memcpy(t->head + t->nhead, data, take);
	t->nhead += take;
	t->head[t->nhead] = 0;
	t->fn(t->arg, data, n);
}

int llm_http_stream(const char *host, int port, const char *raw, size_t len, int timeout_ms,
		    void (*fn)(void *arg, const char *data, size_t n), void *arg, int *status)
{
	struct tee t = { .fn = fn, .arg = arg };
	int fd, err;

	*status = 0;
	fd = http_open(host, port, raw, len, timeout_ms);
	if (fd < 0)
		return fd;
	err = http_read(fd, tee_fn, &t);
	close(fd);
	if (err == -ECONNRESET && t.nhead)
		err = 0;
	*status = status_of(t.head, t.nhead);
	return err;
}

int llm_http_post(const char *host, int port, const char *path, const char *body,
		  int timeout_ms, int *status, char **reply, size_t *reply_len)
{
	size_t blen = strlen(body);
	char *req = NULL;
	int n, err;

	n = asprintf(&req, "POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
		     "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", path, host, port, blen,
		     body);
	if (n < 0)
		return -ENOMEM;
	err = llm_http_raw(host, port, req, (size_t)n, timeout_ms, status, reply, reply_len);
	free(req);
	return err;
}

static const char *member(const char *json, const char *name)
{
	char key[80];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(json, key);
	if (!p)
		return NULL;
	p += strlen(key);
	while (*p == ' ')
		p++;
	return p;
}

char *llm_json_get_string(const char *json, const char *name, size_t *len)
{
	const char *p = member(json, name);
	char *out;
	size_t n = 0;

	if (!p || *p != '"')
		return NULL;
	out = malloc(strlen(p) + 1);
	if (!out)
		return NULL;
	for (p++; *p && *p != '"'; p++) {
		if (*p != '\\') {
			out[n++] = *p;
			continue;
		}
		p++;
		switch (*p) {
		case 'n': out[n++] = '\n'; break;
		case 't': out[n++] = '\t'; break;
		case 'r': out[n++] = '\r'; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'u': {
			unsigned int v = 0;

			if (sscanf(p + 1, "%4x", &v) == 1 && strlen(p + 1) >= 4) {
				out[n++] = (char)(v & 0xff);
				p += 4;
			}
			break;
		}
		case 0: p--; break;
		default: out[n++] = *p; break;
		}
	}
	out[n] = 0;
	if (len)
		*len = n;
	return out;
}

double llm_json_get_number(const char *json, const char *name)
{
	const char *p = member(json, name);
	char *end;
	double v;

	if (!p)
		return NAN;
	v = strtod(p, &end);
	return end == p ? NAN : v;
}
