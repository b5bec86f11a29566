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

int llm_http_raw(const char *host, int port, const char *raw, size_t len, int timeout_ms,
		 int *status, char **reply, size_t *reply_len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	struct timeval tv = { .tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000 };
	size_t cap = 4096, n = 0, off = 0;
	char *buf;
	int fd, err = 0;

	*status = 0;
	*reply = NULL;
	if (reply_len)
		*reply_len = 0;
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
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (n + 1 >= cap) {
			char *nb = realloc(buf, cap * 2);

			if (!nb) {
				err = -ENOMEM;
				break;
			}
			buf = nb;
			cap *= 2;
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0) {
			err = errno == EAGAIN || errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
			if (errno == ECONNRESET && n)
				err = 0;
			break;
		}
		if (!r)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = 0;
	if (n > 12 && !strncmp(buf, "HTTP/1.", 7))
		*status = atoi(buf + 9);
	*reply = buf;
	if (reply_len)
		*reply_len = n;
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
